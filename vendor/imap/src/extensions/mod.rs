//! Implementations of various IMAP extensions.
pub mod idle;
pub mod list_status;
pub mod metadata;
pub mod sort;
