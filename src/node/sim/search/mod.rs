//! A deterministic simulator run from a seed, and the search over seeds: the real cores of every
//! role in one [`Cluster`] on its simulated clock, under a fault plan the seed draws, judged by
//! an [`oracle`] at every step; a failing seed's scenario shrinks ([`shrink`]) to a small
//! regression case.
//!
//! A seed draws a [`Scenario`] ([`Scenario::draw`], within [`Knobs`]): one to three masters
//! sharing a recovery store in memory ([`store`](super::store), with file or ZooKeeper
//! semantics: an election, lost sessions, fenced writes), workers of a few sizes, drivers whose
//! applications' executors fit some worker, each running a job, and a fault plan over the first
//! [`FAULT_WINDOW_MS`] of simulated time: links whose delays change (connections reorder against
//! one another, never within one, as TCP), connections reset (a dropped frame cuts its
//! connection: there is no other loss), nodes partitioned then healed, paused then resumed (their
//! clocks jump), masters and workers killed and restarted, executors killed, ZooKeeper sessions
//! lost, an application that fills a worker. A frame is never duplicated on a connection (TCP
//! does not); a message sent again on a new connection is the cores' own retry. Then every fault
//! heals, and every job must end within [`LIVENESS_BOUND_MS`].
//!
//! Nothing reads a clock or the operating system's randomness: the same scenario gives the same
//! run, and [`Outcome::trace`] the same bytes.
//!
//! ```
//! use sparkwire::node::sim::search::{run, Knobs, Scenario};
//!
//! let scenario = Scenario::draw(7, &Knobs::default());
//! let first = run(&scenario, true);
//! let again = run(&scenario, true);
//! assert_eq!(first.failure, None, "{}", scenario.to_text());
//! assert_eq!(first.trace, again.trace); // byte for byte
//! ```

pub mod job;
pub mod oracle;
pub mod plan;
pub mod rng;
pub mod shrink;

pub use oracle::{Failure, Invariant, Oracle, INVARIANTS};
pub use plan::{
    DriverSpec, Fault, FaultKind, Knobs, Scenario, Target, WorkerSpec, FAULT_WINDOW_MS,
};

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::time::Duration;

use super::store::{RecoveryStore, Semantics, Session, SharedStore};
use super::{Cluster, DriverNode, LinkId, MasterNode, NodeId, Probe, Step, Wire, WorkerNode};
use crate::messages::{Addr, EndpointRef, RecoveryState};
use crate::node::driver::{BackendConfig, ClientInput, JobId};
use crate::node::master;
use crate::node::{ConnOutput, Core};
use crate::wire::handshake::Role;

/// The wall clock when a run starts (2026-01-01), ms since the epoch.
const WALL_START_MS: i64 = 1_767_225_600_000;

/// How long after the heal every job must have ended, ms.
pub const LIVENESS_BOUND_MS: u64 = 300_000;

/// A master's worker timeout in the simulation (heartbeats every quarter of it).
pub const WORKER_TIMEOUT: Duration = Duration::from_secs(10);

/// A ZooKeeper session's timeout: a master silent (dead, paused or partitioned) this long loses
/// its session.
pub const SESSION_TIMEOUT_MS: u64 = 6_000;

/// How a run went.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outcome {
    /// The first invariant broken, if one was.
    pub failure: Option<Failure>,
    /// The run's trace (when asked for): every fault, connection, frame and close, in order.
    pub trace: Option<String>,
    /// Simulated time, ms.
    pub elapsed_ms: u64,
    /// Frames checked.
    pub frames: u64,
    /// Jobs that succeeded, and jobs that ended otherwise.
    pub jobs: (usize, usize),
}

/// What the run does at a time.
#[derive(Debug, Clone)]
enum Action {
    Fault(Fault),
    Submit(usize),
    Resume(NodeId),
    Heal(NodeId, Vec<LinkId>),
    RestartMaster(usize),
    RestartWorker(usize),
    /// The session of master slot n (the process at node) expires, if it is still silent.
    Expire(usize, NodeId, Session),
    /// Master slot n's process at node hears it lost its session.
    Revoke(usize, NodeId),
    FillRegister(NodeId, i32),
    EndFill(NodeId),
    HealAll,
}

