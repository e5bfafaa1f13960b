//! The handshake's decisions, without IO: what a server answers to a hello (and, with a shared
//! secret, to the client's proof), and what a client makes of the server's frames.

use super::answer::{decode_answer, negotiate, Accepted, Answer, Refusal, RefusalReason};
use super::auth::{
    admin_proof, challenge_from, client_proof, decode_proof, encode_challenge, encode_proof,
    frame_bytes, server_proof, verify_admin_proof, verify_client_proof, verify_server_proof,
    Challenge, Nonce, Proof, Secret,
};
use super::error::HandshakeError;
use super::hello::{decode_hello, Hello};
use super::map::Entries;
use super::role::Role;
use crate::messages::Version;

/// One side of a handshake: its role, its id, the versions it speaks, and its secrets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Identity {
    /// The side's role.
    pub role: Role,
    /// The side's id (worker id, application id, executor id, …).
    pub id: String,
    /// Versions the side speaks.
    pub versions: Vec<Version>,
    /// The shared secret (protocol/handshake.md §10). With one, this side exchanges envelopes
    /// only with a peer that proved it holds the same secret.
    pub secret: Option<Secret>,
    /// The admin secret. A client proves it in the handshake to be allowed state-changing UI
    /// actions; a server verifies it. Only used together with `secret`.
    pub admin_secret: Option<Secret>,
    /// Whether this side offers (as a client) or takes (as a server) the `closeReason` feature:
    /// a last frame saying why a connection closes (protocol/handshake.md §12, SPEC §8.1).
    pub close_reason: bool,
}

impl Identity {
    /// An identity speaking every version this crate knows, without secrets.
    pub fn new(role: Role, id: impl Into<String>) -> Self {
        Identity {
            role,
            id: id.into(),
            versions: Version::ALL.to_vec(),
            secret: None,
            admin_secret: None,
            close_reason: true,
        }
    }

    /// The same identity, offering or taking the `closeReason` feature or not.
    pub fn with_close_reason(mut self, close_reason: bool) -> Self {
        self.close_reason = close_reason;
        self
    }

    /// The features this identity offers as a client.
    fn features(&self) -> &'static [&'static str] {
        if self.close_reason {
            &[CLOSE_REASON]
        } else {
            &[]
        }
    }

    /// The same identity speaking only `versions`.
    pub fn with_versions(mut self, versions: &[Version]) -> Self {
        self.versions = versions.to_vec();
        self
    }

    /// The same identity holding the shared secret `secret` (or none).
    pub fn with_secret(mut self, secret: Option<Secret>) -> Self {
        self.secret = secret;
        self
    }

    /// The same identity holding the admin secret `admin_secret` (or none).
    pub fn with_admin_secret(mut self, admin_secret: Option<Secret>) -> Self {
        self.admin_secret = admin_secret;
        self
    }

    /// The versions as numbers, as they go on the wire.
    pub fn version_numbers(&self) -> Vec<u64> {
        self.versions
            .iter()
            .map(|v| u64::from(v.number()))
            .collect()
    }

    /// The hello this identity sends as a client, without authentication.
    pub fn hello(&self) -> Hello {
        Hello::new(&self.versions, self.role, self.id.clone()).with_features(self.features())
    }

    /// The hello this identity sends as a client: asking to authenticate with `nonce` when it
    /// holds a secret.
    pub fn hello_with_nonce(&self, nonce: Nonce) -> Hello {
        let hello = self.hello();
        if self.secret.is_some() {
            hello.with_auth(nonce)
        } else {
            hello
        }
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
    /// Both sides proved they hold the shared secret.
    pub authenticated: bool,
    /// (Server side) the client also proved the admin secret.
    pub admin: bool,
    /// Both sides agreed on the `closeReason` feature: each may send a close envelope, its last
    /// frame, saying why it closes the connection (SPEC §8.1).
    pub close_reason: bool,
}

/// The name of the feature by which both sides agree to send a close envelope before closing
/// a connection for an error (protocol/handshake.md §12, SPEC §8.1).
pub const CLOSE_REASON: &str = "closeReason";

/// What a server does once it has read the hello.
#[derive(Debug)]
pub enum ServerHello {
    /// Send this answer; with `Err` the connection closes after it.
    Answer(Answer, Result<Negotiated, HandshakeError>),
    /// Send [`ServerAuth::challenge_body`], read the client's proof frame and decide with
    /// [`ServerAuth::finish`].
    Challenge(ServerAuth),
}

