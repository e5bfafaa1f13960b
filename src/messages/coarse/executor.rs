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
        pub resource_profile_id: i32,
    }
}

record! {
    /// Driver → Executor: the answer to RetrieveSparkAppConfig.
    pub struct SparkAppConfig {
        /// Spark properties, in order.
        pub spark_properties: Vec<(String, String)>,
        /// I/O encryption key.
        pub io_encryption_key: Option<Payload>,
        /// Hadoop delegation tokens.
        pub hadoop_delegation_creds: Option<Payload>,
        /// The executor's resource profile.
        pub resource_profile: ResourceProfile,
        /// Log level to use.
        pub log_level: Option<String>,
    }
}

record! {
    /// Executor → Driver (ask → Bool): register the executor. Refused with a failure such as
    /// `Duplicate executor ID: 1`.
    pub struct RegisterExecutor {
        /// Executor id.
        pub executor_id: String,
        /// The executor's endpoint (an executor does not listen: no address).
        pub executor_ref: EndpointRef,
        /// Host name.
        pub hostname: String,
        /// Cores.
        pub cores: i32,
        /// Log URLs by name.
        pub log_urls: BTreeMap<String, String>,
        /// Attributes.
        pub attributes: BTreeMap<String, String>,
        /// Resources.
        pub resources: Resources,
        /// Resource profile id.
        pub resource_profile_id: i32,
    }
}

record! {
    /// Executor → Driver: the executor is ready for tasks.
    pub struct LaunchedExecutor {
        /// Executor id.
        pub executor_id: String,
    }
}

record! {
    /// Executor → Driver: a task changed state.
    pub struct StatusUpdate {
        /// Executor id.
        pub executor_id: String,
        /// Task id.
        pub task_id: i64,
        /// New state.
        pub state: TaskState,
        /// Serialized result (FINISHED) or error (FAILED, KILLED); empty otherwise.
        pub data: Payload,
        /// Cores the task held.
        pub task_cpus: i32,
        /// Resources the task held: resource name → address → amount (in units where
        /// 10^16 is one whole resource).
        pub resources: BTreeMap<String, BTreeMap<String, i64>>,
    }
}

record! {
    /// Driver → Executor: run a task.
    pub struct LaunchTask {
        /// The serialized task description.
        pub data: Payload,
    }
}

record! {
    /// Driver → Executor: kill a task.
    pub struct KillTask {
        /// Task id.
        pub task_id: i64,
        /// Executor id.
        pub executor: String,
        /// Whether to interrupt the task's thread.
        pub interrupt_thread: bool,
        /// Why.
        pub reason: String,
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
        pub executor_id: String,
    }
}

record! {
    /// Driver → Executor: new delegation tokens.
    pub struct UpdateDelegationTokens {
        /// Serialized tokens.
        pub tokens: Payload,
    }
}

record! {
    /// Driver → Executor: change the log level.
    pub struct UpdateExecutorLogLevel {
        /// Log level.
        pub log_level: String,
    }
}

record! {
    /// Driver → Executor (ask → thread dump or nothing): the stack of a task's thread.
    pub struct TaskThreadDump {
        /// Task id.
        pub task_id: i64,
    }
}

record! {
    /// Executor → Driver: a map task finished pushing its shuffle blocks.
    pub struct ShufflePushCompletion {
        /// Shuffle id.
        pub shuffle_id: i32,
        /// Shuffle merge id.
        pub shuffle_merge_id: i32,
        /// Map index.
        pub map_index: i32,
    }
}

record! {
    /// A process → Driver: a miscellaneous process was added.
    pub struct MiscellaneousProcessAdded {
        /// Time, milliseconds since the epoch.
        pub time: i64,
        /// Process id.
        pub process_id: String,
        /// Details.
        pub info: MiscellaneousProcessDetails,
    }
}

record! {
    /// Executor → Driver (ask → Bool): is this executor alive?
    pub struct IsExecutorAlive {
        /// Executor id.
        pub executor_id: String,
    }
}

record! {
    /// Executor → Driver (ask → Int): the last executor id allocated.
    pub struct RetrieveLastAllocatedExecutorId {}
}
