//! Issue [8]: property tests of everything a stranger (or a confused
//! operator) can feed the service: the configuration loader, the HTTP
//! request parsers and router (through the real binary), model answers and
//! MIME messages. Every failure proptest finds is kept as a regression case
//! below the properties. Sized to run in CI in well under a minute.

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use mailproc::classify::{parse_answer, prompt, Email};
use mailproc::config::{parse, AccountConfig, Config};
use proptest::prelude::*;
use serde_json::{json, Value};

fn env(name: &str) -> Option<String> {
    // Every reference resolves, so the example config's ${...} work; a
    // name with "UNSET" stays unset to exercise that error too.
    (!name.contains("UNSET")).then(|| format!("value-of-{name}-0123456789"))
}

// ---------------------------------------------------------------------------
// Configuration
// ---------------------------------------------------------------------------

/// Keys the loader knows (at any level), so random trees reach deep.
const KEYS: &[&str] = &[
    "server",
    "port",
    "bind",
    "auth_token",
    "workers",
    "max_connections",
    "trusted_proxies",
    "public_url",
    "dashboard",
    "enabled",
    "session_secret",
    "session_ttl",
    "api_keys",
    "name",
    "key",
    "permissions",
    "storage",
    "path",
    "activity_retention",
    "classifier",
    "concurrency",
    "providers",
    "kind",
    "url",
    "model",
    "api_key",
    "timeout",
    "max_retries",
    "rate_limit_rpm",
    "max_body_chars",
    "ca_file",
    "proxy",
    "webhook_settings",
    "allow_private",
    "webhooks",
    "events",
    "secret",
    "headers",
    "accounts",
    "imap",
    "host",
    "security",
    "username",
    "password",
    "folders",
    "watch",
    "allowed",
    "create",
    "backlog",
    "poll_interval",
    "retry_delay",
    "provider",
    "rules",
    "when",
    "from",
    "to",
    "subject",
    "header",
    "value",
    "list_id",
    "actions",
    "type",
    "folder",
    "flags",
    "allowed_actions",
    "max_attempts",
    "max_message_bytes",
    "minimum_confidence",
    "review_flag",
    "log_level",
    "dry_run",
    "instructions",
    "bogus",
];

fn scalar() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        any::<u64>().prop_map(|n| json!(n)),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(|f| json!(f)),
        prop_oneof![
            Just("30s"),
            Just("0s"),
            Just("-1s"),
            Just("99999999999d"),
            Just("${UNSET_VAR}"),
            Just("${X:-fallback}"),
            Just("$${"),
            Just("${"),
            Just("all"),
            Just("new"),
            Just("recent:5"),
            Just("since:7d"),
            Just("openai"),
            Just("tls"),
            Just("http://127.0.0.1:1/v1"),
            Just("10.0.0.0/8"),
            Just("::1"),
            Just("INBOX"),
            Just("(["),
            Just("whsec_%%%"),
            Just("read:stats"),
        ]
        .prop_map(|s| json!(s)),
        "\\PC{0,24}".prop_map(|s| json!(s)),
    ]
}

fn tree() -> impl Strategy<Value = Value> {
    tree_with(1)
}

/// Random trees; `odd_keys` is the weight of random keys against known ones
/// (4).
fn tree_with(odd_keys: u32) -> impl Strategy<Value = Value> {
    scalar().prop_recursive(5, 96, 6, move |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::vec(
                (
                    prop_oneof![
                        4 => prop::sample::select(KEYS).prop_map(str::to_string),
                        odd_keys => "\\PC{0,8}",
                    ],
                    inner
                ),
                0..6
            )
            .prop_map(|kv| Value::Object(kv.into_iter().collect())),
        ]
    })
}

/// A problem names where it is: `config:` for the file as a whole, else a
/// path of keys and indexes before the colon. Keys are the file's own, so
/// with random keys the path is only known to be there; with keys the
/// loader knows (`strict`) it must start at a section of the file or be the
/// unknown key itself.
fn names_a_path(problem: &str, strict: bool) -> bool {
    let Some((path, rest)) = mailproc::config::split_problem(problem) else {
        return false;
    };
    if rest.is_empty() || path.is_empty() {
        return false;
    }
    if !strict || path == "config" || rest.starts_with(&format!("unknown field `{path}`")) {
        return true;
    }
    let top = path.split(['.', '[']).next().unwrap_or("");
    KEYS.contains(&top) || (path.starts_with('[') && path.len() > 2)
}

