//! `spec/10/…`: SPEC §10 (protocol/SPEC.md).

/// The cases about driver.
pub mod driver {
    use crate::harness::case::run;
    use crate::harness::case::Case;
    use crate::harness::case::Target;
    use crate::harness::env::Ctx;
    use crate::harness::verdict::check;
    use crate::harness::verdict::Level;
    use crate::kit::common::wait;
    use crate::kit::driver::*;
    use sparkwire::messages::CoarseMessage;
    use sparkwire::messages::Version;
    use sparkwire::wire::Envelope;

    type C = CoarseMessage;

    /// The cases of this section, each naming its targets.
    pub fn cases(cs: &mut Vec<Case>) {
        cs.push(Case {
            id: "spec/10/task-size-limit".into(),
            level: Level::Must,
            targets: vec![Target::Driver],
            quote: "SPEC §10, spark.rpc.message.maxSize".into(),
            requirement: "a task of maxSize less 200 KiB is not sent: the job fails with Spark's \
                text, the connection stays open"
                .into(),
            body: run(|ctx: Ctx| async move {
                let mut d = registered(&ctx, Job { job: "big-task", partitions: 1, param: 2 << 20,
                    max_message_size: 1 }).await?;
                let mut e = executor(&ctx, &d, "1", 1, Version::V2).await?;
                e.launched().await?;
                let stop = e.conn.expect::<C, bool>(wait(&ctx), "no LaunchTask, the connection open until \
                    StopExecutor", |x| match x {
                    Envelope::Send(C::LaunchTask(_)) => Some(false),
                    Envelope::Send(C::StopExecutor(_)) => Some(true),
                    _ => None,
                }).await?;
                check(stop, "no LaunchTask", "a LaunchTask")?;
                e.conn.shutdown_write().await;
                let code = d.run.exit_within(wait(&ctx)).await?;
                check(code.is_some_and(|c| c != 0), "the job failed (non-zero exit)", format!("{code:?}"))?;
                let out = d.run.output();
                check(out.contains("Serialized task 0:0 \
                    was") && out.contains("which exceeds max allowed: spark.rpc.message.maxSize (843776 bytes)"),
                    "Serialized task 0:0 was N bytes, which exceeds max allowed: spark.rpc.message.maxSize (843776 \
                        bytes)", out)
            }),
            ..Case::default()
        });
    }
}

/// The cases about executor.
pub mod executor {
    use crate::harness::case::run;
    use crate::harness::case::Case;
    use crate::harness::case::Target;
    use crate::harness::env::Ctx;
    use crate::harness::verdict::check;
    use crate::harness::verdict::fail;
    use crate::harness::verdict::Level;
    use crate::kit::executor::*;
    use sparkwire::messages::coarse::*;
    use sparkwire::messages::CoarseMessage;
    use sparkwire::messages::TaskState;
    use sparkwire::messages::Version;
    use sparkwire::reference::task::BuiltinRunner;
    use sparkwire::reference::task::CancelFlag;
    use sparkwire::reference::task::TaskRunner;
    use sparkwire::wire::decode_failure;
    use sparkwire::wire::Envelope;

    type C = CoarseMessage;

