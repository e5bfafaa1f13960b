//! The executor's tokio shell: it feeds [`ExecutorCore`] (in `node::executor`) its connections,
//! what the driver sends and how its tasks go, and carries out what it decides: dials, the
//! worker's watch, writes, tasks run on the executor's own task threads.
//!
//! The core sits behind a lock shared with the task threads: a thread reports its task's start
//! and end to the core itself and writes the StatusUpdate that follows ([`Updates`]), without
//! waking the loop that reads the driver's messages, so that a task that ends before its RUNNING
//! was written goes out in the same write. Whoever fed the core drains it ([`Shared::drain`], the
//! one place its outputs are carried out): its writes while holding the lock, so that a task's
//! updates keep their order, its effects after.

use std::collections::HashMap;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Instant;

use tokio::sync::mpsc;

use super::connect::{dial, WorkerWatch};
use super::threads::TaskThreads;
use super::updates::Updates;
use super::{ExecutorConfig, ExecutorError};
use crate::connection::{
    Connection, ConnectionConfig, ConnectionError, ConnectionHandle, Incoming,
};
use crate::messages::{CoarseMessage, Family, Payload, TaskDescription};
use crate::node::executor::{
    ExecutorCore, ExecutorEffect, ExecutorExit, ExecutorIdentity, ExecutorInput, Link, StartFailed,
};
use crate::node::url::SparkUrl;
use crate::node::{AskFailure, ConnId, ConnInput, ConnOutput, Core, Output};
use crate::reference::outbox::peer_info;
use crate::reference::task::{CancelFlag, TaskRunner};
use crate::wire::{Reply, TaskFailure};

/// What the shell's own tasks report to its loop.
enum Report {
    Dialled {
        link: Link,
        made: Result<Connection<CoarseMessage>, ExecutorError>,
    },
    Watched(Result<WorkerWatch, ExecutorError>),
    WorkerGone(String),
    Answer {
        conn: ConnId,
        id: u64,
        answer: Result<Reply<CoarseMessage>, ConnectionError>,
        ask: &'static str,
    },
}

