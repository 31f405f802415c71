//! The shared face of an account worker: its state as others see it, and the
//! commands others may send it.
//!
//! The worker thread (see `imap`) owns the IMAP session; HTTP workers only
//! send [`Command`]s (and [`Refile`] requests, answered through a channel
//! of their own) through a bounded channel and read [`Status`] from a
//! `RwLock`. No HTTP worker ever speaks IMAP or waits on it without a
//! deadline. When the worker is blocked in IDLE, a command wakes it through
//! its session's [`Wake`]: the IDLE ends as if its interval had passed (DONE,
//! then the command), on the same session, without a new LOGIN. Shutdown
//! alone cuts the socket (a dead server could not answer the DONE); the
//! worker sees the `interrupted` flag and does not count it as an outage.

use std::collections::BTreeMap;
use std::io::Write;
use std::net::TcpStream;
use std::os::unix::net::UnixStream;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, Sender, TrySendError};
use parking_lot::{Mutex, RwLock};
use serde::Serialize;

use crate::timestamp::now_ms;

/// The longest `lastError` kept, in characters.
const MAX_ERROR_CHARS: usize = 2000;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum State {
    Connecting,
    Connected,
    Processing,
    Paused,
    Disconnected,
    Error,
}

impl State {
    pub fn as_str(self) -> &'static str {
        match self {
            State::Connecting => "connecting",
            State::Connected => "connected",
            State::Processing => "processing",
            State::Paused => "paused",
            State::Disconnected => "disconnected",
            State::Error => "error",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Command {
    Pause,
    Resume,
    Reconnect,
    Process,
    Shutdown,
}

impl Command {
    /// The commands an operator may send, by name (not `shutdown`).
    pub fn parse(s: &str) -> Option<Command> {
        [
            Command::Pause,
            Command::Resume,
            Command::Reconnect,
            Command::Process,
        ]
        .into_iter()
        .find(|c| c.as_str() == s)
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Command::Pause => "pause",
            Command::Resume => "resume",
            Command::Reconnect => "reconnect",
            Command::Process => "process",
            Command::Shutdown => "shutdown",
        }
    }
}

/// A request about a message the account recorded, carried out by the
/// account's thread on its own session between passes and answered on
/// `reply`: undo ([`RefileTo::Back`]), "Move to…" ([`RefileTo::Folder`])
/// and reading one header field for "Make a rule" ([`RefileTo::Peek`]).
/// So no HTTP worker ever opens an IMAP connection or waits on one
/// without a deadline, and no pass looks at a folder between a move and
/// its record.
pub struct Refile {
    /// The activity entry whose message it is about.
    pub entry: i64,
    pub to: RefileTo,
    /// The asker waits this long at most: a request still queued then is
    /// dropped unanswered, so nothing happens after the asker was told
    /// that nothing did.
    pub deadline: Instant,
    pub reply: Sender<Result<Refiled, RefileError>>,
}

/// Where a [`Refile`] puts the message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RefileTo {
    /// Back to the folder it came from, with the flags it had (undo).
    Back,
    /// Into `folder`, from where it is now ("Move to…", a correction).
    Folder { from: Location, folder: String },
    /// Nowhere: one header field of it is read where it is, with
    /// `BODY.PEEK` (nothing changes).
    Peek { at: Location, field: String },
}

/// What a [`Refile`] did, by its kind.
#[derive(Debug, Clone, PartialEq)]
pub enum Refiled {
    Undone(Undone),
    Moved(Moved),
    /// The field's value, `None` when the message or the field is gone.
    Header(Option<String>),
}

/// Where a recorded message is now: its folder, and its UID there when
/// known (else it is found by Message-ID).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Location {
    pub folder: String,
    pub uid: Option<u32>,
}

/// Why a [`Refile`] was not done.
#[derive(Debug, Clone, PartialEq)]
pub enum RefileError {
    /// The entry cannot be refiled (not a move, already undone, ...): 409.
    Refused(String),
    /// The server or the store failed: 502.
    Failed(String),
    /// The account could not take the request now (not connected, busy,
    /// its queue full); nothing was changed: 503.
    Unavailable(String),
}

