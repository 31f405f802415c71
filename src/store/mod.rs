//! The store: one SQLite file behind one mutex, as musium keeps its library.
//!
//! WAL journal, a busy timeout and foreign keys are set on open; the schema is
//! migrated forward by `PRAGMA user_version`. Every query is one named method
//! here, each in the room of its noun: `journal` (the processing record),
//! `activity` (the log and statistics read from it), `attention` (what
//! needs a person, who decided, each account's last error), `deliveries`, `users`
//! (users and sessions), `oauth` (rotated refresh tokens) and `schema` (the migrations). The lock is held
//! only for the statement or transaction at hand, never across network I/O.
//!
//! Processing guarantees rest on this file: an email row is written as
//! `pending` with its planned actions before any IMAP command changes the
//! message, and turned final (`ok`, `dry_run`, `review`, `failed`) in the same
//! transaction that advances the folder watermark. A crash in between leaves a
//! `pending` row the account worker finishes on restart without asking the
//! model again.

mod activity;
mod attention;
mod deliveries;
mod generations;
mod journal;
mod learn;
mod oauth;
mod read;
mod schema;
mod undo;
mod users;

use std::path::Path;
use std::time::Duration;

use parking_lot::Mutex;
use rusqlite::{params, Connection, OptionalExtension};

use crate::actions::Action;
use crate::timestamp::now_ms;
use read::{Counts, ReadGuard, Reader, READERS};
use schema::MIGRATIONS;

pub use activity::{ActivityEntry, ActivityQuery, Stats};
pub use attention::{AccountNote, Attention};
pub use deliveries::Delivery;
pub use generations::Earlier;
pub use journal::{Confirmed, EmailMeta, FailedAttempt, FailureRecord, KnownEmail, Outcome};
pub use learn::LearnState;
pub use undo::{MoveRecord, UndoTarget};

/// A failed store operation: which one, and why.
#[derive(Debug)]
pub struct StoreError {
    /// The store method that failed (`record_batch`, `activity`, ...).
    pub op: &'static str,
    pub cause: Cause,
}

#[derive(Debug)]
#[non_exhaustive]
pub enum Cause {
    Sqlite(rusqlite::Error),
    /// Creating the database's directory.
    Io(std::io::Error),
    /// The file's schema is newer than this build knows.
    Schema(String),
    /// A failpoint of the tests (debug builds only).
    Injected,
}

impl StoreError {
    fn new(op: &'static str, cause: Cause) -> StoreError {
        StoreError { op, cause }
    }

    /// Names the operation of an error raised below it (set once).
    fn during(mut self, op: &'static str) -> StoreError {
        if self.op.is_empty() {
            self.op = op;
        }
        self
    }
}

impl std::fmt::Display for StoreError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let op = if self.op.is_empty() { "query" } else { self.op };
        match &self.cause {
            Cause::Sqlite(e) => write!(f, "store: {op}: {e}"),
            Cause::Io(e) => write!(f, "store: {op}: {e}"),
            Cause::Schema(e) => write!(f, "store: {op}: {e}"),
            Cause::Injected => write!(f, "store: {op}: failpoint"),
        }
    }
}

impl std::error::Error for StoreError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match &self.cause {
            Cause::Sqlite(e) => Some(e),
            Cause::Io(e) => Some(e),
            _ => None,
        }
    }
}

impl From<rusqlite::Error> for StoreError {
    /// The operation is named by [`in_op`] at the method's boundary.
    fn from(e: rusqlite::Error) -> Self {
        StoreError::new("", Cause::Sqlite(e))
    }
}

/// Runs a store method's body, naming the method in any error it returns.
fn in_op<T>(op: &'static str, body: impl FnOnce() -> Result<T>) -> Result<T> {
    body().map_err(|e| e.during(op))
}

pub type Result<T> = std::result::Result<T, StoreError>;

/// The status of an email row; stored and shown as its snake_case name.
/// `pending` (journalled, being acted on) and `retrying` are not final.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    Pending,
    Ok,
    DryRun,
    Review,
    Retrying,
    Failed,
}

