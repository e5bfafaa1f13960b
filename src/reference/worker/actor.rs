//! The worker's actor: registration with its masters (with retries), heartbeats, master
//! changes, and the executors and drivers it runs.

use std::collections::{BTreeMap, HashMap};
use std::net::SocketAddr;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;
use std::time::Duration;

use tokio::net::TcpListener;
use tokio::sync::{mpsc, oneshot, watch};
use tokio::time::Instant;

use super::listen::{self, ConnSettings, Purpose};
use super::policy::{LaunchKind, Policy};
use super::runner::{self, Ended, Launch, RunKey, Running};
use super::{WorkerConfig, WorkerExit, INITIAL_REGISTRATION_RETRIES, REGISTRATION_RETRIES};
use crate::connection::Incoming;
use crate::messages::deploy::{
    DriverStateChanged, ExecutorStateChanged, Heartbeat, LaunchDriver, LaunchExecutor,
    RegisterWorker, WorkerDecommissioning, WorkerDriverStateResponse, WorkerExecutorStateResponse,
    WorkerLatestState, WorkerSchedulerStateResponse, WorkerStateResponse,
};
use crate::messages::{
    Addr, Command, DeployMessage, DriverRunnerInfo, DriverState, EndpointRef, ErrorDescription,
    ExecutorDescription, ExecutorState, Family, Resources,
};
use crate::reference::authz::{self, Refusal};
use crate::reference::clock::{now_ms, stamp};
use crate::reference::outbox::{ConnId, Credit, Out, Outbox, Peer};
use crate::wire::handshake::Role;
use crate::wire::Reply;

/// What the worker's actor handles.
#[allow(clippy::large_enum_variant)] // as the message enums: boxing would cost an allocation per message
pub(crate) enum WEvent {
    /// A connection is up.
    Opened {
        conn: ConnId,
        peer: Peer,
        role: Role,
        purpose: Purpose,
    },
    /// A message or ask arrived.
    Incoming(ConnId, Incoming<DeployMessage>, Credit),
    /// A connection closed.
    Closed(ConnId),
    /// A process ended.
    Ended(RunKey, Ended),
    /// The web UI asks for a snapshot.
    #[cfg_attr(not(feature = "webui"), allow(dead_code))]
    Snapshot(oneshot::Sender<crate::reference::webui::WorkerSnapshot>),
    /// A master could not be reached.
    DialFailed(Addr, crate::connection::ConnectionError),
}

struct ConnRec {
    peer: Peer,
    role: Role,
    purpose: Purpose,
    /// A one-way message was refused: the connection is closing and nothing more is taken.
    refused: bool,
}

struct ExecRun {
    desc: ExecutorDescription,
    resources: Resources,
    running: Option<Running>,
    killed: bool,
}

struct DriverRun {
    info: DriverRunnerInfo,
    running: Option<Running>,
}

pub(crate) struct WorkerActor {
    pub(crate) id: String,
    config: WorkerConfig,
    addr: Addr,
    self_ref: EndpointRef,
    worker_url: String,
    policy: Policy,
    conns: HashMap<ConnId, ConnRec>,
    /// The connection to the active master, once registered.
    master: Option<ConnId>,
    registered: bool,
    active_master_url: String,
    master_web_ui_url: String,
    attempts: u32,
    next_retry: Option<Instant>,
    decommissioned: bool,
    executors: BTreeMap<(String, i32), ExecRun>,
    finished_executors: Vec<ExecutorDescription>,
    drivers: BTreeMap<String, DriverRun>,
    finished_drivers: Vec<DriverRunnerInfo>,
    cores_used: i32,
    memory_used: i32,
    outbox: Outbox,
    events: mpsc::UnboundedSender<WEvent>,
    settings: ConnSettings,
    stopping: watch::Sender<bool>,
    exit: Option<WorkerExit>,
    seed: u64,
    /// The web UI's URL, advertised to masters (empty: none).
    pub(crate) web_ui_url: String,
    /// Traffic of the connections that closed, for the web UI's metrics.
    closed_traffic: crate::connection::Counters,
}

