//! Shared test harness: real Dovecot, the real binary, a scripted model.
#![allow(dead_code)]

pub mod dovecot;
pub mod hooks;
pub mod local_model;
pub mod mailproc;
pub mod model;