impl Status {
    pub const ALL: [Status; 6] = [
        Status::Pending,
        Status::Ok,
        Status::DryRun,
        Status::Review,
        Status::Retrying,
        Status::Failed,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Status::Pending => "pending",
            Status::Ok => "ok",
            Status::DryRun => "dry_run",
            Status::Review => "review",
            Status::Retrying => "retrying",
            Status::Failed => "failed",
        }
    }

    pub fn parse(s: &str) -> Option<Status> {
        Status::ALL.into_iter().find(|st| st.as_str() == s)
    }
}

impl std::fmt::Display for Status {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl rusqlite::types::ToSql for Status {
    fn to_sql(&self) -> rusqlite::Result<rusqlite::types::ToSqlOutput<'_>> {
        Ok(self.as_str().into())
    }
}

impl rusqlite::types::FromSql for Status {
    fn column_result(v: rusqlite::types::ValueRef<'_>) -> rusqlite::types::FromSqlResult<Self> {
        let s = v.as_str()?;
        Status::parse(s).ok_or_else(|| {
            rusqlite::types::FromSqlError::Other(format!("unknown email status {s:?}").into())
        })
    }
}

pub struct Store {
    conn: Mutex<Connection>,
    /// Connections for the HTTP API's reads (activity, statistics): with
    /// WAL they read the last commit while the writer works, so a page does
    /// not wait for an account's transaction nor queue behind every other
    /// page on one lock. None for an in-memory store.
    readers: Vec<Mutex<Reader>>,
    next_reader: std::sync::atomic::AtomicUsize,
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
            Err(e) => return Err(StoreError::new("switch to WAL", Cause::Sqlite(e))),
        }
    }
}

/// Makes the database and its `-wal` and `-shm` readable by their owner
/// only: they hold every subject, sender and session of the service. New
/// files get that from the umask (set by `main`), but a database made by
/// an older version or another tool may be world-readable. A file that
/// cannot be changed is logged, not fatal.
fn owner_only(db: &Path) {
    use std::os::unix::fs::PermissionsExt;
    let mut paths = vec![db.to_path_buf()];
    for suffix in ["-wal", "-shm"] {
        let mut p = db.as_os_str().to_os_string();
        p.push(suffix);
        paths.push(p.into());
    }
    for p in paths {
        let Ok(meta) = std::fs::metadata(&p) else {
            continue;
        };
        if meta.is_file() && meta.permissions().mode() & 0o077 != 0 {
            if let Err(e) = std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o600)) {
                log::warn!(
                    "cannot make {} readable by its owner only: {e}",
                    p.display()
                );
            }
        }
    }
}

fn parse_actions(s: &str) -> Vec<Action> {
    serde_json::from_str(s).unwrap_or_default()
}

impl Store {
    /// Opens (creating when missing) and migrates the database at `path`.
    pub fn open(path: &Path) -> Result<Store> {
        use std::os::unix::fs::DirBuilderExt;
        if let Some(dir) = path.parent() {
            if !dir.as_os_str().is_empty() && !dir.exists() {
                std::fs::DirBuilder::new()
                    .recursive(true)
                    .mode(0o700)
                    .create(dir)
                    .map_err(|e| StoreError::new("create the database directory", Cause::Io(e)))?;
            }
        }
        let conn = Connection::open(path).map_err(|e| StoreError::new("open", Cause::Sqlite(e)))?;
        let mut store = Self::init(conn)?;
        owner_only(path);
        for _ in 0..READERS {
            let r = Connection::open(path)
                .map_err(|e| StoreError::new("open a read connection", Cause::Sqlite(e)))?;
            r.busy_timeout(Duration::from_secs(5))?;
            store.readers.push(Mutex::new(Reader {
                conn: r,
                counts: Counts::default(),
            }));
        }
        Ok(store)
    }

    pub fn open_in_memory() -> Result<Store> {
        Self::init(Connection::open_in_memory()?)
    }

