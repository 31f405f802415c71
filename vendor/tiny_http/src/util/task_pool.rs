use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread;
use std::time::Duration;

/// Manages a collection of threads.
///
/// A new thread is created every time all the existing threads are full.
/// Any idle thread will automatically die after a few seconds.
pub struct TaskPool {
    sharing: Arc<Sharing>,
}

struct Sharing {
    // list of the tasks to be done by worker threads
    todo: Mutex<VecDeque<Box<dyn FnMut() + Send>>>,

    // condvar that will be notified whenever a task is added to `todo`
    condvar: Condvar,

    // number of total worker threads running
    active_tasks: AtomicUsize,

    // number of idle worker threads
    waiting_tasks: AtomicUsize,

    /// mailproc patch: threads never exceed this (0: no limit); beyond it a
    /// task waits in the queue for the next thread that frees up.
    max_threads: usize,
}

/// Minimum number of active threads.
static MIN_THREADS: usize = 4;

/// Takes a thread off `active_tasks` when it ends; it was counted by
/// `add_thread` before it started, so a burst of spawns sees them all
/// (mailproc patch: the release counted a thread only once it ran).
struct Leaving<'a> {
    nb: &'a AtomicUsize,
}

impl Drop for Leaving<'_> {
    fn drop(&mut self) {
        self.nb.fetch_sub(1, Ordering::Release);
    }
}

struct Registration<'a> {
    nb: &'a AtomicUsize,
}

impl<'a> Registration<'a> {
    fn new(nb: &'a AtomicUsize) -> Registration<'a> {
        nb.fetch_add(1, Ordering::Release);
        Registration { nb }
    }
}

impl<'a> Drop for Registration<'a> {
    fn drop(&mut self) {
        self.nb.fetch_sub(1, Ordering::Release);
    }
}

impl TaskPool {
    pub fn new() -> TaskPool {
        Self::with_max_threads(0)
    }

    /// A pool of at most `max` threads (at least the 4 it keeps); 0 for no
    /// limit (mailproc patch).
    pub fn with_max_threads(max: usize) -> TaskPool {
        let pool = TaskPool {
            sharing: Arc::new(Sharing {
                todo: Mutex::new(VecDeque::new()),
                condvar: Condvar::new(),
                active_tasks: AtomicUsize::new(0),
                waiting_tasks: AtomicUsize::new(0),
                max_threads: if max == 0 { 0 } else { max.max(MIN_THREADS) },
            }),
        };

        for _ in 0..MIN_THREADS {
            pool.add_thread(None)
        }

        pool
    }

    /// Executes a function in a thread.
    /// If no thread is available, spawns a new one.
    pub fn spawn(&self, code: Box<dyn FnMut() + Send>) {
        let mut queue = self.sharing.todo.lock().unwrap();

        // mailproc patch: a waiting thread already woken for a queued task
        // still counts as waiting until it takes it, so "anyone waiting?"
        // could queue a second task behind a first that holds its thread for
        // the whole life of a connection. Queue only when a waiting thread is
        // left over for this task.
        let full = self.sharing.max_threads != 0
            && self.sharing.active_tasks.load(Ordering::Acquire) >= self.sharing.max_threads;
        if self.sharing.waiting_tasks.load(Ordering::Acquire) <= queue.len() && !full {
            self.add_thread(Some(code));
        } else {
            queue.push_back(code);
            self.sharing.condvar.notify_one();
        }
    }

    fn add_thread(&self, initial_fn: Option<Box<dyn FnMut() + Send>>) {
        let sharing = self.sharing.clone();
        sharing.active_tasks.fetch_add(1, Ordering::Release);

        thread::spawn(move || {
            let sharing = sharing;
            let _active_guard = Leaving {
                nb: &sharing.active_tasks,
            };

            if let Some(mut f) = initial_fn {
                f();
            }

            loop {
                let mut task: Box<dyn FnMut() + Send> = {
                    let mut todo = sharing.todo.lock().unwrap();

                    let task;
                    loop {
                        if let Some(poped_task) = todo.pop_front() {
                            task = poped_task;
                            break;
                        }
                        let _waiting_guard = Registration::new(&sharing.waiting_tasks);

                        let received =
                            if sharing.active_tasks.load(Ordering::Acquire) <= MIN_THREADS {
                                todo = sharing.condvar.wait(todo).unwrap();
                                true
                            } else {
                                let (new_lock, waitres) = sharing
                                    .condvar
                                    .wait_timeout(todo, Duration::from_millis(5000))
                                    .unwrap();
                                todo = new_lock;
                                !waitres.timed_out()
                            };

                        if !received && todo.is_empty() {
                            return;
                        }
                    }

                    task
                };

                task();
            }
        });
    }
}

impl Drop for TaskPool {
    fn drop(&mut self) {
        self.sharing
            .active_tasks
            .store(999_999_999, Ordering::Release);
        self.sharing.condvar.notify_all();
    }
}
