//! The handshake's decisions, without IO: what a server answers to a hello, and what a client
//! makes of the answer.

use super::answer::{decode_answer, negotiate, Accepted, Answer, Refusal, RefusalReason};
use super::error::HandshakeError;
use super::hello::{decode_hello, Hello};
use super::role::Role;
use crate::messages::Version;

/// One side of a handshake: its role, its id and the versions it speaks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Identity {
    /// The side's role.
    pub role: Role,
    /// The side's id (worker id, application id, executor id, …).
    pub id: String,
    /// Versions the side speaks.
    pub versions: Vec<Version>,
}

impl Identity {
    /// An identity speaking every version this crate knows.
    pub fn new(role: Role, id: impl Into<String>) -> Self {
        Identity {
            role,
            id: id.into(),
            versions: Version::ALL.to_vec(),
        }
    }

    /// The same identity speaking only `versions`.
    pub fn with_versions(mut self, versions: &[Version]) -> Self {
        self.versions = versions.to_vec();
        self
    }

    /// The versions as numbers, as they go on the wire.
    pub fn version_numbers(&self) -> Vec<u64> {
        self.versions
            .iter()
            .map(|v| u64::from(v.number()))
            .collect()
    }

    /// The hello this identity sends as a client.
    pub fn hello(&self) -> Hello {
        Hello::new(&self.versions, self.role, self.id.clone())
    }
}

/// What a completed handshake settled.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Negotiated {
    /// The version both sides encode and decode with from now on.
    pub version: Version,
    /// The peer's role.
    pub peer_role: Role,
    /// The peer's id.
    pub peer_id: String,
    /// Version numbers the peer speaks.
    pub peer_versions: Vec<u64>,
}

/// The server's decision on a hello frame body: the answer to send, and the outcome for the
/// server (the negotiated parameters, or why it refused).
///
/// `accept` says which client roles this server takes.
pub fn answer_hello(
    body: &[u8],
    local: &Identity,
    accept: impl Fn(Role) -> bool,
) -> (Answer, Result<Negotiated, HandshakeError>) {
    let versions = local.version_numbers();
    let refuse = |reason: RefusalReason, error: HandshakeError| {
        let refusal = Refusal {
            reason,
            message: error.to_string(),
            versions: versions.clone(),
        };
        (Answer::Refused(refusal), Err(error))
    };
    let hello = match decode_hello(body) {
        Ok(hello) => hello,
        Err(e @ HandshakeError::BadMagic { .. }) => return refuse(RefusalReason::BadMagic, e),
        Err(e @ HandshakeError::RoleNotAccepted { .. }) => {
            return refuse(RefusalReason::RoleNotAccepted, e)
        }
        Err(e) => return refuse(RefusalReason::MalformedHello, e),
    };
    if !accept(hello.role) {
        let error = HandshakeError::RoleNotAccepted {
            role: hello.role.name().to_string(),
            family: Some(hello.role.family()),
        };
        return refuse(RefusalReason::RoleNotAccepted, error);
    }
    let Some(version) = negotiate(&hello.versions, &local.versions) else {
        let error = HandshakeError::NoCommonVersion {
            offered: hello.versions,
            supported: versions.clone(),
        };
        return refuse(RefusalReason::NoCommonVersion, error);
    };
    let answer = Answer::Accepted(Accepted {
        version,
        versions: versions.clone(),
        role: local.role,
        id: local.id.clone(),
    });
    let negotiated = Negotiated {
        version,
        peer_role: hello.role,
        peer_id: hello.id,
        peer_versions: hello.versions,
    };
    (answer, Ok(negotiated))
}

