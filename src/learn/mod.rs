//! Learning from the user's own folders: a naive Bayes classifier per
//! account whose classes are folders.
//!
//! Features ([`features`]) are the sender's address and domain, the List-Id,
//! header tokens as SpamAssassin's Bayes reads them (From's display name,
//! the Return-Path, Reply-To and Message-ID domains, the mailer, the
//! Content-Type, how many recipients), and the words of the subject and of
//! the first [`TEXT_BYTES`] of the text.
//! Each distinct feature of a message counts once. The model is a table of
//! counts (messages per class, and per feature the messages of each class
//! holding it): training adds to it, so it is updated one message at a time
//! as mail is processed, and kept in SQLite (`store::learn`) per account.
//!
//! Deciding ([`Model::predict`]) works as SpamAssassin's Bayes and Gary
//! Robinson's spam filters do, for any number of classes: each known
//! feature says how likely each class is from the share of the class's
//! messages holding it (so a big folder does not outvote a small one),
//! pulled towards even odds when few messages hold it ([`STRENGTH`]); only
//! the [`TOP_FEATURES`] most telling features (furthest from even odds,
//! at least [`MIN_DEVIATION`]) vote, and their votes are combined as naive
//! Bayes, scaled to the evidence of at most [`EVIDENCE_CAP`] features, so
//! the confidence is not the near-certainty naive Bayes gives everything.
//! The junk folder is decided as SpamAssassin's Bayes decides spam
//! ([`Model::predict_junk`], `chi`): Fisher's chi-squared combining of the
//! strongest features, naive Bayes where that is unsure. Chosen on a
//! validation split carved from the training messages (docs/quality.md).

mod chi;
mod shots;

pub use chi::{Combine, UNSURE};
pub use shots::{Shot, Shots, MAX_SHOTS, SHOTS_PER_MESSAGE};

use std::collections::{BTreeMap, BTreeSet, HashMap};

use crate::email::Email;

/// How much of a message's text (decoded, HTML converted) its words are
/// read from, for training and for deciding.
pub const TEXT_BYTES: usize = 4096;
/// How much of a message's raw text is fetched for [`TEXT_BYTES`] of it:
/// an HTML message's first 4 KB are mostly markup (one spam's 4 KB held
/// 211 characters of its 2,447), so its words come from further in. Chosen
/// on the validation split (docs/quality.md): 16 KB sent 6 ham to Junk
/// where 4 KB sent 9, at the same accuracy or better.
pub const FETCH_TEXT_BYTES: usize = 16 * 1024;
/// Words kept of the text (after the subject's).
const MAX_BODY_TOKENS: usize = 300;
/// The votes count as the evidence of at most this many features.
pub const EVIDENCE_CAP: f64 = 20.0;
/// Features that vote on a message: the most telling ones.
pub const TOP_FEATURES: usize = 150;
/// How many messages' worth of even odds a feature's vote is pulled
/// towards (Robinson's `s`): a feature seen once says little.
pub const STRENGTH: f64 = 1.0;
/// A feature whose vote is closer than this to even odds does not vote.
pub const MIN_DEVIATION: f64 = 0.1;
/// Fewer examples than this in a class and it is never predicted.
pub const MIN_CLASS_DOCS: u64 = 2;
/// The most counts (a feature in a folder) an account keeps. Mail is
/// written by strangers: a run of messages of random words, each learned
/// as a rule or the model filed it, grew the store and every running
/// account's memory without end (1.55 million rows held 340 MB). Past
/// this, the counts learned least and longest ago go until
/// [`VOCABULARY_KEPT`] are left, as SpamAssassin expires its Bayes
/// tokens (its default keeps 150,000): the 5,546 messages of the
/// SpamAssassin training split make 59,592.
pub const MAX_VOCABULARY: u64 = 200_000;
/// What is left after the counts past [`MAX_VOCABULARY`] went: a tenth
/// below, so that a trim comes once in many messages, not with each.
pub const VOCABULARY_KEPT: u64 = 180_000;

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

/// Every header field [`features`] reads, and what decoding the text
/// needs (its MIME fields). A message fetched with only these fields and
/// the first [`FETCH_TEXT_BYTES`] of its text gives the same features as the
/// whole message's header with that text: the classifier decides on what
/// it learned from (training fetches whole headers).
pub const HEADER_FIELDS: [&str; 13] = [
    "From",
    "To",
    "Cc",
    "Subject",
    "Message-ID",
    "List-Id",
    "Return-Path",
    "Reply-To",
    "X-Mailer",
    "User-Agent",
    "Content-Type",
    "Content-Transfer-Encoding",
    "MIME-Version",
];

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
    headers(e, &mut out);
    for w in words(&e.subject) {
        out.insert(format!("s:{w}"));
    }
    let body = crate::email::truncate(&e.body, TEXT_BYTES);
    for w in words(body).take(MAX_BODY_TOKENS) {
        out.insert(format!("b:{w}"));
    }
    out.into_iter().collect()
}

