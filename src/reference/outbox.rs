//! What the master and the worker share to talk over connections: a [`Peer`] (a connection's
//! handle and its kill switch), an [`Outbox`] that sends in the order the owner decided, and the
//! reading task of each connection.
//!
//! The owner of a process's state (an actor task) never waits on a socket: it queues what it
//! sends in its outbox, whose task writes it in order. Order matters across connections too
//! (LaunchExecutor to a worker before ExecutorAdded to its application), so one task serves all of
//! a process's connections. A peer that does not read is not allowed to stall it: a send that
//! waits longer than the send timeout kills that connection.

use std::sync::Arc;
use std::time::Duration;

use tokio::net::TcpStream;
use tokio::sync::{mpsc, Notify};

use super::observe::ObservedClose;
use crate::connection::{
    Connection, ConnectionError, ConnectionHandle, Incoming, Security, Stream,
};
use crate::definition::{Definition, MessageKind};
use crate::messages::{Addr, DeployMessage, ErrorDescription, Family};
use crate::validate::ConnId;
use crate::wire::handshake::{Established, HandshakeError, Identity};
use crate::wire::Reply;

/// A connection as the owner holds it: a handle to send on it, and a switch that closes it.
#[derive(Clone)]
pub(crate) struct Peer {
    pub(crate) handle: ConnectionHandle<DeployMessage>,
    kill: Arc<Notify>,
}

impl Peer {
    /// Closes the connection at once (what was queued may be lost).
    pub(crate) fn kill(&self) {
        self.kill.notify_one();
    }
}

/// Something to write.
pub(crate) enum Out {
    /// A one-way message.
    Send(Peer, DeployMessage),
    /// The answer to the peer's ask.
    Reply(Peer, u64, Reply<DeployMessage>),
    /// An ask whose answer only matters as a log line; later items wait for it (bounded by the
    /// ask timeout), so that asks and sends stay in order. Sent one-way on a connection whose
    /// version has the message as a send.
    Ask(Peer, DeployMessage),
    /// Fails the peer's ask.
    Fail(Peer, u64, ErrorDescription),
    /// Close gracefully once everything before is written.
    Close(Peer),
    /// Signals once everything before is written.
    Flush(tokio::sync::oneshot::Sender<()>),
}

/// The sending side of a process's outbox.
#[derive(Clone)]
pub(crate) struct Outbox {
    tx: mpsc::UnboundedSender<Out>,
}

impl Outbox {
    /// Starts the outbox task.
    pub(crate) fn spawn(send_timeout: Duration) -> Outbox {
        let (tx, mut rx) = mpsc::unbounded_channel::<Out>();
        tokio::spawn(async move {
            while let Some(out) = rx.recv().await {
                write(out, send_timeout).await;
            }
        });
        Outbox { tx }
    }

    /// Queues `out`; dropped silently when the task ended (the process is stopping).
    pub(crate) fn push(&self, out: Out) {
        let _ = self.tx.send(out);
    }

    /// Queues a one-way message to `peer`.
    pub(crate) fn send(&self, peer: &Peer, message: impl Into<DeployMessage>) {
        self.push(Out::Send(peer.clone(), message.into()));
    }

    /// Queues the answer to `peer`'s ask `id`.
    pub(crate) fn reply(&self, peer: &Peer, id: u64, reply: Reply<DeployMessage>) {
        self.push(Out::Reply(peer.clone(), id, reply));
    }
}

/// Whether the connection's version makes `m` a one-way message though newer versions ask it
/// (ExecutorStateChanged in version 1).
fn one_way_in(peer: &Peer, m: &DeployMessage) -> bool {
    let version = peer.handle.negotiated().version;
    Definition::builtin()
        .message(DeployMessage::FAMILY, m.name())
        .is_some_and(|d| d.kind_in(version) == MessageKind::Send)
}

