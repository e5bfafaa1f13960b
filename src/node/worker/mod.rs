//! The worker's core, without IO (Spark's `Worker` endpoint): registration with its masters
//! (with retries), heartbeats, master changes, and the executors and drivers it runs.
//!
//! A [`Core`] fed [`Input`]s with the time, it queues
//! [`Output`](crate::node::Output)s that its runtime drains in one place: messages addressed by
//! connection id, and its [`Effect`]s: masters to dial, processes to start (the launch
//! [`policy`] already applied: program, arguments, minimal environment, directory, the secret
//! file to write) and to kill. It names the next time it must be woken and why it stopped
//! ([`WorkerCore::exit`]).
//!
//! Where it is with its masters is one enum (registering, with the attempts made; registered
//! over one connection; stopped); what it runs, from the launch asked for to the process's end,
//! is a sub-state with private fields (`runs`, `Runs`).

mod io;
pub mod policy;
mod runs;
pub mod spark;
#[cfg(test)]
mod tests;

pub use io::{
    Config, Effect, Ended, Input, Launch, Purpose, RunKey, WorkerExit,
    INITIAL_REGISTRATION_RETRIES, REGISTRATION_RETRIES, SECRET_FILE_ENV, SECRET_FILE_NAME,
    TLS_CA_ENV,
};

use std::collections::{BTreeMap, VecDeque};
use std::path::Path;
use std::time::{Duration, Instant};

use crate::definition::{Definition, MessageKind};
use crate::messages::deploy::{
    DriverStateChanged, ExecutorStateChanged, Heartbeat, LaunchDriver, LaunchExecutor,
    RegisterWorker, WorkerLatestState, WorkerSchedulerStateResponse, WorkerStateResponse,
};
use crate::messages::{
    Addr, Command, DeployMessage, DriverRunnerInfo, DriverState, EndpointRef, ErrorDescription,
    ExecutorDescription, ExecutorState, Family, Resources, Version,
};
use crate::node::authz::{self, Refusal};
use crate::node::{ConnId, ConnInput, ConnOutput, Core, PeerInfo};
use crate::wire::handshake::Role;
use crate::wire::Reply;
use policy::{dir_under, substitute, LaunchKind, Policy};
use runs::{End, ExecRun, Runs, Starting};

/// What the worker core hands out.
pub type Output = crate::node::Output<DeployMessage, Effect>;

struct ConnRec {
    role: Role,
    purpose: Purpose,
    /// The protocol version its handshake agreed on.
    version: Version,
    /// The peer's address and the id of its hello, for logs.
    addr: String,
    peer_id: String,
    /// The worker closes it (it refused a one-way message on it, or no longer needs it):
    /// nothing more is taken from it.
    closing: bool,
    /// A master spoke on it as the worker's master (RegisteredWorker or MasterChanged).
    identified: bool,
}

/// Where the worker is with its masters (Spark's `registered`, `connectionAttemptCount` and
/// `registrationRetryTimer`, as one state).
#[derive(Debug, Clone, PartialEq, Eq)]
enum Registration {
    /// Registering with every master: `attempts` rounds made so far, the next due at
    /// `next_retry`; `master` is the connection of the master it was registered with, which it
    /// still reports to until another answers (after a ReconnectWorker).
    Registering {
        attempts: u32,
        next_retry: Option<Instant>,
        master: Option<ConnId>,
    },
    /// Registered with the master on connection `master`.
    Registered { master: ConnId },
    /// Stopped by itself, for good.
    Stopped(WorkerExit),
}

/// The worker's identity, fixed by its runtime.
#[derive(Debug, Clone)]
pub struct Identity {
    /// `worker-yyyyMMddHHmmss-host-port`.
    pub id: String,
    /// The address it listens on and advertises.
    pub addr: Addr,
    /// Its web UI's URL (empty: none).
    pub web_ui_url: String,
    /// Seed of the registration retries' jitter.
    pub seed: u64,
}

/// The worker's state. See the module documentation.
pub struct WorkerCore {
    id: String,
    config: Config,
    addr: Addr,
    self_ref: EndpointRef,
    worker_url: String,
    web_ui_url: String,
    policy: Policy,
    conns: BTreeMap<ConnId, ConnRec>,
    /// Where it is with its masters.
    registration: Registration,
    active_master_url: String,
    master_web_ui_url: String,
    next_beat: Instant,
    beat_every: Duration,
    decommissioned: bool,
    /// Its executors and drivers.
    runs: Runs,
    seed: u64,
    /// The id of the next ask the worker makes (its answers are only logged).
    next_ask: u64,
    now: Instant,
    out: VecDeque<Output>,
    /// A bug planted on purpose (tests only; [`crate::node::plant`]).
    plant: crate::node::plant::Plant,
}

