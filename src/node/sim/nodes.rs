//! The nodes of a [`Cluster`](super::Cluster): the real master and worker cores with their
//! adapters, and the probe a test writes on.

use std::any::Any;
use std::collections::{BTreeMap, VecDeque};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use super::{addr_text, Frame, Hello, Node, Step};
use crate::messages::{Addr, CoarseMessage, DeployMessage, ErrorDescription, Resources, Version};
use crate::node::master::{self, DialTarget, Effect as MasterEffect, MasterCore, Stored};
use crate::node::worker::policy::Policy;
use crate::node::worker::{
    self, Effect as WorkerEffect, Ended, Identity, Input, Launch, Purpose, RunKey, WorkerCore,
};
use crate::node::{ConnId, ConnInput, Core, Output, PeerInfo};
use crate::wire::handshake::Role;
use crate::wire::Reply;

/// The program every simulated worker allows as an executor (only as sparkwire's `executor`
/// subcommand).
pub const EXECUTOR_PROGRAM: &str = "/opt/sparkwire";

/// The program every simulated worker allows with any arguments, as drivers.
pub const DRIVER_PROGRAM: &str = "/opt/driver";

/// What a core learns of a simulated peer from its handshake.
pub(super) fn peer_info(peer: &Hello, version: Version) -> PeerInfo {
    PeerInfo {
        role: peer.role,
        id: peer.id.clone(),
        addr: addr_text(peer),
        version,
        admin: peer.admin,
        max_frame_size: crate::wire::DEFAULT_MAX_FRAME_SIZE,
    }
}

/// A simulated connection's close, as a core's input.
fn closed<O, I: From<ConnInput<DeployMessage, O>>>(conn: ConnId) -> I {
    let reason = "the connection closed".to_string();
    ConnInput::Closed { conn, reason }.into()
}

/// A master core; what it persists is kept in memory ([`MasterNode::store`]).
pub struct MasterNode {
    core: MasterCore,
    addr: Addr,
    store: Stored,
    /// Why it dialled each address, oldest first.
    dialling: BTreeMap<String, VecDeque<DialTarget>>,
    /// The recovery store it shares with other masters, and its session with it.
    shared: Option<(super::store::SharedStore, super::store::Session)>,
}

impl MasterNode {
    /// A master at `addr`, elected on `stored` (RECOVERING when it holds anything, ALIVE
    /// otherwise) at `now`.
    pub fn elected_on(config: master::Config, addr: Addr, now: Instant, stored: Stored) -> Self {
        let config = master::Config {
            persistent: true,
            ..config
        };
        let mut core = MasterCore::new(config, addr.clone(), now, 1_767_225_600_000);
        core.set_seed(7);
        core.handle(
            now,
            master::Input::Elected {
                stored: stored.clone(),
            },
        );
        MasterNode {
            core,
            addr,
            store: stored,
            dialling: BTreeMap::new(),
            shared: None,
        }
    }

    /// A master at `addr` in STANDBY from `now`, until [`MasterNode::elect`].
    pub fn standby(config: master::Config, addr: Addr, now: Instant) -> Self {
        let config = master::Config {
            persistent: true,
            ..config
        };
        let mut core = MasterCore::new(config, addr.clone(), now, 1_767_225_600_000);
        core.set_seed(7);
        MasterNode {
            core,
            addr,
            store: Stored::default(),
            dialling: BTreeMap::new(),
            shared: None,
        }
    }

    /// A master at `addr` in STANDBY from `now`, persisting to `store` over `session` (a
    /// refused write is fed back as [`master::Input::PersistFailed`]), until
    /// [`MasterNode::elect`] on what the store holds.
    /// `wall_ms` is the wall clock at `now` (ms since the epoch): a master started later reads
    /// a later one, and its ids (`app-…`, `driver-…`) do not repeat its predecessor's.
    pub fn on_store(
        config: master::Config,
        addr: Addr,
        (now, wall_ms): (Instant, i64),
        store: super::store::SharedStore,
        session: super::store::Session,
    ) -> Self {
        let config = master::Config {
            persistent: true,
            ..config
        };
        let mut core = MasterCore::new(config, addr.clone(), now, wall_ms);
        core.set_seed(7);
        MasterNode {
            core,
            addr,
            store: Stored::default(),
            dialling: BTreeMap::new(),
            shared: Some((store, session)),
        }
    }

