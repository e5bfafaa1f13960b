//! The reference driver and executor over loopback, without a master: executors started by hand,
//! in-process or as `sparkwire executor` processes, the driver's every connection validated
//! strictly.

mod support;

use std::sync::Arc;
use std::time::Duration;

use sparkwire::node::executor::ExecutorExit;
use sparkwire::reference::driver::Driver;
use sparkwire::reference::executor::ExecutorError;
use sparkwire::reference::task::{
    BigResultJob, BigTaskJob, FlakyJob, PiJob, SleepJob, SumSquaresJob,
};
use support::*;

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
async fn a_second_executor_with_a_registered_id_is_refused_with_sparks_text() {
    let (config, observer) = strict_config("dup");
    let driver = Driver::start(config).await.expect("driver");
    let _first = executor(&driver, "7", 1);
    wait_status(&driver, "executor 7", |s| s.ready_executors() == 1).await;
    let second = patiently("the refusal", executor(&driver, "7", 1))
        .await
        .expect("task");
    assert_eq!(
        second,
        Err(ExecutorError::Refused("Duplicate executor ID: 7".into()))
    );
    // The first one still works.
    let r = driver
        .run(Arc::new(PiJob {
            partitions: 2,
            samples: 1000,
            seed: 1,
        }))
        .await
        .expect("driver");
    assert!(r.is_ok(), "{r:?}");
    driver.stop().await;
    let verdict = observer.verdict(true);
    assert!(verdict.is_clean(), "{verdict}: {:?}", verdict.examples);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flaky_task_is_retried_until_it_succeeds() {
    let (config, observer) = strict_config("flaky");
    let driver = Driver::start(config).await.expect("driver");
    let _e = executor(&driver, "1", 2);
    let job = driver
        .submit(Arc::new(FlakyJob {
            partitions: 2,
            failures: 2,
        }))
        .await
        .expect("submitted");
    let progress = job.watch_progress();
    let result = patiently("the job", job.result()).await.expect("succeeds");
    assert_eq!(result.output, "2 tasks succeeded on attempts [2, 2]");
    assert_eq!(progress.borrow().failed_attempts, 4);
    let status = driver.stop().await.expect("status");
    assert_eq!(sent(&status, "LaunchTask"), 6);
    let verdict = observer.verdict(true);
    assert!(verdict.is_clean(), "{verdict}: {:?}", verdict.examples);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_failing_four_times_fails_its_job_with_the_last_error() {
    let (config, observer) = strict_config("failing");
    let driver = Driver::start(config).await.expect("driver");
    let _e = executor(&driver, "1", 1);
    let outcome = patiently(
        "the job",
        driver.run(Arc::new(FlakyJob {
            partitions: 1,
            failures: 100,
        })),
    )
    .await
    .expect("driver");
    let error = outcome.expect_err("the job fails");
    assert_eq!(
        error.message,
        "Job aborted due to stage failure: Task 0 in stage 0.0 failed 4 times, most recent \
         failure: Lost task 0.3 in stage 0.0 (TID 3) (127.0.0.1 executor 1): \
         java.lang.RuntimeException: flaky task fails attempt 3 of partition 0"
    );
    let status = driver.stop().await.expect("status");
    assert_eq!(sent(&status, "LaunchTask"), 4);
    let verdict = observer.verdict(true);
    assert!(verdict.is_clean(), "{verdict}: {:?}", verdict.examples);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_oversized_task_fails_its_job_with_sparks_message_and_the_next_job_succeeds() {
    let (mut config, observer) = strict_config("big");
    config.max_message_size_mib = 1;
    let driver = Driver::start(config).await.expect("driver");
    let _e1 = executor(&driver, "1", 1);
    let _e2 = executor(&driver, "2", 1);
    wait_status(&driver, "two executors", |s| s.ready_executors() == 2).await;
    let big = patiently(
        "the big job",
        driver.run(Arc::new(BigTaskJob {
            partitions: 2,
            size: 2 << 20,
        })),
    )
    .await
    .expect("driver")
    .expect_err("too big");
    let prefix = "Job aborted due to stage failure: Serialized task ";
    let suffix = " bytes, which exceeds max allowed: spark.rpc.message.maxSize (843776 bytes). \
                  Consider increasing spark.rpc.message.maxSize or using broadcast variables \
                  for large values.";
    assert!(
        big.message.starts_with(prefix) && big.message.ends_with(suffix),
        "{}",
        big.message
    );
    let size: usize = big.message[prefix.len()..big.message.len() - suffix.len()]
        .split(" was ")
        .nth(1)
        .and_then(|n| n.parse().ok())
        .expect("a size");
    assert!(size > 2 << 20, "{size}");
    let small = patiently(
        "the small job",
        driver.run(Arc::new(BigTaskJob {
            partitions: 4,
            size: 1000,
        })),
    )
    .await
    .expect("driver")
    .expect("fits");
    assert_eq!(small.output, "4 tasks read 4000 input bytes");
    let status = driver.stop().await.expect("status");
    assert_eq!(
        sent(&status, "LaunchTask"),
        4,
        "no oversized LaunchTask left the driver"
    );
    assert_eq!(status.ready_executors(), 0);
    let verdict = observer.verdict(true);
    assert!(verdict.is_clean(), "{verdict}: {:?}", verdict.examples);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_result_too_big_for_a_frame_fails_the_task_and_keeps_the_executor() {
    let (mut config, observer) = strict_config("big-result");
    config.max_message_size_mib = 1;
    let driver = Driver::start(config).await.expect("driver");
    let _e = executor(&driver, "1", 1);
    let error = patiently(
        "the job",
        driver.run(Arc::new(BigResultJob {
            partitions: 1,
            size: 2 << 20,
        })),
    )
    .await
    .expect("driver")
    .expect_err("fails");
    assert!(
        error.message.contains("failed 4 times")
            && error.message.contains(
                "Result of task (TID 3) was 2097152 bytes, which exceeds max allowed: \
                 spark.rpc.message.maxSize (843776 bytes)"
            ),
        "{}",
        error.message
    );
    let ok = driver
        .run(Arc::new(BigResultJob {
            partitions: 2,
            size: 1000,
        }))
        .await
        .expect("driver")
        .expect("small results pass");
    assert_eq!(ok.output, "2 results, 2000 bytes in all");
    let status = driver.stop().await.expect("status");
    assert_eq!(status.executors_lost, 0);
    let verdict = observer.verdict(true);
    assert!(verdict.is_clean(), "{verdict}: {:?}", verdict.examples);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelling_a_job_kills_its_running_tasks_and_frees_the_executors() {
    let (config, observer) = strict_config("cancel");
    let driver = Driver::start(config).await.expect("driver");
    let _e1 = executor(&driver, "1", 1);
    let _e2 = executor(&driver, "2", 1);
    wait_status(&driver, "two executors", |s| s.ready_executors() == 2).await;
    let job = driver
        .submit(Arc::new(SleepJob {
            partitions: 3,
            millis: 600_000,
        }))
        .await
        .expect("submitted");
    wait_status(&driver, "two tasks running", |s| {
        received(s, "StatusUpdate") == 2
    })
    .await;
    job.cancel();
    let error = patiently("the cancelled job", job.result())
        .await
        .expect_err("cancelled");
    assert_eq!(error.message, "Job 0 cancelled");
    let status = wait_status(&driver, "the kills reported", |s| {
        s.executors.iter().all(|e| e.free_cores == e.cores) && received(s, "StatusUpdate") == 4
    })
    .await;
    assert_eq!(sent(&status, "KillTask"), 2);
    assert_eq!(status.tasks_failed, 2);
    let next = driver
        .run(Arc::new(PiJob {
            partitions: 2,
            samples: 1000,
            seed: 3,
        }))
        .await
        .expect("driver");
    assert!(next.is_ok(), "{next:?}");
    driver.stop().await;
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn updates_for_unknown_tasks_and_unsupported_asks_are_answered_not_fatal() {
    use sparkwire::connection::ConnectionError;
    use sparkwire::messages::coarse::{
        LaunchedExecutor, RegisterExecutor, RetrieveDelegationTokens, StatusUpdate,
    };
    use sparkwire::messages::{CoarseMessage, EndpointRef, Payload, TaskState};
    use sparkwire::wire::Reply;

    // No validator: the driver's own checks are what is tested.
    let mut config = sparkwire::reference::driver::DriverConfig::new("lenient");
    config.revive_interval = std::time::Duration::from_millis(50);
    let driver = Driver::start(config).await.expect("driver");
    let conn = raw_executor(&driver, "x").await;
    let registered = conn
        .ask(CoarseMessage::RegisterExecutor(RegisterExecutor::new(
            "x".into(),
            EndpointRef::client("Executor"),
            "h".into(),
            1,
            Default::default(),
            Default::default(),
            Default::default(),
            0,
        )))
        .await
        .expect("answered");
    assert_eq!(registered, Reply::Bool(true));
    conn.send(CoarseMessage::LaunchedExecutor(LaunchedExecutor::new(
        "x".into(),
    )))
    .await
    .expect("sent");
    conn.send(CoarseMessage::StatusUpdate(StatusUpdate::new(
        "x".into(),
        4242,
        TaskState::Failed,
        Payload::copy_from(&[0xc1]),
        1,
        Default::default(),
    )))
    .await
    .expect("sent");
    let refused = conn
        .ask(CoarseMessage::RetrieveDelegationTokens(
            RetrieveDelegationTokens::new(),
        ))
        .await;
    assert!(
        matches!(&refused, Err(ConnectionError::Remote { .. })),
        "{refused:?}"
    );
    let status = wait_status(&driver, "executor x ready", |s| s.ready_executors() == 1).await;
    assert_eq!(status.executors[0].free_cores, 1);
    drop(conn);
    wait_status(&driver, "executor x gone", |s| s.executors.is_empty()).await;
    driver.stop().await;
}
