//! `sparkwire spark proxy`.

use std::process::ExitCode;

use clap::Args;

#[derive(Debug, Args)]
pub struct ProxyArgs {
    /// Address to listen on.
    #[arg(long)]
    listen: String,
    /// The Spark process to forward to.
    #[arg(long)]
    upstream: String,
}

pub fn run(args: ProxyArgs) -> Result<ExitCode, String> {
    Err(format!(
        "proxy {} → {}: not built yet",
        args.listen, args.upstream
    ))
}
