//! The junk cut-offs chosen with less luck than one validation split
//! gives: three splits of the held-out split's shape (fold 0 just before
//! it, folds 1 and 2 before that; each fitted on the training split
//! without itself), with SpamAssassin with Bayes checked on each
//! (`SA_DIR/val{0,1,2}.tsv`, as scripts/quality.sh writes them). A
//! setting is the one sending the fewest ham to Junk on the 1,500 of those
//! at least as right as SpamAssassin there (else the most right sending no
//! more ham than it); the held-out split is then measured once.
//!
//! Used for the demo's `learned.spam_first` and `learned.spam_confidence`
//! (`choose_shipped`), and by the shape judge (`shape.rs`), which adds a
//! second model's log-odds to the classifier's.
//!
//! What the hybrid sends to Junk is decided by the rules and the
//! classifier alone when the model may not call spam (the demo's
//! `model_actions: [move, noop]`, checked in `spam::validate`): so no
//! model is asked here.

use std::cmp::Reverse;

use mailproc::classify::{Classification, Rules};
use mailproc::learn::Model;

use crate::corpus::{self, Msg};
use crate::score::{class_of, files, junk, pct, read_sa, train, SpamScore};

pub const FOLDS: usize = 3;

/// What the hybrid needs of one message: truly spam, what the demo's
/// rules did with it, the classifier's junk probability and a second
/// judge's (0.5, no evidence, where there is none).
#[derive(Clone, Copy)]
pub struct Seen {
    pub spam: bool,
    pub rule: Rule,
    pub classifier: f64,
    pub shape: f64,
}

#[derive(Clone, Copy, PartialEq)]
pub enum Rule {
    None,
    Junk,
    Files,
    Keeps,
}

fn rule_of(c: Option<&Classification>) -> Rule {
    match c {
        None => Rule::None,
        Some(c) if class_of(c) == "Junk" => Rule::Junk,
        Some(c) if files(c) => Rule::Files,
        Some(_) => Rule::Keeps,
    }
}

/// What the rules and `model` say of each of `msgs`.
pub fn seen(rules: &Rules, msgs: &[Msg], model: &Model) -> Vec<Seen> {
    msgs.iter()
        .map(|m| Seen {
            spam: m.spam(),
            rule: rule_of(rules.classify(&m.email).as_ref()),
            classifier: junk(model, m),
            shape: 0.5,
        })
        .collect()
}

pub fn logit(p: f64) -> f64 {
    let p = p.clamp(1e-6, 1.0 - 1e-6);
    (p / (1.0 - p)).ln()
}

/// A setting: the second judge's weight, the cut-off on the summed
/// log-odds for mail no rule took, and for mail a rule files.
#[derive(Clone, Copy)]
pub struct Setting {
    pub weight: f64,
    pub cut: f64,
    pub filed_cut: f64,
}

impl Setting {
    /// The classifier alone, as the service's knobs set it: junk at
    /// `spam_confidence` when no rule took the message, before a filing
    /// rule at `spam_first` (never when off).
    pub fn knobs(first: Option<f64>, spam: f64) -> Setting {
        Setting {
            weight: 0.0,
            cut: logit(spam),
            filed_cut: first.map_or(f64::INFINITY, logit),
        }
    }
}

/// Right, ham in Junk, spam caught.
pub fn judge(seen: &[Seen], s: Setting) -> (usize, usize, usize) {
    let (mut right, mut ham, mut caught) = (0, 0, 0);
    for m in seen {
        let z = logit(m.classifier) + s.weight * logit(m.shape);
        let junk = match m.rule {
            Rule::Junk => true,
            Rule::Files => z >= s.filed_cut,
            Rule::Keeps => false,
            Rule::None => z >= s.cut,
        };
        right += usize::from(junk == m.spam);
        ham += usize::from(junk && !m.spam);
        caught += usize::from(junk && m.spam);
    }
    (right, ham, caught)
}

/// The last of `settings` with the greatest `key` of (right, ham in
/// Junk) on `folds` pooled, of those `admit` lets through.
fn best_by<K: Ord>(
    folds: &[Vec<Seen>],
    settings: &[Setting],
    admit: impl Fn(usize, usize) -> bool,
    key: impl Fn(usize, usize) -> K,
) -> Option<usize> {
    let pooled: Vec<Seen> = folds.concat();
    let mut best: Option<(K, usize)> = None;
    for (i, &s) in settings.iter().enumerate() {
        let (right, ham, _) = judge(&pooled, s);
        if !admit(right, ham) {
            continue;
        }
        let k = key(right, ham);
        if best.as_ref().is_none_or(|(b, _)| k >= *b) {
            best = Some((k, i));
        }
    }
    best.map(|(_, i)| i)
}

