//! The spam split: the hybrid's thresholds chosen on validation splits
//! (its junk cut-offs on three, `cutoffs.rs`), then every tier,
//! SpamAssassin beside them, on the 500 held-out messages.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use mailproc::classify::{Classification, Rules};
use mailproc::learn::{features, Model};

use crate::ask::{ask, Answer, Variant};
use crate::corpus::{Msg, SpamSplit};
use crate::cutoffs::{choose_shipped, Folds, FIRSTS};
use crate::score::{acted, class_of, files, pct, per_msg, read_sa, train, SpamScore};
use crate::Setup;

/// How the hybrid is set: `learned.spam_first`, `learned.spam_confidence`,
/// `learned.min_confidence` and the account's `minimum_confidence`.
#[derive(Clone, Copy, PartialEq, Debug)]
pub struct Policy {
    pub first: Option<f64>,
    pub spam: Option<f64>,
    pub learned: f64,
    pub minimum: Option<f64>,
}

impl Policy {
    fn show(&self) -> String {
        let o = |v: Option<f64>| v.map_or("off".into(), |v| v.to_string());
        format!(
            "learned.spam_first {}, learned.spam_confidence {}, learned.min_confidence {}, minimum_confidence {}",
            o(self.first),
            o(self.spam),
            self.learned,
            self.minimum.map_or("none".into(), |v| v.to_string())
        )
    }
}

#[derive(PartialEq, Clone, Copy)]
pub enum By {
    Rule,
    Learned,
    Model,
    Review,
}

/// What mailproc's tiers said about a set of messages.
pub struct Tiers {
    pub rules: Vec<Option<Classification>>,
    /// The classifier's class and confidence (`INBOX`, 0 when it cannot).
    pub guess: Vec<(String, f64)>,
    /// The demo's model's answers: `None` where it was not asked (no
    /// policy measured sends the message to it).
    pub answers: Vec<Option<Answer>>,
}

impl Tiers {
    /// What the service does with message `i` under `p` (as
    /// `Runner::decide`): a filing rule gives way to a spam verdict of the
    /// classifier at `spam_first`; else the rule; else the classifier
    /// when sure (spam at `spam_confidence` when set); else the model when
    /// sure; else review (kept).
    pub fn hybrid(&self, i: usize, p: Policy) -> (By, String) {
        let g = &self.guess[i];
        if let Some(c) = &self.rules[i] {
            if p.first.is_some_and(|t| g.0 == "Junk" && g.1 >= t) && files(c) {
                return (By::Learned, "Junk".into());
            }
            return (By::Rule, class_of(c));
        }
        let need = match p.spam {
            Some(t) if g.0 == "Junk" => t,
            _ => p.learned,
        };
        if g.1 >= need {
            return (By::Learned, g.0.clone());
        }
        let a = self.answers[i]
            .as_ref()
            .expect("a message the hybrid sends to the model was asked");
        match acted(a, p.minimum) {
            Some(c) => (By::Model, class_of(c)),
            None => (By::Review, "INBOX".into()),
        }
    }

    /// Accuracy, ham to Junk, model calls of the hybrid under `p`.
    fn score(&self, msgs: &[Msg], p: Policy) -> (SpamScore, usize) {
        let h: Vec<(By, String)> = (0..msgs.len()).map(|i| self.hybrid(i, p)).collect();
        let calls = h
            .iter()
            .filter(|x| matches!(x.0, By::Model | By::Review))
            .count();
        (SpamScore::of(msgs, |i| h[i].1 == "Junk"), calls)
    }
}

pub const SPAM: [Option<f64>; 6] = [
    None,
    Some(0.99),
    Some(0.95),
    Some(0.9),
    Some(0.8),
    Some(0.7),
];
pub const LEARNED: [f64; 6] = [0.5, 0.6, 0.7, 0.8, 0.9, 0.95];
/// The most cautious first: of equally good policies the first found wins.
pub const MINIMUM: [Option<f64>; 3] = [Some(0.9), Some(0.7), None];

fn guesses(model: &Model, msgs: &[Msg]) -> (Vec<(String, f64)>, Duration) {
    let t = Instant::now();
    let g = msgs
        .iter()
        .map(|m| {
            model
                .predict_junk(&features(&m.fetched), "Junk")
                .map_or(("INBOX".into(), 0.0), |p| (p.class, p.confidence))
        })
        .collect();
    (g, t.elapsed())
}

