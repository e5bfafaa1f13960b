//! Types shared by both families: endpoint references, resources, descriptions, records.

use std::collections::BTreeMap;

use crate::messages::states::{ApplicationState, DriverState, ExecutorState, WorkerState};

record! {
    @custom_new
    /// A host and port (Spark's `RpcAddress`).
    #[derive(Eq, Hash)]
    pub struct Addr {
        /// Host name or IP address.
        pub host: String => with_host,
        /// TCP port.
        pub port: i32 => with_port,
    }
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
        pub address: Option<Addr> => with_address,
        /// The endpoint name, such as `Master`, `Worker` or `CoarseGrainedScheduler`.
        pub name: String => with_name,
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
        pub name: String => with_name,
        /// The addresses of the units of that resource.
        pub addresses: Vec<String> => with_addresses,
    }
}

/// Resources by name.
pub type Resources = BTreeMap<String, ResourceInformation>;

record! {
    /// One executor resource request of a profile (Spark's `ExecutorResourceRequest`).
    pub struct ExecutorResourceRequest {
        /// Resource name: `cores`, `memory` (MiB), `memoryOverhead`, `gpu`, …
        pub resource_name: String => with_resource_name,
        /// Amount requested.
        pub amount: i64 => with_amount,
        /// Script that discovers the resource on the host (empty when none).
        pub discovery_script: String => with_discovery_script,
        /// Vendor (empty when none).
        pub vendor: String => with_vendor,
    }
}

record! {
    /// One task resource request of a profile (Spark's `TaskResourceRequest`).
    pub struct TaskResourceRequest {
        /// Resource name: `cpus`, `gpu`, …
        pub resource_name: String => with_resource_name,
        /// Amount per task; may be fractional.
        #[cfg_attr(feature = "arbitrary", arbitrary(with = crate::messages::finite_f64))]
        #[serde(with = "crate::messages::finite_f64_field")]
        pub amount: f64 => with_amount,
    }
}

record! {
    /// A resource profile (Spark's `ResourceProfile`). Executor cores and memory are the `cores` and
    /// `memory` entries of `executor_resources`; task cpus is the `cpus` entry of `task_resources`.
    pub struct ResourceProfile {
        /// Profile id; 0 is the default profile.
        pub id: i32 => with_id,
        /// Executor requests by resource name.
        pub executor_resources: BTreeMap<String, ExecutorResourceRequest> => with_executor_resources,
        /// Task requests by resource name.
        pub task_resources: BTreeMap<String, TaskResourceRequest> => with_task_resources,
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
        pub profile: ResourceProfile => with_profile,
        /// Total executors wanted with that profile.
        pub total: i32 => with_total,
    }
}

record! {
    /// The command a worker runs to start an executor or a driver (Spark's `Command`).
    pub struct Command {
        /// Main class (Spark) or program to run (sparkwire's reference worker).
        pub main_class: String => with_main_class,
        /// Arguments, with `{{EXECUTOR_ID}}`-style placeholders.
        pub arguments: Vec<String> => with_arguments,
        /// Environment variables.
        pub environment: BTreeMap<String, String> => with_environment,
        /// Class path entries.
        pub class_path_entries: Vec<String> => with_class_path_entries,
        /// Library path entries.
        pub library_path_entries: Vec<String> => with_library_path_entries,
        /// JVM options.
        pub java_opts: Vec<String> => with_java_opts,
    }
}

record! {
    /// An application as its client describes it (Spark's `ApplicationDescription`).
    pub struct ApplicationDescription {
        /// Application name.
        pub name: String => with_name,
        /// Most cores the application may hold across the cluster; `None` for no limit.
        pub max_cores: Option<i32> => with_max_cores,
        /// Command that starts an executor.
        pub command: Command => with_command,
        /// URL of the application's UI.
        pub app_ui_url: String => with_app_ui_url,
        /// The default resource profile: executor cores (if set) and memory.
        pub default_profile: ResourceProfile => with_default_profile,
        /// Event log directory URI.
        pub event_log_dir: Option<String> => with_event_log_dir,
        /// Event log compression codec.
        pub event_log_codec: Option<String> => with_event_log_codec,
        /// Executors allowed at start (dynamic allocation).
        pub initial_executor_limit: Option<i32> => with_initial_executor_limit,
        /// User running the application.
        pub user: String => with_user,
    }
}

