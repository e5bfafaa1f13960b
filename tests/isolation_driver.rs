//! A driver never waits on one executor (issue 13): an executor that stops reading is closed as a
//! slow consumer, its tasks run on the others, and the job completes. Over real TCP.

mod common;
use common::driver;

use std::sync::Arc;

use driver::*;
use sparkwire::connection::{Connection, ConnectionConfig};
use sparkwire::messages::coarse::LaunchedExecutor;
use sparkwire::messages::CoarseMessage;
use sparkwire::reference::driver::{Driver, DriverConfig};
use sparkwire::reference::task::BigTaskJob;
use sparkwire::wire::handshake::Role;
use sparkwire::wire::Reply;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_executor_that_stops_reading_is_dropped_and_its_tasks_run_on_the_others() {
    // No validator: the stuck executor never reports on the tasks it was sent.
    let mut config = DriverConfig::new("stuck");
    config.revive_interval = std::time::Duration::from_millis(50);
    let driver = Driver::start(config).await.expect("driver");
    // The stuck executor registers with many cores, then reads nothing more: its connection holds
    // one message for an owner that never takes it, then stops reading.
    let stream = tokio::net::TcpStream::connect(driver.address())
        .await
        .expect("tcp");
    let mut stuck: Connection<CoarseMessage> = Connection::connect(
        stream,
        Role::Executor,
        "stuck",
        ConnectionConfig::default().with_incoming_queue(1),
    )
    .await
    .expect("handshake");
    let registered = stuck
        .ask(CoarseMessage::RegisterExecutor(
            common::samples::register_executor()
                .with_executor_id("stuck".into())
                .with_cores(64),
        ))
        .await
        .expect("answered");
    assert_eq!(registered, Reply::Bool(true));
    stuck
        .send(CoarseMessage::LaunchedExecutor(LaunchedExecutor::new(
            "stuck".into(),
        )))
        .await
        .expect("sent");
    wait_status(&driver, "the stuck executor ready", |s| {
        s.ready_executors() == 1
    })
    .await;
    // Then a healthy one.
    let _healthy = executor(&driver, "1", 1);
    wait_status(&driver, "two executors", |s| s.ready_executors() == 2).await;
    // 48 tasks of 1 MiB: most are offered to the stuck executor, whose queue fills.
    let done = patiently(
        "the job",
        driver.run(Arc::new(BigTaskJob {
            partitions: 48,
            size: 1 << 20,
        })),
    )
    .await
    .expect("driver")
    .expect("the job succeeds on the healthy executor");
    assert_eq!(done.output, "48 tasks read 50331648 input bytes");
    let status = wait_status(&driver, "the stuck executor dropped", |s| {
        s.executors.len() == 1
    })
    .await;
    assert_eq!(status.executors[0].id, "1");
    // Closed: told why when it read the close envelope behind what was queued (SPEC §8.1), or
    // not, when it did not read within the writer's bound for it. The driver has let go of it;
    // its own side learns so once it has read what was queued before the close: the stuck
    // executor now reads (until then its connection held one message for it and read no more, so
    // whether it had seen the close yet depended on how far it had read when it stopped).
    let reason = tokio::time::timeout(std::time::Duration::from_secs(120), async {
        loop {
            if let Err(reason) = stuck.recv().await {
                return reason;
            }
        }
    })
    .await
    .expect("the stuck executor's connection closes");
    assert!(
        match &reason {
            sparkwire::connection::ConnectionError::PeerClosed => true,
            sparkwire::connection::ConnectionError::ClosedByPeer(reason) =>
                reason.kind == "SlowConsumer",
            _ => false,
        },
        "{reason:?}"
    );
    driver.stop().await;
}
