//! Commands of the `sparkwire` binary.

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
}

/// Runs the parsed command.
pub fn run(cli: Cli) -> Result<ExitCode, String> {
    match cli.command {
        Command::Spec(cmd) => spec::run(cmd),
        Command::Validate(args) => validate::run(args),
    }
}
