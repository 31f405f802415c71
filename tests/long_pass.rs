//! Issue [19]: a folder whose new mail takes more than one window has the
//! moves its rules decide held across the windows and made once per
//! destination folder at the end of the pass (`src/imap/held.rs`), where
//! each window used to send one MOVE per destination: on a 100,000-message
//! Dovecot folder every MOVE costs about 150 ms, whatever it moves.
//!
//! The tests shrink the window to 100 messages (failpoint `window=100`,
//! debug builds only) so a pass of several windows takes a few hundred
//! messages. The first scenario runs on Dovecot, Cyrus and Courier
//! (`on_every_server!`); the others read what Dovecot received (its
//! rawlog) or kill mailproc while moves are held.

mod common;

use std::path::{Path, PathBuf};
use std::time::Duration;

use common::dovecot::Dovecot;
use common::mail::msg_with;
use common::mailproc::Mailproc;
use common::server::{self, Kind};
use common::world::{config, has, metric, ok_rows, only_copy, Mailbox};

on_every_server!(a_pass_of_several_windows_moves_once_per_folder);

/// How long a wait may see no progress at all before it fails.
const STALL: Duration = Duration::from_secs(120);

/// Six windows of 100.
const N: usize = 600;
const WINDOW: &str = "window=100";

/// Message `i`: every third a list message (moved to Lists), every third
/// an offer (moved to Offers and marked read), the rest flagged where
/// they are.
fn message(i: usize) -> Vec<u8> {
    match i % 3 {
        0 => msg_with(
            &format!("w{i}"),
            &format!("Digest {i}"),
            "List-Id: <dev.lists.example.org>\r\n",
        ),
        1 => msg_with(&format!("w{i}"), &format!("Offer {i}"), ""),
        _ => msg_with(&format!("w{i}"), &format!("Note {i}"), ""),
    }
}

fn account(mb: &Mailbox) -> String {
    mb.account(
        "acct",
        "    folders: { watch: [INBOX], allowed: [Lists, Offers], create: true }\n    \
         backlog: all\n    poll_interval: 60s\n    \
         rules:\n      \
         - { name: lists, when: { header: List-Id }, actions: [ { type: move, folder: Lists } ] }\n      \
         - { name: offers, when: { subject: \"(?i)^offer\" }, actions: [ { type: move, folder: Offers }, { type: read } ] }\n      \
         - { name: notes, when: { subject: \"(?i)^note\" }, actions: [ { type: flag, flags: [\"\\\\Flagged\"] } ] }\n",
    )
}

/// Starts mailproc on `mb` with the failpoints `points` (and the small
/// window).
fn start(mb: &Mailbox, points: &str) -> Mailproc {
    let mut m = Mailproc::prepare(&config(&account(mb), None));
    let points = if points.is_empty() {
        WINDOW.to_string()
    } else {
        format!("{WINDOW},{points}")
    };
    m.spawn(&[("MAILPROC_FAILPOINTS", &points)]);
    m.wait_ready();
    m
}

/// Every message exactly once, in the folder and with the flags its rule
/// chose, nothing left `\Deleted`; and one `ok` row per message.
fn assert_sorted_once(mb: &Mailbox, m: &Mailproc) {
    let at = mb.where_is();
    let name = mb.kind().name();
    for i in 0..N {
        let id = format!("<w{i}@mailproc.test>");
        let c = only_copy(&at, &id, name);
        let (folder, seen, flagged) = match i % 3 {
            0 => ("Lists", false, false),
            1 => ("Offers", true, false),
            _ => ("INBOX", false, true),
        };
        assert_eq!(c.mailbox, mb.folder(folder), "{name}: {id}");
        assert_eq!(has(&c.flags, "\\Seen"), seen, "{name}: {id}: {:?}", c.flags);
        assert_eq!(
            has(&c.flags, "\\Flagged"),
            flagged,
            "{name}: {id}: {:?}",
            c.flags
        );
        assert!(!has(&c.flags, "\\Deleted"), "{name}: {id} left \\Deleted");
    }
    let db = rusqlite::Connection::open(m.db_path()).unwrap();
    let (rows, ids, ok, moved): (i64, i64, i64, i64) = db
        .query_row(
            "SELECT count(*), count(DISTINCT message_id), count(*) FILTER (WHERE status = 'ok'),
                    count(*) FILTER (WHERE dest_folder IS NOT NULL)
             FROM emails",
            [],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)),
        )
        .unwrap();
    assert_eq!(
        (rows, ids, ok, moved),
        (N as i64, N as i64, N as i64, (N - N / 3) as i64),
        "{name}: rows (all, distinct, ok, with where they moved)"
    );
}

