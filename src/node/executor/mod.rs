//! The executor's protocol core, as Spark's `CoarseGrainedExecutorBackend`, with no runtime.
//!
//! Its life is one phase after another: a bootstrap connection to the driver (RetrieveSparkAppConfig →
//! SparkAppConfig, then closed), a watch of its worker when it has one, the main connection
//! (RegisterExecutor ask → `true`, then LaunchedExecutor), then serving: LaunchTask, KillTask and
//! StopExecutor from the driver, StatusUpdate back. It ends on StopExecutor, when the driver's
//! connection ends or when its worker goes ([`ExecutorEffect::Exit`]).
//!
//! It runs no task: it asks its runtime to ([`ExecutorEffect::Run`], [`ExecutorEffect::Kill`]) and
//! is told when a task starts and how it ended ([`ExecutorInput::TaskStarted`],
//! [`ExecutorInput::TaskEnded`]); each becomes a StatusUpdate. A result too large for the main
//! connection fails its task with a message saying so, and the connection stays up.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::fmt;
use std::time::Instant;

use crate::messages::coarse::{
    KillTask, LaunchTask, LaunchedExecutor, RegisterExecutor, RetrieveSparkAppConfig,
    SparkAppConfig, StatusUpdate,
};
use crate::messages::{
    CoarseMessage, EndpointRef, ErrorDescription, Family, Payload, TaskDescription, TaskState,
};
use crate::node::{AskFailure, ConnId, ConnInput, ConnOutput, Core, Output};
use crate::wire::{
    decode_task, encode_failure, task_size_limit, Reply, TaskFailure, DEFAULT_MAX_FRAME_SIZE,
    SPARK_MAX_SIZE_KEY,
};

/// Who the executor is, as the worker started it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExecutorIdentity {
    /// The executor's id, given by the master.
    pub executor_id: String,
    /// The host it runs on, as it reports it.
    pub hostname: String,
    /// Cores it offers.
    pub cores: u32,
    /// The resource profile it belongs to (0, the default profile).
    pub resource_profile_id: i32,
    /// Whether it watches a worker (it was started by one).
    pub watch_worker: bool,
}

/// Which connection to the driver to dial.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Link {
    /// The short bootstrap connection, for the application's settings.
    Bootstrap,
    /// The main connection, with the frame limit the driver's `spark.rpc.message.maxSize` sets.
    Main {
        /// Its frame limit, in bytes.
        max_frame_size: usize,
    },
}

/// What the executor is told.
#[derive(Debug, Clone, PartialEq)]
#[allow(clippy::large_enum_variant)] // as the message enums: boxing would cost an allocation per message
pub enum ExecutorInput {
    /// Something happened on a connection to the driver (the bootstrap one or the main one).
    Conn(ConnInput<CoarseMessage, Link>),
    /// The watch of the worker is up.
    WorkerWatched,
    /// The worker's watch ended (or could not be opened): the worker is gone.
    WorkerLost {
        /// Why.
        reason: String,
    },
    /// A task began to run.
    TaskStarted {
        /// The task.
        task_id: i64,
    },
    /// A task ended: its result, or why it failed (a [`TaskFailure::killed`] when killed).
    TaskEnded {
        /// The task.
        task_id: i64,
        /// Its result or failure.
        outcome: Result<Payload, TaskFailure>,
    },
    /// A task's StatusUpdate could not be sent as it was (it does not fit a frame after all, or
    /// the connection's version lacks something of it): the task is reported FAILED instead,
    /// saying why, once.
    UpdateNotSent {
        /// The task.
        task_id: i64,
        /// The cores it took, as its update said.
        task_cpus: i32,
        /// Why it was not sent.
        error: String,
    },
}

/// Why an executor could not start.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StartFailed {
    /// A connection could not be made.
    Unreachable {
        /// Which (`the driver`, `the worker`).
        what: &'static str,
        /// Why.
        error: String,
    },
    /// An ask of the start-up got no answer.
    NoAnswer {
        /// The ask.
        ask: &'static str,
        /// Why.
        error: String,
    },
    /// The driver answered an ask with something else than the protocol says.
    UnexpectedReply {
        /// The ask.
        ask: &'static str,
        /// What came back.
        got: String,
    },
    /// The driver refused the registration (Spark: `Cannot register with driver`).
    Refused(String),
    /// A setting has a value the executor cannot use.
    BadSetting {
        /// The key.
        key: String,
        /// The value.
        value: String,
    },
}

