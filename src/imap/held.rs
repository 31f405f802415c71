//! The moves of a long pass, held across its windows: a folder whose new
//! mail takes more than one window has what its rules decide moved once per
//! destination folder, when the pass ends (or when [`HELD_MAX`] messages
//! wait), instead of once per destination and window.
//!
//! On Dovecot a MOVE's expunge rewrites the source folder's index, so a
//! MOVE costs about as much for one message as for a thousand, and more the
//! larger the folder (about 150 ms on a 100,000-message one): five windows
//! of a 100,000-message backlog sent 20 of them where 4 do the same work.
//!
//! Guarantees (those of a window, kept):
//! - A held message's decision is journalled (`pending`) before it is
//!   held, so before any command changes it; its row is made final only
//!   after the server confirmed its move, as in a window.
//! - The watermark may pass a held message: its `pending` row is read back
//!   at any UID (`Store::known_emails`, like a row waiting for a retry), so
//!   a crash, a broken session or a store error before the release leaves
//!   it to the next pass, which carries out the journalled decision without
//!   deciding again (a message already moved is recorded as moved).
//! - Only rules, learned-classifier and no-model decisions of a window's
//!   first group are held, and only in a pass of more than one window: new
//!   mail, a small backlog and the model's answers are acted on in their
//!   group, as before.
//! - A held message keeps 16 bytes here (its UID and indexes into the
//!   distinct action lists and flag sets), not its record: the journal
//!   holds its names and decision, read back to announce it. A learned
//!   account keeps 4 more for each one the classifier learned when it was
//!   held; a move the server then refuses takes that example back (its
//!   features fetched again), so the retry that moves it later teaches it
//!   once, and one given up teaches nothing.
//! - Every way a pass ends but an error (its end, shutdown, a pause, a
//!   command, an undo waiting) releases what is held first.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::batch::{Confirmed, Replayed};
use super::session::{Caps, Folders, Session};
use super::state::{Item, Window};
use super::window::Folder;
use super::{ImapError, Runner};
use crate::actions::{Action, Destinations, Plan};
use crate::store::{
    EmailMeta, FailedAttempt, Final, Finished, FinishedMove, Outcome, Outcomes, Status, Watermark,
};

/// Messages held at most before they are moved, whatever the pass has
/// left: 16 bytes each here, so 1.6 MB; a folder of a million new messages
/// is moved in ten steps.
pub(super) const HELD_MAX: usize = 100_000;

/// Distinct action lists held at most; a message with another one is
/// acted on in its window (a model may word its decisions many ways).
const ACTION_LISTS_MAX: usize = 256;

/// Confirmed messages made final per write: the writer's queue holds 16,
/// so a destination of up to 160,000 messages is sent without waiting for
/// the writer, which writes while the next MOVE runs. Each waits as 64
/// bytes (`store::Finished`: its UID and shared lists), so at most 10 MB;
/// as whole records they had made the peak of a 100,000-message backlog
/// (15 MB of its 35 MB of heap, measured with heaptrack).
const FINISHED_PER_WRITE: usize = 10_000;

/// Rows read back per query to announce them.
const ANNOUNCE_PER_READ: usize = 1_000;

/// Messages whose features are fetched again per FETCH, to take back what
/// was learned of them (at most 80 KB each, see `train::learn_query`).
const UNLEARN_PER_FETCH: usize = 500;

/// One held message.
#[derive(Debug, Clone, Copy)]
struct Msg {
    uid: u32,
    /// Index in [`Held::actions`].
    actions: u32,
    /// Index in [`Held::flags`]: its flags before we acted (undo's).
    flags: u32,
    /// How long deciding took, in microseconds.
    took_us: u32,
}

/// What a pass holds of one folder.
#[derive(Debug)]
pub(super) struct Held {
    mailbox: String,
    uidvalidity: u32,
    /// The distinct action lists and flag sets, shared with the finished
    /// rows made of them.
    actions: Vec<Arc<[Action]>>,
    flags: Vec<Arc<[String]>>,
    flag_index: HashMap<Vec<String>, u32>,
    msgs: Vec<Msg>,
    /// Messages recorded behind (see [`Runner::record_behind`]), to be
    /// announced once durable: UID and how long deciding took (µs).
    behind: Vec<(u32, u32)>,
    /// Held messages the classifier learned, by UID.
    learned: Vec<u32>,
}

impl Held {
    pub(super) fn new(mailbox: &str, uidvalidity: u32) -> Held {
        Held {
            mailbox: mailbox.to_string(),
            uidvalidity,
            actions: Vec::new(),
            flags: Vec::new(),
            flag_index: HashMap::new(),
            msgs: Vec::new(),
            behind: Vec::new(),
            learned: Vec::new(),
        }
    }

