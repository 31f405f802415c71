//! Issue [8]: bad configuration is caught at load, not at first use. Each
//! case starts the real binary (`run`, and `check-config`) and expects it to
//! stop naming the key.

mod common;

use std::time::Duration;

use common::mailproc::Mailproc;

const BASE: &str = "server: { port: {PORT} }\nstorage: { path: \"{DIR}/mailproc.db\" }\n";

/// Starts `run` and expects it to end, failing, within 20 s.
fn run_refused(m: &mut Mailproc) {
    m.spawn(&[]);
    assert!(
        m.wait_exit(Duration::from_secs(20))
            .is_some_and(|s| !s.success()),
        "{}",
        m.log()
    );
}

/// Writes `yaml` (after BASE), expects `run` and `check-config` to fail and
/// both to name `key` with `what`.
fn refused(yaml: &str, key: &str, what: &str) {
    let mut m = Mailproc::prepare(&format!("{BASE}{yaml}"));
    let ca = m.config_path.with_file_name("not-a-cert.pem");
    std::fs::write(
        &ca,
        "-----BEGIN CERTIFICATE-----\nbm90IGEgY2VydA==\n-----END CERTIFICATE-----\n",
    )
    .unwrap();
    let text = std::fs::read_to_string(&m.config_path)
        .unwrap()
        .replace("{CA}", ca.to_str().unwrap());
    std::fs::write(&m.config_path, text).unwrap();
    let (code, _, err) = m.run_cli(&["check-config"], "");
    assert_ne!(code, 0, "check-config accepted {yaml}");
    assert!(
        err.lines().any(|l| l.contains(key) && l.contains(what)),
        "check-config: expected {key:?} with {what:?} in:\n{err}"
    );
    m.spawn(&[]);
    let status = m
        .wait_exit(Duration::from_secs(20))
        .unwrap_or_else(|| panic!("`run` started with {yaml}"));
    assert!(!status.success());
    let log = m.log();
    assert!(
        log.lines().any(|l| l.contains(key) && l.contains(what)),
        "run: expected {key:?} with {what:?} in:\n{log}"
    );
}

fn account(extra: &str) -> String {
    format!(
        "accounts:\n  - name: a\n    imap: {{ host: 127.0.0.1, port: 1, security: none, username: u, password: p }}\n{extra}"
    )
}

#[test]
fn a_whsec_secret_that_is_not_base64_names_its_key() {
    refused(
        "webhooks:\n  - { url: \"https://hooks.example.com/x\", secret: \"whsec_this*is*not*base64\" }\n",
        "webhooks[0].secret",
        "base64",
    );
    refused(
        &account(
            "    webhooks:\n      - { url: \"https://hooks.example.com/x\", secret: \"whsec_abc\" }\n",
        ),
        "accounts[0].webhooks[0].secret",
        "at least 16",
    );
    refused(
        &account(
            "    webhooks:\n      - { url: \"https://hooks.example.com/x\", secret: \"whsec_!!!!!!!!!!!!!!!!\" }\n",
        ),
        "accounts[0].webhooks[0].secret",
        "base64",
    );
}

#[test]
fn a_ca_file_that_is_not_a_certificate_names_its_key() {
    refused(
        &account("    imap: { host: 127.0.0.1, port: 1, security: tls, username: u, password: p, ca_file: \"{CA}\" }\n")
            .replace(
                "    imap: { host: 127.0.0.1, port: 1, security: none, username: u, password: p }\n",
                "",
            ),
        "accounts[0].imap.ca_file",
        "not a PEM certificate",
    );
    refused(
        "classifier:\n  providers:\n    - { name: p, kind: openai, url: \"https://llm.example.com/v1\", model: m, ca_file: \"{CA}\" }\n",
        "classifier.providers[0].ca_file",
        "not a PEM certificate",
    );
}

#[test]
fn a_regex_that_does_not_compile_names_its_key() {
    refused(
        &account("    rules:\n      - { name: r, when: { from: \"([a-z\" }, actions: [ { type: read } ] }\n"),
        "accounts[0].rules[0].when.from",
        "invalid regex",
    );
}

/// Found by an audit: the rule form refused a name over 100 characters,
/// but the API and the file took it, so such a rule could not be saved
/// again from the form.
#[test]
fn a_rule_name_over_100_characters_names_its_key() {
    let name = "r".repeat(101);
    refused(
        &account(&format!(
            "    rules:\n      - {{ name: {name}, when: {{ subject: x }}, actions: [ {{ type: read }} ] }}\n"
        )),
        "accounts[0].rules[0].name",
        "at most 100 characters",
    );
}

