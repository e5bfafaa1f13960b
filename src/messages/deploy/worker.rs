//! Worker ↔ Master messages.

use crate::messages::common::{
    Addr, ApplicationDescription, DriverDescription, EndpointRef, ErrorDescription,
    ExecutorDescription, Resources,
};
use crate::messages::states::{DriverState, ExecutorState};

record! {
    /// Worker → Master: register this worker. Answered by one of RegisteredWorker,
    /// RegisterWorkerFailed or MasterInStandby.
    pub struct RegisterWorker {
        /// Worker id, such as `worker-20250101120000-127.0.0.1-35001`.
        pub id: String,
        /// Host the worker runs on.
        pub host: String,
        /// Port the worker listens on.
        pub port: i32,
        /// The worker's endpoint.
        pub worker: EndpointRef,
        /// Cores offered.
        pub cores: i32,
        /// Memory offered, MiB.
        pub memory: i32,
        /// Web UI URL.
        pub worker_web_ui_url: String,
        /// The master address the worker dialled.
        pub master_address: Addr,
        /// Resources offered, by name.
        pub resources: Resources,
    }
}

record! {
    /// Master → Worker: the registration is accepted.
    pub struct RegisteredWorker {
        /// The master's endpoint.
        pub master: EndpointRef,
        /// Master web UI URL.
        pub master_web_ui_url: String,
        /// The master address, echoing RegisterWorker's `master_address`.
        pub master_address: Addr,
        /// True when the worker was already registered (a duplicate registration after a reconnect).
        pub duplicate: bool,
    }
}

record! {
    /// Master → Worker: the registration is refused.
    pub struct RegisterWorkerFailed {
        /// Why, such as `Duplicate worker ID`.
        pub message: String,
    }
}

record! {
    /// Master → Worker: this master is a standby and does not take registrations.
    pub struct MasterInStandby {}
}

record! {
    /// Worker → Master: the worker is alive.
    pub struct Heartbeat {
        /// Worker id.
        pub worker_id: String,
        /// The worker's endpoint.
        pub worker: EndpointRef,
    }
}

record! {
    /// Worker → Master: what the worker runs, sent after registering.
    pub struct WorkerLatestState {
        /// Worker id.
        pub id: String,
        /// Executors it runs.
        pub executors: Vec<ExecutorDescription>,
        /// Drivers it runs.
        pub driver_ids: Vec<String>,
    }
}

record! {
    /// Worker → Master (ask → Bool): an executor changed state.
    pub struct ExecutorStateChanged {
        /// Application id.
        pub app_id: String,
        /// Executor id.
        pub exec_id: i32,
        /// New state.
        pub state: ExecutorState,
        /// Message, such as `Command exited with code 137`.
        pub message: Option<String>,
        /// Exit status, when the process exited.
        pub exit_status: Option<i32>,
    }
}

record! {
    /// Worker → Master: a driver changed state.
    pub struct DriverStateChanged {
        /// Driver id.
        pub driver_id: String,
        /// New state.
        pub state: DriverState,
        /// The error, for ERROR or FAILED.
        pub exception: Option<ErrorDescription>,
    }
}

record! {
    /// Worker → Master: the worker is decommissioning itself.
    pub struct WorkerDecommissioning {
        /// Worker id.
        pub id: String,
        /// The worker's endpoint.
        pub worker_ref: EndpointRef,
    }
}

record! {
    /// An executor in WorkerSchedulerStateResponse.
    pub struct WorkerExecutorStateResponse {
        /// The executor.
        pub desc: ExecutorDescription,
        /// Resources assigned to it.
        pub resources: Resources,
    }
}

record! {
    /// A driver in WorkerSchedulerStateResponse.
    pub struct WorkerDriverStateResponse {
        /// Driver id.
        pub driver_id: String,
        /// Resources assigned to it.
        pub resources: Resources,
    }
}

record! {
    /// Worker → Master: the answer to MasterChanged, listing what the worker runs.
    pub struct WorkerSchedulerStateResponse {
        /// Worker id.
        pub id: String,
        /// Executors it runs.
        pub exec_responses: Vec<WorkerExecutorStateResponse>,
        /// Drivers it runs.
        pub driver_responses: Vec<WorkerDriverStateResponse>,
    }
}

record! {
    /// Master → Worker: the master does not know this worker; register again.
    pub struct ReconnectWorker {
        /// The master's URL.
        pub master_url: String,
    }
}

record! {
    /// Master → Worker: start an executor for an application.
    pub struct LaunchExecutor {
        /// The master's URL.
        pub master_url: String,
        /// Application id.
        pub app_id: String,
        /// Executor id.
        pub exec_id: i32,
        /// Resource profile id.
        pub rp_id: i32,
        /// The application's description, with the command to run.
        pub app_desc: ApplicationDescription,
        /// Cores given to the executor.
        pub cores: i32,
        /// Memory given to the executor, MiB.
        pub memory: i32,
        /// Resources given to the executor.
        pub resources: Resources,
    }
}

record! {
    /// Master → Worker: kill an executor.
    pub struct KillExecutor {
        /// The master's URL.
        pub master_url: String,
        /// Application id.
        pub app_id: String,
        /// Executor id.
        pub exec_id: i32,
    }
}

record! {
    /// Master → Worker: start a driver.
    pub struct LaunchDriver {
        /// Driver id.
        pub driver_id: String,
        /// The driver's description.
        pub driver_desc: DriverDescription,
        /// Resources given to the driver.
        pub resources: Resources,
    }
}

record! {
    /// Master → Worker: kill a driver.
    pub struct KillDriver {
        /// Driver id.
        pub driver_id: String,
    }
}

record! {
    /// Master → Worker: an application finished; clean up after it.
    pub struct ApplicationFinished {
        /// Application id.
        pub id: String,
    }
}

record! {
    /// Master → Worker: decommission yourself.
    pub struct DecommissionWorker {}
}

record! {
    /// Master → Worker and Master → AppClient: a new master took over.
    pub struct MasterChanged {
        /// The new master's endpoint.
        pub master: EndpointRef,
        /// The new master's web UI URL.
        pub master_web_ui_url: String,
    }
}
