//! The driver's endpoint (Spark's `CoarseGrainedSchedulerBackend.DriverEndpoint`): one task that
//! owns the executors, the jobs and the scheduler, and handles, in order, what executors send,
//! what the master tells the application client, the revive timer, and callers' requests.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::{mpsc, oneshot, watch};
use tokio::time::MissedTickBehavior;

use super::app_client::{AppClient, MasterEvent};
use super::job::{JobFailed, JobProgress, JobResult};
use super::scheduler::{JobId, Offer, SchedulerEvent, TaskLaunch, TaskScheduler};
use super::{add_counters, DriverConfig, DriverError};
use crate::connection::{ConnectionError, ConnectionHandle, Counters, Incoming};
use crate::messages::coarse::{
    KillTask, LaunchTask, RegisterExecutor, SparkAppConfig, StatusUpdate, StopExecutor,
};
use crate::messages::deploy::{ExecutorAdded, ExecutorUpdated, WorkerRemoved};
use crate::messages::ExecutorState;
use crate::messages::{
    CoarseMessage, ErrorDescription, Family, Payload, ResourceProfile, TaskDescription,
};
use crate::reference::authz::{self, Refusal};
use crate::reference::spark_url::SparkUrl;
use crate::reference::task::Job;
use crate::wire::handshake::Role;
use crate::wire::limits::SPARK_MAX_SIZE_KEY;
use crate::wire::task::encode_task;
use crate::wire::task_size::TaskRef;
use crate::wire::Reply;

/// Spark's reason for an executor whose connection dropped.
const DISASSOCIATED: &str = "Remote RPC client disassociated. Likely due to containers exceeding \
                             thresholds, or network issues. Check driver logs for WARN messages.";

/// Spark warns about serialized tasks larger than this (`TaskSetManager.TASK_SIZE_TO_WARN_KIB`).
const TASK_SIZE_TO_WARN_KIB: usize = 1000;

/// How often Spark warns that tasks wait for resources.
const STARVATION_WARNING: Duration = Duration::from_secs(15);

/// How long stopping waits for executors to close their connections after StopExecutor.
const STOP_GRACE: Duration = Duration::from_secs(3);

/// What the backend handles.
pub(super) enum Msg {
    /// An executor connection completed its handshake.
    Connected {
        key: u64,
        handle: ConnectionHandle<CoarseMessage>,
        peer: String,
        abort: Arc<tokio::sync::Notify>,
    },
    /// Something an executor connection received (its credit is dropped once handled).
    FromExecutor {
        key: u64,
        incoming: Incoming<CoarseMessage>,
        credit: crate::reference::outbox::Credit,
    },
    /// An executor connection ended.
    Disconnected { key: u64, reason: ConnectionError },
    /// News from the application client.
    Master(MasterEvent),

    /// Submit a job.
    Submit {
        job: Arc<dyn Job>,
        reply: oneshot::Sender<Result<Submitted, DriverError>>,
    },
    /// Cancel a job.
    Cancel { job: JobId },
    /// Report the state.
    Status(oneshot::Sender<DriverStatus>),
    /// Ask the master for executors.
    RequestExecutors {
        total: u32,
        reply: oneshot::Sender<Result<bool, DriverError>>,
    },
    /// Ask the master to kill executors.
    KillExecutors {
        ids: Vec<String>,
        reply: oneshot::Sender<Result<bool, DriverError>>,
    },
    /// Stop everything.
    Stop(oneshot::Sender<DriverStatus>),
}

/// A submitted job's receiving ends.
pub(super) struct Submitted {
    pub(super) id: JobId,
    pub(super) outcome: oneshot::Receiver<Result<JobResult, JobFailed>>,
    pub(super) progress: watch::Receiver<JobProgress>,
}

/// An executor as the driver knows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExecutorSummary {
    /// Executor id.
    pub id: String,
    /// Its host, as it registered.
    pub host: String,
    /// Cores it registered with.
    pub cores: u32,
    /// Cores not held by tasks.
    pub free_cores: u32,
    /// Whether it sent LaunchedExecutor (it gets tasks only then).
    pub ready: bool,
    /// The worker running it, when the master said (ExecutorAdded).
    pub worker_id: Option<String>,
}