impl std::fmt::Display for RefileError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RefileError::Refused(m) | RefileError::Failed(m) | RefileError::Unavailable(m) => {
                f.write_str(m)
            }
        }
    }
}

/// What an undo did.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Undone {
    pub id: i64,
    /// The activity entry recording the undo.
    pub undo_id: i64,
    pub mailbox: String,
    pub uid: u32,
    pub from_folder: String,
    pub flags: Vec<String>,
    /// Whether the learned classifier took it as a correction.
    pub correction: bool,
}

/// What a "Move to…" did.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Moved {
    pub id: i64,
    pub from_folder: String,
    pub folder: String,
    pub uid: u32,
    /// Whether the learned classifier took it as a correction.
    pub correction: bool,
}

/// What travels on an account's channel.
pub enum Message {
    Command(Command),
    Refile(Refile),
}

/// How long a refile request may wait in the queue: the account takes it
/// between two groups of its pass, so only a slow model call or an outage
/// holds it longer.
pub const REFILE_QUEUE_WAIT: Duration = Duration::from_secs(20);
/// What the IMAP work of a refile may take once started (a few commands).
pub const REFILE_WORK: Duration = Duration::from_secs(20);
/// The waits of a [`RefileTo::Peek`]: it only prefills a form, which
/// starts from the recorded sender when the account is busy, so a page
/// never hangs on it for long.
pub const PEEK_QUEUE_WAIT: Duration = Duration::from_secs(5);
pub const PEEK_WORK: Duration = Duration::from_secs(10);

#[derive(Debug, Clone, Serialize)]
pub struct Status {
    pub state: State,
    /// Whether the IMAP session is up (true also while paused or processing).
    pub connected: bool,
    pub paused: bool,
    pub last_error: Option<String>,
    /// Epoch ms of the last state change.
    pub since: i64,
    pub last_processed_at: Option<i64>,
}

/// Commands queued per account: an operator clicks a few buttons at most, and
/// a full queue means the worker already has more than enough to do.
const COMMAND_QUEUE: usize = 16;

/// Wakes a session blocked in IDLE (see `imap::session`): while `armed`
/// (from just before the worker looks at its queue a last time until IDLE
/// is over), a command writes a byte on `tx`, which ends the IDLE wait as
/// its deadline would; `rx` is the pipe's other end, emptied when the
/// worker arms it; `sock` is the socket itself, for shutdown.
pub struct Wake {
    pub tx: UnixStream,
    pub rx: UnixStream,
    pub armed: Arc<AtomicBool>,
    pub sock: TcpStream,
}

pub struct Handle {
    pub name: String,
    tx: Sender<Message>,
    status: RwLock<Status>,
    paused: AtomicBool,
    /// The session's wake-up, while there is a session.
    waker: Mutex<Option<Wake>>,
    /// The socket of a session being opened (greeting, TLS, login,
    /// folders): a stop cuts it, as it cuts IDLE, so a server that never
    /// greets does not hold a shutdown or a restart for `imap.timeout`.
    dialing: Mutex<Option<std::net::TcpStream>>,
    interrupted: AtomicBool,
    shutting_down: AtomicBool,
    /// Set by [`Handle::cut_sessions`]: the stop's grace is over.
    cut: AtomicBool,
    /// Where the last error is kept across restarts, once set.
    errors_kept_in: std::sync::OnceLock<Arc<crate::store::Store>>,
    /// The outage the account is in: its worker's, or the one of the
    /// worker this one replaces (a restart for a changed configuration),
    /// so its end is told: a refused login mended by a new password was
    /// followed by no `connection_restored` (an audit).
    outage: Mutex<Option<String>>,
    /// The junk and trash folders the last sign-in chose (see
    /// [`FoldersInUse`]).
    in_use: Mutex<Option<FoldersInUse>>,
}

