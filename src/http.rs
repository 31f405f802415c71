//! The HTTP server: a fixed pool of named threads sharing one
//! `tiny_http::Server`, as rouille and tiny_http's own examples do.
//!
//! Each worker loops on `recv()`, turns the request into a [`Req`] (body read
//! up to 1 MiB), calls the [`Router`] it was started with inside
//! `catch_unwind` (a panic
//! answers 500 and the worker lives on), counts the request in metrics and
//! logs failures. There is no middleware stack: everything that wraps a
//! handler is in [`handle`]. Shutdown calls `unblock()` once per worker.

use std::io::Read;
use std::net::{IpAddr, SocketAddr, TcpListener};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Instant;

use serde::Serialize;
use tiny_http::{Header, Server};

use crate::account;
use crate::auth::LoginLimiter;
use crate::config::{Config, Loaded};
use crate::logging::{clean, LogRing};
use crate::metrics::Metrics;
use crate::store::Store;
use crate::webhook::Webhooks;

/// Largest request body accepted; larger ones get 413 unread.
pub const MAX_BODY: usize = 1 << 20;

/// What one connection may cost. tiny_http (patched, see
/// `vendor/tiny_http/PATCHES.md`) reads bodies up to [`MAX_BODY`] on the
/// connection's own thread, so an HTTP worker never waits on a slow client;
/// a body over it is never read: the client gets 413 and the connection
/// closes (a chunked body's raw encoding counts against it too). A request
/// head must arrive within 10 s, a body at 1 KiB/s or better (after 10 s to
/// start) and whole within 30 s, and a kept-alive connection closes after
/// 30 s without a next request. A connection has one request in a worker's
/// hands at a time; an answer is written by the connection's own thread and
/// must be taken within 30 s (plus 1 s per 64 KiB), or the connection is
/// shut. `max_connections` comes from `server.max_connections`, and one
/// client address holds at most a quarter of it ([`per_address_cap`]).
pub const LIMITS: tiny_http::Limits = tiny_http::Limits {
    read_timeout: Some(std::time::Duration::from_secs(30)),
    write_timeout: Some(std::time::Duration::from_secs(30)),
    // Browsers send a few KiB of headers (cookies included); 64 KiB is far
    // beyond any of them and still small per connection.
    max_header_bytes: 64 << 10,
    buffer_body_up_to: MAX_BODY,
    max_connections: 256,
    header_timeout: Some(std::time::Duration::from_secs(10)),
    idle_timeout: Some(std::time::Duration::from_secs(30)),
    body_min_rate: Some(1024),
    // 1 MiB in 30 s is 35 KiB/s: any link a dashboard is used over.
    body_timeout: Some(std::time::Duration::from_secs(30)),
    response_timeout: Some(std::time::Duration::from_secs(30)),
    response_min_rate: Some(64 << 10),
    max_connections_per_address: 64,
};

/// Connections one client address may hold: a quarter of the cap (at least
/// one), so that three other clients always find room. Behind a reverse
/// proxy every connection comes from the proxy; a quarter of the default
/// 256 is still far more than one dashboard user opens.
pub fn per_address_cap(max_connections: usize) -> usize {
    (max_connections / 4).max(1)
}

