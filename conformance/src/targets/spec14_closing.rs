//! `--target master`, what a closed connection loses (SPEC §14.3, "Closing loses what was bound
//! to the connection as any closed connection does (§8)"; §8, "a master marks a worker whose
//! connection closed as lost"), and rule W5 for a decommissioned worker. One function per case;
//! each cites the sentence it checks.

use std::time::Duration;

use sparkwire::messages::deploy::*;
use sparkwire::messages::{DeployMessage, Version, WorkerState};
use sparkwire::wire::Envelope;

use crate::case::{run, Case, Sharing, Target};
use crate::env::{Ctx, Wire};
use crate::kit::master::{app, app_desc, settle, state, worker, worker_ref, Need};
use crate::peer::frame;
use crate::verdict::{check, Level, Outcome};

type D = DeployMessage;

/// Every case of this file, added to `cs`.
pub fn add(cs: &mut Vec<Case>) {
    cs.push(Case {
        id: "spec/14.3/refused-send-loses-application".into(),
        level: Level::Must,
        targets: vec![Target::Master],
        timeout: Duration::from_secs(10),
        requirement: "SPEC §14.3, \"A refused **send** closes its connection ... Closing loses what was bound to the connection as \
            any closed connection does (§8): an application client that sent a refused message loses its \
                application\": an application client whose UnregisterApplication names another connection's \
                    application is closed, its own application is no longer active, and the other one still is".into(),
        body: run(refused_send_loses_application),
        ..Case::default()
    });
    cs.push(Case {
        id: "spec/14.3/refused-send-loses-worker".into(),
        level: Level::Must,
        targets: vec![Target::Master],
        timeout: Duration::from_secs(10),
        requirement: "SPEC §14.3, \"Closing loses what was bound to the connection ... a worker is marked lost\": a registered \
            worker whose connection sends a Heartbeat naming another registered worker is closed, and the master's \
                state then shows it DEAD (or no longer lists it), while the other worker stays ALIVE".into(),
        body: run(refused_send_loses_worker),
        ..Case::default()
    });
    cs.push(Case {
        id: "spec/8/decoding-error-worker-lost".into(),
        level: Level::Must,
        targets: vec![Target::Master],
        timeout: Duration::from_secs(10),
        requirement: "SPEC §8, \"On any decoding error the receiver closes **that connection only** ... the state the endpoint \
            keeps about the peer (a registered worker ...) [is] not lost; Spark's own behaviour on a lost connection \
                applies (for example a master marks a worker whose connection closed as lost)\": a registered \
                    worker's connection that sends a frame holding 0xc1 is closed, and the master's state then shows \
                        that worker DEAD (or no longer lists it)".into(),
        body: run(decoding_error_worker_lost),
        ..Case::default()
    });
    cs.push(Case {
        id: "spec/8/decoding-error-app-finished".into(),
        level: Level::Must,
        targets: vec![Target::Master],
        timeout: Duration::from_secs(10),
        requirement: "SPEC §8, \"On any decoding error the receiver closes **that connection only** ... Spark's own behaviour on a \
            lost connection applies\" (an application whose client's connection closed is finished, rule P5's closed \
                connection): an application client's connection that sends a frame holding 0xc1 is closed, and its \
                    application is then no longer active".into(),
        body: run(decoding_error_app_finished),
        ..Case::default()
    });
    cs.push(Case {
        id: "spec/14.3/refused-creates-nothing".into(),
        level: Level::Must,
        targets: vec![Target::Master],
        timeout: Duration::from_secs(10),
        requirement: "SPEC §14.3, \"Nothing a refused message asks for happens, and no state is created for it\", for a message \
            off its route (§14.1, \"A `worker` sending `RegisterApplication` ... [is] refused\"): a registered \
                worker's RegisterApplication creates no application (none of its name, active or completed, in the \
                    master's state)".into(),
        body: run(refused_creates_nothing),
        ..Case::default()
    });
    // It registers a worker with capacity and an application: alone.
    cs.push(Case {
        id: "rules/W5/decommissioned-no-launch".into(),
        level: Level::Must,
        targets: vec![Target::Master],
        timeout: Duration::from_secs(20),
        sharing: Sharing::Alone,
        needs: vec![Need::NoOtherApplication],
        requirement: "rules.md W5, \"The master sends LaunchExecutor and LaunchDriver only to a worker registered on that \
            connection and ALIVE: not lost (DEAD) and not [decommissioned]\": a worker with room that sent \
                WorkerDecommissioning naming itself is shown DECOMMISSIONED (on sparkwire's wire) and gets no \
                    LaunchExecutor when an application asking for executors registers".into(),
        body: run(decommissioned_no_launch),
        ..Case::default()
    });
}

/// Waits until worker `id` is DEAD in the master's state, or no longer listed.
async fn lost(ctx: &Ctx, id: &str) -> Outcome {
    settle(
        ctx,
        || async {
            let s = state(ctx).await?;
            Ok(s.workers
                .iter()
                .find(|w| w.id == id)
                .is_none_or(|w| w.state == WorkerState::Dead))
        },
        &format!("worker {id} DEAD in the master's state, or no longer listed"),
    )
    .await
}

