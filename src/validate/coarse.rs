//! A driver's scheduler backend and its executors (the coarse-grained family): executor
//! registration, task launches and status updates with per-executor core accounting, and the
//! cluster-manager conversation.

use std::collections::HashMap;

use super::config::{Config, TaskDecoder};
use super::conn::{
    AskDetail, Conn, Conversation, Delivery, ExecConn, ExecutorRegistration, PendingAsk,
};
use super::event::ConnId;
use super::history::History;
use super::rules::Rule;
use super::sink::Sink;
use super::violation::Entity;
use crate::messages::coarse::{LaunchTask, StatusUpdate};
use crate::messages::{CoarseMessage, Family, TaskState, Version};
use crate::wire::handshake::Role;
use crate::wire::{Envelope, Reply};

/// A task running on an executor (known by id when its connection has a task decoder).
#[derive(Debug, Clone, Copy)]
struct Task {
    state: TaskState,
    cpus: u32,
}

/// An executor registered with a driver.
#[derive(Debug)]
struct Executor {
    conn: ConnId,
    cores: i64,
    /// LaunchedExecutor received: the driver may offer it tasks.
    launched: bool,
    /// When it stopped taking tasks, and whether the executor itself said so.
    stopping: Option<(u64, bool)>,
    /// The driver sent it StopExecutor: it exits, and its running tasks end unreported (rule N2).
    stopped: bool,
    /// Cpus per task, from version 2 StatusUpdates (or the configured default).
    task_cpus: u32,
    /// Without a decoder: tasks launched and not finished.
    running: u64,
    /// With a decoder: the running tasks by id, and the cpus they hold.
    tasks: HashMap<i64, Task>,
    used: u64,
}

/// One driver's executors and tasks.
#[derive(Debug)]
struct Backend {
    executors: HashMap<String, Executor>,
    /// With a decoder: task ids seen, running or finished, for uniqueness.
    finished_tasks: History<i64>,
    /// Ids of the running tasks (of every executor).
    task_owner: HashMap<i64, ()>,
}

/// Every driver's backend, by the driver's endpoint id.
#[derive(Debug)]
pub(crate) struct Backends {
    drivers: HashMap<String, Backend>,
    cap: usize,
}

fn task_rank(s: TaskState) -> u8 {
    match s {
        TaskState::Launching => 0,
        TaskState::Running => 1,
        _ => 2,
    }
}

/// What the handlers of one message on an executor's connection share.
#[derive(Clone, Copy)]
struct Ctx<'a> {
    /// The connection it travelled on.
    conn: ConnId,
    /// The driver's id: the connection's driver end.
    driver: &'a str,
    /// The connection's protocol version.
    version: Version,
    config: &'a Config,
    /// The decoder of the connection's LaunchTask payloads: the configured one, or none when
    /// they are Spark's own ([`Conn::task_decoder`]).
    decoder: Option<&'a dyn TaskDecoder>,
}

impl Backends {
    pub(crate) fn new(cap: usize) -> Self {
        Backends {
            drivers: HashMap::new(),
            cap,
        }
    }

    fn backend(&mut self, driver: &str) -> &mut Backend {
        let cap = self.cap;
        self.drivers
            .entry(driver.to_string())
            .or_insert_with(|| Backend {
                executors: HashMap::new(),
                finished_tasks: History::new(cap),
                task_owner: HashMap::new(),
            })
    }

    /// An executor's connection closed: the driver removes it and its tasks.
    pub(crate) fn executor_conn_closed(&mut self, driver: &str, exec: &str, conn: ConnId) {
        let Some(b) = self.drivers.get_mut(driver) else {
            return;
        };
        if b.executors.get(exec).is_some_and(|e| e.conn == conn) {
            if let Some(e) = b.executors.remove(exec) {
                for id in e.tasks.keys() {
                    b.task_owner.remove(id);
                    b.finished_tasks.insert(*id, ());
                }
            }
        }
        if b.executors.is_empty() && b.task_owner.is_empty() && b.finished_tasks.len() == 0 {
            self.drivers.remove(driver);
        }
    }

