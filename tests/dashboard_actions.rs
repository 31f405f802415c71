//! What the operator changes from the dashboard, end to end: the
//! configuration editor, training, undo, "Move to…" and "Make a rule from
//! this" (the real binary, a real Dovecot, form posts made by hand).

mod common;

use std::time::Duration;

use common::dashboard::*;
use common::dovecot::Dovecot;
use common::mailproc::Mailproc;
use common::model::Model;

#[test]
fn the_config_editor_saves_through_the_api_path() {
    let d = Dovecot::start();
    let model = scripted_model();
    let m = with_user(&account_config(&d, &model, ""));
    let mut b = Browser::new(&m);
    assert_redirect(&b.login("admin", PASSWORD), "/");
    let page = b.get("/config");
    assert_eq!(page.status, 200, "{}", page.text);
    let text = textarea(&page.text);
    assert!(text.contains("password: '********'"), "{text}");
    assert!(!text.contains("secret"), "{text}");

    // A broken edit: the problem is shown next to the text as posted, and
    // nothing is written.
    let before = std::fs::read_to_string(&m.config_path).unwrap();
    let broken = text.replace("(?i)invoice", "(?i)invoice(");
    let r = b.submit("/config", &[("yaml", &broken)]);
    assert_eq!(r.status, 400, "{}", r.text);
    assert!(r.text.contains("id=\"config-problems\""), "{}", r.text);
    assert!(r.text.contains("accounts[0].rules[0]"), "{}", r.text);
    assert!(textarea(&r.text).contains("(?i)invoice("));
    let r = b.submit("/config", &[("yaml", "accounts: [")]);
    assert_eq!(r.status, 400, "{}", r.text);
    assert_eq!(std::fs::read_to_string(&m.config_path).unwrap(), before);
    // Found by an audit: an emptied text, or comments only, was saved as
    // every default (the account stopped, its settings gone from the file
    // and, at the next save, from its backup), where `run` and SIGHUP
    // refuse such a file.
    for empty in ["", "  \n", "# everything else deleted\n"] {
        let r = b.submit("/config", &[("yaml", empty)]);
        assert_eq!(r.status, 400, "{empty:?}: {}", r.text);
        assert!(
            r.text.contains("holds no settings"),
            "{empty:?}: {}",
            r.text
        );
        assert_eq!(std::fs::read_to_string(&m.config_path).unwrap(), before);
    }

    // A good one: saved, applied, the secret kept and still hidden.
    let changed = text.replace("(?i)invoice", "(?i)receipt");
    // Post, redirect, get: the page that says so is a GET, so reloading
    // it cannot post the text again (an audit found a reload writing the
    // old text over a rule added since in another tab).
    let r = b.submit("/config", &[("yaml", &changed)]);
    assert_redirect(&r, "/config");
    let r = b.get("/config");
    assert_eq!(r.status, 200, "{}", r.text);
    assert!(
        r.text.contains("Configuration saved and applied."),
        "{}",
        r.text
    );
    assert!(r.text.contains("Accounts restarted: acct"), "{}", r.text);
    let again = b.get("/config");
    assert!(!again.text.contains("saved and applied"), "shown twice");
    let written = std::fs::read_to_string(&m.config_path).unwrap();
    assert!(
        written.contains("(?i)receipt") && written.contains("password: secret"),
        "{written}"
    );
    assert_eq!(
        std::fs::read_to_string(m.config_path.with_file_name("config.yaml.bak")).unwrap(),
        before
    );
    assert!(!r.text.contains("secret<") && !textarea(&r.text).contains("secret"));
    assert!(!r.text.contains("config-warnings"), "{}", r.text);

    // Regression audit (stop 61): a save that brings a warning (it runs,
    // but is likely a mistake) said only "saved and applied"; the page
    // shows the running configuration's warnings, with their line.
    let warned = textarea(&r.text).replace("name: invoices", "name: 'invoices '");
    assert_ne!(warned, textarea(&r.text));
    assert_redirect(&b.submit("/config", &[("yaml", &warned)]), "/config");
    let r = b.get("/config");
    assert!(
        r.text.contains("Configuration saved and applied."),
        "{}",
        r.text
    );
    let notice = r
        .text
        .split("id=\"config-warnings\"")
        .nth(1)
        .unwrap_or_else(|| panic!("no warnings shown: {}", r.text));
    assert!(
        notice.contains("1 warning(s)")
            && notice.contains("accounts[0].rules[0].name")
            && notice.contains("white space"),
        "{notice}"
    );

    // Without the page's token the post is refused.
    let r = b.post("/config", &[("yaml", &changed)]);
    assert_eq!(r.status, 403, "{}", r.text);
}

/// Issue 23: the editor shows the file's comments (secrets still masked),
/// and saving keeps them, the operator's new ones too.
#[test]
fn the_config_editor_shows_and_keeps_comments() {
    let d = Dovecot::start();
    let model = scripted_model();
    let yaml = format!(
        "# on the mail host\n{}",
        account_config(&d, &model, "").replace(
            "    max_attempts: 1\n",
            "    # one try, then parked\n    max_attempts: 1\n"
        )
    );
    let m = with_user(&yaml);
    let mut b = Browser::new(&m);
    assert_redirect(&b.login("admin", PASSWORD), "/");
    let text = textarea(&b.get("/config").text);
    for want in [
        "# on the mail host\n",
        "# one try, then parked\n",
        "password: '********'",
    ] {
        assert!(text.contains(want), "{want:?} not shown:\n{text}");
    }
    let edited = text.replace("max_attempts: 1", "max_attempts: 2  # two now");
    let r = b.submit("/config", &[("yaml", &edited)]);
    assert_redirect(&r, "/config");
    let written = std::fs::read_to_string(&m.config_path).unwrap();
    for want in [
        "# on the mail host\n",
        "# one try, then parked\n",
        "max_attempts: 2  # two now",
        "password: secret",
    ] {
        assert!(written.contains(want), "{want:?} not written:\n{written}");
    }
}

