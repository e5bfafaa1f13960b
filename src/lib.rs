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
//! 5. [`node`]: the protocol cores of every role, with no runtime, fed events and time.
//! 6. [`reference`](mod@reference): reference Master, Worker, driver and executor: tokio drivers
//!    of the cores, owning sockets, processes, files and clocks.
//! 7. the `sparkwire` binary (`src/cli/`).
//!
//! [`fuzzing`] holds the fuzz targets' bodies, shared by `fuzz/` and the regression tests.
//!
//! # Features
//!
//! With `default-features = false` the crate is its IO-free core, with no async runtime:
//! [`messages`], [`definition`], [`wire`] (envelope, bodies, frames, the handshake's decisions,
//! limits) and [`validate`]. The rest comes with features:
//!
//! | feature | gives |
//! |---|---|
//! | `tokio` | the tokio-util codecs ([`wire::FrameCodec`]), the handshake over a byte stream, [`connection`] |
//! | `trace` | traces ([`validate::trace`], JSON Lines) and messages from their readable JSON ([`wire::value_from_json`]) |
//! | `node` | the protocol cores of every role, [`node`], with no runtime |
//! | `reference` | the reference implementations, [`reference`](mod@reference) (implies `node`, `tokio`, `trace`) |
//! | `testing` | test-only API: [`fuzzing`], [`wire::vectors`], [`wire::check`], [`definition::convert`], [`definition::markdown`], [`validate::scenario`], `reference::local_cluster` (implies `tokio`, `trace`) |
//! | `cli` | the `sparkwire` binary's dependencies (clap, tracing-subscriber; implies `reference`, `testing`) |
//! | `tls` | TLS on connections (rustls; implies `tokio`) |
//! | `webui` | the master's and worker's web UIs (implies `reference`) |
//! | `spark` | Spark's own wire, both ways, [`spark`]: frames, Java serialization, captures, the tracer (implies `trace`; no tokio) |
//! | `spark-proxy` | the tracing proxy before a Spark process, `spark::start_proxy` (implies `spark`, `tokio`) |
//! | `arbitrary` | `arbitrary::Arbitrary` for the messages (structured fuzzing) |
//!
//! The default features are `cli`, `tls`, `webui`, `spark` and `spark-proxy`. A codec-only user writes
//! `sparkwire = { version = "0.1", default-features = false }`.
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

#[cfg(feature = "tokio")]
pub mod connection;
pub mod definition;
#[cfg(feature = "testing")]
pub mod fuzzing;
pub mod messages;
#[cfg(feature = "node")]
pub mod node;
#[cfg(feature = "reference")]
pub mod reference;
#[cfg(feature = "spark")]
pub mod spark;
pub mod validate;
pub mod wire;

/// The README's Rust examples, compiled (and the runnable ones run) as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
