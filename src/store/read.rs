//! Read connections for the HTTP API, and the activity counts each keeps
//! while the database does not change.

use std::collections::HashMap;

use parking_lot::MutexGuard;
use rusqlite::Connection;

use super::Result;

/// Read connections of a store on a file: one per HTTP worker (the default
/// `server.workers`), so concurrent pages never queue for one.
pub(super) const READERS: usize = 4;

/// A read connection and the activity counts it has made since the
/// database last changed.
pub(super) struct Reader {
    pub(super) conn: Connection,
    pub(super) counts: Counts,
}

/// Activity counts by filter, valid while the database's `data_version`
/// (which moves with every commit of another connection: the writer's, or
/// another process's) stays `version`. Counting every match of a common
/// search term is most of a search page's cost (about 3 ms over 100,000
/// rows), and paging through the results, or a dashboard reloading them,
/// asks for the same count again.
#[derive(Default)]
pub(super) struct Counts {
    version: i64,
    totals: HashMap<String, u64>,
}

/// Filters whose counts a reader keeps at most (all are dropped when full).
const COUNTS_KEPT: usize = 64;

impl Counts {
    /// The count of `key` at the database's current `data_version` on
    /// `conn`, from the cache or from `count`.
    fn get(
        &mut self,
        conn: &Connection,
        key: String,
        count: impl FnOnce() -> Result<u64>,
    ) -> Result<u64> {
        let version: i64 = conn.query_row("PRAGMA data_version", [], |r| r.get(0))?;
        if version != self.version || self.totals.len() >= COUNTS_KEPT {
            self.version = version;
            self.totals.clear();
        }
        if let Some(n) = self.totals.get(&key) {
            return Ok(*n);
        }
        let n = count()?;
        self.totals.insert(key, n);
        Ok(n)
    }
}

/// A connection for reads: a reader, or the writer's for an in-memory store
/// (which other connections cannot see).
pub(super) enum ReadGuard<'a> {
    Reader(MutexGuard<'a, Reader>),
    Writer(MutexGuard<'a, Connection>),
}

impl std::ops::Deref for ReadGuard<'_> {
    type Target = Connection;
    fn deref(&self) -> &Connection {
        match self {
            ReadGuard::Reader(r) => &r.conn,
            ReadGuard::Writer(c) => c,
        }
    }
}

impl ReadGuard<'_> {
    /// A count through the reader's cache (uncached on the writer's
    /// connection, where nothing tells another connection's commits).
    pub(super) fn count(
        &mut self,
        key: String,
        count: impl FnOnce(&Connection) -> Result<u64>,
    ) -> Result<u64> {
        match self {
            ReadGuard::Reader(r) => {
                let Reader { conn, counts } = &mut **r;
                counts.get(conn, key, || count(conn))
            }
            ReadGuard::Writer(c) => count(c),
        }
    }

    /// Hands the connection to the next waiter in turn (see
    /// [`MutexGuard::unlock_fair`]).
    pub(super) fn unlock_fair(self) {
        match self {
            ReadGuard::Reader(r) => MutexGuard::unlock_fair(r),
            ReadGuard::Writer(c) => MutexGuard::unlock_fair(c),
        }
    }
}
