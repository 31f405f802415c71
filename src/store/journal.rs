//! The processing record: a message's row is journalled (`pending`) with
//! its decision before the server is asked to act, and made final with its
//! batch and the folder watermark in one transaction.

use rusqlite::{params, OptionalExtension, ToSql};

use super::{
    actions_json, in_op, parse_actions, Cause, MoveRecord, Result, Status, Store, StoreError,
};
use crate::actions::Action;
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

/// The decision about one message, recorded before and after acting on it.
/// (Where a move went, for undo, is recorded with it by
/// `record_confirmed`, or after it by `record_moves`.)
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

/// A row this run journalled, now acted on by the server (see
/// [`Store::record_confirmed`]).
#[derive(Debug, Clone)]
pub struct Confirmed<'a> {
    /// The row id [`Store::record_pending`] returned.
    pub id: i64,
    /// Its actions, as journalled.
    pub actions: &'a [Action],
    /// Where it was moved (its `uid` is unused here).
    pub moved: Option<MoveRecord>,
}

/// A failed attempt at a message, recorded with its batch.
#[derive(Debug, Clone)]
pub struct FailedAttempt {
    pub meta: EmailMeta,
    pub error: String,
    /// Attempts after which the message is parked as `failed`.
    pub max_attempts: u32,
    /// When the next attempt is due (epoch ms) while below the limit; the
    /// delay doubles with each attempt, capped by the caller.
    pub retry_delay_ms: i64,
}

/// What [`Store::record_batch`] did with a failed attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FailureRecord {
    pub attempts: u32,
    pub status: Status,
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
fn action_columns(a: &Action) -> (&'static str, Option<&str>, Option<String>) {
    match a {
        Action::Move { folder } => (a.kind().as_str(), Some(folder.as_str()), None),
        Action::Flag { flags } => (a.kind().as_str(), None, serde_json::to_string(flags).ok()),
        _ => (a.kind().as_str(), None, None),
    }
}

/// Longest wait between two attempts at a message, however often it failed.
const MAX_RETRY_DELAY_MS: i64 = 24 * 3600 * 1000;

