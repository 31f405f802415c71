//! Benchmarks (not tests): `scripts/bench.sh` runs this with
//! `cargo test --release --test bench`; `cargo test` skips it (`test = false`
//! in Cargo.toml). It prints a Markdown table and writes it to the path in
//! `MAILPROC_BENCH_OUT` (default `target/bench.md`). Figures are measured on
//! this machine with the real binary, a real Dovecot and a real SQLite file;
//! nothing here asserts a time.

mod common;
#[path = "bench/footprint.rs"]
mod footprint;
#[path = "bench/hostile.rs"]
mod hostile;
#[path = "bench/http.rs"]
mod http;
#[path = "bench/latency.rs"]
mod latency;
#[path = "bench/sidebyside.rs"]
mod sidebyside;
#[path = "bench/threads.rs"]
mod threads;

use std::time::{Duration, Instant};

use common::dovecot::Dovecot;
use common::mailproc::Mailproc;
use common::model::{answer, Model, Reply};
use mailproc::actions::Action;
use mailproc::store::{EmailMeta, Outcome, Status, Store};
use serde_json::json;

pub fn msg(i: usize, subject: &str, extra: &str) -> Vec<u8> {
    format!(
        "From: Sender <sender{i}@example.org>\r\nTo: test@example.test\r\nSubject: {subject}\r\n\
         Message-ID: <bench-{i}@mailproc.test>\r\nDate: Sat, 21 Nov 2026 10:00:00 +0000\r\n{extra}\
         Content-Type: text/plain\r\n\r\nBody {i}\r\n{}\r\n",
        "lorem ipsum dolor sit amet ".repeat(40)
    )
    .into_bytes()
}

pub fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[v.len() / 2]
}

pub fn pct(mut v: Vec<f64>, p: f64) -> f64 {
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

pub fn row(
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

pub fn env_usize(key: &str, default: usize) -> usize {
    std::env::var(key)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

pub fn processed(m: &Mailproc) -> u64 {
    m.get("/api/stats").body["total_processed"]
        .as_u64()
        .unwrap_or(0)
}

pub fn account_yaml(d: &Dovecot, model: Option<(&Model, usize)>, rules: &str) -> String {
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
    time_get_after(m, path, n, || {})
}

/// [`time_get`] with `before` run ahead of each request, untimed.
fn time_get_after(m: &Mailproc, path: &str, n: usize, mut before: impl FnMut()) -> f64 {
    let _ = m.get(path);
    median(
        (0..n)
            .map(|_| {
                before();
                let t = Instant::now();
                assert_eq!(m.get(path).status, 200);
                t.elapsed().as_secs_f64() * 1000.0
            })
            .collect(),
    )
}

/// A stopped mailproc whose store holds 100,000 activity rows over three
/// accounts, indexed for search; with the time the insert took.
pub fn with_100k_rows() -> (Mailproc, f64) {
    let m = Mailproc::prepare("server: { port: {PORT} }\nstorage: { path: \"{DIR}/mailproc.db\", activity_retention: 3650d }\n");
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
    (m, t.elapsed().as_secs_f64())
}

pub fn api_over_100k(rows: &mut Vec<Row>) {
    let (mut m, took) = with_100k_rows();
    rows.push(row(
        "store: insert and index 100,000 activity rows (one transaction)",
        format!("{took:.2} s"),
        "",
        "",
    ));
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
            "median of 30, over HTTP; a count is kept until the database changes",
        ));
        // The same with a commit by another connection before each request:
        // every count made afresh.
        let store = Store::open(&m.db_path()).unwrap();
        let mut i = 0;
        let fresh = time_get_after(&m, path, 30, || {
            i += 1;
            store.set_setting("bench", &i.to_string()).unwrap();
        });
        rows.push(row(
            format!("{label}, 100,000 rows, after a commit"),
            format!("{fresh:.1} ms"),
            "",
            "median of 30, over HTTP; another connection commits before each request",
        ));
    }
}

