//! Golden vectors of the authenticated handshake (protocol/handshake.md §10), written to
//! `protocol/vectors/handshake-auth.json` by `sparkwire spec vectors`: for fixed secrets and
//! nonces, every frame of the exchange, each proof, and the refusals.
//!
//! They are made by running the crate's own sans-IO handshake with fixed nonces, so a change to
//! the bytes or to the proofs shows up as a stale file.

use serde::{Deserialize, Serialize};

use crate::messages::to_hex;
use crate::messages::Version;
use crate::wire::handshake::{
    encode_answer, encode_hello, frame_bytes, read_hello, read_server_frame, Answer, ClientNext,
    Identity, Nonce, Role, Secret, ServerHello,
};
use crate::wire::Error;

/// One authenticated exchange, or one refused attempt.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AuthVector {
    /// What it shows.
    pub name: String,
    /// The shared secret both sides hold, as UTF-8 text (the client's, when they differ).
    pub secret: Option<String>,
    /// The server's secret, when it is not `secret`: `""` for a server without one. Servers
    /// also hold the admin secret `admin: tr0ub4dor&3` unless they have another secret.
    pub server_secret: Option<String>,
    /// The admin secret the client proves, if any (the server holds the same one).
    pub admin_secret: Option<String>,
    /// The client's role.
    pub role: String,
    /// The client's id.
    pub id: String,
    /// The versions the client offers.
    pub versions: Vec<u64>,
    /// Hex of the client's nonce, if it asks to authenticate.
    pub client_nonce_hex: Option<String>,
    /// Hex of the server's nonce, if it challenges.
    pub server_nonce_hex: Option<String>,
    /// Hex of the hello frame, length prefix included.
    pub hello_hex: String,
    /// Hex of the challenge frame, if any.
    pub challenge_hex: Option<String>,
    /// Hex of the proof frame, if the client sends one.
    pub proof_hex: Option<String>,
    /// Hex of the server's answer frame, if the server answers (a client that finds the
    /// server's proof wrong closes instead of proving).
    pub answer_hex: Option<String>,
    /// `accepted`, or the refusal reason the answer carries, or `clientCloses`.
    pub outcome: String,
}

const SECRET: &str = "correct horse battery staple";
const ADMIN: &str = "admin: tr0ub4dor&3";
const CLIENT_NONCE: Nonce = [0xc1; 32];
const SERVER_NONCE: Nonce = [0x5e; 32];

fn secret(text: &str) -> Option<Secret> {
    Secret::new(text.as_bytes().to_vec())
}

/// An identity without the `closeReason` feature: these vectors show the handshake of §10 alone
/// (handshake.md §12 shows the feature's keys).
fn plain(role: Role, id: &str) -> Identity {
    Identity::new(role, id).with_close_reason(false)
}

fn server() -> Identity {
    plain(Role::Master, "master")
        .with_secret(secret(SECRET))
        .with_admin_secret(secret(ADMIN))
}

fn exchange(
    name: &str,
    client: &Identity,
    server: &Identity,
    client_secret: Option<&str>,
    server_secret: Option<&str>,
    admin_secret: Option<&str>,
) -> Result<AuthVector, Error> {
    let broken = |detail: String| Error::Encode {
        name: format!("handshake vector {name:?}"),
        detail,
    };
    let asks = client.secret.is_some();
    let hello = client.hello_with_nonce(CLIENT_NONCE);
    let mut hello_body = Vec::new();
    encode_hello(&hello, &mut hello_body);
    let mut vector = AuthVector {
        name: name.to_string(),
        secret: client_secret.map(str::to_string),
        server_secret: server_secret.map(str::to_string),
        admin_secret: admin_secret.map(str::to_string),
        role: client.role.name().to_string(),
        id: client.id.clone(),
        versions: client.version_numbers(),
        client_nonce_hex: asks.then(|| to_hex(&CLIENT_NONCE)),
        server_nonce_hex: None,
        hello_hex: to_hex(&frame_bytes(&hello_body)),
        challenge_hex: None,
        proof_hex: None,
        answer_hex: None,
        outcome: String::new(),
    };
    let (answer, _) = match read_hello(&hello_body, server, |_| true, || Ok(SERVER_NONCE)) {
        ServerHello::Answer(answer, outcome) => (answer, outcome),
        ServerHello::Challenge(auth) => {
            vector.server_nonce_hex = Some(to_hex(&SERVER_NONCE));
            vector.challenge_hex = Some(to_hex(&frame_bytes(auth.challenge_body())));
            match read_server_frame(auth.challenge_body(), &hello, &hello_body, client) {
                Ok(ClientNext::SendProof(proof)) => {
                    vector.proof_hex = Some(to_hex(&frame_bytes(&proof)));
                    auth.finish(&proof, server, |_| true)
                }
                Ok(ClientNext::Done(_)) => {
                    return Err(broken("the client went on without proving".into()))
                }
                Err(_) => {
                    vector.outcome = "clientCloses".into();
                    return Ok(vector);
                }
            }
        }
    };
    let mut answer_body = Vec::new();
    encode_answer(&answer, &mut answer_body);
    vector.answer_hex = Some(to_hex(&frame_bytes(&answer_body)));
    vector.outcome = match &answer {
        Answer::Accepted(_) => "accepted".into(),
        Answer::Refused(r) => r.reason.name().to_string(),
    };
    Ok(vector)
}

/// The vectors: an authenticated worker, an admin UI, a wrong client secret, a wrong server
/// secret, a client without a secret, and a client with one facing a server without.
pub fn auth_vectors() -> Result<Vec<AuthVector>, Error> {
    let worker = plain(Role::Worker, "worker-1").with_versions(&Version::ALL);
    let with = |id: &Identity, s: &str| id.clone().with_secret(secret(s));
    Ok(vec![
        exchange(
            "worker authenticated",
            &with(&worker, SECRET),
            &server(),
            Some(SECRET),
            None,
            None,
        )?,
        exchange(
            "ui authenticated as admin",
            &with(&plain(Role::Ui, "ui-1"), SECRET).with_admin_secret(secret(ADMIN)),
            &server(),
            Some(SECRET),
            None,
            Some(ADMIN),
        )?,
        exchange(
            "wrong admin secret",
            &with(&plain(Role::Ui, "ui-1"), SECRET).with_admin_secret(secret("guess")),
            &server(),
            Some(SECRET),
            None,
            Some("guess"),
        )?,
        exchange(
            "server with another secret: the client closes",
            &with(&worker, SECRET),
            &plain(Role::Master, "master").with_secret(secret("another secret")),
            Some(SECRET),
            Some("another secret"),
            None,
        )?,
        exchange(
            "client without a secret",
            &worker,
            &server(),
            None,
            Some(SECRET),
            None,
        )?,
        exchange(
            "server without a secret",
            &with(&worker, SECRET),
            &plain(Role::Master, "master"),
            Some(SECRET),
            Some(""),
            None,
        )?,
    ])
}
