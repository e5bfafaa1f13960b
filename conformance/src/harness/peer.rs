//! A connection as the suite holds it: raw frames over TCP, each one logged decoded, with the
//! handshake done by hand so that cases can send anything, and typed envelopes after it.

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::time::Duration;

use bytes::{Buf, Bytes, BytesMut};
use sparkwire::messages::{CoarseMessage, DeployMessage, Family, Version};
use sparkwire::validate::trace::envelope_to_json;
use sparkwire::wire::handshake::{
    decode_answer, decode_hello, decode_proof, encode_answer, encode_hello, fresh_nonce, negotiate,
    read_hello, read_server_frame, Accepted, Answer, ClientNext, Hello, Identity, Refusal,
    RefusalReason, Role, Secret, ServerHello, AUTH_MECHANISM, NONCE_LEN,
};
use sparkwire::wire::{decode_envelope, encode_envelope, Envelope};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use crate::harness::env::{Log, Wire};
pub use crate::harness::mp::frame;
use crate::harness::spark_wire::{endpoint_of, endpoint_played, Incoming, SparkSide};
use crate::harness::verdict::{fail, Failure};
use sparkwire::validate::{ConnId, Endpoint as End, ValidatedFamily};

/// The largest frame the suite reads: more is reported, never buffered.
pub const SUITE_MAX_FRAME: u64 = 256 * 1024 * 1024;

/// The pre-handshake limit of protocol/handshake.md §1.1.
pub const HANDSHAKE_LIMIT: u64 = 65536;

/// What the next read gave.
#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    /// A whole frame's body.
    Frame(Bytes),
    /// A frame whose prefix declares more than the suite reads.
    TooLarge(u64),
    /// The stream ended (or was reset), with how.
    Closed(String),
}

/// One connection.
#[derive(Debug)]
pub struct Conn {
    label: String,
    stream: TcpStream,
    buf: BytesMut,
    ended: Option<String>,
    log: Log,
    /// The version negotiated, once the handshake is done.
    pub version: Option<Version>,
    /// The family the connection carries (`deploy` or `coarse`).
    pub family: &'static str,
    /// The role the suite plays on it.
    pub role: Role,
    /// The body of the hello [`Conn::read_hello`] read last (the suite as a server).
    hello_body: Option<Bytes>,
    /// On Spark's wire (`--wire spark`), the translation of every envelope to and from Spark's
    /// frames ([`crate::harness::spark_wire`]).
    spark: Option<SparkSide>,
    /// Envelopes translated from Spark's frames, not read yet.
    pending: VecDeque<Event>,
    /// Whether the suite opened the connection.
    dialled: bool,
    /// The suite's id on the connection (its hello's or its answer's), for the judge.
    suite_id: String,
    /// The endpoint's role and id on the connection (its hello's or its answer's), when known.
    endpoint_end: Option<(Role, String)>,
    /// The connection's id in the case's judge, once it is judged (after the handshake).
    judged: Option<ConnId>,
    /// Whether the judge learnt that the connection ended.
    judged_closed: bool,
    /// Whether this is the copy the judge listens on after the case let go of the connection
    /// ([`crate::harness::env::Judge::settle`]): its end is the judge's to report.
    settling: bool,
    /// The last hello the suite sent on the connection (as a client).
    sent_hello: Option<Vec<u8>>,
    /// The versions the endpoint's acceptance said it speaks (as a client).
    pub endpoint_versions: Vec<u64>,
}

/// Why a case cannot run on Spark's wire: a [`Failure::Skipped`] saying so.
pub fn not_on_spark_wire(what: impl std::fmt::Display) -> Failure {
    Failure::Skipped(format!("not on Spark's wire: {what}"))
}

/// The role the endpoint under test plays, as a hello of it would declare it.
fn target_role(target: crate::harness::verdict::Target) -> Role {
    match target {
        crate::harness::verdict::Target::Master => Role::Master,
        crate::harness::verdict::Target::Worker => Role::Worker,
        crate::harness::verdict::Target::Driver => Role::Driver,
        crate::harness::verdict::Target::Executor => Role::Executor,
    }
}

fn hex(bytes: &[u8], max: usize) -> String {
    let mut s: String = bytes.iter().take(max).map(|b| format!("{b:02x}")).collect();
    if bytes.len() > max {
        s.push('…');
    }
    s
}

fn short(text: String, max: usize) -> String {
    if text.len() <= max {
        return text;
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}… ({} chars)", &text[..end], text.len())
}

/// The longest description of one frame a log line holds.
const DESCRIPTION_MAX: usize = 4000;

/// The most bytes of one frame `--hex` shows.
const HEX_MAX: usize = 64 * 1024;

/// An envelope of `family` (a frame's body) in the wire's own words, for logs and failures: the
/// JSON form of protocol/trace.md, fields by their names in protocol/messages.md
/// (`{"event":"send","message":{"Heartbeat":{"workerId":"worker-1",…}}}`); an undecodable one
/// by its error and its first bytes.
pub fn describe(family: &str, body: &Bytes, version: Version) -> String {
    fn json<F: Family>(body: &Bytes, version: Version) -> Result<String, String> {
        let env = decode_envelope::<F>(body, version).map_err(|e| e.to_string())?;
        envelope_to_json(&env, version)
            .map(|v| v.to_string())
            .map_err(|e| e.to_string())
    }
    let text = if family == "coarse" {
        json::<CoarseMessage>(body, version)
    } else {
        json::<DeployMessage>(body, version)
    };
    match text {
        Ok(t) => short(t, DESCRIPTION_MAX),
        Err(e) => format!("undecodable ({e}): {}", hex(body, 48)),
    }
}

/// A handshake frame (protocol/handshake.md) in the wire's own words: what it is (`hello`,
/// `challenge`, `proof`, `answer`) and its map as JSON, keys as sent, binaries in hex.
pub fn describe_handshake(body: &[u8]) -> String {
    // An answer has the hello's keys and more: it is told apart first.
    let what = if decode_answer(body).is_ok() {
        "answer"
    } else if crate::harness::mp::challenge_nonce(body).is_some() {
        "challenge"
    } else if decode_proof(body).is_ok() {
        "proof"
    } else if decode_hello(body).is_ok() {
        "hello"
    } else {
        "handshake frame"
    };
    match crate::harness::mp::to_json(body) {
        Some(v) => format!("{what} {}", short(v.to_string(), DESCRIPTION_MAX)),
        None => format!("{what}, not one MessagePack map: {}", hex(body, 48)),
    }
}

impl Conn {
    fn new(stream: TcpStream, label: String, log: Log, role: Role, accepted: bool) -> Self {
        let _ = stream.set_nodelay(true);
        let spark = match log.wire() {
            Wire::Sparkwire => None,
            Wire::Spark(version) => {
                let peer_name = endpoint_of(log.target()).to_string();
                let played = endpoint_played(role);
                let address = |a: std::io::Result<SocketAddr>| {
                    a.ok().map(|a| (a.ip().to_string(), i32::from(a.port())))
                };
                Some(if accepted {
                    SparkSide::new(version, (None, peer_name), played)
                        .with_local(address(stream.local_addr()))
                } else {
                    SparkSide::new(version, (address(stream.peer_addr()), peer_name), played)
                })
            }
        };
        Conn {
            spark,
            pending: VecDeque::new(),
            dialled: !accepted,
            suite_id: String::new(),
            endpoint_end: None,
            judged: None,
            judged_closed: false,
            settling: false,
            sent_hello: None,
            endpoint_versions: Vec::new(),
            label,
            stream,
            buf: BytesMut::with_capacity(8192),
            ended: None,
            log,
            version: None,
            family: role.family(),
            role,
            hello_body: None,
        }
    }

