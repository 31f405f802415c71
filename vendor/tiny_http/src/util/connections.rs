//! mailproc patch: what keeps a crowd of slow clients from owning the
//! server. The release gave every accepted connection a thread of its own
//! for as long as the client cared to keep it, with no limit: 2,000 clients
//! that each sent half a request held 2,000 threads.
//!
//! * [`ReadClock`] gives each connection deadlines by phase: its request
//!   head must arrive within `Limits::header_timeout` (from the connection,
//!   or from the first byte of a later request), a kept-alive connection may
//!   sit idle for `Limits::idle_timeout` after a response, and a body must
//!   keep up `Limits::body_min_rate`. The socket's read time-out is set
//!   before every read to what is left, so a silent client is cut at its
//!   deadline, not at the next byte it chooses to send.
//!   A body must also be complete within `Limits::body_timeout` of its
//!   first read, whatever its rate, and a response be written within
//!   `Limits::response_timeout` of its first byte (plus one second per
//!   `Limits::response_min_rate` bytes): a client that does not read loses
//!   its connection (the socket is shut down), never a thread for longer.
//! * [`ConnectionTable`] caps the connections alive at once
//!   (`Limits::max_connections`) and per client address
//!   (`Limits::max_connections_per_address`). At a cap a new connection
//!   sheds another: one from the address holding the most connections (a
//!   crowd sheds itself before a lone client), and of that address's
//!   connections one waiting for a request head (idle or partial: it has
//!   cost nothing and is owed nothing) before one still sending its body
//!   or taking its answer, the longest in its phase first. Slow bodies
//!   thus cannot keep newcomers out, and a newcomer may be a health check.
//!   Only when every connection has a request in the application's hands
//!   is the newcomer answered `503` and closed.
//! * [`ConnectionStats`] counts all of that for the application's metrics.

use std::cmp::Reverse;
use std::collections::{BTreeMap, HashMap};
use std::io;
use std::net::{IpAddr, Shutdown};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How many caps' worth of shed connections may be on their way out at
/// once (see [`ConnectionTable::make_room`]).
const LEAVING_PER_CAP: usize = 4;

/// How many shed connections may be on their way out at once while the
/// process is out of file descriptors (see
/// [`ConnectionTable::shed_for_descriptors`]).
const FD_LEAVING: usize = 8;

/// The connections alive by client address, and how many shed ones are on
/// their way out (they no longer count against a cap).
fn census(entries: &BTreeMap<u64, Entry>) -> (HashMap<Option<IpAddr>, usize>, usize) {
    let mut per_ip: HashMap<Option<IpAddr>, usize> = HashMap::new();
    let mut leaving = 0;
    for e in entries.values() {
        if e.shed {
            leaving += 1;
        } else {
            *per_ip.entry(e.ip).or_default() += 1;
        }
    }
    (per_ip, leaving)
}

/// Counters of the connection bounds, shared with the application.
#[derive(Debug, Default)]
pub struct ConnectionStats {
    open: AtomicUsize,
    refused: AtomicU64,
    shed: AtomicU64,
    timed_out: AtomicU64,
}

impl ConnectionStats {
    /// Connections alive now (each holds one thread).
    pub fn open(&self) -> usize {
        self.open.load(Ordering::Relaxed)
    }

    /// Connections refused at the cap, or out of file descriptors (`503`
    /// and closed), since the start.
    pub fn refused(&self) -> u64 {
        self.refused.load(Ordering::Relaxed)
    }

    /// One more refused (out of file descriptors: see the accept loop).
    pub(crate) fn count_refused(&self) {
        self.refused.fetch_add(1, Ordering::Relaxed);
    }

    /// Connections closed to make room for a new one: each had been waiting
    /// longest for a request head when the cap was reached.
    pub fn shed(&self) -> u64 {
        self.shed.load(Ordering::Relaxed)
    }

