//! The main job with a real language model: 20 real SpamAssassin messages
//! (spam and ham) in a real Dovecot, sorted by the real binary asking a real
//! llama.cpp server (SmolLM2-135M-Instruct on the CPU, from
//! scripts/local-model.sh), with no rules at all.
//!
//! The model is too small to judge well (docs/quality.md measures how well);
//! what this proves is the plumbing: every answer is a valid classification
//! inside the account's allow-lists, the model is named in the activity log,
//! and latency and token counts are measured. The first run on a machine
//! builds llama-server (~4 min on 2 cores, cached in ~/.cache/mailproc).
//!
//! Twenty messages show every path (spam, plain ham, commercial ham) as
//! well as fifty did. The wait fails when no answer has come for five and
//! a half minutes, never because the whole took long: on a machine busy
//! with other builds the model takes several times as long per message,
//! and is no less right for it. For the same reason the call's `timeout`
//! is 300 s rather than the demo's 120 s: once, with the machine's two
//! cores shared with three other test runs, one answer took 121 s and the
//! message was recorded as failed, which says nothing about the plumbing.

mod common;

use std::collections::HashMap;
use std::time::{Duration, Instant};

use common::corpus;
use common::dovecot::Dovecot;
use common::local_model::LocalModel;
use common::mailproc::Mailproc;

const FOLDERS: [&str; 4] = ["Lists", "Newsletters", "Receipts", "Work"];
/// Spam messages, and as many ham.
const HALF: usize = 10;

/// The sum of the samples of `name` whose labels contain `label`.
fn metric(text: &str, name: &str, label: &str) -> f64 {
    text.lines()
        .filter(|l| l.starts_with(name) && l[name.len()..].starts_with([' ', '{']))
        .filter(|l| l.contains(label))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum()
}