/// An executor the master reported ended (ExecutorUpdated), and why: a worker that refused to
/// launch it says so here (SPEC §14.5).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExecutorEnd {
    /// Executor id.
    pub id: String,
    /// The state it ended in (FAILED for a launch the worker refused).
    pub state: ExecutorState,
    /// The worker's message: why it failed or exited.
    pub message: Option<String>,
    /// Its exit code, if it ran.
    pub exit_status: Option<i32>,
}

/// Executor ends kept in [`DriverStatus::executor_ends`].
const RETAINED_EXECUTOR_ENDS: usize = 100;

/// The driver's state, as [`Driver::status`](super::Driver::status) reports it.
#[derive(Debug, Clone, Default)]
pub struct DriverStatus {
    /// The application id the master gave, once registered.
    pub app_id: Option<String>,
    /// Registered executors.
    pub executors: Vec<ExecutorSummary>,
    /// From the driver's start to the first executor registered.
    pub first_executor_after: Option<Duration>,
    /// Traffic of every connection the driver had, open or closed (executors' and masters').
    pub counters: Counters,
    /// Connections the driver had with executors.
    pub executor_connections: usize,
    /// LaunchTask messages sent.
    pub tasks_launched: u64,
    /// Task attempts that ended FINISHED.
    pub tasks_finished: u64,
    /// Task attempts that failed, were killed or were lost.
    pub tasks_failed: u64,
    /// Executors removed (lost or exited) while the driver ran.
    pub executors_lost: u64,
    /// Why the application is dead, if it is.
    pub dead: Option<String>,
    /// The active master: its URL, or its id when it dialled the application after a failover.
    pub master: Option<String>,
    /// MasterChanged messages acknowledged (failovers followed).
    pub master_changes: u32,
    /// Since the driver started.
    pub uptime: Duration,
    /// The last executors the master reported ended, oldest first (at most 100).
    pub executor_ends: Vec<ExecutorEnd>,
}

impl DriverStatus {
    /// Executors registered and ready for tasks.
    pub fn ready_executors(&self) -> usize {
        self.executors.iter().filter(|e| e.ready).count()
    }
}

struct ExecutorData {
    key: u64,
    handle: ConnectionHandle<CoarseMessage>,
    host: String,
    cores: u32,
    free_cores: u32,
    ready: bool,
    pending_removal: bool,
}

struct ConnState {
    handle: ConnectionHandle<CoarseMessage>,
    executor: Option<String>,
    peer: String,
    abort: Arc<tokio::sync::Notify>,
    /// A one-way message was refused: the connection is closing and nothing more is taken.
    refused: bool,
}

struct JobState {
    job: Arc<dyn Job>,
    results: Vec<Option<Payload>>,
    outcome: Option<oneshot::Sender<Result<JobResult, JobFailed>>>,
    progress: watch::Sender<JobProgress>,
    started: Instant,
    warned_size: bool,
}

struct Backend {
    config: Arc<DriverConfig>,
    url: SparkUrl,
    scheduler: TaskScheduler,
    executors: BTreeMap<String, ExecutorData>,
    conns: HashMap<u64, ConnState>,
    closed_counters: Counters,
    closed_conns: usize,
    jobs: HashMap<JobId, JobState>,
    next_job: JobId,
    app_id: Option<String>,
    workers: HashMap<String, String>,
    client: Option<AppClient>,
    started: Instant,
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
    starved_warning: Option<Instant>,
    master: Option<String>,
    master_changes: u32,
    executor_ends: std::collections::VecDeque<ExecutorEnd>,
}

