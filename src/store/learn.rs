//! The classifier learned from each account's folders (`crate::learn`):
//! its counts, and per account how it was made.

use std::collections::BTreeMap;

use rusqlite::{params, OptionalExtension};

use super::{Result, Store};
use crate::learn::{ClassCounts, Shot, Shots, MAX_SHOTS};
use crate::timestamp::now_ms;

/// How an account's classifier was made.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LearnState {
    /// Bumped by each full training (a running account then reloads).
    pub generation: i64,
    /// When `mailproc train` (or the Train button) last finished (ISO
    /// 8601 on the wire, as every time the API gives).
    #[serde(serialize_with = "crate::timestamp::serialize_opt_iso")]
    pub trained_at: Option<i64>,
    /// Messages that training read.
    pub trained_examples: i64,
    /// Messages learned since, from processing.
    pub learned_examples: i64,
    /// Corrections learned (a message moved out of the folder mailproc
    /// chose).
    pub corrections: i64,
}

impl Store {
    pub fn learn_state(&self, account: &str) -> Result<LearnState> {
        self.op("learn_state", || {
            Ok(self
                .conn
                .lock()
                .query_row(
                    "SELECT generation, trained_at, trained_examples, learned_examples, corrections
                     FROM learn_state WHERE account = ?1",
                    [account],
                    |r| {
                        Ok(LearnState {
                            generation: r.get(0)?,
                            trained_at: r.get(1)?,
                            trained_examples: r.get(2)?,
                            learned_examples: r.get(3)?,
                            corrections: r.get(4)?,
                        })
                    },
                )
                .optional()?
                .unwrap_or_default())
        })
    }

    /// The stored counts of an account's classifier, by class.
    pub fn learn_counts(&self, account: &str) -> Result<BTreeMap<String, ClassCounts>> {
        self.op("learn_counts", || {
            let conn = self.reader();
            let mut out: BTreeMap<String, ClassCounts> = BTreeMap::new();
            let mut st =
                conn.prepare("SELECT class, docs, total FROM learn_classes WHERE account = ?1")?;
            let rows = st.query_map([account], |r| {
                Ok((
                    r.get::<_, String>(0)?,
                    r.get::<_, i64>(1)?,
                    r.get::<_, i64>(2)?,
                ))
            })?;
            for row in rows {
                let (class, docs, total) = row?;
                let c = out.entry(class).or_default();
                c.docs = docs.max(0) as u64;
                c.total = total.max(0) as u64;
            }
            let mut st =
                conn.prepare("SELECT class, token, n FROM learn_tokens WHERE account = ?1")?;
            let rows = st.query_map([account], |r| {
                Ok((
                    r.get::<_, String>(0)?,
                    r.get::<_, String>(1)?,
                    r.get::<_, i64>(2)?,
                ))
            })?;
            for row in rows {
                let (class, token, n) = row?;
                if n > 0 {
                    out.entry(class).or_default().tokens.insert(token, n as u64);
                }
            }
            Ok(out)
        })
    }

    /// The stored examples of an account, oldest first.
    pub fn learn_shots(&self, account: &str) -> Result<Shots> {
        self.op("learn_shots", || {
            let conn = self.reader();
            let mut st = conn.prepare(
                "SELECT class, sender, subject FROM learn_shots WHERE account = ?1 ORDER BY id",
            )?;
            let rows = st.query_map([account], |r| {
                Ok(Shot {
                    class: r.get(0)?,
                    sender: r.get(1)?,
                    subject: r.get(2)?,
                })
            })?;
            let mut shots = Shots::default();
            for row in rows {
                shots.push(row?);
            }
            Ok(shots)
        })
    }

    /// Replaces an account's classifier with a freshly trained one and
    /// bumps its generation.
    pub fn learn_replace(
        &self,
        account: &str,
        classes: &BTreeMap<String, ClassCounts>,
        shots: &Shots,
        examples: u64,
    ) -> Result<()> {
        self.op("learn_replace", || {
            let mut conn = self.conn.lock();
            let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
            tx.execute("DELETE FROM learn_classes WHERE account = ?1", [account])?;
            tx.execute("DELETE FROM learn_tokens WHERE account = ?1", [account])?;
            tx.execute("DELETE FROM learn_shots WHERE account = ?1", [account])?;
            {
                let mut sh = tx.prepare(
                    "INSERT INTO learn_shots (account, class, sender, subject) VALUES (?1, ?2, ?3, ?4)",
                )?;
                for shot in shots.iter() {
                    sh.execute(params![account, shot.class, shot.sender, shot.subject])?;
                }
            }
            {
                let mut cl = tx.prepare(
                    "INSERT INTO learn_classes (account, class, docs, total) VALUES (?1, ?2, ?3, ?4)",
                )?;
                let mut tk = tx.prepare(
                    "INSERT INTO learn_tokens (account, class, token, n) VALUES (?1, ?2, ?3, ?4)",
                )?;
                for (class, c) in classes {
                    cl.execute(params![account, class, c.docs as i64, c.total as i64])?;
                    for (token, n) in &c.tokens {
                        tk.execute(params![account, class, token, *n as i64])?;
                    }
                }
            }
            tx.execute(
                "INSERT INTO learn_state (account, generation, trained_at, trained_examples)
                 VALUES (?1, 1, ?2, ?3)
                 ON CONFLICT (account) DO UPDATE SET generation = generation + 1,
                     trained_at = excluded.trained_at, trained_examples = excluded.trained_examples,
                     learned_examples = 0, corrections = 0",
                params![account, now_ms(), examples as i64],
            )?;
            tx.commit()?;
            Ok(())
        })
    }

