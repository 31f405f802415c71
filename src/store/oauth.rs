//! Refresh tokens an OAuth2 provider rotated: kept here, never in the
//! configuration file, so a restart signs in with the newest one.

use rusqlite::{params, OptionalExtension};

use super::{Result, Store};
use crate::timestamp::now_ms;

impl Store {
    /// The rotated refresh token of `account` and the fingerprint of the
    /// configured token it descends from.
    pub fn oauth_refresh_token(&self, account: &str) -> Result<Option<(String, String)>> {
        self.op("oauth_refresh_token", || {
            Ok(self
                .conn
                .lock()
                .query_row(
                    "SELECT refresh_token, origin FROM oauth_tokens WHERE account = ?1",
                    [account],
                    |r| Ok((r.get(0)?, r.get(1)?)),
                )
                .optional()?)
        })
    }

    pub fn set_oauth_refresh_token(&self, account: &str, token: &str, origin: &str) -> Result<()> {
        self.op("set_oauth_refresh_token", || {
            self.conn.lock().execute(
                "INSERT INTO oauth_tokens (account, refresh_token, origin, updated_at)
                 VALUES (?1, ?2, ?3, ?4)
                 ON CONFLICT (account) DO UPDATE SET refresh_token = excluded.refresh_token,
                     origin = excluded.origin, updated_at = excluded.updated_at",
                params![account, token, origin, now_ms()],
            )?;
            Ok(())
        })
    }
}
