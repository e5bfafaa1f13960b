//! `sparkwire executor`: the reference executor, as a worker launches it.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use clap::Args;
use sparkwire::connection::Security;
use sparkwire::reference::executor::{run_executor, ExecutorConfig};
use sparkwire::reference::task::BuiltinRunner;
use sparkwire::reference::worker::{SECRET_FILE_ENV, TLS_CA_ENV};

/// Arguments of `sparkwire executor`, named as Spark's CoarseGrainedExecutorBackend names them.
#[derive(Debug, Args)]
pub struct ExecutorArgs {
    /// The driver, `spark://CoarseGrainedScheduler@host:port`.
    #[arg(long)]
    driver_url: String,
    /// This executor's id.
    #[arg(long)]
    executor_id: String,
    /// The host this executor reports.
    #[arg(long, default_value = "127.0.0.1")]
    hostname: String,
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
    /// A file holding the shared secret to prove to the driver and the worker. Default: the
    /// file `SPARKWIRE_SECRET_FILE` names, as the worker that launched this executor sets it.
    #[arg(long, value_name = "PATH")]
    secret_file: Option<PathBuf>,
    /// The certificate authorities (PEM) to check the driver's and the worker's TLS
    /// certificates with; TLS is on when given. Default: the file `SPARKWIRE_TLS_CA` names.
    #[arg(long, value_name = "PATH")]
    tls_ca: Option<PathBuf>,
}

/// Runs the executor until stopped; exit code 0 after StopExecutor, 1 otherwise.
pub fn run(args: ExecutorArgs) -> Result<ExitCode, String> {
    super::init_logging_at("warn");
    let from_env = |name: &str| {
        std::env::var_os(name)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    let secret_file = args.secret_file.or_else(|| from_env(SECRET_FILE_ENV));
    let tls_ca = args.tls_ca.or_else(|| from_env(TLS_CA_ENV));
    let mut security = Security {
        secret: super::security::secret(secret_file.as_deref())?,
        ..Security::default()
    };
    let tls = super::security::TlsArgs {
        tls_cert: None,
        tls_key: None,
        tls_ca,
    };
    super::security::tls(&tls, &mut security)?;
    let config = ExecutorConfig {
        driver_url: args.driver_url,
        executor_id: args.executor_id,
        hostname: args.hostname,
        cores: args.cores,
        app_id: args.app_id,
        worker_url: args.worker_url.filter(|u| !u.is_empty()),
        resource_profile_id: args.resource_profile_id,
        connect_timeout: Duration::from_secs(30),
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