/// Where `spam` and `trash` move to, as the last sign-in found them (the
/// server's marks, a usual name, or the configuration): shown on the
/// account page and in `/api/accounts`, where an operator could learn it
/// only from a log line (the layouts audit).
#[derive(Debug, Clone, PartialEq)]
pub struct FoldersInUse {
    pub junk: String,
    pub trash: String,
}

impl Handle {
    /// A handle and the receiving end for its worker.
    pub fn new(name: &str) -> (Arc<Handle>, Receiver<Message>) {
        let (tx, rx) = crossbeam_channel::bounded(COMMAND_QUEUE);
        let h = Arc::new(Handle {
            name: name.to_string(),
            tx,
            status: RwLock::new(Status {
                state: State::Disconnected,
                connected: false,
                paused: false,
                last_error: None,
                since: now_ms(),
                last_processed_at: None,
            }),
            paused: AtomicBool::new(false),
            waker: Mutex::new(None),
            dialing: Mutex::new(None),
            interrupted: AtomicBool::new(false),
            shutting_down: AtomicBool::new(false),
            cut: AtomicBool::new(false),
            errors_kept_in: std::sync::OnceLock::new(),
            outage: Mutex::new(None),
            in_use: Mutex::new(None),
        });
        (h, rx)
    }

    /// The junk and trash folders the last sign-in chose, if any yet.
    pub fn folders_in_use(&self) -> Option<FoldersInUse> {
        self.in_use.lock().clone()
    }

    pub fn set_folders_in_use(&self, f: FoldersInUse) {
        *self.in_use.lock() = Some(f);
    }

    /// The outage `old` was in when this handle replaced it (a restart
    /// for a changed configuration), whose end this one tells: the outage
    /// its worker said it was in, or the one it inherited and had not yet
    /// seen end (replaced again before its own login had an answer: two
    /// quick changes lost the `connection_restored`; a regression audit).
    /// Only an outage: a store failure's error is none (it was carried as
    /// one, and a restart during its back-off sent a `connection_restored`
    /// no `connection_lost` had opened; the second regression audit).
    pub fn inherit_outage(&self, old: &Handle) {
        *self.outage.lock() = old.outage.lock().clone();
    }

    /// The outage the account is in (inherited, or said by its worker).
    pub fn outage(&self) -> Option<String> {
        self.outage.lock().clone()
    }

    /// The worker is in an outage (away from its server, or its login
    /// refused), which a replacing handle inherits; `None` once its end
    /// is told.
    pub fn set_outage(&self, outage: Option<String>) {
        *self.outage.lock() = outage;
    }

    pub fn status(&self) -> Status {
        self.status.read().clone()
    }

    pub fn set_state(&self, state: State) {
        // `error` says nothing of the session: a watched folder that cannot
        // be opened or a failing store keep it (and mail flows on it), a
        // refused login follows `connecting`, a crash drops it
        // ([`Handle::set_disconnected`]).
        let connected = match state {
            State::Error => self.status.read().connected,
            State::Connected | State::Processing | State::Paused => true,
            State::Connecting | State::Disconnected => false,
        };
        // A paused account reads `paused` while it connects, waits or is
        // away from its server, so the state an operator set is the state
        // they see (`connected: false` and `lastError` still say why it is
        // away); an error or a requested pass (processing) still shows.
        let state = match state {
            State::Connecting | State::Connected | State::Disconnected if self.is_paused() => {
                State::Paused
            }
            other => other,
        };
        let mut s = self.status.write();
        if s.state != state {
            s.state = state;
            s.since = now_ms();
        }
        s.connected = connected;
        s.paused = self.is_paused();
    }

    /// The session is gone, whatever the state says next.
    pub fn set_disconnected(&self) {
        self.status.write().connected = false;
    }

