//! The webhook test endpoint (`POST /api/test-webhook`) of the real
//! binary, against receivers on loopback: what it sends, what it reports,
//! what it refuses. Nothing here sends traffic anywhere but 127.0.0.0/8.

mod common;

use std::time::Duration;

use common::mailproc::Mailproc;
use common::receiver::{assert_timestamp, Answer, Receiver, UA};
use mailproc::webhook::SSRF_MESSAGE;
use serde_json::{json, Value};

const TOKEN: &str = "test-token-0123456789";
const READER_KEY: &str = "reader-key-0123456789";

fn service_yaml(allow_private: &str) -> String {
    format!(
        r#"
server:
  port: {{PORT}}
  auth_token: {TOKEN}
dashboard:
  api_keys:
    - name: reader
      key: {READER_KEY}
      permissions: [read:stats]
storage:
  path: "{{DIR}}/mailproc.db"
webhook_settings:
  timeout: 5s
  allow_private: {allow_private}
"#
    )
}

fn test_webhook(m: &Mailproc, body: Value) -> common::mailproc::Resp {
    m.post_with("/api/test-webhook", TOKEN, &body.to_string())
}

#[test]
fn test_endpoint_posts_with_headers_and_reports_the_status() {
    let ok = Receiver::start("127.0.0.1:0", Answer::Status(200));
    let denied = Receiver::start("127.0.0.1:0", Answer::Status(401));
    let m = Mailproc::start(&service_yaml(r#"["127.0.0.1/32"]"#));

    let r = test_webhook(
        &m,
        json!({"url": ok.url("/hook?x=1"), "headers": {"X-Custom": "abc", "Authorization": "Bearer target-token"}}),
    );
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.body, json!({"success": true, "statusCode": 200}));
    let hits = ok.hits();
    assert_eq!(hits.len(), 1);
    let h = &hits[0];
    assert_eq!(h.method, "POST");
    assert_eq!(h.path, "/hook?x=1");
    assert_eq!(h.one("X-Custom"), "abc");
    assert_eq!(h.one("Authorization"), "Bearer target-token");
    assert_eq!(h.one("Content-Type"), "application/json");
    assert_eq!(h.one("User-Agent"), UA);
    assert!(
        h.all("webhook-signature").is_empty(),
        "unsigned without a secret"
    );
    let body = h.json();
    assert_eq!(body["event"], "test");
    assert_eq!(body["message"], "mailproc test delivery");
    assert_timestamp(&body["timestamp"]);

    // A header given by the caller replaces the default of the same name,
    // whatever its case.
    let r = test_webhook(
        &m,
        json!({"url": ok.url("/"), "headers": {"user-agent": "custom/1", "CONTENT-TYPE": "text/plain"}}),
    );
    assert_eq!(r.body, json!({"success": true, "statusCode": 200}));
    let h = &ok.hits()[1];
    assert_eq!(h.one("User-Agent"), "custom/1");
    assert_eq!(h.one("Content-Type"), "text/plain");

    let r = test_webhook(&m, json!({"url": denied.url("/")}));
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.body, json!({"success": false, "statusCode": 401}));
    assert_eq!(denied.count(), 1);

    let d = m.get_with("/api/webhooks/deliveries", TOKEN);
    assert_eq!(d.status, 200, "{}", d.text);
    assert_eq!(d.body["total"], 3, "{}", d.text);
    assert_eq!(d.body["totalPages"], 1, "{}", d.text);
    let d2 = m.get_with("/api/webhooks/deliveries?pageSize=2", TOKEN);
    assert_eq!(d2.body["totalPages"], 2, "{}", d2.text);
    let rows = d.body["deliveries"].as_array().unwrap();
    let row = |url: &str| {
        rows.iter()
            .find(|r| r["url"] == url)
            .unwrap_or_else(|| panic!("no row for {url}: {rows:?}"))
    };
    // Query values may be credentials: the delivery log masks them.
    let first = row(&ok.url("/hook?x=********"));
    assert_eq!(first["event"], "test");
    assert_eq!(first["statusCode"], 200);
    assert_eq!(first["outcome"], "success");
    assert_eq!(first["account"], Value::Null);
    assert_eq!(first["error"], Value::Null);
    assert!(first["durationMs"].is_u64());
    assert_eq!(row(&denied.url("/"))["statusCode"], 401);
    assert_eq!(row(&denied.url("/"))["outcome"], "http_error");

    let metrics = m.get("/metrics").text;
    for line in [
        r#"mailproc_webhook_deliveries_total{event="test",outcome="success"} 2"#,
        r#"mailproc_webhook_deliveries_total{event="test",outcome="http_error"} 1"#,
    ] {
        assert!(metrics.contains(line), "missing {line} in\n{metrics}");
    }
}

