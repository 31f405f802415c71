//! Issue [8]: an IMAP server that stops answering without closing the
//! socket (Dovecot and everything it started, SIGSTOPped: the kernel still
//! accepts and acknowledges, nothing answers) is noticed while idling and
//! during a pass, `connection_lost` fires once, reconnects back off, and
//! nothing is acted on twice (the model is not asked again about a
//! message whose decision was journalled). The time-outs are configured short so the
//! test runs in seconds; the defaults bound the same waits at 100 s idling
//! and 120 s per command. A stop does not wait past its grace for either
//! a server or a model that stopped answering.

mod common;

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::dovecot::Dovecot;
use common::hooks::{events, receiver};
use common::mail::msg;
use common::mailproc::Mailproc;
use common::model::{answer, Model};
use common::world::{backoff_waits, each_acted_on_once, rows};
use serde_json::json;

fn config(d: &Dovecot, hook_port: u16, provider: &str, account_extra: &str) -> String {
    format!(
        "server: {{ port: {{PORT}} }}\nstorage: {{ path: \"{{DIR}}/mailproc.db\" }}\n{provider}\
         webhook_settings: {{ allow_private: [\"127.0.0.1/32\"] }}\n\
         webhooks: [ {{ url: \"http://127.0.0.1:{hook_port}/h\", events: [connection_lost, connection_restored] }} ]\n\
         accounts:\n  - name: acct\n    \
         imap: {{ host: localhost, port: {}, security: none, username: test, password: secret, timeout: 3s, idle_interval: 2s }}\n    \
         folders: {{ watch: [INBOX], allowed: [Receipts], create: true }}\n    backlog: all\n{account_extra}",
        d.imap_port
    )
}

/// SIGTERM, and how long the exit took (at most `max`); `then` runs once it
/// exited or `max` passed (a frozen server thawed, a slow model let go),
/// before the exit status is checked: 0.
fn stop(m: &mut Mailproc, max: Duration, then: impl FnOnce()) -> Duration {
    let stopping = Instant::now();
    m.signal("TERM");
    let status = m.wait_exit(max);
    let took = stopping.elapsed();
    then();
    let status = status.expect("mailproc exits on SIGTERM");
    assert!(status.success(), "{status:?}\n{}", m.log());
    took
}

#[test]
fn a_server_that_stops_answering_while_idling_is_noticed_once_and_reconnected_with_backoff() {
    let d = Dovecot::start();
    for i in 0..5 {
        d.seed(
            "test",
            "INBOX",
            &msg(&format!("i{i}"), &format!("Order {i}")),
        );
    }
    let (hook, got) = receiver();
    let m = Mailproc::start(&config(
        &d,
        hook,
        "",
        "    rules: [ { name: orders, when: { subject: Order }, actions: [ { type: move, folder: Receipts } ] } ]\n",
    ));
    m.wait_for(Duration::from_secs(30), "5 messages moved", || {
        (rows(&m, 100).iter().filter(|r| r["status"] == "ok").count() == 5).then_some(())
    });
    // Idling: the pass is over and the account waits in IDLE.
    m.wait_for(Duration::from_secs(10), "the account idling", || {
        let a = m.get("/api/accounts");
        (a.body["accounts"][0]["state"] == "connected").then_some(())
    });
    // Let at least one IDLE re-issue pass against a live server.
    let reissued = m.log().matches("acct: IDLE re-issued").count();
    m.wait_for(Duration::from_secs(30), "an IDLE re-issue", || {
        (m.log().matches("acct: IDLE re-issued").count() > reissued).then_some(())
    });
    assert_eq!(events(&got, "connection_lost"), 0, "{}", m.log());

    d.freeze();
    let frozen = Instant::now();
    m.wait_for(Duration::from_secs(60), "connection_lost", || {
        (events(&got, "connection_lost") == 1).then_some(())
    });
    let noticed = frozen.elapsed();
    // Reconnects keep failing (the greeting never comes) with growing waits.
    let waits = m.wait_for(Duration::from_secs(60), "three reconnect attempts", || {
        let w = backoff_waits(&m.log());
        (w.len() >= 3).then_some(w)
    });
    eprintln!("noticed after {noticed:?}; reconnect waits {waits:?}");
    for pair in waits.windows(2) {
        assert!(pair[1] > pair[0], "the back-off must grow: {waits:?}");
    }
    assert_eq!(
        events(&got, "connection_lost"),
        1,
        "one outage, one event: {:?}",
        got.lock().unwrap()
    );

    d.thaw();
    m.wait_for(Duration::from_secs(60), "connection_restored", || {
        (events(&got, "connection_restored") == 1).then_some(())
    });
    for i in 5..7 {
        d.seed(
            "test",
            "INBOX",
            &msg(&format!("i{i}"), &format!("Order {i}")),
        );
    }
    m.wait_for(Duration::from_secs(30), "7 messages moved", || {
        (rows(&m, 100).iter().filter(|r| r["status"] == "ok").count() == 7).then_some(())
    });
    each_acted_on_once(&d.messages("test"), &m, "Receipts", 7);
    assert_eq!(events(&got, "connection_lost"), 1);
    assert!(!m.log().contains("panicked"), "{}", m.log());
}

