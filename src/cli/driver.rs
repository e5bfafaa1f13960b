//! `sparkwire driver`: the reference driver as a process: registers an application with the
//! master(s), runs one job on the executors the workers start for it, and exits.

use std::process::ExitCode;
use std::sync::Arc;

use clap::Args;
use sparkwire::node::url::MasterUrl;
use sparkwire::reference::driver::{Driver, DriverConfig};
use sparkwire::reference::task::job_by_name;

/// Options of `sparkwire driver`.
#[derive(Debug, Args)]
pub struct DriverArgs {
    /// The master(s): sparkwire://host:port[,host:port…].
    #[arg(long)]
    master: String,
    #[command(flatten)]
    job: super::job::JobArgs,
    /// Cores per executor (spark.executor.cores); all of a worker's when absent.
    #[arg(long)]
    executor_cores: Option<u32>,
    /// Memory per executor, MiB (spark.executor.memory).
    #[arg(long, default_value_t = 1024)]
    executor_memory: u32,
    /// Most cores the application holds (spark.cores.max).
    #[arg(long)]
    max_cores: Option<u32>,
    /// Largest message, MiB (spark.rpc.message.maxSize).
    #[arg(long, default_value_t = 128)]
    max_message_size: u32,
    /// Attempts of a task before the job fails (spark.task.maxFailures).
    #[arg(long, default_value_t = 4)]
    max_task_failures: u32,
    /// Seconds the masters have to register the application.
    #[arg(long, default_value_t = 60)]
    registration_timeout: u64,
    #[command(flatten)]
    busy_poll: super::busy_poll::BusyPollArgs,
    #[command(flatten)]
    limits: super::limits::LimitArgs,
    #[command(flatten)]
    security: super::security::DriverSecurityArgs,
    #[command(flatten)]
    address: super::address::DriverAddressArgs,
}

/// Runs the command: exit 0 when the job succeeded (its result on standard output), 1 when it
/// failed (Spark's error on standard error).
pub fn run(args: DriverArgs) -> Result<ExitCode, String> {
    super::init_logging_at("warn");
    args.job.check()?;
    if !(1..=2047).contains(&args.max_message_size) {
        return Err("--max-message-size must be 1 to 2047 (MiB)".into());
    }
    let job = job_by_name(&args.job.job, args.job.partitions, args.job.param)
        .ok_or_else(|| format!("unknown job {:?}", args.job.job))?;
    let mut config = DriverConfig::new(format!("sparkwire {}", args.job.job));
    config.masters = args
        .master
        .split(',')
        .map(|m| m.trim().to_string())
        .collect();
    config.executor_cores = args.executor_cores;
    config.executor_memory_mb = args.executor_memory;
    config.max_cores = args.max_cores;
    config.max_message_size_mib = args.max_message_size;
    config.limits = super::limits::limits(&args.limits, None)?;
    config.max_task_failures = args.max_task_failures.max(1);
    config.registration_timeout =
        super::whole_seconds("--registration-timeout", args.registration_timeout.max(1))?;
    config.busy_poll = args.busy_poll.window()?;
    config.security = args.security.security()?;
    // The masters as addresses, to tell why a registration failed (the driver checks each URL).
    let masters: Vec<_> = config
        .masters
        .iter()
        .filter_map(|m| MasterUrl::parse(m).ok())
        .flat_map(|u| u.masters)
        .collect();
    let address = args
        .address
        .resolve(&masters, sparkwire::reference::address::process_env)?;
    super::address::check_driver_listens(
        address.listen.ip(),
        config.security.authenticates(),
        args.security.insecure,
    )?;
    config.advertise_host = address.announce;
    config.listen = address.listen;
    let security = config.security.clone();
    super::single_thread_runtime()?.block_on(async move {
        let driver = Driver::start(config).await.map_err(|e| e.to_string())?;
        println!("sparkwire driver listening on {}", driver.url());
        super::flush_stdout();
        let handle = driver
            .submit(Arc::from(job))
            .await
            .map_err(|e| e.to_string())?;
        let outcome = tokio::select! {
            outcome = handle.result() => Some(outcome),
            _ = super::terminated() => None,
        };
        let status = driver.stop().await.unwrap_or_default();
        Ok(match outcome {
            Some(Ok(r)) => {
                println!("result: {}", r.output);
                ExitCode::SUCCESS
            }
            Some(Err(e)) => {
                let message = if status.app_id.is_none() {
                    super::client::explain_unregistered(e.message, &masters, &security).await
                } else {
                    e.message
                };
                eprintln!("sparkwire driver: {message}");
                ExitCode::from(1)
            }
            None => ExitCode::from(1),
        })
    })
}
