//! The master's tokio loop: owns the listener, the connections, the recovery directory, the
//! leader election, the clock and the timers; feeds the sans-IO [`MasterCore`] what happens and
//! does what it outputs. It decides nothing about the protocol.

use std::sync::atomic::AtomicU64;
use std::sync::Arc;
use std::time::Duration;

use tokio::net::TcpListener;
use tokio::sync::{mpsc, oneshot};

use super::conns::{self, ConnSettings};
use super::events::{Event, Opened};
use super::ha::LeaderEvent;
use super::recovery::{RecoveryError, RecoveryStore};
use super::MasterConfig;
use super::Stop;
use crate::connection::Incoming;
use crate::node::master::{Effect, Input, MasterCore, Stored};
use crate::node::{Core, Output};
use crate::reference::clock::now_ms;
use crate::reference::runtime::Peers;
use crate::reference::webui::MasterSnapshot;

/// The loop's clock, as the core takes it (tokio's, so that a paused test clock applies).
fn now() -> std::time::Instant {
    tokio::time::Instant::now().into_std()
}

/// The IO side of a running master.
pub(crate) struct Runtime {
    core: MasterCore,
    /// The connections the core names, by id.
    peers: Peers,
    events: mpsc::UnboundedSender<Event>,
    settings: ConnSettings,
    /// Where the master is elected and keeps its records (`None`: it leads at once, alone).
    store: Option<Box<dyn RecoveryStore>>,
}

impl Runtime {
    /// A loop for `core`; `id` is the master's id in handshakes.
    pub(crate) fn new(
        core: MasterCore,
        config: &MasterConfig,
        id: String,
        store: Option<Box<dyn RecoveryStore>>,
        events: mpsc::UnboundedSender<Event>,
    ) -> Runtime {
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
        Runtime {
            core,
            peers: Peers::new(config.send_timeout),
            events,
            settings,
            store,
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
            Stop::Graceful => self.peers.close_all(Duration::from_secs(5)).await,
            Stop::Crash => self.peers.kill_all(),
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
                self.peers.opened(conn, peer);
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
                self.peers.closed(conn);
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
        let mut status = self.core.status();
        status.now_ms = now_ms();
        MasterSnapshot {
            status,
            traffic: self.peers.traffic(),
        }
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
                Output::Conn(out) => self.peers.write(out),
                Output::Effect(Effect::Registered { conn }) => {
                    if let Some(peer) = self.peers.get(conn) {
                        peer.handle.set_idle_timeout(None);
                    }
                }
                Output::Effect(Effect::Dial { addr, target }) => {
                    conns::dial(addr, target, self.settings.clone(), self.events.clone())
                }
                Output::Effect(Effect::Persist(record)) => {
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
                Output::Effect(Effect::Unpersist { kind, id }) => {
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
