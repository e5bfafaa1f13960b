//! sparkwire: a versioned, language-neutral wire definition of Apache Spark's standalone-cluster
//! protocol, with typed messages, framed codecs, version negotiation and a state-machine validator.
//!
//! Layers, each depending only on the ones before it:
//! 1. [`messages`]: plain data types, one module per family; [`definition`]: the machine-readable
//!    protocol definition of `protocol/`.
//! 2. [`wire`]: the envelope, message bodies per version, frames, codecs, the handshake; and
//!    [`connection`], its async side: connections over any byte stream with sends, asks and
//!    replies, limits and counters.
//! 3. [`validate`]: a sans-IO state-machine validator of conversations and traces.
//! 4. [`reference`](mod@reference): reference Master, Worker, driver and executor.
//!
//! [`fuzzing`] holds the fuzz targets' bodies, shared by `fuzz/` and the regression tests.
//!
//! ```
//! use bytes::Bytes;
//! use sparkwire::messages::{deploy::KillDriver, DeployMessage, Version};
//! use sparkwire::wire::{decode_frame, encode_frame, Envelope};
//!
//! let msg = DeployMessage::from(KillDriver::new("driver-20250101120000-0000".into()));
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
