//! An in-memory harness for the master core (feature `testing`), in the manner of quinn-proto's
//! test `Pair`: a [`MasterCore`], and simulated workers, application clients, driver clients and
//! UIs as connections whose traffic is kept in memory, with a simulated clock. Behaviour tests
//! (registration, duplicates, loss after the worker timeout, retries, scheduling, drivers,
//! failover) run without TCP, tasks or sleeps, and the same inputs give the same outputs.
//!
//! ```
//! use std::time::Duration;
//! use sparkwire::messages::{DeployMessage, WorkerState};
//! use sparkwire::reference::master::harness::Sim;
//! use sparkwire::node::master::Config;
//!
//! let mut sim = Sim::new(Config {
//!     worker_timeout: Duration::from_secs(60),
//!     ..Config::default()
//! });
//! let w = sim.worker("worker-1", 40001, 4, 4096);
//! assert!(matches!(sim.received(w)[0], DeployMessage::RegisteredWorker(_)));
//! // No heartbeat: DEAD at the first check (every quarter of the timeout) past the timeout.
//! sim.advance(Duration::from_secs(75));
//! assert_eq!(sim.state().workers[0].state, WorkerState::Dead);
//! ```

use crate::validate::ConnId;
use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use crate::messages::deploy::{
    ExecutorStateChanged, Heartbeat, LaunchExecutor, MasterStateResponse, RegisterApplication,
    RegisterWorker, RequestMasterState,
};
use crate::messages::{
    Addr, ApplicationDescription, Command, DeployMessage, DriverDescription, EndpointRef,
    ErrorDescription, ExecutorState, ResourceProfile, Resources,
};
use crate::node::master::Config;
use crate::node::master::{DialTarget, Effect, Input, MasterCore, Output, Stored};
use crate::node::{ConnOutput, Core};
use crate::wire::handshake::Role;
use crate::wire::Reply;

/// The wall clock the simulation starts at (2025-01-01T00:00:00Z), ms since the epoch.
pub const START_WALL_MS: i64 = 1_735_689_600_000;

/// A command running `main_class` with no arguments, environment or paths.
pub fn command(main_class: &str) -> Command {
    Command {
        main_class: main_class.into(),
        arguments: vec![],
        environment: Default::default(),
        class_path_entries: vec![],
        library_path_entries: vec![],
        java_opts: vec![],
    }
}

/// An application whose executors run `/bin/true`, with `memory` MiB per executor and
/// `cores_per_executor` cores (`None`: all of a worker's).
pub fn app_desc(
    name: &str,
    cores_per_executor: Option<i32>,
    memory: i32,
) -> ApplicationDescription {
    ApplicationDescription {
        name: name.into(),
        max_cores: None,
        command: command("/bin/true"),
        app_ui_url: String::new(),
        default_profile: ResourceProfile::default_with(cores_per_executor, memory),
        event_log_dir: None,
        event_log_codec: None,
        initial_executor_limit: None,
        user: "sim".into(),
    }
}

/// A driver running `/bin/true` with `cores` cores and `mem` MiB, `supervise`d or not.
pub fn driver_desc(cores: i32, mem: i32, supervise: bool) -> DriverDescription {
    DriverDescription {
        jar_url: "file:///app.jar".into(),
        mem,
        cores,
        supervise,
        command: command("/bin/true"),
        resource_reqs: vec![],
    }
}

/// What `pick` takes from each message of `log`, in order (e.g. every RegisteredWorker).
pub fn picked<T>(log: &[DeployMessage], pick: impl FnMut(&DeployMessage) -> Option<T>) -> Vec<T> {
    log.iter().filter_map(pick).collect()
}

/// One simulated connection: what the master sent on it, in order.
#[derive(Debug, Clone)]
pub struct SimConn {
    /// The peer's role.
    pub role: Role,
    /// The peer's id.
    pub peer_id: String,
    /// One-way messages the master sent.
    pub received: Vec<DeployMessage>,
    /// Answers to the peer's asks, by ask id.
    pub answers: BTreeMap<u64, Result<Reply<DeployMessage>, ErrorDescription>>,
    /// The master closed it (or the peer did).
    pub closed: bool,
    /// Why the master dialled it, for connections it opened.
    pub dialled: Option<DialTarget>,
    next_ask: u64,
}

/// A peer the master can dial (a worker or an application client listening at its address).
#[derive(Debug, Clone)]
struct Listener {
    role: Role,
    peer_id: String,
}

