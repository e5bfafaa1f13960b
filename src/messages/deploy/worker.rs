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
        pub id: String => with_id,
        /// Host the worker runs on.
        pub host: String => with_host,
        /// Port the worker listens on.
        pub port: i32 => with_port,
        /// The worker's endpoint.
        pub worker: EndpointRef => with_worker,
        /// Cores offered.
        pub cores: i32 => with_cores,
        /// Memory offered, MiB.
        pub memory: i32 => with_memory,
        /// Web UI URL.
        pub worker_web_ui_url: String => with_worker_web_ui_url,
        /// The master address the worker dialled.
        pub master_address: Addr => with_master_address,
        /// Resources offered, by name.
        pub resources: Resources => with_resources,
        /// The Spark release the worker speaks, when it registered over Spark's own wire (the
        /// name of a release of `protocol/spark/releases.json`, such as `3.5.9`): a bridge such as
        /// the master's Spark-wire front announces it (SPEC §15.5, revision 2). `None` for a
        /// sparkwire worker.
        pub spark_release: Option<String> => with_spark_release,
    }
}

record! {
    /// Master → Worker: the registration is accepted.
    pub struct RegisteredWorker {
        /// The master's endpoint.
        pub master: EndpointRef => with_master,
        /// Master web UI URL.
        pub master_web_ui_url: String => with_master_web_ui_url,
        /// The master address, echoing RegisterWorker's `master_address`.
        pub master_address: Addr => with_master_address,
        /// True when the worker was already registered (a duplicate registration after a reconnect).
        pub duplicate: bool => with_duplicate,
    }
}

record! {
    /// Master → Worker: the registration is refused.
    pub struct RegisterWorkerFailed {
        /// Why, such as `Duplicate worker ID`.
        pub message: String => with_message,
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
        pub worker_id: String => with_worker_id,
        /// The worker's endpoint.
        pub worker: EndpointRef => with_worker,
    }
}

record! {
    /// Worker → Master: what the worker runs, sent after registering.
    pub struct WorkerLatestState {
        /// Worker id.
        pub id: String => with_id,
        /// Executors it runs.
        pub executors: Vec<ExecutorDescription> => with_executors,
        /// Drivers it runs.
        pub driver_ids: Vec<String> => with_driver_ids,
    }
}

record! {
    /// Worker → Master (ask → Bool): an executor changed state.
    pub struct ExecutorStateChanged {
        /// Application id.
        pub app_id: String => with_app_id,
        /// Executor id.
        pub exec_id: i32 => with_exec_id,
        /// New state.
        pub state: ExecutorState => with_state,
        /// Message, such as `Command exited with code 137`.
        pub message: Option<String> => with_message,
        /// Exit status, when the process exited.
        pub exit_status: Option<i32> => with_exit_status,
    }
}

record! {
    /// Worker → Master: a driver changed state.
    pub struct DriverStateChanged {
        /// Driver id.
        pub driver_id: String => with_driver_id,
        /// New state.
        pub state: DriverState => with_state,
        /// The error, for ERROR or FAILED.
        pub exception: Option<ErrorDescription> => with_exception,
    }
}

record! {
    /// Worker → Master: the worker is decommissioning itself.
    pub struct WorkerDecommissioning {
        /// Worker id.
        pub id: String => with_id,
        /// The worker's endpoint.
        pub worker_ref: EndpointRef => with_worker_ref,
    }
}

record! {
    /// An executor in WorkerSchedulerStateResponse.
    pub struct WorkerExecutorStateResponse {
        /// The executor.
        pub desc: ExecutorDescription => with_desc,
        /// Resources assigned to it.
        pub resources: Resources => with_resources,
    }
}

record! {
    /// A driver in WorkerSchedulerStateResponse.
    pub struct WorkerDriverStateResponse {
        /// Driver id.
        pub driver_id: String => with_driver_id,
        /// Resources assigned to it.
        pub resources: Resources => with_resources,
    }
}

record! {
    /// Worker → Master: the answer to MasterChanged, listing what the worker runs.
    pub struct WorkerSchedulerStateResponse {
        /// Worker id.
        pub id: String => with_id,
        /// Executors it runs.
        pub exec_responses: Vec<WorkerExecutorStateResponse> => with_exec_responses,
        /// Drivers it runs.
        pub driver_responses: Vec<WorkerDriverStateResponse> => with_driver_responses,
    }
}

record! {
    /// Master → Worker: the master does not know this worker; register again.
    pub struct ReconnectWorker {
        /// The master's URL.
        pub master_url: String => with_master_url,
    }
}

record! {
    /// Master → Worker: start an executor for an application.
    pub struct LaunchExecutor {
        /// The master's URL.
        pub master_url: String => with_master_url,
        /// Application id.
        pub app_id: String => with_app_id,
        /// Executor id.
        pub exec_id: i32 => with_exec_id,
        /// Resource profile id.
        pub rp_id: i32 => with_rp_id,
        /// The application's description, with the command to run.
        pub app_desc: ApplicationDescription => with_app_desc,
        /// Cores given to the executor.
        pub cores: i32 => with_cores,
        /// Memory given to the executor, MiB.
        pub memory: i32 => with_memory,
        /// Resources given to the executor.
        pub resources: Resources => with_resources,
    }
}

record! {
    /// Master → Worker: kill an executor.
    pub struct KillExecutor {
        /// The master's URL.
        pub master_url: String => with_master_url,
        /// Application id.
        pub app_id: String => with_app_id,
        /// Executor id.
        pub exec_id: i32 => with_exec_id,
    }
}

record! {
    /// Master → Worker: start a driver.
    pub struct LaunchDriver {
        /// Driver id.
        pub driver_id: String => with_driver_id,
        /// The driver's description.
        pub driver_desc: DriverDescription => with_driver_desc,
        /// Resources given to the driver.
        pub resources: Resources => with_resources,
    }
}

record! {
    /// Master → Worker: kill a driver.
    pub struct KillDriver {
        /// Driver id.
        pub driver_id: String => with_driver_id,
    }
}

record! {
    /// Master → Worker: an application finished; clean up after it.
    pub struct ApplicationFinished {
        /// Application id.
        pub id: String => with_id,
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
        pub master: EndpointRef => with_master,
        /// The new master's web UI URL.
        pub master_web_ui_url: String => with_master_web_ui_url,
    }
}
