//! sparkwire: a versioned, language-neutral wire definition of Apache Spark's standalone-cluster
//! protocol, with typed messages, framed codecs, version negotiation and a state-machine validator.
//!
//! Layers, each depending only on the ones before it:
//! 1. [`messages`]: plain data types, one module per family; [`definition`]: the machine-readable
//!    protocol definition of `protocol/`.
//! 2. [`wire`]: the envelope, message bodies per version, frames.
//! 3. [`validate`]: a sans-IO state-machine validator of conversations and traces.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod definition;
pub mod messages;
pub mod validate;
pub mod wire;
