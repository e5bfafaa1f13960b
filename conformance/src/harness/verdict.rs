//! The ground of the harness: the targets, a requirement's level, how a case fails, and the
//! verdicts it leads to. It imports nothing of the suite, so every other part may import it.

use std::fmt;
use std::time::Duration;

use serde::Serialize;

/// How binding a requirement is (RFC 2119).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum Level {
    /// A MUST (or MUST NOT): a failure fails the run.
    Must,
    /// A SHOULD: a failure gives `non-strict`.
    Should,
}

impl fmt::Display for Level {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Level::Must => "MUST",
            Level::Should => "SHOULD",
        })
    }
}

/// The kind of endpoint a case checks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Target {
    /// A standalone master; the suite plays workers, application clients, driver clients, UIs.
    Master,
    /// A worker; the suite plays its master (and its UI clients).
    Worker,
    /// A driver; the suite plays its master and its executors.
    Driver,
    /// An executor; the suite plays its driver and its worker.
    Executor,
}

impl Target {
    /// Every target, in report order.
    pub const ALL: [Target; 4] = [
        Target::Master,
        Target::Worker,
        Target::Driver,
        Target::Executor,
    ];

    /// The target's name on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Target::Master => "master",
            Target::Worker => "worker",
            Target::Driver => "driver",
            Target::Executor => "executor",
        }
    }

    /// The target named `name`.
    pub fn from_name(name: &str) -> Option<Target> {
        Target::ALL.into_iter().find(|t| t.name() == name)
    }
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Why a case did not pass.
#[derive(Debug, Clone, PartialEq)]
pub enum Failure {
    /// The endpoint did something the requirement forbids.
    Fail {
        /// What the requirement expects.
        expected: String,
        /// What the endpoint did.
        seen: String,
    },
    /// The endpoint said it does not support an optional message.
    Unimplemented(String),
    /// The case could not apply (the reason says why).
    Skipped(String),
}

/// What a case's body returns.
pub type Outcome = Result<(), Failure>;

/// A failure: `expected`, but `seen`.
pub fn fail(expected: impl Into<String>, seen: impl Into<String>) -> Failure {
    Failure::Fail {
        expected: expected.into(),
        seen: seen.into(),
    }
}

/// Fails with `expected`/`seen` unless `cond` holds.
pub fn check(cond: bool, expected: impl Into<String>, seen: impl Into<String>) -> Outcome {
    if cond {
        Ok(())
    } else {
        Err(fail(expected, seen))
    }
}

/// A case's time limit unless its target says otherwise; the runner multiplies it by
/// `--timeout-scale`.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(5);

/// A case's verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Verdict {
    /// The requirement held.
    Pass,
    /// A MUST did not hold.
    Fail,
    /// A SHOULD did not hold.
    NonStrict,
    /// The endpoint does not support the optional message the case needs.
    Unimplemented,
    /// The case did not apply.
    Skipped,
}

impl Verdict {
    /// The verdict's name in reports.
    pub fn name(self) -> &'static str {
        match self {
            Verdict::Pass => "pass",
            Verdict::Fail => "fail",
            Verdict::NonStrict => "non-strict",
            Verdict::Unimplemented => "unimplemented",
            Verdict::Skipped => "skipped",
        }
    }
}
