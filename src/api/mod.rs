//! The JSON API: the handlers of `/api/*`, `/health`, `/metrics` and the
//! JSON `/login` and `/logout`. Their routes, and the access each needs,
//! are in the one table of `routes`, which authenticates before a handler
//! is called. Handlers are plain functions returning
//! `Result<Reply, Reply>`, so `?` carries any error answer (a store error
//! is a 500, a service error its own status) straight out. Anything beyond
//! reading goes through the service layer (`service`), as the dashboard's
//! forms do.

pub mod export;
pub mod handlers;
pub mod params;
pub mod session;

use crate::http::Reply;
use crate::service;

/// What a handler answers: the reply, or the error reply to send instead.
pub type Answer = Result<Reply, Reply>;

/// The values of a pattern's `:name` segments, in order.
pub type Params<'a> = [&'a str];

/// A place to read the activity log (a page, an export; see `gate`), or
/// the 503 that says the service is busy and when to ask again.
pub fn read_place() -> Result<crate::gate::Place, Reply> {
    let place = crate::gate::enter_read().map_err(|full| {
        Reply::error(503, crate::gate::read_refusal(full)).with_header("Retry-After", "1")
    })?;
    crate::failpoint::hit("activity-read");
    Ok(place)
}

impl From<crate::store::StoreError> for Reply {
    /// A store failure is the service's fault: 500, logged by the server;
    /// one for want of the disk (full, read-only) is no bug but the host's
    /// state, 503 with `Retry-After` (as `/health` says).
    fn from(e: crate::store::StoreError) -> Reply {
        if e.is_unwritable() {
            return Reply::error(503, format!("the database cannot be written now: {e}"))
                .with_header("Retry-After", "30");
        }
        Reply::error(500, e.to_string())
    }
}

impl From<service::Error> for Reply {
    /// Each kind of service error with its status, the message as it is.
    fn from(e: service::Error) -> Reply {
        let status = match &e {
            service::Error::Invalid(_) => 400,
            service::Error::NotFound(_) => 404,
            service::Error::Conflict(_) => 409,
            service::Error::Failed(_) => 502,
            service::Error::Unavailable(_) | service::Error::Unwritable(_) => 503,
            service::Error::Internal(_) => 500,
        };
        let reply = Reply::error(status, e.message());
        // Not now (an account connecting, busy, not started yet; the disk
        // full, as a store error's own reply says): when to ask again.
        match e {
            service::Error::Unavailable(_) => reply.with_header("Retry-After", "5"),
            service::Error::Unwritable(_) => reply.with_header("Retry-After", "30"),
            _ => reply,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{Cause, StoreError};

    #[test]
    fn a_full_disk_is_503_not_a_bug() {
        let full = rusqlite::Error::SqliteFailure(
            rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_FULL),
            None,
        );
        let r = Reply::from(StoreError::new("create_session", Cause::Sqlite(full)));
        assert_eq!(r.status, 503);
        assert!(r
            .headers
            .iter()
            .any(|(k, v)| k == "Retry-After" && v == "30"));
        let busy = rusqlite::Error::SqliteFailure(
            rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_CONSTRAINT),
            None,
        );
        assert_eq!(
            Reply::from(StoreError::new("x", Cause::Sqlite(busy))).status,
            500
        );
    }

    /// Every "not now" says when to ask again: an account not started
    /// yet (an audit found its 503 bare), and a full disk however the
    /// refusal came.
    #[test]
    fn a_503_says_when_to_ask_again() {
        let retry = |e: service::Error| {
            let r = Reply::from(e);
            let after = r
                .headers
                .iter()
                .find(|(k, _)| k == "Retry-After")
                .map(|(_, v)| v.clone());
            (r.status, after)
        };
        assert_eq!(
            retry(service::Error::Unavailable("not started".into())),
            (503, Some("5".into()))
        );
        let full = rusqlite::Error::SqliteFailure(
            rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_FULL),
            None,
        );
        let e = service::Error::from(StoreError::new("record", Cause::Sqlite(full)));
        assert_eq!(retry(e), (503, Some("30".into())));
        assert_eq!(retry(service::Error::Conflict("x".into())), (409, None));
    }
}