#[test]
fn a_folder_name_that_cannot_be_used_names_its_key() {
    refused(
        &account("    folders: { watch: [\"IN\\rBOX\"] }\n"),
        "accounts[0].folders.watch[0]",
        "control character",
    );
    refused(
        &account("    folders: { watch: [INBOX], allowed: [\"\"] }\n"),
        "accounts[0].folders.allowed[0]",
        "must not be empty",
    );
    refused(
        &account("    folders: { watch: [INBOX], allowed: [\"Archive//2024\"] }\n"),
        "accounts[0].folders.allowed[0]",
        "empty level",
    );
    let long = "x".repeat(256);
    refused(
        &account(&format!(
            "    folders: {{ watch: [INBOX], allowed: [\"{long}\"] }}\n"
        )),
        "accounts[0].folders.allowed[0]",
        "longer than 255",
    );
}

/// Issue [15]: folder names in any language, and with `&`, are valid
/// configuration (`mailbox::mutf7` encodes them for the wire); they
/// were refused at start-up before.
#[test]
fn utf8_folder_names_are_accepted() {
    let m = Mailproc::prepare(&format!(
        "{BASE}{}",
        account(
            "    folders:\n      watch: [INBOX, \"受信箱\"]\n      allowed: [\"Re\\u00e7us\", \"Entw\u{fc}rfe\", \"Courrier ind\u{e9}sirable\", \"Bills & Receipts\", \"Archive/2024\"]\n"
        )
    ));
    let (code, out, err) = m.run_cli(&["check-config"], "");
    assert_eq!(
        code, 0,
        "check-config refused UTF-8 folder names:\n{out}{err}"
    );
}

/// Issue [15]: the new `folders.junk` is checked like every folder name,
/// and may not be a watched folder (spam moved there would be sorted again).
#[test]
fn a_bad_junk_folder_names_its_key() {
    refused(
        &account("    folders: { watch: [INBOX], junk: \"Spam//Old\" }\n"),
        "accounts[0].folders.junk",
        "empty level",
    );
    refused(
        &account("    folders: { watch: [INBOX, Spam], junk: Spam }\n"),
        "accounts[0].folders.junk",
        "also watched",
    );
}

/// SPEC sets no minimum for `server.auth_token`: a short one starts the
/// service with a warning (in `check-config` and the log) and is the token
/// (a check written from SPEC may well use `test-token`); an empty one is
/// refused. API keys keep SPEC's 16 characters.
#[test]
fn a_short_auth_token_is_a_warning_and_works() {
    let yaml = "server: { port: {PORT}, auth_token: test-token }\nstorage: { path: \"{DIR}/mailproc.db\" }\n";
    let m = Mailproc::prepare(yaml);
    let (code, out, err) = m.run_cli(&["check-config"], "");
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        err.contains("warning: server.auth_token: 10 characters is short enough to guess"),
        "{err}"
    );
    let m = Mailproc::start(yaml);
    assert!(
        m.log().contains("server.auth_token: 10 characters"),
        "{}",
        m.log()
    );
    assert_eq!(m.get("/api/stats").status, 401);
    assert_eq!(m.get_with("/api/stats", "test-token").status, 200);
    refused(
        "dashboard: { api_keys: [ { name: k, key: short-key } ] }\n",
        "dashboard.api_keys[0].key",
        "at least 16 characters",
    );
}

#[test]
fn an_empty_auth_token_names_its_key() {
    let mut m = Mailproc::prepare(
        "server: { port: {PORT}, auth_token: \"\" }\nstorage: { path: \"{DIR}/mailproc.db\" }\n",
    );
    let (code, _, err) = m.run_cli(&["check-config"], "");
    assert_ne!(code, 0);
    assert!(
        err.contains("server.auth_token: must not be empty"),
        "{err}"
    );
    run_refused(&mut m);
}

