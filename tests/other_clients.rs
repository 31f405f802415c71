//! What the user's other mail clients do while mailproc works, on Dovecot,
//! Cyrus and Courier alike (`on_every_server!`): a folder deleted that a
//! rule files into, a message deleted between mailproc reading it and
//! moving it. Both were found by an audit of the binary against the
//! demo's Dovecot (see each scenario for what failed).

mod common;

use std::time::Duration;

use common::imap_client::{mailbox_arg, session};
use common::mail::msg_with;
use common::mailproc::Mailproc;
use common::model::{answer, Model};
use common::server::{self, Kind};
use common::world::{config, only_copy, row_of, Mailbox};
use serde_json::{json, Value};

on_every_server!(
    a_folder_name_holding_the_servers_separator_is_said,
    a_filing_folder_deleted_while_running_is_created_again,
    a_folder_the_user_makes_after_login_is_used_without_create,
    a_message_deleted_before_its_move_is_not_recorded_as_moved,
);

/// How long a wait may see no progress at all before it fails.
const STALL: Duration = Duration::from_secs(60);

/// The row of `id` once it is final (not pending, not retrying).
fn settled(m: &Mailproc, id: &str) -> Value {
    m.wait_for(STALL, &format!("{id} settled"), || {
        row_of(m, id).filter(|r| r["status"] == "ok" || r["status"] == "failed")
    })
}

/// The user deletes (or renames) `Lists` in their mail client while
/// mailproc runs. Before: the move was refused ("Mailbox doesn't exist"),
/// retried and parked `failed`, with `folders.create: true`, until a
/// reconnect read the folder list again; every new message filed there
/// failed the same way, and the account read `connected` with no error.
fn a_filing_folder_deleted_while_running_is_created_again(kind: Kind) {
    let s = server::shared(kind);
    let mb = Mailbox::new(&**s, "gonefolder");
    mb.create("Lists");
    let acct = mb.account(
        "acct",
        "    folders: { watch: [INBOX], allowed: [Lists], create: true }\n    \
         backlog: all\n    retry_delay: 1s\n    max_attempts: 2\n    \
         rules:\n      - { name: lists, when: { header: List-Id }, actions: [ { type: move, folder: Lists } ] }\n",
    );
    let list = |id: &str| msg_with(id, "Digest", "List-Id: <dev.lists.example.org>\r\n");
    mb.seed("INBOX", &[list("g1")]);
    let m = Mailproc::start(&config(&acct, None));
    assert_eq!(settled(&m, "g1")["status"], "ok");
    mb.command(&format!("DELETE {}", mailbox_arg(&mb.folder("Lists"))));
    mb.seed("INBOX", &[list("g2")]);
    let row = settled(&m, "g2");
    let name = kind.name();
    assert_eq!(row["status"], "ok", "{name}: {row}\n{}", m.log());
    let at = mb.where_is();
    let g2 = only_copy(&at, "<g2@mailproc.test>", name);
    assert_eq!(g2.mailbox, mb.folder("Lists"), "{name}");
    assert!(
        m.log()
            .contains("was gone (deleted or renamed since login): created it again"),
        "{name}: {}",
        m.log()
    );
}

/// All three servers separate levels with `.`; a configured name is
/// written with `/`. Found by an audit: `Trail.` passed the configuration,
/// then every move there failed with the server's "Invalid mailbox name"
/// after a CREATE it refused as existing (`Trail`), and `v1.2 Releases`
/// silently became `2 Releases` inside a new `v1`. Now the name with an
/// empty level is refused before any command with words that say why,
/// and the other is a warning at login naming what it is on the server.
fn a_folder_name_holding_the_servers_separator_is_said(kind: Kind) {
    let s = server::shared(kind);
    let mb = Mailbox::new(&**s, "separator");
    let acct = mb.account(
        "acct",
        "    folders: { watch: [INBOX], allowed: [\"Trail.\", \"v1.2 Releases\"], create: true }\n    \
         backlog: all\n    max_attempts: 1\n    \
         rules:\n      - { name: lists, when: { header: List-Id }, actions: [ { type: move, folder: \"Trail.\" } ] }\n",
    );
    mb.seed(
        "INBOX",
        &[msg_with(
            "t1",
            "Digest",
            "List-Id: <dev.lists.example.org>\r\n",
        )],
    );
    let m = Mailproc::start(&config(&acct, None));
    let name = kind.name();
    let row = settled(&m, "t1");
    assert_eq!(row["status"], "failed", "{name}: {row}");
    let error = row["error"].as_str().unwrap_or_default();
    assert!(error.contains("a level of it is empty"), "{name}: {error}");
    let log = m.log();
    assert!(
        log.lines().any(|l| l.contains("[WARN]")
            && l.contains("\"v1.2 Releases\" holds '.'")
            && l.contains("write levels with \"/\"")),
        "{name}: {log}"
    );
    assert!(
        log.lines().any(|l| l.contains("[WARN]")
            && l.contains("\"Trail.\" is")
            && l.contains("can never be used")),
        "{name}: {log}"
    );
    assert_eq!(mb.messages()[0].mailbox, "INBOX", "{name}");
    // Refused before any command: no CREATE the server reads as `Trail`
    // (found by the second audit: a stray folder, made again after the
    // user deleted it).
    assert!(!log.contains("created folder \"Trail.\""), "{name}: {log}");
    assert!(!log.contains("CREATE \"Trail.\""), "{name}: {log}");
}

