//! `--target master`, SPEC §16: why an application waits, as the master's state answer says it
//! (`ApplicationInfo.waitingReason`, revision 2). A master MAY leave the field nil (Spark's does:
//! no field of Spark's wire carries it); when it sets one, the text begins with the phrase of
//! §16's table that binds, and the field is nil while an executor of the application runs. Each
//! case passes against a master that never sets it.

use std::time::Duration;

use sparkwire::messages::{ExecutorState, Version};

use crate::case::Cases;
use crate::env::Ctx;
use crate::kit::master::{app, app_desc, flow, launch, report, settle, state, worker, Need};
use crate::verdict::{check, fail, Failure, Level, Outcome};

/// The phrases of SPEC §16's table, in its order.
pub const PHRASES: [&str; 7] = [
    "executors launched but ending",
    "executor limit reached",
    "spark.cores.max reached",
    "no alive worker",
    "no worker of its release has room",
    "cores held by drivers",
    "no alive worker has room",
];

/// The phrase a waiting reason begins with (followed by nothing or by `: `), if it is one of
/// §16's; the longest that fits (`no alive worker has room` over `no alive worker`).
pub fn phrase_of(text: &str) -> Option<&'static str> {
    PHRASES
        .iter()
        .filter(|p| {
            text.strip_prefix(**p)
                .is_some_and(|rest| rest.is_empty() || rest.starts_with(": "))
        })
        .max_by_key(|p| p.len())
        .copied()
}

/// Every case of SPEC §16 for the master, added to `cs`.
pub fn add(cs: &mut Cases) {
    cs.timeout(Duration::from_secs(20));
    flow(
        cs,
        &[Need::OwnRegistrations],
        "spec/16/reason-phrase",
        Level::Must,
        "SPEC §16, \"The text begins with the phrase exactly as the table writes it, followed either by nothing \
            or by `: ` and the details\", and the table's order (\"the first of these that holds\"): an application \
                whose maxCores (1) is below its executor's cores (2) reads nil or `spark.cores.max reached`; one \
                    whose executor takes more memory than any worker has (2^31 - 1 MiB) reads nil, `no alive \
                        worker` or `no alive worker has room`",
        reason_phrase,
    );
    flow(
        cs,
        &[Need::NoOtherApplication],
        "spec/16/nil-while-running",
        Level::Must,
        "SPEC §16, \"An application's reason is nil while one of its executors is `RUNNING`\", and the table's \
            `executors launched but ending`: after the application's only executor ends FAILED (exit 1) its reason \
                reads nil or `executors launched but ending`; once the executor launched next reports RUNNING it \
                    reads nil",
        nil_while_running,
    );
}

/// The waiting reason of application `id` in the master's state.
async fn reason_of(ctx: &Ctx, id: &str) -> Result<Option<String>, Failure> {
    let s = state(ctx).await?;
    s.active_apps
        .iter()
        .find(|a| a.id == id)
        .map(|a| a.waiting_reason.clone())
        .ok_or_else(|| fail(format!("{id} among the active applications"), "absent"))
}

fn one_of(reason: Option<&str>, allowed: &[&str]) -> bool {
    reason.is_none_or(|r| phrase_of(r).is_some_and(|p| allowed.contains(&p)))
}

async fn reason_phrase(ctx: Ctx) -> Outcome {
    let (_capped, capped) = app(&ctx, "app", app_desc(Some(2), 64, Some(1)), Version::V2).await?;
    let (_huge, huge) = app(&ctx, "app", app_desc(Some(1), i32::MAX, None), Version::V2).await?;
    let r = reason_of(&ctx, &capped).await?;
    check(
        one_of(r.as_deref(), &["spark.cores.max reached"]),
        "nil or a reason beginning `spark.cores.max reached`",
        format!("{r:?}"),
    )?;
    let r = reason_of(&ctx, &huge).await?;
    check(
        one_of(
            r.as_deref(),
            &["no alive worker", "no alive worker has room"],
        ),
        "nil or a reason beginning `no alive worker` or `no alive worker has room`",
        format!("{r:?}"),
    )
}

async fn nil_while_running(ctx: Ctx) -> Outcome {
    let mut w = worker(&ctx, "worker", 1, 4096, Version::V2).await?;
    let (_app_conn, id) = app(&ctx, "app", app_desc(Some(1), 128, Some(1)), Version::V2).await?;
    let first = launch(&ctx, &mut w).await?;
    report(
        &mut w,
        &id,
        first.exec_id,
        ExecutorState::Failed,
        Some(1),
        61,
    )
    .await?;
    let next = launch(&ctx, &mut w).await?;
    let r = reason_of(&ctx, &id).await?;
    check(
        one_of(r.as_deref(), &["executors launched but ending"]),
        "after a FAILED executor: nil or a reason beginning `executors launched but ending`",
        format!("{r:?}"),
    )?;
    report(&mut w, &id, next.exec_id, ExecutorState::Running, None, 62).await?;
    // The report and the state ask travel over different connections: wait for the master to
    // have read the report.
    settle(
        &ctx,
        || async { Ok(reason_of(&ctx, &id).await?.is_none()) },
        "a nil waitingReason once an executor of the application is RUNNING",
    )
    .await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reason_is_told_by_its_longest_phrase_followed_by_nothing_or_a_colon() {
        assert_eq!(phrase_of("no alive worker"), Some("no alive worker"));
        assert_eq!(
            phrase_of("no alive worker has room: an executor takes 1 core"),
            Some("no alive worker has room")
        );
        assert_eq!(phrase_of("no alive workers"), None);
        assert_eq!(phrase_of("waiting for resources"), None);
        assert!(one_of(None, &["no alive worker"]));
        assert!(!one_of(
            Some("spark.cores.max reached"),
            &["no alive worker"]
        ));
    }
}
