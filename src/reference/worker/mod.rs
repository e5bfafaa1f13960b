//! The reference Worker: Spark's standalone Worker, the tokio runtime around [`node::worker`](crate::node::worker).
//!
//! [`Worker::start`] listens on the address the worker advertises (a new master dials it there
//! after a failover; executors open their watch connection there), registers with every master
//! of its URL at once, heartbeats to the one that answers, and runs the executors and drivers
//! that master launches as child processes, each in its own directory under the work directory.
//!
//! **Security.** A worker that runs whatever command a master sends is a remote-code-execution
//! hole (real Spark clusters have been attacked exactly so). This worker runs only what its
//! operator allowed, command and all ([`policy`](crate::node::worker::policy), SPEC §14.5): a program on
//! [`WorkerConfig::allow_exec`] only as sparkwire's `executor` subcommand with its flags, one on
//! [`WorkerConfig::allow_exec_any`] with any arguments (comparing canonical paths); the
//! application's environment only as far as [`WorkerConfig::allow_env`] allows, never the
//! loader's variables; and in a minimal environment, not the worker's own. Anything else is
//! refused with ExecutorStateChanged FAILED (or DriverStateChanged ERROR) and a message saying
//! why, which the master forwards to the application as ExecutorUpdated. The worker takes
//! commands only from the master it registered with, over that connection.
//!
//! The protocol is [`node::worker`](crate::node::worker)'s [`WorkerCore`](crate::node::worker::WorkerCore)
//! (registration with retries, heartbeats, master changes, what the master asks, the launch
//! policy applied); here:
//! - `io_loop`: the thin tokio loop that owns sockets, processes, files and clocks for it;
//! - `events`: what the parts tell each other;
//! - `runner`: executor and driver processes;
//! - `listen`: the listener and the connections to masters.

mod credentials;
mod events;
mod io_loop;
mod listen;
mod runner;
#[cfg(feature = "spark")]
pub(crate) mod spark_watch;
#[cfg(feature = "webui")]
mod webui;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use tokio::net::TcpListener;
use tokio::sync::{mpsc, oneshot};

use super::observe::StrictObserver;
use crate::messages::{Addr, Resources};
use crate::node::worker::policy::Policy;
use crate::node::worker::WorkerExit;
use crate::wire::DEFAULT_MAX_FRAME_SIZE;