/// `check-config` answers for `storage.path` too, touching nothing: a
/// path under a file, a file that is not SQLite (which `run` must refuse
/// without writing to it), a directory mounted read-only, and a missing
/// directory it would create (fine, and not created by the check). `run`
/// names the setting and the path when it cannot open the database.
#[test]
fn storage_path_is_checked_by_check_config_and_named_by_run() {
    let check = |m: &Mailproc| m.run_cli(&["check-config"], "");
    // Under a file.
    let mut m = Mailproc::prepare(
        "server: { port: {PORT} }\nstorage: { path: \"{DIR}/config.yaml/mailproc.db\" }\n",
    );
    let (code, _, err) = check(&m);
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("storage.path: ") && err.contains("config.yaml is not a directory"),
        "{err}"
    );
    run_refused(&mut m);
    assert!(
        m.log().contains("storage.path ") && m.log().contains("config.yaml/mailproc.db"),
        "{}",
        m.log()
    );
    // A file that is not a database is refused and left as it was.
    let mut m =
        Mailproc::prepare("server: { port: {PORT} }\nstorage: { path: \"{DIR}/notes.txt\" }\n");
    let notes = m.config_path.with_file_name("notes.txt");
    let text = "my notes, not a database\n".repeat(100);
    std::fs::write(&notes, &text).unwrap();
    let (code, _, err) = check(&m);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("notes.txt is not an SQLite database"), "{err}");
    run_refused(&mut m);
    assert!(m.log().contains("storage.path "), "{}", m.log());
    assert_eq!(std::fs::read_to_string(&notes).unwrap(), text);
    // A FIFO: `run` says what `check-config` says, not SQLite's "disk I/O
    // error" (an audit, stop 55).
    let mut m =
        Mailproc::prepare("server: { port: {PORT} }\nstorage: { path: \"{DIR}/fifo.db\" }\n");
    let fifo = m.config_path.with_file_name("fifo.db");
    assert!(std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap()
        .success());
    let (code, _, err) = check(&m);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("fifo.db is not a file"), "{err}");
    run_refused(&mut m);
    assert!(m.log().contains("fifo.db is not a file"), "{}", m.log());
    // A missing directory is fine, and the check creates nothing.
    let m = Mailproc::prepare(
        "server: { port: {PORT} }\nstorage: { path: \"{DIR}/state/deeper/mailproc.db\" }\n",
    );
    let (code, out, err) = check(&m);
    assert_eq!(code, 0, "{out}{err}");
    assert!(!m.config_path.with_file_name("state").exists());
    // A directory on a read-only mount (root may write anywhere else).
    let m = Mailproc::prepare(
        "server: { port: {PORT} }\nstorage: { path: \"{DIR}/ro/mailproc.db\" }\n",
    );
    let ro = m.config_path.with_file_name("ro");
    std::fs::create_dir(&ro).unwrap();
    let script = format!(
        "mount --bind {d} {d} && mount -o remount,bind,ro {d} && exec {bin} --config {c} check-config",
        d = ro.display(),
        bin = common::mailproc::bin(),
        c = m.config_path.display()
    );
    let out = std::process::Command::new("timeout")
        .args(["20", "unshare", "--mount", "sh", "-c", &script])
        .output()
        .expect("unshare (util-linux) runs");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("storage.path: mailproc's user may not write in"),
        "{err}"
    );
    // A file there: the read-only file system is named (an audit, stop
    // 56, was told root should check as the service's user).
    std::fs::write(ro.join("mailproc.db"), b"").unwrap();
    let out = std::process::Command::new("timeout")
        .args(["20", "unshare", "--mount", "sh", "-c", &script])
        .output()
        .expect("unshare (util-linux) runs");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("mailproc.db is on a read-only file system"),
        "{err}"
    );
    // A WAL database of its own in a directory it may not write (SQLite
    // cannot read one without its -shm file): the directory is named,
    // where an audit got "attempt to write a readonly database". Checked
    // as an unprivileged user (`setpriv`), as the service runs.
    let m = Mailproc::prepare(
        "server: { port: {PORT} }\nstorage: { path: \"{DIR}/nb/mailproc.db\" }\n",
    );
    use std::os::unix::fs::PermissionsExt;
    let nb = m.config_path.with_file_name("nb");
    std::fs::create_dir(&nb).unwrap();
    let file = nb.join("mailproc.db");
    let db = rusqlite::Connection::open(&file).unwrap();
    db.pragma_update(None, "journal_mode", "wal").unwrap();
    db.execute_batch("CREATE TABLE t (x); INSERT INTO t VALUES (1);")
        .unwrap();
    drop(db);
    for p in [m.dir.path(), nb.as_path()] {
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    std::fs::set_permissions(&m.config_path, std::fs::Permissions::from_mode(0o644)).unwrap();
    std::os::unix::fs::chown(&file, Some(65534), Some(65534)).unwrap();
    let out = std::process::Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
        .arg(common::mailproc::bin())
        .args(["--config", m.config_path.to_str().unwrap(), "check-config"])
        .output()
        .expect("setpriv (util-linux) runs");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("storage.path: mailproc's user may not write in"),
        "{err}"
    );
    assert!(
        !nb.join("mailproc.db-shm").exists(),
        "the check wrote beside it"
    );
}

