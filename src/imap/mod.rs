//! The account worker: one named thread (`imap-<account>`) per account that
//! owns its IMAP session from connect to logout, and beside it the
//! account's journal writer (`journal-<account>`, see `writer`). For the
//! pass over a large backlog of one folder a third, `read-<account>`, reads
//! every other FETCH of headers on a second session and ends with that
//! folder's pass (see `reader`). No other thread is started for an
//! account's work: the model is asked through the shared classifier pool,
//! its answers awaited with a `select` (`model`).
//!
//! Guarantees this thread gives:
//! - A message is never deleted: moves use `UID MOVE`, or else `UID COPY`,
//!   `\Deleted` and `UID EXPUNGE` of exactly those UIDs when the server has
//!   UIDPLUS; without UIDPLUS nothing is ever expunged.
//! - Headers and bodies are fetched with `BODY.PEEK`, so reading never sets
//!   `\Seen`; bodies only of messages the model will read.
//! - At-least-once, never twice per arrival: the decision for a batch is
//!   journalled (`pending`) before any command changes a message, and the
//!   final record and the folder watermark are written in one transaction
//!   after the server confirmed the actions (the moves a long pass holds to
//!   its end are journalled when the watermark passes them, see `held`).
//!   After a crash, pending rows are finished with the journalled decision
//!   (the model is not asked again).
//! - A failing message never stops the account: it is recorded, retried with
//!   backoff up to `max_attempts`, then parked as failed.
//! - Commands (pause, resume, reconnect, process, shutdown) take effect within
//!   a second, also while blocked in IDLE (see `account`).

mod acting;
mod batch;
mod by_id;
mod careful;
mod commands;
mod corrections;
mod flags;
mod flow;
mod folder_checks;
mod folders;
mod generation;
mod headers;
mod held;
mod learned;
mod login;
mod model;
mod move_to;
mod pass;
mod reader;
mod schedule;
mod session;
mod state;
mod stream;
mod tokens;
mod train;
mod undo;
mod window;
mod writer;

use std::collections::HashMap;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crossbeam_channel::Receiver;

use crate::account::{Command, Handle, Message, Refile, RefileError, State};
use crate::backoff::Backoff;
use crate::classify::{Pool, Provider, Rules};
use crate::config::AccountConfig;
use crate::metrics::Metrics;
use crate::store::Store;
use crate::webhook::{Event, Webhooks};

pub use commands::uid_set;
pub use session::Stream;
pub use train::{fetch_examples, learn_email, learn_query, training_folders, FolderExamples};

/// Messages whose headers are fetched, decided and acted on together: one
/// STORE per flag set and one MOVE per folder for the lot. A MOVE costs the
/// server about the same whatever the number of UIDs, but more the larger
/// the folder (7–13 ms on a 5,000-message Dovecot folder, 150–600 ms on a
/// 100,000-message one, where windows of 5,000 spent more of Dovecot's time
/// on their 80 MOVEs than on everything else): fewer, larger windows sort
/// a large backlog faster. A window keeps about 2 KB a message while it is
/// handled (headers are read and dropped 512 at a time), which bounds the
/// memory: windows of 25,000 peaked at 66 MB with a 100,000-message
/// backlog, over the 64 MB the benchmarks hold it to; windows of 20,000
/// peak as the 20,000-message backlog does (53 MB), for one more MOVE per
/// folder at 100,000. Measured with `scripts/bench.sh scale`.
const WINDOW: usize = 20_000;