/// A server halfway through authentication: the challenge sent, the proof awaited.
#[derive(Debug)]
pub struct ServerAuth {
    hello: Hello,
    hello_frame: Vec<u8>,
    challenge_body: Vec<u8>,
}

fn refusal(
    local: &Identity,
    reason: RefusalReason,
    error: HandshakeError,
) -> (Answer, Result<Negotiated, HandshakeError>) {
    let refusal = Refusal {
        reason,
        message: error.to_string(),
        versions: local.version_numbers(),
    };
    (Answer::Refused(refusal), Err(error))
}

/// The role and version checks, once the hello is read and (with a secret) the client proved it.
fn settle(
    hello: Hello,
    local: &Identity,
    accept: impl Fn(Role) -> bool,
    authenticated: bool,
    admin: bool,
) -> (Answer, Result<Negotiated, HandshakeError>) {
    if !accept(hello.role) {
        let error = HandshakeError::RoleNotAccepted {
            role: hello.role.name().to_string(),
            family: Some(hello.role.family()),
        };
        return refusal(local, RefusalReason::RoleNotAccepted, error);
    }
    let versions = local.version_numbers();
    let Some(version) = negotiate(&hello.versions, &local.versions) else {
        let error = HandshakeError::NoCommonVersion {
            offered: hello.versions,
            supported: versions,
        };
        return refusal(local, RefusalReason::NoCommonVersion, error);
    };
    let close_reason = local.close_reason && hello.offers(CLOSE_REASON);
    let answer = Answer::Accepted(Accepted {
        version,
        versions,
        role: local.role,
        id: local.id.clone(),
        features: if close_reason {
            vec![CLOSE_REASON.to_string()]
        } else {
            Vec::new()
        },
    });
    let negotiated = Negotiated {
        version,
        peer_role: hello.role,
        peer_id: hello.id,
        peer_versions: hello.versions,
        authenticated,
        admin,
        close_reason,
    };
    (answer, Ok(negotiated))
}

/// The server's first decision on a hello frame body.
///
/// Without a secret: the answer (accepted, or refused, `authNotConfigured` included for a hello
/// that asks to authenticate). With a secret: `authRequired` for a hello that does not ask to
/// authenticate, else a challenge carrying a nonce from `fresh_nonce` and the server's proof;
/// the role and the version are only decided once the client has proved the secret, so a peer
/// without it learns nothing but that a secret is required. `accept` says which client roles
/// this server takes.
pub fn read_hello(
    body: &[u8],
    local: &Identity,
    accept: impl Fn(Role) -> bool,
    fresh_nonce: impl FnOnce() -> Result<Nonce, HandshakeError>,
) -> ServerHello {
    let hello = match decode_hello(body) {
        Ok(hello) => hello,
        Err(e @ HandshakeError::BadMagic { .. }) => {
            let (a, o) = refusal(local, RefusalReason::BadMagic, e);
            return ServerHello::Answer(a, o);
        }
        Err(e @ HandshakeError::RoleNotAccepted { .. }) => {
            let (a, o) = refusal(local, RefusalReason::RoleNotAccepted, e);
            return ServerHello::Answer(a, o);
        }
        Err(e) => {
            let (a, o) = refusal(local, RefusalReason::MalformedHello, e);
            return ServerHello::Answer(a, o);
        }
    };
    match (&local.secret, hello.auth) {
        (None, None) => {
            let (a, o) = settle(hello, local, accept, false, false);
            ServerHello::Answer(a, o)
        }
        (None, Some(_)) => {
            let (a, o) = refusal(
                local,
                RefusalReason::AuthNotConfigured,
                HandshakeError::AuthNotConfigured,
            );
            ServerHello::Answer(a, o)
        }
        (Some(_), None) => {
            let (a, o) = refusal(
                local,
                RefusalReason::AuthRequired,
                HandshakeError::AuthRequired,
            );
            ServerHello::Answer(a, o)
        }
        (Some(secret), Some(_)) => {
            let nonce = match fresh_nonce() {
                Ok(nonce) => nonce,
                Err(e) => {
                    // Nothing to refuse for: this side cannot go on. The peer sees the close.
                    let (a, o) = refusal(local, RefusalReason::Other("internalError".into()), e);
                    return ServerHello::Answer(a, o);
                }
            };
            let hello_frame = frame_bytes(body);
            let challenge = Challenge {
                nonce,
                proof: server_proof(secret, &hello_frame, &nonce),
            };
            let mut challenge_body = Vec::new();
            encode_challenge(&challenge, &mut challenge_body);
            ServerHello::Challenge(ServerAuth {
                hello,
                hello_frame,
                challenge_body,
            })
        }
    }
}

