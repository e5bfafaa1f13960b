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

    /// The server has a shared secret and the client did not ask to authenticate: an older
    /// client, or one configured without the secret.
    #[error("this side requires authentication with a shared secret and the peer did not offer it (an older peer, or one without the secret)")]
    AuthRequired,

    /// The client asked to authenticate and the server has no shared secret.
    #[error(
        "the peer asks to authenticate with a shared secret and this side has none configured"
    )]
    AuthNotConfigured,

    /// A proof did not verify: the peer does not hold the same secret, or the exchange was
    /// altered or replayed.
    #[error("authentication failed: {0}")]
    AuthFailed(String),

    /// This side has a shared secret and the server accepted the hello without proving that it
    /// holds it (an older sparkwire server, or one without a secret). No envelope is exchanged
    /// with such a peer: there is no silent downgrade.
    #[error("the server accepted without authenticating; this side has a shared secret and refuses to go on unauthenticated (is the server older, or run without --secret-file?)")]
    Unauthenticated,

    /// TLS could not be set up on the connection (feature `tls`): no certificate, a certificate
    /// the other side does not trust, a peer that does not speak TLS, …
    #[error("TLS: {0}")]
    Tls(String),

    /// The operating system's random source failed, so no nonce could be made.
    #[error("no random nonce: {0}")]
    Random(String),

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
