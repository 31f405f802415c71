//! An account renamed on the same mailbox (host, port, user) goes on where
//! the old name stopped. What the old name kept is handed over to the new
//! one in one transaction ([`Store::hand_over`]); a rename that waits for
//! the old name's batch in hand is noted first ([`Store::note_rename`]), so
//! a crash in the wait hands over at the next start instead of starting
//! the new name from nothing (found by an audit: a SIGKILL in the wait
//! left the mail the old name had not reached without a row).

use rusqlite::params;

use super::generations::first_sight_key;
use super::{Result, Store};

/// What a hand-over took.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct HandOver {
    /// Folders whose watermark the new name took (or moved up).
    pub folders: usize,
    /// Records of the old name now under the new one.
    pub records: usize,
    /// Whether the learned classifier came along (the new name had none).
    pub learned: bool,
}

/// The settings key of a rename waiting for its old name's batch.
const RENAMING: &str = "renaming:";

impl Store {
    /// `to`, renamed from `from`, takes over everything `from` kept of the
    /// mailbox, in one transaction:
    ///
    /// * its folders' watermarks (moved: `from` keeps none, so the name
    ///   added back later starts as a new account would), so it goes on
    ///   where `from` stopped. A
    ///   watermark `to` has already (a name given back: `a` → `b` → `a`)
    ///   is moved up to `from`'s, or replaced by it for another
    ///   UIDVALIDITY, never moved down (the second regression audit: the
    ///   older one kept, what `b` had handled was taken again);
    /// * its folders' first sights, moved too (the fifth regression
    ///   audit: lost in a rename, mail was taken for mail from before);
    /// * its records, with their actions, counts and pending undos: what
    ///   was handled stays handled when a folder comes back under another
    ///   UIDVALIDITY, a message waiting for a retry is retried, a failed
    ///   one can be retried and a move undone (an audit found restored
    ///   mail acted on again, and retries left `retrying` for ever, under
    ///   the old name). A record `to` has for the same message stays;
    /// * its learned classifier, when `to` has none;
    /// * the refresh token an OAuth2 provider rotated for it.
    ///
    /// The note of the rename ([`Store::note_rename`]) goes in the same
    /// transaction.
    pub fn hand_over(&self, from: &str, to: &str) -> Result<HandOver> {
        self.op("hand_over", || {
            let mut conn = self.conn.lock();
            let tx = conn.transaction()?;
            tx.execute(
                "INSERT OR IGNORE INTO settings (key, value)
                 SELECT ?2 || substr(key, length(?1) + 1), value FROM settings
                 WHERE substr(key, 1, length(?1)) = ?1",
                params![first_sight_key(from, ""), first_sight_key(to, "")],
            )?;
            let folders = tx.execute(
                "INSERT INTO folder_state (account, mailbox, uidvalidity, last_uid)
                 SELECT ?2, mailbox, uidvalidity, last_uid FROM folder_state WHERE account = ?1
                 ON CONFLICT (account, mailbox) DO UPDATE
                    SET uidvalidity = excluded.uidvalidity, last_uid = excluded.last_uid
                    WHERE folder_state.uidvalidity != excluded.uidvalidity
                       OR folder_state.last_uid < excluded.last_uid",
                params![from, to],
            )?;
            // Handed over, not copied: the old name added back later (a
            // later change) went on from its own watermarks, from before
            // the rename, and took again what the new name had handled
            // (the churn audit). It starts as a new account would.
            tx.execute("DELETE FROM folder_state WHERE account = ?1", [from])?;
            tx.execute(
                "DELETE FROM settings WHERE substr(key, 1, length(?1)) = ?1",
                [first_sight_key(from, "")],
            )?;
            let records = tx.execute(
                "UPDATE OR IGNORE emails SET account = ?2 WHERE account = ?1",
                params![from, to],
            )?;
            // `processed_at` named so the daily counts move with them.
            tx.execute(
                "UPDATE actions SET account = ?2, processed_at = processed_at
                 WHERE account = ?1 AND email_id IN (SELECT id FROM emails WHERE account = ?2)",
                params![from, to],
            )?;
            tx.execute(
                "UPDATE undo_pending SET account = ?2
                 WHERE account = ?1 AND entry IN (SELECT id FROM emails WHERE account = ?2)",
                params![from, to],
            )?;
            let learned: bool = tx.query_row(
                "SELECT EXISTS (SELECT 1 FROM learn_state WHERE account = ?1)
                    AND NOT EXISTS (SELECT 1 FROM learn_state WHERE account = ?2)",
                params![from, to],
                |r| r.get(0),
            )?;
            if learned {
                for table in [
                    "learn_classes",
                    "learn_tokens",
                    "learn_shots",
                    "learn_state",
                ] {
                    tx.execute(
                        &format!("UPDATE OR IGNORE {table} SET account = ?2 WHERE account = ?1"),
                        params![from, to],
                    )?;
                }
            }
            // Counts kept for rows pruned since (retention) go along once
            // no row is left under the old name (an audit found the
            // history split between the names).
            let left: bool = tx.query_row(
                "SELECT EXISTS (SELECT 1 FROM emails WHERE account = ?1)",
                [from],
                |r| r.get(0),
            )?;
            if !left {
                tx.execute(
                    "INSERT INTO stats_daily (day, account, key, n)
                     SELECT day, ?2, key, n FROM stats_daily WHERE account = ?1 AND n != 0
                     ON CONFLICT DO UPDATE SET n = n + excluded.n",
                    params![from, to],
                )?;
                tx.execute("DELETE FROM stats_daily WHERE account = ?1", [from])?;
            }
            // The refresh token a provider rotated is the mailbox's: the
            // same host and user sign in under the new name (an audit
            // found the superseded one from the file used instead).
            // One the new name's row holds from a removed account of its
            // name is not this mailbox's (found by an audit).
            tx.execute(
                "DELETE FROM oauth_tokens WHERE account = ?2
                   AND EXISTS (SELECT 1 FROM oauth_tokens WHERE account = ?1)",
                params![from, to],
            )?;
            tx.execute(
                "UPDATE oauth_tokens SET account = ?2 WHERE account = ?1",
                params![from, to],
            )?;
            tx.execute(
                "DELETE FROM settings WHERE key = ?1",
                [format!("{RENAMING}{from}")],
            )?;
            tx.commit()?;
            Ok(HandOver {
                folders,
                records,
                learned,
            })
        })
    }