    /// Connects to `addr` as `label`, for the role `role` (which names the family logged).
    pub async fn connect(
        addr: SocketAddr,
        label: &str,
        role: Role,
        log: &Log,
    ) -> Result<Conn, Failure> {
        let mut c = Conn::connect_unauthenticated(addr, label, role, log).await?;
        if let (Some(auth), Some(_)) = (log.spark_auth(), &c.spark) {
            // Spark's bootstrap first (SPEC §15.6), as a Spark client with the run's settings.
            let placeholder = c.stream_placeholder().await?;
            let stream = std::mem::replace(&mut c.stream, placeholder);
            let (clear, negotiated) = crate::harness::spark_auth::dial(stream, &auth.client)
                .await
                .map_err(|e| fail("Spark's authentication bootstrap, completed", e))?;
            log.push(format!("[{label}] authenticated: {negotiated}"));
            c.stream = clear;
        }
        Ok(c)
    }

    /// [`Conn::connect`] without Spark's authentication bootstrap, whatever the run's settings:
    /// for the cases that play a peer that does not authenticate (SPEC §15.6).
    pub async fn connect_unauthenticated(
        addr: SocketAddr,
        label: &str,
        role: Role,
        log: &Log,
    ) -> Result<Conn, Failure> {
        let stream = tokio::time::timeout(Duration::from_secs(5), TcpStream::connect(addr))
            .await
            .map_err(|_| fail(format!("a TCP connection to {addr}"), "connect timed out"))?
            .map_err(|e| fail(format!("a TCP connection to {addr}"), e.to_string()))?;
        log.push(format!("[{label}] connected to {addr}"));
        Ok(Conn::new(
            stream,
            label.to_string(),
            log.clone(),
            role,
            false,
        ))
    }

    /// A connected loopback socket that stands in for the connection's stream while the
    /// bootstrap runs on the real one (the connection's Spark side keeps the real addresses).
    async fn stream_placeholder(&self) -> Result<TcpStream, Failure> {
        let l = TcpListener::bind(SocketAddr::from(([127, 0, 0, 1], 0)))
            .await
            .map_err(|e| fail("a loopback socket", e.to_string()))?;
        let at = l
            .local_addr()
            .map_err(|e| fail("a loopback socket", e.to_string()))?;
        TcpStream::connect(at)
            .await
            .map_err(|e| fail("a loopback socket", e.to_string()))
    }

    /// The connection's label in the log.
    pub fn label(&self) -> &str {
        &self.label
    }

    async fn write_all(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        self.stream.write_all(bytes).await
    }

    /// The suite's and the endpoint's ends of the connection, as the validator names them.
    fn ends(&self) -> (End, End) {
        let suite = End::new(self.role, self.suite_id.clone());
        let endpoint = match &self.endpoint_end {
            Some((role, id)) => End::new(*role, id.clone()),
            None => End::new(target_role(self.log.target()), ""),
        };
        (suite, endpoint)
    }

    /// The connection's id in the case's judge, opening it there once the handshake is done;
    /// `None` before that, on Spark's wire, or with the judge off.
    fn judge_conn(&mut self) -> Option<ConnId> {
        if self.judged.is_some() {
            return self.judged;
        }
        let version = self.version?;
        if self.spark.is_some() || !self.log.judge().is_on() {
            return None;
        }
        let (suite, endpoint) = self.ends();
        let id = self
            .log
            .judge()
            .open(&suite, &endpoint, self.dialled, version)?;
        self.judged = Some(id);
        if let Some(why) = self.log.judge().tainted() {
            self.log.push(format!(
                "[{}] (judge: from here on only routes, kinds and decoding: {why})",
                self.label
            ));
        }
        Some(id)
    }

    /// The suite broke the protocol on purpose: the judge no longer knows the conversation.
    fn suite_broke(&self, what: &str) {
        let judge = self.log.judge();
        if judge.tainted().is_none() {
            judge.suite_broke(what);
            self.log.push(format!(
                "[{}] (judge: from here on only routes, kinds and decoding: {what})",
                self.label
            ));
        }
    }

    /// Feeds a frame the suite sends (after the handshake) to the case's judge.
    fn judge_outgoing(&mut self, body: &[u8]) {
        let Some(conn) = self.judge_conn() else {
            return;
        };
        let body = Bytes::copy_from_slice(body);
        if self.family == "coarse" {
            self.judge_sent::<CoarseMessage>(conn, &body);
        } else {
            self.judge_sent::<DeployMessage>(conn, &body);
        }
    }

    fn judge_sent<F: ValidatedFamily>(&mut self, conn: ConnId, body: &Bytes) {
        let v = self.v();
        match decode_envelope::<F>(body, v) {
            Ok(env) => {
                let (suite, endpoint) = self.ends();
                let was = self.log.judge().tainted();
                let why = self
                    .log
                    .judge()
                    .suite_sent(conn, &suite, &endpoint, v, &env);
                if let (None, Some(why)) = (was, why) {
                    self.log.push(format!(
                        "[{}] (judge: from here on only routes, kinds and decoding: {why})",
                        self.label
                    ));
                }
            }
            Err(e) => {
                self.suite_broke(&format!("the suite sent a frame that does not decode: {e}"))
            }
        }
    }

    /// Feeds a frame the endpoint sent (after the handshake) to the case's judge; what it breaks
    /// is marked in the wire log under the frame.
    fn judge_incoming(&mut self, body: &Bytes) {
        let Some(conn) = self.judge_conn() else {
            return;
        };
        let found = if self.family == "coarse" {
            self.judge_received::<CoarseMessage>(conn, body)
        } else {
            self.judge_received::<DeployMessage>(conn, body)
        };
        for f in found {
            self.log.push(format!(
                "[{}] ✗ the frame above breaks the protocol: {f}",
                self.label
            ));
        }
    }

    fn judge_received<F: ValidatedFamily>(&self, conn: ConnId, body: &Bytes) -> Vec<String> {
        let v = self.v();
        match decode_envelope::<F>(body, v) {
            Ok(env) => {
                let (suite, endpoint) = self.ends();
                let mut found = self
                    .log
                    .judge()
                    .endpoint_sent(conn, &suite, &endpoint, v, &env);
                found.extend(
                    crate::harness::canonical::finding(self.family, body, v)
                        .map(|f| self.log.judge().endpoint_misencoded(f)),
                );
                found
            }
            Err(e) => vec![self.log.judge().endpoint_undecodable(&e.to_string())],
        }
    }

    /// The negotiated version (version 2 before the handshake).
    pub fn v(&self) -> Version {
        self.version.unwrap_or(Version::V2)
    }

    /// Writes bytes as they are; `what` describes them in the log. On Spark's wire, bytes of
    /// sparkwire's written by hand have no meaning: the case is skipped.
    pub async fn send_raw(&mut self, bytes: &[u8], what: &str) -> Result<(), Failure> {
        if self.spark.is_some() {
            return Err(not_on_spark_wire(format!(
                "sparkwire bytes written by hand ({what})"
            )));
        }
        if self.judge_conn().is_some() {
            self.suite_broke(&format!("the suite wrote bytes by hand ({what})"));
        }
        self.write_logged(bytes, what).await
    }

