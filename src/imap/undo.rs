//! Undo of a move: the message goes back to the folder it came from, with
//! the flags it had, on a connection of its own (the account's thread keeps
//! its session). A correction for the learned classifier when it is on.

use std::sync::Arc;

use super::commands::{copy_uids, quote};
use super::session::Session;
use crate::config::AccountConfig;
use crate::store::{Status, Store, UndoTarget};

/// Why an undo was not done.
#[derive(Debug, Clone, PartialEq)]
pub enum UndoError {
    /// The entry cannot be undone (not a move, already undone, ...): 409.
    Refused(String),
    /// The server or the store failed: 502.
    Failed(String),
}

impl std::fmt::Display for UndoError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            UndoError::Refused(m) | UndoError::Failed(m) => f.write_str(m),
        }
    }
}

/// What an undo did.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Undone {
    pub id: i64,
    /// The activity entry recording the undo.
    pub undo_id: i64,
    pub mailbox: String,
    pub uid: u32,
    pub from_folder: String,
    pub flags: Vec<String>,
    /// Whether the learned classifier took it as a correction.
    pub correction: bool,
}

/// Puts the message of activity entry `t` back where it was.
pub fn undo(
    account: &AccountConfig,
    store: &Arc<Store>,
    t: UndoTarget,
) -> Result<Undone, UndoError> {
    let refuse = |m: &str| Err(UndoError::Refused(format!("activity {}: {m}", t.id)));
    if t.status != Status::Ok {
        return refuse("only a message that was acted on can be undone");
    }
    let Some(dest) = t.dest_folder.clone() else {
        return refuse("the message was not moved");
    };
    if t.undone_at.is_some() {
        return refuse("already undone");
    }
    let Some(flags) = t.flags.clone() else {
        return refuse("moved before undo was recorded");
    };
    let failed =
        |e: String| UndoError::Failed(format!("{}: undo of activity {}: {e}", account.name, t.id));
    let mut s = super::train::open(account, store).map_err(|e| failed(e.to_string()))?;
    let r = put_back(&mut s, store, &t, &dest, &flags).map_err(failed);
    let _ = s.logout();
    let (uid, undo_id, feats) = r?;
    let correction = match feats {
        Some(f) if account.learned.enabled => {
            let rows: Vec<(&str, &[String], i64)> = vec![
                (dest.as_str(), f.as_slice(), -1),
                (t.mailbox.as_str(), f.as_slice(), 1),
            ];
            match store.learn_add(&account.name, &rows, 1, true) {
                Ok(()) => true,
                Err(e) => {
                    log::warn!("{}: {e}", account.name);
                    false
                }
            }
        }
        _ => false,
    };
    log::info!(
        "{}: activity {} undone: back from {dest:?} to {:?} as UID {uid}",
        account.name,
        t.id,
        t.mailbox
    );
    Ok(Undone {
        id: t.id,
        undo_id,
        mailbox: t.mailbox.clone(),
        uid,
        from_folder: dest,
        flags,
        correction,
    })
}

/// Moves it back and restores its flags. Returns its UID in the folder it
/// came from, the id of the undo's record, and its features (for a
/// correction).
fn put_back(
    s: &mut Session,
    store: &Arc<Store>,
    t: &UndoTarget,
    dest: &str,
    flags: &[String],
) -> Result<(u32, i64, Option<Vec<String>>), String> {
    s.select(dest)
        .map_err(|e| format!("SELECT {dest:?}: {e}"))?;
    let uid = match t.dest_uid {
        Some(u) => u,
        None if !t.message_id.is_empty() => s
            .uid_search(format!("HEADER Message-ID {}", quote(&t.message_id)))
            .map_err(|e| e.to_string())?
            .into_iter()
            .max()
            .ok_or_else(|| format!("no message {} in {dest:?}", t.message_id))?,
        None => {
            return Err("its UID in the destination is unknown and it has no Message-ID".into())
        }
    };
    // Still there? (The user may have moved or deleted it since.)
    let fetched = s
        .uid_fetch(uid.to_string(), super::learn_query())
        .map_err(|e| e.to_string())?;
    let Some(f) = fetched.iter().find(|f| f.uid == Some(uid)) else {
        return Err(format!("UID {uid} is no longer in {dest:?}"));
    };
    let feats = f
        .header()
        .map(|h| crate::learn::features(&super::learn_email(h, f.text())));
    // Recorded before the move, under the UID it will get, so the account
    // never sees it back without a record (and sorts it away again).
    let st = s
        .status(&t.mailbox, "(UIDNEXT UIDVALIDITY)")
        .map_err(|e| format!("STATUS {:?}: {e}", t.mailbox))?;
    let uidvalidity = st.uid_validity.unwrap_or(t.uidvalidity);
    let foreseen = st.uid_next.unwrap_or(1);
    let row = store
        .record_undo(t, uidvalidity, foreseen)
        .map_err(|e| e.to_string())?;
    let moved = s.run_command_and_read_response(format!("UID MOVE {uid} {}", quote(&t.mailbox)));
    let new_uid = match moved {
        Ok(lines) => copy_uids(&lines).get(&uid).copied(),
        Err(e) => {
            let _ = store.cancel_undo(t.id, row);
            return Err(format!("moving back to {:?}: {e}", t.mailbox));
        }
    };
    s.select(&t.mailbox)
        .map_err(|e| format!("SELECT {:?}: {e}", t.mailbox))?;
    let new_uid = match new_uid {
        Some(u) => u,
        None => s
            .uid_search(format!("HEADER Message-ID {}", quote(&t.message_id)))
            .map_err(|e| e.to_string())?
            .into_iter()
            .max()
            .ok_or_else(|| format!("moved back, but not found in {:?}", t.mailbox))?,
    };
    if new_uid != foreseen {
        store
            .fix_undo_uid(row, new_uid)
            .map_err(|e| e.to_string())?;
    }
    s.uid_store(
        new_uid.to_string(),
        format!("FLAGS.SILENT ({})", flags.join(" ")),
    )
    .map_err(|e| format!("restoring flags: {e}"))?;
    Ok((new_uid, row, feats))
}