    /// The last error, as `/api/accounts` and the dashboard show it: URLs
    /// in it without their credentials.
    pub fn set_error(&self, error: Option<String>) {
        // At most 2,000 characters, whoever wrote it: it is kept, shown on
        // every page and stored at each change.
        let error = error.map(|e| {
            let e = crate::config::redact_text(&e);
            match e.char_indices().nth(MAX_ERROR_CHARS) {
                Some((at, _)) => format!("{}…", &e[..at]),
                None => e,
            }
        });
        let new = error.is_some() && self.status.read().last_error != error;
        if let (true, Some(e), Some(store)) = (new, &error, self.errors_kept_in.get()) {
            // Kept so that "last error" still reads after a restart; a
            // failing store is already the error being reported.
            let _ = store.set_account_error(&self.name, e);
        }
        self.status.write().last_error = error;
    }

    /// Keeps each new error in `store` from now on (see `set_error`).
    pub fn keep_errors_in(&self, store: Arc<crate::store::Store>) {
        let _ = self.errors_kept_in.set(store);
    }

    pub fn mark_processed(&self) {
        self.status.write().last_processed_at = Some(now_ms());
    }

    /// Set once shutdown was requested; the worker finishes the batch in hand.
    pub fn is_shutting_down(&self) -> bool {
        self.shutting_down.load(Ordering::SeqCst)
    }

    pub fn is_paused(&self) -> bool {
        self.paused.load(Ordering::SeqCst)
    }

