//! Training an account's classifier from its folders: `mailproc train
//! ACCOUNT` runs [`train_account`]; the dashboard's Train button and
//! `POST /api/accounts/:name/train` run it on a named thread of its own
//! (`train-<account>`, [`Training::start`]) and answer at once: the run's
//! progress and outcome are read from [`Training::status`], so no HTTP
//! worker waits on IMAP. Training opens a read-only session of its own
//! (`EXAMINE`, `BODY.PEEK`) and may take minutes; the account's thread
//! keeps sorting meanwhile and picks the new classifier up at its next
//! pass.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use parking_lot::Mutex;

use crate::config::AccountConfig;
use crate::learn::{ClassCounts, Model};
use crate::store::Store;
use crate::timestamp::now_ms;

/// What a training run did.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TrainReport {
    /// Messages learned per folder.
    pub folders: BTreeMap<String, usize>,
    /// Folders that could not be read, with why.
    pub skipped: BTreeMap<String, String>,
    pub examples: usize,
    pub duration_ms: u64,
    /// How many messages the classifier it replaced was trained on, if it
    /// had been: a training from folders emptied since (the demo's ham
    /// leaves INBOX) replaces a larger one, and the operator is told.
    pub replaced: Option<u64>,
}

impl TrainReport {
    /// The folders read with fewer messages than the classifier needs to
    /// choose one ([`crate::learn::MIN_CLASS_DOCS`]), and how many they
    /// hold: told beside the report (an audit trained a folder of one and
    /// then wondered why nothing went there).
    pub fn too_few(&self) -> Vec<(&str, usize)> {
        self.folders
            .iter()
            .filter(|(_, n)| (**n as u64) < crate::learn::MIN_CLASS_DOCS)
            .map(|(f, n)| (f.as_str(), *n))
            .collect()
    }

    /// [`TrainReport::too_few`] in words, when there are any.
    pub fn too_few_said(&self) -> Option<String> {
        let few = self.too_few();
        (!few.is_empty()).then(|| {
            let list: Vec<String> = few.iter().map(|(f, n)| format!("{f} ({n})")).collect();
            format!(
                "the classifier never chooses a folder holding fewer than {} messages: {}",
                crate::learn::MIN_CLASS_DOCS,
                list.join(", ")
            )
        })
    }
}

/// The latest training run of an account, as the dashboard shows it.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[serde(
    tag = "state",
    rename_all = "snake_case",
    rename_all_fields = "camelCase"
)]
pub enum TrainStatus {
    Running {
        #[serde(serialize_with = "crate::timestamp::serialize_iso")]
        started_at: i64,
        folder: String,
        done: usize,
        total: usize,
        /// Waiting for another account's training to end (one runs at a
        /// time in the service).
        waiting: bool,
    },
    Done {
        #[serde(serialize_with = "crate::timestamp::serialize_iso")]
        finished_at: i64,
        report: TrainReport,
    },
    Failed {
        #[serde(serialize_with = "crate::timestamp::serialize_iso")]
        finished_at: i64,
        error: String,
    },
}

/// The training runs of this process by account: at most one at a time
/// per account, each on its own thread, and one reading at a time in the
/// service: the others wait their turn. Each holds a training session and
/// the account's folders' words (about 23 MB for 5,000 messages); twenty
/// at once, started by one `write:accounts` key's loop over the accounts,
/// took the service from 171 MB to 641 MB, which the allocator kept (an
/// audit), and a host of 1,000 accounts would have met the OOM killer.
#[derive(Default)]
pub struct Training {
    runs: Arc<Mutex<HashMap<String, TrainStatus>>>,
    turn: Arc<Mutex<()>>,
    /// The account whose training has the turn, for the log line of one
    /// that waits (a slow server holds every account's training).
    holder: Arc<Mutex<Option<String>>>,
}

/// Reads the account's folders (read-only), fits its classifier from
/// scratch and stores it, replacing the one before; the running account
/// picks it up at its next pass. `progress(folder, done, total)` is told
/// of each chunk read; `named()` says whether the account still goes by
/// its name when the classifier is to be stored.
pub fn train_account(
    account: &AccountConfig,
    store: &Arc<Store>,
    progress: &mut dyn FnMut(&str, usize, usize),
    named: &dyn Fn() -> bool,
) -> Result<TrainReport, String> {
    let started = std::time::Instant::now();
    let read = crate::imap::fetch_examples(account, store, progress)
        .map_err(|e| format!("account {}: {e}", account.name))?;
    let mut model = Model::default();
    let before = store
        .learn_state(&account.name)
        .map_err(|e| e.to_string())?;
    let mut report = TrainReport {
        folders: BTreeMap::new(),
        skipped: BTreeMap::new(),
        examples: 0,
        duration_ms: 0,
        replaced: before.trained_at.map(|_| before.trained_examples as u64),
    };
    for f in read {
        if let Some(e) = f.error {
            report.skipped.insert(f.folder, e);
            continue;
        }
        for ex in &f.examples {
            model.add(&f.folder, ex, 1);
        }
        report.examples += f.examples.len();
        report.folders.insert(f.folder, f.examples.len());
    }
    let classes: BTreeMap<String, ClassCounts> = model.classes;
    crate::failpoint::hit("train-before-store");
    // Renamed (or removed) while it read: stored under the old name, the
    // classifier would reach no account, and the new name's would go on as
    // if nothing had run (an audit).
    if !named() {
        return Err(format!(
            "account {}: renamed or removed while it trained; nothing was stored (train it \
             again under its name now)",
            account.name
        ));
    }
    // Nothing read (every folder misspelled, gone or empty) is no
    // classifier: stored, it replaced one trained on 1,267 messages with
    // one that knows nothing, and the command said only a note (an audit).
    if report.examples == 0 {
        let why: Vec<String> = (report.folders.keys().map(|f| format!("{f}: empty")))
            .chain(report.skipped.iter().map(|(f, e)| format!("{f}: {e}")))
            .collect();
        return Err(format!(
            "account {}: read no message to learn from ({}); nothing was stored{}",
            account.name,
            why.join("; "),
            match report.replaced {
                Some(n) => format!(", and the classifier trained on {n} message(s) stays"),
                None => String::new(),
            }
        ));
    }
    store
        .learn_replace(
            &account.name,
            &classes,
            &model.shots,
            report.examples as u64,
        )
        .map_err(|e| e.to_string())?;
    report.duration_ms = started.elapsed().as_millis() as u64;
    Ok(report)
}

