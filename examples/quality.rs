//! Spam-detection quality on a held-out, balanced split of the SpamAssassin
//! corpus: the rules alone, the model alone, and rules then model (as
//! mailproc runs them), with the model's throughput and latency at a given
//! concurrency. Run by `scripts/quality.sh`, which writes the config (the
//! demo's rules and a provider) and starts the model; see docs/quality.md.
//!
//!   quality CONFIG DATA_DIR CONCURRENCY [LIMIT]
//!
//! The split: the last 125 files of spam-1 and of spam-2, the last 200 of
//! easy-ham-2 and the last 50 of hard-ham-1 (file-name order), 500 in all.
//! None of them is in the demo, the tests, or what the demo's rules were
//! tuned on (the first files of easy-ham-1, hard-ham-1 and spam-2).
//!
//! A message counts as called spam when its actions include `spam`, a move
//! to `Junk`, or the `$Junk` flag. A model answer that fails (invalid or
//! refused) takes no action, so it counts as ham, and is counted apart.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use mailproc::actions::Action;
use mailproc::classify::{Classification, Email, Provider, Rules};
use mailproc::metrics::Metrics;

struct Sample {
    email: Email,
    spam: bool,
}

fn split(data: &str, limit: usize) -> Vec<Sample> {
    let mut out = Vec::new();
    for (group, n, spam) in [
        ("spam-1", 125, true),
        ("spam-2", 125, true),
        ("easy-ham-2", 200, false),
        ("hard-ham-1", 50, false),
    ] {
        let mut files: Vec<_> = std::fs::read_dir(format!("{data}/{group}"))
            .unwrap_or_else(|e| panic!("{data}/{group}: {e}"))
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|x| x == "txt"))
            .collect();
        files.sort();
        for p in &files[files.len() - n..] {
            let raw = std::fs::read(p).unwrap();
            // The mbox "From " line the corpus carries is not part of the
            // message (Dovecot never sees it either).
            let raw = match raw.strip_prefix(b"From ") {
                Some(rest) => rest
                    .iter()
                    .position(|&b| b == b'\n')
                    .map_or(&raw[..], |i| &rest[i + 1..]),
                None => &raw[..],
            };
            if let Some(email) = Email::parse(raw) {
                out.push(Sample { email, spam });
            }
        }
    }
    // Interleave spam and ham so a LIMIT keeps the balance.
    let (spam, ham): (Vec<_>, Vec<_>) = out.into_iter().partition(|s| s.spam);
    let mut mixed = Vec::new();
    let (mut s, mut h) = (spam.into_iter(), ham.into_iter());
    loop {
        match (s.next(), h.next()) {
            (None, None) => break,
            (a, b) => mixed.extend(a.into_iter().chain(b)),
        }
    }
    mixed.truncate(limit);
    mixed
}

fn says_spam(c: &Classification) -> bool {
    c.actions.iter().any(|a| match a {
        Action::Spam => true,
        Action::Move { folder } => folder.eq_ignore_ascii_case("junk"),
        Action::Flag { flags } => flags.iter().any(|f| f.eq_ignore_ascii_case("$junk")),
        _ => false,
    })
}

