//! The master's actor: one task owning the state, fed by connections, timers and the leader
//! election, handling one event at a time as Spark's Master endpoint does.

use std::collections::{BTreeSet, HashMap, VecDeque};
use std::net::SocketAddr;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;
use std::time::Duration;

use tokio::net::TcpListener;
use tokio::sync::{mpsc, oneshot};
use tokio::time::Instant;

use super::conns::{self, ConnSettings, DialTarget, Opened};
use super::ha::{Election, LeaderEvent};
use super::recovery::Persistence;
use super::state::{AppRec, DriverRec, WorkerRec};
use super::{MasterConfig, Stop};
use crate::connection::Incoming;
use crate::messages::{
    Addr, ApplicationInfo, DeployMessage, DriverInfo, EndpointRef, Family, RecoveryState,
};
use crate::reference::outbox::{ConnId, Credit, Out, Outbox, Peer};
use crate::wire::handshake::Role;
use crate::wire::Reply;

/// What the actor handles.
#[allow(clippy::large_enum_variant)] // as the message enums: boxing would cost an allocation per message
pub(crate) enum Event {
    /// A connection is up (accepted, or dialled for a target).
    Opened(Opened, Option<DialTarget>),
    /// A message or ask arrived on a connection (its credit is dropped once handled).
    Incoming(ConnId, Incoming<DeployMessage>, Credit),
    /// A connection closed.
    Closed(ConnId),
    /// The leader election decided.
    Leader(LeaderEvent),
    /// The web UI asks for a snapshot.
    #[cfg_attr(not(feature = "webui"), allow(dead_code))]
    Snapshot(oneshot::Sender<crate::reference::webui::MasterSnapshot>),
}

/// A connection the actor knows.
pub(crate) struct ConnRec {
    pub(crate) peer: Peer,
    pub(crate) role: Role,
    pub(crate) peer_id: String,
    /// The peer proved the admin secret in the handshake.
    pub(crate) admin: bool,
    /// A one-way message was refused: the connection is closing and nothing more is taken.
    pub(crate) refused: bool,
}

/// The master's state and the means to act.
pub(crate) struct MasterActor {
    pub(crate) config: MasterConfig,
    pub(crate) state: RecoveryState,
    pub(crate) addr: Addr,
    pub(crate) self_ref: EndpointRef,
    pub(crate) master_url: String,
    pub(crate) web_ui_url: String,
    pub(crate) workers: HashMap<String, WorkerRec>,
    /// Worker endpoint address → id, for workers not DEAD (Spark's `addressToWorker`).
    pub(crate) address_to_worker: HashMap<String, String>,
    pub(crate) apps: HashMap<String, AppRec>,
    /// Applications in registration order (Spark's `waitingApps`: every active application).
    pub(crate) waiting_apps: Vec<String>,
    pub(crate) completed_apps: VecDeque<ApplicationInfo>,
    pub(crate) drivers: HashMap<String, DriverRec>,
    pub(crate) waiting_drivers: Vec<String>,
    pub(crate) completed_drivers: VecDeque<DriverInfo>,
    pub(crate) next_app_number: u32,
    pub(crate) next_driver_number: u32,
    pub(crate) conns: HashMap<ConnId, ConnRec>,
    pub(crate) conn_worker: HashMap<ConnId, String>,
    pub(crate) conn_app: HashMap<ConnId, String>,
    /// Drivers each driver-client connection submitted (the ones it may kill).
    pub(crate) submitted: HashMap<ConnId, BTreeSet<String>>,
    pub(crate) outbox: Outbox,
    pub(crate) events: mpsc::UnboundedSender<Event>,
    pub(crate) settings: ConnSettings,
    pub(crate) persistence: Option<Persistence>,
    pub(crate) recovery_deadline: Option<Instant>,
    /// Seed of the shuffle of workers for drivers.
    pub(crate) shuffle_seed: u64,
    /// Traffic of the connections that closed, for the web UI's metrics.
    pub(crate) closed_traffic: crate::connection::Counters,
}

impl MasterActor {
    pub(crate) fn new(
        config: MasterConfig,
        addr: SocketAddr,
        persistence: Option<Persistence>,
        events: mpsc::UnboundedSender<Event>,
    ) -> Self {
        let host = addr.ip().to_string();
        let port = i32::from(addr.port());
        let addr = Addr::new(host.clone(), port);
        // One id per incarnation: a master restarted on the same address is another endpoint.
        let id = format!("master-{host}:{port}-{}", crate::reference::clock::now_ms());
        let settings = ConnSettings {
            id,
            max_frame_size: config.max_frame_size,
            handshake_timeout: Duration::from_secs(10),
            observer: config.observer.clone(),
            next_conn: Arc::new(AtomicU64::new(1)),
            versions: config.versions.clone(),
            security: config.security.clone(),
            admission: crate::connection::Admission::new(config.limits),
        };
        let outbox = Outbox::spawn(config.send_timeout);
        MasterActor {
            state: RecoveryState::Standby,
            self_ref: EndpointRef::at(addr.clone(), "Master"),
            master_url: format!("sparkwire://{host}:{port}"),
            web_ui_url: format!("http://{host}:8080"),
            addr,
            config,
            workers: HashMap::new(),
            address_to_worker: HashMap::new(),
            apps: HashMap::new(),
            waiting_apps: Vec::new(),
            completed_apps: VecDeque::new(),
            drivers: HashMap::new(),
            waiting_drivers: Vec::new(),
            completed_drivers: VecDeque::new(),
            next_app_number: 0,
            next_driver_number: 0,
            conns: HashMap::new(),
            conn_worker: HashMap::new(),
            conn_app: HashMap::new(),
            submitted: HashMap::new(),
            outbox,
            events,
            settings,
            persistence,
            recovery_deadline: None,
            shuffle_seed: 0x9e37_79b9_7f4a_7c15 ^ u64::from(std::process::id()),
            closed_traffic: Default::default(),
        }
    }

