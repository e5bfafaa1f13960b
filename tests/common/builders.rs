//! Builders of the values tests start from: application descriptions, driver settings, the
//! task runner of simulated executors.

use std::sync::Arc;
use std::time::Duration;

use sparkwire::node::driver::BackendConfig;
use sparkwire::node::sim::TaskFn;
use sparkwire::reference::task::{BuiltinRunner, CancelFlag, TaskRunner};

/// How long a task runs in `node::sim::Cluster` (its default task time).
pub const TASK_TIME: Duration = Duration::from_millis(10);

/// A simulated executor's tasks: the built-in runner's (Pi, sums of squares, flaky, …).
pub fn builtin_tasks() -> TaskFn {
    Arc::new(|task| BuiltinRunner.run(task, &CancelFlag::new()))
}

/// A driver `sim` at `driver.sim:7078` whose messages may be `max_message_size_mib` MiB, as
/// Spark's defaults otherwise (4 attempts a task, offers every second, 1 GiB executors).
pub fn backend_config(max_message_size_mib: u32) -> BackendConfig {
    BackendConfig {
        app_name: "sim".into(),
        driver_host: "driver.sim".into(),
        driver_port: 7078,
        task_cpus: 1,
        max_task_failures: 4,
        revive_interval: Duration::from_secs(1),
        max_message_size_mib,
        executor_cores: None,
        executor_memory_mb: 1024,
    }
}
