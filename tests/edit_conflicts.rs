//! Two people changing the configuration at once, against the real binary:
//! a change is made from a version of the file (the editor's page, the
//! `ETag` of `GET /api/config`), and refused when the file has moved on
//! since, so the second save never undoes the first without a word.

mod common;

use common::dashboard::*;
use common::mailproc::{Mailproc, Resp};

const TOKEN: &str = "edit-token-0123456789abcdef";
const CONFIG: &str = "server: { port: {PORT}, auth_token: edit-token-0123456789abcdef }\n\
    storage: { path: \"{DIR}/mailproc.db\" }\nlog_level: info\n";

/// [`CONFIG`] with an account the rule form can add rules to (its server
/// a closed port: no mail is read).
const WITH_ACCOUNT: &str = "server: { port: {PORT}, auth_token: edit-token-0123456789abcdef }\n\
    storage: { path: \"{DIR}/mailproc.db\" }\nlog_level: info\naccounts:\n  - name: acct\n    \
    imap: { host: 127.0.0.1, port: 9, security: none, username: u, password: p }\n";

/// The version a page's form was made from (its hidden `base` field).
fn base_of(page: &str) -> String {
    let (_, rest) = page
        .split_once("name=\"base\" value=\"")
        .expect("a base field");
    rest.split('"').next().unwrap().to_string()
}

fn file(m: &Mailproc) -> String {
    std::fs::read_to_string(&m.config_path).unwrap()
}

fn put(m: &Mailproc, body: &str, if_match: Option<&str>) -> Resp {
    let auth = format!("Bearer {TOKEN}");
    let mut headers = vec![("Authorization", auth.as_str())];
    if let Some(tag) = if_match {
        headers.push(("If-Match", tag));
    }
    m.request("PUT", "/api/config", &headers, Some(body))
}

/// Audit (stop 52): the editor wrote its text over whatever the file held,
/// so of two people editing the second save undid the first, and a
/// comment added to the file by hand (the same values, so not "changed
/// since the service read it") was dropped by the next save.
#[test]
fn a_save_from_an_editor_page_the_file_has_moved_past_is_refused_and_kept() {
    let m = with_user(CONFIG);
    let mut alice = Browser::new(&m);
    let mut bob = Browser::new(&m);
    assert_redirect(&alice.login("admin", PASSWORD), "/");
    assert_redirect(&bob.login("admin", PASSWORD), "/");
    let alice_page = alice.get("/config").text;
    let bob_page = bob.get("/config").text;
    assert_eq!(base_of(&alice_page), base_of(&bob_page));

    // Alice saves first.
    let hers = textarea(&alice_page).replace("log_level: info", "log_level: debug");
    let r = alice.submit(
        "/config",
        &[("yaml", &hers), ("base", &base_of(&alice_page))],
    );
    assert_redirect(&r, "/config");
    assert!(file(&m).contains("log_level: debug"), "{}", file(&m));

    // Bob's save, made from the file before hers, is refused; his text is
    // kept, and her change stays.
    let his = textarea(&bob_page).replace("log_level: info", "log_level: warn");
    let r = bob.submit("/config", &[("yaml", &his), ("base", &base_of(&bob_page))]);
    assert_eq!(r.status, 409, "{}", r.text);
    assert!(
        r.text.contains("changed after this page was loaded"),
        "{}",
        r.text
    );
    assert!(textarea(&r.text).contains("log_level: warn"), "{}", r.text);
    assert!(file(&m).contains("log_level: debug"), "{}", file(&m));
    assert_eq!(
        m.get_with("/api/config", TOKEN).body["log_level"],
        "debug",
        "the running configuration is hers"
    );

    // Told, he saves again from the page he got: his choice, made knowing.
    let again = base_of(&r.text);
    assert_ne!(again, base_of(&bob_page));
    let r = bob.submit("/config", &[("yaml", &his), ("base", &again)]);
    assert_redirect(&r, "/config");
    assert!(file(&m).contains("log_level: warn"), "{}", file(&m));

    // A comment added by hand changes no value, so the service runs what
    // the file says; a page loaded before it does not drop it.
    let page = alice.get("/config").text;
    let with_note = format!("{}# the hand-written note\n", file(&m));
    std::fs::write(&m.config_path, &with_note).unwrap();
    let r = alice.submit(
        "/config",
        &[("yaml", &textarea(&page)), ("base", &base_of(&page))],
    );
    assert_eq!(r.status, 409, "{}", r.text);
    assert_eq!(file(&m), with_note);
    let page = alice.get("/config").text;
    assert!(page.contains("# the hand-written note"), "{page}");
    assert!(!page.contains("id=\"config-differs\""), "{page}");
}

