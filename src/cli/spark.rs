//! `sparkwire spark decode|proxy|audit`: Spark's own wire, from a capture or live.

use std::fs::File;
use std::io::{BufReader, BufWriter, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Subcommand};
use sparkwire::messages::Version;
use sparkwire::spark::{decode_capture_with, Summary};
use sparkwire::validate::trace::{TraceFormat, TraceWriter};
use sparkwire::validate::{Config, Validator};

#[derive(Debug, Subcommand)]
pub enum SparkCommand {
    /// Decode the Spark RPC traffic of a pcap or pcapng capture into a trace, validate it and print
    /// a summary; exit 1 when something did not decode or the trace breaks a rule.
    Decode(DecodeArgs),
    /// Put a transparent TCP proxy in front of a Spark process: forward every byte unchanged,
    /// decode both directions, validate, write a trace and print violations as they happen.
    #[cfg(feature = "spark-proxy")]
    Proxy(ProxyArgs),
    /// Audit a running Spark master or worker, read-only: whether it takes Spark RPC without
    /// authentication, which auth schemes and ciphers it takes (downgrades), whether its REST
    /// submission port answers and its state shows secrets. Exit 0: no finding; 1: findings; 2:
    /// could not audit.
    #[cfg(feature = "spark-rest")]
    Audit(super::spark_audit::AuditArgs),
    /// Generate thousands of Spark workers and applications (and a UI peer) against a master on
    /// Spark's wire, check every answer and print the measurements as JSON; exit 1 on any error.
    #[cfg(feature = "spark-proxy")]
    Load(super::spark_load::LoadArgs),
}

#[derive(Debug, Args)]
pub struct DecodeArgs {
    /// The capture (pcap or pcapng).
    capture: PathBuf,
    /// Write the trace (protocol/trace.md) here: binary when the name ends in .swtrace, else JSON
    /// Lines.
    #[arg(long)]
    trace: Option<PathBuf>,
    /// Server ports of Spark's connections (comma-separated); default: every TCP connection that
    /// carries Spark's framing.
    #[arg(long, value_delimiter = ',')]
    ports: Vec<u16>,
    /// Read every connection as this Spark release (`3.5.9`, or a line such as `3.5`); without
    /// it (and without --protocol-version), each connection's release is told from its own
    /// Java streams.
    #[arg(long, value_name = "RELEASE", conflicts_with = "protocol_version")]
    spark_release: Option<String>,
    /// Read every connection as the release protocol version N was defined from (1: Spark
    /// 3.0.3, 2: Spark 4.0.1).
    #[arg(long, value_name = "N")]
    protocol_version: Option<u64>,
    /// Encode every decoded catalogued frame (and endpoint check) again from its typed value and
    /// compare it with the bytes on the wire; exit 1 when any differs.
    #[arg(long)]
    check_roundtrip: bool,
}

#[cfg(feature = "spark-proxy")]
pub use super::spark_proxy::ProxyArgs;

/// The validator settings for Spark's traffic: LaunchTask payloads are Spark's task descriptions,
/// so tasks are counted per executor.
pub fn spark_config() -> Config {
    Config::default()
}

pub fn run(cmd: SparkCommand) -> Result<ExitCode, String> {
    match cmd {
        SparkCommand::Decode(args) => decode(args),
        #[cfg(feature = "spark-proxy")]
        SparkCommand::Proxy(args) => super::spark_proxy::run(args),
        #[cfg(feature = "spark-rest")]
        SparkCommand::Audit(args) => super::spark_audit::run(args),
        #[cfg(feature = "spark-proxy")]
        SparkCommand::Load(args) => super::spark_load::run(args),
    }
}

fn version_of(n: u64) -> Result<Version, String> {
    Version::from_number(n).ok_or_else(|| format!("unknown protocol version {n} (1 or 2)"))
}

