//! The processing record: a message's row is journalled (`pending`) with
//! its decision before the server is asked to act, and made final with its
//! batch and the folder watermark in one transaction.

use std::time::Duration;

use rusqlite::{params, OptionalExtension, ToSql};

use super::finished::{finish_journalled, Finished, FinishedIn};
use super::{actions_json, parse_actions, Cause, MoveRecord, Result, Status, Store, StoreError};
use crate::actions::Action;
use crate::backoff::Backoff;
use crate::timestamp::now_ms;

/// What is known of a message before it is recorded.
#[derive(Debug, Clone, Default)]
pub struct EmailMeta {
    pub account: String,
    pub mailbox: String,
    pub uidvalidity: u32,
    pub uid: u32,
    pub message_id: String,
    pub subject: String,
    pub from: String,
}

impl EmailMeta {
    /// The message's columns (`account` to `sender`, `?1` to `?7` of every
    /// statement that writes its row), then `rest`.
    fn row<'a>(&'a self, rest: &[&'a dyn ToSql]) -> Vec<&'a dyn ToSql> {
        let mut v: Vec<&dyn ToSql> = vec![
            &self.account,
            &self.mailbox,
            &self.uidvalidity,
            &self.uid,
            &self.message_id,
            &self.subject,
            &self.from,
        ];
        v.extend_from_slice(rest);
        v
    }

    /// [`EmailMeta::row`] then a recorded outcome: `processed_at`, status,
    /// actions (as `actions`, its JSON), model, reasoning, confidence, error.
    fn outcome_row<'a>(
        &'a self,
        at: &'a i64,
        o: &'a Outcome,
        actions: &'a dyn ToSql,
    ) -> Vec<&'a dyn ToSql> {
        self.row(&[
            at,
            &o.status,
            actions,
            &o.model,
            &o.reasoning,
            &o.confidence,
            &o.error,
        ])
    }
}

/// The decision about one message, recorded before acting on it (a
/// decision) and after (an outcome).
#[derive(Debug, Clone)]
pub struct Outcome {
    pub status: Status,
    pub actions: Vec<Action>,
    pub model: String,
    pub reasoning: String,
    pub confidence: Option<f64>,
    pub error: Option<String>,
}

impl Default for Outcome {
    fn default() -> Outcome {
        Outcome {
            status: Status::Ok,
            actions: Vec::new(),
            model: String::new(),
            reasoning: String::new(),
            confidence: None,
            error: None,
        }
    }
}

/// A decision journalled before acting: the message, what it becomes, and
/// its flags before (what undo restores).
pub type Decision = (EmailMeta, Outcome, Vec<String>);

/// An outcome written whole: not journalled (left alone, a dry run, for
/// review), or journalled by an earlier run.
#[derive(Debug, Clone)]
pub struct Final {
    pub meta: EmailMeta,
    pub outcome: Outcome,
    /// Where it was moved, for undo (its `uid` is unused here).
    pub moved: Option<MoveRecord>,
}

impl Final {
    pub fn new(meta: EmailMeta, outcome: Outcome) -> Final {
        Final {
            meta,
            outcome,
            moved: None,
        }
    }
}

/// Where a folder's processing stands: every UID up to `last_uid` of the
/// generation `uidvalidity` is recorded. Moved only up (see
/// [`Store::advance_watermark`]); a new generation is a reset
/// ([`Store::reset_watermark`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Watermark {
    pub account: String,
    pub mailbox: String,
    pub uidvalidity: u32,
    pub last_uid: u32,
}

impl Watermark {
    pub fn new(account: &str, mailbox: &str, uidvalidity: u32, last_uid: u32) -> Watermark {
        Watermark {
            account: account.to_string(),
            mailbox: mailbox.to_string(),
            uidvalidity,
            last_uid,
        }
    }
}

