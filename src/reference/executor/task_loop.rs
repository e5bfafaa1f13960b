//! The executor's main loop: tasks from the driver, their status back.

use std::collections::HashMap;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{Arc, Mutex, MutexGuard};

use super::connect::Started;
use super::threads::TaskThreads;
use super::updates::Updates;
use super::{ExecutorConfig, ExecutorExit};
use crate::connection::{ConnectionHandle, Incoming};
use crate::messages::coarse::{KillTask, LaunchTask};
use crate::messages::{
    CoarseMessage, ErrorDescription, Family, Payload, TaskDescription, TaskState,
};
use crate::reference::task::{CancelFlag, TaskRunner};
use crate::wire::decode_task;
use crate::wire::task_size_limit;
use crate::wire::Reply;
use crate::wire::SPARK_MAX_SIZE_KEY;
use crate::wire::{encode_failure, TaskFailure};

/// The text of a FAILED task whose result is too big to send: it names the task, the size, the
/// limit and the setting, as Spark's oversized-task text does.
pub fn result_too_large_message(task_id: i64, size: usize, max_allowed: usize) -> String {
    format!(
        "Result of task (TID {task_id}) was {size} bytes, which exceeds max allowed: \
         {SPARK_MAX_SIZE_KEY} ({max_allowed} bytes). Consider increasing {SPARK_MAX_SIZE_KEY} \
         or returning less data."
    )
}

/// What the task threads share: the runner, the updates, the tasks running.
struct Tasks {
    runner: Arc<dyn TaskRunner>,
    updates: Arc<Updates>,
    running: Mutex<HashMap<i64, CancelFlag>>,
    /// The largest result sent; a larger one fails its task.
    max_result: usize,
}

impl Tasks {
    fn running(&self) -> MutexGuard<'_, HashMap<i64, CancelFlag>> {
        // Nothing panics while holding it (runners run outside): a poisoned map is in order.
        self.running
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Runs a task on its thread: RUNNING as it starts (as Spark's task runner reports it), then
    /// its end.
    fn run(&self, task: &TaskDescription, cancel: &CancelFlag) {
        let (task_id, cpus) = (task.task_id, task.cpus);
        self.updates
            .push(task_id, TaskState::Running, Payload::default(), cpus);
        let result = run_caught(self.runner.as_ref(), task, cancel);
        self.running().remove(&task_id);
        let (state, data) = match result {
            Ok(result) if result.len() >= self.max_result => (
                TaskState::Failed,
                encode_failure(&TaskFailure::new(
                    "org.apache.spark.SparkException",
                    result_too_large_message(task_id, result.len(), self.max_result),
                )),
            ),
            Ok(result) => (TaskState::Finished, result),
            Err(f) if f.is_kill() => (TaskState::Killed, encode_failure(&f)),
            Err(f) => (TaskState::Failed, encode_failure(&f)),
        };
        self.updates.push(task_id, state, data, cpus);
    }
}

struct Backend<'a> {
    config: &'a ExecutorConfig,
    driver: ConnectionHandle<CoarseMessage>,
    tasks: Arc<Tasks>,
    threads: TaskThreads,
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
    let driver = conn.handle();
    let updates = Updates::new(driver.clone(), config.executor_id.clone());
    let slow_lane = tokio::spawn(Arc::clone(&updates).slow_lane());
    let tasks = Arc::new(Tasks {
        runner,
        updates,
        running: Mutex::new(HashMap::new()),
        max_result: task_size_limit(driver.max_frame_size()),
    });
    let keep = usize::try_from(config.cores).unwrap_or(1);
    let mut backend = Backend {
        config,
        driver,
        tasks,
        threads: TaskThreads::new(keep, format!("executor-{}-task", config.executor_id)),
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
            why = &mut worker_gone => break ExecutorExit::WorkerLost(why),
        }
    };
    for cancel in backend.tasks.running().values() {
        cancel.cancel();
    }
    backend.threads.close();
    if exit == ExecutorExit::Stopped {
        conn.close().await;
    }
    slow_lane.abort();
    tracing::info!("executor {}: {exit}", config.executor_id);
    exit
}

impl Backend<'_> {
    /// Handles what the driver sent; `Some` ends the executor.
    async fn handle(&mut self, incoming: Incoming<CoarseMessage>) -> Option<ExecutorExit> {
        match incoming {
            Incoming::Message(CoarseMessage::LaunchTask(launch)) => self.launch(&launch),
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
                // A task thread's stack is not ours to read: answer that there is none.
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

    /// Hands a task to a task thread, which reports it.
    fn launch(&mut self, launch: &LaunchTask) {
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
        let (task_id, cpus) = (task.task_id, task.cpus);
        let cancel = CancelFlag::new();
        {
            let mut running = self.tasks.running();
            if running.contains_key(&task_id) {
                tracing::error!(
                    "executor {}: task {task_id} is already running",
                    self.config.executor_id
                );
                return;
            }
            running.insert(task_id, cancel.clone());
        }
        if self.tasks.runner.runs_briefly(&task) {
            // Over before anything else could be read: its RUNNING and its end leave together.
            self.tasks.run(&task, &cancel);
            return;
        }
        let tasks = Arc::clone(&self.tasks);
        if let Err(e) = self
            .threads
            .run(Box::new(move || tasks.run(&task, &cancel)))
        {
            self.tasks.running().remove(&task_id);
            let updates = &self.tasks.updates;
            updates.push(task_id, TaskState::Running, Payload::default(), cpus);
            let failure = TaskFailure::new(
                "java.util.concurrent.RejectedExecutionException",
                format!("no thread to run task {task_id} on: {e}"),
            );
            updates.push(task_id, TaskState::Failed, encode_failure(&failure), cpus);
        }
    }

    fn kill(&mut self, kill: &KillTask) {
        match self.tasks.running().get(&kill.task_id) {
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
