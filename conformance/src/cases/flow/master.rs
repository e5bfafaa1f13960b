//! `flow/master/…`: the flows of a master: a whole conversation with the suite playing its peers.

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
use crate::kit::common::spark_id;
use crate::kit::common::unique;
use crate::kit::common::wait;
use crate::kit::master::*;
use crate::kit::support::master::*;
use crate::kit::support::master_clients::*;
use sparkwire::messages::deploy::*;
use sparkwire::messages::DriverState;
use sparkwire::messages::ExecutorState;
use sparkwire::messages::ProfileExecutors;
use sparkwire::messages::Version;
use sparkwire::messages::WorkerState;
use sparkwire::wire::handshake::Role;
use sparkwire::wire::Envelope;
use sparkwire::wire::Reply;
use std::time::Duration;

/// The cases of this section, each naming its targets.
pub fn cases(cs: &mut Vec<Case>) {
    cs.push(Case {
        id: "flow/master/registration/registered".into(),
        level: Level::Must,
        targets: vec![Target::Master],
        timeout: Duration::from_secs(10),
        needs: vec![Need::OwnRegistrations],
        requirement: "the master answers a new worker's RegisterWorker with RegisteredWorker, \
            duplicate = false (rules W3, W4)"
            .into(),
        body: run(flow_master_registration_registered),
        ..Case::default()
    });
    cs.push(Case {
        id: "flow/master/registration/answered-once".into(),
        level: Level::Must,
        targets: vec![Target::Master],
        timeout: Duration::from_secs(10),
        needs: vec![Need::OwnRegistrations],
        requirement:
            "the master sends one RegisterWorkerResponse per RegisterWorker and none unasked (rule \
            W3)"
            .into(),
        body: run(flow_master_registration_answered_once),
        ..Case::default()
    });
    cs.push(Case {
        id: "flow/master/registration/duplicate-id".into(),
        level: Level::Must,
        targets: vec![Target::Master],
        timeout: Duration::from_secs(10),
        needs: vec![Need::OwnRegistrations],
        requirement: "a RegisterWorker for a live worker id is answered RegisterWorkerFailed or \
            duplicate = true (rule W4)"
            .into(),
        body: run(flow_master_registration_duplicate_id),
        ..Case::default()
    });
    cs.push(Case {
        id: "flow/master/registration/in-state".into(),
        level: Level::Must,
        targets: vec![Target::Master],
        timeout: Duration::from_secs(10),
        needs: vec![Need::OwnRegistrations],
        requirement: "a registered worker appears in the master's state ALIVE with the cores and \
            memory it registered"
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
        requirement: "the master answers RegisterApplication with RegisteredApplication carrying \
            an app id of Spark's form (rule P3)"
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
        requirement: "after UnregisterApplication the application is no longer active in the \
            master's state (rule P5)"
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
        requirement: "an application whose client's connection closes is finished: no longer \
            active in the master's state"
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
        requirement: "the master answers RequestClearCompletedDriversAndApps with a bool reply \
            (definition.json)"
            .into(),
        body: run(flow_master_ui_clear_completed),
        ..Case::default()
    });
    cs.push(Case {
        id: "flow/master/drivers/submit".into(),
        level: Level::Must,
        targets: vec![Target::Master],
        timeout: Duration::from_secs(10),
        needs: vec![Need::OwnRegistrations],
        requirement: "the master answers RequestSubmitDriver with success and a driver id of \
            Spark's form (rule D1)"
            .into(),
        body: run(flow_master_drivers_submit),
        ..Case::default()
    });
    cs.push(Case {
        id: "flow/master/drivers/status".into(),
        level: Level::Must,
        targets: vec![Target::Master],
        timeout: Duration::from_secs(10),
        needs: vec![Need::OwnRegistrations],
        requirement:
            "the master answers RequestDriverStatus about a submitted driver with found = \
            true (rule D6)"
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
        requirement: "the master answers RequestKillDriver with a KillDriverResponse naming that \
            driver (rule D6)"
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
        requirement:
            "the master answers RequestDriverStatus about a driver it does not know with found = \
            false"
                .into(),
        body: run(flow_master_drivers_unknown_status),
        ..Case::default()
    });
    cs.push(Case {
        id: "flow/master/scheduling/spread-out".into(),
        level: Level::Must,
        targets: vec![Target::Master],
        timeout: Duration::from_secs(10),
        sharing: Sharing::Alone,
        needs: vec![Need::SpreadsOut(true), Need::NoOtherApplication],
        requirement: "with spreadOut, 3 workers of 4 cores, 1-core executors and cores.max 6 give \
            2 executors on each worker"
            .into(),
        body: run(flow_master_scheduling_spread_out),
        ..Case::default()
    });
    cs.push(Case {
        id: "flow/master/scheduling/consolidate".into(),
        level: Level::Must,
        targets: vec![Target::Master],
        timeout: Duration::from_secs(10),
        sharing: Sharing::Alone,
        needs: vec![Need::SpreadsOut(false), Need::NoOtherApplication],
        requirement: "with spreadOut off, 3 workers of 4 cores, 1-core executors and cores.max 6 \
            give 4 and 2 on two workers"
            .into(),
        body: run(flow_master_scheduling_consolidate),
        ..Case::default()
    });
    cs.push(Case {
        id: "flow/master/scheduling/one-executor-per-worker".into(),
        level: Level::Must,
        targets: vec![Target::Master],
        timeout: Duration::from_secs(10),
        sharing: Sharing::Alone,
        needs: vec![Need::NoOtherApplication],
        requirement: "an application that sets no cores per executor gets one executor per worker \
            holding all its free cores"
            .into(),
        body: run(flow_master_scheduling_one_executor_per_worker),
        ..Case::default()
    });
    cs.push(Case {
        id: "flow/master/scheduling/memory-bound".into(),
        level: Level::Must,
        targets: vec![Target::Master],
        timeout: Duration::from_secs(10),
        sharing: Sharing::Alone,
        needs: vec![Need::NoOtherApplication],
        requirement: "a worker of 1024 MiB and 4 cores gets 2 executors of 512 MiB, no more than \
            its memory holds (rule W8)"
            .into(),
        body: run(flow_master_scheduling_memory_bound),
        ..Case::default()
    });
    cs.push(Case {
        id: "flow/master/scheduling/cores-bound".into(),
        level: Level::Must,
        targets: vec![Target::Master],
        timeout: Duration::from_secs(10),
        sharing: Sharing::Alone,
        needs: vec![Need::NoOtherApplication],
        requirement: "the master never gives a worker more cores than it registered (rule W8): 3 \
            cores and 2-core executors give 1 executor"
            .into(),
        body: run(flow_master_scheduling_cores_bound),
        ..Case::default()
    });
    cs.push(Case {
        id: "flow/master/scheduling/max-cores".into(),
        level: Level::Must,
        targets: vec![Target::Master],
        timeout: Duration::from_secs(10),
        sharing: Sharing::Alone,
        needs: vec![Need::NoOtherApplication],
        requirement: "an application with cores.max 3 gets 3 one-core executors on an 8-core \
            worker, no more"
            .into(),
        body: run(flow_master_scheduling_max_cores),
        ..Case::default()
    });
    cs.push(Case {
        id: "flow/master/executor/launch-fields".into(),
        level: Level::Must,
        targets: vec![Target::Master],
        timeout: Duration::from_secs(10),
        sharing: Sharing::Alone,
        needs: vec![Need::NoOtherApplication],
        requirement: "LaunchExecutor names the app, a fresh executor id, the cores and memory \
            asked, the master's URL (rule E1)"
            .into(),
        body: run(flow_master_executor_launch_fields),
        ..Case::default()
    });
    cs.push(Case {
        id: "flow/master/executor/added".into(),
        level: Level::Must,
        targets: vec![Target::Master],
        timeout: Duration::from_secs(10),
        sharing: Sharing::Alone,
        needs: vec![Need::NoOtherApplication],
        requirement: "the master tells the application ExecutorAdded with the worker, cores and \
            memory launched (rule E4)"
            .into(),
        body: run(flow_master_executor_added),
        ..Case::default()
    });
    cs.push(Case {
        id: "flow/master/executor/state-ask-v2".into(),
        level: Level::Must,
        targets: vec![Target::Master],
        timeout: Duration::from_secs(10),
        sharing: Sharing::Alone,
        needs: vec![Need::NoOtherApplication],
        requirement: "in v2 the master answers ExecutorStateChanged with true and tells the app \
            ExecutorUpdated (rule E5)"
            .into(),
        body: run(flow_master_executor_state_ask_v2),
        ..Case::default()
    });
    cs.push(Case {
        id: "flow/master/executor/state-send-v1".into(),
        level: Level::Must,
        targets: vec![Target::Master],
        timeout: Duration::from_secs(10),
        sharing: Sharing::Alone,
        needs: vec![Need::NoOtherApplication],
        requirement: "in v1 the master takes ExecutorStateChanged as a send and tells the \
            application ExecutorUpdated RUNNING"
            .into(),
        body: run(flow_master_executor_state_send_v1),
        ..Case::default()
    });
    cs.push(Case {
        id: "flow/master/executor/failed-relaunched".into(),
        level: Level::Must,
        targets: vec![Target::Master],
        timeout: Duration::from_secs(10),
        sharing: Sharing::Alone,
        needs: vec![Need::NoOtherApplication],
        requirement: "a failed executor is reported to the app (ExecutorUpdated FAILED) and \
            replaced under a new executor id"
            .into(),
        body: run(flow_master_executor_failed_relaunched),
        ..Case::default()
    });
    cs.push(Case {
        id: "flow/master/executor/retries-exhausted".into(),
        level: Level::Must,
        targets: vec![Target::Master],
        timeout: Duration::from_secs(10),
        sharing: Sharing::Alone,
        needs: vec![Need::NoOtherApplication],
        requirement: "an application whose executors fail maxExecutorRetries times in a row, none \
            running, is removed (ApplicationRemoved)"
            .into(),
        body: run(flow_master_executor_retries_exhausted),
        ..Case::default()
    });
    cs.push(Case {
        id: "flow/master/executor/worker-lost".into(),
        level: Level::Must,
        targets: vec![Target::Master],
        timeout: Duration::from_secs(10),
        sharing: Sharing::Alone,
        needs: vec![Need::NoOtherApplication],
        requirement: "a closed worker connection tells the app ExecutorUpdated LOST and \
            WorkerRemoved, either order (rule W7)"
            .into(),
        body: run(flow_master_executor_worker_lost),
        ..Case::default()
    });
    cs.push(Case {
        id: "flow/master/executor/kill-executors".into(),
        level: Level::Must,
        targets: vec![Target::Master],
        timeout: Duration::from_secs(10),
        sharing: Sharing::Alone,
        needs: vec![Need::NoOtherApplication],
        requirement: "the master answers an application's KillExecutors with true and sends the \
            worker KillExecutor for that executor"
            .into(),
        body: run(flow_master_executor_kill_executors),
        ..Case::default()
    });
    cs.push(Case {
        id: "flow/master/executor/request-executors".into(),
        level: Level::Must,
        targets: vec![Target::Master],
        timeout: Duration::from_secs(10),
        sharing: Sharing::Alone,
        needs: vec![Need::NoOtherApplication],
        requirement: "the master answers RequestExecutors(1) with true and launches 1 executor on \
            a worker with room for 4"
            .into(),
        body: run(flow_master_executor_request_executors),
        ..Case::default()
    });
    cs.push(Case {
        id: "flow/master/app/finished-kills-and-notifies".into(),
        level: Level::Must,
        targets: vec![Target::Master],
        timeout: Duration::from_secs(10),
        sharing: Sharing::Alone,
        needs: vec![Need::NoOtherApplication],
        requirement: "an unregistered app's executors get KillExecutor and its worker \
            ApplicationFinished, any order (rule P6)"
            .into(),
        body: run(flow_master_app_finished_kills_and_notifies),
        ..Case::default()
    });
    cs.push(Case {
        id: "flow/master/drivers/launch".into(),
        level: Level::Must,
        targets: vec![Target::Master],
        timeout: Duration::from_secs(10),
        sharing: Sharing::Alone,
        needs: vec![Need::NoOtherApplication],
        requirement:
            "the master launches a submitted driver on a worker with room (LaunchDriver), \
            then says RUNNING (D2, D6)"
                .into(),
        body: run(flow_master_drivers_launch),
        ..Case::default()
    });
    cs.push(Case {
        id: "flow/master/drivers/kill-running".into(),
        level: Level::Must,
        targets: vec![Target::Master],
        timeout: Duration::from_secs(10),
        sharing: Sharing::Alone,
        needs: vec![Need::NoOtherApplication],
        requirement: "killing a running driver sends KillDriver to the worker running it (rule D3)"
            .into(),
        body: run(flow_master_drivers_kill_running),
        ..Case::default()
    });
    cs.push(Case {
        id: "flow/master/drivers/finished".into(),
        level: Level::Must,
        targets: vec![Target::Master],
        timeout: Duration::from_secs(10),
        sharing: Sharing::Alone,
        needs: vec![Need::NoOtherApplication],
        requirement: "a driver reported FINISHED is no longer active: RequestDriverStatus says \
            FINISHED or not found (rule D5)"
            .into(),
        body: run(flow_master_drivers_finished),
        ..Case::default()
    });
    cs.push(Case {
        id: "flow/master/failover/none-unasked".into(),
        level: Level::Must,
        targets: vec![Target::Master],
        timeout: Duration::from_secs(10),
        sharing: Sharing::Alone,
        needs: vec![Need::NoOtherApplication],
        requirement: "an active master sends a registered worker no MasterChanged or unasked \
            registration answer (W3, F1)"
            .into(),
        body: run(flow_master_failover_none_unasked),
        ..Case::default()
    });
    cs.push(Case {
        id: "flow/master/heartbeat/timeout".into(),
        level: Level::Must,
        targets: vec![Target::Master],
        timeout: Duration::from_secs(10),
        sharing: Sharing::Alone,
        needs: vec![Need::NoOtherApplication],
        requirement: "a worker silent for the worker timeout is lost: the master marks it DEAD or \
            drops it"
            .into(),
        body: run(flow_master_heartbeat_timeout),
        ..Case::default()
    });
    cs.push(Case {
        id: "flow/master/heartbeat/keeps-alive".into(),
        level: Level::Must,
        targets: vec![Target::Master],
        timeout: Duration::from_secs(10),
        sharing: Sharing::Alone,
        needs: vec![Need::NoOtherApplication],
        requirement:
            "a worker that heartbeats more often than the worker timeout stays ALIVE past it"
                .into(),
        body: run(flow_master_heartbeat_keeps_alive),
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

async fn flow_master_scheduling_spread_out(ctx: Ctx) -> Outcome {
    let counts = allocation(&ctx, 3, 4, Some(1), Some(6)).await?;
    check(
        counts == [2, 2, 2],
        "2, 2 and 2 executors",
        format!("{counts:?}"),
    )
}

async fn flow_master_scheduling_consolidate(ctx: Ctx) -> Outcome {
    let mut counts = allocation(&ctx, 3, 4, Some(1), Some(6)).await?;
    counts.sort_unstable();
    check(
        counts == [0, 2, 4],
        "4, 2 and 0 executors",
        format!("{counts:?}"),
    )
}

async fn flow_master_scheduling_one_executor_per_worker(ctx: Ctx) -> Outcome {
    let mut ws = Vec::new();
    for i in 0..2 {
        ws.push(worker(&ctx, &format!("worker{i}"), 3, 4096, Version::V2).await?);
    }
    let (_app, _id) = app(&ctx, "app", app_desc(None, 256, None), Version::V2).await?;
    for w in &mut ws {
        let ls = launches(&ctx, w).await;
        check(
            ls.len() == 1 && ls[0].cores == 3,
            "one executor of 3 cores",
            format!("{:?}", ls.iter().map(|l| l.cores).collect::<Vec<_>>()),
        )?;
    }
    Ok(())
}

async fn flow_master_scheduling_memory_bound(ctx: Ctx) -> Outcome {
    let mut w = worker(&ctx, "worker", 4, 1024, Version::V2).await?;
    let (_app, _id) = app(&ctx, "app", app_desc(Some(1), 512, None), Version::V2).await?;
    let ls = launches(&ctx, &mut w).await;
    check(ls.len() == 2, "2 executors", format!("{}", ls.len()))
}

async fn flow_master_scheduling_cores_bound(ctx: Ctx) -> Outcome {
    let mut w = worker(&ctx, "worker", 3, 4096, Version::V2).await?;
    let (_app, _id) = app(&ctx, "app", app_desc(Some(2), 64, None), Version::V2).await?;
    let ls = launches(&ctx, &mut w).await;
    check(
        ls.len() == 1 && ls[0].cores == 2,
        "1 executor of 2 cores",
        format!("{:?}", ls.iter().map(|l| l.cores).collect::<Vec<_>>()),
    )
}

async fn flow_master_scheduling_max_cores(ctx: Ctx) -> Outcome {
    let mut w = worker(&ctx, "worker", 8, 8192, Version::V2).await?;
    let (_app, _id) = app(&ctx, "app", app_desc(Some(1), 64, Some(3)), Version::V2).await?;
    let ls = launches(&ctx, &mut w).await;
    check(ls.len() == 3, "3 executors", format!("{}", ls.len()))
}

async fn flow_master_executor_launch_fields(ctx: Ctx) -> Outcome {
    let mut w = worker(&ctx, "worker", 2, 4096, Version::V2).await?;
    let (_app, id) = app(&ctx, "app", app_desc(Some(1), 300, None), Version::V2).await?;
    let ls = launches(&ctx, &mut w).await;
    check(ls.len() == 2, "2 LaunchExecutor", format!("{}", ls.len()))?;
    check(
        ls.iter()
            .all(|l| l.app_id == id && l.cores == 1 && l.memory == 300 && !l.master_url.is_empty()),
        "the application's id, 1 core and 300 MiB each",
        format!("{ls:?}"),
    )?;
    check(
        ls[0].exec_id != ls[1].exec_id,
        "distinct executor ids",
        format!("{} twice", ls[0].exec_id),
    )
}

async fn flow_master_executor_added(ctx: Ctx) -> Outcome {
    let mut w = worker(&ctx, "worker", 1, 4096, Version::V2).await?;
    let (mut app_conn, _id) = app(&ctx, "app", app_desc(Some(1), 128, None), Version::V2).await?;
    let l = launch(&ctx, &mut w).await?;
    let a = app_conn
        .expect::<D, ExecutorAdded>(wait(&ctx), "ExecutorAdded", |e| match e {
            Envelope::Send(D::ExecutorAdded(a)) => Some(a.clone()),
            _ => None,
        })
        .await?;
    check(
        a.id == l.exec_id && a.worker_id == w.id && a.cores == l.cores && a.memory == l.memory,
        format!(
            "executor {} on {} with {} cores, {} MiB",
            l.exec_id, w.id, l.cores, l.memory
        ),
        format!("{a:?}"),
    )
}

async fn flow_master_executor_state_ask_v2(ctx: Ctx) -> Outcome {
    let mut w = worker(&ctx, "worker", 1, 4096, Version::V2).await?;
    if w.conn.v() != Version::V2 {
        // Spark 3.0.3 on its own wire: version 1 is all it speaks (SPEC §15.3).
        return Err(Failure::Skipped(
            "a version 2 case, and the master speaks version 1".into(),
        ));
    }
    let (mut app_conn, id) = app(&ctx, "app", app_desc(Some(1), 128, None), Version::V2).await?;
    let l = launch(&ctx, &mut w).await?;
    report(&mut w, &id, l.exec_id, ExecutorState::Running, None, 41).await?;
    w.conn
        .expect::<D, ()>(wait(&ctx), "a bool reply true to ask 41", |e| {
            matches!(
                e,
                Envelope::Reply {
                    id: 41,
                    reply: Reply::Bool(true)
                }
            )
            .then_some(())
        })
        .await?;
    updated(&ctx, &mut app_conn, l.exec_id, ExecutorState::Running)
        .await
        .map(|_| ())
}

async fn flow_master_executor_state_send_v1(ctx: Ctx) -> Outcome {
    let mut w = worker(&ctx, "worker", 1, 4096, Version::V1).await?;
    let (mut app_conn, id) = app(&ctx, "app", app_desc(Some(1), 128, None), Version::V1).await?;
    let l = launch(&ctx, &mut w).await?;
    // One-way, as version 1 has it, whatever a worker of the Spark release spoken does (a Spark
    // 3.2 or 3.3 master takes the state only as an ask: SPEC §15.4 S8).
    w.conn
        .send(&Envelope::Send(D::ExecutorStateChanged(
            ExecutorStateChanged::new(id.clone(), l.exec_id, ExecutorState::Running),
        )))
        .await?;
    updated(&ctx, &mut app_conn, l.exec_id, ExecutorState::Running)
        .await
        .map(|_| ())
}

async fn flow_master_executor_failed_relaunched(ctx: Ctx) -> Outcome {
    let mut w = worker(&ctx, "worker", 1, 4096, Version::V2).await?;
    let (mut app_conn, id) = app(&ctx, "app", app_desc(Some(1), 128, None), Version::V2).await?;
    let l = launch(&ctx, &mut w).await?;
    report(&mut w, &id, l.exec_id, ExecutorState::Running, None, 42).await?;
    report(&mut w, &id, l.exec_id, ExecutorState::Failed, Some(1), 43).await?;
    updated(&ctx, &mut app_conn, l.exec_id, ExecutorState::Failed).await?;
    let again = launch(&ctx, &mut w).await?;
    check(
        again.exec_id != l.exec_id,
        "a new executor id",
        format!("{} again", again.exec_id),
    )
}

async fn flow_master_executor_retries_exhausted(ctx: Ctx) -> Outcome {
    let mut w = worker(&ctx, "worker", 1, 4096, Version::V2).await?;
    let (mut app_conn, id) = app(&ctx, "app", app_desc(Some(1), 128, None), Version::V2).await?;
    let retries = ctx.settings.max_executor_retries;
    // The worker heartbeats throughout: the case must not depend on how fast the master answers
    // relative to its worker timeout (a slow master would otherwise rightly declare it lost).
    for i in 0..retries {
        let l = expect_heartbeating(&ctx, &mut w, None, "LaunchExecutor", |e| match e {
            Envelope::Send(D::LaunchExecutor(l)) => Some(l.clone()),
            _ => None,
        })
        .await?;
        report(
            &mut w,
            &id,
            l.exec_id,
            ExecutorState::Failed,
            Some(1),
            100 + u64::from(i),
        )
        .await?;
    }
    expect_heartbeating(
        &ctx,
        &mut w,
        Some(&mut app_conn),
        "ApplicationRemoved",
        |e| matches!(e, Envelope::Send(D::ApplicationRemoved(_))).then_some(()),
    )
    .await
}

async fn flow_master_executor_worker_lost(ctx: Ctx) -> Outcome {
    let mut w = worker(&ctx, "worker", 1, 4096, Version::V2).await?;
    let (mut app_conn, id) = app(&ctx, "app", app_desc(Some(1), 128, None), Version::V2).await?;
    let l = launch(&ctx, &mut w).await?;
    report(&mut w, &id, l.exec_id, ExecutorState::Running, None, 44).await?;
    let host = w.host.clone();
    let wid = w.id.clone();
    drop(w);
    // The spec orders neither before the other: both, in any order.
    let mut lost = None;
    both(
        &ctx,
        &mut app_conn,
        "ExecutorUpdated LOST for the executor and WorkerRemoved, in any order",
        |e| match e {
            Envelope::Send(D::ExecutorUpdated(u))
                if u.id == l.exec_id && u.state == ExecutorState::Lost =>
            {
                lost = Some(u.clone());
                Some(0)
            }
            Envelope::Send(D::WorkerRemoved(r)) if r.id == wid => Some(1),
            _ => None,
        },
    )
    .await?;
    let u = lost.ok_or_else(|| fail("ExecutorUpdated LOST", "none"))?;
    // Version 1 (Spark 3.0) says only that the worker was lost (`workerLost`), which reads
    // as a host of "" (SPEC §5.1).
    let host_ok = if app_conn.v() == Version::V1 {
        u.worker_host.is_some()
    } else {
        u.worker_host.as_deref() == Some(host.as_str())
    };
    check(
        host_ok,
        format!("workerHost {host}"),
        format!("{:?}", u.worker_host),
    )
}

async fn flow_master_executor_kill_executors(ctx: Ctx) -> Outcome {
    let mut w = worker(&ctx, "worker", 1, 4096, Version::V2).await?;
    let (mut app_conn, id) = app(&ctx, "app", app_desc(Some(1), 128, None), Version::V2).await?;
    let l = launch(&ctx, &mut w).await?;
    report(&mut w, &id, l.exec_id, ExecutorState::Running, None, 45).await?;
    updated(&ctx, &mut app_conn, l.exec_id, ExecutorState::Running).await?;
    app_conn
        .send(&Envelope::Ask {
            id: 46,
            message: D::KillExecutors(KillExecutors::new(id.clone(), vec![l.exec_id.to_string()])),
        })
        .await?;
    app_conn
        .expect::<D, ()>(wait(&ctx), "a bool reply true", |e| {
            matches!(
                e,
                Envelope::Reply {
                    id: 46,
                    reply: Reply::Bool(true)
                }
            )
            .then_some(())
        })
        .await?;
    w.conn
        .expect::<D, ()>(wait(&ctx), "KillExecutor for that executor", |e| match e {
            Envelope::Send(D::KillExecutor(k)) if k.exec_id == l.exec_id && k.app_id == id => {
                Some(())
            }
            _ => None,
        })
        .await
}

async fn flow_master_executor_request_executors(ctx: Ctx) -> Outcome {
    let mut w = worker(&ctx, "worker", 4, 4096, Version::V2).await?;
    let mut desc = app_desc(Some(1), 128, None);
    desc.initial_executor_limit = Some(0);
    let (mut app_conn, id) = app(&ctx, "app", desc.clone(), Version::V2).await?;
    let none = launches(&ctx, &mut w).await;
    check(
        none.is_empty(),
        "no executor while the limit is 0",
        format!("{}", none.len()),
    )?;
    let req = D::RequestExecutors(RequestExecutors::new(
        id.clone(),
        vec![ProfileExecutors::new(desc.default_profile.clone(), 1)],
    ));
    app_conn
        .send(&Envelope::Ask {
            id: 47,
            message: req,
        })
        .await?;
    app_conn
        .expect::<D, ()>(wait(&ctx), "a bool reply true", |e| {
            matches!(
                e,
                Envelope::Reply {
                    id: 47,
                    reply: Reply::Bool(true)
                }
            )
            .then_some(())
        })
        .await?;
    let ls = launches(&ctx, &mut w).await;
    check(ls.len() == 1, "1 executor", format!("{}", ls.len()))
}

async fn flow_master_app_finished_kills_and_notifies(ctx: Ctx) -> Outcome {
    let mut w = worker(&ctx, "worker", 1, 4096, Version::V2).await?;
    let (mut app_conn, id) = app(&ctx, "app", app_desc(Some(1), 128, None), Version::V2).await?;
    let l = launch(&ctx, &mut w).await?;
    report(&mut w, &id, l.exec_id, ExecutorState::Running, None, 48).await?;
    updated(&ctx, &mut app_conn, l.exec_id, ExecutorState::Running).await?;
    app_conn
        .send(&Envelope::Send(D::UnregisterApplication(
            UnregisterApplication::new(id.clone()),
        )))
        .await?;
    // The spec orders neither before the other: both, in any order.
    both(
        &ctx,
        &mut w.conn,
        "KillExecutor for the executor and ApplicationFinished, in any order",
        |e| match e {
            Envelope::Send(D::KillExecutor(k)) if k.exec_id == l.exec_id => Some(0),
            Envelope::Send(D::ApplicationFinished(a)) if a.id == id => Some(1),
            _ => None,
        },
    )
    .await
}

async fn flow_master_drivers_launch(ctx: Ctx) -> Outcome {
    let mut w = worker(&ctx, "worker", 2, 4096, Version::V2).await?;
    let (mut c, r) = submit(&ctx).await?;
    let id = r.driver_id.clone().unwrap_or_default();
    w.conn
        .expect::<D, ()>(wait(&ctx), "LaunchDriver", |e| {
            matches!(e, Envelope::Send(D::LaunchDriver(l)) if l.driver_id == id).then_some(())
        })
        .await?;
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
        .await?;
    check(
        s.found
            && s.state == Some(DriverState::Running)
            && s.worker_id.as_deref() == Some(w.id.as_str()),
        format!("RUNNING on {}", w.id),
        format!("{s:?}"),
    )
}

async fn flow_master_drivers_kill_running(ctx: Ctx) -> Outcome {
    let mut w = worker(&ctx, "worker", 2, 4096, Version::V2).await?;
    let (mut c, r) = submit(&ctx).await?;
    let id = r.driver_id.clone().unwrap_or_default();
    w.conn
        .expect::<D, ()>(wait(&ctx), "LaunchDriver", |e| {
            matches!(e, Envelope::Send(D::LaunchDriver(l)) if l.driver_id == id).then_some(())
        })
        .await?;
    c.send(&Envelope::Ask {
        id: 9,
        message: D::RequestKillDriver(RequestKillDriver::new(id.clone())),
    })
    .await?;
    w.conn
        .expect::<D, ()>(wait(&ctx), "KillDriver", |e| {
            matches!(e, Envelope::Send(D::KillDriver(k)) if k.driver_id == id).then_some(())
        })
        .await
}

async fn flow_master_drivers_finished(ctx: Ctx) -> Outcome {
    let mut w = worker(&ctx, "worker", 2, 4096, Version::V2).await?;
    let (mut c, r) = submit(&ctx).await?;
    let id = r.driver_id.clone().unwrap_or_default();
    w.conn
        .expect::<D, ()>(wait(&ctx), "LaunchDriver", |e| {
            matches!(e, Envelope::Send(D::LaunchDriver(l)) if l.driver_id == id).then_some(())
        })
        .await?;
    w.conn
        .send(&Envelope::Send(D::DriverStateChanged(
            DriverStateChanged::new(id.clone(), DriverState::Finished),
        )))
        .await?;
    tokio::time::sleep(Duration::from_millis(100)).await;
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
        .await?;
    check(
        !s.found || s.state == Some(DriverState::Finished),
        "FINISHED or not found",
        format!("{s:?}"),
    )
}

async fn flow_master_failover_none_unasked(ctx: Ctx) -> Outcome {
    let mut w = worker(&ctx, "worker", 0, 0, Version::V2).await?;
    w.conn
        .send(&Envelope::Send(D::Heartbeat(Heartbeat::new(
            w.id.clone(),
            worker_ref(&w.host, 1),
        ))))
        .await?;
    w.conn
        .expect_none::<D>(
            ctx.settings.quiet,
            "no MasterChanged, ReconnectWorker or RegisteredWorker",
            |e| {
                matches!(
                    e,
                    Envelope::Send(
                        D::MasterChanged(_) | D::ReconnectWorker(_) | D::RegisteredWorker(_)
                    )
                )
            },
        )
        .await?;
    check(
        state(&ctx)
            .await?
            .workers
            .iter()
            .any(|i| i.id == w.id && i.state == WorkerState::Alive),
        "the worker still ALIVE",
        "not ALIVE",
    )
}

async fn flow_master_heartbeat_timeout(ctx: Ctx) -> Outcome {
    let Some(t) = ctx.settings.worker_timeout else {
        return Err(Failure::Skipped(
            "pass --worker-timeout SECS (the master's) to check heartbeat timeouts".into(),
        ));
    };
    if ctx.log.wire() != Wire::Sparkwire {
        // Spark's WorkerInfo.state is @transient: MasterStateResponse reads ALIVE for
        // every worker on Spark's wire (SPEC §15.4). What an application is told shows it.
        let (mut app_conn, _id) =
            app(&ctx, "app", app_desc(Some(1), 64, Some(0)), Version::V2).await?;
        let w = worker(&ctx, "worker", 0, 0, Version::V2).await?;
        let id = w.id.clone();
        return app_conn
            .expect::<D, ()>(
                t * 2 + Duration::from_millis(500),
                "WorkerRemoved for the silent worker",
                |e| match e {
                    Envelope::Send(D::WorkerRemoved(r)) if r.id == id => Some(()),
                    _ => None,
                },
            )
            .await;
    }
    let w = worker(&ctx, "worker", 0, 0, Version::V2).await?;
    tokio::time::sleep(t * 2 + Duration::from_millis(500)).await;
    let s = state(&ctx).await?;
    check(
        !s.workers
            .iter()
            .any(|i| i.id == w.id && i.state == WorkerState::Alive),
        "the worker DEAD or gone",
        "still ALIVE",
    )
}

async fn flow_master_heartbeat_keeps_alive(ctx: Ctx) -> Outcome {
    let Some(t) = ctx.settings.worker_timeout else {
        return Err(Failure::Skipped(
            "pass --worker-timeout SECS (the master's) to check heartbeat timeouts".into(),
        ));
    };
    // On Spark's wire the state reads ALIVE for any worker (SPEC §15.4): an application
    // listens for the WorkerRemoved it would be told.
    let mut watcher = if ctx.log.wire() != Wire::Sparkwire {
        Some(
            app(&ctx, "app", app_desc(Some(1), 64, Some(0)), Version::V2)
                .await?
                .0,
        )
    } else {
        None
    };
    let mut w = worker(&ctx, "worker", 0, 0, Version::V2).await?;
    let end = tokio::time::Instant::now() + t * 2 + Duration::from_millis(500);
    while tokio::time::Instant::now() < end {
        w.conn
            .send(&Envelope::Send(D::Heartbeat(Heartbeat::new(
                w.id.clone(),
                worker_ref(&w.host, 1),
            ))))
            .await?;
        tokio::time::sleep(t / 4).await;
    }
    if let Some(watcher) = &mut watcher {
        let id = w.id.clone();
        watcher
            .expect_none::<D>(
                Duration::from_millis(300),
                "no WorkerRemoved for the heartbeating worker",
                |e| matches!(e, Envelope::Send(D::WorkerRemoved(r)) if r.id == id),
            )
            .await?;
    }
    let s = state(&ctx).await?;
    check(
        s.workers
            .iter()
            .any(|i| i.id == w.id && i.state == WorkerState::Alive),
        "the worker ALIVE",
        "DEAD or gone",
    )
}

/// The cases about points.
pub mod points {
    use crate::harness::case::run;
    use crate::harness::case::Case;
    use crate::harness::case::Target;
    use crate::harness::env::Ctx;
    use crate::harness::verdict::check;
    use crate::harness::verdict::Level;
    use crate::harness::verdict::Outcome;
    use crate::kit::master::app;
    use crate::kit::master::app_desc;
    use crate::kit::master::launch;
    use crate::kit::master::report;
    use crate::kit::master::worker;
    use crate::kit::master::Need;
    use crate::kit::support::open_points::*;
    use sparkwire::messages::ExecutorState;
    use sparkwire::messages::Version;
    use std::time::Duration;

    /// The cases of this section, each naming its targets.
    pub fn cases(cs: &mut Vec<Case>) {
        cs.push(Case {
            id: "flow/master/v1/worker-lost".into(),
            level: Level::Must,
            targets: vec![Target::Master],
            timeout: Duration::from_secs(10),
            needs: vec![Need::NoOtherApplication],
            quote: "SPEC §5, `ExecutorUpdated` at version 1: \"lost → `\"\"`, else nil / lost = \
                host is set\""
                .into(),
            requirement: "at v1, ExecutorUpdated RUNNING has workerLost false, and LOST after the \
                worker's close has it true"
                .into(),
            body: run(v1_worker_lost),
            ..Case::default()
        });
    }

    async fn v1_worker_lost(ctx: Ctx) -> Outcome {
        crate::harness::peer::require_version(&ctx.log, Version::V1)?;
        let mut w = worker(&ctx, "worker", 1, 4096, Version::V1).await?;
        let (mut app_conn, id) =
            app(&ctx, "app", app_desc(Some(1), 128, None), Version::V1).await?;
        let l = launch(&ctx, &mut w).await?;
        report(&mut w, &id, l.exec_id, ExecutorState::Running, None, 44).await?;
        let running = updated_v1(&ctx, &mut app_conn, l.exec_id, ExecutorState::Running).await?;
        check(
            running == Some(false),
            "the ExecutorUpdated RUNNING its worker reported: workerLost false",
            format!("workerLost {running:?}"),
        )?;
        drop(w);
        let lost = updated_v1(&ctx, &mut app_conn, l.exec_id, ExecutorState::Lost).await?;
        check(
            lost == Some(true),
            "the ExecutorUpdated LOST once its worker's connection closed: workerLost true",
            format!("workerLost {lost:?}"),
        )
    }
}
