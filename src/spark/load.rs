//! A load generator of Spark peers (`sparkwire spark load`): thousands of Spark workers and
//! applications, written with the crate's own Spark-wire writer, on one process and few threads,
//! against a master that speaks Spark's RPC (Spark's own master, or `sparkwire master
//! --spark-port`). It plays each peer as Spark's own does and checks every answer: a garbled,
//! missing or unexpected answer is an error, counted and sampled in the [`LoadReport`], never
//! waited out in silence.
//!
//! - **Workers** ask `CheckExistence(Master)` of the `endpoint-verifier` (as
//!   `rpcEnv.setupEndpointRef` does), register (`RegisterWorker`), send `WorkerLatestState` once
//!   registered, and heartbeat every `spark.worker.timeout / 4` (Spark's `HEARTBEAT_MILLIS`),
//!   spread evenly over the period. They answer `LaunchExecutor` with `ExecutorStateChanged`
//!   RUNNING (a `masterUrl` other than their master's, an unknown application or more cores than
//!   the worker has is an error), `KillExecutor` with `ExecutorStateChanged` KILLED, and
//!   `MasterChanged` with `WorkerSchedulerStateResponse`.
//! - **Applications** register (`RegisterApplication` with `spark.cores.max` set, so the master
//!   places their executors at once) and check `RegisteredApplication`, `ExecutorAdded` and
//!   `ExecutorUpdated`; once placed, some end (`UnregisterApplication`: every executor of theirs
//!   must be killed) and some lower their total and kill one executor (`RequestExecutors`,
//!   `KillExecutors`, both asks answered `true`; that executor must be killed, and no other
//!   launched). They answer `MasterChanged` with `MasterChangeAcknowledged`.
//! - **Failovers** ([`LoadConfig::failovers`]), after the steady phase: the generator announces
//!   phase `failover-K` (the caller kills or restarts the leading master then), and from the
//!   moment the first peer's connection to it closes, asks the next leader's `/json` until it is
//!   ALIVE with every worker ALIVE and every application that has not ended active and not
//!   UNKNOWN. Each peer answers the new leader's `MasterChanged` on a connection of its own to
//!   the address it names, as Spark's do; then every worker registers again on it and must be
//!   answered `RegisteredWorker(duplicate = true)` (the new leader holds it).
//! - **A UI peer** asks the state: `RequestMasterState` over Spark's wire (an `RpcFailure` is
//!   recorded as the master not answering it, not as an error) and the web UI's `/json`, whose
//!   workers and applications must be those registered.
//!
//! The master's messages to a peer arrive either on the peer's own connection (a sparkwire
//! front) or on a connection the master dials to the peer's RPC address (Spark's master): every
//! peer has an address of its own, `127.A.B.C:port` on one listener, and what arrives is routed by
//! the receiver its `RequestMessage` names.
//!
//! **Heartbeat-to-processed latency.** A heartbeat has no answer. One heartbeat in
//! [`LoadConfig::fence_every`] is followed at once, on the same connection, by the worker's
//! `RegisterWorker` again: Spark's master (and sparkwire's) answers a registration of a worker it
//! holds with `RegisteredWorker(duplicate = true)` and changes nothing. A master takes one
//! connection's messages in order, so that answer proves the heartbeat before it processed; the
//! time from the heartbeat's write to that answer is the latency reported (an upper bound: it
//! includes the fence's own processing and the way back).

use std::collections::{HashMap, HashSet, VecDeque};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use serde::Serialize;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, oneshot, watch, Semaphore};

use super::release::{Release, PROBE_ENDPOINT};
use super::{
    check_existence_stream, classify, message_stream, parse_stream, reply_value, Classified, Frame,
    FrameDecoder, ReplyValue, RequestMessage, Typed, MASTER_ENDPOINT, VERIFIER, WORKER_ENDPOINT,
};
use crate::messages::deploy::{
    ExecutorStateChanged, Heartbeat, KillExecutors, MasterChangeAcknowledged, RegisterApplication,
    RegisterWorker, RequestExecutors, RequestMasterState, UnregisterApplication,
    WorkerExecutorStateResponse, WorkerLatestState, WorkerSchedulerStateResponse,
};
use crate::messages::{Addr, DeployMessage, EndpointRef, ExecutorState, Family, Version};
use crate::messages::{
    ApplicationDescription, Command, ExecutorDescription, ProfileExecutors, ResourceProfile,
};

/// The endpoint name of a Spark application's client.
const APP_ENDPOINT: &str = "AppClient";
/// Error messages kept in the report (the count has them all).
const MAX_ERROR_SAMPLES: usize = 40;

/// Told the name of each phase of a load run as it begins.
pub type OnPhase = Arc<dyn Fn(&str) + Send + Sync>;

/// What to generate and against which master.
#[derive(Clone)]
pub struct LoadConfig {
    /// The master's Spark RPC address.
    pub master: SocketAddr,
    /// The master's web UI (for `/json`); `None`: no `/json` asked.
    pub web_ui: Option<SocketAddr>,
    /// The Spark release every peer speaks (the master's).
    pub release: &'static Release,
    /// Workers.
    pub workers: usize,
    /// Cores of each worker.
    pub worker_cores: i32,
    /// Memory of each worker, MiB.
    pub worker_memory: i32,
    /// Applications.
    pub apps: usize,
    /// `spark.cores.max` of each application.
    pub app_cores: i32,
    /// `spark.executor.cores`.
    pub executor_cores: i32,
    /// `spark.executor.memory`, MiB.
    pub executor_memory: i32,
    /// `spark.worker.timeout` of the master: workers heartbeat every quarter of it.
    pub worker_timeout: Duration,
    /// How long the workers heartbeat once every application is placed (the steady phase).
    pub steady: Duration,
    /// One heartbeat in this many, per worker, is fenced to time its processing (0: none).
    pub fence_every: u32,
    /// Every application whose index is a multiple of this ends (`UnregisterApplication`; 0:
    /// none).
    pub end_every: usize,
    /// Every application whose index is 1 modulo this (and does not end) kills one executor (0:
    /// none).
    pub kill_every: usize,
    /// State asks (`RequestMasterState`, and `/json` each) during the steady phase.
    pub state_asks: usize,
    /// How long an expected answer may take before it counts as missing.
    pub answer_timeout: Duration,
    /// The port of every peer's RPC address (0: any free one).
    pub listen_port: u16,
    /// Peers connecting (and checking the master's existence) at once.
    pub connect_concurrency: usize,
    /// Told each phase as it begins (`register`, `place`, `act`, `steady`, `state`, `done`,
    /// then `failover-0`, `failover-1`, …).
    pub on_phase: Option<OnPhase>,
    /// After the steady phase, one failover each: the web UI of the master that must lead once
    /// the leading one is lost (the caller kills or restarts it when told phase `failover-K`).
    pub failovers: Vec<SocketAddr>,
    /// How long a failover may take, from the lost connection to the new leader's complete
    /// `/json`, before it counts as failed.
    pub failover_timeout: Duration,
}

impl LoadConfig {
    /// `workers` workers of 4 cores and 8 GiB and `apps` applications of 2 cores (executors of 1
    /// core and 512 MiB) against the master at `master`, in `release`, with Spark's default
    /// `spark.worker.timeout` (60 s), 10 s of steady heartbeating, one heartbeat in 10 fenced,
    /// one application in 4 ending and one in 4 killing an executor, 3 state asks and answers
    /// awaited 60 s.
    pub fn new(master: SocketAddr, release: &'static Release, workers: usize, apps: usize) -> Self {
        LoadConfig {
            master,
            web_ui: None,
            release,
            workers,
            worker_cores: 4,
            worker_memory: 8192,
            apps,
            app_cores: 2,
            executor_cores: 1,
            executor_memory: 512,
            worker_timeout: Duration::from_secs(60),
            steady: Duration::from_secs(10),
            fence_every: 10,
            end_every: 4,
            kill_every: 4,
            state_asks: 3,
            answer_timeout: Duration::from_secs(60),
            listen_port: 0,
            connect_concurrency: 256,
            on_phase: None,
            failovers: Vec::new(),
            failover_timeout: Duration::from_secs(300),
        }
    }

    /// Executors each application asks for: `spark.cores.max / spark.executor.cores`.
    pub fn executors_per_app(&self) -> i32 {
        self.app_cores / self.executor_cores.max(1)
    }

