//! Issue [21]: every wait of the account loop ends at its deadline whatever
//! the server sends meanwhile, and OAuth2 renewal is prepared before it is
//! needed. The real binary against a real Dovecot validating JWT access
//! tokens, and the scripted token endpoint (tests/common/token.rs) made to
//! fail the way providers do (500, 503 with Retry-After, 429, an outage).

mod common;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use common::dovecot::Dovecot;
use common::hooks::{bodies, receiver};
use common::mailproc::{path_str, Mailproc};
use common::token::{Failure, TokenServer};
use serde_json::Value;

const KEY: &[u8] = b"mailproc-test-hs256-key-0123456789abcdef";
const REFRESH: &str = "first-refresh-token-from-the-device-flow";

fn msg(id: &str, subject: &str) -> Vec<u8> {
    format!(
        "From: Sender <sender@example.org>\r\nTo: test@example.test\r\nSubject: {subject}\r\n\
         Message-ID: <{id}@mailproc.test>\r\nDate: Sat, 21 Nov 2026 10:00:00 +0000\r\n\
         MIME-Version: 1.0\r\nContent-Type: text/plain; charset=utf-8\r\n\r\nBody of {subject}.\r\n"
    )
    .into_bytes()
}

/// One account `acct` signing in to `d` with OAuth2 through `t`, whose
/// `connection_lost` and `error` webhooks go to `hook_port`. Subjects
/// starting `Order` are moved to a folder that does not exist (so they
/// fail and are retried); the rest are flagged. `imap_extra` goes into the
/// `imap` section, `extra` into the account.
fn config(d: &Dovecot, t: &TokenServer, hook_port: u16, imap_extra: &str, extra: &str) -> String {
    format!(
        "server: {{ port: {{PORT}} }}\nstorage: {{ path: \"{{DIR}}/mailproc.db\" }}\n\
         webhook_settings: {{ allow_private: [\"127.0.0.1/32\"] }}\n\
         webhooks:\n  - {{ url: \"http://127.0.0.1:{hook_port}/\", events: [connection_lost] }}\n\
         accounts:\n  - name: acct\n    imap:\n      host: 127.0.0.1\n      port: {}\n      security: tls\n      \
         ca_file: \"{}\"\n      username: test\n      auth: oauth2\n{imap_extra}      oauth2:\n        \
         token_url: \"{}\"\n        device_authorization_url: \"{}\"\n        client_id: mailproc-test\n        refresh_token: \"${{REFRESH_TOKEN}}\"\n        \
         ca_file: \"{}\"\n    folders: {{ watch: [INBOX], allowed: [Missing], create: false }}\n    backlog: all\n    poll_interval: 1h\n{extra}    \
         rules:\n      - {{ name: orders, when: {{ subject: \"^Order\" }}, actions: [ {{ type: move, folder: Missing }} ] }}\n      \
         - {{ name: all, when: {{ subject: \".\" }}, actions: [ {{ type: flag, flags: [\"\\\\Flagged\"] }} ] }}\n",
        d.imaps_port,
        path_str(&d.ca_file),
        t.url("/token"),
        t.url("/device"),
        path_str(t.cert()),
    )
}

/// The tests' tokens live 20 s, renewed 10 s in: below the 30 s a token
/// is kept at the least (1 s here).
fn start(yaml: &str) -> Mailproc {
    Mailproc::start_with_env(
        yaml,
        &[
            ("REFRESH_TOKEN", REFRESH),
            ("MAILPROC_FAILPOINTS", "min_renewal=1000"),
        ],
    )
}

fn account(m: &Mailproc) -> Value {
    m.get("/api/accounts").body["accounts"][0].clone()
}

fn processed(m: &Mailproc) -> u64 {
    m.get("/api/stats").body["total_processed"]
        .as_u64()
        .unwrap_or(0)
}

fn wait_processed(m: &Mailproc, n: u64, limit: Duration) {
    m.wait_for(limit, &format!("{n} processed"), || {
        (processed(m) >= n).then_some(())
    });
}

