//! The application client's tokio shell: it feeds [`AppClientCore`] (in `node::driver`, which
//! registers the application with the masters, retries, gives up, follows MasterChanged and
//! forwards what the masters say to the scheduler backend) the masters' connections and
//! messages, the callers' requests and its timer, and carries out what it decides.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::sync::{mpsc, oneshot};

use super::events::Msg;
use super::{add_counters, DriverConfig, DriverError};
use crate::connection::{
    Connection, ConnectionConfig, ConnectionError, ConnectionHandle, Counters, Incoming,
    DEFAULT_HANDSHAKE_TIMEOUT,
};
use crate::messages::deploy::RegisterApplication;
use crate::messages::{ApplicationDescription, DeployMessage, EndpointRef, Family};
use crate::node::driver::{AppClientCore, ClientConfig, ClientEffect, ClientInput, RequestFailed};
use crate::node::{ConnId, ConnOutput, Core, Output};
use crate::reference::url::{tcp_connect, SparkUrl};
use crate::validate::Endpoint;
use crate::wire::handshake::{Identity, Role};
use crate::wire::Reply;
use tokio::net::TcpListener;

/// How long stopping waits for the masters' connections to close.
const CLOSE_GRACE: Duration = Duration::from_secs(2);

enum Cmd {
    Request {
        total: u32,
        reply: oneshot::Sender<Result<bool, DriverError>>,
    },
    Kill {
        ids: Vec<String>,
        reply: oneshot::Sender<Result<bool, DriverError>>,
    },
    Stop(oneshot::Sender<()>),
    /// A connection a master opened to the application (after a failover).
    Adopt(Connection<DeployMessage>, String),
}

/// What the shell's own tasks report: dials ended, answers to the client's asks.
enum Report {
    Dialled {
        master: usize,
        made: Result<Connection<DeployMessage>, String>,
    },
    Answer {
        conn: ConnId,
        id: u64,
        answer: Box<Result<Reply<DeployMessage>, String>>,
    },
}

/// The backend's handle on the client.
pub(super) struct AppClient {
    tx: mpsc::UnboundedSender<Cmd>,
    handles: Arc<Mutex<Vec<ConnectionHandle<DeployMessage>>>>,
}

impl AppClient {
    /// Asks the active master for `total` executors; the answer goes to `reply`.
    pub(super) fn request_executors(
        &self,
        total: u32,
        reply: oneshot::Sender<Result<bool, DriverError>>,
    ) {
        if let Err(mpsc::error::SendError(Cmd::Request { reply, .. })) =
            self.tx.send(Cmd::Request { total, reply })
        {
            let _ = reply.send(Err(DriverError::Stopped));
        }
    }

    /// Asks the active master to kill executors; the answer goes to `reply`.
    pub(super) fn kill_executors(
        &self,
        ids: Vec<String>,
        reply: oneshot::Sender<Result<bool, DriverError>>,
    ) {
        if let Err(mpsc::error::SendError(Cmd::Kill { reply, .. })) =
            self.tx.send(Cmd::Kill { ids, reply })
        {
            let _ = reply.send(Err(DriverError::Stopped));
        }
    }

    /// Unregisters the application and closes the masters' connections.
    pub(super) async fn stop(&self) {
        let (done, wait) = oneshot::channel();
        if self.tx.send(Cmd::Stop(done)).is_ok() {
            let _ = wait.await;
        }
    }

    /// Traffic of every master connection.
    pub(super) fn counters(&self) -> Counters {
        let mut all = Counters::default();
        let handles = self
            .handles
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        for h in handles.iter() {
            add_counters(&mut all, &h.counters());
        }
        all
    }
}

