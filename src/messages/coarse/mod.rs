//! The coarse-grained family: Spark's `CoarseGrainedClusterMessages`, exchanged by a driver's
//! scheduler backend, its executors and a cluster manager.

mod cluster_manager;
mod executor;
mod local;

pub use cluster_manager::*;
pub use executor::*;
pub use local::*;

use crate::messages::legacy::coarse as v1;

/// The family enum, re-exported as [`crate::messages::CoarseMessage`] only (its one public path).
pub(in crate::messages) mod family {
    use super::*;

    message_family! {
        /// Every message of the coarse-grained family.
        CoarseMessage, "coarse" {
            RetrieveSparkAppConfig, SparkAppConfig, RegisterExecutor, LaunchedExecutor, StatusUpdate,
            LaunchTask, KillTask, StopExecutor, DecommissionExecutor, ExecutorDecommissioning,
            UpdateDelegationTokens, UpdateExecutorLogLevel, TaskThreadDump, ShufflePushCompletion,
            MiscellaneousProcessAdded, IsExecutorAlive, RetrieveLastAllocatedExecutorId,
            RegisterClusterManager, AddWebUIFilter, RetrieveDelegationTokens, RequestExecutors,
            KillExecutors, GetExecutorLossReason,
            Shutdown, ExecutorDecommissionSigReceived, ReviveOffers, StopDriver, StopExecutors,
            RemoveExecutor, RemoveWorker, KillExecutorsOnHost, DecommissionExecutorsOnHost,
            UpdateExecutorsLogLevel, SetupDriver,
        }
    }
}

same_layout!(V1, false:
    RetrieveSparkAppConfig, RegisterExecutor, LaunchedExecutor, LaunchTask, KillTask, StopExecutor,
    UpdateDelegationTokens, RetrieveLastAllocatedExecutorId, RegisterClusterManager, AddWebUIFilter,
    RetrieveDelegationTokens, KillExecutors, GetExecutorLossReason, RemoveExecutor,
);
same_layout!(V2, false:
    DecommissionExecutor, ExecutorDecommissioning, UpdateExecutorLogLevel, TaskThreadDump,
    ShufflePushCompletion, MiscellaneousProcessAdded, IsExecutorAlive,
);
same_layout!(V1, true:
    ReviveOffers, StopDriver, StopExecutors, RemoveWorker, KillExecutorsOnHost, SetupDriver,
);
same_layout!(V2, true: ExecutorDecommissionSigReceived, DecommissionExecutorsOnHost, UpdateExecutorsLogLevel);
legacy_layout!(false:
    SparkAppConfig => v1::SparkAppConfig,
    StatusUpdate => v1::StatusUpdate,
    RequestExecutors => v1::RequestExecutors,
);
legacy_layout!(true: Shutdown => v1::Shutdown);
