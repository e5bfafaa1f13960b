//! `sparkwire master`: runs the reference Master until Ctrl-C or SIGTERM.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;

use super::seconds;

use sparkwire::messages::Version;
use sparkwire::node::redact::{Redactor, DEFAULT_REDACTION_REGEX};
use sparkwire::reference::master::{Master, MasterConfig};
use sparkwire::reference::observe::StrictObserver;
use sparkwire::validate::SharedValidator;

/// Options of `sparkwire master`.
#[derive(Debug, Args)]
pub struct MasterArgs {
    /// Address to listen on and announce. Default: SPARK_MASTER_HOST, else SPARK_LOCAL_HOSTNAME,
    /// else SPARK_LOCAL_IP, else 127.0.0.1 (Spark's last resort is the host's own address:
    /// sparkwire opens to other hosts only when told an address).
    #[arg(long)]
    host: Option<String>,
    /// Port to listen on; 0 picks a free one.
    #[arg(long, default_value_t = 7077)]
    port: u16,
    /// When the port (or the web UI's) is taken, try the next one up, at most this many times
    /// (spark.port.maxRetries); the port taken is printed and logged.
    #[arg(long, value_name = "N", default_value_t = sparkwire::reference::ports::DEFAULT_PORT_RETRIES)]
    port_retries: u16,
    /// Spread applications over as many workers as possible (spark.deploy.spreadOut).
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set)]
    spread_out: bool,
    /// Seconds without a heartbeat before a worker is DEAD (spark.worker.timeout).
    #[arg(long, default_value_t = 60.0)]
    worker_timeout: f64,
    /// Abnormal executor ends before an application is removed (spark.deploy.maxExecutorRetries).
    #[arg(long, default_value_t = 10)]
    max_executor_retries: i32,
    /// Seconds an executor must have been RUNNING, after another of its application's ended
    /// abnormally, before the application no longer waits with "executors launched but ending"
    /// (SPEC §16; a worker says RUNNING when it starts the process, before the executor reaches
    /// its driver). Spark has no such setting.
    #[arg(long, value_name = "SECS", default_value_t = 60.0)]
    steady_executor: f64,
    /// How masters elect the active one and keep what they recover from
    /// (spark.deploy.recoveryMode): `filesystem` (a directory, --recovery-dir), `zookeeper` (an
    /// ensemble, --zookeeper-url), or `none`. Default: `filesystem` when --recovery-dir is
    /// given, else `none`.
    #[arg(long, value_enum)]
    recovery_mode: Option<RecoveryMode>,
    /// Persist state here and recover from it; masters sharing it elect the active one with a
    /// lock file there (spark.deploy.recoveryDirectory; the filesystem mode).
    #[arg(long)]
    recovery_dir: Option<PathBuf>,
    /// The ZooKeeper ensemble, HOST:PORT[,HOST:PORT…] (spark.deploy.zookeeper.url; the zookeeper
    /// mode).
    #[arg(long, value_name = "HOST:PORT[,HOST:PORT…]")]
    zookeeper_url: Option<String>,
    /// The ZooKeeper directory of the election (`DIR/leader_election`) and the records
    /// (`DIR/master_status`) (spark.deploy.zookeeper.dir).
    #[arg(long, value_name = "DIR", default_value = "/spark")]
    zookeeper_dir: String,
    /// Seconds of ZooKeeper session timeout: a dead or isolated active master's election node
    /// goes this long after its last contact, and a standby takes over.
    #[arg(long, value_name = "SECS", default_value_t = 6.0)]
    zookeeper_session_timeout: f64,
    /// Seconds a recovering master waits for the recovered workers and applications to answer
    /// before dropping the silent ones (spark.deploy.recoveryTimeout). Default: --worker-timeout.
    #[arg(long, value_name = "SECS")]
    recovery_timeout: Option<f64>,
    /// Largest frame accepted or sent, bytes (spark.rpc.message.maxSize).
    #[arg(long)]
    max_frame_bytes: Option<usize>,
    /// Protocol versions to speak, comma-separated (`1` plays a Spark 3.0 master).
    #[arg(long, value_delimiter = ',', default_values_t = [1u64, 2])]
    protocol_versions: Vec<u64>,
    /// Check every connection against the protocol's rules (strict mode: a message that breaks
    /// one is refused); print the verdict (`sparkwire master validator: N events, M violations`)
    /// on standard output and exit with status 1 at shutdown if any rule was broken.
    #[arg(long)]
    strict: bool,
    /// Port of the web UI (HTML page, /json, /metrics); 0 picks a free one.
    #[arg(long, default_value_t = 8080)]
    webui_port: u16,
    /// Serve no web UI.
    #[arg(long, conflicts_with = "webui_port")]
    no_webui: bool,
    /// Shut down when standard input ends: a parent that starts this process with a pipe as its
    /// standard input (as `local-cluster` does) is then never outlived, even if it is killed.
    #[arg(long)]
    exit_with_stdin: bool,
    /// A file holding the admin secret: only `ui` peers that prove it in the handshake may kill
    /// all drivers, decommission workers or clear completed drivers and applications. Needs
    /// --secret-file.
    #[arg(long, value_name = "PATH", requires = "secret_file")]
    admin_secret_file: Option<PathBuf>,
    #[command(flatten)]
    security: super::security::SecurityArgs,
    #[command(flatten)]
    limits: super::limits::LimitArgs,
    #[command(flatten)]
    idle: super::limits::IdleArgs,
    /// Also serve Spark's own RPC on this port (0 picks a free one): real Spark workers,
    /// applications and submission clients use `spark://HOST:PORT` (printed as
    /// `sparkwire master Spark wire on spark://…`). With --secret-file, Spark peers must
    /// authenticate as Spark's `spark.authenticate=true` has them (the file's content is their
    /// `spark.authenticate.secret`): SASL DIGEST-MD5, or the auth engine with AES-CTR when their
    /// `spark.network.crypto.enabled=true`. With TLS every Spark peer is refused.
    #[cfg(feature = "spark-proxy")]
    #[arg(long, value_name = "PORT")]
    spark_port: Option<u16>,
    /// One of Spark's authentication settings for --spark-port, as Spark names it (repeatable):
    /// spark.network.crypto.saslFallback=false refuses SASL,
    /// spark.network.crypto.enabled=false takes SASL only,
    /// spark.network.crypto.authEngineVersion=2 derives the session key as version 2 does,
    /// spark.network.crypto.cipher=AES/GCM/NoPadding encrypts with AES-GCM (Spark 4.0 on).
    #[cfg(feature = "spark-proxy")]
    #[arg(long, value_name = "KEY=VALUE", requires = "spark_port")]
    spark_conf: Vec<String>,
    /// Pin the Spark release spoken on --spark-port (`3.5.9`, or a release line such as `3.5`
    /// for its newest release). Without it, each Spark peer's release is told from the Java
    /// streams it sends (SPEC §15.3), and a peer of a release sparkwire does not know is refused.
    #[cfg(feature = "spark-proxy")]
    #[arg(long, value_name = "RELEASE", requires = "spark_port")]
    spark_release: Option<String>,
    /// Also serve Spark's REST submission protocol on this port (0 picks a free one): kill and
    /// status, what `spark-submit --master spark://HOST:PORT --kill ID` (and `--status ID`)
    /// speak. Spark's REST protocol has no authentication: refused with a secret or TLS.
    #[cfg(feature = "spark-rest")]
    #[arg(long, value_name = "PORT")]
    spark_rest_port: Option<u16>,
    /// Values whose keys (or themselves) match this pattern are hidden in the state answer
    /// (spark.redaction.regex).
    #[arg(long, value_name = "REGEX", default_value = DEFAULT_REDACTION_REGEX)]
    redaction_regex: String,
}

