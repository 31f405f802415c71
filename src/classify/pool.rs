//! The fixed pool of classifier threads shared by every account.

use std::collections::HashMap;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, Sender};

use super::streaks::Streaks;
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
    /// Which stored message it is (its folder, UIDVALIDITY and UID), so
    /// a provider's count of messages of no use tells look-alikes apart
    /// (alerts with the same sender and subject and no Message-ID were
    /// counted as one: a regression audit).
    pub message: String,
    pub reply: Sender<(usize, Result<Classification, ClassifyError>, Duration)>,
    /// The account asking; once it is shutting down, a job not yet started
    /// is answered [`ClassifyError::Cancelled`] (its message waits for the
    /// next start, so shutdown does not wait for a whole batch of calls).
    pub requester: Arc<crate::account::Handle>,
}

/// The classifier threads: `classifier.concurrency` of them for each
/// provider (a lane each, started at its first question), shared by the
/// accounts that use it.
///
/// One lane for all let one provider starve the others: a provider that
/// never answered, or one under its `rate_limit_rpm`, held every thread
/// with its waits, and an account on another, healthy provider waited
/// minutes for its first call (an audit). A lane's waits hold only its own
/// threads.
///
/// A panic while classifying (a bug, say in a parser) is caught around that
/// one job: the job is answered with [`ClassifyError::Panicked`], the panic
/// is logged, and the thread takes the next job; the account worker records
/// the failed attempt and counts it (`mailproc_errors_total{kind="panic"}`).
/// No job is ever left without an answer.
pub struct Pool {
    /// Threads of each lane.
    each: usize,
    lanes: parking_lot::Mutex<HashMap<String, Lane>>,
    /// Set by [`Pool::stop`]: no lane starts after it.
    stopped: std::sync::atomic::AtomicBool,
}

/// The threads of one provider and their queues.
struct Lane {
    queues: Arc<parking_lot::Mutex<Queues>>,
    threads: Vec<JoinHandle<()>>,
    /// Threads still taking jobs; `/health` is unhealthy when a lane has none.
    live: Arc<std::sync::atomic::AtomicUsize>,
    /// Whether the provider is down: its calls in a row without an
    /// answer, or with no use.
    streaks: Arc<Streaks>,
}

/// The queues of one lane: one for each asker (an account's run of
/// questions, [`Pool::queue`]), taken in turn by the lane's threads. One
/// queue for all was first come, first served: an account with a backlog
/// kept it full, and another account's one message waited behind it, up
/// to 100 s under a shared `rate_limit_rpm` (10 a minute) and 5 to 10 s
/// with one thread (the fairness audit).
#[derive(Default)]
struct Queues {
    /// Each asker's queue, with the account asking: a thread waiting for
    /// the rate limit's slot stops waiting when one is shutting down,
    /// whose jobs are then answered at once (see `lane`). One whose asker
    /// is done (its sender dropped) is taken out once empty.
    receivers: Vec<(Receiver<Job>, Arc<crate::account::Handle>)>,
    /// Bumped at each change of `receivers`, for the threads to notice.
    generation: u64,
    /// Each thread's bell: rung at a change, so a thread waiting on the
    /// queues it knew also waits on the new one.
    bells: Vec<Sender<()>>,
    /// The lane is retired or the pool stopped: its threads end once every
    /// queue is empty and let go.
    closed: bool,
    /// Where the next turn starts, so that each queue is served in turn.
    turn: usize,
}

impl Queues {
    fn ring(&mut self) {
        self.generation += 1;
        for b in &self.bells {
            let _ = b.try_send(());
        }
    }
}

impl Pool {
    pub fn start(threads: usize) -> std::io::Result<Pool> {
        Ok(Pool {
            each: threads.max(1),
            lanes: Default::default(),
            stopped: Default::default(),
        })
    }

    /// Whether every lane still has a thread taking jobs (a lane whose
    /// threads all ended would leave its accounts' questions unanswered).
    pub fn healthy(&self) -> bool {
        use std::sync::atomic::Ordering;
        self.lanes
            .lock()
            .values()
            .all(|l| l.live.load(Ordering::SeqCst) > 0)
    }

    /// Each provider asked since the start, and whether it is down (see
    /// [`Streaks`]).
    pub fn providers(&self) -> std::collections::BTreeMap<String, bool> {
        self.lanes
            .lock()
            .iter()
            .map(|(name, l)| (name.clone(), l.streaks.down()))
            .collect()
    }

    /// Each provider asked since the start, and how it is doing.
    pub fn provider_states(&self) -> std::collections::BTreeMap<String, super::streaks::State> {
        self.lanes
            .lock()
            .iter()
            .map(|(name, l)| (name.clone(), l.streaks.state()))
            .collect()
    }

