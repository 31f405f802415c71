//! mailproc: watches IMAP mailboxes, classifies new mail with rules and a
//! language model, acts on it, records everything, and serves an HTTP API.
//!
//! The binary (`main.rs`) only wires these modules together; the library
//! exists so integration tests and benchmarks can use the store directly.
#![forbid(unsafe_code)]

pub use build_info::{COMMIT, VERSION};

pub mod account;
pub mod actions;
pub mod agent;
pub mod api;
pub mod auth;
pub mod backoff;
pub mod build_info;
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
