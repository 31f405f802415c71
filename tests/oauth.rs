//! OAuth2 sign-in end to end: the real binary against a real Dovecot whose
//! `oauth2` passdb validates JWT access tokens locally, and a scripted
//! token endpoint on loopback (https) that issues them.

mod common;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::Duration;

use common::dovecot::Dovecot;
use common::hooks::receiver;
use common::mailproc::{path_str, Mailproc};
use common::token::{TokenServer, REVOKED};
use serde_json::Value;

/// The HS256 key Dovecot checks tokens with and the endpoint signs with.
const KEY: &[u8] = b"mailproc-test-hs256-key-0123456789abcdef";
const REFRESH: &str = "first-refresh-token-from-the-device-flow";
const CLIENT_SECRET: &str = "literal-client-secret-9f8e7d";

fn msg(id: &str, subject: &str) -> Vec<u8> {
    format!(
        "From: Sender <sender@example.org>\r\nTo: test@example.test\r\nSubject: {subject}\r\n\
         Message-ID: <{id}@mailproc.test>\r\nDate: Sat, 21 Nov 2026 10:00:00 +0000\r\n\
         MIME-Version: 1.0\r\nContent-Type: text/plain; charset=utf-8\r\n\r\nBody of {subject}.\r\n"
    )
    .into_bytes()
}

/// One rule flags every message, so no model is needed.
const FLAG_ALL: &str = "    rules:\n      - { name: all, when: { subject: \".\" }, actions: [ { type: flag, flags: [\"\\\\Flagged\"] } ] }\n";

/// An `acct` account signing in to `d` (implicit TLS) with OAuth2 through
/// `t`; `extra` is appended to the account.
fn oauth_account(d: &Dovecot, t: &TokenServer, extra: &str) -> String {
    format!(
        "  - name: acct\n    imap:\n      host: 127.0.0.1\n      port: {}\n      security: tls\n      ca_file: \"{}\"\n      \
         username: test\n      auth: oauth2\n      oauth2:\n        token_url: \"{}\"\n        \
         device_authorization_url: \"{}\"\n        client_id: mailproc-test\n        \
         client_secret: \"{CLIENT_SECRET}\"\n        refresh_token: \"${{REFRESH_TOKEN}}\"\n        \
         ca_file: \"{}\"\n    backlog: all\n    poll_interval: 30s\n{FLAG_ALL}{extra}",
        d.imaps_port,
        path_str(&d.ca_file),
        t.url("/token"),
        t.url("/device"),
        path_str(t.cert()),
    )
}

fn config(accounts: &str, top: &str) -> String {
    format!(
        "server: {{ port: {{PORT}} }}\nstorage: {{ path: \"{{DIR}}/mailproc.db\" }}\n{top}accounts:\n{accounts}"
    )
}

fn account(m: &Mailproc, name: &str) -> Value {
    let all = m.get("/api/accounts").body;
    all["accounts"]
        .as_array()
        .and_then(|a| a.iter().find(|x| x["name"] == name).cloned())
        .unwrap_or_else(|| panic!("no account {name} in {all}"))
}

fn processed(m: &Mailproc, account: &str) -> u64 {
    m.get(&format!("/api/stats?account={account}")).body["total_processed"]
        .as_u64()
        .unwrap_or(0)
}

/// The pass ends a little after its mail is counted (search indexing, the
/// checkpoint): the account is `processing` until then, so "connected" is
/// waited for, not read once (read once, it failed in a full suite run).
fn wait_connected(m: &Mailproc, name: &str) {
    m.wait_for(
        Duration::from_secs(30),
        &format!("{name} connected, its pass over"),
        || (account(m, name)["state"] == "connected").then_some(()),
    );
}

fn wait_processed(m: &Mailproc, account: &str, n: u64) {
    m.wait_count(
        Duration::from_secs(30),
        &format!("{n} processed in {account}"),
        n,
        || processed(m, account),
    );
}

fn flagged(d: &Dovecot, user: &str, id: &str) -> bool {
    d.messages(user).iter().any(|m| {
        m.message_id == format!("<{id}@mailproc.test>") && m.flags.iter().any(|f| f == "\\Flagged")
    })
}

/// No secret of the endpoint's (or the configuration's) in `text`.
fn assert_no_secrets(text: &str, t: &TokenServer, what: &str) {
    let mut secrets = vec![REFRESH.to_string(), CLIENT_SECRET.to_string()];
    secrets.extend(t.issued_refresh_tokens());
    secrets.extend(t.issued_access_tokens());
    for s in secrets {
        assert!(!text.contains(&s), "{what} contains the secret {s:?}");
    }
}

