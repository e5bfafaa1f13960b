//! The deploy family: Spark's `DeployMessages`, exchanged by Master, Worker, AppClient and
//! DriverClient.

mod app_client;
mod driver_client;
mod local;
mod ui;
mod worker;

pub use app_client::*;
pub use driver_client::*;
pub use local::*;
pub use ui::*;
pub use worker::*;

use crate::messages::legacy::deploy as v1;

/// The family enum, re-exported as [`crate::messages::DeployMessage`] only (its one public path).
pub(in crate::messages) mod family {
    use super::*;

    message_family! {
        /// Every message of the deploy family.
        DeployMessage, "deploy" {
            RegisterWorker, RegisteredWorker, RegisterWorkerFailed, MasterInStandby, Heartbeat,
            WorkerLatestState, ExecutorStateChanged, DriverStateChanged, WorkerDecommissioning,
            WorkerSchedulerStateResponse, ReconnectWorker, LaunchExecutor, KillExecutor, LaunchDriver,
            KillDriver, ApplicationFinished, DecommissionWorker, MasterChanged,
            RegisterApplication, RegisteredApplication, UnregisterApplication, MasterChangeAcknowledged,
            RequestExecutors, KillExecutors, ExecutorAdded, ExecutorUpdated, ApplicationRemoved,
            WorkerRemoved,
            RequestSubmitDriver, SubmitDriverResponse, RequestKillDriver, KillDriverResponse,
            RequestDriverStatus, DriverStatusResponse, RequestKillAllDrivers, KillAllDriversResponse,
            RequestClearCompletedDriversAndApps, RequestReadyz, RequestMasterState, MasterStateResponse,
            DecommissionWorkersOnHosts, RequestWorkerState, WorkerStateResponse,
            DecommissionWorkers, WorkDirCleanup, ReregisterWithMaster, SendHeartbeat,
            WorkerDecommissionSigReceived, StopAppClient,
        }
    }
}

same_layout!(V1, false:
    RegisterWorker, RegisteredWorker, RegisterWorkerFailed, MasterInStandby, Heartbeat,
    ExecutorStateChanged, DriverStateChanged, ReconnectWorker, KillExecutor, LaunchDriver, KillDriver,
    ApplicationFinished, MasterChanged, RegisteredApplication, UnregisterApplication,
    MasterChangeAcknowledged, KillExecutors, ExecutorAdded, ApplicationRemoved, WorkerRemoved,
    RequestSubmitDriver, SubmitDriverResponse, RequestKillDriver, KillDriverResponse,
    RequestDriverStatus, DriverStatusResponse, RequestMasterState, RequestWorkerState,
);
same_layout!(V2, false:
    WorkerDecommissioning, DecommissionWorker, RequestKillAllDrivers, KillAllDriversResponse,
    RequestClearCompletedDriversAndApps, RequestReadyz, DecommissionWorkersOnHosts,
);
same_layout!(V1, true: WorkDirCleanup, ReregisterWithMaster, SendHeartbeat, StopAppClient);
same_layout!(V2, true: DecommissionWorkers, WorkerDecommissionSigReceived);
legacy_layout!(false:
    WorkerLatestState => v1::WorkerLatestState,
    WorkerSchedulerStateResponse => v1::WorkerSchedulerStateResponse,
    LaunchExecutor => v1::LaunchExecutor,
    RegisterApplication => v1::RegisterApplication,
    RequestExecutors => v1::RequestExecutors,
    ExecutorUpdated => v1::ExecutorUpdated,
    MasterStateResponse => v1::MasterStateResponse,
    WorkerStateResponse => v1::WorkerStateResponse,
);
