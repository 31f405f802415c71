//! Who may do what, against the real binary (issue 20, items 9, 11 and
//! 12): changing the configuration is its own permission, a `read:stats`
//! key sees no connection detail, a login's `next` never leaves the site,
//! and forwarded headers are believed only from proxies the operator named,
//! never in open mode (DNS rebinding), also as headless Chromium plays it.

mod common;

use std::io::{Read, Write};
use std::net::TcpListener;
use std::time::Duration;

use common::mailproc::{Mailproc, Resp};
use serde_json::{json, Value};

const TOKEN: &str = "server-token-0123456789";
const STATS_KEY: &str = "stats-key-0123456789";
const READ_CONFIG_KEY: &str = "read-config-key-0123456789";
const READ_ALL_KEY: &str = "read-all-key-0123456789";
const WRITE_ACCOUNTS_KEY: &str = "write-accounts-0123456789";
/// A key's default (`read:stats`) and `write:accounts`.
const ACCOUNTS_EDITOR_KEY: &str = "accounts-editor-0123456789";
const WRITE_CONFIG_KEY: &str = "write-config-key-0123456789";
/// `write:accounts` and `read:config`: reads the whole (masked) file.
const READING_EDITOR_KEY: &str = "reading-editor-0123456789";
const WRITE_ALL_KEY: &str = "write-all-key-0123456789";
const STAR_KEY: &str = "star-key-0123456789abc";

fn secured() -> Mailproc {
    Mailproc::start(&format!(
        r#"
server: {{ port: {{PORT}}, auth_token: {TOKEN} }}
storage: {{ path: "{{DIR}}/mailproc.db" }}
dashboard:
  api_keys:
    - {{ name: stats, key: {STATS_KEY} }}
    - {{ name: readconfig, key: {READ_CONFIG_KEY}, permissions: [read:config] }}
    - {{ name: readall, key: {READ_ALL_KEY}, permissions: ["read:*"] }}
    - {{ name: writeaccounts, key: {WRITE_ACCOUNTS_KEY}, permissions: [write:accounts] }}
    - {{ name: editor, key: {ACCOUNTS_EDITOR_KEY}, permissions: [read:stats, write:accounts] }}
    - {{ name: writeconfig, key: {WRITE_CONFIG_KEY}, permissions: [write:config] }}
    - {{ name: readingeditor, key: {READING_EDITOR_KEY}, permissions: [read:config, write:accounts] }}
    - {{ name: writeall, key: {WRITE_ALL_KEY}, permissions: ["write:*"] }}
    - {{ name: star, key: {STAR_KEY}, permissions: ["*"] }}
classifier:
  providers:
    - {{ name: llm, kind: openai, url: "https://llm.internal.example/v1/chat/completions?key=k", model: m, proxy: "http://pu:pp@proxy.internal.example:3128" }}
webhooks: [ {{ url: "https://hooks.internal.example/x", headers: {{ X-Tenant: acme }}, events: [email_processed] }} ]
accounts:
  - name: personal
    imap: {{ host: 127.0.0.1, port: 9, security: none, username: me@internal.example, password: p }}
    provider: llm
    folders: {{ watch: [INBOX], allowed: [Receipts] }}
    rules: [ {{ name: bills, when: {{ from: "@billing\\.internal\\.example$" }}, actions: [ {{ type: read }} ] }} ]
"#
    ))
}

fn put_with(m: &Mailproc, key: &str, body: &Value) -> Resp {
    let auth = format!("Bearer {key}");
    m.request(
        "PUT",
        "/api/config",
        &[("Authorization", &auth)],
        Some(&body.to_string()),
    )
}

