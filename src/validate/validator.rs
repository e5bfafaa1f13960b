//! The validator: takes events one at a time and returns the rules each one breaks.
//!
//! It checks what holds on every connection (ends, versions, routes, kinds, asks and replies) and
//! hands each message to the conversation it belongs to: the master's view of workers,
//! applications, executors and drivers ([`super::deploy`]) or a driver's view of its executors
//! and tasks ([`super::coarse`]).

use std::collections::{BTreeMap, HashMap};

use super::coarse::Backends;
use super::config::Config;
use super::conn::{
    AskDetail, Conn, ConnKind, Conversation, Delivery, PendingAsk, MAX_PENDING_ASKS,
};
use super::deploy::Cluster;
use super::event::{
    ConnId, Endpoint, EnvelopeRef, Event, EventBody, TaskPayloads, ValidatedFamily,
};
use super::history::History;
use super::obligations::Obligations;
use super::rules::Rule;
use super::sink::{Sink, What};
use super::spec::Specs;
use super::violation::{Entity, Violation};
use crate::definition::MessageKind;
use crate::messages::{Family, Version};
use crate::wire::{Envelope, Reply};

/// The state-machine validator. Sans-IO: it owns no socket and no clock; every verdict depends
/// only on the events it was fed, in order.
///
/// ```
/// use sparkwire::messages::{deploy::Heartbeat, DeployMessage, EndpointRef, Version};
/// use sparkwire::validate::{Endpoint, Rule, Validator};
/// use sparkwire::wire::handshake::Role;
/// use sparkwire::wire::Envelope;
///
/// let mut v = Validator::default();
/// let worker = Endpoint::new(Role::Worker, "worker-1");
/// let master = Endpoint::new(Role::Master, "master");
/// assert!(v.open(0, 1, &worker, &master, Version::V2).is_empty());
/// let beat = Envelope::Send(DeployMessage::Heartbeat(Heartbeat::new(
///     "worker-1".into(),
///     EndpointRef::client("Worker"),
/// )));
/// let verdicts = v.message(10, 1, &worker, &master, Version::V2, &beat);
/// assert_eq!(verdicts[0].rule, Rule::WorkerRegisterFirst);
/// ```
#[derive(Debug)]
pub struct Validator {
    config: Config,
    specs: &'static Specs,
    conns: HashMap<ConnId, Conn>,
    closed: History<ConnId>,
    cluster: Cluster,
    backends: Backends,
    obligations: Obligations,
    events: u64,
    last_time: u64,
    counts: BTreeMap<Rule, u64>,
}

impl Default for Validator {
    fn default() -> Self {
        Validator::new(Config::default())
    }
}

impl Validator {
    /// A validator with `config`, before any event.
    pub fn new(config: Config) -> Self {
        let cap = config.history_cap;
        Validator {
            specs: Specs::builtin(),
            conns: HashMap::new(),
            closed: History::new(cap),
            cluster: Cluster::new(cap),
            backends: Backends::new(cap),
            obligations: Obligations::new(cap),
            events: 0,
            last_time: 0,
            counts: BTreeMap::new(),
            config,
        }
    }

    /// The settings.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// How many events were fed so far.
    pub fn events(&self) -> u64 {
        self.events
    }

    /// How many violations of each rule were found so far, rules in catalogue order.
    pub fn counts(&self) -> &BTreeMap<Rule, u64> {
        &self.counts
    }

    /// How many connections are open.
    pub fn open_connections(&self) -> usize {
        self.conns.len()
    }

    /// Feeds one event; returns the violations it causes (empty when it is legal).
    pub fn observe(&mut self, event: &Event) -> Vec<Violation> {
        match &event.body {
            EventBody::Open {
                client,
                server,
                version,
                tasks,
            } => self.open_conn(event.time, event.conn, client, server, *version, *tasks),
            EventBody::Close => self.close(event.time, event.conn),
            EventBody::Message {
                from,
                to,
                version,
                envelope,
            } => match envelope.as_ref() {
                EnvelopeRef::Deploy(e) => {
                    self.message(event.time, event.conn, from, to, *version, e)
                }
                EnvelopeRef::Coarse(e) => {
                    self.message(event.time, event.conn, from, to, *version, e)
                }
            },
            EventBody::Outside { from, to, .. } => self.outside(event.time, event.conn, from, to),
        }
    }