/// Which of `settings` is the most right on `folds` pooled with at most
/// `most_ham` ham in Junk; ties: fewer ham, then the last listed.
pub fn choose(folds: &[Vec<Seen>], settings: &[Setting], most_ham: usize) -> Option<usize> {
    best_by(
        folds,
        settings,
        |_, ham| ham <= most_ham,
        |right, ham| (right, Reverse(ham)),
    )
}

/// Which of `settings` sends the fewest ham to Junk on `folds` pooled
/// while at least `least_right` right; ties: more right, then the last
/// listed.
pub fn choose_safest(
    folds: &[Vec<Seen>],
    settings: &[Setting],
    least_right: usize,
) -> Option<usize> {
    best_by(
        folds,
        settings,
        |right, _| right >= least_right,
        |right, ham| (Reverse(ham), right),
    )
}

pub fn cell(r: (usize, usize, usize), n: usize, caught: bool) -> String {
    if caught {
        format!("{}, {}, {}", pct(r.0, n), r.1, r.2)
    } else {
        format!("{}, {}", pct(r.0, n), r.1)
    }
}

/// The three validation splits: what the rules and each split's
/// classifier (fitted without it) say, and SpamAssassin with Bayes on it.
pub struct Folds {
    pub splits: Vec<corpus::SpamSplit>,
    pub seen: Vec<Vec<Seen>>,
    pub sa: Vec<SpamScore>,
    /// SpamAssassin's ham in Junk over the three.
    pub sa_ham: usize,
    /// SpamAssassin's messages called right over the three.
    pub sa_right: usize,
}

impl Folds {
    pub fn read(data: &str, rules: &Rules, sa_dir: &str) -> Folds {
        let splits: Vec<corpus::SpamSplit> =
            (0..FOLDS).map(|f| corpus::spam_split_at(data, f)).collect();
        let sa: Vec<SpamScore> = splits
            .iter()
            .enumerate()
            .map(|(f, split)| {
                let verdicts = read_sa(&format!("{sa_dir}/val{f}.tsv"));
                let v = &split.validation;
                SpamScore::of(v, |i| {
                    verdicts
                        .get(&v[i].path.display().to_string())
                        .unwrap_or_else(|| {
                            panic!("SpamAssassin did not check {}", v[i].path.display())
                        })
                        .0
                })
            })
            .collect();
        let seen = splits
            .iter()
            .map(|s| seen(rules, &s.validation, &train(&s.fit).0))
            .collect();
        Folds {
            sa_ham: sa.iter().map(|r| r.false_alarm).sum(),
            sa_right: sa.iter().map(|r| r.right).sum(),
            splits,
            seen,
            sa,
        }
    }

    pub fn n(&self) -> usize {
        self.seen.iter().map(Vec::len).sum()
    }

    /// "12: 8, 4, 0": SpamAssassin's ham in Junk, pooled and each.
    pub fn sa_ham_each(&self) -> String {
        let each: Vec<String> = self.sa.iter().map(|r| r.false_alarm.to_string()).collect();
        format!("{}: {}", self.sa_ham, each.join(", "))
    }

    /// A row's cells: pooled (right, ham), then each split's.
    pub fn cells(&self, folds: &[Vec<Seen>], s: Setting) -> (String, String) {
        let each: Vec<String> = folds
            .iter()
            .map(|f| cell(judge(f, s), f.len(), false))
            .collect();
        (
            cell(judge(&folds.concat(), s), self.n(), false),
            each.join("; "),
        )
    }

    /// SpamAssassin's row: pooled, then each split.
    pub fn sa_cells(&self) -> (String, String) {
        let each: Vec<String> = self
            .sa
            .iter()
            .map(|r| cell((r.right, r.false_alarm, r.caught), r.n, false))
            .collect();
        let pooled = self.sa.iter().fold((0, 0, 0), |a, r| {
            (a.0 + r.right, a.1 + r.false_alarm, a.2 + r.caught)
        });
        (cell(pooled, self.n(), false), each.join("; "))
    }
}

/// `learned.spam_first` as tried, the most cautious last (off: a filing
/// rule always wins).
pub const FIRSTS: [Option<f64>; 8] = [
    Some(0.5),
    Some(0.6),
    Some(0.7),
    Some(0.8),
    Some(0.9),
    Some(0.95),
    Some(0.99),
    None,
];

