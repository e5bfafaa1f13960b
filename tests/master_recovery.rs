//! Recovery over a real recovery directory: a master killed and restarted on it recovers the
//! workers and the application from the directory, tells them MasterChanged, learns what runs
//! from their answers, and the cluster carries on with the executor it had. A standby master
//! taking over from an active one that died runs on real cores in the in-memory cluster
//! (`master_cluster.rs`).

use common::cluster;
mod common;

use std::time::Duration;

use cluster::*;
use common::files::temp_dir;
use sparkwire::messages::deploy::RequestReadyz;
use sparkwire::messages::{Addr, DeployMessage, ExecutorState, RecoveryState, WorkerState};
use sparkwire::reference::master::MasterHandle;
use sparkwire::wire::Reply;

// Long enough that a loaded machine never delays a renewal past it.
const LEASE: Duration = Duration::from_millis(2000);

async fn ready(m: &Addr) -> bool {
    let c = ui(m).await;
    let r = ask(&c, RequestReadyz::new()).await;
    c.close().await;
    r == Reply::Bool(true)
}

/// An application with one running executor on one worker, registered with `masters`.
async fn running_cluster(
    obs: &sparkwire::reference::observe::StrictObserver,
    masters: Vec<Addr>,
    work: &std::path::Path,
) -> (sparkwire::reference::worker::WorkerHandle, TestApp) {
    let worker = start_worker(obs, masters.clone(), 2, 2048, work).await;
    let mut desc = app_desc("recover", "exec sleep 60", Some(1), 256);
    desc.max_cores = Some(1);
    let app = TestApp::register(&masters, desc).await;
    app.wait("a running executor", |l| {
        l.iter().any(
            |m| matches!(m, DeployMessage::ExecutorUpdated(u) if u.state == ExecutorState::Running),
        )
    })
    .await;
    (worker, app)
}

/// Waits until `m` recovered the worker (with its executor) and the application.
async fn recovered(m: &Addr, worker_id: &str, app_id: &str) {
    let s = wait_master_state(m, "recovery complete", |s| {
        s.status == RecoveryState::Alive
            && s.workers
                .iter()
                .any(|w| w.id == worker_id && w.state == WorkerState::Alive && w.cores_used == 1)
            && s.active_apps
                .iter()
                .any(|a| a.id == app_id && a.cores_granted == 1)
    })
    .await;
    assert_eq!(s.active_apps.len(), 1);
}

async fn finish(app: TestApp, app_id: &str, work: &std::path::Path, m: &Addr) {
    app.unregister().await;
    wait_master_state(m, "the application finished", |s| {
        s.active_apps.is_empty() && s.workers.iter().all(|w| w.cores_used == 0)
    })
    .await;
    assert!(work.join(app_id).join("0").join("stdout").exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_master_restarted_on_its_recovery_directory_takes_back_workers_and_applications() {
    let obs = observer(WORKER_TIMEOUT);
    let work = temp_dir("restart");
    let dir = temp_dir("restart-recovery");
    let first = start_master(&obs, |c| {
        c.recovery_dir = Some(dir.clone());
        c.lease = LEASE;
    })
    .await;
    let m = addr_of(&first);
    let port = first.addr().port();
    eventually_ready(&m).await;
    let (worker, app) = running_cluster(&obs, vec![m.clone()], &work).await;
    let app_id = app.app_id().await;
    assert!(
        std::fs::read_dir(&dir).expect("dir").count() >= 2,
        "app and worker persisted"
    );

    first.kill().await;
    let second: MasterHandle = start_master(&obs, |c| {
        c.recovery_dir = Some(dir.clone());
        c.lease = LEASE;
        c.port = port;
    })
    .await;
    recovered(&m, worker.id(), &app_id).await;
    app.wait("MasterChanged", |l| {
        l.iter()
            .any(|m| matches!(m, DeployMessage::MasterChanged(_)))
    })
    .await;
    // The executor carried on: no second one was started.
    assert_eq!(
        count(&app.log(), |m| matches!(m, DeployMessage::ExecutorAdded(_))),
        1
    );
    assert_clean(&obs);
    finish(app, &app_id, &work, &m).await;
    assert_clean(&obs);
    worker.shutdown().await;
    second.shutdown().await;
    let _ = std::fs::remove_dir_all(&work);
    let _ = std::fs::remove_dir_all(&dir);
}

async fn eventually_ready(m: &Addr) {
    let deadline = tokio::time::Instant::now() + PATIENCE;
    while !ready(m).await {
        assert!(
            tokio::time::Instant::now() < deadline,
            "master {m} never became ready"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}