    /// A queue of its own into `provider`'s lane (its threads started at
    /// the first question), for one run of an asker's questions, which
    /// waits for room in it together with something else
    /// (`crossbeam_channel::Select`). The lane's threads take the queues
    /// in turn, so an account with a backlog does not hold up another's
    /// message (see [`Queues`]). One queued job per thread keeps an asker
    /// from piling up work no model can start yet; it waits for room
    /// instead. Dropped, the queue is still served until empty. After
    /// [`Pool::stop`], a queue whose sends fail.
    pub fn queue(&self, provider: &str, asker: &Arc<crate::account::Handle>) -> Sender<Job> {
        use std::sync::atomic::Ordering;
        let mut lanes = self.lanes.lock();
        if self.stopped.load(Ordering::SeqCst) {
            return crossbeam_channel::bounded(0).0;
        }
        if !lanes.contains_key(provider) {
            match lane(provider, self.each) {
                Ok(l) => {
                    lanes.insert(provider.to_string(), l);
                }
                Err(e) => {
                    log::error!("classifier threads for provider {provider}: {e}");
                    return crossbeam_channel::bounded(0).0;
                }
            }
        }
        let (tx, rx) = crossbeam_channel::bounded(self.each);
        let mut q = lanes[provider].queues.lock();
        q.receivers.push((rx, asker.clone()));
        q.ring();
        tx
    }

    /// Starts `provider`'s counts of calls without an answer or use again:
    /// its settings changed, and the calls counted were the old settings'.
    /// Down, it was read so by `/health` until a new message was answered
    /// (hours on a quiet mailbox after the key was mended), and a new
    /// cause got no warning of its own (the stale one said "check
    /// api_key": an audit).
    pub fn settings_changed(&self, provider: &str) {
        if let Some(l) = self.lanes.lock().get(provider) {
            if l.streaks.reset() {
                log::info!(
                    "provider {provider}: its settings changed: no longer counted as down; its \
                     next calls tell"
                );
            }
        }
    }

    /// Ends the lanes of providers not in `kept` (a provider renamed or
    /// removed): their queues close, and their threads end once the calls
    /// in hand are answered. Every name ever used kept its threads until a
    /// restart (an audit counted two more at each rename).
    pub fn retire_all_but(&self, kept: &[&str]) {
        self.lanes.lock().retain(|name, l| {
            let keep = kept.contains(&name.as_str());
            if !keep {
                close(&l.queues);
            }
            keep
        });
    }

    /// Closes the queues and waits for calls in flight, up to `patience`:
    /// a call still running then (a model takes up to its `timeout`) is
    /// left to end with the process; no account waits for its answer any
    /// more. Returns how many were left.
    pub fn stop(&self, patience: Duration) -> usize {
        self.stopped
            .store(true, std::sync::atomic::Ordering::SeqCst);
        let lanes: Vec<Lane> = self.lanes.lock().drain().map(|(_, l)| l).collect();
        let mut threads = Vec::new();
        for l in lanes {
            close(&l.queues);
            threads.extend(l.threads);
        }
        let deadline = Instant::now() + patience;
        while Instant::now() < deadline && threads.iter().any(|t| !t.is_finished()) {
            std::thread::sleep(Duration::from_millis(20));
        }
        let mut left = 0;
        for t in threads {
            if t.is_finished() {
                let _ = t.join();
            } else {
                left += 1;
            }
        }
        left
    }
}

/// Closes a lane's queues: its threads end once every queue is empty and
/// let go of (the questions in them are still answered, as a shutdown's
/// are: `Cancelled`).
fn close(queues: &parking_lot::Mutex<Queues>) {
    let mut q = queues.lock();
    q.closed = true;
    q.ring();
}

/// The next job of a lane's queues for one of its threads, taking the
/// queues in turn; `None` once the lane is closed and every queue empty
/// and let go. `known` is the thread's copy of the queues (of
/// `generation` `seen`), `bell` its own.
fn next_job(
    queues: &parking_lot::Mutex<Queues>,
    known: &mut Vec<Receiver<Job>>,
    seen: &mut u64,
    bell: &Receiver<()>,
) -> Option<Job> {
    use crossbeam_channel::TryRecvError;
    loop {
        let (start, closed) = {
            let mut q = queues.lock();
            if q.generation != *seen {
                *known = q.receivers.iter().map(|(r, _)| r.clone()).collect();
                *seen = q.generation;
            }
            q.turn = q.turn.wrapping_add(1);
            (q.turn, q.closed)
        };
        let n = known.len();
        let mut done = Vec::new();
        for k in 0..n {
            let i = (start + k) % n;
            match known[i].try_recv() {
                Ok(job) => return Some(job),
                Err(TryRecvError::Empty) => {}
                Err(TryRecvError::Disconnected) => done.push(i),
            }
        }
        if !done.is_empty() {
            let mut q = queues.lock();
            let gone: Vec<Receiver<Job>> = done.iter().map(|i| known[*i].clone()).collect();
            q.receivers
                .retain(|(r, _)| !gone.iter().any(|g| g.same_channel(r)));
            q.ring();
            continue;
        }
        if closed && n == 0 {
            return None;
        }
        // Nothing to take: wait for a queue or the bell (a queue added,
        // the lane closed), then take in turn again.
        let mut sel = crossbeam_channel::Select::new();
        for r in known.iter() {
            sel.recv(r);
        }
        let rung = sel.recv(bell);
        if sel.ready() == rung {
            let _ = bell.try_recv();
        }
    }
}

