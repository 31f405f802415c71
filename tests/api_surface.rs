//! The API's HTTP surface through the real binary, whatever the resource:
//! error statuses, JSON and form body errors, `HEAD` on every `GET` route
//! and the `Allow` of a 405.

mod common;

use std::time::Duration;

use common::mailproc::Mailproc;

const TOKEN: &str = "surface-token-0123456789";

fn start() -> Mailproc {
    Mailproc::start(&format!(
        "server: {{ port: {{PORT}}, auth_token: {TOKEN}, workers: 2 }}\nstorage: {{ path: \"{{DIR}}/mailproc.db\" }}\n"
    ))
}

#[test]
fn error_statuses() {
    let m = start();
    let r = m.get_with("/api/nothing-here", TOKEN);
    assert_eq!((r.status, r.body["error"].is_string()), (404, true));
    let r = m.get("/no/such/page");
    assert_eq!(r.status, 404);
    let r = m.request(
        "DELETE",
        "/api/stats",
        &[("Authorization", &format!("Bearer {TOKEN}"))],
        None,
    );
    assert_eq!(r.status, 405);
    assert_eq!(r.header("allow"), Some("GET, HEAD"));
    // Without credentials the API says nothing of its routes or methods:
    // 401, as for a route that exists (an audit: 404 and 405 told them).
    for (method, path) in [
        ("GET", "/api/nothing-here"),
        ("GET", "/api"),
        ("DELETE", "/api/stats"),
        ("PUT", "/api/accounts"),
    ] {
        let r = m.request(method, path, &[], None);
        assert_eq!(r.status, 401, "{method} {path}: {}", r.text);
        assert_eq!(r.header("www-authenticate"), Some("Bearer"), "{path}");
        assert!(r.header("allow").is_none(), "{path}");
    }
    let big = "x".repeat((1 << 20) + 10);
    let r = m.post_with("/api/test-webhook", TOKEN, &big);
    assert_eq!(r.status, 413);
    assert!(r.body["error"].is_string());
    let r = m.post_with("/api/test-webhook", TOKEN, "{\"headers\": {}}");
    assert_eq!(r.status, 400);
    assert!(
        r.body["error"].as_str().unwrap().contains("url"),
        "{}",
        r.text
    );
    let r = m.post_with("/api/test-webhook", TOKEN, "{not json");
    assert_eq!(r.status, 400);
    // (A panicking handler's 500 is the unit test of `http::guarded`.)
    for _ in 0..8 {
        assert_eq!(m.get("/health").status, 200);
    }
}

