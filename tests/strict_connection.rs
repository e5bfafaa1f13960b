//! A connection with a validator view as its inspector refuses an illegal message as it arrives
//! (strict mode), closing that connection only.

use std::time::Duration;

use sparkwire::connection::{Connection, ConnectionConfig, ConnectionError};
use sparkwire::messages::coarse::LaunchedExecutor;
use sparkwire::messages::{CoarseMessage, Version};
use sparkwire::validate::{Endpoint, SharedValidator};
use sparkwire::wire::handshake::{client_handshake, server_handshake, Identity, Role};

fn identity(role: Role, id: &str) -> Identity {
    Identity {
        role,
        id: id.into(),
        versions: vec![Version::V1, Version::V2],
        secret: None,
        admin_secret: None,
        close_reason: true,
    }
}

#[tokio::test]
async fn strict_driver_refuses_an_executor_that_skips_registration() {
    let shared = SharedValidator::default();
    let (a, b) = tokio::io::duplex(64 * 1024);
    let server = tokio::spawn({
        let shared = shared.clone();
        async move {
            let est = server_handshake(b, &identity(Role::Driver, "driver"), |_| true)
                .await
                .expect("handshake");
            let peer = est.negotiated().peer_id.clone();
            let version = est.negotiated().version;
            let view = shared.connection(
                1,
                Endpoint::new(Role::Driver, "driver"),
                Endpoint::new(Role::Executor, &peer),
                false,
                version,
                || 0,
            );
            assert!(view.opened().is_empty());
            let config = ConnectionConfig::<CoarseMessage>::default().with_inspector(view);
            let mut conn = Connection::establish(est, config).expect("established");
            conn.recv().await
        }
    });
    let est = client_handshake(a, &identity(Role::Executor, "exec-1"))
        .await
        .expect("handshake");
    let conn: Connection<CoarseMessage> =
        Connection::establish(est, ConnectionConfig::default()).expect("established");
    // LaunchedExecutor before RegisterExecutor breaks X1.
    conn.send(CoarseMessage::LaunchedExecutor(LaunchedExecutor::new(
        "1".into(),
    )))
    .await
    .expect("sent");
    let got = tokio::time::timeout(Duration::from_secs(10), server)
        .await
        .expect("in time")
        .expect("task");
    match got {
        Err(ConnectionError::Rejected { reason, .. }) => assert!(reason.contains("X1"), "{reason}"),
        other => panic!("expected a rejection, got {other:?}"),
    }
}
