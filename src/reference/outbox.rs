//! A core's connections as its [driver](super::runtime) holds them: a [`Peer`] (a connection's
//! handle and its kill switch), the table of open ones ([`Peers`]), which writes what the core
//! decided on each connection's own queue, and the receiving side of each connection
//! ([`Reader`], handed to the driver by [`open`]).
//!
//! The owner of a process's state (the driver's task) never waits on a socket: each connection
//! has its own write queue, bounded in bytes and written by its own task, and [`Peers::write`]
//! queues on it without waiting ([`ConnectionHandle::post`]). A peer that does not read is closed
//! as a slow consumer as soon as its queue is full; no other connection notices. What the owner
//! queues for one connection is written in that order; across connections nothing waits.
//!
//! Inbound, the owner reads each connection itself: [`open`] hands it a [`Reader`] with the
//! connection, which the driver polls among its others ([`Readers`]) whenever it waits for an
//! event, so that a message goes from the connection's own reading task straight to the owner,
//! with no task between them. The owner takes a connection's next message only once it has
//! handled the one before: a peer that sends faster than the owner works fills its connection's
//! own bounded queue and is then held back by TCP, alone.

use std::collections::HashMap;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use futures_util::stream::{BoxStream, SelectAll};
use futures_util::task::AtomicWaker;
use futures_util::StreamExt;
use tokio::net::TcpStream;
use tokio::sync::mpsc;

use super::observe::ObservedClose;
use super::runtime::Event;
use crate::connection::{
    Admission, Connection, ConnectionError, ConnectionHandle, Counters, Incoming, Security, Slot,
    Stream,
};
use crate::messages::{Addr, Family};
use crate::node::{AskFailure, ConnId, ConnOutput, PeerInfo};
use crate::reference::driver::add_counters;
use crate::wire::handshake::{Established, HandshakeError, Identity};
use crate::wire::Reply;

/// A connection as the owner holds it: a handle to send on it, and a switch that closes it.
pub(crate) struct Peer<M> {
    pub(crate) handle: ConnectionHandle<M>,
    /// The connection's id in its process.
    pub(crate) conn: ConnId,
    kill: Arc<Kill>,
}

/// A connection's kill switch: set once, and its [`Reader`] woken to drop the connection. The
/// reader registers its waker as it polls (no future is made per message for it).
#[derive(Default)]
struct Kill {
    set: AtomicBool,
    wake: AtomicWaker,
}

impl<M> Clone for Peer<M> {
    fn clone(&self) -> Self {
        Peer {
            handle: self.handle.clone(),
            conn: self.conn,
            kill: Arc::clone(&self.kill),
        }
    }
}

impl<M> Peer<M> {
    /// Closes the connection at once (what was queued may be lost).
    pub(crate) fn kill(&self) {
        self.kill.set.store(true, Ordering::Release);
        self.kill.wake.wake();
    }
}

/// Where the answer to a core's ask goes: `(connection, the core's ask id, the answer)`.
pub(crate) type Answers<M> =
    Arc<dyn Fn(ConnId, u64, Result<Reply<M>, AskFailure>) + Send + Sync + 'static>;

/// A core's open connections, by the id the core knows them by, and the traffic of those that
/// closed.
pub(crate) struct Peers<M> {
    open: HashMap<ConnId, (Peer<M>, PeerInfo)>,
    /// Connections closing gracefully, by id, until they have closed.
    closing: Arc<Mutex<HashMap<ConnId, ConnectionHandle<M>>>>,
    /// How long a graceful close waits for a peer that does not read.
    send_timeout: Duration,
    answers: Answers<M>,
    /// Traffic of the connections that closed.
    closed_traffic: Counters,
}

