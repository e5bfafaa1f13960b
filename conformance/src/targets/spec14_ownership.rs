//! `--target master`, SPEC §14.2: ids bound to connections, the cases that `spec14.rs` leaves
//! (Z1 for a finished application, Z2 for WorkerDecommissioning and
//! WorkerSchedulerStateResponse, Z3 for an executor placed on another worker). One function per
//! case; each cites the sentence it checks.

use std::time::Duration;

use sparkwire::messages::deploy::*;
use sparkwire::messages::{DeployMessage, ExecutorState, Version, WorkerState};
use sparkwire::wire::{Envelope, Reply};

use crate::case::{check, fail, Cases, Failure, Level, Outcome, Sharing};
use crate::env::Ctx;
use crate::targets::master::{app, app_desc, settle, state, worker, worker_ref, FakeWorker};

type D = DeployMessage;

fn wait(ctx: &Ctx) -> Duration {
    ctx.settings.patience
}

/// Every case of this file, added to `cs`.
pub fn add(cs: &mut Cases) {
    cs.sharing(Sharing::Parallel)
        .timeout(Duration::from_secs(10));
    cs.add(
        "spec/14.2/Z1/finished-app-named-again",
        Level::Must,
        "SPEC §14.2 Z1, \"Naming an unknown or finished application is not a refusal: the master answers as Spark does (`false`, or nothing)\": after an application client unregistered its application, its RequestExecutors naming that application is answered with a bool reply false, never true (a strict master MAY answer a failure or close instead, as for rule P2)",
        finished_app_named_again,
    );
    cs.add(
        "spec/14.2/Z2/decommissioning-other-connection",
        Level::Must,
        "SPEC §14.2 Z2, \"`WorkerDecommissioning` ... naming a worker bound to another connection [is] refused\", and §14.3, \"A refused send closes its connection ... Nothing a refused message asks for happens\": a registered worker's connection that sends WorkerDecommissioning naming another registered worker is closed, and that worker stays ALIVE",
        decommissioning_other_connection,
    );
    cs.add(
        "spec/14.2/Z2/scheduler-state-other-connection",
        Level::Must,
        "SPEC §14.2 Z2, \"`WorkerSchedulerStateResponse` naming a worker bound to another connection [is] refused\", and §14.3, \"A refused send closes its connection\": a registered worker's connection that sends WorkerSchedulerStateResponse naming another registered worker is closed, and that worker stays ALIVE",
        scheduler_state_other_connection,
    );
    // It registers a worker with capacity and an application that takes it: alone.
    cs.sharing(Sharing::Alone).timeout(Duration::from_secs(20));
    cs.add(
        "spec/14.2/Z3/executor-state-other-worker",
        Level::Must,
        "SPEC §14.2 Z3, \"`ExecutorStateChanged` for an executor the master placed on a worker is taken only from that worker's connection\", and §14.3 (a refused ask is answered with a failure, a refused send closes; nothing a refused message asks for happens): a second registered worker's ExecutorStateChanged ask saying FAILED for an executor the master launched on the first is answered with a failure or closes its connection, and the application is told no FAILED for it",
        executor_state_other_worker,
    );
    cs.sharing(Sharing::Parallel)
        .timeout(Duration::from_secs(10));
}

async fn finished_app_named_again(ctx: Ctx) -> Outcome {
    let v = crate::targets::spec7_asks::highest(&ctx);
    let (mut c, id) = app(&ctx, "app", app_desc(Some(1), 64, Some(0)), v).await?;
    c.send(&Envelope::Send(D::UnregisterApplication(
        UnregisterApplication::new(id.clone()),
    )))
    .await?;
    let m = D::RequestExecutors(RequestExecutors::new(id.clone(), vec![]));
    c.send(&Envelope::Ask { id: 6, message: m }).await?;
    let want = format!(
        "a bool reply false to ask 6, RequestExecutors for the finished {id} (or, strictly, a failure or a close)"
    );
    let got = c
        .expect::<D, Envelope<D>>(wait(&ctx), &want, |e| match e {
            Envelope::Failure { id: 6, .. } | Envelope::Reply { id: 6, .. } => Some(e.clone()),
            _ => None,
        })
        .await;
    match got {
        Ok(Envelope::Reply {
            reply: Reply::Bool(false),
            ..
        })
        | Ok(Envelope::Failure { .. }) => Ok(()),
        Ok(other) => Err(fail(want, crate::peer::envelope_label(&other))),
        Err(Failure::Fail { seen, .. }) if seen.contains("closed") => Ok(()),
        Err(e) => Err(e),
    }
}

