//! The reference Master: Spark's standalone Master, the tokio runtime around [`node::master`](crate::node::master).
//!
//! [`Master::start`] binds a listener and runs the master until [`MasterHandle::shutdown`].
//! The protocol is [`node::master`](crate::node::master)'s [`MasterCore`]; one tokio task (the
//! `runtime` loop) owns the listener, connections, recovery directory, leader election, clock and
//! timers, feeds the core and does what it outputs. Every connection has a reading task that
//! hands the loop what arrives, and an outbox task writes what it sends, in order. All traffic
//! with a worker or an application client goes over the connection the client opened, as in
//! Spark; the master dials only after a failover, to send MasterChanged to the addresses workers
//! and applications advertised.
//!
//! [`ha`] is the leader election among masters sharing a recovery directory; the in-memory
//! counterpart of this runtime, for tests, is [`node::sim::Cluster`](crate::node::sim::Cluster).

mod conns;
mod events;
pub mod ha;
mod persist;
pub mod recovery;
mod runtime;
mod spark_peers;
mod webui;

pub(crate) use conns::connect_in_process;
pub use persist::{PersistError, Persistence};
pub use spark_peers::{SparkDialFn, SparkPeerBook, SparkPeerDial, MAX_BOOKED};

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use tokio::net::TcpListener;
use tokio::sync::{mpsc, oneshot};

use super::observe::StrictObserver;
use super::ports;
use crate::messages::Version;
use crate::node::master::MasterCore;
use crate::wire::DEFAULT_MAX_FRAME_SIZE;

/// The master's settings; [`Default`] gives Spark's defaults.
#[derive(Debug, Clone)]
pub struct MasterConfig {
    /// Address to listen on. Default `127.0.0.1`.
    pub host: String,
    /// Port to listen on; 0 picks a free one. Default 7077.
    pub port: u16,
    /// How many ports up from `port` (and from `web_ui_port`) are tried when it is taken
    /// (`spark.port.maxRetries`, default 16); see [`ports`].
    pub port_retries: u16,
    /// The protocol's rules (`spread_out`, `worker_timeout`, retries, retention, redaction).
    /// Its `persistent` and `admins_only` are set from `recovery_dir` and `security` when the
    /// master starts.
    pub core: crate::node::master::Config,
    /// Where applications, workers and drivers are persisted (Spark's FILESYSTEM recovery mode);
    /// masters sharing it elect the active one with a lock file there.
    pub recovery_dir: Option<PathBuf>,
    /// Elect the active master and keep the records in ZooKeeper (Spark's ZOOKEEPER recovery
    /// mode) instead of a directory; see [`recovery::zookeeper`]. Needs the `zookeeper` feature.
    pub zookeeper: Option<recovery::ZooKeeperConfig>,
    /// How long the leader lock's lease lasts without renewal (the holder renews it every third
    /// of it). Default 3 s.
    pub lease: Duration,
    /// Largest frame accepted or sent, bytes (`spark.rpc.message.maxSize`). Default 128 MiB.
    pub max_frame_size: usize,
    /// How long a graceful close may wait for a peer that does not read before its connection
    /// is killed.
    pub send_timeout: Duration,
    /// The limits on accepted connections: how many at once (`--max-connections`), the idle
    /// timeout of peers that have not registered and of `ui` peers (`--idle-timeout`), the frame
    /// read timeout (`--frame-read-timeout`) and the bytes queued per peer (`--max-queued-bytes`).
    pub limits: crate::connection::Limits,
    /// Strict mode: every connection feeds this observer's validator.
    pub observer: Option<StrictObserver>,
    /// Protocol versions spoken, in handshakes both ways. Default: every version this crate
    /// knows; `[Version::V1]` plays a Spark 3.0 master.
    pub versions: Vec<Version>,
    /// The shared secret, admin secret and TLS of every connection (protocol/handshake.md §10).
    /// With a secret, only peers that prove it get an accepted handshake; with an admin secret,
    /// only `ui` peers that also prove it may kill all drivers, decommission workers or clear
    /// completed drivers and applications (protocol/SPEC.md, "Authentication and permissions").
    pub security: crate::connection::Security,
    /// Serve the web UI (HTML page, `/json`, `/metrics`; the `webui` feature) on this port of
    /// `host` (0: any free port; see [`MasterHandle::web_ui_addr`]), and advertise its URL to
    /// workers. `None` (the default): no web UI, and an empty URL is advertised.
    pub web_ui_port: Option<u16>,
    /// Where a failed dial of a recovered worker or application goes next: the Spark-wire
    /// front's announcement of `MasterChanged` over Spark's RPC (see [`SparkPeerDial`]).
    pub spark_peers: SparkPeerDial,
}

