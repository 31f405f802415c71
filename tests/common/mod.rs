//! Shared test harness: real Dovecot, the real binary, a scripted model
//! a scripted OAuth2 token endpoint and a real browser (chromedriver).
#![allow(dead_code)]

pub mod dovecot;
pub mod hooks;
pub mod local_model;
pub mod mail;
pub mod mailproc;
pub mod model;
pub mod token;
pub mod webdriver;
