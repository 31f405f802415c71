//! The dashboard end to end: the real binary, a real Dovecot where mail is
//! shown, a browser's requests made by hand (cookies, `Origin`, form posts).

mod common;

use std::time::Duration;

use common::dashboard::*;
use common::dovecot::Dovecot;
use common::mailproc::Mailproc;
use common::model::{answer, Model, Reply};
use serde_json::json;

const PLAIN: &str = "server: { port: {PORT} }\nstorage: { path: \"{DIR}/mailproc.db\" }\n";

/// [`PLAIN`] with the API closed by [`TOKEN`] (bodies without credentials
/// are then held to 16 KiB).
const TOKEN: &str = "dash-token-0123456789abcdef";
const WITH_TOKEN: &str = "server: { port: {PORT}, auth_token: dash-token-0123456789abcdef }\nstorage: { path: \"{DIR}/mailproc.db\" }\n";

#[test]
fn setup_needs_the_logged_code_and_then_closes() {
    let mut m = Mailproc::start(PLAIN);
    let first = setup_code(&m);
    assert_eq!(first.len(), 14, "{first}");
    let mut b = Browser::new(&m);
    for page in ["/", "/activity", "/login", "/config"] {
        assert_redirect(&b.get(page), "/setup");
    }
    let setup = b.get("/setup");
    assert_eq!(setup.status, 200);
    assert!(setup.text.contains("label for=\"code\""), "{}", setup.text);

    // A new code at each start while no user exists; the old one is dead.
    m.restart();
    let code = setup_code(&m);
    assert_ne!(code, first);
    // Not in the log ring: whoever may read /api/logs must not claim setup.
    let logs = m.get("/api/logs?limit=2000&level=trace");
    assert_eq!(logs.status, 200);
    assert!(logs.text.contains("one-time code"), "{}", logs.text);
    assert!(!logs.text.contains(&code), "{}", logs.text);
    let mut b = Browser::new(&m);
    let setup = |b: &mut Browser, user: &str, again: &str, code: &str, origin: Option<&str>| {
        let fields = [
            ("username", user),
            ("password", PASSWORD),
            ("password2", again),
            ("code", code),
        ];
        match origin {
            Some(o) => b.post_as("/setup", &fields, Some(o)),
            None => b.post("/setup", &fields),
        }
    };
    for bad in ["", "WRNG-CODE-0000", first.as_str()] {
        let r = setup(&mut b, "admin", PASSWORD, bad, None);
        assert_eq!(r.status, 400, "{}", r.text);
        assert!(
            r.text.contains("setup code is missing or wrong"),
            "{}",
            r.text
        );
        assert!(b.cookie.is_none());
    }
    assert_redirect(&b.get("/"), "/setup");
    let r = setup(&mut b, "admin", "something else entirely", &code, None);
    assert_eq!(r.status, 400);
    assert!(r.text.contains("passwords differ"));
    // A foreign origin is refused even with the right code.
    let r = setup(
        &mut b,
        "admin",
        PASSWORD,
        &code,
        Some("http://evil.example"),
    );
    assert_eq!(r.status, 403);
    assert_redirect(&b.get("/"), "/setup");

    // The right code: the administrator exists, is logged in, lands on /.
    let r = setup(&mut b, "admin", PASSWORD, &code, None);
    assert_redirect(&r, "/");
    assert!(b.cookie.is_some());
    assert_eq!(b.get("/").status, 200);

    // Closed for good: the page sends you on, a post is refused, nothing
    // is created, and a restart prints no new code.
    assert_redirect(&b.get("/setup"), "/");
    let mut stranger = Browser::new(&m);
    let r = setup(&mut stranger, "intruder", PASSWORD, &code, None);
    assert_eq!(r.status, 403);
    assert_eq!(stranger.login("intruder", PASSWORD).status, 401);
    assert_redirect(&stranger.login("admin", PASSWORD), "/");
    let before = m.log().matches("setup code").count();
    m.restart();
    assert_eq!(m.log().matches("setup code").count(), before);
    assert_redirect(&Browser::new(&m).get("/"), "/login?next=%2F");

    // `set-password` from the shell still works alongside.
    let (rc, out, err) = m.run_cli(&["set-password", "ops"], "another password\n");
    assert_eq!(rc, 0, "{out}{err}");
    let mut ops = Browser::new(&m);
    assert_redirect(&ops.login("ops", "another password"), "/");
}

/// The setup code and the open API's warning are printed whatever the log
/// level: under `log_level: error` neither was (an audit), and no one
/// could finish setup.
#[test]
fn the_setup_code_is_printed_under_any_log_level() {
    let mut m = Mailproc::prepare(&format!("log_level: error\n{PLAIN}"));
    // (The harness runs at debug; the variable wins over the file.)
    m.spawn(&[("MAILPROC_LOG", "error")]);
    m.wait_ready();
    let code = setup_code(&m);
    assert_eq!(code.len(), 14, "{code}");
    assert!(m.log().contains("NO API AUTHENTICATION"), "{}", m.log());
    assert!(!m.log().contains("[INFO]"), "{}", m.log());
    let mut b = Browser::new(&m);
    let r = b.post(
        "/setup",
        &[
            ("username", "admin"),
            ("password", PASSWORD),
            ("password2", PASSWORD),
            ("code", &code),
        ],
    );
    assert_redirect(&r, "/");
}

#[test]
fn login_logout_expiry_and_no_open_redirect() {
    let m = with_user(&format!("{PLAIN}dashboard: {{ session_ttl: 2s }}\n"));
    let mut b = Browser::new(&m);
    // Without a session every page goes to the login page, keeping the way back.
    let r = b.get("/activity?page=2");
    assert_redirect(&r, "/login?next=%2Factivity%3Fpage%3D2");
    let page = b.get("/login?next=%2Factivity%3Fpage%3D2");
    assert_eq!(page.status, 200);
    assert!(
        page.text.contains("value=\"/activity?page=2\""),
        "{}",
        page.text
    );
    assert!(page.text.contains("<label for=\"password\">"));

    let r = b.post(
        "/login",
        &[("username", "admin"), ("password", "wrong"), ("next", "/")],
    );
    assert_eq!(r.status, 401);
    assert!(r.text.contains("Wrong username or password"));
    assert!(b.cookie.is_none());
    // The password field has the focus again, marked as refused (the focus
    // was left on the page's body: an audit on a phone, stop 60).
    assert!(
        r.text
            .contains("autocomplete=\"current-password\" autofocus aria-invalid=\"true\""),
        "{}",
        r.text
    );
    // ...and described by the refusal, which a screen reader did not read
    // (on the page at load, it is no change to announce: the
    // accessibility audit).
    assert!(
        r.text.contains("aria-describedby=\"login-error\"")
            && r.text.contains("id=\"login-error\""),
        "{}",
        r.text
    );

    // next: only a path on this site.
    for evil in [
        "https://evil.example",
        "//evil.example",
        "/\\evil.example",
        "/\t/evil.example",
    ] {
        let mut e = Browser::new(&m);
        let r = e.post(
            "/login",
            &[
                ("username", "admin"),
                ("password", PASSWORD),
                ("next", evil),
            ],
        );
        assert_redirect(&r, "/");
        let r = e.get(&format!("/login?{}", form(&[("next", evil)])));
        assert_redirect(&r, "/");
    }
    let r = b.post(
        "/login",
        &[
            ("username", "admin"),
            ("password", PASSWORD),
            ("next", "/activity?page=2"),
        ],
    );
    assert_redirect(&r, "/activity?page=2");
    assert_eq!(b.get("/activity?page=2").status, 200);

    // Logout needs the token, then ends the session server-side.
    let cookie = b.cookie.clone();
    assert_eq!(b.post("/logout", &[]).status, 403);
    assert_eq!(b.get("/").status, 200, "a refused logout changes nothing");
    let r = b.submit("/logout", &[]);
    assert_redirect(&r, "/login?out=1");
    assert!(b.cookie.is_none(), "the cookie is cleared");
    // The login page says what happened (an audit: every other control
    // confirms itself).
    assert!(b.get("/login?out=1").text.contains("You are logged out."));
    b.cookie = cookie;
    assert_redirect(&b.get("/"), "/login?next=%2F&expired=1");

    // Expiry: a session of 2 s ends, and the page says so.
    b.cookie = None;
    assert_redirect(&b.login("admin", PASSWORD), "/");
    assert_eq!(b.get("/logs").status, 200);
    std::thread::sleep(Duration::from_millis(2500));
    let r = b.get("/logs");
    assert_redirect(&r, "/login?next=%2Flogs&expired=1");
    assert!(b.get(location(&r)).text.contains("Your session has ended"));

    // Ten failures from one address, page and API counted together, → 429.
    let mut x = Browser::new(&m);
    for _ in 0..5 {
        assert_eq!(x.login("admin", "nope").status, 401);
        let api = m.post(
            "/login",
            &json!({"username":"admin","password":"nope"}).to_string(),
        );
        assert_eq!(api.status, 401);
    }
    let page = x.login("admin", PASSWORD);
    assert_eq!(page.status, 429);
    assert_eq!(page.header("retry-after"), Some("900"));
    let api = m.post(
        "/login",
        &json!({"username":"admin","password":PASSWORD}).to_string(),
    );
    assert_eq!(api.status, 429);
}

