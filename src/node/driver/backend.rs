//! The scheduler backend's core (Spark's `CoarseGrainedSchedulerBackend.DriverEndpoint` with its
//! task scheduler): a [`Core`] fed [`BackendInput`]s with the time, whose outputs are frames on the
//! executors' connections ([`ConnOutput`]) and job progress and outcomes ([`BackendEffect`]).
//!
//! It owns the executors, the jobs and the [`TaskScheduler`]; what the scheduler decides comes out
//! of [`TaskScheduler::poll_event`] and is acted on in [`BackendCore::settle`], the one place that
//! turns scheduler events into outputs. It holds the one task-size rule: a LaunchTask whose
//! serialized task does not fit the executor's connection is never written, and its job fails with
//! Spark's text. A connection whose send failed is an executor lost ([`BackendInput::Lost`]): its
//! tasks run again elsewhere, as Spark does for a disassociated executor.

use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::job::{Job, JobFailed, JobId, JobProgress, JobResult};
use super::scheduler::{Offer, SchedulerEvent, TaskLaunch, TaskScheduler};
use super::status::{BackendStatus, ExecutorEnd, ExecutorSummary};
use super::{BackendConfig, MasterEvent, SubmitRefused};
use crate::messages::coarse::{
    KillTask, LaunchTask, RegisterExecutor, SparkAppConfig, StatusUpdate, StopExecutor,
};
use crate::messages::{
    CoarseMessage, ErrorDescription, ExecutorState, Family, Payload, ResourceProfile,
    TaskDescription, TaskState,
};
use crate::node::authz::{self, Refusal};
use crate::node::{ConnId, ConnInput, ConnOutput, Core, Output};
use crate::wire::encode_task;
use crate::wire::handshake::Role;
use crate::wire::Reply;
use crate::wire::SPARK_MAX_SIZE_KEY;
use crate::wire::{check_task_size, task_size_limit, TaskRef};

/// Spark's reason for an executor whose connection dropped.
pub const DISASSOCIATED: &str = "Remote RPC client disassociated. Likely due to containers \
                                 exceeding thresholds, or network issues. Check driver logs \
                                 for WARN messages.";

/// Spark warns about serialized tasks larger than this (`TaskSetManager.TASK_SIZE_TO_WARN_KIB`).
const TASK_SIZE_TO_WARN_KIB: usize = 1000;

/// How often Spark warns that tasks wait for resources.
pub const STARVATION_WARNING: Duration = Duration::from_secs(15);

/// Spark's warning (TaskSchedulerImpl) when no resource was granted in that time.
pub const STARVATION_TEXT: &str = "Initial job has not accepted any resources; check your \
     cluster UI to ensure that workers are registered and have sufficient resources";

/// Executor ends kept in [`BackendStatus::executor_ends`].
const RETAINED_EXECUTOR_ENDS: usize = 100;

/// What the scheduler backend is told.
#[derive(Debug)]
#[allow(clippy::large_enum_variant)] // as the message enums: boxing would cost an allocation per message
pub enum BackendInput {
    /// Something happened on an executor's connection (the backend accepts them, dials none,
    /// and asks nothing).
    Conn(ConnInput<CoarseMessage, ()>),
    /// A send on the connection failed or waited too long: the executor on it is lost now, its
    /// tasks run elsewhere; the connection is aborted.
    Lost {
        /// Which connection.
        conn: ConnId,
        /// Why, for the log.
        reason: String,
    },
    /// A message the connection refused to write without closing (it could not be encoded, or
    /// the connection's inspector refused it): a LaunchTask's task fails with this text, as a
    /// task too large does.
    NotSent {
        /// Which connection.
        conn: ConnId,
        /// The message, as the core wrote it.
        message: CoarseMessage,
        /// Why.
        error: String,
    },
    /// News from the application client.
    Master(MasterEvent),
    /// Cancel a job.
    Cancel(JobId),
    /// Executors the caller asked the master to kill: they get no more tasks.
    KillExecutors(Vec<String>),
    /// Stop: jobs fail, executors get StopExecutor.
    Stop,
}

/// What the scheduler backend wants done besides writing on its connections.
#[derive(Debug, PartialEq)]
pub enum BackendEffect {
    /// A job progressed.
    Progress {
        /// The job.
        job: JobId,
        /// How far it is.
        progress: JobProgress,
    },
    /// A job ended.
    JobEnded {
        /// The job.
        job: JobId,
        /// Its result, or why it failed.
        outcome: Result<JobResult, JobFailed>,
    },
    /// A message from a peer was refused (SPEC §14.3): the runtime logs it, within its limit of
    /// such lines; the connection's answer or close is among the core's outputs.
    Refused {
        /// Which connection.
        conn: ConnId,
        /// The peer's address.
        addr: String,
        /// The peer's role.
        role: Role,
        /// The executor registered on it, or the id of its hello.
        id: String,
        /// The error kind (`NotOnRoute`, `NotOwner`, …).
        kind: &'static str,
        /// The reason.
        reason: String,
    },
}

