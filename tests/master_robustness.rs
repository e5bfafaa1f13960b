//! Bad input never takes the master down: garbage instead of a handshake, messages from the
//! wrong kind of peer, asks the master does not serve, and unreadable files in the recovery
//! directory each affect only themselves.

use common::cluster;
mod common;

use cluster::*;
use common::files::temp_dir;
use sparkwire::connection::ConnectionError;
use sparkwire::messages::deploy::{RegisterApplication, RequestWorkerState};
use sparkwire::messages::{Addr, DeployMessage, EndpointRef, RecoveryState};
use tokio::io::AsyncWriteExt;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn garbage_and_misdirected_messages_leave_the_master_serving() {
    // No validator here: it would refuse the misdirected messages before the master sees them.
    let obs = observer(WORKER_TIMEOUT);
    let master = start_master(&obs, |c| c.observer = None).await;
    let m = addr_of(&master);

    let mut raw = tokio::net::TcpStream::connect(master.addr())
        .await
        .expect("connect");
    raw.write_all(b"\x00\x00\x00\x10GET / HTTP/1.1\r\n\r\n")
        .await
        .expect("write");
    raw.write_all(&[0xff; 4096]).await.expect("write");
    drop(raw);

    // A worker that sends an application's message is ignored; the ask it makes is refused.
    let w = FakeWorker::connect(&m, "worker-odd", Addr::new("127.0.0.1", 52000)).await;
    w.register(&m, 1, 512).await;
    w.wait("registered", |l| {
        l.iter()
            .any(|m| matches!(m, DeployMessage::RegisteredWorker(_)))
    })
    .await;
    w.send(RegisterApplication::new(
        app_desc("odd", "true", None, 128),
        EndpointRef::client("odd"),
    ))
    .await;
    let c = client(&m).await;
    let refused = c
        .ask_with_timeout(RequestWorkerState::new().into(), PATIENCE)
        .await
        .expect_err("the master serves no worker state");
    assert!(
        matches!(refused, ConnectionError::Remote { .. }),
        "{refused:?}"
    );
    c.close().await;

    let s = master_state(&m).await;
    assert_eq!(s.status, RecoveryState::Alive);
    assert_eq!(s.workers.len(), 1);
    assert!(
        s.active_apps.is_empty(),
        "a worker cannot register an application"
    );
    assert!(!w
        .log()
        .iter()
        .any(|m| matches!(m, DeployMessage::RegisteredApplication(_))));
    w.close().await;
    master.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unreadable_recovery_files_are_skipped() {
    let obs = observer(WORKER_TIMEOUT);
    let dir = temp_dir("corrupt-recovery");
    std::fs::write(dir.join("app_app-x.json"), b"{ torn").expect("write");
    std::fs::write(dir.join("worker_w.json"), b"[]").expect("write");
    std::fs::write(dir.join("notes.txt"), b"not a record").expect("write");
    let master = start_master(&obs, |c| c.recovery_dir = Some(dir.clone())).await;
    let m = addr_of(&master);
    let s = wait_master_state(&m, "ALIVE", |s| s.status == RecoveryState::Alive).await;
    assert!(s.workers.is_empty() && s.active_apps.is_empty());
    master.shutdown().await;
    let _ = std::fs::remove_dir_all(&dir);
}

/// A heartbeat from a worker connection that registered nothing, naming a worker the master never
/// registered: the default master ignores it, as Spark 4.0.1's does, and the connection stays;
/// only a strict master (its validator, rule W1) refuses it and closes the connection.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_a_strict_master_refuses_a_heartbeat_before_the_registration() {
    use sparkwire::connection::ConnectionError;
    use sparkwire::messages::deploy::Heartbeat;
    let heartbeat = || {
        Heartbeat::new(
            "worker-ghost".into(),
            EndpointRef::at(Addr::new("127.0.0.1", 9), "Worker"),
        )
    };
    let obs = observer(WORKER_TIMEOUT);

    let default = start_master(&obs, |c| c.observer = None).await;
    let m = addr_of(&default);
    let ghost = FakeWorker::connect(&m, "worker-ghost", Addr::new("127.0.0.1", 9)).await;
    ghost.send(heartbeat()).await;
    // Still open and served: it registers afterwards over the same connection.
    ghost.register(&m, 1, 512).await;
    ghost
        .wait("registered", |l| {
            l.iter()
                .any(|m| matches!(m, DeployMessage::RegisteredWorker(_)))
        })
        .await;
    assert_eq!(
        ghost
            .log()
            .iter()
            .map(|m| sparkwire::messages::Family::name(m))
            .collect::<Vec<_>>(),
        ["RegisteredWorker"],
        "nothing answers the heartbeat"
    );
    ghost.close().await;

    let strict = start_master(&obs, |_| {}).await;
    let m = addr_of(&strict);
    let ghost = FakeWorker::connect(&m, "worker-ghost", Addr::new("127.0.0.1", 9)).await;
    ghost.send(heartbeat()).await;
    let closed = tokio::time::timeout(PATIENCE, ghost.conn.closed())
        .await
        .expect("the strict master closes the connection");
    match closed {
        ConnectionError::ClosedByPeer(reason) => {
            assert_eq!(reason.kind, "RuleViolation", "{reason}");
            assert!(reason.message.contains("W1"), "{reason}");
        }
        other => panic!("a close envelope of kind RuleViolation, got {other:?}"),
    }
    assert!(obs.violation_count() >= 1);
}