    /// What executor `exec` of `driver` still owes on its connection `conn` (rule N2), as
    /// [`finish`](Self::finish) would report it, changing nothing.
    pub(crate) fn owed_on(&self, driver: &str, exec: &str, conn: ConnId, sink: &mut Sink<'_>) {
        let Some(e) = self
            .drivers
            .get(driver)
            .and_then(|b| b.executors.get(exec))
            .filter(|e| e.conn == conn && !e.stopped)
        else {
            return;
        };
        unended(driver, exec, e, sink);
    }

    /// The end of the trace: every task still running on an executor that is registered (its
    /// connection open) and was not stopped breaks rule N2, by task id when they are known, else
    /// once per executor with their count.
    pub(crate) fn finish(&mut self, sink: &mut Sink<'_>) {
        let mut drivers: Vec<&String> = self.drivers.keys().collect();
        drivers.sort_unstable();
        for driver in drivers {
            let Some(b) = self.drivers.get(driver) else {
                continue;
            };
            let mut execs: Vec<(&String, &Executor)> =
                b.executors.iter().filter(|(_, e)| !e.stopped).collect();
            execs.sort_unstable_by(|a, b| a.0.cmp(b.0));
            for (exec, e) in execs {
                unended(driver, exec, e, sink);
            }
        }
    }

    /// Handles one coarse-family envelope sent by `conn.ends[delivery.side]`.
    pub(crate) fn on_message(
        &mut self,
        conn: &mut Conn,
        env: &Envelope<CoarseMessage>,
        delivery: Delivery<'_>,
        sink: &mut Sink<'_>,
    ) {
        let side = delivery.side;
        let decoder = conn.task_decoder(delivery.config);
        let Conn {
            ends,
            version,
            pending,
            conversation,
            ..
        } = conn;
        let from = ends[side].role;
        // Borrowed, not cloned: this runs for every task's messages.
        let Some(driver) = ends
            .iter()
            .find(|e| e.role == Role::Driver)
            .map(|e| e.id.as_str())
        else {
            return;
        };
        let ctx = Ctx {
            conn: delivery.conn_id,
            driver,
            version: *version,
            config: delivery.config,
            decoder,
        };
        match conversation {
            Conversation::Executor(x) => {
                let mut detail = None;
                match env {
                    Envelope::Send(m) | Envelope::Ask { message: m, .. } => {
                        if from == Role::Executor {
                            detail = self.executor_sent(x, ctx, m, sink);
                        } else {
                            self.driver_sent(x, ctx, m, sink);
                        }
                    }
                    Envelope::Reply { reply, .. } => {
                        if let Some(PendingAsk {
                            detail: AskDetail::RegisterExecutor(registration),
                            ..
                        }) = delivery.answered
                        {
                            if matches!(reply, Reply::Bool(true)) {
                                self.registered(x, ctx, registration, sink);
                            }
                        }
                    }
                    Envelope::Failure { .. } | Envelope::Close(_) => {}
                }
                if let (Envelope::Ask { id, .. }, Some(d)) = (env, detail) {
                    if let Some(p) = pending[side].get_mut(id) {
                        p.detail = d;
                    }
                }
            }
            Conversation::ClusterManager(registered) => {
                let m = match env {
                    Envelope::Send(m) | Envelope::Ask { message: m, .. } => m,
                    _ => return,
                };
                match m {
                    CoarseMessage::RegisterClusterManager(_) => *registered = true,
                    CoarseMessage::RequestExecutors(_)
                    | CoarseMessage::KillExecutors(_)
                    | CoarseMessage::GetExecutorLossReason(_)
                        if !*registered =>
                    {
                        sink.flag(
                            Rule::ClusterManagerRegisterFirst,
                            format!(
                                "{} only after RegisterClusterManager on this connection",
                                m.name()
                            ),
                            None,
                        );
                    }
                    _ => {}
                }
            }
            _ => {}
        }
    }

