//! `flow/worker/…`: the flows of a worker: a whole conversation with the suite playing its peers.

/// The cases about launch.
pub mod launch {
    use crate::harness::case::run;
    use crate::harness::case::Case;
    use crate::harness::case::Target;
    use crate::harness::env::Ctx;
    use crate::harness::verdict::check;
    use crate::harness::verdict::fail;
    use crate::harness::verdict::Failure;
    use crate::harness::verdict::Level;
    use crate::harness::verdict::Outcome;
    use crate::kit::common::unique;
    use crate::kit::support::launches::*;
    use crate::kit::worker::allowed_exec;
    use crate::kit::worker::launch_msg;
    use crate::kit::worker::registered;
    use crate::kit::worker::ui_conn;
    use crate::kit::worker::worker_state;
    use sparkwire::messages::DeployMessage;
    use sparkwire::messages::Version;
    use sparkwire::wire::encode_envelope;
    use sparkwire::wire::Envelope;
    use sparkwire::wire::Reply;

    type D = DeployMessage;

    /// The cases of this section, each naming its targets.
    pub fn cases(cs: &mut Vec<Case>) {
        cs.push(Case {
            id: "flow/worker/secret-handoff".into(),
            level: Level::Must,
            targets: vec![Target::Worker],
            quote:
                "SPEC §13, \"A worker hands the secret to the executors and drivers it launches \
                without exposing it: … adds `SPARKWIRE_SECRET_FILE=<that path>` to the environment \
                it starts the process with …; never on a command line, never in the application's \
                description\""
                    .into(),
            requirement: "launches get SPARKWIRE_SECRET_FILE (mode 0600), the secret in no \
                argument, variable or worker state"
                .into(),
            body: run(secret_handoff),
            ..Case::default()
        });
    }

    async fn secret_handoff(ctx: Ctx) -> Outcome {
        sparkwire_launch(&ctx)?;
        let Some(secret) = ctx.settings.secret.clone() else {
            return Err(Failure::Skipped(
                "the suite holds no secret (--secret-file): the worker has none to hand on".into(),
            ));
        };
        let secret = secret.expose().to_vec();
        let mut w = registered(&ctx, &[Version::V1, Version::V2]).await?;
        let token = sleep_token();
        w.conn
            .send(&Envelope::Send(launch_msg(
                &w,
                &app_id(),
                42,
                &allowed_exec(),
                &[&token],
            )))
            .await?;
        let p = running_process(&ctx, &mut w, 42, &token).await?;
        handed_secret(&p, &secret)?;
        // A driver likewise.
        let driver_token = sleep_token();
        let id = format!("driver-20250101120000-{:04}", unique() % 10_000);
        w.conn
            .send(&Envelope::Send(launch_driver(
                &id,
                &allowed_exec(),
                &[&driver_token],
            )))
            .await?;
        let d = launched_process(&ctx, &driver_token).await?;
        handed_secret(&d, &secret)?;
        // The worker's state, which UIs show, carries nothing of it.
        let mut ui = ui_conn(&ctx, &mut w).await?;
        let state = worker_state(&ctx, &mut ui).await?;
        let mut bytes = Vec::new();
        encode_envelope(
            &Envelope::<D>::Reply {
                id: 3,
                reply: Reply::Message(D::WorkerStateResponse(state)),
            },
            Version::V2,
            &mut bytes,
        )
        .map_err(|e| fail("a WorkerStateResponse the suite can encode", e.to_string()))?;
        check(
            !holds(&bytes, &secret),
            "a WorkerStateResponse without the secret",
            "the secret in it",
        )
    }
}

/// The worker's own flows: registration, heartbeats, launching executors and drivers.
pub mod flows {
    use crate::harness::case::run;
    use crate::harness::case::Case;
    use crate::harness::case::Target;
    use crate::harness::env::Ctx;
    use crate::harness::verdict::check;
    use crate::harness::verdict::fail;
    use crate::harness::verdict::Level;
    use crate::kit::common::spark_id;
    use crate::kit::common::wait;
    use crate::kit::spawned;
    use crate::kit::worker::*;
    use sparkwire::messages::deploy::*;
    use sparkwire::messages::DeployMessage;
    use sparkwire::messages::DriverDescription;
    use sparkwire::messages::DriverState;
    use sparkwire::messages::ExecutorState;
    use sparkwire::messages::Version;
    use sparkwire::wire::handshake::Role;
    use sparkwire::wire::Envelope;
    use std::collections::BTreeMap;
    use std::time::Duration;

