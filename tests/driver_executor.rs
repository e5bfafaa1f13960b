//! The reference driver and executor over loopback, without a master: executors started by hand,
//! in-process or as `sparkwire executor` processes, the driver's every connection validated
//! strictly. What needs no socket or process (retries, task and result sizes, cancelling, a
//! refused registration, a lost executor, updates for unknown tasks and unsupported asks,
//! executors started by workers) is tested on `node::sim::Cluster` in `node_driver.rs`.

mod common;
use common::driver;

use std::sync::Arc;
use std::time::Duration;

use common::processes::kill9;
use driver::*;
use sparkwire::node::executor::ExecutorExit;
use sparkwire::reference::driver::Driver;
use sparkwire::reference::task::{PiJob, SleepJob, SumSquaresJob};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_runs_on_two_executors_with_every_connection_valid() {
    let (config, observer) = strict_config("sum");
    let driver = Driver::start(config).await.expect("driver");
    let e1 = executor(&driver, "1", 2);
    let e2 = executor(&driver, "2", 1);
    wait_status(&driver, "two executors", |s| s.ready_executors() == 2).await;
    let job = SumSquaresJob {
        partitions: 9,
        n: 100_000,
    };
    let expected = format!("Sum of squares of 0..100000 is {}", job.expected());
    let result = patiently("the job", driver.run(Arc::new(job)))
        .await
        .expect("driver")
        .expect("job succeeds");
    assert_eq!(result.output, expected);
    assert_eq!(result.tasks, 9);
    let status = driver.stop().await.expect("status");
    // Three frames per task, as Spark: LaunchTask, StatusUpdate RUNNING and FINISHED.
    assert_eq!(sent(&status, "LaunchTask"), 9);
    assert_eq!(received(&status, "StatusUpdate"), 18);
    assert_eq!(sent(&status, "StopExecutor"), 2);
    assert_eq!(
        status.executor_connections, 4,
        "a bootstrap and a main connection each"
    );
    for e in [e1, e2] {
        let exit = patiently("the executor", e).await.expect("task");
        assert_eq!(exit, Ok(ExecutorExit::Stopped));
    }
    let verdict = observer.verdict(true);
    assert!(verdict.is_clean(), "{verdict}: {:?}", verdict.examples);
    assert!(verdict.events > 40, "{verdict}");
}

