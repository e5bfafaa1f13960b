//! The authentication faults: the proxy stands in for the whole handshake of an endpoint that
//! holds a secret, when the suite connects ([`auth_fault`]) or when the endpoint does
//! ([`client_auth_fault`]).

use sparkwire::messages::Version;
use sparkwire::wire::handshake::{
    client_proof, decode_answer, decode_proof, encode_challenge, encode_hello, encode_proof,
    frame_bytes, fresh_nonce, read_hello, read_server_frame, server_proof, Accepted, Answer,
    Challenge, ClientNext, Hello, Identity, Nonce, Proof, Role, Secret, ServerHello,
};
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;

use super::behaviour::Behaviour;
use super::wire::{answer_bytes, hello_bytes, read_frame, read_hello_frame};

/// The authentication an [`AuthFault`] breaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum AuthBreak {
    /// Nobody is authenticated.
    Bypass,
    /// Any proof is taken.
    AnyProof,
    /// The endpoint's own proof does not verify.
    BadOwnProof,
    /// Spark's own authentication, broken one way (`super::spark_auth`).
    Spark(super::spark_auth::SparkBreak),
}

pub(super) struct AuthFault(pub(super) AuthBreak);

impl Behaviour for AuthFault {
    fn auth(&self) -> Option<AuthBreak> {
        Some(self.0)
    }
}

/// The authentication faults: the proxy authenticates to the endpoint itself and lets the suite
/// through unauthenticated ([`AuthBreak::Bypass`]) or with any proof ([`AuthBreak::AnyProof`]).
pub(super) async fn auth_fault(
    fault: AuthBreak,
    server_role: Role,
    secret: &Secret,
    mut suite: TcpStream,
    mut endpoint: TcpStream,
) {
    let Some((hello_body, hello)) = read_hello_frame(&mut suite).await else {
        return;
    };
    if fault == AuthBreak::BadOwnProof {
        // The hello passes as it is; the endpoint's challenge reaches the suite with a wrong
        // server proof.
        let hello_frame = frame_bytes(&hello_body);
        let _ = endpoint.write_all(&hello_frame).await;
        let Some(challenge) = read_frame(&mut endpoint).await else {
            return;
        };
        let nonce = crate::harness::mp::challenge_nonce(&challenge)
            .and_then(|n| <Nonce>::try_from(n.as_slice()).ok());
        let shown = match nonce {
            Some(nonce) => {
                let mut proof = server_proof(secret, &hello_frame, &nonce);
                proof[0] ^= 1;
                let mut out = Vec::new();
                encode_challenge(&Challenge { nonce, proof }, &mut out);
                out
            }
            None => challenge,
        };
        let _ = suite.write_all(&frame_bytes(&shown)).await;
    } else if fault == AuthBreak::AnyProof {
        // Hello and challenge pass as they are; the suite's proof becomes the right one.
        let _ = endpoint.write_all(&frame_bytes(&hello_body)).await;
        let Some(challenge) = read_frame(&mut endpoint).await else {
            return;
        };
        let _ = suite.write_all(&frame_bytes(&challenge)).await;
        let Some(next) = read_frame(&mut suite).await else {
            return;
        };
        let forwarded = if decode_proof(&next).is_ok() {
            let proof = Proof {
                proof: client_proof(secret, &frame_bytes(&hello_body), &frame_bytes(&challenge)),
                admin: None,
            };
            let mut out = Vec::new();
            encode_proof(&proof, &mut out);
            out
        } else {
            next
        };
        let _ = endpoint.write_all(&frame_bytes(&forwarded)).await;
    } else {
        // The suite is accepted at once; the proxy's own authenticated hello goes upstream.
        let version = if hello.versions.contains(&2) || !hello.versions.contains(&1) {
            Version::V2
        } else {
            Version::V1
        };
        let accepted = Answer::Accepted(Accepted {
            version,
            versions: vec![1, 2],
            role: server_role,
            id: String::new(),
            features: Vec::new(),
        });
        let _ = suite.write_all(&answer_bytes(&accepted)).await;
        let Ok(nonce) = fresh_nonce() else {
            return;
        };
        let own = Hello::new(&[version], hello.role, hello.id.clone()).with_auth(nonce);
        let mut own_body = Vec::new();
        encode_hello(&own, &mut own_body);
        let _ = endpoint.write_all(&frame_bytes(&own_body)).await;
        let Some(challenge) = read_frame(&mut endpoint).await else {
            return;
        };
        let local = Identity::new(hello.role, hello.id.clone())
            .with_versions(&[version])
            .with_secret(Some(secret.clone()));
        let Ok(ClientNext::SendProof(proof)) =
            read_server_frame(&challenge, &own, &own_body, &local)
        else {
            return;
        };
        let _ = endpoint.write_all(&frame_bytes(&proof)).await;
        // The endpoint's answer is the proxy's, not the suite's.
        if read_frame(&mut endpoint).await.is_none() {
            return;
        }
    }
    let _ = tokio::io::copy_bidirectional(&mut suite, &mut endpoint).await;
}

