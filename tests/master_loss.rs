//! Losing workers: a worker whose connection closes, and one that stops heartbeating, are DEAD;
//! their executors are LOST for their applications (with the worker's host), every application
//! hears WorkerRemoved, and the cores are scheduled elsewhere.

mod cluster;

use cluster::*;
use sparkwire::messages::deploy::ExecutorStateChanged;
use sparkwire::messages::{Addr, DeployMessage, ExecutorState, WorkerState};

fn lost(log: &[DeployMessage]) -> Option<sparkwire::messages::deploy::ExecutorUpdated> {
    find(log, |m| match m {
        DeployMessage::ExecutorUpdated(u) if u.state == ExecutorState::Lost => Some(u.clone()),
        _ => None,
    })
}

fn removed(log: &[DeployMessage]) -> Option<sparkwire::messages::deploy::WorkerRemoved> {
    find(log, |m| match m {
        DeployMessage::WorkerRemoved(r) => Some(r.clone()),
        _ => None,
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_that_goes_away_loses_its_executors_which_are_started_elsewhere() {
    let obs = observer(WORKER_TIMEOUT);
    let work = temp_dir("loss");
    let master = start_master(&obs, |_| {}).await;
    let m = addr_of(&master);
    let a = start_worker(&obs, vec![m.clone()], 2, 2048, &work).await;
    let b = start_worker(&obs, vec![m.clone()], 2, 2048, &work).await;
    wait_master_state(&m, "two workers", |s| s.workers.len() == 2).await;
    let mut desc = app_desc("loss", "exec sleep 60", None, 256);
    desc.max_cores = Some(2);
    let app = TestApp::register(std::slice::from_ref(&m), desc).await;
    let log = app
        .wait("an executor running", |l| {
            l.iter().any(|m| matches!(m, DeployMessage::ExecutorUpdated(u) if u.state == ExecutorState::Running))
        })
        .await;
    let first = find(&log, |m| match m {
        DeployMessage::ExecutorAdded(e) => Some(e.clone()),
        _ => None,
    })
    .expect("ExecutorAdded");
    let (doomed, survivor) = if first.worker_id == a.id() {
        (a, b)
    } else {
        (b, a)
    };
    let doomed_id = doomed.id().to_string();
    let doomed_port = doomed.addr().port();
    doomed.shutdown().await;

    let log = app
        .wait("the executor lost and a new one on the other worker", |l| {
            lost(l).is_some()
                && removed(l).is_some()
                && l.iter()
                    .any(|m| matches!(m, DeployMessage::ExecutorAdded(e) if e.id == 1))
        })
        .await;
    let update = lost(&log).expect("LOST");
    assert_eq!(update.id, 0);
    assert_eq!(update.message.as_deref(), Some("worker lost"));
    assert_eq!(update.worker_host.as_deref(), Some("127.0.0.1"));
    let gone = removed(&log).expect("WorkerRemoved");
    assert_eq!(gone.id, doomed_id);
    assert_eq!(gone.host, "127.0.0.1");
    assert_eq!(
        gone.message,
        format!("127.0.0.1:{doomed_port} got disassociated")
    );
    let second = find(&log, |m| match m {
        DeployMessage::ExecutorAdded(e) if e.id == 1 => Some(e.clone()),
        _ => None,
    })
    .expect("second executor");
    assert_eq!(second.worker_id, survivor.id());
    let s = master_state(&m).await;
    assert!(s
        .workers
        .iter()
        .any(|w| w.id == doomed_id && w.state == WorkerState::Dead));
    assert_clean(&obs);
    app.unregister().await;
    survivor.shutdown().await;
    master.shutdown().await;
    let _ = std::fs::remove_dir_all(&work);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_silent_for_the_timeout_is_dead_and_its_executors_lost() {
    let obs = observer(WORKER_TIMEOUT);
    let master = start_master(&obs, |_| {}).await;
    let m = addr_of(&master);
    let w = FakeWorker::connect(&m, "worker-silent", Addr::new("127.0.0.1", 50010)).await;
    w.register(&m, 2, 2048).await;
    let app = TestApp::register(
        std::slice::from_ref(&m),
        app_desc("silent", "true", None, 512),
    )
    .await;
    let log = w
        .wait("LaunchExecutor", |l| {
            l.iter()
                .any(|m| matches!(m, DeployMessage::LaunchExecutor(_)))
        })
        .await;
    let launch = find(&log, |m| match m {
        DeployMessage::LaunchExecutor(l) => Some(l.clone()),
        _ => None,
    })
    .expect("launch");
    let answer = w
        .conn
        .ask_with_timeout(
            ExecutorStateChanged::new(
                launch.app_id.clone(),
                launch.exec_id,
                ExecutorState::Running,
            )
            .into(),
            PATIENCE,
        )
        .await
        .expect("answered");
    assert_eq!(answer, sparkwire::wire::Reply::Bool(true));
    // No heartbeat ever: DEAD after the timeout, although the connection stays open.
    let log = app
        .wait("LOST and WorkerRemoved", |l| {
            lost(l).is_some() && removed(l).is_some()
        })
        .await;
    assert_eq!(
        lost(&log).expect("lost").worker_host.as_deref(),
        Some("127.0.0.1")
    );
    assert_eq!(
        removed(&log).expect("removed").message,
        "Not receiving heartbeat for 1 seconds"
    );
    assert_clean(&obs);
    app.unregister().await;
    w.close().await;
    master.shutdown().await;
}