/// The client's reading of the answer frame body to `hello`.
///
/// A refusal for want of a common version is [`HandshakeError::NoCommonVersion`]; other refusals
/// are [`HandshakeError::Refused`]. An acceptance must choose a version the hello offered.
pub fn check_answer(body: &[u8], hello: &Hello) -> Result<Negotiated, HandshakeError> {
    match decode_answer(body)? {
        Answer::Accepted(a) => {
            if !hello.versions.contains(&u64::from(a.version.number())) {
                return Err(HandshakeError::Malformed(format!(
                    "the server chose {}, which the client did not offer ({:?})",
                    a.version, hello.versions
                )));
            }
            Ok(Negotiated {
                version: a.version,
                peer_role: a.role,
                peer_id: a.id,
                peer_versions: a.versions,
            })
        }
        Answer::Refused(r) if r.reason == RefusalReason::NoCommonVersion => {
            Err(HandshakeError::NoCommonVersion {
                offered: hello.versions.clone(),
                supported: r.versions,
            })
        }
        Answer::Refused(r) => Err(HandshakeError::Refused {
            reason: r.reason,
            message: r.message,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::handshake::{encode_answer, encode_hello};

    fn body(hello: &Hello) -> Vec<u8> {
        let mut out = Vec::new();
        encode_hello(hello, &mut out);
        out
    }

    #[test]
    fn server_accepts_at_the_highest_common_version_and_client_agrees() {
        let server = Identity::new(Role::Master, "master");
        let client = Identity::new(Role::Worker, "w-1").with_versions(&[Version::V1]);
        let hello = client.hello();
        let (answer, outcome) = answer_hello(&body(&hello), &server, |r| r == Role::Worker);
        let negotiated = outcome.ok();
        assert_eq!(negotiated.as_ref().map(|n| n.version), Some(Version::V1));
        assert_eq!(negotiated.map(|n| n.peer_id), Some("w-1".to_string()));
        let mut answer_body = Vec::new();
        encode_answer(&answer, &mut answer_body);
        let client_side = check_answer(&answer_body, &hello);
        assert_eq!(
            client_side.map(|n| (n.version, n.peer_role)),
            Ok((Version::V1, Role::Master))
        );
    }

    #[test]
    fn server_refuses_roles_it_does_not_take_and_versions_it_does_not_speak() {
        let server = Identity::new(Role::Master, "m").with_versions(&[Version::V2]);
        let executor = Identity::new(Role::Executor, "1").hello();
        let (answer, outcome) = answer_hello(&body(&executor), &server, |r| r == Role::Worker);
        assert!(matches!(
            answer,
            Answer::Refused(Refusal {
                reason: RefusalReason::RoleNotAccepted,
                ..
            })
        ));
        assert!(matches!(
            outcome,
            Err(HandshakeError::RoleNotAccepted {
                family: Some("coarse"),
                ..
            })
        ));

        let old = Identity::new(Role::Worker, "w")
            .with_versions(&[Version::V1])
            .hello();
        let (answer, outcome) = answer_hello(&body(&old), &server, |_| true);
        assert!(matches!(
            answer,
            Answer::Refused(Refusal {
                reason: RefusalReason::NoCommonVersion,
                ..
            })
        ));
        assert_eq!(
            outcome,
            Err(HandshakeError::NoCommonVersion {
                offered: vec![1],
                supported: vec![2]
            })
        );
        let mut answer_body = Vec::new();
        encode_answer(&answer, &mut answer_body);
        assert_eq!(
            check_answer(&answer_body, &old),
            Err(HandshakeError::NoCommonVersion {
                offered: vec![1],
                supported: vec![2]
            })
        );
    }

    #[test]
    fn client_refuses_an_answer_choosing_a_version_it_did_not_offer() {
        let hello = Identity::new(Role::Worker, "w")
            .with_versions(&[Version::V1])
            .hello();
        let answer = Answer::Accepted(Accepted {
            version: Version::V2,
            versions: vec![2],
            role: Role::Master,
            id: String::new(),
        });
        let mut answer_body = Vec::new();
        encode_answer(&answer, &mut answer_body);
        assert!(matches!(
            check_answer(&answer_body, &hello),
            Err(HandshakeError::Malformed(_))
        ));
    }
}
