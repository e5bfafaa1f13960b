//! The handshake's error: every way the first frame each way can fail.

use std::time::Duration;

use super::answer::RefusalReason;
use crate::wire::FrameError;

/// A handshake that did not complete. The connection is closed afterwards.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum HandshakeError {
    /// The peer's first frame is not a sparkwire hello or answer: it is not a MessagePack map, or
    /// its `magic` key is missing or not `"sparkwire"`.
    #[error("the peer does not speak sparkwire: {}", found.as_deref().unwrap_or("its first frame has no magic value"))]
    BadMagic {
        /// What was found instead of the magic value, if anything.
        found: Option<String>,
    },

    /// The two sides have no protocol version in common.
    #[error("no protocol version in common: the client offers {offered:?}, the server speaks {supported:?}")]
    NoCommonVersion {
        /// Version numbers the client offered.
        offered: Vec<u64>,
        /// Version numbers the server speaks.
        supported: Vec<u64>,
    },

    /// The server does not take connections from a peer of this role.
    #[error("role {role:?} is not accepted here{}", family.map(|f| format!(" (it carries the {f} family)")).unwrap_or_default())]
    RoleNotAccepted {
        /// The role the client declared.
        role: String,
        /// The family that role carries; `None` for a role this side does not know.
        family: Option<&'static str>,
    },

    /// The server refused the client for a reason other than the version.
    #[error("the server refused the handshake ({reason}): {message}")]
    Refused {
        /// The reason given.
        reason: RefusalReason,
        /// The server's explanation.
        message: String,
    },

    /// The hello or answer has the magic value but is otherwise not as protocol/handshake.md says.
    #[error("malformed handshake frame: {0}")]
    Malformed(String),

    /// The handshake frame could not be read or written (too large, truncated, I/O).
    #[error("handshake frame: {0}")]
    Frame(#[from] FrameError),

    /// The peer closed the connection before sending its handshake frame.
    #[error("the peer closed the connection during the handshake")]
    PeerClosed,

    /// The handshake did not complete in time.
    #[error("the handshake did not complete within {after:?}")]
    TimedOut {
        /// The time allowed.
        after: Duration,
    },
}
