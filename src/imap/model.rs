//! The messages of a window left for the model: fetched whole in groups,
//! their questions handed to the classifier pool as its queue has room,
//! and their answers acted on and recorded as they arrive (held a moment
//! to be acted on together, see `flow::Flow`) — not when the last answer
//! of their group is in. All on the account's thread: waiting for the pool
//! and for answers is one `select`, so no thread is started per group and
//! the session stays in use while a slow model thinks.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, Select};

use super::flow::Flow;
use super::session::{Caps, Folders, Session};
use super::state::{next_group, Item, Kept, Window};
use super::window::Folder;
use super::{ImapError, Runner};
use crate::classify::{Classification, ClassifyError, Email, Job};

/// An answer of the pool: the question's index, the decision or why not,
/// and how long it took.
type Answer = (usize, Result<Classification, ClassifyError>, Duration);

/// The longest a wait for the model goes without looking at shutdown, a
/// pause, a command or an undo request (commands take effect within a
/// second).
const TICK: Duration = Duration::from_millis(200);

/// The most model answers kept across a store failure (see
/// `Runner::unrecorded_answers`): a few MB at most.
pub(super) const UNRECORDED_ANSWERS: usize = 10_000;

/// A message of the account: folder, UIDVALIDITY, UID.
pub(super) type MessageKey = (String, u32, u32);

/// A group's questions: the channel their answers come on (closed once
/// each is answered or dropped), and their indexes.
struct Asked {
    answers: Receiver<Answer>,
    indexes: Vec<usize>,
}

impl Runner {
    /// Keeps the model's answers a store failure kept from the journal,
    /// for the pass after the back-off (see `Runner::unrecorded_answers`).
    fn keep_unrecorded(&mut self, answers: Vec<(MessageKey, Kept)>) {
        for (key, answer) in answers {
            if self.unrecorded_answers.len() >= UNRECORDED_ANSWERS {
                break;
            }
            self.unrecorded_answers.insert(key, answer);
        }
    }

    /// Asks the model about `to_model` and acts on its answers as they
    /// come. Returns whether every message was asked; `false` when
    /// shutdown, a pause, a command or an undo request stopped it (the
    /// questions in flight are still answered and acted on; the others
    /// stay above the watermark for the next pass).
    ///
    /// A slow model must not let the session go stale meanwhile (servers
    /// and NATs drop connections that say nothing, and a reconnect would
    /// mean asking again for what was not journalled yet): after every
    /// `imap.idle_interval` without a command, a NOOP keeps it in use. A
    /// NOOP that fails is not retried; the actions that follow find the
    /// broken session, after the decisions are journalled.
    pub(super) fn ask_model(
        &mut self,
        s: &mut Session,
        caps: &Caps,
        folders: &Folders,
        f: Folder<'_>,
        w: &mut Window,
        to_model: Vec<Item>,
    ) -> Result<bool, ImapError> {
        let mut flow: Flow<Job> = Flow::new();
        let mut groups: Vec<Asked> = Vec::new();
        let mut rest = to_model.into_iter().peekable();
        let max_message = self.w.account.max_message_bytes as u64;
        let keepalive = self.w.account.imap.idle_interval.0;
        let mut talked = Instant::now();
        let mut noop = true;
        let mut stopped = false;
        // A queue of its own into the lane of the account's provider,
        // served in turn with other askers' (see `classify::pool`).
        let provider = self.w.account.provider.clone().unwrap_or_default();
        let queue = self.w.pool.queue(&provider, &self.w.handle);
        loop {
            if !stopped {
                if let Some(why) = self.stop_now() {
                    stopped = true;
                    let dropped = flow.stop();
                    log::debug!(
                        "{}: {}: window cut short ({why:?}): {dropped} question(s) not asked, {} in flight",
                        self.name(),
                        f.mailbox,
                        flow.unanswered_count()
                    );
                }
            }
            // Cut after the stop's grace: the answers still to come are
            // not waited for (a model may take its whole `timeout`, past
            // systemd's patience). Their messages, and those answered but
            // not acted on, stay unrecorded above the watermark, as after
            // a crash: the next start asks again.
            if stopped && self.w.handle.is_cut() {
                log::warn!(
                    "{}: {}: {} model answer(s) not waited for: the stop cut the batch",
                    self.name(),
                    f.mailbox,
                    flow.unanswered_count()
                );
                return Err(ImapError::Io(std::io::Error::other("cut by the stop")));
            }
            if !stopped && rest.peek().is_some() && flow.wants_group() {
                let group = next_group(&mut rest, max_message);
                groups.push(self.ask(s, group, folders, &mut flow)?);
                talked = Instant::now();
                continue;
            }
            if flow.due(Instant::now()) {
                let items = flow.take_ready();
                let answers: Vec<_> = items
                    .iter()
                    .filter_map(|it| {
                        let kept = it.kept()?;
                        let key = (it.meta.mailbox.clone(), it.meta.uidvalidity, it.meta.uid);
                        Some((key, kept))
                    })
                    .collect();
                if let Err(e) = self.finish(s, caps, folders, f, w, items, false) {
                    if matches!(e, ImapError::Store(_)) {
                        self.keep_unrecorded(answers);
                    }
                    return Err(e);
                }
                talked = Instant::now();
                continue;
            }
            if flow.is_idle() && (stopped || rest.peek().is_none()) {
                return Ok(!stopped);
            }
            // Wait for an answer, for room in the pool's queue, or for a
            // deadline: the answers in hand, the keepalive, the next look
            // at commands.
            let now = Instant::now();
            let mut deadline = now + TICK;
            if let Some(d) = flow.deadline() {
                deadline = deadline.min(d);
            }
            if noop {
                deadline = deadline.min(talked + keepalive);
            }
            let mut sel = Select::new();
            for g in &groups {
                sel.recv(&g.answers);
            }
            let send = flow.next_question().map(|_| sel.send(&queue));
            let event = match sel.select_deadline(deadline) {
                Ok(op) if Some(op.index()) == send => {
                    if let Some(job) = flow.handed() {
                        if let Err(e) = op.send(&queue, job) {
                            // The pool is gone (stopping): nobody will answer.
                            flow.unanswered(&[e.into_inner().index], Instant::now());
                        }
                    }
                    None
                }
                Ok(op) => {
                    let g = op.index();
                    Some((g, op.recv(&groups[g].answers)))
                }
                Err(_) => {
                    if noop && talked.elapsed() >= keepalive {
                        log::debug!("{}: NOOP while the model answers", self.name());
                        if let Err(e) = s.noop() {
                            log::warn!("{}: NOOP while the model answers: {e}", self.name());
                            noop = false;
                        }
                        talked = Instant::now();
                    }
                    None
                }
            };
            drop(sel);
            match event {
                Some((_, Ok((i, r, took)))) => flow.answered(i, r, took, Instant::now()),
                Some((g, Err(_))) => {
                    // Every question of the group is answered or dropped:
                    // any still asked never will be.
                    let done = groups.remove(g);
                    flow.unanswered(&done.indexes, Instant::now());
                }
                None => continue,
            }
            // Take what else came meanwhile.
            for g in &groups {
                for (i, r, took) in g.answers.try_iter() {
                    flow.answered(i, r, took, Instant::now());
                }
            }
        }
    }