/// Runs the backend until stopped (or every handle to it is gone).
pub(super) async fn run(
    config: Arc<DriverConfig>,
    url: SparkUrl,
    mut rx: mpsc::UnboundedReceiver<Msg>,
    client: Option<AppClient>,
    accept: tokio::task::JoinHandle<()>,
) {
    let mut revive = tokio::time::interval(config.revive_interval.max(Duration::from_millis(1)));
    revive.set_missed_tick_behavior(MissedTickBehavior::Delay);
    let mut b = Backend {
        scheduler: TaskScheduler::new(config.task_cpus, config.max_task_failures),
        config,
        url,
        executors: BTreeMap::new(),
        conns: HashMap::new(),
        closed_counters: Counters::default(),
        closed_conns: 0,
        jobs: HashMap::new(),
        next_job: 0,
        app_id: None,
        workers: HashMap::new(),
        client,
        started: Instant::now(),
        first_executor_after: None,
        tasks_launched: 0,
        tasks_finished: 0,
        tasks_failed: 0,
        executors_lost: 0,
        dead: None,
        last_launch_failure: None,
        stopping: false,
        starved_warning: None,
        master: None,
        master_changes: 0,
        executor_ends: Default::default(),
    };
    let stop_reply = loop {
        tokio::select! {
            msg = rx.recv() => match msg {
                Some(Msg::Stop(reply)) => break Some(reply),
                Some(msg) => b.handle(msg).await,
                None => break None,
            },
            _ = revive.tick() => {
                b.make_offers(None).await;
                b.warn_if_starved();
            }
        }
    };
    b.stop(&mut rx).await;
    accept.abort();
    if let Some(reply) = stop_reply {
        let _ = reply.send(b.status());
    }
}