/// The API's form of the same: `GET /api/config` gives the file's version
/// as `ETag`, and a `PUT` sent with it as `If-Match` is refused 412 when
/// the file has moved on (RFC 9110 §13.1.1). Without `If-Match`, or with
/// `*`, a `PUT` replaces whatever is there, as before.
#[test]
fn a_put_with_if_match_of_an_earlier_version_is_refused_412() {
    let m = Mailproc::start(CONFIG);
    let first = m.get_with("/api/config", TOKEN);
    let tag = first.header("etag").expect("an ETag").to_string();
    assert!(tag.starts_with('"') && tag.ends_with('"'), "{tag}");
    let mut body = first.body.clone();

    body["log_level"] = "debug".into();
    let r = put(&m, &body.to_string(), Some(&tag));
    assert_eq!(r.status, 200, "{}", r.text);
    let next = r.header("etag").expect("the new ETag").to_string();
    assert_ne!(next, tag);
    assert_eq!(
        m.get_with("/api/config", TOKEN).header("etag"),
        Some(&*next)
    );

    // Made from the first version: refused, nothing written.
    let before = file(&m);
    body["log_level"] = "warn".into();
    let r = put(&m, &body.to_string(), Some(&tag));
    assert_eq!(r.status, 412, "{}", r.text);
    assert!(r.text.contains("If-Match"), "{}", r.text);
    assert_eq!(r.header("etag"), Some(&*next), "the version it is at now");
    assert_eq!(file(&m), before);
    // A weak tag never matches, even of the version now.
    let r = put(&m, &body.to_string(), Some(&format!("W/{next}")));
    assert_eq!(r.status, 412, "{}", r.text);
    assert!(r.text.contains("weak entity tag"), "{}", r.text);
    assert_eq!(r.header("etag"), Some(&*next), "the version it is at now");
    // One of a list matching is enough; empty elements of it are allowed.
    let r = put(&m, &body.to_string(), Some(&format!(", {tag}, , {next},")));
    assert_eq!(r.status, 200, "{}", r.text);
    assert!(file(&m).contains("log_level: warn"), "{}", file(&m));

    // Not a tag: 400 naming the header; nothing written.
    let before = file(&m);
    let r = put(&m, &body.to_string(), Some("version-1"));
    assert_eq!(r.status, 400, "{}", r.text);
    assert!(r.text.contains("If-Match"), "{}", r.text);
    assert_eq!(file(&m), before);
    // A space is no part of a tag (an audit, stop 56: 412).
    let r = put(&m, &body.to_string(), Some("\"abc def\""));
    assert_eq!(r.status, 400, "{}", r.text);
    assert_eq!(file(&m), before);
    // Two If-Match fields are one list (an audit: only the first was read,
    // so the order of the fields decided).
    let now = m
        .get_with("/api/config", TOKEN)
        .header("etag")
        .unwrap()
        .to_string();
    let auth = format!("Bearer {TOKEN}");
    body["log_level"] = "debug".into();
    let r = m.request(
        "PUT",
        "/api/config",
        &[
            ("Authorization", &auth),
            ("If-Match", &tag),
            ("If-Match", &now),
        ],
        Some(&body.to_string()),
    );
    assert_eq!(r.status, 200, "{}", r.text);
    assert!(file(&m).contains("log_level: debug"), "{}", file(&m));
    body["log_level"] = "warn".into();

    // `*`, or no If-Match: replaced as it is sent.
    body["log_level"] = "error".into();
    let r = put(&m, &body.to_string(), Some("*"));
    assert_eq!(r.status, 200, "{}", r.text);
    body["log_level"] = "info".into();
    let r = put(&m, &body.to_string(), None);
    assert_eq!(r.status, 200, "{}", r.text);
    assert!(file(&m).contains("log_level: info"), "{}", file(&m));
}

