//! sparkwire: a versioned, language-neutral wire definition of Apache Spark's standalone-cluster
//! protocol, with typed messages, framed codecs, version negotiation and a state-machine validator.
//!
//! Layers, each depending only on the public API of the ones before it:
//! 1. [`messages`]: plain data types, one module per family.
//! 2. [`definition`]: the machine-readable protocol definition of `protocol/`; [`wire`]: the
//!    envelope, message bodies per version, frames, codecs, the handshake.
//! 3. [`connection`]: the async side of the wire (tokio): connections over any byte stream with
//!    sends, asks and replies, limits and counters.
//! 4. [`validate`]: a sans-IO state-machine validator of conversations and traces.
//! 5. [`reference`](mod@reference): reference Master, Worker, driver and executor.
//! 6. the `sparkwire` binary (`src/cli/`).
//!
//! [`fuzzing`] holds the fuzz targets' bodies, shared by `fuzz/` and the regression tests.
//!
//! ```
//! use bytes::Bytes;
//! use sparkwire::messages::{deploy::KillDriver, DeployMessage, Version};
//! use sparkwire::wire::{decode_frame, encode_frame, Envelope};
//!
//! let msg = DeployMessage::from(KillDriver { driver_id: "driver-20250101120000-0000".into() });
//! let frame = encode_frame(&Envelope::Send(msg.clone()), Version::V2)?;
//! let back: Envelope<DeployMessage> = decode_frame(&Bytes::from(frame), Version::V2)?;
//! assert_eq!(back, Envelope::Send(msg));
//! # Ok::<(), sparkwire::wire::Error>(())
//! ```
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod connection;
pub mod definition;
pub mod fuzzing;
pub mod messages;
pub mod reference;
#[cfg(feature = "spark")]
pub mod spark;
pub mod validate;
pub mod wire;

/// The README's Rust examples, compiled (and the runnable ones run) as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