    /// Feeds a frame outside the catalogue (Spark traffic sparkwire does not model): only the
    /// connection is checked, open (C2) with `from` and `to` its ends (C3).
    pub fn outside(
        &mut self,
        time: u64,
        conn_id: ConnId,
        from: &Endpoint,
        to: &Endpoint,
    ) -> Vec<Violation> {
        let mut sink = self.begin(time, Some(conn_id), What::Text("outside"));
        match self.conns.get(&conn_id) {
            None => sink.flag(
                Rule::ConnOpen,
                format!("frames only on an open connection; connection {conn_id} is not open"),
                Some(Entity::Connection(conn_id)),
            ),
            Some(conn) if conn.side_of(from, to).is_none() => sink.flag(
                Rule::ConnEndpoints,
                format!(
                    "a frame between {} and {}, the connection's ends; found {from} → {to}",
                    conn.ends[0], conn.ends[1]
                ),
                Some(Entity::Connection(conn_id)),
            ),
            Some(_) => {}
        }
        self.end(sink)
    }

    fn begin<'a>(&mut self, time: u64, conn: Option<ConnId>, what: What<'a>) -> Sink<'a> {
        let index = self.events;
        self.events += 1;
        let mut sink = Sink::new(Some(index), time, conn, what);
        if self.config.strict_order && time < self.last_time {
            let last = self.last_time;
            sink.flag(
                Rule::TraceTimeOrder,
                format!("a time of at least {last} ms, the previous event's"),
                None,
            );
        }
        self.last_time = self.last_time.max(time);
        // Timed obligations whose deadline the trace's clock has passed (rules L1, L2), and
        // ExecutorAdded messages whose LaunchExecutor did not come within the crossing window
        // (rule E4), are reported at the first event after it.
        self.obligations
            .overdue(self.last_time, &self.config, &mut sink);
        if !self.cluster.early_order.is_empty() {
            self.cluster
                .overdue_adds(self.last_time, &self.config, &mut sink);
        }
        sink
    }

    fn end(&mut self, sink: Sink<'_>) -> Vec<Violation> {
        for v in &sink.out {
            *self.counts.entry(v.rule).or_insert(0) += 1;
        }
        sink.out
    }

    /// Feeds a connection-opened event: `client` dialled `server` and they agreed on `version`.
    /// Its task payloads are sparkwire's ([`TaskPayloads::Sparkwire`]); [`observe`](Self::observe)
    /// an [`Event::open`] marked [`with_tasks`](Event::with_tasks) for others.
    pub fn open(
        &mut self,
        time: u64,
        conn: ConnId,
        client: &Endpoint,
        server: &Endpoint,
        version: Version,
    ) -> Vec<Violation> {
        self.open_conn(time, conn, client, server, version, TaskPayloads::Sparkwire)
    }

    /// Opens connection `conn`, whose task payloads are `tasks`'s.
    fn open_conn(
        &mut self,
        time: u64,
        conn: ConnId,
        client: &Endpoint,
        server: &Endpoint,
        version: Version,
        tasks: TaskPayloads,
    ) -> Vec<Violation> {
        let mut sink = self.begin(time, Some(conn), What::Text("open"));
        if self.conns.contains_key(&conn) || self.closed.contains(&conn) {
            sink.flag(
                Rule::ConnOpenOnce,
                format!("a connection id not used before (connection {conn} was already opened)"),
                Some(Entity::Connection(conn)),
            );
        }
        let new = Conn::new(client.clone(), server.clone(), version, tasks);
        if new.kind == ConnKind::WorkerMaster {
            if let Some(master) = new.end(crate::wire::handshake::Role::Master) {
                self.cluster.worker_side_seen(&master.id);
            }
        }
        if new.kind == ConnKind::Other {
            sink.flag(
                Rule::ConnKind,
                format!(
                    "a pair of roles that talk to each other, not {} and {}",
                    client.role, server.role
                ),
                Some(Entity::Connection(conn)),
            );
        }
        if let Some(old) = self.conns.insert(conn, new) {
            self.forget(conn, old, time);
        }
        self.end(sink)
    }

    /// Feeds a connection-closed event.
    pub fn close(&mut self, time: u64, conn: ConnId) -> Vec<Violation> {
        let mut sink = self.begin(time, Some(conn), What::Text("close"));
        match self.conns.remove(&conn) {
            Some(c) => {
                self.forget(conn, c, time);
                self.closed.insert(conn, ());
            }
            None => sink.flag(
                Rule::ConnOpen,
                format!("a close of an open connection; connection {conn} is not open"),
                Some(Entity::Connection(conn)),
            ),
        }
        self.end(sink)
    }

    /// What a connection's end means for the entities bound to it.
    fn forget(&mut self, id: ConnId, conn: Conn, time: u64) {
        self.obligations.closed(id);
        let driver = conn
            .end(crate::wire::handshake::Role::Driver)
            .map(|e| e.id.clone());
        match conn.conversation {
            Conversation::Worker(w) => {
                if let Some(worker) = w.worker {
                    self.cluster.worker_conn_closed(&worker, id, time);
                }
            }
            Conversation::App(a) => {
                if let Some(app) = a.app {
                    self.cluster.app_conn_closed(&app, id, time);
                }
            }
            Conversation::Executor(e) => {
                if let (Some(exec), Some(driver)) = (e.exec, driver) {
                    self.backends.executor_conn_closed(&driver, &exec, id);
                }
            }
            Conversation::ClusterManager(_) | Conversation::Plain => {}
        }
    }

    /// Feeds a message event: `env` went from `from` to `to` on `conn`, encoded in `version`.
    pub fn message<F: ValidatedFamily>(
        &mut self,
        time: u64,
        conn_id: ConnId,
        from: &Endpoint,
        to: &Endpoint,
        version: Version,
        env: &Envelope<F>,
    ) -> Vec<Violation> {
        let view = F::view(env);
        let mut sink = self.begin(time, Some(conn_id), What::Envelope(view));
        let Some(conn) = self.conns.get_mut(&conn_id) else {
            sink.flag(
                Rule::ConnOpen,
                format!("messages only on an open connection; connection {conn_id} is not open"),
                Some(Entity::Connection(conn_id)),
            );
            return self.end(sink);
        };
        let Some(side) = conn.side_of(from, to) else {
            sink.flag(
                Rule::ConnEndpoints,
                format!(
                    "a message between {} and {}, the connection's ends; found {from} → {to}",
                    conn.ends[0], conn.ends[1]
                ),
                Some(Entity::Connection(conn_id)),
            );
            return self.end(sink);
        };
        if version != conn.version {
            sink.flag(
                Rule::ConnVersion,
                format!(
                    "protocol {}, the connection's; found {version}",
                    conn.version
                ),
                Some(Entity::Connection(conn_id)),
            );
            return self.end(sink);
        }
        if F::FAMILY != from.role.family() {
            sink.flag(
                Rule::RouteDefined,
                format!(
                    "a {} message from a {}; {} speaks the {} family",
                    from.role.family(),
                    from.role,
                    from.role,
                    from.role.family()
                ),
                Some(Entity::Connection(conn_id)),
            );
            return self.end(sink);
        }
        if let Some(m) = env.message() {
            let hop = Hop {
                from,
                to,
                version,
                conn: conn_id,
            };
            if !route_ok(self.specs, &hop, m, env, &mut sink) {
                return self.end(sink);
            }
        }
        let answered = match env {
            Envelope::Ask { id, message } => {
                let pending = &mut conn.pending[side];
                if pending.contains_key(id) {
                    sink.flag(
                        Rule::AskUniqueId,
                        format!("an ask id not pending from {from}; #{id} is still unanswered"),
                        Some(Entity::Ask {
                            conn: conn_id,
                            id: *id,
                        }),
                    );
                }
                let reply = self
                    .specs
                    .get(F::FAMILY, message.name())
                    .and_then(|s| s.reply);
                if pending.len() < MAX_PENDING_ASKS || pending.contains_key(id) {
                    pending.insert(
                        *id,
                        PendingAsk {
                            name: message.name(),
                            reply,
                            detail: AskDetail::None,
                        },
                    );
                }
                None
            }
            Envelope::Reply { id, .. } | Envelope::Failure { id, .. } => {
                let Some(ask) = conn.pending[1 - side].remove(id) else {
                    sink.flag(
                        Rule::AskReplyPending,
                        format!(
                            "a reply to an ask of {to} pending on this connection; #{id} is not"
                        ),
                        Some(Entity::Ask {
                            conn: conn_id,
                            id: *id,
                        }),
                    );
                    return self.end(sink);
                };
                if let (Envelope::Reply { reply, .. }, Some(want)) = (env, ask.reply) {
                    if !want.accepts(reply) {
                        sink.flag(
                            Rule::AskReplyType,
                            format!(
                                "{} in reply to {}, found {}",
                                want.describe(),
                                ask.name,
                                describe_reply(reply)
                            ),
                            Some(Entity::Ask {
                                conn: conn_id,
                                id: *id,
                            }),
                        );
                        return self.end(sink);
                    }
                }
                Some(ask)
            }
            Envelope::Send(_) | Envelope::Close(_) => None,
        };
        match view {
            EnvelopeRef::Deploy(e) => {
                if let Some(m) = e.message() {
                    self.obligations.deploy(conn_id, from, to, m, time);
                }
            }
            EnvelopeRef::Coarse(e) => {
                if let Some(m) = e.message() {
                    self.obligations.coarse(from, to, m, &mut sink);
                }
            }
        }
        let delivery = Delivery {
            conn_id,
            side,
            answered,
            config: &self.config,
        };
        match view {
            EnvelopeRef::Deploy(e) => self.cluster.on_message(conn, e, delivery, &mut sink),
            EnvelopeRef::Coarse(e) => self.backends.on_message(conn, e, delivery, &mut sink),
        }
        self.end(sink)
    }

    /// What `debtor`, one end of open connection `conn`, still owes on it now: the answers a
    /// finished conversation owes that [`finish`](Self::finish) would report if the trace ended
    /// with the connection open (rules A4 for the asks of the other end, W3, N2, N3 and N4 for
    /// the messages sent to `debtor` on it). It changes nothing: a caller about to let go of a
    /// connection asks it to know whether the other end still has something to say, and what it
    /// failed to say once it stops waiting. Empty when the connection is not open or `debtor` is
    /// not one of its ends.
    pub fn owed_on(&self, conn: ConnId, debtor: &Endpoint) -> Vec<Violation> {
        let mut sink = Sink::new(
            None,
            self.last_time,
            Some(conn),
            What::Text("end of the conversation"),
        );
        let Some(c) = self.conns.get(&conn) else {
            return Vec::new();
        };
        let Some(side) = c.ends.iter().position(|e| e == debtor) else {
            return Vec::new();
        };
        let asker = 1 - side;
        let mut asks: Vec<(&u64, &PendingAsk)> = c.pending[asker].iter().collect();
        asks.sort_unstable_by_key(|(k, _)| **k);
        for (ask_id, ask) in asks {
            sink.flag(
                Rule::AskAnswered,
                format!(
                    "a reply or failure to {}'s ask #{ask_id} {} before the end",
                    c.ends[asker], ask.name
                ),
                Some(Entity::Ask { conn, id: *ask_id }),
            );
        }
        if let Conversation::Worker(w) = &c.conversation {
            if debtor.role == crate::wire::handshake::Role::Master {
                for reg in &w.pending {
                    sink.flag(
                        Rule::WorkerRegisterAnswer,
                        "a RegisterWorkerResponse to RegisterWorker before the end",
                        Some(Entity::Worker(reg.id.clone())),
                    );
                }
            }
        }
        self.obligations.owed_on(conn, debtor, &mut sink);
        if let (Conversation::Executor(e), crate::wire::handshake::Role::Executor) =
            (&c.conversation, debtor.role)
        {
            if let (Some(exec), Some(driver)) =
                (&e.exec, c.end(crate::wire::handshake::Role::Driver))
            {
                self.backends.owed_on(&driver.id, exec, conn, &mut sink);
            }
        }
        sink.out
    }

    /// Ends the trace: reports what a finished conversation still owes (`protocol/rules.md`, End
    /// of the trace): the asks and worker registrations unanswered on connections that are still
    /// open (rules A4 and W3), the timed obligations whose deadline the last event's time passed
    /// (rules L1 and L2) and, whatever their deadline, the RegisterApplication and LaunchExecutor
    /// messages unanswered on open connections (rules N3 and N4), the ExecutorAdded messages
    /// whose LaunchExecutor never came (rule E4 past the crossing window, N1 within it), and the
    /// tasks neither ended nor lost with their executor (rule N2). Asks on closed connections
    /// fail on the asker's side and are not reported.
    ///
    /// Call it once, after the last event, for a trace that holds whole conversations; a trace cut
    /// short (`sparkwire validate --allow-pending`) skips it.
    pub fn finish(&mut self) -> Vec<Violation> {
        let mut sink = Sink::new(None, self.last_time, None, What::Text("end of trace"));
        self.obligations
            .overdue(self.last_time, &self.config, &mut sink);
        self.cluster
            .overdue_adds(self.last_time, &self.config, &mut sink);
        let mut ids: Vec<ConnId> = self.conns.keys().copied().collect();
        ids.sort_unstable();
        for id in ids {
            let Some(conn) = self.conns.get(&id) else {
                continue;
            };
            sink.conn = Some(id);
            for side in 0..2 {
                let mut asks: Vec<(&u64, &PendingAsk)> = conn.pending[side].iter().collect();
                asks.sort_unstable_by_key(|(k, _)| **k);
                for (ask_id, ask) in asks {
                    sink.flag(
                        Rule::AskAnswered,
                        format!(
                            "a reply or failure to {}'s ask #{ask_id} {} before the end",
                            conn.ends[side], ask.name
                        ),
                        Some(Entity::Ask {
                            conn: id,
                            id: *ask_id,
                        }),
                    );
                }
            }
            if let Conversation::Worker(w) = &conn.conversation {
                for reg in &w.pending {
                    sink.flag(
                        Rule::WorkerRegisterAnswer,
                        "a RegisterWorkerResponse to RegisterWorker before the end",
                        Some(Entity::Worker(reg.id.clone())),
                    );
                }
            }
        }
        sink.conn = None;
        self.obligations.finish(&mut sink);
        self.cluster.finish(&mut sink);
        self.backends.finish(&mut sink);
        self.end(sink)
    }
}

