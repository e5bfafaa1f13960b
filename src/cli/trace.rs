//! `sparkwire trace convert IN OUT`: rewrites a trace in the other form (protocol/trace.md).

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Subcommand};
use sparkwire::validate::trace::{AnyTraceReader, TraceFormat, TraceWriter};

#[derive(Debug, Subcommand)]
pub enum TraceCommand {
    /// Convert a trace between JSON Lines and the binary form; the input's form is told from its
    /// first byte, the output's from --format or else OUT's extension (.swtrace: binary).
    Convert(ConvertArgs),
}

#[derive(Debug, Args)]
pub struct ConvertArgs {
    /// The trace to read (`-` for standard input).
    input: PathBuf,
    /// The trace to write (`-` for standard output).
    output: PathBuf,
    /// The output's form: `json` (JSON Lines) or `binary`.
    #[arg(long, value_parser = parse_format)]
    format: Option<TraceFormat>,
}

fn parse_format(name: &str) -> Result<TraceFormat, String> {
    TraceFormat::from_name(name).ok_or_else(|| format!("{name:?}: expected json or binary"))
}

pub fn run(cmd: TraceCommand) -> Result<ExitCode, String> {
    match cmd {
        TraceCommand::Convert(args) => convert(args),
    }
}

fn convert(args: ConvertArgs) -> Result<ExitCode, String> {
    let format = args
        .format
        .unwrap_or_else(|| TraceFormat::for_path(&args.output));
    let input = super::validate::open(&args.input)?;
    let out: Box<dyn Write> = if args.output == std::path::Path::new("-") {
        Box::new(std::io::stdout().lock())
    } else {
        let file = File::create(&args.output)
            .map_err(|e| format!("cannot create {}: {e}", args.output.display()))?;
        Box::new(file)
    };
    let mut writer = TraceWriter::with_format(BufWriter::with_capacity(1 << 16, out), format);
    let written = |e: std::io::Error| format!("cannot write {}: {e}", args.output.display());
    let mut events = 0u64;
    for event in AnyTraceReader::new(input) {
        let event = event.map_err(|e| format!("{}: {e}", args.input.display()))?;
        writer.write(&event).map_err(written)?;
        events += 1;
    }
    writer.into_inner().map_err(written)?;
    eprintln!("{events} events written to {}", args.output.display());
    Ok(ExitCode::SUCCESS)
}
