//! What the validator is fed: connection opened, connection closed, or a message envelope that
//! went from one endpoint to the other, each stamped with a time the caller supplies.

use std::fmt;

use crate::messages::{CoarseMessage, DeployMessage, Family, Version};
use crate::wire::handshake::Role;
use crate::wire::Envelope;

/// A connection's id: unique among the connections of one trace, or of one process.
pub type ConnId = u64;

/// One end of a connection: a role and the id of the process playing it.
///
/// Ids are labels the observer gives processes (a worker's id, an application's id, `master-1`, …).
/// The validator takes entity ids (worker ids, app ids, executor ids) from the messages; it uses
/// endpoint ids only to tell masters apart and to scope executor and task ids to their driver.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Endpoint {
    /// The role.
    pub role: Role,
    /// The process's id.
    pub id: String,
}

impl Endpoint {
    /// An endpoint of `role` with id `id`.
    pub fn new(role: Role, id: impl Into<String>) -> Self {
        Endpoint {
            role,
            id: id.into(),
        }
    }
}

impl fmt::Display for Endpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.role, self.id)
    }
}

/// An envelope of either family.
#[derive(Debug, Clone, PartialEq)]
#[allow(clippy::large_enum_variant)] // as the family enums: boxing would cost an allocation per event
pub enum AnyEnvelope {
    /// A deploy-family envelope (master, workers, application and driver clients, UIs).
    Deploy(Envelope<DeployMessage>),
    /// A coarse-grained-family envelope (driver, executors, cluster managers).
    Coarse(Envelope<CoarseMessage>),
}

/// A family the validator checks: lets generic code hand it envelopes without copying them.
pub trait ValidatedFamily: Family {
    /// Wraps an envelope of this family.
    fn wrap(env: Envelope<Self>) -> AnyEnvelope;
    /// Borrows the envelope as one of either family.
    fn view(env: &Envelope<Self>) -> EnvelopeRef<'_>;
}

/// A borrowed envelope of either family.
#[derive(Debug, Clone, Copy)]
pub enum EnvelopeRef<'a> {
    /// Deploy family.
    Deploy(&'a Envelope<DeployMessage>),
    /// Coarse-grained family.
    Coarse(&'a Envelope<CoarseMessage>),
}

impl ValidatedFamily for DeployMessage {
    fn wrap(env: Envelope<Self>) -> AnyEnvelope {
        AnyEnvelope::Deploy(env)
    }
    fn view(env: &Envelope<Self>) -> EnvelopeRef<'_> {
        EnvelopeRef::Deploy(env)
    }
}

impl ValidatedFamily for CoarseMessage {
    fn wrap(env: Envelope<Self>) -> AnyEnvelope {
        AnyEnvelope::Coarse(env)
    }
    fn view(env: &Envelope<Self>) -> EnvelopeRef<'_> {
        EnvelopeRef::Coarse(env)
    }
}

impl AnyEnvelope {
    /// Borrows it.
    pub fn as_ref(&self) -> EnvelopeRef<'_> {
        match self {
            AnyEnvelope::Deploy(e) => EnvelopeRef::Deploy(e),
            AnyEnvelope::Coarse(e) => EnvelopeRef::Coarse(e),
        }
    }
}

impl EnvelopeRef<'_> {
    /// The family's name: `deploy` or `coarse`.
    pub fn family(&self) -> &'static str {
        match self {
            EnvelopeRef::Deploy(_) => DeployMessage::FAMILY,
            EnvelopeRef::Coarse(_) => CoarseMessage::FAMILY,
        }
    }

    /// A short description for verdicts: the message name, or `reply #id` / `failure #id`.
    pub fn label(&self) -> String {
        fn of<F: Family>(e: &Envelope<F>) -> String {
            match e {
                Envelope::Send(m) | Envelope::Ask { message: m, .. } => m.name().to_string(),
                Envelope::Reply {
                    id,
                    reply: crate::wire::Reply::Message(m),
                } => format!("reply #{id} {}", m.name()),
                Envelope::Reply { id, reply } => format!("reply #{id} ({})", reply.tag()),
                Envelope::Failure { id, .. } => format!("failure #{id}"),
                Envelope::Close(reason) => format!("close ({})", reason.kind),
            }
        }
        match self {
            EnvelopeRef::Deploy(e) => of(*e),
            EnvelopeRef::Coarse(e) => of(*e),
        }
    }
}

/// One event of a trace.
#[derive(Debug, Clone, PartialEq)]
pub struct Event {
    /// When it happened, in milliseconds on the observer's clock.
    pub time: u64,
    /// The connection it happened on.
    pub conn: ConnId,
    /// What happened.
    pub body: EventBody,
}

/// What happened on a connection.
#[derive(Debug, Clone, PartialEq)]
#[allow(clippy::large_enum_variant)] // messages are most events: boxing would cost an allocation each
pub enum EventBody {
    /// The connection was opened by `client`, which dialled `server`.
    Open {
        /// The endpoint that dialled.
        client: Endpoint,
        /// The endpoint that accepted.
        server: Endpoint,
        /// The protocol version the two agreed on.
        version: Version,
        /// Whose task descriptions the connection's LaunchTask and StatusUpdate payloads are.
        tasks: TaskPayloads,
    },
    /// The connection closed (either end, for any reason).
    Close,
    /// An envelope went from `from` to `to`.
    Message {
        /// The sender.
        from: Endpoint,
        /// The receiver.
        to: Endpoint,
        /// The protocol version it was encoded in.
        version: Version,
        /// The envelope.
        envelope: AnyEnvelope,
    },
    /// A frame of Spark traffic outside sparkwire's catalogue went from `from` to `to`
    /// (`protocol/trace.md`, "Traffic outside the catalogue"). The validator checks only that the
    /// connection is open and `from` and `to` are its ends.
    Outside {
        /// The sender.
        from: Endpoint,
        /// The receiver.
        to: Endpoint,
        /// What the frame was.
        frame: OutsideFrame,
    },
}

