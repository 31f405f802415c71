//! The store: one SQLite file behind one mutex, as musium keeps its library.
//!
//! WAL journal, a busy timeout and foreign keys are set on open; the schema is
//! migrated forward by `PRAGMA user_version`. Every query is one named method
//! here, so the SQL of the service can be read in one file. The lock is held
//! only for the statement or transaction at hand, never across network I/O.
//!
//! Processing guarantees rest on this file: an email row is written as
//! `pending` with its planned actions before any IMAP command changes the
//! message, and turned final (`ok`, `dry_run`, `review`, `failed`) in the same
//! transaction that advances the folder watermark. A crash in between leaves a
//! `pending` row the account worker finishes on restart without asking the
//! model again.

use std::path::Path;
use std::time::Duration;

use parking_lot::Mutex;
use rusqlite::{params, params_from_iter, Connection, OptionalExtension};
use serde::Serialize;

use crate::actions::Action;
use crate::timestamp::{iso_ms, now_ms};

#[derive(Debug)]
pub struct StoreError(pub String);

impl std::fmt::Display for StoreError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "store: {}", self.0)
    }
}

impl std::error::Error for StoreError {}

impl From<rusqlite::Error> for StoreError {
    fn from(e: rusqlite::Error) -> Self {
        StoreError(e.to_string())
    }
}

pub type Result<T> = std::result::Result<T, StoreError>;

/// Schema steps; `user_version` counts how many have run.
const MIGRATIONS: &[&str] = &[
    // 1: the first schema.
    r#"
    CREATE TABLE settings (key TEXT PRIMARY KEY, value TEXT NOT NULL);
    CREATE TABLE folder_state (
        account TEXT NOT NULL, mailbox TEXT NOT NULL,
        uidvalidity INTEGER NOT NULL, last_uid INTEGER NOT NULL,
        PRIMARY KEY (account, mailbox));
    CREATE TABLE emails (
        id INTEGER PRIMARY KEY,
        account TEXT NOT NULL, mailbox TEXT NOT NULL,
        uidvalidity INTEGER NOT NULL, uid INTEGER NOT NULL,
        message_id TEXT NOT NULL DEFAULT '',
        subject TEXT NOT NULL DEFAULT '',
        sender TEXT NOT NULL DEFAULT '',
        processed_at INTEGER NOT NULL,
        status TEXT NOT NULL,
        actions TEXT NOT NULL DEFAULT '[]',
        model TEXT NOT NULL DEFAULT '',
        reasoning TEXT NOT NULL DEFAULT '',
        confidence REAL,
        error TEXT,
        attempts INTEGER NOT NULL DEFAULT 0,
        next_attempt_at INTEGER,
        dest_folder TEXT,
        dest_uid INTEGER,
        UNIQUE (account, mailbox, uidvalidity, uid));
    CREATE INDEX emails_time ON emails (processed_at);
    CREATE INDEX emails_account_time ON emails (account, processed_at);
    CREATE INDEX emails_status ON emails (status) WHERE status IN ('pending', 'retrying', 'failed');
    CREATE TABLE actions (
        id INTEGER PRIMARY KEY,
        email_id INTEGER NOT NULL REFERENCES emails (id) ON DELETE CASCADE,
        account TEXT NOT NULL,
        processed_at INTEGER NOT NULL,
        type TEXT NOT NULL,
        folder TEXT,
        flags TEXT);
    CREATE INDEX actions_email ON actions (email_id, type);
    CREATE INDEX actions_time ON actions (processed_at, account, type);
    CREATE VIRTUAL TABLE emails_fts USING fts5 (
        subject, message_id, content = 'emails', content_rowid = 'id', tokenize = 'trigram');
    CREATE TRIGGER emails_fts_insert AFTER INSERT ON emails BEGIN
        INSERT INTO emails_fts (rowid, subject, message_id) VALUES (new.id, new.subject, new.message_id);
    END;
    CREATE TRIGGER emails_fts_delete AFTER DELETE ON emails BEGIN
        INSERT INTO emails_fts (emails_fts, rowid, subject, message_id)
            VALUES ('delete', old.id, old.subject, old.message_id);
    END;
    CREATE TRIGGER emails_fts_update AFTER UPDATE OF subject, message_id ON emails BEGIN
        INSERT INTO emails_fts (emails_fts, rowid, subject, message_id)
            VALUES ('delete', old.id, old.subject, old.message_id);
        INSERT INTO emails_fts (rowid, subject, message_id) VALUES (new.id, new.subject, new.message_id);
    END;
    CREATE TABLE webhook_deliveries (
        id INTEGER PRIMARY KEY,
        at INTEGER NOT NULL,
        event TEXT NOT NULL,
        url TEXT NOT NULL,
        account TEXT,
        status_code INTEGER,
        error TEXT,
        duration_ms INTEGER NOT NULL);
    CREATE INDEX webhook_deliveries_at ON webhook_deliveries (at);
    CREATE TABLE users (
        username TEXT PRIMARY KEY,
        password_hash TEXT NOT NULL,
        created_at INTEGER NOT NULL);
    CREATE TABLE sessions (
        token_mac TEXT PRIMARY KEY,
        username TEXT NOT NULL REFERENCES users (username) ON DELETE CASCADE,
        created_at INTEGER NOT NULL,
        expires_at INTEGER NOT NULL);
    -- Daily counters kept exact by triggers (inserts, status changes,
    -- pruning), so statistics over months are a sum of a few rows instead of
    -- a scan of every email and action. key: '_processed' or an action type.
    CREATE TABLE stats_daily (
        day INTEGER NOT NULL, account TEXT NOT NULL, key TEXT NOT NULL, n INTEGER NOT NULL,
        PRIMARY KEY (day, account, key)) WITHOUT ROWID;
    CREATE TRIGGER stats_email_insert AFTER INSERT ON emails
        WHEN new.status IN ('ok', 'dry_run', 'review') BEGIN
        INSERT INTO stats_daily VALUES (new.processed_at / 86400000, new.account, '_processed', 1)
            ON CONFLICT DO UPDATE SET n = n + 1;
    END;
    CREATE TRIGGER stats_email_delete AFTER DELETE ON emails
        WHEN old.status IN ('ok', 'dry_run', 'review') BEGIN
        UPDATE stats_daily SET n = n - 1
            WHERE day = old.processed_at / 86400000 AND account = old.account AND key = '_processed';
    END;
    CREATE TRIGGER stats_email_update_old AFTER UPDATE OF status, processed_at, account ON emails
        WHEN old.status IN ('ok', 'dry_run', 'review') BEGIN
        UPDATE stats_daily SET n = n - 1
            WHERE day = old.processed_at / 86400000 AND account = old.account AND key = '_processed';
    END;
    CREATE TRIGGER stats_email_update_new AFTER UPDATE OF status, processed_at, account ON emails
        WHEN new.status IN ('ok', 'dry_run', 'review') BEGIN
        INSERT INTO stats_daily VALUES (new.processed_at / 86400000, new.account, '_processed', 1)
            ON CONFLICT DO UPDATE SET n = n + 1;
    END;
    CREATE TRIGGER stats_action_insert AFTER INSERT ON actions BEGIN
        INSERT INTO stats_daily VALUES (new.processed_at / 86400000, new.account, new.type, 1)
            ON CONFLICT DO UPDATE SET n = n + 1;
    END;
    CREATE TRIGGER stats_action_delete AFTER DELETE ON actions BEGIN
        UPDATE stats_daily SET n = n - 1
            WHERE day = old.processed_at / 86400000 AND account = old.account AND key = old.type;
    END;
    CREATE TRIGGER stats_action_update AFTER UPDATE OF processed_at ON actions BEGIN
        UPDATE stats_daily SET n = n - 1
            WHERE day = old.processed_at / 86400000 AND account = old.account AND key = old.type;
        INSERT INTO stats_daily VALUES (new.processed_at / 86400000, new.account, new.type, 1)
            ON CONFLICT DO UPDATE SET n = n + 1;
    END;
    "#,
];

