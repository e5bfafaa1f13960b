//! The scheduler backend's part of the [driver](crate::reference::runtime): it feeds
//! [`BackendCore`] (in `node::driver`, which owns the executors, the jobs and the task scheduler)
//! what executors send, what the application client says and callers' requests, and carries out
//! its effects.
//!
//! The driver never waits on a peer's socket: what the core outputs goes straight onto each executor
//! connection's own write queue, bounded in bytes ([`ConnectionHandle::post`], written by the
//! connection's own task), so an executor that stops reading holds up only its own frames. An
//! executor whose queue is full is closed as a slow consumer
//! ([`ConnectionError::SlowConsumer`](crate::connection::ConnectionError::SlowConsumer)); one
//! whose queue makes no progress for [`DriverConfig::send_timeout`] is given up as well. Either
//! way the core treats its executor as lost (its tasks run again elsewhere).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{oneshot, watch};

use super::app_client::AppClient;
use super::events::{Backend, Msg, Submitted};
use super::{add_counters, DriverConfig, DriverError};
use crate::connection::{ConnectionError, Counters};
use crate::messages::CoarseMessage;
use crate::node::driver::{
    BackendCore, BackendEffect, BackendInput, BackendStatus, JobFailed, JobId, JobProgress,
    JobResult,
};
use crate::node::url::SparkUrl;
use crate::node::{ConnId, ConnOutput};
use crate::reference::busy_poll::BusyPoll;
use crate::reference::runtime::{now, Io, Role, Runtime};
use crate::wire::handshake::Role as PeerRole;

/// How long frames may wait on an executor connection that writes none of them (the executor
/// does not read) before that connection is given up, by default ([`DriverConfig::send_timeout`]).
pub(crate) const SEND_TIMEOUT: Duration = Duration::from_secs(30);

/// How long stopping waits for executors to close their connections after StopExecutor.
const STOP_GRACE: Duration = Duration::from_secs(3);

/// The driver's state, as [`Driver::status`](super::Driver::status) reports it: the scheduler
/// backend's (read through it: `status.executors`) and the traffic of its connections.
#[derive(Debug, Clone, Default)]
pub struct DriverStatus {
    /// The scheduler backend's state.
    pub backend: BackendStatus,
    /// Traffic of every connection the driver had, open or closed (executors' and masters').
    pub counters: Counters,
}

impl std::ops::Deref for DriverStatus {
    type Target = BackendStatus;

    fn deref(&self) -> &BackendStatus {
        &self.backend
    }
}

/// How often the driver looks for executor connections whose queue makes no progress.
const STALL_CHECK: Duration = Duration::from_secs(1);

/// A submitted job's sending ends.
struct JobIo {
    outcome: oneshot::Sender<Result<JobResult, JobFailed>>,
    progress: watch::Sender<JobProgress>,
}

/// The backend's IO: the callers' jobs, the application client, the stall watch.
pub(super) struct BackendIo {
    jobs: HashMap<JobId, JobIo>,
    client: Option<AppClient>,
    send_timeout: Duration,
    busy_poll: Option<BusyPoll>,
    /// Per executor connection: bytes written when its queue was last seen to make progress,
    /// and when.
    progress: HashMap<ConnId, (u64, tokio::time::Instant)>,
    /// Stopping: no more jobs.
    stopping: bool,
}

/// The driver of a scheduler backend at `url`, and the handle its callers send to.
pub(super) fn new(config: &DriverConfig, url: &SparkUrl) -> (Runtime<BackendIo>, Backend) {
    let role = BackendIo {
        jobs: HashMap::new(),
        client: None,
        send_timeout: config.send_timeout,
        busy_poll: None,
        progress: HashMap::new(),
        stopping: false,
    };
    let core = BackendCore::new(config.backend_config(url), now());
    let rt = Runtime::new(core, role, config.send_timeout);
    let backend = Backend(rt.events());
    (rt, backend)
}

