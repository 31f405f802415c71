//! Issue [19]: a backlog of at least 2,000 messages in one folder has its
//! headers read on two sessions (`src/imap/reader.rs`): the account's own
//! and a second one opened for that folder's pass, which reads every other
//! FETCH and is closed after it. Every message is still sorted exactly
//! once; a crash in the middle loses and repeats nothing; a server that
//! refuses the second login gets the pass done on one session.
//!
//! The first scenario runs on Dovecot, Cyrus and Courier
//! (`on_every_server!`); the others need Dovecot's settings.

mod common;

use std::time::Duration;

use common::dovecot::Dovecot;
use common::mail::msg_with;
use common::mailproc::Mailproc;
use common::server::{self, Kind};
use common::world::{config, has, ok_rows, only_copy, state, Mailbox};

on_every_server!(a_large_backlog_is_read_on_two_sessions_and_sorted_once);

/// How long a wait may see no progress at all before it fails.
const STALL: Duration = Duration::from_secs(120);

/// Above the two-session threshold (2,000) with room to spare: five
/// FETCHes of 512, two of them on the second session.
const N: usize = 2_600;

/// Message `i`: every third a list message (moved to Lists), every third
/// an invoice (flagged where it is), the rest left alone.
fn message(i: usize) -> Vec<u8> {
    match i % 3 {
        0 => msg_with(
            &format!("t{i}"),
            &format!("Digest {i}"),
            "List-Id: <dev.lists.example.org>\r\n",
        ),
        1 => msg_with(&format!("t{i}"), &format!("Invoice {i}"), ""),
        _ => msg_with(&format!("t{i}"), &format!("Note {i}"), ""),
    }
}

fn account(mb: &Mailbox) -> String {
    mb.account(
        "acct",
        "    folders: { watch: [INBOX], allowed: [Lists], create: true }\n    \
         backlog: all\n    poll_interval: 60s\n    \
         rules:\n      \
         - { name: lists, when: { header: List-Id }, actions: [ { type: move, folder: Lists } ] }\n      \
         - { name: invoices, when: { subject: \"(?i)^invoice\" }, actions: [ { type: flag, flags: [\"\\\\Flagged\"] } ] }\n",
    )
}

/// Every message exactly once, in the folder and with the flags its rule
/// chose, nothing left `\Deleted`; and one row per message.
fn assert_sorted_once(mb: &Mailbox, m: &Mailproc) {
    let at = mb.where_is();
    let name = mb.kind().name();
    for i in 0..N {
        let id = format!("<t{i}@mailproc.test>");
        let c = only_copy(&at, &id, name);
        let folder = if i % 3 == 0 { "Lists" } else { "INBOX" };
        assert_eq!(c.mailbox, mb.folder(folder), "{name}: {id}");
        assert_eq!(
            has(&c.flags, "\\Flagged"),
            i % 3 == 1,
            "{name}: {id}: {:?}",
            c.flags
        );
        assert!(!has(&c.flags, "\\Deleted"), "{name}: {id} left \\Deleted");
    }
    let db = rusqlite::Connection::open(m.db_path()).unwrap();
    let (rows, ids, ok): (i64, i64, i64) = db
        .query_row(
            "SELECT count(*), count(DISTINCT message_id), count(*) FILTER (WHERE status = 'ok')
             FROM emails",
            [],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )
        .unwrap();
    assert_eq!(
        (rows, ids, ok),
        (N as i64, N as i64, N as i64),
        "{name}: rows"
    );
}

fn wait_all_ok(m: &Mailproc) {
    m.wait_count(STALL, &format!("{N} recorded ok"), N as u64, || ok_rows(m));
}

/// The pass ends a little after its last record (indexing for search, the
/// checkpoint): the account is `processing` until then, so "connected" is
/// waited for, not read once (read once, it failed under a loaded suite).
fn wait_connected(m: &Mailproc) {
    m.wait_for(STALL, "the account connected, its pass over", || {
        (state(m, "acct") == "connected").then_some(())
    });
}