    /// Spark's worker heartbeat period for this `spark.worker.timeout`.
    pub fn heartbeat_period(&self) -> Duration {
        (self.worker_timeout / 4).max(Duration::from_millis(10))
    }
}

/// Why a load run could not be made at all (what went wrong during one is in the report).
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// The configuration asks for what cannot be measured.
    #[error("{0}")]
    Config(String),
    /// The peers' listener could not be opened.
    #[error("listen: {0}")]
    Io(#[from] std::io::Error),
}

/// Percentiles of a set of durations, in milliseconds.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Percentiles {
    /// How many were measured.
    pub samples: usize,
    /// Median.
    pub p50: Option<f64>,
    /// 99th percentile.
    pub p99: Option<f64>,
    /// Largest.
    pub max: Option<f64>,
}

impl Percentiles {
    fn of(mut v: Vec<f64>) -> Self {
        v.sort_by(f64::total_cmp);
        let at = |p: f64| {
            (!v.is_empty()).then(|| v[((p * v.len() as f64).ceil() as usize).clamp(1, v.len()) - 1])
        };
        Percentiles {
            samples: v.len(),
            p50: at(0.5),
            p99: at(0.99),
            max: v.last().copied(),
        }
    }
}

/// The figures of one state ask (`RequestMasterState` or `/json`).
#[derive(Debug, Clone, Default, Serialize)]
pub struct StateFigures {
    /// Whether the master answered it (a `RequestMasterState` answered with a failure: no).
    pub answered: bool,
    /// Latency of each ask, ms.
    pub latency_ms: Percentiles,
    /// Size of the last answer, bytes.
    pub bytes: usize,
    /// The failure the master answered with, when it did not answer the state.
    pub failure: Option<String>,
}

/// One failover, as the peers and the new leader's `/json` saw it.
#[derive(Debug, Clone, Default, Serialize)]
pub struct FailoverFigures {
    /// The new leader's web UI.
    pub web_ui: String,
    /// Seconds from phase `failover-K` to the first peer's connection closing.
    pub lost_after_secs: Option<f64>,
    /// Seconds from the lost connection to the new leader's `/json` ALIVE with every worker ALIVE
    /// and every application active (not UNKNOWN).
    pub recovered_secs: Option<f64>,
    /// Seconds from the lost connection to the last peer answering the new leader's
    /// `MasterChanged`.
    pub answered_secs: Option<f64>,
    /// Workers that answered a `MasterChanged`.
    pub workers_changed: usize,
    /// Applications that answered a `MasterChanged`.
    pub apps_changed: usize,
    /// Whether every worker, registering again on the new leader afterwards, was answered
    /// `RegisteredWorker(duplicate = true)`.
    pub workers_confirmed: bool,
    /// Why it did not complete, if it did not.
    pub failure: Option<String>,
}

/// What a load run measured.
#[derive(Debug, Clone, Default, Serialize)]
pub struct LoadReport {
    /// The release spoken.
    pub release: String,
    /// The master's Spark RPC address.
    pub master: String,
    /// Workers generated.
    pub workers: usize,
    /// Applications generated.
    pub apps: usize,
    /// The heartbeat period, ms (`spark.worker.timeout / 4`).
    pub heartbeat_period_ms: u64,
    /// Workers the master registered.
    pub workers_registered: usize,
    /// From the first worker's connect to the last `RegisteredWorker`, all at once, s.
    pub registration_secs: Option<f64>,
    /// Heartbeats sent.
    pub heartbeats: u64,
    /// Heartbeat-to-processed latency (see the module's doc), over the steady phase.
    pub heartbeat_ms: Percentiles,
    /// Applications the master registered.
    pub apps_registered: usize,
    /// Executors each application asked for.
    pub executors_per_app: i32,
    /// `LaunchExecutor`s the workers received.
    pub executors_launched: u64,
    /// From an application's `RegisterApplication` to its last `LaunchExecutor` at a worker.
    pub app_to_last_launch_ms: Percentiles,
    /// From the first `RegisterApplication` to every application placed, s.
    pub placement_secs: Option<f64>,
    /// `KillExecutor`s the workers received.
    pub executors_killed: u64,
    /// Applications that ended (`UnregisterApplication`).
    pub apps_ended: usize,
    /// Applications that killed an executor.
    pub apps_killing: usize,
    /// Length of the steady phase, s.
    pub steady_secs: f64,
    /// The web UI's `/json`.
    pub json: StateFigures,
    /// `RequestMasterState` over Spark's wire.
    pub state_ask: StateFigures,
    /// Wrong, missing or unexpected answers.
    pub errors: u64,
    /// The first of them.
    pub error_samples: Vec<String>,
    /// The failovers asked for ([`LoadConfig::failovers`]), in order.
    pub failovers: Vec<FailoverFigures>,
}

/// A peer of the run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Peer {
    Worker(usize),
    App(usize),
}

/// An answer to one of a peer's asks.
type Answer = Result<Bytes, String>;

/// One connection to the master: its writer and the asks awaiting answers.
#[derive(Clone)]
struct Conn {
    tx: mpsc::UnboundedSender<Vec<u8>>,
    pending: Arc<Mutex<HashMap<i64, oneshot::Sender<Answer>>>>,
    next: Arc<AtomicI64>,
}

struct WorkerState {
    id: String,
    addr: Addr,
    conn: Option<Conn>,
    registered: bool,
    /// Heartbeats fenced and not answered yet: when each heartbeat was written.
    fences: VecDeque<Instant>,
    /// Executors running here: (application, executor) → cores, memory.
    executors: HashMap<(String, i32), (i32, i32)>,
    master_url: String,
    master_ref: EndpointRef,
    /// Answered the current failover's `MasterChanged`.
    changed: bool,
}

struct AppState {
    addr: Addr,
    conn: Option<Conn>,
    id: Option<String>,
    sent: Option<Instant>,
    launches: i32,
    last_launch: Option<Instant>,
    /// Executors launched at workers and not killed.
    live: HashSet<i32>,
    added: HashSet<i32>,
    running: HashSet<i32>,
    ended: bool,
    killed: Option<i32>,
    master_ref: EndpointRef,
    /// Answered the current failover's `MasterChanged`.
    changed: bool,
}

impl AppState {
    fn launched(&mut self, at: Instant, exec: i32) {
        self.launches += 1;
        self.last_launch = Some(self.last_launch.map_or(at, |l| l.max(at)));
        self.live.insert(exec);
    }
}

struct State {
    workers: Vec<WorkerState>,
    /// `LaunchExecutor`s of applications whose `RegisteredApplication` has not come yet.
    early: HashMap<String, Vec<(Instant, i32)>>,
    apps: Vec<AppState>,
    by_addr: HashMap<(String, i32), Peer>,
    app_of: HashMap<String, usize>,
    errors: u64,
    samples: Vec<String>,
    first_connect: Option<Instant>,
    last_registered: Option<Instant>,
    registered: usize,
    heartbeats: u64,
    measuring: bool,
    latencies: Vec<f64>,
    launched: u64,
    killed: u64,
    /// A failover is under way: a connection the master closes is expected, not an error.
    expect_loss: bool,
    /// When the first peer's connection closed during a failover.
    lost_at: Option<Instant>,
    /// When the last peer answered the failover's `MasterChanged`.
    last_changed: Option<Instant>,
}

impl State {
    fn error(&mut self, what: String) {
        self.errors += 1;
        if self.samples.len() < MAX_ERROR_SAMPLES {
            tracing::warn!("spark load: {what}");
            self.samples.push(what);
        }
    }
}

struct Shared {
    config: LoadConfig,
    state: Mutex<State>,
    /// Turns true when the run ends.
    stop: watch::Receiver<bool>,
}

impl Shared {
    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn error(&self, what: String) {
        self.lock().error(what);
    }

    fn phase(&self, name: &str) {
        tracing::info!("spark load: phase {name}");
        if let Some(f) = &self.config.on_phase {
            f(name);
        }
    }

    fn stream(&self, m: DeployMessage) -> Option<Vec<u8>> {
        match message_stream(&Typed::Deploy(m), self.config.release, None) {
            Ok(s) => Some(s),
            Err(e) => {
                self.error(format!(
                    "cannot write a message in Spark {}: {e}",
                    self.config.release
                ));
                None
            }
        }
    }
}

/// The RPC address of peer number `k` (workers first, then applications): `127.A.B.C`, never a
/// network or broadcast-looking address.
fn peer_host(k: usize) -> String {
    format!(
        "127.{}.{}.{}",
        2 + k / 62_500,
        (k / 250) % 250 + 1,
        k % 250 + 1
    )
}

