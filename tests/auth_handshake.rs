//! The authenticated handshake (protocol/handshake.md §10): the golden vectors of
//! `protocol/vectors/handshake-auth.json` hold the proofs the spec defines (recomputed here with
//! HMAC-SHA256 from the spec's formula, not with the crate's helpers), and connections over real
//! TCP authenticate only with the same secret, never downgrading.

use std::path::Path;

use hmac::{Hmac, Mac};
use sha2::Sha256;
use sparkwire::connection::{Connection, ConnectionConfig, ConnectionError};
use sparkwire::messages::from_hex;
use sparkwire::messages::DeployMessage;
use sparkwire::wire::handshake::{
    decode_answer, decode_hello, decode_proof, Answer, HandshakeError, RefusalReason, Role, Secret,
};
use sparkwire::wire::vectors::{auth_vectors, AuthVector};
use tokio::net::TcpStream;

mod common;

fn on_disk() -> Vec<AuthVector> {
    let path = Path::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/protocol/vectors/handshake-auth.json"
    ));
    let text = std::fs::read_to_string(path).expect("the vector file");
    serde_json::from_str(&text).expect("vector JSON")
}

fn hmac(key: &str, label: &str, parts: &[&[u8]]) -> Vec<u8> {
    let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(key.as_bytes()).expect("any key length");
    mac.update(label.as_bytes());
    mac.update(&[0]);
    for p in parts {
        mac.update(p);
    }
    mac.finalize().into_bytes().to_vec()
}

fn hex(h: &Option<String>) -> Vec<u8> {
    from_hex(h.as_deref().expect("present")).expect("hex")
}

/// The body of a whole frame, after checking its length prefix.
fn body(frame: &[u8]) -> &[u8] {
    let len = u32::from_be_bytes(frame[..4].try_into().expect("prefix")) as usize;
    assert_eq!(len, frame.len() - 4, "the prefix gives the body's length");
    &frame[4..]
}

#[test]
fn the_vector_file_is_what_the_generator_writes() {
    assert_eq!(on_disk(), auth_vectors().expect("generated"));
}

#[test]
fn every_vector_carries_the_proofs_the_spec_defines() {
    let vectors = on_disk();
    assert_eq!(vectors.len(), 6);
    for v in &vectors {
        let hello_frame = from_hex(&v.hello_hex).expect("hex");
        let hello = decode_hello(body(&hello_frame)).expect("a hello");
        assert_eq!(
            (hello.role.name(), hello.id.as_str()),
            (v.role.as_str(), v.id.as_str())
        );
        assert_eq!(hello.versions, v.versions);
        assert_eq!(
            hello.auth.map(|n| n.to_vec()),
            v.client_nonce_hex
                .as_ref()
                .map(|_| hex(&v.client_nonce_hex)),
            "{}: the hello carries the client's nonce exactly when it has a secret",
            v.name
        );
        let server_secret = match v.server_secret.as_deref() {
            Some("") => None,
            Some(other) => Some(other),
            None => v.secret.as_deref(),
        };
        if let Some(challenge_hex) = &v.challenge_hex {
            let challenge_frame = from_hex(challenge_hex).expect("hex");
            let server_nonce = hex(&v.server_nonce_hex);
            let expected = hmac(
                server_secret.expect("a challenging server has a secret"),
                "sparkwire-auth-v1 server",
                &[&hello_frame, &server_nonce],
            );
            // The challenge map ends with the nonce then the proof, each bin 8 of 32 bytes.
            let cbody = body(&challenge_frame);
            assert_eq!(
                &cbody[cbody.len() - 32..],
                &expected[..],
                "{}: server proof",
                v.name
            );
            assert_eq!(
                &cbody[cbody.len() - 72..cbody.len() - 40],
                &server_nonce[..]
            );
            if let Some(proof_hex) = &v.proof_hex {
                let proof_frame = from_hex(proof_hex).expect("hex");
                let proof = decode_proof(body(&proof_frame)).expect("a proof");
                let client = v.secret.as_deref().expect("a proving client has a secret");
                assert_eq!(
                    proof.proof.to_vec(),
                    hmac(
                        client,
                        "sparkwire-auth-v1 client",
                        &[&hello_frame, &challenge_frame]
                    ),
                    "{}: client proof",
                    v.name
                );
                assert_eq!(
                    proof.admin.map(|a| a.to_vec()),
                    v.admin_secret.as_deref().map(|a| hmac(
                        a,
                        "sparkwire-auth-v1 admin",
                        &[&hello_frame, &challenge_frame]
                    )),
                    "{}: admin proof",
                    v.name
                );
            }
        }
        match &v.answer_hex {
            Some(answer_hex) => {
                let frame = from_hex(answer_hex).expect("hex");
                let outcome = match decode_answer(body(&frame)).expect("an answer") {
                    Answer::Accepted(_) => "accepted".to_string(),
                    Answer::Refused(r) => r.reason.name().to_string(),
                };
                assert_eq!(outcome, v.outcome, "{}", v.name);
            }
            None => assert_eq!(v.outcome, "clientCloses", "{}", v.name),
        }
    }
    let outcomes: Vec<&str> = vectors.iter().map(|v| v.outcome.as_str()).collect();
    assert_eq!(
        outcomes,
        [
            "accepted",
            "accepted",
            "authFailed",
            "clientCloses",
            "authRequired",
            "authNotConfigured"
        ]
    );
}

fn secret(s: &str) -> Secret {
    Secret::new(s.as_bytes().to_vec()).expect("a secret")
}

