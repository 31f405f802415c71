//! What `check-config` and the start warn of, and a change tells
//! (`config::warnings`): each by the key it is about.

use super::problem_tests::parse_str;
use super::*;

/// Found by an audit: `trusted_proxies` in open mode does nothing, and
/// nothing said so.
#[test]
fn trusted_proxies_without_authentication_is_a_warning() {
    let open = parse_str("server: { trusted_proxies: [127.0.0.1] }\naccounts: []\n").unwrap();
    let w = warnings(&open).join("\n");
    assert!(
        w.contains("server.trusted_proxies: ignored while neither"),
        "{w}"
    );
    let closed = parse_str(
        "server: { trusted_proxies: [127.0.0.1], auth_token: a-token-0123456789abcdef }\naccounts: []\n",
    )
    .unwrap();
    assert!(warnings(&closed).is_empty(), "{:?}", warnings(&closed));
}

/// Found by the first-hour audit (stop 59): an API open on every
/// interface was said only by `run`; `check-config` said "ok".
#[test]
fn an_open_api_off_loopback_is_a_warning() {
    let wide = parse_str("server: { bind: 0.0.0.0, port: 8081 }\naccounts: []\n").unwrap();
    let w = warnings(&wide).join("\n");
    assert!(
        w.contains("anyone who reaches 0.0.0.0:8081 can read and change everything"),
        "{w}"
    );
    let local = parse_str("server: { bind: 127.0.0.1 }\naccounts: []\n").unwrap();
    assert!(warnings(&local).is_empty(), "{:?}", warnings(&local));
    let closed =
        parse_str("server: { bind: \"::\", auth_token: a-token-0123456789abcdef }\naccounts: []\n")
            .unwrap();
    assert!(warnings(&closed).is_empty(), "{:?}", warnings(&closed));
}

/// Found by a regression audit (stop 60): a relative `storage.path` was
/// checked by check-config against the shell's working directory, and
/// used by the service against its own (the unit's `/`), with no word.
#[test]
fn a_relative_storage_path_is_a_warning() {
    let rel = parse_str("storage: { path: rel/m.db }\naccounts: []\n").unwrap();
    let w = warnings(&rel).join("\n");
    assert!(w.contains("storage.path: rel/m.db is relative"), "{w}");
    let abs = parse_str("storage: { path: /var/lib/m.db }\naccounts: []\n").unwrap();
    assert!(warnings(&abs).is_empty(), "{:?}", warnings(&abs));
}

/// Found by an audit of the rules language (stop 60): a rule on
/// `List-Id:` (the colon a typo) or on a name with 8-bit letters never
/// matched; a rule named " spaced " or with a control character could not
/// be edited in the form; `noop` beside a move was taken and the move done.
/// Each is a warning naming its key: not a problem, as a file that ran
/// before must still start (the regression audit after it).
#[test]
fn rules_that_cannot_work_as_written_are_warnings() {
    let c = parse_str(
        "accounts:\n  - name: a\n    imap: { host: x, username: u, password: p }\n    \
         folders: { allowed: [Lists] }\n    rules:\n      \
         - { name: colon, when: { header: \"List-Id:\" }, actions: [ { type: read } ] }\n      \
         - { name: umlaut, when: { header: \"X-Prüfung\" }, actions: [ { type: read } ] }\n      \
         - { name: \" spaced \", when: { subject: x }, actions: [ { type: read } ] }\n      \
         - { name: \"bell\\u0007\", when: { subject: x }, actions: [ { type: read } ] }\n      \
         - { name: both, when: { subject: y }, actions: [ { type: noop }, { type: move, folder: Lists } ] }\n",
    )
    .unwrap();
    let w = warnings(&c);
    for want in [
        "accounts[0].rules[0].when.header: \"List-Id:\" is no header field name",
        "accounts[0].rules[1].when.header: \"X-Prüfung\" is no header field name",
        "accounts[0].rules[2].name: \" spaced \" begins or ends with white space",
        "accounts[0].rules[3].name: \"bell\\u{7}\" begins or ends with white space",
        "accounts[0].rules[4].actions: noop (keep it where it is) beside another action",
    ] {
        assert!(w.iter().any(|p| p.starts_with(want)), "{want}: {w:#?}");
    }
}

