//! Dashboard users (argon2id hashes) and their sessions (HMACs of tokens).

use rusqlite::{params, OptionalExtension};

use super::{Result, Store};
use crate::timestamp::now_ms;

impl Store {
    pub fn user_count(&self) -> Result<u64> {
        self.op("user_count", || {
            Ok(self
                .conn
                .lock()
                .query_row("SELECT COUNT(*) FROM users", [], |r| r.get(0))?)
        })
    }

    pub fn password_hash(&self, username: &str) -> Result<Option<String>> {
        self.op("password_hash", || {
            Ok(self
                .conn
                .lock()
                .query_row(
                    "SELECT password_hash FROM users WHERE username = ?1",
                    [username],
                    |r| r.get(0),
                )
                .optional()?)
        })
    }

    /// The first `limit` users and their password hashes (to check a
    /// device cookie, which names no user).
    pub fn user_hashes(&self, limit: usize) -> Result<Vec<(String, String)>> {
        self.op("user_hashes", || {
            let conn = self.conn.lock();
            let mut st = conn.prepare_cached(
                "SELECT username, password_hash FROM users ORDER BY username LIMIT ?1",
            )?;
            let rows = st.query_map([limit as i64], |r| Ok((r.get(0)?, r.get(1)?)))?;
            Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
        })
    }

    /// Creates the user or replaces its password; existing sessions of the
    /// user end, since a reset password must lock out whoever had the old one.
    pub fn set_password(&self, username: &str, hash: &str) -> Result<()> {
        self.op("set_password", || {
            let mut conn = self.conn.lock();
            let tx = conn.transaction()?;
            tx.execute(
                "INSERT INTO users (username, password_hash, created_at) VALUES (?1, ?2, ?3)
                 ON CONFLICT (username) DO UPDATE SET password_hash = excluded.password_hash",
                params![username, hash, now_ms()],
            )?;
            tx.execute("DELETE FROM sessions WHERE username = ?1", [username])?;
            tx.commit()?;
            Ok(())
        })
    }

    pub fn create_session(&self, token_mac: &str, username: &str, expires_at: i64) -> Result<()> {
        self.op("create_session", || {
            self.conn.lock().execute(
                "INSERT INTO sessions (token_mac, username, created_at, expires_at) VALUES (?1, ?2, ?3, ?4)",
                params![token_mac, username, now_ms(), expires_at],
            )?;
            Ok(())
        })
    }

    /// The user of a live session.
    pub fn session_user(&self, token_mac: &str) -> Result<Option<String>> {
        self.op("session_user", || {
            Ok(self
                .conn
                .lock()
                .query_row(
                    "SELECT username FROM sessions WHERE token_mac = ?1 AND expires_at > ?2",
                    params![token_mac, now_ms()],
                    |r| r.get(0),
                )
                .optional()?)
        })
    }

    pub fn delete_session(&self, token_mac: &str) -> Result<()> {
        self.op("delete_session", || {
            self.conn
                .lock()
                .execute("DELETE FROM sessions WHERE token_mac = ?1", [token_mac])?;
            Ok(())
        })
    }

    /// Creates the first user, only while there is none (the dashboard's
    /// setup page): the check and the insert are one statement, so two
    /// racing setups cannot both succeed. Returns whether the user was made.
    pub fn create_first_user(&self, username: &str, hash: &str) -> Result<bool> {
        self.op("create_first_user", || {
            let n = self.conn.lock().execute(
                "INSERT INTO users (username, password_hash, created_at)
                 SELECT ?1, ?2, ?3 WHERE NOT EXISTS (SELECT 1 FROM users)",
                params![username, hash, now_ms()],
            )?;
            Ok(n == 1)
        })
    }
}
