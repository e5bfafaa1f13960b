//! `sparkwire sim`: the deterministic simulator (`node::sim::search`): run many seeds and report
//! the first that breaks an invariant, or replay one seed and write its trace.

use std::process::ExitCode;
use std::time::Instant;

use clap::Args;
use sparkwire::node::plant::Plant;
use sparkwire::node::sim::search::shrink::{kind, shrink};
use sparkwire::node::sim::search::{run_seed, run_with, FaultKind, Knobs, Scenario};
use sparkwire::node::sim::store::Semantics;

/// Options of `sparkwire sim`.
#[derive(Debug, Args)]
pub struct SimArgs {
    /// How many seeds to run (from --first).
    #[arg(long, conflicts_with = "seed")]
    seeds: Option<u64>,
    /// The first seed of --seeds.
    #[arg(long, default_value_t = 0)]
    first: u64,
    /// Run this one seed.
    #[arg(long)]
    seed: Option<u64>,
    /// Replay the scenario in this file (a regression case) instead of a seed.
    #[arg(long, conflicts_with_all = ["seed", "seeds"])]
    case: Option<std::path::PathBuf>,
    /// Write the run's trace to this file (with --seed or --case).
    #[arg(long)]
    trace: Option<std::path::PathBuf>,
    /// Most masters, workers and drivers: M,W,D (default 3,3,2).
    #[arg(long, default_value = "3,3,2")]
    nodes: String,
    /// The kinds of fault drawn, comma-separated (delay, reset, partition, pause, kill,
    /// session, fill), or `none`; default all.
    #[arg(long)]
    faults: Option<String>,
    /// Most faults a seed draws.
    #[arg(long, default_value_t = 8)]
    max_faults: usize,
    /// The recovery stores drawn: file, zookeeper or both.
    #[arg(long, default_value = "both")]
    store: String,
    /// On a failure, shrink its scenario and write it to this file (a regression case).
    #[arg(long)]
    shrink_to: Option<std::path::PathBuf>,
    /// How long a dial waits for a paused or partitioned peer before it fails, ms (as TCP's
    /// connect and handshake would); 0 refuses it at once, the model before.
    #[arg(long, default_value_t = 30_000)]
    dial_timeout_ms: u64,
    /// Run every seed of --seeds even after failures, and end with how many broke each
    /// invariant (and each rule of `protocol`), with the first seed of each (exit 1 if any did).
    #[arg(long, conflicts_with = "shrink_to")]
    keep_going: bool,
}

/// Writes a line to standard output. A reader that has gone (`sparkwire sim ... | head -1`)
/// ends the output, not the process: `println!` would panic on the broken pipe. The exit code
/// still says whether every seed kept every invariant.
macro_rules! say {
    ($($arg:tt)*) => {
        say(&format!($($arg)*))
    };
}

fn say(line: &str) {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    if let Err(e) = writeln!(out, "{line}").and_then(|()| out.flush()) {
        if e.kind() != std::io::ErrorKind::BrokenPipe {
            eprintln!("sparkwire sim: cannot write to standard output: {e}");
        }
    }
}

fn knobs(args: &SimArgs) -> Result<Knobs, String> {
    let n: Vec<usize> = args
        .nodes
        .split(',')
        .map(|x| x.trim().parse::<usize>())
        .collect::<Result<_, _>>()
        .map_err(|_| format!("--nodes: M,W,D expected, not {}", args.nodes))?;
    let [m, w, d] = n[..] else {
        return Err(format!("--nodes: M,W,D expected, not {}", args.nodes));
    };
    if m == 0 || w == 0 || d == 0 {
        return Err("--nodes: at least one of each".into());
    }
    let faults = match args.faults.as_deref() {
        None => FaultKind::ALL.to_vec(),
        Some("none") => Vec::new(),
        Some(list) => list
            .split(',')
            .map(|k| {
                FaultKind::from_name(k.trim()).ok_or_else(|| format!("--faults: no fault {k}"))
            })
            .collect::<Result<_, _>>()?,
    };
    let stores = match args.store.as_str() {
        "file" => vec![Semantics::File],
        "zookeeper" => vec![Semantics::ZooKeeper],
        "both" => vec![Semantics::File, Semantics::ZooKeeper],
        other => return Err(format!("--store: file, zookeeper or both, not {other}")),
    };
    Ok(Knobs {
        max_masters: m,
        max_workers: w,
        max_drivers: d,
        max_faults: args.max_faults,
        faults,
        stores,
        dial_timeout_ms: args.dial_timeout_ms,
    })
}

