//! Cases and how they are registered; their levels, outcomes and verdicts are
//! [`crate::harness::verdict`]'s (named here too).

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use crate::harness::env::Ctx;
pub use crate::harness::verdict::{
    check, fail, Failure, Level, Outcome, Target, Verdict, DEFAULT_TIMEOUT,
};

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

/// What a case needs of a master that every case of the run shares: each case declares its
/// needs, which decide whether it runs alone and are made so (or found not to hold) before its
/// body runs (the kit's `master::establish`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Need {
    /// Only what it registers itself, which nothing of another case's can take or be taken by:
    /// workers without cores or memory, applications and drivers no such worker can run. Such a
    /// case runs beside the others; its registrations end when its connections close with it.
    OwnRegistrations,
    /// No application of an earlier case still active: one waiting for cores would take those
    /// of this case's workers before the case's own application. Before the body the suite
    /// waits for the master to finish them (they end with their connections, SPEC §14.2 Z1; on
    /// Spark's wire, which binds no application to a connection, it ends them itself). Such a
    /// case runs alone, so that no other case registers anything meanwhile.
    NoOtherApplication,
    /// A master whose spark.deploy.spreadOut is this, as `--spread-out` says; the case is
    /// skipped against another.
    SpreadsOut(bool),
}

impl Need {
    /// Whether a case with this need may run beside others.
    pub fn sharing(self) -> Sharing {
        match self {
            Need::NoOtherApplication => Sharing::Alone,
            Need::OwnRegistrations | Need::SpreadsOut(_) => Sharing::Parallel,
        }
    }
}

/// One conformance case as a case file declares it: a literal, its header beside its body.
///
/// ```ignore
/// Case {
///     id: "spec/14.2/Z1/finished-app-kill-executors".into(),
///     level: Level::Must,
///     targets: vec![Target::Master],
///     quote: "SPEC §14.2 Z1, \"Naming an unknown or finished application is not a refusal ...\"".into(),
///     requirement: "a KillExecutors naming a finished application is answered false".into(),
///     body: run(|ctx| async move { /* what the suite sends, then expects */ Ok(()) }),
///     ..Case::default()
/// }
/// ```
///
/// The catalogue registers it once for each of its `targets` (a [`Planned`] case each).
#[derive(Clone)]
pub struct Case {
    /// Stable id: the document and section it checks (`handshake/5/2/bad-magic`, `rules/W4`, …).
    pub id: String,
    /// MUST or SHOULD.
    pub level: Level,
    /// The endpoint kinds it checks.
    pub targets: Vec<Target>,
    /// What it needs of a master shared with other cases (master cases only; none by default).
    pub needs: Vec<Need>,
    /// How long the case may take before it fails as timed out (times `--timeout-scale`, plus
    /// three worker timeouts when the master's is known); [`DEFAULT_TIMEOUT`] by default: a
    /// correct endpoint never makes a case wait, most take well under a second.
    pub timeout: Duration,
    /// Whether it may run beside other cases ([`Sharing::Parallel`] by default; a need may
    /// make it run alone).
    pub sharing: Sharing,
    /// The protocol document's own words the case checks, with the section they are from;
    /// rendered into CASES.md beside the requirement (empty: the requirement says it all).
    pub quote: String,
    /// What the case checks, as a sentence.
    pub requirement: String,
    /// The body.
    pub body: Body,
}

impl Default for Case {
    /// A case with no id and a body that reports it unimplemented: the base of a literal's
    /// `..Case::default()`, which gives the default timeout, sharing and no needs.
    fn default() -> Self {
        Case {
            id: String::new(),
            level: Level::Must,
            targets: Vec::new(),
            needs: Vec::new(),
            timeout: DEFAULT_TIMEOUT,
            sharing: Sharing::Parallel,
            quote: String::new(),
            requirement: String::new(),
            body: run(|_| async {
                Err(Failure::Unimplemented("the case declares no body".into()))
            }),
        }
    }
}

impl fmt::Debug for Case {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Case")
            .field("id", &self.id)
            .field("level", &self.level)
            .field("targets", &self.targets)
            .finish()
    }
}

/// A case's body from an async function or closure of the run's context.
pub fn run<F, Fut>(body: F) -> Body
where
    F: Fn(Ctx) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Outcome> + Send + 'static,
{
    Arc::new(move |ctx| Box::pin(body(ctx)))
}

/// A case's body from an async function or closure of the run's context and `with`, a value
/// the body is given a copy of each time it runs (an endpoint's description, say).
pub fn bind<P, F, Fut>(with: &P, body: F) -> Body
where
    P: Clone + Send + Sync + 'static,
    F: Fn(Ctx, P) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Outcome> + Send + 'static,
{
    let with = with.clone();
    Arc::new(move |ctx| Box::pin(body(ctx, with.clone())))
}

/// One case as planned for one of its targets: what the runner runs and the reports name.
#[derive(Clone)]
pub struct Planned {
    /// Its id.
    pub id: String,
    /// The requirement it checks, as a sentence.
    pub requirement: String,
    /// The protocol document's words it checks (empty: the requirement says it all).
    pub quote: String,
    /// MUST or SHOULD.
    pub level: Level,
    /// The endpoint kind it checks here.
    pub target: Target,
    /// Its time limit.
    pub timeout: Duration,
    /// Whether it may run beside other cases.
    pub sharing: Sharing,
    /// The body.
    pub body: Body,
}

impl Planned {
    /// What the case checks as the reports and CASES.md state it: the document's words, then
    /// the requirement (`SPEC §14.2 Z1, "…": after …`), or the requirement alone.
    pub fn statement(&self) -> String {
        match self.quote.is_empty() {
            true => self.requirement.clone(),
            false => format!("{}: {}", self.quote, self.requirement),
        }
    }
}

impl fmt::Debug for Planned {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Planned")
            .field("id", &self.id)
            .field("level", &self.level)
            .field("target", &self.target)
            .finish()
    }
}
