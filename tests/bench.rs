//! Benchmarks (not tests): `scripts/bench.sh` runs this with
//! `cargo test --release --test bench`; `cargo test` skips it (`test = false`
//! in Cargo.toml). It prints a Markdown table and writes it to the path in
//! `MAILPROC_BENCH_OUT` (default `target/bench.md`). Figures are measured on
//! this machine with the real binary, a real Dovecot and a real SQLite file;
//! nothing here asserts a time.

mod common;
#[path = "bench/sidebyside.rs"]
mod sidebyside;

use std::time::{Duration, Instant};

use common::dovecot::Dovecot;
use common::mailproc::Mailproc;
use common::model::{answer, Model, Reply};
use mailproc::actions::Action;
use mailproc::store::{EmailMeta, Outcome, Status, Store};
use serde_json::json;

fn msg(i: usize, subject: &str, extra: &str) -> Vec<u8> {
    format!(
        "From: Sender <sender{i}@example.org>\r\nTo: test@example.test\r\nSubject: {subject}\r\n\
         Message-ID: <bench-{i}@mailproc.test>\r\nDate: Sat, 21 Nov 2026 10:00:00 +0000\r\n{extra}\
         Content-Type: text/plain\r\n\r\nBody {i}\r\n{}\r\n",
        "lorem ipsum dolor sit amet ".repeat(40)
    )
    .into_bytes()
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[v.len() / 2]
}

fn pct(mut v: Vec<f64>, p: f64) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let i = ((v.len() as f64 - 1.0) * p).round() as usize;
    v[i]
}

/// One line of the report.
pub struct Row {
    pub what: String,
    pub result: String,
    pub target: String,
    pub peer: String,
    pub note: String,
}

fn row(
    what: impl Into<String>,
    result: impl Into<String>,
    target: &str,
    note: impl Into<String>,
) -> Row {
    Row {
        what: what.into(),
        result: result.into(),
        target: target.into(),
        peer: String::new(),
        note: note.into(),
    }
}

pub fn processed(m: &Mailproc) -> u64 {
    m.get("/api/stats").body["total_processed"]
        .as_u64()
        .unwrap_or(0)
}

fn account_yaml(d: &Dovecot, model: Option<(&Model, usize)>, rules: &str) -> String {
    let provider = match model {
        Some((m, c)) => format!(
            "classifier:\n  concurrency: {c}\n  providers:\n    - {{ name: fake, kind: openai, url: \"{}\", model: scripted, timeout: 10s }}\n",
            m.url()
        ),
        None => String::new(),
    };
    format!(
        "server: {{ port: {{PORT}} }}\nstorage: {{ path: \"{{DIR}}/mailproc.db\" }}\n{provider}accounts:\n  - name: acct\n    \
         imap: {{ host: 127.0.0.1, port: {}, security: none, username: test, password: secret }}\n    \
         folders: {{ allowed: [Lists, Receipts, Sorted] }}\n    backlog: all\n    poll_interval: 60s\n{}{rules}",
        d.imap_port,
        if model.is_some() { "    provider: fake\n" } else { "" },
    )
}

fn time_get(m: &Mailproc, path: &str, n: usize) -> f64 {
    let _ = m.get(path);
    median(
        (0..n)
            .map(|_| {
                let t = Instant::now();
                assert_eq!(m.get(path).status, 200);
                t.elapsed().as_secs_f64() * 1000.0
            })
            .collect(),
    )
}

fn api_over_100k(rows: &mut Vec<Row>) {
    let mut m = Mailproc::prepare("server: { port: {PORT} }\nstorage: { path: \"{DIR}/mailproc.db\", activity_retention: 3650d }\n");
    {
        let store = Store::open(&m.db_path()).unwrap();
        let now = mailproc::timestamp::now_ms();
        let subjects = [
            "Your invoice",
            "Weekly digest",
            "Meeting notes",
            "Re: lunch?",
            "Build failed",
            "Sale ends today",
        ];
        let batch: Vec<(EmailMeta, Outcome, i64)> = (0..100_000u32)
            .map(|i| {
                let actions = match i % 3 {
                    0 => vec![
                        Action::Move {
                            folder: "Lists".into(),
                        },
                        Action::Read,
                    ],
                    1 => vec![Action::Flag {
                        flags: vec!["\\Flagged".into()],
                    }],
                    _ => vec![Action::Read],
                };
                (
                    EmailMeta {
                        account: ["personal", "work", "shared"][(i % 3) as usize].into(),
                        mailbox: "INBOX".into(),
                        uidvalidity: 1,
                        uid: i + 1,
                        message_id: format!(
                            "<{i:08}.{}@mail.example.org>",
                            i.wrapping_mul(2_654_435_761)
                        ),
                        subject: format!("{} #{i}", subjects[(i % 6) as usize]),
                        from: format!("user{}@example.org", i % 997),
                    },
                    Outcome {
                        status: Status::Ok,
                        actions,
                        model: "rules:x".into(),
                        reasoning: "r".into(),
                        ..Default::default()
                    },
                    now - i64::from(i) * 60_000,
                )
            })
            .collect();
        let t = Instant::now();
        store.insert_history_bulk(&batch).unwrap();
        store.index_search().unwrap();
        rows.push(row(
            "store: insert 100,000 activity rows (one transaction)",
            format!("{:.2} s", t.elapsed().as_secs_f64()),
            "",
            "",
        ));
    }
    m.spawn(&[]);
    m.wait_ready();
    for (label, path) in [
        ("GET /api/stats (period=all)", "/api/stats"),
        ("GET /api/stats?period=day", "/api/stats?period=day"),
        (
            "GET /api/stats?account=work&period=month",
            "/api/stats?account=work&period=month",
        ),
        ("GET /api/activity (page 1)", "/api/activity"),
        (
            "GET /api/activity?search=invoice",
            "/api/activity?search=invoice",
        ),
        (
            "GET /api/activity?search=00012345 (message id)",
            "/api/activity?search=00012345",
        ),
        (
            "GET /api/activity?search=invoice&actionType=read&page=50",
            "/api/activity?search=invoice&actionType=read&page=50",
        ),
    ] {
        rows.push(row(
            format!("{label}, 100,000 rows"),
            format!("{:.1} ms", time_get(&m, path, 30)),
            "",
            "median of 30, over HTTP",
        ));
    }
}

