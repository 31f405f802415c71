//! The folder split: real list mail sorted into six folders, each tier
//! alone and the chain without the demo's rules.

use std::collections::HashMap;
use std::time::Duration;

use mailproc::actions::Action;
use mailproc::learn::features;

use crate::ask::{ask, Answer};
use crate::corpus::{self, Msg};
use crate::score::{acted, class_of, pct, per_msg, train};
use crate::Setup;

pub fn run(s: &Setup, data: &str, limit: usize) {
    let (ftrain, ftest) = corpus::folder_split(data, limit);
    let n = ftest.len();
    let mut account = s.account.clone();
    account.folders.allowed = corpus::FOLDERS.iter().map(|s| s.to_string()).collect();
    let th = s.account.learned.min_confidence;
    let min_conf = s.account.minimum_confidence;
    let (learned, fit) = train(&ftrain);
    let guess: Vec<(String, f64)> = ftest
        .iter()
        .map(|m| {
            learned
                .predict(&features(&m.fetched))
                .map_or(("INBOX".into(), 0.0), |p| (p.class, p.confidence))
        })
        .collect();
    let refs: Vec<&Msg> = ftest.iter().collect();
    // The hybrid asks its model only about what the classifier leaves (at
    // the demo's 0.5 that is nothing here): asking all of them cost 90 s
    // of a run meant to stay under 30 minutes, for answers no figure read.
    let to_model: Vec<usize> = (0..n).filter(|&i| guess[i].1 < th).collect();
    let demo_account = account.for_model();
    let asked: Vec<&Msg> = to_model.iter().map(|&i| &ftest[i]).collect();
    let demo: HashMap<usize, Answer> = to_model
        .iter()
        .copied()
        .zip(ask(&s.demo, &demo_account, &learned, &asked, "folders"))
        .collect();
    let mut classes: Vec<&str> = corpus::FOLDERS.to_vec();
    classes.retain(|c| ftest.iter().any(|m| m.class == *c));
    println!(
        "\n## Folder split: {n} held-out list messages in {} folders, List-* headers and subject tags removed; trained on {} (fitted in {fit:.1?})\n",
        classes.len(),
        ftrain.len()
    );
    let share: Vec<String> = classes
        .iter()
        .map(|c| format!("{c} {}", ftest.iter().filter(|m| m.class == *c).count()))
        .collect();
    println!("Held out per folder: {}.\n", share.join(", "));
    let by_rules = ftest
        .iter()
        .filter(|m| s.rules.classify(&m.email).is_some())
        .count();
    let rules_ok = ftest
        .iter()
        .filter(|m| {
            s.rules
                .classify(&m.email)
                .is_some_and(|c| class_of(&c) == m.class)
        })
        .count();
    println!(
        "The demo's rules take {by_rules} of {n}, {rules_ok} of them into the right folder: they are the demo's folders, \
         not this user's. What follows runs without them (learned → model → review).\n"
    );
    println!("| tier | decided | right of those | left to the next |");
    println!("|---|---|---|---|");
    let by_learned: Vec<usize> = (0..n).filter(|&i| guess[i].1 >= th).collect();
    let ok_learned = by_learned
        .iter()
        .filter(|&&i| guess[i].0 == ftest[i].class)
        .count();
    let left = n - by_learned.len();
    println!(
        "| learned ≥ {th} | {} of {n} | {} | {left} |",
        by_learned.len(),
        pct(ok_learned, by_learned.len())
    );
    let by_model: Vec<usize> = to_model
        .iter()
        .copied()
        // Keeping it (`Inbox`: no action, or `noop`) is left to review.
        .filter(|i| {
            acted(&demo[i], min_conf).is_some_and(|c| c.actions.iter().any(|a| *a != Action::Noop))
        })
        .collect();
    let ok_model = by_model
        .iter()
        .filter(|i| class_of(acted(&demo[*i], min_conf).unwrap()) == ftest[**i].class)
        .count();
    let rest = left - by_model.len();
    println!(
        "| model ({}) | {} of {left} | {} | {rest} (kept in INBOX, for review) |",
        s.demo.name,
        by_model.len(),
        pct(ok_model, by_model.len())
    );
    let ok = ok_learned + ok_model;
    println!(
        "\nHybrid: {ok} of {n} in the right folder ({}), {} in a wrong one, {rest} left in INBOX; model calls {} of {n}.",
        pct(ok, n),
        n - ok - rest,
        to_model.len()
    );
    println!("\nEach tier alone, on all {n} (a message it leaves counts as wrong):\n");
    println!("| alone | right folder | per message |");
    println!("|---|---|---|");
    println!("| rules (the demo's) | {} | — |", pct(rules_ok, n));
    let learned_ok = (0..n).filter(|&i| guess[i].0 == ftest[i].class).count();
    println!(
        "| learned (always its best class) | {} | — |",
        pct(learned_ok, n)
    );
    for v in &s.models {
        let a = ask(v, &account, &learned, &refs, "folders");
        let ok = (0..n)
            .filter(|&i| {
                a[i].decision
                    .as_ref()
                    .is_some_and(|c| class_of(c) == ftest[i].class)
            })
            .count();
        let took: Duration = a.iter().map(|x| x.took).sum();
        println!(
            "| model: {} | {} | {} |",
            v.name,
            pct(ok, n),
            per_msg(took, n)
        );
    }
}