fn check_config_text(text: &str, strict: bool) -> Result<(), TestCaseError> {
    match parse(text, &env) {
        Ok(_) => {}
        Err(e) => {
            prop_assert!(!e.problems.is_empty(), "an error without problems");
            for p in &e.problems {
                prop_assert!(
                    names_a_path(p, strict),
                    "problem names no path: {p:?}\nin:\n{text}"
                );
                // What was expected is said in the file's words, never a
                // Rust type's (an audit: `expected struct ServerConfig`).
                if let Some((_, expected)) = p.rsplit_once(", expected ") {
                    for rust in [
                        "struct ",
                        "enum ",
                        "Value::",
                        "identifier",
                        "u16",
                        "u32",
                        "usize",
                        "f64",
                    ] {
                        prop_assert!(
                            !expected.contains(rust),
                            "a Rust type in {p:?}\nin:\n{text}"
                        );
                    }
                }
            }
        }
    }
    Ok(())
}

const EXAMPLE: &str = include_str!("../config.example.yaml");

proptest! {
    #![proptest_config(ProptestConfig { cases: 1000, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn config_trees_as_yaml_or_json_never_panic_and_name_a_path(t in tree(), as_json in any::<bool>()) {
        let text = if as_json {
            serde_json::to_string(&t).unwrap()
        } else {
            serde_norway::to_string(&t).unwrap()
        };
        check_config_text(&text, false)?;
    }

    #[test]
    fn config_trees_of_known_keys_name_a_path_from_a_section(t in tree_with(0), as_json in any::<bool>()) {
        let text = if as_json {
            serde_json::to_string(&t).unwrap()
        } else {
            serde_norway::to_string(&t).unwrap()
        };
        check_config_text(&text, true)?;
    }

    #[test]
    fn config_rooted_at_known_sections_never_panics(
        section in prop::sample::select(&["server", "dashboard", "storage", "classifier", "webhook_settings", "webhooks", "accounts"][..]),
        body in tree(),
    ) {
        let t = json!({ section: body });
        check_config_text(&serde_norway::to_string(&t).unwrap(), false)?;
    }

    #[test]
    fn the_example_config_cut_or_altered_anywhere_never_panics(
        cut in 0..EXAMPLE.len(),
        at in 0..EXAMPLE.len(),
        insert in "\\PC{0,6}",
    ) {
        let mut bytes = EXAMPLE.as_bytes()[..cut].to_vec();
        let at = at.min(bytes.len());
        bytes.splice(at..at, insert.bytes());
        check_config_text(&String::from_utf8_lossy(&bytes), false)?;
    }
}

// ---------------------------------------------------------------------------
// Model answers
// ---------------------------------------------------------------------------

fn account() -> (Config, AccountConfig) {
    let (c, _) = parse(
        "classifier: { providers: [ { name: p, kind: openai, url: \"http://127.0.0.1:1/v1\", model: m } ] }\n\
         accounts:\n  - name: a\n    imap: { host: 127.0.0.1, username: u, password: p }\n    provider: p\n    \
         folders: { watch: [INBOX], allowed: [Receipts, News] }\n    allowed_actions: [move, flag, read, noop]\n",
        &env,
    )
    .unwrap();
    let a = c.accounts[0].clone();
    (c, a)
}

fn action_value() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(json!({"type": "move", "folder": "Receipts"})),
        Just(json!({"type": "move", "folder": "Trash"})),
        Just(json!({"type": "move", "folder": "INBOX/../Secret"})),
        Just(json!({"type": "delete"})),
        Just(json!({"type": "expunge"})),
        Just(json!({"type": "spam"})),
        Just(json!({"type": "trash"})),
        Just(json!({"type": "read"})),
        Just(json!({"type": "noop"})),
        Just(json!({"type": "flag", "flags": ["\\Deleted"]})),
        Just(json!({"type": "flag", "flags": ["\\Flagged"]})),
        Just(json!({"type": "flag", "flags": ["$Junk"]})),
        Just(json!({"type": "flag", "flags": []})),
        Just(json!({"type": "flag", "flags": ["a b"]})),
        Just(json!({"type": "flag", "flags": ["\\\\Deleted"]})),
        tree(),
    ]
}

