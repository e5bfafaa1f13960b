//! The oracle: every connection's frames through the validator in strict order, and the global
//! invariants, each checked at every step of the cluster and named in a [`Failure`].

use std::collections::{BTreeMap, BTreeSet};

use crate::messages::{
    ApplicationState, CoarseMessage, DeployMessage, Family as _, RecoveryState, Version,
    WorkerState,
};
use crate::node::sim::{Cluster, Frame, Hello, LinkId, MasterNode, NodeId, Wire, WorkerNode};
use crate::validate::{Config, Endpoint, Validator, Violation};
use crate::wire::handshake::Role;
use crate::wire::Envelope;

/// An invariant: its name, and where the rule comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Invariant {
    /// Its name, as a failure reports it.
    pub name: &'static str,
    /// What it says, and the sentence of the spec or the place in Spark's source it comes from.
    pub rule: &'static str,
}

/// Every connection's frames keep the protocol's rules, in strict order.
pub const PROTOCOL: Invariant = Invariant {
    name: "protocol",
    rule: "Every frame on every connection keeps the rules of protocol/rules.md, checked by the \
           validator in strict order (validate::Config::strict_order: no crossing allowed).",
};
/// One leader at a time.
pub const SINGLE_LEADER: Invariant = Invariant {
    name: "single-leader",
    rule: "Never two masters acting as leader at once: at most one elected master holds the \
           store's leadership, and a master never elected writes nothing only a leader writes \
           (RegisteredWorker, RegisteredApplication, LaunchExecutor, LaunchDriver, MasterChanged, \
           ExecutorAdded). Spark: Master.scala answers RegisterWorker with MasterInStandby and \
           ignores RegisterApplication in STANDBY; ZooKeeperLeaderElectionAgent and \
           MasterSuite's leadership tests.",
};
/// A failover keeps what answered.
pub const FAILOVER_KEEPS_ANSWERED: Invariant = Invariant {
    name: "failover-keeps-answered",
    rule: "No worker or application lost across a failover that must survive it: a worker whose \
           WorkerSchedulerStateResponse, or an application whose MasterChangeAcknowledged, \
           reached the recovering master over a connection still open is ALIVE (RUNNING or \
           WAITING) when the recovery completes. Spark: Master.scala, WorkerSchedulerStateResponse \
           sets the worker ALIVE and completeRecovery removes only the UNKNOWN ones.",
};
/// Grants stay within a worker's capacity.
pub const WITHIN_CAPACITY: Invariant = Invariant {
    name: "within-capacity",
    rule: "Cores and memory granted on a worker never exceed its own, in any master's view or \
           the worker's. Spark: Master.scala scheduleExecutorsOnWorkers (canLaunchExecutor: \
           coresFree and memoryFree) and Worker.scala's coresUsed/memoryUsed.",
};
/// No executor for a finished application.
pub const NO_EXECUTOR_FOR_FINISHED_APP: Invariant = Invariant {
    name: "no-executor-for-finished-app",
    rule: "A master launches no executor for an application it finished (its client \
           unregistered or disconnected, or the master removed it). Spark: Master.scala \
           removeApplication takes the application out of waitingApps, which \
           startExecutorsOnWorkers alone schedules.",
};
/// Each task's final state once.
pub const TASK_FINAL_ONCE: Invariant = Invariant {
    name: "task-final-once",
    rule: "Every task's final state (FINISHED, FAILED, KILLED, LOST) is reported once. Spark: \
           Executor.scala's TaskRunner sends one final statusUpdate per task; \
           TaskSchedulerImpl.statusUpdate removes the task on its final state.",
};
/// Jobs end once the faults stop.
pub const LIVENESS: Invariant = Invariant {
    name: "liveness",
    rule: "Once the faults stop and every node is healed, every job whose cluster has room \
           (an executor of its application fits a worker) ends within the bound. Spark: \
           Master.scala schedule() runs on every registration and change, Worker.scala \
           reregisterWithMaster retries until a master answers, and StandaloneAppClient \
           registers again with every master until one does.",
};

