//! `sparkwire spark proxy --listen ADDR --upstream ADDR`: a transparent, tracing, validating
//! proxy in front of a Spark process, until Ctrl-C or SIGTERM.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;

use sparkwire::spark::{start_proxy, ProxyOptions};
use sparkwire::validate::trace::TraceFormat;

use super::spark::{print_summary, spark_config};

#[derive(Debug, Args)]
pub struct ProxyArgs {
    /// Address to listen on, such as 127.0.0.1:17070 (Spark processes connect here).
    #[arg(long)]
    listen: String,
    /// The Spark process to forward to, such as 127.0.0.1:17077.
    #[arg(long)]
    upstream: String,
    /// Write the trace (protocol/trace.md) here, flushed as it goes: binary when the name ends in
    /// .swtrace, else JSON Lines.
    #[arg(long)]
    trace: Option<PathBuf>,
    /// Read every connection as this Spark release (`3.5.9`, or a line such as `3.5`); without
    /// it (and without --protocol-version), each connection's release is told from its own
    /// Java streams.
    #[arg(long, value_name = "RELEASE", conflicts_with = "protocol_version")]
    spark_release: Option<String>,
    /// Read every connection as the release protocol version N was defined from (1: Spark
    /// 3.0.3, 2: Spark 4.0.1).
    #[arg(long, value_name = "N")]
    protocol_version: Option<u64>,
    /// A file holding Spark's `spark.authenticate.secret`: the proxy terminates Spark's
    /// authentication on both sides (clients authenticate to it, it authenticates to the
    /// upstream) and traces the frames between decrypted.
    #[arg(long, value_name = "PATH")]
    secret_file: Option<PathBuf>,
    /// One of Spark's authentication settings, as Spark names it (repeatable), for both sides:
    /// spark.network.crypto.enabled=true (the auth engine with AES-CTR to the upstream; clients
    /// may use either scheme), spark.network.crypto.saslFallback=false,
    /// spark.network.crypto.authEngineVersion=2, spark.network.crypto.cipher=AES/GCM/NoPadding.
    #[arg(long, value_name = "KEY=VALUE", requires = "secret_file")]
    spark_conf: Vec<String>,
}

/// A file written through at each line (binary: at each write, which the trace writer makes one
/// per record), so a killed proxy leaves a whole trace.
struct LineFlushed(BufWriter<File>, TraceFormat);

impl Write for LineFlushed {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.0.write(buf)?;
        if self.1 == TraceFormat::Binary || buf.ends_with(b"\n") {
            self.0.flush()?;
        }
        Ok(n)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.0.flush()
    }
}

pub fn run(args: ProxyArgs) -> Result<ExitCode, String> {
    let release =
        super::spark::pinned_release(args.spark_release.as_deref(), args.protocol_version)?;
    super::init_logging_at("warn");
    let trace_format = args
        .trace
        .as_deref()
        .map_or(TraceFormat::JsonLines, TraceFormat::for_path);
    let trace: Option<Box<dyn Write + Send>> = match &args.trace {
        Some(path) => {
            let f =
                File::create(path).map_err(|e| format!("cannot create {}: {e}", path.display()))?;
            Some(Box::new(LineFlushed(BufWriter::new(f), trace_format)))
        }
        None => None,
    };
    let (auth, auth_upstream) = match &args.secret_file {
        None => (None, None),
        Some(path) => {
            let shared = super::security::secret(Some(path))?.ok_or("an empty secret file")?;
            let secret = String::from_utf8(shared.expose().to_vec()).map_err(|_| {
                "--secret-file: not UTF-8 text, as Spark's spark.authenticate.secret must be"
                    .to_string()
            })?;
            let mut server = sparkwire::spark::auth::ServerAuth::new(secret.clone());
            let mut client = sparkwire::spark::auth::ClientAuth::sasl(secret);
            for kv in &args.spark_conf {
                let (k, v) = kv
                    .split_once('=')
                    .ok_or_else(|| format!("--spark-conf {kv:?}: KEY=VALUE"))?;
                server.set(k, v).map_err(|e| format!("--spark-conf: {e}"))?;
                client.set(k, v).map_err(|e| format!("--spark-conf: {e}"))?;
            }
            // Clients may use either scheme unless SASL is switched off.
            server.crypto = true;
            (Some(server), Some(client))
        }
    };
    let rt = super::runtime()?;
    rt.block_on(async move {
        let listener = tokio::net::TcpListener::bind(&args.listen)
            .await
            .map_err(|e| format!("cannot listen on {}: {e}", args.listen))?;
        let options = ProxyOptions {
            release,
            config: spark_config(),
            trace,
            trace_format,
            on_violation: Some(Box::new(|v| {
                let mut out = std::io::stdout().lock();
                let _ = writeln!(out, "violation: {v}");
                let _ = out.flush();
            })),
            on_event: None,
            auth,
            auth_upstream,
        };
        let handle = start_proxy(listener, args.upstream.clone(), options)
            .map_err(|e| format!("cannot start the proxy: {e}"))?;
        {
            let mut out = std::io::stdout().lock();
            let _ = writeln!(
                out,
                "sparkwire spark proxy listening on {} for {}",
                handle.local_addr(),
                args.upstream
            );
            let _ = out.flush();
        }
        wait_for_stop().await;
        let outcome = handle.stop().await;
        let mut out = std::io::stdout().lock();
        let _ = writeln!(
            out,
            "forwarded {} bytes to {} and {} back; {} trace events",
            outcome.forwarded[0], args.upstream, outcome.forwarded[1], outcome.events
        );
        print_summary(&mut out, &outcome.summary);
        let _ = writeln!(out, "violations: {}", outcome.violations.len());
        if let Some(e) = &outcome.trace_error {
            return Err(format!("the trace could not be written: {e}"));
        }
        Ok(
            if outcome.violations.is_empty()
                && outcome.summary.failures.is_empty()
                && outcome.summary.more_failures == 0
            {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(1)
            },
        )
    })
}

async fn wait_for_stop() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        if let Ok(mut term) = signal(SignalKind::terminate()) {
            tokio::select! {
                _ = tokio::signal::ctrl_c() => {}
                _ = term.recv() => {}
            }
            return;
        }
    }
    let _ = tokio::signal::ctrl_c().await;
}
