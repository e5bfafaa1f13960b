//! The permission to change the master's state from a UI: RequestKillAllDrivers,
//! DecommissionWorkersOnHosts and RequestClearCompletedDriversAndApps (protocol/SPEC.md,
//! "Authentication and permissions").
//!
//! With an admin secret configured, only a peer that proved it in the handshake may send them;
//! every other peer gets a failure reply and nothing changes. Without one, every peer that
//! passed the handshake may (as Spark with `spark.acls.enable` off): with a shared secret that
//! means every authenticated peer.

use super::MasterCore;
use crate::messages::{DeployMessage, ErrorDescription, Family};
use crate::node::ConnId;

/// True for the UI asks that change the master's state.
pub(crate) fn changes_state(m: &DeployMessage) -> bool {
    matches!(
        m,
        DeployMessage::RequestKillAllDrivers(_)
            | DeployMessage::DecommissionWorkersOnHosts(_)
            | DeployMessage::RequestClearCompletedDriversAndApps(_)
    )
}

impl MasterCore {
    /// Why `conn` may not send `m`, or `None` when it may.
    pub(crate) fn admin_refusal(
        &self,
        conn: ConnId,
        m: &DeployMessage,
    ) -> Option<ErrorDescription> {
        if !changes_state(m) || !self.config.admins_only {
            return None;
        }
        if self.conns.get(conn).is_some_and(|c| c.admin) {
            return None;
        }
        Some(ErrorDescription::new(
            "java.lang.SecurityException",
            format!(
                "Permission denied: {} changes the master's state and needs a peer that proved \
                 the admin secret in the handshake (--admin-secret-file)",
                m.name()
            ),
        ))
    }
}