/// Whose task descriptions a connection's LaunchTask and StatusUpdate payloads are
/// (`protocol/trace.md`, "Connection events").
///
/// With [`Sparkwire`](Self::Sparkwire) the validator reads each LaunchTask with its configured
/// task decoder ([`Config::task_decoder`](super::Config::task_decoder)); with
/// [`Spark`](Self::Spark) it reads none, whatever the configuration: tasks are counted per
/// executor and StatusUpdate's `taskCpus` gives their cpus. Only executor–driver connections carry
/// tasks; on others it changes nothing.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum TaskPayloads {
    /// sparkwire's own task descriptions (protocol/SPEC.md §10), or whatever the configured
    /// decoder reads.
    #[default]
    Sparkwire,
    /// Spark's own bytes (its serialized `TaskDescription` and task results), as on a real Spark
    /// cluster's wire.
    Spark,
}

impl TaskPayloads {
    /// The name in traces: `sparkwire` or `spark`.
    pub fn as_str(self) -> &'static str {
        match self {
            TaskPayloads::Sparkwire => "sparkwire",
            TaskPayloads::Spark => "spark",
        }
    }

    /// The kind named `name`.
    pub fn from_name(name: &str) -> Option<Self> {
        [TaskPayloads::Sparkwire, TaskPayloads::Spark]
            .into_iter()
            .find(|t| t.as_str() == name)
    }
}

// --- Traffic outside the catalogue (Spark's own wire; see protocol/trace.md) ---

/// Why a frame is outside sparkwire's catalogue.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum OutsideStatus {
    /// Spark traffic sparkwire does not model (endpoint checks, BlockManager, heartbeats, block
    /// transfer, …), recognised by its class or frame type.
    Outside,
    /// A class the decoder does not know.
    Unknown,
    /// A frame or message that could not be decoded (`detail` says why).
    Undecoded,
}

impl OutsideStatus {
    /// The name in traces: `outside`, `unknown` or `undecoded`.
    pub fn as_str(self) -> &'static str {
        match self {
            OutsideStatus::Outside => "outside",
            OutsideStatus::Unknown => "unknown",
            OutsideStatus::Undecoded => "undecoded",
        }
    }

    /// The status named `name`.
    pub fn from_name(name: &str) -> Option<Self> {
        [
            OutsideStatus::Outside,
            OutsideStatus::Unknown,
            OutsideStatus::Undecoded,
        ]
        .into_iter()
        .find(|s| s.as_str() == name)
    }
}

/// A frame outside the catalogue, as a trace records it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutsideFrame {
    /// Spark's transport frame type (`RpcRequest`, `ChunkFetchSuccess`, …).
    pub transport: String,
    /// The request id, for RPC requests, responses and failures.
    pub id: Option<u64>,
    /// The receiving endpoint's name, for RPC requests and one-way messages.
    pub endpoint: Option<String>,
    /// The message's class, when known.
    pub class: Option<String>,
    /// Why it is outside.
    pub status: OutsideStatus,
    /// What went wrong, for `Undecoded`.
    pub detail: Option<String>,
    /// The frame's length on the wire.
    pub bytes: u64,
}

// --- end of traffic outside the catalogue ---

impl Event {
    /// An open event, its task payloads sparkwire's ([`TaskPayloads::Sparkwire`]; see
    /// [`with_tasks`](Self::with_tasks)).
    pub fn open(
        time: u64,
        conn: ConnId,
        client: Endpoint,
        server: Endpoint,
        version: Version,
    ) -> Self {
        Event {
            time,
            conn,
            body: EventBody::Open {
                client,
                server,
                version,
                tasks: TaskPayloads::Sparkwire,
            },
        }
    }

    /// The event with its connection's task payloads set to `tasks`, when it is an open event;
    /// any other event is returned unchanged.
    ///
    /// ```
    /// use sparkwire::messages::Version;
    /// use sparkwire::validate::{Endpoint, Event, EventBody, TaskPayloads};
    /// use sparkwire::wire::handshake::Role;
    ///
    /// let executor = Endpoint::new(Role::Executor, "0");
    /// let driver = Endpoint::new(Role::Driver, "10.0.0.1:7078");
    /// let open = Event::open(0, 1, executor, driver, Version::V2).with_tasks(TaskPayloads::Spark);
    /// assert!(matches!(open.body, EventBody::Open { tasks: TaskPayloads::Spark, .. }));
    /// assert_eq!(Event::close(1, 1).with_tasks(TaskPayloads::Spark), Event::close(1, 1));
    /// ```
    #[must_use]
    pub fn with_tasks(mut self, tasks: TaskPayloads) -> Self {
        if let EventBody::Open { tasks: t, .. } = &mut self.body {
            *t = tasks;
        }
        self
    }

    /// A close event.
    pub fn close(time: u64, conn: ConnId) -> Self {
        Event {
            time,
            conn,
            body: EventBody::Close,
        }
    }

    /// A message event.
    pub fn message<F: ValidatedFamily>(
        time: u64,
        conn: ConnId,
        from: Endpoint,
        to: Endpoint,
        version: Version,
        envelope: Envelope<F>,
    ) -> Self {
        Event {
            time,
            conn,
            body: EventBody::Message {
                from,
                to,
                version,
                envelope: F::wrap(envelope),
            },
        }
    }
}