    /// Runs until stopped or until the master loses its leadership.
    pub(crate) async fn run(
        mut self,
        listener: TcpListener,
        mut events: mpsc::UnboundedReceiver<Event>,
        mut stop: oneshot::Receiver<Stop>,
    ) {
        let listening = tokio::spawn(conns::listen(
            listener,
            self.settings.clone(),
            self.events.clone(),
        ));
        let mut election = match &self.persistence {
            Some(p) => Some(Election::spawn(
                p.dir().to_path_buf(),
                self.settings.id.clone(),
                self.config.lease,
                self.events.clone(),
            )),
            None => {
                self.elected();
                None
            }
        };
        let tick_every = (self.config.worker_timeout / 4).max(Duration::from_millis(20));
        let mut tick = tokio::time::interval(tick_every);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let how = loop {
            let deadline = self.recovery_deadline;
            tokio::select! {
                how = &mut stop => break how.unwrap_or(Stop::Crash),
                event = events.recv() => match event {
                    Some(Event::Leader(LeaderEvent::Lost)) => {
                        tracing::error!("Leadership has been revoked -- master shutting down.");
                        break Stop::Crash;
                    }
                    Some(event) => self.handle(event),
                    None => break Stop::Crash,
                },
                _ = tick.tick() => self.time_out_dead_workers(),
                _ = async {
                    match deadline {
                        Some(d) => tokio::time::sleep_until(d).await,
                        None => std::future::pending().await,
                    }
                } => {
                    self.recovery_deadline = None;
                    self.complete_recovery();
                }
            }
        };
        listening.abort();
        // Wait until the listener is dropped, so the port is free when this returns.
        let _ = listening.await;
        if let Some(e) = election.take() {
            e.stop(how == Stop::Graceful).await;
        }
        match how {
            Stop::Graceful => {
                for c in self.conns.values() {
                    self.outbox.push(Out::Close(c.peer.clone()));
                }
                let (done, flushed) = oneshot::channel();
                self.outbox.push(Out::Flush(done));
                let _ = tokio::time::timeout(Duration::from_secs(5), flushed).await;
            }
            Stop::Crash => {
                for c in self.conns.values() {
                    c.peer.kill();
                }
            }
        }
        tracing::info!(master = %self.master_url, "master stopped");
    }

    fn handle(&mut self, event: Event) {
        match event {
            Event::Opened(opened, target) => self.opened(opened, target),
            Event::Incoming(conn, Incoming::Message(m), _credit) => self.on_send(conn, m),
            Event::Incoming(conn, Incoming::Ask { id, message }, _credit) => {
                self.on_ask(conn, id, message)
            }
            Event::Closed(conn) => self.closed(conn),
            Event::Leader(LeaderEvent::Elected) => self.elected(),
            Event::Leader(LeaderEvent::Lost) => {}
            Event::Snapshot(reply) => {
                let _ = reply.send(self.snapshot());
            }
        }
    }

    fn opened(&mut self, opened: Opened, target: Option<DialTarget>) {
        let Opened {
            conn,
            peer,
            role,
            peer_id,
            admin,
        } = opened;
        tracing::debug!(conn, %role, peer = %peer_id, "connection opened");
        self.conns.insert(
            conn,
            ConnRec {
                peer: peer.clone(),
                role,
                peer_id,
                admin,
                refused: false,
            },
        );
        match target {
            Some(DialTarget::Worker(id)) => self.dialled_worker(conn, &id),
            Some(DialTarget::App(id)) => self.dialled_app(conn, &id),
            None => {}
        }
    }