    /// Connections closed at a deadline (head, body rate or idle).
    pub fn timed_out(&self) -> u64 {
        self.timed_out.load(Ordering::Relaxed)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// Between requests, before the first byte of the next one.
    Idle,
    /// Reading a request line and headers.
    Head,
    /// Reading a body (or handling a request without one).
    Body,
    /// Draining before close, for at most the given time.
    Drain,
}

/// How readily a connection is shed to make room, lowest first: one
/// waiting for a head, then one sending a body or taking an answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum ShedClass {
    HeadWaiter,
    Busy,
}

#[derive(Debug)]
struct ClockState {
    phase: Phase,
    /// Set at the first read of the phase, so time spent waiting for the
    /// previous response (the application's time) is not the client's.
    deadline: Option<Instant>,
    /// When the current phase began; the oldest head-waiter is shed first.
    since: Instant,
    drain_for: Duration,
    /// Whether this connection was counted in `timed_out` already.
    expired: bool,
    /// The body's total deadline (`Limits::body_timeout`), set at its first
    /// read; the rate deadline above may not pass it.
    body_until: Option<Instant>,
    /// The response's deadline (`Limits::response_timeout`), set at its
    /// first write and moved on by each byte written.
    write_until: Option<Instant>,
    /// Requests handed out and not yet answered. The connection reads the
    /// next head meanwhile (the body is buffered), but it is not idle: its
    /// client waits for us. It is then not shed, and its idle time starts
    /// when the last answer is out.
    in_flight: usize,
}

/// Deadlines of one connection's read side; see the module documentation.
#[derive(Debug)]
pub struct ReadClock {
    state: Mutex<ClockState>,
    limits: crate::Limits,
    stats: Arc<ConnectionStats>,
}