type Out = Output<CoarseMessage, BackendEffect>;

struct ExecutorData {
    conn: ConnId,
    host: String,
    cores: u32,
    free_cores: u32,
    ready: bool,
    pending_removal: bool,
}

struct ConnState {
    executor: Option<String>,
    peer: String,
    addr: String,
    role: Role,
    max_task_size: usize,
    /// A one-way message was refused, or a send failed: nothing more is taken from it.
    refused: bool,
}

struct JobState {
    job: Arc<dyn Job>,
    results: Vec<Option<Payload>>,
    progress: JobProgress,
    started: Instant,
    warned_size: bool,
}

/// Which executors' free cores to offer when the current input is handled.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Offers {
    None,
    One(String),
    All,
}

/// The scheduler backend's core. See the module documentation.
pub struct BackendCore {
    config: BackendConfig,
    scheduler: TaskScheduler,
    executors: BTreeMap<String, ExecutorData>,
    conns: BTreeMap<ConnId, ConnState>,
    closed_conns: usize,
    jobs: BTreeMap<JobId, JobState>,
    next_job: JobId,
    app_id: Option<String>,
    workers: BTreeMap<String, String>,
    started: Instant,
    now: Instant,
    first_executor_after: Option<Duration>,
    tasks_launched: u64,
    tasks_finished: u64,
    tasks_failed: u64,
    executors_lost: u64,
    dead: Option<String>,
    /// Why the last executor that never reached the driver failed on its worker (a refused
    /// launch, say), told along with the application's removal.
    last_launch_failure: Option<String>,
    stopping: bool,
    starved_since: Option<Instant>,
    master: Option<String>,
    master_changes: u32,
    executor_ends: VecDeque<ExecutorEnd>,
    offers: Offers,
    /// Inputs are being handled as one batch ([`BackendCore::begin_batch`]): the offers they call
    /// for wait for [`BackendCore::end_batch`].
    batching: bool,
    next_revive: Instant,
    revive_interval: Duration,
    out: VecDeque<Out>,
    /// The routes [`authz::route`] allowed so far (peer's role, message, asked): the protocol's
    /// routes do not change, and the lookup in the definition is the costlier part of every
    /// StatusUpdate's check.
    routes: Vec<(Role, &'static str, bool)>,
}

impl Core for BackendCore {
    type Message = CoarseMessage;
    type Input = BackendInput;
    type Effect = BackendEffect;

    fn handle(&mut self, now: Instant, input: BackendInput) {
        self.now = now;
        match input {
            BackendInput::Conn(ConnInput::Opened { conn, peer, .. }) => {
                self.conns.insert(
                    conn,
                    ConnState {
                        executor: None,
                        peer: peer.id,
                        addr: peer.addr,
                        role: peer.role,
                        max_task_size: task_size_limit(peer.max_frame_size),
                        refused: false,
                    },
                );
            }
            BackendInput::Conn(ConnInput::Message { conn, message }) => {
                self.executor_message(conn, None, message)
            }
            BackendInput::Conn(ConnInput::Ask { conn, id, message }) => {
                self.executor_message(conn, Some(id), message)
            }
            BackendInput::Conn(ConnInput::Closed { conn, reason }) => self.closed(conn, &reason),
            // Nothing the backend dials or asks.
            BackendInput::Conn(ConnInput::DialFailed { .. } | ConnInput::Answer { .. }) => {}
            BackendInput::Lost { conn, reason } => self.lost(conn, &reason),
            BackendInput::NotSent {
                conn,
                message,
                error,
            } => self.not_sent(conn, &message, &error),
            BackendInput::Master(event) => self.master_event(event),
            BackendInput::Cancel(job) => self.scheduler.cancel(job, format!("Job {job} cancelled")),
            BackendInput::KillExecutors(ids) => {
                for id in &ids {
                    if let Some(e) = self.executors.get_mut(id) {
                        e.pending_removal = true;
                    }
                }
            }
            BackendInput::Stop => self.stop(),
        }
        self.settle();
    }

    /// The revive timer: offers every executor's free cores (Spark's ReviveOffers), and warns
    /// when tasks starve.
    fn handle_timeout(&mut self, now: Instant) {
        self.now = now;
        if now < self.next_revive {
            return;
        }
        self.next_revive = now + self.revive_interval;
        self.want_offers(None);
        self.settle();
        self.warn_if_starved();
    }

