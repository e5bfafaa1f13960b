//! Layer 3: connections. A [`Connection`] carries one family's envelopes over any byte stream
//! (TCP, `tokio::io::duplex`, …) after the handshake: one-way sends, asks matched to their replies
//! by id with a timeout, answers to the peer's asks, and the stream of what the peer sends.
//!
//! Each connection runs two tasks on the current tokio runtime (one reads, one writes). A failure
//! closes only its own connection, with a typed [`ConnectionError`] that the owner sees from
//! [`Connection::recv`], from pending asks and from every later operation.
//!
//! # Isolation: what one peer can cost, and the owner's contract
//!
//! **Outbound.** Each connection has its own write queue, bounded in bytes
//! ([`ConnectionConfig::max_outgoing_bytes`], default 4 MiB) and in frames for waiting senders
//! ([`ConnectionConfig::outgoing_queue`]), written by the connection's own task. An owner that
//! serves many peers never waits on one of them: [`post`](ConnectionHandle::post),
//! [`post_reply`](ConnectionHandle::post_reply), [`post_failure`](ConnectionHandle::post_failure)
//! and [`post_ask`](ConnectionHandle::post_ask) queue at once, and when the peer lets its queue
//! fill (it does not read) they close the connection with [`ConnectionError::SlowConsumer`].
//! [`send`](ConnectionHandle::send), [`ask`](ConnectionHandle::ask) and
//! [`reply`](ConnectionHandle::reply) wait for room instead: right for a client with one peer.
//!
//! **Inbound.** Messages and asks wait for [`recv`](Connection::recv) in a queue of
//! [`ConnectionConfig::incoming_queue`] (default 32). While it is full the connection reads no
//! further frame: the peer's TCP window closes and the peer alone is held back. Replies to this
//! side's asks never go through that queue. The contract that keeps an owner from deadlocking on
//! its own connection:
//!
//! - An owner may await an ask on a connection whose `recv` it is not calling (the reply may be
//!   behind messages it has not taken): while an ask of this side awaits its reply, the reader
//!   reads on, keeping up to `incoming_queue` more messages aside, in order. A peer that sends
//!   more than that before its reply is closed with [`ConnectionError::InboundOverflow`], so the
//!   ask ends (with that error) rather than hangs; the ask timeout bounds it in any case.
//! - An owner that stops calling `recv` holds back only this peer; nothing is lost, everything
//!   arrives in order when it calls `recv` again.
//! - The peer's asks awaiting this side's answer are bounded too
//!   ([`ConnectionConfig::max_peer_asks`], default 256, [`ConnectionError::TooManyAsks`]); this
//!   side's own asks are bounded by the caller (each ends by its timeout at the latest).
//!
//! **Time.** A frame must be complete within [`ConnectionConfig::frame_read_timeout`] (default
//! 60 s) of its first byte ([`ConnectionError::FrameTimedOut`]: a peer that trickles bytes), and
//! an idle timeout ([`ConnectionConfig::idle_timeout`], [`ConnectionHandle::set_idle_timeout`])
//! closes a peer that sends nothing while the owner has nothing of it unprocessed
//! ([`ConnectionError::Idle`]). The reader looks at both every quarter of the shorter one (at
//! least every 10 ms, at most every 15 s), so either is enforced at most a quarter late; no
//! timer is re-armed per frame.
//!
//! **Servers.** An [`Admission`] per listener applies [`Limits`]: at most
//! [`Limits::max_connections`] connections at once (default 512), one more refused in the
//! handshake with `tooManyConnections` (protocol/handshake.md §5); and the idle timeout for peers
//! that have not registered and for `ui` peers between requests (default 60 s).
//!
//! **Memory, worst case.** One connection holds at most: its write queue
//! (`max_outgoing_bytes`, each frame counted with 64 bytes of overhead, plus one frame when a
//! single frame is larger) and the write buffer (16 KiB, while it writes); the frame being read
//! (`max_frame_size`); `2 × incoming_queue` decoded messages (queue and aside); and the ids of `max_peer_asks` open asks and of 4,096 settled asks (a few
//! tens of KiB). With a server's limits, overall: `max_connections ×` that. In numbers, for
//! frames of at most `S` bytes: `4 MiB + 16 KiB + S + 64 × S` per connection with the defaults;
//! a master whose peers send small control messages (`S` of a few KiB) stays within about 5 MiB
//! per connection, 2.5 GiB for 512 connections in the very worst case where each of them has its
//! queue full at once, and the slow-consumer rule empties a full queue by closing it.