#[test]
fn train_and_undo_buttons_are_form_posts_with_a_token() {
    let d = Dovecot::start();
    d.create_mailbox("test", "Receipts");
    for i in 0..3 {
        d.seed(
            "test",
            "Receipts",
            &msg(
                &format!("old{i}"),
                "billing@shop.example",
                &format!("Invoice {i}"),
            ),
        );
    }
    let model = scripted_model();
    let m = with_user(&account_config(
        &d,
        &model,
        "    learned: { enabled: true }\n",
    ));
    let mut b = Browser::new(&m);
    assert_redirect(&b.login("admin", PASSWORD), "/");

    let page = b.get("/accounts/acct").text;
    assert!(page.contains("Learned classifier"), "{page}");
    assert!(page.contains("action=\"/accounts/acct/train\""), "{page}");
    let r = b.post("/accounts/acct/train", &[("_csrf", "0000")]);
    assert_eq!(r.status, 403, "a post without the token trains nothing");
    assert_redirect(&b.submit("/accounts/acct/train", &[]), "/accounts/acct");
    m.wait_for(Duration::from_secs(20), "training done", || {
        // INBOX, Receipts and Junk (the junk folder teaches what spam is).
        let page = b.get("/accounts/acct").text;
        page.contains("done: 3 message(s) from 3 folder(s)")
            .then_some(())
    });
    // One message each: a folder the classifier can never choose is said.
    let page = b.get("/accounts/acct").text;
    assert!(
        page.contains("Note: the classifier never chooses a folder holding fewer than 2 messages:"),
        "{page}"
    );

    d.seed(
        "test",
        "INBOX",
        &msg("new", "billing@shop.example", "Invoice 9"),
    );
    m.wait_for(Duration::from_secs(20), "the invoice moved", || {
        (total(&m, "") >= 1).then_some(())
    });
    let e = &m.get("/api/activity?pageSize=5").body["entries"][0];
    assert_eq!(e["model"], "rules:invoices", "{e:#}");
    let id = e["id"].as_i64().unwrap();
    let page = b.get(&format!("/activity/{id}")).text;
    assert!(page.contains("Undo: put back in INBOX"), "{page}");
    let r = b.post(&format!("/activity/{id}/undo"), &[("_csrf", "0000")]);
    assert_eq!(r.status, 403, "a post without the token undoes nothing");
    assert_redirect(
        &b.submit(&format!("/activity/{id}/undo"), &[]),
        &format!("/activity/{id}"),
    );
    let page = b.get(&format!("/activity/{id}")).text;
    assert!(page.contains("Undone"), "{page}");
    let back: Vec<_> = d
        .messages("test")
        .into_iter()
        .filter(|x| x.message_id == "<new@mailproc.test>")
        .collect();
    assert_eq!(back.len(), 1, "{back:?}");
    assert_eq!(back[0].mailbox, "INBOX");
    assert!(back[0].flags.is_empty(), "\\Flagged taken back: {back:?}");
}

/// An account whose invoices a rule moves to Receipts, with Archive
/// allowed too, and a user to log in as; `extra`: more of the account's
/// YAML. The model must outlive the service.
fn with_archive(extra: &str) -> (Dovecot, Model, Mailproc) {
    let d = Dovecot::start();
    d.create_mailbox("test", "Receipts");
    d.create_mailbox("test", "Archive");
    let model = scripted_model();
    let m = with_user(
        &account_config(&d, &model, extra)
            .replace("allowed: [Receipts]", "allowed: [Receipts, Archive]"),
    );
    (d, model, m)
}

/// Delivers an invoice with Message-ID `<id@mailproc.test>`, waits until
/// the account has `n` entries, and gives the newest one's id.
fn invoice(d: &Dovecot, m: &Mailproc, id: &str, n: u64) -> i64 {
    invoice_with(d, m, id, n, "")
}

/// [`invoice`] with header fields of its own (`header`, each ending in
/// CRLF) before the others.
fn invoice_with(d: &Dovecot, m: &Mailproc, id: &str, n: u64, header: &str) -> i64 {
    let mut raw = msg(id, "billing@shop.example", &format!("Invoice {id}"));
    raw.splice(0..0, header.bytes());
    d.seed("test", "INBOX", &raw);
    m.wait_for(
        Duration::from_secs(20),
        &format!("invoice {id} moved"),
        || (total(m, "") >= n).then_some(()),
    );
    m.get("/api/activity?pageSize=1").body["entries"][0]["id"]
        .as_i64()
        .unwrap()
}