/// [`WINDOW`], or in a debug build the failpoint `window=N` (tests make
/// a pass of several windows out of a few hundred messages).
fn window() -> usize {
    crate::failpoint::number("window").unwrap_or(WINDOW)
}
const CONNECT_TIMEOUT: Duration = Duration::from_secs(15);
/// Longest wait between passes while idling (`imap.idle_interval`, default
/// 60 s, re-issues IDLE more often than this without a pass).
const IDLE_MAX: Duration = Duration::from_secs(25 * 60);
/// A server answers `DONE` (and the NOOP after it) at once; both not in
/// within this (or `imap.timeout` if shorter) and it counts as gone. While
/// idling a silent server is noticed within `imap.idle_interval` plus this:
/// 80 s by default.
const IDLE_EXIT: Duration = Duration::from_secs(20);
const BACKOFF_MIN: Duration = Duration::from_secs(1);
const BACKOFF_MAX: Duration = Duration::from_secs(300);
/// Reconnecting after a lost or failed connection: 1 s doubling to 5 min,
/// with jitter so accounts that failed together do not retry in lockstep.
const RECONNECT: Backoff = Backoff::new(BACKOFF_MIN, BACKOFF_MAX).jittered();
/// Restarting a crashed worker, and retrying a pass after a store error:
/// 1 s doubling to 5 min.
const RESTART: Backoff = Backoff::new(BACKOFF_MIN, BACKOFF_MAX);
/// A session that fails sooner than this after its login does not reset
/// the back-off, unless a pass of it went through and it lasted
/// [`PROVEN_SESSION`]: a server (or a message) that breaks every session
/// right away is retried ever more slowly, not once a second.
const STABLE_SESSION: Duration = Duration::from_secs(60);
/// A session a pass went through and that lasted this long resets the
/// back-off too: sessions of 15 to 30 s while a server flapped grew the
/// wait to 213 s (a soak audit), while a server that drops every session
/// the moment its pass ends (at IDLE) was then retried once a second for
/// ever (the regression audit).
const PROVEN_SESSION: Duration = Duration::from_secs(5);
/// Token requests back off to at most this (or the endpoint's
/// `Retry-After`), well below the IMAP back-off: mail flows again within
/// seconds of the provider coming back, at the cost of four requests a
/// minute to a provider that is down.
const TOKEN_BACKOFF_MAX: Duration = Duration::from_secs(15);
/// Token requests after a failure: 1 s doubling to [`TOKEN_BACKOFF_MAX`],
/// with jitter; the endpoint's `Retry-After` wins.
const TOKEN_RETRY: Backoff = Backoff::new(BACKOFF_MIN, TOKEN_BACKOFF_MAX).jittered();
/// After a refused login, retrying quickly only risks a lockout.
const LOGIN_RETRY: Duration = Duration::from_secs(300);

/// Why a connection or a pass ended, with its cause.
#[derive(Debug)]
#[non_exhaustive]
pub enum ImapError {
    /// TCP connect or TLS handshake failed (the message names the address).
    Connect(String),
    /// The server refused the credentials.
    Login(String),
    /// No OAuth2 access token could be had (the token endpoint refused
    /// the refresh token, or could not be reached).
    Token(crate::oauth::OAuthError),
    /// A command failed in a way that breaks the session, or the server's
    /// answer could not be read.
    Protocol(imap::Error),
    /// The socket failed (time-out, reset).
    Io(std::io::Error),
    /// The store failed: not the connection's fault, and not handled as an
    /// outage (the session is kept and the pass tried again later).
    Store(crate::store::StoreError),
}

impl std::fmt::Display for ImapError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ImapError::Connect(e) => write!(f, "connect failed: {e}"),
            ImapError::Login(e) => write!(f, "login failed: {e}"),
            ImapError::Token(e) => write!(f, "{e}"),
            ImapError::Protocol(e) => write!(f, "{e}"),
            ImapError::Io(e) => write!(f, "{e}"),
            ImapError::Store(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for ImapError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ImapError::Protocol(e) => Some(e),
            ImapError::Io(e) => Some(e),
            ImapError::Store(e) => Some(e),
            ImapError::Token(e) => Some(e),
            _ => None,
        }
    }
}

impl From<imap::Error> for ImapError {
    fn from(e: imap::Error) -> Self {
        ImapError::Protocol(e)
    }
}

impl From<crate::store::StoreError> for ImapError {
    fn from(e: crate::store::StoreError) -> Self {
        ImapError::Store(e)
    }
}

