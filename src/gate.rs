//! The HTTP workers a request may hold while it waits on something slow:
//! a password check (Argon2, one at a time) or an account's thread (an
//! undo, a "Move to…", the rule form's look at a message). Each such wait
//! holds its worker; without a bound, a few of them held every worker and
//! `/health` answered only when they ended (an audit: six undos on a busy
//! account, `/health` 39 s). [`SLOW_WORK`] lets all but one worker wait at
//! once; a request past that is answered "busy, try again" at once.

use std::sync::atomic::{AtomicUsize, Ordering};

/// The one gate of every slow wait of an HTTP worker (see the module).
pub static SLOW_WORK: Gate = Gate::new(3);

/// Lets all but one of `workers` HTTP workers (at least one) wait on
/// something slow at once.
pub fn set_http_workers(workers: usize) {
    SLOW_WORK
        .limit
        .store(workers.saturating_sub(1).max(1), Ordering::Relaxed);
}

/// A bounded count of holders: [`Gate::enter`] is `None` when `limit` hold
/// it already.
pub struct Gate {
    holders: AtomicUsize,
    limit: AtomicUsize,
}

/// A place in a [`Gate`], given back when dropped.
pub struct Held<'a>(&'a Gate);

impl Gate {
    pub const fn new(limit: usize) -> Gate {
        Gate {
            holders: AtomicUsize::new(0),
            limit: AtomicUsize::new(limit),
        }
    }

    pub fn enter(&self) -> Option<Held<'_>> {
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
