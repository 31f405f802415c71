//! The HTTP workers a request may hold while it waits on something slow:
//! a password check (Argon2, one at a time) or an account's thread (an
//! undo, a "Move to…", the rule form's look at a message). Each such wait
//! holds its worker; without a bound, a few of them held every worker and
//! `/health` answered only when they ended (an audit: six undos on a busy
//! account, `/health` 39 s).
//!
//! All but one worker may wait at once (`/health` and the API keep one),
//! and each kind of wait all but two (at least one): a flood of wrong
//! logins leaves a worker for an undo, and undos on a hung account leave
//! one for a login (a regression audit found one kind refusing the other
//! with the other's message).
//!
//! Reading the activity log is the third kind: a page of it (a search of
//! a common term with a filter beside it joins and sorts every match, up
//! to 280 ms over 160,000 rows) or an export's first page. One key with
//! `read:activity` and 16 to 48 such requests at once held every worker,
//! and `/health` took 2 to 5 s (an audit of what the least permission
//! costs). Reads take all but two workers, as each kind; one more read at
//! a time may wait a moment for a place ([`READ_WAIT`]) rather than be
//! refused (an operator's two tabs and a script were refused now and
//! then: a regression audit), on a worker of its own that no gate counts
//! (counted among all the waits, it turned logins away). With all but one
//! worker for reads, a freed place went to the next read in the queue and
//! `/health` waited behind them as before (measured).

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// What a request waits on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wait {
    /// A password check.
    Login,
    /// An account's thread.
    Account,
    /// A read of the activity log: a page of it, or an export being sent.
    Read,
}

/// Why a wait was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Full {
    /// As many waits of its own kind as may be are in hand.
    Same,
    /// Waits of both kinds hold all but one worker.
    All,
}

/// The bound of all waits and of each kind's.
struct Gates {
    all: Gate,
    logins: Gate,
    accounts: Gate,
    reads: Gate,
    /// Whether a read is waiting for a place (one may).
    read_waiter: AtomicBool,
}

static GATES: Gates = Gates::new(4);

/// Sets the bounds for `workers` HTTP workers (see the module).
pub fn set_http_workers(workers: usize) {
    GATES.set(workers);
}

/// A place to wait, given back when dropped.
pub struct Place {
    _kind: Held<'static>,
    _all: Held<'static>,
}

/// How long one read may wait for a place before it is refused.
pub const READ_WAIT: Duration = Duration::from_secs(2);

/// A place for a read of the activity log, waited for up to
/// [`READ_WAIT`] by one read at a time (see the module).
pub fn enter_read() -> Result<Place, Full> {
    GATES.enter_read(READ_WAIT)
}

/// Why a read of the activity log was refused, in words.
pub fn read_refusal(full: Full) -> &'static str {
    match full {
        Full::Same => {
            "the service is busy: other reads of the activity log (searches, exports) hold \
             their share of the workers; try again in a second"
        }
        Full::All => {
            "the service is busy: logins being checked, requests waiting on accounts and \
             reads of the activity log hold all but one worker; try again in a second"
        }
    }
}

/// A place for a wait of `kind`, or why there is none.
pub fn enter(kind: Wait) -> Result<Place, Full> {
    GATES.enter(kind)
}

impl Gates {
    const fn new(workers: usize) -> Gates {
        Gates {
            all: Gate::new(workers - 1),
            logins: Gate::new(workers - 2),
            accounts: Gate::new(workers - 2),
            reads: Gate::new(workers - 2),
            read_waiter: AtomicBool::new(false),
        }
    }

    fn set(&self, workers: usize) {
        self.all
            .limit
            .store(workers.saturating_sub(1).max(1), Ordering::Relaxed);
        for g in [&self.logins, &self.accounts, &self.reads] {
            g.limit
                .store(workers.saturating_sub(2).max(1), Ordering::Relaxed);
        }
    }

    /// A place for a read, waiting up to `wait` for one when none is free
    /// and no other read waits already.
    fn enter_read(&'static self, wait: Duration) -> Result<Place, Full> {
        let full = match self.enter(Wait::Read) {
            Ok(place) => return Ok(place),
            Err(full) => full,
        };
        if self
            .read_waiter
            .compare_exchange(false, true, Ordering::AcqRel, Ordering::Acquire)
            .is_err()
        {
            return Err(full);
        }
        // The wait holds a worker of its own, counted in no gate: held
        // among all the waits, it turned the operator's logins away while
        // reads ran (a regression audit). Reads leave two workers free,
        // so one is left beside it.
        let deadline = Instant::now() + wait;
        let got = loop {
            std::thread::sleep(Duration::from_millis(5));
            match self.enter(Wait::Read) {
                Ok(place) => break Ok(place),
                Err(full) if Instant::now() >= deadline => break Err(full),
                Err(_) => {}
            }
        };
        self.read_waiter.store(false, Ordering::Release);
        got
    }

