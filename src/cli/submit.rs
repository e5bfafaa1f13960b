//! `sparkwire submit`: runs a job on a running cluster, the counterpart of `spark-submit
//! --master spark://…`. In client deploy mode the driver runs in this process; in cluster deploy
//! mode a driver client submits a driver (RequestSubmitDriver) that a worker runs, and reports
//! its state until it ends.

use std::process::ExitCode;
use std::time::{Duration, Instant};

use clap::{Args, ValueEnum};
use sparkwire::connection::Security;
use sparkwire::messages::deploy::{
    DriverStatusResponse, RequestDriverStatus, RequestSubmitDriver, SubmitDriverResponse,
};
use sparkwire::messages::{Command, DeployMessage, DriverDescription, DriverState, Family};
use sparkwire::node::url::MasterUrl;
use sparkwire::reference::driver::{Driver, DriverConfig};
use sparkwire::reference::tap::{strict_validator, TraceObserver};
use sparkwire::wire::handshake::Role;

use super::client::MasterClient;
use super::job::{run_and_report, JobArgs};

/// Where the driver runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum DeployMode {
    /// In this process.
    Client,
    /// On a worker, started by the master.
    Cluster,
}

/// Options of `sparkwire submit`.
#[derive(Debug, Args)]
pub struct SubmitArgs {
    /// The master(s): sparkwire://HOST:PORT[,HOST:PORT…] (spark:// is taken too).
    #[arg(long)]
    master: String,
    #[command(flatten)]
    job: JobArgs,
    /// Where the driver runs: in this process (client) or on a worker (cluster).
    #[arg(long, value_enum, default_value_t = DeployMode::Client)]
    deploy_mode: DeployMode,
    /// The application's name (default: `sparkwire JOB`).
    #[arg(long)]
    name: Option<String>,
    /// Cores per executor (spark.executor.cores; default: all of a worker's).
    #[arg(long)]
    executor_cores: Option<u32>,
    /// Memory per executor: MiB, or with a unit (`512m`, `1g`; spark.executor.memory).
    #[arg(long, default_value = "1g")]
    executor_memory: String,
    /// Most cores the application takes from the cluster (spark.cores.max).
    #[arg(long)]
    total_executor_cores: Option<u32>,
    /// Cores of the driver in cluster deploy mode (spark.driver.cores).
    #[arg(long, default_value_t = 1)]
    driver_cores: u32,
    /// Memory of the driver in cluster deploy mode (spark.driver.memory).
    #[arg(long, default_value = "1g")]
    driver_memory: String,
    /// In cluster deploy mode, restart the driver when it fails (spark.driver.supervise).
    #[arg(long)]
    supervise: bool,
    #[command(flatten)]
    address: super::address::DriverAddressArgs,
    /// Executors to wait for before the job starts (it starts with fewer after
    /// --executor-timeout, if at least one registered).
    #[arg(long, default_value_t = 1)]
    executors: usize,
    /// How long to wait for those executors, seconds. With none registered by then, submit
    /// gives up: it says why (the reason the master gives for the application, SPEC §16, or else
    /// the last executor's end, as its worker reported it) and exits 2.
    #[arg(long, default_value_t = 60)]
    executor_timeout: u64,
    #[command(flatten)]
    security: super::security::DriverSecurityArgs,
    #[command(flatten)]
    busy_poll: super::busy_poll::BusyPollArgs,
}

