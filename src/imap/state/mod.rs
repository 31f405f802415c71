//! The state machine of a window of new mail, without I/O: what each
//! message is ([`Item`]: asked, decided, failed, cancelled, skipped), what
//! a decided one becomes ([`Policy`]: ok, dry run, review), which messages
//! of the window are not settled yet and so where the watermark may go
//! ([`Window`]), why a window stops early ([`Stop`]), and how the messages
//! left for the model are grouped ([`next_group`]); the model's side of a
//! window is `flow`. The account thread (`window`, `batch`, `model`) drives
//! it with IMAP, the pool and the store; the tests below drive it alone,
//! through every transition.

use std::collections::BTreeSet;
use std::time::Duration;

use crate::classify::{Classification, ClassifyError};
use crate::store::{EmailMeta, Outcome, Status};

/// Messages for the model fetched whole and queued together: bounds memory
/// (each body is at most `max_message_bytes`) while keeping the classifier
/// pool fed.
pub(super) const MODEL_GROUP: usize = 100;
/// The most bytes of bodies one group brings (by the sizes the header
/// FETCH reported, each at most `max_message_bytes`); a larger message
/// makes a group of its own.
pub(super) const MODEL_GROUP_BYTES: u64 = 32 << 20;

/// The model's answer to a message, or its failure, that a store failure
/// kept from the record: taken by the attempt after the back-off instead of
/// asking again (an answer refused for a folder not allowed was asked
/// again at every retry; the second regression audit).
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Kept {
    Answer(Classification, Duration),
    Failed(Failure),
}

/// Why a message of a batch was not finished this time.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Failure {
    pub(super) message: String,
    /// Label of `mailproc_errors_total{kind}`.
    pub(super) kind: &'static str,
    /// Retrying cannot help (the message cannot even be parsed).
    pub(super) permanent: bool,
}

impl Failure {
    pub(super) fn new(message: impl Into<String>, kind: &'static str) -> Failure {
        Failure {
            message: message.into(),
            kind,
            permanent: false,
        }
    }

    /// A failure retrying cannot mend: the message is parked at once.
    pub(super) fn permanent(message: impl Into<String>, kind: &'static str) -> Failure {
        Failure {
            permanent: true,
            ..Failure::new(message, kind)
        }
    }

    /// The message left the folder before it could be read.
    pub(super) fn gone() -> Failure {
        Failure::permanent(
            "the message left the mailbox before it could be processed",
            "gone",
        )
    }
}

/// What the header FETCH told of a message (all empty for one it did
/// not return).
#[derive(Debug, Clone, Default, PartialEq)]
pub(super) struct Seen {
    /// A row existed for it before this pass (a retry).
    pub(super) known: bool,
    /// Its flags before we acted (what undo restores).
    pub(super) flags: Vec<String>,
    /// Its size (RFC822.SIZE), which bounds the groups for the model.
    pub(super) size: u32,
    /// Its header fields passed `headers::HEADER_CAP`: rules read each
    /// field's first part only, and the record says so.
    pub(super) header_truncated: bool,
    /// Its features for the learned classifier (`learned.enabled` only).
    pub(super) features: Option<Vec<String>>,
}

/// Where a decision came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Source {
    /// Decided in this run: a rule, the learned classifier, the model, or
    /// nobody (no rule matched and no model is configured).
    Now,
    /// The journal's decision (a run stopped between deciding and
    /// recording); `gone`: the message already left the folder, so our
    /// move happened and only the record is missing.
    Journal { gone: bool },
}

/// A decided message.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Decided {
    pub(super) decision: Classification,
    pub(super) source: Source,
    /// How long deciding took (zero for the journal's decision).
    pub(super) took: Duration,
    /// This run recorded the decision (`record_decisions`) before acting:
    /// its row is finished as journalled.
    pub(super) journalled: bool,
}

