//! Outgoing webhooks: one dispatcher thread fed by a bounded channel; the
//! events and their payloads (`event`), the SSRF guard (`ssrf`), Standard
//! Webhooks signing (`sign`) and the pinned HTTP client (`client`) live
//! beside it.
//!
//! Producers (account workers) call [`Webhooks::emit`], which only stamps the
//! payload and queues it for each target that wants it (global `webhooks`
//! plus the emitting account's own): it never blocks and never touches the
//! network, so a slow or dead target cannot slow mail processing. Each
//! target has its own bounded queue ([`lanes`]); when a target's is full
//! the event is dropped for that target, counted in
//! `mailproc_webhook_dropped_total` and logged. The thread named `webhooks`
//! delivers one event at a time, taking turns among the targets by the
//! time their deliveries take, once, with no retries (SPEC §6), and records
//! every outcome in the store and in
//! `mailproc_webhook_deliveries_total{event,outcome}`. A target that gives
//! no answer (a time-out, a refused connection) is not asked again for a
//! while ([`Quiet`]: 10 s, doubling to 5 min while it stays silent): its
//! events meanwhile are recorded as `skipped`, not attempted. A target that
//! answers slowly is asked, and the others are served between its
//! requests.
//!
//! Every request leaves through [`vet`], the one SSRF guard, used by
//! deliveries and by the test endpoint alike. It parses the URL the WHATWG way
//! (so `127.1`, `2130706433` and `0x7f000001` are already `127.0.0.1`),
//! resolves the host once, and refuses when any address is local, private,
//! link-local, CGNAT, multicast or reserved, or an IPv6 form of such an IPv4
//! address, unless `webhook_settings.allow_private` covers it. The request
//! then connects only to the vetted addresses (a ureq resolver pinned to
//! them), so a second DNS answer cannot redirect it (DNS rebinding);
//! redirects are not followed (a 3xx is reported as that status) and proxy
//! variables are ignored. `localhost` and `*.localhost` count as loopback
//! without a lookup (RFC 6761).
//!
//! Signing: an entry with a `secret` is signed the Standard Webhooks way
//! (`webhook-id`, `webhook-timestamp`, `webhook-signature: v1,<base64>`).
//! A secret written `whsec_<base64>` (the form Standard Webhooks libraries
//! generate and verify with) uses the decoded bytes as the HMAC key; any other
//! secret is used as its raw UTF-8 bytes.
//!
//! Shutdown: [`Webhooks::shutdown`] closes the queue; the thread delivers what
//! was queued for up to 5 s (a request in flight at the deadline is
//! interrupted), notes how many deliveries it skipped, and exits.

mod client;
mod event;
mod lanes;
mod quiet;
mod sign;
mod ssrf;

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::net::IpAddr;
use std::sync::atomic::{AtomicI64, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, Sender};
use parking_lot::{Mutex, RwLock};

use crate::config::{Config, EventKind, WebhookConfig};
use crate::metrics::Metrics;
use crate::store::Store;

use client::Client;
use event::cap_strings;
pub use event::{Event, MAX_FIELD_CHARS};
pub use sign::{check_headers, header, request_headers, sign, signing_key, BadHeader};
pub use ssrf::{blocked_reason, check_addrs, parse_url, vet, vet_with, AllowList, Lookup, Vetted};

/// The refusal text of SPEC §7, word for word.
pub const SSRF_MESSAGE: &str = "Cannot test webhooks to private or local addresses";

use lanes::{Entry, Full, Lanes};
pub use lanes::{QUEUE_BYTES, QUEUE_SIZE, TOTAL_BYTES};
use quiet::Quiet;

/// How long queued events are still delivered after shutdown begins.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);

/// Drop warnings are logged at most this often; the metric counts every one.
const DROP_WARN_EVERY_MS: i64 = 1000;