/// Why a running executor ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ExecutorExit {
    /// The driver sent StopExecutor.
    Stopped,
    /// The connection to the driver ended.
    DriverLost(String),
    /// The worker's watch connection ended: the worker is gone.
    WorkerLost(String),
}

impl ExecutorExit {
    /// The process exit code: 0 when stopped, 1 otherwise (as Spark's `exitExecutor(1, …)`).
    pub fn code(&self) -> i32 {
        match self {
            ExecutorExit::Stopped => 0,
            ExecutorExit::DriverLost(_) | ExecutorExit::WorkerLost(_) => 1,
        }
    }
}

impl fmt::Display for ExecutorExit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ExecutorExit::Stopped => f.write_str("Driver commanded a shutdown"),
            ExecutorExit::DriverLost(why) => {
                write!(f, "Driver disassociated! Shutting down. ({why})")
            }
            ExecutorExit::WorkerLost(why) => {
                write!(f, "Lost connection to worker. Exiting. ({why})")
            }
        }
    }
}

/// What the executor wants done besides writing on its connections.
#[derive(Debug, Clone, PartialEq)]
pub enum ExecutorEffect {
    /// Dial the driver (then report [`ConnInput::Opened`] or
    /// [`ConnInput::DialFailed`]).
    Dial(Link),
    /// Open the watch of the worker (then report [`ExecutorInput::WorkerWatched`], and
    /// [`ExecutorInput::WorkerLost`] when it ends).
    WatchWorker,
    /// The executor is registered and serves the driver of this application.
    Registered {
        /// The application's settings, from the driver.
        app: SparkAppConfig,
    },
    /// Run a task (then report [`ExecutorInput::TaskStarted`] and [`ExecutorInput::TaskEnded`]).
    Run(Box<TaskDescription>),
    /// Ask a running task to stop (it ends with a [`TaskFailure::killed`]).
    Kill {
        /// The task.
        task_id: i64,
        /// Why, as the driver said.
        reason: String,
    },
    /// The executor is over: stop every task; the connections it closed are among the outputs
    /// before this one.
    Exit(Result<ExecutorExit, StartFailed>),
}

/// Where the executor is in its life.
#[derive(Debug, Clone, PartialEq)]
enum Phase {
    /// Dialling the bootstrap connection, then asking it for the application's settings.
    Bootstrap { conn: Option<ConnId> },
    /// Opening the worker's watch.
    Watching {
        app: SparkAppConfig,
        max_frame_size: usize,
    },
    /// Dialling the main connection, then registering on it.
    Registering {
        app: SparkAppConfig,
        max_frame_size: usize,
        conn: Option<ConnId>,
    },
    /// Registered: tasks from the driver, their status back.
    Serving {
        conn: ConnId,
        /// The largest result sent; a larger one fails its task.
        max_result: usize,
    },
    /// Over.
    Ended,
}

/// The ask ids the executor uses (one ask per connection).
const BOOTSTRAP_ASK: u64 = 1;
const REGISTER_ASK: u64 = 2;

/// The executor's core. See the module documentation.
#[derive(Debug)]
pub struct ExecutorCore {
    me: ExecutorIdentity,
    phase: Phase,
    /// Tasks launched and not ended, with the cores each takes.
    running: BTreeMap<i64, i32>,
    /// Tasks reported FAILED in place of an update that could not be sent.
    not_sent: BTreeSet<i64>,
    out: VecDeque<Output<CoarseMessage, ExecutorEffect>>,
    /// A bug planted on purpose (tests only; [`crate::node::plant`]).
    plant: crate::node::plant::Plant,
}

