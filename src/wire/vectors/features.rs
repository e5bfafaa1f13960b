//! Golden vectors of handshake features (protocol/handshake.md §12), written to
//! `protocol/vectors/handshake-features.json` by `sparkwire spec vectors`: hellos offering
//! features and the answer a server writes for each, and answers a client reads, with whether the
//! `closeReason` feature is on afterwards or why the handshake fails.
//!
//! A server's answers are made by the crate's own sans-IO handshake; a client's outcomes by its
//! own check of the answer, so a change to either shows up as a stale file.

use serde::{Deserialize, Serialize};

use super::decoder::Mp;
use crate::messages::to_hex;
use crate::messages::Version;
use crate::wire::handshake::{
    check_answer, decode_hello, encode_answer, encode_hello, frame_bytes, read_hello, Answer,
    HandshakeError, Hello, Identity, Role, ServerHello, CLOSE_REASON,
};
use crate::wire::Error;

/// One feature negotiation, seen from one side.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FeatureVector {
    /// What it shows.
    pub name: String,
    /// `server`: a server that takes `closeReason` (unless `server_takes` is false) reads
    /// `hello_hex` and writes `answer_hex`. `client`: a client that sent `hello_hex` reads
    /// `answer_hex`.
    pub side: String,
    /// For `server` vectors: whether the server takes `closeReason` when offered.
    pub server_takes: bool,
    /// Hex of the hello frame, length prefix included.
    pub hello_hex: String,
    /// Hex of the answer frame, length prefix included.
    pub answer_hex: String,
    /// `accepted`, the refusal reason of the answer (`malformedHello`, …), or `Malformed` for an
    /// answer a client refuses.
    pub outcome: String,
    /// When accepted: whether `closeReason` is on for the connection; else `null`.
    pub close_reason: Option<bool>,
}

fn mp_frame(m: &Mp) -> Vec<u8> {
    m.frame().0
}

/// A hello of an application client speaking version 2, with `features` given as `features`
/// (absent when `None`), written as given.
fn hello_with(features: Option<Mp>) -> Mp {
    let mut entries = vec![
        (Mp::s("magic"), Mp::s("sparkwire")),
        (Mp::s("versions"), Mp::Arr(vec![Mp::Int(2)])),
        (Mp::s("role"), Mp::s("app-client")),
        (Mp::s("id"), Mp::s("app")),
    ];
    if let Some(f) = features {
        entries.push((Mp::s("features"), f));
    }
    Mp::Map(entries)
}

fn names(items: &[&str]) -> Mp {
    Mp::Arr(items.iter().map(|s| Mp::s(s)).collect())
}

/// An accepted answer of a master at version 2, with `features` as given (absent when `None`).
fn accepted_with(features: Option<Mp>) -> Mp {
    let mut entries = vec![
        (Mp::s("magic"), Mp::s("sparkwire")),
        (Mp::s("version"), Mp::Int(2)),
        (Mp::s("versions"), Mp::Arr(vec![Mp::Int(1), Mp::Int(2)])),
        (Mp::s("role"), Mp::s("master")),
        (Mp::s("id"), Mp::s("master")),
    ];
    if let Some(f) = features {
        entries.push((Mp::s("features"), f));
    }
    Mp::Map(entries)
}

fn server_vector(name: &str, takes: bool, hello: Mp) -> Result<FeatureVector, Error> {
    let server = Identity::new(Role::Master, "master").with_close_reason(takes);
    let hello_frame = mp_frame(&hello);
    let (answer, outcome) = match read_hello(
        &hello_frame[4..],
        &server,
        |_| true,
        || {
            Err(HandshakeError::Random(
                "a server without a secret draws no nonce".into(),
            ))
        },
    ) {
        ServerHello::Answer(answer, outcome) => (answer, outcome),
        ServerHello::Challenge(_) => {
            return Err(Error::Encode {
                name: name.to_string(),
                detail: "a server without a secret does not challenge".into(),
            })
        }
    };
    let mut body = Vec::new();
    encode_answer(&answer, &mut body);
    let (outcome, close_reason) = match (&answer, outcome) {
        (_, Ok(n)) => ("accepted".to_string(), Some(n.close_reason)),
        (Answer::Refused(r), Err(_)) => (r.reason.name().to_string(), None),
        (Answer::Accepted(_), Err(e)) => (e.to_string(), None),
    };
    Ok(FeatureVector {
        name: name.to_string(),
        side: "server".into(),
        server_takes: takes,
        hello_hex: to_hex(&hello_frame),
        answer_hex: to_hex(&frame_bytes(&body)),
        outcome,
        close_reason,
    })
}

