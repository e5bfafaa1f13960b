//! The master's connections: the listener, the handshake of each client, and the dialling of
//! workers and applications after a failover.

use crate::validate::ConnId;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use std::net::SocketAddr;
use std::sync::Mutex;

use tokio::io::{AsyncRead, AsyncWrite, DuplexStream};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;

use super::events::Event;
use crate::connection::{Connection, ConnectionConfig, ConnectionError};
use crate::messages::{Addr, DeployMessage, Version};
use crate::node::master::DialTarget;
use crate::reference::observe::{ObservedClose, StrictObserver};
use crate::reference::outbox::{accept_loop, dial as dial_tcp, open, peer_info};
use crate::validate::Endpoint;
use crate::wire::handshake::{HandshakeError, Identity, Role};

/// What every connection of the master is made with.
#[derive(Clone)]
pub(crate) struct ConnSettings {
    /// The master's id in handshakes and for the validator (`master-host:port`).
    pub(crate) id: String,
    pub(crate) max_frame_size: usize,
    pub(crate) handshake_timeout: Duration,
    pub(crate) observer: Option<StrictObserver>,
    pub(crate) next_conn: Arc<AtomicU64>,
    /// Versions spoken in handshakes.
    pub(crate) versions: Vec<Version>,
    /// Secret, admin secret and TLS of every connection.
    pub(crate) security: crate::connection::Security,
    /// The limits on accepted connections.
    pub(crate) admission: crate::connection::Admission,
    /// Where a dial that fails goes next (a recovered Spark-wire peer).
    pub(crate) spark_peers: super::SparkPeerDial,
}

impl ConnSettings {
    fn next_id(&self) -> ConnId {
        self.next_conn.fetch_add(1, Ordering::Relaxed)
    }

    fn config(
        &self,
        peer_role: Role,
        peer_id: &str,
        dialled: bool,
        version: crate::messages::Version,
    ) -> (ConnectionConfig<DeployMessage>, Option<ObservedClose>) {
        let config = ConnectionConfig::default().with_max_frame_size(self.max_frame_size);
        match &self.observer {
            Some(observer) => {
                let local = Endpoint::new(Role::Master, self.id.clone());
                let (inspector, close) =
                    observer.deploy_inspector(local, peer_role, peer_id, dialled, version);
                (config.with_inspector(inspector), Some(close))
            }
            None => (config, None),
        }
    }
}

/// Accepts clients until the task is aborted.
pub(crate) async fn listen(
    listener: TcpListener,
    settings: ConnSettings,
    events: mpsc::UnboundedSender<Event>,
) {
    let local = Identity {
        versions: settings.versions.clone(),
        ..Identity::new(Role::Master, settings.id.clone())
    };
    let admitted = (&local, &settings.security);
    accept_loop(listener, &settings.admission, admitted, |stream, slot| {
        let (settings, events) = (settings.clone(), events.clone());
        async move { accept(stream, slot, &settings, &events).await }
    })
    .await;
}

async fn accept(
    stream: TcpStream,
    slot: crate::connection::Slot,
    settings: &ConnSettings,
    events: &mpsc::UnboundedSender<Event>,
) -> Result<(), ConnectionError> {
    let _ = stream.set_nodelay(true);
    let addr = stream
        .peer_addr()
        .map_or_else(|_| "?".to_string(), |a| a.to_string());
    take(stream, addr, slot, settings, events).await
}

/// The handshake and the start of a connection accepted on any stream (a TCP socket, or an
/// in-process stream through the master's [`Door`]), holding its admission `slot`.
async fn take<IO>(
    stream: IO,
    addr: String,
    slot: crate::connection::Slot,
    settings: &ConnSettings,
    events: &mpsc::UnboundedSender<Event>,
) -> Result<(), ConnectionError>
where
    IO: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let local = Identity {
        versions: settings.versions.clone(),
        ..Identity::new(Role::Master, settings.id.clone())
    };
    let handshake = settings.security.server_handshake(stream, &local, |role| {
        matches!(
            role,
            Role::Worker | Role::AppClient | Role::DriverClient | Role::Ui
        )
    });
    let established = match tokio::time::timeout(settings.handshake_timeout, handshake).await {
        Ok(r) => r?,
        Err(_) => {
            return Err(HandshakeError::TimedOut {
                after: settings.handshake_timeout,
            }
            .into())
        }
    };
    let negotiated = established.negotiated().clone();
    let (config, close) = settings.config(
        negotiated.peer_role,
        &negotiated.peer_id,
        false,
        negotiated.version,
    );
    let config = settings
        .admission
        .configure(config, slot, negotiated.peer_role);
    let conn = Connection::establish(established, config)?;
    register(conn, addr, settings, events, close, None);
    Ok(())
}

fn register(
    conn: Connection<DeployMessage>,
    addr: String,
    settings: &ConnSettings,
    events: &mpsc::UnboundedSender<Event>,
    close: Option<ObservedClose>,
    target: Option<DialTarget>,
) {
    let peer = peer_info(&conn.handle(), addr);
    open(conn, settings.next_id(), (peer, target), events, close);
}