/// Turns a request into a reply and a route label for metrics
/// (`crate::api::route`). Given to [`HttpServer::start`], so this module
/// knows nothing of the routes.
pub type Router = fn(&Ctx, &Req) -> (Reply, &'static str);

/// Everything a handler may use. Shared by all HTTP workers.
pub struct Ctx {
    /// The configuration and accounts in effect; they change at run time.
    pub live: Arc<crate::live::Live>,
    pub store: Arc<Store>,
    pub metrics: Arc<Metrics>,
    pub logs: Arc<LogRing>,
    pub webhooks: Arc<Webhooks>,
    pub started: Instant,
    pub session_secret: Vec<u8>,
    pub limiter: LoginLimiter,
    pub classifier: Arc<crate::classify::Pool>,
    pub dashboard: crate::dashboard::Dashboard,
}

impl Ctx {
    pub fn config(&self) -> Arc<Loaded> {
        self.live.config()
    }

    /// Every running account by name (a snapshot).
    pub fn accounts(&self) -> account::Registry {
        self.live.accounts()
    }

    pub fn account(&self, name: &str) -> Option<Arc<account::Handle>> {
        self.live.account(name)
    }
}

/// A request as handlers see it: already read, parsed and size-checked.
pub struct Req {
    pub method: String,
    pub path: String,
    pub query: Vec<(String, String)>,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    /// The client's address: the peer, or what a trusted proxy says.
    pub client_ip: IpAddr,
    /// Whether the client reached us over HTTPS (through a trusted proxy).
    pub secure: bool,
    /// `Host` as the client sent it (or the trusted proxy forwarded it).
    pub host: Option<String>,
}

impl Req {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    pub fn query(&self, name: &str) -> Option<&str> {
        self.query
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
}

/// A response before it is written.
pub struct Reply {
    pub status: u16,
    pub content_type: &'static str,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    /// A body produced while it is sent (chunked), instead of `body`: for
    /// exports that must not be built whole in memory.
    pub stream: Option<Box<dyn Read + Send>>,
}

impl Reply {
    pub fn json<T: Serialize>(status: u16, value: &T) -> Reply {
        Self::text(
            status,
            "application/json",
            serde_json::to_vec(value).unwrap_or_else(|_| b"{}".to_vec()),
        )
    }

    /// A 200 whose body is read from `body` while it is sent.
    pub fn stream(content_type: &'static str, body: Box<dyn Read + Send>) -> Reply {
        Reply {
            stream: Some(body),
            ..Self::text(200, content_type, Vec::new())
        }
    }

    pub fn ok<T: Serialize>(value: &T) -> Reply {
        Self::json(200, value)
    }

    /// The error body of every API error: `{"error": "..."}`.
    pub fn error(status: u16, message: impl Into<String>) -> Reply {
        let mut r = Self::json(status, &serde_json::json!({ "error": message.into() }));
        if status == 401 {
            r.headers.push(("WWW-Authenticate".into(), "Bearer".into()));
        }
        r
    }

    pub fn text(status: u16, content_type: &'static str, body: impl Into<Vec<u8>>) -> Reply {
        Reply {
            status,
            content_type,
            headers: Vec::new(),
            body: body.into(),
            stream: None,
        }
    }

    pub fn with_header(mut self, name: &str, value: impl Into<String>) -> Reply {
        self.headers.push((name.into(), value.into()));
        self
    }
}

/// Binds the listening socket. Done before any other thread starts, so a
/// taken port stops the process with nothing else running.
pub fn bind(config: &Config) -> Result<(TcpListener, SocketAddr), String> {
    let ip: IpAddr = config
        .server
        .bind
        .parse()
        .map_err(|_| format!("server.bind: invalid address {:?}", config.server.bind))?;
    let addr = SocketAddr::new(ip, config.server.port);
    match listen(addr) {
        Ok(l) => Ok((l, addr)),
        Err(e) if e.kind() == std::io::ErrorKind::AddrInUse => {
            Err(format!("address in use: {addr}"))
        }
        Err(e) => Err(format!("cannot listen on {addr}: {e}")),
    }
}

/// Connections the kernel completes and queues before the accept thread
/// takes them. The standard library's 128 filled up under a crowd of
/// reconnecting clients, and the kernel then drops a newcomer's SYN: its
/// client retries after a whole second. (Linux caps it at
/// `net.core.somaxconn`, 4096 by default.)
const LISTEN_BACKLOG: i32 = 1024;

/// `TcpListener::bind` with [`LISTEN_BACKLOG`] (and, like it,
/// `SO_REUSEADDR`, so a restart does not wait for old connections).
fn listen(addr: SocketAddr) -> std::io::Result<TcpListener> {
    use nix::sys::socket::{self as s, sockopt, AddressFamily, SockFlag, SockType};
    use std::os::fd::AsRawFd;
    let family = match addr {
        SocketAddr::V4(_) => AddressFamily::Inet,
        SocketAddr::V6(_) => AddressFamily::Inet6,
    };
    let fd = s::socket(family, SockType::Stream, SockFlag::SOCK_CLOEXEC, None)?;
    s::setsockopt(&fd, sockopt::ReuseAddr, &true)?;
    s::bind(fd.as_raw_fd(), &s::SockaddrStorage::from(addr))?;
    s::listen(&fd, s::Backlog::new(LISTEN_BACKLOG)?)?;
    Ok(TcpListener::from(fd))
}

pub struct HttpServer {
    server: Arc<Server>,
    workers: Vec<JoinHandle<()>>,
    stopping: Arc<AtomicBool>,
}

impl HttpServer {
    pub fn start(
        listener: TcpListener,
        ctx: Arc<Ctx>,
        workers: usize,
        max_connections: usize,
        router: Router,
    ) -> std::io::Result<HttpServer> {
        let limits = tiny_http::Limits {
            max_connections,
            max_connections_per_address: per_address_cap(max_connections),
            ..LIMITS
        };
        let server = Arc::new(
            Server::from_listener_with_limits(listener, None, limits)
                .map_err(|e| std::io::Error::other(e.to_string()))?,
        );
        ctx.metrics.watch_connections(server.connection_stats());
        let stopping = Arc::new(AtomicBool::new(false));
        let mut handles = Vec::with_capacity(workers);
        for i in 0..workers {
            let (server, ctx, stopping) = (server.clone(), ctx.clone(), stopping.clone());
            handles.push(
                std::thread::Builder::new()
                    .name(format!("http-{i}"))
                    .spawn(move || worker(&server, &ctx, &stopping, router))?,
            );
        }
        Ok(HttpServer {
            server,
            workers: handles,
            stopping,
        })
    }

    /// Stops accepting requests and waits for requests in hand to finish.
    pub fn stop(self) {
        self.stopping.store(true, Ordering::SeqCst);
        for _ in &self.workers {
            self.server.unblock();
        }
        for w in self.workers {
            let _ = w.join();
        }
    }
}

fn worker(server: &Server, ctx: &Ctx, stopping: &AtomicBool, router: Router) {
    loop {
        match server.recv() {
            Ok(request) => handle(ctx, request, router),
            // `unblock()` makes recv return an error: time to stop.
            Err(_) if stopping.load(Ordering::SeqCst) => return,
            // An accept error (say, out of file descriptors) must not cost
            // the pool a worker; pause briefly so it cannot spin.
            Err(e) => {
                log::warn!("http: accepting a connection failed: {e}");
                std::thread::sleep(std::time::Duration::from_millis(100));
            }
        }
    }
}

fn read_request(ctx: &Ctx, request: &mut tiny_http::Request) -> Result<Req, Reply> {
    let config = ctx.config();
    let peer = request
        .remote_addr()
        .map(|a| a.ip())
        .unwrap_or(IpAddr::from([127, 0, 0, 1]))
        .to_canonical();
    let headers: Vec<(String, String)> = request
        .headers()
        .iter()
        .map(|h| {
            (
                h.field.as_str().as_str().to_string(),
                h.value.as_str().to_string(),
            )
        })
        .collect();
    let get = |name: &str| {
        headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.trim().to_string())
    };
    let trusted = &config.config.server.trusted_proxies;
    // In open mode nothing is believed: a browser on this host is a
    // loopback peer, and a page that rebound its DNS name to 127.0.0.1 could
    // otherwise name an allowed host in `X-Forwarded-Host`.
    let from_proxy =
        !crate::auth::api_is_open(&config.config) && trusted.iter().any(|n| n.contains(&peer));
    let client_ip = if from_proxy {
        forwarded_client(
            headers
                .iter()
                .filter(|(k, _)| k.eq_ignore_ascii_case("X-Forwarded-For"))
                .map(|(_, v)| v.as_str()),
            trusted,
            peer,
        )
    } else {
        peer
    };
    let secure =
        from_proxy && get("X-Forwarded-Proto").is_some_and(|p| p.eq_ignore_ascii_case("https"));
    let host = from_proxy
        .then(|| get("X-Forwarded-Host"))
        .flatten()
        .or_else(|| get("Host"));
    let url = request.url().to_string();
    let (path, qs) = url.split_once('?').unwrap_or((&url, ""));
    let query = url::form_urlencoded::parse(qs.as_bytes())
        .into_owned()
        .collect();
    let path = percent_decode(path);
    let method = request.method().as_str().to_ascii_uppercase();
    // Refused unread: tiny_http then closes the connection instead of
    // reading (or allocating) what the client declared.
    if request.body_length().is_some_and(|n| n > MAX_BODY) {
        return Err(Reply::error(413, "request body is larger than 1 MiB"));
    }
    // Up to MAX_BODY the body is already in memory (see LIMITS; a larger
    // chunked one was refused by tiny_http); the bound here is a guard.
    let mut body = Vec::new();
    if let Err(e) = request
        .as_reader()
        .take(MAX_BODY as u64 + 1)
        .read_to_end(&mut body)
    {
        return Err(Reply::error(
            400,
            format!("reading the request body failed: {e}"),
        ));
    }
    if body.len() > MAX_BODY {
        return Err(Reply::error(413, "request body is larger than 1 MiB"));
    }
    Ok(Req {
        method,
        path,
        query,
        headers,
        body,
        client_ip,
        secure,
        host,
    })
}

/// The client behind trusted proxies: the right-most `X-Forwarded-For`
/// address (across all header lines, in order) that is not itself a trusted
/// proxy. Everything left of it was written by the client and proves
/// nothing. An entry that is not an address ends the walk at the last
/// trusted hop; when every hop is trusted, the left-most one is the client.
pub fn forwarded_client<'a>(
    lines: impl Iterator<Item = &'a str>,
    trusted: &[ipnet::IpNet],
    peer: IpAddr,
) -> IpAddr {
    let hops: Vec<&str> = lines.flat_map(|l| l.split(',')).map(str::trim).collect();
    let mut client = peer;
    for hop in hops.iter().rev() {
        let Ok(ip) = hop.parse::<IpAddr>() else {
            break;
        };
        let ip = ip.to_canonical();
        client = ip;
        if !trusted.iter().any(|n| n.contains(&ip)) {
            break;
        }
    }
    client
}

