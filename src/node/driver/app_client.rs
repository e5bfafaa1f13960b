//! The application client's core, as Spark's `StandaloneAppClient`: registers the application
//! with every master it is given and asks again until one answers, gives up when none does in
//! time, follows what the active master says about the application's executors and workers,
//! answers MasterChanged, asks for and kills executors on request, and unregisters on stop.
//!
//! It dials nothing itself: it asks its runtime to ([`ClientEffect::Dial`]) and is told how the
//! dial went ([`ConnInput::Opened`], [`ConnInput::DialFailed`] for a [`ClientLink::Master`]); a
//! master that reaches the application after a failover comes in as a [`ClientLink::Adopted`].

use std::collections::{BTreeMap, VecDeque};
use std::time::{Duration, Instant};

use super::MasterEvent;
use crate::messages::deploy::{
    KillExecutors, MasterChangeAcknowledged, RegisterApplication, RequestExecutors,
    UnregisterApplication,
};
use crate::messages::{DeployMessage, ErrorDescription, Family, ProfileExecutors};
use crate::node::{AskFailure, ConnId, ConnInput, ConnOutput, Core, Output};
use crate::wire::Reply;

/// Spark's text when no master registered the application in time.
pub const ALL_MASTERS_UNRESPONSIVE: &str = "All masters are unresponsive! Giving up.";

/// The shortest interval between registrations sent again.
const MIN_RETRY: Duration = Duration::from_millis(10);

/// The application client's rules.
#[derive(Debug, Clone, PartialEq)]
pub struct ClientConfig {
    /// The masters to register with, as they are named in log lines and events (their URLs).
    pub masters: Vec<String>,
    /// The registration sent to each.
    pub register: RegisterApplication,
    /// How long the masters have to register the application before it gives up; also how long
    /// it waits for a master to take over once the active one is lost.
    pub registration_timeout: Duration,
    /// How often the registration is sent again to masters that did not answer (Spark: 20 s).
    pub registration_retry: Duration,
}

/// Why a connection of the application client exists.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClientLink {
    /// The client dialled master number `n` (in [`ClientConfig::masters`]).
    Master(usize),
    /// A master connected to the application (one that took over after a failover).
    Adopted,
}

/// What the application client is told.
#[derive(Debug, Clone, PartialEq)]
#[allow(clippy::large_enum_variant)] // as the message enums: boxing would cost an allocation per message
pub enum ClientInput {
    /// Something happened on a master's connection (the client answers no ask).
    Conn(ConnInput<DeployMessage, ClientLink>),
    /// Ask the active master for `total` executors in all; answered with
    /// [`ClientEffect::Answered`] naming `request`.
    RequestExecutors {
        /// The caller's id of the request.
        request: u64,
        /// Executors wanted in all.
        total: u32,
    },
    /// Ask the active master to kill executors; answered with [`ClientEffect::Answered`].
    KillExecutors {
        /// The caller's id of the request.
        request: u64,
        /// The executors.
        ids: Vec<String>,
    },
    /// Unregister the application and close every connection.
    Stop,
}

/// Why a request to the master was not granted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RequestFailed {
    /// No master has registered the application (yet, or any more).
    NotRegistered,
    /// The master failed the ask, or answered something else than a boolean.
    Master(String),
}

/// What the application client wants done besides writing on its connections.
#[derive(Debug, Clone, PartialEq)]
pub enum ClientEffect {
    /// Dial master number `master` (then report [`ConnInput::Opened`] or
    /// [`ConnInput::DialFailed`] for [`ClientLink::Master`]).
    Dial {
        /// The master's index in [`ClientConfig::masters`].
        master: usize,
    },
    /// News for the scheduler backend ([`BackendInput::Master`](super::BackendInput::Master)).
    Master(MasterEvent),
    /// The master's answer to a request.
    Answered {
        /// The caller's id of the request.
        request: u64,
        /// Whether the master granted it.
        result: Result<bool, RequestFailed>,
    },
}

/// Where the application is with the masters.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Registration {
    /// No master has registered it yet; the registration is sent again every retry.
    Pending {
        next_retry: Instant,
        deadline: Instant,
    },
    /// Registered with this id.
    Registered { app_id: String },
    /// Given up (no master answered, or the master removed it), or stopped.
    Over,
}

