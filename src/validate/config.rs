//! How the validator is set up: task decoding, task cpus, timing allowances, memory bounds.

use std::fmt;
use std::sync::Arc;

/// What a task decoder reads out of a LaunchTask's serialized task description.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TaskInfo {
    /// The task id (unique within the application).
    pub task_id: i64,
    /// Cpus the task needs (Spark's `spark.task.cpus`, or its resource profile's).
    pub cpus: u32,
}

/// Reads a task id and cpus out of LaunchTask's opaque `data`.
///
/// The layout of that payload is defined elsewhere; a decoder is handed to the validator through
/// [`Config::task_decoder`]. Any `Fn(&[u8]) -> Option<TaskInfo>` is one.
pub trait TaskDecoder: Send + Sync {
    /// The task's id and cpus, or `None` when `data` is not a task description this decoder reads.
    fn task_info(&self, data: &[u8]) -> Option<TaskInfo>;
}

impl<T: Fn(&[u8]) -> Option<TaskInfo> + Send + Sync> TaskDecoder for T {
    fn task_info(&self, data: &[u8]) -> Option<TaskInfo> {
        self(data)
    }
}

/// The decoder of sparkwire's own task descriptions (`LaunchTask.data` as protocol/SPEC.md §10
/// defines it): reads `taskId` and `cpus`; `None` for other bytes or a negative cpu count.
pub fn sparkwire_task_decoder(data: &[u8]) -> Option<TaskInfo> {
    let h = crate::wire::peek_task(data).ok()?;
    Some(TaskInfo {
        task_id: h.task_id,
        cpus: u32::try_from(h.cpus).ok()?,
    })
}

/// The validator's settings.
#[derive(Clone)]
pub struct Config {
    /// Reads task ids out of LaunchTask. Without one, tasks are counted per executor: LaunchTask
    /// adds one, a finished StatusUpdate removes one, and StatusUpdate task ids are not checked.
    /// Connections opened with [`TaskPayloads::Spark`](super::TaskPayloads::Spark) are counted so
    /// whatever this holds.
    pub task_decoder: Option<Arc<dyn TaskDecoder>>,
    /// Cpus per task when neither the decoder nor a version 2 StatusUpdate says (Spark's
    /// `spark.task.cpus`, default 1).
    pub default_task_cpus: u32,
    /// Spark's `spark.worker.timeout` in milliseconds (default 60 000): a worker without a
    /// heartbeat for that long may be declared lost while its connection is still open.
    pub worker_timeout_ms: u64,
    /// Milliseconds during which a message that crossed a peer's message on the wire is still
    /// accepted (default 1 000). Example: the master launches an executor for an application whose
    /// UnregisterApplication was already on its way. Ignored in strict order.
    pub crossing_window_ms: u64,
    /// Strict order: the trace is in the order each process handled the events, times never
    /// decrease (rule O1), and no crossing is allowed for.
    pub strict_order: bool,
    /// How many finished entities (executors, tasks, drivers, applications, closed connections) are
    /// remembered per kind to recognise late messages about them; older ones are forgotten.
    pub history_cap: usize,
    /// Rule L1: milliseconds within which a worker answers LaunchExecutor with a first
    /// ExecutorStateChanged for that executor (default 60 000, Spark's `spark.worker.timeout`:
    /// a worker silent for longer is lost anyway); `None` switches the rule off.
    pub executor_state_within_ms: Option<u64>,
    /// Rule L2: milliseconds within which the master answers RegisterApplication with
    /// RegisteredApplication (default 60 000: Spark's application client gives up after 3
    /// attempts 20 s apart); `None` switches the rule off.
    pub app_registration_within_ms: Option<u64>,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            task_decoder: None,
            default_task_cpus: 1,
            worker_timeout_ms: 60_000,
            crossing_window_ms: 1_000,
            strict_order: false,
            history_cap: 10_000,
            executor_state_within_ms: Some(60_000),
            app_registration_within_ms: Some(60_000),
        }
    }
}

impl Config {
    /// The default settings reading sparkwire task descriptions ([`sparkwire_task_decoder`]).
    pub fn sparkwire() -> Self {
        Config::with_task_decoder(sparkwire_task_decoder)
    }

    /// The default settings with a task decoder.
    pub fn with_task_decoder(decoder: impl TaskDecoder + 'static) -> Self {
        Config {
            task_decoder: Some(Arc::new(decoder)),
            ..Config::default()
        }
    }

    /// Whether a message sent at `now` may have crossed a peer's message handled at `trigger`.
    pub(crate) fn crossed(&self, trigger: u64, now: u64) -> bool {
        !self.strict_order && now.saturating_sub(trigger) <= self.crossing_window_ms
    }
}

impl fmt::Debug for Config {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Config")
            .field("task_decoder", &self.task_decoder.as_ref().map(|_| "…"))
            .field("default_task_cpus", &self.default_task_cpus)
            .field("worker_timeout_ms", &self.worker_timeout_ms)
            .field("crossing_window_ms", &self.crossing_window_ms)
            .field("strict_order", &self.strict_order)
            .field("history_cap", &self.history_cap)
            .field("executor_state_within_ms", &self.executor_state_within_ms)
            .field(
                "app_registration_within_ms",
                &self.app_registration_within_ms,
            )
            .finish()
    }
}
