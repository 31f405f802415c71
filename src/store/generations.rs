//! What the records of a folder's earlier generations (earlier UIDVALIDITY
//! values) say: whether there are any, when they were made, and which
//! Message-IDs they already handled; and the change to a new generation
//! whose unhandled mail is taken up as due retries (see `imap::generation`).

use std::collections::{HashMap, HashSet};

use rusqlite::params;

use super::{EmailMeta, Result, Store, Watermark};
use crate::timestamp::now_ms;

/// The records of a folder under other UIDVALIDITY values than its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Earlier {
    /// When the first of them was made (epoch ms): mail older than that was
    /// in the folder before mailproc handled anything there.
    pub first_at: i64,
    /// When the last of them was made (epoch ms).
    pub last_at: i64,
}

/// When a folder was first seen, and whether `backlog: all` took what was
/// there then.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FirstSight {
    pub at: i64,
    pub all: bool,
}

/// Message-IDs asked about per query (SQLite's default limit of bound
/// parameters is 32,766; this keeps each statement small).
const IDS_PER_QUERY: usize = 500;

impl Store {
    /// The records of `mailbox` under another UIDVALIDITY than
    /// `uidvalidity`, if any. Cheap when there are none (two index look-ups),
    /// which is every pass of a folder whose UIDVALIDITY never changed.
    pub fn earlier_generation(
        &self,
        account: &str,
        mailbox: &str,
        uidvalidity: u32,
    ) -> Result<Option<Earlier>> {
        if !self.has_earlier_generation(account, mailbox, uidvalidity)? {
            return Ok(None);
        }
        self.op("earlier_generation", || {
            let conn = self.conn.lock();
            let (first, last): (Option<i64>, Option<i64>) = conn.query_row(
                "SELECT min(processed_at), max(processed_at) FROM emails
                 WHERE account = ?1 AND mailbox = ?2 AND uidvalidity != ?3",
                params![account, mailbox, uidvalidity],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )?;
            Ok(first
                .zip(last)
                .map(|(first_at, last_at)| Earlier { first_at, last_at }))
        })
    }

    /// Notes when `mailbox` of `account` was first seen (its first
    /// watermark set, or set again for a generation with nothing handled
    /// before it), and whether `backlog: all` took what was there: mail
    /// dated before was there before mailproc could handle anything in it,
    /// unless it was all taken.
    pub fn note_first_sight(&self, account: &str, mailbox: &str, all: bool) -> Result<()> {
        let value = format!("{}{}", now_ms(), if all { " all" } else { "" });
        self.set_setting(&first_sight_key(account, mailbox), &value)
    }

    /// When `mailbox` of `account` was first seen, if this version saw it.
    pub fn first_sight(&self, account: &str, mailbox: &str) -> Result<Option<FirstSight>> {
        Ok(self
            .setting(&first_sight_key(account, mailbox))?
            .and_then(|v| {
                let (at, all) = match v.strip_suffix(" all") {
                    Some(at) => (at.to_string(), true),
                    None => (v, false),
                };
                Some(FirstSight {
                    at: at.parse().ok()?,
                    all,
                })
            }))
    }

    /// Whether `mailbox` has records under another UIDVALIDITY than
    /// `uidvalidity`: two steps along the (account, mailbox, uidvalidity,
    /// uid) index, so cheap enough for every pass.
    pub fn has_earlier_generation(
        &self,
        account: &str,
        mailbox: &str,
        uidvalidity: u32,
    ) -> Result<bool> {
        self.op("has_earlier_generation", || {
            let conn = self.conn.lock();
            // min() and max() alone each take one step along the index.
            let (lo, hi): (Option<u32>, Option<u32>) = conn.query_row(
                "SELECT (SELECT min(uidvalidity) FROM emails WHERE account = ?1 AND mailbox = ?2),
                        (SELECT max(uidvalidity) FROM emails WHERE account = ?1 AND mailbox = ?2)",
                params![account, mailbox],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )?;
            let other = |v: Option<u32>| v.is_some_and(|v| v != uidvalidity);
            Ok(other(lo) || other(hi))
        })
    }