async fn refused_send_loses_application(ctx: Ctx) -> Outcome {
    let (_a, a_id) = app(&ctx, "app-a", app_desc(Some(1), 64, Some(0)), Version::V2).await?;
    let (mut b, b_id) = app(&ctx, "app-b", app_desc(Some(1), 64, Some(0)), Version::V2).await?;
    b.send(&Envelope::Send(D::UnregisterApplication(
        UnregisterApplication::new(a_id.clone()),
    )))
    .await?;
    b.expect_closed(
        crate::kit::common::reaction_wait(&ctx),
        "the connection closed (UnregisterApplication of another connection's application refused)",
    )
    .await?;
    settle(
        &ctx,
        || async {
            let s = state(&ctx).await?;
            Ok(!s.active_apps.iter().any(|x| x.id == b_id))
        },
        &format!("{b_id}, the refused connection's application, no longer active"),
    )
    .await?;
    let s = state(&ctx).await?;
    check(
        s.active_apps.iter().any(|x| x.id == a_id),
        format!("{a_id} still active"),
        "finished",
    )
}

async fn refused_send_loses_worker(ctx: Ctx) -> Outcome {
    let a = worker(&ctx, "worker-a", 0, 0, Version::V2).await?;
    let mut b = worker(&ctx, "worker-b", 0, 0, Version::V2).await?;
    b.conn
        .send(&Envelope::Send(D::Heartbeat(Heartbeat::new(
            a.id.clone(),
            worker_ref(&a.host, 1),
        ))))
        .await?;
    b.conn
        .expect_closed(
            crate::kit::common::reaction_wait(&ctx),
            "the connection closed (a Heartbeat naming another connection's worker refused)",
        )
        .await?;
    lost(&ctx, &b.id).await?;
    let s = state(&ctx).await?;
    let w = s.workers.iter().find(|w| w.id == a.id);
    check(
        w.is_some_and(|w| w.state == WorkerState::Alive),
        format!("worker {} ALIVE", a.id),
        format!("{:?}", w.map(|w| w.state)),
    )
}

async fn decoding_error_worker_lost(ctx: Ctx) -> Outcome {
    let v = crate::kit::versions::highest(&ctx);
    let mut w = worker(&ctx, "worker", 0, 0, v).await?;
    w.conn
        .send_raw(&frame(&[0xc1]), "a frame holding the reserved marker 0xc1")
        .await?;
    w.conn
        .expect_closed(
            crate::kit::common::reaction_wait(&ctx),
            "the connection closed (InvalidMessagePack)",
        )
        .await?;
    lost(&ctx, &w.id).await
}

async fn decommissioned_no_launch(ctx: Ctx) -> Outcome {
    let mut w = worker(&ctx, "worker", 2, 4096, Version::V2).await?;
    w.conn
        .send(&Envelope::Send(D::WorkerDecommissioning(
            WorkerDecommissioning::new(w.id.clone(), worker_ref(&w.host, 1)),
        )))
        .await?;
    let id = w.id.clone();
    if ctx.log.wire() == Wire::Sparkwire {
        crate::kit::master::settle_within(
            crate::kit::common::reaction_wait(&ctx),
            || async {
                let s = state(&ctx).await?;
                Ok(s.workers
                    .iter()
                    .any(|x| x.id == id && x.state == WorkerState::Decommissioned))
            },
            &format!("worker {id} DECOMMISSIONED in the master's state"),
        )
        .await?;
    } else {
        // Spark's MasterStateResponse shows every worker ALIVE (WorkerInfo's state is transient
        // in its Java serialization): the master gets the quiet time to take the message instead.
        tokio::time::sleep(ctx.settings.quiet).await;
    }
    let (_app, app_id) = app(&ctx, "app", app_desc(Some(1), 64, None), Version::V2).await?;
    w.conn
        .expect_none::<D>(
            ctx.settings.quiet * 3,
            "no LaunchExecutor to the decommissioned worker",
            |e| matches!(e, Envelope::Send(D::LaunchExecutor(l)) if l.app_id == app_id),
        )
        .await
}

async fn decoding_error_app_finished(ctx: Ctx) -> Outcome {
    let v = crate::kit::versions::highest(&ctx);
    let (mut c, id) = app(&ctx, "app", app_desc(Some(1), 64, Some(0)), v).await?;
    c.send_raw(&frame(&[0xc1]), "a frame holding the reserved marker 0xc1")
        .await?;
    c.expect_closed(
        crate::kit::common::reaction_wait(&ctx),
        "the connection closed (InvalidMessagePack)",
    )
    .await?;
    settle(
        &ctx,
        || async { Ok(!state(&ctx).await?.active_apps.iter().any(|a| a.id == id)) },
        &format!("{id} no longer active"),
    )
    .await
}

async fn refused_creates_nothing(ctx: Ctx) -> Outcome {
    let mut w = worker(&ctx, "worker", 0, 0, Version::V2).await?;
    let name = format!("refused-{}", crate::kit::common::unique());
    let mut desc = app_desc(Some(1), 64, Some(0));
    desc.name = name.clone();
    let port = 40000 + (crate::kit::common::unique() % 20000) as i32;
    w.conn
        .send(&Envelope::Send(D::RegisterApplication(
            RegisterApplication::new(
                desc,
                sparkwire::messages::EndpointRef::at(
                    sparkwire::messages::Addr::new("127.0.0.1", port),
                    "AppClient",
                ),
            ),
        )))
        .await?;
    w.conn
        .expect_none::<D>(
            ctx.settings.quiet,
            "no RegisteredApplication to a worker",
            |e| matches!(e, Envelope::Send(D::RegisteredApplication(_))),
        )
        .await?;
    let s = state(&ctx).await?;
    check(
        !s.active_apps
            .iter()
            .chain(s.completed_apps.iter())
            .any(|a| a.desc.name == name),
        format!("no application named {name} in the master's state"),
        "an application created by a worker's RegisterApplication",
    )
}
