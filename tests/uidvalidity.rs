//! Issue [8]: a row left waiting for a retry when its folder's UIDVALIDITY
//! changes can never be finished (its UID names another message now, or
//! none). It is closed as failed with that reason, and the new generation
//! of the folder is processed as usual.

mod common;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use common::dovecot::Dovecot;
use common::mailproc::Mailproc;
use common::model::{answer, Model, Reply};
use serde_json::{json, Value};

fn msg(id: &str, subject: &str) -> Vec<u8> {
    format!(
        "From: Sender <sender@example.org>\r\nTo: test@example.test\r\nSubject: {subject}\r\n\
         Message-ID: <{id}@mailproc.test>\r\nDate: Sat, 21 Nov 2026 10:00:00 +0000\r\n\
         Content-Type: text/plain\r\n\r\nBody.\r\n"
    )
    .into_bytes()
}

fn row(m: &Mailproc, id: &str) -> Option<Value> {
    let r = m.get("/api/activity?pageSize=100");
    r.body["entries"]
        .as_array()?
        .iter()
        .find(|e| e["messageId"] == format!("<{id}@mailproc.test>"))
        .cloned()
}

#[test]
fn rows_waiting_under_an_old_uidvalidity_are_closed_as_failed_naming_it() {
    let d = Dovecot::start();
    d.create_mailbox("test", "Work");
    d.seed("test", "Work", &msg("old", "Before the change"));
    let up = Arc::new(AtomicBool::new(false));
    let u = up.clone();
    let model = Model::start(2, move |_| {
        if u.load(Ordering::SeqCst) {
            answer(json!([]), "fine")
        } else {
            Reply::Status(500, None)
        }
    });
    let m = Mailproc::start(&format!(
        "server: {{ port: {{PORT}} }}\nstorage: {{ path: \"{{DIR}}/mailproc.db\" }}\n\
         classifier:\n  providers:\n    - {{ name: fake, kind: openai, url: \"{}\", model: scripted, timeout: 5s, max_retries: 0 }}\n\
         accounts:\n  - name: acct\n    imap: {{ host: 127.0.0.1, port: {}, security: none, username: test, password: secret }}\n    \
         folders: {{ watch: [Work] }}\n    backlog: all\n    retry_delay: 1h\n    max_attempts: 5\n    provider: fake\n",
        model.url(),
        d.imap_port
    ));
    m.wait_for(
        Duration::from_secs(20),
        "the first message retrying",
        || row(&m, "old").filter(|r| r["status"] == "retrying"),
    );
    let asked_before = model.count();
    // A new generation of the folder: same name, new UIDVALIDITY.
    d.delete_mailbox("test", "Work");
    d.create_mailbox("test", "Work");
    up.store(true, Ordering::SeqCst);
    let r = m.post("/api/accounts/acct/process", "");
    assert!(r.status < 300, "{}", r.text);
    let old = m.wait_for(Duration::from_secs(30), "the old row closed", || {
        row(&m, "old").filter(|r| r["status"] == "failed")
    });
    let error = old["error"].as_str().unwrap_or_default();
    assert!(error.contains("UIDVALIDITY changed from"), "{error}");
    // Mail of the new generation (arriving after the change was seen; what
    // was already there is not reprocessed) goes through as usual.
    d.seed("test", "Work", &msg("new", "After the change"));
    m.wait_for(Duration::from_secs(30), "the new message processed", || {
        row(&m, "new").filter(|r| r["status"] == "ok")
    });
    assert_eq!(
        model.count(),
        asked_before + 1,
        "only the new message went to the model"
    );
    assert!(m
        .log()
        .contains("1 unfinished message(s) of the old generation closed as failed"));
}