/// `learned.spam_first` and `learned.spam_confidence` as tried, the most
/// cautious last: each of [`FIRSTS`] with `spam_confidence` from 0.5 up to
/// 0.99 by hundredths.
fn knobs(firsts: &[Option<f64>]) -> Vec<(Option<f64>, f64)> {
    firsts
        .iter()
        .flat_map(|&first| (50..=99).map(move |i| (first, f64::from(i) / 100.0)))
        .collect()
}

/// Which of `knobs` the demo ships, on `folds`: the fewest ham in Junk of
/// those at least `least_right` right (SpamAssassin's count: ham in Junk
/// is the costlier mistake, so the margin goes there); when none is that
/// right, the most right sending at most `most_ham` ham. Ties go to the
/// more cautious.
fn pick(
    folds: &[Vec<Seen>],
    knobs: &[(Option<f64>, f64)],
    least_right: usize,
    most_ham: usize,
) -> Option<(Option<f64>, f64)> {
    let settings: Vec<Setting> = knobs.iter().map(|&(f, c)| Setting::knobs(f, c)).collect();
    choose_as_shipped(folds, &settings, least_right, most_ham).map(|i| knobs[i])
}

/// Which of `settings` the demo's rule takes on `folds`: the fewest ham in
/// Junk of those at least `least_right` right, else the most right with
/// at most `most_ham` ham ([`pick`]).
pub fn choose_as_shipped(
    folds: &[Vec<Seen>],
    settings: &[Setting],
    least_right: usize,
    most_ham: usize,
) -> Option<usize> {
    choose_safest(folds, settings, least_right).or_else(|| choose(folds, settings, most_ham))
}