/// Item 9: `write:config` changes the configuration; `write:accounts`
/// (which SPEC §4 names for `PUT /api/config`) changes its accounts only,
/// and runs them; the whole configuration needs `read:config`.
#[test]
fn changing_the_configuration_needs_write_config() {
    let m = secured();
    let full = m.get_with("/api/config", TOKEN).body;
    // write:accounts cannot add a "*" key for itself...
    let mut escalate = full.clone();
    escalate["dashboard"]["api_keys"]
        .as_array_mut()
        .unwrap()
        .push(json!({ "name": "mine", "key": "attacker-key-0123456789", "permissions": ["*"] }));
    let r = put_with(&m, WRITE_ACCOUNTS_KEY, &escalate);
    assert_eq!(r.status, 403, "{}", r.text);
    // Nor can one that reads the whole file, the rest sent back as read.
    let r = put_with(&m, READING_EDITOR_KEY, &escalate);
    assert_eq!(r.status, 403, "{}", r.text);
    assert_eq!(
        r.body["error"],
        "missing permission write:config: dashboard can be changed only with it \
         (write:accounts changes the accounts). If this request did not change \
         dashboard, it changed since it was read: read it again, or send `accounts` alone"
    );
    assert_eq!(
        m.get_with("/api/stats", "attacker-key-0123456789").status,
        401
    );
    // Nor test a guess of a secret the file holds written out: a section
    // with the right token is refused as one with a wrong guess is (an
    // audit: the right one was accepted as "unchanged", telling it).
    for guess in [TOKEN, "not-the-token-0123456789"] {
        let mut probe =
            json!({ "accounts": full["accounts"].clone(), "server": full["server"].clone() });
        probe["server"]["auth_token"] = json!(guess);
        let r = put_with(&m, WRITE_ACCOUNTS_KEY, &probe);
        assert_eq!(r.status, 403, "{guess}: {}", r.text);
    }
    // ...but changes the accounts: sent whole (by a key that reads the
    // whole file), or the accounts alone.
    let mut filing = full.clone();
    filing["accounts"][0]["folders"]["allowed"] = json!(["Receipts", "Travel"]);
    let r = put_with(&m, READING_EDITOR_KEY, &filing);
    assert_eq!(r.status, 200, "{}", r.text);
    // A key that cannot read the whole file cannot send it back as read:
    // a section matched against what it cannot see told it whether a
    // guess of a host or a path was right (an audit). The summary it
    // reads comes back unchanged (see `write_accounts_reads_what_it_may_send_back`).
    for key in [WRITE_ACCOUNTS_KEY, ACCOUNTS_EDITOR_KEY] {
        let r = put_with(&m, key, &filing);
        assert_eq!(r.status, 403, "{}", r.text);
        assert!(
            r.text.contains("missing permission write:config"),
            "{}",
            r.text
        );
    }
    let allowed = |m: &Mailproc| {
        m.get_with("/api/accounts", TOKEN).body["accounts"][0]["allowedFolders"].clone()
    };
    assert_eq!(allowed(&m), json!(["Receipts", "Travel"]));
    let mut alone = json!({ "accounts": full["accounts"].clone() });
    alone["accounts"][0]["folders"]["allowed"] = json!(["Receipts", "Bills"]);
    let r = put_with(&m, WRITE_ACCOUNTS_KEY, &alone);
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(allowed(&m), json!(["Receipts", "Bills"]));
    // Nor test a guess of the account's password (or its provider's key)
    // written out: the account restarts whether the guess is right or not,
    // where a right one left it out of `restarted` (an audit). Sent
    // masked, as read, nothing restarts.
    let restarted = |body: &Value| {
        let r = put_with(&m, WRITE_ACCOUNTS_KEY, body);
        assert_eq!(r.status, 200, "{}", r.text);
        r.body["restarted"].clone()
    };
    // An account whose last restart is still under way is listed again
    // (it starts once its old worker ends): each check waits for it to run.
    let settled = || {
        m.wait_for(Duration::from_secs(30), "the account running again", || {
            (restarted(&alone) == json!([])).then_some(())
        })
    };
    settled();
    let mut right = alone.clone();
    right["accounts"][0]["imap"]["password"] = json!("p");
    assert_eq!(restarted(&right), json!(["personal"]));
    let mut key = full.clone();
    key["accounts"] = alone["accounts"].clone();
    key["classifier"]["providers"][0]["api_key"] = json!("sk-right-or-wrong");
    for _ in ["set", "the same again"] {
        settled();
        let r = put_with(&m, WRITE_CONFIG_KEY, &key);
        assert_eq!(r.status, 200, "{}", r.text);
        assert_eq!(r.body["restarted"], json!(["personal"]), "{}", r.text);
    }
    settled();
    // The rest of the file is as it was: the keys still work.
    assert_eq!(m.get_with("/api/stats", STATS_KEY).status, 200);
    // A stored password does not follow a new host, whoever asks.
    let mut moved = alone.clone();
    moved["accounts"][0]["imap"]["host"] = json!("imap.attacker.example");
    let r = put_with(&m, WRITE_ACCOUNTS_KEY, &moved);
    assert_eq!(r.status, 400, "{}", r.text);
    assert!(r.text.contains("imap.host changed"), "{}", r.text);
    // ...and keeps running accounts.
    for cmd in ["pause", "resume", "reconnect", "process"] {
        let r = m.post_with(
            &format!("/api/accounts/personal/{cmd}"),
            WRITE_ACCOUNTS_KEY,
            "",
        );
        assert_eq!(r.status, 200, "{cmd}: {}", r.text);
    }
    // write:config, write:* and * change it; read keys do not.
    let full = m.get_with("/api/config", TOKEN).body;
    for key in [STATS_KEY, READ_CONFIG_KEY, READ_ALL_KEY] {
        let r = put_with(&m, key, &full);
        assert_eq!(r.status, 403, "{key}");
        assert_eq!(r.body["error"], "missing permission write:accounts");
    }
    for key in [WRITE_CONFIG_KEY, WRITE_ALL_KEY, STAR_KEY, TOKEN] {
        let r = put_with(&m, key, &full);
        assert_eq!(r.status, 200, "{key}: {}", r.text);
    }
}