/// Found by a soak audit (stop 56): while a server flapped, each session
/// lived 15 to 30 s, under the minute that proves a session stable, so
/// the reconnect wait grew to 213 s and the next single drop left the
/// account blind for minutes. A session a pass went through and that
/// lived 5 s proves the server fine as a long one does: the wait starts
/// again from 1 s. One dropped the moment its pass is done does not (the
/// regression audit: such a server was retried once a second for ever).
#[test]
fn a_session_a_pass_went_through_starts_the_back_off_again() {
    let d = Dovecot::start();
    let (hook, _got) = receiver();
    let m = Mailproc::start(&config(
        &d,
        hook,
        "",
        "    rules: [ { name: orders, when: { subject: Order }, actions: [ { type: move, folder: Receipts } ] } ]\n",
    ));
    // A message, and its row: a pass of this session went through; the
    // session is then dropped after `lived`.
    let round = |i: usize, lived: Duration| {
        d.seed(
            "test",
            "INBOX",
            &msg(&format!("f{i}"), &format!("Order {i}")),
        );
        m.wait_for(Duration::from_secs(60), "the message moved", || {
            (rows(&m, 100).iter().filter(|r| r["status"] == "ok").count() == i + 1).then_some(())
        });
        std::thread::sleep(lived);
        d.kill_sessions();
        m.wait_for(Duration::from_secs(60), "the drop noticed", || {
            (backoff_waits(&m.log()).len() > i).then_some(())
        });
    };
    for i in 0..3 {
        round(i, Duration::from_secs(6));
    }
    let waits = backoff_waits(&m.log());
    // 1 s, up to 75 % longer; the third drop would wait 4 s or more.
    assert!(
        waits.iter().all(|w| *w <= Duration::from_millis(1750)),
        "the back-off grew: {waits:?}\n{}",
        m.log()
    );
    for i in 3..6 {
        round(i, Duration::ZERO);
    }
    let waits = backoff_waits(&m.log());
    assert!(
        waits[5] >= Duration::from_secs(4),
        "a session dropped as its pass was done reset the back-off: {waits:?}\n{}",
        m.log()
    );
}

#[test]
fn a_server_that_stops_answering_mid_batch_is_noticed_and_the_model_is_not_asked_again() {
    let d = Arc::new(Dovecot::start());
    let n = 6;
    for i in 0..n {
        d.seed(
            "test",
            "INBOX",
            &msg(&format!("b{i}"), &format!("Receipt {i}")),
        );
    }
    let (hook, got) = receiver();
    // The model freezes the server at its first request: the batch is
    // fetched, the decision comes back, and the move finds nobody there.
    let frozen = Arc::new(AtomicBool::new(false));
    let frozen_at = Arc::new(Mutex::new(None));
    let asked: Arc<Mutex<Vec<String>>> = Arc::default();
    let calls = Arc::new(AtomicUsize::new(0));
    // Weak: a failing test must still stop the server it started.
    let (dd, fz, fa, ak, cl) = (
        Arc::downgrade(&d),
        frozen.clone(),
        frozen_at.clone(),
        asked.clone(),
        calls.clone(),
    );
    let model = Model::start(2, move |r| {
        cl.fetch_add(1, Ordering::SeqCst);
        ak.lock().unwrap().push(r.subject().to_string());
        if !fz.swap(true, Ordering::SeqCst) {
            if let Some(d) = dd.upgrade() {
                d.freeze();
            }
            *fa.lock().unwrap() = Some(Instant::now());
        }
        answer(
            json!([{ "type": "move", "folder": "Receipts" }]),
            "a receipt",
        )
    });
    let provider = format!(
        "classifier:\n  concurrency: 2\n  providers:\n    - {{ name: fake, kind: openai, url: \"{}\", model: scripted, timeout: 10s, max_retries: 0 }}\n",
        model.url()
    );
    let m = Mailproc::start(&config(&d, hook, &provider, "    provider: fake\n"));
    m.wait_for(Duration::from_secs(60), "connection_lost", || {
        (events(&got, "connection_lost") == 1).then_some(())
    });
    let noticed = frozen_at.lock().unwrap().unwrap().elapsed();
    eprintln!(
        "noticed {noticed:?} after the freeze, model calls so far {}",
        calls.load(Ordering::SeqCst)
    );
    // The server died: the session's process goes without reading the move
    // still in its socket (thawed, it would carry it out late; reconciling
    // a move whose answer was lost is left for later, see the README).
    d.kill_sessions();
    d.thaw();
    m.wait_for(Duration::from_secs(60), "all moved", || {
        (rows(&m, 100).iter().filter(|r| r["status"] == "ok").count() == n).then_some(())
    });
    each_acted_on_once(&d.messages("test"), &m, "Receipts", n);
    let mut subjects = asked.lock().unwrap().clone();
    subjects.sort();
    let before = subjects.len();
    subjects.dedup();
    assert_eq!(
        before,
        subjects.len(),
        "the model was asked twice about a journalled message: {:?}\n{}",
        asked.lock().unwrap(),
        m.log()
    );
    assert_eq!(events(&got, "connection_lost"), 1);
    assert!(events(&got, "connection_restored") >= 1);
    assert!(!m.log().contains("panicked"), "{}", m.log());
}

