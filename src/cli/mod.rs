//! Layer 7: the commands of the `sparkwire` binary, built on the public API of the library.

mod address;
mod busy_poll;
mod client;
mod driver;
mod executor;
mod job;
mod limits;
mod local_cluster;
mod master;
mod security;
mod sim;
#[cfg(feature = "spark")]
mod spark;
#[cfg(feature = "spark-rest")]
mod spark_audit;
#[cfg(feature = "spark-proxy")]
mod spark_load;
#[cfg(feature = "spark-proxy")]
mod spark_proxy;
mod spec;
mod status;
mod submit;
mod trace;
mod validate;
mod worker;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// sparkwire: Apache Spark's standalone-cluster protocol, specified, encoded and checked.
#[derive(Debug, Parser)]
#[command(name = "sparkwire", version, about, long_about = None)]
pub struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Read the protocol definition: list messages, write or check the golden vectors.
    #[command(subcommand)]
    Spec(spec::SpecCommand),
    /// Check a trace (JSON Lines or binary) against the protocol's state machine; exit 1 on
    /// violations.
    Validate(validate::ValidateArgs),
    /// Work with trace files: convert between JSON Lines and the binary form.
    #[command(subcommand)]
    Trace(trace::TraceCommand),
    /// Run the reference executor (what a worker launches): register with a driver, run tasks.
    Executor(executor::ExecutorArgs),
    /// Run the reference driver: register an application with the master(s), run one job, exit.
    Driver(driver::DriverArgs),
    /// Start a master and workers as processes, run a job through them and report: Spark's
    /// local-cluster[N,C,M].
    LocalCluster(local_cluster::LocalClusterArgs),
    /// Run the reference Master (prints `sparkwire master listening on URL` first).
    Master(master::MasterArgs),
    /// Run the reference Worker (prints its listening address first).
    Worker(worker::WorkerArgs),
    /// Run a job on a running cluster, the driver here (client deploy mode) or on a worker
    /// (cluster deploy mode): spark-submit's counterpart. Exit 0 when the job succeeded.
    Submit(submit::SubmitArgs),
    /// Show a running master's state: workers, applications, drivers (as tables, or --json).
    Status(status::StatusArgs),
    /// Run the deterministic simulator: many seeds under generated faults (exit 1 on a broken
    /// invariant, naming the seed), or one seed replayed with its trace.
    Sim(sim::SimArgs),
    /// Read Spark's own wire: decode a capture, or proxy live traffic, into a validated trace.
    #[cfg(feature = "spark")]
    #[command(subcommand)]
    Spark(spark::SparkCommand),
}

/// Runs the parsed command.
pub fn run(cli: Cli) -> Result<ExitCode, String> {
    match cli.command {
        Command::Spec(cmd) => spec::run(cmd),
        Command::Validate(args) => validate::run(args),
        Command::Trace(cmd) => trace::run(cmd),
        Command::Executor(args) => executor::run(args),
        Command::Driver(args) => driver::run(args),
        Command::LocalCluster(args) => local_cluster::run(args),
        Command::Master(args) => master::run(args),
        Command::Worker(args) => worker::run(args),
        Command::Submit(args) => submit::run(args),
        Command::Status(args) => status::run(args),
        Command::Sim(args) => sim::run_command(args),
        #[cfg(feature = "spark")]
        Command::Spark(cmd) => spark::run(cmd),
    }
}

/// Logs to stderr with `tracing`, at the level `RUST_LOG` gives (default `info`).
fn init_logging() {
    init_logging_at("info");
}

/// Logs to stderr with `tracing`, at the level `RUST_LOG` gives (default `default`).
fn init_logging_at(default: &str) {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(colour(
            std::io::IsTerminal::is_terminal(&std::io::stderr()),
            std::env::var_os("NO_COLOR"),
        ))
        .try_init();
}

