//! The account workers of the running configuration: started, stopped
//! (each finishing the batch in hand), retired when a change removed or
//! renamed them, and all stopped at shutdown.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::account::{Command, Handle};
use crate::classify::Rules;
use crate::config::{AccountConfig, Config};

use super::{Fleet, Live, Running, Stopping};

impl Live {
    /// Closes the retries of accounts not in `configured` (see
    /// [`Store::close_retries_of_removed`]), saying so.
    pub(super) fn close_retries_of_removed(&self, configured: &[&str]) {
        match self.deps.store.close_retries_of_removed(configured) {
            Ok(closed) => {
                for (account, n) in closed {
                    log::info!(
                        "{account}: {n} retry(ies) closed as failed: the account is no longer \
                         configured"
                    );
                }
            }
            Err(e) => log::warn!("cannot close the retries of removed accounts: {e}"),
        }
    }

    /// At start, before any account runs: each rename noted and not handed
    /// over whose new name is configured and old name is not hands over
    /// (the pause too); any other is forgotten.
    pub(super) fn hand_over_noted(&self, configured: &[&str]) {
        let noted = match self.deps.store.noted_renames() {
            Ok(n) => n,
            Err(e) => {
                log::error!("cannot read the renames waiting to hand over: {e}");
                return;
            }
        };
        for (from, to) in noted {
            if configured.contains(&to.as_str()) && !configured.contains(&from.as_str()) {
                log::info!("{to}: renamed from {from} before the service stopped");
                self.inherit(&from, &to);
                let paused = self.deps.store.account_paused(&from).unwrap_or(false);
                let _ = self.deps.store.set_account_paused(&to, paused);
            } else {
                let _ = self.deps.store.forget_rename(&from);
            }
        }
    }

    pub(super) fn start_account(
        &self,
        fleet: &mut Fleet,
        config: &Config,
        a: &AccountConfig,
        paused: bool,
        replaces: Option<&Handle>,
    ) -> Result<(), String> {
        let (handle, commands) = Handle::new(&a.name);
        handle.keep_errors_in(self.deps.store.clone());
        if let Some(old) = replaces {
            handle.inherit_outage(old);
        }
        if paused {
            let _ = handle.send(Command::Pause);
        }
        self.deps.metrics.init_account(
            &a.name,
            &crate::actions::ActionKind::ALL.map(|k| k.as_str()),
        );
        let provider_config = a
            .provider
            .as_ref()
            .and_then(|p| config.classifier.providers.iter().find(|x| &x.name == p))
            .cloned();
        let worker = crate::imap::Worker {
            account: Arc::new(a.clone()),
            handle: handle.clone(),
            commands,
            store: self.deps.store.clone(),
            metrics: self.deps.metrics.clone(),
            webhooks: self.deps.webhooks.clone(),
            provider: a
                .provider
                .as_ref()
                .and_then(|p| fleet.providers.get(p).cloned()),
            pool: self.deps.pool.clone(),
            rules: Rules::new(&a.rules).map_err(|e| format!("account {}: {e}", a.name))?,
        };
        let thread = crate::imap::spawn(worker).map_err(|e| e.to_string())?;
        self.accounts.write().insert(a.name.clone(), handle.clone());
        fleet.running.insert(
            a.name.clone(),
            Running {
                handle,
                thread,
                account: a.clone(),
                provider: provider_config,
            },
        );
        Ok(())
    }

    /// A thread (`stop-<account>`) that waits for the stopping worker `r`
    /// and then hands over to [`Live::retired`].
    pub(super) fn wait_for_stop(&self, name: &str, r: Running) -> std::io::Result<JoinHandle<()>> {
        let me = self.me.clone();
        let name = name.to_string();
        std::thread::Builder::new()
            .name(format!("stop-{name}"))
            .spawn(move || {
                let _ = r.thread.join();
                crate::failpoint::hit("stop-waiter");
                if let Some(live) = me.upgrade() {
                    live.retired(&name, &r.handle);
                }
            })
    }

