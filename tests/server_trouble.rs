//! What a server does to the account's session through no fault of its
//! own, on Dovecot: a move refused because another client expunged one of
//! its messages, a folder whose clients set more keywords than a list may
//! hold, and a stored message the server cannot read, which ends every
//! session that reads it. Each was found by an audit of the release binary
//! against the demo's Dovecot; before its fix, each stopped mail from
//! being processed (see each test).

mod common;

use std::os::unix::fs::PermissionsExt;
use std::time::Duration;

use common::dovecot::Dovecot;
use common::mail::msg;
use common::mailproc::Mailproc;
use serde_json::Value;

/// An account on `d`'s user `test` watching INBOX, with `account`'s lines.
fn config(d: &Dovecot, account: &str) -> String {
    format!(
        "server: {{ port: {{PORT}} }}\nstorage: {{ path: \"{{DIR}}/mailproc.db\" }}\n\
         accounts:\n  - name: acct\n    imap: {{ host: 127.0.0.1, port: {}, security: none, username: test, password: secret }}\n    \
         backlog: all\n    poll_interval: 1h\n    folders: {{ watch: [INBOX], allowed: [Receipts] }}\n{account}",
        d.imap_port
    )
}

/// Files every receipt in Receipts, and nothing else.
const FILE_RECEIPTS: &str = "    rules:\n      \
    - { name: shop, when: { subject: \"^Your receipt\" }, actions: [ { type: move, folder: Receipts } ] }\n";

/// The row of `message_id` once it is not pending.
fn entry_of(m: &Mailproc, message_id: &str) -> Option<Value> {
    let all = m.get("/api/activity?pageSize=100").body["entries"].clone();
    all.as_array()?
        .iter()
        .find(|e| e["messageId"] == message_id && e["status"] != "pending")
        .cloned()
}

fn wait_entry(m: &Mailproc, message_id: &str) -> Value {
    m.wait_for(
        Duration::from_secs(30),
        &format!("the entry of {message_id}"),
        || entry_of(m, message_id),
    )
}

/// Found by an audit: Dovecot refuses a whole `UID MOVE` with `NO
/// [EXPUNGEISSUED]` when another client expunged one of its messages since
/// this session last heard, and every other message of the set was
/// charged a failed attempt (450 of a 15,000-message backlog parked beside
/// a client deleting mail). The ones still there are moved again.
#[test]
fn a_message_another_client_expunges_does_not_fail_the_rest_of_its_move() {
    let d = Dovecot::start();
    d.create_mailbox("test", "Receipts");
    for i in 0..10 {
        d.seed(
            "test",
            "INBOX",
            &msg(&format!("r{i}"), &format!("Your receipt {i}")),
        );
    }
    let yaml = config(&d, FILE_RECEIPTS);
    let mut m = Mailproc::prepare(&yaml);
    m.spawn(&[("MAILPROC_FAILPOINTS", "before-act=pause:3000")]);
    m.wait_ready();
    m.wait_paused(
        "before-act",
        Duration::from_secs(20),
        "the pass about to act",
    );
    // Another client deletes one of them while the account holds its
    // decisions.
    let tcp = std::net::TcpStream::connect(("127.0.0.1", d.imap_port)).unwrap();
    let mut c = imap::Client::new(tcp);
    c.read_greeting().unwrap();
    let mut s = c.login("test", "secret").map_err(|(e, _)| e).unwrap();
    s.select("INBOX").unwrap();
    let uids = s.uid_search("HEADER Message-ID \"<r3@\"").unwrap();
    assert_eq!(uids.len(), 1, "{uids:?}");
    let uid = uids.into_iter().next().unwrap().to_string();
    s.uid_store(&uid, "+FLAGS (\\Deleted)").unwrap();
    s.expunge().unwrap();
    s.logout().unwrap();

    for i in (0..10).filter(|i| *i != 3) {
        let id = format!("<r{i}@mailproc.test>");
        let e = m.wait_for(Duration::from_secs(20), &format!("{id} moved"), || {
            entry_of(&m, &id).filter(|e| e["status"] == "ok")
        });
        assert_eq!(e["attempts"], 1, "{e}");
        assert_eq!(d.mailboxes_of("test", &id), ["Receipts"], "{e}");
    }
    assert!(d.mailboxes_of("test", "<r3@mailproc.test>").is_empty());
    let log = m.log();
    assert!(
        log.contains("another client expunged some of them"),
        "Dovecot did not refuse the move as the test expects:\n{log}"
    );
}