mod config;
mod counters;
mod error;
mod io_task;
mod listener;
mod pending;
mod security;
mod shared;
#[cfg(feature = "tls")]
mod tls;

pub use config::{
    ConnectionConfig, Direction, Inspector, DEFAULT_ASK_TIMEOUT, DEFAULT_FRAME_READ_TIMEOUT,
    DEFAULT_HANDSHAKE_TIMEOUT, DEFAULT_INCOMING_QUEUE, DEFAULT_MAX_OUTGOING_BYTES,
    DEFAULT_MAX_PEER_ASKS, DEFAULT_OUTGOING_QUEUE,
};
pub use counters::{Counters, Traffic};
pub use error::{describe_io, ConnectionError};
pub use listener::{Admission, Limits, Slot, DEFAULT_IDLE_TIMEOUT, DEFAULT_MAX_CONNECTIONS};
pub use security::{
    generate_secret, read_secret_file, write_secret_file, SecretFileError, Security, Stream,
    MAX_SECRET_FILE,
};
#[cfg(feature = "tls")]
pub use security::{TlsError, TlsSettings};

use std::ops::Deref;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::{mpsc, oneshot};

use crate::messages::{ErrorDescription, Family, Version};
use crate::wire::handshake::{Established, HandshakeError, Identity, Negotiated, Role};
use crate::wire::{CloseReason, Envelope, FrameCodec, Reply};
use crate::wire::{FrameError, FrameLimit};
use shared::{idle_ms, new_shared, Admit, Outgoing, Settles, Shared, SharedLimits};

/// What the peer sent that needs this side's attention.
#[derive(Debug, Clone, PartialEq)]
pub enum Incoming<F> {
    /// A one-way message.
    Message(F),
    /// An ask: answer it with [`ConnectionHandle::reply`] or [`ConnectionHandle::fail`] and its id.
    Ask {
        /// The ask's id.
        id: u64,
        /// The request.
        message: F,
    },
}

impl<F> Incoming<F> {
    /// The message received.
    pub fn message(&self) -> &F {
        match self {
            Incoming::Message(m) | Incoming::Ask { message: m, .. } => m,
        }
    }
}

/// A cheap, cloneable handle to send on a connection, ask, and answer the peer's asks.
pub struct ConnectionHandle<F> {
    shared: Arc<Shared<F>>,
}

impl<F> Clone for ConnectionHandle<F> {
    fn clone(&self) -> Self {
        ConnectionHandle {
            shared: Arc::clone(&self.shared),
        }
    }
}

impl<F: Family> ConnectionHandle<F> {
    /// Sends a one-way message.
    ///
    /// Fails with [`ConnectionError::Outbound`] when the message is local, absent from the
    /// negotiated version or its frame is over the limit; nothing is sent then and the connection
    /// stays open.
    /// Waits while the write queue is full (over [`ConnectionConfig::outgoing_queue`] frames or
    /// [`ConnectionConfig::max_outgoing_bytes`] bytes). An owner that serves many peers uses
    /// [`post`](ConnectionHandle::post) instead, which never waits.
    pub async fn send(&self, message: F) -> Result<(), ConnectionError> {
        self.shared
            .enqueue(&Envelope::Send(message), Settles::Nothing, Admit::Wait)
            .await
    }

