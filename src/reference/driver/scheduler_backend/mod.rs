//! The driver's scheduler backend (Spark's `CoarseGrainedSchedulerBackend.DriverEndpoint`): the
//! IO-free [`core`] that owns the executors, the jobs and the task scheduler, and the thin tokio
//! loop here that feeds it what executors send, what the application client says, the revive
//! timer and callers' requests, and carries out what it decides.
//!
//! The loop never waits on a peer's socket: each executor connection has its own writer task
//! with its own queue, so an executor that stops reading holds up only its own frames. A send
//! that fails or waits longer than [`DriverConfig::send_timeout`] gives that connection up, and the core
//! treats its executor as lost (its tasks run again elsewhere).

mod core;
#[cfg(test)]
mod tests;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::{mpsc, oneshot, watch, Notify};

use self::core::{BackendCore, ConnId, Input, Output};
use super::app_client::AppClient;
use super::events::{Msg, Submitted};
use super::job::{JobFailed, JobProgress, JobResult};
use super::{add_counters, DriverConfig, DriverError};
use crate::connection::{ConnectionHandle, Counters, Incoming};
use crate::messages::coarse::LaunchTask;
use crate::messages::{CoarseMessage, ErrorDescription, ExecutorState, Family};
use crate::reference::driver::JobId;
use crate::reference::url::SparkUrl;
use crate::wire::Reply;

/// How long one frame may wait to be queued on an executor connection that does not read before
/// that connection is given up, by default ([`DriverConfig::send_timeout`]).
pub(crate) const SEND_TIMEOUT: Duration = Duration::from_secs(30);

/// How long stopping waits for executors to close their connections after StopExecutor.
const STOP_GRACE: Duration = Duration::from_secs(3);

/// An executor as the driver knows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExecutorSummary {
    /// Executor id.
    pub id: String,
    /// Its host, as it registered.
    pub host: String,
    /// Cores it registered with.
    pub cores: u32,
    /// Cores not held by tasks.
    pub free_cores: u32,
    /// Whether it sent LaunchedExecutor (it gets tasks only then).
    pub ready: bool,
    /// The worker running it, when the master said (ExecutorAdded).
    pub worker_id: Option<String>,
}

/// An executor the master reported ended (ExecutorUpdated), and why: a worker that refused to
/// launch it says so here (SPEC §14.5).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExecutorEnd {
    /// Executor id.
    pub id: String,
    /// The state it ended in (FAILED for a launch the worker refused).
    pub state: ExecutorState,
    /// The worker's message: why it failed or exited.
    pub message: Option<String>,
    /// Its exit code, if it ran.
    pub exit_status: Option<i32>,
}

/// The driver's state, as [`Driver::status`](super::Driver::status) reports it.
#[derive(Debug, Clone, Default)]
pub struct DriverStatus {
    /// The application id the master gave, once registered.
    pub app_id: Option<String>,
    /// Registered executors.
    pub executors: Vec<ExecutorSummary>,
    /// From the driver's start to the first executor registered.
    pub first_executor_after: Option<Duration>,
    /// Traffic of every connection the driver had, open or closed (executors' and masters').
    pub counters: Counters,
    /// Connections the driver had with executors.
    pub executor_connections: usize,
    /// LaunchTask messages sent.
    pub tasks_launched: u64,
    /// Task attempts that ended FINISHED.
    pub tasks_finished: u64,
    /// Task attempts that failed, were killed or were lost.
    pub tasks_failed: u64,
    /// Executors removed (lost or exited) while the driver ran.
    pub executors_lost: u64,
    /// Why the application is dead, if it is.
    pub dead: Option<String>,
    /// The active master: its URL, or its id when it dialled the application after a failover.
    pub master: Option<String>,
    /// MasterChanged messages acknowledged (failovers followed).
    pub master_changes: u32,
    /// Since the driver started.
    pub uptime: Duration,
    /// The last executors the master reported ended, oldest first (at most 100).
    pub executor_ends: Vec<ExecutorEnd>,
}

