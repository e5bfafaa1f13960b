//! Spark connections' bytes to trace events: frames are decoded per direction, messages typed,
//! asks paired with their replies, and each connection's roles found from what it carries.
//!
//! Sans-IO: the caller feeds opens, bytes and closes with their times (from a capture or a live
//! proxy) and gets [`Event`]s back. A connection's `open` event is held back until its roles are
//! known (the first catalogued message, or the close); frames outside the catalogue seen before
//! then are held with it and follow it, with their own times.

use std::collections::{BTreeMap, HashMap};

use bytes::Bytes;

use super::encode;
use super::frame::{Frame, FrameDecoder, FrameError, FrameType, DEFAULT_MAX_FRAME};
use super::java;
use super::map::{classify, reply_value, Classified, ReplyValue, Typed};
use super::release::{Detector, Release};
use super::rpc::{address_text, block_transfer_class, RequestMessage};
use super::serial::MAGIC;
use crate::definition::Definition;
use crate::messages::{CoarseMessage, DeployMessage, ErrorDescription, Version};
use crate::validate::{
    ConnId, Endpoint, Event, EventBody, OutsideFrame, OutsideStatus, TaskPayloads,
};
use crate::wire::handshake::Role;
use crate::wire::{Envelope, Reply};

/// Most frames held while a connection's roles are unknown.
const MAX_HELD: usize = 256;

/// Most requests remembered per connection while unanswered; beyond, their responses are taken
/// as answers to requests not seen.
const MAX_ASKS: usize = 1 << 16;

/// The class Spark's endpoint check has.
use super::rpc::CHECK_EXISTENCE;

/// What one connection was, for the summary.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ConnSummary {
    /// The client's socket address.
    pub client: String,
    /// The server's socket address.
    pub server: String,
    /// The roles found, client then server (none while unknown).
    pub roles: Option<(Role, Role)>,
    /// Frames decoded (both directions).
    pub frames: u64,
    /// Catalogued messages among them.
    pub messages: u64,
    /// Bytes client → server and server → client.
    pub bytes: [u64; 2],
    /// The connection did not carry Spark's framing; it is left out of the trace.
    pub not_spark: bool,
    /// The Spark release its streams were told to be (or pinned to), once one was judged: the
    /// newest of [`ConnSummary::agreeing`].
    pub release: Option<String>,
    /// Every release whose class table agrees with all the streams judged so far, oldest first
    /// (SPEC §15.3).
    pub agreeing: Vec<String>,
}

/// What a decode found, across connections.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Summary {
    /// Connections by id (the first [`MAX_CONNECTIONS`]).
    pub connections: BTreeMap<ConnId, ConnSummary>,
    /// Connections beyond those kept.
    pub more_connections: u64,
    /// Frames by transport type.
    pub frames: BTreeMap<String, u64>,
    /// Catalogued messages by Spark class, with their sparkwire type (`family.Name`).
    pub messages: BTreeMap<String, (String, u64)>,
    /// Frames outside the catalogue by class (or frame type, when they hold no class).
    pub outside: BTreeMap<String, u64>,
    /// Classes not recognised, by name.
    pub unknown: BTreeMap<String, u64>,
    /// What could not be decoded: connection, direction and reason (the first [`MAX_FAILURES`]).
    pub failures: Vec<String>,
    /// Failures beyond those kept.
    pub more_failures: u64,
    /// Every frame by transport type and class (the frame type for frames without a class).
    pub by_class: BTreeMap<(String, String), u64>,
    /// What re-encoding the decoded frames gave, when [`Tracer::check_roundtrip`] asked for it.
    pub roundtrip: Option<RoundTrip>,
}

/// Frames re-encoded from what was decoded of them: each catalogued message (and each endpoint
/// check and its answer) written again from its typed value, in its RPC header and transport
/// frame, and compared with the bytes that crossed the wire.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct RoundTrip {
    /// Frames whose bytes came back exactly.
    pub same: u64,
    /// Frames whose bytes did not (or that could not be encoded).
    pub differ: u64,
    /// By message (`deploy.RegisterWorker`, `reply.bool`, `CheckExistence`): same, differ.
    pub by_message: BTreeMap<String, (u64, u64)>,
    /// The first [`MAX_FAILURES`] frames that differed: connection, direction, message and how.
    pub differences: Vec<String>,
}

impl RoundTrip {
    fn record(&mut self, what: &str, outcome: Result<(), String>, place: impl FnOnce() -> String) {
        let e = self.by_message.entry(what.to_string()).or_insert((0, 0));
        match outcome {
            Ok(()) => {
                self.same += 1;
                e.0 += 1;
            }
            Err(why) => {
                self.differ += 1;
                e.1 += 1;
                if self.differences.len() < MAX_FAILURES {
                    self.differences.push(format!("{} {what}: {why}", place()));
                }
            }
        }
    }
}

/// Compares re-encoded frame bytes with the original's.
fn compare(ours: Result<Vec<u8>, String>, theirs: &[u8]) -> Result<(), String> {
    let ours = ours?;
    if ours == theirs {
        return Ok(());
    }
    let at = ours
        .iter()
        .zip(theirs)
        .position(|(a, b)| a != b)
        .unwrap_or(ours.len().min(theirs.len()));
    Err(format!(
        "{} bytes re-encoded for {} on the wire, first difference at byte {at}",
        ours.len(),
        theirs.len()
    ))
}

/// Most connections a summary describes; beyond, they are only counted.
pub const MAX_CONNECTIONS: usize = 10_000;

/// Most failures kept in a summary; beyond, they are only counted.
pub const MAX_FAILURES: usize = 1000;

/// Most distinct classes a summary counts by name; beyond, they are counted together (a peer
/// names its classes, so their number is its to choose).
pub const MAX_CLASSES: usize = 4096;