    /// Queues a one-way message without ever waiting.
    ///
    /// When the bytes queued for this peer would go over [`ConnectionConfig::max_outgoing_bytes`],
    /// the peer does not read: the connection closes with [`ConnectionError::SlowConsumer`] and
    /// that error is returned. Every other error is [`send`](ConnectionHandle::send)'s.
    pub fn post(&self, message: F) -> Result<(), ConnectionError> {
        self.shared
            .enqueue_now(&Envelope::Send(message), Settles::Nothing)
    }

    /// Answers the peer's ask `id` without ever waiting; a full queue closes the connection as
    /// [`post`](ConnectionHandle::post) does.
    ///
    /// A reply that would not fit the frame limit is not sent: the ask is failed instead
    /// (`org.apache.spark.SparkException`, naming the size and the limit, SPEC §8), so the peer
    /// is not left waiting, and the error is returned too.
    pub fn post_reply(&self, id: u64, reply: Reply<F>) -> Result<(), ConnectionError> {
        let result = self
            .shared
            .enqueue_now(&Envelope::Reply { id, reply }, Settles::Answer(id));
        if let Err(ConnectionError::Outbound(e @ FrameError::EncodedTooLarge { .. })) = &result {
            let error = too_large_answer(e);
            self.shared
                .enqueue_now(&Envelope::Failure { id, error }, Settles::Answer(id))?;
        }
        result
    }

    /// Fails the peer's ask `id` without ever waiting; a full queue closes the connection as
    /// [`post`](ConnectionHandle::post) does.
    pub fn post_failure(&self, id: u64, error: ErrorDescription) -> Result<(), ConnectionError> {
        self.shared
            .enqueue_now(&Envelope::Failure { id, error }, Settles::Answer(id))
    }

    /// Queues an ask without waiting (a full queue closes the connection as
    /// [`post`](ConnectionHandle::post) does) and returns its reply to await, at most the
    /// configured ask timeout. The ask is on the wire in the order it was posted, whenever the
    /// reply is awaited.
    pub fn post_ask(
        &self,
        message: F,
    ) -> Result<impl std::future::Future<Output = Result<Reply<F>, ConnectionError>>, ConnectionError>
    {
        let name = message.name();
        let id = self.shared.next_id();
        let (waiter, answer) = oneshot::channel();
        self.shared
            .enqueue_now(&Envelope::Ask { id, message }, Settles::Ask(id, waiter))?;
        let handle = self.clone();
        let timeout = self.shared.ask_timeout;
        Ok(async move { handle.await_reply(id, name, answer, timeout).await })
    }

    /// Asks and waits for the reply, at most the configured ask timeout.
    pub async fn ask(&self, message: F) -> Result<Reply<F>, ConnectionError> {
        self.ask_with_timeout(message, self.shared.ask_timeout)
            .await
    }

    /// Asks and waits for the reply, at most `timeout`.
    ///
    /// A failure from the peer is [`ConnectionError::Remote`]; no reply in time is
    /// [`ConnectionError::AskTimedOut`] (the connection stays open and a late reply is dropped).
    pub async fn ask_with_timeout(
        &self,
        message: F,
        timeout: Duration,
    ) -> Result<Reply<F>, ConnectionError> {
        let name = message.name();
        let id = self.shared.next_id();
        let (waiter, answer) = oneshot::channel();
        self.shared
            .enqueue(
                &Envelope::Ask { id, message },
                Settles::Ask(id, waiter),
                Admit::Wait,
            )
            .await?;
        self.await_reply(id, name, answer, timeout).await
    }

    async fn await_reply(
        &self,
        id: u64,
        name: &'static str,
        mut answer: oneshot::Receiver<Result<Reply<F>, ConnectionError>>,
        timeout: Duration,
    ) -> Result<Reply<F>, ConnectionError> {
        // Stops waiting for the reply however this call ends, even when it is cancelled.
        let _forget = ForgetAsk {
            shared: &self.shared,
            id,
        };
        match tokio::time::timeout(timeout, &mut answer).await {
            Ok(Ok(outcome)) => outcome,
            Ok(Err(_)) => Err(self.shared.closed_error()),
            Err(_) => {
                if self.shared.lock().asks.expire(id) {
                    return Err(ConnectionError::AskTimedOut {
                        id,
                        name,
                        after: timeout,
                    });
                }
                // Answered (or closed) as the time ran out: the outcome is there.
                answer
                    .try_recv()
                    .unwrap_or_else(|_| Err(self.shared.closed_error()))
            }
        }
    }