/// Most finished executors and drivers kept for the state page.
const RETAINED_FINISHED: usize = 1000;

impl WorkerActor {
    pub(crate) fn new(
        config: WorkerConfig,
        addr: SocketAddr,
        events: mpsc::UnboundedSender<WEvent>,
    ) -> Self {
        let host = config.host.clone();
        let port = i32::from(addr.port());
        let id = format!("worker-{}-{host}-{port}", stamp(now_ms()));
        let (stopping, stopping_rx) = watch::channel(false);
        let settings = ConnSettings {
            id: id.clone(),
            max_frame_size: config.max_frame_size,
            handshake_timeout: Duration::from_secs(10),
            observer: config.observer.clone(),
            next_conn: Arc::new(AtomicU64::new(1)),
            stopping: stopping_rx,
            security: config.security.clone(),
            admission: crate::connection::Admission::new(config.limits),
        };
        let me = Addr::new(host.clone(), port);
        WorkerActor {
            policy: Policy::new(&config),
            self_ref: EndpointRef::at(me.clone(), "Worker"),
            worker_url: format!("sparkwire://{host}:{port}"),
            addr: me,
            id,
            outbox: Outbox::spawn(config.send_timeout),
            config,
            conns: HashMap::new(),
            master: None,
            registered: false,
            active_master_url: String::new(),
            master_web_ui_url: String::new(),
            attempts: 0,
            next_retry: None,
            decommissioned: false,
            executors: BTreeMap::new(),
            finished_executors: Vec::new(),
            drivers: BTreeMap::new(),
            finished_drivers: Vec::new(),
            cores_used: 0,
            memory_used: 0,
            events,
            settings,
            stopping,
            exit: None,
            seed: now_ms() as u64 ^ u64::from(std::process::id()) ^ 0x2545_f491_4f6c_dd1d,
            web_ui_url: String::new(),
            closed_traffic: Default::default(),
        }
    }

    pub(crate) async fn run(
        mut self,
        listener: TcpListener,
        mut events: mpsc::UnboundedReceiver<WEvent>,
        mut stop: oneshot::Receiver<()>,
    ) -> WorkerExit {
        let listening = tokio::spawn(listen::listen(
            listener,
            self.settings.clone(),
            self.events.clone(),
        ));
        tracing::info!(
            "Starting Spark worker {}:{} with {} cores, {} MiB RAM",
            self.addr.host,
            self.addr.port,
            self.config.cores,
            self.config.memory
        );
        if self.config.allow_exec.is_empty() && self.config.allow_exec_any.is_empty() {
            tracing::warn!(
                "no executable is allowed (--allow-exec, --allow-exec-any): this worker will refuse every \
                 executor and driver it is asked to launch"
            );
        }
        self.register_with_all_masters();
        let beat_every = (self.config.worker_timeout / 4).max(Duration::from_millis(10));
        let mut beat = tokio::time::interval(beat_every);
        beat.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let exit = loop {
            if let Some(exit) = self.exit.take() {
                break exit;
            }
            let retry = self.next_retry;
            tokio::select! {
                _ = &mut stop => break WorkerExit::Stopped,
                event = events.recv() => match event {
                    Some(e) => self.handle(e),
                    None => break WorkerExit::Stopped,
                },
                _ = beat.tick() => self.send_heartbeat(),
                _ = async {
                    match retry {
                        Some(at) => tokio::time::sleep_until(at).await,
                        None => std::future::pending().await,
                    }
                } => self.retry_registration(),
            }
        };
        listening.abort();
        // Wait until the listener is dropped, so the port is free when this returns.
        let _ = listening.await;
        let _ = self.stopping.send(true);
        for run in self.executors.values_mut() {
            if let Some(r) = run.running.as_mut() {
                r.kill();
            }
        }
        for run in self.drivers.values_mut() {
            if let Some(r) = run.running.as_mut() {
                r.kill();
            }
        }
        for c in self.conns.values() {
            c.peer.kill();
        }
        tracing::info!(worker = %self.id, "worker stopped: {exit}");
        exit
    }

