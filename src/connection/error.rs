//! The connection layer's error: every way a connection or one of its operations can fail.

use std::io;
use std::time::Duration;

use super::config::Direction;
use crate::messages::ErrorDescription;
use crate::wire::handshake::{HandshakeError, Role};
use crate::wire::{CloseReason, FrameError};

/// A connection that failed, or one operation on it that failed.
///
/// Some errors close the connection (see [`ConnectionError::closes_connection`]): every later
/// operation then fails with the same error, and [`Connection::recv`](super::Connection::recv)
/// returns it once the messages received before it are consumed. The others fail only the
/// operation. Either way no other connection is affected.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum ConnectionError {
    /// The handshake failed (bad magic, no common version, refused role, …). Closes.
    #[error("handshake failed: {0}")]
    Handshake(#[from] HandshakeError),

    /// A role whose connections carry another family than this connection's. Closes.
    #[error("role {role} carries the {} family, not the {family} family of this connection", role.family())]
    WrongFamily {
        /// The role.
        role: Role,
        /// The family this connection carries.
        family: &'static str,
    },

    /// A frame from the peer is invalid: declared over the limit, truncated at the end of the
    /// stream, not MessagePack, an unknown message, a message absent from the negotiated version,
    /// a local message, or the stream failed. Closes.
    #[error("bad frame from the peer: {0}")]
    Inbound(FrameError),

    /// A message could not be sent: its frame is over the limit, or the message is local or absent
    /// from the negotiated version. Nothing was written; the connection stays open.
    #[error("cannot send: {0}")]
    Outbound(FrameError),

    /// The peer replied to an ask id this side never used (or no longer remembers). Closes.
    #[error("protocol error: the peer replied to ask {id}, which was never asked")]
    UnknownAsk {
        /// The id in the reply.
        id: u64,
    },

    /// The peer replied a second time to an ask already answered. Closes.
    #[error("protocol error: the peer replied twice to ask {id}")]
    DuplicateReply {
        /// The ask's id.
        id: u64,
    },

    /// The peer sent an ask with the id of one of its asks still awaiting an answer. Closes.
    #[error("protocol error: the peer reused the id {id} of an ask still awaiting its answer")]
    DuplicateAsk {
        /// The id.
        id: u64,
    },

    /// A reply or failure to an incoming ask that is not awaiting one (never received, or already
    /// answered). Nothing was sent; the connection stays open.
    #[error("no incoming ask {id} awaits an answer")]
    NoSuchAsk {
        /// The id given.
        id: u64,
    },

    /// No reply arrived in time (`spark.rpc.askTimeout`, sparkwire's
    /// `ConnectionConfig::ask_timeout`). The connection stays open; a late reply is dropped.
    #[error("ask {id} ({name}) got no reply within {after:?} (spark.rpc.askTimeout)")]
    AskTimedOut {
        /// The ask's id.
        id: u64,
        /// The message asked.
        name: &'static str,
        /// The time waited.
        after: Duration,
    },

    /// The peer answered the ask with a failure. The connection stays open.
    #[error("ask {id} failed on the peer: {error}")]
    Remote {
        /// The ask's id.
        id: u64,
        /// The failure, as the peer described it.
        error: ErrorDescription,
    },

    /// The connection's inspector refused a message. Inbound: the connection closes. Outbound:
    /// nothing was sent and the connection stays open.
    #[error("{direction} {name} rejected by the inspector: {reason}")]
    Rejected {
        /// Whether the message was arriving or leaving.
        direction: Direction,
        /// What the frame carries (message name, `reply` or `failure`).
        name: &'static str,
        /// The inspector's reason.
        reason: String,
    },

    /// No connection could be made: the address refused it, did not resolve, or did not answer
    /// in time. Nothing was sent.
    #[error("cannot connect to {address}: {reason}")]
    Connect {
        /// `host:port`.
        address: String,
        /// Why, in words (`connection refused`, `timed out after 10 s`, …).
        reason: String,
    },

    /// Writing to the stream failed. Closes.
    #[error("cannot write to the peer: {message}")]
    Io {
        /// The kind of I/O error.
        kind: io::ErrorKind,
        /// Its text.
        message: String,
    },

    /// The peer does not read: more than `limit` bytes are queued for it (a slow consumer). Closes.
    #[error("slow consumer: the peer does not read ({queued} bytes queued for it, the limit is {limit})")]
    SlowConsumer {
        /// Bytes that would be queued with the frame refused.
        queued: usize,
        /// The connection's limit (`ConnectionConfig::max_outgoing_bytes`).
        limit: usize,
    },

    /// While this side awaited a reply, the peer sent more than `limit` messages that the owner
    /// had not taken. Closes.
    #[error(
        "the peer sent over {limit} messages the owner has not taken while a reply was awaited"
    )]
    InboundOverflow {
        /// The bound (twice `ConnectionConfig::incoming_queue`).
        limit: usize,
    },

    /// The peer has more than `limit` asks awaiting this side's answer. Closes.
    #[error("the peer has over {limit} asks awaiting an answer")]
    TooManyAsks {
        /// The bound (`ConnectionConfig::max_peer_asks`).
        limit: usize,
    },

    /// A frame had begun to arrive and was not complete `after` its first byte (a peer that
    /// trickles its frames). Closes.
    #[error("a frame from the peer did not complete within {after:?} of its first byte")]
    FrameTimedOut {
        /// `ConnectionConfig::frame_read_timeout`.
        after: Duration,
    },

    /// Nothing arrived from the peer for `after` (the idle timeout). Closes.
    #[error("the peer sent nothing for {after:?} (idle timeout)")]
    Idle {
        /// The idle timeout.
        after: Duration,
    },

    /// The peer closed the connection (at a frame boundary).
    #[error("the peer closed the connection")]
    PeerClosed,

    /// The peer closed the connection and said why in its last frame, a close envelope (SPEC
    /// §8.1): the error kind, its message and, for a decoding error, where in the frame.
    #[error("the peer closed the connection: {0}")]
    ClosedByPeer(CloseReason),

    /// This side closed the connection.
    #[error("the connection was closed by this side")]
    Closed,
}