    /// The connection's Spark side, on Spark's wire.
    pub fn spark(&self) -> Option<&SparkSide> {
        self.spark.as_ref()
    }

    /// Writes bytes of Spark's wire (frames a case built with [`Conn::spark`]); `what`
    /// describes them in the log.
    pub async fn send_spark(&mut self, bytes: &[u8], what: &str) -> Result<(), Failure> {
        self.write_logged(bytes, what).await
    }

    async fn write_logged(&mut self, bytes: &[u8], what: &str) -> Result<(), Failure> {
        let shown = if self.log.hex() { HEX_MAX } else { 40 };
        self.log.push(format!(
            "[{}] → {} bytes: {what}: {}",
            self.label,
            bytes.len(),
            hex(bytes, shown)
        ));
        match self.write_all(bytes).await {
            Ok(()) => Ok(()),
            Err(e) => {
                self.log.push(format!("[{}] write failed: {e}", self.label));
                Ok(())
            }
        }
    }

    /// With `--hex`, logs a frame's bytes (prefix included) under its description.
    fn log_bytes(&self, arrow: &str, bytes: &[u8]) {
        if self.log.hex() {
            self.log.push(format!(
                "[{}] {arrow} bytes: {}",
                self.label,
                hex(bytes, HEX_MAX)
            ));
        }
    }

    /// Writes a frame holding `body`. On Spark's wire `body` must be an envelope, which goes
    /// out as the Spark frame that carries the same message; anything else skips the case.
    pub async fn send_frame(&mut self, body: &[u8]) -> Result<(), Failure> {
        if let Some(spark) = &mut self.spark {
            let Some(v) = self.version else {
                return Err(not_on_spark_wire("sparkwire's handshake (Spark has none)"));
            };
            let what = describe(self.family, &Bytes::copy_from_slice(body), v);
            let bytes = spark
                .outgoing(self.family, body)
                .map_err(not_on_spark_wire)?;
            self.log.push(format!(
                "[{}] → Spark {} frame {} B: {what}",
                self.label,
                spark.release().name(),
                bytes.len()
            ));
            self.log_bytes("→", &bytes);
            if let Err(e) = self.write_all(&bytes).await {
                self.log.push(format!("[{}] write failed: {e}", self.label));
            }
            return Ok(());
        }
        let what = match self.version {
            None => {
                if decode_hello(body).is_ok() {
                    self.sent_hello = Some(body.to_vec());
                }
                describe_handshake(body)
            }
            Some(v) => describe(self.family, &Bytes::copy_from_slice(body), v),
        };
        let bytes = frame(body);
        self.log
            .push(format!("[{}] → frame {} B: {what}", self.label, body.len()));
        self.log_bytes("→", &bytes);
        self.judge_outgoing(body);
        if let Err(e) = self.write_all(&bytes).await {
            self.log.push(format!("[{}] write failed: {e}", self.label));
        }
        Ok(())
    }

    /// Sends an envelope in the negotiated version.
    pub async fn send<F: Family>(&mut self, env: &Envelope<F>) -> Result<(), Failure> {
        let mut body = Vec::new();
        encode_envelope(env, self.v(), &mut body).map_err(|e| match &self.spark {
            // A message the Spark release spoken does not have (SPEC §15.3).
            Some(spark) => not_on_spark_wire(format!("in Spark {}: {e}", spark.release().name())),
            None => fail("an envelope the suite can encode", e.to_string()),
        })?;
        self.send_frame(&body).await
    }

    /// Closes the suite's sending side.
    pub async fn shutdown_write(&mut self) {
        self.log.push(format!(
            "[{}] → end of stream (write side shut down)",
            self.label
        ));
        let _ = self.stream.shutdown().await;
    }

    /// On Spark's wire, turns the bytes read into envelopes and writes the answers the suite
    /// gives at once (CheckExistence).
    async fn translate(&mut self) {
        let Some(spark) = &mut self.spark else {
            return;
        };
        if self.buf.is_empty() {
            return;
        }
        let bytes = self.buf.split().freeze();
        let (items, answers) = spark.incoming(self.family, &bytes);
        for item in items {
            match item {
                Incoming::Envelope(body) => self.pending.push_back(Event::Frame(body)),
                Incoming::Foreign(what) => {
                    self.log
                        .push(format!("[{}] ← Spark frame: {what}", self.label));
                    // Never an envelope: a case waiting for one fails on it, saying so.
                    self.pending
                        .push_back(Event::Frame(Bytes::from_static(&[0xc1])));
                }
                Incoming::Ignored(what) => {
                    self.log
                        .push(format!("[{}] ← Spark frame: {what}", self.label));
                }
            }
        }
        for answer in answers {
            self.log.push(format!(
                "[{}] → Spark RpcResponse {} B: true/false to CheckExistence",
                self.label,
                answer.len()
            ));
            if let Err(e) = self.write_all(&answer).await {
                self.log.push(format!("[{}] write failed: {e}", self.label));
            }
        }
    }

    fn parse(&mut self) -> Option<Event> {
        if self.spark.is_some() {
            return self.pending.pop_front();
        }
        if self.buf.len() < 4 {
            return None;
        }
        let n = u64::from(u32::from_be_bytes([
            self.buf[0],
            self.buf[1],
            self.buf[2],
            self.buf[3],
        ]));
        if n > SUITE_MAX_FRAME {
            return Some(Event::TooLarge(n));
        }
        let total = 4 + n as usize;
        if self.buf.len() < total {
            return None;
        }
        self.buf.advance(4);
        Some(Event::Frame(self.buf.split_to(n as usize).freeze()))
    }

    /// The next frame already read (logged, and judged), if any.
    fn parsed(&mut self) -> Option<Event> {
        let ev = self.parse()?;
        match &ev {
            Event::Frame(body) => {
                if self.version.is_some() {
                    self.log.health().heard();
                }
                let what = match self.version {
                    None => describe_handshake(body),
                    Some(v) => describe(self.family, body, v),
                };
                self.log
                    .push(format!("[{}] ← frame {} B: {what}", self.label, body.len()));
                let body = body.clone();
                self.log_bytes("←", &frame(&body));
                self.judge_incoming(&body);
            }
            Event::TooLarge(n) => {
                self.log
                    .push(format!("[{}] ← prefix declaring {n} bytes", self.label));
            }
            Event::Closed(_) => {}
        }
        Some(ev)
    }

    /// The next frame or end of stream, or `None` after `wait`, or as soon as the run knows the
    /// endpoint is mute ([`crate::harness::health::Health`]).
    pub async fn next(&mut self, wait: Duration) -> Option<Event> {
        self.next_or_known(wait, false).await
    }

    /// [`Conn::next`] for a caller that waits for a close, or a frame such as a refusal or a
    /// failure before it: it also stops waiting once the run knows the endpoint never closes a
    /// connection ([`crate::harness::health::Health::never_closes`]), which only an endpoint that broke
    /// a MUST is known to do.
    pub async fn next_or_close(&mut self, wait: Duration) -> Option<Event> {
        self.next_or_known(wait, true).await
    }