const HOSTILE: &str = "<script>alert(1)</script>";

#[test]
fn pages_show_processed_mail_escaped() {
    let d = Dovecot::start();
    let model = scripted_model();
    let m = with_user(&account_config(&d, &model, ""));
    wait_connected(&m);
    d.seed(
        "test",
        "INBOX",
        &msg("inv1", "Shop <shop@example.org>", "Invoice 1234"),
    );
    d.seed(
        "test",
        "INBOX",
        &msg(
            "evil",
            "\"<img src=x onerror=alert(2)>\" <evil@example.org>",
            HOSTILE,
        ),
    );
    d.seed(
        "test",
        "INBOX",
        &msg("boom", "x@example.org", "please explode"),
    );
    m.wait_for(Duration::from_secs(20), "three messages recorded", || {
        (total(&m, "&status=ok") >= 2 && total(&m, "&status=failed") >= 1).then_some(())
    });
    let mut anon = Browser::new(&m);
    let mut b = Browser::new(&m);
    assert_redirect(&b.login("admin", PASSWORD), "/");

    let inv = m.get("/api/activity?search=Invoice").body["entries"][0].clone();
    let inv_id = inv["id"].as_i64().unwrap();
    let failed_id = m.get("/api/activity?status=failed").body["entries"][0]["id"]
        .as_i64()
        .unwrap();
    let pages = [
        "/".to_string(),
        "/activity".into(),
        "/activity?accountName=acct&actionType=move&status=ok&search=Invoice&from=2020-01-01&to=2099-12-31".into(),
        format!("/activity/{inv_id}"),
        "/accounts".into(),
        "/accounts/acct".into(),
        "/failed".into(),
        "/webhooks".into(),
        "/logs".into(),
        "/logs?level=debug".into(),
        "/config".into(),
    ];
    for p in &pages {
        let r = b.get(p);
        assert_eq!(r.status, 200, "{p}: {}", r.text);
        assert!(r.header("content-type").unwrap().starts_with("text/html"));
        let csp = r.header("content-security-policy").unwrap();
        assert!(
            csp.contains("default-src 'none'") && !csp.contains("unsafe-inline"),
            "{csp}"
        );
        assert_eq!(r.header("x-frame-options"), Some("DENY"));
        assert_eq!(r.header("referrer-policy"), Some("same-origin"));
        for nav in [
            "href=\"/activity\"",
            "href=\"/failed\"",
            "href=\"/config\"",
            "action=\"/logout\"",
        ] {
            assert!(r.text.contains(nav), "{p} lacks {nav}");
        }
        assert!(!r.text.contains("<script"), "{p} carries a script");
        assert!(!r.text.contains(" style="), "{p} carries an inline style");
        let r = anon.get(p);
        assert_eq!(r.status, 303, "{p} without a session");
        assert!(
            location(&r).starts_with("/login?next=%2F"),
            "{p}: {}",
            location(&r)
        );
    }

    // The processed message on the activity page and its detail page.
    let list = b.get("/activity?search=Invoice");
    assert!(list.text.contains("Invoice 1234"), "{}", list.text);
    assert!(list.text.contains("move → Receipts, flag \\Flagged"));
    let filtered = b.get("/activity?accountName=acct&actionType=move");
    assert!(filtered.text.contains("Invoice 1234"));
    assert!(!filtered.text.contains("please explode"));
    assert!(
        filtered.text.contains("Export this entry: "),
        "{}",
        filtered.text
    );
    // A filter the page cannot apply is said, and offers no export that
    // the API would refuse (an audit: "Nothing here" under "All").
    let typo = b
        .get("/activity?accountName=zzz&status=bogus&actionType=mv")
        .text;
    for said in [
        "There is no account named &quot;zzz&quot; (configured, or in the history).",
        "“Status” is not one this page knows: bogus",
        "“Action” is not one this page knows: mv",
    ] {
        assert!(typo.contains(said), "{said}: {typo}");
    }
    assert!(!typo.contains("Export th"), "{typo}");
    // Dates no day can satisfy are said, with no export link the API
    // would refuse (an audit, stop 56: "0 entries" and a failing link).
    for (query, said) in [
        (
            "from=2026-11-30&to=2026-11-29",
            "“From” (2026-11-30) is after “To” (2026-11-29): no day is both.",
        ),
        (
            "from=1969-12-31",
            "“From” is before 1970, before anything was recorded: 1969-12-31",
        ),
        ("to=2026-13-01", "“To” is not a date: 2026-13-01"),
    ] {
        let page = b.get(&format!("/activity?{query}")).text;
        assert!(page.contains(said), "{query}: {page}");
        assert!(!page.contains("Export th"), "{query}: {page}");
    }
    let detail = b.get(&format!("/activity/{inv_id}")).text;
    for want in [
        "Invoice 1234",
        "shop@example.org",
        "INBOX",
        &format!("<dd>{}</dd>", inv["uid"]),
        "rule <strong>invoices</strong>",
        "inv1@mailproc.test",
    ] {
        assert!(detail.contains(want), "detail lacks {want}:\n{detail}");
    }
    let overview = b.get("/").text;
    assert!(overview.contains("Invoice 1234"), "latest activity");
    assert!(overview.contains("<svg"), "the chart");
    assert!(overview.contains("class=\"bar c-move\""), "{overview}");

    // Hostile subject and sender are text, not markup, everywhere.
    let evil_id = m.get("/api/activity?search=script").body["entries"][0]["id"]
        .as_i64()
        .unwrap();
    for p in [
        "/activity".to_string(),
        format!("/activity/{evil_id}"),
        "/".into(),
    ] {
        let t = b.get(&p).text;
        assert!(
            t.contains("&lt;script&gt;alert(1)&lt;/script&gt;"),
            "{p}:\n{t}"
        );
        assert!(
            !t.contains(HOSTILE) && !t.contains("<img src=x"),
            "{p} is not escaped"
        );
    }
    let t = b.get(&format!("/activity/{evil_id}")).text;
    assert!(
        t.contains("looks &lt;b&gt;harmless&lt;/b&gt;"),
        "reasoning: {t}"
    );

    // The failed message: its error, attempts and a Retry button.
    let t = b.get(&format!("/activity/{failed_id}")).text;
    assert!(
        t.contains("b-failed") && t.contains(&format!("action=\"/activity/{failed_id}/retry\"")),
        "{t}"
    );
    // Named for its message to a screen reader: a page of failures read
    // "Retry, Retry, Retry" (the accessibility audit).
    let named = t
        .split_once("Retry<span class=\"sr\"> ")
        .and_then(|(_, rest)| rest.split_once("</span>"))
        .map(|(name, _)| name);
    assert!(
        named.is_some_and(|n| n.contains("explode")),
        "{named:?}: {t}"
    );
    let failed_page = b.get("/failed").text;
    assert!(failed_page.contains("please explode"));
    // A model that failed is not "no model" (found by an audit).
    assert!(
        failed_page.contains("nothing yet (the attempt failed: see the error)")
            && !failed_page.contains("no rule matched, no model"),
        "{failed_page}"
    );
    let r = b.submit(
        &format!("/activity/{failed_id}/retry"),
        &[("back", "/failed")],
    );
    assert_redirect(&r, "/failed");
    assert!(m
        .log()
        .contains(&format!("email {failed_id} put back in line")));

    // Secrets stay hidden: the IMAP password on the account and config pages.
    let acct = b.get("/accounts/acct").text;
    assert!(
        acct.contains("Receipts") && acct.contains("invoices"),
        "{acct}"
    );
    // Where spam and trash go, as the sign-in found them (the layouts
    // audit: only a log line said).
    assert!(
        acct.contains("<dt>Junk folder (spam)</dt><dd>Junk</dd>")
            && acct.contains("<dt>Trash folder (trash)</dt><dd>Trash</dd>"),
        "{acct}"
    );
    assert!(!acct.contains(">secret<"));
    let conf = b.get("/config").text;
    assert!(
        conf.contains("password: &#39;********&#39;") || conf.contains("********"),
        "{conf}"
    );
    assert!(!conf.contains("password: secret"), "{conf}");

    // Static files: cached, validated by ETag.
    let css = anon.get("/static/style.css");
    assert_eq!(css.status, 200);
    assert!(css.header("content-type").unwrap().starts_with("text/css"));
    assert!(css.header("cache-control").unwrap().contains("max-age"));
    let etag = css.header("etag").unwrap().to_string();
    let again = m.request(
        "GET",
        "/static/style.css",
        &[("If-None-Match", &etag)],
        None,
    );
    assert_eq!(again.status, 304);
    assert_eq!(anon.get("/favicon.ico").status, 200);
    assert_eq!(anon.get("/static/nothing.css").status, 404);
}