/// Every invariant the oracle checks.
pub const INVARIANTS: [Invariant; 7] = [
    PROTOCOL,
    SINGLE_LEADER,
    FAILOVER_KEEPS_ANSWERED,
    WITHIN_CAPACITY,
    NO_EXECUTOR_FOR_FINISHED_APP,
    TASK_FINAL_ONCE,
    LIVENESS,
];

/// A broken invariant.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    /// Which.
    pub invariant: &'static str,
    /// When, ms of simulated time.
    pub at_ms: u64,
    /// What happened.
    pub detail: String,
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} at {} ms: {}",
            self.invariant, self.at_ms, self.detail
        )
    }
}

struct LinkInfo {
    ends: [(NodeId, Endpoint); 2],
    /// The master end's node, on a link to a master.
    master: Option<NodeId>,
    /// Applications registered (or acknowledged) on it, by the master.
    apps: BTreeSet<String>,
}

/// What a recovering master heard back.
#[derive(Default)]
struct Recovery {
    workers: BTreeMap<String, LinkId>,
    apps: BTreeMap<String, LinkId>,
}

/// One validator and its view of the open links: their ends, version and authority.
struct View {
    validator: Validator,
    links: BTreeMap<LinkId, ViewLink>,
}

struct ViewLink {
    ends: [(NodeId, Endpoint); 2],
    version: Version,
    /// The end whose view the rules on this link mostly judge: the master on a link to a
    /// master, else the driver on a link to a driver ([`authority`]).
    authority: Option<NodeId>,
}

/// The end of a connection that answers for it: the master on a link to a master (worker,
/// application client, driver client), else the driver (executor, cluster manager), else the
/// worker (an executor's watch, a UI).
fn authority(ends: [(NodeId, &Hello); 2]) -> Option<NodeId> {
    [Role::Master, Role::Driver, Role::Worker]
        .iter()
        .find_map(|r| ends.iter().find(|(_, h)| h.role == *r).map(|(n, _)| *n))
}

impl View {
    fn new(config: &Config) -> View {
        View {
            validator: Validator::new(config.clone()),
            links: BTreeMap::new(),
        }
    }

    /// Whether `from` is the authority of `link` (false on a link this view does not hold).
    fn by_authority(&self, link: LinkId, from: NodeId) -> Option<bool> {
        self.links.get(&link).map(|l| l.authority == Some(from))
    }

    fn open(
        &mut self,
        ms: u64,
        link: LinkId,
        client: &(NodeId, Hello),
        server: &(NodeId, Hello),
        version: Version,
    ) -> Vec<Violation> {
        let (c, s) = (endpoint(client.0, &client.1), endpoint(server.0, &server.1));
        let v = self.validator.open(ms, link, &c, &s, version);
        let authority = authority([(client.0, &client.1), (server.0, &server.1)]);
        self.links.insert(
            link,
            ViewLink {
                ends: [(client.0, c), (server.0, s)],
                version,
                authority,
            },
        );
        v
    }

    fn close(&mut self, ms: u64, link: LinkId) -> Vec<Violation> {
        self.links.remove(&link);
        self.validator.close(ms, link)
    }

