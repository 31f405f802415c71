//! Webhooks end to end: the dispatcher thread through the library, against
//! receivers on loopback (the test endpoint of the real binary is
//! `tests/webhook_endpoint.rs`). Nothing here sends traffic anywhere but
//! 127.0.0.0/8 and ::1; the guard's other ranges are tested as pure
//! functions in `src/webhook/ssrf.rs`.

mod common;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use base64::Engine as _;
use common::receiver::{assert_timestamp, Answer, Hit, Receiver, UA};
use hmac::{Hmac, Mac};
use mailproc::config::{self, Config, EventKind};
use mailproc::metrics::Metrics;
use mailproc::store::Store;
use mailproc::webhook::{Event, Webhooks, QUEUE_SIZE};
use serde_json::{json, Value};
use sha2::Sha256;

// ----------------------------------------------------------------------------
// The dispatcher, through the library
// ----------------------------------------------------------------------------

/// Emits the typed event of `kind` whose fields `v` spells as JSON (fields
/// an event does not have are ignored, as the typed API cannot carry them).
fn emit(hooks: &Webhooks, kind: EventKind, account: &str, v: Value) {
    let s = |k: &str| v[k].as_str().unwrap_or("").to_string();
    let (error, details, subject, from) = (s("error"), s("details"), s("subject"), s("from"));
    let (model, reasoning) = (s("model"), s("reasoning"));
    let actions: Vec<mailproc::actions::Action> =
        serde_json::from_value(v["actions"].clone()).unwrap_or_default();
    let action: mailproc::actions::Action =
        serde_json::from_value(v["action"].clone()).unwrap_or(mailproc::actions::Action::Noop);
    let event = match kind {
        EventKind::EmailProcessed => Event::EmailProcessed {
            subject: &subject,
            from: &from,
            actions: &actions,
            model: &model,
            reasoning: &reasoning,
            dry_run: false,
            review: None,
            to: None,
        },
        EventKind::ActionTaken => Event::ActionTaken {
            action: &action,
            subject: &subject,
            from: &from,
            to: None,
        },
        EventKind::Error => Event::Error {
            error: &error,
            details: &details,
        },
        EventKind::ConnectionLost => Event::ConnectionLost {
            error: &error,
            details: &details,
        },
        EventKind::ConnectionRestored => Event::ConnectionRestored { details: &details },
    };
    hooks.emit(account, event);
}

/// Emits `error` events of `account`, their texts `{tag}0`, `{tag}1`, ...
/// for `range`.
fn emit_errors(hooks: &Webhooks, account: &str, tag: &str, range: std::ops::Range<usize>) {
    for i in range {
        emit(
            hooks,
            EventKind::Error,
            account,
            json!({"error": format!("{tag}{i}")}),
        );
    }
}

/// Waits (at most 20 s) until `r`'s requests and the events counted as
/// dropped add up to `n`: every event delivered or accounted for.
fn wait_accounted(d: &Dispatcher, r: &Receiver, n: usize) {
    let started = Instant::now();
    while d.metrics.webhook_dropped.get() + (r.count() as u64) < n as u64
        && started.elapsed() < Duration::from_secs(20)
    {
        std::thread::sleep(Duration::from_millis(50));
    }
}

struct Dispatcher {
    hooks: Arc<Webhooks>,
    thread: Option<JoinHandle<()>>,
    store: Arc<Store>,
    metrics: Arc<Metrics>,
}

impl Dispatcher {
    fn start(yaml: &str, env: &[(&str, &str)]) -> Dispatcher {
        let config = parse(yaml, env);
        let store = Arc::new(Store::open_in_memory().unwrap());
        let metrics = Arc::new(Metrics::new());
        let (hooks, thread) = Webhooks::start(&config, store.clone(), metrics.clone()).unwrap();
        Dispatcher {
            hooks,
            thread: Some(thread),
            store,
            metrics,
        }
    }

    /// Waits until `n` deliveries are recorded; returns them oldest first.
    /// Waits until `n` deliveries are recorded (failing when none is for
    /// `stall`); returns them oldest first.
    fn wait_deliveries(&self, n: u64, stall: Duration) -> Vec<mailproc::store::Delivery> {
        common::wait::until_done(
            stall,
            &format!("{n} deliveries recorded"),
            || {
                let (mut rows, total) = self.store.deliveries(1000, 0).unwrap();
                rows.reverse();
                (total, (total >= n).then_some(rows))
            },
            || format!("{:?}", self.store.deliveries(1000, 0)),
        )
    }

    fn outcomes(&self, event: &str, outcome: &str) -> u64 {
        self.metrics
            .webhook_deliveries
            .with_label_values(&[event, outcome])
            .get()
    }

    /// Shuts down and joins; returns how long the join took.
    fn stop(&mut self) -> Duration {
        let t = Instant::now();
        self.hooks.shutdown();
        if let Some(h) = self.thread.take() {
            h.join().unwrap();
        }
        t.elapsed()
    }
}

impl Drop for Dispatcher {
    fn drop(&mut self) {
        if self.thread.is_some() {
            self.stop();
        }
    }
}

fn parse(yaml: &str, env: &[(&str, &str)]) -> Config {
    let lookup = |name: &str| {
        env.iter()
            .find(|(k, _)| *k == name)
            .map(|(_, v)| v.to_string())
    };
    config::parse(yaml, &lookup)
        .unwrap_or_else(|e| panic!("config:\n{e}"))
        .0
}

