//! One batch of messages, in stages: fetch and decide (journal, rules, the
//! model pool), plan, journal, act on the server, then record everything in
//! one transaction with the folder watermark and announce it.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::commands::uid_set;
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
        }
    }
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

    #[allow(clippy::too_many_arguments)]
    pub(super) fn process_batch(
        &mut self,
        s: &mut Session,
        caps: &Caps,
        folders: &Folders,
        mailbox: &str,
        uidvalidity: u32,
        uids: &[u32],
        known: &mut HashMap<u32, KnownEmail>,
    ) -> Result<(), ImapError> {
        let items = self.decide(s, mailbox, uidvalidity, uids, known)?;
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
        if !journal.is_empty() {
            self.w.store.record_pending(&journal)?;
        }
        let plan = self.plan(&items, &outcomes, folders);
        let failed = self.act(s, caps, folders, mailbox, &plan)?;
        self.record(&items, outcomes, &failed, mailbox, uidvalidity)
    }

    /// Fetches the batch and decides each message: its journalled decision,
    /// a rule, or the model pool (all calls of the batch in flight at once,
    /// up to the pool's size).
    fn decide(
        &mut self,
        s: &mut Session,
        mailbox: &str,
        uidvalidity: u32,
        uids: &[u32],
        known: &mut HashMap<u32, KnownEmail>,
    ) -> Result<Vec<Item>, ImapError> {
        let max = self.w.account.max_message_bytes;
        let fetched = s.uid_fetch(uid_set(uids), format!("(UID BODY.PEEK[]<0.{max}>)"))?;
        let mut bodies: HashMap<u32, Vec<u8>> = HashMap::new();
        for f in fetched.iter() {
            if let (Some(uid), Some(body)) = (f.uid, f.body()) {
                bodies.insert(uid, body.to_vec());
            }
        }
        drop(fetched);

        let mut items: Vec<Item> = Vec::with_capacity(uids.len());
        let (reply_tx, reply_rx) = crossbeam_channel::unbounded();
        let mut waiting = 0;
        for &uid in uids {
            let k = known.remove(&uid);
            let Some(raw) = bodies.remove(&uid) else {
                // Gone between SEARCH and FETCH, or moved by us before a crash.
                match k {
                    Some(k) if k.status == Status::Pending => {
                        log::info!(
                            "{}: UID {uid} was already moved before a restart; recording it",
                            self.name()
                        );
                        let mut item = Item::new(self.meta(mailbox, uidvalidity, uid, None));
                        item.decision = Some(journalled(&k));
                        item.journalled = true;
                        item.gone = true;
                        items.push(item);
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
                        items.push(item);
                    }
                    _ => {}
                }
                continue;
            };
            let started = Instant::now();
            let email = Email::parse(&raw);
            let mut item = Item::new(self.meta(mailbox, uidvalidity, uid, email.as_ref()));
            match (k, email) {
                (Some(k), _) if k.status == Status::Pending => {
                    item.decision = Some(journalled(&k));
                    item.journalled = true;
                }
                (_, None) => {
                    item.failure = Some(Failure {
                        permanent: true,
                        ..Failure::new("the message could not be parsed as RFC 822", "parse")
                    });
                }
                (_, Some(email)) => {
                    if let Some(c) = self.w.rules.classify(&email) {
                        item.decision = Some(c);
                        item.duration = started.elapsed();
                    } else if let Some(p) = &self.w.provider {
                        self.w.pool.submit(Job {
                            provider: p.clone(),
                            account: self.w.account.clone(),
                            email: Arc::new(email),
                            index: items.len(),
                            reply: reply_tx.clone(),
                            requester: self.w.handle.clone(),
                        });
                        waiting += 1;
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
            items.push(item);
        }
        drop(reply_tx);
        for _ in 0..waiting {
            let Ok((i, result, took)) = reply_rx.recv() else {
                break;
            };
            items[i].duration = took;
            match result {
                Ok(c) => items[i].decision = Some(c),
                Err(ClassifyError::Cancelled) => items[i].cancelled = true,
                Err(e) => items[i].failure = Some(Failure::new(e.to_string(), e.kind())),
            }
        }
        // Every message leaves this batch decided, failed or cancelled: one
        // the pool never answered (it cannot happen, but a skipped message
        // is the one failure this worker must never have) is a failure.
        for it in items.iter_mut() {
            if it.decision.is_none() && it.failure.is_none() && !it.cancelled {
                it.failure = Some(Failure::new(
                    "the classifier gave no answer",
                    "classify_no_answer",
                ));
            }
        }
        Ok(items)
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

    /// Carries out the plan: flags first, moves last. Returns the UIDs whose
    /// commands the server refused, with why; a broken session is an error.
    fn act(
        &mut self,
        s: &mut Session,
        caps: &Caps,
        folders: &Folders,
        mailbox: &str,
        plan: &Plan,
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
            // `?`: a broken session ends the batch, decisions journalled.
            if let Err(e) = self.move_uids(s, caps, folders, &mut created, &set, folder, mailbox)? {
                for u in &set {
                    failed.insert(*u, e.clone());
                }
            }
        }
        Ok(failed)
    }

    /// Records the batch in one transaction — finished messages, failed
    /// attempts and the watermark — then counts and announces it. The
    /// watermark stops below the first cancelled message, so the next run
    /// starts there.
    fn record(
        &mut self,
        items: &[Item],
        outcomes: Vec<Option<Outcome>>,
        failed: &HashMap<u32, String>,
        mailbox: &str,
        uidvalidity: u32,
    ) -> Result<(), ImapError> {
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
        let high = match items
            .iter()
            .filter(|it| it.cancelled)
            .map(|it| it.meta.uid)
            .min()
        {
            Some(first_cancelled) => first_cancelled.saturating_sub(1),
            None => items.iter().map(|it| it.meta.uid).max().unwrap_or(0),
        };
        let attempts: Vec<FailedAttempt> = failures.iter().map(|(f, _)| f.clone()).collect();
        let (_, recorded) = self.w.store.record_batch(
            &finals,
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
