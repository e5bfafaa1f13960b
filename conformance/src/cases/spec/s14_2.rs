//! `spec/14.2/…`: SPEC §14.2 (protocol/SPEC.md).

/// The cases about ownership.
pub mod ownership {
    use crate::harness::case::run;
    use crate::harness::case::Case;
    use crate::harness::case::Sharing;
    use crate::harness::case::Target;
    use crate::harness::env::Ctx;
    use crate::harness::env::Wire;
    use crate::harness::verdict::check;
    use crate::harness::verdict::fail;
    use crate::harness::verdict::Failure;
    use crate::harness::verdict::Level;
    use crate::harness::verdict::Outcome;
    use crate::kit::common::unique;
    use crate::kit::common::wait;
    use crate::kit::master::app;
    use crate::kit::master::app_desc;
    use crate::kit::master::expect_false_or_refused;
    use crate::kit::master::open;
    use crate::kit::master::register_worker_msg;
    use crate::kit::master::settle;
    use crate::kit::master::state;
    use crate::kit::master::submit;
    use crate::kit::master::worker;
    use crate::kit::master::worker_ref;
    use crate::kit::master::Need;
    use crate::kit::ownership::two_workers;
    use crate::kit::support::authorization::*;
    use crate::kit::support::bound_ids::*;
    use sparkwire::messages::deploy::*;
    use sparkwire::messages::Addr;
    use sparkwire::messages::DeployMessage;
    use sparkwire::messages::DriverState;
    use sparkwire::messages::EndpointRef;
    use sparkwire::messages::ExecutorDescription;
    use sparkwire::messages::ExecutorState;
    use sparkwire::messages::Version;
    use sparkwire::messages::WorkerState;
    use sparkwire::wire::handshake::Role;
    use sparkwire::wire::Envelope;
    use sparkwire::wire::Reply;
    use std::time::Duration;

    type D = DeployMessage;

