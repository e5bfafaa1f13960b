//! What a caller holds for a submitted job: its progress, its outcome, a way to cancel it.

use tokio::sync::{oneshot, watch};

use super::events::{Backend, Msg};
use crate::node::driver::{JobFailed, JobId, JobProgress, JobResult};

/// A submitted job: its progress, its outcome, and a way to cancel it.
#[derive(Debug)]
pub struct JobHandle {
    pub(super) id: JobId,
    pub(super) outcome: oneshot::Receiver<Result<JobResult, JobFailed>>,
    pub(super) progress: watch::Receiver<JobProgress>,
    pub(super) backend: Backend,
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
