//! Host name lookups with a deadline, on one long-lived named thread
//! (`dns`).
//!
//! `getaddrinfo` can be neither cancelled nor given a time-out, so a lookup
//! that must not outlast its caller's deadline has to run elsewhere. One
//! thread per lookup (what ureq's default resolver and the SSRF guard did)
//! costs a thread per webhook delivery and per new model connection. Here
//! one thread does every lookup in turn, from a bounded queue: a caller
//! waits for its answer until its deadline and then goes on without it; a
//! request whose caller has given up meanwhile is dropped unlooked-up; a
//! full queue is refused at once. A lookup that hangs (a dead DNS server)
//! delays the ones behind it, which then fail at their own deadlines, as
//! they would have anyway.
//!
//! Used by the SSRF guard of webhooks (`webhook::ssrf`) and, through
//! [`UreqResolver`], by the agent of model providers and OAuth2 endpoints
//! (`agent`). It sits below every room and imports none of them.

use std::net::{IpAddr, SocketAddr, ToSocketAddrs};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, Sender, TrySendError};

/// Lookups waiting for the thread. Each webhook delivery and each new
/// connection to a model provider or token endpoint needs at most one, and
/// the thread answers a working DNS in milliseconds: a queue this long
/// means lookups hang, and queueing more would only fail later.
const QUEUE: usize = 64;

/// Resolves `(host, port)` to addresses; the system's resolver by default.
pub type LookupFn = dyn Fn(&str, u16) -> std::io::Result<Vec<SocketAddr>> + Send + Sync;

/// What a caller gets: the addresses, or why not.
type Answer = Result<Vec<SocketAddr>, String>;

struct Request {
    host: String,
    port: u16,
    /// The caller stops waiting then; after it, the lookup is not done.
    deadline: Instant,
    reply: Sender<Answer>,
}

/// A lookup thread and its queue.
pub struct Resolver {
    tx: Sender<Request>,
}

impl Resolver {
    /// Starts a thread named `name` that looks up with `lookup`, taking
    /// requests from a queue of `queue`.
    pub fn start(name: &str, queue: usize, lookup: Box<LookupFn>) -> std::io::Result<Resolver> {
        let (tx, rx) = crossbeam_channel::bounded(queue);
        std::thread::Builder::new()
            .name(name.to_string())
            .spawn(move || serve(&rx, &*lookup))?;
        Ok(Resolver { tx })
    }

    /// The addresses of `host`, or why there are none: not found, no
    /// answer within `timeout`, or too many lookups waiting.
    pub fn lookup(&self, host: &str, port: u16, timeout: Duration) -> Answer {
        let deadline = Instant::now() + timeout;
        let (reply, answer) = crossbeam_channel::bounded(1);
        let req = Request {
            host: host.to_string(),
            port,
            deadline,
            reply,
        };
        match self.tx.try_send(req) {
            Ok(()) => {}
            Err(TrySendError::Full(_)) => {
                return Err(format!(
                    "too many lookups waiting ({}); is DNS answering?",
                    self.tx.capacity().unwrap_or(0)
                ))
            }
            Err(TrySendError::Disconnected(_)) => {
                return Err("the resolver thread is gone".to_string())
            }
        }
        answer
            .recv_deadline(deadline)
            .unwrap_or_else(|_| Err(format!("no answer within {timeout:?}")))
    }
}

/// The resolver thread: one lookup at a time, oldest first; ends when
/// every [`Resolver`] is dropped.
fn serve(rx: &Receiver<Request>, lookup: &LookupFn) {
    for req in rx {
        if Instant::now() >= req.deadline {
            continue;
        }
        let answer = lookup(&req.host, req.port).map_err(|e| e.to_string());
        let _ = req.reply.send(answer);
    }
}

/// The system's resolver: every name lookup of the process goes through
/// here (the `dns` thread's and an IMAP connection's). In a debug build
/// the failpoint `dns=error` refuses every name but an address and
/// `localhost`, which need no DNS server: the tests set it, so no test
/// sends a query to the machine's resolver (whose address is outside
/// loopback).
pub fn system_lookup(host: &str, port: u16) -> std::io::Result<Vec<SocketAddr>> {
    let local = host
        .trim_start_matches('[')
        .trim_end_matches(']')
        .parse::<IpAddr>()
        .is_ok()
        || host.eq_ignore_ascii_case("localhost");
    if !local && crate::failpoint::fails("dns") {
        return Err(std::io::Error::other(format!(
            "{host}: name lookups are off (failpoint dns=error)"
        )));
    }
    Ok((host, port).to_socket_addrs()?.collect())
}

/// The process's resolver thread (`dns`), started on first use.
pub fn shared() -> Result<&'static Resolver, String> {
    static SHARED: OnceLock<Result<Resolver, String>> = OnceLock::new();
    SHARED
        .get_or_init(|| {
            Resolver::start("dns", QUEUE, Box::new(system_lookup))
                .map_err(|e| format!("cannot start the resolver thread: {e}"))
        })
        .as_ref()
        .map_err(Clone::clone)
}

/// The addresses of `host` by the shared resolver, within `timeout`.
pub fn lookup(host: &str, port: u16, timeout: Duration) -> Answer {
    shared()?.lookup(host, port, timeout)
}

/// A ureq resolver that asks the shared resolver thread (an IP address
/// is taken as it is), within the request's time-out for resolving.
#[derive(Debug, Default)]
pub struct UreqResolver;