/// Upserts a failed attempt inside `tx`: one more attempt, the error, and
/// either a retry due after `retry_delay_ms * 2^(attempts-1)` (at most a
/// day) or, at `max_attempts`, the `failed` status.
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
         RETURNING id, attempts",
    )?;
    let (id, attempts): (i64, u32) = st.query_row(m.row(&[&now, &f.error]).as_slice(), |r| {
        Ok((r.get(0)?, r.get(1)?))
    })?;
    let status = if attempts >= f.max_attempts {
        Status::Failed
    } else {
        Status::Retrying
    };
    let next = (status == Status::Retrying).then(|| {
        let factor = 1i64 << attempts.saturating_sub(1).min(30);
        now.saturating_add(
            f.retry_delay_ms
                .max(0)
                .saturating_mul(factor)
                .min(MAX_RETRY_DELAY_MS),
        )
    });
    tx.prepare_cached("UPDATE emails SET status = ?2, next_attempt_at = ?3 WHERE id = ?1")?
        .execute(params![id, status, next])?;
    Ok(FailureRecord { attempts, status })
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
        in_op("known_emails", || {
            let conn = self.conn.lock();
            let mut st = conn.prepare_cached(
                "SELECT id, uid, status, actions, model, reasoning, confidence, attempts, next_attempt_at
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
                })
            })?;
            Ok(rows.collect::<std::result::Result<_, _>>()?)
        })
    }

    /// Writes (or rewrites) the journal rows of a batch before acting on it.
    /// Returns their row ids in the order of `items`, for
    /// [`Store::record_confirmed`].
    pub fn record_pending(&self, items: &[(EmailMeta, Outcome)]) -> Result<Vec<i64>> {
        in_op("record_pending", || {
            let mut conn = self.conn.lock();
            let tx = conn.transaction()?;
            let mut ids = Vec::with_capacity(items.len());
            {
                let mut st = tx.prepare_cached(
                    "INSERT INTO emails (account, mailbox, uidvalidity, uid, message_id, subject, sender,
                        processed_at, status, actions, model, reasoning, confidence, error, attempts)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, 'pending', ?9, ?10, ?11, ?12, NULL, 0)
                     ON CONFLICT (account, mailbox, uidvalidity, uid) DO UPDATE SET
                        status = 'pending', actions = excluded.actions, model = excluded.model,
                        reasoning = excluded.reasoning, confidence = excluded.confidence,
                        processed_at = excluded.processed_at
                     RETURNING id",
                )?;
                let now = now_ms();
                for (m, o) in items {
                    let id: i64 = st.query_row(
                        m.row(&[
                            &now,
                            &actions_json(&o.actions),
                            &o.model,
                            &o.reasoning,
                            &o.confidence,
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

    /// Makes rows this run journalled final, by their ids, once the server
    /// confirmed their commands: status `ok`, their actions (as journalled),
    /// and where a move took each message (for undo). Set-based, three
    /// statements for the whole group, keeping the journal's `processed_at`
    /// (when the decision was taken): a third of what [`Store::record_batch`]
    /// costs per row, so a backlog's moves are recorded while the next ones
    /// run instead of after the last.
    pub fn record_confirmed(&self, account: &str, rows: &[Confirmed<'_>]) -> Result<()> {
        in_op("record_confirmed", || {
            // [id, dest folder, dest UID, flags before, [[type, folder, flags], ...]]
            let json = serde_json::Value::Array(
                rows.iter()
                    .map(|r| {
                        let (folder, uid, flags) = match &r.moved {
                            Some(m) => (
                                Some(m.dest_folder.as_str()),
                                m.dest_uid,
                                Some(serde_json::json!(m.flags)),
                            ),
                            None => (None, None, None),
                        };
                        let actions: Vec<serde_json::Value> = r
                            .actions
                            .iter()
                            .map(|a| {
                                let (kind, folder, flags) = action_columns(a);
                                serde_json::json!([kind, folder, flags])
                            })
                            .collect();
                        serde_json::json!([r.id, folder, uid, flags, actions])
                    })
                    .collect(),
            )
            .to_string();
            let mut conn = self.conn.lock();
            let tx = conn.transaction()?;
            tx.prepare_cached(
                "UPDATE emails SET status = 'ok', error = NULL, attempts = attempts + 1,
                    next_attempt_at = NULL,
                    dest_folder = coalesce(j.value ->> 1, dest_folder),
                    dest_uid = CASE WHEN j.value ->> 1 IS NULL THEN dest_uid ELSE j.value ->> 2 END,
                    orig_flags = CASE WHEN j.value ->> 1 IS NULL THEN orig_flags ELSE j.value -> 3 END,
                    undone_at = CASE WHEN j.value ->> 1 IS NULL THEN undone_at ELSE NULL END
                 FROM json_each(?1) j WHERE emails.id = j.value ->> 0",
            )?
            .execute([&json])?;
            tx.prepare_cached(
                "DELETE FROM actions WHERE email_id IN (SELECT value ->> 0 FROM json_each(?1))",
            )?
            .execute([&json])?;
            tx.prepare_cached(
                "INSERT INTO actions (email_id, account, processed_at, type, folder, flags)
                 SELECT e.id, ?2, e.processed_at, a.value ->> 0, a.value ->> 1, a.value ->> 2
                 FROM json_each(?1) j JOIN emails e ON e.id = j.value ->> 0, json_each(j.value -> 4) a",
            )?
            .execute(params![json, account])?;
            tx.commit()?;
            Ok(())
        })
    }

    /// Records the final outcome of a batch and advances the folder
    /// watermark, in one transaction: either all of it is durable or none.
    /// Returns the row ids in the order of `items`.
    pub fn record_final(
        &self,
        items: &[(EmailMeta, Outcome)],
        watermark: Option<(&str, &str, u32, u32)>,
    ) -> Result<Vec<i64>> {
        in_op("record_final", || {
            self.record_batch(items, &[], watermark).map(|(ids, _)| ids)
        })
    }

    /// Records a batch in one transaction: the final outcomes, the failed
    /// attempts (each waiting for a retry, or parked as `failed` at its
    /// limit) and the folder watermark. A UID the watermark passes therefore
    /// always has its row: a crash can lose no message between the two.
    /// Returns the row ids of `items` and what became of each failure.
    pub fn record_batch(
        &self,
        items: &[(EmailMeta, Outcome)],
        failures: &[FailedAttempt],
        watermark: Option<(&str, &str, u32, u32)>,
    ) -> Result<(Vec<i64>, Vec<FailureRecord>)> {
        in_op("record_batch", || {
            if crate::failpoint::fails("record-batch") {
                return Err(StoreError::new("record_batch", Cause::Injected));
            }
            let mut conn = self.conn.lock();
            let tx = conn.transaction()?;
            let mut failed = Vec::with_capacity(failures.len());
            for f in failures {
                failed.push(insert_failure(&tx, f)?);
            }
            let mut ids = Vec::with_capacity(items.len());
            {
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
                let now = now_ms();
                for (m, o) in items {
                    let actions = actions_json(&o.actions);
                    let id: i64 = upsert
                        .query_row(m.outcome_row(&now, o, &actions).as_slice(), |r| r.get(0))?;
                    clear.execute([id])?;
                    insert_actions(&mut act, id, &m.account, now, o)?;
                    ids.push(id);
                }
                if let Some((account, mailbox, uidvalidity, last_uid)) = watermark {
                    // (Failures above are already in this transaction.)
                    tx.execute(
                        "INSERT INTO folder_state (account, mailbox, uidvalidity, last_uid) VALUES (?1, ?2, ?3, ?4)
                         ON CONFLICT (account, mailbox) DO UPDATE SET uidvalidity = excluded.uidvalidity,
                            last_uid = max(folder_state.last_uid, excluded.last_uid)",
                        params![account, mailbox, uidvalidity, last_uid],
                    )?;
                }
            }
            tx.commit()?;
            Ok((ids, failed))
        })
    }

    /// Records one failed attempt on its own (see [`Store::record_batch`]).
    pub fn record_failure(
        &self,
        meta: &EmailMeta,
        error: &str,
        max_attempts: u32,
        retry_at: i64,
    ) -> Result<(i64, u32, Status)> {
        in_op("record_failure", || {
            let f = FailedAttempt {
                meta: meta.clone(),
                error: error.to_string(),
                max_attempts,
                retry_delay_ms: retry_at.saturating_sub(now_ms()),
            };
            let mut conn = self.conn.lock();
            let tx = conn.transaction()?;
            let r = insert_failure(&tx, &f)?;
            let id: i64 = tx.query_row(
                "SELECT id FROM emails WHERE account = ?1 AND mailbox = ?2 AND uidvalidity = ?3 AND uid = ?4",
                params![meta.account, meta.mailbox, meta.uidvalidity, meta.uid],
                |r| r.get(0),
            )?;
            tx.commit()?;
            Ok((id, r.attempts, r.status))
        })
    }

    /// A folder's UIDVALIDITY changed: its UIDs now name other messages (or
    /// none). In one transaction, rows of the old generation still `pending`
    /// or `retrying` are closed as `failed` with that reason (they could
    /// never be finished, and a due retry that is never taken up would wake
    /// the account again and again), and the watermark moves to the new
    /// generation. Returns how many rows were closed.
    pub fn restart_folder(
        &self,
        account: &str,
        mailbox: &str,
        old_uidvalidity: u32,
        uidvalidity: u32,
        last_uid: u32,
    ) -> Result<usize> {
        in_op("restart_folder", || {
            let mut conn = self.conn.lock();
            let tx = conn.transaction()?;
            let closed = tx.execute(
                "UPDATE emails SET status = 'failed', next_attempt_at = NULL,
                     error = ?4 || coalesce(' (after: ' || error || ')', '')
                 WHERE account = ?1 AND mailbox = ?2 AND uidvalidity != ?3
                   AND status IN ('pending', 'retrying')",
                params![
                    account,
                    mailbox,
                    uidvalidity,
                    format!(
                        "the folder's UIDVALIDITY changed from {old_uidvalidity} to {uidvalidity} \
                         before this message was finished; its UID no longer names it"
                    )
                ],
            )?;
            tx.execute(
                "INSERT INTO folder_state (account, mailbox, uidvalidity, last_uid) VALUES (?1, ?2, ?3, ?4)
                 ON CONFLICT (account, mailbox) DO UPDATE SET uidvalidity = excluded.uidvalidity,
                     last_uid = excluded.last_uid",
                params![account, mailbox, uidvalidity, last_uid],
            )?;
            tx.commit()?;
            Ok(closed)
        })
    }

    /// Closes as failed the retries of `account` that no pass can take:
    /// their folder is not among `watched`, or their UIDVALIDITY is not the
    /// folder's current one. Returns each closed row's id and the reason.
    pub fn close_orphaned_retries(
        &self,
        account: &str,
        watched: &[String],
    ) -> Result<Vec<(i64, String)>> {
        in_op("close_orphaned_retries", || {
            let mut conn = self.conn.lock();
            let tx = conn.transaction()?;
            let orphans: Vec<(i64, String, Option<u32>, u32)> = {
                let mut st = tx.prepare(
                    "SELECT e.id, e.mailbox, f.uidvalidity, e.uidvalidity FROM emails e
                     LEFT JOIN folder_state f ON f.account = e.account AND f.mailbox = e.mailbox
                     WHERE e.account = ?1 AND e.status = 'retrying'",
                )?;
                let rows = st.query_map([account], |r| {
                    Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?))
                })?;
                rows.collect::<rusqlite::Result<Vec<_>>>()?
            };
            let mut closed = Vec::new();
            for (id, mailbox, current, theirs) in orphans {
                let why = if !watched.contains(&mailbox) {
                    format!("the folder {mailbox:?} is no longer watched")
                } else if current.is_some_and(|c| c != theirs) {
                    format!(
                        "the folder {mailbox:?} has a new UIDVALIDITY; this message's UID no longer names it"
                    )
                } else {
                    continue;
                };
                tx.execute(
                    "UPDATE emails SET status = 'failed', next_attempt_at = NULL,
                         error = ?2 || coalesce(' (after: ' || error || ')', '')
                     WHERE id = ?1",
                    params![id, format!("cannot be retried: {why}")],
                )?;
                closed.push((id, why));
            }
            tx.commit()?;
            Ok(closed)
        })
    }

    /// When the next retry of an account falls due, if any is waiting.
    pub fn next_retry_at(&self, account: &str) -> Result<Option<i64>> {
        in_op("next_retry_at", || {
            Ok(self.conn.lock().query_row(
                "SELECT min(next_attempt_at) FROM emails WHERE status = 'retrying' AND account = ?1",
                [account],
                |r| r.get(0),
            )?)
        })
    }

    /// Puts a failed email back in line for another try (from the API or the
    /// dashboard). Returns its account, or `None` when no failed row has `id`.
    pub fn retry_failed(&self, id: i64) -> Result<Option<String>> {
        in_op("retry_failed", || {
            Ok(self
                .conn
                .lock()
                .query_row(
                    "UPDATE emails SET status = 'retrying', attempts = 0, next_attempt_at = ?2
                     WHERE id = ?1 AND status = 'failed' RETURNING account",
                    params![id, now_ms()],
                    |r| r.get(0),
                )
                .optional()?)
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
        in_op("insert_history", || {
            self.insert_history_bulk(&[(meta.clone(), outcome.clone(), processed_at)])
        })
    }

    /// Bulk form of [`Store::insert_history`] in one transaction, for
    /// benchmarks that need 100,000 rows. Returns the id of the last row.
    pub fn insert_history_bulk(&self, rows: &[(EmailMeta, Outcome, i64)]) -> Result<i64> {
        in_op("insert_history_bulk", || {
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
