//! Issue [14], the account loop (items 14, 15–20): what one hostile email,
//! a paused account, an orphaned retry, a command at the wrong moment or an
//! undo did to an account, from the outside: the real binary against a
//! real Dovecot (and the scripted model where a model decides).

mod common;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::dovecot::Dovecot;
use common::mail::msg;
use common::mailproc::Mailproc;
use common::model::{answer, Model};
use common::relay::{tap, Breaker};
use common::world::backoff_waits;
use serde_json::{json, Value};

/// One password account `acct` on `d`; `account` holds the rest of its
/// settings (folders, rules, ...), `top` goes before `accounts:`.
fn config(d: &Dovecot, top: &str, account: &str) -> String {
    format!(
        "server: {{ port: {{PORT}} }}\nstorage: {{ path: \"{{DIR}}/mailproc.db\" }}\n{top}\
         accounts:\n  - name: acct\n    imap: {{ host: 127.0.0.1, port: {}, security: none, username: test, password: secret }}\n    \
         backlog: all\n    poll_interval: 1h\n{account}",
        d.imap_port
    )
}

/// `yaml` (from [`config`]) with the account reaching `d` through a relay
/// on `port` instead.
fn through(yaml: &str, d: &Dovecot, port: u16) -> String {
    let direct = format!("port: {}, security", d.imap_port);
    assert!(yaml.contains(&direct), "{yaml}");
    yaml.replace(&direct, &format!("port: {port}, security"))
}

fn provider(m: &Model) -> String {
    format!(
        "classifier:\n  providers:\n    - {{ name: fake, kind: openai, url: \"{}\", model: scripted, timeout: 5s, max_retries: 1 }}\n",
        m.url()
    )
}