/// The application client's core. See the module documentation.
#[derive(Debug)]
pub struct AppClientCore {
    config: ClientConfig,
    /// Names of the masters' connections, by index: dialled ones first, then adopted ones.
    labels: Vec<String>,
    /// The open connection of each master, by index.
    conns: Vec<Option<ConnId>>,
    index: BTreeMap<ConnId, usize>,
    registration: Registration,
    active: Option<usize>,
    /// Dials not yet ended (connected or failed).
    dialling: usize,
    failed: usize,
    /// What went wrong with each master that could not be reached or was lost before it
    /// registered the application: said when the client gives up.
    why: Vec<String>,
    /// When the connection to the active master was lost, while no master has taken over.
    lost_at: Option<Instant>,
    next_ask: u64,
    /// The client's asks awaiting an answer: (connection, ask id) → request.
    asks: BTreeMap<(ConnId, u64), u64>,
    /// The time of the input being handled.
    now: Instant,
    out: VecDeque<Output<DeployMessage, ClientEffect>>,
}

impl AppClientCore {
    /// A client of `config.masters`, started at `now`: it asks to dial every one.
    pub fn new(config: ClientConfig, now: Instant) -> Self {
        let n = config.masters.len();
        let mut core = AppClientCore {
            labels: config.masters.clone(),
            conns: vec![None; n],
            index: BTreeMap::new(),
            registration: Registration::Pending {
                next_retry: now + config.registration_retry.max(MIN_RETRY),
                deadline: now + config.registration_timeout,
            },
            active: None,
            dialling: n,
            failed: 0,
            why: Vec::new(),
            lost_at: None,
            next_ask: 0,
            asks: BTreeMap::new(),
            now,
            out: VecDeque::new(),
            config,
        };
        for master in 0..n {
            core.out
                .push_back(Output::Effect(ClientEffect::Dial { master }));
        }
        core
    }

    /// The application's id, once a master registered it.
    pub fn app_id(&self) -> Option<&str> {
        match &self.registration {
            Registration::Registered { app_id } => Some(app_id),
            _ => None,
        }
    }

    fn send(&mut self, conn: ConnId, message: DeployMessage) {
        self.out
            .push_back(Output::Conn(ConnOutput::Send { conn, message }));
    }

    fn effect(&mut self, effect: ClientEffect) {
        self.out.push_back(Output::Effect(effect));
    }

    fn register(&mut self, conn: ConnId) {
        let again = DeployMessage::RegisterApplication(self.config.register.clone());
        self.send(conn, again);
    }

    fn dialled(&mut self, master: usize, conn: ConnId) {
        self.dialling = self.dialling.saturating_sub(1);
        if master >= self.conns.len() {
            return;
        }
        self.conns[master] = Some(conn);
        self.index.insert(conn, master);
        if matches!(self.registration, Registration::Pending { .. }) {
            self.register(conn);
        }
    }

    fn dial_failed(&mut self, master: usize, error: &str) {
        self.dialling = self.dialling.saturating_sub(1);
        let label = self.labels.get(master).cloned().unwrap_or_default();
        tracing::warn!("driver: failed to connect to master {label}: {error}");
        self.failed += 1;
        self.why.push(format!("{label}: {error}"));
        if self.failed == self.config.masters.len()
            && matches!(self.registration, Registration::Pending { .. })
        {
            let why = self.unresponsive();
            self.give_up(why);
        }
    }

    fn adopted(&mut self, conn: ConnId, label: String) {
        tracing::info!("driver: master {label} connected to the application");
        let i = self.conns.len();
        self.conns.push(Some(conn));
        self.labels.push(label);
        self.index.insert(conn, i);
    }

    /// Spark's "All masters are unresponsive! Giving up.", followed by what this client knows
    /// went wrong with each master (a refused connection, a refused handshake, a lost
    /// connection), so that the typed error is not lost behind the generic one.
    fn unresponsive(&self) -> String {
        if self.why.is_empty() {
            ALL_MASTERS_UNRESPONSIVE.to_string()
        } else {
            format!("{ALL_MASTERS_UNRESPONSIVE} ({})", self.why.join("; "))
        }
    }

    fn give_up(&mut self, why: String) {
        if self.registration != Registration::Over {
            self.registration = Registration::Over;
            self.lost_at = None;
            self.effect(ClientEffect::Master(MasterEvent::Dead(why)));
        }
    }