fn wait_all_ok(m: &Mailproc) {
    m.wait_count(STALL, &format!("{N} recorded ok"), N as u64, || ok_rows(m));
}

/// The move commands mailproc's log names (`UID MOVE of …` or, without
/// MOVE, `UID COPY of …`), with their destinations.
fn moves_logged(log: &str) -> Vec<String> {
    log.lines()
        .filter(|l| l.contains("UID MOVE of ") || l.contains("UID COPY of "))
        .filter_map(|l| {
            l.split(" to \"")
                .nth(1)?
                .split('"')
                .next()
                .map(str::to_string)
        })
        .collect()
}

/// Six windows, two destinations: two move commands, where each window
/// sent its own (twelve); every message sorted once, each with its row,
/// the flags of `move` + `read` on the moved copy. Before: twelve.
fn a_pass_of_several_windows_moves_once_per_folder(kind: Kind) {
    let s = server::shared(kind);
    let mb = Mailbox::new(&**s, "windows");
    mb.seed("INBOX", &(0..N).map(message).collect::<Vec<_>>());
    let m = start(&mb, "");
    wait_all_ok(&m);
    let name = kind.name();
    // (The rows are final before the line that ends the pass's moves.)
    m.wait_for(STALL, "the held moves made", || {
        m.log().contains("held message(s) moved").then_some(())
    });
    let log = m.log();
    let mut moves = moves_logged(&log);
    moves.sort();
    assert_eq!(
        moves,
        ["Lists", "Offers"],
        "{name}: one move per destination:\n{log}"
    );
    assert_sorted_once(&mb, &m);
    // Each announced once (webhooks and metrics go together), held or
    // recorded behind alike; the pass is over.
    m.wait_pass_after("acct", 0);
    let processed = metric(&m, "mailproc_emails_processed_total{account=\"acct\"}");
    assert_eq!(processed, N as f64, "{name}: messages announced");
}

/// The commands Dovecot received from all sessions of the user (its
/// rawlog, `*.in`), one per line.
fn received(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        if e.path().extension().is_some_and(|x| x == "in") {
            let text = String::from_utf8_lossy(&std::fs::read(e.path()).unwrap()).into_owned();
            out.extend(text.lines().map(str::to_string));
        }
    }
    out
}

/// A Dovecot that writes every session's traffic to `<home>/rawlog`,
/// with `user` made and the directory ready for it.
fn dovecot_with_rawlog(d: &Dovecot, user: &str) -> PathBuf {
    let dir = d.dir().join("mail").join(user).join("rawlog");
    std::fs::create_dir_all(&dir).unwrap();
    // (Dovecot's mail processes run as its own user.)
    let _ = std::process::Command::new("chmod")
        .args(["-R", "a+rwx"])
        .arg(d.dir().join("mail").join(user))
        .status();
    dir
}

/// The `UID MOVE` commands Dovecot received, counted from its side: two
/// for a pass of six windows to two folders (each window used to send
/// two, twelve in all). With the held moves bounded at 250 messages
/// (failpoint `held=250`, about 67 moving per window), they are made
/// after the fourth window and at the end: four.
#[test]
fn dovecot_receives_one_move_per_folder_and_release() {
    let d = Dovecot::start_with("protocol imap {\n  rawlog_dir = %h/rawlog\n}\n", false);
    for (prefix, points, expected) in [("one", "", 2), ("bounded", "held=250", 4)] {
        let mb = Mailbox::new(&d, prefix);
        mb.seed("INBOX", &(0..N).map(message).collect::<Vec<_>>());
        let dir = dovecot_with_rawlog(&d, &mb.user);
        let mut m = start(&mb, points);
        wait_all_ok(&m);
        assert_sorted_once(&mb, &m);
        m.terminate();
        let commands = received(&dir);
        assert!(
            commands.iter().any(|c| c.contains(" SELECT ")),
            "{prefix}: no rawlog of the sessions in {}: {:?}\n{}",
            dir.display(),
            std::fs::read_dir(&dir).map(|r| r.flatten().map(|e| e.path()).collect::<Vec<_>>()),
            d.log()
        );
        let moves: Vec<&String> = commands
            .iter()
            .filter(|c| c.to_ascii_uppercase().contains(" UID MOVE "))
            .collect();
        assert_eq!(
            moves.len(),
            expected,
            "{prefix}: UID MOVE commands Dovecot received: {moves:#?}\n{}",
            m.log()
        );
    }
}

