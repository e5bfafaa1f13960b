//! What the validator remembers of one open connection: its ends, version, pending asks, and the
//! state of the conversation its kind of connection carries.

use std::collections::{HashMap, VecDeque};

use super::config::{Config, TaskDecoder};
use super::event::{ConnId, Endpoint, TaskPayloads};
use super::spec::ReplyType;
use crate::messages::Version;
use crate::wire::handshake::Role;

/// The kinds of connection Spark's standalone cluster has.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ConnKind {
    WorkerMaster,
    AppMaster,
    DriverClientMaster,
    UiMaster,
    UiWorker,
    ExecutorDriver,
    ClusterManagerDriver,
    /// An executor's watch of its worker (Spark's WorkerWatcher): no catalogued message, only
    /// the connection's life (and endpoint checks outside the catalogue).
    ExecutorWorker,
    /// A pair of roles that never talk (already reported under C4).
    Other,
}

impl ConnKind {
    pub(crate) fn of(a: Role, b: Role) -> ConnKind {
        use Role::*;
        let pair = |x: Role, y: Role| (a == x && b == y) || (a == y && b == x);
        if pair(Worker, Master) {
            ConnKind::WorkerMaster
        } else if pair(AppClient, Master) {
            ConnKind::AppMaster
        } else if pair(DriverClient, Master) {
            ConnKind::DriverClientMaster
        } else if pair(Ui, Master) {
            ConnKind::UiMaster
        } else if pair(Ui, Worker) {
            ConnKind::UiWorker
        } else if pair(Executor, Driver) {
            ConnKind::ExecutorDriver
        } else if pair(ClusterManager, Driver) {
            ConnKind::ClusterManagerDriver
        } else if pair(Executor, Worker) {
            ConnKind::ExecutorWorker
        } else {
            ConnKind::Other
        }
    }
}

/// What an ask was about, kept until it is answered.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum AskDetail {
    None,
    /// RegisterExecutor: the executor it registers.
    RegisterExecutor(ExecutorRegistration),
    /// RequestKillDriver or RequestDriverStatus: the driver asked about.
    Driver(String),
}

/// A RegisterExecutor's executor: the id, its cores, and whether the id was already registered.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ExecutorRegistration {
    pub(crate) id: String,
    pub(crate) cores: i32,
    pub(crate) duplicate: bool,
}

/// An ask waiting for its reply.
#[derive(Debug, Clone)]
pub(crate) struct PendingAsk {
    pub(crate) name: &'static str,
    pub(crate) reply: Option<ReplyType>,
    pub(crate) detail: AskDetail,
}

/// A RegisterWorker waiting for its answer.
#[derive(Debug, Clone)]
pub(crate) struct PendingRegistration {
    pub(crate) id: String,
    pub(crate) host: String,
    pub(crate) cores: i32,
    pub(crate) memory: i32,
}

/// Most asks tracked per side of a connection. Beyond it new asks are not tracked (their replies
/// then break rule A2): memory stays bounded even when a peer never answers.
pub(crate) const MAX_PENDING_ASKS: usize = 1 << 16;

/// Most RegisterWorker retries remembered while unanswered.
pub(crate) const MAX_PENDING_REGISTRATIONS: usize = 64;

/// A worker–master conversation.
#[derive(Debug, Default)]
pub(crate) struct WorkerConn {
    /// The worker registered on this connection (by RegisteredWorker or failover).
    pub(crate) worker: Option<String>,
    pub(crate) pending: VecDeque<PendingRegistration>,
    /// MasterChanged sent, not yet answered by WorkerSchedulerStateResponse.
    pub(crate) master_changed: bool,
    /// The drivers the worker's last WorkerLatestState on this connection listed: the master may
    /// send each a KillDriver once when it does not have it on that worker (SPARK-13604).
    pub(crate) reported_drivers: std::collections::BTreeSet<String>,
}

/// An application client–master conversation.
#[derive(Debug, Default)]
pub(crate) struct AppConn {
    /// The application registered on this connection.
    pub(crate) app: Option<String>,
    /// RegisterApplication messages not yet answered.
    pub(crate) pending: u32,
    /// MasterChanged sent, not yet answered by MasterChangeAcknowledged.
    pub(crate) master_changed: bool,
}

/// An executor–driver conversation.
#[derive(Debug, Default)]
pub(crate) struct ExecConn {
    /// The executor registered on this connection.
    pub(crate) exec: Option<String>,
}

/// The conversation a connection carries.
#[derive(Debug)]
pub(crate) enum Conversation {
    Worker(WorkerConn),
    App(AppConn),
    Executor(ExecConn),
    /// Cluster manager–driver: whether RegisterClusterManager was sent.
    ClusterManager(bool),
    /// Driver clients and UIs: asks and replies only.
    Plain,
}

/// How an envelope reached the state of its family: what its handlers share.
#[derive(Debug)]
pub(crate) struct Delivery<'a> {
    /// The connection it travelled on.
    pub(crate) conn_id: ConnId,
    /// The index in the connection's `ends` of the end that sent it.
    pub(crate) side: usize,
    /// The ask a reply or failure answered, taken off the other end's pending asks.
    pub(crate) answered: Option<PendingAsk>,
    pub(crate) config: &'a Config,
}

/// One open connection.
#[derive(Debug)]
pub(crate) struct Conn {
    /// The client (dialled) and the server.
    pub(crate) ends: [Endpoint; 2],
    pub(crate) version: Version,
    /// Whose task descriptions its LaunchTask and StatusUpdate payloads are.
    pub(crate) tasks: TaskPayloads,
    pub(crate) kind: ConnKind,
    /// Asks sent by `ends[i]`, pending, by id.
    pub(crate) pending: [HashMap<u64, PendingAsk>; 2],
    pub(crate) conversation: Conversation,
}

impl Conn {
    pub(crate) fn new(
        client: Endpoint,
        server: Endpoint,
        version: Version,
        tasks: TaskPayloads,
    ) -> Conn {
        let kind = ConnKind::of(client.role, server.role);
        let conversation = match kind {
            ConnKind::WorkerMaster => Conversation::Worker(WorkerConn::default()),
            ConnKind::AppMaster => Conversation::App(AppConn::default()),
            ConnKind::ExecutorDriver => Conversation::Executor(ExecConn::default()),
            ConnKind::ClusterManagerDriver => Conversation::ClusterManager(false),
            _ => Conversation::Plain,
        };
        Conn {
            ends: [client, server],
            version,
            tasks,
            kind,
            pending: [HashMap::new(), HashMap::new()],
            conversation,
        }
    }

    /// The index of the end `from`, when `from` → `to` joins the two ends.
    pub(crate) fn side_of(&self, from: &Endpoint, to: &Endpoint) -> Option<usize> {
        if &self.ends[0] == from && &self.ends[1] == to {
            Some(0)
        } else if &self.ends[1] == from && &self.ends[0] == to {
            Some(1)
        } else {
            None
        }
    }

    /// The task decoder that reads this connection's LaunchTask payloads: the configured one,
    /// or none when they are Spark's own.
    pub(crate) fn task_decoder<'c>(&self, config: &'c Config) -> Option<&'c dyn TaskDecoder> {
        match self.tasks {
            TaskPayloads::Spark => None,
            TaskPayloads::Sparkwire => config.task_decoder.as_deref(),
        }
    }

    /// The endpoint of `role` on this connection.
    pub(crate) fn end(&self, role: Role) -> Option<&Endpoint> {
        self.ends.iter().find(|e| e.role == role)
    }
}