/// Starts the client: one connection per master, and `listener` for masters that reach the
/// application after a failover (at `driver`, the address registered).
pub(super) fn spawn(
    masters: Vec<SparkUrl>,
    desc: ApplicationDescription,
    driver: EndpointRef,
    listener: TcpListener,
    config: Arc<DriverConfig>,
    backend: mpsc::UnboundedSender<Msg>,
) -> AppClient {
    let (tx, cmds) = mpsc::unbounded_channel();
    tokio::spawn(accept_masters(listener, Arc::clone(&config), tx.clone()));
    let handles = Arc::new(Mutex::new(Vec::new()));
    // Bounded: masters that send faster than the client works are held back (TCP).
    let (in_tx, in_rx) = mpsc::channel(RECEIVED_QUEUE);
    let (reports, reported) = mpsc::unbounded_channel();
    let rules = ClientConfig {
        masters: config.masters.clone(),
        register: RegisterApplication {
            app_description: desc,
            driver,
        },
        registration_timeout: config.registration_timeout,
        registration_retry: config.registration_retry,
    };
    let shell = Shell {
        core: AppClientCore::new(rules, Instant::now()),
        masters,
        config,
        backend,
        handles: Arc::clone(&handles),
        conns: HashMap::new(),
        next_conn: 0,
        requests: HashMap::new(),
        next_request: 0,
        in_tx,
        reports,
    };
    tokio::spawn(shell.run(cmds, in_rx, reported));
    AppClient { tx, handles }
}

type Received = (ConnId, Result<Incoming<DeployMessage>, ConnectionError>);

/// Messages from the masters' connections waiting for the client.
const RECEIVED_QUEUE: usize = 64;

struct Shell {
    core: AppClientCore,
    masters: Vec<SparkUrl>,
    config: Arc<DriverConfig>,
    backend: mpsc::UnboundedSender<Msg>,
    handles: Arc<Mutex<Vec<ConnectionHandle<DeployMessage>>>>,
    conns: HashMap<ConnId, ConnectionHandle<DeployMessage>>,
    next_conn: ConnId,
    requests: HashMap<u64, oneshot::Sender<Result<bool, DriverError>>>,
    next_request: u64,
    in_tx: mpsc::Sender<Received>,
    reports: mpsc::UnboundedSender<Report>,
}

impl Shell {
    async fn run(
        mut self,
        mut cmds: mpsc::UnboundedReceiver<Cmd>,
        mut in_rx: mpsc::Receiver<Received>,
        mut reported: mpsc::UnboundedReceiver<Report>,
    ) {
        self.drain();
        loop {
            let wake = self.core.poll_timeout();
            tokio::select! {
                Some(report) = reported.recv() => self.report(report),
                Some((conn, got)) = in_rx.recv() => self.received(conn, got),
                cmd = cmds.recv() => match cmd {
                    Some(Cmd::Request { total, reply }) => {
                        let request = self.request(reply);
                        self.handle(ClientInput::RequestExecutors { request, total });
                    }
                    Some(Cmd::Kill { ids, reply }) => {
                        let request = self.request(reply);
                        self.handle(ClientInput::KillExecutors { request, ids });
                    }
                    Some(Cmd::Adopt(conn, label)) => {
                        let conn = self.open(conn);
                        self.handle(ClientInput::Adopted { conn, label });
                    }
                    Some(Cmd::Stop(done)) => {
                        self.stop().await;
                        let _ = done.send(());
                        return;
                    }
                    None => {
                        self.stop().await;
                        return;
                    }
                },
                _ = crate::reference::clock::sleep_until(wake) => {
                    self.core.handle_timeout(Instant::now());
                }
            }
            self.drain();
        }
    }

    fn handle(&mut self, input: ClientInput) {
        self.core.handle(Instant::now(), input);
    }

    fn request(&mut self, reply: oneshot::Sender<Result<bool, DriverError>>) -> u64 {
        let request = self.next_request;
        self.next_request += 1;
        self.requests.insert(request, reply);
        request
    }

    /// Takes a master's connection: its handle kept, what it receives read into the client.
    fn open(&mut self, conn: Connection<DeployMessage>) -> ConnId {
        let id = self.next_conn;
        self.next_conn += 1;
        self.handles
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .push(conn.handle());
        self.conns.insert(id, conn.handle());
        tokio::spawn(read_into(id, conn, self.in_tx.clone()));
        id
    }

