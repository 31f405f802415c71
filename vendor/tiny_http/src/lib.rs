//! # Simple usage
//!
//! ## Creating the server
//!
//! The easiest way to create a server is to call `Server::http()`.
//!
//! The `http()` function returns an `IoResult<Server>` which will return an error
//! in the case where the server creation fails (for example if the listening port is already
//! occupied).
//!
//! ```no_run
//! let server = tiny_http::Server::http("0.0.0.0:0").unwrap();
//! ```
//!
//! A newly-created `Server` will immediately start listening for incoming connections and HTTP
//! requests.
//!
//! ## Receiving requests
//!
//! Calling `server.recv()` will block until the next request is available.
//! This function returns an `IoResult<Request>`, so you need to handle the possible errors.
//!
//! ```no_run
//! # let server = tiny_http::Server::http("0.0.0.0:0").unwrap();
//!
//! loop {
//!     // blocks until the next request is received
//!     let request = match server.recv() {
//!         Ok(rq) => rq,
//!         Err(e) => { println!("error: {}", e); break }
//!     };
//!
//!     // do something with the request
//!     // ...
//! }
//! ```
//!
//! In a real-case scenario, you will probably want to spawn multiple worker tasks and call
//! `server.recv()` on all of them. Like this:
//!
//! ```no_run
//! # use std::sync::Arc;
//! # use std::thread;
//! # let server = tiny_http::Server::http("0.0.0.0:0").unwrap();
//! let server = Arc::new(server);
//! let mut guards = Vec::with_capacity(4);
//!
//! for _ in (0 .. 4) {
//!     let server = server.clone();
//!
//!     let guard = thread::spawn(move || {
//!         loop {
//!             let rq = server.recv().unwrap();
//!
//!             // ...
//!         }
//!     });
//!
//!     guards.push(guard);
//! }
//! ```
//!
//! If you don't want to block, you can call `server.try_recv()` instead.
//!
//! ## Handling requests
//!
//! The `Request` object returned by `server.recv()` contains informations about the client's request.
//! The most useful methods are probably `request.method()` and `request.url()` which return
//! the requested method (`GET`, `POST`, etc.) and url.
//!
//! To handle a request, you need to create a `Response` object. See the docs of this object for
//! more infos. Here is an example of creating a `Response` from a file:
//!
//! ```no_run
//! # use std::fs::File;
//! # use std::path::Path;
//! let response = tiny_http::Response::from_file(File::open(&Path::new("image.png")).unwrap());
//! ```
//!
//! All that remains to do is call `request.respond()`:
//!
//! ```no_run
//! # use std::fs::File;
//! # use std::path::Path;
//! # let server = tiny_http::Server::http("0.0.0.0:0").unwrap();
//! # let request = server.recv().unwrap();
//! # let response = tiny_http::Response::from_file(File::open(&Path::new("image.png")).unwrap());
//! let _ = request.respond(response);
//! ```
// Vendored: the release's own dead code (the drain this copy removed left
// some behind) is not worth diverging further from it.
#![allow(dead_code, unused_imports)]
#![forbid(unsafe_code)]
#![deny(rust_2018_idioms)]
#![allow(clippy::match_like_matches_macro)]

#[cfg(any(feature = "ssl-openssl", feature = "ssl-rustls"))]
use zeroize::Zeroizing;

use std::error::Error;
use std::io::Error as IoError;
use std::io::ErrorKind as IoErrorKind;
use std::io::Result as IoResult;
use std::net::{Shutdown, TcpStream, ToSocketAddrs};
use std::sync::atomic::AtomicBool;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::mpsc;
use std::sync::Arc;
use std::thread;
use std::time::Duration;

use client::ClientConnection;
use connection::Connection;
use util::MessagesQueue;

pub use common::{HTTPVersion, Header, HeaderField, Method, StatusCode};
pub use connection::{ConfigListenAddr, ListenAddr, Listener};
pub use request::{ReadWrite, Request};
pub use response::{Response, ResponseBox};
pub use test::TestRequest;
pub use util::ConnectionStats;

