//! The Spark-wire front of a sparkwire master (`sparkwire master --spark-port`): real Spark
//! workers, applications and submission clients talk to the master in Spark's own RPC.
//!
//! The front is a bridge, not a second master: for each Spark connection it accepts it opens
//! one sparkwire connection to the master, with the role the Spark peer's first message shows
//! (`RegisterWorker` → worker, `RegisterApplication` → application client,
//! `RequestSubmitDriver`, `RequestKillDriver`, `RequestDriverStatus`, `RequestKillAllDrivers` →
//! driver client, the UI's asks → ui). When the master runs in the same process (`sparkwire
//! master --spark-port`, or a [`Master`](crate::reference::master::Master) started beside the
//! front) that connection is an in-memory stream which the master takes as a socket its
//! listener accepted: the same admission under its connection limit, the same handshake with
//! its secret, the same per-connection limits and timeouts; no descriptor, no loopback TCP (a
//! Spark peer costs the process one descriptor, its own socket). Otherwise (a master in another
//! process, or the crate without the `reference` feature) it is a TCP connection to the
//! master's listener. Either way every protection the master gives its sparkwire peers (routes,
//! ids bound to the connection, per-connection limits, redaction) applies to the Spark peer
//! unchanged, and the master's core knows nothing of Spark's wire. Per Spark connection:
//!
//! - transport frames are read with [`FrameDecoder`] bounded by the front's largest frame, and
//!   written through a queue bounded in frames (a peer that does not read is closed);
//! - `RpcEndpointVerifier$CheckExistence(name)` to `endpoint-verifier` is answered `true` for
//!   `Master` only, as Spark's master does;
//! - each peer is answered in the release its streams tell ([`Detector`]); a worker or an
//!   application whose streams leave releases of different tables open is asked which before
//!   its registration is taken: probes of its release (SPEC §15.3), asks to
//!   [`PROBE_ENDPOINT`] on its own connection, while what it sends meanwhile is held;
//! - a one-way message is sent on to the master; an ask (`RpcRequest`) is asked of the master
//!   and its answer written back as an `RpcResponse` (a Boolean, an Integer, a message) or an
//!   `RpcFailure` with the same request id;
//! - what the master sends the peer is written as a one-way message to the endpoint reference
//!   the peer registered (the `worker` of `RegisterWorker`, the `driver` of
//!   `RegisterApplication`), on the same connection: a Spark master never dials out in normal
//!   operation;
//! - the master's references and URLs in what it sends (`RegisteredWorker`,
//!   `RegisteredApplication`, `LaunchExecutor`'s `masterUrl`, …) name the front's address, which is
//!   the only one a Spark peer can speak to: a Spark worker ignores a `LaunchExecutor` whose
//!   `masterUrl` is not the master it registered with;
//! - the `ApplicationDescription` an application registered with reaches its executors' workers
//!   inside `LaunchExecutor` as the driver wrote it (its Java object graph is kept beside the
//!   typed value while the application is connected), so executors start with the driver's
//!   command, environment, Java options and resource profile.
//!
//! With Spark's authentication configured ([`FrontConfig::auth`], the master's secret), every
//! Spark peer runs Spark's bootstrap first (SASL DIGEST-MD5 or the auth engine with AES-CTR, as
//! [`auth::server_handshake`](super::auth::server_handshake) takes them): nothing it sends before
//! it has authenticated reaches the master, and a peer that fails is closed (logged at WARN with
//! its address) before any bridge to the master is opened. The bridge then proves the master's
//! own secret ([`FrontConfig::master_security`]). With [`FrontConfig::refuse`] set (TLS on the
//! master: Spark's `spark.ssl` is not spoken here) every Spark peer is refused: its first request
//! is answered with an `RpcFailure` saying why and its connection closed.

use std::collections::{HashMap, VecDeque};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, oneshot, Semaphore};

use super::release::{Detector, Probe, ProbeAnswer, Release, MAX_PROBES, PROBE_ENDPOINT};
use super::serial::Graph;
use super::served::ServerHandle;
use super::{
    bool_stream, classify, int_stream, message_stream, parse_stream, reply_value, Classified,
    Frame, FrameDecoder, ReplyValue, RequestMessage, Typed, CHECK_EXISTENCE,
};
use crate::connection::{
    connect_tcp, Connection, ConnectionConfig, ConnectionError, ConnectionHandle, Incoming,
    Security,
};
use crate::messages::{Addr, DeployMessage, EndpointRef, ErrorDescription, Family, Version};
use crate::wire::handshake::Role;
use crate::wire::Reply;

/// The endpoint name of Spark's master.
pub const MASTER_ENDPOINT: &str = "Master";

/// The endpoint name of a Spark worker.
pub const WORKER_ENDPOINT: &str = "Worker";

/// The settings of a Spark-wire front.
#[derive(Debug, Clone)]
pub struct FrontConfig {
    /// Address to listen on, and the host of the master's address as Spark peers see it.
    pub host: String,
    /// Port to listen on; 0 picks a free one.
    pub port: u16,
    /// The sparkwire listener of the master the front bridges to: a master of this process
    /// listening there is reached in process (module docs), any other over TCP.
    pub master: SocketAddr,
    /// The Spark release every peer is answered in, when the operator pins one; `None` (the
    /// default): each peer's release is told from the Java streams it sends
    /// ([`Detector`]), and a peer of a release sparkwire does not know is refused.
    pub release: Option<&'static Release>,
    /// The sparkwire protocol versions the master speaks: a peer whose release maps to another
    /// is refused.
    pub versions: Vec<Version>,
    /// Largest Spark transport frame accepted, bytes (`spark.rpc.message.maxSize`).
    pub max_frame: u64,
    /// Spark connections served at once; one more is closed at once.
    pub max_connections: usize,
    /// Frames queued for writing to one Spark peer; a peer that lets more pile up is closed.
    pub write_queue: usize,
    /// Asks of one Spark peer awaiting the master's answer at once; one more is answered with a
    /// failure.
    pub max_asks: usize,
    /// How long a Spark peer may stay connected without sending a message that registers it
    /// (or any other message the master takes).
    pub idle_timeout: Duration,
    /// How long an ask waits for the master's answer (`spark.rpc.askTimeout`).
    pub ask_timeout: Duration,
    /// How long the front waits for a peer's answer to one probe of its release (SPEC §15.3:
    /// asked when a worker's or an application's streams leave releases open that describe the
    /// wire's classes differently); `Duration::ZERO` asks none, and such a peer is answered in
    /// the newest release its streams agree with.
    pub probe_timeout: Duration,
    /// When set, every Spark peer is refused with this reason (the master has TLS, which Spark's
    /// wire does not speak here).
    pub refuse: Option<String>,
    /// Spark's authentication (`spark.authenticate=true`): when set, every Spark peer must pass
    /// Spark's bootstrap with this secret before anything it sends is read.
    pub auth: Option<super::auth::ServerAuth>,
    /// The security of the bridges to the master (its shared secret).
    pub master_security: Security,
    /// The master's slot for announcing itself to recovered Spark peers after a failover, and
    /// its web UI URL: filled by the front once it listens (see [`super::recovered`]). With the
    /// `reference` feature (the master whose slot it is).
    #[cfg(feature = "reference")]
    pub recovered: Option<(crate::reference::master::SparkPeerDial, String)>,
}