/// The second session opened, read, and was closed after the pass; the
/// account holds one session again. Before: one session read everything
/// (no "two sessions" in the log).
fn a_large_backlog_is_read_on_two_sessions_and_sorted_once(kind: Kind) {
    let s = server::shared(kind);
    let mb = Mailbox::new(&**s, "twosess");
    mb.seed("INBOX", &(0..N).map(message).collect::<Vec<_>>());
    let m = Mailproc::start(&config(&account(&mb), None));
    wait_all_ok(&m);
    m.wait_for(STALL, "the second session closed", || {
        m.log().contains("second session closed").then_some(())
    });
    let log = m.log();
    let name = kind.name();
    assert!(
        log.contains(&format!(
            "{N} UID(s) to read: their headers on two sessions"
        )),
        "{name}: no second session:\n{log}"
    );
    assert!(
        !log.contains("reading on with one session"),
        "{name}: the second session failed:\n{log}"
    );
    assert_sorted_once(&mb, &m);
    wait_connected(&m);
}

/// A server that allows one session per user and address refuses the
/// second: the pass is done on the first, and the account shows no error.
/// Before: no second login was ever tried (Dovecot logged no refusal).
#[test]
fn the_pass_completes_on_one_session_when_the_second_login_is_refused() {
    let d = Dovecot::start_with(
        "protocol imap {\n  mail_max_userip_connections = 1\n}\n",
        false,
    );
    let mb = Mailbox::new(&d, "onlyone");
    mb.seed("INBOX", &(0..N).map(message).collect::<Vec<_>>());
    let m = Mailproc::start(&config(&account(&mb), None));
    wait_all_ok(&m);
    let log = m.log();
    assert!(
        log.contains("reading on with one session"),
        "the second session was not refused:\n{log}"
    );
    assert!(
        d.log().contains("Maximum number of connections"),
        "Dovecot did not refuse a second session:\n{}",
        d.log()
    );
    assert_sorted_once(&mb, &m);
    wait_connected(&m);
    let acct = &m.get("/api/accounts").body["accounts"][0];
    assert!(acct["lastError"].is_null(), "{acct}");
}

/// mailproc killed (SIGKILL) while both sessions read the headers and some
/// decisions are journalled, then started again: every message sorted
/// once, one row each. Each chunk's decision pauses (failpoint `decide`)
/// so the kill falls inside the pass.
#[test]
fn a_kill_mid_pass_on_two_sessions_loses_and_repeats_nothing() {
    let s = server::shared(Kind::Dovecot);
    let mb = Mailbox::new(&**s, "killed");
    mb.seed("INBOX", &(0..N).map(message).collect::<Vec<_>>());
    let mut m = Mailproc::prepare(&config(&account(&mb), None));
    m.spawn(&[("MAILPROC_FAILPOINTS", "decide=pause:400")]);
    m.wait_ready();
    let db = m.db_path();
    m.wait_for(
        STALL,
        "decisions journalled while both sessions read",
        || {
            let pending: i64 = rusqlite::Connection::open(&db)
                .ok()?
                .query_row(
                    "SELECT count(*) FROM emails WHERE status = 'pending'",
                    [],
                    |r| r.get(0),
                )
                .ok()?;
            (pending > 0 && m.log().contains("second session open")).then_some(())
        },
    );
    m.kill();
    let ok_before: i64 = rusqlite::Connection::open(&db)
        .unwrap()
        .query_row("SELECT count(*) FROM emails WHERE status = 'ok'", [], |r| {
            r.get(0)
        })
        .unwrap();
    assert!(
        ok_before < N as i64,
        "the kill came after the pass: {ok_before} ok"
    );
    m.spawn(&[]);
    m.wait_ready();
    wait_all_ok(&m);
    assert_sorted_once(&mb, &m);
}