record! {
    /// A resource a driver needs (Spark's `ResourceRequirement`).
    pub struct ResourceRequirement {
        /// Resource name.
        pub resource_name: String => with_resource_name,
        /// Units needed.
        pub amount: i32 => with_amount,
        /// Parts per unit.
        pub num_parts: i32 => with_num_parts,
    }
}

record! {
    /// A driver submitted in cluster deploy mode (Spark's `DriverDescription`).
    pub struct DriverDescription {
        /// URL of the application jar.
        pub jar_url: String => with_jar_url,
        /// Memory in MiB.
        pub mem: i32 => with_mem,
        /// Cores.
        pub cores: i32 => with_cores,
        /// Relaunch the driver when it fails.
        pub supervise: bool => with_supervise,
        /// Command that starts the driver.
        pub command: Command => with_command,
        /// Other resources.
        pub resource_reqs: Vec<ResourceRequirement> => with_resource_reqs,
    }
}

record! {
    /// An executor as its worker describes it (Spark's `ExecutorDescription`).
    pub struct ExecutorDescription {
        /// Application id.
        pub app_id: String => with_app_id,
        /// Executor id within the application.
        pub exec_id: i32 => with_exec_id,
        /// Resource profile id.
        pub rp_id: i32 => with_rp_id,
        /// Cores.
        pub cores: i32 => with_cores,
        /// Memory in MiB.
        pub memory_mb: i32 => with_memory_mb,
        /// State.
        pub state: ExecutorState => with_state,
    }
}

record! {
    @custom_new
    /// An exception as it crosses the wire: the class name and the message.
    pub struct ErrorDescription {
        /// Class (or kind) of the error, such as `java.io.IOException`.
        pub class_name: String => with_class_name,
        /// Message text.
        pub message: String => with_message,
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
///
/// Both the enum and each of its variants are `#[non_exhaustive]`: a new version may add a
/// reason, and a revision may add optional fields to one. Outside sparkwire, build a reason with the
/// constructor named after its variant ([`ExecutorLossReason::executor_exited`], …), which
/// takes every field the variant has today (one a revision adds is optional and starts `None`), and match it
/// with `..` in each variant and a wildcard arm.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
#[serde(rename_all_fields = "camelCase")]
#[non_exhaustive]
pub enum ExecutorLossReason {
    /// The process exited.
    #[non_exhaustive]
    ExecutorExited {
        /// Exit code.
        exit_code: i32,
        /// Whether the application caused the exit.
        exit_caused_by_app: bool,
        /// Reason text.
        reason: String,
    },
    /// Killed on request.
    #[non_exhaustive]
    ExecutorKilled {},
    /// The reason is not known yet.
    #[non_exhaustive]
    LossReasonPending {},
    /// The process was lost.
    #[non_exhaustive]
    ExecutorProcessLost {
        /// Reason text.
        reason: String,
        /// Host of the lost worker, when the whole worker was lost.
        worker_host: Option<String>,
        /// Whether the application caused the loss.
        caused_by_app: bool,
    },
    /// Decommissioned.
    #[non_exhaustive]
    ExecutorDecommission {
        /// Host of the decommissioned worker, when the whole worker goes.
        worker_host: Option<String>,
        /// Reason text.
        reason: String,
    },
    /// Any other reason, as text.
    #[non_exhaustive]
    Other {
        /// Reason text.
        message: String,
    },
}

impl ExecutorLossReason {
    /// The process exited with `exit_code`.
    pub fn executor_exited(exit_code: i32, exit_caused_by_app: bool, reason: String) -> Self {
        ExecutorLossReason::ExecutorExited {
            exit_code,
            exit_caused_by_app,
            reason,
        }
    }

    /// Killed on request.
    pub fn executor_killed() -> Self {
        ExecutorLossReason::ExecutorKilled {}
    }

    /// The reason is not known yet.
    pub fn loss_reason_pending() -> Self {
        ExecutorLossReason::LossReasonPending {}
    }

    /// The process was lost (with its whole worker on `worker_host`, when that is set).
    pub fn executor_process_lost(
        reason: String,
        worker_host: Option<String>,
        caused_by_app: bool,
    ) -> Self {
        ExecutorLossReason::ExecutorProcessLost {
            reason,
            worker_host,
            caused_by_app,
        }
    }

