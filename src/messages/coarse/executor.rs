//! Executor ↔ Driver messages (the driver's `CoarseGrainedSchedulerBackend` and the executors'
//! `CoarseGrainedExecutorBackend`).

use std::collections::BTreeMap;

use crate::messages::common::{
    EndpointRef, MiscellaneousProcessDetails, ResourceProfile, Resources,
};
use crate::messages::payload::Payload;
use crate::messages::states::TaskState;

record! {
    /// Executor → Driver (ask → SparkAppConfig): the application's configuration.
    pub struct RetrieveSparkAppConfig {
        /// The executor's resource profile id.
        pub resource_profile_id: i32 => with_resource_profile_id,
    }
}

record! {
    /// Driver → Executor: the answer to RetrieveSparkAppConfig.
    pub struct SparkAppConfig {
        /// Spark properties, in order.
        pub spark_properties: Vec<(String, String)> => with_spark_properties,
        /// I/O encryption key.
        pub io_encryption_key: Option<Payload> => with_io_encryption_key,
        /// Hadoop delegation tokens.
        pub hadoop_delegation_creds: Option<Payload> => with_hadoop_delegation_creds,
        /// The executor's resource profile.
        pub resource_profile: ResourceProfile => with_resource_profile,
        /// Log level to use.
        pub log_level: Option<String> => with_log_level,
    }
}

record! {
    /// Executor → Driver (ask → Bool): register the executor. Refused with a failure such as
    /// `Duplicate executor ID: 1`.
    pub struct RegisterExecutor {
        /// Executor id.
        pub executor_id: String => with_executor_id,
        /// The executor's endpoint (an executor does not listen: no address).
        pub executor_ref: EndpointRef => with_executor_ref,
        /// Host name.
        pub hostname: String => with_hostname,
        /// Cores.
        pub cores: i32 => with_cores,
        /// Log URLs by name.
        pub log_urls: BTreeMap<String, String> => with_log_urls,
        /// Attributes.
        pub attributes: BTreeMap<String, String> => with_attributes,
        /// Resources.
        pub resources: Resources => with_resources,
        /// Resource profile id.
        pub resource_profile_id: i32 => with_resource_profile_id,
    }
}

record! {
    /// Executor → Driver: the executor is ready for tasks.
    pub struct LaunchedExecutor {
        /// Executor id.
        pub executor_id: String => with_executor_id,
    }
}

record! {
    /// Executor → Driver: a task changed state.
    pub struct StatusUpdate {
        /// Executor id.
        pub executor_id: String => with_executor_id,
        /// Task id.
        pub task_id: i64 => with_task_id,
        /// New state.
        pub state: TaskState => with_state,
        /// Serialized result (FINISHED) or error (FAILED, KILLED); empty otherwise.
        pub data: Payload => with_data,
        /// Cores the task held.
        pub task_cpus: i32 => with_task_cpus,
        /// Resources the task held: resource name → address → amount (in units where
        /// 10^16 is one whole resource).
        pub resources: BTreeMap<String, BTreeMap<String, i64>> => with_resources,
    }
}

record! {
    /// Driver → Executor: run a task.
    pub struct LaunchTask {
        /// The serialized task description.
        pub data: Payload => with_data,
    }
}

record! {
    /// Driver → Executor: kill a task.
    pub struct KillTask {
        /// Task id.
        pub task_id: i64 => with_task_id,
        /// Executor id.
        pub executor: String => with_executor,
        /// Whether to interrupt the task's thread.
        pub interrupt_thread: bool => with_interrupt_thread,
        /// Why.
        pub reason: String => with_reason,
    }
}

record! {
    /// Driver → Executor: stop.
    pub struct StopExecutor {}
}

record! {
    /// Driver → Executor: decommission yourself.
    pub struct DecommissionExecutor {}
}

record! {
    /// Executor → Driver (ask → Bool): the executor is decommissioning.
    pub struct ExecutorDecommissioning {
        /// Executor id.
        pub executor_id: String => with_executor_id,
    }
}

record! {
    /// Driver → Executor: new delegation tokens.
    pub struct UpdateDelegationTokens {
        /// Serialized tokens.
        pub tokens: Payload => with_tokens,
    }
}

record! {
    /// Driver → Executor: change the log level.
    pub struct UpdateExecutorLogLevel {
        /// Log level.
        pub log_level: String => with_log_level,
    }
}

record! {
    /// Driver → Executor (ask → thread dump or nothing): the stack of a task's thread.
    pub struct TaskThreadDump {
        /// Task id.
        pub task_id: i64 => with_task_id,
    }
}

record! {
    /// Executor → Driver: a map task finished pushing its shuffle blocks.
    pub struct ShufflePushCompletion {
        /// Shuffle id.
        pub shuffle_id: i32 => with_shuffle_id,
        /// Shuffle merge id.
        pub shuffle_merge_id: i32 => with_shuffle_merge_id,
        /// Map index.
        pub map_index: i32 => with_map_index,
    }
}

record! {
    /// A process → Driver: a miscellaneous process was added.
    pub struct MiscellaneousProcessAdded {
        /// Time, milliseconds since the epoch.
        pub time: i64 => with_time,
        /// Process id.
        pub process_id: String => with_process_id,
        /// Details.
        pub info: MiscellaneousProcessDetails => with_info,
    }
}

record! {
    /// Executor → Driver (ask → Bool): is this executor alive?
    pub struct IsExecutorAlive {
        /// Executor id.
        pub executor_id: String => with_executor_id,
    }
}

record! {
    /// Executor → Driver (ask → Int): the last executor id allocated.
    pub struct RetrieveLastAllocatedExecutorId {}
}
