//! Where a leader that took over turns to tell a recovered Spark-wire peer of the change.
//!
//! A worker or an application that registered through the master's Spark-wire front
//! (`--spark-port`) is a Spark process: its recorded endpoint speaks Spark's RPC, not sparkwire's
//! handshake, so the master's own dial of it (to send `MasterChanged`, Spark's beginRecovery)
//! fails. With a [`SparkPeerDial`] installed (by whoever runs the front), such a failed dial is
//! handed to it instead of being given up: it sends `MasterChanged` over Spark's wire, and the
//! peer's answer (`WorkerSchedulerStateResponse`, `MasterChangeAcknowledged`) comes back
//! through the front like any other message of a Spark peer.

use std::sync::{Arc, OnceLock};

use crate::messages::Addr;
use crate::node::master::DialTarget;

/// What announces the master to a recovered peer at an address over another wire.
pub type SparkDialFn = dyn Fn(Addr, DialTarget) + Send + Sync;

/// A slot for the Spark-wire dial of recovered peers, shared between the master (which hands
/// failed dials to it) and the front (which fills it once it listens). Empty by default.
#[derive(Clone, Default)]
pub struct SparkPeerDial(Arc<OnceLock<Arc<SparkDialFn>>>);

impl std::fmt::Debug for SparkPeerDial {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SparkPeerDial")
            .field("installed", &self.0.get().is_some())
            .finish()
    }
}

impl SparkPeerDial {
    /// Installs the dial; the first one installed stays. Whether this one was installed.
    pub fn install(&self, dial: Arc<SparkDialFn>) -> bool {
        self.0.set(dial).is_ok()
    }

    /// Hands a dial that failed over sparkwire's wire to the installed one. Whether there was one.
    pub(crate) fn hand_over(&self, addr: Addr, target: DialTarget) -> bool {
        match self.0.get() {
            Some(dial) => {
                dial(addr, target);
                true
            }
            None => false,
        }
    }
}