/// Why a webhook request was not made or got no status back.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum WebhookError {
    /// The URL does not parse, is not http(s) or has no host.
    BadUrl(String),
    /// The host resolves to `addr`, which the SSRF guard blocks.
    Refused {
        host: String,
        addr: IpAddr,
        reason: String,
    },
    /// The host name did not resolve (in time).
    Resolve { host: String, error: String },
    /// A header or the signing secret cannot be used.
    Request(String),
    /// The request was sent or attempted, but no status came back
    /// (connection refused, timeout, TLS failure).
    Transport(String),
}

impl fmt::Display for WebhookError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WebhookError::BadUrl(e) => write!(f, "{e}"),
            WebhookError::Refused { host, addr, reason } => {
                if host == &addr.to_string() {
                    write!(f, "refused: {addr} is {reason}")
                } else {
                    write!(f, "refused: {host} resolves to {addr}, which is {reason}")
                }
            }
            WebhookError::Resolve { host, error } => write!(f, "cannot resolve {host}: {error}"),
            WebhookError::Request(e) => write!(f, "{e}"),
            WebhookError::Transport(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for WebhookError {}

pub enum TestOutcome {
    /// The target resolves to a blocked address.
    Refused,
    /// The URL does not parse or is not http(s).
    BadUrl(String),
    /// A header cannot be sent (its name is not a token, its value holds
    /// CR, LF or another control character); nothing was sent.
    BadHeader(BadHeader),
    /// The target answered with this status.
    Status(u16),
    /// No status came back (connection refused, timeout, TLS error).
    Failed(String),
    /// Another test is in flight ([`TESTS_AT_ONCE`]); nothing was sent.
    Busy,
}

/// Webhook tests in flight at once. A test runs on the HTTP worker that
/// asked for it and may wait the whole `webhook_settings.timeout` on a
/// target that never answers: one at a time keeps the other workers
/// (the API, the dashboard, `/health`) answering whatever targets are
/// tested.
pub const TESTS_AT_ONCE: usize = 1;

/// How long a caller turned away by [`TestOutcome::Busy`] is told to wait
/// (`Retry-After`, seconds).
pub const TEST_RETRY: &str = "5";

/// Who receives what, from the current configuration.
struct Targets {
    global: Vec<Arc<WebhookConfig>>,
    by_account: HashMap<String, Vec<Arc<WebhookConfig>>>,
    timeout: Duration,
    allow: AllowList,
}

impl Targets {
    fn from_config(config: &Config) -> Targets {
        Targets {
            global: config.webhooks.iter().cloned().map(Arc::new).collect(),
            by_account: config
                .accounts
                .iter()
                .filter(|a| !a.webhooks.is_empty())
                .map(|a| {
                    let own = a.webhooks.iter().cloned().map(Arc::new).collect();
                    (a.name.clone(), own)
                })
                .collect(),
            timeout: config.webhook_settings.timeout.0,
            allow: AllowList::new(&config.webhook_settings.allow_private),
        }
    }

    /// Whether any entry sends to `url`.
    fn has(&self, url: &str) -> bool {
        self.urls().any(|u| u == url)
    }

    fn urls(&self) -> impl Iterator<Item = &str> {
        (self.global.iter())
            .chain(self.by_account.values().flatten())
            .map(|t| t.url.as_str())
    }

    /// The entries that want `kind` from `account`, each with which it is
    /// (one URL may be in two entries with their own headers and secrets).
    fn for_event<'a>(&'a self, kind: EventKind, account: &str) -> impl Iterator<Item = Entry> + 'a {
        let own = self
            .by_account
            .get(account)
            .map(Vec::as_slice)
            .unwrap_or_default();
        let entries = |list: &'a [Arc<WebhookConfig>], global: bool| {
            list.iter().enumerate().map(move |(i, t)| {
                let same = |u: &Arc<WebhookConfig>| u.url == t.url;
                Entry {
                    global,
                    as_queued: t.clone(),
                    nth: list[..i].iter().filter(|u| same(u)).count(),
                    of: list.iter().filter(|u| same(u)).count(),
                }
            })
        };
        entries(&self.global, true)
            .chain(entries(own, false))
            .filter(move |e| e.as_queued.wants(kind))
    }

    /// The entry an event queued for `entry` of `account` goes out with
    /// now, if it still wants the event: the same entry if it is still
    /// configured; else, when its list (global, or the account's) has as
    /// many entries with its URL as when it was queued, the one in its
    /// place among them (its headers or secret changed since: a rotated
    /// secret is used); else none (an entry of that URL was added or
    /// removed, and which one it was cannot be told: a third regression
    /// audit found a removed or rotated entry's events sent with another
    /// entry's headers and secret).
    fn current(&self, entry: &Entry, account: &str, kind: EventKind) -> Option<&WebhookConfig> {
        let list = if entry.global {
            &self.global
        } else {
            self.by_account.get(account)?
        };
        let url = &entry.as_queued.url;
        let same_url: Vec<&Arc<WebhookConfig>> = list.iter().filter(|t| &t.url == url).collect();
        let found = same_url
            .iter()
            .find(|t| ****t == *entry.as_queued)
            .or_else(|| {
                (same_url.len() == entry.of)
                    .then(|| same_url.get(entry.nth))
                    .flatten()
            })?;
        found.wants(kind).then_some(&***found)
    }
}