    pub(super) fn len(&self) -> usize {
        self.msgs.len()
    }

    /// Holds `it` with outcome `o` when it may be: decided and journalled
    /// by this run, to be acted on (`ok`), moving somewhere, and its action
    /// list one of at most [`ACTION_LISTS_MAX`]. Returns whether it did.
    fn take(&mut self, it: &Item, o: &Outcome) -> bool {
        let moves = o
            .actions
            .iter()
            .any(|a| matches!(a, Action::Move { .. } | Action::Spam | Action::Trash));
        if !moves || o.status != Status::Ok || !it.journalled_now() || it.is_replay() {
            return false;
        }
        let actions = match self.actions.iter().position(|a| **a == *o.actions) {
            Some(i) => i,
            None if self.actions.len() < ACTION_LISTS_MAX => {
                self.actions.push(o.actions.as_slice().into());
                self.actions.len() - 1
            }
            None => return false,
        };
        let next = self.flags.len() as u32;
        let flags = *self
            .flag_index
            .entry(it.seen.flags.clone())
            .or_insert_with(|| next);
        if flags == next {
            self.flags.push(it.seen.flags.as_slice().into());
        }
        self.msgs.push(Msg {
            uid: it.meta.uid,
            actions: actions as u32,
            flags,
            took_us: u32::try_from(it.took().as_micros()).unwrap_or(u32::MAX),
        });
        true
    }

    fn key(&self, account: &str, uid: u32) -> EmailMeta {
        EmailMeta {
            account: account.to_string(),
            mailbox: self.mailbox.clone(),
            uidvalidity: self.uidvalidity,
            uid,
            ..Default::default()
        }
    }
}

impl Runner {
    /// Takes out of a window's first group (`items`, with their
    /// `outcomes`) the messages the pass holds (see [`Held::take`]); none
    /// when it holds nothing. Returns them, to be settled in the window.
    pub(super) fn hold(
        &mut self,
        items: &mut Vec<Item>,
        outcomes: &mut Vec<Option<Outcome>>,
    ) -> Vec<Item> {
        let Some(h) = self.held.as_mut() else {
            return Vec::new();
        };
        let mut kept = Vec::with_capacity(items.len());
        let mut kept_outcomes = Vec::with_capacity(items.len());
        let mut held = Vec::new();
        for (it, o) in items.drain(..).zip(outcomes.drain(..)) {
            if o.as_ref().is_some_and(|o| h.take(&it, o)) {
                held.push(it);
            } else {
                kept.push(it);
                kept_outcomes.push(o);
            }
        }
        *items = kept;
        *outcomes = kept_outcomes;
        held
    }

    /// Notes held messages (`uids`) the classifier learned as they were
    /// held, to take back if their move fails.
    pub(super) fn held_learned(&mut self, uids: &[u32]) {
        if let Some(h) = self.held.as_mut() {
            h.learned.extend_from_slice(uids);
        }
    }

    /// Takes back what the classifier learned of held messages whose move
    /// failed (`class`: UID → the class it was learned under): their
    /// features fetched again from `mailbox`, where they still are, and
    /// learned with -1.
    fn unlearn_failed(
        &mut self,
        s: &mut Session,
        mailbox: &str,
        class: HashMap<u32, String>,
    ) -> Result<(), ImapError> {
        if class.is_empty() {
            return Ok(());
        }
        let mut uids: Vec<u32> = class.keys().copied().collect();
        uids.sort_unstable();
        // A FETCH's worth at a time, taken back before the next: what is
        // held in memory stays one chunk's features, however many failed
        // (a missing folder fails every message held for it).
        let mut taken = 0;
        for part in uids.chunks(UNLEARN_PER_FETCH) {
            let fetched = s.uid_fetch(super::uid_set(part), super::train::learn_query())?;
            let mut examples = Vec::with_capacity(part.len());
            for f in fetched.iter() {
                let (Some(uid), Some(head)) = (f.uid, f.header()) else {
                    continue;
                };
                if let Some(c) = class.get(&uid) {
                    let feats = crate::learn::features(&super::learn_email(head, f.text()));
                    examples.push((c.clone(), feats, -1));
                }
            }
            taken += examples.len();
            self.unlearn(examples);
        }
        log::debug!(
            "{}: {mailbox}: {taken} example(s) of refused held moves taken back",
            self.name()
        );
        Ok(())
    }

    /// Whether a group of a pass that holds its moves has nothing left to
    /// do on the server once its moves are held (`plan` empty, nothing
    /// failed: messages left alone, dry runs): see
    /// [`Runner::record_behind`].
    pub(super) fn may_record_behind(&self, plan: &Plan, items: &[Item]) -> bool {
        self.held.is_some()
            && plan.flag_sets.is_empty()
            && plan.moves.is_empty()
            && items.iter().all(|it| it.failure().is_none())
    }

