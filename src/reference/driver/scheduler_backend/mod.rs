//! The scheduler backend's tokio shell: it feeds [`BackendCore`] (in `node::driver`, which owns
//! the executors, the jobs and the task scheduler) what executors send, what the application
//! client says, the revive timer and callers' requests, and carries out what it decides.
//!
//! The loop never waits on a peer's socket: what the core outputs goes straight onto each executor
//! connection's own write queue, bounded in bytes ([`ConnectionHandle::post`], written by the
//! connection's own task), so an executor that stops reading holds up only its own frames. An
//! executor whose queue is full is closed as a slow consumer
//! ([`ConnectionError::SlowConsumer`](crate::connection::ConnectionError::SlowConsumer)); one
//! whose queue makes no progress for [`DriverConfig::send_timeout`] is given up as well. Either
//! way the core treats its executor as lost (its tasks run again elsewhere).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::{mpsc, oneshot, watch, Notify};

use super::app_client::AppClient;
use super::events::{Msg, Submitted};
use super::{add_counters, DriverConfig, DriverError};
use crate::connection::{ConnectionHandle, Counters, Incoming};
use crate::messages::{CoarseMessage, Family};
use crate::node::driver::{
    BackendCore, BackendEffect, BackendInput, BackendStatus, JobFailed, JobId, JobProgress,
    JobResult,
};
use crate::node::url::SparkUrl;
use crate::node::{ConnId, ConnInput, ConnOutput, Core, Output};
use crate::reference::outbox::peer_info;

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

/// How often the loop looks for executor connections whose queue makes no progress.
const STALL_CHECK: Duration = Duration::from_secs(1);

/// An executor connection as the loop holds it.
struct ConnIo {
    handle: ConnectionHandle<CoarseMessage>,
    abort: Arc<Notify>,
    /// Bytes written to it when its queue was last seen to make progress, and when.
    progress: (u64, tokio::time::Instant),
}

/// A submitted job's sending ends.
struct JobIo {
    outcome: oneshot::Sender<Result<JobResult, JobFailed>>,
    progress: watch::Sender<JobProgress>,
}

/// The loop's state: the core and the IO it carries out for it.
struct Shell {
    core: BackendCore,
    conns: HashMap<ConnId, ConnIo>,
    jobs: HashMap<JobId, JobIo>,
    closed_counters: Counters,
    client: Option<AppClient>,
    /// Where failed sends and stalled connections are reported to the loop.
    reports: mpsc::UnboundedSender<Msg>,
    send_timeout: Duration,
}

/// Runs the backend until stopped (or every handle to it is gone).
pub(super) async fn run(
    config: Arc<DriverConfig>,
    url: SparkUrl,
    mut rx: mpsc::UnboundedReceiver<Msg>,
    client: Option<AppClient>,
    accept: tokio::task::JoinHandle<()>,
) {
    let (reports, mut reported) = mpsc::unbounded_channel();
    let send_timeout = config.send_timeout;
    let busy_poll = crate::reference::busy_poll::BusyPoll::start(config.busy_poll);
    let mut stall_check = tokio::time::interval(STALL_CHECK);
    stall_check.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut shell = Shell {
        core: BackendCore::new(config.backend_config(&url), Instant::now()),
        conns: HashMap::new(),
        jobs: HashMap::new(),
        closed_counters: Counters::default(),
        client,
        reports,
        send_timeout,
    };
    let stop_reply = loop {
        let wake = shell.core.poll_timeout();
        tokio::select! {
            msg = rx.recv() => match msg {
                Some(Msg::Stop(reply)) => break Some(reply),
                Some(msg) => {
                    if let Some(reply) = shell.handle_batch(msg, &mut rx) {
                        break Some(reply);
                    }
                }
                None => break None,
            },
            Some(msg) = reported.recv() => shell.handle(msg),
            _ = crate::reference::clock::sleep_until(wake) => shell.core.handle_timeout(Instant::now()),
            _ = stall_check.tick() => shell.check_stalls(),
        }
        shell.drain();
        if let Some(poll) = &busy_poll {
            if shell.core.tasks_out() {
                // A result may be on its way: read it awake.
                poll.activity();
            }
        }
    };
    shell.stop(&mut rx, &mut reported).await;
    accept.abort();
    if let Some(reply) = stop_reply {
        let _ = reply.send(shell.status());
    }
}

/// Most messages the loop takes in one batch: what the executors sent meanwhile is handled
/// together, its offers made once and its frames written together, without starving the timers.
const BATCH: usize = 64;

impl Shell {
    /// Handles `first` and whatever else is already waiting in `rx` (at most [`BATCH`] in all) as
    /// one batch of the core. Returns the reply channel of a Stop found in it, which ends the loop
    /// once the messages before it are handled.
    fn handle_batch(
        &mut self,
        first: Msg,
        rx: &mut mpsc::UnboundedReceiver<Msg>,
    ) -> Option<oneshot::Sender<DriverStatus>> {
        self.core.begin_batch();
        self.handle(first);
        let mut stop = None;
        for _ in 1..BATCH {
            match rx.try_recv() {
                Ok(Msg::Stop(reply)) => {
                    stop = Some(reply);
                    break;
                }
                Ok(msg) => self.handle(msg),
                Err(_) => break,
            }
        }
        self.core.end_batch();
        stop
    }

