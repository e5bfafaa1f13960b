//! `--target driver`, SPEC §11: decoding in detail, live, on both of a driver's connections.
//! Every decoder decision of `protocol/vectors/decoder.json` (and every invalid envelope vector
//! of `envelope.json`) that a driver can receive is replayed against a freshly started driver, on
//! a fresh connection, in a message that is otherwise legal on its route and for the role that
//! sends it (SPEC §14.1):
//!
//! - on its application client's connection to its master (the suite plays the master: the
//!   vector comes once the application is registered), the deploy-family vectors a master sends
//!   an application client (ExecutorUpdated with a version 1 field read in version 2, SPEC §11.4)
//!   and the decisions taken before a message is looked at;
//! - on its executor port (the suite plays an executor: a fresh connection of its own), the
//!   coarse-family vectors an executor sends a driver and the same decisions.
//!
//! A valid frame keeps the connection, an invalid one closes it (SPEC §8); where the handshake
//! agreed on `closeReason`, the close envelope names the vector's error (SPEC §8.1).
//!
//! Then SPEC §11.3's "a map inside a map": the one such map a sparkwire endpoint receives is a
//! version 2 StatusUpdate's `resources` (`map<string,map<string,i64>>`, executor → driver; the
//! other, RequestExecutors' `hostToLocalTaskCount`, goes to a cluster manager), sent by a
//! registered executor for the task the driver launched on it.

use std::collections::BTreeMap;

use sparkwire::messages::coarse::StatusUpdate;
use sparkwire::messages::{CoarseMessage, DeployMessage, TaskState, Version};
use sparkwire::wire::handshake::Role;
use sparkwire::wire::{encode_envelope, Envelope};

use crate::case::{run, Case, Target};
use crate::env::Ctx;
use crate::kit::common::{unique, wait};
use crate::kit::driver::{executor, registered, SMALL};
use crate::kit::replay::{refused_with, replays, slug, stays_open, At, Replay};
use crate::kit::spawned;
use crate::peer::frame;
use crate::verdict::{fail, Failure, Level, Outcome};

type D = DeployMessage;

/// The driver's executor port: what an executor sends a driver.
const EXECUTOR_PORT: At = At {
    family: "coarse",
    role: "driver",
    peers: &[Role::Executor],
};

/// The driver's application client: what a master sends it.
const APP_CLIENT: At = At {
    family: "deploy",
    role: "app-client",
    peers: &[Role::Master],
};

/// Every case of SPEC §11 for the driver: `spec/11/live/FILE/NAME` on its executor port,
/// `spec/11/live/app-client/FILE/NAME` on its application client's connection.
pub fn add(cs: &mut Vec<Case>) {
    for r in replays(&EXECUTOR_PORT) {
        let id = format!("spec/11/live/{}/{}", r.file, slug(&r.name));
        let requirement = match &r.error {
            Some(e) => format!(
                "the driver decides the {}.json vector \"{}\" as SPEC §11 and §8 do when an executor sends it on a \
                    fresh connection to its executor port: refused ({e}), the connection closed (where the handshake \
                        agreed on closeReason, with a close envelope of kind {e})",
                r.file, r.name
            ),
            None => format!(
                "the driver decides the {}.json vector \"{}\" as SPEC §11 does when an executor sends it on a fresh \
                    connection to its executor port: taken, the connection kept open",
                r.file, r.name
            ),
        };
        cs.push(Case {
            id,
            level: Level::Must,
            targets: vec![Target::Driver],
            requirement,
            body: run(move |ctx: Ctx| {
                let r = r.clone();
                async move { to_executor_port(ctx, r).await }
            }),
            ..Case::default()
        });
    }
    for r in replays(&APP_CLIENT) {
        let id = format!("spec/11/live/app-client/{}/{}", r.file, slug(&r.name));
        let requirement = match &r.error {
            Some(e) => format!(
                "the driver's application client decides the {}.json vector \"{}\" as SPEC §11 and §8 do when its \
                    master sends it once the application is registered: refused ({e}), the connection to its master \
                        closed (a close envelope, if one comes, of kind {e})",
                r.file, r.name
            ),
            None => format!(
                "the driver's application client decides the {}.json vector \"{}\" as SPEC §11 does when its master \
                    sends it once the application is registered: taken, the connection to its master kept open",
                r.file, r.name
            ),
        };
        cs.push(Case {
            id,
            level: Level::Must,
            targets: vec![Target::Driver],
            requirement,
            body: run(move |ctx: Ctx| {
                let r = r.clone();
                async move { to_app_client(ctx, r).await }
            }),
            ..Case::default()
        });
    }
}

/// The cases of a map inside a map (SPEC §11.3) on the driver's executor port.
pub fn add_nested_maps(cs: &mut Vec<Case>) {
    cs.push(Case {
        id: "spec/11.3/map-inside-map-out-of-order".into(),
        level: Level::Must,
        targets: vec![Target::Driver],
        requirement: "SPEC §11.3, \"A decoder MUST refuse, with `InvalidFields`, a map with a key given twice or out of order ... \
            at any depth (a map inside a map included)\": a registered executor's StatusUpdate (version 2) for the \
                task the driver launched on it, whose `resources` holds \
                    {\"gpu\": {\"b\": 2, \"a\": 1}}, is refused: the connection closed".into(),
        body: run(map_inside_map_out_of_order),
        ..Case::default()
    });
    cs.push(Case {
        id: "spec/11.3/map-inside-map-ascending-taken".into(),
        level: Level::Must,
        targets: vec![Target::Driver],
        requirement: "SPEC §11.3, \"A `map<K,V>` is written with its keys distinct and in ascending order\", at any depth: the \
            same StatusUpdate with {\"gpu\": {\"a\": 1, \"b\": 2}} is taken, the executor's connection kept open".into(),
        body: run(map_inside_map_ascending),
        ..Case::default()
    });
}

