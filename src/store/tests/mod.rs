//! Tests of the store as a whole: one file, many rooms.

use super::*;

mod schema;

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

impl Store {
    /// Runs SQL on the writer's connection, for tests elsewhere in the
    /// crate that need a write to fail (a trigger) or a row changed.
    pub(crate) fn test_sql(&self, sql: &str) {
        self.conn.lock().execute_batch(sql).unwrap();
    }
}

/// Records outcomes written whole, and the watermark if any.
pub(super) fn record_final(
    s: &Store,
    items: &[(EmailMeta, Outcome)],
    watermark: Option<Watermark>,
) {
    s.record_outcomes(&Outcomes {
        finals: items
            .iter()
            .map(|(m, o)| Final::new(m.clone(), o.clone()))
            .collect(),
        watermark,
        ..Default::default()
    })
    .unwrap();
}

/// Records one failed attempt, retried from `retry_at` (epoch ms); its
/// row id, attempts and status.
pub(super) fn record_failure(
    s: &Store,
    m: &EmailMeta,
    error: &str,
    max_attempts: u32,
    retry_at: i64,
) -> (i64, u32, Status) {
    let r = s
        .record_outcomes(&Outcomes {
            failures: vec![FailedAttempt {
                meta: m.clone(),
                error: error.into(),
                max_attempts,
                retry_delay_ms: retry_at.saturating_sub(now_ms()),
            }],
            ..Default::default()
        })
        .unwrap()
        .remove(0);
    let id = s
        .known_emails(&m.account, &m.mailbox, m.uidvalidity, 0)
        .unwrap()
        .into_iter()
        .find(|k| k.uid == m.uid)
        .unwrap()
        .id;
    (id, r.attempts, r.status)
}

#[test]
fn a_new_uidvalidity_closes_unfinished_rows_of_the_old_one() {
    let s = Store::open_in_memory().unwrap();
    s.record_decisions(&[(meta(5), ok(vec![Action::Read]), vec![])])
        .unwrap();
    record_failure(&s, &meta(6), "model down", 5, now_ms() - 1);
    let mut done = meta(4);
    done.uidvalidity = 7;
    s.record_decisions(&[(done.clone(), ok(vec![]), vec![])])
        .unwrap();
    record_final(&s, &[(done, ok(vec![]))], None);
    // Before: a due retry the new generation can never take up.
    assert!(s.next_retry_at("a").unwrap().is_some());
    assert_eq!(
        s.reset_watermark(&Watermark::new("a", "INBOX", 8, 100), 7)
            .unwrap(),
        2
    );
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
    // The same decisions, made final as journalled (`Finished`) in one
    // store and written whole (`Final`) in another,
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
        (meta(5), ok(actions.clone()), moved.flags.clone()),
        (meta(6), ok(vec![Action::Read]), vec![]),
    ];
    let (fast, slow) = (
        Store::open_in_memory().unwrap(),
        Store::open_in_memory().unwrap(),
    );
    let ids = fast.record_decisions(&journal).unwrap();
    let mut finished = Outcomes::default();
    for row in [
        Finished {
            uid: 5,
            actions: actions.as_slice().into(),
            moved: Some(FinishedMove {
                dest_folder: moved.dest_folder.as_str().into(),
                dest_uid: moved.dest_uid,
                flags: moved.flags.as_slice().into(),
            }),
        },
        Finished {
            uid: 6,
            actions: vec![Action::Read].into(),
            moved: None,
        },
    ] {
        let m = meta(row.uid);
        finished.finish(&m.account, &m.mailbox, m.uidvalidity, row);
    }
    assert_eq!(finished.finished.len(), 1, "one folder, one set");
    fast.record_outcomes(&finished).unwrap();
    slow.record_decisions(&journal).unwrap();
    slow.record_outcomes(&Outcomes {
        finals: vec![
            Final {
                moved: Some(moved),
                ..Final::new(meta(5), ok(actions.clone()))
            },
            Final::new(meta(6), ok(vec![Action::Read])),
        ],
        ..Default::default()
    })
    .unwrap();

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