/// The worker's settings.
#[derive(Debug, Clone)]
pub struct WorkerConfig {
    /// The masters to register with (one, or several for high availability).
    pub masters: Vec<Addr>,
    /// Address to listen on and advertise. Default `127.0.0.1`.
    pub host: String,
    /// Port to listen on; 0 picks a free one. Default 0.
    pub port: u16,
    /// How many ports up from `port` (and from `web_ui_port`) are tried when it is taken
    /// (`spark.port.maxRetries`, default 16); see [`ports`](super::ports).
    pub port_retries: u16,
    /// Cores offered. Default: the machine's.
    pub cores: i32,
    /// Memory offered, MiB. Default 1024.
    pub memory: i32,
    /// Custom resources offered, by name.
    pub resources: Resources,
    /// Where executors and drivers run: `<work_dir>/<app-id>/<exec-id>/`, `<work_dir>/<driver-id>/`.
    pub work_dir: PathBuf,
    /// Executables the worker runs only as sparkwire's `executor` subcommand with its flags
    /// ([`executor_arguments`](crate::node::worker::policy::executor_arguments)), for executors (compared after canonicalization).
    pub allow_exec: Vec<PathBuf>,
    /// Executables the worker runs with any arguments, for executors and drivers: the operator
    /// trusts them with whatever an application asks.
    pub allow_exec_any: Vec<PathBuf>,
    /// The application environment variables passed to what the worker launches: names, or
    /// prefixes ending in `*`. Default `SPARK_*`. [`forbidden_env`](crate::node::worker::policy::forbidden_env) variables never pass.
    pub allow_env: Vec<String>,
    /// The worker's own variables a launched process gets, besides PATH and HOME.
    pub pass_env: Vec<String>,
    /// The master's worker timeout; heartbeats go every quarter of it (Spark: 60 s, so 15 s).
    pub worker_timeout: Duration,
    /// Interval between registration attempts at first; fuzzed by ±50 % and six times longer
    /// after six attempts, as Spark does (Spark: 10 s).
    pub register_retry: Duration,
    /// Largest frame accepted or sent, bytes. Default 128 MiB.
    pub max_frame_size: usize,
    /// How long a graceful close may wait for a peer that does not read before its connection
    /// is killed.
    pub send_timeout: Duration,
    /// The limits on accepted connections (`--max-connections`, `--idle-timeout` for `ui` and
    /// `driverClient` peers, `--frame-read-timeout`, `--max-queued-bytes`).
    pub limits: crate::connection::Limits,
    /// Strict mode: connections UIs open to the worker feed this observer's validator.
    pub observer: Option<StrictObserver>,
    /// The shared secret and TLS of every connection (protocol/handshake.md §10). The worker
    /// hands the secret to the executors and drivers it launches through a private file
    /// (`launch_secret`), never on a command line.
    pub security: crate::connection::Security,
    /// The TLS certificate authorities' file handed to launched processes (as
    /// `SPARKWIRE_TLS_CA`), if any.
    pub launch_tls_ca: Option<PathBuf>,
    /// Serve the web UI (HTML page, `/json`, `/metrics`, `/logPage/`; the `webui` feature) on
    /// this port of `host` (0: any free port; see [`WorkerHandle::web_ui_addr`]) and advertise
    /// its URL to masters. `None` (the default): no web UI, and an empty URL is advertised.
    pub web_ui_port: Option<u16>,
    /// Also run Spark's own executors (`CoarseGrainedExecutorBackend`) from a Spark
    /// installation, and serve their `WorkerWatcher`s on a Spark-wire port (feature `spark`).
    /// `None` (the default): only sparkwire's executor runs.
    pub spark: Option<SparkSettings>,
}

/// How a worker runs Spark's own executors (`sparkwire worker --spark-home`).
#[derive(Debug, Clone, Default)]
pub struct SparkSettings {
    /// The Spark installation (`SPARK_HOME`: `jars/`, `conf/`).
    pub home: PathBuf,
    /// Spark's configuration directory; default `<home>/conf`.
    pub conf_dir: Option<PathBuf>,
    /// The `java` to run; default `$JAVA_HOME/bin/java`, else the first `java` on PATH.
    pub java: Option<PathBuf>,
    /// Port of `host` for the executors' `WorkerWatcher`s (Spark's RPC, `CheckExistence` of
    /// `Worker`); 0 picks a free one. Their `--worker-url` is `spark://Worker@HOST:PORT`.
    pub port: u16,
    /// Directories an application's class path entries may be under.
    pub class_path_dirs: Vec<PathBuf>,
    /// JVM options an application may give beyond the shapes allowed by default (exact, or a
    /// prefix ending in `*`).
    pub java_opts: Vec<String>,
}

impl SparkSettings {
    /// The `java` program: the one given, or `$JAVA_HOME/bin/java`, or `java` on PATH.
    fn java(&self) -> Result<PathBuf, String> {
        if let Some(j) = &self.java {
            return std::fs::canonicalize(j)
                .map_err(|e| format!("--spark-java {}: {e}", j.display()));
        }
        if let Some(home) = std::env::var_os("JAVA_HOME") {
            let j = PathBuf::from(home).join("bin/java");
            if j.is_file() {
                return Ok(j);
            }
        }
        std::env::var_os("PATH")
            .iter()
            .flat_map(std::env::split_paths)
            .map(|d| d.join("java"))
            .find(|j| j.is_file())
            .ok_or_else(|| {
                "no java: set JAVA_HOME, put java on PATH, or give --spark-java".to_string()
            })
    }