fn answer_text() -> impl Strategy<Value = String> {
    let inner = (
        prop::collection::vec(action_value(), 0..4),
        prop_oneof![
            Just(Value::Null),
            any::<f64>().prop_map(|f| json!(f)),
            scalar()
        ],
        prop_oneof![
            Just(Value::Null),
            "\\PC{0,40}".prop_map(|s| json!(s)),
            scalar()
        ],
    )
        .prop_map(|(actions, confidence, reasoning)| {
            json!({"actions": actions, "confidence": confidence, "reasoning": reasoning})
                .to_string()
        });
    (
        "\\PC{0,30}",
        prop_oneof![inner, tree().prop_map(|t| t.to_string()), "\\PC{0,60}"],
        "\\PC{0,30}",
        any::<prop::sample::Index>(),
        any::<bool>(),
    )
        .prop_map(|(before, json, after, cut, truncate)| {
            let text = format!("{before}{json}{after}");
            if truncate {
                let mut i = cut.index(text.len() + 1);
                while !text.is_char_boundary(i) {
                    i -= 1;
                }
                text[..i].to_string()
            } else {
                text
            }
        })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 1000, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn model_answers_never_panic_and_only_allowed_actions_pass(text in answer_text()) {
        let (_, a) = account();
        if let Ok(c) = parse_answer("p", "m", &a, &text) {
            for act in &c.actions {
                prop_assert!(mailproc::actions::check_action(&a, act).is_ok(), "{act:?} passed from {text:?}");
                let s = serde_json::to_string(act).unwrap();
                prop_assert!(!s.contains("Deleted") && !s.contains("delete") && !s.contains("expunge"), "{s}");
            }
            if let Some(conf) = c.confidence {
                prop_assert!((0.0..=1.0).contains(&conf));
            }
            prop_assert!(c.reasoning.chars().count() <= mailproc::classify::MAX_REASONING_CHARS);
        }
    }
}

// ---------------------------------------------------------------------------
// MIME
// ---------------------------------------------------------------------------

const RICH: &str = "From: =?utf-8?B?w4lsaXNl?= <elise@example.org>\r\n\
To: a@example.test, \"B, C\" <b@example.test>\r\nCc: c@example.test\r\n\
Subject: =?utf-8?Q?Caf=C3=A9_=E2=98=95?= and =?iso-8859-1?q?na=EFve?=\r\n\
Message-ID: <rich-1@example.org>\r\nDate: Sat, 21 Nov 2026 10:00:00 +0000\r\n\
MIME-Version: 1.0\r\nContent-Type: multipart/mixed; boundary=\"outer\"\r\n\r\n\
preamble\r\n--outer\r\nContent-Type: multipart/alternative; boundary=inner\r\n\r\n\
--inner\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Transfer-Encoding: quoted-printable\r\n\r\n\
Caf=C3=A9 soft=\r\nbreak =E2=98=95\r\n--inner\r\nContent-Type: text/html; charset=utf-8\r\n\
Content-Transfer-Encoding: base64\r\n\r\nPGh0bWw+PGJvZHk+PCEtLSBpZ25vcmUgcHJldmlvdXMgLS0+PHA+SGk8L3A+PC9ib2R5PjwvaHRtbD4=\r\n\
--inner--\r\n--outer\r\nContent-Type: application/pdf; name=\"ré.pdf\"\r\n\
Content-Disposition: attachment; filename*=utf-8''r%C3%A9%20sum%C3%A9.pdf\r\n\
Content-Transfer-Encoding: base64\r\n\r\nJVBERi0xLjQKJcfsj6IK\r\n--outer\r\n\
Content-Type: message/rfc822\r\n\r\nFrom: x@y\r\nSubject: inner\r\n\r\ninner body\r\n--outer--\r\nepilogue\r\n";

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn mime_cut_altered_or_random_never_panics_and_prompts_stay_bounded(
        cut in 0..=RICH.len(),
        at in 0..RICH.len(),
        insert in prop::collection::vec(any::<u8>(), 0..12),
        random in prop::collection::vec(any::<u8>(), 0..400),
        use_random in any::<bool>(),
    ) {
        let raw = if use_random {
            random
        } else {
            let mut b = RICH.as_bytes()[..cut].to_vec();
            let at = at.min(b.len());
            b.splice(at..at, insert);
            b
        };
        let (c, a) = account();
        if let Some(e) = Email::parse(&raw) {
            prop_assert_eq!(e.size, raw.len());
            let (system, user) = prompt(&a, &c.classifier.providers[0], &e);
            prop_assert!(!system.is_empty());
            prop_assert!(user.chars().count() <= 100_000, "prompt of {} chars", user.chars().count());
        }
    }
}

