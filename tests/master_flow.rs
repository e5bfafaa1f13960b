//! The master with real workers over loopback TCP, every connection checked by the validator in
//! strict mode: a worker registers and heartbeats, an application registers and gets an executor,
//! the worker runs it as a process and reports its states, and the application's end kills it;
//! the worker's allow-list against the file system. The same protocol without sockets or
//! processes, and a worker's loss, an executor's exit and a refused registration, run on real
//! cores in the in-memory cluster (`master_cluster.rs`, `master_loss.rs`), as does the master's
//! behaviour in detail (`master_registration.rs`, `master_scheduling.rs`, `master_retries.rs`,
//! `master_failover.rs`, `master_drivers.rs`, `master_ownership.rs`, `master_decommission.rs`).

use common::cluster;
mod common;

use cluster::*;
use common::files::temp_dir;
use sparkwire::messages::deploy::RequestWorkerState;
use sparkwire::messages::{DeployMessage, ExecutorState, WorkerState};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn application_gets_a_running_executor_that_is_killed_when_it_unregisters() {
    let obs = observer(WORKER_TIMEOUT);
    let work = temp_dir("flow");
    let master = start_master(&obs, |_| {}).await;
    let m = addr_of(&master);
    let worker = start_worker(&obs, vec![m.clone()], 4, 4096, &work).await;
    wait_master_state(&m, "the worker registered", |s| {
        s.workers.len() == 1 && s.workers[0].state == WorkerState::Alive
    })
    .await;

    let app = TestApp::register(
        std::slice::from_ref(&m),
        app_desc("flow", "exec sleep 60", None, 512),
    )
    .await;
    let app_id = app.app_id().await;
    assert!(
        app_id.starts_with("app-") && app_id.ends_with("-0000"),
        "{app_id}"
    );
    let log = app
        .wait("the executor running", |log| {
            log.iter().any(|m| matches!(m, DeployMessage::ExecutorUpdated(u) if u.state == ExecutorState::Running))
        })
        .await;
    let added = log
        .iter()
        .find_map(|m| match m {
            DeployMessage::ExecutorAdded(a) => Some(a.clone()),
            _ => None,
        })
        .expect("ExecutorAdded");
    assert_eq!((added.id, added.cores, added.memory), (0, 4, 512));
    assert_eq!(added.worker_id, worker.id());
    assert!(work.join(&app_id).join("0").join("stdout").exists());

    // Heartbeats keep the worker alive well past the timeout.
    tokio::time::sleep(WORKER_TIMEOUT * 2).await;
    let s = master_state(&m).await;
    assert_eq!(s.workers[0].state, WorkerState::Alive);
    assert_eq!(s.workers[0].cores_used, 4);

    app.unregister().await;
    wait_master_state(&m, "the application finished and its cores freed", |s| {
        s.active_apps.is_empty() && s.completed_apps.len() == 1 && s.workers[0].cores_used == 0
    })
    .await;
    // The worker killed the process and reports it.
    let ui = ui(&sparkwire::messages::Addr::new(
        "127.0.0.1",
        i32::from(worker.addr().port()),
    ))
    .await;
    let deadline = tokio::time::Instant::now() + PATIENCE;
    loop {
        match ask(&ui, RequestWorkerState::new()).await {
            sparkwire::wire::Reply::Message(DeployMessage::WorkerStateResponse(w))
                if w.executors.is_empty()
                    && w.finished_executors
                        .iter()
                        .any(|e| e.state == ExecutorState::Killed) =>
            {
                break
            }
            _ => {}
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the executor was never killed"
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    ui.close().await;
    assert_clean(&obs);
    worker.shutdown().await;
    master.shutdown().await;
    let _ = std::fs::remove_dir_all(&work);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_program_off_the_allow_list_is_refused_with_failed() {
    let obs = observer(WORKER_TIMEOUT);
    let work = temp_dir("allow");
    let master = start_master(&obs, |c| c.core.max_executor_retries = 1).await;
    let m = addr_of(&master);
    let worker = start_worker(&obs, vec![m.clone()], 1, 1024, &work).await;
    let mut desc = app_desc("evil", "true", None, 256);
    desc.command.main_class = "/bin/echo".into();
    desc.command.arguments = vec!["pwned".into()];
    let app = TestApp::register(std::slice::from_ref(&m), desc).await;
    let log = app
        .wait("FAILED", |l| {
            l.iter().any(|m| matches!(m, DeployMessage::ExecutorUpdated(u) if u.state == ExecutorState::Failed))
        })
        .await;
    let failed = find(&log, |m| match m {
        DeployMessage::ExecutorUpdated(u) if u.state == ExecutorState::Failed => Some(u.clone()),
        _ => None,
    })
    .expect("failed");
    let text = failed.message.expect("a message");
    assert!(
        text.contains("not on the worker's allow-list (--allow-exec, --allow-exec-any)"),
        "{text}"
    );
    assert_eq!(failed.exit_status, None);
    let app_id = app.app_id().await;
    assert!(
        !work.join(&app_id).join("0").join("stdout").exists(),
        "nothing was run"
    );
    assert_clean(&obs);
    app.close().await;
    worker.shutdown().await;
    master.shutdown().await;
    let _ = std::fs::remove_dir_all(&work);
}