/// Asked on the connection's own thread, before any of a request's body is
/// read, how much of it may be buffered (mailproc patch): `None` for
/// [`Limits::buffer_body_up_to`], or a smaller limit and a note for the
/// `413` a larger body gets (unread; the connection closes). Given the
/// method, the target and the header fields.
pub type BodyAdmission = Arc<dyn Fn(&Method, &str, &[Header]) -> Option<(usize, String)> + Send + Sync>;

/// Bounds on what one connection may cost the server (mailproc patch: the
/// release has none, see PATCHES.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Socket read time-out: a client that sends nothing for this long while
    /// a request line, a header or a body is expected is disconnected.
    pub read_timeout: Option<Duration>,
    /// Socket write time-out: a client that does not take a response for
    /// this long is disconnected.
    pub write_timeout: Option<Duration>,
    /// Largest request line plus headers, in bytes. A larger head is
    /// answered `431 Request Header Fields Too Large` and the connection
    /// closed.
    pub max_header_bytes: usize,
    /// Request bodies up to this size (fixed-length or chunked) are read on
    /// the connection's own thread before the request is handed out, so a
    /// slow client never holds a thread calling `recv()`. 0 keeps the
    /// release's behaviour (1024 bytes, not with `Expect: 100-continue`).
    pub buffer_body_up_to: usize,
    /// Connections alive at once; 0 for no cap. At the cap a new connection
    /// sheds the one waiting longest for a request head, or is answered
    /// `503` and closed when none is waiting (see `util/connections.rs`).
    pub max_connections: usize,
    /// A request head (line and headers) must arrive within this, counted
    /// from the accept or from the first byte of a later request.
    pub header_timeout: Option<Duration>,
    /// A kept-alive connection is closed after this long without a byte of
    /// a next request.
    pub idle_timeout: Option<Duration>,
    /// Bytes per second a body must keep up, after `header_timeout` to
    /// start: each byte received moves the deadline by `1/rate` s.
    pub body_min_rate: Option<u32>,
    /// A body must be complete within this of its first read, whatever its
    /// rate (mailproc patch).
    pub body_timeout: Option<Duration>,
    /// A response must be written within this of its first byte, plus one
    /// second per `response_min_rate` bytes written; past it the connection
    /// is shut down (mailproc patch).
    pub response_timeout: Option<Duration>,
    /// See `response_timeout`.
    pub response_min_rate: Option<u32>,
    /// Connections one client address (an IPv6 /64 counts as one) may hold
    /// at once; 0 for no cap. At
    /// the cap its newcomer sheds one of the address's own connections, or
    /// is answered `503` (mailproc patch).
    pub max_connections_per_address: usize,
}

impl Limits {
    /// The release's behaviour: no time-outs, no header limit.
    pub const UNLIMITED: Limits = Limits {
        read_timeout: None,
        write_timeout: None,
        max_header_bytes: usize::MAX,
        buffer_body_up_to: 0,
        max_connections: 0,
        header_timeout: None,
        idle_timeout: None,
        body_min_rate: None,
        body_timeout: None,
        response_timeout: None,
        response_min_rate: None,
        max_connections_per_address: 0,
    };
}

mod client;
mod common;
mod connection;
mod request;
mod response;
mod ssl;
mod test;
mod util;

/// The main class of this library.
///
/// Destroying this object will immediately close the listening socket and the reading
///  part of all the client's connections. Requests that have already been returned by
///  the `recv()` function will not close and the responses will be transferred to the client.
pub struct Server {
    // should be false as long as the server exists
    // when set to true, all the subtasks will close within a few hundreds ms
    close: Arc<AtomicBool>,

    // queue for messages received by child threads
    messages: Arc<MessagesQueue<Message>>,

    // result of TcpListener::local_addr()
    listening_addr: ListenAddr,

    /// mailproc patch: counters of the connection bounds.
    stats: Arc<util::ConnectionStats>,
}

enum Message {
    Error(IoError),
    NewRequest(Request),
}

impl From<IoError> for Message {
    fn from(e: IoError) -> Message {
        Message::Error(e)
    }
}