fn frame_bytes(request_id: Option<i64>, header: RequestMessage) -> Option<Vec<u8>> {
    let body: Bytes = header.encode().ok()?.into();
    let frame = match request_id {
        Some(request_id) => Frame::RpcRequest { request_id, body },
        None => Frame::OneWay { body },
    };
    frame.encode().ok()
}

impl Conn {
    fn send(&self, from: &Addr, to: &SocketAddr, endpoint: &str, stream: Vec<u8>) -> bool {
        let header = RequestMessage {
            sender: Some((from.host.clone(), from.port)),
            receiver: Some((to.ip().to_string(), i32::from(to.port()))),
            endpoint: endpoint.into(),
            stream: stream.into(),
        };
        frame_bytes(None, header).is_some_and(|b| self.tx.send(b).is_ok())
    }

    fn ask(
        &self,
        from: Option<&Addr>,
        to: &SocketAddr,
        endpoint: &str,
        stream: Vec<u8>,
    ) -> oneshot::Receiver<Answer> {
        let (tx, rx) = oneshot::channel();
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let header = RequestMessage {
            sender: from.map(|a| (a.host.clone(), a.port)),
            receiver: Some((to.ip().to_string(), i32::from(to.port()))),
            endpoint: endpoint.into(),
            stream: stream.into(),
        };
        if let Some(bytes) = frame_bytes(Some(id), header) {
            if let Ok(mut p) = self.pending.lock() {
                p.insert(id, tx);
            }
            let _ = self.tx.send(bytes);
        }
        rx
    }
}

async fn write_loop(mut wr: OwnedWriteHalf, mut rx: mpsc::UnboundedReceiver<Vec<u8>>) {
    while let Some(bytes) = rx.recv().await {
        if wr.write_all(&bytes).await.is_err() {
            break;
        }
    }
    let _ = wr.shutdown().await;
}

/// Reads one connection's frames: answers to asks go to their askers, messages to the peer
/// their receiver names (else `default`, the peer whose own connection it is).
async fn read_loop(
    shared: Arc<Shared>,
    mut rd: OwnedReadHalf,
    conn: Conn,
    default: Option<Peer>,
    stop: watch::Receiver<bool>,
) {
    let mut decoder = FrameDecoder::default();
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = match rd.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        decoder.push(&buf[..n]);
        while let Some(item) = decoder.next_item() {
            match item.frame {
                Ok(frame) => frame_in(&shared, &conn, default, frame),
                Err(e) => {
                    shared.error(format!("a broken frame from the master: {e}"));
                    return;
                }
            }
        }
    }
    if let Some(Peer::Worker(i)) | Some(Peer::App(i)) = default {
        let expected = {
            let mut st = shared.lock();
            if st.expect_loss {
                st.lost_at.get_or_insert_with(Instant::now);
            }
            st.expect_loss
        };
        if !*stop.borrow() && !expected {
            shared.error(format!(
                "the master closed the connection of {} {i}",
                if matches!(default, Some(Peer::Worker(_))) {
                    "worker"
                } else {
                    "application"
                }
            ));
        }
    }
    if let Ok(mut p) = conn.pending.lock() {
        p.clear();
    }
}

fn frame_in(shared: &Arc<Shared>, conn: &Conn, default: Option<Peer>, frame: Frame) {
    match frame {
        Frame::RpcResponse { request_id, body } => answer_in(shared, conn, request_id, Ok(body)),
        Frame::RpcFailure { request_id, error } => answer_in(shared, conn, request_id, Err(error)),
        Frame::OneWay { body } => {
            let Some(header) = RequestMessage::parse(&body) else {
                shared.error("a one-way message whose header does not read".into());
                return;
            };
            let peer = header
                .receiver
                .as_ref()
                .and_then(|r| shared.lock().by_addr.get(r).copied())
                .or(default);
            let Some(peer) = peer else {
                shared.error(format!(
                    "a message to {:?}, no peer of this run",
                    header.receiver
                ));
                return;
            };
            let m = match parse_stream(&header.stream).map(|g| classify(g.root_node())) {
                Ok(Classified::Message(Typed::Deploy(m))) => m,
                Ok(other) => {
                    shared.error(format!(
                        "{peer:?}: a message that is no deploy message: {other:?}"
                    ));
                    return;
                }
                Err(e) => {
                    shared.error(format!("{peer:?}: a Java stream that does not read: {e}"));
                    return;
                }
            };
            let expected = match peer {
                Peer::Worker(_) => WORKER_ENDPOINT,
                Peer::App(_) => APP_ENDPOINT,
            };
            if header.endpoint != expected {
                shared.error(format!(
                    "{peer:?}: {} to endpoint {}, not {expected}",
                    m.name(),
                    header.endpoint
                ));
            }
            match peer {
                Peer::Worker(i) => worker_in(shared, i, m),
                Peer::App(j) => app_in(shared, j, m),
            }
        }
        Frame::RpcRequest { request_id, body } => {
            // The sparkwire front's probes of a peer's release (SPEC §15.3) are answered as
            // Spark's RPC answers an ask it cannot read or route.
            let header = RequestMessage::parse(&body);
            let error = match &header {
                Some(h) if h.endpoint == PROBE_ENDPOINT => parse_stream(&h.stream)
                    .ok()
                    .and_then(|g| shared.config.release.read_failure(&g))
                    .unwrap_or_else(|| {
                        format!("org.apache.spark.SparkException: Could not find {PROBE_ENDPOINT}.")
                    }),
                other => {
                    shared.error(format!(
                        "an ask of the master's to endpoint {:?}, which no Spark peer serves",
                        other.as_ref().map(|h| h.endpoint.clone())
                    ));
                    "org.apache.spark.SparkException: Could not find the endpoint.".into()
                }
            };
            if let Ok(b) = (Frame::RpcFailure { request_id, error }).encode() {
                let _ = conn.tx.send(b);
            }
        }
        other => shared.error(format!(
            "a {} frame, which no master sends",
            other.kind().as_str()
        )),
    }
}

fn answer_in(shared: &Arc<Shared>, conn: &Conn, request_id: i64, answer: Answer) {
    let waiter = conn
        .pending
        .lock()
        .ok()
        .and_then(|mut p| p.remove(&request_id));
    match waiter {
        Some(w) => {
            let _ = w.send(answer);
        }
        None => shared.error(format!("an answer to request {request_id}, never asked")),
    }
}

