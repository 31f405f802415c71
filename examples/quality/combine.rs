//! Ways of combining the classifier's counts, tried on the validation
//! split beside the shipped `Model::predict`: SpamAssassin's chi-squared
//! (Fisher) combining with its constants, and a protection of senders the
//! user keeps out of Junk. Measured only: the one that ships is in
//! `src/learn`.

use mailproc::learn::Model;

pub use mailproc::learn::Combine;

/// SpamAssassin's `Bayes::CombineChi` constants, as the service uses them.
pub const SA: Combine = Combine::SPAMASSASSIN;

/// The chi-squared indicator that a message belongs to `class`, with the
/// variant's constants: the service's own function (`src/learn/chi.rs`).
pub fn chi(m: &Model, feats: &[String], class: &str, c: Combine) -> Option<f64> {
    m.indicator_by(feats, class, c)
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