/// A key with `read:stats` (every key's default) and `write:accounts`, not
/// `read:config`, reads, edits and sends back what it read: the summary
/// with the accounts whole (secrets masked), the other sections as the
/// summary shows them, which count as unchanged. Before, it read the
/// summary (accounts without `imap`) and every way back was refused: the
/// summary's sections with 403, its accounts alone with 400 ("missing field
/// imap").
#[test]
fn write_accounts_reads_what_it_may_send_back() {
    let m = secured();
    let r = m.get_with("/api/config", ACCOUNTS_EDITOR_KEY);
    assert_eq!(r.status, 200, "{}", r.text);
    let mut c = r.body;
    assert_eq!(c["accounts"][0]["imap"]["username"], "me@internal.example");
    assert_eq!(c["accounts"][0]["imap"]["password"], "********");
    // The rest is the summary: no provider URL or proxy, no global webhook,
    // no key.
    for detail in [
        "llm.internal",
        "proxy",
        "hooks.internal",
        "X-Tenant",
        "api_keys",
        "auth_token",
    ] {
        assert!(!r.text.contains(detail), "{detail} in {}", r.text);
    }
    // write:accounts alone (no read:stats) reads no configuration at all.
    assert_eq!(m.get_with("/api/config", WRITE_ACCOUNTS_KEY).status, 403);
    c["accounts"][0]["dry_run"] = json!(true);
    let r = put_with(&m, ACCOUNTS_EDITOR_KEY, &c);
    assert_eq!(r.status, 200, "{}", r.text);
    let a = &m.get_with("/api/accounts", TOKEN).body["accounts"][0];
    assert_eq!(a["dryRun"], true, "{a}");
    // The file kept what the summary does not show.
    let full = m.get_with("/api/config", TOKEN).body;
    assert_eq!(
        full["classifier"]["providers"][0]["proxy"],
        "http://pu:********@proxy.internal.example:3128/"
    );
    assert_eq!(
        full["webhooks"][0]["url"],
        "https://hooks.internal.example/x"
    );
    assert_eq!(
        full["accounts"][0]["imap"]["username"],
        "me@internal.example"
    );
    // A summary section changed is still a change of it.
    let mut c = m.get_with("/api/config", ACCOUNTS_EDITOR_KEY).body;
    c["classifier"]["providers"][0]["model"] = json!("other");
    let r = put_with(&m, ACCOUNTS_EDITOR_KEY, &c);
    assert_eq!(r.status, 403, "{}", r.text);
}

