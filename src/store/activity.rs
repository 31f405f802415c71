//! The activity log and statistics, read from the processing record.

use rusqlite::{params, params_from_iter, Connection, OptionalExtension};
use serde::Serialize;

use super::{Result, Status, Store};
use crate::timestamp::iso_ms;

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
    pub status: Status,
    pub error: Option<String>,
    pub attempts: u32,
    /// When the move was undone (the message put back), if it was.
    pub undone_at: Option<String>,
    /// The folder a person moved the message to after us ("Move to…" or by
    /// hand, seen at the next pass); `""` when it was deleted.
    pub corrected_to: Option<String>,
    /// Where the message went, when it was moved.
    #[serde(skip)]
    pub dest_folder: Option<String>,
    /// Whether undo has what it needs (the flags before the move).
    #[serde(skip)]
    pub undoable: bool,
}

/// The longest search term, in characters. The index matches a term as a
/// phrase of its three-character pieces, and its cost grows faster than
/// the term: 8 KB took 30 s to a minute of CPU and gigabytes over 200,000
/// rows (found by an audit), 200 characters a few milliseconds.
pub const MAX_SEARCH_CHARS: usize = 200;

/// Why `term` cannot be searched for, in words for the operator (the API
/// prefixes `search: `); `None` when it can.
pub fn search_refusal(term: &str) -> Option<String> {
    if term.chars().any(char::is_control) {
        // Records hold none (they are replaced by spaces when mail is
        // recorded), and the search index's query ends at a NUL.
        return Some("control characters cannot be searched for (records hold none)".into());
    }
    let n = term.chars().count();
    (n > MAX_SEARCH_CHARS)
        .then(|| format!("at most {MAX_SEARCH_CHARS} characters can be searched for, got {n}"))
}

#[derive(Debug, Clone, Default)]
pub struct ActivityQuery {
    pub page: u32,
    pub page_size: u32,
    pub account: Option<String>,
    pub action_type: Option<String>,
    pub status: Option<Status>,
    pub search: Option<String>,
    pub start_ms: Option<i64>,
    pub end_ms: Option<i64>,
    /// Only rows after this `(processed_at, id)` in the newest-first order:
    /// a cursor that stays right while new rows arrive (exports page by it).
    pub before: Option<(i64, i64)>,
    /// Only what still needs a person (the dashboard's "Needs
    /// attention"): with `undecided`, mail nothing decided; else rows not
    /// corrected since (a message for review that was moved is done).
    pub open: bool,
    /// Only mail nothing decided ([`UNDECIDED`]).
    pub undecided: bool,
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct Stats {
    pub total_processed: u64,
    pub by_action: std::collections::BTreeMap<String, u64>,
    pub by_account: std::collections::BTreeMap<String, u64>,
}

/// The rows one transaction adds to the search index.
pub(super) const INDEX_CHUNK: usize = 5_000;

impl Store {
    /// Adds the rows written since the last call to the search index, in
    /// bulk (the trigram index costs far less fed in bulk than row by row)
    /// but [`INDEX_CHUNK`] rows a transaction, the writer's lock released
    /// in between (an audit: 200,000 rows in one held every account's
    /// records 4.5 s), then checkpoints the log (see `wal_autocheckpoint` in
    /// `Store::init`) on a connection of its own, the writer's lock
    /// released: a PASSIVE checkpoint lets writers go on, and one already
    /// running (another account's) stands for this one. Returns how many
    /// rows were added.
    pub fn index_search(&self) -> Result<usize> {
        let mut n = 0;
        loop {
            let (added, taken) = self.op("index_search", || {
                let mut conn = self.conn.lock();
                let tx = conn.transaction()?;
                let added = tx.execute(
                    "INSERT INTO emails_fts (rowid, subject, message_id, sender)
                     SELECT e.id, e.subject, e.message_id, e.sender
                     FROM (SELECT id FROM fts_queue ORDER BY id LIMIT ?1) q
                     JOIN emails e ON e.id = q.id ORDER BY q.id",
                    [INDEX_CHUNK],
                )?;
                let taken = tx.execute(
                    "DELETE FROM fts_queue WHERE id IN (SELECT id FROM fts_queue ORDER BY id LIMIT ?1)",
                    [INDEX_CHUNK],
                )?;
                tx.commit()?;
                Ok((added, taken))
            })?;
            n += added;
            if taken < INDEX_CHUNK {
                break;
            }
        }
        if n > 0 {
            self.checkpoint()?;
        }
        Ok(n)
    }

