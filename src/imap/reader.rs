//! A large backlog's second session: it reads every other FETCH of the
//! folder's headers while the account's own session reads the others.
//!
//! On a server that runs one process per session (Dovecot), one session
//! is served by one core: however the client pipelines, a backlog's
//! header FETCHes run one after the other. For a pass over at least
//! [`TWO_SESSIONS_MIN`] messages of one folder, the account opens a second
//! session for that folder's pass and closes it after: an idle account,
//! or one that sorts a few new messages, holds one connection. The MOVEs
//! stay on the account's session, after the headers: run beside the
//! FETCHes of the other session they cost Dovecot more than they saved
//! (both processes then sync each other's changes to the folder; measured
//! in `docs/benchmarks.md`).
//!
//! Guarantees:
//! - The second session only reads: it opens the folder with `EXAMINE`
//!   (read-only) and fetches with `BODY.PEEK`, so it changes no message
//!   and no flag. Every decision is journalled, acted on and recorded by
//!   the account's thread on its own session, as with one session.
//! - Chunks come in the order asked, each whole; the account thread takes
//!   them one by one and never skips one. When the second session cannot
//!   be had (refused login, connection limit, another UIDVALIDITY) or
//!   breaks, the reader says so in place of the next chunk and ends; the
//!   account thread fetches that chunk and the rest itself, as with one
//!   session.
//! - The `EXPUNGE`s the account's MOVEs cause reach this session as
//!   unsolicited responses; they are dropped after each chunk (only UIDs
//!   are ever used here), so they neither pile up nor count as a FETCH.
//! - At most one chunk waits for the account thread while the next is
//!   read: memory stays bounded by the chunk size, not by the folder.
//! - Dropping the reader cuts its session (the socket is shut down) and
//!   joins its thread: a pass cut short leaves nothing running.

use std::net::TcpStream;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

use crossbeam_channel::{Receiver, Sender};
use parking_lot::Mutex;

use super::folders::Resolved;
use super::headers::{read_heads, send_heads, HeaderQuery, Heads};
use super::session::Session;
use crate::config::AccountConfig;

/// Folders with fewer messages to read than this are read on the
/// account's one session: below it the second login (about 25 ms before
/// its first FETCH, a few ms of both sides' CPU) does not pay off, as a
/// 2,000-message pass reads its headers in about 90 ms on Dovecot.
pub(super) const TWO_SESSIONS_MIN: usize = 2_000;

/// Chunks waiting for the account thread: one, while the next is read
/// (see the module's guarantees on memory).
const QUEUE: usize = 1;

/// One chunk's headers, or why the second session ended.
type Chunk = Result<Heads, String>;

/// What the account thread needs to take the chunks.
pub(super) struct Reader {
    rx: Receiver<Chunk>,
    sock: Arc<Mutex<Option<TcpStream>>>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
    /// Chunks asked for, and taken.
    total: usize,
    taken: usize,
    /// The account's handle: a cut stop (see `Handle::cut_sessions`)
    /// ends the wait for a chunk.
    handle: Arc<crate::account::Handle>,
}

/// What the reader thread is to read.
pub(super) struct Plan {
    /// The folder, as the account's session names it.
    pub(super) folder: Resolved,
    pub(super) uidvalidity: u32,
    pub(super) utf8: bool,
    pub(super) query: HeaderQuery,
    /// The chunks, in the order the account thread takes them.
    pub(super) chunks: Vec<Vec<u32>>,
}

impl Reader {
    /// Starts the reader thread (`read-<account>`), which signs in and
    /// reads; `None` when no thread can be started (one session then).
    pub(super) fn start(
        account: Arc<AccountConfig>,
        plan: Plan,
        handle: Arc<crate::account::Handle>,
    ) -> Option<Reader> {
        let (tx, rx) = crossbeam_channel::bounded(QUEUE);
        let sock = Arc::new(Mutex::new(None));
        let stop = Arc::new(AtomicBool::new(false));
        let (s2, st2) = (sock.clone(), stop.clone());
        let name = account.name.clone();
        let total = plan.chunks.len();
        match std::thread::Builder::new()
            .name(format!("read-{name}"))
            .spawn(move || read(&account, plan, &tx, &s2, &st2))
        {
            Ok(t) => Some(Reader {
                rx,
                sock,
                stop,
                thread: Some(t),
                total,
                taken: 0,
                handle,
            }),
            Err(e) => {
                log::warn!("{name}: cannot start a second session's thread ({e}); one session");
                None
            }
        }
    }

