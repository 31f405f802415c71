//! Journalled rows made final as journalled: the server confirmed what a
//! message's `pending` row says was to be done, so the row becomes `ok`
//! with its action rows and, when it moved, where to.
//!
//! A large backlog finishes tens of thousands of messages at once (a
//! 100,000-message folder's largest destination took 51,000), queued for
//! the account's journal writer while the next MOVE runs. So a finished
//! message is small: its UID, and its action list, destination and former
//! flags shared with every other message that has the same ones; the
//! account, folder and generation are said once for the lot.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::sync::Arc;

use super::Result;
use crate::actions::Action;

/// A message whose decision this run journalled (see
/// `Store::record_decisions`) and whose commands the server has now
/// confirmed: its row is made final as journalled, keeping the time of
/// the decision.
#[derive(Debug, Clone)]
pub struct Finished {
    pub uid: u32,
    /// Its actions, as journalled.
    pub actions: Arc<[Action]>,
    /// Where it was moved, for undo.
    pub moved: Option<FinishedMove>,
}

/// Where a finished message was moved, and the flags it had before.
#[derive(Debug, Clone)]
pub struct FinishedMove {
    pub dest_folder: Arc<str>,
    /// Its UID there, when the server said (COPYUID).
    pub dest_uid: Option<u32>,
    pub flags: Arc<[String]>,
}

/// Finished messages of one generation of one account's folder.
#[derive(Debug, Clone, Default)]
pub struct FinishedIn {
    pub account: String,
    pub mailbox: String,
    pub uidvalidity: u32,
    pub rows: Vec<Finished>,
}

/// The rows' JSON (`?4`) with each UID replaced by its row's id, and how
/// many were found. `CROSS JOIN` keeps the array the outer loop: left to
/// choose, SQLite drove from the folder's rows (the index's first three
/// columns) and scanned the whole array for each, quadratic in a backlog.
const IDS_FOR_UIDS: &str = "SELECT json_group_array(json_set(j.value, '$[0]', e.id)), count(*)
     FROM json_each(?4) j CROSS JOIN emails e
        ON e.account = ?1 AND e.mailbox = ?2 AND e.uidvalidity = ?3 AND e.uid = j.value ->> 0";

/// Makes journalled rows final as journalled: status `ok`, their actions
/// counted, where a move took each. Set-based: each folder's rows go to
/// SQLite as one JSON array; one statement puts each row's id in place of
/// its UID (the UIDs looked up in the key's index, the array driving the
/// join), then three statements do the lot by id. A message without a
/// journalled row (a bug upstream) is logged rather than failing the
/// whole record.
pub(super) fn finish_journalled(tx: &rusqlite::Transaction<'_>, sets: &[FinishedIn]) -> Result<()> {
    for set in sets.iter().filter(|s| !s.rows.is_empty()) {
        let (json, found): (String, usize) = tx.prepare_cached(IDS_FOR_UIDS)?.query_row(
            rusqlite::params![
                set.account,
                set.mailbox,
                set.uidvalidity,
                rows_json(&set.rows)
            ],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )?;
        if found < set.rows.len() {
            log::warn!(
                "{}: {}: {} message(s) finished without a journal row",
                set.account,
                set.mailbox,
                set.rows.len() - found
            );
        }
        tx.prepare_cached(
            "UPDATE emails SET status = 'ok', error = NULL, attempts = attempts + 1,
                next_attempt_at = NULL,
                dest_folder = coalesce(j.value ->> 1, dest_folder),
                dest_uid = CASE WHEN j.value ->> 1 IS NULL THEN dest_uid ELSE j.value ->> 2 END,
                orig_flags = CASE WHEN j.value ->> 1 IS NULL THEN orig_flags
                    ELSE coalesce(orig_flags, j.value -> 3) END,
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
             SELECT e.id, e.account, e.processed_at, a.value ->> 0, a.value ->> 1, a.value ->> 2
             FROM json_each(?1) j JOIN emails e ON e.id = j.value ->> 0, json_each(j.value -> 4) a",
        )?
        .execute([&json])?;
    }
    Ok(())
}

