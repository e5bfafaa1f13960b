//! `spec/1/…`: SPEC §1 (protocol/SPEC.md).

use crate::harness::case::run;
use crate::harness::case::Case;
use crate::harness::case::Sharing;
use crate::harness::case::Target;
use crate::harness::env::Ctx;
use crate::harness::verdict::fail;
use crate::harness::verdict::Level;
use crate::harness::verdict::Outcome;
use crate::kit::common::wait;
use crate::kit::master::app;
use crate::kit::master::app_desc;
use crate::kit::master::open;
use crate::kit::master::register_worker_msg;
use crate::kit::master::settle;
use crate::kit::master::state;
use crate::kit::support::one_connection::*;
use sparkwire::messages::DeployMessage;
use sparkwire::messages::Version;
use sparkwire::wire::handshake::Role;
use sparkwire::wire::Envelope;
use std::time::Duration;

type D = DeployMessage;

/// The cases of this section, each naming its targets.
pub fn cases(cs: &mut Vec<Case>) {
    // It registers a worker with capacity and an application that takes it: alone.
    cs.push(Case {
        id: "spec/1/one-connection".into(),
        level: Level::Must,
        targets: vec![Target::Master],
        timeout: Duration::from_secs(10),
        sharing: Sharing::Alone,
        quote: "SPEC §1, \"As in Spark, all traffic between two endpoints travels over the \
            connection the client opened: the master answers a worker, and later sends it \
            `LaunchExecutor`, over the worker's own connection\""
            .into(),
        requirement: "a worker gets RegisteredWorker and LaunchExecutor over its own connection; \
            the master never dials it"
            .into(),
        body: run(one_connection),
        ..Case::default()
    });
}

async fn one_connection(ctx: Ctx) -> Outcome {
    settle(
        &ctx,
        || async { Ok(state(&ctx).await?.active_apps.is_empty()) },
        "no application of an earlier case still active",
    )
    .await?;
    let listener = advertised(&ctx).await?;
    let at = listener.addr();
    let (host, port) = (at.ip().to_string(), i32::from(at.port()));
    let id = format!("worker-20250101120000-{host}-{port}");
    let mut w = open(&ctx, Role::Worker, "worker", &id, Version::V2).await?;
    w.send(&Envelope::Send(register_worker_msg(
        &id, &host, port, 1, 1024,
    )))
    .await?;
    w.expect::<D, ()>(
        wait(&ctx),
        "RegisteredWorker over the worker's own connection",
        |e| matches!(e, Envelope::Send(D::RegisteredWorker(_))).then_some(()),
    )
    .await?;
    let (_app, app_id) = app(&ctx, "app", app_desc(Some(1), 64, Some(1)), Version::V2).await?;
    w.expect::<D, ()>(
        wait(&ctx),
        "LaunchExecutor for the application over the worker's own connection",
        |e| match e {
            Envelope::Send(D::LaunchExecutor(l)) if l.app_id == app_id => Some(()),
            _ => None,
        },
    )
    .await?;
    match listener
        .accept(ctx.settings.quiet, "dialled", Role::Master, "")
        .await
    {
        Ok(_) => Err(fail(
            format!("no connection to the worker's advertised address {at}"),
            "the master dialled it",
        )),
        Err(_) => Ok(()),
    }
}
