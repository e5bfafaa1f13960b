//! The master's flows with one client at a time, which run beside the other cases: workers'
//! registrations (rules.md W3, W4), applications' (P3, P5), the UI's asks, drivers submitted,
//! asked about and killed (D1, D6). Each registers only what no other case can take or be
//! taken by (workers without cores or memory; applications, and drivers, no such worker can
//! run): [`Need::OwnRegistrations`]. One function per case, registered in report order by
//! [`add`].

use super::*;

/// The flows with one client, in report order.
pub(super) fn add(cs: &mut Vec<Case>) {
    cs.push(Case {
        id: "flow/master/registration/registered".into(),
        level: Level::Must,
        targets: vec![Target::Master],
        timeout: Duration::from_secs(10),
        needs: vec![Need::OwnRegistrations],
        requirement: "the master answers a \
        worker's RegisterWorker with RegisteredWorker, duplicate = false for a new id, naming itself (rules W3, \
            W4)".into(),
        body: run(flow_master_registration_registered),
        ..Case::default()
    });
    cs.push(Case {
        id: "flow/master/registration/answered-once".into(),
        level: Level::Must,
        targets: vec![Target::Master],
        timeout: Duration::from_secs(10),
        needs: vec![Need::OwnRegistrations],
        requirement: "the master sends one RegisterWorkerResponse per RegisterWorker and none unasked (rule W3)".into(),
        body: run(flow_master_registration_answered_once),
        ..Case::default()
    });
    cs.push(Case {
        id: "flow/master/registration/duplicate-id".into(),
        level: Level::Must,
        targets: vec![Target::Master],
        timeout: Duration::from_secs(10),
        needs: vec![Need::OwnRegistrations],
        requirement: "the master answers a \
        RegisterWorker for a worker id that is registered and alive with RegisterWorkerFailed, or RegisteredWorker \
            with duplicate = true (rule W4)".into(),
        body: run(flow_master_registration_duplicate_id),
        ..Case::default()
    });
    cs.push(Case {
        id: "flow/master/registration/in-state".into(),
        level: Level::Must,
        targets: vec![Target::Master],
        timeout: Duration::from_secs(10),
        needs: vec![Need::OwnRegistrations],
        requirement: "a registered worker \
        appears in the master's state ALIVE with the cores and memory it \
            registered"
            .into(),
        body: run(flow_master_registration_in_state),
        ..Case::default()
    });
    cs.push(Case {
        id: "flow/master/registration/worker-v1".into(),
        level: Level::Must,
        targets: vec![Target::Master],
        timeout: Duration::from_secs(10),
        needs: vec![Need::OwnRegistrations],
        requirement: "the master registers a worker that speaks only version 1".into(),
        body: run(flow_master_registration_worker_v1),
        ..Case::default()
    });
    cs.push(Case {
        id: "flow/master/app/registered".into(),
        level: Level::Must,
        targets: vec![Target::Master],
        timeout: Duration::from_secs(10),
        needs: vec![Need::OwnRegistrations],
        requirement: "the master answers \
        RegisterApplication with RegisteredApplication carrying an app id of Spark's form (rule \
            P3)"
        .into(),
        body: run(flow_master_app_registered),
        ..Case::default()
    });
    cs.push(Case {
        id: "flow/master/app/ids-unique".into(),
        level: Level::Must,
        targets: vec![Target::Master],
        timeout: Duration::from_secs(10),
        needs: vec![Need::OwnRegistrations],
        requirement: "the master gives two applications different app ids (rule P3)".into(),
        body: run(flow_master_app_ids_unique),
        ..Case::default()
    });
    cs.push(Case {
        id: "flow/master/app/v1-client".into(),
        level: Level::Must,
        targets: vec![Target::Master],
        timeout: Duration::from_secs(10),
        needs: vec![Need::OwnRegistrations],
        requirement: "the master registers an application client that speaks only version 1".into(),
        body: run(flow_master_app_v1_client),
        ..Case::default()
    });
    cs.push(Case {
        id: "flow/master/app/unregister".into(),
        level: Level::Must,
        targets: vec![Target::Master],
        timeout: Duration::from_secs(10),
        needs: vec![Need::OwnRegistrations],
        requirement: "after UnregisterApplication the \
        application is no longer active in the master's state (rule P5)"
            .into(),
        body: run(flow_master_app_unregister),
        ..Case::default()
    });
    cs.push(Case {
        id: "flow/master/app/closed-connection-finishes".into(),
        level: Level::Must,
        targets: vec![Target::Master],
        timeout: Duration::from_secs(10),
        needs: vec![Need::OwnRegistrations],
        requirement: "an application \
        whose client's connection closes is finished: no longer active in the master's \
            state"
            .into(),
        body: run(flow_master_app_closed_connection_finishes),
        ..Case::default()
    });
    cs.push(Case {
        id: "flow/master/ui/readyz".into(),
        level: Level::Must,
        targets: vec![Target::Master],
        timeout: Duration::from_secs(10),
        needs: vec![Need::OwnRegistrations],
        requirement:
            "the master answers RequestReadyz with a bool reply: true when it is the active master"
                .into(),
        body: run(flow_master_ui_readyz),
        ..Case::default()
    });
    cs.push(Case {
        id: "flow/master/ui/clear-completed".into(),
        level: Level::Must,
        targets: vec![Target::Master],
        timeout: Duration::from_secs(10),
        needs: vec![Need::OwnRegistrations],
        requirement: "the master answers \
        RequestClearCompletedDriversAndApps with a bool reply (definition.json: reply bool, as Spark 4.0.1's \
            master)".into(),
        body: run(flow_master_ui_clear_completed),
        ..Case::default()
    });
    cs.push(Case {
        id: "flow/master/drivers/submit".into(),
        level: Level::Must,
        targets: vec![Target::Master],
        timeout: Duration::from_secs(10),
        needs: vec![Need::OwnRegistrations],
        requirement: "the master answers \
        RequestSubmitDriver with a successful SubmitDriverResponse carrying a driver id of Spark's form (rule \
            D1)".into(),
        body: run(flow_master_drivers_submit),
        ..Case::default()
    });
    cs.push(Case {
        id: "flow/master/drivers/status".into(),
        level: Level::Must,
        targets: vec![Target::Master],
        timeout: Duration::from_secs(10),
        needs: vec![Need::OwnRegistrations],
        requirement: "the master answers \
        RequestDriverStatus about a submitted driver with found = true (rule D6)"
            .into(),
        body: run(flow_master_drivers_status),
        ..Case::default()
    });
    cs.push(Case {
        id: "flow/master/drivers/kill".into(),
        level: Level::Must,
        targets: vec![Target::Master],
        timeout: Duration::from_secs(10),
        needs: vec![Need::OwnRegistrations],
        requirement: "the master answers \
        RequestKillDriver with a KillDriverResponse naming that driver (rule D6)"
            .into(),
        body: run(flow_master_drivers_kill),
        ..Case::default()
    });
    cs.push(Case {
        id: "flow/master/drivers/unknown-status".into(),
        level: Level::Must,
        targets: vec![Target::Master],
        timeout: Duration::from_secs(10),
        needs: vec![Need::OwnRegistrations],
        requirement: "the master answers RequestDriverStatus about a driver it does not know with found = false".into(),
        body: run(flow_master_drivers_unknown_status),
        ..Case::default()
    });
}