    fn handle(&mut self, event: WEvent) {
        match event {
            WEvent::Opened {
                conn,
                peer,
                role,
                purpose,
            } => {
                let registration = matches!(purpose, Purpose::Registration(_));
                let master_addr = match &purpose {
                    Purpose::Registration(a) => Some(a.clone()),
                    Purpose::Inbound => None,
                };
                self.conns.insert(
                    conn,
                    ConnRec {
                        peer: peer.clone(),
                        role,
                        purpose,
                        refused: false,
                    },
                );
                if registration {
                    if self.registered {
                        self.outbox.push(Out::Close(peer));
                    } else if let Some(a) = master_addr {
                        self.send_register(&peer, a);
                    }
                }
            }
            WEvent::Incoming(conn, Incoming::Message(m), _credit) => self.on_message(conn, m),
            WEvent::Incoming(conn, Incoming::Ask { id, message }, _credit) => {
                self.on_ask(conn, id, message)
            }
            WEvent::Closed(conn) => self.closed(conn),
            WEvent::Ended(key, ended) => self.process_ended(key, ended),
            WEvent::Snapshot(reply) => {
                let _ = reply.send(self.snapshot());
            }
            WEvent::DialFailed(addr, e) => self.dial_failed(&addr, &e),
        }
    }

    fn fuzzed(&mut self, base: Duration) -> Duration {
        let mut x = self.seed;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.seed = x;
        let factor = 0.5 + (x % 1000) as f64 / 1000.0;
        Duration::try_from_secs_f64(base.as_secs_f64() * factor).unwrap_or(base)
    }

    /// Spark's tryRegisterAllMasters: a connection to every master, RegisterWorker on each.
    fn register_with_all_masters(&mut self) {
        for (id, c) in &self.conns {
            if matches!(c.purpose, Purpose::Registration(_)) && Some(*id) != self.master {
                self.outbox.push(Out::Close(c.peer.clone()));
            }
        }
        for m in self.config.masters.clone() {
            tracing::info!("Connecting to master {m}...");
            listen::dial_master(m, self.settings.clone(), self.events.clone());
        }
        self.schedule_retry();
    }

    fn schedule_retry(&mut self) {
        let base = if self.attempts < INITIAL_REGISTRATION_RETRIES {
            self.config.register_retry
        } else {
            self.config.register_retry.saturating_mul(6)
        };
        let wait = self.fuzzed(base);
        self.next_retry = Instant::now().checked_add(wait);
    }

    /// A master could not be reached: says so at WARN, with when the next attempt comes.
    fn dial_failed(&self, addr: &Addr, e: &crate::connection::ConnectionError) {
        if self.registered {
            return;
        }
        let next = self
            .next_retry
            .map(|at| at.saturating_duration_since(Instant::now()).as_secs_f64());
        let left = REGISTRATION_RETRIES.saturating_sub(self.attempts + 1);
        let reason = match e {
            crate::connection::ConnectionError::Connect { .. } => e.to_string(),
            other => format!("cannot register with {addr}: {other}"),
        };
        match next {
            Some(secs) if left > 0 => tracing::warn!(
                "{reason}; retrying in {secs:.1} s ({left} attempts left, every ~{:.1} s, then ~{:.1} s)",
                self.config.register_retry.as_secs_f64(),
                self.config.register_retry.as_secs_f64() * 6.0
            ),
            _ => tracing::warn!("{reason}; no attempt left"),
        }
    }

    fn retry_registration(&mut self) {
        self.next_retry = None;
        if self.registered {
            return;
        }
        self.attempts += 1;
        if self.attempts >= REGISTRATION_RETRIES {
            tracing::error!("All masters are unresponsive! Giving up.");
            self.exit = Some(WorkerExit::GaveUp);
            return;
        }
        tracing::info!(
            "Retrying connection to master (attempt # {})",
            self.attempts
        );
        self.register_with_all_masters();
    }

