//! Outgoing webhooks: the SSRF guard, Standard Webhooks signing, and one
//! dispatcher thread fed by a bounded channel.
//!
//! Producers (account workers) call [`Webhooks::emit`], which only stamps the
//! payload and `try_send`s it: it never blocks and never touches the network,
//! so a slow or dead target cannot slow mail processing. When the queue is
//! full the event is dropped, counted in `mailproc_webhook_dropped_total` and
//! logged. The thread named `webhooks` takes events one at a time and delivers
//! each to every target that wants it (global `webhooks` plus the emitting
//! account's own), once, with no retries (SPEC §6), and records every outcome
//! in the store and in `mailproc_webhook_deliveries_total{event,outcome}`.
//! Deliveries are sequential: one hanging target delays the others by at most
//! `webhook_settings.timeout` per event.
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

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, ToSocketAddrs};
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use crossbeam_channel::{Receiver, Sender, TrySendError};
use hmac::{Hmac, Mac};
use ipnet::IpNet;
use parking_lot::{Mutex, RwLock};
use sha2::Sha256;
use ureq::http::{HeaderName, HeaderValue, Uri};
use ureq::unversioned::resolver::{ResolvedSocketAddrs, Resolver};
use ureq::unversioned::transport::{DefaultConnector, NextTimeout};
use url::{Host, Url};

use crate::config::{Config, EventKind, WebhookConfig};
use crate::metrics::Metrics;
use crate::store::Store;

/// The refusal text of SPEC §7, word for word.
pub const SSRF_MESSAGE: &str = "Cannot test webhooks to private or local addresses";

/// Events waiting for the `webhooks` thread. An event is about 1 KiB, so a
/// full queue holds about 1 MiB. A batch pass over a backlog emits a few
/// events per message in bursts of hundreds; 1024 absorbs such a burst while
/// a healthy target answers in milliseconds. A target that cannot keep up
/// with that will not catch up either, and dropping (counted and logged) is
/// better than memory that grows without bound.
pub const QUEUE_SIZE: usize = 1024;

/// Queued events also may hold at most this many bytes in all: the count
/// above bounds items, this bounds memory (payloads carry mail subjects and
/// model output, whose sizes strangers and models choose).
pub const QUEUE_BYTES: usize = 4 << 20;

/// Longest string in a payload, in characters; longer ones are cut and end
/// with `…`.
pub const MAX_FIELD_CHARS: usize = 2048;

/// How long queued events are still delivered after shutdown begins.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);

/// Response bodies are read (so the connection can be reused) up to this
/// size and ignored; a target cannot make us buffer more.
const MAX_RESPONSE_BYTES: u64 = 64 * 1024;

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
    /// The target answered with this status.
    Status(u16),
    /// No status came back (connection refused, timeout, TLS error).
    Failed(String),
}

// ----------------------------------------------------------------------------
// The SSRF guard
// ----------------------------------------------------------------------------

/// `webhook_settings.allow_private`, parsed: networks (CIDR or bare address)
/// and host names the operator trusts despite the guard.
#[derive(Debug, Clone, Default)]
pub struct AllowList {
    nets: Vec<IpNet>,
    hosts: Vec<String>,
}

impl AllowList {
    /// Parses the entries with [`crate::config::parse_net`]; an entry that is
    /// not an address or CIDR is a host name (config validation has already
    /// rejected anything else).
    pub fn new(entries: &[String]) -> AllowList {
        let mut allow = AllowList::default();
        for e in entries {
            match crate::config::parse_net(e.trim()) {
                Some(net) => allow.nets.push(net),
                None => allow.hosts.push(normalize_host(e)),
            }
        }
        allow
    }

    /// Whether `ip` (or, for an IPv4-mapped IPv6 address, the IPv4 address it
    /// stands for: a socket to it reaches that address) is allowed.
    pub fn covers_ip(&self, ip: IpAddr) -> bool {
        let canonical = ip.to_canonical();
        self.nets
            .iter()
            .any(|n| n.contains(&ip) || n.contains(&canonical))
    }

    pub fn covers_host(&self, host: &str) -> bool {
        let host = normalize_host(host);
        self.hosts.contains(&host)
    }
}

fn normalize_host(h: &str) -> String {
    h.trim().trim_end_matches('.').to_ascii_lowercase()
}

/// Why an outgoing request to `ip` is blocked, or `None` for a public
/// address. Pure: no lookup, no allow-list.
pub fn blocked_reason(ip: IpAddr) -> Option<String> {
    match ip {
        IpAddr::V4(v4) => v4_reason(v4).map(str::to_string),
        IpAddr::V6(v6) => v6_reason(v6),
    }
}

fn v4_reason(ip: Ipv4Addr) -> Option<&'static str> {
    let o = ip.octets();
    Some(match o {
        [0, ..] => "an unspecified (0.0.0.0/8) address",
        [127, ..] => "a loopback address",
        [10, ..] => "a private address",
        [172, b, ..] if (16..=31).contains(&b) => "a private address",
        [192, 168, ..] => "a private address",
        [169, 254, ..] => "a link-local address",
        [100, b, ..] if (64..=127).contains(&b) => "a shared (CGNAT) address",
        [224..=239, ..] => "a multicast address",
        [255, 255, 255, 255] => "the broadcast address",
        [240..=255, ..] => "a reserved address",
        _ => return None,
    })
}

