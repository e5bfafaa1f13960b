//! What the worker's parts tell each other, in a module of its own so that none depends on
//! another's internals: the loop's inbox ([`WEvent`], filled by the listener, the dialer, the
//! process runner and the web UI).

use crate::validate::ConnId;
use tokio::sync::oneshot;

use crate::connection::{ConnectionError, Incoming};
use crate::messages::{Addr, DeployMessage};
use crate::node::worker::{Ended, Purpose, RunKey};
use crate::reference::outbox::{Credit, Peer};
use crate::wire::handshake::Role;

/// What the worker's loop takes in.
#[allow(clippy::large_enum_variant)] // as the message enums: boxing would cost an allocation per message
pub(crate) enum WEvent {
    /// A connection is up.
    Opened {
        conn: ConnId,
        peer: Peer,
        role: Role,
        purpose: Purpose,
        /// The peer's address and the id of its hello.
        addr: String,
        peer_id: String,
    },
    /// A message or ask arrived (its credit is dropped once the core handled it, which lets
    /// that connection read on).
    Incoming(ConnId, Incoming<DeployMessage>, Credit),
    /// A connection closed, and why.
    Closed(ConnId, crate::connection::ConnectionError),
    /// A process ended.
    Ended(RunKey, Ended),
    /// The web UI asks for a snapshot.
    #[cfg_attr(not(feature = "webui"), allow(dead_code))]
    Snapshot(oneshot::Sender<crate::reference::webui::WorkerSnapshot>),
    /// A master could not be reached.
    DialFailed(Addr, ConnectionError),
}
