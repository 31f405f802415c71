//! The database file itself: whose it is (another program's tables are
//! refused), who may read it, the lock one service holds on it, and the
//! checks `check-config` makes of its path without touching it.

use std::path::Path;

use rusqlite::Connection;

use super::schema::MIGRATIONS;
use super::{Cause, Result, StoreError};

/// The database held for one service: a second `mailproc run` on the same
/// file would decide, act on and record every new message again beside
/// the first. An advisory lock (`flock`) on the database file itself, held
/// while the returned value lives and released by the kernel when the
/// process ends, however it ends; SQLite's own locks (`fcntl`) are
/// separate, so the commands of the shell (`set-password`, `train`) and
/// readers like `sqlite3` still open the file.
pub fn hold_for_service(path: &Path) -> std::result::Result<impl Sized, String> {
    use nix::fcntl::{Flock, FlockArg};
    let file = std::fs::File::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let held = Flock::lock(file, FlockArg::LockExclusiveNonblock);
    SERVICE.store(held.is_ok(), std::sync::atomic::Ordering::Relaxed);
    held.map_err(|(_, e)| match e {
        nix::errno::Errno::EWOULDBLOCK => format!(
            "{} is in use by another mailproc service (it holds the file's lock): two \
             services on one database would each process every message",
            path.display()
        ),
        e => format!("{}: cannot lock it: {e}", path.display()),
    })
}

/// Whether this process holds a database as the service
/// ([`hold_for_service`]).
static SERVICE: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Whether a service other than this process holds the database at
/// `path`: a command of the shell (`set-password`, `train`) must not move
/// its schema under it. The running service is then an older mailproc,
/// whose writes know nothing of the new columns (an audit: an old service
/// retraining beside a file a new `set-password` had migrated left the
/// vocabulary's count far above its rows, and the new binary's first trim
/// then let the whole classifier go).
///
/// The descriptor it asks through is never closed: closing any descriptor
/// of a file drops every POSIX lock the process holds on it, SQLite's
/// among them, which SQLite goes on believing it holds (the second
/// regression audit: after an upgrade's start a `sqlite3` read deleted
/// the live `-wal`, backups missed every write, and the file corrupted).
/// One descriptor each time a file is to be migrated, a handful a life.
pub(super) fn another_service_holds(path: &Path) -> bool {
    use nix::fcntl::{Flock, FlockArg};
    if SERVICE.load(std::sync::atomic::Ordering::Relaxed) {
        return false;
    }
    let Ok(file) = std::fs::File::open(path) else {
        return false;
    };
    match Flock::lock(file, FlockArg::LockExclusiveNonblock) {
        Ok(held) => {
            // Let go of the flock (a service starting next must get it),
            // never of the descriptor.
            match held.unlock() {
                Ok(file) => std::mem::forget(file),
                Err((held, _)) => std::mem::forget(held),
            }
            false
        }
        Err((file, e)) => {
            std::mem::forget(file);
            e == nix::errno::Errno::EWOULDBLOCK
        }
    }
}

/// A file's device and inode: which file a path names.
pub(super) fn file_id(path: &Path) -> std::io::Result<(u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(path).map(|m| (m.dev(), m.ino()))
}

