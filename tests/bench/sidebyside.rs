//! The rules backlog side by side with imapfilter: the same SpamAssassin
//! messages delivered into several users of one Dovecot, sorted by mailproc
//! with four rules, by imapfilter in each of its forms (`imapfilter`), and
//! by a bare IMAP client that only fetches the headers and moves (no
//! process start, nothing recorded: the floor any one-connection client
//! meets on this server); every user must end with the same folders.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use crate::common::dovecot::Dovecot;
use crate::common::mailproc::Mailproc;
use crate::{corpus, imapfilter, Row};

/// Destination folders, in rule order (first match wins in every client).
pub const FOLDERS: [&str; 4] = ["Lists", "Freemail", "Newsletters", "Offers"];

/// The mailproc rules equal to imapfilter's searches.
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

/// Messages per mailbox of `user` (empty mailboxes left out).
pub fn counts(d: &Dovecot, user: &str) -> BTreeMap<String, usize> {
    d.mailbox_counts(user)
}

/// mailproc's run over one backlog.
pub struct Ours {
    /// Start of the process to the last record committed.
    pub secs: f64,
    /// CPU seconds of mailproc and of the whole Dovecot over that time.
    pub cpu: f64,
    pub server_cpu: f64,
    /// Peak resident memory (VmHWM, KiB) once the pass is over, search
    /// indexing included.
    pub peak_kib: u64,
    /// Rows recorded `ok`, and those naming a rewritten Message-ID.
    pub rows: i64,
    pub renamed: i64,
}

/// `mailproc_emails_processed_total` of the account: read from /metrics,
/// which touches no database (polling /api/stats would count 100,000 rows
/// at every poll, on the cores mailproc runs on).
fn processed(m: &Mailproc) -> u64 {
    let text = m.get("/metrics").text;
    text.lines()
        .find(|l| l.starts_with("mailproc_emails_processed_total{"))
        .and_then(|l| l.rsplit(' ').next())
        .and_then(|v| v.parse::<f64>().ok())
        .map_or(0, |v| v as u64)
}

/// CPU seconds (user and system, every thread) of process `pid`.
pub fn cpu_of(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let f: Vec<u64> = stat
        .rfind(')')
        .map(|i| &stat[i + 1..])
        .unwrap_or("")
        .split_whitespace()
        .map(|x| x.parse().unwrap_or(0))
        .collect();
    (f.get(11).unwrap_or(&0) + f.get(12).unwrap_or(&0)) as f64 / 100.0
}

pub fn status_kib(pid: u32, field: &str) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

