//! What the scheduler backend's driver hears besides its executors' connections ([`Msg`]), and
//! the handle its callers send it on ([`Backend`]), in a module of their own so that none of the
//! driver's parts depends on another's internals: filled by the application client and the
//! callers' handles.

use std::sync::Arc;

use tokio::sync::{mpsc, oneshot, watch};

use super::scheduler_backend::DriverStatus;
use super::DriverError;
use crate::messages::CoarseMessage;
use crate::node::driver::{Job, JobFailed, JobId, JobProgress, JobResult, MasterEvent};
use crate::reference::runtime::Event;

/// The scheduler backend's own events.
pub(crate) enum Msg {
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
    /// Look for executor connections whose queue makes no progress.
    StallCheck,
    /// Stop everything.
    Stop(oneshot::Sender<DriverStatus>),
}

/// The scheduler backend's inbox: its executors' connections (accepted, never dialled) and
/// its own events.
pub(crate) type BackendEvent = Event<CoarseMessage, (), Msg>;

/// Where the backend's callers send it [`Msg`]s.
#[derive(Clone)]
pub(crate) struct Backend(pub(crate) mpsc::UnboundedSender<BackendEvent>);

impl std::fmt::Debug for Backend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Backend")
    }
}

impl Backend {
    /// Sends `msg`; `Err` when the backend has stopped.
    pub(crate) fn send(&self, msg: Msg) -> Result<(), Msg> {
        self.0.send(Event::Own(msg)).map_err(|e| match e.0 {
            Event::Own(msg) => msg,
            // Only an own event was sent.
            _ => Msg::StallCheck,
        })
    }
}

/// A submitted job's receiving ends.
pub(crate) struct Submitted {
    pub(crate) id: JobId,
    pub(crate) outcome: oneshot::Receiver<Result<JobResult, JobFailed>>,
    pub(crate) progress: watch::Receiver<JobProgress>,
}