    /// Its session with the shared store, if it has one.
    pub fn session(&self) -> Option<super::store::Session> {
        self.shared.as_ref().map(|(_, s)| *s)
    }

    /// Its session with the shared store is now `session` (it joined the election again).
    pub fn set_session(&mut self, session: super::store::Session) {
        if let Some((_, s)) = &mut self.shared {
            *s = session;
        }
    }

    /// Elects it at `now` on `stored`, what the recovery store it shares holds.
    pub fn elect(&mut self, now: Instant, stored: Stored) {
        self.store = stored.clone();
        self.core.handle(now, master::Input::Elected { stored });
    }

    /// A master at `addr`, elected on an empty store (ALIVE) at `now`.
    pub fn elected(config: master::Config, addr: Addr, now: Instant) -> Self {
        MasterNode::elected_on(config, addr, now, Stored::default())
    }

    /// The core.
    pub fn core(&self) -> &MasterCore {
        &self.core
    }

    /// What it persisted.
    pub fn store(&self) -> &Stored {
        &self.store
    }

    fn opened(
        &mut self,
        now: Instant,
        conn: ConnId,
        peer: &Hello,
        dialled: Option<DialTarget>,
        v: Version,
    ) {
        let peer = peer_info(peer, v);
        let input = ConnInput::Opened {
            conn,
            peer,
            origin: dialled,
        };
        self.core.handle(now, input.into());
    }
}

impl Node for MasterNode {
    #[cfg(feature = "testing")]
    fn plant(&mut self, plant: crate::node::plant::Plant) {
        self.core.plant(plant);
    }

    fn hello(&self) -> Hello {
        Hello {
            role: Role::Master,
            id: format!("master-{}", self.addr),
            addr: Some(self.addr.clone()),
            admin: false,
        }
    }

    fn accepted(&mut self, now: Instant, conn: ConnId, peer: &Hello, version: Version) {
        self.opened(now, conn, peer, None, version);
    }

    fn dialled(&mut self, now: Instant, conn: ConnId, addr: &Addr, peer: &Hello, v: Version) {
        let target = self
            .dialling
            .get_mut(&addr.to_string())
            .and_then(VecDeque::pop_front);
        self.opened(now, conn, peer, target, v);
    }

    fn dial_failed(&mut self, _now: Instant, addr: &Addr, _why: &str) {
        // As the runtime: only logged; the recovery's deadline deals with silence.
        if let Some(q) = self.dialling.get_mut(&addr.to_string()) {
            q.pop_front();
        }
    }

    fn frame(&mut self, now: Instant, conn: ConnId, frame: Frame) {
        let input = match frame {
            Frame::Message(message) => ConnInput::Message { conn, message },
            Frame::Ask(id, message) => ConnInput::Ask { conn, id, message },
            // Answers are not asked for; nothing of the coarse family reaches a master.
            _ => return,
        };
        self.core.handle(now, input.into());
    }

    fn closed(&mut self, now: Instant, conn: ConnId) {
        self.core.handle(now, closed(conn));
    }

    fn handle_timeout(&mut self, now: Instant) {
        self.core.handle_timeout(now);
    }

    fn poll_timeout(&self) -> Option<Instant> {
        self.core.poll_timeout()
    }

