//! The reference driver: the tokio shells of the driver's cores in [`crate::node::driver`], the
//! application client (Spark's `StandaloneAppClient`: registration with the masters) and the
//! scheduler backend (`CoarseGrainedSchedulerBackend`'s `DriverEndpoint`, which executors register
//! with and get tasks from, with a small task scheduler: FIFO task sets, offers, retries). The
//! shells own the sockets, the timers and the callers' handles; the cores decide.
//!
//! [`Driver::start`] listens for executors at the URL it advertises ([`Driver::url`]) and, when
//! given masters, registers the application with each of them; the application's command starts
//! `sparkwire executor` with Spark's placeholders, so that workers launch executors that come back
//! to this driver. [`Driver::submit`] runs a [`Job`]: one task per partition, each taking
//! `task_cpus` cores of an executor, retried up to `max_task_failures` attempts.
//!
//! ```no_run
//! use std::sync::Arc;
//! use sparkwire::reference::driver::{Driver, DriverConfig};
//! use sparkwire::reference::task::PiJob;
//!
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! let mut config = DriverConfig::new("SparkPi");
//! config.masters = vec!["spark://127.0.0.1:7077".into()];
//! let driver = Driver::start(config).await?;
//! let job = driver.submit(Arc::new(PiJob { partitions: 10, samples: 100_000, seed: 42 })).await?;
//! println!("{}", job.result().await?.output);
//! driver.stop().await;
//! # Ok(()) }
//! ```

mod app_client;
mod events;
mod job;
mod listener;
mod scheduler_backend;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use tokio::net::TcpListener;
use tokio::sync::oneshot;

use crate::connection::Counters;
use crate::messages::{Addr, ApplicationDescription, Command, EndpointRef, ResourceProfile};
use crate::node::driver::{BackendConfig, Job, JobFailed, JobResult, SubmitRefused};
use crate::node::url::{SparkUrl, UrlError};
use crate::reference::tap::TraceObserver;

pub use job::JobHandle;
pub use scheduler_backend::DriverStatus;

/// The endpoint name executors address: `spark://CoarseGrainedScheduler@host:port`.
pub const ENDPOINT_NAME: &str = "CoarseGrainedScheduler";

/// How a driver runs.
#[derive(Debug, Clone)]
pub struct DriverConfig {
    /// Application name.
    pub app_name: String,
    /// The driver's id in traces and validator verdicts.
    pub id: String,
    /// Where to listen for executors (port 0: any free port).
    pub listen: SocketAddr,
    /// The host put in the advertised URL.
    pub advertise_host: String,
    /// Masters to register with (`spark://host:port`); none: executors are started by hand.
    pub masters: Vec<String>,
    /// The program workers run to start an executor, with arguments before `executor`'s own
    /// (defaults: this executable, `["executor"]`).
    pub executor_program: String,
    /// Arguments before the executor's own.
    pub executor_args: Vec<String>,
    /// Cores per executor (Spark's `spark.executor.cores`); `None`: all of a worker's.
    pub executor_cores: Option<u32>,
    /// Memory per executor, MiB (`spark.executor.memory`).
    pub executor_memory_mb: u32,
    /// Most cores the application holds (`spark.cores.max`); `None`: no limit.
    pub max_cores: Option<u32>,
    /// Cores per task (`spark.task.cpus`, default 1).
    pub task_cpus: u32,
    /// Attempts of a task before its job fails (`spark.task.maxFailures`, default 4).
    pub max_task_failures: u32,
    /// Offers to every executor at this interval (`spark.scheduler.revive.interval`, 1 s).
    pub revive_interval: Duration,
    /// Largest message, MiB (`spark.rpc.message.maxSize`, default 128); executors get it too.
    pub max_message_size_mib: u32,
    /// How long the masters have to register the application before it gives up.
    pub registration_timeout: Duration,
    /// How often the registration is sent again to masters that did not answer (Spark: 20 s).
    pub registration_retry: Duration,
    /// Validator and trace of every connection of the driver, if any.
    pub observer: Option<TraceObserver>,
    /// The shared secret and TLS of its connections: to masters, and from executors and masters.
    pub security: crate::connection::Security,
    /// How long frames for an executor may wait on its connection with none written (the
    /// executor does not read, though its queue of `limits.max_outgoing_bytes` is not full yet)
    /// before that connection is dropped and the executor lost, its tasks run elsewhere; also how
    /// long a graceful close may wait. The driver's other executors are never held up meanwhile.
    /// Default 30 s.
    pub send_timeout: Duration,
    /// The limits on the executors' connections it accepts (`--max-connections`,
    /// `--frame-read-timeout`, `--max-queued-bytes`; executors are never idle-timed).
    pub limits: crate::connection::Limits,
    /// How long the driver's loop keeps polling its connections, while tasks it launched are
    /// out, after each batch of messages it handles, before it sleeps. A tiny task's result that
    /// comes back within it is read without waking the driver, which on a virtual machine is most
    /// of a tiny task's round trip. Costs at most this much CPU after each batch, none once no
    /// tasks are out. Zero (the default here): never. Meant for a current-thread runtime, as
    /// `sparkwire driver`, `submit` and `local-cluster` use (they default to 50 µs,
    /// `--busy-poll-us`); on a multi-thread runtime it holds one worker thread while it polls.
    pub busy_poll: Duration,
}

