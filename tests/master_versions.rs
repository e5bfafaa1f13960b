//! Protocol version 1 end to end: a master that speaks only version 1 (Spark 3.0) runs a worker
//! and an application of this crate, which negotiate down to it. In version 1 the worker sends
//! ExecutorStateChanged one-way (Spark 3.0's form) instead of asking; the strict validator, which
//! judges each connection by its negotiated version, flags the other form.

use common::cluster;
mod common;

use cluster::*;
use common::files::temp_dir;
use sparkwire::connection::{Connection, ConnectionConfig, ConnectionError};
use sparkwire::messages::deploy::RequestMasterState;
use sparkwire::messages::{DeployMessage, ExecutorState, Version, WorkerState};
use sparkwire::wire::handshake::{HandshakeError, Role};
use sparkwire::wire::Reply;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_version_1_master_runs_an_executor_with_one_way_state_changes() {
    let obs = observer(WORKER_TIMEOUT);
    let work = temp_dir("v1");
    let master = start_master(&obs, |c| c.versions = vec![Version::V1]).await;
    let m = addr_of(&master);
    let _worker = start_worker(&obs, vec![m.clone()], 2, 2048, &work).await;
    wait_master_state(&m, "the worker registered", |s| {
        s.workers.len() == 1 && s.workers[0].state == WorkerState::Alive
    })
    .await;

    let app = TestApp::register(
        std::slice::from_ref(&m),
        app_desc("v1", "exec sleep 60", None, 512),
    )
    .await;
    let app_id = app.app_id().await;
    assert!(app_id.starts_with("app-"), "{app_id}");
    assert_eq!(app.active().negotiated().version, Version::V1);
    app.wait("the executor running", |log| {
        log.iter().any(
            |m| matches!(m, DeployMessage::ExecutorUpdated(u) if u.state == ExecutorState::Running),
        )
    })
    .await;
    app.unregister().await;
    wait_master_state(&m, "the application finished and its cores freed", |s| {
        s.active_apps.is_empty() && s.workers[0].cores_used == 0
    })
    .await;
    assert_clean(&obs);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_ui_peer_reads_the_state_of_a_version_2_master_which_refuses_a_version_1_worker() {
    let obs = observer(WORKER_TIMEOUT);
    let master = start_master(&obs, |c| c.versions = vec![Version::V2]).await;
    let m = addr_of(&master);

    let stream = tokio::net::TcpStream::connect(master.addr())
        .await
        .expect("connect");
    let refused = Connection::<DeployMessage>::connect(
        stream,
        Role::Worker,
        "worker-v1",
        ConnectionConfig::default().with_versions(&[Version::V1]),
    )
    .await
    .err();
    assert_eq!(
        refused,
        Some(ConnectionError::Handshake(
            HandshakeError::NoCommonVersion {
                offered: vec![1],
                supported: vec![2],
            }
        ))
    );

    let page = ui(&m).await;
    assert_eq!(page.negotiated().version, Version::V2);
    assert_eq!(page.negotiated().peer_role, Role::Master);
    match ask(&page, RequestMasterState::new()).await {
        Reply::Message(DeployMessage::MasterStateResponse(s)) => assert!(s.workers.is_empty()),
        other => panic!("expected MasterStateResponse, got {other:?}"),
    }
    page.close().await;
    assert_clean(&obs);
}