/// The key classes beyond [`MAX_CLASSES`] are counted under.
pub const MORE_CLASSES: &str = "(more classes)";

fn bump<K: Ord + Clone>(map: &mut BTreeMap<K, u64>, key: K, other: impl FnOnce() -> K) {
    let key = if map.len() >= MAX_CLASSES && !map.contains_key(&key) {
        other()
    } else {
        key
    };
    *map.entry(key).or_insert(0) += 1;
}

impl Summary {
    /// Records what could not be decoded.
    pub fn fail(&mut self, what: String) {
        if self.failures.len() < MAX_FAILURES {
            self.failures.push(what);
        } else {
            self.more_failures += 1;
        }
    }

    /// Frames in all.
    pub fn total_frames(&self) -> u64 {
        self.frames.values().sum()
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum AskKind {
    Catalogued,
    /// An endpoint check (`RpcEndpointVerifier.CheckExistence`), answered with a Boolean.
    Check,
    Outside,
}

#[derive(Debug, Default)]
struct Hints {
    /// Names of the endpoints the client's requests went to.
    server_endpoints: Vec<String>,
    /// The endpoint an endpoint check asked about.
    checked: Option<String>,
    /// The client's RPC address, from its requests.
    client_rpc: Option<String>,
    /// Whether block-transfer traffic was seen.
    block_transfer: bool,
}

#[derive(Debug)]
struct Conn {
    client: String,
    server: String,
    opened: u64,
    decoders: [FrameDecoder; 2],
    ends: Option<(Endpoint, Endpoint)>,
    held: Vec<(u64, bool, OutsideFrame)>,
    asks: HashMap<(bool, i64), AskKind>,
    hints: Hints,
    good_frames: u64,
    not_spark: bool,
    /// The release the connection's streams speak, as far as they have told it.
    detector: Detector,
    /// The connection's events, held while the releases its streams agree with map to more
    /// than one protocol version (a first stream of classes every release shares); written out
    /// with the version once it is known, or at the close, or when [`MAX_PARKED`] are held.
    parked: Vec<Event>,
    /// Whether the connection's protocol version is settled: told by its streams, or taken as
    /// the best guess once [`MAX_PARKED`] events were held. Its events are then written at once.
    settled: bool,
}

/// Events of one connection held while its protocol version is undecided.
const MAX_PARKED: usize = 256;

impl Conn {
    /// Whether the releases the connection's streams agree with all map to one protocol
    /// version (or the release is pinned).
    fn versioned(&self) -> bool {
        let mut versions = self.detector.candidates().iter().map(|r| r.version());
        match versions.next() {
            Some(first) => versions.all(|v| v == first),
            None => true,
        }
    }
}

/// Turns Spark connections into trace events.
#[derive(Debug)]
pub struct Tracer {
    /// The release every connection is read as, when pinned; `None`: told per connection.
    pinned: Option<&'static Release>,
    max_frame: u64,
    conns: HashMap<ConnId, Conn>,
    /// Worker ids by the worker's RPC address.
    workers: HashMap<String, String>,
    summary: Summary,
    out: Vec<Event>,
    /// The bytes of the frame being handled (for the round-trip check).
    raw: Bytes,
}

impl Default for Tracer {
    fn default() -> Self {
        Tracer::detecting()
    }
}

/// Spark's error text (a stack trace) as an error: the first line's exception class and message.
pub fn error_of(text: &str) -> ErrorDescription {
    let first = text.lines().next().unwrap_or_default();
    match first.split_once(": ") {
        Some((class, message)) if !class.contains(' ') => ErrorDescription::new(class, message),
        _ => ErrorDescription::new("org.apache.spark.SparkException", first),
    }
}

impl Tracer {
    /// A tracer that tells each connection's Spark release from the Java streams it carries
    /// (SPEC §15.1).
    pub fn detecting() -> Self {
        Tracer::with_release(None)
    }

    /// A tracer that reads every connection as Spark of protocol `version`'s release (3.0.3 for
    /// version 1, 4.0.1 for version 2).
    pub fn new(version: Version) -> Self {
        Tracer::with_release(Some(Release::of(version)))
    }

    /// A tracer pinned to `release`, or detecting each connection's (`None`).
    pub fn with_release(pinned: Option<&'static Release>) -> Self {
        Tracer {
            pinned,
            max_frame: DEFAULT_MAX_FRAME,
            conns: HashMap::new(),
            workers: HashMap::new(),
            summary: Summary::default(),
            out: Vec::new(),
            raw: Bytes::new(),
        }
    }

    /// Re-encode every decoded catalogued frame (and endpoint check) from its typed value and
    /// compare it with the original bytes; the outcome is [`Summary::roundtrip`].
    pub fn check_roundtrip(mut self) -> Self {
        self.summary.roundtrip = Some(RoundTrip::default());
        self
    }

    fn roundtrip(
        &mut self,
        conn: ConnId,
        from_client: bool,
        what: &str,
        encode: impl FnOnce() -> Result<Vec<u8>, String>,
    ) {
        let Some(rt) = self.summary.roundtrip.as_mut() else {
            return;
        };
        let outcome = compare(encode(), &self.raw);
        rt.record(what, outcome, || {
            format!("conn {conn} {}", if from_client { "c→s" } else { "s→c" })
        });
    }

    /// What was found so far.
    pub fn summary(&self) -> &Summary {
        &self.summary
    }

    /// A connection from `client` to `server` (socket addresses) opened at `time` ms.
    pub fn open(&mut self, conn: ConnId, time: u64, client: String, server: String) {
        if self.summary.connections.len() < MAX_CONNECTIONS {
            self.summary.connections.insert(
                conn,
                ConnSummary {
                    client: client.clone(),
                    server: server.clone(),
                    ..ConnSummary::default()
                },
            );
        } else {
            self.summary.more_connections += 1;
        }
        self.conns.insert(
            conn,
            Conn {
                client,
                server,
                opened: time,
                decoders: [
                    FrameDecoder::new(self.max_frame),
                    FrameDecoder::new(self.max_frame),
                ],
                ends: None,
                held: Vec::new(),
                asks: HashMap::new(),
                hints: Hints::default(),
                good_frames: 0,
                not_spark: false,
                detector: match self.pinned {
                    Some(r) => Detector::pinned(r),
                    None => Detector::new(),
                },
                parked: Vec::new(),
                settled: self.pinned.is_some(),
            },
        );
    }

    /// Bytes of `conn` at `time` ms from the client (`from_client`) or the server; returns the
    /// events they complete.
    pub fn data(&mut self, conn: ConnId, time: u64, from_client: bool, bytes: &[u8]) -> Vec<Event> {
        let Some(c) = self.conns.get_mut(&conn) else {
            return Vec::new();
        };
        if let Some(s) = self.summary.connections.get_mut(&conn) {
            s.bytes[usize::from(!from_client)] += bytes.len() as u64;
        }
        if c.not_spark {
            return Vec::new();
        }
        let dir = usize::from(!from_client);
        c.decoders[dir].push(bytes);
        while let Some(item) = self
            .conns
            .get_mut(&conn)
            .and_then(|c| c.decoders[dir].next_item())
        {
            self.raw = item.raw;
            match item.frame {
                Ok(frame) => self.frame(conn, time, from_client, item.bytes, frame),
                Err(e) => self.frame_error(conn, time, from_client, item.bytes, e),
            }
        }
        std::mem::take(&mut self.out)
    }

    /// `conn` closed at `time` ms; returns its remaining events.
    pub fn close(&mut self, conn: ConnId, time: u64) -> Vec<Event> {
        if let Some(c) = self.conns.get(&conn) {
            for (dir, d) in c.decoders.iter().enumerate() {
                if d.buffered() > 0 && !c.not_spark {
                    self.summary.fail(format!(
                        "conn {conn} {}: {} bytes of an unfinished frame at the close",
                        if dir == 0 { "c→s" } else { "s→c" },
                        d.buffered()
                    ));
                }
            }
        }
        if let Some(c) = self.conns.get(&conn) {
            if !c.not_spark {
                self.settle(conn);
                if self.conns.get(&conn).is_some_and(|c| c.ends.is_some()) {
                    self.emit(Event::close(time, conn));
                }
            }
        }
        self.unpark(conn, true);
        self.conns.remove(&conn);
        std::mem::take(&mut self.out)
    }

    /// Bytes of `conn` were not captured: frames after the gap may be misread.
    pub fn gap(&mut self, conn: ConnId, from_client: bool, missing: u64) {
        let dir = if from_client { "c→s" } else { "s→c" };
        self.summary.fail(format!(
            "conn {conn} {dir}: {missing} bytes missing from the capture"
        ));
    }

    /// Records a failure of the input on `conn` (the caller's, such as bytes it could not pass on).
    pub fn failure(&mut self, conn: ConnId, from_client: bool, what: &str) {
        let dir = if from_client { "c→s" } else { "s→c" };
        self.summary.fail(format!("conn {conn} {dir}: {what}"));
    }

    /// Ends the input: connections still open get their held events (and stay open in the trace).
    pub fn finish(&mut self) -> Vec<Event> {
        let mut ids: Vec<ConnId> = self.conns.keys().copied().collect();
        ids.sort_unstable();
        for id in ids {
            if self.conns.get(&id).is_some_and(|c| !c.not_spark) {
                self.settle(id);
            }
            self.unpark(id, true);
        }
        std::mem::take(&mut self.out)
    }

    fn frame_error(
        &mut self,
        conn: ConnId,
        time: u64,
        from_client: bool,
        bytes: u64,
        e: FrameError,
    ) {
        let Some(c) = self.conns.get_mut(&conn) else {
            return;
        };
        if c.good_frames == 0 {
            // Not Spark's framing from the start: leave the connection out.
            c.not_spark = true;
            if let Some(s) = self.summary.connections.get_mut(&conn) {
                s.not_spark = true;
            }
            return;
        }
        let dir = if from_client { "c→s" } else { "s→c" };
        self.summary.fail(format!("conn {conn} {dir}: {e}"));
        *self.summary.frames.entry("(bad frame)".into()).or_insert(0) += 1;
        let frame = OutsideFrame {
            transport: match &e {
                FrameError::Malformed { kind, .. } => kind.as_str().to_string(),
                _ => "(bad frame)".to_string(),
            },
            id: None,
            endpoint: None,
            class: None,
            status: OutsideStatus::Undecoded,
            detail: Some(e.to_string()),
            bytes,
        };
        self.outside(conn, time, from_client, frame);
    }

    fn frame(&mut self, conn: ConnId, time: u64, from_client: bool, bytes: u64, frame: Frame) {
        let kind = frame.kind();
        *self
            .summary
            .frames
            .entry(kind.as_str().to_string())
            .or_insert(0) += 1;
        if let Some(s) = self.summary.connections.get_mut(&conn) {
            s.frames += 1;
        }
        let Some(c) = self.conns.get_mut(&conn) else {
            return;
        };
        c.good_frames += 1;
        let base =
            |class: Option<String>, id: Option<i64>, endpoint: Option<String>| OutsideFrame {
                transport: kind.as_str().to_string(),
                id: id.map(|i| i as u64),
                endpoint,
                class,
                status: OutsideStatus::Outside,
                detail: None,
                bytes,
            };
        match frame {
            Frame::RpcRequest { request_id, body } => {
                self.request(conn, time, from_client, bytes, Some(request_id), &body)
            }
            Frame::OneWay { body } => self.request(conn, time, from_client, bytes, None, &body),
            Frame::RpcResponse { request_id, body } => {
                let asked = c.asks.remove(&(!from_client, request_id));
                if asked == Some(AskKind::Catalogued) {
                    self.reply(conn, time, from_client, bytes, request_id, &body);
                } else {
                    if asked == Some(AskKind::Check) {
                        let version = self.release_of(conn);
                        let answer = java::parse(&body)
                            .ok()
                            .and_then(|g| java::boolean(g.root_node(), "reply").ok());
                        self.roundtrip(conn, from_client, "reply.bool", || {
                            let b = answer.ok_or("the answer is not a Boolean")?;
                            let stream =
                                encode::bool_stream(b, version).map_err(|e| e.to_string())?;
                            response_frame(request_id, stream)
                        });
                    }
                    let class = if body.starts_with(&MAGIC) {
                        java::parse(&body)
                            .ok()
                            .and_then(|g| g.root_node().class().map(str::to_string))
                    } else {
                        block_transfer_class(&body).map(str::to_string)
                    };
                    let mut f = base(class, Some(request_id), None);
                    if asked.is_none() {
                        f.detail = Some("a response to a request not seen".into());
                    }
                    self.outside(conn, time, from_client, f);
                }
            }
            Frame::RpcFailure { request_id, error } => {
                let asked = c.asks.remove(&(!from_client, request_id));
                if asked == Some(AskKind::Catalogued) {
                    let error = error_of(&error);
                    self.envelope(
                        conn,
                        time,
                        from_client,
                        EnvelopeOf::Failure(request_id, error),
                        "(failure)",
                    );
                } else {
                    let mut f = base(None, Some(request_id), None);
                    f.detail = error.lines().next().map(str::to_string);
                    self.outside(conn, time, from_client, f);
                }
            }
            Frame::Transfer { .. } => {
                c.hints.block_transfer = true;
                self.outside(conn, time, from_client, base(None, None, None));
            }
        }
    }

    /// Counts a frame by transport and class.
    fn seen(&mut self, transport: &str, class: &str) {
        bump(
            &mut self.summary.by_class,
            (transport.to_string(), class.to_string()),
            || (transport.to_string(), MORE_CLASSES.to_string()),
        );
    }

    fn request(
        &mut self,
        conn: ConnId,
        time: u64,
        from_client: bool,
        bytes: u64,
        request_id: Option<i64>,
        body: &Bytes,
    ) {
        let kind = if request_id.is_some() {
            FrameType::RpcRequest
        } else {
            FrameType::OneWayMessage
        };
        let mut frame = OutsideFrame {
            transport: kind.as_str().to_string(),
            id: request_id.map(|i| i as u64),
            endpoint: None,
            class: None,
            status: OutsideStatus::Outside,
            detail: None,
            bytes,
        };
        let ask_kind = |c: &mut Conn, k: AskKind| {
            if let Some(id) = request_id {
                if c.asks.len() < MAX_ASKS {
                    c.asks.insert((from_client, id), k);
                }
            }
        };
        let Some(c) = self.conns.get_mut(&conn) else {
            return;
        };
        let Some(rm) = RequestMessage::parse(body) else {
            if let Some(class) = block_transfer_class(body) {
                c.hints.block_transfer = true;
                ask_kind(c, AskKind::Outside);
                frame.class = Some(class.to_string());
            } else {
                ask_kind(c, AskKind::Outside);
                frame.status = OutsideStatus::Undecoded;
                frame.detail =
                    Some("the body is neither an RPC request nor a block-transfer message".into());
                self.summary
                    .fail(format!("conn {conn}: {kind} body not decoded"));
            }
            self.outside(conn, time, from_client, frame);
            return;
        };
        if from_client {
            c.hints.server_endpoints.push(rm.endpoint.clone());
            if let Some(s) = &rm.sender {
                c.hints.client_rpc = Some(address_text(s));
            }
        }
        frame.endpoint = Some(rm.endpoint.clone());
        let graph = match java::parse(&rm.stream) {
            Ok(g) => g,
            Err(e) => {
                ask_kind(c, AskKind::Outside);
                frame.status = OutsideStatus::Undecoded;
                frame.detail = Some(e.to_string());
                self.summary
                    .fail(format!("conn {conn}: {kind} to {}: {e}", rm.endpoint));
                self.outside(conn, time, from_client, frame);
                return;
            }
        };
        self.observe(conn, &graph);
        let Some(c) = self.conns.get_mut(&conn) else {
            return;
        };
        let value = graph.root_node();
        let class = value.class().unwrap_or_default().to_string();
        match classify(value) {
            Classified::Message(m) => {
                ask_kind(c, AskKind::Catalogued);
                self.count_message(&class, &m);
                let version = self.release_of(conn);
                self.roundtrip(
                    conn,
                    from_client,
                    &format!("{}.{}", m.family(), m.name()),
                    || {
                        let stream = encode::message_stream(&m, version, Some(&graph))
                            .map_err(|e| e.to_string())?;
                        request_frame(&rm, stream, request_id)
                    },
                );
                let env = match request_id {
                    Some(id) => EnvelopeOf::Ask(id, m),
                    None => EnvelopeOf::Send(m),
                };
                self.envelope(conn, time, from_client, env, &class);
            }
            Classified::Outside(cl) => {
                if cl == CHECK_EXISTENCE {
                    let name = java::str_field(value, "name").ok();
                    if from_client {
                        c.hints.checked = name.clone();
                    }
                    ask_kind(c, AskKind::Check);
                    if let Some(name) = name {
                        let version = self.release_of(conn);
                        self.roundtrip(conn, from_client, "CheckExistence", || {
                            let stream = encode::check_existence_stream(&name, version)
                                .map_err(|e| e.to_string())?;
                            request_frame(&rm, stream, request_id)
                        });
                    }
                } else {
                    ask_kind(c, AskKind::Outside);
                }
                frame.class = Some(cl.clone());
                self.outside(conn, time, from_client, frame);
            }
            Classified::Unknown(cl) => {
                ask_kind(c, AskKind::Outside);
                frame.class = Some(cl.clone());
                frame.status = OutsideStatus::Unknown;
                bump(&mut self.summary.unknown, cl, || MORE_CLASSES.to_string());
                self.outside(conn, time, from_client, frame);
            }
            Classified::Failed(cl, e) => {
                ask_kind(c, AskKind::Outside);
                frame.class = Some(cl.clone());
                frame.status = OutsideStatus::Undecoded;
                frame.detail = Some(e.clone());
                self.summary.fail(format!("conn {conn}: {cl}: {e}"));
                self.outside(conn, time, from_client, frame);
            }
        }
    }

    /// Tells `conn`'s release from one more of its streams (and notes it in the summary).
    fn observe(&mut self, conn: ConnId, graph: &super::serial::Graph) {
        let Some(c) = self.conns.get_mut(&conn) else {
            return;
        };
        let told = c.detector.observe(graph).ok();
        if let (Some(r), Some(s)) = (told, self.summary.connections.get_mut(&conn)) {
            s.release = Some(r.name().to_string());
            s.agreeing = c
                .detector
                .candidates()
                .iter()
                .map(|r| r.name().to_string())
                .collect();
        }
        self.unpark(conn, false);
    }

    /// The release `conn`'s frames are written again in.
    fn release_of(&self, conn: ConnId) -> &'static Release {
        match self.conns.get(&conn) {
            Some(c) => c.detector.release(),
            None => self.pinned.unwrap_or_else(|| Release::of(Version::V2)),
        }
    }

    fn count_message(&mut self, class: &str, m: &Typed) {
        let e = self
            .summary
            .messages
            .entry(class.to_string())
            .or_insert_with(|| (format!("{}.{}", m.family(), m.name()), 0));
        e.1 += 1;
    }

    fn reply(
        &mut self,
        conn: ConnId,
        time: u64,
        from_client: bool,
        bytes: u64,
        request_id: i64,
        body: &Bytes,
    ) {
        if let Ok(g) = java::parse(body) {
            self.observe(conn, &g);
        }
        let version = self.release_of(conn);
        let parsed = java::parse(body).and_then(|g| {
            let v = g.root_node();
            let class = v.class().unwrap_or_default().to_string();
            let r = reply_value(v)?;
            let what = match &r {
                ReplyValue::Bool(_) => "reply.bool".to_string(),
                ReplyValue::Int(_) => "reply.i32".to_string(),
                ReplyValue::Message(m) => format!("{}.{}", m.family(), m.name()),
                ReplyValue::Failure(_) | ReplyValue::Other(_) => class.clone(),
            };
            let again = match &r {
                ReplyValue::Bool(b) => encode::bool_stream(*b, version),
                ReplyValue::Int(i) => encode::int_stream(*i, version),
                ReplyValue::Message(m) => encode::message_stream(m, version, Some(&g)),
                ReplyValue::Failure(_) | ReplyValue::Other(_) => Ok(Vec::new()),
            }
            .map_err(|e| e.to_string());
            Ok((class, r, what, again))
        });
        let parsed = match parsed {
            Ok((class, r, what, again)) => {
                // An exception's graph (its stack trace) is not written again: not compared.
                if !matches!(r, ReplyValue::Failure(_) | ReplyValue::Other(_)) {
                    self.roundtrip(conn, from_client, &what, || {
                        response_frame(request_id, again?)
                    });
                }
                Ok((class, r))
            }
            Err(e) => Err(e),
        };
        match parsed {
            Ok((class, r)) => {
                let reply = match r {
                    ReplyValue::Failure(error) => {
                        self.envelope(
                            conn,
                            time,
                            from_client,
                            EnvelopeOf::Failure(request_id, error),
                            &class,
                        );
                        return;
                    }
                    ReplyValue::Bool(b) => ReplyOf::Bool(b),
                    ReplyValue::Int(i) => ReplyOf::Int(i),
                    ReplyValue::Message(m) => {
                        self.count_message(&class, &m);
                        ReplyOf::Message(m)
                    }
                    ReplyValue::Other(c) => {
                        let f = OutsideFrame {
                            transport: FrameType::RpcResponse.as_str().to_string(),
                            id: Some(request_id as u64),
                            endpoint: None,
                            class: Some(c.clone()),
                            status: OutsideStatus::Undecoded,
                            detail: Some(format!(
                                "{c} is not a reply sparkwire models for this ask"
                            )),
                            bytes,
                        };
                        self.summary
                            .fail(format!("conn {conn}: reply {c} to a catalogued ask"));
                        self.outside(conn, time, from_client, f);
                        return;
                    }
                };
                self.envelope(
                    conn,
                    time,
                    from_client,
                    EnvelopeOf::Reply(request_id, reply),
                    &class,
                );
            }
            Err(e) => {
                self.summary
                    .fail(format!("conn {conn}: reply to a catalogued ask: {e}"));
                let f = OutsideFrame {
                    transport: FrameType::RpcResponse.as_str().to_string(),
                    id: Some(request_id as u64),
                    endpoint: None,
                    class: None,
                    status: OutsideStatus::Undecoded,
                    detail: Some(e.to_string()),
                    bytes,
                };
                self.outside(conn, time, from_client, f);
            }
        }
    }

    /// An outside frame: held until the connection's roles are known, or written now.
    fn outside(&mut self, conn: ConnId, time: u64, from_client: bool, frame: OutsideFrame) {
        let class = frame
            .class
            .clone()
            .unwrap_or_else(|| frame.transport.clone());
        if frame.bytes > 0 {
            self.seen(&frame.transport, &class);
        }
        if frame.status == OutsideStatus::Outside {
            bump(&mut self.summary.outside, class, || {
                MORE_CLASSES.to_string()
            });
        }
        self.place(conn, time, from_client, frame);
    }

    /// Holds an outside frame until the connection's ends are known, or writes it.
    fn place(&mut self, conn: ConnId, time: u64, from_client: bool, frame: OutsideFrame) {
        let Some(c) = self.conns.get_mut(&conn) else {
            return;
        };
        match &c.ends {
            None if c.held.len() < MAX_HELD => c.held.push((time, from_client, frame)),
            None => {
                // Too long without a catalogued message: give the connection its ends now.
                c.held.push((time, from_client, frame));
                self.settle(conn);
            }
            Some((client, server)) => {
                let (from, to) = if from_client {
                    (client.clone(), server.clone())
                } else {
                    (server.clone(), client.clone())
                };
                self.emit(Event {
                    time,
                    conn,
                    body: EventBody::Outside { from, to, frame },
                });
            }
        }
    }

    /// Gives a connection its ends from what it carried, if it has none yet, and writes its open
    /// event and held frames.
    fn settle(&mut self, conn: ConnId) {
        let Some(c) = self.conns.get(&conn) else {
            return;
        };
        if c.ends.is_some() {
            return;
        }
        let (client_role, server_role) = if c.hints.block_transfer {
            (Role::Executor, Role::Driver)
        } else {
            let named = c
                .hints
                .checked
                .clone()
                .or_else(|| c.hints.server_endpoints.first().cloned())
                .unwrap_or_default();
            match named.as_str() {
                "Master" => (Role::AppClient, Role::Master),
                "Worker" => (Role::Executor, Role::Worker),
                _ => (Role::Executor, Role::Driver),
            }
        };
        self.set_ends(conn, client_role, server_role, None);
    }

    fn set_ends(
        &mut self,
        conn: ConnId,
        client_role: Role,
        server_role: Role,
        msg: Option<&Typed>,
    ) {
        let Some(c) = self.conns.get(&conn) else {
            return;
        };
        let worker_id = msg.and_then(|m| match m {
            Typed::Deploy(DeployMessage::RegisterWorker(r)) => Some(r.id.clone()),
            Typed::Deploy(DeployMessage::Heartbeat(h)) => Some(h.worker_id.clone()),
            Typed::Deploy(DeployMessage::WorkerLatestState(w)) => Some(w.id.clone()),
            _ => None,
        });
        if let Some(Typed::Deploy(DeployMessage::RegisterWorker(r))) = msg {
            self.workers
                .insert(format!("{}:{}", r.host, r.port), r.id.clone());
        }
        let id_of = |role: Role, addr: &str, is_client: bool| -> String {
            match role {
                Role::Worker if is_client => worker_id
                    .clone()
                    .or_else(|| {
                        c.hints
                            .client_rpc
                            .as_ref()
                            .and_then(|a| self.workers.get(a).cloned())
                    })
                    .unwrap_or_else(|| {
                        c.hints
                            .client_rpc
                            .clone()
                            .unwrap_or_else(|| addr.to_string())
                    }),
                Role::Worker => self
                    .workers
                    .get(addr)
                    .cloned()
                    .unwrap_or_else(|| addr.to_string()),
                Role::AppClient | Role::DriverClient if is_client => c
                    .hints
                    .client_rpc
                    .clone()
                    .unwrap_or_else(|| addr.to_string()),
                Role::Executor if is_client => match msg {
                    Some(Typed::Coarse(CoarseMessage::RegisterExecutor(r))) => {
                        r.executor_id.clone()
                    }
                    _ => addr.to_string(),
                },
                _ => addr.to_string(),
            }
        };
        let client = Endpoint::new(client_role, id_of(client_role, &c.client, true));
        let server = Endpoint::new(server_role, id_of(server_role, &c.server, false));
        let opened = c.opened;
        let version = c.detector.release().version();
        if let Some(s) = self.summary.connections.get_mut(&conn) {
            s.roles = Some((client_role, server_role));
        }
        let Some(c) = self.conns.get_mut(&conn) else {
            return;
        };
        c.ends = Some((client.clone(), server.clone()));
        let held = std::mem::take(&mut c.held);
        // Every task a Spark connection carries is Spark's own (its TaskDescription and task
        // results): the trace says so, and validators count tasks instead of reading them.
        self.emit(
            Event::open(opened, conn, client.clone(), server.clone(), version)
                .with_tasks(TaskPayloads::Spark),
        );
        for (time, from_client, frame) in held {
            self.place(conn, time, from_client, frame);
        }
    }

    /// The roles a catalogued message implies: its sender's and receiver's, as a pair that talks.
    /// The roles a connection has if `m` crossed it (from its client when `from_client`);
    /// where several pairs fit (a master that dialled a worker or an application after a
    /// restart sends MasterChanged to either), the endpoint the client checked for decides.
    fn roles_for(m: &Typed, from_client: bool, checked: Option<&str>) -> Option<(Role, Role)> {
        let def = Definition::builtin().message(m.family(), m.name())?;
        let roles = |names: &[String]| -> Vec<Role> {
            names.iter().filter_map(|n| Role::from_name(n)).collect()
        };
        let (from, to) = (roles(&def.from), roles(&def.to));
        // Connections a master opens come last: a master dials only when it has no connection
        // from the peer (a restarted master recovering its workers and applications).
        const PAIRS: [(Role, Role); 10] = [
            (Role::Worker, Role::Master),
            (Role::AppClient, Role::Master),
            (Role::DriverClient, Role::Master),
            (Role::Ui, Role::Master),
            (Role::Ui, Role::Worker),
            (Role::Executor, Role::Driver),
            (Role::ClusterManager, Role::Driver),
            (Role::Executor, Role::Worker),
            (Role::Master, Role::Worker),
            (Role::Master, Role::AppClient),
        ];
        let fits = PAIRS.into_iter().filter(|(client, server)| {
            if from_client {
                from.contains(client) && to.contains(server)
            } else {
                from.contains(server) && to.contains(client)
            }
        });
        let named = match checked {
            Some("Master") => Some(Role::Master),
            Some("Worker") => Some(Role::Worker),
            Some("AppClient") => Some(Role::AppClient),
            Some("CoarseGrainedScheduler") => Some(Role::Driver),
            _ => None,
        };
        let all: Vec<(Role, Role)> = fits.collect();
        all.iter()
            .find(|(_, server)| Some(*server) == named)
            .or_else(|| all.first())
            .copied()
    }

    fn envelope(
        &mut self,
        conn: ConnId,
        time: u64,
        from_client: bool,
        env: EnvelopeOf,
        class: &str,
    ) {
        let transport = match &env {
            EnvelopeOf::Send(_) => FrameType::OneWayMessage,
            EnvelopeOf::Ask(..) => FrameType::RpcRequest,
            EnvelopeOf::Reply(..) => FrameType::RpcResponse,
            EnvelopeOf::Failure(..) => FrameType::RpcFailure,
        };
        self.seen(transport.as_str(), class);
        let needs_ends = self.conns.get(&conn).is_some_and(|c| c.ends.is_none());
        if needs_ends {
            // The endpoint the client named: its endpoint check, else its request's receiver.
            let checked = self.conns.get(&conn).and_then(|c| {
                c.hints
                    .checked
                    .clone()
                    .or_else(|| c.hints.server_endpoints.last().cloned())
            });
            let checked = checked.as_deref();
            let roles = match &env {
                EnvelopeOf::Send(m) | EnvelopeOf::Ask(_, m) => {
                    Self::roles_for(m, from_client, checked)
                }
                EnvelopeOf::Reply(_, ReplyOf::Message(m)) => {
                    Self::roles_for(m, from_client, checked)
                }
                _ => None,
            };
            match roles {
                Some((c, s)) => {
                    let msg = match &env {
                        EnvelopeOf::Send(m) | EnvelopeOf::Ask(_, m) => Some(m.clone()),
                        _ => None,
                    };
                    self.set_ends(conn, c, s, msg.as_ref());
                }
                None => self.settle(conn),
            }
        }
        let Some(c) = self.conns.get(&conn) else {
            return;
        };
        let Some((client, server)) = c.ends.clone() else {
            return;
        };
        if let Some(s) = self.summary.connections.get_mut(&conn) {
            s.messages += 1;
        }
        let (from, to) = if from_client {
            (client, server)
        } else {
            (server, client)
        };
        let version = c.detector.release().version();
        let coarse = from.role.family() == "coarse";
        let event = match (coarse, env) {
            (false, e) => match e.into_deploy() {
                Ok(env) => Event::message(time, conn, from, to, version, env),
                Err(name) => return self.family_mismatch(conn, time, from_client, name),
            },
            (true, e) => match e.into_coarse() {
                Ok(env) => Event::message(time, conn, from, to, version, env),
                Err(name) => return self.family_mismatch(conn, time, from_client, name),
            },
        };
        self.emit(event);
    }

    /// Writes one event of its connection, or holds it while the connection's protocol version
    /// is undecided.
    fn emit(&mut self, event: Event) {
        match self.conns.get_mut(&event.conn) {
            Some(c) if !c.settled && (!c.versioned() || !c.parked.is_empty()) => {
                c.parked.push(event);
                let full = c.parked.len() >= MAX_PARKED;
                let conn = c.parked[0].conn;
                self.unpark(conn, full);
            }
            _ => self.out.push(event),
        }
    }

    /// Writes `conn`'s held events with the protocol version of the release its streams name,
    /// once that version is known (or at once with `now`: the connection closed, the input
    /// ended, or too many are held).
    fn unpark(&mut self, conn: ConnId, now: bool) {
        let Some(c) = self.conns.get_mut(&conn) else {
            return;
        };
        if !(now || c.versioned()) {
            return;
        }
        c.settled = true;
        let version = c.detector.release().version();
        for mut e in std::mem::take(&mut c.parked) {
            match &mut e.body {
                EventBody::Open { version: v, .. } | EventBody::Message { version: v, .. } => {
                    *v = version;
                }
                EventBody::Close | EventBody::Outside { .. } => {}
            }
            self.out.push(e);
        }
    }

    fn family_mismatch(&mut self, conn: ConnId, time: u64, from_client: bool, name: String) {
        self.summary.fail(format!(
            "conn {conn}: {name} on a connection of the other family"
        ));
        let f = OutsideFrame {
            transport: "RpcRequest".into(),
            id: None,
            endpoint: None,
            class: Some(name),
            status: OutsideStatus::Undecoded,
            detail: Some("a message of the other family than its sender's role".into()),
            bytes: 0,
        };
        self.outside(conn, time, from_client, f);
    }
}

#[derive(Debug)]
#[allow(clippy::large_enum_variant)] // one per frame, consumed at once
enum ReplyOf {
    Bool(bool),
    Int(i32),
    Message(Typed),
}

#[derive(Debug)]
enum EnvelopeOf {
    Send(Typed),
    Ask(i64, Typed),
    Reply(i64, ReplyOf),
    Failure(i64, ErrorDescription),
}

impl EnvelopeOf {
    /// The envelope in the family `m` takes each message into (`Err` with the name of a message
    /// of the other family).
    fn into_family<F>(self, m: impl Fn(Typed) -> Result<F, String>) -> Result<Envelope<F>, String> {
        Ok(match self {
            EnvelopeOf::Send(t) => Envelope::Send(m(t)?),
            EnvelopeOf::Ask(id, t) => Envelope::Ask {
                id: id as u64,
                message: m(t)?,
            },
            EnvelopeOf::Reply(id, r) => Envelope::Reply {
                id: id as u64,
                reply: match r {
                    ReplyOf::Bool(b) => Reply::Bool(b),
                    ReplyOf::Int(i) => Reply::Int(i),
                    ReplyOf::Message(t) => Reply::Message(m(t)?),
                },
            },
            EnvelopeOf::Failure(id, error) => Envelope::Failure {
                id: id as u64,
                error,
            },
        })
    }

