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
            service::Error::Unavailable(_) => 503,
            service::Error::Internal(_) => 500,
        };
        Reply::error(status, e.message())
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
}