impl FrontConfig {
    /// A front on `host:port` for the master listening on `master`, with the defaults: each
    /// peer's release told from the wire, both protocol versions, frames of at most 128 MiB, 512 connections, 1,024 queued frames and 256 asks per
    /// connection, 60 s to register, 120 s per ask, 5 s per probe.
    pub fn new(host: impl Into<String>, port: u16, master: SocketAddr) -> Self {
        FrontConfig {
            host: host.into(),
            port,
            master,
            release: None,
            versions: Version::ALL.to_vec(),
            max_frame: super::DEFAULT_MAX_FRAME,
            max_connections: 512,
            write_queue: 1024,
            max_asks: 256,
            idle_timeout: Duration::from_secs(60),
            ask_timeout: Duration::from_secs(120),
            probe_timeout: Duration::from_secs(5),
            refuse: None,
            auth: None,
            master_security: Security::default(),
            #[cfg(feature = "reference")]
            recovered: None,
        }
    }
}

/// Starts a front: binds `host:port` and serves Spark peers until stopped.
pub async fn start_front(config: FrontConfig) -> std::io::Result<ServerHandle> {
    let listener = TcpListener::bind((config.host.as_str(), config.port)).await?;
    let addr = listener.local_addr()?;
    let (stop_tx, stop_rx) = oneshot::channel();
    let ctx = Arc::new(Ctx {
        own: Addr::new(config.host.clone(), i32::from(addr.port())),
        originals: Mutex::new(Originals::default()),
        config,
    });
    #[cfg(feature = "reference")]
    if let Some((slot, ui)) = &ctx.config.recovered {
        super::recovered::SparkAnnouncer::for_front(&ctx.config, addr.port(), ui.clone())
            .install(slot, Arc::clone(&ctx));
    }
    let done = tokio::spawn(accept_loop(listener, ctx, stop_rx));
    Ok(ServerHandle::new(addr, stop_tx, done))
}

/// What every connection of a front shares.
pub(super) struct Ctx {
    config: FrontConfig,
    /// The front's address as Spark peers name the master.
    own: Addr,
    /// The Java graphs of what applications and drivers were registered with, for the messages
    /// that pass them on (`LaunchExecutor`, `LaunchDriver`).
    originals: Mutex<Originals>,
}

impl Ctx {
    fn master_ref(&self) -> EndpointRef {
        EndpointRef::at(self.own.clone(), MASTER_ENDPOINT)
    }

    /// The `RegisterApplication` graph of application `app_id` as the master's recovery record
    /// kept it (SPEC §15.5): an application this front never saw register, recovered by a new
    /// leader, whose executors carry its original description on.
    fn recovered_registration(&self, app_id: &str) -> Option<Arc<Graph>> {
        #[cfg(feature = "reference")]
        if let Some((slot, _)) = &self.config.recovered {
            let bytes = slot.with_book(|b| b.registration(app_id))?;
            let graph = match parse_stream(&bytes) {
                Ok(g) => Arc::new(g),
                Err(e) => {
                    tracing::warn!(
                        "spark front: the stored registration of {app_id} does not read: {e}"
                    );
                    return None;
                }
            };
            if let Ok(mut originals) = self.originals.lock() {
                originals.insert(app_id.to_string(), Arc::clone(&graph));
            }
            return Some(graph);
        }
        #[cfg(not(feature = "reference"))]
        let _ = app_id;
        None
    }

    fn master_url(&self) -> String {
        format!("spark://{}:{}", self.own.host, self.own.port)
    }
}

/// The most original graphs (applications' and drivers') kept at once.
const MAX_ORIGINALS: usize = 1024;

/// The Java graphs of the `RegisterApplication`s of connected applications, by application id,
/// and of the `RequestSubmitDriver`s of submitted drivers, by driver id (a supervised driver may
/// be launched again long after its client left), bounded: the oldest goes first.
#[derive(Default)]
struct Originals {
    graphs: HashMap<String, Arc<Graph>>,
    order: VecDeque<String>,
}

impl Originals {
    fn insert(&mut self, id: String, graph: Arc<Graph>) {
        if self.graphs.insert(id.clone(), graph).is_none() {
            self.order.push_back(id);
        }
        while self.order.len() > MAX_ORIGINALS {
            if let Some(old) = self.order.pop_front() {
                self.graphs.remove(&old);
            }
        }
    }

    fn remove(&mut self, id: &str) {
        self.graphs.remove(id);
        self.order.retain(|i| i != id);
    }

    fn get(&self, id: &str) -> Option<Arc<Graph>> {
        self.graphs.get(id).cloned()
    }
}

