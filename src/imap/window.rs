//! One window of a folder's new mail: its headers fetched and decided in one
//! go (journal, rules), what they decide acted on as one group, and the
//! messages left for the model fetched whole and pipelined through the pool
//! in groups, each acted on as soon as it is decided.

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::batch::{Failure, Item};
use super::commands::uid_set;
use super::headers::{Heads, HEADER_CHUNK};
use super::session::{Caps, Folders, Session};
use super::{ImapError, Runner};
use crate::classify::{Classification, ClassifyError, Email, Job};
use crate::store::{EmailMeta, KnownEmail, Outcome, Status};

/// Messages for the model fetched whole and queued together: bounds memory
/// (each body is at most `max_message_bytes`) while keeping the classifier
/// pool fed.
const MODEL_GROUP: usize = 100;
/// The most bytes of bodies one group brings (by the sizes the header
/// FETCH reported, each at most `max_message_bytes`); a larger message
/// makes a group of its own.
const MODEL_GROUP_BYTES: u64 = 32 << 20;

/// A group of messages whose model calls are queued or in flight.
struct Group {
    items: Vec<Item>,
    rx: crossbeam_channel::Receiver<(usize, Result<Classification, ClassifyError>, Duration)>,
    waiting: usize,
}

/// The window being handled: which of its messages are not recorded yet.
struct Window<'a> {
    mailbox: &'a str,
    uidvalidity: u32,
    open: BTreeSet<u32>,
    /// The window's highest UID, where the watermark goes once all is done.
    last: u32,
}

/// The decision a `pending` journal row holds.
fn journalled(k: &KnownEmail) -> Classification {
    Classification {
        actions: k.actions.clone(),
        reasoning: k.reasoning.clone(),
        model: k.model.clone(),
        confidence: k.confidence,
    }
}

impl Runner {
    fn meta(&self, mailbox: &str, uidvalidity: u32, uid: u32, e: Option<&Email>) -> EmailMeta {
        EmailMeta {
            account: self.name().to_string(),
            mailbox: mailbox.to_string(),
            uidvalidity,
            uid,
            message_id: e.map(|e| e.message_id.clone()).unwrap_or_default(),
            subject: e.map(|e| e.subject.clone()).unwrap_or_default(),
            from: e.map(|e| e.from.clone()).unwrap_or_default(),
        }
    }