#[test]
fn a_real_local_model_sorts_twenty_real_messages_inside_the_allow_lists() {
    let data = corpus::data();
    // Spam and ham in equal parts; hard ham is commercial newsletters, the
    // kind a small model mistakes for spam. None of these is in the demo.
    let spam = corpus::pick(&data, "spam-1", 0, HALF);
    let ham: Vec<_> = corpus::pick(&data, "easy-ham-2", 0, HALF - 3)
        .into_iter()
        .chain(corpus::pick(&data, "hard-ham-1", 200, 3))
        .collect();
    let mut is_spam = HashMap::new();
    for (raw, s) in spam
        .iter()
        .map(|r| (r, true))
        .chain(ham.iter().map(|r| (r, false)))
    {
        let e = mailproc::classify::Email::parse(raw).expect("corpus message parses");
        is_spam.insert(e.message_id, s);
    }
    let raws: Vec<Vec<u8>> = spam.into_iter().chain(ham).collect();
    let n = raws.len() as u64;
    assert_eq!(n, 2 * HALF as u64);

    let d = Dovecot::start();
    d.seed_many("test", "INBOX", &raws);
    let lm = LocalModel::start(1);
    // One slot on the server, so one call at a time; no rules, so every
    // message is the model's. The default prompt and allow-lists.
    let m = Mailproc::start(&format!(
        "server: {{ port: {{PORT}} }}\nstorage: {{ path: \"{{DIR}}/mailproc.db\" }}\n\
         classifier:\n  concurrency: 1\n  providers:\n    - {{ name: local, kind: openai, url: \"{}\", model: \"{}\", timeout: 300s, max_retries: 0, max_body_chars: 2000, max_tokens: 400 }}\n\
         accounts:\n  - name: acct\n    imap: {{ host: 127.0.0.1, port: {}, security: none, username: test, password: secret }}\n    \
         folders: {{ watch: [INBOX], allowed: [{}], create: true }}\n    \
         backlog: all\n    poll_interval: 30s\n    max_attempts: 1\n    provider: local\n",
        lm.url,
        lm.model,
        d.imap_port,
        FOLDERS.join(", ")
    ));
    let started = Instant::now();
    let total = |status: &str| {
        m.get(&format!("/api/activity?pageSize=1&status={status}"))
            .body["total"]
            .as_u64()
            .unwrap_or(0)
    };
    // Each answer is progress; 330 s without one is a stuck model
    // or a stuck service (a single answer takes 2-3 s on a quiet machine,
    // 12-18 s on a busy one). Answers show as the model gives them, in the
    // tokens counted (`mailproc_llm_tokens_total`), before their group of
    // messages is recorded.
    let answered = || {
        metric(
            &m.get("/metrics").text,
            "mailproc_llm_tokens_total",
            "kind=\"completion\"",
        ) as u64
    };
    common::wait::until_done(
        Duration::from_secs(330),
        &format!("all {n} messages answered and recorded"),
        || {
            let recorded = total("ok") + total("failed");
            (answered() + recorded, (recorded == n).then_some(()))
        },
        || m.log(),
    );
    let wall = started.elapsed();

    let mut entries = Vec::new();
    for page in 1..=(n as usize).div_ceil(100) {
        let v = m
            .get(&format!("/api/activity?pageSize=100&page={page}"))
            .body;
        entries.extend(v["entries"].as_array().unwrap().iter().cloned());
    }
    assert_eq!(entries.len() as u64, n);
    let failed: Vec<String> = entries
        .iter()
        .filter(|e| e["status"] != "ok")
        .map(|e| format!("{}: {}", e["subject"], e["error"]))
        .collect();
    assert!(
        failed.is_empty(),
        "every answer of the real model is a valid classification; these were not:\n{}",
        failed.join("\n")
    );
    let mut by_action: HashMap<String, u64> = HashMap::new();
    let (mut spam_caught, mut ham_flagged_spam) = (0, 0);
    for e in &entries {
        assert_eq!(e["model"], lm.model.as_str(), "the model is named: {e}");
        let mut said_spam = false;
        for a in e["actions"].as_array().unwrap() {
            let kind = a["type"].as_str().unwrap();
            assert!(
                ["move", "flag", "read", "spam", "noop"].contains(&kind),
                "action inside allowed_actions: {e}"
            );
            if kind == "move" {
                assert!(
                    FOLDERS.contains(&a["folder"].as_str().unwrap()),
                    "folder inside folders.allowed: {e}"
                );
            }
            said_spam |= kind == "spam";
            *by_action.entry(kind.to_string()).or_default() += 1;
        }
        match is_spam.get(e["messageId"].as_str().unwrap()) {
            Some(true) if said_spam => spam_caught += 1,
            Some(false) if said_spam => ham_flagged_spam += 1,
            Some(_) => {}
            None => panic!("an entry for a message not seeded: {e}"),
        }
    }
    // Nothing lost, nothing deleted.
    assert_eq!(d.messages("test").len(), raws.len());

    // Metrics (and what is learned) are counted after the records, when
    // the pass announces them: the pass's end is waited for.
    m.wait_pass_after("acct", 0);
    let metrics = m.get("/metrics").text;
    let seconds = metric(&metrics, "mailproc_classification_duration_seconds_sum", "");
    let calls = metric(
        &metrics,
        "mailproc_classification_duration_seconds_count",
        "",
    );
    let prompt = metric(&metrics, "mailproc_llm_tokens_total", "kind=\"prompt\"");
    let completion = metric(&metrics, "mailproc_llm_tokens_total", "kind=\"completion\"");
    eprintln!(
        "local model {}: {n} messages in {:.1} s ({:.2} s per message, {:.2} msg/s); \
         classification {:.2} s mean over {calls} calls; \
         tokens {prompt} prompt ({:.0}/msg), {completion} completion ({:.0}/msg); actions {by_action:?}; \
         spam said of {spam_caught} of {HALF} spam and {ham_flagged_spam} of {HALF} ham",
        lm.model,
        wall.as_secs_f64(),
        wall.as_secs_f64() / n as f64,
        n as f64 / wall.as_secs_f64(),
        seconds / calls.max(1.0),
        prompt / n as f64,
        completion / n as f64,
    );
    assert_eq!(calls as u64, n, "one model call per message");
    assert!(
        prompt > 0.0 && completion > 0.0,
        "the server's usage is counted:\n{}",
        metrics
            .lines()
            .filter(|l| l.contains("llm_tokens"))
            .collect::<Vec<_>>()
            .join("\n")
    );
}
