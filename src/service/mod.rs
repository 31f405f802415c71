//! The service layer: the operations the dashboard's pages and the JSON
//! API both call, and the state they share ([`Ctx`]). The web layer
//! (`api`, `dashboard`, `routes`) turns requests into these calls and
//! their answers into HTTP; nothing here knows HTTP.
//!
//! Guarantees: no operation here holds an HTTP worker on IMAP without a
//! deadline. Work on a message (undo, "Move to…", the header read of
//! "Make a rule") runs on the account's own thread and session
//! (`account::Handle::refile`, at most `REFILE_QUEUE_WAIT + REFILE_WORK`);
//! training runs on a named thread of its own and is followed by polling
//! ([`train::Training`]); a configuration change validates, writes and
//! applies under one lock without waiting for an account to stop
//! (`live`).

pub mod accounts;
pub mod config;
pub mod refile;
pub mod sessions;
pub mod train;

use std::sync::Arc;
use std::time::Instant;

use crate::account;
use crate::auth::LoginLimiter;
use crate::classify::Pool;
use crate::config::Loaded;
use crate::live::Live;
use crate::logging::LogRing;
use crate::metrics::Metrics;
use crate::store::{Store, StoreError};
use crate::webhook::Webhooks;

/// Everything an operation (and so a request handler) may use. Shared by
/// all HTTP workers.
pub struct Ctx {
    /// The configuration and accounts in effect; they change at run time.
    pub live: Arc<Live>,
    pub store: Arc<Store>,
    pub metrics: Arc<Metrics>,
    pub logs: Arc<LogRing>,
    pub webhooks: Arc<Webhooks>,
    pub started: Instant,
    pub session_secret: Vec<u8>,
    pub limiter: LoginLimiter,
    pub classifier: Arc<Pool>,
    /// The first-run setup code (while no user exists).
    pub setup: sessions::Setup,
    /// Configuration edits posted after their session ended.
    pub drafts: sessions::Drafts,
    /// Training runs of this process.
    pub training: train::Training,
}

impl Ctx {
    pub fn config(&self) -> Arc<Loaded> {
        self.live.config()
    }

    /// Every running account by name (a snapshot).
    pub fn accounts(&self) -> account::Registry {
        self.live.accounts()
    }

    pub fn account(&self, name: &str) -> Option<Arc<account::Handle>> {
        self.live.account(name)
    }
}

/// Why an operation was not done. The web layer answers each kind with its
/// own status (named beside it) and shows the message as it is.
#[derive(Debug, Clone, PartialEq)]
pub enum Error {
    /// The input is wrong; the message names the field: 400.
    Invalid(String),
    /// No such account, entry or message: 404.
    NotFound(String),
    /// Not possible in the state things are in (already undone, not
    /// moved, running already): 409.
    Conflict(String),
    /// The IMAP server failed: 502.
    Failed(String),
    /// The account cannot take it now (not connected, busy); nothing was
    /// changed: 503.
    Unavailable(String),
    /// The database cannot take writes now (a full disk, a read-only file
    /// system): 503, to be asked again later than [`Error::Unavailable`].
    Unwritable(String),
    /// The store failed (a bug or a full disk): 500.
    Internal(String),
}

impl Error {
    pub fn message(&self) -> &str {
        match self {
            Error::Invalid(m)
            | Error::NotFound(m)
            | Error::Conflict(m)
            | Error::Failed(m)
            | Error::Unavailable(m)
            | Error::Unwritable(m)
            | Error::Internal(m) => m,
        }
    }
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.message())
    }
}

impl From<StoreError> for Error {
    /// A failure for want of the disk is the host's state, not a bug.
    fn from(e: StoreError) -> Error {
        if e.is_unwritable() {
            return Error::Unwritable(format!("the database cannot be written now: {e}"));
        }
        Error::Internal(e.to_string())
    }
}

impl From<account::RefileError> for Error {
    fn from(e: account::RefileError) -> Error {
        match e {
            account::RefileError::Refused(m) => Error::Conflict(m),
            account::RefileError::Failed(m) => Error::Failed(m),
            account::RefileError::Unavailable(m) => Error::Unavailable(m),
        }
    }
}
