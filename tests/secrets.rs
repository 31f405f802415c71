//! What no request may do, whatever its permissions (issue 20, items 7, 8
//! and 10): read an environment variable, a masked secret or a URL
//! credential, or send a stored secret to a new destination. Every test
//! plays the attacker against the real binary, with a real Dovecot where an
//! account is involved, and looks everywhere a value could come back: the
//! 400 answer, `GET /api/config`, the file, the dashboard's editor, the log
//! and `/api/logs`, activity errors, the export and `error` webhooks.

mod common;

use std::io::{Read, Write};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::dovecot::Dovecot;
use common::hooks::{bodies, receiver};
use common::mail::msg;
use common::mailproc::{Mailproc, Resp};
use common::model::{Model, Reply};
use serde_json::{json, Value};

const TOKEN: &str = "admin-token-0123456789abcdefghij";

/// Values of the service's environment that no answer may contain.
const ENV: &[(&str, &str)] = &[
    ("MAILPROC_TOKEN", TOKEN),
    ("AWS_SECRET_ACCESS_KEY", "aws-secret-Zq81mX0pLw"),
    ("IMAP_PASS", "imap-pass-Xy93kq"),
    ("MODEL_KEY", "sk-model-key-J7hd0a"),
    ("HOOK_SECRET", "hook-secret-uY27tqa9"),
];

/// An edit of the configuration as `GET /api/config` gave it.
type Change<'a> = Box<dyn Fn(&mut Value) + 'a>;

fn put(m: &Mailproc, body: &Value) -> Resp {
    let auth = format!("Bearer {TOKEN}");
    m.request(
        "PUT",
        "/api/config",
        &[("Authorization", &auth)],
        Some(&body.to_string()),
    )
}

fn current(m: &Mailproc) -> Value {
    let r = m.get_with("/api/config", TOKEN);
    assert_eq!(r.status, 200, "{}", r.text);
    r.body
}

fn file(m: &Mailproc) -> String {
    std::fs::read_to_string(&m.config_path).unwrap()
}

fn problems(r: &Resp) -> Vec<String> {
    r.body["problems"]
        .as_array()
        .unwrap_or_else(|| panic!("no problems in {} {}", r.status, r.text))
        .iter()
        .map(|p| p.as_str().unwrap().to_string())
        .collect()
}

/// Panics when `text` (named `what`) holds any of `secrets`.
fn assert_clean(what: &str, text: &str, secrets: &[&str]) {
    for s in secrets {
        assert!(!text.contains(s), "{what} contains {s:?}:\n{text}");
    }
}

/// A loopback listener standing for a host of the attacker's: it greets
/// like an IMAP server (harmless for HTTP clients) and keeps every byte
/// any connection sends it.
struct Trap {
    port: u16,
    got: Arc<Mutex<Vec<u8>>>,
}

impl Trap {
    fn start() -> Trap {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        let got = Arc::new(Mutex::new(Vec::new()));
        let g = got.clone();
        std::thread::spawn(move || {
            for mut c in l.incoming().flatten() {
                let g = g.clone();
                std::thread::spawn(move || {
                    let _ = c.set_read_timeout(Some(Duration::from_secs(5)));
                    let _ = c.write_all(b"* OK IMAP4rev1 ready\r\n");
                    let mut buf = [0u8; 4096];
                    while let Ok(n) = c.read(&mut buf) {
                        if n == 0 {
                            break;
                        }
                        g.lock().unwrap().extend_from_slice(&buf[..n]);
                        // An IMAP client waits for an answer to each line.
                        let _ = c.write_all(b"* CAPABILITY IMAP4rev1\r\na1 OK\r\n");
                    }
                });
            }
        });
        Trap { port, got }
    }

    fn got(&self) -> String {
        String::from_utf8_lossy(&self.got.lock().unwrap()).into_owned()
    }
}