    /// The cases of this section, each naming its targets.
    pub fn cases(cs: &mut Vec<Case>) {
        cs.push(Case {
            id: "spec/14.2/Z1/kill-executors-other-connection".into(),
            level: Level::Must,
            targets: vec![Target::Master],
            timeout: Duration::from_secs(10),
            quote: "SPEC §14.2 Z1, \"`KillExecutors` naming an active application [is] taken only \
                over its connection\", and §14.3, \"A refused ask is answered with a failure \
                envelope ... `java.lang.SecurityException` for a foreign id\""
                .into(),
            requirement: "KillExecutors naming another connection's application gets that failure \
                (strict: a close)"
                .into(),
            body: run(kill_executors_other_connection),
            ..Case::default()
        });
        cs.push(Case {
            id: "spec/14.2/Z1/request-executors-other-connection".into(),
            level: Level::Must,
            targets: vec![Target::Master],
            timeout: Duration::from_secs(10),
            quote: "SPEC §14.2 Z1, \"`RequestExecutors` ... naming an active application [is] \
                taken only over its connection\""
                .into(),
            requirement: "RequestExecutors naming another connection's app gets a \
                SecurityException failure (strict: a close)"
                .into(),
            body: run(request_executors_other_connection),
            ..Case::default()
        });
        cs.push(Case {
            id: "spec/14.2/Z1/unregister-other-connection".into(),
            level: Level::Must,
            targets: vec![Target::Master],
            timeout: Duration::from_secs(10),
            quote:
                "SPEC §14.2 Z1, \"`UnregisterApplication` ... naming an active application [is] \
                taken only over its connection\", and §14.3, \"A refused send closes its \
                connection ... Nothing a refused message asks for happens\""
                    .into(),
            requirement: "the sender's connection closes and the application stays active".into(),
            body: run(unregister_other_connection),
            ..Case::default()
        });
        cs.push(Case {
            id: "spec/14.2/Z1/second-registration-ignored".into(),
            level: Level::Must,
            targets: vec![Target::Master],
            timeout: Duration::from_secs(10),
            quote: "SPEC §14.2 Z1, \"A connection bound to an active application registers no \
                other: a second `RegisterApplication` over it is ignored\""
                .into(),
            requirement: "no second RegisteredApplication, and the first application stays active"
                .into(),
            body: run(second_registration_ignored),
            ..Case::default()
        });
        cs.push(Case {
            id: "spec/14.2/Z4/kill-driver-other-connection".into(),
            level: Level::Must,
            targets: vec![Target::Master],
            timeout: Duration::from_secs(10),
            quote: "SPEC §14.2 Z4, \"`RequestKillDriver` for an active driver is taken only over \
                that connection\""
                .into(),
            requirement: "another driver client's RequestKillDriver fails (SecurityException) and \
                the driver stays active"
                .into(),
            body: run(kill_driver_other_connection),
            ..Case::default()
        });
        cs.push(Case {
            id: "spec/14.2/Z4/kill-after-submitter-left".into(),
            level: Level::Must,
            targets: vec![Target::Master],
            timeout: Duration::from_secs(10),
            quote: "SPEC §14.2 Z4, \"Once that connection has closed, the driver is bound to no \
                connection: a `RequestKillDriver` for it from any `driver-client` is answered as \
                its submitter's would be, and kills it\""
                .into(),
            requirement: "once its submitter closed, a new driver client's RequestKillDriver is \
                answered success = true"
                .into(),
            body: run(kill_after_submitter_left),
            ..Case::default()
        });
        cs.push(Case {
            id: "spec/14.2/Z4/status-any-client".into(),
            level: Level::Must,
            targets: vec![Target::Master],
            timeout: Duration::from_secs(10),
            quote: "SPEC §14.2 Z4, \"`RequestDriverStatus` reads and changes nothing, and is \
                answered to any `driver-client`\""
                .into(),
            requirement: "a driver client that did not submit the driver asks its status and is \
                answered found = true"
                .into(),
            body: run(driver_status_any_client),
            ..Case::default()
        });
        cs.push(Case {
            id: "spec/14.2/Z2/latest-state-unknown-ignored".into(),
            level: Level::Must,
            targets: vec![Target::Master],
            timeout: Duration::from_secs(10),
            quote: "SPEC §14.2 Z2, \"A `WorkerLatestState` naming a worker the master does not \
                know is ignored\""
                .into(),
            requirement: "no KillExecutor or KillDriver follows and no worker is registered (a \
                strict master MAY close)"
                .into(),
            body: run(latest_state_unknown_ignored),
            ..Case::default()
        });
        cs.push(Case {
            id: "spec/14.2/Z3/unknown-updates-not-refused".into(),
            level: Level::Must,
            targets: vec![Target::Master],
            timeout: Duration::from_secs(10),
            quote: "SPEC §14.2 Z3, \"Updates for executors and drivers the master does not know \
                change nothing and are not refused\""
                .into(),
            requirement: "state changes for an unknown executor or driver are answered and keep \
                the connection (strict: close)"
                .into(),
            body: run(unknown_updates_not_refused),
            ..Case::default()
        });
        cs.push(Case {
            id: "spec/14.2/Z2/heartbeat-other-connection".into(),
            level: Level::Must,
            targets: vec![Target::Master],
            timeout: Duration::from_secs(10),
            quote: "SPEC §14.2 Z2, \"`Heartbeat` ... naming a worker bound to another connection \
                [is] refused\", and §14.3, \"A refused send closes its connection\""
                .into(),
            requirement: "a registered worker's connection that sends a Heartbeat naming another \
                registered worker is closed"
                .into(),
            body: run(heartbeat_other_connection),
            ..Case::default()
        });
        cs.push(Case {
            id: "spec/14.2/Z2/latest-state-other-connection".into(),
            level: Level::Must,
            targets: vec![Target::Master],
            timeout: Duration::from_secs(10),
            quote: "SPEC §14.2 Z2, \"`WorkerLatestState` ... naming a worker bound to another \
                connection [is] refused\""
                .into(),
            requirement: "the sender's connection closes and the master sends the named worker no \
                KillExecutor for what the message listed"
                .into(),
            body: run(latest_state_other_connection),
            ..Case::default()
        });
        // These register workers and read the master's state, or wait for a worker to be declared
        // DEAD: alone, as the other cases that register workers with executors.
        cs.push(Case {
            id: "spec/14.2/Z2/reconnect-dead-worker".into(),
            level: Level::Must,
            targets: vec![Target::Master],
            timeout: Duration::from_secs(20),
            sharing: Sharing::Alone,
            quote: "SPEC §14.2 Z2, \"A `Heartbeat` naming a worker the master declared DEAD (its \
                connection closed ...) is answered `ReconnectWorker` over the connection it came \
                on\""
                .into(),
            requirement: "a Heartbeat naming a worker whose connection closed is answered \
                ReconnectWorker (strict: close)"
                .into(),
            body: run(reconnect_dead_worker),
            ..Case::default()
        });
        cs.push(Case {
            id: "spec/14.2/Z2/spark-13604".into(),
            level: Level::Must,
            targets: vec![Target::Master],
            timeout: Duration::from_secs(20),
            sharing: Sharing::Alone,
            quote: "SPEC §14.2 Z2, \"one from a registered worker over its own connection is \
                answered with one `KillExecutor` for each executor it lists that the master does \
                not have on that worker and one `KillDriver` for each driver ... in any order \
                (Spark's SPARK-13604)\""
                .into(),
            requirement: "a WorkerLatestState naming an unknown executor and driver gets a \
                KillExecutor and a KillDriver"
                .into(),
            body: run(spark_13604),
            ..Case::default()
        });
        cs.push(Case {
            id: "spec/14.2/Z1/finished-app-named-again".into(),
            level: Level::Must,
            targets: vec![Target::Master],
            timeout: Duration::from_secs(10),
            quote: "SPEC §14.2 Z1, \"Naming an unknown or finished application is not a refusal: \
                the master answers as Spark does (`false`, or nothing)\""
                .into(),
            requirement: "RequestExecutors naming the client's finished application is answered \
                false, never true"
                .into(),
            body: run(finished_app_named_again),
            ..Case::default()
        });
        cs.push(Case {
            id: "spec/14.2/Z1/finished-app-kill-executors".into(),
            level: Level::Must,
            targets: vec![Target::Master],
            quote: "SPEC §14.2 Z1, \"Naming an unknown or finished application is not a refusal: \
                the master answers as Spark does (`false`, or nothing)\"".into(),
            requirement: "KillExecutors naming the client's finished application is answered \
                false, never true"
                .into(),
            body: run(|ctx: Ctx| async move {
                let v = crate::kit::versions::highest(&ctx);
                let (mut c, id) = app(&ctx, "app", app_desc(Some(1), 64, Some(0)), v).await?;
                let bye = UnregisterApplication::new(id.clone());
                c.send(&Envelope::Send(D::UnregisterApplication(bye))).await?;
                let m = D::KillExecutors(KillExecutors::new(id.clone(), vec!["0".into()]));
                c.send(&Envelope::Ask { id: 8, message: m }).await?;
                let want = format!("a bool reply false to ask 8, KillExecutors for the finished {id} (or a refusal)");
                expect_false_or_refused(&ctx, &mut c, 8, want).await
            }),
            ..Case::default()
        });
        cs.push(Case {
            id: "spec/14.2/Z1/unknown-app-kill-executors".into(),
            level: Level::Must,
            targets: vec![Target::Master],
            timeout: Duration::from_secs(10),
            quote: "SPEC §14.2 Z1, \"Naming an unknown or finished application is not a refusal: \
                the master answers as Spark does (`false`, or nothing)\""
                .into(),
            requirement: "KillExecutors naming an application the master never knew is answered \
                false, never true"
                .into(),
            body: run(unknown_app_kill_executors),
            ..Case::default()
        });
        cs.push(Case {
            id: "spec/14.2/Z2/decommissioning-other-connection".into(),
            level: Level::Must,
            targets: vec![Target::Master],
            timeout: Duration::from_secs(10),
            quote: "SPEC §14.2 Z2, \"`WorkerDecommissioning` ... naming a worker bound to another \
                connection [is] refused\", and §14.3, \"A refused send closes its connection ... \
                Nothing a refused message asks for happens\""
                .into(),
            requirement: "WorkerDecommissioning naming another registered worker closes the \
                sender; that worker stays ALIVE"
                .into(),
            body: run(decommissioning_other_connection),
            ..Case::default()
        });
        cs.push(Case {
            id: "spec/14.2/Z2/scheduler-state-other-connection".into(),
            level: Level::Must,
            targets: vec![Target::Master],
            timeout: Duration::from_secs(10),
            quote: "SPEC §14.2 Z2, \"`WorkerSchedulerStateResponse` naming a worker bound to \
                another connection [is] refused\", and §14.3, \"A refused send closes its \
                connection\""
                .into(),
            requirement: "WorkerSchedulerStateResponse naming another worker closes the sender; \
                that worker stays ALIVE"
                .into(),
            body: run(scheduler_state_other_connection),
            ..Case::default()
        });
        cs.push(Case {
            id: "spec/14.2/Z2/second-worker-not-registered".into(),
            level: Level::Must,
            targets: vec![Target::Master],
            timeout: Duration::from_secs(10),
            quote: "SPEC §14.2 Z2, \"a connection bound to one worker does not register another\""
                .into(),
            requirement: "a worker connection's RegisterWorker for a second id registers no such \
                worker"
                .into(),
            body: run(second_worker_not_registered),
            ..Case::default()
        });
        // It registers a worker with capacity and an application that takes it: alone.
        cs.push(Case {
            id: "spec/14.2/Z3/executor-state-other-worker".into(),
            level: Level::Must,
            targets: vec![Target::Master],
            timeout: Duration::from_secs(20),
            sharing: Sharing::Alone,
            needs: vec![Need::NoOtherApplication],
            quote:
                "SPEC §14.2 Z3, \"`ExecutorStateChanged` for an executor the master placed on a \
                worker is taken only from that worker's connection\""
                    .into(),
            requirement: "another worker's ExecutorStateChanged FAILED for it is refused; the app \
                is told no FAILED"
                .into(),
            body: run(executor_state_other_worker),
            ..Case::default()
        });
        cs.push(Case {
            id: "spec/14.2/Z3/driver-state-other-worker".into(),
            level: Level::Must,
            targets: vec![Target::Master],
            timeout: Duration::from_secs(20),
            sharing: Sharing::Alone,
            quote: "SPEC §14.2 Z3, \"`DriverStateChanged` for a driver [is taken] only from the \
                connection of the worker the master launched it on\", and §14.3, \"A refused send \
                closes its connection ... Nothing a refused message asks for happens\""
                .into(),
            requirement: "another worker's DriverStateChanged FAILED for a driver closes it; the \
                driver stays RUNNING"
                .into(),
            body: run(driver_state_other_worker),
            ..Case::default()
        });
    }