/// The frame limit the driver's `spark.rpc.message.maxSize` (MiB) sets, or the default.
pub fn max_frame_size(app: &SparkAppConfig) -> Result<usize, StartFailed> {
    let Some((_, value)) = app
        .spark_properties
        .iter()
        .find(|(k, _)| k == SPARK_MAX_SIZE_KEY)
    else {
        return Ok(DEFAULT_MAX_FRAME_SIZE);
    };
    // Spark takes 1 to 2047 MiB.
    match value.trim().parse::<usize>() {
        Ok(mib) if (1..=2047).contains(&mib) => Ok(mib * 1024 * 1024),
        _ => Err(StartFailed::BadSetting {
            key: SPARK_MAX_SIZE_KEY.into(),
            value: value.clone(),
        }),
    }
}

/// The text of a FAILED task whose result is too big to send: it names the task, the size, the
/// limit and the setting, as Spark's oversized-task text does.
pub fn result_too_large_message(task_id: i64, size: usize, max_allowed: usize) -> String {
    format!(
        "Result of task (TID {task_id}) was {size} bytes, which exceeds max allowed: \
         {SPARK_MAX_SIZE_KEY} ({max_allowed} bytes). Consider increasing {SPARK_MAX_SIZE_KEY} \
         or returning less data."
    )
}

impl ExecutorCore {
    /// An executor `me`: it asks to dial the driver's bootstrap connection.
    pub fn new(me: ExecutorIdentity) -> Self {
        let mut core = ExecutorCore {
            me,
            phase: Phase::Bootstrap { conn: None },
            running: BTreeMap::new(),
            not_sent: BTreeSet::new(),
            out: VecDeque::new(),
            plant: crate::node::plant::Plant::None,
        };
        core.effect(ExecutorEffect::Dial(Link::Bootstrap));
        core
    }

    /// Plants bug `plant` (tests only; [`crate::node::plant`]).
    #[cfg(feature = "testing")]
    pub fn plant(&mut self, plant: crate::node::plant::Plant) {
        self.plant = plant;
    }

    /// Who it is.
    pub fn identity(&self) -> &ExecutorIdentity {
        &self.me
    }

    /// Whether it is over.
    pub fn ended(&self) -> bool {
        self.phase == Phase::Ended
    }

    fn effect(&mut self, effect: ExecutorEffect) {
        self.out.push_back(Output::Effect(effect));
    }

    fn conn_out(&mut self, out: ConnOutput<CoarseMessage>) {
        self.out.push_back(Output::Conn(out));
    }

    fn exit(&mut self, exit: Result<ExecutorExit, StartFailed>) {
        if self.phase == Phase::Ended {
            return;
        }
        if let (Ok(ExecutorExit::Stopped), Phase::Serving { conn, .. }) = (&exit, &self.phase) {
            let conn = *conn;
            self.conn_out(ConnOutput::Close { conn, reason: None });
        }
        match &exit {
            Ok(exit) => tracing::info!("executor {}: {exit}", self.me.executor_id),
            Err(e) => tracing::debug!("executor {}: did not start: {e:?}", self.me.executor_id),
        }
        self.phase = Phase::Ended;
        self.running.clear();
        self.effect(ExecutorEffect::Exit(exit));
    }

    fn dialled(&mut self, link: Link, conn: ConnId) {
        match (&mut self.phase, link) {
            (Phase::Bootstrap { conn: slot }, Link::Bootstrap) => {
                *slot = Some(conn);
                let ask = RetrieveSparkAppConfig {
                    resource_profile_id: self.me.resource_profile_id,
                };
                self.conn_out(ConnOutput::Ask {
                    conn,
                    id: BOOTSTRAP_ASK,
                    message: CoarseMessage::RetrieveSparkAppConfig(ask),
                });
            }
            (Phase::Registering { conn: slot, .. }, Link::Main { .. }) => {
                *slot = Some(conn);
                let Ok(cores) = i32::try_from(self.me.cores) else {
                    let setting = StartFailed::BadSetting {
                        key: "cores".into(),
                        value: self.me.cores.to_string(),
                    };
                    self.exit(Err(setting));
                    return;
                };
                let register = RegisterExecutor {
                    executor_id: self.me.executor_id.clone(),
                    executor_ref: EndpointRef::client("Executor"),
                    hostname: self.me.hostname.clone(),
                    cores,
                    log_urls: Default::default(),
                    attributes: Default::default(),
                    resources: Default::default(),
                    resource_profile_id: self.me.resource_profile_id,
                };
                self.conn_out(ConnOutput::Ask {
                    conn,
                    id: REGISTER_ASK,
                    message: CoarseMessage::RegisterExecutor(register),
                });
            }
            // A connection it no longer waits for: closed again.
            _ => self.conn_out(ConnOutput::Close { conn, reason: None }),
        }
    }