/// An account on Dovecot signed in as `test` with `password` (`secret`,
/// or `${IMAP_PASS}` for user `probe`), a scripted model as its provider
/// (key `api_key`), and `extra` YAML at the top level.
fn config(d: &Dovecot, model: &Model, password: &str, api_key: &str, extra: &str) -> String {
    let user = if password == "${IMAP_PASS}" {
        d.add_user("probe", "imap-pass-Xy93kq");
        "probe"
    } else {
        "test"
    };
    format!(
        "server: {{ port: {{PORT}}, auth_token: \"${{MAILPROC_TOKEN}}\" }}\n\
         storage: {{ path: \"{{DIR}}/mailproc.db\" }}\n\
         webhook_settings: {{ allow_private: [\"127.0.0.1/32\"] }}\n\
         classifier:\n  providers:\n    - {{ name: llm, kind: openai, url: \"{}\", model: m, api_key: \"{api_key}\", max_retries: 0 }}\n\
         accounts:\n  - name: acct\n    imap: {{ host: 127.0.0.1, port: {}, security: none, username: {user}, password: \"{password}\" }}\n    \
         provider: llm\n    folders: {{ allowed: [Receipts] }}\n    max_attempts: 1\n{extra}",
        model.url(),
        d.imap_port
    )
}

fn quiet_model() -> Model {
    Model::start(1, |_| common::model::answer(json!([]), "nothing to do"))
}

fn env() -> Vec<(&'static str, &'static str)> {
    ENV.to_vec()
}

fn env_values() -> Vec<&'static str> {
    ENV.iter().map(|(_, v)| *v).collect()
}

