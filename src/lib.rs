//! sparkwire: a versioned, language-neutral wire definition of Apache Spark's standalone-cluster
//! protocol, with typed messages, framed codecs, version negotiation and a state-machine validator.
//!
//! Layers, each depending only on the ones before it:
//! 1. [`messages`]: plain data types, one module per family; `definition`: the machine-readable
//!    protocol definition of `protocol/`.
//! 2. [`wire`]: the envelope, message bodies per version, frames, codecs, the handshake.
//! 3. [`connection`]: connections over any byte stream: sends, asks and replies, limits, counters.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod connection;
pub mod messages;
pub mod wire;
