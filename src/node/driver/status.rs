//! What the driver's cores report of themselves: executors, their ends, counts.

use std::time::Duration;

use crate::messages::ExecutorState;

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

/// The scheduler backend's state, as [`BackendCore::status`](super::BackendCore::status) reports
/// it (the runtime adds the connections' traffic).
#[derive(Debug, Clone, Default)]
pub struct BackendStatus {
    /// The application id the master gave, once registered.
    pub app_id: Option<String>,
    /// Registered executors.
    pub executors: Vec<ExecutorSummary>,
    /// From the driver's start to the first executor registered.
    pub first_executor_after: Option<Duration>,
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

impl BackendStatus {
    /// Executors registered and ready for tasks.
    pub fn ready_executors(&self) -> usize {
        self.executors.iter().filter(|e| e.ready).count()
    }
}

/// What a driver whose tasks wait and whose executors all ended says, at WARN, in place of
/// Spark's generic "Initial job has not accepted any resources…": the last executor's end and
/// the worker's message (with the executor's own last line, such as "cannot connect to the
/// driver at 10.77.0.3:40087: connection refused"); Spark's line when no executor ended.
pub fn starvation_reason(last_end: Option<&ExecutorEnd>) -> String {
    match last_end {
        None => super::STARVATION_TEXT.to_string(),
        Some(end) => format!(
            "Initial job has not accepted any resources: the executors launched for it end; \
             the last, executor {}, ended {} on its worker: {}",
            end.id,
            end.state,
            end.message.as_deref().unwrap_or("no reason given")
        ),
    }
}