/// Item 7: `${NAME}` written through the API is refused before it is
/// looked up, so no answer, file, page or log line ever holds the value;
/// references the file has keep working.
#[test]
fn no_environment_variable_can_be_read_through_the_api() {
    let d = Dovecot::start();
    let model = quiet_model();
    let m = Mailproc::start_with_env(
        &config(&d, &model, "${IMAP_PASS}", "${MODEL_KEY}", ""),
        &env(),
    );
    let before = file(&m);
    let c = current(&m);
    // The issue's probes: any variable, at keys whose problems quote the
    // value, at secrets, at a new account's password.
    let probes: Vec<(&str, Change)> = vec![
        (
            "server.bind",
            Box::new(|c| c["server"]["bind"] = json!("${MAILPROC_TOKEN}")),
        ),
        (
            "server.port",
            Box::new(|c| c["server"]["port"] = json!("${AWS_SECRET_ACCESS_KEY}")),
        ),
        (
            "accounts[0].imap.host",
            Box::new(|c| c["accounts"][0]["imap"]["host"] = json!("${IMAP_PASS}")),
        ),
        (
            "accounts[0].folders.watch[0]",
            Box::new(|c| c["accounts"][0]["folders"]["watch"] = json!(["${HOOK_SECRET}"])),
        ),
        (
            "dashboard.api_keys[0].key",
            Box::new(|c| {
                c["dashboard"] = json!({ "api_keys": [
                    { "name": "k", "key": "${AWS_SECRET_ACCESS_KEY}", "permissions": ["*"] }
                ] })
            }),
        ),
        (
            "accounts[1].imap.password",
            Box::new(|c| {
                let mut other = c["accounts"][0].clone();
                other["name"] = json!("other");
                other["imap"]["password"] = json!("${AWS_SECRET_ACCESS_KEY}");
                c["accounts"].as_array_mut().unwrap().push(other);
            }),
        ),
        (
            "webhooks[0].headers.Authorization",
            Box::new(|c| {
                c["webhooks"] = json!([{ "url": "https://hooks.example.com/x",
                    "headers": { "Authorization": "Bearer ${AWS_SECRET_ACCESS_KEY}" } }])
            }),
        ),
    ];
    for (key, probe) in &probes {
        let mut body = c.clone();
        probe(&mut body);
        let r = put(&m, &body);
        assert_eq!(r.status, 400, "{key}: {}", r.text);
        assert_clean(key, &r.text, &env_values());
        let p = problems(&r);
        assert!(
            p.iter().any(|p| p.starts_with(&format!("{key}: "))
                && p.contains("references cannot be added or changed through the API")),
            "{key}: {p:#?}"
        );
    }
    assert_eq!(file(&m), before, "nothing was written");

    // A guess at a value comes back as written, right or wrong (an audit:
    // a right one came back as its reference, `folder "${MAILPROC_TOKEN}"`,
    // so one request could try a thousand guesses at any secret of the
    // file).
    let guess = |folder: &str| {
        let mut body = c.clone();
        body["accounts"][0]["rules"] = json!([{ "name": "g", "when": { "subject": "x" },
            "actions": [{ "type": "move", "folder": folder }] }]);
        let r = put(&m, &body);
        assert_eq!(r.status, 400, "{}", r.text);
        let p = problems(&r).join("\n");
        assert!(p.contains(&format!("folder \"{folder}\"")), "{p}");
        p.replace(folder, "GUESS")
    };
    let wrong = guess("not-a-secret-0123456789");
    for secret in [TOKEN, "imap-pass-Xy93kq"] {
        assert_eq!(guess(secret), wrong);
    }
    // Nor as a key whose name reads as a path inside the password's key
    // (a second audit: `password.${IMAP_PASS}` came back for a right one).
    // (and a third: `password: ${IMAP_PASS}` for a key `password: GUESS`).
    for shape in ["password.{}", "password: {}", "x{}y"] {
        let key_guess = |g: &str| {
            let mut body = c.clone();
            body["accounts"][0]["imap"][shape.replace("{}", g)] = json!(1);
            let r = put(&m, &body);
            assert_eq!(r.status, 400, "{}", r.text);
            problems(&r).join("\n").replace(g, "GUESS")
        };
        assert_eq!(
            key_guess("imap-pass-Xy93kq"),
            key_guess("wrong-0123456789"),
            "{shape}"
        );
    }
    assert_eq!(file(&m), before, "nothing was written");

    // The dashboard's editor takes the same path.
    let mut s = Session::log_in(&m);
    let page = s.get("/config");
    let yaml = textarea(&page.text).replacen(
        "server:\n",
        "server:\n  bind: ${MAILPROC_TOKEN}\n  public_url: ${AWS_SECRET_ACCESS_KEY}\n",
        1,
    );
    assert!(yaml.contains("bind: ${MAILPROC_TOKEN}"), "{yaml}");
    let r = s.post_form("/config", &[("yaml", &yaml)]);
    assert_eq!(r.status, 400, "{}", r.text);
    assert!(
        r.text.contains("server.bind: ${NAME} references"),
        "{}",
        r.text
    );
    assert_clean("the editor's answer", &r.text, &env_values());
    assert_eq!(file(&m), before);

    // References the file has are kept, and still work: the account signs
    // in with ${IMAP_PASS} after a change that keeps its destination.
    let mut c = current(&m);
    c["accounts"][0]["poll_interval"] = json!("45s");
    let logins = || m.log().matches("connected to 127.0.0.1").count();
    let before = logins();
    let r = put(&m, &c);
    assert_eq!(r.status, 200, "{}", r.text);
    assert!(file(&m).contains("${IMAP_PASS}") && file(&m).contains("${MODEL_KEY}"));
    // The changed account is restarted: a new sign-in, with the password
    // the reference still gives.
    m.wait_for(Duration::from_secs(30), "acct signed in again", || {
        let h = m.get("/health");
        (logins() > before && h.body["accounts"]["acct"] == "connected").then_some(())
    });

    // Nothing anywhere holds a value.
    assert_clean(
        "GET /api/config",
        &m.get_with("/api/config", TOKEN).text,
        &env_values(),
    );
    assert_clean(
        "/api/logs",
        &m.get_with("/api/logs?limit=2000&level=trace", TOKEN).text,
        &env_values(),
    );
    assert_clean("the log", &m.log(), &env_values());
    assert_clean("the file", &file(&m), &env_values());

    // A password written in full where its reference was is a change,
    // whether or not it is the variable's value: the account restarts
    // either way (an audit found `restarted` empty for the right value,
    // a yes to the guess).
    for guess in ["imap-pass-Xy93kq", "a-wrong-guess-0123"] {
        let mut c = current(&m);
        c["accounts"][0]["imap"]["password"] = json!(guess);
        let r = put(&m, &c);
        assert_eq!(r.status, 200, "{}", r.text);
        assert_eq!(r.body["restarted"], json!(["acct"]), "{guess}: {}", r.text);
    }
}

