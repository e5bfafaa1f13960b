//! SPEC §10, serialized tasks: what an executor reports of a task (`StatusUpdate`'s data, one
//! final update) and how a driver fills a `TaskDescription` (its name, stage attempt and cpus).
//! One function per case; each cites the sentence it checks.

use std::time::Duration;

use sparkwire::messages::coarse::*;
use sparkwire::messages::{CoarseMessage, TaskState, Version};
use sparkwire::wire::{Envelope, Reply};

use crate::case::{run, Case, Target};
use crate::env::Ctx;
use crate::kit::common::wait;
use crate::kit::executor::{launch, launched, registered, task};
use crate::verdict::{check, Level, Outcome};

type C = CoarseMessage;

/// The executor's cases of this file, added to `cs`.
pub fn add_executor(cs: &mut Vec<Case>) {
    cs.push(Case {
        id: "spec/10/running-data-empty".into(),
        level: Level::Must,
        targets: vec![Target::Executor],
        requirement: "SPEC §10, \"`StatusUpdate.data` carries the task's result: … for `LAUNCHING` and `RUNNING`, empty `bin`\": \
            every LAUNCHING or RUNNING StatusUpdate of a task has empty data".into(),
        body: run(running_data_empty),
        ..Case::default()
    });
    cs.push(Case {
        id: "spec/10/one-final-update".into(),
        level: Level::Must,
        targets: vec![Target::Executor],
        requirement: "SPEC §10, \"An executor sends `StatusUpdate` `RUNNING` before a task can end, then exactly one of \
            `FINISHED`, `FAILED` or `KILLED`\": a task that finishes and one that fails each get one final \
                StatusUpdate, and no second one follows within the quiet time".into(),
        body: run(one_final_update),
        ..Case::default()
    });
}

/// The driver's cases of this file, added to `cs`.
pub fn add_driver(cs: &mut Vec<Case>) {
    cs.push(Case {
        id: "spec/10/task-fields".into(),
        level: Level::Must,
        targets: vec![Target::Driver],
        requirement: "SPEC §10, the driver fills `TaskDescription` as Spark does: \"`name` `task 3.1 in stage 0.0 (TID 7)`, … \
            `stageAttemptId` 0, … `cpus` the driver's `spark.task.cpus`\", and \"The driver's `SparkAppConfig` \
                carries … `spark.task.cpus`\": a task and its retry are named `task INDEX.ATTEMPT in stage STAGE.0 \
                    (TID TASKID)` from their own fields, with stageAttemptId 0 and cpus the spark.task.cpus the \
                        driver's SparkAppConfig gives".into(),
        body: run(task_fields),
        ..Case::default()
    });
}

async fn running_data_empty(ctx: Ctx) -> Outcome {
    let mut e = registered(&ctx, &[Version::V2], 128).await?;
    launched(&ctx, &mut e).await?;
    // A task that runs a while, so that it is reported before it ends.
    launch(&mut e, &task(5, "sleep", &[300], 1)).await?;
    let mut early = Vec::new();
    let done = e
        .conn
        .expect::<C, StatusUpdate>(
            wait(&ctx) * 2,
            "a final StatusUpdate of task 5",
            |x| match x {
                Envelope::Send(C::StatusUpdate(s)) if s.task_id == 5 => {
                    if s.state.is_finished() {
                        return Some(s.clone());
                    }
                    early.push((s.state, s.data.as_slice().len()));
                    None
                }
                _ => None,
            },
        )
        .await?;
    check(
        early.iter().any(|(s, _)| *s == TaskState::Running),
        "StatusUpdate RUNNING before the task ends",
        format!("{early:?}, then {}", done.state),
    )?;
    let with_data: Vec<_> = early.iter().filter(|(_, n)| *n > 0).collect();
    check(
        with_data.is_empty(),
        "empty data in every LAUNCHING and RUNNING StatusUpdate",
        format!("(state, bytes) {with_data:?}"),
    )
}

async fn one_final_update(ctx: Ctx) -> Outcome {
    let mut e = registered(&ctx, &[Version::V2], 128).await?;
    launched(&ctx, &mut e).await?;
    launch(&mut e, &task(6, "sum-squares", &[0, 100], 1)).await?;
    launch(&mut e, &task(7, "flaky", &[1], 1)).await?;
    let mut finals: Vec<(i64, TaskState)> = Vec::new();
    let deadline = tokio::time::Instant::now() + wait(&ctx) * 2;
    while finals.len() < 2 {
        let left = deadline.saturating_duration_since(tokio::time::Instant::now());
        let s = e
            .conn
            .expect::<C, StatusUpdate>(
                left,
                "the final StatusUpdates of tasks 6 and 7",
                |x| match x {
                    Envelope::Send(C::StatusUpdate(s)) if s.state.is_finished() => Some(s.clone()),
                    _ => None,
                },
            )
            .await?;
        check(
            !finals.iter().any(|(t, _)| *t == s.task_id),
            format!("one final StatusUpdate for task {}", s.task_id),
            format!("{} after {:?}", s.state, finals),
        )?;
        finals.push((s.task_id, s.state));
    }
    check(
        finals.contains(&(6, TaskState::Finished)) && finals.contains(&(7, TaskState::Failed)),
        "task 6 FINISHED and task 7 FAILED",
        format!("{finals:?}"),
    )?;
    e.conn
        .expect_none::<C>(
            ctx.settings.quiet.max(Duration::from_millis(500)),
            "no second final StatusUpdate for tasks 6 and 7",
            |x| matches!(x, Envelope::Send(C::StatusUpdate(s)) if s.state.is_finished()),
        )
        .await
}

async fn task_fields(ctx: Ctx) -> Outcome {
    use crate::kit::driver::{executor, registered as driver, Job, SMALL};
    let d = driver(
        &ctx,
        Job {
            partitions: 1,
            ..SMALL
        },
    )
    .await?;
    let mut e = executor(&ctx, &d, "1", 1, Version::V2).await?;
    e.conn
        .send(&Envelope::Ask {
            id: 7,
            message: C::RetrieveSparkAppConfig(RetrieveSparkAppConfig::new(0)),
        })
        .await?;
    let cfg = e
        .conn
        .expect::<C, SparkAppConfig>(wait(&ctx), "SparkAppConfig", |x| match x {
            Envelope::Reply {
                id: 7,
                reply: Reply::Message(C::SparkAppConfig(s)),
            } => Some(s.clone()),
            _ => None,
        })
        .await?;
    let cpus = cfg
        .spark_properties
        .iter()
        .find(|(k, _)| k == "spark.task.cpus")
        .map(|(_, v)| v.clone());
    let cpus_n = cpus.as_deref().and_then(|v| v.trim().parse::<i32>().ok());
    check(
        cpus_n.is_some(),
        "SparkAppConfig carrying spark.task.cpus",
        format!("{cpus:?}"),
    )?;
    e.launched().await?;
    let first = e.task(&ctx).await?;
    e.fail_task(&first).await?;
    let retry = e.task(&ctx).await?;
    for t in [&first, &retry] {
        let name = format!(
            "task {}.{} in stage {}.{} (TID {})",
            t.index, t.attempt_number, t.stage_id, t.stage_attempt_id, t.task_id
        );
        check(
            t.name == name && t.stage_attempt_id == 0 && Some(t.cpus) == cpus_n,
            format!(
                "name `{name}`, stageAttemptId 0, cpus {}",
                cpus.as_deref().unwrap_or("")
            ),
            format!(
                "name `{}`, stageAttemptId {}, cpus {}",
                t.name, t.stage_attempt_id, t.cpus
            ),
        )?;
    }
    Ok(())
}