    /// Copies the write-ahead log into the database file (PASSIVE: writers
    /// go on; one already running stands for this one), so that the next
    /// write may cut the log back. After a pass that recorded something,
    /// and after a burst of webhook deliveries: their rows, written after
    /// the pass's checkpoint, kept the log from ever being cut back, and it
    /// grew to SQLite's own checkpoint at 10,000 pages (a soak audit).
    pub fn checkpoint(&self) -> Result<()> {
        let Some(mut conn) = self.checkpointer.as_ref().and_then(|c| c.try_lock()) else {
            return Ok(());
        };
        let done = self.op("checkpoint", || {
            conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |_| Ok(()))
                .map_err(Into::into)
        });
        // A connection that first read the log while its files could only
        // be read keeps it read-only for its life: after a spell of
        // read-only files, every checkpoint failed and `/health` read 503
        // until a restart (an audit). Opened afresh, it sees the files as
        // they are now.
        if done.is_err() {
            if let Some(fresh) = self
                .file
                .as_ref()
                .and_then(|(p, _)| Connection::open(p).ok())
            {
                *conn = fresh;
            }
        }
        done
    }

    /// One page of the activity log, newest first, and the number of matches.
    pub fn activity(&self, q: &ActivityQuery) -> Result<(Vec<ActivityEntry>, u64)> {
        self.op("activity", || {
            let mut conn = self.reader();
            let queued = search_queued(&conn)?;
            let only_search = q.account.is_none()
                && q.action_type.is_none()
                && q.status.is_none()
                && q.start_ms.is_none()
                && q.end_ms.is_none()
                && q.before.is_none()
                && !q.open
                && !q.undecided;
            let indexed = q
                .search
                .as_deref()
                .filter(|s| only_search && !queued && s.chars().count() >= 3);
            // The filters, not the page: every page of a search shares it.
            let ActivityQuery {
                page: _,
                page_size: _,
                account,
                action_type,
                status,
                search,
                start_ms,
                end_ms,
                before,
                open,
                undecided,
            } = q;
            let key = format!(
                "{:?}",
                (
                    account,
                    action_type,
                    status,
                    search,
                    (start_ms, end_ms, before),
                    (open, undecided),
                    queued
                )
            );
            let total: u64 = conn.count(key, |conn| {
                Ok(match indexed {
                    // Every indexed row has its email (the triggers keep
                    // them in step): the index alone counts five times
                    // faster than the join.
                    Some(s) => conn.query_row(
                        "SELECT COUNT(*) FROM emails_fts WHERE emails_fts MATCH ?1",
                        [fts_phrase(s)],
                        |r| r.get(0),
                    )?,
                    None => {
                        let (from, where_sql, args) = activity_filter(q, queued, false);
                        conn.query_row(
                            &format!("SELECT COUNT(*) FROM {from} {where_sql}"),
                            params_from_iter(args.iter()),
                            |r| r.get(0),
                        )?
                    }
                })
            })?;
            // A term found in many rows fills a page within the newest few
            // hundred: walking the time index with LIKE beats joining and
            // sorting every match (0.5 ms instead of 9 over 100,000 rows
            // with a term in one of six). A rare term is the other way
            // round. (ASCII only: LIKE folds ASCII case, the index all.)
            let walk = indexed.is_some_and(|s| s.is_ascii() && total >= DENSE_MATCHES);
            let (from, where_sql, args) = activity_filter(q, queued, walk);
            let offset = u64::from(q.page.max(1) - 1) * u64::from(q.page_size);
            let rows = activity_rows(&conn, from, &where_sql, args, q.page_size, offset)?;
            // Searches from several HTTP workers queue on the readers;
            // handing a reader over in turn keeps one of them from waiting
            // out a run of the others.
            conn.unlock_fair();
            Ok((rows, total))
        })
    }

    /// Up to `limit` rows after the cursor `q.before`, newest first, without
    /// counting: exports walk the log with it, one short lock per page.
    pub fn activity_page(&self, q: &ActivityQuery, limit: u32) -> Result<Vec<ActivityEntry>> {
        self.op("activity_page", || {
            let conn = self.reader();
            let (from, where_sql, args) = activity_filter(q, search_queued(&conn)?, false);
            activity_rows(&conn, from, &where_sql, args, limit, 0)
        })
    }