/// Runs mailproc over `user`'s INBOX of `n` messages.
fn mailproc_run(d: &Dovecot, user: &str, password: &str, n: usize) -> Ours {
    // MAILPROC_BENCH_PERF=FILE: a system-wide `perf record` of mailproc's
    // run (Dovecot included), for finding where the time goes; mailproc's
    // log goes to FILE.mailproc.log.
    let perf_out = std::env::var("MAILPROC_BENCH_PERF").ok();
    let perf = perf_out.clone().map(|out| {
        let p = std::process::Command::new("perf")
            .args(["record", "-a", "-g", "-F", "2000", "-o", &out])
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("perf not runnable: apt-get install linux-perf");
        std::thread::sleep(Duration::from_millis(500));
        p
    });
    let server0 = d.cpu_seconds();
    let t = Instant::now();
    let env = crate::service_env();
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let mut m = Mailproc::start_with_env(&yaml(d, user, password), &env);
    // Polled every 5 ms: the moment the last record is committed (the
    // counter moves after the commit).
    let deadline = Instant::now() + Duration::from_secs(900);
    while processed(&m) < n as u64 {
        assert!(Instant::now() < deadline, "not all recorded:\n{}", m.log());
        std::thread::sleep(Duration::from_millis(5));
    }
    let secs = t.elapsed().as_secs_f64();
    let (cpu, server_cpu) = (cpu_of(m.pid()), d.cpu_seconds() - server0);
    if let Some(p) = perf {
        let _ = std::process::Command::new("kill")
            .args(["-INT", &p.id().to_string()])
            .status();
        let _ = p.wait_with_output();
        let log = format!("{}.mailproc.log", perf_out.as_deref().unwrap_or_default());
        std::fs::write(log, m.log()).ok();
    }
    // MAILPROC_BENCH_LOG=FILE: mailproc's debug log of the run (one line
    // per window, per MOVE and per group), without a profile.
    if let Ok(log) = std::env::var("MAILPROC_BENCH_LOG") {
        std::fs::write(format!("{log}.{n}"), m.log()).ok();
    }
    // The pass ends with indexing the records for search: the peak is
    // read once the account waits for mail again.
    m.wait_for(Duration::from_secs(300), "the pass to end", || {
        let body = m.get("/api/accounts").body;
        (body["accounts"][0]["state"] == "connected").then_some(())
    });
    let peak_kib = status_kib(m.pid(), "VmHWM:");
    let db = rusqlite::Connection::open(m.db_path()).unwrap();
    let count = |sql: &str| -> i64 { db.query_row(sql, [], |r| r.get(0)).unwrap() };
    let rows = count("SELECT count(*) FROM emails WHERE status = 'ok'");
    let renamed = count(
        "SELECT count(DISTINCT message_id) FROM emails WHERE message_id LIKE '<p%@scale.mailproc.test>'",
    );
    m.terminate();
    Ours {
        secs,
        cpu,
        server_cpu,
        peak_kib,
        rows,
        renamed,
    }
}

/// The same sort by a bare client (the imap crate, one connection): SELECT,
/// the headers rules read in FETCHes of 1,000, the same decisions, one
/// UID MOVE per folder, largest first. No process start, nothing recorded.
fn bare_client(d: &Dovecot, user: &str, password: &str, n: usize) -> f64 {
    let t = Instant::now();
    let tcp = std::net::TcpStream::connect(("127.0.0.1", d.imap_port)).unwrap();
    let mut c = imap::Client::new(tcp);
    c.read_greeting().unwrap();
    let mut s = c.login(user, password).map_err(|(e, _)| e).unwrap();
    s.select("INBOX").unwrap();
    let mut to: BTreeMap<&str, Vec<u32>> = BTreeMap::new();
    for first in (1..=n as u32).step_by(1000) {
        let last = (first + 999).min(n as u32);
        let fetched = s
            .uid_fetch(
                format!("{first}:{last}"),
                "(UID BODY.PEEK[HEADER.FIELDS (From Subject List-Id)])",
            )
            .unwrap();
        for f in fetched.iter() {
            let (Some(uid), Some(h)) = (f.uid, f.header()) else {
                continue;
            };
            let e = mailproc::classify::Email::parse_headers(h).unwrap_or_default();
            let (from, subject) = (e.from.to_lowercase(), e.subject.to_lowercase());
            let folder = if e
                .headers
                .iter()
                .any(|(k, _)| k.eq_ignore_ascii_case("List-Id"))
            {
                "Lists"
            } else if from.contains("@hotmail.com") || from.contains("@yahoo.com") {
                "Freemail"
            } else if from.contains("rssfeeds@spamassassin.taint.org")
                || from.contains("subscriptions@lockergnome.com")
            {
                "Newsletters"
            } else if subject.contains("free") || subject.contains("money") {
                "Offers"
            } else {
                continue;
            };
            to.entry(folder).or_default().push(uid);
        }
    }
    let mut moves: Vec<_> = to.into_iter().collect();
    moves.sort_by_key(|(_, uids)| std::cmp::Reverse(uids.len()));
    for (folder, uids) in moves {
        s.uid_mv(mailproc::imap::uid_set(&uids), folder).unwrap();
    }
    let secs = t.elapsed().as_secs_f64();
    s.logout().unwrap();
    secs
}