impl Training {
    /// The latest run of `account` in this process, if any.
    pub fn status(&self, account: &str) -> Option<TrainStatus> {
        self.runs.lock().get(account).cloned()
    }

    /// Runs [`train_account`] on a thread of its own (`train-<account>`),
    /// keeping [`Training::status`] up to date. Returns false (and starts
    /// nothing) when the account is already training. `current()` is the
    /// account's configuration as it is now (`None` once it is gone):
    /// read when its turn comes, so a training that waited reads with the
    /// settings of then (an account removed meanwhile, and added back
    /// under its name, was read with the old ones: a regression audit),
    /// and asked again before the classifier is stored.
    pub fn start(
        &self,
        name: &str,
        store: Arc<Store>,
        current: Box<dyn Fn() -> Option<AccountConfig> + Send>,
    ) -> bool {
        {
            let mut t = self.runs.lock();
            if matches!(t.get(name), Some(TrainStatus::Running { .. })) {
                return false;
            }
            t.insert(
                name.to_string(),
                TrainStatus::Running {
                    started_at: now_ms(),
                    folder: String::new(),
                    done: 0,
                    total: 0,
                    waiting: false,
                },
            );
        }
        let (runs, turn, holder) = (self.runs.clone(), self.turn.clone(), self.holder.clone());
        let thread_name = format!("train-{name}");
        let name = name.to_string();
        let failed_name = name.clone();
        let spawned = std::thread::Builder::new()
            .name(thread_name)
            .spawn(move || {
                let started_at = now_ms();
                let set_waiting = |now: bool| {
                    if let Some(TrainStatus::Running { waiting, .. }) = runs.lock().get_mut(&name) {
                        *waiting = now;
                    }
                };
                let _turn = turn.try_lock().unwrap_or_else(|| {
                    set_waiting(true);
                    let ahead = holder.lock().clone().unwrap_or_default();
                    log::info!("{name}: training waits for {ahead}'s to end (one at a time)");
                    let turn = turn.lock();
                    set_waiting(false);
                    turn
                });
                *holder.lock() = Some(name.clone());
                let r = match current() {
                    None => Err(format!(
                        "account {name}: renamed or removed while it waited its turn; nothing was \
                         read (train it again under its name now)"
                    )),
                    Some(account) => train_account(
                        &account,
                        &store,
                        &mut |folder, done, total| {
                            runs.lock().insert(
                                name.clone(),
                                TrainStatus::Running {
                                    started_at,
                                    folder: folder.to_string(),
                                    done,
                                    total,
                                    waiting: false,
                                },
                            );
                        },
                        &|| current().is_some(),
                    ),
                };
                *holder.lock() = None;
                let status = match r {
                    Ok(report) => {
                        log::info!(
                            "{name}: trained on {} message(s) of {} folder(s)",
                            report.examples,
                            report.folders.len()
                        );
                        TrainStatus::Done {
                            finished_at: now_ms(),
                            report,
                        }
                    }
                    Err(error) => {
                        log::warn!("{name}: training failed: {error}");
                        TrainStatus::Failed {
                            finished_at: now_ms(),
                            error,
                        }
                    }
                };
                runs.lock().insert(name, status);
            });
        if let Err(e) = spawned {
            self.runs.lock().insert(
                failed_name,
                TrainStatus::Failed {
                    finished_at: now_ms(),
                    error: format!("cannot start a thread: {e}"),
                },
            );
        }
        true
    }
}

/// Starts training account `name` in the background; its progress is read
/// from [`Training::status`].
pub fn start(ctx: &super::Ctx, name: &str) -> Result<(), super::Error> {
    let loaded = ctx.config();
    if !loaded.config.accounts.iter().any(|a| a.name == name) {
        return Err(super::Error::NotFound(format!("no account named {name:?}")));
    }
    let (live, named) = (ctx.live.clone(), name.to_string());
    let current = Box::new(move || {
        (live.config().config.accounts.iter())
            .find(|a| a.name == named)
            .cloned()
    });
    if !ctx.training.start(name, ctx.store.clone(), current) {
        return Err(super::Error::Conflict(format!(
            "{name}: training is already running"
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The API's shape: camelCase keys and ISO 8601 times, as everywhere.
    #[test]
    fn a_run_is_written_as_the_api_writes_everything() {
        let done = TrainStatus::Done {
            finished_at: 1_795_994_436_007,
            report: TrainReport {
                folders: BTreeMap::from([("INBOX".to_string(), 3)]),
                skipped: BTreeMap::new(),
                examples: 3,
                duration_ms: 89,
                replaced: Some(5),
            },
        };
        assert_eq!(
            serde_json::to_value(&done).unwrap(),
            serde_json::json!({
                "state": "done",
                "finishedAt": "2026-11-29T23:20:36.007Z",
                "report": { "folders": { "INBOX": 3 }, "skipped": {}, "examples": 3, "durationMs": 89, "replaced": 5 }
            })
        );
    }
}