#[test]
fn xoauth2_sign_in_processes_mail_and_secrets_stay_masked() {
    let tmp = tempfile::tempdir().unwrap();
    let d = Dovecot::start_oauth2(&["xoauth2", "oauthbearer"], KEY);
    d.seed("test", "INBOX", &msg("x1", "Hello over XOAUTH2"));
    let t = TokenServer::start(tmp.path(), KEY, "test", 3600, REFRESH);
    let m = Mailproc::start_with_env(
        &config(&oauth_account(&d, &t, ""), ""),
        &[("REFRESH_TOKEN", REFRESH)],
    );
    wait_processed(&m, "acct", 1);
    assert!(flagged(&d, "test", "x1"), "{:?}", d.messages("test"));
    // Dovecot's log process writes a moment later.
    m.wait_for(
        Duration::from_secs(10),
        "Dovecot logging an XOAUTH2 login",
        || d.log().contains("method=XOAUTH2").then_some(()),
    );
    let refreshes = t.refreshes();
    assert_eq!(refreshes.len(), 1, "{refreshes:?}");
    assert_eq!(refreshes[0].field("refresh_token"), Some(REFRESH));
    assert_eq!(refreshes[0].field("client_id"), Some("mailproc-test"));
    assert_eq!(refreshes[0].field("client_secret"), Some(CLIENT_SECRET));
    wait_connected(&m, "acct");
    assert_eq!(account(&m, "acct")["auth"], "oauth2");

    // GET /api/config: a literal secret is masked, a reference is kept.
    let c = m.get("/api/config");
    assert_eq!(c.status, 200);
    let o = &c.body["accounts"][0]["imap"]["oauth2"];
    assert_eq!(o["client_secret"], "********", "{o}");
    assert_eq!(o["refresh_token"], "${REFRESH_TOKEN}", "{o}");
    assert_no_secrets(&c.text, &t, "GET /api/config");

    // PUT back as shown: the masked client secret is kept as stored, the
    // reference stays a reference, and no token lands in the file.
    let r = m.request("PUT", "/api/config", &[], Some(&c.body.to_string()));
    assert_eq!(r.status, 200, "{}", r.text);
    let file = std::fs::read_to_string(&m.config_path).unwrap();
    assert!(file.contains(CLIENT_SECRET), "{file}");
    assert!(file.contains("${REFRESH_TOKEN}"), "{file}");
    assert!(!file.contains(REFRESH), "{file}");
    assert_no_secrets(&m.log(), &t, "the log");
}

#[test]
fn oauthbearer_when_the_server_offers_it_and_not_xoauth2() {
    let tmp = tempfile::tempdir().unwrap();
    let d = Dovecot::start_oauth2(&["oauthbearer"], KEY);
    d.seed("test", "INBOX", &msg("b1", "Hello over OAUTHBEARER"));
    let t = TokenServer::start(tmp.path(), KEY, "test", 3600, REFRESH);
    let m = Mailproc::start_with_env(
        &config(&oauth_account(&d, &t, ""), ""),
        &[("REFRESH_TOKEN", REFRESH)],
    );
    wait_processed(&m, "acct", 1);
    assert!(flagged(&d, "test", "b1"));
    // Dovecot's log process writes a moment later.
    m.wait_for(
        Duration::from_secs(10),
        "Dovecot logging an OAUTHBEARER login",
        || d.log().contains("method=OAUTHBEARER").then_some(()),
    );
    let log = d.log();
    assert!(!log.contains("method=XOAUTH2"), "{log}");
}