impl<M: Family + Send + Sync + 'static> Peers<M> {
    /// No connection yet; a graceful close waits at most `send_timeout` for a peer that does
    /// not read; the answers to the core's asks go to `answers`.
    pub(crate) fn new(send_timeout: Duration, answers: Answers<M>) -> Peers<M> {
        Peers {
            open: HashMap::new(),
            closing: Arc::default(),
            send_timeout,
            answers,
            closed_traffic: Counters::default(),
        }
    }

    /// Connection `peer.conn` is up, with `info` at the other end.
    pub(crate) fn opened(&mut self, peer: Peer<M>, info: PeerInfo) {
        self.open.insert(peer.conn, (peer, info));
    }

    /// Connection `conn` closed: its traffic is kept in the total.
    pub(crate) fn closed(&mut self, conn: ConnId) {
        if let Some((peer, _)) = self.open.remove(&conn) {
            add_counters(&mut self.closed_traffic, &peer.handle.counters());
        }
    }

    /// Connection `conn`, if it is open.
    pub(crate) fn get(&self, conn: ConnId) -> Option<&Peer<M>> {
        self.open.get(&conn).map(|(peer, _)| peer)
    }

    /// Who is at the other end of connection `conn`, if it is open.
    pub(crate) fn info(&self, conn: ConnId) -> Option<&PeerInfo> {
        self.open.get(&conn).map(|(_, info)| info)
    }

    /// The open connections.
    pub(crate) fn iter(&self) -> impl Iterator<Item = &Peer<M>> {
        self.open.values().map(|(peer, _)| peer)
    }

    /// Does what the core decided on one of its connections (nothing when it is closed): a
    /// write goes to the connection's own queue at once, never waiting; a peer whose queue is
    /// full is closed as a slow consumer. The answer to an ask goes to the core. Returns the
    /// error of a write that was refused, with the message's name.
    pub(crate) fn write(&self, out: ConnOutput<M>) -> Result<(), (&'static str, ConnectionError)> {
        let Some(peer) = self.get(out.conn()) else {
            return Ok(());
        };
        let (name, result) = match out {
            ConnOutput::Send { message, .. } => (message.name(), peer.handle.post(message)),
            ConnOutput::Reply { id, reply, .. } => ("reply", peer.handle.post_reply(id, reply)),
            ConnOutput::Fail { id, error, .. } => ("failure", peer.handle.post_failure(id, error)),
            ConnOutput::Ask { conn, id, message } => {
                let name = message.name();
                let answers = Arc::clone(&self.answers);
                match peer.handle.post_ask(message) {
                    Ok(reply) => {
                        tokio::spawn(async move {
                            answers(conn, id, reply.await.map_err(ask_failure));
                        });
                        (name, Ok(()))
                    }
                    Err(e) => {
                        answers(conn, id, Err(ask_failure(e.clone())));
                        (name, Err(e))
                    }
                }
            }
            ConnOutput::Close { reason, .. } => {
                self.close(peer, reason);
                return Ok(());
            }
            ConnOutput::Abort { .. } => {
                peer.kill();
                return Ok(());
            }
        };
        match result {
            Ok(()) => Ok(()),
            // The close is logged, with the peer and the kind, when the connection ends.
            Err(e @ ConnectionError::SlowConsumer { .. }) => {
                tracing::debug!(
                    peer = %peer.handle.negotiated().peer_id,
                    conn = peer.conn,
                    message = name,
                    "closing the connection: {e}"
                );
                Err((name, e))
            }
            Err(e) if e.closes_connection() => {
                tracing::debug!(message = name, error = %e, "not sent: the connection is closed");
                Err((name, e))
            }
            Err(e) => Err((name, e)),
        }
    }

    /// Closes `peer` once what is queued is written (with a close envelope saying why, when
    /// there is a reason), killing it when that takes over the send timeout.
    fn close(&self, peer: &Peer<M>, reason: Option<crate::wire::CloseReason>) {
        match reason {
            Some(reason) => peer.handle.close_soon_because(reason),
            None => peer.handle.close_soon(),
        }
        let closing = Arc::clone(&self.closing);
        lock(&closing).insert(peer.conn, peer.handle.clone());
        let (peer, send_timeout) = (peer.clone(), self.send_timeout);
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

    /// Frames and bytes of every connection so far, open or closed.
    pub(crate) fn traffic(&self) -> Counters {
        let mut traffic = self.closed_traffic.clone();
        for peer in self.iter() {
            add_counters(&mut traffic, &peer.handle.counters());
        }
        traffic
    }

    /// Closes every connection gracefully and waits until they closed (each given at most the
    /// send timeout) or `within` has passed.
    pub(crate) async fn close_all(&self, within: Duration) {
        for peer in self.iter() {
            self.close(peer, None);
        }
        self.wait_closing(within).await;
    }

    /// Waits until the connections closing gracefully have closed (each given at most the send
    /// timeout), or `within` has passed.
    pub(crate) async fn wait_closing(&self, within: Duration) {
        let handles: Vec<_> = lock(&self.closing).values().cloned().collect();
        let send_timeout = self.send_timeout;
        let _ = tokio::time::timeout(within, async {
            for handle in handles {
                let _ = tokio::time::timeout(send_timeout, handle.closed()).await;
            }
        })
        .await;
    }

    /// Drops every connection at once, as a crash would.
    pub(crate) fn kill_all(&self) {
        for peer in self.iter() {
            peer.kill();
        }
    }
}