/// Asks `v` about the messages of `msgs` that `need` picks, with what the
/// account lets the model do (`model_actions`).
fn ask_some(
    v: &Variant,
    s: &Setup,
    learned: &Model,
    msgs: &[Msg],
    set: &str,
    need: impl Fn(usize) -> bool,
) -> Vec<Option<Answer>> {
    let picked: Vec<usize> = (0..msgs.len()).filter(|&i| need(i)).collect();
    let refs: Vec<&Msg> = picked.iter().map(|&i| &msgs[i]).collect();
    let got = ask(v, &s.model_account, learned, &refs, set);
    let mut out = vec![None; msgs.len()];
    for (i, a) in picked.into_iter().zip(got) {
        out[i] = Some(a);
    }
    out
}

fn model_alone(a: &[Answer], min: Option<f64>) -> impl Fn(usize) -> bool + '_ {
    move |i| acted(&a[i], min).is_some_and(|c| class_of(c) == "Junk")
}

/// The validation split: fitted on the rest of the training split, the
/// models asked what the hybrid would ask them; prints the grid and
/// returns the policy chosen: `spam_first` and `spam_confidence` on the
/// three validation splits (`cutoffs::choose_shipped`), then of the rest
/// the most right on this split, then fewest ham in Junk, then fewest
/// model calls.
pub fn validate(s: &Setup, folds: &Folds, model_subset: usize) -> Policy {
    use mailproc::actions::ActionKind;
    assert!(
        !s.model_account.allows(ActionKind::Spam) && !s.model_account.allows(ActionKind::Flag),
        "the junk cut-offs are chosen without the model, which the demo's model_actions must keep from calling spam"
    );
    let split = &folds.splits[0];
    let val = &split.validation;
    let n = val.len();
    let (fit, _) = train(&split.fit);
    let (guess, _) = guesses(&fit, val);
    let rules: Vec<Option<Classification>> =
        val.iter().map(|m| s.rules.classify(&m.email)).collect();
    // What any policy measured may send to the model (with every rule,
    // or without one).
    let top = LEARNED[LEARNED.len() - 1];
    let answers = ask_some(&s.demo, s, &fit, val, "validation", |i| {
        guess[i].1 < top || (guess[i].0 == "Junk" && guess[i].1 < 0.99)
    });
    let tiers = Tiers {
        rules,
        guess,
        answers,
    };
    println!(
        "## Validation: {n} messages carved from the training split ({} spam), fitted on the other {}\n",
        val.iter().filter(|m| m.spam()).count(),
        split.fit.len()
    );
    println!("What the thresholds are chosen on; the held-out messages below are only measured.\n");
    // Which model: each alone on the first model_subset validation messages.
    let sub: Vec<&Msg> = val.iter().take(model_subset).collect();
    let sub_msgs = &val[..sub.len()];
    println!("Each model alone (choice + examples, no minimum_confidence), first {} validation messages:\n", sub.len());
    println!("| model | accuracy | spam caught | ham called spam | spam precision | per message |");
    println!("|---|---|---|---|---|---|");
    for v in &s.models {
        let a = ask(v, &s.account, &fit, &sub, "validation");
        let sc = SpamScore::of(sub_msgs, model_alone(&a, None));
        let took: Duration = a.iter().map(|x| x.took).sum();
        println!(
            "| {} | {} | {} of {} | {} of {} | {} | {} |",
            v.name,
            pct(sc.right, sc.n),
            sc.caught,
            sc.spam,
            sc.false_alarm,
            sc.ham,
            sc.precision(),
            per_msg(took, sub.len())
        );
    }
    let shipped = s.policy();
    let (first, spam) = choose_shipped(folds, (shipped.first, shipped.spam));
    let mut best: Option<(Policy, (usize, usize, usize))> = None;
    for &learned in &LEARNED {
        for &minimum in &MINIMUM {
            let p = Policy {
                first,
                spam: Some(spam),
                learned,
                minimum,
            };
            let (sc, calls) = tiers.score(val, p);
            let key = (sc.right, usize::MAX - sc.false_alarm, usize::MAX - calls);
            if best.is_none_or(|b| key > b.1) {
                best = Some((p, key));
            }
        }
    }
    let (chosen, ..) = best.expect("a policy");
    println!(
        "\nThe hybrid on the validation split (accuracy, ham to Junk, model calls), spam_first {}, minimum_confidence {}:\n",
        chosen.first.map_or("off".into(), |v| v.to_string()),
        chosen.minimum.map_or("none".into(), |v| v.to_string())
    );
    grid(&tiers, val, chosen);
    println!("\n**Chosen on validation**: {}.", chosen.show());
    rules_tables(s, val, &tiers, chosen);
    if shipped == chosen {
        println!("The demo ships exactly this.");
    } else {
        println!(
            "**The demo ships {}**: scripts/demo.sh should be set to the choice above.",
            shipped.show()
        );
    }
    chosen
}

