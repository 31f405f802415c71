//! Shared test harness: real Dovecot, the real binary, a scripted model
//! and a scripted OAuth2 token endpoint.
#![allow(dead_code)]

pub mod attacks;
pub mod dovecot;
pub mod hooks;
pub mod local_model;
pub mod mail;
pub mod mailproc;
pub mod model;
pub mod token;