    fn poll_timeout(&self) -> Option<Instant> {
        (!self.stopping).then_some(self.next_revive)
    }

    fn poll(&mut self) -> Option<Out> {
        self.out.pop_front()
    }
}

impl BackendCore {
    fn conn_out(&mut self, out: ConnOutput<CoarseMessage>) {
        self.out.push_back(Output::Conn(out));
    }

    fn effect(&mut self, effect: BackendEffect) {
        self.out.push_back(Output::Effect(effect));
    }

    /// A message its connection refused without closing: a LaunchTask's task fails with why,
    /// its cores given back; anything else is only logged (the connection's end, if it comes,
    /// is reported on its own).
    fn not_sent(&mut self, conn: ConnId, message: &CoarseMessage, error: &str) {
        let CoarseMessage::LaunchTask(launch) = message else {
            tracing::warn!(
                "driver: {} on connection {conn} not sent: {error}",
                message.name()
            );
            return;
        };
        let Ok(task) = crate::wire::peek_task(&launch.data.0) else {
            tracing::error!("driver: a LaunchTask the core did not encode was not sent: {error}");
            return;
        };
        let task_id = task.task_id;
        tracing::error!("driver: LaunchTask for task {task_id} not sent: {error}");
        self.return_cores(task_id);
        let text = format!("LaunchTask for task {task_id} could not be sent: {error}");
        self.scheduler.launch_refused(task_id, &text);
    }

    /// A backend for `config`, started at `now`.
    pub fn new(config: BackendConfig, now: Instant) -> Self {
        let revive_interval = config.revive_interval.max(Duration::from_millis(1));
        BackendCore {
            scheduler: TaskScheduler::new(config.task_cpus, config.max_task_failures),
            config,
            executors: BTreeMap::new(),
            conns: BTreeMap::new(),
            closed_conns: 0,
            jobs: BTreeMap::new(),
            next_job: 0,
            app_id: None,
            workers: BTreeMap::new(),
            started: now,
            now,
            first_executor_after: None,
            tasks_launched: 0,
            tasks_finished: 0,
            tasks_failed: 0,
            executors_lost: 0,
            dead: None,
            last_launch_failure: None,
            stopping: false,
            starved_since: None,
            master: None,
            master_changes: 0,
            executor_ends: VecDeque::new(),
            offers: Offers::None,
            batching: false,
            next_revive: now + revive_interval,
            revive_interval,
            out: VecDeque::new(),
            routes: Vec::new(),
        }
    }

    /// Its rules.
    pub fn config(&self) -> &BackendConfig {
        &self.config
    }

    /// Whether task attempts are assigned or running (their executors may report at any time).
    pub fn tasks_out(&self) -> bool {
        self.scheduler.has_running()
    }

    /// Whether connections are still open.
    pub fn has_connections(&self) -> bool {
        !self.conns.is_empty()
    }

    /// Submits a job: its id, or why the driver takes no job.
    pub fn submit(&mut self, now: Instant, job: Arc<dyn Job>) -> Result<JobId, SubmitRefused> {
        self.now = now;
        if let Some(why) = &self.dead {
            return Err(SubmitRefused::Dead(why.clone()));
        }
        if self.stopping {
            return Err(SubmitRefused::Stopped);
        }
        let id = self.next_job;
        self.next_job += 1;
        let total = job.partitions();
        tracing::info!("driver: job {id} ({}) with {total} tasks", job.name());
        self.jobs.insert(
            id,
            JobState {
                job,
                results: vec![None; total],
                progress: JobProgress {
                    finished: 0,
                    total,
                    failed_attempts: 0,
                },
                started: now,
                warned_size: false,
            },
        );
        self.scheduler.submit(id, total);
        self.want_offers(None);
        self.settle();
        Ok(id)
    }

    /// Starts a batch of inputs that arrived together (the StatusUpdates of several executors,
    /// say): each is handled at once, but the offers they call for are made once, at
    /// [`end_batch`](Self::end_batch), as Spark's `makeOffers` would find the same free cores had
    /// the updates come one by one.
    pub fn begin_batch(&mut self) {
        self.batching = true;
    }

    /// Ends the batch begun by [`begin_batch`](Self::begin_batch): makes the offers its inputs
    /// called for.
    pub fn end_batch(&mut self) {
        self.batching = false;
        self.settle();
    }

