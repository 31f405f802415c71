//! The account worker's side of the learned classifier: deciding with it,
//! and learning from what was decided (see `crate::learn`).

use std::collections::HashMap;
use std::sync::Arc;

use super::session::Folders;
use super::Runner;
use crate::actions::{Action, ActionKind};
use crate::classify::Classification;
use crate::config::AccountConfig;
use crate::learn::PATH;
use crate::store::{Outcome, Status};

use super::state::Item;

/// Corrections shown to the model as examples.
const FEW_SHOT: u32 = 5;

/// One message to learn: its class (folder), features, +1 or -1.
pub(super) type Example = (String, Vec<String>, i64);

/// What a junk verdict that took a filing rule's place
/// (`learned.spam_first`) says in its reasoning, after which rule. The
/// reasoning is journalled with the decision, so a decision read back from
/// the journal is judged as it was made.
const BEFORE_RULE: &str = ", before the filing rule ";

/// `guess`, a junk verdict at least `learned.spam_first` sure, in the
/// place of the filing rule `rule`, saying so.
pub(super) fn before_rule(guess: &Classification, rule: &Classification) -> Classification {
    let name = rule.model.strip_prefix("rules:").unwrap_or(&rule.model);
    Classification {
        reasoning: format!(
            "{}{BEFORE_RULE}{name:?} (learned.spam_first)",
            guess.reasoning,
            name = crate::shown::quoted(name)
        ),
        ..guess.clone()
    }
}

/// Whether a decision is the classifier's junk verdict in a filing rule's
/// place: sure by `learned.spam_first`, whatever `spam_confidence` asks of
/// its other junk verdicts.
fn took_rules_place(c: &Classification) -> bool {
    c.model == PATH && c.reasoning.contains(BEFORE_RULE)
}

/// Whether a decision is learned as it is made (see [`Runner::example`]):
/// acted on, by a rule, or by the model at least `min` sure (or saying
/// nothing of it); not the classifier's own (that would only repeat its
/// mistakes), nor mail left undecided, nor an undo or a correction's row.
fn learned_as_made(status: Status, model: &str, confidence: Option<f64>, min: f64) -> bool {
    status == Status::Ok
        && ![PATH, "none", "undo", "correction"].contains(&model)
        && confidence.is_none_or(|c| c >= min)
}

/// Whether `a` puts the message in the junk folder `junk`: `spam`, or a
/// move there.
fn to_junk(a: &Action, junk: &str) -> bool {
    matches!(a, Action::Move { folder } if folder == junk) || *a == Action::Spam
}

/// Whether the classifier's decision `c` is sure enough to act on: at
/// least `min_confidence`, and for the junk folder `spam_confidence` when
/// set, unless it took a filing rule's place (sure by `spam_first`). The
/// one bar, for a decision made now and one read back from the journal.
pub(super) fn sure(
    c: &Classification,
    min_confidence: f64,
    spam_confidence: Option<f64>,
    junk: &str,
) -> bool {
    if took_rules_place(c) {
        return true;
    }
    let min = match spam_confidence {
        Some(t) if c.actions.iter().any(|a| to_junk(a, junk)) => t,
        _ => min_confidence,
    };
    c.confidence.is_some_and(|p| p >= min)
}

impl Runner {
    /// Loads the stored classifier when it is new to this worker (first
    /// use, or a training run replaced it). A failing store leaves the
    /// model in hand.
    pub(super) fn refresh_learner(&mut self) {
        if !self.w.account.learned.enabled {
            return;
        }
        let generation = match self.w.store.learn_state(self.name()) {
            Ok(st) => st.generation,
            Err(e) => {
                log::warn!("{}: {e}", self.name());
                return;
            }
        };
        if self.learner_generation == Some(generation) {
            return;
        }
        // Bounded before it is loaded (see `Store::learn_bound`).
        if let Err(e) = self.w.store.learn_bound(self.name()) {
            log::warn!("{}: {e}", self.name());
        }
        let stored = self.w.store.learn_counts(self.name()).and_then(|counts| {
            let mut m = crate::learn::Model::from_counts(counts);
            m.shots = self.w.store.learn_shots(self.name())?;
            Ok(m)
        });
        match stored {
            Ok(model) => {
                self.learner = model;
                self.learner_generation = Some(generation);
                log::info!(
                    "{}: learned classifier loaded: {} message(s) in {} folder(s)",
                    self.name(),
                    self.learner.docs(),
                    self.learner.classes.len()
                );
            }
            Err(e) => log::warn!("{}: {e}", self.name()),
        }
    }

