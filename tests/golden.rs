//! Golden files for mail parsing, kept the way mail-parser keeps its own:
//! beside every `tests/fixtures/mail/NAME.eml` lies `NAME.json`, what
//! mailproc reads of it (subject, sender, recipients, first body line,
//! attachments, Message-ID). A change in parsing shows as a diff here.
//!
//! After a deliberate change, `MAILPROC_BLESS=1 cargo test --test golden`
//! rewrites the `.json` files; read the diff before committing it.

#[path = "common/corpus.rs"]
mod corpus;

use std::path::{Path, PathBuf};

use mailproc::classify::Email;
use serde_json::{json, Value};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/mail")
}

/// What a person would check of a parsed message.
fn summary(raw: &[u8]) -> Value {
    match Email::parse(raw) {
        None => json!({ "parsed": false }),
        Some(e) => json!({
            "parsed": true,
            "messageId": e.message_id,
            "subject": e.subject,
            "from": e.from,
            "to": e.to,
            "firstBodyLine": e.body.lines().map(str::trim).find(|l| !l.is_empty()).unwrap_or(""),
            "attachments": e.attachments,
            "listId": e.header("List-Id"),
        }),
    }
}

#[test]
fn every_fixture_reads_as_its_golden_file() {
    let bless = std::env::var_os("MAILPROC_BLESS").is_some();
    let mut emls: Vec<PathBuf> = std::fs::read_dir(fixtures())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "eml"))
        .collect();
    emls.sort();
    let mut ran = 0;
    let mut differ = Vec::new();
    for eml in &emls {
        let got = summary(&std::fs::read(eml).unwrap());
        let golden = eml.with_extension("json");
        if bless {
            let text = serde_json::to_string_pretty(&got).unwrap() + "\n";
            std::fs::write(&golden, text).unwrap();
        } else {
            let text = std::fs::read_to_string(&golden).unwrap_or_else(|e| {
                panic!("{}: {e} (MAILPROC_BLESS=1 writes it)", golden.display())
            });
            let want: Value = serde_json::from_str(&text).unwrap();
            if got != want {
                differ.push(format!(
                    "{}:\n  want {want}\n  got  {got}",
                    eml.file_name().unwrap().to_string_lossy()
                ));
            }
        }
        ran += 1;
    }
    assert!(differ.is_empty(), "parsing changed:\n{}", differ.join("\n"));
    // Every fixture ran, and no golden file is left without its message.
    assert_eq!(ran, emls.len());
    assert!(
        ran >= 15,
        "only {ran} fixtures found in {}",
        fixtures().display()
    );
    for entry in std::fs::read_dir(fixtures()).unwrap() {
        let p = entry.unwrap().path();
        if p.extension().is_some_and(|x| x == "json") {
            assert!(
                p.with_extension("eml").exists(),
                "{} has no .eml",
                p.display()
            );
        }
    }
}

/// Issue [15]: the two Japanese messages of the SpamAssassin corpus's
/// hard ham (ISO-2022-JP subjects and bodies) were read as raw escape
/// sequences, matched a spam rule on them and went to Junk. With
/// mail-parser's `full_encoding` they read as Japanese.
#[test]
fn japanese_ham_of_the_spamassassin_corpus_decodes() {
    let data = PathBuf::from(corpus::data());
    let cases = [
        (
            "hard-ham-1/00039.b2b936a8501444b213f61f9ff193b480.txt",
            "日本語の件名（サブジェクト）\u{3000}スパムメールではありません！",
            "OpenText社",
        ),
        (
            "hard-ham-1/00042.5b7f2a0e87c853e8c8e13d556c1320d2.txt",
            "Re: 三菱化学エンジニアリング様プロセスダウンについて  - ticket #55606OTC1 -",
            "OTC/伊東様",
        ),
    ];
    for (file, subject, first_line) in cases {
        let raw = corpus::raw(&data.join(file));
        let got = summary(&raw);
        assert_eq!(got["subject"], subject, "{file}: {got}");
        assert_eq!(got["firstBodyLine"], first_line, "{file}: {got}");
    }
}