#[test]
fn a_session_lost_while_the_model_thinks_costs_no_second_model_call() {
    // As when the server logs out a client that was silent too long while
    // a slow model answered: the session is gone when the actions start.
    let d = Arc::new(Dovecot::start());
    let n = 4;
    for i in 0..n {
        d.seed(
            "test",
            "INBOX",
            &msg(&format!("s{i}"), &format!("Receipt {i}")),
        );
    }
    let (hook, got) = receiver();
    let killed = Arc::new(AtomicBool::new(false));
    let asked: Arc<Mutex<Vec<String>>> = Arc::default();
    let (dd, k, ak) = (Arc::downgrade(&d), killed.clone(), asked.clone());
    let model = Model::start(2, move |r| {
        ak.lock().unwrap().push(r.subject().to_string());
        if !k.swap(true, Ordering::SeqCst) {
            if let Some(d) = dd.upgrade() {
                d.kill_sessions();
            }
        }
        answer(
            json!([{ "type": "move", "folder": "Receipts" }]),
            "a receipt",
        )
    });
    let provider = format!(
        "classifier:\n  concurrency: 2\n  providers:\n    - {{ name: fake, kind: openai, url: \"{}\", model: scripted, timeout: 10s, max_retries: 0 }}\n",
        model.url()
    );
    let m = Mailproc::start(&config(&d, hook, &provider, "    provider: fake\n"));
    m.wait_for(Duration::from_secs(60), "all moved", || {
        (rows(&m, 100).iter().filter(|r| r["status"] == "ok").count() == n).then_some(())
    });
    each_acted_on_once(&d.messages("test"), &m, "Receipts", n);
    let asked = asked.lock().unwrap().clone();
    assert_eq!(asked.len(), n, "one model call per message: {asked:?}");
    assert_eq!(events(&got, "connection_lost"), 1, "{}", m.log());
}