impl ConnectionError {
    /// True for errors that close the connection; false for errors that fail one operation only.
    pub fn closes_connection(&self) -> bool {
        match self {
            ConnectionError::Outbound(_)
            | ConnectionError::NoSuchAsk { .. }
            | ConnectionError::AskTimedOut { .. }
            | ConnectionError::Remote { .. } => false,
            ConnectionError::Rejected { direction, .. } => *direction == Direction::Inbound,
            _ => true,
        }
    }
}

impl ConnectionError {
    /// What this side tells the peer in a close envelope when this error closes the connection
    /// (SPEC §8.1): the decoding errors, an oversized frame, the ask errors, a message the
    /// inspector refused, and the limits. `None` for the others: the peer or the stream has
    /// gone, or this side closed for its own reasons.
    pub fn reason_for_peer(&self) -> Option<CloseReason> {
        let kind = match self {
            ConnectionError::Inbound(e) => return CloseReason::frame(e),
            ConnectionError::UnknownAsk { .. } => "UnknownAsk",
            ConnectionError::DuplicateReply { .. } => "DuplicateReply",
            ConnectionError::DuplicateAsk { .. } => "DuplicateAsk",
            ConnectionError::Rejected {
                direction: Direction::Inbound,
                ..
            } => "RuleViolation",
            ConnectionError::SlowConsumer { .. } => "SlowConsumer",
            ConnectionError::InboundOverflow { .. } => "InboundOverflow",
            ConnectionError::TooManyAsks { .. } => "TooManyAsks",
            ConnectionError::FrameTimedOut { .. } => "FrameTimedOut",
            ConnectionError::Idle { .. } => "Idle",
            _ => return None,
        };
        Some(CloseReason::new(kind, self.to_string()))
    }

    /// A failed connection attempt to `address`, named as such: `cannot connect to HOST:PORT:
    /// connection refused`.
    pub fn connect(address: impl Into<String>, error: &io::Error) -> Self {
        ConnectionError::Connect {
            address: address.into(),
            reason: describe_io(error),
        }
    }
}

/// An I/O error in words: the error kind for the common network failures (`connection
/// refused`), the system's text otherwise (a name that does not resolve).
pub fn describe_io(error: &io::Error) -> String {
    use io::ErrorKind as K;
    match error.kind() {
        K::ConnectionRefused
        | K::ConnectionReset
        | K::ConnectionAborted
        | K::NotConnected
        | K::AddrNotAvailable
        | K::TimedOut
        | K::BrokenPipe => error.kind().to_string(),
        _ => error.to_string(),
    }
}

impl From<io::Error> for ConnectionError {
    fn from(e: io::Error) -> Self {
        ConnectionError::Io {
            kind: e.kind(),
            message: e.to_string(),
        }
    }
}