async fn flow_master_registration_registered(ctx: Ctx) -> Outcome {
    let n = unique();
    let id = format!("worker-20250101120000-127.0.0.1-{n}");
    let mut c = open(&ctx, Role::Worker, "worker", &id, Version::V2).await?;
    c.send(&Envelope::Send(register_worker_msg(
        &id,
        "127.0.0.1",
        1234,
        0,
        0,
    )))
    .await?;
    let r = c
        .expect::<D, RegisteredWorker>(wait(&ctx), "RegisteredWorker", |e| match e {
            Envelope::Send(D::RegisteredWorker(r)) => Some(r.clone()),
            _ => None,
        })
        .await?;
    check(!r.duplicate, "duplicate = false", "duplicate = true")?;
    check(
        r.master.address.is_some(),
        "the master's address in its reference",
        format!("{:?}", r.master),
    )
}

async fn flow_master_registration_answered_once(ctx: Ctx) -> Outcome {
    let mut w = worker(&ctx, "worker", 0, 0, Version::V2).await?;
    w.conn
        .expect_none::<D>(
            ctx.settings.quiet,
            "no second RegisterWorkerResponse",
            |e| {
                matches!(
                    e,
                    Envelope::Send(
                        D::RegisteredWorker(_) | D::RegisterWorkerFailed(_) | D::MasterInStandby(_)
                    )
                )
            },
        )
        .await
}

