//! The running configuration and the account workers it implies, changed
//! while the service runs.
//!
//! Three ways lead here and all take the same path: `PUT /api/config`, the
//! dashboard's configuration editor ([`Live::replace`]: a new tree, written
//! to the file first) and SIGHUP ([`Live::reload`]: the file as it is now).
//! A new configuration is validated by the code `mailproc check-config` runs
//! before anything changes; then it is applied:
//!
//! - accounts added are started, removed ones stopped (the batch in hand is
//!   finished first), changed ones (their own settings or their provider's)
//!   stopped and started again with their paused state; their watermarks
//!   live in the store, so nothing is fetched twice. The change does not
//!   wait for a batch: each stopping worker is waited for by a thread of its
//!   own (`stop-<account>`), which starts the changed account once the old
//!   worker has ended, so no HTTP worker (and no other change) waits on a
//!   model call. Until then nothing else runs under that name;
//! - webhooks, API keys, the server token, trusted proxies and everything
//!   else read per request or per message take effect at once (handlers and
//!   workers read [`Live::config`] each time);
//! - settings only a restart can change are reported in
//!   [`Applied::restart_required`] and keep their running values;
//! - an account renamed on the same mailbox takes over where the old name
//!   left (`rename`).
//!
//! What a change may not do is checked first (`checks`); the workers are
//! started, stopped and retired in `workers`.
//!
//! One change at a time: a mutex around the whole of validate, write and
//! apply serialises concurrent requests and signals, so the file is always
//! one complete version and the running state matches the last one applied.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Weak};
use std::thread::JoinHandle;

use parking_lot::{Mutex, RwLock};

use crate::account::{Command, Handle, Registry};
use crate::classify::{Pool, Provider};
use crate::config::{AccountConfig, Config, ConfigError, Loaded, ProviderConfig};
use crate::metrics::Metrics;
use crate::store::Store;
use crate::webhook::Webhooks;

mod checks;
mod rename;
mod workers;

pub use checks::restart_required;
use checks::{auth_problems, outgoing_problems};
use rename::{gone_config, renames, Rename};

/// What the workers need that does not change with the configuration.
pub struct Deps {
    pub store: Arc<Store>,
    pub metrics: Arc<Metrics>,
    pub webhooks: Arc<Webhooks>,
    pub pool: Arc<Pool>,
}

/// One running account worker.
struct Running {
    handle: Arc<Handle>,
    thread: JoinHandle<()>,
    account: AccountConfig,
    provider: Option<ProviderConfig>,
}

/// A worker told to stop: the thread waiting for it, and its handle (a
/// shutdown cuts its sessions too when its batch outlasts the grace).
struct Stopping {
    waiter: JoinHandle<()>,
    handle: Arc<Handle>,
}

/// The workers, changed only under [`Live::fleet`]'s lock.
struct Fleet {
    running: BTreeMap<String, Running>,
    /// Accounts whose worker was told to stop and is finishing the batch in
    /// hand, with the thread that waits for it (see [`Live::retired`]).
    stopping: BTreeMap<String, Stopping>,
    providers: HashMap<String, Arc<Provider>>,
    /// Renamed accounts waiting for the old name's worker to end: old name
    /// → new. The new one then takes the old one's watermarks and starts
    /// (see [`Live::retired`]).
    renames: BTreeMap<String, Rename>,
    /// Set by [`Live::shutdown`]: nothing starts any more.
    closed: bool,
}

pub struct Live {
    /// Itself, for the threads that wait for a stopping worker.
    me: Weak<Live>,
    loaded: RwLock<Arc<Loaded>>,
    /// The configuration the process started with: what the settings only
    /// a restart changes still run with, so setting one back to its running
    /// value asks for no restart.
    booted: Config,
    accounts: RwLock<Registry>,
    fleet: Mutex<Fleet>,
    deps: Deps,
}