    /// The validator's verdicts on `frame`, written on `link` by `from`, judged at `ms`.
    fn frame(&mut self, ms: u64, link: LinkId, from: NodeId, frame: &Frame) -> Vec<Violation> {
        let Some(l) = self.links.get(&link) else {
            return Vec::new();
        };
        let side = usize::from(l.ends[0].0 != from);
        let (f, t, version) = (&l.ends[side].1, &l.ends[1 - side].1, l.version);
        let v = &mut self.validator;
        match frame.clone() {
            Frame::Message(m) => v.message(ms, link, f, t, version, &Envelope::Send(m)),
            Frame::Ask(id, message) => {
                v.message(ms, link, f, t, version, &Envelope::Ask { id, message })
            }
            Frame::Answer(id, a) => {
                let env: Envelope<DeployMessage> = match a {
                    Ok(reply) => Envelope::Reply { id, reply },
                    Err(error) => Envelope::Failure { id, error },
                };
                v.message(ms, link, f, t, version, &env)
            }
            Frame::CoarseMessage(m) => v.message(ms, link, f, t, version, &Envelope::Send(m)),
            Frame::CoarseAsk(id, message) => {
                v.message(ms, link, f, t, version, &Envelope::Ask { id, message })
            }
            Frame::CoarseAnswer(id, a) => {
                let env: Envelope<CoarseMessage> = match a {
                    Ok(reply) => Envelope::Reply { id, reply },
                    Err(error) => Envelope::Failure { id, error },
                };
                v.message(ms, link, f, t, version, &env)
            }
        }
    }
}

/// The oracle of one run; see the [module docs](self).
pub struct Oracle {
    /// The validator that judges what the authority of each link writes
    /// ([`Oracle::protocol`]).
    authorities: View,
    /// The validator that judges what the other end of each link writes.
    peers: View,
    links: BTreeMap<LinkId, LinkInfo>,
    /// Master nodes elected at some point of their process's life.
    elected: BTreeSet<NodeId>,
    /// Per master node: applications it finished.
    finished: BTreeMap<NodeId, BTreeSet<String>>,
    /// Per master node recovering: who answered.
    recovering: BTreeMap<NodeId, Recovery>,
    /// Per driver node and task: final states reported.
    finals: BTreeMap<(NodeId, i64), u32>,
    /// Peers' frames the authorities' validator takes when the authority reads them: by their
    /// number, their link and writer.
    unread: BTreeMap<u64, (LinkId, NodeId)>,
    /// Whether the peers' validator (write order) has accepted every authority's frame so far.
    peers_trusted: bool,
    /// How many frames it checked.
    pub frames: u64,
}

impl Default for Oracle {
    fn default() -> Self {
        Oracle::new()
    }
}

/// A node's endpoint for the validator: drivers and their application clients by address, as
/// several share their hello's id.
///
/// A master by its process (`node`): a master restarted at the same address is another process
/// that knows its predecessor's workers and applications only from the store, as Spark's does.
fn endpoint(node: NodeId, h: &Hello) -> Endpoint {
    match (h.role, &h.addr) {
        (Role::Master, _) => Endpoint::new(h.role, format!("{}#{node}", h.id)),
        (Role::Driver | Role::AppClient, Some(a)) => Endpoint::new(h.role, format!("{}@{a}", h.id)),
        _ => Endpoint::new(h.role, h.id.clone()),
    }
}

fn fail(invariant: Invariant, at_ms: u64, detail: String) -> Result<(), Failure> {
    Err(Failure {
        invariant: invariant.name,
        at_ms,
        detail,
    })
}

/// Messages only a leading master writes.
fn leader_only(m: &DeployMessage) -> bool {
    matches!(
        m,
        DeployMessage::RegisteredWorker(_)
            | DeployMessage::RegisteredApplication(_)
            | DeployMessage::LaunchExecutor(_)
            | DeployMessage::LaunchDriver(_)
            | DeployMessage::MasterChanged(_)
            | DeployMessage::ExecutorAdded(_)
    )
}

impl Oracle {
    /// A fresh oracle with a strict validator reading sparkwire's task descriptions.
    pub fn new() -> Oracle {
        let config = Config {
            strict_order: true,
            worker_timeout_ms: super::WORKER_TIMEOUT.as_millis() as u64,
            ..Config::sparkwire()
        };
        Oracle {
            authorities: View::new(&config),
            peers: View::new(&config),
            links: BTreeMap::new(),
            elected: BTreeSet::new(),
            finished: BTreeMap::new(),
            recovering: BTreeMap::new(),
            finals: BTreeMap::new(),
            unread: BTreeMap::new(),
            peers_trusted: true,
            frames: 0,
        }
    }

