//! The end-of-trace obligations a worker and an executor owe (protocol/rules.md, End of the
//! trace: N4 and N2), checked by the case's judge ([`crate::env::Judge::settle`]): the case gives
//! the endpoint something it must answer and lets go of the connection at once; the judge
//! listens on it, within the case's time, until the answer came, and fails the case when it
//! never does. The endpoint, which the suite started for the case, is stopped only once the
//! judge stopped listening: stopped earlier, it would close the connection, which excuses it.

use sparkwire::messages::coarse::LaunchTask;
use sparkwire::messages::{CoarseMessage, Version};
use sparkwire::wire::{encode_task, Envelope};

use crate::case::{run, Case, Target};
use crate::env::Ctx;
use crate::kit::{executor, worker};
use crate::verdict::{fail, Level, Outcome};

/// The worker's cases.
pub fn add_worker(cs: &mut Vec<Case>) {
    cs.push(Case {
        id: "rules/N4/launch-answered-by-the-end".into(),
        level: Level::Must,
        targets: vec![Target::Worker],
        requirement: "rules.md N4, \"Every LaunchExecutor on a worker \
        connection still open at the end of the trace has been answered with an ExecutorStateChanged for that \
            executor\": the suite, as the worker's master, sends a LaunchExecutor and lets go of the connection at \
                once; before closing it the suite's judge listens, within the case's time, for the worker's \
                    ExecutorStateChanged".into(),
        body: run(rules_n4_launch_answered_by_the_end),
        ..Case::default()
    });
}

/// The executor's cases.
pub fn add_executor(cs: &mut Vec<Case>) {
    cs.push(Case {
        id: "rules/N2/task-ended-by-the-end".into(),
        level: Level::Must,
        targets: vec![Target::Executor],
        requirement: "rules.md N2, \"Every task launched on an executor has its \
        final StatusUpdate (FINISHED, FAILED, KILLED or LOST) by the end of the trace, unless the executor was lost \
            first\": the suite, as the executor's driver, launches a short task and lets go of the connection at \
                once; before closing it the suite's judge listens, within the case's time, for the task's final \
                    StatusUpdate".into(),
        body: run(rules_n2_task_ended_by_the_end),
        ..Case::default()
    });
}

async fn rules_n4_launch_answered_by_the_end(ctx: Ctx) -> Outcome {
    judged(&ctx)?;
    let mut w = worker::registered(&ctx, &[Version::V1, Version::V2]).await?;
    let launch = worker::launch_msg(
        &w,
        "app-20250101120000-0001",
        0,
        &worker::allowed_exec(),
        &["20"],
    );
    w.conn.send(&Envelope::Send(launch)).await?;
    let worker::Registered { mut run, conn, .. } = w;
    drop(conn);
    ctx.log.judge().settled().await;
    run.stop(std::time::Duration::from_secs(2)).await;
    Ok(())
}

async fn rules_n2_task_ended_by_the_end(ctx: Ctx) -> Outcome {
    judged(&ctx)?;
    let mut e = executor::registered(&ctx, &[Version::V1, Version::V2], 128).await?;
    executor::launched(&ctx, &mut e).await?;
    let t = executor::task(0, "sum-squares", &[0, 1000], 1);
    let data = encode_task(&t).map_err(|er| fail("a task the suite can encode", er.to_string()))?;
    e.conn
        .send(&Envelope::Send(CoarseMessage::LaunchTask(LaunchTask::new(
            data.into(),
        ))))
        .await?;
    let executor::Registered { run, conn, .. } = e;
    drop(conn);
    ctx.log.judge().settled().await;
    drop(run);
    Ok(())
}

/// The case's requirement is checked by its judge, which is off on Spark's wire: there the case
/// is skipped.
fn judged(ctx: &Ctx) -> Outcome {
    match ctx.log.wire() {
        crate::env::Wire::Sparkwire => Ok(()),
        crate::env::Wire::Spark(_) => Err(crate::peer::not_on_spark_wire(
            "the judge, which checks what a finished conversation owes, is off there",
        )),
    }
}