    /// [`Conn::next`], where `for_close` says the caller waits for a close: then it also stops
    /// waiting once the run knows the endpoint never closes a connection.
    async fn next_or_known(&mut self, wait: Duration, for_close: bool) -> Option<Event> {
        let deadline = tokio::time::Instant::now() + wait;
        let log = self.log.clone();
        let health = log.health();
        loop {
            if let Some(ev) = self.parsed() {
                return Some(ev);
            }
            if let Some(how) = &self.ended {
                if let (Some(conn), false) = (self.judged, self.judged_closed) {
                    self.judged_closed = true;
                    self.log.judge().closed(conn);
                }
                return Some(Event::Closed(how.clone()));
            }
            let read = tokio::select! {
                r = tokio::time::timeout_at(deadline, self.stream.read_buf(&mut self.buf)) => r,
                () = health.concluded(for_close) => return None,
            };
            match read {
                Err(_) => return None,
                Ok(Ok(n)) if n > 0 && self.spark.is_some() => self.translate().await,
                Ok(Ok(0)) => {
                    health.closed();
                    let how = if self.buf.is_empty() {
                        "end of stream".to_string()
                    } else {
                        format!(
                            "end of stream inside a frame ({} stray bytes)",
                            self.buf.len()
                        )
                    };
                    self.log.push(format!("[{}] ← {how}", self.label));
                    self.ended = Some(how);
                }
                Ok(Ok(_)) => {}
                Ok(Err(e)) => {
                    health.closed();
                    let how = format!("connection error: {e}");
                    self.log.push(format!("[{}] ← {how}", self.label));
                    self.ended = Some(how);
                }
            }
        }
    }

    /// The next frame's body; anything else fails the case with `expected`.
    pub async fn frame_body(&mut self, wait: Duration, expected: &str) -> Result<Bytes, Failure> {
        self.frame_body_or(wait, expected, false).await
    }

    /// [`Conn::frame_body`] for a caller that takes a close instead (a strict master MAY close):
    /// it stops waiting once the run knows the endpoint never closes ([`Conn::next_or_close`]).
    pub async fn frame_body_or_close(
        &mut self,
        wait: Duration,
        expected: &str,
    ) -> Result<Bytes, Failure> {
        self.frame_body_or(wait, expected, true).await
    }

    async fn frame_body_or(
        &mut self,
        wait: Duration,
        expected: &str,
        for_close: bool,
    ) -> Result<Bytes, Failure> {
        match self.next_or_known(wait, for_close).await {
            Some(Event::Frame(b)) => Ok(b),
            Some(Event::TooLarge(n)) => Err(fail(expected, format!("a frame declaring {n} bytes"))),
            Some(Event::Closed(how)) => {
                Err(fail(expected, format!("the connection closed ({how})")))
            }
            None => Err(fail(
                expected,
                format!("nothing within {} ms", wait.as_millis()),
            )),
        }
    }

    /// Reads until the endpoint closes the connection; fails after `wait` with `expected`.
    pub async fn expect_closed(&mut self, wait: Duration, expected: &str) -> Result<(), Failure> {
        let deadline = tokio::time::Instant::now() + wait;
        loop {
            let left = deadline.saturating_duration_since(tokio::time::Instant::now());
            match self.next_or_known(left, true).await {
                Some(Event::Closed(_)) => return Ok(()),
                Some(Event::TooLarge(_)) => {
                    return Err(fail(
                        expected,
                        "a frame over the suite's limit instead of a close",
                    ))
                }
                Some(Event::Frame(_)) => continue,
                None => {
                    return Err(fail(
                        expected,
                        format!("the connection still open after {} ms", wait.as_millis()),
                    ))
                }
            }
        }
    }

    /// Expects the endpoint to close the connection within `wait` without sending a frame first:
    /// a frame before the close means it took what it had to refuse.
    pub async fn expect_closed_silently(
        &mut self,
        wait: Duration,
        expected: &str,
    ) -> Result<(), Failure> {
        match self.next_or_known(wait, true).await {
            Some(Event::Closed(_)) => Ok(()),
            Some(Event::TooLarge(_)) => Err(fail(
                expected,
                "a frame over the suite's limit instead of a close",
            )),
            Some(Event::Frame(_)) => Err(fail(
                expected,
                "a frame before any close: the endpoint went on as if it had been accepted",
            )),
            None => Err(fail(
                expected,
                format!("the connection still open after {} ms", wait.as_millis()),
            )),
        }
    }

    /// True when the endpoint closed the connection within `wait` (frames before that are read).
    pub async fn closes_within(&mut self, wait: Duration) -> bool {
        self.expect_closed(wait, "").await.is_ok()
    }

    /// The next envelope of family `F`.
    pub async fn recv<F: Family>(
        &mut self,
        wait: Duration,
        expected: &str,
    ) -> Result<Envelope<F>, Failure> {
        self.recv_or(wait, expected, false).await
    }

    async fn recv_or<F: Family>(
        &mut self,
        wait: Duration,
        expected: &str,
        for_close: bool,
    ) -> Result<Envelope<F>, Failure> {
        let body = self.frame_body_or(wait, expected, for_close).await?;
        decode_envelope::<F>(&body, self.v())
            .map_err(|e| fail(expected, format!("an undecodable frame: {e}")))
    }

    /// Reads envelopes until `pick` accepts one; fails with `expected` when the connection closes
    /// or nothing accepted comes within `wait`.
    pub async fn expect<F: Family, T>(
        &mut self,
        wait: Duration,
        expected: &str,
        pick: impl FnMut(&Envelope<F>) -> Option<T>,
    ) -> Result<T, Failure> {
        self.expect_or(wait, expected, pick, false).await
    }

    /// [`Conn::expect`] for a caller that takes a close instead (a strict master MAY close): it
    /// stops waiting once the run knows the endpoint never closes ([`Conn::next_or_close`]).
    pub async fn expect_or_close<F: Family, T>(
        &mut self,
        wait: Duration,
        expected: &str,
        pick: impl FnMut(&Envelope<F>) -> Option<T>,
    ) -> Result<T, Failure> {
        self.expect_or(wait, expected, pick, true).await
    }

    async fn expect_or<F: Family, T>(
        &mut self,
        wait: Duration,
        expected: &str,
        mut pick: impl FnMut(&Envelope<F>) -> Option<T>,
        for_close: bool,
    ) -> Result<T, Failure> {
        let deadline = tokio::time::Instant::now() + wait;
        let mut seen = Vec::new();
        loop {
            let left = deadline.saturating_duration_since(tokio::time::Instant::now());
            let env = match self.recv_or::<F>(left, expected, for_close).await {
                Ok(env) => env,
                Err(Failure::Fail { expected, seen: s }) if !seen.is_empty() => {
                    return Err(fail(
                        expected,
                        format!("{s}; before that: {}", seen.join(", ")),
                    ))
                }
                Err(e) => return Err(e),
            };
            if let Some(t) = pick(&env) {
                return Ok(t);
            }
            seen.push(envelope_label(&env));
        }
    }