    fn handle(&mut self, msg: Msg) {
        let now = Instant::now();
        match msg {
            Msg::Connected {
                key,
                handle,
                addr,
                abort,
            } => {
                let input = ConnInput::Opened {
                    conn: key,
                    peer: peer_info(&handle, addr),
                    origin: (),
                };
                self.conns.insert(
                    key,
                    ConnIo {
                        progress: (handle.counters().sent.bytes, tokio::time::Instant::now()),
                        handle,
                        abort,
                    },
                );
                self.core.handle(now, input.into());
            }
            Msg::FromExecutor {
                key,
                incoming,
                credit,
            } => {
                let input = match incoming {
                    Incoming::Message(message) => ConnInput::Message { conn: key, message },
                    Incoming::Ask { id, message } => ConnInput::Ask {
                        conn: key,
                        id,
                        message,
                    },
                };
                self.core.handle(now, input.into());
                // Handled: that connection may read on.
                drop(credit);
            }
            Msg::Disconnected { key, reason } => {
                if let Some(c) = self.conns.remove(&key) {
                    add_counters(&mut self.closed_counters, &c.handle.counters());
                }
                let reason = reason.to_string();
                let input = ConnInput::Closed { conn: key, reason };
                self.core.handle(now, input.into());
            }
            Msg::SendFailed { key, reason } => {
                self.core
                    .handle(now, BackendInput::Lost { conn: key, reason });
            }
            Msg::NotSent {
                key,
                message,
                error,
            } => {
                let input = BackendInput::NotSent {
                    conn: key,
                    message,
                    error,
                };
                self.core.handle(now, input);
            }
            Msg::Master(event) => self.core.handle(now, BackendInput::Master(event)),
            Msg::Submit { job, reply } => {
                let total = job.partitions();
                let submitted = self
                    .core
                    .submit(now, job)
                    .map_err(DriverError::from)
                    .map(|id| {
                        let (outcome_tx, outcome) = oneshot::channel();
                        let (progress_tx, progress) = watch::channel(JobProgress {
                            finished: 0,
                            total,
                            failed_attempts: 0,
                        });
                        self.jobs.insert(
                            id,
                            JobIo {
                                outcome: outcome_tx,
                                progress: progress_tx,
                            },
                        );
                        Submitted {
                            id,
                            outcome,
                            progress,
                        }
                    });
                let _ = reply.send(submitted);
            }
            Msg::Cancel { job } => self.core.handle(now, BackendInput::Cancel(job)),
            Msg::Status(reply) => {
                let _ = reply.send(self.status());
            }
            Msg::RequestExecutors { total, reply } => match &self.client {
                Some(client) => client.request_executors(total, reply),
                None => {
                    let _ = reply.send(Err(DriverError::NotRegistered));
                }
            },
            Msg::KillExecutors { ids, reply } => {
                self.core
                    .handle(now, BackendInput::KillExecutors(ids.clone()));
                match &self.client {
                    Some(client) => client.kill_executors(ids, reply),
                    None => {
                        let _ = reply.send(Err(DriverError::NotRegistered));
                    }
                }
            }
            Msg::Stop(reply) => {
                // Handled by the loop; a Stop reaching here comes during the stop sequence.
                let _ = reply.send(self.status());
            }
        }
    }

    /// Carries out what the core decided, in order: the one place its outputs are drained.
    fn drain(&mut self) {
        while let Some(out) = self.core.poll() {
            match out {
                Output::Conn(out) => self.carry(out),
                Output::Effect(effect) => self.effect(effect),
            }
        }
    }

