//! The processing tests' fixture (`processing`, `recovery`): one account
//! `acct` on a Dovecot, the scripted model that sorts a backlog, the
//! backlog itself and what the sorted mailbox must look like, and the
//! counts those tests wait for.

use std::collections::HashMap;
use std::time::Duration;

use serde_json::json;

use super::dovecot::{Dovecot, StoredMsg};
use super::mail::msg_with;
use super::mailproc::Mailproc;
use super::model::{answer, Model, Reply};

pub struct Setup {
    pub provider: String,
    pub account: String,
}

/// A config for one account `acct` on `dovecot`, with `extra` YAML lines
/// appended to the account (indented by four spaces).
pub fn config(
    dovecot: &Dovecot,
    model: Option<&Model>,
    account_extra: &str,
    classifier_extra: &str,
) -> String {
    let s = Setup {
        provider: match model {
            Some(m) => format!(
                "classifier:\n  concurrency: 4\n  providers:\n    - {{ name: fake, kind: openai, url: \"{}\", model: scripted, timeout: 2s, max_retries: 1{classifier_extra} }}\n",
                m.url()
            ),
            None => String::new(),
        },
        account: format!(
            "accounts:\n  - name: acct\n    imap: {{ host: 127.0.0.1, port: {}, security: none, username: test, password: secret }}\n    \
             folders: {{ watch: [INBOX], allowed: [Lists, Newsletters, Receipts, Work], create: true }}\n    \
             backlog: all\n    poll_interval: 30s\n    retry_delay: 1s\n{}{}",
            dovecot.imap_port,
            if model.is_some() { "    provider: fake\n" } else { "" },
            account_extra
        ),
    };
    format!(
        "server: {{ port: {{PORT}} }}\nstorage: {{ path: \"{{DIR}}/mailproc.db\" }}\n{}{}",
        s.provider, s.account
    )
}

pub const RULES: &str = "    rules:\n      - { name: lists, when: { header: List-Id }, actions: [ { type: move, folder: Lists } ] }\n      - { name: invoices, when: { subject: \"(?i)^invoice\" }, actions: [ { type: flag, flags: [\"\\\\Flagged\"] } ] }\n";

/// Waits until the paused account has woken for new mail `n` times in all
/// and let the pass wait (it logs that it did).
pub fn paused_wake(m: &Mailproc, n: usize) {
    m.wait_for(Duration::from_secs(30), "the paused account awake", || {
        (m.log()
            .matches("acct: paused: the pass waits for resume")
            .count()
            >= n)
            .then_some(())
    });
}

/// Failed connection attempts of `acct` so far.
pub fn connection_errors(m: &Mailproc) -> f64 {
    m.get("/metrics")
        .text
        .lines()
        .find_map(|l| {
            l.strip_prefix("mailproc_errors_total{account=\"acct\",kind=\"connection\"} ")
        })
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0.0)
}

pub fn total(m: &Mailproc, query: &str) -> u64 {
    m.get(&format!("/api/activity?pageSize=1{query}")).body["total"]
        .as_u64()
        .unwrap_or(0)
}

pub fn processed(m: &Mailproc) -> u64 {
    m.get("/api/stats").body["total_processed"]
        .as_u64()
        .unwrap_or(0)
}

pub fn state(m: &Mailproc) -> String {
    m.get("/health").body["accounts"]["acct"]
        .as_str()
        .unwrap_or("")
        .to_string()
}

/// Waits for `n` processed, failing when the count stands still for `stall`.
pub fn wait_processed(m: &Mailproc, n: u64, stall: Duration) {
    m.wait_count(stall, &format!("{n} processed"), n, || processed(m));
}

pub fn wait_state(m: &Mailproc, want: &[&str], limit: Duration) {
    m.wait_for(limit, &format!("state in {want:?}"), || {
        want.contains(&state(m).as_str()).then_some(())
    });
}