impl WorkerCore {
    /// Plants bug `plant` (tests only; [`crate::node::plant`]).
    #[cfg(feature = "testing")]
    pub fn plant(&mut self, plant: crate::node::plant::Plant) {
        self.plant = plant;
    }

    /// A worker of `config` with `policy`, at `now`; [`start`](Self::start) sets it going.
    pub fn new(config: Config, policy: Policy, me: Identity, now: Instant) -> Self {
        let beat_every = (config.worker_timeout / 4).max(Duration::from_millis(10));
        WorkerCore {
            self_ref: EndpointRef::at(me.addr.clone(), "Worker"),
            worker_url: format!("sparkwire://{}:{}", me.addr.host, me.addr.port),
            web_ui_url: me.web_ui_url,
            addr: me.addr,
            id: me.id,
            policy,
            config,
            conns: BTreeMap::new(),
            registration: Registration::Registering {
                attempts: 0,
                next_retry: None,
                master: None,
            },
            active_master_url: String::new(),
            master_web_ui_url: String::new(),
            next_beat: now + beat_every,
            beat_every,
            decommissioned: false,
            runs: Runs::default(),
            seed: me.seed,
            next_ask: 1,
            now,
            out: VecDeque::new(),
            plant: crate::node::plant::Plant::None,
        }
    }

    /// Starts at `now`: registers with every master at once (Spark's tryRegisterAllMasters);
    /// heartbeats go every quarter of the worker timeout from then.
    pub fn start(&mut self, now: Instant) {
        self.now = now;
        self.next_beat = now + self.beat_every;
        self.register_with_all_masters();
    }

    /// The worker's id.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// Why the worker stops by itself, once it does.
    pub fn exit(&self) -> Option<&WorkerExit> {
        match &self.registration {
            Registration::Stopped(why) => Some(why),
            _ => None,
        }
    }

    /// The connection of the master it reports to: the one it is registered with, or while it
    /// registers again, the one it was registered with (until another answers).
    fn master(&self) -> Option<ConnId> {
        match self.registration {
            Registration::Registered { master } => Some(master),
            Registration::Registering { master, .. } => master,
            Registration::Stopped(_) => None,
        }
    }

    fn is_registered(&self) -> bool {
        matches!(self.registration, Registration::Registered { .. })
    }