/// What [`Store::record_outcomes`] writes, all in one transaction.
#[derive(Debug, Clone, Default)]
pub struct Outcomes {
    /// Journalled rows made final as journalled, by folder (see
    /// [`Outcomes::finish`]).
    pub finished: Vec<FinishedIn>,
    pub finals: Vec<Final>,
    /// Failed attempts: each waits for a retry, or is parked as `failed`
    /// at its limit.
    pub failures: Vec<FailedAttempt>,
    /// Moved up with the rest, so a UID the watermark passes always has
    /// its row: a crash can lose no message between the two.
    pub watermark: Option<Watermark>,
}

impl Outcomes {
    /// Adds a message of `account`'s `mailbox` (generation `uidvalidity`)
    /// made final as journalled.
    pub fn finish(&mut self, account: &str, mailbox: &str, uidvalidity: u32, row: Finished) {
        match self.finished.last_mut() {
            Some(f)
                if f.uidvalidity == uidvalidity && f.mailbox == mailbox && f.account == account =>
            {
                f.rows.push(row)
            }
            _ => self.finished.push(FinishedIn {
                account: account.to_string(),
                mailbox: mailbox.to_string(),
                uidvalidity,
                rows: vec![row],
            }),
        }
    }

    fn is_empty(&self) -> bool {
        self.finished.iter().all(|f| f.rows.is_empty())
            && self.finals.is_empty()
            && self.failures.is_empty()
            && self.watermark.is_none()
    }
}

/// A failed attempt at a message, recorded with its batch.
#[derive(Debug, Clone)]
pub struct FailedAttempt {
    pub meta: EmailMeta,
    pub error: String,
    /// Attempts after which the message is parked as `failed`.
    pub max_attempts: u32,
    /// The wait before the first retry (ms); it doubles with each attempt
    /// after, up to a day.
    pub retry_delay_ms: i64,
}

/// What [`Store::record_outcomes`] did with a failed attempt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FailureRecord {
    pub attempts: u32,
    pub status: Status,
    /// The row's, which an attempt that read nothing of the message (it
    /// left the mailbox) keeps from the attempt before: the log and the
    /// `error` webhook name the message by them.
    pub message_id: String,
    pub subject: String,
}

/// A row already recorded for a UID above the folder watermark.
#[derive(Debug, Clone)]
pub struct KnownEmail {
    pub id: i64,
    pub uid: u32,
    pub status: Status,
    pub actions: Vec<Action>,
    pub model: String,
    pub reasoning: String,
    pub confidence: Option<f64>,
    pub attempts: u32,
    pub next_attempt_at: Option<i64>,
    /// As recorded when it was journalled: what a message the server no
    /// longer has (moved before its record was made final) is announced
    /// with, its header being out of reach.
    pub message_id: String,
    pub subject: String,
    pub sender: String,
}

/// Records the actions of an email as taken. Only an `ok` outcome's actions
/// were carried out by the server; others (dry run, review) count nothing.
fn insert_actions(
    st: &mut rusqlite::CachedStatement<'_>,
    email_id: i64,
    account: &str,
    at: i64,
    o: &Outcome,
) -> rusqlite::Result<()> {
    if o.status != Status::Ok {
        return Ok(());
    }
    for a in &o.actions {
        let (kind, folder, flags) = action_columns(a);
        st.execute(params![email_id, account, at, kind, folder, flags])?;
    }
    Ok(())
}

/// An action's `type`, `folder` and `flags` (JSON) columns in `actions`.
pub(super) fn action_columns(a: &Action) -> (&'static str, Option<&str>, Option<String>) {
    match a {
        Action::Move { folder } => (a.kind().as_str(), Some(folder.as_str()), None),
        Action::Flag { flags } => (a.kind().as_str(), None, serde_json::to_string(flags).ok()),
        _ => (a.kind().as_str(), None, None),
    }
}

/// Longest wait between two attempts at a message, however often it failed.
const MAX_RETRY_DELAY: Duration = Duration::from_secs(24 * 3600);

/// The longest error a record keeps, in characters.
const MAX_ERROR_CHARS: usize = 4000;