    /// The ids of every row a search of the index matches (`q.search` of 3
    /// characters or more), newest first: an export of a search pages
    /// through them with [`Store::activity_by_ids`]. Paged by its cursor
    /// instead, each page joined and sorted every match again, and an
    /// export of a common term cost the square of its matches (90,000 of
    /// 160,000 rows: 21 s of CPU against 0.7 s for the whole log; an
    /// audit). 8 bytes a match.
    pub fn activity_ids(&self, q: &ActivityQuery) -> Result<Vec<i64>> {
        self.op("activity_ids", || {
            let conn = self.reader();
            let (from, where_sql, args) = activity_filter(q, search_queued(&conn)?, false);
            let mut st = conn.prepare(&format!(
                "SELECT e.id FROM {from} {where_sql} ORDER BY e.processed_at DESC, e.id DESC"
            ))?;
            let ids = st.query_map(params_from_iter(args.iter()), |r| r.get(0))?;
            Ok(ids.collect::<std::result::Result<_, _>>()?)
        })
    }

    /// The rows of `ids` that still exist, in the order of `ids`.
    pub fn activity_by_ids(&self, ids: &[i64]) -> Result<Vec<ActivityEntry>> {
        self.op("activity_by_ids", || {
            let conn = self.reader();
            let mut st = conn.prepare_cached(&format!(
                "SELECT {ACTIVITY_COLUMNS} FROM emails e
                 WHERE e.id IN (SELECT value FROM json_each(?1))"
            ))?;
            let list = serde_json::to_string(ids).unwrap_or_else(|_| "[]".into());
            let mut rows: std::collections::HashMap<i64, ActivityEntry> = st
                .query_map([list], activity_row)?
                .map(|r| r.map(|e| (e.id, e)))
                .collect::<std::result::Result<_, _>>()?;
            Ok(ids.iter().filter_map(|id| rows.remove(id)).collect())
        })
    }

    /// One activity row by id, for the dashboard's detail page.
    pub fn activity_entry(&self, id: i64) -> Result<Option<ActivityEntry>> {
        self.op("activity_entry", || {
            Ok(self
                .conn
                .lock()
                .query_row(
                    &format!("SELECT {ACTIVITY_COLUMNS} FROM emails e WHERE e.id = ?1"),
                    [id],
                    activity_row,
                )
                .optional()?)
        })
    }