    /// The classifier's decision for a message of `mailbox`, whatever its
    /// confidence; `None` when it cannot decide (too little learned) or
    /// its folder is not one this account may move to.
    pub(super) fn learned(&self, mailbox: &str, feats: &[String]) -> Option<Classification> {
        let p = self.learner.predict_junk(feats, &self.junk)?;
        let a = &self.w.account;
        let actions = if p.class == mailbox {
            // Keeping it is a `noop`, recorded and counted as a rule's or a
            // model's is (an audit: `[]` here made the chart and
            // `actions_total{action="noop"}` read 0 where
            // `actionType=noop` found these).
            if a.allows(ActionKind::Noop) {
                vec![Action::Noop]
            } else {
                Vec::new()
            }
        } else if p.class == self.junk && a.allows(ActionKind::Spam) {
            // The junk folder (SPECIAL-USE, or folders.junk) is `spam`,
            // whatever it is called and whether or not moves may go there.
            vec![Action::Spam]
        } else if a.allows(ActionKind::Move)
            && !a.folders.watch.contains(&p.class)
            && (a.folders.allowed.is_empty() || a.folders.allowed.contains(&p.class))
        {
            vec![Action::Move {
                folder: p.class.clone(),
            }]
        } else {
            return None;
        };
        Some(Classification {
            actions,
            reasoning: format!(
                "learned from the account's folders: {} ({:.0} %)",
                p.class,
                p.confidence * 100.0
            ),
            model: PATH.to_string(),
            confidence: Some(p.confidence),
        })
    }

    /// The examples of the user's folders nearest to a message, for the
    /// model (`learned.enabled` only: its features are there then).
    pub(super) fn shots_for(&self, it: &Item) -> Vec<crate::learn::Shot> {
        match &it.seen.features {
            Some(f) if self.w.account.learned.enabled => self
                .learner
                .shots
                .nearest(f, crate::learn::SHOTS_PER_MESSAGE),
            _ => Vec::new(),
        }
    }

    /// Whether the classifier's decision `guess` goes before the rule's:
    /// with `learned.spam_first`, a verdict at least that sure that the
    /// message belongs in the junk folder beats a rule that would file it
    /// into another folder. A rule that says spam, or only flags or
    /// marks, keeps its place.
    pub(super) fn spam_first(
        &self,
        guess: Option<&Classification>,
        rule: &Classification,
        junk: &str,
    ) -> bool {
        let (Some(t), Some(g)) = (self.w.account.learned.spam_first, guess) else {
            return false;
        };
        // The junk folder is `spam` to the classifier (see `learned`), or a
        // move there where spam is not allowed.
        let files = rule
            .actions
            .iter()
            .any(|a| matches!(a, Action::Move { .. }) && !to_junk(a, junk))
            && !rule.actions.contains(&Action::Spam);
        files && g.confidence.is_some_and(|c| c >= t) && g.actions.iter().any(|a| to_junk(a, junk))
    }

    /// Whether a learned decision is sure enough to act on ([`sure`], with
    /// the account's settings).
    pub(super) fn learned_sure(&self, c: &Classification, junk: &str) -> bool {
        let l = &self.w.account.learned;
        sure(c, l.min_confidence, l.spam_confidence, junk)
    }