    /// Which of `message_ids` a record of `mailbox` under another
    /// UIDVALIDITY than `uidvalidity` already handled: a record that was
    /// finished (`ok`, `review`, `dry_run`). A record still pending (a
    /// crash with the batch journalled) or failed did not finish its
    /// message: a message it moved has left the folder, and one still
    /// there is processed again. Counting those (as every record with a
    /// decision once did) left a crashed batch unsorted for good after the
    /// folder was rebuilt, its rows failed and not retryable (an audit).
    pub fn handled_earlier(
        &self,
        account: &str,
        mailbox: &str,
        uidvalidity: u32,
        message_ids: &[&str],
    ) -> Result<HashSet<String>> {
        self.op("handled_earlier", || {
            let conn = self.conn.lock();
            let mut out = HashSet::new();
            for chunk in message_ids.chunks(IDS_PER_QUERY) {
                let marks = vec!["?"; chunk.len()].join(", ");
                let mut st = conn.prepare(&format!(
                    "SELECT message_id FROM emails
                     WHERE account = ? AND mailbox = ? AND uidvalidity != ?
                       AND status IN ('ok', 'review', 'dry_run')
                       AND message_id IN ({marks})"
                ))?;
                let mut args: Vec<&dyn rusqlite::ToSql> = vec![&account, &mailbox, &uidvalidity];
                args.extend(chunk.iter().map(|id| id as &dyn rusqlite::ToSql));
                let rows = st.query_map(args.as_slice(), |r| r.get::<_, String>(0))?;
                for id in rows {
                    out.insert(id?);
                }
            }
            Ok(out)
        })
    }
    /// How many records of `mailbox` under another UIDVALIDITY than
    /// `uidvalidity` carry each of `wanted` (subject, sender), of the
    /// finished records without a Message-ID (as in
    /// [`Store::handled_earlier`]): what stands
    /// for a message that has none when a folder comes back. One pass over
    /// those records; only the pairs wanted are counted.
    pub fn handled_earlier_without_id(
        &self,
        account: &str,
        mailbox: &str,
        uidvalidity: u32,
        wanted: &HashSet<(String, String)>,
    ) -> Result<HashMap<(String, String), usize>> {
        if wanted.is_empty() {
            return Ok(HashMap::new());
        }
        self.op("handled_earlier_without_id", || {
            let conn = self.conn.lock();
            let mut st = conn.prepare(
                "SELECT subject, sender FROM emails
                 WHERE account = ?1 AND mailbox = ?2 AND uidvalidity != ?3
                   AND message_id = ''
                   AND status IN ('ok', 'review', 'dry_run')",
            )?;
            let rows = st.query_map(params![account, mailbox, uidvalidity], |r| {
                Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?))
            })?;
            let mut out = HashMap::new();
            for pair in rows {
                let pair = pair?;
                if wanted.contains(&pair) {
                    *out.entry(pair).or_insert(0) += 1;
                }
            }
            Ok(out)
        })
    }
}

impl Store {
    /// A folder's UIDVALIDITY changed from `old` to `uidvalidity`, and
    /// records of the old generation exist. In one transaction, as
    /// [`Store::reset_watermark`] does: rows of other generations still `pending` or
    /// `retrying` are closed as `failed` (their UIDs name other messages
    /// now), and the watermark moves to `last_uid` of the new generation;
    /// and `adopt` (messages of the new generation below it that no record
    /// handled) become rows `retrying`, due now, which the next look at the
    /// folder processes as it does any due retry. Returns how many rows
    /// were closed.
    pub fn adopt_generation(
        &self,
        (account, mailbox): (&str, &str),
        old: u32,
        uidvalidity: u32,
        last_uid: u32,
        adopt: &[EmailMeta],
    ) -> Result<usize> {
        self.op("adopt_generation", || {
            let mut conn = self.conn.lock();
            let tx = conn.transaction()?;
            let closed = super::journal::reset_in(
                &tx,
                &Watermark::new(account, mailbox, uidvalidity, last_uid),
                old,
            )?;
            let now = now_ms();
            {
                let mut st = tx.prepare_cached(
                    "INSERT INTO emails (account, mailbox, uidvalidity, uid, message_id, subject,
                        sender, processed_at, status, attempts, next_attempt_at)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, 'retrying', 0, ?8)
                     ON CONFLICT (account, mailbox, uidvalidity, uid) DO NOTHING",
                )?;
                for m in adopt {
                    st.execute(params![
                        m.account,
                        m.mailbox,
                        m.uidvalidity,
                        m.uid,
                        m.message_id,
                        m.subject,
                        m.from,
                        now
                    ])?;
                }
            }
            tx.commit()?;
            Ok(closed)
        })
    }
}