/// Item 7, the file's side: what a broken file's problems say (SIGHUP in
/// the log and `/api/logs`, `check-config` on standard error) quotes the
/// text as written, not what its variables hold.
#[test]
fn a_broken_file_is_reported_without_its_variables() {
    let yaml = |bind: &str| {
        format!(
            "server: {{ port: {{PORT}}, auth_token: \"${{MAILPROC_TOKEN}}\", bind: \"{bind}\" }}\n\
             storage: {{ path: \"{{DIR}}/mailproc.db\" }}\n\
             accounts:\n  - name: a\n    provider: \"${{MODEL_KEY}}\"\n    \
             imap: {{ host: 127.0.0.1, port: 9, security: none, username: u, password: p }}\n"
        )
    };
    let mut m = Mailproc::start_with_env(
        "server: { port: {PORT}, auth_token: \"${MAILPROC_TOKEN}\" }\nstorage: { path: \"{DIR}/mailproc.db\" }\n",
        &env(),
    );
    m.write_config(&yaml("${AWS_SECRET_ACCESS_KEY}"));
    m.signal("HUP");
    m.wait_for(Duration::from_secs(10), "the reload refused", || {
        m.log()
            .contains("the running configuration is kept")
            .then_some(())
    });
    let log = m.log();
    assert!(
        log.contains("server.bind: expected an IP address such as 127.0.0.1, got \"${AWS_SECRET_ACCESS_KEY}\""),
        "{log}"
    );
    assert!(
        log.contains("accounts[0].provider: no provider named \"${MODEL_KEY}\""),
        "{log}"
    );
    assert_clean("the log", &log, &env_values());
    assert_clean(
        "/api/logs",
        &m.get_with("/api/logs?limit=2000&level=trace", TOKEN).text,
        &env_values(),
    );
    let (code, out, err) = m.run_cli(&["check-config"], "");
    assert_eq!(code, 1, "{out}{err}");
    assert!(err.contains("got \"${AWS_SECRET_ACCESS_KEY}\""), "{err}");
    assert_clean("check-config", &format!("{out}{err}"), &env_values());
}

/// Item 8, IMAP: the stored password (masked or a reference) does not
/// follow the account to another host, port, security or CA.
#[test]
fn an_imap_password_does_not_follow_a_new_server() {
    let d = Dovecot::start();
    let model = quiet_model();
    let trap = Trap::start();
    let m = Mailproc::start_with_env(&config(&d, &model, "secret", "sk-literal", ""), &env());
    let before = file(&m);
    let c = current(&m);
    assert_eq!(c["accounts"][0]["imap"]["password"], "********");
    for (key, value) in [
        ("port", json!(trap.port)),
        ("host", json!("localhost")),
        ("security", json!("starttls")),
    ] {
        let mut body = c.clone();
        body["accounts"][0]["imap"][key] = value;
        let r = put(&m, &body);
        assert_eq!(r.status, 400, "imap.{key}: {}", r.text);
        assert_eq!(
            problems(&r),
            [format!(
                "accounts[0].imap.password: imap.{key} changed, and a stored secret does not \
                 follow a new destination; write the value in full"
            )]
        );
    }
    assert_eq!(file(&m), before);

    // Given again, the new destination gets what was given, never the
    // stored password.
    let mut body = c.clone();
    body["accounts"][0]["imap"]["port"] = json!(trap.port);
    body["accounts"][0]["imap"]["password"] = json!("typed-again-42");
    let r = put(&m, &body);
    assert_eq!(r.status, 200, "{}", r.text);
    m.wait_for(Duration::from_secs(30), "a LOGIN at the trap", || {
        trap.got().contains("typed-again-42").then_some(())
    });
    assert!(!trap.got().contains("secret"), "{}", trap.got());
}