async fn flow_master_registration_duplicate_id(ctx: Ctx) -> Outcome {
    let w = worker(&ctx, "worker", 0, 0, Version::V2).await?;
    let mut c = open(&ctx, Role::Worker, "again", &w.id, Version::V2).await?;
    c.send(&Envelope::Send(register_worker_msg(
        &w.id, &w.host, 1, 0, 0,
    )))
    .await?;
    let ok = c
        .expect::<D, bool>(
            wait(&ctx),
            "RegisterWorkerFailed or RegisteredWorker",
            |e| match e {
                Envelope::Send(D::RegisterWorkerFailed(_)) => Some(true),
                Envelope::Send(D::RegisteredWorker(r)) => Some(r.duplicate),
                _ => None,
            },
        )
        .await?;
    check(
        ok,
        "RegisterWorkerFailed or duplicate = true",
        "RegisteredWorker with duplicate = false",
    )
}

async fn flow_master_registration_in_state(ctx: Ctx) -> Outcome {
    let w = worker(&ctx, "worker", 0, 0, Version::V2).await?;
    let s = state(&ctx).await?;
    let info = s
        .workers
        .iter()
        .find(|i| i.id == w.id)
        .ok_or_else(|| fail("the worker in the state", "absent"))?;
    check(
        info.state == WorkerState::Alive && info.cores == w.cores && info.memory == w.memory,
        "ALIVE with its cores and memory",
        format!("{:?} {} cores {} MiB", info.state, info.cores, info.memory),
    )
}

async fn flow_master_registration_worker_v1(ctx: Ctx) -> Outcome {
    worker(&ctx, "worker", 0, 0, Version::V1).await.map(|_| ())
}

async fn flow_master_app_registered(ctx: Ctx) -> Outcome {
    let (_c, id) = app(&ctx, "app", app_desc(Some(1), 64, Some(0)), Version::V2).await?;
    spark_id(&id, "app")
}

async fn flow_master_app_ids_unique(ctx: Ctx) -> Outcome {
    let (_a, one) = app(&ctx, "app1", app_desc(Some(1), 64, Some(0)), Version::V2).await?;
    let (_b, two) = app(&ctx, "app2", app_desc(Some(1), 64, Some(0)), Version::V2).await?;
    check(one != two, "two different ids", format!("{one} twice"))
}

async fn flow_master_app_v1_client(ctx: Ctx) -> Outcome {
    app(&ctx, "app", app_desc(Some(1), 64, Some(0)), Version::V1)
        .await
        .map(|_| ())
}

async fn flow_master_app_unregister(ctx: Ctx) -> Outcome {
    let (mut c, id) = app(&ctx, "app", app_desc(Some(1), 64, Some(0)), Version::V2).await?;
    unregistered(&ctx, &mut c, &id).await
}

/// Unregisters the application `id` on its client's connection `c` and waits until the master's
/// state no longer lists it as active.
pub(super) async fn unregistered(ctx: &Ctx, c: &mut Conn, id: &str) -> Outcome {
    c.send(&Envelope::Send(D::UnregisterApplication(
        UnregisterApplication::new(id.to_string()),
    )))
    .await?;
    settle(
        ctx,
        || async { Ok(!state(ctx).await?.active_apps.iter().any(|a| a.id == id)) },
        "the application no longer active",
    )
    .await
}

async fn flow_master_app_closed_connection_finishes(ctx: Ctx) -> Outcome {
    let (c, id) = app(&ctx, "app", app_desc(Some(1), 64, Some(0)), Version::V2).await?;
    drop(c);
    settle(
        &ctx,
        || async { Ok(!state(&ctx).await?.active_apps.iter().any(|a| a.id == id)) },
        "the application no longer active",
    )
    .await
}

