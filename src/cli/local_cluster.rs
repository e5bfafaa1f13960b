//! `sparkwire local-cluster`: a master and N workers as child processes on loopback, the driver
//! in this process, a job through real executor processes; Spark's `local-cluster[N,C,M]`.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use clap::Args;
use sparkwire::connection::{generate_secret, write_secret_file, Security};
use sparkwire::reference::diagram::mermaid;
use sparkwire::reference::driver::{Driver, DriverConfig};
use sparkwire::reference::local_cluster::{ClusterConfig, LocalCluster};
use sparkwire::reference::tap::{strict_validator, TraceObserver};
use sparkwire::validate::trace::TraceFormat;
use sparkwire::wire::handshake::Secret;

use super::job::{run_and_report, JobArgs};

/// Options of `sparkwire local-cluster`.
#[derive(Debug, Args)]
pub struct LocalClusterArgs {
    /// Workers to start, 1 to 64 (each is a process on this machine).
    #[arg(long, default_value_t = 2)]
    workers: usize,
    /// Cores per worker, 1 to 1024.
    #[arg(long, default_value_t = 1)]
    cores: u32,
    /// Memory per worker, MiB (at least 1).
    #[arg(long, default_value_t = 1024)]
    memory: u32,
    #[command(flatten)]
    job: JobArgs,
    /// Write the driver's trace of every connection here (protocol/trace.md): binary when the
    /// name ends in .swtrace, else JSON Lines.
    #[arg(long)]
    trace: Option<PathBuf>,
    /// Write a Mermaid sequence diagram of the registrations and the first tasks here.
    #[arg(long)]
    diagram: Option<PathBuf>,
    /// Largest message, MiB (spark.rpc.message.maxSize).
    #[arg(long, default_value_t = 128)]
    max_message_size: u32,
    /// How long to wait for the executors before running the job anyway, seconds (with none
    /// registered by then it gives up, saying why, and exits 2).
    #[arg(long, default_value_t = 60)]
    executor_timeout: u64,
    /// Run without authentication. By default a random shared secret is made for this run: the
    /// master, the workers, the driver and the executors all prove it in every handshake.
    #[arg(long)]
    no_auth: bool,
    #[command(flatten)]
    busy_poll: super::busy_poll::BusyPollArgs,
}

/// This run's shared secret, in a file only this user may read, in a directory only this user
/// may enter, for the master and the workers to read at start-up; both are removed when it is
/// dropped, as soon as they have started.
struct RunSecret {
    dir: PathBuf,
    secret: Secret,
}

impl RunSecret {
    fn create() -> Result<RunSecret, String> {
        let secret = generate_secret().map_err(|e| e.to_string())?;
        let unique = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or_default();
        let dir = std::env::temp_dir().join(format!(
            "sparkwire-local-cluster-{}-{unique}",
            std::process::id()
        ));
        let mut builder = std::fs::DirBuilder::new();
        #[cfg(unix)]
        {
            use std::os::unix::fs::DirBuilderExt;
            builder.mode(0o700);
        }
        builder
            .create(&dir)
            .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        let run = RunSecret { dir, secret };
        write_secret_file(&run.path(), &run.secret)
            .map_err(|e| format!("cannot write {}: {e}", run.path().display()))?;
        Ok(run)
    }

    fn path(&self) -> PathBuf {
        self.dir.join("secret")
    }
}

