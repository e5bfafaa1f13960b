//! The application client's part of the [driver](crate::reference::runtime): it feeds
//! [`AppClientCore`] (in `node::driver`, which registers the application with the masters,
//! retries, gives up, follows MasterChanged and forwards what the masters say to the scheduler
//! backend) the masters' connections, the callers' requests and its timer, and carries out its
//! effects.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::{mpsc, oneshot};

use super::events::{Backend, Msg};
use super::{add_counters, DriverConfig, DriverError};
use crate::connection::{
    Connection, ConnectionConfig, ConnectionError, ConnectionHandle, Counters,
    DEFAULT_HANDSHAKE_TIMEOUT,
};
use crate::messages::deploy::RegisterApplication;
use crate::messages::{ApplicationDescription, DeployMessage, EndpointRef};
use crate::node::driver::{
    AppClientCore, ClientConfig, ClientEffect, ClientInput, ClientLink, RequestFailed,
};
use crate::node::url::SparkUrl;
use crate::reference::outbox::{open as open_conn, peer_info};
use crate::reference::runtime::{now, Event, Events, Io, Role, Runtime};
use crate::reference::url::tcp_connect;
use crate::validate::Endpoint;
use crate::wire::handshake::{Identity, Role as PeerRole};
use tokio::net::TcpListener;

/// How long stopping waits for the masters' connections to close.
const CLOSE_GRACE: Duration = Duration::from_secs(2);

/// The callers' requests.
pub(super) enum Cmd {
    Request {
        total: u32,
        reply: oneshot::Sender<Result<bool, DriverError>>,
    },
    Kill {
        ids: Vec<String>,
        reply: oneshot::Sender<Result<bool, DriverError>>,
    },
}

/// The backend's handle on the client.
pub(super) struct AppClient {
    events: Events<ClientIo>,
    /// Stops the client; the sender inside is told once it stopped.
    stop: Mutex<Option<oneshot::Sender<oneshot::Sender<()>>>>,
    handles: Arc<Mutex<Vec<ConnectionHandle<DeployMessage>>>>,
}

impl AppClient {
    /// Asks the active master for `total` executors; the answer goes to `reply`.
    pub(super) fn request_executors(
        &self,
        total: u32,
        reply: oneshot::Sender<Result<bool, DriverError>>,
    ) {
        self.command(Cmd::Request { total, reply });
    }

    /// Asks the active master to kill executors; the answer goes to `reply`.
    pub(super) fn kill_executors(
        &self,
        ids: Vec<String>,
        reply: oneshot::Sender<Result<bool, DriverError>>,
    ) {
        self.command(Cmd::Kill { ids, reply });
    }

    fn command(&self, cmd: Cmd) {
        if let Err(mpsc::error::SendError(Event::Own(cmd))) = self.events.send(Event::Own(cmd)) {
            let (Cmd::Request { reply, .. } | Cmd::Kill { reply, .. }) = cmd;
            let _ = reply.send(Err(DriverError::Stopped));
        }
    }

    /// Unregisters the application and closes the masters' connections.
    pub(super) async fn stop(&self) {
        let stop = lock(&self.stop).take();
        if let Some(stop) = stop {
            let (done, wait) = oneshot::channel();
            if stop.send(done).is_ok() {
                let _ = wait.await;
            }
        }
    }