/// What a message of a window is.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum State {
    /// Left for the model; no answer yet.
    Asked,
    Decided(Decided),
    /// Not finished this time: recorded with why, retried or parked.
    Failed(Failure),
    /// Shutdown began before its model call started: left for the next
    /// run, with no row and below the watermark.
    Cancelled,
    /// Gone before it could be read, with no row: nothing to record.
    Skipped,
}

/// A message of a window, from its header to its record.
#[derive(Debug, Clone)]
pub(super) struct Item {
    pub(super) meta: EmailMeta,
    pub(super) seen: Seen,
    pub(super) state: State,
}

impl Item {
    /// A message left for the model.
    pub(super) fn asked(meta: EmailMeta, seen: Seen) -> Item {
        Item {
            meta,
            seen,
            state: State::Asked,
        }
    }

    /// A message decided now (by a rule, the learned classifier, or nobody).
    pub(super) fn decided(meta: EmailMeta, seen: Seen, c: Classification, took: Duration) -> Item {
        Item {
            meta,
            seen,
            state: State::Decided(Decided {
                decision: c,
                source: Source::Now,
                took,
                journalled: false,
            }),
        }
    }

    /// A message whose decision the journal holds (see [`Source::Journal`]).
    pub(super) fn journalled(meta: EmailMeta, seen: Seen, c: Classification, gone: bool) -> Item {
        Item {
            meta,
            seen,
            state: State::Decided(Decided {
                decision: c,
                source: Source::Journal { gone },
                took: Duration::ZERO,
                journalled: false,
            }),
        }
    }

    pub(super) fn failed(meta: EmailMeta, seen: Seen, f: Failure) -> Item {
        Item {
            meta,
            seen,
            state: State::Failed(f),
        }
    }

    /// The model answered (asked only: a second answer, a bug upstream,
    /// changes nothing).
    pub(super) fn answered(&mut self, r: Result<Classification, ClassifyError>, took: Duration) {
        if self.state != State::Asked {
            log::warn!("UID {}: a second answer, ignored", self.meta.uid);
            return;
        }
        self.state = match r {
            Ok(c) => State::Decided(Decided {
                decision: c,
                source: Source::Now,
                took,
                journalled: false,
            }),
            Err(ClassifyError::Cancelled) => State::Cancelled,
            Err(e) => State::Failed(Failure::new(e.to_string(), e.kind())),
        };
    }

    /// Its body was not there when fetched: it left the folder since its
    /// header came. A retry (a row exists) is given up; a new one is
    /// simply gone.
    pub(super) fn body_missing(&mut self) {
        if self.state == State::Asked {
            self.state = if self.seen.known {
                State::Failed(Failure::gone())
            } else {
                State::Skipped
            };
        }
    }

    /// The server answered its FETCH without the body asked for (the UID
    /// came back, so it is still there): the server's failure, recorded
    /// and retried, never passed over.
    pub(super) fn body_withheld(&mut self) {
        if self.state == State::Asked {
            self.state = State::Failed(Failure::new(
                "the server answered the body FETCH without the body",
                "imap",
            ));
        }
    }

    /// Its body is not a message: retrying cannot help.
    pub(super) fn unreadable(&mut self) {
        if self.state == State::Asked {
            self.state = State::Failed(Failure::permanent(
                "the message could not be parsed as RFC 822",
                "parse",
            ));
        }
    }

    /// Its question was never answered (the classifier went away): a
    /// failure, as every message leaves its window decided, failed,
    /// cancelled or skipped.
    pub(super) fn unanswered(&mut self) {
        if self.state == State::Asked {
            self.state = State::Failed(Failure::new(
                "the classifier gave no answer",
                "classify_no_answer",
            ));
        }
    }

    /// This run recorded its decision before acting.
    pub(super) fn mark_journalled(&mut self) {
        if let State::Decided(d) = &mut self.state {
            d.journalled = true;
        }
    }

    pub(super) fn decided_state(&self) -> Option<&Decided> {
        match &self.state {
            State::Decided(d) => Some(d),
            _ => None,
        }
    }