/// Issue 23: "Move to…" and the List-Id read of "Make a rule" are done by
/// the account's own thread on its session (no second connection, no
/// second login); while the account is not connected, a move is refused
/// at once, with nothing changed.
#[test]
fn move_to_and_make_a_rule_use_the_accounts_own_session() {
    let (mut d, _model, m) = with_archive("");
    let mut b = Browser::new(&m);
    assert_redirect(&b.login("admin", PASSWORD), "/");
    let mut listed = msg("news", "billing@shop.example", "Invoice 7");
    listed.splice(
        0..0,
        b"List-Id: Shop news <news.shop.example>\r\n"
            .iter()
            .copied(),
    );
    wait_connected(&m);
    d.seed("test", "INBOX", &listed);
    m.wait_for(Duration::from_secs(20), "the invoice moved", || {
        (total(&m, "") >= 1).then_some(())
    });
    let id = m.get("/api/activity?pageSize=1").body["entries"][0]["id"]
        .as_i64()
        .unwrap();
    let logins = || d.log().matches("Login: user=<test>").count();
    // Dovecot's log process writes a moment after the login.
    m.wait_for(Duration::from_secs(10), "Dovecot logging the login", || {
        (logins() >= 1).then_some(())
    });
    let before = logins();
    assert_eq!(before, 1, "{}", d.log());

    // "Make a rule": the form starts from the message's List-Id, which the
    // account's thread reads. When that thread is busy past the peek's
    // wait (a loaded machine: a whole suite's run took 17 s for this
    // binary, 4 s alone) the form starts from the sender by design, so
    // the page is asked again until the thread had time.
    let rule_page = format!("/config/rule?account=acct&entry={id}");
    let mut pages = Vec::new();
    m.wait_for(
        Duration::from_secs(60),
        "a rule form from the List-Id",
        || {
            let page = b.get(&rule_page).text;
            let listed = page.contains("news\\.shop\\.example");
            pages.push(page);
            listed.then_some(())
        },
    );
    if pages.len() > 1 {
        eprintln!(
            "the List-Id came at the {}th ask; log:\n{}",
            pages.len(),
            m.log()
        );
    }

    // "Move to…": moved, recorded, and no new login.
    assert_redirect(
        &b.submit(&format!("/activity/{id}/move"), &[("folder", "Archive")]),
        &format!("/activity/{id}"),
    );
    let page = b.get(&format!("/activity/{id}")).text;
    assert!(page.contains("Moved to Archive from Receipts"), "{page}");
    let moved: Vec<_> = d
        .messages("test")
        .into_iter()
        .filter(|x| x.message_id == "<news@mailproc.test>")
        .collect();
    assert_eq!(moved.len(), 1, "{moved:?}");
    assert_eq!(moved[0].mailbox, "Archive");
    assert_eq!(logins(), before, "a second login:\n{}", d.log());

    // The server gone: refused at once, nothing moved.
    d.stop();
    m.wait_for(Duration::from_secs(20), "the account disconnected", || {
        let a = &m.get("/api/accounts").body["accounts"][0];
        (a["connected"] == false).then_some(())
    });
    assert_redirect(
        &b.submit(&format!("/activity/{id}/move"), &[("folder", "Receipts")]),
        &format!("/activity/{id}"),
    );
    let page = b.get(&format!("/activity/{id}")).text;
    assert!(
        page.contains("Not moved: acct: not connected to the IMAP server"),
        "{page}"
    );
}

/// Found by an audit of the operator's loop: "Move to…" on a message held
/// for review moved it with the review flag still set, so the user's mail
/// client went on asking for a review a person had made. The flag goes
/// with the move; undoing the move gives it back with the flag.
#[test]
fn move_to_ends_the_review_the_flag_asked_for() {
    let (d, _model, m) =
        with_archive("    minimum_confidence: 0.95\n    review_flag: \"$Review\"\n");
    let mut b = Browser::new(&m);
    assert_redirect(&b.login("admin", PASSWORD), "/");
    wait_connected(&m);
    d.seed(
        "test",
        "INBOX",
        &msg("rev", "friend@pals.example", "Lunch on Friday?"),
    );
    m.wait_for(Duration::from_secs(20), "the lunch held for review", || {
        (total(&m, "") >= 1).then_some(())
    });
    let e = &m.get("/api/activity?pageSize=1").body["entries"][0];
    assert_eq!(e["status"], "review", "{e}");
    let id = e["id"].as_i64().unwrap();
    let flags_of = |id: &str| -> (String, Vec<String>) {
        let x = d
            .messages("test")
            .into_iter()
            .find(|x| x.message_id == format!("<{id}@mailproc.test>"))
            .expect("the message");
        (x.mailbox, x.flags)
    };
    let (at, flags) = flags_of("rev");
    assert_eq!(at, "INBOX");
    assert!(flags.iter().any(|f| f == "$Review"), "{flags:?}");

    assert_redirect(
        &b.submit(&format!("/activity/{id}/move"), &[("folder", "Archive")]),
        &format!("/activity/{id}"),
    );
    let (at, flags) = flags_of("rev");
    assert_eq!(at, "Archive", "{}", m.log());
    assert!(!flags.iter().any(|f| f == "$Review"), "{flags:?}");

    // Undo of the move: back in INBOX as it was held, for review again.
    assert_redirect(
        &b.submit(&format!("/activity/{id}/undo"), &[]),
        &format!("/activity/{id}"),
    );
    let (at, flags) = flags_of("rev");
    assert_eq!(at, "INBOX", "{}", m.log());
    assert!(flags.iter().any(|f| f == "$Review"), "{flags:?}");
    let all = m.get("/api/activity?pageSize=5").body;
    let e = all["entries"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["id"] == id)
        .unwrap();
    assert_eq!(e["status"], "review", "{e}");
    assert!(e["undoneAt"].is_string(), "{e}");
}

/// Found by the audits of stop 58: "Move to…" used the UID an entry
/// recorded in the folder it was moved to; once the user had renamed that
/// folder and the next move made it again, the UID belonged to another
/// message, which was moved instead. And a message gone from where its
/// entry says was told as a failure to retry, not as what it is.
#[test]
fn move_to_never_takes_another_message_that_got_its_uid() {
    let (d, _model, m) = with_archive("");
    let mut b = Browser::new(&m);
    assert_redirect(&b.login("admin", PASSWORD), "/");
    wait_connected(&m);
    let first = invoice(&d, &m, "first", 1);
    common::imap_client::user_does(d.imap_port, "test", &["RENAME Receipts Kept"]);
    let second = invoice_with(
        &d,
        &m,
        "second",
        2,
        "List-Id: Other list <other.list.example>\r\n",
    );
    let where_is = |id: &str| d.mailboxes_of("test", &format!("<{id}@mailproc.test>"));
    assert_eq!(where_is("second"), ["Receipts"], "{}", m.log());
    // "Make a rule" from the first: not from the List-Id of the message
    // that got its UID (the regression audit, stop 59). The second's own
    // form shows its list, once the account's thread is free to read it
    // (see the test above); the first's is asked right after.
    m.wait_for(Duration::from_secs(60), "the second's form", || {
        let page = b
            .get(&format!("/config/rule?account=acct&entry={second}"))
            .text;
        page.contains("other\\.list\\.example").then_some(())
    });
    let page = b
        .get(&format!("/config/rule?account=acct&entry={first}"))
        .text;
    assert!(page.contains("billing@shop"), "{page}");
    assert!(
        !page.contains("other\\.list"),
        "another message's list:\n{page}"
    );
    assert_redirect(
        &b.submit(&format!("/activity/{first}/move"), &[("folder", "Archive")]),
        &format!("/activity/{first}"),
    );
    let page = b.get(&format!("/activity/{first}")).text;
    assert!(
        page.contains("no message &lt;first@mailproc.test&gt; in")
            && page.contains("moved or deleted since"),
        "{page}"
    );
    assert_eq!(
        where_is("second"),
        ["Receipts"],
        "another message was moved"
    );
    assert_eq!(where_is("first"), ["Kept"]);
}