/// The master core with simulated peers and time; see the [module docs](self).
#[derive(Debug)]
pub struct Sim {
    /// The master under test.
    pub core: MasterCore,
    config: Config,
    addr: Addr,
    now: Instant,
    start: Instant,
    next_conn: ConnId,
    conns: BTreeMap<ConnId, SimConn>,
    /// What the recovery directory would hold.
    store: Stored,
    /// Where simulated peers listen, for the master's dials after a failover.
    listeners: BTreeMap<String, Listener>,
    /// Dials that reached nobody.
    unreachable: Vec<(Addr, DialTarget)>,
    /// Workers the harness heartbeats for, by connection.
    heartbeats: BTreeMap<ConnId, String>,
    every_output: Vec<Output>,
}

impl Sim {
    /// An elected (ALIVE) master at `127.0.0.1:7077` with `config`. It always persists (the
    /// harness keeps the records in memory, [`Sim::store`]).
    pub fn new(config: Config) -> Sim {
        Sim::with_store(config, Stored::default())
    }

    /// A master elected on a recovery directory holding `store` (RECOVERING when it holds
    /// anything). The records it persists from then on are kept by the harness
    /// ([`Sim::store`]).
    pub fn with_store(config: Config, store: Stored) -> Sim {
        let mut sim = Sim::standby(config);
        sim.store = store.clone();
        sim.input(Input::Elected { stored: store });
        sim
    }

    /// A master in STANDBY (not elected yet): elect it with [`Input::Elected`] through
    /// [`Sim::input`].
    pub fn standby(mut config: Config) -> Sim {
        config.persistent = true;
        let start = Instant::now();
        let addr = Addr::new("127.0.0.1", 7077);
        let core = MasterCore::new(config.clone(), addr.clone(), start, START_WALL_MS);
        let mut sim = Sim {
            core,
            config,
            addr,
            now: start,
            start,
            next_conn: 1,
            conns: BTreeMap::new(),
            store: Stored::default(),
            listeners: BTreeMap::new(),
            unreachable: Vec::new(),
            heartbeats: BTreeMap::new(),
            every_output: Vec::new(),
        };
        sim.core.set_seed(7);
        sim
    }

    /// The master's address.
    pub fn master_addr(&self) -> Addr {
        self.addr.clone()
    }

    /// Simulated time since the start.
    pub fn elapsed(&self) -> Duration {
        self.now.saturating_duration_since(self.start)
    }

    /// What the recovery directory holds now.
    pub fn store(&self) -> &Stored {
        &self.store
    }

    /// Every output the core gave so far, in order.
    pub fn outputs(&self) -> &[Output] {
        &self.every_output
    }

    /// Dials after a failover that reached no simulated listener.
    pub fn unreachable(&self) -> &[(Addr, DialTarget)] {
        &self.unreachable
    }

    /// Feeds `input` at the current time and does what the core outputs.
    pub fn input(&mut self, input: Input) {
        self.core.handle(self.now, input);
        self.pump();
    }

    fn pump(&mut self) {
        while let Some(out) = self.core.poll() {
            self.every_output.push(out.clone());
            match out {
                Output::Conn(ConnOutput::Send { conn, message }) => {
                    if let Some(c) = self.conns.get_mut(&conn).filter(|c| !c.closed) {
                        c.received.push(message);
                    }
                }
                Output::Conn(ConnOutput::Reply { conn, id, reply }) => {
                    if let Some(c) = self.conns.get_mut(&conn) {
                        c.answers.insert(id, Ok(reply));
                    }
                }
                Output::Conn(ConnOutput::Fail { conn, id, error }) => {
                    if let Some(c) = self.conns.get_mut(&conn) {
                        c.answers.insert(id, Err(error));
                    }
                }
                Output::Conn(ConnOutput::Close { conn, .. } | ConnOutput::Abort { conn }) => {
                    self.close(conn)
                }
                Output::Conn(ConnOutput::Ask { .. }) => {}
                Output::Effect(Effect::Dial { addr, target }) => {
                    match self.listeners.get(&addr.to_string()) {
                        Some(l) => {
                            let (role, peer_id) = (l.role, l.peer_id.clone());
                            self.open(role, &peer_id, false, Some(target));
                        }
                        None => self.unreachable.push((addr, target)),
                    }
                }
                Output::Effect(Effect::Registered { .. }) => {}
                Output::Effect(Effect::Persist(record)) => self.store.apply(record),
                Output::Effect(Effect::Unpersist { kind, id }) => self.store.remove(kind, &id),
            }
        }
    }

    fn open(
        &mut self,
        role: Role,
        peer_id: &str,
        admin: bool,
        dialled: Option<DialTarget>,
    ) -> ConnId {
        let conn = self.next_conn;
        self.next_conn += 1;
        self.conns.insert(
            conn,
            SimConn {
                role,
                peer_id: peer_id.to_string(),
                received: Vec::new(),
                answers: BTreeMap::new(),
                closed: false,
                dialled: dialled.clone(),
                next_ask: 1,
            },
        );
        self.input(Input::Opened {
            conn,
            role,
            peer_id: peer_id.to_string(),
            addr: format!("127.0.0.1:{}", 40_000 + conn),
            admin,
            dialled,
        });
        conn
    }

