//! The one tokio driver of a protocol core ([`node::Core`](crate::node::Core)): it owns the
//! core's connections, their write queues ([`Peers`]) and their receiving sides ([`Readers`],
//! read here, so that a message reaches the core with no task between its connection and the
//! driver), its timer (it sleeps until
//! [`Core::poll_timeout`], then calls [`Core::handle_timeout`]) and its inbox of [`Event`]s; it
//! feeds the core every connection event as a [`ConnInput`], drains [`Core::poll`] in one place,
//! writes every [`ConnOutput`](crate::node::ConnOutput) on its connection and hands every effect
//! to the role ([`Role`]: processes, files, dialling, the web UI's state, the recovery store). It
//! makes no protocol decision.

use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures_util::{FutureExt, StreamExt};
use tokio::sync::mpsc;

use crate::connection::{ConnectionError, Incoming};
use crate::node::{ConnId, ConnInput, ConnOutput, Core, Output, PeerInfo};
use crate::reference::outbox::{Peer, Peers, Read, Reader, Readers};
use crate::wire::handshake::Role as HandshakeRole;
use crate::wire::Reply;

/// The driver's clock, as a core takes it (tokio's, so that a paused test clock applies).
pub(crate) fn now() -> Instant {
    tokio::time::Instant::now().into_std()
}

/// What a driver takes in: its connections' events, and the role's own (`R`).
#[allow(clippy::large_enum_variant)] // as the message enums: boxing would cost an allocation per message
pub(crate) enum Event<M, O, R> {
    /// A connection completed its handshake: who is at the other end, why it exists, and its
    /// receiving side, which the driver reads from then on.
    Opened(Peer<M>, PeerInfo, O, Reader<M>),
    /// A connection the core asked for could not be made, and why (a sentence).
    DialFailed(O, String),
    /// A message or ask arrived on a connection.
    Incoming(ConnId, Incoming<M>),
    /// A connection closed, and why.
    Closed(ConnId, ConnectionError),
    /// The answer to the core's ask `id` on a connection.
    Answer(ConnId, u64, Result<Reply<M>, crate::node::AskFailure>),
    /// The role's own event (a process ended, the web UI asks for a snapshot, …).
    Own(R),
}

/// The message type of a role's core.
pub(crate) type MessageOf<R> = <R as Role>::Message;

/// A driver's inbox, as the role's listeners, dialers and tasks hold it.
pub(crate) type Events<R> =
    mpsc::UnboundedSender<Event<MessageOf<R>, <R as Role>::Origin, <R as Role>::Event>>;

/// What a role adds to the driver: how it carries out its core's effects and its own events.
pub(crate) trait Role: Send + Sized + 'static {
    /// What its connections carry.
    type Message: crate::messages::Family + Send + Sync + 'static;
    /// The core it drives.
    type Core: Core<Message = Self::Message, Input: From<ConnInput<Self::Message, Self::Origin>>>
        + Send;
    /// Why a connection exists (the core's `ConnInput` origin).
    type Origin: Send + 'static;
    /// Its own events.
    type Event: Send + 'static;
    /// What the driver returns when it stops.
    type Exit: Send;

    /// Carries out one of the core's effects (the core's next outputs wait until it is done);
    /// `Some` stops the driver.
    fn effect(
        &mut self,
        io: &mut Io<Self>,
        effect: <Self::Core as Core>::Effect,
    ) -> impl Future<Output = Option<Self::Exit>> + Send;

    /// Handles one of its own events; `Some` stops the driver.
    fn event(
        &mut self,
        io: &mut Io<Self>,
        event: Self::Event,
    ) -> impl Future<Output = Option<Self::Exit>> + Send;

    /// Whether the core has ended (then the driver stops with what this returns).
    fn ended(&self, _core: &Self::Core) -> Option<Self::Exit> {
        None
    }

    /// Who is at `conn` (address, role, id), for the log line of its close; `None` logs
    /// nothing.
    fn peer_of(&self, _io: &Io<Self>, _conn: ConnId) -> Option<(String, HandshakeRole, String)> {
        None
    }

    /// At most how many events the driver hands the core between two drains (between
    /// [`Role::begin_batch`] and [`Role::end_batch`]).
    const BATCH: usize = 1;

    /// A batch of events begins.
    fn begin_batch(&mut self, _core: &mut Self::Core) {}

    /// The batch ended.
    fn end_batch(&mut self, _core: &mut Self::Core) {}

    /// The core's outputs were all carried out.
    fn drained(&mut self, _core: &Self::Core) {}

    /// Takes a write the role makes itself (`None`: taken), or hands it back (`Some`) to be
    /// queued on its connection.
    fn divert(
        &mut self,
        _io: &mut Io<Self>,
        out: ConnOutput<Self::Message>,
    ) -> Option<ConnOutput<Self::Message>> {
        Some(out)
    }

    /// What to keep of a write before it is made, to hand back to [`Role::refused`].
    fn keep(&self, _out: &ConnOutput<Self::Message>) -> Option<Self::Message> {
        None
    }

    /// A write on `conn` was refused (`kept`: what [`Role::keep`] kept of it).
    fn refused(
        &mut self,
        _io: &mut Io<Self>,
        _conn: ConnId,
        _kept: Option<Self::Message>,
        (name, error): (&'static str, ConnectionError),
    ) {
        if !error.closes_connection() {
            tracing::warn!(message = name, error = %error, "not sent");
        }
    }
}