/// One round at one size.
struct Round {
    ours: Ours,
    /// Per imapfilter form measured.
    peers: Vec<(usize, imapfilter::Ran)>,
    bare: Option<f64>,
    load: f64,
    deliver_s: f64,
    same: bool,
    folders: BTreeMap<String, usize>,
}

/// Delivers a user's copy of the backlog (see `round`); the seconds it took.
fn deliver(d: &Dovecot, scratch: &std::path::Path, user: &str) -> f64 {
    let t = Instant::now();
    d.import_maildir(user, "INBOX", scratch);
    // Written out before the client starts: the kernel's writeback of
    // the copy just made must not fall into the client's time.
    let _ = std::process::Command::new("sync").status();
    t.elapsed().as_secs_f64()
}

/// A user's folder counts, then its mail removed (see `round`).
fn retire(d: &Dovecot, user: &str) -> BTreeMap<String, usize> {
    let c = counts(d, user);
    let _ = std::fs::remove_dir_all(d.dir().join("mail").join(user));
    // (Its writeback kept out of the next client's time too.)
    let _ = std::process::Command::new("sync").status();
    c
}

/// Seeds a fresh Dovecot with `n` messages for every client and sorts each
/// user; `peers_first` alternates which goes first, so neither always
/// meets a warmer machine.
fn round(
    scratch: &std::path::Path,
    n: usize,
    forms: &[usize],
    bare: bool,
    peers_first: bool,
) -> Round {
    let d = Dovecot::start();
    let mut users: Vec<(String, String)> = forms
        .iter()
        .map(|f| (format!("if{f}"), "imapfilter".to_string()))
        .collect();
    if bare {
        users.push(("bare".into(), "bare".into()));
    }
    d.add_users(&users);
    let names: Vec<&str> = std::iter::once("test")
        .chain(users.iter().map(|(u, _)| u.as_str()))
        .collect();
    for u in &names {
        for f in FOLDERS {
            d.create_mailbox(u, f);
        }
    }
    // Each user's copy is delivered just before its client runs and
    // removed after it (its folders counted first): the disk holds two
    // copies of the backlog at most, the scratch maildir and one user's,
    // not one per client (100,000 messages are about 0.7 GB a copy).
    let mut deliver_s = 0.0;
    let mut counted: BTreeMap<String, BTreeMap<String, usize>> = BTreeMap::new();
    let work = tempfile::tempdir().unwrap();
    let mut peers = Vec::new();
    let mut ours = None;
    let mut bare_s = None;
    let mut load = 0.0;
    let order: [u8; 2] = if peers_first { [0, 1] } else { [1, 0] };
    for client in order {
        if client == 0 {
            for &f in forms {
                let u = format!("if{f}");
                deliver_s += deliver(&d, scratch, &u);
                let ran = imapfilter::run(&d, &u, "imapfilter", work.path(), f);
                counted.insert(u.clone(), retire(&d, &u));
                peers.push((f, ran));
            }
            continue;
        }
        deliver_s += deliver(&d, scratch, "test");
        load = crate::load();
        ours = Some(mailproc_run(&d, "test", "secret", n));
        counted.insert("test".into(), retire(&d, "test"));
        if bare {
            deliver_s += deliver(&d, scratch, "bare");
            bare_s = Some(bare_client(&d, "bare", "bare", n));
            counted.insert("bare".into(), retire(&d, "bare"));
        }
    }
    let ours = ours.expect("mailproc ran");
    let bare = bare_s;
    let folders = counted["test"].clone();
    let same = counted.values().all(|c| *c == folders);
    if !same {
        for (u, c) in &counted {
            eprintln!("FOLDER COUNTS DIFFER: {u}: {c:?}");
        }
    }
    Round {
        ours,
        peers,
        bare,
        load,
        deliver_s,
        same,
        folders,
    }
}