impl From<Request> for Message {
    fn from(rq: Request) -> Message {
        Message::NewRequest(rq)
    }
}

// this trait is to make sure that Server implements Share and Send
#[doc(hidden)]
trait MustBeShareDummy: Sync + Send {}
#[doc(hidden)]
impl MustBeShareDummy for Server {}

pub struct IncomingRequests<'a> {
    server: &'a Server,
}

/// Represents the parameters required to create a server.
#[derive(Debug, Clone)]
pub struct ServerConfig {
    /// The addresses to try to listen to.
    pub addr: ConfigListenAddr,

    /// If `Some`, then the server will use SSL to encode the communications.
    pub ssl: Option<SslConfig>,
}

/// Configuration of the server for SSL.
#[derive(Debug, Clone)]
pub struct SslConfig {
    /// Contains the public certificate to send to clients.
    pub certificate: Vec<u8>,
    /// Contains the ultra-secret private key used to decode communications.
    pub private_key: Vec<u8>,
}

impl Server {
    /// Shortcut for a simple server on a specific address.
    #[inline]
    pub fn http<A>(addr: A) -> Result<Server, Box<dyn Error + Send + Sync + 'static>>
    where
        A: ToSocketAddrs,
    {
        Server::new(ServerConfig {
            addr: ConfigListenAddr::from_socket_addrs(addr)?,
            ssl: None,
        })
    }

    /// Shortcut for an HTTPS server on a specific address.
    #[cfg(any(feature = "ssl-openssl", feature = "ssl-rustls"))]
    #[inline]
    pub fn https<A>(
        addr: A,
        config: SslConfig,
    ) -> Result<Server, Box<dyn Error + Send + Sync + 'static>>
    where
        A: ToSocketAddrs,
    {
        Server::new(ServerConfig {
            addr: ConfigListenAddr::from_socket_addrs(addr)?,
            ssl: Some(config),
        })
    }