// ---------------------------------------------------------------------------
// HTTP: the real binary, in open mode (every route reachable)
// ---------------------------------------------------------------------------

fn segment() -> impl Strategy<Value = String> {
    prop_oneof![
        prop::sample::select(
            &[
                "api",
                "activity",
                "stats",
                "export",
                "config",
                "retry",
                "health",
                "metrics",
                "login",
                "logout",
                "setup",
                "accounts",
                "account",
                "static",
                "dashboard",
                "process",
                "pause",
                "resume",
                "1",
                "0",
                "-1",
                "99999999999999999999999",
                "%00",
                "%2F",
                "%ZZ",
                "%",
                "..",
                ".",
                "%2e%2e",
                "a%20b",
                "%F0%9F%92%A5",
                "%C0%AF",
                "acct",
                "webhooks",
                "test",
                "deliveries",
                "users",
                "page",
                "settings",
                "app.css",
            ][..]
        )
        .prop_map(str::to_string),
        "[a-zA-Z0-9%._~-]{0,12}",
    ]
}

fn number() -> impl Strategy<Value = String> {
    prop_oneof![
        any::<i64>().prop_map(|n| n.to_string()),
        any::<u64>().prop_map(|n| n.to_string()),
        Just("1e400".to_string()),
        Just("-0".to_string()),
        Just("0x10".to_string()),
        Just("9".repeat(40)),
        Just(" 3 ".to_string()),
        Just("%2B5".to_string()),
        any::<f64>().prop_map(|f| f.to_string()),
    ]
}

fn query() -> impl Strategy<Value = String> {
    prop::collection::vec(
        (
            prop::sample::select(
                &[
                    "page",
                    "pageSize",
                    "period",
                    "account",
                    "accountName",
                    "format",
                    "startDate",
                    "endDate",
                    "search",
                    "status",
                    "actionType",
                    "id",
                    "x",
                ][..],
            ),
            prop_oneof![
                number(),
                "[ -~]{0,10}".prop_map(|s| s.replace([' ', '#'], "+")),
                segment()
            ],
        ),
        0..5,
    )
    .prop_map(|kv| {
        kv.into_iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join("&")
    })
}

fn request() -> impl Strategy<Value = Vec<u8>> {
    (
        prop_oneof![
            prop::sample::select(
                &["GET", "POST", "PUT", "DELETE", "PATCH", "HEAD", "OPTIONS", "get"][..]
            )
            .prop_map(str::to_string),
            "[A-Z]{1,8}",
        ],
        prop_oneof![
            3 => (
                prop::sample::select(&[
                    "/health", "/metrics", "/login", "/logout", "/api/stats", "/api/activity",
                    "/api/activity/:id/retry", "/api/config", "/api/accounts",
                    "/api/accounts/:name/pause", "/api/accounts/:name/resume",
                    "/api/accounts/:name/reconnect", "/api/accounts/:name/process", "/api/logs",
                    "/api/export", "/api/webhooks/deliveries", "/api/test-webhook", "/",
                    "/activity", "/activity/:id", "/accounts/:name", "/setup", "/static/app.css",
                ][..]),
                prop_oneof![number(), segment()],
            )
                .prop_map(|(route, part)| route
                    .replace(":id", &part)
                    .replace(":name", &part)
                    .trim_start_matches('/')
                    .to_string()),
            1 => prop::collection::vec(segment(), 0..5).prop_map(|s| s.join("/")),
        ],
        prop::option::of(query()),
        prop::collection::vec(
            (
                prop::sample::select(
                    &[
                        "Cookie",
                        "Authorization",
                        "Content-Type",
                        "Origin",
                        "X-Forwarded-For",
                        "Accept",
                        "Referer",
                        "Sec-Fetch-Site",
                        "X-Requested-With",
                    ][..],
                ),
                "[ -~]{0,40}",
            ),
            0..4,
        ),
        prop_oneof![
            Just(Vec::new()),
            tree().prop_map(|t| t.to_string().into_bytes()),
            prop::collection::vec(any::<u8>(), 0..200),
            "[a-zA-Z0-9=&%+]{0,80}".prop_map(String::into_bytes),
        ],
    )
        .prop_map(|(method, path, query, headers, body)| {
            let mut path = format!("/{path}");
            if let Some(q) = query {
                path.push('?');
                path.push_str(&q);
            }
            let mut req =
                format!("{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n");
            for (k, v) in headers {
                req.push_str(&format!("{k}: {}\r\n", v.trim()));
            }
            req.push_str(&format!("Content-Length: {}\r\n\r\n", body.len()));
            let mut bytes = req.into_bytes();
            bytes.extend(body);
            bytes
        })
}