    /// The installation's executors, under this policy, once the watcher port is known.
    fn executors(&self) -> Result<crate::node::worker::spark::SparkExecutors, String> {
        let jars = self.home.join("jars");
        let listing = std::fs::read_dir(&jars)
            .map_err(|e| format!("--spark-home: cannot list {}: {e}", jars.display()))?;
        let names: Vec<String> = listing
            .filter_map(|e| e.ok())
            .filter_map(|e| e.file_name().into_string().ok())
            .collect();
        let mut logging_jars: Vec<String> = names
            .iter()
            .filter(|n| n.starts_with("slf4j-api-") && n.ends_with(".jar"))
            .cloned()
            .collect();
        logging_jars.sort();
        // The release the worker announces (SPEC §15.5): its executors are this release's.
        let release = crate::node::worker::spark::release_of_jars(names.iter().map(String::as_str));
        match &release {
            Some(r) => tracing::info!(
                "Spark's executors from {} are Spark {r}'s; announcing that release",
                self.home.display()
            ),
            None => tracing::warn!(
                "--spark-home {}: no single spark-core_*.jar in {} tells its Spark release; \
                 announcing none (a master then places any application on this worker)",
                self.home.display(),
                jars.display()
            ),
        }
        let mut executors = crate::node::worker::spark::SparkExecutors::new(
            self.home.clone(),
            self.java()?,
            logging_jars,
        )
        .with_class_path_dirs(self.class_path_dirs.clone())
        .with_java_opts(self.java_opts.clone())
        .with_release(release);
        if let Some(conf) = &self.conf_dir {
            executors = executors.with_conf_dir(conf.clone());
        }
        Ok(executors)
    }
}

impl Default for WorkerConfig {
    fn default() -> Self {
        WorkerConfig {
            masters: Vec::new(),
            host: "127.0.0.1".into(),
            port: 0,
            port_retries: crate::reference::ports::DEFAULT_PORT_RETRIES,
            cores: std::thread::available_parallelism()
                .map(|n| i32::try_from(n.get()).unwrap_or(1))
                .unwrap_or(1),
            memory: 1024,
            resources: Resources::new(),
            work_dir: std::env::temp_dir().join("sparkwire-work"),
            allow_exec: Vec::new(),
            allow_exec_any: Vec::new(),
            allow_env: vec!["SPARK_*".into()],
            pass_env: Vec::new(),
            worker_timeout: Duration::from_secs(60),
            register_retry: Duration::from_secs(10),
            max_frame_size: DEFAULT_MAX_FRAME_SIZE,
            send_timeout: Duration::from_secs(30),
            limits: crate::connection::Limits::default(),
            observer: None,
            security: crate::connection::Security::default(),
            launch_tls_ca: None,
            web_ui_port: None,
            spark: None,
        }
    }
}

