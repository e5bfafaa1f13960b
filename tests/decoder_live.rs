//! Every decoder vector (`protocol/vectors/decoder.json`) and every invalid envelope vector
//! (`envelope.json`) gives the same decision on a live connection as in `wire::decode_frame`:
//! one decoding path (issue 30, item 2). Each vector's frame is written by a hand-driven peer,
//! after a real handshake, to a [`Connection`] of the vector's family and version; a valid frame
//! is delivered as the vector's message and the connection stays open, an invalid one closes it
//! with the vector's error kind, and the peer is told that kind in the close envelope
//! (SPEC §8.1). The handshake vectors (`handshake-auth.json`) are decided alike by live
//! connections holding the vectors' secrets.

mod common;

use std::path::Path;
use std::time::Duration;

use bytes::Bytes;
use common::{
    envelope_frame, raw_client_offering_and_server, read_raw_frame, samples, send_frame_named,
};
use sparkwire::connection::{Connection, ConnectionConfig, ConnectionError, Incoming, Security};
use sparkwire::messages::{CoarseMessage, DeployMessage, Family, Version};
use sparkwire::wire::handshake::{
    decode_answer, Answer, HandshakeError, Role, Secret, CLOSE_REASON,
};
use sparkwire::wire::vectors::{AuthVector, DecoderVector, EnvelopeVector};
use sparkwire::wire::{
    decode_envelope, decode_frame, error_kind, value_from_json, Envelope, FrameError,
};
use tokio::io::{AsyncWriteExt, DuplexStream};

/// Long enough for a loaded machine; the decisions themselves are immediate.
const PATIENCE: Duration = Duration::from_secs(20);

fn vectors<T: serde::de::DeserializeOwned>(file: &str) -> Vec<T> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("protocol/vectors")
        .join(file);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn version_of(number: u8) -> Version {
    Version::from_number(u64::from(number)).expect("a known version")
}

/// The roles of a connection that carries `F`: the hand-driven client's and the server's.
fn roles<F: Family>() -> (Role, Role) {
    if F::FAMILY == DeployMessage::FAMILY {
        (Role::Worker, Role::Master)
    } else {
        (Role::Executor, Role::Driver)
    }
}

/// A live server connection of family `F` speaking only `version`, and the raw stream of a
/// hand-driven client that completed the handshake with it, offering `closeReason`.
async fn live<F: Family + Send + 'static>(version: Version) -> (DuplexStream, Connection<F>) {
    let (client, server) = roles::<F>();
    let config = ConnectionConfig::<F> {
        versions: vec![version],
        ..ConnectionConfig::default()
    };
    raw_client_offering_and_server(&[version], client, server, config, &[CLOSE_REASON]).await
}

/// What a live connection did with one frame.
#[derive(Debug)]
enum Decision<F> {
    /// It delivered this envelope's message (a send or an ask) and kept the connection open.
    Delivered(F),
    /// It closed the connection: the decoding error's kind, and the kind its close envelope told
    /// the peer.
    Refused { kind: String, told: Option<String> },
    /// It did something else (closed for another reason, hung).
    Other(String),
}

/// The kind a close envelope names, read with the library's envelope decoder.
fn told_kind<F: Family>(body: &[u8], version: Version) -> Option<String> {
    match decode_envelope::<F>(&Bytes::copy_from_slice(body), version) {
        Ok(Envelope::Close(reason)) => Some(reason.kind.clone()),
        _ => None,
    }
}

/// A valid one-way message of family `F` in `version`, sent after the vector's frame: a
/// connection that kept reading delivers it.
fn marker<F: Family>(version: Version) -> Vec<u8> {
    if F::FAMILY == DeployMessage::FAMILY {
        envelope_frame(
            &Envelope::Send(DeployMessage::Heartbeat(samples::heartbeat())),
            version,
        )
    } else {
        send_frame_named("StopExecutor")
    }
}

/// Writes `frame`, then [`marker`], to a fresh live connection of family `F` and `version`,
/// shuts the peer's writing side and reports what the connection did with the frame.
async fn replay<F: Family + Send + 'static>(frame: &[u8], version: Version) -> Decision<F> {
    let (mut raw, mut conn) = live::<F>(version).await;
    let mut bytes = frame.to_vec();
    bytes.extend_from_slice(&marker::<F>(version));
    raw.write_all(&bytes).await.expect("write the frames");
    // The peer's end of input lets a refusing connection stop reading at once.
    raw.shutdown().await.expect("shut the peer's writing side");
    match tokio::time::timeout(PATIENCE, conn.recv()).await {
        Err(_) => Decision::Other("no decision within the patience".into()),
        Ok(Ok(incoming)) => {
            let message = match incoming {
                Incoming::Message(m) | Incoming::Ask { message: m, .. } => m,
            };
            // Still reading: the marker that followed arrives too.
            match tokio::time::timeout(PATIENCE, conn.recv()).await {
                Ok(Ok(Incoming::Message(_))) => Decision::Delivered(message),
                other => Decision::Other(format!(
                    "delivered {message:?}, then not the next frame: {other:?}"
                )),
            }
        }
        Ok(Err(ConnectionError::Inbound(FrameError::Envelope(e)))) => {
            let told = match tokio::time::timeout(PATIENCE, read_raw_frame(&mut raw)).await {
                Ok(Some(body)) => told_kind::<F>(&body, version),
                _ => None,
            };
            Decision::Refused {
                kind: error_kind(&e).to_string(),
                told,
            }
        }
        Ok(Err(other)) => Decision::Other(format!("closed with {other}")),
    }
}