    fn poll(&mut self, now: Instant) -> Option<Step> {
        loop {
            match self.core.poll()? {
                Output::Conn(c) => return Some(Step::Conn(c)),
                Output::Effect(MasterEffect::Persist(record)) if self.shared.is_some() => {
                    let (kind, id) = (record.kind(), record.id().to_string());
                    let written = self
                        .shared
                        .as_ref()
                        .map(|(store, session)| store.borrow_mut().write(*session, record.clone()));
                    match written {
                        Some(Err(reason)) => self
                            .core
                            .handle(now, master::Input::PersistFailed { kind, id, reason }),
                        _ => self.store.apply(record),
                    }
                }
                Output::Effect(MasterEffect::Unpersist { kind, id }) if self.shared.is_some() => {
                    let removed = self
                        .shared
                        .as_ref()
                        .map(|(store, session)| store.borrow_mut().remove(*session, kind, &id));
                    if let Some(Err(reason)) = removed {
                        // As Spark: a removal that fails is only logged.
                        tracing::warn!("cannot remove {} {id}: {reason}", kind.as_str());
                    } else {
                        self.store.remove(kind, &id);
                    }
                }
                Output::Effect(MasterEffect::Dial { addr, target }) => {
                    self.dialling
                        .entry(addr.to_string())
                        .or_default()
                        .push_back(target);
                    return Some(Step::Dial(addr));
                }
                // No idle timeout in memory.
                Output::Effect(MasterEffect::Registered { .. }) => {}
                Output::Effect(MasterEffect::Persist(record)) => self.store.apply(record),
                Output::Effect(MasterEffect::Unpersist { kind, id }) => {
                    self.store.remove(kind, &id)
                }
            }
        }
    }

    fn as_any(&self) -> &dyn Any {
        self
    }

    fn as_any_mut(&mut self) -> &mut dyn Any {
        self
    }
}

/// A worker core; its processes start at once and run until the test ends them
/// ([`WorkerNode::end`]) or the worker kills them.
pub struct WorkerNode {
    core: WorkerCore,
    addr: Addr,
    running: BTreeMap<RunKey, Launch>,
    inputs: VecDeque<Input>,
    /// Processes started and killed since the cluster last looked ([`WorkerNode::take_changes`]).
    started: Vec<Launch>,
    killed: Vec<RunKey>,
}

/// Resolves the programs a simulated machine has: only [`EXECUTOR_PROGRAM`].
fn resolve(p: &str) -> std::io::Result<PathBuf> {
    if p == EXECUTOR_PROGRAM || p == DRIVER_PROGRAM {
        Ok(PathBuf::from(p))
    } else {
        Err(std::io::Error::new(
            std::io::ErrorKind::NotFound,
            "no such file",
        ))
    }
}

impl WorkerNode {
    /// A worker `id` at `addr` offering `cores` and `memory` MiB, registering with `masters`
    /// from `now`, heartbeating every quarter of `worker_timeout`; it runs
    /// [`EXECUTOR_PROGRAM`] as executors and [`DRIVER_PROGRAM`] as drivers.
    pub fn new(
        id: &str,
        addr: Addr,
        cores: i32,
        memory: i32,
        masters: Vec<Addr>,
        worker_timeout: Duration,
        now: Instant,
    ) -> Self {
        let config = worker::Config {
            masters,
            cores,
            memory,
            resources: Resources::new(),
            worker_timeout,
            register_retry: worker_timeout / 4,
            work_dir: PathBuf::from("/work"),
            hands_secret: false,
            launch_tls_ca: None,
        };
        let policy = Policy::from_parts(
            vec![PathBuf::from(EXECUTOR_PROGRAM)],
            vec![PathBuf::from(DRIVER_PROGRAM)],
            vec!["SPARK_*".into()],
            vec![("PATH".into(), "/usr/bin:/bin".into())],
            resolve,
        );
        let me = Identity {
            id: id.to_string(),
            addr: addr.clone(),
            web_ui_url: String::new(),
            seed: 42,
        };
        let mut core = WorkerCore::new(config, policy, me, now);
        core.start(now);
        WorkerNode {
            core,
            addr,
            running: BTreeMap::new(),
            inputs: VecDeque::new(),
            started: Vec::new(),
            killed: Vec::new(),
        }
    }

    /// The core.
    pub fn core(&self) -> &WorkerCore {
        &self.core
    }

    /// The processes running, with what they were started as.
    pub fn running(&self) -> &BTreeMap<RunKey, Launch> {
        &self.running
    }

