//! Commands of the `sparkwire` binary.

mod executor;
mod local_cluster;
mod spec;
mod validate;

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
    /// Check a trace (JSON Lines) against the protocol's state machine; exit 1 on violations.
    Validate(validate::ValidateArgs),
    /// Run the reference executor (what a worker launches): register with a driver, run tasks.
    Executor(executor::ExecutorArgs),
    /// Start a master and workers as processes, run a job through them and report: Spark's
    /// local-cluster[N,C,M].
    LocalCluster(local_cluster::LocalClusterArgs),
}

/// Runs the parsed command.
pub fn run(cli: Cli) -> Result<ExitCode, String> {
    match cli.command {
        Command::Spec(cmd) => spec::run(cmd),
        Command::Validate(args) => validate::run(args),
        Command::Executor(args) => executor::run(args),
        Command::LocalCluster(args) => local_cluster::run(args),
    }
}

/// Logs to stderr, filtered by `RUST_LOG` (default: warnings and errors).
fn init_logging() {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .try_init();
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

/// A multi-threaded tokio runtime for the commands that talk to a cluster.
fn runtime() -> Result<tokio::runtime::Runtime, String> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the async runtime: {e}"))
}
