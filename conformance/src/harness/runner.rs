//! Runs cases, in parallel where they allow it, each with its own timeout and wire log.

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::Serialize;
use tokio::sync::Semaphore;
use tokio::task::JoinSet;

use crate::harness::case::{Planned, Sharing};
use crate::harness::env::{Ctx, Log, Settings, Wire};
use crate::harness::verdict::{Failure, Level, Target, Verdict, DEFAULT_TIMEOUT};

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
    /// Whether the case was cut short by its time limit or by the run's deadline (it then
    /// failed).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub timed_out: bool,
    /// When the case broke the protocol on purpose: why, and so that the endpoint's frames after
    /// that were judged only by route, kind, version and strict decoding (none: the whole
    /// conversation was judged, or the judge was off).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub judged_partly: Option<String>,
}

impl CaseResult {
    /// A result of `case` without a body run: `verdict` for `reason`; a failure expected
    /// `expected`, and `timed_out` says whether the run's deadline cut it.
    fn without_run(
        case: Planned,
        verdict: Verdict,
        reason: String,
        expected: &str,
        timed_out: bool,
    ) -> CaseResult {
        let failed = verdict == Verdict::Fail;
        let requirement = case.statement();
        CaseResult {
            id: case.id,
            requirement,
            level: case.level,
            target: case.target,
            verdict,
            expected: failed.then(|| expected.to_string()),
            seen: failed.then(|| reason.clone()),
            reason: (!failed).then_some(reason),
            millis: 0,
            wire_log: Vec::new(),
            timed_out: failed && timed_out,
            judged_partly: None,
        }
    }
}

/// What every frame of the endpoint must be, when the case's judge found one that was not.
const JUDGED: &str = "every frame the endpoint sends to keep protocol/rules.md (routes, kinds, \
    asks, the conversation's rules, the end-of-trace obligations N1–N4) and to decode strictly \
    (SPEC §11)";