    /// The cases of this section, each naming its targets.
    pub fn cases(cs: &mut Vec<Case>) {
        cs.push(Case {
            id: "spec/10/task-finished".into(),
            level: Level::Must,
            targets: vec![Target::Executor],
            requirement:
                "the executor runs a LaunchTask: StatusUpdate RUNNING, then FINISHED with \
                the result (rules T2, T3)"
                    .into(),
            body: run(|ctx: Ctx| async move {
                let mut e = registered(&ctx, &[Version::V2], 128).await?;
                launched(&ctx, &mut e).await?;
                let t = task(0, "sum-squares", &[0, 1000], 1);
                launch(&mut e, &t).await?;
                update(&ctx, &mut e, 0, "StatusUpdate RUNNING", |s| {
                    s.state == TaskState::Running
                })
                .await?;
                let done = update(&ctx, &mut e, 0, "StatusUpdate FINISHED", |s| {
                    s.state.is_finished()
                })
                .await?;
                let want = BuiltinRunner.run(&t, &CancelFlag::new()).map_err(|f| {
                    fail(
                        "a task the runner \
                    runs",
                        f.message,
                    )
                })?;
                check(
                    done.state == TaskState::Finished
                        && done.data.as_slice() == want.as_slice()
                        && done.executor_id == EXECUTOR_ID,
                    format!(
                        "FINISHED with {} result bytes from executor \
                        {EXECUTOR_ID}",
                        want.len()
                    ),
                    format!(
                        "{} with {} bytes from \
                            {}",
                        done.state,
                        done.data.len(),
                        done.executor_id
                    ),
                )
            }),
            ..Case::default()
        });
        cs.push(Case {
            id: "spec/10/task-failed".into(),
            level: Level::Must,
            targets: vec![Target::Executor],
            requirement: "a task that fails is reported FAILED with an ErrorDescription \
                {className, message} as its data"
                .into(),
            body: run(|ctx: Ctx| async move {
                let mut e = registered(&ctx, &[Version::V2], 128).await?;
                launched(&ctx, &mut e).await?;
                launch(&mut e, &task(1, "flaky", &[1], 1)).await?;
                let done = update(&ctx, &mut e, 1, "a finished StatusUpdate", |s| {
                    s.state.is_finished()
                })
                .await?;
                let f = decode_failure(done.data.as_slice());
                check(
                    done.state == TaskState::Failed && !f.class_name.is_empty(),
                    "FAILED with a class \
                    name",
                    format!("{} {:?}", done.state, f),
                )
            }),
            ..Case::default()
        });
        cs.push(Case {
            id: "spec/10/kill-task".into(),
            level: Level::Must,
            targets: vec![Target::Executor],
            requirement: "a task told KillTask is reported KILLED with class name TaskKilled"
                .into(),
            body: run(|ctx: Ctx| async move {
                let mut e = registered(&ctx, &[Version::V2], 128).await?;
                launched(&ctx, &mut e).await?;
                launch(&mut e, &task(2, "sleep", &[20_000], 1)).await?;
                update(&ctx, &mut e, 2, "StatusUpdate RUNNING", |s| {
                    s.state == TaskState::Running
                })
                .await?;
                e.conn
                    .send(&Envelope::Send(C::KillTask(KillTask::new(
                        2,
                        EXECUTOR_ID.into(),
                        true,
                        "killed by the conformance suite".into(),
                    ))))
                    .await?;
                let done = update(&ctx, &mut e, 2, "a finished StatusUpdate", |s| {
                    s.state.is_finished()
                })
                .await?;
                let f = decode_failure(done.data.as_slice());
                check(
                    done.state == TaskState::Killed && f.class_name == "TaskKilled",
                    "KILLED, TaskKilled",
                    format!("{} {}", done.state, f.class_name),
                )
            }),
            ..Case::default()
        });
        cs.push(Case {
            id: "spec/10/result-too-large".into(),
            level: Level::Must,
            targets: vec![Target::Executor],
            quote: "SPEC §10, spark.rpc.message.maxSize".into(),
            requirement: "a result of maxSize less 200 KiB is not sent: the task FAILED with \
                Spark's text, the connection up"
                .into(),
            body: run(|ctx: Ctx| async move {
                let mut e = registered(&ctx, &[Version::V2], 1).await?;
                launched(&ctx, &mut e).await?;
                launch(&mut e, &task(7, "big-result", &[1_500_000], 1)).await?;
                let done = update(&ctx, &mut e, 7, "a finished StatusUpdate", |s| {
                    s.state.is_finished()
                })
                .await?;
                let f = decode_failure(done.data.as_slice());
                check(
                    done.state == TaskState::Failed
                        && f.message.contains(
                            "Result of task (TID 7) \
                    was",
                        )
                        && f.message
                            .contains("exceeds max allowed: spark.rpc.message.maxSize"),
                    "FAILED: Result of task (TID 7) was … exceeds max allowed: \
                        spark.rpc.message.maxSize",
                    format!("{} {}", done.state, f.message),
                )?;
                launch(&mut e, &task(8, "sum-squares", &[0, 10], 1)).await?;
                update(
                    &ctx,
                    &mut e,
                    8,
                    "StatusUpdate FINISHED of the next \
                    task",
                    |s| s.state == TaskState::Finished,
                )
                .await
                .map(|_| ())
            }),
            ..Case::default()
        });
        cs.push(Case {
            id: "spec/10/bad-task-data".into(),
            level: Level::Must,
            targets: vec![Target::Executor],
            requirement: "a LaunchTask whose data is no TaskDescription keeps the connection up, \
                and the next task runs"
                .into(),
            body: run(|ctx: Ctx| async move {
                let mut e = registered(&ctx, &[Version::V2], 128).await?;
                launched(&ctx, &mut e).await?;
                e.conn
                    .send(&Envelope::Send(C::LaunchTask(LaunchTask::new(
                        vec![0xc1, 0x00, 0x01].into(),
                    ))))
                    .await?;
                launch(&mut e, &task(9, "sum-squares", &[0, 10], 1)).await?;
                update(&ctx, &mut e, 9, "StatusUpdate FINISHED", |s| {
                    s.state == TaskState::Finished
                })
                .await
                .map(|_| ())
            }),
            ..Case::default()
        });
    }
}

