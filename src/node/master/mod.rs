//! The master's core: Spark's standalone Master endpoint as a state machine, a
//! [`Core`] fed [`Input`]s with the time, handing out
//! [`Output`](crate::node::Output)s (writes on its connections, and its [`Effect`]s) in one queue,
//! in the style of quinn-proto.
//!
//! [`MasterCore`] owns no socket, file, clock, task or channel. Whoever drives it (the async
//! runtime of `reference::master`, or the in-memory `sim::Cluster`)
//! tells it what happened and when ([`MasterCore::handle`],
//! [`MasterCore::handle_timeout`] at [`MasterCore::poll_timeout`]), then drains
//! [`MasterCore::poll`] and does what it says: send, answer or fail asks, close connections, dial
//! recovered peers, persist records. Connections are named by the driver's [`ConnId`]s.
//!
//! The state is split by what it is about, as h2's `proto/streams`: each sub-state is a type in
//! its own file with private fields and the behaviour over them, taking its siblings as
//! parameters where it needs them, and `MasterCore` delegates:
//! - `workers` (`Workers`): registration, heartbeats and timeouts, loss, decommissioning, and
//!   which connection each worker is bound to;
//! - `apps` (`Apps`): applications, their executors and the scheduling round (the allocation
//!   itself is [`schedule`] and [`round`]), and which connection each is bound to;
//! - `drivers` (`Drivers`): drivers submitted in cluster deploy mode, their placement on
//!   workers, and which connection submitted each;
//! - `conns` (`Conns`): the open connections and whether each still takes messages;
//! - `recovery` (`Ha`): leadership and the RECOVERING → ALIVE path, and what is persisted;
//! - `owner` and `admin`: which connection may act on which id, and who may change state;
//! - `ui`: the state answer and the web UI's snapshot.
//!
//! ```
//! use std::time::{Duration, Instant};
//! use sparkwire::messages::deploy::{RegisterWorker, RegisteredWorker};
//! use sparkwire::messages::{Addr, DeployMessage, EndpointRef, Resources};
//! use sparkwire::node::master::{Config, Effect, Input, MasterCore, Stored};
//! use sparkwire::messages::Version;
//! use sparkwire::node::{ConnInput, ConnOutput, Core, Output, PeerInfo};
//! use sparkwire::wire::handshake::Role;
//!
//! let start = Instant::now(); // the driver's clock, not the core's
//! let mut core = MasterCore::new(Config::default(), Addr::new("127.0.0.1", 7077), start, 0);
//! core.handle(start, Input::Elected { stored: Stored::default() });
//! let peer = PeerInfo {
//!     role: Role::Worker,
//!     id: "worker-1".into(),
//!     addr: "127.0.0.1:40000".into(),
//!     version: Version::V2,
//!     admin: false,
//!     max_frame_size: 1 << 20,
//! };
//! core.handle(start, ConnInput::Opened { conn: 1, peer, origin: None }.into());
//! let worker = Addr::new("127.0.0.1", 40000);
//! core.handle(start, Input::Conn(ConnInput::Message {
//!     conn: 1,
//!     message: RegisterWorker::new(
//!         "worker-1".into(),
//!         "127.0.0.1".into(),
//!         40000,
//!         EndpointRef::at(worker, "Worker"),
//!         4,
//!         1024,
//!         String::new(),
//!         Addr::new("127.0.0.1", 7077),
//!         Resources::new(),
//!     )
//!     .into(),
//! }));
//! // The runtime stops cutting the worker off for silence, then the worker hears it registered.
//! assert_eq!(core.poll(), Some(Output::Effect(Effect::Registered { conn: 1 })));
//! assert!(matches!(
//!     core.poll(),
//!     Some(Output::Conn(ConnOutput::Send { conn: 1, message: DeployMessage::RegisteredWorker(RegisteredWorker { duplicate: false, .. }) }))
//! ));
//! // No heartbeat: after the worker timeout the worker is DEAD.
//! let later = start + Duration::from_secs(75);
//! assert!(core.poll_timeout().is_some_and(|t| t <= later));
//! core.handle_timeout(later);
//! assert_eq!(core.master_state().workers[0].state, sparkwire::messages::WorkerState::Dead);
//! ```

