//! [`TaskDescription`]: what `LaunchTask.data` carries, sparkwire's counterpart of Spark's
//! `TaskDescription`. Spark leaves these bytes to its own serializer; sparkwire defines them, so
//! that any implementation's driver and executor can exchange tasks.

use std::collections::BTreeMap;

use crate::messages::payload::Payload;

record! {
    /// One task attempt as the driver hands it to an executor.
    pub struct TaskDescription {
        /// Task id, unique within the application (Spark's TID).
        pub task_id: i64 => with_task_id,
        /// Attempt number of this task within its task set, from 0.
        pub attempt_number: i32 => with_attempt_number,
        /// The executor it is sent to.
        pub executor_id: String => with_executor_id,
        /// Display name, such as `task 3.0 in stage 0.0 (TID 3)`.
        pub name: String => with_name,
        /// Index of the task within its task set.
        pub index: i32 => with_index,
        /// Partition the task computes.
        pub partition_id: i32 => with_partition_id,
        /// Stage id.
        pub stage_id: i32 => with_stage_id,
        /// Stage attempt id.
        pub stage_attempt_id: i32 => with_stage_attempt_id,
        /// Job properties; `sparkwire.runner` names the runner that executes the task.
        pub properties: BTreeMap<String, String> => with_properties,
        /// Cores the task takes.
        pub cpus: i32 => with_cpus,
        /// Resources assigned: resource name → address → amount (10^16 is one whole unit).
        pub resources: BTreeMap<String, BTreeMap<String, i64>> => with_resources,
        /// The task itself, as its runner defines it.
        pub serialized_task: Payload => with_serialized_task,
    }
}

impl TaskDescription {
    /// The property naming the runner that executes a task.
    pub const RUNNER_PROPERTY: &'static str = "sparkwire.runner";

    /// The runner named by the task's properties, if any.
    pub fn runner(&self) -> Option<&str> {
        self.properties
            .get(Self::RUNNER_PROPERTY)
            .map(String::as_str)
    }

    /// Spark's `stageId.attempt:index` naming, as used in its error texts (`Serialized task 0.0:3`
    /// prints as `0:3` when the attempt is 0, as Spark's task set id does).
    pub fn task_set_id(&self) -> String {
        format!("{}.{}", self.stage_id, self.stage_attempt_id)
    }
}