/// Dials `addr` as the master and hands the connection to the actor for `target`.
pub(crate) fn dial(
    addr: Addr,
    target: DialTarget,
    settings: ConnSettings,
    events: mpsc::UnboundedSender<Event>,
) {
    // A peer whose record says it speaks Spark's wire (SPEC §15.5) is told over that wire at
    // once, without a sparkwire handshake it would refuse.
    let spark = settings
        .spark_peers
        .with_book(|b| b.release_at(&addr).map(str::to_string));
    if let Some(release) = spark {
        if settings.spark_peers.hand_over(addr.clone(), target.clone()) {
            tracing::info!(
                "{addr} speaks Spark's wire (Spark {release}, as stored): announcing the new \
                 master over it"
            );
            return;
        }
    }
    tokio::spawn(async move {
        let result = async {
            let local = Identity {
                versions: settings.versions.clone(),
                ..Identity::new(Role::Master, settings.id.clone())
            };
            let established = dial_tcp(
                &addr,
                &local,
                &settings.security,
                settings.handshake_timeout,
            )
            .await?;
            let negotiated = established.negotiated().clone();
            let (config, close) = settings.config(
                negotiated.peer_role,
                &negotiated.peer_id,
                true,
                negotiated.version,
            );
            let conn = Connection::establish(established, config)?;
            Ok::<_, ConnectionError>((conn, close))
        }
        .await;
        match result {
            Ok((conn, close)) => {
                let at = format!("{}:{}", addr.host, addr.port);
                register(conn, at, &settings, &events, close, Some(target))
            }
            Err(e) => {
                if settings.spark_peers.hand_over(addr.clone(), target.clone()) {
                    tracing::info!(
                        "{addr} does not speak sparkwire's handshake ({e}): announcing the new \
                         master over Spark's wire"
                    );
                    return;
                }
                let whom = match &target {
                    DialTarget::Worker(id) => format!("worker {id}"),
                    DialTarget::App(id) => format!("application {id}"),
                };
                tracing::info!("cannot reach {whom} at {addr} to announce the new master: {e}");
            }
        }
    });
}

/// Bytes an in-process stream holds in each direction before its writer waits for its reader.
const IN_PROCESS_BUFFER: usize = 64 * 1024;

/// A running master's door for clients in its own process (the Spark-wire front): an in-memory
/// stream ([`tokio::io::duplex`]) that the master takes exactly as a socket its listener
/// accepted (the same admission under its connection limit, the same handshake with its secret,
/// the same per-connection limits, timeouts, routes and redaction), with no file descriptor, no
/// loopback TCP and no kernel in between.
pub(crate) struct Door {
    /// The address the master's listener is bound to.
    addr: SocketAddr,
    settings: ConnSettings,
    events: mpsc::UnboundedSender<Event>,
}

/// The doors of the masters running in this process.
static DOORS: Mutex<Vec<Arc<Door>>> = Mutex::new(Vec::new());

fn doors() -> std::sync::MutexGuard<'static, Vec<Arc<Door>>> {
    DOORS.lock().unwrap_or_else(|e| e.into_inner())
}

/// Keeps a master's [`Door`] open; dropping it (the master stopped) closes it.
pub(crate) struct DoorOpen(Arc<Door>);

impl Drop for DoorOpen {
    fn drop(&mut self) {
        doors().retain(|d| !Arc::ptr_eq(d, &self.0));
    }
}

/// Opens the door of the master listening on `addr` until the returned guard is dropped.
pub(crate) fn open_door(
    addr: SocketAddr,
    settings: ConnSettings,
    events: mpsc::UnboundedSender<Event>,
) -> DoorOpen {
    let door = Arc::new(Door {
        addr,
        settings,
        events,
    });
    doors().push(Arc::clone(&door));
    DoorOpen(door)
}

/// Whether a master bound to `bound` is the one a client dialling `to` reaches: the same port,
/// and the same address or a listener on every address.
fn reaches(bound: SocketAddr, to: SocketAddr) -> bool {
    bound.port() == to.port() && (bound.ip() == to.ip() || bound.ip().is_unspecified())
}

/// A stream to the master of this process that listens on `master`, taken by it as an accepted
/// connection (see [`Door`]); `peer` names the client in the master's logs. `None` when no
/// master of this process listens there (dial it over TCP then).
pub(crate) fn connect_in_process(master: SocketAddr, peer: &str) -> Option<DuplexStream> {
    // The newest first: a master started on the port of one still closing is the one reached.
    let door = doors()
        .iter()
        .rev()
        .find(|d| reaches(d.addr, master))
        .cloned()?;
    let (client, server) = tokio::io::duplex(IN_PROCESS_BUFFER);
    let settings = &door.settings;
    let local = Identity {
        versions: settings.versions.clone(),
        ..Identity::new(Role::Master, settings.id.clone())
    };
    // One over the limit is refused in its handshake, as a socket would be.
    let Some((server, slot)) = settings.admission.admit(server, &local, &settings.security) else {
        tracing::debug!(peer, "in-process connection refused: too many connections");
        return Some(client);
    };
    let (settings, events, peer) = (settings.clone(), door.events.clone(), peer.to_string());
    tokio::spawn(async move {
        if let Err(e) = take(server, peer.clone(), slot, &settings, &events).await {
            tracing::debug!(%peer, error = %e, "in-process connection refused");
        }
    });
    Some(client)
}
