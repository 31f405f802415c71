//! Waits that fail on a stall, not on a wall clock.
//!
//! Something slow that shows its progress (messages processed, deliveries
//! recorded, model answers) may take much longer on a busy machine than on
//! a quiet one. A fixed total would then fail a correct run; waiting while
//! the count moves, and failing only after `stall` without any movement,
//! keeps the test meaningful (a stuck service still fails) on any machine.
#![allow(dead_code)]

use std::time::{Duration, Instant};

/// Polls `step` every 50 ms until it returns `Some(done)`. `step` also
/// reports a progress measure (any number that grows as work gets done);
/// the wait fails when that measure has not changed for `stall`. The panic
/// names `what`, the last progress seen and whatever `context` adds (a
/// service log, say).
pub fn until_done<T>(
    stall: Duration,
    what: &str,
    mut step: impl FnMut() -> (u64, Option<T>),
    context: impl Fn() -> String,
) -> T {
    let started = Instant::now();
    let mut last = None;
    let mut moved = Instant::now();
    loop {
        let (progress, done) = step();
        if let Some(v) = done {
            return v;
        }
        if last != Some(progress) {
            last = Some(progress);
            moved = Instant::now();
        }
        if moved.elapsed() > stall {
            panic!(
                "no progress for {stall:?} waiting for {what} (progress stuck at {progress} \
                 after {:?} in all)\n{}",
                started.elapsed(),
                context()
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// [`until_done`] for a count that must reach `n`: returns the last count.
pub fn until_count(
    stall: Duration,
    what: &str,
    n: u64,
    mut count: impl FnMut() -> u64,
    context: impl Fn() -> String,
) -> u64 {
    until_done(
        stall,
        what,
        || {
            let c = count();
            (c, (c >= n).then_some(c))
        },
        context,
    )
}