/// Sends one request; the status (0 when the answer was not HTTP).
fn send(port: u16, req: &[u8]) -> (u16, String) {
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    let _ = s.write_all(req);
    let mut got = Vec::new();
    let _ = s.read_to_end(&mut got);
    let text = String::from_utf8_lossy(&got).to_string();
    let status = text
        .strip_prefix("HTTP/1.1 ")
        .and_then(|r| r.get(..3))
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    (status, text)
}

fn req_with(query: &str, body: Vec<u8>) -> mailproc::http::Req {
    mailproc::http::Req {
        method: "GET".into(),
        path: "/api/activity".into(),
        // As the server parses it.
        query: url::form_urlencoded::parse(query.as_bytes())
            .into_owned()
            .collect(),
        headers: Vec::new(),
        body,
        client_ip: std::net::IpAddr::from([127, 0, 0, 1]),
        secure: false,
        scheme: Some("http".into()),
        host: None,
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 3000, failure_persistence: None, ..ProptestConfig::default() })]

    /// The query and body parsers in-process: a 400 names the parameter or
    /// field, anything accepted is in range.
    #[test]
    fn query_and_body_parsers_accept_in_range_or_name_the_field(q in query(), body in prop_oneof![
        tree().prop_map(|t| t.to_string().into_bytes()),
        prop::collection::vec(any::<u8>(), 0..60),
    ]) {
        use mailproc::api::params::{activity_query, json_body};
        let req = req_with(&q, body);
        match activity_query(&req) {
            Ok(a) => {
                prop_assert!(a.page >= 1);
                prop_assert!((1..=100).contains(&a.page_size), "{}", a.page_size);
                prop_assert!(a.start_ms.unwrap_or(0) >= 0 && a.end_ms.unwrap_or(0) >= 0);
            }
            Err(r) => {
                prop_assert_eq!(r.status, 400);
                let text = String::from_utf8_lossy(&r.body).to_string();
                prop_assert!(
                    ["page", "pageSize", "actionType", "status", "search", "startDate", "endDate"]
                        .iter()
                        .any(|k| text.starts_with(&format!("{{\"error\":\"{k}:"))),
                    "{text} for {q:?}"
                );
            }
        }
        #[derive(serde::Deserialize)]
        #[allow(dead_code)]
        struct Login { username: String, password: String }
        if let Err(r) = json_body::<Login>(&req) {
            prop_assert_eq!(r.status, 400);
        }
    }
}

