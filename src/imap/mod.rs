//! The account worker: one named thread (`imap-<account>`) per account that
//! owns its IMAP session from connect to logout.
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
//!   after the server confirmed the actions. After a crash, pending rows are
//!   finished with the journalled decision (the model is not asked again).
//! - A failing message never stops the account: it is recorded, retried with
//!   backoff up to `max_attempts`, then parked as failed.
//! - Commands (pause, resume, reconnect, process, shutdown) take effect within
//!   a second, also while blocked in IDLE (see `account`).

mod batch;
mod commands;
mod corrections;
mod learned;
mod login;
mod move_to;
mod pass;
mod session;
mod train;
mod undo;
mod window;

use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crossbeam_channel::Receiver;

use crate::account::{Command, Handle, State};
use crate::classify::{Pool, Provider, Rules};
use crate::config::AccountConfig;
use crate::metrics::Metrics;
use crate::store::Store;
use crate::webhook::{Event, Webhooks};

pub use commands::uid_set;
pub use move_to::{header_field, move_to, Location, Moved};
pub use session::Stream;
pub use train::{fetch_examples, learn_email, learn_query, training_folders, FolderExamples};
pub use undo::{undo, UndoError, Undone};

/// Messages whose headers are fetched, decided and acted on together: one
/// FETCH, one journal and one record transaction, one STORE per flag set and
/// one MOVE per folder for the lot. A MOVE costs the server about the same
/// whatever the number of UIDs (7–13 ms on a 5,000-message Dovecot folder),
/// so fewer, larger windows sort a backlog faster; headers are a few KB
/// each, so a window holds a few MB. Measured with scripts/bench.sh.
const WINDOW: usize = 5000;
const CONNECT_TIMEOUT: Duration = Duration::from_secs(15);
/// Longest wait between passes while idling (`imap.idle_interval`, default
/// 60 s, re-issues IDLE more often than this without a pass).
const IDLE_MAX: Duration = Duration::from_secs(25 * 60);
/// A server answers `DONE` (and the NOOP after it) at once; this long
/// without an answer (or `imap.timeout` if shorter) and it counts as gone.
/// While idling a silent server is noticed within `imap.idle_interval` plus
/// twice this: 100 s by default.
const IDLE_EXIT: Duration = Duration::from_secs(20);
const BACKOFF_MIN: Duration = Duration::from_secs(1);
const BACKOFF_MAX: Duration = Duration::from_secs(300);
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
}

/// Everything an account thread needs.
pub struct Worker {
    pub account: Arc<AccountConfig>,
    pub handle: Arc<Handle>,
    pub commands: Receiver<Command>,
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
            let mut backoff = BACKOFF_MIN;
            loop {
                let started = Instant::now();
                let outcome =
                    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| runner.run()));
                let Err(panic) = outcome else { break };
                let msg = crate::failpoint::panic_message(&*panic);
                if started.elapsed() > HEALTHY_RUN {
                    backoff = BACKOFF_MIN;
                }
                runner.crashed(&msg, backoff);
                if !runner.sleep_for_commands(backoff) {
                    break;
                }
                backoff = (backoff * 2).min(BACKOFF_MAX);
            }
            runner.w.handle.set_state(State::Disconnected);
            log::info!("{}: worker stopped", runner.name());
        })
}

struct Runner {
    w: Worker,
    /// Commands taken from the channel but not yet acted on.
    queued: Vec<Command>,
    force_pass: bool,
    /// With `auth: oauth2`: the account's tokens, made at the first connect.
    tokens: Option<crate::oauth::Tokens>,
    /// When the session's access token is due for renewal (OAuth2 only).
    renew_at: Option<Instant>,
    /// The classifier learned from the account's folders (loaded when
    /// `learned.enabled`), and the stored generation it was loaded from.
    learner: crate::learn::Model,
    learner_generation: Option<i64>,
}