#[test]
fn login_field_errors_and_form_posts() {
    let m = start();
    let (code, out, err) = m.run_cli(&["set-password", "ops"], "long enough pw\n");
    assert_eq!(code, 0, "{out}{err}");
    let r = m.post("/login", r#"{"username":"ops"}"#);
    assert_eq!(r.status, 400);
    assert!(
        r.body["error"].as_str().unwrap().contains("password"),
        "{}",
        r.text
    );
    // A form post is the dashboard's login: a session and a redirect.
    let r = m.request(
        "POST",
        "/login",
        &[("Content-Type", "application/x-www-form-urlencoded")],
        Some("username=ops&password=long+enough+pw"),
    );
    assert_eq!(r.status, 303, "{}", r.text);
    assert_eq!(r.header("location"), Some("/"));
    assert!(r
        .header("set-cookie")
        .unwrap()
        .starts_with("mailproc_session="));
    let (code, _, err) = m.run_cli(&["set-password", "ops"], "short\n");
    assert_ne!(code, 0);
    assert!(err.contains("at least 8"), "{err}");
}

/// Audit: `{"us` cut short answered `?: EOF while parsing a string`; every
/// JSON body error names `body`, or the field when one is known.
#[test]
fn json_body_errors_name_the_body_or_the_field() {
    let m = start();
    for (path, body, starts) in [
        ("/login", r#"{"us"#, "body: EOF while parsing a string"),
        ("/login", "{", "body: EOF while parsing an object"),
        ("/login", "{not json", "body: key must be a string"),
        (
            "/login",
            r#"{"username": "a"#,
            "username: EOF while parsing a string",
        ),
        (
            "/api/test-webhook",
            r#"{"ur"#,
            "body: EOF while parsing a string",
        ),
        ("/api/test-webhook", r#"{"url": 5}"#, "url: invalid type"),
        (
            "/api/test-webhook",
            r#"{"url": "http://127.0.0.1:9/", "headers": {"X"#,
            "headers: EOF",
        ),
    ] {
        let r = m.post_with(path, TOKEN, body);
        assert_eq!(r.status, 400, "{path} {body:?}: {}", r.text);
        let e = r.body["error"].as_str().unwrap_or_default();
        assert!(e.starts_with(starts), "{path} {body:?}: {}", r.text);
        assert!(!e.contains("?:"), "{path} {body:?}: {}", r.text);
    }
}

/// Audit (stop 51): a body was acted on when JSON was followed by more
/// (`{..} garbage`, or a second object naming another URL), an unknown
/// field was ignored (a misspelt `header` tested nothing and reported
/// success), and `PUT /api/config` took the last of two equal keys (so a
/// reviewer reading the first saw another configuration than the one
/// written). Each is a 400 naming what is wrong, and nothing is done.
#[test]
fn a_json_body_is_one_object_with_known_fields_and_no_key_twice() {
    let m = start();
    for (path, body, says) in [
        (
            "/api/test-webhook",
            r#"{"url":"http://127.0.0.1:9/"} garbage"#,
            "body: trailing characters",
        ),
        (
            "/api/test-webhook",
            r#"{"url":"http://127.0.0.1:9/"}{"url":"http://127.0.0.1:9/b"}"#,
            "body: trailing characters",
        ),
        (
            "/api/test-webhook",
            r#"{"url":"http://127.0.0.1:9/","header":{"A":"b"}}"#,
            "header: unknown field",
        ),
        (
            "/login",
            r#"{"username":"a","password":"bbbbbbbb","remember":true}"#,
            "remember: unknown field",
        ),
        (
            "/login",
            r#"{"username":"a","password":"bbbbbbbb"} x"#,
            "body: trailing characters",
        ),
        // Found by the SPEC audit: a POST that reads no body ignored one,
        // and `{"account":…}` retried every account's failed mail.
        (
            "/api/activity/retry",
            r#"{"account":"work"}"#,
            "body: this route reads no body; what it acts on is named in its path and query \
             (`?account=`)",
        ),
        (
            "/api/accounts/work/pause",
            "garbage",
            "body: this route reads no body; what it acts on is named in its path",
        ),
        // (The regression audit: spaces inside a word, or a space
        // outside ASCII, are no empty body.)
        (
            "/api/accounts/work/pause",
            "n u l l",
            "body: this route reads no body",
        ),
        (
            "/api/accounts/work/pause",
            "\u{a0}",
            "body: this route reads no body",
        ),
    ] {
        let r = m.post_with(path, TOKEN, body);
        assert_eq!(r.status, 400, "{path} {body}: {}", r.text);
        let e = r.body["error"].as_str().unwrap_or_default();
        assert!(e.starts_with(says), "{path} {body}: {}", r.text);
    }
    // What clients send by habit for "no body" passes.
    for empty in ["", " \n", "{}", "{ }", "\r\n{\n}\n", "null"] {
        let r = m.post_with("/api/activity/retry", TOKEN, empty);
        assert_eq!(r.status, 200, "{empty:?}: {}", r.text);
    }
    let before = std::fs::read_to_string(m.dir.path().join("config.yaml")).unwrap();
    for (body, says) in [
        (
            r#"{"log_level":"error","storage":{"path":"x.db"},"log_level":"trace"}"#,
            "body: duplicate entry with key \"log_level\"",
        ),
        (
            r#"{"server":{"port":1,"port":2}}"#,
            "server: duplicate entry with key \"port\"",
        ),
    ] {
        let r = m.request(
            "PUT",
            "/api/config",
            &[("Authorization", &format!("Bearer {TOKEN}"))],
            Some(body),
        );
        assert_eq!(r.status, 400, "{body}: {}", r.text);
        let e = r.body["error"].as_str().unwrap_or_default();
        assert!(e.contains(says), "{body}: {}", r.text);
    }
    let after = std::fs::read_to_string(m.dir.path().join("config.yaml")).unwrap();
    assert_eq!(before, after, "the file must be left as it was");
}

/// Audit (stop 51): `/login` refused another site's `Origin`, but the
/// JSON `/logout` did not, so a page on a sibling port (which `SameSite`
/// still sends the cookie from) could end the operator's session.
#[test]
fn another_sites_page_cannot_sign_the_operator_out() {
    let m = start();
    let (code, out, err) = m.run_cli(&["set-password", "ops"], "long enough pw\n");
    assert_eq!(code, 0, "{out}{err}");
    let r = m.post(
        "/login",
        r#"{"username":"ops","password":"long enough pw"}"#,
    );
    assert_eq!(r.status, 200, "{}", r.text);
    let cookie = r
        .header("set-cookie")
        .and_then(|c| c.split(';').next())
        .unwrap()
        .to_string();
    let host = format!("127.0.0.1:{}", m.port);
    for origin in ["http://evil.example", "http://127.0.0.1:9999"] {
        let r = m.request(
            "POST",
            "/logout",
            &[("Cookie", &cookie), ("Origin", origin)],
            Some("{}"),
        );
        assert_eq!(r.status, 403, "{origin}: {}", r.text);
    }
    let r = m.request("GET", "/api/stats", &[("Cookie", &cookie)], None);
    assert_eq!(r.status, 200, "the session must still be open: {}", r.text);
    // The page's own origin, and a client naming none, sign out.
    let r = m.request(
        "POST",
        "/logout",
        &[("Cookie", &cookie), ("Origin", &format!("http://{host}"))],
        Some("{}"),
    );
    assert_eq!(r.status, 200, "{}", r.text);
    let r = m.request("GET", "/api/stats", &[("Cookie", &cookie)], None);
    assert_eq!(r.status, 401, "{}", r.text);
}

/// Audit (stop 51): a body too large to read (413) and a request asking
/// for an upgrade closed the connection without `Connection: close`, so a
/// client pipelining behind them lost what it queued without being told.
#[test]
fn an_answer_after_which_the_connection_closes_says_so() {
    use std::io::{Read, Write};
    let m = start();
    for request in [
        format!(
            "POST /api/test-webhook HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {TOKEN}\r\nContent-Length: 2000000\r\n\r\n"
        ),
        "GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n".to_string(),
        "GET /health HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n".to_string(),
        "GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n".to_string(),
    ] {
        let mut s = std::net::TcpStream::connect(("127.0.0.1", m.port)).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        s.write_all(request.as_bytes()).unwrap();
        let mut got = Vec::new();
        let _ = s.read_to_end(&mut got);
        let got = String::from_utf8_lossy(&got);
        let head = got.split("\r\n\r\n").next().unwrap_or_default();
        assert!(
            head.lines().any(|l| l.eq_ignore_ascii_case("Connection: close")),
            "{request:?}: {head}"
        );
    }
    // `OPTIONS *` asks about the server (RFC 9110 §9.3.7): it was a 404.
    let mut s = std::net::TcpStream::connect(("127.0.0.1", m.port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    s.write_all(b"OPTIONS * HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
        .unwrap();
    let mut got = Vec::new();
    let _ = s.read_to_end(&mut got);
    let got = String::from_utf8_lossy(&got);
    assert!(got.starts_with("HTTP/1.1 204"), "{got}");
    assert!(
        got.contains("Allow: GET, HEAD, POST, PUT, OPTIONS\r\n"),
        "{got}"
    );
    // A kept-alive request still says nothing of the kind.
    let r = m.get("/health");
    assert_eq!(r.status, 200);
}

/// One response read off a kept-alive connection: status, headers, body
/// (`Content-Length` bytes, chunked decoded, or none after `HEAD`).
struct Raw {
    status: u16,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Raw {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

fn read_line(s: &mut std::io::BufReader<std::net::TcpStream>) -> String {
    use std::io::BufRead;
    let mut line = String::new();
    s.read_line(&mut line).expect("reading a response line");
    assert!(line.ends_with("\r\n"), "a line cut short: {line:?}");
    line.trim_end().to_string()
}

fn read_response(s: &mut std::io::BufReader<std::net::TcpStream>, head: bool) -> Raw {
    use std::io::Read;
    let status_line = read_line(s);
    let status = status_line
        .strip_prefix("HTTP/1.1 ")
        .and_then(|r| r.get(..3))
        .and_then(|c| c.parse().ok())
        .unwrap_or_else(|| panic!("not a status line: {status_line:?}"));
    let mut headers = Vec::new();
    loop {
        let line = read_line(s);
        if line.is_empty() {
            break;
        }
        let (k, v) = line.split_once(':').expect("a header line");
        headers.push((k.to_string(), v.trim().to_string()));
    }
    let mut r = Raw {
        status,
        headers,
        body: Vec::new(),
    };
    if head {
        return r;
    }
    if let Some(n) = r.header("content-length") {
        let mut body = vec![0; n.parse().unwrap()];
        s.read_exact(&mut body).unwrap();
        r.body = body;
    } else if r.header("transfer-encoding") == Some("chunked") {
        loop {
            let size = usize::from_str_radix(&read_line(s), 16).unwrap();
            let mut chunk = vec![0; size + 2];
            s.read_exact(&mut chunk).unwrap();
            r.body.extend_from_slice(&chunk[..size]);
            if size == 0 {
                break;
            }
        }
    }
    r
}

/// Audit: `HEAD /health` was 405 `Allow: GET`. Every GET route answers
/// HEAD with the status and headers of GET and no body, and the kept-alive
/// connection goes on with the next request framed right.
#[test]
fn head_answers_every_get_route_with_its_head_alone() {
    use std::io::Write;
    let m = start();
    let (code, out, err) = m.run_cli(&["set-password", "ops"], "long enough pw\n");
    assert_eq!(code, 0, "{out}{err}");
    let conn = std::net::TcpStream::connect(("127.0.0.1", m.port)).unwrap();
    conn.set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    let mut w = conn.try_clone().unwrap();
    let mut r = std::io::BufReader::new(conn);
    let auth = format!("Authorization: Bearer {TOKEN}\r\n");
    let mut ask = |method: &str, path: &str, extra: &str| -> Raw {
        write!(
            w,
            "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n{extra}\r\n"
        )
        .unwrap();
        read_response(&mut r, method == "HEAD")
    };
    for (path, extra, status, content_type) in [
        ("/api/stats", auth.as_str(), 200, "application/json"),
        (
            "/api/activity?pageSize=2",
            auth.as_str(),
            200,
            "application/json",
        ),
        ("/api/stats", "", 401, "application/json"),
        ("/static/style.css", "", 200, "text/css"),
        ("/login", "", 200, "text/html"),
        ("/", "", 303, ""),
    ] {
        let head = ask("HEAD", path, extra);
        let get = ask("GET", path, extra);
        assert_eq!(head.status, status, "HEAD {path}");
        assert_eq!(get.status, status, "GET {path}");
        for name in [
            "content-type",
            "content-length",
            "allow",
            "location",
            "www-authenticate",
        ] {
            assert_eq!(head.header(name), get.header(name), "HEAD {path}: {name}");
        }
        assert!(
            head.header("content-type")
                .unwrap_or("")
                .starts_with(content_type),
            "HEAD {path}: {:?}",
            head.headers
        );
        if status == 200 {
            assert_eq!(
                head.header("content-length"),
                Some(get.body.len().to_string().as_str()),
                "HEAD {path}"
            );
        }
    }
    // Bodies whose length changes between two requests: the head alone,
    // and the connection still frames the next request right.
    for path in ["/health", "/metrics", "/api/accounts", "/api/logs?limit=5"] {
        let head = ask("HEAD", path, &auth);
        assert_eq!(head.status, 200, "HEAD {path}");
        assert!(head.header("content-length").is_some(), "HEAD {path}");
        let get = ask("GET", path, &auth);
        assert_eq!(get.status, 200, "GET {path}");
        assert!(!get.body.is_empty(), "GET {path}");
    }
    // A streamed (chunked) answer: its head, no chunk, not even the last.
    let head = ask("HEAD", "/api/export?format=csv", &auth);
    assert_eq!(head.status, 200);
    assert!(head.header("content-type").unwrap().starts_with("text/csv"));
    let get = ask("GET", "/api/export?format=csv", &auth);
    assert_eq!(get.status, 200);
    assert!(
        String::from_utf8_lossy(&get.body).starts_with("id,"),
        "{:?}",
        get.body
    );
    let last = ask("GET", "/health", "Connection: close\r\n");
    assert_eq!(last.status, 200);

    // 405s list HEAD wherever GET is allowed.
    let r = m.request("DELETE", "/health", &[], None);
    assert_eq!((r.status, r.header("allow")), (405, Some("GET, HEAD")));
    let r = m.request("PUT", "/login", &[], None);
    assert_eq!(
        (r.status, r.header("allow")),
        (405, Some("GET, HEAD, POST"))
    );
}

/// `/health` says `"database":"error"` and 503 when the database file no
/// longer reads (here overwritten with zeros under the running service).
/// Before, it answered 200 `"healthy"`, `"database":"ok"`, from a
/// `SELECT 1` that touched no file, while `/api/stats` failed with "file
/// is not a database".
#[test]
fn health_reports_a_database_that_no_longer_reads() {
    let m = start();
    let h = m.get("/health");
    assert_eq!((h.status, h.body["database"].as_str()), (200, Some("ok")));
    for suffix in ["", "-wal", "-shm"] {
        let path = format!("{}{suffix}", m.db_path().display());
        if let Ok(meta) = std::fs::metadata(&path) {
            std::fs::write(&path, vec![0u8; meta.len() as usize]).unwrap();
        }
    }
    let stats = m.get_with("/api/stats", TOKEN);
    assert_eq!(stats.status, 500, "{}", stats.text);
    let h = m.get("/health");
    assert_eq!(h.status, 503, "{}", h.text);
    assert_eq!(h.body["database"], "error", "{}", h.text);
    assert_eq!(h.body["status"], "unhealthy", "{}", h.text);
}

/// A browser at an address that is no page gets a page saying so (404,
/// HTML), not the API's JSON, which a person was shown before; a client
/// that does not ask for HTML, and anything under /api/, still gets JSON.
#[test]
fn an_unknown_page_is_a_page_for_a_browser() {
    let m = start();
    let html = [("Accept", "text/html,application/xhtml+xml,*/*;q=0.8")];
    let r = m.request("GET", "/nonexistent-page", &html, None);
    assert_eq!(r.status, 404);
    assert!(
        r.header("content-type")
            .is_some_and(|t| t.starts_with("text/html")),
        "{:?}",
        r.header("content-type")
    );
    assert!(
        r.text.contains("There is no page at /nonexistent-page."),
        "{}",
        r.text
    );
    let r = m.request("GET", "/nonexistent-page", &[], None);
    assert_eq!(
        (r.status, r.body["error"].is_string()),
        (404, true),
        "{}",
        r.text
    );
    // (401: without credentials the API tells no route from another.)
    let r = m.request("GET", "/api/nothing-here", &html, None);
    assert_eq!(
        (r.status, r.body["error"].is_string()),
        (401, true),
        "{}",
        r.text
    );
}

/// A body of known length keeps its `Content-Length` whatever its size:
/// tiny_http switches to chunked from 32 KiB unless told otherwise, so
/// `/metrics` of a service with a few dozen accounts (and `HEAD` of it)
/// had none, where the README promises one on every `GET` and `HEAD`.
#[test]
fn a_body_past_32_kib_keeps_its_content_length() {
    let accounts: String = (0..30)
        .map(|i| {
            format!(
                "  - name: a{i}\n    imap: {{ host: 127.0.0.1, port: 9, security: none, username: u, password: p }}\n"
            )
        })
        .collect();
    let m = Mailproc::start(&format!(
        "server: {{ port: {{PORT}} }}\nstorage: {{ path: \"{{DIR}}/mailproc.db\" }}\naccounts:\n{accounts}"
    ));
    let get = m.get("/metrics");
    assert_eq!(get.status, 200);
    assert!(get.text.len() > 32 << 10, "{} bytes", get.text.len());
    assert_eq!(
        get.header("content-length"),
        Some(get.text.len().to_string().as_str())
    );
    assert_eq!(get.header("transfer-encoding"), None);
    let head = m.request("HEAD", "/metrics", &[], None);
    assert!(head.header("content-length").is_some(), "{:?}", head.text);
}
