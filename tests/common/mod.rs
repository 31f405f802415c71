//! Shared test harness: real IMAP servers (Dovecot, Cyrus, Courier; see
//! `server`), the real binary, a scripted model, a scripted OAuth2 token
//! endpoint and a real browser (chromedriver).
#![allow(dead_code)]

pub mod attacks;
pub mod courier;
pub mod cyrus;
pub mod dovecot;
pub mod hooks;
pub mod imap_client;
pub mod lmtp;
pub mod local_model;
pub mod mail;
pub mod mailproc;
pub mod model;
pub mod server;
pub mod token;
pub mod wait;
pub mod webdriver;