    fn opened(&mut self, now: Instant, conn: ConnId, peer: &Hello, purpose: Purpose, v: Version) {
        let peer = peer_info(peer, v);
        let input = ConnInput::Opened {
            conn,
            peer,
            origin: purpose,
        };
        self.core.handle(now, input.into());
    }

    /// The processes started and killed since the last call: the cluster starts an executor
    /// node for its application's executors, and stops it when the worker kills it.
    pub fn take_changes(&mut self) -> (Vec<Launch>, Vec<RunKey>) {
        (
            std::mem::take(&mut self.started),
            std::mem::take(&mut self.killed),
        )
    }

    /// Process `key` exits with `code` (handled at the next step).
    pub fn end(&mut self, key: &RunKey, code: i32) {
        if self.running.remove(key).is_some() {
            self.inputs.push_back(Input::Ended {
                key: key.clone(),
                ended: Ended::Exited {
                    code,
                    killed: false,
                    last_line: None,
                },
            });
        }
    }
}

impl Node for WorkerNode {
    #[cfg(feature = "testing")]
    fn plant(&mut self, plant: crate::node::plant::Plant) {
        self.core.plant(plant);
    }

    fn hello(&self) -> Hello {
        Hello {
            role: Role::Worker,
            id: self.core.id().to_string(),
            addr: Some(self.addr.clone()),
            admin: false,
        }
    }

    fn accepted(&mut self, now: Instant, conn: ConnId, peer: &Hello, version: Version) {
        self.opened(now, conn, peer, Purpose::Inbound, version);
    }

    fn dialled(&mut self, now: Instant, conn: ConnId, addr: &Addr, peer: &Hello, version: Version) {
        let purpose = Purpose::Registration(addr.clone());
        self.opened(now, conn, peer, purpose, version);
    }

    fn dial_failed(&mut self, now: Instant, addr: &Addr, why: &str) {
        let error = format!("cannot connect to {addr}: {why}");
        let origin = Purpose::Registration(addr.clone());
        self.core
            .handle(now, ConnInput::DialFailed { origin, error }.into());
    }

    fn frame(&mut self, now: Instant, conn: ConnId, frame: Frame) {
        let input = match frame {
            Frame::Message(message) => ConnInput::Message { conn, message },
            Frame::Ask(id, message) => ConnInput::Ask { conn, id, message },
            // The worker's asks are answered only for its log; an executor's watch carries
            // nothing.
            _ => return,
        };
        self.core.handle(now, input.into());
    }

    fn closed(&mut self, now: Instant, conn: ConnId) {
        self.core.handle(now, closed(conn));
    }

    fn handle_timeout(&mut self, now: Instant) {
        self.core.handle_timeout(now);
    }

    fn poll_timeout(&self) -> Option<Instant> {
        if self.core.exit().is_some() {
            return None;
        }
        self.core.poll_timeout()
    }

    fn poll(&mut self, now: Instant) -> Option<Step> {
        while let Some(input) = self.inputs.pop_front() {
            self.core.handle(now, input);
        }
        loop {
            match self.core.poll()? {
                Output::Conn(c) => return Some(Step::Conn(c)),
                Output::Effect(WorkerEffect::Dial(addr)) => return Some(Step::Dial(addr)),
                Output::Effect(WorkerEffect::Start(launch)) => {
                    let key = launch.key.clone();
                    self.started.push(launch.clone());
                    self.running.insert(key.clone(), launch);
                    self.core.handle(now, Input::Started { key });
                }
                Output::Effect(WorkerEffect::Kill(key)) => {
                    if self.running.remove(&key).is_some() {
                        self.killed.push(key.clone());
                        // SIGTERM, as the JVM reports it.
                        let ended = Ended::Exited {
                            code: 143,
                            killed: true,
                            last_line: None,
                        };
                        self.core.handle(now, Input::Ended { key, ended });
                    }
                }
            }
        }
    }

    fn as_any(&self) -> &dyn Any {
        self
    }