mod admin;
mod apps;
mod conns;
mod drivers;
mod io;
mod owner;
mod recovery;
pub mod round;
pub mod schedule;
mod state;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_waiting;
mod ui;
pub mod waiting;
mod workers;

pub use io::{
    DialTarget, Effect, Input, Record, RecordKind, SparkPeerRecord, Stored, StoredApp,
    StoredDriver, StoredWorker,
};
pub use ui::{ExecutorRow, MasterStatus};

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use crate::messages::{Addr, DeployMessage, EndpointRef, ErrorDescription, Family, RecoveryState};
use crate::node::redact::Redactor;
use crate::node::{ConnId, ConnInput, ConnOutput, Core};
use crate::wire::handshake::Role;
use crate::wire::Reply;

/// What the master core hands out.
pub type Output = crate::node::Output<DeployMessage, Effect>;

/// The master's protocol rules; [`Default`] gives Spark's defaults. Where it listens, its
/// limits, security, recovery storage and web UI are its runtime's (`reference::master`).
#[derive(Debug, Clone)]
pub struct Config {
    /// Spread each application's executors over as many workers as possible
    /// (`spark.deploy.spreadOut`, default true), or fill workers one by one.
    pub spread_out: bool,
    /// A worker silent this long is DEAD (`spark.worker.timeout`, default 60 s). Also the time
    /// a recovering master waits for workers and applications to answer.
    pub worker_timeout: Duration,
    /// Abnormal executor ends with no executor running before an application is removed
    /// (`spark.deploy.maxExecutorRetries`, default 10; negative disables).
    pub max_executor_retries: i32,
    /// Completed applications kept for the state page (`spark.deploy.retainedApplications`).
    pub retained_applications: usize,
    /// Completed drivers kept for the state page (`spark.deploy.retainedDrivers`).
    pub retained_drivers: usize,
    /// Hides secrets in the state answer (Spark's `spark.redaction.regex`).
    pub redaction: Redactor,
    /// Records are persisted ([`Effect::Persist`]) for a recovery after a failover: the master
    /// has a recovery store, and waits for an [`Input::Elected`]. Default false.
    pub persistent: bool,
    /// How long a recovering master waits for the recovered workers and applications to answer
    /// before it drops the silent ones and is ALIVE (`spark.deploy.recoveryTimeout`); `None`:
    /// the worker timeout, as in Spark.
    pub recovery_timeout: Option<Duration>,
    /// Only peers that proved the admin secret may change the master's state from a UI
    /// (protocol/SPEC.md, "Authentication and permissions"). Default false.
    pub admins_only: bool,
    /// Whether an executor of an application of one Spark release may run on a worker of
    /// another (both named as `RegisterWorker.sparkRelease` and
    /// `RegisterApplication.sparkRelease` name them; SPEC §15.5). Default [`same_release`]; the
    /// master's runtime with Spark's wire gives `sparkwire::spark::releases_compatible` (the same
    /// class table).
    pub release_compatible: fn(&str, &str) -> bool,
    /// How long an executor must have been RUNNING, after another of its application's ended
    /// abnormally, before the application no longer waits with `executors launched but ending`
    /// (SPEC §16): a worker says RUNNING when it starts the process, and the master hears
    /// nothing of whether the executor reached its driver. Default 60 s.
    pub steady_executor: Duration,
}

/// Two Spark releases are compatible when they are the same release: the rule of a master that
/// has no class tables ([`Config::release_compatible`]'s default). A label naming several
/// releases (`4.0.4|4.3.0`, the releases a peer may speak, SPEC §15.5) is compatible with one
/// that names any of them.
pub fn same_release(a: &str, b: &str) -> bool {
    a == b
        || a.split('|')
            .any(|x| !x.is_empty() && b.split('|').any(|y| x == y))
}

impl Default for Config {
    fn default() -> Self {
        Config {
            spread_out: true,
            worker_timeout: Duration::from_secs(60),
            max_executor_retries: 10,
            retained_applications: 200,
            retained_drivers: 200,
            redaction: Redactor::default(),
            persistent: false,
            recovery_timeout: None,
            admins_only: false,
            release_compatible: same_release,
            steady_executor: Duration::from_secs(60),
        }
    }
}

