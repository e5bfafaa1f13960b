//! `sparkwire worker`: runs the reference Worker until Ctrl-C or SIGTERM.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;

use super::seconds;

use sparkwire::node::url::MasterUrl;
use sparkwire::node::worker::WorkerExit;
use sparkwire::reference::worker::{SparkSettings, Worker, WorkerConfig};

/// Options of `sparkwire worker`.
#[derive(Debug, Args)]
pub struct WorkerArgs {
    /// The master(s): sparkwire://host:port[,host:port…].
    master_url: String,
    /// Address to listen on and announce (the host its executors and drivers report too).
    /// Default: SPARK_LOCAL_HOSTNAME, else SPARK_LOCAL_IP, else 127.0.0.1 (Spark's last resort
    /// is the host's own address: sparkwire opens to other hosts only when told an address).
    #[arg(long)]
    host: Option<String>,
    /// Port to listen on; 0 picks a free one.
    #[arg(long, default_value_t = 0)]
    port: u16,
    /// When the port (or the web UI's) is taken, try the next one up, at most this many times
    /// (spark.port.maxRetries); the port taken is printed and logged.
    #[arg(long, value_name = "N", default_value_t = sparkwire::reference::ports::DEFAULT_PORT_RETRIES)]
    port_retries: u16,
    /// Cores to offer (default: the machine's).
    #[arg(long)]
    cores: Option<i32>,
    /// Memory to offer, MiB.
    #[arg(long, default_value_t = 1024)]
    memory: i32,
    /// Where executors and drivers run.
    #[arg(long)]
    work_dir: Option<PathBuf>,
    /// An executable the worker may run as sparkwire's `executor` subcommand with its flags, for
    /// executors (repeatable); any other command is refused.
    #[arg(long = "allow-exec", value_name = "PATH", value_parser = allowed_program)]
    allow_exec: Vec<PathBuf>,
    /// An executable the worker may run with any arguments, for executors and drivers
    /// (repeatable): only for programs trusted with whatever an application asks.
    #[arg(long = "allow-exec-any", value_name = "PATH", value_parser = allowed_program)]
    allow_exec_any: Vec<PathBuf>,
    /// Application environment variables passed to executors and drivers: a name, or a prefix
    /// ending in `*` (repeatable; replaces the default). LD_*, DYLD_* and the like never pass.
    #[arg(long = "allow-env", value_name = "PATTERN", default_values_t = [String::from("SPARK_*")])]
    allow_env: Vec<String>,
    /// A variable of the worker's own environment that executors and drivers get, besides PATH
    /// and HOME (repeatable).
    #[arg(long = "pass-env", value_name = "NAME")]
    pass_env: Vec<String>,
    /// The master's worker timeout in seconds; heartbeats go every quarter of it.
    #[arg(long, default_value_t = 60.0)]
    worker_timeout: f64,
    /// Seconds between registration attempts at first (Spark: 10).
    #[arg(long, default_value_t = 10.0)]
    register_retry: f64,
    /// Largest frame accepted or sent, bytes.
    #[arg(long)]
    max_frame_bytes: Option<usize>,
    /// Port of the web UI (HTML page, /json, /metrics); 0 picks a free one.
    #[arg(long, default_value_t = 8081)]
    webui_port: u16,
    /// Serve no web UI.
    #[arg(long, conflicts_with = "webui_port")]
    no_webui: bool,
    /// Shut down when standard input ends: a parent that starts this process with a pipe as its
    /// standard input (as `local-cluster` does) is then never outlived, even if it is killed.
    #[arg(long)]
    exit_with_stdin: bool,
    /// Also run Spark's own executors (org.apache.spark.executor.CoarseGrainedExecutorBackend)
    /// from this Spark installation, as Spark's worker builds their Java command, and answer
    /// their WorkerWatchers on a Spark-wire port (--spark-port).
    #[arg(long, value_name = "DIR")]
    spark_home: Option<PathBuf>,
    /// Port of the Spark-wire port Spark executors' WorkerWatchers connect to (their
    /// --worker-url spark://Worker@HOST:PORT); 0 picks a free one.
    #[arg(
        long,
        value_name = "PORT",
        default_value_t = 0,
        requires = "spark_home"
    )]
    spark_port: u16,
    /// The java to run Spark's executors with (default: $JAVA_HOME/bin/java, else java on PATH).
    #[arg(long, value_name = "PATH", requires = "spark_home")]
    spark_java: Option<PathBuf>,
    /// Spark's configuration directory (default: SPARK_HOME/conf).
    #[arg(long, value_name = "DIR", requires = "spark_home")]
    spark_conf_dir: Option<PathBuf>,
    /// A directory an application's executor class path entries may be under (repeatable;
    /// default: none may be given).
    #[arg(long = "spark-class-path", value_name = "DIR", requires = "spark_home")]
    spark_class_path: Vec<PathBuf>,
    /// A JVM option applications may give their executors beyond the default shapes (-D…,
    /// -XX:…, --add-opens=…, …): exact, or a prefix ending in `*` (repeatable).
    #[arg(
        long = "spark-java-opt",
        value_name = "OPTION",
        requires = "spark_home"
    )]
    spark_java_opt: Vec<String>,
    #[command(flatten)]
    security: super::security::SecurityArgs,
    #[command(flatten)]
    limits: super::limits::LimitArgs,
    #[command(flatten)]
    idle: super::limits::IdleArgs,
}