fn v6_reason(ip: Ipv6Addr) -> Option<String> {
    let s = ip.segments();
    if ip.is_unspecified() {
        return Some("the unspecified address".into());
    }
    if ip.is_loopback() {
        return Some("a loopback address".into());
    }
    // IPv6 spellings of an IPv4 address reach (or are translated to) that
    // address, so they are judged by it.
    let embedded =
        |v4: Ipv4Addr, form: &str| v4_reason(v4).map(|r| format!("an {form} form of {v4}, {r}"));
    let low_v4 = Ipv4Addr::new((s[6] >> 8) as u8, s[6] as u8, (s[7] >> 8) as u8, s[7] as u8);
    match s {
        [0, 0, 0, 0, 0, 0xffff, ..] => return embedded(low_v4, "IPv4-mapped"),
        [0, 0, 0, 0, 0, 0, ..] => return embedded(low_v4, "IPv4-compatible"),
        [0x64, 0xff9b, 0, 0, 0, 0, ..] => return embedded(low_v4, "NAT64"),
        [0x64, 0xff9b, 1, ..] => return Some("a local-use NAT64 address".into()),
        [0x2002, hi, lo, ..] => {
            let v4 = Ipv4Addr::new((hi >> 8) as u8, hi as u8, (lo >> 8) as u8, lo as u8);
            return embedded(v4, "6to4");
        }
        _ => {}
    }
    let reason = match s[0] {
        x if x & 0xfe00 == 0xfc00 => "a unique local (private) address",
        x if x & 0xffc0 == 0xfe80 => "a link-local address",
        x if x & 0xffc0 == 0xfec0 => "a site-local (private) address",
        x if x & 0xff00 == 0xff00 => "a multicast address",
        _ => return None,
    };
    Some(reason.into())
}

/// `localhost` and `*.localhost` are loopback by definition (RFC 6761 §6.3):
/// judged without asking DNS.
fn is_localhost_name(host: &str) -> bool {
    let h = normalize_host(host);
    h == "localhost" || h.ends_with(".localhost")
}

/// Checks resolved addresses: refused when any one is blocked and not
/// allowed. An allowed host name admits all of its addresses.
pub fn check_addrs(host: &str, addrs: &[IpAddr], allow: &AllowList) -> Result<(), WebhookError> {
    if allow.covers_host(host) {
        return Ok(());
    }
    for &addr in addrs {
        if let Some(reason) = blocked_reason(addr) {
            if !allow.covers_ip(addr) {
                return Err(WebhookError::Refused {
                    host: host.to_string(),
                    addr,
                    reason,
                });
            }
        }
    }
    Ok(())
}

/// A target that passed the guard: the normalized URL and the only
/// addresses a request to it may connect to.
#[derive(Debug, Clone)]
pub struct Vetted {
    pub url: Url,
    pub addrs: Vec<SocketAddr>,
}

/// Parses a webhook URL: http or https with a host, nothing else.
pub fn parse_url(url: &str) -> Result<Url, WebhookError> {
    let u = Url::parse(url.trim())
        .map_err(|e| WebhookError::BadUrl(format!("invalid URL {url:?}: {e}")))?;
    if u.scheme() != "http" && u.scheme() != "https" {
        return Err(WebhookError::BadUrl(format!(
            "expected an http or https URL, got scheme {:?}",
            u.scheme()
        )));
    }
    if u.host().is_none() || u.port_or_known_default().is_none() {
        return Err(WebhookError::BadUrl(format!("URL {url:?} has no host")));
    }
    Ok(u)
}

/// The SSRF guard: resolves `url`'s host (IP literals and `localhost`
/// without DNS, names within `timeout`) and refuses blocked addresses.
pub fn vet(url: &str, allow: &AllowList, timeout: Duration) -> Result<Vetted, WebhookError> {
    vet_with(url, allow, &|host, port| resolve(host, port, timeout))
}

/// A host name lookup: `(host, port)` to addresses, or why not.
pub type Lookup<'a> = dyn Fn(&str, u16) -> Result<Vec<IpAddr>, String> + 'a;

/// [`vet`] with the name lookup supplied, so the guard can be tested
/// without DNS.
pub fn vet_with(url: &str, allow: &AllowList, lookup: &Lookup<'_>) -> Result<Vetted, WebhookError> {
    let url = parse_url(url)?;
    let port = url.port_or_known_default().unwrap_or(80);
    let (host, ips): (String, Vec<IpAddr>) = match url.host() {
        Some(Host::Ipv4(ip)) => (ip.to_string(), vec![IpAddr::V4(ip)]),
        Some(Host::Ipv6(ip)) => (ip.to_string(), vec![IpAddr::V6(ip)]),
        Some(Host::Domain(d)) if is_localhost_name(d) => (
            d.to_string(),
            vec![Ipv4Addr::LOCALHOST.into(), Ipv6Addr::LOCALHOST.into()],
        ),
        Some(Host::Domain(d)) => {
            let ips = lookup(d, port).map_err(|error| WebhookError::Resolve {
                host: d.to_string(),
                error,
            })?;
            if ips.is_empty() {
                return Err(WebhookError::Resolve {
                    host: d.to_string(),
                    error: "no addresses".into(),
                });
            }
            (d.to_string(), ips)
        }
        None => return Err(WebhookError::BadUrl(format!("URL {url} has no host"))),
    };
    check_addrs(&host, &ips, allow)?;
    let mut addrs: Vec<SocketAddr> = Vec::new();
    for ip in ips {
        let a = SocketAddr::new(ip, port);
        if !addrs.contains(&a) {
            addrs.push(a);
        }
    }
    Ok(Vetted { url, addrs })
}