    /// Adds examples learned while processing (`sign` -1 takes one back, as
    /// a correction does with the folder that was wrong). `corrections`
    /// counts how many of the -1 examples are corrections (each paired
    /// with a +1, one message learned); the other -1 examples take back a
    /// message learned before (one fewer learned); `reload` bumps the
    /// generation, so the account (which did not learn them itself)
    /// reloads its classifier.
    pub fn learn_add(
        &self,
        account: &str,
        examples: &[(&str, &[String], i64)],
        corrections: i64,
        reload: bool,
    ) -> Result<()> {
        self.op("learn_add", || {
            let mut conn = self.conn.lock();
            let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
            let mut learned = 0i64;
            {
                let mut cl = tx.prepare(
                    "INSERT INTO learn_classes (account, class, docs, total) VALUES (?1, ?2, max(?3, 0), 0)
                     ON CONFLICT DO UPDATE SET docs = max(docs + ?3, 0)",
                )?;
                let mut tk = tx.prepare(
                    "INSERT INTO learn_tokens (account, class, token, n) VALUES (?1, ?2, ?3, max(?4, 0))
                     ON CONFLICT DO UPDATE SET n = max(n + ?4, 0)",
                )?;
                let mut add_shot = tx.prepare(
                    "INSERT INTO learn_shots (account, class, sender, subject) VALUES (?1, ?2, ?3, ?4)",
                )?;
                let mut take_shot = tx.prepare(
                    "DELETE FROM learn_shots WHERE id = (SELECT max(id) FROM learn_shots
                         WHERE account = ?1 AND class = ?2 AND sender = ?3 AND subject = ?4)",
                )?;
                let mut trim = tx.prepare(
                    "DELETE FROM learn_shots WHERE account = ?1 AND class = ?2 AND id <= coalesce(
                         (SELECT id FROM learn_shots WHERE account = ?1 AND class = ?2
                          ORDER BY id DESC LIMIT 1 OFFSET ?3), -1)",
                )?;
                // What each class's count of tokens moves by, and the
                // tokens a taking-back brings to nothing: kept as they
                // change. A scan of the account's whole vocabulary after
                // each call (to delete the spent rows, to sum the totals
                // again) made every message that learns cost more the more
                // was learned, under the lock every account writes through
                // (an audit: 0.2 s a message at 1.5 million rows).
                let mut was = tx.prepare(
                    "SELECT n FROM learn_tokens WHERE account = ?1 AND class = ?2 AND token = ?3",
                )?;
                let mut spent = tx.prepare(
                    "DELETE FROM learn_tokens WHERE account = ?1 AND class = ?2 AND token = ?3 AND n <= 0",
                )?;
                let mut moved: std::collections::HashMap<&str, i64> = Default::default();
                for (class, feats, sign) in examples {
                    let shot = Shot::from_features(class, feats);
                    if *sign > 0 {
                        add_shot.execute(params![account, class, shot.sender, shot.subject])?;
                        trim.execute(params![account, class, MAX_SHOTS as i64])?;
                    } else {
                        take_shot.execute(params![account, class, shot.sender, shot.subject])?;
                    }
                    cl.execute(params![account, class, sign])?;
                    let total = moved.entry(class).or_default();
                    for t in feats.iter() {
                        if *sign > 0 {
                            tk.execute(params![account, class, t, sign])?;
                            *total += sign;
                        } else {
                            let before: i64 = was
                                .query_row(params![account, class, t], |r| r.get(0))
                                .optional()?
                                .unwrap_or(0);
                            tk.execute(params![account, class, t, sign])?;
                            *total += (before + sign).max(0) - before;
                            spent.execute(params![account, class, t])?;
                        }
                    }
                    learned += sign.signum();
                }
                let mut add_total = tx.prepare(
                    "UPDATE learn_classes SET total = max(total + ?3, 0) WHERE account = ?1 AND class = ?2",
                )?;
                for (class, by) in moved {
                    add_total.execute(params![account, class, by])?;
                }
            }
            tx.execute(
                "INSERT INTO learn_state (account, generation, learned_examples, corrections)
                 VALUES (?1, 0, max(?2, 0), ?3)
                 ON CONFLICT (account) DO UPDATE SET generation = generation + ?4,
                     learned_examples = max(learned_examples + ?2, 0), corrections = corrections + ?3",
                params![account, learned + corrections, corrections, reload as i64],
            )?;
            tx.commit()?;
            Ok(())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::learn::Model;

    #[test]
    fn counts_round_trip_and_increment() {
        let s = Store::open_in_memory().unwrap();
        let a: Vec<String> = vec!["s:weekly".into(), "dom:news.com".into()];
        let b: Vec<String> = vec!["s:receipt".into(), "dom:shop.com".into()];
        let mut m = Model::default();
        m.add("News", &a, 1);
        m.add("Receipts", &b, 1);
        s.learn_replace("acct", &m.classes, &m.shots, 2).unwrap();
        assert_eq!(s.learn_counts("acct").unwrap(), m.classes);
        assert_eq!(s.learn_shots("acct").unwrap(), m.shots);
        let st = s.learn_state("acct").unwrap();
        assert_eq!((st.generation, st.trained_examples), (1, 2));

        s.learn_add("acct", &[("News", &b, 1)], 0, false).unwrap();
        m.add("News", &b, 1);
        assert_eq!(s.learn_counts("acct").unwrap(), m.classes);
        s.learn_add("acct", &[("News", &b, -1), ("Receipts", &b, 1)], 1, true)
            .unwrap();
        m.add("News", &b, -1);
        m.add("Receipts", &b, 1);
        assert_eq!(s.learn_counts("acct").unwrap(), m.classes);
        // The examples follow: the correction took the News one back.
        let shots = s.learn_shots("acct").unwrap();
        let stored: Vec<(&str, &str)> = shots
            .iter()
            .map(|x| (x.class.as_str(), x.subject.as_str()))
            .collect();
        assert_eq!(
            stored,
            [
                ("News", "weekly"),
                ("Receipts", "receipt"),
                ("Receipts", "receipt")
            ]
        );
        let st = s.learn_state("acct").unwrap();
        assert_eq!((st.learned_examples, st.corrections), (2, 1));
        assert_eq!(st.generation, 2, "a correction from outside reloads");
        assert!(s.learn_counts("other").unwrap().is_empty());

        // Taking back more than was learned, and what never was: counts
        // and totals stay at nothing, kept as they change (no scan of the
        // vocabulary; a complexity audit), and no spent row is left.
        let never: Vec<String> = vec!["s:never".into(), "dom:shop.com".into()];
        s.learn_add("acct", &[("News", &never, -1), ("News", &b, -1)], 0, false)
            .unwrap();
        m.add("News", &never, -1);
        m.add("News", &b, -1);
        assert_eq!(s.learn_counts("acct").unwrap(), m.classes);
        let spent: i64 = s
            .conn
            .lock()
            .query_row("SELECT count(*) FROM learn_tokens WHERE n <= 0", [], |r| {
                r.get(0)
            })
            .unwrap();
        assert_eq!(spent, 0);

        s.learn_replace("acct", &BTreeMap::new(), &Shots::default(), 0)
            .unwrap();
        let st = s.learn_state("acct").unwrap();
        assert_eq!(st.generation, 3);
        // "Learned since" starts again, corrections too (an audit found
        // them carried over a new training).
        assert_eq!((st.learned_examples, st.corrections), (0, 0));
        assert!(s.learn_counts("acct").unwrap().is_empty());
        assert!(s.learn_shots("acct").unwrap().is_empty());
    }

    #[test]
    fn the_stored_examples_of_a_folder_keep_the_newest() {
        let s = Store::open_in_memory().unwrap();
        let rows: Vec<Vec<String>> = (0..MAX_SHOTS + 5)
            .map(|i| vec![format!("from:{i}@x.example")])
            .collect();
        let examples: Vec<(&str, &[String], i64)> =
            rows.iter().map(|f| ("News", f.as_slice(), 1)).collect();
        s.learn_add("acct", &examples, 0, false).unwrap();
        s.learn_add("acct", &[("Other", &rows[0], 1)], 0, false)
            .unwrap();
        let shots = s.learn_shots("acct").unwrap();
        assert_eq!(shots.len(), MAX_SHOTS + 1);
        let news: Vec<&str> = shots
            .iter()
            .filter(|x| x.class == "News")
            .map(|x| x.sender.as_str())
            .collect();
        assert_eq!(news.len(), MAX_SHOTS);
        assert_eq!(news[0], "5@x.example", "the five oldest went");
    }
}
