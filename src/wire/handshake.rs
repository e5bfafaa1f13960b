//! The handshake: the first frame each way, which settles the protocol version.
//!
//! The client sends a [`Hello`] (magic value, versions it speaks, role, id); the server answers
//! with the highest version both speak, or a refusal with a reason, after which it closes. Both
//! frames are MessagePack maps with string keys; until the handshake completes a frame may hold
//! at most 64 KiB. protocol/handshake.md specifies the bytes.
//!
//! The sans-IO functions ([`encode_hello`], [`decode_hello`], [`encode_answer`],
//! [`decode_answer`], [`negotiate`], [`answer_hello`], [`check_answer`]) hold every decision;
//! [`client_handshake`] and [`server_handshake`] run them over a byte stream.

mod answer;
mod decide;
mod error;
mod exchange;
mod hello;
mod map;
mod role;

pub use answer::{
    decode_answer, encode_answer, negotiate, Accepted, Answer, Refusal, RefusalReason,
};
pub use decide::{answer_hello, check_answer, Identity, Negotiated};
pub use error::HandshakeError;
pub use exchange::{client_handshake, server_handshake, Established};
pub use hello::{decode_hello, encode_hello, Hello};
pub use map::MAGIC;
pub use role::Role;