    /// Fails with `expected` if an envelope `pick` accepts arrives within `wait`; other envelopes
    /// are skipped, and a close ends the watch.
    pub async fn expect_none<F: Family>(
        &mut self,
        wait: Duration,
        expected: &str,
        mut pick: impl FnMut(&Envelope<F>) -> bool,
    ) -> Result<(), Failure> {
        let deadline = tokio::time::Instant::now() + wait;
        loop {
            let left = deadline.saturating_duration_since(tokio::time::Instant::now());
            match self.next(left).await {
                None | Some(Event::Closed(_)) => return Ok(()),
                Some(Event::TooLarge(n)) => {
                    return Err(fail(expected, format!("a frame declaring {n} bytes")))
                }
                Some(Event::Frame(body)) => {
                    if let Ok(env) = decode_envelope::<F>(&body, self.v()) {
                        if pick(&env) {
                            return Err(fail(expected, envelope_label(&env)));
                        }
                    }
                }
            }
        }
    }

    // ---- the client's side of the handshake ----

    /// Sends a hello.
    pub async fn send_hello(&mut self, hello: &Hello) -> Result<(), Failure> {
        let mut body = Vec::new();
        encode_hello(hello, &mut body);
        self.send_frame(&body).await
    }

    /// Reads the server's answer.
    pub async fn read_answer(&mut self, wait: Duration) -> Result<Answer, Failure> {
        if self.spark.is_some() {
            return Err(not_on_spark_wire("sparkwire's handshake (Spark has none)"));
        }
        let body = self
            .frame_body(wait, "the server's handshake answer")
            .await?;
        let answer = decode_answer(&body)
            .map_err(|e| fail("a well-formed handshake answer", e.to_string()))?;
        self.unoffered(&answer)?;
        Ok(answer)
    }

    /// A refusal for want of a common version, of a hello that offered only protocol versions
    /// the endpoint does not offer (its profile, [`Log::endpoint_versions`]), skips the case:
    /// the case is for a version the endpoint does not speak.
    fn unoffered(&self, answer: &Answer) -> Result<(), Failure> {
        let (Answer::Refused(r), Some(profile)) = (answer, self.log.endpoint_versions()) else {
            return Ok(());
        };
        if r.reason != RefusalReason::NoCommonVersion {
            return Ok(());
        }
        let Some(hello) = self
            .sent_hello
            .as_deref()
            .and_then(|b| decode_hello(b).ok())
        else {
            return Ok(());
        };
        let known: Vec<u64> = hello
            .versions
            .iter()
            .copied()
            .filter(|v| Version::from_number(*v).is_some())
            .collect();
        if known.is_empty() || known.iter().any(|v| profile.contains(v)) {
            return Ok(());
        }
        Err(Failure::Skipped(format!(
            "a case for protocol version {known:?}, which the endpoint does not offer (it offers {profile:?})"
        )))
    }

    /// Reads the server's answer to the hello whose frame body was `hello_body` (any bytes a case
    /// wrote). With `secret` (the endpoint's, which the suite knows) a challenge is answered as a
    /// client holding it (protocol/handshake.md §10.1): its proof must verify, the suite proves
    /// the secret back, and the answer after that is the one returned. A refusal before any
    /// challenge is returned as it is; an acceptance without one fails, since the endpoint holds
    /// the secret and must prove it.
    pub async fn read_answer_to(
        &mut self,
        hello_body: &[u8],
        secret: Option<&Secret>,
        wait: Duration,
    ) -> Result<Answer, Failure> {
        self.read_answer_as(hello_body, secret, None, wait).await
    }

    /// [`Conn::read_answer_to`] for a client that also proves the admin secret `admin` in its
    /// proof frame (protocol/handshake.md §10.1, SPEC §13).
    pub async fn read_answer_as(
        &mut self,
        hello_body: &[u8],
        secret: Option<&Secret>,
        admin: Option<&Secret>,
        wait: Duration,
    ) -> Result<Answer, Failure> {
        let Some(secret) = secret else {
            return self.read_answer(wait).await;
        };
        let want = "a challenge whose proof verifies with the endpoint's secret, then an answer";
        let first = self
            .frame_body(wait, "the server's challenge or handshake answer")
            .await?;
        if crate::harness::mp::challenge_nonce(&first).is_none() {
            return match decode_answer(&first) {
                Ok(Answer::Accepted(a)) => Err(fail(
                    want,
                    format!("an acceptance without a challenge ({a:?}): the endpoint did not prove the secret"),
                )),
                Ok(refused) => {
                    self.unoffered(&refused)?;
                    Ok(refused)
                }
                Err(e) => Err(fail("a well-formed handshake answer", e.to_string())),
            };
        }
        let hello = decode_hello(hello_body).map_err(|e| {
            fail(
                want,
                format!("a challenge to a hello the suite cannot read back: {e}"),
            )
        })?;
        let local = Identity::new(self.role, &hello.id)
            .with_versions(&[Version::V1, Version::V2])
            .with_secret(Some(secret.clone()))
            .with_admin_secret(admin.cloned());
        match read_server_frame(&first, &hello, hello_body, &local) {
            Ok(ClientNext::SendProof(proof)) => self.send_frame(&proof).await?,
            Ok(ClientNext::Done(_)) => return Err(fail(want, "an acceptance without a challenge")),
            Err(e) => return Err(fail(want, e.to_string())),
        }
        self.read_answer(wait).await
    }

    /// Connects, says hello as `role`/`id` offering `versions`, and expects an acceptance. With
    /// `secret` (the endpoint's) the hello asks to authenticate and the proofs are exchanged
    /// first (protocol/handshake.md §10.1): the one way the suite opens a session with an
    /// endpoint, secured or not.
    #[allow(clippy::too_many_arguments)]
    pub async fn open(
        addr: SocketAddr,
        label: &str,
        role: Role,
        id: &str,
        versions: &[Version],
        secret: Option<&Secret>,
        log: &Log,
        wait: Duration,
    ) -> Result<Conn, Failure> {
        let hello = Hello::new(versions, role, id);
        Conn::open_with(addr, label, hello, secret, log, wait)
            .await
            .map(|(c, _)| c)
    }

    /// [`Conn::open`] with the hello given (offering features, say); returns the connection and
    /// the features the endpoint's answer took (protocol/handshake.md §12).
    pub async fn open_with(
        addr: SocketAddr,
        label: &str,
        hello: Hello,
        secret: Option<&Secret>,
        log: &Log,
        wait: Duration,
    ) -> Result<(Conn, Vec<String>), Failure> {
        Conn::open_as(addr, label, hello, secret, None, log, wait).await
    }

    /// [`Conn::open_with`] for a client that also proves the admin secret `admin` (with
    /// `secret`: protocol/handshake.md §10.1, SPEC §13).
    #[allow(clippy::too_many_arguments)]
    pub async fn open_as(
        addr: SocketAddr,
        label: &str,
        hello: Hello,
        secret: Option<&Secret>,
        admin: Option<&Secret>,
        log: &Log,
        wait: Duration,
    ) -> Result<(Conn, Vec<String>), Failure> {
        if let Wire::Spark(v) = log.wire() {
            return Conn::open_spark(addr, label, hello, secret, log, wait, v)
                .await
                .map(|c| (c, Vec::new()));
        }
        let role = hello.role;
        let expected = match secret {
            None => format!("the hello of a {} accepted", role.name()),
            Some(_) => format!("the authenticated hello of a {} accepted", role.name()),
        };
        let mut c = Conn::connect(addr, label, role, log).await?;
        let mut hello = hello;
        if secret.is_some() {
            hello = hello.with_auth(nonce()?);
        }
        let mut body = Vec::new();
        encode_hello(&hello, &mut body);
        c.send_frame(&body).await?;
        match c.read_answer_as(&body, secret, admin, wait).await? {
            Answer::Accepted(a) => {
                c.version = Some(a.version);
                c.suite_id = hello.id.clone();
                c.endpoint_end = Some((a.role, a.id.clone()));
                c.endpoint_versions = a.versions.clone();
                Ok((c, a.features))
            }
            Answer::Refused(r) => Err(fail(
                expected,
                format!("refused: {} ({})", r.reason, r.message),
            )),
        }
    }