async fn write(out: Out, send_timeout: Duration) {
    let (peer, result) = match out {
        Out::Send(peer, m) => {
            let name = m.name();
            let r = tokio::time::timeout(send_timeout, peer.handle.send(m)).await;
            (peer, r.map(|r| r.map_err(|e| (name, e))))
        }
        Out::Reply(peer, id, reply) => {
            let r = tokio::time::timeout(send_timeout, peer.handle.reply(id, reply)).await;
            (peer, r.map(|r| r.map_err(|e| ("reply", e))))
        }
        Out::Ask(peer, m) if one_way_in(&peer, &m) => {
            let name = m.name();
            let r = tokio::time::timeout(send_timeout, peer.handle.send(m)).await;
            (peer, r.map(|r| r.map_err(|e| (name, e))))
        }
        Out::Ask(peer, m) => {
            let name = m.name();
            let r = tokio::time::timeout(send_timeout, peer.handle.ask(m)).await;
            let r = r.map(|r| r.map(|_| ()).map_err(|e| (name, e)));
            (peer, r)
        }
        Out::Fail(peer, id, error) => {
            let r = tokio::time::timeout(send_timeout, peer.handle.fail(id, error)).await;
            (peer, r.map(|r| r.map_err(|e| ("failure", e))))
        }
        Out::Flush(done) => {
            let _ = done.send(());
            return;
        }
        Out::Close(peer) => {
            if tokio::time::timeout(send_timeout, peer.handle.close())
                .await
                .is_err()
            {
                peer.kill();
            }
            return;
        }
    };
    match result {
        Ok(Ok(())) => {}
        Ok(Err((name, e))) if e.closes_connection() => {
            tracing::debug!(message = name, error = %e, "not sent: the connection is closed");
        }
        Ok(Err((name, e))) => tracing::warn!(message = name, error = %e, "not sent"),
        Err(_) => {
            tracing::warn!(
                peer = %peer.handle.negotiated().peer_id,
                "a send waited over {send_timeout:?}: closing that connection"
            );
            peer.kill();
        }
    }
}

/// Starts reading `conn`: every message and ask goes to `deliver` as `(conn_id, Some(incoming))`,
/// and the close as `(conn_id, None)`, after which the observer (if any) hears of it. Returns the
/// [`Peer`] to send on it.
pub(crate) fn spawn_reader(
    mut conn: Connection<DeployMessage>,
    conn_id: ConnId,
    deliver: mpsc::UnboundedSender<(ConnId, Option<Incoming<DeployMessage>>)>,
    observed: Option<ObservedClose>,
) -> Peer {
    let kill = Arc::new(Notify::new());
    let peer = Peer {
        handle: conn.handle(),
        kill: Arc::clone(&kill),
    };
    tokio::spawn(async move {
        let reason = loop {
            tokio::select! {
                got = conn.recv() => match got {
                    Ok(incoming) => {
                        if deliver.send((conn_id, Some(incoming))).is_err() {
                            break ConnectionError::Closed;
                        }
                    }
                    Err(e) => break e,
                },
                _ = kill.notified() => break ConnectionError::Closed,
            }
        };
        tracing::debug!(conn = conn_id, reason = %reason, "connection ended");
        drop(conn);
        if let Some(observed) = observed {
            observed.closed();
        }
        let _ = deliver.send((conn_id, None));
    });
    peer
}

/// Hands what [`spawn_reader`] delivers on `from` to an owner's event queue, as
/// `incoming(conn, message)` and, at the close, `closed(conn)`; stops when the owner is gone.
/// The owner announces the connection on `events` before calling this, so it sees the opening
/// before any traffic.
pub(crate) fn forward_events<E: Send + 'static>(
    mut from: mpsc::UnboundedReceiver<(ConnId, Option<Incoming<DeployMessage>>)>,
    events: mpsc::UnboundedSender<E>,
    incoming: fn(ConnId, Incoming<DeployMessage>) -> E,
    closed: fn(ConnId) -> E,
) {
    tokio::spawn(async move {
        while let Some((conn, got)) = from.recv().await {
            let event = match got {
                Some(i) => incoming(conn, i),
                None => closed(conn),
            };
            if events.send(event).is_err() {
                break;
            }
        }
    });
}

/// Connects to `addr` over TCP and does the client's handshake as `local` (with `security`'s
/// TLS and secrets), each step bounded by `timeout`.
pub(crate) async fn dial(
    addr: &Addr,
    local: &Identity,
    security: &Security,
    timeout: Duration,
) -> Result<Established<Stream<TcpStream>>, ConnectionError> {
    let port = u16::try_from(addr.port).map_err(|_| ConnectionError::Connect {
        address: format!("{}:{}", addr.host, addr.port),
        reason: "the port is out of range".into(),
    })?;
    let stream = crate::connection::connect_tcp(&addr.host, port, timeout).await?;
    let handshake = security.client_handshake(stream, local, &addr.host);
    let established = tokio::time::timeout(timeout, handshake)
        .await
        .map_err(|_| HandshakeError::TimedOut { after: timeout })??;
    Ok(established)
}