use apps::Apps;
use conns::Conns;
use drivers::Drivers;
use recovery::Ha;
use workers::Workers;

/// The time of the input being handled: the driver's monotonic clock, and the wall clock derived
/// from it (for the times Spark shows and puts in ids).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Clock {
    pub(crate) now: Instant,
    pub(crate) wall_ms: i64,
    start: Instant,
    start_wall_ms: i64,
}

impl Clock {
    fn set(&mut self, now: Instant) {
        // Time never runs backwards for the core, whatever it is fed.
        if now > self.now {
            self.now = now;
        }
        let since = self.now.saturating_duration_since(self.start).as_millis();
        self.wall_ms = self
            .start_wall_ms
            .saturating_add(i64::try_from(since).unwrap_or(i64::MAX));
    }
}

/// The queue of what the core decided, drained by [`MasterCore::poll`].
#[derive(Debug, Default)]
pub(crate) struct Outputs {
    queue: VecDeque<Output>,
}

impl Outputs {
    pub(crate) fn push(&mut self, out: Output) {
        self.queue.push_back(out);
    }

    /// Keeps only the queued outputs `keep` accepts (changing them as it likes).
    pub(crate) fn retain(&mut self, keep: impl FnMut(&mut Output) -> bool) {
        self.queue.retain_mut(keep);
    }
}

/// Spark's standalone Master as a state machine; see the [module docs](self).
#[derive(Debug)]
pub struct MasterCore {
    pub(crate) config: Config,
    pub(crate) addr: Addr,
    pub(crate) self_ref: EndpointRef,
    pub(crate) master_url: String,
    pub(crate) web_ui_url: String,
    pub(crate) workers: Workers,
    pub(crate) apps: Apps,
    pub(crate) drivers: Drivers,
    pub(crate) conns: Conns,
    pub(crate) ha: Ha,
    pub(crate) clock: Clock,
    pub(crate) out: Outputs,
    /// When the next check for silent workers is due.
    next_check: Instant,
    /// Seed of the shuffle of workers for drivers.
    pub(crate) shuffle_seed: u64,
    /// A bug planted on purpose (tests only; [`crate::node::plant`]).
    pub(crate) plant: crate::node::plant::Plant,
}

impl MasterCore {
    /// A master at `addr` (the address it is reached at and advertises), in STANDBY until an
    /// [`Input::Elected`]. `now` is the driver's clock at the start and `wall_ms` the wall
    /// clock then (ms since the epoch); the core reads neither clock itself.
    pub fn new(config: Config, addr: Addr, now: Instant, wall_ms: i64) -> MasterCore {
        let master_url = format!("sparkwire://{}:{}", addr.host, addr.port);
        let web_ui_url = format!("http://{}:8080", addr.host);
        let persistent = config.persistent;
        let mut core = MasterCore {
            self_ref: EndpointRef::at(addr.clone(), "Master"),
            master_url,
            web_ui_url,
            addr,
            workers: Workers::default(),
            apps: Apps::default(),
            drivers: Drivers::default(),
            conns: Conns::default(),
            ha: Ha::new(persistent),
            clock: Clock {
                now,
                wall_ms,
                start: now,
                start_wall_ms: wall_ms,
            },
            out: Outputs::default(),
            next_check: now,
            shuffle_seed: 0x9e37_79b9_7f4a_7c15 ^ (wall_ms as u64),
            plant: crate::node::plant::Plant::None,
            config,
        };
        core.next_check = now + core.check_every();
        core
    }

    /// Sets the URL of the web UI advertised to workers (empty: none). Default
    /// `http://host:8080`.
    pub fn set_web_ui_url(&mut self, url: String) {
        self.web_ui_url = url;
    }

    /// Seeds the shuffle of workers that drivers are placed on (for reproducible runs).
    pub fn set_seed(&mut self, seed: u64) {
        self.shuffle_seed = seed | 1;
    }

    /// Plants bug `plant` (tests only; [`crate::node::plant`]).
    #[cfg(feature = "testing")]
    pub fn plant(&mut self, plant: crate::node::plant::Plant) {
        self.plant = plant;
    }

