//! Quality of the learned classifier (`mailproc::learn`) against the model
//! and both together (hybrid: the classifier when it is sure, else the
//! model), on two sets:
//!
//! - **spam**: the SpamAssassin corpus, a folder per class (`Junk` for
//!   spam-1/spam-2, `INBOX` for easy-ham-2/hard-ham-1). Held out: the last
//!   files of each group (the same split as examples/quality.rs); trained on
//!   all the others (3,000-odd messages).
//! - **synthetic**: a generated multi-folder mailbox (newsletters, receipts,
//!   notifications, personal mail in INBOX) with realistic headers; every
//!   fifth message held out.
//!
//!   learning DATA_DIR [CONFIG MODEL_LIMIT]
//!
//! Without CONFIG only the classifier is measured. With CONFIG (a provider,
//! as scripts/quality.sh writes it) the first MODEL_LIMIT held-out messages
//! of each set also go to the model, and model only / learned only / hybrid
//! are compared on those.

use std::sync::Arc;

use mailproc::actions::Action;
use mailproc::classify::{Classification, Email, Provider};
use mailproc::learn::{features, Model};

struct Sample {
    email: Email,
    class: String,
}

fn strip_from_line(raw: &[u8]) -> &[u8] {
    match raw.strip_prefix(b"From ") {
        Some(rest) => rest
            .iter()
            .position(|&b| b == b'\n')
            .map_or(raw, |i| &rest[i + 1..]),
        None => raw,
    }
}

/// (train, held out) of the SpamAssassin corpus.
fn spam_sets(data: &str) -> (Vec<Sample>, Vec<Sample>) {
    let (mut train, mut test) = (Vec::new(), Vec::new());
    for (group, held, class) in [
        ("spam-1", 125, "Junk"),
        ("spam-2", 125, "Junk"),
        ("easy-ham-2", 200, "INBOX"),
        ("hard-ham-1", 50, "INBOX"),
        ("easy-ham-1", 0, "INBOX"),
    ] {
        let mut files: Vec<_> = std::fs::read_dir(format!("{data}/{group}"))
            .unwrap_or_else(|e| panic!("{data}/{group}: {e}"))
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|x| x == "txt"))
            .collect();
        files.sort();
        let cut = files.len() - held;
        for (i, p) in files.iter().enumerate() {
            let raw = std::fs::read(p).unwrap();
            let Some(email) = Email::parse(strip_from_line(&raw)) else {
                continue;
            };
            let s = Sample {
                email,
                class: class.to_string(),
            };
            if i < cut {
                train.push(s);
            } else {
                test.push(s);
            }
        }
    }
    (train, interleave(test))
}

/// Classes alternate so a limit keeps them balanced.
fn interleave(v: Vec<Sample>) -> Vec<Sample> {
    let mut by: std::collections::BTreeMap<String, std::collections::VecDeque<Sample>> =
        Default::default();
    for s in v {
        by.entry(s.class.clone()).or_default().push_back(s);
    }
    let mut out = Vec::new();
    while by.values().any(|q| !q.is_empty()) {
        for q in by.values_mut() {
            if let Some(s) = q.pop_front() {
                out.push(s);
            }
        }
    }
    out
}