fn model_throughput(rows: &mut Vec<Row>) {
    let n: usize = env_usize("MAILPROC_BENCH_MODEL_N", 1000);
    for c in [4usize, 8, 16] {
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
        let deadline = Instant::now() + Duration::from_secs(600);
        while processed(&m) < n as u64 {
            assert!(Instant::now() < deadline, "not all processed:\n{}", m.log());
            std::thread::sleep(Duration::from_millis(5));
        }
        let s = t.elapsed().as_secs_f64();
        let rate = n as f64 / s;
        let ideal = c as f64 / 0.2;
        rows.push(row(
            format!("model backlog, 200 ms scripted model, concurrency {c}, {n} messages"),
            format!(
                "{rate:.1} msg/s = {:.1} % of {ideal:.0}",
                rate / ideal * 100.0
            ),
            "≥ 95 % of concurrency ÷ latency",
            format!("{s:.2} s start to last recorded"),
        ));
    }
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
    if want("threads") {
        threads::run(&mut rows);
    }
    if want("latency") {
        latency::run(&mut rows);
    }
    if want("http") {
        http::run(&mut rows);
    }
    if want("footprint") {
        footprint::run(&mut rows);
    }
    let mut hostile_rows = Vec::new();
    if want("hostile") {
        hostile::run(&mut hostile_rows);
    }
    let table = markdown(&rows);
    print!("{table}");
    let hostile_section =
        (!hostile_rows.is_empty()).then(|| hostile_section(&markdown(&hostile_rows)));
    if let Some(h) = &hostile_section {
        print!("{h}");
    }
    let path = std::env::var("MAILPROC_BENCH_OUT")
        .unwrap_or_else(|_| concat!(env!("CARGO_MANIFEST_DIR"), "/target/bench.md").into());
    let ran = if which.is_empty() {
        "all".to_string()
    } else {
        which.join(" ")
    };
    // `hostile` alone replaces its own section of an existing report and
    // leaves every other figure as it was measured.
    let existing = std::fs::read_to_string(&path).ok();
    let text = match (&hostile_section, existing, rows.is_empty()) {
        (Some(h), Some(old), true) => splice_hostile(&old, h),
        _ => report(&table, &ran, hostile_section.as_deref().unwrap_or("")),
    };
    std::fs::write(&path, text).unwrap();
    eprintln!("written to {path}");
}

fn markdown(rows: &[Row]) -> String {
    let mut table =
        String::from("| measurement | result | target | peer | note |\n|---|---|---|---|---|\n");
    for r in rows {
        table.push_str(&format!(
            "| {} | {} | {} | {} | {} |\n",
            r.what, r.result, r.target, r.peer, r.note
        ));
    }
    table
}

const HOSTILE_START: &str = "<!-- hostile: written by `scripts/bench.sh hostile` -->";
const HOSTILE_END: &str = "<!-- /hostile -->";

fn hostile_section(table: &str) -> String {
    let date = time::OffsetDateTime::now_utc()
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap_or_default();
    format!(
        "{HOSTILE_START}\n## Hostile clients\n\n\
         Measured {date} on {}; release binary, default settings (4 HTTP workers, \
         256 connections, 64 per address). Every attack comes from 127.0.0.1, as \
         the probe does.\n\n{table}\n{HOSTILE_END}\n",
        machine()
    )
}

/// `old` with its hostile section replaced by `section` (or inserted
/// before "How to reproduce").
fn splice_hostile(old: &str, section: &str) -> String {
    if let (Some(a), Some(b)) = (old.find(HOSTILE_START), old.find(HOSTILE_END)) {
        let b = b + HOSTILE_END.len() + usize::from(old[b + HOSTILE_END.len()..].starts_with('\n'));
        return format!("{}{section}{}", &old[..a], &old[b..]);
    }
    match old.find("## How to reproduce") {
        Some(i) => format!("{}{section}\n{}", &old[..i], &old[i..]),
        None => format!("{old}\n{section}"),
    }
}

/// The machine the figures were measured on.
fn machine() -> String {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let model = cpuinfo
        .lines()
        .find_map(|l| l.strip_prefix("model name"))
        .map(|v| v.trim_start_matches([' ', '\t', ':']).trim().to_string())
        .unwrap_or_else(|| "unknown CPU".into());
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    let mem = std::fs::read_to_string("/proc/meminfo")
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("MemTotal:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        .map_or(String::new(), |kb| {
            format!(", {:.1} GB RAM", kb / 1024.0 / 1024.0)
        });
    let dovecot = std::process::Command::new("dovecot")
        .arg("--version")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_default();
    // The machine may be shared: how busy it was when the run began.
    let load = std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|l| l.split_whitespace().next().map(str::to_string))
        .map_or(String::new(), |l| {
            format!("; load average {l} at the start")
        });
    format!("{cores} cores, {model}{mem}; Linux; Dovecot {dovecot}{load}")
}