/// Item 9: a `read:stats` key (every key's default) reads a summary of
/// the configuration with no host, user name, URL, proxy or header; the
/// whole (masked) configuration takes `read:config`, which `write:config`,
/// `read:*`, `write:*` and `*` imply.
#[test]
fn read_stats_sees_no_connection_details() {
    let m = secured();
    let r = m.get_with("/api/config", STATS_KEY);
    assert_eq!(r.status, 200, "{}", r.text);
    for detail in [
        "internal.example",
        "proxy",
        "\"url\"",
        "username",
        "\"host\"",
        "127.0.0.1",
        "headers",
        "X-Tenant",
        "auth_token",
        "api_keys",
        "mailproc.db",
        "pp@",
    ] {
        assert!(!r.text.contains(detail), "{detail} in {}", r.text);
    }
    let c = &r.body;
    assert_eq!(c["accounts"][0]["name"], "personal");
    assert_eq!(c["accounts"][0]["folders"]["allowed"], json!(["Receipts"]));
    assert_eq!(c["accounts"][0]["rules"], json!([{ "name": "bills" }]));
    assert_eq!(c["classifier"]["providers"][0]["model"], "m");
    for key in [
        READ_CONFIG_KEY,
        READ_ALL_KEY,
        WRITE_CONFIG_KEY,
        WRITE_ALL_KEY,
        STAR_KEY,
        TOKEN,
    ] {
        let r = m.get_with("/api/config", key);
        assert_eq!(r.status, 200, "{key}");
        assert_eq!(
            r.body["accounts"][0]["imap"]["username"], "me@internal.example",
            "{key}"
        );
        assert_eq!(
            r.body["classifier"]["providers"][0]["proxy"],
            "http://pu:********@proxy.internal.example:3128/"
        );
    }
    // write:accounts reads neither the whole configuration nor stats.
    assert_eq!(m.get_with("/api/config", WRITE_ACCOUNTS_KEY).status, 403);
}

/// Item 11: `next` is checked after resolving dot segments (percent-encoded
/// ones too), so no login sends the browser to another site.
#[test]
fn a_login_never_redirects_off_the_site() {
    let m = Mailproc::start("server: { port: {PORT} }\nstorage: { path: \"{DIR}/mailproc.db\" }\n");
    let (code, out, err) = m.run_cli(&["set-password", "admin"], "correct horse battery\n");
    assert_eq!(code, 0, "{out}{err}");
    let form = |fields: &[(&str, &str)]| {
        url::form_urlencoded::Serializer::new(String::new())
            .extend_pairs(fields)
            .finish()
    };
    let login = |next: &str| {
        m.request(
            "POST",
            "/login",
            &[("Content-Type", "application/x-www-form-urlencoded")],
            Some(&form(&[
                ("username", "admin"),
                ("password", "correct horse battery"),
                ("next", next),
            ])),
        )
    };
    let r = login("/accounts?x=1");
    assert_eq!(r.status, 303);
    assert_eq!(r.header("location"), Some("/accounts?x=1"));
    let cookie = r
        .header("set-cookie")
        .unwrap()
        .split(';')
        .next()
        .unwrap()
        .to_string();
    for evil in [
        "/.//evil.example/phish",
        "/a/..//evil.example/phish",
        "/%2e//evil.example/phish",
        "/%2E%2E//evil.example",
        "/./\\evil.example",
        "/%5c/evil.example",
    ] {
        let r = login(evil);
        assert_eq!(r.status, 303, "{evil}");
        assert_eq!(r.header("location"), Some("/"), "{evil}");
        // Already logged in, the login page sends the browser on at once.
        for query in [form(&[("next", evil)]), format!("next={evil}")] {
            let r = m.request(
                "GET",
                &format!("/login?{query}"),
                &[("Cookie", &cookie)],
                None,
            );
            assert_eq!(r.status, 303, "{query}");
            assert_eq!(r.header("location"), Some("/"), "{query}");
        }
    }
}