struct MasterSlot {
    addr: Addr,
    node: Option<NodeId>,
    session: Option<Session>,
}

struct WorkerSlot {
    addr: Addr,
    spec: WorkerSpec,
    node: Option<NodeId>,
    generation: u32,
}

struct DriverSlot {
    node: NodeId,
    spec: DriverSpec,
    job: Option<JobId>,
    ended: Option<bool>,
}

/// One run of a scenario; see the [module docs](self).
pub struct Run {
    scenario: Scenario,
    cluster: Cluster,
    store: SharedStore,
    oracle: Oracle,
    masters: Vec<MasterSlot>,
    workers: Vec<WorkerSlot>,
    drivers: Vec<DriverSlot>,
    actions: BTreeMap<(u64, u64), Action>,
    seq: u64,
    /// Nodes silent (paused or partitioned) until when, ms.
    silent: BTreeMap<NodeId, u64>,
    /// Partitions and pauses not healed yet, and fills not ended.
    partitions: BTreeMap<NodeId, Vec<LinkId>>,
    pauses: Vec<NodeId>,
    fills: Vec<NodeId>,
    /// The file store's next master address.
    next_file_master: usize,
    healed: bool,
    trace: Option<String>,
}

/// Runs `scenario`, with its trace when `trace`.
pub fn run(scenario: &Scenario, trace: bool) -> Outcome {
    run_with(scenario, trace, super::DIAL_TIMEOUT)
}

/// Runs `scenario` with dials that wait `dial_timeout` for a paused or partitioned peer
/// ([`Cluster::set_dial_timeout`]; [`run`] waits [`DIAL_TIMEOUT`](super::DIAL_TIMEOUT)).
pub fn run_with(scenario: &Scenario, trace: bool, dial_timeout: Duration) -> Outcome {
    let mut r = Run::new(scenario.clone(), trace);
    r.cluster.set_dial_timeout(dial_timeout);
    let failure = r.go().err();
    r.outcome(failure)
}

/// Runs seed `seed` drawn within `knobs` (with their dial timeout).
pub fn run_seed(seed: u64, knobs: &Knobs, trace: bool) -> Outcome {
    let dial_timeout = Duration::from_millis(knobs.dial_timeout_ms);
    run_with(&Scenario::draw(seed, knobs), trace, dial_timeout)
}

fn master_config() -> master::Config {
    master::Config {
        worker_timeout: WORKER_TIMEOUT,
        persistent: true,
        ..Default::default()
    }
}

impl Run {
    /// The cluster of `scenario`, before anything ran.
    pub fn new(scenario: Scenario, trace: bool) -> Run {
        let mut cluster = Cluster::new();
        #[cfg(feature = "testing")]
        cluster.plant(scenario.plant);
        cluster.record();
        cluster.one_input_at_a_time();
        let store = RecoveryStore::shared(scenario.store);
        let masters: Vec<MasterSlot> = (0..scenario.masters)
            .map(|i| MasterSlot {
                addr: Addr::new(format!("10.0.1.{}", i + 1), 7077),
                node: None,
                session: None,
            })
            .collect();
        let mut r = Run {
            cluster,
            store,
            oracle: Oracle::new(),
            masters,
            workers: Vec::new(),
            drivers: Vec::new(),
            actions: BTreeMap::new(),
            seq: 0,
            silent: BTreeMap::new(),
            partitions: BTreeMap::new(),
            pauses: Vec::new(),
            fills: Vec::new(),
            next_file_master: 0,
            healed: false,
            trace: trace.then(String::new),

            scenario,
        };
        match r.scenario.store {
            Semantics::ZooKeeper => {
                for i in 0..r.masters.len() {
                    r.start_master(i);
                }
            }
            Semantics::File => r.start_master(0),
        }
        r.elect();
        let master_addrs: Vec<Addr> = r.masters.iter().map(|m| m.addr.clone()).collect();
        for (i, spec) in r.scenario.workers.clone().into_iter().enumerate() {
            r.workers.push(WorkerSlot {
                addr: Addr::new(format!("10.0.2.{}", i + 1), 4000),
                spec,
                node: None,
                generation: 0,
            });
            r.start_worker(i);
        }
        let _ = master_addrs;
        for (i, spec) in r.scenario.drivers.clone().into_iter().enumerate() {
            let config = BackendConfig {
                app_name: format!("app-{i}"),
                driver_host: format!("driver-{i}.sim"),
                driver_port: 7078,
                task_cpus: 1,
                max_task_failures: 4,
                revive_interval: Duration::from_secs(1),
                max_message_size_mib: 128,
                executor_cores: spec.executor_cores.map(|c| c as _),
                executor_memory_mb: spec.memory as _,
            };
            let masters: Vec<NodeId> = r.masters.iter().filter_map(|m| m.node).collect();
            let node = r.cluster.add_driver(config, &masters, job::echo_tasks());
            r.drivers.push(DriverSlot {
                node,
                spec,
                job: None,
                ended: None,
            });
            r.at(spec.submit_at, Action::Submit(i));
        }
        for (at, f) in r.scenario.faults.clone() {
            r.at(at, Action::Fault(f));
        }
        r.at(FAULT_WINDOW_MS, Action::HealAll);
        r
    }