/// A challenge body that proves `secret` for the hello frame `hello_frame` with `nonce`.
pub(super) fn right_challenge(secret: &Secret, hello_frame: &[u8], nonce: Nonce) -> Vec<u8> {
    let mut out = Vec::new();
    let challenge = Challenge {
        nonce,
        proof: server_proof(secret, hello_frame, &nonce),
    };
    encode_challenge(&challenge, &mut out);
    out
}

/// The authentication faults of a client (the endpoint connects to the suite): the proxy does
/// the endpoint's authentication for it, so that the suite sees a client that does not
/// authenticate ([`AuthBreak::Bypass`]) or one that takes any server proof ([`AuthBreak::AnyProof`]).
pub(super) async fn client_auth_fault(
    fault: AuthBreak,
    secret: &Secret,
    mut suite: TcpStream,
    mut endpoint: TcpStream,
) {
    let Some((hello_body, hello)) = read_hello_frame(&mut endpoint).await else {
        return;
    };
    let hello_frame = frame_bytes(&hello_body);
    if hello.auth.is_none() {
        // A client that does not authenticate anyway: nothing to break.
        let _ = suite.write_all(&hello_frame).await;
    } else if fault == AuthBreak::BadOwnProof {
        // Hello and challenge pass as they are; the endpoint's proof reaches the suite wrong.
        let _ = suite.write_all(&hello_frame).await;
        let Some(first) = read_frame(&mut suite).await else {
            return;
        };
        let _ = endpoint.write_all(&frame_bytes(&first)).await;
        let Some(next) = read_frame(&mut endpoint).await else {
            return;
        };
        let sent = match decode_proof(&next) {
            Ok(mut proof) => {
                proof.proof[0] ^= 1;
                let mut out = Vec::new();
                encode_proof(&proof, &mut out);
                out
            }
            Err(_) => next,
        };
        let _ = suite.write_all(&frame_bytes(&sent)).await;
    } else if fault == AuthBreak::Bypass {
        // The proxy is the endpoint's server: it challenges it and takes its proof ...
        let local = Identity::new(Role::Driver, "proxy").with_secret(Some(secret.clone()));
        let ServerHello::Challenge(auth) = read_hello(&hello_body, &local, |_| true, fresh_nonce)
        else {
            return;
        };
        let _ = endpoint
            .write_all(&frame_bytes(auth.challenge_body()))
            .await;
        if read_frame(&mut endpoint).await.is_none() {
            return;
        }
        // ... and says hello to the suite without asking to authenticate; the suite's answer
        // goes to the endpoint as the answer to its proof.
        let mut plain = hello.clone();
        plain.auth = None;
        let _ = suite.write_all(&hello_bytes(&plain)).await;
    } else {
        // Any proof: the hello passes as it is; the endpoint is shown a right proof whatever
        // the suite sends, and the suite gets the endpoint's proof made right.
        let _ = suite.write_all(&hello_frame).await;
        let Some(first) = read_frame(&mut suite).await else {
            return;
        };
        let nonce = match crate::harness::mp::challenge_nonce(&first)
            .and_then(|n| <Nonce>::try_from(n.as_slice()).ok())
        {
            Some(n) => Some(n),
            None if decode_answer(&first).is_ok() => fresh_nonce().ok(),
            None => None,
        };
        let Some(nonce) = nonce else {
            let _ = endpoint.write_all(&frame_bytes(&first)).await;
            let _ = tokio::io::copy_bidirectional(&mut suite, &mut endpoint).await;
            return;
        };
        let shown = right_challenge(secret, &hello_frame, nonce);
        let _ = endpoint.write_all(&frame_bytes(&shown)).await;
        if read_frame(&mut endpoint).await.is_none() {
            return;
        }
        if crate::harness::mp::challenge_nonce(&first).is_some() {
            let proof = Proof {
                proof: client_proof(secret, &hello_frame, &frame_bytes(&first)),
                admin: None,
            };
            let mut out = Vec::new();
            encode_proof(&proof, &mut out);
            let _ = suite.write_all(&frame_bytes(&out)).await;
        } else {
            // The suite accepted without a challenge: that acceptance is the endpoint's answer.
            let _ = endpoint.write_all(&frame_bytes(&first)).await;
        }
    }
    let _ = tokio::io::copy_bidirectional(&mut suite, &mut endpoint).await;
}
