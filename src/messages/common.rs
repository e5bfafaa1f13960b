//! Types shared by both families: endpoint references, resources, descriptions, records.

use std::collections::BTreeMap;

use crate::messages::states::{ApplicationState, DriverState, ExecutorState, WorkerState};

/// A host and port (Spark's `RpcAddress`).
#[derive(Debug, Clone, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
#[serde(rename_all = "camelCase")]
pub struct Addr {
    /// Host name or IP address.
    pub host: String,
    /// TCP port.
    pub port: i32,
}

impl Addr {
    /// Builds an address.
    pub fn new(host: impl Into<String>, port: i32) -> Self {
        Addr {
            host: host.into(),
            port,
        }
    }
}

impl std::fmt::Display for Addr {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}", self.host, self.port)
    }
}

record! {
    /// An endpoint reference (Spark's `RpcEndpointRef`): where an endpoint listens, if it does, and
    /// its name. A reference without an address is reachable only over the connection it arrived on.
    pub struct EndpointRef {
        /// The address the endpoint listens on; `None` for a client-only endpoint (an executor).
        pub address: Option<Addr>,
        /// The endpoint name, such as `Master`, `Worker` or `CoarseGrainedScheduler`.
        pub name: String,
    }
}

impl EndpointRef {
    /// A reference to `name` listening on `address`.
    pub fn at(address: Addr, name: impl Into<String>) -> Self {
        EndpointRef {
            address: Some(address),
            name: name.into(),
        }
    }

    /// A reference to `name` that does not listen.
    pub fn client(name: impl Into<String>) -> Self {
        EndpointRef {
            address: None,
            name: name.into(),
        }
    }
}

record! {
    /// A resource the process has (Spark's `ResourceInformation`), such as `gpu` with addresses
    /// `["0", "1"]`.
    pub struct ResourceInformation {
        /// Resource name.
        pub name: String,
        /// The addresses of the units of that resource.
        pub addresses: Vec<String>,
    }
}

/// Resources by name.
pub type Resources = BTreeMap<String, ResourceInformation>;

record! {
    /// One executor resource request of a profile (Spark's `ExecutorResourceRequest`).
    pub struct ExecutorResourceRequest {
        /// Resource name: `cores`, `memory` (MiB), `memoryOverhead`, `gpu`, …
        pub resource_name: String,
        /// Amount requested.
        pub amount: i64,
        /// Script that discovers the resource on the host (empty when none).
        pub discovery_script: String,
        /// Vendor (empty when none).
        pub vendor: String,
    }
}

record! {
    /// One task resource request of a profile (Spark's `TaskResourceRequest`).
    pub struct TaskResourceRequest {
        /// Resource name: `cpus`, `gpu`, …
        pub resource_name: String,
        /// Amount per task; may be fractional.
        #[cfg_attr(feature = "arbitrary", arbitrary(with = crate::messages::finite_f64))]
        #[serde(with = "crate::messages::finite_f64_field")]
        pub amount: f64,
    }
}

record! {
    /// A resource profile (Spark's `ResourceProfile`). Executor cores and memory are the `cores` and
    /// `memory` entries of `executor_resources`; task cpus is the `cpus` entry of `task_resources`.
    pub struct ResourceProfile {
        /// Profile id; 0 is the default profile.
        pub id: i32,
        /// Executor requests by resource name.
        pub executor_resources: BTreeMap<String, ExecutorResourceRequest>,
        /// Task requests by resource name.
        pub task_resources: BTreeMap<String, TaskResourceRequest>,
    }
}

impl ResourceProfile {
    /// Id of the default profile.
    pub const DEFAULT_ID: i32 = 0;

    /// The amount of executor resource `name`, if requested.
    pub fn executor_amount(&self, name: &str) -> Option<i64> {
        self.executor_resources.get(name).map(|r| r.amount)
    }

