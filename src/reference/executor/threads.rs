//! The executor's task threads, as Spark's executor thread pool: a task is handed to a thread that
//! waits for work, or to a new thread when none waits, so that every task launched runs at once
//! (a driver may launch more tasks than the executor has cores; Spark runs them all). Threads
//! stay for the next task instead of being started per task: a 1-core executor hands each task to
//! the same thread with one wake-up. At most `keep` threads wait idle; one more that finishes
//! its task ends.

use std::collections::VecDeque;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};

/// Work for a task thread.
pub(super) type Job = Box<dyn FnOnce() + Send + 'static>;

struct State {
    jobs: VecDeque<Job>,
    /// Threads waiting for a job.
    idle: usize,
    /// Threads alive.
    threads: usize,
    /// No more jobs: waiting threads end.
    closed: bool,
}

struct Inner {
    state: Mutex<State>,
    ready: Condvar,
    /// Idle threads kept for the next tasks.
    keep: usize,
    /// The threads' name prefix.
    name: String,
}

impl Inner {
    fn lock(&self) -> MutexGuard<'_, State> {
        // Jobs run outside the lock and the pool's own code does not panic while holding it.
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// A thread's life: the jobs queued, then waiting for more until closed or not needed.
    fn work(&self) {
        let mut state = self.lock();
        loop {
            if let Some(job) = state.jobs.pop_front() {
                drop(state);
                job();
                state = self.lock();
                continue;
            }
            if state.closed || state.idle >= self.keep {
                state.threads -= 1;
                return;
            }
            state.idle += 1;
            state = self
                .ready
                .wait_while(state, |s| s.jobs.is_empty() && !s.closed)
                .unwrap_or_else(|poisoned| poisoned.into_inner());
            state.idle -= 1;
        }
    }
}

/// The pool. Dropping it (or [`TaskThreads::close`]) ends the waiting threads; it never waits
/// for a running job.
pub(super) struct TaskThreads {
    inner: Arc<Inner>,
}

impl TaskThreads {
    /// A pool that keeps up to `keep` (at least 1) idle threads named `name-N`.
    pub(super) fn new(keep: usize, name: impl Into<String>) -> Self {
        TaskThreads {
            inner: Arc::new(Inner {
                state: Mutex::new(State {
                    jobs: VecDeque::new(),
                    idle: 0,
                    threads: 0,
                    closed: false,
                }),
                ready: Condvar::new(),
                keep: keep.max(1),
                name: name.into(),
            }),
        }
    }

    /// Runs `job` on a waiting thread, or on a new one when every thread is busy. Fails only when
    /// a thread was needed and could not be started; the job is dropped then.
    pub(super) fn run(&self, job: Job) -> std::io::Result<()> {
        let mut state = self.inner.lock();
        state.jobs.push_back(job);
        if state.jobs.len() <= state.idle {
            drop(state);
            self.inner.ready.notify_one();
            return Ok(());
        }
        // Started with the lock held, so that a failure takes back this very job (the last
        // queued); the new thread takes the lock once this returns.
        let inner = Arc::clone(&self.inner);
        let spawned = std::thread::Builder::new()
            .name(format!("{}-{}", self.inner.name, state.threads))
            .spawn(move || inner.work());
        match spawned {
            Ok(_) => {
                state.threads += 1;
                Ok(())
            }
            Err(e) => {
                state.jobs.pop_back();
                Err(e)
            }
        }
    }

    /// Threads alive (running a job or waiting for one).
    #[cfg(test)]
    pub(super) fn threads(&self) -> usize {
        self.inner.lock().threads
    }

    /// Threads waiting for a job.
    #[cfg(test)]
    pub(super) fn idle(&self) -> usize {
        self.inner.lock().idle
    }

    /// Ends the waiting threads; running jobs finish first, and queued ones still run.
    pub(super) fn close(&self) {
        self.inner.lock().closed = true;
        self.inner.ready.notify_all();
    }
}

impl Drop for TaskThreads {
    fn drop(&mut self) {
        self.close();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;
    use std::time::{Duration, Instant};

    const LONG: Duration = Duration::from_secs(60);

    fn wait_for_threads(pool: &TaskThreads, n: usize) {
        let deadline = Instant::now() + LONG;
        while pool.threads() != n && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    #[test]
    fn one_thread_runs_task_after_task() {
        let pool = TaskThreads::new(1, "t");
        let (tx, rx) = mpsc::channel();
        let mut seen = Vec::new();
        for i in 0..50 {
            let tx = tx.clone();
            pool.run(Box::new(move || {
                let _ = tx.send((i, std::thread::current().id()));
            }))
            .expect("runs");
            // Each ends before the next is given: the thread waiting takes it.
            let (got, thread) = rx.recv_timeout(LONG).expect("ran");
            assert_eq!(got, i);
            seen.push(thread);
            let deadline = Instant::now() + LONG;
            while pool.idle() != 1 && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(1));
            }
        }
        seen.dedup();
        assert_eq!(seen.len(), 1, "sequential tasks reuse the one thread");
    }

    #[test]
    fn tasks_beyond_the_kept_threads_run_at_once_on_new_threads() {
        let pool = TaskThreads::new(1, "t");
        // Each task returns only once all three and the test's thread wait together.
        let together = Arc::new(std::sync::Barrier::new(4));
        let (tx, rx) = mpsc::channel();
        for _ in 0..3 {
            let together = Arc::clone(&together);
            let tx = tx.clone();
            pool.run(Box::new(move || {
                together.wait();
                let _ = tx.send(());
            }))
            .expect("runs");
        }
        together.wait();
        for _ in 0..3 {
            rx.recv_timeout(LONG).expect("each finished");
        }
        // Two of the three threads end once idle; one is kept.
        wait_for_threads(&pool, 1);
        assert_eq!(pool.threads(), 1);
    }

    #[test]
    fn closing_ends_the_waiting_threads() {
        let pool = TaskThreads::new(2, "t");
        let (tx, rx) = mpsc::channel();
        pool.run(Box::new(move || {
            let _ = tx.send(());
        }))
        .expect("runs");
        rx.recv_timeout(LONG).expect("ran");
        wait_for_threads(&pool, 1);
        pool.close();
        wait_for_threads(&pool, 0);
        assert_eq!(pool.threads(), 0);
    }
}