    fn at(&mut self, ms: u64, a: Action) {
        self.seq += 1;
        self.actions.insert((ms, self.seq), a);
    }

    fn ms(&self) -> u64 {
        self.cluster.elapsed().as_millis() as u64
    }

    fn log(&mut self, line: impl FnOnce() -> String) {
        if self.trace.is_some() {
            let ms = self.ms();
            let line = line();
            if let Some(t) = &mut self.trace {
                let _ = writeln!(t, "{ms:>9} {line}");
            }
        }
    }

    /// Starts a master process at slot `i` (a new node, STANDBY, with a new session).
    fn start_master(&mut self, i: usize) {
        let session = self.store.borrow_mut().open_session();
        let now = self.cluster.now();
        let addr = self.masters[i].addr.clone();
        let wall = WALL_START_MS + self.ms() as i64;
        let node = MasterNode::on_store(
            master_config(),
            addr,
            (now, wall),
            self.store.clone(),
            session,
        );
        let id = self.cluster.add(Box::new(node));
        self.masters[i].node = Some(id);
        self.masters[i].session = Some(session);
        self.log(|| format!("start master-{i} node {id} session {session}"));
    }

    /// Elects a master when none leads: ZooKeeper, the oldest live session of a running master;
    /// a directory, whichever master runs.
    fn elect(&mut self) {
        if self.store.borrow().leader().is_some() {
            return;
        }
        let mut candidates: Vec<(Session, usize, NodeId)> = self
            .masters
            .iter()
            .enumerate()
            .filter_map(|(i, m)| Some((m.session?, i, m.node?)))
            .filter(|(s, _, n)| {
                self.store.borrow().is_live(*s)
                    && !self.cluster.is_paused(*n)
                    && !self.partitions.contains_key(n)
                    && self.cluster.node::<MasterNode>(*n).core().state() == RecoveryState::Standby
            })
            .collect();
        candidates.sort();
        let Some((session, i, node)) = candidates.first().copied() else {
            return;
        };
        let Some(stored) = self.store.borrow_mut().elect(session) else {
            return;
        };
        self.log(|| format!("elect master-{i} node {node} session {session}"));
        self.oracle.elected(node);
        self.cluster.elect(node, stored);
    }

    fn start_worker(&mut self, i: usize) {
        let w = &mut self.workers[i];
        let id = format!("worker-{i}-{}", w.generation);
        w.generation += 1;
        let (addr, spec) = (w.addr.clone(), w.spec);
        let masters: Vec<Addr> = self.masters.iter().map(|m| m.addr.clone()).collect();
        let now = self.cluster.now();
        let node = WorkerNode::new(
            &id,
            addr,
            spec.cores,
            spec.memory,
            masters,
            WORKER_TIMEOUT,
            now,
        );
        let n = self.cluster.add(Box::new(node));
        self.workers[i].node = Some(n);
        self.log(|| format!("start {id} node {n}"));
    }

    /// The node a target names now, if it runs.
    fn resolve(&self, t: Target) -> Option<NodeId> {
        match t {
            Target::Master(i) => self.masters.get(i % self.masters.len())?.node,
            Target::Worker(i) => self.workers.get(i % self.workers.len())?.node,
            Target::Driver(i) => Some(self.drivers.get(i % self.drivers.len().max(1))?.node),
            Target::Executor(i) => {
                let live: Vec<NodeId> = self
                    .cluster
                    .executors()
                    .into_iter()
                    .filter(|e| !self.cluster.is_paused(*e))
                    .collect();
                live.get(i % live.len().max(1)).copied()
            }
        }
    }

