//! What undo needs of a moved message: where it went, the flags it had, and
//! the record that it was put back.

use rusqlite::{params, OptionalExtension};

use super::{Result, Store};
use crate::timestamp::now_ms;

/// Where one moved message went, and the flags it had before.
#[derive(Debug, Clone, PartialEq)]
pub struct MoveRecord {
    pub uid: u32,
    pub dest_folder: String,
    /// Its UID there, when the server said (COPYUID).
    pub dest_uid: Option<u32>,
    pub flags: Vec<String>,
}

/// A message's RFC822.SIZE and INTERNALDATE (seconds), which MOVE and
/// COPY keep.
pub type Stamp = (u32, i64);

/// An undo journalled before its move and not recorded yet.
pub struct PendingUndo {
    /// The activity entry undone.
    pub entry: i64,
    /// Its message's size and date before the move back.
    pub stamp: Option<Stamp>,
    /// The UIDNEXT of the folder it went back to, before the move: the
    /// message put back is at or past it, a look-alike that came before
    /// below it.
    pub uid_next: Option<u32>,
}

/// An activity entry as undo sees it.
#[derive(Debug, Clone, PartialEq)]
pub struct UndoTarget {
    pub id: i64,
    pub account: String,
    pub mailbox: String,
    pub uidvalidity: u32,
    pub message_id: String,
    pub subject: String,
    pub from: String,
    pub status: super::Status,
    pub dest_folder: Option<String>,
    pub dest_uid: Option<u32>,
    /// `None` for a row recorded before undo existed.
    pub flags: Option<Vec<String>>,
    pub undone_at: Option<i64>,
    /// A person moved it ("Move to…") since it was decided.
    pub corrected: bool,
    /// Where a person put it since (`""`: deleted it), by "Move to…" or
    /// with their own mail client.
    pub corrected_to: Option<String>,
}

/// Whether the user moved (or deleted) the message with their own mail
/// client after mailproc, or "Move to…", last put it in `dest_folder`:
/// then it is not where undo would look, and the user's choice stands (an
/// audit found Undo offered for such entries, and always refused).
pub fn moved_by_the_user(corrected_to: Option<&str>, dest_folder: Option<&str>) -> bool {
    corrected_to.is_some_and(|c| Some(c) != dest_folder)
}

impl UndoTarget {
    /// Why this entry cannot be undone, if it cannot: read before the
    /// account is asked (a disconnected account answers 503 for what could
    /// never be undone otherwise), and again on its session.
    pub fn why_not_undoable(&self) -> Option<&'static str> {
        // A person's "Move to…" of mail that was left in place (for
        // review, say) is undone as any move is (an audit found no way
        // back for a wrong click).
        if moved_by_the_user(self.corrected_to.as_deref(), self.dest_folder.as_deref()) {
            Some("the user has moved or deleted it since, with their mail client; their choice stands")
        } else if self.status != super::Status::Ok && !self.corrected {
            Some("only a message that was acted on can be undone")
        } else if self.dest_folder.is_none() {
            Some("the message was not moved")
        } else if self.undone_at.is_some() {
            Some("already undone")
        } else if self.flags.is_none() {
            Some("moved before undo was recorded")
        } else {
            None
        }
    }
}

impl Store {
    pub fn undo_target(&self, id: i64) -> Result<Option<UndoTarget>> {
        self.op("undo_target", || {
            Ok(self
                .conn
                .lock()
                .query_row(
                    "SELECT id, account, mailbox, uidvalidity, message_id, subject, sender, status,
                        dest_folder, dest_uid, orig_flags, undone_at, coalesce(corrected_to, '') != '',
                        corrected_to
                     FROM emails WHERE id = ?1",
                    [id],
                    |r| {
                        let status: String = r.get(7)?;
                        let flags: Option<String> = r.get(10)?;
                        Ok(UndoTarget {
                            id: r.get(0)?,
                            account: r.get(1)?,
                            mailbox: r.get(2)?,
                            uidvalidity: r.get(3)?,
                            message_id: r.get(4)?,
                            subject: r.get(5)?,
                            from: r.get(6)?,
                            status: super::Status::parse(&status).unwrap_or(super::Status::Failed),
                            dest_folder: r.get(8)?,
                            dest_uid: r.get(9)?,
                            flags: flags.and_then(|f| serde_json::from_str(&f).ok()),
                            undone_at: r.get(11)?,
                            corrected: r.get(12)?,
                            corrected_to: r.get(13)?,
                        })
                    },
                )
                .optional()?)
        })
    }

