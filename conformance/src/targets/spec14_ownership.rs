//! `--target master`, SPEC §14.2: ids bound to connections, the cases that `spec14.rs` leaves
//! (Z1 for a finished or unknown application, Z2 for WorkerDecommissioning and
//! WorkerSchedulerStateResponse, Z3 for an executor placed on another worker). One function per
//! case; each cites the sentence it checks.

use std::time::Duration;

use sparkwire::messages::deploy::*;
use sparkwire::messages::{DeployMessage, ExecutorState, Version, WorkerState};
use sparkwire::wire::handshake::Role;
use sparkwire::wire::{Envelope, Reply};

use crate::case::{run, Case, Sharing, Target};
use crate::env::Ctx;
use crate::kit::common::wait;
use crate::kit::master::{
    addr, app, app_desc, register_worker_msg, state, submit, worker, worker_ref, Need,
};
use crate::kit::ownership::*;
use crate::verdict::{check, fail, Failure, Level, Outcome};

type D = DeployMessage;

/// Every case of this file, added to `cs`.
pub fn add(cs: &mut Vec<Case>) {
    cs.push(Case {
        id: "spec/14.2/Z1/finished-app-named-again".into(),
        level: Level::Must,
        targets: vec![Target::Master],
        timeout: Duration::from_secs(10),
        requirement: "SPEC §14.2 Z1, \"Naming an unknown or finished application is not a refusal: the master answers as Spark \
            does (`false`, or nothing)\": after an application client unregistered its application, its \
                RequestExecutors naming that application is answered with a bool reply false, never true (a strict \
                    master MAY answer a failure or close instead, as for rule P2)".into(),
        body: run(finished_app_named_again),
        ..Case::default()
    });
    cs.push(Case {
        id: "spec/14.2/Z1/unknown-app-kill-executors".into(),
        level: Level::Must,
        targets: vec![Target::Master],
        timeout: Duration::from_secs(10),
        requirement: "SPEC §14.2 Z1, \"Naming an unknown or finished application is not a refusal: the master answers as Spark \
            does (`false`, or nothing)\": an application client's KillExecutors naming an application the master \
            never knew is answered with a bool reply false, never true (a strict master MAY refuse it instead)".into(),
        body: run(unknown_app_kill_executors),
        ..Case::default()
    });
    cs.push(Case {
        id: "spec/14.2/Z2/decommissioning-other-connection".into(),
        level: Level::Must,
        targets: vec![Target::Master],
        timeout: Duration::from_secs(10),
        requirement: "SPEC §14.2 Z2, \"`WorkerDecommissioning` ... naming a worker bound to another connection [is] refused\", and \
            §14.3, \"A refused send closes its connection ... Nothing a refused message asks for happens\": a \
                registered worker's connection that sends WorkerDecommissioning naming another registered worker is \
                    closed, and that worker stays ALIVE".into(),
        body: run(decommissioning_other_connection),
        ..Case::default()
    });
    cs.push(Case {
        id: "spec/14.2/Z2/scheduler-state-other-connection".into(),
        level: Level::Must,
        targets: vec![Target::Master],
        timeout: Duration::from_secs(10),
        requirement: "SPEC §14.2 Z2, \"`WorkerSchedulerStateResponse` naming a worker bound to another connection [is] refused\", \
            and §14.3, \"A refused send closes its connection\": a registered worker's connection that sends \
                WorkerSchedulerStateResponse naming another registered worker is closed, and that worker stays ALIVE".into(),
        body: run(scheduler_state_other_connection),
        ..Case::default()
    });
    cs.push(Case {
        id: "spec/8.1/not-owner-close".into(),
        level: Level::Must,
        targets: vec![Target::Master],
        timeout: Duration::from_secs(10),
        requirement: "SPEC §8.1, \"`NotOwner` | a one-way message refused by §14.2's ownership\", and \"an endpoint that closes \
            the connection for one of the reasons below MUST first send a close envelope\": a registered worker's \
                connection that offered closeReason (and the master took it) and sends a Heartbeat naming another \
                    registered worker gets a close envelope of kind NotOwner before the close (a strict master MAY \
                        name the rule instead, RuleViolation)".into(),
        body: run(not_owner_close),
        ..Case::default()
    });
    cs.push(Case {
        id: "spec/14.2/Z2/second-worker-not-registered".into(),
        level: Level::Must,
        targets: vec![Target::Master],
        timeout: Duration::from_secs(10),
        requirement: "SPEC §14.2 Z2, \"a connection bound to one worker does not register another\": a registered worker's \
            connection that sends RegisterWorker for a second worker id gets no RegisteredWorker for it (it may be \
                refused: RegisterWorkerFailed, or the connection closed), and the master's state has no worker of \
                    that id".into(),
        body: run(second_worker_not_registered),
        ..Case::default()
    });
    // It registers a worker with capacity and an application that takes it: alone.
    cs.push(Case {
        id: "spec/14.2/Z3/executor-state-other-worker".into(),
        level: Level::Must,
        targets: vec![Target::Master],
        timeout: Duration::from_secs(20),
        sharing: Sharing::Alone,
        needs: vec![Need::NoOtherApplication],
        requirement: "SPEC §14.2 Z3, \"`ExecutorStateChanged` for an executor the master placed on a worker is taken only from \
            that worker's connection\", and §14.3 (a refused ask is answered with a failure, a refused send closes; \
                nothing a refused message asks for happens): a second registered worker's ExecutorStateChanged ask \
                    saying FAILED for an executor the master launched on the first is answered with a failure or \
                        closes its connection, and the application is told no FAILED for it".into(),
        body: run(executor_state_other_worker),
        ..Case::default()
    });
    cs.push(Case {
        id: "spec/14.2/Z3/driver-state-other-worker".into(),
        level: Level::Must,
        targets: vec![Target::Master],
        timeout: Duration::from_secs(20),
        sharing: Sharing::Alone,
        requirement: "SPEC §14.2 Z3, \"`DriverStateChanged` for a driver [is taken] only from the connection of the worker the \
            master launched it on\", and §14.3, \"A refused send closes its connection ... Nothing a refused message \
                asks for happens\": a second registered worker's DriverStateChanged saying FAILED for a driver the \
                    master launched on the first closes that second connection, and the driver stays RUNNING on the \
                        first worker".into(),
        body: run(driver_state_other_worker),
        ..Case::default()
    });
}