/// Found by an audit (stop 56): a damaged database passed `check-config`
/// and started, every account then failing each pass with "database disk
/// image is malformed" while `/health` said the database was fine; and a
/// copy made with sqlite3's `.dump` (no schema version) was called another
/// program's file, with advice that would process every mailbox again.
#[test]
fn a_damaged_or_versionless_database_is_refused_with_what_to_do() {
    let check = |m: &Mailproc| m.run_cli(&["check-config"], "");
    let mut m = Mailproc::prepare(BASE);
    let db = m.config_path.with_file_name("mailproc.db");
    let (code, _, err) = m.run_cli(&["set-password", "admin"], "a long enough password\n");
    assert_eq!(code, 0, "{err}");
    let good = std::fs::read(&db).unwrap();
    assert!(good.len() > 16 * 4096, "{} bytes", good.len());

    // Versionless: told it is mailproc's, and how to set the version.
    let c = rusqlite::Connection::open(&db).unwrap();
    let version: i64 = c
        .pragma_query_value(None, "user_version", |r| r.get(0))
        .unwrap();
    c.pragma_update(None, "user_version", 0).unwrap();
    drop(c);
    let (code, _, err) = check(&m);
    assert_eq!(code, 1, "{err}");
    let set = format!("PRAGMA user_version = {version}");
    assert!(
        err.contains("mailproc's tables but no schema version") && err.contains(&set),
        "{err}"
    );
    assert!(!err.contains("another program"), "{err}");
    run_refused(&mut m);
    assert!(m.log().contains(&set), "{}", m.log());
    // Doing what it says mends it.
    let c = rusqlite::Connection::open(&db).unwrap();
    c.pragma_update(None, "user_version", version).unwrap();
    drop(c);
    let (code, out, err) = check(&m);
    assert_eq!(code, 0, "{out}{err}");

    // Damaged: pages of its tables overwritten.
    std::fs::remove_file(db.with_file_name("mailproc.db-wal")).ok();
    std::fs::remove_file(db.with_file_name("mailproc.db-shm")).ok();
    let mut bad = good.clone();
    for (i, b) in bad[3 * 4096..9 * 4096].iter_mut().enumerate() {
        *b = (i.wrapping_mul(2_654_435_761) >> 13) as u8;
    }
    std::fs::write(&db, &bad).unwrap();
    let (code, _, err) = check(&m);
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("the file is damaged") && err.contains("Backups"),
        "{err}"
    );
    run_refused(&mut m);
    assert!(m.log().contains("the file is damaged"), "{}", m.log());
    assert_eq!(
        std::fs::read(&db).unwrap(),
        bad,
        "the damaged file was changed"
    );
}

/// Found by an audit of the binary: each of these passed `check-config`.
/// A SOCKS proxy made every model call panic (this build speaks HTTP
/// proxies only); an empty session secret keyed the dashboard's cookies
/// with nothing; an `activity_retention` of zero pruned every record at
/// start.
#[test]
fn a_socks_proxy_an_empty_session_secret_and_no_retention_name_their_keys() {
    refused(
        "classifier: { providers: [ { name: p, kind: openai, url: \"http://127.0.0.1:9/v1/chat/completions\", model: m, proxy: \"socks5://127.0.0.1:1\" } ] }\n",
        "classifier.providers[0].proxy",
        "SOCKS proxy is not supported",
    );
    for blank in ["\"\"", "\"   \""] {
        refused(
            &format!("dashboard: {{ session_secret: {blank} }}\n"),
            "dashboard.session_secret",
            "must not be empty or blank",
        );
    }
    let m = Mailproc::prepare(
        "server: { port: {PORT} }\nstorage: { path: \"{DIR}/mailproc.db\", activity_retention: 0s }\n",
    );
    let (code, _, err) = m.run_cli(&["check-config"], "");
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("storage.activity_retention: must be longer than zero"),
        "{err}"
    );
    // An HTTP proxy, and a short secret (a warning), still pass.
    let m = Mailproc::prepare(&format!(
        "{BASE}dashboard: {{ session_secret: short }}\nclassifier: {{ providers: [ {{ name: p, kind: openai, url: \"http://127.0.0.1:9/v1/chat/completions\", model: m, proxy: \"http://127.0.0.1:3128\" }} ] }}\n"
    ));
    let (code, _, err) = m.run_cli(&["check-config"], "");
    assert_eq!(code, 0, "{err}");
    assert!(
        err.contains("warning: dashboard.session_secret: 5 characters"),
        "{err}"
    );
}
