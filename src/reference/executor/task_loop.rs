//! The executor's main loop: tasks from the driver, their status back.

use std::collections::HashMap;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;

use tokio::sync::mpsc;

use super::connect::Started;
use super::{ExecutorConfig, ExecutorExit};
use crate::connection::{ConnectionError, ConnectionHandle, Incoming};
use crate::messages::coarse::{KillTask, LaunchTask, StatusUpdate};
use crate::messages::{
    CoarseMessage, ErrorDescription, Family, Payload, TaskDescription, TaskState,
};
use crate::reference::task::{encode_failure, CancelFlag, TaskFailure, TaskRunner};
use crate::wire::decode_task;
use crate::wire::task_size_limit;
use crate::wire::Reply;
use crate::wire::SPARK_MAX_SIZE_KEY;

/// A task that ended on its thread.
struct Done {
    task_id: i64,
    cpus: i32,
    result: Result<Payload, TaskFailure>,
}

/// The text of a FAILED task whose result is too big to send: it names the task, the size, the
/// limit and the setting, as Spark's oversized-task text does.
pub fn result_too_large_message(task_id: i64, size: usize, max_allowed: usize) -> String {
    format!(
        "Result of task (TID {task_id}) was {size} bytes, which exceeds max allowed: \
         {SPARK_MAX_SIZE_KEY} ({max_allowed} bytes). Consider increasing {SPARK_MAX_SIZE_KEY} \
         or returning less data."
    )
}

struct Backend<'a> {
    config: &'a ExecutorConfig,
    driver: ConnectionHandle<CoarseMessage>,
    runner: Arc<dyn TaskRunner>,
    running: HashMap<i64, CancelFlag>,
    done: mpsc::UnboundedSender<Done>,
}

/// Serves the driver until StopExecutor, or until the driver or the worker goes away.
pub(super) async fn serve(
    started: Started,
    config: &ExecutorConfig,
    runner: Arc<dyn TaskRunner>,
) -> ExecutorExit {
    let Started {
        main: mut conn,
        mut worker,
        app_config,
    } = started;
    let app_name = app_config
        .spark_properties
        .iter()
        .find(|(k, _)| k == "spark.app.name")
        .map_or("?", |(_, v)| v.as_str());
    tracing::info!(
        "executor {}: registered with the driver of {app_name}",
        config.executor_id
    );
    let (done_tx, mut done_rx) = mpsc::unbounded_channel();
    let mut backend = Backend {
        config,
        driver: conn.handle(),
        runner,
        running: HashMap::new(),
        done: done_tx,
    };
    let worker_gone = async {
        match &mut worker {
            Some(w) => w.gone().await,
            None => std::future::pending().await,
        }
    };
    tokio::pin!(worker_gone);
    let exit = loop {
        tokio::select! {
            incoming = conn.recv() => match incoming {
                Ok(incoming) => {
                    if let Some(exit) = backend.handle(incoming).await {
                        break exit;
                    }
                }
                Err(e) => break ExecutorExit::DriverLost(e.to_string()),
            },
            Some(done) = done_rx.recv() => {
                if let Err(e) = backend.finished(done).await {
                    break ExecutorExit::DriverLost(e.to_string());
                }
            }
            why = &mut worker_gone => break ExecutorExit::WorkerLost(why),
        }
    };
    for cancel in backend.running.values() {
        cancel.cancel();
    }
    if exit == ExecutorExit::Stopped {
        conn.close().await;
    }
    tracing::info!("executor {}: {exit}", config.executor_id);
    exit
}