/// Found by an audit of the binary: an account whose server accepts the
/// connection and never greets (a silent listener here; in the field,
/// `security: none` on the implicit-TLS port) held a configuration change
/// and SIGTERM for the whole `imap.timeout` (120 s by default; systemd's
/// `TimeoutStopSec=60` would SIGKILL it). A stop now cuts the socket being
/// opened, as it cuts IDLE.
#[test]
fn a_server_that_never_greets_holds_neither_a_change_nor_a_shutdown() {
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = silent.local_addr().unwrap().port();
    let accepted = Arc::new(AtomicUsize::new(0));
    let held = Arc::new(Mutex::new(Vec::new()));
    {
        let (accepted, held) = (accepted.clone(), held.clone());
        std::thread::spawn(move || {
            for s in silent.incoming().flatten() {
                // Kept open, never written to.
                held.lock().unwrap().push(s);
                accepted.fetch_add(1, Ordering::SeqCst);
            }
        });
    }
    let d = Dovecot::start();
    let yaml = |imap_port: u16| {
        format!(
            "server: {{ port: {{PORT}} }}\nstorage: {{ path: \"{{DIR}}/mailproc.db\" }}\n\
             accounts:\n  - name: acct\n    \
             imap: {{ host: 127.0.0.1, port: {imap_port}, security: none, username: test, password: secret, timeout: 120s }}\n"
        )
    };
    let mut m = Mailproc::start(&yaml(port));
    let wait_dialing = |m: &Mailproc, n: usize| {
        m.wait_for(Duration::from_secs(20), "the account dialing", || {
            (accepted.load(Ordering::SeqCst) >= n).then_some(())
        });
    };
    wait_dialing(&m, 1);
    // The configuration fixed: the account restarts on it at once.
    m.write_config(&yaml(d.imap_port));
    let fixed = Instant::now();
    m.signal("HUP");
    m.wait_for(Duration::from_secs(60), "the account connected", || {
        (m.get("/health").body["accounts"]["acct"] == "connected").then_some(())
    });
    assert!(
        fixed.elapsed() < Duration::from_secs(30),
        "the change waited {:?} for the silent server (imap.timeout is 120 s)",
        fixed.elapsed()
    );
    // Pointed at the silent listener again, then stopped while it dials.
    m.write_config(&yaml(port));
    m.signal("HUP");
    wait_dialing(&m, 2);
    let stopping = Instant::now();
    let status = m.terminate().expect("mailproc exits on SIGTERM");
    assert!(status.success(), "{status:?}\n{}", m.log());
    assert!(
        stopping.elapsed() < Duration::from_secs(10),
        "SIGTERM took {:?}",
        stopping.elapsed()
    );
    assert!(
        !m.log().contains("connection lost") && !m.log().contains("retrying in"),
        "a stop is not an outage: {}",
        m.log()
    );
}

/// Found in the last audit's notes: the TCP connect itself (15 s per
/// address) was not cut by a stop, only what follows it. An address that
/// drops the handshake (a firewall; here a listener whose accept queue is
/// full, whose kernel drops every further SYN) held a configuration change
/// and SIGTERM until the connect timed out.
#[test]
fn a_server_that_drops_the_handshake_holds_neither_a_change_nor_a_shutdown() {
    use nix::sys::socket::{bind, getsockname, listen, socket, Backlog};
    use nix::sys::socket::{AddressFamily, SockFlag, SockType, SockaddrIn};
    use std::os::fd::AsRawFd;
    let fd = socket(
        AddressFamily::Inet,
        SockType::Stream,
        SockFlag::empty(),
        None,
    )
    .unwrap();
    bind(fd.as_raw_fd(), &SockaddrIn::new(127, 0, 0, 1, 0)).unwrap();
    listen(&fd, Backlog::new(0).unwrap()).unwrap();
    let port = getsockname::<SockaddrIn>(fd.as_raw_fd()).unwrap().port();
    // One connection fills the queue (never accepted); SYNs after it are dropped.
    let _queued = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    let dropped = std::net::TcpStream::connect_timeout(
        &std::net::SocketAddr::from(([127, 0, 0, 1], port)),
        Duration::from_millis(500),
    );
    assert!(dropped.is_err(), "the listener must drop handshakes");
    let d = Dovecot::start();
    let yaml = |imap_port: u16| {
        format!(
            "server: {{ port: {{PORT}} }}\nstorage: {{ path: \"{{DIR}}/mailproc.db\" }}\n\
             accounts:\n  - name: acct\n    \
             imap: {{ host: 127.0.0.1, port: {imap_port}, security: none, username: test, password: secret }}\n"
        )
    };
    let mut m = Mailproc::start(&yaml(port));
    // Its first connect is under way well before its 15 s are over.
    std::thread::sleep(Duration::from_secs(2));
    assert_eq!(m.get("/health").body["accounts"]["acct"], "connecting");
    m.write_config(&yaml(d.imap_port));
    let fixed = Instant::now();
    m.signal("HUP");
    m.wait_for(Duration::from_secs(30), "the account connected", || {
        (m.get("/health").body["accounts"]["acct"] == "connected").then_some(())
    });
    assert!(
        fixed.elapsed() < Duration::from_secs(8),
        "the change waited {:?} for the connect (15 s)",
        fixed.elapsed()
    );
    m.write_config(&yaml(port));
    m.signal("HUP");
    m.wait_for(Duration::from_secs(10), "the account dialing again", || {
        (m.get("/health").body["accounts"]["acct"] == "connecting").then_some(())
    });
    std::thread::sleep(Duration::from_secs(1));
    let stopping = Instant::now();
    let status = m.terminate().expect("mailproc exits on SIGTERM");
    assert!(status.success(), "{status:?}\n{}", m.log());
    assert!(
        stopping.elapsed() < Duration::from_secs(5),
        "SIGTERM took {:?}",
        stopping.elapsed()
    );
    assert!(
        !m.log().contains("connection lost") && !m.log().contains("retrying in"),
        "a stop is not an outage: {}",
        m.log()
    );
}

