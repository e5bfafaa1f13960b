//! What the worker core takes in and gives out: a leaf module, imported by the core and by
//! whatever drives it (the async runtime, the in-memory cluster), importing neither.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use crate::messages::{Addr, DeployMessage, Resources};
use crate::node::ConnInput;

/// Spark's registration attempts before a worker gives up (6 at the initial interval, 10 at the
/// prolonged one).
pub const REGISTRATION_RETRIES: u32 = 16;

/// Attempts made at the initial interval before the prolonged one.
pub const INITIAL_REGISTRATION_RETRIES: u32 = 6;

/// The variable that names a launched process's secret file.
pub const SECRET_FILE_ENV: &str = "SPARKWIRE_SECRET_FILE";

/// The variable that names the TLS certificate authorities' file a launched process trusts.
pub const TLS_CA_ENV: &str = "SPARKWIRE_TLS_CA";

/// The secret file's name in the launched process's work directory.
pub const SECRET_FILE_NAME: &str = ".sparkwire-secret";

/// The worker's protocol rules and what it offers. Where it listens, its limits, security and
/// web UI are its runtime's (`reference::worker`).
#[derive(Debug, Clone)]
pub struct Config {
    /// The masters to register with (one, or several for high availability).
    pub masters: Vec<Addr>,
    /// Cores offered.
    pub cores: i32,
    /// Memory offered, MiB.
    pub memory: i32,
    /// Custom resources offered, by name.
    pub resources: Resources,
    /// The master's worker timeout; heartbeats go every quarter of it (Spark: 60 s, so 15 s).
    pub worker_timeout: Duration,
    /// Interval between registration attempts at first; fuzzed by ±50 % and six times longer
    /// after six attempts, as Spark does (Spark: 10 s).
    pub register_retry: Duration,
    /// Where executors and drivers run: `<work_dir>/<app-id>/<exec-id>/`, `<work_dir>/<driver-id>/`.
    pub work_dir: PathBuf,
    /// The worker hands a secret to what it launches (a private file in the process's directory,
    /// named by [`SECRET_FILE_ENV`]).
    pub hands_secret: bool,
    /// The TLS certificate authorities' file handed to launched processes (as [`TLS_CA_ENV`]).
    pub launch_tls_ca: Option<PathBuf>,
}

/// Why a worker stopped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WorkerExit {
    /// Stopped by its owner.
    Stopped,
    /// A master refused the registration (RegisterWorkerFailed).
    RegistrationFailed(String),
    /// No master answered in [`REGISTRATION_RETRIES`] attempts.
    GaveUp,
}

impl std::fmt::Display for WorkerExit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            WorkerExit::Stopped => f.write_str("stopped on request"),
            WorkerExit::RegistrationFailed(m) => write!(f, "registration failed: {m}"),
            WorkerExit::GaveUp => f.write_str("all masters are unresponsive; gave up"),
        }
    }
}

/// Why a connection to or from a master exists.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Purpose {
    /// The worker dialled this master to register.
    Registration(Addr),
    /// A master or a UI dialled the worker.
    Inbound,
}

/// What a process runs for.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum RunKey {
    /// An application's executor.
    Executor(String, i32),
    /// A driver.
    Driver(String),
}

impl std::fmt::Display for RunKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RunKey::Executor(app, id) => write!(f, "executor {app}/{id}"),
            RunKey::Driver(id) => write!(f, "driver {id}"),
        }
    }
}

/// How a process ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ended {
    /// It exited (or was killed) with this status.
    Exited {
        /// Exit code; 128 + the signal for a process ended by a signal, as the JVM reports it.
        code: i32,
        /// Killed on the worker's request.
        killed: bool,
        /// The last line the process wrote on its standard error, if any: its own word on why
        /// it ended (carried in ExecutorStateChanged's message).
        last_line: Option<String>,
    },
    /// It could not be started (again).
    Failed(String),
}

/// What the worker core is told.
#[derive(Debug)]
#[allow(clippy::large_enum_variant)] // as the message enums: boxing would cost an allocation per message
pub enum Input {
    /// Something happened on a connection: a master dialled to register with
    /// ([`Purpose::Registration`], whose dial may fail), or one that dialled the worker.
    Conn(ConnInput<DeployMessage, Purpose>),
    /// A process of [`Effect::Start`] runs.
    Started {
        /// Which.
        key: RunKey,
    },
    /// A process of [`Effect::Start`] could not be started, and why.
    StartFailed {
        /// Which.
        key: RunKey,
        /// Why.
        reason: String,
    },
    /// A process ended.
    Ended {
        /// Which.
        key: RunKey,
        /// How.
        ended: Ended,
    },
}

/// A process to start: everything decided, the launch policy applied.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Launch {
    /// What it runs for.
    pub key: RunKey,
    /// The program, canonical and allowed.
    pub program: PathBuf,
    /// Its arguments, placeholders filled in.
    pub args: Vec<String>,
    /// Its whole environment.
    pub env: BTreeMap<String, String>,
    /// Its working directory (created, with `stdout` and `stderr` files, before it starts).
    pub dir: PathBuf,
    /// The worker's secret goes into a private file in `dir` first (its path is in `env`).
    pub write_secret: bool,
    /// A Spark executor of a worker with a secret: the runner hands it the secret as Spark's
    /// worker does, in `_SPARK_AUTH_SECRET` (set at spawn, never in `env`, on a command line or
    /// in a log). The driver's Java options bring `spark.authenticate=true`.
    pub spark_secret: bool,
    /// Started again when it fails (a supervised driver).
    pub supervise: bool,
    /// Written at the start of its `stderr` before it starts: Spark's executors get Spark's
    /// "Spark Executor Command: …" header ([`spark::JavaCommand::stderr_header`]).
    ///
    /// [`spark::JavaCommand::stderr_header`]: super::spark::JavaCommand::stderr_header
    pub stderr_header: Option<String>,
}

/// What the worker core wants done besides writing on its connections.
#[derive(Debug, Clone, PartialEq)]
pub enum Effect {
    /// Dial this master to register; reported as [`ConnInput::Opened`] or
    /// [`ConnInput::DialFailed`] (origin [`Purpose::Registration`]).
    Dial(Addr),
    /// Start a process; reported as [`Input::Started`] or [`Input::StartFailed`] at once.
    Start(Launch),
    /// Kill a process; its end is reported as [`Input::Ended`].
    Kill(RunKey),
}

impl From<ConnInput<DeployMessage, Purpose>> for Input {
    fn from(input: ConnInput<DeployMessage, Purpose>) -> Input {
        Input::Conn(input)
    }
}