    /// When the next registration round is due, if one is.
    fn next_retry(&self) -> Option<Instant> {
        match self.registration {
            Registration::Registering { next_retry, .. } => next_retry,
            _ => None,
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
        let mut stale: Vec<ConnId> = self
            .conns
            .iter()
            .filter(|(id, c)| {
                matches!(c.purpose, Purpose::Registration(_)) && Some(**id) != self.master()
            })
            .map(|(id, _)| *id)
            .collect();
        stale.sort_unstable();
        for conn in stale {
            self.close(conn);
        }
        for m in self.config.masters.clone() {
            tracing::info!("Connecting to master {m}...");
            self.out.push_back(Output::Effect(Effect::Dial(m)));
        }
        self.schedule_retry();
    }

    fn schedule_retry(&mut self) {
        let Registration::Registering { attempts, .. } = self.registration else {
            return;
        };
        let base = if attempts < INITIAL_REGISTRATION_RETRIES {
            self.config.register_retry
        } else {
            self.config.register_retry.saturating_mul(6)
        };
        let wait = self.fuzzed(base);
        let at = self.now.checked_add(wait);
        if let Registration::Registering { next_retry, .. } = &mut self.registration {
            *next_retry = at;
        }
    }

    /// A master could not be reached: says so at WARN, with when the next attempt comes.
    fn dial_failed(&self, reason: &str) {
        let Registration::Registering {
            attempts,
            next_retry,
            ..
        } = self.registration
        else {
            return;
        };
        let next = next_retry.map(|at| at.saturating_duration_since(self.now).as_secs_f64());
        let left = REGISTRATION_RETRIES.saturating_sub(attempts + 1);
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
        let Registration::Registering {
            attempts,
            next_retry,
            ..
        } = &mut self.registration
        else {
            return;
        };
        *next_retry = None;
        *attempts += 1;
        let attempt = *attempts;
        if attempt >= REGISTRATION_RETRIES {
            tracing::error!("All masters are unresponsive! Giving up.");
            self.registration = Registration::Stopped(WorkerExit::GaveUp);
            return;
        }
        tracing::info!("Retrying connection to master (attempt # {attempt})");
        self.register_with_all_masters();
    }

    fn send_register(&mut self, conn: ConnId, master_address: Addr) {
        let message = RegisterWorker {
            id: self.id.clone(),
            host: self.addr.host.clone(),
            port: self.addr.port,
            worker: self.self_ref.clone(),
            cores: self.config.cores,
            memory: self.config.memory,
            worker_web_ui_url: self.web_ui_url.clone(),
            master_address,
            resources: self.config.resources.clone(),
            spark_release: self.policy.spark_release(),
        };
        self.out.push_back(Output::Conn(ConnOutput::Send {
            conn,
            message: message.into(),
        }));
        if self.plant == crate::node::plant::Plant::HeartbeatsUnregistered {
            let beat = Heartbeat {
                worker_id: self.id.clone(),
                worker: self.self_ref.clone(),
            };
            self.out.push_back(Output::Conn(ConnOutput::Send {
                conn,
                message: beat.into(),
            }));
        }
    }

    fn send_heartbeat(&mut self) {
        if !self.is_registered() {
            return;
        }
        let beat = Heartbeat {
            worker_id: self.id.clone(),
            worker: self.self_ref.clone(),
        };
        self.send_to_master(beat);
    }

    fn send_to_master(&mut self, m: impl Into<DeployMessage>) {
        if let Some(conn) = self.master().filter(|c| self.conns.contains_key(c)) {
            self.out.push_back(Output::Conn(ConnOutput::Send {
                conn,
                message: m.into(),
            }));
        }
    }

    /// Asks the master `m`, whose answer is only logged; sent one-way on a connection whose
    /// version has `m` as a send (ExecutorStateChanged in version 1).
    fn ask_master(&mut self, m: impl Into<DeployMessage>) {
        let Some((conn, c)) = self.master().and_then(|c| Some((c, self.conns.get(&c)?))) else {
            return;
        };
        let message = m.into();
        let one_way = Definition::builtin()
            .message(DeployMessage::FAMILY, message.name())
            .is_some_and(|d| d.kind_in(c.version) == MessageKind::Send);
        let out = if one_way {
            ConnOutput::Send { conn, message }
        } else {
            let id = self.next_ask;
            self.next_ask += 1;
            ConnOutput::Ask { conn, id, message }
        };
        self.out.push_back(Output::Conn(out));
    }

    /// Closes `conn` (an ordinary close, no reason): nothing more is taken from it.
    fn close(&mut self, conn: ConnId) {
        if let Some(c) = self.conns.get_mut(&conn) {
            if !c.closing {
                c.closing = true;
                self.out
                    .push_back(Output::Conn(ConnOutput::Close { conn, reason: None }));
            }
        }
    }

    /// Takes `conn` as the connection to the active master (Spark's changeMaster), closing the
    /// other connections to masters: those made to register, and those a master opened and told
    /// the worker over which master it is. A connection a master opened and has not spoken on
    /// yet stays: a master taking over dials the worker to send MasterChanged, and the worker may
    /// hear its answer to a registration first, over the connection it dialled.
    fn change_master(&mut self, conn: ConnId, master: &EndpointRef, web_ui: &str) {
        if let Some(c) = self.conns.get_mut(&conn) {
            c.identified = true;
        }
        self.registration = Registration::Registered { master: conn };
        self.active_master_url = match &master.address {
            Some(a) => format!("sparkwire://{}:{}", a.host, a.port),
            None => String::new(),
        };
        self.master_web_ui_url = web_ui.to_string();
        let mut others: Vec<ConnId> = self
            .conns
            .iter()
            .filter(|(id, c)| {
                let to_master = matches!(c.purpose, Purpose::Registration(_))
                    || (c.role == Role::Master && c.identified);
                **id != conn && to_master
            })
            .map(|(id, _)| *id)
            .collect();
        others.sort_unstable();
        for other in others {
            self.close(other);
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
        let active = self.registration == Registration::Registered { master: conn };
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
    /// The peer of connection `conn` as a log line names it: its address, its role, the id of its
    /// hello.
    pub fn peer_of(&self, conn: ConnId) -> Option<(String, Role, String)> {
        let c = self.conns.get(&conn)?;
        Some((c.addr.clone(), c.role, c.peer_id.clone()))
    }

    fn refuse(&mut self, conn: ConnId, ask: Option<u64>, refusal: &Refusal) {
        let Some(c) = self.conns.get_mut(&conn) else {
            return;
        };
        let peer = crate::node::violations::Peer {
            addr: &c.addr,
            role: c.role,
            id: &c.peer_id,
            conn,
        };
        crate::node::violations::warn(peer, "refused", refusal.kind(), refusal);
        match ask {
            Some(id) => self.out.push_back(Output::Conn(ConnOutput::Fail {
                conn,
                id,
                error: refusal.failure(),
            })),
            None => {
                c.closing = true;
                self.out.push_back(Output::Conn(ConnOutput::Close {
                    conn,
                    reason: Some(refusal.close_reason()),
                }));
            }
        }
    }

    fn on_message(&mut self, conn: ConnId, m: DeployMessage) {
        use DeployMessage as M;
        if self.conns.get(&conn).is_none_or(|c| c.closing) {
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
                let latest = WorkerLatestState {
                    id: self.id.clone(),
                    executors: self.runs.executors(),
                    driver_ids: self.runs.driver_ids(),
                };
                self.send_to_master(latest);
            }
            M::RegisterWorkerFailed(f) => {
                if let Registration::Registering { .. } = self.registration {
                    tracing::error!("Worker registration failed: {}", f.message);
                    self.registration =
                        Registration::Stopped(WorkerExit::RegistrationFailed(f.message));
                }
            }
            M::MasterInStandby(_) => {
                if Some(conn) != self.master() {
                    self.close(conn);
                }
            }
            M::ReconnectWorker(r) => {
                tracing::info!(
                    "Master with url {} requested this worker to reconnect.",
                    r.master_url
                );
                if let Registration::Registered { master } = self.registration {
                    self.registration = Registration::Registering {
                        attempts: 0,
                        next_retry: None,
                        master: Some(master),
                    };
                }
                if let Some(c) = self.conns.get(&conn) {
                    let addr = match &c.purpose {
                        Purpose::Registration(a) => Some(a.clone()),
                        Purpose::Inbound => None,
                    };
                    let master_address = addr.unwrap_or_else(|| {
                        crate::node::url::MasterUrl::parse(&r.master_url)
                            .ok()
                            .and_then(|u| u.masters.into_iter().next())
                            .unwrap_or_else(|| Addr::new("", 0))
                    });
                    self.send_register(conn, master_address);
                }
                self.schedule_retry();
            }
            M::MasterChanged(c) => {
                tracing::info!(
                    "Master has changed, new master is at {}",
                    addr_text(&c.master)
                );
                self.change_master(conn, &c.master, &c.master_web_ui_url);
                let (exec_responses, driver_responses) = self.runs.scheduler_state();
                let response = WorkerSchedulerStateResponse {
                    id: self.id.clone(),
                    exec_responses,
                    driver_responses,
                };
                self.send_to_master(response);
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
                if self.runs.kill_executor(&k.app_id, k.exec_id) {
                    tracing::info!("Asked to kill executor {}/{}", k.app_id, k.exec_id);
                    let key = RunKey::Executor(k.app_id, k.exec_id);
                    self.out.push_back(Output::Effect(Effect::Kill(key)));
                } else {
                    tracing::info!("Asked to kill unknown executor {}/{}", k.app_id, k.exec_id)
                }
            }
            M::LaunchDriver(l) => self.launch_driver(l),
            M::KillDriver(k) => {
                if self.runs.runs_driver(&k.driver_id) {
                    tracing::info!("Asked to kill driver {}", k.driver_id);
                    self.out
                        .push_back(Output::Effect(Effect::Kill(RunKey::Driver(k.driver_id))));
                } else {
                    tracing::info!("Asked to kill unknown driver {}", k.driver_id);
                }
            }
            M::ApplicationFinished(a) => {
                tracing::info!("Application {} finished", a.id);
            }
            // As Spark's worker: the master that sent it already counts this worker
            // DECOMMISSIONED, so nothing goes back (SPEC §7.1); only a decommission that starts on
            // the worker's side is told to the master with WorkerDecommissioning.
            M::DecommissionWorker(_) => {
                if !self.decommissioned {
                    tracing::info!("Decommissioning self");
                    self.decommissioned = true;
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
        if self.conns.get(&conn).is_none_or(|c| c.closing) {
            return;
        }
        if let Err(refusal) = self.authorize(conn, &m, true) {
            self.refuse(conn, Some(id), &refusal);
            return;
        }
        let out = match m {
            DeployMessage::RequestWorkerState(_) => ConnOutput::Reply {
                conn,
                id,
                reply: Reply::Message(self.state_response().into()),
            },
            other => ConnOutput::Fail {
                conn,
                id,
                error: ErrorDescription::new(
                    "org.apache.spark.SparkException",
                    format!("Unsupported message {} for a worker", other.name()),
                ),
            },
        };
        self.out.push_back(Output::Conn(out));
    }

    /// Open connections by the peer's role name, for the web UI.
    pub fn connection_roles(&self) -> BTreeMap<&'static str, u64> {
        let mut roles = BTreeMap::new();
        for c in self.conns.values() {
            *roles.entry(c.role.name()).or_insert(0) += 1;
        }
        roles
    }

    /// What RequestWorkerState answers (and the web UI shows).
    pub fn state_response(&self) -> WorkerStateResponse {
        let (drivers, finished_drivers) = self.runs.drivers();
        let (cores_used, memory_used) = self.runs.used();
        WorkerStateResponse {
            host: self.addr.host.clone(),
            port: self.addr.port,
            worker_id: self.id.clone(),
            executors: self.runs.executors(),
            finished_executors: self.runs.finished_executors(),
            drivers,
            finished_drivers,
            master_url: self.active_master_url.clone(),
            cores: self.config.cores,
            memory: self.config.memory,
            cores_used,
            memory_used,
            master_web_ui_url: self.master_web_ui_url.clone(),
            resources: self.config.resources.clone(),
            resources_used: Resources::new(),
        }
    }

    fn closed(&mut self, conn: ConnId) {
        self.conns.remove(&conn);
        match &mut self.registration {
            Registration::Registered { master } if *master == conn => {
                tracing::error!("Connection to master failed! Waiting for master to reconnect...");
                self.registration = Registration::Registering {
                    attempts: 0,
                    next_retry: None,
                    master: None,
                };
                if self.plant != crate::node::plant::Plant::WorkerGivesUp {
                    self.register_with_all_masters();
                }
            }
            Registration::Registering { master, .. } if *master == Some(conn) => *master = None,
            _ => {}
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
        let key = RunKey::Executor(l.app_id.clone(), l.exec_id);
        if self.runs.has(&key) {
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
        // A master that took this worker for empty (it registered again after its connection
        // reset, with executors of the old registration still running, and the master launched
        // before its WorkerLatestState came) may ask for more than the worker has: the launch
        // fails, and the master learns so (found by the simulator, `node::sim::search`).
        let (cores_used, memory_used) = self.runs.used();
        let no_room = (cores_used.saturating_add(l.cores) > self.config.cores
            || memory_used.saturating_add(l.memory) > self.config.memory)
            .then(|| {
                format!(
                    "the worker has {} cores and {} MiB free; the executor asks {} and {}",
                    self.config.cores - cores_used,
                    self.config.memory - memory_used,
                    l.cores,
                    l.memory
                )
            });
        let launch = match self
            .policy
            .spark_for(LaunchKind::Executor, &l.app_desc.command)
        {
            _ if no_room.is_some() => Err(no_room.unwrap_or_default()),
            Some((spark, url)) => self.spark_launch(spark, url, key.clone(), &l, &vars),
            None => self.launch_of(
                LaunchKind::Executor,
                key.clone(),
                &l.app_desc.command,
                &vars,
                &[&l.app_id, &l.exec_id.to_string()],
                false,
            ),
        };
        let desc = ExecutorDescription {
            app_id: l.app_id.clone(),
            exec_id: l.exec_id,
            rp_id: l.rp_id,
            cores: l.cores,
            memory_mb: l.memory,
            state: ExecutorState::Running,
        };
        let run = ExecRun::new(desc, l.resources);
        self.runs.start(key.clone(), Starting::Executor(run));
        match launch {
            Ok(launch) => self.out.push_back(Output::Effect(Effect::Start(launch))),
            Err(reason) => self.start_failed(key, reason),
        }
    }

    /// What to start for `command` (an executor's or a driver's), with Spark's `{{VAR}}`
    /// substitutions, in the work directory under `dir_parts`, if the launch policy allows it;
    /// otherwise why not.
    fn launch_of(
        &self,
        kind: LaunchKind,
        key: RunKey,
        command: &Command,
        vars: &[(&str, String)],
        dir_parts: &[&str],
        supervise: bool,
    ) -> Result<Launch, String> {
        let program = self.policy.program(kind, command)?;
        let mut env = self.policy.environment(&command.environment, vars)?;
        let dir = dir_under(&self.config.work_dir, dir_parts)?;
        // Last, so that no application variable of the same name survives.
        let write_secret = self.config.hands_secret;
        env.extend(launch_variables(
            write_secret,
            self.config.launch_tls_ca.as_deref(),
            &dir,
        ));
        Ok(Launch {
            key,
            program,
            args: command
                .arguments
                .iter()
                .map(|a| substitute(a, vars))
                .collect(),
            env,
            dir,
            write_secret,
            spark_secret: false,
            supervise,
            stderr_header: None,
        })
    }

    /// A Spark executor for `l`, run from `spark` as Spark's worker runs it
    /// ([`spark::SparkExecutors::command`]), its watcher told `worker_url`.
    fn spark_launch(
        &self,
        spark: &spark::SparkExecutors,
        worker_url: &str,
        key: RunKey,
        l: &LaunchExecutor,
        vars: &[(&str, String)],
    ) -> Result<Launch, String> {
        let vars: Vec<(&str, String)> = vars
            .iter()
            .map(|(name, value)| match *name {
                "WORKER_URL" => (*name, worker_url.to_string()),
                _ => (*name, value.clone()),
            })
            .collect();
        let java = spark.command(&l.app_desc.command, l.memory, &vars)?;
        let stderr_header = Some(java.stderr_header());
        let mut env = self
            .policy
            .environment(&l.app_desc.command.environment, &vars)?;
        let dir = dir_under(&self.config.work_dir, &[&l.app_id, &l.exec_id.to_string()])?;
        env.extend(java.env);
        env.insert(
            "SPARK_EXECUTOR_DIRS".to_string(),
            dir.to_string_lossy().into_owned(),
        );
        Ok(Launch {
            key,
            program: java.program,
            args: java.args,
            env,
            dir,
            write_secret: false,
            spark_secret: self.config.hands_secret,
            supervise: false,
            stderr_header,
        })
    }

    fn launch_driver(&mut self, l: LaunchDriver) {
        let key = RunKey::Driver(l.driver_id.clone());
        if self.runs.has(&key) {
            tracing::warn!("Asked to launch driver {} twice; ignored", l.driver_id);
            return;
        }
        tracing::info!("Asked to launch driver {}", l.driver_id);
        let vars = [
            ("WORKER_URL", self.worker_url.clone()),
            ("USER_JAR", l.driver_desc.jar_url.clone()),
            ("HOSTNAME", self.addr.host.clone()),
        ];
        let launch = self.launch_of(
            LaunchKind::Driver,
            key.clone(),
            &l.driver_desc.command,
            &vars,
            &[&l.driver_id],
            l.driver_desc.supervise,
        );
        let info = DriverRunnerInfo {
            driver_id: l.driver_id,
            cores: l.driver_desc.cores,
            memory: l.driver_desc.mem,
            state: DriverState::Running,
        };
        self.runs.start(key.clone(), Starting::Driver(info));
        match launch {
            Ok(launch) => self.out.push_back(Output::Effect(Effect::Start(launch))),
            Err(reason) => self.start_failed(key, reason),
        }
    }

    fn started(&mut self, key: RunKey) {
        if let Some(Some(desc)) = self.runs.started(&key) {
            self.ask_master(ExecutorStateChanged {
                app_id: desc.app_id,
                exec_id: desc.exec_id,
                state: ExecutorState::Running,
                message: None,
                exit_status: None,
            });
        }
    }

    fn start_failed(&mut self, key: RunKey, reason: String) {
        match self.runs.start_failed(&key) {
            Some(Starting::Executor(run)) => {
                let desc = run.desc;
                tracing::error!(
                    "Failed to launch executor {}/{}: {reason}",
                    desc.app_id,
                    desc.exec_id
                );
                self.ask_master(ExecutorStateChanged {
                    app_id: desc.app_id,
                    exec_id: desc.exec_id,
                    state: ExecutorState::Failed,
                    message: Some(reason),
                    exit_status: None,
                });
            }
            Some(Starting::Driver(info)) => {
                tracing::error!("Failed to launch driver {}: {reason}", info.driver_id);
                self.send_to_master(DriverStateChanged {
                    driver_id: info.driver_id,
                    state: DriverState::Error,
                    exception: Some(ErrorDescription::new("java.io.IOException", reason)),
                });
            }
            None => {}
        }
    }

    fn process_ended(&mut self, key: RunKey, ended: Ended) {
        match (self.runs.ended(&key, ended), key) {
            (
                Some(End::Executor(state, message, exit_status)),
                RunKey::Executor(app_id, exec_id),
            ) => {
                self.ask_master(ExecutorStateChanged {
                    app_id,
                    exec_id,
                    state,
                    message,
                    exit_status,
                });
            }
            (Some(End::Driver(state, exception)), RunKey::Driver(driver_id)) => {
                self.send_to_master(DriverStateChanged {
                    driver_id,
                    state,
                    exception,
                });
            }
            _ => {}
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

impl Core for WorkerCore {
    type Message = DeployMessage;
    type Input = Input;
    type Effect = Effect;

    /// The next output, oldest first.
    fn poll(&mut self) -> Option<Output> {
        self.out.pop_front()
    }

    /// When [`handle_timeout`](Self::handle_timeout) must be called next: the next heartbeat
    /// or registration attempt.
    fn poll_timeout(&self) -> Option<Instant> {
        Some(match self.next_retry() {
            Some(retry) => retry.min(self.next_beat),
            None => self.next_beat,
        })
    }

    /// Timers: a heartbeat to the master when one is due, a registration attempt when one is.
    fn handle_timeout(&mut self, now: Instant) {
        self.now = now;
        if now >= self.next_beat {
            self.next_beat = now + self.beat_every;
            self.send_heartbeat();
        }
        if self.next_retry().is_some_and(|at| now >= at) {
            self.retry_registration();
        }
    }

    /// Handles one input.
    fn handle(&mut self, now: Instant, input: Input) {
        self.now = now;
        match input {
            Input::Conn(ConnInput::Opened {
                conn,
                peer,
                origin: purpose,
            }) => {
                let PeerInfo {
                    role,
                    version,
                    addr,
                    id: peer_id,
                    ..
                } = peer;
                let master_addr = match &purpose {
                    Purpose::Registration(a) => Some(a.clone()),
                    Purpose::Inbound => None,
                };
                self.conns.insert(
                    conn,
                    ConnRec {
                        role,
                        purpose,
                        version,
                        addr,
                        peer_id,
                        closing: false,
                        identified: false,
                    },
                );
                if let Some(a) = master_addr {
                    if self.is_registered() {
                        self.close(conn);
                    } else {
                        self.send_register(conn, a);
                    }
                }
            }
            Input::Conn(ConnInput::Message { conn, message }) => self.on_message(conn, message),
            Input::Conn(ConnInput::Ask { conn, id, message }) => self.on_ask(conn, id, message),
            Input::Conn(ConnInput::Closed { conn, .. }) => self.closed(conn),
            Input::Conn(ConnInput::DialFailed { error, .. }) => self.dial_failed(&error),
            // The worker's asks want no answer.
            Input::Conn(ConnInput::Answer { answer, .. }) => {
                if let Err(e) = answer {
                    tracing::debug!(error = %e, "ask not answered");
                }
            }
            Input::Started { key } => self.started(key),
            Input::StartFailed { key, reason } => self.start_failed(key, reason),
            Input::Ended { key, ended } => self.process_ended(key, ended),
        }
    }
}

/// The variables to add to the environment of a process about to run in `dir`:
/// [`SECRET_FILE_ENV`] when the worker hands it a secret (`with_secret`; the runtime writes the
/// file), [`TLS_CA_ENV`] when it has `tls_ca`. Nothing when it has neither.
pub(crate) fn launch_variables(
    with_secret: bool,
    tls_ca: Option<&Path>,
    dir: &Path,
) -> Vec<(String, String)> {
    let mut vars = Vec::new();
    if with_secret {
        vars.push((
            SECRET_FILE_ENV.to_string(),
            dir.join(SECRET_FILE_NAME).to_string_lossy().into_owned(),
        ));
    }
    if let Some(ca) = tls_ca {
        vars.push((TLS_CA_ENV.to_string(), ca.to_string_lossy().into_owned()));
    }
    vars
}