    /// Master node `node` is elected (told by the run, which elects).
    pub fn elected(&mut self, node: NodeId) {
        self.elected.insert(node);
    }

    /// Checks one thing that went over the links, at `ms`, against the named invariants (a
    /// step's events go through [`Oracle::named`] before [`Oracle::protocol`], so that a bug an
    /// invariant names is reported by its name).
    pub fn named(&mut self, ms: u64, w: &Wire, cluster: &Cluster) -> Result<(), Failure> {
        match w {
            Wire::Open {
                link,
                client,
                server,
                ..
            } => {
                let (c, s) = (endpoint(client.0, &client.1), endpoint(server.0, &server.1));
                let master = [client, server]
                    .iter()
                    .find(|(_, h)| h.role == Role::Master)
                    .map(|(n, _)| *n);
                self.links.insert(
                    *link,
                    LinkInfo {
                        ends: [(client.0, c), (server.0, s)],
                        master,
                        apps: BTreeSet::new(),
                    },
                );
                Ok(())
            }
            Wire::Closed { link } => {
                if let Some(info) = self.links.remove(link) {
                    if let Some(m) = info.master {
                        self.finished.entry(m).or_default().extend(info.apps);
                    }
                }
                Ok(())
            }
            Wire::Delivered {
                link, to, frame, ..
            } => self.delivered(ms, *link, *to, frame, cluster),
            Wire::Written {
                link, from, frame, ..
            } => self.written(ms, *link, *from, frame),
            Wire::Lost { .. } => Ok(()),
        }
    }

    /// Checks one thing that went over the links, at `ms`, against the protocol's rules (the
    /// validator, strict).
    ///
    /// A frame is judged in the order its writer saw the conversation: after what its writer
    /// had read, at the time it read it, and before what it had not read yet. No one order of
    /// a connection's frames does that for both ends when two frames cross on the wire (each
    /// end wrote its frame before it read the other's), so two validators judge, each in the
    /// order exact for one end of every link:
    ///
    /// - the *authorities'* validator (the master on a link to a master, else the driver:
    ///   `authority`) takes what the authority writes when it writes it and what the other
    ///   end writes when the authority reads it; it judges the authorities' frames (and the
    ///   opens and closes). A frame the authority never read (lost in a reset, or still on its
    ///   way) never reaches it: the master that declared an executor LOST with its worker, whose
    ///   EXITED was lost in the reset, is judged on what it knew.
    /// - the *peers'* validator takes every frame when it is written, and judges the peers'
    ///   frames: a worker's Heartbeat written before it read its RegisteredWorker breaks rule
    ///   W1 there, even when the master wrote the RegisteredWorker before it read the
    ///   Heartbeat. (Taking the authority's frames when the peer reads them would be exact for
    ///   the peer's own connection, but would reorder the authority's frames across its
    ///   connections: a LaunchExecutor read before the application's client read its
    ///   RegisteredApplication.)
    ///
    /// Each validator's verdicts on the frames the other judges are dropped: there the order
    /// is not the writer's. Once the peers' validator refused an authority's frame (a crossing
    /// that only the authority's order explains), its state is no longer the conversation's,
    /// and its verdicts stop counting for the rest of the run. An answer to MasterChanged
    /// (MasterChangeAcknowledged, WorkerSchedulerStateResponse) reaches the authorities'
    /// validator when it is written, unless a frame before it is still unread: it says who is
    /// on the connection, and the recovering master (as Spark's) writes to a recovered
    /// application before it reads its answer.
    pub fn protocol(&mut self, ms: u64, w: &Wire) -> Result<(), Failure> {
        let verdicts = match w {
            Wire::Open {
                link,
                client,
                server,
                version,
            } => {
                let _ = self.peers.open(ms, *link, client, server, *version);
                self.authorities.open(ms, *link, client, server, *version)
            }
            Wire::Closed { link } => {
                let _ = self.peers.close(ms, *link);
                self.authorities.close(ms, *link)
            }
            Wire::Written {
                seq,
                link,
                from,
                frame,
            } => {
                self.frames += 1;
                let peers = self.peers.frame(ms, *link, *from, frame);
                match self.authorities.by_authority(*link, *from) {
                    Some(true) => {
                        if !peers.is_empty() {
                            // The write order refused what the authority's own order accepts
                            // (or not): the peers' validator's state is no longer the
                            // conversation's, and its later verdicts do not count.
                            self.peers_trusted = false;
                        }
                        self.authorities.frame(ms, *link, *from, frame)
                    }
                    Some(false) => {
                        let answer = matches!(
                            frame,
                            Frame::Message(
                                DeployMessage::MasterChangeAcknowledged(_)
                                    | DeployMessage::WorkerSchedulerStateResponse(_)
                            )
                        );
                        let behind = self.unread.values().any(|k| *k == (*link, *from));
                        if answer && !behind {
                            // An answer to MasterChanged says who is on the connection, for
                            // what the master writes on it next: taken when written.
                            let _ = self.authorities.frame(ms, *link, *from, frame);
                        } else {
                            self.unread.insert(*seq, (*link, *from));
                        }
                        if self.peers_trusted {
                            peers
                        } else {
                            Vec::new()
                        }
                    }
                    None => Vec::new(),
                }
            }
            Wire::Delivered {
                seq, link, frame, ..
            } => {
                if let Some((_, from)) = self.unread.remove(seq) {
                    let _ = self.authorities.frame(ms, *link, from, frame);
                }
                Vec::new()
            }
            Wire::Lost { seq } => {
                self.unread.remove(seq);
                Vec::new()
            }
        };
        match verdicts.into_iter().next() {
            None => Ok(()),
            Some(v) => fail(PROTOCOL, ms, format!("{}: {v}", v.rule.id())),
        }
    }