/// Found by the churn audit (stop 62): a change writes the file, then
/// runs it, and a `GET /api/config` between the two answered the
/// configuration running (the old one) with the new file's `ETag`. A `PUT`
/// made from that answer with that tag was taken, and undid the change
/// without a 412. The tag is now of the configuration the answer is
/// made from; so is the editor's page.
#[test]
fn a_read_between_a_change_written_and_run_is_tagged_with_what_it_shows() {
    let mut m = with_user(CONFIG);
    m.kill();
    m.spawn(&[("MAILPROC_FAILPOINTS", "config-written=pause:2000")]);
    m.wait_ready();
    let first = m.get_with("/api/config", TOKEN);
    let tag = first.header("etag").expect("an ETag").to_string();
    let mut alices = first.body.clone();
    alices["log_level"] = "debug".into();
    let mut bob = Browser::new(&m);
    assert_redirect(&bob.login("admin", PASSWORD), "/");
    let (read, page, alice) = std::thread::scope(|scope| {
        let alice = scope.spawn(|| put(&m, &alices.to_string(), Some(&tag)));
        // Read while Alice's change is written and not yet run.
        m.wait_paused(
            "config-written",
            std::time::Duration::from_secs(20),
            "the change written, not run",
        );
        let read = m.get_with("/api/config", TOKEN);
        let page = bob.get("/config").text;
        (read, page, alice.join().unwrap())
    });
    assert_eq!(alice.status, 200, "{}", alice.text);
    assert_eq!(read.body["log_level"], "info", "read before it ran");
    // Made from what it read, with the tag it came with: refused, and
    // Alice's change stands.
    let r = put(
        &m,
        &read.body.to_string(),
        read.header("etag").map(str::to_string).as_deref(),
    );
    assert_eq!(r.status, 412, "{}", r.text);
    assert!(file(&m).contains("log_level: debug"), "{}", file(&m));
    // The editor's page read then is refused the same way.
    let r = bob.submit(
        "/config",
        &[("yaml", &textarea(&page)), ("base", &base_of(&page))],
    );
    assert_eq!(r.status, 409, "{}", r.text);
    assert!(file(&m).contains("log_level: debug"), "{}", file(&m));
}

/// Found by stop 62's second regression audit: with the file gone, the
/// `ETag` given was the running configuration's while a save checks the
/// version of no bytes, so every save sent with its tag was refused 412,
/// for ever. A save made from what is read writes the file again.
#[test]
fn a_save_with_its_tag_writes_a_file_gone_again() {
    let m = Mailproc::start(CONFIG);
    std::fs::remove_file(&m.config_path).unwrap();
    let read = m.get_with("/api/config", TOKEN);
    let tag = read.header("etag").expect("an ETag").to_string();
    let mut body = read.body.clone();
    body["log_level"] = "debug".into();
    let r = put(&m, &body.to_string(), Some(&tag));
    assert_eq!(r.status, 200, "{}", r.text);
    assert!(file(&m).contains("log_level: debug"), "{}", file(&m));
}