/// Item 12: `X-Forwarded-*` from a loopback peer is believed only when the
/// operator listed it in `trusted_proxies`, and never in open mode.
#[test]
fn forwarded_headers_are_believed_only_from_named_proxies() {
    // Open mode: a forged X-Forwarded-Host cannot make a foreign Host pass.
    let open =
        Mailproc::start("server: { port: {PORT} }\nstorage: { path: \"{DIR}/mailproc.db\" }\n");
    let local = format!("127.0.0.1:{}", open.port);
    let rebound = format!("rebind.example:{}", open.port);
    let r = open.request(
        "GET",
        "/api/config",
        &[("Host", &rebound), ("X-Forwarded-Host", &local)],
        None,
    );
    assert_eq!(r.status, 403, "{}", r.text);
    // What a monitor reads answers under any name (a scrape target, a
    // container's host name); nothing else does.
    for path in ["/health", "/metrics"] {
        let r = open.request("GET", path, &[("Host", &rebound)], None);
        assert_eq!(r.status, 200, "{path}: {}", r.text);
    }
    let r = open.request("GET", "/login", &[("Host", &rebound)], None);
    assert_eq!(r.status, 403, "{}", r.text);
    // Even listed as a proxy, open mode ignores forwarded headers.
    let open2 = Mailproc::start(
        "server: { port: {PORT}, trusted_proxies: [127.0.0.1/32] }\nstorage: { path: \"{DIR}/mailproc.db\" }\n",
    );
    let r = open2.request(
        "GET",
        "/api/config",
        &[
            ("Host", &format!("rebind.example:{}", open2.port)),
            ("X-Forwarded-Host", &format!("127.0.0.1:{}", open2.port)),
        ],
        None,
    );
    assert_eq!(r.status, 403, "{}", r.text);

    // Secured, default: a loopback client's X-Forwarded-For and -Proto are
    // its own words, not a proxy's.
    let yaml = |proxies: &str| {
        format!("server: {{ port: {{PORT}}, auth_token: {TOKEN}{proxies} }}\nstorage: {{ path: \"{{DIR}}/mailproc.db\" }}\n")
    };
    let m = Mailproc::start(&yaml(""));
    let (code, out, err) = m.run_cli(&["set-password", "admin"], "correct horse battery\n");
    assert_eq!(code, 0, "{out}{err}");
    let login = |m: &Mailproc, pw: &str| {
        m.request(
            "POST",
            "/login",
            &[
                ("X-Forwarded-For", "203.0.113.7"),
                ("X-Forwarded-Proto", "https"),
            ],
            Some(&json!({ "username": "admin", "password": pw }).to_string()),
        )
    };
    assert_eq!(login(&m, "wrong").status, 401);
    m.wait_for(Duration::from_secs(5), "the failure logged", || {
        m.log().contains("login failed for \"admin\"").then_some(())
    });
    assert!(m.log().contains("from 127.0.0.1"), "{}", m.log());
    assert!(!m.log().contains("203.0.113.7"), "{}", m.log());
    let r = login(&m, "correct horse battery");
    assert!(!r.header("set-cookie").unwrap().contains("Secure"));

    // Listed by the operator (as the README's nginx and Caddy setups do),
    // the proxy's headers count.
    let m = Mailproc::start(&yaml(", trusted_proxies: [\"127.0.0.1/32\", \"::1/128\"]"));
    let (code, out, err) = m.run_cli(&["set-password", "admin"], "correct horse battery\n");
    assert_eq!(code, 0, "{out}{err}");
    assert_eq!(login(&m, "wrong").status, 401);
    m.wait_for(Duration::from_secs(5), "the failure logged", || {
        m.log().contains("from 203.0.113.7").then_some(())
    });
    let r = login(&m, "correct horse battery");
    assert!(r.header("set-cookie").unwrap().contains("; Secure"));
}

