//! The one back-off: how long to wait before trying again after failures.
//!
//! Every retry of the service waits by it: a model provider's call (429,
//! 5xx, time-outs), the IMAP connection and a worker restarted after a
//! panic, a store write that failed, an OAuth2 token request, and a failed
//! message's next attempt. The wait starts at `first`, doubles with each
//! failure and stays at `max`; with jitter it is up to three quarters
//! longer (at `max`, up to a quarter shorter instead: never past it), so
//! many accounts that failed together do not try again in lockstep. After
//! a server restart drops 1,000 sessions, their first retries come over
//! three quarters of a second, not all at once (`scripts/bench.sh scale`).
//! A wait the other side named (`Retry-After`) wins.
//!
//! It sits below every room and imports none of them.

use std::time::Duration;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Backoff {
    first: Duration,
    max: Duration,
    jitter: bool,
    /// Failures since the last success.
    failures: u32,
}

impl Backoff {
    /// Waits from `first`, doubling, at most `max` (`first` when it is
    /// larger).
    pub const fn new(first: Duration, max: Duration) -> Backoff {
        Backoff {
            first,
            max,
            jitter: false,
            failures: 0,
        }
    }

    /// The same, each wait up to three quarters longer; where that would
    /// pass `max`, up to a quarter shorter than `max`.
    pub const fn jittered(mut self) -> Backoff {
        self.jitter = true;
        self
    }

    /// The wait after the `n`th failure in a row (1: the first), without
    /// jitter: `first` doubled `n - 1` times, at most `max`.
    pub fn delay(&self, n: u32) -> Duration {
        let max = self.max.max(self.first);
        let doublings = n.saturating_sub(1).min(63);
        self.first
            .checked_mul(1u32.checked_shl(doublings).unwrap_or(u32::MAX))
            .unwrap_or(max)
            .min(max)
    }

    /// One more failure: the wait before the next try.
    pub fn next_wait(&mut self) -> Duration {
        self.failures = self.failures.saturating_add(1);
        let d = self.delay(self.failures);
        if !self.jitter {
            return d;
        }
        spread(d, self.max.max(self.first), random_byte())
    }

    /// One more failure: the wait the other side asked for when it did
    /// (`Retry-After`), else [`Backoff::next_wait`].
    pub fn next_wait_or(&mut self, told: Option<Duration>) -> Duration {
        let mine = self.next_wait();
        told.unwrap_or(mine)
    }

    /// A success: the next failure waits `first` again.
    pub fn reset(&mut self) {
        self.failures = 0;
    }

    /// Failures since the last success (or since made).
    pub fn failures(&self) -> u32 {
        self.failures
    }
}

/// `d` plus `r`/256 of three quarters of it; when that passes `max`, `max`
/// less `r`/256 of a quarter of it. Less than double, so each wait of a
/// growing back-off is still longer than the one before; spread at the cap
/// too, so accounts whose outage lasted long do not meet there.
fn spread(d: Duration, max: Duration, r: u8) -> Duration {
    let r = u32::from(r);
    let longer = d.saturating_add(d * 3 * r / 1024);
    if longer <= max {
        longer
    } else {
        max - max * r / 1024
    }
}

fn random_byte() -> u8 {
    let mut b = [0u8; 1];
    // Jitter only spreads retries: without the OS source it is none.
    let _ = getrandom::fill(&mut b);
    b[0]
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: Duration = Duration::from_secs(1);

    #[test]
    fn doubles_from_first_and_stays_at_max() {
        let mut b = Backoff::new(S, 10 * S);
        let waits: Vec<u64> = (0..7).map(|_| b.next_wait().as_secs()).collect();
        assert_eq!(waits, [1, 2, 4, 8, 10, 10, 10]);
        assert_eq!(b.failures(), 7);
        b.reset();
        assert_eq!(b.failures(), 0);
        assert_eq!(b.next_wait(), S);
    }

    #[test]
    fn delay_is_pure_and_never_overflows() {
        let b = Backoff::new(Duration::from_millis(500), Duration::from_secs(60));
        assert_eq!(b.delay(0), Duration::from_millis(500));
        assert_eq!(b.delay(1), Duration::from_millis(500));
        assert_eq!(b.delay(2), S);
        assert_eq!(b.delay(8), Duration::from_secs(60));
        for n in [31, 32, 33, 64, 1000, u32::MAX] {
            assert_eq!(b.delay(n), Duration::from_secs(60), "{n}");
        }
        // A huge first wait or max saturates instead of panicking.
        let huge = Backoff::new(Duration::MAX, Duration::MAX);
        assert_eq!(huge.delay(40), Duration::MAX);
        // A max below first means first.
        assert_eq!(Backoff::new(5 * S, S).delay(3), 5 * S);
    }

    /// Issue [19]: 1,000 accounts that lost their sessions at once must
    /// not retry within a quarter of a second of each other, and the waits
    /// still grow.
    #[test]
    fn spread_covers_three_quarters_grows_and_stays_under_max() {
        let max = 300 * S;
        assert_eq!(spread(S, max, 0), S);
        let widest = spread(S, max, 255);
        assert!(widest >= Duration::from_millis(1745), "{widest:?}");
        assert!(spread(2 * S, max, 0) > widest);
        // At the cap: spread below it, never past it.
        assert_eq!(spread(max, max, 0), max);
        let lowest = spread(max, max, 255);
        assert!(lowest < max && lowest >= max * 3 / 4, "{lowest:?}");
        assert!(spread(200 * S, max, 255) <= max);
    }

    #[test]
    fn jitter_adds_at_most_three_quarters_and_never_passes_max() {
        let mut seen = std::collections::HashSet::new();
        for _ in 0..200 {
            let mut b = Backoff::new(S, 300 * S).jittered();
            let w = b.next_wait();
            assert!(w >= S && w < S + S * 3 / 4, "{w:?}");
            seen.insert(w);
            let mut capped = Backoff::new(S, 15 * S).jittered();
            for _ in 0..10 {
                let w = capped.next_wait();
                assert!(w <= 15 * S, "{w:?}");
            }
        }
        assert!(seen.len() > 1, "jitter varies: {seen:?}");
    }

    #[test]
    fn a_named_wait_wins_and_still_counts() {
        let mut b = Backoff::new(S, 60 * S);
        assert_eq!(b.next_wait_or(Some(7 * S)), 7 * S);
        assert_eq!(b.failures(), 1);
        assert_eq!(b.next_wait_or(None), 2 * S);
        assert_eq!(b.next_wait_or(Some(Duration::ZERO)), Duration::ZERO);
        assert_eq!(b.next_wait(), 8 * S);
    }
}