impl ReadClock {
    pub(crate) fn new(limits: crate::Limits, stats: Arc<ConnectionStats>) -> ReadClock {
        let now = Instant::now();
        ReadClock {
            state: Mutex::new(ClockState {
                phase: Phase::Head,
                // The first head is due from the moment of the accept.
                deadline: limits.header_timeout.map(|t| now + t),
                since: now,
                drain_for: Duration::ZERO,
                expired: false,
                body_until: None,
                write_until: None,
                in_flight: 0,
            }),
            limits,
            stats,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, ClockState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn enter(&self, phase: Phase) {
        let mut s = self.lock();
        s.phase = phase;
        s.deadline = None;
        s.body_until = None;
        s.since = Instant::now();
    }

    /// The connection waits for the next request after a response.
    pub(crate) fn idle(&self) {
        self.enter(Phase::Idle)
    }

    /// The request head is complete; what follows is its body.
    pub(crate) fn body(&self) {
        self.enter(Phase::Body)
    }

    /// The connection closes after at most `d` of discarding input.
    pub(crate) fn drain(&self, d: Duration) {
        let mut s = self.lock();
        s.phase = Phase::Drain;
        s.deadline = None;
        s.drain_for = d;
    }

    /// Whether no byte of a next request has come since the last response.
    pub(crate) fn is_idle(&self) -> bool {
        self.lock().phase == Phase::Idle
    }

    /// Whether (and how readily) this connection may be shed, and since
    /// when it has been in its phase; `None` while the application holds
    /// one of its requests.
    pub(crate) fn shed_rank(&self) -> Option<(ShedClass, Instant)> {
        let s = self.lock();
        if s.in_flight > 0 {
            return None;
        }
        let class = match s.phase {
            Phase::Idle | Phase::Head => ShedClass::HeadWaiter,
            Phase::Body | Phase::Drain => ShedClass::Busy,
        };
        Some((class, s.since))
    }

    /// A request was handed to the application; busy until the guard goes.
    /// Its response's write deadline starts at its first byte.
    pub(crate) fn request_started(self: &Arc<Self>) -> InFlight {
        let mut s = self.lock();
        s.in_flight += 1;
        s.write_until = None;
        drop(s);
        InFlight {
            clock: self.clone(),
        }
    }

    /// How long the next write may block: what is left of the response's
    /// deadline, or `TimedOut` once it has passed.
    pub(crate) fn before_write(&self) -> io::Result<Option<Duration>> {
        let now = Instant::now();
        let mut s = self.lock();
        let Some(total) = self.limits.response_timeout else {
            return Ok(self.limits.write_timeout);
        };
        let until = *s.write_until.get_or_insert(now + total);
        if until <= now {
            drop(s);
            self.expired();
            return Err(io::Error::new(
                io::ErrorKind::TimedOut,
                "the client did not take the response in time",
            ));
        }
        let left = (until - now).max(Duration::from_millis(1));
        Ok(Some(match self.limits.write_timeout {
            Some(t) => t.min(left),
            None => left,
        }))
    }

    /// Books `n` bytes just written: each buys `1/response_min_rate` s.
    pub(crate) fn after_write(&self, n: usize) {
        if let Some(rate) = self.limits.response_min_rate {
            let mut s = self.lock();
            if let Some(until) = s.write_until.as_mut() {
                let rate = u64::from(rate.max(1));
                *until += Duration::from_micros((n as u64).saturating_mul(1_000_000) / rate);
            }
        }
    }

    /// How long the next read may block: what is left of the phase's
    /// deadline (capped by `Limits::read_timeout`), or `TimedOut` once the
    /// deadline has passed.
    pub(crate) fn before_read(&self) -> io::Result<Option<Duration>> {
        let now = Instant::now();
        let mut s = self.lock();
        // Waiting for the next request while the last is being answered:
        // the idle time has not started (the read keeps `read_timeout`).
        if s.phase == Phase::Idle && s.in_flight > 0 {
            return Ok(self.limits.read_timeout);
        }
        if s.deadline.is_none() {
            let allowed = match s.phase {
                Phase::Idle => self.limits.idle_timeout,
                // A body gets the head's allowance to start; each byte then
                // buys 1/rate seconds more (see `after_read`).
                Phase::Head | Phase::Body => self.limits.header_timeout,
                Phase::Drain => Some(s.drain_for),
            };
            s.deadline = allowed.map(|t| now + t);
        }
        if s.phase == Phase::Body && s.body_until.is_none() {
            s.body_until = self.limits.body_timeout.map(|t| now + t);
        }
        let deadline = match (s.deadline, s.body_until) {
            (Some(d), Some(b)) if s.phase == Phase::Body => Some(d.min(b)),
            (None, Some(b)) if s.phase == Phase::Body => Some(b),
            (d, _) => d,
        };
        let left = match deadline {
            None => return Ok(self.limits.read_timeout),
            Some(d) if d <= now => {
                drop(s);
                self.expired();
                return Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    "the client missed its deadline",
                ));
            }
            Some(d) => d - now,
        };
        let left = left.max(Duration::from_millis(1));
        Ok(Some(match self.limits.read_timeout {
            Some(t) => t.min(left),
            None => left,
        }))
    }

