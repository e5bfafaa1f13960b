//! The oracle: every connection's frames through the validator in strict order, and the global
//! invariants, each checked at every step of the cluster and named in a [`Failure`].

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use crate::messages::{
    ApplicationState, CoarseMessage, DeployMessage, Family as _, RecoveryState, Version,
    WorkerState,
};
use crate::node::sim::{Cluster, Frame, Hello, LinkId, MasterNode, NodeId, Wire, WorkerNode};
use crate::validate::{Config, Endpoint, Validator};
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

/// The oracle of one run; see the [module docs](self).
pub struct Oracle {
    validator: Validator,
    links: BTreeMap<LinkId, LinkInfo>,
    /// The validator's view of the open links: their ends and version.
    vlinks: BTreeMap<LinkId, ([(NodeId, Endpoint); 2], Version)>,
    /// Master nodes elected at some point of their process's life.
    elected: BTreeSet<NodeId>,
    /// Per master node: applications it finished.
    finished: BTreeMap<NodeId, BTreeSet<String>>,
    /// Per master node recovering: who answered.
    recovering: BTreeMap<NodeId, Recovery>,
    /// Per driver node and task: final states reported.
    finals: BTreeMap<(NodeId, i64), u32>,
    /// Frames held back from the validator, per link and writer: an UnregisterApplication
    /// until the master reads it, and what followed it ([`Oracle::protocol`]).
    held: BTreeMap<(LinkId, NodeId), VecDeque<(u64, Wire)>>,
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
            validator: Validator::new(config),
            links: BTreeMap::new(),
            vlinks: BTreeMap::new(),
            elected: BTreeSet::new(),
            finished: BTreeMap::new(),
            recovering: BTreeMap::new(),
            finals: BTreeMap::new(),
            held: BTreeMap::new(),
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
    /// An application client's UnregisterApplication counts from when the master reads it, not
    /// when the client writes it: until then the master cannot know the application finished,
    /// and what it writes to the application meanwhile crossed the goodbye on the wire (rules
    /// P4, P5; protocol/rules.md's crossing, exact here where the validator's crossing window
    /// is a guess). So it goes to the validator at its delivery (or loss, or its connection's
    /// close), and whatever its client wrote after it on that connection goes right after it.
    pub fn protocol(&mut self, ms: u64, w: &Wire) -> Result<(), Failure> {
        match w {
            Wire::Written {
                seq,
                link,
                from,
                frame,
            } => {
                let queue = self.held.get_mut(&(*link, *from));
                let goodbye = matches!(
                    frame,
                    Frame::Message(DeployMessage::UnregisterApplication(_))
                );
                match queue {
                    Some(q) => {
                        q.push_back((*seq, w.clone()));
                        Ok(())
                    }
                    None if goodbye => {
                        self.held
                            .insert((*link, *from), VecDeque::from([(*seq, w.clone())]));
                        Ok(())
                    }
                    None => self.feed(ms, w),
                }
            }
            Wire::Delivered { seq, .. } | Wire::Lost { seq } => {
                let key = self
                    .held
                    .iter()
                    .find(|(_, q)| q.front().is_some_and(|(s, _)| s == seq))
                    .map(|(k, _)| *k);
                match key {
                    Some(k) => self.release(ms, k),
                    None => Ok(()),
                }
            }
            Wire::Closed { link } => {
                let keys: Vec<(LinkId, NodeId)> = self
                    .held
                    .keys()
                    .filter(|(l, _)| l == link)
                    .copied()
                    .collect();
                for k in keys {
                    self.release(ms, k)?;
                }
                self.feed(ms, w)
            }
            Wire::Open { .. } => self.feed(ms, w),
        }
    }

    /// Feeds the frames held on `key` to the validator, in the order they were written.
    fn release(&mut self, ms: u64, key: (LinkId, NodeId)) -> Result<(), Failure> {
        for (_, w) in self.held.remove(&key).unwrap_or_default() {
            self.feed(ms, &w)?;
        }
        Ok(())
    }

    /// The validator's verdict on `w`, at `ms`.
    fn feed(&mut self, ms: u64, w: &Wire) -> Result<(), Failure> {
        let v = match w {
            Wire::Open {
                link,
                client,
                server,
                version,
            } => {
                let (c, s) = (endpoint(client.0, &client.1), endpoint(server.0, &server.1));
                let v = self.validator.open(ms, *link, &c, &s, *version);
                self.vlinks
                    .insert(*link, ([(client.0, c), (server.0, s)], *version));
                v
            }
            Wire::Closed { link } => {
                self.vlinks.remove(link);
                self.validator.close(ms, *link)
            }
            Wire::Written {
                link, from, frame, ..
            } => {
                let Some((ends, version)) = self.vlinks.get(link) else {
                    return Ok(());
                };
                let side = usize::from(ends[0].0 != *from);
                let (f, t, version) = (ends[side].1.clone(), ends[1 - side].1.clone(), *version);
                self.frames += 1;
                let link = *link;
                match frame.clone() {
                    Frame::Message(m) => {
                        self.validator
                            .message(ms, link, &f, &t, version, &Envelope::Send(m))
                    }
                    Frame::Ask(id, message) => {
                        let env = Envelope::Ask { id, message };
                        self.validator.message(ms, link, &f, &t, version, &env)
                    }
                    Frame::Answer(id, a) => {
                        let env: Envelope<DeployMessage> = match a {
                            Ok(reply) => Envelope::Reply { id, reply },
                            Err(error) => Envelope::Failure { id, error },
                        };
                        self.validator.message(ms, link, &f, &t, version, &env)
                    }
                    Frame::CoarseMessage(m) => {
                        self.validator
                            .message(ms, link, &f, &t, version, &Envelope::Send(m))
                    }
                    Frame::CoarseAsk(id, message) => {
                        let env = Envelope::Ask { id, message };
                        self.validator.message(ms, link, &f, &t, version, &env)
                    }
                    Frame::CoarseAnswer(id, a) => {
                        let env: Envelope<CoarseMessage> = match a {
                            Ok(reply) => Envelope::Reply { id, reply },
                            Err(error) => Envelope::Failure { id, error },
                        };
                        self.validator.message(ms, link, &f, &t, version, &env)
                    }
                }
            }
            Wire::Delivered { .. } | Wire::Lost { .. } => return Ok(()),
        };
        match v.into_iter().next() {
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
