//! A connection's settings, and the inspection hook a validator plugs into.

use std::fmt;
use std::time::Duration;

use super::security::Security;
use crate::messages::Version;
use crate::wire::handshake::Secret;
use crate::wire::Envelope;
use crate::wire::DEFAULT_MAX_FRAME_SIZE;

/// Spark's default `spark.rpc.askTimeout`: 120 seconds.
pub const DEFAULT_ASK_TIMEOUT: Duration = Duration::from_secs(120);

/// The default time allowed for the handshake: 30 seconds.
pub const DEFAULT_HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(30);

/// The default number of frames queued for writing before senders wait.
pub const DEFAULT_OUTGOING_QUEUE: usize = 256;

/// Whether a frame arrives or leaves.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Direction {
    /// From the peer.
    Inbound,
    /// To the peer.
    Outbound,
}

impl fmt::Display for Direction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Direction::Inbound => "inbound",
            Direction::Outbound => "outbound",
        })
    }
}

/// Sees every envelope a connection receives or sends, in order, and may refuse it: the hook a
/// state-machine validator uses in strict mode.
///
/// `inbound` runs on each valid frame received, before the message is delivered or the reply
/// matched; an `Err` closes the connection with
/// [`ConnectionError::Rejected`](super::ConnectionError::Rejected). `outbound` runs on each
/// envelope about to be queued for sending, in the order they are written; an `Err` fails that
/// send with `Rejected` and leaves the connection open.
pub trait Inspector<F>: Send {
    /// Checks an envelope received.
    fn inbound(&mut self, env: &Envelope<F>) -> Result<(), String>;
    /// Checks an envelope about to be sent.
    fn outbound(&mut self, env: &Envelope<F>) -> Result<(), String>;
}

/// A connection's settings.
pub struct ConnectionConfig<F> {
    /// Versions this side speaks; the handshake picks the highest both sides speak.
    pub versions: Vec<Version>,
    /// The largest frame body sent or accepted after the handshake, in bytes: the counterpart of
    /// Spark's `spark.rpc.message.maxSize`. Default 128 MiB.
    pub max_frame_size: usize,
    /// How long an ask waits for its reply: Spark's `spark.rpc.askTimeout`. Default 120 s.
    pub ask_timeout: Duration,
    /// How long the handshake may take. Default 30 s.
    pub handshake_timeout: Duration,
    /// Frames queued for writing before senders wait. Default 256.
    pub outgoing_queue: usize,
    /// The inspector, if any (strict mode).
    pub inspector: Option<Box<dyn Inspector<F>>>,
    /// The shared secret, admin secret and TLS settings used by [`Connection::connect`] and
    /// [`Connection::accept`](super::Connection::accept). Default: none.
    ///
    /// [`Connection::connect`]: super::Connection::connect
    pub security: Security,
}

impl<F> Default for ConnectionConfig<F> {
    fn default() -> Self {
        ConnectionConfig {
            versions: Version::ALL.to_vec(),
            max_frame_size: DEFAULT_MAX_FRAME_SIZE,
            ask_timeout: DEFAULT_ASK_TIMEOUT,
            handshake_timeout: DEFAULT_HANDSHAKE_TIMEOUT,
            outgoing_queue: DEFAULT_OUTGOING_QUEUE,
            inspector: None,
            security: Security::default(),
        }
    }
}

impl<F> ConnectionConfig<F> {
    /// Speaks only `versions`.
    pub fn with_versions(mut self, versions: &[Version]) -> Self {
        self.versions = versions.to_vec();
        self
    }

    /// Uses `max_frame_size` as the frame limit.
    pub fn with_max_frame_size(mut self, max_frame_size: usize) -> Self {
        self.max_frame_size = max_frame_size;
        self
    }

    /// Waits `ask_timeout` for replies.
    pub fn with_ask_timeout(mut self, ask_timeout: Duration) -> Self {
        self.ask_timeout = ask_timeout;
        self
    }

    /// Allows `handshake_timeout` for the handshake.
    pub fn with_handshake_timeout(mut self, handshake_timeout: Duration) -> Self {
        self.handshake_timeout = handshake_timeout;
        self
    }

    /// Authenticates with the shared secret `secret` (protocol/handshake.md §10): the handshake
    /// then completes only with a peer that proves the same secret.
    pub fn with_secret(mut self, secret: Secret) -> Self {
        self.security.secret = Some(secret);
        self
    }

    /// Uses these security settings (secret, admin secret, TLS).
    pub fn with_security(mut self, security: Security) -> Self {
        self.security = security;
        self
    }

    /// Inspects every envelope with `inspector` (strict mode).
    pub fn with_inspector(mut self, inspector: impl Inspector<F> + 'static) -> Self {
        self.inspector = Some(Box::new(inspector));
        self
    }
}

impl<F> fmt::Debug for ConnectionConfig<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ConnectionConfig")
            .field("versions", &self.versions)
            .field("max_frame_size", &self.max_frame_size)
            .field("ask_timeout", &self.ask_timeout)
            .field("handshake_timeout", &self.handshake_timeout)
            .field("outgoing_queue", &self.outgoing_queue)
            .field("inspector", &self.inspector.as_ref().map(|_| "set"))
            .field("security", &self.security)
            .finish()
    }
}
