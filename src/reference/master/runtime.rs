//! The master's tokio loop: owns the listener, the connections, the recovery directory, the
//! leader election, the clock and the timers; feeds the sans-IO [`MasterCore`] what happens and
//! does what it outputs. It decides nothing about the protocol.

use crate::validate::ConnId;
use std::collections::HashMap;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;
use std::time::Duration;

use tokio::net::TcpListener;
use tokio::sync::{mpsc, oneshot};

use super::conns::{self, ConnSettings};
use super::events::{Event, Opened};
use super::ha::LeaderEvent;
use super::proto::{Input, MasterCore, Output, Stored};
use super::recovery::{RecoveryError, RecoveryStore};
use super::Stop;
use crate::connection::{Counters, Incoming};
use crate::reference::clock::now_ms;
use crate::reference::driver::add_counters;
use crate::reference::outbox::{Out, Outbox, Peer};
use crate::reference::webui::MasterSnapshot;

/// The loop's clock, as the core takes it (tokio's, so that a paused test clock applies).
fn now() -> std::time::Instant {
    tokio::time::Instant::now().into_std()
}

/// The IO side of a running master.
pub(crate) struct Runtime {
    core: MasterCore,
    /// The connections the core names, by id.
    peers: HashMap<ConnId, Peer>,
    outbox: Outbox,
    events: mpsc::UnboundedSender<Event>,
    settings: ConnSettings,
    /// Where the master is elected and keeps its records (`None`: it leads at once, alone).
    store: Option<Box<dyn RecoveryStore>>,
    /// Traffic of the connections that closed, for the web UI's metrics.
    closed_traffic: Counters,
}

impl Runtime {
    /// A loop for `core`; `id` is the master's id in handshakes.
    pub(crate) fn new(
        core: MasterCore,
        id: String,
        store: Option<Box<dyn RecoveryStore>>,
        events: mpsc::UnboundedSender<Event>,
    ) -> Runtime {
        let config = &core.config;
        let settings = ConnSettings {
            id,
            max_frame_size: config.max_frame_size,
            handshake_timeout: Duration::from_secs(10),
            observer: config.observer.clone(),
            next_conn: Arc::new(AtomicU64::new(1)),
            versions: config.versions.clone(),
            security: config.security.clone(),
            admission: crate::connection::Admission::new(config.limits),
        };
        let outbox = Outbox::spawn(config.send_timeout);
        Runtime {
            core,
            peers: HashMap::new(),
            outbox,
            events,
            settings,
            store,
            closed_traffic: Counters::default(),
        }
    }

    /// Runs until stopped or until the master loses its leadership.
    pub(crate) async fn run(
        mut self,
        listener: TcpListener,
        mut events: mpsc::UnboundedReceiver<Event>,
        mut stop: oneshot::Receiver<Stop>,
    ) {
        let listening = tokio::spawn(conns::listen(
            listener,
            self.settings.clone(),
            self.events.clone(),
        ));
        let elected = match self.store.as_mut() {
            Some(store) => {
                let sink = self.events.clone();
                let sink: super::recovery::LeaderSink = std::sync::Arc::new(move |e| {
                    let _ = sink.send(Event::Leader(e));
                });
                tracing::info!("standing for election in {}", store.describe());
                store.elect(sink).await
            }
            None => {
                self.core.handle(
                    now(),
                    Input::Elected {
                        stored: Stored::default(),
                    },
                );
                Ok(())
            }
        };
        let how = if let Err(e) = elected {
            tracing::error!("cannot stand for election: {e}");
            Stop::Crash
        } else {
            self.serve(&mut events, &mut stop).await
        };
        self.finish(listening, how).await;
    }

    /// The loop: feeds the core until stopped or until the master loses its leadership.
    async fn serve(
        &mut self,
        events: &mut mpsc::UnboundedReceiver<Event>,
        stop: &mut oneshot::Receiver<Stop>,
    ) -> Stop {
        loop {
            if !self.execute().await {
                tracing::error!("Leadership has been revoked -- master shutting down.");
                break Stop::Crash;
            }
            let deadline = self.core.poll_timeout();
            tokio::select! {
                how = &mut *stop => break how.unwrap_or(Stop::Crash),
                event = events.recv() => match event {
                    Some(Event::Leader(LeaderEvent::Lost)) => {
                        tracing::error!("Leadership has been revoked -- master shutting down.");
                        break Stop::Crash;
                    }
                    Some(Event::Leader(LeaderEvent::Elected)) => match self.read_stored().await {
                        Ok(stored) => self.core.handle(now(), Input::Elected { stored }),
                        Err(e) => {
                            tracing::error!("cannot read what the recovery store holds: {e}; stepping down");
                            break Stop::Crash;
                        }
                    },
                    Some(event) => self.on_event(event),
                    None => break Stop::Crash,
                },
                _ = async {
                    match deadline {
                        Some(d) => tokio::time::sleep_until(d.into()).await,
                        None => std::future::pending().await,
                    }
                } => self.core.handle_timeout(now()),
            }
        }
    }