    /// Decommissioned (with its whole worker on `worker_host`, when that is set).
    pub fn executor_decommission(worker_host: Option<String>, reason: String) -> Self {
        ExecutorLossReason::ExecutorDecommission {
            worker_host,
            reason,
        }
    }

    /// Any other reason, as text.
    pub fn other(message: String) -> Self {
        ExecutorLossReason::Other { message }
    }
}

record! {
    /// A miscellaneous process (Spark's `MiscellaneousProcessDetails`).
    pub struct MiscellaneousProcessDetails {
        /// host:port of the process.
        pub host_port: String => with_host_port,
        /// Cores it uses.
        pub cores: i32 => with_cores,
        /// Log URLs by name.
        pub log_url_info: BTreeMap<String, String> => with_log_url_info,
    }
}

record! {
    /// A stack trace of a task's thread (the answer to `TaskThreadDump`).
    pub struct ThreadStackTrace {
        /// Thread id.
        pub thread_id: i64 => with_thread_id,
        /// Thread name.
        pub thread_name: String => with_thread_name,
        /// Thread state.
        pub thread_state: String => with_thread_state,
        /// The trace, one frame per element.
        pub stack_trace: Vec<String> => with_stack_trace,
    }
}

record! {
    /// A worker as the master records it (its state page).
    pub struct WorkerInfo {
        /// Worker id.
        pub id: String => with_id,
        /// Host.
        pub host: String => with_host,
        /// Port.
        pub port: i32 => with_port,
        /// Cores registered.
        pub cores: i32 => with_cores,
        /// Memory registered, MiB.
        pub memory: i32 => with_memory,
        /// Cores in use.
        pub cores_used: i32 => with_cores_used,
        /// Memory in use, MiB.
        pub memory_used: i32 => with_memory_used,
        /// State.
        pub state: WorkerState => with_state,
        /// Time of the last heartbeat, milliseconds since the epoch.
        pub last_heartbeat: i64 => with_last_heartbeat,
        /// Web UI URL.
        pub web_ui_address: String => with_web_ui_address,
        /// Resources registered.
        pub resources: Resources => with_resources,
        /// The Spark release it registered with (`RegisterWorker.sparkRelease`), if any
        /// (revision 2).
        pub spark_release: Option<String> => with_spark_release,
    }
}

record! {
    /// An application as the master records it (its state page).
    pub struct ApplicationInfo {
        /// Application id.
        pub id: String => with_id,
        /// Registration time, milliseconds since the epoch.
        pub start_time: i64 => with_start_time,
        /// The description it registered with.
        pub desc: ApplicationDescription => with_desc,
        /// State.
        pub state: ApplicationState => with_state,
        /// Cores granted now.
        pub cores_granted: i32 => with_cores_granted,
        /// End time, milliseconds since the epoch; -1 while running.
        pub end_time: i64 => with_end_time,
        /// The Spark release it registered with (`RegisterApplication.sparkRelease`), if any
        /// (revision 2).
        pub spark_release: Option<String> => with_spark_release,
        /// Why it waits, while none of its executors runs: the reason the master's last
        /// scheduling round found binding (SPEC §16, revision 2); `None` when it does not wait.
        pub waiting_reason: Option<String> => with_waiting_reason,
    }
}

record! {
    /// A driver as the master records it (its state page).
    pub struct DriverInfo {
        /// Driver id.
        pub id: String => with_id,
        /// Submission time, milliseconds since the epoch.
        pub start_time: i64 => with_start_time,
        /// The description it was submitted with.
        pub desc: DriverDescription => with_desc,
        /// State.
        pub state: DriverState => with_state,
        /// Worker running it, if any.
        pub worker_id: Option<String> => with_worker_id,
        /// The error that ended it, if any.
        pub exception: Option<ErrorDescription> => with_exception,
        /// Why it waits for a worker: the reason the master's last scheduling round found
        /// binding (SPEC §16, revision 2); `None` when it does not wait.
        pub waiting_reason: Option<String> => with_waiting_reason,
    }
}

record! {
    /// A driver as a worker reports it on its state page.
    pub struct DriverRunnerInfo {
        /// Driver id.
        pub driver_id: String => with_driver_id,
        /// Cores.
        pub cores: i32 => with_cores,
        /// Memory, MiB.
        pub memory: i32 => with_memory,
        /// State.
        pub state: DriverState => with_state,
    }
}