/// What the thread and the handle share.
struct Shared {
    store: Arc<Store>,
    metrics: Arc<Metrics>,
    targets: RwLock<Arc<Targets>>,
    /// Set by `shutdown`: deliveries stop being attempted after it.
    deadline: Mutex<Option<Instant>>,
    /// The events waiting, a queue per target.
    lanes: Mutex<Lanes>,
    /// Events dropped since the last line that said so.
    unlogged_drops: AtomicU64,
    last_drop_warn_ms: AtomicI64,
    /// URLs a reload removed, for the delivery thread to forget their
    /// waits (see `run`).
    removed: Mutex<std::collections::HashSet<String>>,
    /// What the log was told of failing deliveries (see [`Said`]).
    said: Mutex<Said>,
}

/// The log's pace for failing deliveries: at most one line a second for
/// each target, with the count held back, and a line when a target that
/// failed answers again; at most one a second for deliveries the store
/// could not record. A target answering 404 wrote a line an event (150
/// in a second on a backlog), and a full disk 4,046 in 3 s (audits).
#[derive(Default)]
struct Said {
    by_target: std::collections::HashMap<String, crate::logging::LinesPerSecond>,
    /// Failed deliveries to a target since its return was last told.
    failing: std::collections::HashMap<String, u64>,
    /// The pace of each target's "answers again".
    returns: std::collections::HashMap<String, crate::logging::LinesPerSecond>,
    unrecorded: crate::logging::LinesPerSecond,
}

impl Shared {
    /// Logs the drops not yet logged: at most one line a second (a flood
    /// of drops must not flood the log) unless `now_or_never`, as when the
    /// queue closes. Called at each drop and by the delivery thread after
    /// each event, so a burst of drops is told in full once it is over
    /// (an audit found 784 drops logged as "dropped 1").
    fn log_drops(&self, latest: Option<(EventKind, &str, &str, Full)>, now_or_never: bool) {
        if self.unlogged_drops.load(Ordering::Relaxed) == 0 {
            return;
        }
        let now = crate::timestamp::now_ms();
        let last = self.last_drop_warn_ms.load(Ordering::Relaxed);
        if !now_or_never
            && (now - last < DROP_WARN_EVERY_MS
                || self
                    .last_drop_warn_ms
                    .compare_exchange(last, now, Ordering::Relaxed, Ordering::Relaxed)
                    .is_err())
        {
            return;
        }
        let n = self.unlogged_drops.swap(0, Ordering::Relaxed);
        if n == 0 {
            return;
        }
        match latest {
            Some((kind, account, url, full)) => {
                let whose = match full {
                    Full::Target => format!(
                        "for {} ({QUEUE_SIZE} events or {QUEUE_BYTES} bytes waiting for it)",
                        shown_url(url)
                    ),
                    Full::All => format!("({TOTAL_BYTES} bytes waiting for all targets)"),
                };
                log::warn!(
                    "webhooks: delivery queue full {whose}; dropped {n} event(s), the latest {} for {account}",
                    kind.as_str()
                )
            }
            None => log::warn!(
                "webhooks: dropped {n} event(s) since the last warning (a target's delivery queue \
                 full, or a reload removed the entry an event was queued for or took the event \
                 out of its `events`)"
            ),
        }
    }