    /// Records an undo: the entry is marked undone (and no longer
    /// corrected: an undo after a "Move to…" puts the message back where it
    /// arrived, and the entry must not go on naming the folder it left),
    /// and the message, back in its folder under `new_uid` (the UID the
    /// server gave it), gets a row of its own (model `undo`) so the account
    /// does not process it again.
    /// Written by the account's thread right after the move, before its
    /// next pass. Returns that row's id.
    pub fn record_undo(&self, t: &UndoTarget, uidvalidity: u32, new_uid: u32) -> Result<i64> {
        self.op("record_undo", || {
            let mut conn = self.conn.lock();
            let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
            let now = now_ms();
            tx.execute(
                "UPDATE emails SET undone_at = ?2, corrected_to = NULL WHERE id = ?1",
                params![t.id, now],
            )?;
            tx.execute("DELETE FROM undo_pending WHERE entry = ?1", [t.id])?;
            let id: i64 = tx.query_row(
                "INSERT INTO emails (account, mailbox, uidvalidity, uid, message_id, subject, sender,
                    processed_at, status, actions, model, reasoning, attempts)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, 'ok', '[]', 'undo', ?9, 1)
                 ON CONFLICT (account, mailbox, uidvalidity, uid) DO UPDATE SET
                    processed_at = excluded.processed_at, reasoning = excluded.reasoning
                 RETURNING id",
                params![
                    t.account,
                    t.mailbox,
                    uidvalidity,
                    new_uid,
                    t.message_id,
                    t.subject,
                    t.from,
                    now,
                    format!(
                        "put back from {} by undo of activity {}",
                        t.dest_folder.as_deref().unwrap_or("?"),
                        t.id
                    ),
                ],
                |r| r.get(0),
            )?;
            tx.commit()?;
            Ok(id)
        })
    }

    /// Journals the undo of entry `t` before its move: should the process
    /// or the session end between the move and [`Store::record_undo`], the
    /// account's next pass finishes it (`Runner::finish_undos`) before it
    /// could take the message put back for new mail. `stamp`: the
    /// message's RFC822.SIZE and INTERNALDATE (seconds), and `uid_next` the
    /// UIDNEXT of the folder it goes back to, when known.
    pub fn begin_undo(
        &self,
        t: &UndoTarget,
        stamp: Option<Stamp>,
        uid_next: Option<u32>,
    ) -> Result<()> {
        self.op("begin_undo", || {
            self.conn.lock().execute(
                "INSERT OR REPLACE INTO undo_pending
                    (entry, account, since, size, internal_date, uid_next)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                params![
                    t.id,
                    t.account,
                    now_ms(),
                    stamp.map(|s| s.0),
                    stamp.map(|s| s.1),
                    uid_next
                ],
            )?;
            Ok(())
        })
    }

    /// The undo of entry `id` did not move its message (refused), or is
    /// finished otherwise: nothing to finish.
    pub fn end_undo(&self, id: i64) -> Result<()> {
        self.op("end_undo", || {
            self.conn
                .lock()
                .execute("DELETE FROM undo_pending WHERE entry = ?1", [id])?;
            Ok(())
        })
    }

    /// The undos of `account` journalled and not recorded, as
    /// [`Store::begin_undo`] journalled them.
    pub fn pending_undos(&self, account: &str) -> Result<Vec<PendingUndo>> {
        self.op("pending_undos", || {
            let conn = self.conn.lock();
            let mut st = conn.prepare(
                "SELECT entry, size, internal_date, uid_next FROM undo_pending
                 WHERE account = ?1 ORDER BY entry",
            )?;
            let rows = st.query_map([account], |r| {
                let size: Option<u32> = r.get(1)?;
                let date: Option<i64> = r.get(2)?;
                Ok(PendingUndo {
                    entry: r.get(0)?,
                    stamp: size.zip(date),
                    uid_next: r.get(3)?,
                })
            })?;
            Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
        })
    }

    /// Of `uids` in `folder`, those that a record of the account names as
    /// where it put a message (its `dest_uid`), other than the record of
    /// `own` (`mailbox`, `uidvalidity`, `uid`): a copy another message
    /// already owns is not this one's, however alike the two are.
    pub fn dest_uids_taken(
        &self,
        account: &str,
        folder: &str,
        uids: &[u32],
        own: (&str, u32, u32),
    ) -> Result<std::collections::HashSet<u32>> {
        self.op("dest_uids_taken", || {
            let conn = self.reader();
            let mut st = conn.prepare_cached(
                "SELECT dest_uid FROM emails
                 WHERE account = ?1 AND dest_folder = ?2
                   AND dest_uid IN (SELECT value FROM json_each(?3))
                   AND NOT (mailbox = ?4 AND uidvalidity = ?5 AND uid = ?6)",
            )?;
            let list = serde_json::to_string(uids).unwrap_or_else(|_| "[]".into());
            let rows = st.query_map(params![account, folder, list, own.0, own.1, own.2], |r| {
                r.get::<_, u32>(0)
            })?;
            Ok(rows.collect::<rusqlite::Result<_>>()?)
        })
    }

    /// Moves of the account since `since_ms` not yet undone, whose
    /// destination UID is known: `(id, dest_folder, dest_uid)`. Those
    /// mailproc made and no one corrected, and those a person made with
    /// "Move to…" (`corrected_to` is where it went): the user moving one of
    /// them on with their own mail client is a correction too (the
    /// regression audit found Undo offered, and refused, for such a
    /// message, and the user's folder never learned).
    pub fn moves_to_check(&self, account: &str, since_ms: i64) -> Result<Vec<(i64, String, u32)>> {
        self.op("moves_to_check", || {
            let conn = self.reader();
            let mut st = conn.prepare(
                "SELECT id, dest_folder, dest_uid FROM emails
                 WHERE account = ?1 AND processed_at >= ?2 AND dest_uid IS NOT NULL
                   AND undone_at IS NULL
                   AND ((corrected_to IS NULL AND status = 'ok') OR corrected_to = dest_folder)",
            )?;
            let rows = st.query_map(params![account, since_ms], |r| {
                Ok((r.get(0)?, r.get(1)?, r.get(2)?))
            })?;
            Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
        })
    }

    /// Records that the user moved the message of entry `id` to `folder`
    /// (`None`: it is gone, deleted). When it went to a watched folder,
    /// `arrived` is its place there, recorded so the account does not
    /// process it again.
    pub fn record_correction(
        &self,
        t: &UndoTarget,
        folder: Option<&str>,
        arrived: Option<(u32, u32)>,
    ) -> Result<()> {
        self.op("record_correction", || {
            let mut conn = self.conn.lock();
            let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
            tx.execute(
                "UPDATE emails SET corrected_to = ?2 WHERE id = ?1",
                params![t.id, folder.unwrap_or("")],
            )?;
            if let (Some(f), Some((uidvalidity, uid))) = (folder, arrived) {
                tx.execute(
                    "INSERT INTO emails (account, mailbox, uidvalidity, uid, message_id, subject, sender,
                        processed_at, status, actions, model, reasoning, attempts)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, 'ok', '[]', 'correction', ?9, 1)
                     ON CONFLICT (account, mailbox, uidvalidity, uid) DO NOTHING",
                    params![
                        t.account,
                        f,
                        uidvalidity,
                        uid,
                        t.message_id,
                        t.subject,
                        t.from,
                        now_ms(),
                        format!(
                            "moved by the user from {} (where activity {} put it)",
                            t.dest_folder.as_deref().unwrap_or("?"),
                            t.id
                        ),
                    ],
                )?;
            }
            tx.commit()?;
            Ok(())
        })
    }

    /// The latest corrections of an account, newest first: `(from,
    /// subject, folder the user chose)`, for the model's prompt.
    pub fn latest_corrections(
        &self,
        account: &str,
        n: u32,
    ) -> Result<Vec<(String, String, String)>> {
        self.op("latest_corrections", || {
            let conn = self.reader();
            let mut st = conn.prepare(
                "SELECT sender, subject, CASE WHEN undone_at IS NOT NULL THEN mailbox ELSE corrected_to END
                 FROM emails
                 WHERE account = ?1 AND (undone_at IS NOT NULL OR coalesce(corrected_to, '') != '')
                 ORDER BY coalesce(undone_at, processed_at) DESC LIMIT ?2",
            )?;
            let rows = st.query_map(params![account, n], |r| {
                Ok((r.get(0)?, r.get(1)?, r.get(2)?))
            })?;
            Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
        })
    }
}

