//! Classification quality on held-out splits of the SpamAssassin corpus
//! (`tests/common/corpus.rs`, the one reader of it), every tier of mailproc
//! beside SpamAssassin: the one driver of the measurements in
//! docs/quality.md, run by `scripts/quality.sh`, which writes the config
//! (the demo's account, rules and model settings, a provider per local
//! model), serves the models and runs SpamAssassin.
//!
//!   quality lists DATA_DIR OUT_DIR
//!       writes OUT_DIR/test.txt (the spam split's held-out files, in
//!       order) and OUT_DIR/train-spam.txt, train-ham.txt (its training
//!       files), for SpamAssassin
//!   quality lists DATA_DIR OUT_DIR FOLD
//!       the same for validation split FOLD (0 just before the held-out
//!       files, 1 before it, ...): OUT_DIR/val{FOLD}.txt, its files, and
//!       val{FOLD}-train-spam.txt, val{FOLD}-train-ham.txt, the training
//!       split without them
//!   quality learned DATA_DIR [CONFIG]
//!       the learned classifier alone (no model, no SpamAssassin): feature
//!       sets and thresholds on the validation split, the held-out split,
//!       and a generated multi-folder mailbox; with CONFIG (the demo's
//!       rules), first the ways of combining tried, after those rules
//!   quality linear DATA_DIR CONFIG
//!       a linear model beside the learned classifier (`linear.rs`),
//!       after CONFIG's rules: measured, not shipped
//!   quality shape DATA_DIR CONFIG SA_DIR
//!       the message's shape as a second judge (`shape.rs`), chosen on
//!       three validation splits against SpamAssassin there (SA_DIR holds
//!       val0.tsv, val1.tsv, val2.tsv): measured, not shipped
//!   quality measure CONFIG DATA_DIR SA_DIR SUBSET FOLDER_LIMIT
//!       everything: the learned classifier as above; the hybrid's
//!       junk cut-offs chosen on three validation splits against
//!       SpamAssassin with Bayes on each (`cutoffs.rs`), the rest of its
//!       thresholds on the first; every tier and SpamAssassin on the
//!       held-out messages (SA_DIR holds rules.tsv, bayes.tsv and
//!       val0.tsv, val1.tsv, val2.tsv: path, score, spam 0/1, ms); the
//!       model variants on the
//!       first SUBSET of them; the folder split (FOLDER_LIMIT held out)
//!
//! Every model call is one at a time (the server has one slot: on two
//! cores a second buys nothing). A message counts as called spam when its
//! actions include `spam`, a move to `Junk`, or the `$Junk` flag; a model
//! answer that failed, or is below `minimum_confidence`, takes no action.

mod ask;
mod combine;
#[path = "../../tests/common/corpus.rs"]
mod corpus;
mod cutoffs;
mod folders;
mod learned;
mod linear;
mod score;
mod shape;
mod spam;

use std::sync::Arc;
use std::time::Duration;

use mailproc::classify::{Provider, Rules};
use mailproc::config::{AccountConfig, AnswerMode, ProviderConfig};
use mailproc::learn::Model;

use ask::{ask, Variant};
use corpus::Msg;
use score::{class_of, pct, per_msg, SpamScore};

/// Validation messages each model is asked alone, to choose the demo's.
const VALIDATION_MODEL_SUBSET: usize = 100;

/// The demo's account and model, and each served model asked the way the
/// demo asks its own.
pub struct Setup {
    pub account: AccountConfig,
    /// The account as its model may act on it (`model_actions`).
    pub model_account: AccountConfig,
    pub rules: Rules,
    /// The account's provider, as the demo ships it.
    pub demo: Variant,
    /// Each served model with the demo's provider settings.
    pub models: Vec<Variant>,
}

impl Setup {
    /// The hybrid as the demo's account sets it.
    pub fn policy(&self) -> spam::Policy {
        spam::Policy {
            first: self.account.learned.spam_first,
            spam: self.account.learned.spam_confidence,
            learned: self.account.learned.min_confidence,
            minimum: self.account.minimum_confidence,
        }
    }
}