/// Item 8, the model provider and OAuth2: a key does not follow a new URL,
/// proxy or CA; a client secret and a refresh token do not follow a new
/// token endpoint or IMAP server.
#[test]
fn provider_keys_and_oauth2_tokens_do_not_follow_new_urls() {
    let d = Dovecot::start();
    let model = quiet_model();
    let trap = Trap::start();
    let oauth = format!(
        "  - name: cloud\n    imap: {{ host: 127.0.0.1, port: {}, security: none, username: test, auth: oauth2, \
         oauth2: {{ token_url: \"http://127.0.0.1:{}/token\", client_id: cid, client_secret: client-secret-77, refresh_token: refresh-token-88 }} }}\n",
        d.imap_port,
        common::mailproc::free_port()
    );
    let m = Mailproc::start_with_env(
        &config(&d, &model, "secret", "sk-literal-66", &oauth),
        &env(),
    );
    let before = file(&m);
    let c = current(&m);
    let trap_url = format!("http://127.0.0.1:{}/v1/chat/completions", trap.port);
    let cases: Vec<(Change, Vec<&str>)> = vec![
        (
            Box::new(|c| c["classifier"]["providers"][0]["url"] = json!(trap_url)),
            vec!["classifier.providers[0].api_key: url changed"],
        ),
        (
            Box::new(|c| {
                c["classifier"]["providers"][0]["proxy"] =
                    json!(format!("http://127.0.0.1:{}", trap.port))
            }),
            vec!["classifier.providers[0].api_key: proxy changed"],
        ),
        (
            Box::new(|c| {
                c["accounts"][1]["imap"]["oauth2"]["token_url"] =
                    json!(format!("http://127.0.0.1:{}/token", trap.port))
            }),
            vec![
                "accounts[1].imap.oauth2.client_secret: imap.oauth2.token_url changed",
                "accounts[1].imap.oauth2.refresh_token: imap.oauth2.token_url changed",
            ],
        ),
        (
            // The access token the refresh token buys would go there.
            Box::new(|c| c["accounts"][1]["imap"]["port"] = json!(trap.port)),
            vec![
                "accounts[1].imap.oauth2.client_secret: imap.port changed",
                "accounts[1].imap.oauth2.refresh_token: imap.port changed",
            ],
        ),
    ];
    for (change, want) in &cases {
        let mut body = c.clone();
        change(&mut body);
        let r = put(&m, &body);
        assert_eq!(r.status, 400, "{want:?}: {}", r.text);
        let p = problems(&r);
        assert_eq!(p.len(), want.len(), "{p:#?}");
        for (p, w) in p.iter().zip(want) {
            assert!(p.starts_with(w), "{p} / {w}");
        }
    }
    assert_eq!(file(&m), before);
    assert_clean(
        "the trap",
        &trap.got(),
        &["sk-literal-66", "client-secret-77", "refresh-token-88"],
    );
}

/// Item 8: provider and token URLs set through the API pass the webhooks'
/// outgoing-address policy, which the API cannot widen.
#[test]
fn new_outgoing_urls_pass_the_ssrf_guard_and_allow_private_stays_the_files() {
    // No account uses the provider: nothing here ever connects anywhere.
    let m = Mailproc::start_with_env(
        "server: { port: {PORT}, auth_token: \"${MAILPROC_TOKEN}\" }\nstorage: { path: \"{DIR}/mailproc.db\" }\n\
         webhook_settings: { allow_private: [\"127.0.0.1/32\"] }\n\
         classifier:\n  providers:\n    - { name: llm, kind: openai, url: \"http://127.0.0.1:9/v1/chat/completions\", model: m }\n",
        &env(),
    );
    let before = file(&m);
    let c = current(&m);
    let cases: Vec<(Change, &str)> = vec![
        (
            Box::new(|c| {
                c["classifier"]["providers"][0]["url"] = json!("http://169.254.169.254/latest")
            }),
            "classifier.providers[0].url: refused: 169.254.169.254 is",
        ),
        (
            Box::new(|c| c["classifier"]["providers"][0]["url"] = json!("http://[::1]:9/v1")),
            "classifier.providers[0].url: refused: ::1 is",
        ),
        (
            Box::new(|c| {
                c["classifier"]["providers"][0]["proxy"] = json!("http://10.20.30.40:3128")
            }),
            "classifier.providers[0].proxy: refused: 10.20.30.40 is",
        ),
        (
            Box::new(|c| {
                c["webhook_settings"]["allow_private"] = json!(["127.0.0.1/32", "10.0.0.0/8"])
            }),
            "webhook_settings.allow_private[1]: \"10.0.0.0/8\" is not in the file's list",
        ),
    ];
    for (change, want) in &cases {
        let mut body = c.clone();
        change(&mut body);
        let r = put(&m, &body);
        assert_eq!(r.status, 400, "{want}: {}", r.text);
        let p = problems(&r);
        assert!(p.iter().any(|p| p.starts_with(want)), "{want}: {p:#?}");
    }
    // A name that does not resolve (here: lookups are off, nothing leaves
    // the machine) is refused for what it is, not as a private address.
    let mut body = c.clone();
    body["classifier"]["providers"][0]["url"] = json!("https://api.example.com/v1");
    let r = put(&m, &body);
    assert_eq!(r.status, 400, "{}", r.text);
    let p = problems(&r);
    assert!(
        p[0].starts_with("classifier.providers[0].url: cannot resolve api.example.com")
            && p[0].contains("its host must resolve")
            && !p[0].contains("allow_private"),
        "{p:#?}"
    );
    assert_eq!(file(&m), before);
    // What the file allows stays allowed, and narrowing is fine.
    let mut body = c.clone();
    body["classifier"]["providers"][0]["url"] = json!("http://127.0.0.1:10/v1/chat/completions");
    assert_eq!(put(&m, &body).status, 200);
    // The same range written another way, or a range inside the file's, is
    // no wider (an audit found `127.0.0.1` refused as widening
    // `127.0.0.0/8`); one a bit wider is refused.
    body["webhook_settings"]["allow_private"] = json!(["127.0.0.1"]);
    let r = put(&m, &body);
    assert_eq!(r.status, 200, "{}", r.text);
    body["webhook_settings"]["allow_private"] = json!(["127.0.0.0/31"]);
    let r = put(&m, &body);
    assert_eq!(r.status, 400, "{}", r.text);
    body["webhook_settings"]["allow_private"] = json!([]);
    let r = put(&m, &body);
    assert_eq!(r.status, 200, "{}", r.text);
}

