//! The handshake: the first frame each way, which settles the protocol version.
//!
//! The client sends a [`Hello`] (magic value, versions it speaks, role, id); the server answers
//! with the highest version both speak, or a refusal with a reason, after which it closes. Both
//! frames are MessagePack maps with string keys; until the handshake completes a frame may hold
//! at most 64 KiB. protocol/handshake.md specifies the bytes.
//!
//! With a shared secret ([`Identity::secret`]) the hello also carries a nonce, the server answers
//! first with a [`Challenge`] (its nonce and an HMAC-SHA256 proof), the client sends its
//! [`Proof`], and only then does the server answer; a side with a secret never goes on with a
//! peer that has not proven it (protocol/handshake.md §10).
//!
//! The sans-IO functions ([`encode_hello`], [`decode_hello`], [`encode_answer`],
//! [`decode_answer`], [`negotiate`], [`read_hello`], [`ServerAuth::finish`],
//! [`read_server_frame`], [`check_answer`]) hold every decision;
//! [`client_handshake`] and [`server_handshake`] run them over a byte stream.

mod answer;
mod auth;
mod decide;
mod error;
#[cfg(feature = "tokio")]
mod exchange;
mod hello;
mod map;
mod role;

pub use answer::{
    decode_answer, encode_answer, negotiate, Accepted, Answer, Refusal, RefusalReason,
};
#[cfg(feature = "tokio")]
pub use auth::fresh_nonce;
pub use auth::{
    admin_proof, client_proof, decode_proof, encode_challenge, encode_proof, frame_bytes,
    server_proof, verify_admin_proof, verify_client_proof, verify_server_proof, Challenge, Nonce,
    Proof, Secret, AUTH_MECHANISM, NONCE_LEN, PROOF_LEN,
};
pub use decide::{
    answer_hello, check_answer, read_hello, read_server_frame, ClientNext, Identity, Negotiated,
    ServerAuth, ServerHello, CLOSE_REASON,
};
pub use error::HandshakeError;
#[cfg(feature = "tokio")]
pub use exchange::{client_handshake, refuse_handshake, server_handshake, Established};
pub use hello::{decode_hello, encode_hello, Hello};
pub use map::MAGIC;
pub use role::Role;