impl Runner {
    fn new(w: Worker) -> Runner {
        Runner {
            w,
            queued: Vec::new(),
            force_pass: false,
            tokens: None,
            renew_at: None,
            learner: crate::learn::Model::default(),
            learner_generation: None,
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
        sock: &std::net::TcpStream,
        caps: &session::Caps,
        folders: &session::Folders,
    ) -> Result<Exit, ImapError> {
        let mut wait = BACKOFF_MIN;
        loop {
            match self.serve(s, sock, caps, folders) {
                Err(ImapError::Store(e)) => {
                    let msg = e.to_string();
                    log::error!("{}: {msg}; trying again in {wait:?}", self.name());
                    self.count_error("store");
                    self.w.handle.set_state(State::Error);
                    self.w.handle.set_error(Some(msg.clone()));
                    self.emit(Event::Error {
                        error: &msg,
                        details: &format!("trying again in {wait:?}; the IMAP session is kept"),
                    });
                    if !self.sleep_for_commands(wait) {
                        return Ok(Exit::Shutdown);
                    }
                    self.w.handle.set_error(None);
                    wait = (wait * 2).min(BACKOFF_MAX);
                }
                other => return other,
            }
        }
    }

    /// Connects, serves and reconnects until shutdown.
    fn run(&mut self) {
        let mut backoff = BACKOFF_MIN;
        let mut outage: Option<String> = None;
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
            let wait = match session::connect(&self.w.account, self.tokens.as_mut()) {
                Ok((mut session, sock, caps, folders, wake)) => {
                    self.w.handle.set_waker(Some(wake));
                    self.renew_at = self.tokens.as_ref().and_then(|t| t.renew_at());
                    if let Some(err) = outage.take() {
                        log::info!("{}: connection restored", self.name());
                        self.emit(Event::ConnectionRestored {
                            details: &format!("reconnected after: {err}"),
                        });
                    }
                    backoff = BACKOFF_MIN;
                    self.w.handle.set_error(None);
                    self.w
                        .metrics
                        .account_connected
                        .with_label_values(&[self.name()])
                        .set(1);
                    let r = self.serve_despite_store_errors(&mut session, &sock, &caps, &folders);
                    self.w.handle.set_waker(None);
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
                            continue;
                        }
                        Ok(Exit::Renew) => {
                            let _ = session.logout();
                            log::info!(
                                "{}: the access token is due for renewal; signing in again",
                                self.name()
                            );
                            continue;
                        }
                        Err(_) if self.w.handle.take_interrupted() => continue,
                        Err(e) => {
                            let e = e.to_string();
                            log::warn!("{}: connection lost: {e}", self.name());
                            self.lost(&mut outage, &e);
                            Some(BACKOFF_MIN)
                        }
                    }
                }
                Err(ImapError::Login(e)) => {
                    let msg = format!("login failed: {e}");
                    log::error!("{}: {msg}", self.name());
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
                Err(e) => {
                    let e = e.to_string();
                    let wait = jitter(backoff);
                    log::warn!("{}: {e}; retrying in {wait:?}", self.name());
                    self.lost(&mut outage, &e);
                    backoff = (backoff * 2).min(BACKOFF_MAX);
                    Some(wait)
                }
            };
            if let Some(wait) = wait {
                // After a refused login no request cuts the wait short:
                // quick retries of bad credentials risk a lockout.
                let done = if std::mem::take(&mut refused) {
                    self.sleep_through_commands(wait)
                } else {
                    self.sleep_for_commands(wait)
                };
                if !done {
                    break;
                }
            }
        }
    }

    /// With `auth: oauth2`, makes the account's token source once.
    fn ensure_tokens(&mut self) -> Result<(), crate::oauth::OAuthError> {
        let Some(c) = &self.w.account.imap.oauth2 else {
            return Ok(());
        };
        if self.w.account.imap.auth == crate::config::ImapAuth::Oauth2 && self.tokens.is_none() {
            self.tokens = Some(crate::oauth::Tokens::new(
                self.name(),
                c,
                self.w.store.clone(),
            )?);
        }
        Ok(())
    }

    /// The provider refused the refresh token (revoked, expired, wrong
    /// client): nothing works until the operator acts, so the account
    /// shows `error` with the provider's words, and the outage is announced
    /// (`connection_lost`, once) like any other.
    fn token_refused(&self, outage: &mut Option<String>, e: &crate::oauth::OAuthError) {
        let msg = e.to_string();
        log::error!("{}: {msg}", self.name());
        self.count_error("oauth");
        self.lost(outage, &msg);
        self.w.handle.set_state(State::Error);
    }

    /// Whether the session's access token is due for renewal.
    fn renew_due(&self) -> bool {
        self.renew_at.is_some_and(|t| Instant::now() >= t)
    }

    /// Time left until the session's access token is due for renewal.
    fn until_renew(&self) -> Option<Duration> {
        self.renew_at
            .map(|t| t.saturating_duration_since(Instant::now()))
    }

    fn lost(&self, outage: &mut Option<String>, e: &str) {
        self.w.handle.set_state(State::Disconnected);
        self.w.handle.set_error(Some(e.to_string()));
        self.count_error("connection");
        if outage.is_none() {
            *outage = Some(e.to_string());
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
        self.sleep(wait, true)
    }

    /// Waits all of `wait` (after a refused login): commands that ask for a
    /// connection are kept for when it is up; only shutdown ends the wait.
    fn sleep_through_commands(&mut self, wait: Duration) -> bool {
        self.sleep(wait, false)
    }

    fn sleep(&mut self, wait: Duration, woken_by_commands: bool) -> bool {
        let deadline = Instant::now() + wait;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return true;
            }
            match self.w.commands.recv_timeout(left) {
                Ok(Command::Shutdown) => return false,
                Ok(Command::Reconnect) | Ok(Command::Process) | Ok(Command::Resume) => {
                    self.force_pass = true;
                    if woken_by_commands {
                        return true;
                    }
                    log::info!(
                        "{}: the login was refused; trying again in {left:?}, not at once",
                        self.name()
                    );
                }
                Ok(Command::Pause) => {}
                Err(crossbeam_channel::RecvTimeoutError::Timeout) => return true,
                Err(crossbeam_channel::RecvTimeoutError::Disconnected) => return false,
            }
        }
    }

    /// Takes queued commands. Returns an exit when one asks for it.
    fn take_commands(&mut self) -> Option<Exit> {
        self.queued.extend(self.w.commands.try_iter());
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

/// Up to a quarter more, so many accounts do not reconnect in lockstep.
fn jitter(d: Duration) -> Duration {
    let r = crate::auth::random_bytes::<1>()[0] as u32;
    d + d * r / 1024
}