impl DriverConfig {
    /// Spark's defaults, listening on 127.0.0.1, no master. The executor program is the
    /// `sparkwire` executable ([`default_executor_program`]).
    pub fn new(app_name: impl Into<String>) -> Self {
        let program = default_executor_program();
        DriverConfig {
            app_name: app_name.into(),
            id: "driver".into(),
            listen: SocketAddr::from(([127, 0, 0, 1], 0)),
            advertise_host: "127.0.0.1".into(),
            masters: Vec::new(),
            executor_program: program,
            executor_args: vec!["executor".into()],
            executor_cores: None,
            executor_memory_mb: 1024,
            max_cores: None,
            task_cpus: 1,
            max_task_failures: 4,
            revive_interval: Duration::from_secs(1),
            max_message_size_mib: 128,
            registration_timeout: Duration::from_secs(60),
            registration_retry: Duration::from_secs(20),
            observer: None,
            security: crate::connection::Security::default(),
            send_timeout: scheduler_backend::SEND_TIMEOUT,
            busy_poll: Duration::ZERO,
            limits: crate::connection::Limits::default(),
        }
    }

    /// The scheduler backend's rules, telling executors the driver is at `url`.
    fn backend_config(&self, url: &SparkUrl) -> BackendConfig {
        BackendConfig {
            app_name: self.app_name.clone(),
            driver_host: url.host.clone(),
            driver_port: url.port,
            task_cpus: self.task_cpus,
            max_task_failures: self.max_task_failures,
            revive_interval: self.revive_interval,
            max_message_size_mib: self.max_message_size_mib,
            executor_cores: self.executor_cores,
            executor_memory_mb: self.executor_memory_mb,
        }
    }

    /// The largest frame, in bytes.
    pub fn max_frame_size(&self) -> usize {
        self.max_message_size_mib as usize * 1024 * 1024
    }

    /// The application as registered with the masters: its command starts `sparkwire executor`
    /// with the placeholders workers fill in (`{{EXECUTOR_ID}}`, `{{HOSTNAME}}`, `{{CORES}}`,
    /// `{{APP_ID}}`, `{{WORKER_URL}}`).
    pub fn app_description(&self, driver_url: &str) -> ApplicationDescription {
        let mut arguments = self.executor_args.clone();
        for (flag, value) in [
            ("--driver-url", driver_url),
            ("--executor-id", "{{EXECUTOR_ID}}"),
            ("--hostname", "{{HOSTNAME}}"),
            ("--cores", "{{CORES}}"),
            ("--app-id", "{{APP_ID}}"),
            ("--worker-url", "{{WORKER_URL}}"),
        ] {
            arguments.push(flag.into());
            arguments.push(value.into());
        }
        let cores = self
            .executor_cores
            .map(|c| i32::try_from(c).unwrap_or(i32::MAX));
        let memory = i32::try_from(self.executor_memory_mb).unwrap_or(i32::MAX);
        ApplicationDescription {
            name: self.app_name.clone(),
            max_cores: self.max_cores.map(|c| i32::try_from(c).unwrap_or(i32::MAX)),
            command: Command {
                main_class: self.executor_program.clone(),
                arguments,
                environment: Default::default(),
                class_path_entries: Vec::new(),
                library_path_entries: Vec::new(),
                java_opts: Vec::new(),
            },
            app_ui_url: String::new(),
            default_profile: ResourceProfile::default_with(cores, memory),
            event_log_dir: None,
            event_log_codec: None,
            initial_executor_limit: None,
            user: std::env::var("USER").unwrap_or_else(|_| "sparkwire".into()),
        }
    }
}

/// The program workers are asked to run as the executor: this executable when it is
/// `sparkwire` itself (as in `sparkwire submit`), else the first `sparkwire` on `PATH`, else the
/// bare name `sparkwire`. A program that links the crate is not an executor, and a worker runs
/// only what its `--allow-exec` list names: start workers with `--allow-exec "$(command -v
/// sparkwire)"`.
pub fn default_executor_program() -> String {
    let me = std::env::current_exe().ok();
    if let Some(me) = &me {
        if me.file_stem().is_some_and(|s| s == "sparkwire") {
            return me.to_string_lossy().into_owned();
        }
    }
    let on_path = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|dir| dir.join("sparkwire"))
            .find(|candidate| candidate.is_file())
    });
    match on_path {
        Some(p) => p.to_string_lossy().into_owned(),
        None => "sparkwire".into(),
    }
}