fn lists(data: &str, out: &str, fold: Option<usize>) {
    let split = corpus::spam_split_at(data, fold.unwrap_or(0));
    let (train, test, prefix): (Vec<&Msg>, _, _) = match fold {
        None => (split.train().collect(), &split.test, String::new()),
        Some(f) => (
            split.fit.iter().collect(),
            &split.validation,
            format!("val{f}-"),
        ),
    };
    let write = |name: &str, v: Vec<&Msg>| {
        let text: String = v
            .iter()
            .map(|m| format!("{}\n", m.path.display()))
            .collect();
        std::fs::write(format!("{out}/{name}"), text).unwrap();
    };
    let checked = match fold {
        None => "test.txt".to_string(),
        Some(f) => format!("val{f}.txt"),
    };
    write(&checked, test.iter().collect());
    write(
        &format!("{prefix}train-spam.txt"),
        train.iter().copied().filter(|m| m.spam()).collect(),
    );
    write(
        &format!("{prefix}train-ham.txt"),
        train.iter().copied().filter(|m| !m.spam()).collect(),
    );
    eprintln!(
        "quality: {} {}, {} to train on",
        test.len(),
        if fold.is_some() {
            "to validate"
        } else {
            "held out"
        },
        train.len()
    );
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    match args.get(1).map(String::as_str) {
        Some("lists") if args.len() == 4 => lists(&args[2], &args[3], None),
        Some("lists") if args.len() == 5 => {
            lists(&args[2], &args[3], Some(args[4].parse().expect("FOLD")))
        }
        Some("learned") if args.len() == 3 => learned::run(&args[2], None),
        Some("learned") if args.len() == 4 => {
            let (config, _) = read_config(&args[3]);
            let rules = Rules::new(&config.accounts[0].rules).expect("the rules");
            learned::run(&args[2], Some(&rules))
        }
        Some("linear") if args.len() == 4 => {
            let (config, _) = read_config(&args[3]);
            let rules = Rules::new(&config.accounts[0].rules).expect("the rules");
            linear::run(&args[2], &rules)
        }
        Some("shape") if args.len() == 5 => {
            let (config, _) = read_config(&args[3]);
            let account = &config.accounts[0];
            let rules = Rules::new(&account.rules).expect("the rules");
            let l = &account.learned;
            let shipped = (l.spam_first, l.spam_confidence.unwrap_or(l.min_confidence));
            shape::run(&args[2], &rules, &args[4], shipped)
        }
        Some("measure") if args.len() == 7 => measure(
            &args[2],
            &args[3],
            &args[4],
            args[5].parse().expect("SUBSET"),
            args[6].parse().expect("FOLDER_LIMIT"),
        ),
        _ => {
            eprintln!(
                "usage: quality lists DATA_DIR OUT_DIR [FOLD]\n       quality learned DATA_DIR [CONFIG]\n       \
                 quality linear DATA_DIR CONFIG\n       quality shape DATA_DIR CONFIG SA_DIR\n       \
                 quality measure CONFIG DATA_DIR SA_DIR SUBSET FOLDER_LIMIT"
            );
            std::process::exit(2);
        }
    }
}