/// Prints the summary of a decode.
pub fn print_summary(out: &mut impl Write, s: &Summary) {
    let _ = writeln!(
        out,
        "connections: {}",
        s.connections.len() as u64 + s.more_connections
    );
    for (id, c) in &s.connections {
        let roles = match (c.not_spark, c.roles) {
            (true, _) => "not Spark".to_string(),
            (false, Some((a, b))) => format!("{a} → {b}"),
            (false, None) => "roles unknown".to_string(),
        };
        let release = c
            .release
            .as_deref()
            .map_or_else(String::new, |r| format!(", Spark {r}"));
        let _ = writeln!(
            out,
            "  conn {id}: {} → {} ({roles}{release}): {} frames, {} catalogued messages, {}/{} bytes",
            c.client, c.server, c.frames, c.messages, c.bytes[0], c.bytes[1]
        );
    }
    if s.more_connections > 0 {
        let _ = writeln!(out, "  … and {} more", s.more_connections);
    }
    let _ = writeln!(out, "frames: {}", s.total_frames());
    for (t, n) in &s.frames {
        let _ = writeln!(out, "  {t}: {n}");
    }
    let typed: u64 = s.messages.values().map(|(_, n)| n).sum();
    let _ = writeln!(out, "catalogued messages: {typed}");
    for (class, (ty, n)) in &s.messages {
        let _ = writeln!(out, "  {class} → {ty}: {n}");
    }
    let outside: u64 = s.outside.values().sum();
    let _ = writeln!(out, "outside the catalogue: {outside}");
    for (class, n) in &s.outside {
        let _ = writeln!(out, "  {class}: {n}");
    }
    let unknown: u64 = s.unknown.values().sum();
    let _ = writeln!(out, "unknown classes: {unknown}");
    for (class, n) in &s.unknown {
        let _ = writeln!(out, "  {class}: {n}");
    }
    let _ = writeln!(
        out,
        "not decoded: {}",
        s.failures.len() as u64 + s.more_failures
    );
    for f in &s.failures {
        let _ = writeln!(out, "  {f}");
    }
    if s.more_failures > 0 {
        let _ = writeln!(out, "  … and {} more", s.more_failures);
    }
    if let Some(rt) = &s.roundtrip {
        let _ = writeln!(
            out,
            "round trip: {} re-encoded byte for byte, {} differ",
            rt.same, rt.differ
        );
        for (what, (same, differ)) in &rt.by_message {
            let _ = writeln!(out, "  {what}: {same} same, {differ} differ");
        }
        for d in &rt.differences {
            let _ = writeln!(out, "  {d}");
        }
    }
}

fn decode(args: DecodeArgs) -> Result<ExitCode, String> {
    let release = pinned_release(args.spark_release.as_deref(), args.protocol_version)?;
    let file = File::open(&args.capture)
        .map_err(|e| format!("cannot open {}: {e}", args.capture.display()))?;
    let decoded = decode_capture_with(
        BufReader::new(file),
        args.ports,
        release,
        args.check_roundtrip,
    )
    .map_err(|e| format!("{}: {e}", args.capture.display()))?;
    if let Some(path) = &args.trace {
        let file =
            File::create(path).map_err(|e| format!("cannot create {}: {e}", path.display()))?;
        let mut w = TraceWriter::with_format(BufWriter::new(file), TraceFormat::for_path(path));
        for e in &decoded.events {
            w.write(e)
                .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
        }
        w.into_inner()
            .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    }
    let mut validator = Validator::new(spark_config());
    let mut violations = Vec::new();
    for e in &decoded.events {
        violations.extend(validator.observe(e));
    }
    violations.extend(validator.finish());
    let mut out = std::io::stdout().lock();
    let _ = writeln!(
        out,
        "{}: {} packets ({} not TCP), {} trace events",
        args.capture.display(),
        decoded.packets.0,
        decoded.packets.1,
        decoded.events.len()
    );
    print_summary(&mut out, &decoded.summary);
    for v in &violations {
        let _ = writeln!(out, "{v}");
    }
    let _ = writeln!(out, "violations: {}", violations.len());
    let failed = decoded
        .summary
        .roundtrip
        .as_ref()
        .is_some_and(|r| r.differ > 0)
        || !decoded.summary.failures.is_empty()
        || decoded.summary.more_failures > 0
        || !decoded.summary.unknown.is_empty()
        || !violations.is_empty();
    Ok(if failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

/// The release `--spark-release` or `--protocol-version` pins, if either is given.
pub fn pinned_release(
    release: Option<&str>,
    protocol_version: Option<u64>,
) -> Result<Option<&'static sparkwire::spark::Release>, String> {
    use sparkwire::spark::Release;
    if let Some(name) = release {
        return Release::named(name).map(Some).ok_or_else(|| {
            let known: Vec<&str> = Release::all().iter().map(Release::name).collect();
            format!(
                "--spark-release: {name} is not a release sparkwire speaks (it speaks {})",
                known.join(", ")
            )
        });
    }
    match protocol_version {
        Some(n) => Ok(Some(Release::of(version_of(n)?))),
        None => Ok(None),
    }
}