/// Found by the regression audit (stop 58): whether a correction takes a
/// message back from the folder it left was asked after "Move to…" or
/// undo had rewritten the entry, which then named the folder it went to:
/// "Move to…" never took anything back, and a message came to count in
/// two folders at once.
#[test]
fn move_to_and_its_undo_take_back_what_was_learned() {
    let (d, _model, m) = with_archive("    learned: { enabled: true }\n");
    let mut b = Browser::new(&m);
    assert_redirect(&b.login("admin", PASSWORD), "/");
    wait_connected(&m);
    let id = invoice(&d, &m, "inv", 1);
    let docs = || -> Vec<(String, i64)> { m.learned_docs("acct").into_iter().collect() };
    // The rule's decision, learned as it was made.
    assert_eq!(docs(), [("Receipts".to_string(), 1)]);
    assert_redirect(
        &b.submit(&format!("/activity/{id}/move"), &[("folder", "Archive")]),
        &format!("/activity/{id}"),
    );
    assert_eq!(docs(), [("Archive".to_string(), 1)], "in one folder only");
    assert_redirect(
        &b.submit(&format!("/activity/{id}/undo"), &[]),
        &format!("/activity/{id}"),
    );
    assert_eq!(docs(), [("INBOX".to_string(), 1)], "in one folder only");

    // "Move to…", then the user moves it on with their own mail client:
    // a correction like any other (Undo was offered for it, and refused).
    let id = invoice(&d, &m, "inv2", 3);
    assert_redirect(
        &b.submit(&format!("/activity/{id}/move"), &[("folder", "Archive")]),
        &format!("/activity/{id}"),
    );
    common::imap_client::user_does(
        d.imap_port,
        "test",
        &["SELECT Archive", "MOVE 1:* Receipts"],
    );
    d.seed(
        "test",
        "INBOX",
        &msg("wake", "friend@pals.example", "Lunch"),
    );
    m.wait_for(Duration::from_secs(20), "the user's move found", || {
        let all = m.get("/api/activity?pageSize=20").body;
        let e = all["entries"].as_array()?.iter().find(|e| e["id"] == id)?;
        (e["correctedTo"] == "Receipts").then_some(())
    });
    let page = b.get(&format!("/activity/{id}")).text;
    assert!(!page.contains("Undo: put back"), "{page}");
    // (INBOX: the invoice put back, and the model's answer on the lunch,
    // learned when its record is made: the correction can be found first,
    // on a busy machine.)
    let want = [("INBOX".to_string(), 2), ("Receipts".to_string(), 1)];
    m.wait_for(Duration::from_secs(20), "the lunch learned", || {
        (docs() == want).then_some(())
    });
}