/// Checks one frame's decision on a live connection against `decode_frame`'s and the vector's.
async fn agrees<F: Family + Send + 'static>(
    name: &str,
    frame_hex: &str,
    version: Version,
    error: Option<&str>,
    message: Option<&serde_json::Value>,
) -> Result<(), String> {
    let frame = sparkwire::messages::from_hex(frame_hex).ok_or("frame_hex is not hex")?;
    let offline = decode_frame::<F>(&Bytes::from(frame.clone()), version);
    let live = replay::<F>(&frame, version).await;
    match (error, &offline, &live) {
        (Some(want), Err(e), Decision::Refused { kind, told })
            if error_kind(e) == want && kind == want =>
        {
            if told.as_deref() == Some(want) {
                Ok(())
            } else {
                Err(format!(
                    "{name}: refused with {want}, but the peer was told {told:?}"
                ))
            }
        }
        (None, Ok(env), Decision::Delivered(got)) => {
            let want: Option<F> = match message {
                Some(m) => Some(value_from_json(m, version).map_err(|e| e.to_string())?),
                None => None,
            };
            if env.message() != Some(got) || want.as_ref().is_some_and(|w| w != got) {
                return Err(format!(
                    "{name}: decode_frame gives {:?}, the live connection delivered {got:?}, the vector says {want:?}",
                    env.message()
                ));
            }
            Ok(())
        }
        (_, _, Decision::Other(why)) => Err(format!(
            "{name}: the vector says {:?}, the live connection: {why}",
            error.unwrap_or("valid")
        )),
        _ => Err(format!(
            "{name}: the vector says {:?}, decode_frame says {:?}, the live connection {live:?}",
            error.unwrap_or("valid"),
            offline.as_ref().map_err(error_kind).map(|_| "valid"),
        )),
    }
}