    /// Acts on what the scheduler decided, and makes the offers the input called for (unless a
    /// batch is open), until nothing is left: the one place scheduler events become outputs.
    fn settle(&mut self) {
        loop {
            if let Some(event) = self.scheduler.poll_event() {
                self.scheduler_event(event);
                continue;
            }
            if self.batching {
                break;
            }
            match std::mem::replace(&mut self.offers, Offers::None) {
                Offers::None => break,
                Offers::One(exec) => self.make_offers(Some(&exec)),
                Offers::All => self.make_offers(None),
            }
        }
    }

    fn want_offers(&mut self, only: Option<&str>) {
        self.offers = match (std::mem::replace(&mut self.offers, Offers::None), only) {
            (Offers::None, Some(e)) => Offers::One(e.to_string()),
            (Offers::One(a), Some(e)) if a == e => Offers::One(a),
            _ => Offers::All,
        };
    }

    fn scheduler_event(&mut self, event: SchedulerEvent) {
        match event {
            SchedulerEvent::Launch(l) => self.launch(l),
            SchedulerEvent::TaskEnded {
                task_id: _,
                task,
                state,
            } => {
                if let Some(e) = self.executors.get_mut(&task.executor) {
                    e.free_cores = (e.free_cores + task.cpus).min(e.cores);
                }
                if state == TaskState::Finished {
                    self.tasks_finished += 1;
                } else {
                    self.tasks_failed += 1;
                }
            }
            SchedulerEvent::TaskSucceeded { job, index, result } => {
                if let Some(j) = self.jobs.get_mut(&job) {
                    if let Some(slot) = j.results.get_mut(index) {
                        *slot = Some(result);
                    }
                    j.progress.finished += 1;
                    let progress = j.progress;
                    self.effect(BackendEffect::Progress { job, progress });
                }
            }
            SchedulerEvent::JobSucceeded { job } => self.job_succeeded(job),
            SchedulerEvent::TaskFailed { job, reason } => {
                tracing::warn!("driver: {reason}");
                if let Some(j) = self.jobs.get_mut(&job) {
                    j.progress.failed_attempts += 1;
                    let progress = j.progress;
                    self.effect(BackendEffect::Progress { job, progress });
                }
            }
            SchedulerEvent::JobFailed { job, message } => {
                tracing::warn!("driver: job {job} failed: {message}");
                if self.jobs.remove(&job).is_some() {
                    self.effect(BackendEffect::JobEnded {
                        job,
                        outcome: Err(JobFailed {
                            job_id: job,
                            message,
                        }),
                    });
                }
            }
            SchedulerEvent::Kill {
                task_id,
                executor,
                reason,
            } => {
                if self.stopping {
                    return;
                }
                let Some(e) = self.executors.get(&executor) else {
                    return;
                };
                let message = CoarseMessage::KillTask(KillTask {
                    task_id,
                    executor: executor.clone(),
                    interrupt_thread: true,
                    reason,
                });
                self.conn_out(ConnOutput::Send {
                    conn: e.conn,
                    message,
                });
            }
        }
    }

    /// Spark's warning when tasks wait and no executor takes them, every 15 s.
    fn warn_if_starved(&mut self) {
        let waiting = self.scheduler.has_pending()
            && self
                .executors
                .values()
                .all(|e| !e.ready || e.pending_removal);
        if !waiting {
            self.starved_since = None;
            return;
        }
        let since = *self.starved_since.get_or_insert(self.now);
        if self.now.saturating_duration_since(since) >= STARVATION_WARNING {
            let last_end = self
                .executor_ends
                .back()
                .filter(|_| self.last_launch_failure.is_some());
            tracing::warn!("{}", super::starvation_reason(last_end));
            self.starved_since = Some(self.now);
        }
    }

    fn executor_of(&self, conn: ConnId) -> Option<String> {
        self.conns.get(&conn).and_then(|c| c.executor.clone())
    }

    /// Whether the driver takes `m` on `conn` (SPEC §14): the protocol's routes, then an
    /// executor speaks only for itself, once registered on this connection.
    fn authorize(&mut self, conn: ConnId, m: &CoarseMessage, asked: bool) -> Result<(), Refusal> {
        let Some(role) = self.conns.get(&conn).map(|c| c.role) else {
            return Err(Refusal::WrongPeer {
                message: m.name(),
                expected: "an open connection",
            });
        };
        let route = (role, m.name(), asked);
        if !self.routes.contains(&route) {
            authz::route(role, Role::Driver, CoarseMessage::FAMILY, m.name(), asked)?;
            self.routes.push(route);
        }
        let named = match m {
            CoarseMessage::StatusUpdate(u) => Some(&u.executor_id),
            CoarseMessage::LaunchedExecutor(l) => Some(&l.executor_id),
            CoarseMessage::ExecutorDecommissioning(d) => Some(&d.executor_id),
            _ => None,
        };
        let registered = self.conns.get(&conn).and_then(|c| c.executor.as_ref());
        match named {
            Some(id) if registered != Some(id) => {
                Err(Refusal::not_owner(m.name(), "executor", id.clone()))
            }
            _ => Ok(()),
        }
    }