/// Item 8: a webhook's headers and secret belong to its exact URL, even
/// when another URL masks the same way.
#[test]
fn webhook_secrets_stay_with_their_exact_url() {
    let m = Mailproc::start_with_env(
        "server: { port: {PORT}, auth_token: \"${MAILPROC_TOKEN}\" }\nstorage: { path: \"{DIR}/mailproc.db\" }\n\
         webhooks:\n  - url: \"https://hooks.example.com/services/T000AAAA1111BBBB2222\"\n    \
         headers: { Authorization: \"Bearer literal-hook-token-31\" }\n    secret: \"whsec_c2VjcmV0LWhvb2stc2VjcmV0\"\n",
        &env(),
    );
    let c = current(&m);
    assert_eq!(
        c["webhooks"][0]["url"],
        "https://hooks.example.com/services/********"
    );
    let mut body = c.clone();
    body["webhooks"][0]["url"] = json!("https://hooks.example.com/services/T999ZZZZ8888YYYY7777");
    let r = put(&m, &body);
    assert_eq!(r.status, 400, "{}", r.text);
    let p = problems(&r);
    assert!(
        p[0].starts_with(
            "webhooks[0].headers.Authorization: reads ******** but there is no stored value"
        ),
        "{p:#?}"
    );
    // The secret that cannot be kept is told once: not also refused as the
    // mask it still reads (`must be at least 16 characters`, an audit).
    assert_eq!(
        p.iter()
            .filter(|x| x.starts_with("webhooks[0].secret: "))
            .count(),
        1,
        "{p:#?}"
    );
    assert!(!p.iter().any(|x| x.contains("at least 16")), "{p:#?}");
    // Its path as every problem's (an odd header name quoted), and the
    // problem of a header whose name begins the same still told (a
    // regression audit: `headers.A: b` hid `headers.A`).
    let mut odd = c.clone();
    odd["webhooks"][0]["url"] = json!("https://hooks.example.com/services/T999ZZZZ8888YYYY7777");
    odd["webhooks"][0]["headers"] = json!({"A: b": "********", "A": "bad\u{1}v"});
    let r = put(&m, &odd);
    assert_eq!(r.status, 400, "{}", r.text);
    let p = problems(&r);
    assert!(
        p.iter()
            .any(|x| x.starts_with("webhooks[0].headers.\"A: b\": reads ********")),
        "{p:#?}"
    );
    assert!(
        p.iter().any(|x| x.starts_with("webhooks[0].headers.A: ")),
        "{p:#?}"
    );
    // As shown, it is the same hook: kept.
    assert_eq!(put(&m, &c).status, 200);
    assert!(file(&m).contains("literal-hook-token-31"));
}

