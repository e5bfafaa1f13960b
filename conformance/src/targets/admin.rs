//! `--target master`, the admin secret: SPEC §13 (who may change the master's state from a UI)
//! and handshake.md §10.1 (the admin proof). Each case starts a server of its own holding a
//! shared secret and, but one, an admin secret (`--spawn-server`, `{secret_file}` and
//! `{admin_secret_file}`), both drawn by the suite. One function per case.

use std::time::Duration;

use sparkwire::messages::deploy::{
    DecommissionWorkersOnHosts, RequestClearCompletedDriversAndApps, RequestDriverStatus,
    RequestKillAllDrivers, RequestSubmitDriver,
};
use sparkwire::messages::{DeployMessage, DriverDescription, DriverState, Family, Version};
use sparkwire::wire::handshake::{encode_hello, Answer, Hello, RefusalReason, Role, Secret};
use sparkwire::wire::{Envelope, Reply};

use crate::case::{run, Case, Target};
use crate::env::Ctx;
use crate::kit::common::wait;
use crate::kit::master::{app_desc, register_worker_msg};
use crate::kit::own_server::{served, Server, Settings};
use crate::peer::Conn;
use crate::verdict::{check, fail, Failure, Level, Outcome};

type D = DeployMessage;

/// Every case of this file, added to `cs`.
pub fn add(cs: &mut Vec<Case>) {
    cs.push(Case {
        id: "spec/13/admin/kill-all-denied".into(),
        level: Level::Must,
        targets: vec![Target::Master],
        timeout: Duration::from_secs(10),
        requirement: "SPEC §13, \"Any other peer's ask is answered with a failure (`Envelope` failure, class \
            `java.lang.SecurityException`, message beginning `Permission denied:` and naming the message); nothing \
                changes and the connection stays open\": with an admin secret, an authenticated UI without the admin \
                    proof asking RequestKillAllDrivers gets that failure, a submitted driver is still SUBMITTED, and \
                        the UI is still served".into(),
        body: run(kill_all_denied),
        ..Case::default()
    });
    cs.push(Case {
        id: "spec/13/admin/decommission-denied".into(),
        level: Level::Must,
        targets: vec![Target::Master],
        timeout: Duration::from_secs(10),
        requirement: "SPEC §13 (as spec/13/admin/kill-all-denied) for DecommissionWorkersOnHosts: the failure names the message, \
            the worker registered on that host is not told DecommissionWorker, and the UI is still served".into(),
        body: run(decommission_denied),
        ..Case::default()
    });
    cs.push(Case {
        id: "spec/13/admin/clear-completed-denied".into(),
        level: Level::Must,
        targets: vec![Target::Master],
        timeout: Duration::from_secs(10),
        requirement: "SPEC §13 (as spec/13/admin/kill-all-denied) for RequestClearCompletedDriversAndApps: the failure names the \
            message, and the UI is still served".into(),
        body: run(clear_completed_denied),
        ..Case::default()
    });
    cs.push(Case {
        id: "spec/13/admin/admin-allowed".into(),
        level: Level::Must,
        targets: vec![Target::Master],
        timeout: Duration::from_secs(10),
        requirement: "SPEC §13, \"a shared secret and an **admin secret** | only a peer that also proved the admin secret in its \
            handshake\" may send them: a UI that proved the admin secret asking RequestKillAllDrivers is answered \
                with a KillAllDriversResponse".into(),
        body: run(admin_allowed),
        ..Case::default()
    });
    cs.push(Case {
        id: "handshake/10.1/admin-proof-ignored".into(),
        level: Level::Must,
        targets: vec![Target::Master],
        timeout: Duration::from_secs(10),
        requirement: "handshake.md §10.1, \"An admin proof sent to a server without an admin secret is ignored (the peer is not an \
            admin)\": a server holding only a shared secret accepts a UI whose proof frame carries an admin proof, \
                and serves it".into(),
        body: run(admin_proof_ignored),
        ..Case::default()
    });
    cs.push(Case {
        id: "handshake/10.1/wrong-admin-proof-refused".into(),
        level: Level::Must,
        targets: vec![Target::Master],
        timeout: Duration::from_secs(10),
        requirement: "handshake.md §10.1, \"a wrong admin proof is refused with `authFailed`\" (and step 4, \"if either does not \
            verify it refuses with `authFailed`\"): a server holding an admin secret refuses a UI whose admin proof \
                was made with another admin secret with authFailed".into(),
        body: run(wrong_admin_proof_refused),
        ..Case::default()
    });
}

