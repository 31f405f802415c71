//! Hostile HTTP clients of issue [14] ("take first — found from outside"),
//! shared by `tests/hostile_edge.rs` and the `hostile` part of
//! `scripts/bench.sh`. Each attack runs on its own thread against a port on
//! loopback, reconnects when the server closes it (an attacker would), and
//! stops when its [`Attack`] is dropped.
//!
//! An attack comes from eight loopback addresses of its own
//! (`127.0.<n>.1`-`127.0.<n>.8`, a different `n` per attack), so that it can
//! fill the server's whole connection table past any per-address cap, while
//! [`health`] probes from 127.0.0.1: the "others" the service must keep
//! answering.
#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// A running attack; dropping it stops it and closes its sockets.
pub struct Attack {
    pub name: &'static str,
    stop: Arc<AtomicBool>,
    /// Connections the attack opened so far.
    pub opened: Arc<AtomicU64>,
    threads: Vec<JoinHandle<()>>,
}

impl Drop for Attack {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

impl Attack {
    fn start(
        name: &'static str,
        run: impl FnOnce(&AtomicBool, &AtomicU64) + Send + 'static,
    ) -> Attack {
        let stop = Arc::new(AtomicBool::new(false));
        let opened = Arc::new(AtomicU64::new(0));
        let (s, o) = (stop.clone(), opened.clone());
        let t = std::thread::Builder::new()
            .name(format!("attack-{name}"))
            .spawn(move || run(&s, &o))
            .unwrap();
        Attack {
            name,
            stop,
            opened,
            threads: vec![t],
        }
    }
}

/// Source addresses of the attacks: attack `n` uses `127.0.n.1..=8`.
static NEXT_NET: AtomicU64 = AtomicU64::new(1);

/// Connects to 127.0.0.1:`port` from `127.0.<net>.<host>`: another
/// client, as the server counts them.
pub fn connect_from(port: u16, net: u8, host: u8) -> std::io::Result<TcpStream> {
    use nix::sys::socket::{bind, connect, socket, AddressFamily, SockFlag, SockType, SockaddrIn};
    use std::os::fd::AsRawFd;
    let fd = socket(
        AddressFamily::Inet,
        SockType::Stream,
        SockFlag::SOCK_CLOEXEC,
        None,
    )?;
    bind(fd.as_raw_fd(), &SockaddrIn::new(127, 0, net, host, 0))?;
    connect(fd.as_raw_fd(), &SockaddrIn::new(127, 0, 0, 1, port))?;
    Ok(TcpStream::from(fd))
}

/// Where one attack connects from, in turn.
struct Source {
    net: u8,
    next: u8,
}

impl Source {
    fn new() -> Source {
        let net = (NEXT_NET.fetch_add(1, Ordering::Relaxed) % 250 + 1) as u8;
        Source { net, next: 0 }
    }
}

fn connect(port: u16, src: &mut Source, opened: &AtomicU64) -> Option<TcpStream> {
    src.next = src.next % 8 + 1;
    let s = connect_from(port, src.net, src.next).ok()?;
    opened.fetch_add(1, Ordering::Relaxed);
    Some(s)
}

/// Whether the server closed `s` (without blocking).
fn closed(s: &mut TcpStream) -> bool {
    let _ = s.set_nonblocking(true);
    let mut buf = [0u8; 4096];
    let gone = loop {
        match s.read(&mut buf) {
            Ok(0) => break true,
            Ok(_) => continue,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break false,
            Err(_) => break true,
        }
    };
    let _ = s.set_nonblocking(false);
    gone
}

fn sleep_unless(stop: &AtomicBool, d: Duration) {
    let until = Instant::now() + d;
    while Instant::now() < until && !stop.load(Ordering::SeqCst) {
        std::thread::sleep(Duration::from_millis(20).min(d));
    }
}

/// A chunked body whose chunk-size line never ends: digits, 64 KiB at a
/// time, as fast as the server takes them.
pub fn endless_chunk_line(port: u16) -> Attack {
    Attack::start("endless chunk-size line", move |stop, opened| {
        let mut src = Source::new();
        let digits = vec![b'1'; 64 << 10];
        while !stop.load(Ordering::SeqCst) {
            let Some(mut s) = connect(port, &mut src, opened) else {
                sleep_unless(stop, Duration::from_millis(100));
                continue;
            };
            let _ = s.set_write_timeout(Some(Duration::from_millis(500)));
            let head = b"POST /login HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n";
            if s.write_all(head).is_err() {
                continue;
            }
            while !stop.load(Ordering::SeqCst) {
                match s.write(&digits) {
                    Ok(0) => break,
                    Ok(_) => {}
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
                    Err(e) if e.kind() == std::io::ErrorKind::TimedOut => {}
                    Err(_) => break,
                }
            }
            sleep_unless(stop, Duration::from_millis(100));
        }
    })
}

/// `n` connections that ask for `Connection: Upgrade` and then trickle a
/// byte a second each.
pub fn upgrade_trickle(port: u16, n: usize) -> Attack {
    Attack::start(
        "Connection: Upgrade, one byte a second",
        move |stop, opened| {
            let mut src = Source::new();
            let mut open = |opened: &AtomicU64| {
                let mut s = connect(port, &mut src, opened)?;
                s.write_all(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n")
                .ok()?;
                Some(s)
            };
            let mut conns: Vec<Option<TcpStream>> = (0..n).map(|_| open(opened)).collect();
            while !stop.load(Ordering::SeqCst) {
                for c in conns.iter_mut() {
                    let alive = match c {
                        Some(s) => !closed(s) && s.write_all(b"x").is_ok(),
                        None => false,
                    };
                    if !alive {
                        *c = open(opened);
                    }
                }
                sleep_unless(stop, Duration::from_secs(1));
            }
        },
    )
}

/// One connection with a small receive buffer that pipelines `n` requests
/// for `path` and never reads an answer; opened again when the server
/// closes it.
pub fn pipelined_unread(port: u16, n: usize, path: &'static str) -> Attack {
    Attack::start("pipelined requests never read", move |stop, opened| {
        let mut src = Source::new();
        let requests = format!("GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n").repeat(n);
        while !stop.load(Ordering::SeqCst) {
            let Some(mut s) = connect(port, &mut src, opened) else {
                sleep_unless(stop, Duration::from_millis(100));
                continue;
            };
            let _ = nix::sys::socket::setsockopt(&s, nix::sys::socket::sockopt::RcvBuf, &4096);
            let _ = s.set_write_timeout(Some(Duration::from_secs(1)));
            let mut sent = 0;
            while sent < requests.len() && !stop.load(Ordering::SeqCst) {
                match s.write(&requests.as_bytes()[sent..]) {
                    Ok(0) => break,
                    Ok(k) => sent += k,
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
                    Err(_) => break,
                }
            }
            // Never read; wait until the server gives up on the connection.
            // A peek does not take the data out of the receive buffer.
            let _ = s.set_read_timeout(Some(Duration::from_millis(200)));
            while !stop.load(Ordering::SeqCst) {
                let mut b = [0u8; 1];
                match s.peek(&mut b) {
                    Ok(0) => break,
                    Err(e)
                        if e.kind() != std::io::ErrorKind::WouldBlock
                            && e.kind() != std::io::ErrorKind::TimedOut =>
                    {
                        break
                    }
                    _ => sleep_unless(stop, Duration::from_millis(200)),
                }
            }
        }
    })
}

/// `n` connections that each declare a 1 MiB body and send it at about
/// 1.1 KiB/s (110 bytes every 100 ms).
pub fn slow_bodies(port: u16, n: usize) -> Attack {
    Attack::start("slow bodies at 1.1 KiB/s", move |stop, opened| {
        let mut src = Source::new();
        let mut open = |opened: &AtomicU64| {
            let mut s = connect(port, &mut src, opened)?;
            s.write_all(b"POST /login HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 1048576\r\n\r\n")
                .ok()?;
            Some(s)
        };
        let mut conns: Vec<Option<TcpStream>> = Vec::with_capacity(n);
        for _ in 0..n {
            conns.push(open(opened));
        }
        let piece = [b' '; 110];
        while !stop.load(Ordering::SeqCst) {
            for c in conns.iter_mut() {
                let alive = match c {
                    Some(s) => !closed(s) && s.write_all(&piece).is_ok(),
                    None => false,
                };
                if !alive {
                    *c = open(opened);
                }
                if stop.load(Ordering::SeqCst) {
                    return;
                }
            }
            sleep_unless(stop, Duration::from_millis(100));
        }
    })
}

/// `n` connections that each send half a request head and nothing more;
/// the ones the server closes are opened again every second.
pub fn half_heads(port: u16, n: usize) -> Attack {
    Attack::start("half-sent request heads", move |stop, opened| {
        let mut src = Source::new();
        let mut open = |opened: &AtomicU64| {
            let mut s = connect(port, &mut src, opened)?;
            let _ = s.write_all(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n");
            Some(s)
        };
        let mut conns: Vec<Option<TcpStream>> = Vec::with_capacity(n);
        for _ in 0..n {
            if stop.load(Ordering::SeqCst) {
                return;
            }
            conns.push(open(opened));
        }
        while !stop.load(Ordering::SeqCst) {
            sleep_unless(stop, Duration::from_secs(1));
            for c in conns.iter_mut() {
                if stop.load(Ordering::SeqCst) {
                    return;
                }
                if c.as_mut().is_none_or(closed) {
                    *c = open(opened);
                }
            }
        }
    })
}

/// GET /health on a fresh connection: the status (0 for none within
/// `limit`) and how long the answer took.
pub fn health(port: u16, limit: Duration) -> (u16, Duration) {
    health_over(
        TcpStream::connect_timeout(&([127, 0, 0, 1], port).into(), limit),
        limit,
    )
}

/// [`health`] over a connection already made (or not: status 0).
pub fn health_over(stream: std::io::Result<TcpStream>, limit: Duration) -> (u16, Duration) {
    let started = Instant::now();
    let Ok(mut s) = stream else {
        return (0, started.elapsed());
    };
    s.set_read_timeout(Some(limit)).unwrap();
    s.set_write_timeout(Some(limit)).unwrap();
    if s.write_all(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
        .is_err()
    {
        return (0, started.elapsed());
    }
    let mut got = [0u8; 12];
    if s.read_exact(&mut got).is_err() {
        return (0, started.elapsed());
    }
    let status = std::str::from_utf8(&got[9..12])
        .ok()
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    (status, started.elapsed())
}

/// A line of /proc/PID/status, in its unit (threads: count; VmRSS: KiB).
/// Panics when the process is gone: a dead service has no small RSS.
pub fn status_field(pid: u32, field: &str) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_else(|e| panic!("/proc/{pid}/status: {e} (has the service died?)"));
    status
        .lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("{field} not in /proc/{pid}/status"))
}

/// Thousands of sockets need more than a default soft limit of 1024.
pub fn raise_nofile(need: u64) {
    use nix::sys::resource::{getrlimit, setrlimit, Resource};
    let (soft, hard) = getrlimit(Resource::RLIMIT_NOFILE).unwrap();
    assert!(
        hard >= need,
        "this test opens {need} sockets; the hard RLIMIT_NOFILE is {hard}: raise it (ulimit -Hn)"
    );
    if soft < need {
        setrlimit(Resource::RLIMIT_NOFILE, hard, hard).unwrap();
    }
}

/// Sends `request` as written on a fresh connection and returns everything
/// the server sent until it closed or `limit` passed.
pub fn raw(port: u16, request: &[u8], limit: Duration) -> String {
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(limit)).unwrap();
    let _ = s.write_all(request);
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    let deadline = Instant::now() + limit;
    while Instant::now() < deadline {
        match s.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => got.extend_from_slice(&buf[..n]),
        }
    }
    String::from_utf8_lossy(&got).into_owned()
}

/// The status codes of the responses in what a server sent, in order (a
/// response may follow the body of the one before on the same line).
pub fn statuses(text: &str) -> Vec<u16> {
    text.match_indices("HTTP/1.1 ")
        .filter_map(|(i, m)| text.get(i + m.len()..i + m.len() + 3)?.parse().ok())
        .collect()
}
