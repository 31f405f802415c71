//! The HTTP API under wrk over 100,000 activity rows: requests per second and
//! the 99th percentile of latency, per endpoint.

use std::process::Command;

use crate::Row;

/// `wrk --latency` output: requests/s and the 99 % latency in ms.
fn parse_wrk(out: &str) -> (f64, f64) {
    let rps = out
        .lines()
        .find_map(|l| l.trim().strip_prefix("Requests/sec:"))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("no Requests/sec in wrk output:\n{out}"));
    let p99 = out
        .lines()
        .find_map(|l| l.trim().strip_prefix("99%"))
        .map(|v| {
            let v = v.trim();
            let (num, unit) = v.split_at(v.find(|c: char| c.is_alphabetic()).unwrap_or(v.len()));
            let num: f64 = num.parse().unwrap_or(f64::NAN);
            match unit {
                "us" => num / 1000.0,
                "ms" => num,
                "s" => num * 1000.0,
                _ => f64::NAN,
            }
        })
        .unwrap_or_else(|| panic!("no 99% line in wrk output:\n{out}"));
    (rps, p99)
}

pub fn run(rows: &mut Vec<Row>) {
    let (mut m, _) = crate::with_100k_rows();
    m.spawn(&[]);
    m.wait_ready();
    let secs = crate::env_usize("MAILPROC_BENCH_WRK_SECS", 10).to_string();
    let endpoints = [
        ("/health", "", false),
        ("/api/stats", "p99 < 20 ms", false),
        ("/api/activity?search=invoice", "p99 < 20 ms", false),
        ("/api/activity?search=00012345", "p99 < 20 ms", false),
        // While mail is recorded, each commit drops the counts the readers
        // keep: here another connection commits every millisecond, so
        // nearly every request counts its matches afresh.
        ("/api/activity?search=invoice", "", true),
        ("/api/stats", "", true),
    ];
    for (path, target, writes) in endpoints {
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let writer = writes.then(|| {
            let (stop, db) = (stop.clone(), m.db_path());
            std::thread::spawn(move || {
                let store = mailproc::store::Store::open(&db).unwrap();
                let mut commits = 0u64;
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    commits += 1;
                    store.set_setting("bench", &commits.to_string()).unwrap();
                    std::thread::sleep(std::time::Duration::from_millis(1));
                }
                commits
            })
        });
        let url = m.url(path);
        // Four connections from two threads against the four HTTP workers.
        let out = Command::new("wrk")
            .args(["-t2", "-c4", "-d", &format!("{secs}s"), "--latency", &url])
            .output()
            .unwrap_or_else(|e| panic!("wrk not runnable ({e}): apt-get install wrk"));
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        let commits = writer.map(|w| w.join().unwrap());
        let text = String::from_utf8_lossy(&out.stdout).to_string();
        assert!(out.status.success(), "wrk failed:\n{text}");
        assert!(!text.contains("Non-2xx"), "errors under wrk:\n{text}");
        let (rps, p99) = parse_wrk(&text);
        let (what, note) = match commits {
            None => (
                format!("GET {path} over 100,000 rows, wrk 4 connections, {secs} s"),
                "4 HTTP worker threads (the default); counts kept until the database changes"
                    .to_string(),
            ),
            Some(n) => (
                format!(
                    "GET {path} over 100,000 rows, wrk 4 connections, {secs} s, while another connection commits every ms"
                ),
                format!("{n} commits during the run: nearly every count made afresh"),
            ),
        };
        rows.push(Row {
            what,
            result: format!("{rps:.0} req/s, p99 {p99:.1} ms"),
            target: target.into(),
            peer: String::new(),
            note,
        });
    }
}