/// `--recovery-mode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum RecoveryMode {
    /// No recovery: the master leads at once, alone, and forgets everything when it stops.
    None,
    /// A directory of records and a lock file (--recovery-dir).
    Filesystem,
    /// A ZooKeeper ensemble (--zookeeper-url, --zookeeper-dir).
    Zookeeper,
}

/// The recovery directory and ZooKeeper settings the flags ask for.
type Recovery = (
    Option<PathBuf>,
    Option<sparkwire::reference::master::recovery::ZooKeeperConfig>,
);

fn recovery(args: &MasterArgs) -> Result<Recovery, String> {
    let mode = args
        .recovery_mode
        .unwrap_or(if args.recovery_dir.is_some() {
            RecoveryMode::Filesystem
        } else {
            RecoveryMode::None
        });
    match mode {
        RecoveryMode::None => {
            if args.recovery_dir.is_some() || args.zookeeper_url.is_some() {
                return Err(
                    "--recovery-mode none takes neither --recovery-dir nor --zookeeper-url".into(),
                );
            }
            Ok((None, None))
        }
        RecoveryMode::Filesystem => {
            if args.zookeeper_url.is_some() {
                return Err("--zookeeper-url needs --recovery-mode zookeeper".into());
            }
            match &args.recovery_dir {
                Some(dir) => Ok((Some(dir.clone()), None)),
                None => Err("--recovery-mode filesystem needs --recovery-dir".into()),
            }
        }
        RecoveryMode::Zookeeper => {
            if args.recovery_dir.is_some() {
                return Err("--recovery-dir is the filesystem mode's; --recovery-mode zookeeper keeps its records in ZooKeeper".into());
            }
            let Some(url) = &args.zookeeper_url else {
                return Err(
                    "--recovery-mode zookeeper needs --zookeeper-url HOST:PORT[,HOST:PORT…]".into(),
                );
            };
            let mut zk = sparkwire::reference::master::recovery::ZooKeeperConfig::new(
                url,
                &args.zookeeper_dir,
            );
            zk.session_timeout = seconds(args.zookeeper_session_timeout)
                .map_err(|e| format!("--zookeeper-session-timeout: {e}"))?;
            Ok((None, Some(zk)))
        }
    }
}