impl From<std::io::Error> for ImapError {
    fn from(e: std::io::Error) -> Self {
        ImapError::Io(e)
    }
}

enum Exit {
    Shutdown,
    Reconnect,
    /// The access token the session signed in with is about to expire:
    /// sign in again with a fresh one before the server ends the session
    /// (Microsoft 365 does, at the token's expiry).
    Renew,
    /// The provider refused the refresh token and the access token the
    /// session signed in with has expired: the session ends, and the
    /// sign-in that follows says so (state `error`, `connection_lost`).
    Refused,
}

/// Everything an account thread needs.
pub struct Worker {
    pub account: Arc<AccountConfig>,
    pub handle: Arc<Handle>,
    pub commands: Receiver<Message>,
    pub store: Arc<Store>,
    pub metrics: Arc<Metrics>,
    pub webhooks: Arc<Webhooks>,
    pub provider: Option<Arc<Provider>>,
    pub pool: Arc<Pool>,
    /// The account's rules, compiled at start-up.
    pub rules: Rules,
}

/// A worker that ran this long before panicking starts again at once.
const HEALTHY_RUN: Duration = Duration::from_secs(300);

/// Starts the account's thread. A panic inside it (a bug) is caught: the
/// panic is logged, counted (`mailproc_errors_total{kind="panic"}`) and
/// announced (`error` event), the account shows state `error` (so `/health`
/// reads `degraded`), and the worker starts again after a back-off that
/// doubles while it keeps crashing. The IMAP session is dropped on the way
/// out; journalled work is finished by the next run, as after a crash.
pub fn spawn(w: Worker) -> std::io::Result<JoinHandle<()>> {
    std::thread::Builder::new()
        .name(format!("imap-{}", w.account.name))
        .spawn(move || {
            let mut runner = Runner::new(w);
            let mut restarts = RESTART;
            loop {
                let started = Instant::now();
                let outcome =
                    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| runner.run()));
                let Err(panic) = outcome else { break };
                let msg = crate::failpoint::panic_message(&*panic);
                if started.elapsed() > HEALTHY_RUN {
                    restarts.reset();
                }
                let wait = restarts.next_wait();
                runner.crashed(&msg, wait);
                if !runner.sleep_for_commands(wait) {
                    break;
                }
            }
            runner.w.handle.set_state(State::Disconnected);
            log::info!("{}: worker stopped", runner.name());
        })
}

/// What ended a wait while disconnected ([`Runner::sleep`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Woke {
    /// Shutdown.
    Stop,
    /// The wait is over, or a command asks for a connection now.
    Go,
    /// `reconnect`: a connection now, and the back-off starts again.
    Reconnect,
}

