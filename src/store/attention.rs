//! What the operator watches: mail that needs a person (failed, for review,
//! undecided), who decided per day, each rule's hits, and each account's
//! last error and last processed mail as they stood before a restart.

use std::collections::BTreeMap;

use rusqlite::{params, OptionalExtension};

use super::{Result, Store};
use crate::timestamp::now_ms;

/// Mail that needs a person, per account (or summed).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Attention {
    pub failed: u64,
    pub review: u64,
    /// Nothing was done to it and no person has seen to it since.
    pub undecided: u64,
}

impl Attention {
    pub fn total(&self) -> u64 {
        self.failed + self.review + self.undecided
    }
}

/// An account's history as the store keeps it across restarts.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AccountNote {
    /// The newest error: of the account (connection, login) or of a failed
    /// message, with when it happened.
    pub last_error: Option<(i64, String)>,
    pub last_processed_at: Option<i64>,
}

impl Store {
    /// Mail that needs a person, per account. Read through the partial
    /// index `emails_attention`, so a large log costs no scan.
    pub fn attention(&self) -> Result<BTreeMap<String, Attention>> {
        self.op("attention", || {
            let conn = self.reader();
            let mut st = conn.prepare_cached(&format!(
                "SELECT e.account, e.status, count(*) FROM emails e INDEXED BY emails_attention
                 WHERE {}
                 GROUP BY e.account, e.status",
                super::activity::ATTENTION
            ))?;
            let mut out: BTreeMap<String, Attention> = BTreeMap::new();
            let rows = st.query_map([], |r| {
                Ok((
                    r.get::<_, String>(0)?,
                    r.get::<_, String>(1)?,
                    r.get::<_, i64>(2)?,
                ))
            })?;
            for row in rows {
                let (account, status, n) = row?;
                let a = out.entry(account).or_default();
                let n = n.max(0) as u64;
                match status.as_str() {
                    "failed" => a.failed += n,
                    "review" => a.review += n,
                    _ => a.undecided += n,
                }
            }
            Ok(out)
        })
    }

