//! Decommissioning: DecommissionWorkersOnHosts answers how many workers it decommissions and
//! tells each (DecommissionWorker); their executors are DECOMMISSIONED for their applications,
//! the worker confirms with WorkerDecommissioning, and no new executor goes there.

mod cluster;

use cluster::*;
use sparkwire::messages::deploy::DecommissionWorkersOnHosts;
use sparkwire::messages::{DeployMessage, ExecutorState, WorkerState};
use sparkwire::wire::Reply;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn decommissioned_workers_get_no_new_executors() {
    let obs = observer(WORKER_TIMEOUT);
    let work = temp_dir("decommission");
    let master = start_master(&obs, |_| {}).await;
    let m = addr_of(&master);
    let worker = start_worker(&obs, vec![m.clone()], 2, 2048, &work).await;
    let app = TestApp::register(
        std::slice::from_ref(&m),
        app_desc("decom", "exec sleep 60", Some(1), 256),
    )
    .await;
    app.wait("two running executors", |l| {
        count(
            l,
            |m| matches!(m, DeployMessage::ExecutorUpdated(u) if u.state == ExecutorState::Running),
        ) == 2
    })
    .await;

    let ui = ui(&m).await;
    let none = ask(
        &ui,
        DecommissionWorkersOnHosts::new(vec!["elsewhere".into()]),
    )
    .await;
    assert_eq!(none, Reply::Int(0));
    let one = ask(
        &ui,
        DecommissionWorkersOnHosts::new(vec!["127.0.0.1".into()]),
    )
    .await;
    assert_eq!(one, Reply::Int(1));
    ui.close().await;

    let log = app
        .wait("both executors decommissioned", |l| {
            count(l, |m| matches!(m, DeployMessage::ExecutorUpdated(u) if u.state == ExecutorState::Decommissioned)) == 2
        })
        .await;
    for m in &log {
        if let DeployMessage::ExecutorUpdated(u) = m {
            if u.state == ExecutorState::Decommissioned {
                assert_eq!(u.worker_host.as_deref(), Some("127.0.0.1"));
                assert_eq!(u.message.as_deref(), Some("worker decommissioned"));
            }
        }
    }
    let s = wait_master_state(&m, "the worker decommissioned", |s| {
        s.workers[0].state == WorkerState::Decommissioned
    })
    .await;
    assert_eq!(s.active_apps[0].cores_granted, 0);
    // The application wants executors again, but the only worker is decommissioned.
    tokio::time::sleep(WORKER_TIMEOUT).await;
    assert_eq!(
        count(&app.log(), |m| matches!(m, DeployMessage::ExecutorAdded(_))),
        2
    );
    assert_eq!(
        master_state(&m).await.workers[0].state,
        WorkerState::Decommissioned
    );
    assert_clean(&obs);
    app.unregister().await;
    worker.shutdown().await;
    master.shutdown().await;
    let _ = std::fs::remove_dir_all(&work);
}