/// Statuses of an email row. `pending` and `retrying` are not final.
pub mod status {
    pub const PENDING: &str = "pending";
    pub const OK: &str = "ok";
    pub const DRY_RUN: &str = "dry_run";
    pub const REVIEW: &str = "review";
    pub const RETRYING: &str = "retrying";
    pub const FAILED: &str = "failed";
    /// Statuses counted as processed in statistics.
    pub const PROCESSED: [&str; 3] = [OK, DRY_RUN, REVIEW];
    pub const ALL: [&str; 6] = [PENDING, OK, DRY_RUN, REVIEW, RETRYING, FAILED];
}

pub struct Store {
    conn: Mutex<Connection>,
}

/// What is known of a message before it is recorded.
#[derive(Debug, Clone, Default)]
pub struct EmailMeta {
    pub account: String,
    pub mailbox: String,
    pub uidvalidity: u32,
    pub uid: u32,
    pub message_id: String,
    pub subject: String,
    pub from: String,
}

/// The decision about one message, recorded before and after acting on it.
#[derive(Debug, Clone, Default)]
pub struct Outcome {
    pub status: &'static str,
    pub actions: Vec<Action>,
    pub model: String,
    pub reasoning: String,
    pub confidence: Option<f64>,
    pub error: Option<String>,
    pub dest_folder: Option<String>,
    pub dest_uid: Option<u32>,
}

/// A failed attempt at a message, recorded with its batch.
#[derive(Debug, Clone)]
pub struct FailedAttempt {
    pub meta: EmailMeta,
    pub error: String,
    /// Attempts after which the message is parked as `failed`.
    pub max_attempts: u32,
    /// When the next attempt is due (epoch ms) while below the limit; the
    /// delay doubles with each attempt, capped by the caller.
    pub retry_delay_ms: i64,
}

/// What [`Store::record_batch`] did with a failed attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FailureRecord {
    pub attempts: u32,
    pub status: &'static str,
}

/// A row of the activity log as the API returns it.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ActivityEntry {
    pub id: i64,
    /// Epoch ms behind `timestamp`, for keyset paging.
    #[serde(skip)]
    pub processed_at: i64,
    pub timestamp: String,
    pub account: String,
    pub mailbox: String,
    pub uid: u32,
    pub message_id: String,
    pub subject: String,
    pub from: String,
    pub actions: serde_json::Value,
    pub model: String,
    pub reasoning: String,
    pub confidence: Option<f64>,
    pub status: String,
    pub error: Option<String>,
    pub attempts: u32,
}