fn config(s: Option<&str>) -> ConnectionConfig<DeployMessage> {
    match s {
        Some(s) => ConnectionConfig::default().with_secret(secret(s)),
        None => ConnectionConfig::default(),
    }
}

/// A server accepting one connection with `server`'s secret, and a client with `client`'s.
async fn pair(
    server: Option<&str>,
    client: Option<&str>,
) -> (
    Result<Connection<DeployMessage>, ConnectionError>,
    Result<Connection<DeployMessage>, ConnectionError>,
) {
    let listener = common::listener().await;
    let addr = listener.local_addr().expect("addr");
    let server_config = config(server);
    let accept = tokio::spawn(async move {
        let (stream, _) = listener.accept().await.expect("accept");
        Connection::accept(stream, Role::Master, "master", server_config).await
    });
    let stream = TcpStream::connect(addr).await.expect("connect");
    let client = Connection::connect(stream, Role::Worker, "w", config(client)).await;
    (accept.await.expect("server task"), client)
}

#[tokio::test]
async fn connections_with_the_same_secret_authenticate_over_tcp() {
    let (server, client) = pair(Some("s3cret"), Some("s3cret")).await;
    let (server, client) = (server.expect("server side"), client.expect("client side"));
    assert!(server.negotiated().authenticated && client.negotiated().authenticated);
    // Envelopes flow after it.
    let ask = tokio::spawn(async move {
        client
            .ask(sparkwire::messages::deploy::RequestMasterState::new().into())
            .await
    });
    let mut server = server;
    let got = server.recv().await.expect("an ask");
    assert!(matches!(
        got.message(),
        DeployMessage::RequestMasterState(_)
    ));
    let sparkwire::connection::Incoming::Ask { id, .. } = got else {
        panic!("an ask");
    };
    server
        .reply(id, sparkwire::wire::Reply::Bool(true))
        .await
        .expect("replied");
    assert!(matches!(
        ask.await.expect("task"),
        Ok(sparkwire::wire::Reply::Bool(true))
    ));
}

#[tokio::test]
async fn a_wrong_or_missing_secret_on_either_side_gets_no_accepted_handshake() {
    // Wrong secret: the client finds the server's proof wrong and closes; the server sees it go.
    let (server, client) = pair(Some("right"), Some("wrong")).await;
    assert!(matches!(
        client,
        Err(ConnectionError::Handshake(HandshakeError::AuthFailed(_)))
    ));
    assert!(server.is_err());
    // A client without the secret (an old peer, or one not configured): refused, told why.
    let (server, client) = pair(Some("right"), None).await;
    assert!(matches!(
        client,
        Err(ConnectionError::Handshake(HandshakeError::Refused {
            reason: RefusalReason::AuthRequired,
            ..
        }))
    ));
    assert!(matches!(
        server,
        Err(ConnectionError::Handshake(HandshakeError::AuthRequired))
    ));
    // A client with a secret and a server without one: refused, and never a silent downgrade.
    let (server, client) = pair(None, Some("right")).await;
    assert!(matches!(
        client,
        Err(ConnectionError::Handshake(HandshakeError::Refused {
            reason: RefusalReason::AuthNotConfigured,
            ..
        }))
    ));
    assert!(server.is_err());
    // Neither: as before authentication existed.
    let (server, client) = pair(None, None).await;
    assert!(server.is_ok_and(|s| !s.negotiated().authenticated));
    assert!(client.is_ok());
}

#[tokio::test]
async fn a_client_with_a_secret_closes_on_an_old_server_that_accepts_without_proving() {
    // An old server: reads the hello, ignores the keys it does not know, accepts.
    let listener = common::listener().await;
    let addr = listener.local_addr().expect("addr");
    let old = tokio::spawn(async move {
        let (stream, _) = listener.accept().await.expect("accept");
        let old_server = sparkwire::wire::handshake::Identity::new(Role::Master, "old");
        // An old server ignores the `auth` and `nonce` keys: decide on the hello without them.
        let mut stream = stream;
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let mut prefix = [0u8; 4];
        stream.read_exact(&mut prefix).await.expect("prefix");
        let mut hello = vec![0u8; u32::from_be_bytes(prefix) as usize];
        stream.read_exact(&mut hello).await.expect("hello");
        let parsed = decode_hello(&hello).expect("a hello");
        let plain = sparkwire::wire::handshake::Hello {
            auth: None,
            ..parsed
        };
        let mut plain_body = Vec::new();
        sparkwire::wire::handshake::encode_hello(&plain, &mut plain_body);
        let (answer, outcome) =
            sparkwire::wire::handshake::answer_hello(&plain_body, &old_server, |_| true);
        assert!(outcome.is_ok());
        let mut out = Vec::new();
        sparkwire::wire::handshake::encode_answer(&answer, &mut out);
        let mut frame = (out.len() as u32).to_be_bytes().to_vec();
        frame.extend_from_slice(&out);
        stream.write_all(&frame).await.expect("answer");
        // What the client does next: it must close without sending an envelope.
        let mut rest = Vec::new();
        let _ = stream.read_to_end(&mut rest).await;
        rest
    });
    let stream = TcpStream::connect(addr).await.expect("connect");
    let client =
        Connection::<DeployMessage>::connect(stream, Role::Worker, "w", config(Some("k"))).await;
    assert!(matches!(
        client,
        Err(ConnectionError::Handshake(HandshakeError::Unauthenticated))
    ));
    assert!(
        old.await.expect("old server").is_empty(),
        "nothing was sent after the old server's acceptance"
    );
}