/// What the master sent worker `i`.
fn worker_in(shared: &Arc<Shared>, i: usize, m: DeployMessage) {
    let now = Instant::now();
    let mut replies: Vec<DeployMessage> = Vec::new();
    let mut reregister = false;
    let mut reconnect = false;
    let (conn, addr, master, target) = {
        let mut st = shared.lock();
        let st = &mut *st;
        let mut errs: Vec<String> = Vec::new();
        let w = &mut st.workers[i];
        match m {
            DeployMessage::RegisteredWorker(r) if !r.duplicate && !w.registered => {
                w.registered = true;
                st.registered += 1;
                st.last_registered = Some(now);
                replies.push(DeployMessage::from(WorkerLatestState::new(
                    w.id.clone(),
                    w.executors
                        .iter()
                        .map(|((app, exec), (cores, mem))| {
                            ExecutorDescription::new(
                                app.clone(),
                                *exec,
                                0,
                                *cores,
                                *mem,
                                ExecutorState::Running,
                            )
                        })
                        .collect(),
                    Vec::new(),
                )));
            }
            DeployMessage::RegisteredWorker(r) if r.duplicate => match w.fences.pop_front() {
                Some(sent) => {
                    if st.measuring {
                        st.latencies
                            .push(now.duration_since(sent).as_secs_f64() * 1e3);
                    }
                }
                None => errs.push(format!(
                    "worker {i}: RegisteredWorker(duplicate) never asked for"
                )),
            },
            DeployMessage::LaunchExecutor(l) => {
                let key = (l.app_id.clone(), l.exec_id);
                let twice = w.executors.contains_key(&key);
                let used: i32 = w.executors.values().map(|(c, _)| c).sum();
                if l.master_url != w.master_url {
                    errs.push(format!(
                        "worker {i}: LaunchExecutor from {}, not its master {} (Spark's worker ignores it)",
                        l.master_url, w.master_url
                    ));
                } else if used + l.cores > shared.config.worker_cores {
                    errs.push(format!(
                        "worker {i}: LaunchExecutor of {} cores with {used} of {} in use",
                        l.cores, shared.config.worker_cores
                    ));
                } else if twice {
                    errs.push(format!("worker {i}: LaunchExecutor {key:?} twice"));
                } else if l.cores != shared.config.executor_cores {
                    errs.push(format!(
                        "worker {i}: LaunchExecutor of {} cores, the application asked {}",
                        l.cores, shared.config.executor_cores
                    ));
                } else {
                    w.executors.insert(key, (l.cores, l.memory));
                    st.launched += 1;
                    match st.app_of.get(&l.app_id).copied() {
                        // The master's RegisteredApplication may come after the worker's
                        // LaunchExecutor (another connection): counted when it does.
                        None => st
                            .early
                            .entry(l.app_id.clone())
                            .or_default()
                            .push((now, l.exec_id)),
                        Some(j) => st.apps[j].launched(now, l.exec_id),
                    }
                    replies.push(DeployMessage::from(ExecutorStateChanged::new(
                        l.app_id,
                        l.exec_id,
                        ExecutorState::Running,
                    )));
                }
            }
            DeployMessage::KillExecutor(k) => {
                let key = (k.app_id.clone(), k.exec_id);
                if w.executors.remove(&key).is_none() {
                    errs.push(format!(
                        "worker {i}: KillExecutor of {key:?}, not running here"
                    ));
                } else {
                    st.killed += 1;
                    if let Some(j) = st.app_of.get(&k.app_id).copied() {
                        st.apps[j].live.remove(&k.exec_id);
                    }
                    replies.push(DeployMessage::from(
                        ExecutorStateChanged::new(k.app_id, k.exec_id, ExecutorState::Killed)
                            .with_exit_status(Some(143)),
                    ));
                }
            }
            DeployMessage::ApplicationFinished(f) => {
                // Spark's master tells every worker: only an unknown id is wrong.
                if !st.app_of.contains_key(&f.id) {
                    errs.push(format!(
                        "worker {i}: ApplicationFinished of {}, unknown",
                        f.id
                    ));
                }
            }
            DeployMessage::MasterChanged(c) => {
                w.master_ref = c.master.clone();
                if let Some(a) = &c.master.address {
                    w.master_url = format!("spark://{}:{}", a.host, a.port);
                }
                // Fenced heartbeats the lost master never answered; the answer goes to the new
                // one, on a connection of the worker's own to it.
                w.fences.clear();
                w.conn = None;
                reconnect = true;
                if !w.changed {
                    w.changed = true;
                    st.last_changed = Some(now);
                }
                replies.push(DeployMessage::from(WorkerSchedulerStateResponse::new(
                    w.id.clone(),
                    w.executors
                        .iter()
                        .map(|((app, exec), (cores, mem))| {
                            WorkerExecutorStateResponse::new(
                                ExecutorDescription::new(
                                    app.clone(),
                                    *exec,
                                    0,
                                    *cores,
                                    *mem,
                                    ExecutorState::Running,
                                ),
                                Default::default(),
                            )
                        })
                        .collect(),
                    Vec::new(),
                )));
            }
            DeployMessage::ReconnectWorker(r) => {
                // The master had timed the worker out: Spark's worker registers again.
                errs.push(format!(
                    "worker {i}: ReconnectWorker({}): the master had dropped it",
                    r.master_url
                ));
                if w.registered {
                    w.registered = false;
                    st.registered -= 1;
                }
                reregister = true;
            }
            other => errs.push(format!("worker {i}: unexpected {other:?}")),
        }
        for e in errs {
            st.error(e);
        }
        let w = &st.workers[i];
        if reregister {
            replies.push(DeployMessage::from(register_worker(
                &shared.config,
                &w.id,
                &w.addr,
            )));
        }
        (
            w.conn.clone(),
            w.addr.clone(),
            w.master_ref.clone(),
            shared.config.master,
        )
    };
    if reconnect {
        tokio::spawn(answer_new_master(
            Arc::clone(shared),
            Peer::Worker(i),
            addr,
            master,
            replies,
        ));
        return;
    }
    send_all(shared, conn, &addr, &master, target, replies);
}

/// Opens peer `peer`'s connection to the new leader `master` (named by its `MasterChanged`) and
/// sends `replies` on it, as Spark's peers answer a new master on their own connection to it.
async fn answer_new_master(
    shared: Arc<Shared>,
    peer: Peer,
    addr: Addr,
    master: EndpointRef,
    replies: Vec<DeployMessage>,
) {
    let Some(target) = master
        .address
        .as_ref()
        .and_then(|a| format!("{}:{}", a.host, a.port).parse::<SocketAddr>().ok())
    else {
        shared.error(format!(
            "{peer:?}: a MasterChanged naming {master:?}, no address"
        ));
        return;
    };
    let stop = shared.stop.clone();
    let conn = match open(&shared, target, Some(peer), &stop).await {
        Ok(c) => c,
        Err(e) => {
            shared.error(format!("{peer:?}: connect to the new master {target}: {e}"));
            return;
        }
    };
    {
        let mut st = shared.lock();
        match peer {
            Peer::Worker(i) => st.workers[i].conn = Some(conn.clone()),
            Peer::App(j) => st.apps[j].conn = Some(conn.clone()),
        }
    }
    send_all(&shared, Some(conn), &addr, &master, target, replies);
}

fn send_all(
    shared: &Arc<Shared>,
    conn: Option<Conn>,
    from: &Addr,
    master: &EndpointRef,
    fallback: SocketAddr,
    replies: Vec<DeployMessage>,
) {
    let Some(conn) = conn else {
        return;
    };
    let to = master
        .address
        .as_ref()
        .and_then(|a| format!("{}:{}", a.host, a.port).parse().ok())
        .unwrap_or(fallback);
    for m in replies {
        let name = m.name();
        // ExecutorStateChanged is an ask answered `true` from protocol version 2 on (Spark's
        // worker asks it since SPARK-34245), a one-way message before.
        let ask = matches!(m, DeployMessage::ExecutorStateChanged(_))
            && shared.config.release.version() != Version::V1;
        let Some(s) = shared.stream(m) else {
            continue;
        };
        if ask {
            let rx = conn.ask(Some(from), &to, MASTER_ENDPOINT, s);
            let shared = Arc::clone(shared);
            let who = from.to_string();
            tokio::spawn(async move {
                let value = match tokio::time::timeout(shared.config.answer_timeout, rx).await {
                    Ok(Ok(Ok(body))) => parse_stream(&body)
                        .map_err(|e| e.to_string())
                        .and_then(|g| reply_value(g.root_node()).map_err(|e| e.to_string())),
                    Ok(Ok(Err(e))) => Err(format!("failed: {e}")),
                    Ok(Err(_)) => Err("the connection closed".into()),
                    Err(_) => Err("no answer".into()),
                };
                if !matches!(value, Ok(ReplyValue::Bool(true))) {
                    shared.error(format!("worker {who}: {name} answered {value:?}, not true"));
                }
            });
        } else if !conn.send(from, &to, MASTER_ENDPOINT, s) {
            shared.error(format!("{name} not written: the connection is closed"));
        }
    }
}