/// `sparkwire driver`, `submit` and `local-cluster` busy-poll on one thread: the poller must leave the
/// executors' connections, the timers and the jobs their turns.
#[tokio::test(flavor = "current_thread")]
async fn a_busy_polling_driver_on_one_thread_runs_jobs_with_every_connection_valid() {
    let (mut config, observer) = strict_config("busy");
    config.busy_poll = Duration::from_micros(50);
    let driver = Driver::start(config).await.expect("driver");
    let e1 = executor(&driver, "1", 1);
    let e2 = executor(&driver, "2", 1);
    wait_status(&driver, "two executors", |s| s.ready_executors() == 2).await;
    for round in 0..2 {
        let job = PiJob {
            partitions: 300,
            samples: 10,
            seed: round,
        };
        let result = patiently("the job", driver.run(Arc::new(job)))
            .await
            .expect("driver")
            .expect("job succeeds");
        assert_eq!(result.tasks, 300, "round {round}");
        assert!(
            result.output.starts_with("Pi is roughly 3."),
            "{}",
            result.output
        );
    }
    // Between jobs nothing is out and the driver still answers (the poller is idle).
    tokio::time::sleep(Duration::from_millis(20)).await;
    let status = driver.stop().await.expect("status");
    assert_eq!(status.tasks_finished, 600);
    assert_eq!(sent(&status, "LaunchTask"), 600);
    for e in [e1, e2] {
        let exit = patiently("the executor", e).await.expect("task");
        assert_eq!(exit, Ok(ExecutorExit::Stopped));
    }
    let verdict = observer.verdict(true);
    assert!(verdict.is_clean(), "{verdict}: {:?}", verdict.examples);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_executor_killed_with_sigkill_mid_job_has_its_tasks_run_elsewhere() {
    let (config, observer) = strict_config("sigkill");
    let driver = Driver::start(config).await.expect("driver");
    let mut victim = executor_process(&driver, "1", 1);
    let _survivor = executor_process(&driver, "2", 1);
    wait_status(&driver, "two executors", |s| s.ready_executors() == 2).await;
    let job = driver
        .submit(Arc::new(SleepJob {
            partitions: 6,
            millis: 300,
        }))
        .await
        .expect("submitted");
    // Its LaunchTask written too (both executors' first tasks), not only handed to its writer.
    wait_status(&driver, "executor 1 running a task", |s| {
        s.executors.iter().any(|e| e.id == "1" && e.free_cores == 0) && sent(s, "LaunchTask") >= 2
    })
    .await;
    kill9(victim.id().expect("pid"));
    let result = patiently("the job", job.result()).await.expect("succeeds");
    assert_eq!(result.output, "6 tasks slept 300 ms each");
    let status = driver.stop().await.expect("status");
    assert_eq!(status.executors_lost, 1);
    assert!(sent(&status, "LaunchTask") >= 7, "the lost task ran again");
    let code = patiently("the victim's exit", victim.wait())
        .await
        .expect("wait");
    assert_eq!(code.code(), None, "killed by a signal");
    let verdict = observer.verdict(true);
    assert!(verdict.is_clean(), "{verdict}: {:?}", verdict.examples);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_executor_process_exits_when_its_driver_goes_away() {
    let (config, _observer) = strict_config("gone");
    let driver = Driver::start(config).await.expect("driver");
    let mut child = executor_process(&driver, "1", 1);
    wait_status(&driver, "the executor", |s| s.ready_executors() == 1).await;
    // A driver ended without StopExecutor, as a crash: its connections drop.
    drop(driver);
    let status = patiently("the executor's exit", child.wait())
        .await
        .expect("wait");
    assert_eq!(status.code(), Some(1));
}

/// Connects to the driver as an executor would, without the executor's manners.
async fn raw_executor(
    driver: &Driver,
    id: &str,
) -> sparkwire::connection::Connection<sparkwire::messages::CoarseMessage> {
    let stream = tokio::net::TcpStream::connect(driver.address())
        .await
        .expect("tcp");
    sparkwire::connection::Connection::connect(
        stream,
        sparkwire::wire::handshake::Role::Executor,
        id,
        sparkwire::connection::ConnectionConfig::default(),
    )
    .await
    .expect("handshake")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_misbehaving_executor_connection_is_closed_and_the_driver_goes_on() {
    use sparkwire::messages::coarse::StatusUpdate;
    use sparkwire::messages::{CoarseMessage, Payload, TaskState};
    use tokio::io::AsyncWriteExt;

    let (config, observer) = strict_config("rude");
    let driver = Driver::start(config).await.expect("driver");
    // A StatusUpdate before registering breaks rule X1: the strict driver closes that connection.
    let mut rude = raw_executor(&driver, "rude").await;
    rude.send(CoarseMessage::StatusUpdate(StatusUpdate::new(
        "9".into(),
        12,
        TaskState::Finished,
        Payload::default(),
        1,
        Default::default(),
    )))
    .await
    .expect("sent");
    let closed = patiently("the close", async {
        loop {
            if let Err(e) = rude.recv().await {
                return e;
            }
        }
    })
    .await;
    // … and told why (SPEC §8.1): the rule it broke.
    match &closed {
        sparkwire::connection::ConnectionError::ClosedByPeer(reason) => {
            assert_eq!(reason.kind, "RuleViolation");
            assert!(reason.message.contains("X1"), "{reason}");
        }
        other => panic!("a close envelope, got {other:?}"),
    }
    // Garbage after a handshake, and a connection that never says hello, close only themselves.
    let mut raw = tokio::net::TcpStream::connect(driver.address())
        .await
        .expect("tcp");
    raw.write_all(&[0xff; 64]).await.expect("written");
    drop(raw);
    // The driver still serves real executors.
    let _e = executor(&driver, "1", 1);
    let r = patiently(
        "the job",
        driver.run(Arc::new(SumSquaresJob {
            partitions: 3,
            n: 1000,
        })),
    )
    .await
    .expect("driver")
    .expect("job");
    assert_eq!(r.output, "Sum of squares of 0..1000 is 332833500");
    driver.stop().await;
    let verdict = observer.verdict(true);
    assert_eq!(verdict.total(), 1, "{verdict}");
    assert!(verdict.examples[0].contains("X1"), "{:?}", verdict.examples);
}
