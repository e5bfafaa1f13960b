//! sparkwire-conformance: checks a live endpoint of Spark's standalone cluster (a master, worker,
//! driver or executor, in any language) against the sparkwire protocol, case by case, over real
//! TCP, playing the other side of each conversation: the counterpart of h2spec for HTTP/2.
//!
//! Every [`case::Case`] has a stable id tied to the document and section it checks, the
//! requirement sentence, its level (MUST or SHOULD) and a timeout; [`runner::run`] runs them and
//! [`report`] writes the human, JSON and JUnit reports. [`cases()`] lists every case of a target.
//! It uses only sparkwire's public API, as an outside tester would.
//!
//! Four parts: the [`harness`] (cases and their registration, the run's settings, connections,
//! the runner and the reports), the [`kit`] (what a case is written with), the [`mod@cases`] (one
//! folder per protocol document, one file per section) and the [`faults`] the self-test plants;
//! [`documents`] renders CASES.md, COVERAGE.md and SPARK.md.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod cases;
pub mod documents;
pub mod faults;
pub mod harness;
pub mod kit;

pub use case::{Case, Level, Planned, Target, Verdict};
pub use harness::{
    canonical, case, env, health, mp, peer, report, runner, spark_wire, spawn, verdict,
};

/// Every case of `target`, in report order: by id, its numbers read as numbers (`spec/8/…`
/// before `spec/8.1/…` before `spec/14/…`), so that where a case is written does not change
/// where it is reported.
pub fn cases(target: Target) -> Vec<Planned> {
    let mut cases = crate::cases::cases(target);
    cases.sort_by_cached_key(|c| id_order(&c.id));
    cases
}

/// The key [`cases`] sorts ids by: each `/`-separated segment as runs of digits (compared as
/// numbers, before any text) and of other characters.
fn id_order(id: &str) -> Vec<Vec<(u8, u64, String)>> {
    id.split('/')
        .map(|segment| {
            let mut runs: Vec<(u8, u64, String)> = Vec::new();
            for ch in segment.chars() {
                let digit = ch.is_ascii_digit();
                match runs.last_mut() {
                    Some(run) if (run.0 == 0) == digit => run.2.push(ch),
                    _ => runs.push((u8::from(!digit), 0, ch.to_string())),
                }
            }
            for run in &mut runs {
                if run.0 == 0 {
                    run.1 = run.2.parse().unwrap_or(u64::MAX);
                }
            }
            runs
        })
        .collect()
}

/// Every case of every target.
pub fn all_cases() -> Vec<Planned> {
    Target::ALL.into_iter().flat_map(cases).collect()
}
