//! What the tokio side of the master hears: connections opening, what they carry, their close,
//! the leader election and the web UI's requests. A leaf module: the listener, the dialler, the
//! election and the web UI send these to the loop without importing it.

use crate::validate::ConnId;
use tokio::sync::oneshot;

use super::ha::LeaderEvent;
use crate::connection::Incoming;
use crate::messages::DeployMessage;
use crate::node::master::DialTarget;
use crate::reference::outbox::{Credit, Peer};
use crate::reference::webui::MasterSnapshot;
use crate::wire::handshake::Role;

/// What the loop handles.
#[allow(clippy::large_enum_variant)] // as the message enums: boxing would cost an allocation per message
pub(crate) enum Event {
    /// A connection is up (accepted, or dialled for a target).
    Opened(Opened, Option<DialTarget>),
    /// A message or ask arrived on a connection (its credit is dropped once the core handled it,
    /// which lets that connection read on).
    Incoming(ConnId, Incoming<DeployMessage>, Credit),
    /// A connection closed, and why.
    Closed(ConnId, crate::connection::ConnectionError),
    /// The leader election decided.
    Leader(LeaderEvent),
    /// The web UI asks for a snapshot.
    #[cfg_attr(not(feature = "webui"), allow(dead_code))]
    Snapshot(oneshot::Sender<MasterSnapshot>),
}

impl From<LeaderEvent> for Event {
    fn from(e: LeaderEvent) -> Event {
        Event::Leader(e)
    }
}

/// A connection the master opened or took, ready for the loop.
pub(crate) struct Opened {
    pub(crate) conn: ConnId,
    pub(crate) peer: Peer,
    pub(crate) role: Role,
    pub(crate) peer_id: String,
    /// The peer's address (`host:port`).
    pub(crate) addr: String,
    /// The peer proved the admin secret.
    pub(crate) admin: bool,
}
