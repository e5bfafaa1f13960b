//! `--target master`, SPEC §16: why an application waits, as the master's state answer says it
//! (`ApplicationInfo.waitingReason`, revision 2). A master MAY leave the field nil (Spark's does:
//! no field of Spark's wire carries it); when it sets one, the text begins with the phrase of
//! §16's table that binds, and the field is nil while an executor of the application runs. Each
//! case passes against a master that never sets it.

use std::time::Duration;

use sparkwire::messages::{ApplicationState, ExecutorState, Version};

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
        "SPEC §16, \"An application's reason is nil while one of its executors is steady\", and the table's \
            `executors launched but ending`: an application with two executors RUNNING reads nil; after one ends \
                FAILED (exit 1) it still reads nil (the other has run since before that end); after that one ends \
                    FAILED too, with none left running, it reads nil or `executors launched but ending`",
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
    let mut w = worker(&ctx, "worker", 2, 4096, Version::V2).await?;
    let (_app_conn, id) = app(&ctx, "app", app_desc(Some(1), 128, Some(2)), Version::V2).await?;
    let first = launch(&ctx, &mut w).await?;
    let second = launch(&ctx, &mut w).await?;
    report(&mut w, &id, first.exec_id, ExecutorState::Running, None, 61).await?;
    report(
        &mut w,
        &id,
        second.exec_id,
        ExecutorState::Running,
        None,
        62,
    )
    .await?;
    // The reports and the state asks travel over different connections: a report is read once
    // the master launched the executor that replaces the one it ended; RUNNING ones, once the
    // state shows them.
    settle(
        &ctx,
        || async {
            let s = state(&ctx).await?;
            Ok(s.active_apps
                .iter()
                .any(|a| a.id == id && a.state == ApplicationState::Running))
        },
        "the application RUNNING",
    )
    .await?;
    let r = reason_of(&ctx, &id).await?;
    check(
        r.is_none(),
        "nil with two executors RUNNING",
        format!("{r:?}"),
    )?;
    report(
        &mut w,
        &id,
        second.exec_id,
        ExecutorState::Failed,
        Some(1),
        63,
    )
    .await?;
    // The master launches another in its place (its cores back, then taken again).
    let third = launch(&ctx, &mut w).await?;
    let r = reason_of(&ctx, &id).await?;
    check(
        r.is_none(),
        "nil after one executor FAILED while another has run since before",
        format!("{r:?}"),
    )?;
    report(
        &mut w,
        &id,
        first.exec_id,
        ExecutorState::Failed,
        Some(1),
        64,
    )
    .await?;
    launch(&ctx, &mut w).await?;
    report(
        &mut w,
        &id,
        third.exec_id,
        ExecutorState::Failed,
        Some(1),
        65,
    )
    .await?;
    launch(&ctx, &mut w).await?;
    let r = reason_of(&ctx, &id).await?;
    check(
        one_of(r.as_deref(), &["executors launched but ending"]),
        "with every executor ended FAILED: nil or a reason beginning `executors launched but ending`",
        format!("{r:?}"),
    )
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