/// Found by the regression audit (stop 52): the rule form, made from the
/// running configuration, was refused for good after a comment added to
/// the file by hand ("save again" never worked until a reload). Made from
/// a file that reads as what runs, it saves, the comment kept; and an
/// edit that leaves the file not UTF-8 (which cannot be what runs) is
/// never written over, by the form or the editor.
#[test]
fn the_rule_form_saves_past_a_comment_and_never_over_a_file_not_utf8() {
    let m = with_user(WITH_ACCOUNT);
    let mut b = Browser::new(&m);
    assert_redirect(&b.login("admin", PASSWORD), "/");
    let with_note = format!("{}# the hand-written note\n", file(&m));
    std::fs::write(&m.config_path, &with_note).unwrap();
    let rule = |name: &'static str| {
        [
            ("account", "acct"),
            ("was", ""),
            ("name", name),
            ("subject", "hello"),
            ("read", "on"),
        ]
    };
    let r = b.submit("/config/rule", &rule("first"));
    assert_redirect(&r, "/accounts/acct");
    let now = file(&m);
    assert!(now.contains("name: first"), "{now}");
    assert!(now.contains("# the hand-written note"), "{now}");

    let mut latin = std::fs::read(&m.config_path)
        .unwrap()
        .into_iter()
        .collect::<Vec<u8>>();
    latin.extend_from_slice(b"# caf\xe9\n");
    std::fs::write(&m.config_path, &latin).unwrap();
    let r = b.submit("/config/rule", &rule("second"));
    assert_eq!(r.status, 409, "{}", r.text);
    assert!(
        r.text.contains("changed since the service read it"),
        "{}",
        r.text
    );
    let page = b.get("/config").text;
    assert!(page.contains("id=\"config-differs\""), "{page}");
    let r = b.submit(
        "/config",
        &[("yaml", &textarea(&page)), ("base", &base_of(&page))],
    );
    assert_eq!(r.status, 409, "{}", r.text);
    assert_eq!(std::fs::read(&m.config_path).unwrap(), latin);
}

/// Regression audit (stop 55): a file the service cannot read (a hand
/// edit with a comment past 16 MiB) counted as "not changed since", so a
/// save wrote the running values over the hand edit, and no backup was
/// made. It is refused, the file left as it is.
#[test]
fn a_file_that_cannot_be_read_is_not_written_over() {
    let m = Mailproc::start(CONFIG);
    let mut body = m.get_with("/api/config", TOKEN).body;
    body["log_level"] = "debug".into();
    let edited = format!(
        "{}# {}\n",
        file(&m).replace("log_level: info", "log_level: warn"),
        "x".repeat(17 << 20)
    );
    std::fs::write(&m.config_path, &edited).unwrap();
    let r = put(&m, &body.to_string(), None);
    assert_eq!(r.status, 409, "{}", r.text);
    assert!(
        r.text.contains("cannot be read (larger than 16 MiB)"),
        "{}",
        r.text
    );
    assert!(std::fs::read_to_string(&m.config_path).unwrap() == edited);
}

/// Found by the secrets audit (stop 59): the `ETag` was the plain SHA-256
/// of the file, secrets and all, so a `read:config` key that rebuilt the
/// masked rest of a file the service wrote tested guesses of a password
/// offline. It is keyed now, with a key of the running service: not the
/// file's digest, and another after a restart, when a version sent
/// before it is refused (412) and the one read again is taken.
#[test]
fn the_etag_is_keyed_and_tells_nothing_of_the_files_bytes() {
    use sha2::{Digest, Sha256};
    let mut m = Mailproc::start(WITH_ACCOUNT);
    let tag = |m: &Mailproc| {
        let r = m.get_with("/api/config", TOKEN);
        assert_eq!(r.status, 200, "{}", r.text);
        r.header("etag")
            .expect("an ETag")
            .trim_matches('"')
            .to_string()
    };
    let before = tag(&m);
    let bytes = std::fs::read(&m.config_path).unwrap();
    let plain: String = Sha256::digest(&bytes)[..8]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    assert_eq!(before.len(), 16, "{before}");
    assert_ne!(before, plain, "the ETag is the file's plain digest");
    assert_eq!(tag(&m), before, "one version while the file stays");

    m.restart();
    let after = tag(&m);
    assert_eq!(std::fs::read(&m.config_path).unwrap(), bytes);
    assert_ne!(after, before, "the same key in two runs");
    let mut body = m.get_with("/api/config", TOKEN).body;
    body["log_level"] = "debug".into();
    let r = put(&m, &body.to_string(), Some(&format!("\"{before}\"")));
    assert_eq!(r.status, 412, "{}", r.text);
    assert_eq!(std::fs::read(&m.config_path).unwrap(), bytes);
    let r = put(&m, &body.to_string(), Some(&format!("\"{after}\"")));
    assert_eq!(r.status, 200, "{}", r.text);
    assert!(file(&m).contains("log_level: debug"), "{}", file(&m));
}
