//! One host, many accounts: 1,000 accounts (`MAILPROC_BENCH_ACCOUNTS`) on
//! one Dovecot with raised limits. From the start to every account
//! connected; memory, threads, open files and CPU while idle; a Dovecot
//! restart that drops every session at once, with a message in flight for
//! each account; then new mail at 10 messages a second
//! (`MAILPROC_BENCH_RATE`) spread over the accounts for 5 minutes
//! (`MAILPROC_BENCH_MAIL_S`), delivered by LMTP over one connection as an
//! MTA hands mail over, each timed from its delivery to its activity row.
//! Bare IDLE clients on ten more users, sent a copy of every tenth message
//! in the same LMTP transaction, measure Dovecot's own notification delay;
//! mailproc's share is the rest.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

use crate::common::dovecot::Dovecot;
use crate::common::lmtp::Lmtp;
use crate::common::mailproc::Mailproc;
use crate::sidebyside::{cpu_of, status_kib};
use crate::{load, pct, row, Row};
use mailproc::timestamp::now_ms;

/// Dovecot's limits raised for 1,000 sessions, as on a host serving that
/// many mailboxes. Its defaults: one login process per connection, at most
/// 100 of them; one `imap` process per session; 1,000 clients per service
/// (anvil and auth hear from every process).
pub const DOVECOT_LIMITS: &str = r#"
# Raised for 1,000 sessions (README: "How far one host goes").
default_process_limit = 1000
default_client_limit = 5000
service imap-login {
  # High-performance mode: a few login processes serve every connection.
  service_count = 0
  process_min_avail = 2
}
service imap {
  # 25 sessions per process: 40 processes for 1,000 sessions instead of
  # 1,000 (all mail here belongs to one system user, which this needs).
  client_limit = 25
  service_count = 0
  process_limit = 200
}
"#;

/// Users with a bare IDLE client: Dovecot's own delay, measured beside.
const SAMPLE: usize = 10;

fn yaml(d: &Dovecot, n: usize) -> String {
    let mut y = String::from(
        "server: { port: {PORT} }\nstorage: { path: \"{DIR}/mailproc.db\" }\naccounts:\n",
    );
    for i in 0..n {
        y.push_str(&format!(
            "  - name: a{i}\n    imap: {{ host: 127.0.0.1, port: {}, security: none, username: u{i}, password: p{i} }}\n    \
             backlog: all\n    poll_interval: 60s\n    rules:\n      \
             - {{ name: all, when: {{ subject: \".\" }}, actions: [ {{ type: flag, flags: [\"\\\\Flagged\"] }} ] }}\n",
            d.imap_port
        ));
    }
    y
}

fn message(id: &str, subject: &str) -> Vec<u8> {
    format!(
        "From: Sender <sender@example.org>\r\nTo: someone@example.test\r\nSubject: {subject}\r\n\
         Message-ID: <{id}@scale.mailproc.test>\r\nDate: Sat, 21 Nov 2026 10:00:00 +0000\r\n\
         Content-Type: text/plain\r\n\r\n{}\r\n",
        "lorem ipsum dolor sit amet ".repeat(20)
    )
    .into_bytes()
}