    /// A connection for reads only: a free reader, else the next one in
    /// turn, else (in memory) the writer's.
    fn reader(&self) -> ReadGuard<'_> {
        if self.readers.is_empty() {
            return ReadGuard::Writer(self.conn.lock());
        }
        for r in &self.readers {
            if let Some(g) = r.try_lock() {
                return ReadGuard::Reader(g);
            }
        }
        let i = self
            .next_reader
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        ReadGuard::Reader(self.readers[i % self.readers.len()].lock())
    }

    fn init(conn: Connection) -> Result<Store> {
        // Other processes (a second `mailproc set-password`, sqlite3 in a
        // shell) may hold the lock briefly; wait rather than fail.
        conn.busy_timeout(Duration::from_secs(5))?;
        set_wal(&conn)?;
        conn.pragma_update(None, "synchronous", "NORMAL")?;
        // A checkpoint (copying the log into the database, with an fsync)
        // runs when a commit finds the log this long: at SQLite's default
        // of 1,000 pages it landed in the middle of every large backlog, on
        // the path of its records. Account threads checkpoint after each
        // pass that wrote (`index_search`); this bound is for the rest.
        conn.pragma_update(None, "wal_autocheckpoint", 10_000)?;
        conn.pragma_update(None, "foreign_keys", "ON")?;
        let store = Store {
            conn: Mutex::new(conn),
            readers: Vec::new(),
            next_reader: std::sync::atomic::AtomicUsize::new(0),
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
            return Err(StoreError::new("migrate", Cause::Schema(format!(
                "database schema version {version} is newer than this mailproc ({}); upgrade mailproc",
                MIGRATIONS.len()
            ))));
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
        in_op("ping", || {
            self.conn.lock().query_row("SELECT 1", [], |_| Ok(()))?;
            Ok(())
        })
    }

    // ----- settings -----

    pub fn setting(&self, key: &str) -> Result<Option<String>> {
        in_op("setting", || {
            Ok(self
                .conn
                .lock()
                .query_row("SELECT value FROM settings WHERE key = ?1", [key], |r| {
                    r.get(0)
                })
                .optional()?)
        })
    }

    pub fn set_setting(&self, key: &str, value: &str) -> Result<()> {
        in_op("set_setting", || {
            self.conn.lock().execute(
                "INSERT INTO settings (key, value) VALUES (?1, ?2)
                 ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                params![key, value],
            )?;
            Ok(())
        })
    }

    // ----- folder watermarks -----

    /// `(uidvalidity, last_uid)` of a watched folder, if it was seen before.
    pub fn folder_state(&self, account: &str, mailbox: &str) -> Result<Option<(u32, u32)>> {
        in_op("folder_state", || {
            Ok(self
                .conn
                .lock()
                .query_row(
                    "SELECT uidvalidity, last_uid FROM folder_state WHERE account = ?1 AND mailbox = ?2",
                    params![account, mailbox],
                    |r| Ok((r.get(0)?, r.get(1)?)),
                )
                .optional()?)
        })
    }

    pub fn set_folder_state(
        &self,
        account: &str,
        mailbox: &str,
        uidvalidity: u32,
        last_uid: u32,
    ) -> Result<()> {
        in_op("set_folder_state", || {
            self.conn.lock().execute(
                "INSERT INTO folder_state (account, mailbox, uidvalidity, last_uid) VALUES (?1, ?2, ?3, ?4)
                 ON CONFLICT (account, mailbox) DO UPDATE SET uidvalidity = excluded.uidvalidity, last_uid = excluded.last_uid",
                params![account, mailbox, uidvalidity, last_uid],
            )?;
            Ok(())
        })
    }

    /// Deletes activity and delivery rows older than `retention`, and expired
    /// sessions. Rows still pending or waiting for a retry are kept: they are
    /// work, not history. Returns the number of emails deleted.
    pub fn prune(&self, retention: Duration) -> Result<usize> {
        in_op("prune", || {
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
        })
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
            status: Status::Ok,
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
    fn a_new_uidvalidity_closes_unfinished_rows_of_the_old_one() {
        let s = Store::open_in_memory().unwrap();
        s.record_pending(&[(meta(5), ok(vec![Action::Read]))])
            .unwrap();
        s.record_failure(&meta(6), "model down", 5, now_ms() - 1)
            .unwrap();
        let mut done = meta(4);
        done.uidvalidity = 7;
        s.record_pending(&[(done.clone(), ok(vec![]))]).unwrap();
        s.record_final(&[(done, ok(vec![]))], None).unwrap();
        // Before: a due retry the new generation can never take up.
        assert!(s.next_retry_at("a").unwrap().is_some());
        assert_eq!(s.restart_folder("a", "INBOX", 7, 8, 100).unwrap(), 2);
        assert_eq!(s.next_retry_at("a").unwrap(), None);
        assert_eq!(s.folder_state("a", "INBOX").unwrap(), Some((8, 100)));
        let (rows, _) = s
            .activity(&ActivityQuery {
                page: 1,
                page_size: 10,
                ..Default::default()
            })
            .unwrap();
        let by_uid = |u: u32| rows.iter().find(|r| r.uid == u).unwrap();
        for u in [5, 6] {
            let r = by_uid(u);
            assert_eq!(r.status, Status::Failed, "{r:?}");
            let e = r.error.as_deref().unwrap();
            assert!(e.contains("UIDVALIDITY changed from 7 to 8"), "{e}");
        }
        assert!(by_uid(6)
            .error
            .as_deref()
            .unwrap()
            .contains("(after: model down)"));
        assert_eq!(by_uid(4).status, Status::Ok, "finished rows are history");
    }

    #[test]
    fn confirmed_rows_are_recorded_as_the_row_by_row_path_records_them() {
        // The same decisions, made final by id (`record_confirmed`) in one
        // store and row by row (`record_batch` + `record_moves`) in another,
        // leave the same activity, action rows, statistics and undo data.
        let actions = vec![
            Action::Move {
                folder: "Lists".into(),
            },
            Action::Flag {
                flags: vec!["\\Flagged".into(), "$Label1".into()],
            },
            Action::Read,
        ];
        let moved = MoveRecord {
            uid: 5,
            dest_folder: "Lists".into(),
            dest_uid: Some(41),
            flags: vec!["\\Seen".into()],
        };
        let journal = [
            (meta(5), ok(actions.clone())),
            (meta(6), ok(vec![Action::Read])),
        ];
        let (fast, slow) = (
            Store::open_in_memory().unwrap(),
            Store::open_in_memory().unwrap(),
        );
        let ids = fast.record_pending(&journal).unwrap();
        fast.record_confirmed(
            "a",
            &[
                Confirmed {
                    id: ids[0],
                    actions: &actions,
                    moved: Some(moved.clone()),
                },
                Confirmed {
                    id: ids[1],
                    actions: &[Action::Read],
                    moved: None,
                },
            ],
        )
        .unwrap();
        slow.record_pending(&journal).unwrap();
        slow.record_final(&journal, None).unwrap();
        slow.record_moves("a", "INBOX", 7, &[moved]).unwrap();

        let rows = |s: &Store| {
            let conn = s.conn.lock();
            let mut st = conn
                .prepare(
                    "SELECT e.uid, e.status, e.attempts, e.actions, e.dest_folder, e.dest_uid,
                        e.orig_flags, a.type, a.folder, a.flags, a.account, a.processed_at = e.processed_at
                     FROM emails e LEFT JOIN actions a ON a.email_id = e.id ORDER BY e.uid, a.id",
                )
                .unwrap();
            let v: Vec<String> = st
                .query_map([], |r| {
                    Ok((0..12)
                        .map(|i| format!("{:?}", r.get::<_, rusqlite::types::Value>(i).unwrap()))
                        .collect::<Vec<_>>()
                        .join(" "))
                })
                .unwrap()
                .map(|r| r.unwrap())
                .collect();
            v
        };
        assert_eq!(rows(&fast), rows(&slow));
        assert_eq!(rows(&fast).len(), 4, "{:#?}", rows(&fast));
        let (f, s) = (
            fast.stats(None, None).unwrap(),
            slow.stats(None, None).unwrap(),
        );
        assert_eq!(
            (f.total_processed, &f.by_action),
            (s.total_processed, &s.by_action)
        );
        assert_eq!(f.by_action["read"], 2);
        let undo = fast.undo_target(ids[0]).unwrap().unwrap();
        assert_eq!(
            (undo.dest_folder.as_deref(), undo.dest_uid, undo.flags),
            (Some("Lists"), Some(41), Some(vec!["\\Seen".to_string()]))
        );
        assert_eq!(fast.known_emails("a", "INBOX", 7, 0).unwrap().len(), 2);
        assert!(fast
            .known_emails("a", "INBOX", 7, 0)
            .unwrap()
            .iter()
            .all(|k| k.status == Status::Ok));
    }

    #[test]
    fn a_kept_count_is_dropped_by_the_next_commit() {
        let dir = tempfile::tempdir().unwrap();
        let s = Store::open(&dir.path().join("db.sqlite")).unwrap();
        let search = |s: &Store| {
            s.activity(&ActivityQuery {
                page: 1,
                page_size: 10,
                search: Some("invoice".into()),
                ..Default::default()
            })
            .unwrap()
        };
        s.record_final(&[(meta(1), ok(vec![])), (meta(2), ok(vec![]))], None)
            .unwrap();
        s.index_search().unwrap();
        // Asked on every reader, so each keeps the count.
        for _ in 0..READERS * 2 {
            assert_eq!(search(&s).1, 2);
        }
        s.record_final(&[(meta(3), ok(vec![]))], None).unwrap();
        let (rows, total) = search(&s);
        assert_eq!((rows.len(), total), (3, 3), "queued for the index");
        s.index_search().unwrap();
        for _ in 0..READERS * 2 {
            assert_eq!(search(&s).1, 3);
        }
        // Another process's commit drops it too.
        let other = rusqlite::Connection::open(dir.path().join("db.sqlite")).unwrap();
        other
            .execute("UPDATE emails SET subject = 'paid' WHERE uid = 3", [])
            .unwrap();
        for _ in 0..READERS * 2 {
            assert_eq!(search(&s).1, 2);
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
            Status::Pending
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
            Status::Retrying
        );
        let (id, attempts, st) = s.record_failure(&m, "boom", 2, 1).unwrap();
        assert_eq!((attempts, st), (2, Status::Failed));
        assert_eq!(s.failed_counts().unwrap()["a"], 1);
        assert_eq!(s.retry_failed(id).unwrap().as_deref(), Some("a"));
        assert_eq!(s.retry_failed(id).unwrap(), None);
        assert_eq!(
            s.known_emails("a", "INBOX", 7, 100).unwrap()[0].status,
            Status::Retrying
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
        // The sender is searched too, indexed or not.
        assert_eq!(q(&|q| q.search = Some("s@x".into())).1, 30);
        s.index_search().unwrap();
        assert_eq!(q(&|q| q.search = Some("s@x".into())).1, 30);
        assert_eq!(q(&|q| q.search = Some("nobody@".into())).1, 0);
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
    fn search_index_is_fed_in_bulk_and_stays_consistent() {
        let s = Store::open_in_memory().unwrap();
        for uid in 1..=20 {
            s.insert_history(&meta(uid), &ok(vec![]), 1_000 * i64::from(uid))
                .unwrap();
        }
        let found = |text: &str| {
            s.activity(&ActivityQuery {
                page: 1,
                page_size: 100,
                search: Some(text.into()),
                ..Default::default()
            })
            .unwrap()
            .1
        };
        let check = || {
            s.conn
                .lock()
                .execute(
                    "INSERT INTO emails_fts (emails_fts, rank) VALUES ('integrity-check', 1)",
                    [],
                )
                .unwrap();
        };
        // Not indexed yet: found all the same (LIKE over the queue).
        assert_eq!(found("voice 1"), 11); // 1, 10..19
        assert_eq!(s.index_search().unwrap(), 20);
        assert_eq!(s.index_search().unwrap(), 0);
        check();
        assert_eq!(found("voice 1"), 11);
        assert_eq!(found("<m7@"), 1);
        // A journalled row: queued, found beside the indexed ones.
        let mut m = meta(21);
        m.subject = "Invoice 1 late".into();
        s.record_pending(&[(m.clone(), ok(vec![Action::Read]))])
            .unwrap();
        assert_eq!(found("voice 1"), 12);
        // Its final record, then indexing: counted once.
        s.record_final(&[(m, ok(vec![Action::Read]))], None)
            .unwrap();
        s.index_search().unwrap();
        check();
        assert_eq!(found("voice 1"), 12);
        // An indexed row whose subject changes is re-indexed.
        let mut m = meta(3);
        m.subject = "Receipt 3".into();
        s.record_final(&[(m, ok(vec![]))], None).unwrap();
        check();
        assert_eq!(found("Receipt"), 1);
        assert_eq!(found("Invoice 3"), 0);
        // Deleting indexed and queued rows keeps the index whole.
        s.insert_history(&meta(22), &ok(vec![]), 1).unwrap();
        assert!(s.prune(Duration::from_secs(1)).unwrap() >= 20);
        check();
        assert_eq!(s.index_search().unwrap(), 0);
        assert_eq!(found("nvoice"), 1); // "Invoice 1 late", stamped now
    }

    #[test]
    fn a_common_search_term_walks_the_time_index_with_the_same_answer() {
        let s = Store::open_in_memory().unwrap();
        let rows: Vec<_> = (1..=1500u32)
            .map(|uid| {
                let mut m = meta(uid);
                if uid % 3 == 0 {
                    m.subject = format!("Digest {uid}");
                }
                (m, ok(vec![]), 1_000 * i64::from(uid % 700))
            })
            .collect();
        s.insert_history_bulk(&rows).unwrap();
        s.index_search().unwrap();
        let page = |page: u32, account: Option<&str>| {
            let (rows, total) = s
                .activity(&ActivityQuery {
                    page,
                    page_size: 50,
                    search: Some("nvoice".into()),
                    account: account.map(String::from),
                    ..Default::default()
                })
                .unwrap();
            (rows.iter().map(|r| r.id).collect::<Vec<_>>(), total)
        };
        for p in [1, 7, 20, 21] {
            // Alone, 1,000 matches walk the time index; with an account
            // filter the same search joins the search index.
            let walked = page(p, None);
            assert_eq!(walked, page(p, Some("a")), "page {p}");
            assert_eq!(walked.1, 1000);
        }
        assert_eq!(page(20, None).0.len(), 50);
        assert!(page(21, None).0.is_empty());
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
    fn step_5_takes_undo_rows_out_of_the_counts_and_indexes_senders() {
        // A database of schema 4 with a rule's row and an undo's row.
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("db.sqlite");
        {
            let conn = Connection::open(&p).unwrap();
            for step in &MIGRATIONS[..4] {
                conn.execute_batch(step).unwrap();
            }
            conn.pragma_update(None, "user_version", 4).unwrap();
            conn.execute_batch(
                "INSERT INTO emails (account, mailbox, uidvalidity, uid, sender, processed_at, status, model)
                 VALUES ('a', 'INBOX', 1, 1, 'news@lists.example', 86400000, 'ok', 'rules:lists'),
                        ('a', 'INBOX', 1, 2, 'news@lists.example', 86400000, 'ok', 'undo');",
            )
            .unwrap();
            let n: i64 = conn
                .query_row(
                    "SELECT n FROM stats_daily WHERE key = '_processed'",
                    [],
                    |r| r.get(0),
                )
                .unwrap();
            assert_eq!(n, 2, "schema 4 counted the undo's row");
        }
        let s = Store::open(&p).unwrap();
        assert_eq!(s.stats(None, None).unwrap().total_processed, 1);
        assert_eq!(s.rule_hits("a", None).unwrap()["lists"], 1);
        let found = s
            .activity(&ActivityQuery {
                page: 1,
                page_size: 10,
                search: Some("lists.example".into()),
                ..Default::default()
            })
            .unwrap()
            .1;
        assert_eq!(found, 2);
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
