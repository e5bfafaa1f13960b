//! Authorization of what a peer sends, shared by the reference endpoints (SPEC §14).
//!
//! Two checks run on every message an endpoint receives, in the default mode as in `--strict`:
//!
//! 1. **Routes.** The message's route in `protocol/definition.json` must name the sending
//!    connection's role among its senders and this endpoint's role among its receivers, and the
//!    message must arrive as the protocol uses it (asked, or sent one-way). [`route`] decides.
//! 2. **Ownership.** An id a message acts on must be bound to the connection it arrives on: an
//!    application client acts only on the application it registered, a worker only on itself,
//!    a driver client only on drivers it submitted, an executor only on itself. Each endpoint
//!    checks what it binds; a refusal is a [`Refusal::NotOwner`].
//!
//! A refused ask is answered with a failure ([`Refusal::failure`]); a refused one-way message
//! closes its connection, the refusal logged as the reason and sent to the peer in a close
//! envelope ([`Refusal::close_reason`]) when the handshake agreed on it. Nothing the refused message asked
//! for happens.
//!
//! ```
//! use sparkwire::node::authz::{route, Refusal};
//! use sparkwire::wire::handshake::Role;
//!
//! // A worker may send Heartbeat to the master, one-way …
//! assert!(route(Role::Worker, Role::Master, "deploy", "Heartbeat", false).is_ok());
//! // … but not register an application.
//! let refused = route(Role::Worker, Role::Master, "deploy", "RegisterApplication", false);
//! assert!(matches!(refused, Err(Refusal::Route { .. })));
//! ```

use crate::definition::{Definition, MessageKind};
use crate::messages::ErrorDescription;
use crate::wire::handshake::Role;

/// Why an endpoint refused a message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    /// The protocol has no route for this message from the sender's role to this endpoint.
    #[error("a {from} may not send {message} to a {to}")]
    Route {
        /// The sending connection's role.
        from: Role,
        /// This endpoint's role.
        to: Role,
        /// The message's name.
        message: String,
    },
    /// The message arrived one-way where the protocol asks it, or asked where it is one-way.
    #[error("{message} arrived as {arrived}, but the protocol uses it as {expected}")]
    Kind {
        /// The message's name.
        message: String,
        /// `an ask` or `a one-way message`.
        arrived: &'static str,
        /// How the protocol uses it.
        expected: &'static str,
    },
    /// The message is taken only over one connection (the one to the master a worker registered
    /// with, say), and came over another.
    #[error("{message} is taken only from {expected}")]
    WrongPeer {
        /// The message's name.
        message: &'static str,
        /// Where it is taken from.
        expected: &'static str,
    },
    /// The message acts on an id bound to another connection, or on behalf of another peer.
    #[error("{message} names {what} {id}, which this connection did not register")]
    NotOwner {
        /// The message's name.
        message: &'static str,
        /// What the id names: `application`, `worker`, `driver`, `executor`.
        what: &'static str,
        /// The id.
        id: String,
    },
}

impl Refusal {
    /// The failure a refused ask is answered with: `org.apache.spark.SparkException` for a
    /// message off the protocol's routes, `java.lang.SecurityException` for a foreign id.
    pub fn failure(&self) -> ErrorDescription {
        let class = match self {
            Refusal::Route { .. } | Refusal::Kind { .. } => "org.apache.spark.SparkException",
            Refusal::NotOwner { .. } | Refusal::WrongPeer { .. } => "java.lang.SecurityException",
        };
        ErrorDescription::new(class, self.to_string())
    }

    /// The error kind of SPEC §14.3 this refusal has in a close envelope and in logs: `NotOnRoute`
    /// for a message off the protocol's routes (§14.1), `NotOwner` for a foreign id (§14.2).
    pub fn kind(&self) -> &'static str {
        match self {
            Refusal::Route { .. } | Refusal::Kind { .. } => "NotOnRoute",
            Refusal::NotOwner { .. } | Refusal::WrongPeer { .. } => "NotOwner",
        }
    }

    /// What a refused one-way message closes its connection with: a close envelope of the
    /// refusal's kind and text (SPEC §8.1, §14.3).
    pub fn close_reason(&self) -> crate::wire::CloseReason {
        crate::wire::CloseReason::new(self.kind(), self.to_string())
    }

    /// A [`Refusal::NotOwner`].
    pub fn not_owner(message: &'static str, what: &'static str, id: impl Into<String>) -> Self {
        Refusal::NotOwner {
            message,
            what,
            id: id.into(),
        }
    }
}

