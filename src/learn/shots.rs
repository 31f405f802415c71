//! Examples for the model from the user's own folders: each learned
//! message as its sender and subject words, with the folder it is in, and
//! the nearest of them to a new message (shown to the model as earlier
//! turns of the conversation, which a small model copies well; see
//! docs/quality.md).
//!
//! Everything is taken from a message's [`features`](super::features):
//! the `from:` address and the `s:` subject words (lower case, digits as
//! `0`, in alphabetical order). No body text is kept.

use std::collections::{BTreeMap, VecDeque};

/// Examples kept per folder of an account; the oldest goes first.
pub const MAX_SHOTS: usize = 2000;
/// Examples shown to the model for one message.
pub const SHOTS_PER_MESSAGE: usize = 6;
/// Longest sender or subject text kept of an example, in characters.
const MAX_TEXT: usize = 120;

/// One example: a message of the user's folders as the model sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Shot {
    /// The folder it is in.
    pub class: String,
    /// The sender's address (lower case).
    pub sender: String,
    /// The words of its subject, space-separated, in the order of
    /// [`features`](super::features) (alphabetical).
    pub subject: String,
}

impl Shot {
    /// The example a message's features make, for `class`.
    pub fn from_features(class: &str, feats: &[String]) -> Shot {
        let mut sender = String::new();
        let mut words: Vec<&str> = Vec::new();
        for f in feats {
            if let Some(s) = f.strip_prefix("from:") {
                sender = s.to_string();
            } else if let Some(w) = f.strip_prefix("s:") {
                words.push(w);
            }
        }
        Shot {
            class: class.to_string(),
            sender: crate::email::truncate(&sender, MAX_TEXT).to_string(),
            subject: crate::email::truncate(&words.join(" "), MAX_TEXT).to_string(),
        }
    }

    /// What nearness is measured on: the subject words and the sender's
    /// domain.
    fn keys(&self) -> impl Iterator<Item = &str> {
        let dom = self.sender.rsplit_once('@').map(|(_, d)| d);
        self.subject.split(' ').filter(|w| !w.is_empty()).chain(dom)
    }
}

/// An account's examples by folder, oldest first, at most [`MAX_SHOTS`]
/// a folder (so a big folder does not crowd out the others).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Shots {
    by_class: BTreeMap<String, VecDeque<(u64, Shot)>>,
    /// Order of arrival, so the newer of two equally near examples wins.
    seq: u64,
}