/// Upserts a failed attempt inside `tx`: one more attempt, the error, and
/// either a retry due after the back-off of that many attempts
/// (`retry_delay_ms` doubled each time, at most a day) or, at
/// `max_attempts`, the `failed` status.
fn insert_failure(tx: &rusqlite::Transaction<'_>, f: &FailedAttempt) -> Result<FailureRecord> {
    let m = &f.meta;
    let now = now_ms();
    let mut st = tx.prepare_cached(
        "INSERT INTO emails (account, mailbox, uidvalidity, uid, message_id, subject, sender,
            processed_at, status, error, attempts)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, 'retrying', ?9, 1)
         ON CONFLICT (account, mailbox, uidvalidity, uid) DO UPDATE SET
            attempts = emails.attempts + 1, error = excluded.error,
            processed_at = excluded.processed_at, status = 'retrying',
            message_id = CASE WHEN excluded.message_id = '' THEN emails.message_id ELSE excluded.message_id END,
            subject = CASE WHEN excluded.subject = '' THEN emails.subject ELSE excluded.subject END,
            sender = CASE WHEN excluded.sender = '' THEN emails.sender ELSE excluded.sender END
         RETURNING id, attempts, message_id, subject",
    )?;
    // Whatever made the error (a server's words, a model's answer), a
    // record keeps its first characters.
    let error = crate::email::truncate(&f.error, MAX_ERROR_CHARS);
    let (id, attempts, message_id, subject): (i64, u32, Option<String>, Option<String>) = st
        .query_row(m.row(&[&now, &error]).as_slice(), |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?))
        })?;
    let status = if attempts >= f.max_attempts {
        Status::Failed
    } else {
        Status::Retrying
    };
    let next = (status == Status::Retrying).then(|| {
        let first = Duration::from_millis(u64::try_from(f.retry_delay_ms).unwrap_or(0));
        let wait = Backoff::new(first, MAX_RETRY_DELAY)
            .delay(attempts)
            .min(MAX_RETRY_DELAY);
        now.saturating_add(i64::try_from(wait.as_millis()).unwrap_or(i64::MAX))
    });
    tx.prepare_cached("UPDATE emails SET status = ?2, next_attempt_at = ?3 WHERE id = ?1")?
        .execute(params![id, status, next])?;
    Ok(FailureRecord {
        attempts,
        status,
        message_id: message_id.unwrap_or_default(),
        subject: subject.unwrap_or_default(),
    })
}

/// Moves the watermark `w` up inside a transaction (see
/// [`Store::advance_watermark`]); whether it changed.
fn advance_in(conn: &rusqlite::Connection, w: &Watermark) -> rusqlite::Result<bool> {
    let changed = conn
        .prepare_cached(
            "INSERT INTO folder_state (account, mailbox, uidvalidity, last_uid) VALUES (?1, ?2, ?3, ?4)
             ON CONFLICT (account, mailbox) DO UPDATE SET last_uid = excluded.last_uid
             WHERE folder_state.uidvalidity = excluded.uidvalidity
               AND folder_state.last_uid < excluded.last_uid",
        )?
        .execute(params![w.account, w.mailbox, w.uidvalidity, w.last_uid])?;
    Ok(changed > 0)
}