    fn closed(&mut self, conn: ConnId, reason: &str) {
        let Some(i) = self.index.remove(&conn) else {
            return;
        };
        self.conns[i] = None;
        let failed: Vec<(u64, u64)> = self
            .asks
            .iter()
            .filter(|((c, _), _)| *c == conn)
            .map(|(&(_, id), &request)| (id, request))
            .collect();
        for (id, request) in failed {
            self.asks.remove(&(conn, id));
            let result = Err(RequestFailed::Master(reason.to_string()));
            self.effect(ClientEffect::Answered { request, result });
        }
        let label = self.labels[i].clone();
        if matches!(self.registration, Registration::Pending { .. }) {
            self.why.push(format!("{label}: {reason}"));
        }
        if self.active == Some(i) {
            self.active = None;
            if matches!(self.registration, Registration::Registered { .. }) {
                self.lost_at = Some(self.now);
            }
            tracing::warn!(
                "driver: connection to master {label} lost ({reason}); waiting for a master to \
                 reconnect"
            );
        } else if self.registration != Registration::Over {
            tracing::warn!("driver: connection to master {label} ended: {reason}");
        }
    }

    /// Handles what happened on a master's connection.
    fn conn_input(&mut self, input: ConnInput<DeployMessage, ClientLink>) {
        match input {
            ConnInput::Opened {
                conn,
                origin: ClientLink::Master(master),
                ..
            } => self.dialled(master, conn),
            ConnInput::Opened {
                conn,
                origin: ClientLink::Adopted,
                peer,
            } => self.adopted(conn, peer.id),
            ConnInput::DialFailed {
                origin: ClientLink::Master(master),
                error,
            } => self.dial_failed(master, &error),
            // The client dials only masters.
            ConnInput::DialFailed {
                origin: ClientLink::Adopted,
                ..
            } => {}
            ConnInput::Message { conn, message } => self.message(conn, message),
            ConnInput::Ask { conn, id, message } => {
                let error = ErrorDescription::new(
                    "org.apache.spark.SparkException",
                    format!(
                        "Unsupported message {} received by the app client",
                        message.name()
                    ),
                );
                self.out
                    .push_back(Output::Conn(ConnOutput::Fail { conn, id, error }));
            }
            ConnInput::Answer { conn, id, answer } => self.answer(conn, id, answer),
            ConnInput::Closed { conn, reason } => self.closed(conn, &reason),
        }
    }

    fn message(&mut self, conn: ConnId, message: DeployMessage) {
        let Some(&i) = self.index.get(&conn) else {
            return;
        };
        let label = self.labels[i].clone();
        match message {
            DeployMessage::RegisteredApplication(r) => match &self.registration {
                Registration::Pending { .. } => {
                    self.registration = Registration::Registered {
                        app_id: r.app_id.clone(),
                    };
                    self.active = Some(i);
                    self.effect(ClientEffect::Master(MasterEvent::Registered {
                        app_id: r.app_id,
                        master: label,
                    }));
                }
                _ => tracing::warn!(
                    "driver: master {label} registered the application again as {}",
                    r.app_id
                ),
            },
            DeployMessage::ExecutorAdded(e) => {
                self.effect(ClientEffect::Master(MasterEvent::ExecutorAdded(e)))
            }
            DeployMessage::ExecutorUpdated(e) => {
                self.effect(ClientEffect::Master(MasterEvent::ExecutorUpdated(e)))
            }
            DeployMessage::WorkerRemoved(w) => {
                self.effect(ClientEffect::Master(MasterEvent::WorkerRemoved(w)))
            }
            DeployMessage::ApplicationRemoved(r) => {
                self.give_up(format!("Master removed our application: {}", r.message));
            }
            DeployMessage::MasterChanged(_) => {
                tracing::info!("driver: master has changed, new master is {label}");
                self.active = Some(i);
                self.lost_at = None;
                self.effect(ClientEffect::Master(MasterEvent::MasterChanged {
                    master: label,
                }));
                if let Some(app_id) = self.app_id() {
                    let ack = MasterChangeAcknowledged {
                        app_id: app_id.to_string(),
                    };
                    self.send(conn, DeployMessage::MasterChangeAcknowledged(ack));
                }
            }
            other => tracing::debug!("driver: ignoring {} from the master", other.name()),
        }
    }

    /// Asks the active master `message` for `request`, or answers that there is no master.
    fn ask_active(&mut self, request: u64, message: impl FnOnce(String) -> DeployMessage) {
        let target = self.active.and_then(|i| self.conns[i]);
        let (Some(conn), Some(app_id)) = (target, self.app_id()) else {
            let result = Err(RequestFailed::NotRegistered);
            self.effect(ClientEffect::Answered { request, result });
            return;
        };
        let message = message(app_id.to_string());
        let id = self.next_ask;
        self.next_ask += 1;
        self.asks.insert((conn, id), request);
        self.out
            .push_back(Output::Conn(ConnOutput::Ask { conn, id, message }));
    }