fn model_throughput(rows: &mut Vec<Row>) {
    for c in [1usize, 4, 8] {
        let n = if c == 1 { 50 } else { 200 };
        let d = Dovecot::start();
        d.seed_many(
            "test",
            "INBOX",
            &(0..n)
                .map(|i| msg(i, &format!("Note {i}"), ""))
                .collect::<Vec<_>>(),
        );
        let model = Model::start(16, |_| {
            Reply::Delay(
                Duration::from_millis(200),
                Box::new(answer(
                    json!([{ "type": "move", "folder": "Sorted" }]),
                    "ok",
                )),
            )
        });
        let t = Instant::now();
        let m = Mailproc::start(&account_yaml(&d, Some((&model, c)), ""));
        m.wait_for(Duration::from_secs(600), "all processed", || {
            (processed(&m) >= n as u64).then_some(())
        });
        let rate = n as f64 / t.elapsed().as_secs_f64();
        let ideal = c as f64 / 0.2;
        rows.push(row(
            format!("model backlog, 200 ms model, concurrency {c} ({n} msgs)"),
            format!("{rate:.1} msg/s"),
            "≥ 95 % of concurrency ÷ latency",
            format!("ideal {ideal:.0} msg/s, {:.0}% of it", rate / ideal * 100.0),
        ));
    }
}

fn new_mail_latency(rows: &mut Vec<Row>) {
    let d = Dovecot::start();
    let m = Mailproc::start(&account_yaml(
        &d,
        None,
        "    rules:\n      - { name: all, when: { subject: \".\" }, actions: [ { type: flag, flags: [\"\\\\Flagged\"] } ] }\n",
    ));
    m.wait_for(Duration::from_secs(10), "connected", || {
        (m.get("/health").body["accounts"]["acct"] == "connected").then_some(())
    });
    std::thread::sleep(Duration::from_millis(300));
    let mut lat = Vec::new();
    for i in 0..100 {
        let t = Instant::now();
        d.seed("test", "INBOX", &msg(100_000 + i, &format!("Live {i}"), ""));
        let seeded = t.elapsed();
        m.wait_for(Duration::from_secs(10), "processed", || {
            (processed(&m) > i as u64).then_some(())
        });
        // From delivery (doveadm save returned) to the record being visible.
        lat.push((t.elapsed() - seeded).as_secs_f64() * 1000.0);
    }
    rows.push(row(
        "new-mail latency through IDLE (100 deliveries)",
        format!(
            "p50 {:.0} ms, p99 {:.0} ms",
            pct(lat.clone(), 0.5),
            pct(lat.clone(), 0.99)
        ),
        "",
        "delivery by doveadm save to record visible in /api/stats (50 ms polling)",
    ));
}

fn main() {
    let which: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .collect();
    let want = |name: &str| which.is_empty() || which.iter().any(|w| w == name);
    let mut rows = Vec::new();
    if want("api") {
        api_over_100k(&mut rows);
    }
    if want("rules") {
        sidebyside::run(&mut rows);
    }
    if want("model") {
        model_throughput(&mut rows);
    }
    if want("latency") {
        new_mail_latency(&mut rows);
    }
    let mut out =
        String::from("| measurement | result | target | peer | note |\n|---|---|---|---|---|\n");
    for r in &rows {
        out.push_str(&format!(
            "| {} | {} | {} | {} | {} |\n",
            r.what, r.result, r.target, r.peer, r.note
        ));
    }
    print!("{out}");
    let path = std::env::var("MAILPROC_BENCH_OUT")
        .unwrap_or_else(|_| concat!(env!("CARGO_MANIFEST_DIR"), "/target/bench.md").into());
    std::fs::write(&path, &out).unwrap();
    eprintln!("written to {path}");
}
