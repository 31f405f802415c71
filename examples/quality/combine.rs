//! Ways of combining the classifier's counts, tried on the validation
//! split beside the shipped `Model::predict`: SpamAssassin's chi-squared
//! (Fisher) combining with its constants, and a protection of senders the
//! user keeps out of Junk. Measured only: the one that ships is in
//! `src/learn`.

use mailproc::learn::Model;

/// How a variant combines the features' votes.
#[derive(Clone, Copy, Debug)]
pub struct Combine {
    /// Robinson's strength `s` and assumed probability `x`.
    pub s: f64,
    pub x: f64,
    /// A feature whose probability is closer than this to 0.5 does not vote.
    pub min_strength: f64,
    /// At most this many features vote.
    pub top: usize,
}

/// SpamAssassin's `Bayes::CombineChi` constants.
pub const SA: Combine = Combine {
    s: 0.160,
    x: 0.538,
    min_strength: 0.346,
    top: 150,
};

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

/// The chi-squared indicator that a message belongs to `class` rather
/// than the others, 0 to 1 (0.5: no evidence), for a model with two or
/// more classes; `None` when `class` or another class is missing.
pub fn chi(m: &Model, feats: &[String], class: &str, c: Combine) -> Option<f64> {
    let me = m.classes.get(class).filter(|k| k.docs > 0)?;
    let others: Vec<_> = m
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
        let b: u64 = others
            .iter()
            .map(|k| k.tokens.get(f).copied().unwrap_or(0))
            .sum();
        let n = (a + b) as f64;
        if n == 0.0 {
            continue;
        }
        let ra = a as f64 / me.docs as f64;
        let rb = others
            .iter()
            .map(|k| k.tokens.get(f).copied().unwrap_or(0) as f64 / k.docs as f64)
            .sum::<f64>()
            / others.len() as f64;
        let p = ra / (ra + rb);
        let p = (c.s * c.x + n * p) / (c.s + n);
        if (p - 0.5).abs() >= c.min_strength {
            ps.push(p);
        }
    }
    ps.sort_by(|a, b| (b - 0.5).abs().total_cmp(&(a - 0.5).abs()));
    ps.truncate(c.top);
    if ps.is_empty() {
        return Some(0.5);
    }
    let n = ps.len();
    let ln_s: f64 = ps.iter().map(|p| (1.0 - p).max(1e-300).ln()).sum();
    let ln_h: f64 = ps.iter().map(|p| p.max(1e-300).ln()).sum();
    let s = 1.0 - chi2q(-2.0 * ln_s, 2 * n);
    let h = 1.0 - chi2q(-2.0 * ln_h, 2 * n);
    Some((s - h + 1.0) / 2.0)
}

/// The sender's domain share: messages of the domain in `junk` and in the
/// other classes (from the `dom:` feature's counts).
pub fn sender_counts(m: &Model, feats: &[String], junk: &str) -> (u64, u64) {
    let Some(dom) = feats.iter().find(|f| f.starts_with("dom:")) else {
        return (0, 0);
    };
    let mut j = 0;
    let mut o = 0;
    for (name, k) in &m.classes {
        let c = k.tokens.get(dom).copied().unwrap_or(0);
        if name == junk {
            j += c;
        } else {
            o += c;
        }
    }
    (j, o)
}
