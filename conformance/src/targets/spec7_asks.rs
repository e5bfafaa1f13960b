//! `--target master`, SPEC §7.1: the asks Spark's `Master` answers from any client peer.
//! `RequestMasterState`, `RequestReadyz`, `RequestClearCompletedDriversAndApps` and
//! `DecommissionWorkersOnHosts` are answered
//! to a `driver-client` as to a `ui` (definition.json: from `driver-client` or `ui`; Spark's
//! `deploy.Client` asks both kinds over one connection). One function per case.

use std::time::Duration;

use sparkwire::messages::deploy::{
    DecommissionWorkersOnHosts, RequestClearCompletedDriversAndApps, RequestMasterState,
    RequestReadyz,
};
use sparkwire::messages::{DeployMessage, Version};
use sparkwire::wire::handshake::Role;
use sparkwire::wire::{Envelope, Reply};

use crate::case::{run, Case, Target};
use crate::env::Ctx;
use crate::kit::common::wait;
use crate::kit::master::open;
use crate::kit::versions::*;
use crate::verdict::{check, Level, Outcome};

type D = DeployMessage;

/// Every case of SPEC §7.1 about client asks for the master, added to `cs`.
pub fn add(cs: &mut Vec<Case>) {
    cs.push(Case {
        id: "spec/7.1/driver-client/master-state".into(),
        level: Level::Must,
        targets: vec![Target::Master],
        timeout: Duration::from_secs(10),
        requirement: "SPEC §7.1, \"`RequestMasterState`, `RequestReadyz`, `RequestClearCompletedDriversAndApps`, ... and their \
            answers | from `ui` only ... | from `driver-client` or `ui`\": a driver client's RequestMasterState is \
                answered with a MasterStateResponse, as a UI's is".into(),
        body: run(master_state),
        ..Case::default()
    });
    cs.push(Case {
        id: "spec/7.1/driver-client/readyz".into(),
        level: Level::Must,
        targets: vec![Target::Master],
        timeout: Duration::from_secs(10),
        requirement: "SPEC §7.1 (RequestReadyz \"from `driver-client` or `ui`\"): a driver client's RequestReadyz is answered with \
            a bool reply, true from the active master, as a UI's is (flow/master/ui/readyz)".into(),
        body: run(readyz),
        ..Case::default()
    });
    cs.push(Case {
        id: "spec/7.1/driver-client/clear-completed".into(),
        level: Level::Must,
        targets: vec![Target::Master],
        timeout: Duration::from_secs(10),
        requirement: "SPEC §7.1 (RequestClearCompletedDriversAndApps \"from `driver-client` or `ui`\"): a driver client's \
            RequestClearCompletedDriversAndApps is answered with a bool reply, as a UI's is \
                (flow/master/ui/clear-completed)".into(),
        body: run(clear_completed),
        ..Case::default()
    });
    cs.push(Case {
        id: "spec/7.1/driver-client/decommission-hosts".into(),
        level: Level::Must,
        targets: vec![Target::Master],
        timeout: Duration::from_secs(10),
        requirement: "SPEC §7.1 (DecommissionWorkersOnHosts \"from `driver-client` or `ui`\"; definition.json: reply i32, how many \
            workers it decommissioned): a driver client's DecommissionWorkersOnHosts naming a host no worker is on is \
                answered with the integer 0".into(),
        body: run(decommission_hosts),
        ..Case::default()
    });
}

/// Asks `m` as a driver client at `version`, ask id 3, and returns the reply.
async fn ask_as_driver_client(
    ctx: &Ctx,
    version: Version,
    m: D,
    want: &str,
) -> Result<Reply<D>, crate::verdict::Failure> {
    let mut c = open(ctx, Role::DriverClient, "driver-client", "", version).await?;
    c.send(&Envelope::Ask { id: 3, message: m }).await?;
    c.expect::<D, Reply<D>>(wait(ctx), want, |e| match e {
        Envelope::Reply { id: 3, reply } => Some(reply.clone()),
        _ => None,
    })
    .await
}

async fn master_state(ctx: Ctx) -> Outcome {
    let want = "a MasterStateResponse reply to ask 3";
    let m = D::RequestMasterState(RequestMasterState::new());
    let r = ask_as_driver_client(&ctx, highest(&ctx), m, want).await?;
    check(
        matches!(r, Reply::Message(D::MasterStateResponse(_))),
        want,
        format!("{r:?}"),
    )
}

async fn readyz(ctx: Ctx) -> Outcome {
    let want = "a bool reply true to ask 3";
    let r = ask_as_driver_client(
        &ctx,
        Version::V2,
        D::RequestReadyz(RequestReadyz::new()),
        want,
    )
    .await?;
    check(matches!(r, Reply::Bool(true)), want, format!("{r:?}"))
}

async fn clear_completed(ctx: Ctx) -> Outcome {
    let want = "a bool reply to ask 3";
    let r = ask_as_driver_client(
        &ctx,
        Version::V2,
        D::RequestClearCompletedDriversAndApps(RequestClearCompletedDriversAndApps::new()),
        want,
    )
    .await?;
    check(matches!(r, Reply::Bool(_)), want, format!("{r:?}"))
}

async fn decommission_hosts(ctx: Ctx) -> Outcome {
    let want = "an integer reply 0 to ask 3";
    let r = ask_as_driver_client(
        &ctx,
        Version::V2,
        D::DecommissionWorkersOnHosts(DecommissionWorkersOnHosts::new(vec![
            "no-worker-here.invalid".into(),
        ])),
        want,
    )
    .await?;
    check(matches!(r, Reply::Int(0)), want, format!("{r:?}"))
}