    /// A message from an executor; returns what an ask was about.
    fn executor_sent(
        &mut self,
        x: &mut ExecConn,
        ctx: Ctx<'_>,
        m: &CoarseMessage,
        sink: &mut Sink<'_>,
    ) -> Option<AskDetail> {
        let driver = ctx.driver;
        match m {
            CoarseMessage::RegisterExecutor(r) => {
                let duplicate = self
                    .drivers
                    .get(driver)
                    .is_some_and(|b| b.executors.contains_key(&r.executor_id));
                return Some(AskDetail::RegisterExecutor(ExecutorRegistration {
                    id: r.executor_id.clone(),
                    cores: r.cores,
                    duplicate,
                }));
            }
            CoarseMessage::RetrieveSparkAppConfig(_)
            | CoarseMessage::IsExecutorAlive(_)
            | CoarseMessage::RetrieveLastAllocatedExecutorId(_) => return None,
            _ => {}
        }
        let Some(exec) = x.exec.as_deref() else {
            sink.flag(
                Rule::ExecutorRegisterFirst,
                format!(
                    "only RetrieveSparkAppConfig or RegisterExecutor until registered on this connection, found {}",
                    m.name()
                ),
                None,
            );
            return None;
        };
        let carried = match m {
            CoarseMessage::LaunchedExecutor(l) => Some(&l.executor_id),
            CoarseMessage::StatusUpdate(s) => Some(&s.executor_id),
            CoarseMessage::ExecutorDecommissioning(d) => Some(&d.executor_id),
            _ => None,
        };
        if let Some(carried) = carried {
            if carried != exec {
                sink.flag(
                    Rule::ExecutorId,
                    format!("executor id {exec}, registered on this connection; found {carried}"),
                    Some(Entity::Executor {
                        driver: driver.to_string(),
                        exec: exec.to_string(),
                    }),
                );
                return None;
            }
        }
        let now = sink.time;
        let b = self.drivers.get_mut(driver)?;
        let e = b.executors.get_mut(exec)?;
        match m {
            CoarseMessage::LaunchedExecutor(_) => e.launched = true,
            CoarseMessage::ExecutorDecommissioning(_) => {
                e.stopping.get_or_insert((now, true));
            }
            CoarseMessage::StatusUpdate(s) => b.status_update(exec, ctx, s, sink),
            _ => {}
        }
        None
    }

    /// The driver accepted a RegisterExecutor.
    fn registered(
        &mut self,
        x: &mut ExecConn,
        ctx: Ctx<'_>,
        registration: ExecutorRegistration,
        sink: &mut Sink<'_>,
    ) {
        let ExecutorRegistration {
            id,
            cores,
            duplicate,
        } = registration;
        let driver = ctx.driver;
        if duplicate {
            sink.flag(
                Rule::ExecutorDuplicateId,
                format!(
                    "a failure such as \"Duplicate executor ID: {id}\": {id} is already registered"
                ),
                Some(Entity::Executor {
                    driver: driver.to_string(),
                    exec: id,
                }),
            );
            return;
        }
        self.backend(driver).executors.insert(
            id.clone(),
            Executor {
                conn: ctx.conn,
                cores: i64::from(cores),
                launched: false,
                stopping: None,
                stopped: false,
                task_cpus: ctx.config.default_task_cpus,
                running: 0,
                tasks: HashMap::new(),
                used: 0,
            },
        );
        x.exec = Some(id);
    }