#[test]
fn controls_are_form_posts_with_a_token() {
    let d = Dovecot::start();
    let model = scripted_model();
    let m = with_user(&account_config(&d, &model, ""));
    let state = || {
        m.get("/health").body["accounts"]["acct"]
            .as_str()
            .unwrap_or("")
            .to_string()
    };
    m.wait_for(Duration::from_secs(10), "connected", || {
        (state() == "connected").then_some(())
    });
    let mut b = Browser::new(&m);
    assert_redirect(&b.login("admin", PASSWORD), "/");

    // Without the token, with a wrong one, or from another origin: 403.
    let token = b.csrf();
    assert_eq!(b.post("/accounts/acct/pause", &[("back", "/")]).status, 403);
    assert_eq!(
        b.post("/accounts/acct/pause", &[("_csrf", "0000"), ("back", "/")])
            .status,
        403
    );
    let r = b.post_as(
        "/accounts/acct/pause",
        &[("_csrf", &token), ("back", "/")],
        Some("http://evil.example"),
    );
    assert_eq!(r.status, 403);
    let r = b.post_as("/accounts/acct/pause", &[("_csrf", &token)], None);
    assert_eq!(r.status, 403, "a session's post must name its origin");
    assert_eq!(state(), "connected", "nothing changed");

    // The buttons, as the overview and the account page post them.
    assert_redirect(&b.submit("/accounts/acct/pause", &[("back", "/")]), "/");
    assert_eq!(state(), "paused");
    let page = b.get("/accounts/acct").text;
    assert!(page.contains("action=\"/accounts/acct/resume\""), "{page}");
    d.seed(
        "test",
        "INBOX",
        &msg("p1", "a@example.org", "Invoice while paused"),
    );
    assert_redirect(
        &b.submit("/accounts/acct/process", &[("back", "/accounts/acct")]),
        "/accounts/acct",
    );
    m.wait_for(Duration::from_secs(10), "the forced pass", || {
        (total(&m, "") >= 1).then_some(())
    });
    assert_redirect(
        &b.submit("/accounts/acct/resume", &[("back", "https://evil.example")]),
        "/accounts/acct",
    );
    m.wait_for(Duration::from_secs(5), "resumed", || {
        (state() == "connected").then_some(())
    });
    let logins = || m.log().matches("connected to 127.0.0.1").count();
    let before = logins();
    assert_redirect(&b.submit("/accounts/acct/reconnect", &[]), "/accounts/acct");
    // A new session, not the old one still standing.
    m.wait_for(Duration::from_secs(15), "reconnected", || {
        (logins() > before && state() == "connected").then_some(())
    });
    assert_eq!(b.submit("/accounts/nobody/pause", &[]).status, 404);

    // Test Webhook: the SSRF refusal text, then a real answer from a
    // receiver on loopback (allowed by allow_private).
    let r = b.submit(
        "/accounts/acct/test-webhook",
        &[("url", "http://10.1.2.3/hook")],
    );
    assert_eq!(r.status, 400);
    assert!(
        r.text
            .contains("Cannot test webhooks to private or local addresses"),
        "{}",
        r.text
    );
    // A header that cannot be sent is the form's mistake: 400 saying so,
    // nothing sent (port 9 would refuse the connection: a 200 "no answer").
    let r = b.submit(
        "/accounts/acct/test-webhook",
        &[
            ("url", "http://127.0.0.1:9/hook"),
            ("headers", "Bad Name: v"),
        ],
    );
    assert_eq!(r.status, 400, "{}", r.text);
    assert!(
        r.text.contains("Bad Name") && r.text.contains("is not a valid header name"),
        "{}",
        r.text
    );
    // The headers come back as typed, to be corrected (they came back
    // empty).
    assert!(
        r.text
            .contains("name=\"headers\" rows=\"2\">Bad Name: v</textarea>"),
        "{}",
        r.text
    );
    let receiver = tiny_http::Server::http("127.0.0.1:0").unwrap();
    let port = receiver.server_addr().to_ip().unwrap().port();
    let t = std::thread::spawn(move || {
        let req = receiver.recv().unwrap();
        let auth = req
            .headers()
            .iter()
            .find(|h| h.field.equiv("X-Test"))
            .map(|h| h.value.to_string());
        req.respond(tiny_http::Response::empty(202)).unwrap();
        auth
    });
    let url = format!("http://127.0.0.1:{port}/hook");
    let r = b.submit(
        "/accounts/acct/test-webhook",
        &[("url", &url), ("headers", "X-Test: yes")],
    );
    assert_eq!(r.status, 200, "{}", r.text);
    assert!(r.text.contains("answered with status 202"), "{}", r.text);
    assert_eq!(t.join().unwrap().as_deref(), Some("yes"));
    let log = b.get("/webhooks").text;
    assert!(log.contains(&url), "{log}");
    // A test is sent for no account: not shown as sent for "all".
    assert!(log.contains("(a test)") && !log.contains(">all<"), "{log}");
}