/// `pending` rows now.
fn pending(db: &Path) -> i64 {
    rusqlite::Connection::open(db)
        .ok()
        .and_then(|c| {
            c.query_row(
                "SELECT count(*) FROM emails WHERE status = 'pending'",
                [],
                |r| r.get(0),
            )
            .ok()
        })
        .unwrap_or(0)
}

/// mailproc killed (SIGKILL) while moves of several windows are held:
/// their messages are journalled (`pending`) and still in INBOX, and the
/// next start moves each once and records each once. Each window's
/// decisions pause (failpoint `decide`) so the kill falls inside the
/// pass. Before: no more than one window's moves (about 67) were ever
/// pending at once, so the wait for more than 100 failed.
#[test]
fn a_kill_while_moves_are_held_loses_and_repeats_nothing() {
    let s = server::shared(Kind::Dovecot);
    let mb = Mailbox::new(&**s, "heldkill");
    mb.seed("INBOX", &(0..N).map(message).collect::<Vec<_>>());
    let mut m = start(&mb, "decide=pause:300");
    let db = m.db_path();
    m.wait_for(STALL, "the moves of two windows journalled, held", || {
        (pending(&db) > 100).then_some(())
    });
    m.kill();
    // Journalled and held: none of them has moved yet.
    let conn = rusqlite::Connection::open(&db).unwrap();
    let held: Vec<String> = conn
        .prepare("SELECT message_id FROM emails WHERE status = 'pending'")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert!(held.len() > 100, "{} pending", held.len());
    let at = mb.where_is();
    for id in &held {
        let c = only_copy(&at, id, "dovecot");
        assert_eq!(c.mailbox, "INBOX", "{id} moved while held");
    }
    m.spawn(&[("MAILPROC_FAILPOINTS", WINDOW)]);
    m.wait_ready();
    wait_all_ok(&m);
    assert_sorted_once(&mb, &m);
    assert_eq!(pending(&db), 0);
}

/// A held move the server refuses (its folder is missing and may not be
/// created) is recorded as a failed attempt and reported with the
/// message's Message-ID and subject, which its journalled row holds (the
/// pass keeps only UIDs); the other folder's moves are made. Before, the
/// log and the `error` webhook named only the UID: `UID 2 ()`, subject "".
#[test]
fn a_held_move_the_server_refuses_is_reported_by_its_names() {
    let s = server::shared(Kind::Dovecot);
    let mb = Mailbox::new(&**s, "heldrefused");
    mb.seed("INBOX", &(0..N).map(message).collect::<Vec<_>>());
    mb.create("Lists");
    let account = account(&mb).replace("create: true", "create: false");
    let mut m = Mailproc::prepare(&config(&account, None));
    m.spawn(&[("MAILPROC_FAILPOINTS", WINDOW)]);
    m.wait_ready();
    m.wait_for(STALL, "the held moves made", || {
        m.log().contains("held message(s) moved").then_some(())
    });
    let log = m.log();
    // Message 1 is an offer (to Offers, which is missing).
    let line = log
        .lines()
        .find(|l| l.contains("INBOX UID ") && l.contains("attempt 1"))
        .unwrap_or_else(|| panic!("no failed attempt logged:\n{log}"));
    let uid: u32 = line
        .split("INBOX UID ")
        .nth(1)
        .and_then(|r| r.split(' ').next())
        .and_then(|u| u.parse().ok())
        .unwrap_or_else(|| panic!("no UID in {line:?}"));
    // Seeded in order: UID u is message u - 1.
    let id = format!("<w{}@mailproc.test>", uid - 1);
    assert!(line.contains(&format!("UID {uid} ({id}): ")), "{line}");
    assert!(line.contains("Offers"), "{line}");
    let at = mb.where_is();
    assert_eq!(only_copy(&at, &id, "dovecot").mailbox, "INBOX");
    assert_eq!(
        only_copy(&at, "<w0@mailproc.test>", "dovecot").mailbox,
        "Lists"
    );
}