    /// A peer of `role` connects (its handshake accepted).
    pub fn connect(&mut self, role: Role, peer_id: &str) -> ConnId {
        self.open(role, peer_id, false, None)
    }

    /// A `ui` peer that proved the admin secret connects.
    pub fn connect_admin(&mut self, peer_id: &str) -> ConnId {
        self.open(Role::Ui, peer_id, true, None)
    }

    /// Makes `addr` reachable for the master's dials, answered by a peer of `role`.
    pub fn listen(&mut self, addr: &Addr, role: Role, peer_id: &str) {
        self.listeners.insert(
            addr.to_string(),
            Listener {
                role,
                peer_id: peer_id.to_string(),
            },
        );
    }

    /// The peer sends `message` on `conn`.
    pub fn send(&mut self, conn: ConnId, message: impl Into<DeployMessage>) {
        if self.conns.get(&conn).is_some_and(|c| !c.closed) {
            self.input(Input::Message {
                conn,
                message: message.into(),
            });
        }
    }

    /// The peer asks `message` on `conn`; the master's answer (or `None` when it gave none).
    pub fn ask(
        &mut self,
        conn: ConnId,
        message: impl Into<DeployMessage>,
    ) -> Option<Result<Reply<DeployMessage>, ErrorDescription>> {
        let c = self.conns.get_mut(&conn).filter(|c| !c.closed)?;
        let id = c.next_ask;
        c.next_ask += 1;
        self.input(Input::Ask {
            conn,
            id,
            message: message.into(),
        });
        self.conns.get_mut(&conn)?.answers.remove(&id)
    }

    /// The connection closes (either side).
    pub fn close(&mut self, conn: ConnId) {
        self.heartbeats.remove(&conn);
        match self.conns.get_mut(&conn) {
            Some(c) if !c.closed => c.closed = true,
            _ => return,
        }
        self.input(Input::Closed { conn });
    }

    /// Whether `conn` is closed.
    pub fn is_closed(&self, conn: ConnId) -> bool {
        self.conns.get(&conn).is_none_or(|c| c.closed)
    }

    /// What the master sent on `conn`, in order.
    pub fn received(&self, conn: ConnId) -> &[DeployMessage] {
        self.conns.get(&conn).map_or(&[], |c| c.received.as_slice())
    }

    /// The connection's record.
    pub fn conn(&self, conn: ConnId) -> Option<&SimConn> {
        self.conns.get(&conn)
    }

    /// Connections the master dialled for `target`.
    pub fn dialled(&self, target: &DialTarget) -> Vec<ConnId> {
        self.conns
            .iter()
            .filter(|(_, c)| c.dialled.as_ref() == Some(target))
            .map(|(id, _)| *id)
            .collect()
    }

    /// Advances simulated time by `by`, firing the core's timers when due and sending the
    /// heartbeats of the workers kept alive ([`Sim::keep_alive`]) every quarter of the worker
    /// timeout, as Spark's workers do.
    pub fn advance(&mut self, by: Duration) {
        let end = self.now + by;
        let beat = (self.config.worker_timeout / 4).max(Duration::from_millis(1));
        let mut next_beat = self.now + beat;
        loop {
            let timer = self.core.poll_timeout().filter(|t| *t <= end);
            let beat_due = (!self.heartbeats.is_empty() && next_beat <= end).then_some(next_beat);
            let step = match (timer, beat_due) {
                (Some(t), Some(b)) => t.min(b),
                (Some(t), None) => t,
                (None, Some(b)) => b,
                (None, None) => break,
            };
            self.now = self.now.max(step);
            if beat_due == Some(step) {
                next_beat = step + beat;
                let beats: Vec<(ConnId, String)> = self
                    .heartbeats
                    .iter()
                    .map(|(c, w)| (*c, w.clone()))
                    .collect();
                for (conn, worker_id) in beats {
                    self.heartbeat(conn, &worker_id);
                }
            }
            if timer == Some(step) {
                self.core.handle_timeout(self.now);
                self.pump();
            }
        }
        self.now = end;
    }

    /// Sends worker `worker_id`'s heartbeat on `conn`.
    pub fn heartbeat(&mut self, conn: ConnId, worker_id: &str) {
        let worker = self
            .conns
            .get(&conn)
            .map(|c| c.peer_id.clone())
            .unwrap_or_default();
        self.send(
            conn,
            Heartbeat {
                worker_id: worker_id.to_string(),
                worker: EndpointRef::at(Addr::new("127.0.0.1", 0), worker),
            },
        );
    }

