//! One window of messages, in stages: fetch the headers and decide (journal,
//! rules), then per decided group: plan, journal, act on the server, record
//! everything in one transaction with the folder watermark and announce it.
//! Messages for the model follow in groups, pipelined through the pool.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::commands::{quote, uid_set};
use super::session::{session_fatal, Caps, Folders, Session};
use super::{ImapError, Runner};
use crate::actions::{Destinations, Plan};
use crate::classify::{Classification, ClassifyError, Email, Job};
use crate::store::{EmailMeta, FailedAttempt, KnownEmail, Outcome, Status};
use crate::webhook::Event;

/// Why a message of a batch was not finished this time.
#[derive(Debug, Clone)]
struct Failure {
    message: String,
    /// Label of `mailproc_errors_total{kind}`.
    kind: &'static str,
    /// Retrying cannot help (the message cannot even be parsed).
    permanent: bool,
}

impl Failure {
    fn new(message: impl Into<String>, kind: &'static str) -> Failure {
        Failure {
            message: message.into(),
            kind,
            permanent: false,
        }
    }
}

/// A message of a batch, from fetch to record.
struct Item {
    meta: EmailMeta,
    /// The decision (or the journalled one, for a pending row).
    decision: Option<Classification>,
    failure: Option<Failure>,
    /// Shutdown began before its model call started: left for the next run,
    /// with no row and below the watermark.
    cancelled: bool,
    duration: Duration,
    /// The decision came from the journal (a run stopped mid-batch).
    journalled: bool,
    /// The journalled message already left the folder: our move happened.
    gone: bool,
    /// A row existed for it before this pass (a retry).
    known: bool,
    /// Gone before it could be read, with no row: nothing to record.
    skipped: bool,
}

impl Item {
    fn new(meta: EmailMeta) -> Item {
        Item {
            meta,
            decision: None,
            failure: None,
            cancelled: false,
            duration: Duration::ZERO,
            journalled: false,
            gone: false,
            known: false,
            skipped: false,
        }
    }
}