#[derive(Debug, Clone, Default)]
pub struct ActivityQuery {
    pub page: u32,
    pub page_size: u32,
    pub account: Option<String>,
    pub action_type: Option<String>,
    pub status: Option<String>,
    pub search: Option<String>,
    pub start_ms: Option<i64>,
    pub end_ms: Option<i64>,
    /// Only rows after this `(processed_at, id)` in the newest-first order:
    /// a cursor that stays right while new rows arrive (exports page by it).
    pub before: Option<(i64, i64)>,
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct Stats {
    pub total_processed: u64,
    pub by_action: std::collections::BTreeMap<String, u64>,
    pub by_account: std::collections::BTreeMap<String, u64>,
}

/// A row already recorded for a UID above the folder watermark.
#[derive(Debug, Clone)]
pub struct KnownEmail {
    pub id: i64,
    pub uid: u32,
    pub status: String,
    pub actions: Vec<Action>,
    pub model: String,
    pub reasoning: String,
    pub confidence: Option<f64>,
    pub attempts: u32,
    pub next_attempt_at: Option<i64>,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Delivery {
    pub id: i64,
    pub timestamp: String,
    pub event: String,
    pub url: String,
    pub account: Option<String>,
    pub status_code: Option<u16>,
    pub error: Option<String>,
    pub duration_ms: u64,
}

fn actions_json(actions: &[Action]) -> String {
    serde_json::to_string(actions).unwrap_or_else(|_| "[]".into())
}

/// Switches the file to WAL (a persistent setting). SQLite answers BUSY at
/// once, without the busy handler, while another connection holds the file
/// (two processes opening a new database), so the switch is retried here.
fn set_wal(conn: &Connection) -> Result<()> {
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    loop {
        match conn.pragma_update_and_check(None, "journal_mode", "WAL", |r| r.get::<_, String>(0)) {
            Ok(_) => return Ok(()),
            Err(rusqlite::Error::SqliteFailure(e, _))
                if e.code == rusqlite::ErrorCode::DatabaseBusy
                    && std::time::Instant::now() < deadline =>
            {
                std::thread::sleep(Duration::from_millis(10));
            }
            Err(e) => return Err(StoreError(format!("switching to WAL: {e}"))),
        }
    }
}

/// Records the actions of an email as taken. Only an `ok` outcome's actions
/// were carried out by the server; others (dry run, review) count nothing.
fn insert_actions(
    st: &mut rusqlite::CachedStatement<'_>,
    email_id: i64,
    account: &str,
    at: i64,
    o: &Outcome,
) -> rusqlite::Result<()> {
    if o.status != status::OK {
        return Ok(());
    }
    for a in &o.actions {
        let (folder, flags) = match a {
            Action::Move { folder } => (Some(folder.as_str()), None),
            Action::Flag { flags } => (None, serde_json::to_string(flags).ok()),
            _ => (None, None),
        };
        st.execute(params![
            email_id,
            account,
            at,
            a.kind().as_str(),
            folder,
            flags
        ])?;
    }
    Ok(())
}

/// Longest wait between two attempts at a message, however often it failed.
const MAX_RETRY_DELAY_MS: i64 = 24 * 3600 * 1000;

/// Upserts a failed attempt inside `tx`: one more attempt, the error, and
/// either a retry due after `retry_delay_ms * 2^(attempts-1)` (at most a
/// day) or, at `max_attempts`, the `failed` status.
fn insert_failure(tx: &rusqlite::Transaction<'_>, f: &FailedAttempt) -> Result<FailureRecord> {
    let m = &f.meta;
    let now = now_ms();
    let mut st = tx.prepare_cached(
        "INSERT INTO emails (account, mailbox, uidvalidity, uid, message_id, subject, sender,
            processed_at, status, error, attempts)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, 'retrying', ?9, 1)
         ON CONFLICT (account, mailbox, uidvalidity, uid) DO UPDATE SET
            attempts = emails.attempts + 1, error = excluded.error,
            processed_at = excluded.processed_at, status = 'retrying',
            message_id = CASE WHEN excluded.message_id = '' THEN emails.message_id ELSE excluded.message_id END,
            subject = CASE WHEN excluded.subject = '' THEN emails.subject ELSE excluded.subject END,
            sender = CASE WHEN excluded.sender = '' THEN emails.sender ELSE excluded.sender END
         RETURNING id, attempts",
    )?;
    let (id, attempts): (i64, u32) = st.query_row(
        params![
            m.account,
            m.mailbox,
            m.uidvalidity,
            m.uid,
            m.message_id,
            m.subject,
            m.from,
            now,
            f.error
        ],
        |r| Ok((r.get(0)?, r.get(1)?)),
    )?;
    let status = if attempts >= f.max_attempts {
        status::FAILED
    } else {
        status::RETRYING
    };
    let next = (status == status::RETRYING).then(|| {
        let factor = 1i64 << attempts.saturating_sub(1).min(30);
        now.saturating_add(
            f.retry_delay_ms
                .max(0)
                .saturating_mul(factor)
                .min(MAX_RETRY_DELAY_MS),
        )
    });
    tx.prepare_cached("UPDATE emails SET status = ?2, next_attempt_at = ?3 WHERE id = ?1")?
        .execute(params![id, status, next])?;
    Ok(FailureRecord { attempts, status })
}

fn parse_actions(s: &str) -> Vec<Action> {
    serde_json::from_str(s).unwrap_or_default()
}

impl Store {
    /// Opens (creating when missing) and migrates the database at `path`.
    pub fn open(path: &Path) -> Result<Store> {
        if let Some(dir) = path.parent() {
            if !dir.as_os_str().is_empty() && !dir.exists() {
                std::fs::create_dir_all(dir)
                    .map_err(|e| StoreError(format!("{}: {e}", dir.display())))?;
            }
        }
        let conn =
            Connection::open(path).map_err(|e| StoreError(format!("{}: {e}", path.display())))?;
        Self::init(conn)
    }

    pub fn open_in_memory() -> Result<Store> {
        Self::init(Connection::open_in_memory()?)
    }

    fn init(conn: Connection) -> Result<Store> {
        // Other processes (a second `mailproc set-password`, sqlite3 in a
        // shell) may hold the lock briefly; wait rather than fail.
        conn.busy_timeout(Duration::from_secs(5))?;
        set_wal(&conn)?;
        conn.pragma_update(None, "synchronous", "NORMAL")?;
        conn.pragma_update(None, "foreign_keys", "ON")?;
        let store = Store {
            conn: Mutex::new(conn),
        };
        store.migrate()?;
        Ok(store)
    }

    fn migrate(&self) -> Result<()> {
        let mut conn = self.conn.lock();
        // The version is read inside a write transaction: a second process
        // opening the same new file (`mailproc set-password` while the
        // service starts) waits here and then finds the schema in place,
        // instead of running the same migration again.
        let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
        let version: usize = tx.pragma_query_value(None, "user_version", |r| r.get(0))?;
        if version > MIGRATIONS.len() {
            return Err(StoreError(format!(
                "database schema version {version} is newer than this mailproc ({}); upgrade mailproc",
                MIGRATIONS.len()
            )));
        }
        for (i, step) in MIGRATIONS.iter().enumerate().skip(version) {
            tx.execute_batch(step)?;
            tx.pragma_update(None, "user_version", i + 1)?;
            log::info!("store: migrated schema to version {}", i + 1);
        }
        tx.commit()?;
        Ok(())
    }

    /// A trivial query, for `/health`.
    pub fn ping(&self) -> Result<()> {
        self.conn.lock().query_row("SELECT 1", [], |_| Ok(()))?;
        Ok(())
    }

    // ----- settings -----

    pub fn setting(&self, key: &str) -> Result<Option<String>> {
        Ok(self
            .conn
            .lock()
            .query_row("SELECT value FROM settings WHERE key = ?1", [key], |r| {
                r.get(0)
            })
            .optional()?)
    }

    pub fn set_setting(&self, key: &str, value: &str) -> Result<()> {
        self.conn.lock().execute(
            "INSERT INTO settings (key, value) VALUES (?1, ?2)
             ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            params![key, value],
        )?;
        Ok(())
    }

    // ----- folder watermarks -----