/// Tokens of the header as SpamAssassin's Bayes reads it, by kind: the
/// words of From's display name (`fn:`), the domains of Return-Path
/// (`rp:`), Reply-To (`rt:`) and Message-ID (`mid:`), the first words of
/// X-Mailer or User-Agent (`xm:`) and of Content-Type (`ct:`), and how
/// many recipients (`to:`, 0 to 3 or more).
fn headers(e: &Email, out: &mut BTreeSet<String>) {
    if let Some(f) = e.header("From").filter(|f| f.contains('<')) {
        for w in words(f.split('<').next().unwrap_or("")) {
            out.insert(format!("fn:{w}"));
        }
    }
    for (h, p) in [
        ("Return-Path", "rp"),
        ("Reply-To", "rt"),
        ("Message-ID", "mid"),
    ] {
        if let Some(d) = e.header(h).and_then(domain_of) {
            out.insert(format!("{p}:{d}"));
        }
    }
    for h in ["X-Mailer", "User-Agent"] {
        for w in e.header(h).into_iter().flat_map(words).take(3) {
            out.insert(format!("xm:{w}"));
        }
    }
    for w in e.header("Content-Type").into_iter().flat_map(words).take(6) {
        out.insert(format!("ct:{w}"));
    }
    out.insert(format!("to:{}", e.to.len().min(3)));
}

/// The registered-looking part of an address's domain (its last two
/// labels), lower-cased.
fn domain_of(v: &str) -> Option<String> {
    let (_, d) = v
        .trim()
        .trim_matches(|c| c == '<' || c == '>')
        .rsplit_once('@')?;
    let d = d.trim_matches(|c: char| !c.is_alphanumeric());
    if d.is_empty() {
        return None;
    }
    let parts: Vec<&str> = d.trim_end_matches('.').split('.').collect();
    Some(
        parts[parts.len().saturating_sub(2)..]
            .join(".")
            .to_lowercase(),
    )
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
        Model {
            classes,
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
        }
    }

    /// The most likely class among those with at least [`MIN_CLASS_DOCS`]
    /// examples, and how sure; `None` with fewer than two such classes.
    pub fn predict(&self, feats: &[String]) -> Option<Prediction> {
        best(self.posteriors(feats)?)
    }

    /// As [`Model::predict`], with `junk` (the junk folder) decided as
    /// SpamAssassin's Bayes decides spam: its probability is the
    /// chi-squared indicator ([`Model::indicator`]) where that is sure
    /// (further than [`UNSURE`] from 0.5), else naive Bayes's; the other
    /// classes share the rest as naive Bayes weighs them. Chosen on the
    /// validation split (docs/quality.md): naive Bayes alone grows sure
    /// of newsletters that look like spam.
    pub fn predict_junk(&self, feats: &[String], junk: &str) -> Option<Prediction> {
        let mut post = self.posteriors(feats)?;
        let Some(nb) = post.iter().find(|(c, _)| c == junk).map(|p| p.1) else {
            return best(post);
        };
        let spam = match self.indicator(feats, junk) {
            Some(i) if (i - 0.5).abs() > UNSURE => i,
            _ => nb,
        };
        let rest = 1.0 - nb;
        let others = (post.len() - 1) as f64;
        for (c, p) in post.iter_mut() {
            *p = if c == junk {
                spam
            } else if rest > 0.0 {
                (1.0 - spam) * *p / rest
            } else {
                (1.0 - spam) / others
            };
        }
        best(post)
    }

    /// Each class (with at least [`MIN_CLASS_DOCS`] examples) and how
    /// likely, summing to 1; `None` with fewer than two such classes.
    fn posteriors(&self, feats: &[String]) -> Option<Vec<(String, f64)>> {
        let classes: Vec<(&String, &ClassCounts)> = self
            .classes
            .iter()
            .filter(|(_, c)| c.docs >= MIN_CLASS_DOCS)
            .collect();
        let k = classes.len();
        if k < 2 {
            return None;
        }
        let even = 1.0 / k as f64;
        // Each known feature's vote: per class, the share of its messages
        // holding the feature, normalised over the classes and pulled
        // towards even odds by how few messages hold it.
        let mut votes: Vec<(f64, Vec<f64>)> = Vec::new();
        let mut known = 0usize;
        for f in feats {
            let held: Vec<f64> = classes
                .iter()
                .map(|(_, c)| c.tokens.get(f).copied().unwrap_or(0) as f64)
                .collect();
            let n: f64 = held.iter().sum();
            if n == 0.0 {
                continue;
            }
            known += 1;
            let rates: Vec<f64> = classes
                .iter()
                .zip(&held)
                .map(|((_, c), h)| h / c.docs as f64)
                .collect();
            let sum: f64 = rates.iter().sum();
            let q: Vec<f64> = rates
                .iter()
                .map(|r| (STRENGTH * even + n * r / sum) / (STRENGTH + n))
                .collect();
            let deviation = q.iter().map(|v| (v - even).abs()).fold(0.0, f64::max);
            if deviation >= MIN_DEVIATION {
                votes.push((deviation, q));
            }
        }
        // The most telling first; of equal ones, the feature order (sorted
        // features: the same message always gets the same votes).
        votes.sort_by(|a, b| b.0.total_cmp(&a.0));
        votes.truncate(TOP_FEATURES);
        let scale = (EVIDENCE_CAP / votes.len().max(1) as f64).min(1.0);
        let scores: Vec<f64> = (0..k)
            .map(|c| scale * votes.iter().map(|(_, q)| q[c].ln()).sum::<f64>())
            .collect();
        let max = scores.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let sum: f64 = scores.iter().map(|s| (s - max).exp()).sum();
        // A message mostly made of features never seen is new: its
        // posterior is shrunk towards even odds in proportion.
        let familiar = if feats.is_empty() {
            0.0
        } else {
            known as f64 / feats.len() as f64
        };
        Some(
            classes
                .iter()
                .zip(&scores)
                .map(|((c, _), s)| {
                    let p = (s - max).exp() / sum;
                    ((*c).clone(), familiar * p + (1.0 - familiar) * even)
                })
                .collect(),
        )
    }
}