    /// A message from the driver to an executor.
    fn driver_sent(
        &mut self,
        x: &mut ExecConn,
        ctx: Ctx<'_>,
        m: &CoarseMessage,
        sink: &mut Sink<'_>,
    ) {
        let driver = ctx.driver;
        let command = matches!(
            m,
            CoarseMessage::LaunchTask(_)
                | CoarseMessage::KillTask(_)
                | CoarseMessage::StopExecutor(_)
                | CoarseMessage::DecommissionExecutor(_)
                | CoarseMessage::UpdateDelegationTokens(_)
                | CoarseMessage::UpdateExecutorLogLevel(_)
                | CoarseMessage::TaskThreadDump(_)
        );
        if !command {
            return;
        }
        let registered = x.exec.as_deref().filter(|id| {
            self.drivers
                .get(driver)
                .is_some_and(|b| b.executors.contains_key(*id))
        });
        let Some(exec) = registered else {
            sink.flag(
                Rule::ExecutorDriverTargets,
                format!(
                    "{} only to an executor registered on this connection",
                    m.name()
                ),
                None,
            );
            return;
        };
        let now = sink.time;
        let Some(b) = self.drivers.get_mut(driver) else {
            return;
        };
        let Some(e) = b.executors.get_mut(exec) else {
            return;
        };
        match m {
            CoarseMessage::StopExecutor(_) | CoarseMessage::DecommissionExecutor(_) => {
                e.stopping.get_or_insert((now, false));
                if matches!(m, CoarseMessage::StopExecutor(_)) {
                    e.stopped = true;
                }
            }
            CoarseMessage::LaunchTask(l) => b.launch_task(exec, ctx, l, sink),
            _ => {}
        }
    }
}

impl Backend {
    /// LaunchTask to registered executor `exec`.
    fn launch_task(&mut self, exec: &str, ctx: Ctx<'_>, l: &LaunchTask, sink: &mut Sink<'_>) {
        let Ctx {
            driver,
            config,
            decoder,
            ..
        } = ctx;
        let now = sink.time;
        let exec_entity = || {
            Some(Entity::Executor {
                driver: driver.to_string(),
                exec: exec.to_string(),
            })
        };
        let Some(e) = self.executors.get_mut(exec) else {
            return;
        };
        if !e.launched {
            sink.flag(
                Rule::ExecutorDriverTargets,
                format!("LaunchTask only after executor {exec}'s LaunchedExecutor"),
                exec_entity(),
            );
        }
        if let Some((at, by_executor)) = e.stopping {
            if !(by_executor && config.crossed(at, now)) {
                sink.flag(
                    Rule::ExecutorNoTasksAfterStop,
                    format!(
                        "no LaunchTask: executor {exec} was stopped or decommissioned at {at} ms"
                    ),
                    exec_entity(),
                );
            }
        }
        let info = match decoder {
            Some(decoder) => match decoder.task_info(l.data.as_slice()) {
                Some(info) => Some(info),
                None => {
                    sink.flag(
                        Rule::TaskDecodable,
                        format!(
                            "a task description the task decoder reads ({} bytes)",
                            l.data.len()
                        ),
                        Some(Entity::Task {
                            exec: exec.to_string(),
                            task: None,
                        }),
                    );
                    return;
                }
            },
            None => None,
        };
        let cpus = info.map_or(e.task_cpus, |i| i.cpus);
        if e.used + u64::from(cpus) > e.cores.max(0) as u64 {
            sink.flag(
                Rule::TaskSlots,
                format!(
                    "at most {} cores in use on executor {exec}; {} in use, the task needs {cpus}",
                    e.cores, e.used
                ),
                Some(Entity::Task {
                    exec: exec.to_string(),
                    task: info.map(|i| i.task_id),
                }),
            );
        }
        match info {
            Some(info) => {
                if self.task_owner.contains_key(&info.task_id)
                    || self.finished_tasks.contains(&info.task_id)
                {
                    sink.flag(
                        Rule::TaskIdUnique,
                        format!("a new task id; {} was launched before", info.task_id),
                        Some(Entity::Task {
                            exec: exec.to_string(),
                            task: Some(info.task_id),
                        }),
                    );
                    return;
                }
                e.tasks.insert(
                    info.task_id,
                    Task {
                        state: TaskState::Launching,
                        cpus: info.cpus,
                    },
                );
                e.used += u64::from(info.cpus);
                self.task_owner.insert(info.task_id, ());
            }
            None => {
                e.running += 1;
                e.used += u64::from(cpus);
            }
        }
    }