    /// Notes that `to` is a rename of `from` waiting for `from`'s batch in
    /// hand: until [`Store::hand_over`] (or [`Store::forget_rename`]), a
    /// start of the service hands over first.
    pub fn note_rename(&self, from: &str, to: &str) -> Result<()> {
        self.set_setting(&format!("{RENAMING}{from}"), to)
    }

    /// A rename noted and taken back before its hand-over.
    pub fn forget_rename(&self, from: &str) -> Result<()> {
        self.op("forget_rename", || {
            self.conn.lock().execute(
                "DELETE FROM settings WHERE key = ?1",
                [format!("{RENAMING}{from}")],
            )?;
            Ok(())
        })
    }

    /// The renames noted and not handed over: (old name, new name).
    pub fn noted_renames(&self) -> Result<Vec<(String, String)>> {
        self.op("noted_renames", || {
            let conn = self.conn.lock();
            let mut st = conn.prepare(
                "SELECT substr(key, length(?1) + 1), value FROM settings
                 WHERE substr(key, 1, length(?1)) = ?1 ORDER BY key",
            )?;
            let rows = st.query_map([RENAMING], |r| Ok((r.get(0)?, r.get(1)?)))?;
            Ok(rows.collect::<rusqlite::Result<_>>()?)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::actions::Action;
    use crate::store::{EmailMeta, Outcome, Status, Watermark};

    fn meta(account: &str, uid: u32, id: &str) -> EmailMeta {
        EmailMeta {
            account: account.into(),
            mailbox: "INBOX".into(),
            uidvalidity: 7,
            uid,
            message_id: id.into(),
            ..Default::default()
        }
    }

    /// The records go with the name: what was handled is found under the
    /// new one, a retry is the new one's, and the counts move with them;
    /// a record the new name has for the same message stays its own.
    /// Marked read by rule `r`.
    fn read() -> Outcome {
        Outcome {
            status: Status::Ok,
            actions: vec![Action::Read],
            model: "rules:r".into(),
            ..Default::default()
        }
    }

    #[test]
    fn a_hand_over_takes_the_records_the_counts_and_the_note() {
        let s = Store::open_in_memory().unwrap();
        let retrying = Outcome {
            status: Status::Retrying,
            error: Some("folder missing".into()),
            ..Default::default()
        };
        let now = crate::timestamp::now_ms();
        s.insert_history_bulk(&[
            (meta("a", 1, "<1@x>"), read(), now),
            (meta("a", 2, "<2@x>"), read(), now),
            (meta("b", 2, "<2@x>"), read(), now),
            (meta("a", 3, "<3@x>"), retrying, now),
        ])
        .unwrap();
        s.advance_watermark(&Watermark::new("a", "INBOX", 7, 3))
            .unwrap();
        s.note_rename("a", "b").unwrap();
        assert_eq!(s.noted_renames().unwrap(), [("a".into(), "b".into())]);

        let took = s.hand_over("a", "b").unwrap();
        assert_eq!((took.folders, took.records), (1, 2), "uid 2 is b's already");
        assert!(s.noted_renames().unwrap().is_empty());
        assert_eq!(s.folder_state("b", "INBOX").unwrap(), Some((7, 3)));
        let handled = s
            .handled_earlier("b", "INBOX", 8, &["<1@x>", "<2@x>", "<3@x>"])
            .unwrap();
        // (`<3@x>` is retrying: not finished, so it vouches for nothing.)
        assert_eq!(handled.len(), 2, "{handled:?}");
        assert!(!handled.contains("<3@x>"), "{handled:?}");
        let stats = s.stats(None, None).unwrap();
        assert_eq!(stats.by_account.get("a"), Some(&1), "{stats:?}");
        assert_eq!(stats.by_account.get("b"), Some(&2), "{stats:?}");
        assert_eq!(stats.by_action.get("read"), Some(&3), "{stats:?}");
        let retrying = |account: &str| {
            let q = crate::store::ActivityQuery {
                account: Some(account.into()),
                status: Some(Status::Retrying),
                page: 1,
                page_size: 10,
                ..Default::default()
            };
            s.activity(&q).unwrap().1
        };
        assert_eq!((retrying("a"), retrying("b")), (0, 1));
    }

    /// Counts of rows pruned since go along when nothing is left under
    /// the old name, and so does a rotated refresh token.
    #[test]
    fn pruned_counts_and_a_rotated_token_go_along() {
        let s = Store::open_in_memory().unwrap();
        let long_ago = crate::timestamp::now_ms() - 400 * 86_400_000;
        s.insert_history_bulk(&[(meta("c", 1, "<1@x>"), read(), long_ago)])
            .unwrap();
        assert_eq!(
            s.prune(std::time::Duration::from_secs(86_400), &["a"])
                .unwrap(),
            1
        );
        s.set_oauth_refresh_token("c", "rotated", "origin").unwrap();
        s.set_oauth_refresh_token("d", "a removed account's", "other")
            .unwrap();
        s.hand_over("c", "d").unwrap();
        let stats = s.stats(None, None).unwrap();
        assert_eq!(stats.by_account.get("c"), None, "{stats:?}");
        assert_eq!(stats.by_account.get("d"), Some(&1), "{stats:?}");
        assert_eq!(
            s.oauth_refresh_token("d").unwrap(),
            Some(("rotated".into(), "origin".into()))
        );
        assert_eq!(s.oauth_refresh_token("c").unwrap(), None);
    }

    #[test]
    fn a_rename_noted_is_forgotten_when_taken_back() {
        let s = Store::open_in_memory().unwrap();
        s.note_rename("a", "b").unwrap();
        s.note_rename("c", "d").unwrap();
        s.forget_rename("a").unwrap();
        assert_eq!(s.noted_renames().unwrap(), [("c".into(), "d".into())]);
    }
}