fn percent_decode(path: &str) -> String {
    percent_encoding::percent_decode_str(path)
        .decode_utf8_lossy()
        .into_owned()
}

/// The one wrapper around every handler call.
/// Calls `route`; a panic in it (a bug) becomes a logged 500 and the
/// worker lives on.
fn guarded(what: &str, route: impl FnOnce() -> (Reply, &'static str)) -> (Reply, &'static str) {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(route)).unwrap_or_else(|panic| {
        let msg = crate::failpoint::panic_message(&*panic);
        log::error!("http: handler for {what} panicked: {msg}");
        (Reply::error(500, "internal error"), "panic")
    })
}

fn handle(ctx: &Ctx, mut request: tiny_http::Request, router: Router) {
    let started = Instant::now();
    let (reply, route, method, path) = match read_request(ctx, &mut request) {
        Ok(req) => {
            let what = format!("{} {}", clean(&req.method), clean(&req.path));
            let (reply, route) = guarded(&what, || router(ctx, &req));
            (reply, route, clean(&req.method), clean(&req.path))
        }
        Err(reply) => (
            reply,
            "invalid",
            clean(request.method().as_str()),
            clean(request.url()),
        ),
    };
    ctx.metrics
        .http_requests
        .with_label_values(&[route, &reply.status.to_string()])
        .inc();
    ctx.metrics
        .http_request_duration
        .with_label_values(&[route])
        .observe(started.elapsed().as_secs_f64());
    if reply.status >= 500 {
        log::error!(
            "http: {method} {path} -> {} in {:?}",
            reply.status,
            started.elapsed()
        );
    } else {
        log::debug!(
            "http: {method} {path} -> {} in {:?}",
            reply.status,
            started.elapsed()
        );
    }
    let (body, length): (Box<dyn Read + Send>, Option<usize>) = match reply.stream {
        Some(stream) => (stream, None),
        None => {
            let n = reply.body.len();
            (Box::new(std::io::Cursor::new(reply.body)), Some(n))
        }
    };
    let mut response = tiny_http::Response::new(
        tiny_http::StatusCode(reply.status),
        Vec::new(),
        body,
        length,
        None,
    );
    let mut add = |k: &str, v: &str| {
        if let Ok(h) = Header::from_bytes(k.as_bytes(), v.as_bytes()) {
            response.add_header(h);
        }
    };
    add("Content-Type", reply.content_type);
    add("X-Content-Type-Options", "nosniff");
    if !reply
        .headers
        .iter()
        .any(|(k, _)| k.eq_ignore_ascii_case("Cache-Control"))
    {
        add("Cache-Control", "no-store");
    }
    for (k, v) in &reply.headers {
        add(k, v);
    }
    if let Err(e) = request.respond(response) {
        log::debug!("http: writing the response failed: {e}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_panicking_route_answers_500_json() {
        let (reply, label) = guarded("GET /x", || panic!("boom"));
        assert_eq!((reply.status, label), (500, "panic"));
        assert_eq!(reply.content_type, "application/json");
        assert_eq!(reply.body, br#"{"error":"internal error"}"#);
        let (reply, label) = guarded("GET /x", || (Reply::text(200, "text/plain", "ok"), "/x"));
        assert_eq!((reply.status, label), (200, "/x"));
    }

    #[test]
    fn forwarded_client_is_the_rightmost_untrusted_hop() {
        let trusted: Vec<ipnet::IpNet> = vec!["127.0.0.0/8".parse().unwrap()];
        let peer: IpAddr = "127.0.0.1".parse().unwrap();
        let f =
            |lines: &[&str]| forwarded_client(lines.iter().copied(), &trusted, peer).to_string();
        assert_eq!(f(&["1.1.1.1, 2.2.2.2, 127.0.0.5"]), "2.2.2.2");
        assert_eq!(f(&["1.1.1.1", "2.2.2.2"]), "2.2.2.2");
        assert_eq!(f(&["127.0.0.9"]), "127.0.0.9", "all trusted: the left-most");
        assert_eq!(
            f(&["garbage, 127.0.0.3"]),
            "127.0.0.3",
            "a bad hop ends the walk"
        );
        assert_eq!(f(&[]), "127.0.0.1");
        assert_eq!(f(&["::ffff:8.8.8.8"]), "8.8.8.8");
    }
}
