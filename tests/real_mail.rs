//! Mail as it comes: real-world shapes (MIME trees, charsets, broken
//! headers), the SpamAssassin corpus through rules and model, the demo
//! script's own run, and control characters that must never be recorded.

mod common;

use std::time::Duration;

use common::dovecot::Dovecot;
use common::mail::msg_with;
use common::mailproc::Mailproc;
use common::model::{answer, Model};
use common::processing::*;
use serde_json::{json, Value};

fn fixtures() -> Vec<(String, Vec<u8>)> {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/mail");
    let mut v: Vec<(String, Vec<u8>)> = std::fs::read_dir(dir)
        .expect("tests/fixtures/mail")
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "eml"))
        .map(|p| {
            (
                p.file_name().unwrap().to_string_lossy().into_owned(),
                std::fs::read(&p).unwrap(),
            )
        })
        .collect();
    v.sort();
    v
}

#[test]
fn varied_real_world_shapes_are_all_accounted_for() {
    let fx = fixtures();
    assert!(fx.len() >= 10, "fixtures missing: {}", fx.len());
    let d = Dovecot::start();
    let mut raws: Vec<Vec<u8>> = fx.iter().map(|(_, r)| r.clone()).collect();
    // A very large message: over max_message_bytes, fetched partially.
    let mut big = msg_with("huge", "Huge attachment", "")
        .into_iter()
        .collect::<Vec<u8>>();
    big.extend(std::iter::repeat_n(b'A', 3 << 20));
    raws.push(big);
    d.seed_many("test", "INBOX", &raws);
    let model = sorter(Duration::ZERO);
    let m = Mailproc::start(&config(&d, Some(&model), RULES, ""));
    let n = raws.len() as u64;
    m.wait_for(Duration::from_secs(30), "every fixture recorded", || {
        (total(&m, "&status=ok") + total(&m, "&status=failed") == n).then_some(())
    });
    let all = m.get("/api/export?format=json").body;
    for row in all.as_array().unwrap() {
        if row["status"] == "failed" {
            assert!(
                !row["error"].as_str().unwrap_or("").is_empty(),
                "a failure needs a reason: {row}"
            );
        }
    }
    let subjects: Vec<&str> = all
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["subject"].as_str().unwrap())
        .collect();
    assert!(subjects.contains(&"Huge attachment"));
    let lists = all
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["model"] == "rules:lists")
        .count();
    assert!(
        lists >= 1,
        "the mailing-list fixture matched the List-Id rule"
    );
    assert_eq!(d.messages("test").len(), raws.len());
    // The service is still fine afterwards.
    wait_state(&m, &["connected"], Duration::from_secs(30));
}

#[test]
fn spamassassin_corpus_runs_through_rules_and_model() {
    let data = common::corpus::data();
    let mut raws = Vec::new();
    for (group, n) in [("easy-ham-1", 120), ("hard-ham-1", 60), ("spam-2", 120)] {
        raws.extend(common::corpus::pick(&data, group, 0, n));
    }
    let n = raws.len() as u64;
    let d = Dovecot::start();
    d.seed_many("test", "INBOX", &raws);
    let model = Model::start(8, |r| {
        if r.user.to_lowercase().contains("unsubscribe") {
            answer(json!([{ "type": "move", "folder": "Newsletters" }]), "bulk")
        } else {
            answer(json!([]), "keep")
        }
    });
    let m = Mailproc::start(&config(&d, Some(&model), RULES, ""));
    m.wait_for(Duration::from_secs(90), "the whole corpus recorded", || {
        (total(&m, "&status=ok") + total(&m, "&status=failed") == n).then_some(())
    });
    assert_eq!(d.messages("test").len(), raws.len(), "nothing lost");
    let failed = m.get("/api/activity?status=failed&pageSize=100").body;
    for e in failed["entries"].as_array().unwrap() {
        assert!(!e["error"].as_str().unwrap_or("").is_empty());
    }
    assert!(
        total(&m, "&status=ok") >= n * 9 / 10,
        "most real mail classifies: {}",
        m.get("/api/stats").text
    );
    // Every record is written before the pass ends (the search index and
    // the checkpoint follow): wait for the state, not read it once.
    m.wait_for(Duration::from_secs(30), "the account connected", || {
        (m.get("/health").body["accounts"]["acct"] == "connected").then_some(())
    });
}