#[test]
fn pause_while_connecting_answers_paused() {
    // A server that accepts and never greets: the account stays connecting.
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = silent.local_addr().unwrap().port();
    let m = Mailproc::start(&format!(
        "{PLAIN}accounts:\n  - name: slow\n    imap: {{ host: 127.0.0.1, port: {port}, security: none, username: u, password: p }}\n"
    ));
    m.wait_for(Duration::from_secs(5), "connecting", || {
        (m.get("/health").body["accounts"]["slow"] == "connecting").then_some(())
    });
    let r = m.post("/api/accounts/slow/pause", "");
    assert_eq!(
        r.body,
        json!({ "success": true, "account": "slow", "state": "paused" })
    );
    assert_eq!(m.get("/health").body["accounts"]["slow"], "paused");
    let r = m.post("/api/accounts/slow/resume", "");
    assert_eq!(r.body["state"], "connecting");
    drop(silent);
}

#[test]
fn disabled_dashboard_is_not_served() {
    let m = Mailproc::start(&format!("{PLAIN}dashboard: {{ enabled: false }}\n"));
    assert!(!m.log().contains("setup code"), "{}", m.log());
    for p in [
        "/",
        "/setup",
        "/activity",
        "/accounts",
        "/config",
        "/static/style.css",
        "/favicon.ico",
    ] {
        assert_eq!(m.get(p).status, 404, "{p}");
    }
    let r = m.request(
        "POST",
        "/setup",
        &[("Content-Type", "application/x-www-form-urlencoded")],
        Some("username=a&password=bbbbbbbb&password2=bbbbbbbb&code=x"),
    );
    assert_eq!(r.status, 404);
    assert_eq!(m.get("/health").status, 200);
    assert_eq!(m.get("/metrics").status, 200);
    assert_eq!(m.get("/api/stats").status, 200);
    let (code, out, err) = m.run_cli(&["set-password", "admin"], &format!("{PASSWORD}\n"));
    assert_eq!(code, 0, "{out}{err}");
    let r = m.post(
        "/login",
        &json!({"username":"admin","password":PASSWORD}).to_string(),
    );
    assert_eq!(r.status, 200, "{}", r.text);
}

/// Width and height of a PNG, from its IHDR chunk.
fn png_size(png: &[u8]) -> (u32, u32) {
    assert!(png.starts_with(b"\x89PNG\r\n\x1a\n"), "not a PNG");
    let be = |b: &[u8]| u32::from_be_bytes(b.try_into().unwrap());
    (be(&png[16..20]), be(&png[20..24]))
}