    /// [`Conn::open_with`] on Spark's wire (SPEC §15.2): connects and, as a Spark peer does
    /// before it sends an endpoint anything, asks the endpoint verifier whether the endpoint
    /// under test exists (`CheckExistence`), which must be answered `true`. The release's
    /// version stands in for the handshake's: a case that asks for another is skipped, except
    /// that against a release of version 1 (Spark 3.0) the version-2 cases run at version 1.
    #[allow(clippy::too_many_arguments)]
    async fn open_spark(
        addr: SocketAddr,
        label: &str,
        hello: Hello,
        secret: Option<&Secret>,
        log: &Log,
        wait: Duration,
        spoken: &'static sparkwire::spark::Release,
    ) -> Result<Conn, Failure> {
        let v = spoken.version();
        if secret.is_some() && log.spark_auth().is_none() {
            return Err(not_on_spark_wire(
                "sparkwire's shared-secret authentication (Spark's own is a SASL bootstrap)",
            ));
        }
        let number = u64::from(v.number());
        if !hello.versions.contains(&number) && v == Version::V2 {
            return Err(not_on_spark_wire(format!(
                "Spark {} speaks only its own classes (version {number}), not {:?}",
                spoken.name(),
                hello.versions
            )));
        }
        let mut c = Conn::connect(addr, label, hello.role, log).await?;
        c.version = Some(v);
        let name = endpoint_of(log.target());
        let id = i64::try_from(unique() | (1 << 61)).unwrap_or(i64::MAX);
        let ask = c
            .spark
            .as_ref()
            .ok_or_else(|| fail("a Spark connection", "none"))?
            .check_existence(id, name)
            .map_err(|e| fail("a CheckExistence the suite can write", e))?;
        c.send_spark(
            &ask,
            &format!("RpcRequest {id}: CheckExistence({name}) to endpoint-verifier"),
        )
        .await?;
        let want = format!("true to CheckExistence({name}) (RpcResponse {id})");
        let exists = c
            .expect::<DeployMessage, bool>(wait, &want, |e| match e {
                Envelope::Reply {
                    id: rid,
                    reply: sparkwire::wire::Reply::Bool(b),
                } if *rid == id as u64 => Some(*b),
                _ => None,
            })
            .await?;
        if !exists {
            return Err(fail(want, "false"));
        }
        Ok(c)
    }

    /// On Spark's wire, a connection to `addr` ready for Spark frames, with nothing sent yet (no
    /// CheckExistence): for the cases that write Spark's frames themselves.
    pub async fn connect_spark(
        addr: SocketAddr,
        label: &str,
        role: Role,
        log: &Log,
    ) -> Result<Conn, Failure> {
        let Wire::Spark(v) = log.wire() else {
            return Err(Failure::Skipped(
                "only on Spark's wire (--wire spark)".into(),
            ));
        };
        let mut c = Conn::connect(addr, label, role, log).await?;
        c.version = Some(v.version());
        Ok(c)
    }

    /// [`Conn::open`] with `secret`: an authenticated handshake (protocol/handshake.md §10).
    #[allow(clippy::too_many_arguments)]
    pub async fn open_authenticated(
        addr: SocketAddr,
        label: &str,
        role: Role,
        id: &str,
        versions: &[Version],
        secret: &Secret,
        log: &Log,
        wait: Duration,
    ) -> Result<Conn, Failure> {
        Conn::open(addr, label, role, id, versions, Some(secret), log, wait).await
    }

    // ---- the server's side of the handshake ----

    /// Reads the client's hello; anything else fails the case. On Spark's wire, which has no
    /// handshake, it is the hello the endpoint's release would send: its version, its role.
    pub async fn read_hello(&mut self, wait: Duration) -> Result<Hello, Failure> {
        if let Some(spark) = &self.spark {
            let v = spark.version();
            self.version = Some(v);
            return Ok(Hello::new(&[v], target_role(self.log.target()), ""));
        }
        let body = self.frame_body(wait, "the endpoint's hello").await?;
        let hello = decode_hello(&body).map_err(|e| fail("a well-formed hello", e.to_string()))?;
        self.hello_body = Some(body);
        self.endpoint_end = Some((hello.role, hello.id.clone()));
        Ok(hello)
    }

    /// The hello [`Conn::read_hello`] read last, as it crossed the wire (prefix included).
    pub fn hello_frame(&self) -> Vec<u8> {
        frame(self.hello_body.as_deref().unwrap_or_default())
    }

    /// The body of the hello [`Conn::read_hello`] read last.
    pub fn hello_body(&self) -> &[u8] {
        self.hello_body.as_deref().unwrap_or_default()
    }

    /// As a server holding `secret` (protocol/handshake.md §10.1), authenticates the client whose
    /// hello [`Conn::read_hello`] read: the hello must ask to authenticate, the suite challenges,
    /// and the client's proof must verify. Returns the answer the suite would send next (an
    /// acceptance at the highest version of `versions` both speak, as `id`), not sent yet, so
    /// that a case can send another answer in its place; a failed check sends the refusal and
    /// fails.
    pub async fn authenticate_client(
        &mut self,
        versions: &[Version],
        id: &str,
        secret: &Secret,
        wait: Duration,
    ) -> Result<Answer, Failure> {
        if self.spark.is_some() {
            return Err(not_on_spark_wire(
                "sparkwire's shared-secret authentication",
            ));
        }
        let want = "an authenticated hello (auth, nonce) and then a client proof that verifies";
        let body = self.hello_body.clone().unwrap_or_default();
        let local = Identity::new(self.role, id)
            .with_versions(versions)
            .with_secret(Some(secret.clone()));
        let auth = match read_hello(&body, &local, |_| true, fresh_nonce) {
            ServerHello::Challenge(auth) => auth,
            ServerHello::Answer(answer, outcome) => {
                self.send_answer(&answer).await?;
                let why = outcome.err().map(|e| e.to_string()).unwrap_or_default();
                let hello = describe_handshake(&body);
                return Err(fail(want, format!("{hello}: {why}")));
            }
        };
        self.send_frame(auth.challenge_body()).await?;
        let proof = self.frame_body(wait, want).await?;
        let (answer, outcome) = auth.finish(&proof, &local, |_| true);
        match outcome {
            Ok(_) => Ok(answer),
            Err(e) => {
                self.send_answer(&answer).await?;
                Err(fail(want, e.to_string()))
            }
        }
    }