fn account_yaml(name: &str, webhooks: &str) -> String {
    format!(
        "  - name: {name}\n    imap: {{ host: imap.invalid, username: u, password: p }}\n    webhooks: {webhooks}\n"
    )
}

#[test]
fn dispatcher_filters_events_per_entry_and_per_account() {
    let all = Receiver::start("127.0.0.1:0", Answer::Status(200));
    let errors = Receiver::start("127.0.0.1:0", Answer::Status(200));
    let personal = Receiver::start("127.0.0.1:0", Answer::Status(200));
    let work = Receiver::start("127.0.0.1:0", Answer::Status(500));
    let yaml = format!(
        "webhook_settings: {{ timeout: 5s, allow_private: [\"127.0.0.1/32\"] }}\n\
         webhooks:\n  - url: {}\n  - url: {}\n    events: [error, connection_lost]\naccounts:\n{}{}",
        all.url("/all"),
        errors.url("/errors"),
        account_yaml("personal", &format!("[{{ url: \"{}\", events: [email_processed] }}]", personal.url("/p"))),
        account_yaml("work", &format!("[{{ url: \"{}\" }}]", work.url("/w"))),
    );
    let d = Dispatcher::start(&yaml, &[]);
    let emitted = [
        (EventKind::EmailProcessed, "personal"),
        (EventKind::ActionTaken, "personal"),
        (EventKind::Error, "work"),
        (EventKind::ConnectionLost, "personal"),
        (EventKind::EmailProcessed, "work"),
        (EventKind::ConnectionRestored, "work"),
    ];
    for (kind, account) in emitted {
        emit(&d.hooks, kind, account, json!({"n": 1}));
    }
    // all: 6, errors: error + connection_lost, personal: its email_processed,
    // work: its 3 events.
    let rows = d.wait_deliveries(12, Duration::from_secs(10));

    let seen = |r: &Receiver| -> Vec<(String, String)> {
        r.hits()
            .iter()
            .map(|h| {
                let b = h.json();
                (
                    b["event"].as_str().unwrap().to_string(),
                    b["account"].as_str().unwrap().to_string(),
                )
            })
            .collect()
    };
    let pairs = |v: &[(&str, &str)]| -> Vec<(String, String)> {
        v.iter()
            .map(|(e, a)| (e.to_string(), a.to_string()))
            .collect()
    };
    assert_eq!(
        seen(&all),
        pairs(&[
            ("email_processed", "personal"),
            ("action_taken", "personal"),
            ("error", "work"),
            ("connection_lost", "personal"),
            ("email_processed", "work"),
            ("connection_restored", "work"),
        ])
    );
    assert_eq!(
        seen(&errors),
        pairs(&[("error", "work"), ("connection_lost", "personal")])
    );
    assert_eq!(seen(&personal), pairs(&[("email_processed", "personal")]));
    assert_eq!(
        seen(&work),
        pairs(&[
            ("error", "work"),
            ("email_processed", "work"),
            ("connection_restored", "work")
        ])
    );

    // Every outcome is recorded with its account, and counted.
    assert_eq!(rows.len(), 12);
    assert!(rows.iter().all(|r| r.account.is_some()));
    let to_work: Vec<_> = rows.iter().filter(|r| r.url == work.url("/w")).collect();
    assert_eq!(to_work.len(), 3);
    assert!(to_work
        .iter()
        .all(|r| r.status_code == Some(500) && r.account.as_deref() == Some("work")));
    assert_eq!(d.outcomes("email_processed", "success"), 3);
    assert_eq!(d.outcomes("email_processed", "http_error"), 1);
    assert_eq!(d.outcomes("error", "success"), 2);
    assert_eq!(d.outcomes("error", "http_error"), 1);
}

#[test]
fn dispatcher_sends_substituted_headers_and_default_overrides() {
    let r = Receiver::start("127.0.0.1:0", Answer::Status(204));
    let yaml = format!(
        r#"
webhook_settings: {{ allow_private: ["127.0.0.1"] }}
webhooks:
  - url: "{}"
    headers:
      Authorization: "Bearer ${{HOOK_TOKEN}}"
      X-Mixed: "pre-${{HOOK_TOKEN}}-post"
      content-type: application/vnd.mailproc+json
"#,
        r.url("/h")
    );
    let d = Dispatcher::start(&yaml, &[("HOOK_TOKEN", "s3cr3t-value")]);
    emit(
        &d.hooks,
        EventKind::Error,
        "personal",
        json!({"error": "e", "details": "d"}),
    );
    let h = &r.wait_for_hits(1, Duration::from_secs(10))[0];
    assert_eq!(h.method, "POST");
    assert_eq!(h.path, "/h");
    assert_eq!(h.one("Authorization"), "Bearer s3cr3t-value");
    assert_eq!(h.one("X-Mixed"), "pre-s3cr3t-value-post");
    assert_eq!(h.one("Content-Type"), "application/vnd.mailproc+json");
    assert_eq!(h.one("User-Agent"), UA);
    let rows = d.wait_deliveries(1, Duration::from_secs(5));
    assert_eq!(rows[0].status_code, Some(204));
    assert_eq!(d.outcomes("error", "success"), 1);
}