/// Found by an audit in a real browser: the rule form showed only move,
/// flags, read and spam, so a rule that trashed (or kept mail where it
/// was) lost that action when saved unchanged, and a keep-only rule could
/// not be saved at all. A name longer than the form's field was taken.
#[test]
fn the_rule_form_keeps_every_action_a_rule_has() {
    let d = Dovecot::start();
    let model = scripted_model();
    let yaml = account_config(&d, &model, "").replace(
        "    rules:\n",
        "    allowed_actions: [move, flag, read, spam, trash, noop]\n    rules:\n      \
         - { name: cleanup, when: { from: \"(?i)promo@\" }, actions: [ { type: read }, { type: trash } ] }\n      \
         - { name: family, when: { from: \"(?i)@family\\\\.example\" }, actions: [ { type: noop } ] }\n",
    );
    let m = with_user(&yaml);
    let mut b = Browser::new(&m);
    assert_redirect(&b.login("admin", PASSWORD), "/");

    let page = b.get("/config/rule?account=acct&rule=cleanup").text;
    assert!(
        page.contains(r#"name="trash" type="checkbox" checked"#),
        "{page}"
    );
    // Posted as the page shows it: both actions stay.
    let r = b.submit(
        "/config/rule",
        &[
            ("account", "acct"),
            ("was", "cleanup"),
            ("name", "cleanup"),
            ("from", "(?i)promo@"),
            ("read", "on"),
            ("trash", "on"),
        ],
    );
    assert_redirect(&r, "/accounts/acct");
    let rule = |name: &str| {
        let all = m.get("/api/config").body["accounts"][0]["rules"].clone();
        let found = all.as_array().unwrap().iter().find(|r| r["name"] == name);
        found
            .cloned()
            .unwrap_or_else(|| panic!("no rule {name}: {all}"))
    };
    let cleanup = rule("cleanup");
    assert_eq!(cleanup["name"], "cleanup", "{cleanup}");
    assert_eq!(
        cleanup["actions"],
        serde_json::json!([{ "type": "read" }, { "type": "trash" }])
    );

    // A rule that keeps mail where it is: shown, and saved as such.
    let page = b.get("/config/rule?account=acct&rule=family").text;
    assert!(
        page.contains(r#"name="keep" type="checkbox" checked"#),
        "{page}"
    );
    let family = [
        ("account", "acct"),
        ("was", "family"),
        ("name", "family"),
        ("from", "(?i)@family\\.example"),
        ("keep", "on"),
    ];
    assert_redirect(&b.submit("/config/rule", &family), "/accounts/acct");
    assert_eq!(
        rule("family")["actions"],
        serde_json::json!([{ "type": "noop" }])
    );
    // Keeping it and moving it at once is no rule.
    let mut both = family.to_vec();
    both.push(("move", "Receipts"));
    let r = b.submit("/config/rule", &both);
    assert_eq!(r.status, 400, "{}", r.text);
    assert!(
        r.text.contains("cannot go with another action"),
        "{}",
        r.text
    );

    // What the configuration refuses in the rule is said by the form's
    // field, not by the file's path.
    let mut bogus = family.to_vec();
    bogus[4] = ("flags", "\\Bogus");
    let r = b.submit("/config/rule", &bogus);
    assert_eq!(r.status, 400, "{}", r.text);
    assert!(r.text.contains("Then: flag"), "{}", r.text);
    assert!(!r.text.contains("accounts[0].rules"), "{}", r.text);

    // The name's limit holds on the server too.
    let long = "n".repeat(101);
    let mut named = family.to_vec();
    named[2] = ("name", &long);
    let r = b.submit("/config/rule", &named);
    assert_eq!(r.status, 400, "{}", r.text);
    assert!(r.text.contains("at most 100 characters"), "{}", r.text);
}

/// Audit (stop 52): a model provider that answered nothing for a while
/// parked every message that came in meanwhile, and nothing said so:
/// `/health` read healthy, the log had one line per message, and each
/// parked message had to be retried on its own. Now the provider reads
/// `down` in `/health` (degraded) and the log says so once; once it is
/// back, one button (or one API call) puts all of them back in line.
#[test]
fn a_provider_outage_shows_in_health_and_one_press_retries_what_it_parked() {
    use common::model::{answer, Model, Reply};
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;

    let d = hellos(4, "out");
    let down = Arc::new(AtomicBool::new(true));
    let model = {
        let down = down.clone();
        Model::start(2, move |_| {
            if down.load(Ordering::SeqCst) {
                Reply::Status(503, None)
            } else {
                answer(serde_json::json!([{ "type": "read" }]), "fine")
            }
        })
    };
    let m = with_user(&account_config(&d, &model, "    backlog: all\n"));
    let h = health_once_parked(&m, 4);
    assert_eq!(h.status, 200, "{}", h.text);
    assert_eq!(h.body["status"], "degraded", "{}", h.text);
    assert_eq!(h.body["providers"]["fake"], "down", "{}", h.text);
    assert_eq!(h.body["accounts"]["acct"], "connected", "{}", h.text);
    let log = m.log();
    assert_eq!(
        log.matches("provider fake: 3 calls in a row got an HTTP error (the last: fake: HTTP 503")
            .count(),
        1,
        "{log}"
    );
    // A provider no account uses any more is not the service's trouble
    // (the regression audit: /health stayed degraded for good).
    let mut c = m.get("/api/config").body;
    let kept = c.clone();
    c["accounts"][0].as_object_mut().unwrap().remove("provider");
    let put = |c: &serde_json::Value| m.request("PUT", "/api/config", &[], Some(&c.to_string()));
    assert_eq!(put(&c).status, 200);
    let h = m.wait_for(Duration::from_secs(20), "healthy again", || {
        let h = m.get("/health");
        (h.body["status"] == "healthy").then_some(h)
    });
    assert_eq!(h.body["providers"], serde_json::json!({}), "{}", h.text);
    assert_eq!(put(&kept).status, 200);
    assert_eq!(m.get("/health").body["providers"]["fake"], "down");
    // The overview says it too, and why (an audit: the dashboard named no
    // provider, beside an account shown connected).
    let mut b = Browser::new(&m);
    assert_redirect(&b.login("admin", PASSWORD), "/");
    let page = b.get("/").text;
    let providers = page
        .split_once("id=\"h-providers\"")
        .expect("a providers section")
        .1;
    let providers = providers.split_once("</section>").unwrap().0;
    assert!(providers.contains(">fake<"), "{providers}");
    assert!(providers.contains("b-down"), "{providers}");
    assert!(
        providers.contains("3 calls in a row got an HTTP error (the last: fake: HTTP 503"),
        "{providers}"
    );

    down.store(false, Ordering::SeqCst);
    let page = b.get("/failed");
    assert!(page.text.contains("Retry all 4 failed"), "{}", page.text);
    let r = b.submit("/failed/retry", &[]);
    assert_redirect(&r, "/failed");
    let page = b.get("/failed");
    assert!(
        page.text
            .contains("4 failed messages queued again (acct 4)"),
        "{}",
        page.text
    );
    healthy_once_sorted(&m, 4);
    assert_eq!(total(&m, "&status=failed"), 0);
    let page = b.get("/").text;
    let providers = page.split_once("id=\"h-providers\"").unwrap().1;
    let providers = providers.split_once("</section>").unwrap().0;
    assert!(providers.contains("b-answering"), "{providers}");
    assert!(!providers.contains("b-down"), "{providers}");

    // The API's form: nothing is left, and it says so; its mistakes are 4xx.
    let r = m.post("/api/activity/retry?account=acct", "");
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.body["retried"], 0, "{}", r.text);
    assert_eq!(m.post("/api/activity/retry?account=nobody", "").status, 404);
    assert_eq!(m.post("/api/activity/retry?acount=acct", "").status, 400);
    let r = b.submit("/failed/retry", &[]);
    assert_redirect(&r, "/failed");
    assert!(
        b.get("/failed").text.contains("No failed message to retry"),
        "nothing to retry is said"
    );
}

/// A Dovecot whose INBOX holds `n` messages "Hello 0", "Hello 1", …
/// from a@b.example, their Message-IDs `<{tag}0@…>`, ….
fn hellos(n: usize, tag: &str) -> Dovecot {
    let d = Dovecot::start();
    for i in 0..n {
        d.seed(
            "test",
            "INBOX",
            &msg(&format!("{tag}{i}"), "a@b.example", &format!("Hello {i}")),
        );
    }
    d
}

/// `/health` once `n` messages are parked as failed and the pass that
/// parked them has ended (a moment after its last row: a CI run on a busy
/// machine read "processing").
fn health_once_parked(m: &Mailproc, n: u64) -> common::mailproc::Resp {
    m.wait_for(Duration::from_secs(30), "the messages parked", || {
        (total(m, "&status=failed") == n).then_some(())
    });
    m.wait_for(Duration::from_secs(30), "the pass ended", || {
        let h = m.get("/health");
        (h.body["accounts"]["acct"] != "processing").then_some(h)
    })
}

/// Waits for `n` messages sorted, then: `/health` healthy, the provider
/// `ok`, and the log says it answers again.
fn healthy_once_sorted(m: &Mailproc, n: u64) {
    m.wait_for(Duration::from_secs(30), "the messages sorted", || {
        (total(m, "&status=ok") == n).then_some(())
    });
    let h = m.get("/health");
    assert_eq!(h.body["status"], "healthy", "{}", h.text);
    assert_eq!(h.body["providers"]["fake"], "ok", "{}", h.text);
    assert!(
        m.log().contains("provider fake: answering again"),
        "{}",
        m.log()
    );
}

/// A provider that answers every call, but with nothing of use (refused
/// as a bad request, or prose instead of a verdict), parks every message:
/// after ten messages so in a row `/health` reads it `down` and the log
/// says what to check, once; one verdict ends it. It read healthy while
/// every message failed (an audit).
#[test]
fn a_provider_whose_answers_are_of_no_use_shows_in_health() {
    use common::model::{answer, Model, Reply};
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;

    let d = hellos(8, "nu");
    // Two alerts alike, with no Message-ID: two messages, the tenth (they
    // were counted as one: a regression audit).
    for _ in 0..2 {
        let alert = "From: a@b.example\r\nSubject: Alert\r\n\r\nDisk full\r\n";
        d.seed("test", "INBOX", alert.as_bytes());
    }
    // Refused as bad requests, then prose, then verdicts once mended.
    let mode = Arc::new(AtomicUsize::new(0));
    let model = {
        let mode = mode.clone();
        Model::start(2, move |r| match mode.load(Ordering::SeqCst) {
            0 if ["Hello 1", "Hello 3", "Hello 5"].contains(&r.subject()) => {
                Reply::Status(400, None)
            }
            0 => Reply::Answer("This looks like a friendly note to me.".into()),
            _ => answer(serde_json::json!([{ "type": "read" }]), "fine"),
        })
    };
    let m = with_user(&account_config(&d, &model, "    backlog: all\n"));
    let h = health_once_parked(&m, 10);
    assert_eq!(h.body["status"], "degraded", "{}", h.text);
    assert_eq!(h.body["providers"]["fake"], "down", "{}", h.text);
    let log = m.log();
    let said = "provider fake: the calls for 10 messages in a row were refused as bad requests \
                or answered with no verdict";
    assert_eq!(log.matches(said).count(), 1, "{log}");
    assert!(
        log.contains("check classifier.providers[fake].model"),
        "{log}"
    );

    mode.store(1, Ordering::SeqCst);
    let r = m.post("/api/activity/retry?account=acct", "");
    assert_eq!(r.status, 200, "{}", r.text);
    healthy_once_sorted(&m, 10);
}

/// Audit (stop 53): a "Move to…" of mail left in place for review had no
/// Undo ("only a message that was acted on can be undone"), so a wrong
/// click had no way back; and an Undo after a "Move to…" left the entry
/// naming the folder the message had left (`correctedTo`, "moved by a
/// person", that folder missing from "Move to…").
#[test]
fn a_persons_move_is_undone_back_to_where_the_mail_arrived() {
    let d = Dovecot::start();
    d.create_mailbox("test", "Archive");
    let model = scripted_model();
    let m = with_user(
        &account_config(&d, &model, "    minimum_confidence: 0.95\n")
            .replace("allowed: [Receipts]", "allowed: [Receipts, Archive]"),
    );
    let mut b = Browser::new(&m);
    assert_redirect(&b.login("admin", PASSWORD), "/");
    wait_connected(&m);
    d.seed("test", "INBOX", &msg("kept", "friend@example.org", "Hello"));
    let entry = |m: &common::mailproc::Mailproc| {
        m.get("/api/activity?pageSize=1").body["entries"][0].clone()
    };
    m.wait_for(Duration::from_secs(20), "the message for review", || {
        (entry(&m)["status"] == "review").then_some(())
    });
    let id = entry(&m)["id"].as_i64().unwrap();
    let detail = format!("/activity/{id}");
    let mailbox = || {
        d.messages("test")
            .into_iter()
            .find(|x| x.message_id == "<kept@mailproc.test>")
            .map(|x| x.mailbox)
            .unwrap()
    };
    for round in 1..=2 {
        assert_redirect(
            &b.submit(&format!("{detail}/move"), &[("folder", "Archive")]),
            &detail,
        );
        assert_eq!(mailbox(), "Archive", "round {round}");
        let page = b.get(&detail).text;
        assert!(
            page.contains("Undo: put back in INBOX"),
            "round {round}: {page}"
        );
        assert_redirect(&b.submit(&format!("{detail}/undo"), &[]), &detail);
        assert_eq!(mailbox(), "INBOX", "round {round}");
        let e = m.get("/api/activity?pageSize=100").body["entries"]
            .as_array()
            .unwrap()
            .iter()
            .find(|x| x["id"] == id)
            .cloned()
            .unwrap();
        assert!(e["undoneAt"].is_string(), "round {round}: {e}");
        assert!(e["correctedTo"].is_null(), "round {round}: {e}");
        let page = b.get(&detail).text;
        assert!(!page.contains("moved by a person"), "round {round}: {page}");
        assert!(page.contains("(put back)"), "round {round}: {page}");
        assert!(
            page.contains("<option value=\"Archive\""),
            "round {round}: Archive offered again: {page}"
        );
    }
}

/// Regression audit (stop 61): a rule whose name ends in a space (warned
/// of, but it runs) opened in the form filled in, and saving it unchanged
/// answered 409 "renamed or removed meanwhile": the form trimmed the name
/// it was opened with. It is found as it is, and saved under its name
/// trimmed, which ends the warning.
#[test]
fn the_rule_form_saves_a_rule_whose_name_ends_in_a_space() {
    let d = Dovecot::start();
    let model = scripted_model();
    let yaml = account_config(&d, &model, "").replace("name: invoices,", "name: \"invoices \",");
    let m = with_user(&yaml);
    let mut b = Browser::new(&m);
    assert_redirect(&b.login("admin", PASSWORD), "/");
    let page = b.get("/config/rule?account=acct&rule=invoices%20").text;
    assert!(page.contains(r#"value="invoices ""#), "{page}");
    let r = b.submit(
        "/config/rule",
        &[
            ("account", "acct"),
            ("was", "invoices "),
            ("name", "invoices "),
            ("subject", "(?i)invoice"),
            ("move", "Receipts"),
            ("flags", "\\Flagged"),
        ],
    );
    assert_redirect(&r, "/accounts/acct");
    let rules = m.get("/api/config").body["accounts"][0]["rules"].clone();
    let names: Vec<&str> = rules
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|r| r["name"].as_str())
        .collect();
    assert_eq!(names, ["invoices"], "{rules}");
}

/// A webhook whose URL has parts `GET /api/config` masks (a Slack-style
/// token path, user-info) and whose secret and header are `${NAME}`
/// references: a `write:accounts` key's change of the accounts, and the
/// rule form's save, were refused with "webhooks[0].secret: ${NAME}
/// references cannot be added or changed through the API", of a section
/// neither had sent (the README audit). Both build on the file as a client
/// would have read it back now; the file keeps its references and URLs.
#[test]
fn accounts_and_rules_change_beside_webhooks_with_masked_urls_and_references() {
    const KEY: &str = "accounts-editor-0123456789";
    const HOOK: &str =
        "https://hooks.internal.example/services/T0ABCDEFG/B0123456/abcdefghijklmnopqrstuvwx";
    let m = with_user(&format!(
        r#"server: {{ port: {{PORT}}, auth_token: server-token-0123456789 }}
storage: {{ path: "{{DIR}}/mailproc.db" }}
dashboard:
  api_keys:
    - {{ name: editor, key: {KEY}, permissions: [read:stats, write:accounts] }}
webhooks:
  - {{ url: "{HOOK}", events: [email_processed], secret: "${{HOOK_SECRET:-hooksecret-0123456789abcdef}}" }}
  - {{ url: "https://user:p%40ss@hooks.internal.example/mail", headers: {{ X-Token: "Bearer ${{HOOK_TOKEN:-tok}}" }} }}
  - {{ url: "${{HOOK_URL:-https://hooks.internal.example/ref}}" }}
  - {{ url: "https://hooks.internal.example/services/T0ABCDEFG/B0123456/aaaaaaaaaaaaaaaaaaaaaaaa" }}
  - {{ url: "https://hooks.internal.example/services/T0ABCDEFG/B0123456/bbbbbbbbbbbbbbbbbbbbbbbb" }}
classifier:
  providers:
    - {{ name: llm, kind: openai, url: "${{LLM_URL:-http://127.0.0.1:9/v1/chat/completions}}", model: m }}
    - {{ name: gpu, kind: openai, url: "http://llm-gpu-7.corp.internal:8000/v1", model: m }}
accounts:
  - name: acct
    imap: {{ host: 127.0.0.1, port: 9, security: none, username: me, password: p }}
    folders: {{ watch: [INBOX], allowed: [Receipts] }}
    webhooks:
      - {{ url: "https://u:p%40ss@hooks.internal.example/acct", headers: {{ X-T: "${{HOOK_TOKEN:-tok}}" }} }}
      - {{ url: "${{ACCT_HOOK:-https://hooks.internal.example/acct2}}" }}
"#
    ));
    let r = m.get_with("/api/config", KEY);
    assert_eq!(r.status, 200, "{}", r.text);
    let mut accounts = r.body["accounts"].clone();
    accounts[0]["dry_run"] = serde_json::json!(true);
    let body = serde_json::json!({ "accounts": accounts }).to_string();
    let auth = format!("Bearer {KEY}");
    let r = m.request(
        "PUT",
        "/api/config",
        &[("Authorization", &auth)],
        Some(&body),
    );
    assert_eq!(r.status, 200, "{}", r.text);
    // Its answer warns of what it sent, not of the providers it may not
    // read (a regression audit: their URLs were in its warnings).
    assert!(!r.text.contains("llm-gpu-7"), "{}", r.text);
    assert!(r.body["warnings"].is_array(), "{}", r.text);

    let mut b = Browser::new(&m);
    assert_redirect(&b.login("admin", PASSWORD), "/");
    let rule = [
        ("account", "acct"),
        ("name", "receipts"),
        ("subject", "(?i)receipt"),
        ("move", "Receipts"),
    ];
    assert_redirect(&b.submit("/config/rule", &rule), "/accounts/acct");
    // What the form sends still passes the policy: no reference added.
    let sneaky = [
        ("account", "acct"),
        ("name", "sneaky"),
        ("subject", "[${HOOK_TOKEN}]"),
        ("move", "Receipts"),
    ];
    let r = b.submit("/config/rule", &sneaky);
    assert_eq!(r.status, 400, "{}", r.text);
    assert!(r.text.contains("references cannot be added"), "{}", r.text);

    let file = std::fs::read_to_string(&m.config_path).unwrap();
    for kept in [
        HOOK,
        "secret: ${HOOK_SECRET:-hooksecret-0123456789abcdef}",
        "https://user:p%40ss@hooks.internal.example/mail",
        "X-Token: Bearer ${HOOK_TOKEN:-tok}",
        "X-T: ${HOOK_TOKEN:-tok}",
        "dry_run: true",
        "name: receipts",
        "url: ${HOOK_URL:-https://hooks.internal.example/ref}",
        "url: ${LLM_URL:-http://127.0.0.1:9/v1/chat/completions}",
        "url: ${ACCT_HOOK:-https://hooks.internal.example/acct2}",
        "aaaaaaaaaaaaaaaaaaaaaaaa",
        "bbbbbbbbbbbbbbbbbbbbbbbb",
    ] {
        assert!(file.contains(kept), "{kept} not in\n{file}");
    }
    assert!(!file.contains("sneaky"), "{file}");
}

/// Found by the folder-tree audit: every row of the Activity and Needs
/// attention tables carried its own "Move to…" list of every allowed
/// folder; with 3,000 allowed, Needs attention was 39 MB for 100 rows and
/// took 43 s to render. Past 30 folders a row links to the entry's page,
/// which lists them all.
#[test]
fn a_row_with_many_folders_to_move_to_links_to_its_page() {
    let d = Dovecot::start();
    let many: Vec<String> = (0..40).map(|i| format!("F{i:02}")).collect();
    for f in &many {
        d.create_mailbox("test", f);
    }
    let model = scripted_model();
    let m = with_user(
        &account_config(&d, &model, "    minimum_confidence: 0.95\n").replace(
            "allowed: [Receipts]",
            &format!("allowed: [Receipts, {}]", many.join(", ")),
        ),
    );
    let mut b = Browser::new(&m);
    assert_redirect(&b.login("admin", PASSWORD), "/");
    wait_connected(&m);
    d.seed("test", "INBOX", &msg("kept", "friend@example.org", "Hello"));
    let entry = || m.get("/api/activity?pageSize=1").body["entries"][0].clone();
    m.wait_for(Duration::from_secs(20), "the message for review", || {
        (entry()["status"] == "review").then_some(())
    });
    let id = entry()["id"].as_i64().unwrap();
    for page in ["/activity", "/failed"] {
        let text = b.get(page).text;
        assert!(
            text.contains("Move to… (41 folders, on its page)"),
            "{page}: {text}"
        );
        assert!(!text.contains("<option value=\"F39\""), "{page}: {text}");
        assert!(
            text.contains(&format!("href=\"/activity/{id}?back=")),
            "{page}"
        );
    }
    let text = b.get(&format!("/activity/{id}")).text;
    assert!(text.contains("<option value=\"F39\""), "{text}");
    assert_redirect(
        &b.submit(&format!("/activity/{id}/move"), &[("folder", "F39")]),
        &format!("/activity/{id}"),
    );
    assert!(d
        .messages("test")
        .iter()
        .any(|x| x.message_id == "<kept@mailproc.test>" && x.mailbox == "F39"));
}

/// Found by the regression audit: after a "Move to…" of mail a `spam`
/// action had sent to Junk, the action read `{"type":"spam","folder":
/// "Receipts"}` ("spam → Receipts"): its folder came from the entry's
/// destination, which the person's move overwrites, and the junk folder
/// it went to was named nowhere.
#[test]
fn a_spam_action_names_its_junk_folder_after_a_persons_move() {
    let d = Dovecot::start();
    let model = scripted_model();
    let m = with_user(&account_config(
        &d,
        &model,
        "      - { name: pills, when: { subject: \"(?i)pills\" }, actions: [ { type: spam } ] }\n",
    ));
    let mut b = Browser::new(&m);
    assert_redirect(&b.login("admin", PASSWORD), "/");
    wait_connected(&m);
    d.seed(
        "test",
        "INBOX",
        &msg("p1", "pills@spam.example", "Cheap pills"),
    );
    m.wait_for(Duration::from_secs(20), "the spam recorded", || {
        (total(&m, "&status=ok") >= 1).then_some(())
    });
    let entry = || m.get("/api/activity?pageSize=1").body["entries"][0].clone();
    let spam = serde_json::json!([{ "type": "spam", "folder": "Junk" }]);
    assert_eq!(entry()["actions"], spam, "{}", entry());
    let id = entry()["id"].as_i64().unwrap();
    assert_redirect(
        &b.submit(&format!("/activity/{id}/move"), &[("folder", "Receipts")]),
        &format!("/activity/{id}"),
    );
    let e = entry();
    assert_eq!(e["correctedTo"], "Receipts", "{e}");
    assert_eq!(e["actions"], spam, "{e}");
    let csv = m.get("/api/export?format=csv").text;
    assert!(
        csv.contains(r#"[{""type"":""spam"",""folder"":""Junk""}]"#),
        "{csv}"
    );
}

/// Found by the regression audit: when the Activity page's read of the
/// log was refused (other reads held their places), the page said "Not
/// shown" above "Nothing here" and "0 entries", as if the log were empty.
#[test]
fn activity_not_read_shows_no_empty_list() {
    let d = Dovecot::start();
    let model = scripted_model();
    let yaml = account_config(&d, &model, "").replace(
        "server: { port: {PORT} }",
        "server: { port: {PORT}, workers: 3 }",
    );
    let m = Mailproc::start_with_env(
        &yaml,
        &[("MAILPROC_FAILPOINTS", "activity-read=pause:5000")],
    );
    let (code, out, err) = m.run_cli(&["set-password", "admin"], &format!("{PASSWORD}\n"));
    assert_eq!(code, 0, "{out}{err}");
    let mut b = Browser::new(&m);
    assert_redirect(&b.login("admin", PASSWORD), "/");
    std::thread::scope(|s| {
        let reader = s.spawn(|| m.get("/api/activity"));
        m.wait_paused(
            "activity-read",
            Duration::from_secs(10),
            "the read holding its place",
        );
        let page = b.get("/activity").text;
        assert!(page.contains("Not shown: the service is busy"), "{page}");
        assert!(!page.contains("Nothing here"), "{page}");
        assert!(!page.contains("0 entries"), "{page}");
        assert_eq!(reader.join().unwrap().status, 200);
    });
}
