//! `spec/16/…`: SPEC §16 (protocol/SPEC.md): why an application waits, as the master's state
//! answer says it (`ApplicationInfo.waitingReason`, revision 2). A master MAY leave the field nil
//! (Spark's does: no field of Spark's wire carries it); when it sets one, the text begins with the
//! phrase of §16's table that binds, and the field is nil while an executor of the application
//! runs. Each case passes against a master that never sets it.

use crate::harness::case::run;
use crate::harness::case::Case;
use crate::harness::case::Target;
use crate::harness::env::Ctx;
use crate::harness::verdict::check;
use crate::harness::verdict::fail;
use crate::harness::verdict::Failure;
use crate::harness::verdict::Level;
use crate::harness::verdict::Outcome;
use crate::kit::master::app;
use crate::kit::master::app_desc;
use crate::kit::master::launch;
use crate::kit::master::report;
use crate::kit::master::settle;
use crate::kit::master::state;
use crate::kit::master::worker;
use crate::kit::master::Need;
use crate::kit::support::waiting_reasons::one_of;
use sparkwire::messages::ApplicationState;
use sparkwire::messages::ExecutorState;
use sparkwire::messages::Version;
use std::time::Duration;

/// The cases of this section, each naming its targets.
pub fn cases(cs: &mut Vec<Case>) {
    cs.push(Case {
        id: "spec/16/reason-phrase".into(),
        level: Level::Must,
        targets: vec![Target::Master],
        timeout: Duration::from_secs(20),
        needs: vec![Need::OwnRegistrations],
        quote: "SPEC §16, \"The text begins with the phrase exactly as the table writes it, \
            followed either by nothing or by `: ` and the details\", and the table's order (\"the \
            first of these that holds\")"
            .into(),
        requirement:
            "cores.max below an executor's cores reads `spark.cores.max reached`; no room \
            reads `no alive worker…`"
                .into(),
        body: run(reason_phrase),
        ..Case::default()
    });
    cs.push(Case {
        id: "spec/16/nil-while-running".into(),
        level: Level::Must,
        targets: vec![Target::Master],
        timeout: Duration::from_secs(20),
        needs: vec![Need::NoOtherApplication],
        quote:
            "SPEC §16, \"An application's reason is nil while one of its executors is steady\", \
            and the table's `executors launched but ending`"
                .into(),
        requirement: "an app reads nil while an executor runs; once all ended FAILED, nil or \
            `executors launched but ending`"
            .into(),
        body: run(nil_while_running),
        ..Case::default()
    });
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