/// Rows `learned.min_confidence`, columns `learned.spam_confidence` (the
/// chosen one among them), the rest as `at`; then `spam_first` alone.
fn grid(tiers: &Tiers, msgs: &[Msg], at: Policy) {
    let o = |v: Option<f64>| v.map_or("off".into(), |v: f64| v.to_string());
    let mut columns = SPAM.to_vec();
    if !columns.contains(&at.spam) {
        columns.push(at.spam);
        columns.sort_by(|a, b| b.unwrap_or(2.0).total_cmp(&a.unwrap_or(2.0)));
    }
    println!(
        "| learned.min_confidence | {} |",
        columns
            .iter()
            .map(|v| format!("spam_confidence {}", o(*v)))
            .collect::<Vec<_>>()
            .join(" | ")
    );
    println!("|---|{}", "---|".repeat(columns.len()));
    for &learned in &LEARNED {
        let cells: Vec<String> = columns
            .iter()
            .map(|&spam| {
                let (sc, calls) = tiers.score(
                    msgs,
                    Policy {
                        spam,
                        learned,
                        ..at
                    },
                );
                format!("{}, {}, {calls}", pct(sc.right, sc.n), sc.false_alarm)
            })
            .collect();
        println!("| {learned} | {} |", cells.join(" | "));
    }
    let firsts: Vec<String> = FIRSTS
        .iter()
        .rev()
        .map(|&first| {
            let (sc, calls) = tiers.score(msgs, Policy { first, ..at });
            format!(
                "{}: {}, {}, {calls}",
                first.map_or("off".into(), |v| v.to_string()),
                pct(sc.right, sc.n),
                sc.false_alarm
            )
        })
        .collect();
    println!(
        "\nBy learned.spam_first, the rest as chosen: {}.",
        firsts.join("; ")
    );
}