/// The cases about tasks.
pub mod tasks {
    use crate::harness::case::run;
    use crate::harness::case::Case;
    use crate::harness::case::Target;
    use crate::harness::env::Ctx;
    use crate::harness::verdict::check;
    use crate::harness::verdict::Level;
    use crate::harness::verdict::Outcome;
    use crate::kit::common::wait;
    use crate::kit::executor::launch;
    use crate::kit::executor::launched;
    use crate::kit::executor::registered;
    use crate::kit::executor::task;
    use sparkwire::messages::coarse::*;
    use sparkwire::messages::CoarseMessage;
    use sparkwire::messages::TaskState;
    use sparkwire::messages::Version;
    use sparkwire::wire::Envelope;
    use sparkwire::wire::Reply;
    use std::time::Duration;

    type C = CoarseMessage;

    /// The cases of this section, each naming its targets.
    pub fn cases(cs: &mut Vec<Case>) {
        cs.push(Case {
            id: "spec/10/running-data-empty".into(),
            level: Level::Must,
            targets: vec![Target::Executor],
            quote: "SPEC §10, \"`StatusUpdate.data` carries the task's result: … for `LAUNCHING` \
                and `RUNNING`, empty `bin`\""
                .into(),
            requirement: "every LAUNCHING or RUNNING StatusUpdate of a task has empty data".into(),
            body: run(running_data_empty),
            ..Case::default()
        });
        cs.push(Case {
            id: "spec/10/one-final-update".into(),
            level: Level::Must,
            targets: vec![Target::Executor],
            quote: "SPEC §10, \"An executor sends `StatusUpdate` `RUNNING` before a task can end, \
                then exactly one of `FINISHED`, `FAILED` or `KILLED`\""
                .into(),
            requirement:
                "a task that finishes and one that fails each get one final StatusUpdate, \
                and no second one follows within the quiet time"
                    .into(),
            body: run(one_final_update),
            ..Case::default()
        });
        cs.push(Case {
            id: "spec/10/task-fields".into(),
            level: Level::Must,
            targets: vec![Target::Driver],
            quote:
                "SPEC §10, the driver fills `TaskDescription` as Spark does: \"`name` `task 3.1 \
                in stage 0.0 (TID 7)`, … `stageAttemptId` 0, … `cpus` the driver's \
                `spark.task.cpus`\", and \"The driver's `SparkAppConfig` carries … \
                `spark.task.cpus`\""
                    .into(),
            requirement: "a task and its retry are named `task I.A in stage S.0 (TID T)`, \
                stageAttemptId 0, cpus as configured"
                .into(),
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
        let done =
            e.conn
                .expect::<C, StatusUpdate>(wait(&ctx) * 2, "a final StatusUpdate of task 5", |x| {
                    match x {
                        Envelope::Send(C::StatusUpdate(s)) if s.task_id == 5 => {
                            if s.state.is_finished() {
                                return Some(s.clone());
                            }
                            early.push((s.state, s.data.as_slice().len()));
                            None
                        }
                        _ => None,
                    }
                })
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
                .expect::<C, StatusUpdate>(left, "the final StatusUpdates of tasks 6 and 7", |x| {
                    match x {
                        Envelope::Send(C::StatusUpdate(s)) if s.state.is_finished() => {
                            Some(s.clone())
                        }
                        _ => None,
                    }
                })
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
}
