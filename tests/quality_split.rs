//! The spam split that `scripts/quality.sh` measures every tier on
//! (`tests/common/corpus.rs`): its promise is that thresholds are chosen
//! on validation messages and the held-out ones are only ever measured.
//! Checked here on a corpus-shaped directory of small messages, so the
//! check runs without the corpus and in a moment: the held-out split is
//! the same for every validation fold, no validation fold shares a message
//! with it or with another fold, and each fold has its shape.

#[path = "common/corpus.rs"]
mod corpus;

use std::collections::HashSet;
use std::path::PathBuf;

/// Files written per group: enough for three validation folds before the
/// held-out files (125 spam of each group, 200 and 50 ham a fold).
const GROUPS: [(&str, usize); 5] = [
    ("spam-1", 510),
    ("spam-2", 505),
    ("easy-ham-2", 830),
    ("hard-ham-1", 201),
    ("easy-ham-1", 40),
];

fn corpus_dir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for (group, n) in GROUPS {
        let g = dir.path().join(group);
        std::fs::create_dir(&g).unwrap();
        for i in 0..n {
            let mail = format!(
                "From: sender{i}@{group}.example\r\nTo: user@example.org\r\n\
                 Subject: {group} number {i}\r\nMessage-ID: <{i}@{group}.example>\r\n\r\nText {i}.\r\n"
            );
            std::fs::write(g.join(format!("{i:05}.txt")), mail).unwrap();
            // The package's metadata beside each message is not mail.
            std::fs::write(g.join(format!("{i:05}.json")), "{}").unwrap();
        }
    }
    dir
}

fn paths(msgs: &[corpus::Msg]) -> HashSet<PathBuf> {
    msgs.iter().map(|m| m.path.clone()).collect()
}

#[test]
fn validation_folds_never_touch_the_held_out_messages_or_each_other() {
    let dir = corpus_dir();
    let data = dir.path().to_str().unwrap();
    let all: usize = GROUPS.iter().map(|(_, n)| n).sum();
    let mut held_out: Option<HashSet<PathBuf>> = None;
    let mut folds: Vec<HashSet<PathBuf>> = Vec::new();
    for fold in 0..3 {
        let s = corpus::spam_split_at(data, fold);
        let (fit, validation, test) = (paths(&s.fit), paths(&s.validation), paths(&s.test));
        assert_eq!(
            (test.len(), validation.len()),
            (500, 500),
            "fold {fold}: held out and validation of 500 each"
        );
        assert_eq!(
            fit.len() + validation.len() + test.len(),
            all,
            "fold {fold}: every message once"
        );
        assert!(
            fit.is_disjoint(&validation) && fit.is_disjoint(&test),
            "fold {fold}: fit apart"
        );
        assert!(
            validation.is_disjoint(&test),
            "fold {fold}: validation apart from held out"
        );
        assert_eq!(
            s.train().count(),
            all - 500,
            "fold {fold}: the held-out measurement trains on everything else"
        );
        // The same shape: spam and ham alternate, 250 of each.
        for split in [&s.validation, &s.test] {
            let junk = split.iter().filter(|m| m.class == "Junk").count();
            assert_eq!(junk, 250, "fold {fold}: 250 spam");
            assert!(split.windows(2).all(|w| w[0].class != w[1].class));
        }
        let per_group = |group: &str| {
            s.test
                .iter()
                .filter(|m| m.path.starts_with(dir.path().join(group)))
                .count()
        };
        assert_eq!(
            ["spam-1", "spam-2", "easy-ham-2", "hard-ham-1", "easy-ham-1"].map(per_group),
            [125, 125, 200, 50, 0]
        );
        match &held_out {
            None => held_out = Some(test),
            Some(h) => assert_eq!(h, &test, "fold {fold}: the same held-out messages"),
        }
        for (earlier, other) in folds.iter().enumerate() {
            assert!(
                other.is_disjoint(&validation),
                "folds {earlier} and {fold} share messages"
            );
        }
        folds.push(validation);
    }
    // Fold 0 is the files just before the held-out ones (spam-1's 385th
    // on are held out), fold 1 the 125 before it.
    let file = |n: usize| dir.path().join("spam-1").join(format!("{n:05}.txt"));
    assert!(held_out.unwrap().contains(&file(385)));
    assert!(folds[0].contains(&file(384)) && folds[0].contains(&file(260)));
    assert!(folds[1].contains(&file(259)) && folds[1].contains(&file(135)));
    assert!(folds[2].contains(&file(134)) && !folds[2].contains(&file(9)));
}