fn describe_reply<F: Family>(reply: &Reply<F>) -> String {
    match reply {
        Reply::Message(m) => m.name().to_string(),
        other => format!("a {} reply", other.tag()),
    }
}

/// Where a message went: from one end of connection `conn` to the other, encoded in `version`.
struct Hop<'a> {
    from: &'a Endpoint,
    to: &'a Endpoint,
    version: Version,
    conn: ConnId,
}

/// Checks a message against the definition: version, locality, route and kind.
fn route_ok<F: Family>(
    specs: &Specs,
    hop: &Hop<'_>,
    m: &F,
    env: &Envelope<F>,
    sink: &mut Sink<'_>,
) -> bool {
    let Hop {
        from,
        to,
        version,
        conn,
    } = *hop;
    let entity = || Some(Entity::Connection(conn));
    if m.is_local() {
        sink.flag(
            Rule::RouteNoLocal,
            format!("no {}: it is local to one process", m.name()),
            entity(),
        );
        return false;
    }
    if !m.exists_in(version) {
        sink.flag(
            Rule::ConnVersion,
            format!(
                "a message of {version}; {} appeared in {}",
                m.name(),
                m.since()
            ),
            entity(),
        );
        return false;
    }
    let Some(spec) = specs.get(F::FAMILY, m.name()) else {
        return true;
    };
    if !spec.from.contains(&from.role) || !spec.to.contains(&to.role) {
        let names = |roles: &[crate::wire::handshake::Role]| {
            roles.iter().map(|r| r.name()).collect::<Vec<_>>().join("|")
        };
        sink.flag(
            Rule::RouteDefined,
            format!(
                "{} only from {} to {}; found {} → {}",
                m.name(),
                names(&spec.from),
                names(&spec.to),
                from.role,
                to.role
            ),
            entity(),
        );
        return false;
    }
    let carried = match env {
        Envelope::Send(_) => MessageKind::Send,
        Envelope::Ask { .. } => MessageKind::Ask,
        _ => MessageKind::Reply,
    };
    if carried != spec.kind_in(version) {
        sink.flag(
            Rule::RouteKind,
            format!(
                "{} as a {}, found it as a {}",
                m.name(),
                spec.kind_in(version).as_str(),
                carried.as_str()
            ),
            entity(),
        );
        return false;
    }
    true
}