/// What the master sent application `j`.
fn app_in(shared: &Arc<Shared>, j: usize, m: DeployMessage) {
    let mut replies = Vec::new();
    let mut reconnect = false;
    let (conn, addr, master) = {
        let mut st = shared.lock();
        let st = &mut *st;
        let mut errs: Vec<String> = Vec::new();
        let a = &mut st.apps[j];
        match m {
            DeployMessage::RegisteredApplication(r) if a.id.is_none() => {
                a.id = Some(r.app_id.clone());
                a.master_ref = r.master.clone();
                for (at, exec) in st.early.remove(&r.app_id).unwrap_or_default() {
                    st.apps[j].launched(at, exec);
                }
                st.app_of.insert(r.app_id, j);
            }
            DeployMessage::ExecutorAdded(e) => {
                if e.cores != shared.config.executor_cores || !a.added.insert(e.id) {
                    errs.push(format!("application {j}: ExecutorAdded {e:?} unexpected"));
                }
            }
            DeployMessage::ExecutorUpdated(u) => {
                if !a.added.contains(&u.id) {
                    errs.push(format!(
                        "application {j}: ExecutorUpdated of {}, never added",
                        u.id
                    ));
                } else if u.state == ExecutorState::Running {
                    a.running.insert(u.id);
                } else if !(u.state == ExecutorState::Killed && (a.ended || a.killed == Some(u.id)))
                {
                    errs.push(format!("application {j}: executor {} {:?}", u.id, u.state));
                }
            }
            DeployMessage::MasterChanged(c) => {
                a.master_ref = c.master.clone();
                a.conn = None;
                reconnect = true;
                if !a.changed {
                    a.changed = true;
                    st.last_changed = Some(Instant::now());
                }
                if let Some(id) = &a.id {
                    replies.push(DeployMessage::from(MasterChangeAcknowledged::new(
                        id.clone(),
                    )));
                }
            }
            DeployMessage::ApplicationRemoved(r) if !a.ended => {
                errs.push(format!("application {j}: removed: {}", r.message));
            }
            DeployMessage::ApplicationRemoved(_) => {}
            other => errs.push(format!("application {j}: unexpected {other:?}")),
        }
        for e in errs {
            st.error(e);
        }
        let a = &st.apps[j];
        (a.conn.clone(), a.addr.clone(), a.master_ref.clone())
    };
    if reconnect {
        tokio::spawn(answer_new_master(
            Arc::clone(shared),
            Peer::App(j),
            addr,
            master,
            replies,
        ));
        return;
    }
    send_all(shared, conn, &addr, &master, shared.config.master, replies);
}

/// Opens a connection to the master at `target` for `peer` (`None`: the UI peer).
async fn open(
    shared: &Arc<Shared>,
    target: SocketAddr,
    peer: Option<Peer>,
    stop: &watch::Receiver<bool>,
) -> std::io::Result<Conn> {
    let stream = TcpStream::connect(target).await?;
    let _ = stream.set_nodelay(true);
    let (rd, wr) = stream.into_split();
    let (tx, rx) = mpsc::unbounded_channel();
    let conn = Conn {
        tx,
        pending: Arc::new(Mutex::new(HashMap::new())),
        next: Arc::new(AtomicI64::new(1)),
    };
    tokio::spawn(write_loop(wr, rx));
    tokio::spawn(read_loop(
        Arc::clone(shared),
        rd,
        conn.clone(),
        peer,
        stop.clone(),
    ));
    Ok(conn)
}

/// Asks `CheckExistence(Master)` of the master's `endpoint-verifier`, as Spark's
/// `setupEndpointRef` does before a peer speaks to the master.
async fn check_master(shared: &Arc<Shared>, conn: &Conn, from: Option<&Addr>, who: &str) -> bool {
    let Ok(stream) = check_existence_stream(MASTER_ENDPOINT, shared.config.release) else {
        shared.error("cannot write CheckExistence".into());
        return false;
    };
    let rx = conn.ask(from, &shared.config.master, VERIFIER, stream);
    match tokio::time::timeout(shared.config.answer_timeout, rx).await {
        Ok(Ok(Ok(body))) => match parse_stream(&body).map(|g| reply_value(g.root_node())) {
            Ok(Ok(ReplyValue::Bool(true))) => true,
            other => {
                shared.error(format!("{who}: CheckExistence(Master) answered {other:?}"));
                false
            }
        },
        Ok(Ok(Err(e))) => {
            shared.error(format!("{who}: CheckExistence(Master) failed: {e}"));
            false
        }
        Ok(Err(_)) => {
            shared.error(format!(
                "{who}: the connection closed before CheckExistence's answer"
            ));
            false
        }
        Err(_) => {
            shared.error(format!("{who}: no answer to CheckExistence(Master)"));
            false
        }
    }
}

/// An ask whose answer must be `Boolean true`.
async fn ask_true(shared: &Arc<Shared>, conn: &Conn, from: &Addr, m: DeployMessage, who: &str) {
    let name = m.name();
    let Some(stream) = shared.stream(m) else {
        return;
    };
    let rx = conn.ask(Some(from), &shared.config.master, MASTER_ENDPOINT, stream);
    let answer = tokio::time::timeout(shared.config.answer_timeout, rx).await;
    let value = match answer {
        Ok(Ok(Ok(body))) => parse_stream(&body)
            .map_err(|e| e.to_string())
            .and_then(|g| reply_value(g.root_node()).map_err(|e| e.to_string())),
        Ok(Ok(Err(e))) => Err(format!("failed: {e}")),
        Ok(Err(_)) => Err("the connection closed".into()),
        Err(_) => Err("no answer".into()),
    };
    if !matches!(value, Ok(ReplyValue::Bool(true))) {
        shared.error(format!("{who}: {name} answered {value:?}, not true"));
    }
}

/// Worker `id`'s registration, as Spark's worker writes it.
fn register_worker(config: &LoadConfig, id: &str, addr: &Addr) -> RegisterWorker {
    register_worker_to(config, id, addr, config.master)
}

/// Worker `id`'s registration with the master at `to`.
fn register_worker_to(
    config: &LoadConfig,
    id: &str,
    addr: &Addr,
    to: SocketAddr,
) -> RegisterWorker {
    let master = Addr::new(to.ip().to_string(), i32::from(to.port()));
    RegisterWorker::new(
        id.to_string(),
        addr.host.clone(),
        addr.port,
        EndpointRef::at(addr.clone(), WORKER_ENDPOINT),
        config.worker_cores,
        config.worker_memory,
        format!("http://{}:8081", addr.host),
        master,
        Default::default(),
    )
}

async fn run_worker(
    shared: Arc<Shared>,
    i: usize,
    gate: Arc<Semaphore>,
    mut stop: watch::Receiver<bool>,
) {
    let (addr, id) = {
        let st = shared.lock();
        (st.workers[i].addr.clone(), st.workers[i].id.clone())
    };
    let config = &shared.config;
    let conn = {
        let _permit = gate.acquire().await;
        {
            let mut st = shared.lock();
            st.first_connect.get_or_insert_with(Instant::now);
        }
        let conn = match open(&shared, shared.config.master, Some(Peer::Worker(i)), &stop).await {
            Ok(c) => c,
            Err(e) => {
                shared.error(format!("worker {i}: connect: {e}"));
                return;
            }
        };
        if !check_master(&shared, &conn, Some(&addr), &format!("worker {i}")).await {
            return;
        }
        conn
    };
    shared.lock().workers[i].conn = Some(conn.clone());
    let worker_ref = EndpointRef::at(addr.clone(), WORKER_ENDPOINT);
    let register = register_worker(config, &id, &addr);
    let Some(register_stream) = shared.stream(DeployMessage::from(register)) else {
        return;
    };
    conn.send(
        &addr,
        &config.master,
        MASTER_ENDPOINT,
        register_stream.clone(),
    );
    // Heartbeats, spread evenly over the period, once registered.
    let period = config.heartbeat_period();
    let offset = period.mul_f64(i as f64 / config.workers.max(1) as f64);
    let mut next = tokio::time::Instant::now() + offset;
    let Some(beat) = shared.stream(DeployMessage::from(Heartbeat::new(id, worker_ref))) else {
        return;
    };
    let mut n: u64 = 0;
    loop {
        tokio::select! {
            _ = tokio::time::sleep_until(next) => {}
            _ = stop.changed() => return,
        }
        next += period;
        if *stop.borrow() {
            return;
        }
        let (registered, master, current) = {
            let st = shared.lock();
            let w = &st.workers[i];
            (w.registered, w.master_ref.clone(), w.conn.clone())
        };
        // After a failover, the connection to the new leader (none while it opens).
        let (true, Some(conn)) = (registered, current) else {
            continue;
        };
        let to = master
            .address
            .as_ref()
            .and_then(|a| format!("{}:{}", a.host, a.port).parse().ok())
            .unwrap_or(config.master);
        let sent = Instant::now();
        conn.send(&addr, &to, MASTER_ENDPOINT, beat.clone());
        n += 1;
        let fenced = config.fence_every > 0 && (n + i as u64) % u64::from(config.fence_every) == 0;
        {
            let mut st = shared.lock();
            st.heartbeats += 1;
            if fenced {
                st.workers[i].fences.push_back(sent);
            }
        }
        if fenced {
            conn.send(&addr, &to, MASTER_ENDPOINT, register_stream.clone());
        }
    }
}