/// Accuracy, spam caught (recall) and ham wrongly called spam.
fn score(samples: &[Sample], said: impl Fn(usize) -> bool) -> (f64, usize, usize, usize, usize) {
    let (mut right, mut caught, mut spam, mut false_alarm, mut ham) = (0, 0, 0, 0, 0);
    for (i, s) in samples.iter().enumerate() {
        let d = said(i);
        right += usize::from(d == s.spam);
        if s.spam {
            spam += 1;
            caught += usize::from(d);
        } else {
            ham += 1;
            false_alarm += usize::from(d);
        }
    }
    (
        right as f64 / samples.len() as f64,
        caught,
        spam,
        false_alarm,
        ham,
    )
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 4 {
        eprintln!("usage: quality CONFIG DATA_DIR CONCURRENCY [LIMIT]");
        std::process::exit(2);
    }
    let text = std::fs::read_to_string(&args[1]).expect("config");
    let (config, _) = mailproc::config::parse(&text, &|k| std::env::var(k).ok())
        .unwrap_or_else(|e| panic!("{}: {e}", args[1]));
    let concurrency: usize = args[3].parse().expect("CONCURRENCY");
    let limit: usize = args.get(4).map_or(500, |s| s.parse().expect("LIMIT"));
    let account = Arc::new(config.accounts[0].clone());
    let rules = Rules::new(&account.rules).unwrap();
    let provider = Arc::new(
        Provider::new(
            config.classifier.providers[0].clone(),
            Arc::new(Metrics::new()),
        )
        .unwrap(),
    );
    let samples = Arc::new(split(&args[2], limit));
    let n = samples.len();
    let n_spam = samples.iter().filter(|s| s.spam).count();
    eprintln!(
        "quality: {n} messages ({n_spam} spam, {} ham), model {} at concurrency {concurrency}",
        n - n_spam,
        provider.config.model
    );

    let by_rules: Vec<Option<Classification>> =
        samples.iter().map(|s| rules.classify(&s.email)).collect();

    type Answer = Option<(Result<Classification, String>, Duration)>;
    let answers: Arc<Mutex<Vec<Answer>>> = Arc::new(Mutex::new(vec![None; n]));
    let next = Arc::new(AtomicUsize::new(0));
    let started = Instant::now();
    let threads: Vec<_> = (0..concurrency)
        .map(|_| {
            let (samples, answers, next, provider, account) = (
                samples.clone(),
                answers.clone(),
                next.clone(),
                provider.clone(),
                account.clone(),
            );
            std::thread::spawn(move || loop {
                let i = next.fetch_add(1, Ordering::SeqCst);
                if i >= samples.len() {
                    return;
                }
                let t = Instant::now();
                let r = provider
                    .classify(&account, &samples[i].email)
                    .map_err(|e| e.to_string());
                let d = t.elapsed();
                if i % 50 == 49 {
                    eprintln!("quality: {} of {} answered", i + 1, samples.len());
                }
                answers.lock().unwrap()[i] = Some((r, d));
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    let wall = started.elapsed();
    let answers = answers.lock().unwrap();
    let answers: Vec<&(Result<Classification, String>, Duration)> =
        answers.iter().map(|a| a.as_ref().unwrap()).collect();

    let model_says = |i: usize| answers[i].0.as_ref().is_ok_and(says_spam);
    let rules_say = |i: usize| by_rules[i].as_ref().is_some_and(says_spam);
    let both_say = |i: usize| match &by_rules[i] {
        Some(c) => says_spam(c),
        None => model_says(i),
    };
    let errors: Vec<&String> = answers.iter().filter_map(|a| a.0.as_ref().err()).collect();
    let ruled = by_rules.iter().filter(|r| r.is_some()).count();
    let mean = answers.iter().map(|a| a.1.as_secs_f64()).sum::<f64>() / n as f64;
    let mut lat: Vec<f64> = answers.iter().map(|a| a.1.as_secs_f64()).collect();
    lat.sort_by(f64::total_cmp);
    let p95 = lat[(lat.len() * 95 / 100).min(lat.len() - 1)];

    println!("| decided by | accuracy | spam caught | ham called spam |");
    println!("|---|---|---|---|");
    for (name, f) in [
        ("rules alone", &rules_say as &dyn Fn(usize) -> bool),
        ("model alone", &model_says),
        ("rules, then model", &both_say),
    ] {
        let (acc, caught, spam, fa, ham) = score(&samples, f);
        println!(
            "| {name} | {:.1}% | {caught} of {spam} | {fa} of {ham} |",
            acc * 100.0
        );
    }
    println!();
    println!(
        "rules decided {ruled} of {n}; the model's answers: {} valid, {} failed",
        n - errors.len(),
        errors.len()
    );
    println!(
        "concurrency {concurrency}: {:.2} messages/s, mean latency {:.2} s, p95 {:.2} s, {:.0} s in all",
        n as f64 / wall.as_secs_f64(),
        mean,
        p95,
        wall.as_secs_f64()
    );
    for e in errors.iter().take(5) {
        println!("failed: {e}");
    }
}