    fn open_link(&self, i: usize) -> Option<LinkId> {
        let links: Vec<LinkId> = (0..self.cluster.len())
            .flat_map(|n| self.cluster.links_of(n))
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .collect();
        links.get(i % links.len().max(1)).copied()
    }

    fn go(&mut self) -> Result<(), Failure> {
        loop {
            let next = self.actions.keys().next().map(|(ms, _)| *ms);
            let heal_deadline = FAULT_WINDOW_MS + LIVENESS_BOUND_MS;
            let until_ms = next.unwrap_or(heal_deadline).min(heal_deadline);
            let until =
                self.cluster.now() + Duration::from_millis(until_ms.saturating_sub(self.ms()));
            while self.cluster.step(until) {
                self.after_step()?;
                if self.done() {
                    return Ok(());
                }
            }
            let rest = until.saturating_duration_since(self.cluster.now());
            self.cluster.run_for(rest);
            self.after_step()?;
            if self.done() {
                return Ok(());
            }
            if self.ms() >= heal_deadline {
                let waiting: Vec<String> = self
                    .drivers
                    .iter()
                    .enumerate()
                    .filter(|(_, d)| d.ended.is_none())
                    .map(|(i, d)| format!("driver-{i} ({} tasks)", d.spec.partitions))
                    .collect();
                return Err(Failure {
                    invariant: oracle::LIVENESS.name,
                    at_ms: self.ms(),
                    detail: format!(
                        "{} still running {} ms after every fault healed",
                        waiting.join(", "),
                        LIVENESS_BOUND_MS
                    ),
                });
            }
            let due: Vec<(u64, u64)> = self
                .actions
                .keys()
                .take_while(|(ms, _)| *ms <= self.ms())
                .copied()
                .collect();
            for key in due {
                if let Some(a) = self.actions.remove(&key) {
                    self.act(a);
                }
            }
            self.elect();
            self.after_step()?;
        }
    }

    fn done(&self) -> bool {
        self.healed && self.drivers.iter().all(|d| d.ended.is_some())
    }

    /// After each step: the wire through the oracle, the cores' state, and what ended.
    fn after_step(&mut self) -> Result<(), Failure> {
        let ms = self.ms();
        let wire = self.cluster.take_wire();
        for w in &wire {
            if self.trace.is_some() {
                let line = self.wire_line(w);
                self.log(|| line);
            }
            self.oracle.named(ms, w, &self.cluster)?;
        }
        let masters: Vec<NodeId> = self.masters.iter().filter_map(|m| m.node).collect();
        let workers: Vec<NodeId> = self.workers.iter().filter_map(|w| w.node).collect();
        self.oracle.state(ms, &self.cluster, &masters, &workers)?;
        self.one_leader(ms)?;
        for w in &wire {
            self.oracle.protocol(ms, w)?;
        }
        for i in 0..self.drivers.len() {
            let d = &self.drivers[i];
            if d.ended.is_some() {
                continue;
            }
            let Some(job) = d.job else { continue };
            let node = d.node;
            let outcome = self.cluster.driver(node).outcome(job).cloned();
            if let Some(o) = outcome {
                self.drivers[i].ended = Some(o.is_ok());
                self.log(|| format!("driver-{i} job ended: {o:?}"));
                let now = self.cluster.now();
                if let Some(c) = self.cluster.node_mut::<DriverNode>(node).client_mut() {
                    c.handle(now, ClientInput::Stop);
                }
            }
        }
        Ok(())
    }

    /// At most one master elected and not deposed (SINGLE_LEADER's first half).
    fn one_leader(&self, ms: u64) -> Result<(), Failure> {
        let store = self.store.borrow();
        let leading: Vec<String> = self
            .masters
            .iter()
            .enumerate()
            .filter(|(_, m)| {
                m.node.is_some_and(|n| {
                    self.cluster.node::<MasterNode>(n).core().state() != RecoveryState::Standby
                }) && m.session.is_some_and(|s| store.is_live(s))
            })
            .map(|(i, _)| format!("master-{i}"))
            .collect();
        if leading.len() > 1 {
            return Err(Failure {
                invariant: oracle::SINGLE_LEADER.name,
                at_ms: ms,
                detail: format!("{} all lead", leading.join(" and ")),
            });
        }
        Ok(())
    }

