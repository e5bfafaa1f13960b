//! `sparkwire validate TRACE`: checks a trace against the protocol's state machine.

use std::fs::File;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::Args;
use sparkwire::validate::trace::read_pipelined;
use sparkwire::validate::{Config, Validator, Violation};

#[derive(Debug, Args)]
pub struct ValidateArgs {
    /// The trace: JSON Lines or the binary form, as protocol/trace.md describes, told apart by
    /// the first byte (`-` for standard input).
    trace: PathBuf,
    /// Strict order: times never decrease and no message is taken as having crossed another on
    /// the wire.
    #[arg(long)]
    strict_order: bool,
    /// Cpus per task when the trace does not say (Spark's spark.task.cpus).
    #[arg(long, default_value_t = 1)]
    task_cpus: u32,
    /// Spark's spark.worker.timeout, in seconds.
    #[arg(long, default_value_t = 60)]
    worker_timeout: u64,
    /// The trace may end mid-conversation: do not check what a finished conversation owes at its
    /// end (unanswered asks, registrations and launches, ExecutorAdded without its
    /// LaunchExecutor, tasks still running: rules A4, W3, N1-N4).
    #[arg(long)]
    allow_pending: bool,
    /// Rule L1: seconds within which a worker answers LaunchExecutor with an
    /// ExecutorStateChanged (0: not checked).
    #[arg(long, default_value_t = 60)]
    executor_state_within: u64,
    /// Rule L2: seconds within which the master answers RegisterApplication (0: not checked).
    #[arg(long, default_value_t = 60)]
    app_registration_within: u64,
    /// LaunchTask payloads are not sparkwire task descriptions (protocol/SPEC.md §10): count tasks
    /// per executor instead of reading their ids. Not needed for traces from `sparkwire spark
    /// decode|proxy`: their executor connections' opens say `"tasks":"spark"`, which does the same
    /// for those connections (protocol/trace.md).
    #[arg(long)]
    opaque_tasks: bool,
}

/// The outcome of validating a trace.
#[derive(Debug)]
pub struct Outcome {
    /// Events read.
    pub events: u64,
    /// Every violation, in order.
    pub violations: Vec<Violation>,
}

/// Opens the trace at `path` (`-`: standard input).
pub fn open(path: &Path) -> Result<Box<dyn BufRead + Send>, String> {
    if path == Path::new("-") {
        return Ok(Box::new(BufReader::with_capacity(
            1 << 16,
            std::io::stdin(),
        )));
    }
    let file = File::open(path).map_err(|e| format!("cannot open {}: {e}", path.display()))?;
    Ok(Box::new(BufReader::with_capacity(1 << 16, file)))
}

/// Validates the trace at `path`, read on a second thread while this one validates; `Err` when
/// it cannot be read.
pub fn check(path: &Path, config: Config, allow_pending: bool) -> Result<Outcome, String> {
    let input = open(path)?;
    let mut validator = Validator::new(config);
    let mut violations = Vec::new();
    read_pipelined(input, |event| violations.extend(validator.observe(event)))
        .map_err(|e| format!("{}: {e}", path.display()))?;
    if !allow_pending {
        violations.extend(validator.finish());
    }
    Ok(Outcome {
        events: validator.events(),
        violations,
    })
}

/// A bound in seconds as milliseconds; 0 switches the rule off.
fn bound_ms(seconds: u64) -> Option<u64> {
    (seconds > 0).then(|| seconds.saturating_mul(1000))
}

pub fn run(args: ValidateArgs) -> Result<ExitCode, String> {
    let config = Config {
        strict_order: args.strict_order,
        default_task_cpus: args.task_cpus,
        worker_timeout_ms: args.worker_timeout.saturating_mul(1000),
        executor_state_within_ms: bound_ms(args.executor_state_within),
        app_registration_within_ms: bound_ms(args.app_registration_within),
        ..if args.opaque_tasks {
            Config::default()
        } else {
            Config::sparkwire()
        }
    };
    let outcome = check(&args.trace, config, args.allow_pending)?;
    if outcome.events == 0 {
        return Err(format!(
            "{}: no events (an empty trace proves nothing)",
            args.trace.display()
        ));
    }
    let mut out = std::io::stdout().lock();
    let mut per_rule = std::collections::BTreeMap::new();
    for v in &outcome.violations {
        let _ = writeln!(out, "{v}");
        *per_rule.entry(v.rule).or_insert(0u64) += 1;
    }
    if outcome.violations.is_empty() {
        let _ = writeln!(out, "{} events, no violations", outcome.events);
        return Ok(ExitCode::SUCCESS);
    }
    let _ = writeln!(
        out,
        "{} events, {} violation(s):",
        outcome.events,
        outcome.violations.len()
    );
    for (rule, n) in per_rule {
        let _ = writeln!(out, "  {rule}: {n}");
    }
    Ok(ExitCode::from(1))
}
