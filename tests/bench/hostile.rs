//! Hostile clients (issue [14]): each attack of `tests/common/attacks.rs`
//! alone, then all at once, against the release binary, while a client
//! probes `/health` on fresh connections every 100 ms; then 100 wrong
//! logins. Reports the slowest `/health` answer, the probes that failed and
//! the peak resident memory.

use std::time::{Duration, Instant};

use crate::common::attacks::{self, health, status_field, Attack};
use crate::common::mailproc::Mailproc;
use crate::{row, Row};

const PLAIN: &str = "server: { port: {PORT} }\nstorage: { path: \"{DIR}/mailproc.db\" }\n";
/// How long each attack runs while it is probed, once it is in place.
const PROBE_FOR: Duration = Duration::from_secs(20);
/// A probe that takes longer than this counts as failed.
const PROBE_LIMIT: Duration = Duration::from_secs(5);

struct Probed {
    probes: usize,
    failed: usize,
    max: Duration,
    peak_rss_kib: u64,
    alive: bool,
}

/// Probes `/health` (and samples RSS) for [`PROBE_FOR`].
fn probe(m: &mut Mailproc) -> Probed {
    let mut p = Probed {
        probes: 0,
        failed: 0,
        max: Duration::ZERO,
        peak_rss_kib: 0,
        alive: true,
    };
    let started = Instant::now();
    while started.elapsed() < PROBE_FOR {
        let (status, took) = health(m.port, PROBE_LIMIT);
        p.probes += 1;
        if status != 200 {
            p.failed += 1;
        }
        p.max = p.max.max(took);
        p.peak_rss_kib = p.peak_rss_kib.max(status_field(m.pid(), "VmRSS:"));
        std::thread::sleep(Duration::from_millis(100));
    }
    p.alive = m.wait_exit(Duration::from_millis(10)).is_none();
    p
}

fn report(rows: &mut Vec<Row>, what: &str, p: &Probed, opened: u64) {
    rows.push(row(
        format!("hostile: {what}"),
        format!(
            "/health max {:.0} ms, {} of {} probes failed; peak RSS {:.1} MB",
            p.max.as_secs_f64() * 1000.0,
            p.failed,
            p.probes,
            p.peak_rss_kib as f64 / 1024.0
        ),
        "/health < 1 s throughout, RSS < 100 MB",
        format!(
            "{} s of probes every 100 ms on fresh connections (a probe fails past 5 s); the attack opened {opened} connection(s); process {}",
            PROBE_FOR.as_secs(),
            if p.alive { "alive" } else { "DEAD" }
        ),
    ));
}

/// Runs the attacks `start` makes against a fresh mailproc and reports them.
fn scenario(rows: &mut Vec<Row>, what: &str, start: impl FnOnce(u16) -> Vec<Attack>) {
    let mut m = Mailproc::start(PLAIN);
    let running = start(m.port);
    // Let the attack get in place (the crowds take a few seconds to open).
    std::thread::sleep(Duration::from_secs(5));
    let p = probe(&mut m);
    let opened = running
        .iter()
        .map(|a| a.opened.load(std::sync::atomic::Ordering::Relaxed))
        .sum();
    drop(running);
    eprintln!("hostile: {what}: {} ms max", p.max.as_millis());
    report(rows, what, &p, opened);
}

fn wrong_logins(rows: &mut Vec<Row>) {
    let m = Mailproc::start(
        "server: { port: {PORT}, trusted_proxies: [127.0.0.0/8] }\nstorage: { path: \"{DIR}/mailproc.db\" }\n",
    );
    let before = status_field(m.pid(), "VmRSS:");
    let started = Instant::now();
    // Four at a time (every HTTP worker verifies some), each from its own
    // address and for its own name, so no limit stops one before Argon2.
    let codes: Vec<u16> = std::thread::scope(|sc| {
        let hs: Vec<_> = (0..4)
            .map(|w| {
                let port = m.port;
                sc.spawn(move || {
                    (0..25)
                        .map(|i| {
                            let n = w * 25 + i;
                            let body = format!(r#"{{"username":"user{n}","password":"wrong"}}"#);
                            let req = format!(
                                "POST /login HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nX-Forwarded-For: 198.51.100.{}\r\nConnection: close\r\nContent-Length: {}\r\n\r\n{body}",
                                n + 1,
                                body.len()
                            );
                            attacks::statuses(&attacks::raw(port, req.as_bytes(), Duration::from_secs(60)))
                                .first()
                                .copied()
                                .unwrap_or(0)
                        })
                        .collect::<Vec<u16>>()
                })
            })
            .collect();
        hs.into_iter().flat_map(|h| h.join().unwrap()).collect()
    });
    let took = started.elapsed();
    let after = status_field(m.pid(), "VmRSS:");
    let verified = codes.iter().filter(|c| **c == 401).count();
    let busy = codes.iter().filter(|c| **c == 503).count();
    rows.push(row(
        "hostile: 100 wrong logins, 4 at a time",
        format!(
            "RSS {:.1} MB after ({:.1} MB before)",
            after as f64 / 1024.0,
            before as f64 / 1024.0
        ),
        "< 100 MB",
        format!(
            "{verified} of 100 answered 401 (each verified by Argon2id, m=19 MiB), {busy} 503 \
             (all but one HTTP worker verifying: told to try again); {:.1} s in all",
            took.as_secs_f64()
        ),
    ));
}

pub fn run(rows: &mut Vec<Row>) {
    attacks::raise_nofile(4096);
    scenario(rows, "endless chunk-size line", |port| {
        vec![attacks::endless_chunk_line(port)]
    });
    scenario(
        rows,
        "8 Connection: Upgrade connections, 1 byte/s",
        |port| vec![attacks::upgrade_trickle(port, 8)],
    );
    scenario(rows, "1,000 pipelined GET /metrics never read", |port| {
        vec![attacks::pipelined_unread(port, 1000, "/metrics")]
    });
    scenario(
        rows,
        "256 slow bodies (1 MiB declared, 1.1 KiB/s each)",
        |port| vec![attacks::slow_bodies(port, 256)],
    );
    scenario(rows, "2,000 half-sent request heads", |port| {
        vec![attacks::half_heads(port, 2000)]
    });
    scenario(rows, "all five at once", |port| {
        vec![
            attacks::endless_chunk_line(port),
            attacks::upgrade_trickle(port, 8),
            attacks::pipelined_unread(port, 1000, "/metrics"),
            attacks::slow_bodies(port, 256),
            attacks::half_heads(port, 2000),
        ]
    });
    wrong_logins(rows);
}
