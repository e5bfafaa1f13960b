//! The executor's part of the [generic driver](crate::reference::runtime): it carries out what
//! [`ExecutorCore`] (in `node::executor`) decides besides writing on its connections — dialling
//! the driver, watching the worker, running and killing tasks — and feeds it what comes of them.
//!
//! Tasks run on the executor's own task threads ([`TaskThreads`]), or on the event loop itself
//! for a task the runner says is brief (its RUNNING and its end then leave in one write); a task
//! thread reports its task's start and end to the runtime's inbox, where they are fed to the core
//! as any other event. The core's StatusUpdates go to [`Updates`], which queues a small one at
//! once and lets a large one wait for room, so that a large result never makes the driver close
//! the connection as a slow consumer; every other write goes to its connection's queue.
//!
//! (Here "the driver" is Spark's driver, the executor's peer; the generic driver is "the
//! runtime".)

use std::collections::HashMap;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;
use std::time::Duration;

use super::connect::{dial, WorkerWatch};
use super::threads::TaskThreads;
use super::updates::Updates;
use super::{ExecutorConfig, ExecutorError};
use crate::connection::{ConnectionConfig, ConnectionError};
use crate::messages::{CoarseMessage, Payload, TaskDescription};
use crate::node::executor::{
    ExecutorCore, ExecutorEffect, ExecutorExit, ExecutorIdentity, ExecutorInput, Link, StartFailed,
};
use crate::node::url::SparkUrl;
use crate::node::{ConnId, ConnInput, ConnOutput};
use crate::reference::outbox::{open as open_conn, peer_info};
use crate::reference::runtime::{Event, Events, Io, Role, Runtime};
use crate::reference::task::{CancelFlag, TaskRunner};
use crate::wire::TaskFailure;

/// How long a graceful close of the driver's connection waits for a driver that does not read.
const SEND_TIMEOUT: Duration = Duration::from_secs(30);

/// What the executor's own tasks and threads report to its runtime.
pub(super) enum Own {
    /// A dial of the driver failed, with the connection's own error.
    DialFailed { link: Link, error: ExecutorError },
    /// The worker's watch is up, or could not be opened.
    Watched(Result<WorkerWatch, ExecutorError>),
    /// The worker's watch ended.
    WorkerGone(String),
    /// A task thread's news (its task started or ended), or an update [`Updates`] could not
    /// send as it was.
    Report(ExecutorInput),
}

/// The executor's IO: the addresses it dials, its task threads and the tasks they run.
pub(super) struct ExecutorIo {
    config: ExecutorConfig,
    driver: SparkUrl,
    worker: Option<SparkUrl>,
    runner: Arc<dyn TaskRunner>,
    threads: TaskThreads,
    /// The tasks running, with the flag that kills each.
    running: HashMap<i64, CancelFlag>,
    next_conn: ConnId,
    /// The typed error of the last dial or watch that failed, for the start-up's error.
    failure: Option<ExecutorError>,
    /// The StatusUpdates' writer on the main connection, once an update was written on it.
    updates: Option<(ConnId, Arc<Updates>)>,
    slow_lane: Option<tokio::task::JoinHandle<()>>,
}

/// Runs an executor until it is stopped or loses its driver or worker: bootstrap, registration,
/// then tasks through `runner`.
pub(super) async fn run(
    config: &ExecutorConfig,
    runner: Arc<dyn TaskRunner>,
) -> Result<ExecutorExit, ExecutorError> {
    let driver = SparkUrl::parse(&config.driver_url)?;
    let worker = config
        .worker_url
        .as_deref()
        .map(SparkUrl::parse)
        .transpose()?;
    let me = ExecutorIdentity {
        executor_id: config.executor_id.clone(),
        hostname: config.hostname.clone(),
        cores: config.cores,
        resource_profile_id: config.resource_profile_id,
        watch_worker: worker.is_some(),
    };
    let keep = usize::try_from(config.cores).unwrap_or(1);
    let role = ExecutorIo {
        threads: TaskThreads::new(keep, format!("executor-{}-task", config.executor_id)),
        config: config.clone(),
        driver,
        worker,
        runner,
        running: HashMap::new(),
        next_conn: 0,
        failure: None,
        updates: None,
        slow_lane: None,
    };
    let mut rt = Runtime::new(ExecutorCore::new(me), role, SEND_TIMEOUT);
    let exit = rt.run(std::future::pending()).await;
    rt.role.end(&rt.io, &exit).await;
    exit
}