/// Found by the provider-misconfiguration audit (stop 62): a base URL as
/// the SDKs take it, a hosted API without a key, and a key sent over
/// plain http passed check-config with "ok", and every call then failed
/// (or the key crossed the network in the clear).
#[test]
fn a_provider_that_cannot_work_as_written_is_a_warning() {
    let with = |entry: &str| {
        let c = parse_str(&format!(
            "classifier: {{ providers: [ {entry} ] }}\naccounts: []\n"
        ))
        .unwrap();
        warnings(&c).join("\n")
    };
    let w = with("{ name: a, kind: openai, url: \"https://api.openai.com/v1\", model: m }");
    assert!(
        w.contains("classifier.providers[0].url: https://api.openai.com/v1 does not end in /chat/completions"),
        "{w}"
    );
    assert!(
        w.contains("classifier.providers[0].api_key: not set, and api.openai.com refuses"),
        "{w}"
    );
    let w = with(
        "{ name: a, kind: anthropic, url: \"https://api.anthropic.com/v1/messages\", model: m }",
    );
    assert!(
        w.contains("api.anthropic.com refuses every call without one"),
        "{w}"
    );
    assert!(!w.contains(".url:"), "{w}");
    let w = with(
        "{ name: a, kind: openai, url: \"http://llm.example.net/v1/chat/completions\", model: m, api_key: sk-0123 }",
    );
    assert!(
        w.contains("classifier.providers[0].url: http://llm.example.net/v1/chat/completions is plain http to another host"),
        "{w}"
    );
    // What works as written says nothing: a local server over http with
    // no key, a LAN one without a key, a hosted one with a key over https.
    for quiet in [
        "{ name: a, kind: openai, url: \"http://127.0.0.1:11434/v1/chat/completions\", model: m }",
        "{ name: a, kind: openai, url: \"http://localhost:8080/v1/chat/completions/\", model: m, api_key: k }",
        "{ name: a, kind: openai, url: \"http://ollama.lan:11434/v1/chat/completions\", model: m }",
        "{ name: a, kind: openai, url: \"http://[::ffff:127.0.0.1]:8080/v1/chat/completions\", model: m, api_key: k }",
        "{ name: a, kind: anthropic, url: \"https://api.anthropic.com/v1/messages\", model: m, api_key: sk-ant }",
    ] {
        assert_eq!(with(quiet), "", "{quiet}");
    }
}

/// Found by stop 63's fourth regression audit: `Trash` listed in
/// `folders.allowed` for the model, without `trash`, is kept from it (a
/// model's move there would trash mail), and nothing said so.
#[test]
fn a_folder_kept_from_the_model_by_its_name_is_a_warning() {
    let with = |account: &str| {
        let c = parse_str(&format!(
            "classifier: {{ providers: [ {{ name: p, kind: openai, url: \"http://127.0.0.1:9/v1/chat/completions\", model: m }} ] }}\n\
             accounts:\n  - {{ name: a, imap: {{ host: x, username: u, password: p }}, provider: p, {account} }}\n"
        ))
        .unwrap();
        warnings(&c).join("\n")
    };
    let w = with("folders: { allowed: [Receipts, Trash, Household/Bin] }");
    assert!(
        w.contains("accounts[0].folders.allowed: \"Trash\", \"Household/Bin\" named as junk or trash folders are"),
        "{w}"
    );
    assert_eq!(
        with("folders: { allowed: [Receipts, Trash] }, allowed_actions: [move, trash, spam, noop]"),
        ""
    );
    // Narrowed by the operator's own `model_actions`: nothing to say (the
    // example lists `Junk` for its rules alone).
    assert_eq!(
        with("folders: { allowed: [Receipts, Junk] }, model_actions: [move, noop]"),
        ""
    );
}

