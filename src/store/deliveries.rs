//! The webhook delivery log.

use std::time::Duration;

use rusqlite::params;
use serde::Serialize;

use super::{Result, Store};
use crate::timestamp::{iso_ms, now_ms};

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Delivery {
    pub id: i64,
    pub timestamp: String,
    pub event: String,
    pub url: String,
    pub account: Option<String>,
    /// As `mailproc_webhook_deliveries_total` counts it: `success` (a 2xx
    /// answer), `http_error` (any other answer), `refused` (the SSRF
    /// guard), `failed` (no answer: a refused connection, a time-out, a
    /// name that does not resolve) or `skipped` (not attempted while the
    /// target is in its wait after giving no answer).
    pub outcome: String,
    pub status_code: Option<u16>,
    pub error: Option<String>,
    pub duration_ms: u64,
}

impl Store {
    #[allow(clippy::too_many_arguments)]
    pub fn record_delivery(
        &self,
        event: &str,
        outcome: &str,
        url: &str,
        account: Option<&str>,
        status_code: Option<u16>,
        error: Option<&str>,
        duration: Duration,
    ) -> Result<()> {
        self.op("record_delivery", || {
            self.conn.lock().execute(
                "INSERT INTO webhook_deliveries
                     (at, event, outcome, url, account, status_code, error, duration_ms)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
                params![
                    now_ms(),
                    event,
                    outcome,
                    url,
                    account,
                    status_code,
                    error,
                    duration.as_millis() as i64
                ],
            )?;
            Ok(())
        })
    }

    pub fn deliveries(&self, limit: u32, offset: u64) -> Result<(Vec<Delivery>, u64)> {
        self.op("deliveries", || {
            let conn = self.reader();
            let total: u64 =
                conn.query_row("SELECT COUNT(*) FROM webhook_deliveries", [], |r| r.get(0))?;
            let mut st = conn.prepare_cached(
                "SELECT id, at, event, url, account, status_code, error, duration_ms, outcome
                 FROM webhook_deliveries ORDER BY id DESC LIMIT ?1 OFFSET ?2",
            )?;
            let rows = st.query_map(params![limit, offset as i64], |r| {
                Ok(Delivery {
                    id: r.get(0)?,
                    timestamp: iso_ms(r.get(1)?),
                    event: r.get(2)?,
                    // Masked as it is read too: a row written before the
                    // masking knew a token's shape keeps it (the second
                    // regression audit, stop 59), as do the errors.
                    url: crate::config::redact_url(&r.get::<_, String>(3)?),
                    account: r.get(4)?,
                    status_code: r.get(5)?,
                    error: r
                        .get::<_, Option<String>>(6)?
                        .map(|e| crate::config::redact_text(&e)),
                    duration_ms: r.get(7)?,
                    outcome: r.get(8)?,
                })
            })?;
            Ok((rows.collect::<std::result::Result<_, _>>()?, total))
        })
    }
}
