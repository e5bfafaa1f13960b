//! `--target executor`: the suite plays the driver (and the worker) of an executor it starts.

use std::sync::Arc;

use sparkwire::messages::coarse::*;
use sparkwire::messages::{CoarseMessage, TaskState, Version};
use sparkwire::reference::task::{BuiltinRunner, CancelFlag, TaskRunner};
use sparkwire::wire::decode_failure;
use sparkwire::wire::handshake::Role;
use sparkwire::wire::{Envelope, Reply};

use crate::case::{run, Case, Target};
use crate::env::Ctx;
use crate::kit::client::Client;
use crate::kit::common::wait;
use crate::kit::common::{crossing, expect_refused, sample};
use crate::kit::spawned::{self};
use crate::peer::frame;
use crate::verdict::{check, fail, Level};

type C = CoarseMessage;

use crate::kit::executor::*;

/// The executor as the cases about any client see it.
pub fn client() -> Client {
    Client {
        start: Arc::new(|ctx| Box::pin(start(ctx))),
        name: "the executor",
        role: Role::Executor,
        server_role: Role::Driver,
        other_family_role: Role::Master,
    }
}

/// The route cases: every coarse ask the executor must refuse from its driver.
pub fn routes(cs: &mut Vec<Case>) {
    for msg in crossing("coarse") {
        let ask = msg.kind == sparkwire::definition::MessageKind::Ask;
        if !ask
            || (msg.from.iter().any(|r| r == "driver") && msg.to.iter().any(|r| r == "executor"))
        {
            continue;
        }
        let requirement =
            format!(
            "the executor refuses the ask {} from its driver ({} → {} only): a failure or a close",
            msg.name, msg.from.join(", "), msg.to.join(", ")
        );
        cs.push(Case {
            id: format!("route/coarse/{}", msg.name),
            level: Level::Must,
            targets: vec![Target::Executor],
            requirement,
            body: run(move |ctx: Ctx| async move {
                let m: C = sample(msg)?;
                let mut e = registered(&ctx, &[Version::V1, Version::V2], 128).await?;
                expect_refused(
                    &mut e.conn,
                    Envelope::Ask { id: 81, message: m },
                    wait(&ctx),
                )
                .await
            }),
            ..Case::default()
        });
    }
}

/// How the cases about any client start an executor.
pub fn starter() -> crate::kit::client::Start {
    Arc::new(|ctx| Box::pin(start(ctx)))
}

