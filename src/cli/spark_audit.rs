//! `sparkwire spark audit spark://HOST:PORT`: a read-only security check of a running Spark
//! master or worker (or a sparkwire master's Spark port), as a scanner reports.
//!
//! Exit status: 0 when nothing was found, 1 when something was (each `FINDING` line), 2 when the
//! target could not be audited (nothing listens, or it does not speak Spark's RPC transport).

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use sparkwire::spark::audit::{audit, AuditOptions, HttpPort};

#[derive(Debug, Args)]
pub struct AuditArgs {
    /// The Spark RPC address: spark://HOST:PORT (a master's or a worker's), or HOST:PORT.
    target: String,
    /// A file holding spark.authenticate.secret: checks that the target takes it and reads
    /// what only an authenticated peer may (its state answer). Optional: without it the audit
    /// still tells which schemes are taken.
    #[arg(long, value_name = "PATH")]
    secret_file: Option<PathBuf>,
    /// The REST submission server's port to look at (Spark's spark.master.rest.port).
    #[arg(long, value_name = "PORT", default_value_t = 6066)]
    rest_port: u16,
    /// The web UI's port to look at; default Spark's: 8080 for a master, 8081 for a worker.
    #[arg(long, value_name = "PORT")]
    ui_port: Option<u16>,
    /// Look at no HTTP port (neither REST nor the web UI).
    #[arg(long)]
    no_http: bool,
    /// Seconds each probe may take.
    #[arg(long, value_name = "SECONDS", default_value_t = 10.0)]
    timeout: f64,
}

/// `HOST` and `PORT` of `spark://HOST:PORT`, `HOST:PORT` or `[V6]:PORT`.
fn host_port(target: &str) -> Result<(String, u16), String> {
    let rest = target.strip_prefix("spark://").unwrap_or(target);
    let rest = rest.trim_end_matches('/');
    let (host, port) = rest
        .rsplit_once(':')
        .ok_or_else(|| format!("{target}: spark://HOST:PORT"))?;
    let host = host.trim_start_matches('[').trim_end_matches(']');
    if host.is_empty() || host.contains('/') || host.contains(',') {
        return Err(format!(
            "{target}: one master's spark://HOST:PORT (audit each master of a list on its own)"
        ));
    }
    let port = port
        .parse::<u16>()
        .ok()
        .filter(|p| *p > 0)
        .ok_or_else(|| format!("{target}: {port:?} is not a port"))?;
    Ok((host.to_string(), port))
}

pub fn run(args: AuditArgs) -> Result<ExitCode, String> {
    let (host, port) = host_port(&args.target)?;
    let mut options = AuditOptions::new(host, port);
    options.timeout = super::seconds(args.timeout)?;
    if let Some(path) = &args.secret_file {
        let shared = super::security::secret(Some(path))?.ok_or("an empty secret file")?;
        options.secret = Some(String::from_utf8(shared.expose().to_vec()).map_err(|_| {
            "--secret-file: not UTF-8 text, as Spark's spark.authenticate.secret must be"
                .to_string()
        })?);
    }
    if args.no_http {
        options.rest_port = HttpPort::Off;
        options.ui_port = HttpPort::Off;
    } else {
        options.rest_port = HttpPort::At(args.rest_port);
        options.ui_port = args.ui_port.map_or(HttpPort::Default, HttpPort::At);
    }
    let rt = super::runtime()?;
    let report = rt.block_on(audit(&options));
    let mut out = std::io::stdout().lock();
    match report {
        Ok(report) => {
            let _ = out.write_all(report.render().as_bytes());
            let _ = out.flush();
            Ok(if report.findings().next().is_some() {
                ExitCode::from(1)
            } else {
                ExitCode::SUCCESS
            })
        }
        Err(e) => {
            let _ = writeln!(
                out,
                "sparkwire spark audit of spark://{}:{}",
                options.host, port
            );
            let _ = writeln!(out, "could not audit: {e}");
            let _ = writeln!(out, "{}", sparkwire::spark::audit::READ_ONLY);
            let _ = out.flush();
            Ok(ExitCode::from(2))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_are_one_host_and_port() {
        assert_eq!(
            host_port("spark://10.0.0.5:7077").expect("url"),
            ("10.0.0.5".to_string(), 7077)
        );
        assert_eq!(
            host_port("m1:7078/").expect("bare"),
            ("m1".to_string(), 7078)
        );
        assert_eq!(
            host_port("spark://[::1]:7077").expect("v6"),
            ("::1".to_string(), 7077)
        );
        assert!(host_port("spark://a:7077,b:7077").is_err());
        assert!(host_port("spark://a").is_err());
        assert!(host_port("spark://a:0").is_err());
        assert!(host_port("spark://a:x").is_err());
    }
}