fn client_vector(name: &str, hello: Mp, answer: Mp) -> Result<FeatureVector, Error> {
    let hello_frame = mp_frame(&hello);
    let sent: Hello = decode_hello(&hello_frame[4..]).map_err(|e| Error::Encode {
        name: name.to_string(),
        detail: e.to_string(),
    })?;
    let answer_frame = mp_frame(&answer);
    let (outcome, close_reason) = match check_answer(&answer_frame[4..], &sent) {
        Ok(n) => ("accepted".to_string(), Some(n.close_reason)),
        Err(HandshakeError::Refused { reason, .. }) => (reason.name().to_string(), None),
        Err(HandshakeError::RoleNotAccepted { .. }) => ("roleNotAccepted".to_string(), None),
        Err(HandshakeError::Malformed(_)) => ("Malformed".to_string(), None),
        Err(e) => (e.to_string(), None),
    };
    Ok(FeatureVector {
        name: name.to_string(),
        side: "client".into(),
        server_takes: false,
        hello_hex: to_hex(&hello_frame),
        answer_hex: to_hex(&answer_frame),
        outcome,
        close_reason,
    })
}

/// Every feature vector (handshake.md §12).
pub fn feature_vectors() -> Result<Vec<FeatureVector>, Error> {
    let offered = || hello_with(Some(names(&[CLOSE_REASON])));
    let refused = |features: Mp| {
        Mp::Map(vec![
            (Mp::s("magic"), Mp::s("sparkwire")),
            (Mp::s("refused"), Mp::s("roleNotAccepted")),
            (Mp::s("message"), Mp::s("no")),
            (Mp::s("versions"), Mp::Arr(vec![Mp::Int(2)])),
            (Mp::s("features"), features),
        ])
    };
    // The examples of handshake.md §12 are these bytes: a check that the prose and the code agree.
    let example = hello_with(Some(names(&[CLOSE_REASON])));
    let mut body = Vec::new();
    encode_hello(
        &Hello::new(&[Version::V2], Role::AppClient, "app").with_features(&[CLOSE_REASON]),
        &mut body,
    );
    if frame_bytes(&body) != mp_frame(&example) {
        return Err(Error::Encode {
            name: "features".into(),
            detail: "the hello of handshake.md §12 is not what the encoder writes".into(),
        });
    }
    Ok(vec![
        server_vector("offered and taken", true, offered())?,
        server_vector(
            "not offered: the answer has no features key, the feature is off",
            true,
            hello_with(None),
        )?,
        server_vector(
            "an empty list offers nothing: no features key in the answer",
            true,
            hello_with(Some(names(&[]))),
        )?,
        server_vector(
            "offered by a server that does not take it: off",
            false,
            offered(),
        )?,
        server_vector(
            "offered twice: taken, and listed once",
            true,
            hello_with(Some(names(&[CLOSE_REASON, CLOSE_REASON]))),
        )?,
        server_vector(
            "an unknown feature beside it: ignored, only the known one taken",
            true,
            hello_with(Some(names(&["compression", CLOSE_REASON]))),
        )?,
        server_vector(
            "features not an array of strings: malformedHello",
            true,
            hello_with(Some(Mp::Arr(vec![Mp::Int(1)]))),
        )?,
        server_vector(
            "a feature name sent as bin: malformedHello",
            true,
            hello_with(Some(Mp::Arr(vec![Mp::Bin(
                CLOSE_REASON.as_bytes().to_vec(),
            )]))),
        )?,
        server_vector(
            "features a string, not an array: malformedHello",
            true,
            hello_with(Some(Mp::s(CLOSE_REASON))),
        )?,
        client_vector(
            "the answer takes the feature offered: on",
            offered(),
            accepted_with(Some(names(&[CLOSE_REASON]))),
        )?,
        client_vector(
            "the answer takes nothing: off",
            offered(),
            accepted_with(None),
        )?,
        client_vector(
            "the answer names a feature the hello did not offer: ignored, off",
            hello_with(None),
            accepted_with(Some(names(&[CLOSE_REASON]))),
        )?,
        client_vector(
            "the answer lists features twice and in another order than offered: on",
            hello_with(Some(names(&["compression", CLOSE_REASON]))),
            accepted_with(Some(names(&[CLOSE_REASON, "compression", CLOSE_REASON]))),
        )?,
        client_vector(
            "an accepted answer whose features is not an array of strings: Malformed",
            offered(),
            accepted_with(Some(Mp::Arr(vec![Mp::Int(1)]))),
        )?,
        client_vector(
            "a refused answer with a features key: the key means nothing there, whatever it holds",
            offered(),
            refused(Mp::Int(1)),
        )?,
    ])
}