/// An `--allow-exec` or `--allow-exec-any` program: a file that exists and may be executed. An
/// empty value is explained: it is what `"$(command -v sparkwire)"` gives when `sparkwire` is not
/// on PATH (as when it is run with `cargo run --`).
fn allowed_program(value: &str) -> Result<PathBuf, String> {
    if value.is_empty() {
        return Err(
            "an empty path. If it came from \"$(command -v sparkwire)\", no sparkwire is \
                    on PATH (as when running with `cargo run --`): give the binary's path, such \
                    as target/release/sparkwire, or `cargo install --path .` first"
                .into(),
        );
    }
    let path = PathBuf::from(value);
    let meta = std::fs::metadata(&path).map_err(|e| format!("{e}: no such program to allow"))?;
    if !meta.is_file() {
        return Err("not a file: a worker runs only programs".into());
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        if meta.permissions().mode() & 0o111 == 0 {
            return Err("not executable (chmod +x it first)".into());
        }
    }
    Ok(path)
}

/// Runs the command.
pub fn run(args: WorkerArgs) -> Result<ExitCode, String> {
    super::init_logging();
    let url = MasterUrl::parse(&args.master_url).map_err(|e| e.to_string())?;
    for (name, v) in [
        ("--worker-timeout", args.worker_timeout),
        ("--register-retry", args.register_retry),
    ] {
        if !(v.is_finite() && v > 0.0) {
            return Err(format!("{name} must be a positive number of seconds"));
        }
    }
    let host = super::address::daemon_host(
        args.host.as_deref(),
        false,
        sparkwire::reference::address::process_env,
    );
    let security = super::security::listening(&args.security, &host, "worker")?;
    if security.encrypts() && args.security.tls.tls_ca.is_none() {
        return Err("a worker dials its masters: TLS needs --tls-ca too".into());
    }
    let launch_tls_ca = args
        .security
        .tls
        .tls_ca
        .as_deref()
        .map(std::path::absolute)
        .transpose()
        .map_err(|e| format!("--tls-ca: {e}"))?;
    let mut config = WorkerConfig {
        limits: super::limits::limits(&args.limits, Some(&args.idle))?,
        security,
        launch_tls_ca,
        masters: url.masters,
        host,
        port: args.port,
        port_retries: args.port_retries,
        memory: args.memory,
        allow_exec: args.allow_exec,
        allow_exec_any: args.allow_exec_any,
        allow_env: args.allow_env,
        pass_env: args.pass_env,
        worker_timeout: seconds(args.worker_timeout)
            .map_err(|e| format!("--worker-timeout: {e}"))?,
        register_retry: seconds(args.register_retry)
            .map_err(|e| format!("--register-retry: {e}"))?,
        web_ui_port: (!args.no_webui).then_some(args.webui_port),
        spark: args.spark_home.map(|home| SparkSettings {
            home,
            conf_dir: args.spark_conf_dir,
            java: args.spark_java,
            port: args.spark_port,
            class_path_dirs: args.spark_class_path,
            java_opts: args.spark_java_opt,
        }),
        ..WorkerConfig::default()
    };
    if let Some(c) = args.cores {
        config.cores = c;
    }
    if let Some(dir) = args.work_dir {
        config.work_dir = dir;
    }
    if let Some(max) = super::limits::max_frame_bytes(args.max_frame_bytes)? {
        config.max_frame_size = max;
    }
    super::runtime()?.block_on(async move {
        let mut worker = Worker::start(config).await.map_err(|e| e.to_string())?;
        // One write: whoever reads only the first line may close the pipe after it.
        let mut announce = format!(
            "sparkwire worker {} listening on sparkwire://{}\n",
            worker.id(),
            worker.addr()
        );
        if let Some(ui) = worker.web_ui_addr() {
            announce.push_str(&format!("sparkwire worker web UI at http://{ui}\n"));
        }
        if let Some(spark) = worker.spark_addr() {
            announce.push_str(&format!(
                "sparkwire worker runs Spark's executors; their watchers connect to spark://Worker@{spark}\n"
            ));
        }
        let _ = std::io::Write::write_all(&mut std::io::stdout(), announce.as_bytes());
        super::flush_stdout();
        let exit = tokio::select! {
            why = super::stop_requested(args.exit_with_stdin) => {
                tracing::info!("{why}; shutting down");
                worker.shutdown().await
            }
            exit = worker.stopped() => exit,
        };
        Ok(match exit {
            WorkerExit::Stopped => ExitCode::SUCCESS,
            WorkerExit::RegistrationFailed(m) => {
                eprintln!("sparkwire: worker registration failed: {m}");
                ExitCode::from(1)
            }
            WorkerExit::GaveUp => {
                eprintln!("sparkwire: all masters are unresponsive; giving up");
                ExitCode::from(1)
            }
        })
    })
}