/// What a role's handlers reach of the driver: the core, the connections and the inbox.
pub(crate) struct Io<R: Role> {
    /// The core.
    pub(crate) core: R::Core,
    /// Its connections.
    pub(crate) peers: Peers<MessageOf<R>>,
    /// The driver's inbox.
    pub(crate) events: Events<R>,
}

impl<M, O, R> From<Read<M>> for Event<M, O, R> {
    fn from((conn, read): Read<M>) -> Self {
        match read {
            Ok(incoming) => Event::Incoming(conn, incoming),
            Err(why) => Event::Closed(conn, why),
        }
    }
}

impl<R: Role> Io<R> {
    /// Feeds the core `input`, now.
    pub(crate) fn handle(&mut self, input: impl Into<<R::Core as Core>::Input>) {
        self.core.handle(now(), input.into());
    }
}

/// A core's driver. See the module documentation.
pub(crate) struct Runtime<R: Role> {
    /// The core, its connections and the inbox's sending end.
    pub(crate) io: Io<R>,
    /// The role's state and handlers.
    pub(crate) role: R,
    inbox: mpsc::UnboundedReceiver<Event<MessageOf<R>, R::Origin, R::Event>>,
    /// The open connections' receiving sides.
    readers: Readers<MessageOf<R>>,
}

impl<R: Role> Runtime<R> {
    /// A driver of `core` for `role`; a graceful close of a connection waits at most
    /// `send_timeout` for a peer that does not read.
    pub(crate) fn new(core: R::Core, role: R, send_timeout: Duration) -> Runtime<R> {
        let (events, inbox) = mpsc::unbounded_channel();
        let answered = events.clone();
        let answers: crate::reference::outbox::Answers<MessageOf<R>> =
            Arc::new(move |conn, id, answer| {
                let _ = answered.send(Event::Answer(conn, id, answer));
            });
        Runtime {
            io: Io {
                core,
                peers: Peers::new(send_timeout, answers),
                events,
            },
            role,
            inbox,
            readers: Readers::default(),
        }
    }

    /// The driver's inbox, for the role's listeners, dialers and tasks.
    pub(crate) fn events(&self) -> Events<R> {
        self.io.events.clone()
    }

    /// Runs until `stop` is ready, an effect or event stops it, or the core ends.
    pub(crate) async fn run(&mut self, stop: impl Future<Output = R::Exit>) -> R::Exit {
        tokio::pin!(stop);
        loop {
            if let Some(exit) = self.drain().await {
                return exit;
            }
            self.role.drained(&self.io.core);
            let wake = self.io.core.poll_timeout();
            tokio::select! {
                exit = &mut stop => return exit,
                Some(read) = self.readers.next() => {
                    if let Some(exit) = self.batch(read.into()).await {
                        return exit;
                    }
                }
                Some(event) = self.inbox.recv() => {
                    if let Some(exit) = self.batch(event).await {
                        return exit;
                    }
                }
                _ = crate::reference::clock::sleep_until(wake) => self.io.core.handle_timeout(now()),
            }
        }
    }