/// Item 12 as a browser plays it: a page served from `rebind.test`, a
/// name that resolves to 127.0.0.1, whose own server is then replaced by
/// mailproc on the same port (what rebinding its DNS name to 127.0.0.1
/// achieves). Its script, now same-origin with mailproc, asks for
/// `/api/config` with a forged `X-Forwarded-Host`; it must get 403.
#[test]
fn a_rebound_page_in_chromium_cannot_read_the_configuration() {
    // The attacker's server holds the port first.
    let attacker = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = attacker.local_addr().unwrap().port();
    let yaml = "server: { port: {PORT} }\nstorage: { path: \"{DIR}/mailproc.db\" }\n\
         accounts:\n  - name: acct\n    imap: { host: 127.0.0.1, port: 9, security: none, username: private-user, password: p }\n";
    let mut m = Mailproc::prepare(yaml);
    m.port = port;
    m.write_config(yaml);
    let page = format!(
        "<!doctype html><html><head><title>rebind</title></head><body><pre id=\"out\">none</pre><script>\n\
         var x = new XMLHttpRequest();\n\
         x.open('GET', '/api/config', false);\n\
         x.setRequestHeader('X-Forwarded-Host', '127.0.0.1:{port}');\n\
         try {{ x.send(); document.getElementById('out').textContent = 'status=' + x.status + ' ' + x.responseText; }}\n\
         catch (e) {{ document.getElementById('out').textContent = 'error ' + e; }}\n\
         </script></body></html>"
    );
    let server = std::thread::scope(|s| {
        let browser = s.spawn(|| {
            common::chromium::run(&[
                "--host-resolver-rules=MAP rebind.test 127.0.0.1, MAP * ~NOTFOUND, EXCLUDE localhost, EXCLUDE 127.0.0.1",
                "--no-proxy-server",
                "--dump-dom",
                &format!("http://rebind.test:{port}/"),
            ])
        });
        // The page's request: read its head, then give the port to mailproc
        // before the page (and its script) is sent.
        let (mut c, _) = attacker.accept().unwrap();
        c.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
        let mut head = Vec::new();
        let mut buf = [0u8; 1024];
        while !head.windows(4).any(|w| w == b"\r\n\r\n") {
            let n = c.read(&mut buf).unwrap();
            assert!(n > 0, "the browser closed the connection");
            head.extend_from_slice(&buf[..n]);
        }
        assert!(
            String::from_utf8_lossy(&head).contains(&format!("Host: rebind.test:{port}")),
            "{}",
            String::from_utf8_lossy(&head)
        );
        drop(attacker);
        m.spawn(&[]);
        m.wait_ready();
        write!(
            c,
            "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{page}",
            page.len()
        )
        .unwrap();
        drop(c);
        browser.join().unwrap()
    });
    let dom = String::from_utf8_lossy(&server.stdout).into_owned();
    assert!(
        server.status.success(),
        "{}",
        String::from_utf8_lossy(&server.stderr)
    );
    // The script ran and reached mailproc, which refused it.
    assert!(dom.contains("status=403"), "{dom}");
    assert!(
        dom.contains("is not served without authentication"),
        "{dom}"
    );
    assert!(!dom.contains("private-user"), "{dom}");
    assert!(m.log().contains("GET /api/config -> 403"), "{}", m.log());
}