    fn answer(&mut self, conn: ConnId, id: u64, answer: Result<Reply<CoarseMessage>, AskFailure>) {
        match std::mem::replace(&mut self.phase, Phase::Ended) {
            Phase::Bootstrap { conn: Some(c) } if c == conn && id == BOOTSTRAP_ASK => {
                self.phase = Phase::Bootstrap { conn: Some(c) };
                self.conn_out(ConnOutput::Close { conn, reason: None });
                let app = match answer {
                    Ok(Reply::Message(CoarseMessage::SparkAppConfig(app))) => app,
                    other => {
                        self.exit(Err(unanswered("RetrieveSparkAppConfig", other)));
                        return;
                    }
                };
                let max_frame_size = match max_frame_size(&app) {
                    Ok(n) => n,
                    Err(e) => {
                        self.exit(Err(e));
                        return;
                    }
                };
                if self.me.watch_worker {
                    self.phase = Phase::Watching {
                        app,
                        max_frame_size,
                    };
                    self.effect(ExecutorEffect::WatchWorker);
                } else {
                    self.main(app, max_frame_size);
                }
            }
            Phase::Registering {
                app,
                max_frame_size,
                conn: Some(c),
            } if c == conn && id == REGISTER_ASK => {
                self.phase = Phase::Registering {
                    app: app.clone(),
                    max_frame_size,
                    conn: Some(c),
                };
                match answer {
                    Ok(Reply::Bool(true)) => {}
                    Ok(Reply::Bool(false)) => {
                        self.exit(Err(StartFailed::Refused(
                            "the driver answered false".into(),
                        )));
                        return;
                    }
                    Err(AskFailure::Failed(error)) => {
                        self.exit(Err(StartFailed::Refused(error.message)));
                        return;
                    }
                    other => {
                        self.exit(Err(unanswered("RegisterExecutor", other)));
                        return;
                    }
                }
                let launched = LaunchedExecutor {
                    executor_id: self.me.executor_id.clone(),
                };
                self.conn_out(ConnOutput::Send {
                    conn,
                    message: CoarseMessage::LaunchedExecutor(launched),
                });
                let app_name = app
                    .spark_properties
                    .iter()
                    .find(|(k, _)| k == "spark.app.name")
                    .map_or("?", |(_, v)| v.as_str());
                tracing::info!(
                    "executor {}: registered with the driver of {app_name}",
                    self.me.executor_id
                );
                self.phase = Phase::Serving {
                    conn,
                    max_result: task_size_limit(max_frame_size),
                };
                self.effect(ExecutorEffect::Registered { app });
            }
            other => self.phase = other,
        }
    }

    /// Dials the main connection, with the frame limit the driver set.
    fn main(&mut self, app: SparkAppConfig, max_frame_size: usize) {
        self.phase = Phase::Registering {
            app,
            max_frame_size,
            conn: None,
        };
        self.effect(ExecutorEffect::Dial(Link::Main { max_frame_size }));
    }

    fn message(&mut self, conn: ConnId, message: CoarseMessage) {
        if !matches!(self.phase, Phase::Serving { conn: c, .. } if c == conn) {
            tracing::debug!(
                "executor {}: ignoring {} before it serves",
                self.me.executor_id,
                message.name()
            );
            return;
        }
        match message {
            CoarseMessage::LaunchTask(launch) => self.launch(&launch),
            CoarseMessage::KillTask(kill) => self.kill(kill),
            CoarseMessage::StopExecutor(_) => self.exit(Ok(ExecutorExit::Stopped)),
            other => tracing::debug!(
                "executor {}: ignoring {}",
                self.me.executor_id,
                other.name()
            ),
        }
    }