/// Found by an audit: SIGTERM while a pass waited on a server that had
/// stopped answering (its `imap` process SIGSTOPped mid-pass) took the
/// whole `imap.timeout` (120 s), past systemd's `TimeoutStopSec=60`. A
/// batch still in hand after the stop's grace has its session cut (the
/// grace is 30 s; 2 s here, `stop_grace=2000`), and the next start
/// finishes what it decided: nothing lost, nothing done twice.
#[test]
fn a_stop_mid_pass_on_a_server_that_stopped_answering_cuts_it_after_the_grace() {
    let d = Dovecot::start();
    d.create_mailbox("test", "Receipts");
    let raws: Vec<Vec<u8>> = (0..50)
        .map(|i| msg(&format!("r{i}"), &format!("Your receipt {i}")))
        .collect();
    d.seed_many("test", "INBOX", &raws);
    let yaml = format!(
        "server: {{ port: {{PORT}} }}\nstorage: {{ path: \"{{DIR}}/mailproc.db\" }}\n\
         accounts:\n  - name: acct\n    \
         imap: {{ host: 127.0.0.1, port: {}, security: none, username: test, password: secret, timeout: 120s }}\n    \
         folders: {{ watch: [INBOX], allowed: [Receipts] }}\n    backlog: all\n    rules:\n      \
         - {{ name: shop, when: {{ subject: \"^Your receipt\" }}, actions: [ {{ type: move, folder: Receipts }} ] }}\n",
        d.imap_port
    );
    let mut m = Mailproc::prepare(&yaml);
    m.spawn(&[(
        "MAILPROC_FAILPOINTS",
        "before-act=pause:1500,stop_grace=2000",
    )]);
    m.wait_ready();
    m.wait_paused(
        "before-act",
        Duration::from_secs(30),
        "the pass about to act",
    );
    // The server stops answering; the pass's MOVE waits on it.
    d.freeze();
    std::thread::sleep(Duration::from_secs(2));
    let took = stop(&mut m, Duration::from_secs(100), || d.thaw());
    assert!(
        took < Duration::from_secs(60),
        "SIGTERM took {took:?} (imap.timeout is 120 s)\n{}",
        m.log()
    );
    assert!(m.log().contains("its IMAP session is cut"), "{}", m.log());

    // The next start finishes the batch: every receipt filed once.
    m.spawn(&[]);
    m.wait_ready();
    m.wait_for(Duration::from_secs(60), "every receipt filed", || {
        let filed = d
            .messages("test")
            .into_iter()
            .filter(|x| x.mailbox == "Receipts")
            .count();
        (filed == 50).then_some(())
    });
    let all = d.messages("test");
    assert_eq!(all.len(), 50, "a message lost or doubled: {all:?}");
}

