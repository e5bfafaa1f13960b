//! The master's side of the deploy family, as the messages reveal it: workers (ALIVE,
//! DECOMMISSIONED, DEAD), applications (WAITING, RUNNING, finished), their executors and the
//! drivers submitted in cluster mode, with the cores and memory each holds on its worker.

mod apps;
mod drivers;
mod workers;

// The tests build their traces with `validate::scenario`, which the `testing` feature brings.
#[cfg(all(test, feature = "testing"))]
mod tests;

use std::collections::{HashMap, HashSet, VecDeque};

use super::config::Config;
use super::conn::{AskDetail, Conn, Conversation, Delivery};
use super::event::ConnId;
use super::history::{History, Recent};
use super::sink::Sink;
use crate::messages::deploy::ExecutorAdded;
use crate::messages::{DeployMessage, DriverState, ExecutorState};
use crate::wire::handshake::Role;
use crate::wire::{Envelope, Reply};

/// Where a worker stands with the master.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum WorkerLife {
    Alive,
    /// Decommissioned at `at`, on the worker's own WorkerDecommissioning or by the master.
    Decommissioned {
        at: u64,
        by_worker: bool,
    },
    /// Lost (Spark's DEAD): its connection closed or it timed out.
    Lost,
}

/// A worker the master registered.
#[derive(Debug, Clone)]
pub(crate) struct Worker {
    pub(crate) host: String,
    /// The master it registered with (a master's endpoint id).
    pub(crate) master: String,
    pub(crate) life: WorkerLife,
    /// Cores and memory it registered, when the trace shows its registration.
    pub(crate) capacity: Option<(i64, i64)>,
    /// Cores and memory its live executors and drivers hold.
    pub(crate) used: (i64, i64),
    pub(crate) last_heartbeat: u64,
    /// The connection it registered on.
    pub(crate) conn: ConnId,
    /// Masters it was registered with before its current one, which may still hold it (a
    /// deposed leader that has not heard of it): each master's own view of the worker, judged
    /// by rule W7 when that master speaks of it.
    pub(crate) former: Vec<FormerMaster>,
}

/// A master a worker was registered with before another master took it over (rule W7: that
/// master tells applications the worker is gone only once it lost it itself).
#[derive(Debug, Clone)]
pub(crate) struct FormerMaster {
    /// The master's endpoint id.
    pub(crate) master: String,
    /// The connection the worker was registered on with it.
    pub(crate) conn: ConnId,
    /// The worker's last heartbeat on that connection.
    pub(crate) last_heartbeat: u64,
    /// That connection closed.
    pub(crate) lost: bool,
}

/// Most former masters remembered per worker.
const MAX_FORMER: usize = 8;

/// An application the master has not finished.
#[derive(Debug, Clone)]
pub(crate) struct App {
    pub(crate) conn: Option<ConnId>,
}

/// How an application finished.
#[derive(Debug, Clone, Copy)]
pub(crate) struct FinishedApp {
    pub(crate) at: u64,
    /// Finished by its client (UnregisterApplication, connection closed) rather than the master.
    pub(crate) by_client: bool,
}

/// An executor the master launched.
#[derive(Debug, Clone)]
pub(crate) struct Exec {
    pub(crate) worker: String,
    pub(crate) cores: i32,
    pub(crate) memory: i32,
    /// The last state its worker reported (LAUNCHING until then).
    pub(crate) state: ExecutorState,
    /// Whether its cores and memory count against its worker.
    pub(crate) holds: bool,
    /// Killed by the master (KillExecutor, application finished): the application is told nothing more.
    pub(crate) killed: bool,
    /// ExecutorAdded was sent.
    pub(crate) added: bool,
    /// States the application may be told, in order, with whether workerHost is set.
    pub(crate) owed: VecDeque<(ExecutorState, bool)>,
}

/// Most states owed to an application per executor; older ones are dropped.
const MAX_OWED: usize = 16;

/// The executors of one application.
#[derive(Debug)]
pub(crate) struct AppExecs {
    pub(crate) live: HashMap<i32, Exec>,
    pub(crate) finished: History<i32>,
}

