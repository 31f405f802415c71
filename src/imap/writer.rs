//! The account's journal writer: one long-lived thread per account
//! (`journal-<account>`) that writes the account's decisions and outcomes
//! to the store, in the order the account thread sends them, while the
//! account thread goes on with the server (the next FETCH of headers, the
//! next MOVE). It replaces a thread started for every decided group and
//! for every large window.
//!
//! Guarantees:
//! - Writes are applied in the order sent; [`Writer::barrier`] returns once
//!   every write sent before it is done, with the first error among them.
//!   The account thread waits at a barrier before it acts on a message
//!   (its decision is then durable) and before it records a group's
//!   watermark (its messages' rows are then written).
//! - After a failed write, the writes behind it up to the next barrier are
//!   not attempted: a decision not journalled is not acted on, and an
//!   outcome left `pending` is finished by the next pass, as after a crash.
//! - A panic while writing (a bug) is caught and reported as that write's
//!   error; the thread goes on.
//! - Without the thread (it could not be started) writes are made on the
//!   account thread, with the same order and errors.

use std::sync::Arc;
use std::thread::JoinHandle;

use crossbeam_channel::{Receiver, Sender};
use parking_lot::Mutex;

use crate::store::{Cause, Decision, Outcomes, Store, StoreError};

/// Writes waiting for the thread. A window sends one per FETCH of headers
/// (40 in a 20,000-UID window) and one per confirmed command of a group
/// (a flag set, a destination folder), then waits at a barrier: the queue
/// only has to let the account thread run that far ahead, and a full
/// queue makes it wait for the store instead of piling up rows in memory.
const QUEUE: usize = 16;

enum Write {
    Decisions(Vec<Decision>),
    Outcomes(Box<Outcomes>),
    /// Answered once every write before it is done.
    Barrier(Sender<Result<(), StoreError>>),
}

/// The account's writer: the thread's queue and the thread (joined when
/// the writer is dropped), or the store at once.
pub(super) struct Writer {
    mode: Mode,
}

enum Mode {
    Thread {
        tx: Option<Sender<Write>>,
        thread: Option<JoinHandle<()>>,
    },
    /// Writes made on the caller's thread, with the thread's semantics.
    Inline {
        store: Arc<Store>,
        failed: Mutex<Option<StoreError>>,
    },
}

impl Writer {
    /// Starts the writer thread of `account`; without one, writes are made
    /// on the caller's thread.
    pub(super) fn start(account: &str, store: Arc<Store>) -> Writer {
        let (tx, rx) = crossbeam_channel::bounded(QUEUE);
        let s = store.clone();
        match std::thread::Builder::new()
            .name(format!("journal-{account}"))
            .spawn(move || serve(&s, rx))
        {
            Ok(thread) => Writer {
                mode: Mode::Thread {
                    tx: Some(tx),
                    thread: Some(thread),
                },
            },
            Err(e) => {
                log::error!(
                    "{account}: cannot start the journal writer thread ({e}); \
                     writing on the account's thread"
                );
                Writer::inline(store)
            }
        }
    }

    /// A writer without a thread.
    pub(super) fn inline(store: Arc<Store>) -> Writer {
        Writer {
            mode: Mode::Inline {
                store,
                failed: Mutex::new(None),
            },
        }
    }

    /// Records decisions (see `Store::record_decisions`).
    pub(super) fn decisions(&self, rows: Vec<Decision>) {
        if !rows.is_empty() {
            self.send(Write::Decisions(rows));
        }
    }

    /// Records outcomes (see `Store::record_outcomes`).
    pub(super) fn outcomes(&self, o: Outcomes) {
        self.send(Write::Outcomes(Box::new(o)));
    }

    /// Waits until every write sent before is done; the first error among
    /// them, if any.
    pub(super) fn barrier(&self) -> Result<(), StoreError> {
        match &self.mode {
            Mode::Inline { failed, .. } => failed.lock().take().map_or(Ok(()), Err),
            Mode::Thread { tx, .. } => {
                let (reply, answer) = crossbeam_channel::bounded(1);
                match tx {
                    Some(tx) if tx.send(Write::Barrier(reply)).is_ok() => {
                        answer.recv().unwrap_or_else(|_| Err(gone()))
                    }
                    _ => Err(gone()),
                }
            }
        }
    }

    fn send(&self, w: Write) {
        match &self.mode {
            Mode::Thread { tx, .. } => {
                // A closed queue is reported by the next barrier.
                if let Some(tx) = tx {
                    let _ = tx.send(w);
                }
            }
            Mode::Inline { store, failed } => {
                let mut failed = failed.lock();
                if failed.is_none() {
                    *failed = apply(store, w).err();
                }
            }
        }
    }
}

impl Drop for Writer {
    fn drop(&mut self) {
        if let Mode::Thread { tx, thread } = &mut self.mode {
            // Closing the queue ends the thread once it has written the rest.
            drop(tx.take());
            if let Some(t) = thread.take() {
                let _ = t.join();
            }
        }
    }
}

fn gone() -> StoreError {
    StoreError::new(
        "journal writer",
        Cause::Panicked("the account's journal writer thread is gone".into()),
    )
}