    fn delivered(
        &mut self,
        _ms: u64,
        link: LinkId,
        to: NodeId,
        frame: &Frame,
        cluster: &Cluster,
    ) -> Result<(), Failure> {
        let Some(info) = self.links.get_mut(&link) else {
            return Ok(());
        };
        if info.master != Some(to) {
            return Ok(());
        }
        let recovering = cluster.node::<MasterNode>(to).core().state() == RecoveryState::Recovering;
        match frame {
            Frame::Message(DeployMessage::UnregisterApplication(u)) => {
                self.finished
                    .entry(to)
                    .or_default()
                    .insert(u.app_id.clone());
            }
            Frame::Message(DeployMessage::MasterChangeAcknowledged(a)) => {
                info.apps.insert(a.app_id.clone());
                if recovering {
                    self.recovering
                        .entry(to)
                        .or_default()
                        .apps
                        .insert(a.app_id.clone(), link);
                }
            }
            Frame::Message(DeployMessage::WorkerSchedulerStateResponse(s)) if recovering => {
                self.recovering
                    .entry(to)
                    .or_default()
                    .workers
                    .insert(s.id.clone(), link);
            }
            _ => {}
        }
        Ok(())
    }

    fn written(
        &mut self,
        ms: u64,
        link: LinkId,
        from: NodeId,
        frame: &Frame,
    ) -> Result<(), Failure> {
        let Some(info) = self.links.get_mut(&link) else {
            return Ok(());
        };
        let side = usize::from(info.ends[0].0 != from);
        let (f, t) = (info.ends[side].1.clone(), info.ends[1 - side].1.clone());
        // The named invariants first: a bug they name is reported by its name.
        if info.master == Some(from) {
            if let Frame::Message(m) | Frame::Ask(_, m) = frame {
                if leader_only(m) && !self.elected.contains(&from) {
                    return fail(
                        SINGLE_LEADER,
                        ms,
                        format!(
                            "{} wrote {} to {} but was never elected",
                            f.id,
                            m.name(),
                            t.id
                        ),
                    );
                }
                match m {
                    DeployMessage::RegisteredApplication(r) => {
                        info.apps.insert(r.app_id.clone());
                    }
                    DeployMessage::ApplicationRemoved(_) => {
                        let apps = info.apps.clone();
                        self.finished.entry(from).or_default().extend(apps);
                    }
                    DeployMessage::LaunchExecutor(l)
                        if self
                            .finished
                            .get(&from)
                            .is_some_and(|s| s.contains(&l.app_id)) =>
                    {
                        return fail(
                            NO_EXECUTOR_FOR_FINISHED_APP,
                            ms,
                            format!(
                                "{} launched executor {} of {} on {} after it finished",
                                f.id, l.exec_id, l.app_id, t.id
                            ),
                        );
                    }
                    _ => {}
                }
            }
        }
        if let Frame::CoarseMessage(CoarseMessage::StatusUpdate(u))
        | Frame::CoarseAsk(_, CoarseMessage::StatusUpdate(u)) = frame
        {
            if u.state.is_finished() {
                let driver = info.ends[1 - side].0;
                let n = self.finals.entry((driver, u.task_id)).or_default();
                *n += 1;
                if *n > 1 {
                    return fail(
                        TASK_FINAL_ONCE,
                        ms,
                        format!(
                            "task {} of {} reported final ({}) {} times, by executor {}",
                            u.task_id, t.id, u.state, n, u.executor_id
                        ),
                    );
                }
            }
        }
        Ok(())
    }

