//! `flow/executor/…`: the flows of a executor: a whole conversation with the suite playing its peers.

use crate::harness::case::run;
use crate::harness::case::Case;
use crate::harness::case::Target;
use crate::harness::env::Ctx;
use crate::harness::verdict::check;
use crate::harness::verdict::fail;
use crate::harness::verdict::Level;
use crate::kit::common::wait;
use crate::kit::executor::*;
use crate::kit::spawned;
use sparkwire::messages::coarse::*;
use sparkwire::messages::CoarseMessage;
use sparkwire::messages::TaskState;
use sparkwire::messages::Version;
use sparkwire::wire::handshake::Role;
use sparkwire::wire::Envelope;
use sparkwire::wire::Reply;

type C = CoarseMessage;

/// The cases of this section, each naming its targets.
pub fn cases(cs: &mut Vec<Case>) {
    cs.push(Case {
        id: "flow/executor/register/fields".into(),
        level: Level::Must,
        targets: vec![Target::Executor],
        requirement: "the executor registers with its executor id and cores, and an endpoint \
            reference without an address"
            .into(),
        body: run(|ctx: Ctx| async move {
            let e = registered(&ctx, &[Version::V1, Version::V2], 128).await?;
            check(
                e.reg.executor_id == EXECUTOR_ID
                    && e.reg.cores == CORES
                    && e.reg.executor_ref.address.is_none(),
                format!("executor {EXECUTOR_ID}, {CORES} cores, no address"),
                format!("{:?}", e.reg),
            )
        }),
        ..Case::default()
    });
    cs.push(Case {
        id: "flow/executor/v1".into(),
        level: Level::Must,
        targets: vec![Target::Executor],
        requirement: "an executor on a version 1 connection runs a task and reports it in version \
            1's StatusUpdate layout"
            .into(),
        body: run(|ctx: Ctx| async move {
            let mut e = registered(&ctx, &[Version::V1], 128).await?;
            launched(&ctx, &mut e).await?;
            launch(&mut e, &task(4, "sum-squares", &[0, 10], 1)).await?;
            let s = update(&ctx, &mut e, 4, "StatusUpdate FINISHED", |s| {
                s.state.is_finished()
            })
            .await?;
            check(
                s.state == TaskState::Finished,
                "FINISHED",
                s.state.to_string(),
            )
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
        requirement: "an executor whose RegisterExecutor fails (Spark's `Duplicate executor ID`) \
            exits with a non-zero status"
            .into(),
        body: run(|ctx: Ctx| async move {
            let (mut run, mut conn) = start(ctx.clone()).await?;
            loop {
                let hello = conn.read_hello(spawned::startup(&ctx)).await?;
                spawned::accept(
                    &ctx,
                    &mut conn,
                    &hello,
                    &[Version::V1, Version::V2],
                    "driver",
                )
                .await?;
                if let Some((id, _)) = serve_until_register(&ctx, &mut conn, 128).await? {
                    conn.send(&Envelope::<C>::Failure {
                        id,
                        error: sparkwire::messages::ErrorDescription::new(
                            "org.apache.spark.SparkException",
                            format!("Duplicate executor ID: {EXECUTOR_ID}"),
                        ),
                    })
                    .await?;
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
        requirement: "an executor whose driver connection closes exits (Spark: `Driver … \
            disassociated! Shutting down.`)"
            .into(),
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
}
