//! The application's client of the masters, as Spark's `StandaloneAppClient`: registers the
//! application with every master it is given, follows what the active master says about the
//! application's executors and workers, answers MasterChanged, asks for and kills executors on
//! request, and unregisters on stop.

use std::sync::{Arc, Mutex};

use tokio::sync::{mpsc, oneshot};

use super::events::{MasterEvent, Msg};
use super::{add_counters, DriverConfig, DriverError};
use crate::connection::{
    Connection, ConnectionConfig, ConnectionError, ConnectionHandle, Counters, Incoming,
    DEFAULT_HANDSHAKE_TIMEOUT,
};
use crate::messages::deploy::{
    KillExecutors, MasterChangeAcknowledged, RegisterApplication, RequestExecutors,
    UnregisterApplication,
};
use crate::messages::{
    ApplicationDescription, DeployMessage, EndpointRef, ErrorDescription, Family, ProfileExecutors,
};
use crate::reference::url::{tcp_connect, SparkUrl};
use crate::validate::Endpoint;
use crate::wire::handshake::{Identity, Role};
use crate::wire::Reply;
use tokio::net::TcpListener;

/// Spark's text when no master registered the application in time.
pub(super) const ALL_MASTERS_UNRESPONSIVE: &str = "All masters are unresponsive! Giving up.";

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
    let dials = masters.len();
    let client = Client {
        conns: vec![None; dials],
        labels: config.masters.clone(),
        dialled: masters.len(),
        in_tx,
        masters,
        config,
        backend,
        handles: Arc::clone(&handles),
        active: None,
        app_id: None,
        failed: 0,
        dialling: dials,
        why: Vec::new(),
        dead: false,
        lost_at: None,
    };
    tokio::spawn(client.run(desc, driver, cmds, in_rx));
    AppClient { tx, handles }
}

type Received = (usize, Result<Incoming<DeployMessage>, ConnectionError>);

/// Messages from the masters' connections waiting for the client.
const RECEIVED_QUEUE: usize = 64;

struct Client {
    masters: Vec<SparkUrl>,
    /// Names of the masters' connections, by index (dialled ones first, then adopted ones).
    labels: Vec<String>,
    dialled: usize,
    in_tx: mpsc::Sender<Received>,
    config: Arc<DriverConfig>,
    backend: mpsc::UnboundedSender<Msg>,
    handles: Arc<Mutex<Vec<ConnectionHandle<DeployMessage>>>>,
    conns: Vec<Option<ConnectionHandle<DeployMessage>>>,
    active: Option<usize>,
    app_id: Option<String>,
    failed: usize,
    /// Dials of the masters not yet ended (connected or failed).
    dialling: usize,
    /// What went wrong with each master that could not be reached or was lost before it
    /// registered the application: said when the client gives up.
    why: Vec<String>,
    dead: bool,
    /// When the connection to the active master was lost, while no master has taken over.
    lost_at: Option<tokio::time::Instant>,
}