    /// Stops listening, steps down, and closes (or drops) every connection.
    async fn finish(&mut self, listening: tokio::task::JoinHandle<()>, how: Stop) {
        listening.abort();
        // Wait until the listener is dropped, so the port is free when this returns.
        let _ = listening.await;
        if let Some(store) = self.store.as_mut() {
            store.step_down(how == Stop::Graceful).await;
        }
        match how {
            Stop::Graceful => {
                for peer in self.peers.values() {
                    self.outbox.push(Out::Close(peer.clone(), None));
                }
                let (done, flushed) = oneshot::channel();
                self.outbox.push(Out::Flush(done));
                let _ = tokio::time::timeout(Duration::from_secs(5), flushed).await;
            }
            Stop::Crash => {
                for peer in self.peers.values() {
                    peer.kill();
                }
            }
        }
        tracing::info!(master = %self.core.url(), "master stopped");
    }

    /// Feeds one event to the core (or answers it, for the web UI's snapshot).
    fn on_event(&mut self, event: Event) {
        // The credit of an incoming message, released once the core has handled it.
        let mut _credit = None;
        let input = match event {
            Event::Opened(opened, dialled) => {
                let Opened {
                    conn,
                    peer,
                    role,
                    peer_id,
                    addr,
                    admin,
                } = opened;
                self.peers.insert(conn, peer);
                Input::Opened {
                    conn,
                    role,
                    peer_id,
                    addr,
                    admin,
                    dialled,
                }
            }
            Event::Incoming(conn, incoming, credit) => {
                _credit = Some(credit);
                match incoming {
                    Incoming::Message(message) => Input::Message { conn, message },
                    Incoming::Ask { id, message } => Input::Ask { conn, id, message },
                }
            }
            Event::Closed(conn, why) => {
                if let Some((addr, role, id)) = self.core.peer_of(conn) {
                    let peer = crate::reference::violations::Peer {
                        addr: &addr,
                        role,
                        id: &id,
                        conn,
                    };
                    crate::reference::violations::connection_ended(peer, &why);
                }
                if let Some(peer) = self.peers.remove(&conn) {
                    add_counters(&mut self.closed_traffic, &peer.handle.counters());
                }
                Input::Closed { conn }
            }
            // Handled by the loop, which awaits the store.
            Event::Leader(_) => return,
            Event::Snapshot(reply) => {
                let _ = reply.send(self.snapshot());
                return;
            }
        };
        self.core.handle(now(), input);
    }

    /// What the recovery store holds.
    async fn read_stored(&mut self) -> Result<Stored, RecoveryError> {
        match self.store.as_mut() {
            Some(store) => store.read_all().await,
            None => Ok(Stored::default()),
        }
    }

    /// The core's snapshot, with the traffic of every connection and the time now.
    fn snapshot(&self) -> MasterSnapshot {
        let mut snap = self.core.snapshot();
        let mut traffic = self.closed_traffic.clone();
        for peer in self.peers.values() {
            add_counters(&mut traffic, &peer.handle.counters());
        }
        snap.traffic = traffic;
        snap.now_ms = now_ms();
        snap
    }

    /// Does what the core decided, in its order: writes go to each connection's own queue at once
    /// (never waiting; a peer whose queue is full is closed as a slow consumer), records to the
    /// recovery store before anything after them is queued (the loop waits for each write: a
    /// dropped connection to ZooKeeper pauses the master). A failed write is handed back to the
    /// core ([`Input::PersistFailed`]), which fails the registration it was for. `false`: a
    /// write was refused because this master no longer leads, and it must stop.
    async fn execute(&mut self) -> bool {
        while let Some(out) = self.core.poll() {
            match out {
                Output::Send { conn, message } => {
                    if let Some(peer) = self.peers.get(&conn) {
                        self.outbox.send(peer, message);
                    }
                }
                Output::Reply { conn, id, reply } => {
                    if let Some(peer) = self.peers.get(&conn) {
                        self.outbox.reply(peer, id, reply);
                    }
                }
                Output::Fail { conn, id, error } => {
                    if let Some(peer) = self.peers.get(&conn) {
                        self.outbox.push(Out::Fail(peer.clone(), id, error));
                    }
                }
                Output::Close { conn, reason } => {
                    if let Some(peer) = self.peers.get(&conn) {
                        self.outbox.push(Out::Close(peer.clone(), reason));
                    }
                }
                Output::Dial { addr, target } => {
                    conns::dial(addr, target, self.settings.clone(), self.events.clone())
                }
                Output::Persist(record) => {
                    let Some(store) = self.store.as_mut() else {
                        continue;
                    };
                    let (kind, id) = (record.kind(), record.id().to_string());
                    tracing::debug!("writing record: {} {id}", kind.as_str());
                    match store.write(&record).await {
                        Ok(()) => tracing::debug!("record written: {} {id}", kind.as_str()),
                        Err(e) => {
                            tracing::error!("cannot persist {} {id}: {e}", kind.as_str());
                            self.core.handle(
                                now(),
                                Input::PersistFailed {
                                    kind,
                                    id,
                                    reason: e.to_string(),
                                },
                            );
                            if matches!(e, RecoveryError::Fenced(_)) {
                                return false;
                            }
                        }
                    }
                }
                Output::Unpersist { kind, id } => {
                    let Some(store) = self.store.as_mut() else {
                        continue;
                    };
                    tracing::debug!("removing record: {} {id}", kind.as_str());
                    match store.remove(kind, &id).await {
                        Ok(()) => tracing::debug!("record removed: {} {id}", kind.as_str()),
                        Err(e) => {
                            tracing::error!(
                                "cannot remove the record of {} {id}: {e}",
                                kind.as_str()
                            );
                            if matches!(e, RecoveryError::Fenced(_)) {
                                return false;
                            }
                        }
                    }
                }
            }
        }
        true
    }
}
