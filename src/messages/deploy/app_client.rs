//! AppClient ↔ Master messages.

use crate::messages::common::{ApplicationDescription, EndpointRef, ProfileExecutors};
use crate::messages::states::ExecutorState;

record! {
    /// AppClient → Master: register an application.
    pub struct RegisterApplication {
        /// The application.
        pub app_description: ApplicationDescription,
        /// The driver's endpoint.
        pub driver: EndpointRef,
    }
}

record! {
    /// Master → AppClient: the application is registered.
    pub struct RegisteredApplication {
        /// The id given, such as `app-20250101120000-0000`.
        pub app_id: String,
        /// The master's endpoint.
        pub master: EndpointRef,
    }
}

record! {
    /// AppClient → Master: the application is done.
    pub struct UnregisterApplication {
        /// Application id.
        pub app_id: String,
    }
}

record! {
    /// AppClient → Master: the answer to MasterChanged.
    pub struct MasterChangeAcknowledged {
        /// Application id.
        pub app_id: String,
    }
}

record! {
    /// AppClient → Master (ask → Bool): the total executors wanted, per resource profile.
    pub struct RequestExecutors {
        /// Application id.
        pub app_id: String,
        /// Executors wanted per profile.
        pub resource_profile_to_total_execs: Vec<ProfileExecutors>,
    }
}

record! {
    /// AppClient → Master (ask → Bool): kill these executors.
    pub struct KillExecutors {
        /// Application id.
        pub app_id: String,
        /// Executor ids.
        pub executor_ids: Vec<String>,
    }
}

record! {
    /// Master → AppClient: an executor was granted.
    pub struct ExecutorAdded {
        /// Executor id.
        pub id: i32,
        /// Worker id.
        pub worker_id: String,
        /// host:port of the worker.
        pub host_port: String,
        /// Cores.
        pub cores: i32,
        /// Memory, MiB.
        pub memory: i32,
    }
}

record! {
    /// Master → AppClient: an executor changed state.
    pub struct ExecutorUpdated {
        /// Executor id.
        pub id: i32,
        /// New state.
        pub state: ExecutorState,
        /// Message.
        pub message: Option<String>,
        /// Exit status.
        pub exit_status: Option<i32>,
        /// The host of the worker when the whole worker was lost.
        pub worker_host: Option<String>,
    }
}

record! {
    /// Master → AppClient: the application was removed.
    pub struct ApplicationRemoved {
        /// Why.
        pub message: String,
    }
}

record! {
    /// Master → AppClient: a worker that ran executors of the application was removed.
    pub struct WorkerRemoved {
        /// Worker id.
        pub id: String,
        /// Worker host.
        pub host: String,
        /// Why.
        pub message: String,
    }
}