/// Why an ask has no answer, as a core takes it.
fn ask_failure(e: ConnectionError) -> AskFailure {
    match e {
        ConnectionError::Remote { error, .. } => AskFailure::Failed(error),
        other => AskFailure::Lost(other.to_string()),
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// What a connection's [`Reader`] yields: a message or ask, or (last) why it closed.
pub(crate) type Read<M> = (ConnId, Result<Incoming<M>, ConnectionError>);

/// The connections an owner reads, polled together: each yields its messages in order, then its
/// close.
pub(crate) type Readers<M> = SelectAll<BoxStream<'static, Read<M>>>;

/// A connection's receiving side, handed to its owner with [`Event::Opened`] to be read among
/// its [`Readers`].
pub(crate) struct Reader<M> {
    conn: Connection<M>,
    conn_id: ConnId,
    kill: Arc<Kill>,
    observed: Observed,
}

/// The observer of a connection's close, told when the reader ends, or is dropped with its owner.
struct Observed(Option<ObservedClose>);

impl Drop for Observed {
    fn drop(&mut self) {
        if let Some(observed) = self.0.take() {
            observed.closed();
        }
    }
}

impl<M: Family + Send + 'static> Reader<M> {
    /// The connection's messages and asks in order, then why it closed (after which the observer,
    /// if any, has heard of the close), then nothing. A kill ends it at once (what was received
    /// and not taken is dropped).
    pub(crate) fn into_stream(self) -> BoxStream<'static, Read<M>> {
        let Reader {
            conn,
            conn_id,
            kill,
            observed,
        } = self;
        ReaderStream {
            open: Some((conn, observed)),
            conn_id,
            kill,
        }
        .boxed()
    }
}

/// A [`Reader`] as its owner polls it: the connection's queue polled in place, so that taking a
/// message moves nothing but the message and makes no future.
struct ReaderStream<M> {
    /// The connection and its close's observer, until it closed.
    open: Option<(Connection<M>, Observed)>,
    conn_id: ConnId,
    kill: Arc<Kill>,
}

impl<M: Family + Send + 'static> futures_util::Stream for ReaderStream<M> {
    type Item = Read<M>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Read<M>>> {
        let this = self.get_mut();
        let Some((conn, _)) = &mut this.open else {
            return Poll::Ready(None);
        };
        let killed = || this.kill.set.load(Ordering::Acquire);
        let got = if killed() {
            Err(ConnectionError::Closed)
        } else {
            // Registered before the second look, so that a kill in between still wakes it.
            this.kill.wake.register(cx.waker());
            if killed() {
                Err(ConnectionError::Closed)
            } else {
                match conn.poll_recv(cx) {
                    Poll::Ready(got) => got,
                    Poll::Pending => return Poll::Pending,
                }
            }
        };
        if got.is_err() {
            // The connection first, then the observer: it hears of a close that is over.
            if let Some((conn, observed)) = this.open.take() {
                drop(conn);
                drop(observed);
            }
        }
        Poll::Ready(Some((this.conn_id, got)))
    }
}

/// Hands connection `conn` to its owner: announces it on `events` as [`Event::Opened`] (`peer`,
/// `origin`) with its [`Reader`], which the owner reads among its others: every message and ask,
/// then the close, after which the observer (if any) hears of it.
pub(crate) fn open<M, O, R>(
    conn: Connection<M>,
    conn_id: ConnId,
    (peer, origin): (PeerInfo, O),
    events: &mpsc::UnboundedSender<Event<M, O, R>>,
    observed: Option<ObservedClose>,
) where
    M: Family + Send + 'static,
    O: Send + 'static,
    R: Send + 'static,
{
    let kill = Arc::new(Kill::default());
    let handle = Peer {
        handle: conn.handle(),
        conn: conn_id,
        kill: Arc::clone(&kill),
    };
    let reader = Reader {
        conn,
        conn_id,
        kill,
        observed: Observed(observed),
    };
    // An owner that is gone drops the connection with the event.
    let _ = events.send(Event::Opened(handle, peer, origin, reader));
}

/// Accepts connections on `listener` until the task is aborted: each one `admission` admits
/// (one over its limits is refused, as the handshake says) is handed to `accept` on a task of its
/// own, whose failure is logged at debug level.
pub(crate) async fn accept_loop<F, Fut>(
    listener: tokio::net::TcpListener,
    admission: &Admission,
    (local, security): (&Identity, &Security),
    accept: F,
) where
    F: Fn(TcpStream, Slot) -> Fut,
    Fut: std::future::Future<Output = Result<(), ConnectionError>> + Send + 'static,
{
    loop {
        match listener.accept().await {
            Ok((stream, from)) => {
                let Some((stream, slot)) = admission.admit(stream, local, security) else {
                    tracing::debug!(%from, "connection refused: too many connections");
                    continue;
                };
                let accepted = accept(stream, slot);
                tokio::spawn(async move {
                    if let Err(e) = accepted.await {
                        tracing::debug!(%from, error = %e, "connection refused");
                    }
                });
            }
            Err(e) => {
                // Out of descriptors or a transient error: wait a little rather than spin.
                tracing::warn!(error = %e, "accept failed");
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
    }
}

/// Who is at the other end of `handle`, at `addr`.
pub(crate) fn peer_info<M: Family>(handle: &ConnectionHandle<M>, addr: String) -> PeerInfo {
    let negotiated = handle.negotiated();
    PeerInfo {
        role: negotiated.peer_role,
        id: negotiated.peer_id.clone(),
        addr,
        version: negotiated.version,
        admin: negotiated.admin,
        max_frame_size: handle.max_frame_size(),
    }
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