/// The outcome of a configuration change.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Applied {
    /// Settings that differ but keep their running value until a restart,
    /// as paths: `server.port`.
    pub restart_required: Vec<String>,
    pub started: Vec<String>,
    pub stopped: Vec<String>,
    pub restarted: Vec<String>,
    /// What `check-config` would warn of in the configuration applied (a
    /// rule that never matches, say): said at a change as at the start (a
    /// rule added through the API was taken without a word; an audit).
    pub warnings: Vec<String>,
}

#[derive(Debug)]
pub enum ChangeError {
    /// The new configuration is not valid; nothing changed.
    Invalid(Vec<String>),
    /// It is valid but could not be written; nothing changed.
    Write(String),
    /// The file was changed since the service read it (an edit not
    /// reloaded yet, or a reload that was refused): writing would undo
    /// that edit; nothing changed.
    Stale(String),
    /// The file is no longer at the version the change was made from
    /// (another save, or an edit by hand, came first): writing would undo
    /// that change; nothing changed. Carries the file's version now.
    Overtaken(String),
}

impl std::fmt::Display for ChangeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ChangeError::Invalid(problems) => write!(f, "{}", problems.join("; ")),
            ChangeError::Write(e) | ChangeError::Stale(e) => write!(f, "{e}"),
            ChangeError::Overtaken(_) => write!(f, "{OVERTAKEN}"),
        }
    }
}

/// Why a change made from an earlier version of the file is refused.
pub const OVERTAKEN: &str = "the configuration file was changed since this version of it was \
     read (a save from another page or through the API, or an edit of the file), or the service \
     restarted since (a version holds for one run): saving would undo that change; nothing \
     changed. Read the file again and save from that";

impl From<ConfigError> for ChangeError {
    fn from(e: ConfigError) -> Self {
        ChangeError::Invalid(e.problems)
    }
}

impl Live {
    /// Starts a worker for every account of `loaded`.
    pub fn start(loaded: Loaded, deps: Deps) -> Result<Arc<Live>, String> {
        let providers =
            crate::classify::providers(&loaded.config.classifier.providers, &deps.metrics)?;
        let live = Arc::new_cyclic(|me| Live {
            me: me.clone(),
            booted: loaded.config.clone(),
            loaded: RwLock::new(Arc::new(loaded)),
            accounts: RwLock::new(Registry::new()),
            fleet: Mutex::new(Fleet {
                running: BTreeMap::new(),
                stopping: BTreeMap::new(),
                providers,
                renames: BTreeMap::new(),
                closed: false,
            }),
            deps,
        });
        {
            let config = live.config();
            let mut fleet = live.fleet.lock();
            let names = config.config.account_names();
            // A rename that waited for its old name's batch when the
            // process ended (a crash, a stop cut short) hands over now.
            live.hand_over_noted(&names);
            if let Err(e) = live.deps.store.forget_pauses_except(&names) {
                log::warn!("cannot forget the pauses of removed accounts: {e}");
            }
            live.close_retries_of_removed(&names);
            for a in &config.config.accounts {
                // Paused by the operator before the service stopped.
                let paused = live.deps.store.account_paused(&a.name).unwrap_or(false);
                if paused {
                    log::info!(
                        "{}: paused before the service stopped; starts paused",
                        a.name
                    );
                }
                live.start_account(&mut fleet, &config.config, a, paused, None)?;
            }
        }
        Ok(live)
    }

    /// The configuration in effect.
    pub fn config(&self) -> Arc<Loaded> {
        self.loaded.read().clone()
    }

    /// Every running account by name (a snapshot).
    pub fn accounts(&self) -> Registry {
        self.accounts.read().clone()
    }

    pub fn account(&self, name: &str) -> Option<Arc<Handle>> {
        self.accounts.read().get(name).cloned()
    }

