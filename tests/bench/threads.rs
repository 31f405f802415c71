//! Threads during a backlog: `ls /proc/PID/task | wc -l` sampled every
//! 0.5 s while one account works through 1,000 messages with the scripted
//! model (50 ms an answer, concurrency 4), a rule deciding every tenth
//! message and a webhook target on loopback. A service that starts a
//! thread per message or per group shows it here as a count that moves
//! while the backlog runs, and as more distinct threads than it keeps.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::json;

use crate::common::dovecot::Dovecot;
use crate::common::hooks::receiver;
use crate::common::mailproc::Mailproc;
use crate::common::model::{answer, Model, Reply};
use crate::{env_usize, median, msg, processed, row, Row};

/// What the sampler saw: thread counts in order, and every thread seen
/// (TID → name).
#[derive(Default)]
struct Seen {
    counts: Vec<usize>,
    threads: BTreeMap<u32, String>,
}

fn sample(pid: u32, seen: &Mutex<Seen>) {
    let Ok(dir) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return;
    };
    let mut n = 0;
    let mut s = seen.lock().unwrap();
    for e in dir.flatten() {
        n += 1;
        let Some(tid) = e.file_name().to_str().and_then(|t| t.parse().ok()) else {
            continue;
        };
        s.threads.entry(tid).or_insert_with(|| {
            std::fs::read_to_string(e.path().join("comm"))
                .map(|c| c.trim().to_string())
                .unwrap_or_default()
        });
    }
    s.counts.push(n);
}

pub fn run(rows: &mut Vec<Row>) {
    let n: usize = env_usize("MAILPROC_BENCH_THREADS_N", 1000);
    let d = Dovecot::start();
    d.seed_many(
        "test",
        "INBOX",
        &(0..n)
            .map(|i| {
                let subject = if i % 10 == 0 {
                    format!("Receipt {i}")
                } else {
                    format!("Note {i}")
                };
                msg(i, &subject, "")
            })
            .collect::<Vec<_>>(),
    );
    let model = Model::start(8, |_| {
        Reply::Delay(
            Duration::from_millis(50),
            Box::new(answer(
                json!([{ "type": "move", "folder": "Sorted" }]),
                "ok",
            )),
        )
    });
    let (hook, _got) = receiver();
    let yaml = format!(
        "server: {{ port: {{PORT}} }}\nstorage: {{ path: \"{{DIR}}/mailproc.db\" }}\n\
         classifier:\n  concurrency: 4\n  providers:\n    - {{ name: fake, kind: openai, url: \"{}\", model: scripted, timeout: 10s }}\n\
         webhook_settings: {{ allow_private: [\"127.0.0.1\"] }}\n\
         accounts:\n  - name: acct\n    \
         imap: {{ host: 127.0.0.1, port: {}, security: none, username: test, password: secret }}\n    \
         folders: {{ allowed: [Receipts, Sorted] }}\n    backlog: all\n    poll_interval: 60s\n    provider: fake\n    \
         rules:\n      - {{ name: receipts, when: {{ subject: \"^Receipt\" }}, actions: [{{ type: move, folder: Receipts }}] }}\n    \
         webhooks:\n      - {{ url: \"http://127.0.0.1:{hook}/\", events: [email_processed] }}\n",
        model.url(),
        d.imap_port,
    );
    let mut m = Mailproc::prepare(&yaml);
    m.spawn(&[]);
    let pid = m.pid();
    let seen = Arc::new(Mutex::new(Seen::default()));
    let stop = Arc::new(AtomicBool::new(false));
    let sampler = {
        let (seen, stop) = (seen.clone(), stop.clone());
        std::thread::spawn(move || {
            while !stop.load(Ordering::SeqCst) {
                sample(pid, &seen);
                std::thread::sleep(Duration::from_millis(500));
            }
        })
    };
    m.wait_ready();
    let t = Instant::now();
    m.wait_count(
        Duration::from_secs(120),
        "the backlog recorded",
        n as u64,
        || processed(&m),
    );
    let took = t.elapsed();
    // A few samples after the backlog: what the service keeps.
    std::thread::sleep(Duration::from_secs(2));
    stop.store(true, Ordering::SeqCst);
    sampler.join().unwrap();
    let s = seen.lock().unwrap();
    let during: Vec<f64> = s.counts.iter().map(|c| *c as f64).collect();
    let (min, max) = (
        s.counts.iter().min().copied().unwrap_or(0),
        s.counts.iter().max().copied().unwrap_or(0),
    );
    let mut names: BTreeMap<String, usize> = BTreeMap::new();
    for name in s.threads.values() {
        *names.entry(name.clone()).or_default() += 1;
    }
    let names: Vec<String> = names
        .iter()
        .map(|(name, k)| {
            let name = if name.is_empty() { "(unnamed)" } else { name };
            format!("{name} ×{k}")
        })
        .collect();
    eprintln!(
        "threads: {} samples: {:?}\nthreads seen: {}",
        s.counts.len(),
        s.counts,
        names.join(", ")
    );
    rows.push(row(
        format!("threads during a {n}-message model backlog (sampled every 0.5 s)"),
        format!(
            "{min}–{max}, median {:.0}; {} distinct seen",
            median(during),
            s.threads.len()
        ),
        "the same count before, during and after",
        format!("{:.1} s backlog; {}", took.as_secs_f64(), names.join(", ")),
    ));
}