    type D = DeployMessage;

    /// The cases of this section, each naming its targets.
    pub fn cases(cs: &mut Vec<Case>) {
        cs.push(Case {
            id: "flow/worker/registration/fields".into(),
            level: Level::Must,
            targets: vec![Target::Worker],
            requirement: "the worker's RegisterWorker carries a Spark-form id, the cores and \
                memory it offers, and its address"
                .into(),
            body: run(|ctx: Ctx| async move {
                let w = registered(&ctx, &[Version::V1, Version::V2]).await?;
                let r = &w.reg;
                check(
                    r.id.starts_with("worker-")
                        && r.id.len() > 22
                        && r.id[7..21].bytes().all(|b| b.is_ascii_digit()),
                    "an id worker-YYYYMMDDHHMMSS-HOST-PORT",
                    r.id.clone(),
                )?;
                check(
                    r.cores == CORES && r.memory == MEMORY,
                    format!(
                        "{CORES} cores, {MEMORY} \
                    MiB"
                    ),
                    format!("{} cores, {} MiB", r.cores, r.memory),
                )?;
                check(
                    r.worker
                        .address
                        .as_ref()
                        .is_some_and(|a| a.host == r.host && a.port == r.port)
                        && r.port > 0,
                    "its endpoint at its host and port",
                    format!("{:?} at {}:{}", r.worker, r.host, r.port),
                )
            }),
            ..Case::default()
        });
        cs.push(Case {
            id: "flow/worker/registration/latest-state".into(),
            level: Level::Should,
            targets: vec![Target::Worker],
            requirement:
                "once registered, the worker tells the master its current executors and drivers \
                (WorkerLatestState) with its \
                id"
                .into(),
            body: run(|ctx: Ctx| async move {
                let mut w = registered(&ctx, &[Version::V1, Version::V2]).await?;
                let id = w.reg.id.clone();
                w.conn
                    .expect::<D, ()>(wait(&ctx), "WorkerLatestState with the worker's id", |e| {
                        match e {
                            Envelope::Send(D::WorkerLatestState(s)) if s.id == id => Some(()),
                            _ => None,
                        }
                    })
                    .await
            }),
            ..Case::default()
        });
        cs.push(Case {
            id: "flow/worker/heartbeat/interval".into(),
            level: Level::Should,
            targets: vec![Target::Worker],
            requirement: "the worker heartbeats every quarter of the worker timeout: at least 3 \
                heartbeats in 2 s with a 2 s timeout"
                .into(),
            body: run(|ctx: Ctx| async move {
                let mut w = registered(&ctx, &[Version::V1, Version::V2]).await?;
                let end = tokio::time::Instant::now() + Duration::from_millis(2100);
                let mut n = 0;
                while tokio::time::Instant::now() < end {
                    let left = end.saturating_duration_since(tokio::time::Instant::now());
                    match w
                        .conn
                        .expect::<D, ()>(left, "", |e| {
                            matches!(e, Envelope::Send(D::Heartbeat(_))).then_some(())
                        })
                        .await
                    {
                        Ok(()) => n += 1,
                        Err(_) => break,
                    }
                }
                check(n >= 3, "3 heartbeats or more", format!("{n}"))
            }),
            ..Case::default()
        });
        cs.push(Case {
            id: "flow/worker/registration/failed-exits".into(),
            level: Level::Must,
            targets: vec![Target::Worker],
            requirement:
                "a worker refused with RegisterWorkerFailed stops (Spark's worker exits with status 1)"
                    .into(),
            body: run(|ctx: Ctx| async move {
                let (mut run, mut conn) = start(ctx.clone()).await?;
                let hello = conn.read_hello(spawned::startup(&ctx)).await?;
                spawned::accept(
                    &ctx,
                    &mut conn,
                    &hello,
                    &[Version::V1, Version::V2],
                    "master",
                )
                .await?;
                conn.expect::<D, ()>(wait(&ctx), "RegisterWorker", |e| {
                    matches!(e, Envelope::Send(D::RegisterWorker(_))).then_some(())
                })
                .await?;
                conn.send(&Envelope::Send(D::RegisterWorkerFailed(
                    RegisterWorkerFailed::new("refused by the conformance suite".into()),
                )))
                .await?;
                match run.exit_within(wait(&ctx)).await? {
                    Some(code) => check(code != 0, "a non-zero exit status", code.to_string()),
                    None => Err(fail("the worker to exit", "still running")),
                }
            }),
            ..Case::default()
        });
        cs.push(Case {
            id: "flow/worker/reconnect".into(),
            level: Level::Must,
            targets: vec![Target::Worker],
            requirement:
                "a worker told ReconnectWorker registers again (RegisterWorker with the same id)"
                    .into(),
            body: run(|ctx: Ctx| async move {
                let mut w = registered(&ctx, &[Version::V1, Version::V2]).await?;
                let id = w.reg.id.clone();
                w.conn
                    .send(&Envelope::Send(D::ReconnectWorker(ReconnectWorker::new(
                        w.master_url.clone(),
                    ))))
                    .await?;
                let again = w
                    .conn
                    .expect::<D, RegisterWorker>(wait(&ctx), "RegisterWorker again", |e| match e {
                        Envelope::Send(D::RegisterWorker(r)) => Some(r.clone()),
                        _ => None,
                    })
                    .await;
                let again = match again {
                    Ok(r) => r,
                    Err(_) => {
                        // A worker may register again on a new connection.
                        let mut c = w.run.accept(&ctx, "master2", Role::Master).await?;
                        let h = c.read_hello(wait(&ctx)).await?;
                        spawned::accept(&ctx, &mut c, &h, &[Version::V1, Version::V2], "master")
                            .await?;
                        c.expect::<D, RegisterWorker>(
                            wait(&ctx),
                            "RegisterWorker on a new connection",
                            |e| match e {
                                Envelope::Send(D::RegisterWorker(r)) => Some(r.clone()),
                                _ => None,
                            },
                        )
                        .await?
                    }
                };
                check(again.id == id, format!("id {id}"), again.id)
            }),
            ..Case::default()
        });
        cs.push(Case {
            id: "flow/worker/executor/launch".into(),
            level: Level::Must,
            targets: vec![Target::Worker],
            requirement: "the worker runs an allowed executor command it is sent (LaunchExecutor) \
                and reports it RUNNING (rules E2, E3)"
                .into(),
            body: run(|ctx: Ctx| async move {
                let mut w = registered(&ctx, &[Version::V1, Version::V2]).await?;
                launch_executor(&mut w, "app-20250101120000-0001", 0).await?;
                let s = state_change(&ctx, &mut w, 0).await?;
                let out = check(
                    s.state == ExecutorState::Running && s.app_id == "app-20250101120000-0001",
                    "RUNNING",
                    format!("{:?}", s.state),
                );
                w.run.stop(Duration::from_secs(2)).await;
                out
            }),
            ..Case::default()
        });
        cs.push(Case {
            id: "flow/worker/executor/state-ask-v2".into(),
            level: Level::Must,
            targets: vec![Target::Worker],
            requirement: "in version 2 the worker sends ExecutorStateChanged as an ask".into(),
            body: run(|ctx: Ctx| async move {
                let mut w = registered(&ctx, &[Version::V2]).await?;
                launch_executor(&mut w, "app-20250101120000-0002", 0).await?;
                let got = w
                    .conn
                    .expect::<D, bool>(wait(&ctx), "ExecutorStateChanged", |e| match e {
                        Envelope::Ask {
                            message: D::ExecutorStateChanged(_),
                            ..
                        } => Some(true),
                        Envelope::Send(D::ExecutorStateChanged(_)) => Some(false),
                        _ => None,
                    })
                    .await?;
                w.run.stop(Duration::from_secs(2)).await;
                check(got, "an ask", "a send")
            }),
            ..Case::default()
        });
        cs.push(Case {
            id: "flow/worker/executor/state-send-v1".into(),
            level: Level::Must,
            targets: vec![Target::Worker],
            requirement:
                "in version 1 the worker sends ExecutorStateChanged one-way, as Spark 3.0 does"
                    .into(),
            body: run(|ctx: Ctx| async move {
                let mut w = registered(&ctx, &[Version::V1]).await?;
                launch_executor(&mut w, "app-20250101120000-0003", 0).await?;
                let got = w
                    .conn
                    .expect::<D, bool>(wait(&ctx), "ExecutorStateChanged", |e| match e {
                        Envelope::Ask {
                            message: D::ExecutorStateChanged(_),
                            ..
                        } => Some(false),
                        Envelope::Send(D::ExecutorStateChanged(_)) => Some(true),
                        _ => None,
                    })
                    .await?;
                w.run.stop(Duration::from_secs(2)).await;
                check(got, "a send", "an ask")
            }),
            ..Case::default()
        });
        cs.push(Case {
            id: "flow/worker/executor/kill".into(),
            level: Level::Must,
            targets: vec![Target::Worker],
            requirement:
                "the worker kills an executor it is told to (KillExecutor) and reports it \
                KILLED (rule E3)"
                    .into(),
            body: run(|ctx: Ctx| async move {
                let mut w = registered(&ctx, &[Version::V1, Version::V2]).await?;
                let app = "app-20250101120000-0004";
                launch_executor(&mut w, app, 3).await?;
                state_change(&ctx, &mut w, 3).await?;
                w.conn
                    .send(&Envelope::Send(D::KillExecutor(KillExecutor::new(
                        w.master_url.clone(),
                        app.into(),
                        3,
                    ))))
                    .await?;
                let s = state_change(&ctx, &mut w, 3).await?;
                check(
                    s.state == ExecutorState::Killed,
                    "KILLED",
                    s.state.to_string(),
                )
            }),
            ..Case::default()
        });
        cs.push(Case {
            id: "flow/worker/executor/exited".into(),
            level: Level::Must,
            targets: vec![Target::Worker],
            requirement:
                "the worker reports an executor whose process ended by itself EXITED with its exit \
                status"
                    .into(),
            body: run(|ctx: Ctx| async move {
                let mut w = registered(&ctx, &[Version::V1, Version::V2]).await?;
                w.conn
                    .send(&Envelope::Send(launch_msg(
                        &w,
                        "app-20250101120000-0006",
                        2,
                        &allowed_exec(),
                        &["0.2"],
                    )))
                    .await?;
                state_change(&ctx, &mut w, 2).await?;
                let s = state_change(&ctx, &mut w, 2).await?;
                // A Spark worker runs a command's mainClass as a JVM class (SPEC §15.4 S4): its
                // process is `java … /bin/sleep 0.2`, whose status is the JVM's, not sleep's.
                let status_ok = match ctx.log.wire() {
                    crate::harness::env::Wire::Sparkwire => s.exit_status == Some(0),
                    crate::harness::env::Wire::Spark(_) => s.exit_status.is_some(),
                };
                check(
                    s.state == ExecutorState::Exited && status_ok,
                    "EXITED with the process's exit status (0 for sleep)",
                    format!("{} {:?}", s.state, s.exit_status),
                )
            }),
            ..Case::default()
        });
        cs.push(Case {
            id: "flow/worker/executor/not-allowed".into(),
            level: Level::Must,
            targets: vec![Target::Worker],
            requirement: "the worker runs only what its operator allowed: LaunchExecutor of a \
                program not on its allow-list is reported FAILED"
                .into(),
            body: run(|ctx: Ctx| async move {
                let mut w = registered(&ctx, &[Version::V1, Version::V2]).await?;
                let marker = w.run.work_dir.join("ran");
                let script = format!("touch {}", marker.display());
                w.conn
                    .send(&Envelope::Send(launch_msg(
                        &w,
                        "app-20250101120000-0007",
                        4,
                        "/bin/sh",
                        &["-c", &script],
                    )))
                    .await?;
                let s = state_change(&ctx, &mut w, 4).await?;
                check(
                    s.state == ExecutorState::Failed,
                    "FAILED",
                    s.state.to_string(),
                )?;
                tokio::time::sleep(Duration::from_millis(100)).await;
                check(!marker.exists(), "the program not run", "it ran")
            }),
            ..Case::default()
        });
        cs.push(Case {
            id: "flow/worker/ui/state".into(),
            level: Level::Must,
            targets: vec![Target::Worker],
            requirement: "the worker answers a UI's RequestWorkerState with its id, cores, memory \
                and the executors it runs"
                .into(),
            body: run(|ctx: Ctx| async move {
                let mut w = registered(&ctx, &[Version::V1, Version::V2]).await?;
                launch_executor(&mut w, "app-20250101120000-0008", 5).await?;
                state_change(&ctx, &mut w, 5).await?;
                let mut ui = ui_conn(&ctx, &mut w).await?;
                let s = worker_state(&ctx, &mut ui).await?;
                let out = check(
                    s.worker_id == w.reg.id
                        && s.cores == CORES
                        && s.memory == MEMORY
                        && s.executors.iter().any(|e| e.exec_id == 5),
                    "its id, cores, memory and executor \
                        5",
                    format!(
                        "{} {} cores {} MiB executors \
                            {:?}",
                        s.worker_id,
                        s.cores,
                        s.memory,
                        s.executors.iter().map(|e| e.exec_id).collect::<Vec<_>>()
                    ),
                );
                w.run.stop(Duration::from_secs(2)).await;
                out
            }),
            ..Case::default()
        });
        cs.push(Case {
            id: "flow/worker/driver/launch-and-kill".into(),
            level: Level::Must,
            targets: vec![Target::Worker],
            requirement: "the worker runs a LaunchDriver and, told KillDriver, reports it KILLED \
                (rules D3, D4)"
                .into(),
            body: run(|ctx: Ctx| async move {
                let mut w = registered(&ctx, &[Version::V1, Version::V2]).await?;
                let id = "driver-20250101120000-0001";
                let desc = DriverDescription::new(
                    format!("file:{}", allowed_exec()),
                    64,
                    1,
                    false,
                    command(&allowed_exec(), &["20"]),
                    vec![],
                );
                w.conn
                    .send(&Envelope::Send(D::LaunchDriver(LaunchDriver::new(
                        id.into(),
                        desc,
                        BTreeMap::new(),
                    ))))
                    .await?;
                tokio::time::sleep(Duration::from_millis(200)).await;
                w.conn
                    .send(&Envelope::Send(D::KillDriver(KillDriver::new(id.into()))))
                    .await?;
                let s =
                    w.conn
                        .expect::<D, DriverStateChanged>(wait(&ctx), "DriverStateChanged", |e| {
                            match e {
                                Envelope::Send(D::DriverStateChanged(s)) if s.driver_id == id => {
                                    Some(s.clone())
                                }
                                _ => None,
                            }
                        })
                        .await?;
                check(
                    s.state == DriverState::Killed,
                    "KILLED",
                    s.state.to_string(),
                )
            }),
            ..Case::default()
        });
        cs.push(Case {
            id: "flow/worker/decommission".into(),
            level: Level::Must,
            targets: vec![Target::Worker],
            quote: "SPEC §7.1, DecommissionWorker".into(),
            requirement: "a worker told DecommissionWorker (v2) launches no executor after it and \
                goes on heartbeating"
                .into(),
            body: run(|ctx: Ctx| async move {
                let mut w = registered(&ctx, &[Version::V2]).await?;
                let id = w.reg.id.clone();
                w.conn.send(&Envelope::Send(D::DecommissionWorker(DecommissionWorker::new()))).await?;
                launch_executor(&mut w, "app-20250101120000-0011", 3).await?;
                w.conn.expect_none::<D>(ctx.settings.quiet, "no ExecutorStateChanged for a launch after \
                    DecommissionWorker", |e| matches!(e,
                    Envelope::Send(D::ExecutorStateChanged(s)) | Envelope::Ask { message: D::ExecutorStateChanged(s),
                        .. } if s.exec_id == 3)).await?;
                let hb = w.conn.expect::<D, Heartbeat>(Duration::from_secs(3), "a Heartbeat after \
                    DecommissionWorker", |e| match e {
                    Envelope::Send(D::Heartbeat(h)) => Some(h.clone()),
                    _ => None,
                }).await?;
                check(hb.worker_id == id, format!("worker id {id}"), hb.worker_id)
            }),
            ..Case::default()
        });
        cs.push(Case {
            id: "flow/worker/executor/spark-app-id".into(),
            level: Level::Must,
            targets: vec![Target::Worker],
            requirement: "ExecutorStateChanged names the application and executor of the \
                LaunchExecutor it reports on"
                .into(),
            body: run(|ctx: Ctx| async move {
                let mut w = registered(&ctx, &[Version::V1, Version::V2]).await?;
                let app = "app-20250101120000-0009";
                launch_executor(&mut w, app, 7).await?;
                let s = state_change(&ctx, &mut w, 7).await?;
                w.run.stop(Duration::from_secs(2)).await;
                spark_id(&s.app_id, "app")?;
                check(s.app_id == app, app, s.app_id.clone())
            }),
            ..Case::default()
        });
    }
}