/// Found by an audit: another client set 10,001 keywords on a message and
/// removed them again; Dovecot keeps listing them in the folder's `FLAGS`,
/// and every session ended at its SELECT ("a list of more than 10000
/// items"), for good. The folder's lists of flags are read past instead.
#[test]
fn a_folder_with_too_many_keywords_is_still_read() {
    let d = Dovecot::start();
    d.create_mailbox("test", "Receipts");
    d.seed("test", "INBOX", &msg("tagged", "Your receipt 1"));
    // A raw client: the imap crate refuses such answers as mailproc did.
    let mut c = common::imap_client::session(d.imap_port, "test", "secret");
    assert!(c.command("SELECT INBOX").unwrap().ok());
    let keywords: Vec<String> = (0..10_001).map(|i| format!("k{i}")).collect();
    let list = keywords.join(" ");
    for sign in ["+", "-"] {
        let r = c
            .command(&format!("UID STORE 1:* {sign}FLAGS.SILENT ({list})"))
            .unwrap();
        assert!(r.ok(), "{}", String::from_utf8_lossy(&r.raw()));
    }
    c.logout();

    let yaml = config(&d, FILE_RECEIPTS);
    let m = Mailproc::start(&yaml);
    let e = wait_entry(&m, "<tagged@mailproc.test>");
    assert_eq!(e["status"], "ok", "{e}");
    assert_eq!(
        d.mailboxes_of("test", "<tagged@mailproc.test>"),
        ["Receipts"]
    );
    assert!(!m.log().contains("more than 10000 items"), "{}", m.log());
}

/// Waits for the unreadable message's row, parked `failed`, and checks it
/// says why.
fn wait_parked(m: &Mailproc, stall: Duration) -> Value {
    let parked = m.wait_for(stall, "the unreadable message parked", || {
        entry_of(m, "").filter(|e| e["status"] == "failed")
    });
    let error = parked["error"].as_str().unwrap_or_default();
    assert!(
        error.contains("ended the session each time this message was read"),
        "{parked}"
    );
    parked
}

/// Audit (stop 51): after a folder's UIDVALIDITY changed, the messages of
/// the new generation were read (to tell what the old one handled) in one
/// FETCH of 1,000 with none of a pass's care: one message the server
/// cannot read ended every session there, and nothing of the folder was
/// processed again. That read now shrinks and parks as a pass does: the
/// unreadable message is parked `failed`, the others are processed.
#[test]
fn after_a_new_uidvalidity_a_message_the_server_cannot_read_is_parked_and_the_rest_go_on() {
    let d = Dovecot::start();
    d.create_mailbox("test", "Receipts");
    let old: Vec<Vec<u8>> = (0..3)
        .map(|i| msg(&format!("old{i}"), &format!("Your receipt old {i}")))
        .collect();
    d.seed_many("test", "INBOX", &old);
    let m = Mailproc::start(&config(&d, FILE_RECEIPTS));
    let stall = Duration::from_secs(90);
    for i in 0..3 {
        let id = format!("<old{i}@mailproc.test>");
        m.wait_for(stall, &format!("{id} filed"), || {
            entry_of(&m, &id).filter(|e| e["status"] == "ok")
        });
    }
    d.set_uidvalidity("test", "INBOX", 777);
    let raws: Vec<Vec<u8>> = (0..20)
        .map(|i| msg(&format!("n{i}"), &format!("Your receipt {i}")))
        .collect();
    d.seed_many("test", "INBOX", &raws);
    let bad = d.stored_file("test", "<n7@mailproc.test>");
    std::fs::set_permissions(&bad, std::fs::Permissions::from_mode(0o000)).unwrap();
    let r = m.post("/api/accounts/acct/process", "");
    assert!(r.status < 300, "{}", r.text);
    wait_parked(&m, stall);
    for i in (0..20).filter(|i| *i != 7) {
        let id = format!("<n{i}@mailproc.test>");
        m.wait_for(stall, &format!("{id} filed"), || {
            entry_of(&m, &id).filter(|e| e["status"] == "ok")
        });
    }
    assert!(
        m.log().contains("UIDVALIDITY changed"),
        "the change must have been met: {}",
        m.log()
    );
}