    fn launch(&mut self, launch: &LaunchTask) {
        let task = match decode_task(&launch.data.0) {
            Ok(task) => task,
            Err(e) => {
                // Without a task id there is nobody to report to: as Spark's endpoint, log it.
                tracing::error!(
                    "executor {}: undecodable LaunchTask ({} bytes): {e}",
                    self.me.executor_id,
                    launch.data.len()
                );
                return;
            }
        };
        if self.running.contains_key(&task.task_id) {
            tracing::error!(
                "executor {}: task {} is already running",
                self.me.executor_id,
                task.task_id
            );
            return;
        }
        self.running.insert(task.task_id, task.cpus);
        self.effect(ExecutorEffect::Run(Box::new(task)));
    }

    fn kill(&mut self, kill: KillTask) {
        if !self.running.contains_key(&kill.task_id) {
            tracing::debug!(
                "executor {}: KillTask for task {} not running here",
                self.me.executor_id,
                kill.task_id
            );
            return;
        }
        tracing::info!(
            "executor {}: killing task {} ({})",
            self.me.executor_id,
            kill.task_id,
            kill.reason
        );
        self.effect(ExecutorEffect::Kill {
            task_id: kill.task_id,
            reason: kill.reason,
        });
    }

    fn ask(&mut self, conn: ConnId, id: u64, message: CoarseMessage) {
        let out = match message {
            // A task thread's stack is not ours to read: answer that there is none.
            CoarseMessage::TaskThreadDump(_) => ConnOutput::Reply {
                conn,
                id,
                reply: Reply::ThreadDump(None),
            },
            other => ConnOutput::Fail {
                conn,
                id,
                error: ErrorDescription::new(
                    "org.apache.spark.SparkException",
                    format!(
                        "Unsupported message {} received by the executor",
                        other.name()
                    ),
                ),
            },
        };
        self.conn_out(out);
    }

    /// A task's StatusUpdate on the main connection.
    fn update(&mut self, task_id: i64, cpus: i32, state: TaskState, data: Payload) {
        let Phase::Serving { conn, .. } = self.phase else {
            return;
        };
        let update = StatusUpdate {
            executor_id: self.me.executor_id.clone(),
            task_id,
            state,
            data,
            task_cpus: cpus,
            resources: Default::default(),
        };
        if self.plant == crate::node::plant::Plant::ReportsTwice && state.is_finished() {
            self.conn_out(ConnOutput::Send {
                conn,
                message: CoarseMessage::StatusUpdate(update.clone()),
            });
        }
        self.conn_out(ConnOutput::Send {
            conn,
            message: CoarseMessage::StatusUpdate(update),
        });
    }

    fn task_ended(&mut self, task_id: i64, outcome: Result<Payload, TaskFailure>) {
        let Phase::Serving { max_result, .. } = self.phase else {
            return;
        };
        let Some(cpus) = self.running.remove(&task_id) else {
            return;
        };
        let (state, data) = match outcome {
            Ok(result) if result.len() >= max_result => (
                TaskState::Failed,
                encode_failure(&TaskFailure::new(
                    "org.apache.spark.SparkException",
                    result_too_large_message(task_id, result.len(), max_result),
                )),
            ),
            Ok(result) => (TaskState::Finished, result),
            Err(f) if f.is_kill() => (TaskState::Killed, encode_failure(&f)),
            Err(f) => (TaskState::Failed, encode_failure(&f)),
        };
        self.update(task_id, cpus, state, data);
    }

    /// An update of `task_id` was not sent: FAILED in its place, saying why (once: a failure
    /// report that cannot be sent either is logged).
    fn not_sent(&mut self, task_id: i64, cpus: i32, error: String) {
        if !self.not_sent.insert(task_id) {
            tracing::error!(
                "executor {}: no status update of task {task_id} can be sent: {error}",
                self.me.executor_id
            );
            return;
        }
        let why = TaskFailure::new(
            "org.apache.spark.SparkException",
            format!("the task's status update could not be sent: {error}"),
        );
        self.update(task_id, cpus, TaskState::Failed, encode_failure(&why));
    }

