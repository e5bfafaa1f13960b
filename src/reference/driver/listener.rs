//! The driver's listening side: executors' connections, each handshaken, tapped and handed to
//! the backend's [driver](crate::reference::runtime), which reads it.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;

use super::events::BackendEvent;
use super::DriverConfig;
use crate::connection::{Connection, ConnectionConfig, DEFAULT_HANDSHAKE_TIMEOUT};
use crate::messages::CoarseMessage;
use crate::reference::outbox::{open, peer_info};
use crate::validate::Endpoint;
use crate::wire::handshake::{Identity, Role};

/// Accepts executors until the backend goes away.
pub(super) async fn accept_loop(
    listener: TcpListener,
    config: Arc<DriverConfig>,
    backend: mpsc::UnboundedSender<BackendEvent>,
) {
    let keys = Arc::new(AtomicU64::new(1));
    let admission = crate::connection::Admission::new(config.limits);
    let local = Identity::new(Role::Driver, config.id.clone());
    loop {
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            _ = backend.closed() => return,
        };
        let (stream, peer) = match accepted {
            Ok(accepted) => accepted,
            Err(e) => {
                // Out of descriptors or the like: wait a little rather than spin.
                tracing::warn!("driver: accept failed: {e}");
                tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                continue;
            }
        };
        if backend.is_closed() {
            return;
        }
        let Some((stream, slot)) = admission.admit(stream, &local, &config.security) else {
            tracing::debug!("driver: connection from {peer} refused: too many connections");
            continue;
        };
        let key = keys.fetch_add(1, Ordering::Relaxed);
        tracing::debug!("driver: connection {key} from {peer}");
        let admitted = (admission.clone(), slot);
        tokio::spawn(serve(
            stream,
            key,
            Arc::clone(&config),
            backend.clone(),
            admitted,
        ));
    }
}

/// One executor connection: handshake, then every message to the backend.
async fn serve(
    stream: TcpStream,
    key: u64,
    config: Arc<DriverConfig>,
    backend: mpsc::UnboundedSender<BackendEvent>,
    (admission, slot): (crate::connection::Admission, crate::connection::Slot),
) {
    let _ = stream.set_nodelay(true);
    let addr = stream
        .peer_addr()
        .map_or_else(|_| "?".to_string(), |a| a.to_string());
    let local = Identity::new(Role::Driver, config.id.clone());
    let established = tokio::time::timeout(
        DEFAULT_HANDSHAKE_TIMEOUT,
        config
            .security
            .server_handshake(stream, &local, |role| role == Role::Executor),
    )
    .await;
    let established = match established {
        Ok(Ok(e)) => e,
        Ok(Err(e)) => {
            tracing::warn!("driver: handshake refused or failed: {e}");
            return;
        }
        Err(_) => {
            tracing::warn!("driver: handshake timed out");
            return;
        }
    };
    let peer = established.negotiated().peer_id.clone();
    let version = established.negotiated().version;
    let tap = config.observer.as_ref().map(|o| {
        o.tap(
            Endpoint::new(Role::Driver, config.id.clone()),
            Endpoint::new(Role::Executor, peer.clone()),
            false,
            version,
        )
    });
    let settings =
        ConnectionConfig::<CoarseMessage>::default().with_max_frame_size(config.max_frame_size());
    let mut settings = admission.configure(settings, slot, Role::Executor);
    if let Some(tap) = &tap {
        tap.opened();
        settings = settings.with_inspector(tap.clone());
    }
    let conn = match Connection::establish(established, settings) {
        Ok(c) => c,
        Err(e) => {
            tracing::warn!("driver: connection from {peer} failed: {e}");
            if let Some(tap) = &tap {
                tap.closed();
            }
            return;
        }
    };
    if let Some(tap) = tap {
        let handle = conn.handle();
        tokio::spawn(async move {
            handle.closed().await;
            tap.closed();
        });
    }
    let info = peer_info(&conn.handle(), addr);
    open(conn, key, (info, ()), &backend, None);
}
