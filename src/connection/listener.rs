//! The limits a server puts on the connections it accepts: how many at once, how long a peer may
//! stay silent, how long a frame may take. One [`Admission`] per listener applies them all.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use super::config::{ConnectionConfig, DEFAULT_FRAME_READ_TIMEOUT};
use super::security::Security;
use crate::wire::handshake::{refuse_handshake, Identity, RefusalReason, Role};

/// The default limit of connections a server holds at once: 512, well under the 1,024 file
/// descriptors a process often gets, so that a full server still has descriptors to refuse with.
pub const DEFAULT_MAX_CONNECTIONS: usize = 512;

/// The default idle timeout of a peer that has not registered, or of a `ui` peer between its
/// requests: 60 seconds.
pub const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_secs(60);

/// How long a refused client has to send its hello before it is dropped unanswered.
const REFUSAL_TIMEOUT: Duration = Duration::from_secs(2);

/// How many refusals may be under way at once; beyond, new streams are closed unanswered.
const MAX_REFUSALS: usize = 64;

/// A server's limits on the connections it accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Connections held at once, handshakes under way included; one more is refused with
    /// `tooManyConnections` (protocol/handshake.md §5). Default [`DEFAULT_MAX_CONNECTIONS`].
    pub max_connections: usize,
    /// How long a peer that has not registered (or a `ui` peer between requests) may send
    /// nothing. Default [`DEFAULT_IDLE_TIMEOUT`].
    pub idle_timeout: Duration,
    /// How long a frame may take once its first byte arrived. Default
    /// [`DEFAULT_FRAME_READ_TIMEOUT`].
    pub frame_read_timeout: Duration,
    /// Bytes queued for one peer beyond which it is a slow consumer
    /// ([`ConnectionConfig::max_outgoing_bytes`]). Default
    /// [`DEFAULT_MAX_OUTGOING_BYTES`](super::DEFAULT_MAX_OUTGOING_BYTES).
    pub max_outgoing_bytes: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_connections: DEFAULT_MAX_CONNECTIONS,
            idle_timeout: DEFAULT_IDLE_TIMEOUT,
            frame_read_timeout: DEFAULT_FRAME_READ_TIMEOUT,
            max_outgoing_bytes: super::config::DEFAULT_MAX_OUTGOING_BYTES,
        }
    }
}

/// One connection's place under a listener's [`Limits::max_connections`], given back when the
/// connection closes (or when this is dropped).
pub struct Slot {
    _permit: OwnedSemaphorePermit,
}

impl fmt::Debug for Slot {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Slot")
    }
}

/// Applies a listener's [`Limits`] to the streams it accepts: a [`Slot`] for each, a refusal when
/// there is none left, and the timeouts of each connection's [`ConnectionConfig`].
///
/// ```
/// use sparkwire::connection::{Admission, Connection, ConnectionConfig, Limits, Security};
/// use sparkwire::messages::DeployMessage;
/// use sparkwire::wire::handshake::{Identity, Role};
///
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// let admission = Admission::new(Limits { max_connections: 1, ..Limits::default() });
/// let local = Identity::new(Role::Master, "master");
/// let (a, _client_a) = tokio::io::duplex(1024);
/// let (b, _client_b) = tokio::io::duplex(1024);
/// let kept = admission.admit(a, &local, &Security::default());
/// assert!(kept.is_some());
/// // The second is refused with tooManyConnections, in the background.
/// assert!(admission.admit(b, &local, &Security::default()).is_none());
/// let (_stream, slot) = kept.expect("admitted");
/// // The slot then goes into the connection's settings, with the timeouts.
/// let config: ConnectionConfig<DeployMessage> =
///     admission.configure(ConnectionConfig::default(), slot, Role::Ui);
/// assert_eq!(config.idle_timeout, Some(Limits::default().idle_timeout));
/// # });
/// ```
#[derive(Clone)]
pub struct Admission {
    slots: Arc<Semaphore>,
    refusals: Arc<Semaphore>,
    limits: Limits,
}

impl fmt::Debug for Admission {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Admission")
            .field("limits", &self.limits)
            .field("held", &self.held())
            .finish()
    }
}

impl Admission {
    /// Admission under `limits` (a `max_connections` of 0 counts as 1).
    pub fn new(limits: Limits) -> Self {
        Admission {
            slots: Arc::new(Semaphore::new(limits.max_connections.max(1))),
            refusals: Arc::new(Semaphore::new(MAX_REFUSALS)),
            limits,
        }
    }

    /// The limits applied.
    pub fn limits(&self) -> Limits {
        self.limits
    }

    /// Connections held now.
    pub fn held(&self) -> usize {
        self.limits
            .max_connections
            .max(1)
            .saturating_sub(self.slots.available_permits())
    }

    /// Takes a slot for `stream`, just accepted, and gives both back; or, when every slot is
    /// held, refuses it in a task of its own (with `security`'s TLS when configured): reads its
    /// hello for at most 2 s, answers `tooManyConnections` as `local`, closes. Never waits.
    /// Call it inside a tokio runtime.
    pub fn admit<IO>(&self, stream: IO, local: &Identity, security: &Security) -> Option<(IO, Slot)>
    where
        IO: AsyncRead + AsyncWrite + Unpin + Send + 'static,
    {
        if let Ok(permit) = Arc::clone(&self.slots).try_acquire_owned() {
            return Some((stream, Slot { _permit: permit }));
        }
        let Ok(refusing) = Arc::clone(&self.refusals).try_acquire_owned() else {
            // At the limit with refusals under way: closed unanswered (dropping the stream).
            return None;
        };
        let local = local.clone();
        let security = security.clone();
        let message = format!(
            "this server holds {} connections, its limit; try again later",
            self.limits.max_connections.max(1)
        );
        tokio::spawn(async move {
            let refuse = async {
                let stream = security.server_stream(stream).await?;
                Err::<(), _>(
                    refuse_handshake(stream, &local, RefusalReason::TooManyConnections, &message)
                        .await,
                )
            };
            // Whether the refused client heard the refusal matters to nobody here: the caller
            // logs the refusal, the client sees its connection closed either way.
            let _ = tokio::time::timeout(REFUSAL_TIMEOUT, refuse).await;
            drop(refusing);
        });
        None
    }

    /// `config` with `slot`, this admission's frame read timeout and outgoing byte limit, and
    /// the idle timeout for a peer of `peer_role`:
    ///
    /// - `ui` and `driverClient` peers: always (between their requests);
    /// - `worker` and `appClient` peers: until they have registered: the owner disarms it then
    ///   ([`set_idle_timeout(None)`](super::ConnectionHandle::set_idle_timeout));
    /// - `master` and `executor` peers: never (their silence is no sign of trouble: a master that
    ///   dialled a worker after a failover, an executor's watch connection).
    pub fn configure<F>(
        &self,
        config: ConnectionConfig<F>,
        slot: Slot,
        peer_role: Role,
    ) -> ConnectionConfig<F> {
        let idle = match peer_role {
            Role::Master | Role::Executor => None,
            _ => Some(self.limits.idle_timeout),
        };
        config
            .with_slot(slot)
            .with_idle_timeout(idle)
            .with_frame_read_timeout(self.limits.frame_read_timeout)
            .with_max_outgoing_bytes(self.limits.max_outgoing_bytes)
    }
}