    /// `(uidvalidity, last_uid)` of a watched folder, if it was seen before.
    pub fn folder_state(&self, account: &str, mailbox: &str) -> Result<Option<(u32, u32)>> {
        Ok(self
            .conn
            .lock()
            .query_row(
                "SELECT uidvalidity, last_uid FROM folder_state WHERE account = ?1 AND mailbox = ?2",
                params![account, mailbox],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .optional()?)
    }

    pub fn set_folder_state(
        &self,
        account: &str,
        mailbox: &str,
        uidvalidity: u32,
        last_uid: u32,
    ) -> Result<()> {
        self.conn.lock().execute(
            "INSERT INTO folder_state (account, mailbox, uidvalidity, last_uid) VALUES (?1, ?2, ?3, ?4)
             ON CONFLICT (account, mailbox) DO UPDATE SET uidvalidity = excluded.uidvalidity, last_uid = excluded.last_uid",
            params![account, mailbox, uidvalidity, last_uid],
        )?;
        Ok(())
    }

    // ----- emails: the processing journal and activity log -----

    /// Rows recorded for UIDs of a folder above `after_uid` (they exist when a
    /// run stopped between acting and advancing the watermark), plus rows
    /// waiting for a retry at any UID.
    pub fn known_emails(
        &self,
        account: &str,
        mailbox: &str,
        uidvalidity: u32,
        after_uid: u32,
    ) -> Result<Vec<KnownEmail>> {
        let conn = self.conn.lock();
        let mut st = conn.prepare_cached(
            "SELECT id, uid, status, actions, model, reasoning, confidence, attempts, next_attempt_at
             FROM emails WHERE account = ?1 AND mailbox = ?2 AND uidvalidity = ?3
               AND (uid > ?4 OR status IN ('pending', 'retrying'))
             ORDER BY uid",
        )?;
        let rows = st.query_map(params![account, mailbox, uidvalidity, after_uid], |r| {
            Ok(KnownEmail {
                id: r.get(0)?,
                uid: r.get(1)?,
                status: r.get(2)?,
                actions: parse_actions(&r.get::<_, String>(3)?),
                model: r.get(4)?,
                reasoning: r.get(5)?,
                confidence: r.get(6)?,
                attempts: r.get(7)?,
                next_attempt_at: r.get(8)?,
            })
        })?;
        Ok(rows.collect::<std::result::Result<_, _>>()?)
    }

    /// Writes (or rewrites) the journal rows of a batch before acting on it.
    pub fn record_pending(&self, items: &[(EmailMeta, Outcome)]) -> Result<()> {
        let mut conn = self.conn.lock();
        let tx = conn.transaction()?;
        {
            let mut st = tx.prepare_cached(
                "INSERT INTO emails (account, mailbox, uidvalidity, uid, message_id, subject, sender,
                    processed_at, status, actions, model, reasoning, confidence, error, attempts)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, 'pending', ?9, ?10, ?11, ?12, NULL, 0)
                 ON CONFLICT (account, mailbox, uidvalidity, uid) DO UPDATE SET
                    status = 'pending', actions = excluded.actions, model = excluded.model,
                    reasoning = excluded.reasoning, confidence = excluded.confidence,
                    processed_at = excluded.processed_at",
            )?;
            let now = now_ms();
            for (m, o) in items {
                st.execute(params![
                    m.account,
                    m.mailbox,
                    m.uidvalidity,
                    m.uid,
                    m.message_id,
                    m.subject,
                    m.from,
                    now,
                    actions_json(&o.actions),
                    o.model,
                    o.reasoning,
                    o.confidence,
                ])?;
            }
        }
        tx.commit()?;
        Ok(())
    }

    /// Records the final outcome of a batch and advances the folder
    /// watermark, in one transaction: either all of it is durable or none.
    /// Returns the row ids in the order of `items`.
    pub fn record_final(
        &self,
        items: &[(EmailMeta, Outcome)],
        watermark: Option<(&str, &str, u32, u32)>,
    ) -> Result<Vec<i64>> {
        self.record_batch(items, &[], watermark).map(|(ids, _)| ids)
    }

    /// Records a batch in one transaction: the final outcomes, the failed
    /// attempts (each waiting for a retry, or parked as `failed` at its
    /// limit) and the folder watermark. A UID the watermark passes therefore
    /// always has its row: a crash can lose no message between the two.
    /// Returns the row ids of `items` and what became of each failure.
    pub fn record_batch(
        &self,
        items: &[(EmailMeta, Outcome)],
        failures: &[FailedAttempt],
        watermark: Option<(&str, &str, u32, u32)>,
    ) -> Result<(Vec<i64>, Vec<FailureRecord>)> {
        if crate::failpoint::fails("record-batch") {
            return Err(StoreError("record_batch: failpoint record-batch".into()));
        }
        let mut conn = self.conn.lock();
        let tx = conn.transaction()?;
        let mut failed = Vec::with_capacity(failures.len());
        for f in failures {
            failed.push(insert_failure(&tx, f)?);
        }
        let mut ids = Vec::with_capacity(items.len());
        {
            let mut upsert = tx.prepare_cached(
                "INSERT INTO emails (account, mailbox, uidvalidity, uid, message_id, subject, sender,
                    processed_at, status, actions, model, reasoning, confidence, error, attempts,
                    dest_folder, dest_uid)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, 1, ?15, ?16)
                 ON CONFLICT (account, mailbox, uidvalidity, uid) DO UPDATE SET
                    status = excluded.status, actions = excluded.actions, model = excluded.model,
                    reasoning = excluded.reasoning, confidence = excluded.confidence,
                    error = excluded.error, processed_at = excluded.processed_at,
                    attempts = emails.attempts + 1, next_attempt_at = NULL,
                    dest_folder = excluded.dest_folder, dest_uid = excluded.dest_uid,
                    message_id = CASE WHEN excluded.message_id = '' THEN emails.message_id ELSE excluded.message_id END,
                    subject = CASE WHEN excluded.subject = '' THEN emails.subject ELSE excluded.subject END,
                    sender = CASE WHEN excluded.sender = '' THEN emails.sender ELSE excluded.sender END
                 RETURNING id",
            )?;
            let mut clear = tx.prepare_cached("DELETE FROM actions WHERE email_id = ?1")?;
            let mut act = tx.prepare_cached(
                "INSERT INTO actions (email_id, account, processed_at, type, folder, flags)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            )?;
            let now = now_ms();
            for (m, o) in items {
                let id: i64 = upsert.query_row(
                    params![
                        m.account,
                        m.mailbox,
                        m.uidvalidity,
                        m.uid,
                        m.message_id,
                        m.subject,
                        m.from,
                        now,
                        o.status,
                        actions_json(&o.actions),
                        o.model,
                        o.reasoning,
                        o.confidence,
                        o.error,
                        o.dest_folder,
                        o.dest_uid,
                    ],
                    |r| r.get(0),
                )?;
                clear.execute([id])?;
                insert_actions(&mut act, id, &m.account, now, o)?;
                ids.push(id);
            }
            if let Some((account, mailbox, uidvalidity, last_uid)) = watermark {
                // (Failures above are already in this transaction.)
                tx.execute(
                    "INSERT INTO folder_state (account, mailbox, uidvalidity, last_uid) VALUES (?1, ?2, ?3, ?4)
                     ON CONFLICT (account, mailbox) DO UPDATE SET uidvalidity = excluded.uidvalidity,
                        last_uid = max(folder_state.last_uid, excluded.last_uid)",
                    params![account, mailbox, uidvalidity, last_uid],
                )?;
            }
        }
        tx.commit()?;
        Ok((ids, failed))
    }

    /// Records one failed attempt on its own (see [`Store::record_batch`]).
    pub fn record_failure(
        &self,
        meta: &EmailMeta,
        error: &str,
        max_attempts: u32,
        retry_at: i64,
    ) -> Result<(i64, u32, &'static str)> {
        let f = FailedAttempt {
            meta: meta.clone(),
            error: error.to_string(),
            max_attempts,
            retry_delay_ms: retry_at.saturating_sub(now_ms()),
        };
        let mut conn = self.conn.lock();
        let tx = conn.transaction()?;
        let r = insert_failure(&tx, &f)?;
        let id: i64 = tx.query_row(
            "SELECT id FROM emails WHERE account = ?1 AND mailbox = ?2 AND uidvalidity = ?3 AND uid = ?4",
            params![meta.account, meta.mailbox, meta.uidvalidity, meta.uid],
            |r| r.get(0),
        )?;
        tx.commit()?;
        Ok((id, r.attempts, r.status))
    }

    /// When the next retry of an account falls due, if any is waiting.
    pub fn next_retry_at(&self, account: &str) -> Result<Option<i64>> {
        Ok(self.conn.lock().query_row(
            "SELECT min(next_attempt_at) FROM emails WHERE status = 'retrying' AND account = ?1",
            [account],
            |r| r.get(0),
        )?)
    }

    /// Puts a failed email back in line for another try (from the API or the
    /// dashboard). Returns its account, or `None` when no failed row has `id`.
    pub fn retry_failed(&self, id: i64) -> Result<Option<String>> {
        Ok(self
            .conn
            .lock()
            .query_row(
                "UPDATE emails SET status = 'retrying', attempts = 0, next_attempt_at = ?2
                 WHERE id = ?1 AND status = 'failed' RETURNING account",
                params![id, now_ms()],
                |r| r.get(0),
            )
            .optional()?)
    }

    /// One page of the activity log, newest first, and the number of matches.
    pub fn activity(&self, q: &ActivityQuery) -> Result<(Vec<ActivityEntry>, u64)> {
        let (from, where_sql, args) = activity_filter(q);
        let conn = self.conn.lock();
        let total: u64 = conn.query_row(
            &format!("SELECT COUNT(*) FROM {from} {where_sql}"),
            params_from_iter(args.iter()),
            |r| r.get(0),
        )?;
        let offset = u64::from(q.page.max(1) - 1) * u64::from(q.page_size);
        let rows = activity_rows(&conn, from, &where_sql, args, q.page_size, offset)?;
        Ok((rows, total))
    }

    /// Up to `limit` rows after the cursor `q.before`, newest first, without
    /// counting: exports walk the log with it, one short lock per page.
    pub fn activity_page(&self, q: &ActivityQuery, limit: u32) -> Result<Vec<ActivityEntry>> {
        let (from, where_sql, args) = activity_filter(q);
        let conn = self.conn.lock();
        activity_rows(&conn, from, &where_sql, args, limit, 0)
    }
}

