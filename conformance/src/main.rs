//! `sparkwire-conformance`: checks a live endpoint against the sparkwire protocol, case by case.
//!
//! Exit status: 0 when every MUST passed, 1 when one failed, 2 when the suite could not run
//! (bad arguments, the endpoint cannot be reached or started).

use std::net::SocketAddr;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

use clap::Parser;
use sparkwire_conformance::case::Target;
use sparkwire_conformance::documents::{cases_md, coverage};
use sparkwire_conformance::env::{Settings, Site, Wire};
use sparkwire_conformance::faults::Fault;
use sparkwire_conformance::{report, runner};

/// Checks a running sparkwire endpoint (master, worker, driver or executor) against the protocol,
/// case by case, playing the other side of each conversation over TCP.
///
/// Examples:
///   sparkwire-conformance --target master --addr 127.0.0.1:7077 --junit master.xml
///   sparkwire-conformance --target master --addr 127.0.0.1:7077 --spawn-server 'sparkwire master --port {port} --no-webui --exit-with-stdin --max-connections {max_connections} --idle-timeout {idle_timeout} --frame-read-timeout {frame_read_timeout} --max-queued-bytes {max_queued_bytes} --max-frame-bytes {max_frame_bytes} [[--secret-file {secret_file}]] [[--admin-secret-file {admin_secret_file}]] [[--tls-cert {tls_cert} --tls-key {tls_key}]]'
///   sparkwire-conformance --target worker --spawn 'sparkwire worker {master_url} --cores {cores} --memory {memory} --worker-timeout {worker_timeout} --allow-exec-any {allowed_exec} --webui-port 0 --exit-with-stdin'
///   sparkwire-conformance --list
#[derive(Debug, Parser)]
#[command(name = "sparkwire-conformance", version, verbatim_doc_comment)]
struct Args {
    /// The kind of endpoint under test: master, worker, driver or executor.
    #[arg(long)]
    target: Option<String>,
    /// A running master's address (the master target).
    #[arg(long, value_name = "HOST:PORT")]
    addr: Option<SocketAddr>,
    /// Starts the endpoint under test for each case from this command template (worker, driver,
    /// executor targets); placeholders such as {master_url}, {driver_url}, {worker_url},
    /// {executor_id}, {app_id}, {cores}, {memory}, {worker_timeout}, {work_dir},
    /// {allowed_exec}, {job}, {partitions}, {param}, {max_message_size}, {secret_file} are
    /// filled in.
    #[arg(long, value_name = "CMD", conflicts_with = "listen")]
    spawn: Option<String>,
    /// Starts a server of the target's kind (a master) for each case about server settings:
    /// resource limits (SPEC §8, handshake.md §5 step 0), the admin secret (SPEC §13) and TLS
    /// (handshake.md §11), each with the settings its case chooses. Placeholders: {port} (must
    /// be used), {max_connections}, {idle_timeout}, {frame_read_timeout}, {max_queued_bytes},
    /// {max_frame_bytes}, {work_dir}, and, inside [[…]] (a part kept only when the case gives every placeholder in
    /// it), {secret_file}, {admin_secret_file}, {tls_cert}, {tls_key}. Without it those cases are
    /// skipped.
    #[arg(long, value_name = "CMD")]
    spawn_server: Option<String>,
    /// Listens here and waits for an endpoint started by hand, once per case, one case at a time.
    #[arg(long, value_name = "HOST:PORT")]
    listen: Option<SocketAddr>,
    /// Runs only the cases whose id starts with PREFIX (repeatable).
    #[arg(long = "cases", value_name = "PREFIX")]
    cases: Vec<String>,
    /// Prints every case id (of --target, or of every target) with its level and requirement.
    #[arg(long)]
    list: bool,
    /// Writes the JSON report here.
    #[arg(long, value_name = "FILE")]
    json: Option<std::path::PathBuf>,
    /// Writes a JUnit XML report here.
    #[arg(long, value_name = "FILE")]
    junit: Option<std::path::PathBuf>,
    /// Cases run at once (those that may run beside others).
    #[arg(long)]
    jobs: Option<usize>,
    /// Seconds to wait for something that must happen (an answer, a close).
    #[arg(long, default_value_t = 10.0)]
    patience: f64,
    /// Seconds to watch for something that must not happen (a second answer).
    #[arg(long, default_value_t = 0.3)]
    quiet_time: f64,
    /// Multiplies every case's own time limit (5 s for most cases, 10 s for the master's flows
    /// that run alone; plus three worker timeouts when --worker-timeout is given); a case still
    /// running at its limit fails as timed out. Default: the patience over 10 s, at least 1 (a
    /// longer --patience on a loaded machine stretches the limits with it).
    #[arg(long, value_name = "FACTOR")]
    timeout_scale: Option<f64>,
    /// Seconds the whole run may take: a case still running then, or not started yet, fails as
    /// timed out, and the report names it. Default: 50 times --timeout-scale (600 times on
    /// Spark's wire, whose JVMs are slow to start and to give up).
    #[arg(long, value_name = "SECS")]
    deadline: Option<f64>,
    /// Whether the master under test spreads applications out (spark.deploy.spreadOut).
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set)]
    spread_out: bool,
    /// The master's worker timeout in seconds, if known: enables the heartbeat-timeout cases.
    #[arg(long)]
    worker_timeout: Option<f64>,
    /// The master's spark.deploy.maxExecutorRetries.
    #[arg(long, default_value_t = 10)]
    max_executor_retries: u32,
    /// The endpoint's shared secret, when it is configured with one (protocol/handshake.md §10):
    /// the suite authenticates every connection it opens or accepts with it (so the whole suite
    /// runs against a secured endpoint) and runs the authentication
    /// cases (handshake/10/…, spec/13/…), which are skipped without it. An endpoint the suite
    /// starts gets the path as {secret_file} and in SPARKWIRE_SECRET_FILE.
    #[arg(long, value_name = "PATH")]
    secret_file: Option<std::path::PathBuf>,
    /// On Spark's wire with --secret-file (the file's content is the endpoint's
    /// spark.authenticate.secret): one of Spark's authentication settings the endpoint's cluster
    /// runs with, as Spark names it (repeatable; SPEC §15.6). The suite's connections run the
    /// bootstrap a Spark peer with these settings runs: SASL by default,
    /// spark.network.crypto.enabled=true the auth engine, spark.network.crypto.saslFallback=false
    /// (an endpoint that refuses SASL), spark.authenticate.enableSaslEncryption=true,
    /// spark.network.crypto.cipher=AES/GCM/NoPadding, spark.network.crypto.authEngineVersion=2.
    #[arg(long, value_name = "KEY=VALUE", requires = "secret_file")]
    spark_conf: Vec<String>,
    /// Prints the wire log of skipped and unimplemented cases too.
    #[arg(long)]
    verbose: bool,
    /// The wire logs show every frame's bytes, in hex, beside its JSON form.
    #[arg(long)]
    hex: bool,
    /// Writes conformance/CASES.md (every case) to FILE and exits.
    #[arg(long, value_name = "FILE")]
    write_cases_md: Option<std::path::PathBuf>,
    /// Checks that FILE is CASES.md as the code generates it; exits 1 when stale.
    #[arg(long, value_name = "FILE")]
    check_cases_md: Option<std::path::PathBuf>,
    /// Writes conformance/COVERAGE.md (protocol sentences → cases) to FILE and exits; exits 1,
    /// naming each fault, when conformance/coverage.json does not map every sentence.
    #[arg(long, value_name = "FILE")]
    write_coverage_md: Option<std::path::PathBuf>,
    /// Checks that the map is complete and FILE is COVERAGE.md as generated; exits 1 otherwise.
    #[arg(long, value_name = "FILE")]
    check_coverage_md: Option<std::path::PathBuf>,
    /// The wire to speak: `sparkwire` (its own, the default) or `spark` (Spark's own RPC:
    /// transport frames, RequestMessage headers, Java serialization, CheckExistence; SPEC §15),
    /// to judge a real Spark master or worker. Cases about sparkwire's framing, handshake and
    /// authentication are then skipped, saying "not on Spark's wire".
    #[arg(long, default_value = "sparkwire", value_parser = ["sparkwire", "spark"])]
    wire: String,
    /// With `--wire spark`: the Spark release spoken, any release of `protocol/spark/releases.json`
    /// (3.0.0 … 4.3.0) or a release line (`3.5`: its newest release); its class table gives
    /// the forms written, and the cases run at the protocol version it maps to (SPEC §15.3).
    #[arg(long, default_value = "4.0.1", value_parser = spark_release)]
    spark_release: &'static sparkwire::spark::Release,
    /// Writes conformance/SPARK.md (the verdict on real Spark) to FILE from the stored runs in
    /// --spark-results, and exits.
    #[arg(long, value_name = "FILE")]
    write_spark_md: Option<std::path::PathBuf>,
    /// Checks that FILE is SPARK.md as the stored runs in --spark-results give it; exits 1 when
    /// stale. Cases added to the suite since FILE was written, missing only from its "Not yet run
    /// on Spark" lists, do not make it stale.
    #[arg(long, value_name = "FILE")]
    check_spark_md: Option<std::path::PathBuf>,
    /// Compares the fresh runs on real Spark in DIR (RELEASE-TARGET.json) with the stored ones in
    /// --spark-results, verdicts only: exits 1 when a case's verdict changed or a stored case has
    /// none now; a case the stored runs have no verdict for is listed as not yet run on Spark and
    /// passes (scripts/spark/conformance.sh --check).
    #[arg(long, value_name = "DIR")]
    compare_spark_results: Option<std::path::PathBuf>,
    /// The stored runs on real Spark (RELEASE-TARGET.json, the --json reports).
    #[arg(long, value_name = "DIR", default_value = "conformance/spark")]
    spark_results: std::path::PathBuf,
    /// Injects a fault between the suite and the endpoint (for the suite's own tests).
    #[arg(long, hide = true)]
    fault: Option<String>,
    /// Prints the name of every fault `--fault` takes, one a line, and exits (for
    /// conformance/tests/fault-times.sh).
    #[arg(long, hide = true)]
    list_faults: bool,
    /// Turns the cases' judge off (the validator on every frame of the endpoint): the suite's
    /// own tests use it to show what only the judge catches.
    #[arg(long, hide = true)]
    no_judge: bool,
}