/// Item 10: credentials in URLs (a proxy's password, a provider URL's
/// user-info and `?key=`) are masked wherever a URL is shown.
#[test]
fn url_credentials_are_masked_everywhere_they_are_shown() {
    let d = Dovecot::start();
    // A model that answers something else than a chat completion: the
    // error quotes the provider's URL.
    let model = Model::start(1, |_| Reply::Garbage);
    let (hook_port, hooks) = receiver();
    let secrets = ["urlpass-41", "urlkey-42", "proxypass-43"];
    let yaml = format!(
        "server: {{ port: {{PORT}}, auth_token: \"${{MAILPROC_TOKEN}}\" }}\n\
         storage: {{ path: \"{{DIR}}/mailproc.db\" }}\n\
         webhook_settings: {{ allow_private: [\"127.0.0.1/32\"] }}\n\
         webhooks: [ {{ url: \"http://127.0.0.1:{hook_port}/hook\", events: [error] }} ]\n\
         classifier:\n  providers:\n    - {{ name: llm, kind: openai, max_retries: 0, model: m, \
         url: \"http://urluser:urlpass-41@127.0.0.1:{port}/v1/chat/completions?key=urlkey-42&api-version=1\" }}\n\
         \x20   - {{ name: spare, kind: openai, model: m, url: \"https://api.example.com/v1/chat/completions\", \
         proxy: \"http://proxyuser:proxypass-43@proxy.example.com:3128\" }}\n\
         accounts:\n  - name: acct\n    imap: {{ host: 127.0.0.1, port: {imap}, security: none, username: test, password: secret }}\n    \
         provider: llm\n    backlog: all\n    max_attempts: 1\n",
        port = model.port,
        imap = d.imap_port
    );
    let m = Mailproc::start_with_env(&yaml, &env());
    d.seed("test", "INBOX", &msg("u1", "Hello"));
    let entry = m.wait_for(Duration::from_secs(30), "a failed entry", || {
        let r = m.get_with("/api/activity", TOKEN);
        let e = r.body["entries"][0].clone();
        e["error"].as_str().is_some().then_some(e)
    });
    let error = entry["error"].as_str().unwrap();
    assert!(
        error.contains("does url http://urluser:********@127.0.0.1"),
        "{error}"
    );
    m.wait_for(Duration::from_secs(15), "the error webhook", || {
        bodies(&hooks)
            .iter()
            .any(|b| b["event"] == "error")
            .then_some(())
    });
    let c = m.get_with("/api/config", TOKEN);
    assert_eq!(
        c.body["classifier"]["providers"][1]["proxy"],
        "http://proxyuser:********@proxy.example.com:3128/"
    );
    for (what, text) in [
        ("GET /api/config", c.text),
        ("GET /api/activity", m.get_with("/api/activity", TOKEN).text),
        (
            "GET /api/export",
            m.get_with("/api/export?format=csv", TOKEN).text,
        ),
        ("GET /api/accounts", m.get_with("/api/accounts", TOKEN).text),
        (
            "/api/logs",
            m.get_with("/api/logs?limit=2000&level=trace", TOKEN).text,
        ),
        ("the log", m.log()),
        (
            "the webhooks",
            serde_json::to_string(&bodies(&hooks)).unwrap(),
        ),
    ] {
        assert_clean(what, &text, &secrets);
    }
    // The provider was really asked.
    assert!(model.count() >= 1);
}

// ---------------------------------------------------------------------------
// A dashboard session, as a browser keeps it
// ---------------------------------------------------------------------------

struct Session<'a> {
    m: &'a Mailproc,
    cookie: String,
    csrf: String,
}