/// The FROM and WHERE of an activity query, and their arguments.
fn activity_filter(q: &ActivityQuery) -> (&'static str, String, Vec<rusqlite::types::Value>) {
    {
        let mut where_ = Vec::new();
        let mut from = "emails e";
        let mut args: Vec<rusqlite::types::Value> = Vec::new();
        use rusqlite::types::Value as V;
        if let Some(a) = &q.account {
            where_.push("e.account = ?");
            args.push(V::Text(a.clone()));
        }
        if let Some(t) = &q.action_type {
            where_.push("EXISTS (SELECT 1 FROM actions x WHERE x.email_id = e.id AND x.type = ?)");
            args.push(V::Text(t.clone()));
        }
        if let Some(s) = &q.status {
            where_.push("e.status = ?");
            args.push(V::Text(s.clone()));
        }
        if let Some(s) = &q.start_ms {
            where_.push("e.processed_at >= ?");
            args.push(V::Integer(*s));
        }
        if let Some(s) = &q.end_ms {
            where_.push("e.processed_at <= ?");
            args.push(V::Integer(*s));
        }
        if let Some(s) = q.search.as_deref().filter(|s| !s.is_empty()) {
            if s.chars().count() >= 3 {
                // The trigram index answers substring matches without a
                // scan; the join below makes it drive the query (as an
                // `IN (subquery)` it cost twice as much over 100,000 rows,
                // and a plain join let the planner probe it per row).
                from = "emails_fts CROSS JOIN emails e ON e.id = emails_fts.rowid";
                where_.push("emails_fts MATCH ?");
                args.push(V::Text(format!("\"{}\"", s.replace('"', "\"\""))));
            } else {
                where_.push("(e.subject LIKE ? ESCAPE '\\' OR e.message_id LIKE ? ESCAPE '\\')");
                let pat = format!(
                    "%{}%",
                    s.replace('\\', "\\\\")
                        .replace('%', "\\%")
                        .replace('_', "\\_")
                );
                args.push(V::Text(pat.clone()));
                args.push(V::Text(pat));
            }
        }
        if let Some((at, id)) = q.before {
            where_.push("(e.processed_at < ? OR (e.processed_at = ? AND e.id < ?))");
            args.extend([V::Integer(at), V::Integer(at), V::Integer(id)]);
        }
        let where_sql = if where_.is_empty() {
            String::new()
        } else {
            format!("WHERE {}", where_.join(" AND "))
        };
        (from, where_sql, args)
    }
}