impl Default for MasterConfig {
    fn default() -> Self {
        MasterConfig {
            host: "127.0.0.1".into(),
            port: 7077,
            port_retries: crate::reference::ports::DEFAULT_PORT_RETRIES,
            core: crate::node::master::Config::default(),
            recovery_dir: None,
            zookeeper: None,
            lease: Duration::from_secs(3),
            max_frame_size: DEFAULT_MAX_FRAME_SIZE,
            send_timeout: Duration::from_secs(30),
            limits: crate::connection::Limits::default(),
            observer: None,
            versions: Version::ALL.to_vec(),
            security: crate::connection::Security::default(),
            web_ui_port: None,
            spark_peers: SparkPeerDial::default(),
        }
    }
}

/// The master could not start.
#[derive(Debug, thiserror::Error)]
pub enum MasterError {
    /// No port could be listened on (every port tried was taken, or another failure).
    #[error(transparent)]
    Listen(#[from] crate::reference::ports::ListenError),
    /// The bound listener has no address.
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        /// The address.
        addr: String,
        /// Why.
        source: std::io::Error,
    },
    /// The recovery directory could not be used.
    #[error("recovery directory: {0}")]
    Recovery(#[from] PersistError),
    /// The recovery store could not be set up.
    #[error("recovery: {0}")]
    Store(#[from] recovery::RecoveryError),
}

/// The reference master.
#[derive(Debug)]
pub struct Master;

#[cfg(feature = "webui")]
async fn serve_web_ui(listener: TcpListener, events: mpsc::UnboundedSender<events::Event>) {
    webui::serve(listener, events).await;
}

#[cfg(not(feature = "webui"))]
async fn serve_web_ui(_listener: TcpListener, _events: mpsc::UnboundedSender<events::Event>) {}

/// A running master.
#[derive(Debug)]
pub struct MasterHandle {
    addr: SocketAddr,
    web_ui: Option<SocketAddr>,
    stop: Option<oneshot::Sender<Stop>>,
    done: Option<tokio::task::JoinHandle<()>>,
}

/// How the master stops.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Stop {
    /// Cleanly: connections closed, the leader lock released.
    Graceful,
    /// As a crash would: connections dropped, the lock left to go stale.
    Crash,
}

impl Master {
    /// Binds the listener and starts the master. With a recovery directory the master first
    /// waits for the leader lock (standing by meanwhile), then recovers what the directory holds.
    ///
    /// ```
    /// use sparkwire::reference::master::{Master, MasterConfig};
    /// use sparkwire::reference::worker::{Worker, WorkerConfig};
    ///
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// // Any free port, and a web UI on another.
    /// let config = MasterConfig { port: 0, web_ui_port: Some(0), ..MasterConfig::default() };
    /// let master = Master::start(config).await?;
    /// assert!(master.url().starts_with("sparkwire://127.0.0.1:"));
    /// assert!(master.web_ui_addr().is_some());
    /// let worker = Worker::start(WorkerConfig {
    ///     masters: vec![sparkwire::messages::Addr::new("127.0.0.1", i32::from(master.addr().port()))],
    ///     work_dir: std::env::temp_dir().join("sparkwire-doc-worker"),
    ///     ..WorkerConfig::default()
    /// })
    /// .await
    /// .expect("worker");
    /// worker.shutdown().await;
    /// master.shutdown().await;
    /// # Ok::<(), sparkwire::reference::master::MasterError>(())
    /// # }).unwrap();
    /// ```
    pub async fn start(config: MasterConfig) -> Result<MasterHandle, MasterError> {
        let listener = ports::listen(
            &config.host,
            config.port,
            config.port_retries,
            "sparkMaster",
        )
        .await?;
        let addr = listener.local_addr().map_err(|source| MasterError::Bind {
            addr: format!("{}:{}", config.host, config.port),
            source,
        })?;
        let web_ui = ports::listen_web_ui(
            &config.host,
            config.web_ui_port,
            config.port_retries,
            "MasterUI",
        )
        .await?;
        let web_ui_addr = web_ui.as_ref().and_then(|l| l.local_addr().ok());
        let (stop_tx, stop_rx) = oneshot::channel();
        let host = addr.ip().to_string();
        let at = crate::messages::Addr::new(host.clone(), i32::from(addr.port()));
        let started_ms = crate::reference::clock::now_ms();
        // One id per incarnation: a master restarted on the same address is another endpoint.
        let id = format!("master-{host}:{}-{started_ms}", addr.port());
        let rules = crate::node::master::Config {
            persistent: config.recovery_dir.is_some() || config.zookeeper.is_some(),
            admins_only: config.security.admin_secret.is_some(),
            ..config.core.clone()
        };
        let store = recovery::open(&config, &id)?;
        let mut core = MasterCore::new(
            rules,
            at,
            tokio::time::Instant::now().into_std(),
            started_ms,
        );
        core.set_seed(0x9e37_79b9_7f4a_7c15 ^ u64::from(std::process::id()));
        core.set_web_ui_url(web_ui_addr.map_or_else(String::new, |a| {
            crate::reference::webui::web_ui_url(&host, a.port())
        }));
        let runtime = runtime::new(core, &config, id, store);
        let events_tx = runtime.events();
        let done = tokio::spawn(async move {
            let ui = web_ui.map(|listener| tokio::spawn(serve_web_ui(listener, events_tx)));
            runtime::run(runtime, listener, stop_rx).await;
            if let Some(ui) = ui {
                ui.abort();
                let _ = ui.await;
            }
        });
        Ok(MasterHandle {
            addr,
            web_ui: web_ui_addr,
            stop: Some(stop_tx),
            done: Some(done),
        })
    }
}

impl MasterHandle {
    /// The address the master listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The address its web UI listens on, if it serves one.
    pub fn web_ui_addr(&self) -> Option<SocketAddr> {
        self.web_ui
    }

    /// The master's URL, `sparkwire://host:port`.
    pub fn url(&self) -> String {
        format!("sparkwire://{}", self.addr)
    }

    /// Stops the master cleanly and waits until it stopped: connections close, the leader lock
    /// (if held) is released.
    pub async fn shutdown(mut self) {
        self.stop_with(Stop::Graceful).await;
    }

    /// Stops the master as a crash would: every connection drops at once and the leader lock is
    /// left behind to go stale (for failover tests).
    pub async fn kill(mut self) {
        self.stop_with(Stop::Crash).await;
    }

    /// Waits until the master stops by itself (it lost its leadership) or is stopped.
    ///
    /// Cancel-safe: a `stopped()` given up (a `select!` that took another branch) leaves the
    /// handle in place, so that a later [`shutdown`](Self::shutdown) still waits for the master
    /// to finish stopping (its connections closed, its leadership given up).
    pub async fn stopped(&mut self) {
        if let Some(done) = self.done.as_mut() {
            let _ = done.await;
            self.done = None;
        }
    }

    async fn stop_with(&mut self, how: Stop) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(how);
        }
        self.stopped().await;
    }
}

impl Drop for MasterHandle {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(Stop::Crash);
        }
    }
}