/// The worker could not start.
#[derive(Debug, thiserror::Error)]
pub enum WorkerError {
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
    /// The work directory could not be created.
    #[error("cannot create the work directory {dir}: {source}")]
    WorkDir {
        /// The directory.
        dir: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// No master to register with.
    #[error("no master address given")]
    NoMaster,
    /// Spark's executors cannot be run as configured.
    #[error("cannot run Spark's executors: {0}")]
    Spark(String),
}

/// The reference worker.
#[derive(Debug)]
pub struct Worker;

#[cfg(feature = "webui")]
async fn serve_web_ui(
    listener: TcpListener,
    events: mpsc::UnboundedSender<events::WEvent>,
    work_dir: PathBuf,
) {
    webui::serve(listener, events, work_dir).await;
}

#[cfg(not(feature = "webui"))]
async fn serve_web_ui(
    _listener: TcpListener,
    _events: mpsc::UnboundedSender<events::WEvent>,
    _work_dir: PathBuf,
) {
}

/// A running worker.
#[derive(Debug)]
pub struct WorkerHandle {
    addr: SocketAddr,
    web_ui: Option<SocketAddr>,
    id: String,
    stop: Option<oneshot::Sender<()>>,
    done: Option<tokio::task::JoinHandle<WorkerExit>>,
    spark: Option<SocketAddr>,
}

impl Worker {
    /// Binds the listener and starts the worker, which registers with its masters at once. It
    /// runs only the executables of [`WorkerConfig::allow_exec`]; see [`Master::start`] for an
    /// example.
    ///
    /// [`Master::start`]: crate::reference::master::Master::start
    pub async fn start(config: WorkerConfig) -> Result<WorkerHandle, WorkerError> {
        if config.masters.is_empty() {
            return Err(WorkerError::NoMaster);
        }
        std::fs::create_dir_all(&config.work_dir).map_err(|source| WorkerError::WorkDir {
            dir: config.work_dir.clone(),
            source,
        })?;
        let listener = super::ports::listen(
            &config.host,
            config.port,
            config.port_retries,
            "sparkWorker",
        )
        .await?;
        let addr = listener.local_addr().map_err(|source| WorkerError::Bind {
            addr: format!("{}:{}", config.host, config.port),
            source,
        })?;
        let web_ui = super::ports::listen_web_ui(
            &config.host,
            config.web_ui_port,
            config.port_retries,
            "WorkerUI",
        )
        .await?;
        let web_ui_addr = web_ui.as_ref().and_then(|l| l.local_addr().ok());
        let mut config = config;
        let watchers = match config.spark.as_mut() {
            Some(spark) => Some(Self::spark_port(&config.host, config.port_retries, spark).await?),
            None => None,
        };
        let spark_addr = watchers.as_ref().and_then(|l| l.local_addr().ok());
        // With a secret, the executors' watchers authenticate as Spark's worker demands it.
        let watch_secret = config
            .security
            .secret
            .as_ref()
            .map(|s| String::from_utf8_lossy(s.expose()).into_owned());
        let work_dir = config.work_dir.clone();
        let (stop_tx, stop_rx) = oneshot::channel();
        let web_ui_url = web_ui_addr.map_or_else(String::new, |a| {
            crate::reference::webui::web_ui_url(&config.host, a.port())
        });
        let runtime = io_loop::new(config, addr, web_ui_url);
        let id = runtime.io.core.id().to_string();
        let events_tx = runtime.events();
        let done = tokio::spawn(async move {
            let ui = web_ui.map(|l| tokio::spawn(serve_web_ui(l, events_tx, work_dir)));
            let (watch_stop, watch_stopped) = tokio::sync::watch::channel(false);
            let watch =
                watchers.map(|l| tokio::spawn(serve_watchers(l, watch_stopped, watch_secret)));
            let exit = io_loop::run(runtime, listener, stop_rx).await;
            if let Some(ui) = ui {
                ui.abort();
                let _ = ui.await;
            }
            // The watcher connections close last: Spark's executors exit when they do.
            let _ = watch_stop.send(true);
            if let Some(w) = watch {
                let _ = w.await;
            }
            exit
        });
        Ok(WorkerHandle {
            addr,
            web_ui: web_ui_addr,
            id,
            stop: Some(stop_tx),
            done: Some(done),
            spark: spark_addr,
        })
    }