/// What one size measured, over its rounds.
pub struct Size {
    pub n: usize,
    pub ours_s: f64,
    /// The imapfilter form compared with, and its median seconds.
    pub peer: (usize, f64),
    pub rows: Vec<Row>,
    pub peak_kib: u64,
    /// The bare client's median seconds, when it ran.
    pub bare_s: Option<f64>,
}

fn median(v: impl IntoIterator<Item = f64>) -> f64 {
    crate::median(v.into_iter().collect())
}

/// Measures a backlog of `n` messages in `rounds` rounds, imapfilter in
/// each of `forms`, the bare client when `bare`.
pub fn measure(corpus: &[Vec<u8>], n: usize, rounds: usize, forms: &[usize], bare: bool) -> Size {
    let t = Instant::now();
    let scratch = corpus::scratch_maildir(corpus, n);
    eprintln!(
        "side by side: {n} messages written as a maildir in {:.1} s; {rounds} round(s)",
        t.elapsed().as_secs_f64()
    );
    let rs: Vec<Round> = (0..rounds)
        .map(|i| {
            let r = round(scratch.path(), n, forms, bare, i % 2 == 0);
            eprintln!(
                "side by side: {n}: round {}: delivered to {} users in {:.1} s; mailproc {:.3} s (peak RSS {:.1} MB); {}{}",
                i + 1,
                forms.len() + 1 + usize::from(bare),
                r.deliver_s,
                r.ours.secs,
                r.ours.peak_kib as f64 / 1024.0,
                r.peers
                    .iter()
                    .map(|(f, p)| format!("imapfilter {f} {:.3} s", p.secs))
                    .collect::<Vec<_>>()
                    .join(", "),
                r.bare.map(|b| format!(", bare client {b:.3} s")).unwrap_or_default()
            );
            r
        })
        .collect();
    let ours_s = median(rs.iter().map(|r| r.ours.secs));
    let per_form: Vec<(usize, f64)> = forms
        .iter()
        .map(|&f| {
            (
                f,
                median(
                    rs.iter()
                        .flat_map(|r| r.peers.iter().filter(|(g, _)| *g == f).map(|(_, p)| p.secs)),
                ),
            )
        })
        .collect();
    let peer = per_form
        .iter()
        .copied()
        .min_by(|a, b| a.1.total_cmp(&b.1))
        .expect("at least one imapfilter form");
    let rate = |s: f64| n as f64 / s;
    let loads: Vec<String> = rs.iter().map(|r| format!("{:.2}", r.load)).collect();
    let full = rs.iter().all(|r| r.ours.rows == n as i64);
    let same = rs.iter().all(|r| r.same);
    let copies = n.saturating_sub(corpus.len()) as i64;
    let renamed_ok = rs.iter().all(|r| r.ours.renamed == copies);
    let each: Vec<String> = rs
        .iter()
        .map(|r| {
            let p = r
                .peers
                .iter()
                .find(|(f, _)| *f == peer.0)
                .map_or(0.0, |(_, p)| p.secs);
            format!("{:.2}/{:.2} s", r.ours.secs, p)
        })
        .collect();
    let shown: Vec<String> = rs[0]
        .folders
        .iter()
        .map(|(k, v)| format!("{k} {v}"))
        .collect();
    let version = imapfilter::version();
    let mut rows = vec![Row {
        what: format!("rules backlog, {n} messages in one folder, start to last recorded"),
        result: format!("{:.0} msg/s ({ours_s:.2} s)", rate(ours_s)),
        target: "≥ 1.5× imapfilter's fastest form".into(),
        peer: format!(
            "imapfilter {version}, {}: {:.0} msg/s ({:.2} s)",
            imapfilter::FORMS[peer.0].0,
            rate(peer.1),
            peer.1
        ),
        note: format!(
            "load {} at the start of each round; ratio {:.2}×, medians of {rounds} round(s) (mailproc/imapfilter: {}); \
             every message recorded: {}{}; folders {} ({}); delivered by doveadm import in {:.1} s per round",
            loads.join(", "),
            peer.1 / ours_s,
            each.join(", "),
            if full { "yes" } else { "NO" },
            if copies > 0 {
                format!(
                    "; each of the {copies} copies past the corpus's {} under a Message-ID of its own: {}",
                    corpus.len(),
                    if renamed_ok { "yes" } else { "NO" }
                )
            } else {
                String::new()
            },
            if same { "identical" } else { "DIFFER" },
            shown.join(", "),
            median(rs.iter().map(|r| r.deliver_s)),
        ),
    }];
    if per_form.len() > 1 {
        rows.push(Row {
            what: format!("imapfilter's forms, {n} messages"),
            result: per_form
                .iter()
                .map(|(f, s)| format!("{}: {:.0} msg/s ({s:.2} s)", imapfilter::FORMS[*f].0, rate(*s)))
                .collect::<Vec<_>>()
                .join("; "),
            target: String::new(),
            peer: String::new(),
            note: format!("medians of {rounds} round(s); the fastest is the one compared with (`tests/bench/imapfilter.rs`)"),
        });
    }
    let cpu_ms = |cpu: f64| cpu * 1000.0 / n as f64;
    let peer_cpu: Vec<&imapfilter::Ran> = rs
        .iter()
        .flat_map(|r| r.peers.iter().filter(|(f, _)| *f == peer.0).map(|(_, p)| p))
        .collect();
    rows.push(Row {
        what: format!("CPU per message, {n} messages"),
        result: format!(
            "mailproc {:.3} ms + Dovecot {:.3} ms",
            cpu_ms(median(rs.iter().map(|r| r.ours.cpu))),
            cpu_ms(median(rs.iter().map(|r| r.ours.server_cpu)))
        ),
        target: String::new(),
        peer: format!(
            "imapfilter {:.3} ms + Dovecot {:.3} ms",
            cpu_ms(median(peer_cpu.iter().map(|p| p.cpu))),
            cpu_ms(median(peer_cpu.iter().map(|p| p.server_cpu)))
        ),
        note: "user and system time, medians: mailproc's process (/proc/PID/stat, start to last record), \
               Dovecot's whole process tree and the processes it reaped, over the same time"
            .into(),
    });
    let bare_s = bare.then(|| median(rs.iter().filter_map(|r| r.bare)));
    if let Some(b) = bare_s {
        rows.push(Row {
            what: format!("bare IMAP client, same sort, {n} messages"),
            result: format!("{:.0} msg/s ({b:.2} s)", rate(b)),
            target: String::new(),
            peer: format!("imapfilter's fastest form: {:.2}× its time", peer.1 / b),
            note: "one connection: SELECT, FETCHes of 1,000 headers, one UID MOVE per folder; \
                   no process start, nothing recorded: the floor of any one-connection client on this server"
                .into(),
        });
    }
    let peak_kib = rs.iter().map(|r| r.ours.peak_kib).max().unwrap_or(0);
    Size {
        n,
        ours_s,
        peer,
        rows,
        peak_kib,
        bare_s,
    }
}