    /// Answers the peer's ask `id`. [`ConnectionError::NoSuchAsk`] when that ask is not awaiting
    /// an answer (never received, or answered already).
    ///
    /// A reply that would not fit the frame limit is not sent: the ask is failed instead, as
    /// [`ConnectionHandle::post_reply`] does, and the error is returned too.
    pub async fn reply(&self, id: u64, reply: Reply<F>) -> Result<(), ConnectionError> {
        let result = self
            .shared
            .enqueue(
                &Envelope::Reply { id, reply },
                Settles::Answer(id),
                Admit::Wait,
            )
            .await;
        if let Err(ConnectionError::Outbound(e @ FrameError::EncodedTooLarge { .. })) = &result {
            let error = too_large_answer(e);
            self.shared
                .enqueue(
                    &Envelope::Failure { id, error },
                    Settles::Answer(id),
                    Admit::Wait,
                )
                .await?;
        }
        result
    }

    /// Fails the peer's ask `id`, as Spark's `RpcCallContext.sendFailure` does.
    pub async fn fail(&self, id: u64, error: ErrorDescription) -> Result<(), ConnectionError> {
        self.shared
            .enqueue(
                &Envelope::Failure { id, error },
                Settles::Answer(id),
                Admit::Wait,
            )
            .await
    }

    /// What the handshake settled: version, peer role and id.
    pub fn negotiated(&self) -> &Negotiated {
        &self.shared.negotiated
    }

    /// The negotiated version.
    pub fn version(&self) -> Version {
        self.shared.negotiated.version
    }

    /// The frame limit in force after the handshake, in bytes.
    pub fn max_frame_size(&self) -> usize {
        self.shared.max_frame_size
    }

    /// Bytes queued for writing and not yet written, each frame counted with 64 bytes more for
    /// its place in the queue (what [`ConnectionConfig::max_outgoing_bytes`] bounds).
    pub fn queued_bytes(&self) -> usize {
        self.shared.queued_bytes.load(Ordering::Acquire)
    }

    /// Sets the idle timeout (`None`: never idle): the connection closes with
    /// [`ConnectionError::Idle`] when nothing arrives for that long while the owner has nothing
    /// unprocessed and awaits no reply. A server disarms it once a peer registered.
    pub fn set_idle_timeout(&self, timeout: Option<Duration>) {
        self.shared
            .idle_timeout_ms
            .store(idle_ms(timeout), Ordering::Release);
    }

    /// Waits until everything queued so far was written (or the connection closed).
    pub async fn flushed(&self) {
        let mut closed = self.shared.closed.subscribe();
        loop {
            let room = self.shared.room.notified();
            tokio::pin!(room);
            room.as_mut().enable();
            if self.shared.drained() || closed.borrow().is_some() {
                return;
            }
            tokio::select! {
                _ = room => {}
                _ = closed.changed() => {}
            }
        }
    }

    /// Starts a graceful close without waiting: frames queued before are written, then the write
    /// side is shut down and the connection closes with [`ConnectionError::Closed`].
    pub fn close_soon(&self) {
        self.close_soon_with(None);
    }

    /// [`close_soon`](ConnectionHandle::close_soon), telling the peer why: when the handshake
    /// agreed on the `closeReason` feature, a close envelope carrying `reason` is written after
    /// the frames queued before, as the connection's last frame (SPEC §8.1). An endpoint that
    /// refuses a peer's one-way message closes with the refusal's reason (SPEC §14.3).
    pub fn close_soon_because(&self, reason: CloseReason) {
        self.close_soon_with(Some(reason));
    }