impl Backend<'_> {
    /// Handles what the driver sent; `Some` ends the executor.
    async fn handle(&mut self, incoming: Incoming<CoarseMessage>) -> Option<ExecutorExit> {
        match incoming {
            Incoming::Message(CoarseMessage::LaunchTask(launch)) => self.launch(launch).await,
            Incoming::Message(CoarseMessage::KillTask(kill)) => self.kill(&kill),
            Incoming::Message(CoarseMessage::StopExecutor(_)) => {
                return Some(ExecutorExit::Stopped)
            }
            Incoming::Message(other) => {
                tracing::debug!(
                    "executor {}: ignoring {}",
                    self.config.executor_id,
                    other.name()
                );
            }
            Incoming::Ask {
                id,
                message: CoarseMessage::TaskThreadDump(_),
            } => {
                // A blocking thread's stack is not ours to read: answer that there is none.
                if let Err(e) = self.driver.reply(id, Reply::ThreadDump(None)).await {
                    return Some(ExecutorExit::DriverLost(e.to_string()));
                }
            }
            Incoming::Ask { id, message } => {
                let error = ErrorDescription::new(
                    "org.apache.spark.SparkException",
                    format!(
                        "Unsupported message {} received by the executor",
                        message.name()
                    ),
                );
                if let Err(e) = self.driver.fail(id, error).await {
                    return Some(ExecutorExit::DriverLost(e.to_string()));
                }
            }
        }
        None
    }

    async fn launch(&mut self, launch: LaunchTask) {
        let task = match decode_task(&launch.data.0) {
            Ok(task) => task,
            Err(e) => {
                // Without a task id there is nobody to report to: as Spark's endpoint, log it.
                tracing::error!(
                    "executor {}: undecodable LaunchTask ({} bytes): {e}",
                    self.config.executor_id,
                    launch.data.len()
                );
                return;
            }
        };
        let task_id = task.task_id;
        let cpus = task.cpus;
        if self.running.contains_key(&task_id) {
            tracing::error!(
                "executor {}: task {task_id} is already running",
                self.config.executor_id
            );
            return;
        }
        let cancel = CancelFlag::new();
        self.running.insert(task_id, cancel.clone());
        // RUNNING goes out before the task can finish, so the driver always sees it first.
        let _ = self
            .status(task_id, TaskState::Running, Payload::default(), cpus)
            .await;
        let runner = Arc::clone(&self.runner);
        let done = self.done.clone();
        tokio::task::spawn_blocking(move || {
            let result = run_caught(runner.as_ref(), &task, &cancel);
            let _ = done.send(Done {
                task_id,
                cpus,
                result,
            });
        });
    }

    fn kill(&mut self, kill: &KillTask) {
        match self.running.get(&kill.task_id) {
            Some(cancel) => {
                tracing::info!(
                    "executor {}: killing task {} ({})",
                    self.config.executor_id,
                    kill.task_id,
                    kill.reason
                );
                cancel.cancel();
            }
            None => tracing::debug!(
                "executor {}: KillTask for task {} not running here",
                self.config.executor_id,
                kill.task_id
            ),
        }
    }

    /// Reports a task that ended. Fails only when the driver connection is gone.
    async fn finished(&mut self, done: Done) -> Result<(), ConnectionError> {
        self.running.remove(&done.task_id);
        let limit = task_size_limit(self.driver.max_frame_size());
        let (state, data) = match done.result {
            Ok(result) if result.len() >= limit => (
                TaskState::Failed,
                encode_failure(&TaskFailure::new(
                    "org.apache.spark.SparkException",
                    result_too_large_message(done.task_id, result.len(), limit),
                )),
            ),
            Ok(result) => (TaskState::Finished, result),
            Err(f) if f.is_kill() => (TaskState::Killed, encode_failure(&f)),
            Err(f) => (TaskState::Failed, encode_failure(&f)),
        };
        match self.status(done.task_id, state, data, done.cpus).await {
            Err(ConnectionError::Outbound(e)) => {
                // The update did not fit a frame after all: report that instead.
                let failure = TaskFailure::new(
                    "org.apache.spark.SparkException",
                    format!("the task's status update could not be sent: {e}"),
                );
                self.status(
                    done.task_id,
                    TaskState::Failed,
                    encode_failure(&failure),
                    done.cpus,
                )
                .await
            }
            other => other,
        }
    }

    async fn status(
        &self,
        task_id: i64,
        state: TaskState,
        data: Payload,
        task_cpus: i32,
    ) -> Result<(), ConnectionError> {
        self.driver
            .send(CoarseMessage::StatusUpdate(StatusUpdate {
                executor_id: self.config.executor_id.clone(),
                task_id,
                state,
                data,
                task_cpus,
                resources: Default::default(),
            }))
            .await
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