    fn executor_message(&mut self, conn: ConnId, ask: Option<u64>, message: CoarseMessage) {
        if self.conns.get(&conn).is_none_or(|c| c.refused) {
            return;
        }
        if let Err(refusal) = self.authorize(conn, &message, ask.is_some()) {
            if let Some(c) = self.conns.get(&conn) {
                let refused = BackendEffect::Refused {
                    conn,
                    addr: c.addr.clone(),
                    role: c.role,
                    id: c.executor.clone().unwrap_or_else(|| c.peer.clone()),
                    kind: refusal.kind(),
                    reason: refusal.to_string(),
                };
                self.effect(refused);
            }
            match ask {
                Some(id) => self.conn_out(ConnOutput::Fail {
                    conn,
                    id,
                    error: refusal.failure(),
                }),
                None => {
                    if let Some(c) = self.conns.get_mut(&conn) {
                        c.refused = true;
                    }
                    self.conn_out(ConnOutput::Close {
                        conn,
                        reason: Some(refusal.close_reason()),
                    });
                }
            }
            return;
        }
        if let Some(id) = ask {
            let out = match self.answer(conn, message) {
                Ok(reply) => ConnOutput::Reply { conn, id, reply },
                Err(error) => ConnOutput::Fail { conn, id, error },
            };
            self.conn_out(out);
            return;
        }
        match message {
            CoarseMessage::StatusUpdate(update) => self.status_update(conn, update),
            CoarseMessage::LaunchedExecutor(_) => {
                // Checked by `authorize`: the connection's own executor.
                let Some(exec) = self.executor_of(conn) else {
                    return;
                };
                if let Some(e) = self.executors.get_mut(&exec) {
                    e.ready = true;
                    e.free_cores = e.cores;
                }
                self.want_offers(Some(&exec));
            }
            other => {
                tracing::debug!("driver: ignoring {} from connection {conn}", other.name());
            }
        }
    }

    /// The answer to an executor's ask.
    fn answer(
        &mut self,
        conn: ConnId,
        message: CoarseMessage,
    ) -> Result<Reply<CoarseMessage>, ErrorDescription> {
        match message {
            CoarseMessage::RetrieveSparkAppConfig(_) => Ok(Reply::Message(
                CoarseMessage::SparkAppConfig(self.app_config()),
            )),
            CoarseMessage::RegisterExecutor(r) => {
                self.register(conn, r).map(|()| Reply::Bool(true))
            }
            CoarseMessage::IsExecutorAlive(a) => {
                Ok(Reply::Bool(self.executors.contains_key(&a.executor_id)))
            }
            CoarseMessage::RetrieveLastAllocatedExecutorId(_) => Ok(Reply::Int(
                self.executors
                    .keys()
                    .filter_map(|id| id.parse::<i32>().ok())
                    .max()
                    .unwrap_or(0),
            )),
            CoarseMessage::ExecutorDecommissioning(d) => {
                let known = match self.executors.get_mut(&d.executor_id) {
                    Some(e) => {
                        e.pending_removal = true;
                        true
                    }
                    None => false,
                };
                Ok(Reply::Bool(known))
            }
            other => Err(ErrorDescription::new(
                "org.apache.spark.SparkException",
                format!(
                    "Unsupported message {} received by the driver",
                    other.name()
                ),
            )),
        }
    }

    fn app_config(&self) -> SparkAppConfig {
        let c = &self.config;
        let mut props = vec![
            ("spark.app.name".to_string(), c.app_name.clone()),
            ("spark.driver.host".to_string(), c.driver_host.clone()),
            ("spark.driver.port".to_string(), c.driver_port.to_string()),
            ("spark.task.cpus".to_string(), c.task_cpus.to_string()),
            (
                "spark.task.maxFailures".to_string(),
                c.max_task_failures.to_string(),
            ),
            (
                SPARK_MAX_SIZE_KEY.to_string(),
                c.max_message_size_mib.to_string(),
            ),
        ];
        if let Some(id) = &self.app_id {
            props.push(("spark.app.id".to_string(), id.clone()));
        }
        let cores = c
            .executor_cores
            .map(|n| i32::try_from(n).unwrap_or(i32::MAX));
        let memory = i32::try_from(c.executor_memory_mb).unwrap_or(i32::MAX);
        SparkAppConfig {
            spark_properties: props,
            io_encryption_key: None,
            hadoop_delegation_creds: None,
            resource_profile: ResourceProfile::default_with(cores, memory),
            log_level: None,
        }
    }