    /// The timeout for the next request, or `None` once the shutdown grace
    /// period is over.
    fn next_timeout(&self, configured: Duration) -> Option<Duration> {
        match *self.deadline.lock() {
            None => Some(configured),
            Some(d) => d
                .checked_duration_since(Instant::now())
                .filter(|left| !left.is_zero())
                .map(|left| left.min(configured)),
        }
    }

    /// Records one outcome in the store, the metrics and the log.
    fn record(
        &self,
        event: &str,
        url: &str,
        account: Option<&str>,
        result: &Result<u16, WebhookError>,
        took: Duration,
    ) {
        use crate::config::redact_text;
        let outcome = match result {
            Ok(code) if (200..300).contains(code) => "success",
            Ok(_) => "http_error",
            Err(WebhookError::Refused { .. }) => "refused",
            Err(_) => "failed",
        };
        self.metrics
            .webhook_deliveries
            .with_label_values(&[event, outcome])
            .inc();
        let (status, error) = match result {
            Ok(code) => (Some(*code), None),
            Err(e) => (None, Some(redact_text(&e.to_string()))),
        };
        // Stored without the credentials many hook URLs carry.
        let stored = crate::config::redact_url(url);
        if let Err(e) = self.store.record_delivery(
            event,
            outcome,
            &stored,
            account,
            status,
            error.as_deref(),
            took,
        ) {
            self.unrecorded(&e);
        }
        let shown = shown_url(url);
        let who = account.map(|a| format!(" ({a})")).unwrap_or_default();
        let mut said = self.said.lock();
        if outcome == "success" {
            let code = result.as_ref().map_or(0, |c| *c);
            log::debug!("webhooks: {event}{who} to {shown}: {code} in {took:?}");
            // Its return is told at most once a second too (a target
            // that fails every other time wrote two lines a delivery: a
            // regression audit), with every failure since the last such
            // line. Told, it starts the failures' pace again, so a failure
            // right after it is told at once, not held behind a line that
            // says the target is back (the next regression audit).
            if said.failing.contains_key(url)
                && (said.returns.entry(url.to_string()).or_default())
                    .admit(Instant::now())
                    .is_some()
            {
                let n = said.failing.remove(url).unwrap_or_default();
                said.by_target.remove(url);
                log::info!(
                    "webhooks: {shown} answers again ({n} delivery(ies) to it failed before)"
                );
            }
            return;
        }
        *said.failing.entry(url.to_string()).or_default() += 1;
        let Some(held) = said
            .by_target
            .entry(url.to_string())
            .or_default()
            .admit(Instant::now())
        else {
            return;
        };
        let more = match held {
            0 => String::new(),
            n => format!(" ({n} more failed delivery(ies) to it since the last line)"),
        };
        match result {
            // The target refused it: its address or credentials, which
            // only the configuration mends.
            Ok(code @ 400..=499) => log::warn!(
                "webhooks: {event}{who} to {shown}: answered {code} (check the hook's url, \
                 headers and secret){more}"
            ),
            Ok(code) => log::warn!("webhooks: {event}{who} to {shown}: answered {code}{more}"),
            Err(e) => log::warn!("webhooks: {event}{who} to {shown}: {e}{more}"),
        }
    }

    /// A delivery the store could not record, at most one line a second.
    fn unrecorded(&self, e: &crate::store::StoreError) {
        if let Some(held) = self.said.lock().unrecorded.admit(Instant::now()) {
            let more = match held {
                0 => String::new(),
                n => format!(" ({n} more since the last line)"),
            };
            log::error!("webhooks: recording a delivery failed: {e}{more}");
        }
    }
}

