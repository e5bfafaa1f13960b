//! `sparkwire executor`: the reference executor, as a worker launches it.

use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use clap::Args;
use sparkwire::reference::executor::{run_executor, ExecutorConfig};
use sparkwire::reference::task::BuiltinRunner;

/// How long the executor keeps dialling its driver and worker before it exits, saying why (its
/// last line of standard error, which its worker hands on in ExecutorStateChanged's message).
/// Both listen before they name the executor, so a refusal that lasts is an address wrong (a
/// driver announcing what it does not listen on, or one its executors' hosts cannot reach):
/// Spark's executor gives up after 3 quick tries; this one after 10 s of them.
const CONNECT_WINDOW: Duration = Duration::from_secs(10);

/// Arguments of `sparkwire executor`, named as Spark's CoarseGrainedExecutorBackend names them.
#[derive(Debug, Args)]
pub struct ExecutorArgs {
    /// The driver, `spark://CoarseGrainedScheduler@host:port`.
    #[arg(long)]
    driver_url: String,
    /// This executor's id.
    #[arg(long)]
    executor_id: String,
    /// The host this executor reports (its worker's host, as the worker gives it). Default:
    /// SPARK_LOCAL_HOSTNAME, else SPARK_LOCAL_IP, else 127.0.0.1.
    #[arg(long)]
    hostname: Option<String>,
    /// Cores to offer.
    #[arg(long)]
    cores: u32,
    /// The application's id.
    #[arg(long)]
    app_id: String,
    /// The worker to watch, `spark://Worker@host:port`: the executor exits when it goes away.
    #[arg(long)]
    worker_url: Option<String>,
    /// The resource profile (0, the default).
    #[arg(long = "resourceProfileId", default_value_t = 0)]
    resource_profile_id: i32,
    // The secret proved to the driver and the worker, the authorities checking their TLS.
    #[command(flatten)]
    security: super::security::ClientSecurityArgs,
}

/// Runs the executor until stopped; exit code 0 after StopExecutor, 1 otherwise.
pub fn run(args: ExecutorArgs) -> Result<ExitCode, String> {
    super::init_logging_at("warn");
    let security = args.security.security()?;
    let config = ExecutorConfig {
        driver_url: args.driver_url,
        executor_id: args.executor_id,
        hostname: args.hostname.unwrap_or_else(|| {
            super::address::daemon_host(None, false, sparkwire::reference::address::process_env)
        }),
        cores: args.cores,
        app_id: args.app_id,
        worker_url: args.worker_url.filter(|u| !u.is_empty()),
        resource_profile_id: args.resource_profile_id,
        connect_timeout: CONNECT_WINDOW,
        security,
    };
    // Tasks run on threads of the executor's own; what is left (the connections and the loop
    // that hands tasks over) is light: one runtime thread does it, so that a frame read, a task
    // handed over and its updates queued wake no other runtime thread.
    let runtime = super::single_thread_runtime()?;
    let id = config.executor_id.clone();
    let outcome = runtime.block_on(run_executor(config, Arc::new(BuiltinRunner)));
    // Tasks still running were cancelled; their threads are not waited for.
    runtime.shutdown_timeout(Duration::from_millis(200));
    let code = match outcome {
        Ok(exit) => {
            eprintln!("sparkwire executor {id}: {exit}");
            exit.code()
        }
        Err(e) => {
            eprintln!("sparkwire executor {id}: {e}");
            e.code()
        }
    };
    Ok(ExitCode::from(u8::try_from(code).unwrap_or(1)))
}
