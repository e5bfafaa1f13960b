//! What the master's driver hears besides its connections: the leader election and the web
//! UI's requests. A leaf module: the listener, the dialler, the election and the web UI send
//! these to the driver without importing it.

use tokio::sync::oneshot;

use super::ha::LeaderEvent;
use crate::messages::DeployMessage;
use crate::node::master::DialTarget;
use crate::reference::webui::MasterSnapshot;

/// The master's own events.
pub(crate) enum Own {
    /// The leader election decided.
    Leader(LeaderEvent),
    /// The web UI asks for a snapshot.
    #[cfg_attr(not(feature = "webui"), allow(dead_code))]
    Snapshot(oneshot::Sender<MasterSnapshot>),
}

/// What the master's driver takes in: a connection's origin is the target it was dialled for
/// (`None`: accepted).
pub(crate) type Event = crate::reference::runtime::Event<DeployMessage, Option<DialTarget>, Own>;