/// The most likely of `post` (the last of equals).
fn best(post: Vec<(String, f64)>) -> Option<Prediction> {
    let mut it = post.into_iter();
    let first = it.next()?;
    let (class, confidence) = it.fold(first, |b, p| if p.1 >= b.1 { p } else { b });
    // A probability: the renormalising above can round past 1 (an audit
    // saw 1.0000000000000002 in the API, the CSV and webhooks).
    let confidence = confidence.clamp(0.0, 1.0);
    Some(Prediction { class, confidence })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_confidence_rounded_past_one_is_one() {
        let p = best(vec![("a".into(), 1.0000000000000002), ("b".into(), 0.0)]).unwrap();
        assert_eq!((p.class.as_str(), p.confidence), ("a", 1.0));
    }

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

    #[test]
    fn a_folder_is_judged_by_the_share_of_its_mail_not_its_size() {
        // "w" is in 10 of Big's 50 messages and in both of Small's: the
        // message holding it looks like Small's mail, however big Big is.
        let mut m = Model::default();
        for i in 0..50 {
            let mut f: Vec<String> = (0..5).map(|j| format!("b:big{i}x{j}")).collect();
            if i < 10 {
                f.push("b:w".into());
            }
            f.sort();
            m.add("Big", &f, 1);
        }
        for _ in 0..2 {
            m.add("Small", &["b:w".to_string()], 1);
        }
        let p = m.predict(&["b:w".to_string()]).unwrap();
        assert_eq!(p.class, "Small", "{p:?}");
        assert!(p.confidence > 0.7 && p.confidence < 0.9, "{p:?}");
    }

    #[test]
    fn only_the_most_telling_features_vote_and_their_evidence_is_capped() {
        let mut m = Model::default();
        let spam: Vec<String> = (0..400).map(|i| format!("b:spam{i:03}")).collect();
        let ham: Vec<String> = (0..400).map(|i| format!("b:ham{i:03}")).collect();
        for _ in 0..5 {
            m.add("Junk", &spam, 1);
            m.add("INBOX", &ham, 1);
        }
        // 300 spam words against 100 ham words: only the 150 most telling
        // vote, and all are equally telling, so the first 150 in order
        // (the ham words sort first) decide: ham.
        let mut mixed: Vec<String> = spam[..300].to_vec();
        mixed.extend_from_slice(&ham[..100]);
        mixed.sort();
        let p = m.predict(&mixed).unwrap();
        assert_eq!(p.class, "INBOX", "{p:?}");
        // All 400 spam words: sure, but the evidence of 150 votes counts
        // as that of EVIDENCE_CAP, so not infinitely sure.
        let p = m.predict(&spam).unwrap();
        assert_eq!(p.class, "Junk");
        let one_vote = (0.5 + 5.0) / 6.0_f64;
        let odds = (one_vote / (1.0 - one_vote)).powf(EVIDENCE_CAP);
        assert!((p.confidence - odds / (1.0 + odds)).abs() < 1e-9, "{p:?}");
    }

    #[test]
    fn the_junk_folder_is_decided_by_chi_squared_where_it_is_sure() {
        // Junk, INBOX and Lists, 20 messages each. Ten words are in every
        // junk message and half the inbox's (twice as likely in junk: too
        // weak for the chi-squared combining); "meeting" is only in the
        // inbox, "viagra" only in junk.
        let weak = [
            "b:cheap", "b:click", "b:deal", "b:free", "b:now", "b:offer", "b:only", "b:save",
            "b:today", "b:win",
        ];
        let mut m = Model::default();
        for i in 0..20 {
            let mut junk: Vec<String> = weak.iter().map(|w| w.to_string()).collect();
            junk.extend(["b:viagra".to_string(), format!("b:j{i}")]);
            let mut inbox = vec!["b:meeting".to_string(), format!("b:i{i}")];
            if i < 10 {
                inbox.extend(weak.iter().map(|w| w.to_string()));
            }
            let lists = vec!["b:digest".to_string(), format!("b:l{i}")];
            for (c, mut f) in [("Junk", junk), ("INBOX", inbox), ("Lists", lists)] {
                f.sort();
                m.add(c, &f, 1);
            }
        }
        // Many weak words and one strong word of the inbox: naive Bayes
        // adds the weak votes up and says junk; the chi-squared indicator
        // hears only the strong word: the inbox, as sure as it is.
        let mut feats: Vec<String> = weak.iter().map(|w| w.to_string()).collect();
        feats.push("b:meeting".into());
        feats.sort();
        assert_eq!(m.predict(&feats).unwrap().class, "Junk");
        let chi = m.indicator(&feats, "Junk").unwrap();
        assert!(chi < 0.5 - UNSURE, "{chi}");
        let p = m.predict_junk(&feats, "Junk").unwrap();
        assert_eq!(p.class, "INBOX", "{p:?}");
        // The rest of the probability goes to the other folders as naive
        // Bayes weighs them: the inbox (Lists holds none of the words).
        assert!((p.confidence - (1.0 - chi)).abs() < 1e-6, "{p:?} {chi}");
        // A strong junk word: junk, as sure as the indicator.
        let spam = vec!["b:viagra".to_string()];
        let p = m.predict_junk(&spam, "Junk").unwrap();
        assert_eq!(p.class, "Junk");
        assert_eq!(p.confidence, m.indicator(&spam, "Junk").unwrap());
        // Only weak words: the indicator is unsure, naive Bayes decides.
        let only_weak: Vec<String> = weak.iter().map(|w| w.to_string()).collect();
        assert_eq!(m.indicator(&only_weak, "Junk"), Some(0.5));
        assert_eq!(m.predict_junk(&only_weak, "Junk"), m.predict(&only_weak));
        // Without a junk folder it is naive Bayes.
        assert_eq!(m.predict_junk(&feats, "Spam"), m.predict(&feats));
    }

    #[test]
    fn header_tokens_as_spamassassin_reads_them() {
        let raw =
            "From: \"Cheap Meds\" <x@mail.pills.example.com>\r\nTo: a@b.example, c@d.example\r\n\
                   Return-Path: <bounce@bulk.example.net>\r\nReply-To: orders@pills.example.org\r\n\
                   Message-ID: <123@mx.sender.example>\r\nX-Mailer: Mass Mailer 5.0\r\n\
                   Content-Type: text/html; charset=us-ascii\r\nSubject: hi\r\n\r\nbody\r\n";
        let f = features(&Email::parse(raw.as_bytes()).unwrap());
        for want in [
            "fn:cheap",
            "fn:meds",
            "rp:example.net",
            "rt:example.org",
            "mid:sender.example",
            "xm:mass",
            "xm:mailer",
            "ct:text",
            "ct:html",
            "to:2",
        ] {
            assert!(f.iter().any(|x| x == want), "{want} missing from {f:?}");
        }
    }
}
