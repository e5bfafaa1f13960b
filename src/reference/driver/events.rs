//! What the driver's parts tell each other, in a module of its own so that none of them depends
//! on another's internals: the scheduler backend's inbox ([`Msg`], filled by the executors'
//! listener, the application client and the callers' handles) and the application client's news
//! of the cluster ([`MasterEvent`]).

use std::sync::Arc;

use tokio::sync::{oneshot, watch};

use super::job::{JobFailed, JobProgress, JobResult};
use super::scheduler_backend::DriverStatus;
use super::DriverError;
use super::JobId;
use crate::connection::{ConnectionError, ConnectionHandle, Incoming};
use crate::messages::deploy::{ExecutorAdded, ExecutorUpdated, WorkerRemoved};
use crate::messages::CoarseMessage;
use crate::reference::task::Job;

/// What the application client tells the scheduler backend.
#[derive(Debug, Clone)]
pub(crate) enum MasterEvent {
    /// RegisteredApplication, from the master named.
    Registered { app_id: String, master: String },
    /// MasterChanged: the master named is now the active one.
    MasterChanged { master: String },
    /// An executor was granted.
    ExecutorAdded(ExecutorAdded),
    /// An executor changed state.
    ExecutorUpdated(ExecutorUpdated),
    /// A worker with executors of the application was removed.
    WorkerRemoved(WorkerRemoved),
    /// The application is dead: removed by the master, or never registered.
    Dead(String),
}

/// What the scheduler backend's loop takes in.
pub(crate) enum Msg {
    /// An executor connection completed its handshake.
    Connected {
        key: u64,
        handle: ConnectionHandle<CoarseMessage>,
        peer: String,
        /// The peer's address (`host:port`).
        addr: String,
        abort: Arc<tokio::sync::Notify>,
    },
    /// Something an executor connection received.
    FromExecutor {
        key: u64,
        incoming: Incoming<CoarseMessage>,
        /// Dropped once the backend handled it, which lets that connection read on.
        credit: crate::reference::outbox::Credit,
    },
    /// An executor connection ended.
    Disconnected { key: u64, reason: ConnectionError },
    /// A send to an executor failed or waited too long: its connection is given up.
    SendFailed { key: u64, reason: String },
    /// A LaunchTask was refused by its connection without closing it (the frame could not be
    /// encoded, say): the task's job fails with this text.
    LaunchNotSent { task_id: i64, error: String },
    /// News from the application client.
    Master(MasterEvent),

    /// Submit a job.
    Submit {
        job: Arc<dyn Job>,
        reply: oneshot::Sender<Result<Submitted, DriverError>>,
    },
    /// Cancel a job.
    Cancel { job: JobId },
    /// Report the state.
    Status(oneshot::Sender<DriverStatus>),
    /// Ask the master for executors.
    RequestExecutors {
        total: u32,
        reply: oneshot::Sender<Result<bool, DriverError>>,
    },
    /// Ask the master to kill executors.
    KillExecutors {
        ids: Vec<String>,
        reply: oneshot::Sender<Result<bool, DriverError>>,
    },
    /// Stop everything.
    Stop(oneshot::Sender<DriverStatus>),
}

/// A submitted job's receiving ends.
pub(crate) struct Submitted {
    pub(crate) id: JobId,
    pub(crate) outcome: oneshot::Receiver<Result<JobResult, JobFailed>>,
    pub(crate) progress: watch::Receiver<JobProgress>,
}