    fn send_register(&self, peer: &Peer, master_address: Addr) {
        self.outbox.send(
            peer,
            RegisterWorker {
                id: self.id.clone(),
                host: self.addr.host.clone(),
                port: self.addr.port,
                worker: self.self_ref.clone(),
                cores: self.config.cores,
                memory: self.config.memory,
                worker_web_ui_url: self.web_ui_url.clone(),
                master_address,
                resources: self.config.resources.clone(),
            },
        );
    }

    fn send_heartbeat(&self) {
        if !self.registered {
            return;
        }
        if let Some(c) = self.master.and_then(|m| self.conns.get(&m)) {
            self.outbox.send(
                &c.peer,
                Heartbeat {
                    worker_id: self.id.clone(),
                    worker: self.self_ref.clone(),
                },
            );
        }
    }

    fn to_master(&self, m: impl Into<DeployMessage>) {
        if let Some(c) = self.master.and_then(|m| self.conns.get(&m)) {
            self.outbox.send(&c.peer, m);
        }
    }

    fn ask_master(&self, m: impl Into<DeployMessage>) {
        if let Some(c) = self.master.and_then(|m| self.conns.get(&m)) {
            self.outbox.push(Out::Ask(c.peer.clone(), m.into()));
        }
    }

    /// Takes `conn` as the connection to the active master (Spark's changeMaster), closing the
    /// other connections made to register.
    fn change_master(&mut self, conn: ConnId, master: &EndpointRef, web_ui: &str) {
        self.registered = true;
        self.next_retry = None;
        self.attempts = 0;
        self.master = Some(conn);
        self.active_master_url = match &master.address {
            Some(a) => format!("sparkwire://{}:{}", a.host, a.port),
            None => String::new(),
        };
        self.master_web_ui_url = web_ui.to_string();
        for (id, c) in &self.conns {
            let to_master = matches!(c.purpose, Purpose::Registration(_)) || c.role == Role::Master;
            if *id != conn && to_master {
                self.outbox.push(Out::Close(c.peer.clone()));
            }
        }
    }

    /// Whether the worker takes `m` on `conn` (SPEC §14): the protocol's routes, then the
    /// answers to a registration only over a connection the worker opened to register, and the
    /// active master's commands only over its connection.
    fn authorize(&self, conn: ConnId, m: &DeployMessage, asked: bool) -> Result<(), Refusal> {
        use DeployMessage as M;
        let Some(c) = self.conns.get(&conn) else {
            return Err(Refusal::WrongPeer {
                message: m.name(),
                expected: "an open connection",
            });
        };
        authz::route(c.role, Role::Worker, "deploy", m.name(), asked)?;
        let registration = matches!(c.purpose, Purpose::Registration(_));
        let active = self.registered && self.master == Some(conn);
        let taken = match m {
            M::RegisteredWorker(_) | M::RegisterWorkerFailed(_) | M::MasterInStandby(_) => {
                registration
            }
            M::ReconnectWorker(_) => registration || active,
            M::LaunchExecutor(_)
            | M::KillExecutor(_)
            | M::LaunchDriver(_)
            | M::KillDriver(_)
            | M::ApplicationFinished(_)
            | M::DecommissionWorker(_) => active,
            _ => true,
        };
        if taken {
            return Ok(());
        }
        let expected = match m {
            M::RegisteredWorker(_) | M::RegisterWorkerFailed(_) | M::MasterInStandby(_) => {
                "a master the worker dialled to register"
            }
            M::ReconnectWorker(_) => "a master the worker dialled or is registered with",
            _ => "the master the worker is registered with, over its connection",
        };
        Err(Refusal::WrongPeer {
            message: m.name(),
            expected,
        })
    }

    /// Refuses a message: a failure answers an ask, a one-way message closes the connection.
    fn refuse(&mut self, conn: ConnId, ask: Option<u64>, refusal: &Refusal) {
        let Some(c) = self.conns.get_mut(&conn) else {
            return;
        };
        tracing::warn!(conn, role = %c.role, "refused: {refusal}");
        match ask {
            Some(id) => self
                .outbox
                .push(Out::Fail(c.peer.clone(), id, refusal.failure())),
            None => {
                c.refused = true;
                self.outbox.push(Out::Close(c.peer.clone()));
            }
        }
    }