/// Found by an audit: twenty wrong passwords for `admin` from a few
/// addresses locked the real admin out (429 with the right password from
/// anywhere), for 15 minutes, renewable for ever by one stranger. A browser
/// the admin signed in from before carries a device cookie (HttpOnly,
/// bound to the user under the session secret) and its logins are not held
/// by the username's count; strangers without one still are.
#[test]
fn strangers_guessing_a_username_do_not_lock_out_a_browser_it_signed_in_from() {
    let m = common::secured::start_secured();
    let (code, out, err) = m.run_cli(&["set-password", "admin"], "correct horse battery\n");
    assert_eq!(code, 0, "{out}{err}");
    let login = |from: &str, password: &str, cookie: Option<&str>| {
        let mut h = vec![("X-Forwarded-For", from)];
        if let Some(c) = cookie {
            h.push(("Cookie", c));
        }
        m.request(
            "POST",
            "/login",
            &h,
            Some(&json!({"username": "admin", "password": password}).to_string()),
        )
    };
    let first = login("203.0.113.7", "correct horse battery", None);
    assert_eq!(first.status, 200, "{}", first.text);
    let set: Vec<&str> = first
        .headers
        .iter()
        .filter(|(k, _)| k.eq_ignore_ascii_case("set-cookie"))
        .map(|(_, v)| v.as_str())
        .collect();
    assert!(set[0].starts_with("mailproc_session="), "{set:?}");
    let device = set
        .iter()
        .find(|c| c.starts_with("mailproc_device="))
        .unwrap_or_else(|| panic!("no device cookie: {set:?}"));
    assert!(
        device.contains("HttpOnly") && device.contains("SameSite=Strict"),
        "{device}"
    );
    let device = device.split(';').next().unwrap().to_string();
    // A stranger spreads twenty wrong guesses over addresses.
    for i in 0..20 {
        let r = login(&format!("198.51.100.{i}"), "guess", None);
        assert_eq!(r.status, 401, "guess {i}: {}", r.text);
    }
    assert_eq!(login("198.51.100.99", "guess", None).status, 429);
    // The right password from a new place without the cookie: still held.
    assert_eq!(
        login("192.0.2.1", "correct horse battery", None).status,
        429
    );
    // From the browser that signed in before: in.
    let r = login("192.0.2.1", "correct horse battery", Some(&device));
    assert_eq!(r.status, 200, "{}", r.text);
    // The cookie is worth nothing for another name, nor forged.
    let forged = device.replace('.', ".00");
    assert_eq!(
        login("192.0.2.2", "correct horse battery", Some(&forged)).status,
        429
    );
}

/// Found by an audit: a JSON body posted with a form's `Content-Type`
/// (curl's `-d` default) was read as a form with no username and answered
/// "Wrong username or password", each one counted toward the address's
/// lockout. A form without a username or a password is 400 naming what it
/// lacks, and counts for nothing.
#[test]
fn a_login_form_without_its_fields_is_400_and_not_a_failed_sign_in() {
    let m = common::secured::start_secured();
    let (code, out, err) = m.run_cli(&["set-password", "admin"], "correct horse battery\n");
    assert_eq!(code, 0, "{out}{err}");
    let form = |body: &str| {
        m.request(
            "POST",
            "/login",
            &[("Content-Type", "application/x-www-form-urlencoded")],
            Some(body),
        )
    };
    let json_body = json!({"username": "admin", "password": "correct horse battery"}).to_string();
    for _ in 0..12 {
        let r = form(&json_body);
        assert_eq!(r.status, 400, "{}", r.text);
        assert!(r.text.contains("The form had no username"), "{}", r.text);
    }
    let r = form("username=admin");
    assert_eq!(r.status, 400, "{}", r.text);
    assert!(r.text.contains("The form had no password"), "{}", r.text);
    assert!(!m.log().contains("login failed"), "{}", m.log());
    // Not locked out: the form filled in signs in.
    let r = form("username=admin&password=correct+horse+battery&next=%2F");
    assert_eq!(r.status, 303, "{}", r.text);
}
