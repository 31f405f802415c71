//! The account worker: one named thread (`imap-<account>`) per account that
//! owns its IMAP session from connect to logout.
//!
//! Guarantees this thread gives:
//! - A message is never deleted: moves use `UID MOVE`, or else `UID COPY`,
//!   `\Deleted` and `UID EXPUNGE` of exactly those UIDs when the server has
//!   UIDPLUS; without UIDPLUS nothing is ever expunged.
//! - Bodies are fetched with `BODY.PEEK[]`, so reading never sets `\Seen`.
//! - At-least-once, never twice per arrival: the decision for a batch is
//!   journalled (`pending`) before any command changes a message, and the
//!   final record and the folder watermark are written in one transaction
//!   after the server confirmed the actions. After a crash, pending rows are
//!   finished with the journalled decision (the model is not asked again).
//! - A failing message never stops the account: it is recorded, retried with
//!   backoff up to `max_attempts`, then parked as failed.
//! - Commands (pause, resume, reconnect, process, shutdown) take effect within
//!   a second, also while blocked in IDLE (see `account`).

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::io::{Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crossbeam_channel::Receiver;
use serde_json::json;

use crate::account::{Command, Handle, State};
use crate::classify::{Classification, Email, Job, Pool, Provider, Rules};
use crate::config::{AccountConfig, Action, Backlog, EventKind, Security};
use crate::metrics::Metrics;
use crate::store::{status, EmailMeta, KnownEmail, Outcome, Store};
use crate::timestamp::now_ms;
use crate::webhook::Webhooks;

/// Messages fetched and acted on together. Bounds memory (each message is at
/// most `max_message_bytes`) while sharing one FETCH, one STORE per flag set
/// and one MOVE per folder among many messages.
const BATCH: usize = 100;
/// Time allowed for one IMAP command before the connection counts as dead.
const COMMAND_TIMEOUT: Duration = Duration::from_secs(120);
const CONNECT_TIMEOUT: Duration = Duration::from_secs(15);
/// RFC 2177 asks clients to re-issue IDLE at least every 29 minutes.
const IDLE_MAX: Duration = Duration::from_secs(25 * 60);
const BACKOFF_MIN: Duration = Duration::from_secs(1);
const BACKOFF_MAX: Duration = Duration::from_secs(300);
/// After a refused login, retrying quickly only risks a lockout.
const LOGIN_RETRY: Duration = Duration::from_secs(300);

#[derive(Debug)]
#[non_exhaustive]
pub enum ImapError {
    /// TCP connect or TLS handshake failed.
    Connect(String),
    /// The server refused the credentials.
    Login(String),
    /// A command failed or the connection broke mid-session.
    Session(String),
    Store(String),
}

impl std::fmt::Display for ImapError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ImapError::Connect(e) => write!(f, "connect failed: {e}"),
            ImapError::Login(e) => write!(f, "login failed: {e}"),
            ImapError::Session(e) => write!(f, "{e}"),
            ImapError::Store(e) => write!(f, "{e}"),
        }
    }
}

impl From<imap::Error> for ImapError {
    fn from(e: imap::Error) -> Self {
        ImapError::Session(e.to_string())
    }
}

impl From<crate::store::StoreError> for ImapError {
    fn from(e: crate::store::StoreError) -> Self {
        ImapError::Store(e.to_string())
    }
}

impl From<std::io::Error> for ImapError {
    fn from(e: std::io::Error) -> Self {
        ImapError::Session(e.to_string())
    }
}

/// The socket under an IMAP session, plain or TLS.
#[derive(Debug)]
pub enum Stream {
    Plain(TcpStream),
    Tls(Box<native_tls::TlsStream<TcpStream>>),
}

impl Read for Stream {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        match self {
            Stream::Plain(s) => s.read(buf),
            Stream::Tls(s) => s.read(buf),
        }
    }
}

impl Write for Stream {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match self {
            Stream::Plain(s) => s.write(buf),
            Stream::Tls(s) => s.write(buf),
        }
    }
    fn flush(&mut self) -> std::io::Result<()> {
        match self {
            Stream::Plain(s) => s.flush(),
            Stream::Tls(s) => s.flush(),
        }
    }
}

impl imap::extensions::idle::SetReadTimeout for Stream {
    fn set_read_timeout(&mut self, timeout: Option<Duration>) -> imap::Result<()> {
        let tcp = match self {
            Stream::Plain(s) => s,
            Stream::Tls(s) => s.get_ref(),
        };
        tcp.set_read_timeout(timeout).map_err(imap::Error::Io)
    }
}

type Session = imap::Session<Stream>;