    /// Validates `raw` (a whole configuration as written, secrets possibly
    /// masked as `GET /api/config` shows them), writes it to the file and
    /// applies it.
    ///
    /// `posted` is the YAML text `raw` was read from, when it came as text
    /// (the dashboard's editor): it is written as it is when nothing in it
    /// was unmasked, else with its comments kept. A tree that came as such
    /// (the API, the rule form) keeps the comments of the file as it is now
    /// (see `config::keep_comments`).
    ///
    /// `base` is the version of the file (`config::file_version`) the
    /// change was made from, when its author says: the change is refused
    /// if the file is at another one now.
    ///
    /// The accounts in `spelt_out` restart even when nothing of theirs
    /// changed: an API client wrote a secret of theirs out in full (see
    /// [`literal_secret_accounts`]).
    ///
    /// `sent`: the sections a client sent, which the policy of
    /// `config::unmask` checks; the rest are the file's own.
    pub fn replace(
        &self,
        mut raw: serde_norway::Value,
        posted: Option<&str>,
        base: Option<&str>,
        spelt_out: &[String],
        sent: crate::config::Sent<'_>,
    ) -> Result<Applied, ChangeError> {
        let mut fleet = self.fleet.lock();
        let current = self.config();
        // The file as it is checked here, and the new text made from: it
        // is written over only while it holds these bytes (see
        // `write_atomically`).
        let seen = crate::config::read_bytes(&current.path).unwrap_or_default();
        // A file that is not what runs says so first: that is what to mend.
        if let Some(why) = file_differs(&current) {
            return Err(ChangeError::Stale(why));
        }
        if let Some(base) = base {
            let now = crate::config::version_of(&seen);
            if now != base {
                return Err(ChangeError::Overtaken(now));
            }
        }
        let as_posted = raw.clone();
        // Every problem at once: a masked secret that cannot be kept does
        // not hide a wrong value elsewhere.
        let mut problems = crate::config::unmask_sent(&mut raw, &current.raw, sent)
            .err()
            .unwrap_or_default();
        let config = match crate::config::from_client_tree(&raw, &|name| std::env::var(name).ok()) {
            Ok(c) => c,
            Err(e) => {
                // A secret that could not be kept is still the mask, which
                // validation would refuse again (`must be at least 16
                // characters` of a renamed account's webhook secret, an
                // audit): told once.
                let unkept: Vec<String> = (problems.iter())
                    .filter_map(|p| {
                        crate::config::split_problem(p).map(|(at, _)| format!("{at}: "))
                    })
                    .collect();
                problems.extend(
                    (e.problems.into_iter())
                        .filter(|p| !unkept.iter().any(|at| p.starts_with(at.as_str()))),
                );
                return Err(ChangeError::Invalid(problems));
            }
        };
        problems.extend(outgoing_problems(&current.config, &config));
        problems.extend(auth_problems(&current.config, &config));
        if !problems.is_empty() {
            return Err(ChangeError::Invalid(problems));
        }
        let on_disk = String::from_utf8(seen.clone()).unwrap_or_default();
        // A tree that reads as the file does (a GET put back as it was) is
        // not written: the operator's layout stays, and the backup keeps
        // the version before. Text from the editor is compared as text
        // (`write_atomically`): a comment is a change there.
        let same_tree =
            posted.is_none() && crate::config::yaml_tree(&on_disk).is_ok_and(|v| v == raw);
        let version = if same_tree {
            log::info!(
                "configuration unchanged: {} left as it is",
                current.path.display()
            );
            crate::config::version_of(on_disk.as_bytes())
        } else {
            let text = match posted {
                Some(t) if as_posted == raw => Ok(t.to_string()),
                Some(t) => crate::config::keep_comments(t, &raw),
                None => crate::config::keep_comments(&on_disk, &raw),
            }
            .map_err(|e| ChangeError::Write(format!("writing the configuration as YAML: {e}")))?;
            crate::config::write_atomically(&current.path, &text, Some(&seen)).map_err(
                |e| match e {
                    crate::config::WriteError::Changed => ChangeError::Stale(format!(
                        "{} was changed while this change was being saved (an edit saved \
                         meanwhile): nothing was written over it. Reload it (`systemctl \
                         reload mailproc`, or SIGHUP) to run it and edit here, or edit the \
                         file itself",
                        current.path.display()
                    )),
                    crate::config::WriteError::Io(e) => {
                        ChangeError::Write(format!("cannot write {e}"))
                    }
                },
            )?;
            log::info!("configuration written to {}", current.path.display());
            // A window between the file written and the change run (a
            // test reads the configuration there).
            crate::failpoint::hit("config-written");
            crate::config::version_of(text.as_bytes())
        };
        let loaded = Loaded {
            config,
            raw,
            path: current.path.clone(),
            version,
        };
        Ok(self.apply(&mut fleet, loaded, spelt_out))
    }