/// One DNS lookup, bounded by `timeout`: `getaddrinfo` cannot be
/// cancelled, so it runs on a helper thread that is left to finish alone
/// when the answer comes too late.
fn resolve(host: &str, port: u16, timeout: Duration) -> Result<Vec<IpAddr>, String> {
    let (tx, rx) = crossbeam_channel::bounded(1);
    let target = (host.to_string(), port);
    std::thread::Builder::new()
        .name("webhooks-dns".into())
        .spawn(move || {
            let r = target
                .to_socket_addrs()
                .map(|it| it.map(|a| a.ip()).collect::<Vec<_>>())
                .map_err(|e| e.to_string());
            let _ = tx.send(r);
        })
        .map_err(|e| format!("cannot start the lookup: {e}"))?;
    rx.recv_timeout(timeout)
        .unwrap_or_else(|_| Err(format!("no answer within {timeout:?}")))
}

// ----------------------------------------------------------------------------
// Signing (Standard Webhooks)
// ----------------------------------------------------------------------------

/// The HMAC key for an entry's `secret`: the base64-decoded remainder of a
/// `whsec_` secret, otherwise the secret's own bytes.
pub fn signing_key(secret: &str) -> Result<Vec<u8>, String> {
    match secret.strip_prefix("whsec_") {
        Some(b64) => base64::engine::general_purpose::STANDARD
            .decode(b64)
            .map_err(|e| format!("secret: a whsec_ secret must be base64 after the prefix: {e}")),
        None => Ok(secret.as_bytes().to_vec()),
    }
}

/// `v1,<base64 HMAC-SHA256(key, "{id}.{timestamp}.{body}")>`.
pub fn sign(key: &[u8], id: &str, timestamp: i64, body: &[u8]) -> String {
    let mut mac = Hmac::<Sha256>::new_from_slice(key).expect("HMAC takes any key length");
    mac.update(id.as_bytes());
    mac.update(b".");
    mac.update(timestamp.to_string().as_bytes());
    mac.update(b".");
    mac.update(body);
    format!(
        "v1,{}",
        base64::engine::general_purpose::STANDARD.encode(mac.finalize().into_bytes())
    )
}

/// A fresh `webhook-id`: unique per delivery.
fn message_id() -> String {
    let b = crate::auth::random_bytes::<16>();
    format!(
        "msg_{}",
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(b)
    )
}

/// The headers of one request: the configured (or caller's) headers, then
/// `Content-Type` and `User-Agent` unless those name them (in any case),
/// then the signature headers when `secret` is set (they replace any
/// configured header of the same name: a stale copy would fail verification).
pub fn request_headers(
    custom: &BTreeMap<String, String>,
    secret: Option<&str>,
    body: &[u8],
) -> Result<Vec<(HeaderName, HeaderValue)>, WebhookError> {
    let mut out = Vec::with_capacity(custom.len() + 5);
    for (name, value) in custom {
        let n = HeaderName::from_bytes(name.as_bytes())
            .map_err(|_| WebhookError::Request(format!("header {name:?}: invalid name")))?;
        let v = HeaderValue::from_str(value)
            .map_err(|_| WebhookError::Request(format!("header {name}: invalid value")))?;
        out.push((n, v));
    }
    let has = |out: &[(HeaderName, HeaderValue)], n: &HeaderName| out.iter().any(|(k, _)| k == n);
    if !has(&out, &ureq::http::header::CONTENT_TYPE) {
        out.push((
            ureq::http::header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        ));
    }
    if !has(&out, &ureq::http::header::USER_AGENT) {
        out.push((
            ureq::http::header::USER_AGENT,
            HeaderValue::from_static(concat!("mailproc/", env!("CARGO_PKG_VERSION"))),
        ));
    }
    if let Some(secret) = secret {
        let key = signing_key(secret).map_err(WebhookError::Request)?;
        let id = message_id();
        let ts = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_secs() as i64)
            .unwrap_or(0);
        let sig = sign(&key, &id, ts, body);
        let names = ["webhook-id", "webhook-timestamp", "webhook-signature"];
        out.retain(|(k, _)| !names.contains(&k.as_str()));
        for (name, value) in names.into_iter().zip([id, ts.to_string(), sig]) {
            let v = HeaderValue::from_str(&value)
                .expect("ids, digits and base64 are valid header values");
            out.push((HeaderName::from_static(name), v));
        }
    }
    Ok(out)
}

// ----------------------------------------------------------------------------
// The HTTP client
// ----------------------------------------------------------------------------

/// The target a [`PinnedResolver`] currently answers for.
#[derive(Debug, Clone)]
struct Pin {
    /// As `http::Uri` spells it: `example.com`, `127.0.0.1`, `[::1]`.
    host: String,
    port: u16,
    addrs: Vec<SocketAddr>,
}

/// A ureq resolver that never looks anything up: it answers with the
/// addresses [`vet`] approved, and refuses any other host (a redirect or a
/// bug must not reach an unvetted address).
#[derive(Debug, Clone, Default)]
struct PinnedResolver {
    pin: Arc<Mutex<Option<Pin>>>,
}