/// Makes the database and its `-wal` and `-shm` readable by their owner
/// only: they hold every subject, sender and session of the service. New
/// files get that from the umask (set by `main`), but a database made by
/// an older version or another tool may be world-readable. A file that
/// cannot be changed is logged, not fatal.
pub(super) fn owner_only(db: &Path) {
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

/// What to say of a database file that exists and is empty: SQLite makes a
/// new database in it, so every folder is read as first seen, and the one
/// way an operator gets there by accident is a restore that stopped short
/// (a full disk, a `cp` cut off). It was taken silently, and a whole
/// mailbox handled again (a database audit).
pub fn empty_file_warning(path: &Path) -> Option<String> {
    let meta = std::fs::metadata(path).ok()?;
    (meta.is_file() && meta.len() == 0).then(|| {
        format!(
            "storage.path {} is an empty file: a new database is made in it, and every \
             account's folders are read as never seen (as each `backlog` says); if a backup was \
             restored there, the copy did not complete: stop mailproc and restore it again",
            path.display()
        )
    })
}

/// Whether the database at `path` could be opened for writing, without
/// touching anything (`mailproc check-config`): an existing file must be a
/// regular file this user may write, and its directory too (SQLite writes
/// its `-wal` and `-shm` beside it); a missing directory must be one this
/// user could create, its nearest existing ancestor a directory it may
/// write. `Err` says why, naming the path.
pub fn check_path(path: &Path) -> std::result::Result<(), String> {
    use nix::unistd::{access, AccessFlags};
    if let Some(why) = broken_link(path) {
        return Err(why);
    }
    let contents = match std::fs::metadata(path) {
        Ok(m) if !m.is_file() => return Err(format!("{} is not a file", path.display())),
        Ok(_) if access(path, AccessFlags::R_OK | AccessFlags::W_OK).is_err() => {
            // Said as such: root may write any file, and was told to check
            // as the service's user (an audit, stop 56).
            if access(path, AccessFlags::W_OK) == Err(nix::errno::Errno::EROFS) {
                return Err(format!("{} is on a read-only file system", path.display()));
            }
            return Err(format!(
                "{} exists but mailproc's user may not read and write it{}",
                path.display(),
                as_whom()
            ));
        }
        Ok(m) => m.len() > 0,
        Err(_) => false,
    };
    // The directory first: reading a WAL database needs its -shm file, so
    // in a directory it may not write the contents check failed first, as
    // "attempt to write a readonly database" (an audit).
    check_dir(path)?;
    if contents {
        // An empty file is what SQLite makes of a new database too.
        let mut head = [0u8; 16];
        let read = std::fs::File::open(path).and_then(|mut f| {
            use std::io::Read;
            f.read_exact(&mut head)
        });
        if read.is_err() || &head != b"SQLite format 3\0" {
            return Err(format!("{} is not an SQLite database", path.display()));
        }
        check_contents(path)?;
    }
    Ok(())
}

/// What to say of `path` or the nearest of its ancestors that is a
/// symbolic link to nothing: `check-config` passed such a
/// `storage.path`, and the start then failed as "unable to open database
/// file" or "File exists", neither naming the link (the CLI audit).
pub fn broken_link(path: &Path) -> Option<String> {
    let mut at = path;
    loop {
        let looped = match std::fs::metadata(at) {
            Ok(_) => return None,
            Err(e) => e.raw_os_error() == Some(nix::libc::ELOOP),
        };
        if let Ok(target) = std::fs::read_link(at) {
            return Some(if looped {
                format!(
                    "{} is a symbolic link to {}, which leads back to itself (a loop of links)",
                    at.display(),
                    target.display()
                )
            } else {
                format!(
                    "{} is a symbolic link to {}, which does not exist",
                    at.display(),
                    target.display()
                )
            });
        }
        match at.parent() {
            Some(up) if !up.as_os_str().is_empty() => at = up,
            _ => return None,
        }
    }
}

/// Whether the directory of `path` (or, missing, the nearest directory
/// above it, where it would be made) is one mailproc's user may write in.
fn check_dir(path: &Path) -> std::result::Result<(), String> {
    use nix::unistd::{access, AccessFlags};
    let writable = |p: &Path| access(p, AccessFlags::W_OK | AccessFlags::X_OK).is_ok();
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let mut at = dir;
    loop {
        match std::fs::metadata(at) {
            Ok(m) if !m.is_dir() => {
                return Err(format!("{} is not a directory", at.display()));
            }
            Ok(_) if writable(at) => return Ok(()),
            Ok(_) => {
                return Err(if at == dir {
                    format!(
                        "mailproc's user may not write in {}, where the database and its -wal and -shm files go{}",
                        at.display(),
                        as_whom()
                    )
                } else {
                    format!(
                        "{} is missing and mailproc's user may not create it in {}{}",
                        dir.display(),
                        at.display(),
                        as_whom()
                    )
                });
            }
            Err(_) => match at.parent() {
                Some(up) if !up.as_os_str().is_empty() => at = up,
                _ => return Ok(()),
            },
        }
    }
}

/// Refuses a damaged file before anything of it is read as the service's
/// state: SQLite's `quick_check` (every page of every table and index, not
/// the indexes' contents; 35 ms for 22 MB of 43,000 records, cached). A damaged file passed
/// `check-config` and started, each account then failing every pass with
/// "database disk image is malformed" while `/health` said the database
/// was fine (an audit).
pub(super) fn intact(conn: &Connection) -> Result<()> {
    let damaged = |why: String| {
        StoreError::new(
            "open",
            Cause::Schema(format!(
                "the file is damaged ({why}): restore it from a backup (README, \"Backups\"), \
                 or recover what is left with `sqlite3 FILE .recover` into a new file"
            )),
        )
    };
    let found: Vec<String> = match conn
        .prepare("PRAGMA quick_check(3)")
        .and_then(|mut q| q.query_map([], |r| r.get(0))?.collect())
    {
        Ok(found) => found,
        Err(e) => {
            let text = e.to_string();
            let e = StoreError::from(e);
            // A file that is no database at all (a mistyped path) is not
            // "damaged": restoring a backup is no advice for it (the
            // regression audit; `check-config` says the same).
            if matches!(&e.cause, Cause::Sqlite(rusqlite::Error::SqliteFailure(f, _))
                if f.code == rusqlite::ErrorCode::NotADatabase)
            {
                return Err(StoreError::new(
                    "open",
                    Cause::Schema("the file is not an SQLite database".into()),
                ));
            }
            if e.is_damaged() {
                return Err(damaged(format!("SQLite: {text}")));
            }
            return Err(e.during("check the file"));
        }
    };
    match found.as_slice() {
        [ok] if ok == "ok" => Ok(()),
        _ => Err(damaged(format!(
            "SQLite's quick_check: {}",
            crate::logging::clean_up_to(&found.join("; "), 300)
        ))),
    }
}

/// Refuses another program's database before anything of it is changed
/// (its journal mode, its tables): no schema version of mailproc's, yet
/// tables. A mistyped `storage.path` must not migrate someone's data.
pub(super) fn foreign(conn: &Connection) -> Result<()> {
    // One snapshot: read apart, another process's first migration could
    // commit between the version (0) and the tables (there), and the file
    // was taken for another program's (a flaky test found it).
    let tx = conn.unchecked_transaction()?;
    let conn = &*tx;
    let version: i64 = conn.pragma_query_value(None, "user_version", |r| r.get(0))?;
    let names: Vec<String> = conn
        .prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")?
        .query_map([], |r| r.get(0))?
        .collect::<rusqlite::Result<_>>()?;
    // Migration 1 made these; every later one keeps them (their names
    // alone are common: the columns too).
    let columns: Vec<String> = conn
        .prepare("SELECT name FROM pragma_table_info('emails')")?
        .query_map([], |r| r.get(0))?
        .collect::<rusqlite::Result<_>>()?;
    let ours = ["settings", "emails", "folder_state"]
        .iter()
        .all(|t| names.iter().any(|n| n == t))
        && ["account", "mailbox", "uidvalidity", "uid", "message_id"]
            .iter()
            .all(|c| columns.iter().any(|n| n == c));
    if (names.is_empty() && version == 0) || (version > 0 && ours) {
        return Ok(());
    }
    // A version with no tables: what a failed `sqlite3 .recover` pipe
    // leaves. Taken for a new file, it passed `check-config` and `run`
    // failed on "no such table" (the regression audit).
    if names.is_empty() {
        return Err(StoreError::new(
            "open",
            Cause::Schema(format!(
                "the file has schema version {version} but no tables (a copy that failed?): \
                 restore a backup, or remove the file to start afresh"
            )),
        ));
    }
    if ours {
        // mailproc's own tables without its version: what `sqlite3 .dump`
        // or `.recover` leaves of a copy. Taken for another program's file,
        // "name a new file" was advised, which processes every mailbox
        // again from nothing (an audit).
        let current = super::schema::current_schema()
            .is_ok_and(|fresh| schema_of(conn).is_ok_and(|here| here == fresh));
        return Err(StoreError::new(
            "open",
            Cause::Schema(if version < 0 {
                format!(
                    "the file holds mailproc's tables at schema version {version}, which no \
                     mailproc writes (1 to {}); restore it from a backup",
                    MIGRATIONS.len()
                )
            } else if current {
                format!(
                    "the file holds mailproc's tables but no schema version, as a copy made \
                     with sqlite3's .dump or .recover is left; they are this mailproc's \
                     (version {n}): set it with `sqlite3 FILE 'PRAGMA user_version = {n}'` \
                     and start again",
                    n = MIGRATIONS.len()
                )
            } else {
                "the file holds mailproc's tables but no schema version, as a copy made with \
                 sqlite3's .dump or .recover is left, and they are not this mailproc's newest: \
                 restore a backup made as the README's \"Backups\" says (it keeps the version)"
                    .to_string()
            }),
        ));
    }
    Err(StoreError::new(
        "open",
        Cause::Schema(format!(
            "the file holds another program's tables ({}{}){}, not mailproc's: name a new file or mailproc's own",
            names[..names.len().min(3)].join(", "),
            if names.len() > 3 { ", …" } else { "" },
            if version != 0 {
                format!(" at schema version {version}")
            } else {
                String::new()
            }
        )),
    ))
}

/// Every table, index, view and trigger of the file with the SQL that made
/// it, in order: what a schema is compared by. Tables and columns alone
/// took a copy of an older schema whose last step changed only an index
/// for the newest, and the version it was told to set made a query of the
/// new index fail (the regression audit).
pub(super) fn schema_of(conn: &Connection) -> Result<Vec<(String, String, Option<String>)>> {
    Ok(conn
        .prepare(
            "SELECT type, name, sql FROM sqlite_master \
             WHERE name NOT LIKE 'sqlite_%' ORDER BY type, name",
        )?
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?
        .collect::<rusqlite::Result<_>>()?)
}

/// The file at `path`, when it exists, is mailproc's database (or empty)
/// and not newer than this mailproc: read without changing anything (no
/// migration, no journal mode), for `check-config`.
fn check_contents(path: &Path) -> std::result::Result<(), String> {
    use rusqlite::OpenFlags;
    let conn = match Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    ) {
        Ok(c) => c,
        // Not readable this way (a WAL file without its -shm in a directory
        // this user may not write): `run` will say.
        Err(_) => return Ok(()),
    };
    intact(&conn)
        .and_then(|()| foreign(&conn))
        .map_err(|e| match e.cause {
            Cause::Schema(why) => format!("{}: {why}", path.display()),
            other => format!("{}: {}", path.display(), StoreError::new("read", other)),
        })?;
    let version: usize = conn
        .pragma_query_value(None, "user_version", |r| r.get(0))
        .unwrap_or(0);
    if version > MIGRATIONS.len() {
        return Err(format!(
            "{}: {}",
            path.display(),
            super::newer_schema(version)
        ));
    }
    Ok(())
}

/// The accounts the database at `path` keeps watermarks of (folders it has
/// seen), read without writing (`check-config`); none when it cannot be
/// read so.
pub fn accounts_seen_at(path: &Path) -> Vec<String> {
    use rusqlite::OpenFlags;
    let Ok(conn) = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    ) else {
        return Vec::new();
    };
    accounts_seen(&conn).unwrap_or_default()
}

/// The accounts `folder_state` keeps watermarks of.
pub(super) fn accounts_seen(conn: &Connection) -> rusqlite::Result<Vec<String>> {
    let mut st = conn.prepare("SELECT DISTINCT account FROM folder_state")?;
    let rows = st.query_map([], |r| r.get(0))?;
    rows.collect()
}

/// Who the check ran as: an operator checking a file as themselves, not
/// as the service's user, is told so.
fn as_whom() -> String {
    use std::os::unix::fs::MetadataExt;
    match std::fs::metadata("/proc/self") {
        Ok(m) => format!(" (checked as uid {}: check as the service's user)", m.uid()),
        Err(_) => String::new(),
    }
}
