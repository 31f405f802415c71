//! Tests of the file and its schema: migrations, another program's file,
//! a damaged or versionless copy, a lock another program holds.

use super::*;

/// A database file at `path` as schema `version` left it, marked so.
fn at_version(path: &std::path::Path, version: usize) -> Connection {
    let conn = Connection::open(path).unwrap();
    for step in &MIGRATIONS[..version] {
        conn.execute_batch(step).unwrap();
    }
    conn.pragma_update(None, "user_version", version).unwrap();
    conn
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
fn another_programs_database_is_refused_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("notes.db");
    {
        let c = Connection::open(&path).unwrap();
        c.execute_batch("CREATE TABLE notes (body TEXT); INSERT INTO notes VALUES ('keep me');")
            .unwrap();
    }
    let e = Store::open(&path).err().expect("refused").to_string();
    assert!(e.contains("another program's tables (notes)"), "{e}");
    let c = Connection::open(&path).unwrap();
    let mode: String = c
        .pragma_query_value(None, "journal_mode", |r| r.get(0))
        .unwrap();
    assert_eq!(mode, "delete", "its journal mode was changed");
    let tables: i64 = c
        .query_row(
            "SELECT count(*) FROM sqlite_master WHERE type = 'table'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(tables, 1, "mailproc's tables were added");
    // Many programs keep a schema version of their own: refused all the
    // same, untouched, also by `check-config`'s read.
    for version in [3, 42] {
        let path = dir.path().join(format!("v{version}.db"));
        {
            let c = Connection::open(&path).unwrap();
            c.execute_batch(&format!(
                "CREATE TABLE notes (body TEXT); PRAGMA user_version = {version};"
            ))
            .unwrap();
        }
        let e = Store::open(&path).err().expect("refused").to_string();
        assert!(
            e.contains("another program's tables (notes)")
                && e.contains(&format!("at schema version {version}, not mailproc's")),
            "{e}"
        );
        let checked = check_path(&path).unwrap_err();
        assert!(checked.contains("another program's tables"), "{checked}");
        let mode: String = Connection::open(&path)
            .unwrap()
            .pragma_query_value(None, "journal_mode", |r| r.get(0))
            .unwrap();
        assert_eq!(
            mode, "delete",
            "version {version}: its journal mode was changed"
        );
    }
    assert!(check_path(&path)
        .unwrap_err()
        .contains("another program's tables"));
    // Tables named as mailproc's are not enough (found by an audit).
    let lookalike = dir.path().join("lookalike.db");
    Connection::open(&lookalike)
        .unwrap()
        .execute_batch(
            "CREATE TABLE settings (k, v); CREATE TABLE emails (id, body);
             CREATE TABLE folder_state (x); PRAGMA user_version = 3;",
        )
        .unwrap();
    assert!(Store::open(&lookalike)
        .err()
        .expect("refused")
        .to_string()
        .contains("another program's tables"));
    assert!(check_path(&lookalike).is_err());
    // A newer mailproc's database: check-config says so too.
    let newer = dir.path().join("newer.db");
    Store::open(&newer).unwrap();
    Connection::open(&newer)
        .unwrap()
        .execute_batch("PRAGMA user_version = 99;")
        .unwrap();
    assert!(check_path(&newer)
        .unwrap_err()
        .contains("newer than this mailproc"));
    // An empty file, and mailproc's own database, open as before.
    let fresh = dir.path().join("empty.db");
    std::fs::write(&fresh, b"").unwrap();
    Store::open(&fresh).unwrap();
    drop(Store::open(&fresh).unwrap());
    check_path(&fresh).unwrap();
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

/// Found by an audit: an operation that found the file damaged set the
/// trouble `/health` tells, and the next write that happened to succeed
/// (a page elsewhere) ended it, so `/health` said the database was fine
/// while every pass failed. A damaged file's trouble stays; a locked
/// file's error says who holds it.
#[test]
fn a_damaged_file_stays_told_and_a_lock_is_explained() {
    let dir = tempfile::tempdir().unwrap();
    let s = Store::open(&dir.path().join("db.sqlite")).unwrap();
    let failure = |code: i32, text: &str| {
        StoreError::from(rusqlite::Error::SqliteFailure(
            rusqlite::ffi::Error::new(code),
            Some(text.into()),
        ))
    };
    let damaged = failure(
        rusqlite::ffi::SQLITE_CORRUPT,
        "database disk image is malformed",
    );
    assert!(damaged.is_damaged() && !damaged.is_unwritable());
    assert!(s
        .op("folder_state", || -> Result<()> { Err(damaged) })
        .is_err());
    assert!(s.ping().is_err());
    // Writes elsewhere succeed; the file is still damaged.
    record_final(&s, &[(meta(1), ok(vec![]))], None);
    s.set_setting("k", "v").unwrap();
    let told = s.ping().unwrap_err().to_string();
    assert!(
        told.contains("malformed") && told.contains("restore it from a backup"),
        "{told}"
    );
    // A passing trouble after it does not replace it.
    let full = failure(rusqlite::ffi::SQLITE_FULL, "database or disk is full");
    assert!(s.op("x", || -> Result<()> { Err(full) }).is_err());
    assert!(s.ping().unwrap_err().to_string().contains("malformed"));

    // A file system gone read-only under the open file (ext4's
    // errors=remount-ro) fails a write as an I/O error: the host's state,
    // 503 too (the host-failure audit found a 500).
    let eio = failure(rusqlite::ffi::SQLITE_IOERR_WRITE, "disk I/O error");
    assert!(eio.is_unwritable(), "503, not 500");
    assert!(eio.remedy().contains("dmesg"), "{}", eio.remedy());

    let locked = failure(rusqlite::ffi::SQLITE_BUSY, "database is locked");
    assert!(locked.is_unwritable(), "503, not 500");
    let said = locked.to_string();
    assert!(
        said.contains("another program holds the database file"),
        "{said}"
    );
}

#[test]
fn step_5_takes_undo_rows_out_of_the_counts_and_indexes_senders() {
    // A database of schema 4 with a rule's row and an undo's row.
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("db.sqlite");
    {
        let conn = at_version(&p, 4);
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

/// Step 8 gives the deliveries logged before it the outcome the metric
/// counted them under, from their status and error.
/// Found by audits (stop 56): a copy without its schema version (what
/// sqlite3's `.dump` leaves) was called another program's file; then, told
/// to set the newest version, a copy of an older schema whose last step
/// changed only an index was mended into one whose queries failed. The
/// newest version is offered only for the newest schema, whole.
#[test]
fn a_versionless_copy_is_told_its_version_only_when_it_is_the_newest() {
    let dir = tempfile::tempdir().unwrap();
    let made = |name: &str, steps: usize| {
        let p = dir.path().join(name);
        let conn = Connection::open(&p).unwrap();
        for step in &MIGRATIONS[..steps] {
            conn.execute_batch(step).unwrap();
        }
        p
    };
    let newest = made("newest.db", MIGRATIONS.len());
    let e = Store::open(&newest).err().expect("refused").to_string();
    let set = format!("PRAGMA user_version = {}", MIGRATIONS.len());
    assert!(
        e.contains("mailproc's tables but no schema version") && e.contains(&set),
        "{e}"
    );
    let older = made("older.db", MIGRATIONS.len() - 1);
    let e = Store::open(&older).err().expect("refused").to_string();
    assert!(e.contains("mailproc's tables but no schema version"), "{e}");
    assert!(!e.contains("PRAGMA user_version"), "{e}");
    assert!(e.contains("restore a backup"), "{e}");
    // Neither was changed.
    let version: i64 = Connection::open(&older)
        .unwrap()
        .pragma_query_value(None, "user_version", |r| r.get(0))
        .unwrap();
    assert_eq!(version, 0);
    // A version with no tables is no new file.
    let hollow = dir.path().join("hollow.db");
    Connection::open(&hollow)
        .unwrap()
        .pragma_update(None, "user_version", 9)
        .unwrap();
    let e = Store::open(&hollow).err().expect("refused").to_string();
    assert!(e.contains("schema version 9 but no tables"), "{e}");
    // A file that is no database is said to be none, not damaged.
    let notes = dir.path().join("notes.txt");
    std::fs::write(&notes, "not a database at all\n".repeat(300)).unwrap();
    let e = Store::open(&notes).err().expect("refused").to_string();
    assert!(
        e.contains("not an SQLite database") && !e.contains("damaged"),
        "{e}"
    );
}

#[test]
fn step_8_gives_old_deliveries_their_outcome() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("db.sqlite");
    {
        let conn = at_version(&p, 7);
        conn.execute_batch(
            "INSERT INTO webhook_deliveries (at, event, url, status_code, error, duration_ms) VALUES
                (1, 'test', 'http://a/', 204, NULL, 1),
                (2, 'test', 'http://a/', 503, NULL, 1),
                (3, 'error', 'http://a/', NULL, 'not attempted: the target gave no answer', 0),
                (4, 'test', 'http://a/', NULL, 'refused: 10.0.0.1 is private', 0),
                (5, 'test', 'http://a/', NULL, 'connection refused', 3);",
        )
        .unwrap();
    }
    let s = Store::open(&p).unwrap();
    let (rows, total) = s.deliveries(10, 0).unwrap();
    assert_eq!(total, 5);
    let outcomes: Vec<_> = rows.iter().map(|d| d.outcome.as_str()).collect();
    assert_eq!(
        outcomes,
        ["failed", "refused", "skipped", "http_error", "success"]
    );
    s.record_delivery(
        "test",
        "refused",
        "http://b/",
        None,
        None,
        Some("x"),
        Duration::ZERO,
    )
    .unwrap();
    assert_eq!(s.deliveries(1, 0).unwrap().0[0].outcome, "refused");
    // A row written before its token's shape was masked is masked as it
    // is read (the second regression audit, stop 59).
    let token = "QwErTyUiOpAsDfGhJkLzXcVb";
    s.record_delivery(
        "test",
        "failed",
        &format!("http://h.example/services/T0ABCDEFG/B0ABCDEFG/{token}"),
        None,
        None,
        Some(&format!(
            "POST http://h.example/services/x/{token}: refused"
        )),
        Duration::ZERO,
    )
    .unwrap();
    let row = &s.deliveries(1, 0).unwrap().0[0];
    assert!(!row.url.contains(token), "{}", row.url);
    assert_eq!(
        row.url,
        "http://h.example/services/T0ABCDEFG/B0ABCDEFG/********"
    );
    let error = row.error.as_deref().unwrap();
    assert!(!error.contains(token), "{error}");
}

#[test]
fn a_version_lowered_by_hand_is_said_and_nothing_changes() {
    // The newest tables marked as an older version: the next step meets
    // what it would make and fails. SQLite's words alone said nothing an
    // operator could act on.
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("db.sqlite");
    Store::open(&p).unwrap().set_setting("k", "v").unwrap();
    Connection::open(&p)
        .unwrap()
        .pragma_update(None, "user_version", 1)
        .unwrap();
    let e = Store::open(&p).err().expect("refused").to_string();
    let newest = MIGRATIONS.len();
    assert!(
        e.contains("from schema version 1 to 2 failed")
            && e.contains("changed by hand")
            && e.contains(&format!("PRAGMA user_version = {newest}'")),
        "{e}"
    );
    // SQLite's words, not the step's SQL it quotes (the regression audit).
    assert!(!e.contains("CREATE") && e.lines().count() == 1, "{e}");
    assert!(!e.contains(" in )") && !e.contains("sqlite3 FILE"), "{e}");
    // The path as a shell reads it back: no `$` or backquote expanded, a
    // quote kept (the regression audit, stop 58).
    let odd = dir.path().join("it's $HOME `x`.sqlite");
    Store::open(&odd).unwrap();
    Connection::open(&odd)
        .unwrap()
        .pragma_update(None, "user_version", 1)
        .unwrap();
    let e = Store::open(&odd).err().expect("refused").to_string();
    let quoted = format!(
        "sqlite3 '{}/it'\\''s $HOME `x`.sqlite' 'PRAGMA",
        dir.path().display()
    );
    assert!(e.contains(&quoted), "{e}\n{quoted}");
    let c = Connection::open(&p).unwrap();
    let v: i64 = c
        .pragma_query_value(None, "user_version", |r| r.get(0))
        .unwrap();
    assert_eq!(v, 1, "the version was moved");
    let kept: String = c
        .query_row("SELECT value FROM settings WHERE key = 'k'", [], |r| {
            r.get(0)
        })
        .unwrap();
    assert_eq!(kept, "v");
}

/// A file from before the vocabulary was bounded gets each account's count
/// of rows as it migrates: the first trim comes when that is past the
/// bound, not after a scan with each message.
#[test]
fn the_vocabulary_count_is_taken_as_the_file_migrates() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("v9.db");
    {
        let conn = at_version(&p, 9);
        conn.execute_batch(
            "INSERT INTO learn_state (account, generation) VALUES ('a', 1), ('b', 1);
             INSERT INTO learn_tokens VALUES ('a', 'Work', 's:x', 2), ('a', 'INBOX', 's:x', 1),
                 ('a', 'Work', 's:y', 1);",
        )
        .unwrap();
    }
    let s = Store::open(&p).unwrap();
    assert_eq!(s.learn_state("a").unwrap().vocabulary, 3);
    assert_eq!(s.learn_state("b").unwrap().vocabulary, 0);
}

/// Found by the upgrade audit (stop 58): a new binary's shell command
/// (`set-password`) migrated the file under the old service still running
/// on it, whose writes then knew nothing of the new columns. While another
/// process holds the service's lock, an older file is left as it is.
#[test]
fn an_older_file_a_running_service_holds_is_not_migrated_under_it() {
    use nix::fcntl::{Flock, FlockArg};
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("v9.db");
    at_version(&p, 9);
    let version = || -> i64 {
        Connection::open(&p)
            .unwrap()
            .pragma_query_value(None, "user_version", |r| r.get(0))
            .unwrap()
    };
    let service = Flock::lock(
        std::fs::File::open(&p).unwrap(),
        FlockArg::LockExclusiveNonblock,
    )
    .map_err(|(_, e)| e)
    .unwrap();
    let e = Store::open(&p).err().expect("refused").to_string();
    assert!(
        e.contains("schema version 9 is older than this mailproc's")
            && e.contains("stop that service first: this mailproc's service moves the file"),
        "{e}"
    );
    assert_eq!(version(), 9);
    drop(service);
    let s = Store::open(&p).unwrap();
    assert_eq!(version(), MIGRATIONS.len() as i64);
    // SQLite's own lock on the file outlives the look at the service's
    // (the second regression audit: the look closed a descriptor of the
    // file, which drops every POSIX lock of the process on it; a `sqlite3`
    // read then deleted the live -wal, and the file corrupted).
    s.set_setting("k", "v").unwrap();
    use std::os::unix::fs::MetadataExt;
    let inode = format!(":{} ", std::fs::metadata(&p).unwrap().ino());
    let pid = format!(" {} ", std::process::id());
    let locks = std::fs::read_to_string("/proc/locks").unwrap();
    assert!(
        locks
            .lines()
            .any(|l| l.contains("POSIX") && l.contains(&pid) && l.contains(&inode)),
        "no lock of SQLite's on {}:\n{locks}",
        p.display()
    );
}