    /// The version of the file a change made from `running` is made from:
    /// the file's as it is now when it reads as `running` (a comment added
    /// by hand changes the bytes, not the configuration), else the one
    /// `running` was read from or written as. The rule form, made from the
    /// running configuration, was refused for good after a comment-only
    /// edit (an audit).
    pub fn version_made_from(&self, running: &Loaded) -> String {
        match crate::config::read_bytes(&running.path) {
            // The file as it was read or written: nothing to parse (every
            // `GET /api/config` asks).
            Ok(bytes) if crate::config::version_of(&bytes) == running.version => {
                running.version.clone()
            }
            Ok(bytes) if file_differs(running).is_none() => crate::config::version_of(&bytes),
            // A file gone is written again by a save, which checks the
            // version of no bytes (a save with its tag was refused 412 for
            // ever: the second regression audit).
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => crate::config::version_of(&[]),
            _ => running.version.clone(),
        }
    }

    /// Why the file on disk is not the configuration in effect, when it is
    /// not (see [`file_differs`]).
    pub fn file_differs(&self) -> Option<String> {
        file_differs(&self.config())
    }

    /// Reads the file again (SIGHUP) and applies it when valid; when it is
    /// not, the running configuration stays and the problems are returned.
    pub fn reload(&self) -> Result<Applied, ChangeError> {
        let mut fleet = self.fleet.lock();
        let loaded = crate::config::load_again(&self.config().path)?;
        if crate::auth::api_is_open(&loaded.config)
            && !crate::auth::api_is_open(&self.config().config)
        {
            log::warn!(
                "NO API AUTHENTICATION: the file reloaded sets neither server.auth_token nor \
                 dashboard.api_keys, so anyone who reaches the port can read and change \
                 everything. Use this for development only."
            );
        }
        Ok(self.apply(&mut fleet, loaded, &[]))
    }