    fn on_message(&mut self, conn: ConnId, m: DeployMessage) {
        use DeployMessage as M;
        if self.conns.get(&conn).is_none_or(|c| c.refused) {
            return;
        }
        if let Err(refusal) = self.authorize(conn, &m, false) {
            self.refuse(conn, None, &refusal);
            return;
        }
        match m {
            M::RegisteredWorker(r) => {
                if r.duplicate {
                    tracing::warn!("Duplicate registration at master {}", addr_text(&r.master));
                }
                tracing::info!(
                    "Successfully registered with master {}",
                    addr_text(&r.master)
                );
                self.change_master(conn, &r.master, &r.master_web_ui_url);
                self.to_master(WorkerLatestState {
                    id: self.id.clone(),
                    executors: self.executors.values().map(|e| e.desc.clone()).collect(),
                    driver_ids: self.drivers.keys().cloned().collect(),
                });
            }
            M::RegisterWorkerFailed(f) => {
                if !self.registered {
                    tracing::error!("Worker registration failed: {}", f.message);
                    self.exit = Some(WorkerExit::RegistrationFailed(f.message));
                }
            }
            M::MasterInStandby(_) => {
                if Some(conn) != self.master {
                    if let Some(c) = self.conns.get(&conn) {
                        self.outbox.push(Out::Close(c.peer.clone()));
                    }
                }
            }
            M::ReconnectWorker(r) => {
                tracing::info!(
                    "Master with url {} requested this worker to reconnect.",
                    r.master_url
                );
                self.registered = false;
                if let Some(c) = self.conns.get(&conn) {
                    let addr = match &c.purpose {
                        Purpose::Registration(a) => Some(a.clone()),
                        Purpose::Inbound => None,
                    };
                    let peer = c.peer.clone();
                    let master_address = addr.unwrap_or_else(|| {
                        crate::reference::url::MasterUrl::parse(&r.master_url)
                            .ok()
                            .and_then(|u| u.masters.into_iter().next())
                            .unwrap_or_else(|| Addr::new("", 0))
                    });
                    self.send_register(&peer, master_address);
                }
                self.schedule_retry();
            }
            M::MasterChanged(c) => {
                tracing::info!(
                    "Master has changed, new master is at {}",
                    addr_text(&c.master)
                );
                self.change_master(conn, &c.master, &c.master_web_ui_url);
                let response = WorkerSchedulerStateResponse {
                    id: self.id.clone(),
                    exec_responses: self
                        .executors
                        .values()
                        .map(|e| WorkerExecutorStateResponse {
                            desc: e.desc.clone(),
                            resources: e.resources.clone(),
                        })
                        .collect(),
                    driver_responses: self
                        .drivers
                        .keys()
                        .map(|d| WorkerDriverStateResponse {
                            driver_id: d.clone(),
                            resources: Resources::new(),
                        })
                        .collect(),
                };
                self.to_master(response);
            }
            M::LaunchExecutor(l) => self.launch_executor(l),
            M::KillExecutor(k) => {
                if k.master_url != self.active_master_url {
                    tracing::warn!(
                        "Invalid Master ({}) attempted to kill executor {}",
                        k.master_url,
                        k.exec_id
                    );
                    return;
                }
                match self.executors.get_mut(&(k.app_id.clone(), k.exec_id)) {
                    Some(run) => {
                        tracing::info!("Asked to kill executor {}/{}", k.app_id, k.exec_id);
                        run.killed = true;
                        if let Some(r) = run.running.as_mut() {
                            r.kill();
                        }
                    }
                    None => {
                        tracing::info!("Asked to kill unknown executor {}/{}", k.app_id, k.exec_id)
                    }
                }
            }
            M::LaunchDriver(l) => self.launch_driver(l),
            M::KillDriver(k) => match self.drivers.get_mut(&k.driver_id) {
                Some(run) => {
                    tracing::info!("Asked to kill driver {}", k.driver_id);
                    if let Some(r) = run.running.as_mut() {
                        r.kill();
                    }
                }
                None => tracing::info!("Asked to kill unknown driver {}", k.driver_id),
            },
            M::ApplicationFinished(a) => {
                tracing::info!("Application {} finished", a.id);
            }
            M::DecommissionWorker(_) => {
                if !self.decommissioned {
                    tracing::info!("Decommissioning self");
                    self.decommissioned = true;
                    self.to_master(WorkerDecommissioning {
                        id: self.id.clone(),
                        worker_ref: self.self_ref.clone(),
                    });
                }
            }
            other => {
                let refusal = Refusal::WrongPeer {
                    message: other.name(),
                    expected: "no peer (the worker does not take it)",
                };
                self.refuse(conn, None, &refusal);
            }
        }
    }