/// What the loop and the task threads share.
struct Shared {
    core: Mutex<ExecutorCore>,
    conns: Mutex<HashMap<ConnId, ConnectionHandle<CoarseMessage>>>,
    /// The StatusUpdates' writer on the main connection, once it is up.
    updates: Mutex<Option<Arc<Updates>>>,
    runner: Arc<dyn TaskRunner>,
    /// The tasks running, with the flag that kills each.
    running: Mutex<HashMap<i64, CancelFlag>>,
    threads: TaskThreads,
    reports: mpsc::UnboundedSender<Report>,
    /// Effects only the loop carries out (dials, the watch, the exit), in order.
    effects: mpsc::UnboundedSender<ExecutorEffect>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // Nothing panics while holding these (runners run outside): a poisoned lock is in order.
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl Shared {
    /// Feeds the core `input`, then drains it.
    fn report(self: &Arc<Self>, input: ExecutorInput) {
        lock(&self.core).handle(Instant::now(), input);
        self.drain();
    }

    /// Carries out what the core decided, in order: its writes with the core held, then its
    /// effects (a task run, a kill) or, for those only the loop carries out, handed to the loop.
    fn drain(self: &Arc<Self>) {
        let mut effects = Vec::new();
        {
            let mut core = lock(&self.core);
            while let Some(out) = core.poll() {
                match out {
                    Output::Conn(out) => self.carry(out),
                    Output::Effect(effect) => effects.push(effect),
                }
            }
        }
        for effect in effects {
            match effect {
                ExecutorEffect::Run(task) => self.run(*task),
                ExecutorEffect::Kill { task_id, .. } => {
                    if let Some(cancel) = lock(&self.running).get(&task_id) {
                        cancel.cancel();
                    }
                }
                other => {
                    let _ = self.effects.send(other);
                }
            }
        }
    }

    /// Writes on (or closes) one of the driver's connections, without waiting.
    fn carry(&self, out: ConnOutput<CoarseMessage>) {
        let conn = out.conn();
        let Some(h) = lock(&self.conns).get(&conn).cloned() else {
            return;
        };
        let sent = match out {
            ConnOutput::Send {
                message: CoarseMessage::StatusUpdate(update),
                ..
            } => match lock(&self.updates).as_ref() {
                Some(updates) => {
                    updates.push(update);
                    Ok(())
                }
                None => h.post(CoarseMessage::StatusUpdate(update)),
            },
            ConnOutput::Send { message, .. } => h.post(message),
            ConnOutput::Ask { id, message, .. } => {
                let ask = message.name();
                match h.post_ask(message) {
                    Ok(answer) => {
                        let reports = self.reports.clone();
                        tokio::spawn(async move {
                            let answer = answer.await;
                            let _ = reports.send(Report::Answer {
                                conn,
                                id,
                                answer,
                                ask,
                            });
                        });
                        Ok(())
                    }
                    Err(e) => {
                        let answer = Err(e.clone());
                        let _ = self.reports.send(Report::Answer {
                            conn,
                            id,
                            answer,
                            ask,
                        });
                        Err(e)
                    }
                }
            }
            ConnOutput::Reply { id, reply, .. } => h.post_reply(id, reply),
            ConnOutput::Fail { id, error, .. } => h.post_failure(id, error),
            ConnOutput::Close { reason, .. } => {
                match reason {
                    Some(reason) => h.close_soon_because(reason),
                    None => h.close_soon(),
                }
                Ok(())
            }
            ConnOutput::Abort { .. } => {
                tokio::spawn(async move { h.close().await });
                Ok(())
            }
        };
        if let Err(e) = sent {
            tracing::debug!("executor: a frame on connection {conn} not sent: {e}");
        }
    }

    /// Hands a task to a task thread (or runs a brief one here), which reports it to the core.
    fn run(self: &Arc<Self>, task: TaskDescription) {
        let task_id = task.task_id;
        let cancel = CancelFlag::new();
        lock(&self.running).insert(task_id, cancel.clone());
        if self.runner.runs_briefly(&task) {
            // Over before anything else could be read: its RUNNING and its end leave together.
            self.run_here(&task, &cancel);
            return;
        }
        let shared = Arc::clone(self);
        if let Err(e) = self
            .threads
            .run(Box::new(move || shared.run_here(&task, &cancel)))
        {
            lock(&self.running).remove(&task_id);
            self.report(ExecutorInput::TaskStarted { task_id });
            let failure = TaskFailure::new(
                "java.util.concurrent.RejectedExecutionException",
                format!("no thread to run task {task_id} on: {e}"),
            );
            self.report(ExecutorInput::TaskEnded {
                task_id,
                outcome: Err(failure),
            });
        }
    }

    /// Runs a task on this thread: its start reported as it starts (as Spark's task runner
    /// reports RUNNING), then its end.
    fn run_here(self: &Arc<Self>, task: &TaskDescription, cancel: &CancelFlag) {
        let task_id = task.task_id;
        self.report(ExecutorInput::TaskStarted { task_id });
        let outcome = run_caught(self.runner.as_ref(), task, cancel);
        lock(&self.running).remove(&task_id);
        self.report(ExecutorInput::TaskEnded { task_id, outcome });
    }
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
    let (reports, mut reported) = mpsc::unbounded_channel();
    let (effects, mut effected) = mpsc::unbounded_channel();
    let keep = usize::try_from(config.cores).unwrap_or(1);
    let me = ExecutorIdentity {
        executor_id: config.executor_id.clone(),
        hostname: config.hostname.clone(),
        cores: config.cores,
        resource_profile_id: config.resource_profile_id,
        watch_worker: worker.is_some(),
    };
    let shared = Arc::new(Shared {
        core: Mutex::new(ExecutorCore::new(me)),
        conns: Mutex::new(HashMap::new()),
        updates: Mutex::new(None),
        runner,
        running: Mutex::new(HashMap::new()),
        threads: TaskThreads::new(keep, format!("executor-{}-task", config.executor_id)),
        reports,
        effects,
    });
    let mut shell = Loop {
        shared: Arc::clone(&shared),
        config,
        driver,
        worker,
        main: None,
        boot: None,
        next_conn: 0,
        failure: None,
        slow_lane: None,
    };
    shared.drain();
    let exit = loop {
        tokio::select! {
            Some(effect) = effected.recv() => {
                if let Some(exit) = shell.effect(effect) {
                    break exit;
                }
            }
            Some(report) = reported.recv() => shell.report(report),
            got = recv(&mut shell.main) => shell.received(got),
        }
        shared.drain();
    };
    shell.end(&exit).await;
    exit
}

/// What `main` receives next (never, while there is none).
async fn recv(
    main: &mut Option<(ConnId, Connection<CoarseMessage>)>,
) -> (ConnId, Result<Incoming<CoarseMessage>, ConnectionError>) {
    match main {
        Some((id, conn)) => (*id, conn.recv().await),
        None => std::future::pending().await,
    }
}

/// The loop's own state: the connections it reads, the addresses it dials.
struct Loop<'a> {
    shared: Arc<Shared>,
    config: &'a ExecutorConfig,
    driver: SparkUrl,
    worker: Option<SparkUrl>,
    main: Option<(ConnId, Connection<CoarseMessage>)>,
    /// The bootstrap connection, kept open until the core closes it.
    boot: Option<Connection<CoarseMessage>>,
    next_conn: ConnId,
    /// The typed error of the last dial or ask that failed, for the start-up's error.
    failure: Option<ExecutorError>,
    slow_lane: Option<tokio::task::JoinHandle<()>>,
}

