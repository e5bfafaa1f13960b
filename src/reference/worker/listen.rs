//! The worker's connections: its listener (masters after a failover, executors' watch
//! connections, UIs) and its connections to masters for registration.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;

use super::events::WEvent;
use crate::connection::{Connection, ConnectionConfig, ConnectionError};
use crate::messages::{Addr, CoarseMessage, DeployMessage};
use crate::node::worker::Purpose;
use crate::reference::observe::{ObservedClose, StrictObserver};
use crate::reference::outbox::{accept_loop, dial as dial_tcp, open, peer_info};
use crate::validate::Endpoint;
use crate::wire::handshake::{HandshakeError, Identity, Role};

/// What every connection of the worker is made with.
#[derive(Clone)]
pub(crate) struct ConnSettings {
    pub(crate) id: String,
    pub(crate) max_frame_size: usize,
    pub(crate) handshake_timeout: Duration,
    pub(crate) observer: Option<StrictObserver>,
    pub(crate) next_conn: Arc<AtomicU64>,
    /// Executors' watch connections are held until this says stop.
    pub(crate) stopping: tokio::sync::watch::Receiver<bool>,
    /// Secret and TLS of every connection.
    pub(crate) security: crate::connection::Security,
    /// The limits on accepted connections.
    pub(crate) admission: crate::connection::Admission,
}

impl ConnSettings {
    fn config(&self) -> ConnectionConfig<DeployMessage> {
        ConnectionConfig::default().with_max_frame_size(self.max_frame_size)
    }
}

/// Accepts connections until the task is aborted.
pub(crate) async fn listen(
    listener: TcpListener,
    settings: ConnSettings,
    events: mpsc::UnboundedSender<WEvent>,
) {
    let local = Identity::new(Role::Worker, settings.id.clone());
    let admitted = (&local, &settings.security);
    accept_loop(listener, &settings.admission, admitted, |stream, slot| {
        accept(stream, slot, settings.clone(), events.clone())
    })
    .await;
}

async fn accept(
    stream: TcpStream,
    slot: crate::connection::Slot,
    settings: ConnSettings,
    events: mpsc::UnboundedSender<WEvent>,
) -> Result<(), ConnectionError> {
    let _ = stream.set_nodelay(true);
    let from = stream
        .peer_addr()
        .map_or_else(|_| "?".to_string(), |a| a.to_string());
    let local = Identity::new(Role::Worker, settings.id.clone());
    let hs = settings.security.server_handshake(stream, &local, |role| {
        matches!(
            role,
            Role::Master | Role::Executor | Role::DriverClient | Role::Ui
        )
    });
    let established = tokio::time::timeout(settings.handshake_timeout, hs)
        .await
        .map_err(|_| HandshakeError::TimedOut {
            after: settings.handshake_timeout,
        })??;
    let negotiated = established.negotiated().clone();
    if negotiated.peer_role == Role::Executor {
        // An executor's watch connection: held, carrying nothing, so that each side notices the
        // other going away by the socket closing.
        let config = ConnectionConfig::<CoarseMessage>::default()
            .with_max_frame_size(settings.max_frame_size);
        let config = settings.admission.configure(config, slot, Role::Executor);
        let mut conn = Connection::establish(established, config)?;
        let mut stopping = settings.stopping.clone();
        tracing::debug!(executor = %negotiated.peer_id, "executor watch connection");
        let got = tokio::select! {
            got = conn.recv() => Some(got),
            _ = stopping.wait_for(|s| *s) => None,
        };
        if let Some(got) = got {
            match got {
                Ok(m) => {
                    // The protocol routes nothing from an executor to a worker.
                    let refusal = crate::node::authz::Refusal::Route {
                        from: Role::Executor,
                        to: Role::Worker,
                        message: crate::messages::Family::name(m.message()).to_string(),
                    };
                    let peer = crate::node::violations::Peer {
                        addr: &from,
                        role: Role::Executor,
                        id: &negotiated.peer_id,
                        conn: 0,
                    };
                    crate::node::violations::warn(
                        peer,
                        "refused (closing the watch connection)",
                        refusal.kind(),
                        &refusal,
                    );
                    conn.close_soon_because(refusal.close_reason());
                    let _ = tokio::time::timeout(Duration::from_secs(2), conn.closed()).await;
                }
                Err(e) => {
                    let peer = crate::node::violations::Peer {
                        addr: &from,
                        role: Role::Executor,
                        id: &negotiated.peer_id,
                        conn: 0,
                    };
                    crate::reference::violations::connection_ended(peer, &e);
                }
            }
        }
        return Ok(());
    }
    let (config, close) = match (&settings.observer, negotiated.peer_role) {
        (Some(observer), Role::DriverClient | Role::Ui) => {
            let local = Endpoint::new(Role::Worker, settings.id.clone());
            let (inspector, close) = observer.deploy_inspector(
                local,
                negotiated.peer_role,
                &negotiated.peer_id,
                false,
                negotiated.version,
            );
            (settings.config().with_inspector(inspector), Some(close))
        }
        _ => (settings.config(), None),
    };
    let config = settings
        .admission
        .configure(config, slot, negotiated.peer_role);
    let conn = Connection::establish(established, config)?;
    register(conn, from, Purpose::Inbound, &settings, &events, close);
    Ok(())
}

fn register(
    conn: Connection<DeployMessage>,
    addr: String,
    purpose: Purpose,
    settings: &ConnSettings,
    events: &mpsc::UnboundedSender<WEvent>,
    close: Option<ObservedClose>,
) {
    let conn_id = settings.next_conn.fetch_add(1, Ordering::Relaxed);
    let peer = peer_info(&conn.handle(), addr);
    open(conn, conn_id, (peer, purpose), events, close);
}

/// Dials master `addr` to register; the loop hears of the connection, or of nothing when the
/// master cannot be reached (the retry timer covers that).
pub(crate) fn dial_master(
    addr: Addr,
    settings: ConnSettings,
    events: mpsc::UnboundedSender<WEvent>,
) {
    tokio::spawn(async move {
        let result = async {
            let local = Identity::new(Role::Worker, settings.id.clone());
            let established = dial_tcp(
                &addr,
                &local,
                &settings.security,
                settings.handshake_timeout,
            )
            .await?;
            Connection::establish(established, settings.config())
        }
        .await;
        match result {
            Ok(conn) => {
                let at = format!("{}:{}", addr.host, addr.port);
                register(
                    conn,
                    at,
                    Purpose::Registration(addr),
                    &settings,
                    &events,
                    None,
                )
            }
            Err(e) => {
                let reason = match e {
                    ConnectionError::Connect { .. } => e.to_string(),
                    other => format!("cannot register with {addr}: {other}"),
                };
                let _ = events.send(WEvent::DialFailed(Purpose::Registration(addr), reason));
            }
        }
    });
}
