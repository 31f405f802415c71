//! The store: one SQLite file behind one mutex, as musium keeps its library.
//!
//! WAL journal, a busy timeout and foreign keys are set on open; the schema is
//! migrated forward by `PRAGMA user_version`. Every query is one named method
//! here, each in the room of its noun: `journal` (the processing record),
//! `retries` (what waits for another try),
//! `activity` (the log and statistics read from it), `attention` (what
//! needs a person, who decided, each account's last error), `deliveries`, `users`
//! (users and sessions), `oauth` (rotated refresh tokens) and `schema` (the migrations). The lock is held
//! only for the statement or transaction at hand, never across network I/O.
//!
//! Processing guarantees rest on the journal (`journal`), whose whole
//! write API is three calls: a decision is recorded (`record_decisions`: the
//! row is `pending` with its planned actions) before any IMAP command
//! changes the message; its outcome (`record_outcomes`: `ok`, `dry_run`,
//! `review`, `retrying`, `failed`) in the same transaction that moves the
//! folder watermark up; and the watermark, alone, only ever up
//! (`advance_watermark`). A new UIDVALIDITY is the one explicit reset
//! (`reset_watermark`). A crash in between leaves a
//! `pending` row the account worker finishes on restart without asking the
//! model again.

mod activity;
mod attention;
mod deliveries;
mod file;
mod finished;
mod generations;
mod journal;
mod learn;
mod oauth;
mod read;
mod recorded;
mod rename;
mod retries;
mod schema;
mod undo;
mod users;

use std::path::Path;
use std::time::Duration;

use parking_lot::Mutex;
use rusqlite::{params, Connection, OptionalExtension};

use crate::actions::Action;
use crate::timestamp::now_ms;
use file::{file_id, foreign, intact, owner_only};
use read::{Counts, ReadGuard, Reader, READERS};
use schema::MIGRATIONS;

pub use activity::{search_refusal, ActivityEntry, ActivityQuery, Stats, MAX_SEARCH_CHARS};
pub use attention::{AccountNote, Attention};
pub use deliveries::Delivery;
pub use file::{accounts_seen_at, check_path, empty_file_warning, hold_for_service};
pub use finished::{Finished, FinishedIn, FinishedMove};
pub use generations::{Earlier, FirstSight};
pub use journal::{
    Decision, EmailMeta, FailedAttempt, FailureRecord, Final, KnownEmail, Outcome, Outcomes,
    Watermark,
};
pub use learn::LearnState;
pub use rename::HandOver;
pub use undo::{moved_by_the_user, MoveRecord, UndoTarget};

/// A failed store operation: which one, and why.
#[derive(Debug)]
pub struct StoreError {
    /// The store method that failed (`record_outcomes`, `activity`, ...).
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
    /// A write panicked (a bug), or the thread that writes for an account
    /// is gone; what it says.
    Panicked(String),
}

impl StoreError {
    pub fn new(op: &'static str, cause: Cause) -> StoreError {
        StoreError { op, cause }
    }

    /// Whether the disk is what failed: full, an I/O error, read-only, a
    /// file that cannot be opened or is damaged (not a constraint, a bug
    /// or a busy lock).
    pub fn is_disk(&self) -> bool {
        use rusqlite::ErrorCode as C;
        match &self.cause {
            Cause::Io(_) => true,
            Cause::Sqlite(rusqlite::Error::SqliteFailure(e, _)) => matches!(
                e.code,
                C::DiskFull
                    | C::SystemIoFailure
                    | C::ReadOnly
                    | C::CannotOpen
                    | C::DatabaseCorrupt
                    | C::NotADatabase
            ),
            _ => false,
        }
    }

    /// Whether the database cannot take writes now (the disk full or
    /// read-only, another program holding the file locked past the busy
    /// time-out): the host's state, which an operator can mend, not a
    /// damaged file or a bug (`503`, not `500`; an audit found a sqlite3
    /// shell's `BEGIN EXCLUSIVE` answered 500).
    pub fn is_unwritable(&self) -> bool {
        use rusqlite::ErrorCode as C;
        matches!(
            &self.cause,
            Cause::Sqlite(rusqlite::Error::SqliteFailure(e, _))
                if matches!(
                    e.code,
                    C::DiskFull
                        | C::ReadOnly
                        | C::DatabaseBusy
                        | C::DatabaseLocked
                        // A file system gone read-only under an open
                        // database (ext4's `errors=remount-ro`) fails its
                        // writes as an I/O error, not as read-only: it was
                        // a 500, "a bug" (the host-failure audit).
                        | C::SystemIoFailure
                )
        )
    }