    pub(super) fn decision(&self) -> Option<&Classification> {
        self.decided_state().map(|d| &d.decision)
    }

    pub(super) fn failure(&self) -> Option<&Failure> {
        match &self.state {
            State::Failed(f) => Some(f),
            _ => None,
        }
    }

    /// Its decision came from the journal.
    pub(super) fn is_replay(&self) -> bool {
        matches!(
            self.decided_state(),
            Some(Decided {
                source: Source::Journal { .. },
                ..
            })
        )
    }

    /// What this run made of it and has not journalled: what a store
    /// failure would otherwise throw away (see [`Kept`]).
    pub(super) fn kept(&self) -> Option<Kept> {
        match &self.state {
            State::Decided(Decided {
                decision,
                source: Source::Now,
                took,
                journalled: false,
            }) => Some(Kept::Answer(decision.clone(), *took)),
            State::Failed(f) => Some(Kept::Failed(f.clone())),
            _ => None,
        }
    }

    /// Takes what an earlier attempt made of it (see [`Kept`]) instead of
    /// an answer (asked only).
    pub(super) fn take_kept(&mut self, k: Kept) {
        match k {
            Kept::Answer(c, took) => self.answered(Ok(c), took),
            Kept::Failed(f) if self.state == State::Asked => self.state = State::Failed(f),
            Kept::Failed(_) => {}
        }
    }

    /// The journal's decision of a message that already left the folder.
    pub(super) fn gone(&self) -> bool {
        matches!(
            self.decided_state(),
            Some(Decided {
                source: Source::Journal { gone: true },
                ..
            })
        )
    }

    /// This run recorded its decision before acting.
    pub(super) fn journalled_now(&self) -> bool {
        self.decided_state().is_some_and(|d| d.journalled)
    }

    /// How long deciding took (zero unless decided now).
    pub(super) fn took(&self) -> Duration {
        self.decided_state().map_or(Duration::ZERO, |d| d.took)
    }

    /// Whether its group's record settles it, so the watermark may pass
    /// it: decided, failed (its row waits for the retry) or skipped; not
    /// a message still asked or cancelled (left for the next run).
    pub(super) fn settled(&self) -> bool {
        !matches!(self.state, State::Asked | State::Cancelled)
    }
}

/// Added to the reasoning of a message whose header fields were too long
/// to read whole (see `headers`).
pub(super) const TRUNCATED_NOTE: &str =
    " [header fields over 64 KiB: rules read the first 8 KiB of each field]";

/// What a decided message becomes, by the account's settings.
#[derive(Debug, Clone, Copy)]
pub(super) struct Policy<'a> {
    /// `dry_run`: nothing is acted on; what is sure recorded as `dry_run`,
    /// what is not as `review`.
    pub(super) dry_run: bool,
    /// `minimum_confidence`: a model's answer below it, or stating none,
    /// is left for review (the learned classifier has its own bar,
    /// `learned_min`; rules have none).
    pub(super) minimum_confidence: Option<f64>,
    /// `learned.min_confidence`: the learned classifier's own decision
    /// below it (or without a confidence) is left for review.
    pub(super) learned_min: f64,
    /// `learned.spam_confidence`: what the learned classifier's move to
    /// the junk folder needs instead of `learned_min`, when set.
    pub(super) spam_confidence: Option<f64>,
    /// The junk folder, as the user knows it.
    pub(super) junk: &'a str,
}