/// The executor's flows.
pub fn flows(cs: &mut Vec<Case>) {
    cs.push(Case {
        id: "flow/executor/register/fields".into(),
        level: Level::Must,
        targets: vec![Target::Executor],
        requirement: "the executor registers (RegisterExecutor) with the executor id and cores it was started with, and an \
            endpoint reference without an address (executors do not listen)".into(),
        body: run(|ctx: Ctx| async move {
            let e = registered(&ctx, &[Version::V1, Version::V2], 128).await?;
            check(e.reg.executor_id == EXECUTOR_ID && e.reg.cores == CORES && e.reg.executor_ref.address.is_none(),
                format!("executor {EXECUTOR_ID}, {CORES} cores, no address"), format!("{:?}", e.reg))
        }),
        ..Case::default()
    });
    cs.push(Case {
        id: "rules/X2/launched".into(),
        level: Level::Must,
        targets: vec![Target::Executor],
        requirement: "once its RegisterExecutor is answered true the executor sends LaunchedExecutor with its id (rule X2)".into(),
        body: run(|ctx: Ctx| async move {
            let mut e = registered(&ctx, &[Version::V1, Version::V2], 128).await?;
            launched(&ctx, &mut e).await
        }),
        ..Case::default()
    });
    cs.push(Case {
        id: "spec/10/task-finished".into(),
        level: Level::Must,
        targets: vec![Target::Executor],
        requirement: "the executor runs a LaunchTask: StatusUpdate RUNNING, then FINISHED with the runner's result, with its \
            executor id (SPEC §10, rules T2, T3)".into(),
        body: run(|ctx: Ctx| async move {
            let mut e = registered(&ctx, &[Version::V2], 128).await?;
            launched(&ctx, &mut e).await?;
            let t = task(0, "sum-squares", &[0, 1000], 1);
            launch(&mut e, &t).await?;
            update(&ctx, &mut e, 0, "StatusUpdate RUNNING", |s| s.state == TaskState::Running).await?;
            let done = update(&ctx, &mut e, 0, "StatusUpdate FINISHED", |s| s.state.is_finished()).await?;
            let want = BuiltinRunner.run(&t, &CancelFlag::new()).map_err(|f| fail("a task the runner \
                runs", f.message))?;
            check(done.state == TaskState::Finished && done.data.as_slice() == want.as_slice()
                && done.executor_id == EXECUTOR_ID,
                format!("FINISHED with {} result bytes from executor \
                    {EXECUTOR_ID}", want.len()), format!("{} with {} bytes from \
                        {}", done.state, done.data.len(), done.executor_id))
        }),
        ..Case::default()
    });
    cs.push(Case {
        id: "spec/10/task-failed".into(),
        level: Level::Must,
        targets: vec![Target::Executor],
        requirement: "a task that fails is reported FAILED with an ErrorDescription {className, message} as its data".into(),
        body: run(|ctx: Ctx| async move {
            let mut e = registered(&ctx, &[Version::V2], 128).await?;
            launched(&ctx, &mut e).await?;
            launch(&mut e, &task(1, "flaky", &[1], 1)).await?;
            let done = update(&ctx, &mut e, 1, "a finished StatusUpdate", |s| s.state.is_finished()).await?;
            let f = decode_failure(done.data.as_slice());
            check(done.state == TaskState::Failed && !f.class_name.is_empty(), "FAILED with a class \
                name", format!("{} {:?}", done.state, f))
        }),
        ..Case::default()
    });
    cs.push(Case {
        id: "spec/10/kill-task".into(),
        level: Level::Must,
        targets: vec![Target::Executor],
        requirement: "a task told KillTask is reported KILLED with class name TaskKilled".into(),
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
        id: "rules/T6/task-cpus".into(),
        level: Level::Must,
        targets: vec![Target::Executor],
        requirement:
            "a version 2 StatusUpdate's taskCpus is the cpus the task was launched with (rule T6)"
                .into(),
        body: run(|ctx: Ctx| async move {
            let mut e = registered(&ctx, &[Version::V2], 128).await?;
            launched(&ctx, &mut e).await?;
            launch(&mut e, &task(3, "sum-squares", &[0, 10], 2)).await?;
            let s = update(&ctx, &mut e, 3, "StatusUpdate", |_| true).await?;
            check(s.task_cpus == 2, "taskCpus 2", s.task_cpus.to_string())
        }),
        ..Case::default()
    });
    cs.push(Case {
        id: "flow/executor/v1".into(),
        level: Level::Must,
        targets: vec![Target::Executor],
        requirement: "an executor on a version 1 connection runs a task and reports it in version 1's StatusUpdate layout".into(),
        body: run(|ctx: Ctx| async move {
            let mut e = registered(&ctx, &[Version::V1], 128).await?;
            launched(&ctx, &mut e).await?;
            launch(&mut e, &task(4, "sum-squares", &[0, 10], 1)).await?;
            let s = update(&ctx, &mut e, 4, "StatusUpdate FINISHED", |s| s.state.is_finished()).await?;
            check(s.state == TaskState::Finished, "FINISHED", s.state.to_string())
        }),
        ..Case::default()
    });
    cs.push(Case {
        id: "rules/T1/concurrent-tasks".into(),
        level: Level::Must,
        targets: vec![Target::Executor],
        requirement:
            "an executor with 2 cores runs 2 one-cpu tasks at once: both RUNNING before either ends"
                .into(),
        body: run(|ctx: Ctx| async move {
            let mut e = registered(&ctx, &[Version::V2], 128).await?;
            launched(&ctx, &mut e).await?;
            launch(&mut e, &task(5, "sleep", &[1500], 1)).await?;
            launch(&mut e, &task(6, "sleep", &[1500], 1)).await?;
            let mut running = std::collections::BTreeSet::new();
            while running.len() < 2 {
                let s = e
                    .conn
                    .expect::<C, StatusUpdate>(
                        wait(&ctx),
                        "StatusUpdate RUNNING of tasks 5 and 6",
                        |x| match x {
                            Envelope::Send(C::StatusUpdate(s)) => Some(s.clone()),
                            _ => None,
                        },
                    )
                    .await?;
                if s.state.is_finished() {
                    return Err(fail(
                        "both tasks RUNNING before either ends",
                        format!("task {} {} first", s.task_id, s.state),
                    ));
                }
                running.insert(s.task_id);
            }
            Ok(())
        }),
        ..Case::default()
    });
    cs.push(Case {
        id: "flow/executor/stop".into(),
        level: Level::Must,
        targets: vec![Target::Executor],
        requirement: "an executor told StopExecutor closes its connection and exits with status 0"
            .into(),
        body: run(|ctx: Ctx| async move {
            let mut e = registered(&ctx, &[Version::V2], 128).await?;
            launched(&ctx, &mut e).await?;
            e.conn
                .send(&Envelope::Send(C::StopExecutor(StopExecutor::new())))
                .await?;
            e.conn
                .expect_closed(wait(&ctx), "the connection closed")
                .await?;
            match e.run.exit_within(wait(&ctx)).await? {
                Some(code) => check(code == 0, "exit status 0", code.to_string()),
                None => Err(fail("the executor to exit", "still running")),
            }
        }),
        ..Case::default()
    });
    cs.push(Case {
        id: "flow/executor/registration-refused".into(),
        level: Level::Must,
        targets: vec![Target::Executor],
        requirement: "an executor whose RegisterExecutor fails (Spark's `Duplicate executor ID`) exits with a non-zero status".into(),
        body: run(|ctx: Ctx| async move {
            let (mut run, mut conn) = start(ctx.clone()).await?;
            loop {
                let hello = conn.read_hello(spawned::startup(&ctx)).await?;
                spawned::accept(&ctx, &mut conn, &hello, &[Version::V1, Version::V2], "driver").await?;
                if let Some((id, _)) = serve_until_register(&ctx, &mut conn, 128).await? {
                    conn.send(&Envelope::<C>::Failure { id,
                        error: sparkwire::messages::ErrorDescription::new("org.apache.spark.SparkException",
                            format!("Duplicate executor ID: {EXECUTOR_ID}")) }).await?;
                    break;
                }
                conn = run.accept(&ctx, "driver-main", Role::Driver).await?;
            }
            match run.exit_within(wait(&ctx)).await? {
                Some(code) => check(code != 0, "a non-zero exit status", code.to_string()),
                None => Err(fail("the executor to exit", "still running")),
            }
        }),
        ..Case::default()
    });
    cs.push(Case {
        id: "flow/executor/driver-lost".into(),
        level: Level::Must,
        targets: vec![Target::Executor],
        requirement: "an executor whose driver connection closes exits (Spark: `Driver … disassociated! Shutting down.`)".into(),
        body: run(|ctx: Ctx| async move {
            let mut e = registered(&ctx, &[Version::V2], 128).await?;
            launched(&ctx, &mut e).await?;
            e.conn.shutdown_write().await;
            match e.run.exit_within(wait(&ctx)).await? {
                Some(_) => Ok(()),
                None => Err(fail("the executor to exit", "still running")),
            }
        }),
        ..Case::default()
    });
    cs.push(Case {
        id: "flow/executor/thread-dump".into(),
        level: Level::Must,
        targets: vec![Target::Executor],
        requirement: "an executor answers TaskThreadDump (version 2) with a thread-dump reply"
            .into(),
        body: run(|ctx: Ctx| async move {
            let mut e = registered(&ctx, &[Version::V2], 128).await?;
            launched(&ctx, &mut e).await?;
            e.conn
                .send(&Envelope::Ask {
                    id: 12,
                    message: C::TaskThreadDump(TaskThreadDump::new(99)),
                })
                .await?;
            e.conn
                .expect::<C, ()>(wait(&ctx), "a threadDump reply", |x| {
                    matches!(
                        x,
                        Envelope::Reply {
                            id: 12,
                            reply: Reply::ThreadDump(_)
                        }
                    )
                    .then_some(())
                })
                .await
        }),
        ..Case::default()
    });
    cs.push(Case {
        id: "spec/10/result-too-large".into(),
        level: Level::Must,
        targets: vec![Target::Executor],
        requirement: "a result as large as spark.rpc.message.maxSize less 200 KiB is not sent: the task is FAILED with Spark's \
            text `Result of task (TID n) was S bytes, which exceeds max allowed: spark.rpc.message.maxSize`, and the \
                connection stays up".into(),
        body: run(|ctx: Ctx| async move {
            let mut e = registered(&ctx, &[Version::V2], 1).await?;
            launched(&ctx, &mut e).await?;
            launch(&mut e, &task(7, "big-result", &[1_500_000], 1)).await?;
            let done = update(&ctx, &mut e, 7, "a finished StatusUpdate", |s| s.state.is_finished()).await?;
            let f = decode_failure(done.data.as_slice());
            check(done.state == TaskState::Failed && f.message.contains("Result of task (TID 7) \
                was") && f.message.contains("exceeds max allowed: spark.rpc.message.maxSize"),
                "FAILED: Result of task (TID 7) was … exceeds max allowed: \
                    spark.rpc.message.maxSize", format!("{} {}", done.state, f.message))?;
            launch(&mut e, &task(8, "sum-squares", &[0, 10], 1)).await?;
            update(&ctx, &mut e, 8, "StatusUpdate FINISHED of the next \
                task", |s| s.state == TaskState::Finished).await.map(|_| ())
        }),
        ..Case::default()
    });
    cs.push(Case {
        id: "spec/10/bad-task-data".into(),
        level: Level::Must,
        targets: vec![Target::Executor],
        requirement: "a LaunchTask whose data is not a TaskDescription does not take the executor down: the connection stays up \
            and the next task runs".into(),
        body: run(|ctx: Ctx| async move {
            let mut e = registered(&ctx, &[Version::V2], 128).await?;
            launched(&ctx, &mut e).await?;
            e.conn.send(&Envelope::Send(C::LaunchTask(LaunchTask::new(vec![0xc1, 0x00, 0x01].into())))).await?;
            launch(&mut e, &task(9, "sum-squares", &[0, 10], 1)).await?;
            update(&ctx, &mut e, 9, "StatusUpdate FINISHED", |s| s.state == TaskState::Finished).await.map(|_| ())
        }),
        ..Case::default()
    });
    cs.push(Case {
        id: "spec/2/executor-closes-on-garbage".into(),
        level: Level::Must,
        targets: vec![Target::Executor],
        requirement: "an executor that reads a frame that is not MessagePack closes its connection"
            .into(),
        body: run(|ctx: Ctx| async move {
            let mut e = registered(&ctx, &[Version::V2], 128).await?;
            launched(&ctx, &mut e).await?;
            e.conn
                .send_raw(&frame(&[0xc1]), "a frame holding 0xc1")
                .await?;
            e.conn
                .expect_closed(wait(&ctx), "the connection closed")
                .await
        }),
        ..Case::default()
    });
}
