//! Tasks: what executors run and how a driver splits a job into them.
//!
//! An executor runs each task through a [`TaskRunner`]; the reference ships [`BuiltinRunner`] with
//! the jobs of `sparkwire local-cluster` (`pi`, `sum-squares`, `sleep`, `flaky`, `big-result`,
//! `big-task`), and library users implement their own. On the driver side a [`Job`](crate::node::driver::Job) says how many
//! partitions there are, what each task's input is, and how the results combine.

mod builtin;
mod jobs;

pub use builtin::BuiltinRunner;
pub use jobs::{
    job_by_name, BigResultJob, BigTaskJob, FlakyJob, PiJob, SleepJob, SumSquaresJob, JOB_NAMES,
};

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use crate::messages::{Payload, TaskDescription};
use crate::wire::TaskFailure;

/// Set when the driver asks to kill a task; runners check it between units of work.
#[derive(Debug, Clone, Default)]
pub struct CancelFlag(Arc<AtomicBool>);

impl CancelFlag {
    /// A flag not set.
    pub fn new() -> Self {
        CancelFlag::default()
    }

    /// Asks the task to stop.
    pub fn cancel(&self) {
        self.0.store(true, Ordering::Release);
    }

    /// Whether the task was asked to stop.
    pub fn is_cancelled(&self) -> bool {
        self.0.load(Ordering::Acquire)
    }
}

/// Runs tasks on an executor. Called on a blocking thread; may take as long as the task does.
pub trait TaskRunner: Send + Sync + 'static {
    /// Runs `task`; returns the result bytes, or why it failed. Returns [`TaskFailure::killed`]
    /// when `cancel` was set before it finished.
    fn run(&self, task: &TaskDescription, cancel: &CancelFlag) -> Result<Payload, TaskFailure>;

    /// Whether `task` is certain to end within [`BRIEF_TASK`] on this machine, so that the
    /// executor may run it on its own event loop rather than hand it to a task thread (which
    /// costs two thread wake-ups per task, most of a tiny task's round trip). While such a task
    /// runs the executor reads nothing, so a runner that answers `true` for a longer task delays
    /// the executor's heartbeats and KillTask handling by as long. The default is `false`: every
    /// task runs on a task thread, as Spark's executors run theirs.
    fn runs_briefly(&self, task: &TaskDescription) -> bool {
        let _ = task;
        false
    }
}

/// Most bytes a `big-task` input or a `big-result` result may have: 2047 MiB, the largest
/// message Spark allows (`spark.rpc.message.maxSize` is at most 2047 MB). The driver refuses a
/// larger job before building its tasks; an executor fails a task asking for a larger result
/// (`java.lang.OutOfMemoryError`) rather than allocating it.
pub const MAX_TASK_BYTES: u64 = 2047 * 1024 * 1024;

/// The longest a task that [`TaskRunner::runs_briefly`] answers `true` for may run: 100 µs.
pub const BRIEF_TASK: std::time::Duration = std::time::Duration::from_micros(100);

/// Reads `N` big-endian u64 values from a task input.
pub(crate) fn read_u64s<const N: usize>(data: &[u8], what: &str) -> Result<[u64; N], TaskFailure> {
    if data.len() != N * 8 {
        return Err(TaskFailure::new(
            "java.lang.IllegalArgumentException",
            format!("{what} input is {} bytes, expected {}", data.len(), N * 8),
        ));
    }
    let mut out = [0u64; N];
    for (i, chunk) in data.chunks_exact(8).enumerate() {
        let mut b = [0u8; 8];
        b.copy_from_slice(chunk);
        out[i] = u64::from_be_bytes(b);
    }
    Ok(out)
}

/// Writes u64 values big-endian.
pub(crate) fn write_u64s(values: &[u64]) -> Payload {
    Payload::from(
        values
            .iter()
            .flat_map(|v| v.to_be_bytes())
            .collect::<Vec<u8>>(),
    )
}
