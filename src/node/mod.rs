//! Layer 5: the protocol cores of every role, with no runtime.
//!
//! A core is a state machine fed [`Core::handle`] with what happened and the time it happened,
//! and drained with [`Core::poll`] of what it wants done, in the order it decided it. It reads no
//! clock, opens no socket and starts no process: whoever drives it (the async runtime in
//! `reference`, or the in-memory [`sim::Cluster`]) owns all of that and reports back as inputs. A core
//! asks to be woken with [`Core::poll_timeout`] and is woken with [`Core::handle_timeout`].
//!
//! Every core speaks to its peers through one type, [`ConnOutput`]: send, ask, reply, fail or
//! close on a connection named by its [`ConnId`], the id its driver chose when the connection
//! opened. Everything else a core wants done (dial, persist a record, start a process) is its
//! role's own [`Core::Effect`]. Every core hears of its connections through one type too,
//! [`ConnInput`] (opened, a dial failed, a message, an ask, an ask's answer, closed), carried in
//! its `Input` as a variant `Conn`, so that one driver can feed any core.
//!
//! ```
//! use std::time::Instant;
//! use sparkwire::node::{ConnOutput, Core, Output};
//!
//! /// Answers every ping with a pong on the same connection.
//! #[derive(Default)]
//! struct Echo {
//!     out: std::collections::VecDeque<Output<&'static str, ()>>,
//! }
//!
//! impl Core for Echo {
//!     type Message = &'static str;
//!     type Input = (u64, &'static str);
//!     type Effect = ();
//!     fn handle(&mut self, _now: Instant, (conn, message): Self::Input) {
//!         if message == "ping" {
//!             self.out.push_back(Output::Conn(ConnOutput::Send { conn, message: "pong" }));
//!         }
//!     }
//!     fn handle_timeout(&mut self, _now: Instant) {}
//!     fn poll_timeout(&self) -> Option<Instant> {
//!         None
//!     }
//!     fn poll(&mut self) -> Option<Output<&'static str, ()>> {
//!         self.out.pop_front()
//!     }
//! }
//!
//! let mut echo = Echo::default();
//! echo.handle(Instant::now(), (7, "ping"));
//! assert_eq!(
//!     echo.poll(),
//!     Some(Output::Conn(ConnOutput::Send { conn: 7, message: "pong" }))
//! );
//! assert_eq!(echo.poll(), None);
//! ```

pub mod authz;
pub mod clock;
pub mod driver;
pub mod executor;
pub mod master;
pub mod plant;
pub mod redact;
pub mod sim;
pub mod url;
pub mod violations;
pub mod worker;

use std::time::Instant;

use crate::messages::{ErrorDescription, Version};
pub use crate::validate::ConnId;
use crate::wire::handshake::Role;
use crate::wire::{CloseReason, Reply};

/// A protocol core: one role's state and rules, fed events and time, drained of what to do.
pub trait Core {
    /// What its connections carry (`DeployMessage` or `CoarseMessage`).
    type Message;
    /// What happened, for the core to handle.
    type Input;
    /// What the core wants done besides writing on its connections.
    type Effect;

    /// Handles `input`, which happened at `now`.
    fn handle(&mut self, now: Instant, input: Self::Input);

    /// Handles the timeout it asked for with [`Core::poll_timeout`], now due.
    fn handle_timeout(&mut self, now: Instant);

    /// When it next wants [`Core::handle_timeout`], if ever.
    fn poll_timeout(&self) -> Option<Instant>;

    /// The next thing it wants done, in the order it decided it.
    fn poll(&mut self) -> Option<Output<Self::Message, Self::Effect>>;
}

/// What a core wants done.
#[derive(Debug, Clone, PartialEq)]
pub enum Output<M, E> {
    /// Write on (or close) one of its connections.
    Conn(ConnOutput<M>),
    /// Its role's own effect.
    Effect(E),
}