/// Writes outcomes whole (see [`Final`]), each with its action rows and,
/// when it moved, where to (for undo).
fn write_finals(tx: &rusqlite::Transaction<'_>, finals: &[Final]) -> Result<()> {
    if finals.is_empty() {
        return Ok(());
    }
    let mut upsert = tx.prepare_cached(
        "INSERT INTO emails (account, mailbox, uidvalidity, uid, message_id, subject, sender,
            processed_at, status, actions, model, reasoning, confidence, error, attempts)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, 1)
         ON CONFLICT (account, mailbox, uidvalidity, uid) DO UPDATE SET
            status = excluded.status, actions = excluded.actions, model = excluded.model,
            reasoning = excluded.reasoning, confidence = excluded.confidence,
            error = excluded.error, processed_at = excluded.processed_at,
            attempts = emails.attempts + 1, next_attempt_at = NULL,
            message_id = CASE WHEN excluded.message_id = '' THEN emails.message_id ELSE excluded.message_id END,
            subject = CASE WHEN excluded.subject = '' THEN emails.subject ELSE excluded.subject END,
            sender = CASE WHEN excluded.sender = '' THEN emails.sender ELSE excluded.sender END
         RETURNING id",
    )?;
    let mut clear = tx.prepare_cached("DELETE FROM actions WHERE email_id = ?1")?;
    let mut act = tx.prepare_cached(
        "INSERT INTO actions (email_id, account, processed_at, type, folder, flags)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
    )?;
    let mut moved = tx.prepare_cached(
        "UPDATE emails SET dest_folder = ?2, dest_uid = ?3,
            orig_flags = coalesce(orig_flags, ?4), undone_at = NULL
         WHERE id = ?1",
    )?;
    let now = now_ms();
    for f in finals {
        let (m, o) = (&f.meta, &f.outcome);
        let actions = actions_json(&o.actions);
        let id: i64 =
            upsert.query_row(m.outcome_row(&now, o, &actions).as_slice(), |r| r.get(0))?;
        clear.execute([id])?;
        insert_actions(&mut act, id, &m.account, now, o)?;
        if let Some(mv) = &f.moved {
            moved.execute(params![
                id,
                mv.dest_folder,
                mv.dest_uid,
                serde_json::to_string(&mv.flags).unwrap_or_else(|_| "[]".into()),
            ])?;
        }
    }
    Ok(())
}

impl Store {
    /// Rows recorded for UIDs of a folder above `after_uid` (they exist when a
    /// run stopped between acting and advancing the watermark), plus rows
    /// waiting for a retry at any UID.
    pub fn known_emails(
        &self,
        account: &str,
        mailbox: &str,
        uidvalidity: u32,
        after_uid: u32,
    ) -> Result<Vec<KnownEmail>> {
        self.op("known_emails", || {
            let conn = self.conn.lock();
            let mut st = conn.prepare_cached(
                "SELECT id, uid, status, actions, model, reasoning, confidence, attempts, next_attempt_at,
                        message_id, subject, sender
                 FROM emails WHERE account = ?1 AND mailbox = ?2 AND uidvalidity = ?3
                   AND (uid > ?4 OR status IN ('pending', 'retrying'))
                 ORDER BY uid",
            )?;
            let rows = st.query_map(params![account, mailbox, uidvalidity, after_uid], |r| {
                Ok(KnownEmail {
                    id: r.get(0)?,
                    uid: r.get(1)?,
                    status: r.get(2)?,
                    actions: parse_actions(&r.get::<_, String>(3)?),
                    model: r.get(4)?,
                    reasoning: r.get(5)?,
                    confidence: r.get(6)?,
                    attempts: r.get(7)?,
                    next_attempt_at: r.get(8)?,
                    message_id: r.get(9)?,
                    subject: r.get(10)?,
                    sender: r.get(11)?,
                })
            })?;
            Ok(rows.collect::<std::result::Result<_, _>>()?)
        })
    }

    /// The accounts whose folders the database keeps watermarks of.
    pub fn accounts_seen(&self) -> Result<Vec<String>> {
        self.op("accounts_seen", || {
            Ok(super::file::accounts_seen(&self.conn.lock())?)
        })
    }

    /// `(uidvalidity, last_uid)` of a watched folder, if it was seen before.
    pub fn folder_state(&self, account: &str, mailbox: &str) -> Result<Option<(u32, u32)>> {
        self.op("folder_state", || {
            Ok(self
                .conn
                .lock()
                .query_row(
                    "SELECT uidvalidity, last_uid FROM folder_state WHERE account = ?1 AND mailbox = ?2",
                    params![account, mailbox],
                    |r| Ok((r.get(0)?, r.get(1)?)),
                )
                .optional()?)
        })
    }