/// Whether the protocol routes `message` of `family` from a `from` peer to a `to` endpoint, used
/// as it arrived (`asked`: an ask; otherwise one-way). A message one version sends one-way and
/// another asks (ExecutorStateChanged) is taken both ways.
pub fn route(
    from: Role,
    to: Role,
    family: &str,
    message: &str,
    asked: bool,
) -> Result<(), Refusal> {
    let refused = || Refusal::Route {
        from,
        to,
        message: message.to_string(),
    };
    let def = Definition::builtin()
        .message(family, message)
        .ok_or_else(refused)?;
    let names = |roles: &[String], role: Role| roles.iter().any(|r| r == role.name());
    if !names(&def.from, from) || !names(&def.to, to) {
        return Err(refused());
    }
    let kinds = [Some(def.kind), def.kind_v1];
    let wanted = if asked {
        MessageKind::Ask
    } else {
        MessageKind::Send
    };
    if kinds.contains(&Some(wanted)) {
        return Ok(());
    }
    let used = |k: MessageKind| match k {
        MessageKind::Ask => "an ask",
        MessageKind::Send => "a one-way message",
        MessageKind::Reply => "a reply",
        MessageKind::Local => "a local message",
    };
    Err(Refusal::Kind {
        message: message.to_string(),
        arrived: used(wanted),
        expected: used(def.kind),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn routes_follow_the_definition() {
        assert!(route(
            Role::AppClient,
            Role::Master,
            "deploy",
            "KillExecutors",
            true
        )
        .is_ok());
        assert!(route(Role::Ui, Role::Master, "deploy", "RequestMasterState", true).is_ok());
        assert!(route(
            Role::DriverClient,
            Role::Master,
            "deploy",
            "RequestMasterState",
            true
        )
        .is_ok());
        assert!(route(
            Role::Worker,
            Role::Master,
            "deploy",
            "RequestMasterState",
            true
        )
        .is_err());
        assert!(route(
            Role::Master,
            Role::Worker,
            "deploy",
            "LaunchExecutor",
            false
        )
        .is_ok());
        assert!(route(Role::Ui, Role::Worker, "deploy", "LaunchExecutor", false).is_err());
        assert!(route(
            Role::Executor,
            Role::Driver,
            "coarse",
            "StatusUpdate",
            false
        )
        .is_ok());
        assert!(route(Role::Worker, Role::Master, "deploy", "NoSuchMessage", false).is_err());
    }

    #[test]
    fn a_message_must_arrive_as_the_protocol_uses_it() {
        let sent = route(
            Role::AppClient,
            Role::Master,
            "deploy",
            "KillExecutors",
            false,
        );
        assert!(matches!(sent, Err(Refusal::Kind { .. })), "{sent:?}");
        let asked = route(Role::Worker, Role::Master, "deploy", "Heartbeat", true);
        assert!(matches!(asked, Err(Refusal::Kind { .. })), "{asked:?}");
        // Version 1 sends it one-way, version 2 asks it.
        for asked in [true, false] {
            assert!(route(
                Role::Worker,
                Role::Master,
                "deploy",
                "ExecutorStateChanged",
                asked
            )
            .is_ok());
        }
    }

    #[test]
    fn refused_asks_fail_with_a_class_saying_why() {
        let r = Refusal::not_owner("KillExecutors", "application", "app-1");
        assert_eq!(r.failure().class_name, "java.lang.SecurityException");
        assert_eq!(
            r.to_string(),
            "KillExecutors names application app-1, which this connection did not register"
        );
    }
}
