//! The reference executor, the protocol core of `node::executor` (Spark's
//! `CoarseGrainedExecutorBackend`) on the generic driver (`reference::runtime`): what a
//! worker launches with `sparkwire executor --driver-url … --executor-id … --hostname … --cores …
//! --app-id … --worker-url …`.
//!
//! Like Spark's, it opens a short bootstrap connection to the driver (RetrieveSparkAppConfig →
//! SparkAppConfig, then closes it), then its main connection (RegisterExecutor ask → `true`,
//! LaunchedExecutor, then LaunchTask / KillTask / StopExecutor from the driver and StatusUpdate
//! back), and a watch connection to its worker that carries no message and serves to notice the
//! worker dying. It never listens.
//!
//! Tasks run through a [`TaskRunner`] on task threads of the executor's own, which wait for the
//! next task rather than being started for each (and a new one is started when a task arrives
//! while all are busy, so every task launched runs at once, as in Spark's executor); the event
//! loop that reads the driver's messages runs only a task the runner says is brief, so a KillTask is
//! handled while tasks run. Each task's thread reports its start and its end to the driver's
//! inbox; the core makes them StatusUpdate RUNNING, then FINISHED with its result, FAILED with its
//! error or KILLED after a KillTask, and the updates that arrive together leave in one write. The
//! executor needs no more than a current-thread tokio runtime, which is what `sparkwire executor`
//! runs it on. A result too big for a frame is reported FAILED with a message saying so, and the
//! connection stays up. The executor ends on StopExecutor ([`ExecutorExit::Stopped`]), when its
//! driver goes away or when its worker does.
//!
//! ```no_run
//! use std::sync::Arc;
//! use sparkwire::reference::executor::{run_executor, ExecutorConfig};
//! use sparkwire::reference::task::BuiltinRunner;
//!
//! # async fn demo() -> Result<(), sparkwire::reference::executor::ExecutorError> {
//! let config = ExecutorConfig::new("spark://CoarseGrainedScheduler@127.0.0.1:40123", "0", 1);
//! let exit = run_executor(config, Arc::new(BuiltinRunner)).await?;
//! std::process::exit(exit.code());
//! # }
//! ```

mod connect;
mod io;
mod threads;
mod updates;

use std::sync::Arc;
use std::time::Duration;

use crate::connection::ConnectionError;
use crate::messages::ResourceProfile;
use crate::node::executor::ExecutorExit;
use crate::node::url::UrlError;
use crate::reference::task::TaskRunner;

/// How an executor is started: the arguments a worker passes to `sparkwire executor`.
#[derive(Debug, Clone)]
pub struct ExecutorConfig {
    /// The driver's address, `spark://CoarseGrainedScheduler@host:port`.
    pub driver_url: String,
    /// The executor's id, given by the master.
    pub executor_id: String,
    /// The host the executor runs on, as it reports it.
    pub hostname: String,
    /// Cores the executor offers.
    pub cores: u32,
    /// The application's id.
    pub app_id: String,
    /// The worker to watch, `spark://Worker@host:port`; `None` runs without a worker.
    pub worker_url: Option<String>,
    /// The resource profile the executor belongs to (0, the default profile).
    pub resource_profile_id: i32,
    /// How long to try reaching the driver and the worker.
    pub connect_timeout: Duration,
    /// The shared secret and TLS of its connections to the driver and the worker.
    pub security: crate::connection::Security,
}

impl ExecutorConfig {
    /// An executor `executor_id` with `cores` cores for the driver at `driver_url`, on
    /// `127.0.0.1`, application `app`, without a worker to watch.
    pub fn new(driver_url: impl Into<String>, executor_id: impl Into<String>, cores: u32) -> Self {
        ExecutorConfig {
            driver_url: driver_url.into(),
            executor_id: executor_id.into(),
            hostname: "127.0.0.1".into(),
            cores,
            app_id: "app".into(),
            worker_url: None,
            resource_profile_id: ResourceProfile::DEFAULT_ID,
            connect_timeout: Duration::from_secs(30),
            security: crate::connection::Security::default(),
        }
    }

    /// The id the executor gives in its handshakes: `app-id/executor-id`.
    pub fn handshake_id(&self) -> String {
        format!("{}/{}", self.app_id, self.executor_id)
    }
}

/// Why an executor could not start.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ExecutorError {
    /// An address is malformed.
    #[error(transparent)]
    Url(#[from] UrlError),
    /// The driver or worker could not be reached.
    #[error("cannot connect to {url}: {message}")]
    Connect {
        /// The address.
        url: String,
        /// Why.
        message: String,
    },
    /// A connection failed during start-up.
    #[error("{step} failed: {source}")]
    Connection {
        /// What was being done.
        step: &'static str,
        /// The error.
        source: ConnectionError,
    },
    /// The driver answered an ask with something else than the protocol says.
    #[error("unexpected answer to {ask}: {got}")]
    UnexpectedReply {
        /// The ask.
        ask: &'static str,
        /// What came back.
        got: String,
    },
    /// An ask of the start-up got no answer (its connection ended first, or the driver failed
    /// it).
    #[error("no answer to {ask}: {error}")]
    NoAnswer {
        /// The ask.
        ask: &'static str,
        /// Why.
        error: String,
    },
    /// The driver refused the registration (Spark: `Cannot register with driver`).
    #[error("Cannot register with driver: {0}")]
    Refused(String),
    /// The driver's configuration has a value the executor cannot use.
    #[error("invalid setting from the driver: {key}={value}")]
    BadSetting {
        /// The key.
        key: String,
        /// The value.
        value: String,
    },
}

impl ExecutorError {
    /// The process exit code for a failed start: 1.
    pub fn code(&self) -> i32 {
        1
    }
}

/// Runs an executor until it is stopped or loses its driver or worker: bootstrap, registration,
/// then tasks through `runner`.
pub async fn run_executor(
    config: ExecutorConfig,
    runner: Arc<dyn TaskRunner>,
) -> Result<ExecutorExit, ExecutorError> {
    io::run(&config, runner).await
}