async fn accept_loop(listener: TcpListener, ctx: Arc<Ctx>, mut stop: oneshot::Receiver<()>) {
    let slots = Arc::new(Semaphore::new(ctx.config.max_connections.max(1)));
    let mut tasks = tokio::task::JoinSet::new();
    loop {
        tokio::select! {
            _ = &mut stop => break,
            accepted = listener.accept() => {
                let (stream, peer) = match accepted {
                    Ok(a) => a,
                    Err(e) => {
                        tracing::warn!("spark front: accept failed: {e}");
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        continue;
                    }
                };
                let Ok(slot) = Arc::clone(&slots).try_acquire_owned() else {
                    tracing::warn!(
                        "spark front: refused {peer}: {} Spark connections already open",
                        ctx.config.max_connections
                    );
                    continue;
                };
                let _ = stream.set_nodelay(true);
                let ctx = Arc::clone(&ctx);
                tasks.spawn(async move {
                    match serve(stream, peer, ctx).await {
                        Ok(()) => tracing::info!("spark front: {peer} closed"),
                        Err(why) => tracing::warn!("spark front: closed {peer}: {why}"),
                    }
                    drop(slot);
                });
            }
            Some(_) = tasks.join_next(), if !tasks.is_empty() => {}
        }
    }
    tasks.shutdown().await;
}

