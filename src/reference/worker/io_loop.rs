//! The worker's part of the [driver](crate::reference::runtime): the listener, dialling its
//! masters, the processes it runs and the web UI's snapshots around the sans-IO
//! [`WorkerCore`]. It decides nothing itself.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;
use std::time::Duration;

use tokio::net::TcpListener;
use tokio::sync::{oneshot, watch};

use super::events::Own;
use super::listen::{self, ConnSettings};
use super::runner::{self, Running};
use super::WorkerConfig;
use crate::connection::Security;
use crate::messages::{Addr, DeployMessage};
use crate::node::clock::stamp;
use crate::node::worker::{Effect, Identity, Input, Purpose, RunKey, WorkerCore, WorkerExit};
use crate::reference::clock::now_ms;
use crate::reference::runtime::{now, Io, Role, Runtime};
use crate::wire::handshake::Role as PeerRole;

/// The worker's IO: its connections' settings, the processes it runs.
pub(crate) struct WorkerIo {
    config_summary: (String, i32, i32, i32),
    warn_no_program: bool,
    security: Security,
    running: HashMap<RunKey, Running>,
    settings: ConnSettings,
    stopping: watch::Sender<bool>,
}

/// The driver of a worker listening on `addr`, its web UI (if any) at `web_ui_url`.
pub(crate) fn new(config: WorkerConfig, addr: SocketAddr, web_ui_url: String) -> Runtime<WorkerIo> {
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
    let core = WorkerCore::new(config.rules(), config.launch_policy(), me, now());
    let role = WorkerIo {
        config_summary: (host, port, config.cores, config.memory),
        warn_no_program: config.allow_exec.is_empty()
            && config.allow_exec_any.is_empty()
            && config.spark.is_none(),
        security: config.security.clone(),
        running: HashMap::new(),
        settings,
        stopping,
    };
    Runtime::new(core, role, config.send_timeout)
}

/// Runs the worker until stopped or until its core ends.
pub(crate) async fn run(
    mut rt: Runtime<WorkerIo>,
    listener: TcpListener,
    stop: oneshot::Receiver<()>,
) -> WorkerExit {
    let listening = tokio::spawn(listen::listen(
        listener,
        rt.role.settings.clone(),
        rt.events(),
    ));
    let (host, port, cores, memory) = &rt.role.config_summary;
    tracing::info!("Starting Spark worker {host}:{port} with {cores} cores, {memory} MiB RAM");
    if rt.role.warn_no_program {
        tracing::warn!(
            "no executable is allowed (--allow-exec, --allow-exec-any): this worker will refuse every \
             executor and driver it is asked to launch"
        );
    }
    rt.io.core.start(now());
    let exit = rt
        .run(async move {
            let _ = stop.await;
            WorkerExit::Stopped
        })
        .await;
    listening.abort();
    // Wait until the listener is dropped, so the port is free when this returns.
    let _ = listening.await;
    let _ = rt.role.stopping.send(true);
    for r in rt.role.running.values_mut() {
        r.kill();
    }
    rt.io.peers.kill_all();
    tracing::info!(worker = %rt.io.core.id(), "worker stopped: {exit}");
    exit
}

impl Role for WorkerIo {
    type Message = DeployMessage;
    type Core = WorkerCore;
    type Origin = Purpose;
    type Event = Own;
    type Exit = WorkerExit;

    async fn effect(&mut self, io: &mut Io<Self>, effect: Effect) -> Option<WorkerExit> {
        match effect {
            Effect::Dial(master) => {
                listen::dial_master(master, self.settings.clone(), io.events.clone())
            }
            Effect::Start(launch) => {
                let key = launch.key.clone();
                let input = match runner::start(launch, &self.security, io.events.clone()) {
                    Ok(running) => {
                        self.running.insert(key.clone(), running);
                        Input::Started { key }
                    }
                    Err(reason) => Input::StartFailed { key, reason },
                };
                io.handle(input);
            }
            Effect::Kill(key) => {
                if let Some(r) = self.running.get_mut(&key) {
                    r.kill();
                }
            }
        }
        None
    }

    async fn event(&mut self, io: &mut Io<Self>, event: Own) -> Option<WorkerExit> {
        match event {
            Own::Ended(key, ended) => {
                self.running.remove(&key);
                io.handle(Input::Ended { key, ended });
            }
            Own::Snapshot(reply) => {
                let _ = reply.send(crate::reference::webui::WorkerSnapshot {
                    state: io.core.state_response(),
                    connections: io.core.connection_roles(),
                    traffic: io.peers.traffic(),
                });
            }
        }
        None
    }

    fn ended(&self, core: &WorkerCore) -> Option<WorkerExit> {
        core.exit().cloned()
    }

    fn peer_of(&self, io: &Io<Self>, conn: u64) -> Option<(String, PeerRole, String)> {
        io.core.peer_of(conn)
    }
}