#[test]
fn an_expiring_access_token_is_renewed_without_losing_mail() {
    let tmp = tempfile::tempdir().unwrap();
    let d = Dovecot::start_oauth2(&["xoauth2", "oauthbearer"], KEY);
    d.seed("test", "INBOX", &msg("e1", "Before expiry"));
    // Six-second tokens: renewed three seconds in (half the lifetime).
    let t = TokenServer::start(tmp.path(), KEY, "test", 6, REFRESH);
    let (port, hooks) = receiver();
    let top = format!(
        "webhook_settings: {{ allow_private: [\"127.0.0.1/32\"] }}\nwebhooks:\n  - {{ url: \"http://127.0.0.1:{port}/\", events: [connection_lost] }}\n"
    );
    // (A token is renewed 30 s after it was fetched at the soonest; 1 s
    // here.)
    let m = Mailproc::start_with_env(
        &config(&oauth_account(&d, &t, ""), &top),
        &[
            ("REFRESH_TOKEN", REFRESH),
            ("MAILPROC_FAILPOINTS", "min_renewal=1000"),
        ],
    );
    wait_processed(&m, "acct", 1);
    // Well past the first token's expiry, and several renewals later.
    m.wait_for(Duration::from_secs(40), "three token refreshes", || {
        (t.refreshes().len() >= 3).then_some(())
    });
    d.seed("test", "INBOX", &msg("e2", "After expiry"));
    wait_processed(&m, "acct", 2);
    assert!(flagged(&d, "test", "e1") && flagged(&d, "test", "e2"));
    assert!(
        m.log()
            .contains("a new access token is in hand; signing in again"),
        "{}",
        m.log()
    );
    assert!(!m.log().contains("connection lost"), "{}", m.log());
    assert!(hooks.lock().unwrap().is_empty(), "{:?}", hooks.lock());
}

/// Found by an audit: a token endpoint answering `expires_in: 0` had
/// mailproc fetch a token and sign in again about ten times a second,
/// without end (63 token requests in 7 s). A token is renewed 30 s after
/// it was fetched at the soonest.
#[test]
fn a_token_said_to_last_no_time_is_not_fetched_over_and_over() {
    let tmp = tempfile::tempdir().unwrap();
    let d = Dovecot::start_oauth2(&["xoauth2", "oauthbearer"], KEY);
    d.seed("test", "INBOX", &msg("z1", "Zero"));
    let t = TokenServer::start(tmp.path(), KEY, "test", 3600, REFRESH);
    t.claim_expires_in(0);
    let m = Mailproc::start_with_env(
        &config(&oauth_account(&d, &t, ""), ""),
        &[("REFRESH_TOKEN", REFRESH)],
    );
    wait_processed(&m, "acct", 1);
    std::thread::sleep(Duration::from_secs(5));
    assert_eq!(t.refreshes().len(), 1, "token requests in 5 s");
    assert_eq!(
        m.log().matches("signing in again").count(),
        0,
        "{}",
        m.log()
    );
}

#[test]
fn a_refused_access_token_is_refreshed_once_and_mail_flows() {
    let tmp = tempfile::tempdir().unwrap();
    let d = Dovecot::start_oauth2(&["xoauth2", "oauthbearer"], KEY);
    d.seed("test", "INBOX", &msg("r1", "First"));
    // The endpoint says an hour, but the JWTs expire after eight seconds:
    // the token in hand looks good to mailproc and the server refuses it.
    // (Eight: the fresh token must outlive Dovecot's auth penalty, about
    // four seconds after a failed attempt.)
    let t = TokenServer::start(tmp.path(), KEY, "test", 8, REFRESH);
    t.claim_expires_in(3600);
    let m = Mailproc::start_with_env(
        &config(&oauth_account(&d, &t, ""), ""),
        &[("REFRESH_TOKEN", REFRESH)],
    );
    wait_processed(&m, "acct", 1);
    assert_eq!(t.refreshes().len(), 1);
    std::thread::sleep(Duration::from_secs(9));
    d.seed("test", "INBOX", &msg("r2", "Second"));
    let r = m.post("/api/accounts/acct/reconnect", "");
    assert_eq!(r.status, 200, "{:?}", r.body);
    wait_processed(&m, "acct", 2);
    assert!(flagged(&d, "test", "r2"));
    assert_eq!(t.refreshes().len(), 2, "{:?}", t.refreshes());
    let log = m.log();
    assert!(
        log.contains("refused the access token") && log.contains("refreshing it once"),
        "{log}"
    );
    // Dovecot's log process writes a moment later.
    m.wait_for(
        Duration::from_secs(5),
        "Dovecot logging the second login",
        || {
            (d.log()
                .matches("Login: user=<test>, method=XOAUTH2")
                .count()
                >= 2)
                .then_some(())
        },
    );
}