    fn enter(&'static self, kind: Wait) -> Result<Place, Full> {
        let gate = match kind {
            Wait::Login => &self.logins,
            Wait::Account => &self.accounts,
            Wait::Read => &self.reads,
        };
        let kind = gate.enter().ok_or(Full::Same)?;
        let all = self.all.enter().ok_or(Full::All)?;
        Ok(Place {
            _kind: kind,
            _all: all,
        })
    }
}

/// A bounded count of holders: [`Gate::enter`] is `None` when `limit` hold
/// it already.
struct Gate {
    holders: AtomicUsize,
    limit: AtomicUsize,
}

/// A place in a [`Gate`], given back when dropped.
struct Held<'a>(&'a Gate);

impl Gate {
    const fn new(limit: usize) -> Gate {
        Gate {
            holders: AtomicUsize::new(0),
            limit: AtomicUsize::new(limit),
        }
    }

    fn enter(&self) -> Option<Held<'_>> {
        let limit = self.limit.load(Ordering::Relaxed);
        self.holders
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < limit).then_some(n + 1)
            })
            .ok()
            .map(|_| Held(self))
    }
}

impl Drop for Held<'_> {
    fn drop(&mut self) {
        self.0.holders.fetch_sub(1, Ordering::AcqRel);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Of 4 workers: 3 may wait, 2 of each kind, so neither kind shuts
    /// the other out; of 2, one wait of either kind.
    #[test]
    fn each_kind_leaves_room_for_the_other_and_all_leave_one_worker() {
        let g: &'static Gates = Box::leak(Box::new(Gates::new(4)));
        let l1 = g.enter(Wait::Login).expect("a login");
        let l2 = g.enter(Wait::Login).expect("a second login");
        assert_eq!(g.enter(Wait::Login).err(), Some(Full::Same));
        let a1 = g.enter(Wait::Account).expect("an account wait beside them");
        assert_eq!(g.enter(Wait::Account).err(), Some(Full::All));
        drop((l1, l2, a1));
        let small: &'static Gates = Box::leak(Box::new(Gates::new(4)));
        small.set(2);
        let one = small.enter(Wait::Account).expect("one");
        assert_eq!(small.enter(Wait::Account).err(), Some(Full::Same));
        assert_eq!(small.enter(Wait::Login).err(), Some(Full::All));
        drop(one);
        assert!(small.enter(Wait::Login).is_ok());
    }

    /// Reads of the activity log take two of four workers, as each kind
    /// of wait; one more may wait a moment for a place, and a login still
    /// finds one.
    #[test]
    fn reads_of_the_log_leave_a_worker_and_one_may_wait() {
        let g: &'static Gates = Box::leak(Box::new(Gates::new(4)));
        let r1 = g.enter(Wait::Read).expect("a read");
        let r2 = g.enter(Wait::Read).expect("a second read");
        assert_eq!(g.enter(Wait::Read).err(), Some(Full::Same));
        // A place that comes free within the wait is taken.
        let freed = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(50));
            drop(r1);
        });
        let waited = g.enter_read(Duration::from_secs(5)).expect("r1's place");
        freed.join().unwrap();
        // None comes free: refused once the wait is over.
        let started = Instant::now();
        assert_eq!(
            g.enter_read(Duration::from_millis(100)).err(),
            Some(Full::Same)
        );
        assert!(started.elapsed() >= Duration::from_millis(100));
        // While one waits, another is refused at once.
        g.read_waiter.store(true, Ordering::SeqCst);
        let started = Instant::now();
        assert!(g.enter_read(Duration::from_secs(5)).is_err());
        assert!(started.elapsed() < Duration::from_secs(1));
        g.read_waiter.store(false, Ordering::SeqCst);
        // A waiting read holds no place a login needs (it turned the
        // operator's logins away: a regression audit).
        drop(waited);
        let r3 = g.enter(Wait::Read).expect("reads at their bound again");
        let waiter = std::thread::spawn(move || g.enter_read(Duration::from_millis(300)).err());
        std::thread::sleep(Duration::from_millis(50));
        let l1 = g
            .enter(Wait::Login)
            .expect("a login beside the reads and the wait");
        assert_eq!(waiter.join().unwrap(), Some(Full::Same));
        drop((r2, r3, l1));
        assert!(read_refusal(Full::Same).contains("try again"));
    }

    #[test]
    fn a_gate_holds_at_most_its_limit() {
        let gate = Gate::new(2);
        let a = gate.enter().expect("first");
        let b = gate.enter().expect("second");
        assert!(gate.enter().is_none(), "a third is busy at once");
        drop(a);
        let c = gate.enter().expect("a place came free");
        assert!(gate.enter().is_none());
        drop((b, c));
        assert_eq!(gate.holders.load(Ordering::Relaxed), 0);
        gate.limit.store(1, Ordering::Relaxed);
        let _d = gate.enter().expect("one");
        assert!(gate.enter().is_none());
    }
}
