//! Messages of the UI and REST side: state pages, readiness, decommissioning by host.

use crate::messages::common::{
    ApplicationInfo, DriverInfo, DriverRunnerInfo, ExecutorDescription, Resources, WorkerInfo,
};
use crate::messages::states::RecoveryState;

record! {
    /// REST → Master (ask → Int): forget completed drivers and applications; answers how many.
    pub struct RequestClearCompletedDriversAndApps {}
}

record! {
    /// REST → Master (ask → Bool): is the master ready (ALIVE)?
    pub struct RequestReadyz {}
}

record! {
    /// UI → Master (ask → MasterStateResponse): the master's state.
    pub struct RequestMasterState {}
}

record! {
    /// Master → UI: the master's state.
    pub struct MasterStateResponse {
        /// Host.
        pub host: String => with_host,
        /// Port.
        pub port: i32 => with_port,
        /// REST server port, if it runs.
        pub rest_port: Option<i32> => with_rest_port,
        /// Workers.
        pub workers: Vec<WorkerInfo> => with_workers,
        /// Applications not finished.
        pub active_apps: Vec<ApplicationInfo> => with_active_apps,
        /// Applications finished.
        pub completed_apps: Vec<ApplicationInfo> => with_completed_apps,
        /// Drivers not finished.
        pub active_drivers: Vec<DriverInfo> => with_active_drivers,
        /// Drivers finished.
        pub completed_drivers: Vec<DriverInfo> => with_completed_drivers,
        /// Recovery state.
        pub status: RecoveryState => with_status,
    }
}

record! {
    /// UI → Master (ask → Int): decommission the workers on these hosts; answers how many.
    pub struct DecommissionWorkersOnHosts {
        /// Host names.
        pub hostnames: Vec<String> => with_hostnames,
    }
}

record! {
    /// UI → Worker (ask → WorkerStateResponse): the worker's state.
    pub struct RequestWorkerState {}
}

record! {
    /// Worker → UI: the worker's state.
    pub struct WorkerStateResponse {
        /// Host.
        pub host: String => with_host,
        /// Port.
        pub port: i32 => with_port,
        /// Worker id.
        pub worker_id: String => with_worker_id,
        /// Executors running.
        pub executors: Vec<ExecutorDescription> => with_executors,
        /// Executors finished.
        pub finished_executors: Vec<ExecutorDescription> => with_finished_executors,
        /// Drivers running.
        pub drivers: Vec<DriverRunnerInfo> => with_drivers,
        /// Drivers finished.
        pub finished_drivers: Vec<DriverRunnerInfo> => with_finished_drivers,
        /// The active master's URL.
        pub master_url: String => with_master_url,
        /// Cores.
        pub cores: i32 => with_cores,
        /// Memory, MiB.
        pub memory: i32 => with_memory,
        /// Cores in use.
        pub cores_used: i32 => with_cores_used,
        /// Memory in use, MiB.
        pub memory_used: i32 => with_memory_used,
        /// The active master's web UI URL.
        pub master_web_ui_url: String => with_master_web_ui_url,
        /// Resources.
        pub resources: Resources => with_resources,
        /// Resources in use.
        pub resources_used: Resources => with_resources_used,
    }
}
