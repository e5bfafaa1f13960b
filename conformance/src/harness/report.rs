//! Reports: the human one, JSON, and JUnit XML.

use std::fmt::Write as _;
use std::time::Duration;

use quick_junit::{NonSuccessKind, Report, TestCase, TestCaseStatus, TestSuite};
use serde::Serialize;

use crate::harness::runner::CaseResult;
use crate::harness::verdict::Verdict;

/// Counts of each verdict.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Totals {
    /// Passed.
    pub passed: usize,
    /// MUSTs that failed.
    pub failed: usize,
    /// SHOULDs that failed.
    pub non_strict: usize,
    /// Optional messages the endpoint does not support.
    pub unimplemented: usize,
    /// Cases that did not apply.
    pub skipped: usize,
}

impl Totals {
    /// The counts of `results`.
    pub fn of(results: &[CaseResult]) -> Totals {
        let mut t = Totals::default();
        for r in results {
            match r.verdict {
                Verdict::Pass => t.passed += 1,
                Verdict::Fail => t.failed += 1,
                Verdict::NonStrict => t.non_strict += 1,
                Verdict::Unimplemented => t.unimplemented += 1,
                Verdict::Skipped => t.skipped += 1,
            }
        }
        t
    }

    /// The closing line: `N passed, N failed, N non-strict, N skipped` (and unimplemented, if any).
    pub fn line(&self) -> String {
        let mut s = format!(
            "{} passed, {} failed, {} non-strict, {} skipped",
            self.passed, self.failed, self.non_strict, self.skipped
        );
        if self.unimplemented > 0 {
            let _ = write!(s, ", {} unimplemented", self.unimplemented);
        }
        s
    }
}

/// The human report: one line per case, details of every case that did not pass, and the
/// closing line.
pub fn human(target: &str, results: &[CaseResult], wall: Duration, verbose: bool) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "sparkwire-conformance: target {target}, {} cases",
        results.len()
    );
    for r in results {
        let tag = match r.verdict {
            Verdict::Pass => "pass",
            Verdict::Fail => "FAIL",
            Verdict::NonStrict => "non-strict",
            Verdict::Unimplemented => "unimplemented",
            Verdict::Skipped => "skipped",
        };
        let _ = writeln!(out, "{tag:>13}  {} ({} ms)", r.id, r.millis);
        if r.verdict == Verdict::Pass {
            continue;
        }
        let _ = writeln!(out, "               {} {}", r.level, r.requirement);
        if let Some(reason) = &r.reason {
            let _ = writeln!(out, "               reason: {reason}");
        }
        if let (Some(e), Some(s)) = (&r.expected, &r.seen) {
            let _ = writeln!(out, "               expected: {e}");
            let _ = writeln!(out, "               seen:     {s}");
        }
        if verbose || matches!(r.verdict, Verdict::Fail | Verdict::NonStrict) {
            let _ = writeln!(out, "               wire log:");
            for line in &r.wire_log {
                let _ = writeln!(out, "                 {line}");
            }
        }
    }
    let timed_out: Vec<&str> = results
        .iter()
        .filter(|r| r.timed_out)
        .map(|r| r.id.as_str())
        .collect();
    if !timed_out.is_empty() {
        let _ = writeln!(
            out,
            "timed out ({}): {}",
            timed_out.len(),
            timed_out.join(", ")
        );
    }
    let _ = writeln!(out, "wall time {:.1} s", wall.as_secs_f64());
    let _ = writeln!(out, "{}", Totals::of(results).line());
    out
}

/// The JSON report.
#[derive(Debug, Serialize)]
pub struct JsonReport<'a> {
    /// The target.
    pub target: &'a str,
    /// Counts.
    pub totals: Totals,
    /// Seconds the run took.
    pub wall_seconds: f64,
    /// Every case.
    pub cases: &'a [CaseResult],
}

/// The JSON report, pretty-printed.
pub fn json(target: &str, results: &[CaseResult], wall: Duration) -> String {
    let report = JsonReport {
        target,
        totals: Totals::of(results),
        wall_seconds: wall.as_secs_f64(),
        cases: results,
    };
    serde_json::to_string_pretty(&report).unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"))
}

/// The JUnit XML report: one test suite for the target, one test case per case.
pub fn junit(target: &str, results: &[CaseResult], wall: Duration) -> Result<String, String> {
    let mut report = Report::new("sparkwire-conformance");
    let mut suite = TestSuite::new(format!("sparkwire-conformance.{target}"));
    for r in results {
        let mut status = match r.verdict {
            Verdict::Pass => TestCaseStatus::success(),
            Verdict::Fail => {
                let mut s = TestCaseStatus::non_success(NonSuccessKind::Failure);
                s.set_type("MUST");
                s
            }
            Verdict::NonStrict => {
                // A SHOULD that did not hold does not fail the run: reported as skipped with why.
                TestCaseStatus::skipped()
            }
            Verdict::Unimplemented | Verdict::Skipped => TestCaseStatus::skipped(),
        };
        let message = match r.verdict {
            Verdict::Pass => None,
            Verdict::Fail | Verdict::NonStrict => Some(format!(
                "{}: expected {}; seen {}",
                r.verdict.name(),
                r.expected.as_deref().unwrap_or("?"),
                r.seen.as_deref().unwrap_or("?")
            )),
            Verdict::Unimplemented | Verdict::Skipped => Some(format!(
                "{}: {}",
                r.verdict.name(),
                r.reason.as_deref().unwrap_or("")
            )),
        };
        if let Some(m) = message {
            status.set_message(m);
        }
        if !r.wire_log.is_empty() {
            status.set_description(r.wire_log.join("\n"));
        }
        let mut case = TestCase::new(r.id.clone(), status);
        case.set_classname(format!("{target}.{}", r.level));
        case.set_time(Duration::from_millis(r.millis));
        case.set_system_out(format!("{} {}", r.level, r.requirement));
        suite.add_test_case(case);
    }
    suite.set_time(wall);
    report.add_test_suite(suite);
    report.to_string().map_err(|e| e.to_string())
}