struct Runner {
    w: Worker,
    /// Commands taken from the channel but not yet acted on.
    queued: Vec<Command>,
    /// Refile requests (undo) taken from the channel, for the session.
    refiles: Vec<Refile>,
    force_pass: bool,
    /// The pass under way was asked for (`process`): it runs whole even
    /// while the account is paused.
    forced: bool,
    /// When the last pass began (epoch ms): a retry due before it that is
    /// still due could not be taken, and does not shorten the wait.
    last_pass_ms: i64,
    /// Passes that ended without an error, since the worker started.
    passes_done: u64,
    /// With `auth: oauth2`: the account's tokens, made at the first connect.
    tokens: Option<crate::oauth::Tokens>,
    /// When the session's access token is due for renewal, or the next try
    /// of a renewal that failed (OAuth2 only).
    renew_at: Option<Instant>,
    /// The wait before the next token request after one failed.
    token_backoff: Backoff,
    /// The classifier learned from the account's folders (loaded when
    /// `learned.enabled`), and the stored generation it was loaded from.
    learner: crate::learn::Model,
    learner_generation: Option<i64>,
    /// The account's journal writer (`journal-<account>`), shared with the
    /// stage that records while acting.
    writer: Arc<writer::Writer>,
    /// Why the last pass could not read a watched folder (the server's
    /// words); the account shows `error` while it is set.
    trouble: Option<String>,
    /// The junk folder of the session, as the user knows it: the learned
    /// classifier's class for `spam`.
    junk: String,
    /// The moves held in a pass of more than one window (see `held`).
    held: Option<held::Held>,
    /// The window whose headers are being read, and what sessions lost
    /// while reading taught of each folder (see `careful`).
    reading: Option<careful::Reading>,
    careful: HashMap<(String, u32), careful::Careful>,
    /// Each folder the corrections check read whole, with its counts as
    /// they were just before (see `corrections`).
    corrections_read: HashMap<String, folders::Counts>,
    /// A refile request (undo, a move, a peek) was carried out since the
    /// session's loop last looked (see `schedule::Quiet`).
    refiled: bool,
    /// Messages the pass under way took up (new, due for a retry, left
    /// pending): a pass the server prompted that found none is empty (see
    /// `schedule::Quiet`).
    found: usize,
    /// The pace of the log's lines of failed attempts (see
    /// `batch::report_failures`).
    failure_lines: parking_lot::Mutex<crate::logging::LinesPerSecond>,
    /// A pass failed for the store since the last one that went through:
    /// the next that does says the store is back (see `pass`).
    store_failed: bool,
    /// The account waits out a store failure with its session kept: what
    /// an undo asked meanwhile is told (the session lost later is "not
    /// connected", the database well again or not: the regression audit).
    store_waiting: bool,
    /// The model's answers whose journal the store could not write, by
    /// message (folder, UIDVALIDITY, UID): the pass after the store's
    /// back-off takes them instead of asking again (a full disk made every
    /// retry ask the model about the whole group again, the answers thrown
    /// away: 494 calls for 100 messages; the host-failure audit). Emptied
    /// by a pass that goes through; at most [`model::UNRECORDED_ANSWERS`].
    unrecorded_answers: HashMap<model::MessageKey, state::Kept>,
}

impl Runner {
    fn new(w: Worker) -> Runner {
        Runner {
            writer: Arc::new(writer::Writer::start(&w.account.name, w.store.clone())),
            w,
            queued: Vec::new(),
            refiles: Vec::new(),
            force_pass: false,
            refiled: false,
            forced: false,
            last_pass_ms: 0,
            passes_done: 0,
            tokens: None,
            renew_at: None,
            token_backoff: TOKEN_RETRY,
            learner: crate::learn::Model::default(),
            learner_generation: None,
            trouble: None,
            junk: "Junk".into(),
            held: None,
            reading: None,
            careful: HashMap::new(),
            corrections_read: HashMap::new(),
            found: 0,
            failure_lines: Default::default(),
            store_failed: false,
            store_waiting: false,
            unrecorded_answers: HashMap::new(),
        }
    }

    fn name(&self) -> &str {
        &self.w.account.name
    }

    /// After a caught panic: make it visible, then let `spawn` restart.
    fn crashed(&mut self, msg: &str, restart_in: Duration) {
        let error = format!("worker crashed: {msg}");
        log::error!("{}: {error}; restarting in {restart_in:?}", self.name());
        self.count_error("panic");
        self.w
            .metrics
            .account_connected
            .with_label_values(&[self.name()])
            .set(0);
        self.w.handle.set_waker(None);
        self.w.handle.set_disconnected();
        self.w.handle.set_state(State::Error);
        self.w.handle.set_error(Some(error.clone()));
        self.emit(Event::Error {
            error: &error,
            details: &format!("restarting in {restart_in:?}"),
        });
    }

