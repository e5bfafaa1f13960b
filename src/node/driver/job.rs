//! A job as the driver's cores see it: what the caller gives ([`Job`]: partitions, each task's
//! input, how results combine) and what it gets back (progress, a result or a failure).

use std::time::Duration;

use crate::messages::Payload;

/// A job's id; its one stage has the same id.
pub type JobId = u64;

/// A job the driver can run: one task per partition.
pub trait Job: Send + Sync {
    /// Display name.
    fn name(&self) -> String;
    /// The runner executors use (the task's `sparkwire.runner` property).
    fn runner(&self) -> &'static str;
    /// Number of partitions, one task each.
    fn partitions(&self) -> usize;
    /// The input of partition `p` (the task's `serializedTask`).
    fn input(&self, p: usize) -> Payload;
    /// The job's result from every partition's result, in partition order.
    fn combine(&self, results: &[Payload]) -> Result<String, String>;
}

/// A job that ran to the end.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobResult {
    /// The job's id.
    pub job_id: JobId,
    /// What the job's `combine` made of the results.
    pub output: String,
    /// Tasks (partitions) of the job.
    pub tasks: usize,
    /// From submission to the last result.
    pub elapsed: Duration,
}

/// A job that failed, with Spark's text (`Job aborted due to stage failure: …`,
/// `Job 0 cancelled`, …).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct JobFailed {
    /// The job's id.
    pub job_id: JobId,
    /// Why it failed.
    pub message: String,
}

/// How far a job has come.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct JobProgress {
    /// Partitions with their result.
    pub finished: usize,
    /// Partitions in all.
    pub total: usize,
    /// Task attempts that failed so far (retried or not).
    pub failed_attempts: usize,
}
