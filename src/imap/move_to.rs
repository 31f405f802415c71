//! "Move to…" from the dashboard: a person puts a message mailproc decided
//! about into another folder. It is a correction: recorded on the activity
//! entry (`corrected_to`, where undo finds it from then on), learned by the
//! learned classifier when it is on, and shown to the model as an example.
//! Like undo, it runs on a connection of its own, so the account's thread
//! keeps its session.

use std::sync::Arc;

use super::commands::{move_set, search_message_id};
use super::session::{Caps, Connected, Folders, Session};
use super::undo::UndoError;
use crate::config::AccountConfig;
use crate::store::{Store, UndoTarget};

/// Where the message is now: its folder, and its UID there when known (else
/// it is found by Message-ID).
#[derive(Debug, Clone, PartialEq)]
pub struct Location {
    pub folder: String,
    pub uid: Option<u32>,
}

/// What a move did.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Moved {
    pub id: i64,
    pub from_folder: String,
    pub folder: String,
    pub uid: u32,
    /// Whether the learned classifier took it as a correction.
    pub correction: bool,
}

/// Moves the message of activity entry `t`, now at `from`, to `to` (a
/// folder the account may move to; the caller checks).
pub fn move_to(
    account: &AccountConfig,
    store: &Arc<Store>,
    t: &UndoTarget,
    from: Location,
    to: &str,
) -> Result<Moved, UndoError> {
    if from.folder == to {
        return Err(UndoError::Refused(format!(
            "activity {}: the message is in {to:?} already",
            t.id
        )));
    }
    let failed =
        |e: String| UndoError::Failed(format!("{}: moving activity {}: {e}", account.name, t.id));
    let Connected {
        session: mut s,
        caps,
        folders,
        ..
    } = super::train::open(account, store).map_err(|e| failed(e.to_string()))?;
    let r = carry(&mut s, &caps, &folders, store, t, &from, to).map_err(failed);
    let _ = s.logout();
    let (uid, feats) = r?;
    let correction = match feats {
        Some(f) if account.learned.enabled => {
            let rows: Vec<(&str, &[String], i64)> = vec![
                (from.folder.as_str(), f.as_slice(), -1),
                (to, f.as_slice(), 1),
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
        "{}: activity {} moved by a person from {:?} to {to:?} (UID {uid})",
        account.name,
        t.id,
        from.folder
    );
    Ok(Moved {
        id: t.id,
        from_folder: from.folder,
        folder: to.to_string(),
        uid,
        correction,
    })
}

/// Finds the message, moves it and records where it went. Returns its new
/// UID and its features (for the classifier).
fn carry(
    s: &mut Session,
    caps: &Caps,
    folders: &Folders,
    store: &Arc<Store>,
    t: &UndoTarget,
    from: &Location,
    to: &str,
) -> Result<(u32, Option<Vec<String>>), String> {
    let mb = folders
        .select(s, &from.folder)
        .map_err(|e| format!("SELECT {}: {e}", folders.describe(&from.folder)))?;
    // A UID is good only under the UIDVALIDITY it was recorded with.
    let known = from
        .uid
        .filter(|_| from.folder != t.mailbox || mb.uid_validity == Some(t.uidvalidity));
    let uid = match known {
        Some(u) => u,
        None if !t.message_id.is_empty() => s
            .uid_search(search_message_id(&t.message_id, caps)?)
            .map_err(|e| e.to_string())?
            .into_iter()
            .max()
            .ok_or_else(|| format!("no message {} in {:?}", t.message_id, from.folder))?,
        None => return Err("its UID is unknown and it has no Message-ID".into()),
    };
    let fetched = s
        .uid_fetch(
            uid.to_string(),
            format!(
                "(UID FLAGS BODY.PEEK[HEADER] BODY.PEEK[TEXT]<0.{}>)",
                crate::learn::TEXT_BYTES
            ),
        )
        .map_err(|e| e.to_string())?;
    let Some(f) = fetched.iter().find(|f| f.uid == Some(uid)) else {
        return Err(format!("UID {uid} is no longer in {:?}", from.folder));
    };
    let flags: Vec<String> = f
        .flags()
        .iter()
        .filter(|f| !matches!(f, imap::types::Flag::Recent))
        .map(|f| f.to_string())
        .collect();
    let feats = f
        .header()
        .map(|h| crate::learn::features(&super::learn_email(h, f.text())));
    let moved = move_set(s, caps, folders, &[uid], to, &from.folder)
        .map_err(|e| e.to_string())?
        .map_err(|e| format!("moving to {to:?}: {e}"))?;
    let new_uid = match moved.get(&uid).copied() {
        Some(u) => u,
        None => {
            folders
                .select(s, to)
                .map_err(|e| format!("SELECT {}: {e}", folders.describe(to)))?;
            s.uid_search(search_message_id(&t.message_id, caps)?)
                .map_err(|e| e.to_string())?
                .into_iter()
                .max()
                .ok_or_else(|| format!("moved, but not found in {to:?}"))?
        }
    };
    store
        .record_move_to(t.id, to, new_uid, &flags)
        .map_err(|e| e.to_string())?;
    Ok((new_uid, feats))
}

/// One header field (`List-Id`) of the message of entry `t`, now at `at`,
/// read on a connection of its own with `BODY.PEEK` (nothing changes):
/// what "Make a rule from this" prefills beyond the recorded sender.
pub fn header_field(
    account: &AccountConfig,
    store: &Arc<Store>,
    t: &UndoTarget,
    at: &Location,
    field: &str,
) -> Result<Option<String>, String> {
    let Connected {
        session: mut s,
        caps,
        folders,
        ..
    } = super::train::open(account, store).map_err(|e| e.to_string())?;
    let r = (|| {
        let mb = folders
            .examine(&mut s, &at.folder)
            .map_err(|e| format!("EXAMINE {}: {e}", folders.describe(&at.folder)))?;
        let known = at
            .uid
            .filter(|_| at.folder != t.mailbox || mb.uid_validity == Some(t.uidvalidity));
        let uid = match known {
            Some(u) => u,
            None if !t.message_id.is_empty() => match s
                .uid_search(search_message_id(&t.message_id, &caps)?)
                .map_err(|e| e.to_string())?
                .into_iter()
                .max()
            {
                Some(u) => u,
                None => return Ok(None),
            },
            None => return Ok(None),
        };
        let fetched = s
            .uid_fetch(
                uid.to_string(),
                format!("(UID BODY.PEEK[HEADER.FIELDS ({field})])"),
            )
            .map_err(|e| e.to_string())?;
        let Some(h) = fetched
            .iter()
            .find(|f| f.uid == Some(uid))
            .and_then(|f| f.header())
        else {
            return Ok(None);
        };
        let e = crate::classify::Email::parse_headers(h).unwrap_or_default();
        Ok(e.header(field).map(str::to_string))
    })();
    let _ = s.logout();
    r
}
