//! What the master and the worker share to talk over connections: a [`Peer`] (a connection's
//! handle and its kill switch), an [`Outbox`] that queues what the owner sends on each
//! connection's own queue, and the reading task of each connection.
//!
//! The owner of a process's state (an actor task) never waits on a socket: each connection has
//! its own write queue, bounded in bytes and written by its own task, and the outbox queues on it
//! without waiting ([`ConnectionHandle::post`]). A peer that does not read is closed as a slow
//! consumer as soon as its queue is full; no other connection notices. What the owner queues for
//! one connection is written in that order; across connections nothing waits for anything.
//!
//! Inbound, each connection's reader hands at most [`INFLIGHT`] messages to the owner's event
//! queue that the owner has not taken yet, each with a [`Credit`] the owner drops once it has
//! handled the event: a peer that sends faster than the owner works is held back on its own
//! connection (its reader stops, then TCP stops it), and the owner's queue holds at most
//! `INFLIGHT` events per connection.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::net::TcpStream;
use tokio::sync::{mpsc, Notify, OwnedSemaphorePermit, Semaphore};

use super::observe::ObservedClose;
use crate::connection::{
    Connection, ConnectionError, ConnectionHandle, Incoming, Security, Stream,
};
use crate::messages::{Addr, DeployMessage, ErrorDescription, Family};
use crate::validate::ConnId;
use crate::wire::handshake::{Established, HandshakeError, Identity};
use crate::wire::{CloseReason, Reply};

/// Events of one connection that may wait in the owner's queue, not yet handled.
pub(crate) const INFLIGHT: usize = 16;

/// A connection as the owner holds it: a handle to send on it, and a switch that closes it.
#[derive(Clone)]
pub(crate) struct Peer {
    pub(crate) handle: ConnectionHandle<DeployMessage>,
    /// The connection's id in its process.
    pub(crate) conn: ConnId,
    kill: Arc<Notify>,
}

impl Peer {
    /// Closes the connection at once (what was queued may be lost).
    pub(crate) fn kill(&self) {
        self.kill.notify_one();
    }
}

/// One event's share of its connection's [`INFLIGHT`] budget: the connection reads on once the
/// owner drops it (having handled the event).
#[derive(Debug)]
pub(crate) struct Credit {
    _permit: OwnedSemaphorePermit,
}

/// One connection's [`INFLIGHT`] budget of events not yet handled by the owner.
#[derive(Clone)]
pub(crate) struct Credits(Arc<Semaphore>);

impl Credits {
    /// A full budget.
    pub(crate) fn new() -> Self {
        Credits(Arc::new(Semaphore::new(INFLIGHT)))
    }

    /// Waits until the owner has handled enough of this connection's events, then takes a
    /// credit for the next one.
    pub(crate) async fn take(&self) -> Credit {
        match Arc::clone(&self.0).acquire_owned().await {
            Ok(permit) => Credit { _permit: permit },
            // The semaphore is never closed; should it be, nothing waits any more.
            Err(_) => std::future::pending().await,
        }
    }
}

/// Something to write.
pub(crate) enum Out {
    /// A one-way message.
    Send(Peer, DeployMessage),
    /// The answer to the peer's ask.
    Reply(Peer, u64, Reply<DeployMessage>),
    /// An ask whose answer only matters as a log line (the core decided it is an ask in the
    /// connection's version).
    Ask(Peer, DeployMessage),
    /// Fails the peer's ask.
    Fail(Peer, u64, ErrorDescription),
    /// Close gracefully once everything before is written, telling the peer why in a close
    /// envelope when there is a reason (and the handshake agreed on it).
    Close(Peer, Option<CloseReason>),
    /// Signals once every connection closed with [`Out::Close`] before has closed (each given at
    /// most the send timeout).
    Flush(tokio::sync::oneshot::Sender<()>),
}

/// A process's outbox: queues each item on its connection's own queue, at once.
#[derive(Clone)]
pub(crate) struct Outbox {
    send_timeout: Duration,
    /// Connections closing gracefully, by id, until they have closed.
    closing: Arc<Mutex<HashMap<ConnId, ConnectionHandle<DeployMessage>>>>,
}

impl Outbox {
    /// An outbox whose graceful closes take at most `send_timeout` before the connection is
    /// killed.
    pub(crate) fn spawn(send_timeout: Duration) -> Outbox {
        Outbox {
            send_timeout,
            closing: Arc::default(),
        }
    }

