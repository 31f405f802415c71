//! The queues of the `webhooks` thread: one a target, served fairly by the
//! time each target's deliveries take.
//!
//! One thread delivers every event to every target. With one queue for
//! all, a target that answers slowly but within the time-out (so never set
//! aside as silent, [`super::Quiet`]) held every other target's events
//! behind each of its deliveries, and a burst overflowed the one queue for
//! everyone (found by an audit: a receiver answering in 4.5 s held a
//! healthy one's events 4.5 s apart, then 1,370 events were dropped). So
//! each target (by URL) has a queue of its own, bounded on its own: when a
//! target cannot keep up, only its own events are dropped. The thread takes
//! the next event from the queue whose deliveries have taken the least time
//! (start-time fair queuing: a queue that fills again starts level with
//! the one last served, with no credit for its idle time), so a target
//! answering in a millisecond is served thousands of times for each answer
//! of one that takes seconds, and waits behind at most one of its requests.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;
use std::time::Duration;

use crate::config::{EventKind, WebhookConfig};

/// Events waiting for one target. An event is under 1 KiB; a pass over a
/// backlog emits two a message (processed, action taken) far faster than
/// a target answers (the rules decide thousands a second, a target takes
/// a millisecond or more each), so this is the backlog a target gets
/// whole: 1,024 dropped the events of a healthy target past the first
/// 500 or so messages of a first start (audits). [`QUEUE_BYTES`] bounds
/// the memory either way. A target that cannot keep up with that will not
/// catch up either, and dropping (counted and logged) is better than
/// memory that grows without bound.
pub const QUEUE_SIZE: usize = 4096;

/// The bytes of the events waiting for one target: the count above bounds
/// items, this bounds memory (payloads carry mail subjects and model
/// output, whose sizes strangers and models choose).
pub const QUEUE_BYTES: usize = 4 << 20;

/// The bytes waiting for all targets together. An event wanted by several
/// targets is counted once for each, though its payload is kept once.
pub const TOTAL_BYTES: usize = 4 * QUEUE_BYTES;

/// Which configured entry an event is for: global or the emitting
/// account's own, and the entry as it was when the event was queued. Two
/// entries may share a URL (and so a queue) with headers and secrets of
/// their own; a reload may insert, remove or reorder entries meanwhile
/// (a regression audit found events sent with another entry's secret
/// when they were kept by their place in the list).
#[derive(Debug, Clone)]
pub struct Entry {
    pub global: bool,
    pub as_queued: Arc<WebhookConfig>,
    /// Its place among the entries of its list with its URL, and how many
    /// there were.
    pub nth: usize,
    pub of: usize,
}

/// One event waiting for one target.
pub struct Pending {
    pub entry: Entry,
    pub kind: EventKind,
    pub account: Arc<str>,
    pub body: Arc<str>,
    /// Taken in this order when the queues are level.
    seq: u64,
}

#[derive(Default)]
struct Lane {
    items: VecDeque<Pending>,
    bytes: usize,
    /// The time this target's deliveries have taken, on the scale of
    /// [`Lanes::clock`].
    used: Duration,
}

/// Why an event was not queued for a target.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Full {
    /// That target's own queue is full.
    Target,
    /// All queues together hold [`TOTAL_BYTES`].
    All,
}

#[derive(Default)]
pub struct Lanes {
    lanes: HashMap<String, Lane>,
    bytes: usize,
    /// The `used` of the queue served last, when it was taken from.
    clock: Duration,
    seq: u64,
}

impl Lanes {
    /// Queues an event for the target at `url`.
    pub fn push(
        &mut self,
        url: &str,
        entry: Entry,
        kind: EventKind,
        account: &Arc<str>,
        body: &Arc<str>,
    ) -> Result<(), Full> {
        let size = body.len();
        if self.bytes + size > TOTAL_BYTES {
            return Err(Full::All);
        }
        let clock = self.clock;
        let lane = self.lanes.entry(url.to_string()).or_default();
        if lane.items.len() >= QUEUE_SIZE || lane.bytes + size > QUEUE_BYTES {
            return Err(Full::Target);
        }
        if lane.items.is_empty() {
            lane.used = lane.used.max(clock);
        }
        self.seq += 1;
        lane.items.push_back(Pending {
            entry,
            kind,
            account: account.clone(),
            body: body.clone(),
            seq: self.seq,
        });
        lane.bytes += size;
        self.bytes += size;
        Ok(())
    }

    /// The next event to deliver and its target: from the queue whose
    /// deliveries took the least time, the oldest event on a tie.
    pub fn pop(&mut self) -> Option<(String, Pending)> {
        let (url, lane) = self
            .lanes
            .iter_mut()
            .filter(|(_, l)| !l.items.is_empty())
            .min_by_key(|(_, l)| (l.used, l.items.front().map_or(0, |p| p.seq)))?;
        let item = lane.items.pop_front()?;
        lane.bytes -= item.body.len();
        self.bytes -= item.body.len();
        self.clock = self.clock.max(lane.used);
        Some((url.clone(), item))
    }