    /// Applies `new`. The accounts in `spelt_out` restart even when nothing
    /// of theirs changed (see [`literal_secret_accounts`]).
    fn apply(&self, fleet: &mut Fleet, new: Loaded, spelt_out: &[String]) -> Applied {
        let old = self.config();
        let mut applied = Applied {
            restart_required: restart_required(&self.booted, &new.config),
            warnings: crate::config::warnings(&new.config),
            ..Applied::default()
        };
        for w in &applied.warnings {
            log::warn!("{w}");
        }
        // Providers first: a changed one is rebuilt, and so is every account
        // using it (below). One that cannot be built keeps the old one.
        for p in &new.config.classifier.providers {
            let same = old.config.classifier.providers.iter().any(|o| o == p);
            if same && fleet.providers.contains_key(&p.name) {
                continue;
            }
            match Provider::new(p.clone(), self.deps.metrics.clone()) {
                Ok(built) => {
                    fleet.providers.insert(p.name.clone(), Arc::new(built));
                    // Its calls without an answer were the old settings':
                    // counted on, /health read it down until mail came,
                    // and the log's hint stayed the old cause's (an audit).
                    if !same {
                        self.deps.pool.settings_changed(&p.name);
                    }
                }
                Err(e) => log::error!("provider {}: {e}; keeping the previous one", p.name),
            }
        }
        let metrics = &self.deps.metrics;
        let kept: Vec<&str> = new
            .config
            .classifier
            .providers
            .iter()
            .map(|p| p.name.as_str())
            .collect();
        self.deps.pool.retire_all_but(&kept);
        fleet.providers.retain(|name, _| {
            let kept = new
                .config
                .classifier
                .providers
                .iter()
                .any(|p| &p.name == name);
            if !kept {
                // Its series go with it, as a removed account's do.
                metrics.remove_provider(name);
            }
            kept
        });

        // Stop what is gone or changed; all of them at once. Each finishes
        // its batch while this change goes on (see `retired`).
        let provider_of = |c: &Config, a: &AccountConfig| {
            a.provider
                .as_ref()
                .and_then(|p| c.classifier.providers.iter().find(|x| &x.name == p))
                .cloned()
        };
        // An account is kept only while its text is the same too: a
        // password written in full where a `${NAME}` was is a change even
        // when it is the same value (an audit found the `restarted` list
        // telling a client whether its guess was the variable's value).
        let written = |raw: &serde_norway::Value, name: &str| {
            raw.get("accounts")
                .and_then(serde_norway::Value::as_sequence)
                .and_then(|l| {
                    l.iter()
                        .find(|a| a.get("name").and_then(serde_norway::Value::as_str) == Some(name))
                })
                .cloned()
        };
        let names: Vec<String> = fleet.running.keys().cloned().collect();
        for name in names {
            let wanted = new.config.accounts.iter().find(|a| a.name == name);
            let keep = wanted.is_some_and(|a| {
                let r = &fleet.running[&name];
                r.account == *a
                    && r.provider == provider_of(&new.config, a)
                    && written(&old.raw, &name) == written(&new.raw, &name)
                    && !spelt_out.contains(&name)
            });
            if keep {
                continue;
            }
            let r = fleet.running.remove(&name).expect("listed above");
            let _ = r.handle.send(Command::Shutdown);
            if wanted.is_some() {
                applied.restarted.push(name.clone());
            } else {
                // Gone from the API at once; its batch still finishes.
                self.accounts.write().remove(&name);
                log::info!(
                    "{name}: account removed from the configuration; stopping after the batch in hand"
                );
                applied.stopped.push(name.clone());
            }
            let handle = r.handle.clone();
            match self.wait_for_stop(&name, r) {
                Ok(waiter) => {
                    fleet.stopping.insert(name, Stopping { waiter, handle });
                }
                Err(e) => log::error!("{name}: cannot wait for the worker to stop: {e}"),
            }
        }
        // One still stopping from an earlier change, whose restart this
        // change cancels by removing it: stopped too, and gone from the API
        // at once (its waiter, finding it gone, does not start it again).
        let cancelled: Vec<String> = fleet
            .stopping
            .keys()
            .filter(|n| !new.config.accounts.iter().any(|a| &a.name == *n))
            .filter(|n| old.config.accounts.iter().any(|a| &a.name == *n))
            .filter(|n| !applied.stopped.contains(n))
            .cloned()
            .collect();
        for name in cancelled {
            self.accounts.write().remove(&name);
            log::info!("{name}: account removed from the configuration while it restarted; not started again");
            applied.stopped.push(name);
        }
        // Visible to the API from now on: a stopped account is gone, a
        // restarting one is started again by its waiter.
        *self.loaded.write() = Arc::new(new);

        let config = self.config();
        // The webhooks before any account starts: a new account's first
        // event (a `connection_lost` at once) went to the targets this
        // change removed, and missed its own (an audit).
        self.deps.webhooks.reload(&config.config);
        // A rename waiting for its old name's worker that this change takes
        // back (the new name gone, or the old one back): forgotten, and its
        // old name may be the old name of a new rename (a → b → c).
        let mut gone: Vec<(String, AccountConfig)> = applied
            .stopped
            .iter()
            .filter_map(|n| old.config.accounts.iter().find(|o| &o.name == n))
            .map(|o| (o.name.clone(), o.clone()))
            .collect();
        let taken_back: Vec<String> = fleet
            .renames
            .iter()
            .filter(|(from, r)| {
                !config.config.accounts.iter().any(|a| a.name == r.to)
                    || config.config.accounts.iter().any(|a| &a.name == *from)
            })
            .map(|(from, _)| from.clone())
            .collect();
        for from in taken_back {
            let r = fleet.renames.remove(&from).expect("listed above");
            let _ = self.deps.store.forget_rename(&from);
            log::info!(
                "{}: the rename from {from} is taken back by this change",
                r.to
            );
            if !config.config.accounts.iter().any(|a| a.name == from) {
                gone.push((from, r.was));
            }
        }
        let renamed_from = renames(&old.config, &config.config, &gone);
        let gone_list = gone;
        // The names added that recorded a folder before (a name given back
        // goes on from its watermarks), read before any of them starts and
        // records its first.
        let known_before: Vec<String> = (config.config.accounts.iter())
            .filter(|a| !fleet.running.contains_key(&a.name))
            .filter(|a| {
                (a.folders.watch.iter())
                    .any(|f| matches!(self.deps.store.folder_state(&a.name, f), Ok(Some(_))))
            })
            .map(|a| a.name.clone())
            .collect();
        for a in &config.config.accounts {
            if fleet.running.contains_key(&a.name) {
                continue;
            }
            if fleet.stopping.contains_key(&a.name) {
                // Its waiter starts it once the old worker has ended.
                if !applied.restarted.contains(&a.name) {
                    applied.restarted.push(a.name.clone());
                }
                continue;
            }
            if fleet.renames.values().any(|r| r.to == a.name) {
                continue; // started by the waiter of its old name
            }
            if let Some(gone) = renamed_from.get(&a.name) {
                // Renamed, not `backlog: all`: it goes on where the old
                // name stopped (an audit found the mail the old name had
                // not reached left without a row, under `new_only`), once
                // the old name's batch in hand is done, so that nothing
                // is taken twice.
                log::info!(
                    "{}: renamed from {gone}: goes on where {gone} stopped, once its batch in \
                     hand is done",
                    a.name
                );
                applied.started.push(a.name.clone());
                if fleet.stopping.contains_key(gone) {
                    // Noted, so that a crash in the wait still hands over.
                    if let Err(e) = self.deps.store.note_rename(gone, &a.name) {
                        log::warn!("{}: the rename from {gone} is not noted: {e}", a.name);
                    }
                    let was = gone_config(&gone_list, gone);
                    fleet.renames.insert(
                        gone.clone(),
                        Rename {
                            to: a.name.clone(),
                            was,
                        },
                    );
                    continue;
                }
                self.inherit(gone, &a.name);
            }
            match self.start_account(fleet, &config.config, a, false, None) {
                Ok(()) => {
                    log::info!("{}: account added; started", a.name);
                    if !applied.started.contains(&a.name) {
                        applied.started.push(a.name.clone());
                    }
                }
                // Only a thread that cannot be spawned ends up here.
                Err(e) => log::error!("{}: cannot start: {e}", a.name),
            }
        }
        // A rename under `backlog: all` is a removal and an addition:
        // said, since the new name starts from nothing. Added means new to
        // the configuration: a name given back while its old worker still
        // stops is started by that worker's waiter (`restarted`), and went
        // unsaid (the suite, on a loaded machine: a change 60 ms after the
        // rename).
        let added_names = config
            .config
            .accounts
            .iter()
            .map(|a| &a.name)
            .filter(|n| !old.config.accounts.iter().any(|o| &o.name == *n))
            .filter(|n| applied.started.contains(n) || applied.restarted.contains(n));
        for added in added_names {
            let Some(a) = config.config.accounts.iter().find(|a| &a.name == added) else {
                continue;
            };
            if renamed_from.contains_key(added) {
                continue;
            }
            let same_mailbox = |o: &AccountConfig| {
                o.imap.host == a.imap.host
                    && o.imap.port() == a.imap.port()
                    && o.imap.username == a.imap.username
            };
            for gone in &applied.stopped {
                if old
                    .config
                    .accounts
                    .iter()
                    .any(|o| &o.name == gone && same_mailbox(o))
                {
                    if known_before.contains(added) {
                        // An audit was told of a reprocessing that did not
                        // come: the name given back goes on from its own.
                        log::info!(
                            "{added}: on the mailbox of {gone} again: goes on from what {added} \
                             recorded before, and what {gone} recorded stays under {gone}"
                        );
                    } else {
                        log::warn!(
                            "{added}: a new account on the mailbox of {gone} (renamed?): it \
                             starts from nothing, as its backlog ({:?}) says, and what {gone} \
                             recorded stays under {gone}",
                            a.backlog
                        );
                    }
                }
            }
        }
        if !applied.restart_required.is_empty() {
            log::warn!(
                "configuration applied; these settings keep their running values until a restart: {}",
                applied.restart_required.join(", ")
            );
        } else {
            log::info!("configuration applied");
        }
        applied
    }
}