    /// Whether bug `plant` is planted.
    pub(crate) fn planted(&self, plant: crate::node::plant::Plant) -> bool {
        self.plant == plant
    }

    /// Its protocol rules.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// The master's URL, `sparkwire://host:port`.
    pub fn url(&self) -> &str {
        &self.master_url
    }

    /// Its recovery state (STANDBY until elected).
    pub fn state(&self) -> RecoveryState {
        self.ha.state()
    }

    /// The peer of connection `conn` as a log line names it: its address, its role, and the id it
    /// registered (a worker's or an application's) or, before that, the id of its hello.
    pub fn peer_of(&self, conn: ConnId) -> Option<(String, Role, String)> {
        let rec = self.conns.get(conn)?;
        let id = self
            .workers
            .on(conn)
            .or_else(|| self.apps.on(conn))
            .unwrap_or(&rec.peer_id);
        Some((rec.addr.clone(), rec.role, id.to_string()))
    }

    fn check_every(&self) -> Duration {
        (self.config.worker_timeout / 4).max(Duration::from_millis(20))
    }

    fn opened(
        &mut self,
        conn: ConnId,
        role: Role,
        (peer_id, addr): (String, String),
        admin: bool,
        dialled: Option<DialTarget>,
    ) {
        tracing::debug!(conn, %role, peer = %peer_id, %addr, "connection opened");
        self.conns.open(conn, role, (peer_id, addr), admin);
        match dialled {
            Some(DialTarget::Worker(id)) => self.dialled_worker(conn, &id),
            Some(DialTarget::App(id)) => self.dialled_app(conn, &id),
            None => {}
        }
    }

    fn closed(&mut self, conn: ConnId) {
        let Some(rec) = self.conns.close(conn) else {
            return;
        };
        self.drivers.closed(conn);
        if let Some(id) = self.workers.unbind(conn) {
            let (address, dead) = self
                .workers
                .get(&id)
                .map(|w| {
                    (
                        w.address_key(),
                        w.state == crate::messages::WorkerState::Dead,
                    )
                })
                .unwrap_or_default();
            tracing::info!("{address} got disassociated, removing it.");
            if !dead {
                self.remove_worker(&id, &format!("{address} got disassociated"));
            }
        }
        if let Some(id) = self.apps.unbind(conn) {
            tracing::info!(app = %id, peer = %rec.peer_id, "application client disconnected");
            self.finish_application(&id);
        }
        if self.ha.state() == RecoveryState::Recovering && self.can_complete_recovery() {
            self.complete_recovery();
        }
    }

    /// `true` when `conn` is open with one of `roles`.
    pub(crate) fn conn_is(&self, conn: ConnId, roles: &[Role]) -> bool {
        self.conns.is(conn, roles)
    }

    /// Sends `m` on `conn`, if it is open.
    pub(crate) fn send_on(&mut self, conn: Option<ConnId>, m: impl Into<DeployMessage>) {
        if let Some(conn) = conn.filter(|c| self.conns.is_open(*c)) {
            self.out.push(Output::Conn(ConnOutput::Send {
                conn,
                message: m.into(),
            }));
        }
    }

    /// Tells the runtime that the peer on `conn` registered, before the answer that says so.
    pub(crate) fn registered_on(&mut self, conn: ConnId) {
        if self.conns.is_open(conn) {
            self.out.push(Output::Effect(Effect::Registered { conn }));
        }
    }

    /// Answers ask `id` on `conn`.
    pub(crate) fn reply_on(&mut self, conn: ConnId, id: u64, reply: Reply<DeployMessage>) {
        if self.conns.is_open(conn) {
            self.out
                .push(Output::Conn(ConnOutput::Reply { conn, id, reply }));
        }
    }

    /// Fails ask `id` on `conn`.
    pub(crate) fn fail_on(&mut self, conn: ConnId, id: u64, error: ErrorDescription) {
        if self.conns.is_open(conn) {
            self.out
                .push(Output::Conn(ConnOutput::Fail { conn, id, error }));
        }
    }

