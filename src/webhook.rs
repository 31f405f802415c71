//! Outgoing webhooks: one dispatcher thread fed by a bounded channel.
//!
//! (Being written: see the interface below. Producers call [`Webhooks::emit`],
//! which never blocks; the `webhooks` thread delivers each event to every
//! target that wants it, SSRF-guarded, and records the outcome.)

use std::collections::BTreeMap;
use std::sync::Arc;
use std::thread::JoinHandle;

use crate::config::{Config, EventKind};
use crate::metrics::Metrics;
use crate::store::Store;

/// The refusal text of SPEC §7, word for word.
pub const SSRF_MESSAGE: &str = "Cannot test webhooks to private or local addresses";

pub enum TestOutcome {
    /// The target resolves to a blocked address.
    Refused,
    /// The URL does not parse or is not http(s).
    BadUrl(String),
    /// The target answered with this status.
    Status(u16),
    /// No status came back (connection refused, timeout, TLS error).
    Failed(String),
}

pub struct Webhooks {
    _store: Arc<Store>,
    _metrics: Arc<Metrics>,
}

impl Webhooks {
    pub fn start(
        _config: &Config,
        store: Arc<Store>,
        metrics: Arc<Metrics>,
    ) -> std::io::Result<(Arc<Webhooks>, JoinHandle<()>)> {
        let w = Arc::new(Webhooks {
            _store: store,
            _metrics: metrics,
        });
        let h = std::thread::Builder::new()
            .name("webhooks".into())
            .spawn(|| {})?;
        Ok((w, h))
    }

    /// Queues an event for `account` with its payload fields (without
    /// `event` and `timestamp`, which are added here). Never blocks.
    pub fn emit(&self, _kind: EventKind, _account: &str, _fields: serde_json::Value) {}

    /// Sends a test payload to `url` (SSRF-guarded) and reports the outcome.
    pub fn test(
        &self,
        _config: &Config,
        _url: &str,
        _headers: &BTreeMap<String, String>,
    ) -> TestOutcome {
        TestOutcome::Failed("not implemented yet".into())
    }

    /// Stops the thread after delivering what is queued, for up to 5 s.
    pub fn shutdown(&self) {}
}
