//! Learning from the user's own folders: a multinomial naive Bayes classifier
//! per account whose classes are folders.
//!
//! Features ([`features`]) are the sender's address and domain, the List-Id,
//! and the words of the subject and of the first [`TEXT_BYTES`] of the text.
//! Each distinct feature of a message counts once (binarized multinomial
//! naive Bayes, which suits short, repetitive mail better than raw counts),
//! with add-one smoothing. The model is a table of counts: training adds to
//! it, so it is updated one message at a time as mail is processed, and kept
//! in SQLite (`store::learn`) per account.
//!
//! Naive Bayes multiplies hundreds of token likelihoods as if they were
//! independent and so is nearly always "sure". The evidence of the tokens is
//! therefore scaled down to that of at most [`EVIDENCE_CAP`] features before
//! the posterior is computed. A message made mostly of features never seen
//! is unlike anything learned, however the few known ones vote: the
//! confidence is the highest posterior shrunk towards even odds by the
//! share of the message's features the model knows. See docs/quality.md for the measurement.

mod shots;

pub use shots::{Shot, Shots, MAX_SHOTS, SHOTS_PER_MESSAGE};

use std::collections::{BTreeMap, BTreeSet, HashMap};

use crate::email::Email;

/// How much of a message's text is read, for training and for deciding.
pub const TEXT_BYTES: usize = 4096;
/// Words kept of the text (after the subject's).
const MAX_BODY_TOKENS: usize = 300;
/// The token evidence counts as that of at most this many features.
pub const EVIDENCE_CAP: f64 = 12.0;
/// Fewer examples than this in a class and it is never predicted.
pub const MIN_CLASS_DOCS: u64 = 2;

/// The `model` an activity entry shows for a decision of the classifier.
pub const PATH: &str = "learned";

/// Which path decided, from an activity entry's `model`: `rule`,
/// `learned`, `none` (nothing could decide) or `model`. The label of
/// `mailproc_decisions_total{path}`.
pub fn path_of(model: &str) -> &'static str {
    if model.starts_with("rules:") {
        "rule"
    } else if model == PATH {
        "learned"
    } else if model == "none" {
        "none"
    } else {
        "model"
    }
}

/// The distinct features of a message, prefixed by their kind (`from:`,
/// `dom:`, `list:`, `s:` subject word, `b:` body word).
pub fn features(e: &Email) -> Vec<String> {
    let mut out: BTreeSet<String> = BTreeSet::new();
    let from = e.from.trim().to_lowercase();
    if !from.is_empty() {
        if let Some((_, dom)) = from.rsplit_once('@') {
            out.insert(format!("dom:{dom}"));
        }
        out.insert(format!("from:{from}"));
    }
    if let Some(list) = e.header("List-Id") {
        let id = match (list.rfind('<'), list.rfind('>')) {
            (Some(a), Some(b)) if a < b => &list[a + 1..b],
            _ => list,
        };
        let id = id.trim().to_lowercase();
        if !id.is_empty() {
            out.insert(format!("list:{id}"));
        }
    }
    for w in words(&e.subject) {
        out.insert(format!("s:{w}"));
    }
    let body = crate::email::truncate(&e.body, TEXT_BYTES);
    for w in words(body).take(MAX_BODY_TOKENS) {
        out.insert(format!("b:{w}"));
    }
    out.into_iter().collect()
}

/// Lower-cased words of 2 to 30 characters; digits collapse to `0` so
/// order numbers and dates become one feature.
fn words(s: &str) -> impl Iterator<Item = String> + '_ {
    s.split(|c: char| !c.is_alphanumeric())
        .filter(|w| {
            let n = w.chars().count();
            (2..=30).contains(&n)
        })
        .map(|w| {
            w.chars()
                .map(|c| if c.is_ascii_digit() { '0' } else { c })
                .flat_map(char::to_lowercase)
                .collect()
        })
}

/// Counts of one class (folder).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ClassCounts {
    /// Messages of the class.
    pub docs: u64,
    /// Sum of `tokens`.
    pub total: u64,
    pub tokens: HashMap<String, u64>,
}

/// A naive Bayes model: counts per class.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Model {
    pub classes: BTreeMap<String, ClassCounts>,
    /// How many classes hold each token (its size is the vocabulary).
    vocab: HashMap<String, u32>,
    /// The messages learned, as examples for the model.
    pub shots: Shots,
}

/// The classifier's answer for one message.
#[derive(Debug, Clone, PartialEq)]
pub struct Prediction {
    pub class: String,
    /// Posterior probability of `class`, 0 to 1.
    pub confidence: f64,
}

impl Model {
    /// Builds a model from stored counts.
    pub fn from_counts(classes: BTreeMap<String, ClassCounts>) -> Model {
        let mut vocab: HashMap<String, u32> = HashMap::new();
        for c in classes.values() {
            for t in c.tokens.keys() {
                *vocab.entry(t.clone()).or_default() += 1;
            }
        }
        Model {
            classes,
            vocab,
            shots: Shots::default(),
        }
    }

    /// Messages learned, over all classes.
    pub fn docs(&self) -> u64 {
        self.classes.values().map(|c| c.docs).sum()
    }