async fn flow_master_ui_readyz(ctx: Ctx) -> Outcome {
    let mut ui = open(&ctx, Role::Ui, "ui", "", Version::V2).await?;
    ui.send(&Envelope::Ask {
        id: 2,
        message: D::RequestReadyz(RequestReadyz::new()),
    })
    .await?;
    let b = ui
        .expect::<D, bool>(wait(&ctx), "a bool reply", |e| match e {
            Envelope::Reply {
                id: 2,
                reply: Reply::Bool(b),
            } => Some(*b),
            _ => None,
        })
        .await?;
    check(b, "true", "false")
}

async fn flow_master_ui_clear_completed(ctx: Ctx) -> Outcome {
    let mut ui = open(&ctx, Role::Ui, "ui", "", Version::V2).await?;
    ui.send(&Envelope::Ask {
        id: 2,
        message: D::RequestClearCompletedDriversAndApps(RequestClearCompletedDriversAndApps::new()),
    })
    .await?;
    ui.expect::<D, ()>(wait(&ctx), "a bool reply", |e| {
        matches!(
            e,
            Envelope::Reply {
                id: 2,
                reply: Reply::Bool(_)
            }
        )
        .then_some(())
    })
    .await
}

async fn flow_master_drivers_submit(ctx: Ctx) -> Outcome {
    let (mut c, r) = submit(&ctx).await?;
    end_driver(&ctx, &mut c, r.driver_id.as_deref(), 10).await?;
    check(r.success, "success", format!("{r:?}"))?;
    spark_id(r.driver_id.as_deref().unwrap_or(""), "driver")
}

async fn flow_master_drivers_status(ctx: Ctx) -> Outcome {
    let (mut c, r) = submit(&ctx).await?;
    let id = r.driver_id.clone().unwrap_or_default();
    c.send(&Envelope::Ask {
        id: 8,
        message: D::RequestDriverStatus(RequestDriverStatus::new(id.clone())),
    })
    .await?;
    let s = c
        .expect::<D, DriverStatusResponse>(wait(&ctx), "DriverStatusResponse", |e| match e {
            Envelope::Reply {
                id: 8,
                reply: Reply::Message(D::DriverStatusResponse(s)),
            } => Some(s.clone()),
            _ => None,
        })
        .await;
    end_driver(&ctx, &mut c, Some(&id), 10).await?;
    let s = s?;
    check(s.found, "found = true", format!("{s:?}"))
}

async fn flow_master_drivers_kill(ctx: Ctx) -> Outcome {
    let (mut c, r) = submit(&ctx).await?;
    let id = r.driver_id.clone().unwrap_or_default();
    c.send(&Envelope::Ask {
        id: 9,
        message: D::RequestKillDriver(RequestKillDriver::new(id.clone())),
    })
    .await?;
    let k = c
        .expect::<D, KillDriverResponse>(wait(&ctx), "KillDriverResponse", |e| match e {
            Envelope::Reply {
                id: 9,
                reply: Reply::Message(D::KillDriverResponse(k)),
            } => Some(k.clone()),
            _ => None,
        })
        .await?;
    check(k.driver_id == id, format!("driver {id}"), k.driver_id)
}

async fn flow_master_drivers_unknown_status(ctx: Ctx) -> Outcome {
    let mut c = open(&ctx, Role::DriverClient, "client", "", Version::V2).await?;
    c.send(&Envelope::Ask {
        id: 8,
        message: D::RequestDriverStatus(RequestDriverStatus::new(
            "driver-20000101000000-9999".into(),
        )),
    })
    .await?;
    let s = c
        .expect::<D, DriverStatusResponse>(wait(&ctx), "DriverStatusResponse", |e| match e {
            Envelope::Reply {
                id: 8,
                reply: Reply::Message(D::DriverStatusResponse(s)),
            } => Some(s.clone()),
            _ => None,
        })
        .await?;
    check(!s.found, "found = false", format!("{s:?}"))
}