/// Found by an audit: after the database's files were read-only for a
/// while, the checkpoint connection kept the log read-only, so every
/// checkpoint failed and `/health` read 503 until a restart. A failed
/// checkpoint opens its connection afresh for the next.
#[test]
fn a_checkpoint_that_failed_is_tried_on_a_fresh_connection() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db.sqlite");
    let s = Store::open(&path).unwrap();
    // As a connection that opened the files while they were read-only.
    let read_only =
        rusqlite::Connection::open_with_flags(&path, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
            .unwrap();
    *s.checkpointer.as_ref().unwrap().lock() = read_only;
    record_final(&s, &[(meta(1), ok(vec![]))], None);
    assert!(s.index_search().is_err());
    assert!(s.ping().is_err(), "the trouble is told");
    record_final(&s, &[(meta(2), ok(vec![]))], None);
    assert_eq!(s.index_search().unwrap(), 1);
    s.ping().unwrap();
}

/// Found by an audit (stop 57): the whole queue went into the index in
/// one transaction, holding every account's records for seconds after a
/// large backlog. It goes in chunks; every row is found all the same.
#[test]
fn a_long_queue_is_indexed_in_chunks_and_whole() {
    let s = Store::open_in_memory().unwrap();
    let n = 2 * activity::INDEX_CHUNK as u32 + 7;
    let rows: Vec<_> = (1..=n).map(|u| (meta(u), ok(vec![]))).collect();
    record_final(&s, &rows, None);
    assert_eq!(s.index_search().unwrap(), n as usize);
    assert_eq!(s.index_search().unwrap(), 0, "the queue is empty");
    let found = s
        .activity(&ActivityQuery {
            page: 1,
            page_size: 10,
            search: Some(format!("Invoice {n}")),
            ..Default::default()
        })
        .unwrap();
    assert_eq!(found.1, 1, "the last row was indexed");
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
    record_final(&s, &[(meta(1), ok(vec![])), (meta(2), ok(vec![]))], None);
    s.index_search().unwrap();
    // Asked on every reader, so each keeps the count.
    for _ in 0..READERS * 2 {
        assert_eq!(search(&s).1, 2);
    }
    record_final(&s, &[(meta(3), ok(vec![]))], None);
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
    s.record_decisions(&[(m.clone(), ok(vec![Action::Read]), vec![])])
        .unwrap();
    assert_eq!(
        s.known_emails("a", "INBOX", 7, 0).unwrap()[0].status,
        Status::Pending
    );
    assert_eq!(s.stats(None, None).unwrap().total_processed, 0);
    record_final(
        &s,
        &[(
            m,
            ok(vec![Action::Read, Action::Move { folder: "F".into() }]),
        )],
        Some(Watermark::new("a", "INBOX", 7, 5)),
    );
    assert_eq!(s.folder_state("a", "INBOX").unwrap(), Some((7, 5)));
    let st = s.stats(None, None).unwrap();
    assert_eq!(st.total_processed, 1);
    assert_eq!(st.by_action["read"], 1);
    assert_eq!(st.by_action["move"], 1);
    assert_eq!(st.by_account["a"], 1);
    assert!(s.known_emails("a", "INBOX", 7, 5).unwrap().is_empty());
    // A watermark never moves backwards.
    record_final(&s, &[], Some(Watermark::new("a", "INBOX", 7, 3)));
    assert_eq!(s.folder_state("a", "INBOX").unwrap(), Some((7, 5)));
}

#[test]
fn failures_retry_then_park_and_can_be_retried() {
    let s = Store::open_in_memory().unwrap();
    let m = meta(9);
    assert_eq!(record_failure(&s, &m, "boom", 2, 1).2, Status::Retrying);
    let (id, attempts, st) = record_failure(&s, &m, "boom", 2, 1);
    assert_eq!((attempts, st), (2, Status::Failed));
    assert_eq!(s.failed_counts().unwrap()["a"], 1);
    assert_eq!(s.retry_failed(id).unwrap().as_deref(), Some("a"));
    assert_eq!(s.retry_failed(id).unwrap(), None);
    assert_eq!(
        s.known_emails("a", "INBOX", 7, 100).unwrap()[0].status,
        Status::Retrying
    );
}

/// Found by an audit (stop 57): a message that left the mailbox was
/// logged, and its `error` webhook sent, as "no Message-ID" with an empty
/// subject, while its row named it: the attempt read nothing of it.
#[test]
fn a_failure_that_read_nothing_is_named_by_its_row() {
    let s = Store::open_in_memory().unwrap();
    record_failure(&s, &meta(9), "model down", 3, 1);
    let mut bare = meta(9);
    bare.message_id.clear();
    bare.subject.clear();
    let r = s
        .record_outcomes(&Outcomes {
            failures: vec![FailedAttempt {
                meta: bare,
                error: "the message left the mailbox".into(),
                max_attempts: 3,
                retry_delay_ms: 1,
            }],
            ..Default::default()
        })
        .unwrap()
        .remove(0);
    assert_eq!(r.attempts, 2);
    assert_eq!(
        (r.message_id.as_str(), r.subject.as_str()),
        ("<m9@x>", "Invoice 9")
    );
}

