//! Regression tests for issue [13], "correctness from a full read of the
//! code": each drives the real binary against a real Dovecot and failed
//! before the fix it guards.

mod common;

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::dovecot::Dovecot;
use common::hooks::{bodies, receiver};
use common::mail::msg;
use common::mailproc::Mailproc;
use common::model::{answer, Model, Reply};
use serde_json::{json, Value};

/// One account on `d` sorted by the scripted model at `url` into Receipts.
fn config(d: &Dovecot, url: &str, concurrency: u32, extra: &str) -> String {
    format!(
        "server: {{ port: {{PORT}} }}\nstorage: {{ path: \"{{DIR}}/mailproc.db\" }}\n\
         classifier:\n  concurrency: {concurrency}\n  providers:\n    - {{ name: fake, kind: openai, url: \"{url}\", model: scripted, timeout: 10s, max_retries: 0 }}\n\
         accounts:\n  - name: acct\n    imap: {{ host: 127.0.0.1, port: {}, security: none, username: test, password: secret }}\n    \
         folders: {{ watch: [INBOX], allowed: [Receipts], create: true }}\n    backlog: all\n    poll_interval: 300s\n    retry_delay: 1s\n    provider: fake\n{extra}",
        d.imap_port
    )
}

/// A receiver of `error` and the `connection_*` events, and the
/// configuration that sends them to it.
fn outage_hooks() -> (String, common::hooks::Received) {
    let (port, got) = receiver();
    let hooks = format!(
        "webhook_settings: {{ allow_private: [\"127.0.0.1/32\"] }}\n\
         webhooks: [ {{ url: \"http://127.0.0.1:{port}/h\", events: [error, connection_lost, connection_restored] }} ]\n"
    );
    (hooks, got)
}

fn receipt() -> Reply {
    answer(
        json!([{ "type": "move", "folder": "Receipts" }]),
        "a receipt",
    )
}

