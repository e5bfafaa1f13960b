//! Worker registration with the master, as Spark 4.0.1 answers it: accepted, re-registered
//! (duplicate), refused at an address already taken, and the heartbeat of an unknown worker.

mod cluster;

use cluster::*;
use sparkwire::messages::deploy::{Heartbeat, RegisterWorkerFailed, RegisteredWorker};
use sparkwire::messages::{Addr, DeployMessage, EndpointRef, WorkerState};

fn registered(log: &[DeployMessage]) -> Vec<RegisteredWorker> {
    log.iter()
        .filter_map(|m| match m {
            DeployMessage::RegisteredWorker(r) => Some(r.clone()),
            _ => None,
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_is_registered_and_a_repeated_registration_is_answered_duplicate() {
    let obs = observer(WORKER_TIMEOUT);
    let master = start_master(&obs, |_| {}).await;
    let m = addr_of(&master);
    let w = FakeWorker::connect(&m, "worker-a", Addr::new("127.0.0.1", 50001)).await;
    w.register(&m, 4, 1024).await;
    let log = w
        .wait("RegisteredWorker", |l| registered(l).len() == 1)
        .await;
    let first = &registered(&log)[0];
    assert!(!first.duplicate);
    assert_eq!(
        first.master_address, m,
        "echoes the address the worker dialled"
    );
    assert_eq!(first.master.address.as_ref(), Some(&m));

    w.register(&m, 4, 1024).await;
    let log = w
        .wait("a second answer", |l| registered(l).len() == 2)
        .await;
    assert!(registered(&log)[1].duplicate);
    let s = master_state(&m).await;
    assert_eq!(s.workers.len(), 1);
    assert_eq!(
        (s.workers[0].cores, s.workers[0].state),
        (4, WorkerState::Alive)
    );
    assert_clean(&obs);
    w.close().await;
    master.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_worker_id_at_a_registered_address_is_refused() {
    let obs = observer(WORKER_TIMEOUT);
    let master = start_master(&obs, |_| {}).await;
    let m = addr_of(&master);
    let addr = Addr::new("127.0.0.1", 50002);
    let a = FakeWorker::connect(&m, "worker-a", addr.clone()).await;
    a.register(&m, 2, 1024).await;
    a.wait("RegisteredWorker", |l| registered(l).len() == 1)
        .await;
    let b = FakeWorker::connect(&m, "worker-b", addr).await;
    b.register(&m, 2, 1024).await;
    let log = b
        .wait("RegisterWorkerFailed", |l| {
            l.iter()
                .any(|m| matches!(m, DeployMessage::RegisterWorkerFailed(_)))
        })
        .await;
    let failed = find(&log, |m| match m {
        DeployMessage::RegisterWorkerFailed(RegisterWorkerFailed { message, .. }) => {
            Some(message.clone())
        }
        _ => None,
    })
    .expect("refusal");
    assert_eq!(
        failed,
        "Attempted to re-register worker at same address: 127.0.0.1:50002"
    );
    assert_eq!(master_state(&m).await.workers.len(), 1);
    assert_clean(&obs);
    a.close().await;
    b.close().await;
    master.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_declared_dead_is_asked_to_reconnect_and_registers_again() {
    let obs = observer(WORKER_TIMEOUT);
    let master = start_master(&obs, |_| {}).await;
    let m = addr_of(&master);
    let w = FakeWorker::connect(&m, "worker-quiet", Addr::new("127.0.0.1", 50003)).await;
    w.register(&m, 2, 1024).await;
    w.wait("RegisteredWorker", |l| registered(l).len() == 1)
        .await;
    // No heartbeat: the master declares it DEAD after the worker timeout.
    wait_master_state(&m, "the silent worker dead", |s| {
        s.workers
            .iter()
            .any(|x| x.id == "worker-quiet" && x.state == WorkerState::Dead)
    })
    .await;
    w.send(Heartbeat::new(
        "worker-quiet".into(),
        EndpointRef::at(w.addr.clone(), "Worker"),
    ))
    .await;
    let log = w
        .wait("ReconnectWorker", |l| {
            l.iter()
                .any(|m| matches!(m, DeployMessage::ReconnectWorker(_)))
        })
        .await;
    let url = find(&log, |m| match m {
        DeployMessage::ReconnectWorker(r) => Some(r.master_url.clone()),
        _ => None,
    });
    assert_eq!(url, Some(master.url()));
    w.register(&m, 2, 1024).await;
    let log = w
        .wait("registered again", |l| registered(l).len() == 2)
        .await;
    assert!(
        !registered(&log)[1].duplicate,
        "a DEAD worker registers anew"
    );
    wait_master_state(&m, "alive again", |s| {
        s.workers
            .iter()
            .any(|x| x.id == "worker-quiet" && x.state == WorkerState::Alive)
    })
    .await;
    assert_clean(&obs);
    w.close().await;
    master.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_real_worker_stops_when_its_registration_is_refused() {
    let obs = observer(WORKER_TIMEOUT);
    let work = temp_dir("refused");
    let master = start_master(&obs, |_| {}).await;
    let m = addr_of(&master);
    // A port the real worker will listen on, already claimed at the master by another id.
    let port = {
        let probe = std::net::TcpListener::bind("127.0.0.1:0").expect("probe");
        probe.local_addr().expect("addr").port()
    };
    let squatter = FakeWorker::connect(
        &m,
        "worker-squatter",
        Addr::new("127.0.0.1", i32::from(port)),
    )
    .await;
    squatter.register(&m, 1, 512).await;
    squatter
        .wait("registered", |l| registered(l).len() == 1)
        .await;
    let mut worker =
        start_worker_with(&obs, vec![m.clone()], 1, 512, &work, |c| c.port = port).await;
    let exit = tokio::time::timeout(PATIENCE, worker.stopped())
        .await
        .expect("the worker stops");
    assert_eq!(
        exit,
        sparkwire::reference::worker::WorkerExit::RegistrationFailed(format!(
            "Attempted to re-register worker at same address: 127.0.0.1:{port}"
        ))
    );
    assert_clean(&obs);
    squatter.close().await;
    master.shutdown().await;
    let _ = std::fs::remove_dir_all(&work);
}