#[test]
fn demo_script_sorts_the_corpus() {
    let port = common::mailproc::free_port().to_string();
    let out = std::process::Command::new("bash")
        .arg(concat!(env!("CARGO_MANIFEST_DIR"), "/scripts/demo.sh"))
        .arg("--check")
        .env("MAILPROC_BIN", common::mailproc::bin())
        .env("MAILPROC_DEMO_PORT", &port)
        .env_remove("MAILPROC_LLM_URL")
        .output()
        .expect("bash");
    let said = format!(
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.status.success(),
        "scripts/demo.sh --check failed:\n{said}"
    );
    let key = said
        .find("\"total_processed\"")
        .unwrap_or_else(|| panic!("no stats printed:\n{said}"));
    let json_start = said[..key].rfind('{').unwrap();
    let stats: Value = serde_json::Deserializer::from_str(&said[json_start..])
        .into_iter()
        .next()
        .unwrap()
        .unwrap();
    assert_eq!(stats["total_processed"], 300, "{said}");
    let sorted =
        stats["by_action"]["move"].as_u64().unwrap() + stats["by_action"]["spam"].as_u64().unwrap();
    // 187 since the two rules measured wrong on held-out mail were dropped
    // (docs/quality.md); the learned classifier and the model sort the rest.
    assert!(sorted >= 180, "the demo rules sort most mail: {stats}");
    // The classifier's "keep it in INBOX" is a `noop`, counted as a rule's
    // (an audit: the chart and `actions_total{action="noop"}` read 0 while
    // `actionType=noop` found 16 such entries).
    assert!(
        stats["by_action"]["noop"].as_u64().unwrap_or(0) > 0,
        "no noop counted: {stats}"
    );
}

/// Through a real Dovecot: a subject whose encoded words decode to a NUL,
/// a lone CR and an escape (the sequence that recolours a terminal) was
/// recorded and served with them. The row, the API and the webhook-facing
/// subject now carry spaces in their place, and the account goes on.
#[test]
fn control_characters_in_a_subject_are_never_recorded() {
    let d = Dovecot::start();
    d.seed(
        "test",
        "INBOX",
        &msg_with("ctl1", "=?utf-8?q?pay=00now=0Dplease=1B[31m?=", ""),
    );
    d.seed("test", "INBOX", &msg_with("ctl2", "an ordinary one", ""));
    let m = Mailproc::start(&config(&d, None, RULES, ""));
    wait_processed(&m, 2, Duration::from_secs(30));
    let body = m.get("/api/activity?search=ctl1").body;
    let row = &body["entries"][0];
    assert_eq!(row["subject"], "pay now please [31m", "{row}");
    let text = m.get("/api/activity").text;
    assert!(
        !text.contains("\\u0000") && !text.contains("\\u001b"),
        "{text}"
    );
}

/// Through a real Dovecot: a subject in Latin-1 bytes with no charset
/// declared (against RFC 2047, common in old and bulk mail) is recorded as
/// the text it is, not as U+FFFD, and so is the sender's name; a UTF-8
/// subject beside it is read as it is.
#[test]
fn an_undeclared_8_bit_subject_is_recorded_as_text() {
    let d = Dovecot::start();
    let mut latin = b"From: Ren\xe9 <rene@example.fr>\r\nTo: test@mailproc.test\r\n\
        Message-ID: <latin1@mailproc.test>\r\nSubject: caf\xe9 cr\xe8me br\xfbl\xe9e\r\n\r\n"
        .to_vec();
    latin.extend_from_slice(b"d\xe9j\xe0 vu\r\n");
    d.seed("test", "INBOX", &latin);
    d.seed("test", "INBOX", &msg_with("utf8", "déjà vu, déjà lu", ""));
    let m = Mailproc::start(&config(&d, None, RULES, ""));
    wait_processed(&m, 2, Duration::from_secs(30));
    let row = m.get("/api/activity?search=latin1@mailproc").body["entries"][0].clone();
    assert_eq!(row["subject"], "café crème brûlée", "{row}");
    let row = m.get("/api/activity?search=utf8@mailproc").body["entries"][0].clone();
    assert_eq!(row["subject"], "déjà vu, déjà lu", "{row}");
}
