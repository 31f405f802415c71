//! Whether a message belongs in the junk folder, as SpamAssassin's Bayes
//! decides it: Robinson's probability per feature and Fisher's
//! chi-squared combining of the strongest ones (`Bayes::CombineChi`, its
//! constants). Naive Bayes's product grows sure of anything with enough
//! features; the chi-squared indicator stays near 0.5 when the evidence
//! is mixed or weak, so "unsure" is an answer of its own.

use super::Model;

/// How the features' votes are combined. The service uses
/// [`Combine::SPAMASSASSIN`]; `examples/quality` measures others.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Combine {
    /// Robinson's strength `s`: how many messages' worth of `x` a
    /// feature's probability is pulled towards.
    pub s: f64,
    /// Robinson's assumed probability of a feature seen in no message.
    pub x: f64,
    /// A feature closer than this to 0.5 does not vote.
    pub min_strength: f64,
    /// At most this many features vote, the strongest.
    pub top: usize,
}

impl Combine {
    /// SpamAssassin's `Bayes::CombineChi` constants.
    pub const SPAMASSASSIN: Combine = Combine {
        s: 0.160,
        x: 0.538,
        min_strength: 0.346,
        top: 150,
    };
}
/// Within this of 0.5 the indicator is unsure: naive Bayes decides.
pub const UNSURE: f64 = 0.1;

/// Upper tail of the chi-squared distribution with `v` (even) degrees of
/// freedom at `x2` (SpamAssassin's `chi2q`).
fn chi2q(x2: f64, v: usize) -> f64 {
    let m = x2 / 2.0;
    let mut sum = (-m).exp();
    let mut term = sum;
    for i in 1..v / 2 {
        term *= m / i as f64;
        sum += term;
    }
    sum.min(1.0)
}

impl Model {
    /// The chi-squared indicator that a message belongs to `class` rather
    /// than to any other, 0 to 1 (0.5: no evidence either way). `None`
    /// when `class` or every other class has no messages.
    pub fn indicator(&self, feats: &[String], class: &str) -> Option<f64> {
        self.indicator_by(feats, class, Combine::SPAMASSASSIN)
    }

    /// [`Model::indicator`] with other constants.
    pub fn indicator_by(&self, feats: &[String], class: &str, c: Combine) -> Option<f64> {
        let me = self.classes.get(class).filter(|k| k.docs > 0)?;
        let others: Vec<_> = self
            .classes
            .iter()
            .filter(|(n, k)| *n != class && k.docs > 0)
            .map(|(_, k)| k)
            .collect();
        if others.is_empty() {
            return None;
        }
        let mut ps: Vec<f64> = Vec::new();
        for f in feats {
            let a = me.tokens.get(f).copied().unwrap_or(0);
            let held: Vec<u64> = others
                .iter()
                .map(|k| k.tokens.get(f).copied().unwrap_or(0))
                .collect();
            let n = (a + held.iter().sum::<u64>()) as f64;
            if n == 0.0 {
                continue;
            }
            // The share of the class's messages holding the feature
            // against the other classes' mean share (so a big folder
            // does not outvote a small one).
            let ra = a as f64 / me.docs as f64;
            let rb = others
                .iter()
                .zip(&held)
                .map(|(k, h)| *h as f64 / k.docs as f64)
                .sum::<f64>()
                / others.len() as f64;
            let p = (c.s * c.x + n * ra / (ra + rb)) / (c.s + n);
            if (p - 0.5).abs() >= c.min_strength {
                ps.push(p);
            }
        }
        if ps.is_empty() {
            return Some(0.5);
        }
        // The strongest first; of equal ones the feature order.
        ps.sort_by(|a, b| (b - 0.5).abs().total_cmp(&(a - 0.5).abs()));
        ps.truncate(c.top);
        let n = ps.len();
        let ln_not: f64 = ps
            .iter()
            .map(|p| (1.0 - p).max(f64::MIN_POSITIVE).ln())
            .sum();
        let ln_is: f64 = ps.iter().map(|p| p.max(f64::MIN_POSITIVE).ln()).sum();
        let is = 1.0 - chi2q(-2.0 * ln_not, 2 * n);
        let not = 1.0 - chi2q(-2.0 * ln_is, 2 * n);
        Some((is - not + 1.0) / 2.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn model() -> Model {
        let mut m = Model::default();
        for i in 0..20 {
            let mut spam: Vec<String> =
                vec!["b:viagra".into(), "b:cheap".into(), format!("b:s{i}")];
            let mut ham: Vec<String> =
                vec!["b:meeting".into(), "b:patch".into(), format!("b:h{i}")];
            if i < 10 {
                // "cheap" is in half the ham too: mixed evidence.
                ham.push("b:cheap".into());
            }
            spam.sort();
            ham.sort();
            m.add("Junk", &spam, 1);
            m.add("INBOX", &ham, 1);
        }
        m
    }

    #[test]
    fn chi2q_is_the_chi_squared_tail() {
        // Two degrees of freedom: exp(-x/2).
        assert!((chi2q(2.0, 2) - (-1.0f64).exp()).abs() < 1e-12);
        assert!((chi2q(0.0, 10) - 1.0).abs() < 1e-12);
        // Four: exp(-x/2) (1 + x/2).
        assert!((chi2q(3.0, 4) - (-1.5f64).exp() * 2.5).abs() < 1e-12);
    }

    #[test]
    fn sure_on_strong_evidence_unsure_on_weak_or_mixed() {
        let m = model();
        let spam = m.indicator(&["b:viagra".into()], "Junk").unwrap();
        assert!(spam > 0.9, "{spam}");
        let ham = m
            .indicator(&["b:meeting".into(), "b:patch".into()], "Junk")
            .unwrap();
        assert!(ham < 0.1, "{ham}");
        // The indicator for the other class is the mirror image.
        let inbox = m.indicator(&["b:viagra".into()], "INBOX").unwrap();
        assert!(inbox < 0.1, "{inbox}");
        // A feature in twice as many spam as ham (20 against 10) is not
        // strong enough to vote: no evidence, exactly even.
        assert_eq!(m.indicator(&["b:cheap".into()], "Junk"), Some(0.5));
        // One strong word each way: unsure, where naive Bayes's product
        // of the same votes would still pick a side.
        let mixed = m
            .indicator(&["b:meeting".into(), "b:viagra".into()], "Junk")
            .unwrap();
        assert!((mixed - 0.5).abs() < UNSURE, "{mixed}");
        // Unknown features and unknown classes.
        assert_eq!(m.indicator(&["b:zzz".into()], "Junk"), Some(0.5));
        assert_eq!(m.indicator(&["b:viagra".into()], "Spam"), None);
    }
}