/// The held-out messages: every tier, trained on the whole training split.
/// Returns the classifier so the variants can use its examples.
pub fn test(s: &Setup, split: &SpamSplit, sa_dir: &str) -> Model {
    let test = &split.test;
    let n = test.len();
    let train_set: Vec<&Msg> = split.train().collect();
    eprintln!(
        "quality: spam split: {n} held out ({} spam), {} to train on",
        test.iter().filter(|m| m.spam()).count(),
        train_set.len()
    );
    let t = Instant::now();
    let rules: Vec<Option<Classification>> =
        test.iter().map(|m| s.rules.classify(&m.email)).collect();
    let rules_time = t.elapsed();
    let (learned, fit) = train(train_set.iter().copied());
    let (guess, learned_time) = guesses(&learned, test);
    let all: Vec<&Msg> = test.iter().collect();
    let answers: Vec<(&Variant, Vec<Answer>)> = s
        .models
        .iter()
        .map(|v| (v, ask(v, &s.account, &learned, &all, "spam")))
        .collect();
    // The demo's model as the hybrid asks it (`model_actions`), about what
    // any measured policy may send it.
    let top = LEARNED[LEARNED.len() - 1];
    let demo_answers = ask_some(&s.demo, s, &learned, test, "spam", |i| {
        guess[i].1 < top || (guess[i].0 == "Junk" && guess[i].1 < 0.99)
    });
    let asked = demo_answers.iter().flatten().count();
    let model_time: Duration = demo_answers.iter().flatten().map(|a| a.took).sum();
    let tiers = Tiers {
        rules,
        guess,
        answers: demo_answers.clone(),
    };
    let p = s.policy();
    let hybrid: Vec<(By, String)> = (0..n).map(|i| tiers.hybrid(i, p)).collect();
    let calls = hybrid
        .iter()
        .filter(|h| matches!(h.0, By::Model | By::Review))
        .count();
    let hybrid_time = rules_time
        + learned_time
        + (0..n)
            .filter(|&i| matches!(hybrid[i].0, By::Model | By::Review))
            .filter_map(|i| demo_answers[i].as_ref().map(|a| a.took))
            .sum::<Duration>();

    let sa_rules = read_sa(&format!("{sa_dir}/rules.tsv"));
    let sa_bayes = read_sa(&format!("{sa_dir}/bayes.tsv"));
    let sa = |r: &HashMap<String, (bool, f64)>, i: usize| -> (bool, f64) {
        *r.get(&test[i].path.display().to_string())
            .unwrap_or_else(|| panic!("no SpamAssassin result for {}", test[i].path.display()))
    };
    let sa_ms = |r: &HashMap<String, (bool, f64)>| (0..n).map(|i| sa(r, i).1).sum::<f64>();

    println!(
        "\n## Spam split: {n} held-out messages, trained on {} (the classifier fitted in {fit:.1?})\n",
        train_set.len()
    );
    println!("| decided by | accuracy | spam caught | ham called spam | time per message |");
    println!("|---|---|---|---|---|");
    println!(
        "{}",
        SpamScore::of(test, |i| sa(&sa_rules, i).0).row(
            "SpamAssassin, rules (local tests only)",
            &format!("{:.0} ms", sa_ms(&sa_rules) / n as f64)
        )
    );
    println!(
        "{}",
        SpamScore::of(test, |i| sa(&sa_bayes, i).0).row(
            "SpamAssassin, rules + Bayes (sa-learn on the training split)",
            &format!("{:.0} ms", sa_ms(&sa_bayes) / n as f64)
        )
    );
    println!(
        "{}",
        SpamScore::of(test, |i| tiers.rules[i]
            .as_ref()
            .is_some_and(|c| class_of(c) == "Junk"))
        .row(
            "mailproc: rules alone (the demo's)",
            &per_msg(rules_time, n)
        )
    );
    println!(
        "{}",
        SpamScore::of(test, |i| tiers.guess[i].0 == "Junk").row(
            "mailproc: learned alone (always its best class)",
            &per_msg(learned_time, n)
        )
    );
    for (v, a) in &answers {
        let took: Duration = a.iter().map(|x| x.took).sum();
        for min in [None, s.account.minimum_confidence] {
            println!(
                "{}",
                SpamScore::of(test, model_alone(a, min)).row(
                    &format!(
                        "mailproc: model alone, {} (minimum_confidence {})",
                        v.name,
                        min.map_or("none".into(), |m| m.to_string())
                    ),
                    &per_msg(took, n)
                )
            );
            if s.account.minimum_confidence.is_none() {
                break;
            }
        }
    }
    println!(
        "{}",
        SpamScore::of(test, |i| hybrid[i].1 == "Junk").row(
            &format!(
                "**mailproc: hybrid as shipped** ({}: rules → learned → {} → review)",
                p.show(),
                s.demo.name
            ),
            &per_msg(hybrid_time, n)
        )
    );
    println!(
        "\nThe hybrid asked the model about {calls} of {n} ({} saved); the demo's model took {} a message (of {asked} asked).",
        pct(n - calls, n),
        per_msg(model_time, asked)
    );
    let count = |b: By| hybrid.iter().filter(|h| h.0 == b).count();
    let right = |b: By| {
        (0..n)
            .filter(|&i| hybrid[i].0 == b && (hybrid[i].1 == "Junk") == test[i].spam())
            .count()
    };
    println!("\nThe hybrid as shipped, tier by tier (right = spam/ham called right):\n");
    println!("| tier | decided | right | left to the next |");
    println!("|---|---|---|---|");
    let mut left = n;
    for (name, b) in [
        ("rules", By::Rule),
        ("learned", By::Learned),
        ("model", By::Model),
        ("review (no action: kept)", By::Review),
    ] {
        left -= count(b);
        println!(
            "| {name} | {} of {} | {} | {left} |",
            count(b),
            left + count(b),
            pct(right(b), count(b))
        );
    }
    let spam_first_took = (0..n)
        .filter(|&i| hybrid[i].0 == By::Learned && tiers.rules[i].is_some())
        .count();
    println!(
        "\nOf the learned decisions, {spam_first_took} were spam verdicts taken before a filing rule (`spam_first`)."
    );
    rules_tables(s, test, &tiers, p);
    println!(
        "\nThe same grid as on validation, on the held-out messages (for the record: not what was chosen on), spam_first {}, minimum_confidence {}:\n",
        p.first.map_or("off".into(), |v| v.to_string()),
        p.minimum.map_or("none".into(), |v| v.to_string())
    );
    grid(&tiers, test, p);
    for (v, a) in &answers {
        precision_table(test, v, a);
    }
    learned
}