/// The settings key of a folder's first sight (a unit separator between
/// account and folder, which neither name can hold).
pub(super) fn first_sight_key(account: &str, mailbox: &str) -> String {
    format!("first_sight:{account}\u{1f}{mailbox}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{EmailMeta, Outcome, Status};

    /// A folder's first sight is kept with whether `backlog: all` took
    /// what was there, and a rename takes it with the watermarks (the
    /// fifth regression audit: lost in a rename, and read from the
    /// setting in force now).
    #[test]
    fn a_first_sight_is_kept_and_goes_with_a_rename() {
        let s = Store::open_in_memory().unwrap();
        assert_eq!(s.first_sight("a", "INBOX").unwrap(), None);
        s.note_first_sight("a", "INBOX", false).unwrap();
        s.note_first_sight("a", "Work", true).unwrap();
        s.note_first_sight("ab", "Other", false).unwrap();
        let inbox = s.first_sight("a", "INBOX").unwrap().unwrap();
        assert!(!inbox.all && inbox.at > 0);
        assert!(s.first_sight("a", "Work").unwrap().unwrap().all);
        s.advance_watermark(&Watermark::new("a", "INBOX", 7, 10))
            .unwrap();
        s.hand_over("a", "b").unwrap();
        assert_eq!(s.first_sight("b", "INBOX").unwrap(), Some(inbox));
        assert!(s.first_sight("b", "Work").unwrap().unwrap().all);
        // Moved: `a` added back later starts as a new account would.
        assert_eq!(s.first_sight("a", "INBOX").unwrap(), None);
        assert_eq!(s.first_sight("a", "Work").unwrap(), None);
        assert!(s.first_sight("ab", "Other").unwrap().is_some());
        // `ab` is another account, not a folder of `a`.
        assert_eq!(s.first_sight("b", "Other").unwrap(), None);
        assert_eq!(s.first_sight("bb", "Other").unwrap(), None);
    }

    fn meta(uidvalidity: u32, uid: u32, id: &str) -> EmailMeta {
        EmailMeta {
            account: "a".into(),
            mailbox: "Work".into(),
            uidvalidity,
            uid,
            message_id: id.into(),
            subject: String::new(),
            from: String::new(),
        }
    }

    #[test]
    fn earlier_generations_and_what_they_handled() {
        let s = Store::open_in_memory().unwrap();
        assert_eq!(s.earlier_generation("a", "Work", 7).unwrap(), None);
        let ok = Outcome {
            status: Status::Ok,
            ..Default::default()
        };
        crate::store::tests::record_final(
            &s,
            &[(meta(7, 1, "<a@x>"), ok.clone()), (meta(7, 2, "<b@x>"), ok)],
            None,
        );
        // Its own generation is not an earlier one.
        assert_eq!(s.earlier_generation("a", "Work", 7).unwrap(), None);
        assert_eq!(s.earlier_generation("a", "Other", 9).unwrap(), None);
        let e = s.earlier_generation("a", "Work", 9).unwrap().unwrap();
        assert!(e.first_at <= e.last_at && e.first_at > 0, "{e:?}");
        let handled = s
            .handled_earlier("a", "Work", 9, &["<a@x>", "<c@x>"])
            .unwrap();
        assert_eq!(handled, HashSet::from(["<a@x>".to_string()]));
        assert!(s
            .handled_earlier("a", "Work", 7, &["<a@x>"])
            .unwrap()
            .is_empty());
        let many: Vec<String> = (0..1200).map(|i| format!("<{i}@x>")).collect();
        let mut ids: Vec<&str> = many.iter().map(String::as_str).collect();
        ids.push("<b@x>");
        assert_eq!(s.handled_earlier("a", "Work", 9, &ids).unwrap().len(), 1);

        // The change: the new generation's unhandled message becomes a due
        // retry below the watermark; the folder moves on.
        let closed = s
            .adopt_generation(("a", "Work"), 7, 9, 40, &[meta(9, 3, "<c@x>")])
            .unwrap();
        assert_eq!(closed, 0);
        assert_eq!(s.folder_state("a", "Work").unwrap(), Some((9, 40)));
        let known = s.known_emails("a", "Work", 9, 40).unwrap();
        assert_eq!(known.len(), 1);
        assert_eq!((known[0].uid, known[0].status), (3, Status::Retrying));
        assert!(known[0].next_attempt_at.is_some_and(|t| t <= now_ms()));
        // Again (a pass that did not get further): nothing doubles.
        s.adopt_generation(("a", "Work"), 7, 9, 40, &[meta(9, 3, "<c@x>")])
            .unwrap();
        assert_eq!(s.known_emails("a", "Work", 9, 40).unwrap().len(), 1);
    }
}