    /// The connection missed a deadline (counted once per connection; a
    /// drain that ends at its bound is not a miss).
    pub(crate) fn expired(&self) {
        let mut s = self.lock();
        if !s.expired && s.phase != Phase::Drain {
            s.expired = true;
            self.stats.timed_out.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Books `n` bytes just read.
    pub(crate) fn after_read(&self, n: usize) {
        if n == 0 {
            return;
        }
        let now = Instant::now();
        let mut s = self.lock();
        match s.phase {
            // The first byte of a request: its head is due from now.
            Phase::Idle => {
                s.phase = Phase::Head;
                s.since = now;
                s.deadline = self.limits.header_timeout.map(|t| now + t);
            }
            Phase::Body => {
                if let (Some(d), Some(rate)) = (s.deadline, self.limits.body_min_rate) {
                    let rate = u64::from(rate.max(1));
                    let extra = Duration::from_micros((n as u64).saturating_mul(1_000_000) / rate);
                    s.deadline = Some(d + extra);
                }
            }
            Phase::Head | Phase::Drain => {}
        }
    }
}

/// Held by a request until it is answered and dropped.
#[derive(Debug)]
pub(crate) struct InFlight {
    clock: Arc<ReadClock>,
}

impl Drop for InFlight {
    fn drop(&mut self) {
        let mut s = self.clock.lock();
        s.in_flight = s.in_flight.saturating_sub(1);
        if s.in_flight == 0 && s.phase == Phase::Idle {
            // Idle from now: last in line to be shed, deadline set anew.
            s.since = Instant::now();
            s.deadline = None;
        }
    }
}

type ShutdownFn = Box<dyn Fn(Shutdown) + Send + Sync>;

struct Entry {
    clock: Arc<ReadClock>,
    shutdown: ShutdownFn,
    shed: bool,
    /// The client's address (`None` for a Unix socket).
    ip: Option<IpAddr>,
}

/// The connections alive now, for the cap.
pub(crate) struct ConnectionTable {
    max: usize,
    /// Connections one client address may hold at once; 0 for no cap.
    per_address: usize,
    next_id: AtomicU64,
    entries: Mutex<BTreeMap<u64, Entry>>,
    pub(crate) stats: Arc<ConnectionStats>,
}

/// A connection's place in the table; leaving it (drop) frees the place.
pub(crate) struct Slot {
    table: Arc<ConnectionTable>,
    id: u64,
}

impl Drop for Slot {
    fn drop(&mut self) {
        let mut entries = self.table.lock();
        if entries.remove(&self.id).is_some() {
            self.table.stats.open.fetch_sub(1, Ordering::Relaxed);
        }
    }
}

impl ConnectionTable {
    /// `max` 0 means no cap, and so does `per_address` 0.
    pub(crate) fn new(
        max: usize,
        per_address: usize,
        stats: Arc<ConnectionStats>,
    ) -> ConnectionTable {
        ConnectionTable {
            max,
            per_address,
            next_id: AtomicU64::new(0),
            entries: Mutex::new(BTreeMap::new()),
            stats,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<u64, Entry>> {
        self.entries.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Whether one more connection from `ip` may start, shedding another
    /// if a cap is reached (see the module documentation). `false`: refuse
    /// the newcomer.
    pub(crate) fn make_room(&self, ip: Option<IpAddr>) -> bool {
        let mut entries = self.lock();
        // Shed connections are on their way out (their reads fail at once)
        // and no longer count against a cap.
        // They still hold a socket and a place in the task pool until
        // their thread ends, so at most [`LEAVING_PER_CAP`] times the cap
        // may be on their way out at once: a client that resets
        // connections as fast as it opens them, each shedding the one
        // before, on a machine too busy to end their threads at once, was
        // otherwise answered by ever more sockets (thousands, until the
        // process ran out of file descriptors). Past it a newcomer that
        // would shed another is refused. (A shed connection drains what
        // its client still sends for up to 2 s, so the bound is several
        // caps, not one: at one, slow bodies shed for a health check left
        // the check a 503 on a loaded machine.)
        let (per_ip, leaving) = census(&entries);
        let alive: usize = per_ip.values().sum();
        let mine = per_ip.get(&ip).copied().unwrap_or(0);
        let at_address_cap = self.per_address != 0 && ip.is_some() && mine >= self.per_address;
        if !at_address_cap && (self.max == 0 || alive < self.max) {
            return true;
        }
        if self.max != 0 && leaving >= LEAVING_PER_CAP * self.max {
            self.stats.refused.fetch_add(1, Ordering::Relaxed);
            return false;
        }
        if at_address_cap {
            // The address's own connections make room for it, or it waits.
            return self.shed_one(&mut entries, &per_ip, |e| e.ip == ip);
        }
        self.shed_one(&mut entries, &per_ip, |_| true)
    }

    /// Out of file descriptors: sheds a connection (as [`Self::make_room`]
    /// would at a cap: from the biggest crowd, a head-waiter first) so one
    /// comes free, unless [`FD_LEAVING`] are on their way out already (a
    /// descriptor taken by something else than connections must not shed
    /// them all). `false`: none shed.
    pub(crate) fn shed_for_descriptors(&self) -> bool {
        let mut entries = self.lock();
        let (per_ip, leaving) = census(&entries);
        if leaving >= FD_LEAVING {
            return false;
        }
        self.shed_one(&mut entries, &per_ip, |_| true)
    }

    /// Sheds the most sheddable connection that `eligible` allows: one
    /// from the address holding the most connections; of those a
    /// head-waiter before a busy one, the longest in its phase first. A
    /// crowd from a few addresses thus sheds itself before it sheds a lone
    /// client. `false` (counted as refused) when every candidate is in the
    /// application's hands.
    fn shed_one(
        &self,
        entries: &mut BTreeMap<u64, Entry>,
        per_ip: &HashMap<Option<IpAddr>, usize>,
        eligible: impl Fn(&Entry) -> bool,
    ) -> bool {
        let victim = entries
            .iter()
            .filter(|(_, e)| !e.shed && eligible(e))
            .filter_map(|(id, e)| {
                let (class, since) = e.clock.shed_rank()?;
                let crowd = per_ip.get(&e.ip).copied().unwrap_or(0);
                Some(((Reverse(crowd), class, since), *id))
            })
            .min();
        let Some((_, id)) = victim else {
            self.stats.refused.fetch_add(1, Ordering::Relaxed);
            return false;
        };
        let entry = entries.get_mut(&id).expect("the victim was just found");
        entry.shed = true;
        (entry.shutdown)(Shutdown::Both);
        self.stats.shed.fetch_add(1, Ordering::Relaxed);
        true
    }

    pub(crate) fn register(
        self: &Arc<Self>,
        clock: Arc<ReadClock>,
        shutdown: ShutdownFn,
        ip: Option<IpAddr>,
    ) -> Slot {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        self.lock().insert(
            id,
            Entry {
                clock,
                shutdown,
                shed: false,
                ip,
            },
        );
        self.stats.open.fetch_add(1, Ordering::Relaxed);
        Slot {
            table: self.clone(),
            id,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits() -> crate::Limits {
        crate::Limits {
            header_timeout: Some(Duration::from_millis(50)),
            idle_timeout: Some(Duration::from_millis(80)),
            body_min_rate: Some(1000),
            ..crate::Limits::UNLIMITED
        }
    }

    fn ip(last: u8) -> Option<IpAddr> {
        Some(IpAddr::from([127, 0, 0, last]))
    }

    fn noop() -> ShutdownFn {
        Box::new(|_| {})
    }

    #[test]
    fn a_head_is_due_from_the_accept_and_expires() {
        let clock = ReadClock::new(limits(), Arc::default());
        let wait = clock.before_read().unwrap().unwrap();
        assert!(wait <= Duration::from_millis(50));
        std::thread::sleep(Duration::from_millis(60));
        let err = clock.before_read().unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::TimedOut);
        assert_eq!(clock.stats.timed_out(), 1);
    }

    #[test]
    fn body_bytes_buy_time_at_the_minimum_rate() {
        let clock = ReadClock::new(limits(), Arc::default());
        clock.body();
        clock.before_read().unwrap();
        // 1000 bytes at 1000 B/s: one more second on top of the 50 ms.
        clock.after_read(1000);
        let wait = clock.before_read().unwrap().unwrap();
        assert!(wait > Duration::from_millis(900), "{:?}", wait);
    }

    #[test]
    fn a_body_at_the_minimum_rate_still_ends_at_its_total_deadline() {
        let clock = ReadClock::new(
            crate::Limits {
                body_timeout: Some(Duration::from_millis(100)),
                ..limits()
            },
            Arc::default(),
        );
        clock.body();
        clock.before_read().unwrap();
        clock.after_read(1_000_000);
        let wait = clock.before_read().unwrap().unwrap();
        assert!(wait <= Duration::from_millis(100), "{:?}", wait);
        std::thread::sleep(Duration::from_millis(110));
        assert_eq!(
            clock.before_read().unwrap_err().kind(),
            io::ErrorKind::TimedOut
        );
    }

    #[test]
    fn a_response_has_a_total_deadline_from_its_first_byte() {
        let clock = Arc::new(ReadClock::new(
            crate::Limits {
                response_timeout: Some(Duration::from_millis(50)),
                response_min_rate: Some(1000),
                ..limits()
            },
            Arc::default(),
        ));
        let busy = clock.request_started();
        assert!(clock.before_write().unwrap().unwrap() <= Duration::from_millis(50));
        // 100 bytes at 1000 B/s: 100 ms more.
        clock.after_write(100);
        assert!(clock.before_write().unwrap().unwrap() > Duration::from_millis(60));
        std::thread::sleep(Duration::from_millis(160));
        assert_eq!(
            clock.before_write().unwrap_err().kind(),
            io::ErrorKind::TimedOut
        );
        drop(busy);
        // The next response starts afresh.
        let _busy = clock.request_started();
        assert!(clock.before_write().is_ok());
    }

    #[test]
    fn idle_becomes_head_at_the_first_byte() {
        let clock = ReadClock::new(limits(), Arc::default());
        clock.idle();
        assert_eq!(
            clock.shed_rank().map(|r| r.0),
            Some(ShedClass::HeadWaiter)
        );
        let wait = clock.before_read().unwrap().unwrap();
        assert!(wait > Duration::from_millis(50), "idle allowance: {:?}", wait);
        clock.after_read(3);
        let wait = clock.before_read().unwrap().unwrap();
        assert!(wait <= Duration::from_millis(50), "head allowance: {:?}", wait);
        clock.body();
        assert_eq!(clock.shed_rank().map(|r| r.0), Some(ShedClass::Busy));
    }

    #[test]
    fn a_connection_whose_request_is_being_answered_is_not_shed() {
        let stats = Arc::new(ConnectionStats::default());
        let table = Arc::new(ConnectionTable::new(1, 0, stats.clone()));
        let clock = Arc::new(ReadClock::new(limits(), stats.clone()));
        let _slot = table.register(clock.clone(), noop(), ip(1));
        let busy = clock.request_started();
        clock.idle();
        // No idle deadline yet, and not sheddable: the newcomer is refused.
        assert_eq!(clock.before_read().unwrap(), None);
        assert!(!table.make_room(ip(2)));
        assert_eq!(stats.shed(), 0);
        drop(busy);
        assert!(clock.before_read().unwrap().unwrap() <= Duration::from_millis(80));
        assert!(table.make_room(ip(2)), "idle once answered");
    }

    #[test]
    fn a_full_table_sheds_head_waiters_then_slow_bodies_then_refuses() {
        let stats = Arc::new(ConnectionStats::default());
        let table = Arc::new(ConnectionTable::new(3, 0, stats.clone()));
        let clock = || Arc::new(ReadClock::new(limits(), stats.clone()));
        let (old, young, lone) = (clock(), clock(), clock());
        let shut = Arc::new(AtomicUsize::new(0));
        let s = shut.clone();
        let _a = table.register(
            old.clone(),
            Box::new(move |_| {
                s.fetch_add(1, Ordering::SeqCst);
            }),
            ip(1),
        );
        let _b = table.register(young.clone(), noop(), ip(1));
        let _c = table.register(lone.clone(), noop(), ip(2));
        young.body();
        lone.body();
        assert!(table.make_room(ip(3)), "the head-waiter is shed first");
        assert_eq!((shut.load(Ordering::SeqCst), stats.shed()), (1, 1));
        let newcomer = clock();
        let _d = table.register(newcomer.clone(), noop(), ip(3));
        newcomer.body();
        // Only bodies left: the one from the address holding the most
        // connections (127.0.0.1 still holds two, one being shed) goes.
        assert!(table.make_room(ip(4)));
        assert_eq!(stats.shed(), 2);
        assert!(table.lock().values().filter(|e| e.shed).all(|e| e.ip == ip(1)));
        let last = clock();
        let _e = table.register(last.clone(), noop(), ip(4));
        // Everyone left has a request in the application's hands: refused.
        let _busy: Vec<InFlight> = [&lone, &newcomer, &last]
            .iter()
            .map(|c| c.request_started())
            .collect();
        assert!(!table.make_room(ip(5)));
        assert_eq!(stats.refused(), 1);
        assert_eq!(stats.open(), 5, "the shed ones leave when their threads do");
        drop(_a);
        assert_eq!(stats.open(), 4);
    }

    #[test]
    fn a_crowd_sheds_its_own_head_waiters_before_an_older_lone_client() {
        let stats = Arc::new(ConnectionStats::default());
        let table = Arc::new(ConnectionTable::new(3, 0, stats.clone()));
        let clock = || Arc::new(ReadClock::new(limits(), stats.clone()));
        let _lone = table.register(clock(), noop(), ip(1));
        std::thread::sleep(Duration::from_millis(2));
        let _a = table.register(clock(), noop(), ip(2));
        let _b = table.register(clock(), noop(), ip(2));
        assert!(table.make_room(ip(3)));
        let shed: Vec<_> = table.lock().values().filter(|e| e.shed).map(|e| e.ip).collect();
        assert_eq!(shed, vec![ip(2)]);
    }

    #[test]
    fn one_address_at_its_cap_sheds_its_own_connections_only() {
        let stats = Arc::new(ConnectionStats::default());
        let table = Arc::new(ConnectionTable::new(10, 2, stats.clone()));
        let clock = || Arc::new(ReadClock::new(limits(), stats.clone()));
        let other = clock();
        let _o = table.register(other.clone(), noop(), ip(9));
        std::thread::sleep(Duration::from_millis(2));
        let (a, b) = (clock(), clock());
        let _a = table.register(a.clone(), noop(), ip(1));
        let _b = table.register(b.clone(), noop(), ip(1));
        assert!(table.make_room(ip(1)), "its own oldest head-waiter goes");
        let shed: Vec<_> = table.lock().values().filter(|e| e.shed).map(|e| e.ip).collect();
        assert_eq!(shed, vec![ip(1)], "never the other address's older one");
        let _c = table.register(clock(), noop(), ip(1));
        // Both of its live connections are answered by the application now.
        let _busy: Vec<InFlight> = table
            .lock()
            .values()
            .filter(|e| !e.shed && e.ip == ip(1))
            .map(|e| e.clock.request_started())
            .collect();
        assert!(!table.make_room(ip(1)));
        assert!(table.make_room(ip(2)), "other addresses still get in");
    }
    #[test]
    fn connections_on_their_way_out_are_bounded_too() {
        let stats = Arc::new(ConnectionStats::default());
        let table = Arc::new(ConnectionTable::new(2, 1, stats.clone()));
        let clock = || Arc::new(ReadClock::new(limits(), stats.clone()));
        // One address opens and never lets go: each newcomer sheds its
        // own oldest, and the shed ones have not ended yet (their threads
        // are slow, say). Once four caps' worth are leaving, it waits.
        let mut held = vec![table.register(clock(), noop(), ip(1))];
        for _ in 0..LEAVING_PER_CAP * 2 {
            assert!(table.make_room(ip(1)));
            held.push(table.register(clock(), noop(), ip(1)));
        }
        assert!(!table.make_room(ip(1)), "8 leaving");
        assert_eq!(stats.refused(), 1);
        // Another address under its cap and the table's still gets in: it
        // sheds nobody.
        assert!(table.make_room(ip(2)));
        held.push(table.register(clock(), noop(), ip(2)));
        // At the table's cap it would shed: it waits as well.
        assert!(!table.make_room(ip(3)));
        // When the leaving ones end, room comes back.
        held.retain(|slot| !table.lock().get(&slot.id).is_some_and(|e| e.shed));
        assert!(table.make_room(ip(3)));
        assert!(table.make_room(ip(1)));
    }
}