    fn on_send(&mut self, conn: ConnId, m: DeployMessage) {
        use DeployMessage as M;
        if !self.conns.takes(conn) {
            return;
        }
        if let Err(refusal) = self.authorize(conn, &m, false) {
            self.refuse(conn, None, &refusal);
            return;
        }
        let worker_side = self.conn_is(conn, &[Role::Worker]);
        let app_side = self.conn_is(conn, &[Role::AppClient]);
        match m {
            M::RegisterWorker(r) if worker_side => self.register_worker(conn, r),
            M::Heartbeat(h) if worker_side => self.heartbeat(conn, &h.worker_id),
            M::WorkerLatestState(s) if worker_side => self.worker_latest_state(conn, s),
            // A send in protocol version 1 (Spark 3.0), an ask from version 2 on.
            M::ExecutorStateChanged(e) if worker_side => self.executor_state_changed(conn, e),
            M::DriverStateChanged(d) if worker_side => {
                self.driver_state_changed(d.driver_id, d.state, d.exception)
            }
            M::WorkerDecommissioning(d) if worker_side => self.worker_decommissioning(&d.id),
            M::WorkerSchedulerStateResponse(s) if worker_side => {
                self.worker_scheduler_state(conn, s)
            }
            M::RegisterApplication(r) if app_side => self.register_application(conn, r),
            M::UnregisterApplication(u) if app_side => {
                tracing::info!("Received unregister request from application {}", u.app_id);
                if self.apps.get(&u.app_id).is_some() {
                    self.finish_application(&u.app_id);
                }
            }
            M::MasterChangeAcknowledged(a) if app_side => {
                self.master_change_acknowledged(conn, &a.app_id)
            }
            other => {
                self.refuse_route(conn, None, &other);
            }
        }
    }

    fn on_ask(&mut self, conn: ConnId, id: u64, m: DeployMessage) {
        use DeployMessage as M;
        if !self.conns.takes(conn) {
            return;
        }
        if let Err(refusal) = self.authorize(conn, &m, true) {
            self.refuse(conn, Some(id), &refusal);
            return;
        }
        let worker_side = self.conn_is(conn, &[Role::Worker]);
        let app_side = self.conn_is(conn, &[Role::AppClient]);
        let client_side = self.conn_is(conn, &[Role::DriverClient]);
        // The protocol's routes (checked above) say which roles send each UI ask.
        let ui_side = self.conn_is(conn, &[Role::Ui, Role::DriverClient]);
        if let Some(denied) = self.admin_refusal(conn, &m) {
            if let Some((addr, role, peer_id)) = self.peer_of(conn) {
                let peer = crate::node::violations::Peer {
                    addr: &addr,
                    role,
                    id: &peer_id,
                    conn,
                };
                crate::node::violations::warn(
                    peer,
                    "refused a state-changing ask from a peer that is not an admin",
                    "PermissionDenied",
                    &denied.message,
                );
            }
            self.fail_on(conn, id, denied);
            return;
        }
        let reply = match m {
            M::ExecutorStateChanged(e) if worker_side => {
                self.executor_state_changed(conn, e);
                Reply::Bool(true)
            }
            M::RequestExecutors(r) if app_side => Reply::Bool(self.request_executors(r)),
            M::KillExecutors(k) if app_side => Reply::Bool(self.kill_executors(k)),
            M::RequestSubmitDriver(r) if client_side => {
                // Answered before the driver is scheduled, so that the client learns the id
                // before any LaunchDriver names it.
                let (response, submitted) = self.submit_driver(r.driver_description);
                if let Some(driver) = response.driver_id.clone().filter(|_| submitted) {
                    self.drivers.submitted_on(conn, driver);
                }
                self.reply_on(conn, id, Reply::Message(response.into()));
                if submitted {
                    self.schedule();
                }
                return;
            }
            M::RequestKillDriver(k) if client_side => {
                let (response, killed_waiting) = self.kill_driver(&k.driver_id);
                self.reply_on(conn, id, Reply::Message(response.into()));
                if let Some(d) = killed_waiting {
                    self.remove_driver(&d, crate::messages::DriverState::Killed, None);
                }
                return;
            }
            M::RequestKillAllDrivers(_) if ui_side => {
                let (response, killed_waiting) = self.kill_all_drivers();
                self.reply_on(conn, id, Reply::Message(response.into()));
                for d in killed_waiting {
                    self.remove_driver(&d, crate::messages::DriverState::Killed, None);
                }
                return;
            }
            M::RequestDriverStatus(r) if ui_side => {
                Reply::Message(self.driver_status(&r.driver_id).into())
            }
            M::RequestMasterState(_) if ui_side => Reply::Message(self.master_state().into()),
            M::RequestReadyz(_) if ui_side => {
                Reply::Bool(self.ha.state() != RecoveryState::Standby)
            }
            M::RequestClearCompletedDriversAndApps(_) if ui_side => {
                Reply::Bool(self.clear_completed())
            }
            M::DecommissionWorkersOnHosts(d) if ui_side => {
                Reply::Int(self.decommission_workers_on_hosts(&d.hostnames))
            }
            other => {
                self.refuse_route(conn, Some(id), &other);
                return;
            }
        };
        self.reply_on(conn, id, reply);
    }

