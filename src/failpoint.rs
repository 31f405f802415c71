//! Fault injection for the tests that prove crash safety and panic
//! supervision, in the manner of the `fail` crate but with no dependency.
//!
//! Only debug builds (what `cargo test` runs) have failpoints; in a release
//! build [`hit`] and [`fails`] are empty inline functions. The variable
//! `MAILPROC_FAILPOINTS` lists `name=action` pairs separated by commas, read
//! once:
//! - `panic`: every hit panics;
//! - `panic-once`: the first hit in the process panics, later ones pass;
//! - `abort`: the process aborts at once, as a power cut would end it;
//! - `pause:MS`: every hit logs `failpoint NAME: pausing MS ms` and sleeps
//!   that long (a window for a test to act in);
//! - `error`, `error-once`: [`fails`] answers true (always, or the first
//!   time), for code that turns that into its own error (`dns=error`, which
//!   every test sets: no name lookup but of an address or `localhost`);
//! - a number `N`: [`number`] answers it, for a size a test shrinks (the
//!   window of a pass, `window=N`; the moves a pass holds, `held=N`; the
//!   bytes of a UID set in one command, `set_max=N`).

#[cfg(debug_assertions)]
type Point = (String, String, std::sync::atomic::AtomicBool);

#[cfg(debug_assertions)]
fn points() -> &'static [Point] {
    use std::sync::atomic::AtomicBool;
    use std::sync::OnceLock;
    static POINTS: OnceLock<Vec<Point>> = OnceLock::new();
    POINTS.get_or_init(|| {
        std::env::var("MAILPROC_FAILPOINTS")
            .unwrap_or_default()
            .split(',')
            .filter_map(|p| p.split_once('='))
            .map(|(n, a)| {
                let (n, a) = (n.trim().to_string(), a.trim().to_string());
                (n, a, AtomicBool::new(false))
            })
            .collect()
    })
}

/// Runs the panic or abort configured for failpoint `name`, if any.
#[cfg(debug_assertions)]
pub fn hit(name: &str) {
    use std::sync::atomic::Ordering;
    for (n, action, fired) in points() {
        if n != name {
            continue;
        }
        match action.as_str() {
            "panic" => panic!("failpoint {name}"),
            "panic-once" if !fired.swap(true, Ordering::SeqCst) => panic!("failpoint {name}"),
            "abort" => {
                log::error!("failpoint {name}: aborting");
                std::process::abort()
            }
            a => {
                if let Some(ms) = a.strip_prefix("pause:").and_then(|m| m.parse().ok()) {
                    log::info!("failpoint {name}: pausing {ms} ms");
                    std::thread::sleep(std::time::Duration::from_millis(ms));
                }
            }
        }
    }
}

/// Whether failpoint `name` is set to fail now (`error` or `error-once`).
#[cfg(debug_assertions)]
pub fn fails(name: &str) -> bool {
    use std::sync::atomic::Ordering;
    points().iter().any(|(n, action, fired)| {
        n == name
            && match action.as_str() {
                "error" => true,
                "error-once" => !fired.swap(true, Ordering::SeqCst),
                _ => false,
            }
    })
}

#[cfg(not(debug_assertions))]
#[inline(always)]
pub fn hit(_name: &str) {}

#[cfg(not(debug_assertions))]
#[inline(always)]
pub fn fails(_name: &str) -> bool {
    false
}

/// The positive number failpoint `name` is set to, if any.
#[cfg(debug_assertions)]
pub fn number(name: &str) -> Option<usize> {
    points()
        .iter()
        .find(|(n, _, _)| n == name)
        .and_then(|(_, action, _)| action.parse().ok())
        .filter(|n| *n > 0)
}

#[cfg(not(debug_assertions))]
#[inline(always)]
pub fn number(_name: &str) -> Option<usize> {
    None
}

/// The message of a caught panic.
pub fn panic_message(panic: &(dyn std::any::Any + Send)) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".into())
}