#[test]
fn every_failed_email_of_an_account_goes_back_in_line_at_once() {
    let s = Store::open_in_memory().unwrap();
    for uid in 1..=3 {
        record_failure(&s, &meta(uid), "model down", 1, 1);
    }
    let mut other = meta(4);
    other.account = "b".into();
    record_failure(&s, &other, "model down", 1, 1);
    assert_eq!(s.failed_counts().unwrap()["a"], 3);
    assert_eq!(s.retry_all_failed("a").unwrap(), 3);
    assert_eq!(s.retry_all_failed("a").unwrap(), 0);
    assert!(!s.failed_counts().unwrap().contains_key("a"));
    assert_eq!(s.failed_counts().unwrap()["b"], 1);
    let rows = s.known_emails("a", "INBOX", 7, 100).unwrap();
    assert_eq!(rows.len(), 3);
    assert!(rows.iter().all(|r| r.status == Status::Retrying));
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
    s.record_decisions(&[(m.clone(), ok(vec![Action::Read]), vec![])])
        .unwrap();
    assert_eq!(found("voice 1"), 12);
    // Its final record, then indexing: counted once.
    record_final(&s, &[(m, ok(vec![Action::Read]))], None);
    s.index_search().unwrap();
    check();
    assert_eq!(found("voice 1"), 12);
    // An indexed row whose subject changes is re-indexed.
    let mut m = meta(3);
    m.subject = "Receipt 3".into();
    record_final(&s, &[(m, ok(vec![]))], None);
    check();
    assert_eq!(found("Receipt"), 1);
    assert_eq!(found("Invoice 3"), 0);
    // Deleting indexed and queued rows keeps the index whole.
    s.insert_history(&meta(22), &ok(vec![]), 1).unwrap();
    assert!(s.prune(Duration::from_secs(1), &["a"]).unwrap() >= 20);
    check();
    assert_eq!(s.index_search().unwrap(), 0);
    assert_eq!(found("nvoice"), 1); // "Invoice 1 late", stamped now
}

/// `index_search` checkpoints the log (on its own connection): the rows
/// are then in the database file itself, not only in the `-wal` beside it
/// (SQLite's own checkpoint waits for 10,000 pages of log).
#[test]
fn indexing_a_pass_checkpoints_the_log_into_the_database_file() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("db.sqlite");
    let s = Store::open(&p).unwrap();
    let rows_in_file_alone = || {
        let copy = dir.path().join("copy.sqlite");
        std::fs::copy(&p, &copy).unwrap();
        let c = rusqlite::Connection::open(&copy).unwrap();
        // Before any checkpoint not even the schema is in the file.
        let n: i64 = c
            .query_row("SELECT count(*) FROM emails", [], |r| r.get(0))
            .unwrap_or(0);
        drop(c);
        std::fs::remove_file(&copy).unwrap();
        n
    };
    for uid in 1..=5 {
        s.insert_history(&meta(uid), &ok(vec![]), 1_000 * i64::from(uid))
            .unwrap();
    }
    assert_eq!(rows_in_file_alone(), 0, "written to the log only");
    assert_eq!(s.index_search().unwrap(), 5);
    assert_eq!(rows_in_file_alone(), 5);
}

/// Found by an audit: the log kept its largest size for good (12 MB beside
/// a 0.7 MB database after a few hundred rows). Once a pass's checkpoint
/// has copied it into the file, the next write cuts it back.
#[test]
fn the_log_is_cut_back_after_a_checkpoint() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("db.sqlite");
    let wal = dir.path().join("db.sqlite-wal");
    let s = Store::open(&p).unwrap();
    let rows: Vec<_> = (1..=4000u32)
        .map(|uid| {
            let mut m = meta(uid);
            m.subject = format!("{uid} {}", "padding ".repeat(250));
            (m, ok(vec![]), 1_000 * i64::from(uid))
        })
        .collect();
    s.insert_history_bulk(&rows).unwrap();
    let burst = std::fs::metadata(&wal).unwrap().len();
    assert!(
        burst > 2 * WAL_SIZE_LIMIT as u64,
        "the burst's log: {burst}"
    );
    s.index_search().unwrap();
    s.insert_history(&meta(5000), &ok(vec![]), 5_000_000)
        .unwrap();
    let after = std::fs::metadata(&wal).unwrap().len();
    assert!(
        after <= WAL_SIZE_LIMIT as u64,
        "{after} bytes after the checkpoint"
    );
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

