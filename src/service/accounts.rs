//! The account controls (pause, resume, reconnect, process) and retrying a
//! failed message: a command on the account's channel, never a wait.

use super::{Ctx, Error};
use crate::account::{Command, State};

/// Sends `command` to account `name`; the state an observer should expect
/// next.
pub fn command(ctx: &Ctx, name: &str, command: Command) -> Result<State, Error> {
    let Some(h) = ctx.account(name) else {
        return Err(Error::NotFound(format!("no account named {name:?}")));
    };
    h.send(command)
        .map_err(|msg| Error::Unavailable(msg.to_string()))
}

/// Puts failed message `id` back in line and asks its account for a pass.
/// Returns the account's name.
pub fn retry(ctx: &Ctx, id: i64) -> Result<String, Error> {
    let Some(account) = ctx.store.retry_failed(id)? else {
        return Err(Error::NotFound(format!("no failed email with id {id}")));
    };
    if let Some(h) = ctx.account(&account) {
        let _ = h.send(Command::Process);
    }
    Ok(account)
}