/// Waits until every one of the `n` accounts has been seen connected with
/// a state that changed at or after `after_ms`; returns when each did
/// (epoch ms of that change: the first pass after its login).
fn wait_connected(m: &Mailproc, n: usize, after_ms: i64, limit: Duration) -> Vec<i64> {
    let deadline = Instant::now() + limit;
    let mut seen: HashMap<String, i64> = HashMap::new();
    loop {
        let body = m.get("/api/accounts").body;
        for a in body["accounts"].as_array().into_iter().flatten() {
            let since = a["since"]
                .as_str()
                .and_then(mailproc::timestamp::parse_iso_ms)
                .unwrap_or(0);
            if a["connected"] == true && since >= after_ms {
                seen.entry(a["name"].as_str().unwrap_or("").to_string())
                    .or_insert(since);
            }
        }
        if seen.len() >= n {
            return seen.into_values().collect();
        }
        assert!(
            Instant::now() < deadline,
            "{} of {n} accounts connected after {limit:?}\n{}",
            seen.len(),
            m.log()
                .lines()
                .rev()
                .take(40)
                .collect::<Vec<_>>()
                .join("\n")
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Proportional set size of `pids` together (KiB): shared pages counted
/// once, split between their users.
fn pss_kib(pids: &[u32]) -> u64 {
    pids.iter()
        .map(|p| {
            std::fs::read_to_string(format!("/proc/{p}/smaps_rollup"))
                .unwrap_or_default()
                .lines()
                .find_map(|l| l.strip_prefix("Pss:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
                .unwrap_or(0)
        })
        .sum()
}

fn open_files(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd")).map_or(0, |d| d.count())
}

/// Watches the activity rows: sends the Message-ID of each row that turns
/// `ok` (the server confirmed its actions) with the instant it was seen,
/// polling the database file every 2 ms (a range of the primary key: the
/// rows from the oldest one not yet final).
fn watch_rows(db: std::path::PathBuf, stop: Arc<AtomicBool>, tx: mpsc::Sender<(String, Instant)>) {
    let conn = rusqlite::Connection::open_with_flags(
        &db,
        rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY | rusqlite::OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .unwrap();
    let mut from = 0i64;
    let mut done: HashSet<i64> = HashSet::new();
    while !stop.load(Ordering::SeqCst) {
        let mut q = conn
            .prepare_cached("SELECT id, message_id, status FROM emails WHERE id >= ?1 ORDER BY id")
            .unwrap();
        let rows: Vec<(i64, String, String)> = q
            .query_map([from], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
            .map(|it| it.filter_map(Result::ok).collect())
            .unwrap_or_default();
        let at = Instant::now();
        let mut next = None;
        for (id, message_id, status) in &rows {
            if status == "ok" {
                if done.insert(*id) {
                    let _ = tx.send((message_id.clone(), at));
                }
            } else if next.is_none() {
                next = Some(*id);
            }
        }
        from = next.unwrap_or_else(|| rows.last().map_or(from, |r| r.0 + 1));
        done.retain(|id| *id >= from);
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// Rows of the store: (total, distinct Message-IDs, not final).
fn tally(m: &Mailproc) -> (i64, i64, i64) {
    let db = rusqlite::Connection::open(m.db_path()).unwrap();
    db.query_row(
        "SELECT count(*), count(DISTINCT message_id), count(*) FILTER (WHERE status != 'ok') FROM emails",
        [],
        |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
    )
    .unwrap()
}

fn secs(ms: &[f64], p: f64) -> f64 {
    pct(ms.to_vec(), p) / 1000.0
}

pub fn run(rows: &mut Vec<Row>) {
    let n = crate::env_usize("MAILPROC_BENCH_ACCOUNTS", 1000);
    if n == 0 {
        return;
    }
    let idle_s = crate::env_usize("MAILPROC_BENCH_IDLE_S", 60);
    let rate = crate::env_usize("MAILPROC_BENCH_RATE", 10).max(1);
    let mail_s = crate::env_usize("MAILPROC_BENCH_MAIL_S", 300);
    let mut d = Dovecot::start_with(DOVECOT_LIMITS, true);
    let users: Vec<(String, String)> = (0..n)
        .map(|i| (format!("u{i}"), format!("p{i}")))
        .chain((0..SAMPLE).map(|i| (format!("idle{i}"), "idle".to_string())))
        .collect();
    d.add_users(&users);

    // Start: spawn to every account connected.
    let start_load = load();
    let mut m = Mailproc::prepare(&yaml(&d, n));
    let env = crate::service_env();
    // MAILPROC_BENCH_LOG=FILE: mailproc's debug log of the run (a line per
    // window and per group, with how long each took) goes to
    // FILE.accounts, the 30 slowest deliveries listed after it.
    let keep_log = std::env::var("MAILPROC_BENCH_LOG").ok();
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let spawned_ms = now_ms();
    m.spawn(&env);
    m.wait_ready();
    let connected = wait_connected(&m, n, spawned_ms, Duration::from_secs(600));
    let took: Vec<f64> = connected.iter().map(|t| (t - spawned_ms) as f64).collect();
    eprintln!("accounts: {n} connected in {:.1} s", secs(&took, 1.0));
    rows.push(row(
        format!("{n} accounts on one Dovecot: start to every account connected"),
        format!("{:.1} s", secs(&took, 1.0)),
        "",
        format!(
            "load {start_load:.2} at the start; spawn to each account's first pass after its login \
             (its state's time in /api/accounts): p50 {:.1} s; Dovecot with raised limits (login \
             processes in high-performance mode, 25 sessions per imap process)",
            secs(&took, 0.5)
        ),
    ));

    // Idle.
    std::thread::sleep(Duration::from_secs(5));
    let idle_load = load();
    let pid = m.pid();
    let rss = status_kib(pid, "VmRSS:");
    let threads = status_kib(pid, "Threads:");
    let files = open_files(pid);
    let tree = d.process_tree();
    let dovecot_pss = pss_kib(&tree);
    let (c0, s0) = (cpu_of(pid), d.cpu_seconds());
    std::thread::sleep(Duration::from_secs(idle_s as u64));
    let per_min = 60.0 / idle_s as f64;
    let (cpu, server) = (
        (cpu_of(pid) - c0) * per_min,
        (d.cpu_seconds() - s0) * per_min,
    );
    rows.push(row(
        format!("{n} accounts idle: memory, threads, open files"),
        format!(
            "RSS {:.1} MB, {threads} threads, {files} open files",
            rss as f64 / 1024.0
        ),
        "",
        format!(
            "load {idle_load:.2} at the start; 5 s after the last account connected; Dovecot: \
             {} processes, {:.0} MB (proportional set size, shared pages split)",
            tree.len(),
            dovecot_pss as f64 / 1024.0
        ),
    ));
    rows.push(Row {
        what: format!("{n} accounts idle: CPU per minute"),
        result: format!(
            "mailproc {cpu:.2} s ({:.1} % of a core)",
            cpu / 60.0 * 100.0
        ),
        target: String::new(),
        peer: format!("Dovecot {server:.2} s"),
        note: format!(
            "over {idle_s} s (/proc/PID/stat; Dovecot's process tree and what it reaped); \
             every account re-issues IDLE each minute (`imap.idle_interval`)"
        ),
    });

    // A restart with a message in flight for every account.
    let restart_load = load();
    let mut lmtp = Lmtp::connect(d.lmtp_port);
    for i in 0..n {
        lmtp.deliver(
            &[&format!("u{i}")],
            &message(&format!("restart-{i}"), &format!("Restart {i}")),
        );
    }
    drop(lmtp);
    let stop_ms = now_ms();
    d.stop();
    d.start_again();
    let up_ms = now_ms();
    // Nothing can sign in before the server is back: a state that changed
    // after that is a new session.
    let back = wait_connected(&m, n, up_ms, Duration::from_secs(600));
    let mut after: Vec<f64> = back.iter().map(|t| (t - stop_ms) as f64).collect();
    after.sort_by(f64::total_cmp);
    let within = after.iter().filter(|t| **t <= 60_000.0).count();
    let deadline = Instant::now() + Duration::from_secs(300);
    let restart_rows = loop {
        let t = tally(&m);
        if t.0 >= n as i64 && t.2 == 0 {
            break t;
        }
        assert!(
            Instant::now() < deadline,
            "restart mail not all recorded: {t:?}\n{}",
            d.log()
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    eprintln!(
        "accounts: restart: all back {:.1} s after the sessions were lost; rows {restart_rows:?}",
        secs(&after, 1.0)
    );
    // How the logins spread, per quarter second since the drop.
    let mut buckets: std::collections::BTreeMap<i64, usize> = Default::default();
    for t in &after {
        *buckets.entry((*t / 250.0) as i64).or_default() += 1;
    }
    eprintln!(
        "accounts: restart: logins per 250 ms since the drop: {}",
        buckets
            .iter()
            .map(|(b, c)| format!("{:.2}s:{c}", *b as f64 / 4.0))
            .collect::<Vec<_>>()
            .join(" ")
    );
    rows.push(row(
        format!("{n} accounts: Dovecot restarted, every session lost at once"),
        format!(
            "reconnected after p50 {:.1} s, p90 {:.1} s, max {:.1} s; {within} of {n} within a minute",
            secs(&after, 0.5),
            secs(&after, 0.9),
            secs(&after, 1.0)
        ),
        "all back within a minute, spread out",
        format!(
            "load {restart_load:.2} at the start; timed from the moment the sessions were dropped \
             (doveadm kick, then SIGTERM); Dovecot was back after {:.1} s; the logins came over \
             {:.1} s (first to last); one message delivered to every account just before: \
             {} rows for {n} deliveries, {} distinct Message-IDs, {} not final",
            (up_ms - stop_ms) as f64 / 1000.0,
            (after[after.len() - 1] - after[0]) / 1000.0,
            restart_rows.0,
            restart_rows.1,
            restart_rows.2
        ),
    ));

    // New mail, spread over the accounts.
    let mail_load = load();
    let (idle_tx, idle_rx) = mpsc::channel::<(usize, Instant)>();
    for j in 0..SAMPLE {
        let (tx, port) = (idle_tx.clone(), d.imap_port);
        // Left to end with the process (each blocks in IDLE).
        std::thread::spawn(move || {
            let (t, r) = mpsc::channel();
            std::thread::spawn(move || {
                crate::latency::idle_client(port, &format!("idle{j}"), "idle", t)
            });
            for at in r {
                if tx.send((j, at)).is_err() {
                    return;
                }
            }
        });
    }
    std::thread::sleep(Duration::from_secs(1));
    let stop = Arc::new(AtomicBool::new(false));
    let (row_tx, row_rx) = mpsc::channel();
    let watcher = {
        let (db, stop) = (m.db_path(), stop.clone());
        std::thread::spawn(move || watch_rows(db, stop, row_tx))
    };
    let total = rate * mail_s;
    let mut lmtp = Lmtp::connect(d.lmtp_port);
    let mut delivered: Vec<Instant> = Vec::with_capacity(total);
    let mut delivered_ms: Vec<i64> = Vec::with_capacity(total);
    let began = Instant::now();
    for k in 0..total {
        let due = began + Duration::from_secs_f64(k as f64 / rate as f64);
        if let Some(wait) = due.checked_duration_since(Instant::now()) {
            std::thread::sleep(wait);
        }
        // 7,919 is prime: consecutive messages go to accounts far apart,
        // and every account gets its share.
        let account = format!("u{}", (k * 7919) % n);
        let sample = format!("idle{}", (k / 10) % SAMPLE);
        let mut to = vec![account.as_str()];
        if k % 10 == 0 {
            to.push(&sample);
        }
        lmtp.deliver(&to, &message(&format!("live-{k}"), &format!("Live {k}")));
        delivered.push(Instant::now());
        delivered_ms.push(now_ms());
    }
    let sent_s = began.elapsed().as_secs_f64();
    // Every message recorded (or a generous limit).
    let mut seen: HashMap<usize, Instant> = HashMap::new();
    let deadline = Instant::now() + Duration::from_secs(120);
    while seen.len() < total && Instant::now() < deadline {
        if let Ok((id, at)) = row_rx.recv_timeout(Duration::from_millis(200)) {
            if let Some(k) = id
                .strip_prefix("<live-")
                .and_then(|r| r.split('@').next())
                .and_then(|k| k.parse().ok())
            {
                seen.insert(k, at);
            }
        }
    }
    stop.store(true, Ordering::SeqCst);
    let _ = watcher.join();
    let rss_after = status_kib(pid, "VmRSS:");
    let ms = |a: Instant, b: Instant| a.saturating_duration_since(b).as_secs_f64() * 1000.0;
    let lat: Vec<f64> = seen.iter().map(|(k, at)| ms(*at, delivered[*k])).collect();
    // Each bare client hears of its copies in order.
    let mut exists: Vec<Vec<Instant>> = vec![Vec::new(); SAMPLE];
    for (j, at) in idle_rx.try_iter() {
        exists[j].push(at);
    }
    let (mut floor, mut share) = (Vec::new(), Vec::new());
    let mut next = [0usize; SAMPLE];
    for k in (0..total).step_by(10) {
        let j = (k / 10) % SAMPLE;
        let Some(at) = exists[j].get(next[j]) else {
            continue;
        };
        next[j] += 1;
        let f = ms(*at, delivered[k]);
        floor.push(f);
        if let Some(done) = seen.get(&k) {
            share.push(ms(*done, delivered[k]) - f);
        }
    }
    if let Some(log) = &keep_log {
        let mut slow: Vec<(f64, usize)> = seen
            .iter()
            .map(|(k, at)| (ms(*at, delivered[*k]), *k))
            .collect();
        slow.sort_by(|a, b| b.0.total_cmp(&a.0));
        let mut out = m.log();
        out.push_str(
            "\n--- the 30 slowest deliveries: ms, message, account, delivered at (epoch ms) ---\n",
        );
        for (lat, k) in slow.iter().take(30) {
            out.push_str(&format!(
                "{lat:.0} live-{k} u{} {}\n",
                (k * 7919) % n,
                delivered_ms[*k]
            ));
        }
        std::fs::write(format!("{log}.accounts"), out).ok();
    }
    let tallied = tally(&m);
    let show = |v: &[f64]| {
        if v.is_empty() {
            return "none measured".to_string();
        }
        format!(
            "p50 {:.0} ms, p99 {:.0} ms",
            pct(v.to_vec(), 0.5),
            pct(v.to_vec(), 0.99)
        )
    };
    eprintln!(
        "accounts: new mail: {} of {total} recorded; latency {}; floor {}; share {}",
        seen.len(),
        show(&lat),
        show(&floor),
        show(&share)
    );
    rows.push(row(
        format!(
            "{n} accounts: new mail at {rate}/s for {}, delivery (LMTP) to activity row",
            if mail_s % 60 == 0 {
                format!("{} min", mail_s / 60)
            } else {
                format!("{mail_s} s")
            }
        ),
        show(&lat),
        "",
        format!(
            "load {mail_load:.2} at the start; {total} messages over one LMTP connection in {sent_s:.0} s \
             ({:.1}/s), each to another account; {} of {total} recorded; row final (the server \
             confirmed the flag) seen by polling the database every 2 ms",
            total as f64 / sent_s,
            seen.len()
        ),
    ));
    rows.push(row(
        format!("{n} accounts: new mail, delivery to a bare IDLE client's EXISTS"),
        show(&floor),
        "",
        format!(
            "{SAMPLE} more users each with a bare IDLE client, sent a copy of every tenth message in \
             the same LMTP transaction ({} copies): Dovecot's own notification delay",
            floor.len()
        ),
    ));
    rows.push(row(
        format!("{n} accounts: new mail, mailproc's own share beyond the IDLE floor"),
        show(&share),
        "p99 < 50 ms",
        "per sampled message: delivery to row, less the bare client's wait for its copy",
    ));
    rows.push(row(
        format!("{n} accounts: nothing processed twice"),
        format!(
            "{} rows for {} deliveries, {} distinct Message-IDs, {} not final",
            tallied.0,
            n + total,
            tallied.1,
            tallied.2
        ),
        "one row per delivery",
        format!(
            "the restart's {n} and the new mail's {total}; RSS {:.1} MB after the new mail ({:.1} MB idle)",
            rss_after as f64 / 1024.0,
            rss as f64 / 1024.0
        ),
    ));
    m.terminate();
    // What Dovecot complained of (limits reached, inotify), for the notes.
    let log = d.log();
    let mut kinds: Vec<String> = log
        .lines()
        .filter(|l| l.contains("Warning:") || l.contains("Error:") || l.contains("Fatal:"))
        .map(|l| l.splitn(4, ' ').nth(3).unwrap_or(l).to_string())
        .collect();
    kinds.sort();
    kinds.dedup();
    eprintln!(
        "accounts: Dovecot logged {} distinct warnings and errors:",
        kinds.len()
    );
    for k in kinds.iter().take(20) {
        eprintln!("  {k}");
    }
}