    fn closed(&mut self, conn: ConnId, reason: String) {
        // A start-up connection that closes before its ask is answered ends the executor, as
        // Spark's CoarseGrainedExecutorBackend exits when it cannot fetch the driver's
        // configuration or register: its worker then reports it and the master may launch
        // another. Waiting for the ask's failure instead left an executor that neither registered
        // nor exited when the close came first (the simulator's seed 29237 of delays, resets and
        // fills: tests/data/sim/found-executor-bootstrap-reset.txt).
        let ask = match &self.phase {
            Phase::Serving { conn: c, .. } if *c == conn => {
                self.exit(Ok(ExecutorExit::DriverLost(reason)));
                return;
            }
            Phase::Bootstrap { conn: Some(c) } if *c == conn => "RetrieveSparkAppConfig",
            Phase::Registering { conn: Some(c), .. } if *c == conn => "RegisterExecutor",
            _ => return,
        };
        self.exit(Err(StartFailed::NoAnswer {
            ask,
            error: format!("the connection closed: {reason}"),
        }));
    }
}

/// Why an ask of the start-up did not get the answer the protocol says.
fn unanswered(ask: &'static str, got: Result<Reply<CoarseMessage>, AskFailure>) -> StartFailed {
    match got {
        Ok(other) => StartFailed::UnexpectedReply {
            ask,
            got: format!("{other:?}"),
        },
        Err(AskFailure::Failed(error)) => StartFailed::NoAnswer {
            ask,
            error: format!("{}: {}", error.class_name, error.message),
        },
        Err(AskFailure::Lost(error)) => StartFailed::NoAnswer { ask, error },
    }
}

impl Core for ExecutorCore {
    type Message = CoarseMessage;
    type Input = ExecutorInput;
    type Effect = ExecutorEffect;

    fn handle(&mut self, _now: Instant, input: ExecutorInput) {
        if self.phase == Phase::Ended {
            return;
        }
        match input {
            ExecutorInput::Conn(ConnInput::Opened { conn, origin, .. }) => {
                self.dialled(origin, conn)
            }
            ExecutorInput::Conn(ConnInput::DialFailed { error, .. }) => {
                self.exit(Err(StartFailed::Unreachable {
                    what: "the driver",
                    error,
                }))
            }
            ExecutorInput::WorkerWatched => {
                if let Phase::Watching {
                    app,
                    max_frame_size,
                } = std::mem::replace(&mut self.phase, Phase::Ended)
                {
                    self.main(app, max_frame_size);
                }
            }
            ExecutorInput::WorkerLost { reason } => {
                let exit = match self.phase {
                    Phase::Watching { .. } => Err(StartFailed::Unreachable {
                        what: "the worker",
                        error: reason,
                    }),
                    _ => Ok(ExecutorExit::WorkerLost(reason)),
                };
                self.exit(exit);
            }
            ExecutorInput::Conn(ConnInput::Message { conn, message }) => {
                self.message(conn, message)
            }
            ExecutorInput::Conn(ConnInput::Ask { conn, id, message }) => {
                self.ask(conn, id, message)
            }
            ExecutorInput::Conn(ConnInput::Answer { conn, id, answer }) => {
                self.answer(conn, id, answer)
            }
            ExecutorInput::Conn(ConnInput::Closed { conn, reason }) => self.closed(conn, reason),
            ExecutorInput::TaskStarted { task_id } => {
                if let Some(&cpus) = self.running.get(&task_id) {
                    self.update(task_id, cpus, TaskState::Running, Payload::default());
                }
            }
            ExecutorInput::TaskEnded { task_id, outcome } => self.task_ended(task_id, outcome),
            ExecutorInput::UpdateNotSent {
                task_id,
                task_cpus,
                error,
            } => self.not_sent(task_id, task_cpus, error),
        }
    }

    fn handle_timeout(&mut self, _now: Instant) {}

    /// The executor keeps no timer of its own: the driver's connection and the worker's watch
    /// tell it when they end.
    fn poll_timeout(&self) -> Option<Instant> {
        None
    }

    fn poll(&mut self) -> Option<Output<CoarseMessage, ExecutorEffect>> {
        self.out.pop_front()
    }
}

