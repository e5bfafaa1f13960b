//! What a caller holds for a submitted job: its progress, its outcome, a way to cancel it.

use std::time::Duration;

use tokio::sync::{mpsc, oneshot, watch};

use super::events::Msg;
use super::JobId;

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

/// A submitted job: its progress, its outcome, and a way to cancel it.
#[derive(Debug)]
pub struct JobHandle {
    pub(super) id: JobId,
    pub(super) outcome: oneshot::Receiver<Result<JobResult, JobFailed>>,
    pub(super) progress: watch::Receiver<JobProgress>,
    pub(super) backend: mpsc::UnboundedSender<Msg>,
}

impl JobHandle {
    /// The job's id (its stage has the same id).
    pub fn id(&self) -> JobId {
        self.id
    }

    /// The job's progress now.
    pub fn progress(&self) -> JobProgress {
        *self.progress.borrow()
    }

    /// A receiver that changes whenever the job progresses.
    pub fn watch_progress(&self) -> watch::Receiver<JobProgress> {
        self.progress.clone()
    }

    /// Cancels the job: its running tasks are killed (KillTask) and it fails with
    /// `Job <id> cancelled`. Does nothing once the job has ended.
    pub fn cancel(&self) {
        let _ = self.backend.send(Msg::Cancel { job: self.id });
    }

    /// Waits for the job's outcome.
    pub async fn result(self) -> Result<JobResult, JobFailed> {
        let id = self.id;
        self.outcome.await.unwrap_or_else(|_| {
            Err(JobFailed {
                job_id: id,
                message: format!("Job {id} cancelled because SparkContext was shut down"),
            })
        })
    }
}
