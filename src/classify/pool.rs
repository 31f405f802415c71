//! The fixed pool of classifier threads shared by every account.

use std::collections::HashMap;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, Sender};

use super::*;
use crate::config::{AccountConfig, ProviderConfig};
use crate::metrics::Metrics;

pub struct Job {
    pub provider: Arc<Provider>,
    pub account: Arc<AccountConfig>,
    pub email: Arc<Email>,
    /// Examples from the user's folders nearest to the email (empty
    /// unless `learned.enabled`).
    pub shots: Vec<crate::learn::Shot>,
    /// Index of the email in its batch, echoed in the result.
    pub index: usize,
    pub reply: Sender<(usize, Result<Classification, ClassifyError>, Duration)>,
    /// The account asking; once it is shutting down, a job not yet started
    /// is answered [`ClassifyError::Cancelled`] (its message waits for the
    /// next start, so shutdown does not wait for a whole batch of calls).
    pub requester: Arc<crate::account::Handle>,
}

/// A fixed pool of classifier threads shared by every account.
///
/// A panic while classifying (a bug, say in a parser) is caught around that
/// one job: the job is answered with [`ClassifyError::Panicked`], the panic
/// is logged, and the thread takes the next job; the account worker records
/// the failed attempt and counts it (`mailproc_errors_total{kind="panic"}`).
/// No job is ever left without an answer.
pub struct Pool {
    tx: Sender<Job>,
    threads: Vec<JoinHandle<()>>,
    /// Threads still taking jobs; `/health` is unhealthy at zero.
    live: Arc<std::sync::atomic::AtomicUsize>,
}

impl Pool {
    pub fn start(threads: usize) -> std::io::Result<Pool> {
        use std::sync::atomic::Ordering;
        // One queued job per thread keeps account threads from piling up
        // work no model can start yet; they block on send instead.
        let (tx, rx): (Sender<Job>, Receiver<Job>) = crossbeam_channel::bounded(threads);
        let live = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let mut handles = Vec::with_capacity(threads);
        for i in 0..threads {
            let (rx, live) = (rx.clone(), live.clone());
            live.fetch_add(1, Ordering::SeqCst);
            handles.push(
                std::thread::Builder::new()
                    .name(format!("classify-{i}"))
                    .spawn(move || {
                        for job in rx {
                            let started = Instant::now();
                            if job.requester.is_shutting_down() {
                                let cancelled = Err(ClassifyError::Cancelled);
                                let _ = job.reply.send((job.index, cancelled, Duration::ZERO));
                                continue;
                            }
                            let result =
                                std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                                    crate::failpoint::hit("classify");
                                    job.provider.classify_with(
                                        &job.account,
                                        &job.email,
                                        &job.shots,
                                        &|| job.requester.is_shutting_down(),
                                    )
                                }))
                                .unwrap_or_else(|panic| {
                                    let message = crate::failpoint::panic_message(&*panic);
                                    log::error!(
                                        "{}: classifier thread panicked on {}: {message}",
                                        job.account.name,
                                        job.email.message_id
                                    );
                                    Err(ClassifyError::Panicked {
                                        provider: job.provider.config.name.clone(),
                                        message,
                                    })
                                });
                            let _ = job.reply.send((job.index, result, started.elapsed()));
                        }
                        live.fetch_sub(1, Ordering::SeqCst);
                    })?,
            );
        }
        Ok(Pool {
            tx,
            threads: handles,
            live,
        })
    }

    /// Classifier threads still taking jobs.
    pub fn live_threads(&self) -> usize {
        self.live.load(std::sync::atomic::Ordering::SeqCst)
    }

    pub fn submit(&self, job: Job) {
        let _ = self.tx.send(job);
    }

    /// The queue of jobs, for a caller that waits for room in it together
    /// with something else (`crossbeam_channel::Select`).
    pub fn queue(&self) -> &Sender<Job> {
        &self.tx
    }

    /// Closes the queue and waits for calls in flight, up to `patience`:
    /// a call still running then (a model takes up to its `timeout`) is
    /// left to end with the process; no account waits for its answer any
    /// more. Returns how many were left.
    pub fn stop(self, patience: Duration) -> usize {
        drop(self.tx);
        let deadline = Instant::now() + patience;
        while Instant::now() < deadline && self.threads.iter().any(|t| !t.is_finished()) {
            std::thread::sleep(Duration::from_millis(20));
        }
        let mut left = 0;
        for t in self.threads {
            if t.is_finished() {
                let _ = t.join();
            } else {
                left += 1;
            }
        }
        left
    }
}

/// Every provider by name, built once at start-up.
pub fn providers(
    configs: &[ProviderConfig],
    metrics: &Arc<Metrics>,
) -> Result<HashMap<String, Arc<Provider>>, String> {
    configs
        .iter()
        .map(|c| {
            Ok((
                c.name.clone(),
                Arc::new(Provider::new(c.clone(), metrics.clone())?),
            ))
        })
        .collect()
}