/// The `rules` part: `MAILPROC_BENCH_N` messages (5,000), every imapfilter
/// form and the bare client, `MAILPROC_BENCH_ROUNDS` rounds (3).
pub fn run(rows: &mut Vec<Row>) {
    let n = crate::env_usize("MAILPROC_BENCH_N", 5000);
    let k = crate::env_usize("MAILPROC_BENCH_ROUNDS", 3).max(1);
    let corpus = corpus::corpus();
    rows.extend(measure(&corpus, n, k, &first_forms(), true).rows);
}

/// The imapfilter forms the `rules` part and the first size of `scale`
/// compare with: all of them, or those `MAILPROC_BENCH_FORMS` lists by
/// index (`2`: one query per folder, one expunge), to shorten a run while
/// measuring mailproc.
fn first_forms() -> Vec<usize> {
    let all = 0..imapfilter::FORMS.len();
    match std::env::var("MAILPROC_BENCH_FORMS") {
        Ok(v) => {
            let forms: Vec<usize> = v
                .split(',')
                .filter_map(|f| f.trim().parse().ok())
                .filter(|f| all.contains(f))
                .collect();
            assert!(
                !forms.is_empty(),
                "MAILPROC_BENCH_FORMS={v:?} names no form (0 to {})",
                all.end - 1
            );
            forms
        }
        Err(_) => all.collect(),
    }
}