impl Shots {
    pub fn len(&self) -> usize {
        self.by_class.values().map(VecDeque::len).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Adds an example (the oldest of its folder goes when that is full).
    pub fn push(&mut self, shot: Shot) {
        let q = self.by_class.entry(shot.class.clone()).or_default();
        if q.len() >= MAX_SHOTS {
            q.pop_front();
        }
        self.seq += 1;
        q.push_back((self.seq, shot));
    }

    /// Takes back the newest example equal to `shot` (a correction
    /// unlearns the folder that was wrong).
    pub fn remove(&mut self, shot: &Shot) {
        if let Some(q) = self.by_class.get_mut(&shot.class) {
            if let Some(i) = q.iter().rposition(|(_, s)| s == shot) {
                q.remove(i);
            }
        }
    }

    /// Every example, folder by folder, oldest first in each.
    pub fn iter(&self) -> impl Iterator<Item = &Shot> {
        self.by_class.values().flatten().map(|(_, s)| s)
    }

    /// The `k` examples nearest to a message (by its features), least near
    /// first, so the nearest is the last the model reads before the
    /// message. Nearness is the cosine of the sets of subject words and
    /// sender domain; examples sharing nothing are never returned, and of
    /// equally near ones the newer wins.
    pub fn nearest(&self, feats: &[String], k: usize) -> Vec<Shot> {
        let mut query: Vec<&str> = Vec::new();
        for f in feats {
            if let Some(w) = f.strip_prefix("s:") {
                query.push(w);
            } else if let Some(d) = f.strip_prefix("dom:") {
                query.push(d);
            }
        }
        if query.is_empty() || k == 0 {
            return Vec::new();
        }
        query.sort_unstable();
        query.dedup();
        let mut best: Vec<(f64, u64, &Shot)> = Vec::new();
        for (seq, s) in self.by_class.values().flatten() {
            let mut n = 0usize;
            let mut shared = 0usize;
            for key in s.keys() {
                n += 1;
                shared += usize::from(query.binary_search(&key).is_ok());
            }
            if shared == 0 {
                continue;
            }
            let score = shared as f64 / ((n * query.len()) as f64).sqrt();
            best.push((score, *seq, s));
        }
        // Highest score first; of equal scores the newest.
        best.sort_by(|a, b| b.0.total_cmp(&a.0).then(b.1.cmp(&a.1)));
        best.truncate(k);
        best.iter().rev().map(|&(_, _, s)| s.clone()).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::email::Email;
    use crate::learn::features;

    fn feats(from: &str, subject: &str) -> Vec<String> {
        features(&Email {
            from: from.into(),
            subject: subject.into(),
            body: "the body is never kept".into(),
            ..Default::default()
        })
    }

    #[test]
    fn an_example_is_its_sender_and_subject_words() {
        let s = Shot::from_features("Junk", &feats("Win@Lotto.Example", "You WON $1,000,000!"));
        assert_eq!(s.class, "Junk");
        assert_eq!(s.sender, "win@lotto.example");
        assert_eq!(
            s.subject, "000 won you",
            "digits are 0, one-letter words dropped"
        );
    }

    #[test]
    fn the_nearest_share_subject_words_or_the_sender_domain() {
        let mut shots = Shots::default();
        for (class, from, subject) in [
            ("Junk", "a@spam.example", "cheap meds online"),
            ("INBOX", "bob@friends.example", "lunch on sunday"),
            ("Lists", "list@rust.example", "weekly rust news"),
            ("INBOX", "carol@friends.example", "photos from sunday"),
            ("Junk", "b@other.example", "meds cheap cheap"),
        ] {
            shots.push(Shot::from_features(class, &feats(from, subject)));
        }
        let near = shots.nearest(&feats("x@unknown.example", "cheap meds today"), 6);
        let classes: Vec<&str> = near.iter().map(|s| s.class.as_str()).collect();
        assert_eq!(classes, ["Junk", "Junk"], "{near:?}");
        // The nearest comes last: "meds cheap" (2 of 2 shared) beats
        // "cheap meds online" (2 of 3).
        assert_eq!(near[1].sender, "b@other.example");
        // The sender's domain counts.
        let near = shots.nearest(&feats("dave@friends.example", "hello"), 1);
        assert_eq!(near.len(), 1);
        assert_eq!(near[0].sender, "carol@friends.example", "the newer of two");
        // Nothing shared, nothing shown.
        assert!(shots.nearest(&feats("z@z.example", "zzz"), 6).is_empty());
        assert!(shots.nearest(&[], 6).is_empty());
    }

    #[test]
    fn the_oldest_of_a_folder_goes_when_full_and_a_correction_takes_one_back() {
        let mut shots = Shots::default();
        shots.push(Shot {
            class: "B".into(),
            sender: "b@x".into(),
            subject: String::new(),
        });
        for i in 0..MAX_SHOTS + 3 {
            shots.push(Shot {
                class: "A".into(),
                sender: format!("{i}@x"),
                subject: String::new(),
            });
        }
        assert_eq!(shots.len(), MAX_SHOTS + 1, "B's one example stays");
        assert_eq!(shots.iter().next().unwrap().sender, "3@x");
        assert_eq!(shots.iter().next().unwrap().sender, "3@x");
        let last = shots.iter().nth(MAX_SHOTS - 1).unwrap().clone();
        assert_eq!(last.class, "A");
        shots.remove(&last);
        assert_eq!(shots.len(), MAX_SHOTS);
        assert!(!shots.iter().any(|s| *s == last));
    }
}