/// Runs the command: exit 0 when every seed kept every invariant, 1 on the first that did not.
pub fn run_command(args: SimArgs) -> Result<ExitCode, String> {
    let knobs = knobs(&args)?;
    let one = match (&args.case, args.seed) {
        (Some(path), _) => {
            let text = std::fs::read_to_string(path)
                .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
            let scenario = Scenario::parse(&text)?;
            if scenario.plant != Plant::None {
                // node::plant: a planted bug is reached by tests only, never by the binary.
                return Err(format!(
                    "{}: planted bugs (plant {}) are replayed by `cargo test` only",
                    path.display(),
                    scenario.plant.name()
                ));
            }
            Some(scenario)
        }
        (None, Some(seed)) => Some(Scenario::draw(seed, &knobs)),
        (None, None) => None,
    };
    if let Some(scenario) = one {
        let dial_timeout = std::time::Duration::from_millis(knobs.dial_timeout_ms);
        let outcome = run_with(&scenario, args.trace.is_some(), dial_timeout);
        if let (Some(path), Some(trace)) = (&args.trace, &outcome.trace) {
            std::fs::write(path, trace)
                .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
        }
        return Ok(report(&scenario, outcome.failure.as_ref(), &args));
    }
    let n = args.seeds.unwrap_or(1000);
    let start = Instant::now();
    // With --keep-going: per kind of failure (the invariant, and a protocol failure's rule),
    // how many seeds and the first.
    let mut tally: std::collections::BTreeMap<String, (u64, u64)> = Default::default();
    for seed in args.first..args.first.saturating_add(n) {
        let outcome = run_seed(seed, &knobs, false);
        if let Some(f) = &outcome.failure {
            if args.keep_going {
                tally.entry(kind(f)).or_insert((0, seed)).0 += 1;
                continue;
            }
            let scenario = Scenario::draw(seed, &knobs);
            return Ok(report(&scenario, Some(f), &args));
        }
    }
    let secs = start.elapsed().as_secs_f64().max(1e-9);
    if !tally.is_empty() {
        let failed: u64 = tally.values().map(|(k, _)| k).sum();
        say!(
            "{failed} of {n} seeds from {} broke an invariant in {secs:.1} s:",
            args.first
        );
        for (kind, (count, first)) in &tally {
            say!("  {count:>7}  {kind}  (first: seed {first})");
        }
        return Ok(ExitCode::FAILURE);
    }
    say!(
        "{n} seeds from {} kept every invariant in {secs:.1} s ({:.0} seeds/s)",
        args.first,
        n as f64 / secs
    );
    Ok(ExitCode::SUCCESS)
}

fn report(
    scenario: &Scenario,
    failure: Option<&sparkwire::node::sim::search::Failure>,
    args: &SimArgs,
) -> ExitCode {
    let Some(f) = failure else {
        say!("seed {} kept every invariant", scenario.seed);
        return ExitCode::SUCCESS;
    };
    say!("seed {} broke {}", scenario.seed, f);
    say!(
        "replay: sparkwire sim --seed {} --trace trace.txt",
        scenario.seed
    );
    if let Some(path) = &args.shrink_to {
        let (small, runs) = shrink(scenario, f.invariant, 2_000);
        let text = format!("# expect {}\n{}", f.invariant, small.to_text());
        match std::fs::write(path, &text) {
            Ok(()) => say!(
                "shrunk in {runs} runs to {} fault(s), written to {}",
                small.faults.len(),
                path.display()
            ),
            Err(e) => eprintln!("cannot write {}: {e}", path.display()),
        }
    }
    ExitCode::FAILURE
}