    /// Accepts `hello` (the one [`Conn::read_hello`] read) as [`Conn::accept_hello`] does; with
    /// `secret`, first as a server holding it ([`Conn::authenticate_client`]).
    pub async fn accept_hello_with(
        &mut self,
        hello: &Hello,
        versions: &[Version],
        id: &str,
        secret: Option<&Secret>,
        wait: Duration,
    ) -> Result<Version, Failure> {
        let Some(secret) = secret.filter(|_| self.spark.is_none()) else {
            return self.accept_hello(hello, versions, id).await;
        };
        let answer = self.authenticate_client(versions, id, secret, wait).await?;
        self.send_answer(&answer).await?;
        match answer {
            Answer::Accepted(a) => {
                self.version = Some(a.version);
                Ok(a.version)
            }
            Answer::Refused(r) => Err(fail(
                format!("a hello offering one of {versions:?}"),
                format!("{hello:?}: refused {}", r.reason),
            )),
        }
    }

    /// Sends `answer`.
    pub async fn send_answer(&mut self, answer: &Answer) -> Result<(), Failure> {
        if let Answer::Accepted(a) = answer {
            self.suite_id = a.id.clone();
        }
        let mut body = Vec::new();
        encode_answer(answer, &mut body);
        self.send_frame(&body).await
    }

    /// Accepts `hello` at the highest version both speak among `versions`, as `role`.
    pub async fn accept_hello(
        &mut self,
        hello: &Hello,
        versions: &[Version],
        id: &str,
    ) -> Result<Version, Failure> {
        if let Some(spark) = &self.spark {
            let v = spark.version();
            self.version = Some(v);
            return Ok(v);
        }
        let numbers: Vec<u64> = versions.iter().map(|v| u64::from(v.number())).collect();
        let Some(v) = negotiate(&hello.versions, versions) else {
            self.send_answer(&Answer::Refused(Refusal {
                reason: RefusalReason::NoCommonVersion,
                message: "no common version".into(),
                versions: numbers,
            }))
            .await?;
            return Err(fail(
                format!("a hello offering one of {versions:?}"),
                format!("versions {:?}", hello.versions),
            ));
        };
        self.send_answer(&Answer::Accepted(Accepted {
            version: v,
            versions: numbers,
            role: self.role,
            id: id.to_string(),
            features: Vec::new(),
        }))
        .await?;
        self.version = Some(v);
        Ok(v)
    }
}

/// A connection the case lets go of while it is open: the frames of the endpoint that arrived
/// before are judged. When the endpoint still owes an answer on it (an ask, a registration, an
/// executor's state, a task's end: [`crate::harness::env::Judge::owes`]), the judge keeps listening on a
/// copy of its socket until the answers came or the case's time is up
/// ([`crate::harness::env::Judge::settle`]), and then closes it; otherwise the judge learns at once that
/// the suite closed it.
impl Drop for Conn {
    fn drop(&mut self) {
        let Some(conn) = self.judged.filter(|_| !self.judged_closed) else {
            return;
        };
        if self.ended.is_none() {
            loop {
                match self.stream.try_read_buf(&mut self.buf) {
                    Ok(n) if n > 0 => continue,
                    _ => break,
                }
            }
            while let Some(Event::Frame(_)) = self.parsed() {}
        }
        self.judged_closed = true;
        if self.ended.is_none() && !self.settling && self.log.judge().owes(conn) {
            if let Some(copy) = self.settling_copy(conn) {
                self.log.judge().settle(conn, copy);
                return;
            }
        }
        self.log.judge().closed(conn);
    }
}

impl Conn {
    /// A copy of this connection on a duplicate of its socket (the connection stays open while
    /// either is), for the judge to listen on after the case let go of it; `None` outside a
    /// runtime or where the socket cannot be duplicated.
    #[cfg(unix)]
    fn settling_copy(&mut self, conn: ConnId) -> Option<Conn> {
        use std::os::fd::AsFd;
        let runtime = tokio::runtime::Handle::try_current().ok()?;
        let fd = self.stream.as_fd().try_clone_to_owned().ok()?;
        let stream = std::net::TcpStream::from(fd);
        stream.set_nonblocking(true).ok()?;
        let _entered = runtime.enter();
        let stream = TcpStream::from_std(stream).ok()?;
        let mut copy = Conn::new(
            stream,
            self.label.clone(),
            self.log.clone(),
            self.role,
            !self.dialled,
        );
        copy.buf = std::mem::take(&mut self.buf);
        copy.version = self.version;
        copy.family = self.family;
        copy.suite_id = self.suite_id.clone();
        copy.endpoint_end = self.endpoint_end.clone();
        copy.judged = Some(conn);
        copy.settling = true;
        Some(copy)
    }

    /// Without a way to duplicate a socket, the judge does not listen after a case lets go.
    #[cfg(not(unix))]
    fn settling_copy(&mut self, _conn: ConnId) -> Option<Conn> {
        None
    }

    /// Adds `line` to the case's log, under the connection's label.
    pub fn log_line(&self, line: &str) {
        self.log.push(format!("[{}] {line}", self.label));
    }

    /// Whether the endpoint closed the connection (what was owed on it is no longer owed).
    pub fn ended(&self) -> bool {
        self.ended.is_some()
    }
}

/// The protocol versions the server at `addr` offers, as its answer to a hello of a UI offering
/// every known version lists them (protocol/handshake.md: an acceptance's `versions`); `None`
/// when it does not accept one.
pub async fn probe_versions(
    addr: SocketAddr,
    secret: Option<&Secret>,
    wait: Duration,
) -> Option<Vec<u64>> {
    let log = Log::new();
    let hello = Hello::new(
        &[Version::V1, Version::V2],
        Role::Ui,
        "sparkwire-conformance",
    );
    let (c, _) = Conn::open_with(addr, "probe", hello, secret, &log, wait)
        .await
        .ok()?;
    Some(c.endpoint_versions.clone()).filter(|v| !v.is_empty())
}

/// Skips a case that expects the endpoint to speak `version`, when the endpoint's profile
/// ([`Log::endpoint_versions`]) says it does not.
pub fn require_version(log: &Log, version: Version) -> Result<(), Failure> {
    match log.endpoint_versions() {
        Some(profile) if !profile.contains(&u64::from(version.number())) => {
            Err(Failure::Skipped(format!(
                "a case for protocol version {}, which the endpoint does not offer (it offers {profile:?})",
                version.number()
            )))
        }
        _ => Ok(()),
    }
}

/// A fresh nonce from the system's random source.
pub fn nonce() -> Result<[u8; NONCE_LEN], Failure> {
    fresh_nonce().map_err(|e| fail("a nonce from the system's random source", e.to_string()))
}

/// The entries a hello written by hand gets so that it asks to authenticate
/// (protocol/handshake.md §10.1: `auth` and a fresh `nonce`), when the suite knows the endpoint's
/// `secret`; none without one.
pub fn auth_entries(secret: Option<&Secret>) -> Result<Vec<(&'static str, Vec<u8>)>, Failure> {
    if secret.is_none() {
        return Ok(Vec::new());
    }
    Ok(vec![
        ("auth", crate::harness::mp::s(AUTH_MECHANISM)),
        ("nonce", crate::harness::mp::bin(&nonce()?)),
    ])
}

/// A short label for an envelope: its form and message name.
pub fn envelope_label<F: Family>(env: &Envelope<F>) -> String {
    match env {
        Envelope::Send(m) => format!("send {}", m.name()),
        Envelope::Ask { id, message } => format!("ask {} (id {id})", message.name()),
        Envelope::Reply { id, reply } => match reply {
            sparkwire::wire::Reply::Message(m) => format!("reply {} (id {id})", m.name()),
            other => format!("reply {other:?} (id {id})"),
        },
        Envelope::Failure { id, error } => {
            format!("failure {}: {} (id {id})", error.class_name, error.message)
        }
        Envelope::Close(reason) => format!("close {reason}"),
    }
}

