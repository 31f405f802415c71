//! Work on a message the account recorded: undo, "Move to…" and the
//! header read of "Make a rule from this". Each is checked here against
//! the store and the configuration, then carried out by the account's own
//! thread on its session (`account::Handle::refile`, `imap::undo`,
//! `imap::move_to`): no HTTP worker opens an IMAP connection.

use super::{Ctx, Error};
use crate::account::{Location, Moved, RefileTo, Refiled, Undone};
use crate::store::{ActivityEntry, Status, UndoTarget};

/// Puts the moved message of activity entry `id` back where it was, with
/// its flags as they were, and records the undo.
pub fn undo(ctx: &Ctx, id: i64) -> Result<Undone, Error> {
    let t = ctx
        .store
        .undo_target(id)?
        .ok_or_else(|| Error::NotFound(format!("no activity entry with id {id}")))?;
    // What can never be undone is told so whether or not the account is
    // connected now (409, not 503).
    if let Some(why) = t.why_not_undoable() {
        return Err(Error::Conflict(format!("activity {id}: {why}")));
    }
    let Some(h) = ctx.account(&t.account) else {
        if let Some(busy) = super::accounts::being_renamed(ctx, id, &t.account) {
            return Err(busy);
        }
        return Err(Error::Conflict(format!(
            "account {:?} is no longer configured",
            t.account
        )));
    };
    match h.refile(id, RefileTo::Back)? {
        Refiled::Undone(u) => Ok(u),
        other => Err(Error::Internal(format!("undo answered {other:?}"))),
    }
}

/// Moves the message of activity entry `id` to `folder` ("Move to…" in the
/// dashboard), recorded as a correction. `folder` must be one the account
/// may move to and not a watched one (mail put there would be sorted
/// again). 503 when the account cannot take it now.
pub fn move_to(ctx: &Ctx, id: i64, folder: &str) -> Result<Moved, Error> {
    let e = ctx
        .store
        .activity_entry(id)?
        .ok_or_else(|| Error::NotFound(format!("no activity entry with id {id}")))?;
    let t = ctx
        .store
        .undo_target(id)?
        .ok_or_else(|| Error::NotFound(format!("no activity entry with id {id}")))?;
    let loaded = ctx.config();
    let gone = || {
        super::accounts::being_renamed(ctx, id, &e.account).unwrap_or_else(|| {
            Error::Conflict(format!("account {:?} is no longer configured", e.account))
        })
    };
    let a = loaded
        .config
        .accounts
        .iter()
        .find(|a| a.name == e.account)
        .ok_or_else(gone)?;
    if !a.folders.allowed.iter().any(|f| f == folder) || a.folders.watch.iter().any(|f| f == folder)
    {
        return Err(Error::Invalid(format!(
            "folder: {folder:?} is not one of the account's folders.allowed (watched folders excepted)"
        )));
    }
    if !matches!(e.status, Status::Ok | Status::DryRun | Status::Review)
        || matches!(e.model.as_str(), "undo" | "correction")
    {
        return Err(Error::Conflict(format!(
            "activity {id}: only a decided message can be moved"
        )));
    }
    let from = location(&e, &t).map_err(|m| Error::Conflict(format!("activity {id}: {m}")))?;
    if from.folder == folder {
        return Err(Error::Conflict(format!(
            "activity {id}: the message is in {folder:?} already"
        )));
    }
    let h = ctx.account(&e.account).ok_or_else(gone)?;
    let to = RefileTo::Folder {
        from,
        folder: folder.to_string(),
    };
    match h.refile(id, to)? {
        Refiled::Moved(m) => Ok(m),
        other => Err(Error::Internal(format!("move answered {other:?}"))),
    }
}

/// The List-Id of an entry's message (the id between `<` and `>`), read
/// where the message is now by the account's thread; `None` when it has
/// none or it cannot be read now (the rule form then starts from the
/// sender).
pub fn list_id(ctx: &Ctx, e: &ActivityEntry) -> Option<String> {
    let t = ctx.store.undo_target(e.id).ok().flatten()?;
    let at = location(e, &t).ok()?;
    let h = ctx.account(&e.account)?;
    let to = RefileTo::Peek {
        at,
        field: "List-Id".into(),
    };
    let v = match h.refile(e.id, to) {
        Ok(Refiled::Header(v)) => v?,
        Ok(other) => {
            log::error!("{}: a header read answered {other:?}", e.account);
            return None;
        }
        Err(err) => {
            log::info!(
                "{}: the List-Id of activity {} could not be read: {err}",
                e.account,
                e.id
            );
            return None;
        }
    };
    let id = match (v.rfind('<'), v.rfind('>')) {
        (Some(i), Some(j)) if i < j => &v[i + 1..j],
        _ => v.trim(),
    };
    (!id.is_empty()).then(|| id.to_string())
}

/// Where the message of an activity entry is now: where a person put it,
/// back where it came from after an undo, where we moved it, or where it
/// arrived. `Err` when a person deleted it.
pub fn location(e: &ActivityEntry, t: &UndoTarget) -> Result<Location, &'static str> {
    Ok(match (&e.corrected_to, &e.undone_at, &e.dest_folder) {
        (Some(c), _, Some(d)) if !c.is_empty() && c == d => Location {
            folder: d.clone(),
            uid: t.dest_uid,
        },
        (Some(c), _, _) if !c.is_empty() => Location {
            folder: c.clone(),
            uid: None,
        },
        (Some(_), _, _) => return Err("the message was deleted"),
        (None, Some(_), _) => Location {
            folder: e.mailbox.clone(),
            uid: None,
        },
        (None, None, Some(d)) if e.status == Status::Ok => Location {
            folder: d.clone(),
            uid: t.dest_uid,
        },
        _ => Location {
            folder: e.mailbox.clone(),
            uid: Some(e.uid),
        },
    })
}