/// Messages for the model fetched whole and queued together: bounds memory
/// (each body is at most `max_message_bytes`) while keeping the classifier
/// pool fed.
const MODEL_GROUP: usize = 100;

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
        let (ready, to_model) = self.triage(s, mailbox, uidvalidity, uids, known)?;
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
                || (self.w.handle.is_paused() && !self.force_pass)
                || !self.w.commands.is_empty()
            {
                complete = false;
                break;
            }
            let next: Vec<Item> = rest.by_ref().take(MODEL_GROUP).collect();
            let group = self.submit(s, next)?;
            if let Some(done) = in_flight.replace(group) {
                let items = self.collect(done);
                self.finish(s, caps, folders, &mut w, items)?;
            }
        }
        if let Some(done) = in_flight {
            let items = self.collect(done);
            self.finish(s, caps, folders, &mut w, items)?;
        }
        Ok(complete && w.open.is_empty())
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
        let outcomes = self.outcomes(&items);
        let journal: Vec<(EmailMeta, Outcome)> = items
            .iter()
            .zip(&outcomes)
            .filter_map(|(it, o)| {
                o.as_ref()
                    .filter(|o| o.status == Status::Ok && !o.actions.is_empty() && !it.journalled)
                    .map(|o| (it.meta.clone(), o.clone()))
            })
            .collect();
        let t = Instant::now();
        if !journal.is_empty() {
            self.w.store.record_pending(&journal)?;
        }
        let journalled = t.elapsed();
        let plan = self.plan(&items, &outcomes, folders);
        let (failed, early) =
            self.act_and_finalize(s, caps, folders, w.mailbox, &plan, &items, &outcomes)?;
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
        self.record(
            &items,
            outcomes,
            &failed,
            &early,
            w.mailbox,
            w.uidvalidity,
            high,
        )?;
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
    /// journalled decision of a `pending` row, a rule, or nothing at all
    /// when no model is configured. Returns those, and the messages left for
    /// the model (undecided).
    fn triage(
        &mut self,
        s: &mut Session,
        mailbox: &str,
        uidvalidity: u32,
        uids: &[u32],
        known: &mut HashMap<u32, KnownEmail>,
    ) -> Result<(Vec<Item>, Vec<Item>), ImapError> {
        let max = self.w.account.max_message_bytes;
        let fields: Vec<String> = self
            .w
            .rules
            .header_fields()
            .iter()
            .map(|f| quote(f))
            .collect();
        let fetched = s.uid_fetch(
            uid_set(uids),
            format!(
                "(UID BODY.PEEK[HEADER.FIELDS ({})]<0.{max}>)",
                fields.join(" ")
            ),
        )?;
        let mut heads: HashMap<u32, &[u8]> = HashMap::with_capacity(uids.len());
        for f in fetched.iter() {
            if let (Some(uid), Some(h)) = (f.uid, f.header()) {
                heads.insert(uid, h);
            }
        }

        let mut ready: Vec<Item> = Vec::with_capacity(uids.len());
        let mut to_model: Vec<Item> = Vec::new();
        for &uid in uids {
            let k = known.remove(&uid);
            let Some(raw) = heads.remove(&uid) else {
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
            let email = Email::parse_headers(raw).unwrap_or_default();
            let mut item = Item::new(self.meta(mailbox, uidvalidity, uid, Some(&email)));
            item.known = k.is_some();
            match k {
                Some(k) if k.status == Status::Pending => {
                    item.decision = Some(journalled(&k));
                    item.journalled = true;
                }
                _ => {
                    if let Some(c) = self.w.rules.classify(&email) {
                        item.decision = Some(c);
                        item.duration = started.elapsed();
                    } else if self.w.provider.is_some() {
                        to_model.push(item);
                        continue;
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
        Ok((ready, to_model))
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
                        account: self.w.account.clone(),
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
    fn collect(&self, g: Group) -> Vec<Item> {
        let Group {
            mut items,
            rx,
            waiting,
        } = g;
        for _ in 0..waiting {
            let Ok((i, result, took)) = rx.recv() else {
                break;
            };
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

    /// What each decided message becomes: acted on, dry run, or review.
    fn outcomes(&self, items: &[Item]) -> Vec<Option<Outcome>> {
        let dry_run = self.w.account.dry_run;
        let min_conf = self.w.account.minimum_confidence;
        items
            .iter()
            .map(|it| {
                let d = it.decision.as_ref()?;
                let st = if dry_run {
                    Status::DryRun
                } else if min_conf.is_some_and(|m| d.confidence.is_some_and(|c| c < m)) {
                    Status::Review
                } else {
                    Status::Ok
                };
                Some(Outcome {
                    status: st,
                    actions: d.actions.clone(),
                    model: d.model.clone(),
                    reasoning: d.reasoning.clone(),
                    confidence: d.confidence,
                    ..Default::default()
                })
            })
            .collect()
    }

    /// Groups what the outcomes need by flag set and by destination.
    fn plan(&self, items: &[Item], outcomes: &[Option<Outcome>], folders: &Folders) -> Plan {
        let to = Destinations {
            junk: &folders.junk,
            trash: &folders.trash,
        };
        let review_flag = self.w.account.review_flag.as_deref();
        let mut plan = Plan::default();
        for (it, o) in items.iter().zip(outcomes) {
            let Some(o) = o else { continue };
            if it.gone {
                continue;
            }
            match o.status {
                Status::Ok => plan.add(it.meta.uid, &o.actions, None, &to),
                Status::Review => plan.add(it.meta.uid, &[], review_flag, &to),
                _ => {}
            }
        }
        plan
    }

    /// Carries out the plan while a second thread makes final, in the
    /// background, each message whose commands the server has confirmed
    /// (those the plan does not touch at once, the others as each MOVE or
    /// the last STORE is answered): recording overlaps the server's work
    /// instead of following it. The watermark is left to [`Runner::record`].
    /// Returns the UIDs whose commands the server refused, with why, and the
    /// UIDs made final; a broken session or a failed write is an error.
    #[allow(clippy::too_many_arguments)]
    fn act_and_finalize(
        &mut self,
        s: &mut Session,
        caps: &Caps,
        folders: &Folders,
        mailbox: &str,
        plan: &Plan,
        items: &[Item],
        outcomes: &[Option<Outcome>],
    ) -> Result<(HashMap<u32, String>, HashSet<u32>), ImapError> {
        let index: HashMap<u32, usize> = items
            .iter()
            .enumerate()
            .map(|(i, it)| (it.meta.uid, i))
            .collect();
        let touched: HashSet<u32> = plan
            .flag_sets
            .values()
            .chain(plan.moves.values())
            .flatten()
            .copied()
            .collect();
        let untouched: Vec<u32> = items
            .iter()
            .zip(outcomes)
            .filter(|(it, o)| o.is_some() && !touched.contains(&it.meta.uid))
            .map(|(it, _)| it.meta.uid)
            .collect();
        let store = self.w.store.clone();
        std::thread::scope(|scope| {
            let (tx, rx) = crossbeam_channel::unbounded::<Vec<u32>>();
            let writer = scope.spawn(move || {
                let mut done: HashSet<u32> = HashSet::new();
                for uids in rx {
                    let finals: Vec<(EmailMeta, Outcome)> = uids
                        .iter()
                        .filter_map(|u| {
                            let i = index[u];
                            outcomes[i].clone().map(|o| (items[i].meta.clone(), o))
                        })
                        .collect();
                    store.record_batch(&finals, &[], None)?;
                    done.extend(uids);
                }
                Ok::<_, crate::store::StoreError>(done)
            });
            if !untouched.is_empty() {
                let _ = tx.send(untouched);
            }
            let acted = self.act(s, caps, folders, mailbox, plan, &mut |uids| {
                let _ = tx.send(uids);
            });
            drop(tx);
            let written = writer
                .join()
                .unwrap_or_else(|p| std::panic::resume_unwind(p));
            let failed = acted?;
            Ok((failed, written?))
        })
    }

    /// Carries out the plan: flags first, moves last. `done` is told the
    /// UIDs whose every command the server has confirmed, as soon as it has.
    /// Returns the UIDs whose commands the server refused, with why; a
    /// broken session is an error.
    fn act(
        &mut self,
        s: &mut Session,
        caps: &Caps,
        folders: &Folders,
        mailbox: &str,
        plan: &Plan,
        done: &mut dyn FnMut(Vec<u32>),
    ) -> Result<HashMap<u32, String>, ImapError> {
        let mut failed: HashMap<u32, String> = HashMap::new();
        for (flags, set) in &plan.flag_sets {
            if let Err(e) =
                s.uid_store(uid_set(set), format!("+FLAGS.SILENT ({})", flags.join(" ")))
            {
                let e = session_fatal(e)?;
                for u in set {
                    failed.insert(*u, format!("setting flags {} failed: {e}", flags.join(" ")));
                }
            }
        }
        // Flagged messages that move nowhere are done with their flags.
        let moving: HashSet<u32> = plan.moves.values().flatten().copied().collect();
        let flagged: BTreeSet<u32> = plan
            .flag_sets
            .values()
            .flatten()
            .copied()
            .filter(|u| !moving.contains(u) && !failed.contains_key(u))
            .collect();
        if !flagged.is_empty() {
            done(flagged.into_iter().collect());
        }
        let mut created: HashSet<String> = HashSet::new();
        for (folder, set) in &plan.moves {
            let set: Vec<u32> = set
                .iter()
                .copied()
                .filter(|u| !failed.contains_key(u))
                .collect();
            if set.is_empty() {
                continue;
            }
            match self.move_uids(s, caps, folders, &mut created, &set, folder, mailbox) {
                Ok(()) => done(set),
                Err(e) => {
                    for u in &set {
                        failed.insert(*u, e.clone());
                    }
                }
            }
        }
        Ok(failed)
    }

    /// Records a group in one transaction — finished messages, failed
    /// attempts and the watermark `high`, which stays below whatever of the
    /// window is not recorded yet or was cancelled, so the next run starts
    /// there — then counts and announces it.
    fn record(
        &mut self,
        items: &[Item],
        outcomes: Vec<Option<Outcome>>,
        failed: &HashMap<u32, String>,
        early: &HashSet<u32>,
        mailbox: &str,
        uidvalidity: u32,
        high: u32,
    ) -> Result<(), ImapError> {
        // Every finished message, announced below; only those not made
        // final during the actions are written here.
        let mut finals: Vec<(EmailMeta, Outcome)> = Vec::new();
        let mut done: Vec<usize> = Vec::new();
        for (i, (it, o)) in items.iter().zip(outcomes).enumerate() {
            let Some(o) = o else { continue };
            if failed.contains_key(&it.meta.uid) {
                continue;
            }
            finals.push((it.meta.clone(), o));
            done.push(i);
        }
        let rest: Vec<(EmailMeta, Outcome)> = finals
            .iter()
            .filter(|(m, _)| !early.contains(&m.uid))
            .cloned()
            .collect();
        let delay = self.w.account.retry_delay.0;
        let mut failures: Vec<(FailedAttempt, &'static str)> = Vec::new();
        for it in items {
            let f = match (&it.failure, failed.get(&it.meta.uid)) {
                (Some(f), _) => f.clone(),
                (None, Some(m)) => Failure::new(m.clone(), "imap"),
                _ => continue,
            };
            failures.push((
                FailedAttempt {
                    meta: it.meta.clone(),
                    error: f.message,
                    max_attempts: if f.permanent {
                        1
                    } else {
                        self.w.account.max_attempts
                    },
                    retry_delay_ms: i64::try_from(delay.as_millis()).unwrap_or(i64::MAX),
                },
                f.kind,
            ));
        }
        let attempts: Vec<FailedAttempt> = failures.iter().map(|(f, _)| f.clone()).collect();
        let (_, recorded) = self.w.store.record_batch(
            &rest,
            &attempts,
            Some((self.name(), mailbox, uidvalidity, high)),
        )?;
        crate::failpoint::hit("after-batch-commit");

        for ((meta, o), i) in finals.iter().zip(&done) {
            self.announce_processed(meta, o, items[*i].duration);
        }
        if !finals.is_empty() {
            self.w.handle.mark_processed();
        }
        for ((f, kind), r) in failures.iter().zip(&recorded) {
            let (m, n, st) = (&f.meta, r.attempts, r.status);
            self.count_error(kind);
            log::warn!(
                "{}: {mailbox} UID {} ({}): {} (attempt {n}, {st})",
                self.name(),
                m.uid,
                m.message_id,
                f.error
            );
            self.emit(Event::Error {
                error: &f.error,
                details: &format!(
                    "{mailbox} UID {} {} subject {:?}: attempt {n} of {}, now {st}",
                    m.uid, m.message_id, m.subject, f.max_attempts
                ),
            });
        }
        let cancelled = items.iter().filter(|it| it.cancelled).count();
        if cancelled > 0 {
            log::info!(
                "{}: {mailbox}: shutting down; {cancelled} message(s) left for the next start",
                self.name()
            );
        }
        Ok(())
    }

    /// Metrics and webhooks of one recorded message.
    fn announce_processed(&self, meta: &EmailMeta, o: &Outcome, took: Duration) {
        self.w
            .metrics
            .emails_processed
            .with_label_values(&[self.name()])
            .inc();
        if !took.is_zero() {
            self.w
                .metrics
                .classification_duration
                .observe(took.as_secs_f64());
        }
        self.emit(Event::EmailProcessed {
            subject: &meta.subject,
            from: &meta.from,
            actions: &o.actions,
            model: &o.model,
            reasoning: &o.reasoning,
            dry_run: o.status == Status::DryRun,
            review: (o.status == Status::Review).then_some(o.confidence),
        });
        if o.status == Status::Ok {
            for a in &o.actions {
                self.w
                    .metrics
                    .actions
                    .with_label_values(&[self.name(), a.kind().as_str()])
                    .inc();
                self.emit(Event::ActionTaken {
                    action: a,
                    subject: &meta.subject,
                    from: &meta.from,
                });
            }
        }
    }
}