    fn on_ask(&mut self, conn: ConnId, id: u64, m: DeployMessage) {
        let Some(c) = self.conns.get(&conn) else {
            return;
        };
        if c.refused {
            return;
        }
        let peer = c.peer.clone();
        if let Err(refusal) = self.authorize(conn, &m, true) {
            self.refuse(conn, Some(id), &refusal);
            return;
        }
        match m {
            DeployMessage::RequestWorkerState(_) => {
                let state = self.state_response();
                self.outbox.reply(&peer, id, Reply::Message(state.into()));
            }
            other => {
                self.outbox.push(Out::Fail(
                    peer,
                    id,
                    ErrorDescription::new(
                        "org.apache.spark.SparkException",
                        format!("Unsupported message {} for a worker", other.name()),
                    ),
                ));
            }
        }
    }

    /// What the web UI shows now.
    fn snapshot(&self) -> crate::reference::webui::WorkerSnapshot {
        let mut connections = std::collections::BTreeMap::new();
        let mut traffic = self.closed_traffic.clone();
        for c in self.conns.values() {
            *connections.entry(c.role.name()).or_insert(0) += 1;
            crate::reference::driver::add_counters(&mut traffic, &c.peer.handle.counters());
        }
        crate::reference::webui::WorkerSnapshot {
            state: self.state_response(),
            connections,
            traffic,
        }
    }

    fn state_response(&self) -> WorkerStateResponse {
        WorkerStateResponse {
            host: self.addr.host.clone(),
            port: self.addr.port,
            worker_id: self.id.clone(),
            executors: self.executors.values().map(|e| e.desc.clone()).collect(),
            finished_executors: self.finished_executors.clone(),
            drivers: self.drivers.values().map(|d| d.info.clone()).collect(),
            finished_drivers: self.finished_drivers.clone(),
            master_url: self.active_master_url.clone(),
            cores: self.config.cores,
            memory: self.config.memory,
            cores_used: self.cores_used,
            memory_used: self.memory_used,
            master_web_ui_url: self.master_web_ui_url.clone(),
            resources: self.config.resources.clone(),
            resources_used: Resources::new(),
        }
    }

    fn closed(&mut self, conn: ConnId) {
        if let Some(rec) = self.conns.remove(&conn) {
            crate::reference::driver::add_counters(
                &mut self.closed_traffic,
                &rec.peer.handle.counters(),
            );
        }
        if self.master == Some(conn) {
            self.master = None;
            if self.registered {
                tracing::error!("Connection to master failed! Waiting for master to reconnect...");
                self.registered = false;
                self.attempts = 0;
                self.register_with_all_masters();
            }
        }
    }