#[tokio::test]
async fn every_decoder_vector_is_decided_on_a_live_connection_as_decode_frame_decides() {
    let all: Vec<DecoderVector> = vectors("decoder.json");
    assert!(all.len() >= 40, "{} decoder vectors", all.len());
    let mut wrong = Vec::new();
    for v in &all {
        let version = version_of(v.version);
        let outcome = match v.family.as_str() {
            "deploy" => {
                agrees::<DeployMessage>(
                    &v.name,
                    &v.frame_hex,
                    version,
                    v.error.as_deref(),
                    v.message.as_ref(),
                )
                .await
            }
            "coarse" => {
                agrees::<CoarseMessage>(
                    &v.name,
                    &v.frame_hex,
                    version,
                    v.error.as_deref(),
                    v.message.as_ref(),
                )
                .await
            }
            other => Err(format!("{}: unknown family {other}", v.name)),
        };
        if let Err(e) = outcome {
            wrong.push(e);
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[tokio::test]
async fn every_invalid_envelope_vector_closes_a_live_connection_with_its_error() {
    let all: Vec<EnvelopeVector> = vectors("envelope.json");
    let invalid: Vec<&EnvelopeVector> = all.iter().filter(|v| v.error.is_some()).collect();
    assert!(
        invalid.len() >= 5,
        "{} invalid envelope vectors",
        invalid.len()
    );
    let mut wrong = Vec::new();
    for v in invalid {
        let version = version_of(v.version);
        let outcome = match v.family.as_str() {
            "deploy" => {
                agrees::<DeployMessage>(&v.name, &v.frame_hex, version, v.error.as_deref(), None)
                    .await
            }
            "coarse" => {
                agrees::<CoarseMessage>(&v.name, &v.frame_hex, version, v.error.as_deref(), None)
                    .await
            }
            other => Err(format!("{}: unknown family {other}", v.name)),
        };
        if let Err(e) = outcome {
            wrong.push(e);
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// The security settings a side of a handshake vector holds: `secret` and `admin` as text.
fn security(secret: Option<&str>, admin: Option<&str>) -> Security {
    let of = |s: &str| Secret::new(s.as_bytes().to_vec()).expect("a secret");
    Security {
        secret: secret.map(of),
        admin_secret: admin.map(of),
        ..Security::default()
    }
}

/// The admin secret a vector's server holds (`AuthVector::server_secret`): the vectors' admin
/// secret, unless the server has a secret of its own.
const ADMIN: &str = "admin: tr0ub4dor&3";

/// What a live handshake between the vector's client and server decided: `accepted`, the
/// refusal reason's name, or `clientCloses` when the client found the server's proof wrong.
async fn live_handshake(v: &AuthVector) -> String {
    let role = Role::from_name(&v.role).expect("a known role");
    let server = match v.server_secret.as_deref() {
        None => security(v.secret.as_deref(), Some(ADMIN)),
        Some("") => security(None, None),
        Some(other) => security(Some(other), None),
    };
    let client = security(v.secret.as_deref(), v.admin_secret.as_deref());
    let versions: Vec<Version> = v
        .versions
        .iter()
        .filter_map(|n| Version::from_number(*n))
        .collect();
    let (a, b) = tokio::io::duplex(common::PIPE);
    let client_config = ConnectionConfig::<DeployMessage> {
        versions: versions.clone(),
        ..ConnectionConfig::default()
    }
    .with_security(client);
    let server_config = ConnectionConfig::<DeployMessage>::default().with_security(server);
    let (client, server) = tokio::join!(
        Connection::connect(a, role, v.id.clone(), client_config),
        Connection::accept(b, Role::Master, "master", server_config),
    );
    match (client, server) {
        (Ok(_), Ok(_)) => "accepted".to_string(),
        (Err(ConnectionError::Handshake(HandshakeError::Refused { reason, .. })), _) => {
            reason.name().to_string()
        }
        (Err(ConnectionError::Handshake(HandshakeError::AuthFailed(_))), _) => {
            "clientCloses".to_string()
        }
        (c, s) => format!("client {:?}, server {:?}", c.err(), s.err()),
    }
}

#[tokio::test]
async fn every_handshake_vector_is_decided_alike_by_live_connections() {
    let all: Vec<AuthVector> = vectors("handshake-auth.json");
    assert!(all.len() >= 5, "{} handshake vectors", all.len());
    let mut wrong = Vec::new();
    for v in &all {
        let got = live_handshake(v).await;
        if got != v.outcome {
            wrong.push(format!(
                "{}: the vector says {}, live: {got}",
                v.name, v.outcome
            ));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[tokio::test]
async fn a_refused_hello_of_a_vector_gets_the_vectors_refusal_from_a_live_server() {
    // The vectors whose hello needs no proof from the client: its exact bytes, written to a live
    // server holding the vector's server secret, are answered with the vector's refusal.
    let all: Vec<AuthVector> = vectors("handshake-auth.json");
    let mut replayed = 0;
    for v in all
        .iter()
        .filter(|v| v.challenge_hex.is_none() && v.answer_hex.is_some())
    {
        let server = match v.server_secret.as_deref() {
            None => security(v.secret.as_deref(), Some(ADMIN)),
            Some("") => security(None, None),
            Some(other) => security(Some(other), None),
        };
        let (mut raw, io) = tokio::io::duplex(common::PIPE);
        let accept = tokio::spawn(Connection::<DeployMessage>::accept(
            io,
            Role::Master,
            "master",
            ConnectionConfig::default().with_security(server),
        ));
        let hello = sparkwire::messages::from_hex(&v.hello_hex).expect("hex");
        raw.write_all(&hello).await.expect("write the hello");
        let answer = tokio::time::timeout(PATIENCE, read_raw_frame(&mut raw))
            .await
            .expect("an answer in time")
            .expect("an answer");
        let want = sparkwire::messages::from_hex(v.answer_hex.as_deref().unwrap_or_default())
            .expect("hex");
        let reason = |body: &[u8]| match decode_answer(body) {
            Ok(Answer::Refused(r)) => Some(r.reason.name().to_string()),
            _ => None,
        };
        assert_eq!(reason(&answer), reason(&want[4..]), "{}", v.name);
        assert_eq!(
            reason(&answer).as_deref(),
            Some(v.outcome.as_str()),
            "{}",
            v.name
        );
        assert!(
            accept.await.expect("the server task").is_err(),
            "{}: the server closes",
            v.name
        );
        replayed += 1;
    }
    assert!(replayed >= 2, "{replayed} refused hellos replayed");
}

#[tokio::test(start_paused = true)]
async fn the_owner_learns_of_a_refused_frame_at_once_not_after_the_farewell_linger() {
    // After a refusal the connection reads on and drops what the peer sends for a moment (SPEC
    // §8.1: up to 2 s), so that its close envelope is not reset away; the owner must not wait
    // for that. On the paused clock, a peer that stays connected and silent lets the linger run
    // its whole course: the owner's `recv` must end before it, at the instant of the refusal.
    let (mut raw, mut conn) = live::<CoarseMessage>(Version::V2).await;
    let start = tokio::time::Instant::now();
    raw.write_all(&send_frame_named("NoSuchMessage"))
        .await
        .expect("write the frame");
    let got = conn.recv().await;
    assert!(
        matches!(got, Err(ConnectionError::Inbound(FrameError::Envelope(_)))),
        "{got:?}"
    );
    assert_eq!(
        tokio::time::Instant::now(),
        start,
        "the refusal reached the owner only after the linger"
    );
    // The peer is still told why.
    let body = read_raw_frame(&mut raw).await.expect("the close envelope");
    assert_eq!(
        told_kind::<CoarseMessage>(&body, Version::V2).as_deref(),
        Some("UnknownMessage")
    );
}
