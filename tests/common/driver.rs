//! Helpers for the driver, executor and local-cluster tests: drivers observed by a strict
//! validator, in-process and child-process executors, waiting for conditions.

use std::future::Future;
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use sparkwire::node::executor::ExecutorExit;
use sparkwire::reference::driver::{Driver, DriverConfig, DriverStatus};
use sparkwire::reference::executor::{run_executor, ExecutorConfig, ExecutorError};
use sparkwire::reference::tap::{strict_validator, TraceObserver};
use sparkwire::reference::task::BuiltinRunner;
use tokio::task::JoinHandle;

use crate::common::processes::{processes_with_arg, BIN};

/// Generous: conditions are waited for, never timed.
pub const PATIENCE: Duration = Duration::from_secs(60);

/// A driver configuration observed by a strict validator.
pub fn strict_config(name: &str) -> (DriverConfig, TraceObserver) {
    let observer = TraceObserver::strict(strict_validator());
    let mut config = DriverConfig::new(name);
    config.observer = Some(observer.clone());
    config.executor_program = BIN.into();
    (config, observer)
}

/// Starts an in-process executor for `driver`.
pub fn executor(
    driver: &Driver,
    id: &str,
    cores: u32,
) -> JoinHandle<Result<ExecutorExit, ExecutorError>> {
    let mut config = ExecutorConfig::new(driver.url(), id, cores);
    config.app_id = "test-app".into();
    tokio::spawn(run_executor(config, Arc::new(BuiltinRunner)))
}

/// Starts `sparkwire executor` as a child process for `driver` (killed when dropped).
pub fn executor_process(driver: &Driver, id: &str, cores: u32) -> tokio::process::Child {
    tokio::process::Command::new(BIN)
        .args([
            "executor",
            "--driver-url",
            &driver.url(),
            "--executor-id",
            id,
            "--hostname",
            "127.0.0.1",
            "--cores",
            &cores.to_string(),
            "--app-id",
            "test-app",
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("spawn sparkwire executor")
}

/// Polls the driver's status until `ok` holds; panics after [`PATIENCE`].
pub async fn wait_status(
    driver: &Driver,
    what: &str,
    ok: impl Fn(&DriverStatus) -> bool,
) -> DriverStatus {
    let deadline = tokio::time::Instant::now() + PATIENCE;
    loop {
        let status = driver.status().await.expect("driver running");
        if ok(&status) {
            return status;
        }
        assert!(
            status.dead.is_none(),
            "the application died waiting for {what}: {status:?}"
        );
        assert!(
            tokio::time::Instant::now() < deadline,
            "gave up waiting for {what}: {status:?}"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// Waits for `f` at most [`PATIENCE`].
pub async fn patiently<T>(what: &str, f: impl Future<Output = T>) -> T {
    match tokio::time::timeout(PATIENCE, f).await {
        Ok(v) => v,
        Err(_) => panic!("gave up waiting for {what}"),
    }
}

/// Frames of `name` the driver sent.
pub fn sent(status: &DriverStatus, name: &str) -> u64 {
    status
        .counters
        .sent_by_name
        .get(name)
        .map_or(0, |t| t.frames)
}

/// Frames of `name` the driver received.
pub fn received(status: &DriverStatus, name: &str) -> u64 {
    status
        .counters
        .received_by_name
        .get(name)
        .map_or(0, |t| t.frames)
}

/// A local cluster of `workers` workers of `cores` cores, its master strict.
pub async fn cluster(
    workers: usize,
    cores: u32,
) -> sparkwire::reference::local_cluster::LocalCluster {
    let mut config =
        sparkwire::reference::local_cluster::ClusterConfig::new(BIN, workers, cores, 1024);
    config.master_args = vec!["--strict".into()];
    sparkwire::reference::local_cluster::LocalCluster::start(&config)
        .await
        .expect("cluster starts")
}

/// The count of violations in the master's verdict line, as `sparkwire master --strict` prints
/// it at exit.
pub fn master_violations(output: &[String]) -> Option<u64> {
    let line = output
        .iter()
        .find_map(|l| l.strip_prefix("sparkwire master validator: "))?;
    line.split(", ")
        .nth(1)?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

/// The process id of executor `id` of the driver at `driver_url`, if it runs.
pub fn find_executor(driver_url: &str, id: &str) -> Option<u32> {
    processes_with_arg(driver_url).into_iter().find(|pid| {
        let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
        let args: Vec<&[u8]> = cmdline.split(|b| *b == 0).collect();
        args.windows(2)
            .any(|w| w[0] == b"--executor-id" && w[1] == id.as_bytes())
    })
}

/// The process id of executor `id` of the driver at `driver_url`, once it runs.
pub async fn executor_pid(driver_url: &str, id: &str) -> u32 {
    patiently("the executor process", async {
        loop {
            if let Some(pid) = find_executor(driver_url, id) {
                return pid;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
}