    fn close_soon_with(&self, reason: Option<CloseReason>) {
        if self.shared.closing.swap(true, Ordering::AcqRel) {
            return;
        }
        let farewell = self.shared.farewell_frame(reason);
        if self
            .shared
            .outgoing
            .send(Outgoing::Close(farewell))
            .is_err()
        {
            self.shared.close_with(ConnectionError::Closed);
        }
    }

    /// Whether the handshake agreed on the `closeReason` feature: a close by this side for an
    /// error, or [`close_soon_because`](ConnectionHandle::close_soon_because), tells the peer
    /// why in a last frame.
    pub fn tells_close_reason(&self) -> bool {
        self.shared.negotiated.close_reason
    }

    /// The traffic so far.
    pub fn counters(&self) -> Counters {
        self.shared.lock().counters.clone()
    }

    /// Why the connection closed, or `None` while it is open.
    pub fn close_reason(&self) -> Option<ConnectionError> {
        self.shared.close_reason()
    }

    /// Waits until the connection closes and returns why.
    pub async fn closed(&self) -> ConnectionError {
        let mut closed = self.shared.closed.subscribe();
        let reason = closed.wait_for(Option::is_some).await;
        match reason {
            Ok(reason) => reason.clone().unwrap_or(ConnectionError::Closed),
            Err(_) => ConnectionError::Closed,
        }
    }

    /// Closes the connection gracefully: frames queued before are written, the write side is shut
    /// down, then the connection closes with [`ConnectionError::Closed`]. Later sends fail.
    pub async fn close(&self) {
        self.close_soon();
        self.closed().await;
    }
}

/// Gives up waiting for ask `id` when dropped, unless it was answered: a cancelled ask leaves
/// nothing behind, and its reply, if one comes, is dropped as late.
struct ForgetAsk<'a, F: Family> {
    shared: &'a Shared<F>,
    id: u64,
}

impl<F: Family> Drop for ForgetAsk<'_, F> {
    fn drop(&mut self) {
        self.shared.lock().asks.expire(self.id);
    }
}

/// A connection carrying family `F`: a [`ConnectionHandle`] (through `Deref`) plus the stream of
/// what the peer sends ([`recv`](Connection::recv)).
///
/// ```
/// use sparkwire::connection::{Connection, ConnectionConfig, Incoming};
/// use sparkwire::messages::deploy::{RequestReadyz};
/// use sparkwire::messages::DeployMessage;
/// use sparkwire::wire::handshake::Role;
/// use sparkwire::wire::Reply;
///
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// let (ui_io, master_io) = tokio::io::duplex(64 * 1024);
/// let master = tokio::spawn(async move {
///     let mut conn: Connection<DeployMessage> =
///         Connection::accept(master_io, Role::Master, "master", ConnectionConfig::default()).await?;
///     // Answer one ask.
///     if let Incoming::Ask { id, .. } = conn.recv().await? {
///         conn.reply(id, Reply::Bool(true)).await?;
///     }
///     Ok::<_, sparkwire::connection::ConnectionError>(conn)
/// });
/// let ui: Connection<DeployMessage> =
///     Connection::connect(ui_io, Role::Ui, "my-ui", ConnectionConfig::default()).await?;
/// let ready = ui.ask(RequestReadyz::new().into()).await?;
/// assert_eq!(ready, Reply::Bool(true));
/// let _master = master.await.expect("joined")?;
/// # Ok::<(), sparkwire::connection::ConnectionError>(())
/// # }).unwrap();
/// ```
///
/// Dropping the `Connection` closes it: its handles then fail with [`ConnectionError::Closed`].
/// Connections are made inside a tokio runtime (with the `rt` feature's `spawn`): each runs a
/// reading task and a writing task on it. What the peer sends is queued, up to
/// [`ConnectionConfig::incoming_queue`], until [`recv`](Connection::recv) takes it (see the
/// module docs for what happens beyond, and why an owner awaiting an ask cannot deadlock).
pub struct Connection<F> {
    handle: ConnectionHandle<F>,
    incoming: mpsc::Receiver<Incoming<F>>,
}

