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
        pub host: String,
        /// Port.
        pub port: i32,
        /// REST server port, if it runs.
        pub rest_port: Option<i32>,
        /// Workers.
        pub workers: Vec<WorkerInfo>,
        /// Applications not finished.
        pub active_apps: Vec<ApplicationInfo>,
        /// Applications finished.
        pub completed_apps: Vec<ApplicationInfo>,
        /// Drivers not finished.
        pub active_drivers: Vec<DriverInfo>,
        /// Drivers finished.
        pub completed_drivers: Vec<DriverInfo>,
        /// Recovery state.
        pub status: RecoveryState,
    }
}

record! {
    /// UI → Master (ask → Int): decommission the workers on these hosts; answers how many.
    pub struct DecommissionWorkersOnHosts {
        /// Host names.
        pub hostnames: Vec<String>,
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
        pub host: String,
        /// Port.
        pub port: i32,
        /// Worker id.
        pub worker_id: String,
        /// Executors running.
        pub executors: Vec<ExecutorDescription>,
        /// Executors finished.
        pub finished_executors: Vec<ExecutorDescription>,
        /// Drivers running.
        pub drivers: Vec<DriverRunnerInfo>,
        /// Drivers finished.
        pub finished_drivers: Vec<DriverRunnerInfo>,
        /// The active master's URL.
        pub master_url: String,
        /// Cores.
        pub cores: i32,
        /// Memory, MiB.
        pub memory: i32,
        /// Cores in use.
        pub cores_used: i32,
        /// Memory in use, MiB.
        pub memory_used: i32,
        /// The active master's web UI URL.
        pub master_web_ui_url: String,
        /// Resources.
        pub resources: Resources,
        /// Resources in use.
        pub resources_used: Resources,
    }
}
