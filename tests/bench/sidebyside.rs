//! The rules backlog side by side with imapfilter: the same SpamAssassin
//! messages delivered over IMAP APPEND into two users of one Dovecot, one
//! sorted by imapfilter with its idiomatic server-side searches, the other by
//! mailproc with equivalent rules; both must leave the same folders.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use crate::common::dovecot::Dovecot;
use crate::common::mailproc::Mailproc;
use crate::Row;

/// Destination folders, in rule order (first match wins in both tools).
pub const FOLDERS: [&str; 4] = ["Lists", "Freemail", "Newsletters", "Offers"];

/// The first `n` messages of the corpus, in path order (easy-ham-1 first),
/// without their mbox `From ` line.
pub fn corpus(n: usize) -> Vec<Vec<u8>> {
    use crate::common::corpus;
    corpus::first(&corpus::data(), n)
}

/// Delivers `raws` to `user`'s INBOX as a delivery agent would: one IMAP
/// APPEND each (Dovecot names the maildir files with S= and W= sizes).
pub fn deliver(d: &Dovecot, user: &str, password: &str, raws: &[Vec<u8>]) {
    let tcp = std::net::TcpStream::connect(("127.0.0.1", d.imap_port)).unwrap();
    let mut c = imap::Client::new(tcp);
    c.read_greeting().unwrap();
    let mut s = c.login(user, password).map_err(|(e, _)| e).unwrap();
    for f in FOLDERS {
        let _ = s.create(f);
    }
    for raw in raws {
        s.append("INBOX", raw).finish().unwrap();
    }
    s.logout().unwrap();
}

/// Messages per mailbox of `user`.
pub fn counts(d: &Dovecot, user: &str) -> BTreeMap<String, usize> {
    let mut m = BTreeMap::new();
    for msg in d.messages(user) {
        *m.entry(msg.mailbox).or_insert(0) += 1;
    }
    m
}

const LUA: &str = r#"
options.timeout = 120
options.subscribe = false
options.create = false
options.info = false
options.starttls = false
local acct = IMAP {
    server = '127.0.0.1',
    port = PORT,
    username = 'USER',
    password = 'PASS',
}
local inbox = acct.INBOX
inbox:contain_field('List-Id', ''):move_messages(acct['Lists'])
local free = inbox:contain_from('@hotmail.com') + inbox:contain_from('@yahoo.com')
free:move_messages(acct['Freemail'])
local news = inbox:contain_from('rssfeeds@spamassassin.taint.org')
    + inbox:contain_from('subscriptions@lockergnome.com')
news:move_messages(acct['Newsletters'])
local offers = inbox:contain_subject('free') + inbox:contain_subject('money')
offers:move_messages(acct['Offers'])
"#;

/// The mailproc rules equal to the imapfilter script above.
pub const RULES: &str = r#"    rules:
      - { name: lists, when: { header: List-Id }, actions: [ { type: move, folder: Lists } ] }
      - { name: freemail, when: { from: "(?i)@hotmail\\.com|@yahoo\\.com" }, actions: [ { type: move, folder: Freemail } ] }
      - { name: newsletters, when: { from: "(?i)rssfeeds@spamassassin\\.taint\\.org|subscriptions@lockergnome\\.com" }, actions: [ { type: move, folder: Newsletters } ] }
      - { name: offers, when: { subject: "(?i)free|money" }, actions: [ { type: move, folder: Offers } ] }
"#;

pub fn yaml(d: &Dovecot, user: &str, password: &str) -> String {
    format!(
        "server: {{ port: {{PORT}} }}\nstorage: {{ path: \"{{DIR}}/mailproc.db\" }}\naccounts:\n  - name: acct\n    \
         imap: {{ host: 127.0.0.1, port: {}, security: none, username: {user}, password: {password} }}\n    \
         folders: {{ allowed: [{}] }}\n    backlog: all\n    poll_interval: 60s\n{RULES}",
        d.imap_port,
        FOLDERS.join(", ")
    )
}