/// The columns an [`ActivityEntry`] is read from (`e` is `emails`).
const ACTIVITY_COLUMNS: &str = "e.id, e.processed_at, e.account, e.mailbox, e.uid, e.message_id, \
    e.subject, e.sender, e.actions, e.model, e.reasoning, e.confidence, e.status, e.error, e.attempts";

/// The columns of [`ACTIVITY_COLUMNS`] as an entry.
fn activity_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<ActivityEntry> {
    let actions: String = r.get(8)?;
    let at: i64 = r.get(1)?;
    Ok(ActivityEntry {
        id: r.get(0)?,
        processed_at: at,
        timestamp: iso_ms(at),
        account: r.get(2)?,
        mailbox: r.get(3)?,
        uid: r.get(4)?,
        message_id: r.get(5)?,
        subject: r.get(6)?,
        from: r.get(7)?,
        actions: serde_json::from_str(&actions).unwrap_or(serde_json::Value::Array(vec![])),
        model: r.get(9)?,
        reasoning: r.get(10)?,
        confidence: r.get(11)?,
        status: r.get(12)?,
        error: r.get(13)?,
        attempts: r.get(14)?,
    })
}

fn activity_rows(
    conn: &Connection,
    from: &str,
    where_sql: &str,
    mut page_args: Vec<rusqlite::types::Value>,
    limit: u32,
    offset: u64,
) -> Result<Vec<ActivityEntry>> {
    use rusqlite::types::Value as V;
    {
        page_args.push(V::Integer(i64::from(limit)));
        page_args.push(V::Integer(i64::try_from(offset).unwrap_or(i64::MAX)));
        let mut st = conn.prepare(&format!(
            "SELECT {ACTIVITY_COLUMNS}
             FROM {from} {where_sql} ORDER BY e.processed_at DESC, e.id DESC LIMIT ? OFFSET ?"
        ))?;
        let rows = st.query_map(params_from_iter(page_args.iter()), activity_row)?;
        Ok(rows.collect::<std::result::Result<_, _>>()?)
    }
}