impl From<ConnInput<CoarseMessage, Link>> for ExecutorInput {
    fn from(input: ConnInput<CoarseMessage, Link>) -> ExecutorInput {
        ExecutorInput::Conn(input)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::messages::ResourceProfile;

    fn app(props: &[(&str, &str)]) -> SparkAppConfig {
        SparkAppConfig {
            spark_properties: props
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            io_encryption_key: None,
            hadoop_delegation_creds: None,
            resource_profile: ResourceProfile::default_with(Some(1), 1024),
            log_level: None,
        }
    }

    /// An executor core registered with its driver on connection 1, its outputs so far taken.
    fn serving() -> ExecutorCore {
        let me = ExecutorIdentity {
            executor_id: "1".into(),
            hostname: "127.0.0.1".into(),
            cores: 1,
            resource_profile_id: ResourceProfile::DEFAULT_ID,
            watch_worker: false,
        };
        let peer = crate::node::PeerInfo {
            role: crate::wire::handshake::Role::Driver,
            id: "driver".into(),
            addr: "127.0.0.1:40000".into(),
            version: crate::messages::Version::V2,
            admin: false,
            max_frame_size: DEFAULT_MAX_FRAME_SIZE,
        };
        let now = Instant::now();
        let mut core = ExecutorCore::new(me);
        let config = CoarseMessage::SparkAppConfig(app(&[]));
        let main = Link::Main {
            max_frame_size: DEFAULT_MAX_FRAME_SIZE,
        };
        for input in [
            ConnInput::Opened {
                conn: 0,
                peer: peer.clone(),
                origin: Link::Bootstrap,
            },
            ConnInput::Answer {
                conn: 0,
                id: BOOTSTRAP_ASK,
                answer: Ok(Reply::Message(config)),
            },
            ConnInput::Opened {
                conn: 1,
                peer,
                origin: main,
            },
            ConnInput::Answer {
                conn: 1,
                id: REGISTER_ASK,
                answer: Ok(Reply::Bool(true)),
            },
        ] {
            core.handle(now, input.into());
        }
        while core.poll().is_some() {}
        core
    }

    /// The StatusUpdates among `core`'s outputs: task, state and failure message.
    fn updates(core: &mut ExecutorCore) -> Vec<(i64, TaskState, String)> {
        let mut seen = Vec::new();
        while let Some(out) = core.poll() {
            if let Output::Conn(ConnOutput::Send {
                message: CoarseMessage::StatusUpdate(u),
                ..
            }) = out
            {
                let message = crate::wire::decode_failure(&u.data.0).message;
                seen.push((u.task_id, u.state, message));
            }
        }
        seen
    }

    #[test]
    fn an_update_not_sent_is_reported_failed_once_saying_why() {
        let mut core = serving();
        let not_sent = |task_id| ExecutorInput::UpdateNotSent {
            task_id,
            task_cpus: 1,
            error: "the message is larger than a frame".into(),
        };
        core.handle(Instant::now(), not_sent(7));
        let seen = updates(&mut core);
        assert_eq!(seen.len(), 1, "{seen:?}");
        assert_eq!((seen[0].0, seen[0].1), (7, TaskState::Failed));
        assert_eq!(
            seen[0].2,
            "the task's status update could not be sent: the message is larger than a frame"
        );
        // Its FAILED update could not be sent either: nothing more is tried for that task.
        core.handle(Instant::now(), not_sent(7));
        assert_eq!(updates(&mut core), Vec::new());
        // Another task's is reported.
        core.handle(Instant::now(), not_sent(8));
        assert_eq!(updates(&mut core).len(), 1);
    }

    #[test]
    fn the_frame_limit_follows_the_drivers_max_size_in_mib() {
        assert_eq!(max_frame_size(&app(&[])).ok(), Some(128 * 1024 * 1024));
        assert_eq!(
            max_frame_size(&app(&[(SPARK_MAX_SIZE_KEY, "1")])).ok(),
            Some(1024 * 1024)
        );
        for bad in ["0", "2048", "x", "-1"] {
            assert!(max_frame_size(&app(&[(SPARK_MAX_SIZE_KEY, bad)])).is_err());
        }
    }
}