/// Why the driver could not start or do what was asked.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum DriverError {
    /// The listening socket could not be opened.
    #[error("cannot listen on {address}: {message}")]
    Listen {
        /// The address.
        address: SocketAddr,
        /// Why.
        message: String,
    },
    /// A master address is malformed.
    #[error(transparent)]
    Url(#[from] UrlError),
    /// The driver has stopped.
    #[error("the driver has stopped")]
    Stopped,
    /// The application was removed by the master, or the masters never registered it.
    #[error("the application is dead: {0}")]
    Dead(String),
    /// The application is not registered with a master (yet, or any more).
    #[error("not registered with a master")]
    NotRegistered,
    /// A request to the master failed.
    #[error("the master did not grant the request: {0}")]
    Master(String),
}

impl From<SubmitRefused> for DriverError {
    fn from(refused: SubmitRefused) -> Self {
        match refused {
            SubmitRefused::Dead(why) => DriverError::Dead(why),
            SubmitRefused::Stopped => DriverError::Stopped,
        }
    }
}

/// A running driver. See the module documentation.
#[derive(Debug)]
pub struct Driver {
    tx: events::Backend,
    url: SparkUrl,
    address: SocketAddr,
    config: Arc<DriverConfig>,
    task: Option<tokio::task::JoinHandle<()>>,
}

/// Dropping a driver without [`Driver::stop`] ends it abruptly, as a crashed driver: its
/// connections close without StopExecutor or UnregisterApplication.
impl Drop for Driver {
    fn drop(&mut self) {
        if let Some(task) = self.task.take() {
            task.abort();
        }
    }
}

impl Driver {
    /// Listens for executors and, when masters are configured, registers the application.
    pub async fn start(config: DriverConfig) -> Result<Driver, DriverError> {
        let masters = config
            .masters
            .iter()
            .map(|m| SparkUrl::parse(m))
            .collect::<Result<Vec<_>, _>>()?;
        let listener = TcpListener::bind(config.listen)
            .await
            .map_err(|e| DriverError::Listen {
                address: config.listen,
                message: e.to_string(),
            })?;
        let address = listener.local_addr().map_err(|e| DriverError::Listen {
            address: config.listen,
            message: e.to_string(),
        })?;
        let url = SparkUrl::endpoint(ENDPOINT_NAME, config.advertise_host.clone(), address.port());
        let config = Arc::new(config);
        let (runtime, tx) = scheduler_backend::new(&config, &url);
        let accept = tokio::spawn(listener::accept_loop(
            listener,
            Arc::clone(&config),
            runtime.events(),
        ));
        let client = if masters.is_empty() {
            None
        } else {
            let desc = config.app_description(&url.to_string());
            // The application client's own address, where a master that takes over after a
            // failover reaches it (its handshake role differs from the driver endpoint's).
            let app_address = SocketAddr::new(config.listen.ip(), 0);
            let listen_error = |e: std::io::Error| DriverError::Listen {
                address: app_address,
                message: e.to_string(),
            };
            let app_listener = TcpListener::bind(app_address).await.map_err(listen_error)?;
            let app_port = app_listener.local_addr().map_err(listen_error)?.port();
            let me = EndpointRef::at(
                Addr::new(config.advertise_host.clone(), i32::from(app_port)),
                "AppClient",
            );
            Some(app_client::spawn(
                masters,
                desc,
                me,
                app_listener,
                Arc::clone(&config),
                tx.clone(),
            ))
        };
        let kept = Arc::clone(&config);
        let task = tokio::spawn(scheduler_backend::run(runtime, config, client, accept));
        Ok(Driver {
            tx,
            url,
            address,
            config: kept,
            task: Some(task),
        })
    }

    /// The URL executors are given: `spark://CoarseGrainedScheduler@host:port`.
    pub fn url(&self) -> String {
        self.url.to_string()
    }

    /// The address the driver listens on.
    pub fn address(&self) -> SocketAddr {
        self.address
    }

    async fn call<T>(
        &self,
        make: impl FnOnce(oneshot::Sender<T>) -> events::Msg,
    ) -> Result<T, DriverError> {
        let (reply, answer) = oneshot::channel();
        self.tx
            .send(make(reply))
            .map_err(|_| DriverError::Stopped)?;
        answer.await.map_err(|_| DriverError::Stopped)
    }