    /// Adds the time a delivery to `url` took to its queue's account.
    pub fn charge(&mut self, url: &str, took: Duration) {
        if let Some(lane) = self.lanes.get_mut(url) {
            // At least a microsecond, so instant answers still take turns.
            lane.used += took.max(Duration::from_micros(1));
        }
    }

    /// Events waiting, for all targets.
    pub fn len(&self) -> usize {
        self.lanes.values().map(|l| l.items.len()).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.bytes == 0 && self.len() == 0
    }

    /// Forgets the queues of targets `keep` refuses (after a configuration
    /// change); returns how many events they held.
    pub fn retain(&mut self, keep: impl Fn(&str) -> bool) -> usize {
        let mut dropped = 0;
        let mut bytes = 0;
        self.lanes.retain(|url, lane| {
            let kept = keep(url);
            if !kept {
                dropped += lane.items.len();
                bytes += lane.bytes;
            }
            kept
        });
        self.bytes -= bytes;
        dropped
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn body(s: &str) -> Arc<str> {
        Arc::from(s)
    }

    fn push(l: &mut Lanes, url: &str, s: &str) -> Result<(), Full> {
        let entry = Entry {
            global: true,
            as_queued: Arc::new(WebhookConfig {
                url: url.into(),
                events: None,
                headers: Default::default(),
                secret: None,
            }),
            nth: 0,
            of: 1,
        };
        l.push(url, entry, EventKind::Error, &Arc::from("a"), &body(s))
    }

    /// Serves the queues as the thread does, each delivery to `slow`
    /// taking 4.5 s and every other one 1 ms; returns the order.
    fn serve(l: &mut Lanes) -> Vec<String> {
        let mut order = vec![];
        while let Some((url, p)) = l.pop() {
            let took = if url == "slow" {
                Duration::from_millis(4500)
            } else {
                Duration::from_millis(1)
            };
            l.charge(&url, took);
            order.push(format!("{url}:{}", p.body));
        }
        order
    }

    #[test]
    fn a_slow_target_waits_its_turn_by_time_not_by_event() {
        let mut l = Lanes::default();
        for i in 0..3 {
            push(&mut l, "slow", &i.to_string()).unwrap();
            push(&mut l, "fast", &i.to_string()).unwrap();
        }
        let order = serve(&mut l);
        // The oldest first; then the slow target's 4.5 s buys the fast one
        // every event it has before the slow one goes again.
        assert_eq!(
            order,
            ["slow:0", "fast:0", "fast:1", "fast:2", "slow:1", "slow:2"]
        );
    }

    #[test]
    fn a_queue_that_fills_again_gets_no_credit_for_its_idle_time() {
        let mut l = Lanes::default();
        // "fast" is served 1,000 times alone: 1 s of deliveries.
        for _ in 0..1000 {
            push(&mut l, "fast", "x").unwrap();
            let (url, _) = l.pop().unwrap();
            l.charge(&url, Duration::from_millis(1));
        }
        // "idle" comes in level with it, not 1 s behind: the two alternate.
        for i in 0..2 {
            push(&mut l, "idle", &i.to_string()).unwrap();
            push(&mut l, "fast", &i.to_string()).unwrap();
        }
        let order = serve(&mut l);
        assert_eq!(order, ["idle:0", "fast:0", "idle:1", "fast:1"]);
    }

    #[test]
    fn each_target_is_bounded_on_its_own() {
        let mut l = Lanes::default();
        for i in 0..QUEUE_SIZE {
            push(&mut l, "slow", &i.to_string()).unwrap();
        }
        assert_eq!(push(&mut l, "slow", "one more"), Err(Full::Target));
        // The other target still has all its room.
        for i in 0..QUEUE_SIZE {
            push(&mut l, "fast", &i.to_string()).unwrap();
        }
        assert_eq!(push(&mut l, "fast", "one more"), Err(Full::Target));
        assert_eq!(l.len(), 2 * QUEUE_SIZE);

        // Bytes: one target's share, then all targets'.
        let mut l = Lanes::default();
        let big = "x".repeat(QUEUE_BYTES / 2);
        push(&mut l, "a", &big).unwrap();
        push(&mut l, "a", &big).unwrap();
        assert_eq!(push(&mut l, "a", "x"), Err(Full::Target));
        for t in ["b", "c", "d"] {
            push(&mut l, t, &big).unwrap();
            push(&mut l, t, &big).unwrap();
        }
        assert_eq!(push(&mut l, "e", "x"), Err(Full::All));
        // Delivering frees the room.
        let (url, _) = l.pop().unwrap();
        l.charge(&url, Duration::from_millis(1));
        push(&mut l, "e", "x").unwrap();
    }

    #[test]
    fn retain_forgets_removed_targets_and_their_bytes() {
        let mut l = Lanes::default();
        push(&mut l, "gone", "12345").unwrap();
        push(&mut l, "gone", "12345").unwrap();
        push(&mut l, "kept", "1").unwrap();
        assert_eq!(l.retain(|u| u == "kept"), 2);
        assert_eq!(l.len(), 1);
        assert_eq!(l.bytes, 1);
        let (url, p) = l.pop().unwrap();
        assert_eq!((url.as_str(), &*p.body), ("kept", "1"));
        assert!(l.is_empty());
    }
}