    /// Records decisions before acting on them: each message's row is
    /// written (or rewritten) as `pending` with its decision, so a run that
    /// stops before the outcome is recorded finishes it with that decision
    /// instead of asking the model again, with the message's flags before
    /// it is acted on (what undo restores: a message moved before a crash
    /// is recorded after it from its journal alone). Returns the row ids in
    /// the order of `items`.
    pub fn record_decisions(&self, items: &[Decision]) -> Result<Vec<i64>> {
        self.op("record_decisions", || {
            if crate::failpoint::fails("record-decisions") {
                return Err(StoreError::new("record_decisions", Cause::Injected));
            }
            let mut conn = self.conn.lock();
            let tx = conn.transaction()?;
            let mut ids = Vec::with_capacity(items.len());
            {
                let mut st = tx.prepare_cached(
                    "INSERT INTO emails (account, mailbox, uidvalidity, uid, message_id, subject, sender,
                        processed_at, status, actions, model, reasoning, confidence, error, attempts,
                        orig_flags)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, 'pending', ?9, ?10, ?11, ?12, NULL, 0, ?13)
                     ON CONFLICT (account, mailbox, uidvalidity, uid) DO UPDATE SET
                        status = 'pending', actions = excluded.actions, model = excluded.model,
                        orig_flags = coalesce(emails.orig_flags, excluded.orig_flags),
                        reasoning = excluded.reasoning, confidence = excluded.confidence,
                        processed_at = excluded.processed_at,
                        message_id = CASE WHEN excluded.message_id = '' THEN emails.message_id ELSE excluded.message_id END,
                        subject = CASE WHEN excluded.subject = '' THEN emails.subject ELSE excluded.subject END,
                        sender = CASE WHEN excluded.sender = '' THEN emails.sender ELSE excluded.sender END
                     RETURNING id",
                )?;
                let now = now_ms();
                for (m, o, flags) in items {
                    let flags = serde_json::to_string(flags).unwrap_or_else(|_| "[]".into());
                    let id: i64 = st.query_row(
                        m.row(&[
                            &now,
                            &actions_json(&o.actions),
                            &o.model,
                            &o.reasoning,
                            &o.confidence,
                            &flags,
                        ])
                        .as_slice(),
                        |r| r.get(0),
                    )?;
                    ids.push(id);
                }
            }
            tx.commit()?;
            Ok(ids)
        })
    }

    /// Records outcomes, in one transaction: either all of it is durable or
    /// none. Journalled rows the server finished are made final as
    /// journalled ([`Finished`], set-based: a third of what a whole row
    /// costs); other outcomes are written whole ([`Final`]); failed
    /// attempts wait for a retry or are parked; and the watermark moves up
    /// (never down, see [`Store::advance_watermark`]). Returns what became
    /// of each failed attempt.
    pub fn record_outcomes(&self, o: &Outcomes) -> Result<Vec<FailureRecord>> {
        self.op("record_outcomes", || {
            if o.is_empty() {
                return Ok(Vec::new());
            }
            if crate::failpoint::fails("record-outcomes") {
                return Err(StoreError::new("record_outcomes", Cause::Injected));
            }
            let mut conn = self.conn.lock();
            let tx = conn.transaction()?;
            let mut failed = Vec::with_capacity(o.failures.len());
            for f in &o.failures {
                failed.push(insert_failure(&tx, f)?);
            }
            finish_journalled(&tx, &o.finished)?;
            write_finals(&tx, &o.finals)?;
            if let Some(w) = &o.watermark {
                advance_in(&tx, w)?;
            }
            tx.commit()?;
            Ok(failed)
        })
    }

    /// Moves a folder's watermark up to `w.last_uid`: never down, and never
    /// across generations (a watermark of another UIDVALIDITY than the
    /// stored one is ignored: its UIDs name other messages). A folder seen
    /// for the first time gets `w`. Returns whether anything changed.
    pub fn advance_watermark(&self, w: &Watermark) -> Result<bool> {
        self.op("advance_watermark", || {
            let conn = self.conn.lock();
            Ok(advance_in(&conn, w)?)
        })
    }

    /// A folder's UIDVALIDITY changed from `old_uidvalidity`: its UIDs now
    /// name other messages (or none). In one transaction, rows of the old
    /// generation still `pending` or `retrying` are closed as `failed` with
    /// that reason (they could never be finished, and a due retry that is
    /// never taken up would wake the account again and again), and the
    /// watermark is set to `w` whatever it was: the one write that may move
    /// it down. Returns how many rows were closed.
    pub fn reset_watermark(&self, w: &Watermark, old_uidvalidity: u32) -> Result<usize> {
        self.op("reset_watermark", || {
            let mut conn = self.conn.lock();
            let tx = conn.transaction()?;
            let closed = reset_in(&tx, w, old_uidvalidity)?;
            tx.commit()?;
            Ok(closed)
        })
    }

    /// Inserts a finished activity row as if it had been processed at
    /// `processed_at`; used by benchmarks and tests to build history.
    pub fn insert_history(
        &self,
        meta: &EmailMeta,
        outcome: &Outcome,
        processed_at: i64,
    ) -> Result<i64> {
        self.op("insert_history", || {
            self.insert_history_bulk(&[(meta.clone(), outcome.clone(), processed_at)])
        })
    }

    /// Bulk form of [`Store::insert_history`] in one transaction, for
    /// benchmarks that need 100,000 rows. Returns the id of the last row.
    pub fn insert_history_bulk(&self, rows: &[(EmailMeta, Outcome, i64)]) -> Result<i64> {
        self.op("insert_history_bulk", || {
            let mut last = 0;
            let mut conn = self.conn.lock();
            let tx = conn.transaction()?;
            {
                let mut e = tx.prepare_cached(
                    "INSERT INTO emails (account, mailbox, uidvalidity, uid, message_id, subject, sender,
                        processed_at, status, actions, model, reasoning, confidence, error, attempts)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, 1)",
                )?;
                let mut a = tx.prepare_cached(
                    "INSERT INTO actions (email_id, account, processed_at, type, folder, flags)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                )?;
                for (m, o, at) in rows {
                    let actions = actions_json(&o.actions);
                    e.execute(m.outcome_row(at, o, &actions).as_slice())?;
                    let id = tx.last_insert_rowid();
                    insert_actions(&mut a, id, &m.account, *at, o)?;
                    last = id;
                }
            }
            tx.commit()?;
            Ok(last)
        })
    }
}