struct Caps {
    idle: bool,
    mv: bool,
    uidplus: bool,
}

/// What one connection knows of the server's folders.
struct Folders {
    existing: HashSet<String>,
    junk: String,
    trash: String,
}

enum Exit {
    Shutdown,
    Reconnect,
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
    rules: Rules,
    /// Commands taken from the channel but not yet acted on.
    queued: Vec<Command>,
    force_pass: bool,
}

/// A message of a batch, from fetch to record.
struct Item {
    meta: EmailMeta,
    /// The decision (or the journalled one, for a pending row).
    decision: Option<Classification>,
    error: Option<(String, &'static str, bool)>,
    duration: Duration,
    /// The decision came from the journal (a run stopped mid-batch).
    journalled: bool,
    /// The journalled message already left the folder: our move happened.
    gone: bool,
}

/// The decision a `pending` journal row holds.
fn journalled(k: &KnownEmail) -> Classification {
    Classification {
        actions: k.actions.clone(),
        reasoning: k.reasoning.clone(),
        model: k.model.clone(),
        confidence: k.confidence,
    }
}

impl Runner {
    fn new(w: Worker) -> Runner {
        let rules = Rules::new(&w.account.rules);
        Runner {
            w,
            rules,
            queued: Vec::new(),
            force_pass: false,
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
        self.w.handle.set_idle_socket(None);
        self.w.handle.set_state(State::Error);
        self.w.handle.set_error(Some(error.clone()));
        self.emit(
            EventKind::Error,
            json!({ "error": error, "details": format!("restarting in {restart_in:?}") }),
        );
    }

    /// Connects, serves and reconnects until shutdown.
    fn run(&mut self) {
        let mut backoff = BACKOFF_MIN;
        let mut outage: Option<String> = None;
        loop {
            if self.w.handle.is_shutting_down() {
                break;
            }
            self.w.handle.set_state(State::Connecting);
            let wait = match self.connect() {
                Ok((mut session, sock, caps, folders)) => {
                    if let Some(err) = outage.take() {
                        log::info!("{}: connection restored", self.name());
                        self.emit(
                            EventKind::ConnectionRestored,
                            json!({
                                "error": "", "details": format!("reconnected after: {err}"),
                            }),
                        );
                    }
                    backoff = BACKOFF_MIN;
                    self.w.handle.set_error(None);
                    self.w
                        .metrics
                        .account_connected
                        .with_label_values(&[self.name()])
                        .set(1);
                    let r = self.serve(&mut session, &sock, &caps, &folders);
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
                    self.emit(EventKind::Error, json!({ "error": msg, "details": format!("{}@{}", self.w.account.imap.username, self.w.account.imap.host) }));
                    Some(LOGIN_RETRY)
                }
                Err(e) => {
                    let e = e.to_string();
                    log::warn!("{}: {e}", self.name());
                    self.lost(&mut outage, &e);
                    let wait = jitter(backoff);
                    backoff = (backoff * 2).min(BACKOFF_MAX);
                    Some(wait)
                }
            };
            if let Some(wait) = wait {
                if !self.sleep_for_commands(wait) {
                    break;
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
            let host = &self.w.account.imap;
            self.emit(
                EventKind::ConnectionLost,
                json!({
                    "error": e, "details": format!("{}:{}", host.host, host.port()),
                }),
            );
        }
    }

    /// Waits up to `wait` while disconnected. Returns false on shutdown;
    /// returns early when a command asks for a connection now.
    fn sleep_for_commands(&mut self, wait: Duration) -> bool {
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
                    return true;
                }
                Ok(Command::Pause) => {}
                Err(crossbeam_channel::RecvTimeoutError::Timeout) => return true,
                Err(crossbeam_channel::RecvTimeoutError::Disconnected) => return false,
            }
        }
    }