impl<'a> Session<'a> {
    fn log_in(m: &'a Mailproc) -> Session<'a> {
        let (code, out, err) = m.run_cli(&["set-password", "admin"], "correct horse battery\n");
        assert_eq!(code, 0, "{out}{err}");
        let r = m.post(
            "/login",
            r#"{"username":"admin","password":"correct horse battery"}"#,
        );
        assert_eq!(r.status, 200, "{}", r.text);
        let cookie = r
            .header("set-cookie")
            .unwrap()
            .split(';')
            .next()
            .unwrap()
            .to_string();
        let mut s = Session {
            m,
            cookie,
            csrf: String::new(),
        };
        let page = s.get("/config").text;
        let (_, rest) = page
            .split_once("name=\"_csrf\" value=\"")
            .expect("a CSRF field");
        s.csrf = rest.split('"').next().unwrap().to_string();
        s
    }

    fn get(&mut self, path: &str) -> Resp {
        self.m
            .request("GET", path, &[("Cookie", self.cookie.as_str())], None)
    }

    fn post_form(&mut self, path: &str, fields: &[(&str, &str)]) -> Resp {
        let mut all = vec![("_csrf", self.csrf.as_str())];
        all.extend_from_slice(fields);
        let body = url::form_urlencoded::Serializer::new(String::new())
            .extend_pairs(all)
            .finish();
        let origin = format!("http://127.0.0.1:{}", self.m.port);
        self.m.request(
            "POST",
            path,
            &[
                ("Cookie", self.cookie.as_str()),
                ("Origin", origin.as_str()),
                ("Content-Type", "application/x-www-form-urlencoded"),
            ],
            Some(&body),
        )
    }
}

fn textarea(page: &str) -> String {
    let (_, rest) = page.split_once("<textarea").expect("a textarea");
    let (_, rest) = rest.split_once('>').unwrap();
    let (text, _) = rest.split_once("</textarea>").unwrap();
    text.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&#39;", "'")
        .replace("&amp;", "&")
}

/// Found by the second regression audit (stop 59): masking ids as short
/// as Slack's `B0ABCDEFG` made two hooks of one workspace (the same
/// events) read alike, and the configuration could not be saved back as
/// it was read (400, ambiguous). Their 24-character tokens are masked,
/// their ids not: the round trip keeps both, percent-encoded masks too,
/// and after a restart.
#[test]
fn two_hooks_of_one_workspace_round_trip() {
    const ACCOUNTS_KEY: &str = "mpk_accounts_only_0123456789abcdef";
    let a = "https://hooks.example.com/services/T0ABCDEFG/B0ABCDEFG/QwErTyUiOpAsDfGhJkLzXcVb";
    let b = "https://hooks.example.com/services/T0ABCDEFG/B0HIJKLMN/ZxCvBnMaSdFgHjKlQwErTyUi";
    let mut m = Mailproc::start_with_env(
        &format!(
            "server: {{ port: {{PORT}}, auth_token: \"${{MAILPROC_TOKEN}}\" }}\n\
             storage: {{ path: \"{{DIR}}/mailproc.db\" }}\nwebhooks:\n  \
             - {{ url: \"{a}\", events: [error], secret: \"first-hook-secret-0123456789\" }}\n  \
             - {{ url: \"{b}\", events: [error], secret: \"other-hook-secret-0123456789\" }}\n\
             dashboard:\n  api_keys:\n    \
             - {{ name: ops, key: \"{ACCOUNTS_KEY}\", permissions: [\"write:accounts\", \"read:config\"] }}\n"
        ),
        &env(),
    );
    let c = current(&m);
    assert_eq!(
        c["webhooks"][0]["url"],
        "https://hooks.example.com/services/T0ABCDEFG/B0ABCDEFG/********"
    );
    assert_eq!(
        c["webhooks"][1]["url"],
        "https://hooks.example.com/services/T0ABCDEFG/B0HIJKLMN/********"
    );
    let before = file(&m);
    let r = put(&m, &c);
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(file(&m), before, "nothing changed");
    // Percent-encoded, as a URL library may send it: still the mask (taken
    // for text, it replaced the token; the third regression audit).
    let mut encoded = c.clone();
    encoded["webhooks"][0]["url"] = json!(c["webhooks"][0]["url"]
        .as_str()
        .unwrap()
        .replace("********", "%2A%2A%2A%2A%2A%2A%2A%2A"));
    let r = put(&m, &encoded);
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(file(&m), before, "the tokens kept");
    // So for a key that may change the accounts only, which sends the
    // rest back as read: the webhooks unchanged (it was refused 403, as
    // a change to them; the fifth regression audit).
    let auth = format!("Bearer {ACCOUNTS_KEY}");
    let mut accounts_only = encoded.clone();
    accounts_only["accounts"] = json!([]);
    let r = m.request(
        "PUT",
        "/api/config",
        &[("Authorization", &auth)],
        Some(&accounts_only.to_string()),
    );
    assert_eq!(r.status, 200, "{}", r.text);
    assert!(
        file(&m).contains(a) && file(&m).contains(b),
        "the tokens kept"
    );
    let r = put(&m, &c);
    assert_eq!(r.status, 200, "{}", r.text);
    let before = file(&m);
    // What was read before a restart still saves after it.
    m.restart();
    assert_eq!(current(&m), c);
    let r = put(&m, &c);
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(file(&m), before);
}