/// Runs the backend until stopped (or every handle to it is gone).
pub(super) async fn run(
    mut rt: Runtime<BackendIo>,
    config: Arc<DriverConfig>,
    client: Option<AppClient>,
    accept: tokio::task::JoinHandle<()>,
) {
    rt.role.client = client;
    rt.role.busy_poll = BusyPoll::start(config.busy_poll);
    let backend = Backend(rt.events());
    let ticker = tokio::spawn(async move {
        let mut stall_check = tokio::time::interval(STALL_CHECK);
        stall_check.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            stall_check.tick().await;
            if backend.send(Msg::StallCheck).is_err() {
                return;
            }
        }
    });
    let stop_reply = rt.run(std::future::pending()).await;
    ticker.abort();
    stop(&mut rt).await;
    accept.abort();
    let _ = stop_reply.send(status(&rt.io, rt.role.client.as_ref()));
}

/// Spark's stop: jobs fail, StopExecutor to every executor, UnregisterApplication to the
/// master, then the connections close.
async fn stop(rt: &mut Runtime<BackendIo>) {
    rt.role.stopping = true;
    rt.io.handle(BackendInput::Stop);
    let _ = rt.drain().await;
    if let Some(client) = &rt.role.client {
        client.stop().await;
    }
    // Executors close their connections on StopExecutor; wait for them a little.
    rt.settle(STOP_GRACE, |core| !core.has_connections()).await;
    // Still open after a graceful close was tried: its peer does not read.
    rt.io.peers.close_all(Duration::from_secs(1)).await;
    rt.io.peers.kill_all();
    // The readers report the closes; take them in so the counters and taps are complete.
    rt.settle(Duration::from_secs(1), |core| !core.has_connections())
        .await;
}

fn status(io: &Io<BackendIo>, client: Option<&AppClient>) -> DriverStatus {
    let backend = io.core.status(now());
    let mut counters = io.peers.traffic();
    if let Some(client) = client {
        add_counters(&mut counters, &client.counters());
    }
    DriverStatus { backend, counters }
}

impl BackendIo {
    /// Gives up the executor connections whose queued frames have waited over the send timeout
    /// with nothing written (the executor does not read, though its queue is not full yet).
    fn check_stalls(&mut self, io: &mut Io<Self>) {
        let now = tokio::time::Instant::now();
        self.progress
            .retain(|conn, _| io.peers.get(*conn).is_some());
        let mut lost = Vec::new();
        for peer in io.peers.iter() {
            let written = peer.handle.counters().sent.bytes;
            let progress = self.progress.entry(peer.conn).or_insert((written, now));
            if written != progress.0 || peer.handle.queued_bytes() == 0 {
                *progress = (written, now);
            } else if now.duration_since(progress.1) >= self.send_timeout {
                let (conn, timeout) = (peer.conn, self.send_timeout);
                tracing::warn!(
                    "driver: connection {conn} takes no frames for {timeout:?}; closing it"
                );
                peer.kill();
                // Reported once: the reader reports the close next.
                *progress = (written, now + Duration::from_secs(3600));
                let reason = format!("frames waited over {timeout:?}: the executor does not read");
                lost.push((conn, reason));
            }
        }
        for (conn, reason) in lost {
            io.handle(BackendInput::Lost { conn, reason });
        }
    }

    fn submit(
        &mut self,
        io: &mut Io<Self>,
        job: Arc<dyn crate::node::driver::Job>,
    ) -> Result<Submitted, DriverError> {
        if self.stopping {
            return Err(DriverError::Stopped);
        }
        let total = job.partitions();
        let id = io.core.submit(now(), job).map_err(DriverError::from)?;
        let (outcome_tx, outcome) = oneshot::channel();
        let (progress_tx, progress) = watch::channel(JobProgress {
            finished: 0,
            total,
            failed_attempts: 0,
        });
        let job = JobIo {
            outcome: outcome_tx,
            progress: progress_tx,
        };
        self.jobs.insert(id, job);
        Ok(Submitted {
            id,
            outcome,
            progress,
        })
    }
}

impl Role for BackendIo {
    type Message = CoarseMessage;
    type Core = BackendCore;
    type Origin = ();
    type Event = Msg;
    type Exit = oneshot::Sender<DriverStatus>;

    /// What the executors sent meanwhile is handled together, its offers made once and its
    /// frames written together, without starving the timers.
    const BATCH: usize = 64;