    fn as_any_mut(&mut self) -> &mut dyn Any {
        self
    }
}

/// A peer of any role whose writes the test makes itself (an application client, a UI, a
/// driver client): it records what it receives.
pub struct Probe {
    hello: Hello,
    queue: VecDeque<Step>,
    opened: Vec<ConnId>,
    closed: Vec<ConnId>,
    received: Vec<(ConnId, DeployMessage)>,
    answers: BTreeMap<(ConnId, u64), Result<Reply<DeployMessage>, ErrorDescription>>,
    coarse: Vec<(ConnId, CoarseMessage)>,
    coarse_answers: BTreeMap<(ConnId, u64), Result<Reply<CoarseMessage>, ErrorDescription>>,
    next_ask: u64,
    dial_failures: Vec<(Addr, String)>,
}

impl Probe {
    /// A probe of `role` named `id` in its handshakes, listening nowhere.
    pub fn new(role: Role, id: &str) -> Probe {
        Probe {
            hello: Hello {
                role,
                id: id.to_string(),
                addr: None,
                admin: false,
            },
            queue: VecDeque::new(),
            opened: Vec::new(),
            closed: Vec::new(),
            received: Vec::new(),
            answers: BTreeMap::new(),
            coarse: Vec::new(),
            coarse_answers: BTreeMap::new(),
            next_ask: 1,
            dial_failures: Vec::new(),
        }
    }

    /// The same, listening at `addr` (where a new master dials an application's client).
    pub fn listening(role: Role, id: &str, addr: Addr) -> Probe {
        let mut p = Probe::new(role, id);
        p.hello.addr = Some(addr);
        p
    }

    /// The same, having proved the admin secret.
    pub fn admin(mut self) -> Probe {
        self.hello.admin = true;
        self
    }

    /// Queues `step` for the cluster.
    pub fn queue(&mut self, step: Step) {
        self.queue.push_back(step);
    }

    /// A fresh ask id.
    pub fn next_ask(&mut self) -> u64 {
        let id = self.next_ask;
        self.next_ask += 1;
        id
    }

    /// The connection opened last (dialled or accepted).
    pub fn last_opened(&self) -> Option<ConnId> {
        self.opened.last().copied()
    }

    /// Its dials that failed, in order: the address and why (`connection refused`, `timed
    /// out`).
    pub fn dial_failures(&self) -> &[(Addr, String)] {
        &self.dial_failures
    }

    /// Whether `conn` closed.
    pub fn is_closed(&self, conn: ConnId) -> bool {
        self.closed.contains(&conn)
    }

    /// Every message received on any connection, in order.
    pub fn received(&self) -> impl Iterator<Item = &DeployMessage> {
        self.received.iter().map(|(_, m)| m)
    }

    /// Every message of the coarse family received on any connection, in order.
    pub fn received_coarse(&self) -> impl Iterator<Item = &CoarseMessage> {
        self.coarse.iter().map(|(_, m)| m)
    }

    /// The answer to ask `id` of the coarse family on `conn`, once it came.
    pub fn coarse_answer(
        &self,
        conn: ConnId,
        id: u64,
    ) -> Option<Result<Reply<CoarseMessage>, ErrorDescription>> {
        self.coarse_answers.get(&(conn, id)).cloned()
    }

    /// What `pick` takes from each message received, in order (every RegisteredWorker, say).
    pub fn picked<T>(&self, pick: impl FnMut(&DeployMessage) -> Option<T>) -> Vec<T> {
        self.received().filter_map(pick).collect()
    }

    /// The answer to ask `id` on `conn`, once it came.
    pub fn answer(
        &self,
        conn: ConnId,
        id: u64,
    ) -> Option<Result<Reply<DeployMessage>, ErrorDescription>> {
        self.answers.get(&(conn, id)).cloned()
    }
}

impl Node for Probe {
    fn hello(&self) -> Hello {
        self.hello.clone()
    }

    fn accepted(&mut self, _now: Instant, conn: ConnId, _peer: &Hello, _version: Version) {
        self.opened.push(conn);
    }