/// An export of a search goes through the ids the index matched, found
/// once: the same rows in the same order as the cursor's pages (which
/// joined and sorted every match again for each page: the square of the
/// matches; an audit), rows removed meanwhile left out.
#[test]
fn a_searched_export_reads_the_ids_matched_once_in_the_logs_order() {
    let s = Store::open_in_memory().unwrap();
    let rows: Vec<_> = (1..=1200u32)
        .map(|uid| {
            let mut m = meta(uid);
            if uid % 4 == 0 {
                m.subject = format!("Digest {uid}");
            }
            // Times out of the order of the ids, and some alike.
            (m, ok(vec![]), 1_000 * i64::from((uid * 7) % 500))
        })
        .collect();
    s.insert_history_bulk(&rows).unwrap();
    s.index_search().unwrap();
    let q = ActivityQuery {
        search: Some("nvoice".into()),
        ..Default::default()
    };
    let mut by_cursor = Vec::new();
    let mut walk = q.clone();
    loop {
        let page = s.activity_page(&walk, 100).unwrap();
        let Some(last) = page.last() else { break };
        walk.before = Some((last.processed_at, last.id));
        by_cursor.extend(page.iter().map(|e| e.id));
    }
    let ids = s.activity_ids(&q).unwrap();
    assert_eq!(ids.len(), 900);
    assert_eq!(ids, by_cursor);
    let some: Vec<i64> = ids[100..110].iter().copied().chain([999_999]).collect();
    let got: Vec<i64> = (s.activity_by_ids(&some).unwrap().iter())
        .map(|e| e.id)
        .collect();
    assert_eq!(got, &ids[100..110], "in order, an id no row has left out");
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

/// Found by an audit of the binary: retention pruned the statistics with
/// the rows, so "all time" meant the last 90 days and a removed account's
/// counts vanished.
#[test]
fn prune_keeps_the_statistics() {
    let s = Store::open_in_memory().unwrap();
    s.insert_history(&meta(1), &ok(vec![Action::Read]), 1)
        .unwrap();
    s.insert_history(&meta(2), &ok(vec![Action::Read]), 2)
        .unwrap();
    s.insert_history(&meta(3), &ok(vec![Action::Read]), now_ms())
        .unwrap();
    let before = s.stats(None, None).unwrap();
    assert_eq!(before.total_processed, 3);
    assert_eq!(s.prune(Duration::from_secs(3600), &["a"]).unwrap(), 2);
    let after = s.stats(None, None).unwrap();
    assert_eq!(after.total_processed, 3);
    assert_eq!(after.by_action.get("read"), Some(&3));
    assert_eq!(after.by_account.get("a"), Some(&3));
    // The rows themselves are gone.
    assert_eq!(s.known_emails("a", "INBOX", 7, 0).unwrap().len(), 1);
}

#[test]
fn prune_keeps_pending_work() {
    let s = Store::open_in_memory().unwrap();
    s.insert_history(&meta(1), &ok(vec![]), 1).unwrap();
    record_failure(&s, &meta(2), "x", 5, 0);
    assert_eq!(s.prune(Duration::from_secs(1), &["a"]).unwrap(), 1);
    assert_eq!(s.known_emails("a", "INBOX", 7, 0).unwrap().len(), 1);
}

/// Found by an audit: a removed account's rows waiting for a retry were
/// kept for good, `retrying` with no one to retry them.
#[test]
fn prune_takes_a_removed_accounts_work_as_history() {
    let s = Store::open_in_memory().unwrap();
    let gone = EmailMeta {
        account: "gone".into(),
        ..meta(3)
    };
    record_failure(&s, &meta(2), "x", 5, 0);
    record_failure(&s, &gone, "x", 5, 0);
    std::thread::sleep(Duration::from_millis(5));
    assert_eq!(s.prune(Duration::ZERO, &["a"]).unwrap(), 1);
    assert_eq!(s.known_emails("a", "INBOX", 7, 0).unwrap().len(), 1);
    assert!(s.known_emails("gone", "INBOX", 7, 0).unwrap().is_empty());
    // A rename's old name is still at work: its rows go to the new name.
    record_failure(&s, &gone, "x", 5, 0);
    s.note_rename("gone", "new").unwrap();
    std::thread::sleep(Duration::from_millis(5));
    assert_eq!(s.prune(Duration::ZERO, &["a", "new"]).unwrap(), 0);
}

#[test]
fn finished_rows_of_two_folders_and_one_never_journalled_are_written_together() {
    let s = Store::open_in_memory().unwrap();
    let other = EmailMeta {
        mailbox: "Archive".into(),
        ..meta(5)
    };
    s.record_decisions(&[
        (meta(5), ok(vec![Action::Read]), vec![]),
        (other.clone(), ok(vec![Action::Read]), vec![]),
    ])
    .unwrap();
    let mut out = Outcomes::default();
    for (m, uid) in [(meta(5), 5), (meta(9), 9), (other, 5)] {
        let row = Finished {
            uid,
            actions: vec![Action::Read].into(),
            moved: None,
        };
        out.finish(&m.account, &m.mailbox, m.uidvalidity, row);
    }
    assert_eq!(out.finished.len(), 2, "a set for each folder");
    s.record_outcomes(&out).unwrap();
    for mailbox in ["INBOX", "Archive"] {
        let known = s.known_emails("a", mailbox, 7, 0).unwrap();
        assert_eq!(known.len(), 1, "{mailbox}: {known:?}");
        assert_eq!(
            (known[0].uid, known[0].status, known[0].attempts),
            (5, Status::Ok, 1)
        );
    }
    assert_eq!(s.stats(None, None).unwrap().by_action["read"], 2);
}

/// Found by an audit: `actionType=noop` ("all mail nothing was done to")
/// missed what a rule kept with its one `noop` action.
#[test]
fn noop_finds_what_a_rule_kept_and_what_nothing_decided() {
    let s = Store::open_in_memory().unwrap();
    s.insert_history(&meta(1), &ok(vec![Action::Noop]), 1)
        .unwrap();
    s.insert_history(&meta(2), &ok(vec![]), 2).unwrap();
    s.insert_history(&meta(3), &ok(vec![Action::Read]), 3)
        .unwrap();
    // What a dry run or a review only suggests was not done (an audit,
    // stop 55: they were in no `actionType` at all).
    let only = |status| Outcome {
        status,
        ..ok(vec![Action::Read])
    };
    s.insert_history(&meta(4), &only(Status::DryRun), 4)
        .unwrap();
    s.insert_history(&meta(5), &only(Status::Review), 5)
        .unwrap();
    let q = ActivityQuery {
        page: 1,
        page_size: 10,
        action_type: Some("noop".into()),
        ..Default::default()
    };
    let (rows, total) = s.activity(&q).unwrap();
    assert_eq!(total, 4);
    let mut uids: Vec<u32> = rows.iter().map(|e| e.uid).collect();
    uids.sort();
    assert_eq!(uids, [1, 2, 4, 5]);
    let read = ActivityQuery {
        action_type: Some("read".into()),
        ..q
    };
    assert_eq!(s.activity(&read).unwrap().1, 1, "only what was done");
}

/// Found by the CLI audit: a write of the service that read first (a
/// deferred transaction) failed at once with "database is locked" when
/// another program (`mailproc train`, `set-password`) committed between
/// its read and its write: SQLite cannot move such a transaction's
/// snapshot forward, and does not wait. The writer's transactions take the
/// write lock when they begin, so they wait (`busy_timeout`) and then read
/// what the other program wrote.
#[test]
fn a_write_that_reads_first_waits_for_another_programs_commit() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db.sqlite");
    let s = Store::open(&path).unwrap();
    let other = Connection::open(&path).unwrap();
    other
        .execute_batch("BEGIN IMMEDIATE; INSERT INTO settings (key, value) VALUES ('x', '1');")
        .unwrap();
    let committer = std::thread::spawn(move || {
        std::thread::sleep(std::time::Duration::from_millis(300));
        other.execute_batch("COMMIT").unwrap();
    });
    let mut conn = s.conn.lock();
    let tx = conn.transaction().unwrap();
    let seen: i64 = tx
        .query_row("SELECT count(*) FROM settings WHERE key = 'x'", [], |r| {
            r.get(0)
        })
        .unwrap();
    tx.execute("INSERT INTO settings (key, value) VALUES ('y', '2')", [])
        .expect("the write after a read waits for the other program's commit");
    tx.commit().unwrap();
    committer.join().unwrap();
    assert_eq!(seen, 1, "read after the other program's commit");
}