/// The value of the first metric line starting with `prefix`, 0 when absent.
fn metric(m: &Mailproc, prefix: &str) -> f64 {
    m.get("/metrics")
        .text
        .lines()
        .find(|l| l.starts_with(prefix))
        .and_then(|l| l.rsplit(' ').next())
        .and_then(|v| v.parse().ok())
        .unwrap_or(0.0)
}

/// Dovecot's count of sign-ins of `test` so far.
fn logins(d: &Dovecot) -> usize {
    d.log().matches("Login: user=<test>").count()
}

/// No outage was announced or counted, and no session was lost.
fn assert_no_outage(m: &Mailproc, hooks: &common::hooks::Received) {
    assert!(bodies(hooks).is_empty(), "webhooks: {:?}", bodies(hooks));
    assert_eq!(
        metric(
            m,
            "mailproc_errors_total{account=\"acct\",kind=\"connection\"}"
        ),
        0.0
    );
    assert!(!m.log().contains("connection lost"), "{}", m.log());
}

/// Another mail client of the same user: toggles a keyword on the message
/// `<id@mailproc.test>` of INBOX every `every` until stopped, so the server
/// keeps telling an idling session about flag changes.
struct Busy {
    stop: Arc<AtomicBool>,
    changes: Arc<AtomicUsize>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Busy {
    fn start(d: &Dovecot, id: &str, every: Duration) -> Busy {
        let tcp = std::net::TcpStream::connect(("127.0.0.1", d.imap_port)).unwrap();
        let mut c = imap::Client::new(tcp);
        c.read_greeting().unwrap();
        let mut s = c.login("test", "secret").map_err(|(e, _)| e).unwrap();
        s.select("INBOX").unwrap();
        let uids = s
            .uid_search(format!("HEADER Message-ID \"<{id}@mailproc.test>\""))
            .unwrap();
        let uid = uids
            .into_iter()
            .next()
            .expect("the busy message")
            .to_string();
        let stop = Arc::new(AtomicBool::new(false));
        let changes = Arc::new(AtomicUsize::new(0));
        let thread = {
            let (stop, changes) = (stop.clone(), changes.clone());
            std::thread::spawn(move || {
                let mut on = false;
                while !stop.load(Ordering::SeqCst) {
                    on = !on;
                    let op = if on {
                        "+FLAGS ($Busy)"
                    } else {
                        "-FLAGS ($Busy)"
                    };
                    s.uid_store(&uid, op).unwrap();
                    changes.fetch_add(1, Ordering::SeqCst);
                    std::thread::sleep(every);
                }
                let _ = s.logout();
            })
        };
        Busy {
            stop,
            changes,
            thread: Some(thread),
        }
    }
}

impl Drop for Busy {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// The account back to `connected` after its pass: records are written
/// before a pass ends, so the state is waited for, not read once.
fn wait_connected(m: &Mailproc) {
    m.wait_for(Duration::from_secs(30), "the account connected", || {
        (account(m)["state"] == "connected").then_some(())
    });
}

/// The heart of issue [21]: another client changes a flag every second, so
/// the idling session hears from the server more often than any of its
/// deadlines. Renewal (20 s tokens, due 10 s in), a due retry (2 s, then
/// 4 s) and the IDLE re-issue (every 3 s) all still come, and no session is
/// lost. Before, each line restarted the wait: none of them came.
#[test]
fn a_busy_mailbox_delays_neither_renewal_nor_a_due_retry_nor_the_idle_reissue() {
    let tmp = tempfile::tempdir().unwrap();
    let d = Dovecot::start_oauth2(&["xoauth2", "oauthbearer"], KEY);
    d.seed("test", "INBOX", &msg("busy", "Keep me"));
    d.seed("test", "INBOX", &msg("order1", "Order 1"));
    let busy = Busy::start(&d, "busy", Duration::from_secs(1));
    let t = TokenServer::start(tmp.path(), KEY, "test", 20, REFRESH);
    let (hook_port, hooks) = receiver();
    let m = start(&config(
        &d,
        &t,
        hook_port,
        "      idle_interval: 3s\n",
        "    retry_delay: 2s\n    max_attempts: 3\n",
    ));

    // The retry: attempt 1 at the first pass, 2 and 3 as they fall due.
    let order = m.wait_for(
        Duration::from_secs(40),
        "the order parked after 3 attempts",
        || {
            let r = m.get("/api/activity?status=failed");
            r.body["entries"].as_array().and_then(|e| {
                e.iter()
                    .find(|x| x["messageId"] == "<order1@mailproc.test>")
                    .cloned()
            })
        },
    );
    assert!(
        order["error"].as_str().unwrap_or("").contains("Missing"),
        "{order}"
    );
    // Renewal: four tokens, each fetched before the one before ran out.
    m.wait_for(Duration::from_secs(90), "four access tokens", || {
        (t.refreshes().len() >= 4).then_some(())
    });
    let at: Vec<_> = t.refreshes().iter().map(|r| r.at).collect();
    for w in at.windows(2) {
        let gap = w[1] - w[0];
        assert!(
            gap < Duration::from_secs(20),
            "a token was renewed {gap:?} after the one before, past its 20 s lifetime"
        );
    }
    // The IDLE re-issue.
    m.wait_for(Duration::from_secs(30), "three IDLE re-issues", || {
        (m.log().matches("acct: IDLE re-issued").count() >= 3).then_some(())
    });
    let changes = busy.changes.load(Ordering::SeqCst);
    assert!(
        changes >= 10,
        "the other client changed flags {changes} times"
    );
    drop(busy);
    assert!(
        m.log()
            .contains("a new access token is in hand; signing in again"),
        "{}",
        m.log()
    );
    assert_no_outage(&m, &hooks);
    wait_connected(&m);
}

/// The token endpoint fails at renewal time: the working session is kept
/// (mail flows, no `connection_lost`, no second sign-in) and the request is
/// made again until the endpoint answers; only then is the session
/// replaced. Before, the session was ended first and the outage announced.
#[test]
fn the_token_endpoint_down_at_renewal_keeps_the_working_session() {
    let tmp = tempfile::tempdir().unwrap();
    let d = Dovecot::start_oauth2(&["xoauth2", "oauthbearer"], KEY);
    d.seed("test", "INBOX", &msg("k1", "Before the outage"));
    let t = TokenServer::start(tmp.path(), KEY, "test", 20, REFRESH);
    let (hook_port, hooks) = receiver();
    let m = start(&config(&d, &t, hook_port, "", ""));
    wait_processed(&m, 1, Duration::from_secs(30));
    t.down(Some(Failure::json(503, None)));
    // Renewal is due 10 s in; three refused tries, and past the token's
    // expiry (20 s): the session is the one of the first sign-in.
    m.wait_for(Duration::from_secs(60), "three refused renewals", || {
        (t.refreshes().iter().filter(|r| r.status == 503).count() >= 3).then_some(())
    });
    m.wait_for(Duration::from_secs(30), "the first token's expiry", || {
        (t.refreshes()[0].at.elapsed() > Duration::from_secs(21)).then_some(())
    });
    d.seed("test", "INBOX", &msg("k2", "During the outage"));
    wait_processed(&m, 2, Duration::from_secs(30));
    wait_connected(&m);
    assert_eq!(logins(&d), 1, "{}", d.log());
    assert!(
        m.log().contains("renewing the access token") && m.log().contains("the session goes on"),
        "{}",
        m.log()
    );
    // The endpoint is back: the next try gets a token and the session is
    // replaced by one signed in with it.
    t.down(None);
    m.wait_for(Duration::from_secs(30), "a second sign-in", || {
        (logins(&d) >= 2).then_some(())
    });
    d.seed("test", "INBOX", &msg("k3", "After the outage"));
    wait_processed(&m, 3, Duration::from_secs(30));
    assert_no_outage(&m, &hooks);
    assert_eq!(
        metric(&m, "mailproc_errors_total{account=\"acct\",kind=\"panic\"}"),
        0.0
    );
}

/// Found by an audit: a refresh token revoked while the session was up
/// left the account `connected` and healthy for as long as the server kept
/// the session (Dovecot keeps it past the token's expiry), with no
/// `connection_lost`. A refused grant is for good: once the token in hand
/// has expired the session ends, and the account is in `error`, said once.
#[test]
fn a_refresh_token_revoked_during_a_session_ends_it_once_its_token_expires() {
    let tmp = tempfile::tempdir().unwrap();
    let d = Dovecot::start_oauth2(&["xoauth2", "oauthbearer"], KEY);
    d.seed("test", "INBOX", &msg("v1", "Before the revocation"));
    let t = TokenServer::start(tmp.path(), KEY, "test", 20, REFRESH);
    let (hook_port, hooks) = receiver();
    let m = start(&config(&d, &t, hook_port, "", ""));
    wait_processed(&m, 1, Duration::from_secs(30));
    t.revoke();
    // Renewal is due 10 s in and refused; the token expires at 20 s.
    m.wait_for(Duration::from_secs(60), "the account in error", || {
        (account(&m)["state"] == "error").then_some(())
    });
    assert!(
        t.refreshes()[0].at.elapsed() >= Duration::from_secs(19),
        "not before the token in hand expired"
    );
    let a = account(&m);
    assert!(
        a["lastError"]
            .as_str()
            .unwrap_or("")
            .contains("invalid_grant"),
        "{a}"
    );
    assert_eq!(m.get("/health").body["status"], "degraded");
    m.wait_for(Duration::from_secs(10), "connection_lost", || {
        (!bodies(&hooks).is_empty()).then_some(())
    });
    std::thread::sleep(Duration::from_secs(2));
    let sent = bodies(&hooks);
    assert_eq!(sent.len(), 1, "said once: {sent:?}");
    assert_eq!(sent[0]["event"], "connection_lost", "{sent:?}");
}

/// A token endpoint that answers 500 with an HTML page, 503 with
/// `Retry-After`, 429 with `Retry-After` and 502, in turn, at start-up:
/// each is retried (waiting as long as asked), never taken for a refused
/// grant, and mail flows once a token comes. Before, the HTML 500 put the
/// account in `error` for five minutes.
#[test]
fn token_endpoint_500_503_with_retry_after_and_429_are_retried_as_asked() {
    let tmp = tempfile::tempdir().unwrap();
    let d = Dovecot::start_oauth2(&["xoauth2", "oauthbearer"], KEY);
    d.seed("test", "INBOX", &msg("s1", "Hello"));
    let t = TokenServer::start(tmp.path(), KEY, "test", 3600, REFRESH);
    t.script(&[
        Failure::html(500),
        Failure::json(503, Some(3)),
        Failure::json(429, Some(2)),
        Failure::html(502),
    ]);
    let (hook_port, _hooks) = receiver();
    let m = start(&config(&d, &t, hook_port, "", ""));
    wait_processed(&m, 1, Duration::from_secs(60));
    let r = t.refreshes();
    let statuses: Vec<u16> = r.iter().map(|x| x.status).collect();
    assert_eq!(statuses, [500, 503, 429, 502, 200]);
    assert!(
        r[2].at - r[1].at >= Duration::from_secs(3),
        "Retry-After: 3 not honoured"
    );
    assert!(
        r[3].at - r[2].at >= Duration::from_secs(2),
        "Retry-After: 2 not honoured"
    );
    // The pass that recorded the message may still be ending.
    wait_connected(&m);
    let log = m.log();
    assert!(
        log.contains("HTTP 500") && log.contains("asking again in"),
        "{log}"
    );
    assert!(!log.contains("login failed"), "{log}");
}

/// A long outage of the token endpoint: requests back off, but never
/// further apart than the token back-off's cap, so mail flows within a
/// minute of the provider's return. Before, the IMAP back-off (up to five
/// minutes) applied: the seventh request came 32 s after the sixth.
#[test]
fn after_a_long_token_outage_the_provider_is_asked_again_within_seconds() {
    let tmp = tempfile::tempdir().unwrap();
    let d = Dovecot::start_oauth2(&["xoauth2", "oauthbearer"], KEY);
    d.seed("test", "INBOX", &msg("l1", "Hello"));
    let t = TokenServer::start(tmp.path(), KEY, "test", 3600, REFRESH);
    t.down(Some(Failure::json(503, None)));
    let (hook_port, _hooks) = receiver();
    let m = start(&config(&d, &t, hook_port, "", ""));
    m.wait_for(Duration::from_secs(120), "seven refused requests", || {
        (t.refreshes().len() >= 7).then_some(())
    });
    let at: Vec<_> = t.refreshes().iter().map(|r| r.at).collect();
    let widest = at.windows(2).map(|w| w[1] - w[0]).max().unwrap();
    assert!(
        widest <= Duration::from_secs(25),
        "token requests {widest:?} apart during the outage"
    );
    assert_ne!(account(&m)["state"], "error");
    t.down(None);
    wait_processed(&m, 1, Duration::from_secs(60));
}

/// A provider's `expires_in` near `u64::MAX` overflowed `Instant +
/// Duration`: the account crash-looped. Now a lifetime is believed up to a
/// day, and mail flows.
#[test]
fn an_absurd_expires_in_does_not_crash_the_account() {
    let tmp = tempfile::tempdir().unwrap();
    let d = Dovecot::start_oauth2(&["xoauth2", "oauthbearer"], KEY);
    d.seed("test", "INBOX", &msg("x1", "Hello"));
    let t = TokenServer::start(tmp.path(), KEY, "test", 3600, REFRESH);
    t.claim_expires_in(u64::MAX);
    let (hook_port, hooks) = receiver();
    let m = start(&config(&d, &t, hook_port, "", ""));
    wait_processed(&m, 1, Duration::from_secs(30));
    assert_eq!(
        metric(&m, "mailproc_errors_total{account=\"acct\",kind=\"panic\"}"),
        0.0
    );
    assert!(!m.log().contains("worker crashed"), "{}", m.log());
    assert_no_outage(&m, &hooks);
}

/// `mailproc oauth ACCOUNT` (the device flow) against the scripted device
/// authorization endpoint: the token endpoint failing for a moment while
/// it polls (503 with Retry-After, an HTML 500) does not end the flow; the
/// refresh token it gets is the one printed. Before, the first 5xx ended
/// the helper with an error and the code had to be asked for again.
#[test]
fn the_device_flow_keeps_polling_through_an_unavailable_endpoint() {
    let tmp = tempfile::tempdir().unwrap();
    let d = Dovecot::start_oauth2(&["xoauth2", "oauthbearer"], KEY);
    let t = TokenServer::start(tmp.path(), KEY, "test", 3600, "unused");
    let (hook_port, _hooks) = receiver();
    let m = Mailproc::prepare(&config(&d, &t, hook_port, "", ""));
    let mut child = Command::new(common::mailproc::bin())
        .arg("--config")
        .arg(&m.config_path)
        .args(["oauth", "acct"])
        .env_remove("REFRESH_TOKEN")
        .env("MAILPROC_FAILPOINTS", common::mailproc::NO_DNS)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut err = BufReader::new(child.stderr.take().unwrap());
    let mut said = String::new();
    let code = loop {
        let mut line = String::new();
        assert!(
            err.read_line(&mut line).unwrap() > 0,
            "the helper ended without showing a code:\n{said}"
        );
        said.push_str(&line);
        if let Some(c) = line.trim().strip_prefix("2. enter the code ") {
            break c.to_string();
        }
    };
    t.script(&[Failure::json(503, Some(1)), Failure::html(500)]);
    m.wait_for(Duration::from_secs(20), "two failed polls", || {
        let failed = t
            .requests()
            .iter()
            .filter(|r| r.field("device_code").is_some() && r.status >= 500)
            .count();
        (failed == 2).then_some(())
    });
    assert!(t.approve(&code), "no device code {code}");
    let out = child.wait_with_output().unwrap();
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut err, &mut rest).unwrap();
    said.push_str(&rest);
    assert!(out.status.success(), "helper failed:\n{said}");
    let token = String::from_utf8(out.stdout).unwrap().trim().to_string();
    assert_eq!(vec![token], t.issued_refresh_tokens(), "{said}");
}