    fn dialled(&mut self, _now: Instant, conn: ConnId, _a: &Addr, _p: &Hello, _v: Version) {
        self.opened.push(conn);
    }

    fn dial_failed(&mut self, _now: Instant, addr: &Addr, why: &str) {
        self.dial_failures.push((addr.clone(), why.to_string()));
    }

    fn frame(&mut self, _now: Instant, conn: ConnId, frame: Frame) {
        match frame {
            Frame::Message(m) | Frame::Ask(_, m) => self.received.push((conn, m)),
            Frame::Answer(id, answer) => {
                self.answers.insert((conn, id), answer);
            }
            Frame::CoarseMessage(m) | Frame::CoarseAsk(_, m) => self.coarse.push((conn, m)),
            Frame::CoarseAnswer(id, answer) => {
                self.coarse_answers.insert((conn, id), answer);
            }
        }
    }

    fn closed(&mut self, _now: Instant, conn: ConnId) {
        self.closed.push(conn);
    }

    fn handle_timeout(&mut self, _now: Instant) {}

    fn poll_timeout(&self) -> Option<Instant> {
        None
    }

    fn poll(&mut self, _now: Instant) -> Option<Step> {
        self.queue.pop_front()
    }

    fn as_any(&self) -> &dyn Any {
        self
    }

    fn as_any_mut(&mut self) -> &mut dyn Any {
        self
    }
}

/// An application whose executors run [`EXECUTOR_PROGRAM`] as sparkwire's `executor`
/// subcommand (what a simulated worker allows), `cores_per_executor` cores (all a worker has
/// when `None`) and `memory` MiB each.
pub fn app_description(
    name: &str,
    cores_per_executor: Option<i32>,
    memory: i32,
) -> crate::messages::ApplicationDescription {
    let nowhere = Addr::new("10.0.0.9", 40000);
    app_description_for(name, cores_per_executor, memory, &nowhere)
}

/// The same, for the driver at `driver`: its executors dial it.
pub fn app_description_for(
    name: &str,
    cores_per_executor: Option<i32>,
    memory: i32,
    driver: &Addr,
) -> crate::messages::ApplicationDescription {
    let driver_url = format!("spark://CoarseGrainedScheduler@{driver}");
    let arguments = [
        "executor",
        "--driver-url",
        &driver_url,
        "--worker-url",
        "{{WORKER_URL}}",
        "--executor-id",
        "{{EXECUTOR_ID}}",
        "--hostname",
        "{{HOSTNAME}}",
        "--cores",
        "{{CORES}}",
        "--app-id",
        "{{APP_ID}}",
    ];
    crate::messages::ApplicationDescription {
        name: name.into(),
        max_cores: None,
        command: crate::messages::Command {
            main_class: EXECUTOR_PROGRAM.into(),
            arguments: arguments.iter().map(|a| a.to_string()).collect(),
            environment: BTreeMap::new(),
            class_path_entries: Vec::new(),
            library_path_entries: Vec::new(),
            java_opts: Vec::new(),
        },
        app_ui_url: String::new(),
        default_profile: crate::messages::ResourceProfile::default_with(cores_per_executor, memory),
        event_log_dir: None,
        event_log_codec: None,
        initial_executor_limit: None,
        user: "sim".into(),
    }
}

/// A driver running [`DRIVER_PROGRAM`] with `cores` cores and `mem` MiB, `supervise`d or not.
pub fn driver_description(
    cores: i32,
    mem: i32,
    supervise: bool,
) -> crate::messages::DriverDescription {
    crate::messages::DriverDescription {
        jar_url: "file:///app.jar".into(),
        mem,
        cores,
        supervise,
        command: crate::messages::Command {
            main_class: DRIVER_PROGRAM.into(),
            arguments: Vec::new(),
            environment: BTreeMap::new(),
            class_path_entries: Vec::new(),
            library_path_entries: Vec::new(),
            java_opts: Vec::new(),
        },
        resource_reqs: Vec::new(),
    }
}