/// The writer thread: writes in order until the queue closes.
fn serve(store: &Store, rx: Receiver<Write>) {
    let mut failed: Option<StoreError> = None;
    for w in rx {
        match w {
            Write::Barrier(reply) => {
                let _ = reply.send(failed.take().map_or(Ok(()), Err));
            }
            // Skipped after a failure, up to the barrier that reports it.
            _ if failed.is_some() => {}
            w => failed = apply(store, w).err(),
        }
    }
}

/// One write; a panic in it is its error.
fn apply(store: &Store, w: Write) -> Result<(), StoreError> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| match w {
        Write::Decisions(rows) => store.record_decisions(&rows).map(|_| ()),
        Write::Outcomes(o) => store.record_outcomes(&o).map(|_| ()),
        Write::Barrier(reply) => {
            let _ = reply.send(Ok(()));
            Ok(())
        }
    }))
    .unwrap_or_else(|panic| {
        let msg = crate::failpoint::panic_message(&*panic);
        log::error!("journal writer: a write panicked: {msg}");
        Err(StoreError::new(
            "journal writer",
            Cause::Panicked(format!("a write panicked: {msg}")),
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{EmailMeta, FailedAttempt, Final, Outcome, Status, Watermark};

    fn meta(uid: u32) -> EmailMeta {
        EmailMeta {
            account: "a".into(),
            mailbox: "INBOX".into(),
            uidvalidity: 7,
            uid,
            ..Default::default()
        }
    }

    fn decision() -> Outcome {
        Outcome {
            actions: vec![crate::actions::Action::Read],
            ..Default::default()
        }
    }

    fn statuses(s: &Store) -> Vec<(u32, Status)> {
        s.known_emails("a", "INBOX", 7, 0)
            .unwrap()
            .into_iter()
            .map(|k| (k.uid, k.status))
            .collect()
    }

    /// The writer with its thread (0), and without (1).
    fn writer(n: usize, store: &Arc<Store>) -> Writer {
        match n {
            0 => Writer::start("test", store.clone()),
            _ => Writer::inline(store.clone()),
        }
    }

    #[test]
    fn writes_land_in_order_before_the_barrier_returns() {
        for n in 0..2 {
            let store = Arc::new(Store::open_in_memory().unwrap());
            let w = writer(n, &store);
            w.decisions(vec![
                (meta(1), decision(), Vec::new()),
                (meta(2), decision(), Vec::new()),
            ]);
            w.outcomes(Outcomes {
                finals: vec![Final::new(meta(1), decision())],
                watermark: Some(Watermark::new("a", "INBOX", 7, 1)),
                ..Default::default()
            });
            w.barrier().unwrap();
            assert_eq!(
                statuses(&store),
                [(1, Status::Ok), (2, Status::Pending)],
                "writer {n}"
            );
            assert_eq!(store.folder_state("a", "INBOX").unwrap(), Some((7, 1)));
        }
    }

    #[test]
    fn a_failed_write_is_reported_once_and_skips_the_writes_behind_it() {
        for n in 0..2 {
            let store = Arc::new(Store::open_in_memory().unwrap());
            let w = writer(n, &store);
            store.test_sql(
                "CREATE TRIGGER no_uid_2 BEFORE INSERT ON emails WHEN new.uid = 2
                 BEGIN SELECT RAISE(ABORT, 'refused'); END;",
            );
            w.decisions(vec![(meta(1), decision(), Vec::new())]);
            w.decisions(vec![(meta(2), decision(), Vec::new())]);
            // Behind the failure: not attempted.
            w.decisions(vec![(meta(3), decision(), Vec::new())]);
            let e = w.barrier().unwrap_err();
            assert!(e.to_string().contains("refused"), "writer {n}: {e}");
            assert_eq!(statuses(&store), [(1, Status::Pending)], "writer {n}");
            // Reported once; the next writes go in again.
            w.outcomes(Outcomes {
                failures: vec![FailedAttempt {
                    meta: meta(3),
                    error: "x".into(),
                    max_attempts: 5,
                    retry_delay_ms: 0,
                }],
                ..Default::default()
            });
            w.barrier().unwrap();
            assert_eq!(
                statuses(&store),
                [(1, Status::Pending), (3, Status::Retrying)],
                "writer {n}"
            );
        }
    }

    /// Names of this process's threads.
    fn thread_names() -> Vec<String> {
        std::fs::read_dir("/proc/self/task")
            .unwrap()
            .flatten()
            .filter_map(|t| std::fs::read_to_string(t.path().join("comm")).ok())
            .map(|c| c.trim().to_string())
            .collect()
    }

    #[test]
    fn the_thread_is_named_for_its_account_and_ends_with_the_writer() {
        let store = Arc::new(Store::open_in_memory().unwrap());
        let w = Writer::start("wr-test", store.clone());
        // (A thread names itself as it starts: once it answered, it has.)
        w.barrier().unwrap();
        assert!(thread_names().contains(&"journal-wr-test".to_string()));
        w.decisions(vec![(meta(1), decision(), Vec::new())]);
        // Dropping it writes what is queued and ends the thread.
        drop(w);
        assert!(!thread_names().contains(&"journal-wr-test".to_string()));
        assert_eq!(statuses(&store), [(1, Status::Pending)]);
    }
}