impl Resolver for PinnedResolver {
    fn resolve(
        &self,
        uri: &Uri,
        _config: &ureq::config::Config,
        _timeout: NextTimeout,
    ) -> Result<ResolvedSocketAddrs, ureq::Error> {
        let pin = self.pin.lock();
        let pin = pin.as_ref().ok_or(ureq::Error::HostNotFound)?;
        let host = uri.host().unwrap_or_default();
        let port = uri
            .port_u16()
            .unwrap_or(if uri.scheme_str() == Some("https") {
                443
            } else {
                80
            });
        if !host.eq_ignore_ascii_case(&pin.host) || port != pin.port {
            return Err(ureq::Error::Other(
                format!("{host}:{port} was not vetted by the SSRF guard").into(),
            ));
        }
        let mut out = self.empty();
        for a in pin.addrs.iter().take(16) {
            out.push(*a);
        }
        Ok(out)
    }
}

/// An agent whose every request goes through [`PinnedResolver`]. `send`
/// takes `&mut self` because it re-pins the resolver before each request:
/// one client serves one thread.
struct Client {
    agent: ureq::Agent,
    pin: Arc<Mutex<Option<Pin>>>,
}

impl Client {
    fn new() -> Client {
        use ureq::tls::{RootCerts, TlsConfig, TlsProvider};
        let config = ureq::Agent::config_builder()
            // A 3xx is the target's answer, reported as such; following it
            // could lead anywhere.
            .max_redirects(0)
            // HTTP(S)_PROXY must not carry our requests past the guard.
            .proxy(None)
            .http_status_as_error(false)
            .user_agent(concat!("mailproc/", env!("CARGO_PKG_VERSION")))
            // The same OpenSSL and system trust store as the IMAP side.
            .tls_config(
                TlsConfig::builder()
                    .provider(TlsProvider::NativeTls)
                    .root_certs(RootCerts::PlatformVerifier)
                    .build(),
            )
            .build();
        let resolver = PinnedResolver::default();
        let pin = resolver.pin.clone();
        let agent = ureq::Agent::with_parts(config, DefaultConnector::new(), resolver);
        Client { agent, pin }
    }

    /// POSTs `body` to a vetted target; returns the status.
    fn send(
        &mut self,
        target: &Vetted,
        headers: Vec<(HeaderName, HeaderValue)>,
        body: &[u8],
        timeout: Duration,
    ) -> Result<u16, WebhookError> {
        let uri: Uri = target
            .url
            .as_str()
            .parse()
            .map_err(|e| WebhookError::BadUrl(format!("invalid URL {}: {e}", target.url)))?;
        *self.pin.lock() = Some(Pin {
            host: uri.host().unwrap_or_default().to_string(),
            port: target.url.port_or_known_default().unwrap_or(80),
            addrs: target.addrs.clone(),
        });
        let mut req = self.agent.post(uri);
        for (k, v) in headers {
            req = req.header(k, v);
        }
        let result = req
            .config()
            .timeout_connect(Some(timeout))
            .timeout_global(Some(timeout))
            .build()
            .send(body);
        *self.pin.lock() = None;
        let mut res = result.map_err(|e| WebhookError::Transport(e.to_string()))?;
        let status = res.status().as_u16();
        // Drained so the connection can be reused; the content is not used.
        let _ = res
            .body_mut()
            .with_config()
            .limit(MAX_RESPONSE_BYTES)
            .read_to_vec();
        Ok(status)
    }
}

// ----------------------------------------------------------------------------
// The dispatcher
// ----------------------------------------------------------------------------

/// One emitted event, stamped and serialized.
struct Event {
    kind: EventKind,
    account: String,
    body: String,
}

/// Cuts every string in `v` to [`MAX_FIELD_CHARS`].
fn cap_strings(v: &mut serde_json::Value) {
    match v {
        serde_json::Value::String(s) => {
            if let Some((i, _)) = s.char_indices().nth(MAX_FIELD_CHARS) {
                s.truncate(i);
                s.push('…');
            }
        }
        serde_json::Value::Array(items) => items.iter_mut().for_each(cap_strings),
        serde_json::Value::Object(m) => m.values_mut().for_each(cap_strings),
        _ => {}
    }
}

/// Who receives what, from the current configuration.
struct Targets {
    global: Vec<WebhookConfig>,
    by_account: HashMap<String, Vec<WebhookConfig>>,
    timeout: Duration,
    allow: AllowList,
}

impl Targets {
    fn from_config(config: &Config) -> Targets {
        Targets {
            global: config.webhooks.clone(),
            by_account: config
                .accounts
                .iter()
                .filter(|a| !a.webhooks.is_empty())
                .map(|a| (a.name.clone(), a.webhooks.clone()))
                .collect(),
            timeout: config.webhook_settings.timeout.0,
            allow: AllowList::new(&config.webhook_settings.allow_private),
        }
    }

    fn for_event<'a>(
        &'a self,
        kind: EventKind,
        account: &str,
    ) -> impl Iterator<Item = &'a WebhookConfig> {
        let own = self
            .by_account
            .get(account)
            .map(Vec::as_slice)
            .unwrap_or_default();
        self.global
            .iter()
            .chain(own.iter())
            .filter(move |t| t.wants(kind))
    }
}

/// What the thread and the handle share.
struct Shared {
    store: Arc<Store>,
    metrics: Arc<Metrics>,
    targets: RwLock<Arc<Targets>>,
    /// Set by `shutdown`: deliveries stop being attempted after it.
    deadline: Mutex<Option<Instant>>,
    /// Bytes of the events in the queue (see [`QUEUE_BYTES`]).
    queued_bytes: std::sync::atomic::AtomicUsize,
}

