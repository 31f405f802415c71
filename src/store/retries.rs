//! What waits for another try: retries that no pass can take closed with
//! their reason, when the next one falls due, and a parked message put
//! back in line. (A failed attempt itself is recorded with its batch, see
//! `journal`.)

use rusqlite::{params, OptionalExtension};

use super::{Result, Store};
use crate::timestamp::now_ms;

impl Store {
    /// Closes as failed the retries of `account` that no pass can take:
    /// their folder is not among `watched`, or their UIDVALIDITY is not the
    /// folder's current one. Returns each closed row's id and the reason.
    pub fn close_orphaned_retries(
        &self,
        account: &str,
        watched: &[String],
    ) -> Result<Vec<(i64, String)>> {
        self.op("close_orphaned_retries", || {
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

    /// Closes as failed the retries of every account not in `configured`:
    /// no worker will take them, and "Being retried" would list them for
    /// ever (an audit). Returns how many, by account.
    pub fn close_retries_of_removed(&self, configured: &[&str]) -> Result<Vec<(String, usize)>> {
        self.op("close_retries_of_removed", || {
            let mut conn = self.conn.lock();
            let tx = conn.transaction()?;
            let accounts: Vec<String> = tx
                .prepare("SELECT DISTINCT account FROM emails WHERE status = 'retrying'")?
                .query_map([], |r| r.get(0))?
                .collect::<rusqlite::Result<_>>()?;
            let mut closed = Vec::new();
            for account in accounts {
                if configured.contains(&account.as_str()) {
                    continue;
                }
                let n = tx.execute(
                    "UPDATE emails SET status = 'failed', next_attempt_at = NULL,
                         error = 'cannot be retried: its account was removed from the configuration'
                             || coalesce(' (after: ' || error || ')', '')
                     WHERE status = 'retrying' AND account = ?1",
                    [&account],
                )?;
                closed.push((account, n));
            }
            tx.commit()?;
            Ok(closed)
        })
    }

    /// When the next retry of an account falls due, if any is waiting.
    pub fn next_retry_at(&self, account: &str) -> Result<Option<i64>> {
        self.op("next_retry_at", || {
            Ok(self.reader().query_row(
                "SELECT min(next_attempt_at) FROM emails WHERE status = 'retrying' AND account = ?1",
                [account],
                |r| r.get(0),
            )?)
        })
    }

    /// Puts every failed email of `account` back in line (the operator's
    /// answer to an outage that parked them all). Returns how many.
    pub fn retry_all_failed(&self, account: &str) -> Result<u64> {
        self.op("retry_all_failed", || {
            let n = self.conn.lock().execute(
                "UPDATE emails SET status = 'retrying', attempts = 0, next_attempt_at = ?2
                 WHERE account = ?1 AND status = 'failed'",
                params![account, now_ms()],
            )?;
            Ok(n as u64)
        })
    }

    /// Puts a failed email back in line for another try (from the API or the
    /// dashboard). Returns its account, or `None` when no failed row has `id`.
    pub fn retry_failed(&self, id: i64) -> Result<Option<String>> {
        self.op("retry_failed", || {
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
}