impl ureq::unversioned::resolver::Resolver for UreqResolver {
    fn resolve(
        &self,
        uri: &ureq::http::Uri,
        config: &ureq::config::Config,
        timeout: ureq::unversioned::transport::NextTimeout,
    ) -> Result<ureq::unversioned::resolver::ResolvedSocketAddrs, ureq::Error> {
        let host = uri.host().ok_or(ureq::Error::HostNotFound)?;
        let port = uri
            .port_u16()
            .or_else(|| match uri.scheme_str() {
                Some("https") => Some(443),
                Some("http") => Some(80),
                Some(s) if s.starts_with("socks") => Some(1080),
                _ => None,
            })
            .ok_or(ureq::Error::HostNotFound)?;
        let bare = host.trim_start_matches('[').trim_end_matches(']');
        let addrs: Vec<SocketAddr> = match bare.parse::<IpAddr>() {
            Ok(ip) => vec![SocketAddr::new(ip, port)],
            Err(_) => lookup(bare, port, *timeout.after).map_err(|e| {
                if e.starts_with("no answer within") {
                    ureq::Error::Timeout(timeout.reason)
                } else {
                    ureq::Error::Io(std::io::Error::other(format!("resolving {bare}: {e}")))
                }
            })?,
        };
        let mut out = self.empty();
        for a in config.ip_family().keep_wanted(addrs.into_iter()).take(16) {
            out.push(a);
        }
        if out.is_empty() {
            return Err(ureq::Error::HostNotFound);
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Mutex};

    const S: Duration = Duration::from_secs(1);

    fn addr(port: u16) -> SocketAddr {
        SocketAddr::from(([127, 0, 0, 1], port))
    }

    /// A lookup that answers by name: `slow` waits on the gate first.
    fn scripted(gate: Receiver<()>, asked: Arc<Mutex<Vec<String>>>) -> Box<LookupFn> {
        Box::new(move |host, port| {
            let me = std::thread::current();
            asked
                .lock()
                .unwrap()
                .push(format!("{host} on {}", me.name().unwrap_or("?")));
            match host {
                "slow" => {
                    let _ = gate.recv();
                    Ok(vec![addr(port)])
                }
                "missing" => Err(std::io::Error::other("not found")),
                _ => Ok(vec![addr(port)]),
            }
        })
    }

    #[test]
    fn lookups_are_answered_in_turn_on_one_thread() {
        let (_open, gate) = crossbeam_channel::unbounded();
        let asked = Arc::new(Mutex::new(Vec::new()));
        let r = Resolver::start("dns-test", 4, scripted(gate, asked.clone())).unwrap();
        for i in 0..50 {
            assert_eq!(r.lookup("b.test", 1000 + i, S), Ok(vec![addr(1000 + i)]));
        }
        // Every lookup ran on the resolver's own named thread.
        let asked = asked.lock().unwrap().clone();
        assert_eq!(asked.len(), 50);
        assert!(asked.iter().all(|a| a == "b.test on dns-test"), "{asked:?}");
        assert_eq!(
            r.lookup("missing", 25, S),
            Err("not found".to_string()),
            "the lookup's own error"
        );
    }

    #[test]
    fn a_hanging_lookup_costs_its_callers_their_deadline_not_a_thread_each() {
        let (open, gate) = crossbeam_channel::unbounded();
        let asked = Arc::new(Mutex::new(Vec::new()));
        let r = Resolver::start("dns-test", 2, scripted(gate, asked.clone())).unwrap();
        let short = Duration::from_millis(50);
        // The first hangs in the thread; the one behind it waits its own
        // deadline; a third finds the queue full and is refused at once.
        let t = Instant::now();
        assert!(r
            .lookup("slow", 1, short)
            .unwrap_err()
            .contains("no answer"));
        assert!(t.elapsed() >= short);
        assert!(r
            .lookup("late", 2, short)
            .unwrap_err()
            .contains("no answer"));
        assert!(r
            .lookup("late2", 3, short)
            .unwrap_err()
            .contains("no answer"));
        let refused = r.lookup("refused", 4, short).unwrap_err();
        assert!(refused.contains("too many lookups waiting"), "{refused}");
        // Once the hanging one returns, requests whose callers gave up are
        // dropped unlooked-up, and new ones are answered again.
        open.send(()).unwrap();
        // (Until the thread has dropped those two, the queue is still full.)
        let until = Instant::now() + 10 * S;
        let fresh = loop {
            match r.lookup("fresh", 5, S) {
                Err(e) if e.contains("too many") && Instant::now() < until => {
                    std::thread::yield_now()
                }
                other => break other,
            }
        };
        assert_eq!(fresh, Ok(vec![addr(5)]));
        assert_eq!(
            *asked.lock().unwrap(),
            ["slow on dns-test", "fresh on dns-test"]
        );
    }

    #[test]
    fn ureq_gets_ip_addresses_without_a_lookup() {
        use ureq::unversioned::resolver::Resolver as _;
        let config = ureq::config::Config::default();
        let t = ureq::unversioned::transport::NextTimeout::default();
        let resolve = |u: &str| {
            UreqResolver
                .resolve(&u.parse().unwrap(), &config, t)
                .map(|a| a.to_vec())
        };
        assert_eq!(resolve("http://127.0.0.1:8080/x").unwrap(), [addr(8080)]);
        assert_eq!(
            resolve("https://[::1]/").unwrap(),
            [SocketAddr::from((std::net::Ipv6Addr::LOCALHOST, 443))]
        );
        assert_eq!(resolve("http://127.0.0.1/").unwrap(), [addr(80)]);
    }
}
