//! AppClient ↔ Master messages.

use crate::messages::common::{ApplicationDescription, EndpointRef, ProfileExecutors};
use crate::messages::states::ExecutorState;

record! {
    /// AppClient → Master: register an application.
    pub struct RegisterApplication {
        /// The application.
        pub app_description: ApplicationDescription => with_app_description,
        /// The driver's endpoint.
        pub driver: EndpointRef => with_driver,
        /// The Spark release the application speaks, when it registered over Spark's own wire
        /// (as [`RegisterWorker::spark_release`](super::RegisterWorker::spark_release); SPEC
        /// §15.5, revision 2). `None` for a sparkwire application.
        pub spark_release: Option<String> => with_spark_release,
    }
}

record! {
    /// Master → AppClient: the application is registered.
    pub struct RegisteredApplication {
        /// The id given, such as `app-20250101120000-0000`.
        pub app_id: String => with_app_id,
        /// The master's endpoint.
        pub master: EndpointRef => with_master,
    }
}

record! {
    /// AppClient → Master: the application is done.
    pub struct UnregisterApplication {
        /// Application id.
        pub app_id: String => with_app_id,
    }
}

record! {
    /// AppClient → Master: the answer to MasterChanged.
    pub struct MasterChangeAcknowledged {
        /// Application id.
        pub app_id: String => with_app_id,
    }
}

record! {
    /// AppClient → Master (ask → Bool): the total executors wanted, per resource profile.
    pub struct RequestExecutors {
        /// Application id.
        pub app_id: String => with_app_id,
        /// Executors wanted per profile.
        pub resource_profile_to_total_execs: Vec<ProfileExecutors> => with_resource_profile_to_total_execs,
    }
}

record! {
    /// AppClient → Master (ask → Bool): kill these executors.
    pub struct KillExecutors {
        /// Application id.
        pub app_id: String => with_app_id,
        /// Executor ids.
        pub executor_ids: Vec<String> => with_executor_ids,
    }
}

record! {
    /// Master → AppClient: an executor was granted.
    pub struct ExecutorAdded {
        /// Executor id.
        pub id: i32 => with_id,
        /// Worker id.
        pub worker_id: String => with_worker_id,
        /// host:port of the worker.
        pub host_port: String => with_host_port,
        /// Cores.
        pub cores: i32 => with_cores,
        /// Memory, MiB.
        pub memory: i32 => with_memory,
    }
}

record! {
    /// Master → AppClient: an executor changed state.
    pub struct ExecutorUpdated {
        /// Executor id.
        pub id: i32 => with_id,
        /// New state.
        pub state: ExecutorState => with_state,
        /// Message.
        pub message: Option<String> => with_message,
        /// Exit status.
        pub exit_status: Option<i32> => with_exit_status,
        /// The host of the worker when the whole worker was lost.
        pub worker_host: Option<String> => with_worker_host,
    }
}

record! {
    /// Master → AppClient: the application was removed.
    pub struct ApplicationRemoved {
        /// Why.
        pub message: String => with_message,
    }
}

record! {
    /// Master → AppClient: a worker that ran executors of the application was removed.
    pub struct WorkerRemoved {
        /// Worker id.
        pub id: String => with_id,
        /// Worker host.
        pub host: String => with_host,
        /// Why.
        pub message: String => with_message,
    }
}
