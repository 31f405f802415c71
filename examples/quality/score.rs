//! Scoring: what a decision means (spam or a folder), and the tables'
//! figures.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use mailproc::actions::Action;
use mailproc::classify::Classification;
use mailproc::learn::{features, Model};

use crate::ask::Answer;
use crate::corpus::Msg;

pub fn pct(a: usize, b: usize) -> String {
    if b == 0 {
        "—".into()
    } else {
        format!("{:.1}%", 100.0 * a as f64 / b as f64)
    }
}

pub fn per_msg(d: Duration, n: usize) -> String {
    let s = d.as_secs_f64() / n.max(1) as f64;
    if s >= 1.0 {
        format!("{s:.2} s")
    } else if s >= 0.001 {
        format!("{:.1} ms", s * 1e3)
    } else {
        format!("{:.0} µs", s * 1e6)
    }
}

/// Whether a rule's decision files the message in a folder other than
/// Junk: the hybrid lets a sure junk verdict go before such a rule
/// (`learned.spam_first`).
pub fn files(c: &Classification) -> bool {
    c.actions
        .iter()
        .any(|a| matches!(a, Action::Move { folder } if folder != "Junk"))
        && class_of(c) != "Junk"
}

/// The folder a decision puts a message in: `Junk` for spam, the folder
/// moved to, else `INBOX` (kept).
pub fn class_of(c: &Classification) -> String {
    let mut class = "INBOX".to_string();
    for a in &c.actions {
        match a {
            Action::Spam => return "Junk".into(),
            Action::Move { folder } if folder.eq_ignore_ascii_case("junk") => return "Junk".into(),
            Action::Flag { flags } if flags.iter().any(|f| f.eq_ignore_ascii_case("$junk")) => {
                return "Junk".into()
            }
            Action::Move { folder } => class = folder.clone(),
            _ => {}
        }
    }
    class
}

/// Accuracy, spam caught, ham called spam, spam precision of a set of
/// spam/ham calls.
pub struct SpamScore {
    pub right: usize,
    pub n: usize,
    pub caught: usize,
    pub spam: usize,
    pub false_alarm: usize,
    pub ham: usize,
}

impl SpamScore {
    pub fn of(msgs: &[Msg], said: impl Fn(usize) -> bool) -> SpamScore {
        let mut s = SpamScore {
            right: 0,
            n: msgs.len(),
            caught: 0,
            spam: 0,
            false_alarm: 0,
            ham: 0,
        };
        for (i, m) in msgs.iter().enumerate() {
            let d = said(i);
            s.right += usize::from(d == m.spam());
            if m.spam() {
                s.spam += 1;
                s.caught += usize::from(d);
            } else {
                s.ham += 1;
                s.false_alarm += usize::from(d);
            }
        }
        s
    }

    pub fn row(&self, name: &str, time: &str) -> String {
        format!(
            "| {name} | {} | {} of {} ({}) | {} of {} ({}) | {time} |",
            pct(self.right, self.n),
            self.caught,
            self.spam,
            pct(self.caught, self.spam),
            self.false_alarm,
            self.ham,
            pct(self.false_alarm, self.ham)
        )
    }

    pub fn precision(&self) -> String {
        pct(self.caught, self.caught + self.false_alarm)
    }
}

/// SpamAssassin's results: path → (spam, ms).
pub fn read_sa(path: &str) -> HashMap<String, (bool, f64)> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{path}: {e}"));
    text.lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split('\t').collect();
            Some((
                f.first()?.to_string(),
                (*f.get(2)? == "1", f.get(3)?.parse().ok()?),
            ))
        })
        .collect()
}

/// The classifier's probability that `m` belongs in Junk.
pub fn junk(model: &Model, m: &Msg) -> f64 {
    crate::learned::junk_share(model.predict_junk(&features(&m.fetched), "Junk"))
}

pub fn train<'a>(msgs: impl IntoIterator<Item = &'a Msg>) -> (Model, Duration) {
    let t = Instant::now();
    let mut m = Model::default();
    for s in msgs {
        m.add(&s.class, &features(&s.fetched), 1);
    }
    (m, t.elapsed())
}

/// The model's decision as the service acts on it: none below the
/// account's `minimum_confidence` (recorded for review).
pub fn acted(a: &Answer, min: Option<f64>) -> Option<&Classification> {
    a.decision
        .as_ref()
        .filter(|c| !min.is_some_and(|m| c.confidence.is_some_and(|x| x < m)))
}