pub fn by_id(msgs: &[StoredMsg]) -> HashMap<String, Vec<&StoredMsg>> {
    let mut m: HashMap<String, Vec<&StoredMsg>> = HashMap::new();
    for x in msgs {
        m.entry(x.message_id.clone()).or_default().push(x);
    }
    m
}

pub fn has(flags: &[String], f: &str) -> bool {
    flags.iter().any(|x| x.eq_ignore_ascii_case(f))
}

/// The scripted model of the backlog tests: newsletters are moved and read,
/// greetings get a keyword, anything else is left alone.
pub fn sorter(delay: Duration) -> Model {
    Model::start(8, move |r| {
        let s = r.subject().to_string();
        let a = if s.starts_with("Newsletter") {
            answer(
                json!([{ "type": "move", "folder": "Newsletters" }, { "type": "read" }]),
                "a newsletter",
            )
        } else if s.starts_with("Hello") {
            answer(
                json!([{ "type": "flag", "flags": ["$Important"] }]),
                "personal",
            )
        } else {
            answer(json!([]), "nothing to do")
        };
        if delay.is_zero() {
            a
        } else {
            Reply::Delay(delay, Box::new(a))
        }
    })
}

pub fn backlog(n: usize) -> Vec<Vec<u8>> {
    (0..n)
        .map(|i| match i % 4 {
            0 => msg_with(
                &format!("m{i}"),
                &format!("Digest {i}"),
                "List-Id: <dev.lists.example.org>\r\n",
            ),
            1 => msg_with(&format!("m{i}"), &format!("Invoice {i}"), ""),
            2 => msg_with(&format!("m{i}"), &format!("Newsletter {i}"), ""),
            _ => msg_with(&format!("m{i}"), &format!("Hello {i}"), ""),
        })
        .collect()
}

/// Checks that every seeded message exists exactly once, where and with the
/// flags the rules and the model chose; `\Seen` only where `read` was chosen.
pub fn assert_sorted(d: &Dovecot, n: usize) {
    let msgs = d.messages("test");
    let ids = by_id(&msgs);
    assert_eq!(msgs.len(), n, "no message lost or duplicated");
    for i in 0..n {
        let id = format!("<m{i}@mailproc.test>");
        let found = ids.get(&id).unwrap_or_else(|| panic!("{id} lost"));
        assert_eq!(found.len(), 1, "{id} exists {} times", found.len());
        let m = found[0];
        let (folder, flag, seen) = match i % 4 {
            0 => ("Lists", None, false),
            1 => ("INBOX", Some("\\Flagged"), false),
            2 => ("Newsletters", None, true),
            _ => ("INBOX", Some("$Important"), false),
        };
        assert_eq!(m.mailbox, folder, "{id}");
        if let Some(f) = flag {
            assert!(has(&m.flags, f), "{id} lacks {f}: {:?}", m.flags);
        }
        assert_eq!(has(&m.flags, "\\Seen"), seen, "{id} \\Seen: {:?}", m.flags);
        assert!(!has(&m.flags, "\\Deleted"), "{id} marked deleted");
    }
}

pub fn processed_in_store(m: &Mailproc) -> u64 {
    let store = mailproc::store::Store::open(&m.db_path()).unwrap();
    store.stats(None, None).unwrap().total_processed
}

pub fn hook_yaml(port: u16) -> String {
    format!(
        "webhook_settings: {{ allow_private: [\"127.0.0.1/32\"], timeout: 10s }}\n\
         webhooks:\n  - {{ url: \"http://127.0.0.1:{port}/global\", headers: {{ X-Token: \"${{HOOK_TOKEN}}\" }} }}\n"
    )
}

/// The value of the series `series` (name and labels) in a scrape; 0 when
/// it is absent.
pub fn counter(metrics: &str, series: &str) -> f64 {
    metrics
        .lines()
        .find_map(|l| l.strip_prefix(series)?.trim().parse().ok())
        .unwrap_or(0.0)
}