/// The REST submission server `--spark-rest-port` asks for (its master address is filled in
/// once the master listens).
#[cfg(feature = "spark-rest")]
fn spark_rest(
    port: Option<u16>,
    release: Option<&str>,
    config: &MasterConfig,
) -> Result<Option<sparkwire::spark::RestConfig>, String> {
    let Some(port) = port else {
        return Ok(None);
    };
    if config.security.authenticates() || config.security.encrypts() {
        return Err(
            "--spark-rest-port: Spark's REST submission protocol has no authentication, \
                    and this master has a secret (or TLS): it is not served"
                .into(),
        );
    }
    let unbound = std::net::SocketAddr::from((std::net::Ipv4Addr::LOCALHOST, 0));
    let mut rest = sparkwire::spark::RestConfig::new(config.host.clone(), port, unbound);
    rest.version = match release {
        Some(r) => spark_release(r, config)?.version(),
        None => Version::V2,
    };
    rest.max_connections = config.limits.max_connections.min(64);
    Ok(Some(rest))
}

/// Where the master's own bridges reach its listener: `addr`, on loopback when it listens on
/// every address.
#[cfg(feature = "spark-proxy")]
fn reachable(mut addr: std::net::SocketAddr) -> std::net::SocketAddr {
    if addr.ip().is_unspecified() {
        addr.set_ip(std::net::Ipv4Addr::LOCALHOST.into());
    }
    addr
}

/// The release `--spark-release` pins, whose protocol version the master must speak.
#[cfg(feature = "spark-proxy")]
fn spark_release(
    release: &str,
    config: &MasterConfig,
) -> Result<&'static sparkwire::spark::Release, String> {
    use sparkwire::spark::Release;
    let Some(pinned) = Release::named(release) else {
        let known: Vec<&str> = Release::all().iter().map(Release::name).collect();
        return Err(format!(
            "--spark-release: {release} is not a release sparkwire speaks (it speaks {}; \
             a release line such as 3.5 names its newest)",
            known.join(", ")
        ));
    };
    let version = pinned.version();
    if !config.versions.contains(&version) {
        return Err(format!(
            "--spark-release {release} needs protocol version {} in --protocol-versions",
            version.number()
        ));
    }
    Ok(pinned)
}