    /// What a recorded group teaches: each message decided by a rule, or
    /// by the model with at least `learned.min_confidence` (or no stated
    /// confidence), and acted on, under the folder it ended in. The
    /// classifier's own decisions are not learned again (that would only
    /// repeat its mistakes).
    pub(super) fn examples(
        &self,
        items: &[Item],
        outcomes: &[Option<Outcome>],
        failed: &HashMap<u32, String>,
        folders: &Folders,
        mailbox: &str,
    ) -> Vec<Example> {
        items
            .iter()
            .zip(outcomes)
            .filter(|(it, _)| !failed.contains_key(&it.meta.uid))
            .filter_map(|(it, o)| self.example(it, o.as_ref()?, folders, mailbox))
            .collect()
    }

    /// What one acted-on message teaches (see [`Runner::examples`]), if
    /// anything.
    pub(super) fn example(
        &self,
        it: &Item,
        o: &Outcome,
        folders: &Folders,
        mailbox: &str,
    ) -> Option<Example> {
        if !self.w.account.learned.enabled {
            return None;
        }
        let f = it.seen.features.as_ref()?;
        let min = self.w.account.learned.min_confidence;
        if it.is_replay() || !learned_as_made(o.status, &o.model, o.confidence, min) {
            return None;
        }
        Some((class_of(&o.actions, folders, mailbox)?, f.clone(), 1))
    }

    /// Learns examples of mail as it was decided: in the classifier in
    /// hand and in the store.
    pub(super) fn learn(&mut self, examples: Vec<Example>) {
        debug_assert!(examples.iter().all(|e| e.2 > 0));
        self.add_examples(examples, 0);
    }

    /// Takes back examples learned too early (a held message whose move
    /// the server then refused, see `held`): `examples` as they were
    /// learned, with -1. Not corrections: no one moved anything.
    pub(super) fn unlearn(&mut self, examples: Vec<Example>) {
        debug_assert!(examples.iter().all(|e| e.2 < 0));
        self.add_examples(examples, 0);
    }

    fn add_examples(&mut self, examples: Vec<Example>, corrections: i64) {
        if examples.is_empty() {
            return;
        }
        let rows: Vec<(&str, &[String], i64)> = examples
            .iter()
            .map(|(c, f, s)| (c.as_str(), f.as_slice(), *s))
            .collect();
        match self
            .w
            .store
            .learn_add(self.name(), &rows, corrections, false)
        {
            Ok(()) => {
                for (c, f, s) in &examples {
                    self.learner.add(c, f, *s);
                }
            }
            // The example is lost, not the message: it was recorded.
            Err(e) => log::warn!("{}: {e}", self.name()),
        }
    }

    /// A person moved a message from folder `from` to `to` (Move to…, an
    /// undo, or their own mail client): counted in
    /// `mailproc_corrections_total`, and with `learned.enabled` and its
    /// features known, learned as a correction: given to `to`, and taken
    /// from `from` when it was `counted` there ([`Runner::counted_in`],
    /// asked before the move's record changes the entry). Returns whether
    /// it was learned.
    pub(super) fn corrected(
        &mut self,
        counted: bool,
        feats: Option<Vec<String>>,
        from: &str,
        to: &str,
    ) -> bool {
        self.w
            .metrics
            .corrections
            .with_label_values(&[self.name()])
            .inc();
        match feats {
            Some(f) if self.w.account.learned.enabled => {
                let mut examples = vec![(to.to_string(), f.clone(), 1)];
                if counted {
                    examples.insert(0, (from.to_string(), f, -1));
                }
                self.add_examples(examples, 1);
                true
            }
            _ => false,
        }
    }