    /// StatusUpdate from registered executor `exec`.
    fn status_update(&mut self, exec: &str, ctx: Ctx<'_>, s: &StatusUpdate, sink: &mut Sink<'_>) {
        let Ctx {
            version, decoder, ..
        } = ctx;
        let entity = || {
            Some(Entity::Task {
                exec: exec.to_string(),
                task: Some(s.task_id),
            })
        };
        let Some(e) = self.executors.get_mut(exec) else {
            return;
        };
        let reported_cpus =
            (version >= Version::V2 && s.task_cpus > 0).then_some(s.task_cpus as u32);
        if decoder.is_none() {
            if let Some(c) = reported_cpus {
                e.task_cpus = c;
            }
            if e.running == 0 {
                sink.flag(
                    Rule::TaskKnown,
                    format!(
                        "StatusUpdate only while a task launched on executor {exec} runs; none does"
                    ),
                    entity(),
                );
                return;
            }
            if s.state.is_finished() {
                e.running -= 1;
                e.used = e.running * u64::from(e.task_cpus);
            }
            return;
        }
        let Some(t) = e.tasks.get_mut(&s.task_id) else {
            if self.finished_tasks.contains(&s.task_id) {
                sink.flag(
                    Rule::TaskTransition,
                    format!("nothing after task {} finished", s.task_id),
                    entity(),
                );
            } else {
                sink.flag(
                    Rule::TaskKnown,
                    format!(
                        "StatusUpdate only for a task launched on executor {exec}; {} was not",
                        s.task_id
                    ),
                    entity(),
                );
            }
            return;
        };
        if let Some(c) = reported_cpus {
            if c != t.cpus {
                sink.flag(
                    Rule::TaskCpus,
                    format!("taskCpus {}, as launched; found {c}", t.cpus),
                    entity(),
                );
            }
        }
        if task_rank(s.state) <= task_rank(t.state) {
            sink.flag(
                Rule::TaskTransition,
                format!("a state after {}, found {}", t.state, s.state),
                entity(),
            );
            return;
        }
        t.state = s.state;
        if s.state.is_finished() {
            let cpus = t.cpus;
            e.tasks.remove(&s.task_id);
            e.used = e.used.saturating_sub(u64::from(cpus));
            self.task_owner.remove(&s.task_id);
            self.finished_tasks.insert(s.task_id, ());
        }
    }
}

/// Flags rule N2 for executor `exec` of `driver`: each task still running, by id when the ids
/// are known, else once with their count.
fn unended(driver: &str, exec: &str, e: &Executor, sink: &mut Sink<'_>) {
    let mut tasks: Vec<(&i64, &Task)> = e.tasks.iter().collect();
    tasks.sort_unstable_by_key(|(id, _)| **id);
    for (id, t) in tasks {
        sink.flag(
            Rule::EndTaskEnded,
            format!(
                "a final StatusUpdate for task {id} (last {}) before the end, or the loss of executor {exec} of driver {driver}",
                t.state
            ),
            Some(Entity::Task {
                exec: exec.to_string(),
                task: Some(*id),
            }),
        );
    }
    if e.running > 0 {
        sink.flag(
            Rule::EndTaskEnded,
            format!(
                "a final StatusUpdate for each task launched on executor {exec} of driver {driver} before the end, or its loss; {} still running",
                e.running
            ),
            Some(Entity::Task {
                exec: exec.to_string(),
                task: None,
            }),
        );
    }
}