    /// Executed actions per UTC day (days since the epoch) and type, from
    /// `since_day` on, summed over accounts: the overview's chart. Read from
    /// the trigger-kept daily counters, so 30 days are a few dozen rows.
    pub fn actions_per_day(&self, since_day: i64) -> Result<Vec<(i64, String, u64)>> {
        self.op("actions_per_day", || {
            let conn = self.reader();
            let mut st = conn.prepare_cached(
                "SELECT day, key, SUM(n) FROM stats_daily
                 WHERE day >= ?1 AND key NOT LIKE '\\_%' ESCAPE '\\'
                 GROUP BY day, key HAVING SUM(n) > 0 ORDER BY day, key",
            )?;
            let rows = st.query_map([since_day], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?;
            Ok(rows.collect::<std::result::Result<_, _>>()?)
        })
    }
}

/// The FROM and WHERE of an activity query, and their arguments.
/// Whether rows wait for the search index (see [`Store::index_search`]).
fn search_queued(conn: &Connection) -> Result<bool> {
    Ok(conn.query_row("SELECT EXISTS (SELECT 1 FROM fts_queue)", [], |r| r.get(0))?)
}

/// `s` as an FTS5 phrase: a substring match on the trigram index.
fn fts_phrase(s: &str) -> String {
    format!("\"{}\"", s.replace('"', "\"\""))
}

/// Matches from which a search walks the time index instead of the search
/// index (see [`Store::activity`]).
const DENSE_MATCHES: u64 = 1000;

/// The FROM and WHERE of an activity query. `queued`: some rows are not in
/// the search index yet, so a search also reads those with LIKE. `walk`: the
/// search is a LIKE on each row, newest first, without the search index.
fn activity_filter(
    q: &ActivityQuery,
    queued: bool,
    walk: bool,
) -> (&'static str, String, Vec<rusqlite::types::Value>) {
    {
        let mut where_ = Vec::new();
        let mut from = "emails e";
        let mut args: Vec<rusqlite::types::Value> = Vec::new();
        use rusqlite::types::Value as V;
        if let Some(a) = &q.account {
            where_.push("e.account = ?");
            args.push(V::Text(a.clone()));
        }
        match q.action_type.as_deref() {
            // Nothing was done: nothing decided anything, or what decided
            // chose to leave it where it was (a model's noop is recorded
            // as no action, a rule's as its one `noop`).
            Some("noop") => where_.push(NO_ACTION),
            Some(t) => {
                where_.push(
                    "EXISTS (SELECT 1 FROM actions x WHERE x.email_id = e.id AND x.type = ?)",
                );
                args.push(V::Text(t.to_string()));
            }
            None => {}
        }
        if let Some(s) = &q.status {
            where_.push("e.status = ?");
            args.push(V::Text(s.as_str().into()));
        }
        if q.undecided {
            where_.push(UNDECIDED);
        }
        if q.open {
            where_.push("e.corrected_to IS NULL");
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
            if s.chars().count() >= 3 && !walk {
                // The trigram index answers substring matches without a
                // scan; the join below makes it drive the query (as an
                // `IN (subquery)` it cost twice as much over 100,000 rows,
                // and a plain join let the planner probe it per row).
                if !queued {
                    from = "emails_fts CROSS JOIN emails e ON e.id = emails_fts.rowid";
                    where_.push("emails_fts MATCH ?");
                    args.push(V::Text(fts_phrase(s)));
                } else {
                    // Rows not indexed yet (see `Store::index_search`) are
                    // matched by LIKE: a few, since each pass indexes them.
                    // (Two and a half times slower than the join above, so
                    // only while some wait.)
                    from = "(SELECT rowid AS id FROM emails_fts WHERE emails_fts MATCH ? \
                            UNION ALL SELECT q.id FROM fts_queue q JOIN emails x ON x.id = q.id \
                            WHERE x.subject LIKE ?2 ESCAPE '\\' OR x.message_id LIKE ?2 ESCAPE '\\' \
                            OR x.sender LIKE ?2 ESCAPE '\\') m \
                            CROSS JOIN emails e ON e.id = m.id";
                    // The FROM clause's parameters come before the WHERE's.
                    args.splice(0..0, [V::Text(fts_phrase(s)), V::Text(like_pattern(s))]);
                }
            } else {
                where_.push(
                    "(e.subject LIKE ? ESCAPE '\\' OR e.message_id LIKE ? ESCAPE '\\' \
                     OR e.sender LIKE ? ESCAPE '\\')",
                );
                let pat = like_pattern(s);
                args.extend([V::Text(pat.clone()), V::Text(pat.clone()), V::Text(pat)]);
            }
        }
        if let Some((at, id)) = q.before {
            // As a row value, which SQLite seeks in `emails_time`: the OR
            // form was planned as a scan of the index, so each page of an
            // export cost more the deeper it was (an audit: 315,000 rows
            // in 6 s, 0.13 s for the first 5 MB and 0.7 s for the last).
            where_.push("(e.processed_at, e.id) < (?, ?)");
            args.extend([V::Integer(at), V::Integer(id)]);
        }
        let where_sql = if where_.is_empty() {
            String::new()
        } else {
            format!("WHERE {}", where_.join(" AND "))
        };
        (from, where_sql, args)
    }
}

/// Mail nothing was done to and that no person has seen to since (moved
/// with "Move to…"): `actionType=noop`. What was decided to stay, and
/// what a dry run or a review only suggests (an audit found those in no
/// `actionType` at all).
pub(super) const NO_ACTION: &str = "((e.status = 'ok' \
     AND e.actions IN ('[]', '[{\"type\":\"noop\"}]') OR e.status IN ('dry_run', 'review')) \
     AND e.model NOT IN ('undo', 'correction') AND e.corrected_to IS NULL)";

/// Mail nothing decided: no rule matched and neither the classifier nor a
/// model gave an answer (`model` `none`), not corrected since. A message a
/// rule, the classifier or a model chose to keep where it is was decided.
/// As the partial index `emails_attention` says it (schema step 9).
pub(super) const UNDECIDED: &str = "(e.status IN ('ok', 'dry_run') AND e.actions = '[]' \
     AND e.model = 'none' AND e.corrected_to IS NULL)";

/// Mail that needs a person, as the partial index `emails_attention` says
/// it: failed, for review and not corrected, or undecided.
pub(super) const ATTENTION: &str = "(e.status = 'failed' \
     OR (e.status = 'review' AND e.corrected_to IS NULL) \
     OR (e.status IN ('ok', 'dry_run') AND e.actions = '[]' \
     AND e.model = 'none' AND e.corrected_to IS NULL))";

/// `%s%` for LIKE, with `\\`, `%` and `_` of `s` escaped.
fn like_pattern(s: &str) -> String {
    format!(
        "%{}%",
        s.replace('\\', "\\\\")
            .replace('%', "\\%")
            .replace('_', "\\_")
    )
}

/// The columns an [`ActivityEntry`] is read from (`e` is `emails`).
const ACTIVITY_COLUMNS: &str = "e.id, e.processed_at, e.account, e.mailbox, e.uid, e.message_id, \
    e.subject, e.sender, e.actions, e.model, e.reasoning, e.confidence, e.status, e.error, e.attempts, \
    e.undone_at, e.corrected_to, e.dest_folder, e.orig_flags IS NOT NULL";

/// The columns of [`ACTIVITY_COLUMNS`] as an entry.
fn activity_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<ActivityEntry> {
    let at: i64 = r.get(1)?;
    let dest_folder: Option<String> = r.get(17)?;
    let mut actions =
        serde_json::from_str(&r.get::<_, String>(8)?).unwrap_or(serde_json::Value::Array(vec![]));
    // Where a `spam` or `trash` went, once its move was confirmed.
    let dest = dest_folder.as_deref();
    crate::actions::name_destinations(&mut actions, dest, dest);
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
        actions,
        // A message that failed before anything decided it (its row is
        // written with no model) reads `none`, as README lists the values.
        model: Some(r.get::<_, String>(9)?)
            .filter(|m| !m.is_empty())
            .unwrap_or_else(|| "none".into()),
        reasoning: r.get(10)?,
        confidence: r.get(11)?,
        status: r.get(12)?,
        // Shown by the API, the export and the dashboard: an error may
        // quote a URL with its credentials.
        error: r
            .get::<_, Option<String>>(13)?
            .map(|e| crate::config::redact_text(&e)),
        attempts: r.get(14)?,
        undone_at: r.get::<_, Option<i64>>(15)?.map(iso_ms),
        corrected_to: r.get(16)?,
        dest_folder,
        undoable: r.get(18)?,
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
        self.op("stats", || {
            const DAY: i64 = 86_400_000;
            let conn = self.reader();
            let mut s = Stats::default();
            let mut add = |key: String, acct: String, n: i64| {
                let n = n.max(0) as u64;
                if n == 0 {
                    return;
                }
                if key == "_processed" {
                    s.total_processed += n;
                    *s.by_account.entry(acct).or_insert(0) += n;
                } else if !key.starts_with('_') {
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
                           AND status IN ('ok', 'dry_run', 'review') AND model NOT IN ('undo', 'correction')
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
        })
    }

    /// Whether any message or daily count was ever recorded for `account`
    /// (it may since have left the configuration, or its rows aged out).
    pub fn has_account_history(&self, account: &str) -> Result<bool> {
        self.op("has_account_history", || {
            let conn = self.reader();
            let mut st = conn.prepare_cached(
                "SELECT EXISTS (SELECT 1 FROM emails WHERE account = ?1)
                     OR EXISTS (SELECT 1 FROM stats_daily WHERE account = ?1)",
            )?;
            Ok(st.query_row(params![account], |r| r.get(0))?)
        })
    }

    /// Number of parked failures per account, for `/api/accounts`.
    pub fn failed_counts(&self) -> Result<std::collections::BTreeMap<String, u64>> {
        self.op("failed_counts", || {
            let conn = self.reader();
            let mut st = conn.prepare_cached(
                "SELECT account, COUNT(*) FROM emails WHERE status = 'failed' GROUP BY account",
            )?;
            let rows = st.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?;
            Ok(rows.collect::<std::result::Result<_, _>>()?)
        })
    }
}