    /// Checks the state of every running core after a step, at `ms`; `masters` are the master
    /// nodes running, `workers` the worker nodes running.
    pub fn state(
        &mut self,
        ms: u64,
        cluster: &Cluster,
        masters: &[NodeId],
        workers: &[NodeId],
    ) -> Result<(), Failure> {
        for &m in masters {
            let core = cluster.node::<MasterNode>(m).core();
            let state = core.state();
            if state == RecoveryState::Standby {
                continue;
            }
            let view = core.master_state();
            for w in &view.workers {
                if w.cores_used > w.cores || w.memory_used > w.memory {
                    return fail(
                        WITHIN_CAPACITY,
                        ms,
                        format!(
                            "master {} grants {} cores and {} MiB on {}, which has {} and {}",
                            core.url(),
                            w.cores_used,
                            w.memory_used,
                            w.id,
                            w.cores,
                            w.memory
                        ),
                    );
                }
            }
            if state == RecoveryState::Alive {
                if let Some(r) = self.recovering.remove(&m) {
                    for (id, link) in r.workers {
                        let open = self.links.contains_key(&link);
                        let alive = view
                            .workers
                            .iter()
                            .any(|w| w.id == id && w.state == WorkerState::Alive);
                        if open && !alive {
                            return fail(
                                FAILOVER_KEEPS_ANSWERED,
                                ms,
                                format!(
                                    "{} answered the recovery of {} and is not ALIVE after it",
                                    id,
                                    core.url()
                                ),
                            );
                        }
                    }
                    for (id, link) in r.apps {
                        let open = self.links.contains_key(&link);
                        let alive = view.active_apps.iter().any(|a| {
                            a.id == id
                                && matches!(
                                    a.state,
                                    ApplicationState::Running | ApplicationState::Waiting
                                )
                        });
                        let finished = self.finished.get(&m).is_some_and(|f| f.contains(&id));
                        if open && !alive && !finished {
                            return fail(
                                FAILOVER_KEEPS_ANSWERED,
                                ms,
                                format!(
                                    "{} acknowledged the recovery of {} and is not active after it",
                                    id,
                                    core.url()
                                ),
                            );
                        }
                    }
                }
            }
        }
        for &w in workers {
            let s = cluster.node::<WorkerNode>(w).core().state_response();
            if s.cores_used > s.cores || s.memory_used > s.memory {
                return fail(
                    WITHIN_CAPACITY,
                    ms,
                    format!(
                        "worker {} runs {} cores and {} MiB of {} and {}",
                        s.worker_id, s.cores_used, s.memory_used, s.cores, s.memory
                    ),
                );
            }
        }
        Ok(())
    }
}
