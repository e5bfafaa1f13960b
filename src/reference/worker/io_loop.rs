//! The worker's loop: it owns the listener, the connections (the shared `Peers` table), the
//! processes and the clock, feeds the [core](crate::node::worker::WorkerCore) what happens, and
//! carries out what the core decides. It decides nothing itself.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::net::TcpListener;
use tokio::sync::{mpsc, oneshot, watch};

use super::events::WEvent;
use super::listen::{self, ConnSettings};
use super::runner::{self, Running};
use super::WorkerConfig;
use crate::connection::{ConnectionError, Incoming, Security};
use crate::messages::Addr;
use crate::node::clock::stamp;
use crate::node::worker::{Effect, Identity, Input, RunKey, WorkerCore, WorkerExit};
use crate::node::{Core, Output};
use crate::reference::clock::now_ms;
use crate::reference::runtime::Peers;

/// The worker's loop and what it owns. See the module documentation.
pub(crate) struct WorkerLoop {
    core: WorkerCore,
    config_summary: (String, i32, i32, i32),
    warn_no_program: bool,
    security: Security,
    peers: Peers,
    running: HashMap<RunKey, Running>,
    events: mpsc::UnboundedSender<WEvent>,
    settings: ConnSettings,
    stopping: watch::Sender<bool>,
}

impl WorkerLoop {
    /// The loop of a worker listening on `addr`, its web UI (if any) at `web_ui_url`.
    pub(crate) fn new(
        config: WorkerConfig,
        addr: SocketAddr,
        web_ui_url: String,
        events: mpsc::UnboundedSender<WEvent>,
    ) -> Self {
        let host = config.host.clone();
        let port = i32::from(addr.port());
        let id = format!("worker-{}-{host}-{port}", stamp(now_ms()));
        let (stopping, stopping_rx) = watch::channel(false);
        let settings = ConnSettings {
            id: id.clone(),
            max_frame_size: config.max_frame_size,
            handshake_timeout: Duration::from_secs(10),
            observer: config.observer.clone(),
            next_conn: Arc::new(AtomicU64::new(1)),
            stopping: stopping_rx,
            security: config.security.clone(),
            admission: crate::connection::Admission::new(config.limits),
        };
        let me = Identity {
            id,
            addr: Addr::new(host.clone(), port),
            web_ui_url,
            seed: now_ms() as u64 ^ u64::from(std::process::id()) ^ 0x2545_f491_4f6c_dd1d,
        };
        let policy = config.launch_policy();
        WorkerLoop {
            config_summary: (host, port, config.cores, config.memory),
            warn_no_program: config.allow_exec.is_empty()
                && config.allow_exec_any.is_empty()
                && config.spark.is_none(),
            security: config.security.clone(),
            peers: Peers::new(config.send_timeout),
            core: WorkerCore::new(config.rules(), policy, me, Instant::now()),
            running: HashMap::new(),
            events,
            settings,
            stopping,
        }
    }

    /// The worker's id.
    pub(crate) fn id(&self) -> &str {
        self.core.id()
    }

    pub(crate) async fn run(
        mut self,
        listener: TcpListener,
        mut events: mpsc::UnboundedReceiver<WEvent>,
        mut stop: oneshot::Receiver<()>,
    ) -> WorkerExit {
        let listening = tokio::spawn(listen::listen(
            listener,
            self.settings.clone(),
            self.events.clone(),
        ));
        let (host, port, cores, memory) = &self.config_summary;
        tracing::info!("Starting Spark worker {host}:{port} with {cores} cores, {memory} MiB RAM");
        if self.warn_no_program {
            tracing::warn!(
                "no executable is allowed (--allow-exec, --allow-exec-any): this worker will refuse every \
                 executor and driver it is asked to launch"
            );
        }
        self.core.start(Instant::now());
        self.drain();
        let exit = loop {
            if let Some(exit) = self.core.exit() {
                break exit.clone();
            }
            let wake = self.core.poll_timeout();
            tokio::select! {
                _ = &mut stop => break WorkerExit::Stopped,
                event = events.recv() => match event {
                    Some(e) => self.event(e),
                    None => break WorkerExit::Stopped,
                },
                _ = crate::reference::clock::sleep_until(wake) => self.core.handle_timeout(Instant::now()),
            }
            self.drain();
        };
        listening.abort();
        // Wait until the listener is dropped, so the port is free when this returns.
        let _ = listening.await;
        let _ = self.stopping.send(true);
        for r in self.running.values_mut() {
            r.kill();
        }
        self.peers.kill_all();
        tracing::info!(worker = %self.core.id(), "worker stopped: {exit}");
        exit
    }

    fn event(&mut self, event: WEvent) {
        let now = Instant::now();
        // The credit of an incoming message, released once the core has handled it.
        let mut _credit = None;
        let input = match event {
            WEvent::Opened {
                conn,
                peer,
                role,
                purpose,
                addr,
                peer_id,
            } => {
                let version = peer.handle.negotiated().version;
                self.peers.opened(conn, peer);
                Input::Opened {
                    conn,
                    role,
                    purpose,
                    version,
                    addr,
                    peer_id,
                }
            }
            WEvent::Incoming(conn, incoming, credit) => {
                _credit = Some(credit);
                match incoming {
                    Incoming::Message(message) => Input::Message { conn, message },
                    Incoming::Ask { id, message } => Input::Ask { conn, id, message },
                }
            }
            WEvent::Closed(conn, why) => {
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
            WEvent::Ended(key, ended) => {
                self.running.remove(&key);
                Input::Ended { key, ended }
            }
            WEvent::Snapshot(reply) => {
                let _ = reply.send(self.snapshot());
                return;
            }
            WEvent::DialFailed(master, e) => {
                let reason = match e {
                    ConnectionError::Connect { .. } => e.to_string(),
                    other => format!("cannot register with {master}: {other}"),
                };
                Input::DialFailed { reason }
            }
        };
        self.core.handle(now, input);
    }

    /// Carries out what the core decided, in order: the one place its outputs are drained.
    fn drain(&mut self) {
        while let Some(out) = self.core.poll() {
            match out {
                Output::Conn(out) => self.peers.write(out),
                Output::Effect(Effect::Dial(master)) => {
                    listen::dial_master(master, self.settings.clone(), self.events.clone())
                }
                Output::Effect(Effect::Start(launch)) => {
                    let key = launch.key.clone();
                    let input = match runner::start(launch, &self.security, self.events.clone()) {
                        Ok(running) => {
                            self.running.insert(key.clone(), running);
                            Input::Started { key }
                        }
                        Err(reason) => Input::StartFailed { key, reason },
                    };
                    self.core.handle(Instant::now(), input);
                }
                Output::Effect(Effect::Kill(key)) => {
                    if let Some(r) = self.running.get_mut(&key) {
                        r.kill();
                    }
                }
            }
        }
    }

    /// What the web UI shows now.
    fn snapshot(&self) -> crate::reference::webui::WorkerSnapshot {
        crate::reference::webui::WorkerSnapshot {
            state: self.core.state_response(),
            connections: self.core.connection_roles(),
            traffic: self.peers.traffic(),
        }
    }
}