/// The Spark-wire front `--spark-port` asks for (its master address is filled in once the
/// master listens).
#[cfg(feature = "spark-proxy")]
fn spark_front(
    port: Option<u16>,
    release: Option<&str>,
    spark_conf: &[String],
    config: &MasterConfig,
) -> Result<Option<sparkwire::spark::FrontConfig>, String> {
    let Some(port) = port else {
        return Ok(None);
    };
    let unbound = std::net::SocketAddr::from((std::net::Ipv4Addr::LOCALHOST, 0));
    let mut front = sparkwire::spark::FrontConfig::new(config.host.clone(), port, unbound);
    front.release = release.map(|r| spark_release(r, config)).transpose()?;
    front.versions = config.versions.clone();
    front.max_frame = config.max_frame_size as u64;
    front.max_connections = config.limits.max_connections;
    front.idle_timeout = config.limits.idle_timeout;
    if config.security.encrypts() {
        front.refuse = Some(
            "this sparkwire master has TLS, which its Spark wire does not speak: Spark peers are \
             refused"
                .into(),
        );
    } else if let Some(shared) = &config.security.secret {
        let secret = std::str::from_utf8(shared.expose()).map_err(|_| {
            "--spark-port: the secret file is not UTF-8 text, as Spark's \
             spark.authenticate.secret must be"
                .to_string()
        })?;
        let mut auth = sparkwire::spark::auth::ServerAuth::new(secret);
        for kv in spark_conf {
            let (k, v) = kv
                .split_once('=')
                .ok_or_else(|| format!("--spark-conf {kv:?}: KEY=VALUE"))?;
            auth.set(k, v).map_err(|e| format!("--spark-conf: {e}"))?;
        }
        front.auth = Some(auth);
        // The bridges prove the shared secret only (never the admin secret).
        front.master_security = sparkwire::connection::Security::with_secret(shared.clone());
    } else if !spark_conf.is_empty() {
        return Err("--spark-conf sets Spark's authentication, which needs --secret-file".into());
    }
    Ok(Some(front))
}