/// Chooses the demo's `learned.spam_first` and `learned.spam_confidence`
/// on the three splits ([`pick`]), prints how, and returns them.
pub fn choose_shipped(folds: &Folds, shipped: (Option<f64>, Option<f64>)) -> (Option<f64>, f64) {
    let show = |v: Option<f64>| v.map_or("off".into(), |v: f64| v.to_string());
    let (least_right, most_ham) = (folds.sa_right, folds.sa_ham);
    println!("### The junk cut-offs, on {FOLDS} validation splits\n");
    println!(
        "What sends a message to Junk is the rules' and the classifier's call alone (the model may not call spam): `learned.spam_first` and `learned.spam_confidence`, chosen on {FOLDS} validation splits ({} messages, each fitted without itself) as the fewest ham in Junk of the settings at least as right as SpamAssassin with Bayes there ({least_right} right; ham in Junk {}), ham in Junk being the costlier mistake; when none is, the most right sending no more ham than it. Ties go to more right, then the more cautious. Right, ham in Junk:\n",
        folds.n(),
        folds.sa_ham_each()
    );
    println!(
        "| learned.spam_first | best spam_confidence | {FOLDS} validation splits | each split |"
    );
    println!("|---|---|---|---|");
    for first in FIRSTS {
        match pick(&folds.seen, &knobs(&[first]), least_right, most_ham) {
            Some((_, spam)) => {
                let (pooled, each) = folds.cells(&folds.seen, Setting::knobs(first, spam));
                println!("| {} | {spam} | {pooled} | {each} |", show(first));
            }
            None => println!("| {} | none qualifies | | |", show(first)),
        }
    }
    let (sa_pooled, sa_each) = folds.sa_cells();
    println!("| SpamAssassin, rules + Bayes | its default threshold | {sa_pooled} | {sa_each} |");
    if let (first, Some(spam)) = shipped {
        let (pooled, each) = folds.cells(&folds.seen, Setting::knobs(first, spam));
        println!(
            "\nThe demo's setting (spam_first {}, spam_confidence {spam}): {pooled}; each split {each}.",
            show(first)
        );
    }
    let (first, spam) = pick(&folds.seen, &knobs(&FIRSTS), least_right, most_ham)
        .expect("a setting as right as SpamAssassin or within its ham in Junk");
    println!(
        "\n**Chosen on {FOLDS} validation splits**: learned.spam_first {}, learned.spam_confidence {spam}.\n",
        show(first)
    );
    (first, spam)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(spam: bool, rule: Rule, classifier: f64) -> Seen {
        Seen {
            spam,
            rule,
            classifier,
            shape: 0.5,
        }
    }

    #[test]
    fn a_rule_that_says_spam_or_keeps_decides_and_a_filing_rule_gives_way_only_at_spam_first() {
        let seen = [
            m(true, Rule::Junk, 0.01),
            m(false, Rule::Keeps, 0.999),
            m(true, Rule::Files, 0.65),
            m(false, Rule::Files, 0.55),
            m(true, Rule::None, 0.95),
            m(false, Rule::None, 0.9),
        ];
        // spam_first 0.6: the filed spam at 0.65 goes to Junk, the filed ham
        // at 0.55 does not; spam_confidence 0.92: 0.95 does, 0.9 does not.
        assert_eq!(judge(&seen, Setting::knobs(Some(0.6), 0.92)), (6, 0, 3));
        // spam_first off: a filing rule always wins.
        assert_eq!(judge(&seen, Setting::knobs(None, 0.92)), (5, 0, 2));
        // Lower cut-offs: the ham go to Junk, the kept one never does.
        assert_eq!(judge(&seen, Setting::knobs(Some(0.5), 0.5)), (4, 2, 3));
    }

    #[test]
    fn the_choice_is_the_most_right_within_the_ham_then_fewer_ham_then_the_last_listed() {
        let folds = vec![
            vec![m(true, Rule::None, 0.7), m(false, Rule::None, 0.8)],
            vec![m(true, Rule::None, 0.85), m(false, Rule::None, 0.6)],
        ];
        let at = |c: f64| Setting::knobs(None, c);
        // 0.6: 3 right, 2 ham; 0.7: 3 right, 1 ham; 0.81: 3 right (the two
        // ham kept out, 0.85 caught), 0 ham; 0.9: 2 right, 0 ham.
        let settings = [at(0.6), at(0.7), at(0.81), at(0.9)];
        assert_eq!(choose(&folds, &settings, 2), Some(2));
        assert_eq!(choose(&folds, &[at(0.6), at(0.7)], 2), Some(1), "fewer ham");
        assert_eq!(choose(&folds, &[at(0.6)], 1), None, "over the ham allowed");
        assert_eq!(
            choose(&folds, &[at(0.82), at(0.81)], 0),
            Some(1),
            "the last listed"
        );
    }

    #[test]
    fn knobs_equally_good_go_to_the_more_cautious() {
        // No filing rule, so spam_first changes nothing: the most cautious
        // (off) wins, and of spam_confidence the highest equally right.
        let folds = vec![vec![m(true, Rule::None, 0.97), m(false, Rule::None, 0.6)]];
        assert_eq!(pick(&folds, &knobs(&FIRSTS), 2, 0), Some((None, 0.97)));
        // A filing rule's spam at 0.65: spam_first 0.6 is needed, 0.5 does
        // as well, and 0.6 is the more cautious.
        let folds = vec![vec![
            m(true, Rule::Files, 0.65),
            m(false, Rule::Files, 0.55),
        ]];
        assert_eq!(pick(&folds, &knobs(&FIRSTS), 2, 0), Some((Some(0.6), 0.99)));
    }

    #[test]
    fn the_shipped_choice_is_the_fewest_ham_at_spamassassins_accuracy_else_the_most_right() {
        let folds = vec![vec![
            m(true, Rule::None, 0.7),
            m(true, Rule::None, 0.9),
            m(false, Rule::None, 0.8),
            m(false, Rule::None, 0.6),
        ]];
        let at = |c: f64| Setting::knobs(None, c);
        // 0.6: 2 right, 2 ham; 0.7: 3 right, 1 ham; 0.85: 3 right, 0 ham;
        // 0.95: 2 right, 0 ham.
        let settings = [at(0.6), at(0.7), at(0.85), at(0.95)];
        assert_eq!(choose_safest(&folds, &settings, 3), Some(2));
        assert_eq!(
            choose_safest(&folds, &settings, 2),
            Some(2),
            "equally few ham: the more right"
        );
        assert_eq!(
            choose_safest(&folds, &[at(0.85), at(0.86)], 3),
            Some(1),
            "the last listed"
        );
        assert_eq!(
            choose_safest(&folds, &[at(0.6), at(0.7)], 2),
            Some(1),
            "fewest ham first, then more right"
        );
        assert_eq!(choose_safest(&folds, &settings, 4), None);
        // None as right as asked: the most right within the ham allowed.
        let knobs = [(None, 0.6), (None, 0.7)];
        assert_eq!(pick(&folds, &knobs, 4, 2), Some((None, 0.7)));
        assert_eq!(pick(&folds, &knobs, 4, 0), None);
    }
}
