//! The master's part of the [driver](crate::reference::runtime): the listener, the recovery
//! store, the leader election, dialling and the web UI's snapshots around the sans-IO
//! [`MasterCore`]. It decides nothing about the protocol.

use std::sync::atomic::AtomicU64;
use std::sync::Arc;
use std::time::Duration;

use tokio::net::TcpListener;
use tokio::sync::oneshot;

use super::conns::{self, ConnSettings};
use super::events::Own;
use super::ha::LeaderEvent;
use super::recovery::{RecoveryError, RecoveryStore};
use super::MasterConfig;
use super::Stop;
use crate::messages::DeployMessage;
use crate::node::master::{DialTarget, Effect, Input, MasterCore, Stored};
use crate::reference::clock::now_ms;
use crate::reference::runtime::{Io, Role, Runtime};
use crate::reference::webui::MasterSnapshot;
use crate::wire::handshake::Role as PeerRole;

/// The master's IO: its connections' settings and where it is elected and keeps its records.
pub(crate) struct MasterIo {
    settings: ConnSettings,
    /// Where the master is elected and keeps its records (`None`: it leads at once, alone).
    store: Option<Box<dyn RecoveryStore>>,
}

/// The driver of a master's `core`; `id` is the master's id in handshakes.
pub(crate) fn new(
    core: MasterCore,
    config: &MasterConfig,
    id: String,
    store: Option<Box<dyn RecoveryStore>>,
) -> Runtime<MasterIo> {
    let settings = ConnSettings {
        id,
        max_frame_size: config.max_frame_size,
        handshake_timeout: Duration::from_secs(10),
        observer: config.observer.clone(),
        next_conn: Arc::new(AtomicU64::new(1)),
        versions: config.versions.clone(),
        security: config.security.clone(),
        admission: crate::connection::Admission::new(config.limits),
        spark_peers: config.spark_peers.clone(),
    };
    Runtime::new(core, MasterIo { settings, store }, config.send_timeout)
}

/// Runs the master until stopped or until it loses its leadership.
pub(crate) async fn run(
    mut rt: Runtime<MasterIo>,
    listener: TcpListener,
    stop: oneshot::Receiver<Stop>,
) {
    let events = rt.events();
    // Clients of this process (the Spark-wire front) come in without a socket, while it runs.
    let door = listener
        .local_addr()
        .ok()
        .map(|addr| conns::open_door(addr, rt.role.settings.clone(), events.clone()));
    let listening = tokio::spawn(conns::listen(
        listener,
        rt.role.settings.clone(),
        events.clone(),
    ));
    let elected = match rt.role.store.as_mut() {
        Some(store) => {
            let sink: super::recovery::LeaderSink = Arc::new(move |e| {
                let _ = events.send(crate::reference::runtime::Event::Own(Own::Leader(e)));
            });
            tracing::info!("standing for election in {}", store.describe());
            store.elect(sink).await
        }
        None => {
            let stored = Stored::default();
            rt.io.handle(Input::Elected { stored });
            Ok(())
        }
    };
    let how = match elected {
        Err(e) => {
            tracing::error!("cannot stand for election: {e}");
            Stop::Crash
        }
        Ok(()) => {
            rt.run(async move { stop.await.unwrap_or(Stop::Crash) })
                .await
        }
    };
    listening.abort();
    // Wait until the listener is dropped, so the port is free when this returns; the door
    // closes with it (a master started next on the port is the one reached in process).
    let _ = listening.await;
    drop(door);
    if let Some(store) = rt.role.store.as_mut() {
        store.step_down(how == Stop::Graceful).await;
    }
    match how {
        Stop::Graceful => rt.io.peers.close_all(Duration::from_secs(5)).await,
        Stop::Crash => rt.io.peers.kill_all(),
    }
    tracing::info!(master = %rt.io.core.url(), "master stopped");
}

/// Logged when the master must stop leading.
fn revoked() -> Option<Stop> {
    tracing::error!("Leadership has been revoked -- master shutting down.");
    Some(Stop::Crash)
}

impl Role for MasterIo {
    type Message = DeployMessage;
    type Core = MasterCore;
    type Origin = Option<DialTarget>;
    type Event = Own;
    type Exit = Stop;

    /// Records go to the recovery store before anything after them is queued (the driver waits
    /// for each write: a dropped connection to ZooKeeper pauses the master). A failed write is
    /// handed back to the core ([`Input::PersistFailed`]), which fails the registration it was
    /// for; a write refused because this master no longer leads stops it.
    async fn effect(&mut self, io: &mut Io<Self>, effect: Effect) -> Option<Stop> {
        match effect {
            Effect::Registered { conn } => {
                if let Some(peer) = io.peers.get(conn) {
                    peer.handle.set_idle_timeout(None);
                }
            }
            Effect::Dial { addr, target } => {
                conns::dial(addr, target, self.settings.clone(), io.events.clone())
            }
            Effect::Persist(record) => {
                let store = self.store.as_mut()?;
                // A Spark-wire peer's record keeps its wire, release and registration (SPEC
                // §11.2), from the front's note or the record read back at the election.
                let record = self.settings.spark_peers.with_book(|b| b.complete(record));
                let (kind, id) = (record.kind(), record.id().to_string());
                tracing::debug!("writing record: {} {id}", kind.as_str());
                match store.write(&record).await {
                    Ok(()) => tracing::debug!("record written: {} {id}", kind.as_str()),
                    Err(e) => {
                        tracing::error!("cannot persist {} {id}: {e}", kind.as_str());
                        let fenced = matches!(e, RecoveryError::Fenced(_));
                        let reason = e.to_string();
                        io.handle(Input::PersistFailed { kind, id, reason });
                        if fenced {
                            return revoked();
                        }
                    }
                }
            }
            Effect::Unpersist { kind, id } => {
                let store = self.store.as_mut()?;
                self.settings.spark_peers.with_book(|b| b.forget(kind, &id));
                tracing::debug!("removing record: {} {id}", kind.as_str());
                match store.remove(kind, &id).await {
                    Ok(()) => tracing::debug!("record removed: {} {id}", kind.as_str()),
                    Err(e) => {
                        tracing::error!("cannot remove the record of {} {id}: {e}", kind.as_str());
                        if matches!(e, RecoveryError::Fenced(_)) {
                            return revoked();
                        }
                    }
                }
            }
        }
        None
    }

    async fn event(&mut self, io: &mut Io<Self>, event: Own) -> Option<Stop> {
        match event {
            Own::Leader(LeaderEvent::Lost) => revoked(),
            Own::Leader(LeaderEvent::Elected) => {
                let read = match self.store.as_mut() {
                    Some(store) => store.read_all().await,
                    None => Ok(Stored::default()),
                };
                match read {
                    Ok(stored) => {
                        // Before the core dials the recovered peers: the Spark-wire ones are
                        // told in their own release, and the front launches executors for a
                        // recovered Spark application with its original description.
                        self.settings
                            .spark_peers
                            .with_book(|b| b.recovered(&stored));
                        io.handle(Input::Elected { stored });
                        None
                    }
                    Err(e) => {
                        tracing::error!(
                            "cannot read what the recovery store holds: {e}; stepping down"
                        );
                        Some(Stop::Crash)
                    }
                }
            }
            Own::Snapshot(reply) => {
                let mut status = io.core.status();
                status.now_ms = now_ms();
                let traffic = io.peers.traffic();
                let _ = reply.send(MasterSnapshot { status, traffic });
                None
            }
        }
    }

    fn peer_of(&self, io: &Io<Self>, conn: u64) -> Option<(String, PeerRole, String)> {
        io.core.peer_of(conn)
    }
}