    #[cfg(unix)]
    #[inline]
    /// Shortcut for a UNIX socket server at a specific path
    pub fn http_unix(
        path: &std::path::Path,
    ) -> Result<Server, Box<dyn Error + Send + Sync + 'static>> {
        Server::new(ServerConfig {
            addr: ConfigListenAddr::unix_from_path(path),
            ssl: None,
        })
    }

    /// Builds a new server that listens on the specified address.
    pub fn new(config: ServerConfig) -> Result<Server, Box<dyn Error + Send + Sync + 'static>> {
        let listener = config.addr.bind()?;
        Self::from_listener(listener, config.ssl)
    }

    /// Builds a new server using the specified TCP listener.
    ///
    /// This is useful if you've constructed TcpListener using some less usual method
    /// such as from systemd. For other cases, you probably want the `new()` function.
    pub fn from_listener<L: Into<Listener>>(
        listener: L,
        ssl_config: Option<SslConfig>,
    ) -> Result<Server, Box<dyn Error + Send + Sync + 'static>> {
        Self::from_listener_with_limits(listener, ssl_config, Limits::UNLIMITED)
    }

    /// [`Server::from_listener`] with bounds on each connection (mailproc
    /// patch).
    pub fn from_listener_with_limits<L: Into<Listener>>(
        listener: L,
        ssl_config: Option<SslConfig>,
        limits: Limits,
    ) -> Result<Server, Box<dyn Error + Send + Sync + 'static>> {
        Self::from_listener_with_admission(listener, ssl_config, limits, None)
    }

    /// [`Server::from_listener_with_limits`] with a [`BodyAdmission`]
    /// (mailproc patch).
    pub fn from_listener_with_admission<L: Into<Listener>>(
        listener: L,
        ssl_config: Option<SslConfig>,
        limits: Limits,
        admission: Option<BodyAdmission>,
    ) -> Result<Server, Box<dyn Error + Send + Sync + 'static>> {
        let listener = listener.into();
        // building the "close" variable
        let close_trigger = Arc::new(AtomicBool::new(false));

        // building the TcpListener
        let (server, local_addr) = {
            let local_addr = listener.local_addr()?;
            log::debug!("Server listening on {}", local_addr);
            (listener, local_addr)
        };

        // building the SSL capabilities
        #[cfg(all(feature = "ssl-openssl", feature = "ssl-rustls"))]
        compile_error!(
            "Features 'ssl-openssl' and 'ssl-rustls' must not be enabled at the same time"
        );
        #[cfg(not(any(feature = "ssl-openssl", feature = "ssl-rustls")))]
        type SslContext = ();
        #[cfg(any(feature = "ssl-openssl", feature = "ssl-rustls"))]
        type SslContext = crate::ssl::SslContextImpl;
        let ssl: Option<SslContext> = {
            match ssl_config {
                #[cfg(any(feature = "ssl-openssl", feature = "ssl-rustls"))]
                Some(config) => Some(SslContext::from_pem(
                    config.certificate,
                    Zeroizing::new(config.private_key),
                )?),
                #[cfg(not(any(feature = "ssl-openssl", feature = "ssl-rustls")))]
                Some(_) => return Err(
                    "Building a server with SSL requires enabling the `ssl` feature in tiny-http"
                        .into(),
                ),
                None => None,
            }
        };

        // creating a task where server.accept() is continuously called
        // and ClientConnection objects are pushed in the messages queue
        let messages = MessagesQueue::with_capacity(8);

        let inside_close_trigger = close_trigger.clone();
        let inside_messages = messages.clone();
        let stats = Arc::new(util::ConnectionStats::default());
        let table = Arc::new(util::ConnectionTable::new(
            limits.max_connections,
            limits.max_connections_per_address,
            stats.clone(),
        ));
        thread::spawn(move || {
            // a tasks pool is used to dispatch the connections into threads
            // mailproc patch: a connection holds a thread, so the pool needs
            // no more than the cap plus the 4 it keeps; a connection shed to
            // make room hands its thread to the newcomer.
            let tasks_pool = util::TaskPool::with_max_threads(match limits.max_connections {
                0 => 0,
                n => n + 4,
            });

            // mailproc patch: a descriptor kept in reserve. Out of
            // descriptors, `accept` fails and leaves the connection in the
            // kernel's queue, ahead of every other: the server served no
            // one while a client held the rest open (an audit). The
            // reserve is let go so the waiting connection can be accepted
            // and closed, and a head-waiter is shed so a descriptor comes
            // free for the next.
            let mut reserve = std::fs::File::open("/dev/null").ok();
            log::debug!("Running accept thread");
            while !inside_close_trigger.load(Relaxed) {
                if reserve.is_none() {
                    reserve = std::fs::File::open("/dev/null").ok();
                }
                let new_client = match server.accept() {
                    Ok((sock, peer)) => {
                        use util::RefinedTcpStream;
                        // mailproc patch: at the cap, room is made by
                        // shedding a head-waiter, or the newcomer is told
                        // so and closed without a thread of its own.
                        let ip = peer.map(|a| client_address(a.ip()));
                        if !table.make_room(ip) {
                            refuse(sock);
                            continue;
                        }
                        // A peer that vanished between accept and here
                        // fails later, on its first read; nothing to do.
                        let _ = sock.set_timeouts(limits.read_timeout, limits.write_timeout);
                        let (mut read_closable, mut write_closable) = match ssl {
                            None => RefinedTcpStream::new(sock),
                            #[cfg(any(feature = "ssl-openssl", feature = "ssl-rustls"))]
                            Some(ref ssl) => {
                                // trying to apply SSL over the connection
                                // if an error occurs, we just close the socket and resume listening
                                let sock = match ssl.accept(sock) {
                                    Ok(s) => s,
                                    Err(_) => continue,
                                };

                                RefinedTcpStream::new(sock)
                            }
                            #[cfg(not(any(feature = "ssl-openssl", feature = "ssl-rustls")))]
                            Some(ref _ssl) => unreachable!(),
                        };

                        let clock = Arc::new(util::ReadClock::new(limits, table.stats.clone()));
                        read_closable.set_clock(clock.clone());
                        write_closable.set_clock(clock.clone());
                        let slot =
                            table.register(clock.clone(), read_closable.shutdown_handle(), ip);
                        Ok((
                            ClientConnection::new(
                                write_closable,
                                read_closable,
                                limits,
                                clock,
                                peer,
                                admission.clone(),
                            ),
                            slot,
                        ))
                    }
                    Err(e) => Err(e),
                };

                match new_client {
                    Ok((client, slot)) => {
                        let messages = inside_messages.clone();
                        let mut client = Some((client, slot));
                        tasks_pool.spawn(Box::new(move || {
                            // The slot is given back when the connection ends.
                            if let Some((client, _slot)) = client.take() {
                                serve(client, &messages);
                            }
                        }));
                    }

                    // The release ended the accept thread on any error, so
                    // one EMFILE stopped the server for good. An accept
                    // error concerns one connection: report it, pause so a
                    // persistent error cannot spin, and go on.
                    Err(e) => {
                        if out_of_descriptors(&e) {
                            drop(reserve.take());
                            if let Ok((sock, _)) = server.accept() {
                                table.stats.count_refused();
                                refuse(sock);
                            }
                            table.shed_for_descriptors();
                        }
                        inside_messages.push(e.into());
                        thread::sleep(Duration::from_millis(50));
                    }
                }
            }
            log::debug!("Terminating accept thread");
        });

        // result
        Ok(Server {
            stats,
            messages,
            close: close_trigger,
            listening_addr: local_addr,
        })
    }

    /// Returns an iterator for all the incoming requests.
    ///
    /// The iterator will return `None` if the server socket is shutdown.
    #[inline]
    pub fn incoming_requests(&self) -> IncomingRequests<'_> {
        IncomingRequests { server: self }
    }

    /// Returns the address the server is listening to.
    #[inline]
    pub fn server_addr(&self) -> ListenAddr {
        self.listening_addr.clone()
    }

    /// Counters of the connection bounds (mailproc patch).
    pub fn connection_stats(&self) -> Arc<util::ConnectionStats> {
        self.stats.clone()
    }

    /// Returns the number of clients currently connected to the server.
    pub fn num_connections(&self) -> usize {
        unimplemented!()
        //self.requests_receiver.lock().len()
    }

    /// Blocks until an HTTP request has been submitted and returns it.
    pub fn recv(&self) -> IoResult<Request> {
        match self.messages.pop() {
            Some(Message::Error(err)) => Err(err),
            Some(Message::NewRequest(rq)) => Ok(rq),
            None => Err(IoError::new(IoErrorKind::Other, "thread unblocked")),
        }
    }

    /// Same as `recv()` but doesn't block longer than timeout
    pub fn recv_timeout(&self, timeout: Duration) -> IoResult<Option<Request>> {
        match self.messages.pop_timeout(timeout) {
            Some(Message::Error(err)) => Err(err),
            Some(Message::NewRequest(rq)) => Ok(Some(rq)),
            None => Ok(None),
        }
    }

    /// Same as `recv()` but doesn't block.
    pub fn try_recv(&self) -> IoResult<Option<Request>> {
        match self.messages.try_pop() {
            Some(Message::Error(err)) => Err(err),
            Some(Message::NewRequest(rq)) => Ok(Some(rq)),
            None => Ok(None),
        }
    }

    /// Unblock thread stuck in recv() or incoming_requests().
    /// If there are several such threads, only one is unblocked.
    /// This method allows graceful shutdown of server.
    pub fn unblock(&self) {
        self.messages.unblock();
    }
}