    /// The default profile with the given executor cores (if set) and memory in MiB.
    pub fn default_with(cores: Option<i32>, memory_mb: i32) -> Self {
        let mut executor_resources = BTreeMap::new();
        let mut put = |name: &str, amount: i64| {
            executor_resources.insert(
                name.to_string(),
                ExecutorResourceRequest {
                    resource_name: name.to_string(),
                    amount,
                    discovery_script: String::new(),
                    vendor: String::new(),
                },
            );
        };
        if let Some(c) = cores {
            put("cores", i64::from(c));
        }
        put("memory", i64::from(memory_mb));
        let mut task_resources = BTreeMap::new();
        task_resources.insert(
            "cpus".to_string(),
            TaskResourceRequest {
                resource_name: "cpus".to_string(),
                amount: 1.0,
            },
        );
        ResourceProfile {
            id: Self::DEFAULT_ID,
            executor_resources,
            task_resources,
        }
    }
}

record! {
    /// How many executors an application wants for one resource profile (an entry of Spark's
    /// `Map[ResourceProfile, Int]`, which keys whole profiles).
    pub struct ProfileExecutors {
        /// The profile.
        pub profile: ResourceProfile,
        /// Total executors wanted with that profile.
        pub total: i32,
    }
}

record! {
    /// The command a worker runs to start an executor or a driver (Spark's `Command`).
    pub struct Command {
        /// Main class (Spark) or program to run (sparkwire's reference worker).
        pub main_class: String,
        /// Arguments, with `{{EXECUTOR_ID}}`-style placeholders.
        pub arguments: Vec<String>,
        /// Environment variables.
        pub environment: BTreeMap<String, String>,
        /// Class path entries.
        pub class_path_entries: Vec<String>,
        /// Library path entries.
        pub library_path_entries: Vec<String>,
        /// JVM options.
        pub java_opts: Vec<String>,
    }
}

record! {
    /// An application as its client describes it (Spark's `ApplicationDescription`).
    pub struct ApplicationDescription {
        /// Application name.
        pub name: String,
        /// Most cores the application may hold across the cluster; `None` for no limit.
        pub max_cores: Option<i32>,
        /// Command that starts an executor.
        pub command: Command,
        /// URL of the application's UI.
        pub app_ui_url: String,
        /// The default resource profile: executor cores (if set) and memory.
        pub default_profile: ResourceProfile,
        /// Event log directory URI.
        pub event_log_dir: Option<String>,
        /// Event log compression codec.
        pub event_log_codec: Option<String>,
        /// Executors allowed at start (dynamic allocation).
        pub initial_executor_limit: Option<i32>,
        /// User running the application.
        pub user: String,
    }
}

record! {
    /// A resource a driver needs (Spark's `ResourceRequirement`).
    pub struct ResourceRequirement {
        /// Resource name.
        pub resource_name: String,
        /// Units needed.
        pub amount: i32,
        /// Parts per unit.
        pub num_parts: i32,
    }
}

record! {
    /// A driver submitted in cluster deploy mode (Spark's `DriverDescription`).
    pub struct DriverDescription {
        /// URL of the application jar.
        pub jar_url: String,
        /// Memory in MiB.
        pub mem: i32,
        /// Cores.
        pub cores: i32,
        /// Relaunch the driver when it fails.
        pub supervise: bool,
        /// Command that starts the driver.
        pub command: Command,
        /// Other resources.
        pub resource_reqs: Vec<ResourceRequirement>,
    }
}

record! {
    /// An executor as its worker describes it (Spark's `ExecutorDescription`).
    pub struct ExecutorDescription {
        /// Application id.
        pub app_id: String,
        /// Executor id within the application.
        pub exec_id: i32,
        /// Resource profile id.
        pub rp_id: i32,
        /// Cores.
        pub cores: i32,
        /// Memory in MiB.
        pub memory_mb: i32,
        /// State.
        pub state: ExecutorState,
    }
}

record! {
    /// An exception as it crosses the wire: the class name and the message.
    pub struct ErrorDescription {
        /// Class (or kind) of the error, such as `java.io.IOException`.
        pub class_name: String,
        /// Message text.
        pub message: String,
    }
}