impl<F> Deref for Connection<F> {
    type Target = ConnectionHandle<F>;

    fn deref(&self) -> &ConnectionHandle<F> {
        &self.handle
    }
}

impl<F> Drop for Connection<F> {
    fn drop(&mut self) {
        let closed = &self.handle.shared.closed;
        closed.send_if_modified(|slot| {
            if slot.is_none() {
                *slot = Some(ConnectionError::Closed);
                true
            } else {
                false
            }
        });
        self.handle.shared.release_slot();
        self.handle.shared.room.notify_waiters();
        let waiters = match self.handle.shared.state.lock() {
            Ok(mut state) => state.asks.drain(),
            Err(poisoned) => poisoned.into_inner().asks.drain(),
        };
        for waiter in waiters {
            let _ = waiter.send(Err(ConnectionError::Closed));
        }
    }
}

impl<F: Family + Send + 'static> Connection<F> {
    /// Connects as a client: TLS when [`ConnectionConfig::security`] has it, the handshake as
    /// `role` with id `id` (authenticated when it has a secret), then starts the connection.
    /// `role` must carry family `F`, and so must the server's. With TLS, the server's certificate
    /// must carry the TLS settings' `server_name`.
    pub async fn connect<IO>(
        io: IO,
        role: Role,
        id: impl Into<String>,
        config: ConnectionConfig<F>,
    ) -> Result<Self, ConnectionError>
    where
        IO: AsyncRead + AsyncWrite + Unpin + Send + 'static,
    {
        check_family::<F>(role)?;
        let local = Identity::new(role, id).with_versions(&config.versions);
        let established = with_timeout(
            config.handshake_timeout,
            config.security.client_handshake(io, &local, ""),
        )
        .await?;
        Self::establish(established, config)
    }

    /// Accepts a client: TLS when [`ConnectionConfig::security`] has it, the server side of the
    /// handshake as `role` with id `id` (requiring the client to prove the secret when there is
    /// one), taking only clients whose role carries family `F`, then starts the connection.
    pub async fn accept<IO>(
        io: IO,
        role: Role,
        id: impl Into<String>,
        config: ConnectionConfig<F>,
    ) -> Result<Self, ConnectionError>
    where
        IO: AsyncRead + AsyncWrite + Unpin + Send + 'static,
    {
        check_family::<F>(role)?;
        let local = Identity::new(role, id).with_versions(&config.versions);
        let established = with_timeout(
            config.handshake_timeout,
            config
                .security
                .server_handshake(io, &local, |peer| peer.carries::<F>()),
        )
        .await?;
        Self::establish(established, config)
    }

    /// Starts a connection on a stream whose handshake completed (for servers that choose the
    /// family from the peer's role). The peer's role must carry family `F`.
    pub fn establish<IO>(
        established: Established<IO>,
        config: ConnectionConfig<F>,
    ) -> Result<Self, ConnectionError>
    where
        IO: AsyncRead + AsyncWrite + Unpin + Send + 'static,
    {
        let (sent, received) = established.handshake_bytes();
        let (negotiated, reader, writer) = established.into_parts();
        check_family::<F>(negotiated.peer_role)?;
        let limit = FrameLimit::message(config.max_frame_size);
        let version = negotiated.version;
        let reader = reader.map_decoder(|raw| FrameCodec::<F>::from_raw(raw, version, limit));
        let mut counters = Counters::default();
        counters.record_sent("handshake", sent);
        counters.record_received("handshake", received);
        let limits = SharedLimits {
            ask_timeout: config.ask_timeout,
            max_frame_size: config.max_frame_size,
            max_outgoing_frames: config.outgoing_queue,
            max_outgoing_bytes: config.max_outgoing_bytes,
            max_peer_asks: config.max_peer_asks,
            idle_timeout: config.idle_timeout,
        };
        let (shared, queue) = new_shared(
            FrameCodec::new(version, limit),
            negotiated,
            limits,
            config.inspector,
            counters,
            config.slot,
        );
        let incoming_queue = config.incoming_queue.max(1);
        let (deliver, incoming) = mpsc::channel(incoming_queue);
        tokio::spawn(io_task::read_loop(
            reader,
            Arc::clone(&shared),
            deliver,
            incoming_queue,
            config.frame_read_timeout,
        ));
        tokio::spawn(io_task::write_loop(writer, queue, Arc::clone(&shared)));
        Ok(Connection {
            handle: ConnectionHandle { shared },
            incoming,
        })
    }
}