async fn admin_server(ctx: &Ctx) -> Result<Server, Failure> {
    Server::start(
        ctx,
        Settings {
            secret: true,
            admin: true,
            ..Settings::default()
        },
        &["secret_file", "admin_secret_file"],
    )
    .await
}

/// Asks `m` as ask `id` on `c` and expects the refusal of SPEC §13 naming `name`.
async fn denied(ctx: &Ctx, c: &mut Conn, id: u64, m: D) -> Outcome {
    let name = m.name();
    c.send(&Envelope::Ask { id, message: m }).await?;
    let want = format!(
        "a failure for ask {id} of class java.lang.SecurityException, its message beginning `Permission denied:` and \
            naming {name}"
    );
    let answer = c
        .expect::<D, Envelope<D>>(wait(ctx), &want, |e| match e {
            Envelope::Failure { id: r, .. } | Envelope::Reply { id: r, .. } if *r == id => {
                Some(e.clone())
            }
            _ => None,
        })
        .await?;
    match answer {
        Envelope::Failure { error, .. } => check(
            error.class_name == "java.lang.SecurityException"
                && error.message.starts_with("Permission denied:")
                && error.message.contains(name),
            want,
            format!("a failure {}: {}", error.class_name, error.message),
        ),
        other => Err(fail(want, crate::peer::envelope_label(&other))),
    }
}

async fn kill_all_denied(ctx: Ctx) -> Outcome {
    let s = admin_server(&ctx).await?;
    // A driver submitted first: with no worker it stays SUBMITTED unless something kills it.
    let (mut client, _) = s
        .open(&ctx, Role::DriverClient, "driver-client", None)
        .await?;
    let desc = DriverDescription::new(
        "file:/tmp/app.jar".into(),
        256,
        1,
        false,
        app_desc(None, 0, None).command,
        vec![],
    );
    client
        .send(&Envelope::Ask {
            id: 1,
            message: D::RequestSubmitDriver(RequestSubmitDriver::new(desc)),
        })
        .await?;
    let driver = client
        .expect::<D, Option<String>>(wait(&ctx), "SubmitDriverResponse", |e| match e {
            Envelope::Reply {
                id: 1,
                reply: Reply::Message(D::SubmitDriverResponse(r)),
            } => Some(r.driver_id.clone()),
            _ => None,
        })
        .await?
        .ok_or_else(|| fail("a driver id in the SubmitDriverResponse", "none"))?;
    let (mut ui, _) = s.open(&ctx, Role::Ui, "ui", None).await?;
    denied(
        &ctx,
        &mut ui,
        2,
        D::RequestKillAllDrivers(RequestKillAllDrivers::new()),
    )
    .await?;
    client
        .send(&Envelope::Ask {
            id: 3,
            message: D::RequestDriverStatus(RequestDriverStatus::new(driver.clone())),
        })
        .await?;
    let state = client
        .expect::<D, Option<DriverState>>(wait(&ctx), "DriverStatusResponse", |e| match e {
            Envelope::Reply {
                id: 3,
                reply: Reply::Message(D::DriverStatusResponse(r)),
            } => Some(r.state),
            _ => None,
        })
        .await?;
    check(
        state == Some(DriverState::Submitted),
        format!("driver {driver} still SUBMITTED: nothing changed"),
        format!("{state:?}"),
    )?;
    served(&ctx, &mut ui, 4).await
}

