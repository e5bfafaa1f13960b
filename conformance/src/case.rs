//! Cases, their levels and outcomes, and the verdicts they lead to.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use serde::Serialize;

use crate::env::Ctx;

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

/// A case's body.
pub type Body = Arc<dyn Fn(Ctx) -> Pin<Box<dyn Future<Output = Outcome> + Send>> + Send + Sync>;

/// Whether a case may run beside others.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sharing {
    /// The case touches no state other cases could see (handshakes, framing, routes).
    Parallel,
    /// The case relies on being alone with the endpoint (it registers workers with capacity and
    /// applications on a shared master, say); such cases run one at a time, after the others.
    Alone,
}

/// One conformance case.
#[derive(Clone)]
pub struct Case {
    /// Stable id: the document and section it checks (`handshake/5/2/bad-magic`, `rules/W4`, …).
    pub id: String,
    /// The requirement it checks, as a sentence.
    pub requirement: String,
    /// MUST or SHOULD.
    pub level: Level,
    /// The endpoint kind it checks.
    pub target: Target,
    /// How long the case may take before it fails as timed out (times `--timeout-scale`, plus
    /// three worker timeouts when the master's is known).
    pub timeout: Duration,
    /// Whether it may run beside other cases.
    pub sharing: Sharing,
    /// The body.
    pub body: Body,
}

impl fmt::Debug for Case {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Case")
            .field("id", &self.id)
            .field("level", &self.level)
            .field("target", &self.target)
            .finish()
    }
}

/// A case's time limit unless its target says otherwise; the runner multiplies it by
/// `--timeout-scale`.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(5);

/// Collects the cases of one target.
pub struct Cases {
    target: Target,
    timeout: Duration,
    sharing: Sharing,
    /// The cases so far.
    pub list: Vec<Case>,
}

impl Cases {
    /// An empty list for `target`; cases get a short time limit, [`DEFAULT_TIMEOUT`] (a
    /// correct endpoint never makes a case wait: most take well under a second), and run in
    /// parallel unless told.
    pub fn new(target: Target) -> Self {
        Cases {
            target,
            timeout: DEFAULT_TIMEOUT,
            sharing: Sharing::Parallel,
            list: Vec::new(),
        }
    }

    /// Cases added from now on run alone (or in parallel).
    pub fn sharing(&mut self, sharing: Sharing) -> &mut Self {
        self.sharing = sharing;
        self
    }

    /// Cases added from now on time out after `timeout`.
    pub fn timeout(&mut self, timeout: Duration) -> &mut Self {
        self.timeout = timeout;
        self
    }

    /// Adds a case.
    pub fn add<F, Fut>(
        &mut self,
        id: impl Into<String>,
        level: Level,
        requirement: impl Into<String>,
        body: F,
    ) where
        F: Fn(Ctx) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Outcome> + Send + 'static,
    {
        let body: Body = Arc::new(move |ctx| Box::pin(body(ctx)));
        self.list.push(Case {
            id: id.into(),
            requirement: requirement.into(),
            level,
            target: self.target,
            timeout: self.timeout,
            sharing: self.sharing,
            body,
        });
    }
}

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