    fn report(&mut self, report: Report) {
        match report {
            Report::Dialled { master, made } => match made {
                Ok(conn) => {
                    let conn = self.open(conn);
                    self.handle(ClientInput::Dialled { master, conn });
                }
                Err(error) => self.handle(ClientInput::DialFailed { master, error }),
            },
            Report::Answer { conn, id, answer } => {
                let answer = *answer;
                self.handle(ClientInput::Answer { conn, id, answer });
            }
        }
    }

    fn received(&mut self, conn: ConnId, got: Result<Incoming<DeployMessage>, ConnectionError>) {
        let input = match got {
            Ok(Incoming::Message(message)) => ClientInput::Message { conn, message },
            Ok(Incoming::Ask { id, message }) => ClientInput::Ask { conn, id, message },
            Err(e) => {
                self.conns.remove(&conn);
                ClientInput::Closed {
                    conn,
                    reason: e.to_string(),
                }
            }
        };
        self.handle(input);
    }

    /// Carries out what the core decided, in order: the one place its outputs are drained.
    fn drain(&mut self) {
        while let Some(out) = self.core.poll() {
            match out {
                Output::Conn(out) => self.carry(out),
                Output::Effect(effect) => self.effect(effect),
            }
        }
    }

    /// Writes on (or closes) a master's connection, without waiting.
    fn carry(&self, out: ConnOutput<DeployMessage>) {
        let conn = out.conn();
        let Some(h) = self.conns.get(&conn) else {
            return;
        };
        let (what, sent) = match out {
            ConnOutput::Send { message, .. } => (message.name(), h.post(message)),
            ConnOutput::Ask { id, message, .. } => {
                let what = message.name();
                match h.post_ask(message) {
                    Ok(answer) => {
                        let reports = self.reports.clone();
                        tokio::spawn(async move {
                            let answer = Box::new(answer.await.map_err(|e| e.to_string()));
                            let _ = reports.send(Report::Answer { conn, id, answer });
                        });
                        (what, Ok(()))
                    }
                    Err(e) => {
                        let answer = Box::new(Err(e.to_string()));
                        let _ = self.reports.send(Report::Answer { conn, id, answer });
                        (what, Err(e))
                    }
                }
            }
            ConnOutput::Reply { id, reply, .. } => ("reply", h.post_reply(id, reply)),
            ConnOutput::Fail { id, error, .. } => ("failure", h.post_failure(id, error)),
            ConnOutput::Close { reason, .. } => {
                match reason {
                    Some(reason) => h.close_soon_because(reason),
                    None => h.close_soon(),
                }
                return;
            }
            ConnOutput::Abort { .. } => {
                // A master's connection has no abort of its own: closing it drops what is queued.
                let h = h.clone();
                tokio::spawn(async move { h.close().await });
                return;
            }
        };
        if let Err(e) = sent {
            tracing::warn!("driver: {what} to a master not sent: {e}");
        }
    }

    fn effect(&mut self, effect: ClientEffect) {
        match effect {
            ClientEffect::Dial { master } => {
                let Some(url) = self.masters.get(master).cloned() else {
                    return;
                };
                let (config, reports) = (Arc::clone(&self.config), self.reports.clone());
                tokio::spawn(async move {
                    let made = open(&url, &config).await;
                    let _ = reports.send(Report::Dialled { master, made });
                });
            }
            ClientEffect::Master(event) => {
                let _ = self.backend.send(Msg::Master(event));
            }
            ClientEffect::Answered { request, result } => {
                if let Some(reply) = self.requests.remove(&request) {
                    let _ = reply.send(result.map_err(|e| match e {
                        RequestFailed::NotRegistered => DriverError::NotRegistered,
                        RequestFailed::Master(why) => DriverError::Master(why),
                    }));
                }
            }
        }
    }

    /// Unregisters, then waits a little for the masters' connections to close.
    async fn stop(&mut self) {
        self.handle(ClientInput::Stop);
        self.drain();
        let open: Vec<_> = self.conns.values().cloned().collect();
        let _ = tokio::time::timeout(CLOSE_GRACE, async {
            for h in &open {
                h.closed().await;
            }
        })
        .await;
    }
}