    /// Mail per UTC day (days since the epoch) and who decided it (`rule`,
    /// `learned`, `model`, `none`), from `since_day` on, summed over
    /// accounts: from the trigger-kept daily counters.
    pub fn decisions_per_day(&self, since_day: i64) -> Result<Vec<(i64, String, u64)>> {
        self.op("decisions_per_day", || {
            let conn = self.reader();
            let mut st = conn.prepare_cached(
                "SELECT day, substr(key, 5), SUM(n) FROM stats_daily
                 WHERE day >= ?1 AND key LIKE '\\_by:%' ESCAPE '\\'
                 GROUP BY day, key HAVING SUM(n) > 0 ORDER BY day, key",
            )?;
            let rows = st.query_map([since_day], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?;
            Ok(rows.collect::<std::result::Result<_, _>>()?)
        })
    }

    /// Messages each rule of `account` decided since `since_day` (all time
    /// with `None`), by rule name.
    pub fn rule_hits(
        &self,
        account: &str,
        since_day: Option<i64>,
    ) -> Result<BTreeMap<String, u64>> {
        self.op("rule_hits", || {
            let conn = self.reader();
            let mut st = conn.prepare_cached(
                "SELECT substr(key, 7), SUM(n) FROM stats_daily
                 WHERE account = ?1 AND day >= ?2 AND key LIKE '\\_rule:%' ESCAPE '\\'
                 GROUP BY key HAVING SUM(n) > 0",
            )?;
            let rows = st.query_map(params![account, since_day.unwrap_or(i64::MIN)], |r| {
                Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?.max(0) as u64))
            })?;
            Ok(rows.collect::<std::result::Result<_, _>>()?)
        })
    }

    /// Keeps an operator's pause of `account` across restarts of the
    /// service (a paused account starts paused), until a resume.
    pub fn set_account_paused(&self, account: &str, paused: bool) -> Result<()> {
        self.set_setting(&format!("paused:{account}"), if paused { "1" } else { "0" })
    }

    /// Forgets the pause of every account not in `configured`: one removed
    /// while the service was down (the second regression audit found it
    /// paused again, silently, once re-added and restarted).
    pub fn forget_pauses_except(&self, configured: &[&str]) -> Result<usize> {
        self.op("forget_pauses_except", || {
            let conn = self.conn.lock();
            let keys: Vec<String> = conn
                .prepare("SELECT key FROM settings WHERE key LIKE 'paused:%'")?
                .query_map([], |r| r.get(0))?
                .collect::<std::result::Result<_, _>>()?;
            let mut n = 0;
            for k in keys {
                if !configured.contains(&&k["paused:".len()..]) {
                    n += conn.execute("DELETE FROM settings WHERE key = ?1", [&k])?;
                }
            }
            Ok(n)
        })
    }

    /// Whether the operator left `account` paused.
    pub fn account_paused(&self, account: &str) -> Result<bool> {
        Ok(self.setting(&format!("paused:{account}"))?.as_deref() == Some("1"))
    }

    /// Keeps an account's error (connection, login, store) across restarts.
    pub fn set_account_error(&self, account: &str, error: &str) -> Result<()> {
        self.op("set_account_error", || {
            self.conn.lock().execute(
                "INSERT INTO account_state (account, last_error, last_error_at) VALUES (?1, ?2, ?3)
                 ON CONFLICT (account) DO UPDATE SET last_error = excluded.last_error,
                    last_error_at = excluded.last_error_at",
                params![account, error, now_ms()],
            )?;
            Ok(())
        })
    }

    /// The last error and last processed mail of `account` as recorded:
    /// two index look-ups and the account's row.
    pub fn account_note(&self, account: &str) -> Result<AccountNote> {
        self.op("account_note", || {
            let conn = self.reader();
            // An undo's or a correction's own row is no mail processed (an
            // audit found an undo moving `lastProcessedAt`), nor is a failed
            // attempt (another found an account whose every message failed
            // looking current); the index walks back from the newest row to
            // the first that is.
            let last_processed_at: Option<i64> = conn
                .prepare_cached(
                    "SELECT processed_at FROM emails
                     WHERE account = ?1 AND model NOT IN ('undo', 'correction')
                       AND status IN ('ok', 'dry_run', 'review')
                     ORDER BY processed_at DESC LIMIT 1",
                )?
                .query_row([account], |r| r.get(0))
                .optional()?;
            let kept: Option<(i64, String)> = conn
                .prepare_cached(
                    "SELECT last_error_at, last_error FROM account_state
                     WHERE account = ?1 AND last_error IS NOT NULL",
                )?
                .query_row([account], |r| Ok((r.get(0)?, r.get(1)?)))
                .optional()?;
            let failed: Option<(i64, String)> = conn
                .prepare_cached(
                    "SELECT processed_at, error FROM emails
                     WHERE status IN ('failed', 'retrying') AND account = ?1 AND error IS NOT NULL
                     ORDER BY processed_at DESC LIMIT 1",
                )?
                .query_row([account], |r| Ok((r.get(0)?, r.get(1)?)))
                .optional()?;
            let last_error = match (kept, failed) {
                (Some(a), Some(b)) => Some(if a.0 >= b.0 { a } else { b }),
                (a, b) => a.or(b),
            };
            Ok(AccountNote {
                last_error,
                last_processed_at,
            })
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::actions::Action;
    use crate::store::{EmailMeta, Outcome, Status};

    #[test]
    fn a_pause_is_kept_until_a_resume_or_the_account_is_gone() {
        let s = Store::open_in_memory().unwrap();
        assert!(!s.account_paused("a").unwrap());
        s.set_account_paused("a", true).unwrap();
        s.set_account_paused("b", true).unwrap();
        assert!(s.account_paused("a").unwrap());
        s.set_account_paused("a", false).unwrap();
        assert!(!s.account_paused("a").unwrap());
        s.set_account_paused("a", true).unwrap();
        // `b` removed while the service was down: forgotten at the start.
        assert_eq!(s.forget_pauses_except(&["a"]).unwrap(), 1);
        assert!(s.account_paused("a").unwrap());
        assert!(!s.account_paused("b").unwrap());
    }

    fn meta(uid: u32) -> EmailMeta {
        EmailMeta {
            account: "a".into(),
            mailbox: "INBOX".into(),
            uidvalidity: 7,
            uid,
            message_id: format!("<m{uid}@x>"),
            subject: format!("Subject {uid}"),
            from: "s@x".into(),
        }
    }

    fn outcome(model: &str, actions: Vec<Action>, status: Status) -> Outcome {
        Outcome {
            status,
            actions,
            model: model.into(),
            ..Default::default()
        }
    }

    #[test]
    fn attention_who_decided_and_rule_hits() {
        let s = Store::open_in_memory().unwrap();
        let day = now_ms() / 86_400_000;
        let mv = || vec![Action::Move { folder: "F".into() }];
        let rows = [
            (1, outcome("rules:lists", mv(), Status::Ok)),
            (2, outcome("rules:lists", mv(), Status::Ok)),
            (3, outcome("rules:bulk", mv(), Status::Ok)),
            (4, outcome("learned", mv(), Status::Ok)),
            (5, outcome("smol", vec![], Status::Ok)),
            (6, outcome("none", vec![], Status::Ok)),
            (7, outcome("smol", mv(), Status::Review)),
            (8, outcome("undo", vec![], Status::Ok)),
            (10, outcome("learned", vec![], Status::Ok)),
            (11, outcome("smol", mv(), Status::Review)),
        ];
        for (uid, o) in &rows {
            s.insert_history(&meta(*uid), o, now_ms()).unwrap();
        }
        crate::store::tests::record_failure(&s, &meta(9), "model down", 1, 0);
        // The user moved the second message for review: it is done.
        s.conn
            .lock()
            .execute("UPDATE emails SET corrected_to = 'F' WHERE uid = 11", [])
            .unwrap();
        // Found by an audit: what a model (5) or the classifier (10) chose
        // to keep where it was counted as undecided, and a message for
        // review stayed there after it was moved. Only 6 is undecided.
        let a = s.attention().unwrap()["a"];
        assert_eq!(
            a,
            Attention {
                failed: 1,
                review: 1,
                undecided: 1
            }
        );
        let listed = |undecided: bool, status: Option<Status>| {
            let q = crate::store::ActivityQuery {
                page: 1,
                page_size: 10,
                open: true,
                undecided,
                status,
                ..Default::default()
            };
            let rows = s.activity(&q).unwrap().0;
            rows.iter().map(|e| e.uid).collect::<Vec<_>>()
        };
        assert_eq!(listed(true, None), [6]);
        assert_eq!(listed(false, Some(Status::Review)), [7]);
        let by: BTreeMap<String, u64> = s
            .decisions_per_day(day - 1)
            .unwrap()
            .into_iter()
            .map(|(_, k, n)| (k, n))
            .collect();
        assert_eq!(
            by,
            BTreeMap::from([
                ("learned".into(), 2),
                ("model".into(), 3),
                ("none".into(), 1),
                ("rule".into(), 3)
            ])
        );
        let hits = s.rule_hits("a", Some(day)).unwrap();
        assert_eq!(
            hits,
            BTreeMap::from([("bulk".into(), 1), ("lists".into(), 2)])
        );
        // The undo's own row is not mail processed.
        assert_eq!(s.stats(None, None).unwrap().total_processed, 9);
        assert!(s
            .stats(None, None)
            .unwrap()
            .by_action
            .keys()
            .all(|k| !k.starts_with('_')));
        // Deleting rows takes their counts out again (then undone)...
        s.test_sql("SAVEPOINT gone; DELETE FROM emails;");
        assert!(s.rule_hits("a", None).unwrap().is_empty());
        assert!(s.decisions_per_day(0).unwrap().is_empty());
        s.test_sql("ROLLBACK TO gone; RELEASE gone;");
        // ...but retention prunes the rows, not the counts.
        std::thread::sleep(std::time::Duration::from_millis(5));
        s.prune(std::time::Duration::ZERO, &["a"]).unwrap();
        assert_eq!(s.rule_hits("a", Some(day)).unwrap(), hits);
        assert_eq!(s.stats(None, None).unwrap().total_processed, 9);
    }

    #[test]
    fn an_undo_a_correction_or_a_failure_is_no_mail_processed() {
        let s = Store::open_in_memory().unwrap();
        s.test_sql(
            "INSERT INTO emails (account, mailbox, uidvalidity, uid, sender, processed_at, status, model)
             VALUES ('a', 'INBOX', 1, 1, 'x@example.test', 1000, 'ok', 'rules:x'),
                    ('a', 'INBOX', 1, 2, 'x@example.test', 2000, 'ok', 'undo'),
                    ('a', 'Junk', 1, 3, 'x@example.test', 3000, 'ok', 'correction'),
                    ('b', 'INBOX', 1, 1, 'x@example.test', 4000, 'ok', 'undo'),
                    ('a', 'INBOX', 1, 4, 'x@example.test', 5000, 'failed', 'm'),
                    ('a', 'INBOX', 1, 5, 'x@example.test', 6000, 'retrying', 'm'),
                    ('a', 'INBOX', 1, 6, 'x@example.test', 7000, 'pending', 'm');",
        );
        assert_eq!(s.account_note("a").unwrap().last_processed_at, Some(1000));
        assert_eq!(s.account_note("b").unwrap().last_processed_at, None);
    }

    #[test]
    fn the_last_error_is_the_newest_kept_or_failed() {
        let s = Store::open_in_memory().unwrap();
        assert_eq!(s.account_note("a").unwrap(), AccountNote::default());
        crate::store::tests::record_failure(&s, &meta(1), "model down", 1, 0);
        let n = s.account_note("a").unwrap();
        assert_eq!(n.last_error.unwrap().1, "model down");
        assert_eq!(
            n.last_processed_at, None,
            "a failed attempt processed nothing"
        );
        std::thread::sleep(std::time::Duration::from_millis(5));
        s.set_account_error("a", "login failed").unwrap();
        assert_eq!(
            s.account_note("a").unwrap().last_error.unwrap().1,
            "login failed"
        );
        assert_eq!(s.account_note("b").unwrap(), AccountNote::default());
    }
}
