//! mailproc: watches IMAP mailboxes, classifies new mail with rules and a
//! language model, acts on it, records everything, and serves an HTTP API.
//!
//! The binary (`main.rs`) only wires these modules together; the library
//! exists so integration tests and benchmarks can use the store directly.
#![forbid(unsafe_code)]

/// The commit this binary was built from (12 hex digits), or `unknown`
/// outside a git checkout (`build.rs`).
pub const COMMIT: &str = env!("MAILPROC_COMMIT");
/// The version and commit, as `mailproc --version` prints them:
/// `0.1.0 (commit 0123456789ab)`.
pub const VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (commit ",
    env!("MAILPROC_COMMIT"),
    ")"
);

pub mod account;
pub mod actions;
pub mod agent;
pub mod api;
pub mod auth;
pub mod backoff;
pub mod classify;
pub mod config;
pub mod daemon;
pub mod dashboard;
pub mod email;
pub mod failpoint;
pub mod gate;
pub mod http;
pub mod imap;
pub mod learn;
pub mod live;
pub mod logging;
pub mod mailbox;
pub mod metrics;
pub mod notify;
pub mod oauth;
pub mod resolve;
pub mod routes;
pub mod service;
pub mod shown;
pub mod signals;
pub mod store;
pub mod timestamp;
pub mod webhook;