impl ExecutorIo {
    /// Dials the driver for `link`; the connection is handed to the runtime's inbox when made.
    fn dial(&mut self, io: &Io<Self>, link: Link) {
        let conn = self.next_conn;
        self.next_conn += 1;
        let (url, config, events) = (self.driver.clone(), self.config.clone(), io.events.clone());
        tokio::spawn(async move {
            let settings = match link {
                Link::Bootstrap => ConnectionConfig::default(),
                Link::Main { max_frame_size } => {
                    ConnectionConfig::default().with_max_frame_size(max_frame_size)
                }
            };
            match dial(&url, &config, settings).await {
                Ok(made) => {
                    let peer = peer_info(&made.handle(), url.socket_address());
                    open_conn(made, conn, (peer, link), &events, None);
                }
                Err(error) => {
                    let _ = events.send(Event::Own(Own::DialFailed { link, error }));
                }
            }
        });
    }

    /// Opens the watch of the worker; its end is reported to the runtime's inbox.
    fn watch_worker(&mut self, io: &Io<Self>) {
        let events = io.events.clone();
        let Some(url) = self.worker.clone() else {
            let _ = events.send(Event::Own(Own::WorkerGone("no worker to watch".into())));
            return;
        };
        let config = self.config.clone();
        tokio::spawn(async move {
            let watch = WorkerWatch::open(&url, &config).await;
            let _ = events.send(Event::Own(Own::Watched(watch)));
        });
    }

    /// Runs a task: here when the runner says it is brief, else on a task thread, which reports
    /// its start and end to the runtime's inbox.
    fn run_task(&mut self, io: &mut Io<Self>, task: TaskDescription) {
        let task_id = task.task_id;
        let cancel = CancelFlag::new();
        if self.runner.runs_briefly(&task) {
            // Over before anything else could be read: its RUNNING and its end leave together.
            io.handle(ExecutorInput::TaskStarted { task_id });
            let outcome = run_caught(self.runner.as_ref(), &task, &cancel);
            io.handle(ExecutorInput::TaskEnded { task_id, outcome });
            return;
        }
        self.running.insert(task_id, cancel.clone());
        let (runner, events) = (Arc::clone(&self.runner), io.events.clone());
        let job = Box::new(move || run_on_thread(runner.as_ref(), &task, &cancel, &events));
        if let Err(e) = self.threads.run(job) {
            self.running.remove(&task_id);
            io.handle(ExecutorInput::TaskStarted { task_id });
            let failure = TaskFailure::new(
                "java.util.concurrent.RejectedExecutionException",
                format!("no thread to run task {task_id} on: {e}"),
            );
            io.handle(ExecutorInput::TaskEnded {
                task_id,
                outcome: Err(failure),
            });
        }
    }

    /// The typed error of a start-up that failed: what went wrong with a connection as the
    /// connection said it, else the core's reason.
    fn start_error(&mut self, failed: StartFailed) -> ExecutorError {
        match failed {
            StartFailed::Refused(why) => ExecutorError::Refused(why),
            StartFailed::UnexpectedReply { ask, got } => {
                ExecutorError::UnexpectedReply { ask, got }
            }
            StartFailed::BadSetting { key, value } => ExecutorError::BadSetting { key, value },
            StartFailed::Unreachable { what, error } => {
                self.failure.take().unwrap_or(ExecutorError::Connect {
                    url: what.to_string(),
                    message: error,
                })
            }
            StartFailed::NoAnswer { ask, error } => ExecutorError::NoAnswer { ask, error },
        }
    }

    /// Stops the tasks and, after StopExecutor, waits for the close of the driver's connection
    /// the core asked for.
    async fn end(&mut self, io: &Io<Self>, exit: &Result<ExecutorExit, ExecutorError>) {
        for cancel in self.running.values() {
            cancel.cancel();
        }
        self.threads.close();
        if exit == &Ok(ExecutorExit::Stopped) {
            io.peers.wait_closing(SEND_TIMEOUT).await;
        }
        if let Some(lane) = self.slow_lane.take() {
            lane.abort();
        }
    }
}

impl Role for ExecutorIo {
    type Message = CoarseMessage;
    type Core = ExecutorCore;
    type Origin = Link;
    type Event = Own;
    type Exit = Result<ExecutorExit, ExecutorError>;

    /// The task threads' news that arrived meanwhile is handled together, its updates written
    /// together.
    const BATCH: usize = 64;

