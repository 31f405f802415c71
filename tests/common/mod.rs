//! Shared test harness: real IMAP servers (Dovecot, Cyrus, Courier; see
//! `server`), the real binary, a scripted model, a scripted OAuth2 token
//! endpoint and a real browser (chromedriver).
#![allow(dead_code)]

pub mod attacks;
pub mod chromium;
pub mod corpus;
pub mod courier;
pub mod cyrus;
pub mod dashboard;
pub mod dovecot;
pub mod fake_imap;
pub mod hooks;
pub mod imap_client;
pub mod lmtp;
pub mod local_model;
pub mod mail;
pub mod mailproc;
pub mod model;
pub mod processing;
pub mod receiver;
pub mod relay;
pub mod secured;
pub mod server;
pub mod token;
pub mod wait;
pub mod webdriver;
pub mod world;

/// Generates `mod dovecot`, `mod cyrus` and `mod courier`, each with one
/// `#[test]` per scenario: the function of that name in the test file,
/// taking the [`server::Kind`] to run on. A scenario written once runs on
/// all three servers (`cargo test cyrus::` runs one server's).
#[macro_export]
macro_rules! on_every_server {
    ($($scenario:ident),* $(,)?) => {
        mod dovecot {
            $( #[test] fn $scenario() { super::$scenario($crate::common::server::Kind::Dovecot) } )*
        }
        mod cyrus {
            $( #[test] fn $scenario() { super::$scenario($crate::common::server::Kind::Cyrus) } )*
        }
        mod courier {
            $( #[test] fn $scenario() { super::$scenario($crate::common::server::Kind::Courier) } )*
        }
    };
}