    fn launch_executor(&mut self, l: LaunchExecutor) {
        if l.master_url != self.active_master_url {
            tracing::warn!(
                "Invalid Master ({}) attempted to launch executor.",
                l.master_url
            );
            return;
        }
        if self.decommissioned {
            tracing::warn!(
                "Asked to launch an executor while decommissioned. Not launching executor."
            );
            return;
        }
        let key = (l.app_id.clone(), l.exec_id);
        if self.executors.contains_key(&key) {
            tracing::warn!(
                "Asked to launch executor {}/{} twice; ignored",
                l.app_id,
                l.exec_id
            );
            return;
        }
        tracing::info!(
            "Asked to launch executor {}/{} for {}",
            l.app_id,
            l.exec_id,
            l.app_desc.name
        );
        let vars = [
            ("EXECUTOR_ID", l.exec_id.to_string()),
            ("HOSTNAME", self.addr.host.clone()),
            ("CORES", l.cores.to_string()),
            ("APP_ID", l.app_id.clone()),
            ("WORKER_URL", self.worker_url.clone()),
            ("RESOURCE_PROFILE_ID", l.rp_id.to_string()),
        ];
        let started = self.run_command(
            LaunchKind::Executor,
            RunKey::Executor(l.app_id.clone(), l.exec_id),
            &l.app_desc.command,
            &vars,
            &[&l.app_id, &l.exec_id.to_string()],
            false,
        );
        let desc = ExecutorDescription {
            app_id: l.app_id.clone(),
            exec_id: l.exec_id,
            rp_id: l.rp_id,
            cores: l.cores,
            memory_mb: l.memory,
            state: ExecutorState::Running,
        };
        match started {
            Ok(running) => {
                self.cores_used = self.cores_used.saturating_add(l.cores);
                self.memory_used = self.memory_used.saturating_add(l.memory);
                self.executors.insert(
                    key,
                    ExecRun {
                        desc,
                        resources: l.resources,
                        running: Some(running),
                        killed: false,
                    },
                );
                self.ask_master(ExecutorStateChanged {
                    app_id: l.app_id,
                    exec_id: l.exec_id,
                    state: ExecutorState::Running,
                    message: None,
                    exit_status: None,
                });
            }
            Err(reason) => {
                tracing::error!(
                    "Failed to launch executor {}/{}: {reason}",
                    l.app_id,
                    l.exec_id
                );
                self.finished_executors.push(ExecutorDescription {
                    state: ExecutorState::Failed,
                    ..desc
                });
                self.trim_finished();
                self.ask_master(ExecutorStateChanged {
                    app_id: l.app_id,
                    exec_id: l.exec_id,
                    state: ExecutorState::Failed,
                    message: Some(reason),
                    exit_status: None,
                });
            }
        }
    }

    /// Starts `command` (an executor's or a driver's) with Spark's `{{VAR}}` substitutions, in
    /// the work directory under `dir_parts`, if the launch policy allows it.
    fn run_command(
        &self,
        kind: LaunchKind,
        key: RunKey,
        command: &Command,
        vars: &[(&str, String)],
        dir_parts: &[&str],
        supervise: bool,
    ) -> Result<Running, String> {
        let program = self.policy.program(kind, command)?;
        let mut env = self.policy.environment(&command.environment, vars)?;
        let dir = runner::dir_under(&self.config.work_dir, dir_parts)?;
        // Last, so that no application variable of the same name survives.
        env.extend(super::credentials::launch_credentials(
            &self.config.security,
            self.config.launch_tls_ca.as_deref(),
            &dir,
        )?);
        runner::start(
            Launch {
                key,
                program,
                args: command
                    .arguments
                    .iter()
                    .map(|a| runner::substitute(a, vars))
                    .collect(),
                env,
                dir,
                supervise,
            },
            self.events.clone(),
        )
    }

