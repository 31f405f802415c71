//! HTTP, the transport: a request as handlers see it ([`Req`]), a reply
//! before it is written ([`Reply`]), binding the port, and the server
//! ([`server`]: a fixed pool of named threads sharing one
//! `tiny_http::Server`, as rouille and tiny_http's own examples do).
//!
//! This is the bottom of the web layer: it knows no route, session or
//! service. What is served comes from a [`Site`] (`routes`).

mod server;

pub use server::HttpServer;

use std::io::Read;
use std::net::{IpAddr, SocketAddr, TcpListener};

use serde::Serialize;

use crate::config::Config;

/// Largest request body accepted; larger ones get 413 unread.
pub const MAX_BODY: usize = 1 << 20;

/// Largest body of a request without valid credentials (a sign-in or the
/// first user's form need a few hundred bytes): its body is read before
/// any handler looks at it, so without this bound 256 connections that
/// each sent most of 1 MiB held 280 MB of an unauthenticated client's
/// bytes (an audit). See [`Site::body_limit`].
pub const ANONYMOUS_BODY: usize = 16 << 10;

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

/// A row id in a path as the API writes it: a positive whole number,
/// digits only, no leading zero (`+5`, `007` and `%2B5` would name rows 5
/// and 7 under another spelling, which a cache or a log search would not
/// see as the same). For the API's paths and the dashboard's alike.
pub fn canonical_id(s: &str) -> Option<i64> {
    let canonical = !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()) && !s.starts_with('0');
    s.parse::<i64>().ok().filter(|id| canonical && *id > 0)
}

/// Connections one client address may hold: a quarter of the cap (at least
/// one), so that three other clients always find room. Behind a reverse
/// proxy every connection comes from the proxy; a quarter of the default
/// 256 is still far more than one dashboard user opens.
pub fn per_address_cap(max_connections: usize) -> usize {
    (max_connections / 4).max(1)
}