async fn unknown_app_kill_executors(ctx: Ctx) -> Outcome {
    let v = crate::kit::versions::highest(&ctx);
    let (mut c, _id) = app(&ctx, "app", app_desc(Some(1), 64, Some(0)), v).await?;
    let unknown = "app-19990101000000-0000".to_string();
    let m = D::KillExecutors(KillExecutors::new(unknown.clone(), vec!["0".into()]));
    c.send(&Envelope::Ask { id: 7, message: m }).await?;
    let want = format!(
        "a bool reply false to ask 7, KillExecutors for the unknown {unknown} (or a refusal)"
    );
    let got = c
        .expect_or_close::<D, Envelope<D>>(wait(&ctx), &want, |e| match e {
            Envelope::Failure { id: 7, .. } | Envelope::Reply { id: 7, .. } => Some(e.clone()),
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

async fn finished_app_named_again(ctx: Ctx) -> Outcome {
    let v = crate::kit::versions::highest(&ctx);
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
        .expect_or_close::<D, Envelope<D>>(wait(&ctx), &want, |e| match e {
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
            crate::kit::common::reaction_wait(&ctx),
            "the connection closed (a WorkerDecommissioning naming another connection's worker refused)",
        )
        .await?;
    still_alive(&ctx, &a.id).await
}

async fn scheduler_state_other_connection(ctx: Ctx) -> Outcome {
    let v = crate::kit::versions::highest(&ctx);
    let (a, mut b) = two_workers(&ctx, v).await?;
    b.conn
        .send(&Envelope::Send(D::WorkerSchedulerStateResponse(
            WorkerSchedulerStateResponse::new(a.id.clone(), vec![], vec![]),
        )))
        .await?;
    b.conn
        .expect_closed(
            crate::kit::common::reaction_wait(&ctx),
            "the connection closed (a WorkerSchedulerStateResponse naming another connection's worker refused)",
        )
        .await?;
    still_alive(&ctx, &a.id).await
}

async fn executor_state_other_worker(ctx: Ctx) -> Outcome {
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
        .expect_or_close::<D, Envelope<D>>(wait(&ctx), want, |e| match e {
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

async fn second_worker_not_registered(ctx: Ctx) -> Outcome {
    let v = crate::kit::versions::highest(&ctx);
    let mut a = worker(&ctx, "worker", 0, 0, v).await?;
    let other = format!("{}-second", a.id);
    a.conn
        .send(&Envelope::Send(register_worker_msg(
            &other, &a.host, 1, 0, 0,
        )))
        .await?;
    let want = format!("no RegisteredWorker for {other} over the first worker's connection");
    a.conn
        .expect_none::<D>(ctx.settings.quiet, &want, |e| {
            matches!(e, Envelope::Send(D::RegisteredWorker(_)))
        })
        .await?;
    let s = state(&ctx).await?;
    check(
        !s.workers.iter().any(|w| w.id == other),
        format!("no worker {other} in the master's state"),
        "the second worker registered",
    )
}

async fn driver_state_other_worker(ctx: Ctx) -> Outcome {
    let mut a = worker(&ctx, "worker-a", 2, 4096, Version::V2).await?;
    let mut b = worker(&ctx, "worker-b", 0, 0, Version::V2).await?;
    let (_client, r) = submit(&ctx).await?;
    let id = r
        .driver_id
        .clone()
        .ok_or_else(|| fail("a driver id in SubmitDriverResponse", format!("{r:?}")))?;
    a.conn
        .expect::<D, ()>(wait(&ctx), "LaunchDriver for the driver", |e| {
            matches!(e, Envelope::Send(D::LaunchDriver(l)) if l.driver_id == id).then_some(())
        })
        .await?;
    b.conn
        .send(&Envelope::Send(D::DriverStateChanged(
            DriverStateChanged::new(id.clone(), sparkwire::messages::DriverState::Failed),
        )))
        .await?;
    b.conn
        .expect_closed(
            crate::kit::common::reaction_wait(&ctx),
            "the connection closed (a DriverStateChanged for a driver launched on another worker refused)",
        )
        .await?;
    let s = state(&ctx).await?;
    let d = s.active_drivers.iter().find(|d| d.id == id);
    check(
        d.is_some_and(|d| {
            d.state == sparkwire::messages::DriverState::Running
                && d.worker_id.as_deref() == Some(a.id.as_str())
        }),
        format!("driver {id} still active, RUNNING on {}", a.id),
        format!("{:?}", d.map(|d| (d.state, d.worker_id.clone()))),
    )
}

async fn not_owner_close(ctx: Ctx) -> Outcome {
    let a = worker(&ctx, "worker-a", 0, 0, Version::V2).await?;
    let n = crate::kit::common::unique();
    let port = 20000 + (n % 40000) as i32;
    let id = format!("worker-20250101120000-127.0.0.1-{port}-{n}");
    let (mut b, taken) = crate::kit::common::offering_close_reason(
        &ctx,
        addr(&ctx)?,
        "worker-b",
        &[Version::V2],
        Role::Worker,
        id.clone(),
    )
    .await?;
    if !taken {
        return Err(Failure::Skipped(
            "the master does not take closeReason".into(),
        ));
    }
    b.send(&Envelope::Send(register_worker_msg(
        &id,
        "127.0.0.1",
        port,
        0,
        0,
    )))
    .await?;
    b.expect::<D, ()>(wait(&ctx), "RegisteredWorker", |e| {
        matches!(e, Envelope::Send(D::RegisteredWorker(_))).then_some(())
    })
    .await?;
    b.send(&Envelope::Send(D::Heartbeat(Heartbeat::new(
        a.id.clone(),
        worker_ref(&a.host, 1),
    ))))
    .await?;
    let want = "a close envelope of kind NotOwner (or, strictly, RuleViolation), then the close";
    let reason = crate::kit::server::close_envelope(&ctx, &mut b, want).await?;
    check(
        reason.kind == "NotOwner" || reason.kind == "RuleViolation",
        want,
        format!("{reason:?}"),
    )
}
