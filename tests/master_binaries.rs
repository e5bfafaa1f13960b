//! The real binaries: `sparkwire master` and `sparkwire worker` print their addresses first, run
//! the basic flow with a test application, and exit cleanly on SIGTERM. The master runs with
//! `--strict` (every connection checked by the validator, exit status 1 if any rule was broken),
//! so its clean exit proves the flow legal.

use common::cluster;
mod common;

use std::process::{Child, Command};

use cluster::*;
use common::files::temp_dir;
use common::processes::{announced_master, master_args, spawn_sparkwire, worker_args};
use sparkwire::messages::{DeployMessage, ExecutorState};
use sparkwire::node::url::MasterUrl;

/// A child process killed (by its own pid) if the test fails before stopping it.
struct Guard(Option<Child>);

impl Drop for Guard {
    fn drop(&mut self) {
        if let Some(c) = self.0.as_mut() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

fn spawn(args: &[&str]) -> (Guard, String) {
    let (child, line) = spawn_sparkwire(args, &[]);
    (Guard(Some(child)), line)
}

fn terminate(mut guard: Guard) -> std::process::ExitStatus {
    let mut child = guard.0.take().expect("running");
    let status = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .expect("kill");
    assert!(status.success());
    child.wait().expect("exit")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn master_and_worker_binaries_run_an_application_and_stop_on_sigterm() {
    let work = temp_dir("binaries");
    let (master, line) = spawn(&master_args(&["--worker-timeout", "2", "--strict"]));
    let (url, m) = announced_master(&line);
    let work_dir = work.display().to_string();
    let mut args = worker_args(&url, "2", "1024", &work_dir);
    args.extend([
        "--allow-exec-any",
        SH,
        "--worker-timeout",
        "2",
        "--register-retry",
        "0.3",
    ]);
    let (worker, line) = spawn(&args);
    assert!(
        line.starts_with("sparkwire worker worker-")
            && line.contains(" listening on sparkwire://127.0.0.1:"),
        "{line}"
    );

    wait_master_state(&m, "the worker registered", |s| s.workers.len() == 1).await;
    let app = TestApp::register(
        std::slice::from_ref(&m),
        app_desc("binaries", "exec sleep 60", None, 256),
    )
    .await;
    let app_id = app.app_id().await;
    app.wait("the executor running", |l| {
        l.iter().any(
            |m| matches!(m, DeployMessage::ExecutorUpdated(u) if u.state == ExecutorState::Running),
        )
    })
    .await;
    assert!(work.join(&app_id).join("0").join("stderr").exists());
    app.unregister().await;
    wait_master_state(&m, "the application finished", |s| {
        s.active_apps.is_empty() && s.workers.len() == 1 && s.workers[0].cores_used == 0
    })
    .await;
    assert!(terminate(worker).success(), "the worker exits 0 on SIGTERM");
    assert!(
        terminate(master).success(),
        "the master exits 0 on SIGTERM, having seen no protocol violation"
    );
    let _ = std::fs::remove_dir_all(&work);
}

/// SPARK-13604: a worker reporting, in WorkerLatestState, a driver the master does not know is
/// sent KillDriver for it, and `--strict` holds that legal (rule D3's exception): the master
/// exits 0.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn strict_master_kills_a_driver_a_worker_reports_and_stays_clean() {
    let (master, line) = spawn(&master_args(&["--worker-timeout", "5", "--strict"]));
    let (_, m) = announced_master(&line);
    let id = "worker-20261201000000-127.0.0.1-35999";
    let worker =
        FakeWorker::connect(&m, id, sparkwire::messages::Addr::new("127.0.0.1", 35999)).await;
    worker.register(&m, 2, 1024).await;
    worker
        .wait("RegisteredWorker", |l| {
            l.iter()
                .any(|x| matches!(x, DeployMessage::RegisteredWorker(_)))
        })
        .await;
    worker
        .send(sparkwire::messages::deploy::WorkerLatestState::new(
            id.to_string(),
            vec![],
            vec!["driver-20261201000000-0042".to_string()],
        ))
        .await;
    worker
        .wait("KillDriver for the unknown driver", |l| {
            l.iter().any(|x| {
                matches!(x, DeployMessage::KillDriver(k) if k.driver_id == "driver-20261201000000-0042")
            })
        })
        .await;
    worker.close().await;
    assert!(
        terminate(master).success(),
        "the strict master exits 0: its KillDriver to the reporting worker breaks no rule"
    );
}

/// Spark's "Telling app of lost worker" is logged only when there is an application to tell: a
/// worker lost from a master without applications leaves "Removing worker" alone in the log.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lost_worker_is_told_to_no_application_when_there_is_none() {
    use std::io::{BufRead, BufReader};
    let mut master = Command::new(env!("CARGO_BIN_EXE_sparkwire"))
        .args(["master", "--port", "0", "--no-webui"])
        .env("RUST_LOG", "info")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn the master");
    let mut first = String::new();
    BufReader::new(master.stdout.take().expect("stdout"))
        .read_line(&mut first)
        .expect("first line");
    let url = first
        .trim()
        .strip_prefix("sparkwire master listening on ")
        .unwrap_or_else(|| panic!("{first:?}"))
        .to_string();
    let (tx, log) = std::sync::mpsc::channel();
    let stderr = master.stderr.take().expect("stderr");
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let master = Guard(Some(master));
    let work = temp_dir("lost-worker-log");
    let (worker, _) = spawn(&[
        "worker",
        &url,
        "--no-webui",
        "--cores",
        "1",
        "--work-dir",
        &work.display().to_string(),
    ]);
    let m = MasterUrl::parse(&url).expect("a master URL").masters[0].clone();
    wait_master_state(&m, "the worker registered", |s| s.workers.len() == 1).await;
    drop(worker);
    let mut seen = Vec::new();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while !seen.iter().any(|l: &String| l.contains("Removing worker")) {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        match log.recv_timeout(left) {
            Ok(line) => seen.push(line),
            Err(_) => panic!("no 'Removing worker' line: {seen:#?}"),
        }
    }
    // Every line the master writes until it exits.
    assert!(terminate(master).success());
    seen.extend(log.iter());
    assert!(
        !seen
            .iter()
            .any(|l| l.contains("Telling app of lost worker")),
        "{seen:#?}"
    );
    let _ = std::fs::remove_dir_all(&work);
}