impl Policy<'_> {
    /// The outcome of a decided message (`None` for any other state):
    /// acted on (`ok`), a dry run, or for review.
    pub(super) fn outcome(&self, it: &Item) -> Option<Outcome> {
        let d = it.decision()?;
        let unsure = if d.model == crate::learn::PATH {
            !super::learned::sure(d, self.learned_min, self.spam_confidence, self.junk)
        } else if d.model.starts_with("rules:") {
            // The operator's own rules are sure by definition.
            false
        } else {
            // A model's answer that states no confidence has not shown it
            // reaches the bar.
            self.minimum_confidence
                .is_some_and(|m| d.confidence.is_none_or(|c| c < m))
        };
        // Unsure is `review` in a dry run too: a dry run shows what a live
        // run would do, and that one would leave the message for review
        // (an audit: a dry run to tune `minimum_confidence` recorded moves
        // at confidence 0.5 that the bar of 0.8 would hold back). Nothing
        // is set on the server for it (`Runner::plan`).
        let status = if unsure {
            Status::Review
        } else if self.dry_run {
            Status::DryRun
        } else {
            Status::Ok
        };
        let mut reasoning = d.reasoning.clone();
        if it.seen.header_truncated {
            reasoning.push_str(TRUNCATED_NOTE);
        }
        Some(Outcome {
            status,
            actions: d.actions.clone(),
            model: d.model.clone(),
            reasoning,
            confidence: d.confidence,
            ..Default::default()
        })
    }
}

/// The window being handled: which of its messages are not settled yet.
#[derive(Debug)]
pub(super) struct Window {
    open: BTreeSet<u32>,
    /// The window's highest UID, where the watermark goes once all is done.
    last: u32,
}

impl Window {
    /// A window of `uids` (the UIDs searched), of which `open` are the
    /// ones found (with a header, or a journal row): the others were
    /// expunged meanwhile, and the watermark may pass them.
    pub(super) fn new(uids: &[u32], open: impl IntoIterator<Item = u32>) -> Window {
        Window {
            open: open.into_iter().collect(),
            last: uids.iter().copied().max().unwrap_or(0),
        }
    }

    /// A group was recorded: its settled messages no longer hold the
    /// watermark back.
    pub(super) fn settle(&mut self, items: &[Item]) {
        for it in items.iter().filter(|it| it.settled()) {
            self.open.remove(&it.meta.uid);
        }
    }

    /// Where the watermark may go: below the first message not settled
    /// (a later group, one cancelled, one a stop left), or the window's
    /// last UID when all are.
    pub(super) fn watermark(&self) -> u32 {
        match self.open.first() {
            Some(first) => first.saturating_sub(1),
            None => self.last,
        }
    }

    /// Every message of the window is settled.
    pub(super) fn is_done(&self) -> bool {
        self.open.is_empty()
    }
}

/// Why a window stops before its end: what is not settled by then stays
/// above the watermark for the next pass.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Stop {
    Shutdown,
    /// The account was paused (not during a pass `process` asked for).
    Pause,
    /// A command waits (reconnect, process, ...): it is served first.
    Command,
    /// An undo waits: it is served first.
    Refile,
}

impl Stop {
    /// The reason to stop now, if any, most urgent first.
    pub(super) fn check(
        shutting_down: bool,
        paused: bool,
        command_waiting: bool,
        refile_waiting: bool,
    ) -> Option<Stop> {
        if shutting_down {
            Some(Stop::Shutdown)
        } else if paused {
            Some(Stop::Pause)
        } else if command_waiting {
            Some(Stop::Command)
        } else if refile_waiting {
            Some(Stop::Refile)
        } else {
            None
        }
    }
}

/// The next group for the model: up to [`MODEL_GROUP`] messages and
/// [`MODEL_GROUP_BYTES`] of bodies, each counted at most `max_message`
/// bytes; at least one message.
pub(super) fn next_group(
    rest: &mut std::iter::Peekable<std::vec::IntoIter<Item>>,
    max_message: u64,
) -> Vec<Item> {
    let mut bytes = 0u64;
    let mut group = Vec::new();
    while let Some(it) = rest.peek() {
        let size = u64::from(it.seen.size).min(max_message);
        if group.len() == MODEL_GROUP || (!group.is_empty() && bytes + size > MODEL_GROUP_BYTES) {
            break;
        }
        bytes += size;
        group.extend(rest.next());
    }
    group
}

#[cfg(test)]
mod tests;