/// The address a connection counts under for the per-address cap
/// (mailproc patch): an IPv4 address, or an IPv6 /64 (one subscriber usually
/// holds a whole /64 and can pick any address in it).
fn client_address(ip: std::net::IpAddr) -> std::net::IpAddr {
    match ip.to_canonical() {
        std::net::IpAddr::V6(v6) => {
            let mut s = v6.segments();
            s[4..].fill(0);
            std::net::IpAddr::from(s)
        }
        v4 => v4,
    }
}

/// Hands a connection's requests to the application one at a time
/// (mailproc patch). The release read and queued every pipelined request at
/// once (it waited only over TLS), so one connection could fill the queue
/// and have every thread of the application block writing answers that its
/// client never read. Here the next request is read only once the last is
/// answered, and an answer printed to memory is written on this, the
/// connection's own, thread, within the response deadline (`Limits`).
fn serve(mut client: ClientConnection, messages: &MessagesQueue<Message>) {
    use std::io::Write;
    let (sender, receiver) = mpsc::channel();
    while let Some(rq) = client.next() {
        messages.push(rq.with_notify_sender(sender.clone()).into());
        match receiver.recv() {
            Ok(request::Answered::Written) => {}
            Ok(request::Answered::Write((mut writer, bytes, body))) => {
                if writer.write_all(&bytes).and_then(|_| writer.flush()).is_err() {
                    // Missed the deadline or gone: the connection ends.
                    return;
                }
                // Only now: an unread body shuts the write side as it goes.
                drop(writer);
                drop(body);
            }
            // The request was dropped without a word: the server is going.
            Err(_) => return,
        }
    }
}