/// A driver submitted in cluster mode.
#[derive(Debug, Clone)]
pub(crate) struct Driver {
    pub(crate) state: DriverState,
    pub(crate) worker: Option<String>,
    pub(crate) cores: i64,
    pub(crate) mem: i64,
    pub(crate) supervise: bool,
    /// The state before the last change and when it changed.
    pub(crate) prev: Option<(DriverState, u64)>,
    /// A SubmitDriverResponse announced it.
    pub(crate) answered: bool,
}

/// How a driver finished.
#[derive(Debug, Clone, Copy)]
pub(crate) struct FinishedDriver {
    pub(crate) state: DriverState,
    pub(crate) at: u64,
    pub(crate) by_worker: bool,
}

/// The deploy family's entities.
#[derive(Debug)]
pub(crate) struct Cluster {
    pub(crate) workers: HashMap<String, Worker>,
    pub(crate) apps: HashMap<String, App>,
    pub(crate) finished_apps: Recent<String, FinishedApp>,
    pub(crate) execs: HashMap<String, AppExecs>,
    pub(crate) drivers: HashMap<String, Driver>,
    pub(crate) finished_drivers: Recent<String, FinishedDriver>,
    /// E4: ExecutorAdded seen before its LaunchExecutor, by application and executor id (at most
    /// MAX_EARLY_ADDED).
    pub(crate) early_added: HashMap<(String, i32), EarlyAdd>,
    /// The same, oldest first, as (when, app, executor); entries whose add was matched since are
    /// skipped when they come up.
    pub(crate) early_order: VecDeque<(u64, String, i32)>,
    /// Masters (endpoint ids) whose worker connections the trace holds: their LaunchExecutors are
    /// in view, so an ExecutorAdded without one is caught (rules E4, N1).
    pub(crate) worker_side: HashSet<String>,
    /// Whether the trace holds an application client's connection (one sent something): when
    /// it does not (a worker's own trace), the applications are registered out of view, and
    /// rule P4 is not checked.
    pub(crate) app_side: bool,
    /// Executors a master declared LOST with their worker (rule W7), by (application, executor),
    /// with that worker: the master no longer knows them, so the worker's later reports on them
    /// are ignored, not judged (rule E3; Spark's Master logs "Got status update for unknown
    /// executor" and drops them).
    pub(crate) lost_with_worker: Recent<(String, i32), String>,
    cap: usize,
}

/// An ExecutorAdded seen before its LaunchExecutor (rule E4).
#[derive(Debug, Clone)]
pub(crate) struct EarlyAdd {
    pub(crate) added: ExecutorAdded,
    /// When it was seen.
    pub(crate) at: u64,
    /// The master that sent it (its endpoint id).
    pub(crate) master: String,
}

/// Most ExecutorAdded messages held while their LaunchExecutor has not been seen.
pub(crate) const MAX_EARLY_ADDED: usize = 1024;

/// What the handlers of one message on a worker's or an application's connection share.
#[derive(Debug, Clone, Copy)]
pub(super) struct Ctx<'a> {
    /// The connection it travelled on.
    pub(super) conn: ConnId,
    /// The id of the connection's master end (empty when it has none).
    pub(super) master: &'a str,
    pub(super) config: &'a Config,
}

impl Cluster {
    pub(crate) fn new(cap: usize) -> Self {
        Cluster {
            workers: HashMap::new(),
            apps: HashMap::new(),
            finished_apps: Recent::new(cap),
            execs: HashMap::new(),
            drivers: HashMap::new(),
            finished_drivers: Recent::new(cap),
            early_added: HashMap::new(),
            early_order: VecDeque::new(),
            worker_side: HashSet::new(),
            app_side: false,
            lost_with_worker: Recent::new(cap),
            cap,
        }
    }