    /// Queues `out` on its connection without waiting. A peer whose queue is full is closed as a
    /// slow consumer.
    pub(crate) fn push(&self, out: Out) {
        let (peer, name, result) = match out {
            Out::Send(peer, m) => {
                let name = m.name();
                let r = peer.handle.post(m);
                (peer, name, r)
            }
            Out::Reply(peer, id, reply) => {
                let r = peer.handle.post_reply(id, reply);
                (peer, "reply", r)
            }
            Out::Ask(peer, m) => {
                let name = m.name();
                let r = peer.handle.post_ask(m).map(|reply| {
                    tokio::spawn(async move {
                        if let Err(e) = reply.await {
                            tracing::debug!(message = name, error = %e, "ask not answered");
                        }
                    });
                });
                (peer, name, r)
            }
            Out::Fail(peer, id, error) => {
                let r = peer.handle.post_failure(id, error);
                (peer, "failure", r)
            }
            Out::Flush(done) => {
                self.flush(done);
                return;
            }
            Out::Close(peer, reason) => {
                self.close(peer, reason);
                return;
            }
        };
        match result {
            Ok(()) => {}
            // The close is logged, with the peer and the kind, when the connection ends.
            Err(e @ ConnectionError::SlowConsumer { .. }) => tracing::debug!(
                peer = %peer.handle.negotiated().peer_id,
                conn = peer.conn,
                message = name,
                "closing the connection: {e}"
            ),
            Err(e) if e.closes_connection() => {
                tracing::debug!(message = name, error = %e, "not sent: the connection is closed");
            }
            Err(e) => tracing::warn!(message = name, error = %e, "not sent"),
        }
    }

    /// Queues a one-way message to `peer`.
    pub(crate) fn send(&self, peer: &Peer, message: impl Into<DeployMessage>) {
        self.push(Out::Send(peer.clone(), message.into()));
    }

    /// Queues the answer to `peer`'s ask `id`.
    pub(crate) fn reply(&self, peer: &Peer, id: u64, reply: Reply<DeployMessage>) {
        self.push(Out::Reply(peer.clone(), id, reply));
    }

    fn close(&self, peer: Peer, reason: Option<CloseReason>) {
        match reason {
            Some(reason) => peer.handle.close_soon_because(reason),
            None => peer.handle.close_soon(),
        }
        let closing = Arc::clone(&self.closing);
        lock(&closing).insert(peer.conn, peer.handle.clone());
        let send_timeout = self.send_timeout;
        tokio::spawn(async move {
            if tokio::time::timeout(send_timeout, peer.handle.closed())
                .await
                .is_err()
            {
                tracing::warn!(
                    peer = %peer.handle.negotiated().peer_id,
                    "a graceful close waited over {send_timeout:?}: killing that connection"
                );
                peer.kill();
                peer.handle.closed().await;
            }
            lock(&closing).remove(&peer.conn);
        });
    }

    fn flush(&self, done: tokio::sync::oneshot::Sender<()>) {
        let handles: Vec<_> = lock(&self.closing).values().cloned().collect();
        let send_timeout = self.send_timeout;
        tokio::spawn(async move {
            for handle in handles {
                let _ = tokio::time::timeout(send_timeout, handle.closed()).await;
            }
            let _ = done.send(());
        });
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// What a connection's reader hands on: a message or ask with its credit, or the close and why.
pub(crate) type Delivery = (
    ConnId,
    Result<(Incoming<DeployMessage>, Credit), ConnectionError>,
);

/// Starts reading `conn`: every message and ask goes to `deliver` as `(conn_id, Ok((incoming,
/// credit)))`, at most [`INFLIGHT`] of them with their credit not yet dropped, and the close as
/// `(conn_id, Err(why))`, after which the observer (if any) hears of it. Returns the [`Peer`] to
/// send on it.
pub(crate) fn spawn_reader(
    mut conn: Connection<DeployMessage>,
    conn_id: ConnId,
    deliver: mpsc::UnboundedSender<Delivery>,
    observed: Option<ObservedClose>,
) -> Peer {
    let kill = Arc::new(Notify::new());
    let peer = Peer {
        handle: conn.handle(),
        conn: conn_id,
        kill: Arc::clone(&kill),
    };
    let credits = Credits::new();
    tokio::spawn(async move {
        let reason = loop {
            // Wait until the owner has handled enough of this connection's events.
            let credit = tokio::select! {
                credit = credits.take() => credit,
                _ = kill.notified() => break ConnectionError::Closed,
            };
            tokio::select! {
                got = conn.recv() => match got {
                    Ok(incoming) => {
                        if deliver.send((conn_id, Ok((incoming, credit)))).is_err() {
                            break ConnectionError::Closed;
                        }
                    }
                    Err(e) => break e,
                },
                _ = kill.notified() => break ConnectionError::Closed,
            }
        };
        drop(conn);
        if let Some(observed) = observed {
            observed.closed();
        }
        let _ = deliver.send((conn_id, Err(reason)));
    });
    peer
}

/// Hands what [`spawn_reader`] delivers on `from` to an owner's event queue, as
/// `incoming(conn, message, credit)` and, at the close, `closed(conn, why)`; stops when the
/// owner is gone. The owner drops the credit once it has handled the event. The owner announces the
/// connection on `events` before calling this, so it sees the opening before any traffic.
pub(crate) fn forward_events<E: Send + 'static>(
    mut from: mpsc::UnboundedReceiver<Delivery>,
    events: mpsc::UnboundedSender<E>,
    incoming: fn(ConnId, Incoming<DeployMessage>, Credit) -> E,
    closed: fn(ConnId, ConnectionError) -> E,
) {
    tokio::spawn(async move {
        while let Some((conn, got)) = from.recv().await {
            let event = match got {
                Ok((i, credit)) => incoming(conn, i, credit),
                Err(why) => closed(conn, why),
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