/// The writes of a UIDVALIDITY change, inside the caller's transaction
/// ([`Store::reset_watermark`], [`Store::adopt_generation`]): rows of other
/// generations still `pending` or `retrying` are closed as `failed`, naming
/// the change, and the watermark is set to `w`. Returns how many rows were
/// closed.
pub(super) fn reset_in(
    tx: &rusqlite::Transaction,
    w: &Watermark,
    old_uidvalidity: u32,
) -> rusqlite::Result<usize> {
    let closed = tx.execute(
        "UPDATE emails SET status = 'failed', next_attempt_at = NULL,
             error = ?4 || coalesce(' (after: ' || error || ')', '')
         WHERE account = ?1 AND mailbox = ?2 AND uidvalidity != ?3
           AND status IN ('pending', 'retrying')",
        params![
            w.account,
            w.mailbox,
            w.uidvalidity,
            format!(
                "the folder's UIDVALIDITY changed from {old_uidvalidity} to {} \
                 before this message was finished; its UID no longer names it",
                w.uidvalidity
            )
        ],
    )?;
    tx.execute(
        "INSERT INTO folder_state (account, mailbox, uidvalidity, last_uid) VALUES (?1, ?2, ?3, ?4)
         ON CONFLICT (account, mailbox) DO UPDATE SET uidvalidity = excluded.uidvalidity,
             last_uid = excluded.last_uid",
        params![w.account, w.mailbox, w.uidvalidity, w.last_uid],
    )?;
    Ok(closed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::tests::{record_failure, record_final};

    fn meta(uid: u32) -> EmailMeta {
        EmailMeta {
            account: "a".into(),
            mailbox: "INBOX".into(),
            uidvalidity: 7,
            uid,
            ..Default::default()
        }
    }

    fn at(uidvalidity: u32, last_uid: u32) -> Watermark {
        Watermark::new("a", "INBOX", uidvalidity, last_uid)
    }

    #[test]
    fn a_rename_takes_the_watermarks_and_never_moves_one_down() {
        let s = Store::open_in_memory().unwrap();
        assert!(s.advance_watermark(&at(7, 10)).unwrap());
        assert_eq!(s.hand_over("a", "renamed").unwrap().folders, 1);
        assert_eq!(s.folder_state("renamed", "INBOX").unwrap(), Some((7, 10)));
        assert_eq!(s.hand_over("a", "renamed").unwrap().folders, 0);
        // Given back (a → renamed → a), the old name's older watermark
        // moves up to the new name's, never down.
        assert!(s
            .advance_watermark(&Watermark::new("renamed", "INBOX", 7, 14))
            .unwrap());
        assert_eq!(s.hand_over("renamed", "a").unwrap().folders, 1);
        assert_eq!(s.folder_state("a", "INBOX").unwrap(), Some((7, 14)));
        // Moved, not copied: the name renamed from keeps none, so added
        // back by a later change it does not go on from before the rename
        // (the churn audit: what the new name handled was taken again).
        assert_eq!(s.folder_state("renamed", "INBOX").unwrap(), None);
        assert_eq!(s.hand_over("renamed", "a").unwrap().folders, 0);
        assert_eq!(s.folder_state("a", "INBOX").unwrap(), Some((7, 14)));
        // Another UIDVALIDITY is the folder's now: taken as it is.
        assert!(s
            .advance_watermark(&Watermark::new("b", "INBOX", 8, 3))
            .unwrap());
        assert_eq!(s.hand_over("b", "a").unwrap().folders, 1);
        assert_eq!(s.folder_state("a", "INBOX").unwrap(), Some((8, 3)));
    }

    #[test]
    fn the_watermark_never_moves_down() {
        let s = Store::open_in_memory().unwrap();
        assert_eq!(s.folder_state("a", "INBOX").unwrap(), None);
        // First sight sets it, wherever it is.
        assert!(s.advance_watermark(&at(7, 10)).unwrap());
        assert_eq!(s.folder_state("a", "INBOX").unwrap(), Some((7, 10)));
        // Up moves it; down and level do not.
        assert!(s.advance_watermark(&at(7, 12)).unwrap());
        assert!(!s.advance_watermark(&at(7, 11)).unwrap());
        assert!(!s.advance_watermark(&at(7, 12)).unwrap());
        assert!(!s.advance_watermark(&at(7, 0)).unwrap());
        assert_eq!(s.folder_state("a", "INBOX").unwrap(), Some((7, 12)));
        // Nor with an outcome: a late group's lower mark leaves it.
        record_final(&s, &[(meta(3), Outcome::default())], Some(at(7, 3)));
        assert_eq!(s.folder_state("a", "INBOX").unwrap(), Some((7, 12)));
        record_final(&s, &[(meta(20), Outcome::default())], Some(at(7, 20)));
        assert_eq!(s.folder_state("a", "INBOX").unwrap(), Some((7, 20)));
        // Other folders and accounts are their own.
        assert!(s
            .advance_watermark(&Watermark::new("a", "Other", 7, 1))
            .unwrap());
        assert!(s
            .advance_watermark(&Watermark::new("b", "INBOX", 7, 1))
            .unwrap());
        assert_eq!(s.folder_state("a", "INBOX").unwrap(), Some((7, 20)));
    }

    #[test]
    fn another_generation_moves_the_watermark_only_by_an_explicit_reset() {
        let s = Store::open_in_memory().unwrap();
        s.advance_watermark(&at(7, 500)).unwrap();
        // A mark of another UIDVALIDITY names other messages: ignored,
        // higher or lower, alone or with outcomes.
        assert!(!s.advance_watermark(&at(8, 3)).unwrap());
        assert!(!s.advance_watermark(&at(8, 900)).unwrap());
        record_final(&s, &[], Some(at(8, 900)));
        assert_eq!(s.folder_state("a", "INBOX").unwrap(), Some((7, 500)));
        // The reset sets it, down too, and closes the old generation's
        // unfinished rows.
        record_failure(&s, &meta(501), "model down", 5, 0);
        assert_eq!(s.reset_watermark(&at(8, 3), 7).unwrap(), 1);
        assert_eq!(s.folder_state("a", "INBOX").unwrap(), Some((8, 3)));
        // From there, up only again.
        assert!(!s.advance_watermark(&at(8, 2)).unwrap());
        assert!(!s.advance_watermark(&at(7, 600)).unwrap());
        assert!(s.advance_watermark(&at(8, 4)).unwrap());
        assert_eq!(s.folder_state("a", "INBOX").unwrap(), Some((8, 4)));
    }

    #[test]
    fn outcomes_and_watermark_are_one_transaction() {
        let s = Store::open_in_memory().unwrap();
        s.advance_watermark(&at(7, 1)).unwrap();
        // A failing write of the batch leaves the watermark where it was.
        let bad = Outcomes {
            finals: vec![Final::new(meta(2), Outcome::default())],
            failures: vec![FailedAttempt {
                meta: meta(3),
                error: "boom".into(),
                // Parked at once (the trigger below refuses it first).
                max_attempts: 0,
                retry_delay_ms: 0,
            }],
            watermark: Some(at(7, 3)),
            ..Default::default()
        };
        s.conn
            .lock()
            .execute_batch(
                "CREATE TRIGGER no_uid_3 BEFORE INSERT ON emails WHEN new.uid = 3
                 BEGIN SELECT RAISE(ABORT, 'no'); END;",
            )
            .unwrap();
        assert!(s.record_outcomes(&bad).is_err());
        assert_eq!(s.folder_state("a", "INBOX").unwrap(), Some((7, 1)));
        assert!(s.known_emails("a", "INBOX", 7, 0).unwrap().is_empty());
        s.conn
            .lock()
            .execute_batch("DROP TRIGGER no_uid_3")
            .unwrap();
        let r = s.record_outcomes(&bad).unwrap();
        assert_eq!(r[0].status, Status::Failed);
        assert_eq!(s.folder_state("a", "INBOX").unwrap(), Some((7, 3)));
        assert_eq!(s.known_emails("a", "INBOX", 7, 0).unwrap().len(), 2);
    }

    #[test]
    fn a_failing_message_waits_twice_as_long_each_time_and_at_most_a_day() {
        let s = Store::open_in_memory().unwrap();
        let fail = |uid: u32, delay_ms: i64| {
            let before = now_ms();
            let r = s
                .record_outcomes(&Outcomes {
                    failures: vec![FailedAttempt {
                        meta: meta(uid),
                        error: "down".into(),
                        max_attempts: 100,
                        retry_delay_ms: delay_ms,
                    }],
                    ..Default::default()
                })
                .unwrap()
                .remove(0);
            let k = s.known_emails("a", "INBOX", 7, 0).unwrap();
            let k = k.iter().find(|k| k.uid == uid).unwrap();
            let wait = k.next_attempt_at.unwrap() - before;
            (r.attempts, wait)
        };
        let minute = 60_000;
        for n in 1..=4u32 {
            let (attempts, wait) = fail(1, minute);
            assert_eq!(attempts, n);
            let want = minute << (n - 1);
            assert!((want..want + 1_000).contains(&wait), "{n}: {wait}");
        }
        let day = 24 * 3600 * 1000;
        for _ in 0..40 {
            fail(2, minute);
        }
        let (_, wait) = fail(2, minute);
        assert!((day..day + 1_000).contains(&wait), "{wait}");
        // A first wait over a day is a day too.
        let (_, wait) = fail(3, 3 * day);
        assert!((day..day + 1_000).contains(&wait), "{wait}");
    }
}