impl Shared {
    /// Records a delivery not attempted because its target is in its wait
    /// after giving no answer ([`Quiet`]): in the store and the metrics,
    /// at debug level in the log (the wait itself was a warning).
    fn record_skip(&self, event: &str, url: &str, account: &str, left: Duration) {
        self.metrics
            .webhook_deliveries
            .with_label_values(&[event, "skipped"])
            .inc();
        let error = format!(
            "not attempted: the target gave no answer to its last attempt; \
             the next attempt in {} s at the earliest",
            left.as_secs().max(1)
        );
        // Not sent is failed, for the count its return tells (it read
        // "1 failed" after 5 skipped; a regression audit).
        *self.said.lock().failing.entry(url.to_string()).or_default() += 1;
        let stored = crate::config::redact_url(url);
        if let Err(e) = self.store.record_delivery(
            event,
            "skipped",
            &stored,
            Some(account),
            None,
            Some(&error),
            Duration::ZERO,
        ) {
            self.unrecorded(&e);
        }
        log::debug!(
            "webhooks: {event} ({account}) to {}: {error}",
            shown_url(url)
        );
    }
}

/// The URL as logged: scheme, host and port only. Many webhook URLs carry
/// their credential in the path (Slack, Discord), and logs travel further
/// than the config file. The delivery log keeps the URL with its
/// credentials masked, as the config API shows it. The rest is marked
/// `/...`, in ASCII: the log's own masking of URLs (`redact_text`) wrote
/// an ellipsis percent-encoded.
fn shown_url(url: &str) -> String {
    match url::Url::parse(url) {
        Ok(u) => {
            let mut s = format!("{}://{}", u.scheme(), u.host_str().unwrap_or(""));
            if let Some(p) = u.port() {
                s.push_str(&format!(":{p}"));
            }
            if u.path() != "/" || u.query().is_some() {
                s.push_str("/...");
            }
            s
        }
        Err(_) => "(invalid URL)".into(),
    }
}

pub struct Webhooks {
    /// Wakes the thread when an event is queued; `None` once shut down:
    /// the queues are closed.
    tx: RwLock<Option<Sender<()>>>,
    shared: Arc<Shared>,
    /// A clone of the delivery agent, so shutdown can interrupt a request
    /// still in flight when the grace period ends.
    agent: ureq::Agent,
    /// Tells the shutdown watchdog that the thread has finished.
    done: Receiver<()>,
    /// Tests in flight ([`TESTS_AT_ONCE`]).
    tests: AtomicUsize,
}

impl Webhooks {
    pub fn start(
        config: &Config,
        store: Arc<Store>,
        metrics: Arc<Metrics>,
    ) -> std::io::Result<(Arc<Webhooks>, JoinHandle<()>)> {
        // One wake-up pending is enough: the thread empties the queues
        // before it sleeps again.
        let (tx, rx) = crossbeam_channel::bounded::<()>(1);
        let (done_tx, done_rx) = crossbeam_channel::bounded::<()>(0);
        metrics.init_webhooks(&crate::config::EventKind::ALL.map(|e| e.as_str()));
        let shared = Arc::new(Shared {
            store,
            metrics,
            targets: RwLock::new(Arc::new(Targets::from_config(config))),
            deadline: Mutex::new(None),
            lanes: Mutex::new(Lanes::default()),
            unlogged_drops: AtomicU64::new(0),
            last_drop_warn_ms: AtomicI64::new(i64::MIN / 2),
            removed: Mutex::new(Default::default()),
            said: Mutex::new(Said::default()),
        });
        let client = Client::new();
        let w = Arc::new(Webhooks {
            tx: RwLock::new(Some(tx)),
            shared: shared.clone(),
            agent: client.agent.clone(),
            done: done_rx,
            tests: AtomicUsize::new(0),
        });
        let h = std::thread::Builder::new()
            .name("webhooks".into())
            .spawn(move || {
                run(rx, &shared, client);
                drop(done_tx);
            })?;
        Ok((w, h))
    }