impl Backend {
    async fn handle(&mut self, msg: Msg) {
        match msg {
            Msg::Connected {
                key,
                handle,
                peer,
                abort,
            } => {
                self.conns.insert(
                    key,
                    ConnState {
                        handle,
                        executor: None,
                        peer,
                        abort,
                        refused: false,
                    },
                );
            }
            Msg::FromExecutor {
                key,
                incoming,
                credit: _credit,
            } => self.executor_message(key, incoming).await,
            Msg::Disconnected { key, reason } => self.disconnected(key, &reason).await,
            Msg::Master(event) => self.master_event(event).await,

            Msg::Submit { job, reply } => {
                let submitted = self.submit(job).await;
                let _ = reply.send(submitted);
            }
            Msg::Cancel { job } => {
                let events = self.scheduler.cancel(job, format!("Job {job} cancelled"));
                self.handle_events(events).await;
            }
            Msg::Status(reply) => {
                let _ = reply.send(self.status());
            }
            Msg::RequestExecutors { total, reply } => match &self.client {
                Some(client) => client.request_executors(total, reply),
                None => {
                    let _ = reply.send(Err(DriverError::NotRegistered));
                }
            },
            Msg::KillExecutors { ids, reply } => {
                for id in &ids {
                    if let Some(e) = self.executors.get_mut(id) {
                        e.pending_removal = true;
                    }
                }
                match &self.client {
                    Some(client) => client.kill_executors(ids, reply),
                    None => {
                        let _ = reply.send(Err(DriverError::NotRegistered));
                    }
                }
            }
            Msg::Stop(reply) => {
                // Handled by the loop; a Stop reaching here comes from the stop sequence.
                let _ = reply.send(self.status());
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
            self.starved_warning = None;
            return;
        }
        let since = *self.starved_warning.get_or_insert_with(Instant::now);
        if since.elapsed() >= STARVATION_WARNING {
            tracing::warn!(
                "Initial job has not accepted any resources; check your cluster UI to ensure \
                 that workers are registered and have sufficient resources"
            );
            self.starved_warning = Some(Instant::now());
        }
    }

    async fn submit(&mut self, job: Arc<dyn Job>) -> Result<Submitted, DriverError> {
        if let Some(why) = &self.dead {
            return Err(DriverError::Dead(why.clone()));
        }
        if self.stopping {
            return Err(DriverError::Stopped);
        }
        let id = self.next_job;
        self.next_job += 1;
        let total = job.partitions();
        let (outcome_tx, outcome) = oneshot::channel();
        let (progress_tx, progress) = watch::channel(JobProgress {
            finished: 0,
            total,
            failed_attempts: 0,
        });
        tracing::info!("driver: job {id} ({}) with {total} tasks", job.name());
        self.jobs.insert(
            id,
            JobState {
                job,
                results: vec![None; total],
                outcome: Some(outcome_tx),
                progress: progress_tx,
                started: Instant::now(),
                warned_size: false,
            },
        );
        let events = self.scheduler.submit(id, total);
        self.handle_events(events).await;
        self.make_offers(None).await;
        Ok(Submitted {
            id,
            outcome,
            progress,
        })
    }

    fn executor_of(&self, key: u64) -> Option<String> {
        self.conns.get(&key).and_then(|c| c.executor.clone())
    }

    /// Whether the driver takes `m` on connection `key` (SPEC §14): the protocol's routes, then
    /// an executor speaks only for itself, once registered on this connection.
    fn authorize(&self, key: u64, m: &CoarseMessage, asked: bool) -> Result<(), Refusal> {
        let Some(conn) = self.conns.get(&key) else {
            return Err(Refusal::WrongPeer {
                message: m.name(),
                expected: "an open connection",
            });
        };
        let role = conn.handle.negotiated().peer_role;
        authz::route(role, Role::Driver, CoarseMessage::FAMILY, m.name(), asked)?;
        let named = match m {
            CoarseMessage::StatusUpdate(u) => Some(&u.executor_id),
            CoarseMessage::LaunchedExecutor(l) => Some(&l.executor_id),
            CoarseMessage::ExecutorDecommissioning(d) => Some(&d.executor_id),
            _ => None,
        };
        match named {
            Some(id) if conn.executor.as_ref() != Some(id) => {
                Err(Refusal::not_owner(m.name(), "executor", id.clone()))
            }
            _ => Ok(()),
        }
    }

    async fn executor_message(&mut self, key: u64, incoming: Incoming<CoarseMessage>) {
        let Some(handle) = self
            .conns
            .get(&key)
            .filter(|c| !c.refused)
            .map(|c| c.handle.clone())
        else {
            return;
        };
        let (ask, message) = match &incoming {
            Incoming::Ask { id, message } => (Some(*id), message),
            Incoming::Message(message) => (None, message),
        };
        if let Err(refusal) = self.authorize(key, message, ask.is_some()) {
            let peer = self
                .conns
                .get(&key)
                .map(|c| c.peer.clone())
                .unwrap_or_default();
            tracing::warn!("driver: refused from {peer} (connection {key}): {refusal}");
            match ask {
                Some(id) => {
                    if let Err(e) = handle.post_failure(id, refusal.failure()) {
                        tracing::warn!("driver: cannot answer ask {id} on connection {key}: {e}");
                    }
                }
                None => {
                    if let Some(c) = self.conns.get_mut(&key) {
                        c.refused = true;
                    }
                    tokio::spawn(async move { handle.close().await });
                }
            }
            return;
        }
        match incoming {
            Incoming::Ask { id, message } => {
                let answer = self.answer(key, message);
                let sent = match answer {
                    Ok(reply) => handle.post_reply(id, reply),
                    Err(error) => handle.post_failure(id, error),
                };
                if let Err(e) = sent {
                    tracing::warn!("driver: cannot answer ask {id} on connection {key}: {e}");
                }
            }
            Incoming::Message(CoarseMessage::StatusUpdate(update)) => {
                self.status_update(key, update).await;
            }
            Incoming::Message(CoarseMessage::LaunchedExecutor(_)) => {
                // Checked by `authorize`: the connection's own executor.
                let Some(exec) = self.executor_of(key) else {
                    return;
                };
                if let Some(e) = self.executors.get_mut(&exec) {
                    e.ready = true;
                    e.free_cores = e.cores;
                }
                self.make_offers(Some(&exec)).await;
            }
            Incoming::Message(other) => {
                tracing::debug!("driver: ignoring {} from connection {key}", other.name());
            }
        }
    }

    /// The answer to an executor's ask.
    fn answer(
        &mut self,
        key: u64,
        message: CoarseMessage,
    ) -> Result<Reply<CoarseMessage>, ErrorDescription> {
        match message {
            CoarseMessage::RetrieveSparkAppConfig(_) => Ok(Reply::Message(
                CoarseMessage::SparkAppConfig(self.app_config()),
            )),
            CoarseMessage::RegisterExecutor(r) => self.register(key, r).map(|()| Reply::Bool(true)),
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
            ("spark.driver.host".to_string(), self.url.host.clone()),
            ("spark.driver.port".to_string(), self.url.port.to_string()),
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

    fn register(&mut self, key: u64, r: RegisterExecutor) -> Result<(), ErrorDescription> {
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
        let Some(conn) = self.conns.get_mut(&key) else {
            return Err(refuse("connection not known".into()));
        };
        if let Some(other) = &conn.executor {
            return Err(refuse(format!(
                "executor {other} is already registered on this connection"
            )));
        }
        let cores = match u32::try_from(r.cores) {
            Ok(c) if c > 0 => c,
            _ => return Err(refuse(format!("invalid number of cores: {}", r.cores))),
        };
        conn.executor = Some(r.executor_id.clone());
        tracing::info!(
            "driver: registered executor {} ({}) with {cores} cores",
            r.executor_id,
            r.hostname
        );
        self.executors.insert(
            r.executor_id,
            ExecutorData {
                key,
                handle: conn.handle.clone(),
                host: r.hostname,
                cores,
                free_cores: cores,
                ready: false,
                pending_removal: false,
            },
        );
        self.first_executor_after
            .get_or_insert_with(|| self.started.elapsed());
        Ok(())
    }

    async fn status_update(&mut self, key: u64, update: StatusUpdate) {
        // Checked by `authorize`: the connection's own executor.
        let Some(exec) = self.executor_of(key) else {
            return;
        };
        let (ended, events) =
            self.scheduler
                .status_update(&exec, update.task_id, update.state, &update.data);
        if let Some(task) = ended {
            if let Some(e) = self.executors.get_mut(&exec) {
                e.free_cores = (e.free_cores + task.cpus).min(e.cores);
            }
            if update.state == crate::messages::TaskState::Finished {
                self.tasks_finished += 1;
            } else {
                self.tasks_failed += 1;
            }
        }
        self.handle_events(events).await;
        if update.state.is_finished() {
            self.make_offers(Some(&exec)).await;
        }
    }

    async fn disconnected(&mut self, key: u64, reason: &ConnectionError) {
        let Some(conn) = self.conns.remove(&key) else {
            return;
        };
        add_counters(&mut self.closed_counters, &conn.handle.counters());
        self.closed_conns += 1;
        if let Some(exec) = conn.executor {
            if self.executors.get(&exec).is_some_and(|e| e.key == key) {
                if self.stopping {
                    // StopExecutor was sent: the executor leaving is the orderly end.
                    tracing::info!("driver: executor {exec} ({}) has left", conn.peer);
                } else {
                    tracing::warn!(
                        "driver: executor {exec} ({}) disconnected: {reason}",
                        conn.peer
                    );
                }
                self.remove_executor(&exec, DISASSOCIATED, true).await;
            }
        }
    }

    /// Removes an executor and resubmits its tasks elsewhere.
    async fn remove_executor(&mut self, id: &str, reason: &str, caused_by_app: bool) {
        let Some(exec) = self.executors.remove(id) else {
            return;
        };
        if let Some(conn) = self.conns.get_mut(&exec.key) {
            conn.executor = None;
        }
        if exec.handle.close_reason().is_none() {
            let handle = exec.handle.clone();
            tokio::spawn(async move { handle.close().await });
        }
        if self.stopping {
            return;
        }
        self.executors_lost += 1;
        tracing::warn!("driver: lost executor {id} on {}: {reason}", exec.host);
        let events = self.scheduler.executor_lost(id, reason, caused_by_app);
        self.handle_events(events).await;
        self.make_offers(None).await;
    }

    async fn master_event(&mut self, event: MasterEvent) {
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
            MasterEvent::ExecutorAdded(ExecutorAdded {
                id,
                worker_id,
                host_port,
                cores,
                ..
            }) => {
                tracing::info!(
                    "driver: granted executor ID {id} on worker {worker_id} ({host_port}) with \
                     {cores} core(s)"
                );
                self.workers.insert(id.to_string(), worker_id);
            }
            MasterEvent::ExecutorUpdated(ExecutorUpdated {
                id,
                state,
                message,
                exit_status,
                worker_host,
            }) => {
                if !state.is_finished() {
                    return;
                }
                let id = id.to_string();
                self.workers.remove(&id);
                if state == ExecutorState::Failed {
                    tracing::warn!(
                        "driver: executor {id} failed: {}",
                        message.as_deref().unwrap_or("no reason given")
                    );
                }
                if self.executor_ends.len() >= RETAINED_EXECUTOR_ENDS {
                    self.executor_ends.pop_front();
                }
                self.executor_ends.push_back(ExecutorEnd {
                    id: id.clone(),
                    state,
                    message: message.clone(),
                    exit_status,
                });
                let text = message.unwrap_or_else(|| state.as_str().to_string());
                if !self.executors.contains_key(&id) && !self.stopping {
                    tracing::warn!("driver: executor {id} ended {state} on its worker: {text}");
                    self.last_launch_failure = Some(text.clone());
                }
                // As Spark's StandaloneSchedulerBackend.executorRemoved: an exit code blames the
                // application; a lost worker does not.
                let caused_by_app = exit_status.is_some() || worker_host.is_none();
                self.remove_executor(&id, &text, caused_by_app).await;
            }
            MasterEvent::WorkerRemoved(WorkerRemoved { id, host, message }) => {
                let gone: Vec<String> = self
                    .workers
                    .iter()
                    .filter(|(_, w)| **w == id)
                    .map(|(e, _)| e.clone())
                    .collect();
                for exec in gone {
                    self.workers.remove(&exec);
                    let reason = format!("Worker {id} ({host}) removed: {message}");
                    self.remove_executor(&exec, &reason, false).await;
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
                let events = self
                    .scheduler
                    .fail_all(&format!("Job aborted due to stage failure: {why}"));
                self.handle_events(events).await;
            }
        }
    }

    /// Offers the free cores of one executor (or of all) to the task sets and launches what
    /// they take.
    async fn make_offers(&mut self, only: Option<&str>) {
        if self.stopping || !self.scheduler.has_pending() {
            return;
        }
        let mut offers: Vec<Offer> = self
            .executors
            .iter()
            .filter(|(id, e)| {
                e.ready
                    && !e.pending_removal
                    && e.free_cores >= self.scheduler.task_cpus()
                    && only.is_none_or(|o| o == id.as_str())
            })
            .map(|(id, e)| Offer {
                executor: id.clone(),
                host: e.host.clone(),
                free_cores: e.free_cores,
            })
            .collect();
        if offers.is_empty() {
            return;
        }
        let launches = self.scheduler.resource_offers(&mut offers);
        for launch in launches {
            self.launch(launch).await;
        }
    }

    async fn launch(&mut self, l: TaskLaunch) {
        if !self.scheduler.is_assigned(l.task_id) {
            return;
        }
        let handle = self.executors.get(&l.executor).map(|e| e.handle.clone());
        let (Some(handle), Some(job)) = (handle, self.jobs.get_mut(&l.job)) else {
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
                let events = self.scheduler.launch_refused(l.task_id, &text);
                self.handle_events(events).await;
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
        // Never waits: an executor that does not read is closed as a slow consumer, its reader
        // reports the loss and its tasks run elsewhere.
        let sent = handle.post_launch_task(task, LaunchTask { data });
        match sent {
            Ok(()) => {
                self.scheduler.mark_sent(l.task_id);
                self.tasks_launched += 1;
                if let Some(e) = self.executors.get_mut(&l.executor) {
                    e.free_cores = e.free_cores.saturating_sub(l.cpus);
                }
            }
            Err(ConnectionError::TaskTooLarge(e)) => {
                tracing::error!("driver: {e}");
                let events = self.scheduler.launch_refused(l.task_id, &e.to_string());
                self.handle_events(events).await;
            }
            Err(e) if !e.closes_connection() => {
                tracing::error!("driver: LaunchTask for task {} not sent: {e}", l.task_id);
                let text = format!("LaunchTask for task {} could not be sent: {e}", l.task_id);
                let events = self.scheduler.launch_refused(l.task_id, &text);
                self.handle_events(events).await;
            }
            Err(e) => {
                // The connection is gone; its reader reports the executor's loss.
                tracing::warn!("driver: LaunchTask to executor {} failed: {e}", l.executor);
                self.scheduler.launch_failed(l.task_id);
            }
        }
    }

    async fn handle_events(&mut self, events: Vec<SchedulerEvent>) {
        for event in events {
            match event {
                SchedulerEvent::TaskSucceeded { job, index, result } => {
                    if let Some(j) = self.jobs.get_mut(&job) {
                        if let Some(slot) = j.results.get_mut(index) {
                            *slot = Some(result);
                        }
                        j.progress.send_modify(|p| p.finished += 1);
                    }
                }
                SchedulerEvent::JobSucceeded { job } => self.job_succeeded(job),
                SchedulerEvent::TaskFailed { job, reason } => {
                    tracing::warn!("driver: {reason}");
                    if let Some(j) = self.jobs.get_mut(&job) {
                        j.progress.send_modify(|p| p.failed_attempts += 1);
                    }
                }
                SchedulerEvent::JobFailed { job, message } => {
                    tracing::warn!("driver: job {job} failed: {message}");
                    if let Some(mut j) = self.jobs.remove(&job) {
                        if let Some(outcome) = j.outcome.take() {
                            let _ = outcome.send(Err(JobFailed {
                                job_id: job,
                                message,
                            }));
                        }
                    }
                }
                SchedulerEvent::Kill {
                    task_id,
                    executor,
                    reason,
                } => {
                    if self.stopping {
                        continue;
                    }
                    let Some(e) = self.executors.get(&executor) else {
                        continue;
                    };
                    let kill = CoarseMessage::KillTask(KillTask {
                        task_id,
                        executor: executor.clone(),
                        interrupt_thread: true,
                        reason,
                    });
                    if let Err(err) = e.handle.post(kill) {
                        tracing::warn!("driver: KillTask {task_id} to executor {executor}: {err}");
                    }
                }
            }
        }
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
                elapsed: j.started.elapsed(),
            }),
            Err(message) => Err(JobFailed {
                job_id: job,
                message: format!("Job {job} failed combining its results: {message}"),
            }),
        };
        tracing::info!("driver: job {job} finished");
        if let Some(tx) = j.outcome.take() {
            let _ = tx.send(outcome);
        }
    }

    fn status(&self) -> DriverStatus {
        let mut counters = self.closed_counters.clone();
        for conn in self.conns.values() {
            add_counters(&mut counters, &conn.handle.counters());
        }
        if let Some(client) = &self.client {
            add_counters(&mut counters, &client.counters());
        }
        DriverStatus {
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
            counters,
            executor_connections: self.closed_conns + self.conns.len(),
            tasks_launched: self.tasks_launched,
            tasks_finished: self.tasks_finished,
            tasks_failed: self.tasks_failed,
            executors_lost: self.executors_lost,
            dead: self.dead.clone(),
            master: self.master.clone(),
            master_changes: self.master_changes,
            uptime: self.started.elapsed(),
            executor_ends: self.executor_ends.iter().cloned().collect(),
        }
    }

    /// Spark's stop: jobs fail, StopExecutor to every executor, UnregisterApplication to the
    /// master, then the connections close.
    async fn stop(&mut self, rx: &mut mpsc::UnboundedReceiver<Msg>) {
        self.stopping = true;
        let jobs: Vec<JobId> = self.jobs.keys().copied().collect();
        for job in jobs {
            let message = format!("Job {job} cancelled because SparkContext was shut down");
            let mut events = self.scheduler.cancel(job, message.clone());
            if events.is_empty() {
                events.push(SchedulerEvent::JobFailed { job, message });
            }
            self.handle_events(events).await;
        }
        for (id, e) in &self.executors {
            if let Err(err) = e.handle.post(CoarseMessage::StopExecutor(StopExecutor {})) {
                tracing::debug!("driver: StopExecutor to {id}: {err}");
            }
        }
        if let Some(client) = &self.client {
            client.stop().await;
        }
        // Executors close their connections on StopExecutor; wait for them a little.
        let deadline = tokio::time::Instant::now() + STOP_GRACE;
        while !self.conns.is_empty() {
            match tokio::time::timeout_at(deadline, rx.recv()).await {
                Ok(Some(Msg::Stop(reply))) => {
                    let _ = reply.send(self.status());
                }
                Ok(Some(Msg::Submit { reply, .. })) => {
                    let _ = reply.send(Err(DriverError::Stopped));
                }
                Ok(Some(msg)) => self.handle(msg).await,
                Ok(None) | Err(_) => break,
            }
        }
        let open: Vec<ConnectionHandle<CoarseMessage>> =
            self.conns.values().map(|c| c.handle.clone()).collect();
        for handle in open {
            let _ = tokio::time::timeout(Duration::from_secs(1), handle.close()).await;
        }
        for conn in self.conns.values() {
            // Still open after a graceful close was tried: its peer does not read.
            conn.abort.notify_one();
        }
        // The readers report the closes; take them in so the counters and taps are complete.
        while !self.conns.is_empty() {
            match tokio::time::timeout(Duration::from_secs(1), rx.recv()).await {
                Ok(Some(Msg::Disconnected { key, reason })) => {
                    self.disconnected(key, &reason).await
                }
                Ok(Some(_)) => {}
                Ok(None) | Err(_) => break,
            }
        }
    }
}