    /// The next chunk, in order; an error when the second session ended
    /// (the account thread then reads this chunk and the rest itself).
    pub(super) fn next(&mut self) -> Chunk {
        let c = loop {
            match self.rx.recv_timeout(std::time::Duration::from_millis(100)) {
                Ok(c) => break c,
                Err(crossbeam_channel::RecvTimeoutError::Timeout) if self.handle.is_cut() => {
                    break Err("cut by the stop".into())
                }
                Err(crossbeam_channel::RecvTimeoutError::Timeout) => {}
                Err(crossbeam_channel::RecvTimeoutError::Disconnected) => {
                    break Err("the second session's thread ended".into())
                }
            }
        };
        if c.is_ok() {
            self.taken += 1;
        }
        c
    }
}

impl Drop for Reader {
    fn drop(&mut self) {
        // Every chunk taken: the thread is signing out, and may. Else the
        // pass was cut short: its session is cut.
        if self.taken < self.total {
            self.stop.store(true, Ordering::SeqCst);
            if let Some(sock) = self.sock.lock().as_ref() {
                let _ = sock.shutdown(std::net::Shutdown::Both);
            }
        }
        if let Some(t) = self.thread.take() {
            // The thread ends at its next read (the socket is shut down)
            // or send (the queue is closed with `rx`).
            drop(std::mem::replace(&mut self.rx, crossbeam_channel::never()));
            let _ = t.join();
        }
    }
}

/// The reader thread: sign in, `EXAMINE`, then the chunks' FETCHes, one
/// unanswered at a time (the next goes out before a chunk is handed over).
fn read(
    account: &AccountConfig,
    plan: Plan,
    tx: &Sender<Chunk>,
    sock: &Mutex<Option<TcpStream>>,
    stop: &AtomicBool,
) {
    let name = &account.name;
    let t = std::time::Instant::now();
    let mut s = match super::session::connect_second(account, plan.utf8) {
        Ok((s, tcp)) => {
            *sock.lock() = Some(tcp);
            s
        }
        Err(e) => {
            let _ = tx.send(Err(format!("second session: {e}")));
            return;
        }
    };
    // Dropped while signing in: the socket was not there to shut down.
    if stop.load(Ordering::SeqCst) {
        return;
    }
    match plan.folder.examine(&mut s) {
        Ok(mb) if mb.uid_validity == Some(plan.uidvalidity) => {}
        Ok(mb) => {
            let _ = tx.send(Err(format!(
                "second session: UIDVALIDITY {:?}, not {}",
                mb.uid_validity, plan.uidvalidity
            )));
            let _ = s.logout();
            return;
        }
        Err(e) => {
            let _ = tx.send(Err(format!("second session: EXAMINE: {e}")));
            let _ = s.logout();
            return;
        }
    }
    log::debug!("{name}: second session open in {:?}", t.elapsed());
    if let Err(e) = chunks(&mut s, &plan, tx, name) {
        let _ = tx.send(Err(format!("second session: {e}")));
        return;
    }
    let _ = s.logout();
    log::debug!("{name}: second session closed");
}

/// Reads every chunk of `plan` and hands each over; stops early (without
/// an error) when the account thread no longer takes them.
fn chunks(s: &mut Session, plan: &Plan, tx: &Sender<Chunk>, name: &str) -> imap::Result<()> {
    let Some(first) = plan.chunks.first() else {
        return Ok(());
    };
    send_heads(s, &plan.query, first)?;
    for i in 0..plan.chunks.len() {
        let heads = read_heads(s, &plan.query, name)?;
        // The account's MOVEs expunge from this folder: their EXPUNGEs
        // are of no use here.
        s.take_all_unsolicited().for_each(drop);
        if let Some(next) = plan.chunks.get(i + 1) {
            send_heads(s, &plan.query, next)?;
        }
        if tx.send(Ok(heads)).is_err() {
            // The account thread stopped taking them: the last FETCH's
            // answer is read before LOGOUT.
            if i + 1 < plan.chunks.len() {
                let _ = s.read_fetches();
            }
            return Ok(());
        }
    }
    Ok(())
}