impl Client {
    async fn run(
        mut self,
        desc: ApplicationDescription,
        driver: EndpointRef,
        mut cmds: mpsc::UnboundedReceiver<Cmd>,
        mut in_rx: mpsc::Receiver<Received>,
    ) {
        let (conn_tx, mut conn_rx) = mpsc::unbounded_channel();
        let register = RegisterApplication {
            app_description: desc,
            driver,
        };
        for (i, url) in self.masters.iter().enumerate() {
            tokio::spawn(connect_and_read(
                i,
                url.clone(),
                register.clone(),
                Arc::clone(&self.config),
                conn_tx.clone(),
                self.in_tx.clone(),
            ));
        }
        drop(conn_tx);
        let deadline = tokio::time::Instant::now() + self.config.registration_timeout;
        let retry_every = self
            .config
            .registration_retry
            .max(std::time::Duration::from_millis(10));
        let mut retry =
            tokio::time::interval_at(tokio::time::Instant::now() + retry_every, retry_every);
        loop {
            tokio::select! {
                Some((i, made)) = conn_rx.recv() => self.connected(i, made),
                Some((i, got)) = in_rx.recv() => self.received(i, got).await,
                cmd = cmds.recv() => match cmd {
                    Some(Cmd::Request { total, reply }) => self.request(total, reply),
                    Some(Cmd::Kill { ids, reply }) => self.kill(ids, reply),
                    Some(Cmd::Adopt(conn, label)) => self.adopt(conn, label),
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
                _ = retry.tick(), if self.app_id.is_none() && !self.dead => {
                    // As Spark's tryRegisterAllMasters: a master that was standby (or busy
                    // recovering) ignored the registration; ask again.
                    for h in self.conns.iter().flatten() {
                        let again = DeployMessage::RegisterApplication(register.clone());
                        if let Err(e) = h.send(again).await {
                            tracing::debug!("driver: RegisterApplication not sent again: {e}");
                        }
                    }
                }
                // Not while a master is still being dialled: its dial ends within the same time
                // (then `connected` gives up, naming why), and giving up first would lose that.
                _ = tokio::time::sleep_until(deadline),
                    if self.app_id.is_none() && !self.dead && self.dialling == 0 =>
                {
                    self.give_up(self.unresponsive());
                }
                _ = sleep_until_some(self.lost_at.map(|t| t + self.config.registration_timeout)),
                    if self.lost_at.is_some() && !self.dead =>
                {
                    // Spark waits for a master to come back; here no master can reach the client
                    // but over a connection it opened, so waiting longer cannot help.
                    self.give_up(format!(
                        "Disconnected from the master and no master took over within {:?}",
                        self.config.registration_timeout
                    ));
                }
            }
        }
    }

    fn adopt(&mut self, conn: Connection<DeployMessage>, label: String) {
        let i = self.conns.len();
        tracing::info!("driver: master {label} connected to the application");
        self.conns.push(Some(conn.handle()));
        self.labels.push(label);
        self.handles
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .push(conn.handle());
        tokio::spawn(read_into(i, conn, self.in_tx.clone()));
    }

    fn connected(&mut self, i: usize, made: Result<ConnectionHandle<DeployMessage>, String>) {
        self.dialling = self.dialling.saturating_sub(1);
        match made {
            Ok(handle) => {
                self.handles
                    .lock()
                    .unwrap_or_else(|poisoned| poisoned.into_inner())
                    .push(handle.clone());
                self.conns[i] = Some(handle);
            }
            Err(e) => {
                tracing::warn!(
                    "driver: failed to connect to master {}: {e}",
                    self.labels[i]
                );
                self.failed += 1;
                self.why.push(format!("{}: {e}", self.labels[i]));
                if self.failed == self.dialled && self.app_id.is_none() {
                    self.give_up(self.unresponsive());
                }
            }
        }
    }

    /// Spark's "All masters are unresponsive! Giving up.", followed by what this client knows
    /// went wrong with each master (a refused connection, a refused handshake, a lost
    /// connection), so that the typed error is not lost behind the generic one.
    fn unresponsive(&self) -> String {
        if self.why.is_empty() {
            ALL_MASTERS_UNRESPONSIVE.to_string()
        } else {
            format!("{ALL_MASTERS_UNRESPONSIVE} ({})", self.why.join("; "))
        }
    }

    fn give_up(&mut self, why: String) {
        if !self.dead {
            self.dead = true;
            let _ = self.backend.send(Msg::Master(MasterEvent::Dead(why)));
        }
    }

    fn forward(&self, event: MasterEvent) {
        let _ = self.backend.send(Msg::Master(event));
    }

    async fn received(&mut self, i: usize, got: Result<Incoming<DeployMessage>, ConnectionError>) {
        let message = match got {
            Ok(Incoming::Message(m)) => m,
            Ok(Incoming::Ask { id, message }) => {
                if let Some(h) = &self.conns[i] {
                    let error = ErrorDescription::new(
                        "org.apache.spark.SparkException",
                        format!(
                            "Unsupported message {} received by the app client",
                            message.name()
                        ),
                    );
                    let _ = h.fail(id, error).await;
                }
                return;
            }
            Err(e) => {
                self.conns[i] = None;
                if self.app_id.is_none() {
                    self.why.push(format!("{}: {e}", self.labels[i]));
                }
                if self.active == Some(i) {
                    self.active = None;
                    self.lost_at = Some(tokio::time::Instant::now());
                    tracing::warn!(
                        "driver: connection to master {} lost ({e}); waiting for a master to \
                         reconnect",
                        self.labels[i]
                    );
                } else if let crate::connection::ConnectionError::ClosedByPeer(reason) = &e {
                    // Refused before it registered: the master said why (SPEC §8.1).
                    tracing::warn!(
                        "driver: master {} closed the connection: {reason}",
                        self.labels[i]
                    );
                }
                return;
            }
        };
        match message {
            DeployMessage::RegisteredApplication(r) => {
                if self.app_id.is_none() {
                    self.app_id = Some(r.app_id.clone());
                    self.active = Some(i);
                    self.forward(MasterEvent::Registered {
                        app_id: r.app_id,
                        master: self.labels[i].clone(),
                    });
                } else {
                    tracing::warn!(
                        "driver: master {} registered the application again as {}",
                        self.labels[i],
                        r.app_id
                    );
                }
            }
            DeployMessage::ExecutorAdded(e) => self.forward(MasterEvent::ExecutorAdded(e)),
            DeployMessage::ExecutorUpdated(e) => self.forward(MasterEvent::ExecutorUpdated(e)),
            DeployMessage::WorkerRemoved(w) => self.forward(MasterEvent::WorkerRemoved(w)),
            DeployMessage::ApplicationRemoved(r) => {
                self.give_up(format!("Master removed our application: {}", r.message));
            }
            DeployMessage::MasterChanged(_) => {
                tracing::info!(
                    "driver: master has changed, new master is {}",
                    self.labels[i]
                );
                self.active = Some(i);
                self.lost_at = None;
                self.forward(MasterEvent::MasterChanged {
                    master: self.labels[i].clone(),
                });
                if let (Some(app_id), Some(h)) = (&self.app_id, &self.conns[i]) {
                    let ack = DeployMessage::MasterChangeAcknowledged(MasterChangeAcknowledged {
                        app_id: app_id.clone(),
                    });
                    if let Err(e) = h.send(ack).await {
                        tracing::warn!("driver: MasterChangeAcknowledged not sent: {e}");
                    }
                }
            }
            other => tracing::debug!("driver: ignoring {} from the master", other.name()),
        }
    }

    /// The active master's connection and the app id, or why there are none.
    fn target(&self) -> Result<(ConnectionHandle<DeployMessage>, String), DriverError> {
        match (
            self.active.and_then(|i| self.conns[i].clone()),
            &self.app_id,
        ) {
            (Some(h), Some(id)) => Ok((h, id.clone())),
            _ => Err(DriverError::NotRegistered),
        }
    }

    fn request(&self, total: u32, reply: oneshot::Sender<Result<bool, DriverError>>) {
        let (h, app_id) = match self.target() {
            Ok(t) => t,
            Err(e) => {
                let _ = reply.send(Err(e));
                return;
            }
        };
        let profile = self.config.app_description("").default_profile;
        let ask = DeployMessage::RequestExecutors(RequestExecutors {
            app_id,
            resource_profile_to_total_execs: vec![ProfileExecutors {
                profile,
                total: i32::try_from(total).unwrap_or(i32::MAX),
            }],
        });
        tokio::spawn(async move {
            let _ = reply.send(bool_answer(h.ask(ask).await));
        });
    }

    fn kill(&self, ids: Vec<String>, reply: oneshot::Sender<Result<bool, DriverError>>) {
        let (h, app_id) = match self.target() {
            Ok(t) => t,
            Err(e) => {
                let _ = reply.send(Err(e));
                return;
            }
        };
        let ask = DeployMessage::KillExecutors(KillExecutors {
            app_id,
            executor_ids: ids,
        });
        tokio::spawn(async move {
            let _ = reply.send(bool_answer(h.ask(ask).await));
        });
    }

    async fn stop(&mut self) {
        if let Ok((h, app_id)) = self.target() {
            let bye = DeployMessage::UnregisterApplication(UnregisterApplication { app_id });
            if let Err(e) = h.send(bye).await {
                tracing::warn!("driver: UnregisterApplication not sent: {e}");
            }
        }
        for h in self.conns.iter().flatten() {
            let _ = tokio::time::timeout(std::time::Duration::from_secs(2), h.close()).await;
        }
    }
}

async fn sleep_until_some(at: Option<tokio::time::Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

fn bool_answer(answer: Result<Reply<DeployMessage>, ConnectionError>) -> Result<bool, DriverError> {
    match answer {
        Ok(Reply::Bool(b)) => Ok(b),
        Ok(other) => Err(DriverError::Master(format!(
            "unexpected answer: a {} reply",
            other.tag()
        ))),
        Err(e) => Err(DriverError::Master(e.to_string())),
    }
}

/// Connects to one master, registers the application, then hands over everything received.
async fn connect_and_read(
    i: usize,
    url: SparkUrl,
    register: RegisterApplication,
    config: Arc<DriverConfig>,
    made: mpsc::UnboundedSender<(usize, Result<ConnectionHandle<DeployMessage>, String>)>,
    received: mpsc::Sender<Received>,
) {
    let conn = match open(&url, &config).await {
        Ok(c) => c,
        Err(e) => {
            let _ = made.send((i, Err(e)));
            return;
        }
    };
    let _ = made.send((i, Ok(conn.handle())));
    if let Err(e) = conn
        .send(DeployMessage::RegisterApplication(register))
        .await
    {
        tracing::warn!("driver: RegisterApplication to {url} not sent: {e}");
    }
    read_into(i, conn, received).await;
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
    i: usize,
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
