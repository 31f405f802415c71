//! Issue [8]: prompt injection cannot steer what is done to mail. Each
//! fixture in `tests/fixtures/injection/` is an email carrying an
//! instruction (in the subject, body, an HTML comment, a header, a base64
//! or quoted-printable part, a forwarded message, Unicode look-alikes) and,
//! beside it, the answer a model that obeys it would give. The scripted
//! model here obeys every one. On a real Dovecot: no action outside
//! `allowed_actions` and `folders.allowed`, no flag outside the allowed set,
//! never `\Deleted`, never an expunge; each attempt is recorded as a failure
//! whose error names what was refused.

mod common;

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use common::dovecot::Dovecot;
use common::mailproc::Mailproc;
use common::model::{Model, Reply};
use serde_json::Value;

struct Fixture {
    name: String,
    raw: Vec<u8>,
    /// What the obedient model answers.
    answer: String,
    /// What the recorded error must name; empty for the control message.
    refused: String,
}

fn fixtures() -> Vec<Fixture> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/injection");
    let mut out = Vec::new();
    let mut names: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "eml"))
        .collect();
    names.sort();
    for eml in names {
        let meta: Value =
            serde_json::from_slice(&std::fs::read(eml.with_extension("json")).unwrap()).unwrap();
        out.push(Fixture {
            name: eml.file_stem().unwrap().to_string_lossy().into(),
            raw: std::fs::read(&eml).unwrap(),
            answer: meta["answer"].as_str().unwrap().into(),
            refused: meta["refused"].as_str().unwrap().into(),
        });
    }
    out
}

/// The fixture's tag, `inj-NN`, found in its Subject and Message-ID.
/// One message per tag in test's INBOX: subject `tag`, Message-ID
/// `<tag@sender.example>`.
fn seed_tagged(d: &Dovecot, tags: &[&str]) {
    for tag in tags {
        d.seed(
            "test",
            "INBOX",
            format!(
                "From: a@sender.example\r\nTo: test@example.test\r\nSubject: {tag}\r\n\
                 Message-ID: <{tag}@sender.example>\r\n\r\nhello\r\n"
            )
            .as_bytes(),
        );
    }
}

/// One account `acct` on `d` asking `model` (the obedient fake), with
/// `account` (its further lines: folders, actions, rules) after the
/// settings every test here shares.
fn obedient_config(model: &Model, d: &Dovecot, account: &str) -> String {
    format!(
        "server: {{ port: {{PORT}} }}\nstorage: {{ path: \"{{DIR}}/mailproc.db\" }}\n\
         classifier:\n  providers:\n    - {{ name: fake, kind: openai, url: \"{}\", model: obedient, timeout: 5s, max_retries: 0 }}\n\
         accounts:\n  - name: acct\n    imap: {{ host: 127.0.0.1, port: {}, security: none, username: test, password: secret }}\n    \
         {account}",
        model.url(),
        d.imap_port
    )
}

/// The activity once `n` messages are decided (ok or failed).
fn decided(m: &Mailproc, n: usize) -> Vec<Value> {
    m.wait_for(
        Duration::from_secs(60),
        &format!("{n} messages decided"),
        || {
            let e = m.get("/api/activity?pageSize=100").body["entries"]
                .as_array()
                .cloned()
                .unwrap_or_default();
            let done = e
                .iter()
                .filter(|x| x["status"] == "ok" || x["status"] == "failed")
                .count();
            (done >= n).then_some(e)
        },
    )
}

/// The row of the message seeded with `tag`.
fn row_of(rows: &[Value], tag: &str) -> Value {
    rows.iter()
        .find(|r| r["messageId"] == format!("<{tag}@sender.example>"))
        .unwrap_or_else(|| panic!("no row for {tag}: {rows:#?}"))
        .clone()
}

fn tag(name: &str) -> String {
    format!("inj-{}", &name[..2])
}