    /// The worker of `name` (whose handle was `old`) has ended: start the
    /// account again when the configuration in effect now has it, with the
    /// paused state it had, unless the service is shutting down.
    pub(super) fn retired(&self, name: &str, old: &Arc<Handle>) {
        let mut fleet = self.fleet.lock();
        // Our own handle: dropping it lets this thread end detached.
        fleet.stopping.remove(name);
        let wanted = self.config();
        let again = wanted.config.accounts.iter().find(|a| a.name == name);
        if fleet.closed || again.is_none() {
            {
                let mut registry = self.accounts.write();
                if registry.get(name).is_some_and(|h| Arc::ptr_eq(h, old)) {
                    registry.remove(name);
                }
            }
            if !fleet.closed {
                self.deps
                    .metrics
                    .remove_account(name, &crate::actions::ActionKind::ALL.map(|k| k.as_str()));
                log::info!("{name}: account removed from the configuration; stopped");
            }
            if !fleet.closed {
                let _ = self.deps.store.set_account_paused(name, false);
            }
            // At a shutdown, `shutdown` hands a waiting rename over.
            let renamed = if fleet.closed {
                None
            } else {
                fleet.renames.remove(name)
            };
            if renamed.is_none() && !fleet.closed {
                let configured = wanted.config.account_names();
                let waiting: Vec<&str> = fleet.renames.keys().map(String::as_str).collect();
                self.close_retries_of_removed(&[configured, waiting].concat());
            }
            let to = renamed.and_then(|r| wanted.config.accounts.iter().find(|a| a.name == r.to));
            if let Some(a) = to.filter(|a| !fleet.closed && !fleet.running.contains_key(&a.name)) {
                self.inherit(name, &a.name);
                let _ = self.deps.store.set_account_paused(&a.name, old.is_paused());
                match self.start_account(&mut fleet, &wanted.config, a, old.is_paused(), None) {
                    Ok(()) => log::info!("{}: renamed from {name}; started", a.name),
                    Err(e) => log::error!("{}: cannot start: {e}", a.name),
                }
            }
            return;
        }
        let a = again.expect("checked above");
        if fleet.running.contains_key(name) {
            return;
        }
        match self.start_account(&mut fleet, &wanted.config, a, old.is_paused(), Some(old)) {
            Ok(()) => log::info!("{name}: account changed; restarted"),
            Err(e) => log::error!("{name}: cannot start: {e}"),
        }
    }

    /// `to`, renamed from `from`, takes over what `from` kept: watermarks,
    /// records, learned classifier (see [`Store::hand_over`]).
    pub(super) fn inherit(&self, from: &str, to: &str) {
        match self.deps.store.hand_over(from, to) {
            Ok(h) => log::info!(
                "{to}: takes over from {from}: the watermarks of {} folder(s), {} record(s){}",
                h.folders,
                h.records,
                if h.learned {
                    ", the learned classifier"
                } else {
                    ""
                }
            ),
            Err(e) => log::error!("{to}: cannot take over from {from}: {e}"),
        }
    }

    /// Stops every account: each finishes the batch in hand.
    pub fn shutdown(&self) {
        let (running, stopping) = {
            let mut fleet = self.fleet.lock();
            fleet.closed = true;
            for r in fleet.running.values() {
                let _ = r.handle.send(Command::Shutdown);
            }
            (
                std::mem::take(&mut fleet.running),
                std::mem::take(&mut fleet.stopping),
            )
        };
        // Waited for without the lock: a waiter takes it when its worker
        // ends. A batch still in hand after the grace has its sessions cut
        // (its decisions are journalled; the next start finishes them).
        // Workers stopping already (removed, renamed away: an audit found a
        // renamed one's slow batch holding the stop past systemd's
        // patience) get the same grace.
        let grace = Instant::now() + stop_grace();
        let busy = |running: &BTreeMap<String, Running>, stopping: &BTreeMap<String, Stopping>| {
            running.values().any(|r| !r.thread.is_finished())
                || stopping.values().any(|s| !s.waiter.is_finished())
        };
        while Instant::now() < grace && busy(&running, &stopping) {
            std::thread::sleep(Duration::from_millis(50));
        }
        let late = running
            .iter()
            .filter(|(_, r)| !r.thread.is_finished())
            .map(|(name, r)| (name, &r.handle))
            .chain(
                stopping
                    .iter()
                    .filter(|(_, s)| !s.waiter.is_finished())
                    .map(|(name, s)| (name, &s.handle)),
            );
        for (name, handle) in late {
            log::warn!(
                "{name}: the batch in hand did not end within {:?} of the stop; its IMAP \
                 session is cut (what it decided is finished at the next start)",
                stop_grace()
            );
            handle.cut_sessions();
        }
        for (_, r) in running {
            let _ = r.thread.join();
        }
        for (_, s) in stopping {
            let _ = s.waiter.join();
        }
        // Renames still waiting: their old names' workers have ended now;
        // the new names take the watermarks and the pause, for the next
        // start (the second regression audit: a stop in the wait lost them).
        let renames = std::mem::take(&mut self.fleet.lock().renames);
        for (from, r) in renames {
            self.inherit(&from, &r.to);
            let paused = self.deps.store.account_paused(&from).unwrap_or(false);
            let _ = self.deps.store.set_account_paused(&r.to, paused);
            let _ = self.deps.store.set_account_paused(&from, false);
        }
    }
}

/// How long a stop waits for each account's batch in hand before it cuts
/// its sessions: within systemd's `TimeoutStopSec=60` (mailproc.service),
/// with the webhooks' 5 s after it. The failpoint `stop_grace=MS` shortens
/// it for the tests.
fn stop_grace() -> Duration {
    crate::failpoint::number("stop_grace")
        .map(|ms| Duration::from_millis(ms as u64))
        .unwrap_or(Duration::from_secs(30))
}
