//! The server: a fixed pool of named threads (`http-N`) sharing one
//! `tiny_http::Server`.
//!
//! Each worker loops on `recv()`, turns the request into a [`Req`] (body
//! read up to 1 MiB), asks the [`Site`] for the answer inside
//! `catch_unwind` (a panic answers 500 and the worker lives on), counts the
//! request in metrics and logs failures. There is no middleware stack:
//! everything that wraps a handler is in [`handle`]. Shutdown calls
//! `unblock()` once per worker.

use std::io::Read;
use std::net::{IpAddr, TcpListener};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Instant;

use tiny_http::{Header, Server};

use super::{forwarded_client, per_address_cap, Reply, Req, Site, LIMITS, MAX_BODY};
use crate::logging::{clean, LinesPerSecond};
use crate::metrics::Metrics;

pub struct HttpServer {
    server: Arc<Server>,
    workers: Vec<JoinHandle<()>>,
    stopping: Arc<AtomicBool>,
}

impl HttpServer {
    pub fn start(
        listener: TcpListener,
        site: Arc<dyn Site>,
        metrics: Arc<Metrics>,
        workers: usize,
        max_connections: usize,
    ) -> std::io::Result<HttpServer> {
        let limits = tiny_http::Limits {
            max_connections,
            max_connections_per_address: per_address_cap(max_connections),
            ..LIMITS
        };
        let admitting = site.clone();
        let admission: tiny_http::BodyAdmission = Arc::new(move |_, _, fields: &[Header]| {
            let header = |name: &str| -> Option<String> {
                let field = fields
                    .iter()
                    .find(|h| h.field.as_str().as_str().eq_ignore_ascii_case(name))?;
                Some(field.value.as_str().to_string())
            };
            admitting.body_limit(&header)
        });
        let server = Arc::new(
            Server::from_listener_with_admission(listener, None, limits, Some(admission))
                .map_err(|e| std::io::Error::other(e.to_string()))?,
        );
        metrics.watch_connections(server.connection_stats());
        crate::gate::set_http_workers(workers);
        let stopping = Arc::new(AtomicBool::new(false));
        let mut handles = Vec::with_capacity(workers);
        for i in 0..workers {
            let (server, site, metrics, stopping) = (
                server.clone(),
                site.clone(),
                metrics.clone(),
                stopping.clone(),
            );
            handles.push(
                std::thread::Builder::new()
                    .name(format!("http-{i}"))
                    .spawn(move || worker(&server, &*site, &metrics, &stopping))?,
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

fn worker(server: &Server, site: &dyn Site, metrics: &Metrics, stopping: &AtomicBool) {
    loop {
        match server.recv() {
            Ok(request) => handle(site, metrics, request),
            // `unblock()` makes recv return an error: time to stop.
            Err(_) if stopping.load(Ordering::SeqCst) => return,
            // An accept error (say, out of file descriptors) must not cost
            // the pool a worker. Said at most once a second, with the
            // count held back: out of descriptors, the accept thread
            // reports one every 50 ms (an audit found 20 lines a second).
            Err(e) => {
                static PACE: parking_lot::Mutex<crate::logging::LinesPerSecond> =
                    parking_lot::Mutex::new(crate::logging::LinesPerSecond::new());
                if let Some(held) = PACE.lock().admit(std::time::Instant::now()) {
                    let more = match held {
                        0 => String::new(),
                        n => format!(" ({n} more since the last line)"),
                    };
                    let what = if tiny_http::out_of_descriptors(&e) {
                        "; the connection waiting is answered 503 and closed, and one \
                         waiting for its request head, if any, is closed to free a descriptor \
                         (raise the service's LimitNOFILE)"
                    } else {
                        ""
                    };
                    log::warn!("http: accepting a connection failed: {e}{more}{what}");
                }
            }
        }
    }
}

fn read_request(site: &dyn Site, request: &mut tiny_http::Request) -> Result<Req, Reply> {
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
    let trusted = &site.trusted_proxies();
    let from_proxy = trusted.iter().any(|n| n.contains(&peer));
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
    // The scheme the client used: ours (plain HTTP) when it reached us
    // itself; a trusted proxy's word (the first of a list, as for
    // `X-Forwarded-Host`: proxies in a chain append), else unknown. A word
    // that is no scheme a page has is kept, so no origin matches it (the
    // regression audit: `https,https` read as unknown let a page of
    // `http://h` write to `https://h`).
    let scheme = if from_proxy {
        get("X-Forwarded-Proto")
            .map(|p| {
                p.split(',')
                    .next()
                    .unwrap_or("")
                    .trim()
                    .to_ascii_lowercase()
            })
            .filter(|p| !p.is_empty())
    } else {
        Some("http".to_string())
    };
    // (A client of our own plain listener is `http`.)
    let secure = scheme.as_deref() == Some("https");
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
    // Methods are case-sensitive (RFC 9110 §9.1): `get` is no GET. One
    // this server does not know at all is a 501.
    let method = request.method().as_str().to_string();
    const KNOWN: [&str; 9] = [
        "GET", "HEAD", "POST", "PUT", "DELETE", "PATCH", "OPTIONS", "CONNECT", "TRACE",
    ];
    if !KNOWN.contains(&method.as_str()) {
        return Err(Reply::error(
            501,
            format!("method {:?} is not implemented", clean(&method)),
        ));
    }
    // One set of credentials (RFC 9110 §11.6.2: `Authorization` is one
    // field, not a list): of two, the first decided and the second was
    // ignored, a request read half (an audit; a proxy that adds its own
    // beside the client's is the case to refuse, not to guess).
    if (headers.iter())
        .filter(|(k, _)| k.eq_ignore_ascii_case("Authorization"))
        .count()
        > 1
    {
        return Err(Reply::error(400, "Authorization: given more than once"));
    }
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
        scheme,
        host,
    })
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

/// Streamed answers (exports) being sent at once. Each is written by a
/// thread of its own, not the worker: an answer of unknown length has no
/// deadline a slow reader cannot keep moving (30 s, plus 1 s per 64 KiB
/// taken), and four readers that took an export slowly (or never) held
/// every worker, the API and `/health` with them (found by an audit).
pub const STREAMS_AT_ONCE: usize = 2;
static STREAMS: AtomicUsize = AtomicUsize::new(0);

/// A place among the [`STREAMS_AT_ONCE`], given back when dropped.
struct StreamSlot;

impl StreamSlot {
    fn take() -> Option<StreamSlot> {
        STREAMS
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| {
                (n < STREAMS_AT_ONCE).then_some(n + 1)
            })
            .ok()
            .map(|_| StreamSlot)
    }
}

impl Drop for StreamSlot {
    fn drop(&mut self) {
        STREAMS.fetch_sub(1, Ordering::SeqCst);
    }
}

fn handle(site: &dyn Site, metrics: &Metrics, mut request: tiny_http::Request) {
    let started = Instant::now();
    let (mut reply, route, method, path) = match read_request(site, &mut request) {
        Ok(req) => {
            let what = format!("{} {}", clean(&req.method), clean(&req.path));
            let (reply, route) = guarded(&what, || site.answer(&req));
            (reply, route, clean(&req.method), clean(&req.path))
        }
        // The path alone, as a routed request is logged: a refusal (a
        // 501 is logged as an error) wrote the query too, where a client
        // may have put a token (an audit).
        Err(reply) => {
            // A method this server does not know closes the connection,
            // as the framing's refusals do (README; it was kept open).
            if reply.status == 501 {
                request.close_after();
            }
            (
                reply,
                "invalid",
                clean(request.method().as_str()),
                clean(request.url().split('?').next().unwrap_or_default()),
            )
        }
    };
    let slot = match reply.stream {
        None => None,
        Some(_) => match StreamSlot::take() {
            Some(slot) => Some(slot),
            None => {
                reply = Reply::error(
                    503,
                    format!(
                        "{STREAMS_AT_ONCE} exports are being sent already; try again when one is done"
                    ),
                )
                .with_header("Retry-After", "10");
                None
            }
        },
    };
    metrics
        .http_requests
        .with_label_values(&[route, &reply.status.to_string()])
        .inc();
    metrics
        .http_request_duration
        .with_label_values(&[route])
        .observe(started.elapsed().as_secs_f64());
    if reply.status >= 500 {
        // One line a second for each route and status (a bounded set):
        // distinct failures are each told, a flood of one is counted
        // (the regression audit found one line for all of them hiding
        // which routes failed). The error's own words go with it: the
        // cause (a damaged database) was in no log line before.
        static SERVER_ERRORS: parking_lot::Mutex<
            Option<std::collections::HashMap<(&'static str, u16), LinesPerSecond>>,
        > = parking_lot::const_mutex(None);
        let admitted = (SERVER_ERRORS.lock().get_or_insert_with(Default::default))
            .entry((route, reply.status))
            .or_default()
            .admit(Instant::now());
        if let Some(held) = admitted {
            let why = serde_json::from_slice::<serde_json::Value>(&reply.body)
                .ok()
                .and_then(|v| v["error"].as_str().map(|e| format!(": {}", clean(e))))
                .unwrap_or_default();
            let more = if held > 0 {
                format!(" ({held} more like it since the last such line)")
            } else {
                String::new()
            };
            log::error!(
                "http: {method} {path} -> {} in {:?}{why}{more}",
                reply.status,
                started.elapsed()
            );
        }
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
    // A body of known length is sent with its `Content-Length` whatever
    // its size (tiny_http chunks from 32 KiB unless told otherwise; HEAD
    // then had no length for `/metrics`); streams stay chunked.
    let mut response = tiny_http::Response::new(
        tiny_http::StatusCode(reply.status),
        Vec::new(),
        body,
        length,
        None,
    )
    .with_chunked_threshold(usize::MAX);
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
    let respond = move || {
        if let Err(e) = request.respond(response) {
            log::debug!("http: writing the response failed: {e}");
        }
    };
    let Some(slot) = slot else {
        return respond();
    };
    let sent = std::thread::Builder::new()
        .name("http-stream".into())
        .spawn(move || {
            let _slot = slot;
            respond();
        });
    if let Err(e) = sent {
        log::error!("http: cannot start a thread to send {method} {path}: {e}");
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
}