    /// Replaces the targets, allow-list and timeout (after a config change).
    /// Events already queued go out with their target's new headers and
    /// secret, if it still wants them; a target no longer configured loses
    /// its queue.
    pub fn reload(&self, config: &Config) {
        let targets = Targets::from_config(config);
        let dropped = self.shared.lanes.lock().retain(|url| targets.has(url));
        if dropped > 0 {
            self.shared.metrics.webhook_dropped.inc_by(dropped as u64);
            log::warn!(
                "webhooks: {dropped} queued event(s) for targets no longer configured dropped"
            );
        }
        {
            let mut old = self.shared.targets.write();
            self.shared
                .removed
                .lock()
                .extend((old.urls()).filter(|u| !targets.has(u)).map(str::to_string));
            *old = Arc::new(targets);
        }
    }

    /// Queues `event` of `account`, stamped with `event`, `timestamp` and
    /// `account`, for each target that wants it. Never blocks: a target
    /// whose queue is full loses the event (counted).
    pub fn emit(&self, account: &str, event: Event<'_>) {
        let kind = event.kind();
        // Nobody listens: no payload built, nothing queued, the delivery
        // thread stays asleep (a backlog emits several events per message).
        let targets = self.shared.targets.read().clone();
        if targets.for_event(kind, account).next().is_none() {
            return;
        }
        // The envelope first (JSON objects keep their order), then the
        // event's own fields.
        let mut payload = serde_json::Map::new();
        payload.insert("event".into(), kind.as_str().into());
        payload.insert("timestamp".into(), crate::timestamp::now_iso().into());
        payload.insert("account".into(), account.into());
        for (k, v) in event.fields() {
            payload.entry(k).or_insert(v);
        }
        let mut payload = serde_json::Value::Object(payload);
        cap_strings(&mut payload);
        let body: Arc<str> = Arc::from(payload.to_string());
        let who: Arc<str> = Arc::from(account);
        // Held while queueing, so nothing is queued after `shutdown`.
        let tx = self.tx.read();
        let Some(tx) = tx.as_ref() else {
            log::debug!(
                "webhooks: {} for {account} after shutdown, not sent",
                kind.as_str()
            );
            return;
        };
        let mut full = vec![];
        {
            let mut lanes = self.shared.lanes.lock();
            for entry in targets.for_event(kind, account) {
                let url = entry.as_queued.url.clone();
                if let Err(why) = lanes.push(&url, entry, kind, &who, &body) {
                    full.push((url, why));
                }
            }
        }
        // Full means a wake-up is already pending; disconnected cannot
        // happen while `tx` is held.
        let _ = tx.try_send(());
        for (url, why) in full {
            self.note_drop(kind, account, &url, why);
        }
    }

    fn note_drop(&self, kind: EventKind, account: &str, url: &str, why: Full) {
        self.shared.metrics.webhook_dropped.inc();
        self.shared.unlogged_drops.fetch_add(1, Ordering::Relaxed);
        self.shared
            .log_drops(Some((kind, account, url, why)), false);
    }