impl Store {
    /// Counts of processed emails and executed actions since `since_ms`:
    /// whole days from the trigger-kept daily counters, the partial first
    /// day from the rows themselves, so the answer is exact and cheap.
    pub fn stats(&self, since_ms: Option<i64>, account: Option<&str>) -> Result<Stats> {
        const DAY: i64 = 86_400_000;
        let conn = self.conn.lock();
        let mut s = Stats::default();
        let mut add = |key: String, acct: String, n: i64| {
            let n = n.max(0) as u64;
            if n == 0 {
                return;
            }
            if key == "_processed" {
                s.total_processed += n;
                *s.by_account.entry(acct).or_insert(0) += n;
            } else {
                *s.by_action.entry(key).or_insert(0) += n;
            }
        };
        let first_full_day = match since_ms {
            None => i64::MIN,
            Some(since) => {
                let boundary = since.div_euclid(DAY) + i64::from(since.rem_euclid(DAY) != 0);
                let end = boundary.saturating_mul(DAY);
                let mut st = conn.prepare_cached(
                    "SELECT account, COUNT(*) FROM emails
                     WHERE processed_at >= ?1 AND processed_at < ?2 AND (?3 IS NULL OR account = ?3)
                       AND status IN ('ok', 'dry_run', 'review')
                     GROUP BY account",
                )?;
                for row in
                    st.query_map(params![since, end, account], |r| Ok((r.get(0)?, r.get(1)?)))?
                {
                    let (a, n): (String, i64) = row?;
                    add("_processed".into(), a, n);
                }
                let mut st = conn.prepare_cached(
                    "SELECT type, COUNT(*) FROM actions
                     WHERE processed_at >= ?1 AND processed_at < ?2 AND (?3 IS NULL OR account = ?3)
                     GROUP BY type",
                )?;
                for row in
                    st.query_map(params![since, end, account], |r| Ok((r.get(0)?, r.get(1)?)))?
                {
                    let (t, n): (String, i64) = row?;
                    add(t, String::new(), n);
                }
                boundary
            }
        };
        let mut st = conn.prepare_cached(
            "SELECT key, account, SUM(n) FROM stats_daily
             WHERE day >= ?1 AND (?2 IS NULL OR account = ?2) GROUP BY key, account",
        )?;
        for row in st.query_map(params![first_full_day, account], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?))
        })? {
            let (k, a, n): (String, String, i64) = row?;
            add(k, a, n);
        }
        Ok(s)
    }

    /// Number of parked failures per account, for `/api/accounts`.
    pub fn failed_counts(&self) -> Result<std::collections::BTreeMap<String, u64>> {
        let conn = self.conn.lock();
        let mut st = conn.prepare_cached(
            "SELECT account, COUNT(*) FROM emails WHERE status = 'failed' GROUP BY account",
        )?;
        let rows = st.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?;
        Ok(rows.collect::<std::result::Result<_, _>>()?)
    }

    // ----- webhook deliveries -----

    #[allow(clippy::too_many_arguments)]
    pub fn record_delivery(
        &self,
        event: &str,
        url: &str,
        account: Option<&str>,
        status_code: Option<u16>,
        error: Option<&str>,
        duration: Duration,
    ) -> Result<()> {
        self.conn.lock().execute(
            "INSERT INTO webhook_deliveries (at, event, url, account, status_code, error, duration_ms)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
            params![
                now_ms(),
                event,
                url,
                account,
                status_code,
                error,
                duration.as_millis() as i64
            ],
        )?;
        Ok(())
    }

    pub fn deliveries(&self, limit: u32, offset: u64) -> Result<(Vec<Delivery>, u64)> {
        let conn = self.conn.lock();
        let total: u64 =
            conn.query_row("SELECT COUNT(*) FROM webhook_deliveries", [], |r| r.get(0))?;
        let mut st = conn.prepare_cached(
            "SELECT id, at, event, url, account, status_code, error, duration_ms
             FROM webhook_deliveries ORDER BY id DESC LIMIT ?1 OFFSET ?2",
        )?;
        let rows = st.query_map(params![limit, offset as i64], |r| {
            Ok(Delivery {
                id: r.get(0)?,
                timestamp: iso_ms(r.get(1)?),
                event: r.get(2)?,
                url: r.get(3)?,
                account: r.get(4)?,
                status_code: r.get(5)?,
                error: r.get(6)?,
                duration_ms: r.get(7)?,
            })
        })?;
        Ok((rows.collect::<std::result::Result<_, _>>()?, total))
    }

    // ----- users and sessions -----

    pub fn user_count(&self) -> Result<u64> {
        Ok(self
            .conn
            .lock()
            .query_row("SELECT COUNT(*) FROM users", [], |r| r.get(0))?)
    }

    pub fn password_hash(&self, username: &str) -> Result<Option<String>> {
        Ok(self
            .conn
            .lock()
            .query_row(
                "SELECT password_hash FROM users WHERE username = ?1",
                [username],
                |r| r.get(0),
            )
            .optional()?)
    }

    /// Creates the user or replaces its password; existing sessions of the
    /// user end, since a reset password must lock out whoever had the old one.
    pub fn set_password(&self, username: &str, hash: &str) -> Result<()> {
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
    }

    pub fn create_session(&self, token_mac: &str, username: &str, expires_at: i64) -> Result<()> {
        self.conn.lock().execute(
            "INSERT INTO sessions (token_mac, username, created_at, expires_at) VALUES (?1, ?2, ?3, ?4)",
            params![token_mac, username, now_ms(), expires_at],
        )?;
        Ok(())
    }

    /// The user of a live session.
    pub fn session_user(&self, token_mac: &str) -> Result<Option<String>> {
        Ok(self
            .conn
            .lock()
            .query_row(
                "SELECT username FROM sessions WHERE token_mac = ?1 AND expires_at > ?2",
                params![token_mac, now_ms()],
                |r| r.get(0),
            )
            .optional()?)
    }

    pub fn delete_session(&self, token_mac: &str) -> Result<()> {
        self.conn
            .lock()
            .execute("DELETE FROM sessions WHERE token_mac = ?1", [token_mac])?;
        Ok(())
    }

    // ----- retention -----

    /// Deletes activity and delivery rows older than `retention`, and expired
    /// sessions. Rows still pending or waiting for a retry are kept: they are
    /// work, not history. Returns the number of emails deleted.
    pub fn prune(&self, retention: Duration) -> Result<usize> {
        let age = i64::try_from(retention.as_millis()).unwrap_or(i64::MAX);
        let cutoff = now_ms().saturating_sub(age);
        let conn = self.conn.lock();
        let n = conn.execute(
            "DELETE FROM emails WHERE processed_at < ?1 AND status NOT IN ('pending', 'retrying')",
            [cutoff],
        )?;
        conn.execute("DELETE FROM webhook_deliveries WHERE at < ?1", [cutoff])?;
        conn.execute("DELETE FROM sessions WHERE expires_at <= ?1", [now_ms()])?;
        Ok(n)
    }

    /// Inserts a finished activity row as if it had been processed at
    /// `processed_at`; used by benchmarks and tests to build history.
    pub fn insert_history(
        &self,
        meta: &EmailMeta,
        outcome: &Outcome,
        processed_at: i64,
    ) -> Result<i64> {
        self.insert_history_bulk(&[(meta.clone(), outcome.clone(), processed_at)])
    }

    /// Bulk form of [`Store::insert_history`] in one transaction, for
    /// benchmarks that need 100,000 rows. Returns the id of the last row.
    pub fn insert_history_bulk(&self, rows: &[(EmailMeta, Outcome, i64)]) -> Result<i64> {
        let mut last = 0;
        let mut conn = self.conn.lock();
        let tx = conn.transaction()?;
        {
            let mut e = tx.prepare_cached(
                "INSERT INTO emails (account, mailbox, uidvalidity, uid, message_id, subject, sender,
                    processed_at, status, actions, model, reasoning, confidence, error, attempts)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, 1)",
            )?;
            let mut a = tx.prepare_cached(
                "INSERT INTO actions (email_id, account, processed_at, type, folder, flags)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            )?;
            for (m, o, at) in rows {
                e.execute(params![
                    m.account,
                    m.mailbox,
                    m.uidvalidity,
                    m.uid,
                    m.message_id,
                    m.subject,
                    m.from,
                    at,
                    o.status,
                    actions_json(&o.actions),
                    o.model,
                    o.reasoning,
                    o.confidence,
                    o.error,
                ])?;
                let id = tx.last_insert_rowid();
                insert_actions(&mut a, id, &m.account, *at, o)?;
                last = id;
            }
        }
        tx.commit()?;
        Ok(last)
    }
}

// ----- the dashboard's queries -----

impl Store {
    /// One activity row by id, for the dashboard's detail page.
    pub fn activity_entry(&self, id: i64) -> Result<Option<ActivityEntry>> {
        Ok(self
            .conn
            .lock()
            .query_row(
                &format!("SELECT {ACTIVITY_COLUMNS} FROM emails e WHERE e.id = ?1"),
                [id],
                activity_row,
            )
            .optional()?)
    }