/// Why a Spark connection was closed.
#[derive(Debug, thiserror::Error)]
pub enum FrontError {
    /// Reading or writing the socket failed.
    #[error("socket: {0}")]
    Io(#[from] std::io::Error),
    /// The peer's bytes are no Spark transport frames (or a frame is over the limit).
    #[error("a broken Spark frame: {0}")]
    Frame(String),
    /// The master has TLS; Spark peers are refused.
    #[error("refused: {0}")]
    Refused(String),
    /// The peer failed Spark's authentication bootstrap (`spark.authenticate`).
    #[error("refused at Spark's authentication bootstrap: {0}")]
    Auth(#[from] super::auth::AuthError),
    /// The peer registered nothing within the idle timeout.
    #[error("sent nothing the master takes within {0:?}")]
    Idle(Duration),
    /// The peer let more frames pile up than the write queue holds.
    #[error("does not read what is written to it ({0} frames queued)")]
    SlowConsumer(usize),
    /// The bridge to the master could not be opened or closed.
    #[error("the master's connection: {0}")]
    Master(#[from] ConnectionError),
    /// A message the master sent has no Spark form.
    #[error("cannot write {0}")]
    Encode(String),
    /// The peer's streams match no Spark release sparkwire knows, or its release maps to a
    /// protocol version the master does not speak.
    #[error("refused: {0}")]
    Release(String),
}

/// One Spark connection's state.
struct Conn {
    ctx: Arc<Ctx>,
    peer: SocketAddr,
    out: mpsc::Sender<Vec<u8>>,
    /// The sparkwire connection to the master and the role it was opened as.
    bridge: Option<(Connection<DeployMessage>, Role)>,
    /// The peer's RPC address, from the first header that carried one.
    address: Option<(String, i32)>,
    /// The endpoint the master's messages to the peer go to (`Worker`, `AppClient`).
    peer_ref: Option<EndpointRef>,
    /// The registered application's original graph, until the master gives it an id.
    app_graph: Option<Arc<Graph>>,
    /// The id the master gave the application registered on this connection.
    app_id: Option<String>,
    /// Asks of the peer awaiting the master's answer.
    asks: Arc<Semaphore>,
    /// The master's asks awaiting the peer's answer: Spark request id → sparkwire ask id.
    master_asks: HashMap<i64, u64>,
    next_request: i64,
    /// The peer's release, as far as its streams (and its answers to probes) have told it.
    detector: Detector,
    /// The probe asked of the peer and not answered yet.
    probing: Option<Probing>,
    /// Whether the peer's release was probed (once per connection, at its registration).
    probed: bool,
    /// Probes asked of the peer.
    probes_asked: usize,
    /// What the peer sent while a probe was out (its registration first), taken in order once
    /// the probing ends.
    held: VecDeque<Frame>,
}

/// A probe of a peer's release awaiting its answer (SPEC §15.3).
struct Probing {
    request_id: i64,
    probe: Probe,
    deadline: tokio::time::Instant,
    /// Where the probe was addressed (the registering endpoint's RPC address).
    receiver: Option<(String, i32)>,
}

/// Bytes read from a Spark peer's socket at once.
const READ_BUFFER: usize = 4 * 1024;

/// Frames of a peer held while its release is probed; one more closes the connection.
const MAX_HELD: usize = 256;

async fn serve(stream: TcpStream, peer: SocketAddr, ctx: Arc<Ctx>) -> Result<(), FrontError> {
    match &ctx.config.auth {
        None => serve_io(stream, peer, ctx, None).await,
        Some(auth) => {
            let stream = super::auth::server_handshake(stream, auth).await?;
            tracing::info!("spark front: {peer} authenticated: {}", stream.negotiated());
            serve_io(stream, peer, ctx, None).await
        }
    }
}

/// Serves a connection the master dialled to tell a recovered Spark peer (`peer_ref`) of a
/// failover: the peer answers on it (a Spark endpoint reference answers over the connection it
/// came on), and what it sends is taken as from any Spark peer.
#[cfg(feature = "reference")]
pub(super) async fn serve_recovered<S>(
    stream: S,
    peer: SocketAddr,
    ctx: Arc<Ctx>,
    peer_ref: EndpointRef,
    release: &'static Release,
) -> Result<(), FrontError>
where
    S: AsyncRead + AsyncWrite + Send + Unpin + 'static,
{
    serve_io(stream, peer, ctx, Some((peer_ref, release))).await
}

async fn serve_io<S>(
    stream: S,
    peer: SocketAddr,
    ctx: Arc<Ctx>,
    recovered: Option<(EndpointRef, &'static Release)>,
) -> Result<(), FrontError>
where
    S: AsyncRead + AsyncWrite + Send + Unpin + 'static,
{
    let (mut rd, mut wr) = tokio::io::split(stream);
    let (out, mut queue) = mpsc::channel::<Vec<u8>>(ctx.config.write_queue.max(1));
    let writer = tokio::spawn(async move {
        while let Some(bytes) = queue.recv().await {
            wr.write_all(&bytes).await?;
        }
        wr.shutdown().await
    });
    let mut conn = Conn {
        ctx: Arc::clone(&ctx),
        peer,
        out,
        bridge: None,
        address: None,
        peer_ref: recovered.as_ref().map(|(r, _)| r.clone()),
        app_graph: None,
        app_id: None,
        asks: Arc::new(Semaphore::new(ctx.config.max_asks.max(1))),
        master_asks: HashMap::new(),
        next_request: 1,
        // A recovered peer speaks the release it was told in (its stored one) from the start:
        // what the master sends it before its own streams say more is written in that.
        detector: match ctx.config.release.or(recovered.as_ref().map(|(_, r)| *r)) {
            Some(r) => Detector::pinned(r),
            None => Detector::new(),
        },
        probing: None,
        probed: false,
        probes_asked: 0,
        held: VecDeque::new(),
    };
    let result = conn.run(&mut rd).await;
    if let Some(id) = conn.app_id.take() {
        if let Ok(mut originals) = ctx.originals.lock() {
            originals.remove(&id);
        }
    }
    if let Some((bridge, _)) = conn.bridge.take() {
        bridge.close().await;
    }
    drop(conn);
    // Whatever was queued (a refusal's failure, say) is written before the socket closes.
    match tokio::time::timeout(Duration::from_secs(5), writer).await {
        Ok(Ok(Err(e))) if result.is_ok() => Err(e.into()),
        _ => result,
    }
}

/// Waits until the probe out (if any) is due.
async fn probe_due(probing: &Option<Probing>) {
    match probing {
        Some(p) => tokio::time::sleep_until(p.deadline).await,
        None => std::future::pending().await,
    }
}

async fn recv_bridge(
    bridge: &mut Option<(Connection<DeployMessage>, Role)>,
) -> Result<Incoming<DeployMessage>, ConnectionError> {
    match bridge {
        Some((c, _)) => c.recv().await,
        None => std::future::pending().await,
    }
}

impl Conn {
    async fn run(&mut self, rd: &mut (impl AsyncRead + Unpin)) -> Result<(), FrontError> {
        let mut decoder = FrameDecoder::new(self.ctx.config.max_frame);
        // Spark's control messages are a few hundred bytes to a few KiB; a larger frame takes
        // more reads. (64 KiB here was about 40 % of the master's memory per Spark peer.)
        let mut buf = vec![0u8; READ_BUFFER];
        let idle = self.ctx.config.idle_timeout;
        let registration = tokio::time::sleep(idle);
        tokio::pin!(registration);
        loop {
            tokio::select! {
                read = rd.read(&mut buf) => {
                    let n = read?;
                    if n == 0 {
                        return Ok(());
                    }
                    decoder.push(&buf[..n]);
                    while let Some(item) = decoder.next_item() {
                        match item.frame {
                            Ok(frame) => self.frame_in(frame).await?,
                            Err(e) => return Err(FrontError::Frame(e.to_string())),
                        }
                    }
                    if decoder.is_lost() {
                        return Err(FrontError::Frame("the frame stream is lost".into()));
                    }
                }
                from_master = recv_bridge(&mut self.bridge) => match from_master {
                    Ok(Incoming::Message(m)) => self.write_to_peer(None, m)?,
                    Ok(Incoming::Ask { id, message }) => {
                        let request = self.next_request;
                        self.next_request += 1;
                        self.master_asks.insert(request, id);
                        self.write_to_peer(Some(request), message)?;
                    }
                    Err(e) => return Err(FrontError::Master(e)),
                },
                () = &mut registration, if self.bridge.is_none() => {
                    return Err(FrontError::Idle(idle));
                }
                () = probe_due(&self.probing) => {
                    if let Some(p) = self.probing.take() {
                        tracing::warn!(
                            "spark front: {}: no answer to the probe of {} within {:?}; \
                             answered in Spark {} (its streams agree with: {})",
                            self.peer,
                            p.probe.class(),
                            self.ctx.config.probe_timeout,
                            self.detector.release(),
                            self.agreeing()
                        );
                    }
                }
            }
            // What the peer sent while a probe was out, once the probing has ended.
            while self.probing.is_none() {
                let Some(frame) = self.held.pop_front() else {
                    break;
                };
                self.frame_in(frame).await?;
            }
        }
    }

    /// The releases the peer's streams and answers agree with, named.
    fn agreeing(&self) -> String {
        let names: Vec<&str> = self
            .detector
            .candidates()
            .iter()
            .map(|r| r.name())
            .collect();
        names.join(" ")
    }

    /// Asks the peer the probe that best tells apart the releases its streams leave open, if
    /// they describe a class of the wire differently (SPEC §15.3); returns whether one was asked.
    fn ask_probe(&mut self, receiver: Option<(String, i32)>) -> Result<bool, FrontError> {
        if self.ctx.config.probe_timeout.is_zero() || self.probes_asked >= MAX_PROBES {
            return Ok(false);
        }
        let Some(probe) = self.detector.probe() else {
            return Ok(false);
        };
        let stream = match probe.stream() {
            Ok(s) => s,
            Err(e) => {
                tracing::debug!(
                    "spark front: {}: no probe of {}: {e}",
                    self.peer,
                    probe.class()
                );
                return Ok(false);
            }
        };
        let request_id = self.next_request;
        self.next_request += 1;
        let header = RequestMessage {
            sender: None,
            receiver: receiver.clone(),
            endpoint: PROBE_ENDPOINT.to_string(),
            stream: stream.into(),
        };
        let body: Bytes = header
            .encode()
            .map_err(|e| FrontError::Encode(e.to_string()))?
            .into();
        let frame = Frame::RpcRequest { request_id, body };
        self.queue(
            frame
                .encode()
                .map_err(|e| FrontError::Encode(e.to_string()))?,
        )?;
        tracing::debug!(
            "spark front: {}: probe {request_id}: {} as Spark {} describes it (its streams agree with: {})",
            self.peer,
            probe.class(),
            probe.release(),
            self.agreeing()
        );
        self.probes_asked += 1;
        self.probing = Some(Probing {
            request_id,
            probe,
            deadline: tokio::time::Instant::now() + self.ctx.config.probe_timeout,
            receiver,
        });
        Ok(true)
    }

    /// The peer's answer to the probe out: narrows its releases, then asks the next probe or
    /// ends the probing.
    fn probe_answered(&mut self, answer: Result<Bytes, String>) -> Result<(), FrontError> {
        let Some(p) = self.probing.take() else {
            return Ok(());
        };
        let said = match answer {
            Err(text) => ProbeAnswer::of_failure(&text),
            Ok(body) => match parse_stream(&body)
                .ok()
                .and_then(|g| reply_value(g.root_node()).ok())
            {
                Some(ReplyValue::Failure(e)) => {
                    ProbeAnswer::of_failure(&format!("{}: {}", e.class_name, e.message))
                }
                _ => ProbeAnswer::Other,
            },
        };
        let before = self.detector.release();
        let told = self.detector.answer(&p.probe, &said);
        tracing::info!(
            "spark front: {}: probe of {} ({}'s): {}; speaks Spark {} (was {before}; its streams \
             and answers agree with: {})",
            self.peer,
            p.probe.class(),
            p.probe.release(),
            match &said {
                ProbeAnswer::Read => "read as sent".to_string(),
                ProbeAnswer::Incompatible { class, local } =>
                    format!("{class} has serialVersionUID {local} there"),
                ProbeAnswer::NoClass(c) => format!("no class {c} there"),
                ProbeAnswer::Other => "an answer that tells nothing".to_string(),
            },
            self.detector.release(),
            self.agreeing()
        );
        if told {
            self.ask_probe(p.receiver)?;
        }
        Ok(())
    }

    fn queue(&self, bytes: Vec<u8>) -> Result<(), FrontError> {
        self.out
            .try_send(bytes)
            .map_err(|_| FrontError::SlowConsumer(self.ctx.config.write_queue))
    }

    fn failure(&self, request_id: i64, error: String) -> Result<(), FrontError> {
        let f = Frame::RpcFailure { request_id, error };
        self.queue(f.encode().map_err(|e| FrontError::Encode(e.to_string()))?)
    }

    async fn frame_in(&mut self, frame: Frame) -> Result<(), FrontError> {
        if let Some(p) = &self.probing {
            match frame {
                Frame::RpcResponse { request_id, body } if request_id == p.request_id => {
                    return self.probe_answered(Ok(body));
                }
                Frame::RpcFailure { request_id, error } if request_id == p.request_id => {
                    return self.probe_answered(Err(error));
                }
                other => {
                    if self.held.len() >= MAX_HELD {
                        return Err(FrontError::Frame(format!(
                            "more than {MAX_HELD} frames while its release was probed"
                        )));
                    }
                    self.held.push_back(other);
                    return Ok(());
                }
            }
        }
        match frame {
            Frame::OneWay { body } => self.request_in(None, &body).await,
            Frame::RpcRequest { request_id, body } => {
                self.request_in(Some(request_id), &body).await
            }
            Frame::RpcResponse { request_id, body } => {
                self.answer_in(request_id, Ok(body)).await;
                Ok(())
            }
            Frame::RpcFailure { request_id, error } => {
                self.answer_in(request_id, Err(error)).await;
                Ok(())
            }
            other => {
                tracing::debug!(
                    "spark front: {}: a {} frame, which a master does not serve",
                    self.peer,
                    other.kind().as_str()
                );
                Ok(())
            }
        }
    }

    /// The peer's answer to one of the master's asks.
    async fn answer_in(&mut self, request_id: i64, answer: Result<Bytes, String>) {
        let Some(id) = self.master_asks.remove(&request_id) else {
            tracing::debug!(
                "spark front: {}: an answer to request {request_id}, never asked",
                self.peer
            );
            return;
        };
        let Some((bridge, _)) = &self.bridge else {
            return;
        };
        let reply = match answer {
            Err(text) => Err(super::error_of(&text)),
            Ok(body) => match parse_stream(&body)
                .map_err(|e| e.to_string())
                .and_then(|g| reply_value(g.root_node()).map_err(|e| e.to_string()))
            {
                Ok(ReplyValue::Bool(b)) => Ok(Reply::Bool(b)),
                Ok(ReplyValue::Int(i)) => Ok(Reply::Int(i)),
                Ok(ReplyValue::Message(Typed::Deploy(m))) => Ok(Reply::Message(m)),
                Ok(ReplyValue::Failure(e)) => Err(e),
                Ok(ReplyValue::Message(Typed::Coarse(c))) => Err(ErrorDescription::new(
                    "org.apache.spark.SparkException",
                    format!("a {} answer on a deploy connection", c.name()),
                )),
                Ok(ReplyValue::Other(class)) => Err(ErrorDescription::new(
                    "org.apache.spark.SparkException",
                    format!("an answer of class {class}"),
                )),
                Err(e) => Err(ErrorDescription::new(
                    "org.apache.spark.SparkException",
                    format!("an answer that does not read: {e}"),
                )),
            },
        };
        let sent = match reply {
            Ok(r) => bridge.reply(id, r).await,
            Err(e) => bridge.fail(id, e).await,
        };
        if let Err(e) = sent {
            tracing::debug!("spark front: {}: answer to ask {id}: {e}", self.peer);
        }
    }

    async fn request_in(
        &mut self,
        request_id: Option<i64>,
        body: &Bytes,
    ) -> Result<(), FrontError> {
        if let Some(reason) = &self.ctx.config.refuse {
            if let Some(id) = request_id {
                self.failure(id, format!("java.lang.SecurityException: {reason}"))?;
            }
            return Err(FrontError::Refused(reason.clone()));
        }
        let Some(header) = RequestMessage::parse(body) else {
            return Err(FrontError::Frame(
                "a request whose RequestMessage header does not read".into(),
            ));
        };
        if self.address.is_none() {
            self.address = header.sender.clone();
        }
        let mut graph = match parse_stream(&header.stream) {
            Ok(g) => g,
            Err(e) => {
                let why = format!("a Java stream that does not read: {e}");
                if let Some(id) = request_id {
                    self.failure(id, format!("org.apache.spark.SparkException: {why}"))?;
                    return Ok(());
                }
                return Err(FrontError::Frame(why));
            }
        };
        let release = self.release_of(request_id, &graph)?;
        let root = graph.root_node();
        if root.class() == Some(CHECK_EXISTENCE) {
            let name = root
                .field("name")
                .and_then(|n| n.as_str().map(str::to_string))
                .unwrap_or_default();
            if let Some(request_id) = request_id {
                let exists = name == MASTER_ENDPOINT;
                let stream =
                    bool_stream(exists, release).map_err(|e| FrontError::Encode(e.to_string()))?;
                let f = Frame::RpcResponse {
                    request_id,
                    body: stream.into(),
                };
                self.queue(f.encode().map_err(|e| FrontError::Encode(e.to_string()))?)?;
            }
            return Ok(());
        }
        let mut m = match classify(root) {
            Classified::Message(Typed::Deploy(m)) => m,
            Classified::Message(Typed::Coarse(c)) => {
                return self.not_taken(request_id, format!("{} (a driver's message)", c.name()));
            }
            Classified::Outside(c) | Classified::Unknown(c) => {
                return self.not_taken(request_id, format!("a {c} to {}", header.endpoint));
            }
            Classified::Failed(c, e) => {
                return self.not_taken(request_id, format!("a {c} that does not map: {e}"));
            }
        };
        let Some(role) = role_of(&m) else {
            return self.not_taken(
                request_id,
                format!("{}, which a master does not take", m.name()),
            );
        };
        // A worker or an application whose streams leave releases open that describe the
        // wire's classes differently is asked which, before it is registered (SPEC §15.3).
        if !self.probed && self.bridge.is_none() {
            let receiver = match &m {
                DeployMessage::RegisterWorker(r) => Some(r.worker.address.clone()),
                DeployMessage::RegisterApplication(r) => Some(r.driver.address.clone()),
                _ => None,
            };
            if let Some(receiver) = receiver {
                self.probed = true;
                let receiver = receiver
                    .map(|a| (a.host, a.port))
                    .or_else(|| self.address.clone());
                if self.ask_probe(receiver)? {
                    self.held.push_front(match request_id {
                        Some(request_id) => Frame::RpcRequest {
                            request_id,
                            body: body.clone(),
                        },
                        None => Frame::OneWay { body: body.clone() },
                    });
                    return Ok(());
                }
            }
        }
        match &self.bridge {
            Some((_, r)) if *r != role => {
                return self.not_taken(
                    request_id,
                    format!("{}, a {role}'s message, on a {r}'s connection", m.name()),
                );
            }
            Some(_) => {}
            None => self.open_bridge(role, &m).await?,
        }
        // The master places an application's executors on workers of its release (SPEC §15.5):
        // the front announces the releases the peer's streams and answers leave (one name when
        // they tell its table; the newest of each table left when probing ended without an
        // answer), so that placement intersects what is known rather than trusting a guess.
        match &mut m {
            DeployMessage::RegisterWorker(r) => {
                let label = self.detector.label();
                r.spark_release = Some(label.clone());
                self.peer_ref = Some(r.worker.clone());
                self.note_peer(r.worker.address.as_ref(), &label, None);
            }
            DeployMessage::RegisterApplication(r) => {
                let label = self.detector.label();
                r.spark_release = Some(label.clone());
                self.peer_ref = Some(r.driver.clone());
                self.app_graph = Some(Arc::new(std::mem::take(&mut graph)));
                self.note_peer(r.driver.address.as_ref(), &label, Some(&header.stream));
            }
            // A recovered peer answers a new leader's MasterChanged on a connection of its own,
            // with no registration on it: its messages' role names the endpoint the master's
            // messages to it go to, at the address its headers carry (without this a worker's
            // next LaunchExecutor went to `AppClient`, which a Spark worker does not serve).
            DeployMessage::Heartbeat(h)
                if self.peer_ref.is_none() && h.worker.address.is_some() =>
            {
                self.peer_ref = Some(h.worker.clone());
            }
            _ if self.peer_ref.is_none() && role == Role::Worker => {
                self.peer_ref = self.address.as_ref().map(|(host, port)| {
                    EndpointRef::at(Addr::new(host.clone(), *port), WORKER_ENDPOINT)
                });
            }
            _ => {}
        }
        let Some((bridge, _)) = &self.bridge else {
            return Ok(());
        };
        match request_id {
            None => bridge.send(m).await?,
            Some(request_id) => {
                let Ok(permit) = Arc::clone(&self.asks).try_acquire_owned() else {
                    return self.failure(
                        request_id,
                        format!(
                            "org.apache.spark.SparkException: more than {} asks awaiting the master",
                            self.ctx.config.max_asks
                        ),
                    );
                };
                let handle = bridge.handle();
                let out = self.out.clone();
                let timeout = self.ctx.config.ask_timeout;
                let ctx = Arc::clone(&self.ctx);
                let release = self.detector.release();
                let peer = self.peer;
                let submitted = matches!(m, DeployMessage::RequestSubmitDriver(_))
                    .then(|| Arc::new(std::mem::take(&mut graph)));
                tokio::spawn(async move {
                    let answer =
                        answer_frame(&handle, m, timeout, request_id, &ctx, release, submitted)
                            .await;
                    if let Some(bytes) = answer {
                        if out.try_send(bytes).is_err() {
                            tracing::warn!(
                                "spark front: {peer}: the answer to request {request_id} is dropped: \
                                 the peer does not read (or left)"
                            );
                        }
                    }
                    drop(permit);
                });
            }
        }
        Ok(())
    }

    /// The peer's release, revised by one more of its streams. A stream that matches no release
    /// sparkwire knows (or a release whose protocol version the master does not speak) refuses
    /// the peer: logged at WARN with the classes that did not match, an ask answered with a
    /// failure that says so, a worker's registration answered `RegisterWorkerFailed` in the
    /// nearest release's forms (a Spark worker that reads it stops retrying), and the
    /// connection closed.
    fn release_of(
        &mut self,
        request_id: Option<i64>,
        graph: &Graph,
    ) -> Result<&'static Release, FrontError> {
        let before = self.detector.known().then(|| self.detector.release());
        let why = match self.detector.observe(graph) {
            Ok(release) if self.ctx.config.versions.contains(&release.version()) => {
                // The releases its streams agree with, named, so that an operator (and
                // scripts/spark/lane.sh) can see the peer's own release among them where its
                // streams cannot tell the newest from older ones (SPEC §15.3).
                let agreeing = || {
                    let names: Vec<&str> = self
                        .detector
                        .candidates()
                        .iter()
                        .map(|r| r.name())
                        .collect();
                    names.join(" ")
                };
                if before.is_some_and(|b| b != release) {
                    tracing::info!(
                        "spark front: {}: revised: speaks Spark {release} (was {}; its streams agree with: {})",
                        self.peer,
                        before.map(Release::name).unwrap_or_default(),
                        agreeing()
                    );
                } else if before.is_none() {
                    tracing::info!(
                        "spark front: {}: speaks Spark {release} (Scala {}; {} of the releases \
                         sparkwire knows agree with its first stream: {})",
                        self.peer,
                        release.scala(),
                        self.detector.candidates().len(),
                        agreeing()
                    );
                }
                return Ok(release);
            }
            Ok(release) => format!(
                "Spark {release} maps to sparkwire protocol version {}, which this master \
                 does not speak (--protocol-versions)",
                release.version().number()
            ),
            Err(unknown) => unknown.to_string(),
        };
        tracing::warn!("spark front: {}: refused: {why}", self.peer);
        match request_id {
            Some(id) => self.failure(id, format!("org.apache.spark.SparkException: {why}"))?,
            None => self.refuse_registration(graph, &why),
        }
        Err(FrontError::Release(why))
    }

    /// Answers a worker's `RegisterWorker` with `RegisterWorkerFailed(why)`, written in the
    /// forms of the release nearest to what the worker sent.
    fn refuse_registration(&mut self, graph: &Graph, why: &str) {
        let Classified::Message(Typed::Deploy(DeployMessage::RegisterWorker(r))) =
            classify(graph.root_node())
        else {
            return;
        };
        let Some(nearest) = Release::all().iter().max_by_key(|rel| {
            let v = rel.judge(graph);
            v.matched as i64 - v.mismatched.len() as i64
        }) else {
            return;
        };
        self.detector = Detector::pinned(nearest);
        self.peer_ref = Some(r.worker.clone());
        let failed = DeployMessage::from(crate::messages::deploy::RegisterWorkerFailed::new(
            format!("sparkwire master: {why}"),
        ));
        if let Err(e) = self.write_to_peer(None, failed) {
            tracing::debug!("spark front: {}: RegisterWorkerFailed: {e}", self.peer);
        }
    }

    /// A message the master does not take from this peer: an ask is answered with a failure, a
    /// one-way message is logged and dropped (as Spark's dispatcher does with one it cannot
    /// route).
    fn not_taken(&self, request_id: Option<i64>, what: String) -> Result<(), FrontError> {
        tracing::warn!("spark front: {}: not taken: {what}", self.peer);
        match request_id {
            Some(id) => self.failure(
                id,
                format!("org.apache.spark.SparkException: sparkwire master does not take {what}"),
            ),
            None => Ok(()),
        }
    }

    async fn open_bridge(&mut self, role: Role, m: &DeployMessage) -> Result<(), FrontError> {
        let id = match m {
            DeployMessage::RegisterWorker(r) => r.id.clone(),
            _ => format!("spark-{}", self.peer),
        };
        let master = self.ctx.config.master;
        let config = ConnectionConfig::default()
            .with_versions(&[self.detector.release().version()])
            .with_ask_timeout(self.ctx.config.ask_timeout)
            .with_security(self.ctx.config.master_security.clone());
        // The master of this process takes the connection over an in-memory stream, as an
        // accepted socket: no descriptor, no loopback TCP.
        #[cfg(feature = "reference")]
        if let Some(stream) = crate::reference::master::connect_in_process(
            master,
            &format!("{} (Spark wire)", self.peer),
        ) {
            let c = Connection::connect(stream, role, id, config).await?;
            tracing::info!(
                "spark front: {} speaks to the master in the role {role} in process",
                self.peer
            );
            self.bridge = Some((c, role));
            return Ok(());
        }
        let stream = connect_tcp(
            &master.ip().to_string(),
            master.port(),
            Duration::from_secs(10),
        )
        .await?;
        let c = Connection::connect(stream, role, id, config).await?;
        tracing::info!(
            "spark front: {} speaks to the master in the role {role} over a sparkwire connection",
            self.peer
        );
        self.bridge = Some((c, role));
        Ok(())
    }

    /// Notes a Spark peer registering with its endpoint at `endpoint` in the master's book of
    /// Spark peers, for its recovery record (SPEC §15.5): its release label and, for an
    /// application, its `RegisterApplication` stream.
    #[cfg_attr(not(feature = "reference"), allow(unused_variables))]
    fn note_peer(&self, endpoint: Option<&Addr>, label: &str, registration: Option<&[u8]>) {
        #[cfg(feature = "reference")]
        if let (Some((slot, _)), Some(at)) = (&self.ctx.config.recovered, endpoint) {
            slot.with_book(|b| b.note(at, label, registration));
        }
    }

    /// Writes what the master sent (one-way, or an ask with Spark request id `request`) to the
    /// peer's endpoint.
    fn write_to_peer(
        &mut self,
        request: Option<i64>,
        mut m: DeployMessage,
    ) -> Result<(), FrontError> {
        let release = self.detector.release();
        name_front(&mut m, &self.ctx.master_ref(), &self.ctx.master_url());
        let mut original = None;
        match &m {
            DeployMessage::RegisteredApplication(r) => {
                if let Some(g) = self.app_graph.take() {
                    if let Ok(mut originals) = self.ctx.originals.lock() {
                        originals.insert(r.app_id.clone(), g);
                    }
                    self.app_id = Some(r.app_id.clone());
                }
            }
            DeployMessage::LaunchExecutor(l) => {
                original = self
                    .ctx
                    .originals
                    .lock()
                    .ok()
                    .and_then(|a| a.get(&l.app_id))
                    .or_else(|| self.ctx.recovered_registration(&l.app_id));
            }
            DeployMessage::LaunchDriver(l) => {
                original = self
                    .ctx
                    .originals
                    .lock()
                    .ok()
                    .and_then(|a| a.get(&l.driver_id));
            }
            _ => {}
        }
        let stream = message_stream(&Typed::Deploy(m), release, original.as_deref())
            .map_err(|e| FrontError::Encode(e.to_string()))?;
        let endpoint = self
            .peer_ref
            .as_ref()
            .map_or_else(|| "AppClient".to_string(), |r| r.name.clone());
        let receiver = self
            .peer_ref
            .as_ref()
            .and_then(|r| r.address.as_ref())
            .map(|a| (a.host.clone(), a.port))
            .or_else(|| self.address.clone());
        let header = RequestMessage {
            sender: Some((self.ctx.own.host.clone(), self.ctx.own.port)),
            receiver,
            endpoint,
            stream: stream.into(),
        };
        let body: Bytes = header
            .encode()
            .map_err(|e| FrontError::Encode(e.to_string()))?
            .into();
        let frame = match request {
            Some(request_id) => Frame::RpcRequest { request_id, body },
            None => Frame::OneWay { body },
        };
        self.queue(
            frame
                .encode()
                .map_err(|e| FrontError::Encode(e.to_string()))?,
        )
    }
}

/// Asks the master `m` and returns the Spark frame answering request `request_id`.
/// The graph of a `RequestSubmitDriver` (`submitted`) is kept under the driver id the master
/// gives it, for the `LaunchDriver`s of that driver.
async fn answer_frame(
    handle: &ConnectionHandle<DeployMessage>,
    m: DeployMessage,
    timeout: Duration,
    request_id: i64,
    ctx: &Ctx,
    release: &'static Release,
    submitted: Option<Arc<Graph>>,
) -> Option<Vec<u8>> {
    let version = release;
    let name = m.name();
    let stream = match handle.ask_with_timeout(m, timeout).await {
        Ok(Reply::Bool(b)) => bool_stream(b, version).map_err(|e| e.to_string()),
        Ok(Reply::Int(i)) => int_stream(i, version).map_err(|e| e.to_string()),
        Ok(Reply::Message(mut reply)) => {
            if let (DeployMessage::SubmitDriverResponse(r), Some(g)) = (&reply, submitted) {
                if let (true, Some(id)) = (r.success, &r.driver_id) {
                    if let Ok(mut originals) = ctx.originals.lock() {
                        originals.insert(id.clone(), g);
                    }
                }
            }
            name_front(&mut reply, &ctx.master_ref(), &ctx.master_url());
            message_stream(&Typed::Deploy(reply), version, None).map_err(|e| e.to_string())
        }
        Ok(other) => Err(format!("a reply of kind {}", other.tag())),
        Err(ConnectionError::Remote { error, .. }) => {
            Err(format!("{}: {}", error.class_name, error.message))
        }
        Err(e) => Err(format!("org.apache.spark.SparkException: {name}: {e}")),
    };
    let frame = match stream {
        Ok(body) => Frame::RpcResponse {
            request_id,
            body: body.into(),
        },
        Err(error) => Frame::RpcFailure { request_id, error },
    };
    frame.encode().ok()
}

/// The sparkwire role a Spark peer that sends `m` to a master plays, or `None` when a master
/// takes `m` from nobody.
pub fn role_of(m: &DeployMessage) -> Option<Role> {
    use DeployMessage as D;
    Some(match m {
        D::RegisterWorker(_)
        | D::Heartbeat(_)
        | D::WorkerLatestState(_)
        | D::ExecutorStateChanged(_)
        | D::DriverStateChanged(_)
        | D::WorkerDecommissioning(_)
        | D::WorkerSchedulerStateResponse(_) => Role::Worker,
        D::RegisterApplication(_)
        | D::UnregisterApplication(_)
        | D::MasterChangeAcknowledged(_)
        | D::RequestExecutors(_)
        | D::KillExecutors(_) => Role::AppClient,
        D::RequestSubmitDriver(_)
        | D::RequestKillDriver(_)
        | D::RequestDriverStatus(_)
        | D::RequestKillAllDrivers(_) => Role::DriverClient,
        D::RequestClearCompletedDriversAndApps(_)
        | D::RequestReadyz(_)
        | D::RequestMasterState(_)
        | D::DecommissionWorkersOnHosts(_) => Role::Ui,
        _ => return None,
    })
}

/// Makes the master's references and URLs in `m` name the front (`master`, `url`): the address
/// Spark peers reach the master at.
pub fn name_front(m: &mut DeployMessage, master: &EndpointRef, url: &str) {
    use DeployMessage as D;
    match m {
        D::RegisteredWorker(r) => {
            r.master = master.clone();
            if let Some(a) = &master.address {
                r.master_address = a.clone();
            }
        }
        D::RegisteredApplication(r) => r.master = master.clone(),
        D::MasterChanged(r) => r.master = master.clone(),
        D::SubmitDriverResponse(r) => r.master = master.clone(),
        D::KillDriverResponse(r) => r.master = master.clone(),
        D::KillAllDriversResponse(r) => r.master = master.clone(),
        D::LaunchExecutor(r) => r.master_url = url.to_string(),
        D::KillExecutor(r) => r.master_url = url.to_string(),
        D::ReconnectWorker(r) => r.master_url = url.to_string(),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::messages::deploy::{KillExecutor, RegisteredWorker};

    #[test]
    fn the_master_s_references_and_urls_name_the_front() {
        let front = EndpointRef::at(Addr::new("127.0.0.1", 7177), MASTER_ENDPOINT);
        let mut m = DeployMessage::from(RegisteredWorker::new(
            EndpointRef::at(Addr::new("127.0.0.1", 7077), MASTER_ENDPOINT),
            "http://127.0.0.1:8080".into(),
            Addr::new("127.0.0.1", 7077),
            false,
        ));
        name_front(&mut m, &front, "spark://127.0.0.1:7177");
        let DeployMessage::RegisteredWorker(r) = &m else {
            panic!("still a RegisteredWorker");
        };
        assert_eq!(r.master, front);
        assert_eq!(r.master_address, Addr::new("127.0.0.1", 7177));
        let mut k = DeployMessage::from(KillExecutor::new(
            "spark://127.0.0.1:7077".into(),
            "app-1".into(),
            0,
        ));
        name_front(&mut k, &front, "spark://127.0.0.1:7177");
        let DeployMessage::KillExecutor(l) = &k else {
            panic!("still a KillExecutor");
        };
        assert_eq!(l.master_url, "spark://127.0.0.1:7177");
    }

    #[test]
    fn each_message_a_master_takes_names_the_role_of_its_sender() {
        use crate::messages::deploy::{Heartbeat, RequestKillDriver, RequestMasterState};
        let hb = DeployMessage::from(Heartbeat::new("w".into(), EndpointRef::client("Worker")));
        assert_eq!(role_of(&hb), Some(Role::Worker));
        let kill = DeployMessage::from(RequestKillDriver::new("driver-1".into()));
        assert_eq!(role_of(&kill), Some(Role::DriverClient));
        let state = DeployMessage::from(RequestMasterState::new());
        assert_eq!(role_of(&state), Some(Role::Ui));
        let launch = DeployMessage::from(crate::messages::deploy::KillDriver::new("d".into()));
        assert_eq!(role_of(&launch), None, "a master never takes KillDriver");
    }
}