    /// Handles one window of a folder's UIDs. Every header of the window
    /// comes in one FETCH (`BODY.PEEK[HEADER]`: rules read nothing else) and
    /// what the journal or the rules decide is acted on and recorded as one
    /// group. Messages left for the model are fetched whole, in groups of
    /// [`MODEL_GROUP`]; the next group is fetched, parsed and queued while the
    /// calls of the one before are in flight, and each group is acted on as
    /// soon as its last answer is in.
    ///
    /// Returns whether the whole window was handled; `false` when shutdown,
    /// a pause or a command cut it short (the rest stays above the watermark
    /// for the next pass).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn process_window(
        &mut self,
        s: &mut Session,
        caps: &Caps,
        folders: &Folders,
        mailbox: &str,
        uidvalidity: u32,
        uids: &[u32],
        known: &mut HashMap<u32, KnownEmail>,
    ) -> Result<bool, ImapError> {
        let t = Instant::now();
        let (ready, to_model) = self.triage(s, &folders.junk, mailbox, uidvalidity, uids, known)?;
        log::debug!(
            "{}: {mailbox}: window of {} UID(s): headers fetched and decided in {:?}, {} for the model",
            self.name(),
            uids.len(),
            t.elapsed(),
            to_model.len()
        );
        let mut w = Window {
            mailbox,
            uidvalidity,
            open: ready
                .iter()
                .chain(&to_model)
                .map(|it| it.meta.uid)
                .collect(),
            last: uids.iter().copied().max().unwrap_or(0),
        };
        self.finish(s, caps, folders, &mut w, ready)?;
        let mut in_flight: Option<Group> = None;
        let mut complete = true;
        let mut rest = to_model.into_iter().peekable();
        while rest.peek().is_some() {
            if self.w.handle.is_shutting_down()
                || self.paused_now()
                || !self.w.commands.is_empty()
                || !self.refiles.is_empty()
            {
                complete = false;
                break;
            }
            let next = self.next_group(&mut rest);
            let group = self.submit(s, next)?;
            if let Some(done) = in_flight.replace(group) {
                let items = self.collect(s, done);
                self.finish(s, caps, folders, &mut w, items)?;
            }
        }
        if let Some(done) = in_flight {
            let items = self.collect(s, done);
            self.finish(s, caps, folders, &mut w, items)?;
        }
        Ok(complete && w.open.is_empty())
    }

    /// The next group for the model: up to [`MODEL_GROUP`] messages and
    /// [`MODEL_GROUP_BYTES`] of bodies (at least one message).
    fn next_group(&self, rest: &mut std::iter::Peekable<std::vec::IntoIter<Item>>) -> Vec<Item> {
        let max = self.w.account.max_message_bytes as u64;
        let mut bytes = 0u64;
        let mut group = Vec::new();
        while let Some(it) = rest.peek() {
            let size = u64::from(it.size).min(max);
            if group.len() == MODEL_GROUP || (!group.is_empty() && bytes + size > MODEL_GROUP_BYTES)
            {
                break;
            }
            bytes += size;
            group.extend(rest.next());
        }
        group
    }

    /// Journals, acts on and records one decided group of a window.
    fn finish(
        &mut self,
        s: &mut Session,
        caps: &Caps,
        folders: &Folders,
        w: &mut Window<'_>,
        items: Vec<Item>,
    ) -> Result<(), ImapError> {
        if items.is_empty() {
            return Ok(());
        }
        let mut items = items;
        let t = Instant::now();
        // (What `triage` decided is journalled already; the model's answers
        // are journalled here.)
        self.journal(&mut items, &folders.junk)?;
        let outcomes = self.outcomes(&items, &folders.junk);
        // Decisions journalled, nothing done on the server yet.
        crate::failpoint::hit("before-act");
        let journalled = t.elapsed();
        let plan = self.plan(&items, &outcomes, folders);
        let super::batch::Acted {
            failed,
            finals: early,
            moved,
            moves_recorded,
        } = self.act_and_finalize(s, caps, folders, w.mailbox, &plan, &items, &outcomes)?;
        let acted = t.elapsed();
        // The watermark may pass everything of the window but what is still
        // undecided (a later group) or cancelled: those stay above it.
        for it in items.iter().filter(|it| !it.cancelled) {
            w.open.remove(&it.meta.uid);
        }
        let high = match w.open.first() {
            Some(first) => first.saturating_sub(1),
            None => w.last,
        };
        let examples = self.examples(&items, &outcomes, &failed, folders, w.mailbox);
        self.record(
            &items,
            outcomes,
            &failed,
            &early,
            (w.mailbox, w.uidvalidity, high),
        )?;
        self.record_moves(
            &items,
            &failed,
            &moved,
            &moves_recorded,
            (w.mailbox, w.uidvalidity),
        )?;
        self.learn(examples);
        log::debug!(
            "{}: {}: group of {}: journalled in {journalled:?}, acted by {acted:?}, recorded by {:?}",
            self.name(),
            w.mailbox,
            items.len(),
            t.elapsed()
        );
        Ok(())
    }

    /// Fetches the window's headers and decides what needs no model: the
    /// journalled decision of a `pending` row, a rule, the learned
    /// classifier, or nothing at all when no model is configured. Returns
    /// those, journalled, and the messages left for the model (undecided).
    ///
    /// The headers come in FETCHes of [`HEADER_CHUNK`] UIDs, each decided and
    /// journalled on a second thread while the server answers the next, so
    /// parsing and the journal overlap the server's work instead of
    /// following it.
    fn triage(
        &mut self,
        s: &mut Session,
        junk: &str,
        mailbox: &str,
        uidvalidity: u32,
        uids: &[u32],
        known: &mut HashMap<u32, KnownEmail>,
    ) -> Result<(Vec<Item>, Vec<Item>), ImapError> {
        self.refresh_learner();
        let query = self.header_query();
        if uids.len() <= HEADER_CHUNK {
            // One FETCH (new mail, mostly): nothing to overlap.
            let heads = self.fetch_heads(s, &query, uids)?;
            let (mut ready, to_model) =
                self.decide(junk, mailbox, uidvalidity, uids, &heads, known);
            self.journal(&mut ready, junk)?;
            return Ok((ready, to_model));
        }
        let this = &*self;
        std::thread::scope(|scope| {
            let (tx, rx) = crossbeam_channel::bounded::<(&[u32], Heads)>(1);
            let decider = scope.spawn(move || {
                let mut ready: Vec<Item> = Vec::with_capacity(uids.len());
                let mut to_model: Vec<Item> = Vec::new();
                for (chunk, fetched) in rx {
                    let (mut r, m) =
                        this.decide(junk, mailbox, uidvalidity, chunk, &fetched, known);
                    drop(fetched);
                    this.journal(&mut r, junk)?;
                    ready.extend(r);
                    to_model.extend(m);
                }
                Ok::<_, crate::store::StoreError>((ready, to_model))
            });
            let mut fetch_error = None;
            for chunk in uids.chunks(HEADER_CHUNK) {
                match this.fetch_heads(s, &query, chunk) {
                    Ok(fetched) => {
                        // A closed channel: the decider failed; it says why.
                        if tx.send((chunk, fetched)).is_err() {
                            break;
                        }
                    }
                    Err(e) => {
                        fetch_error = Some(e);
                        break;
                    }
                }
            }
            drop(tx);
            let decided = decider
                .join()
                .unwrap_or_else(|p| std::panic::resume_unwind(p));
            // Chunks decided before a broken session stay journalled, as
            // after a crash.
            if let Some(e) = fetch_error {
                return Err(e.into());
            }
            Ok(decided?)
        })
    }

    /// Decides the messages of one FETCH of headers (see [`Runner::triage`]).
    #[allow(clippy::too_many_arguments)]
    fn decide(
        &self,
        junk: &str,
        mailbox: &str,
        uidvalidity: u32,
        uids: &[u32],
        fetched: &Heads,
        known: &mut HashMap<u32, KnownEmail>,
    ) -> (Vec<Item>, Vec<Item>) {
        let learned = self.w.account.learned.enabled;
        // UID → (header, first part of the text, flags, size, whether the
        // header was read field by field).
        type Head<'a> = (&'a [u8], Option<&'a [u8]>, Vec<String>, u32, bool);
        let mut heads: HashMap<u32, Head<'_>> = HashMap::with_capacity(uids.len());
        for f in fetched.fetched.iter() {
            if let (Some(uid), Some(h)) = (f.uid, f.header()) {
                let flags = f
                    .flags()
                    .iter()
                    .filter(|x| !matches!(x, imap::types::Flag::Recent))
                    .map(|x| x.to_string())
                    .collect();
                let (h, long) = match fetched.long.get(&uid) {
                    Some(l) => (l.as_slice(), true),
                    None => (h, false),
                };
                heads.insert(uid, (h, f.text(), flags, f.size.unwrap_or(0), long));
            }
        }

        let mut ready: Vec<Item> = Vec::with_capacity(uids.len());
        let mut to_model: Vec<Item> = Vec::new();
        for &uid in uids {
            let k = known.remove(&uid);
            let Some((raw, text, flags, size, long)) = heads.remove(&uid) else {
                // Gone between SEARCH and FETCH, or moved by us before a crash.
                if let Some(item) = self.gone(mailbox, uidvalidity, uid, k.as_ref()) {
                    ready.push(item);
                }
                continue;
            };
            let started = Instant::now();
            // Only the fields rules read were fetched: a message with none
            // of them is not broken, just one no rule can match by them (the
            // model, which reads it whole, judges whether it parses at all).
            let email = if learned {
                super::learn_email(raw, text)
            } else {
                Email::parse_headers(raw).unwrap_or_default()
            };
            let mut item = Item::new(self.meta(mailbox, uidvalidity, uid, Some(&email)));
            item.known = k.is_some();
            item.flags = flags;
            item.size = size;
            item.header_truncated = long;
            if learned {
                item.features = Some(crate::learn::features(&email));
            }
            match k {
                Some(k) if k.status == Status::Pending => {
                    item.decision = Some(journalled(&k));
                    item.journalled = true;
                }
                _ => {
                    let guess = item
                        .features
                        .as_ref()
                        .and_then(|f| self.learned(mailbox, f));
                    // A filing rule gives way to the classifier's sure
                    // spam verdict (`learned.spam_first`).
                    let rule = self.w.rules.classify(&email).map(|c| {
                        match guess
                            .as_ref()
                            .filter(|g| self.spam_first(Some(g), &c, junk))
                        {
                            Some(g) => g.clone(),
                            None => c,
                        }
                    });
                    if let Some(c) = rule {
                        item.decision = Some(c);
                        item.duration = started.elapsed();
                    } else if let Some(c) = guess.clone().filter(|c| self.learned_sure(c, junk)) {
                        item.decision = Some(c);
                        item.duration = started.elapsed();
                    } else if self.w.provider.is_some() {
                        to_model.push(item);
                        continue;
                    } else if let Some(c) = guess {
                        // Neither sure: recorded for review (see `outcomes`).
                        item.decision = Some(c);
                        item.duration = started.elapsed();
                    } else {
                        item.decision = Some(Classification {
                            actions: Vec::new(),
                            reasoning: "no rule matched and no model is configured".into(),
                            model: "none".into(),
                            confidence: None,
                        });
                        item.duration = started.elapsed();
                    }
                }
            }
            ready.push(item);
        }
        (ready, to_model)
    }

    /// Journals the decided messages of `items` that this run will act on
    /// (not a dry run, not for review, not already journalled), noting each
    /// one's row for its final record.
    fn journal(&self, items: &mut [Item], junk: &str) -> Result<(), crate::store::StoreError> {
        let outcomes = self.outcomes(items, junk);
        let (at, journal): (Vec<usize>, Vec<(EmailMeta, Outcome)>) = items
            .iter()
            .zip(outcomes)
            .enumerate()
            .filter_map(|(i, (it, o))| {
                o.filter(|o| {
                    o.status == Status::Ok
                        && !o.actions.is_empty()
                        && !it.journalled
                        && it.row.is_none()
                })
                .map(|o| (i, (it.meta.clone(), o)))
            })
            .unzip();
        if !journal.is_empty() {
            let ids = self.w.store.record_pending(&journal)?;
            for (i, id) in at.into_iter().zip(ids) {
                items[i].row = Some(id);
            }
        }
        Ok(())
    }

    /// A message the FETCH did not return: a journalled one we moved before
    /// a restart is finished with its decision; one that was failing is
    /// given up; a new one is simply gone.
    fn gone(
        &self,
        mailbox: &str,
        uidvalidity: u32,
        uid: u32,
        k: Option<&KnownEmail>,
    ) -> Option<Item> {
        match k {
            Some(k) if k.status == Status::Pending => {
                log::info!(
                    "{}: UID {uid} was already moved before a restart; recording it",
                    self.name()
                );
                let mut item = Item::new(self.meta(mailbox, uidvalidity, uid, None));
                item.decision = Some(journalled(k));
                item.journalled = true;
                item.gone = true;
                Some(item)
            }
            Some(k) if k.status == Status::Retrying => {
                let mut item = Item::new(self.meta(mailbox, uidvalidity, uid, None));
                item.failure = Some(Failure {
                    permanent: true,
                    ..Failure::new(
                        "the message left the mailbox before it could be processed",
                        "gone",
                    )
                });
                Some(item)
            }
            _ => None,
        }
    }

    /// Fetches a group of messages whole (the model reads the body) and
    /// queues them on the classifier pool; blocks only while the pool's
    /// queue is full.
    fn submit(&mut self, s: &mut Session, mut items: Vec<Item>) -> Result<Group, ImapError> {
        let uids: Vec<u32> = items.iter().map(|it| it.meta.uid).collect();
        let max = self.w.account.max_message_bytes;
        let fetched = s.uid_fetch(uid_set(&uids), format!("(UID BODY.PEEK[]<0.{max}>)"))?;
        let mut bodies: HashMap<u32, &[u8]> = HashMap::with_capacity(uids.len());
        for f in fetched.iter() {
            if let (Some(uid), Some(body)) = (f.uid, f.body()) {
                bodies.insert(uid, body);
            }
        }
        let (reply, rx) = crossbeam_channel::unbounded();
        let mut waiting = 0;
        let provider = self.w.provider.clone();
        let account = self.prompt_account();
        for (index, it) in items.iter_mut().enumerate() {
            let email = match bodies.get(&it.meta.uid) {
                Some(raw) => Email::parse(raw),
                None => {
                    // Left the folder since its header was fetched.
                    if it.known {
                        it.failure = Some(Failure {
                            permanent: true,
                            ..Failure::new(
                                "the message left the mailbox before it could be processed",
                                "gone",
                            )
                        });
                    } else {
                        it.skipped = true;
                    }
                    continue;
                }
            };
            match (email, &provider) {
                (Some(email), Some(p)) => {
                    self.w.pool.submit(Job {
                        provider: p.clone(),
                        account: account.clone(),
                        shots: self.shots_for(it),
                        email: Arc::new(email),
                        index,
                        reply: reply.clone(),
                        requester: self.w.handle.clone(),
                    });
                    waiting += 1;
                }
                _ => {
                    it.failure = Some(Failure {
                        permanent: true,
                        ..Failure::new("the message could not be parsed as RFC 822", "parse")
                    })
                }
            }
        }
        Ok(Group { items, rx, waiting })
    }

    /// Waits for every answer of a group.
    ///
    /// A slow model must not let the session go stale while the answers
    /// come in (servers and NATs drop connections that say nothing, and a
    /// reconnect would mean asking the model again for what was not yet
    /// journalled): every `imap.idle_interval` without an answer, a NOOP
    /// keeps it in use. A NOOP that fails is not retried; the actions that
    /// follow find the broken session, after the decisions are journalled.
    fn collect(&self, s: &mut Session, g: Group) -> Vec<Item> {
        let Group {
            mut items,
            rx,
            waiting,
        } = g;
        let keepalive = self.w.account.imap.idle_interval.0;
        let mut noop = true;
        let mut answered = 0;
        while answered < waiting {
            let (i, result, took) = match rx.recv_timeout(keepalive) {
                Ok(answer) => answer,
                Err(crossbeam_channel::RecvTimeoutError::Timeout) => {
                    if noop {
                        log::debug!("{}: NOOP while the model answers", self.name());
                        if let Err(e) = s.noop() {
                            log::warn!("{}: NOOP while the model answers: {e}", self.name());
                            noop = false;
                        }
                    }
                    continue;
                }
                Err(crossbeam_channel::RecvTimeoutError::Disconnected) => break,
            };
            answered += 1;
            items[i].duration = took;
            match result {
                Ok(c) => items[i].decision = Some(c),
                Err(ClassifyError::Cancelled) => items[i].cancelled = true,
                Err(e) => items[i].failure = Some(Failure::new(e.to_string(), e.kind())),
            }
        }
        // Every message leaves its group decided, failed or cancelled: one
        // the pool never answered (it cannot happen, but a skipped message
        // is the one failure this worker must never have) is a failure.
        for it in items.iter_mut() {
            if it.decision.is_none() && it.failure.is_none() && !it.cancelled && !it.skipped {
                it.failure = Some(Failure::new(
                    "the classifier gave no answer",
                    "classify_no_answer",
                ));
            }
        }
        items
    }
}