    fn register(&mut self, conn: ConnId, r: RegisterExecutor) -> Result<(), ErrorDescription> {
        let refuse = |text: String| ErrorDescription::new("java.lang.IllegalStateException", text);
        if self.stopping {
            return Err(refuse("The driver is stopping".into()));
        }
        if let Some(why) = &self.dead {
            return Err(refuse(format!("The application is dead: {why}")));
        }
        if self.executors.contains_key(&r.executor_id) {
            tracing::warn!("driver: Duplicate executor ID: {}", r.executor_id);
            return Err(refuse(format!("Duplicate executor ID: {}", r.executor_id)));
        }
        let Some(c) = self.conns.get_mut(&conn) else {
            return Err(refuse("connection not known".into()));
        };
        if let Some(other) = &c.executor {
            return Err(refuse(format!(
                "executor {other} is already registered on this connection"
            )));
        }
        let cores = match u32::try_from(r.cores) {
            Ok(n) if n > 0 => n,
            _ => return Err(refuse(format!("invalid number of cores: {}", r.cores))),
        };
        c.executor = Some(r.executor_id.clone());
        tracing::info!(
            "driver: registered executor {} ({}) with {cores} cores",
            r.executor_id,
            r.hostname
        );
        self.executors.insert(
            r.executor_id,
            ExecutorData {
                conn,
                host: r.hostname,
                cores,
                free_cores: cores,
                ready: false,
                pending_removal: false,
            },
        );
        let since = self.now.saturating_duration_since(self.started);
        self.first_executor_after.get_or_insert(since);
        Ok(())
    }

    fn status_update(&mut self, conn: ConnId, update: StatusUpdate) {
        // Checked by `authorize`: the connection's own executor.
        let Some(exec) = self.executor_of(conn) else {
            return;
        };
        self.scheduler
            .status_update(&exec, update.task_id, update.state, &update.data);
        if update.state.is_finished() {
            self.want_offers(Some(&exec));
        }
    }

    /// A send on `conn` failed: the executor there is lost now, the connection dropped.
    fn lost(&mut self, conn: ConnId, reason: &str) {
        let Some(c) = self.conns.get_mut(&conn) else {
            return;
        };
        c.refused = true;
        let exec = c.executor.clone();
        let peer = c.peer.clone();
        self.conn_out(ConnOutput::Abort { conn });
        if let Some(exec) = exec {
            if self.executors.get(&exec).is_some_and(|e| e.conn == conn) {
                tracing::warn!("driver: executor {exec} ({peer}) is not reachable: {reason}");
                self.remove_executor(&exec, DISASSOCIATED, true);
            }
        }
    }

    fn closed(&mut self, conn: ConnId, reason: &str) {
        let Some(c) = self.conns.remove(&conn) else {
            return;
        };
        self.closed_conns += 1;
        if let Some(exec) = c.executor {
            if self.executors.get(&exec).is_some_and(|e| e.conn == conn) {
                if self.stopping {
                    // StopExecutor was sent: the executor leaving is the orderly end.
                    tracing::info!("driver: executor {exec} ({}) has left", c.peer);
                } else {
                    tracing::warn!(
                        "driver: executor {exec} ({}) disconnected: {reason}",
                        c.peer
                    );
                }
                self.remove_executor(&exec, DISASSOCIATED, true);
            }
        }
    }

    /// Removes an executor and resubmits its tasks elsewhere.
    fn remove_executor(&mut self, id: &str, reason: &str, caused_by_app: bool) {
        let Some(exec) = self.executors.remove(id) else {
            return;
        };
        if let Some(c) = self.conns.get_mut(&exec.conn) {
            c.executor = None;
            self.conn_out(ConnOutput::Close {
                conn: exec.conn,
                reason: None,
            });
        }
        if self.stopping {
            return;
        }
        self.executors_lost += 1;
        tracing::warn!("driver: lost executor {id} on {}: {reason}", exec.host);
        self.scheduler.executor_lost(id, reason, caused_by_app);
        self.want_offers(None);
    }

