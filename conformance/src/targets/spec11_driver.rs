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

use sparkwire::messages::deploy::RegisteredApplication;
use sparkwire::messages::{Addr, DeployMessage, EndpointRef};
use sparkwire::wire::handshake::{Hello, Role, CLOSE_REASON};
use sparkwire::wire::Envelope;

use crate::case::{Cases, Failure, Level, Outcome};
use crate::env::Ctx;
use crate::peer::Conn;
use crate::targets::common::{unique, wait};
use crate::targets::driver::{registered, SMALL};
use crate::targets::spawned;
use crate::targets::spec11::{refused_with, replays, slug, stays_open, At, Replay};

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
pub fn add(cs: &mut Cases) {
    for r in replays(&EXECUTOR_PORT) {
        let id = format!("spec/11/live/{}/{}", r.file, slug(&r.name));
        let requirement = match &r.error {
            Some(e) => format!(
                "the driver decides the {}.json vector \"{}\" as SPEC §11 and §8 do when an executor sends it on a fresh connection to its executor port: refused ({e}), the connection closed (where the handshake agreed on closeReason, with a close envelope of kind {e})",
                r.file, r.name
            ),
            None => format!(
                "the driver decides the {}.json vector \"{}\" as SPEC §11 does when an executor sends it on a fresh connection to its executor port: taken, the connection kept open",
                r.file, r.name
            ),
        };
        cs.add(id, Level::Must, requirement, move |ctx: Ctx| {
            let r = r.clone();
            async move { to_executor_port(ctx, r).await }
        });
    }
    for r in replays(&APP_CLIENT) {
        let id = format!("spec/11/live/app-client/{}/{}", r.file, slug(&r.name));
        let requirement = match &r.error {
            Some(e) => format!(
                "the driver's application client decides the {}.json vector \"{}\" as SPEC §11 and §8 do when its master sends it once the application is registered: refused ({e}), the connection to its master closed (a close envelope, if one comes, of kind {e})",
                r.file, r.name
            ),
            None => format!(
                "the driver's application client decides the {}.json vector \"{}\" as SPEC §11 does when its master sends it once the application is registered: taken, the connection to its master kept open",
                r.file, r.name
            ),
        };
        cs.add(id, Level::Must, requirement, move |ctx: Ctx| {
            let r = r.clone();
            async move { to_app_client(ctx, r).await }
        });
    }
}

/// A fresh executor connection to a registered driver's executor port, at the vector's version,
/// offering `closeReason`; the frame, then its verdict.
async fn to_executor_port(ctx: Ctx, r: Replay) -> Outcome {
    let d = registered(&ctx, SMALL).await?;
    let id = format!("{}", 100 + unique() % 100_000);
    let hello = Hello::new(&[r.version], Role::Executor, id).with_features(&[CLOSE_REASON]);
    let (mut c, taken) = Conn::open_with(
        d.driver_addr,
        "executor",
        hello,
        ctx.settings.secret.as_ref(),
        &ctx.log,
        wait(&ctx),
    )
    .await?;
    let agreed = taken.iter().any(|f| f == CLOSE_REASON);
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
    let run = spawned::start(&ctx, Role::Master, |given, dir| {
        vec![
            ("master_url", format!("sparkwire://{given}")),
            ("master_host", given.ip().to_string()),
            ("master_port", given.port().to_string()),
            ("work_dir", dir.display().to_string()),
            ("job", SMALL.job.to_string()),
            ("partitions", SMALL.partitions.to_string()),
            ("param", SMALL.param.to_string()),
            ("max_message_size", SMALL.max_message_size.to_string()),
            ("cores", "2".into()),
        ]
    })
    .await?;
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
    let given = run.given;
    app.send(&Envelope::Send(D::RegisteredApplication(
        RegisteredApplication::new(
            format!("app-20250101120000-{:04}", unique() % 10000),
            EndpointRef::at(
                Addr::new(given.ip().to_string(), i32::from(given.port())),
                "Master",
            ),
        ),
    )))
    .await?;
    app.send_raw(&r.frame, &format!("the vector \"{}\"", r.name))
        .await?;
    match &r.error {
        // The suite accepted the hello itself, taking no feature: no close envelope is owed.
        Some(e) => refused_with(&ctx, &mut app, e, false).await,
        None => stays_open(&ctx, &mut app, false).await,
    }
}