/// The run's deadline without `--deadline`, in seconds at `--timeout-scale 1`: a whole target
/// against a correct endpoint takes a few seconds.
const DEFAULT_DEADLINE_SECS: f64 = 50.0;

/// The same on Spark's wire (`--wire spark`): a real Spark master's run takes about 50 s, a
/// worker's (a JVM per case) minutes.
const DEFAULT_SPARK_DEADLINE_SECS: f64 = 600.0;

/// `--spark-release`: a release sparkwire speaks, or a release line (its newest release).
fn spark_release(name: &str) -> Result<&'static sparkwire::spark::Release, String> {
    use sparkwire::spark::Release;
    Release::named(name).ok_or_else(|| {
        let known: Vec<&str> = Release::all().iter().map(Release::name).collect();
        format!(
            "not a Spark release sparkwire speaks: {name} (known: {})",
            known.join(", ")
        )
    })
}

fn seconds(name: &str, v: f64) -> Result<Duration, String> {
    if v.is_finite() && v > 0.0 {
        Ok(Duration::from_secs_f64(v))
    } else {
        Err(format!("{name} must be a positive number of seconds"))
    }
}

fn main() -> ExitCode {
    let args = Args::parse();
    match run(args) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("sparkwire-conformance: {e}");
            ExitCode::from(2)
        }
    }
}

