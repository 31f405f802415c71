//! A decided group of messages, in stages: what each becomes, the plan,
//! the actions on the server (`acting`: each message made final as soon
//! as the server confirmed its commands), then the rest recorded in one
//! transaction with the folder watermark, and everything announced.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use super::session::{Caps, Folders, Session};
use super::state::{Failure, Item, Policy, State};
use super::{ImapError, Runner};
use crate::actions::{destination, Destinations, Plan};
use crate::store::{
    EmailMeta, FailedAttempt, FailureRecord, Final, Finished, FinishedMove, MoveRecord, Outcome,
    Outcomes, Status, Watermark,
};
use crate::webhook::Event;

/// Where each moved UID went: the folder, and its UID there when the server
/// said (COPYUID).
pub(super) type Moved = HashMap<u32, (String, Option<u32>)>;

/// Journalled decisions a group carries out again: UID → Message-ID, and
/// the generation of the folder they belong to.
pub(super) struct Replayed {
    pub(super) uidvalidity: u32,
    pub(super) ids: HashMap<u32, String>,
}

impl Replayed {
    /// None carried out again, in the generation `uidvalidity`.
    pub(super) fn none(uidvalidity: u32) -> Replayed {
        Replayed {
            uidvalidity,
            ids: HashMap::new(),
        }
    }
}

/// What acting on a group did.
pub(super) struct Acted {
    /// UIDs whose commands the server refused, with why.
    pub(super) failed: HashMap<u32, String>,
    /// UIDs made final while acting.
    pub(super) finals: HashSet<u32>,
    /// Where the moved UIDs went.
    pub(super) moved: Moved,
}

/// UIDs whose every command the server has confirmed, and the folder they
/// moved to (with their UIDs there, when the server said) if they moved.
pub(super) struct Confirmed {
    pub(super) uids: Vec<u32>,
    pub(super) to: Option<(String, HashMap<u32, u32>)>,
}

impl Runner {
    /// What each decided message becomes: acted on, dry run, or review.
    pub(super) fn outcomes(&self, items: &[Item]) -> Vec<Option<Outcome>> {
        let policy = Policy {
            dry_run: self.w.account.dry_run,
            minimum_confidence: self.w.account.minimum_confidence,
            learned_min: self.w.account.learned.min_confidence,
            spam_confidence: self.w.account.learned.spam_confidence,
            junk: &self.junk,
        };
        items.iter().map(|it| policy.outcome(it)).collect()
    }

    /// Groups what the outcomes need by flag set and by destination.
    pub(super) fn plan(
        &self,
        items: &[Item],
        outcomes: &[Option<Outcome>],
        folders: &Folders,
    ) -> Plan {
        let to = Destinations {
            junk: &folders.junk,
            trash: &folders.trash,
        };
        // A dry run touches nothing, not even to mark mail for review.
        let review_flag = self
            .w
            .account
            .review_flag
            .as_deref()
            .filter(|_| !self.w.account.dry_run);
        // The review flag marks a message for the user's client; a folder
        // that would not keep it (see `Keeps`) leaves the message for
        // review unmarked, not failed (it was, and asked again at each
        // attempt: the regression audit).
        let mut unmarked: Option<(String, usize)> = None;
        let mut plan = Plan::default();
        for (it, o) in items.iter().zip(outcomes) {
            let Some(o) = o else { continue };
            if it.gone() {
                continue;
            }
            match o.status {
                Status::Ok => plan.add(it.meta.uid, &o.actions, None, &to),
                Status::Review => {
                    let refused = review_flag.and_then(|f| {
                        let k = folders.keeps(&it.meta.mailbox)?;
                        k.refusal(&folders.describe(&it.meta.mailbox), &[f.to_string()])
                    });
                    if let Some(why) = refused {
                        unmarked.get_or_insert((why, 0)).1 += 1;
                        plan.add(it.meta.uid, &[], None, &to);
                    } else {
                        plan.add(it.meta.uid, &[], review_flag, &to);
                    }
                }
                _ => {}
            }
        }
        if let Some((why, n)) = unmarked {
            log::warn!(
                "{}: {n} message(s) for review left without review_flag: {why}",
                self.name()
            );
        }
        plan
    }

