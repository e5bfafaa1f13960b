//! Runs cases, in parallel where they allow it, each with its own timeout and wire log.

use std::sync::Arc;
use std::time::Instant;

use serde::Serialize;
use tokio::sync::Semaphore;
use tokio::task::JoinSet;

use crate::case::{Case, Failure, Level, Sharing, Target, Verdict};
use crate::env::{Ctx, Log, Settings, Wire};

/// What one case gave.
#[derive(Debug, Clone, Serialize)]
pub struct CaseResult {
    /// The case's id.
    pub id: String,
    /// Its requirement.
    pub requirement: String,
    /// MUST or SHOULD.
    pub level: Level,
    /// The target.
    pub target: Target,
    /// The verdict.
    pub verdict: Verdict,
    /// On a failure: what was expected.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expected: Option<String>,
    /// On a failure: what was seen.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub seen: Option<String>,
    /// Why it was skipped or unimplemented.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Milliseconds it took.
    pub millis: u64,
    /// Every frame both ways, decoded (kept for cases that did not pass).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub wire_log: Vec<String>,
}

async fn run_one(settings: Arc<Settings>, case: Case) -> CaseResult {
    let log = Log::for_run(settings.hex, settings.wire, settings.target);
    if settings.wire != Wire::Sparkwire {
        if let Some(why) = crate::targets::sparkwire_only(&case.id) {
            return CaseResult {
                id: case.id,
                requirement: case.requirement,
                level: case.level,
                target: case.target,
                verdict: Verdict::Skipped,
                expected: None,
                seen: None,
                reason: Some(format!("not on Spark's wire: {why}")),
                millis: 0,
                wire_log: Vec::new(),
            };
        }
    }
    let ctx = Ctx {
        settings,
        log: log.clone(),
    };
    // A case waits for the endpoint at most a few times the patience: its own timeout stretches
    // with it, so that a long --patience on a loaded machine never times a correct case out.
    let limit = case.timeout + ctx.settings.patience * 4;
    let start = Instant::now();
    let body = Arc::clone(&case.body);
    // The body runs in its own task, so that a panic in it is a failed case, not a dead suite.
    let handle = tokio::spawn(async move { body(ctx).await });
    let abort = handle.abort_handle();
    let outcome = match tokio::time::timeout(limit, handle).await {
        Ok(Ok(outcome)) => outcome,
        Ok(Err(e)) => Err(Failure::Fail {
            expected: "the case to run to its end".into(),
            seen: format!("the suite's case task failed: {e}"),
        }),
        Err(_) => {
            abort.abort();
            Err(Failure::Fail {
                expected: format!("the case to finish within {} s", limit.as_secs_f64()),
                seen: "the case timed out".into(),
            })
        }
    };
    let millis = u64::try_from(start.elapsed().as_millis()).unwrap_or(u64::MAX);
    let (verdict, expected, seen, reason) = match outcome {
        Ok(()) => (Verdict::Pass, None, None, None),
        Err(Failure::Fail { expected, seen }) => (
            if case.level == Level::Must {
                Verdict::Fail
            } else {
                Verdict::NonStrict
            },
            Some(expected),
            Some(seen),
            None,
        ),
        Err(Failure::Unimplemented(why)) => (Verdict::Unimplemented, None, None, Some(why)),
        Err(Failure::Skipped(why)) => (Verdict::Skipped, None, None, Some(why)),
    };
    let wire_log = if verdict == Verdict::Pass {
        Vec::new()
    } else {
        log.lines()
    };
    CaseResult {
        id: case.id,
        requirement: case.requirement,
        level: case.level,
        target: case.target,
        verdict,
        expected,
        seen,
        reason,
        millis,
        wire_log,
    }
}

/// Runs `cases`: those that allow it `jobs` at a time, then the others one by one. Results come
/// back in the order of `cases`.
pub async fn run(settings: Arc<Settings>, cases: Vec<Case>, jobs: usize) -> Vec<CaseResult> {
    let order: Vec<String> = cases.iter().map(|c| c.id.clone()).collect();
    let (parallel, alone): (Vec<Case>, Vec<Case>) = cases
        .into_iter()
        .partition(|c| c.sharing == Sharing::Parallel);
    let gate = Arc::new(Semaphore::new(jobs.max(1)));
    let mut set = JoinSet::new();
    for case in parallel {
        let gate = Arc::clone(&gate);
        let settings = Arc::clone(&settings);
        set.spawn(async move {
            let _permit = gate.acquire_owned().await;
            run_one(settings, case).await
        });
    }
    let mut results = Vec::new();
    while let Some(r) = set.join_next().await {
        if let Ok(r) = r {
            results.push(r);
        }
    }
    for case in alone {
        results.push(run_one(Arc::clone(&settings), case).await);
    }
    results.sort_by_key(|r| {
        order
            .iter()
            .position(|id| *id == r.id)
            .unwrap_or(usize::MAX)
    });
    results
}
