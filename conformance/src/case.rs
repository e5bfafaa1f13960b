//! Cases and how they are registered; their levels, outcomes and verdicts are
//! [`crate::verdict`]'s (named here too).

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use crate::env::Ctx;
pub use crate::verdict::{check, fail, Failure, Level, Outcome, Target, Verdict, DEFAULT_TIMEOUT};

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
