//! `spec/13/…`: SPEC §13 (protocol/SPEC.md).

/// The cases about admin.
pub mod admin {
    use crate::harness::case::run;
    use crate::harness::case::Case;
    use crate::harness::case::Target;
    use crate::harness::env::Ctx;
    use crate::harness::verdict::check;
    use crate::harness::verdict::fail;
    use crate::harness::verdict::Level;
    use crate::harness::verdict::Outcome;
    use crate::kit::common::wait;
    use crate::kit::master::app_desc;
    use crate::kit::master::register_worker_msg;
    use crate::kit::own_server::served;
    use crate::kit::support::admin::*;
    use sparkwire::messages::deploy::DecommissionWorkersOnHosts;
    use sparkwire::messages::deploy::RequestClearCompletedDriversAndApps;
    use sparkwire::messages::deploy::RequestDriverStatus;
    use sparkwire::messages::deploy::RequestKillAllDrivers;
    use sparkwire::messages::deploy::RequestSubmitDriver;
    use sparkwire::messages::DeployMessage;
    use sparkwire::messages::DriverDescription;
    use sparkwire::messages::DriverState;
    use sparkwire::wire::handshake::Role;
    use sparkwire::wire::Envelope;
    use sparkwire::wire::Reply;
    use std::time::Duration;

    type D = DeployMessage;

    /// The cases of this section, each naming its targets.
    pub fn cases(cs: &mut Vec<Case>) {
        cs.push(Case {
            id: "spec/13/admin/kill-all-denied".into(),
            level: Level::Must,
            targets: vec![Target::Master],
            timeout: Duration::from_secs(10),
            quote: "SPEC §13, \"Any other peer's ask is answered with a failure (`Envelope` \
                failure, class `java.lang.SecurityException`, message beginning `Permission \
                denied:` and naming the message); nothing changes and the connection stays open\""
                .into(),
            requirement: "a UI without the admin proof asking RequestKillAllDrivers gets that \
                failure and changes nothing"
                .into(),
            body: run(kill_all_denied),
            ..Case::default()
        });
        cs.push(Case {
            id: "spec/13/admin/decommission-denied".into(),
            level: Level::Must,
            targets: vec![Target::Master],
            timeout: Duration::from_secs(10),
            quote: "SPEC §13, \"Any other peer's ask is answered with a failure\"".into(),
            requirement: "DecommissionWorkersOnHosts without the admin proof fails and \
                decommissions nothing; the UI served"
                .into(),
            body: run(decommission_denied),
            ..Case::default()
        });
        cs.push(Case {
            id: "spec/13/admin/clear-completed-denied".into(),
            level: Level::Must,
            targets: vec![Target::Master],
            timeout: Duration::from_secs(10),
            quote: "SPEC §13, \"Any other peer's ask is answered with a failure\"".into(),
            requirement:
                "RequestClearCompletedDriversAndApps without the admin proof fails naming \
                it; the UI still served"
                    .into(),
            body: run(clear_completed_denied),
            ..Case::default()
        });
        cs.push(Case {
            id: "spec/13/admin/admin-allowed".into(),
            level: Level::Must,
            targets: vec![Target::Master],
            timeout: Duration::from_secs(10),
            quote: "SPEC §13, \"a shared secret and an **admin secret** | only a peer that also \
                proved the admin secret in its handshake\""
                .into(),
            requirement: "a UI that proved the admin secret gets KillAllDriversResponse to \
                RequestKillAllDrivers"
                .into(),
            body: run(admin_allowed),
            ..Case::default()
        });
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
            crate::harness::peer::envelope_label(&got),
        )
    }
}

/// The cases about auth.
pub mod auth {
    use crate::harness::case::run;
    use crate::harness::case::Case;
    use crate::harness::case::Sharing;
    use crate::harness::case::Target;
    use crate::harness::env::Ctx;
    use crate::harness::verdict::fail;
    use crate::harness::verdict::Level;
    use crate::kit::auth::*;
    use crate::kit::endpoint::Endpoint;
    use crate::kit::support::auth::*;
    use sparkwire::messages::DeployMessage as D;
    use sparkwire::messages::Version;
    use sparkwire::wire::encode_envelope;
    use sparkwire::wire::handshake::Role;
    use sparkwire::wire::Envelope;
    use std::time::Duration;

    /// The cases of this section for `s`, an endpoint holding the shared secret.
    pub fn for_secured(cs: &mut Vec<Case>, s: Endpoint) {
        let (name, what) = (s.name, s.change().what);
        cs.push(Case {
            id: "spec/13/nothing-before-proof".into(),
            level: Level::Must,
            targets: vec![Target::Master, Target::Worker, Target::Driver],
            timeout: Duration::from_secs(10),
            sharing: Sharing::Alone,
            requirement: format!(
                "{name} with a secret takes no {what} sent in place of the proof: nothing \
                    changes"
            ),
            body: secured(&s, move |ctx: Ctx, k, g| async move {
                let mut c = challenged(&ctx, g.at.addr, g.role, "no-proof", &k).await?;
                c.conn.send_frame(&g.change).await?;
                expect_refused(&ctx, &mut c.conn, &[]).await?;
                unchanged(&g, what).await
            }),
            ..Case::default()
        });
        cs.push(Case {
            id: format!("spec/13/unauthenticated-{}", s.change().case),
            level: Level::Must,
            targets: vec![Target::Master, Target::Worker, Target::Driver],
            timeout: Duration::from_secs(10),
            sharing: Sharing::Alone,
            requirement: format!(
                "{name} with a secret refuses a {what} after a hello without auth: nothing \
                changes"
            ),
            body: secured(&s, move |ctx: Ctx, _k, g| async move {
                unauthenticated_then(&ctx, g.at.addr, g.role, "no-auth", &g.change, what).await?;
                unchanged(&g, what).await
            }),
            ..Case::default()
        });
    }

    /// The cases of this section, each naming its targets.
    pub fn cases(cs: &mut Vec<Case>) {
        cs.push(Case {
            id: "spec/13/unauthenticated-ui-kill".into(),
            level: Level::Must,
            targets: vec![Target::Master],
            timeout: Duration::from_secs(10),
            sharing: Sharing::Alone,
            requirement: "a master with a secret refuses an unauthenticated UI's \
                RequestKillAllDrivers, with no reply"
                .into(),
            body: run(|ctx: Ctx| async move {
                secret(&ctx)?;
                let mut ask = Vec::new();
                encode_envelope(
                    &Envelope::Ask {
                        id: 1,
                        message: D::RequestKillAllDrivers(
                            sparkwire::messages::deploy::RequestKillAllDrivers::new(),
                        ),
                    },
                    Version::V2,
                    &mut ask,
                )
                .map_err(|e| fail("an envelope the suite can encode", e.to_string()))?;
                unauthenticated_then(
                    &ctx,
                    master_addr(&ctx)?,
                    Role::Ui,
                    "",
                    &ask,
                    "RequestKillAllDrivers",
                )
                .await
            }),
            ..Case::default()
        });
    }
}
