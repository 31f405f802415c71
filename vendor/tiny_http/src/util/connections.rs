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
//! * [`ConnectionTable`] caps the connections alive at once
//!   (`Limits::max_connections`). At the cap a new connection first sheds
//!   the one that has waited longest for a request head (idle or partial):
//!   such a client has cost nothing and is owed nothing, while the newcomer
//!   may be a health check. When every connection is inside a request the
//!   newcomer is answered `503` and closed at once.
//! * [`ConnectionStats`] counts all of that for the application's metrics.

use std::collections::BTreeMap;
use std::io;
use std::net::Shutdown;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

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

    /// Connections refused at the cap (`503` and closed) since the start.
    pub fn refused(&self) -> u64 {
        self.refused.load(Ordering::Relaxed)
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

    /// Since when this connection has been waiting for a request head, or
    /// `None` while it is inside a request.
    pub(crate) fn waiting_for_head_since(&self) -> Option<Instant> {
        let s = self.lock();
        (s.in_flight == 0 && matches!(s.phase, Phase::Idle | Phase::Head)).then_some(s.since)
    }

    /// A request was handed to the application; busy until the guard goes.
    pub(crate) fn request_started(self: &Arc<Self>) -> InFlight {
        self.lock().in_flight += 1;
        InFlight {
            clock: self.clone(),
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
        let left = match s.deadline {
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
    shutdown: Option<ShutdownFn>,
    shed: bool,
}

/// The connections alive now, for the cap.
pub(crate) struct ConnectionTable {
    max: usize,
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
    /// `max` 0 means no cap.
    pub(crate) fn new(max: usize, stats: Arc<ConnectionStats>) -> ConnectionTable {
        ConnectionTable {
            max,
            next_id: AtomicU64::new(0),
            entries: Mutex::new(BTreeMap::new()),
            stats,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<u64, Entry>> {
        self.entries.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Whether one more connection may start, shedding the longest
    /// head-waiter if the table is full. `false`: refuse the newcomer.
    pub(crate) fn make_room(&self) -> bool {
        if self.max == 0 {
            return true;
        }
        let mut entries = self.lock();
        // Shed connections are on their way out (their reads fail at once)
        // and no longer count against the cap.
        let alive = entries.values().filter(|e| !e.shed).count();
        if alive < self.max {
            return true;
        }
        let victim = entries
            .iter()
            .filter(|(_, e)| !e.shed)
            .filter_map(|(id, e)| e.clock.waiting_for_head_since().map(|t| (t, *id)))
            .min();
        let Some((_, id)) = victim else {
            self.stats.refused.fetch_add(1, Ordering::Relaxed);
            return false;
        };
        let entry = entries.get_mut(&id).expect("the victim was just found");
        entry.shed = true;
        if let Some(shutdown) = &entry.shutdown {
            shutdown(Shutdown::Both);
        }
        self.stats.shed.fetch_add(1, Ordering::Relaxed);
        true
    }

    pub(crate) fn register(
        self: &Arc<Self>,
        clock: Arc<ReadClock>,
        shutdown: Option<ShutdownFn>,
    ) -> Slot {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        self.lock().insert(
            id,
            Entry {
                clock,
                shutdown,
                shed: false,
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
    fn idle_becomes_head_at_the_first_byte() {
        let clock = ReadClock::new(limits(), Arc::default());
        clock.idle();
        assert!(clock.waiting_for_head_since().is_some());
        let wait = clock.before_read().unwrap().unwrap();
        assert!(wait > Duration::from_millis(50), "idle allowance: {:?}", wait);
        clock.after_read(3);
        let wait = clock.before_read().unwrap().unwrap();
        assert!(wait <= Duration::from_millis(50), "head allowance: {:?}", wait);
        clock.body();
        assert!(clock.waiting_for_head_since().is_none());
    }

    #[test]
    fn a_connection_whose_request_is_being_answered_is_not_idle() {
        let stats = Arc::new(ConnectionStats::default());
        let table = Arc::new(ConnectionTable::new(1, stats.clone()));
        let clock = Arc::new(ReadClock::new(limits(), stats.clone()));
        let _slot = table.register(clock.clone(), None);
        let busy = clock.request_started();
        clock.idle();
        // No idle deadline yet, and not sheddable: the newcomer is refused.
        assert_eq!(clock.before_read().unwrap(), None);
        assert!(!table.make_room());
        assert_eq!(stats.shed(), 0);
        drop(busy);
        assert!(clock.before_read().unwrap().unwrap() <= Duration::from_millis(80));
        assert!(table.make_room(), "idle once answered");
    }

    #[test]
    fn a_full_table_sheds_the_oldest_head_waiter_then_refuses() {
        let stats = Arc::new(ConnectionStats::default());
        let table = Arc::new(ConnectionTable::new(2, stats.clone()));
        let old = Arc::new(ReadClock::new(limits(), stats.clone()));
        std::thread::sleep(Duration::from_millis(2));
        let young = Arc::new(ReadClock::new(limits(), stats.clone()));
        let shut = Arc::new(AtomicUsize::new(0));
        let s = shut.clone();
        let _a = table.register(
            old.clone(),
            Some(Box::new(move |_| {
                s.fetch_add(1, Ordering::SeqCst);
            })),
        );
        let _b = table.register(young.clone(), None);
        assert!(table.make_room(), "the old head-waiter is shed");
        assert_eq!((shut.load(Ordering::SeqCst), stats.shed()), (1, 1));
        let _c = table.register(Arc::new(ReadClock::new(limits(), stats.clone())), None);
        // Everyone left is inside a request: the next one is refused.
        young.body();
        let c_clock = table.lock().values().last().unwrap().clock.clone();
        c_clock.body();
        assert!(!table.make_room());
        assert_eq!(stats.refused(), 1);
        assert_eq!(stats.open(), 3, "the shed one leaves when its thread does");
        drop(_a);
        assert_eq!(stats.open(), 2);
    }
}