/// Runs the command.
pub fn run(args: MasterArgs) -> Result<ExitCode, String> {
    super::init_logging();
    let host = super::address::daemon_host(
        args.host.as_deref(),
        true,
        sparkwire::reference::address::process_env,
    );
    if !(args.worker_timeout.is_finite() && args.worker_timeout > 0.0) {
        return Err("--worker-timeout must be a positive number of seconds".into());
    }
    let mut versions = Vec::new();
    for n in &args.protocol_versions {
        let v = Version::from_number(*n).ok_or_else(|| {
            format!("--protocol-versions: this crate speaks versions 1 and 2, not {n}")
        })?;
        if !versions.contains(&v) {
            versions.push(v);
        }
    }
    if versions.is_empty() {
        return Err("--protocol-versions names no version".into());
    }
    let mut security = super::security::listening(&args.security, &host, "master")?;
    if security.encrypts() && args.security.tls.tls_ca.is_none() {
        tracing::warn!("TLS without --tls-ca: after a failover this master cannot reach workers and applications to announce itself");
    }
    security.admin_secret = super::security::secret(args.admin_secret_file.as_deref())?;
    if security.admin_secret.is_some() && security.admin_secret == security.secret {
        return Err("--admin-secret-file must hold another secret than --secret-file".into());
    }
    let (recovery_dir, zookeeper) = recovery(&args)?;
    let recovery_timeout = match args.recovery_timeout {
        Some(t) => Some(seconds(t).map_err(|e| format!("--recovery-timeout: {e}"))?),
        None => None,
    };
    let mut config = MasterConfig {
        limits: super::limits::limits(&args.limits, Some(&args.idle))?,
        security,
        host,
        port: args.port,
        port_retries: args.port_retries,
        core: sparkwire::node::master::Config {
            spread_out: args.spread_out,
            worker_timeout: seconds(args.worker_timeout)
                .map_err(|e| format!("--worker-timeout: {e}"))?,
            max_executor_retries: args.max_executor_retries,
            redaction: Redactor::new(&args.redaction_regex).map_err(|e| e.to_string())?,
            recovery_timeout,
            steady_executor: seconds(args.steady_executor)
                .map_err(|e| format!("--steady-executor: {e}"))?,
            #[cfg(feature = "spark")]
            release_compatible: sparkwire::spark::Release::compatible_names,
            ..sparkwire::node::master::Config::default()
        },
        recovery_dir,
        zookeeper,
        versions,
        web_ui_port: (!args.no_webui).then_some(args.webui_port),
        ..MasterConfig::default()
    };
    if let Some(max) = super::limits::max_frame_bytes(args.max_frame_bytes)? {
        config.max_frame_size = max;
    }
    let observer = args.strict.then(|| {
        let rules = sparkwire::validate::Config {
            worker_timeout_ms: u64::try_from(config.core.worker_timeout.as_millis())
                .unwrap_or(u64::MAX),
            ..sparkwire::validate::Config::default()
        };
        StrictObserver::new(SharedValidator::with_config(rules))
    });
    config.observer = observer.clone();
    #[cfg(feature = "spark-proxy")]
    let spark_front = spark_front(
        args.spark_port,
        args.spark_release.as_deref(),
        &args.spark_conf,
        &config,
    )?;
    #[cfg(feature = "spark-rest")]
    let spark_rest = spark_rest(args.spark_rest_port, args.spark_release.as_deref(), &config)?;
    #[cfg(feature = "spark-proxy")]
    let spark_peers = config.spark_peers.clone();
    // The master may be elected on its store before the front listens: the recovered Spark
    // peers it dials meanwhile are held for the front, not given up.
    #[cfg(feature = "spark-proxy")]
    if spark_front.is_some() {
        spark_peers.expect_front();
    }
    super::runtime()?.block_on(async move {
        let master = Master::start(config).await.map_err(|e| e.to_string())?;
        // One write: whoever reads only the first line may close the pipe after it.
        let mut announce = format!("sparkwire master listening on {}\n", master.url());
        if let Some(ui) = master.web_ui_addr() {
            announce.push_str(&format!("sparkwire master web UI at http://{ui}\n"));
        }
        #[cfg(feature = "spark-proxy")]
        let _front = match spark_front {
            Some(mut front) => {
                front.master = reachable(master.addr());
                // After a failover, recovered Spark peers are told of this master on its wire.
                let ui = master
                    .web_ui_addr()
                    .map(|a| format!("http://{}:{}", front.host, a.port()));
                front.recovered = Some((spark_peers.clone(), ui.unwrap_or_default()));
                let handle = sparkwire::spark::start_front(front.clone())
                    .await
                    .map_err(|e| format!("--spark-port {}: {e}", front.port))?;
                announce.push_str(&format!(
                    "sparkwire master Spark wire on spark://{}:{}\n",
                    front.host,
                    handle.addr().port()
                ));
                Some(handle)
            }
            None => None,
        };
        #[cfg(feature = "spark-rest")]
        let _rest = match spark_rest {
            Some(mut rest) => {
                rest.master = reachable(master.addr());
                let handle = sparkwire::spark::start_rest(rest.clone())
                    .await
                    .map_err(|e| format!("--spark-rest-port {}: {e}", rest.port))?;
                announce.push_str(&format!(
                    "sparkwire master Spark REST submissions on spark://{}:{}\n",
                    rest.host,
                    handle.addr().port()
                ));
                Some(handle)
            }
            None => None,
        };
        let _ = std::io::stdout().write_all(announce.as_bytes());
        super::flush_stdout();
        let mut master = master;
        tokio::select! {
            why = super::stop_requested(args.exit_with_stdin) => {
                tracing::info!("{why}; shutting down");
                master.shutdown().await;
            }
            _ = master.stopped() => {}
        }
        if let Some(o) = observer {
            let events = o.validator().with(|v| v.events());
            let summary = o.summary();
            // Whoever started the master may have stopped reading: never fail on that.
            let _ = writeln!(
                std::io::stdout(),
                "sparkwire master validator: {events} events, {} violations{}",
                o.violation_count(),
                if summary.is_empty() {
                    String::new()
                } else {
                    format!(" ({summary})")
                }
            );
            super::flush_stdout();
            if o.violation_count() > 0 {
                eprintln!("sparkwire: protocol violations: {summary}");
                return Ok(ExitCode::from(1));
            }
        }
        Ok(ExitCode::SUCCESS)
    })
}