/// Found by an audit: one stored message Dovecot cannot read (a damaged
/// file; here, one its mail user may not read) ends every session at the
/// header FETCH (`* BYE Internal error occurred`). The account read the
/// same window again after each reconnect, for good: none of the other
/// messages ever got a row. Now each loss shrinks the window, the message
/// whose reading alone ends the session twice is parked `failed`, unread,
/// and the rest are processed; Retry asks the server again.
#[test]
fn a_message_the_server_cannot_read_is_parked_and_the_rest_go_on() {
    let d = Dovecot::start();
    d.create_mailbox("test", "Receipts");
    let raws: Vec<Vec<u8>> = (0..30)
        .map(|i| msg(&format!("r{i}"), &format!("Your receipt {i}")))
        .collect();
    d.seed_many("test", "INBOX", &raws);
    let bad = d.stored_file("test", "<r12@mailproc.test>");
    std::fs::set_permissions(&bad, std::fs::Permissions::from_mode(0o000)).unwrap();

    let m = Mailproc::start(&config(&d, FILE_RECEIPTS));
    let stall = Duration::from_secs(90);
    let parked = wait_parked(&m, stall);
    // The server's own words (its BYE before closing), not only
    // "connection lost".
    assert!(
        parked["error"]
            .as_str()
            .unwrap_or_default()
            .contains("Internal error"),
        "{parked}"
    );
    for i in (0..30).filter(|i| *i != 12) {
        let id = format!("<r{i}@mailproc.test>");
        let e = m.wait_for(stall, &format!("{id} filed"), || {
            entry_of(&m, &id).filter(|e| e["status"] == "ok")
        });
        assert_eq!(e["model"], "rules:shop", "{e}");
    }
    assert!(bad.exists() || d.stored_file("test", "<r12@").exists());

    // Readable again, and retried: filed like the rest.
    let bad = d.stored_file("test", "<r12@mailproc.test>");
    std::fs::set_permissions(&bad, std::fs::Permissions::from_mode(0o644)).unwrap();
    let id = parked["id"].as_i64().unwrap();
    let r = m.post(&format!("/api/activity/{id}/retry"), "");
    assert_eq!(r.status, 200, "{}", r.text);
    m.wait_for(stall, "r12 filed after the retry", || {
        (d.mailboxes_of("test", "<r12@mailproc.test>") == ["Receipts"]).then_some(())
    });
    // Its row says which message it was now (found by an audit: the
    // parked row's empty fields stayed empty after the retry).
    let row = m.wait_for(stall, "r12's row final", || {
        entry_of(&m, "<r12@mailproc.test>").filter(|e| e["status"] == "ok")
    });
    assert_eq!(row["subject"], "Your receipt 12", "{row}");
    assert_eq!(row["id"], parked["id"], "{row}");
    for i in 0..30 {
        let id = format!("<r{i}@mailproc.test>");
        assert_eq!(d.mailboxes_of("test", &id), ["Receipts"], "{id}");
    }
}