    /// Fetches a group of messages whole (the model reads the body) and
    /// asks about each: its question waits in `flow` for the pool. A
    /// message gone meanwhile or unreadable is settled at once.
    fn ask(
        &mut self,
        s: &mut Session,
        items: Vec<Item>,
        folders: &Folders,
        flow: &mut Flow<Job>,
    ) -> Result<Asked, ImapError> {
        let uids: Vec<u32> = items.iter().map(|it| it.meta.uid).collect();
        let max = self.w.account.max_message_bytes;
        // Read as a window's headers are (see `careful`): a session lost
        // here shrinks the next pass's windows, and so its groups, down to
        // one message, parked when it ends the session again. A server
        // with the fields in its cache answered the header FETCH of a
        // message it could not read and ended every session here, for
        // good (a regression audit).
        let (mailbox, uidvalidity) = items
            .first()
            .map(|it| (it.meta.mailbox.clone(), it.meta.uidvalidity))
            .unwrap_or_default();
        let fetched = self.fetch_carefully(
            s,
            (&mailbox, uidvalidity),
            &uids,
            &format!("(UID BODY.PEEK[]<0.{max}>)"),
        )?;
        let mut bodies: HashMap<u32, &[u8]> = HashMap::with_capacity(uids.len());
        // UIDs answered for without the body asked for.
        let mut withheld = std::collections::HashSet::new();
        for f in fetched.iter() {
            match (f.uid, f.body()) {
                (Some(uid), Some(body)) => {
                    bodies.insert(uid, body);
                }
                (Some(uid), None) => {
                    withheld.insert(uid);
                }
                _ => {}
            }
        }
        // Holds at most this group's answers; its senders go with the
        // questions, so it closes once each is answered or dropped.
        let (reply, answers) = crossbeam_channel::unbounded();
        let provider = self.w.provider.clone();
        let account = self.prompt_account(folders);
        let now = Instant::now();
        let mut indexes = Vec::with_capacity(items.len());
        for mut it in items {
            let email = match bodies.get(&it.meta.uid) {
                Some(raw) => Email::parse(raw).map(|mut e| {
                    // A header padded past `max_message_bytes` leaves the
                    // parse without the fields after the cut: the ones
                    // fetched for the rules stand in (an audit found the
                    // model shown an empty From and Subject).
                    if e.subject.is_empty() {
                        e.subject.clone_from(&it.meta.subject);
                    }
                    if e.from.is_empty() {
                        e.from.clone_from(&it.meta.from);
                    }
                    e
                }),
                None if withheld.contains(&it.meta.uid) => {
                    it.body_withheld();
                    flow.settled(it, now);
                    continue;
                }
                None => {
                    // Left the folder since its header was fetched.
                    it.body_missing();
                    flow.settled(it, now);
                    continue;
                }
            };
            let key = (it.meta.mailbox.clone(), it.meta.uidvalidity, it.meta.uid);
            if let (Some(_), Some(kept)) = (&email, self.unrecorded_answers.remove(&key)) {
                // Answered before the store failed: not asked again.
                it.take_kept(kept);
                flow.settled(it, now);
                continue;
            }
            match (email, &provider) {
                (Some(email), Some(p)) => {
                    let shots = self.shots_for(&it);
                    let m = &it.meta;
                    let message = format!("{}\n{}\n{}", m.mailbox, m.uidvalidity, m.uid);
                    let job = |index| Job {
                        provider: p.clone(),
                        account: account.clone(),
                        shots,
                        email: Arc::new(email),
                        index,
                        message,
                        reply: reply.clone(),
                        requester: self.w.handle.clone(),
                    };
                    indexes.push(flow.ask(it, job));
                }
                _ => {
                    it.unreadable();
                    flow.settled(it, now);
                }
            }
        }
        Ok(Asked { answers, indexes })
    }
}