impl Store {
    /// Records a "Move to…" of entry `id`: a correction to `folder`, where
    /// the message now is under `uid` (so undo and the corrections pass
    /// find it there). `flags` are its flags before, kept when the entry
    /// has none recorded yet.
    pub fn record_move_to(&self, id: i64, folder: &str, uid: u32, flags: &[String]) -> Result<()> {
        self.op("record_move_to", || {
            let mut conn = self.conn.lock();
            let tx = conn.transaction()?;
            // A `spam` or `trash` action is named by where its move went
            // (`dest_folder`), which this overwrites with the person's
            // folder: the action then read "spam → Newsletters", and the
            // junk folder it really went to was named nowhere (the
            // regression audit). Its folder is written into the action
            // first, while `dest_folder` is still the action's.
            let (actions, dest): (String, Option<String>) = tx.query_row(
                "SELECT actions, CASE WHEN coalesce(corrected_to, '') = '' THEN dest_folder END
                 FROM emails WHERE id = ?1",
                [id],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )?;
            let mut named: serde_json::Value =
                serde_json::from_str(&actions).unwrap_or(serde_json::Value::Array(vec![]));
            crate::actions::name_destinations(&mut named, dest.as_deref(), dest.as_deref());
            tx.execute(
                "UPDATE emails SET corrected_to = ?2, dest_folder = ?2, dest_uid = ?3,
                    orig_flags = coalesce(orig_flags, ?4), undone_at = NULL, actions = ?5
                 WHERE id = ?1",
                params![
                    id,
                    folder,
                    uid,
                    serde_json::to_string(flags).unwrap_or_else(|_| "[]".into()),
                    named.to_string()
                ],
            )?;
            tx.commit()?;
            Ok(())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::moved_by_the_user;

    #[test]
    fn only_a_move_after_mailproc_or_move_to_is_the_users() {
        // Never corrected, or put there by "Move to…": undo looks there.
        assert!(!moved_by_the_user(None, Some("Junk")));
        assert!(!moved_by_the_user(Some("Work"), Some("Work")));
        // Moved elsewhere or deleted with their own mail client.
        assert!(moved_by_the_user(Some("Work"), Some("Junk")));
        assert!(moved_by_the_user(Some(""), Some("Junk")));
    }
}