impl Loop<'_> {
    fn report(&mut self, report: Report) {
        let input = match report {
            Report::Dialled { link, made } => match made {
                Ok(conn) => {
                    let id = self.next_conn;
                    self.next_conn += 1;
                    lock(&self.shared.conns).insert(id, conn.handle());
                    let peer = peer_info(&conn.handle(), self.driver.socket_address());
                    match link {
                        Link::Bootstrap => self.boot = Some(conn),
                        Link::Main { .. } => {
                            let updates = Updates::new(conn.handle());
                            self.slow_lane = Some(tokio::spawn(Arc::clone(&updates).slow_lane()));
                            *lock(&self.shared.updates) = Some(updates);
                            self.main = Some((id, conn));
                        }
                    }
                    ConnInput::Opened {
                        conn: id,
                        peer,
                        origin: link,
                    }
                    .into()
                }
                Err(e) => {
                    let error = e.to_string();
                    self.failure = Some(e);
                    ConnInput::DialFailed {
                        origin: link,
                        error,
                    }
                    .into()
                }
            },
            Report::Watched(Ok(watch)) => {
                let reports = self.shared.reports.clone();
                tokio::spawn(async move {
                    let why = watch.gone().await;
                    let _ = reports.send(Report::WorkerGone(why));
                });
                ExecutorInput::WorkerWatched
            }
            Report::Watched(Err(e)) => {
                let reason = e.to_string();
                self.failure = Some(e);
                ExecutorInput::WorkerLost { reason }
            }
            Report::WorkerGone(reason) => ExecutorInput::WorkerLost { reason },
            Report::Answer {
                conn,
                id,
                answer,
                ask,
            } => {
                let answer = match answer {
                    Ok(reply) => Ok(reply),
                    Err(ConnectionError::Remote { error, .. }) => Err(AskFailure::Failed(error)),
                    Err(e) => {
                        let lost = AskFailure::Lost(e.to_string());
                        self.failure = Some(ExecutorError::Connection {
                            step: ask,
                            source: e,
                        });
                        Err(lost)
                    }
                };
                ConnInput::Answer { conn, id, answer }.into()
            }
        };
        lock(&self.shared.core).handle(Instant::now(), input);
    }

    fn received(
        &mut self,
        (conn, got): (ConnId, Result<Incoming<CoarseMessage>, ConnectionError>),
    ) {
        let input = match got {
            Ok(Incoming::Message(message)) => ConnInput::Message { conn, message },
            Ok(Incoming::Ask { id, message }) => ConnInput::Ask { conn, id, message },
            Err(e) => {
                self.main = None;
                ConnInput::Closed {
                    conn,
                    reason: e.to_string(),
                }
            }
        };
        lock(&self.shared.core).handle(Instant::now(), input.into());
    }

    /// Carries out an effect only the loop can (it dials, watches and ends); `Some` ends it.
    fn effect(&mut self, effect: ExecutorEffect) -> Option<Result<ExecutorExit, ExecutorError>> {
        match effect {
            ExecutorEffect::Dial(link) => {
                let (url, config, reports) = (
                    self.driver.clone(),
                    self.config.clone(),
                    self.shared.reports.clone(),
                );
                tokio::spawn(async move {
                    let settings = match link {
                        Link::Bootstrap => ConnectionConfig::default(),
                        Link::Main { max_frame_size } => {
                            ConnectionConfig::default().with_max_frame_size(max_frame_size)
                        }
                    };
                    let made = dial(&url, &config, settings).await;
                    let _ = reports.send(Report::Dialled { link, made });
                });
            }
            ExecutorEffect::WatchWorker => {
                let Some(url) = self.worker.clone() else {
                    let _ = self
                        .shared
                        .reports
                        .send(Report::WorkerGone("no worker to watch".to_string()));
                    return None;
                };
                let (config, reports) = (self.config.clone(), self.shared.reports.clone());
                tokio::spawn(async move {
                    let watch = WorkerWatch::open(&url, &config).await;
                    let _ = reports.send(Report::Watched(watch));
                });
            }
            ExecutorEffect::Registered { .. } => {}
            ExecutorEffect::Exit(exit) => {
                return Some(exit.map_err(|failed| self.start_error(failed)));
            }
            // Run and Kill are carried out where the core was drained.
            ExecutorEffect::Run(_) | ExecutorEffect::Kill { .. } => {}
        }
        None
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
            StartFailed::NoAnswer { ask, error } => self
                .failure
                .take()
                .unwrap_or(ExecutorError::UnexpectedReply { ask, got: error }),
        }
    }

    /// Stops the tasks and, after StopExecutor, waits for the main connection's close the core
    /// asked for.
    async fn end(&mut self, exit: &Result<ExecutorExit, ExecutorError>) {
        for cancel in lock(&self.shared.running).values() {
            cancel.cancel();
        }
        self.shared.threads.close();
        if exit == &Ok(ExecutorExit::Stopped) {
            if let Some((_, main)) = &self.main {
                main.handle().closed().await;
            }
        }
        if let Some(lane) = self.slow_lane.take() {
            lane.abort();
        }
        self.boot = None;
    }
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