/// A set of UIDs too long for one command line (Dovecot refuses one past
/// 64 KiB; a fragmented set of a long pass's held moves takes about 7
/// bytes a UID) goes in several commands, each with its own record: with
/// the bound at 200 bytes (failpoint `set_max=200`), every `UID MOVE`
/// Dovecot received names at most 200 bytes of UIDs, and every message is
/// still sorted once. Before: one MOVE per folder, with a set of about
/// 700 bytes.
#[test]
fn a_long_uid_set_goes_in_pieces() {
    let d = Dovecot::start_with("protocol imap {\n  rawlog_dir = %h/rawlog\n}\n", false);
    let mb = Mailbox::new(&d, "pieces");
    mb.seed("INBOX", &(0..N).map(message).collect::<Vec<_>>());
    let dir = dovecot_with_rawlog(&d, &mb.user);
    let mut m = start(&mb, "set_max=200");
    wait_all_ok(&m);
    assert_sorted_once(&mb, &m);
    m.terminate();
    let moves: Vec<String> = received(&dir)
        .into_iter()
        .filter(|c| c.to_ascii_uppercase().contains(" UID MOVE "))
        .collect();
    // 200 list and 200 offer UIDs, every third of 600: about 700 bytes
    // each, in pieces of at most 200. (A rawlog line is `<time> <tag> UID
    // MOVE <set> <folder>`.)
    assert!(moves.len() >= 8, "{} UID MOVE(s): {moves:#?}", moves.len());
    for c in &moves {
        let set = c.split_whitespace().nth(4).unwrap_or("");
        assert!(
            !set.is_empty() && set.len() <= 200,
            "{} bytes: {c}",
            set.len()
        );
    }
}

/// A held move the server refuses takes back what the classifier learned
/// of its message when it was held: the retry that moves it once the
/// folder exists teaches it once. Before, it was learned twice (held, then
/// retried): the 200 offers counted 400 in the Offers class.
#[test]
fn a_refused_held_move_is_learned_once_when_its_retry_moves_it() {
    let s = server::shared(Kind::Dovecot);
    let mb = Mailbox::new(&**s, "heldlearned");
    mb.seed("INBOX", &(0..N).map(message).collect::<Vec<_>>());
    mb.create("Lists");
    let account = account(&mb)
        .replace("create: true", "create: false")
        .replace(
            "    backlog: all\n",
            "    backlog: all\n    retry_delay: 2s\n    max_attempts: 20\n    \
             learned: { enabled: true }\n",
        );
    let mut m = Mailproc::prepare(&config(&account, None));
    m.spawn(&[("MAILPROC_FAILPOINTS", WINDOW)]);
    m.wait_ready();
    m.wait_for(STALL, "the held moves made, the offers' refused", || {
        m.log()
            .contains("400 held message(s) moved (2 destination(s)), 200 failed")
            .then_some(())
    });
    // The folder appears; the account sees it once it connects again.
    mb.create("Offers");
    assert_eq!(m.post("/api/accounts/acct/reconnect", "").status, 200);
    m.wait_count(STALL, &format!("{N} recorded ok"), N as u64, || ok_rows(&m));
    // Learned after the records, before the pass ends.
    m.wait_pass_after("acct", 0);
    let at = mb.where_is();
    assert_eq!(
        only_copy(&at, "<w1@mailproc.test>", "dovecot").mailbox,
        "Offers"
    );
    let db = rusqlite::Connection::open(m.db_path()).unwrap();
    let docs = |class: &str| -> i64 {
        db.query_row(
            "SELECT coalesce(sum(docs), 0) FROM learn_classes WHERE account = 'acct' AND class = ?1",
            [class],
            |r| r.get(0),
        )
        .unwrap()
    };
    let learned: i64 = db
        .query_row(
            "SELECT learned_examples FROM learn_state WHERE account = 'acct'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(
        (docs("Offers"), docs("Lists"), docs("INBOX"), learned),
        (200, 200, 200, N as i64),
        "messages learned per class (Offers, Lists, INBOX), and in all"
    );
}