async fn decommission_denied(ctx: Ctx) -> Outcome {
    let s = admin_server(&ctx).await?;
    let n = crate::kit::common::unique();
    let port = 20000 + (n % 40000) as i32;
    let host = "127.0.0.1";
    let id = format!("worker-20250101120000-{host}-{port}-{n}");
    let (mut w, _) = s.open(&ctx, Role::Worker, "worker", None).await?;
    w.send(&Envelope::Send(register_worker_msg(
        &id, host, port, 1, 512,
    )))
    .await?;
    w.expect::<D, ()>(wait(&ctx), "RegisteredWorker", |e| {
        matches!(e, Envelope::Send(D::RegisteredWorker(_))).then_some(())
    })
    .await?;
    let (mut ui, _) = s.open(&ctx, Role::Ui, "ui", None).await?;
    denied(
        &ctx,
        &mut ui,
        2,
        D::DecommissionWorkersOnHosts(DecommissionWorkersOnHosts::new(vec![host.into()])),
    )
    .await?;
    w.expect_none::<D>(
        ctx.settings.quiet,
        "no DecommissionWorker for the worker: nothing changed",
        |e| matches!(e, Envelope::Send(D::DecommissionWorker(_))),
    )
    .await?;
    served(&ctx, &mut ui, 3).await
}

async fn clear_completed_denied(ctx: Ctx) -> Outcome {
    let s = admin_server(&ctx).await?;
    let (mut ui, _) = s.open(&ctx, Role::Ui, "ui", None).await?;
    denied(
        &ctx,
        &mut ui,
        2,
        D::RequestClearCompletedDriversAndApps(RequestClearCompletedDriversAndApps::new()),
    )
    .await?;
    served(&ctx, &mut ui, 3).await
}

async fn admin_allowed(ctx: Ctx) -> Outcome {
    let s = admin_server(&ctx).await?;
    let (mut ui, _) = s.open(&ctx, Role::Ui, "admin-ui", s.admin.as_ref()).await?;
    ui.send(&Envelope::Ask {
        id: 2,
        message: D::RequestKillAllDrivers(RequestKillAllDrivers::new()),
    })
    .await?;
    let want = "a KillAllDriversResponse to the admin's RequestKillAllDrivers";
    let got = ui
        .expect::<D, Envelope<D>>(wait(&ctx), want, |e| match e {
            Envelope::Failure { id: 2, .. } | Envelope::Reply { id: 2, .. } => Some(e.clone()),
            _ => None,
        })
        .await?;
    check(
        matches!(
            got,
            Envelope::Reply {
                reply: Reply::Message(D::KillAllDriversResponse(_)),
                ..
            }
        ),
        want,
        crate::peer::envelope_label(&got),
    )
}

/// An admin secret no server of these cases holds.
fn another_admin_secret() -> Result<Secret, Failure> {
    sparkwire::connection::generate_secret()
        .map_err(|e| fail("a secret the suite draws", e.to_string()))
}

async fn admin_proof_ignored(ctx: Ctx) -> Outcome {
    let s = Server::start(
        &ctx,
        Settings {
            secret: true,
            ..Settings::default()
        },
        &["secret_file"],
    )
    .await?;
    let admin = another_admin_secret()?;
    let (mut ui, _) = s
        .open(&ctx, Role::Ui, "ui-with-admin-proof", Some(&admin))
        .await?;
    served(&ctx, &mut ui, 1).await
}

async fn wrong_admin_proof_refused(ctx: Ctx) -> Outcome {
    let s = admin_server(&ctx).await?;
    let admin = another_admin_secret()?;
    let mut c = Conn::connect(s.addr, "ui-wrong-admin", Role::Ui, &ctx.log).await?;
    let hello = Hello::new(&[Version::V2], Role::Ui, "").with_auth(crate::peer::nonce()?);
    let mut body = Vec::new();
    encode_hello(&hello, &mut body);
    c.send_frame(&body).await?;
    let want = "a refusal authFailed of a wrong admin proof";
    match c
        .read_answer_as(&body, s.secret.as_ref(), Some(&admin), wait(&ctx))
        .await?
    {
        Answer::Refused(r) if r.reason == RefusalReason::AuthFailed => Ok(()),
        other => Err(fail(want, format!("{other:?}"))),
    }
}