    /// Records such a group behind: its rows and then the watermark go to
    /// the journal writer, in one write (one transaction), and the window
    /// goes on to its next headers while they are written. They are
    /// announced once a later barrier has them durable
    /// ([`Runner::announce_behind`]), read back from the store. A crash
    /// before they are written leaves those messages above the watermark
    /// without a row: the next pass decides them again, and nothing was
    /// done to them.
    pub(super) fn record_behind(
        &mut self,
        items: Vec<Item>,
        outcomes: Vec<Option<Outcome>>,
        w: &mut Window,
        f: Folder<'_>,
    ) {
        w.settle(&items);
        let mut out = Outcomes {
            watermark: Some(Watermark::new(
                self.name(),
                f.mailbox,
                f.uidvalidity,
                w.watermark(),
            )),
            ..Default::default()
        };
        let Some(h) = self.held.as_mut() else { return };
        for (it, o) in items.into_iter().zip(outcomes) {
            let Some(o) = o else { continue };
            h.behind.push((
                it.meta.uid,
                u32::try_from(it.took().as_micros()).unwrap_or(u32::MAX),
            ));
            if it.journalled_now() && o.status == Status::Ok {
                let m = &it.meta;
                let row = Finished {
                    uid: m.uid,
                    actions: o.actions.into(),
                    moved: None,
                };
                out.finish(&m.account, &m.mailbox, m.uidvalidity, row);
            } else {
                out.finals.push(Final::new(it.meta, o));
            }
        }
        self.writer.outcomes(out);
    }

    /// Announces the rows recorded behind, read back from the store; only
    /// once a barrier of the writer returned without error (they are
    /// durable).
    pub(super) fn announce_behind(&mut self) -> Result<(), ImapError> {
        let Some(h) = self.held.as_mut() else {
            return Ok(());
        };
        if h.behind.is_empty() {
            return Ok(());
        }
        let mut behind = std::mem::take(&mut h.behind);
        let (mailbox, uidvalidity) = (h.mailbox.clone(), h.uidvalidity);
        behind.sort_unstable();
        let uids: Vec<u32> = behind.iter().map(|(u, _)| *u).collect();
        self.announce_recorded(&mailbox, uidvalidity, &uids, |u| {
            behind
                .binary_search_by_key(&u, |(x, _)| *x)
                .map_or(0, |i| behind[i].1)
        })
    }

    /// Announces (webhooks, metrics) the rows of `uids` of `mailbox` at
    /// `uidvalidity`, read back from the store, `took` giving how long
    /// deciding each took (µs).
    fn announce_recorded(
        &mut self,
        mailbox: &str,
        uidvalidity: u32,
        uids: &[u32],
        took: impl Fn(u32) -> u32,
    ) -> Result<(), ImapError> {
        let account = self.name().to_string();
        for part in uids.chunks(ANNOUNCE_PER_READ) {
            let rows = self
                .w
                .store
                .recorded(&account, mailbox, uidvalidity, part)?;
            for (meta, o) in rows {
                let t = Duration::from_micros(u64::from(took(meta.uid)));
                self.announce_processed(&meta, &o, t);
            }
        }
        if !uids.is_empty() {
            self.w.handle.mark_processed();
        }
        Ok(())
    }

    /// Whether the pass holds as many messages as it may.
    pub(super) fn held_full(&self) -> bool {
        self.held.as_ref().is_some_and(|h| h.len() >= held_max())
    }