/// The rows as JSON, `[[uid, dest folder, dest UID, flags before,
/// [[type, folder, flags], ...]], ...]` (nulls where it did not move),
/// written straight to text: each distinct action list, folder and flag
/// set is encoded once, however many rows share it (a window's rows carry
/// lists of their own, a held pass's share them).
fn rows_json(rows: &[Finished]) -> String {
    let mut actions: HashMap<&[Action], String> = HashMap::new();
    let mut folders: HashMap<&str, String> = HashMap::new();
    let mut flags: HashMap<&[String], String> = HashMap::new();
    let mut out = String::with_capacity(rows.len() * 48);
    out.push('[');
    for (i, r) in rows.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        let _ = write!(out, "[{},", r.uid);
        match &r.moved {
            Some(m) => {
                let folder = folders
                    .entry(&m.dest_folder)
                    .or_insert_with(|| json_text(&*m.dest_folder));
                let _ = match m.dest_uid {
                    Some(u) => write!(out, "{folder},{u},"),
                    None => write!(out, "{folder},null,"),
                };
                out.push_str(
                    flags
                        .entry(&m.flags)
                        .or_insert_with(|| json_text(&*m.flags)),
                );
            }
            None => out.push_str("null,null,null"),
        }
        out.push(',');
        out.push_str(
            actions
                .entry(&r.actions)
                .or_insert_with(|| action_rows(&r.actions)),
        );
        out.push(']');
    }
    out.push(']');
    out
}

/// An action list as the `actions` table's rows: `[[type, folder, flags
/// (JSON text)], ...]`.
fn action_rows(actions: &[Action]) -> String {
    let rows: Vec<_> = actions.iter().map(super::journal::action_columns).collect();
    json_text(&rows)
}

fn json_text<T: serde::Serialize + ?Sized>(v: &T) -> String {
    serde_json::to_string(v).unwrap_or_else(|_| "null".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uids_are_looked_up_one_by_one_in_the_key_index() {
        let store = crate::store::Store::open_in_memory().unwrap();
        let conn = store.conn.lock();
        let plan: Vec<String> = conn
            .prepare(&format!("EXPLAIN QUERY PLAN {IDS_FOR_UIDS}"))
            .unwrap()
            .query_map(rusqlite::params!["a", "INBOX", 7, "[]"], |r| r.get(3))
            .unwrap()
            .map(|r| r.unwrap())
            .collect();
        assert!(plan[0].starts_with("SCAN j"), "{plan:?}");
        assert!(
            plan[1].starts_with("SEARCH e USING")
                && plan[1].contains("account=? AND mailbox=? AND uidvalidity=? AND uid=?"),
            "{plan:?}"
        );
    }

    #[test]
    fn a_finished_message_waits_in_64_bytes() {
        // A large backlog queues tens of thousands (see `imap::held`).
        assert!(std::mem::size_of::<Finished>() <= 64);
    }

    #[test]
    fn rows_are_written_as_the_statements_read_them() {
        let actions: Arc<[Action]> = vec![
            Action::Move {
                folder: "Lists \"x\"".into(),
            },
            Action::Flag {
                flags: vec!["\\Flagged".into()],
            },
        ]
        .into();
        let moved = FinishedMove {
            dest_folder: "Lists \"x\"".into(),
            dest_uid: Some(41),
            flags: vec!["\\Seen".to_string()].into(),
        };
        let rows = [
            Finished {
                uid: 5,
                actions: actions.clone(),
                moved: Some(moved.clone()),
            },
            Finished {
                uid: 6,
                // Equal lists of their own, as a window's rows carry.
                actions: actions.to_vec().into(),
                moved: Some(FinishedMove {
                    dest_uid: None,
                    ..moved
                }),
            },
            Finished {
                uid: 7,
                actions: vec![Action::Read].into(),
                moved: None,
            },
        ];
        let v: serde_json::Value = serde_json::from_str(&rows_json(&rows)).unwrap();
        assert_eq!(
            v,
            serde_json::json!([
                [
                    5,
                    "Lists \"x\"",
                    41,
                    ["\\Seen"],
                    [
                        ["move", "Lists \"x\"", null],
                        ["flag", null, "[\"\\\\Flagged\"]"]
                    ]
                ],
                [
                    6,
                    "Lists \"x\"",
                    null,
                    ["\\Seen"],
                    [
                        ["move", "Lists \"x\"", null],
                        ["flag", null, "[\"\\\\Flagged\"]"]
                    ]
                ],
                [7, null, null, null, [["read", null, null]]]
            ])
        );
    }
}
