//! Spark's own wire, both ways (feature `spark`; the proxy also needs `spark-proxy`): Netty
//! transport frames, the bodies of RPC frames, Java serialization read and written, Spark's Java
//! objects mapped to sparkwire's typed messages and back, TCP reassembly of captures, the tracer
//! that turns a connection's bytes into trace events, and a transparent proxy.
//!
//! The modules are private; this is the door, in four groups:
//! - **capture decoding**: [`decode_capture`] (a pcap or pcapng capture to a trace and a
//!   [`Summary`]), [`read_capture`] (TCP reassembly only), [`java_streams`];
//! - **the tracer**: [`Tracer`], fed the bytes of each direction of each connection;
//! - **the proxy** (feature `spark-proxy`, which brings tokio): [`start_proxy`];
//! - **the master's Spark-wire front** (feature `spark-proxy`): [`start_front`], the bridge
//!   that lets real Spark workers and applications use a sparkwire master;
//! - **a Spark-wire client or server**: transport frames ([`Frame`], [`FrameDecoder`]), the
//!   `RequestMessage` header of requests and one-way messages ([`RequestMessage`]), a typed
//!   message to the Java stream a Spark process writes ([`message_stream`], [`bool_stream`],
//!   [`int_stream`], [`check_existence_stream`]) and back ([`parse_stream`], then [`classify`] or
//!   [`reply_value`]), and the Java serialization codec itself ([`read_stream`],
//!   [`write_stream`], [`dump_stream`] over a [`Graph`]).
//!
//! ```
//! use sparkwire::messages::{deploy::KillDriver, DeployMessage, Version};
//! use sparkwire::spark::{classify, message_stream, parse_stream, Classified, Frame, RequestMessage, Typed};
//!
//! // A one-way KillDriver to a worker's endpoint, as Spark 4.0.1 writes it.
//! let m = Typed::Deploy(DeployMessage::from(KillDriver::new("driver-1".into())));
//! let header = RequestMessage {
//!     sender: Some(("127.0.0.1".into(), 7077)),
//!     receiver: Some(("127.0.0.1".into(), 7078)),
//!     endpoint: "Worker".into(),
//!     stream: message_stream(&m, Version::V2, None)?.into(),
//! };
//! let frame = Frame::OneWay { body: header.encode()?.into() }.encode()?;
//! # let _ = frame;
//! // And back: the header, the Java stream, the typed message.
//! let read = RequestMessage::parse(&header.encode()?.into()).expect("a header");
//! let graph = parse_stream(&read.stream)?;
//! assert_eq!(classify(graph.root_node()), Classified::Message(m));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

// Spark's own authentication (`spark.authenticate`): SASL DIGEST-MD5 and the auth engine.
#[cfg(feature = "spark-rest")]
pub mod audit;
#[cfg(feature = "spark-auth")]
pub mod auth;
mod build;
mod classes;
mod decode;
mod encode;
mod frame;
#[cfg(feature = "spark-proxy")]
mod front;
mod java;
#[cfg(feature = "spark-proxy")]
pub mod load;
mod map;
mod pcap;
#[cfg(feature = "spark-proxy")]
mod proxy;
#[cfg(all(feature = "spark-proxy", feature = "reference"))]
pub mod recovered;
mod release;
#[cfg(feature = "spark-rest")]
mod rest;
mod rpc;
#[cfg(feature = "spark-proxy")]
mod served;
// The whole data model of a Java stream, for the fuzz targets that build graphs by hand.
pub(crate) mod serial;
mod tracer;
#[cfg(feature = "testing")]
mod vectors;

// Capture decoding.
pub use decode::{decode_capture, decode_capture_with, java_streams, Decoded};
pub use pcap::{read_capture, CaptureError, Endpoints, TcpEvent, Timed};
// The tracer.
pub use tracer::{
    error_of, ConnSummary, RoundTrip, Summary, Tracer, MAX_CLASSES, MAX_CONNECTIONS, MAX_FAILURES,
    MORE_CLASSES,
};
// The proxy.
#[cfg(feature = "spark-proxy")]
pub use proxy::{
    start_proxy, OnEvent, OnViolation, ProxyHandle, ProxyOptions, ProxyOutcome, MAX_BACKLOG,
};
// The Spark-wire front of a sparkwire master.
#[cfg(feature = "spark-proxy")]
pub use front::{
    name_front, role_of, start_front, FrontConfig, FrontError, MASTER_ENDPOINT, WORKER_ENDPOINT,
};
// A Spark-wire peer: frames, RPC headers, messages to Java streams and back.
pub use classes::{ClassEntry, ClassTable, FieldEntry};
pub use encode::{
    bool_stream, check_existence_stream, class_stream, int_stream, message_graph, message_stream,
    EncodeError,
};
pub use frame::{
    Frame, FrameDecoder, FrameEncodeError, FrameError, FrameItem, FrameType, DEFAULT_MAX_FRAME,
};
pub use java::{limits as java_limits, parse as parse_stream, JavaError, MAX_STREAM};
pub use map::{catalogue_name, classify, reply_value, Classified, ReplyValue, Typed, RPC_FAILURE};
pub use release::{
    Detector, Mismatch, Probe, ProbeAnswer, Release, Unknown, Verdict, PROBE_ENDPOINT,
};
#[cfg(feature = "spark-rest")]
pub use rest::{start_rest, RestConfig, REST_PROTOCOL_VERSION, UNKNOWN_PROTOCOL_VERSION};
pub use rpc::{address_text, block_transfer_class, RequestMessage, CHECK_EXISTENCE, VERIFIER};
#[cfg(feature = "spark-proxy")]
pub use served::ServerHandle;
// Java serialization, read and written.
pub use serial::{
    dump as dump_stream, read as read_stream, write as write_stream, Cursor, Entry, Graph, Limits,
    Node, SerialError, MAGIC,
};
// Spark's golden vectors (test-only API).
#[cfg(feature = "testing")]
pub use vectors::{check_vectors, render_vectors, vectors_text, SparkVector, SparkVectors};