    async fn kill_executors_other_connection(ctx: Ctx) -> Outcome {
        let ((_a, a_id), (mut b, _)) = two_apps(&ctx).await?;
        let m = D::KillExecutors(KillExecutors::new(a_id, vec!["0".into()]));
        security_failure(&ctx, &mut b, 61, m).await
    }

    async fn request_executors_other_connection(ctx: Ctx) -> Outcome {
        let ((_a, a_id), (mut b, _)) = two_apps(&ctx).await?;
        let m = D::RequestExecutors(RequestExecutors::new(a_id, vec![]));
        security_failure(&ctx, &mut b, 62, m).await
    }

    async fn unregister_other_connection(ctx: Ctx) -> Outcome {
        let ((_a, a_id), (mut b, _)) = two_apps(&ctx).await?;
        b.send(&Envelope::Send(D::UnregisterApplication(
            UnregisterApplication::new(a_id.clone()),
        )))
        .await?;
        b.expect_closed(
        crate::kit::common::reaction_wait(&ctx),
        "the connection closed (UnregisterApplication of another connection's application refused)",
    )
    .await?;
        let s = state(&ctx).await?;
        check(
            s.active_apps.iter().any(|x| x.id == a_id),
            format!("{a_id} still active"),
            "unregistered by another connection",
        )
    }

    async fn heartbeat_other_connection(ctx: Ctx) -> Outcome {
        let (a, mut b) = two_workers(&ctx, Version::V2).await?;
        b.conn.send(&Envelope::Send(heartbeat(&a.id))).await?;
        b.conn
            .expect_closed(
                crate::kit::common::reaction_wait(&ctx),
                "the connection closed (a Heartbeat naming another connection's worker refused)",
            )
            .await
    }

    async fn latest_state_other_connection(ctx: Ctx) -> Outcome {
        let (mut a, mut b) = two_workers(&ctx, Version::V2).await?;
        let listed = ExecutorDescription::new(
            format!("app-20250101120000-{}", unique() % 10000),
            7,
            0,
            1,
            64,
            ExecutorState::Running,
        );
        b.conn
            .send(&Envelope::Send(D::WorkerLatestState(
                WorkerLatestState::new(a.id.clone(), vec![listed], vec![]),
            )))
            .await?;
        b.conn
        .expect_closed(
            crate::kit::common::reaction_wait(&ctx),
            "the connection closed (a WorkerLatestState naming another connection's worker refused)",
        )
        .await?;
        a.conn
            .expect_none::<D>(
                ctx.settings.quiet,
                "no KillExecutor to the named worker (nothing a refused message asks for happens)",
                |e| matches!(e, Envelope::Send(D::KillExecutor(_))),
            )
            .await
    }