/// What a core wants written on one of its connections: the one type every core uses.
#[derive(Debug, Clone, PartialEq)]
pub enum ConnOutput<M> {
    /// A one-way message.
    Send {
        /// Which connection.
        conn: ConnId,
        /// The message.
        message: M,
    },
    /// An ask; its answer comes back as the role's input naming `id`.
    Ask {
        /// Which connection.
        conn: ConnId,
        /// The ask's id, unique on that connection, chosen by the core.
        id: u64,
        /// The message.
        message: M,
    },
    /// The answer to the peer's ask.
    Reply {
        /// Which connection.
        conn: ConnId,
        /// The ask's id.
        id: u64,
        /// The answer.
        reply: Reply<M>,
    },
    /// The peer's ask refused.
    Fail {
        /// Which connection.
        conn: ConnId,
        /// The ask's id.
        id: u64,
        /// Why.
        error: ErrorDescription,
    },
    /// Close the connection once what was queued on it before is written, telling the peer why
    /// in a close envelope (SPEC §8.1) when there is a reason and the handshake agreed on it.
    Close {
        /// Which connection.
        conn: ConnId,
        /// What the peer is told, if anything.
        reason: Option<CloseReason>,
    },
    /// Drop the connection now, without writing what is queued (its peer does not read).
    Abort {
        /// Which connection.
        conn: ConnId,
    },
}

impl<M> ConnOutput<M> {
    /// The connection it is for.
    pub fn conn(&self) -> ConnId {
        match self {
            ConnOutput::Send { conn, .. }
            | ConnOutput::Ask { conn, .. }
            | ConnOutput::Reply { conn, .. }
            | ConnOutput::Fail { conn, .. }
            | ConnOutput::Close { conn, .. }
            | ConnOutput::Abort { conn } => *conn,
        }
    }
}

/// Who is at the other end of a connection, as its handshake said.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PeerInfo {
    /// The peer's role.
    pub role: Role,
    /// The id of the peer's hello.
    pub id: String,
    /// The peer's address (`host:port`), for logs.
    pub addr: String,
    /// The protocol version the handshake agreed on.
    pub version: Version,
    /// The peer proved the admin secret (server side).
    pub admin: bool,
    /// The connection's frame limit.
    pub max_frame_size: usize,
}

/// Why an ask of the core's ([`ConnOutput::Ask`]) has no reply.
#[derive(Debug, Clone, PartialEq)]
pub enum AskFailure {
    /// The peer failed it, saying why.
    Failed(ErrorDescription),
    /// The connection failed it (closed, timed out, …).
    Lost(String),
}

impl std::fmt::Display for AskFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            AskFailure::Failed(error) => write!(f, "the ask failed on the peer: {error}"),
            AskFailure::Lost(why) => f.write_str(why),
        }
    }
}

/// What happens on a core's connections: the one connection input every core takes (as its
/// `Input`'s variant `Conn`), whoever drives it. `O` is the role's reason for a connection (why it
/// was dialled, or that it was accepted).
#[derive(Debug, Clone, PartialEq)]
pub enum ConnInput<M, O> {
    /// A connection completed its handshake.
    Opened {
        /// The id its driver gave it.
        conn: ConnId,
        /// Who is at the other end.
        peer: PeerInfo,
        /// Why it exists (what the core dialled it for, or that it was accepted).
        origin: O,
    },
    /// A connection the core asked for could not be made (or its handshake failed).
    DialFailed {
        /// What it was dialled for.
        origin: O,
        /// Why, a sentence naming the address.
        error: String,
    },
    /// A one-way message arrived.
    Message {
        /// On which connection.
        conn: ConnId,
        /// The message.
        message: M,
    },
    /// An ask arrived; the core answers it with [`ConnOutput::Reply`] or [`ConnOutput::Fail`].
    Ask {
        /// On which connection.
        conn: ConnId,
        /// The ask's id on that connection.
        id: u64,
        /// The message.
        message: M,
    },
    /// The answer to the core's own ask ([`ConnOutput::Ask`]), or why there is none.
    Answer {
        /// On which connection.
        conn: ConnId,
        /// The ask's id, as the core chose it.
        id: u64,
        /// The reply, or why there is none.
        answer: Result<Reply<M>, AskFailure>,
    },
    /// A connection closed, for any reason (a [`ConnOutput::Close`] included). Its driver logs
    /// a close for a protocol error.
    Closed {
        /// Which.
        conn: ConnId,
        /// Why, for the log.
        reason: String,
    },
}