/// Two registered workers, with no capacity, at `version`.
async fn two_workers(ctx: &Ctx, version: Version) -> Result<(FakeWorker, FakeWorker), Failure> {
    Ok((
        worker(ctx, "worker-a", 0, 0, version).await?,
        worker(ctx, "worker-b", 0, 0, version).await?,
    ))
}

/// Checks that worker `id` is ALIVE in the master's state.
async fn still_alive(ctx: &Ctx, id: &str) -> Outcome {
    let s = state(ctx).await?;
    let w = s.workers.iter().find(|w| w.id == id);
    check(
        w.is_some_and(|w| w.state == WorkerState::Alive),
        format!("worker {id} ALIVE in the master's state"),
        format!("{:?}", w.map(|w| w.state)),
    )
}

async fn decommissioning_other_connection(ctx: Ctx) -> Outcome {
    let (a, mut b) = two_workers(&ctx, Version::V2).await?;
    b.conn
        .send(&Envelope::Send(D::WorkerDecommissioning(
            WorkerDecommissioning::new(a.id.clone(), worker_ref(&a.host, 1)),
        )))
        .await?;
    b.conn
        .expect_closed(
            wait(&ctx),
            "the connection closed (a WorkerDecommissioning naming another connection's worker refused)",
        )
        .await?;
    still_alive(&ctx, &a.id).await
}

async fn scheduler_state_other_connection(ctx: Ctx) -> Outcome {
    let v = crate::targets::spec7_asks::highest(&ctx);
    let (a, mut b) = two_workers(&ctx, v).await?;
    b.conn
        .send(&Envelope::Send(D::WorkerSchedulerStateResponse(
            WorkerSchedulerStateResponse::new(a.id.clone(), vec![], vec![]),
        )))
        .await?;
    b.conn
        .expect_closed(
            wait(&ctx),
            "the connection closed (a WorkerSchedulerStateResponse naming another connection's worker refused)",
        )
        .await?;
    still_alive(&ctx, &a.id).await
}

async fn executor_state_other_worker(ctx: Ctx) -> Outcome {
    settle(
        &ctx,
        || async { Ok(state(&ctx).await?.active_apps.is_empty()) },
        "no application of an earlier case still active",
    )
    .await?;
    let mut a = worker(&ctx, "worker-a", 1, 1024, Version::V2).await?;
    let mut b = worker(&ctx, "worker-b", 0, 0, Version::V2).await?;
    let (mut app_conn, app_id) =
        app(&ctx, "app", app_desc(Some(1), 64, Some(1)), Version::V2).await?;
    let exec_id = a
        .conn
        .expect::<D, i32>(
            wait(&ctx),
            "LaunchExecutor for the application",
            |e| match e {
                Envelope::Send(D::LaunchExecutor(l)) if l.app_id == app_id => Some(l.exec_id),
                _ => None,
            },
        )
        .await?;
    b.conn
        .send(&Envelope::Ask {
            id: 8,
            message: D::ExecutorStateChanged(
                ExecutorStateChanged::new(app_id.clone(), exec_id, ExecutorState::Failed)
                    .with_message(Some("a worker it is not on".into()))
                    .with_exit_status(Some(1)),
            ),
        })
        .await?;
    let want = "a failure for ask 8 (or the connection closed)";
    let got = b
        .conn
        .expect::<D, Envelope<D>>(wait(&ctx), want, |e| match e {
            Envelope::Failure { id: 8, .. } | Envelope::Reply { id: 8, .. } => Some(e.clone()),
            _ => None,
        })
        .await;
    match got {
        Ok(Envelope::Failure { .. }) => {}
        Ok(other) => return Err(fail(want, crate::peer::envelope_label(&other))),
        Err(Failure::Fail { seen, .. }) if seen.contains("closed") => {}
        Err(e) => return Err(e),
    }
    app_conn
        .expect_none::<D>(
            ctx.settings.quiet,
            "no ExecutorUpdated FAILED for the executor (nothing a refused message asks for happens)",
            |e| {
                matches!(e, Envelope::Send(D::ExecutorUpdated(u))
                    if u.id == exec_id && u.state == ExecutorState::Failed)
            },
        )
        .await?;
    a.conn
        .expect_none::<D>(
            ctx.settings.quiet,
            "no LaunchExecutor relaunching the executor on the first worker",
            |e| matches!(e, Envelope::Send(D::LaunchExecutor(l)) if l.app_id == app_id),
        )
        .await
}