/// The accounts of a configuration an API client sent that write a secret
/// out in full (their own, or their provider's) where `GET /api/config`
/// showed the mask: each is restarted whether or not the value is the one
/// stored.
/// Kept when equal, an account's absence from `restarted` told a client
/// that may replace the accounts but not read them whether its guess of a
/// password or key was right (an audit).
pub fn literal_secret_accounts(posted: &serde_norway::Value) -> Vec<String> {
    use serde_norway::Value;
    fn items(v: Option<&Value>) -> impl Iterator<Item = &Value> {
        v.and_then(Value::as_sequence).into_iter().flatten()
    }
    let name = |v: &Value| v.get("name").and_then(Value::as_str).map(String::from);
    let providers: Vec<String> = items(posted.get("classifier").and_then(|c| c.get("providers")))
        .filter(|p| crate::config::holds_literal_secret(p, &["classifier", "providers", "*"]))
        .filter_map(name)
        .collect();
    items(posted.get("accounts"))
        .filter(|a| {
            crate::config::holds_literal_secret(a, &["accounts", "*"])
                || a.get("provider")
                    .and_then(Value::as_str)
                    .is_some_and(|p| providers.iter().any(|x| x == p))
        })
        .filter_map(name)
        .collect()
}

/// Why the configuration file no longer reads as `running`, the
/// configuration last loaded from it or written to it: edited since and
/// not reloaded, or a reload of it refused. A change through the API, the
/// editor or the rule form would then write the running values over that
/// edit (and the backup over the file before it), which an audit found
/// undoing an operator's hand edits without a word. A file that is gone
/// is written again; one that cannot be read (past 16 MiB, not a regular
/// file) is not written over: what it holds is not known (a regression
/// audit lost a hand edit, and the backup, behind a large comment).
fn file_differs(running: &Loaded) -> Option<String> {
    if let Some(why) = crate::config::from_stream(&running.path) {
        return Some(why);
    }
    // Bytes, not text: a file made not UTF-8 by an edit cannot be what is
    // running (an audit found it read as "no difference", and the edit
    // written over).
    let bytes = match crate::config::read_bytes(&running.path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return None,
        Err(e) => {
            return Some(format!(
                "{} cannot be read ({e}): saving here would write over what it holds. Make it \
                 a readable file again, or edit the file itself",
                running.path.display()
            ))
        }
    };
    let same = std::str::from_utf8(&bytes)
        .ok()
        .and_then(|text| crate::config::yaml_tree(text).ok())
        .is_some_and(|v| v == running.raw);
    (!same).then(|| {
        format!(
            "{} was changed since the service read it (an edit not reloaded yet, or a reload \
             it refused): saving here would undo that edit. Reload it (`systemctl reload \
             mailproc`, or SIGHUP) to run it and edit here, or edit the file itself",
            running.path.display()
        )
    })
}