    /// Sends a test payload to `url` (SSRF-guarded) and reports the outcome.
    /// Runs on the caller's thread, bounded by `webhook_settings.timeout`,
    /// and records the attempt in the delivery log as event `test`.
    pub fn test(
        &self,
        config: &Config,
        url: &str,
        headers: &BTreeMap<String, String>,
    ) -> TestOutcome {
        /// Counts a test out when it ends, however it ends.
        struct Running<'a>(&'a AtomicUsize);
        impl Drop for Running<'_> {
            fn drop(&mut self) {
                self.0.fetch_sub(1, Ordering::SeqCst);
            }
        }
        // Malformed input, answered 400 before anything is sent or logged,
        // even while another test runs.
        if let Err(e) = check_headers(headers) {
            return TestOutcome::BadHeader(e);
        }
        let settings = &config.webhook_settings;
        let allow = AllowList::new(&settings.allow_private);
        let started = Instant::now();
        // A malformed URL or a refused address literal needs no lookup and
        // no connection: answered even while another test runs (found by
        // an audit: a private target got 429 for 10 s after a slow test).
        match vet_with(url, &allow, &|_, _| Err(String::new())) {
            Err(WebhookError::BadUrl(e)) => return TestOutcome::BadUrl(e),
            Err(e @ WebhookError::Refused { .. }) => {
                self.shared
                    .record("test", url, None, &Err(e), started.elapsed());
                return TestOutcome::Refused;
            }
            _ => {}
        }
        let _running = Running(&self.tests);
        if self.tests.fetch_add(1, Ordering::SeqCst) >= TESTS_AT_ONCE {
            return TestOutcome::Busy;
        }
        let body = serde_json::json!({
            "event": "test",
            "timestamp": crate::timestamp::now_iso(),
            "message": "mailproc test delivery",
        })
        .to_string();
        let result = vet(url, &allow, settings.timeout.0).and_then(|target| {
            let headers = request_headers(headers, None, body.as_bytes())?;
            let left = remaining(settings.timeout.0, started);
            Client::new().send(&target, headers, body.as_bytes(), left, settings.timeout.0)
        });
        if let Err(WebhookError::BadUrl(e)) = &result {
            // Malformed input, answered 400; there was no delivery to log.
            return TestOutcome::BadUrl(e.clone());
        }
        self.shared
            .record("test", url, None, &result, started.elapsed());
        match result {
            Ok(code) => TestOutcome::Status(code),
            Err(WebhookError::Refused { .. }) => TestOutcome::Refused,
            Err(e) => TestOutcome::Failed(e.to_string()),
        }
    }

    /// Closes the queue. The thread delivers what is queued for up to 5 s,
    /// then exits; a request still in flight then is interrupted. Returns at
    /// once; join the thread's handle to wait.
    pub fn shutdown(&self) {
        let Some(tx) = self.tx.write().take() else {
            return; // already shut down; the first deadline stands
        };
        let deadline = Instant::now() + SHUTDOWN_GRACE;
        *self.shared.deadline.lock() = Some(deadline);
        drop(tx);
        let done = self.done.clone();
        let agent = self.agent.clone();
        let watchdog = std::thread::Builder::new()
            .name("webhooks-stop".into())
            .spawn(move || {
                let left = deadline.saturating_duration_since(Instant::now());
                if let Err(crossbeam_channel::RecvTimeoutError::Timeout) = done.recv_timeout(left) {
                    agent.shutdown();
                }
            });
        if let Err(e) = watchdog {
            log::warn!("webhooks: cannot start the shutdown watchdog ({e}); a hanging target may delay exit");
        }
    }
}

/// What is left of `timeout` since `started`: the lookup and the request
/// share one budget, so a slow DNS answer does not double the wait.
fn remaining(timeout: Duration, started: Instant) -> Duration {
    timeout
        .saturating_sub(started.elapsed())
        .max(Duration::from_millis(1))
}