/// Writes `text` to standard output. A reader that has gone (`| head`) ends the output, not the
/// process: `println!` would panic on the broken pipe.
fn say(text: &str) {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    if let Err(e) = out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        if e.kind() != std::io::ErrorKind::BrokenPipe {
            eprintln!("sparkwire-conformance: cannot write to standard output: {e}");
        }
    }
}

fn run(args: Args) -> Result<ExitCode, String> {
    if args.list_faults {
        for f in Fault::all() {
            say(&format!("{}\n", f.name()));
        }
        return Ok(ExitCode::SUCCESS);
    }
    if let Some(path) = &args.write_cases_md {
        std::fs::write(path, cases_md::render()).map_err(|e| format!("{}: {e}", path.display()))?;
        return Ok(ExitCode::SUCCESS);
    }
    if let Some(path) = &args.check_cases_md {
        let on_disk =
            std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
        if on_disk == cases_md::render() {
            return Ok(ExitCode::SUCCESS);
        }
        eprintln!(
            "{} is stale: run sparkwire-conformance --write-cases-md {}",
            path.display(),
            path.display()
        );
        return Ok(ExitCode::from(1));
    }
    if let Some(path) = args
        .write_coverage_md
        .as_ref()
        .or(args.check_coverage_md.as_ref())
    {
        return coverage::run(path, args.write_coverage_md.is_some());
    }
    if let Some(fresh) = &args.compare_spark_results {
        use sparkwire_conformance::documents::spark_md;
        let c = spark_md::compare_dirs(&args.spark_results, fresh)?;
        for id in &c.not_yet_run {
            eprintln!("not yet run on Spark (no stored verdict; passes): {id}");
        }
        if !c.changed.is_empty() {
            eprintln!(
                "real Spark's verdicts differ from {} (rerun scripts/spark/conformance.sh and resolve):\n{}",
                args.spark_results.display(),
                c.changed.join("\n")
            );
            return Ok(ExitCode::from(1));
        }
        eprintln!("real Spark's verdicts are the stored ones");
        return Ok(ExitCode::SUCCESS);
    }
    if args.write_spark_md.is_some() || args.check_spark_md.is_some() {
        use sparkwire_conformance::documents::spark_md;
        let text = spark_md::render_dir(&args.spark_results)?;
        if let Some(path) = &args.write_spark_md {
            std::fs::write(path, &text).map_err(|e| format!("{}: {e}", path.display()))?;
        }
        if let Some(path) = &args.check_spark_md {
            let on_disk =
                std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
            if on_disk != text && spark_md::differs_only_by_new_cases(&on_disk, &text) {
                eprintln!(
                    "{} lists every stored verdict; cases added since are not in its \"Not yet run on \
                     Spark\" lists (passes; --write-spark-md adds them)",
                    path.display()
                );
            } else if on_disk != text {
                eprintln!(
                    "{} is stale: run sparkwire-conformance --write-spark-md {} --spark-results {}",
                    path.display(),
                    path.display(),
                    args.spark_results.display()
                );
                return Ok(ExitCode::from(1));
            }
        }
        return Ok(ExitCode::SUCCESS);
    }
    let target =
        match &args.target {
            Some(t) => Some(Target::from_name(t).ok_or_else(|| {
                format!("--target {t}: expected master, worker, driver or executor")
            })?),
            None => None,
        };
    let selected = |t: Target| {
        sparkwire_conformance::cases(t)
            .into_iter()
            .filter(|c| {
                args.cases.is_empty() || args.cases.iter().any(|p| c.id.starts_with(p.as_str()))
            })
            .collect::<Vec<_>>()
    };
    if args.list {
        let targets: Vec<Target> = target.map_or(Target::ALL.to_vec(), |t| vec![t]);
        let mut n = 0;
        for t in targets {
            for c in selected(t) {
                say(&format!(
                    "{t:<8} {:<58} {:<6} {}\n",
                    c.id,
                    c.level.to_string(),
                    c.statement()
                ));
                n += 1;
            }
        }
        say(&format!("{n} cases\n"));
        return Ok(ExitCode::SUCCESS);
    }
    let target = target.ok_or("--target is required (or --list)")?;
    let endpoint = match (target, args.addr, &args.spawn, args.listen) {
        (Target::Master, Some(a), None, None) => Site::Addr(a),
        (Target::Master, _, _, _) => {
            return Err(
                "--target master needs --addr HOST:PORT (and no --spawn or --listen)".into(),
            )
        }
        (_, None, Some(cmd), None) => Site::Spawn(cmd.clone()),
        (_, None, None, Some(l)) => Site::Listen(l),
        (t, _, _, _) => {
            return Err(format!(
                "--target {t} needs --spawn CMD or --listen HOST:PORT"
            ))
        }
    };
    // The arguments are checked before any case runs: a template the suite cannot fill or whose
    // program does not exist, or an address the suite cannot listen on, would fail every case.
    match &endpoint {
        Site::Spawn(template) => {
            sparkwire_conformance::spawn::preflight(template, target, args.secret_file.is_some())?
        }
        Site::Listen(addr) => {
            std::net::TcpListener::bind(addr)
                .map_err(|e| format!("--listen {addr}: cannot listen there: {e}"))?;
        }
        Site::Addr(_) => {}
    }
    if let Some(template) = &args.spawn_server {
        if target != Target::Master {
            return Err("--spawn-server is for --target master".into());
        }
        sparkwire_conformance::spawn::preflight_server(template)?;
    }
    if args.jobs == Some(0) {
        return Err("--jobs must be at least 1".into());
    }
    let fault = match &args.fault {
        Some(f) => Some(Fault::from_name(f).ok_or_else(|| format!("unknown fault {f}"))?),
        None => None,
    };
    let cases = selected(target);
    if cases.is_empty() {
        return Err("no case matches --cases".into());
    }
    let jobs = args.jobs.unwrap_or(match (&endpoint, target) {
        (Site::Listen(_), _) => 1,
        (_, Target::Master) => 16,
        _ => 4,
    });
    let patience = seconds("--patience", args.patience)?;
    let timeout_scale = match args.timeout_scale {
        Some(f) if f.is_finite() && f > 0.0 => f,
        Some(_) => return Err("--timeout-scale must be a positive number".into()),
        None => (patience.as_secs_f64() / 10.0).max(1.0),
    };
    let run_deadline = match args.deadline {
        Some(d) => seconds("--deadline", d)?,
        None if args.wire == "spark" => {
            Duration::from_secs_f64(DEFAULT_SPARK_DEADLINE_SECS * timeout_scale)
        }
        None => Duration::from_secs_f64(DEFAULT_DEADLINE_SECS * timeout_scale),
    };
    let secret = args
        .secret_file
        .as_deref()
        .map(sparkwire::connection::read_secret_file)
        .transpose()
        .map_err(|e| format!("--secret-file: {e}"))?;
    let spark_auth = match (&secret, args.wire.as_str()) {
        (Some(k), "spark") => Some(
            sparkwire_conformance::harness::spark_auth::SparkAuth::new(k, &args.spark_conf)
                .map_err(|e| format!("--secret-file: {e}"))?,
        ),
        _ if !args.spark_conf.is_empty() => {
            return Err("--spark-conf sets Spark's authentication: only with --wire spark".into())
        }
        _ => None,
    };
    let settings = Settings {
        spark_auth,
        timeout_scale,
        run_deadline,
        judge: !args.no_judge,
        endpoint_versions: None,
        health: Default::default(),
        spawn_server: args.spawn_server.clone(),
        target,
        endpoint,
        patience,
        quiet: seconds("--quiet-time", args.quiet_time)?,
        spread_out: args.spread_out,
        worker_timeout: args
            .worker_timeout
            .map(|w| seconds("--worker-timeout", w))
            .transpose()?,
        max_executor_retries: args.max_executor_retries,
        fault,
        secret,
        secret_file: args.secret_file.clone(),
        hex: args.hex,
        wire: match args.wire.as_str() {
            "spark" => Wire::Spark(args.spark_release),
            _ => Wire::Sparkwire,
        },
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the runtime: {e}"))?;
    let start = Instant::now();
    let results = runtime.block_on(async move {
        let mut settings = settings;
        // A master's profile: the versions its handshake answer says it offers (asked of the
        // endpoint itself, before any fault proxy).
        if let (Site::Addr(addr), Wire::Sparkwire) = (&settings.endpoint, settings.wire) {
            settings.endpoint_versions = sparkwire_conformance::peer::probe_versions(
                *addr,
                settings.secret.as_ref(),
                settings.patience,
            )
            .await;
        }
        let (settings, _guard) = sparkwire_conformance::cases::prepare(settings).await?;
        Ok::<_, String>(runner::run(Arc::new(settings), cases, jobs).await)
    })?;
    runtime.shutdown_timeout(Duration::from_secs(2));
    let wall = start.elapsed();
    say(&report::human(target.name(), &results, wall, args.verbose));
    if let Some(path) = &args.json {
        std::fs::write(path, report::json(target.name(), &results, wall))
            .map_err(|e| format!("{}: {e}", path.display()))?;
    }
    if let Some(path) = &args.junit {
        let xml = report::junit(target.name(), &results, wall)?;
        std::fs::write(path, xml).map_err(|e| format!("{}: {e}", path.display()))?;
    }
    let failed = report::Totals::of(&results).failed;
    Ok(if failed > 0 {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}