/// Runs imapfilter over `user`'s INBOX; returns the wall time, start-up
/// included.
fn imapfilter(d: &Dovecot, user: &str, password: &str, dir: &Path) -> f64 {
    let conf = dir.join("imapfilter.lua");
    std::fs::write(
        &conf,
        LUA.replace("PORT", &d.imap_port.to_string())
            .replace("USER", user)
            .replace("PASS", password),
    )
    .unwrap();
    let t = Instant::now();
    let out = Command::new("imapfilter")
        .arg("-c")
        .arg(&conf)
        .env("HOME", dir)
        .output()
        .unwrap_or_else(|e| panic!("imapfilter not runnable ({e}): apt-get install imapfilter"));
    let s = t.elapsed().as_secs_f64();
    assert!(
        out.status.success(),
        "imapfilter failed: {}\n{}{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    s
}

/// One round's figures.
struct Round {
    ours_s: f64,
    peer_s: f64,
    rows: i64,
    peer: BTreeMap<String, usize>,
    ours: BTreeMap<String, usize>,
}

/// Seeds a fresh Dovecot and sorts both users; `peer_first` alternates
/// which tool goes first, so neither always meets a warmer cache.
fn round(raws: &[Vec<u8>], peer_first: bool) -> Round {
    let n = raws.len();
    let d = Dovecot::start();
    let t = Instant::now();
    std::thread::scope(|s| {
        s.spawn(|| deliver(&d, "test", "secret", raws));
        s.spawn(|| deliver(&d, "demo", "demo", raws));
    });
    eprintln!(
        "side by side: {n} messages delivered twice by APPEND in {:.1} s",
        t.elapsed().as_secs_f64()
    );
    let work = tempfile::tempdir().unwrap();
    let mut peer_s = if peer_first {
        imapfilter(&d, "demo", "demo", work.path())
    } else {
        0.0
    };

    // MAILPROC_BENCH_PERF=FILE: a system-wide `perf record` of mailproc's
    // run (Dovecot included), for finding where the time goes; mailproc's
    // log goes to FILE.mailproc.log.
    let perf_out = std::env::var("MAILPROC_BENCH_PERF").ok();
    let perf = perf_out.clone().map(|out| {
        let p = Command::new("perf")
            .args(["record", "-a", "-g", "-F", "2000", "-o", &out])
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("perf not runnable: apt-get install linux-perf");
        std::thread::sleep(Duration::from_millis(500));
        p
    });
    let started_ms = mailproc::timestamp::now_ms();
    let mut m = Mailproc::start(&yaml(&d, "test", "secret"));
    // Polled every 5 ms: the moment the last record is committed and
    // visible (a row's processed_at is stamped before its commit).
    let deadline = Instant::now() + Duration::from_secs(600);
    while crate::processed(&m) < n as u64 {
        assert!(Instant::now() < deadline, "not all recorded:\n{}", m.log());
        std::thread::sleep(Duration::from_millis(5));
    }
    let ours_s: f64 = (mailproc::timestamp::now_ms() - started_ms) as f64 / 1000.0;
    let db = rusqlite::Connection::open(m.db_path()).unwrap();
    let rows: i64 = db
        .query_row("SELECT count(*) FROM emails WHERE status = 'ok'", [], |r| {
            r.get(0)
        })
        .unwrap();
    if let Some(p) = perf {
        let _ = Command::new("kill")
            .args(["-INT", &p.id().to_string()])
            .status();
        let _ = p.wait_with_output();
        // mailproc's debug log (per-window timings) beside the profile.
        let log = format!("{}.mailproc.log", perf_out.as_deref().unwrap_or_default());
        std::fs::write(log, m.log()).ok();
    }
    m.terminate();

    if !peer_first {
        peer_s = imapfilter(&d, "demo", "demo", work.path());
    }
    Round {
        ours_s,
        peer_s,
        rows,
        peer: counts(&d, "demo"),
        ours: counts(&d, "test"),
    }
}

pub fn run(rows: &mut Vec<Row>) {
    let n = crate::env_usize("MAILPROC_BENCH_N", 5000);
    let k = crate::env_usize("MAILPROC_BENCH_ROUNDS", 3).max(1);
    let raws = corpus(n);
    eprintln!(
        "side by side: {n} messages, {:.1} MB, {k} round(s)",
        raws.iter().map(Vec::len).sum::<usize>() as f64 / 1e6
    );
    let rounds: Vec<Round> = (0..k).map(|i| round(&raws, i % 2 == 0)).collect();
    for (i, r) in rounds.iter().enumerate() {
        eprintln!(
            "side by side: round {}: mailproc {:.3} s, imapfilter {:.3} s",
            i + 1,
            r.ours_s,
            r.peer_s
        );
    }
    let same = rounds.iter().all(|r| r.peer == r.ours);
    let full = rounds.iter().all(|r| r.rows == n as i64);
    for r in rounds.iter().filter(|r| r.peer != r.ours) {
        eprintln!(
            "FOLDER COUNTS DIFFER\n imapfilter: {:?}\n mailproc:   {:?}",
            r.peer, r.ours
        );
    }
    let ours_s = crate::median(rounds.iter().map(|r| r.ours_s).collect());
    let peer_s = crate::median(rounds.iter().map(|r| r.peer_s).collect());
    let ours_rate = n as f64 / ours_s;
    let peer_rate = n as f64 / peer_s;
    let shown: Vec<String> = rounds[0]
        .ours
        .iter()
        .map(|(k, v)| format!("{k} {v}"))
        .collect();
    let each: Vec<String> = rounds
        .iter()
        .map(|r| format!("{:.2}/{:.2} s", r.ours_s, r.peer_s))
        .collect();
    rows.push(Row {
        what: format!("rules backlog, {n} SpamAssassin messages, start to last recorded"),
        result: format!("{ours_rate:.0} msg/s ({ours_s:.2} s)"),
        target: "faster than imapfilter (ratio ≥ 1.0)".into(),
        peer: format!("imapfilter 2.8: {peer_rate:.0} msg/s ({peer_s:.2} s)"),
        note: format!(
            "ratio {:.2}×, medians of {k} rounds (mailproc/imapfilter: {}); every message recorded: {}; folders {} ({})",
            ours_rate / peer_rate,
            each.join(", "),
            if full { "yes" } else { "NO" },
            if same { "identical" } else { "DIFFER" },
            shown.join(", ")
        ),
    });
}