    /// Learns one message of `class` (`sign` -1 unlearns it: a message
    /// learned under the wrong folder).
    pub fn add(&mut self, class: &str, feats: &[String], sign: i64) {
        let shot = Shot::from_features(class, feats);
        if sign > 0 {
            self.shots.push(shot);
        } else {
            self.shots.remove(&shot);
        }
        let c = self.classes.entry(class.to_string()).or_default();
        c.docs = c.docs.saturating_add_signed(sign);
        for f in feats {
            let was = c.tokens.get(f).copied().unwrap_or(0);
            let now = was.saturating_add_signed(sign);
            c.total = c.total.saturating_add_signed(now as i64 - was as i64);
            if now == 0 {
                c.tokens.remove(f);
            } else {
                c.tokens.insert(f.clone(), now);
            }
            if was == 0 && now > 0 {
                *self.vocab.entry(f.clone()).or_default() += 1;
            } else if was > 0 && now == 0 {
                if let Some(v) = self.vocab.get_mut(f) {
                    *v -= 1;
                    if *v == 0 {
                        self.vocab.remove(f);
                    }
                }
            }
        }
    }

    /// The most likely class among those with at least [`MIN_CLASS_DOCS`]
    /// examples, and how sure; `None` with fewer than two such classes.
    pub fn predict(&self, feats: &[String]) -> Option<Prediction> {
        let classes: Vec<(&String, &ClassCounts)> = self
            .classes
            .iter()
            .filter(|(_, c)| c.docs >= MIN_CLASS_DOCS)
            .collect();
        if classes.len() < 2 {
            return None;
        }
        let n_docs: u64 = classes.iter().map(|(_, c)| c.docs).sum();
        let v = self.vocab.len().max(1) as f64;
        let known: Vec<&String> = feats
            .iter()
            .filter(|f| self.vocab.contains_key(*f))
            .collect();
        let scale = if known.is_empty() {
            1.0
        } else {
            (EVIDENCE_CAP / known.len() as f64).min(1.0)
        };
        let scores: Vec<f64> = classes
            .iter()
            .map(|(_, c)| {
                let prior = (c.docs as f64 / n_docs as f64).ln();
                let denom = (c.total as f64 + v).ln();
                let evidence: f64 = known
                    .iter()
                    .map(|f| {
                        let n = c.tokens.get(*f).copied().unwrap_or(0) as f64;
                        (n + 1.0).ln() - denom
                    })
                    .sum();
                prior + scale * evidence
            })
            .collect();
        let max = scores.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let sum: f64 = scores.iter().map(|s| (s - max).exp()).sum();
        let (best, score) = scores
            .iter()
            .enumerate()
            .max_by(|a, b| a.1.total_cmp(b.1))?;
        // A message mostly made of features never seen is new: its
        // posterior is shrunk towards even odds in proportion.
        let familiar = if feats.is_empty() {
            0.0
        } else {
            known.len() as f64 / feats.len() as f64
        };
        let posterior = (score - max).exp() / sum;
        Some(Prediction {
            class: classes[best].0.clone(),
            confidence: familiar * posterior + (1.0 - familiar) / classes.len() as f64,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn email(from: &str, subject: &str, body: &str, list: Option<&str>) -> Email {
        let mut headers = Vec::new();
        if let Some(l) = list {
            headers.push(("List-Id".to_string(), l.to_string()));
        }
        Email {
            from: from.into(),
            subject: subject.into(),
            body: body.into(),
            headers,
            ..Default::default()
        }
    }

    #[test]
    fn features_name_sender_list_and_words() {
        let f = features(&email(
            "News@Example.COM",
            "Weekly digest #42",
            "Read the 2024 issue",
            Some("Example news <news.example.com>"),
        ));
        for want in [
            "from:news@example.com",
            "dom:example.com",
            "list:news.example.com",
            "s:weekly",
            "s:00",
            "b:read",
            "b:0000",
        ] {
            assert!(f.iter().any(|x| x == want), "{want} missing from {f:?}");
        }
        assert!(!f.iter().any(|x| x == "b:a"), "one-letter words are noise");
    }

    #[test]
    fn learns_and_unlearns() {
        let mut m = Model::default();
        let news = features(&email("n@news.com", "Weekly digest", "top stories", None));
        let shop = features(&email("r@shop.com", "Your receipt", "order total", None));
        assert_eq!(m.predict(&news), None, "nothing learned yet");
        for _ in 0..3 {
            m.add("News", &news, 1);
            m.add("Receipts", &shop, 1);
        }
        let p = m.predict(&news).unwrap();
        assert_eq!(p.class, "News");
        assert!(p.confidence > 0.9, "{p:?}");
        let p = m
            .predict(&features(&email("x@shop.com", "receipt 12", "", None)))
            .unwrap();
        assert_eq!(p.class, "Receipts");
        // Unknown words give no evidence: the priors are even.
        let p = m.predict(&["b:zzz".to_string()]).unwrap();
        assert!((p.confidence - 0.5).abs() < 1e-9, "{p:?}");
        // One known word among many unknown ones: not sure.
        let mut mostly_new = features(&email("a@friend.org", "lunch sunday", "see you", None));
        mostly_new.push("s:weekly".into());
        let p = m.predict(&mostly_new).unwrap();
        assert_eq!(p.class, "News");
        assert!(p.confidence < 0.7, "{p:?}");
        for _ in 0..3 {
            m.add("News", &news, -1);
        }
        assert_eq!(m.classes["News"].docs, 0);
        assert_eq!(m.classes["News"].total, 0);
        assert_eq!(m.predict(&news), None, "one class left");
        // The examples went with the counts: only the receipts are left.
        assert_eq!(m.shots.len(), 3);
        assert!(m.shots.iter().all(|s| s.class == "Receipts"));
        let mut stored = Model::from_counts(m.classes.clone());
        stored.shots = m.shots.clone();
        assert_eq!(m, stored);
    }
}