#[test]
fn dispatcher_payloads_keep_their_json_types() {
    let r = Receiver::start("127.0.0.1:0", Answer::Status(200));
    let yaml = format!(
        "webhook_settings: {{ allow_private: [\"127.0.0.0/8\"] }}\nwebhooks:\n  - url: \"{}\"\n",
        r.url("/")
    );
    let d = Dispatcher::start(&yaml, &[]);
    let actions = json!([
        {"type": "move", "folder": "Receipts"},
        {"type": "flag", "flags": ["\\Flagged", "$Invoice"]},
        {"type": "read"}
    ]);
    emit(
        &d.hooks,
        EventKind::EmailProcessed,
        "personal",
        json!({"subject": "Your receipt", "from": "shop@example.com", "actions": actions,
               "model": "qwen2.5:7b", "reasoning": "A purchase confirmation."}),
    );
    emit(
        &d.hooks,
        EventKind::ActionTaken,
        "personal",
        json!({"action": {"type": "move", "folder": "Receipts"}, "subject": "Your receipt", "from": "shop@example.com"}),
    );
    emit(
        &d.hooks,
        EventKind::Error,
        "personal",
        json!({"error": "classification failed", "details": "model timed out after 60s"}),
    );
    emit(
        &d.hooks,
        EventKind::ConnectionLost,
        "personal",
        json!({"error": "connection reset", "details": "imap.example.com:993"}),
    );
    // The account argument is authoritative, and `event`/`timestamp` are
    // the dispatcher's to set.
    emit(
        &d.hooks,
        EventKind::ConnectionRestored,
        "personal",
        json!({"account": "spoofed", "event": "spoofed", "timestamp": 0, "error": "", "details": "after 3 attempts"}),
    );
    let hits = r.wait_for_hits(5, Duration::from_secs(10));
    let bodies: Vec<Value> = hits.iter().map(Hit::json).collect();
    for b in &bodies {
        assert_timestamp(&b["timestamp"]);
        assert_eq!(b["account"], "personal", "{b}");
    }
    let keys = |b: &Value| -> Vec<String> {
        let mut k: Vec<String> = b.as_object().unwrap().keys().cloned().collect();
        k.sort();
        k
    };
    let sorted = |v: &[&str]| -> Vec<String> {
        let mut v: Vec<String> = v.iter().map(|s| s.to_string()).collect();
        v.sort();
        v
    };

    let b = &bodies[0];
    assert_eq!(b["event"], "email_processed");
    assert_eq!(
        keys(b),
        sorted(&[
            "event",
            "timestamp",
            "account",
            "subject",
            "from",
            "actions",
            "model",
            "reasoning"
        ])
    );
    assert_eq!(b["subject"], "Your receipt");
    assert_eq!(b["from"], "shop@example.com");
    assert_eq!(b["model"], "qwen2.5:7b");
    assert_eq!(b["reasoning"], "A purchase confirmation.");
    assert_eq!(b["actions"], actions);
    assert!(b["actions"][1]["flags"].is_array());

    let b = &bodies[1];
    assert_eq!(b["event"], "action_taken");
    assert_eq!(
        keys(b),
        sorted(&["event", "timestamp", "account", "action", "subject", "from"])
    );
    assert_eq!(b["action"], json!({"type": "move", "folder": "Receipts"}));

    let b = &bodies[2];
    assert_eq!(b["event"], "error");
    assert_eq!(
        keys(b),
        sorted(&["event", "timestamp", "account", "error", "details"])
    );
    assert!(b["error"].is_string() && b["details"].is_string());

    for (b, event) in [
        (&bodies[3], "connection_lost"),
        (&bodies[4], "connection_restored"),
    ] {
        assert_eq!(b["event"], event);
        assert_eq!(
            keys(b),
            sorted(&["event", "timestamp", "account", "error", "details"])
        );
        assert!(b["error"].is_string() && b["details"].is_string());
    }
    assert_eq!(bodies[4]["details"], "after 3 attempts");
}

/// Verifies a Standard Webhooks signature the way a receiver would, written
/// here independently of `mailproc::webhook::sign`.
fn verify_signature(h: &Hit, key: &[u8]) {
    let id = h.one("webhook-id");
    let ts: i64 = h.one("webhook-timestamp").parse().expect("unix seconds");
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64;
    assert!(
        (now - ts).abs() <= 60,
        "webhook-timestamp {ts} is not now ({now})"
    );
    let mut mac = Hmac::<Sha256>::new_from_slice(key).unwrap();
    mac.update(format!("{id}.{ts}.{}", h.body).as_bytes());
    let expected = format!(
        "v1,{}",
        base64::engine::general_purpose::STANDARD.encode(mac.finalize().into_bytes())
    );
    assert_eq!(h.one("webhook-signature"), expected);
}