#[test]
fn an_obedient_model_cannot_act_outside_what_the_account_allows() {
    let fixtures = fixtures();
    assert!(fixtures.len() >= 20, "{} fixtures", fixtures.len());
    let answers: BTreeMap<String, String> = fixtures
        .iter()
        .map(|f| (format!("[{}]", tag(&f.name)), f.answer.clone()))
        .collect();
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let seen_by_model = seen.clone();
    // The model obeys: it answers what the email told it to.
    let model = Model::start(4, move |r| {
        let Some((key, answer)) = answers.iter().find(|(k, _)| r.user.contains(k.as_str())) else {
            return Reply::Answer(r#"{"actions":[],"reasoning":"unknown"}"#.into());
        };
        seen_by_model.lock().unwrap().push(key.clone());
        Reply::Answer(answer.clone())
    });
    let d = Dovecot::start();
    for f in &fixtures {
        d.seed("test", "INBOX", &f.raw);
    }
    let m = Mailproc::start(&format!(
        "server: {{ port: {{PORT}} }}\nstorage: {{ path: \"{{DIR}}/mailproc.db\" }}\n\
         classifier:\n  concurrency: 4\n  providers:\n    - {{ name: fake, kind: openai, url: \"{}\", model: obedient, timeout: 5s, max_retries: 0 }}\n\
         accounts:\n  - name: acct\n    imap: {{ host: 127.0.0.1, port: {}, security: none, username: test, password: secret }}\n    \
         folders: {{ watch: [INBOX], allowed: [Receipts], create: true }}\n    allowed_actions: [move, flag]\n    \
         backlog: all\n    max_attempts: 1\n    provider: fake\n",
        model.url(),
        d.imap_port
    ));
    let rows: Vec<Value> = m.wait_for(
        Duration::from_secs(60),
        &format!("{} messages decided", fixtures.len()),
        || {
            let r = m.get("/api/activity?pageSize=100");
            let e = r.body["entries"].as_array().cloned().unwrap_or_default();
            let done = e
                .iter()
                .filter(|x| x["status"] == "ok" || x["status"] == "failed")
                .count();
            (done >= fixtures.len()).then_some(e)
        },
    );
    assert_eq!(
        seen.lock().unwrap().len(),
        fixtures.len(),
        "the model saw every email"
    );

    // Every injection is a failure naming what was refused; the control
    // message alone was acted on.
    for f in &fixtures {
        let id = format!("<{}@attacker.example>", tag(&f.name));
        let row = rows
            .iter()
            .find(|r| r["messageId"] == id.as_str())
            .unwrap_or_else(|| panic!("{}: no activity row for {id}", f.name));
        if f.refused.is_empty() {
            assert_eq!(row["status"], "ok", "{}: {row}", f.name);
            continue;
        }
        assert_eq!(row["status"], "failed", "{}: {row}", f.name);
        let error = row["error"].as_str().unwrap_or_default();
        assert!(
            error.contains(&f.refused),
            "{}: the error should name {:?}, got {error:?}",
            f.name,
            f.refused
        );
        assert_eq!(
            row["actions"].as_array().map_or(0, Vec::len),
            0,
            "{}: nothing may be recorded as done: {row}",
            f.name
        );
    }

    // On the server: nothing expunged, nothing moved but the control,
    // no flag set on any injected message.
    let control = fixtures
        .iter()
        .find(|f| f.refused.is_empty())
        .map(|f| format!("<{}@attacker.example>", tag(&f.name)))
        .unwrap();
    let stored = d.messages("test");
    assert_eq!(
        stored.len(),
        fixtures.len(),
        "a message vanished: {stored:#?}"
    );
    for x in &stored {
        assert!(
            !x.flags.iter().any(|f| f.eq_ignore_ascii_case("\\Deleted")),
            "{x:?}"
        );
        if x.message_id == control {
            assert_eq!(x.mailbox, "Receipts", "{x:?}");
            assert!(x.flags.iter().any(|f| f == "\\Flagged"), "{x:?}");
        } else {
            assert_eq!(x.mailbox, "INBOX", "{x:?}");
            assert!(x.flags.is_empty(), "an injected message got flags: {x:?}");
        }
    }
    // Metrics (and what is learned) are counted after the records, when
    // the pass announces them: the pass's end is waited for.
    m.wait_pass_after("acct", 0);
    let failed_metric = m
        .get("/metrics")
        .text
        .lines()
        .filter(|l| l.starts_with("mailproc_errors_total{") && l.contains("classify_"))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum::<f64>();
    assert_eq!(
        failed_metric,
        (fixtures.len() - 1) as f64,
        "each refusal counted once"
    );
    assert!(!m.log().contains("panicked"), "{}", m.log());
}

/// `model_actions`: the account allows `spam` and `read` (its rules use
/// them), the model may only move. A model answering spam, read, or a move
/// to Junk is refused; the rule's spam still acts; a move elsewhere is done.
#[test]
fn model_actions_keep_spam_and_read_from_the_model_but_not_from_rules() {
    let model = Model::start(2, |r| {
        let answer = if r.user.contains("ask-spam") {
            r#"{"actions":[{"type":"spam"}],"reasoning":"x","confidence":1}"#
        } else if r.user.contains("ask-read") {
            r#"{"actions":[{"type":"read"}],"reasoning":"x","confidence":1}"#
        } else if r.user.contains("ask-junk") {
            r#"{"actions":[{"type":"move","folder":"Junk"}],"reasoning":"x","confidence":1}"#
        } else {
            r#"{"actions":[{"type":"move","folder":"Receipts"}],"reasoning":"x","confidence":1}"#
        };
        Reply::Answer(answer.into())
    });
    let d = Dovecot::start();
    seed_tagged(
        &d,
        &["ask-spam", "ask-read", "ask-junk", "ask-move", "rule-spam"],
    );
    let m = Mailproc::start(&obedient_config(
        &model,
        &d,
        "folders: { watch: [INBOX], allowed: [Receipts, Junk], create: true }\n    \
            allowed_actions: [move, read, spam, noop]\n    model_actions: [move, noop]\n    \
            backlog: all\n    max_attempts: 1\n    provider: fake\n    \
            rules:\n      - { name: spammy, when: { subject: \"^rule-spam$\" }, actions: [ { type: spam } ] }\n",
    ));
    let rows = decided(&m, 5);
    let row = |tag: &str| row_of(&rows, tag);
    for (tag, refused) in [
        // Named by the setting that refuses them (the lists named before,
        // allowed_actions and folders.allowed, have them).
        ("ask-spam", "\"spam\" is not in model_actions"),
        ("ask-read", "\"read\" is not in model_actions"),
        ("ask-junk", "\"Junk\" is not for the model"),
    ] {
        let r = row(tag);
        assert_eq!(r["status"], "failed", "{tag}: {r:#}");
        let error = r["error"].as_str().unwrap_or_default();
        assert!(error.contains(refused), "{tag}: {error}");
    }
    assert_eq!(row("ask-move")["status"], "ok");
    assert_eq!(row("rule-spam")["model"], "rules:spammy");
    assert_eq!(row("rule-spam")["status"], "ok");
    let where_ = |tag: &str| {
        d.messages("test")
            .into_iter()
            .find(|x| x.message_id == format!("<{tag}@sender.example>"))
            .map(|x| (x.mailbox, x.flags))
            .unwrap()
    };
    assert_eq!(where_("ask-move").0, "Receipts");
    assert_eq!(where_("rule-spam").0, "Junk");
    for tag in ["ask-spam", "ask-read", "ask-junk"] {
        let (mailbox, flags) = where_(tag);
        assert_eq!(mailbox, "INBOX", "{tag}");
        assert!(flags.is_empty(), "{tag}: {flags:?}");
    }
}

/// Found by the regression audit (stop 52): with `model_actions` lacking
/// `spam`, the folder the server marks `\Junk` under a name of its own
/// (`Werbung`) was offered to the model and moved to. It is kept from the
/// model as a folder named Junk is; a rule may still move there.
#[test]
fn the_folder_the_server_marks_junk_is_not_the_models_without_spam() {
    marked_junk_kept_from_the_model("", "Werbung");
}

/// Found by stop 62's IMAP audit: with `folders.junk` set, a second folder
/// the server marks `\Junk` was offered to the model and moved to: only
/// the junk folder in use was kept from it. Every marked one is now.
#[test]
fn every_folder_the_server_marks_junk_is_kept_from_the_model_without_spam() {
    marked_junk_kept_from_the_model(", junk: Junk", "Junk");
}

/// Found by stop 63's audit of mail services' folder layouts: a model
/// without `trash` trashed mail by a move to the folder the server marks
/// `\Trash` (`[Gmail]/Trash`, `Deleted Items`), where the junk folder was
/// kept from one without `spam`. The trash folder is kept alike.
#[test]
fn the_folder_the_server_marks_trash_is_kept_from_the_model_without_trash() {
    let model = Model::start(2, |r| {
        assert!(!r.system.contains("Papierkorb"), "offered: {}", r.system);
        Reply::Answer(
            r#"{"actions":[{"type":"move","folder":"Papierkorb"}],"reasoning":"x","confidence":1}"#
                .into(),
        )
    });
    let d = Dovecot::start_with(
        "namespace inbox {\n  mailbox Trash {\n    special_use =\n  }\n  \
         mailbox Papierkorb {\n    special_use = \\Trash\n    auto = create\n  }\n}\n",
        false,
    );
    seed_tagged(&d, &["ask-trash"]);
    let m = Mailproc::start(&obedient_config(
        &model,
        &d,
        "folders: { watch: [INBOX], allowed: [Receipts, Papierkorb] }\n    \
         allowed_actions: [move, spam, trash, noop]\n    model_actions: [move, spam, noop]\n    \
         backlog: all\n    max_attempts: 1\n    provider: fake\n",
    ));
    let rows = decided(&m, 1);
    assert!(m.log().contains("trash \"Papierkorb\""), "{}", m.log());
    let a = &m.get("/api/accounts").body["accounts"][0];
    assert_eq!(
        (&a["junkFolder"], &a["trashFolder"]),
        (&serde_json::json!("Junk"), &serde_json::json!("Papierkorb")),
        "{a}"
    );
    let asked = row_of(&rows, "ask-trash");
    assert_eq!(asked["status"], "failed", "{asked:#}");
    assert!(
        asked["error"].as_str().is_some_and(|e| e.contains(
            "\"Papierkorb\" is not for the model of account \"acct\": not in folders.allowed, \
             or the trash folder (moving there is trash, which is not in its model_actions)"
        )),
        "{asked:#}"
    );
    let at: Vec<String> = d.messages("test").into_iter().map(|x| x.mailbox).collect();
    assert_eq!(at, ["INBOX"]);
}

/// Found by stop 63's audit of folder layouts: `folders.junk: Junk
/// E-mail` (Exchange's spelling) where the server marks `Junk Email`
/// made a new folder for spam, and nothing said so.
#[test]
fn a_junk_folder_the_server_lacks_beside_the_one_it_marks_is_warned_of() {
    let model = Model::start(1, |_| Reply::Answer("{}".into()));
    let d = Dovecot::start_with(
        "namespace inbox {\n  mailbox Junk {\n    special_use =\n  }\n  \
         mailbox \"Junk Email\" {\n    special_use = \\Junk\n    auto = create\n  }\n}\n",
        false,
    );
    let m = Mailproc::start(&obedient_config(
        &model,
        &d,
        "folders: { watch: [INBOX], junk: Junk E-mail }\n    backlog: all\n",
    ));
    m.wait_for(Duration::from_secs(30), "the sign-in's warning", || {
        m.log()
            .contains(
                "folders.junk \"Junk E-mail\" is no folder on the server, which marks \
                 \"Junk Email\" \\Junk: spam goes to a new \"Junk E-mail\" beside it; set \
                 folders.junk to \"Junk Email\", or leave it out",
            )
            .then_some(())
    });
}

/// A Dovecot whose `Werbung` is marked `\Junk`; the account's folders
/// with `junk` (e.g. `, junk: Junk`), and the junk folder in use then.
fn marked_junk_kept_from_the_model(junk: &str, in_use: &str) {
    let model = Model::start(2, |r| {
        assert!(!r.system.contains("Werbung"), "offered: {}", r.system);
        Reply::Answer(
            r#"{"actions":[{"type":"move","folder":"Werbung"}],"reasoning":"x","confidence":1}"#
                .into(),
        )
    });
    let d = Dovecot::start_with(
        "namespace inbox {\n  mailbox Junk {\n    special_use =\n  }\n  \
         mailbox Werbung {\n    special_use = \\Junk\n    auto = create\n  }\n}\n",
        false,
    );
    seed_tagged(&d, &["ask-werbung", "rule-werbung"]);
    let m = Mailproc::start(&obedient_config(
        &model,
        &d,
        &format!(
            "folders: {{ watch: [INBOX], allowed: [Receipts, Werbung]{junk} }}\n    \
             allowed_actions: [move, spam, noop]\n    model_actions: [move, noop]\n    \
             backlog: all\n    max_attempts: 1\n    provider: fake\n    \
             rules:\n      - {{ name: ads, when: {{ subject: \"^rule-werbung$\" }}, actions: [ {{ type: move, folder: Werbung }} ] }}\n"
        ),
    ));
    let rows = decided(&m, 2);
    assert!(
        m.log().contains(&format!("junk \"{in_use}\"")),
        "{}",
        m.log()
    );
    let row = |tag: &str| row_of(&rows, tag);
    let asked = row("ask-werbung");
    assert_eq!(asked["status"], "failed", "{asked:#}");
    assert!(
        asked["error"]
            .as_str()
            .is_some_and(|e| e.contains("\"Werbung\" is not for the model")),
        "{asked:#}"
    );
    assert_eq!(row("rule-werbung")["status"], "ok");
    let at: Vec<(String, String)> = d
        .messages("test")
        .into_iter()
        .map(|x| (x.message_id, x.mailbox))
        .collect();
    assert!(
        at.contains(&("<ask-werbung@sender.example>".into(), "INBOX".into())),
        "{at:?}"
    );
    assert!(
        at.contains(&("<rule-werbung@sender.example>".into(), "Werbung".into())),
        "{at:?}"
    );
}