    fn wire_line(&self, w: &Wire) -> String {
        let name = |n: NodeId| {
            let h = self.cluster.hello_of(n);
            format!("{}:{}", h.role, h.id)
        };
        match w {
            Wire::Open {
                link,
                client,
                server,
                version,
            } => format!(
                "open link-{link} {} -> {} {version:?}",
                name(client.0),
                name(server.0)
            ),
            Wire::Written {
                link, from, frame, ..
            } => {
                format!("write link-{link} from {} {frame:?}", name(*from))
            }
            Wire::Lost { seq } => format!("lost frame {seq}"),
            Wire::Delivered {
                link, to, frame, ..
            } => {
                format!("deliver link-{link} to {} {}", name(*to), frame.name())
            }
            Wire::Closed { link } => format!("close link-{link}"),
        }
    }

    fn act(&mut self, a: Action) {
        self.act_one(a);
        // What the action made the nodes write goes out before the next one.
        self.cluster.flush();
    }

    fn act_one(&mut self, a: Action) {
        let ms = self.ms();
        match a {
            Action::Fault(f) => {
                if !self.healed {
                    self.log(|| format!("fault {f}"));
                    self.fault(f);
                }
            }
            Action::Submit(i) => {
                let d = &self.drivers[i];
                let (node, partitions) = (d.node, d.spec.partitions);
                let now = self.cluster.now();
                let job = job::SumJob { partitions };
                let id = self
                    .cluster
                    .node_mut::<DriverNode>(node)
                    .backend_mut()
                    .submit(now, std::sync::Arc::new(job));
                self.log(|| format!("driver-{i} submits {partitions} tasks: {id:?}"));
                match id {
                    Ok(id) => self.drivers[i].job = Some(id),
                    Err(_) => self.drivers[i].ended = Some(false),
                }
            }
            Action::Resume(n) => {
                if self.pauses.contains(&n) {
                    self.pauses.retain(|p| *p != n);
                    self.silent.remove(&n);
                    self.cluster.resume(n);
                    self.log(|| format!("resume node {n}"));
                }
            }
            Action::Heal(n, links) => {
                if self.partitions.remove(&n).is_some() {
                    self.silent.remove(&n);
                    self.cluster.isolate(n, false);
                    for l in links {
                        self.cluster.close(l);
                    }
                    self.log(|| format!("heal node {n}"));
                }
            }
            Action::RestartMaster(i) => {
                if self.masters[i].node.is_none() {
                    self.start_master(i);
                    if self.scenario.store == Semantics::File {
                        // A directory has no election: the master started on it leads.
                        self.store.borrow_mut().expire(0);
                        let session = self.masters[i].session.unwrap_or_default();
                        self.force_file_leader(i, session);
                    }
                }
            }
            Action::RestartWorker(i) => {
                if self.workers[i].node.is_none() {
                    self.start_worker(i);
                }
            }
            Action::Expire(i, node, session) => {
                let still_silent = self.masters[i].node != Some(node)
                    || self.silent.get(&node).is_some_and(|until| *until > ms);
                if still_silent && self.store.borrow().is_live(session) {
                    let led = self.store.borrow_mut().expire(session);
                    self.log(|| format!("session {session} of master-{i} expires (led: {led})"));
                    if self.masters[i].node == Some(node) {
                        let at = ms + self.scenario.notify_ms;
                        self.at(at, Action::Revoke(i, node));
                    }
                }
            }
            Action::Revoke(i, node) => {
                if self.masters[i].node != Some(node) {
                    return;
                }
                if self.cluster.is_paused(node) || self.partitions.contains_key(&node) {
                    // It hears of it once it runs and reaches ZooKeeper again.
                    self.at(ms + 100, Action::Revoke(i, node));
                    return;
                }
                let state = self.cluster.node::<MasterNode>(node).core().state();
                if state == RecoveryState::Standby {
                    // A standby that lost its session joins the election again.
                    let session = self.store.borrow_mut().open_session();
                    self.masters[i].session = Some(session);
                    self.cluster
                        .node_mut::<MasterNode>(node)
                        .set_session(session);
                    self.log(|| format!("master-{i} rejoins with session {session}"));
                } else {
                    // Spark's revokedLeadership: the master exits; its supervisor restarts it.
                    self.log(|| format!("master-{i} hears it lost the leadership and exits"));
                    self.cluster.kill(node);
                    self.masters[i].node = None;
                    self.at(ms + 1_000, Action::RestartMaster(i));
                }
            }
            Action::FillRegister(probe, cores) => {
                let Some(conn) = self.cluster.probe(probe).last_opened() else {
                    return;
                };
                let addr = self
                    .cluster
                    .hello_of(probe)
                    .addr
                    .unwrap_or_else(|| Addr::new("", 0));
                let mut desc = super::app_description_for("hog", Some(cores), 256, &addr);
                desc.max_cores = Some(cores);
                let register = crate::messages::deploy::RegisterApplication {
                    app_description: desc,
                    driver: EndpointRef::at(addr, "AppClient"),
                    spark_release: None,
                };
                self.cluster
                    .node_mut::<Probe>(probe)
                    .queue(Step::Conn(ConnOutput::Send {
                        conn,
                        message: register.into(),
                    }));
            }
            Action::EndFill(probe) => {
                if self.fills.contains(&probe) {
                    self.fills.retain(|p| *p != probe);
                    self.cluster.kill(probe);
                    self.log(|| format!("the application filling a worker ends (node {probe})"));
                }
            }
            Action::HealAll => {
                self.log(|| "every fault heals".to_string());
                self.healed = true;
                for n in self.pauses.clone() {
                    self.act(Action::Resume(n));
                }
                for (n, links) in self.partitions.clone() {
                    self.act(Action::Heal(n, links));
                }
                for p in self.fills.clone() {
                    self.act(Action::EndFill(p));
                }
                for i in 0..self.workers.len() {
                    self.act(Action::RestartWorker(i));
                }
                let running = self.masters.iter().any(|m| m.node.is_some());
                if !running || self.scenario.store == Semantics::ZooKeeper {
                    match self.scenario.store {
                        Semantics::ZooKeeper => {
                            for i in 0..self.masters.len() {
                                self.act(Action::RestartMaster(i));
                            }
                        }
                        Semantics::File => {
                            let i = self.next_file_master;
                            self.act(Action::RestartMaster(i));
                        }
                    }
                }
            }
        }
    }

