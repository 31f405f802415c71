//! Signals of `mailproc run`.
//!
//! SIGINT and SIGTERM begin the graceful shutdown: ctrlc's handler sends one
//! message on the shutdown channel and `daemon::run` does the rest.
//!
//! SIGHUP must not stop the service: systemd's `ExecReload=` and operators
//! send it to ask for a reload, and ctrlc's `termination` feature would
//! treat it exactly like SIGTERM (it installs the same handler for SIGINT,
//! SIGTERM and SIGHUP). So SIGHUP is blocked in every thread and taken with
//! `sigwait` by a thread of its own, `signals`, which passes it on to
//! `daemon::run` as a reload request.
//! Blocking (not ignoring) keeps the signal for that thread: a blocked
//! signal never runs a handler, and `sigwait` takes it from the pending set.

use crossbeam_channel::Sender;
use nix::sys::signal::{SigSet, Signal};

/// Installs the handlers. Must run on the main thread before any other
/// thread exists: threads inherit the signal mask of the thread that spawns
/// them, and a thread spawned earlier would leave SIGHUP unblocked there,
/// so that the kernel could deliver it to ctrlc's handler instead.
pub fn install(shutdown: Sender<()>, reload: Sender<()>) -> Result<(), String> {
    let mut hangup = SigSet::empty();
    hangup.add(Signal::SIGHUP);
    hangup
        .thread_block()
        .map_err(|e| format!("blocking SIGHUP failed: {e}"))?;
    std::thread::Builder::new()
        .name("signals".into())
        .spawn(move || loop {
            match hangup.wait() {
                // Full means a reload is already pending; it will read
                // the file as it is by then.
                Ok(_) => {
                    let _ = reload.try_send(());
                }
                Err(e) => {
                    log::error!("signals: waiting for SIGHUP failed: {e}; SIGHUP is now ignored");
                    return;
                }
            }
        })
        .map_err(|e| format!("starting the signals thread failed: {e}"))?;
    ctrlc::set_handler(move || {
        // Full means a shutdown is already under way.
        let _ = shutdown.try_send(());
    })
    .map_err(|e| format!("installing the signal handler failed: {e}"))
}