/// A small deterministic generator (xorshift), so the set is the same
/// every run.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn pick<'a>(&mut self, v: &[&'a str]) -> &'a str {
        v[(self.next() % v.len() as u64) as usize]
    }
    fn num(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

fn synthetic(n: usize) -> (Vec<Sample>, Vec<Sample>) {
    let mut r = Rng(0x9E37_79B9_7F4A_7C15);
    let mut all = Vec::new();
    for i in 0..n {
        let (class, from, list, subject, body) = match i % 4 {
            0 => {
                let (name, dom) = [
                    ("The Morning Brief", "brief.example.com"),
                    ("Rust Weekly", "rustweekly.example.org"),
                    ("Garden Club News", "gardenclub.example.net"),
                    ("Tech Digest", "digest.example.io"),
                    ("Local Food Letter", "foodletter.example.com"),
                ][r.num(5) as usize];
                let topic = r.pick(&[
                    "markets", "releases", "roses", "startups", "recipes", "climate", "football",
                    "travel",
                ]);
                (
                    "Newsletters",
                    format!("{name} <news@{dom}>"),
                    Some(format!("{name} <{}>", dom.replace('.', "-") + ".list")),
                    format!("{name}: {topic} and more, issue {}", r.num(300)),
                    format!("In this issue: {topic}. Read online. You are receiving this because you subscribed. Unsubscribe or manage preferences. Top stories this week about {topic}."),
                )
            }
            1 => {
                let shop = r.pick(&[
                    "shop.example.com",
                    "books.example.org",
                    "tickets.example.net",
                    "food-delivery.example.io",
                    "cloudhost.example.com",
                ]);
                let what = r.pick(&[
                    "Your receipt",
                    "Order confirmation",
                    "Payment received",
                    "Your invoice",
                    "Thanks for your order",
                ]);
                (
                    "Receipts",
                    format!("{} <{}@{shop}>", r.pick(&["Orders", "Billing", "Receipts", "No-reply"]), r.pick(&["orders", "billing", "noreply"])),
                    None,
                    format!("{what} #{}", 10000 + r.num(90000)),
                    format!("Thank you for your purchase. Order number {}. Total: {}.{:02} EUR, paid by card ending {}. VAT included. Questions? Contact support.", r.num(99999), r.num(200), r.num(100), 1000 + r.num(9000)),
                )
            }
            2 => {
                let (svc, dom) = [
                    ("GitHub", "github.example.com"),
                    ("Calendar", "calendar.example.com"),
                    ("Bank alerts", "alerts.bank.example"),
                    ("Cloud monitoring", "monitor.example.io"),
                    ("Social", "social.example.net"),
                ][r.num(5) as usize];
                let ev = r.pick(&[
                    "New sign-in to your account",
                    "Build failed",
                    "Reminder: meeting tomorrow",
                    "Someone mentioned you",
                    "Your password was changed",
                    "Alert: CPU above threshold",
                    "New comment on your post",
                ]);
                (
                    "Notifications",
                    format!("{svc} <notifications@{dom}>"),
                    None,
                    format!("[{svc}] {ev}"),
                    format!("{ev}. This is an automated notification; do not reply. View details in your account settings. Event id {}.", r.num(1_000_000)),
                )
            }
            _ => {
                let who = r.pick(&[
                    "alice@friends.example",
                    "bob@family.example",
                    "carol@work.example",
                    "dave@friends.example",
                    "erin@club.example",
                    "frank@family.example",
                ]);
                let about = r.pick(&[
                    "lunch on Sunday",
                    "the photos",
                    "your trip",
                    "the kids",
                    "dinner plans",
                    "the book you lent me",
                    "Saturday hike",
                ]);
                (
                    "INBOX",
                    format!("{} <{who}>", who.split('@').next().unwrap()),
                    None,
                    format!(
                        "{} {about}",
                        r.pick(&["Re:", "About", "Quick question about", ""])
                    )
                    .trim()
                    .to_string(),
                    format!(
                        "Hi! {} {about}? {} Cheers",
                        r.pick(&[
                            "How about",
                            "Did you see",
                            "What do you think about",
                            "Remember"
                        ]),
                        r.pick(&["Let me know.", "Call me later.", "Talk soon.", "See you!"])
                    ),
                )
            }
        };
        let raw = format!(
            "From: {from}\r\nTo: me@example.test\r\nSubject: {subject}\r\nMessage-ID: <s{i}@gen.example>\r\n\
             Date: Mon, 23 Nov 2026 10:00:00 +0000\r\n{}MIME-Version: 1.0\r\nContent-Type: text/plain; charset=utf-8\r\n\r\n{body}\r\n",
            list.map(|l| format!("List-Id: {l}\r\nList-Unsubscribe: <mailto:unsubscribe@example.com>\r\n")).unwrap_or_default()
        );
        all.push(Sample {
            email: Email::parse(raw.as_bytes()).unwrap(),
            class: class.to_string(),
        });
    }
    let (mut train, mut test) = (Vec::new(), Vec::new());
    for (i, s) in all.into_iter().enumerate() {
        if i % 5 == 4 {
            test.push(s)
        } else {
            train.push(s)
        }
    }
    (train, test)
}

/// The class a model's answer means: the folder moved to, `Junk` for spam,
/// else INBOX (kept). A failed answer keeps the message (INBOX).
fn class_of(c: &Result<Classification, String>) -> String {
    let Ok(c) = c else { return "INBOX".into() };
    let mut class = "INBOX".to_string();
    for a in &c.actions {
        match a {
            Action::Move { folder } => class = folder.clone(),
            Action::Spam => class = "Junk".into(),
            _ => {}
        }
    }
    class
}

fn pct(a: usize, b: usize) -> String {
    if b == 0 {
        "—".into()
    } else {
        format!("{:.1}%", 100.0 * a as f64 / b as f64)
    }
}

/// Softmax (multinomial logistic) regression over hashed features, for
/// comparison only (mailproc ships naive Bayes): 2^18 buckets, SGD with
/// a fixed learning rate, a few epochs in a fixed shuffled order.
struct HashedLr {
    classes: Vec<String>,
    w: Vec<Vec<f32>>,
}

const BUCKETS: usize = 1 << 18;

fn bucket(f: &str) -> usize {
    // FNV-1a.
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in f.bytes() {
        h ^= b as u64;
        h = h.wrapping_mul(0x100_0000_01b3);
    }
    (h as usize) % BUCKETS
}

impl HashedLr {
    fn scores(&self, x: &[usize]) -> Vec<f32> {
        let s: Vec<f32> = self
            .w
            .iter()
            .map(|w| x.iter().map(|&i| w[i]).sum::<f32>() + w[BUCKETS])
            .collect();
        let max = s.iter().copied().fold(f32::NEG_INFINITY, f32::max);
        let e: Vec<f32> = s.iter().map(|v| (v - max).exp()).collect();
        let sum: f32 = e.iter().sum();
        e.into_iter().map(|v| v / sum).collect()
    }

    fn fit(train: &[Sample], epochs: usize) -> HashedLr {
        let mut classes: Vec<String> = train.iter().map(|s| s.class.clone()).collect();
        classes.sort();
        classes.dedup();
        let mut m = HashedLr {
            w: vec![vec![0.0; BUCKETS + 1]; classes.len()],
            classes,
        };
        let data: Vec<(Vec<usize>, usize)> = train
            .iter()
            .map(|s| {
                let x = features(&s.email).iter().map(|f| bucket(f)).collect();
                (x, m.classes.iter().position(|c| *c == s.class).unwrap())
            })
            .collect();
        let mut order: Vec<usize> = (0..data.len()).collect();
        let mut r = Rng(42);
        for _ in 0..epochs {
            for i in (1..order.len()).rev() {
                order.swap(i, (r.next() % (i as u64 + 1)) as usize);
            }
            for &i in &order {
                let (x, y) = &data[i];
                let p = m.scores(x);
                for (c, w) in m.w.iter_mut().enumerate() {
                    let g = 0.1 * ((c == *y) as u8 as f32 - p[c]);
                    for &j in x {
                        w[j] += g;
                    }
                    w[BUCKETS] += g;
                }
            }
        }
        m
    }

    fn predict(&self, s: &Sample) -> (String, f32) {
        let x: Vec<usize> = features(&s.email).iter().map(|f| bucket(f)).collect();
        let p = self.scores(&x);
        let (i, c) = p
            .iter()
            .enumerate()
            .max_by(|a, b| a.1.total_cmp(b.1))
            .unwrap();
        (self.classes[i].clone(), *c)
    }
}

fn compare_lr(train: &[Sample], test: &[Sample]) {
    let t = std::time::Instant::now();
    let lr = HashedLr::fit(train, 5);
    let fit = t.elapsed();
    let preds: Vec<(String, f32)> = test.iter().map(|s| lr.predict(s)).collect();
    let right = preds
        .iter()
        .zip(test)
        .filter(|(p, s)| p.0 == s.class)
        .count();
    let sure: Vec<usize> = (0..test.len()).filter(|&i| preds[i].1 >= 0.9).collect();
    let ok = sure
        .iter()
        .filter(|&&i| preds[i].0 == test[i].class)
        .count();
    println!(
        "\nLogistic regression over hashed features (2^18, 5 epochs of SGD; not shipped): \
         fit in {fit:?}, best class always {right} of {} right ({}); at >= 0.9 it decides {} with {} right.",
        test.len(),
        pct(right, test.len()),
        sure.len(),
        pct(ok, sure.len())
    );
}

fn run(
    name: &str,
    train: &[Sample],
    test: &[Sample],
    model: Option<(&Provider, &mailproc::config::AccountConfig, usize)>,
) {
    let t = std::time::Instant::now();
    let mut m = Model::default();
    for s in train {
        m.add(&s.class, &features(&s.email), 1);
    }
    let trained = t.elapsed();
    let t = std::time::Instant::now();
    let preds: Vec<(String, f64)> = test
        .iter()
        .map(|s| {
            m.predict(&features(&s.email))
                .map(|p| (p.class, p.confidence))
                .unwrap_or(("INBOX".into(), 0.0))
        })
        .collect();
    let per = t.elapsed() / test.len().max(1) as u32;
    let right = preds
        .iter()
        .zip(test)
        .filter(|(p, s)| p.0 == s.class)
        .count();
    println!(
        "\n### {name}: trained on {} messages in {trained:?}; {} held out, {per:?} per message (features + prediction)\n",
        train.len(),
        test.len()
    );
    println!("| learned, min_confidence | decided by it | accuracy of those | accuracy, the rest kept in INBOX |");
    println!("|---|---|---|---|");
    println!(
        "| none (always its best class) | {} of {} | {} | {} |",
        test.len(),
        test.len(),
        pct(right, test.len()),
        pct(right, test.len())
    );
    for th in [0.7, 0.8, 0.9, 0.95, 0.99] {
        let sure: Vec<usize> = (0..test.len()).filter(|&i| preds[i].1 >= th).collect();
        let ok = sure
            .iter()
            .filter(|&&i| preds[i].0 == test[i].class)
            .count();
        let all_ok = (0..test.len())
            .filter(|&i| {
                let c = if preds[i].1 >= th {
                    preds[i].0.as_str()
                } else {
                    "INBOX"
                };
                c == test[i].class
            })
            .count();
        println!(
            "| {th} | {} of {} | {} | {} |",
            sure.len(),
            test.len(),
            pct(ok, sure.len()),
            pct(all_ok, test.len())
        );
    }
    compare_lr(train, test);
    let Some((provider, account, limit)) = model else {
        return;
    };
    let n = limit.min(test.len());
    let t = std::time::Instant::now();
    let answers: Vec<String> = test[..n]
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let a = class_of(
                &provider
                    .classify(account, &s.email)
                    .map_err(|e| e.to_string()),
            );
            if i % 25 == 24 {
                eprintln!("learning: {name}: {} of {n} answered", i + 1);
            }
            a
        })
        .collect();
    let took = t.elapsed();
    let th = mailproc::config::DEFAULT_LEARNED_MIN_CONFIDENCE;
    let model_ok = (0..n).filter(|&i| answers[i] == test[i].class).count();
    let learned_ok = (0..n).filter(|&i| preds[i].0 == test[i].class).count();
    let mut hybrid_ok = 0;
    let mut saved = 0;
    for i in 0..n {
        let c = if preds[i].1 >= th {
            saved += 1;
            &preds[i].0
        } else {
            &answers[i]
        };
        hybrid_ok += usize::from(*c == test[i].class);
    }
    println!(
        "\nFirst {n} held-out messages, model {} ({:.2} s per message):\n",
        provider.config.model,
        took.as_secs_f64() / n as f64
    );
    println!("| decided by | accuracy | model calls | saved |");
    println!("|---|---|---|---|");
    println!("| model only | {} | {n} | 0 |", pct(model_ok, n));
    println!("| learned only | {} | 0 | {n} |", pct(learned_ok, n));
    println!(
        "| hybrid (learned at ≥ {th}, else model) | {} | {} | {saved} ({}) |",
        pct(hybrid_ok, n),
        n - saved,
        pct(saved, n)
    );
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 2 {
        eprintln!("usage: learning DATA_DIR [CONFIG MODEL_LIMIT]");
        std::process::exit(2);
    }
    let model = args.get(2).map(|path| {
        let text = std::fs::read_to_string(path).expect("config");
        let (config, _) = mailproc::config::parse(&text, &|k| std::env::var(k).ok())
            .unwrap_or_else(|e| panic!("{path}: {e}"));
        let provider = Provider::new(
            config.classifier.providers[0].clone(),
            Arc::new(mailproc::metrics::Metrics::new()),
        )
        .unwrap();
        let limit: usize = args.get(3).map_or(100, |s| s.parse().expect("MODEL_LIMIT"));
        (provider, config.accounts[0].clone(), limit)
    });
    let (train, test) = spam_sets(&args[1]);
    let spam_account = model.as_ref().map(|(_, a, _)| {
        let mut a = a.clone();
        a.folders.allowed = vec!["Junk".into()];
        a
    });
    run(
        "SpamAssassin (Junk / INBOX)",
        &train,
        &test,
        model
            .as_ref()
            .map(|(p, _, l)| (p, spam_account.as_ref().unwrap(), *l)),
    );
    let (train, test) = synthetic(2000);
    let synth_account = model.as_ref().map(|(_, a, _)| {
        let mut a = a.clone();
        a.folders.allowed = vec![
            "Newsletters".into(),
            "Receipts".into(),
            "Notifications".into(),
        ];
        a
    });
    run(
        "synthetic mailbox (Newsletters / Receipts / Notifications / INBOX)",
        &train,
        &test,
        model
            .as_ref()
            .map(|(p, _, l)| (p, synth_account.as_ref().unwrap(), *l)),
    );
}