#[test]
fn the_sign_in_page_renders_in_a_browser() {
    let m = with_user(PLAIN);
    let url = format!("http://127.0.0.1:{}/login", m.port);
    // The DOM as the browser built it: the form a person fills in.
    let out = common::chromium::run(&["--dump-dom", &url]);
    let dom = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for want in [
        "<form",
        "name=\"username\"",
        "name=\"password\"",
        "type=\"submit\"",
        "/static/",
    ] {
        assert!(dom.contains(want), "no {want} in the rendered page:\n{dom}");
    }
    // What a person sees, at a desktop and a phone width.
    let dir = tempfile::tempdir().unwrap();
    for (w, h) in [(1440u32, 900u32), (375, 812)] {
        let png = dir.path().join(format!("login-{w}.png"));
        let out = common::chromium::run(&[
            &format!("--screenshot={}", png.display()),
            &format!("--window-size={w},{h}"),
            &url,
        ]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let bytes = std::fs::read(&png).unwrap();
        assert_eq!(png_size(&bytes), (w, h));
        assert!(bytes.len() > 5_000, "a blank page? {} bytes", bytes.len());
    }
    // The browser's own requests reached the service: the page and its
    // stylesheet, all answered.
    let log = m.log();
    assert!(log.contains("GET /login -> 200"), "{log}");
    assert!(
        log.lines()
            .any(|l| l.contains("GET /static/") && l.contains("-> 200")),
        "{log}"
    );
}

/// [16]: what needs a person is found and survives a restart; a post-only
/// address is never a dead end.
#[test]
fn trouble_survives_a_restart_and_undecided_mail_is_found() {
    let d = Dovecot::start();
    let model = Model::start(2, |r| {
        if r.subject().contains("explode") {
            Reply::Status(500, None)
        } else {
            answer(json!([]), "leave it")
        }
    });
    // A second account with no model: what no rule matches, nothing
    // decides.
    let plain = format!(
        "  - name: plain\n    imap: {{ host: 127.0.0.1, port: {}, security: none, username: demo, password: demo }}\n    \
         folders: {{ watch: [INBOX] }}\n    poll_interval: 30s\n",
        d.imap_port
    );
    let mut m = with_user(&account_config(&d, &model, &plain));
    wait_connected(&m);
    m.wait_for(Duration::from_secs(10), "plain connected", || {
        (m.get("/health").body["accounts"]["plain"] == "connected").then_some(())
    });
    d.seed(
        "test",
        "INBOX",
        &msg("b1", "x@example.org", "please explode"),
    );
    d.seed("test", "INBOX", &msg("c1", "bob@example.org", "Coffee?"));
    d.seed("demo", "INBOX", &msg("l1", "ann@example.org", "Lunch?"));
    m.wait_for(Duration::from_secs(20), "three messages recorded", || {
        (total(&m, "&status=ok") == 2 && total(&m, "&status=failed") == 1).then_some(())
    });
    // Mail nothing was done to is what `noop` finds: the model's choice to
    // leave it (Coffee?) and what nothing decided (Lunch?).
    assert_eq!(total(&m, "&actionType=noop"), 2);

    m.restart();
    let mut b = Browser::new(&m);
    assert_redirect(&b.login("admin", PASSWORD), "/");
    let overview = b.get("/").text;
    // The failed message's error is the account's last error, and it was
    // processed before the restart.
    assert!(overview.contains("scripted 500"), "{overview}");
    let processed = overview
        .split("data-label=\"Last processed\"")
        .nth(1)
        .unwrap();
    let cell: String = processed.chars().take(200).collect();
    assert!(!cell.contains("never"), "{overview}");
    // Attention: the tiles and the badge.
    assert!(overview.contains("class=\"count\">2<"), "{overview}");
    // Undecided is only what nothing decided: the model's "leave it" is a
    // decision (found by an audit: every message the classifier kept in
    // INBOX raised the count).
    let attention = b.get("/failed").text;
    assert!(
        attention.contains("Undecided (1)") && attention.contains("Lunch?"),
        "{attention}"
    );
    assert!(!attention.contains("Coffee?"), "{attention}");
    // The view it links to, its export and the API say the same (found by
    // an audit: the export link dropped the filter and gave every row).
    let view = b.get("/activity?undecided=1").text;
    assert!(
        view.contains(r#"href="/api/export?format=csv&amp;open=1&amp;undecided=1""#),
        "{view}"
    );
    assert!(view.contains(r#"name="undecided" value="1""#), "{view}");
    assert_eq!(total(&m, "&undecided=1"), 1);
    let exported = m.get("/api/export?format=csv&undecided=1").text;
    assert!(
        exported.contains("Lunch?") && !exported.contains("Coffee?"),
        "{exported}"
    );
    assert_eq!(m.get("/api/activity?undecided=maybe").status, 400);
    // An entry's page takes its id in one spelling, as the API does.
    let id = m.get("/api/activity?undecided=1").body["entries"][0]["id"].clone();
    assert_eq!(b.get(&format!("/activity/{id}")).status, 200);
    for other in [format!("0{id}"), format!("+{id}"), format!("%2B{id}")] {
        assert_eq!(b.get(&format!("/activity/{other}")).status, 404, "{other}");
    }
    // A form post answered with a page (a refused edit) keeps the badge
    // (found by an audit: it was gone from such pages).
    let refused = b.submit("/config", &[("yaml", "accounts: [")]);
    assert_eq!(refused.status, 400, "{}", refused.text);
    assert!(
        refused.text.contains("class=\"count\">2<"),
        "{}",
        refused.text
    );

    // A post-only address opened as a page goes to its page.
    assert_redirect(&b.get("/accounts/acct/pause"), "/accounts/acct");
    // A post whose session ended leads back to its page after logging in.
    let mut gone = Browser::new(&m);
    gone.cookie = Some("mailproc_session=ended".into());
    let r = gone.post(
        "/accounts/acct/pause",
        &[("_csrf", "x"), ("back", "/failed")],
    );
    assert_redirect(&r, "/login?next=%2Ffailed&expired=1&unsent=1");
    let r = gone.post(
        "/accounts/acct/pause",
        &[("_csrf", "x"), ("back", "https://evil.example/")],
    );
    assert_redirect(&r, "/login?next=%2Faccounts%2Facct&expired=1&unsent=1");
    assert_ne!(m.get("/health").body["accounts"]["acct"], "paused");
    // The login page and the page logged in to say that the Pause was not
    // done (found by an audit: it came back to its page with no word).
    gone.cookie = None;
    let page = gone.get(location(&r)).text;
    assert!(
        page.contains("what you sent was not done") && page.contains(r#"name="unsent" value="1""#),
        "{page}"
    );
    let r = gone.post(
        "/login",
        &[
            ("username", "admin"),
            ("password", PASSWORD),
            ("next", "/accounts/acct"),
            ("unsent", "1"),
        ],
    );
    assert_redirect(&r, "/accounts/acct");
    let page = gone.get("/accounts/acct").text;
    assert!(
        page.contains("What you sent before logging in was not done"),
        "{page}"
    );
    assert!(
        !gone.get("/accounts/acct").text.contains("was not done"),
        "said once"
    );
    // Also when `next` is the post-only address itself, which redirects to
    // its page (found by an audit: the redirect cleared the notice).
    let mut other = Browser::new(&m);
    let r = other.post(
        "/login",
        &[
            ("username", "admin"),
            ("password", PASSWORD),
            ("next", "/accounts/acct/pause"),
            ("unsent", "1"),
        ],
    );
    assert_redirect(&r, "/accounts/acct/pause");
    let r = other.get("/accounts/acct/pause");
    assert_redirect(&r, "/accounts/acct");
    let page = other.get("/accounts/acct").text;
    assert!(
        page.contains("What you sent before logging in was not done"),
        "{page}"
    );
}

/// The account page lists every webhook that receives the account's
/// events: its own and the global ones (which receive every account's),
/// each saying which, secrets and header values as the config API masks
/// them. Before, it listed only the account's own and said "global ones
/// still apply" without naming them.
#[test]
fn the_account_page_lists_its_own_and_the_global_webhooks() {
    let m = with_user(&format!(
        "{PLAIN}webhooks:\n  - {{ url: \"https://hooks.example.org/all\", secret: whsec-global-value-0123456789 }}\n\
         accounts:\n  - name: acct\n    imap: {{ host: 127.0.0.1, port: 9, security: none, username: u, password: p }}\n    \
         webhooks:\n      - {{ url: \"https://hooks.example.org/mine\", events: [error], secret: whsec-own-value-0123456789 }}\n"
    ));
    let mut b = Browser::new(&m);
    assert_redirect(&b.login("admin", PASSWORD), "/");
    let page = b.get("/accounts/acct").text;
    let mine = page.find("https://hooks.example.org/mine").expect(&page);
    let all = page.find("https://hooks.example.org/all").expect(&page);
    assert!(mine < all, "the account's own first: {page}");
    assert!(page[mine..all].contains("this account"), "{page}");
    assert!(page[all..].contains("every account (global)"), "{page}");
    assert!(!page.contains("whsec-"), "a secret shown: {page}");

    // No webhook at all: the page says no one receives the events.
    let m = with_user(&format!(
        "{PLAIN}accounts:\n  - name: acct\n    imap: {{ host: 127.0.0.1, port: 9, security: none, username: u, password: p }}\n"
    ));
    let mut b = Browser::new(&m);
    assert_redirect(&b.login("admin", PASSWORD), "/");
    let page = b.get("/accounts/acct").text;
    assert!(page.contains("No webhook receives this account"), "{page}");
}

/// Found by an audit of the binary: a page's 405 gave a fixed `Allow`
/// (`GET, HEAD, POST` for `DELETE /activity`, `GET, HEAD` for a POST to a
/// page that takes one elsewhere). It lists what the address takes.
#[test]
fn a_pages_405_allows_what_the_address_takes() {
    let m = with_user(PLAIN);
    let mut b = Browser::new(&m);
    b.login("admin", PASSWORD);
    let cookie = b.cookie_header().unwrap();
    let token = b.csrf();
    let origin = b.origin();
    let ask = |method: &str, path: &str| {
        let h = [
            ("Cookie", cookie.as_str()),
            ("Origin", origin.as_str()),
            ("Content-Type", "application/x-www-form-urlencoded"),
        ];
        let body = form(&[("_csrf", token.as_str())]);
        let r = m.request(method, path, &h, Some(&body));
        (r.status, r.header("allow").map(str::to_string))
    };
    let only_get = (405, Some("GET, HEAD".to_string()));
    assert_eq!(ask("DELETE", "/activity"), only_get);
    assert_eq!(ask("POST", "/activity"), only_get);
    let both = (405, Some("GET, HEAD, POST".to_string()));
    assert_eq!(ask("PUT", "/config/rule"), both);
    assert_eq!(ask("DELETE", "/config"), both);
    // Nor does it depend on a session or the form's token (an audit: a
    // POST to a page was refused as cross-origin, a DELETE without a
    // session sent to the login as "not done").
    let bare = |method: &str, path: &str| {
        let r = m.request(method, path, &[], Some(""));
        (r.status, r.header("allow").map(str::to_string))
    };
    assert_eq!(bare("POST", "/"), only_get);
    assert_eq!(bare("DELETE", "/activity"), only_get);
    assert_eq!(bare("PATCH", "/config"), both);
    // Nor on the addresses that take any of GET, HEAD and POST.
    for path in ["/logout", "/login", "/setup"] {
        assert_eq!(bare("PUT", path), both, "{path}");
    }
}

/// Found by audits of the binary: text posted to the editor was parsed by
/// the service itself, so 5 KB of YAML aliases (each repeating a thousand
/// of the one before) took it from 100 MB to gigabytes and down, and
/// 100,000 nested collections held an HTTP worker for 20 s (a count of
/// brackets beforehand was got round with tags and anchors). A child
/// process reads the text now, counting the values as it builds them,
/// within 5 s; the service stays up and answers meanwhile.
#[test]
fn the_editor_reads_hostile_yaml_in_a_child_within_a_deadline() {
    let m = with_user(PLAIN);
    let mut b = Browser::new(&m);
    b.login("admin", PASSWORD);
    let a = vec!["x"; 1000].join(", ");
    let aliases = vec!["*a"; 1000].join(", ");
    let again = vec!["*b"; 100].join(", ");
    let bomb = format!("a: &a [{a}]\nb: &b [{aliases}]\nc: [{again}]\n");
    let started = std::time::Instant::now();
    let r = b.submit("/config", &[("yaml", &bomb)]);
    assert_eq!(r.status, 400, "{}", r.text);
    // Refused by its count, or by the deadline where the machine is busy
    // (a debug build at four test threads on two cores took past 5 s).
    assert!(
        r.text.contains("more than 1000000 values")
            || r.text.contains("takes more than 5s to read"),
        "{}",
        r.text
    );
    assert!(started.elapsed() < Duration::from_secs(10));

    // Nested 60,000 deep behind tags: cut at the deadline, while
    // /health answers.
    let deep = format!("x: {}{}\n", "!t [".repeat(60_000), "]".repeat(60_000));
    let started = std::time::Instant::now();
    let r = std::thread::scope(|s| {
        let post = s.spawn(|| b.submit("/config", &[("yaml", &deep)]));
        std::thread::sleep(Duration::from_secs(1));
        let health = m.get("/health");
        assert_eq!(health.status, 200, "{}", health.text);
        // A second post meanwhile is told at once, not held in a worker
        // (four at once held every worker, found by an audit).
        let mut other = Browser::new(&m);
        other.login("admin", PASSWORD);
        let asked = std::time::Instant::now();
        let second = other.submit("/config", &[("yaml", "{}\n")]);
        assert!(asked.elapsed() < Duration::from_secs(2));
        assert_eq!(second.status, 400, "{}", second.text);
        assert!(
            second.text.contains("another configuration is being read"),
            "{}",
            second.text
        );
        assert!(started.elapsed() < Duration::from_secs(4));
        post.join().unwrap()
    });
    assert_eq!(r.status, 400, "{}", r.text);
    assert!(r.text.contains("takes more than 5s to read"), "{}", r.text);
    assert!(started.elapsed() < Duration::from_secs(15));
    // The configuration is as it was, and a good one still saves.
    assert_eq!(m.get("/health").status, 200);
    let r = b.submit("/config", &[("yaml", "{}\n")]);
    assert!(r.status < 400, "{} {}", r.status, r.text);
}

/// Found by an audit: "Process now" and "Resume" on an account whose
/// sign-in the server refused said "Processing acct now" and "what arrived
/// meanwhile is processed now", while nothing would happen until its next
/// try, minutes away. The notice says it is not connected and that
/// Reconnect tries now; Reconnect says what it does.
#[test]
fn process_and_resume_on_an_account_that_cannot_sign_in_say_so() {
    let d = Dovecot::start();
    let model = scripted_model();
    let m =
        with_user(&account_config(&d, &model, "").replace("password: secret", "password: wrong"));
    m.wait_for(Duration::from_secs(20), "the login refused", || {
        (m.get("/health").body["accounts"]["acct"] == "error").then_some(())
    });
    let mut b = Browser::new(&m);
    assert_redirect(&b.login("admin", PASSWORD), "/");
    // The error's exact text is one click away, the disclosure named for
    // whose error it is: a list of accounts read "Details, Details" (the
    // accessibility audit).
    for page in ["/", "/accounts", "/accounts/acct"] {
        let t = b.get(page).text;
        assert!(
            t.contains("<summary>Details<span class=\"sr\"> of acct's last error</span></summary>"),
            "{page}: {t}"
        );
    }
    for (control, said) in [
        (
            "process",
            "Nothing is processed now: acct is not connected (error)",
        ),
        ("pause", "Paused acct"),
        ("resume", "Resumed acct, but acct is not connected (error)"),
        // Audit (stop 51): "the session is opened again now", in green,
        // for a server that would refuse it again.
        (
            "reconnect",
            "Reconnecting acct: trying to sign in now. It was not connected",
        ),
    ] {
        let path = format!("/accounts/acct/{control}");
        assert_redirect(
            &b.submit(&path, &[("back", "/accounts/acct")]),
            "/accounts/acct",
        );
        let page = b.get("/accounts/acct").text;
        assert!(page.contains(said), "{control}: {page}");
        assert!(!page.contains("opened again now"), "{control}: {page}");
        if control == "process" || control == "resume" {
            assert!(page.contains("Reconnect tries now"), "{control}: {page}");
            assert!(!page.contains("processed now."), "{control}: {page}");
        }
        // One button has the focus: the one pressed (the regression audit
        // found Pause and "Process now" both after a resume).
        assert_eq!(page.matches(" autofocus").count(), 1, "{control}: {page}");
        // It names the notice as its description, so a screen reader
        // reads the answer with the button (the accessibility audit).
        assert!(
            page.contains(" autofocus aria-describedby=\"acct-notice\"")
                && page.contains("id=\"acct-notice\""),
            "{control}: {page}"
        );
    }
}

/// Audit (stop 51): a hand edit of the file not reloaded yet was written
/// over by the next save from the editor, the rule form or the API (the
/// running values, with the backup then taking the edit's place too), and
/// a file the service could not write answered a bare 500 page that lost
/// the editor's text. Now the editor says the file differs, every save is
/// refused 409 with the text kept, until a reload runs the file; and a
/// write that fails is a 503 that keeps the text.
#[test]
fn a_hand_edit_not_reloaded_is_never_written_over_and_a_failed_write_keeps_the_text() {
    let m = with_user(&format!("{WITH_TOKEN}log_level: info\n"));
    let mut b = Browser::new(&m);
    assert_redirect(&b.login("admin", PASSWORD), "/");
    let auth = format!("Bearer {TOKEN}");
    let put = |m: &Mailproc, body: &str| {
        m.request(
            "PUT",
            "/api/config",
            &[("Authorization", &auth)],
            Some(body),
        )
    };
    let read_back = m.get_with("/api/config", TOKEN).text;

    // Edited by hand, not reloaded.
    let edited = std::fs::read_to_string(&m.config_path)
        .unwrap()
        .replace("log_level: info", "log_level: debug");
    std::fs::write(&m.config_path, &edited).unwrap();
    let page = b.get("/config");
    assert!(page.text.contains("id=\"config-differs\""), "{}", page.text);
    assert!(
        page.text.contains("changed since the service read it"),
        "{}",
        page.text
    );
    let r = put(&m, &read_back);
    assert_eq!(r.status, 409, "{}", r.text);
    assert!(
        r.text.contains("changed since the service read it"),
        "{}",
        r.text
    );
    let mine = "server: { port: 1 }\n# my edit\n";
    let r = b.submit("/config", &[("yaml", mine)]);
    assert_eq!(r.status, 409, "{}", r.text);
    assert!(r.text.contains("# my edit"), "the text is kept: {}", r.text);
    assert_eq!(std::fs::read_to_string(&m.config_path).unwrap(), edited);

    // Reloaded: it runs, and saving works again.
    m.signal("HUP");
    m.wait_for(Duration::from_secs(10), "the reload", || {
        (m.get_with("/api/config", TOKEN).body["log_level"] == "debug").then_some(())
    });
    assert!(!b.get("/config").text.contains("id=\"config-differs\""));
    let r = put(&m, &m.get_with("/api/config", TOKEN).text);
    assert_eq!(r.status, 200, "{}", r.text);

    // The backup cannot be written (a directory stands in its place): 503,
    // nothing changed, the editor's text kept.
    let bak = m.config_path.with_file_name("config.yaml.bak");
    let _ = std::fs::remove_file(&bak);
    std::fs::create_dir_all(bak.join("in-the-way")).unwrap();
    let before = std::fs::read_to_string(&m.config_path).unwrap();
    let mut changed: serde_json::Value = m.get_with("/api/config", TOKEN).body;
    changed["log_level"] = "warn".into();
    let r = put(&m, &changed.to_string());
    assert_eq!(r.status, 503, "{}", r.text);
    assert!(r.text.contains("cannot be written"), "{}", r.text);
    // The file that could not be written is named: the backup.
    assert!(r.text.contains("config.yaml.bak: "), "{}", r.text);
    let text = before.replace("log_level: debug", "log_level: warn");
    let r = b.submit("/config", &[("yaml", &text)]);
    assert_eq!(r.status, 503, "{}", r.text);
    assert!(
        r.text.contains("log_level: warn"),
        "the text is kept: {}",
        r.text
    );
    assert_eq!(std::fs::read_to_string(&m.config_path).unwrap(), before);
}

/// Audit (stop 51): the editor's text posted with the token of a session
/// that ended, after signing in again in another tab, met a 403 "token is
/// stale" and was lost. It is shown again to save, nothing written.
#[test]
fn an_edit_posted_with_an_earlier_sessions_token_is_kept_to_save() {
    let m = with_user(PLAIN);
    let mut b = Browser::new(&m);
    assert_redirect(&b.login("admin", PASSWORD), "/");
    let old_token = b.csrf();
    // Signed in again (another tab): a new session, a new token.
    assert_redirect(&b.login("admin", PASSWORD), "/");
    let before = std::fs::read_to_string(&m.config_path).unwrap();
    let text = format!("{before}# typed before the new sign-in\n");
    let r = b.post("/config", &[("_csrf", &old_token), ("yaml", &text)]);
    assert_eq!(r.status, 200, "{}", r.text);
    assert!(
        r.text.contains("# typed before the new sign-in"),
        "{}",
        r.text
    );
    assert!(r.text.contains("It was kept"), "{}", r.text);
    assert_eq!(std::fs::read_to_string(&m.config_path).unwrap(), before);
    // Any other form with that token is still refused.
    assert_eq!(
        b.post("/accounts/acct/pause", &[("_csrf", &old_token)])
            .status,
        403
    );
}

/// Regression audit (stop 51): with bodies held to 16 KiB without valid
/// credentials, an editor's post of 22 KB after its session ended was
/// refused unread (413, raw JSON), and the edit kept for after the login
/// was lost. A browser that signed in before (its device cookie) is read
/// whole: the edit is kept as the README says.
#[test]
fn an_edit_over_16_kib_posted_after_the_session_ended_is_kept() {
    let m = with_user(WITH_TOKEN);
    let mut b = Browser::new(&m);
    assert_redirect(&b.login("admin", PASSWORD), "/");
    let token = b.csrf();
    let session = b.cookie.clone().expect("a session");
    // The session ends elsewhere (another tab's logout, or its time).
    let r = m.request("POST", "/logout", &[("Cookie", &session)], Some(""));
    assert_eq!(r.status, 200, "{}", r.text);
    let before = std::fs::read_to_string(&m.config_path).unwrap();
    let big = format!("{before}{}", "# a long comment line\n".repeat(1200));
    assert!(big.len() > 20 << 10);
    let r = b.post("/config", &[("_csrf", &token), ("yaml", &big)]);
    assert_eq!(r.status, 303, "{}", r.text);
    assert!(
        r.header("location")
            .is_some_and(|l| l.starts_with("/login")),
        "{:?}",
        r.header("location")
    );
    assert_eq!(b.login("admin", PASSWORD).status, 303);
    let page = b.get("/config");
    assert!(page.text.contains("It was kept"), "{}", page.text);
    assert_eq!(page.text.matches("# a long comment line").count(), 1200);
    assert_eq!(std::fs::read_to_string(&m.config_path).unwrap(), before);
    // Without that browser's cookies, the same post is held to 16 KiB.
    let r = m.request(
        "POST",
        "/config",
        &[
            ("Content-Type", "application/x-www-form-urlencoded"),
            ("Cookie", &session),
        ],
        Some(&form(&[("_csrf", &token), ("yaml", &big)])),
    );
    assert_eq!(r.status, 413, "{}", r.text);
}

/// Browser audit B: some 404 pages had no way back (a post to an account
/// or an entry that is not there, an address that is no page), and "Make
/// a rule from this" for an entry that is not there answered 200 with an
/// empty "New rule" form where a rule not there is a 404.
#[test]
fn every_not_found_page_leads_back_and_a_missing_entry_is_one() {
    let m = with_user(&format!(
        "{PLAIN}accounts:\n  - name: acct\n    imap: {{ host: 127.0.0.1, port: 9, security: none, username: u, password: p }}\n"
    ));
    let mut b = Browser::new(&m);
    assert_redirect(&b.login("admin", PASSWORD), "/");
    let back = "<a href=\"/\">Back to the overview</a>";
    for path in ["/accounts/nosuch/pause", "/activity/abc/undo"] {
        let r = b.submit(path, &[]);
        assert_eq!(r.status, 404, "{path}: {}", r.text);
        assert!(r.text.contains(back), "{path}: {}", r.text);
    }
    let html = [("Accept", "text/html,application/xhtml+xml,*/*;q=0.8")];
    let r = m.request("GET", "/nosuch", &html, None);
    assert_eq!(r.status, 404, "{}", r.text);
    assert!(
        r.text.contains("There is no page at /nosuch."),
        "{}",
        r.text
    );
    assert!(r.text.contains(back), "{}", r.text);

    for entry in ["99999", "abc", "0"] {
        let r = b.get(&format!("/config/rule?account=acct&entry={entry}"));
        assert_eq!(r.status, 404, "{entry}: {}", r.text);
        assert!(
            r.text
                .contains("This account has no activity entry with this id"),
            "{entry}: {}",
            r.text
        );
        assert!(
            !r.text.contains("action=\"/config/rule\""),
            "a form: {}",
            r.text
        );
        assert!(r.text.contains(back), "{entry}: {}", r.text);
    }
    // As a rule not there is; without an entry the form is the new rule's.
    assert_eq!(b.get("/config/rule?account=acct&rule=nosuch").status, 404);
    let r = b.get("/config/rule?account=acct");
    assert_eq!(r.status, 200, "{}", r.text);
    assert!(r.text.contains("New rule for acct"), "{}", r.text);
}

/// Browser audit B: an account with no rules and no model read "No rules:
/// every message goes to the model", its rules "checked in order before
/// the model"; and the overview of a service with no account drew the
/// accounts table's header under "No account is configured".
#[test]
fn pages_say_what_happens_without_a_model_or_an_account() {
    let imap = "imap: { host: 127.0.0.1, port: 9, security: none, username: u, password: p }";
    let rule = "rules: [ { name: lists, when: { list_id: \".\" }, actions: [ { type: read } ] } ]";
    let m = with_user(&format!(
        "{PLAIN}accounts:\n  - name: bare\n    {imap}\n  - name: ruled\n    {imap}\n    {rule}\n  \
         - name: learning\n    {imap}\n    learned: {{ enabled: true }}\n"
    ));
    let mut b = Browser::new(&m);
    assert_redirect(&b.login("admin", PASSWORD), "/");
    for (account, says) in [
        (
            "bare",
            "No rules and no model: every message stays where it arrived, listed as \
             <a href=\"/failed#h-undecided\">undecided</a>.",
        ),
        (
            "ruled",
            "Checked in order; the first match wins. There is no model: a message no rule \
             matches stays where it arrived, listed as <a href=\"/failed#h-undecided\">undecided</a>.",
        ),
        (
            "learning",
            "No rules and no model: the learned classifier decides each message it is sure \
             enough of; the rest is kept <a href=\"/failed#h-review\">for review</a> where it arrived.",
        ),
    ] {
        let page = b.get(&format!("/accounts/{account}")).text;
        assert!(page.contains(says), "{account}: {page}");
        assert!(!page.contains("the model;"), "{account}: {page}");
        assert!(!page.contains("goes to the model"), "{account}: {page}");
        assert!(!page.contains("before the model"), "{account}: {page}");
    }
    let form = b.get("/config/rule?account=bare").text;
    assert!(
        form.contains("Rules are checked in order; the first"),
        "{form}"
    );
    // Its keep box too (the regression audit).
    assert!(
        form.contains("Keep it where it is (no later rule decides it)"),
        "{form}"
    );

    let m = with_user(PLAIN);
    let mut b = Browser::new(&m);
    assert_redirect(&b.login("admin", PASSWORD), "/");
    let page = b.get("/").text;
    assert!(page.contains("No account is configured."), "{page}");
    assert!(
        !page.contains(">Last processed<"),
        "a table of none: {page}"
    );
}

/// Browser audit B: while mail was being retried the overview showed no
/// tile for it ("Failed 0"), and an entry's page opened from "Needs
/// attention" had a back link "← Activity" that led there, the navigation
/// marking Activity.
#[test]
fn mail_being_retried_has_its_tile_and_its_page_leads_back_where_it_came_from() {
    let d = Dovecot::start();
    let model = scripted_model();
    let config = account_config(&d, &model, "    retry_delay: 1h\n")
        .replace("max_attempts: 1", "max_attempts: 3");
    let m = with_user(&config);
    wait_connected(&m);
    d.seed(
        "test",
        "INBOX",
        &msg("boom", "x@example.org", "please explode"),
    );
    m.wait_for(Duration::from_secs(20), "a message to retry", || {
        (total(&m, "&status=retrying") == 1).then_some(())
    });
    let mut b = Browser::new(&m);
    assert_redirect(&b.login("admin", PASSWORD), "/");
    let overview = b.get("/").text;
    assert!(
        overview.contains(
            "<a href=\"/failed#h-retrying\"><span class=\"big\">1</span>\
             <span class=\"label\">Being retried</span>"
        ),
        "{overview}"
    );
    assert!(b.get("/failed").text.contains("id=\"h-retrying\""));
    // None, no tile (nor a link to a section not there).
    let quiet = with_user(PLAIN);
    let mut q = Browser::new(&quiet);
    assert_redirect(&q.login("admin", PASSWORD), "/");
    assert!(!q.get("/").text.contains("Being retried"));

    let id = m.get("/api/activity?status=retrying").body["entries"][0]["id"]
        .as_i64()
        .unwrap();
    for (back, link, current) in [
        (
            "%2Ffailed",
            "<a class=\"back\" href=\"/failed\">← Needs attention</a>",
            "/failed",
        ),
        ("%2F", "<a class=\"back\" href=\"/\">← Overview</a>", "/"),
        (
            "%2Factivity%3Fpage%3D2",
            "<a class=\"back\" href=\"/activity?page=2\">← Activity</a>",
            "/activity",
        ),
        (
            "",
            "<a class=\"back\" href=\"/activity\">← Activity</a>",
            "/activity",
        ),
    ] {
        let page = b.get(&format!("/activity/{id}?back={back}")).text;
        assert!(page.contains(link), "{back}: {page}");
        assert!(
            page.contains(&format!("href=\"{current}\" aria-current=\"page\"")),
            "{back}: {page}"
        );
        assert_eq!(page.matches("aria-current").count(), 1, "{back}: {page}");
    }
}

/// Browser audit B: a 152-character folder name printed whole twice in
/// an activity row (its actions and its destination), the row some 15
/// lines tall. A list cuts it as it cuts a subject, whole in its title;
/// the entry's page shows it whole.
#[test]
fn long_folder_names_are_cut_in_lists_and_whole_on_the_entrys_page() {
    let d = Dovecot::start();
    let long = format!("Receipts-of-{}", "the-shop-with-a-long-name-".repeat(6));
    assert_eq!(long.len(), 168);
    d.create_mailbox("test", &long);
    let model = scripted_model();
    let m = with_user(&account_config(&d, &model, "").replace("Receipts", &long));
    wait_connected(&m);
    d.seed(
        "test",
        "INBOX",
        &msg("inv1", "Shop <shop@example.org>", "Invoice 1234"),
    );
    m.wait_for(Duration::from_secs(20), "the invoice moved", || {
        (total(&m, "&status=ok") == 1).then_some(())
    });
    let mut b = Browser::new(&m);
    assert_redirect(&b.login("admin", PASSWORD), "/");
    let cut = format!("{}…", &long[..40]);
    for path in ["/activity", "/"] {
        let page = b.get(path).text;
        assert_eq!(
            page.matches(&format!("move → {cut}, flag \\Flagged"))
                .count(),
            1,
            "{path}: {page}"
        );
        assert!(
            page.contains(&format!("<span title=\"{long}\">{cut}</span>")),
            "{path}: {page}"
        );
        // Whole only in the titles.
        assert_eq!(
            page.matches(&long).count(),
            page.matches(&format!("title=\"{long}\"")).count()
                + page.matches(&format!("title=\"move → {long}")).count(),
            "{path}: {page}"
        );
    }
    let id = m.get("/api/activity").body["entries"][0]["id"]
        .as_i64()
        .unwrap();
    let page = b.get(&format!("/activity/{id}")).text;
    assert!(page.contains(&format!("<dd>{long}</dd>")), "{page}");
    assert!(
        page.contains(&format!("<dd>move → {long}, flag \\Flagged</dd>")),
        "{page}"
    );
}

/// Found by stop 63's audit of folder layouts: the account page listed
/// the allowed actions and not which of them the model may take
/// (`model_actions`), nor where spam and trash go.
#[test]
fn the_account_page_says_what_the_model_may_do() {
    let d = Dovecot::start();
    let model = scripted_model();
    let m = with_user(&account_config(
        &d,
        &model,
        "    allowed_actions: [move, flag, read, spam, noop]\n    model_actions: [move, noop]\n",
    ));
    m.wait_for(Duration::from_secs(20), "signed in", || {
        (m.get("/health").body["accounts"]["acct"] == "connected").then_some(())
    });
    let mut b = Browser::new(&m);
    assert_redirect(&b.login("admin", PASSWORD), "/");
    let page = b.get("/accounts/acct").text;
    assert!(
        page.contains("<dt>Of them, the model's</dt><dd>")
            && page
                .split("<dt>Of them, the model's</dt>")
                .nth(1)
                .is_some_and(|rest| {
                    let dd = rest.split("</dd>").next().unwrap_or("");
                    dd.contains("move") && dd.contains("noop") && !dd.contains("spam")
                }),
        "{page}"
    );
}