impl Drop for RunSecret {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Most workers `local-cluster` starts.
const MAX_WORKERS: usize = 64;
/// Events kept in memory for the diagram.
const DIAGRAM_EVENTS: usize = 400;
/// Arrows drawn in the diagram.
const DIAGRAM_ARROWS: usize = 60;

/// Runs the command: exit 0 when the job succeeded and every connection was valid.
pub fn run(args: LocalClusterArgs) -> Result<ExitCode, String> {
    super::init_logging_at("warn");
    args.job.check()?;
    super::whole_seconds("--executor-timeout", args.executor_timeout)?;
    if !(1..=MAX_WORKERS).contains(&args.workers) {
        return Err(format!(
            "--workers must be 1 to {MAX_WORKERS} (each is a process on this machine), not {}",
            args.workers
        ));
    }
    if !(1..=1024).contains(&args.cores) {
        return Err(format!("--cores must be 1 to 1024, not {}", args.cores));
    }
    if args.memory == 0 {
        return Err("--memory must be at least 1 (MiB)".into());
    }
    if !(1..=2047).contains(&args.max_message_size) {
        return Err("--max-message-size must be 1 to 2047 (MiB)".into());
    }
    // Refused before any process starts (the driver's configuration is made later).
    args.busy_poll.window()?;
    let program = std::env::current_exe().map_err(|e| format!("cannot find myself: {e}"))?;
    let runtime = super::single_thread_runtime()?;
    let code = runtime.block_on(async move {
        let mut cluster: Option<LocalCluster> = None;
        // Ctrl-C or SIGTERM: the driver stops first (its executors and application go in order),
        // then the cluster.
        let (interrupt, interrupted) = tokio::sync::watch::channel(false);
        let watcher = tokio::spawn(async move {
            super::terminated().await;
            let _ = interrupt.send(true);
        });
        let outcome = run_cluster(&args, program, &mut cluster, interrupted).await;
        watcher.abort();
        let master_output = match cluster.take() {
            Some(cluster) => {
                if outcome.as_ref().is_err_and(|e| e == "interrupted") {
                    eprintln!("local-cluster: interrupted; stopping the cluster");
                }
                cluster.shutdown(Duration::from_secs(5)).await
            }
            None => Vec::new(),
        };
        let job_ok = outcome?;
        let master_clean = match master_verdict(&master_output) {
            Some((line, violations)) => {
                println!("validator (master process, strict): {line}");
                violations == 0
            }
            None => {
                println!("validator (master process, strict): no verdict (did the master exit?)");
                false
            }
        };
        Ok(if job_ok && master_clean {
            ExitCode::SUCCESS
        } else {
            ExitCode::from(1)
        })
    });
    runtime.shutdown_timeout(Duration::from_millis(500));
    code
}

/// The master's verdict line and its count of violations.
fn master_verdict(output: &[String]) -> Option<(&str, u64)> {
    let line = output
        .iter()
        .rev()
        .find_map(|l| l.strip_prefix("sparkwire master validator: "))?;
    let violations = line
        .split(", ")
        .nth(1)?
        .split_whitespace()
        .next()?
        .parse()
        .ok()?;
    Some((line, violations))
}

/// Runs the cluster and the job; `Ok(true)` when the job succeeded and the driver's connections
/// were all valid.
async fn run_cluster(
    args: &LocalClusterArgs,
    program: PathBuf,
    slot: &mut Option<LocalCluster>,
    mut interrupted: tokio::sync::watch::Receiver<bool>,
) -> Result<bool, String> {
    let start = Instant::now();
    let trace: Option<Box<dyn Write + Send>> = match &args.trace {
        Some(path) => Some(Box::new(std::io::BufWriter::new(
            std::fs::File::create(path)
                .map_err(|e| format!("cannot write {}: {e}", path.display()))?,
        ))),
        None => None,
    };
    let keep = if args.diagram.is_some() {
        DIAGRAM_EVENTS
    } else {
        0
    };
    let format = args
        .trace
        .as_deref()
        .map_or(TraceFormat::JsonLines, TraceFormat::for_path);
    let observer = TraceObserver::with_trace_format(Some(strict_validator()), trace, format, keep);

    let mut config = ClusterConfig::new(program.clone(), args.workers, args.cores, args.memory);
    config.master_args = vec![
        "--strict".into(),
        "--max-frame-bytes".into(),
        (args.max_message_size as usize * 1024 * 1024).to_string(),
    ];
    config.worker_args = vec![
        "--max-frame-bytes".into(),
        (args.max_message_size as usize * 1024 * 1024).to_string(),
    ];
    let secret = if args.no_auth {
        None
    } else {
        let run_secret = RunSecret::create()?;
        for child_args in [&mut config.master_args, &mut config.worker_args] {
            child_args.push("--secret-file".into());
            child_args.push(run_secret.path().to_string_lossy().into_owned());
        }
        Some(run_secret)
    };
    // Interrupted while starting: the children started so far die with the dropped future.
    let started = tokio::select! {
        started = LocalCluster::start(&config) => started,
        Ok(_) = interrupted.wait_for(|v| *v) => return Err("interrupted".into()),
    };
    // The master and the workers read the file before announcing their addresses: remove it now
    // (even if the start failed), keeping the secret in memory for the driver only.
    let secret: Option<Secret> = secret.map(|run| run.secret.clone());
    let cluster = started.map_err(|e| e.to_string())?;
    let master_url = cluster.master_url().to_string();
    *slot = Some(cluster);
    println!(
        "local-cluster: master {master_url}, {} worker(s) of {} core(s) and {} MiB",
        args.workers, args.cores, args.memory
    );

    let mut driver_config = DriverConfig::new(format!("sparkwire {}", args.job.job));
    driver_config.masters = vec![master_url];
    driver_config.executor_program = program.to_string_lossy().into_owned();
    driver_config.executor_memory_mb = args.memory.min(1024);
    driver_config.max_message_size_mib = args.max_message_size;
    driver_config.observer = Some(observer.clone());
    driver_config.busy_poll = args.busy_poll.window()?;
    if let Some(s) = &secret {
        driver_config.security = Security::with_secret(s.clone());
    }
    println!(
        "authentication: {}",
        if secret.is_some() {
            "a random shared secret for this run (every handshake proves it)"
        } else {
            "off (--no-auth)"
        }
    );
    let driver_started = start.elapsed();
    let driver = Driver::start(driver_config)
        .await
        .map_err(|e| e.to_string())?;

    let ok = run_and_report(
        driver,
        &args.job,
        args.workers,
        super::whole_seconds("--executor-timeout", args.executor_timeout)?,
        start,
        driver_started,
        &observer,
        Some(interrupted),
    )
    .await?;
    if let (Some(path), true) = (&args.diagram, keep > 0) {
        let text = mermaid(&observer.head(), DIAGRAM_ARROWS);
        std::fs::write(path, format!("```mermaid\n{text}```\n"))
            .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
        println!("diagram written to {}", path.display());
    }
    if let Some(path) = &args.trace {
        println!("trace written to {}", path.display());
    }
    Ok(ok)
}