#[test]
fn a_rotated_refresh_token_is_stored_and_used_after_a_restart() {
    let tmp = tempfile::tempdir().unwrap();
    let d = Dovecot::start_oauth2(&["xoauth2", "oauthbearer"], KEY);
    d.seed("test", "INBOX", &msg("t1", "One"));
    let t = TokenServer::start(tmp.path(), KEY, "test", 3600, REFRESH);
    t.rotate(true);
    let mut m = Mailproc::start_with_env(
        &config(&oauth_account(&d, &t, ""), ""),
        &[("REFRESH_TOKEN", REFRESH)],
    );
    wait_processed(&m, "acct", 1);
    let issued = t.issued_refresh_tokens();
    assert_eq!(issued.len(), 1, "{issued:?}");
    let rotated = issued[0].clone();

    let db = rusqlite::Connection::open(m.db_path()).unwrap();
    let stored: String = db
        .query_row(
            "SELECT refresh_token FROM oauth_tokens WHERE account = 'acct'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(stored, rotated);
    drop(db);

    // The original token is now dead at the endpoint: only the stored one
    // can sign in after the restart.
    m.restart();
    d.seed("test", "INBOX", &msg("t2", "Two"));
    wait_processed(&m, "acct", 2);
    assert!(flagged(&d, "test", "t2"));
    let refreshes = t.refreshes();
    assert_eq!(refreshes.len(), 2, "{refreshes:?}");
    assert_eq!(refreshes[1].field("refresh_token"), Some(rotated.as_str()));
    wait_connected(&m, "acct");

    let config_text = std::fs::read_to_string(&m.config_path).unwrap();
    assert!(config_text.contains("${REFRESH_TOKEN}"));
    for tok in t.issued_refresh_tokens() {
        assert!(
            !config_text.contains(&tok),
            "rotated token in the config file"
        );
    }
    assert_no_secrets(&m.log(), &t, "the log");
}

#[test]
fn a_revoked_refresh_token_puts_the_account_in_error_and_others_carry_on() {
    let tmp = tempfile::tempdir().unwrap();
    let d = Dovecot::start_oauth2(&["xoauth2", "oauthbearer"], KEY);
    d.seed("demo", "INBOX", &msg("o1", "For the other account"));
    let t = TokenServer::start(tmp.path(), KEY, "test", 3600, REFRESH);
    t.revoke();
    let (port, hooks) = receiver();
    let top = format!(
        "webhook_settings: {{ allow_private: [\"127.0.0.1/32\"] }}\nwebhooks:\n  - {{ url: \"http://127.0.0.1:{port}/\", events: [connection_lost] }}\n"
    );
    let other = format!(
        "  - name: other\n    imap: {{ host: 127.0.0.1, port: {}, security: none, username: demo, password: demo }}\n    backlog: all\n{FLAG_ALL}",
        d.imap_port
    );
    let m = Mailproc::start_with_env(
        &config(&format!("{}{other}", oauth_account(&d, &t, "")), &top),
        &[("REFRESH_TOKEN", REFRESH)],
    );
    let a = m.wait_for(Duration::from_secs(20), "acct in error", || {
        let a = account(&m, "acct");
        (a["state"] == "error").then_some(a)
    });
    let last = a["lastError"].as_str().unwrap_or_default().to_string();
    assert!(
        last.contains("invalid_grant") && last.contains(REVOKED),
        "lastError: {last:?}"
    );
    let hook = m.wait_for(Duration::from_secs(10), "connection_lost webhook", || {
        hooks.lock().unwrap().first().map(|(body, _)| body.clone())
    });
    assert_eq!(hook["event"], "connection_lost");
    assert_eq!(hook["account"], "acct");
    let err = hook["error"].as_str().unwrap_or_default();
    assert!(
        err.contains("invalid_grant") && err.contains(REVOKED),
        "{hook}"
    );

    // The other account signs in with its password and processes mail.
    wait_processed(&m, "other", 1);
    assert!(flagged(&d, "demo", "o1"));
    wait_connected(&m, "other");
    assert_eq!(m.get("/health").body["accounts"]["acct"], "error");
    // Announced once, not once per attempt.
    assert_eq!(hooks.lock().unwrap().len(), 1);
}

#[test]
fn the_device_flow_helper_gets_a_refresh_token_that_signs_in() {
    let tmp = tempfile::tempdir().unwrap();
    let d = Dovecot::start_oauth2(&["xoauth2", "oauthbearer"], KEY);
    d.seed("test", "INBOX", &msg("h1", "After the helper"));
    let t = TokenServer::start(tmp.path(), KEY, "test", 3600, "unused");
    // REFRESH_TOKEN is not set yet: that is what the helper is for.
    let m = Mailproc::prepare(&config(&oauth_account(&d, &t, ""), ""));
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
    assert!(said.contains("https://example.test/device"), "{said}");
    // Let it poll once while still pending, then approve.
    m.wait_for(Duration::from_secs(10), "a pending poll", || {
        t.requests()
            .iter()
            .any(|r| r.field("device_code").is_some())
            .then_some(())
    });
    assert!(t.approve(&code), "no device code {code}");
    let out = child.wait_with_output().unwrap();
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut err, &mut rest).unwrap();
    said.push_str(&rest);
    assert!(out.status.success(), "helper failed:\n{said}");
    let token = String::from_utf8(out.stdout).unwrap().trim().to_string();
    assert_eq!(vec![token.clone()], t.issued_refresh_tokens(), "{said}");
    assert!(said.contains("REFRESH_TOKEN=<the token>"), "{said}");
    let device = &t.requests()[0];
    assert_eq!(device.path, "/device");
    assert_eq!(device.field("client_id"), Some("mailproc-test"));

    // The token it printed signs in.
    let mut m = m;
    m.spawn(&[("REFRESH_TOKEN", &token)]);
    m.wait_ready();
    wait_processed(&m, "acct", 1);
    assert!(flagged(&d, "test", "h1"));
}