impl ErrorDescription {
    /// Builds a description.
    pub fn new(class_name: impl Into<String>, message: impl Into<String>) -> Self {
        ErrorDescription {
            class_name: class_name.into(),
            message: message.into(),
        }
    }
}

impl std::fmt::Display for ErrorDescription {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.class_name, self.message)
    }
}

/// Why an executor went away (Spark's `ExecutorLossReason` and its subclasses).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
#[serde(rename_all_fields = "camelCase")]
pub enum ExecutorLossReason {
    /// The process exited.
    ExecutorExited {
        /// Exit code.
        exit_code: i32,
        /// Whether the application caused the exit.
        exit_caused_by_app: bool,
        /// Reason text.
        reason: String,
    },
    /// Killed on request.
    ExecutorKilled {},
    /// The reason is not known yet.
    LossReasonPending {},
    /// The process was lost.
    ExecutorProcessLost {
        /// Reason text.
        reason: String,
        /// Host of the lost worker, when the whole worker was lost.
        worker_host: Option<String>,
        /// Whether the application caused the loss.
        caused_by_app: bool,
    },
    /// Decommissioned.
    ExecutorDecommission {
        /// Host of the decommissioned worker, when the whole worker goes.
        worker_host: Option<String>,
        /// Reason text.
        reason: String,
    },
    /// Any other reason, as text.
    Other {
        /// Reason text.
        message: String,
    },
}

record! {
    /// A miscellaneous process (Spark's `MiscellaneousProcessDetails`).
    pub struct MiscellaneousProcessDetails {
        /// host:port of the process.
        pub host_port: String,
        /// Cores it uses.
        pub cores: i32,
        /// Log URLs by name.
        pub log_url_info: BTreeMap<String, String>,
    }
}

record! {
    /// A stack trace of a task's thread (the answer to `TaskThreadDump`).
    pub struct ThreadStackTrace {
        /// Thread id.
        pub thread_id: i64,
        /// Thread name.
        pub thread_name: String,
        /// Thread state.
        pub thread_state: String,
        /// The trace, one frame per element.
        pub stack_trace: Vec<String>,
    }
}

record! {
    /// A worker as the master records it (its state page).
    pub struct WorkerInfo {
        /// Worker id.
        pub id: String,
        /// Host.
        pub host: String,
        /// Port.
        pub port: i32,
        /// Cores registered.
        pub cores: i32,
        /// Memory registered, MiB.
        pub memory: i32,
        /// Cores in use.
        pub cores_used: i32,
        /// Memory in use, MiB.
        pub memory_used: i32,
        /// State.
        pub state: WorkerState,
        /// Time of the last heartbeat, milliseconds since the epoch.
        pub last_heartbeat: i64,
        /// Web UI URL.
        pub web_ui_address: String,
        /// Resources registered.
        pub resources: Resources,
    }
}

record! {
    /// An application as the master records it (its state page).
    pub struct ApplicationInfo {
        /// Application id.
        pub id: String,
        /// Registration time, milliseconds since the epoch.
        pub start_time: i64,
        /// The description it registered with.
        pub desc: ApplicationDescription,
        /// State.
        pub state: ApplicationState,
        /// Cores granted now.
        pub cores_granted: i32,
        /// End time, milliseconds since the epoch; -1 while running.
        pub end_time: i64,
    }
}

record! {
    /// A driver as the master records it (its state page).
    pub struct DriverInfo {
        /// Driver id.
        pub id: String,
        /// Submission time, milliseconds since the epoch.
        pub start_time: i64,
        /// The description it was submitted with.
        pub desc: DriverDescription,
        /// State.
        pub state: DriverState,
        /// Worker running it, if any.
        pub worker_id: Option<String>,
        /// The error that ended it, if any.
        pub exception: Option<ErrorDescription>,
    }
}

record! {
    /// A driver as a worker reports it on its state page.
    pub struct DriverRunnerInfo {
        /// Driver id.
        pub driver_id: String,
        /// Cores.
        pub cores: i32,
        /// Memory, MiB.
        pub memory: i32,
        /// State.
        pub state: DriverState,
    }
}