    /// Whether the message of entry `id` is among the classifier's
    /// counts of `folder`: learned there as it was decided (see
    /// [`Runner::example`]: not the classifier's own decisions, not mail
    /// left undecided or under `min_confidence`), put there by a person
    /// (a correction learned it), or there when the latest training read
    /// the folders. A correction took every message from the folder it
    /// left, and so took other messages' evidence for mail never counted
    /// there: an operator going through review mail with "Move to…" wore
    /// the INBOX class away (an audit). A store that cannot tell answers
    /// yes, as before. Asked before the move's record (`record_move_to`,
    /// `record_undo`, `record_correction`) rewrites the entry: after it,
    /// the entry names the folder it went to (the regression audit found
    /// "Move to…" never taking anything back).
    pub(super) fn counted_in(&self, id: i64, folder: &str) -> bool {
        let e = match self.w.store.activity_entry(id) {
            Ok(Some(e)) => e,
            Ok(None) => return false,
            Err(e) => {
                log::warn!("{}: {e}", self.name());
                return true;
            }
        };
        let trained = self
            .w
            .store
            .learn_state(self.name())
            .ok()
            .and_then(|st| st.trained_at);
        if trained.is_some_and(|t| t > e.processed_at) {
            return true;
        }
        if e.corrected_to.as_deref() == Some(folder)
            || (e.undone_at.is_some() && e.mailbox == folder)
        {
            return true;
        }
        let min = self.w.account.learned.min_confidence;
        learned_as_made(e.status, &e.model, e.confidence, min)
            && e.dest_folder.as_deref().unwrap_or(&e.mailbox) == folder
    }

    /// The account as the model sees it: with `learned.enabled`, the
    /// latest corrections of the account (up to [`FEW_SHOT`]) are added to
    /// its instructions as examples. Only the sender's address and the
    /// words of the subject (no punctuation, cut short) are quoted: they
    /// are written by strangers and go into the instructions.
    pub(super) fn prompt_account(&self, folders: &super::session::Folders) -> Arc<AccountConfig> {
        // What the model may do (`model_actions`): without `spam`, not the
        // junk folder the server marks either (an audit moved mail to a
        // `\Junk`-marked `Werbung` by a model without `spam`), nor any
        // other it marks (an audit's `Bulk` beside `folders.junk: Junk`);
        // without `trash`, no trash folder alike.
        let a = &{
            use crate::actions::ActionKind::{Spam, Trash};
            let mut m = self.w.account.for_model();
            m.keep_from_model(&folders.junk, Spam);
            for marked in &folders.marked_junk {
                m.keep_from_model(marked, Spam);
            }
            m.keep_from_model(&folders.trash, Trash);
            for marked in &folders.marked_trash {
                m.keep_from_model(marked, Trash);
            }
            Arc::new(m)
        };
        if !a.learned.enabled {
            return a.clone();
        }
        let list = match self.w.store.latest_corrections(self.name(), FEW_SHOT) {
            Ok(l) if !l.is_empty() => l,
            Ok(_) => return a.clone(),
            Err(e) => {
                log::warn!("{}: {e}", self.name());
                return a.clone();
            }
        };
        let mut lines = Vec::new();
        for (from, subject, folder) in list {
            let from: String = from
                .chars()
                .filter(|c| c.is_alphanumeric() || "@.-_+".contains(*c))
                .take(80)
                .collect();
            let words: Vec<&str> = subject
                .split(|c: char| !c.is_alphanumeric())
                .filter(|w| !w.is_empty())
                .collect();
            let subject = crate::classify::truncate(&words.join(" "), 60).to_string();
            lines.push(format!(
                "- from {from}, subject words \"{subject}\": the user put it in {folder:?}",
                folder = crate::shown::quoted(&folder)
            ));
        }
        let mut c = (**a).clone();
        c.prompt = Some(format!(
            "{}\n\nThe user corrected these recent decisions; sort similar mail the same way:\n{}",
            a.prompt
                .as_deref()
                .unwrap_or(crate::classify::DEFAULT_INSTRUCTIONS)
                .trim(),
            lines.join("\n")
        ));
        Arc::new(c)
    }
}

/// The class a message acted on with `actions` ends in, its folder: the
/// last move's, the junk folder for `spam`, `mailbox` when nothing moves
/// it; none when it goes to the trash.
pub(super) fn class_of(actions: &[Action], folders: &Folders, mailbox: &str) -> Option<String> {
    let mut class = Some(mailbox.to_string());
    for a in actions {
        match a {
            Action::Move { folder } => class = Some(folder.clone()),
            Action::Spam => class = Some(folders.junk.clone()),
            Action::Trash => class = None,
            _ => {}
        }
    }
    class
}