/// One webhook test at a time: a test waiting on a target that never
/// answers holds one HTTP worker, and further tests are turned away (429
/// with Retry-After) instead of holding the others; the service answers
/// meanwhile, and a test after the first ended runs. Before, each test
/// held a worker for the whole time-out: four at once stopped the API.
#[test]
fn a_test_waiting_on_a_silent_target_holds_one_worker_not_all() {
    let mut silent = Receiver::start("127.0.0.1:0", Answer::Hang);
    let ok = Receiver::start("127.0.0.1:0", Answer::Status(200));
    let m = Mailproc::start(
        &service_yaml(r#"["127.0.0.1/32"]"#).replace("timeout: 5s", "timeout: 120s"),
    );
    let slow = silent.url("/slow");
    let first = std::thread::scope(|sc| {
        let waiting = sc.spawn(|| test_webhook(&m, json!({ "url": slow })));
        silent.wait_for_hits(1, Duration::from_secs(60));
        for _ in 0..8 {
            let r = test_webhook(&m, json!({"url": ok.url("/")}));
            assert_eq!(r.status, 429, "{}", r.text);
            assert_eq!(r.header("Retry-After"), Some("5"), "{:?}", r.headers);
            let error = r.body["error"].as_str().unwrap_or_default();
            assert!(
                error.contains("another webhook test is running"),
                "{}",
                r.text
            );
        }
        assert_eq!(ok.count(), 0, "a turned-away test sent nothing");
        // A refused target is refused all the same, in the words of the
        // spec (found by an audit: 429 until the slow test ended).
        for url in ["http://[::1]:9/", "http://127.0.0.2:9/"] {
            let r = test_webhook(&m, json!({ "url": url }));
            assert_eq!(r.status, 400, "{url}: {}", r.text);
            assert_eq!(
                r.body,
                json!({"success": false,
                       "error": "Cannot test webhooks to private or local addresses"}),
                "{url}"
            );
        }
        assert_eq!(m.get("/health").status, 200);
        silent.release();
        waiting.join().expect("the first test's client")
    });
    assert_eq!(
        first.body,
        json!({"success": true, "statusCode": 200}),
        "{}",
        first.text
    );
    let r = test_webhook(&m, json!({"url": ok.url("/")}));
    assert_eq!(
        r.body,
        json!({"success": true, "statusCode": 200}),
        "{}",
        r.text
    );
    assert_eq!(ok.count(), 1);
}

#[test]
fn test_endpoint_refuses_every_spelling_of_a_local_address() {
    let v4 = Receiver::start("127.0.0.1:0", Answer::Status(200));
    let p = v4.port();
    // Also listen on ::1 with the same port, when this host has IPv6
    // loopback, so that a request slipping through to [::1] would be seen.
    let v6 = Receiver::try_start(&format!("[::1]:{p}"), Answer::Status(200)).ok();
    if v6.is_none() {
        eprintln!("note: no IPv6 loopback here; [::1] spellings are checked for the 400 only");
    }
    let m = Mailproc::start(&service_yaml("[]"));
    let urls = [
        format!("http://127.0.0.1:{p}/"),
        format!("http://localhost:{p}/"),
        format!("http://[::1]:{p}/"),
        format!("http://127.1:{p}/"),
        format!("http://2130706433:{p}/"),
        format!("http://0x7f000001:{p}/"),
        format!("http://[::ffff:127.0.0.1]:{p}/"),
    ];
    for url in &urls {
        let r = test_webhook(&m, json!({"url": url}));
        assert_eq!(r.status, 400, "{url}: {}", r.text);
        assert_eq!(
            r.body,
            json!({"success": false, "error": SSRF_MESSAGE}),
            "{url}"
        );
    }
    assert_eq!(v4.count(), 0, "a refused target received {:?}", v4.hits());
    if let Some(v6) = &v6 {
        assert_eq!(v6.count(), 0, "a refused target received {:?}", v6.hits());
    }
    // Refusals are deliveries too: logged and counted, with the reason.
    let d = m.get_with("/api/webhooks/deliveries", TOKEN);
    assert_eq!(d.body["total"], urls.len(), "{}", d.text);
    for row in d.body["deliveries"].as_array().unwrap() {
        assert_eq!(row["statusCode"], Value::Null);
        assert_eq!(row["outcome"], "refused", "{row}");
        let err = row["error"].as_str().unwrap();
        assert!(
            err.starts_with("refused: ") && err.contains("loopback"),
            "{err}"
        );
    }
    let metrics = m.get("/metrics").text;
    let line = format!(
        r#"mailproc_webhook_deliveries_total{{event="test",outcome="refused"}} {}"#,
        urls.len()
    );
    assert!(metrics.contains(&line), "missing {line} in\n{metrics}");
}

#[test]
fn test_endpoint_reports_a_redirect_and_does_not_follow_it() {
    // Only 127.0.0.1 is allowed; the redirect points at 127.0.0.2, which a
    // follower would reach without asking the guard.
    let elsewhere = Receiver::start("127.0.0.2:0", Answer::Status(200));
    let target = Receiver::start("127.0.0.1:0", Answer::Redirect(elsewhere.url("/")));
    let m = Mailproc::start(&service_yaml(r#"["127.0.0.1/32"]"#));
    let r = test_webhook(&m, json!({"url": target.url("/")}));
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.body, json!({"success": false, "statusCode": 302}));
    assert_eq!(target.count(), 1);
    assert_eq!(
        elsewhere.count(),
        0,
        "the redirect was followed: {:?}",
        elsewhere.hits()
    );
}

/// https goes through native-tls (the provider ureq must be told to use; a
/// wrong provider panics at the first https request). A listener that
/// answers in plain HTTP fails the handshake: a TLS failure without status,
/// not a 500.
#[test]
fn test_endpoint_https_uses_native_tls() {
    use std::io::Write;
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        if let Ok((mut s, _)) = listener.accept() {
            let _ = s.write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n");
        }
    });
    let m = Mailproc::start(&service_yaml(r#"["127.0.0.1/32"]"#));
    let r = test_webhook(&m, json!({"url": format!("https://{addr}/")}));
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.body["success"], false, "{}", r.text);
    assert_eq!(r.body["statusCode"], 0, "{}", r.text);
    let err = r.body["error"].as_str().unwrap_or("").to_lowercase();
    assert!(err.contains("tls") || err.contains("ssl"), "{}", r.text);
    let rows = m.get_with("/api/webhooks/deliveries", TOKEN).body;
    assert_eq!(rows["deliveries"][0]["statusCode"], Value::Null);
    assert_eq!(rows["deliveries"][0]["outcome"], "failed");
    assert!(rows["deliveries"][0]["error"].is_string());
}

#[test]
fn test_endpoint_rejects_bad_input_and_missing_credentials() {
    let m = Mailproc::start(&service_yaml(r#"["127.0.0.1/32"]"#));
    let r = test_webhook(&m, json!({"headers": {"X-A": "b"}}));
    assert_eq!(r.status, 400, "{}", r.text);
    assert!(
        r.body["error"].as_str().unwrap().contains("url"),
        "{}",
        r.text
    );

    let r = test_webhook(&m, json!({"url": "ftp://127.0.0.1/"}));
    assert_eq!(r.status, 400, "{}", r.text);
    assert!(
        r.body["error"].as_str().unwrap().starts_with("url:"),
        "{}",
        r.text
    );

    let r = m.post(
        "/api/test-webhook",
        &json!({"url": "http://127.0.0.1:9/"}).to_string(),
    );
    assert_eq!(r.status, 401, "{}", r.text);

    let r = m.post_with(
        "/api/test-webhook",
        READER_KEY,
        &json!({"url": "http://127.0.0.1:9/"}).to_string(),
    );
    assert_eq!(r.status, 403, "{}", r.text);
    assert!(
        r.body["error"].as_str().unwrap().contains("write:accounts"),
        "{}",
        r.text
    );

    // None of these reached the delivery log.
    assert_eq!(
        m.get_with("/api/webhooks/deliveries", TOKEN).body["total"],
        0
    );
}

/// Audit: a header the test endpoint cannot send was answered 200
/// `{"success":false,"statusCode":0,"error":"header \"Bad Name\": invalid
/// name"}` (and logged as a failed delivery). It is malformed input: 400
/// naming the field, nothing sent, nothing logged.
#[test]
fn test_endpoint_refuses_malformed_headers_sending_nothing() {
    let ok = Receiver::start("127.0.0.1:0", Answer::Status(200));
    let m = Mailproc::start(&service_yaml(r#"["127.0.0.1/32"]"#));
    let r = test_webhook(
        &m,
        json!({"url": ok.url("/x"), "headers": {"Bad Name": "v"}}),
    );
    assert_eq!(r.status, 400, "{}", r.text);
    assert_eq!(
        r.body,
        json!({"error": "headers.\"Bad Name\": not a valid header name"})
    );
    for value in ["a\r\nX-Injected: 1", "a\nb", "a\rb", "nul\u{0}"] {
        let r = test_webhook(
            &m,
            json!({"url": ok.url("/x"), "headers": {"X-Ok": "fine", "X-A": value}}),
        );
        assert_eq!(r.status, 400, "{value:?}: {}", r.text);
        let e = r.body["error"].as_str().unwrap_or_default();
        assert!(
            e.starts_with("headers.\"X-A\": not a valid header value"),
            "{value:?}: {}",
            r.text
        );
    }
    // A header given twice was sent as the last of the two (an audit).
    let twice = format!(
        r#"{{"url":"{}","headers":{{"X-A":"one","X-A":"two"}}}}"#,
        ok.url("/x")
    );
    let r = m.post_with("/api/test-webhook", TOKEN, &twice);
    assert_eq!(r.status, 400, "{}", r.text);
    assert!(
        r.body["error"]
            .as_str()
            .is_some_and(|e| e.starts_with("headers: \"X-A\" given twice")),
        "{}",
        r.text
    );
    assert_eq!(ok.count(), 0, "nothing was sent: {:?}", ok.hits());
    assert_eq!(
        m.get_with("/api/webhooks/deliveries", TOKEN).body["total"],
        0,
        "nothing was logged"
    );

    // A target that refuses the connection is a test that ran: 200, no
    // status came back (0), and why.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = closed.local_addr().unwrap().port();
    drop(closed);
    let r = test_webhook(
        &m,
        json!({"url": format!("http://127.0.0.1:{port}/x"), "headers": {"X-A": "b"}}),
    );
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.body["success"], false, "{}", r.text);
    assert_eq!(r.body["statusCode"], 0, "{}", r.text);
    assert!(r.body["error"].is_string(), "{}", r.text);
}