    fn closed(&mut self, conn: ConnId) {
        let Some(rec) = self.conns.remove(&conn) else {
            return;
        };
        self.submitted.remove(&conn);
        crate::reference::driver::add_counters(
            &mut self.closed_traffic,
            &rec.peer.handle.counters(),
        );
        if let Some(id) = self.conn_worker.remove(&conn) {
            let bound = self.workers.get(&id).is_some_and(|w| w.conn == Some(conn));
            if bound {
                if let Some(w) = self.workers.get_mut(&id) {
                    w.conn = None;
                }
                let address = self
                    .workers
                    .get(&id)
                    .map(|w| w.address_key())
                    .unwrap_or_default();
                tracing::info!("{address} got disassociated, removing it.");
                if self
                    .workers
                    .get(&id)
                    .is_some_and(|w| w.state != crate::messages::WorkerState::Dead)
                {
                    self.remove_worker(&id, &format!("{address} got disassociated"));
                }
            }
        }
        if let Some(id) = self.conn_app.remove(&conn) {
            let bound = self.apps.get(&id).is_some_and(|a| a.conn == Some(conn));
            if bound {
                tracing::info!(app = %id, peer = %rec.peer_id, "application client disconnected");
                if let Some(a) = self.apps.get_mut(&id) {
                    a.conn = None;
                }
                self.finish_application(&id);
            }
        }
        if self.state == RecoveryState::Recovering && self.can_complete_recovery() {
            self.complete_recovery();
        }
    }

    /// The connection bound to `peer` kind checks: `true` when `conn` has one of `roles`.
    pub(crate) fn conn_is(&self, conn: ConnId, roles: &[Role]) -> bool {
        self.conns
            .get(&conn)
            .is_some_and(|c| roles.contains(&c.role))
    }

    /// Sends `m` on `conn`, if it is open.
    pub(crate) fn send_on(&self, conn: Option<ConnId>, m: impl Into<DeployMessage>) {
        if let Some(c) = conn.and_then(|c| self.conns.get(&c)) {
            self.outbox.send(&c.peer, m);
        }
    }

    /// Answers ask `id` on `conn`.
    pub(crate) fn reply_on(&self, conn: ConnId, id: u64, reply: Reply<DeployMessage>) {
        if let Some(c) = self.conns.get(&conn) {
            self.outbox.reply(&c.peer, id, reply);
        }
    }

    fn on_send(&mut self, conn: ConnId, m: DeployMessage) {
        use DeployMessage as M;
        if self.conns.get(&conn).is_none_or(|c| c.refused) {
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
            M::WorkerLatestState(s) if worker_side => self.worker_latest_state(s),
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
                if self.apps.contains_key(&u.app_id) {
                    self.finish_application(&u.app_id);
                }
            }
            M::MasterChangeAcknowledged(a) if app_side => {
                self.master_change_acknowledged(conn, &a.app_id)
            }
            other => {
                let from = self.conns.get(&conn).map_or(Role::Ui, |c| c.role);
                let refusal = crate::reference::authz::Refusal::Route {
                    from,
                    to: Role::Master,
                    message: other.name().to_string(),
                };
                self.refuse(conn, None, &refusal);
            }
        }
    }

    fn on_ask(&mut self, conn: ConnId, id: u64, m: DeployMessage) {
        use DeployMessage as M;
        if self.conns.get(&conn).is_none_or(|c| c.refused) {
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
            tracing::warn!(
                conn,
                message = m.name(),
                "refusing a state-changing ask from a peer that is not an admin"
            );
            if let Some(c) = self.conns.get(&conn) {
                self.outbox.push(Out::Fail(c.peer.clone(), id, denied));
            }
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
                    self.submitted.entry(conn).or_default().insert(driver);
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
            M::RequestDriverStatus(r) if client_side => {
                Reply::Message(self.driver_status(&r.driver_id).into())
            }
            M::RequestMasterState(_) if ui_side => Reply::Message(self.master_state().into()),
            M::RequestReadyz(_) if ui_side => Reply::Bool(self.state != RecoveryState::Standby),
            M::RequestClearCompletedDriversAndApps(_) if ui_side => {
                Reply::Int(self.clear_completed())
            }
            M::DecommissionWorkersOnHosts(d) if ui_side => {
                Reply::Int(self.decommission_workers_on_hosts(&d.hostnames))
            }
            other => {
                let from = self.conns.get(&conn).map_or(Role::Ui, |c| c.role);
                let refusal = crate::reference::authz::Refusal::Route {
                    from,
                    to: Role::Master,
                    message: other.name().to_string(),
                };
                self.refuse(conn, Some(id), &refusal);
                return;
            }
        };
        self.reply_on(conn, id, reply);
    }

    /// Becomes the active master: ALIVE, or RECOVERING when the recovery directory holds state.
    fn elected(&mut self) {
        let stored = match &self.persistence {
            Some(p) => match p.read_all() {
                Ok(s) => s,
                Err(e) => {
                    tracing::error!(error = %e, "cannot read the recovery directory; starting empty");
                    Default::default()
                }
            },
            None => Default::default(),
        };
        if stored.is_empty() {
            self.state = RecoveryState::Alive;
            tracing::info!("I have been elected leader! New state: ALIVE");
            self.schedule();
        } else {
            self.state = RecoveryState::Recovering;
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

    /// Asks the leader election's view of a dial.
    pub(crate) fn dial(&self, addr: Addr, target: DialTarget) {
        conns::dial(addr, target, self.settings.clone(), self.events.clone());
    }
}