/// The `webhooks` thread: one delivery at a time, the targets taking turns
/// ([`lanes`]), until the queues are closed and empty. A panic while
/// delivering one event (a bug) costs that delivery only: it is logged and
/// counted, and the thread goes on with the next.
fn run(wake: Receiver<()>, shared: &Shared, mut client: Client) {
    let mut skipped = 0u64;
    let mut quiet = Quiet::default();
    // Deliveries recorded since the queues were last empty.
    let mut recorded = false;
    loop {
        // A target a reload removed leaves its wait with it: the map grew
        // with every URL that ever failed, and a target removed and added
        // back (its receiver mended) kept the wait of up to 5 min (a soak
        // audit).
        for url in std::mem::take(&mut *shared.removed.lock()) {
            quiet.forget(&url);
        }
        let next = shared.lanes.lock().pop();
        let Some((url, event)) = next else {
            // A burst delivered: its records go into the database file, or
            // the log is never cut back (see `Store::checkpoint`).
            if std::mem::take(&mut recorded) {
                if let Err(e) = shared.store.checkpoint() {
                    log::warn!("webhooks: {e}");
                }
            }
            // Woken by the next emit, or closed: an emit queues before it
            // wakes, so a closed channel with empty queues is the end.
            if wake.recv().is_err() && shared.lanes.lock().is_empty() {
                break;
            }
            continue;
        };
        let (kind, account) = (event.kind.as_str(), event.account.clone());
        let started = Instant::now();
        let delivered = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            deliver(&url, event, shared, &mut client, &mut skipped, &mut quiet)
        }));
        shared.lanes.lock().charge(&url, started.elapsed());
        recorded = true;
        if let Err(panic) = delivered {
            let msg = crate::failpoint::panic_message(&*panic);
            log::error!("webhooks: delivering {kind} for {account} panicked: {msg}");
            shared
                .metrics
                .errors
                .with_label_values(&[&account, "panic"])
                .inc();
        }
        shared.log_drops(None, false);
    }
    shared.log_drops(None, true);
    if skipped > 0 {
        log::warn!("webhooks: the {SHUTDOWN_GRACE:?} shutdown grace ran out; {skipped} delivery(ies) not attempted");
    }
}

/// Delivers one event to the target at `url`, as the configuration now
/// describes it (its headers and secret); not at all if it no longer wants
/// the event.
fn deliver(
    url: &str,
    event: lanes::Pending,
    shared: &Shared,
    client: &mut Client,
    skipped: &mut u64,
    quiet: &mut Quiet,
) {
    crate::failpoint::hit("webhook-deliver");
    let targets = shared.targets.read().clone();
    let body = event.body;
    let name = event.kind.as_str();
    let Some(target) = targets.current(&event.entry, &event.account, event.kind) else {
        // Its entry was removed, or no longer wants the event, since it was
        // queued: dropped, and counted as such.
        shared.metrics.webhook_dropped.inc();
        shared.unlogged_drops.fetch_add(1, Ordering::Relaxed);
        log::debug!(
            "webhooks: {name} ({}) to {}: its entry is no longer configured or no longer takes \
             this event; dropped",
            event.account,
            shown_url(url)
        );
        return;
    };
    let Some(timeout) = shared.next_timeout(targets.timeout) else {
        *skipped += 1;
        return;
    };
    if let Some(left) = quiet.waiting(url, Instant::now()) {
        shared.record_skip(name, url, &event.account, left);
        return;
    }
    let started = Instant::now();
    let result = vet(url, &targets.allow, timeout).and_then(|vetted| {
        let headers = request_headers(&target.headers, target.secret.as_deref(), body.as_bytes())?;
        let timeout = shared
            .next_timeout(remaining(targets.timeout, started))
            .unwrap_or(Duration::from_millis(1));
        client.send(&vetted, headers, body.as_bytes(), timeout, targets.timeout)
    });
    // A request the shutdown grace cut off is not the target's silence (an
    // audit found it recorded as "Peer disconnected" and the target logged
    // as giving no answer).
    let cut = matches!(result, Err(WebhookError::Transport(_)))
        && shared.next_timeout(targets.timeout).is_none();
    let result = match result {
        Err(WebhookError::Transport(e)) if cut => Err(WebhookError::Transport(format!(
            "cut off by the shutdown, {SHUTDOWN_GRACE:?} after it began ({e})"
        ))),
        other => other,
    };
    shared.record(name, url, Some(&event.account), &result, started.elapsed());
    if !cut {
        quiet.note(url, &result, Instant::now());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shown_url_hides_paths_and_reads_as_logged() {
        let shown = shown_url("https://hooks.slack.com/services/T0/B0/XYZ");
        assert_eq!(shown, "https://hooks.slack.com/...");
        // The log masks URLs in every line once more: unchanged.
        let line = format!("to {shown}: 200");
        assert_eq!(crate::config::redact_text(&line), line);
        assert_eq!(shown_url("http://127.0.0.1:8080/"), "http://127.0.0.1:8080");
    }
}