#[test]
fn random_requests_never_panic_a_handler_or_the_server() {
    let m = common::mailproc::Mailproc::start(
        "server: { port: {PORT} }\nstorage: { path: \"{DIR}/mailproc.db\" }\n\
         accounts:\n  - name: acct\n    imap: { host: 127.0.0.1, port: 1, security: none, username: u, password: p }\n",
    );
    let port = m.port;
    let mut runner = proptest::test_runner::TestRunner::new(ProptestConfig {
        cases: 1000,
        failure_persistence: None,
        ..ProptestConfig::default()
    });
    let statuses = std::cell::RefCell::new(std::collections::BTreeMap::new());
    let result = runner.run(&request(), |req| {
        let (status, text) = send(port, &req);
        *statuses.borrow_mut().entry(status).or_insert(0u32) += 1;
        prop_assert!(
            status != 0 && status != 500,
            "{:?}\n-> {}",
            String::from_utf8_lossy(&req),
            &text[..text.len().min(300)]
        );
        Ok(())
    });
    eprintln!("statuses: {:?}", statuses.borrow());
    if let Err(e) = result {
        panic!("{e}\n{}", m.log());
    }
    assert!(!m.log().contains("panicked"), "{}", m.log());
    assert_eq!(
        send(
            port,
            b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
        )
        .0 / 100,
        2
    );
}

// ---------------------------------------------------------------------------
// Regressions found by the properties above
// ---------------------------------------------------------------------------

/// An empty key at the top of the file was reported as
/// `: unknown field ```, naming nothing.
#[test]
fn an_empty_top_level_key_is_named_as_the_file() {
    for text in ["\"\": 1\n", "{\"\": null}"] {
        let e = parse(text, &env).unwrap_err();
        assert!(e.problems[0].starts_with("config: unknown field ``"), "{e}");
    }
}

/// A key that holds `: ` was reported as `: : unknown field`, so the path
/// read as empty; a key with a dot read as two keys. Odd keys are quoted.
#[test]
fn an_odd_key_is_quoted_in_the_path() {
    let e = parse("\": \": null\n", &env).unwrap_err();
    assert!(
        e.problems[0].starts_with("\": \": unknown field `: `"),
        "{e}"
    );
    let e = parse("server:\n  \"a.b\": 1\n", &env).unwrap_err();
    assert!(
        e.problems[0].starts_with("server.\"a.b\": unknown field `a.b`"),
        "{e}"
    );
    let e = parse("server:\n  \"x\\ny\": 1\n", &env).unwrap_err();
    assert!(
        e.problems[0].starts_with("server.\"x\\ny\": unknown field"),
        "{e}"
    );
}

/// A dotted key (`folders.junk: Spam`, a likely slip) could not be taken
/// out of the tree, so reading stopped at it and every other problem of
/// the file went untold (an audit).
#[test]
fn a_dotted_key_hides_no_other_problem() {
    let text = "log_level: loud\nserver: { a.b: 1 }\naccounts:\n  - name: a\n    imap: { host: h, username: u, password: p, port: x }\n    folders.junk: Spam\n  - name: b\n    imap: { host: h, username: u, password: p }\n    \"x\\\"y\": 1\nwebhooks:\n  - url: ftp://x\n";
    let e = parse(text, &env).unwrap_err();
    let all = e.problems.join("\n");
    for wanted in [
        "log_level: ",
        "server.\"a.b\": unknown field",
        "accounts[0].imap.port: invalid type",
        "accounts[0].\"folders.junk\": unknown field",
        "accounts[1].\"x\\\"y\": unknown field",
        "webhooks[0].url: ",
    ] {
        assert!(all.contains(wanted), "{wanted:?} not in:\n{all}");
    }
}

/// A key holding a control character or a direction override is escaped
/// in the path and in the message beside it (a regression audit: the
/// message quoted it raw, so a newline split the problem and an escape
/// sequence reached the terminal), and the rest of the file is still read.
#[test]
fn a_key_that_hides_text_is_escaped_everywhere_in_its_problem() {
    let text = "server: {\"ctl\\u001bz\": 6, \"nl\\nq\": 7, \"rl\\u202ex\": 1}\nlog_level: loud\n";
    let e = parse(text, &env).unwrap_err();
    let all = e.problems.join("\n");
    assert_eq!(e.problems.len(), 4, "{all}");
    for p in &e.problems {
        assert!(
            !p.chars().any(|c| c.is_control() || c == '\u{202e}'),
            "{p:?}"
        );
    }
    for wanted in [
        "server.\"ctl\\u001bz\": unknown field `ctl\\u{1b}z`",
        "server.\"nl\\nq\": unknown field `nl\\nq`",
        "server.\"rl\\u202ex\": unknown field `rl\\u{202e}x`",
        "log_level: ",
    ] {
        assert!(all.contains(wanted), "{wanted:?} not in:\n{all}");
    }
}
