//! One executor that stops reading its socket must not hold up the driver's others (issue 13):
//! over real TCP, an executor behind a proxy that stops forwarding the driver's frames, and a
//! `sparkwire executor` process beside it.

mod common;
use common::driver;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use driver::*;
use sparkwire::reference::driver::Driver;
use sparkwire::reference::task::BigTaskJob;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;

/// Forwards connections to `target`; once `frozen` says so, reads nothing more from the target's
/// side (so the target's writes to it fill the socket and stall), and forwards nothing either way.
async fn freezing_proxy(target: SocketAddr, frozen: watch::Receiver<bool>) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    tokio::spawn(async move {
        while let Ok((inbound, _)) = listener.accept().await {
            let Ok(outbound) = TcpStream::connect(target).await else {
                continue;
            };
            let (in_read, in_write) = inbound.into_split();
            let (out_read, out_write) = outbound.into_split();
            tokio::spawn(pump(out_read, in_write, frozen.clone()));
            tokio::spawn(pump(in_read, out_write, frozen.clone()));
        }
    });
    addr
}

async fn pump(
    mut from: tokio::net::tcp::OwnedReadHalf,
    mut to: tokio::net::tcp::OwnedWriteHalf,
    mut frozen: watch::Receiver<bool>,
) {
    let mut buf = vec![0u8; 16 * 1024];
    loop {
        let n = tokio::select! {
            n = from.read(&mut buf) => Some(n),
            _ = frozen.wait_for(|f| *f) => None,
        };
        let Some(n) = n else {
            // Hold both halves open, reading nothing: the peer sees a live socket that takes
            // no bytes.
            std::future::pending::<()>().await;
            return;
        };
        match n {
            Ok(0) | Err(_) => return,
            Ok(n) => {
                if to.write_all(&buf[..n]).await.is_err() {
                    return;
                }
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_executor_that_stops_reading_does_not_stall_the_other_and_its_tasks_run_again() {
    let (mut config, observer) = strict_config("slow-executor");
    // Long enough for the other executor to show it runs tasks meanwhile, short for the test.
    config.send_timeout = Duration::from_secs(10);
    // A queue that holds every frame for the stuck executor, so that it is dropped for making no
    // progress over the send timeout, not as a slow consumer (tests/isolation_driver.rs).
    config.limits.max_outgoing_bytes = 64 << 20;
    let driver = Driver::start(config).await.expect("driver");
    let (freeze, frozen) = watch::channel(false);
    let proxy = freezing_proxy(driver.address(), frozen).await;
    let stuck_url = format!("spark://CoarseGrainedScheduler@127.0.0.1:{}", proxy.port());
    let mut stuck = sparkwire::reference::executor::ExecutorConfig::new(stuck_url, "stuck", 500);
    stuck.app_id = "test-app".into();
    let _stuck = tokio::spawn(sparkwire::reference::executor::run_executor(
        stuck,
        Arc::new(sparkwire::reference::task::BuiltinRunner),
    ));
    let _other = executor_process(&driver, "2", 1);
    wait_status(&driver, "two executors", |s| s.ready_executors() == 2).await;
    freeze.send(true).expect("proxy running");
    // 500 tasks of 64 KiB for the stuck executor: more than its connection's queue and the
    // socket buffers hold, so the frames for it wait.
    let partitions = 800;
    let size = 64 * 1024;
    let job = driver
        .submit(Arc::new(BigTaskJob { partitions, size }))
        .await
        .expect("submitted");
    // The other executor keeps running tasks while the stuck one is still registered.
    let during = wait_status(&driver, "tasks on the other executor", |s| {
        s.tasks_finished >= 30 && s.executors.iter().any(|e| e.id == "stuck")
    })
    .await;
    let stuck_now = during
        .executors
        .iter()
        .find(|e| e.id == "stuck")
        .expect("still registered");
    assert_eq!(
        stuck_now.free_cores, 0,
        "the stuck executor holds its tasks"
    );
    // Its frames wait past the send timeout: it is dropped, and its tasks run on the other.
    let result = patiently("the job", job.result())
        .await
        .expect("the job succeeds");
    assert_eq!(
        result.output,
        format!(
            "{partitions} tasks read {} input bytes",
            partitions as u64 * size
        )
    );
    let status = driver.stop().await.expect("status");
    assert_eq!(status.executors_lost, 1, "{status:?}");
    // The stuck executor's 500 attempts, then every partition on the other.
    assert_eq!(status.tasks_launched, partitions as u64 + 500, "{status:?}");
    assert_eq!(status.tasks_finished, partitions as u64);
    drop(observer);
}