    fn begin_batch(&mut self, core: &mut BackendCore) {
        core.begin_batch();
    }

    fn end_batch(&mut self, core: &mut BackendCore) {
        core.end_batch();
    }

    fn drained(&mut self, core: &BackendCore) {
        if let Some(poll) = &self.busy_poll {
            if core.tasks_out() {
                // A result may be on its way: read it awake.
                poll.activity();
            }
        }
    }

    /// A LaunchTask is kept (its payload is shared, not copied) to be reported if it is
    /// refused.
    fn keep(&self, out: &ConnOutput<CoarseMessage>) -> Option<CoarseMessage> {
        match out {
            ConnOutput::Send {
                message: message @ CoarseMessage::LaunchTask(_),
                ..
            } => Some(message.clone()),
            _ => None,
        }
    }

    /// A connection the write closed (a slow consumer: its queue is full) is reported lost; a
    /// LaunchTask refused without closing it is reported back, and its task fails.
    fn refused(
        &mut self,
        io: &mut Io<Self>,
        conn: ConnId,
        kept: Option<CoarseMessage>,
        (what, e): (&'static str, ConnectionError),
    ) {
        match kept {
            Some(message) if !e.closes_connection() => {
                let error = e.to_string();
                io.handle(BackendInput::NotSent {
                    conn,
                    message,
                    error,
                });
            }
            _ if !e.closes_connection() => {
                tracing::warn!("driver: {what} on connection {conn} not sent: {e}")
            }
            _ => {
                tracing::warn!("driver: {what} on connection {conn} failed: {e}");
                let reason = e.to_string();
                io.handle(BackendInput::Lost { conn, reason });
            }
        }
    }

    async fn effect(&mut self, _io: &mut Io<Self>, effect: BackendEffect) -> Option<Self::Exit> {
        match effect {
            BackendEffect::Progress { job, progress } => {
                if let Some(j) = self.jobs.get(&job) {
                    j.progress.send_replace(progress);
                }
            }
            BackendEffect::JobEnded { job, outcome } => {
                if let Some(j) = self.jobs.remove(&job) {
                    let _ = j.outcome.send(outcome);
                }
            }
            BackendEffect::Refused {
                conn,
                addr,
                role,
                id,
                kind,
                reason,
            } => {
                let peer = crate::node::violations::Peer {
                    addr: &addr,
                    role,
                    id: &id,
                    conn,
                };
                crate::node::violations::warn(peer, "refused", kind, &reason);
            }
        }
        None
    }

    async fn event(&mut self, io: &mut Io<Self>, msg: Msg) -> Option<Self::Exit> {
        match msg {
            Msg::Master(event) => io.handle(BackendInput::Master(event)),
            Msg::Submit { job, reply } => {
                let _ = reply.send(self.submit(io, job));
            }
            Msg::Cancel { job } => io.handle(BackendInput::Cancel(job)),
            Msg::Status(reply) => {
                let _ = reply.send(status(io, self.client.as_ref()));
            }
            Msg::RequestExecutors { total, reply } => match &self.client {
                Some(client) => client.request_executors(total, reply),
                None => {
                    let _ = reply.send(Err(DriverError::NotRegistered));
                }
            },
            Msg::KillExecutors { ids, reply } => {
                io.handle(BackendInput::KillExecutors(ids.clone()));
                match &self.client {
                    Some(client) => client.kill_executors(ids, reply),
                    None => {
                        let _ = reply.send(Err(DriverError::NotRegistered));
                    }
                }
            }
            Msg::StallCheck => self.check_stalls(io),
            // A Stop during the stop sequence is answered at once.
            Msg::Stop(reply) if self.stopping => {
                let _ = reply.send(status(io, self.client.as_ref()));
            }
            Msg::Stop(reply) => return Some(reply),
        }
        None
    }

    /// Every executor connection's close is logged, naming the executor as its hello did.
    fn peer_of(&self, io: &Io<Self>, conn: ConnId) -> Option<(String, PeerRole, String)> {
        let info = io.peers.info(conn)?;
        Some((info.addr.clone(), PeerRole::Executor, info.id.clone()))
    }
}