    fn launch_driver(&mut self, l: LaunchDriver) {
        if self.drivers.contains_key(&l.driver_id) {
            tracing::warn!("Asked to launch driver {} twice; ignored", l.driver_id);
            return;
        }
        tracing::info!("Asked to launch driver {}", l.driver_id);
        let vars = [
            ("WORKER_URL", self.worker_url.clone()),
            ("USER_JAR", l.driver_desc.jar_url.clone()),
            ("HOSTNAME", self.addr.host.clone()),
        ];
        let started = self.run_command(
            LaunchKind::Driver,
            RunKey::Driver(l.driver_id.clone()),
            &l.driver_desc.command,
            &vars,
            &[&l.driver_id],
            l.driver_desc.supervise,
        );
        let info = DriverRunnerInfo {
            driver_id: l.driver_id.clone(),
            cores: l.driver_desc.cores,
            memory: l.driver_desc.mem,
            state: DriverState::Running,
        };
        match started {
            Ok(running) => {
                self.cores_used = self.cores_used.saturating_add(info.cores);
                self.memory_used = self.memory_used.saturating_add(info.memory);
                self.drivers.insert(
                    l.driver_id,
                    DriverRun {
                        info,
                        running: Some(running),
                    },
                );
            }
            Err(reason) => {
                tracing::error!("Failed to launch driver {}: {reason}", l.driver_id);
                self.finished_drivers.push(DriverRunnerInfo {
                    state: DriverState::Error,
                    ..info
                });
                self.trim_finished();
                self.to_master(DriverStateChanged {
                    driver_id: l.driver_id,
                    state: DriverState::Error,
                    exception: Some(ErrorDescription::new("java.io.IOException", reason)),
                });
            }
        }
    }

    fn trim_finished(&mut self) {
        if self.finished_executors.len() > RETAINED_FINISHED {
            let n = self.finished_executors.len() - RETAINED_FINISHED;
            self.finished_executors.drain(..n);
        }
        if self.finished_drivers.len() > RETAINED_FINISHED {
            let n = self.finished_drivers.len() - RETAINED_FINISHED;
            self.finished_drivers.drain(..n);
        }
    }

    fn process_ended(&mut self, key: RunKey, ended: Ended) {
        match key {
            RunKey::Executor(app_id, exec_id) => {
                let Some(mut run) = self.executors.remove(&(app_id.clone(), exec_id)) else {
                    return;
                };
                self.cores_used = self.cores_used.saturating_sub(run.desc.cores);
                self.memory_used = self.memory_used.saturating_sub(run.desc.memory_mb);
                let (state, message, exit_status) = match ended {
                    Ended::Exited { code, killed } if killed || run.killed => {
                        (ExecutorState::Killed, None, Some(code))
                    }
                    Ended::Exited { code, .. } => (
                        ExecutorState::Exited,
                        Some(format!("Command exited with code {code}")),
                        Some(code),
                    ),
                    Ended::Failed(reason) => (ExecutorState::Failed, Some(reason), None),
                };
                tracing::info!("Executor {app_id}/{exec_id} finished with state {state}");
                run.desc.state = state;
                self.finished_executors.push(run.desc);
                self.trim_finished();
                self.ask_master(ExecutorStateChanged {
                    app_id,
                    exec_id,
                    state,
                    message,
                    exit_status,
                });
            }
            RunKey::Driver(driver_id) => {
                let Some(mut run) = self.drivers.remove(&driver_id) else {
                    return;
                };
                self.cores_used = self.cores_used.saturating_sub(run.info.cores);
                self.memory_used = self.memory_used.saturating_sub(run.info.memory);
                let (state, exception) = match ended {
                    Ended::Exited { killed: true, .. } => (DriverState::Killed, None),
                    Ended::Exited { code: 0, .. } => (DriverState::Finished, None),
                    Ended::Exited { .. } => (DriverState::Failed, None),
                    Ended::Failed(reason) => (
                        DriverState::Error,
                        Some(ErrorDescription::new("java.io.IOException", reason)),
                    ),
                };
                tracing::info!("Driver {driver_id} ended with state {state}");
                run.info.state = state;
                self.finished_drivers.push(run.info);
                self.trim_finished();
                self.to_master(DriverStateChanged {
                    driver_id,
                    state,
                    exception,
                });
            }
        }
    }
}

/// An endpoint's address for a log line: `host:port`, or its name when it has none.
fn addr_text(e: &EndpointRef) -> String {
    match &e.address {
        Some(a) => a.to_string(),
        None => e.name.clone(),
    }
}