    /// The executors of `app`, created empty when needed.
    pub(crate) fn execs_of(&mut self, app: &str) -> &mut AppExecs {
        let cap = self.cap;
        self.execs
            .entry(app.to_string())
            .or_insert_with(|| AppExecs {
                live: HashMap::new(),
                finished: History::new(cap),
            })
    }

    /// Handles one deploy-family envelope sent by `conn.ends[delivery.side]`.
    pub(crate) fn on_message(
        &mut self,
        conn: &mut Conn,
        env: &Envelope<DeployMessage>,
        delivery: Delivery<'_>,
        sink: &mut Sink<'_>,
    ) {
        let side = delivery.side;
        let from = conn.ends[side].role;
        match env {
            Envelope::Send(m) | Envelope::Ask { message: m, .. } => {
                if let Envelope::Ask { id, .. } = env {
                    let detail = match m {
                        DeployMessage::RequestKillDriver(k) => {
                            AskDetail::Driver(k.driver_id.clone())
                        }
                        DeployMessage::RequestDriverStatus(r) => {
                            AskDetail::Driver(r.driver_id.clone())
                        }
                        _ => AskDetail::None,
                    };
                    if let Some(p) = conn.pending[side].get_mut(id) {
                        p.detail = detail;
                    }
                }
                let master = conn
                    .ends
                    .iter()
                    .find(|e| e.role == Role::Master)
                    .map_or("", |e| e.id.as_str());
                let ctx = Ctx {
                    conn: delivery.conn_id,
                    master,
                    config: delivery.config,
                };
                match &mut conn.conversation {
                    Conversation::Worker(w) if from == Role::Worker => {
                        self.worker_sent(w, ctx, m, sink)
                    }
                    Conversation::Worker(w) => self.master_sent_worker(w, ctx, m, sink),
                    Conversation::App(a) if from == Role::AppClient => {
                        self.client_sent(a, ctx, m, sink)
                    }
                    Conversation::App(a) => self.master_sent_client(a, ctx, m, sink),
                    _ => {}
                }
            }
            Envelope::Reply {
                reply: Reply::Message(m),
                ..
            } => {
                if let Some(ask) = delivery.answered {
                    self.driver_reply(m, &ask.detail, delivery.config, sink);
                }
            }
            Envelope::Reply { .. } | Envelope::Failure { .. } | Envelope::Close(_) => {}
        }
    }

    /// A worker's connection closed: the master loses the worker registered on it.
    pub(crate) fn worker_conn_closed(&mut self, worker: &str, conn: ConnId, time: u64) {
        if let Some(w) = self.workers.get_mut(worker) {
            for f in w.former.iter_mut().filter(|f| f.conn == conn) {
                f.lost = true;
            }
        }
        if self.workers.get(worker).is_some_and(|w| w.conn == conn) {
            self.lose_worker(worker, time);
        }
    }

    /// An application client's connection closed: the master finishes its application.
    pub(crate) fn app_conn_closed(&mut self, app: &str, conn: ConnId, time: u64) {
        if self.apps.get(app).is_some_and(|a| a.conn == Some(conn)) {
            self.finish_app(app, time, true);
        }
    }
}

/// Rank of an executor state: states only move to a higher rank.
pub(crate) fn exec_rank(s: ExecutorState) -> u8 {
    match s {
        ExecutorState::Launching => 0,
        ExecutorState::Running => 1,
        ExecutorState::Decommissioned => 2,
        _ => 3,
    }
}

/// Adds (or with a negative sign removes) cores and memory held on `worker`.
pub(crate) fn hold(workers: &mut HashMap<String, Worker>, worker: &str, cores: i64, mem: i64) {
    if let Some(w) = workers.get_mut(worker) {
        w.used.0 = (w.used.0 + cores).max(0);
        w.used.1 = (w.used.1 + mem).max(0);
    }
}

/// Queues a state owed to the application, dropping the oldest beyond the bound.
pub(crate) fn owe(exec: &mut Exec, state: ExecutorState, with_host: bool) {
    if exec.owed.len() >= MAX_OWED {
        exec.owed.pop_front();
    }
    exec.owed.push_back((state, with_host));
}