/// With `folders.create: false`, a filing folder missing at login that the
/// user makes later is used once it is there. Before, the folder list read
/// at login decided for the whole session: every retry failed "does not
/// exist" until a reconnect.
fn a_folder_the_user_makes_after_login_is_used_without_create(kind: Kind) {
    let s = server::shared(kind);
    let mb = Mailbox::new(&**s, "latefolder");
    let acct = mb.account(
        "acct",
        "    folders: { watch: [INBOX], allowed: [Later], create: false }\n    \
         backlog: all\n    retry_delay: 1s\n    max_attempts: 10\n    \
         rules:\n      - { name: lists, when: { header: List-Id }, actions: [ { type: move, folder: Later } ] }\n",
    );
    mb.seed(
        "INBOX",
        &[msg_with(
            "l1",
            "Digest",
            "List-Id: <dev.lists.example.org>\r\n",
        )],
    );
    let m = Mailproc::start(&config(&acct, None));
    let name = kind.name();
    let row = m.wait_for(STALL, "the first attempt failed", || {
        row_of(&m, "l1").filter(|r| r["status"] == "retrying")
    });
    let error = row["error"].as_str().unwrap_or_default();
    assert!(error.contains("folders.create is false"), "{name}: {error}");
    mb.create("Later");
    let row = settled(&m, "l1");
    assert_eq!(row["status"], "ok", "{name}: {row}");
    let at = mb.where_is();
    assert_eq!(
        only_copy(&at, "<l1@mailproc.test>", name).mailbox,
        mb.folder("Later"),
        "{name}"
    );
}

/// Another client deletes a message after mailproc read it and before its
/// move (here while the model thinks about it). Before: the message missing
/// from the folder after the move was recorded `ok`, "moved to
/// Newsletters", an `action_taken` hook sent, though it was nowhere (and
/// with a session that had already heard of the expunge, silently). The
/// server's COPYUID says which messages the move took; the other is a
/// failure saying what happened, and its neighbour is moved as decided.
fn a_message_deleted_before_its_move_is_not_recorded_as_moved(kind: Kind) {
    let s = server::shared(kind);
    let mb = Mailbox::new(&**s, "vanish");
    let acct = mb.account(
        "acct",
        "    provider: fake\n    \
         folders: { watch: [INBOX], allowed: [Newsletters], create: true }\n    \
         backlog: all\n    retry_delay: 1s\n    max_attempts: 2\n",
    );
    let (port, user, password) = (s.imap_port(), mb.user.clone(), mb.password.clone());
    let model = Model::start(8, move |r| {
        if r.subject() == "Newsletter doomed" {
            // The user's other client deletes it meanwhile.
            let mut c = session(port, &user, &password);
            assert!(c.command("SELECT INBOX").unwrap().ok());
            let found = c
                .command("UID SEARCH HEADER Message-ID doomed")
                .unwrap()
                .text_of_untagged();
            let uid = found
                .split_whitespace()
                .rev()
                .find(|w| w.chars().all(|c| c.is_ascii_digit()))
                .expect("the doomed message's UID")
                .to_string();
            let a = c
                .command(&format!("UID STORE {uid} +FLAGS.SILENT (\\Deleted)"))
                .unwrap();
            assert!(a.ok(), "{} {}", a.status, a.text);
            assert!(c.command("EXPUNGE").unwrap().ok());
            c.logout();
        }
        answer(
            json!([{ "type": "move", "folder": "Newsletters" }]),
            "a newsletter",
        )
    });
    mb.seed(
        "INBOX",
        &[
            msg_with("doomed", "Newsletter doomed", ""),
            msg_with("kept", "Newsletter kept", ""),
        ],
    );
    let m = Mailproc::start(&config(&acct, Some(&model)));
    let name = kind.name();
    let kept = settled(&m, "kept");
    assert_eq!(kept["status"], "ok", "{name}: {kept}");
    let doomed = settled(&m, "doomed");
    assert_eq!(doomed["status"], "failed", "{name}: {doomed}\n{}", m.log());
    let at = mb.where_is();
    assert_eq!(
        only_copy(&at, "<kept@mailproc.test>", name).mailbox,
        mb.folder("Newsletters"),
        "{name}"
    );
    assert!(
        !at.values()
            .flatten()
            .any(|m| m.message_id == "<doomed@mailproc.test>"),
        "{name}: the deleted message is nowhere"
    );
    let stats = m.get("/api/stats").body;
    assert_eq!(stats["by_action"]["move"], 1, "{name}: {stats}");
}