fn entries(m: &Mailproc, query: &str) -> Vec<Value> {
    m.get(&format!("/api/activity?pageSize=100{query}")).body["entries"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

fn entry_of(m: &Mailproc, message_id: &str) -> Option<Value> {
    entries(m, "")
        .into_iter()
        .find(|e| e["messageId"] == message_id && e["status"] != "pending")
}

fn wait_entry(m: &Mailproc, message_id: &str) -> Value {
    m.wait_for(
        Duration::from_secs(30),
        &format!("the entry of {message_id}"),
        || entry_of(m, message_id),
    )
}

/// Sets its flag when the test ends, also by a failed assertion: stops
/// what a test's helper thread keeps doing.
struct Stop<'a>(&'a AtomicBool);

impl Drop for Stop<'_> {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

fn state(m: &Mailproc) -> String {
    m.get("/api/accounts").body["accounts"][0]["state"]
        .as_str()
        .unwrap_or("")
        .to_string()
}

fn processed(m: &Mailproc) -> u64 {
    m.get("/api/stats").body["total_processed"]
        .as_u64()
        .unwrap_or(0)
}

/// The value of the metric line starting with `prefix`, 0 when absent.
fn metric(m: &Mailproc, prefix: &str) -> f64 {
    m.get("/metrics")
        .text
        .lines()
        .find(|l| l.starts_with(prefix))
        .and_then(|l| l.rsplit(' ').next())
        .and_then(|v| v.parse().ok())
        .unwrap_or(0.0)
}

fn passes(m: &Mailproc) -> f64 {
    metric(m, "mailproc_account_passes_total{account=\"acct\"}")
}

fn connection_errors(m: &Mailproc) -> f64 {
    metric(
        m,
        "mailproc_errors_total{account=\"acct\",kind=\"connection\"}",
    )
}

/// What the user does by hand in a mail client: moves the message whose
/// Message-ID contains `id_part` from one folder to another.
fn user_moves(d: &Dovecot, id_part: &str, from: &str, to: &str) {
    user_moves_where(d, &format!("HEADER Message-ID \"{id_part}\""), from, to);
}

/// [`user_moves`] of the one message `criterion` (`UID SEARCH`) finds.
fn user_moves_where(d: &Dovecot, criterion: &str, from: &str, to: &str) {
    let tcp = std::net::TcpStream::connect(("127.0.0.1", d.imap_port)).unwrap();
    let mut c = imap::Client::new(tcp);
    c.read_greeting().unwrap();
    let mut s = c.login("test", "secret").map_err(|(e, _)| e).unwrap();
    s.select(from).unwrap();
    let uids = s.uid_search(criterion).unwrap();
    assert_eq!(uids.len(), 1, "{criterion} in {from}: {uids:?}");
    s.uid_mv(uids.into_iter().next().unwrap().to_string(), to)
        .unwrap();
    s.logout().unwrap();
}

const SHOP_RULES: &str = "    rules:\n      \
    - { name: shop, when: { subject: \"^Your receipt\" }, actions: [ { type: flag, flags: [\"$Shop\"] }, { type: move, folder: Receipts } ] }\n      \
    - { name: urgent, when: { subject: \"^URGENT\" }, actions: [ { type: flag, flags: [\"\\\\Flagged\"] } ] }\n";

/// A Dovecot with the shop's folders, and an account on it that learns
/// and files receipts by [`SHOP_RULES`].
fn shop() -> (Dovecot, String) {
    let d = Dovecot::start();
    d.create_mailbox("test", "Receipts");
    d.create_mailbox("test", "Newsletters");
    let yaml = config(
        &d,
        "",
        &format!(
            "    folders: {{ watch: [INBOX], allowed: [Receipts, Newsletters], create: false }}\n    \
             learned: {{ enabled: true }}\n{SHOP_RULES}"
        ),
    );
    (d, yaml)
}

/// Item 15: a folded `Message-ID: <abc\r\n def@x>` kept its CRLF, the
/// hand-written quoting sent it raw inside `UID SEARCH`, Dovecot answered
/// BAD and the session dropped before every pass, once a second, for ever:
/// no new mail was sorted. Now strings go quoted or as literals (the
/// Message-ID unfolded first), a refused check costs only that message,
/// and the account goes on.
#[test]
fn a_folded_message_id_costs_its_correction_check_not_the_session() {
    let (d, yaml) = shop();
    let folded = "From: Shop <orders@shop.example>\r\nTo: test@example.test\r\n\
                  Subject: Your receipt, folded\r\nMessage-ID: <abc\r\n def@shop.example>\r\n\
                  Date: Sat, 21 Nov 2026 10:00:00 +0000\r\nContent-Type: text/plain\r\n\r\nThanks.\r\n";
    d.seed("test", "INBOX", folded.as_bytes());
    let m = Mailproc::start(&yaml);
    let e = m.wait_for(Duration::from_secs(30), "the receipt sorted", || {
        entries(&m, "")
            .into_iter()
            .find(|e| e["model"] == "rules:shop" && e["status"] == "ok")
    });
    assert!(e["messageId"].as_str().unwrap_or("").contains("abc"), "{e}");
    assert_eq!(
        d.mailboxes_of("test", "<abc def@shop.example>"),
        ["Receipts"]
    );

    // The user re-files it; new mail makes the account pass (and check).
    user_moves(&d, "abc", "Receipts", "Newsletters");
    d.seed("test", "INBOX", &msg("later1", "URGENT: after the re-file"));
    let later = wait_entry(&m, "<later1@mailproc.test>");
    assert_eq!(later["model"], "rules:urgent");
    d.seed("test", "INBOX", &msg("later2", "URGENT: and another"));
    wait_entry(&m, "<later2@mailproc.test>");

    // Found where the user put it, through the unfolded Message-ID.
    m.wait_for(Duration::from_secs(10), "the correction", || {
        (metric(&m, "mailproc_corrections_total{account=\"acct\"}") == 1.0).then_some(())
    });
    assert_eq!(
        d.mailboxes_of("test", "<abc def@shop.example>"),
        ["Newsletters"]
    );
    let log = m.log();
    assert!(!log.contains("connection lost"), "{log}");
    assert_eq!(connection_errors(&m), 0.0);
    assert_eq!(log.matches("acct: connected to").count(), 1, "{log}");
}

/// Found by an audit of the binary: the correction check searched the
/// recorded Message-ID, which is not always the field's text (a field
/// without angle brackets is recorded with them, a control character as
/// U+FFFD, a long one cut at 1,000 characters), found nothing and called
/// the message deleted. The search now takes the plain text of the id and
/// checks the hits against the record; a message in the destination whose
/// Message-ID holds another's is not taken for it.
#[test]
fn corrections_find_messages_whose_message_id_the_record_does_not_quote() {
    let (d, yaml) = shop();
    let long = format!("long-{}@shop.example", "x".repeat(1500));
    let ids: [(&str, Vec<u8>); 5] = [
        ("bare", b"no-brackets-1@shop.example".to_vec()),
        ("ctl", b"<ctl-\x01-part@shop.example>".to_vec()),
        ("long", format!("<{long}>").into_bytes()),
        // Short, and UTF-8 (RFC 6532): searched whole, as before.
        ("short", b"<s@b.c>".to_vec()),
        ("utf8", "<ünïcödé-1@éxämplé.jp>".as_bytes().to_vec()),
    ];
    for (i, (tag, id)) in ids.iter().enumerate() {
        let mut m = format!(
            "From: Shop <orders@shop.example>\r\nTo: test@example.test\r\n\
             Subject: Your receipt {tag}\r\nDate: Sat, 21 Nov 2026 10:0{i}:00 +0000\r\nMessage-ID: "
        )
        .into_bytes();
        m.extend_from_slice(id);
        m.extend_from_slice(b"\r\nContent-Type: text/plain\r\n\r\nThanks.\r\n");
        d.seed("test", "INBOX", &m);
    }
    // In the folder the user files into: a message whose Message-ID holds
    // the bare one's text.
    d.seed(
        "test",
        "Newsletters",
        b"From: x@y.example\r\nSubject: decoy\r\nMessage-ID: <old-no-brackets-1@shop.example.decoy>\r\n\r\nx\r\n",
    );
    let m = Mailproc::start(&yaml);
    m.wait_for(Duration::from_secs(30), "the receipts sorted", || {
        (entries(&m, "")
            .iter()
            .filter(|e| e["model"] == "rules:shop" && e["status"] == "ok")
            .count()
            == 5)
            .then_some(())
    });
    for tag in ["bare", "ctl", "long", "short", "utf8"] {
        user_moves_where(
            &d,
            &format!("SUBJECT \"Your receipt {tag}\""),
            "Receipts",
            "Newsletters",
        );
    }
    // After the re-files, 150 messages whose Message-IDs hold the bare
    // one's arrive where it went: the search's hits are read from the
    // newest, all of them if need be (the second regression audit: only
    // the newest 100 were, and the re-file was called a deletion).
    let decoys: Vec<Vec<u8>> = (0..150)
        .map(|i| {
            format!(
                "From: x@y.example\r\nSubject: decoy {i}\r\nMessage-ID: <d{i}-no-brackets-1@shop.example>\r\n\r\nx\r\n"
            )
            .into_bytes()
        })
        .collect();
    d.seed_many("test", "Newsletters", &decoys);
    d.seed(
        "test",
        "INBOX",
        &msg("later1", "URGENT: after the re-files"),
    );
    wait_entry(&m, "<later1@mailproc.test>");
    m.wait_for(Duration::from_secs(20), "five corrections", || {
        (metric(&m, "mailproc_corrections_total{account=\"acct\"}") == 5.0).then_some(())
    });
    let log = m.log();
    assert!(!log.contains("(deleted)"), "{log}");
}

/// Item 15, its last part: a server whose sessions break right after the
/// login (here a relay in front of Dovecot cuts each session when it first
/// opens a mailbox, after the account reached "connected") is retried ever
/// more slowly, not once a second.
#[test]
fn sessions_that_break_right_after_login_are_retried_ever_more_slowly() {
    let d = Dovecot::start();
    let relay = Breaker::start(d.imap_port);
    let yaml = through(
        &config(&d, "", "    folders: { watch: [INBOX] }\n"),
        &d,
        relay.port,
    );
    let m = Mailproc::start(&yaml);
    m.wait_for(Duration::from_secs(15), "connected", || {
        (state(&m) == "connected").then_some(())
    });
    relay.break_sessions();
    m.wait_for(Duration::from_secs(60), "a wait of 8 s or more", || {
        backoff_waits(&m.log())
            .iter()
            .any(|w| *w >= Duration::from_secs(8))
            .then_some(())
    });
    relay.heal();
    let waits = backoff_waits(&m.log());
    assert!(waits.len() >= 4, "{waits:?}");
    // Each of those sessions logged in and was connected before it broke.
    let log = m.log();
    assert!(
        log.matches("connection restored").count() >= waits.len() - 1,
        "{waits:?}\n{log}"
    );
    // And back once the server is well again: the next try comes after
    // the last wait logged (under 20 s, the back-off's next step).
    let deadline = Instant::now() + Duration::from_secs(45);
    while state(&m) != "connected" {
        assert!(
            Instant::now() < deadline,
            "not connected again 45 s after the server was well: {waits:?}\n--- mailproc log ---\n{}\n--- dovecot log ---\n{}",
            m.log(),
            d.log()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Item 16: `process` on a paused account ran nothing (the pass took the
/// request, then stopped for the pause at its first group for the model).
/// It runs one whole pass, and the account stays paused.
#[test]
fn process_runs_one_whole_pass_while_paused() {
    let d = Dovecot::start();
    let model = Model::start(2, |_| {
        answer(
            json!([{ "type": "move", "folder": "Receipts" }]),
            "a receipt",
        )
    });
    let m = Mailproc::start(&config(
        &d,
        &provider(&model),
        "    provider: fake\n    folders: { watch: [INBOX], allowed: [Receipts], create: true }\n",
    ));
    m.wait_for(Duration::from_secs(15), "connected", || {
        (state(&m) == "connected").then_some(())
    });
    let r = m.post("/api/accounts/acct/pause", "");
    assert_eq!(r.body["state"], "paused", "{}", r.text);
    for i in 0..3 {
        d.seed(
            "test",
            "INBOX",
            &msg(&format!("p{i}"), &format!("Paused {i}")),
        );
    }
    let r = m.post("/api/accounts/acct/process", "");
    assert!(r.status < 300, "{}", r.text);
    m.wait_for(Duration::from_secs(30), "three processed", || {
        (processed(&m) == 3).then_some(())
    });
    for i in 0..3 {
        assert_eq!(
            d.mailboxes_of("test", &format!("<p{i}@mailproc.test>")),
            ["Receipts"]
        );
    }
    m.wait_for(Duration::from_secs(10), "paused again", || {
        (state(&m) == "paused").then_some(())
    });
}

/// Item 17: a retry of a failed message whose folder is no longer watched
/// was due for ever, and the account passed five times a second. It is
/// closed as failed with the reason, and the account waits again.
#[test]
fn an_orphaned_retry_is_closed_with_its_reason_not_spun() {
    let d = Dovecot::start();
    d.create_mailbox("test", "Other");
    d.seed("test", "Other", &msg("o1", "Order 1"));
    let rules = "    max_attempts: 1\n    rules:\n      \
                 - { name: orders, when: { subject: \"^Order\" }, actions: [ { type: move, folder: Missing } ] }\n";
    let mut m = Mailproc::start(&config(
        &d,
        "",
        &format!(
            "    folders: {{ watch: [INBOX, Other], allowed: [Missing], create: false }}\n{rules}"
        ),
    ));
    let failed = m.wait_for(Duration::from_secs(30), "the order parked", || {
        entries(&m, "&status=failed").into_iter().next()
    });
    let id = failed["id"].as_i64().unwrap();
    // `Other` is no longer watched; the user retries the parked message.
    m.write_config(&config(
        &d,
        "",
        &format!("    folders: {{ watch: [INBOX], allowed: [Missing], create: false }}\n{rules}"),
    ));
    m.restart();
    let r = m.post(&format!("/api/activity/{id}/retry"), "");
    assert!(r.status < 300, "{}", r.text);
    let closed = m.wait_for(Duration::from_secs(30), "the retry closed", || {
        entries(&m, "&status=failed").into_iter().find(|e| {
            e["id"] == id
                && e["error"]
                    .as_str()
                    .unwrap_or("")
                    .contains("no longer watched")
        })
    });
    assert!(
        closed["error"].as_str().unwrap().contains("\"Other\""),
        "{closed}"
    );
    // No pass for nothing: over three seconds, at most one (a late wake).
    let before = passes(&m);
    std::thread::sleep(Duration::from_secs(3));
    let spun = passes(&m) - before;
    assert!(spun <= 1.0, "{spun} passes in 3 s with nothing to do");
}

/// Item 18: a command arriving while IDLE started made the start read the
/// wake-up (`WouldBlock`) and dropped the session (6 of 400 `process`
/// commands). A wake-up is never a lost connection: 400 commands, each
/// sent as soon as the pass before it ended (when the account is entering
/// IDLE), and one session throughout.
#[test]
fn hundreds_of_commands_while_idling_never_drop_the_session() {
    let d = Dovecot::start();
    let m = Mailproc::start(&config(&d, "", "    folders: { watch: [INBOX] }\n"));
    m.wait_for(Duration::from_secs(15), "connected", || {
        (state(&m) == "connected").then_some(())
    });
    for i in 0..400 {
        let before = passes(&m);
        let r = m.post("/api/accounts/acct/process", "");
        assert!(r.status < 300, "command {i}: {}", r.text);
        let deadline = Instant::now() + Duration::from_secs(20);
        while passes(&m) <= before {
            assert!(
                Instant::now() < deadline,
                "command {i}: no pass\n{}",
                m.log()
            );
            std::thread::sleep(Duration::from_millis(2));
        }
    }
    let log = m.log();
    assert_eq!(connection_errors(&m), 0.0, "{log}");
    assert!(!log.contains("connection lost"), "{log}");
    assert_eq!(log.matches("acct: connected to").count(), 1, "{log}");
}

/// Item 20 (a) and (c), confirmed: undo ran on an HTTP worker with a login
/// of its own, and recorded the message under the UIDNEXT it predicted
/// before the MOVE; a message arriving in between got that UID, the
/// account took it for the undone one and skipped it for good. Undo now
/// runs on the account's own session and records the UID the server gave.
#[test]
fn an_undo_uses_the_accounts_session_and_skips_no_message_arriving_meanwhile() {
    let d = Dovecot::start();
    d.create_mailbox("test", "Receipts");
    let receipt = "From: Shop <orders@shop.example>\r\nTo: test@example.test\r\n\
                   Subject: Your receipt 7\r\nMessage-ID: <r7@shop.example>\r\n\
                   Date: Sat, 21 Nov 2026 10:00:00 +0000\r\nContent-Type: text/plain\r\n\r\nThanks.\r\n";
    d.seed("test", "INBOX", receipt.as_bytes());
    let yaml = config(
        &d,
        "",
        &format!(
            "    folders: {{ watch: [INBOX], allowed: [Receipts], create: false }}\n{SHOP_RULES}"
        ),
    );
    let mut m = Mailproc::prepare(&yaml);
    m.spawn(&[("MAILPROC_FAILPOINTS", "undo-before-move=pause:3000")]);
    m.wait_ready();
    let moved = wait_entry(&m, "<r7@shop.example>");
    assert_eq!(d.mailboxes_of("test", "<r7@shop.example>"), ["Receipts"]);
    let id = moved["id"].as_i64().unwrap();

    let undone = std::thread::scope(|scope| {
        let undo = scope.spawn(|| m.post(&format!("/api/activity/{id}/undo"), ""));
        m.wait_paused(
            "undo-before-move",
            Duration::from_secs(20),
            "the undo under way",
        );
        d.seed(
            "test",
            "INBOX",
            &msg("during", "URGENT: arrived during the undo"),
        );
        undo.join().unwrap()
    });
    assert_eq!(undone.status, 200, "{}", undone.text);
    let during = wait_entry(&m, "<during@mailproc.test>");
    assert_eq!(during["model"], "rules:urgent", "{during}");
    assert_eq!(d.mailboxes_of("test", "<r7@shop.example>"), ["INBOX"]);
    let back = m.wait_for(Duration::from_secs(10), "the undo's record", || {
        entries(&m, "").into_iter().find(|e| e["model"] == "undo")
    });
    assert_eq!(back["uid"], undone.body["undo"]["uid"], "{back}");
    assert_ne!(back["uid"], during["uid"]);
    // The account's session did it: no second sign-in.
    let log = m.log();
    assert_eq!(log.matches("acct: connected to").count(), 1, "{log}");
}

/// Item 14 (the header part): headers were fetched up to
/// `max_message_bytes`, so a megabyte of `From:` hid a later `X-Spam-Flag`
/// from a rule and the record had no Subject or Message-ID. Now a
/// message's fields come capped at 64 KiB, a longer one is read field by
/// field (8 KiB each), and its record says so.
#[test]
fn a_megabyte_of_header_padding_hides_no_field_from_a_rule() {
    let d = Dovecot::start();
    let padding = "a@pad.example, ".repeat(75_000);
    let padded = format!(
        "From: {padding}x@pad.example\r\nTo: test@example.test\r\nSubject: Cheap watches\r\n\
         Message-ID: <padded@mailproc.test>\r\nX-Spam-Flag: YES\r\n\
         Date: Sat, 21 Nov 2026 10:00:00 +0000\r\nContent-Type: text/plain\r\n\r\nBuy.\r\n"
    );
    assert!(padded.len() > 1_100_000);
    d.seed("test", "INBOX", padded.as_bytes());
    d.seed(
        "test",
        "INBOX",
        &msg("plain", "URGENT: an ordinary message"),
    );
    // A Subject of 70 KB on one line: past 64 KiB and without a line end
    // in its first 8 KiB, it was read as nothing (no rule saw it, the
    // record had no Subject); now its start is kept.
    let long_subject = format!("URGENT: {}", "x".repeat(70_000));
    d.seed("test", "INBOX", &msg("one-line", &long_subject));
    // The same without a From: the field it lacks came back as a bare line
    // break, which ended the joined header, so List-Id (read after it) and
    // the Message-ID were lost (found by an audit of the binary).
    let no_from = format!(
        "Subject: Digest {}\r\nMessage-ID: <no-from@mailproc.test>\r\n\
         List-Id: <dev.lists.example.org>\r\n\r\nbody\r\n",
        "y".repeat(70_000)
    );
    d.seed("test", "INBOX", no_from.as_bytes());
    let rules = "    rules:\n      \
                 - { name: spamflag, when: { header: X-Spam-Flag, value: \"^YES\" }, actions: [ { type: spam } ] }\n      \
                 - { name: urgent, when: { subject: \"^URGENT\" }, actions: [ { type: flag, flags: [\"\\\\Flagged\"] } ] }\n      \
                 - { name: lists, when: { header: List-Id }, actions: [ { type: flag, flags: [\"$Listed\"] } ] }\n";
    let m = Mailproc::start(&config(
        &d,
        "",
        &format!("    folders: {{ watch: [INBOX] }}\n{rules}"),
    ));
    let e = wait_entry(&m, "<padded@mailproc.test>");
    assert_eq!(e["model"], "rules:spamflag", "{e}");
    assert_eq!(e["subject"], "Cheap watches", "{e}");
    assert!(
        e["reasoning"]
            .as_str()
            .unwrap_or("")
            .contains("header fields over 64 KiB"),
        "{e}"
    );
    assert_eq!(d.mailboxes_of("test", "<padded@mailproc.test>"), ["Junk"]);
    let plain = wait_entry(&m, "<plain@mailproc.test>");
    assert_eq!(plain["model"], "rules:urgent");
    assert!(!plain["reasoning"].as_str().unwrap_or("").contains("64 KiB"));
    let no_from = wait_entry(&m, "<no-from@mailproc.test>");
    assert_eq!(no_from["model"], "rules:lists", "{no_from}");
    assert!(
        no_from["subject"]
            .as_str()
            .is_some_and(|s| s.starts_with("Digest yyy")),
        "{no_from}"
    );
    let one_line = wait_entry(&m, "<one-line@mailproc.test>");
    assert_eq!(one_line["model"], "rules:urgent", "{one_line}");
    assert!(
        one_line["subject"]
            .as_str()
            .is_some_and(|s| s.starts_with("URGENT: xxx")),
        "{one_line}"
    );
}

/// Item 20 (b) on a server without MOVE, where a replayed move must look
/// for an earlier run's copy (COPY, then a crash before the expunge): a
/// copy is a message with the same Message-ID, size and INTERNALDATE. A
/// message that only shares the Message-ID is not one; before, it was
/// taken for the copy and the original expunged, never copied.
#[test]
fn without_move_only_an_exact_copy_counts_as_an_earlier_runs_copy() {
    let mut d = Dovecot::start();
    d.set_capability("IMAP4rev1 LITERAL+ SASL-IR ID ENABLE IDLE UIDPLUS NAMESPACE SPECIAL-USE");
    let list = "List-Id: <weekly.example>\r\n";
    d.seed(
        "test",
        "INBOX",
        &common::mail::msg_with("a", "Issue A", list),
    );
    d.seed(
        "test",
        "INBOX",
        &common::mail::msg_with("b", "Issue B", list),
    );
    let rules = "    rules:\n      \
                 - { name: lists, when: { header: List-Id }, actions: [ { type: move, folder: Lists } ] }\n";
    let mut m = Mailproc::prepare(&config(
        &d,
        "",
        &format!("    folders: {{ watch: [INBOX], allowed: [Lists], create: true }}\n{rules}"),
    ));
    // Both decisions journalled, then the process dies before acting.
    m.spawn(&[("MAILPROC_FAILPOINTS", "before-act=abort")]);
    let st = m.wait_exit(Duration::from_secs(30));
    assert!(st.is_some_and(|s| !s.success()), "{st:?}\n{}", m.log());
    d.create_mailbox("test", "Lists");
    // A: another message with its Message-ID is in Lists. B: an earlier
    // run's copy is (COPY keeps size and INTERNALDATE).
    d.seed(
        "test",
        "Lists",
        &common::mail::msg_with("a", "Not issue A at all, other words", list),
    );
    {
        let tcp = std::net::TcpStream::connect(("127.0.0.1", d.imap_port)).unwrap();
        let mut c = imap::Client::new(tcp);
        c.read_greeting().unwrap();
        let mut s = c.login("test", "secret").map_err(|(e, _)| e).unwrap();
        s.select("INBOX").unwrap();
        let b = s
            .uid_search("HEADER Message-ID \"<b@mailproc.test>\"")
            .unwrap();
        s.uid_copy(b.into_iter().next().unwrap().to_string(), "Lists")
            .unwrap();
        s.logout().unwrap();
    }
    m.spawn(&[]);
    m.wait_ready();
    m.wait_for(
        Duration::from_secs(30),
        "both journalled rows finished",
        || (entries(&m, "&status=ok").len() == 2).then_some(()),
    );
    assert!(m.log().contains("move=false"), "{}", m.log());
    // Looked for together: one search for both, not a round trip each (an
    // audit: minutes for 2,000 after a crash, and no progress under
    // crash after crash).
    assert!(
        m.log().contains(
            "looked for 2 journalled message(s) in \"Lists\": 1 search(es) of many, 0 of one"
        ),
        "{}",
        m.log()
    );
    assert_eq!(
        d.mailboxes_of("test", "<a@mailproc.test>"),
        ["Lists", "Lists"],
        "A was copied, its namesake left alone\n{}",
        m.log()
    );
    assert_eq!(
        d.mailboxes_of("test", "<b@mailproc.test>"),
        ["Lists"],
        "B was not copied a second time\n{}",
        m.log()
    );
}

/// Appends `raw` to `mailbox` of user `test` with the INTERNALDATE `date`
/// (`"30-Nov-2026 05:00:00 +0000"`).
fn append_dated(d: &Dovecot, mailbox: &str, date: &str, raw: &[u8]) {
    let mut c = common::imap_client::session(d.imap_port, "test", "secret");
    let a = c.append_dated(mailbox, "", Some(date), raw).unwrap();
    assert!(a.ok(), "{} {}", a.status, a.text);
    c.logout();
}

/// The subject and flags of every message in `mailbox`, by subject.
fn subjects_and_flags(d: &Dovecot, mailbox: &str) -> Vec<(String, bool)> {
    let tcp = std::net::TcpStream::connect(("127.0.0.1", d.imap_port)).unwrap();
    let mut c = imap::Client::new(tcp);
    c.read_greeting().unwrap();
    let mut s = c.login("test", "secret").map_err(|(e, _)| e).unwrap();
    s.examine(mailbox).unwrap();
    let fetches = s
        .fetch("1:*", "(FLAGS BODY.PEEK[HEADER.FIELDS (SUBJECT)])")
        .unwrap();
    let mut out: Vec<(String, bool)> = fetches
        .iter()
        .map(|f| {
            let subject = String::from_utf8_lossy(f.header().unwrap_or_default())
                .trim()
                .trim_start_matches("Subject: ")
                .to_string();
            let deleted = f.flags().contains(&imap::types::Flag::Deleted);
            (subject, deleted)
        })
        .collect();
    s.logout().unwrap();
    out.sort();
    out
}

/// Audit: on a server without MOVE (and here without UIDPLUS, so what is
/// marked stays marked), a journalled message with no Message-ID that an
/// earlier run had copied and marked `\Deleted` before it died was copied
/// again, the second copy carrying `\Deleted`. Such a message is found by
/// its size, date and content: a lookalike of the same size and date but
/// another header or text is not its copy.
#[test]
fn without_move_a_message_without_message_id_is_not_copied_twice() {
    let mut d = Dovecot::start();
    d.set_capability("IMAP4rev1 LITERAL+ SASL-IR ID ENABLE IDLE NAMESPACE SPECIAL-USE");
    let alert = |n: u32| {
        format!(
            "From: monitor@example.com\r\nTo: test@example.com\r\nSubject: Alert {n}\r\n\
             Date: Mon, 30 Nov 2026 05:00:00 +0000\r\n\r\ndisk almost full\r\n"
        )
        .into_bytes()
    };
    let date = "30-Nov-2026 05:00:00 +0000";
    append_dated(&d, "INBOX", date, &alert(1));
    append_dated(&d, "INBOX", date, &alert(2));
    let rules = "    rules:\n      \
                 - { name: alerts, when: { subject: '^Alert' }, actions: [ { type: move, folder: Lists } ] }\n";
    let mut m = Mailproc::prepare(&config(
        &d,
        "",
        &format!("    folders: {{ watch: [INBOX], allowed: [Lists], create: true }}\n{rules}"),
    ));
    // Both decisions journalled, then the process dies before acting.
    m.spawn(&[("MAILPROC_FAILPOINTS", "before-act=abort")]);
    let st = m.wait_exit(Duration::from_secs(30));
    assert!(st.is_some_and(|s| !s.success()), "{st:?}\n{}", m.log());
    d.create_mailbox("test", "Lists");
    // What the dead run did to Alert 1: COPY, then \Deleted on the source.
    {
        let tcp = std::net::TcpStream::connect(("127.0.0.1", d.imap_port)).unwrap();
        let mut c = imap::Client::new(tcp);
        c.read_greeting().unwrap();
        let mut s = c.login("test", "secret").map_err(|(e, _)| e).unwrap();
        s.select("INBOX").unwrap();
        let one: Vec<u32> = s
            .uid_search("SUBJECT \"Alert 1\"")
            .unwrap()
            .into_iter()
            .collect();
        assert_eq!(one.len(), 1);
        s.uid_copy(one[0].to_string(), "Lists").unwrap();
        s.uid_store(one[0].to_string(), "+FLAGS.SILENT (\\Deleted)")
            .unwrap();
        // Alert 2 marked too, its copy gone (a person deleted it): copied
        // again, the copy must not carry the mark.
        let two: Vec<u32> = s
            .uid_search("SUBJECT \"Alert 2\"")
            .unwrap()
            .into_iter()
            .collect();
        s.uid_store(two[0].to_string(), "+FLAGS.SILENT (\\Deleted)")
            .unwrap();
        s.logout().unwrap();
    }
    // Alert 3 is Alert 2's size and date, another message; so is one with
    // Alert 2's very header and another text of the same length (a
    // regression audit: known by the header alone, it was taken for
    // Alert 2's copy).
    append_dated(&d, "Lists", date, &alert(3));
    let twin = String::from_utf8(alert(2))
        .unwrap()
        .replace("disk almost full", "disk almost FULL");
    append_dated(&d, "Lists", date, twin.as_bytes());
    m.spawn(&[]);
    m.wait_ready();
    m.wait_for(
        Duration::from_secs(30),
        "both journalled rows finished",
        || (entries(&m, "&status=ok").len() == 2).then_some(()),
    );
    assert!(
        m.log()
            .contains("1 journalled message(s) already in \"Lists\""),
        "{}",
        m.log()
    );
    let no = false;
    assert_eq!(
        subjects_and_flags(&d, "Lists"),
        [
            ("Alert 1".to_string(), no),
            ("Alert 2".to_string(), no),
            ("Alert 2".to_string(), no),
            ("Alert 3".to_string(), no)
        ],
        "each alert once in Lists, none marked \\Deleted\n{}",
        m.log()
    );
}

/// Item 20 (c): undo asks the account's thread. While the account has no
/// session it answers at once that it cannot (503, nothing changed), where
/// it used to sign in on the HTTP worker; once connected again it works.
#[test]
fn an_undo_while_the_account_is_disconnected_answers_503_and_changes_nothing() {
    let mut d = Dovecot::start();
    d.create_mailbox("test", "Receipts");
    let receipt = "From: Shop <orders@shop.example>\r\nTo: test@example.test\r\n\
                   Subject: Your receipt 8\r\nMessage-ID: <r8@shop.example>\r\n\
                   Date: Sat, 21 Nov 2026 10:00:00 +0000\r\nContent-Type: text/plain\r\n\r\nThanks.\r\n";
    d.seed("test", "INBOX", receipt.as_bytes());
    d.seed("test", "INBOX", &msg("flagged", "URGENT: only flagged"));
    let m = Mailproc::start(&config(
        &d,
        "",
        &format!(
            "    folders: {{ watch: [INBOX], allowed: [Receipts], create: false }}\n{SHOP_RULES}"
        ),
    ));
    let id = wait_entry(&m, "<r8@shop.example>")["id"].as_i64().unwrap();
    let flagged = wait_entry(&m, "<flagged@mailproc.test>")["id"]
        .as_i64()
        .unwrap();
    d.stop();
    m.wait_for(Duration::from_secs(30), "the account disconnected", || {
        (state(&m) == "disconnected").then_some(())
    });
    // What could never be undone says so, connected or not (it was 503).
    let r = m.post(&format!("/api/activity/{flagged}/undo"), "");
    assert_eq!(r.status, 409, "{}", r.text);
    assert_eq!(
        r.body["error"],
        format!("activity {flagged}: the message was not moved")
    );
    let r = m.post(&format!("/api/activity/{id}/undo"), "");
    assert_eq!(r.status, 503, "{}", r.text);
    assert!(
        r.body["error"]
            .as_str()
            .unwrap_or("")
            .contains("not connected"),
        "{}",
        r.text
    );
    d.start_again();
    m.wait_for(Duration::from_secs(60), "connected again", || {
        (state(&m) == "connected").then_some(())
    });
    assert_eq!(d.mailboxes_of("test", "<r8@shop.example>"), ["Receipts"]);
    let r = m.post(&format!("/api/activity/{id}/undo"), "");
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(d.mailboxes_of("test", "<r8@shop.example>"), ["INBOX"]);
}

/// Issue [17]: the model's decisions were acted on and recorded only once
/// every answer of their group (up to 100 messages) was in, so with a slow
/// model an operator watched "recorded 240 of 300" stand still for minutes.
/// Each answer is now acted on and recorded as it comes (within about a
/// second), while the rest of its group is still with the model.
#[test]
fn each_answer_of_the_model_is_recorded_as_it_arrives() {
    let d = Dovecot::start();
    d.create_mailbox("test", "Sorted");
    d.seed_many(
        "test",
        "INBOX",
        &[
            msg("quick", "Quick one"),
            msg("slow1", "Slow one"),
            msg("slow2", "Slow two"),
        ],
    );
    let gate = Arc::new(AtomicBool::new(false));
    let held = gate.clone();
    let model = Model::start(4, move |r| {
        if r.subject().starts_with("Slow") {
            // Held until the test has seen the quick one recorded (or for
            // a minute, so a failing run still ends).
            let until = Instant::now() + Duration::from_secs(60);
            while !held.load(Ordering::SeqCst) && Instant::now() < until {
                std::thread::sleep(Duration::from_millis(10));
            }
        }
        answer(json!([{ "type": "move", "folder": "Sorted" }]), "sorted")
    });
    let top = format!(
        "classifier:\n  concurrency: 4\n  providers:\n    - {{ name: fake, kind: openai, url: \"{}\", model: scripted, timeout: 90s, max_retries: 0 }}\n",
        model.url()
    );
    let m = Mailproc::start(&config(
        &d,
        &top,
        "    folders: { allowed: [Sorted] }\n    provider: fake\n",
    ));
    let quick = wait_entry(&m, "<quick@mailproc.test>");
    assert!(
        !gate.load(Ordering::SeqCst),
        "recorded while the others are still with the model"
    );
    assert_eq!(quick["status"], "ok", "{quick}");
    assert_eq!(d.mailboxes_of("test", "<quick@mailproc.test>"), ["Sorted"]);
    for id in ["<slow1@mailproc.test>", "<slow2@mailproc.test>"] {
        assert_eq!(entry_of(&m, id), None, "{id} is not answered yet");
        assert_eq!(d.mailboxes_of("test", id), ["INBOX"]);
    }
    assert_eq!(processed(&m), 1);
    gate.store(true, Ordering::SeqCst);
    m.wait_count(Duration::from_secs(30), "all three recorded", 3, || {
        processed(&m)
    });
    assert_eq!(model.count(), 3, "each asked once");
}

/// A backlog's headers come in FETCHes of 512 UIDs, pipelined: the next FETCH
/// goes out before the chunk just read is decided, so the server reads the
/// next headers while mailproc parses and decides these. The process is
/// stopped as it starts deciding the first chunk (failpoint `decide`): the
/// server has already been asked for the second. Before, the second FETCH
/// was sent only after the first chunk was decided.
#[test]
fn the_next_fetch_of_headers_goes_out_before_a_chunk_is_decided() {
    let d = Dovecot::start();
    let raws: Vec<Vec<u8>> = (0..1500)
        .map(|i| msg(&format!("p{i}"), &format!("Pipelined {i}")))
        .collect();
    d.seed_many("test", "INBOX", &raws);
    let (port, sent) = tap(d.imap_port);
    let yaml = through(
        &config(
            &d,
            "",
            "    rules:\n      - { name: all, when: { subject: \".\" }, actions: [ { type: flag, flags: [\"\\\\Flagged\"] } ] }\n",
        ),
        &d,
        port,
    );
    let mut m = Mailproc::prepare(&yaml);
    m.spawn(&[("MAILPROC_FAILPOINTS", "decide=abort")]);
    let st = m.wait_exit(Duration::from_secs(60));
    assert!(st.is_some_and(|s| !s.success()), "{st:?}\n{}", m.log());
    assert!(
        m.log().contains("failpoint decide: aborting"),
        "{}",
        m.log()
    );
    // The relay reads what the client sent up to its end.
    let deadline = Instant::now() + Duration::from_secs(10);
    let fetches = loop {
        let text = String::from_utf8_lossy(&sent.lock().unwrap()).to_string();
        let fetches: Vec<String> = text
            .lines()
            .filter(|l| l.contains("UID FETCH") && l.contains("HEADER.FIELDS"))
            .map(str::to_string)
            .collect();
        if fetches.len() >= 2 || Instant::now() > deadline {
            break fetches;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(fetches.len(), 2, "{fetches:?}\n{}", m.log());
    assert!(fetches[0].contains("UID FETCH 1:512 "), "{fetches:?}");
    assert!(fetches[1].contains("UID FETCH 513:1024 "), "{fetches:?}");
}

/// A large backlog goes out in few MOVEs: a MOVE costs a Dovecot folder
/// more the more messages it holds, and windows of 5,000 made 80 of them
/// on a 100,000-message folder. 6,000 messages for one folder are now one
/// window and one `UID MOVE`; before, two (5,000 and 1,000).
#[test]
fn a_backlog_past_5000_messages_moves_in_one_uid_move_per_folder() {
    let d = Dovecot::start();
    let raws: Vec<Vec<u8>> = (0..6000)
        .map(|i| msg(&format!("w{i}"), &format!("Window {i}")))
        .collect();
    d.seed_many("test", "INBOX", &raws);
    d.create_mailbox("test", "Sorted");
    let m = Mailproc::start(&config(
        &d,
        "",
        "    folders: { allowed: [Sorted] }\n    rules:\n      \
         - { name: all, when: { subject: \"Window\" }, actions: [ { type: move, folder: Sorted } ] }\n",
    ));
    // Recorded after their MOVE, whose log line comes first.
    m.wait_for(Duration::from_secs(300), "6,000 messages recorded", || {
        (m.get("/api/stats").body["total_processed"] == 6000).then_some(())
    });
    assert_eq!(d.mailbox_counts("test").get("Sorted"), Some(&6000));
    let log = m.log();
    let moves: Vec<&str> = log.lines().filter(|l| l.contains("UID MOVE of ")).collect();
    assert_eq!(moves.len(), 1, "{moves:#?}");
    assert!(
        moves[0].contains("UID MOVE of 6000 message(s)"),
        "{moves:#?}"
    );
}

/// The peak resident memory of process `pid` (VmHWM), in bytes.
fn peak_rss(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let kb: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmHWM in /proc/PID/status");
    kb * 1024
}

/// A server that never ends its greeting (one line, without end): the
/// read stops at the response cap (48 MiB by default: `response_cap`,
/// vendor/imap/PATCHES.md patches 2 and 10), the account says why and reconnects with its back-off, instead of
/// buffering until the host runs out of memory.
#[test]
fn a_server_that_never_ends_a_line_costs_bounded_memory() {
    use std::io::Write;
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let stop = Arc::new(AtomicBool::new(false));
    let sent = Arc::new(AtomicU64::new(0));
    let (stop2, sent2) = (stop.clone(), sent.clone());
    std::thread::spawn(move || {
        let chunk = vec![b'A'; 1 << 20];
        for client in listener.incoming() {
            let Ok(mut client) = client else { return };
            let _ = client.write_all(b"* OK ");
            while !stop2.load(Ordering::SeqCst) {
                if client.write_all(&chunk).is_err() {
                    break;
                }
                sent2.fetch_add(chunk.len() as u64, Ordering::SeqCst);
            }
            if stop2.load(Ordering::SeqCst) {
                return;
            }
        }
    });
    let _stop = Stop(&stop);
    let m = Mailproc::start(&format!(
        "server: {{ port: {{PORT}} }}\nstorage: {{ path: \"{{DIR}}/mailproc.db\" }}\n\
         accounts:\n  - name: acct\n    imap: {{ host: 127.0.0.1, port: {port}, security: none, username: test, password: secret }}\n    \
         backlog: all\n    poll_interval: 1h\n    folders: {{ watch: [INBOX] }}\n"
    ));
    let cut = "the server's response passed 48 MiB without ending";
    // Two greetings cut at the cap: the first session was dropped and the
    // account tried again, rather than reading the first one for ever.
    m.wait_for(
        Duration::from_secs(120),
        "two greetings cut at 48 MiB",
        || (m.log().matches(cut).count() >= 2).then_some(()),
    );
    assert!(
        sent.load(Ordering::SeqCst) >= 96 << 20,
        "{} bytes sent",
        sent.load(Ordering::SeqCst)
    );
    let peak = peak_rss(m.pid());
    assert!(peak < 260 << 20, "peak RSS {} MiB", peak >> 20);
    assert_ne!(state(&m), "connected");
}

fn receipt(n: u32) -> Vec<u8> {
    format!(
        "From: Shop <orders@shop.example>\r\nTo: test@example.test\r\n\
         Subject: Your receipt {n}\r\nMessage-ID: <r{n}@shop.example>\r\n\
         Date: Sat, 21 Nov 2026 10:00:00 +0000\r\nContent-Type: text/plain\r\n\r\nThanks.\r\n"
    )
    .into_bytes()
}

/// An undo puts the message back in the watched folder, so the server
/// signals new mail that the next pass finds already handled. Those
/// passes counted as the server's empty signals: after a few undos new
/// mail waited 1 s doubling to 30 s before its pass (seen from outside:
/// 2.5 s instead of 0.7 s after three). An undo starts the count again.
#[test]
fn undos_do_not_make_new_mail_wait() {
    let d = Dovecot::start();
    d.create_mailbox("test", "Receipts");
    for n in 1..=4 {
        d.seed("test", "INBOX", &receipt(n));
    }
    let m = Mailproc::start(&config(
        &d,
        "",
        &format!(
            "    folders: {{ watch: [INBOX], allowed: [Receipts], create: false }}\n{SHOP_RULES}"
        ),
    ));
    let ids: Vec<i64> = (1..=4)
        .map(|n| {
            wait_entry(&m, &format!("<r{n}@shop.example>"))["id"]
                .as_i64()
                .unwrap()
        })
        .collect();
    for id in ids {
        let before = passes(&m) as u64;
        let r = m.post(&format!("/api/activity/{id}/undo"), "");
        assert_eq!(r.status, 200, "{}", r.text);
        // The pass the server's signal of the message put back prompts.
        m.wait_pass_after("acct", before);
    }
    d.seed("test", "INBOX", &msg("after", "URGENT: after the undos"));
    let after = wait_entry(&m, "<after@mailproc.test>");
    assert_eq!(after["model"], "rules:urgent", "{after}");
    let log = m.log();
    assert!(
        !log.contains("times in a row that no pass found"),
        "the undos were taken for a server's empty signals:\n{log}"
    );
}

/// A folder the account created was created again before every later
/// move there in the same session (`CREATE "Lists" refused:
/// [ALREADYEXISTS]` at every pass): the session knew only what LIST said
/// at its start.
#[test]
fn a_folder_created_once_is_not_created_again() {
    let d = Dovecot::start();
    d.seed("test", "INBOX", &receipt(1));
    let m = Mailproc::start(&config(
        &d,
        "",
        &format!(
            "    folders: {{ watch: [INBOX], allowed: [Receipts], create: true }}\n{SHOP_RULES}"
        ),
    ));
    wait_entry(&m, "<r1@shop.example>");
    for n in 2..=3 {
        d.seed("test", "INBOX", &receipt(n));
        let e = wait_entry(&m, &format!("<r{n}@shop.example>"));
        assert_eq!(e["status"], "ok", "{e}");
    }
    assert_eq!(d.mailboxes_of("test", "<r3@shop.example>"), ["Receipts"]);
    let log = m.log();
    assert_eq!(log.matches("created folder").count(), 1, "{log}");
    assert!(!log.contains("CREATE"), "{log}");
}

/// Found by an audit of the binary: a header padded past
/// `max_message_bytes` left the model's copy of the message (cut there)
/// without the From and Subject that came after the padding, so the model
/// judged an empty message; rules and the record had them. The fields
/// fetched for the rules stand in.
#[test]
fn a_header_padded_past_the_message_limit_hides_nothing_from_the_model() {
    let d = Dovecot::start();
    let padding = "Received: from pad.example by pad.example; Sat, 21 Nov 2026 10:00:00 +0000\r\n"
        .repeat(15_000);
    let padded = format!(
        "{padding}From: Sender <sender@example.org>\r\nSubject: Padded and hidden\r\n\
         Message-ID: <padded2@mailproc.test>\r\n\r\nBody.\r\n"
    );
    assert!(padded.len() > 1_100_000);
    d.seed("test", "INBOX", padded.as_bytes());
    let seen = Arc::new(parking_lot::Mutex::new(Vec::<String>::new()));
    let asked = seen.clone();
    let model = Model::start(1, move |r| {
        asked.lock().push(r.user.clone());
        answer(json!([{ "type": "noop" }]), "seen")
    });
    let top = format!(
        "classifier:\n  providers:\n    - {{ name: fake, kind: openai, url: \"{}\", model: scripted, timeout: 30s, max_retries: 0 }}\n",
        model.url()
    );
    let m = Mailproc::start(&config(&d, &top, "    provider: fake\n"));
    let e = wait_entry(&m, "<padded2@mailproc.test>");
    assert_eq!(e["status"], "ok", "{e}");
    let prompts = seen.lock().clone();
    assert_eq!(prompts.len(), 1);
    assert!(
        prompts[0].contains("Subject: Padded and hidden")
            && prompts[0].contains("sender@example.org"),
        "{}",
        &prompts[0][..prompts[0].len().min(2000)]
    );
}

/// Audit (stop 55): the back-off after failed database writes never began
/// again while the IMAP session lived: a lock held for a few seconds (a
/// backup, `set-password`) days after the last one was waited out twice
/// as long as that one, up to 5 minutes, the account shown in error
/// meanwhile. A pass that went through since the last failure makes the
/// next failure a new trouble: it waits the first back-off again.
#[test]
fn a_store_error_after_a_good_pass_waits_the_first_back_off_again() {
    let d = Dovecot::start();
    let m = Mailproc::start(&config(
        &d,
        "",
        "    folders: { watch: [INBOX] }\n    rules:\n      \
         - { name: all, when: { subject: \".\" }, actions: [ { type: flag, flags: [\"\\\\Flagged\"] } ] }\n",
    ));
    m.wait_for(Duration::from_secs(20), "connected", || {
        (state(&m) == "connected").then_some(())
    });
    let waits = |m: &Mailproc| -> Vec<String> {
        m.log()
            .lines()
            .filter(|l| l.contains("database is locked"))
            .filter_map(|l| l.split_once("; trying again in "))
            .map(|(_, w)| w.to_string())
            .collect()
    };
    for round in 0..2 {
        let db = rusqlite::Connection::open(m.db_path()).unwrap();
        db.execute_batch("BEGIN EXCLUSIVE").unwrap();
        let id = format!("locked{round}");
        d.seed("test", "INBOX", &msg(&id, "while the database is locked"));
        m.wait_for(Duration::from_secs(30), "the write refused", || {
            (waits(&m).len() > round).then_some(())
        });
        db.execute_batch("COMMIT").unwrap();
        drop(db);
        let e = wait_entry(&m, &format!("<{id}@mailproc.test>"));
        assert_eq!(e["status"], "ok", "{e}\n{}", m.log());
    }
    assert_eq!(waits(&m), ["1s", "1s"], "{}", m.log());
}

/// Audit of hostile mail (stop 55): a stranger's message carrying a list
/// message's Message-ID made the user's deletion of the list message count
/// as a move to where the stranger's message was, learned with the
/// stranger's words. A message found by its Message-ID must also come
/// from the recorded sender.
#[test]
fn a_deleted_message_is_not_taken_for_a_strangers_copy_of_its_message_id() {
    let (d, yaml) = shop();
    d.seed(
        "test",
        "INBOX",
        b"From: Shop <orders@shop.example>\r\nSubject: Your receipt 1\r\n\
          Message-ID: <shared-1@shop.example>\r\n\r\nThanks.\r\n",
    );
    let m = Mailproc::start(&yaml);
    wait_entry(&m, "<shared-1@shop.example>");
    d.seed(
        "test",
        "INBOX",
        b"From: mallory@evil.example\r\nSubject: cheap watches\r\n\
          Message-ID: <shared-1@shop.example>\r\n\r\nBuy.\r\n",
    );
    m.wait_for(
        Duration::from_secs(30),
        "the stranger's copy recorded",
        || {
            (entries(&m, "")
                .iter()
                .filter(|e| e["messageId"] == "<shared-1@shop.example>" && e["status"] != "pending")
                .count()
                == 2)
                .then_some(())
        },
    );
    // The user deletes the receipt.
    let tcp = std::net::TcpStream::connect(("127.0.0.1", d.imap_port)).unwrap();
    let mut c = imap::Client::new(tcp);
    c.read_greeting().unwrap();
    let mut s = c.login("test", "secret").map_err(|(e, _)| e).unwrap();
    s.select("Receipts").unwrap();
    s.uid_store("1:*", "+FLAGS (\\Deleted)").unwrap();
    s.expunge().unwrap();
    s.logout().unwrap();
    d.seed(
        "test",
        "INBOX",
        &msg("later1", "URGENT: after the deletion"),
    );
    wait_entry(&m, "<later1@mailproc.test>");
    m.wait_for(Duration::from_secs(20), "the deletion noticed", || {
        m.log().contains("(deleted)").then_some(())
    });
    assert_eq!(
        metric(&m, "mailproc_corrections_total{account=\"acct\"}"),
        0.0,
        "{}",
        m.log()
    );
}

/// A third regression audit: the sender check read From among the fields
/// the classifier reads, which stop at 64 KiB; after 80 KB of To it was
/// not there, and the user's move was recorded as a deletion.
#[test]
fn a_move_of_a_message_whose_from_comes_after_a_long_to_is_a_correction() {
    let (d, yaml) = shop();
    let to: Vec<String> = (0..4000).map(|i| format!("r{i}@example.com")).collect();
    let raw = format!(
        "To: {}\r\nFrom: Shop <orders@shop.example>\r\nSubject: Your receipt long\r\n\
         Message-ID: <long-to-1@shop.example>\r\n\r\nThanks.\r\n",
        to.join(",\r\n ")
    );
    d.seed("test", "INBOX", raw.as_bytes());
    let m = Mailproc::start(&yaml);
    let e = wait_entry(&m, "<long-to-1@shop.example>");
    assert_eq!(e["from"], "orders@shop.example", "{e}");
    user_moves(&d, "long-to-1", "Receipts", "Newsletters");
    d.seed("test", "INBOX", &msg("later1", "URGENT: after the move"));
    wait_entry(&m, "<later1@mailproc.test>");
    m.wait_for(Duration::from_secs(20), "the correction", || {
        (metric(&m, "mailproc_corrections_total{account=\"acct\"}") == 1.0).then_some(())
    });
    assert!(!m.log().contains("(deleted)"), "{}", m.log());
}