    /// Traffic of every master connection.
    pub(super) fn counters(&self) -> Counters {
        let mut all = Counters::default();
        for h in lock(&self.handles).iter() {
            add_counters(&mut all, &h.counters());
        }
        all
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Starts the client: one connection per master, and `listener` for masters that reach the
/// application after a failover (at `driver`, the address registered).
pub(super) fn spawn(
    masters: Vec<SparkUrl>,
    desc: ApplicationDescription,
    driver: EndpointRef,
    listener: TcpListener,
    config: Arc<DriverConfig>,
    backend: Backend,
) -> AppClient {
    let handles = Arc::new(Mutex::new(Vec::new()));
    let rules = ClientConfig {
        masters: config.masters.clone(),
        register: RegisterApplication {
            app_description: desc,
            driver,
            spark_release: None,
        },
        registration_timeout: config.registration_timeout,
        registration_retry: config.registration_retry,
    };
    let role = ClientIo {
        masters,
        config: Arc::clone(&config),
        backend,
        conns: Conns {
            handles: Arc::clone(&handles),
            next: Arc::new(AtomicU64::new(0)),
        },
        requests: HashMap::new(),
        next_request: 0,
    };
    let mut rt = Runtime::new(AppClientCore::new(rules, now()), role, config.send_timeout);
    let events = rt.events();
    tokio::spawn(accept_masters(
        listener,
        Arc::clone(&config),
        rt.role.conns.clone(),
        events.clone(),
    ));
    let (stop, stopped) = oneshot::channel();
    tokio::spawn(async move {
        let done = rt.run(async move { stopped.await.ok() }).await;
        // Unregisters, then waits a little for the masters' connections to close.
        rt.io.handle(ClientInput::Stop);
        let _ = rt.drain().await;
        rt.io.peers.wait_closing(CLOSE_GRACE).await;
        if let Some(done) = done {
            let _ = done.send(());
        }
    });
    AppClient {
        events,
        stop: Mutex::new(Some(stop)),
        handles,
    }
}

/// How the client numbers its connections and keeps their handles for the traffic counters.
#[derive(Clone)]
struct Conns {
    handles: Arc<Mutex<Vec<ConnectionHandle<DeployMessage>>>>,
    next: Arc<AtomicU64>,
}

impl Conns {
    /// Hands a master's connection to the client, for `link`.
    fn open(
        &self,
        conn: Connection<DeployMessage>,
        (link, addr): (ClientLink, String),
        events: &Events<ClientIo>,
    ) {
        lock(&self.handles).push(conn.handle());
        let peer = peer_info(&conn.handle(), addr);
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        open_conn(conn, id, (peer, link), events, None);
    }
}

/// The client's IO: the masters' addresses, the backend it reports to, the callers' requests.
pub(super) struct ClientIo {
    masters: Vec<SparkUrl>,
    config: Arc<DriverConfig>,
    backend: Backend,
    conns: Conns,
    requests: HashMap<u64, oneshot::Sender<Result<bool, DriverError>>>,
    next_request: u64,
}

impl ClientIo {
    fn request(&mut self, reply: oneshot::Sender<Result<bool, DriverError>>) -> u64 {
        let request = self.next_request;
        self.next_request += 1;
        self.requests.insert(request, reply);
        request
    }
}

impl Role for ClientIo {
    type Message = DeployMessage;
    type Core = AppClientCore;
    type Origin = ClientLink;
    type Event = Cmd;
    type Exit = Option<oneshot::Sender<()>>;

    async fn effect(&mut self, io: &mut Io<Self>, effect: ClientEffect) -> Option<Self::Exit> {
        match effect {
            ClientEffect::Dial { master } => {
                let url = self.masters.get(master).cloned()?;
                let (config, conns, events) = (
                    Arc::clone(&self.config),
                    self.conns.clone(),
                    io.events.clone(),
                );
                let link = ClientLink::Master(master);
                tokio::spawn(async move {
                    match open(&url, &config).await {
                        Ok(conn) => conns.open(conn, (link, url.socket_address()), &events),
                        Err(error) => {
                            let _ = events.send(Event::DialFailed(link, error));
                        }
                    }
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
        None
    }

    async fn event(&mut self, io: &mut Io<Self>, cmd: Cmd) -> Option<Self::Exit> {
        let input = match cmd {
            Cmd::Request { total, reply } => ClientInput::RequestExecutors {
                request: self.request(reply),
                total,
            },
            Cmd::Kill { ids, reply } => ClientInput::KillExecutors {
                request: self.request(reply),
                ids,
            },
        };
        io.handle(input);
        None
    }
}

/// Accepts masters that dial the application (a master that took over after a failover and
/// announces itself with MasterChanged), until the client is gone.
async fn accept_masters(
    listener: TcpListener,
    config: Arc<DriverConfig>,
    conns: Conns,
    client: Events<ClientIo>,
) {
    loop {
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            _ = client.closed() => return,
        };
        let (stream, addr) = match accepted {
            Ok((stream, from)) => (stream, from.to_string()),
            Err(e) => {
                tracing::warn!("driver: accept failed on the application's address: {e}");
                tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                continue;
            }
        };
        let config = Arc::clone(&config);
        let (conns, client) = (conns.clone(), client.clone());
        tokio::spawn(async move {
            let _ = stream.set_nodelay(true);
            let local = Identity::new(PeerRole::AppClient, config.id.clone());
            let hs = config
                .security
                .server_handshake(stream, &local, |role| role == PeerRole::Master);
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
                Ok(conn) => conns.open(conn, (ClientLink::Adopted, addr), &client),
                Err(e) => tracing::warn!("driver: connection from master {peer} failed: {e}"),
            }
        });
    }
}

/// The handshake as an application client, with the connection tapped when observed.
async fn open(url: &SparkUrl, config: &DriverConfig) -> Result<Connection<DeployMessage>, String> {
    let stream = tcp_connect(url, config.registration_timeout).await?;
    let local = Identity::new(PeerRole::AppClient, config.id.clone());
    let established = tokio::time::timeout(
        DEFAULT_HANDSHAKE_TIMEOUT,
        config.security.client_handshake(stream, &local, &url.host),
    )
    .await
    .map_err(|_| "handshake timed out".to_string())?
    .map_err(|e| e.to_string())?;
    let peer_role = established.negotiated().peer_role;
    if peer_role != PeerRole::Master {
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
            Endpoint::new(PeerRole::AppClient, config.id.clone()),
            Endpoint::new(PeerRole::Master, peer),
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

/// Why the masters say application `app_id` waits (SPEC §16): asked of each master in turn, as
/// a `ui` peer (`RequestMasterState`), the first reason one gives; `None` when none gives one (a
/// master that does not tell, such as a revision-1 one, or none answers within `within`).
pub(crate) async fn waiting_reason(
    config: &DriverConfig,
    app_id: &str,
    within: Duration,
) -> Option<String> {
    for m in &config.masters {
        let Ok(url) = SparkUrl::parse(m) else {
            continue;
        };
        let asked = tokio::time::timeout(within, ask_waiting_reason(&url, config, app_id));
        if let Ok(Some(reason)) = asked.await {
            return Some(reason);
        }
    }
    None
}

async fn ask_waiting_reason(url: &SparkUrl, config: &DriverConfig, app_id: &str) -> Option<String> {
    let stream = tcp_connect(url, DEFAULT_HANDSHAKE_TIMEOUT).await.ok()?;
    let local = Identity::new(PeerRole::Ui, config.id.clone());
    let established = config
        .security
        .client_handshake(stream, &local, &url.host)
        .await
        .ok()?;
    let conn =
        Connection::<DeployMessage>::establish(established, ConnectionConfig::default()).ok()?;
    let answer = conn
        .ask(crate::messages::deploy::RequestMasterState::new().into())
        .await;
    conn.close().await;
    match answer {
        Ok(crate::wire::Reply::Message(DeployMessage::MasterStateResponse(s))) => s
            .active_apps
            .into_iter()
            .find(|a| a.id == app_id)
            .and_then(|a| a.waiting_reason),
        _ => None,
    }
}