    /// Carries out the plan while the account's journal writer makes
    /// final, in the background, each message whose commands the server
    /// has confirmed (those the plan does not touch at once, the others as
    /// each MOVE or the last STORE is answered): recording overlaps the
    /// server's work instead of following it. Waits for those writes before
    /// returning; the watermark is left to [`Runner::record`]. Returns what
    /// it did ([`Acted`]); a broken session or a failed write is an error.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn act_and_finalize(
        &mut self,
        s: &mut Session,
        caps: &Caps,
        folders: &Folders,
        mailbox: &str,
        plan: &Plan,
        items: &[Item],
        outcomes: &[Option<Outcome>],
    ) -> Result<Acted, ImapError> {
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
        // Journalled decisions carried out again, by UID: their Message-ID
        // finds a copy an earlier run may have made (see `reconcile`).
        let replayed = Replayed {
            uidvalidity: items.first().map_or(0, |it| it.meta.uidvalidity),
            ids: items
                .iter()
                .filter(|it| it.is_replay() && !it.gone())
                .map(|it| (it.meta.uid, it.meta.message_id.clone()))
                .collect(),
        };
        let before: HashMap<u32, Vec<String>> = items
            .iter()
            .map(|it| (it.meta.uid, it.seen.flags.clone()))
            .collect();
        let writer = self.writer.clone();
        let mut finals: HashSet<u32> = HashSet::new();
        let mut confirmed = |c: Confirmed| {
            // Rows this run journalled are made final as journalled; the
            // others (left alone, dry run, review, an earlier run's
            // journal) are written whole.
            let mut out = Outcomes::default();
            let dest_folder: Option<Arc<str>> = c.to.as_ref().map(|(f, _)| f.as_str().into());
            for u in &c.uids {
                let i = index[u];
                let Some(o) = &outcomes[i] else { continue };
                let dest_uid = c.to.as_ref().and_then(|(_, dest)| dest.get(u).copied());
                let it = &items[i];
                if it.journalled_now() && o.status == Status::Ok {
                    let row = Finished {
                        uid: *u,
                        actions: o.actions.as_slice().into(),
                        moved: dest_folder.as_ref().map(|f| FinishedMove {
                            dest_folder: f.clone(),
                            dest_uid,
                            flags: it.seen.flags.as_slice().into(),
                        }),
                    };
                    let m = &it.meta;
                    out.finish(&m.account, &m.mailbox, m.uidvalidity, row);
                } else {
                    out.finals.push(Final {
                        meta: it.meta.clone(),
                        outcome: o.clone(),
                        moved: c.to.as_ref().map(|(folder, _)| MoveRecord {
                            uid: *u,
                            dest_folder: folder.clone(),
                            dest_uid,
                            flags: it.seen.flags.clone(),
                        }),
                    });
                }
            }
            writer.outcomes(out);
            finals.extend(c.uids);
        };
        // A journalled message moved before a restart went where its
        // decision said: recorded so, its flags the journal's, and undo
        // finds it there by its Message-ID (an audit: 1,500 moves recorded
        // after a SIGKILL could be neither undone nor corrected, "the
        // message was not moved").
        let to = Destinations {
            junk: &folders.junk,
            trash: &folders.trash,
        };
        let mut gone_to: BTreeMap<String, Vec<u32>> = BTreeMap::new();
        let untouched: Vec<u32> = untouched
            .into_iter()
            .filter(|u| {
                let i = index[u];
                let dest = (items[i].gone())
                    .then(|| outcomes[i].as_ref())
                    .flatten()
                    .and_then(|o| destination(&o.actions, &to));
                match dest {
                    Some(d) => {
                        gone_to.entry(d).or_default().push(*u);
                        false
                    }
                    None => true,
                }
            })
            .collect();
        if !untouched.is_empty() {
            confirmed(Confirmed {
                uids: untouched,
                to: None,
            });
        }
        for (dest, uids) in gone_to {
            confirmed(Confirmed {
                uids,
                to: Some((dest, HashMap::new())),
            });
        }
        let acted = self.act(
            s,
            caps,
            folders,
            mailbox,
            plan,
            &replayed,
            &before,
            &mut confirmed,
        );
        let written = writer.barrier();
        let (failed, moved) = match acted {
            Ok(done) => done,
            Err(e) => {
                // What the writer made final before the session broke (the
                // messages left alone, those whose commands were confirmed)
                // is recorded for good, and the next pass finds it done:
                // announced now, or never (the crash audit: ten noops
                // recorded 6 ms before Dovecot was killed had no
                // `email_processed`).
                if written.is_ok() {
                    for u in &finals {
                        let i = index[u];
                        if let Some(o) = &outcomes[i] {
                            self.announce_processed(&items[i].meta, o, items[i].took());
                        }
                    }
                }
                return Err(e);
            }
        };
        written?;
        Ok(Acted {
            failed,
            finals,
            moved,
        })
    }

    /// Records a group in one transaction — finished messages not made final
    /// during the actions (with where each moved, for undo), failed attempts
    /// and the watermark `high` of `mailbox` at `uidvalidity`, which stays
    /// below whatever of the window is not recorded yet or was cancelled, so
    /// the next run starts there — then counts and announces all of it.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn record(
        &mut self,
        items: &[Item],
        outcomes: Vec<Option<Outcome>>,
        failed: &HashMap<u32, String>,
        early: &HashSet<u32>,
        moved: &Moved,
        (mailbox, uidvalidity, high): (&str, u32, u32),
    ) -> Result<(), ImapError> {
        // Every finished message (by its index in `items`), announced
        // below; only those not made final during the actions are written
        // here. (Indexes, not copies: a window holds up to 20,000.)
        let mut finals: Vec<(usize, Outcome)> = Vec::new();
        for (i, (it, o)) in items.iter().zip(outcomes).enumerate() {
            let Some(o) = o else { continue };
            if failed.contains_key(&it.meta.uid) {
                continue;
            }
            finals.push((i, o));
        }
        let rest: Vec<Final> = finals
            .iter()
            .filter(|(i, _)| !early.contains(&items[*i].meta.uid))
            .map(|(i, o)| {
                let m = &items[*i].meta;
                Final {
                    meta: m.clone(),
                    outcome: o.clone(),
                    moved: moved
                        .get(&m.uid)
                        .map(|(folder, dest)| crate::store::MoveRecord {
                            uid: m.uid,
                            dest_folder: folder.clone(),
                            dest_uid: *dest,
                            flags: items[*i].seen.flags.clone(),
                        }),
                }
            })
            .collect();
        let delay = self.w.account.retry_delay.0;
        let mut failures: Vec<(FailedAttempt, &'static str)> = Vec::new();
        for it in items {
            let f = match (it.failure(), failed.get(&it.meta.uid)) {
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
        let recorded = self.w.store.record_outcomes(&Outcomes {
            finished: Vec::new(),
            finals: rest,
            failures: failures.iter().map(|(f, _)| f.clone()).collect(),
            watermark: Some(Watermark::new(self.name(), mailbox, uidvalidity, high)),
        })?;
        crate::failpoint::hit("after-batch-commit");

        for (i, o) in &finals {
            self.announce_processed(&items[*i].meta, o, items[*i].took());
        }
        if !finals.is_empty() {
            self.w.handle.mark_processed();
        }
        self.report_failures(mailbox, &failures, &recorded);
        let cancelled = items
            .iter()
            .filter(|it| it.state == State::Cancelled)
            .count();
        if cancelled > 0 {
            log::info!(
                "{}: {mailbox}: shutting down; {cancelled} message(s) of this group not asked, \
                 left with the rest of the folder's new mail for the next start",
                self.name()
            );
        }
        Ok(())
    }

    /// Counts, logs and announces (`error` webhook) recorded failed
    /// attempts, with what became of each (`recorded`, in order). At most
    /// a line a second in the log, with the count held back: with its
    /// provider down, a backlog wrote a line a message and pushed the one
    /// that said so out of the dashboard's log (an audit); each failure is
    /// in the activity list and its `error` event all the same.
    pub(super) fn report_failures(
        &self,
        mailbox: &str,
        failures: &[(FailedAttempt, &'static str)],
        recorded: &[FailureRecord],
    ) {
        for ((f, kind), r) in failures.iter().zip(recorded) {
            let (uid, n, st) = (f.meta.uid, r.attempts, r.status);
            // The row's Message-ID and subject: an attempt that read
            // nothing (the message left the mailbox) has none of its own,
            // and the log said "no Message-ID" of a message the activity
            // list named (an audit).
            let (message_id, subject) = (&r.message_id, &r.subject);
            self.count_error(kind);
            if let Some(held) = self.failure_lines.lock().admit(std::time::Instant::now()) {
                log::warn!(
                    "{}: {mailbox} UID {uid} ({}): {} (attempt {n}, {st}){}",
                    self.name(),
                    if message_id.is_empty() {
                        "no Message-ID".to_string()
                    } else {
                        crate::logging::clean(message_id)
                    },
                    crate::logging::clean_up_to(&f.error, 1000),
                    match held {
                        0 => String::new(),
                        n => format!(
                            "; {n} more failed attempt(s) since the last line (the activity list \
                             has each)"
                        ),
                    }
                );
            }
            self.emit(Event::Error {
                error: &f.error,
                // A permanent failure's limit is 1 whatever came before:
                // "attempt 2 of 1" (a regression audit). Failed is the end.
                details: &if st == Status::Failed {
                    format!("{mailbox} UID {uid} {message_id} subject {subject:?}: attempt {n}, now {st}", subject = crate::shown::quoted(subject))
                } else {
                    format!(
                        "{mailbox} UID {uid} {message_id} subject {subject:?}: attempt {n} of {}, now {st}",
                        f.max_attempts, subject = crate::shown::quoted(subject)
                    )
                },
            });
        }
    }

    /// Metrics and webhooks of one recorded message.
    pub(super) fn announce_processed(&self, meta: &EmailMeta, o: &Outcome, took: Duration) {
        self.w
            .metrics
            .emails_processed
            .with_label_values(&[self.name()])
            .inc();
        let path = crate::learn::path_of(&o.model);
        self.w
            .metrics
            .decisions
            .with_label_values(&[self.name(), path])
            .inc();
        if path == crate::learn::PATH && o.status != Status::Review && self.w.provider.is_some() {
            self.w
                .metrics
                .model_calls_saved
                .with_label_values(&[self.name()])
                .inc();
        }
        if !took.is_zero() {
            self.w
                .metrics
                .classification_duration
                .observe(took.as_secs_f64());
        }
        let in_use = self.w.handle.folders_in_use();
        let to = in_use.as_ref().map(|f| crate::actions::Destinations {
            junk: &f.junk,
            trash: &f.trash,
        });
        self.emit(Event::EmailProcessed {
            subject: &meta.subject,
            from: &meta.from,
            actions: &o.actions,
            model: &o.model,
            reasoning: &o.reasoning,
            dry_run: o.status == Status::DryRun || self.w.account.dry_run,
            review: (o.status == Status::Review).then_some(o.confidence),
            to,
        });
        if o.status == Status::Ok {
            for a in &o.actions {
                self.w
                    .metrics
                    .actions
                    .with_label_values(&[self.name(), a.kind().as_str()])
                    .inc();
                // A `noop` is counted, but the server did nothing: no
                // `action_taken` (README, an audit).
                if matches!(a, crate::actions::Action::Noop) {
                    continue;
                }
                self.emit(Event::ActionTaken {
                    action: a,
                    subject: &meta.subject,
                    from: &meta.from,
                    to,
                });
            }
        }
    }
}