impl ServerAuth {
    /// The challenge's frame body, to send to the client.
    pub fn challenge_body(&self) -> &[u8] {
        &self.challenge_body
    }

    /// The server's decision on the client's proof frame body: `authFailed` unless the proof (and
    /// the admin proof, when the client sends one and this side has an admin secret) verifies,
    /// then the role and version checks of [`read_hello`].
    ///
    /// An admin proof sent to a server without an admin secret is ignored (the peer is not an
    /// admin); a wrong admin proof is refused, as a wrong proof is.
    pub fn finish(
        self,
        proof_body: &[u8],
        local: &Identity,
        accept: impl Fn(Role) -> bool,
    ) -> (Answer, Result<Negotiated, HandshakeError>) {
        let Some(secret) = &local.secret else {
            return refusal(
                local,
                RefusalReason::AuthNotConfigured,
                HandshakeError::AuthNotConfigured,
            );
        };
        let proof = match decode_proof(proof_body) {
            Ok(proof) => proof,
            Err(e @ HandshakeError::BadMagic { .. }) => {
                return refusal(local, RefusalReason::BadMagic, e)
            }
            Err(e) => return refusal(local, RefusalReason::MalformedHello, e),
        };
        let challenge_frame = frame_bytes(&self.challenge_body);
        if !verify_client_proof(secret, &self.hello_frame, &challenge_frame, &proof.proof) {
            return refusal(
                local,
                RefusalReason::AuthFailed,
                HandshakeError::AuthFailed(
                    "the client's proof does not match this side's secret".into(),
                ),
            );
        }
        let admin = match (&local.admin_secret, &proof.admin) {
            (Some(admin_secret), Some(admin)) => {
                if !verify_admin_proof(admin_secret, &self.hello_frame, &challenge_frame, admin) {
                    return refusal(
                        local,
                        RefusalReason::AuthFailed,
                        HandshakeError::AuthFailed(
                            "the client's admin proof does not match this side's admin secret"
                                .into(),
                        ),
                    );
                }
                true
            }
            _ => false,
        };
        settle(self.hello, local, accept, true, admin)
    }
}

/// The server's decision on a hello frame body, for a server **without** a secret (one with a
/// secret must use [`read_hello`]: here it refuses every hello with `authRequired`, never
/// accepting unauthenticated). `accept` says which client roles this server takes.
pub fn answer_hello(
    body: &[u8],
    local: &Identity,
    accept: impl Fn(Role) -> bool,
) -> (Answer, Result<Negotiated, HandshakeError>) {
    let no_nonce = || {
        Err(HandshakeError::Random(
            "answer_hello does not authenticate".into(),
        ))
    };
    match read_hello(body, local, &accept, no_nonce) {
        ServerHello::Answer(answer, outcome) => (answer, outcome),
        ServerHello::Challenge(_) => refusal(
            local,
            RefusalReason::AuthRequired,
            HandshakeError::AuthRequired,
        ),
    }
}

/// What a client does with the server's first frame.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClientNext {
    /// The handshake is complete (a client without a secret, accepted).
    Done(Negotiated),
    /// The server proved the secret: send this proof frame body, then read the answer with
    /// [`check_answer`].
    SendProof(Vec<u8>),
}

/// The client's reading of the server's first frame body, in answer to `hello` whose frame body
/// was `hello_body`.
///
/// A client with a secret goes on only after a challenge whose proof verifies; an acceptance
/// without one is [`HandshakeError::Unauthenticated`] (no silent downgrade), a wrong proof
/// [`HandshakeError::AuthFailed`]. A client without a secret reads an answer as
/// [`check_answer`] does; a challenge to it is malformed.
pub fn read_server_frame(
    body: &[u8],
    hello: &Hello,
    hello_body: &[u8],
    local: &Identity,
) -> Result<ClientNext, HandshakeError> {
    let entries = Entries::parse(body)?;
    if !entries.has("challenge") {
        let negotiated = check_answer(body, hello)?;
        if local.secret.is_some() {
            return Err(HandshakeError::Unauthenticated);
        }
        return Ok(ClientNext::Done(negotiated));
    }
    let (Some(secret), Some(_)) = (&local.secret, hello.auth) else {
        return Err(HandshakeError::Malformed(
            "the server sent a challenge to a hello that did not ask to authenticate".into(),
        ));
    };
    let challenge = challenge_from(&entries)?;
    let hello_frame = frame_bytes(hello_body);
    if !verify_server_proof(secret, &hello_frame, &challenge.nonce, &challenge.proof) {
        return Err(HandshakeError::AuthFailed(
            "the server's proof does not match this side's secret".into(),
        ));
    }
    let challenge_frame = frame_bytes(body);
    let proof = Proof {
        proof: client_proof(secret, &hello_frame, &challenge_frame),
        admin: local
            .admin_secret
            .as_ref()
            .map(|a| admin_proof(a, &hello_frame, &challenge_frame)),
    };
    let mut out = Vec::new();
    encode_proof(&proof, &mut out);
    Ok(ClientNext::SendProof(out))
}