    /// Executed actions per UTC day (days since the epoch) and type, from
    /// `since_day` on, summed over accounts: the overview's chart. Read from
    /// the trigger-kept daily counters, so 30 days are a few dozen rows.
    pub fn actions_per_day(&self, since_day: i64) -> Result<Vec<(i64, String, u64)>> {
        let conn = self.conn.lock();
        let mut st = conn.prepare_cached(
            "SELECT day, key, SUM(n) FROM stats_daily
             WHERE day >= ?1 AND key <> '_processed'
             GROUP BY day, key HAVING SUM(n) > 0 ORDER BY day, key",
        )?;
        let rows = st.query_map([since_day], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?;
        Ok(rows.collect::<std::result::Result<_, _>>()?)
    }

    /// Creates the first user, only while there is none (the dashboard's
    /// setup page): the check and the insert are one statement, so two
    /// racing setups cannot both succeed. Returns whether the user was made.
    pub fn create_first_user(&self, username: &str, hash: &str) -> Result<bool> {
        let n = self.conn.lock().execute(
            "INSERT INTO users (username, password_hash, created_at)
             SELECT ?1, ?2, ?3 WHERE NOT EXISTS (SELECT 1 FROM users)",
            params![username, hash, now_ms()],
        )?;
        Ok(n == 1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn meta(uid: u32) -> EmailMeta {
        EmailMeta {
            account: "a".into(),
            mailbox: "INBOX".into(),
            uidvalidity: 7,
            uid,
            message_id: format!("<m{uid}@x>"),
            subject: format!("Invoice {uid}"),
            from: "s@x".into(),
        }
    }

    fn ok(actions: Vec<Action>) -> Outcome {
        Outcome {
            status: status::OK,
            actions,
            model: "rules:r".into(),
            ..Default::default()
        }
    }

    #[test]
    fn migrates_once_and_reopens() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("sub/db.sqlite");
        Store::open(&p).unwrap().set_setting("k", "v").unwrap();
        let s = Store::open(&p).unwrap();
        assert_eq!(s.setting("k").unwrap().as_deref(), Some("v"));
    }

    #[test]
    fn concurrent_opens_of_a_new_file_migrate_once() {
        // Regression: the service and `set-password` opening a fresh file at
        // the same moment failed with "table settings already exists".
        for _ in 0..20 {
            let dir = tempfile::tempdir().unwrap();
            let p = dir.path().join("db.sqlite");
            let threads: Vec<_> = (0..4)
                .map(|_| {
                    let p = p.clone();
                    std::thread::spawn(move || Store::open(&p).map(|_| ()))
                })
                .collect();
            for t in threads {
                t.join().unwrap().unwrap();
            }
        }
    }

    #[test]
    fn final_record_advances_watermark_and_counts_actions() {
        let s = Store::open_in_memory().unwrap();
        let m = meta(5);
        s.record_pending(&[(m.clone(), ok(vec![Action::Read]))])
            .unwrap();
        assert_eq!(
            s.known_emails("a", "INBOX", 7, 0).unwrap()[0].status,
            "pending"
        );
        assert_eq!(s.stats(None, None).unwrap().total_processed, 0);
        s.record_final(
            &[(
                m,
                ok(vec![Action::Read, Action::Move { folder: "F".into() }]),
            )],
            Some(("a", "INBOX", 7, 5)),
        )
        .unwrap();
        assert_eq!(s.folder_state("a", "INBOX").unwrap(), Some((7, 5)));
        let st = s.stats(None, None).unwrap();
        assert_eq!(st.total_processed, 1);
        assert_eq!(st.by_action["read"], 1);
        assert_eq!(st.by_action["move"], 1);
        assert_eq!(st.by_account["a"], 1);
        assert!(s.known_emails("a", "INBOX", 7, 5).unwrap().is_empty());
        // A watermark never moves backwards.
        s.record_final(&[], Some(("a", "INBOX", 7, 3))).unwrap();
        assert_eq!(s.folder_state("a", "INBOX").unwrap(), Some((7, 5)));
    }

    #[test]
    fn failures_retry_then_park_and_can_be_retried() {
        let s = Store::open_in_memory().unwrap();
        let m = meta(9);
        assert_eq!(
            s.record_failure(&m, "boom", 2, 1).unwrap().2,
            status::RETRYING
        );
        let (id, attempts, st) = s.record_failure(&m, "boom", 2, 1).unwrap();
        assert_eq!((attempts, st), (2, status::FAILED));
        assert_eq!(s.failed_counts().unwrap()["a"], 1);
        assert_eq!(s.retry_failed(id).unwrap().as_deref(), Some("a"));
        assert_eq!(s.retry_failed(id).unwrap(), None);
        assert_eq!(
            s.known_emails("a", "INBOX", 7, 100).unwrap()[0].status,
            "retrying"
        );
    }

    #[test]
    fn activity_filters_and_search() {
        let s = Store::open_in_memory().unwrap();
        for uid in 1..=30 {
            let acts = if uid % 2 == 0 {
                vec![Action::Read]
            } else {
                vec![Action::Move { folder: "F".into() }]
            };
            s.insert_history(&meta(uid), &ok(acts), 1_000 * i64::from(uid))
                .unwrap();
        }
        let q = |f: &dyn Fn(&mut ActivityQuery)| {
            let mut q = ActivityQuery {
                page: 1,
                page_size: 10,
                ..Default::default()
            };
            f(&mut q);
            s.activity(&q).unwrap()
        };
        let (rows, total) = q(&|_| {});
        assert_eq!((rows.len(), total), (10, 30));
        assert_eq!(rows[0].uid, 30, "newest first");
        assert_eq!(q(&|q| q.action_type = Some("read".into())).1, 15);
        assert_eq!(q(&|q| q.search = Some("voice 1".into())).1, 11); // 1, 10..19
        assert_eq!(q(&|q| q.search = Some("<m7@".into())).1, 1);
        assert_eq!(q(&|q| q.search = Some("m7".into())).1, 1);
        assert_eq!(q(&|q| q.search = Some("%".into())).1, 0);
        assert_eq!(
            q(&|q| {
                q.start_ms = Some(5_000);
                q.end_ms = Some(9_000)
            })
            .1,
            5
        );
        assert_eq!(q(&|q| q.account = Some("b".into())).1, 0);
        let (rows, _) = q(&|q| q.page = 3);
        assert_eq!(rows.last().unwrap().uid, 1);
    }

    #[test]
    fn sessions_expire_and_end_with_password_reset() {
        let s = Store::open_in_memory().unwrap();
        s.set_password("admin", "h1").unwrap();
        s.create_session("mac", "admin", now_ms() + 60_000).unwrap();
        s.create_session("old", "admin", now_ms() - 1).unwrap();
        assert_eq!(s.session_user("mac").unwrap().as_deref(), Some("admin"));
        assert_eq!(s.session_user("old").unwrap(), None);
        s.set_password("admin", "h2").unwrap();
        assert_eq!(s.session_user("mac").unwrap(), None);
    }

    #[test]
    fn prune_keeps_pending_work() {
        let s = Store::open_in_memory().unwrap();
        s.insert_history(&meta(1), &ok(vec![]), 1).unwrap();
        s.record_failure(&meta(2), "x", 5, 0).unwrap();
        assert_eq!(s.prune(Duration::from_secs(1)).unwrap(), 1);
        assert_eq!(s.known_emails("a", "INBOX", 7, 0).unwrap().len(), 1);
    }
}