/// Accepts masters that dial the application (a master that took over after a failover and
/// announces itself with MasterChanged), until the client is gone.
async fn accept_masters(
    listener: TcpListener,
    config: Arc<DriverConfig>,
    client: mpsc::UnboundedSender<Cmd>,
) {
    loop {
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            _ = client.closed() => return,
        };
        let stream = match accepted {
            Ok((stream, _)) => stream,
            Err(e) => {
                tracing::warn!("driver: accept failed on the application's address: {e}");
                tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                continue;
            }
        };
        let config = Arc::clone(&config);
        let client = client.clone();
        tokio::spawn(async move {
            let _ = stream.set_nodelay(true);
            let local = Identity::new(Role::AppClient, config.id.clone());
            let hs = config
                .security
                .server_handshake(stream, &local, |role| role == Role::Master);
            let established = match tokio::time::timeout(DEFAULT_HANDSHAKE_TIMEOUT, hs).await {
                Ok(Ok(e)) => e,
                Ok(Err(e)) => {
                    tracing::warn!("driver: a master's handshake failed: {e}");
                    return;
                }
                Err(_) => return,
            };
            let peer = established.negotiated().peer_id.clone();
            let version = established.negotiated().version;
            match tapped(established, &config, peer.clone(), version, false) {
                Ok(conn) => {
                    let _ = client.send(Cmd::Adopt(conn, peer));
                }
                Err(e) => tracing::warn!("driver: connection from master {peer} failed: {e}"),
            }
        });
    }
}

/// Hands everything connection `i` receives to the client, its end included.
async fn read_into(
    i: ConnId,
    mut conn: Connection<DeployMessage>,
    received: mpsc::Sender<Received>,
) {
    loop {
        let got = conn.recv().await;
        let end = got.is_err();
        if received.send((i, got)).await.is_err() || end {
            break;
        }
    }
}

/// The handshake as an application client, with the connection tapped when observed.
async fn open(url: &SparkUrl, config: &DriverConfig) -> Result<Connection<DeployMessage>, String> {
    let stream = tcp_connect(url, config.registration_timeout).await?;
    let local = Identity::new(Role::AppClient, config.id.clone());
    let established = tokio::time::timeout(
        DEFAULT_HANDSHAKE_TIMEOUT,
        config.security.client_handshake(stream, &local, &url.host),
    )
    .await
    .map_err(|_| "handshake timed out".to_string())?
    .map_err(|e| e.to_string())?;
    let peer_role = established.negotiated().peer_role;
    if peer_role != Role::Master {
        return Err(format!("the peer is a {peer_role}, not a master"));
    }
    let peer = established.negotiated().peer_id.clone();
    let version = established.negotiated().version;
    tapped(established, config, peer, version, true).map_err(|e| e.to_string())
}

/// Starts a deploy connection with a master, tapped for the diagram when observed (the master
/// validates it from its end, where it sees the LaunchExecutor each ExecutorAdded must match).
fn tapped(
    established: crate::wire::handshake::Established<
        crate::connection::Stream<tokio::net::TcpStream>,
    >,
    config: &DriverConfig,
    peer: String,
    version: crate::messages::Version,
    local_dialled: bool,
) -> Result<Connection<DeployMessage>, ConnectionError> {
    let tap = config.observer.as_ref().map(|o| {
        o.diagram_tap(
            Endpoint::new(Role::AppClient, config.id.clone()),
            Endpoint::new(Role::Master, peer),
            local_dialled,
            version,
        )
    });
    let mut settings = ConnectionConfig::<DeployMessage>::default();
    if let Some(tap) = &tap {
        tap.opened();
        settings = settings.with_inspector(tap.clone());
    }
    let conn = Connection::establish(established, settings)?;
    if let Some(tap) = tap {
        let handle = conn.handle();
        tokio::spawn(async move {
            handle.closed().await;
            tap.closed();
        });
    }
    Ok(conn)
}