/// The client's reading of the answer frame body to `hello` (the first frame from the server
/// without authentication, the third with it).
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
            // A feature is on when the hello offered it and the answer takes it; a feature the
            // answer names that the hello did not offer is ignored.
            let close_reason =
                hello.offers(CLOSE_REASON) && a.features.iter().any(|f| f == CLOSE_REASON);
            Ok(Negotiated {
                version: a.version,
                peer_role: a.role,
                peer_id: a.id,
                peer_versions: a.versions,
                authenticated: hello.auth.is_some(),
                admin: false,
                close_reason,
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

    /// Whether a client and a server, each offering or taking `closeReason` or not, agree on it,
    /// as each side sees it; and the answer's bytes.
    fn close_reason_agreed(client: bool, server: bool) -> (bool, bool, Vec<u8>) {
        let server = Identity::new(Role::Master, "m").with_close_reason(server);
        let hello = Identity::new(Role::Worker, "w")
            .with_close_reason(client)
            .hello();
        let (answer, outcome) = answer_hello(&body(&hello), &server, |_| true);
        let mut answer_body = Vec::new();
        encode_answer(&answer, &mut answer_body);
        let client_side = check_answer(&answer_body, &hello).expect("accepted");
        let server_side = outcome.expect("accepted");
        (
            client_side.close_reason,
            server_side.close_reason,
            answer_body,
        )
    }

    #[test]
    fn close_reason_is_on_only_when_the_hello_offers_it_and_the_server_takes_it() {
        let (client, server, answer) = close_reason_agreed(true, true);
        assert!(client && server);
        assert!(
            answer.windows(11).any(|w| w == b"closeReason"),
            "the answer names the feature"
        );
        for (offers, takes) in [(false, true), (true, false), (false, false)] {
            let (client, server, answer) = close_reason_agreed(offers, takes);
            assert!(!client && !server, "offered {offers}, taken {takes}");
            // No `features` key at all: the answer is what an older server sends.
            assert_eq!(answer[0], 0x85, "five entries");
            assert!(!answer.windows(8).any(|w| w == b"features"));
        }
    }

    #[test]
    fn a_feature_the_answer_takes_that_the_hello_did_not_offer_is_not_on() {
        let hello = Identity::new(Role::Worker, "w")
            .with_close_reason(false)
            .hello();
        let answer = Answer::Accepted(Accepted {
            version: Version::V2,
            versions: vec![2],
            role: Role::Master,
            id: String::new(),
            features: vec![CLOSE_REASON.to_string(), "compression".to_string()],
        });
        let mut answer_body = Vec::new();
        encode_answer(&answer, &mut answer_body);
        let client_side = check_answer(&answer_body, &hello).expect("accepted");
        assert!(!client_side.close_reason);
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
            features: vec![],
        });
        let mut answer_body = Vec::new();
        encode_answer(&answer, &mut answer_body);
        assert!(matches!(
            check_answer(&answer_body, &hello),
            Err(HandshakeError::Malformed(_))
        ));
    }

    // Authentication (protocol/handshake.md §10).

    use crate::wire::handshake::Secret;

    fn secret(s: &str) -> Option<Secret> {
        Secret::new(s.as_bytes())
    }

    /// The frames of one authenticated exchange, driven by hand with fixed nonces.
    struct Run {
        hello: Hello,
        hello_body: Vec<u8>,
        challenge_body: Vec<u8>,
        proof_body: Vec<u8>,
    }

    fn run(
        client: &Identity,
        server: &Identity,
    ) -> (Run, Answer, Result<Negotiated, HandshakeError>) {
        let hello = client.hello_with_nonce([0x11; 32]);
        let hello_body = body(&hello);
        let ServerHello::Challenge(auth) =
            read_hello(&hello_body, server, |_| true, || Ok([0x22; 32]))
        else {
            panic!("a server with a secret challenges a hello that asks to authenticate");
        };
        let challenge_body = auth.challenge_body().to_vec();
        let Ok(ClientNext::SendProof(proof_body)) =
            read_server_frame(&challenge_body, &hello, &hello_body, client)
        else {
            panic!("the client accepts the challenge of a server with the same secret");
        };
        let (answer, outcome) = auth.finish(&proof_body, server, |_| true);
        (
            Run {
                hello,
                hello_body,
                challenge_body,
                proof_body,
            },
            answer,
            outcome,
        )
    }

    #[test]
    fn both_sides_with_the_same_secret_authenticate_and_the_admin_proof_counts() {
        let server = Identity::new(Role::Master, "m")
            .with_secret(secret("s3cret"))
            .with_admin_secret(secret("adm1n"));
        let client = Identity::new(Role::Ui, "ui").with_secret(secret("s3cret"));
        let (r, answer, outcome) = run(&client, &server);
        let n = outcome.expect("authenticated");
        assert!(n.authenticated && !n.admin);
        let mut answer_body = Vec::new();
        encode_answer(&answer, &mut answer_body);
        let seen = check_answer(&answer_body, &r.hello).expect("accepted");
        assert!(seen.authenticated);

        let admin = client.clone().with_admin_secret(secret("adm1n"));
        let (_, _, outcome) = run(&admin, &server);
        assert!(outcome.is_ok_and(|n| n.admin));

        // A wrong admin secret is refused outright, not taken as a plain peer.
        let (_, answer, outcome) = run(&client.with_admin_secret(secret("guess")), &server);
        assert!(matches!(outcome, Err(HandshakeError::AuthFailed(_))));
        assert!(matches!(
            answer,
            Answer::Refused(Refusal {
                reason: RefusalReason::AuthFailed,
                ..
            })
        ));
    }

    #[test]
    fn a_wrong_secret_fails_on_the_client_before_it_proves_anything() {
        let server = Identity::new(Role::Master, "m").with_secret(secret("right"));
        let client = Identity::new(Role::Worker, "w").with_secret(secret("wrong"));
        let hello = client.hello_with_nonce([1; 32]);
        let hello_body = body(&hello);
        let ServerHello::Challenge(auth) =
            read_hello(&hello_body, &server, |_| true, || Ok([2; 32]))
        else {
            panic!("challenged");
        };
        assert!(matches!(
            read_server_frame(auth.challenge_body(), &hello, &hello_body, &client),
            Err(HandshakeError::AuthFailed(_))
        ));
        // A client that goes on anyway with a proof under its own secret is refused.
        let challenge_frame = frame_bytes(auth.challenge_body());
        let forged = Proof {
            proof: client_proof(
                &Secret::new(b"wrong".to_vec()).expect("secret"),
                &frame_bytes(&hello_body),
                &challenge_frame,
            ),
            admin: None,
        };
        let mut forged_body = Vec::new();
        encode_proof(&forged, &mut forged_body);
        let (answer, outcome) = auth.finish(&forged_body, &server, |_| true);
        assert!(matches!(outcome, Err(HandshakeError::AuthFailed(_))));
        assert!(matches!(
            answer,
            Answer::Refused(Refusal {
                reason: RefusalReason::AuthFailed,
                ..
            })
        ));
    }

    #[test]
    fn a_server_with_a_secret_refuses_an_old_or_secretless_client_before_any_other_check() {
        let server = Identity::new(Role::Master, "m")
            .with_secret(secret("k"))
            .with_versions(&[Version::V2]);
        // An old client: no auth keys, and even a version and role the server would refuse.
        let old = Identity::new(Role::Executor, "e")
            .with_versions(&[Version::V1])
            .hello();
        let ServerHello::Answer(answer, outcome) =
            read_hello(&body(&old), &server, |r| r == Role::Worker, || Ok([0; 32]))
        else {
            panic!("no challenge to a hello that does not ask");
        };
        assert_eq!(outcome, Err(HandshakeError::AuthRequired));
        let mut answer_body = Vec::new();
        encode_answer(&answer, &mut answer_body);
        // The old client sees a refusal it may not know by name, with the reason as sent.
        assert!(matches!(
            check_answer(&answer_body, &old),
            Err(HandshakeError::Refused {
                reason: RefusalReason::AuthRequired,
                ..
            })
        ));
        // answer_hello never accepts for a server with a secret.
        let authing = Identity::new(Role::Worker, "w")
            .with_secret(secret("k"))
            .hello_with_nonce([3; 32]);
        let (_, outcome) = answer_hello(&body(&authing), &server, |_| true);
        assert!(outcome.is_err());
    }

    #[test]
    fn a_client_with_a_secret_never_goes_on_with_a_server_that_did_not_prove_it() {
        let client = Identity::new(Role::Worker, "w").with_secret(secret("k"));
        let hello = client.hello_with_nonce([4; 32]);
        let hello_body = body(&hello);
        // An old server ignores the unknown keys and accepts: the client refuses to downgrade.
        let accepted = Answer::Accepted(Accepted {
            version: Version::V2,
            versions: vec![1, 2],
            role: Role::Master,
            id: "old".into(),
            features: vec![],
        });
        let mut accepted_body = Vec::new();
        encode_answer(&accepted, &mut accepted_body);
        assert_eq!(
            read_server_frame(&accepted_body, &hello, &hello_body, &client),
            Err(HandshakeError::Unauthenticated)
        );
        // A new server without a secret says so.
        let server = Identity::new(Role::Master, "m");
        let ServerHello::Answer(answer, outcome) =
            read_hello(&hello_body, &server, |_| true, || Ok([0; 32]))
        else {
            panic!("a server without a secret does not challenge");
        };
        assert_eq!(outcome, Err(HandshakeError::AuthNotConfigured));
        let mut refused = Vec::new();
        encode_answer(&answer, &mut refused);
        assert!(matches!(
            read_server_frame(&refused, &hello, &hello_body, &client),
            Err(HandshakeError::Refused {
                reason: RefusalReason::AuthNotConfigured,
                ..
            })
        ));
        // A challenge to a client that did not ask is malformed.
        let plain = Identity::new(Role::Worker, "w");
        let plain_hello = plain.hello();
        let mut challenge = Vec::new();
        encode_challenge(
            &Challenge {
                nonce: [0; 32],
                proof: [0; 32],
            },
            &mut challenge,
        );
        assert!(matches!(
            read_server_frame(&challenge, &plain_hello, &body(&plain_hello), &plain),
            Err(HandshakeError::Malformed(_))
        ));
    }

    #[test]
    fn a_replayed_or_modified_proof_or_challenge_fails() {
        let server = Identity::new(Role::Master, "m").with_secret(secret("k"));
        let client = Identity::new(Role::Worker, "w").with_secret(secret("k"));
        let (first, _, outcome) = run(&client, &server);
        assert!(outcome.is_ok());

        // Replay: the same hello, a new server nonce; the old proof does not verify.
        let ServerHello::Challenge(again) =
            read_hello(&first.hello_body, &server, |_| true, || Ok([0x33; 32]))
        else {
            panic!("challenged");
        };
        let (_, outcome) = again.finish(&first.proof_body, &server, |_| true);
        assert!(matches!(outcome, Err(HandshakeError::AuthFailed(_))));

        // A proof with one bit flipped.
        let ServerHello::Challenge(fresh) =
            read_hello(&first.hello_body, &server, |_| true, || Ok([0x22; 32]))
        else {
            panic!("challenged");
        };
        assert_eq!(
            fresh.challenge_body(),
            &first.challenge_body[..],
            "same nonce, same challenge"
        );
        let mut flipped = first.proof_body.clone();
        let last = flipped.len() - 1;
        flipped[last] ^= 1;
        let (_, outcome) = fresh.finish(&flipped, &server, |_| true);
        assert!(matches!(outcome, Err(HandshakeError::AuthFailed(_))));

        // A hello altered on the way (another id) breaks the server's proof for the client.
        let mut altered = first.hello.clone();
        altered.id = "w2".into();
        let altered_body = body(&altered);
        assert!(matches!(
            read_server_frame(&first.challenge_body, &altered, &altered_body, &client),
            Err(HandshakeError::AuthFailed(_))
        ));

        // A challenge replayed to a client with a fresh nonce fails too.
        let new_hello = client.hello_with_nonce([0x44; 32]);
        assert!(matches!(
            read_server_frame(
                &first.challenge_body,
                &new_hello,
                &body(&new_hello),
                &client
            ),
            Err(HandshakeError::AuthFailed(_))
        ));
    }
}
