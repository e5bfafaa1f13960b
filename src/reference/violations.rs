//! How a connection's end is logged: one limited WARN line (the [`node::violations`] limit)
//! for a protocol error or a peer's close reason, anything else at debug level.
//!
//! [`node::violations`]: crate::node::violations

use std::fmt;

use crate::connection::ConnectionError;
use crate::node::violations::{warn, Peer};

/// The error kind a connection error is logged with, and whether it is one: the errors this side
/// tells the peer about (SPEC §8.1), and the reason a peer gave for closing on this side. `None`
/// for the ordinary ends of a connection (the peer went, this side closed, I/O failed).
pub(crate) fn kind_of(error: &ConnectionError) -> Option<String> {
    match error {
        ConnectionError::ClosedByPeer(reason) => Some(reason.kind.clone()),
        other => other.reason_for_peer().map(|r| r.kind),
    }
}

/// Logs how a connection ended when that was a protocol error or a peer's close reason (one
/// WARN line, limited); anything else at debug level.
pub(crate) fn connection_ended(peer: Peer<'_>, error: &ConnectionError) {
    match kind_of(error) {
        Some(kind) => {
            let what = match error {
                ConnectionError::ClosedByPeer(_) => "the peer closed the connection",
                _ => "closing the connection",
            };
            let reason: &dyn fmt::Display = match error {
                ConnectionError::ClosedByPeer(reason) => &reason.message,
                other => other,
            };
            warn(peer, what, &kind, reason);
        }
        None => tracing::debug!(
            peer = peer.addr,
            conn = peer.conn,
            reason = %error,
            "connection ended"
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn protocol_errors_and_peer_reasons_have_a_kind_ordinary_ends_none() {
        use crate::wire::CloseReason;
        assert_eq!(
            kind_of(&ConnectionError::UnknownAsk { id: 3 }).as_deref(),
            Some("UnknownAsk")
        );
        assert_eq!(
            kind_of(&ConnectionError::ClosedByPeer(CloseReason::new(
                "NotOwner", "x"
            )))
            .as_deref(),
            Some("NotOwner")
        );
        assert_eq!(kind_of(&ConnectionError::PeerClosed), None);
        assert_eq!(kind_of(&ConnectionError::Closed), None);
    }
}