#[test]
fn a_server_without_oauth_mechanisms_is_a_login_error_naming_them() {
    let tmp = tempfile::tempdir().unwrap();
    let d = Dovecot::start();
    let t = TokenServer::start(tmp.path(), KEY, "test", 3600, REFRESH);
    let m = Mailproc::start_with_env(
        &config(&oauth_account(&d, &t, ""), ""),
        &[("REFRESH_TOKEN", REFRESH)],
    );
    let a = m.wait_for(Duration::from_secs(20), "acct in error", || {
        let a = account(&m, "acct");
        (a["state"] == "error").then_some(a)
    });
    let last = a["lastError"].as_str().unwrap_or_default();
    assert!(
        last.contains("offers neither AUTH=XOAUTH2 nor AUTH=OAUTHBEARER"),
        "{last:?}"
    );
    // Nothing was asked of the token endpoint for a server that cannot
    // take a token.
    assert!(t.requests().is_empty(), "{:?}", t.requests());
}

/// Found by stop 63's regression audit: a server refusing the sign-in for
/// a passing state of its own (Gmail: `NO [UNAVAILABLE] Temporary System
/// Error`) is retried with the connection's back-off, as for a password,
/// and the access token is kept. With OAuth2 such a refusal dropped the
/// token, fetched another, and took the second refusal for bad
/// credentials: state `error`, five minutes' wait, and "check the
/// username and password" of an account that has none.
#[test]
fn a_passing_refusal_of_the_sign_in_is_retried_and_the_token_kept() {
    use common::fake_imap;
    use std::io::Write;
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::sync::Arc;
    let tmp = tempfile::tempdir().unwrap();
    let t = TokenServer::start(tmp.path(), KEY, "test", 3600, REFRESH);
    let tries = Arc::new(AtomicU64::new(0));
    let seen = tries.clone();
    let server = fake_imap::start(
        "AUTHENTICATE",
        Box::new(move |out, tag, _| {
            seen.fetch_add(1, Ordering::SeqCst);
            let _ = out
                .write_all(format!("{tag} NO [UNAVAILABLE] Temporary System Error\r\n").as_bytes());
            true
        }),
    );
    let acct = format!(
        "  - name: acct\n    imap:\n      host: 127.0.0.1\n      port: {}\n      security: none\n      \
         username: test\n      auth: oauth2\n      oauth2:\n        token_url: \"{}\"\n        \
         client_id: mailproc-test\n        refresh_token: \"${{REFRESH_TOKEN}}\"\n        \
         ca_file: \"{}\"\n{FLAG_ALL}",
        server.port,
        t.url("/token"),
        path_str(t.cert()),
    );
    let m = Mailproc::start_with_env(&config(&acct, ""), &[("REFRESH_TOKEN", REFRESH)]);
    m.wait_for(Duration::from_secs(30), "three sign-ins refused", || {
        (tries.load(Ordering::SeqCst) >= 3).then_some(())
    });
    assert_eq!(
        t.refreshes().len(),
        1,
        "the token was dropped: {:?}",
        t.refreshes()
    );
    let a = account(&m, "acct");
    assert_ne!(a["state"], "error", "{a}");
    let log = m.log();
    assert!(
        log.contains("[UNAVAILABLE] Temporary System Error"),
        "{log}"
    );
    assert!(!log.contains("username and password"), "{log}");
}