impl Shared {
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
            Err(e) => (None, Some(e.to_string())),
        };
        // Stored without the credentials many hook URLs carry.
        let stored = crate::config::redact_url(url);
        if let Err(e) =
            self.store
                .record_delivery(event, &stored, account, status, error.as_deref(), took)
        {
            log::error!("webhooks: recording a delivery failed: {e}");
        }
        let shown = shown_url(url);
        let who = account.map(|a| format!(" ({a})")).unwrap_or_default();
        match result {
            Ok(code) if outcome == "success" => {
                log::debug!("webhooks: {event}{who} to {shown}: {code} in {took:?}")
            }
            Ok(code) => log::warn!("webhooks: {event}{who} to {shown}: answered {code}"),
            Err(e) => log::warn!("webhooks: {event}{who} to {shown}: {e}"),
        }
    }
}

/// The URL as logged: scheme, host and port only. Many webhook URLs carry
/// their credential in the path (Slack, Discord), and logs travel further
/// than the config file. The delivery log keeps the URL with its
/// credentials masked, as the config API shows it.
fn shown_url(url: &str) -> String {
    match Url::parse(url) {
        Ok(u) => {
            let mut s = format!("{}://{}", u.scheme(), u.host_str().unwrap_or(""));
            if let Some(p) = u.port() {
                s.push_str(&format!(":{p}"));
            }
            if u.path() != "/" || u.query().is_some() {
                s.push_str("/…");
            }
            s
        }
        Err(_) => "(invalid URL)".into(),
    }
}

pub struct Webhooks {
    /// `None` once shut down: the queue is closed.
    tx: RwLock<Option<Sender<Event>>>,
    shared: Arc<Shared>,
    /// A clone of the delivery agent, so shutdown can interrupt a request
    /// still in flight when the grace period ends.
    agent: ureq::Agent,
    /// Tells the shutdown watchdog that the thread has finished.
    done: Receiver<()>,
    unlogged_drops: AtomicU64,
    last_drop_warn_ms: AtomicI64,
}

impl Webhooks {
    pub fn start(
        config: &Config,
        store: Arc<Store>,
        metrics: Arc<Metrics>,
    ) -> std::io::Result<(Arc<Webhooks>, JoinHandle<()>)> {
        let (tx, rx) = crossbeam_channel::bounded::<Event>(QUEUE_SIZE);
        let (done_tx, done_rx) = crossbeam_channel::bounded::<()>(0);
        let shared = Arc::new(Shared {
            store,
            metrics,
            targets: RwLock::new(Arc::new(Targets::from_config(config))),
            deadline: Mutex::new(None),
            queued_bytes: Default::default(),
        });
        let client = Client::new();
        let w = Arc::new(Webhooks {
            tx: RwLock::new(Some(tx)),
            shared: shared.clone(),
            agent: client.agent.clone(),
            done: done_rx,
            unlogged_drops: AtomicU64::new(0),
            last_drop_warn_ms: AtomicI64::new(i64::MIN / 2),
        });
        let h = std::thread::Builder::new()
            .name("webhooks".into())
            .spawn(move || {
                run(rx, &shared, client);
                drop(done_tx);
            })?;
        Ok((w, h))
    }

    /// Replaces the targets, allow-list and timeout (after a config change);
    /// events already queued are delivered to the new targets.
    pub fn reload(&self, config: &Config) {
        *self.shared.targets.write() = Arc::new(Targets::from_config(config));
    }

    /// Queues an event for `account` with its payload fields. `event`,
    /// `timestamp` (now) and `account` are set here and win over fields of
    /// the same name. Never blocks: a full queue drops the event.
    pub fn emit(&self, kind: EventKind, account: &str, fields: serde_json::Value) {
        let mut payload = serde_json::Map::new();
        match fields {
            serde_json::Value::Object(m) => payload = m,
            serde_json::Value::Null => {}
            other => {
                log::error!(
                    "webhooks: {} fields must be a JSON object, got {other}",
                    kind.as_str()
                );
                payload.insert("data".into(), other);
            }
        }
        payload.insert("event".into(), kind.as_str().into());
        payload.insert("timestamp".into(), crate::timestamp::now_iso().into());
        payload.insert("account".into(), account.into());
        let mut payload = serde_json::Value::Object(payload);
        cap_strings(&mut payload);
        let event = Event {
            kind,
            account: account.to_string(),
            body: payload.to_string(),
        };
        let size = event.body.len();
        let queued = &self.shared.queued_bytes;
        if queued.fetch_add(size, Ordering::SeqCst) + size > QUEUE_BYTES {
            queued.fetch_sub(size, Ordering::SeqCst);
            self.note_drop(kind, account);
            return;
        }
        let tx = self.tx.read();
        let Some(tx) = tx.as_ref() else {
            queued.fetch_sub(size, Ordering::SeqCst);
            log::debug!(
                "webhooks: {} for {account} after shutdown, not sent",
                kind.as_str()
            );
            return;
        };
        match tx.try_send(event) {
            Ok(()) => {}
            Err(TrySendError::Full(_)) => {
                queued.fetch_sub(size, Ordering::SeqCst);
                self.note_drop(kind, account)
            }
            Err(TrySendError::Disconnected(_)) => {
                queued.fetch_sub(size, Ordering::SeqCst);
                log::error!(
                    "webhooks: the delivery thread is gone; {} for {account} lost",
                    kind.as_str()
                )
            }
        }
    }