    fn connect(&self) -> Result<(Session, TcpStream, Caps, Folders), ImapError> {
        let c = &self.w.account.imap;
        let addr = (c.host.as_str(), c.port())
            .to_socket_addrs()
            .map_err(|e| ImapError::Connect(format!("{}:{}: {e}", c.host, c.port())))?
            .next()
            .ok_or_else(|| ImapError::Connect(format!("{}: no address", c.host)))?;
        let tcp = TcpStream::connect_timeout(&addr, CONNECT_TIMEOUT)
            .map_err(|e| ImapError::Connect(format!("{addr}: {e}")))?;
        tcp.set_read_timeout(Some(COMMAND_TIMEOUT))?;
        tcp.set_write_timeout(Some(COMMAND_TIMEOUT))?;
        let _ = tcp.set_nodelay(true);
        let sock = tcp.try_clone()?;
        let tls = || -> Result<native_tls::TlsConnector, ImapError> {
            let mut b = native_tls::TlsConnector::builder();
            if let Some(ca) = &c.ca_file {
                let pem = std::fs::read(ca)
                    .map_err(|e| ImapError::Connect(format!("ca_file {}: {e}", ca.display())))?;
                let cert = native_tls::Certificate::from_pem(&pem)
                    .map_err(|e| ImapError::Connect(format!("ca_file {}: {e}", ca.display())))?;
                b.add_root_certificate(cert);
            }
            b.build()
                .map_err(|e| ImapError::Connect(format!("TLS setup: {e}")))
        };
        let client = match c.security {
            Security::Tls => {
                let s = tls()?.connect(&c.host, tcp).map_err(|e| {
                    ImapError::Connect(format!("TLS handshake with {}: {e}", c.host))
                })?;
                let mut client = imap::Client::new(Stream::Tls(Box::new(s)));
                client.read_greeting()?;
                client
            }
            Security::None => {
                let mut client = imap::Client::new(Stream::Plain(tcp));
                client.read_greeting()?;
                client
            }
            Security::Starttls => {
                let tcp = starttls(tcp)
                    .map_err(|e| ImapError::Connect(format!("STARTTLS with {}: {e}", c.host)))?;
                let s = tls()?.connect(&c.host, tcp).map_err(|e| {
                    ImapError::Connect(format!("STARTTLS handshake with {}: {e}", c.host))
                })?;
                imap::Client::new(Stream::Tls(Box::new(s)))
            }
        };
        let mut session = client
            .login(&c.username, &c.password)
            .map_err(|(e, _)| match e {
                imap::Error::No(_) | imap::Error::Bad(_) => ImapError::Login(e.to_string()),
                other => ImapError::Session(other.to_string()),
            })?;
        // Capabilities may change after login (RFC 3501 §6.2.3).
        let caps = session.capabilities()?;
        let caps = Caps {
            idle: caps.has_str("IDLE"),
            mv: caps.has_str("MOVE"),
            uidplus: caps.has_str("UIDPLUS"),
        };
        let folders = list_folders(&mut session)?;
        log::info!(
            "{}: connected to {}:{} (idle={}, move={}, uidplus={})",
            self.name(),
            c.host,
            c.port(),
            caps.idle,
            caps.mv,
            caps.uidplus
        );
        Ok((session, sock, caps, folders))
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

    fn serve(
        &mut self,
        s: &mut Session,
        sock: &TcpStream,
        caps: &Caps,
        folders: &Folders,
    ) -> Result<Exit, ImapError> {
        // The first pass after connecting always runs (unless paused): mail
        // may have arrived while we were away.
        let mut pass = true;
        loop {
            if let Some(exit) = self.take_commands() {
                return Ok(exit);
            }
            let force = std::mem::take(&mut self.force_pass);
            if force || (pass && !self.w.handle.is_paused()) {
                self.w.handle.set_state(State::Processing);
                crate::failpoint::hit("account-pass");
                for mailbox in self.w.account.folders.watch.clone() {
                    if let Some(exit) = self.process_folder(s, caps, folders, &mailbox)? {
                        return Ok(exit);
                    }
                }
            }
            self.w.handle.set_state(if self.w.handle.is_paused() {
                State::Paused
            } else {
                State::Connected
            });

            let mut timeout = IDLE_MAX;
            if !caps.idle || self.w.account.folders.watch.len() > 1 {
                timeout = timeout.min(self.w.account.poll_interval.0);
            }
            if let Ok(Some(at)) = self.w.store.next_retry_at(self.name()) {
                let due = Duration::from_millis((at - now_ms()).max(0) as u64);
                timeout = timeout.min(due.max(Duration::from_millis(200)));
            }
            // IDLE needs its folder selected; if it is missing, poll instead.
            let idle = caps.idle
                && match s.select(&self.w.account.folders.watch[0]) {
                    Ok(_) => true,
                    Err(imap::Error::No(_) | imap::Error::Bad(_)) => false,
                    Err(e) => return Err(e.into()),
                };
            if !idle {
                timeout = timeout.min(self.w.account.poll_interval.0);
            }
            if idle {
                self.w.handle.set_idle_socket(Some(sock.try_clone()?));
                // A command that arrived before the socket was published
                // could not wake us; look once more before blocking.
                if !self.w.commands.is_empty() || self.w.handle.is_shutting_down() {
                    self.w.handle.set_idle_socket(None);
                    pass = false;
                    continue;
                }
                let r = s
                    .idle()
                    .timeout(timeout)
                    .keepalive(false)
                    .wait_while(|resp| {
                        !matches!(resp, imap::types::UnsolicitedResponse::Exists(_))
                    });
                self.w.handle.set_idle_socket(None);
                r?;
                sock.set_read_timeout(Some(COMMAND_TIMEOUT))?;
            } else {
                match self.w.commands.recv_timeout(timeout) {
                    Ok(cmd) => self.queued.push(cmd),
                    Err(crossbeam_channel::RecvTimeoutError::Timeout) => {}
                    Err(crossbeam_channel::RecvTimeoutError::Disconnected) => {
                        return Ok(Exit::Shutdown)
                    }
                }
                // Keep the connection alive and learn of new mail.
                s.noop()?;
            }
            pass = true;
        }
    }

    /// Processes new (and due) messages of one watched folder.
    fn process_folder(
        &mut self,
        s: &mut Session,
        caps: &Caps,
        folders: &Folders,
        mailbox: &str,
    ) -> Result<Option<Exit>, ImapError> {
        let mb = match s.select(mailbox) {
            Ok(mb) => mb,
            // A watched folder that is missing (deleted, renamed, not yet
            // created) is that folder's problem, not the connection's: the
            // other folders go on and this one is tried again next pass.
            Err(e @ (imap::Error::No(_) | imap::Error::Bad(_))) => {
                let msg = format!("cannot open watched folder {mailbox:?}: {e}");
                log::warn!("{}: {msg}", self.name());
                self.w.handle.set_error(Some(msg));
                self.count_error("folder");
                return Ok(None);
            }
            Err(e) => return Err(e.into()),
        };
        let uidvalidity = mb.uid_validity.unwrap_or(0);
        let uid_next = mb.uid_next.unwrap_or(1);
        let account = self.name().to_string();
        let last = match self.w.store.folder_state(&account, mailbox)? {
            Some((v, last)) if v == uidvalidity => last,
            Some((v, _)) => {
                let w = uid_next.saturating_sub(1);
                log::warn!(
                    "{account}: {mailbox}: UIDVALIDITY changed from {v} to {uidvalidity}; \
                     starting after UID {w} instead of reprocessing the mailbox"
                );
                self.w
                    .store
                    .set_folder_state(&account, mailbox, uidvalidity, w)?;
                w
            }
            None => {
                let w = self.initial_watermark(s, mb.exists, uid_next)?;
                log::info!(
                    "{account}: {mailbox}: first sight, backlog {:?} starts after UID {w}",
                    self.w.account.backlog
                );
                self.w
                    .store
                    .set_folder_state(&account, mailbox, uidvalidity, w)?;
                w
            }
        };
        let mut uids: BTreeSet<u32> = BTreeSet::new();
        if mb.exists > 0 && uid_next > last + 1 {
            uids.extend(
                s.uid_search(format!("UID {}:*", last + 1))?
                    .into_iter()
                    .filter(|u| *u > last),
            );
        }
        let mut known: HashMap<u32, KnownEmail> = HashMap::new();
        let now = now_ms();
        for k in self
            .w
            .store
            .known_emails(&account, mailbox, uidvalidity, last)?
        {
            match k.status.as_str() {
                status::PENDING => {
                    uids.insert(k.uid);
                }
                status::RETRYING if k.next_attempt_at.is_none_or(|t| t <= now) => {
                    uids.insert(k.uid);
                }
                _ => {
                    uids.remove(&k.uid);
                }
            }
            known.insert(k.uid, k);
        }
        let uids: Vec<u32> = uids.into_iter().collect();
        for chunk in uids.chunks(BATCH) {
            self.process_batch(s, caps, folders, mailbox, uidvalidity, chunk, &mut known)?;
            if self.w.handle.is_shutting_down() {
                return Ok(Some(Exit::Shutdown));
            }
            if self.w.handle.is_paused() && !self.force_pass {
                break;
            }
            if let Some(exit) = self.take_commands() {
                return Ok(Some(exit));
            }
        }
        Ok(None)
    }

    fn initial_watermark(
        &self,
        s: &mut Session,
        exists: u32,
        uid_next: u32,
    ) -> Result<u32, ImapError> {
        let all = |s: &mut Session| -> Result<Vec<u32>, ImapError> {
            if exists == 0 {
                return Ok(Vec::new());
            }
            let mut v: Vec<u32> = s.uid_search("ALL")?.into_iter().collect();
            v.sort_unstable();
            Ok(v)
        };
        Ok(match self.w.account.backlog {
            Backlog::NewOnly => uid_next.saturating_sub(1),
            Backlog::All => 0,
            Backlog::Recent(n) => {
                let v = all(s)?;
                let n = n as usize;
                if v.len() <= n {
                    0
                } else {
                    v[v.len() - n - 1]
                }
            }
            Backlog::Since(d) => {
                let since = time::OffsetDateTime::now_utc() - d;
                let fmt = time::macros::format_description!("[day]-[month repr:short]-[year]");
                let date = since.format(fmt).unwrap_or_else(|_| "01-Jan-1970".into());
                let found: Vec<u32> = if exists == 0 {
                    Vec::new()
                } else {
                    s.uid_search(format!("SINCE {date}"))?.into_iter().collect()
                };
                match found.iter().min() {
                    Some(min) => min - 1,
                    None => uid_next.saturating_sub(1),
                }
            }
        })
    }

    fn meta(&self, mailbox: &str, uidvalidity: u32, uid: u32, e: Option<&Email>) -> EmailMeta {
        EmailMeta {
            account: self.name().to_string(),
            mailbox: mailbox.to_string(),
            uidvalidity,
            uid,
            message_id: e.map(|e| e.message_id.clone()).unwrap_or_default(),
            subject: e.map(|e| e.subject.clone()).unwrap_or_default(),
            from: e.map(|e| e.from.clone()).unwrap_or_default(),
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn process_batch(
        &mut self,
        s: &mut Session,
        caps: &Caps,
        folders: &Folders,
        mailbox: &str,
        uidvalidity: u32,
        uids: &[u32],
        known: &mut HashMap<u32, KnownEmail>,
    ) -> Result<(), ImapError> {
        let max = self.w.account.max_message_bytes;
        let fetched = s.uid_fetch(uid_set(uids), format!("(UID BODY.PEEK[]<0.{max}>)"))?;
        let mut bodies: HashMap<u32, Vec<u8>> = HashMap::new();
        for f in fetched.iter() {
            if let (Some(uid), Some(body)) = (f.uid, f.body()) {
                bodies.insert(uid, body.to_vec());
            }
        }
        drop(fetched);

        // Decide: journalled decision, rules, or the model pool.
        let mut items: Vec<Item> = Vec::with_capacity(uids.len());
        let (reply_tx, reply_rx) = crossbeam_channel::unbounded();
        let mut waiting = 0;
        for &uid in uids {
            let k = known.remove(&uid);
            let Some(raw) = bodies.remove(&uid) else {
                // Gone between SEARCH and FETCH, or moved by us before a crash.
                match k {
                    Some(k) if k.status == status::PENDING => {
                        log::info!(
                            "{}: UID {uid} was already moved before a restart; recording it",
                            self.name()
                        );
                        items.push(Item {
                            meta: self.meta(mailbox, uidvalidity, uid, None),
                            decision: Some(journalled(&k)),
                            error: None,
                            duration: Duration::ZERO,
                            journalled: true,
                            gone: true,
                        });
                    }
                    Some(k) if k.status == status::RETRYING => {
                        let meta = self.meta(mailbox, uidvalidity, uid, None);
                        self.w.store.record_failure(
                            &meta,
                            "the message left the mailbox before it could be processed",
                            1,
                            0,
                        )?;
                    }
                    _ => {}
                }
                continue;
            };
            let started = Instant::now();
            let email = Email::parse(&raw);
            let meta = self.meta(mailbox, uidvalidity, uid, email.as_ref());
            let mut item = Item {
                meta,
                decision: None,
                error: None,
                duration: Duration::ZERO,
                journalled: false,
                gone: false,
            };
            match (k, email) {
                (Some(k), _) if k.status == status::PENDING => {
                    item.decision = Some(journalled(&k));
                    item.journalled = true;
                }
                (_, None) => {
                    item.error = Some((
                        "the message could not be parsed as RFC 822".into(),
                        "parse",
                        true,
                    ));
                }
                (_, Some(email)) => {
                    if let Some(c) = self.rules.classify(&email) {
                        item.decision = Some(c);
                        item.duration = started.elapsed();
                    } else if let Some(p) = &self.w.provider {
                        self.w.pool.submit(Job {
                            provider: p.clone(),
                            account: self.w.account.clone(),
                            email: Arc::new(email),
                            index: items.len(),
                            reply: reply_tx.clone(),
                        });
                        waiting += 1;
                    } else {
                        item.decision = Some(Classification {
                            actions: Vec::new(),
                            reasoning: "no rule matched and no model is configured".into(),
                            model: "none".into(),
                            confidence: None,
                        });
                        item.duration = started.elapsed();
                    }
                }
            }
            items.push(item);
        }
        drop(reply_tx);
        for _ in 0..waiting {
            let Ok((i, result, took)) = reply_rx.recv() else {
                break;
            };
            items[i].duration = took;
            match result {
                Ok(c) => items[i].decision = Some(c),
                Err(e) => items[i].error = Some((e.to_string(), e.kind(), false)),
            }
        }
        // Every message leaves this batch decided or failed: one the pool
        // never answered (it cannot happen, but a skipped message is the one
        // failure this worker must never have) is a failed attempt.
        for it in items.iter_mut() {
            if it.decision.is_none() && it.error.is_none() {
                it.error = Some((
                    "the classifier gave no answer".into(),
                    "classify_no_answer",
                    false,
                ));
            }
        }

        // Plan: what each decided message needs on the server.
        let dry_run = self.w.account.dry_run;
        let min_conf = self.w.account.minimum_confidence;
        let mut outcomes: Vec<Option<Outcome>> = Vec::with_capacity(items.len());
        for it in &items {
            let Some(d) = &it.decision else {
                outcomes.push(None);
                continue;
            };
            let st = if dry_run {
                status::DRY_RUN
            } else if min_conf.is_some_and(|m| d.confidence.is_some_and(|c| c < m)) {
                status::REVIEW
            } else {
                status::OK
            };
            outcomes.push(Some(Outcome {
                status: st,
                actions: d.actions.clone(),
                model: d.model.clone(),
                reasoning: d.reasoning.clone(),
                confidence: d.confidence,
                ..Default::default()
            }));
        }
        let journal: Vec<(EmailMeta, Outcome)> = items
            .iter()
            .zip(&outcomes)
            .filter_map(|(it, o)| {
                o.as_ref()
                    .filter(|o| o.status == status::OK && !o.actions.is_empty() && !it.journalled)
                    .map(|o| (it.meta.clone(), o.clone()))
            })
            .collect();
        if !journal.is_empty() {
            self.w.store.record_pending(&journal)?;
        }

        // Act: flags first, moves last, one command per flag set and folder.
        let mut flag_sets: BTreeMap<Vec<String>, Vec<u32>> = BTreeMap::new();
        let mut moves: BTreeMap<String, Vec<u32>> = BTreeMap::new();
        for (it, o) in items.iter().zip(&outcomes) {
            let Some(o) = o else { continue };
            if it.gone {
                continue;
            }
            let uid = it.meta.uid;
            let mut flags: BTreeSet<String> = BTreeSet::new();
            let mut dest = None;
            match o.status {
                status::OK => {
                    for a in &o.actions {
                        match a {
                            Action::Read => {
                                flags.insert("\\Seen".into());
                            }
                            Action::Flag { flags: f } => flags.extend(f.iter().cloned()),
                            Action::Move { folder } => dest = Some(folder.clone()),
                            Action::Spam => dest = Some(folders.junk.clone()),
                            Action::Trash => dest = Some(folders.trash.clone()),
                            Action::Noop => {}
                        }
                    }
                }
                status::REVIEW => {
                    if let Some(f) = &self.w.account.review_flag {
                        flags.insert(f.clone());
                    }
                }
                _ => {}
            }
            if !flags.is_empty() {
                flag_sets
                    .entry(flags.into_iter().collect())
                    .or_default()
                    .push(uid);
            }
            if let Some(d) = dest {
                moves.entry(d).or_default().push(uid);
            }
        }
        let mut failed: HashMap<u32, String> = HashMap::new();
        for (flags, set) in &flag_sets {
            if let Err(e) =
                s.uid_store(uid_set(set), format!("+FLAGS.SILENT ({})", flags.join(" ")))
            {
                let e = session_fatal(e)?;
                for u in set {
                    failed.insert(*u, format!("setting flags {} failed: {e}", flags.join(" ")));
                }
            }
        }
        let mut created: HashSet<String> = HashSet::new();
        for (folder, set) in &moves {
            let set: Vec<u32> = set
                .iter()
                .copied()
                .filter(|u| !failed.contains_key(u))
                .collect();
            if set.is_empty() {
                continue;
            }
            if let Err(e) = self.move_uids(s, caps, folders, &mut created, &set, folder, mailbox) {
                for u in &set {
                    failed.insert(*u, e.clone());
                }
            }
        }

        // Record: one transaction for the batch and the watermark.
        let mut finals: Vec<(EmailMeta, Outcome)> = Vec::new();
        let mut done: Vec<usize> = Vec::new();
        for (i, (it, o)) in items.iter().zip(outcomes).enumerate() {
            let Some(o) = o else { continue };
            if failed.contains_key(&it.meta.uid) {
                continue;
            }
            finals.push((it.meta.clone(), o));
            done.push(i);
        }
        // Failed attempts go into the same transaction as the watermark, so
        // the watermark never passes a message that has no row.
        let delay = self.w.account.retry_delay.0;
        let mut failures: Vec<(crate::store::FailedAttempt, &'static str)> = Vec::new();
        for it in &items {
            let (msg, kind, permanent) = match (&it.error, failed.get(&it.meta.uid)) {
                (Some((m, k, p)), _) => (m.clone(), *k, *p),
                (None, Some(m)) => (m.clone(), "imap", false),
                _ => continue,
            };
            failures.push((
                crate::store::FailedAttempt {
                    meta: it.meta.clone(),
                    error: msg,
                    max_attempts: if permanent {
                        1
                    } else {
                        self.w.account.max_attempts
                    },
                    retry_delay_ms: i64::try_from(delay.as_millis()).unwrap_or(i64::MAX),
                },
                kind,
            ));
        }
        let high = *uids.iter().max().unwrap_or(&0);
        let attempts: Vec<_> = failures.iter().map(|(f, _)| f.clone()).collect();
        let (_, recorded) = self.w.store.record_batch(
            &finals,
            &attempts,
            Some((self.name(), mailbox, uidvalidity, high)),
        )?;
        crate::failpoint::hit("after-batch-commit");

        for ((meta, o), i) in finals.iter().zip(&done) {
            let it = &items[*i];
            self.w
                .metrics
                .emails_processed
                .with_label_values(&[self.name()])
                .inc();
            if !it.duration.is_zero() {
                self.w
                    .metrics
                    .classification_duration
                    .observe(it.duration.as_secs_f64());
            }
            let mut payload = json!({
                "subject": meta.subject, "from": meta.from, "actions": o.actions,
                "model": o.model, "reasoning": o.reasoning,
            });
            if o.status == status::DRY_RUN {
                payload["dry_run"] = json!(true);
            }
            if o.status == status::REVIEW {
                payload["review"] = json!(true);
                payload["confidence"] = json!(o.confidence);
            }
            self.emit(EventKind::EmailProcessed, payload);
            if o.status == status::OK {
                for a in &o.actions {
                    self.w
                        .metrics
                        .actions
                        .with_label_values(&[self.name(), a.kind().as_str()])
                        .inc();
                    self.emit(
                        EventKind::ActionTaken,
                        json!({
                            "action": a, "subject": meta.subject, "from": meta.from,
                        }),
                    );
                }
            }
        }
        if !finals.is_empty() {
            self.w.handle.mark_processed();
        }

        // Failures: already recorded; counted, logged, announced.
        for ((f, kind), r) in failures.iter().zip(&recorded) {
            let (m, n, st) = (&f.meta, r.attempts, r.status);
            self.count_error(kind);
            log::warn!(
                "{}: {mailbox} UID {} ({}): {} (attempt {n}, {st})",
                self.name(),
                m.uid,
                m.message_id,
                f.error
            );
            self.emit(EventKind::Error, json!({
                "error": f.error,
                "details": format!("{mailbox} UID {} {} subject {:?}: attempt {n} of {}, now {st}", m.uid, m.message_id, m.subject, f.max_attempts),
            }));
        }
        Ok(())
    }

    #[allow(clippy::too_many_arguments)]
    fn move_uids(
        &self,
        s: &mut Session,
        caps: &Caps,
        folders: &Folders,
        created: &mut HashSet<String>,
        set: &[u32],
        folder: &str,
        from: &str,
    ) -> Result<(), String> {
        if !folders.existing.contains(folder) && !created.contains(folder) {
            if !self.w.account.folders.create {
                return Err(format!(
                    "folder {folder:?} does not exist and folders.create is false"
                ));
            }
            match s.create(folder) {
                Ok(()) => log::info!("{}: created folder {folder:?}", self.name()),
                // Another client may have created it meanwhile; MOVE will tell.
                Err(e) => log::debug!("{}: CREATE {folder:?}: {e}", self.name()),
            }
            created.insert(folder.to_string());
        }
        let set_s = uid_set(set);
        if caps.mv {
            return s
                .uid_mv(&set_s, folder)
                .map_err(|e| format!("moving to {folder:?} failed: {e}"));
        }
        s.run_command_and_check_ok(format!("UID COPY {set_s} {}", quote(folder)))
            .map_err(|e| format!("copying to {folder:?} failed: {e}"))?;
        s.uid_store(&set_s, "+FLAGS.SILENT (\\Deleted)")
            .map_err(|e| format!("marking moved messages in {from:?} failed: {e}"))?;
        if caps.uidplus {
            s.uid_expunge(&set_s)
                .map_err(|e| format!("expunging moved messages from {from:?} failed: {e}"))?;
        } else {
            log::warn!(
                "{}: server lacks MOVE and UIDPLUS: copied to {folder:?} and marked \\Deleted in {from:?}, \
                 but not expunged (a plain EXPUNGE could remove mail the user marked)",
                self.name()
            );
        }
        Ok(())
    }

    fn emit(&self, kind: EventKind, fields: serde_json::Value) {
        self.w.webhooks.emit(kind, self.name(), fields);
    }

    fn count_error(&self, kind: &str) {
        self.w
            .metrics
            .errors
            .with_label_values(&[self.name(), kind])
            .inc();
    }
}

/// Upgrades a fresh plain connection (RFC 3501 §6.2.1): reads the greeting,
/// asks for STARTTLS and waits for its OK. The imap crate offers this only
/// with its own TLS settings, which cannot take our `ca_file`.
fn starttls(mut tcp: TcpStream) -> std::io::Result<TcpStream> {
    fn line(tcp: &mut TcpStream) -> std::io::Result<String> {
        // Byte by byte: nothing after the OK may be swallowed, the TLS
        // handshake starts right there.
        let mut out = Vec::new();
        let mut b = [0u8; 1];
        while !out.ends_with(b"\r\n") {
            if tcp.read(&mut b)? == 0 {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::UnexpectedEof,
                    "server closed the connection",
                ));
            }
            out.push(b[0]);
            if out.len() > 8192 {
                return Err(std::io::Error::other("line too long"));
            }
        }
        Ok(String::from_utf8_lossy(&out).into_owned())
    }
    let greeting = line(&mut tcp)?;
    if !greeting.starts_with("* OK") {
        return Err(std::io::Error::other(format!(
            "unexpected greeting {:?}",
            greeting.trim()
        )));
    }
    tcp.write_all(b"m0 STARTTLS\r\n")?;
    loop {
        let l = line(&mut tcp)?;
        if l.starts_with("m0 OK") {
            return Ok(tcp);
        }
        if l.starts_with("m0 ") {
            return Err(std::io::Error::other(format!(
                "server refused: {}",
                l.trim()
            )));
        }
    }
}

/// A NO or BAD answer concerns the command; anything else (I/O, parse) means
/// the session is broken and must be rebuilt.
fn session_fatal(e: imap::Error) -> Result<String, ImapError> {
    match e {
        imap::Error::No(_) | imap::Error::Bad(_) => Ok(e.to_string()),
        other => Err(other.into()),
    }
}

fn list_folders(s: &mut Session) -> Result<Folders, ImapError> {
    let names = s.list(Some(""), Some("*"))?;
    let mut f = Folders {
        existing: HashSet::new(),
        junk: "Junk".into(),
        trash: "Trash".into(),
    };
    let mut junk = None;
    let mut trash = None;
    for n in names.iter() {
        f.existing.insert(n.name().to_string());
        for a in n.attributes() {
            match a {
                imap_proto::NameAttribute::Junk => junk = Some(n.name().to_string()),
                imap_proto::NameAttribute::Trash => trash = Some(n.name().to_string()),
                _ => {}
            }
        }
    }
    if let Some(j) = junk {
        f.junk = j;
    }
    if let Some(t) = trash {
        f.trash = t;
    }
    Ok(f)
}

/// `1:3,5,7:9` from sorted or unsorted UIDs.
pub fn uid_set(uids: &[u32]) -> String {
    let mut v = uids.to_vec();
    v.sort_unstable();
    v.dedup();
    let mut out = String::new();
    let mut i = 0;
    while i < v.len() {
        let start = v[i];
        let mut end = start;
        while i + 1 < v.len() && v[i + 1] == end + 1 {
            i += 1;
            end = v[i];
        }
        if !out.is_empty() {
            out.push(',');
        }
        if start == end {
            out.push_str(&start.to_string());
        } else {
            out.push_str(&format!("{start}:{end}"));
        }
        i += 1;
    }
    out
}

fn quote(s: &str) -> String {
    format!("\"{}\"", s.replace('\\', "\\\\").replace('"', "\\\""))
}

/// Up to a quarter more, so many accounts do not reconnect in lockstep.
fn jitter(d: Duration) -> Duration {
    let r = crate::auth::random_bytes::<1>()[0] as u32;
    d + d * r / 1024
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uid_sets_compress_runs() {
        assert_eq!(uid_set(&[5, 1, 2, 3, 9, 7, 8]), "1:3,5,7:9");
        assert_eq!(uid_set(&[4]), "4");
        assert_eq!(uid_set(&[]), "");
        assert_eq!(quote("a \"b\\"), "\"a \\\"b\\\\\"");
    }
}