/// A listener for endpoints that connect to the suite.
#[derive(Debug)]
pub struct Listener {
    inner: TcpListener,
    log: Log,
}

impl Listener {
    /// Listens on `addr` (port 0: any free port).
    pub async fn bind(addr: SocketAddr, log: &Log) -> Result<Listener, String> {
        let inner = TcpListener::bind(addr)
            .await
            .map_err(|e| format!("cannot listen on {addr}: {e}"))?;
        Ok(Listener {
            inner,
            log: log.clone(),
        })
    }

    /// The address it listens on.
    pub fn addr(&self) -> SocketAddr {
        self.inner
            .local_addr()
            .unwrap_or_else(|_| SocketAddr::from(([127, 0, 0, 1], 0)))
    }

    /// The next connection, for the suite playing `role`.
    pub async fn accept(
        &self,
        wait: Duration,
        label: &str,
        role: Role,
        expected: &str,
    ) -> Result<Conn, Failure> {
        match tokio::time::timeout(wait, self.inner.accept()).await {
            Ok(Ok((stream, peer))) => {
                self.log
                    .push(format!("[{label}] accepted a connection from {peer}"));
                let mut c = Conn::new(stream, label.to_string(), self.log.clone(), role, true);
                if let (Some(auth), Some(_)) = (self.log.spark_auth(), &c.spark) {
                    // The peer's bootstrap first (SPEC §15.6), as a Spark server with the run's
                    // settings takes it.
                    let placeholder = c.stream_placeholder().await?;
                    let stream = std::mem::replace(&mut c.stream, placeholder);
                    let (clear, negotiated) =
                        crate::harness::spark_auth::accept(stream, &auth.server)
                            .await
                            .map_err(|e| fail(expected, e))?;
                    self.log
                        .push(format!("[{label}] the peer authenticated: {negotiated}"));
                    c.stream = clear;
                }
                Ok(c)
            }
            Ok(Err(e)) => Err(fail(expected, format!("accept failed: {e}"))),
            Err(_) => Err(fail(
                expected,
                format!("no connection within {} ms", wait.as_millis()),
            )),
        }
    }
}

impl crate::harness::env::Owing for Conn {
    fn log_line(&mut self, line: &str) {
        Conn::log_line(self, line);
    }

    async fn closed_within(&mut self, within: Duration) -> bool {
        matches!(self.next(within).await, Some(Event::Closed(_)) | None)
    }

    fn ended(&self) -> bool {
        Conn::ended(self)
    }
}

/// A number unique in this process and unlikely to repeat across runs.
pub fn unique() -> u64 {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let base = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() % 100_000)
        .unwrap_or(0);
    base * 10_000
        + NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
        + u64::from(std::process::id() % 97) * 1_000_000_000
}

#[cfg(test)]
mod tests {
    use super::*;
    use sparkwire::messages::deploy::Heartbeat;
    use sparkwire::messages::{Addr, EndpointRef};

    fn heartbeat_body() -> Bytes {
        let hb = Heartbeat::new(
            "worker-1".into(),
            EndpointRef::at(Addr::new("127.0.0.1", 7078), "Worker"),
        );
        let mut body = Vec::new();
        encode_envelope(
            &Envelope::Send(DeployMessage::from(hb)),
            Version::V2,
            &mut body,
        )
        .expect("encodes");
        Bytes::from(body)
    }

    #[test]
    fn envelopes_are_logged_in_the_json_form_of_trace_md_with_wire_field_names() {
        let text = describe("deploy", &heartbeat_body(), Version::V2);
        let json: serde_json::Value = serde_json::from_str(&text).expect("JSON");
        assert_eq!(json["event"], "send");
        assert_eq!(json["message"]["Heartbeat"]["workerId"], "worker-1");
        assert_eq!(
            json["message"]["Heartbeat"]["worker"]["address"]["port"],
            7078
        );
        for rust in ["worker_id", "Some(", "Addr {", "Heartbeat {"] {
            assert!(!text.contains(rust), "{rust} in {text}");
        }
        // A close envelope reads as trace.md's `closing` event.
        let mut body = Vec::new();
        encode_envelope::<DeployMessage>(
            &Envelope::Close(sparkwire::wire::CloseReason::new("Idle", "quiet")),
            Version::V2,
            &mut body,
        )
        .expect("encodes");
        let text = describe("deploy", &Bytes::from(body), Version::V2);
        assert!(
            text.starts_with(r#"{"event":"closing","reason":{"kind":"Idle""#),
            "{text}"
        );
    }

    #[test]
    fn handshake_frames_are_logged_by_their_keys() {
        let mut body = Vec::new();
        encode_hello(
            &Hello::new(&[Version::V1, Version::V2], Role::Worker, "w-1")
                .with_features(&["closeReason"]),
            &mut body,
        );
        assert_eq!(
            describe_handshake(&body),
            r#"hello {"magic":"sparkwire","versions":[1,2],"role":"worker","id":"w-1","features":["closeReason"]}"#
        );
        let mut answer = Vec::new();
        encode_answer(
            &Answer::Refused(Refusal {
                reason: RefusalReason::NoCommonVersion,
                message: "no common version".into(),
                versions: vec![2],
            }),
            &mut answer,
        );
        assert_eq!(
            describe_handshake(&answer),
            r#"answer {"magic":"sparkwire","refused":"noCommonVersion","message":"no common version","versions":[2]}"#
        );
        let mut accepted = Vec::new();
        encode_answer(
            &Answer::Accepted(Accepted {
                version: Version::V2,
                versions: vec![1, 2],
                role: Role::Master,
                id: "m".into(),
                features: vec!["closeReason".into()],
            }),
            &mut accepted,
        );
        assert!(
            describe_handshake(&accepted).starts_with(r#"answer {"magic":"sparkwire","version":2"#)
        );
        assert!(describe_handshake(&[0xc1]).contains("not one MessagePack map"));
    }

    #[tokio::test]
    async fn with_hex_the_log_holds_every_frame_s_bytes_and_without_it_does_not() {
        for with_hex in [true, false] {
            let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
            let addr = listener.local_addr().expect("addr");
            let log = crate::harness::env::Log::with_hex(with_hex);
            let mut c = Conn::connect(addr, "suite", Role::Worker, &log)
                .await
                .expect("connect");
            c.version = Some(Version::V2);
            let (mut peer, _) = listener.accept().await.expect("accept");
            let body = heartbeat_body();
            c.send_frame(&body).await.expect("sent");
            peer.write_all(&frame(&body)).await.expect("echo");
            assert!(matches!(
                c.next(Duration::from_secs(5)).await,
                Some(Event::Frame(_))
            ));
            let lines = log.lines();
            let full = hex(&frame(&body), usize::MAX);
            let shown = lines
                .iter()
                .filter(|l| l.contains(&format!("bytes: {full}")))
                .count();
            assert_eq!(shown, if with_hex { 2 } else { 0 }, "{lines:#?}");
            assert!(lines.iter().any(|l| l.contains(r#""workerId":"worker-1""#)));
        }
    }
}