    /// Moves what the pass holds, one command per destination folder (and
    /// flag set), largest first, as a window's group is acted on: each
    /// message made final once the server confirmed its move, a refused
    /// one recorded as a failed attempt (retried), then every finished one
    /// announced from its record. The pass goes on holding, from nothing.
    /// A broken session or a failed write is an error, and leaves the rest
    /// `pending` for the next pass.
    pub(super) fn release_held(
        &mut self,
        s: &mut Session,
        caps: &Caps,
        folders: &Folders,
    ) -> Result<(), ImapError> {
        let Some(h) = self.held.as_mut() else {
            return Ok(());
        };
        if h.msgs.is_empty() {
            return Ok(());
        }
        // The pass holds on from nothing (what is behind stays).
        let behind = std::mem::take(&mut h.behind);
        let fresh = Held {
            behind,
            ..Held::new(&h.mailbox, h.uidvalidity)
        };
        let mut h = std::mem::replace(h, fresh);
        let t = Instant::now();
        let mut msgs = std::mem::take(&mut h.msgs);
        msgs.sort_unstable_by_key(|m| m.uid);
        let find = |u: u32| {
            msgs.binary_search_by_key(&u, |m| m.uid)
                .ok()
                .map(|i| msgs[i])
        };
        let to = Destinations {
            junk: &folders.junk,
            trash: &folders.trash,
        };
        let mut plan = Plan::default();
        for m in &msgs {
            plan.add(m.uid, &h.actions[m.actions as usize], None, &to);
        }
        // Flags to take off again after a failed move: only without
        // UIDPLUS are they set before it.
        let before: HashMap<u32, Vec<String>> = if caps.uidplus {
            HashMap::new()
        } else {
            msgs.iter()
                .map(|m| (m.uid, h.flags[m.flags as usize].to_vec()))
                .collect()
        };
        let account = self.name().to_string();
        let writer = self.writer.clone();
        let mut finished: Vec<u32> = Vec::with_capacity(msgs.len());
        let mut confirmed = |c: Confirmed| {
            let dest_folder: Option<Arc<str>> = c.to.as_ref().map(|(f, _)| f.as_str().into());
            for part in c.uids.chunks(FINISHED_PER_WRITE) {
                let mut out = Outcomes::default();
                for &u in part {
                    let Some(m) = find(u) else { continue };
                    let row = Finished {
                        uid: u,
                        actions: h.actions[m.actions as usize].clone(),
                        moved: dest_folder.as_ref().map(|f| FinishedMove {
                            dest_folder: f.clone(),
                            dest_uid: c.to.as_ref().and_then(|(_, d)| d.get(&u).copied()),
                            flags: h.flags[m.flags as usize].clone(),
                        }),
                    };
                    out.finish(&account, &h.mailbox, h.uidvalidity, row);
                }
                writer.outcomes(out);
            }
            finished.extend(c.uids);
        };
        let replayed = Replayed::none(h.uidvalidity);
        let acted = self.act(
            s,
            caps,
            folders,
            &h.mailbox,
            &plan,
            &replayed,
            &before,
            &mut confirmed,
        );
        let written = self.writer.barrier();
        let (failed, _) = acted?;
        written?;
        self.announce_behind()?;
        let delay = self.w.account.retry_delay.0;
        // A failure is reported (log, `error` webhook) with the message's
        // names, which its journalled row holds: the pass kept only UIDs.
        let mut names: HashMap<u32, EmailMeta> = HashMap::new();
        let failed_uids: Vec<u32> = failed.keys().copied().collect();
        for part in failed_uids.chunks(ANNOUNCE_PER_READ) {
            let rows = self
                .w
                .store
                .recorded(&account, &h.mailbox, h.uidvalidity, part)?;
            names.extend(rows.into_iter().map(|(meta, _)| (meta.uid, meta)));
        }
        let failures: Vec<(FailedAttempt, &'static str)> = failed
            .into_iter()
            .map(|(u, error)| {
                (
                    FailedAttempt {
                        meta: names.remove(&u).unwrap_or_else(|| h.key(&account, u)),
                        error,
                        max_attempts: self.w.account.max_attempts,
                        retry_delay_ms: i64::try_from(delay.as_millis()).unwrap_or(i64::MAX),
                    },
                    "imap",
                )
            })
            .collect();
        let recorded = self.w.store.record_outcomes(&Outcomes {
            failures: failures.iter().map(|(f, _)| f.clone()).collect(),
            ..Default::default()
        })?;
        self.report_failures(&h.mailbox, &failures, &recorded);
        // What was learned of them when they were held is taken back: the
        // retry that moves one learns it again, once.
        h.learned.sort_unstable();
        let unlearn: HashMap<u32, String> = failed_uids
            .iter()
            .filter(|u| h.learned.binary_search(u).is_ok())
            .filter_map(|&u| {
                let m = find(u)?;
                let c =
                    super::learned::class_of(&h.actions[m.actions as usize], folders, &h.mailbox)?;
                Some((u, c))
            })
            .collect();
        self.unlearn_failed(s, &h.mailbox, unlearn)?;
        finished.sort_unstable();
        self.announce_recorded(&h.mailbox, h.uidvalidity, &finished, |u| {
            find(u).map_or(0, |m| m.took_us)
        })?;
        log::debug!(
            "{}: {}: {} held message(s) moved ({} destination(s)), {} failed, in {:?}",
            self.name(),
            h.mailbox,
            msgs.len(),
            plan.moves.len(),
            failures.len(),
            t.elapsed()
        );
        Ok(())
    }
}

/// [`HELD_MAX`], or in a debug build the failpoint `held=N` (tests reach
/// the bound with a few hundred messages).
fn held_max() -> usize {
    crate::failpoint::number("held").unwrap_or(HELD_MAX)
}
