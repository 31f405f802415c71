//! Footprint: resident memory idle with 1, 10 and 100 accounts (one
//! Dovecot user each), the time from start to a healthy /health with 10,
//! and the release binary's size.

use std::time::{Duration, Instant};

use crate::common::dovecot::Dovecot;
use crate::common::mailproc::{bin, Mailproc};
use crate::{row, Row};

fn yaml(d: &Dovecot, n: usize) -> String {
    let mut y = String::from(
        "server: { port: {PORT} }\nstorage: { path: \"{DIR}/mailproc.db\" }\naccounts:\n",
    );
    for i in 0..n {
        y.push_str(&format!(
            "  - name: a{i}\n    imap: {{ host: 127.0.0.1, port: {}, security: none, username: u{i}, password: p{i} }}\n    \
             backlog: new_only\n    poll_interval: 60s\n",
            d.imap_port
        ));
    }
    y
}

fn rss_kb(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap()
}

/// Starts mailproc with `n` accounts; returns it once every account is
/// connected, with the time that took from spawning the process.
fn start_healthy(d: &Dovecot, n: usize) -> (Mailproc, Duration) {
    let mut m = Mailproc::prepare(&yaml(d, n));
    let t = Instant::now();
    m.spawn(&[]);
    let deadline = t + Duration::from_secs(120);
    loop {
        let ok = std::net::TcpStream::connect(("127.0.0.1", m.port)).is_ok()
            && m.get("/health").body["status"] == "healthy";
        if ok {
            return (m, t.elapsed());
        }
        assert!(Instant::now() < deadline, "not healthy:\n{}", m.log());
        std::thread::sleep(Duration::from_millis(5));
    }
}

pub fn run(rows: &mut Vec<Row>) {
    let d = Dovecot::start();
    {
        // All users in one write; add_user waits until Dovecot sees them.
        use std::io::Write;
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(d.dir().join("users"))
            .unwrap();
        for i in 0..99 {
            writeln!(f, "u{i}:{{PLAIN}}p{i}::::::").unwrap();
        }
    }
    d.add_user("u99", "p99");
    for (n, target) in [(1, ""), (10, "< 20 MB"), (100, "< 60 MB")] {
        let (m, took) = start_healthy(&d, n);
        // Idle: every account in IDLE, nothing to do.
        std::thread::sleep(Duration::from_secs(3));
        let kb = rss_kb(m.pid());
        rows.push(row(
            format!("resident memory idle, {n} account(s)"),
            format!("{:.1} MB", kb as f64 / 1024.0),
            target,
            format!(
                "VmRSS after 3 s idle; start to healthy took {:.0} ms",
                took.as_secs_f64() * 1000.0
            ),
        ));
        if n == 10 {
            rows.push(row(
                "start to healthy /health, 10 accounts",
                format!("{:.0} ms", took.as_secs_f64() * 1000.0),
                "",
                "spawn to every account connected (polled every 5 ms)",
            ));
        }
    }
    let size = std::fs::metadata(bin()).unwrap().len();
    rows.push(row(
        "release binary size",
        format!("{:.1} MB", size as f64 / 1e6),
        "",
        "debug info stripped, symbols kept",
    ));
}