    async fn effect(&mut self, io: &mut Io<Self>, effect: ExecutorEffect) -> Option<Self::Exit> {
        match effect {
            ExecutorEffect::Dial(link) => self.dial(io, link),
            ExecutorEffect::WatchWorker => self.watch_worker(io),
            ExecutorEffect::Registered { .. } => {}
            ExecutorEffect::Run(task) => self.run_task(io, *task),
            ExecutorEffect::Kill { task_id, .. } => {
                if let Some(cancel) = self.running.get(&task_id) {
                    cancel.cancel();
                }
            }
            ExecutorEffect::Exit(exit) => {
                return Some(exit.map_err(|failed| self.start_error(failed)));
            }
        }
        None
    }

    async fn event(&mut self, io: &mut Io<Self>, event: Own) -> Option<Self::Exit> {
        let input = match event {
            Own::DialFailed { link, error } => {
                let message = error.to_string();
                self.failure = Some(error);
                ConnInput::DialFailed {
                    origin: link,
                    error: message,
                }
                .into()
            }
            Own::Watched(Ok(watch)) => {
                let events = io.events.clone();
                tokio::spawn(async move {
                    let why = watch.gone().await;
                    let _ = events.send(Event::Own(Own::WorkerGone(why)));
                });
                ExecutorInput::WorkerWatched
            }
            Own::Watched(Err(e)) => {
                let reason = e.to_string();
                self.failure = Some(e);
                ExecutorInput::WorkerLost { reason }
            }
            Own::WorkerGone(reason) => ExecutorInput::WorkerLost { reason },
            Own::Report(input) => {
                if let ExecutorInput::TaskEnded { task_id, .. } = &input {
                    self.running.remove(task_id);
                }
                input
            }
        };
        io.handle(input);
        None
    }

    /// A StatusUpdate goes to [`Updates`] (queued at once, or in the slow lane when large or
    /// behind a large one); every other write to its connection's queue.
    fn divert(
        &mut self,
        io: &mut Io<Self>,
        out: ConnOutput<CoarseMessage>,
    ) -> Option<ConnOutput<CoarseMessage>> {
        let ConnOutput::Send {
            conn,
            message: CoarseMessage::StatusUpdate(update),
        } = out
        else {
            return Some(out);
        };
        let updates = match &self.updates {
            Some((c, updates)) if *c == conn => Arc::clone(updates),
            _ => {
                // Its connection has closed: as any write there, it is dropped.
                let peer = io.peers.get(conn)?;
                let events = io.events.clone();
                let not_sent: super::updates::NotSent =
                    Box::new(move |task_id, task_cpus, error| {
                        let input = ExecutorInput::UpdateNotSent {
                            task_id,
                            task_cpus,
                            error,
                        };
                        let _ = events.send(Event::Own(Own::Report(input)));
                    });
                let updates = Updates::new(peer.handle.clone(), not_sent);
                if let Some(lane) = self.slow_lane.take() {
                    lane.abort();
                }
                self.slow_lane = Some(tokio::spawn(Arc::clone(&updates).slow_lane()));
                self.updates = Some((conn, Arc::clone(&updates)));
                updates
            }
        };
        updates.push(update);
        None
    }

    fn refused(
        &mut self,
        _io: &mut Io<Self>,
        conn: ConnId,
        _kept: Option<CoarseMessage>,
        (name, error): (&'static str, ConnectionError),
    ) {
        tracing::debug!("executor: {name} on connection {conn} not sent: {error}");
    }
}

/// Runs a task on a task thread: its start reported as it starts (as Spark's task runner reports
/// RUNNING), then its end.
fn run_on_thread(
    runner: &dyn TaskRunner,
    task: &TaskDescription,
    cancel: &CancelFlag,
    events: &Events<ExecutorIo>,
) {
    let task_id = task.task_id;
    let started = ExecutorInput::TaskStarted { task_id };
    let _ = events.send(Event::Own(Own::Report(started)));
    let outcome = run_caught(runner, task, cancel);
    let _ = events.send(Event::Own(Own::Report(ExecutorInput::TaskEnded {
        task_id,
        outcome,
    })));
}

/// Runs a task; a runner that panics fails its task instead of the executor.
fn run_caught(
    runner: &dyn TaskRunner,
    task: &TaskDescription,
    cancel: &CancelFlag,
) -> Result<Payload, TaskFailure> {
    match catch_unwind(AssertUnwindSafe(|| runner.run(task, cancel))) {
        Ok(result) => result,
        Err(panic) => {
            let what = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "a panic".into());
            Err(TaskFailure::new(
                "java.lang.Error",
                format!("the task's runner panicked: {what}"),
            ))
        }
    }
}