    /// Serves the session; a failing store (full disk, locked file) does not
    /// end it. It is logged, counted (`errors_total{kind="store"}`),
    /// announced (`error` event) and shown (state `error`, `lastError`),
    /// and the pass is tried again after a back-off on the same session.
    fn serve_despite_store_errors(
        &mut self,
        s: &mut session::Session,
        control: &session::Control,
        caps: &session::Caps,
        folders: &session::Folders,
    ) -> Result<Exit, ImapError> {
        let mut backoff = RESTART;
        loop {
            let done = self.passes_done;
            match self.serve(s, control, caps, folders) {
                Err(ImapError::Store(e)) => {
                    // The session goes on: a window being read is not
                    // what ended anything (see `careful`).
                    self.reading = None;
                    // A pass went through since the last failure: this one
                    // is a new trouble, not the old one going on (an audit:
                    // a lock held 8 s days after the last one was waited
                    // out for 32 s, the account shown in error meanwhile).
                    if self.passes_done > done {
                        backoff.reset();
                    }
                    let wait = backoff.next_wait();
                    let msg = e.to_string();
                    self.store_failed = true;
                    log::error!("{}: {msg}; trying again in {wait:?}", self.name());
                    self.count_error("store");
                    self.w.handle.set_state(State::Error);
                    self.w.handle.set_error(Some(msg.clone()));
                    self.emit(Event::Error {
                        error: &msg,
                        details: &format!("trying again in {wait:?}; the IMAP session is kept"),
                    });
                    self.store_waiting = true;
                    let go_on = self.sleep_for_commands(wait);
                    self.store_waiting = false;
                    if !go_on {
                        return Ok(Exit::Shutdown);
                    }
                    self.w.handle.set_error(None);
                }
                other => return other,
            }
        }
    }

