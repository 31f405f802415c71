//! Training an account's classifier from its folders: `mailproc train
//! ACCOUNT` and the dashboard's Train button run [`train_account`].

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, LazyLock};

use parking_lot::Mutex;

use super::{ClassCounts, Model};
use crate::config::AccountConfig;
use crate::store::Store;
use crate::timestamp::now_ms;

/// What a training run did.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct TrainReport {
    /// Messages learned per folder.
    pub folders: BTreeMap<String, usize>,
    /// Folders that could not be read, with why.
    pub skipped: BTreeMap<String, String>,
    pub examples: usize,
    pub duration_ms: u64,
}

/// The latest training run of an account, as the dashboard shows it.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum TrainStatus {
    Running {
        started_at: i64,
        folder: String,
        done: usize,
        total: usize,
    },
    Done {
        finished_at: i64,
        report: TrainReport,
    },
    Failed {
        finished_at: i64,
        error: String,
    },
}

/// Training runs of this process by account (the dashboard's view).
pub static TRAINING: LazyLock<Mutex<HashMap<String, TrainStatus>>> =
    LazyLock::new(|| Mutex::new(HashMap::new()));

/// Reads the account's folders (read-only), fits its classifier from
/// scratch and stores it, replacing the one before; the running account
/// picks it up at its next pass. `progress(folder, done, total)` is told
/// of each chunk read.
pub fn train_account(
    account: &AccountConfig,
    store: &Arc<Store>,
    progress: &mut dyn FnMut(&str, usize, usize),
) -> Result<TrainReport, String> {
    let started = std::time::Instant::now();
    let read = crate::imap::fetch_examples(account, store, progress)
        .map_err(|e| format!("account {}: {e}", account.name))?;
    let mut model = Model::default();
    let mut report = TrainReport {
        folders: BTreeMap::new(),
        skipped: BTreeMap::new(),
        examples: 0,
        duration_ms: 0,
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

/// Runs [`train_account`] on a thread of its own, keeping [`TRAINING`]
/// up to date. Returns false (and starts nothing) when the account is
/// already training.
pub fn train_in_background(account: Arc<AccountConfig>, store: Arc<Store>) -> bool {
    {
        let mut t = TRAINING.lock();
        if matches!(t.get(&account.name), Some(TrainStatus::Running { .. })) {
            return false;
        }
        t.insert(
            account.name.clone(),
            TrainStatus::Running {
                started_at: now_ms(),
                folder: String::new(),
                done: 0,
                total: 0,
            },
        );
    }
    let name = account.name.clone();
    let spawned = std::thread::Builder::new()
        .name(format!("train-{name}"))
        .spawn(move || {
            let name = account.name.clone();
            let started_at = now_ms();
            let r = train_account(&account, &store, &mut |folder, done, total| {
                TRAINING.lock().insert(
                    name.clone(),
                    TrainStatus::Running {
                        started_at,
                        folder: folder.to_string(),
                        done,
                        total,
                    },
                );
            });
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
            TRAINING.lock().insert(name, status);
        });
    if let Err(e) = spawned {
        TRAINING.lock().insert(
            name,
            TrainStatus::Failed {
                finished_at: now_ms(),
                error: format!("cannot start a thread: {e}"),
            },
        );
    }
    true
}