impl DriverStatus {
    /// Executors registered and ready for tasks.
    pub fn ready_executors(&self) -> usize {
        self.executors.iter().filter(|e| e.ready).count()
    }
}

/// What a connection's writer task writes, in order.
enum Write {
    Send(CoarseMessage),
    Launch(i64, LaunchTask),
    Reply(u64, Reply<CoarseMessage>),
    Fail(u64, ErrorDescription),
    Close,
}

/// An executor connection as the loop holds it.
struct ConnIo {
    handle: ConnectionHandle<CoarseMessage>,
    abort: Arc<Notify>,
    writer: mpsc::UnboundedSender<Write>,
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
    /// Where writer tasks report failed sends.
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
    let mut shell = Shell {
        core: BackendCore::new(config, url, Instant::now()),
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
                Some(msg) => shell.handle(msg),
                None => break None,
            },
            Some(msg) = reported.recv() => shell.handle(msg),
            _ = crate::reference::clock::sleep_until(wake) => shell.core.handle_timeout(Instant::now()),
        }
        shell.drain();
    };
    shell.stop(&mut rx, &mut reported).await;
    accept.abort();
    if let Some(reply) = stop_reply {
        let _ = reply.send(shell.status());
    }
}

impl Shell {
    fn handle(&mut self, msg: Msg) {
        let now = Instant::now();
        match msg {
            Msg::Connected {
                key,
                handle,
                peer,
                abort,
            } => {
                let (writer, queue) = mpsc::unbounded_channel();
                tokio::spawn(write_loop(
                    Writer {
                        key,
                        handle: handle.clone(),
                        abort: Arc::clone(&abort),
                        reports: self.reports.clone(),
                        timeout: self.send_timeout,
                    },
                    queue,
                ));
                let input = Input::Connected {
                    conn: key,
                    peer,
                    role: handle.negotiated().peer_role,
                    max_frame_size: handle.max_frame_size(),
                };
                self.conns.insert(
                    key,
                    ConnIo {
                        handle,
                        abort,
                        writer,
                    },
                );
                self.core.handle(now, input);
            }
            Msg::FromExecutor { key, incoming } => {
                let input = match incoming {
                    Incoming::Message(message) => Input::Message { conn: key, message },
                    Incoming::Ask { id, message } => Input::Ask {
                        conn: key,
                        id,
                        message,
                    },
                };
                self.core.handle(now, input);
            }
            Msg::Disconnected { key, reason } => {
                if let Some(c) = self.conns.remove(&key) {
                    add_counters(&mut self.closed_counters, &c.handle.counters());
                }
                let reason = reason.to_string();
                self.core.handle(now, Input::Closed { conn: key, reason });
            }
            Msg::SendFailed { key, reason } => {
                self.core.handle(now, Input::Lost { conn: key, reason });
            }
            Msg::LaunchNotSent { task_id, error } => {
                self.core
                    .handle(now, Input::LaunchNotSent { task_id, error });
            }
            Msg::Master(event) => self.core.handle(now, Input::Master(event)),
            Msg::Submit { job, reply } => {
                let total = job.partitions();
                let submitted = self.core.submit(now, job).map(|id| {
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
            Msg::Cancel { job } => self.core.handle(now, Input::Cancel(job)),
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
                self.core.handle(now, Input::KillExecutors(ids.clone()));
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
                Output::Send { conn, message } => self.write(conn, Write::Send(message)),
                Output::Launch {
                    conn,
                    task_id,
                    launch,
                } => self.write(conn, Write::Launch(task_id, launch)),
                Output::Reply { conn, id, reply } => self.write(conn, Write::Reply(id, reply)),
                Output::Fail { conn, id, error } => self.write(conn, Write::Fail(id, error)),
                Output::Close { conn } => self.write(conn, Write::Close),
                Output::Abort { conn } => {
                    if let Some(c) = self.conns.get(&conn) {
                        c.abort.notify_one();
                    }
                }
                Output::Progress { job, progress } => {
                    if let Some(j) = self.jobs.get(&job) {
                        j.progress.send_replace(progress);
                    }
                }
                Output::JobEnded { job, outcome } => {
                    if let Some(j) = self.jobs.remove(&job) {
                        let _ = j.outcome.send(outcome);
                    }
                }
            }
        }
    }

    /// Queues `w` on `conn`'s writer; nothing when the connection is gone (its close is
    /// reported by its reader).
    fn write(&self, conn: ConnId, w: Write) {
        if let Some(c) = self.conns.get(&conn) {
            let _ = c.writer.send(w);
        }
    }

    fn status(&self) -> DriverStatus {
        let mut status = self.core.status(Instant::now());
        let mut counters = self.closed_counters.clone();
        for conn in self.conns.values() {
            add_counters(&mut counters, &conn.handle.counters());
        }
        if let Some(client) = &self.client {
            add_counters(&mut counters, &client.counters());
        }
        status.counters = counters;
        status
    }

    /// Spark's stop: jobs fail, StopExecutor to every executor, UnregisterApplication to the
    /// master, then the connections close.
    async fn stop(
        &mut self,
        rx: &mut mpsc::UnboundedReceiver<Msg>,
        reported: &mut mpsc::UnboundedReceiver<Msg>,
    ) {
        self.core.handle(Instant::now(), Input::Stop);
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

/// One executor connection's writing end.
struct Writer {
    key: ConnId,
    handle: ConnectionHandle<CoarseMessage>,
    abort: Arc<Notify>,
    reports: mpsc::UnboundedSender<Msg>,
    timeout: Duration,
}

/// Writes what the loop queued for one executor connection, in order. A send that fails because
/// the connection is closed, or that waits over the send timeout (the peer does not read), gives
/// the connection up: the loop hears [`Msg::SendFailed`].
async fn write_loop(writer: Writer, mut queue: mpsc::UnboundedReceiver<Write>) {
    let Writer {
        key,
        handle,
        abort,
        reports,
        timeout,
    } = writer;
    while let Some(w) = queue.recv().await {
        let (what, task, sent) = match w {
            Write::Send(m) => {
                let name = m.name();
                (
                    name,
                    None,
                    tokio::time::timeout(timeout, handle.send(m)).await,
                )
            }
            Write::Launch(task_id, launch) => {
                let m = CoarseMessage::LaunchTask(launch);
                let sent = tokio::time::timeout(timeout, handle.send(m)).await;
                ("LaunchTask", Some(task_id), sent)
            }
            Write::Reply(id, reply) => {
                let sent = tokio::time::timeout(timeout, handle.reply(id, reply)).await;
                ("reply", None, sent)
            }
            Write::Fail(id, error) => {
                let sent = tokio::time::timeout(timeout, handle.fail(id, error)).await;
                ("failure", None, sent)
            }
            Write::Close => {
                if tokio::time::timeout(timeout, handle.close()).await.is_err() {
                    abort.notify_one();
                }
                return;
            }
        };
        let reason = match sent {
            Ok(Ok(())) => continue,
            Ok(Err(e)) if !e.closes_connection() => {
                match task {
                    Some(task_id) => {
                        let error = e.to_string();
                        let _ = reports.send(Msg::LaunchNotSent { task_id, error });
                    }
                    None => tracing::warn!("driver: {what} on connection {key} not sent: {e}"),
                }
                continue;
            }
            Ok(Err(e)) => {
                tracing::warn!("driver: {what} on connection {key} failed: {e}");
                e.to_string()
            }
            Err(_) => {
                tracing::warn!(
                    "driver: connection {key} takes no frames for {timeout:?}; closing it"
                );
                abort.notify_one();
                format!("{what} waited over {timeout:?}: the executor does not read")
            }
        };
        let _ = reports.send(Msg::SendFailed { key, reason });
        return;
    }
}