fn app_description(config: &LoadConfig, j: usize, addr: &Addr) -> ApplicationDescription {
    let driver_url = format!("spark://CoarseGrainedScheduler@{}:{}", addr.host, addr.port);
    let arguments = [
        "--driver-url",
        &driver_url,
        "--executor-id",
        "{{EXECUTOR_ID}}",
        "--hostname",
        "{{HOSTNAME}}",
        "--cores",
        "{{CORES}}",
        "--app-id",
        "{{APP_ID}}",
        "--worker-url",
        "{{WORKER_URL}}",
        "--resourceProfileId",
        "0",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    ApplicationDescription::new(
        format!("load-app-{j}"),
        Command::new(
            "org.apache.spark.executor.CoarseGrainedExecutorBackend".into(),
            arguments,
            Default::default(),
            Vec::new(),
            Vec::new(),
            vec![format!("-Xmx{}m", config.executor_memory)],
        ),
        format!("http://{}:4040", addr.host),
        ResourceProfile::default_with(Some(config.executor_cores), config.executor_memory),
        "load".into(),
    )
    .with_max_cores(Some(config.app_cores))
}

async fn run_app(shared: Arc<Shared>, j: usize, gate: Arc<Semaphore>, stop: watch::Receiver<bool>) {
    let addr = shared.lock().apps[j].addr.clone();
    let conn = {
        let _permit = gate.acquire().await;
        let conn = match open(&shared, shared.config.master, Some(Peer::App(j)), &stop).await {
            Ok(c) => c,
            Err(e) => {
                shared.error(format!("application {j}: connect: {e}"));
                return;
            }
        };
        if !check_master(&shared, &conn, Some(&addr), &format!("application {j}")).await {
            return;
        }
        conn
    };
    let desc = app_description(&shared.config, j, &addr);
    let m = RegisterApplication::new(desc, EndpointRef::at(addr.clone(), APP_ENDPOINT));
    let Some(stream) = shared.stream(DeployMessage::from(m)) else {
        return;
    };
    {
        let mut st = shared.lock();
        st.apps[j].conn = Some(conn.clone());
        st.apps[j].sent = Some(Instant::now());
    }
    conn.send(&addr, &shared.config.master, MASTER_ENDPOINT, stream);
}

/// The application's action once placed: end, or lower its total and kill one executor.
async fn act(shared: Arc<Shared>, j: usize) {
    let config = &shared.config;
    let (conn, addr, id, first) = {
        let st = shared.lock();
        let a = &st.apps[j];
        (
            a.conn.clone(),
            a.addr.clone(),
            a.id.clone(),
            a.live.iter().min().copied(),
        )
    };
    let (Some(conn), Some(id)) = (conn, id) else {
        return;
    };
    if config.end_every > 0 && j % config.end_every == 0 {
        shared.lock().apps[j].ended = true;
        let m = DeployMessage::from(UnregisterApplication::new(id));
        if let Some(s) = shared.stream(m) {
            conn.send(&addr, &config.master, MASTER_ENDPOINT, s);
        }
    } else if config.kill_every > 0 && j % config.kill_every == 1 % config.kill_every {
        let Some(exec) = first else {
            return;
        };
        shared.lock().apps[j].killed = Some(exec);
        let total = ProfileExecutors::new(
            ResourceProfile::default_with(Some(config.executor_cores), config.executor_memory),
            config.executors_per_app() - 1,
        );
        let who = format!("application {j}");
        ask_true(
            &shared,
            &conn,
            &addr,
            DeployMessage::from(RequestExecutors::new(id.clone(), vec![total])),
            &who,
        )
        .await;
        ask_true(
            &shared,
            &conn,
            &addr,
            DeployMessage::from(KillExecutors::new(id, vec![exec.to_string()])),
            &who,
        )
        .await;
    }
}

/// Waits until `done` holds of the state or the answer timeout passes; whether it held.
async fn wait_for(shared: &Arc<Shared>, limit: Duration, done: impl Fn(&State) -> bool) -> bool {
    let until = Instant::now() + limit;
    loop {
        if done(&shared.lock()) {
            return true;
        }
        if Instant::now() >= until {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// `GET /json` of the web UI (following one redirect: Spark's UI sends `/json` to `/json/`):
/// the latency, the body.
async fn get_json(ui: SocketAddr, limit: Duration) -> Result<(Duration, Vec<u8>), String> {
    let start = Instant::now();
    match get_path(ui, "/json", limit).await? {
        Ok(body) => Ok((start.elapsed(), body)),
        Err(location) => {
            let path = location
                .split_once("://")
                .and_then(|(_, rest)| rest.find('/').map(|at| rest[at..].to_string()))
                .unwrap_or(location);
            match get_path(ui, &path, limit).await? {
                Ok(body) => Ok((start.elapsed(), body)),
                Err(again) => Err(format!("redirected twice (to {again})")),
            }
        }
    }
}

/// One `GET path`: the body, or where a redirect points.
async fn get_path(
    ui: SocketAddr,
    path: &str,
    limit: Duration,
) -> Result<Result<Vec<u8>, String>, String> {
    let fetch = async {
        let mut s = TcpStream::connect(ui).await.map_err(|e| e.to_string())?;
        let req = format!("GET {path} HTTP/1.0\r\nHost: {ui}\r\nAccept: application/json\r\n\r\n");
        s.write_all(req.as_bytes())
            .await
            .map_err(|e| e.to_string())?;
        let mut all = Vec::new();
        s.read_to_end(&mut all).await.map_err(|e| e.to_string())?;
        Ok::<_, String>(all)
    };
    let all = tokio::time::timeout(limit, fetch)
        .await
        .map_err(|_| "no answer".to_string())??;
    let split = all
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .ok_or("an HTTP answer without a header's end")?;
    let head = String::from_utf8_lossy(&all[..split]);
    let status = head.split_whitespace().nth(1).unwrap_or_default();
    if head.starts_with("HTTP/1.") && matches!(status, "301" | "302" | "307" | "308") {
        let location = head
            .lines()
            .find_map(|l| {
                l.split_once(':')
                    .filter(|(k, _)| k.eq_ignore_ascii_case("location"))
                    .map(|(_, v)| v.trim().to_string())
            })
            .ok_or("a redirect without a Location")?;
        return Ok(Err(location));
    }
    if !head.starts_with("HTTP/1.") || status != "200" {
        return Err(format!(
            "answered {}",
            head.lines().next().unwrap_or_default()
        ));
    }
    Ok(Ok(all[split + 4..].to_vec()))
}

/// Checks `/json` against what the run registered.
fn check_json(body: &[u8], workers: usize, apps: &HashSet<String>) -> Result<(), String> {
    let v: serde_json::Value =
        serde_json::from_slice(body).map_err(|e| format!("not JSON: {e}"))?;
    let alive: HashSet<&str> = v["workers"]
        .as_array()
        .ok_or("no workers")?
        .iter()
        .filter(|w| w["state"] == "ALIVE")
        .filter_map(|w| w["id"].as_str())
        .collect();
    if alive.len() != workers {
        return Err(format!(
            "{} workers ALIVE, {workers} registered",
            alive.len()
        ));
    }
    let active: HashSet<String> = v["activeapps"]
        .as_array()
        .ok_or("no activeapps")?
        .iter()
        .filter_map(|a| a["id"].as_str().map(str::to_string))
        .collect();
    if &active != apps {
        return Err(format!(
            "{} active applications, {} expected (missing: {:?})",
            active.len(),
            apps.len(),
            apps.difference(&active).take(3).collect::<Vec<_>>()
        ));
    }
    if v["status"] != "ALIVE" {
        return Err(format!("status {}", v["status"]));
    }
    Ok(())
}

/// Runs the load: workers, then applications, their actions, the steady phase and the state
/// asks; returns what was measured. Needs the soft limit of open files above twice the peers
/// (each has its connection, and Spark's master dials each back).
pub async fn run_load(config: LoadConfig) -> Result<LoadReport, LoadError> {
    if config.workers == 0 {
        return Err(LoadError::Config("no workers".into()));
    }
    if config.executor_cores <= 0
        || config.app_cores % config.executor_cores != 0
        || config.executor_cores > config.worker_cores
    {
        return Err(LoadError::Config(
            "--app-cores must be a multiple of --executor-cores, which must fit a worker".into(),
        ));
    }
    let per_worker = i64::from(config.worker_cores / config.executor_cores).min(i64::from(
        config.worker_memory / config.executor_memory.max(1),
    ));
    let executors = i64::from(config.executors_per_app()) * config.apps as i64;
    if executors > per_worker * config.workers as i64 {
        return Err(LoadError::Config(format!(
            "{executors} executors do not fit {} workers",
            config.workers
        )));
    }
    let listener = TcpListener::bind(("0.0.0.0", config.listen_port)).await?;
    let port = i32::from(listener.local_addr()?.port());
    let master_url = format!("spark://{}:{}", config.master.ip(), config.master.port());
    let master_ref = EndpointRef::at(
        Addr::new(
            config.master.ip().to_string(),
            i32::from(config.master.port()),
        ),
        MASTER_ENDPOINT,
    );
    let mut by_addr = HashMap::new();
    let workers: Vec<WorkerState> = (0..config.workers)
        .map(|i| {
            let addr = Addr::new(peer_host(i), port);
            by_addr.insert((addr.host.clone(), port), Peer::Worker(i));
            WorkerState {
                id: format!("worker-load-{i}-{}-{port}", addr.host),
                addr,
                conn: None,
                registered: false,
                fences: VecDeque::new(),
                executors: HashMap::new(),
                master_url: master_url.clone(),
                master_ref: master_ref.clone(),
                changed: false,
            }
        })
        .collect();
    let apps: Vec<AppState> = (0..config.apps)
        .map(|j| {
            let addr = Addr::new(peer_host(config.workers + j), port);
            by_addr.insert((addr.host.clone(), port), Peer::App(j));
            AppState {
                addr,
                conn: None,
                id: None,
                sent: None,
                launches: 0,
                last_launch: None,
                live: HashSet::new(),
                added: HashSet::new(),
                running: HashSet::new(),
                ended: false,
                killed: None,
                master_ref: master_ref.clone(),
                changed: false,
            }
        })
        .collect();
    let (stop_tx, stop) = watch::channel(false);
    let shared = Arc::new(Shared {
        stop: stop.clone(),
        state: Mutex::new(State {
            workers,
            apps,
            by_addr,
            app_of: HashMap::new(),
            early: HashMap::new(),
            errors: 0,
            samples: Vec::new(),
            first_connect: None,
            last_registered: None,
            registered: 0,
            heartbeats: 0,
            measuring: false,
            latencies: Vec::new(),
            launched: 0,
            killed: 0,
            expect_loss: false,
            lost_at: None,
            last_changed: None,
        }),
        config: config.clone(),
    });
    // What the master dials: each connection's messages go to the peer they name.
    let accept = {
        let shared = Arc::clone(&shared);
        let stop = stop.clone();
        tokio::spawn(async move {
            while let Ok((s, _)) = listener.accept().await {
                let _ = s.set_nodelay(true);
                let (rd, wr) = s.into_split();
                let (tx, rx) = mpsc::unbounded_channel();
                let conn = Conn {
                    tx,
                    pending: Arc::new(Mutex::new(HashMap::new())),
                    next: Arc::new(AtomicI64::new(1)),
                };
                tokio::spawn(write_loop(wr, rx));
                tokio::spawn(read_loop(Arc::clone(&shared), rd, conn, None, stop.clone()));
            }
        })
    };
    let gate = Arc::new(Semaphore::new(config.connect_concurrency.max(1)));
    let mut report = LoadReport {
        release: config.release.name().to_string(),
        master: config.master.to_string(),
        workers: config.workers,
        apps: config.apps,
        heartbeat_period_ms: config.heartbeat_period().as_millis() as u64,
        executors_per_app: config.executors_per_app(),
        ..LoadReport::default()
    };

    // Workers, all at once.
    shared.phase("register");
    let mut tasks = tokio::task::JoinSet::new();
    for i in 0..config.workers {
        tasks.spawn(run_worker(
            Arc::clone(&shared),
            i,
            Arc::clone(&gate),
            stop.clone(),
        ));
    }
    let n = config.workers;
    wait_for(&shared, config.answer_timeout, |s| s.registered == n).await;
    {
        let mut st = shared.lock();
        report.workers_registered = st.registered;
        if st.registered == n {
            report.registration_secs = match (st.first_connect, st.last_registered) {
                (Some(a), Some(b)) => Some(b.duration_since(a).as_secs_f64()),
                _ => None,
            };
        } else {
            let missing = n - st.registered;
            st.error(format!("{missing} workers got no RegisteredWorker"));
        }
    }

    // Applications, all at once; the master places every executor.
    shared.phase("place");
    let placing = Instant::now();
    for j in 0..config.apps {
        tasks.spawn(run_app(
            Arc::clone(&shared),
            j,
            Arc::clone(&gate),
            stop.clone(),
        ));
    }
    let per_app = config.executors_per_app();
    let m = config.apps;
    let placed = wait_for(&shared, config.answer_timeout, |s| {
        s.apps.iter().filter(|a| a.id.is_some()).count() == m
            && s.apps.iter().all(|a| {
                a.launches == per_app
                    && a.running.len() == per_app as usize
                    && a.added.len() == per_app as usize
            })
    })
    .await;
    {
        let mut st = shared.lock();
        report.apps_registered = st.apps.iter().filter(|a| a.id.is_some()).count();
        if placed {
            report.placement_secs = Some(placing.elapsed().as_secs_f64());
        }
        let mut spans = Vec::new();
        let mut short = Vec::new();
        for (j, a) in st.apps.iter().enumerate() {
            if let (Some(sent), Some(last)) = (a.sent, a.last_launch) {
                if a.launches == per_app {
                    spans.push(last.duration_since(sent).as_secs_f64() * 1e3);
                }
            }
            if a.id.is_none() {
                short.push(format!("application {j}: no RegisteredApplication"));
            } else if a.launches != per_app {
                short.push(format!(
                    "application {j}: {} LaunchExecutor of {per_app} asked",
                    a.launches
                ));
            } else if a.added.len() != per_app as usize || a.running.len() != per_app as usize {
                short.push(format!(
                    "application {j}: {} ExecutorAdded, {} ExecutorUpdated(RUNNING) of {per_app}",
                    a.added.len(),
                    a.running.len()
                ));
            }
        }
        report.app_to_last_launch_ms = Percentiles::of(spans);
        for (app, launches) in &st.early {
            short.push(format!(
                "{} LaunchExecutor for {app}, no application of this run",
                launches.len()
            ));
        }
        for s in short {
            st.error(s);
        }
    }

    // Some applications end, some kill an executor.
    shared.phase("act");
    let mut acts = tokio::task::JoinSet::new();
    for j in 0..config.apps {
        acts.spawn(act(Arc::clone(&shared), j));
    }
    while acts.join_next().await.is_some() {}
    let settled = wait_for(&shared, config.answer_timeout, |s| {
        s.apps.iter().all(|a| {
            if a.ended {
                a.live.is_empty()
            } else if let Some(k) = a.killed {
                !a.live.contains(&k) && a.live.len() == per_app as usize - 1
            } else {
                true
            }
        })
    })
    .await;
    {
        let mut st = shared.lock();
        report.apps_ended = st.apps.iter().filter(|a| a.ended).count();
        report.apps_killing = st.apps.iter().filter(|a| a.killed.is_some()).count();
        if !settled {
            let wrong: Vec<String> = st
                .apps
                .iter()
                .enumerate()
                .filter(|(_, a)| {
                    (a.ended && !a.live.is_empty()) || a.killed.is_some_and(|k| a.live.contains(&k))
                })
                .take(5)
                .map(|(j, a)| format!("application {j}: executors {:?} not killed", a.live))
                .collect();
            st.error(format!("the master did not kill what was asked: {wrong:?}"));
        }
        st.measuring = true;
    }

    // Steady heartbeating, with the state asked halfway.
    shared.phase("steady");
    let steady = Instant::now();
    tokio::time::sleep(config.steady / 2).await;
    shared.phase("state");
    let expected_apps: HashSet<String> = {
        let st = shared.lock();
        st.apps
            .iter()
            .filter(|a| !a.ended)
            .filter_map(|a| a.id.clone())
            .collect()
    };
    state_asks(&shared, &mut report, &expected_apps, &stop).await;
    let left = config.steady.saturating_sub(steady.elapsed());
    tokio::time::sleep(left).await;
    report.steady_secs = steady.elapsed().as_secs_f64();
    shared.phase("done");
    // The last fences' answers.
    let limit = config.answer_timeout.min(Duration::from_secs(10));
    wait_for(&shared, limit, |s| {
        s.workers.iter().all(|w| w.fences.is_empty())
    })
    .await;
    {
        let mut st = shared.lock();
        st.measuring = false;
        let unanswered: usize = st.workers.iter().map(|w| w.fences.len()).sum();
        if unanswered > 0 {
            st.error(format!(
                "{unanswered} fenced heartbeats got no RegisteredWorker(duplicate)"
            ));
        }
        report.heartbeats = st.heartbeats;
        report.heartbeat_ms = Percentiles::of(std::mem::take(&mut st.latencies));
    }
    for (k, ui) in config.failovers.iter().enumerate() {
        let figures = failover(&shared, k, *ui).await;
        if let Some(why) = &figures.failure {
            shared.error(format!("failover {k} to {ui}: {why}"));
        }
        let done = figures.failure.is_none();
        report.failovers.push(figures);
        if !done {
            break;
        }
    }
    let _ = stop_tx.send(true);
    {
        let mut st = shared.lock();
        report.executors_launched = st.launched;
        report.executors_killed = st.killed;
        report.errors = st.errors;
        report.error_samples = st.samples.clone();
        for w in &mut st.workers {
            w.conn = None;
        }
        for a in &mut st.apps {
            a.conn = None;
        }
    }
    tasks.shutdown().await;
    accept.abort();
    Ok(report)
}

/// Failover `k`: waits for the leading master's loss (the caller kills or restarts it on phase
/// `failover-K`), then for the new leader's `/json` at `ui` to hold every worker ALIVE and every
/// application that has not ended active and not UNKNOWN, then registers every worker again on
/// it, each of which must be answered as a duplicate.
async fn failover(shared: &Arc<Shared>, k: usize, ui: SocketAddr) -> FailoverFigures {
    let config = &shared.config;
    let mut figures = FailoverFigures {
        web_ui: ui.to_string(),
        ..FailoverFigures::default()
    };
    let (workers, apps): (usize, HashSet<String>) = {
        let mut st = shared.lock();
        st.expect_loss = true;
        st.lost_at = None;
        st.last_changed = None;
        for w in &mut st.workers {
            w.changed = false;
        }
        for a in &mut st.apps {
            a.changed = false;
        }
        let apps = st
            .apps
            .iter()
            .filter(|a| !a.ended)
            .filter_map(|a| a.id.clone())
            .collect();
        (st.registered, apps)
    };
    let asked = Instant::now();
    shared.phase(&format!("failover-{k}"));
    if !wait_for(shared, config.failover_timeout, |s| s.lost_at.is_some()).await {
        figures.failure = Some("the leading master was never lost".into());
        return figures;
    }
    let Some(lost) = shared.lock().lost_at else {
        return figures;
    };
    figures.lost_after_secs = Some(lost.duration_since(asked).as_secs_f64());
    let mut last = String::from("no answer yet");
    let recovered = loop {
        if lost.elapsed() > config.failover_timeout {
            break None;
        }
        match get_json(ui, Duration::from_secs(5)).await {
            Ok((_, body)) => match check_recovered(&body, workers, &apps) {
                Ok(()) => break Some(Instant::now()),
                Err(e) => last = e,
            },
            Err(e) => last = e,
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let Some(recovered) = recovered else {
        figures.failure = Some(format!(
            "not recovered within {:?}: {last}",
            config.failover_timeout
        ));
        return figures;
    };
    figures.recovered_secs = Some(recovered.duration_since(lost).as_secs_f64());
    // Every worker and live application answered; the new leader holds every worker.
    let live = apps.len();
    let answered = wait_for(shared, config.answer_timeout, |s| {
        s.workers.iter().filter(|w| w.changed).count() == workers
            && s.apps.iter().filter(|a| a.changed && !a.ended).count() == live
            && s.workers.iter().all(|w| w.conn.is_some())
    })
    .await;
    let fences: Vec<(Conn, Addr, EndpointRef)> = {
        let mut st = shared.lock();
        figures.workers_changed = st.workers.iter().filter(|w| w.changed).count();
        figures.apps_changed = st.apps.iter().filter(|a| a.changed).count();
        figures.answered_secs = st
            .last_changed
            .map(|t| t.duration_since(lost).as_secs_f64());
        st.expect_loss = false;
        let now = Instant::now();
        st.workers
            .iter_mut()
            .filter_map(|w| {
                let conn = w.conn.clone()?;
                w.fences.push_back(now);
                Some((conn, w.addr.clone(), w.master_ref.clone()))
            })
            .collect()
    };
    if !answered {
        figures.failure = Some(format!(
            "{} of {workers} workers and {} of {live} applications answered MasterChanged",
            figures.workers_changed, figures.apps_changed
        ));
        return figures;
    }
    for (conn, addr, master) in fences {
        let to = master
            .address
            .as_ref()
            .and_then(|a| format!("{}:{}", a.host, a.port).parse().ok())
            .unwrap_or(config.master);
        let register = {
            let st = shared.lock();
            st.workers
                .iter()
                .find(|w| w.addr == addr)
                .map(|w| register_worker_to(config, &w.id, &w.addr, to))
        };
        if let Some(stream) = register.and_then(|r| shared.stream(DeployMessage::from(r))) {
            conn.send(&addr, &to, MASTER_ENDPOINT, stream);
        }
    }
    figures.workers_confirmed = wait_for(shared, config.answer_timeout, |s| {
        s.workers.iter().all(|w| w.fences.is_empty())
    })
    .await;
    if !figures.workers_confirmed {
        figures.failure = Some("the new leader did not answer every worker's registration".into());
    }
    figures
}

/// Checks a recovered leader's `/json`: [`check_json`], and no application still UNKNOWN (not
/// yet acknowledged its new master).
fn check_recovered(body: &[u8], workers: usize, apps: &HashSet<String>) -> Result<(), String> {
    check_json(body, workers, apps)?;
    let v: serde_json::Value =
        serde_json::from_slice(body).map_err(|e| format!("not JSON: {e}"))?;
    let unknown = v["activeapps"]
        .as_array()
        .map_or(0, |a| a.iter().filter(|a| a["state"] == "UNKNOWN").count());
    if unknown > 0 {
        return Err(format!("{unknown} applications UNKNOWN"));
    }
    Ok(())
}

async fn state_asks(
    shared: &Arc<Shared>,
    report: &mut LoadReport,
    apps: &HashSet<String>,
    stop: &watch::Receiver<bool>,
) {
    let config = &shared.config;
    if config.state_asks == 0 {
        return;
    }
    // RequestMasterState over Spark's wire, from a client-mode peer as the UI's asks come.
    match open(shared, config.master, None, stop).await {
        Err(e) => shared.error(format!("the UI peer: connect: {e}")),
        Ok(conn) => {
            let mut times = Vec::new();
            for _ in 0..config.state_asks {
                let Some(stream) = shared.stream(DeployMessage::from(RequestMasterState::new()))
                else {
                    break;
                };
                let start = Instant::now();
                let rx = conn.ask(None, &config.master, MASTER_ENDPOINT, stream);
                match tokio::time::timeout(config.answer_timeout, rx).await {
                    Ok(Ok(Ok(body))) => {
                        times.push(start.elapsed().as_secs_f64() * 1e3);
                        report.state_ask.bytes = body.len();
                        let class =
                            parse_stream(&body).map(|g| g.root_node().class().map(str::to_string));
                        match class {
                            Ok(Some(c)) if c.ends_with("MasterStateResponse") => {
                                report.state_ask.answered = true;
                            }
                            other => {
                                shared.error(format!("RequestMasterState answered {other:?}"));
                            }
                        }
                    }
                    Ok(Ok(Err(failure))) => {
                        times.push(start.elapsed().as_secs_f64() * 1e3);
                        report.state_ask.failure = Some(failure);
                        break;
                    }
                    Ok(Err(_)) => {
                        shared.error("the UI peer's connection closed".into());
                        break;
                    }
                    Err(_) => {
                        shared.error("no answer to RequestMasterState".into());
                        break;
                    }
                }
            }
            report.state_ask.latency_ms = Percentiles::of(times);
        }
    }
    let Some(ui) = config.web_ui else {
        return;
    };
    let mut times = Vec::new();
    let workers = shared.lock().registered;
    for _ in 0..config.state_asks {
        match get_json(ui, config.answer_timeout).await {
            Ok((took, body)) => {
                times.push(took.as_secs_f64() * 1e3);
                report.json.bytes = body.len();
                match check_json(&body, workers, apps) {
                    Ok(()) => report.json.answered = true,
                    Err(e) => shared.error(format!("/json: {e}")),
                }
            }
            Err(e) => shared.error(format!("/json: {e}")),
        }
    }
    report.json.latency_ms = Percentiles::of(times);
}