/// Found by a review: a model call in flight at SIGTERM held the stop for
/// the provider's whole `timeout` (120 s for the local model), past
/// systemd's `TimeoutStopSec=60`: the account waited for the answer even
/// after the grace, and the classifier pool waited for the call. After the
/// grace (2 s here) the answer is not waited for; the message stays
/// unrecorded, and the next start asks again and files it, once.
#[test]
fn a_stop_does_not_wait_past_the_grace_for_a_model_that_does_not_answer() {
    let d = Dovecot::start();
    d.create_mailbox("test", "Receipts");
    d.seed("test", "INBOX", &msg("slow", "Your receipt"));
    let slow = Arc::new(AtomicBool::new(true));
    let asked = Arc::new(AtomicUsize::new(0));
    let (sl, ak) = (slow.clone(), asked.clone());
    let model = Model::start(2, move |_| {
        ak.fetch_add(1, Ordering::SeqCst);
        // Longer than the stop may take, shorter than the call's timeout.
        let started = Instant::now();
        while sl.load(Ordering::SeqCst) && started.elapsed() < Duration::from_secs(40) {
            std::thread::sleep(Duration::from_millis(50));
        }
        answer(
            json!([{ "type": "move", "folder": "Receipts" }]),
            "a receipt",
        )
    });
    let yaml = format!(
        "server: {{ port: {{PORT}} }}\nstorage: {{ path: \"{{DIR}}/mailproc.db\" }}\n\
         classifier:\n  providers:\n    - {{ name: fake, kind: openai, url: \"{}\", model: scripted, timeout: 120s, max_retries: 0 }}\n\
         accounts:\n  - name: acct\n    \
         imap: {{ host: 127.0.0.1, port: {}, security: none, username: test, password: secret }}\n    \
         folders: {{ watch: [INBOX], allowed: [Receipts] }}\n    backlog: all\n    provider: fake\n",
        model.url(),
        d.imap_port
    );
    let mut m = Mailproc::prepare(&yaml);
    m.spawn(&[("MAILPROC_FAILPOINTS", "stop_grace=2000")]);
    m.wait_ready();
    m.wait_for(Duration::from_secs(30), "the model asked", || {
        (asked.load(Ordering::SeqCst) == 1).then_some(())
    });
    let took = stop(&mut m, Duration::from_secs(60), || {
        slow.store(false, Ordering::SeqCst)
    });
    assert!(
        took < Duration::from_secs(20),
        "SIGTERM took {took:?} with a model call in flight (the grace is 2 s)\n{}",
        m.log()
    );
    assert!(m.log().contains("not waited for"), "{}", m.log());
    assert!(
        d.messages("test").iter().all(|x| x.mailbox == "INBOX"),
        "nothing acted on before the answer"
    );

    // The next start asks again: the receipt filed once, recorded once.
    m.spawn(&[]);
    m.wait_ready();
    m.wait_for(Duration::from_secs(60), "the receipt filed", || {
        let filed = d.messages("test");
        (filed.len() == 1 && filed[0].mailbox == "Receipts").then_some(())
    });
    assert_eq!(asked.load(Ordering::SeqCst), 2);
    let recorded = rows(&m, 10);
    assert_eq!(recorded.len(), 1, "{recorded:?}");
    assert_eq!(recorded[0]["status"], "ok", "{recorded:?}");
}

/// Audit (stop 53): an undo (or "Move to…", or the rule form's look at a
/// message) waits up to 40 s for its account's thread, holding an HTTP
/// worker; a few of them on an account whose server hung held every
/// worker, and `/health` answered only when they gave up. All but one
/// worker may wait on accounts (or on a password check) now; a request
/// past that is told at once that the service is busy.
#[test]
fn waits_on_a_hung_account_leave_a_worker_for_health() {
    let d = Dovecot::start();
    let yaml = format!(
        "server: {{ port: {{PORT}}, workers: 2 }}\nstorage: {{ path: \"{{DIR}}/mailproc.db\" }}\n\
         accounts:\n  - name: acct\n    \
         imap: {{ host: 127.0.0.1, port: {}, security: none, username: test, password: secret, timeout: 60s }}\n    \
         folders: {{ watch: [INBOX], allowed: [Receipts], create: true }}\n    backlog: all\n    rules:\n      \
         - {{ name: shop, when: {{ subject: Order }}, actions: [ {{ type: move, folder: Receipts }} ] }}\n",
        d.imap_port
    );
    d.seed("test", "INBOX", &msg("o1", "Order 1"));
    let m = Mailproc::start(&yaml);
    let id = m.wait_for(Duration::from_secs(30), "the order moved", || {
        rows(&m, 10)
            .into_iter()
            .find(|r| r["status"] == "ok")
            .and_then(|r| r["id"].as_i64())
    });
    m.wait_for(Duration::from_secs(10), "the account idling", || {
        (m.get("/api/accounts").body["accounts"][0]["state"] == "connected").then_some(())
    });
    d.freeze();
    let undo = m.url(&format!("/api/activity/{id}/undo"));
    let first = std::thread::spawn(move || {
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .build()
            .into();
        agent.post(&undo).send_empty().map(|r| r.status().as_u16())
    });
    // The first undo reaches its worker and waits on the hung account.
    std::thread::sleep(Duration::from_secs(2));
    let second = m.post(&format!("/api/activity/{id}/undo"), "");
    assert_eq!(second.status, 503, "{}", second.text);
    assert!(
        second
            .text
            .contains("the service is waiting on accounts for other requests already"),
        "{}",
        second.text
    );
    let health = m.get("/health");
    assert_eq!(health.status, 200, "{}", health.text);
    assert!(!first.is_finished(), "the first undo still waits");
    d.thaw();
    let status = first.join().unwrap();
    assert!(status.is_ok(), "{status:?}");
}