    /// Refuses `m`, which the protocol does not route from `conn`'s role to the master (or not
    /// as it came).
    fn refuse_route(&mut self, conn: ConnId, ask: Option<u64>, m: &DeployMessage) {
        let from = self.conns.get(conn).map_or(Role::Ui, |c| c.role);
        let refusal = crate::node::authz::Refusal::Route {
            from,
            to: Role::Master,
            message: m.name().to_string(),
        };
        self.refuse(conn, ask, &refusal);
    }

    /// Becomes the active master: ALIVE, or RECOVERING when the recovery directory holds state.
    fn elected(&mut self, stored: Stored) {
        if stored.is_empty() {
            self.ha.alive();
            tracing::info!("I have been elected leader! New state: ALIVE");
            self.schedule();
        } else {
            self.ha.recovering();
            tracing::info!("I have been elected leader! New state: RECOVERING");
            self.begin_recovery(stored);
        }
    }

    /// A fresh pseudo-random number (xorshift), for shuffling workers.
    pub(crate) fn next_random(&mut self) -> u64 {
        let mut x = self.shuffle_seed;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.shuffle_seed = x;
        x
    }
}

impl Core for MasterCore {
    type Message = DeployMessage;
    type Input = Input;
    type Effect = Effect;

    /// Handles `input`, which happened at `now`.
    fn handle(&mut self, now: Instant, input: Input) {
        self.clock.set(now);
        match input {
            Input::Conn(ConnInput::Opened { conn, peer, origin }) => {
                self.opened(conn, peer.role, (peer.id, peer.addr), peer.admin, origin)
            }
            Input::Conn(ConnInput::Message { conn, message }) => self.on_send(conn, message),
            Input::Conn(ConnInput::Ask { conn, id, message }) => self.on_ask(conn, id, message),
            Input::Conn(ConnInput::Closed { conn, .. }) => self.closed(conn),
            // The master's asks want no answer; a peer it could not reach after a failover
            // reconnects itself (its driver logs the dial).
            Input::Conn(ConnInput::Answer { answer, .. }) => {
                if let Err(e) = answer {
                    tracing::debug!(error = %e, "ask not answered");
                }
            }
            Input::Conn(ConnInput::DialFailed { .. }) => {}
            Input::Elected { stored } => self.elected(stored),
            Input::PersistFailed { kind, id, reason } => self.persist_failed(kind, &id, &reason),
        }
    }

    /// When [`MasterCore::handle_timeout`] is next due.
    fn poll_timeout(&self) -> Option<Instant> {
        Some(match self.ha.deadline() {
            Some(d) => d.min(self.next_check),
            None => self.next_check,
        })
    }

    /// Handles the timers due at `now`: the end of a recovery's wait, and the periodic check for
    /// workers silent longer than the worker timeout.
    fn handle_timeout(&mut self, now: Instant) {
        self.clock.set(now);
        if self.ha.deadline().is_some_and(|d| d <= self.clock.now) {
            self.complete_recovery();
        }
        if self.next_check <= self.clock.now {
            self.time_out_dead_workers();
            self.next_check = self.clock.now + self.check_every();
        }
    }

    /// The next thing to do, in the order the core decided; `None` when there is nothing left.
    fn poll(&mut self) -> Option<Output> {
        self.out.queue.pop_front()
    }
}