/// Whether an asker is shutting down with jobs still queued.
fn stopping_with_work((rx, asker): &(Receiver<Job>, Arc<crate::account::Handle>)) -> bool {
    asker.is_shutting_down() && !rx.is_empty()
}

/// A queued job of an asker shutting down, if any.
fn stopping_job(queues: &parking_lot::Mutex<Queues>) -> Option<Job> {
    let q = queues.lock();
    q.receivers
        .iter()
        .filter(|(_, asker)| asker.is_shutting_down())
        .find_map(|(rx, _)| rx.try_recv().ok())
}

/// Starts `threads` classifier threads for `provider`.
fn lane(provider: &str, threads: usize) -> std::io::Result<Lane> {
    use std::sync::atomic::Ordering;
    let queues: Arc<parking_lot::Mutex<Queues>> = Default::default();
    let live = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let streaks: Arc<Streaks> = Default::default();
    // The provider of the lane's last job, whose rate limit paces the
    // taking of jobs: one thread at a time waits for the next slot and
    // only then takes the job whose turn it is. Taken first and waited
    // for after, every thread held a job with a slot reserved ahead, and
    // another account's message queued behind them all (16 to 20 s under
    // `rate_limit_rpm: 30` with 4 threads; the fairness audit).
    let gate: Arc<parking_lot::Mutex<Option<Arc<Provider>>>> = Default::default();
    let mut handles = Vec::with_capacity(threads);
    for i in 0..threads {
        let (queues, live, streaks) = (queues.clone(), live.clone(), streaks.clone());
        let gate = gate.clone();
        let (ring, bell) = crossbeam_channel::bounded(1);
        queues.lock().bells.push(ring);
        live.fetch_add(1, Ordering::SeqCst);
        // A thread's name holds no NUL and 15 bytes at most (Linux): the
        // provider's name as far as it is plain (a NUL in one panicked
        // every account on it, an audit).
        let plain: String = provider
            .chars()
            .filter(|c| c.is_ascii_alphanumeric() || *c == '_')
            .take(8)
            .collect();
        let name = format!("cls-{plain}-{i}");
        handles.push(std::thread::Builder::new().name(name).spawn(move || {
            let (mut known, mut seen) = (Vec::new(), u64::MAX);
            loop {
                let (job, slot) = {
                    let mut last = gate.lock();
                    // The job of an asker shutting down first, at once: it
                    // is cancelled, not called, and takes no slot. Waited
                    // for in turn, a shutdown sat a slot for each of its
                    // queued jobs (27 s at 6 a minute), and the removal
                    // of one account the others' (25 s; the regression
                    // audits).
                    let stopping = loop {
                        if let Some(job) = stopping_job(&queues) {
                            break Some(job);
                        }
                        let Some(p) = last.as_ref() else { break None };
                        // A closed lane answers what is left without
                        // waiting here (each call still takes its slot).
                        if p.await_slot(&|| {
                            let q = queues.lock();
                            q.closed || q.receivers.iter().any(stopping_with_work)
                        }) || queues.lock().closed
                        {
                            break None;
                        }
                    };
                    match stopping {
                        Some(job) => (job, Duration::ZERO),
                        None => {
                            let Some(job) = next_job(&queues, &mut known, &mut seen, &bell) else {
                                break;
                            };
                            let slot = if job.requester.is_shutting_down() {
                                Duration::ZERO
                            } else {
                                job.provider.take_slot()
                            };
                            *last = Some(job.provider.clone());
                            (job, slot)
                        }
                    }
                };
                answer(job, slot, &streaks);
            }
            live.fetch_sub(1, Ordering::SeqCst);
        })?);
    }
    Ok(Lane {
        queues,
        threads: handles,
        live,
        streaks,
    })
}

/// Answers one job, a panic included.
/// `slot`: how long until the rate-limit slot taken for its first call.
fn answer(job: Job, slot: Duration, streaks: &Streaks) {
    let started = Instant::now();
    if job.requester.is_shutting_down() {
        let cancelled = Err(ClassifyError::Cancelled);
        let _ = job.reply.send((job.index, cancelled, Duration::ZERO));
        return;
    }
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        crate::failpoint::hit("classify");
        job.provider.classify_in_slot(
            &job.account,
            &job.email,
            &job.shots,
            &|| job.requester.is_shutting_down(),
            Some(slot),
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
    let message = format!("{}\n{}", job.account.name, job.message);
    streaks.count(&job.provider.config.name, &message, &result);
    let _ = job.reply.send((job.index, result, started.elapsed()));
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