    /// Connects, serves and reconnects until shutdown.
    fn run(&mut self) {
        let mut backoff = RECONNECT;
        let mut outage: Option<String> = self.w.handle.outage();
        let mut refused = false;
        loop {
            if self.w.handle.is_shutting_down() {
                break;
            }
            self.w.handle.set_state(State::Connecting);
            if let Err(e) = self.ensure_tokens() {
                self.token_refused(&mut outage, &e);
                if !self.sleep_for_commands(LOGIN_RETRY) {
                    break;
                }
                continue;
            }
            let wait =
                match session::connect(&self.w.account, self.tokens.as_mut(), Some(&self.w.handle))
                {
                    Ok(c) => {
                        let signed_in = Instant::now();
                        let session::Connected {
                            mut session,
                            control,
                            caps,
                            folders,
                            wake,
                        } = c;
                        self.w.handle.set_waker(Some(wake));
                        self.renew_at = self.tokens.as_ref().and_then(|t| t.renew_at());
                        self.token_backoff.reset();
                        self.w.handle.set_outage(None);
                        if let Some(err) = outage.take() {
                            log::info!("{}: connection restored", self.name());
                            self.emit(Event::ConnectionRestored {
                                details: &format!("reconnected after: {err}"),
                            });
                        }
                        self.w.handle.set_error(None);
                        self.w
                            .metrics
                            .account_connected
                            .with_label_values(&[self.name()])
                            .set(1);
                        let passes = self.passes_done;
                        let r = self.serve_despite_store_errors(
                            &mut session,
                            &control,
                            &caps,
                            &folders,
                        );
                        // A long session, or one a pass went through that
                        // lived a while (however it ended), proves the
                        // server and the account fine again.
                        let lived = signed_in.elapsed();
                        if lived >= STABLE_SESSION
                            || (self.passes_done > passes && lived >= PROVEN_SESSION)
                        {
                            backoff.reset();
                        }
                        self.w.handle.set_waker(None);
                        self.refuse_requests("the IMAP session ended; try again");
                        self.w
                            .metrics
                            .account_connected
                            .with_label_values(&[self.name()])
                            .set(0);
                        match r {
                            Ok(Exit::Shutdown) => {
                                let _ = session.logout();
                                break;
                            }
                            Ok(Exit::Reconnect) => {
                                let _ = session.logout();
                                log::info!("{}: reconnecting on request", self.name());
                                backoff.reset();
                                continue;
                            }
                            Ok(Exit::Renew) => {
                                let _ = session.logout();
                                log::info!(
                                    "{}: a new access token is in hand; signing in again with it",
                                    self.name()
                                );
                                continue;
                            }
                            Ok(Exit::Refused) => {
                                let _ = session.logout();
                                log::warn!(
                                "{}: the provider refused the refresh token and the access token \
                                     in hand has expired: the session ends",
                                self.name()
                            );
                                continue;
                            }
                            Err(_) if self.w.handle.take_interrupted() => {
                                self.reading = None;
                                continue;
                            }
                            Err(e) => {
                                let e = e.to_string();
                                self.lost_while_reading(&e);
                                // A session that broke soon after its login
                                // keeps the back-off growing (a server, or a
                                // message, that breaks every session).
                                let wait = backoff.next_wait();
                                log::warn!(
                                    "{}: connection lost: {e}; reconnecting in {wait:?}",
                                    self.name()
                                );
                                self.lost(&mut outage, &e);
                                Some(wait)
                            }
                        }
                    }
                    // Cut by a stop while the session was being opened: not an
                    // outage, nothing to report.
                    Err(_) if self.w.handle.is_shutting_down() => {
                        self.w.handle.take_interrupted();
                        break;
                    }
                    // Cut by a reconnect while the session was being
                    // opened: the command waits in the queue and ends the
                    // wait below at once.
                    Err(e) if self.w.handle.take_interrupted() => {
                        log::info!(
                            "{}: connecting cut short by a reconnect ({e}); connecting again",
                            self.name()
                        );
                        Some(Duration::from_secs(1))
                    }
                    Err(ImapError::Login(e)) => {
                        let msg = format!("login failed: {e}");
                        log::error!(
                            "{0}: {msg}; trying again in {1} min, or at a reconnect (check \
                             accounts[{0}].imap.username and password)",
                            self.name(),
                            LOGIN_RETRY.as_secs() / 60
                        );
                        // An outage, whose end is told (connection_restored).
                        outage.get_or_insert_with(|| msg.clone());
                        self.w.handle.set_outage(outage.clone());
                        self.w.handle.set_state(State::Error);
                        self.w.handle.set_error(Some(msg.clone()));
                        self.count_error("login");
                        let imap = &self.w.account.imap;
                        self.emit(Event::Error {
                            error: &msg,
                            details: &format!("{}@{}", imap.username, imap.host),
                        });
                        refused = true;
                        Some(LOGIN_RETRY)
                    }
                    Err(ImapError::Token(e)) if !e.is_transient() => {
                        self.token_refused(&mut outage, &e);
                        Some(LOGIN_RETRY)
                    }
                    Err(ImapError::Token(e)) => {
                        // The provider is down or busy: asked again soon (or
                        // when it said), so mail flows within half a minute of
                        // its return, whatever the IMAP back-off.
                        let msg = e.to_string();
                        let wait = self.next_token_try(&e);
                        log::warn!("{}: {msg}; asking again in {wait:?}", self.name());
                        self.count_error("oauth");
                        self.lost(&mut outage, &msg);
                        Some(wait)
                    }
                    Err(e) => {
                        let e = e.to_string();
                        let wait = backoff.next_wait();
                        log::warn!("{}: {e}; retrying in {wait:?}", self.name());
                        self.lost(&mut outage, &e);
                        Some(wait)
                    }
                };
            if let Some(wait) = wait {
                // After a refused login only `reconnect` cuts the wait
                // short: automatic retries of bad credentials (and every
                // process or resume) risk a lockout; the operator's one
                // request is one more try.
                let woken_by_commands = !std::mem::take(&mut refused);
                match self.sleep(wait, woken_by_commands) {
                    Woke::Stop => break,
                    Woke::Go => {}
                    // Tried at once, and the back-off starts again (DESIGN §4).
                    Woke::Reconnect => backoff.reset(),
                }
            }
        }
    }