/// imapfilter's form that expunges once, at the end.
const ONE_EXPUNGE: usize = 2;

/// The cost against size: `MAILPROC_BENCH_SIZES` (5,000, 20,000 and
/// 100,000). The first size is measured like `run`; the others once, with
/// the bare client and imapfilter's fastest form there and its one-expunge
/// form.
pub fn sizes(rows: &mut Vec<Row>) {
    let sizes: Vec<usize> = std::env::var("MAILPROC_BENCH_SIZES")
        .unwrap_or_else(|_| "5000,20000,100000".into())
        .split(',')
        .filter_map(|s| s.trim().parse().ok())
        .collect();
    if sizes.is_empty() {
        return;
    }
    let k = crate::env_usize("MAILPROC_BENCH_ROUNDS", 3).max(1);
    let corpus = corpus::corpus();
    let mut measured: Vec<Size> = Vec::new();
    for &n in &sizes {
        let mut size = match measured.first() {
            None => measure(&corpus, n, k, &first_forms(), true),
            // The fastest form there, and the one that expunges once (it
            // pays Dovecot's cost per expunging command, which grows with
            // the folder, once).
            Some(first) => {
                let mut forms = vec![first.peer.0, ONE_EXPUNGE];
                forms.sort_unstable();
                forms.dedup();
                measure(&corpus, n, 1, &forms, true)
            }
        };
        rows.append(&mut size.rows);
        measured.push(size);
    }
    if measured.len() > 1 {
        let rates: Vec<f64> = measured.iter().map(|s| s.n as f64 / s.ours_s).collect();
        let (lo, hi) = rates
            .iter()
            .fold((f64::MAX, 0f64), |(lo, hi), r| (lo.min(*r), hi.max(*r)));
        rows.push(Row {
            what: "rules backlog: msg/s against size".into(),
            result: measured
                .iter()
                .zip(&rates)
                .map(|(s, r)| format!("{}: {r:.0} msg/s", s.n))
                .collect::<Vec<_>>()
                .join(", "),
            target: "within 20 % of each other".into(),
            peer: measured
                .iter()
                .map(|s| format!("{}: {:.0} msg/s", s.n, s.n as f64 / s.peer.1))
                .collect::<Vec<_>>()
                .join(", "),
            note: format!(
                "mailproc's slowest {:.0} % below its fastest; the bare client (the server's floor): {}",
                (1.0 - lo / hi) * 100.0,
                measured
                    .iter()
                    .filter_map(|s| s.bare_s.map(|b| format!("{}: {:.0} msg/s", s.n, s.n as f64 / b)))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        });
        rows.push(Row {
            what: "rules backlog: peak resident memory against size".into(),
            result: measured
                .iter()
                .map(|s| format!("{}: {:.1} MB", s.n, s.peak_kib as f64 / 1024.0))
                .collect::<Vec<_>>()
                .join(", "),
            target: "< 64 MB at any size".into(),
            peer: String::new(),
            note: "VmHWM once the pass (search indexing included) is over, the process run with \
                   mailproc.service's environment (MALLOC_ARENA_MAX=2: glibc's arena per thread keeps \
                   what each window freed); a pass holds one window of up to 20,000 messages (about \
                   2 KB each while handled) at a time, so past 20,000 only the folder's list of UIDs \
                   (4 bytes each) and the moves held to the pass's end (16 bytes each, 100,000 at most) \
                   grow with it"
                .into(),
        });
    }
}