    /// The file store's master `i`, just started, leads on what the directory holds.
    fn force_file_leader(&mut self, i: usize, session: Session) {
        let stored = self.store.borrow_mut().elect(session);
        if let (Some(stored), Some(node)) = (stored, self.masters[i].node) {
            self.log(|| format!("master-{i} starts on the directory"));
            self.oracle.elected(node);
            self.cluster.elect(node, stored);
        }
    }

    fn fault(&mut self, f: Fault) {
        let ms = self.ms();
        match f {
            Fault::Delay { link, ms: d } => {
                if let Some(l) = self.open_link(link) {
                    self.cluster
                        .set_delay(Some(l), Duration::from_millis(d.max(1)));
                }
            }
            Fault::Reset { link } => {
                if let Some(l) = self.open_link(link) {
                    self.cluster.close(l);
                }
            }
            Fault::Partition { node, ms: d } => {
                let Some(n) = self.resolve(node) else { return };
                if self.partitions.contains_key(&n) || self.cluster.is_paused(n) {
                    return;
                }
                let links = self.cluster.links_of(n);
                for l in &links {
                    self.cluster.cut_from(*l, n);
                }
                self.cluster.isolate(n, true);
                self.partitions.insert(n, links.clone());
                self.silent.insert(n, ms + d);
                self.at(ms + d, Action::Heal(n, links));
                self.silence_master(n, d);
            }
            Fault::Pause { node, ms: d } => {
                let Some(n) = self.resolve(node) else { return };
                if self.pauses.contains(&n) || self.cluster.is_paused(n) {
                    return;
                }
                self.cluster.pause(n);
                self.pauses.push(n);
                self.silent.insert(n, ms + d);
                self.at(ms + d, Action::Resume(n));
                self.silence_master(n, d);
            }
            Fault::Kill { node, ms: d } => {
                let Some(n) = self.resolve(node) else { return };
                if self.cluster.is_paused(n) || self.partitions.contains_key(&n) {
                    return;
                }
                match node {
                    Target::Master(_) => {
                        let Some(i) = self.masters.iter().position(|m| m.node == Some(n)) else {
                            return;
                        };
                        self.cluster.kill(n);
                        self.masters[i].node = None;
                        match (self.scenario.store, self.masters[i].session) {
                            (Semantics::ZooKeeper, Some(s)) => {
                                self.silent.insert(n, u64::MAX);
                                self.at(ms + SESSION_TIMEOUT_MS, Action::Expire(i, n, s));
                                if d > 0 {
                                    self.at(ms + d, Action::RestartMaster(i));
                                }
                            }
                            _ => {
                                // The directory's next master starts (another address when
                                // there are several).
                                if let Some(s) = self.masters[i].session {
                                    self.store.borrow_mut().expire(s);
                                }
                                self.next_file_master = (i + 1) % self.masters.len();
                                if d > 0 {
                                    let next = self.next_file_master;
                                    self.at(ms + d, Action::RestartMaster(next));
                                }
                            }
                        }
                    }
                    Target::Worker(_) => {
                        let Some(i) = self.workers.iter().position(|w| w.node == Some(n)) else {
                            return;
                        };
                        self.cluster.kill(n);
                        self.workers[i].node = None;
                        if d > 0 {
                            self.at(ms + d, Action::RestartWorker(i));
                        }
                    }
                    Target::Executor(_) => self.cluster.crash(n, 137),
                    Target::Driver(_) => {}
                }
            }
            Fault::Session { master } => {
                let i = master % self.masters.len();
                if let (Some(n), Some(s)) = (self.masters[i].node, self.masters[i].session) {
                    self.silent.insert(n, u64::MAX);
                    self.act(Action::Expire(i, n, s));
                    self.silent.remove(&n);
                }
            }
            Fault::Fill { cores, ms: d } => {
                let k = self.fills.len() + self.cluster.len();
                let addr = Addr::new(format!("10.0.9.{}", k % 250 + 1), 5000 + k as i32);
                let probe = self.cluster.add(Box::new(Probe::listening(
                    Role::AppClient,
                    &format!("hog-{k}"),
                    addr,
                )));
                let leader = self
                    .masters
                    .iter()
                    .find(|m| {
                        m.node.is_some_and(|n| {
                            self.cluster.node::<MasterNode>(n).core().state()
                                != RecoveryState::Standby
                        })
                    })
                    .unwrap_or(&self.masters[0])
                    .addr
                    .clone();
                self.cluster
                    .node_mut::<Probe>(probe)
                    .queue(Step::Dial(leader));
                self.fills.push(probe);
                self.at(ms + 5, Action::FillRegister(probe, cores));
                self.at(ms + d, Action::EndFill(probe));
            }
        }
    }

    /// A master silent for `d` ms loses its ZooKeeper session when that is longer than the
    /// session timeout.
    fn silence_master(&mut self, n: NodeId, d: u64) {
        if self.scenario.store != Semantics::ZooKeeper || d <= SESSION_TIMEOUT_MS {
            return;
        }
        let Some(i) = self.masters.iter().position(|m| m.node == Some(n)) else {
            return;
        };
        if let Some(s) = self.masters[i].session {
            let at = self.ms() + SESSION_TIMEOUT_MS;
            self.at(at, Action::Expire(i, n, s));
        }
    }

    fn outcome(&mut self, failure: Option<Failure>) -> Outcome {
        if let Some(f) = &failure {
            let f = f.clone();
            self.log(|| format!("FAILED {f}"));
        }
        let ok = self
            .drivers
            .iter()
            .filter(|d| d.ended == Some(true))
            .count();
        let other = self
            .drivers
            .iter()
            .filter(|d| d.ended == Some(false))
            .count();
        Outcome {
            failure,
            trace: self.trace.take(),
            elapsed_ms: self.ms(),
            frames: self.oracle.frames,
            jobs: (ok, other),
        }
    }
}