fn report(table: &str, ran: &str, hostile: &str) -> String {
    let date = time::OffsetDateTime::now_utc()
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap_or_default();
    format!(
        "# Benchmarks\n\n\
         Written by `scripts/bench.sh` ({ran}); every figure is measured, none is edited by hand.\n\n\
         - Date: {date}\n\
         - Machine: {}\n\
         - Build: release (`cargo test --release --test bench`), real Dovecot on loopback, real binary, real SQLite file.\n\n\
         {table}\n\
         {hostile}\
         ## How to reproduce\n\n\
         ```sh\n\
         scripts/bench.sh                 # everything (installs dovecot-imapd, imapfilter, wrk, npm if missing)\n\
         scripts/bench.sh rules           # only the side-by-side rules backlog\n\
         MAILPROC_BENCH_N=1000 scripts/bench.sh rules   # a smaller backlog while iterating\n\
         MAILPROC_BENCH_PERF=/tmp/perf.data scripts/bench.sh rules   # with a system-wide perf record of mailproc's run\n\
         scripts/bench.sh hostile         # only the hostile clients (rewrites their section alone)\n\
         ```\n\n\
         What each measurement does:\n\n\
         - **Rules backlog, side by side.** The first 5,000 messages of the SpamAssassin public corpus \
         (the one `scripts/demo.sh` uses, fetched by `scripts/fetch-corpus.sh`), in path order, are delivered by IMAP APPEND \
         into two users of one Dovecot. imapfilter sorts one with its idiomatic server-side searches \
         (`contain_field('List-Id', '')`, `contain_from` of two freemail domains, of two newsletter senders, \
         `contain_subject` of \"free\" or \"money\", each followed by `move_messages`); mailproc sorts the other with the \
         same four rules in the same order (`tests/bench/sidebyside.rs` holds both). Both times include start-up; \
         mailproc's ends when the last activity row is committed (every message is recorded, the ones left in INBOX too). \
         The per-folder counts of both users must be identical.\n\
         - **Model backlog.** 1,000 messages, no rule matches, a scripted OpenAI-compatible model that answers after 200 ms; \
         ideal throughput is concurrency ÷ 0.2 s.\n\
         - **New mail.** 200 single deliveries by `doveadm save` while mailproc idles; a bare IDLE client on the same \
         mailbox measures Dovecot's own notification delay, and mailproc's share is what comes after it.\n\
         - **HTTP.** wrk, 2 threads and 4 connections for 10 s per endpoint, against 100,000 activity rows; the \
         search and statistics once more while another connection commits every millisecond.\n\
         - **Footprint.** VmRSS after 3 s idle with 1, 10 and 100 accounts (one Dovecot user each, `backlog: new_only`).\n\
         - **Hostile clients.** The attacks of `tests/common/attacks.rs` (an endless chunk-size line, 8 `Connection: \
         Upgrade` connections trickling a byte a second, 1,000 pipelined `GET /metrics` never read, 256 bodies of a \
         declared 1 MiB at 1.1 KiB/s, 2,000 half-sent heads), each alone and then all at once, each against a fresh \
         process: after 5 s to get in place, `/health` is probed on a fresh connection every 100 ms for 20 s while \
         VmRSS is sampled; attackers reconnect when closed. Then 100 wrong logins, 4 at a time, each verified.\n\n\
         ## Where the rules backlog's time goes\n\n\
         Read from `MAILPROC_BENCH_PERF` profiles, mailproc's debug log (one line per window, per MOVE and per \
         group) and a raw IMAP client timing the same commands on the same Dovecot. Most of both tools' time is \
         Dovecot's: the first SELECT after a delivery (about 50 ms: it moves the new maildir files to `cur/`), \
         reading every message's header (about 110 ms for mailproc's FETCHes of 5,000; imapfilter's seven \
         server-side SEARCHes cost about 145 ms), and the MOVEs (about 110 ms, the same messages for both).\n\n\
         mailproc's own work runs beside the server's instead of between its answers. Headers come in FETCHes \
         of 1,000, each parsed, decided and journalled on a second thread while the server answers the next. \
         Moved rows are made final by id, three set-based statements per MOVE, by a writer thread while the \
         next MOVE runs; the largest MOVE goes first, so only the smaller groups' records remain after the \
         last one (about 15 ms). SQLite's automatic checkpoint, with its fsync, is kept out of the run (the \
         account checkpoints after each pass that wrote). Only the fields rules read are fetched: `From`, \
         `Subject` and `Message-ID`, plus `To` and `Cc` or `List-Id` only when a rule reads them. Not in \
         mailproc's time: feeding the search index in bulk after the pass (about 60 ms; searches read \
         unindexed rows with LIKE meanwhile).\n\n\
         `BODY.PEEK[HEADER.FIELDS (…)]` is kept over the whole `BODY.PEEK[HEADER]`: Dovecot answers the \
         whole header of 5,000 cold messages in about 65 ms against 110 ms for the fields (it caches the \
         fields it parses), but the client reads whole headers at about 21 ms per 1,000 messages against \
         5 ms for the fields, and they are eight times the bytes (2.4 MB against 0.3 MB per 1,000), which a \
         server across the internet makes you pay for.\n\n\
         HTTP figures come from wrk running on the same two cores as the server, so a request's p99 \
         includes waiting for a core. Each read connection keeps the activity counts it made until the \
         database changes (`PRAGMA data_version`): repeating a search (paging through it, a dashboard \
         reloading, wrk) does not count its matches again. The rows \"after a commit\" and \"while another \
         connection commits every ms\" show the cost without that: a common term's count is about 3 ms of \
         CPU over 100,000 rows, and four of them at once on two cores miss the 20 ms p99.\n",
        machine()
    )
}