/// The inner map `{"a": 1, "b": 2}` as sparkwire writes it.
const INNER: [u8; 7] = [0x82, 0xa1, b'a', 0x01, 0xa1, b'b', 0x02];

/// The inner map with its keys swapped: `{"b": 2, "a": 1}`.
const INNER_SWAPPED: [u8; 7] = [0x82, 0xa1, b'b', 0x02, 0xa1, b'a', 0x01];

/// A registered executor of a registered driver, the task the driver launched on it, and the
/// frame of its RUNNING StatusUpdate whose resources are `{"gpu": INNER}`, with INNER's bytes
/// replaced by `inner`.
async fn status_with_resources(
    ctx: &Ctx,
    inner: [u8; 7],
) -> Result<
    (
        crate::kit::driver::Registered,
        crate::kit::driver::FakeExecutor,
        Vec<u8>,
    ),
    Failure,
> {
    let d = registered(ctx, SMALL).await?;
    let mut e = executor(ctx, &d, "1", 1, Version::V2).await?;
    e.launched().await?;
    let t = e.task(ctx).await?;
    let mut resources = BTreeMap::new();
    resources.insert(
        "gpu".to_string(),
        BTreeMap::from([("a".to_string(), 1i64), ("b".to_string(), 2i64)]),
    );
    let m = CoarseMessage::StatusUpdate(StatusUpdate::new(
        e.id.clone(),
        t.task_id,
        TaskState::Running,
        Vec::new().into(),
        t.cpus,
        resources,
    ));
    let mut body = Vec::new();
    encode_envelope(&Envelope::Send(m), Version::V2, &mut body)
        .map_err(|er| fail("a StatusUpdate the suite can encode", er.to_string()))?;
    let at = body
        .windows(INNER.len())
        .position(|w| w == INNER)
        .ok_or_else(|| fail("the inner resources map in the encoded frame", "not found"))?;
    body[at..at + INNER.len()].copy_from_slice(&inner);
    Ok((d, e, frame(&body)))
}

async fn map_inside_map_out_of_order(ctx: Ctx) -> Outcome {
    let (_d, mut e, bytes) = status_with_resources(&ctx, INNER_SWAPPED).await?;
    e.conn
        .send_raw(
            &bytes,
            "a StatusUpdate whose resources are {\"gpu\": {\"b\": 2, \"a\": 1}}",
        )
        .await?;
    refused_with(&ctx, &mut e.conn, "InvalidFields", false).await
}

async fn map_inside_map_ascending(ctx: Ctx) -> Outcome {
    let (_d, mut e, bytes) = status_with_resources(&ctx, INNER).await?;
    e.conn
        .send_raw(
            &bytes,
            "a StatusUpdate whose resources are {\"gpu\": {\"a\": 1, \"b\": 2}}",
        )
        .await?;
    stays_open(&ctx, &mut e.conn, false).await
}

/// A fresh executor connection to a registered driver's executor port, at the vector's version,
/// offering `closeReason`; the frame, then its verdict.
async fn to_executor_port(ctx: Ctx, r: Replay) -> Outcome {
    let d = registered(&ctx, SMALL).await?;
    let id = format!("{}", 100 + unique() % 100_000);
    let (mut c, agreed) = crate::kit::common::offering_close_reason(
        &ctx,
        d.driver_addr,
        "executor",
        &[r.version],
        Role::Executor,
        id,
    )
    .await?;
    c.send_raw(&r.frame, &format!("the vector \"{}\"", r.name))
        .await?;
    match &r.error {
        Some(e) => refused_with(&ctx, &mut c, e, agreed).await,
        None => stays_open(&ctx, &mut c, agreed).await,
    }
}

/// A freshly started driver whose application client the suite accepts at the vector's version
/// and registers; the frame, then its verdict.
async fn to_app_client(ctx: Ctx, r: Replay) -> Outcome {
    let run = crate::kit::driver::started(&ctx, SMALL).await?;
    let mut app = run.accept(&ctx, "master", Role::Master).await?;
    let hello = app.read_hello(spawned::startup(&ctx)).await?;
    if !hello.versions.contains(&u64::from(r.version.number())) {
        return Err(Failure::Skipped(format!(
            "a version {} vector, and the driver's application client does not offer version {}",
            r.version.number(),
            r.version.number()
        )));
    }
    spawned::accept(&ctx, &mut app, &hello, &[r.version], "master").await?;
    app.expect::<D, ()>(wait(&ctx), "RegisterApplication", |e| {
        matches!(e, Envelope::Send(D::RegisterApplication(_))).then_some(())
    })
    .await?;
    crate::kit::driver::registered_application(&mut app, run.given).await?;
    app.send_raw(&r.frame, &format!("the vector \"{}\"", r.name))
        .await?;
    match &r.error {
        // The suite accepted the hello itself, taking no feature: no close envelope is owed.
        Some(e) => refused_with(&ctx, &mut app, e, false).await,
        None => stays_open(&ctx, &mut app, false).await,
    }
}