    /// Binds the Spark-wire port of `spark` (its `port` becomes the one bound) after checking
    /// that the installation can run executors.
    async fn spark_port(
        host: &str,
        retries: u16,
        spark: &mut SparkSettings,
    ) -> Result<TcpListener, WorkerError> {
        if !cfg!(feature = "spark") {
            return Err(WorkerError::Spark(
                "this build has no Spark wire (the spark feature)".into(),
            ));
        }
        spark.executors().map_err(WorkerError::Spark)?;
        let listener =
            super::ports::listen(host, spark.port, retries, "sparkWorkerWatchers").await?;
        let addr = listener.local_addr().map_err(|source| WorkerError::Bind {
            addr: format!("{host}:{}", spark.port),
            source,
        })?;
        spark.port = addr.port();
        Ok(listener)
    }
}

#[cfg(feature = "spark")]
async fn serve_watchers(
    listener: TcpListener,
    stop: tokio::sync::watch::Receiver<bool>,
    secret: Option<String>,
) {
    spark_watch::serve(listener, crate::messages::Version::V2, stop, secret).await;
}

#[cfg(not(feature = "spark"))]
async fn serve_watchers(
    _listener: TcpListener,
    _stop: tokio::sync::watch::Receiver<bool>,
    _secret: Option<String>,
) {
}

impl WorkerHandle {
    /// The address the worker listens on (and advertises).
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The address its web UI listens on, if it serves one.
    pub fn web_ui_addr(&self) -> Option<SocketAddr> {
        self.web_ui
    }

    /// The address of its Spark-wire port for Spark executors' watchers, if it runs Spark's
    /// executors ([`WorkerConfig::spark`]).
    pub fn spark_addr(&self) -> Option<SocketAddr> {
        self.spark
    }

    /// The worker's id, `worker-yyyyMMddHHmmss-host-port`.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// Stops the worker: its executors and drivers are killed, its connections closed.
    pub async fn shutdown(mut self) -> WorkerExit {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        self.stopped().await
    }

    /// Waits until the worker stops (by itself or on request) and says why.
    pub async fn stopped(&mut self) -> WorkerExit {
        match self.done.take() {
            Some(done) => done.await.unwrap_or(WorkerExit::Stopped),
            None => WorkerExit::Stopped,
        }
    }
}

impl Drop for WorkerHandle {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

impl WorkerConfig {
    /// The core's part of the settings.
    pub(crate) fn rules(&self) -> crate::node::worker::Config {
        crate::node::worker::Config {
            masters: self.masters.clone(),
            cores: self.cores,
            memory: self.memory,
            resources: self.resources.clone(),
            worker_timeout: self.worker_timeout,
            register_retry: self.register_retry,
            work_dir: self.work_dir.clone(),
            hands_secret: self.security.secret.is_some(),
            launch_tls_ca: self.launch_tls_ca.clone(),
        }
    }

    /// The launch policy: the allow-lists' canonical paths, and the worker's own variables a
    /// launched process inherits (PATH, HOME and `pass_env`), read once now.
    pub(crate) fn launch_policy(&self) -> Policy {
        let inherited = ["PATH", "HOME"]
            .into_iter()
            .chain(self.pass_env.iter().map(String::as_str))
            .filter_map(|name| {
                std::env::var_os(name)
                    .and_then(|v| v.into_string().ok())
                    .map(|v| (name.to_string(), v))
            })
            .collect();
        let policy = Policy::from_parts(
            canonical_allow_list(&self.allow_exec),
            canonical_allow_list(&self.allow_exec_any),
            self.allow_env.clone(),
            inherited,
            |p| std::fs::canonicalize(p),
        );
        // `Worker::start` checked the installation and bound the port first.
        match self.spark.as_ref().map(|s| (s.executors(), s.port)) {
            Some((Ok(executors), port)) => {
                let url = format!("spark://Worker@{}:{port}", self.host);
                policy.with_spark(executors, url)
            }
            Some((Err(why), _)) => {
                tracing::warn!("not running Spark's executors: {why}");
                policy
            }
            None => policy,
        }
    }
}

/// The canonical allow-list: paths that cannot be canonicalized are left out with a warning.
fn canonical_allow_list(paths: &[PathBuf]) -> Vec<PathBuf> {
    paths
        .iter()
    .filter_map(|p| match std::fs::canonicalize(p) {
        Ok(c) => Some(c),
        Err(e) => {
            tracing::warn!(path = %p.display(), error = %e, "allow-list entry not found; ignored");
            None
        }
    })
    .collect()
}