/// Runs the command: exit 0 when the job succeeded.
pub fn run(args: SubmitArgs) -> Result<ExitCode, String> {
    super::init_logging_at("warn");
    args.job.check()?;
    super::whole_seconds("--executor-timeout", args.executor_timeout)?;
    let url = MasterUrl::parse(&args.master).map_err(|e| e.to_string())?;
    let executor_memory = parse_mib("--executor-memory", &args.executor_memory)?;
    let driver_memory = parse_mib("--driver-memory", &args.driver_memory)?;
    for (flag, v) in [
        ("--executor-cores", args.executor_cores),
        ("--total-executor-cores", args.total_executor_cores),
        ("--driver-cores", Some(args.driver_cores)),
    ] {
        if v == Some(0) || v.is_some_and(|v| v > i32::MAX as u32) {
            return Err(format!("{flag} must be at least 1"));
        }
    }
    if args.executors == 0 {
        return Err("--executors must be at least 1".into());
    }
    let program = std::env::current_exe().map_err(|e| format!("cannot find myself: {e}"))?;
    let program = program.to_string_lossy().into_owned();
    // In cluster deploy mode this process is only the masters' client: the driver, on a worker,
    // gets the worker's secret and authorities from it, and --tls-cert/--tls-key as paths on the
    // worker's host (read there, not here), under the same rule.
    let security = match args.deploy_mode {
        DeployMode::Client => args.security.security()?,
        DeployMode::Cluster => {
            args.security.check()?;
            args.security.client.security()?
        }
    };
    let busy_poll = args.busy_poll.window()?;
    // One thread, as `driver` and `local-cluster`: in client mode the driver runs here.
    let runtime = super::single_thread_runtime()?;
    let outcome = runtime.block_on(async {
        tokio::select! {
            ok = async {
                match args.deploy_mode {
                    DeployMode::Client => {
                        client_mode(&args, &url, program, executor_memory, security, busy_poll)
                            .await
                    }
                    DeployMode::Cluster => {
                        cluster_mode(&args, &url, program, executor_memory, driver_memory, &security)
                            .await
                    }
                }
            } => ok,
            _ = super::terminated() => Err("interrupted".to_string()),
        }
    });
    runtime.shutdown_timeout(Duration::from_millis(500));
    Ok(if outcome? {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// Runs the driver here and the job on the cluster's executors.
async fn client_mode(
    args: &SubmitArgs,
    url: &MasterUrl,
    program: String,
    executor_memory: u32,
    security: Security,
    busy_poll: Duration,
) -> Result<bool, String> {
    let start = Instant::now();
    let name = args
        .name
        .clone()
        .unwrap_or_else(|| format!("sparkwire {}", args.job.job));
    let mut config = DriverConfig::new(name);
    config.masters = url.masters.iter().map(MasterUrl::single).collect();
    config.executor_program = program;
    config.executor_cores = args.executor_cores;
    config.executor_memory_mb = executor_memory;
    config.max_cores = args.total_executor_cores;
    let address = args
        .address
        .resolve(&url.masters, sparkwire::reference::address::process_env)?;
    super::address::check_driver_listens(
        address.listen.ip(),
        security.authenticates(),
        args.security.insecure,
    )?;
    config.advertise_host = address.announce;
    config.listen = address.listen;
    config.security = security.clone();
    config.busy_poll = busy_poll;
    let observer = TraceObserver::new(Some(strict_validator()), None, 0);
    config.observer = Some(observer.clone());
    println!("submit: driver in this process, masters {url}");
    let driver_started = start.elapsed();
    let driver = Driver::start(config).await.map_err(|e| e.to_string())?;
    let outcome = run_and_report(
        driver,
        &args.job,
        args.executors,
        super::whole_seconds("--executor-timeout", args.executor_timeout)?,
        start,
        driver_started,
        &observer,
        None,
    )
    .await;
    match outcome {
        Err(e) => Err(super::client::explain_unregistered(e, &url.masters, &security).await),
        ok => ok,
    }
}

/// The driver a worker runs in cluster deploy mode: this program's `submit` in client deploy
/// mode, at the worker's host.
fn driver_description(
    args: &SubmitArgs,
    url: &MasterUrl,
    program: String,
    executor_memory: u32,
    driver_memory: u32,
) -> DriverDescription {
    let mut arguments = vec![
        "submit".to_string(),
        "--master".into(),
        url.to_string(),
        "--deploy-mode".into(),
        "client".into(),
        "--driver-host".into(),
        "{{HOSTNAME}}".into(),
        "--executor-memory".into(),
        executor_memory.to_string(),
        "--executors".into(),
        args.executors.to_string(),
        "--executor-timeout".into(),
        args.executor_timeout.to_string(),
    ];
    arguments.extend(args.job.to_args());
    arguments.extend(args.busy_poll.to_args());
    if args.security.insecure {
        arguments.push("--insecure".into());
    }
    if let Some(name) = &args.name {
        arguments.extend(["--name".into(), name.clone()]);
    }
    if let Some(c) = args.executor_cores {
        arguments.extend(["--executor-cores".into(), c.to_string()]);
    }
    if let Some(c) = args.total_executor_cores {
        arguments.extend(["--total-executor-cores".into(), c.to_string()]);
    }
    // The secret and the authorities come from the worker (SPARKWIRE_SECRET_FILE,
    // SPARKWIRE_TLS_CA), never on a command line; the certificate is named by its paths.
    let sec = &args.security;
    for (flag, path) in [("--tls-cert", &sec.tls_cert), ("--tls-key", &sec.tls_key)] {
        if let Some(p) = path {
            arguments.extend([flag.to_string(), p.to_string_lossy().into_owned()]);
        }
    }
    DriverDescription::new(
        format!("file://{program}"),
        i32::try_from(driver_memory).unwrap_or(i32::MAX),
        i32::try_from(args.driver_cores).unwrap_or(i32::MAX),
        args.supervise,
        Command::new(
            program,
            arguments,
            Default::default(),
            Vec::new(),
            Vec::new(),
            Vec::new(),
        ),
        Vec::new(),
    )
}

/// Submits the driver to the first master that takes it, then reports its state until it ends;
/// `Ok(true)` when it FINISHED.
async fn cluster_mode(
    args: &SubmitArgs,
    url: &MasterUrl,
    program: String,
    executor_memory: u32,
    driver_memory: u32,
    security: &Security,
) -> Result<bool, String> {
    let desc = driver_description(args, url, program, executor_memory, driver_memory);
    let mut refusals = Vec::new();
    for m in &url.masters {
        let client = match MasterClient::connect(m, Role::DriverClient, security).await {
            Ok(c) => c,
            Err(e) => {
                refusals.push(e.to_string());
                continue;
            }
        };
        let answer = client.ask(RequestSubmitDriver::new(desc.clone())).await?;
        let DeployMessage::SubmitDriverResponse(SubmitDriverResponse {
            success,
            driver_id,
            message,
            ..
        }) = answer
        else {
            return Err(format!(
                "the master answered RequestSubmitDriver with {}",
                answer.name()
            ));
        };
        match (success, driver_id) {
            (true, Some(id)) => {
                println!("submit: {message} (master {}:{})", m.host, m.port);
                super::flush_stdout();
                let (finished, worker) = follow_driver(&client, &id).await?;
                if let Some(worker) = worker {
                    show_driver_output(&client, &id, &worker, security).await;
                }
                return Ok(finished);
            }
            _ => refusals.push(format!("{}:{}: {message}", m.host, m.port)),
        }
    }
    Err(format!(
        "no master took the driver: {}",
        refusals.join("; ")
    ))
}

/// How often the driver's state is asked for.
const POLL: Duration = Duration::from_millis(500);

/// Prints what the driver wrote on its standard output, read from its worker's web UI
/// (`/logPage/`); says so when it cannot.
async fn show_driver_output(client: &MasterClient, id: &str, worker: &str, security: &Security) {
    // The state is a `ui` ask (SPEC §14.1): a driver client's connection may not send it.
    let state = match MasterClient::connect(&client.addr, Role::Ui, security).await {
        Ok(ui) => ui.master_state().await,
        Err(e) => Err(e.to_string()),
    };
    let web_ui = match state {
        Ok(state) => state
            .workers
            .into_iter()
            .find(|w| w.id == worker)
            .map(|w| w.web_ui_address)
            .filter(|u| u.starts_with("http")),
        Err(_) => None,
    };
    let Some(web_ui) = web_ui else {
        println!("submit: the driver's output is in its directory on worker {worker} (no web UI)");
        return;
    };
    let url = format!("{web_ui}/logPage/?driverId={id}&logType=stdout");
    match fetch_log(&url).await {
        Ok(text) => {
            println!("driver output ({url}):");
            print!("{text}");
            if !text.ends_with('\n') && !text.is_empty() {
                println!();
            }
        }
        Err(e) => println!("submit: cannot read the driver's output: {e}"),
    }
}

#[cfg(feature = "webui")]
async fn fetch_log(url: &str) -> Result<String, String> {
    match sparkwire::reference::webui::fetch(url, super::client::PATIENCE).await? {
        (200, body) => Ok(body),
        (status, body) => Err(format!("{url}: HTTP {status}: {}", body.trim())),
    }
}

#[cfg(not(feature = "webui"))]
async fn fetch_log(url: &str) -> Result<String, String> {
    Err(format!(
        "{url}: this build has no HTTP client (the webui feature)"
    ))
}

/// Asks for the driver's state until it ends, printing every change; whether it FINISHED, and
/// the worker that ran it.
async fn follow_driver(client: &MasterClient, id: &str) -> Result<(bool, Option<String>), String> {
    let mut last: Option<DriverState> = None;
    loop {
        let status = match client.ask(RequestDriverStatus::new(id.to_string())).await? {
            DeployMessage::DriverStatusResponse(s) => s,
            other => {
                return Err(format!(
                    "the master answered RequestDriverStatus with {}",
                    other.name()
                ))
            }
        };
        if !status.found {
            return Err(format!("the master no longer knows driver {id}"));
        }
        if status.state != last {
            println!("{}", describe_status(id, &status));
            super::flush_stdout();
            last = status.state;
        }
        if let Some(state) = status.state {
            if is_final(state) {
                return Ok((state == DriverState::Finished, status.worker_id));
            }
        }
        tokio::time::sleep(POLL).await;
    }
}

/// Whether a driver in `state` has ended.
fn is_final(state: DriverState) -> bool {
    matches!(
        state,
        DriverState::Finished | DriverState::Failed | DriverState::Killed | DriverState::Error
    )
}

/// `driver ID: STATE [on worker W at H:P] [: exception]`.
fn describe_status(id: &str, s: &DriverStatusResponse) -> String {
    let mut line = format!(
        "driver {id}: {}",
        s.state.map_or("UNKNOWN".to_string(), |st| st.to_string())
    );
    if let Some(w) = &s.worker_id {
        line.push_str(&format!(" on worker {w}"));
        if let Some(hp) = &s.worker_host_port {
            line.push_str(&format!(" ({hp})"));
        }
    }
    if let Some(e) = &s.exception {
        line.push_str(&format!(": {}: {}", e.class_name, e.message));
    }
    line
}

/// A memory size in MiB: a number of MiB, or a number with a unit `k`, `m`, `g` or `t` (as
/// Spark's `spark.executor.memory` takes them).
pub(crate) fn parse_mib(flag: &str, text: &str) -> Result<u32, String> {
    let bad =
        || format!("{flag} {text:?}: expected a size such as 512m or 2g (a plain number is MiB)");
    let t = text.trim().to_ascii_lowercase();
    let t = t.strip_suffix('b').unwrap_or(&t);
    let (digits, per_unit_kib): (&str, u64) = match t.chars().last() {
        Some('k') => (&t[..t.len() - 1], 1),
        Some('m') => (&t[..t.len() - 1], 1024),
        Some('g') => (&t[..t.len() - 1], 1024 * 1024),
        Some('t') => (&t[..t.len() - 1], 1024 * 1024 * 1024),
        Some(c) if c.is_ascii_digit() => (t, 1024),
        _ => return Err(bad()),
    };
    let n: u64 = digits.parse().map_err(|_| bad())?;
    let mib = n.saturating_mul(per_unit_kib) / 1024;
    if mib == 0 {
        return Err(format!("{flag} {text:?}: at least 1 MiB"));
    }
    u32::try_from(mib)
        .ok()
        .filter(|m| *m <= i32::MAX as u32)
        .ok_or_else(|| format!("{flag} {text:?}: too large"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `sparkwire submit ARGS…` parsed as the command line would be.
    fn parse(args: &[&str]) -> SubmitArgs {
        use clap::Parser;
        #[derive(Parser)]
        struct Line {
            #[command(flatten)]
            submit: SubmitArgs,
        }
        let line = Line::try_parse_from(std::iter::once("submit").chain(args.iter().copied()))
            .expect("parses");
        line.submit
    }

    #[test]
    fn the_driver_a_worker_runs_in_cluster_mode_gets_the_busy_poll_window() {
        let url = MasterUrl::parse("sparkwire://127.0.0.1:7077").expect("url");
        for (given, passed) in [(&[][..], "50"), (&["--busy-poll-us", "0"][..], "0")] {
            let mut line = vec!["--master", "sparkwire://127.0.0.1:7077"];
            line.extend_from_slice(given);
            let args = parse(&line);
            let desc = driver_description(&args, &url, "/bin/sparkwire".into(), 512, 512);
            let arguments = &desc.command.arguments;
            let at = arguments
                .iter()
                .position(|a| a == "--busy-poll-us")
                .unwrap_or_else(|| panic!("no --busy-poll-us in {arguments:?}"));
            assert_eq!(arguments[at + 1], passed, "{arguments:?}");
        }
    }

    #[test]
    fn sizes_take_spark_units_and_refuse_nonsense() {
        assert_eq!(parse_mib("-m", "512"), Ok(512));
        assert_eq!(parse_mib("-m", "512m"), Ok(512));
        assert_eq!(parse_mib("-m", "2g"), Ok(2048));
        assert_eq!(parse_mib("-m", "2G"), Ok(2048));
        assert_eq!(parse_mib("-m", "1t"), Ok(1024 * 1024));
        assert_eq!(parse_mib("-m", "2048k"), Ok(2));
        for bad in ["", "g", "1x", "-1g", "0", "1k", "99999999t"] {
            assert!(parse_mib("-m", bad).is_err(), "{bad}");
        }
    }
}
