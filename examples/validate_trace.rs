//! Validating a trace (JSON Lines, `protocol/trace.md`) with the sans-IO validator: each event
//! goes in, violations come out; `finish` reports what the trace left unanswered.
//!
//! Run: `cargo run --example validate_trace [TRACE]` (default: `protocol/traces/legal-flow.jsonl`)

use std::fs::File;
use std::io::BufReader;

use sparkwire::validate::trace::TraceReader;
use sparkwire::validate::{Config, Validator};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let path = std::env::args().nth(1).unwrap_or_else(|| {
        concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/protocol/traces/legal-flow.jsonl"
        )
        .into()
    });
    let mut validator = Validator::new(Config::sparkwire());
    let mut violations = Vec::new();
    for event in TraceReader::new(BufReader::new(File::open(&path)?)) {
        violations.extend(validator.observe(&event?));
    }
    violations.extend(validator.finish());
    for v in &violations {
        println!("{v}");
    }
    println!(
        "{path}: {} events, {} violations",
        validator.events(),
        violations.len()
    );
    if violations.is_empty() {
        Ok(())
    } else {
        Err("the trace breaks the protocol's rules".into())
    }
}