/// Each rule on `msgs`, and the hybrid under `p` without each.
fn rules_tables(s: &Setup, msgs: &[Msg], tiers: &Tiers, p: Policy) {
    rules_table(s, msgs, tiers);
    let test = msgs;
    println!(
        "\nThe hybrid without each rule (accuracy; ham to Junk), {} otherwise:\n",
        p.show()
    );
    println!("| rules | hybrid accuracy | ham to Junk |");
    println!("|---|---|---|");
    let without = |rs: &Rules| {
        let t = Tiers {
            rules: test.iter().map(|m| rs.classify(&m.email)).collect(),
            guess: tiers.guess.clone(),
            answers: tiers.answers.clone(),
        };
        t.score(test, p).0
    };
    let sc = without(&s.rules);
    println!(
        "| the demo's | {} | {} |",
        pct(sc.right, sc.n),
        sc.false_alarm
    );
    for r in &s.account.rules {
        let rest: Vec<_> = s
            .account
            .rules
            .iter()
            .filter(|x| x.name != r.name)
            .cloned()
            .collect();
        let sc = without(&Rules::new(&rest).unwrap());
        println!(
            "| without {} | {} | {} |",
            r.name,
            pct(sc.right, sc.n),
            sc.false_alarm
        );
    }
    let sc = without(&Rules::new(&[]).unwrap());
    println!("| none | {} | {} |", pct(sc.right, sc.n), sc.false_alarm);
}

fn rules_table(s: &Setup, test: &[Msg], tiers: &Tiers) {
    println!("\nEach rule of the demo (first match wins):\n");
    println!("| rule | takes | spam | ham | says spam | right |");
    println!("|---|---|---|---|---|---|");
    for r in &s.account.rules {
        let name = format!("rules:{}", r.name);
        let took: Vec<usize> = (0..test.len())
            .filter(|&i| tiers.rules[i].as_ref().is_some_and(|c| c.model == name))
            .collect();
        if took.is_empty() {
            println!("| {} | 0 | | | | |", r.name);
            continue;
        }
        let spam = took.iter().filter(|&&i| test[i].spam()).count();
        let says = tiers.rules[took[0]]
            .as_ref()
            .is_some_and(|c| class_of(c) == "Junk");
        let ok = if says { spam } else { took.len() - spam };
        println!(
            "| {} | {} | {spam} | {} | {} | {} |",
            r.name,
            took.len(),
            took.len() - spam,
            if says { "yes" } else { "no" },
            pct(ok, took.len())
        );
    }
}

/// A model's `spam` precision by `minimum_confidence`: whether it may
/// take the action unasked (95 %).
fn precision_table(test: &[Msg], v: &Variant, a: &[Answer]) {
    let n = test.len();
    println!("\n{} alone by minimum_confidence (all {n}):\n", v.name);
    println!("| minimum_confidence | acted on | accuracy | spam caught | ham called spam | spam precision |");
    println!("|---|---|---|---|---|---|");
    for m in [None, Some(0.6), Some(0.7), Some(0.8), Some(0.9), Some(0.95)] {
        let sc = SpamScore::of(test, model_alone(a, m));
        let acted_on = a.iter().filter(|x| acted(x, m).is_some()).count();
        println!(
            "| {} | {acted_on} | {} | {} of {} | {} of {} | {} |",
            m.map_or("none".into(), |m| m.to_string()),
            pct(sc.right, sc.n),
            sc.caught,
            sc.spam,
            sc.false_alarm,
            sc.ham,
            sc.precision()
        );
    }
    let failed = a.iter().filter(|x| x.decision.is_none()).count();
    println!(
        "\n{}: {} answers valid, {failed} failed.",
        v.name,
        n - failed
    );
}
