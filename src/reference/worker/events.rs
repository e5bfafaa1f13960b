//! What the worker's parts tell each other, in a module of its own so that none depends on
//! another's internals: the loop's inbox ([`WEvent`], filled by the listener, the dialer, the
//! process runner and the web UI) and the plain facts the core is told about ([`Purpose`],
//! [`RunKey`], [`Ended`]).

use crate::validate::ConnId;
use tokio::sync::oneshot;

use crate::connection::{ConnectionError, Incoming};
use crate::messages::{Addr, DeployMessage};
use crate::reference::outbox::{Credit, Peer};
use crate::wire::handshake::Role;

/// Why a connection to or from a master exists.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Purpose {
    /// The worker dialled this master to register.
    Registration(Addr),
    /// A master or a UI dialled the worker.
    Inbound,
}

/// What a process runs for.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) enum RunKey {
    /// An application's executor.
    Executor(String, i32),
    /// A driver.
    Driver(String),
}

impl std::fmt::Display for RunKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RunKey::Executor(app, id) => write!(f, "executor {app}/{id}"),
            RunKey::Driver(id) => write!(f, "driver {id}"),
        }
    }
}

/// How a process ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Ended {
    /// It exited (or was killed) with this status.
    Exited {
        /// Exit code; 128 + the signal for a process ended by a signal, as the JVM reports it.
        code: i32,
        /// Killed on the worker's request.
        killed: bool,
    },
    /// It could not be started (again).
    Failed(String),
}

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