    /// Has the harness heartbeat for worker `worker_id` on `conn` as time advances.
    pub fn keep_alive(&mut self, conn: ConnId, worker_id: &str) {
        self.heartbeats.insert(conn, worker_id.to_string());
    }

    /// Stops heartbeating on `conn`.
    pub fn fall_silent(&mut self, conn: ConnId) {
        self.heartbeats.remove(&conn);
    }

    /// The RegisterWorker of a worker `id` at `127.0.0.1:port`.
    pub fn register_worker_message(
        &self,
        id: &str,
        port: i32,
        cores: i32,
        memory: i32,
    ) -> RegisterWorker {
        let at = Addr::new("127.0.0.1", port);
        RegisterWorker {
            id: id.to_string(),
            host: at.host.clone(),
            port,
            worker: EndpointRef::at(at, "Worker"),
            cores,
            memory,
            worker_web_ui_url: format!("http://127.0.0.1:{}", port + 1),
            master_address: self.addr.clone(),
            resources: Resources::new(),
        }
    }

    /// A worker `id` at `127.0.0.1:port` connects and registers (and listens there, for the
    /// master's dials); its connection. Not kept alive: see [`Sim::keep_alive`].
    pub fn worker(&mut self, id: &str, port: i32, cores: i32, memory: i32) -> ConnId {
        let conn = self.connect(Role::Worker, id);
        let register = self.register_worker_message(id, port, cores, memory);
        self.listen(&Addr::new("127.0.0.1", port), Role::Worker, id);
        self.send(conn, register);
        conn
    }

    /// An application client at `127.0.0.1:port` connects and registers `desc`; its connection
    /// and the id the master gave (`None` if it gave none).
    pub fn app(&mut self, port: i32, desc: ApplicationDescription) -> (ConnId, Option<String>) {
        let peer = format!("app-client-{port}");
        let conn = self.connect(Role::AppClient, &peer);
        let at = Addr::new("127.0.0.1", port);
        self.listen(&at, Role::AppClient, &peer);
        self.send(
            conn,
            RegisterApplication {
                app_description: desc,
                driver: EndpointRef::at(at, "AppClient"),
            },
        );
        let id = self.received(conn).iter().find_map(|m| match m {
            DeployMessage::RegisteredApplication(r) => Some(r.app_id.clone()),
            _ => None,
        });
        (conn, id)
    }

    /// The master's state, as it answers RequestMasterState.
    pub fn state(&self) -> MasterStateResponse {
        self.core.master_state()
    }

    /// The master's state as a `ui` peer asks it over a fresh connection (through the
    /// authorization and routing checks).
    pub fn ask_state(&mut self) -> Option<MasterStateResponse> {
        let ui = self.connect(Role::Ui, "sim-ui");
        let answer = self.ask(ui, RequestMasterState {});
        self.close(ui);
        match answer {
            Some(Ok(Reply::Message(DeployMessage::MasterStateResponse(s)))) => Some(s),
            _ => None,
        }
    }

    /// The master fails over: a new master core with the same configuration is elected on what
    /// the recovery directory holds; every connection of the old one closes (without the old
    /// master seeing it). Listening peers are dialled anew.
    pub fn fail_over(&mut self) {
        for c in self.conns.values_mut() {
            c.closed = true;
        }
        self.heartbeats.clear();
        let core = MasterCore::new(
            self.config.clone(),
            self.addr.clone(),
            self.now,
            START_WALL_MS + i64::try_from(self.elapsed().as_millis()).unwrap_or(i64::MAX),
        );
        self.core = core;
        self.core.set_seed(11);
        let stored = self.store.clone();
        self.input(Input::Elected { stored });
    }

    /// Ids of every open connection.
    pub fn open_conns(&self) -> BTreeSet<ConnId> {
        self.conns
            .iter()
            .filter(|(_, c)| !c.closed)
            .map(|(id, _)| *id)
            .collect()
    }

    /// The LaunchExecutors the master sent on `conn`, in order.
    pub fn launches(&self, conn: ConnId) -> Vec<LaunchExecutor> {
        picked(self.received(conn), |m| match m {
            DeployMessage::LaunchExecutor(l) => Some(l.clone()),
            _ => None,
        })
    }

    /// The worker on `conn` reports executor `exec_id` of `app_id` in `state` (an ask, as from
    /// protocol version 2 on); the master's answer.
    pub fn executor_state(
        &mut self,
        conn: ConnId,
        app_id: &str,
        exec_id: i32,
        state: ExecutorState,
        exit_status: Option<i32>,
    ) -> Option<Result<Reply<DeployMessage>, ErrorDescription>> {
        self.ask(
            conn,
            ExecutorStateChanged {
                app_id: app_id.to_string(),
                exec_id,
                state,
                message: None,
                exit_status,
            },
        )
    }
}