impl<F: Family> Connection<F> {
    /// The next message or ask from the peer. Once the connection has closed and everything
    /// received before was returned, returns why it closed.
    pub async fn recv(&mut self) -> Result<Incoming<F>, ConnectionError> {
        match self.incoming.recv().await {
            Some(incoming) => Ok(incoming),
            None => Err(self.handle.shared.closed_error()),
        }
    }

    /// [`Connection::recv`] as a poll, for an owner that reads its connections itself: the next
    /// message or ask, or why the connection closed once it has (and every later poll says so
    /// too).
    pub(crate) fn poll_recv(
        &mut self,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Result<Incoming<F>, ConnectionError>> {
        self.incoming
            .poll_recv(cx)
            .map(|got| got.ok_or_else(|| self.handle.shared.closed_error()))
    }

    /// A handle for other tasks to send, ask and answer on this connection.
    pub fn handle(&self) -> ConnectionHandle<F> {
        self.handle.clone()
    }
}

fn check_family<F: Family>(role: Role) -> Result<(), ConnectionError> {
    if role.carries::<F>() {
        Ok(())
    } else {
        Err(ConnectionError::WrongFamily {
            role,
            family: F::FAMILY,
        })
    }
}

async fn with_timeout<T>(
    after: Duration,
    handshake: impl std::future::Future<Output = Result<T, HandshakeError>>,
) -> Result<T, ConnectionError> {
    match tokio::time::timeout(after, handshake).await {
        Ok(result) => result.map_err(ConnectionError::Handshake),
        Err(_) => Err(ConnectionError::Handshake(HandshakeError::TimedOut {
            after,
        })),
    }
}

/// Opens a TCP connection to `host:port` (with `TCP_NODELAY`), waiting at most `timeout`. A
/// failure is [`ConnectionError::Connect`], which names the address and the cause: `cannot
/// connect to 127.0.0.1:7077: connection refused`.
///
/// ```no_run
/// use std::time::Duration;
/// use sparkwire::connection::{connect_tcp, Connection, ConnectionConfig};
/// use sparkwire::messages::DeployMessage;
/// use sparkwire::wire::handshake::Role;
///
/// # async fn demo() -> Result<(), sparkwire::connection::ConnectionError> {
/// let stream = connect_tcp("127.0.0.1", 7077, Duration::from_secs(10)).await?;
/// let master: Connection<DeployMessage> =
///     Connection::connect(stream, Role::Ui, "my-ui", ConnectionConfig::default()).await?;
/// # Ok(()) }
/// ```
pub async fn connect_tcp(
    host: &str,
    port: u16,
    timeout: std::time::Duration,
) -> Result<tokio::net::TcpStream, ConnectionError> {
    let address = if host.contains(':') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    };
    match tokio::time::timeout(timeout, tokio::net::TcpStream::connect((host, port))).await {
        Ok(Ok(stream)) => {
            let _ = stream.set_nodelay(true);
            Ok(stream)
        }
        Ok(Err(e)) => Err(ConnectionError::connect(address, &e)),
        Err(_) => Err(ConnectionError::Connect {
            address,
            reason: format!("no answer within {} s", timeout.as_secs_f64()),
        }),
    }
}

/// The failure that answers an ask whose reply would not fit the frame limit (SPEC §8).
fn too_large_answer(e: &FrameError) -> ErrorDescription {
    ErrorDescription::new(
        "org.apache.spark.SparkException",
        format!("the answer cannot be sent: {e}"),
    )
}