fn ok_rows(m: &Mailproc) -> Vec<Value> {
    m.get("/api/activity?pageSize=100&status=ok").body["entries"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

fn metric(m: &Mailproc, line_start: &str) -> f64 {
    m.get("/metrics")
        .text
        .lines()
        .find(|l| l.starts_with(line_start))
        .and_then(|l| l.rsplit(' ').next())
        .and_then(|v| v.parse().ok())
        .unwrap_or(0.0)
}

#[test]
fn mail_arriving_during_a_pass_is_processed_without_waiting_for_idle() {
    let d = Dovecot::start();
    d.seed("test", "INBOX", &msg("first", "Order 1"));
    let model = Model::start(2, |_| {
        Reply::Delay(Duration::from_millis(1500), Box::new(receipt()))
    });
    let m = Mailproc::start(&config(&d, &model.url(), 2, ""));
    m.wait_for(Duration::from_secs(10), "the first model call", || {
        (model.count() >= 1).then_some(())
    });
    // Delivered while the pass is still waiting for the model: the SELECT
    // before IDLE counts it, so IDLE alone would never announce it.
    let delivered = Instant::now();
    d.seed("test", "INBOX", &msg("second", "Order 2"));
    // Far under the 300 s poll interval, with room for a loaded machine.
    m.wait_for(Duration::from_secs(60), "both processed", || {
        (ok_rows(&m).len() == 2).then_some(())
    });
    assert!(
        delivered.elapsed() < Duration::from_secs(60),
        "{:?}",
        delivered.elapsed()
    );
    assert_eq!(model.count(), 2);
}

#[test]
fn a_store_failure_is_not_a_lost_connection() {
    let d = Dovecot::start();
    d.seed("test", "INBOX", &msg("s1", "Order 1"));
    let model = Model::start(2, |_| receipt());
    let (hooks, got) = outage_hooks();
    let m = Mailproc::start_with_env(
        &format!("{}{hooks}", config(&d, &model.url(), 2, "")),
        &[("MAILPROC_FAILPOINTS", "record-outcomes=error-once")],
    );
    m.wait_for(Duration::from_secs(20), "the message recorded", || {
        (ok_rows(&m).len() == 1).then_some(())
    });
    // The error announced, and a whole pass after it: an outage it had
    // been taken for would have been announced by then.
    m.wait_for(Duration::from_secs(10), "the error event", || {
        (!bodies(&got).is_empty()).then_some(())
    });
    m.run_pass("acct");
    let events = bodies(&got);
    let kinds: Vec<&str> = events
        .iter()
        .map(|e| e["event"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, vec!["error"], "{events:?}");
    assert!(
        events[0]["error"]
            .as_str()
            .unwrap()
            .contains("store: record_outcomes: failpoint"),
        "{events:?}"
    );
    assert_eq!(
        metric(&m, "mailproc_errors_total{account=\"acct\",kind=\"store\"}"),
        1.0
    );
    assert_eq!(
        metric(
            &m,
            "mailproc_errors_total{account=\"acct\",kind=\"connection\"}"
        ),
        0.0
    );
    assert!(!m.log().contains("connection lost"), "{}", m.log());
    // The move happened before the failed record; it is recorded once, from
    // the journal, and the model was asked once.
    assert_eq!(model.count(), 1);
    let msgs = d.messages("test");
    assert_eq!(msgs.len(), 1);
    assert_eq!(msgs[0].mailbox, "Receipts");
    m.wait_for(Duration::from_secs(5), "connected again", || {
        (m.get("/health").body["accounts"]["acct"] == "connected").then_some(())
    });
    // Its end is told as its failure was (only /health said so: an audit).
    assert_eq!(
        m.log()
            .matches("acct: the database answers again; processing goes on")
            .count(),
        1,
        "{}",
        m.log()
    );
}

/// Found by the host-failure audit (stop 61): a store failure before the
/// model's answers were journalled (a full disk) threw them away, and each
/// retry after the back-off asked the model about the whole group again
/// (494 calls for 100 messages). The answers are kept for the retry.
#[test]
fn a_store_failure_before_the_journal_does_not_ask_the_model_again() {
    let d = Dovecot::start();
    let msgs: Vec<Vec<u8>> = (0..3)
        .map(|i| msg(&format!("j{i}"), &format!("Order {i}")))
        .collect();
    d.seed_many("test", "INBOX", &msgs);
    let model = Model::start(2, |_| receipt());
    let m = Mailproc::start_with_env(
        &config(&d, &model.url(), 2, ""),
        &[("MAILPROC_FAILPOINTS", "record-decisions=error-once")],
    );
    m.wait_for(Duration::from_secs(30), "the messages recorded", || {
        (ok_rows(&m).len() == 3).then_some(())
    });
    assert!(
        m.log().contains("store: record_decisions: failpoint"),
        "{}",
        m.log()
    );
    assert_eq!(model.count(), 3, "{}", m.log());
    let moved = d.messages("test");
    assert!(moved.iter().all(|x| x.mailbox == "Receipts"), "{moved:?}");
}

/// The second regression audit (stop 61): an answer the allow-lists
/// refuse (a folder not allowed) is a failure, not a decision, and it was
/// not kept: each retry after a store failure asked the model again.
#[test]
fn a_store_failure_keeps_a_refused_answer_too() {
    let d = Dovecot::start();
    let msgs: Vec<Vec<u8>> = (0..2)
        .map(|i| msg(&format!("k{i}"), &format!("Order {i}")))
        .collect();
    d.seed_many("test", "INBOX", &msgs);
    let model = Model::start(2, |_| {
        answer(
            json!([{ "type": "move", "folder": "Elsewhere" }]),
            "not an allowed folder",
        )
    });
    let m = Mailproc::start_with_env(
        &config(&d, &model.url(), 2, "").replace("retry_delay: 1s", "retry_delay: 1h"),
        &[("MAILPROC_FAILPOINTS", "record-outcomes=error-once")],
    );
    let rows = m.wait_for(Duration::from_secs(30), "both recorded as failed", || {
        let rows = m.get("/api/activity?pageSize=10").body["entries"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        (rows.len() == 2 && rows.iter().all(|r| r["status"] == "retrying")).then_some(rows)
    });
    assert!(
        m.log().contains("store: record_outcomes: failpoint"),
        "{}",
        m.log()
    );
    assert!(
        rows[0]["error"].as_str().unwrap().contains("Elsewhere"),
        "{rows:?}"
    );
    assert_eq!(model.count(), 2, "{}", m.log());
}

/// Found by the host-failure audit (stop 61): an undo asked while the
/// account waited out a store failure was told "not connected to the IMAP
/// server", though the session was kept; it is told the database is why.
#[test]
fn an_undo_while_the_store_fails_says_the_database_is_why() {
    let d = Dovecot::start();
    d.seed("test", "INBOX", &msg("u1", "Order 1"));
    let model = Model::start(2, |_| receipt());
    let mut m = Mailproc::prepare(&config(&d, &model.url(), 2, ""));
    m.spawn(&[]);
    m.wait_ready();
    let rows = m.wait_for(Duration::from_secs(20), "the first recorded", || {
        let r = ok_rows(&m);
        (r.len() == 1).then_some(r)
    });
    let id = rows[0]["id"].as_i64().unwrap();
    m.kill();
    d.seed("test", "INBOX", &msg("u2", "Order 2"));
    m.spawn(&[("MAILPROC_FAILPOINTS", "record-decisions=error")]);
    m.wait_ready();
    m.wait_for(Duration::from_secs(20), "the store failure", || {
        m.log()
            .contains("store: record_decisions: failpoint")
            .then_some(())
    });
    let r = m.post(&format!("/api/activity/{id}/undo"), "");
    assert_eq!(r.status, 503, "{}", r.text);
    assert!(
        r.body["error"]
            .as_str()
            .unwrap()
            .contains("the database cannot be written now"),
        "{}",
        r.text
    );
    // The session lost since, the account is not connected: that is why,
    // whatever the database does (it read "the database" until a pass
    // went through: stop 62's regression audit).
    let mut d = d;
    d.stop();
    m.wait_for(Duration::from_secs(30), "the session lost", || {
        (m.get("/health").body["accounts"]["acct"] == "disconnected").then_some(())
    });
    let r = m.post(&format!("/api/activity/{id}/undo"), "");
    assert_eq!(r.status, 503, "{}", r.text);
    assert!(
        r.body["error"]
            .as_str()
            .unwrap()
            .contains("not connected to the IMAP server"),
        "{}\n{}",
        r.text,
        m.log()
    );
}

/// Found by the second regression audit (stop 61): a configuration change
/// while the account waited out a store failure carried the store's error
/// to the restarted account as an outage, and it sent a
/// `connection_restored` that no `connection_lost` had opened (a store
/// failure is no outage).
#[test]
fn a_restart_during_a_store_failure_tells_no_restored_connection() {
    let d = Dovecot::start();
    d.seed("test", "INBOX", &msg("r1", "Order 1"));
    let model = Model::start(2, |_| receipt());
    let (hooks, got) = outage_hooks();
    let yaml = format!("{}{hooks}", config(&d, &model.url(), 2, ""));
    let mut m =
        Mailproc::start_with_env(&yaml, &[("MAILPROC_FAILPOINTS", "record-decisions=error")]);
    m.wait_for(Duration::from_secs(20), "the store failure", || {
        m.log()
            .contains("store: record_decisions: failpoint")
            .then_some(())
    });
    m.write_config(&yaml.replace("poll_interval: 300s", "poll_interval: 200s"));
    m.signal("HUP");
    m.wait_for(Duration::from_secs(20), "the restart", || {
        m.log()
            .contains("acct: account changed; restarted")
            .then_some(())
    });
    // The restarted account connects and fails at the store again.
    m.wait_for(Duration::from_secs(20), "its own store failure", || {
        let after = m
            .log()
            .split("acct: account changed; restarted")
            .nth(1)?
            .to_string();
        after
            .contains("store: record_decisions: failpoint")
            .then_some(())
    });
    let kinds: Vec<String> = bodies(&got)
        .iter()
        .map(|e| e["event"].as_str().unwrap().to_string())
        .collect();
    assert!(kinds.iter().all(|k| k == "error"), "{kinds:?}\n{}", m.log());
    assert!(!m.log().contains("connection restored"), "{}", m.log());
}

#[test]
fn shutdown_finishes_the_calls_in_hand_not_the_whole_batch() {
    let d = Dovecot::start();
    let msgs: Vec<Vec<u8>> = (0..12)
        .map(|i| msg(&format!("q{i}"), &format!("Order {i}")))
        .collect();
    d.seed_many("test", "INBOX", &msgs);
    let slow = Arc::new(AtomicBool::new(true));
    let calls = Arc::new(AtomicUsize::new(0));
    let (sl, c) = (slow.clone(), calls.clone());
    let model = Model::start(4, move |_| {
        c.fetch_add(1, Ordering::SeqCst);
        if sl.load(Ordering::SeqCst) {
            Reply::Delay(Duration::from_secs(3), Box::new(receipt()))
        } else {
            receipt()
        }
    });
    let mut m = Mailproc::start(&config(&d, &model.url(), 2, ""));
    m.wait_for(Duration::from_secs(10), "the first calls", || {
        (calls.load(Ordering::SeqCst) >= 2).then_some(())
    });
    let stopping = Instant::now();
    m.signal("TERM");
    let st = m.wait_exit(Duration::from_secs(30)).expect("exits");
    let took = stopping.elapsed();
    assert_eq!(st.code(), Some(0), "{}", m.log());
    // Two calls were in flight (3 s each); the other ten were not started.
    // Waiting for the whole batch would take five rounds more, 15 s.
    assert!(took < Duration::from_secs(10), "shutdown took {took:?}");
    assert!(
        m.log()
            .contains("left with the rest of the folder's new mail for the next start"),
        "{}",
        m.log()
    );
    let asked = calls.load(Ordering::SeqCst);
    assert!(asked < 12, "{asked}");
    slow.store(false, Ordering::SeqCst);
    m.spawn(&[]);
    m.wait_ready();
    m.wait_for(Duration::from_secs(20), "all twelve", || {
        (ok_rows(&m).len() == 12).then_some(())
    });
    // Nothing decided before the stop was asked again, nothing skipped.
    assert_eq!(calls.load(Ordering::SeqCst), 12);
    let stored = d.messages("test");
    assert_eq!(stored.len(), 12);
    assert!(stored.iter().all(|x| x.mailbox == "Receipts"), "{stored:?}");
}

/// A provider that asks for a minute's pause (429, `Retry-After: 60`),
/// or a rate limit a minute apart: SIGTERM must not sit the minute out
/// (systemd kills a service after 90 s), no call may start after it, and
/// the message waits for the next start instead of being failed.
#[test]
fn shutdown_does_not_wait_out_a_providers_retry_after() {
    let d = Dovecot::start();
    d.seed("test", "INBOX", &msg("r1", "Order 1"));
    let busy = Arc::new(AtomicBool::new(true));
    let calls = Arc::new(AtomicUsize::new(0));
    let (b, c) = (busy.clone(), calls.clone());
    let model = Model::start(2, move |_| {
        c.fetch_add(1, Ordering::SeqCst);
        if b.load(Ordering::SeqCst) {
            Reply::Status(429, Some(60))
        } else {
            receipt()
        }
    });
    let cfg = config(&d, &model.url(), 1, "").replace("max_retries: 0", "max_retries: 3");
    let mut m = Mailproc::start(&cfg);
    m.wait_for(Duration::from_secs(10), "the first call", || {
        m.log().contains("retrying in 60s").then_some(())
    });
    let stopping = Instant::now();
    m.signal("TERM");
    let st = m.wait_exit(Duration::from_secs(75)).expect("exits");
    let took = stopping.elapsed();
    assert_eq!(st.code(), Some(0), "{}", m.log());
    assert!(took < Duration::from_secs(10), "shutdown took {took:?}");
    assert_eq!(calls.load(Ordering::SeqCst), 1, "a call after the stop");
    assert!(
        m.log()
            .contains("left with the rest of the folder's new mail for the next start"),
        "{}",
        m.log()
    );
    busy.store(false, Ordering::SeqCst);
    m.spawn(&[]);
    m.wait_ready();
    m.wait_for(Duration::from_secs(20), "the order sorted", || {
        (ok_rows(&m).len() == 1).then_some(())
    });
    assert_eq!(
        m.get("/api/activity?status=failed").body["total"],
        json!(0),
        "the message was failed, not left for the next start"
    );
    assert_eq!(d.messages("test")[0].mailbox, "Receipts");
}

#[test]
fn durations_beyond_ten_years_are_configuration_errors() {
    let mut m = Mailproc::prepare(
        "storage: { path: \"{DIR}/mailproc.db\", activity_retention: 100000d }\n\
         dashboard: { session_ttl: 99999999d }\n\
         accounts:\n  - { name: a, imap: { host: h, username: u, password: p }, backlog: \"since:5000000d\", retry_delay: 4000d }\n",
    );
    let (code, _, err) = m.run_cli(&["check-config"], "");
    assert_eq!(code, 1, "{err}");
    for key in [
        "storage.activity_retention",
        "dashboard.session_ttl",
        "accounts[0].backlog",
        "accounts[0].retry_delay",
    ] {
        assert!(err.contains(key), "{key} not named in:\n{err}");
    }
    m.write_config(
        "storage: { path: \"{DIR}/mailproc.db\", activity_retention: 3650d }\n\
         accounts:\n  - { name: a, imap: { host: h, username: u, password: p }, backlog: \"since:3650d\" }\n",
    );
    let (code, out, err) = m.run_cli(&["check-config"], "");
    assert_eq!(code, 0, "{out}{err}");
}

/// Found by an audit: one provider that never answers held every
/// classifier thread with its calls, and an account on another, healthy
/// provider waited minutes for its first. Each provider has threads of its
/// own: the healthy one's account is decided while the other's calls all
/// still hang.
#[test]
fn a_provider_that_never_answers_holds_up_no_other_provider() {
    let d = Dovecot::start();
    d.add_user("other", "secret2");
    for i in 0..6 {
        d.seed(
            "test",
            "INBOX",
            &msg(&format!("hung{i}"), &format!("Order {i}")),
        );
    }
    let hang = Arc::new(AtomicBool::new(true));
    let held = hang.clone();
    let stuck = Model::start(8, move |_| {
        while held.load(Ordering::SeqCst) {
            std::thread::sleep(Duration::from_millis(50));
        }
        receipt()
    });
    let healthy = Model::start(2, |_| receipt());
    let yaml = format!(
        "{}  - name: other\n    imap: {{ host: 127.0.0.1, port: {}, security: none, username: other, password: secret2 }}\n    \
         folders: {{ watch: [INBOX], allowed: [Receipts], create: true }}\n    backlog: all\n    poll_interval: 300s\n    provider: healthy\n",
        config(&d, &stuck.url(), 2, "").replace(
            "  providers:\n",
            &format!(
                "  providers:\n    - {{ name: healthy, kind: openai, url: \"{}\", model: scripted, timeout: 10s, max_retries: 0 }}\n",
                healthy.url()
            ),
        ),
        d.imap_port
    );
    // The stuck provider's calls outlast the test's waits.
    let yaml = yaml.replace(
        "timeout: 10s, max_retries: 0 }\naccounts",
        "timeout: 120s, max_retries: 0 }\naccounts",
    );
    assert!(yaml.contains("timeout: 120s"), "{yaml}");
    let m = Mailproc::start(&yaml);
    // The stuck provider has its calls (both of its threads) in hand.
    m.wait_for(Duration::from_secs(30), "the stuck calls", || {
        (stuck.count() >= 2).then_some(())
    });
    d.seed("other", "INBOX", &msg("quick", "Order quick"));
    m.wait_for(Duration::from_secs(30), "the other account decided", || {
        ok_rows(&m)
            .iter()
            .any(|r| r["account"] == "other")
            .then_some(())
    });
    assert!(
        ok_rows(&m).iter().all(|r| r["account"] == "other"),
        "the stuck provider answered nothing yet"
    );
    hang.store(false, Ordering::SeqCst);
    m.wait_for(Duration::from_secs(60), "every message decided", || {
        (ok_rows(&m).len() == 7).then_some(())
    });
}

/// The regression audit of the lanes: each provider name ever used kept
/// its classifier threads until a restart (two more at each rename). A
/// provider renamed or removed ends its lane; a name with a NUL (its
/// threads' names could not hold it) panicked every account on it.
#[test]
fn a_renamed_provider_leaves_no_threads_behind() {
    let d = Dovecot::start();
    let model = Model::start(2, |_| receipt());
    let threads = |m: &Mailproc| -> u64 {
        std::fs::read_to_string(format!("/proc/{}/status", m.pid()))
            .unwrap()
            .lines()
            .find_map(|l| l.strip_prefix("Threads:"))
            .and_then(|n| n.trim().parse().ok())
            .unwrap()
    };
    let named = |name: &str| config(&d, &model.url(), 2, "").replace("fake", name);
    // As YAML writes a NUL: a double-quoted escape.
    let nul = r#""p\0q""#;
    let m = Mailproc::start(&named(nul));
    let mut after = Vec::new();
    for (round, name) in [nul, "one", "two", "three", "four"].iter().enumerate() {
        if round > 0 {
            std::fs::write(&m.config_path, named(name)).unwrap();
            m.signal("HUP");
        }
        d.seed("test", "INBOX", &msg(&format!("r{round}"), "Order"));
        m.wait_for(Duration::from_secs(30), "the message decided", || {
            (ok_rows(&m).len() == round + 1).then_some(())
        });
        after.push(threads(&m));
    }
    assert!(!m.log().contains("panicked"), "{}", m.log());
    // A lane of the renamed provider ends once its calls are answered.
    m.wait_for(Duration::from_secs(10), "the old lanes ended", || {
        (threads(&m) <= after[1]).then_some(())
    });
}