    fn into_deploy(self) -> Result<Envelope<DeployMessage>, String> {
        self.into_family(|t| match t {
            Typed::Deploy(d) => Ok(d),
            other => Err(other.name().to_string()),
        })
    }

    fn into_coarse(self) -> Result<Envelope<CoarseMessage>, String> {
        self.into_family(|t| match t {
            Typed::Coarse(c) => Ok(c),
            other => Err(other.name().to_string()),
        })
    }
}

/// A request's frame again: the same RPC header around a new stream.
fn request_frame(
    rm: &RequestMessage,
    stream: Vec<u8>,
    request_id: Option<i64>,
) -> Result<Vec<u8>, String> {
    let again = RequestMessage {
        stream: stream.into(),
        ..rm.clone()
    };
    let body: Bytes = again.encode().map_err(|e| e.to_string())?.into();
    let frame = match request_id {
        Some(request_id) => Frame::RpcRequest { request_id, body },
        None => Frame::OneWay { body },
    };
    frame.encode().map_err(|e| e.to_string())
}

/// A response's frame again.
fn response_frame(request_id: i64, stream: Vec<u8>) -> Result<Vec<u8>, String> {
    Frame::RpcResponse {
        request_id,
        body: stream.into(),
    }
    .encode()
    .map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// java.lang.Boolean.TRUE, serialized.
    const BOOLEAN: &[u8] = &[
        0xAC, 0xED, 0x00, 0x05, 0x73, 0x72, 0x00, 0x11, b'j', b'a', b'v', b'a', b'.', b'l', b'a',
        b'n', b'g', b'.', b'B', b'o', b'o', b'l', b'e', b'a', b'n', 0xCD, 0x20, 0x72, 0x80, 0xD5,
        0x9C, 0xFA, 0xEE, 0x02, 0x00, 0x01, b'Z', 0x00, 0x05, b'v', b'a', b'l', b'u', b'e', 0x78,
        0x70, 0x01,
    ];

    fn request(id: i64, endpoint: &str) -> Vec<u8> {
        let mut body = vec![0, 0];
        body.extend_from_slice(&(endpoint.len() as u16).to_be_bytes());
        body.extend_from_slice(endpoint.as_bytes());
        body.extend_from_slice(BOOLEAN);
        let mut f = (9 + 12 + body.len() as u64).to_be_bytes().to_vec();
        f.push(3);
        f.extend_from_slice(&id.to_be_bytes());
        f.extend_from_slice(&(body.len() as i32).to_be_bytes());
        f.extend_from_slice(&body);
        f
    }

    #[test]
    fn an_unknown_class_is_reported_by_name_and_traced_as_unknown() {
        let mut t = Tracer::default();
        t.open(1, 0, "a:1".into(), "b:2".into());
        let mut events = t.data(1, 1, true, &request(5, "Master"));
        events.extend(t.close(1, 2));
        assert_eq!(t.summary().unknown.get("java.lang.Boolean"), Some(&1));
        assert!(t.summary().failures.is_empty());
        assert!(events
            .iter()
            .any(|e| matches!(&e.body, EventBody::Outside { frame, .. }
            if frame.status == OutsideStatus::Unknown
                && frame.class.as_deref() == Some("java.lang.Boolean")
                && frame.id == Some(5))));
        // The connection named the master's endpoint: it is an application client's.
        assert!(events
            .iter()
            .any(|e| matches!(&e.body, EventBody::Open { client, server, .. }
            if client.role == Role::AppClient && server.role == Role::Master)));
    }

    #[test]
    fn a_connection_without_catalogued_messages_is_written_after_a_bounded_wait() {
        let mut t = Tracer::default();
        t.open(1, 0, "a:1".into(), "b:2".into());
        let mut events = Vec::new();
        for i in 0..(MAX_HELD as i64 + 10) {
            events.extend(t.data(1, 1, true, &request(i, "endpoint-verifier")));
        }
        assert_eq!(
            events.len(),
            MAX_HELD + 10 + 1,
            "the open, then every frame"
        );
        assert!(matches!(events[0].body, EventBody::Open { .. }));
    }

    #[test]
    fn spark_error_text_gives_the_exception_class_and_message() {
        let e = error_of(
            "java.lang.IllegalStateException: Duplicate executor ID: 0\n\tat x.y(Z.java:1)",
        );
        assert_eq!(e.class_name, "java.lang.IllegalStateException");
        assert_eq!(e.message, "Duplicate executor ID: 0");
        let e = error_of("something went wrong: badly");
        assert_eq!(e.class_name, "org.apache.spark.SparkException");
    }

    #[test]
    fn failures_beyond_the_cap_are_counted_not_kept() {
        let mut s = Summary::default();
        for i in 0..(MAX_FAILURES + 5) {
            s.fail(format!("{i}"));
        }
        assert_eq!(s.failures.len(), MAX_FAILURES);
        assert_eq!(s.more_failures, 5);
    }
}
