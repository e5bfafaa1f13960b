//! Coarse-grained messages Spark sends only inside one process. They are defined for completeness;
//! they never cross a connection, and the codec refuses them both ways.

use crate::messages::common::{EndpointRef, ExecutorLossReason};

record! {
    /// Executor → itself: exit with this code.
    pub struct Shutdown {
        /// Exit code.
        pub exit_code: i32 => with_exit_code,
    }
}

record! {
    /// Executor → itself: a decommission signal arrived.
    pub struct ExecutorDecommissionSigReceived {}
}

record! {
    /// Driver → itself: make offers now.
    pub struct ReviveOffers {}
}

record! {
    /// Driver → itself: stop the driver endpoint.
    pub struct StopDriver {}
}

record! {
    /// Driver → itself (local ask → Bool): send StopExecutor to every executor.
    pub struct StopExecutors {}
}

record! {
    /// Driver → itself (local ask → Bool): forget an executor.
    pub struct RemoveExecutor {
        /// Executor id.
        pub executor_id: String => with_executor_id,
        /// Why it went away.
        pub reason: ExecutorLossReason => with_reason,
    }
}

record! {
    /// Driver → itself: forget a worker.
    pub struct RemoveWorker {
        /// Worker id.
        pub worker_id: String => with_worker_id,
        /// Host.
        pub host: String => with_host,
        /// Why.
        pub message: String => with_message,
    }
}

record! {
    /// Driver → itself: kill the executors on a host.
    pub struct KillExecutorsOnHost {
        /// Host.
        pub host: String => with_host,
    }
}

record! {
    /// Driver → itself: decommission the executors on a host.
    pub struct DecommissionExecutorsOnHost {
        /// Host.
        pub host: String => with_host,
    }
}

record! {
    /// Driver → itself: change every executor's log level.
    pub struct UpdateExecutorsLogLevel {
        /// Log level.
        pub log_level: String => with_log_level,
    }
}

record! {
    /// Cluster manager → itself: the driver's endpoint.
    pub struct SetupDriver {
        /// The driver's endpoint.
        pub driver: EndpointRef => with_driver,
    }
}
