//! The account controls (pause, resume, reconnect, process) and retrying a
//! failed message: a command on the account's channel, never a wait; and
//! what an account last did, kept across restarts.

use std::collections::BTreeMap;

use super::{Ctx, Error};
use crate::account::{Command, State};

/// The state shown for a configured account: its thread's, or
/// `connecting` for one not started yet (renamed, it waits for its old
/// name's batch in hand: an audit found it shown as `disconnected`).
pub fn state_name(st: Option<&crate::account::Status>) -> &'static str {
    st.map_or(State::Connecting.as_str(), |s| s.state.as_str())
}

/// What a command to an account did.
pub struct Commanded {
    /// The state an observer should expect next.
    pub state: State,
    /// Why a pause or resume, done now, is not kept for the next start
    /// (the database could not take it: a lock another program holds, a
    /// full disk). The account is paused all the same: an operator pausing
    /// it for a full disk wants it paused.
    pub not_kept: Option<String>,
}

/// Sends `command` to account `name`.
pub fn command(ctx: &Ctx, name: &str, command: Command) -> Result<Commanded, Error> {
    let Some(h) = ctx.account(name) else {
        // The old name of a rename under way: the command goes to the new
        // one (an audit, stop 56, was told to try the old name again,
        // which then answered 404).
        let renames = ctx.store.noted_renames().unwrap_or_default();
        if let Some((_, to)) = renames.iter().find(|(from, _)| from == name) {
            // 409, not 503: a `Retry-After` invited a retry of the old
            // name, which then answered 404 (the regression audit).
            return Err(Error::Conflict(format!(
                "account {name:?} is being renamed to {to:?}: send this to {to:?} (in a few \
                 seconds, once its batch in hand is done)"
            )));
        }
        // Configured, not started yet: a rename waiting for its old name's
        // batch in hand (the third regression audit found 404 here).
        if ctx.config().config.accounts.iter().any(|a| a.name == name) {
            return Err(Error::Unavailable(format!(
                "account {name:?} has not started yet (renamed, it waits for its old name's \
                 batch in hand); try again in a few seconds"
            )));
        }
        return Err(Error::NotFound(format!("no account named {name:?}")));
    };
    let state = h
        .send(command)
        .map_err(|msg| Error::Unavailable(msg.to_string()))?;
    // A pause outlives a restart of the service (an audit found a paused
    // account processing again after one); a resume ends it.
    let paused = match command {
        Command::Pause => Some(true),
        Command::Resume => Some(false),
        _ => None,
    };
    let not_kept = paused.and_then(|p| {
        let e = ctx.store.set_account_paused(name, p).err()?;
        let why = format!(
            "the {} is not kept for the next start: {e}",
            if p { "pause" } else { "resume" }
        );
        log::warn!("{name}: {why}");
        Some(why)
    });
    Ok(Commanded { state, not_kept })
}

/// 503 for entry `id` of `account` while `account` is renamed and waits
/// for its batch in hand: its records go to the new name in a moment (an
/// audit found "add the account back" advised, which would take the
/// rename back).
pub(super) fn being_renamed(ctx: &Ctx, id: i64, account: &str) -> Option<Error> {
    renaming(ctx, account, &format!("activity {id}: its account"))
}

/// 503 naming `what` (`account`, said as the caller does) while `account`
/// is renamed and waits for its batch in hand.
fn renaming(ctx: &Ctx, account: &str, what: &str) -> Option<Error> {
    let renames = ctx.store.noted_renames().unwrap_or_default();
    let (_, to) = renames.iter().find(|(from, _)| from == account)?;
    Some(Error::Unavailable(format!(
        "{what} {account:?} is being renamed to {to:?}, which takes its records once its \
         batch in hand is done; try again in a few seconds"
    )))
}

/// Puts failed message `id` back in line and asks its account for a pass.
/// Returns the account's name.
pub fn retry(ctx: &Ctx, id: i64) -> Result<String, Error> {
    // A failed message of an account no longer configured: nothing would
    // take the retry, so it is refused rather than left `retrying`.
    if let Some(e) = ctx.store.activity_entry(id)? {
        // Renamed, waiting for its batch in hand: its records go over to
        // the new name in a moment (an audit found "add the account back"
        // advised here, which would take the rename back).
        if let Some(busy) = being_renamed(ctx, id, &e.account) {
            return Err(busy);
        }
        if e.status == crate::store::Status::Failed && ctx.account(&e.account).is_none() {
            return Err(Error::Conflict(format!(
                "activity {id}: its account {:?} is not in the configuration, so nothing \
                 would take the retry; add the account back, then retry",
                e.account
            )));
        }
    }
    let Some(account) = ctx.store.retry_failed(id)? else {
        // 404 for no such entry; one that is there but not failed cannot
        // be retried (409, as an undo that cannot be done).
        return Err(match ctx.store.activity_entry(id)? {
            Some(e) => Error::Conflict(format!(
                "activity {id}: only a failed email can be retried (its status is {})",
                e.status.as_str()
            )),
            None => Error::NotFound(format!("no failed email with id {id}")),
        });
    };
    if let Some(h) = ctx.account(&account) {
        let _ = h.send(Command::Process);
    }
    Ok(account)
}

/// Puts every failed message back in line, of `account` or of every
/// account running, and asks each account concerned for a pass: the
/// operator's answer to an outage (a model provider down for an hour
/// parks every message that came in meanwhile). Returns how many of each
/// account's went back, accounts with none left out. An account named but
/// not running (not configured, or being renamed) is refused, as one
/// message's retry is.
pub fn retry_all(ctx: &Ctx, account: Option<&str>) -> Result<BTreeMap<String, u64>, Error> {
    let running = ctx.accounts();
    let names: Vec<String> = match account {
        Some(name) => {
            if let Some(busy) = renaming(ctx, name, "account") {
                return Err(busy);
            }
            if !running.contains_key(name) {
                return Err(Error::Conflict(format!(
                    "account {name:?} is not running, so nothing would take the retries; \
                     add it to the configuration (or start it), then retry"
                )));
            }
            vec![name.to_string()]
        }
        None => running.keys().cloned().collect(),
    };
    let mut out = BTreeMap::new();
    for name in names {
        let n = ctx.store.retry_all_failed(&name)?;
        if n > 0 {
            if let Some(h) = running.get(&name) {
                let _ = h.send(Command::Process);
            }
            out.insert(name, n);
        }
    }
    Ok(out)
}

/// An account's last processed mail and last error, for the dashboard's
/// tables and `GET /api/accounts`: the live values, else what the store
/// kept from before a restart (of the service or of the account).
pub fn history(
    ctx: &Ctx,
    name: &str,
    st: Option<&crate::account::Status>,
) -> (Option<i64>, Option<(Option<i64>, String)>) {
    let note = ctx.store.account_note(name).unwrap_or_default();
    let processed = match (st.and_then(|s| s.last_processed_at), note.last_processed_at) {
        (Some(a), Some(b)) => Some(a.max(b)),
        (a, b) => a.or(b),
    };
    let error = match st.and_then(|s| s.last_error.clone()) {
        Some(e) => Some((None, e)),
        None => note.last_error.map(|(at, e)| (Some(at), e)),
    };
    (processed, error)
}