    /// Sends a command. Pause takes effect on the flag at once (the worker
    /// checks it before each message), so it never needs to wake the worker.
    /// Returns the state the command left the account in, read before the
    /// worker is woken: what the worker does next is the next state, not
    /// this command's answer.
    pub fn send(&self, cmd: Command) -> Result<State, &'static str> {
        match cmd {
            Command::Pause => {
                self.paused.store(true, Ordering::SeqCst);
                let mut s = self.status.write();
                s.paused = true;
                // Answer the state the account is now in: paused, also while
                // it is still connecting (the worker keeps it so once up).
                if matches!(
                    s.state,
                    State::Connecting | State::Connected | State::Processing | State::Disconnected
                ) {
                    s.state = State::Paused;
                    s.since = now_ms();
                }
                return Ok(s.state);
            }
            Command::Shutdown => self.shutting_down.store(true, Ordering::SeqCst),
            Command::Resume => {
                self.paused.store(false, Ordering::SeqCst);
                let mut s = self.status.write();
                s.paused = false;
                if s.state == State::Paused {
                    s.state = if s.connected {
                        State::Connected
                    } else {
                        State::Connecting
                    };
                    s.since = now_ms();
                }
            }
            _ => {}
        }
        let answer = match cmd {
            // A paused account reads `paused` while it connects again.
            Command::Reconnect if self.is_paused() => State::Paused,
            Command::Reconnect => State::Connecting,
            _ => self.status.read().state,
        };
        match self.tx.try_send(Message::Command(cmd)) {
            Ok(()) | Err(TrySendError::Disconnected(_)) => {}
            Err(TrySendError::Full(_)) => {
                return Err("the account's command queue is full; try again")
            }
        }
        self.wake(cmd == Command::Shutdown);
        if cmd == Command::Reconnect {
            self.cut_dialing();
        }
        Ok(answer)
    }

    /// Asks the account's thread to move (or peek at) the message of
    /// activity `entry` and waits for its answer, at most
    /// [`REFILE_QUEUE_WAIT`] for the thread to take it plus [`REFILE_WORK`]
    /// for the work (a peek: [`PEEK_QUEUE_WAIT`] and [`PEEK_WORK`]).
    pub fn refile(&self, entry: i64, to: RefileTo) -> Result<Refiled, RefileError> {
        let (queue_wait, work) = match to {
            RefileTo::Peek { .. } => (PEEK_QUEUE_WAIT, PEEK_WORK),
            _ => (REFILE_QUEUE_WAIT, REFILE_WORK),
        };
        // The wait holds an HTTP worker: a bounded few may (see `gate`).
        let _place = crate::gate::enter(crate::gate::Wait::Account).map_err(|full| {
            RefileError::Unavailable(format!(
                "{}: {}; nothing was changed; try again in a few seconds",
                self.name,
                match full {
                    crate::gate::Full::Same =>
                        "the service is waiting on accounts for other requests already",
                    crate::gate::Full::All =>
                        "the service is busy: logins being checked and requests waiting on \
                         accounts hold all but one worker",
                }
            ))
        })?;
        let (reply, answer) = crossbeam_channel::bounded(1);
        let deadline = Instant::now() + queue_wait;
        let req = Refile {
            entry,
            to,
            deadline,
            reply,
        };
        match self.tx.try_send(Message::Refile(req)) {
            Ok(()) => {}
            Err(TrySendError::Full(_)) => {
                return Err(RefileError::Unavailable(format!(
                    "{}: the account's command queue is full; try again",
                    self.name
                )))
            }
            Err(TrySendError::Disconnected(_)) => {
                return Err(RefileError::Unavailable(format!(
                    "{}: the account is not running",
                    self.name
                )))
            }
        }
        self.wake(false);
        match answer.recv_deadline(deadline + work) {
            Ok(r) => r,
            Err(crossbeam_channel::RecvTimeoutError::Timeout) => {
                Err(RefileError::Unavailable(format!(
                    "{}: the account did not answer within {}s (busy, or not connected); \
                     see the activity entry for whether it was done",
                    self.name,
                    (queue_wait + work).as_secs()
                )))
            }
            Err(crossbeam_channel::RecvTimeoutError::Disconnected) => {
                Err(RefileError::Unavailable(format!(
                    "{}: the account dropped the request (not connected, or it \
                     waited too long); nothing was changed; try again",
                    self.name
                )))
            }
        }
    }

    /// Wakes the worker if it is blocked in IDLE: gently (the session goes
    /// on), or for shutdown by cutting the socket.
    pub fn wake(&self, cut: bool) {
        if cut {
            if let Some(s) = self.dialing.lock().as_ref() {
                self.interrupted.store(true, Ordering::SeqCst);
                let _ = s.shutdown(std::net::Shutdown::Both);
            }
        }
        let w = self.waker.lock();
        let Some(w) = w.as_ref().filter(|w| w.armed.load(Ordering::SeqCst)) else {
            return;
        };
        if cut {
            self.interrupted.store(true, Ordering::SeqCst);
            let _ = w.sock.shutdown(std::net::Shutdown::Both);
        } else {
            let _ = (&w.tx).write(&[1]);
        }
    }

    /// Cuts a session still being opened (greeting, TLS, login, folders):
    /// a `reconnect` is the operator's "again, now", and a server that
    /// never answered the login held it for `imap.timeout` (a
    /// hostile-server audit). A session already open takes the command
    /// between its commands.
    fn cut_dialing(&self) {
        if let Some(s) = self.dialing.lock().as_ref() {
            self.interrupted.store(true, Ordering::SeqCst);
            let _ = s.shutdown(std::net::Shutdown::Both);
        }
    }

    /// Cuts the account's sessions now, whatever they wait for: a stop
    /// whose batch in hand did not end within its grace (a server that
    /// stopped answering mid-pass held the stop for `imap.timeout`, 120 s,
    /// past systemd's `TimeoutStopSec`). The second session's reader sees
    /// [`Handle::is_cut`]. What the batch decided is journalled: the next
    /// start finishes it, as after a crash.
    pub fn cut_sessions(&self) {
        self.cut.store(true, Ordering::SeqCst);
        self.interrupted.store(true, Ordering::SeqCst);
        if let Some(s) = self.dialing.lock().as_ref() {
            let _ = s.shutdown(std::net::Shutdown::Both);
        }
        if let Some(w) = self.waker.lock().as_ref() {
            let _ = w.sock.shutdown(std::net::Shutdown::Both);
        }
    }

    /// Whether [`Handle::cut_sessions`] was called.
    pub fn is_cut(&self) -> bool {
        self.cut.load(Ordering::SeqCst)
    }

    /// The socket of the session being opened (`None` once it is open
    /// or failed); see `dialing`.
    pub fn set_dialing(&self, s: Option<std::net::TcpStream>) {
        *self.dialing.lock() = s;
    }

    /// The current session's wake-up (`None` when the session ends).
    pub fn set_waker(&self, w: Option<Wake>) {
        *self.waker.lock() = w;
    }

    /// Called by the worker around a blocking IDLE: only then do wake-ups
    /// reach the session. Arming first empties the pipe of wake-ups meant
    /// for an IDLE that is over (their commands are in the queue, which the
    /// worker reads next).
    pub fn arm_wake(&self, on: bool) {
        if let Some(w) = self.waker.lock().as_ref() {
            if on {
                use std::io::Read;
                let mut drain = [0u8; 64];
                while matches!((&w.rx).read(&mut drain), Ok(n) if n > 0) {}
            }
            w.armed.store(on, Ordering::SeqCst);
        }
    }

    /// Whether the last connection error was our own wake-up; clears the flag.
    pub fn take_interrupted(&self) -> bool {
        self.interrupted.swap(false, Ordering::SeqCst)
    }
}