    /// Queues `out` on its connection's own write queue without waiting; nothing when the
    /// connection is gone (its close is reported by its reader). A connection the write closes (a
    /// slow consumer: its queue is full) is reported lost; a LaunchTask refused without closing
    /// it is reported back, and its task fails.
    fn carry(&self, out: ConnOutput<CoarseMessage>) {
        let conn = out.conn();
        let Some(c) = self.conns.get(&conn) else {
            return;
        };
        let handle = &c.handle;
        let (what, sent) = match out {
            ConnOutput::Send { message, .. } => {
                let name = message.name();
                // Kept (its payload is shared, not copied) to be reported if it is refused.
                let launch =
                    matches!(message, CoarseMessage::LaunchTask(_)).then(|| message.clone());
                match (handle.post(message), launch) {
                    (Err(e), Some(message)) if !e.closes_connection() => {
                        let error = e.to_string();
                        let _ = self.reports.send(Msg::NotSent {
                            key: conn,
                            message,
                            error,
                        });
                        return;
                    }
                    (sent, _) => (name, sent),
                }
            }
            ConnOutput::Ask { message, .. } => {
                // The scheduler backend asks its executors nothing.
                tracing::error!(
                    "driver: {} not asked: the driver takes no answers",
                    message.name()
                );
                return;
            }
            ConnOutput::Reply { id, reply, .. } => ("reply", handle.post_reply(id, reply)),
            ConnOutput::Fail { id, error, .. } => ("failure", handle.post_failure(id, error)),
            ConnOutput::Close { reason, .. } => {
                match reason {
                    Some(reason) => handle.close_soon_because(reason),
                    None => handle.close_soon(),
                }
                let (handle, abort, timeout) =
                    (handle.clone(), Arc::clone(&c.abort), self.send_timeout);
                tokio::spawn(async move {
                    if tokio::time::timeout(timeout, handle.closed())
                        .await
                        .is_err()
                    {
                        abort.notify_one();
                    }
                });
                return;
            }
            ConnOutput::Abort { .. } => {
                c.abort.notify_one();
                return;
            }
        };
        match sent {
            Ok(()) => {}
            Err(e) if !e.closes_connection() => {
                tracing::warn!("driver: {what} on connection {conn} not sent: {e}")
            }
            Err(e) => {
                tracing::warn!("driver: {what} on connection {conn} failed: {e}");
                let reason = e.to_string();
                let _ = self.reports.send(Msg::SendFailed { key: conn, reason });
            }
        }
    }

    /// Carries out one of the core's own effects.
    fn effect(&mut self, effect: BackendEffect) {
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
    }

    /// Gives up the executor connections whose queued frames have waited over the send timeout
    /// with nothing written (the executor does not read, though its queue is not full yet).
    fn check_stalls(&mut self) {
        let now = tokio::time::Instant::now();
        for (&key, c) in &mut self.conns {
            let written = c.handle.counters().sent.bytes;
            if written != c.progress.0 || c.handle.queued_bytes() == 0 {
                c.progress = (written, now);
            } else if now.duration_since(c.progress.1) >= self.send_timeout {
                let timeout = self.send_timeout;
                tracing::warn!(
                    "driver: connection {key} takes no frames for {timeout:?}; closing it"
                );
                c.abort.notify_one();
                // Reported once: the reader reports the close next.
                c.progress = (written, now + Duration::from_secs(3600));
                let reason = format!("frames waited over {timeout:?}: the executor does not read");
                let _ = self.reports.send(Msg::SendFailed { key, reason });
            }
        }
    }

    fn status(&self) -> DriverStatus {
        let backend = self.core.status(Instant::now());
        let mut counters = self.closed_counters.clone();
        for conn in self.conns.values() {
            add_counters(&mut counters, &conn.handle.counters());
        }
        if let Some(client) = &self.client {
            add_counters(&mut counters, &client.counters());
        }
        DriverStatus { backend, counters }
    }

    /// Spark's stop: jobs fail, StopExecutor to every executor, UnregisterApplication to the
    /// master, then the connections close.
    async fn stop(
        &mut self,
        rx: &mut mpsc::UnboundedReceiver<Msg>,
        reported: &mut mpsc::UnboundedReceiver<Msg>,
    ) {
        self.core.handle(Instant::now(), BackendInput::Stop);
        self.drain();
        if let Some(client) = &self.client {
            client.stop().await;
        }
        // Executors close their connections on StopExecutor; wait for them a little.
        let deadline = tokio::time::Instant::now() + STOP_GRACE;
        while self.core.has_connections() {
            let msg = tokio::select! {
                msg = rx.recv() => msg,
                Some(msg) = reported.recv() => Some(msg),
                _ = tokio::time::sleep_until(deadline) => None,
            };
            match msg {
                Some(Msg::Stop(reply)) => {
                    let _ = reply.send(self.status());
                }
                Some(Msg::Submit { reply, .. }) => {
                    let _ = reply.send(Err(DriverError::Stopped));
                }
                Some(msg) => self.handle(msg),
                None => break,
            }
            self.drain();
        }
        let closing: Vec<_> = self
            .conns
            .values()
            .map(|c| {
                let handle = c.handle.clone();
                tokio::spawn(async move {
                    let _ = tokio::time::timeout(Duration::from_secs(1), handle.close()).await;
                })
            })
            .collect();
        for c in closing {
            let _ = c.await;
        }
        for conn in self.conns.values() {
            // Still open after a graceful close was tried: its peer does not read.
            conn.abort.notify_one();
        }
        // The readers report the closes; take them in so the counters and taps are complete.
        while self.core.has_connections() {
            match tokio::time::timeout(Duration::from_secs(1), rx.recv()).await {
                Ok(Some(msg @ Msg::Disconnected { .. })) => self.handle(msg),
                Ok(Some(_)) => {}
                Ok(None) | Err(_) => break,
            }
        }
    }
}