/// EMFILE or ENFILE: the process, or the system, has no descriptor left
/// (mailproc patch; the application says so in its log).
pub fn out_of_descriptors(e: &std::io::Error) -> bool {
    matches!(e.raw_os_error(), Some(23 | 24))
}

/// Answers a connection refused at the cap: a short `503` if the socket takes
/// it at once (it never blocks the accept thread), then the close
/// (mailproc patch).
fn refuse(sock: Connection) {
    use std::io::Write;
    if sock.set_nonblocking(true).is_ok() {
        const BODY: &str = r#"{"error":"too many connections: try again in a second"}"#;
        let _ = (&sock).write(
            format!(
                "HTTP/1.1 503 Service Unavailable\r\nConnection: close\r\nRetry-After: 1\r\n\
                 Content-Type: application/json\r\nContent-Length: {}\r\n\r\n{BODY}",
                BODY.len()
            )
            .as_bytes(),
        );
    }
    let _ = sock.shutdown(Shutdown::Both);
}

impl Iterator for IncomingRequests<'_> {
    type Item = Request;
    fn next(&mut self) -> Option<Request> {
        self.server.recv().ok()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.close.store(true, Relaxed);
        // Connect briefly to ourselves to unblock the accept thread
        let maybe_stream = match &self.listening_addr {
            ListenAddr::IP(addr) => TcpStream::connect(addr).map(Connection::from),
            #[cfg(unix)]
            ListenAddr::Unix(addr) => {
                // TODO: use connect_addr when its stabilized.
                let path = addr.as_pathname().unwrap();
                std::os::unix::net::UnixStream::connect(path).map(Connection::from)
            }
        };
        if let Ok(stream) = maybe_stream {
            let _ = stream.shutdown(Shutdown::Both);
        }

        #[cfg(unix)]
        if let ListenAddr::Unix(addr) = &self.listening_addr {
            if let Some(path) = addr.as_pathname() {
                let _ = std::fs::remove_file(path);
            }
        }
    }
}

#[cfg(test)]
mod cap_tests {
    use std::io::Read;
    use std::net::{TcpListener, TcpStream};

    /// mailproc patch: the 503 at the connection cap is a whole response
    /// with a JSON body, as every refusal of the service.
    #[test]
    fn the_503_at_the_cap_is_json() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let mut client = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (server, _) = l.accept().unwrap();
        super::refuse(server.into());
        let mut got = String::new();
        client.read_to_string(&mut got).unwrap();
        let (head, body) = got.split_once("\r\n\r\n").expect("a head and a body");
        assert!(head.starts_with("HTTP/1.1 503 Service Unavailable\r\n"), "{head}");
        assert!(head.contains("\r\nContent-Type: application/json\r\n"), "{head}");
        assert!(head.contains(&format!("\r\nContent-Length: {}", body.len())), "{head}");
        assert_eq!(body, r#"{"error":"too many connections: try again in a second"}"#);
    }
}