/// Whether log lines are coloured: only on a terminal, and never when `NO_COLOR` is set to
/// anything but the empty string (no-color.org).
fn colour(terminal: bool, no_color: Option<std::ffi::OsString>) -> bool {
    terminal && no_color.is_none_or(|v| v.is_empty())
}

/// A multi-threaded tokio runtime.
fn runtime() -> Result<tokio::runtime::Runtime, String> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the runtime: {e}"))
}

/// A tokio runtime on the calling thread alone, for the driver's process (`driver`, `submit`,
/// `local-cluster`) and the executor's: their work is a chain of short steps per frame (read,
/// validate, schedule or hand a task over, write), each of which would otherwise wake another
/// runtime thread with a futex and a context switch; on one thread they follow each other with
/// neither. Blocking work still goes to tokio's blocking pool (the executor's tasks run on its
/// own task threads).
fn single_thread_runtime() -> Result<tokio::runtime::Runtime, String> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the runtime: {e}"))
}

/// The longest time any flag takes: ten years, in seconds. Longer ones could not be added to a
/// clock's reading (and mean "never" anyway).
const MAX_SECONDS: u64 = 10 * 365 * 24 * 3600;

/// A positive, finite number of seconds, at most ten years, as a duration.
fn seconds(secs: f64) -> Result<std::time::Duration, String> {
    if !(secs.is_finite() && secs > 0.0) {
        return Err(format!("{secs} is not a positive number of seconds"));
    }
    if secs > MAX_SECONDS as f64 {
        return Err(format!(
            "{secs} seconds is over the most any flag takes, {MAX_SECONDS} (ten years)"
        ));
    }
    std::time::Duration::try_from_secs_f64(secs).map_err(|e| format!("{secs} seconds: {e}"))
}

/// A whole number of seconds given to `flag`, at most ten years, as a duration.
fn whole_seconds(flag: &str, secs: u64) -> Result<std::time::Duration, String> {
    if secs > MAX_SECONDS {
        return Err(format!(
            "{flag} {secs} is over the most it takes, {MAX_SECONDS} seconds (ten years)"
        ));
    }
    Ok(std::time::Duration::from_secs(secs))
}

fn flush_stdout() {
    use std::io::Write;
    let _ = std::io::stdout().flush();
}

/// Resolves on Ctrl-C or SIGTERM, or, with `watch_stdin`, when standard input reaches its end:
/// a parent that holds the other end of that pipe is gone, even if it was killed with SIGKILL.
async fn stop_requested(watch_stdin: bool) -> &'static str {
    if !watch_stdin {
        terminated().await;
        return "signal received";
    }
    tokio::select! {
        _ = terminated() => "signal received",
        _ = stdin_closed() => "standard input closed (the parent is gone)",
    }
}

/// Resolves when standard input ends or cannot be read. The read runs on a plain thread, which
/// never holds the process (or the runtime's shutdown) up.
async fn stdin_closed() {
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    let spawned = std::thread::Builder::new()
        .name("stdin-watch".into())
        .spawn(move || {
            use std::io::Read;
            let mut stdin = std::io::stdin().lock();
            let mut buf = [0u8; 512];
            loop {
                match stdin.read(&mut buf) {
                    Ok(0) => break,
                    Ok(_) => {}
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                    Err(_) => break,
                }
            }
            let _ = tx.send(());
        });
    if spawned.is_err() {
        // No thread to watch with: never resolve rather than stop at once.
        std::future::pending::<()>().await;
    }
    let _ = rx.await;
}

/// Resolves on Ctrl-C or SIGTERM.
async fn terminated() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        match signal(SignalKind::terminate()) {
            Ok(mut term) => {
                tokio::select! {
                    _ = tokio::signal::ctrl_c() => {}
                    _ = term.recv() => {}
                }
            }
            Err(_) => {
                let _ = tokio::signal::ctrl_c().await;
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn colours_only_on_a_terminal_without_no_color() {
        assert!(colour(true, None));
        assert!(colour(true, Some("".into())));
        assert!(!colour(true, Some("1".into())));
        assert!(!colour(false, None));
    }
}