/// The config at `path` (the script writes it), and its warnings.
fn read_config(path: &str) -> (mailproc::config::Config, serde_norway::Value) {
    let text = std::fs::read_to_string(path).expect("config");
    mailproc::config::parse(&text, &|k| std::env::var(k).ok())
        .unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn measure(config: &str, data: &str, sa_dir: &str, subset: usize, folder_limit: usize) {
    let (config, _) = read_config(config);
    let account = config.accounts[0].clone();
    let metrics = Arc::new(mailproc::metrics::Metrics::new());
    let provider = |name: &str, f: &dyn Fn(&mut ProviderConfig)| -> Option<Arc<Provider>> {
        let mut c = config
            .classifier
            .providers
            .iter()
            .find(|p| p.name == name)?
            .clone();
        f(&mut c);
        Some(Arc::new(Provider::new(c, metrics.clone()).unwrap()))
    };
    // The model as shipped: the account's provider, with examples when
    // the account learns.
    let demo_name = account
        .provider
        .clone()
        .expect("the account names a provider");
    let demo_provider = provider(&demo_name, &|_| {}).expect("the account's provider");
    let label = |model: &str| {
        if model.to_lowercase().contains("gemma") {
            "Gemma 3 270M"
        } else {
            "SmolLM2-135M"
        }
    };
    let demo = Variant {
        name: format!(
            "{} (the demo's), choice + examples",
            label(&demo_provider.config.model)
        ),
        provider: demo_provider.clone(),
        shots: account.learned.enabled,
        verdict_first: false,
    };
    // Each served model asked exactly as the demo asks its own (the same
    // request, so the demo's model's answers are asked once).
    let models: Vec<Variant> = ["smol", "gemma"]
        .iter()
        .filter_map(|name| {
            let served = config
                .classifier
                .providers
                .iter()
                .find(|p| p.name == *name)?;
            let mut c = demo_provider.config.clone();
            c.url = served.url.clone();
            c.model = served.model.clone();
            Some(Variant {
                name: format!("{}, choice + examples", label(&c.model)),
                provider: Arc::new(Provider::new(c, metrics.clone()).unwrap()),
                shots: account.learned.enabled,
                verdict_first: false,
            })
        })
        .collect();
    let s = Setup {
        rules: Rules::new(&account.rules).unwrap(),
        model_account: account.for_model(),
        account,
        demo,
        models,
    };

    learned::run(data, Some(&s.rules));
    let folds = cutoffs::Folds::read(data, &s.rules, sa_dir);
    let split = &folds.splits[0];
    spam::validate(&s, &folds, VALIDATION_MODEL_SUBSET);
    let learned = spam::test(&s, split, sa_dir);
    let n = split.test.len();
    variants(&s, &provider, &learned, &split.test[..subset.min(n)]);
    folders::run(&s, data, folder_limit);
}

/// A served model's provider (by name), its settings changed by a closure.
type ProviderOf<'a> = &'a dyn Fn(&str, &dyn Fn(&mut ProviderConfig)) -> Option<Arc<Provider>>;

/// Ways of asking the models, on the first held-out messages, no rules,
/// no `minimum_confidence`.
fn variants(s: &Setup, provider: ProviderOf<'_>, learned: &Model, sub: &[Msg]) {
    let mut variants = Vec::new();
    for name in ["smol", "gemma"] {
        let base = |f: &dyn Fn(&mut ProviderConfig)| provider(name, f);
        // 200 answer tokens: enough for the ~80 an answer needs (llama.cpp's
        // grammar lets a small model pad with whitespace until the limit).
        let Some(json) = base(&|c| {
            c.answer = AnswerMode::Json;
            c.max_tokens = 200;
        }) else {
            continue;
        };
        let with = |label: &str, p: Arc<Provider>, shots: bool, verdict_first: bool| Variant {
            name: format!("{name}: {label}"),
            provider: p,
            shots,
            verdict_first,
        };
        if name == "smol" {
            variants.push(with("JSON (the old default)", json.clone(), false, false));
            variants.push(with("JSON, verdict first", json.clone(), false, true));
            variants.push(with("JSON + examples", json.clone(), true, false));
            variants.push(with(
                "choice by log-probability, body",
                base(&|c| {
                    c.answer = AnswerMode::Choice;
                    c.max_body_chars = 2000;
                })
                .unwrap(),
                false,
                false,
            ));
            variants.push(with(
                "choice, sender and subject only",
                base(&|c| {
                    c.answer = AnswerMode::Choice;
                    c.max_body_chars = 0;
                })
                .unwrap(),
                false,
                false,
            ));
            variants.push(with(
                "choice + examples + 600 characters of body",
                base(&|c| {
                    c.answer = AnswerMode::Choice;
                    c.max_body_chars = 600;
                })
                .unwrap(),
                true,
                false,
            ));
        }
    }
    let refs: Vec<&Msg> = sub.iter().collect();
    println!(
        "\n## Model variants: the first {} held-out messages ({} spam), no rules, no minimum_confidence\n",
        sub.len(),
        sub.iter().filter(|m| m.spam()).count()
    );
    println!("| model, answer | accuracy | spam caught | ham called spam | spam precision | failed | per message |");
    println!("|---|---|---|---|---|---|---|");
    for v in variants.iter().chain(&s.models) {
        let a = ask(v, &s.account, learned, &refs, "spam");
        let sc = SpamScore::of(sub, |i| {
            a[i].decision
                .as_ref()
                .is_some_and(|c| class_of(c) == "Junk")
        });
        let failed = a.iter().filter(|x| x.decision.is_none()).count();
        let took: Duration = a.iter().map(|x| x.took).sum();
        println!(
            "| {} | {} | {} of {} | {} of {} | {} | {failed} | {} |",
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
}