async fn run_one(settings: Arc<Settings>, case: Planned, deadline: Instant) -> CaseResult {
    let log = Log::for_run(&settings);
    if settings.wire != Wire::Sparkwire {
        if let Some(why) = crate::cases::sparkwire_only(&case.id) {
            return CaseResult::without_run(
                case,
                Verdict::Skipped,
                format!("not on Spark's wire: {why}"),
                "",
                false,
            );
        }
    }
    let left = deadline.saturating_duration_since(Instant::now());
    if left.is_zero() {
        return CaseResult::without_run(
            case,
            Verdict::Fail,
            format!(
                "not run: the run's deadline ({} s, --deadline) passed first",
                settings.run_deadline.as_secs_f64()
            ),
            "the case to run before the run's deadline",
            true,
        );
    }
    // An endpoint known to be mute answers no case: those not started yet are not run.
    if let Some(why) = settings.health.mute() {
        return CaseResult::without_run(
            case,
            Verdict::Fail,
            format!("not run: {why}"),
            "an endpoint that answers",
            false,
        );
    }
    // A case's own time limit, stretched by --timeout-scale (and by three worker timeouts when
    // the master's is known: the heartbeat flows wait for it), never past the run's deadline.
    let own = case.timeout.mul_f64(settings.timeout_scale)
        + settings.worker_timeout.map_or(Duration::ZERO, |w| w * 3);
    let limit = own.min(left);
    let judge = log.judge().clone();
    let settings_health = Arc::clone(&settings.health);
    let ctx = Ctx {
        settings,
        log: log.clone(),
    };
    let start = Instant::now();
    // The judge listens on what the case let go of for nine tenths of its time at most, so that
    // a case that waits for it still ends within its limit.
    judge.set_limit(start + limit.mul_f64(0.9));
    let body = Arc::clone(&case.body);
    // The body runs in its own task, so that a panic in it is a failed case, not a dead suite.
    let handle = tokio::spawn(async move { body(ctx).await });
    let abort = handle.abort_handle();
    let mut timed_out = false;
    let outcome = match tokio::time::timeout(limit, handle).await {
        Ok(Ok(outcome)) => outcome,
        Ok(Err(e)) => Err(Failure::Fail {
            expected: "the case to run to its end".into(),
            seen: format!("the suite's case task failed: {e}"),
        }),
        Err(_) => {
            abort.abort();
            timed_out = true;
            Err(Failure::Fail {
                expected: format!("the case to finish within {:.1} s", limit.as_secs_f64()),
                seen: if limit < own {
                    "the case was still running at the run's deadline (--deadline)".into()
                } else {
                    format!(
                        "the case timed out (its limit, {:.1} s, times --timeout-scale)",
                        case.timeout.as_secs_f64()
                    )
                },
            })
        }
    };
    // The judge's end-of-trace obligations (rules A4, W3, N1–N4), where the conversation
    // finished: the case's body ended well. The judge first listens, within the case's limit, on
    // the connections the case let go of while the endpoint still owed an answer on them. A case
    // that stopped early (it failed, timed out or was skipped) is not blamed for what was still
    // owed.
    if outcome.is_ok() {
        judge.settled().await;
        judge.finish();
    } else {
        judge.abandon();
    }
    let findings = judge.findings();
    let judged_partly = judge.tainted();
    let millis = u64::try_from(start.elapsed().as_millis()).unwrap_or(u64::MAX);
    let (mut verdict, mut expected, mut seen, mut reason) = match outcome {
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
    // What the run had learnt of the endpoint when the case failed (it stopped waiting then).
    if matches!(verdict, Verdict::Fail | Verdict::NonStrict) {
        if let (Some(s), Some(why)) = (seen.as_mut(), settings_health.known()) {
            s.push_str(&format!(" (the suite stopped waiting: {why})"));
        }
    }
    // A frame that breaks the protocol fails the case it appears in, whatever the case's own
    // verdict: the rules are MUSTs.
    if !findings.is_empty() {
        let found = findings.join("; ");
        match (&mut expected, &mut seen) {
            (Some(e), Some(s)) if verdict == Verdict::Fail => {
                e.push_str(&format!("; and {JUDGED}"));
                s.push_str(&format!("; and the validator found: {found}"));
            }
            _ => {
                expected = Some(JUDGED.to_string());
                seen = Some(found);
                reason = None;
            }
        }
        verdict = Verdict::Fail;
    }
    let wire_log = if verdict == Verdict::Pass {
        Vec::new()
    } else {
        log.lines()
    };
    let requirement = case.statement();
    CaseResult {
        id: case.id,
        requirement,
        level: case.level,
        target: case.target,
        verdict,
        expected,
        seen,
        reason,
        millis,
        wire_log,
        timed_out,
        judged_partly,
    }
}

/// Runs `cases`: those that allow it `jobs` at a time, then the others one by one, each within its
/// time limit times `--timeout-scale` and all within the run's deadline (`--deadline`: a case
/// still running then, or not started, fails as timed out). Results come back in the order of
/// `cases`.
pub async fn run(settings: Arc<Settings>, cases: Vec<Planned>, jobs: usize) -> Vec<CaseResult> {
    let order: Vec<String> = cases.iter().map(|c| c.id.clone()).collect();
    let (parallel, alone): (Vec<Planned>, Vec<Planned>) = cases
        .into_iter()
        .partition(|c| c.sharing == Sharing::Parallel);
    let deadline = Instant::now() + settings.run_deadline;
    // A shared endpoint is watched beside the cases: once it is known to be mute the cases not
    // started are not run, and those waiting stop (crate::harness::health).
    let watcher = crate::cases::probes(&settings).map(|probes| {
        let limit = DEFAULT_TIMEOUT.mul_f64(settings.timeout_scale);
        tokio::spawn(crate::harness::health::watch(
            Arc::clone(&settings.health),
            Arc::new(probes),
            limit,
        ))
    });
    let gate = Arc::new(Semaphore::new(jobs.max(1)));
    let mut set = JoinSet::new();
    for case in parallel {
        let gate = Arc::clone(&gate);
        let settings = Arc::clone(&settings);
        set.spawn(async move {
            let _permit = gate.acquire_owned().await;
            run_one(settings, case, deadline).await
        });
    }
    let mut results = Vec::new();
    while let Some(r) = set.join_next().await {
        if let Ok(r) = r {
            results.push(r);
        }
    }
    for case in alone {
        results.push(run_one(Arc::clone(&settings), case, deadline).await);
    }
    if let Some(w) = watcher {
        w.abort();
    }
    results.sort_by_key(|r| {
        order
            .iter()
            .position(|id| *id == r.id)
            .unwrap_or(usize::MAX)
    });
    results
}