#[test]
fn dispatcher_signs_deliveries_with_a_secret() {
    let whsec = Receiver::start("127.0.0.1:0", Answer::Status(200));
    let raw = Receiver::start("127.0.0.1:0", Answer::Status(200));
    let unsigned = Receiver::start("127.0.0.1:0", Answer::Status(200));
    let yaml = format!(
        r#"
webhook_settings: {{ allow_private: ["127.0.0.1/32"] }}
webhooks:
  - url: "{}"
    secret: whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw
  - url: "{}"
    secret: "${{RAW_SECRET}}"
  - url: "{}"
"#,
        whsec.url("/"),
        raw.url("/"),
        unsigned.url("/")
    );
    let d = Dispatcher::start(&yaml, &[("RAW_SECRET", "a-plain-shared-secret")]);
    emit(
        &d.hooks,
        EventKind::Error,
        "personal",
        json!({"error": "e", "details": "d"}),
    );
    emit(
        &d.hooks,
        EventKind::Error,
        "personal",
        json!({"error": "e2", "details": "d2"}),
    );
    let a = whsec.wait_for_hits(2, Duration::from_secs(10));
    let b = raw.wait_for_hits(2, Duration::from_secs(10));
    let c = unsigned.wait_for_hits(2, Duration::from_secs(10));

    let key = base64::engine::general_purpose::STANDARD
        .decode("MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
        .unwrap();
    for h in &a {
        verify_signature(h, &key);
        assert!(h.one("webhook-id").starts_with("msg_"));
    }
    assert_ne!(
        a[0].one("webhook-id"),
        a[1].one("webhook-id"),
        "ids must be unique"
    );
    for h in &b {
        verify_signature(h, b"a-plain-shared-secret");
    }
    assert_ne!(
        a[0].one("webhook-id"),
        b[0].one("webhook-id"),
        "ids must be unique per delivery"
    );
    for h in &c {
        for name in ["webhook-id", "webhook-timestamp", "webhook-signature"] {
            assert!(h.all(name).is_empty(), "unsigned delivery carries {name}");
        }
    }
}

#[test]
fn dispatcher_refuses_private_targets_without_an_allow_entry() {
    let r = Receiver::start("127.0.0.1:0", Answer::Status(200));
    let yaml = format!("webhooks:\n  - url: \"{}\"\n", r.url("/"));
    let d = Dispatcher::start(&yaml, &[]);
    emit(
        &d.hooks,
        EventKind::Error,
        "personal",
        json!({"error": "e", "details": "d"}),
    );
    let rows = d.wait_deliveries(1, Duration::from_secs(5));
    assert_eq!(rows[0].status_code, None);
    assert!(
        rows[0].error.as_deref().unwrap().starts_with("refused: "),
        "{rows:?}"
    );
    assert_eq!(d.outcomes("error", "refused"), 1);
    assert_eq!(r.count(), 0);
}

#[test]
fn dispatcher_reload_swaps_targets() {
    let before = Receiver::start("127.0.0.1:0", Answer::Status(200));
    let after = Receiver::start("127.0.0.1:0", Answer::Status(200));
    let yaml = |r: &Receiver| {
        format!(
            "webhook_settings: {{ allow_private: [\"127.0.0.1/32\"] }}\nwebhooks:\n  - url: \"{}\"\n",
            r.url("/")
        )
    };
    let d = Dispatcher::start(&yaml(&before), &[]);
    emit(&d.hooks, EventKind::Error, "a", json!({}));
    before.wait_for_hits(1, Duration::from_secs(5));
    d.hooks.reload(&parse(&yaml(&after), &[]));
    emit(&d.hooks, EventKind::Error, "a", json!({}));
    after.wait_for_hits(1, Duration::from_secs(5));
    d.wait_deliveries(2, Duration::from_secs(5));
    assert_eq!(before.count(), 1);
}

/// Runs `f` on its own thread and fails when it has not finished within
/// `limit` (a blocked emit fails the test instead of hanging it). Returns
/// how long it took.
fn within(limit: Duration, what: &str, f: impl FnOnce() + Send + 'static) -> Duration {
    let (tx, rx) = crossbeam_channel::bounded(1);
    let started = Instant::now();
    std::thread::spawn(move || {
        f();
        let _ = tx.send(started.elapsed());
    });
    rx.recv_timeout(limit)
        .unwrap_or_else(|_| panic!("{what} did not finish within {limit:?}"))
}

fn hanging_setup(timeout: &str) -> (Receiver, Dispatcher) {
    let r = Receiver::start("127.0.0.1:0", Answer::Hang);
    let yaml = format!(
        "webhook_settings: {{ timeout: {timeout}, allow_private: [\"127.0.0.1/32\"] }}\nwebhooks:\n  - url: \"{}\"\n",
        r.url("/slow")
    );
    let d = Dispatcher::start(&yaml, &[]);
    (r, d)
}

#[test]
fn a_full_queue_drops_and_counts() {
    let ring = mailproc::logging::init(log::LevelFilter::Warn);
    let (mut r, mut d) = hanging_setup("30s");
    // The first event occupies the thread (its target hangs), so the queue
    // is empty and exactly QUEUE_SIZE more fit.
    emit(&d.hooks, EventKind::Error, "a", json!({"i": 0}));
    r.wait_for_hits(1, Duration::from_secs(5));
    let extra = 25;
    within(Duration::from_secs(5), "emitting into a full queue", {
        let hooks = d.hooks.clone();
        move || {
            for i in 0..QUEUE_SIZE + extra {
                emit(&hooks, EventKind::Error, "a", json!({"i": i + 1}));
            }
        }
    });
    assert_eq!(d.metrics.webhook_dropped.get(), extra as u64);
    assert_eq!(r.count(), 1, "the thread moved on while the target hung");

    // Released, the target answers at once and the queue drains.
    r.release();
    let took = d.stop();
    assert!(took < Duration::from_secs(7), "shutdown took {took:?}");
    assert_eq!(d.metrics.webhook_dropped.get(), extra as u64);
    let delivered = d.outcomes("error", "success");
    assert!(delivered >= 1, "nothing delivered after release");
    assert!(delivered <= QUEUE_SIZE as u64 + 1);
    // Audit (stop 51): the log said "dropped 1 event(s)" of a burst and
    // never the rest; every drop is told once the burst is over.
    let told: u64 = ring
        .recent(1000, log::Level::Warn)
        .iter()
        .filter(|l| l.message.contains("delivery queue full"))
        .map(|l| {
            let (_, n) = l.message.split_once("dropped ").expect(&l.message);
            n.split(' ')
                .next()
                .unwrap()
                .parse::<u64>()
                .expect(&l.message)
        })
        .sum();
    assert_eq!(told, extra as u64);
}

#[test]
fn a_hanging_target_does_not_slow_emit_and_times_out() {
    let (mut r, d) = hanging_setup("2s");
    // A blocking emit would wait 2 s for the first delivery alone.
    let took = within(Duration::from_secs(1), "200 emits", {
        let hooks = d.hooks.clone();
        move || {
            for i in 0..200 {
                emit(
                    &hooks,
                    EventKind::EmailProcessed,
                    "personal",
                    json!({"subject": format!("message {i}"), "from": "a@example.com", "actions": [], "model": "m", "reasoning": "r"}),
                );
            }
        }
    });
    eprintln!("200 emits took {took:?}");
    assert_eq!(d.metrics.webhook_dropped.get(), 0);

    // The first delivery gives up after the configured timeout.
    let t0 = Instant::now();
    let rows = d.wait_deliveries(1, Duration::from_secs(10));
    let waited = t0.elapsed();
    assert_eq!(rows[0].status_code, None);
    let err = rows[0].error.as_deref().unwrap();
    assert_eq!(err, "no answer within 2s (webhook_settings.timeout)");
    // Under the 10 s default by a margin for a loaded machine.
    assert!(
        rows[0].duration_ms >= 1900 && rows[0].duration_ms < 8000,
        "{rows:?}"
    );
    assert!(waited < Duration::from_secs(8), "{waited:?}");
    assert_eq!(d.outcomes("email_processed", "failed"), 1);
    r.release();
}

/// Found by an audit of the binary: one global target that never answered
/// (`timeout: 3s`) held every event for its time-out, the queue overflowed,
/// and the healthy targets got 8 and 4 of 1,200 messages' events, the rest
/// dropped. A target that gave no answer is not asked again for a while:
/// its events are recorded `skipped`, and the others' are delivered.
#[test]
fn a_silent_target_does_not_starve_the_others() {
    let mut silent = Receiver::start("127.0.0.1:0", Answer::Hang);
    let healthy = Receiver::start("127.0.0.1:0", Answer::Status(200));
    let yaml = format!(
        "webhook_settings: {{ timeout: 2s, allow_private: [\"127.0.0.1/32\"] }}\nwebhooks:\n  \
         - url: \"{}\"\n  - url: \"{}\"\n",
        silent.url("/silent"),
        healthy.url("/ok")
    );
    let d = Dispatcher::start(&yaml, &[]);
    let n = 300;
    emit_errors(&d.hooks, "a", "e", 0..n);
    // Sequential deliveries with a 2 s time-out each would take 600 s.
    let got = healthy.wait_for_hits(n, Duration::from_secs(30));
    assert_eq!(got.len(), n);
    assert_eq!(d.metrics.webhook_dropped.get(), 0);
    let rows = d.wait_deliveries(2 * n as u64, Duration::from_secs(30));
    let skipped: Vec<_> = rows
        .iter()
        .filter(|r| {
            r.error
                .as_deref()
                .is_some_and(|e| e.starts_with("not attempted"))
        })
        .collect();
    assert!(skipped.len() >= n - 5, "{} skipped of {n}", skipped.len());
    assert!(skipped
        .iter()
        .all(|r| r.url.contains("/silent") && r.status_code.is_none() && r.outcome == "skipped"));
    assert_eq!(d.outcomes("error", "success"), n as u64);
    assert_eq!(d.outcomes("error", "skipped"), skipped.len() as u64);
    assert!(silent.count() >= 1);
    silent.release();
}

/// Found by a soak audit (stop 56): a target removed from the
/// configuration kept its wait after giving no answer, so added back (its
/// receiver mended) its events were still "not attempted" for up to 5
/// minutes; and the waits of every URL that ever failed stayed in memory.
#[test]
fn a_target_removed_and_added_back_starts_without_its_old_wait() {
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = closed.local_addr().unwrap();
    drop(closed);
    let yaml = |with: bool| {
        let hook = if with {
            format!("webhooks:\n  - url: \"http://{addr}/h\"\n")
        } else {
            String::new()
        };
        format!("webhook_settings: {{ timeout: 2s, allow_private: [\"127.0.0.1/32\"] }}\n{hook}")
    };
    let d = Dispatcher::start(&yaml(true), &[]);
    // Refused: not asked again for 10 s.
    emit_errors(&d.hooks, "a", "e", 0..1);
    d.wait_deliveries(1, Duration::from_secs(10));
    d.hooks.reload(&parse(&yaml(false), &[]));
    // Mended, and added back.
    let r = Receiver::start(&addr.to_string(), Answer::Status(200));
    d.hooks.reload(&parse(&yaml(true), &[]));
    emit_errors(&d.hooks, "a", "f", 0..1);
    let got = r.wait_for_hits(1, Duration::from_secs(5));
    assert_eq!(got.len(), 1, "{:?}", d.store.deliveries(10, 0));
    assert_eq!(d.outcomes("error", "skipped"), 0);
}

/// Found by an audit of the binary: a target that answered its status and
/// then sent its body slowly held each delivery for the whole time-out
/// (the body was drained), recorded as a quick success, and every other
/// target's events waited behind it. The status is the answer: the body
/// is not waited for.
#[test]
fn a_target_that_stalls_its_body_holds_no_one_up() {
    use std::io::{Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let stalled = listener.local_addr().unwrap();
    let (keep, held) = crossbeam_channel::unbounded();
    std::thread::spawn(move || {
        for mut s in listener.incoming().flatten() {
            let mut buf = [0u8; 4096];
            let _ = s.read(&mut buf);
            let _ = s.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\nx");
            // Held open, the body never finished, until the test ends.
            if keep.send(s).is_err() {
                return;
            }
        }
    });
    let healthy = Receiver::start("127.0.0.1:0", Answer::Status(200));
    let yaml = format!(
        "webhook_settings: {{ timeout: 60s, allow_private: [\"127.0.0.1/32\"] }}\nwebhooks:\n  \
         - url: \"http://{stalled}/stall\"\n  - url: \"{}\"\n",
        healthy.url("/ok")
    );
    let d = Dispatcher::start(&yaml, &[]);
    let n = 5;
    emit_errors(&d.hooks, "a", "e", 0..n);
    // With the body waited for, each event's second delivery came 60 s
    // after its first.
    let got = healthy.wait_for_hits(n, Duration::from_secs(20));
    assert_eq!(got.len(), n);
    let rows = d.wait_deliveries(2 * n as u64, Duration::from_secs(20));
    let to_stalled: Vec<_> = rows.iter().filter(|r| r.url.contains("/stall")).collect();
    assert_eq!(to_stalled.len(), n);
    assert!(
        to_stalled
            .iter()
            .all(|r| r.status_code == Some(200) && r.outcome == "success"),
        "{to_stalled:?}"
    );
    assert_eq!(held.len(), n, "each delivery's connection is still open");
}

/// Found by an audit of the binary: a target answering in 4.5 s (under
/// its 5 s time-out, so never set aside as silent) held a healthy target's
/// events 4.5 s apart, then a backlog overflowed the one queue and 1,370
/// events were dropped, the healthy target's among them. Each target has
/// its own queue now, and the targets take turns by the time their
/// deliveries take.
#[test]
fn a_slow_target_holds_no_one_up_and_loses_only_its_own_events() {
    let slow = Receiver::start("127.0.0.1:0", Answer::Delay(Duration::from_millis(1500)));
    let fast = Receiver::start("127.0.0.1:0", Answer::Status(200));
    let yaml = format!(
        "webhook_settings: {{ timeout: 5s, allow_private: [\"127.0.0.1/32\"] }}\nwebhooks:\n  \
         - url: \"{}\"\n  - url: \"{}\"\n",
        slow.url("/slow"),
        fast.url("/fast")
    );
    let d = Dispatcher::start(&yaml, &[]);
    let send = |from: usize, to: usize| emit_errors(&d.hooks, "a", "e", from..to);
    // One queue for both: each fast delivery came after a slow one (1.5 s),
    // so the fast target got its 1,024 events in 25 minutes, as many slow
    // deliveries as fast ones. Taking turns by time, the slow target gets
    // about as much of the thread's time as the fast one's 1,024 take.
    send(0, QUEUE_SIZE);
    let started = Instant::now();
    while fast.count() < QUEUE_SIZE && started.elapsed() < Duration::from_secs(60) {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(
        fast.count(),
        QUEUE_SIZE,
        "the fast target's events in 60 s, beside {} slow deliveries",
        slow.count()
    );
    assert!(
        slow.count() < QUEUE_SIZE / 20,
        "the fast target waited behind {} slow deliveries",
        slow.count()
    );
    assert_eq!(d.metrics.webhook_dropped.get(), 0);
    // The slow target's queue is full now; more events are dropped for it
    // alone (one queue for both dropped them for both).
    let more = QUEUE_SIZE / 10;
    send(QUEUE_SIZE, QUEUE_SIZE + more);
    let got = fast.wait_for_hits(QUEUE_SIZE + more, Duration::from_secs(30));
    let errors: Vec<String> = got
        .iter()
        .map(|h| h.json()["error"].as_str().unwrap().to_string())
        .collect();
    let sent: Vec<String> = (0..QUEUE_SIZE + more).map(|i| format!("e{i}")).collect();
    assert_eq!(errors, sent, "the fast target got every event, in order");
    let dropped = d.metrics.webhook_dropped.get();
    assert!(
        (more as u64 - QUEUE_SIZE as u64 / 20..=more as u64).contains(&dropped),
        "dropped {dropped}: the slow target's overflow"
    );
}

/// Found by an audit of the binary: a URL's user-info went out as written
/// (`Authorization: Basic` of `hook%40user:p%40ss%3Aw0rd`), so a receiver
/// checking a password with `@` or `:` refused every delivery.
#[test]
fn userinfo_goes_decoded_as_basic_auth_unless_a_header_sets_it() {
    let r = Receiver::start("127.0.0.1:0", Answer::Status(200));
    let with_info = r
        .url("/basic")
        .replace("http://", "http://hook%40user:p%40ss%3Aw0rd@");
    let explicit = r.url("/explicit").replace("http://", "http://u:p@");
    let yaml = format!(
        "webhook_settings: {{ allow_private: [\"127.0.0.1/32\"] }}\nwebhooks:\n  \
         - url: \"{with_info}\"\n  \
         - url: \"{explicit}\"\n    headers: {{ Authorization: \"Bearer t0ken\" }}\n"
    );
    let d = Dispatcher::start(&yaml, &[]);
    emit(&d.hooks, EventKind::Error, "a", json!({"error": "e"}));
    let hits = r.wait_for_hits(2, Duration::from_secs(10));
    let on = |path: &str| hits.iter().find(|h| h.path == path).expect(path);
    let want = format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode("hook@user:p@ss:w0rd")
    );
    assert_eq!(on("/basic").all("authorization"), [want.as_str()]);
    assert_eq!(on("/explicit").all("authorization"), ["Bearer t0ken"]);
}

/// Found by a regression audit: with one URL in a global entry and in an
/// account's, both deliveries went out with the first entry's headers and
/// secret once the queues were kept by URL.
#[test]
fn one_url_in_two_entries_goes_out_with_each_entrys_headers() {
    let r = Receiver::start("127.0.0.1:0", Answer::Status(200));
    let url = r.url("/both");
    let yaml = format!(
        "webhook_settings: {{ allow_private: [\"127.0.0.1/32\"] }}\nwebhooks:\n  \
         - url: \"{url}\"\n    headers: {{ X-Who: global }}\naccounts:\n{}",
        account_yaml(
            "alice",
            &format!("[{{ url: \"{url}\", headers: {{ X-Who: alice }} }}]")
        )
    );
    let d = Dispatcher::start(&yaml, &[]);
    emit(&d.hooks, EventKind::Error, "alice", json!({"error": "e"}));
    let hits = r.wait_for_hits(2, Duration::from_secs(10));
    let mut who: Vec<&str> = hits.iter().map(|h| h.one("x-who")).collect();
    who.sort();
    assert_eq!(who, ["alice", "global"]);
}

/// Found by the second regression audit: events queued by their entry's
/// place in the list went out with another entry's headers and secret,
/// or were lost uncounted, after a reload that inserted, removed or
/// reordered entries. An event keeps the entry it was queued for.
#[test]
fn queued_events_keep_their_entry_across_a_reload_that_reorders() {
    let slow = Receiver::start("127.0.0.1:0", Answer::Delay(Duration::from_millis(200)));
    let entry = |path: &str, who: &str| {
        format!(
            "  - url: \"{}\"\n    headers: {{ X-Which: {who} }}\n",
            slow.url(path)
        )
    };
    let yaml = |entries: &[String]| {
        format!(
            "webhook_settings: {{ allow_private: [\"127.0.0.1/32\"] }}\nwebhooks:\n{}",
            entries.concat()
        )
    };
    let (a, b) = (entry("/a", "A"), entry("/b", "B"));
    let d = Dispatcher::start(&yaml(&[a.clone(), b.clone()]), &[]);
    let n = 5;
    emit_errors(&d.hooks, "x", "e", 0..n);
    slow.wait_for_hits(1, Duration::from_secs(10));
    // Another entry in front, then the two swapped: each queued event
    // still goes to its own entry, with its own header.
    d.hooks.reload(&parse(
        &yaml(&[entry("/c", "C"), b.clone(), a.clone()]),
        &[],
    ));
    let hits = slow.wait_for_hits(2 * n, Duration::from_secs(20));
    assert_eq!(hits.len(), 2 * n);
    for h in &hits {
        let want = if h.path == "/a" { "A" } else { "B" };
        assert_eq!(h.one("x-which"), want, "{}", h.path);
    }
    assert_eq!(d.metrics.webhook_dropped.get(), 0);
    // Entries removed drop what was queued for them, counted: of these
    // events, /c's and /a's (the three entries take each).
    emit_errors(&d.hooks, "x", "f", 0..n);
    d.hooks.reload(&parse(&yaml(&[b]), &[]));
    slow.wait_for_hits(2 * n + 1, Duration::from_secs(20));
    wait_accounted(&d, &slow, 5 * n);
    let to_a = slow.hits().iter().filter(|h| h.path == "/a").count();
    assert_eq!(to_a, n, "nothing to /a after it was removed");
    assert_eq!(
        d.metrics.webhook_dropped.get() + slow.count() as u64,
        5 * n as u64,
        "every event delivered or counted as dropped ({to_a} to /a, {} dropped, {} hits)",
        d.metrics.webhook_dropped.get(),
        slow.count()
    );
}

/// Found by the third regression audit: of two entries sharing a URL,
/// the one whose secret was rotated, or which was removed, had its queued
/// events sent with the other's headers and secret. An event goes to the
/// entry in its place among those of its URL while their number is the
/// same; otherwise it is dropped and counted.
#[test]
fn two_entries_of_one_url_keep_their_own_events_across_reloads() {
    let slow = Receiver::start("127.0.0.1:0", Answer::Delay(Duration::from_millis(200)));
    let url = slow.url("/same");
    let yaml = |whos: &[&str]| {
        let entries: String = whos
            .iter()
            .map(|w| format!("  - url: \"{url}\"\n    headers: {{ X-Who: {w} }}\n"))
            .collect();
        format!("webhook_settings: {{ allow_private: [\"127.0.0.1/32\"] }}\nwebhooks:\n{entries}")
    };
    let d = Dispatcher::start(&yaml(&["A", "B"]), &[]);
    let n = 4;
    emit_errors(&d.hooks, "x", "e", 0..n);
    slow.wait_for_hits(1, Duration::from_secs(10));
    // B's header rotated: its queued events go with the new one.
    d.hooks.reload(&parse(&yaml(&["A", "B2"]), &[]));
    let hits = slow.wait_for_hits(2 * n, Duration::from_secs(20));
    let who = |hits: &[Hit], w: &str| hits.iter().filter(|h| h.one("x-who") == w).count();
    assert_eq!(who(&hits, "A"), n);
    assert_eq!(who(&hits, "B") + who(&hits, "B2"), n);
    assert!(who(&hits, "B2") >= n - 1, "{}", who(&hits, "B2"));
    assert_eq!(d.metrics.webhook_dropped.get(), 0);
    // B removed: what was queued for it is dropped, not sent as A's.
    emit_errors(&d.hooks, "x", "f", 0..n);
    d.hooks.reload(&parse(&yaml(&["A"]), &[]));
    wait_accounted(&d, &slow, 4 * n);
    let hits = slow.hits();
    assert_eq!(who(&hits, "A"), 2 * n, "A got only its own");
    assert_eq!(
        d.metrics.webhook_dropped.get() + slow.count() as u64,
        4 * n as u64
    );
}

#[test]
fn shutdown_delivers_what_is_queued() {
    let r = Receiver::start("127.0.0.1:0", Answer::Status(200));
    let yaml = format!(
        "webhook_settings: {{ allow_private: [\"127.0.0.1/32\"] }}\nwebhooks:\n  - url: \"{}\"\n",
        r.url("/")
    );
    let mut d = Dispatcher::start(&yaml, &[]);
    for i in 0..20 {
        emit(&d.hooks, EventKind::ActionTaken, "a", json!({"i": i}));
    }
    let took = d.stop();
    assert!(took < Duration::from_secs(5), "{took:?}");
    assert_eq!(r.count(), 20);
    // The queue is closed: a late event is neither sent nor counted as a drop.
    emit(&d.hooks, EventKind::ActionTaken, "a", json!({}));
    assert_eq!(d.metrics.webhook_dropped.get(), 0);
    std::thread::sleep(Duration::from_millis(100));
    assert_eq!(r.count(), 20);
}

#[test]
fn shutdown_gives_a_hanging_target_five_seconds_at_most() {
    let (r, mut d) = hanging_setup("60s");
    for i in 0..3 {
        emit(&d.hooks, EventKind::Error, "a", json!({"i": i}));
    }
    r.wait_for_hits(1, Duration::from_secs(5));
    let took = d.stop();
    assert!(
        took >= Duration::from_secs(4) && took < Duration::from_secs(7),
        "shutdown took {took:?}, expected about 5 s"
    );
    // The delivery in flight was interrupted and recorded; the two queued
    // behind it were not attempted.
    let rows = d.wait_deliveries(1, Duration::from_secs(1));
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert_eq!(rows[0].status_code, None);
    // Said as what it was, not as the target's silence (an audit).
    let error = rows[0].error.as_deref().unwrap_or_default();
    assert!(
        error.starts_with("cut off by the shutdown, 5s after it began"),
        "{error}"
    );
    assert_eq!(d.outcomes("error", "failed"), 1);
    assert_eq!(r.count(), 1);
}

/// A target that refuses connections gives no status: `Failed`, recorded
/// in the delivery log as event `test` without an account.
#[test]
fn test_reports_a_connection_failure_without_status() {
    // A port that was free a moment ago: nothing listens there.
    let port = common::mailproc::free_port();
    let config = parse(
        "webhook_settings: { timeout: 3s, allow_private: [\"127.0.0.1/32\"] }\n",
        &[],
    );
    let store = Arc::new(Store::open_in_memory().unwrap());
    let (hooks, thread) =
        Webhooks::start(&config, store.clone(), Arc::new(Metrics::new())).unwrap();
    let outcome = hooks.test(
        &config,
        &format!("http://127.0.0.1:{port}/"),
        &BTreeMap::new(),
    );
    match outcome {
        mailproc::webhook::TestOutcome::Failed(e) => assert!(!e.is_empty()),
        _ => panic!("expected a failure without status"),
    }
    let (rows, _) = store.deliveries(10, 0).unwrap();
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0].event, "test");
    assert_eq!(rows[0].account, None);
    assert!(rows[0].error.is_some());
    hooks.shutdown();
    thread.join().unwrap();
}