/// Every configured account by name.
pub type Registry = BTreeMap<String, Arc<Handle>>;

#[cfg(test)]
mod tests {
    use super::*;

    /// A regression audit: a token endpoint's 3,000-character refusal
    /// went into `lastError` whole; it is kept to 2,000 characters, cut
    /// at a character's boundary.
    #[test]
    fn a_last_error_is_kept_to_2000_characters() {
        let (h, _rx) = Handle::new("a");
        h.set_error(Some("é".repeat(3000)));
        let e = h.status().last_error.unwrap();
        assert_eq!(e.chars().count(), MAX_ERROR_CHARS + 1);
        assert!(e.ends_with("é…"), "{}", &e[e.len() - 8..]);
        h.set_error(Some("short".into()));
        assert_eq!(h.status().last_error.as_deref(), Some("short"));
    }

    #[test]
    fn pause_answers_paused_even_while_connecting() {
        let (h, _rx) = Handle::new("a");
        h.set_state(State::Connecting);
        assert_eq!(h.send(Command::Pause), Ok(State::Paused));
        assert_eq!(h.status().state, State::Paused);
        // The worker finishing its connect keeps the account paused.
        h.set_state(State::Connected);
        assert_eq!(h.status().state, State::Paused);
        assert!(h.status().connected);
        assert_eq!(h.send(Command::Resume), Ok(State::Connected));
    }

    /// `error` on a session that is up (a watched folder that cannot be
    /// opened, a failing store) keeps `connected`, as the
    /// `account_connected` gauge does; a refused login or a crash is not.
    #[test]
    fn an_error_on_a_live_session_reads_connected() {
        let (h, _rx) = Handle::new("a");
        h.set_state(State::Connected);
        h.set_state(State::Error);
        assert_eq!(h.status().state, State::Error);
        assert!(h.status().connected);
        h.set_state(State::Processing);
        h.set_state(State::Error);
        assert!(h.status().connected);
        h.set_disconnected();
        h.set_state(State::Error);
        assert!(!h.status().connected);
        h.set_state(State::Connecting);
        h.set_state(State::Error);
        assert!(!h.status().connected);
    }

    #[test]
    fn resume_before_the_connection_is_up_reads_connecting() {
        let (h, _rx) = Handle::new("a");
        h.set_state(State::Connecting);
        h.send(Command::Pause).unwrap();
        assert_eq!(h.send(Command::Resume), Ok(State::Connecting));
        // Away from its server, a paused account reads paused (as DESIGN's
        // answer to pause has it); an error still shows.
        h.send(Command::Pause).unwrap();
        h.set_state(State::Disconnected);
        assert_eq!(h.status().state, State::Paused);
        assert!(!h.status().connected);
        h.set_state(State::Error);
        assert_eq!(h.status().state, State::Error);
        assert_eq!(h.send(Command::Pause), Ok(State::Error));
        // Resumed while away: connecting, not connected.
        h.set_state(State::Disconnected);
        assert_eq!(h.send(Command::Resume), Ok(State::Connecting));
    }
}