/// What the server serves. [`server::HttpServer`] knows nothing of
/// routes, sessions or the configuration: it asks its site.
pub trait Site: Send + Sync + 'static {
    /// The networks whose `X-Forwarded-For`, `-Proto` and `-Host` are
    /// believed for the next request (none at all: an empty list).
    fn trusted_proxies(&self) -> Vec<ipnet::IpNet>;
    /// The reply to `req`, and a low-cardinality label of its route for
    /// metrics.
    fn answer(&self, req: &Req) -> (Reply, &'static str);
    /// Asked on the connection's thread before a request's body is read,
    /// given a lookup of its header fields: `None` to read up to
    /// [`MAX_BODY`], or a smaller limit and why (said in the 413).
    fn body_limit(&self, _header: &dyn Fn(&str) -> Option<String>) -> Option<(usize, String)> {
        None
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
    /// The scheme the client used (`http`, `https`), when known: plain
    /// HTTP when it reached us itself, a trusted proxy's
    /// `X-Forwarded-Proto`; `None` when the proxy did not say.
    pub scheme: Option<String>,
    /// `Host` as the client sent it (or the trusted proxy forwarded it).
    pub host: Option<String>,
}

impl Req {
    /// Whether the path is the API's (`/api` or under it), as the router
    /// reads paths: leading slashes do not count (`//api/config` is
    /// `/api/config`; an audit found it answered 405 with the route's
    /// methods to a client without credentials).
    pub fn under_api(&self) -> bool {
        let path = self.path.trim_start_matches('/');
        path == "api" || path.starts_with("api/")
    }

    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// Every field named `name`, as one comma-separated list (RFC 9110
    /// §5.3: the fields of a list-based header combine so).
    pub fn header_list(&self, name: &str) -> Option<String> {
        let fields: Vec<&str> = (self.headers.iter())
            .filter(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
            .collect();
        (!fields.is_empty()).then(|| fields.join(", "))
    }

    pub fn query(&self, name: &str) -> Option<&str> {
        self.query
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    /// Whether `Origin` (or, without it, `Referer`) names this host. With
    /// `required`, a request that sends neither is refused; without it only
    /// a foreign origin is (scripts posting a form send no `Origin`).
    pub fn same_origin(&self, required: bool) -> bool {
        let Some(origin) = self.header("Origin").or_else(|| self.header("Referer")) else {
            return !required;
        };
        let Some(host) = self.host.as_deref() else {
            return false;
        };
        // The host a proxy forwards may be a list (`a, b`): the first is
        // the client's. A port left out is the scheme's own on either side
        // (`Origin: https://h` is `Host: h:443`; an audit found a proxy on
        // another port, or one naming :443, refused every login).
        // The scheme counts too (RFC 6454: an origin is scheme, host and
        // port): behind a TLS proxy, a page of `http://h` posted to
        // `https://h` with the cookie (the SPEC audit), its port the
        // scheme's own on either side. Unknown (a proxy that sends no
        // `X-Forwarded-Proto`), the Origin's is taken.
        let host = host.split(',').next().unwrap_or("").trim();
        url::Url::parse(origin).is_ok_and(|u| {
            let Some(origin_port) = u.port_or_known_default() else {
                return false;
            };
            let scheme = self.scheme.as_deref().unwrap_or(u.scheme());
            if scheme != u.scheme() {
                return false;
            }
            let Ok(h) = url::Url::parse(&format!("{scheme}://{host}")) else {
                return false;
            };
            h.host_str()
                .zip(u.host_str())
                .is_some_and(|(a, b)| a.eq_ignore_ascii_case(b))
                && h.port_or_known_default() == Some(origin_port)
        })
    }

    /// Whether the body is a form (`application/x-www-form-urlencoded`).
    pub fn is_form(&self) -> bool {
        self.header("Content-Type")
            .is_some_and(|c| c.starts_with("application/x-www-form-urlencoded"))
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
        // Some proxies write the client's port too (`203.0.113.9:51234`,
        // `[2001:db8::1]:443`); read as no address, every client was the
        // proxy itself, and one client's ten wrong logins locked out all.
        let Some(ip) = (hop.parse::<IpAddr>().ok())
            .or_else(|| hop.parse::<std::net::SocketAddr>().ok().map(|a| a.ip()))
        else {
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

#[cfg(test)]
mod tests {
    use super::*;

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
        // With the client's port, as some proxies write it.
        assert_eq!(f(&["203.0.113.9:51234"]), "203.0.113.9");
        assert_eq!(f(&["[2001:db8::1]:443, 127.0.0.2"]), "2001:db8::1");
        assert_eq!(
            f(&["[2001:db8::1]"]),
            "127.0.0.1",
            "brackets without a port"
        );
    }

    /// Found by an audit: behind a proxy on a port other than 443 (or one
    /// that forwards `:443`), every browser login was refused as
    /// cross-origin: the port the browser leaves out was compared as text.
    #[test]
    fn an_origin_matches_its_host_with_the_schemes_port_filled_in() {
        let with = |scheme: Option<&str>, host: &str, origin: &str| {
            Req {
                method: "POST".into(),
                path: "/login".into(),
                query: Vec::new(),
                headers: vec![("Origin".into(), origin.into())],
                body: Vec::new(),
                client_ip: IpAddr::from([127, 0, 0, 1]),
                secure: false,
                scheme: scheme.map(str::to_string),
                host: Some(host.into()),
            }
            .same_origin(true)
        };
        let same = |host: &str, origin: &str| with(None, host, origin);
        // Found by the SPEC audit: the scheme was not compared, so a page
        // of `http://h` passed for `https://h` behind a TLS proxy, and an
        // `https://` origin for the plain listener.
        assert!(with(
            Some("https"),
            "mail.example.com",
            "https://mail.example.com"
        ));
        assert!(!with(
            Some("https"),
            "mail.example.com",
            "http://mail.example.com"
        ));
        assert!(!with(
            Some("https"),
            "mail.example.com:80",
            "http://mail.example.com"
        ));
        assert!(with(
            Some("http"),
            "127.0.0.1:8080",
            "http://127.0.0.1:8080"
        ));
        assert!(!with(
            Some("http"),
            "127.0.0.1:8080",
            "https://127.0.0.1:8080"
        ));
        assert!(same("mail.example.com", "https://mail.example.com"));
        assert!(same("mail.example.com:443", "https://mail.example.com"));
        assert!(same(
            "mail.example.com:8443",
            "https://mail.example.com:8443"
        ));
        assert!(same(
            "MAIL.example.com, proxy.internal",
            "https://mail.example.com"
        ));
        assert!(same("127.0.0.1:8080", "http://127.0.0.1:8080"));
        assert!(same("[::1]:8080", "http://[::1]:8080"));
        assert!(!same("mail.example.com", "https://mail.example.com:8443"));
        assert!(!same("mail.example.com:8443", "https://mail.example.com"));
        assert!(!same("mail.example.com", "https://evil.example"));
        assert!(!same("127.0.0.1:8080", "http://127.0.0.1:9090"));
        assert!(!same("127.0.0.1:8080", "null"));
    }
}
