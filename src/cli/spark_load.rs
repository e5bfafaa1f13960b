//! `sparkwire spark load`: thousands of Spark workers and applications against a master on
//! Spark's wire (`sparkwire::spark::load`), the measurements printed as JSON.

use std::net::{SocketAddr, ToSocketAddrs};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use clap::Args;
use sparkwire::spark::load::{run_load, LoadConfig};
use sparkwire::spark::Release;

#[derive(Debug, Args)]
pub struct LoadArgs {
    /// The master's Spark RPC address, HOST:PORT (or spark://HOST:PORT).
    #[arg(long)]
    master: String,
    /// The master's web UI, HOST:PORT, for `/json`.
    #[arg(long, value_name = "HOST:PORT")]
    web_ui: Option<String>,
    /// The Spark release the peers speak (the master's).
    #[arg(long, default_value = "4.0.1")]
    spark_release: String,
    /// Workers.
    #[arg(long, default_value_t = 100)]
    workers: usize,
    /// Cores of each worker.
    #[arg(long, default_value_t = 4)]
    worker_cores: i32,
    /// Memory of each worker, MiB.
    #[arg(long, default_value_t = 8192)]
    worker_memory: i32,
    /// Applications.
    #[arg(long, default_value_t = 10)]
    apps: usize,
    /// spark.cores.max of each application; `full`: the cluster's cores shared out evenly.
    #[arg(long, default_value = "2")]
    app_cores: String,
    /// spark.executor.cores.
    #[arg(long, default_value_t = 1)]
    executor_cores: i32,
    /// spark.executor.memory, MiB.
    #[arg(long, default_value_t = 512)]
    executor_memory: i32,
    /// The master's spark.worker.timeout, seconds: workers heartbeat every quarter of it.
    #[arg(long, default_value_t = 60.0)]
    worker_timeout: f64,
    /// Seconds of steady heartbeating once every application is placed.
    #[arg(long, default_value_t = 10.0)]
    steady: f64,
    /// One heartbeat in this many, per worker, is fenced to time its processing (0: none).
    #[arg(long, default_value_t = 10)]
    fence_every: u32,
    /// Every application whose index is a multiple of this ends (0: none).
    #[arg(long, default_value_t = 4)]
    end_every: usize,
    /// Every application whose index is 1 modulo this kills one executor (0: none).
    #[arg(long, default_value_t = 4)]
    kill_every: usize,
    /// State asks (RequestMasterState, and /json each) in the steady phase.
    #[arg(long, default_value_t = 3)]
    state_asks: usize,
    /// Seconds an expected answer may take before it counts as missing.
    #[arg(long, default_value_t = 60.0)]
    answer_timeout: f64,
    /// Peers connecting at once.
    #[arg(long, default_value_t = 256)]
    connect_concurrency: usize,
    /// Print each phase to stderr as it begins (`phase NAME SECONDS-SINCE-EPOCH`).
    #[arg(long)]
    phases: bool,
    /// After the steady phase, a failover to the master whose web UI is HOST:PORT: at phase
    /// `failover-K` the caller kills or restarts the leading master, and the run measures until
    /// this one leads with every worker and application recovered. Repeat for several, in order.
    #[arg(long = "failover", value_name = "HOST:PORT")]
    failovers: Vec<String>,
    /// Seconds a failover may take before it counts as failed.
    #[arg(long, default_value_t = 300.0)]
    failover_timeout: f64,
}

fn address(text: &str) -> Result<SocketAddr, String> {
    let text = text
        .trim_start_matches("spark://")
        .trim_start_matches("http://");
    text.to_socket_addrs()
        .map_err(|e| format!("{text}: {e}"))?
        .next()
        .ok_or_else(|| format!("{text}: no address"))
}

fn seconds(s: f64, what: &str) -> Result<Duration, String> {
    Duration::try_from_secs_f64(s).map_err(|e| format!("--{what}: {e}"))
}

pub fn run(args: LoadArgs) -> Result<ExitCode, String> {
    let release = Release::named(&args.spark_release).ok_or_else(|| {
        format!(
            "--spark-release {}: not a release sparkwire speaks",
            args.spark_release
        )
    })?;
    let mut config = LoadConfig::new(address(&args.master)?, release, args.workers, args.apps);
    config.web_ui = args.web_ui.as_deref().map(address).transpose()?;
    config.worker_cores = args.worker_cores;
    config.worker_memory = args.worker_memory;
    config.executor_cores = args.executor_cores;
    config.executor_memory = args.executor_memory;
    config.app_cores = if args.app_cores == "full" {
        let total = args.workers as i64 * i64::from(args.worker_cores);
        let per = total / args.apps.max(1) as i64;
        let per = per - per % i64::from(args.executor_cores.max(1));
        i32::try_from(per).map_err(|_| "--app-cores full: too many cores".to_string())?
    } else {
        args.app_cores
            .parse()
            .map_err(|e| format!("--app-cores {}: {e}", args.app_cores))?
    };
    config.worker_timeout = seconds(args.worker_timeout, "worker-timeout")?;
    config.steady = seconds(args.steady, "steady")?;
    config.fence_every = args.fence_every;
    config.end_every = args.end_every;
    config.kill_every = args.kill_every;
    config.state_asks = args.state_asks;
    config.answer_timeout = seconds(args.answer_timeout, "answer-timeout")?;
    config.connect_concurrency = args.connect_concurrency;
    config.failovers = args
        .failovers
        .iter()
        .map(|ui| address(ui))
        .collect::<Result<_, _>>()?;
    config.failover_timeout = seconds(args.failover_timeout, "failover-timeout")?;
    if args.phases {
        config.on_phase = Some(Arc::new(|name: &str| {
            let now = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap_or_default()
                .as_secs_f64();
            eprintln!("phase {name} {now:.3}");
        }));
    }
    // One thread: the generator's CPU stays on one core, whatever the peers.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("runtime: {e}"))?;
    let report = runtime
        .block_on(run_load(config))
        .map_err(|e| e.to_string())?;
    let text = serde_json::to_string_pretty(&report).map_err(|e| e.to_string())?;
    println!("{text}");
    Ok(if report.errors == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}