    fn master_event(&mut self, event: MasterEvent) {
        match event {
            MasterEvent::Registered { app_id, master } => {
                tracing::info!("driver: connected to the cluster with app ID {app_id}");
                self.app_id = Some(app_id);
                self.master = Some(master);
            }
            MasterEvent::MasterChanged { master } => {
                self.master = Some(master);
                self.master_changes += 1;
            }
            MasterEvent::ExecutorAdded(a) => {
                tracing::info!(
                    "driver: granted executor ID {} on worker {} ({}) with {} core(s)",
                    a.id,
                    a.worker_id,
                    a.host_port,
                    a.cores
                );
                self.workers.insert(a.id.to_string(), a.worker_id);
            }
            MasterEvent::ExecutorUpdated(u) => {
                let state = u.state;
                if !state.is_finished() {
                    return;
                }
                let id = u.id.to_string();
                self.workers.remove(&id);
                if state == ExecutorState::Failed {
                    tracing::warn!(
                        "driver: executor {id} failed: {}",
                        u.message.as_deref().unwrap_or("no reason given")
                    );
                }
                if self.executor_ends.len() >= RETAINED_EXECUTOR_ENDS {
                    self.executor_ends.pop_front();
                }
                self.executor_ends.push_back(ExecutorEnd {
                    id: id.clone(),
                    state,
                    message: u.message.clone(),
                    exit_status: u.exit_status,
                });
                let text = u.message.unwrap_or_else(|| state.as_str().to_string());
                if !self.executors.contains_key(&id) && !self.stopping {
                    tracing::warn!("driver: executor {id} ended {state} on its worker: {text}");
                    self.last_launch_failure = Some(text.clone());
                }
                // As Spark's StandaloneSchedulerBackend.executorRemoved: an exit code blames the
                // application; a lost worker does not.
                let caused_by_app = u.exit_status.is_some() || u.worker_host.is_none();
                self.remove_executor(&id, &text, caused_by_app);
            }
            MasterEvent::WorkerRemoved(w) => {
                let mut gone: Vec<String> = self
                    .workers
                    .iter()
                    .filter(|(_, worker)| **worker == w.id)
                    .map(|(e, _)| e.clone())
                    .collect();
                gone.sort();
                for exec in gone {
                    self.workers.remove(&exec);
                    let reason = format!("Worker {} ({}) removed: {}", w.id, w.host, w.message);
                    self.remove_executor(&exec, &reason, false);
                }
            }
            MasterEvent::Dead(why) => {
                let why = match &self.last_launch_failure {
                    Some(failure) if self.executors.is_empty() => {
                        format!("{why} (the last executor failed on its worker: {failure})")
                    }
                    _ => why,
                };
                tracing::error!("driver: Application has been killed. Reason: {why}");
                self.dead = Some(why.clone());
                self.scheduler
                    .fail_all(&format!("Job aborted due to stage failure: {why}"));
            }
        }
    }

    /// Offers the free cores of one executor (or of all) to the task sets; what they take comes
    /// back as [`SchedulerEvent::Launch`].
    fn make_offers(&mut self, only: Option<&str>) {
        if self.stopping || !self.scheduler.has_pending() {
            return;
        }
        let task_cpus = self.scheduler.task_cpus();
        let mut offers: Vec<Offer> = self
            .executors
            .iter()
            .filter(|(id, e)| {
                e.ready
                    && !e.pending_removal
                    && e.free_cores >= task_cpus
                    && only.is_none_or(|o| o == id.as_str())
            })
            .map(|(id, e)| Offer {
                executor: id.clone(),
                host: e.host.clone(),
                free_cores: e.free_cores,
            })
            .collect();
        if !offers.is_empty() {
            self.scheduler.resource_offers(&mut offers);
        }
    }

    /// Gives back the cores a task sent to its executor held.
    fn return_cores(&mut self, task_id: i64) {
        if let Some(t) = self.scheduler.task(task_id).filter(|t| t.sent) {
            let cpus = t.cpus;
            if let Some(e) = self.executors.get_mut(&t.executor) {
                e.free_cores = (e.free_cores + cpus).min(e.cores);
            }
        }
    }

