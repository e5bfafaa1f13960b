//! The scheduler backend's inbox ([`Msg`]), in a module of its own so that none of the driver's
//! parts depends on another's internals: filled by the executors' listener, the application
//! client's loop and the callers' handles.

use std::sync::Arc;

use tokio::sync::{oneshot, watch};

use super::scheduler_backend::DriverStatus;
use super::DriverError;
use crate::connection::{ConnectionError, ConnectionHandle, Incoming};
use crate::messages::CoarseMessage;
use crate::node::driver::{Job, JobFailed, JobId, JobProgress, JobResult, MasterEvent};

/// What the scheduler backend's loop takes in.
pub(crate) enum Msg {
    /// An executor connection completed its handshake.
    Connected {
        key: u64,
        handle: ConnectionHandle<CoarseMessage>,
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
    /// A message its connection refused without closing (the frame could not be encoded, say).
    NotSent {
        key: u64,
        message: CoarseMessage,
        error: String,
    },
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