    /// Submits a job. Fails only when the driver has stopped or its application is dead.
    pub async fn submit(&self, job: Arc<dyn Job>) -> Result<JobHandle, DriverError> {
        let parts = self
            .call(|reply| events::Msg::Submit { job, reply })
            .await??;
        Ok(JobHandle {
            id: parts.id,
            outcome: parts.outcome,
            progress: parts.progress,
            backend: self.tx.clone(),
        })
    }

    /// Runs a job to its end.
    pub async fn run(
        &self,
        job: Arc<dyn Job>,
    ) -> Result<Result<JobResult, JobFailed>, DriverError> {
        Ok(self.submit(job).await?.result().await)
    }

    /// The driver's state now: application id, executors, traffic.
    pub async fn status(&self) -> Result<DriverStatus, DriverError> {
        self.call(events::Msg::Status).await
    }

    /// Why no executor is ready, in place of Spark's generic "Initial job has not accepted any
    /// resources…" when the driver knows more: the reason the master gives for the application
    /// (SPEC §16, asked over a `ui` connection), else the last executor's end as its worker
    /// reported it ([`starvation_reason`](crate::node::driver::starvation_reason)), else Spark's
    /// line.
    pub async fn starvation(&self, status: &DriverStatus) -> String {
        let master = match &status.app_id {
            Some(app) => {
                app_client::waiting_reason(&self.config, app, Duration::from_secs(5)).await
            }
            None => None,
        };
        match master {
            Some(reason) => format!(
                "Initial job has not accepted any resources; the master says the application waits: {reason}"
            ),
            None => crate::node::driver::starvation_reason(status.executor_ends.last()),
        }
    }

    /// Waits until at least `n` executors are registered and ready, at most `timeout`; returns
    /// the status then, or the last status seen when the time ran out. While none is ready it
    /// logs at WARN every 15 s why ([`Driver::starvation`]: the master's reason, or the last
    /// executor's end, or Spark's "Initial job has not accepted any resources…").
    pub async fn wait_for_executors(
        &self,
        n: usize,
        timeout: Duration,
    ) -> Result<DriverStatus, DriverError> {
        let deadline = tokio::time::Instant::now() + timeout;
        let mut warn_at = tokio::time::Instant::now() + crate::node::driver::STARVATION_WARNING;
        loop {
            let status = self.status().await?;
            if let Some(why) = &status.dead {
                return Err(DriverError::Dead(why.clone()));
            }
            let now = tokio::time::Instant::now();
            if status.ready_executors() >= n || now >= deadline {
                return Ok(status);
            }
            // No executor at all yet: Spark's warning, every 15 s (a cluster without workers, or
            // without room for this application, would otherwise just wait).
            if status.ready_executors() == 0 && now >= warn_at {
                let reason = self.starvation(&status).await;
                tracing::warn!("{reason}");
                warn_at = now + crate::node::driver::STARVATION_WARNING;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// Asks the master for `total` executors in all (dynamic allocation; Spark's
    /// `requestTotalExecutors`). The master's answer.
    pub async fn request_executors(&self, total: u32) -> Result<bool, DriverError> {
        self.call(|reply| events::Msg::RequestExecutors { total, reply })
            .await?
    }

    /// Asks the master to kill executors `ids` (dynamic allocation); the driver gives them no
    /// more tasks. The master's answer.
    pub async fn kill_executors(&self, ids: Vec<String>) -> Result<bool, DriverError> {
        self.call(|reply| events::Msg::KillExecutors { ids, reply })
            .await?
    }

    /// Stops: running jobs fail, every executor gets StopExecutor, the master gets
    /// UnregisterApplication, connections close. Returns the last status (traffic of every
    /// connection included).
    pub async fn stop(mut self) -> Option<DriverStatus> {
        let (reply, answer) = oneshot::channel();
        let status = if self.tx.send(events::Msg::Stop(reply)).is_ok() {
            answer.await.ok()
        } else {
            None
        };
        if let Some(task) = self.task.take() {
            let _ = task.await;
        }
        status
    }
}

/// Adds `from` into `into`.
pub fn add_counters(into: &mut Counters, from: &Counters) {
    into.sent.frames += from.sent.frames;
    into.sent.bytes += from.sent.bytes;
    into.received.frames += from.received.frames;
    into.received.bytes += from.received.bytes;
    for (name, t) in &from.sent_by_name {
        let e = into.sent_by_name.entry(name).or_default();
        e.frames += t.frames;
        e.bytes += t.bytes;
    }
    for (name, t) in &from.received_by_name {
        let e = into.received_by_name.entry(name).or_default();
        e.frames += t.frames;
        e.bytes += t.bytes;
    }
    into.late_replies += from.late_replies;
}