/// Found by stop 65's audit of a 3,000-folder tree: every folder of
/// `folders.allowed` goes into every question to the model (338 KB each
/// with 3,000), and nothing said so. Warned of past 16,000 characters,
/// not when the model may not move or there is no model.
#[test]
fn a_folder_list_too_long_for_a_models_question_is_a_warning() {
    let with = |n: usize, account: &str| {
        let folders: Vec<String> = (0..n)
            .map(|k| format!("Projects/Client {k:04}/Invoices"))
            .collect();
        let c = parse_str(&format!(
            "classifier: {{ providers: [ {{ name: p, kind: openai, url: \"http://127.0.0.1:9/v1/chat/completions\", model: m }} ] }}\n\
             accounts:\n  - {{ name: a, imap: {{ host: x, username: u, password: p }}, {account} folders: {{ allowed: [{}] }} }}\n",
            folders.join(", ")
        ))
        .unwrap();
        warnings(&c).join("\n")
    };
    let w = with(3000, "provider: p,");
    assert!(
        w.contains("accounts[0].folders.allowed: the model is offered all 3000 folders, a list of 99000 characters"),
        "{w}"
    );
    // 400 folders of this length make 13,200 characters: said nothing.
    assert_eq!(with(400, "provider: p,"), "");
    assert_eq!(with(3000, "provider: p, model_actions: [flag, noop],"), "");
    assert_eq!(with(3000, ""), "");
}

/// Two accounts signing in as the same user of the same server and
/// watching a folder in common each act on every message there: warned
/// of (`inbox` and `INBOX` are one folder), other folders or users not.
#[test]
fn two_accounts_watching_the_same_mailbox_are_a_warning() {
    let account = |name: &str, user: &str, watch: &str| {
        format!(
            "  - {{ name: {name}, imap: {{ host: Mail.Example.org, username: {user}, password: p }}, \
             folders: {{ watch: [{watch}] }} }}\n"
        )
    };
    let twice = parse_str(&format!(
        "accounts:\n{}{}",
        account("a", "me", "INBOX, Lists"),
        account("b", "me", "inbox")
    ))
    .unwrap();
    let w = warnings(&twice).join("\n");
    assert!(
        w.contains("accounts[1].folders.watch: \"INBOX\" watched by accounts[0] too"),
        "{w}"
    );
    for (user, watch) in [("you", "INBOX"), ("me", "Archive")] {
        let apart = parse_str(&format!(
            "accounts:\n{}{}",
            account("a", "me", "INBOX"),
            account("b", user, watch)
        ))
        .unwrap();
        assert!(warnings(&apart).is_empty(), "{:?}", warnings(&apart));
    }
}

/// Found by an integrator's audit: `events: []` passed check-config, and
/// the entry was then sent nothing at all.
#[test]
fn a_webhook_that_takes_no_event_is_a_warning() {
    let text = |events: &str| {
        format!(
            "webhooks:\n  - {{ url: \"https://hooks.example.com/a\"{events} }}\n\
             accounts: []\n"
        )
    };
    let none = parse_str(&text(", events: []")).unwrap();
    let w = warnings(&none).join("\n");
    assert!(
        w.contains("webhooks[0].events: an empty list, so this entry is sent no event at all"),
        "{w}"
    );
    for some in ["", ", events: [error]"] {
        let c = parse_str(&text(some)).unwrap();
        assert!(warnings(&c).is_empty(), "{some}: {:?}", warnings(&c));
    }
}

/// Found by the deployment audit: an account named `1.10`, which an
/// earlier version read as `1.1`, started anew under its name as written
/// (with `backlog: all`, its 33 messages decided and acted on again), and
/// the "check before upgrading" advice had no output to compare.
#[test]
fn an_account_whose_history_is_under_yamls_reading_of_its_name_is_a_warning() {
    use super::validate::warnings::number_reading;
    assert_eq!(number_reading("1.10").as_deref(), Some("1.1"));
    assert_eq!(number_reading("0x1F").as_deref(), Some("31"));
    assert_eq!(number_reading("True").as_deref(), Some("true"));
    assert_eq!(number_reading("1.1"), None, "read the same");
    assert_eq!(number_reading("work"), None);
    let c =
        parse_str("accounts:\n  - { name: 1.10, imap: { host: h, username: u, password: p } }\n")
            .unwrap();
    assert_eq!(c.accounts[0].name, "1.10");
    let w = renamed_by_reading(&c, &["1.1".to_string()]).join("\n");
    assert!(
        w.contains("accounts[0].name: 1.10 is used as written since this version")
            && w.contains("write `name: '1.1'`"),
        "{w}"
    );
    // Its own history, or none under the old reading: nothing to say.
    assert!(renamed_by_reading(&c, &["1.1".into(), "1.10".into()]).is_empty());
    assert!(renamed_by_reading(&c, &["other".into()]).is_empty());
}