    fn lost(&self, outage: &mut Option<String>, e: &str) {
        self.w.handle.set_state(State::Disconnected);
        self.w.handle.set_error(Some(e.to_string()));
        self.count_error("connection");
        if outage.is_none() {
            *outage = Some(e.to_string());
            self.w.handle.set_outage(outage.clone());
            let host = &self.w.account.imap;
            self.emit(Event::ConnectionLost {
                error: e,
                details: &format!("{}:{}", host.host, host.port()),
            });
        }
    }

    /// Waits up to `wait` while disconnected. Returns false on shutdown;
    /// returns early when a command asks for a connection now.
    fn sleep_for_commands(&mut self, wait: Duration) -> bool {
        self.sleep(wait, true) != Woke::Stop
    }

    /// Waits up to `wait` while disconnected, for what ends it. With
    /// `woken_by_commands` false (after a refused login) `process` and
    /// `resume` are kept for when the session is up; only `reconnect` (one
    /// more try, as the operator asked) and shutdown end the wait.
    fn sleep(&mut self, wait: Duration, woken_by_commands: bool) -> Woke {
        let deadline = Instant::now() + wait;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Woke::Go;
            }
            let cmd = match self.w.commands.recv_timeout(left) {
                Ok(Message::Command(c)) => Ok(c),
                Ok(Message::Refile(r)) => {
                    // The wait after a store failure keeps the session, but
                    // the database must take the undo's record (it read "not
                    // connected"; the host-failure audit).
                    let why = if self.store_waiting {
                        "the database cannot be written now (the account waits to try again)"
                    } else {
                        "not connected to the IMAP server"
                    };
                    answer_unavailable(r, &format!("{}: {why}; try again later", self.name()));
                    continue;
                }
                Err(e) => Err(e),
            };
            match cmd {
                Ok(Command::Shutdown) => return Woke::Stop,
                Ok(Command::Reconnect) => {
                    self.force_pass = true;
                    if !woken_by_commands {
                        log::info!(
                            "{}: the login was refused; trying it again now, as asked (reconnect)",
                            self.name()
                        );
                    }
                    return Woke::Reconnect;
                }
                Ok(Command::Process) | Ok(Command::Resume) => {
                    self.force_pass = true;
                    if woken_by_commands {
                        return Woke::Go;
                    }
                    log::info!(
                        "{}: the login was refused; trying again in {}s, not at once \
                         (reconnect tries now)",
                        self.name(),
                        left.as_secs_f64().ceil()
                    );
                }
                Ok(Command::Pause) => {}
                Err(crossbeam_channel::RecvTimeoutError::Timeout) => return Woke::Go,
                Err(crossbeam_channel::RecvTimeoutError::Disconnected) => return Woke::Stop,
            }
        }
    }

    /// Takes queued commands (refile requests wait in `refiles` for the
    /// session). Returns an exit when one asks for it.
    fn take_commands(&mut self) -> Option<Exit> {
        for m in self.w.commands.try_iter() {
            match m {
                Message::Command(c) => self.queued.push(c),
                Message::Refile(r) => self.refiles.push(r),
            }
        }
        for cmd in std::mem::take(&mut self.queued) {
            match cmd {
                Command::Shutdown => return Some(Exit::Shutdown),
                Command::Reconnect => return Some(Exit::Reconnect),
                Command::Process | Command::Resume => self.force_pass = true,
                Command::Pause => {}
            }
        }
        None
    }

    /// Answers every refile request in hand that the session cannot serve.
    fn refuse_requests(&mut self, why: &str) {
        for r in std::mem::take(&mut self.refiles) {
            answer_unavailable(r, &format!("{}: {why}", self.name()));
        }
    }

    fn emit(&self, event: Event<'_>) {
        self.w.webhooks.emit(self.name(), event);
    }

    fn count_error(&self, kind: &str) {
        self.w
            .metrics
            .errors
            .with_label_values(&[self.name(), kind])
            .inc();
    }
}

/// Tells the asker a refile could not be done now (nothing changed).
fn answer_unavailable(r: Refile, why: &str) {
    let _ = r.reply.send(Err(RefileError::Unavailable(why.to_string())));
}
