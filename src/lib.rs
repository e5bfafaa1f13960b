//! sparkwire: a versioned, language-neutral wire definition of Apache Spark's standalone-cluster
//! protocol, with typed messages, framed codecs, version negotiation and a state-machine validator;
//! the protocol cores of every role, reference daemons, and Spark's own wire both ways.
//!
//! # Start here
//!
//! - **You link the codec** (encode, decode or validate frames in your own program): use
//!   `default-features = false` and read [`messages`] (the types), [`wire`]
//!   ([`wire::encode_frame`], [`wire::decode_frame`], the handshake's decisions) and [`validate`]
//!   (a conversation checked against `protocol/rules.md`). The example below is the whole of it.
//! - **You implement a master, worker, driver or executor** (in any language): read
//!   `protocol/SPEC.md`, `protocol/handshake.md` and `protocol/rules.md`, test against the golden
//!   vectors of `protocol/vectors/`, and see how [`node`]'s cores do it (feature `node`: each role
//!   a state machine fed events and time, run together in memory by `node::sim::Cluster`).
//! - **You test an endpoint**: run the conformance suite, `sparkwire-conformance` (the
//!   repository's `conformance/` crate, [`manual::conformance`]); [`validate::trace`] checks a
//!   recorded conversation.
//!
//! The long-form documents (operating a cluster, Spark interop, Wireshark, the conformance suite,
//! the library, contributing) are the [`manual`] module.
//!
//! # Layers
//!
//! Each depends only on the public API of the ones before it:
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
//! Beside them, [`spark`] reads and writes Spark's own wire; [`fuzzing`] holds the fuzz targets'
//! bodies, shared by `fuzz/` and the regression tests.
//!
//! # Features
//!
//! With `default-features = false` the crate is its IO-free core, with no async runtime (about 20
//! crates; no tokio, clap or tracing-subscriber): [`messages`], [`definition`], [`wire`]
//! (envelope, bodies, frames, the handshake's decisions and proofs, limits) and [`validate`]. The
//! rest comes with features (on docs.rs, each gated item names its feature):
//!
//! | feature | gives | implies |
//! |---|---|---|
//! | `tokio` | the tokio-util codecs ([`wire::FrameCodec`], [`wire::RawFrameCodec`]), the handshake over a byte stream, [`connection`] | |
//! | `trace` | traces ([`validate::trace`], JSON Lines) and messages from their readable JSON ([`wire::value_from_json`]) | |
//! | `node` | the protocol cores of every role and the in-memory cluster, [`node`], with no runtime | |
//! | `reference` | the reference master, worker, driver and executor, [`reference`](mod@reference): tokio around the cores | `node`, `tokio`, `trace` |
//! | `testing` | test-only API: [`fuzzing`], [`wire::vectors`], [`wire::check`], [`definition::convert`], [`definition::markdown`], [`validate::scenario`], `reference::local_cluster` | `tokio`, `trace` |
//! | `cli` | the `sparkwire` binary's dependencies (clap, tracing-subscriber) | `reference`, `testing` |
//! | `tls` | TLS on every connection (rustls with ring): `--tls-cert`, `--tls-key`, `--tls-ca` | `tokio` |
//! | `webui` | the master's and worker's web UIs (HTML, `/json`, `/metrics`) over HTTP/1.1 | `reference` |
//! | `spark` | Spark's own wire, both ways, [`spark`]: frames, RPC headers, Java serialization, captures, the tracer; no async runtime | `trace` |
//! | `spark-auth` | Spark's own authentication on Spark's wire, [`spark::auth`]: SASL DIGEST-MD5 and the AES auth engine with AES-CTR, both sides (RustCrypto primitives) | `spark` |
//! | `spark-proxy` | the tracing proxy before a Spark process (`spark::start_proxy`, `sparkwire spark proxy`) and the master's Spark-wire front (`spark::start_front`, `sparkwire master --spark-port`), each with Spark's authentication | `spark`, `spark-auth`, `tokio` |
//! | `spark-rest` | Spark's REST submission protocol, kill and status (`spark::start_rest`, `sparkwire master --spark-rest-port`), over HTTP/1.1 | `spark-proxy` |
//! | `zookeeper` | the masters' election and records in ZooKeeper (`sparkwire master --recovery-mode zookeeper`) | `reference` |
//! | `arbitrary` | `arbitrary::Arbitrary` on every message (property tests, structured fuzzing) | |
//!
//! The default features are `cli`, `tls`, `webui`, `spark`, `spark-proxy`, `spark-rest` and
//! `zookeeper`, so the binary's commands work as documented. A codec-only user writes
//! `sparkwire = { version = "0.1", default-features = false }`:
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
#![cfg_attr(docsrs, feature(doc_cfg))]
#![forbid(unsafe_code)]
#![warn(missing_docs)]

#[cfg(feature = "tokio")]
pub mod connection;
pub mod definition;
#[cfg(feature = "testing")]
pub mod fuzzing;
pub mod manual;
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