    fn answer(&mut self, conn: ConnId, id: u64, answer: Result<Reply<DeployMessage>, AskFailure>) {
        let Some(request) = self.asks.remove(&(conn, id)) else {
            return;
        };
        let result = match answer {
            Ok(Reply::Bool(b)) => Ok(b),
            Ok(other) => Err(RequestFailed::Master(format!(
                "unexpected answer: a {} reply",
                other.tag()
            ))),
            Err(e) => Err(RequestFailed::Master(e.to_string())),
        };
        self.effect(ClientEffect::Answered { request, result });
    }

    fn stop(&mut self) {
        let target = self.active.and_then(|i| self.conns[i]);
        if let (Some(conn), Some(app_id)) = (target, self.app_id()) {
            let bye = UnregisterApplication {
                app_id: app_id.to_string(),
            };
            self.send(conn, DeployMessage::UnregisterApplication(bye));
        }
        self.registration = Registration::Over;
        self.lost_at = None;
        let open: Vec<ConnId> = self.conns.iter().flatten().copied().collect();
        for conn in open {
            self.out
                .push_back(Output::Conn(ConnOutput::Close { conn, reason: None }));
        }
    }

    /// Whether connections to masters are open.
    pub fn has_connections(&self) -> bool {
        self.conns.iter().any(Option::is_some)
    }
}

impl Core for AppClientCore {
    type Message = DeployMessage;
    type Input = ClientInput;
    type Effect = ClientEffect;

    fn handle(&mut self, now: Instant, input: ClientInput) {
        self.now = now;
        match input {
            ClientInput::Conn(input) => self.conn_input(input),
            ClientInput::RequestExecutors { request, total } => {
                let profile = self.config.register.app_description.default_profile.clone();
                self.ask_active(request, |app_id| {
                    DeployMessage::RequestExecutors(RequestExecutors {
                        app_id,
                        resource_profile_to_total_execs: vec![ProfileExecutors {
                            profile,
                            total: i32::try_from(total).unwrap_or(i32::MAX),
                        }],
                    })
                });
            }
            ClientInput::KillExecutors { request, ids } => {
                self.ask_active(request, |app_id| {
                    DeployMessage::KillExecutors(KillExecutors {
                        app_id,
                        executor_ids: ids,
                    })
                });
            }
            ClientInput::Stop => self.stop(),
        }
    }

    fn handle_timeout(&mut self, now: Instant) {
        self.now = now;
        if let Registration::Pending {
            next_retry,
            deadline,
        } = self.registration
        {
            // Not while a master is still being dialled: its dial ends within the same time
            // (then the client gives up, naming why), and giving up first would lose that.
            if now >= deadline && self.dialling == 0 {
                let why = self.unresponsive();
                self.give_up(why);
                return;
            }
            if now >= next_retry {
                // As Spark's tryRegisterAllMasters: a master that was standby (or busy
                // recovering) ignored the registration; ask again.
                let open: Vec<ConnId> = self.conns.iter().flatten().copied().collect();
                for conn in open {
                    self.register(conn);
                }
                self.registration = Registration::Pending {
                    next_retry: now + self.config.registration_retry.max(MIN_RETRY),
                    deadline,
                };
            }
        }
        if let Some(lost) = self.lost_at {
            if now >= lost + self.config.registration_timeout {
                // Spark waits for a master to come back; here no master can reach the client but
                // over a connection it opened, so waiting longer cannot help.
                self.give_up(format!(
                    "Disconnected from the master and no master took over within {:?}",
                    self.config.registration_timeout
                ));
            }
        }
    }

    fn poll_timeout(&self) -> Option<Instant> {
        let registration = match self.registration {
            Registration::Pending {
                next_retry,
                deadline,
            } if self.dialling == 0 => Some(next_retry.min(deadline)),
            Registration::Pending { next_retry, .. } => Some(next_retry),
            _ => None,
        };
        let lost = self.lost_at.map(|t| t + self.config.registration_timeout);
        match (registration, lost) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    fn poll(&mut self) -> Option<Output<DeployMessage, ClientEffect>> {
        self.out.pop_front()
    }
}

impl From<ConnInput<DeployMessage, ClientLink>> for ClientInput {
    fn from(input: ConnInput<DeployMessage, ClientLink>) -> ClientInput {
        ClientInput::Conn(input)
    }
}