    fn note_drop(&self, kind: EventKind, account: &str) {
        self.shared.metrics.webhook_dropped.inc();
        self.unlogged_drops.fetch_add(1, Ordering::Relaxed);
        // One line per second at most: a flood of drops must not flood the log.
        let now = crate::timestamp::now_ms();
        let last = self.last_drop_warn_ms.load(Ordering::Relaxed);
        if now - last >= DROP_WARN_EVERY_MS
            && self
                .last_drop_warn_ms
                .compare_exchange(last, now, Ordering::Relaxed, Ordering::Relaxed)
                .is_ok()
        {
            let n = self.unlogged_drops.swap(0, Ordering::Relaxed);
            log::warn!(
                "webhooks: delivery queue full ({QUEUE_SIZE} events or {QUEUE_BYTES} bytes waiting); dropped {n} event(s), the latest {} for {account}",
                kind.as_str()
            );
        }
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
        let settings = &config.webhook_settings;
        let started = Instant::now();
        let body = serde_json::json!({
            "event": "test",
            "timestamp": crate::timestamp::now_iso(),
            "message": "mailproc test delivery",
        })
        .to_string();
        let result = vet(
            url,
            &AllowList::new(&settings.allow_private),
            settings.timeout.0,
        )
        .and_then(|target| {
            let headers = request_headers(headers, None, body.as_bytes())?;
            let left = remaining(settings.timeout.0, started);
            Client::new().send(&target, headers, body.as_bytes(), left)
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

/// The `webhooks` thread: one event at a time, each to every target that
/// wants it, until the queue is closed and empty. A panic while delivering
/// one event (a bug) costs that event only: it is logged and counted, and
/// the thread goes on with the next.
fn run(rx: Receiver<Event>, shared: &Shared, mut client: Client) {
    let mut skipped = 0u64;
    while let Ok(event) = rx.recv() {
        shared
            .queued_bytes
            .fetch_sub(event.body.len(), Ordering::SeqCst);
        let (kind, account) = (event.kind.as_str(), event.account.clone());
        let delivered = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            deliver(event, shared, &mut client, &mut skipped)
        }));
        if let Err(panic) = delivered {
            let msg = crate::failpoint::panic_message(&*panic);
            log::error!("webhooks: delivering {kind} for {account} panicked: {msg}");
            shared
                .metrics
                .errors
                .with_label_values(&[&account, "panic"])
                .inc();
        }
    }
    if skipped > 0 {
        log::warn!("webhooks: the {SHUTDOWN_GRACE:?} shutdown grace ran out; {skipped} delivery(ies) not attempted");
    }
}

/// Delivers one event to every target that wants it.
fn deliver(event: Event, shared: &Shared, client: &mut Client, skipped: &mut u64) {
    crate::failpoint::hit("webhook-deliver");
    {
        let targets = shared.targets.read().clone();
        let body = event.body;
        let name = event.kind.as_str();
        for target in targets.for_event(event.kind, &event.account) {
            let Some(timeout) = shared.next_timeout(targets.timeout) else {
                *skipped += 1;
                continue;
            };
            let started = Instant::now();
            let result = vet(&target.url, &targets.allow, timeout).and_then(|vetted| {
                let headers =
                    request_headers(&target.headers, target.secret.as_deref(), body.as_bytes())?;
                let timeout = shared
                    .next_timeout(remaining(targets.timeout, started))
                    .unwrap_or(Duration::from_millis(1));
                client.send(&vetted, headers, body.as_bytes(), timeout)
            });
            shared.record(
                name,
                &target.url,
                Some(&event.account),
                &result,
                started.elapsed(),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    fn allow(entries: &[&str]) -> AllowList {
        AllowList::new(&entries.iter().map(|s| s.to_string()).collect::<Vec<_>>())
    }

    /// A lookup that must not happen: the URLs under test are IP literals.
    fn no_dns(host: &str, _: u16) -> Result<Vec<IpAddr>, String> {
        panic!("unexpected DNS lookup of {host}")
    }

    fn refused(url: &str, allow: &AllowList) -> bool {
        match vet_with(url, allow, &no_dns) {
            Err(WebhookError::Refused { .. }) => true,
            Ok(_) => false,
            Err(e) => panic!("{url}: unexpected {e:?}"),
        }
    }

    #[test]
    fn blocked_ipv4_ranges_with_boundaries() {
        let blocked = [
            "0.0.0.0",
            "0.255.255.255",
            "127.0.0.1",
            "127.0.0.0",
            "127.255.255.255",
            "10.0.0.0",
            "10.255.255.255",
            "172.16.0.0",
            "172.31.255.255",
            "192.168.0.0",
            "192.168.255.255",
            "169.254.0.0",
            "169.254.169.254",
            "169.254.255.255",
            "100.64.0.0",
            "100.127.255.255",
            "224.0.0.1",
            "239.255.255.255",
            "240.0.0.1",
            "255.255.255.255",
        ];
        for a in blocked {
            assert!(blocked_reason(ip(a)).is_some(), "{a} should be blocked");
        }
        let public = [
            "1.0.0.0",
            "9.255.255.255",
            "11.0.0.0",
            "126.255.255.255",
            "128.0.0.0",
            "172.15.255.255",
            "172.32.0.0",
            "192.167.255.255",
            "192.169.0.0",
            "169.253.255.255",
            "169.255.0.0",
            "100.63.255.255",
            "100.128.0.0",
            "223.255.255.255",
            "8.8.8.8",
        ];
        for a in public {
            assert_eq!(blocked_reason(ip(a)), None, "{a} should be allowed");
        }
        assert_eq!(
            blocked_reason(ip("169.254.169.254")).unwrap(),
            "a link-local address"
        );
        assert_eq!(
            blocked_reason(ip("100.64.0.0")).unwrap(),
            "a shared (CGNAT) address"
        );
    }

    #[test]
    fn blocked_ipv6_ranges_and_ipv4_forms() {
        let blocked = [
            "::",
            "::1",
            "fc00::1",
            "fdff:ffff::1",
            "fe80::1",
            "febf::1",
            "fec0::1",
            "ff02::1",
            // IPv4-mapped
            "::ffff:127.0.0.1",
            "::ffff:10.1.2.3",
            "::ffff:169.254.169.254",
            "::ffff:0.0.0.0",
            "::ffff:172.16.0.1",
            "::ffff:192.168.1.1",
            "::ffff:100.64.0.1",
            // IPv4-compatible
            "::127.0.0.1",
            "::10.0.0.1",
            "::192.168.0.1",
            "::169.254.169.254",
            // NAT64, local-use NAT64, 6to4
            "64:ff9b::127.0.0.1",
            "64:ff9b::10.0.0.1",
            "64:ff9b::a9fe:a9fe",
            "64:ff9b:1::1",
            "2002:7f00:1::",
            "2002:c0a8:101::1",
        ];
        for a in blocked {
            assert!(blocked_reason(ip(a)).is_some(), "{a} should be blocked");
        }
        let public = [
            "2001:4860:4860::8888",
            "::ffff:8.8.8.8",
            "64:ff9b::8.8.8.8",
            "2002:808:808::1",
            "fbff::1",
            "fe00::1",
        ];
        for a in public {
            assert_eq!(blocked_reason(ip(a)), None, "{a} should be allowed");
        }
        assert_eq!(
            blocked_reason(ip("::ffff:127.0.0.1")).unwrap(),
            "an IPv4-mapped form of 127.0.0.1, a loopback address"
        );
    }

    #[test]
    fn url_spellings_of_loopback_are_refused() {
        let none = AllowList::default();
        for url in [
            "http://127.0.0.1:9/",
            "http://127.1:9/",
            "http://2130706433:9/",
            "http://0x7f000001:9/",
            "http://0177.0.0.1:9/",
            "http://0x7f.1/",
            "http://[::ffff:127.0.0.1]:9/",
            "http://[::ffff:7f00:1]:9/",
            "http://[::1]:9/",
            "http://[::]/",
            "http://0.0.0.0:9/",
            "http://0/",
            "https://localhost:9/",
            "http://LOCALHOST./",
            "http://api.localhost/",
            "http://10.0.0.1/",
            "http://172.16.0.1/",
            "http://192.168.1.1/",
            "http://169.254.169.254/latest/meta-data/",
            "http://100.64.0.1/",
            "http://[fd00::1]/",
            "http://[fe80::1]/",
            "http://[64:ff9b::7f00:1]/",
        ] {
            assert!(refused(url, &none), "{url} should be refused");
        }
        // WHATWG parsing is what turns these into 127.0.0.1: rely on it, and
        // notice if it ever stops.
        for url in [
            "http://127.1/",
            "http://2130706433/",
            "http://0x7f000001/",
            "http://0177.0.0.1/",
        ] {
            assert_eq!(
                parse_url(url).unwrap().host_str(),
                Some("127.0.0.1"),
                "{url}"
            );
        }
    }

    #[test]
    fn public_literals_pass_and_keep_their_port() {
        // A pure check: nothing connects to 8.8.8.8.
        let v = vet_with("https://8.8.8.8/hook", &AllowList::default(), &no_dns).unwrap();
        assert_eq!(v.addrs, vec!["8.8.8.8:443".parse().unwrap()]);
        let v = vet_with(
            "http://[2001:4860:4860::8888]:8080/",
            &AllowList::default(),
            &no_dns,
        )
        .unwrap();
        assert_eq!(
            v.addrs,
            vec!["[2001:4860:4860::8888]:8080".parse().unwrap()]
        );
    }

    #[test]
    fn bad_urls_are_not_refusals() {
        for url in [
            "ftp://8.8.8.8/",
            "not a url",
            "file:///etc/passwd",
            "http://",
        ] {
            assert!(
                matches!(
                    vet_with(url, &AllowList::default(), &no_dns),
                    Err(WebhookError::BadUrl(_))
                ),
                "{url}"
            );
        }
    }

    #[test]
    fn allow_private_by_cidr_address_and_host_name() {
        let a = allow(&["127.0.0.1/32", "10.1.0.0/16", "fd00::5", "hooks.internal"]);
        assert!(!refused("http://127.0.0.1:9/", &a));
        assert!(!refused("http://127.1:9/", &a));
        // The mapped form reaches the same address.
        assert!(!refused("http://[::ffff:127.0.0.1]:9/", &a));
        assert!(refused("http://127.0.0.2:9/", &a));
        assert!(!refused("http://10.1.200.3/", &a));
        assert!(refused("http://10.2.0.1/", &a));
        assert!(!refused("http://[fd00::5]/", &a));
        assert!(refused("http://[fd00::6]/", &a));
        // localhost resolves to 127.0.0.1 and ::1; ::1 is not allowed here.
        assert!(refused("http://localhost:9/", &a));
        assert!(!refused("http://localhost:9/", &allow(&["localhost"])));
        assert!(!refused(
            "http://localhost:9/",
            &allow(&["127.0.0.0/8", "::1"])
        ));

        let dns = |host: &str, _: u16| -> Result<Vec<IpAddr>, String> {
            match host.trim_end_matches('.') {
                "hooks.internal" | "other.internal" => Ok(vec![ip("10.9.9.9")]),
                "mixed.example" => Ok(vec![ip("93.184.215.14"), ip("192.168.0.10")]),
                "public.example" => Ok(vec![ip("93.184.215.14")]),
                _ => Err("NXDOMAIN".into()),
            }
        };
        assert!(vet_with("https://hooks.internal/x", &a, &dns).is_ok());
        assert!(vet_with("https://HOOKS.internal./x", &a, &dns).is_ok());
        assert!(matches!(
            vet_with("https://other.internal/x", &a, &dns),
            Err(WebhookError::Refused { .. })
        ));
        // Any blocked address refuses the whole name.
        let e = vet_with("https://mixed.example/", &AllowList::default(), &dns).unwrap_err();
        assert_eq!(
            e.to_string(),
            "refused: mixed.example resolves to 192.168.0.10, which is a private address"
        );
        let v = vet_with("https://public.example/", &AllowList::default(), &dns).unwrap();
        assert_eq!(v.addrs, vec!["93.184.215.14:443".parse().unwrap()]);
        assert!(matches!(
            vet_with("https://missing.example/", &AllowList::default(), &dns),
            Err(WebhookError::Resolve { .. })
        ));
    }

    /// The published Standard Webhooks / Svix example (the same vector
    /// appears in many independent verifiers) and the `test_sign` vector of
    /// the reference Rust library (standard-webhooks/libraries/rust).
    #[test]
    fn standard_webhooks_signature_vectors() {
        let key = signing_key("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw").unwrap();
        assert_eq!(
            sign(
                &key,
                "msg_p5jXN8AQM9LWM0D4loKWxJek",
                1614265330,
                br#"{"test": 2432232314}"#
            ),
            "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
        );
        let key = signing_key("whsec_C2FVsBQIhrscChlQIMV+b5sSYspob7oD").unwrap();
        assert_eq!(
            sign(
                &key,
                "msg_27UH4WbU6Z5A5EzD8u03UvzRbpk",
                1649367553,
                br#"{"email":"test@example.com","username":"test_user"}"#
            ),
            "v1,tZ1I4/hDygAJgO5TYxiSd6Sd0kDW6hPenDe+bTa3Kkw="
        );
        assert_eq!(
            signing_key("plain-secret-0123").unwrap(),
            b"plain-secret-0123"
        );
        assert!(signing_key("whsec_not*base64").is_err());
    }

    #[test]
    fn headers_defaults_overrides_and_signature() {
        let custom: BTreeMap<String, String> = [
            (
                "content-type".to_string(),
                "application/cloudevents+json".to_string(),
            ),
            ("X-Token".to_string(), "abc".to_string()),
            ("webhook-id".to_string(), "stale".to_string()),
        ]
        .into();
        let h = request_headers(&custom, None, b"{}").unwrap();
        let get = |h: &[(HeaderName, HeaderValue)], n: &str| -> Vec<String> {
            h.iter()
                .filter(|(k, _)| k.as_str() == n)
                .map(|(_, v)| v.to_str().unwrap().to_string())
                .collect()
        };
        assert_eq!(get(&h, "content-type"), ["application/cloudevents+json"]);
        assert_eq!(get(&h, "x-token"), ["abc"]);
        assert_eq!(
            get(&h, "user-agent"),
            [concat!("mailproc/", env!("CARGO_PKG_VERSION"))]
        );
        assert_eq!(get(&h, "webhook-id"), ["stale"]);
        assert!(get(&h, "webhook-signature").is_empty());

        let secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
        let h = request_headers(&custom, Some(secret), b"{\"a\":1}").unwrap();
        let id = get(&h, "webhook-id");
        assert_eq!(id.len(), 1);
        assert!(id[0].starts_with("msg_") && id[0] != "stale");
        let ts: i64 = get(&h, "webhook-timestamp")[0].parse().unwrap();
        let key = signing_key(secret).unwrap();
        assert_eq!(
            get(&h, "webhook-signature"),
            [sign(&key, &id[0], ts, b"{\"a\":1}")]
        );

        let bad: BTreeMap<String, String> = [("X-Bad".to_string(), "a\nb".to_string())].into();
        assert!(matches!(
            request_headers(&bad, None, b""),
            Err(WebhookError::Request(_))
        ));
    }

    #[test]
    fn pinned_resolver_answers_only_for_the_vetted_target() {
        let r = PinnedResolver::default();
        *r.pin.lock() = Some(Pin {
            host: "[::1]".into(),
            port: 8080,
            addrs: vec!["[::1]:8080".parse().unwrap()],
        });
        let cfg = ureq::config::Config::default();
        let uri: Uri = "http://[::1]:8080/x".parse().unwrap();
        let got = r.resolve(&uri, &cfg, NextTimeout::default());
        assert_eq!(
            &got.unwrap()[..],
            &["[::1]:8080".parse::<SocketAddr>().unwrap()]
        );
        for other in [
            "http://127.0.0.1:8080/",
            "http://[::1]:8081/",
            "http://example.com:8080/",
        ] {
            let uri: Uri = other.parse().unwrap();
            let got = r.resolve(&uri, &cfg, NextTimeout::default());
            assert!(got.is_err(), "{other}");
        }
    }

    #[test]
    fn shown_url_hides_paths() {
        assert_eq!(
            shown_url("https://hooks.slack.com/services/T0/B0/XYZ"),
            "https://hooks.slack.com/…"
        );
        assert_eq!(shown_url("http://127.0.0.1:8080/"), "http://127.0.0.1:8080");
    }
}
