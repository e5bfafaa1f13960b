//! `--target master`, SPEC §1: all traffic between two endpoints travels over the connection
//! the client opened. One function per case; each cites the sentence it checks.

use std::net::SocketAddr;
use std::time::Duration;

use sparkwire::messages::{DeployMessage, Version};
use sparkwire::wire::handshake::Role;
use sparkwire::wire::Envelope;

use crate::case::{run, Case, Sharing, Target};
use crate::env::Ctx;
use crate::kit::common::wait;
use crate::kit::master::{app, app_desc, open, register_worker_msg, settle, state};
use crate::peer::Listener;
use crate::verdict::{fail, Level, Outcome};

type D = DeployMessage;

/// Every case of this file, added to `cs`.
pub fn add(cs: &mut Vec<Case>) {
    // It registers a worker with capacity and an application that takes it: alone.
    cs.push(Case {
        id: "spec/1/one-connection".into(),
        level: Level::Must,
        targets: vec![Target::Master],
        timeout: Duration::from_secs(10),
        sharing: Sharing::Alone,
        requirement: "SPEC §1, \"As in Spark, all traffic between two endpoints travels over the connection the client opened: the \
            master answers a worker, and later sends it `LaunchExecutor`, over the worker's own connection\": a \
                worker registered at an address where the suite listens gets RegisteredWorker and, once an \
                    application asks for an executor, LaunchExecutor over the connection it opened, and the master \
                        opens no connection to that address".into(),
        body: run(one_connection),
        ..Case::default()
    });
}

/// A listener on a loopback address of its own (127.0.0.2), where no other case's worker says
/// it listens; 127.0.0.1 where the host has no such address.
async fn advertised(ctx: &Ctx) -> Result<Listener, crate::verdict::Failure> {
    for host in [[127, 0, 0, 2], [127, 0, 0, 1]] {
        if let Ok(l) = Listener::bind(SocketAddr::from((host, 0)), &ctx.log).await {
            return Ok(l);
        }
    }
    Err(fail(
        "a listening socket on loopback",
        "none could be bound",
    ))
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
