//! The driver's protocol cores, with no runtime: the scheduler backend ([`BackendCore`], Spark's
//! `CoarseGrainedSchedulerBackend.DriverEndpoint` with a small task scheduler, [`scheduler`]) that
//! executors register with and get tasks from, and the application client ([`AppClientCore`],
//! Spark's `StandaloneAppClient`) that registers the application with the masters and follows
//! what they say.
//!
//! Both are [`Core`](crate::node::Core)s. The application client's news of the cluster
//! ([`ClientEffect::Master`]) is the backend's input ([`BackendInput::Master`]); whoever runs them
//! carries it over. The protocol's rules are here (registration retries and their timing, the
//! task-size rule, retries of failed tasks); the runtime's settings (addresses, limits, security,
//! observers) are not.

mod app_client;
mod backend;
mod job;
pub mod scheduler;
mod status;

#[cfg(all(test, feature = "reference"))]
mod backend_tests;

use std::time::Duration;

pub use app_client::{
    AppClientCore, ClientConfig, ClientEffect, ClientInput, ClientLink, RequestFailed,
    ALL_MASTERS_UNRESPONSIVE,
};
pub use backend::{
    BackendCore, BackendEffect, BackendInput, DISASSOCIATED, STARVATION_TEXT, STARVATION_WARNING,
};
pub use job::{Job, JobFailed, JobId, JobProgress, JobResult};
pub use status::{starvation_reason, BackendStatus, ExecutorEnd, ExecutorSummary};

use crate::messages::deploy::{ExecutorAdded, ExecutorUpdated, WorkerRemoved};

/// The scheduler backend's rules and what it tells executors (the protocol's settings, no IO).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BackendConfig {
    /// Application name (`spark.app.name`).
    pub app_name: String,
    /// The host executors are told the driver is on (`spark.driver.host`).
    pub driver_host: String,
    /// The port executors are told the driver is on (`spark.driver.port`).
    pub driver_port: u16,
    /// Cores per task (`spark.task.cpus`).
    pub task_cpus: u32,
    /// Attempts of a task before its job fails (`spark.task.maxFailures`).
    pub max_task_failures: u32,
    /// Offers to every executor at this interval (`spark.scheduler.revive.interval`).
    pub revive_interval: Duration,
    /// Largest message, MiB (`spark.rpc.message.maxSize`), told to executors.
    pub max_message_size_mib: u32,
    /// Cores per executor (`spark.executor.cores`); `None`: all of a worker's.
    pub executor_cores: Option<u32>,
    /// Memory per executor, MiB (`spark.executor.memory`).
    pub executor_memory_mb: u32,
}

/// Why the backend takes no job.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SubmitRefused {
    /// The application is dead (removed by the master, or never registered), for this reason.
    Dead(String),
    /// The driver is stopping.
    Stopped,
}

/// What the application client tells the scheduler backend.
#[derive(Debug, Clone, PartialEq)]
pub enum MasterEvent {
    /// RegisteredApplication, from the master named.
    Registered {
        /// The application's id.
        app_id: String,
        /// The master that registered it.
        master: String,
    },
    /// MasterChanged: the master named is now the active one.
    MasterChanged {
        /// The new active master.
        master: String,
    },
    /// An executor was granted.
    ExecutorAdded(ExecutorAdded),
    /// An executor changed state.
    ExecutorUpdated(ExecutorUpdated),
    /// A worker with executors of the application was removed.
    WorkerRemoved(WorkerRemoved),
    /// The application is dead: removed by the master, or never registered.
    Dead(String),
}