    fn launch(&mut self, l: TaskLaunch) {
        if !self.scheduler.is_assigned(l.task_id) {
            return;
        }
        let target = self
            .executors
            .get(&l.executor)
            .and_then(|e| self.conns.get(&e.conn).map(|c| (e.conn, c.max_task_size)));
        let (Some((conn, max_task_size)), Some(job)) = (target, self.jobs.get_mut(&l.job)) else {
            self.scheduler.launch_failed(l.task_id);
            return;
        };
        let index = i32::try_from(l.index).unwrap_or(i32::MAX);
        let desc = TaskDescription {
            task_id: l.task_id,
            attempt_number: i32::try_from(l.attempt).unwrap_or(i32::MAX),
            executor_id: l.executor.clone(),
            name: format!(
                "task {}.{} in stage {}.0 (TID {})",
                l.index, l.attempt, l.job, l.task_id
            ),
            index,
            partition_id: index,
            stage_id: i32::try_from(l.job).unwrap_or(i32::MAX),
            stage_attempt_id: 0,
            properties: [(
                TaskDescription::RUNNER_PROPERTY.to_string(),
                job.job.runner().to_string(),
            )]
            .into_iter()
            .collect(),
            cpus: i32::try_from(l.cpus).unwrap_or(i32::MAX),
            resources: Default::default(),
            serialized_task: job.job.input(l.index),
        };
        let data = match encode_task(&desc) {
            Ok(d) => Payload::from(d),
            Err(e) => {
                let text = format!(
                    "Failed to serialize task {}, not attempting to retry it. Exception during \
                     serialization: {e}",
                    l.task_id
                );
                self.scheduler.launch_refused(l.task_id, &text);
                return;
            }
        };
        if data.len() > TASK_SIZE_TO_WARN_KIB * 1024 && !job.warned_size {
            job.warned_size = true;
            tracing::warn!(
                "Stage {} contains a task of very large size ({} KiB). The maximum recommended \
                 task size is {TASK_SIZE_TO_WARN_KIB} KiB.",
                l.job,
                data.len() / 1024
            );
        }
        let task = TaskRef {
            task_id: l.task_id,
            index,
        };
        if let Err(e) = check_task_size(task, data.len(), max_task_size) {
            tracing::error!("driver: {e}");
            self.scheduler.launch_refused(l.task_id, &e.to_string());
            return;
        }
        self.scheduler.mark_sent(l.task_id);
        self.tasks_launched += 1;
        if let Some(e) = self.executors.get_mut(&l.executor) {
            e.free_cores = e.free_cores.saturating_sub(l.cpus);
        }
        self.conn_out(ConnOutput::Send {
            conn,
            message: CoarseMessage::LaunchTask(LaunchTask { data }),
        });
    }

    fn job_succeeded(&mut self, job: JobId) {
        let Some(mut j) = self.jobs.remove(&job) else {
            return;
        };
        let results: Vec<Payload> = j.results.drain(..).map(Option::unwrap_or_default).collect();
        let tasks = results.len();
        let outcome = match j.job.combine(&results) {
            Ok(output) => Ok(JobResult {
                job_id: job,
                output,
                tasks,
                elapsed: self.now.saturating_duration_since(j.started),
            }),
            Err(message) => Err(JobFailed {
                job_id: job,
                message: format!("Job {job} failed combining its results: {message}"),
            }),
        };
        tracing::info!("driver: job {job} finished");
        self.effect(BackendEffect::JobEnded { job, outcome });
    }

    /// The state now (the runtime adds the connections' traffic).
    pub fn status(&self, now: Instant) -> BackendStatus {
        BackendStatus {
            app_id: self.app_id.clone(),
            executors: self
                .executors
                .iter()
                .map(|(id, e)| ExecutorSummary {
                    id: id.clone(),
                    host: e.host.clone(),
                    cores: e.cores,
                    free_cores: e.free_cores,
                    ready: e.ready,
                    worker_id: self.workers.get(id).cloned(),
                })
                .collect(),
            first_executor_after: self.first_executor_after,
            executor_connections: self.closed_conns + self.conns.len(),
            tasks_launched: self.tasks_launched,
            tasks_finished: self.tasks_finished,
            tasks_failed: self.tasks_failed,
            executors_lost: self.executors_lost,
            dead: self.dead.clone(),
            master: self.master.clone(),
            master_changes: self.master_changes,
            uptime: now.saturating_duration_since(self.started),
            executor_ends: self.executor_ends.iter().cloned().collect(),
        }
    }

    /// Spark's stop, the driver's part: jobs fail, StopExecutor to every executor.
    fn stop(&mut self) {
        if self.stopping {
            return;
        }
        self.stopping = true;
        let mut jobs: Vec<JobId> = self.jobs.keys().copied().collect();
        jobs.sort_unstable();
        for job in jobs {
            let message = format!("Job {job} cancelled because SparkContext was shut down");
            self.scheduler.cancel(job, message.clone());
            self.settle();
            // A job the scheduler no longer held (its task set already ended) fails here.
            if self.jobs.contains_key(&job) {
                self.scheduler_event(SchedulerEvent::JobFailed { job, message });
            }
        }
        for e in self.executors.values() {
            self.out.push_back(Output::Conn(ConnOutput::Send {
                conn: e.conn,
                message: CoarseMessage::StopExecutor(StopExecutor {}),
            }));
        }
    }
}

impl From<ConnInput<CoarseMessage, ()>> for BackendInput {
    fn from(input: ConnInput<CoarseMessage, ()>) -> BackendInput {
        BackendInput::Conn(input)
    }
}
