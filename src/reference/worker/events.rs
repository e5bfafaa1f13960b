//! What the worker's driver hears besides its connections: processes ending and the web UI's
//! requests. A leaf module: the listener, the dialer, the process runner and the web UI send
//! these to the driver without importing it.

use tokio::sync::oneshot;

use crate::messages::DeployMessage;
use crate::node::worker::{Ended, Purpose, RunKey};

/// The worker's own events.
pub(crate) enum Own {
    /// A process ended.
    Ended(RunKey, Ended),
    /// The web UI asks for a snapshot.
    #[cfg_attr(not(feature = "webui"), allow(dead_code))]
    Snapshot(oneshot::Sender<crate::reference::webui::WorkerSnapshot>),
}

/// What the worker's driver takes in: a connection's origin is why it exists.
pub(crate) type WEvent = crate::reference::runtime::Event<DeployMessage, Purpose, Own>;