    /// What lets a write through again, for an [`Self::is_unwritable`]
    /// error, as a person is told it.
    pub fn remedy(&self) -> &'static str {
        use rusqlite::ErrorCode as C;
        match &self.cause {
            Cause::Sqlite(rusqlite::Error::SqliteFailure(e, _)) => match e.code {
                C::DatabaseBusy | C::DatabaseLocked => {
                    "try again once the other program lets go of the file"
                }
                C::ReadOnly => "try again once the file can be written",
                C::SystemIoFailure => {
                    "try again once the file can be written (the disk answered an I/O error: \
                     `dmesg` tells whether its file system went read-only or the disk fails)"
                }
                _ => "try again once the disk has room",
            },
            _ => "try again shortly",
        }
    }

    /// Whether the file is damaged (SQLite found a page it cannot read as
    /// its own): nothing but a backup mends it, so it is not forgotten at
    /// the next write that succeeds (see [`Store::trouble`]).
    pub fn is_damaged(&self) -> bool {
        use rusqlite::ErrorCode as C;
        matches!(
            &self.cause,
            Cause::Sqlite(rusqlite::Error::SqliteFailure(e, _))
                if matches!(e.code, C::DatabaseCorrupt | C::NotADatabase)
        )
    }

    /// Whether another program holds the file locked.
    fn is_locked(&self) -> bool {
        use rusqlite::ErrorCode as C;
        matches!(
            &self.cause,
            Cause::Sqlite(rusqlite::Error::SqliteFailure(e, _))
                if matches!(e.code, C::DatabaseBusy | C::DatabaseLocked)
        )
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
            // Said so, or an operator reads SQLite's words with no hint
            // of who holds it (an audit: "store: query: database is
            // locked" from `mailproc run`).
            Cause::Sqlite(e) if self.is_locked() => write!(
                f,
                "store: {op}: {e} (another program holds the database file: a sqlite3 \
                 shell, a backup; waited {} s)",
                BUSY_WAIT.as_secs()
            ),
            Cause::Sqlite(e) if self.is_damaged() => write!(
                f,
                "store: {op}: {e} (the file is damaged: restore it from a backup, README \
                 \"Backups\")"
            ),
            Cause::Sqlite(e) => write!(f, "store: {op}: {e}"),
            Cause::Io(e) => write!(f, "store: {op}: {e}"),
            Cause::Schema(e) => write!(f, "store: {op}: {e}"),
            Cause::Injected => write!(f, "store: {op}: failpoint"),
            Cause::Panicked(e) => write!(f, "store: {op}: {e}"),
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
/// The bytes the write-ahead log is cut back to once checkpointed.
const WAL_SIZE_LIMIT: i64 = 4 << 20;

/// How long a statement waits for another connection's lock (another
/// process's: the service's own share one mutex).
const BUSY_WAIT: Duration = Duration::from_secs(5);

/// A write that failed for want of the disk: [`Store::trouble`].
struct Trouble {
    op: &'static str,
    why: String,
    /// The disk was full (see [`Store::op`]).
    full: bool,
    /// The file is damaged: kept until the service restarts.
    damaged: bool,
}

/// The free space that ends a full disk's trouble (see [`Store::freed`]):
/// twice what the write-ahead log may keep.
const FREE_AGAIN: u64 = 2 * WAL_SIZE_LIMIT as u64;

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
    /// The connection that checkpoints the log (`index_search`), outside
    /// the writer's lock: a checkpoint ends with an fsync, and every
    /// account's records waited behind it (up to 295 ms measured with
    /// 1,000 accounts starting). None for an in-memory store.
    checkpointer: Option<Mutex<Connection>>,
    /// The database file and its identity (device, inode) when opened:
    /// see [`Store::check_file`]. None for an in-memory store.
    file: Option<(std::path::PathBuf, (u64, u64))>,
    /// The last operation that failed for want of the disk (full, an I/O
    /// error, read-only) and what it said, until it is over (see
    /// [`Store::op`]):
    /// [`Store::ping`] reports it, so `/health` says what a read cannot
    /// see (a full disk fails writes, never reads).
    trouble: Mutex<Option<Trouble>>,
    /// Whether `trouble` is set: the successful operation's fast path.
    troubled: std::sync::atomic::AtomicBool,
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

/// The last migration of this process, said once: see [`migration_said`].
static MIGRATED: std::sync::Mutex<Option<String>> = std::sync::Mutex::new(None);

/// What the last migration of this process said, once, for a shell
/// command to print (it has no log).
pub fn migration_said() -> Option<String> {
    MIGRATED.lock().unwrap_or_else(|e| e.into_inner()).take()
}

/// What a file of a newer schema than this mailproc's is told.
fn newer_schema(version: usize) -> String {
    format!(
        "database schema version {version} is newer than this mailproc ({}): a newer mailproc \
         moved it there; run that one, or restore the backup taken before it (README: \
         Upgrades)",
        MIGRATIONS.len()
    )
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
                    .map_err(|e| {
                        let e = std::io::Error::new(e.kind(), format!("{}: {e}", dir.display()));
                        StoreError::new("create the database directory", Cause::Io(e))
                    })?;
            }
        }
        let conn = Connection::open(path).map_err(|e| StoreError::new("open", Cause::Sqlite(e)))?;
        // SQLite opens a file it may not write read-only, silently; every
        // record would then fail for the life of the process, however the
        // file's permissions were fixed meanwhile.
        if conn.is_readonly(rusqlite::MAIN_DB).unwrap_or(false) {
            return Err(StoreError::new(
                "open",
                Cause::Io(std::io::Error::other(format!(
                    "{} can only be read (its permissions, its owner or a read-only file \
                     system), and mailproc writes to it",
                    path.display()
                ))),
            ));
        }
        let mut store = Self::init(conn)?;
        owner_only(path);
        store.file = Some((
            path.to_path_buf(),
            file_id(path).map_err(|e| StoreError::new("open", Cause::Io(e)))?,
        ));
        let c = Connection::open(path)
            .map_err(|e| StoreError::new("open the checkpoint connection", Cause::Sqlite(e)))?;
        store.checkpointer = Some(Mutex::new(c));
        for _ in 0..READERS {
            let r = Connection::open(path)
                .map_err(|e| StoreError::new("open a read connection", Cause::Sqlite(e)))?;
            r.busy_timeout(BUSY_WAIT)?;
            store.readers.push(Mutex::new(Reader {
                conn: r,
                counts: Counts::default(),
            }));
        }
        Ok(store)
    }

    /// [`Store::open`] for the service and its commands: the error names
    /// the setting and the file (`storage.path /var/lib/…: …`).
    pub fn open_configured(path: &Path) -> std::result::Result<Store, String> {
        if let Some(why) = file::broken_link(path) {
            return Err(format!("storage.path {}: {why}", path.display()));
        }
        // Said as `check-config` says it, not as SQLite's "disk I/O error"
        // (a FIFO, in an audit).
        if std::fs::metadata(path).is_ok_and(|m| !m.is_file()) {
            return Err(format!(
                "storage.path {}: {} is not a file",
                path.display(),
                path.display()
            ));
        }
        if let Some(w) = empty_file_warning(path) {
            log::warn!("{w}");
        }
        Store::open(path).map_err(|e| format!("storage.path {}: {e}", path.display()))
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

    fn init(mut conn: Connection) -> Result<Store> {
        // Other processes (a second `mailproc set-password`, sqlite3 in a
        // shell) may hold the lock briefly; wait rather than fail.
        conn.busy_timeout(BUSY_WAIT)?;
        // This connection writes: its transactions take the write lock when
        // they begin (`BEGIN IMMEDIATE`), so that one that reads before it
        // writes waits for another program's commit rather than failing at
        // once with "database is locked" (SQLite does not wait for a
        // transaction whose snapshot another commit made stale: the CLI
        // audit, `mailproc train` beside the service).
        conn.set_transaction_behavior(rusqlite::TransactionBehavior::Immediate);
        intact(&conn)?;
        foreign(&conn)?;
        set_wal(&conn)?;
        conn.pragma_update(None, "synchronous", "NORMAL")?;
        // A checkpoint (copying the log into the database, with an fsync)
        // runs when a commit finds the log this long: at SQLite's default
        // of 1,000 pages it landed in the middle of every large backlog, on
        // the path of its records. Account threads checkpoint after each
        // pass that wrote (`index_search`); this bound is for the rest.
        conn.pragma_update(None, "wal_autocheckpoint", 10_000)?;
        // Without a limit the log keeps the size of its largest burst for
        // good (a backlog's, up to 40 MB at 10,000 pages); with it the
        // first write after a whole checkpoint cuts it back.
        conn.pragma_update(None, "journal_size_limit", WAL_SIZE_LIMIT)?;
        conn.pragma_update(None, "foreign_keys", "ON")?;
        let store = Store {
            conn: Mutex::new(conn),
            readers: Vec::new(),
            next_reader: std::sync::atomic::AtomicUsize::new(0),
            checkpointer: None,
            file: None,
            trouble: Mutex::new(None),
            troubled: std::sync::atomic::AtomicBool::new(false),
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
            return Err(StoreError::new(
                "migrate",
                Cause::Schema(newer_schema(version)),
            ));
        }
        let path = tx.path().unwrap_or_default().to_string();
        if version > 0
            && version < MIGRATIONS.len()
            && !path.is_empty()
            && file::another_service_holds(Path::new(&path))
        {
            return Err(StoreError::new(
                "migrate",
                Cause::Schema(format!(
                    "database schema version {version} is older than this mailproc's ({}), and \
                     another mailproc holds the file as its service: nothing was changed; stop \
                     that service first: this mailproc's service moves the file to version {} \
                     as it starts (a command such as `set-password` or `train` is run again \
                     after that start)",
                    MIGRATIONS.len(),
                    MIGRATIONS.len()
                )),
            ));
        }
        let began = std::time::Instant::now();
        for (i, step) in MIGRATIONS.iter().enumerate().skip(version) {
            // A step that fails on a file of mailproc's met tables it did
            // not expect at that version: a `PRAGMA user_version` set by
            // hand below what the file holds. SQLite's words alone
            // ("duplicate column name: …") told no operator what to do
            // (an audit). Nothing is changed: the transaction rolls back.
            if let Err(e) = tx.execute_batch(step) {
                // SQLite's words without the step's SQL, which it quotes
                // (thirty lines in the log; the regression audit), and the
                // version the tables are, when they are one.
                let said = match &e {
                    rusqlite::Error::SqliteFailure(_, Some(m)) => m.clone(),
                    e => e.to_string(),
                };
                // SQLite ends the line "… in" and quotes the SQL below.
                let said = said.lines().next().unwrap_or_default().trim_end();
                let said = said.strip_suffix(" in").unwrap_or(said).to_string();
                // Quoted for a POSIX shell, where the command is pasted:
                // in double quotes a `$` or a backquote of the path would
                // be expanded (the regression audit, stop 58).
                let file = match tx.path() {
                    Some(p) if !p.is_empty() => format!("'{}'", p.replace('\'', r"'\''")),
                    _ => "FILE".to_string(),
                };
                let here = file::schema_of(&tx).ok();
                let is = (0..=MIGRATIONS.len()).rev().find(|&n| {
                    here.is_some() && schema::schema_at(n).ok().as_ref() == here.as_ref()
                });
                return Err(StoreError::new(
                    "migrate",
                    Cause::Schema(format!(
                        "moving the database from schema version {i} to {} failed ({said}): its \
                         tables are not those of version {version}, the version it is marked \
                         with (was `PRAGMA user_version` changed by hand?); nothing was changed: \
                         {}",
                        i + 1,
                        match is {
                            Some(n) => format!(
                                "they are version {n}'s: set it with `sqlite3 {file} 'PRAGMA \
                                 user_version = {n}'` and start again"
                            ),
                            None => "restore a backup".to_string(),
                        }
                    )),
                ));
            }
            tx.pragma_update(None, "user_version", i + 1)?;
        }
        tx.commit()?;
        if version > 0 && version < MIGRATIONS.len() {
            let said = format!(
                "store: migrated {path} from schema version {version} to {} in {} ms (an older \
                 mailproc cannot open it now: going back means the backup taken before)",
                MIGRATIONS.len(),
                began.elapsed().as_millis()
            );
            log::info!("{said}");
            // The shell's commands log nothing: they print it (the second
            // regression audit found a `train` migrating without a word).
            *MIGRATED.lock().unwrap_or_else(|e| e.into_inner()) = Some(said);
        }
        Ok(())
    }

    /// Whether the database file is still the one opened, and answers.
    /// Removed (its
    /// directory deleted) or replaced (a copy restored over it), what is
    /// written goes on succeeding, into a file no one opens again: at the
    /// next start it is gone, and the mailbox is processed again from
    /// nothing. `/health` and every pass ask. So for a file found damaged
    /// (a backup copied over it in place, which keeps its inode): a pass
    /// went on acting on the server and recording into it, and after a
    /// restart those records were gone with the refused file (an audit).
    /// The file is never opened here but through SQLite: closing any
    /// descriptor of it drops the process's POSIX locks on it (a header
    /// read that way let another program's exclusive lock be ignored, a
    /// regression audit's test found). So damage shows through SQLite's
    /// reads, which a connection may answer from its cache for a pass.
    /// It answers a read of its schema, which opens a read transaction
    /// on the file (`SELECT 1` touched no file and said "ok" for a
    /// database overwritten with zeros), on a read connection: `/health`
    /// needs no login and must not queue for the writer.
    pub fn check_file(&self) -> Result<()> {
        const OP: &str = "check the database file";
        let damaged = |why: String| {
            *self.trouble.lock() = Some(Trouble {
                op: OP,
                why: why.clone(),
                full: false,
                damaged: true,
            });
            self.troubled
                .store(true, std::sync::atomic::Ordering::Release);
            StoreError::new(OP, Cause::Io(std::io::Error::other(why)))
        };
        if let Some((path, id)) = &self.file {
            if file_id(path).ok().as_ref() != Some(id) {
                return Err(StoreError::new(
                    OP,
                    Cause::Io(std::io::Error::other(format!(
                        "{} was removed or replaced while mailproc runs: nothing is recorded \
                         until the same file is moved back, or mailproc restarted",
                        path.display()
                    ))),
                ));
            }
        }
        if let Some(why) = (self.trouble.lock().as_ref())
            .filter(|t| t.damaged)
            .map(|t| t.why.clone())
        {
            return Err(StoreError::new(OP, Cause::Io(std::io::Error::other(why))));
        }
        let read = in_op(OP, || {
            self.reader()
                .query_row("SELECT count(*) FROM sqlite_schema", [], |_| Ok(()))?;
            Ok(())
        });
        match read {
            Err(e) if e.is_damaged() => Err(damaged(e.to_string())),
            read => read,
        }
    }

    /// Whether the database answers, and its writes succeed: the file is
    /// the one opened, a read works, and no operation is failing for want
    /// of the disk (see [`Store::trouble`]).
    pub fn ping(&self) -> Result<()> {
        self.check_file()?;
        if self.troubled.load(std::sync::atomic::Ordering::Acquire) {
            let mut t = self.trouble.lock();
            if t.as_ref().is_some_and(|t| t.full) && self.freed() {
                *t = None;
                self.troubled
                    .store(false, std::sync::atomic::Ordering::Release);
            }
        }
        match self.trouble() {
            Some(why) => Err(StoreError::new(
                "ping",
                Cause::Io(std::io::Error::other(why)),
            )),
            None => Ok(()),
        }
    }

    /// Whether the file system of the database has room again: free for
    /// this user, twice what the write-ahead log may keep, or a quarter of
    /// a file system smaller than that.
    fn freed(&self) -> bool {
        let Some((path, _)) = self.file.as_ref() else {
            return false;
        };
        let dir = path
            .parent()
            .filter(|d| !d.as_os_str().is_empty())
            .unwrap_or(std::path::Path::new("."));
        let Ok(st) = nix::sys::statvfs::statvfs(dir) else {
            return false;
        };
        let block = st.fragment_size();
        let free = st.blocks_available() * block;
        let size = st.blocks() * block;
        free >= FREE_AGAIN.min(size / 4)
    }

    /// What the last operation that failed for want of the disk said
    /// (`store: record_decisions: database or disk is full`), until it is
    /// over (see [`Store::op`]).
    pub fn trouble(&self) -> Option<String> {
        use std::sync::atomic::Ordering;
        if !self.troubled.load(Ordering::Acquire) {
            return None;
        }
        self.trouble.lock().as_ref().map(|t| t.why.clone())
    }

    /// [`in_op`], keeping [`Store::trouble`]: set by a failure for want of
    /// the disk; once set, ended by an operation that succeeds and wrote
    /// (the writer's count of changed rows grew): any such operation when
    /// the cause was an I/O error or a read-only file system, the very
    /// operation that failed when the disk was full (small writes go
    /// through again before large ones), or free space again
    /// ([`Store::ping`]); a damaged file's, never.
    fn op<T>(&self, op: &'static str, body: impl FnOnce() -> Result<T>) -> Result<T> {
        use std::sync::atomic::Ordering;
        let troubled = self.troubled.load(Ordering::Acquire);
        let before = troubled.then(|| self.conn.lock().total_changes());
        let r = in_op(op, body);
        match &r {
            Ok(_) if troubled => {
                let wrote = before.is_some_and(|b| self.conn.lock().total_changes() > b);
                let mut t = self.trouble.lock();
                if wrote
                    && t.as_ref()
                        .is_some_and(|t| !t.damaged && (!t.full || t.op == op))
                {
                    *t = None;
                    self.troubled.store(false, Ordering::Release);
                }
            }
            Err(e) if e.is_disk() => {
                let full = matches!(
                    &e.cause,
                    Cause::Sqlite(rusqlite::Error::SqliteFailure(f, _))
                        if f.code == rusqlite::ErrorCode::DiskFull
                );
                let mut t = self.trouble.lock();
                // A damaged file's trouble is not replaced by a passing one.
                if !t.as_ref().is_some_and(|t| t.damaged) {
                    *t = Some(Trouble {
                        op,
                        why: e.to_string(),
                        full,
                        damaged: e.is_damaged(),
                    });
                }
                self.troubled.store(true, Ordering::Release);
            }
            _ => {}
        }
        r
    }

    // ----- settings -----

    pub fn setting(&self, key: &str) -> Result<Option<String>> {
        self.op("setting", || {
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
        self.op("set_setting", || {
            self.conn.lock().execute(
                "INSERT INTO settings (key, value) VALUES (?1, ?2)
                 ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                params![key, value],
            )?;
            Ok(())
        })
    }

    /// Deletes activity and delivery rows older than `retention`, and expired
    /// sessions. Rows still pending or waiting for a retry are kept while
    /// their account is one of `accounts` (those configured) or a rename's
    /// old name: they are work, not history. A removed account's are
    /// history (an audit found them kept for good, `retrying` with no one
    /// to retry them). Returns the number of emails deleted.
    pub fn prune(&self, retention: Duration, accounts: &[&str]) -> Result<usize> {
        let mut working: Vec<String> = accounts.iter().map(|a| a.to_string()).collect();
        working.extend(self.noted_renames()?.into_iter().map(|(from, _)| from));
        let working = serde_json::to_string(&working).unwrap_or_else(|_| "[]".into());
        self.op("prune", || {
            let age = i64::try_from(retention.as_millis()).unwrap_or(i64::MAX);
            let cutoff = now_ms().saturating_sub(age);
            let mut conn = self.conn.lock();
            let tx = conn.transaction()?;
            // The statistics are not the activity log: "all time" and a
            // removed account's counts outlive the rows retention prunes.
            // The deletes' triggers take the pruned rows out of the daily
            // counts; the counts of those days are put back as they were
            // (nothing else writes in this transaction).
            tx.execute(
                "CREATE TEMP TABLE pruned_stats AS SELECT * FROM stats_daily WHERE day <= ?1",
                [cutoff.div_euclid(86_400_000)],
            )?;
            let n = tx.execute(
                "DELETE FROM emails WHERE processed_at < ?1
                   AND (status NOT IN ('pending', 'retrying')
                        OR account NOT IN (SELECT value FROM json_each(?2)))",
                params![cutoff, working],
            )?;
            tx.execute_batch(
                "INSERT OR REPLACE INTO stats_daily SELECT * FROM temp.pruned_stats;
                 DROP TABLE temp.pruned_stats;",
            )?;
            tx.execute("DELETE FROM webhook_deliveries WHERE at < ?1", [cutoff])?;
            tx.execute("DELETE FROM sessions WHERE expires_at <= ?1", [now_ms()])?;
            tx.commit()?;
            Ok(n)
        })
    }
}

#[cfg(test)]
mod tests;