    /// Handles `first` and whatever else is ready already (on the connections, then in the
    /// inbox), at most [`Role::BATCH`] events in all, as one batch of the core.
    async fn batch(&mut self, first: Event<MessageOf<R>, R::Origin, R::Event>) -> Option<R::Exit> {
        self.role.begin_batch(&mut self.io.core);
        let mut exit = self.event(first).await;
        for _ in 1..R::BATCH {
            if exit.is_some() {
                break;
            }
            match self.ready() {
                Some(event) => exit = self.event(event).await,
                None => break,
            }
        }
        self.role.end_batch(&mut self.io.core);
        exit
    }

    /// An event that is ready now, without waiting: read on a connection, else from the inbox.
    fn ready(&mut self) -> Option<Event<MessageOf<R>, R::Origin, R::Event>> {
        if let Some(Some(read)) = self.readers.next().now_or_never() {
            return Some(read.into());
        }
        self.inbox.try_recv().ok()
    }

    /// Takes the events waiting in the inbox until `done` says the core is done (or `within`
    /// has passed), draining the core after each: for a role's stop sequence.
    pub(crate) async fn settle(&mut self, within: Duration, done: impl Fn(&R::Core) -> bool) {
        let deadline = tokio::time::Instant::now() + within;
        loop {
            let _ = self.drain().await;
            if done(&self.io.core) {
                return;
            }
            let event = tokio::select! {
                Some(read) = self.readers.next() => Some(read.into()),
                event = self.inbox.recv() => event,
                _ = tokio::time::sleep_until(deadline) => None,
            };
            match event {
                Some(event) => {
                    let _ = self.event(event).await;
                }
                None => return,
            }
        }
    }

    /// Feeds one event to the core (or to the role, for its own).
    async fn event(&mut self, event: Event<MessageOf<R>, R::Origin, R::Event>) -> Option<R::Exit> {
        let input = match event {
            Event::Opened(peer, info, origin, reader) => {
                let conn = peer.conn;
                self.io.peers.opened(peer, info.clone());
                self.readers.push(reader.into_stream());
                ConnInput::Opened {
                    conn,
                    peer: info,
                    origin,
                }
            }
            Event::DialFailed(origin, error) => ConnInput::DialFailed { origin, error },
            Event::Incoming(conn, incoming) => {
                let input = match incoming {
                    Incoming::Message(message) => ConnInput::Message { conn, message },
                    Incoming::Ask { id, message } => ConnInput::Ask { conn, id, message },
                };
                self.io.handle(input);
                return None;
            }
            Event::Closed(conn, why) => {
                let peer = self.role.peer_of(&self.io, conn);
                log_close(peer, conn, &why);
                self.io.peers.closed(conn);
                ConnInput::Closed {
                    conn,
                    reason: why.to_string(),
                }
            }
            Event::Answer(conn, id, answer) => ConnInput::Answer { conn, id, answer },
            Event::Own(event) => return self.role.event(&mut self.io, event).await,
        };
        self.io.handle(input);
        None
    }

    /// Carries out what the core decided, in its order: the one place its outputs are drained.
    /// A write goes to its connection's own queue at once (unless the role takes it); an effect to the role, which may
    /// feed the core before its next output is taken.
    pub(crate) async fn drain(&mut self) -> Option<R::Exit> {
        while let Some(out) = self.io.core.poll() {
            match out {
                Output::Conn(out) => {
                    let Some(out) = self.role.divert(&mut self.io, out) else {
                        continue;
                    };
                    let (conn, kept) = (out.conn(), self.role.keep(&out));
                    if let Err(refused) = self.io.peers.write(out) {
                        self.role.refused(&mut self.io, conn, kept, refused);
                    }
                }
                Output::Effect(effect) => {
                    if let Some(exit) = self.role.effect(&mut self.io, effect).await {
                        return Some(exit);
                    }
                }
            }
        }
        self.role.ended(&self.io.core)
    }
}

/// Logs how connection `conn` ended, naming the peer as the core knows it (else not at all for
/// an ordinary end).
fn log_close(peer: Option<(String, HandshakeRole, String)>, conn: ConnId, why: &ConnectionError) {
    if let Some((addr, role, id)) = peer {
        let peer = crate::node::violations::Peer {
            addr: &addr,
            role,
            id: &id,
            conn,
        };
        crate::reference::violations::connection_ended(peer, why);
    }
}