    async fn reconnect_dead_worker(ctx: Ctx) -> Outcome {
        let w = worker(&ctx, "worker", 0, 0, Version::V2).await?;
        let id = w.id.clone();
        drop(w);
        if ctx.log.wire() == Wire::Sparkwire {
            // SPEC §8: "a master marks a worker whose connection closed as lost".
            settle(
                &ctx,
                || async {
                    Ok(!state(&ctx)
                        .await?
                        .workers
                        .iter()
                        .any(|i| i.id == id && i.state == WorkerState::Alive))
                },
                "the worker no longer ALIVE once its connection closed",
            )
            .await?;
        } else {
            // Spark's WorkerInfo.state reads ALIVE on its wire (SPEC §15.4): give it time.
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
        let mut c = open(&ctx, Role::Worker, "again", &id, Version::V2).await?;
        c.send(&Envelope::Send(heartbeat(&id))).await?;
        match c
        .expect_or_close::<D, ()>(wait(&ctx), "ReconnectWorker", |e| {
            matches!(e, Envelope::Send(D::ReconnectWorker(_))).then_some(())
        })
        .await
    {
        Err(Failure::Fail { seen, .. }) if seen.contains("closed") => check(
            strict_master(&ctx).await?,
            "ReconnectWorker (a close only from a strict master, SPEC §14.2)",
            "the connection closed, and the master takes messages before a registration: it is not strict",
        ),
        other => other,
    }
    }

    async fn spark_13604(ctx: Ctx) -> Outcome {
        let mut w = worker(&ctx, "worker", 0, 0, Version::V2).await?;
        let n = unique() % 10000;
        let app_id = format!("app-20000101000000-{n:04}");
        let driver_id = format!("driver-20000101000000-{n:04}");
        let listed = ExecutorDescription::new(app_id.clone(), 3, 0, 1, 64, ExecutorState::Running);
        w.conn
            .send(&Envelope::Send(D::WorkerLatestState(
                WorkerLatestState::new(w.id.clone(), vec![listed], vec![driver_id.clone()]),
            )))
            .await?;
        let (mut killed_exec, mut killed_driver) = (false, false);
        let want = format!("KillExecutor {app_id}/3 and KillDriver {driver_id}, in any order");
        while !(killed_exec && killed_driver) {
            let which = w
                .conn
                .expect::<D, bool>(
                    crate::kit::common::reaction_wait(&ctx),
                    &want,
                    |e| match e {
                        Envelope::Send(D::KillExecutor(k))
                            if k.app_id == app_id && k.exec_id == 3 =>
                        {
                            Some(true)
                        }
                        Envelope::Send(D::KillDriver(k)) if k.driver_id == driver_id => Some(false),
                        _ => None,
                    },
                )
                .await?;
            if which {
                killed_exec = true;
            } else {
                killed_driver = true;
            }
        }
        Ok(())
    }

    async fn second_registration_ignored(ctx: Ctx) -> Outcome {
        let (mut c, id) = app(&ctx, "app", app_desc(Some(1), 64, Some(0)), Version::V2).await?;
        let port = 40000 + (unique() % 20000) as i32;
        c.send(&Envelope::Send(D::RegisterApplication(
            RegisterApplication::new(
                app_desc(Some(1), 64, Some(0)),
                EndpointRef::at(Addr::new("127.0.0.1", port), "AppClient"),
            ),
        )))
        .await?;
        c.expect_none::<D>(
            ctx.settings.quiet,
            "no second RegisteredApplication on the connection",
            |e| matches!(e, Envelope::Send(D::RegisteredApplication(_))),
        )
        .await?;
        let s = state(&ctx).await?;
        check(
            s.active_apps.iter().any(|a| a.id == id),
            format!("{id} still active"),
            "no longer active",
        )
    }

    async fn kill_driver_other_connection(ctx: Ctx) -> Outcome {
        let (mut a, r) = submit(&ctx).await?;
        let id = r.driver_id.clone().unwrap_or_default();
        let mut b = open(&ctx, Role::DriverClient, "client-b", "", Version::V2).await?;
        let refused = security_failure(
            &ctx,
            &mut b,
            81,
            D::RequestKillDriver(RequestKillDriver::new(id.clone())),
        )
        .await;
        let s = driver_status(&ctx, &mut a, 82, &id).await?;
        // The suite's own driver ends here, over its own connection.
        a.send(&Envelope::Ask {
            id: 83,
            message: D::RequestKillDriver(RequestKillDriver::new(id.clone())),
        })
        .await?;
        refused?;
        check(
            s.found && s.state != Some(DriverState::Killed),
            format!("{id} still active"),
            format!("{s:?}"),
        )
    }

    async fn kill_after_submitter_left(ctx: Ctx) -> Outcome {
        let (a, r) = submit(&ctx).await?;
        let id = r.driver_id.clone().unwrap_or_default();
        drop(a);
        let want = format!("KillDriverResponse success = true for {id} from a new driver client");
        let deadline = tokio::time::Instant::now() + wait(&ctx);
        let mut last;
        loop {
            // A fresh connection each time: a strict master MAY close one whose kill it refused.
            let mut b = open(&ctx, Role::DriverClient, "client-b", "", Version::V2).await?;
            b.send(&Envelope::Ask {
                id: 86,
                message: D::RequestKillDriver(RequestKillDriver::new(id.clone())),
            })
            .await?;
            let got = b
                .expect::<D, Envelope<D>>(wait(&ctx), &want, |e| match e {
                    Envelope::Failure { id: 86, .. } | Envelope::Reply { id: 86, .. } => {
                        Some(e.clone())
                    }
                    _ => None,
                })
                .await;
            match got {
                Ok(Envelope::Reply {
                    reply: Reply::Message(D::KillDriverResponse(k)),
                    ..
                }) => {
                    // A waiting driver ends KILLED at once; a placed one when its worker says so
                    // (a worker faked by another case may never), so only the answer is judged.
                    return check(k.success, &want, format!("{k:?}"));
                }
                Ok(Envelope::Failure { error, .. }) => {
                    last = format!("a failure {}: {:?}", error.class_name, error.message);
                }
                Ok(other) => return Err(fail(want, crate::harness::peer::envelope_label(&other))),
                Err(Failure::Fail { seen, .. }) if seen.contains("closed") => {
                    last = "the connection closed".into();
                }
                Err(e) => return Err(e),
            }
            if tokio::time::Instant::now() >= deadline {
                return Err(fail(want, last));
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    async fn driver_status_any_client(ctx: Ctx) -> Outcome {
        let (mut a, r) = submit(&ctx).await?;
        let id = r.driver_id.clone().unwrap_or_default();
        let mut b = open(&ctx, Role::DriverClient, "client-b", "", Version::V2).await?;
        let s = driver_status(&ctx, &mut b, 84, &id).await;
        a.send(&Envelope::Ask {
            id: 85,
            message: D::RequestKillDriver(RequestKillDriver::new(id.clone())),
        })
        .await?;
        let s = s?;
        check(s.found, "found = true", format!("{s:?}"))
    }

    async fn latest_state_unknown_ignored(ctx: Ctx) -> Outcome {
        let id = fresh_worker_id();
        let mut c = open(&ctx, Role::Worker, "worker", &id, Version::V2).await?;
        let listed = ExecutorDescription::new(
            format!("app-20000101000000-{:04}", unique() % 10000),
            4,
            0,
            1,
            64,
            ExecutorState::Running,
        );
        c.send(&Envelope::Send(D::WorkerLatestState(
            WorkerLatestState::new(
                id.clone(),
                vec![listed],
                vec![format!("driver-20000101000000-{:04}", unique() % 10000)],
            ),
        )))
        .await?;
        nothing_back(
            &ctx,
            &mut c,
            "a WorkerLatestState of a worker the master does not know",
            kill_answer,
        )
        .await?;
        worker_absent(&ctx, &id).await
    }

    async fn unknown_updates_not_refused(ctx: Ctx) -> Outcome {
        let mut w = worker(&ctx, "worker", 0, 0, Version::V2).await?;
        let n = unique() % 10000;
        let update = D::ExecutorStateChanged(
            ExecutorStateChanged::new(
                format!("app-20000101000000-{n:04}"),
                5,
                ExecutorState::Exited,
            )
            .with_exit_status(Some(0)),
        );
        if w.conn.v() == Version::V1 {
            // Version 1 sends it one-way (Spark 3.0.3 on its own wire speaks only version 1).
            w.conn.send(&Envelope::Send(update)).await?;
            if w.conn.closes_within(ctx.settings.quiet).await {
                return check(
                strict_master(&ctx).await?,
                "the connection kept after an ExecutorStateChanged of an unknown executor (a close only from a strict \
                    master)",
                "the connection closed, and the master is not strict",
            );
            }
            return Ok(());
        }
        w.conn
            .send(&Envelope::Ask {
                id: 91,
                message: update,
            })
            .await?;
        let answered = w
            .conn
            .expect_or_close::<D, ()>(wait(&ctx), "a bool reply to ask 91", |e| {
                matches!(
                    e,
                    Envelope::Reply {
                        id: 91,
                        reply: Reply::Bool(_)
                    }
                )
                .then_some(())
            })
            .await;
        if let Err(Failure::Fail { seen, .. }) = &answered {
            if seen.contains("closed") {
                return check(
                strict_master(&ctx).await?,
                "a bool reply to ask 91 (a close only from a strict master)",
                "the connection closed, and the master takes messages before a registration: it is not strict",
            );
            }
        }
        answered?;
        w.conn
            .send(&Envelope::Send(D::DriverStateChanged(
                DriverStateChanged::new(
                    format!("driver-20000101000000-{n:04}"),
                    DriverState::Finished,
                ),
            )))
            .await?;
        if w.conn.closes_within(ctx.settings.quiet).await {
            return check(
            strict_master(&ctx).await?,
            "the connection kept after a DriverStateChanged of an unknown driver (a close only from a strict master)",
            "the connection closed, and the master is not strict",
        );
        }
        Ok(())
    }

    async fn unknown_app_kill_executors(ctx: Ctx) -> Outcome {
        let v = crate::kit::versions::highest(&ctx);
        let (mut c, _id) = app(&ctx, "app", app_desc(Some(1), 64, Some(0)), v).await?;
        let unknown = "app-19990101000000-0000".to_string();
        let m = D::KillExecutors(KillExecutors::new(unknown.clone(), vec!["0".into()]));
        c.send(&Envelope::Ask { id: 7, message: m }).await?;
        let want = format!(
            "a bool reply false to ask 7, KillExecutors for the unknown {unknown} (or a refusal)"
        );
        expect_false_or_refused(&ctx, &mut c, 7, want).await
    }

    async fn finished_app_named_again(ctx: Ctx) -> Outcome {
        let v = crate::kit::versions::highest(&ctx);
        let (mut c, id) = app(&ctx, "app", app_desc(Some(1), 64, Some(0)), v).await?;
        c.send(&Envelope::Send(D::UnregisterApplication(
            UnregisterApplication::new(id.clone()),
        )))
        .await?;
        let m = D::RequestExecutors(RequestExecutors::new(id.clone(), vec![]));
        c.send(&Envelope::Ask { id: 6, message: m }).await?;
        let want = format!(
            "a bool reply false to ask 6, RequestExecutors for the finished {id} (or, strictly, a failure or a \
             close)"
        );
        expect_false_or_refused(&ctx, &mut c, 6, want).await
    }

    async fn decommissioning_other_connection(ctx: Ctx) -> Outcome {
        let (a, mut b) = two_workers(&ctx, Version::V2).await?;
        b.conn
            .send(&Envelope::Send(D::WorkerDecommissioning(
                WorkerDecommissioning::new(a.id.clone(), worker_ref(&a.host, 1)),
            )))
            .await?;
        b.conn
        .expect_closed(
            crate::kit::common::reaction_wait(&ctx),
            "the connection closed (a WorkerDecommissioning naming another connection's worker refused)",
        )
        .await?;
        still_alive(&ctx, &a.id).await
    }

    async fn scheduler_state_other_connection(ctx: Ctx) -> Outcome {
        let v = crate::kit::versions::highest(&ctx);
        let (a, mut b) = two_workers(&ctx, v).await?;
        b.conn
            .send(&Envelope::Send(D::WorkerSchedulerStateResponse(
                WorkerSchedulerStateResponse::new(a.id.clone(), vec![], vec![]),
            )))
            .await?;
        b.conn
        .expect_closed(
            crate::kit::common::reaction_wait(&ctx),
            "the connection closed (a WorkerSchedulerStateResponse naming another connection's worker refused)",
        )
        .await?;
        still_alive(&ctx, &a.id).await
    }

    async fn executor_state_other_worker(ctx: Ctx) -> Outcome {
        let mut a = worker(&ctx, "worker-a", 1, 1024, Version::V2).await?;
        let mut b = worker(&ctx, "worker-b", 0, 0, Version::V2).await?;
        let (mut app_conn, app_id) =
            app(&ctx, "app", app_desc(Some(1), 64, Some(1)), Version::V2).await?;
        let exec_id = a
            .conn
            .expect::<D, i32>(
                wait(&ctx),
                "LaunchExecutor for the application",
                |e| match e {
                    Envelope::Send(D::LaunchExecutor(l)) if l.app_id == app_id => Some(l.exec_id),
                    _ => None,
                },
            )
            .await?;
        b.conn
            .send(&Envelope::Ask {
                id: 8,
                message: D::ExecutorStateChanged(
                    ExecutorStateChanged::new(app_id.clone(), exec_id, ExecutorState::Failed)
                        .with_message(Some("a worker it is not on".into()))
                        .with_exit_status(Some(1)),
                ),
            })
            .await?;
        let want = "a failure for ask 8 (or the connection closed)";
        let got = b
            .conn
            .expect_or_close::<D, Envelope<D>>(wait(&ctx), want, |e| match e {
                Envelope::Failure { id: 8, .. } | Envelope::Reply { id: 8, .. } => Some(e.clone()),
                _ => None,
            })
            .await;
        match got {
            Ok(Envelope::Failure { .. }) => {}
            Ok(other) => return Err(fail(want, crate::harness::peer::envelope_label(&other))),
            Err(Failure::Fail { seen, .. }) if seen.contains("closed") => {}
            Err(e) => return Err(e),
        }
        app_conn
        .expect_none::<D>(
            ctx.settings.quiet,
            "no ExecutorUpdated FAILED for the executor (nothing a refused message asks for happens)",
            |e| {
                matches!(e, Envelope::Send(D::ExecutorUpdated(u))
                    if u.id == exec_id && u.state == ExecutorState::Failed)
            },
        )
        .await?;
        a.conn
            .expect_none::<D>(
                ctx.settings.quiet,
                "no LaunchExecutor relaunching the executor on the first worker",
                |e| matches!(e, Envelope::Send(D::LaunchExecutor(l)) if l.app_id == app_id),
            )
            .await
    }

    async fn second_worker_not_registered(ctx: Ctx) -> Outcome {
        let v = crate::kit::versions::highest(&ctx);
        let mut a = worker(&ctx, "worker", 0, 0, v).await?;
        let other = format!("{}-second", a.id);
        a.conn
            .send(&Envelope::Send(register_worker_msg(
                &other, &a.host, 1, 0, 0,
            )))
            .await?;
        let want = format!("no RegisteredWorker for {other} over the first worker's connection");
        a.conn
            .expect_none::<D>(ctx.settings.quiet, &want, |e| {
                matches!(e, Envelope::Send(D::RegisteredWorker(_)))
            })
            .await?;
        let s = state(&ctx).await?;
        check(
            !s.workers.iter().any(|w| w.id == other),
            format!("no worker {other} in the master's state"),
            "the second worker registered",
        )
    }

    async fn driver_state_other_worker(ctx: Ctx) -> Outcome {
        let mut a = worker(&ctx, "worker-a", 2, 4096, Version::V2).await?;
        let mut b = worker(&ctx, "worker-b", 0, 0, Version::V2).await?;
        let (_client, r) = submit(&ctx).await?;
        let id = r
            .driver_id
            .clone()
            .ok_or_else(|| fail("a driver id in SubmitDriverResponse", format!("{r:?}")))?;
        a.conn
            .expect::<D, ()>(wait(&ctx), "LaunchDriver for the driver", |e| {
                matches!(e, Envelope::Send(D::LaunchDriver(l)) if l.driver_id == id).then_some(())
            })
            .await?;
        b.conn
            .send(&Envelope::Send(D::DriverStateChanged(
                DriverStateChanged::new(id.clone(), sparkwire::messages::DriverState::Failed),
            )))
            .await?;
        b.conn
        .expect_closed(
            crate::kit::common::reaction_wait(&ctx),
            "the connection closed (a DriverStateChanged for a driver launched on another worker refused)",
        )
        .await?;
        let s = state(&ctx).await?;
        let d = s.active_drivers.iter().find(|d| d.id == id);
        check(
            d.is_some_and(|d| {
                d.state == sparkwire::messages::DriverState::Running
                    && d.worker_id.as_deref() == Some(a.id.as_str())
            }),
            format!("driver {id} still active, RUNNING on {}", a.id),
            format!("{:?}", d.map(|d| (d.state, d.worker_id.clone()))),
        )
    }
}

/// The cases about launch.
pub mod launch {
    use crate::harness::case::run;
    use crate::harness::case::Case;
    use crate::harness::case::Target;
    use crate::harness::env::Ctx;
    use crate::harness::peer::Conn;
    use crate::harness::verdict::check;
    use crate::harness::verdict::Level;
    use crate::harness::verdict::Outcome;
    use crate::kit::common::expect_refused;
    use crate::kit::common::unique;
    use crate::kit::common::wait;
    use crate::kit::support::launches::*;
    use crate::kit::worker::allowed_exec;
    use crate::kit::worker::launch_executor;
    use crate::kit::worker::launch_msg;
    use crate::kit::worker::listening_addr;
    use crate::kit::worker::registered;
    use crate::kit::worker::state_change;
    use crate::kit::worker::ui_conn;
    use crate::kit::worker::worker_state;
    use sparkwire::messages::coarse::ExecutorDecommissioning;
    use sparkwire::messages::coarse::LaunchedExecutor;
    use sparkwire::messages::coarse::StatusUpdate;
    use sparkwire::messages::deploy::*;
    use sparkwire::messages::Addr;
    use sparkwire::messages::CoarseMessage;
    use sparkwire::messages::DeployMessage;
    use sparkwire::messages::EndpointRef;
    use sparkwire::messages::ExecutorState;
    use sparkwire::messages::TaskState;
    use sparkwire::messages::Version;
    use sparkwire::wire::handshake::Role;
    use sparkwire::wire::Envelope;
    use std::collections::BTreeMap;
    use std::time::Duration;

    type D = DeployMessage;
    type C = CoarseMessage;

    /// The cases of this section, each naming its targets.
    pub fn cases(cs: &mut Vec<Case>) {
        cs.push(Case {
            id: "spec/14.2/Z5/foreign-master".into(),
            level: Level::Must,
            targets: vec![Target::Worker],
            quote: "SPEC §14.2 Z5, \"A worker takes the answers to a registration \
                (`RegisteredWorker`, …) only over a connection it opened to register, … and the \
                master's commands (`LaunchExecutor`, `KillExecutor`, …) only over the connection \
                of the master it is registered with\""
                .into(),
            requirement: "a peer dialing the worker as a master launches and kills nothing; the \
                worker keeps its own master"
                .into(),
            body: run(foreign_master),
            ..Case::default()
        });
        cs.push(Case {
            id: "spec/14.2/Z6/foreign-executor".into(),
            level: Level::Must,
            targets: vec![Target::Driver],
            quote: "SPEC §14.2 Z6, \"An executor is bound to the connection whose \
                `RegisterExecutor` the driver accepted: `StatusUpdate`, `LaunchedExecutor` and \
                `ExecutorDecommissioning` are taken only when they name that executor, over that \
                connection\", and §14.3, \"A refused send closes its connection\""
                .into(),
            requirement: "updates naming an executor over another executor's connection are \
                refused; it still gets tasks"
                .into(),
            body: run(foreign_executor),
            ..Case::default()
        });
    }

    async fn foreign_master(ctx: Ctx) -> Outcome {
        let mut w = registered(&ctx, &[Version::V1, Version::V2]).await?;
        let app = app_id();
        // An executor the worker's own master launched, for the foreign KillExecutor to name.
        launch_executor(&mut w, &app, 51).await?;
        let s = state_change(&ctx, &mut w, 51).await?;
        check(
            s.state == ExecutorState::Running,
            "executor 51 RUNNING",
            s.state.to_string(),
        )?;
        let foreign_driver = format!("driver-20250101120000-{:04}", unique() % 10_000);
        let addr = listening_addr(&ctx, &mut w, Role::Master).await?;
        let port = 20_000 + (unique() % 20_000) as i32;
        let other = Addr::new("127.0.0.9".to_string(), port);
        let commands = [
            (
                "RegisteredWorker",
                D::RegisteredWorker(RegisteredWorker::new(
                    EndpointRef::at(other.clone(), "Master"),
                    "http://127.0.0.9:8080".into(),
                    other,
                    false,
                )),
            ),
            (
                "LaunchExecutor",
                launch_msg(&w, &app, 52, &allowed_exec(), &["20"]),
            ),
            (
                "KillExecutor",
                D::KillExecutor(KillExecutor::new(w.master_url.clone(), app.clone(), 51)),
            ),
            (
                "LaunchDriver",
                launch_driver(&foreign_driver, &allowed_exec(), &["20"]),
            ),
        ];
        let mut foreign = Vec::new();
        for (name, m) in commands {
            // A connection of its own for each: a worker that refuses a one-way message closes the
            // connection it came on.
            let mut c = Conn::open(
                addr,
                &format!("foreign-master-{name}"),
                Role::Master,
                "",
                &[Version::V2, Version::V1],
                ctx.settings.secret.as_ref(),
                &ctx.log,
                wait(&ctx),
            )
            .await?;
            c.send(&Envelope::Send(m)).await?;
            foreign.push(c);
        }
        // Nothing the foreign commands ask for happens: no report of executor 52, none of 51 ending.
        let reported = |e: &Envelope<D>| match e {
            Envelope::Send(D::ExecutorStateChanged(s))
            | Envelope::Ask {
                message: D::ExecutorStateChanged(s),
                ..
            } => s.exec_id == 52 || s.exec_id == 51,
            Envelope::Send(D::DriverStateChanged(s)) => s.driver_id == foreign_driver,
            _ => false,
        };
        let watch = ctx.settings.quiet.max(Duration::from_secs(1));
        w.conn
            .expect_none::<D>(
                watch,
                "no ExecutorStateChanged for what a master the worker is not registered with sent",
                reported,
            )
            .await?;
        for c in &mut foreign {
            c.expect_none::<D>(
                ctx.settings.quiet,
                "no ExecutorStateChanged to a master the worker is not registered with",
                reported,
            )
            .await?;
        }
        let mut ui = ui_conn(&ctx, &mut w).await?;
        let st = worker_state(&ctx, &mut ui).await?;
        let running: Vec<i32> = st
            .executors
            .iter()
            .filter(|e| e.app_id == app)
            .map(|e| e.exec_id)
            .collect();
        let drivers: Vec<&String> = st.drivers.iter().map(|d| &d.driver_id).collect();
        check(
            st.master_url == w.master_url && running == [51] && drivers.is_empty(),
            format!(
                "master {} and executor 51 of {app} running, not 52, and no driver",
                w.master_url
            ),
            format!(
                "master {}, executors {running:?}, drivers {drivers:?}",
                st.master_url
            ),
        )
    }

    async fn foreign_executor(ctx: Ctx) -> Outcome {
        use crate::kit::driver::{executor, registered as driver, SMALL};
        let d = driver(&ctx, SMALL).await?;
        let mut first = executor(&ctx, &d, "1", 1, Version::V2).await?;
        let mut second = executor(&ctx, &d, "2", 1, Version::V2).await?;
        first.launched().await?;
        let t = first.task(&ctx).await?;
        // The second executor reports the first's task as the first.
        second
            .conn
            .send(&Envelope::Send(C::StatusUpdate(StatusUpdate::new(
                "1".into(),
                t.task_id,
                TaskState::Running,
                Vec::new().into(),
                t.cpus,
                BTreeMap::new(),
            ))))
            .await?;
        second
        .conn
        .expect_closed(
            wait(&ctx),
            "the connection closed: a StatusUpdate naming executor 1 over executor 2's connection is refused",
        )
        .await?;
        let mut third = executor(&ctx, &d, "3", 1, Version::V2).await?;
        third
            .conn
            .send(&Envelope::Send(C::LaunchedExecutor(LaunchedExecutor::new(
                "1".into(),
            ))))
            .await?;
        third
        .conn
        .expect_closed(
            wait(&ctx),
            "the connection closed: a LaunchedExecutor naming executor 1 over executor 3's connection is refused",
        )
        .await?;
        // An ask naming another executor is refused with a failure (or a close).
        let mut fourth = executor(&ctx, &d, "4", 1, Version::V2).await?;
        expect_refused(
            &mut fourth.conn,
            Envelope::Ask {
                id: 93,
                message: C::ExecutorDecommissioning(ExecutorDecommissioning::new("1".into())),
            },
            wait(&ctx),
        )
        .await?;
        // The first executor is untouched: it finishes its task and gets the next.
        first.run(&t).await?;
        first.task(&ctx).await.map(|_| ())
    }
}

/// The cases about points.
pub mod points {
    use crate::harness::case::run;
    use crate::harness::case::Case;
    use crate::harness::case::Target;
    use crate::harness::env::Ctx;
    use crate::harness::verdict::check;
    use crate::harness::verdict::fail;
    use crate::harness::verdict::Level;
    use crate::harness::verdict::Outcome;
    use crate::kit::master::submit;
    use crate::kit::support::open_points::*;
    use std::time::Duration;

    /// The cases of this section, each naming its targets.
    pub fn cases(cs: &mut Vec<Case>) {
        cs.push(Case {
            id: "spec/14.2/Z4/kill-after-close".into(),
            level: Level::Must,
            targets: vec![Target::Master],
            quote: "SPEC §14.2 Z4, \"a `RequestKillDriver` that the master reads at least 1 s \
                after the submitting connection's end reached it MUST be taken, one read earlier \
                MAY be refused as a foreign id, so a client that sends it right after closing the \
                submitting connection retries a refusal once after a second\""
                .into(),
            requirement: "a RequestKillDriver right after the submitter closed succeeds, at once \
                or on the retry a second later"
                .into(),
            body: run(kill_after_close),
            ..Case::default()
        });
    }

    async fn kill_after_close(ctx: Ctx) -> Outcome {
        let (a, r) = submit(&ctx).await?;
        let id = r
            .driver_id
            .clone()
            .ok_or_else(|| fail("a submitted driver's id", format!("{r:?}")))?;
        drop(a);
        let want = format!(
            "KillDriverResponse success = true for {id} from a new driver client, at the latest a \
            second \
        after a refusal"
        );
        match kill_from_new_client(&ctx, &id, 86).await? {
            Kill::Taken(success) => return check(success, &want, "success = false"),
            Kill::Refused(how) => ctx.log.push(format!(
                "[client-b] refused right after the close ({how}): once more in 1 s"
            )),
        }
        // The spec's own retry: one, a second after the refusal (read at least 1 s after the close).
        tokio::time::sleep(Duration::from_millis(1100)).await;
        match kill_from_new_client(&ctx, &id, 87).await? {
            Kill::Taken(success) => check(success, &want, "success = false"),
            Kill::Refused(how) => Err(fail(want, format!("refused again a second later: {how}"))),
        }
    }
}
