//! Jobs through a real cluster on loopback: a `sparkwire master --strict` and `sparkwire worker`
//! processes, the driver in the test, executors as processes the workers start. Every connection
//! is validated strictly: the driver's executor connections by the driver, the workers' and the
//! application client's by the master.

mod common;
use common::driver;

use std::sync::Arc;
use std::time::Duration;

use common::processes::{kill9, processes_with_arg, BIN};
use driver::*;
use sparkwire::reference::driver::Driver;
use sparkwire::reference::task::{SleepJob, SumSquaresJob};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_runs_through_master_workers_and_executor_processes_with_every_connection_valid() {
    let cluster = cluster(2, 1).await;
    let (mut config, observer) = strict_config("sum through the cluster");
    config.masters = vec![cluster.master_url().to_string()];
    let driver = Driver::start(config).await.expect("driver");
    let ready = wait_status(&driver, "two executors", |s| s.ready_executors() == 2).await;
    assert!(ready
        .app_id
        .as_deref()
        .is_some_and(|a| a.starts_with("app-")));
    assert!(ready.executors.iter().all(|e| e.worker_id.is_some()));
    let job = SumSquaresJob {
        partitions: 12,
        n: 1_000_000,
    };
    let expected = format!("Sum of squares of 0..1000000 is {}", job.expected());
    let result = patiently("the job", driver.run(Arc::new(job)))
        .await
        .expect("driver")
        .expect("job");
    assert_eq!(result.output, expected);
    // Two one-core workers, two executors for the whole job.
    let running = driver.status().await.expect("status");
    assert_eq!(received(&running, "ExecutorAdded"), 2, "{running:?}");
    let status = driver.stop().await.expect("status");
    assert_eq!(sent(&status, "RegisterApplication"), 1);
    // At the stop an executor that ended on StopExecutor may be replaced before the master reads
    // UnregisterApplication: Spark's master schedules on every executor end, and protocol/rules.md
    // accepts that crossing. So one more ExecutorAdded per executor may arrive then (the core has
    // stopped taking the master's news by then, so only the counters show them).
    let added = received(&status, "ExecutorAdded");
    assert!(
        (2..=4).contains(&added),
        "{added} ExecutorAdded: {status:?}"
    );
    assert_eq!(sent(&status, "UnregisterApplication"), 1);
    assert_eq!(sent(&status, "LaunchTask"), 12);
    let verdict = observer.verdict(true);
    assert!(verdict.is_clean(), "{verdict}: {:?}", verdict.examples);
    let output = cluster.shutdown(Duration::from_secs(5)).await;
    assert_eq!(master_violations(&output), Some(0), "{output:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_executor_killed_with_sigkill_mid_job_is_replaced_and_the_job_finishes() {
    let cluster = cluster(2, 1).await;
    let (mut config, observer) = strict_config("sigkill through the cluster");
    config.masters = vec![cluster.master_url().to_string()];
    let driver = Driver::start(config).await.expect("driver");
    wait_status(&driver, "two executors", |s| s.ready_executors() == 2).await;
    let job = driver
        .submit(Arc::new(SleepJob {
            partitions: 8,
            millis: 250,
        }))
        .await
        .expect("submitted");
    wait_status(&driver, "executor 0 busy", |s| {
        s.executors.iter().any(|e| e.id == "0" && e.free_cores == 0)
    })
    .await;
    kill9(executor_pid(&driver.url(), "0").await);
    let result = patiently("the job", job.result()).await.expect("job");
    assert_eq!(result.output, "8 tasks slept 250 ms each");
    // The master replaced the executor on the same worker.
    let status = wait_status(&driver, "a replacement executor", |s| {
        s.ready_executors() == 2
    })
    .await;
    assert!(status.executors.iter().all(|e| e.id != "0"));
    assert_eq!(status.executors_lost, 1);
    // The attempt lost with it counts with the failed and killed ones, as the progress does.
    assert!(status.tasks_failed >= 1, "{status:?}");
    let status = driver.stop().await.expect("status");
    assert!(received(&status, "ExecutorUpdated") >= 1);
    let verdict = observer.verdict(true);
    assert!(verdict.is_clean(), "{verdict}: {:?}", verdict.examples);
    let output = cluster.shutdown(Duration::from_secs(5)).await;
    assert_eq!(master_violations(&output), Some(0), "{output:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_killed_mid_job_takes_its_executor_down_and_the_job_finishes_on_the_other() {
    let mut cluster = cluster(2, 1).await;
    let (mut config, observer) = strict_config("dead worker");
    config.masters = vec![cluster.master_url().to_string()];
    let driver = Driver::start(config).await.expect("driver");
    let ready = wait_status(&driver, "two executors", |s| s.ready_executors() == 2).await;
    let job = driver
        .submit(Arc::new(SleepJob {
            partitions: 6,
            millis: 250,
        }))
        .await
        .expect("submitted");
    wait_status(&driver, "both executors busy", |s| {
        s.executors.iter().all(|e| e.free_cores == 0)
    })
    .await;
    // The first worker's executor: the master granted executor 0 on it.
    let victim = ready
        .executors
        .iter()
        .find(|e| e.id == "0")
        .and_then(|e| e.worker_id.clone())
        .expect("executor 0's worker");
    let index = cluster
        .worker_urls()
        .iter()
        .position(|u| {
            let port = u.rsplit(':').next().unwrap_or("?");
            victim.ends_with(&format!("-{port}"))
        })
        .expect("the worker's index");
    assert!(find_executor(&driver.url(), "0").is_some());
    cluster.kill_worker(index).await;
    let result = patiently("the job", job.result()).await.expect("job");
    // The executor noticed its worker's end on its watch connection and exited.
    patiently("executor 0's exit", async {
        while find_executor(&driver.url(), "0").is_some() {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
    assert_eq!(result.output, "6 tasks slept 250 ms each");
    let status = wait_status(&driver, "executor 0 removed", |s| {
        s.executors.iter().all(|e| e.id != "0")
    })
    .await;
    assert_eq!(status.executors_lost, 1);
    driver.stop().await;
    let verdict = observer.verdict(true);
    assert!(verdict.is_clean(), "{verdict}: {:?}", verdict.examples);
    let output = cluster.shutdown(Duration::from_secs(5)).await;
    assert_eq!(master_violations(&output), Some(0), "{output:?}");
}

/// Runs `sparkwire local-cluster ARGS`, returning its exit code and standard output.
/// Exit code, standard output and standard error of `local-cluster ARGS`, logging at its default
/// level.
async fn local_cluster_output(args: &[&str]) -> (Option<i32>, String, String) {
    let out = patiently(
        "local-cluster",
        tokio::process::Command::new(BIN)
            .arg("local-cluster")
            .args(args)
            .env_remove("RUST_LOG")
            .stdin(std::process::Stdio::null())
            .kill_on_drop(true)
            .output(),
    )
    .await
    .expect("runs");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// `sparkwire validate TRACE`, run to its end.
fn validate(trace: &std::path::Path) -> std::process::Output {
    std::process::Command::new(BIN)
        .arg("validate")
        .arg(trace)
        .output()
        .expect("validate runs")
}

/// The word after `prefix` in `text`.
fn word_after<'a>(text: &'a str, prefix: &str) -> &'a str {
    text.split(prefix)
        .nth(1)
        .and_then(|rest| rest.split([' ', ',', '\n']).next())
        .unwrap_or("")
}

/// No process of that cluster is left (once signals are delivered): no worker naming its
/// master, no executor of its app.
async fn no_orphans(stdout: &str) {
    let master = word_after(stdout, "local-cluster: master ");
    let app = word_after(stdout, "application ");
    assert!(master.starts_with("sparkwire://"), "{stdout}");
    assert!(app.starts_with("app-"), "{stdout}");
    patiently("the cluster's processes to be gone", async {
        while !processes_with_arg(master).is_empty() || !processes_with_arg(app).is_empty() {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn local_cluster_with_no_options_estimates_pi_validly_and_leaves_no_process() {
    let trace = std::env::temp_dir().join(format!("sparkwire-lc-{}.jsonl", std::process::id()));
    let diagram = trace.with_extension("md");
    let (code, stdout, stderr) = local_cluster_output(&[
        "--trace",
        trace.to_str().expect("utf-8"),
        "--diagram",
        diagram.to_str().expect("utf-8"),
    ])
    .await;
    assert_eq!(code, Some(0), "{stdout}");
    // An orderly run and shutdown logs nothing above INFO, and no colour codes into a pipe.
    assert!(
        !stderr.contains("WARN") && !stderr.contains("ERROR"),
        "an orderly run logged warnings or errors:\n{stderr}"
    );
    assert!(
        !stderr.contains('\u{1b}') && !stdout.contains('\u{1b}'),
        "{stderr}"
    );
    let pi: f64 = word_after(&stdout, "Pi is roughly ")
        .parse()
        .expect("a number");
    assert!((pi - std::f64::consts::PI).abs() < 0.01, "{stdout}");
    assert!(stdout.contains("tasks/s"), "{stdout}");
    assert!(stdout.contains("LaunchTask"), "{stdout}");
    assert!(
        stdout.contains("validator (driver side, strict): valid:"),
        "{stdout}"
    );
    assert!(stdout.contains(", 0 violations"), "{stdout}");
    no_orphans(&stdout).await;
    // The trace passes `sparkwire validate`, and the diagram shows the first task.
    let check = validate(&trace);
    assert!(check.status.success(), "{check:?}");
    let text = std::fs::read_to_string(&diagram).expect("diagram");
    assert!(text.starts_with("```mermaid\nsequenceDiagram\n"), "{text}");
    assert!(
        text.contains("RegisterApplication") && text.contains("LaunchTask"),
        "{text}"
    );
    let _ = std::fs::remove_file(&trace);
    let _ = std::fs::remove_file(&diagram);
}

/// A trace file named `.swtrace` is written in the binary form (protocol/trace.md §"Binary
/// form"), which `sparkwire validate` reads and `trace convert` turns into the JSON lines form,
/// event for event; busy polling off gives the same job.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn local_cluster_writes_a_binary_trace_that_validates_and_converts_to_json_lines() {
    let dir = std::env::temp_dir().join(format!("sparkwire-lc-bin-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let trace = dir.join("run.swtrace");
    let (code, stdout, _) = local_cluster_output(&[
        "--partitions",
        "30",
        "--busy-poll-us",
        "0",
        "--trace",
        trace.to_str().expect("utf-8"),
    ])
    .await;
    assert_eq!(code, Some(0), "{stdout}");
    assert!(stdout.contains(", 0 violations"), "{stdout}");
    let bytes = std::fs::read(&trace).expect("trace");
    assert!(
        bytes.starts_with(b"\xC1SWTRACE"),
        "{:?}",
        &bytes[..bytes.len().min(16)]
    );
    let check = validate(&trace);
    assert!(check.status.success(), "{check:?}");
    let verdict = String::from_utf8_lossy(&check.stdout).into_owned();
    let events: usize = verdict
        .split(' ')
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("an event count: {verdict}"));
    assert!(verdict.contains("no violations"), "{verdict}");
    let json = dir.join("run.jsonl");
    let convert = std::process::Command::new(BIN)
        .args(["trace", "convert"])
        .arg(&trace)
        .arg(&json)
        .output()
        .expect("convert runs");
    assert!(convert.status.success(), "{convert:?}");
    let text = std::fs::read_to_string(&json).expect("json lines");
    assert_eq!(text.lines().count(), events, "one line per event");
    let launches = text
        .lines()
        .filter(|l| l.contains("\"LaunchTask\""))
        .count();
    assert_eq!(launches, 30, "one LaunchTask per task");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A busy-poll window over the most is refused before anything starts.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn local_cluster_refuses_a_busy_poll_window_over_the_most_before_starting_anything() {
    let (code, stdout, stderr) = local_cluster_output(&["--busy-poll-us", "10001"]).await;
    assert_eq!(code, Some(2), "{stdout}{stderr}");
    assert!(
        stderr.contains("--busy-poll-us 10001 is over the most it takes, 10000 µs"),
        "{stderr}"
    );
    assert!(!stdout.contains("local-cluster: master"), "{stdout}");
}

/// Starts a long `local-cluster` job, sends `signal` to `local-cluster` itself once its first
/// executor registered, and returns what it printed after it exited unsuccessfully.
async fn local_cluster_signalled_mid_job(signal: &str) -> String {
    local_cluster_signalled_mid_job_with_stderr(signal).await.0
}

/// As `local_cluster_signalled_mid_job`, with what it (and its children) wrote on standard error.
async fn local_cluster_signalled_mid_job_with_stderr(signal: &str) -> (String, String) {
    use tokio::io::{AsyncBufReadExt, BufReader};

    let mut child = tokio::process::Command::new(BIN)
        .args([
            "local-cluster",
            "--job",
            "sleep",
            "--partitions",
            "1000",
            "--param",
            "1000",
        ])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .env_remove("RUST_LOG")
        .kill_on_drop(true)
        .spawn()
        .expect("spawn");
    let stderr = child.stderr.take().expect("stderr");
    let stderr = tokio::spawn(async move {
        let mut text = String::new();
        let _ =
            tokio::io::AsyncReadExt::read_to_string(&mut BufReader::new(stderr), &mut text).await;
        text
    });
    let stdout = child.stdout.take().expect("stdout");
    let mut lines = BufReader::new(stdout).lines();
    let mut seen = String::new();
    patiently("the executors", async {
        while let Ok(Some(line)) = lines.next_line().await {
            seen.push_str(&line);
            seen.push('\n');
            if line.starts_with("first executor registered") {
                break;
            }
        }
    })
    .await;
    let pid = child.id().expect("pid");
    let ok = std::process::Command::new("kill")
        .args([signal, &pid.to_string()])
        .status()
        .expect("kill")
        .success();
    assert!(ok);
    while let Ok(Some(line)) = lines.next_line().await {
        seen.push_str(&line);
        seen.push('\n');
    }
    let status = patiently("local-cluster's exit", child.wait())
        .await
        .expect("wait");
    assert!(!status.success(), "{seen}");
    let stderr = patiently("local-cluster's standard error", stderr)
        .await
        .expect("read");
    (seen, stderr)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn local_cluster_interrupted_mid_job_stops_every_process() {
    let (seen, stderr) = local_cluster_signalled_mid_job_with_stderr("-INT").await;
    no_orphans(&seen).await;
    // The driver stops first, then the cluster: once the cluster goes, the driver neither warns
    // nor shows progress.
    let driver = stderr
        .find("interrupted; stopping the driver")
        .unwrap_or_else(|| panic!("{stderr}"));
    let cluster = stderr
        .find("local-cluster: interrupted; stopping the cluster")
        .unwrap_or_else(|| panic!("{stderr}"));
    assert!(driver < cluster, "{stderr}");
    let after = &stderr[cluster..];
    assert!(
        !after.contains("tasks done") && !after.contains("reference::driver"),
        "{stderr}"
    );
}

/// SIGKILL gives `local-cluster` no chance to stop anything: the master and workers notice their
/// standard input ending, and the executors their driver going away.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn local_cluster_killed_with_sigkill_leaves_no_process_behind() {
    let seen = local_cluster_signalled_mid_job("-KILL").await;
    no_orphans(&seen).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_driver_asks_the_master_to_kill_and_to_add_executors() {
    let cluster = cluster(2, 1).await;
    let (mut config, observer) = strict_config("dynamic allocation");
    config.masters = vec![cluster.master_url().to_string()];
    let driver = Driver::start(config).await.expect("driver");
    wait_status(&driver, "two executors", |s| s.ready_executors() == 2).await;
    // As Spark's dynamic allocation: lower the target, then kill.
    assert_eq!(driver.request_executors(1).await, Ok(true));
    assert_eq!(driver.kill_executors(vec!["0".into()]).await, Ok(true));
    wait_status(&driver, "executor 0 gone", |s| {
        s.executors.iter().all(|e| e.id != "0")
    })
    .await;
    assert_eq!(driver.request_executors(2).await, Ok(true));
    let status = wait_status(&driver, "a new executor", |s| s.ready_executors() == 2).await;
    assert!(status.executors.iter().any(|e| e.id == "2"), "{status:?}");
    let r = patiently(
        "a job",
        driver.run(Arc::new(SumSquaresJob {
            partitions: 4,
            n: 1000,
        })),
    )
    .await
    .expect("driver");
    assert!(r.is_ok(), "{r:?}");
    let status = driver.stop().await.expect("status");
    assert_eq!(sent(&status, "RequestExecutors"), 2);
    assert_eq!(sent(&status, "KillExecutors"), 1);
    let verdict = observer.verdict(true);
    assert!(verdict.is_clean(), "{verdict}: {:?}", verdict.examples);
    let output = cluster.shutdown(Duration::from_secs(5)).await;
    assert_eq!(master_violations(&output), Some(0), "{output:?}");
}

/// Starts `sparkwire ARGS` in its own process group; returns it, the URL its first line ends
/// with, and the lines it prints afterwards.
async fn announced(
    args: &[&str],
) -> (
    tokio::process::Child,
    String,
    tokio::task::JoinHandle<Vec<String>>,
) {
    use tokio::io::{AsyncBufReadExt, BufReader};
    let mut child = tokio::process::Command::new(BIN)
        .args(args)
        .env(
            "RUST_LOG",
            std::env::var("RUST_LOG").unwrap_or_else(|_| "warn".into()),
        )
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("spawn");
    let mut lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
    let first = patiently("the address", lines.next_line())
        .await
        .expect("read")
        .expect("a line");
    let url = first.split_whitespace().last().expect("a URL").to_string();
    let rest = tokio::spawn(async move {
        let mut rest = Vec::new();
        while let Ok(Some(line)) = lines.next_line().await {
            rest.push(line);
        }
        rest
    });
    (child, url, rest)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_application_follows_a_master_failover_and_acknowledges_master_changed() {
    let dir = std::env::temp_dir().join(format!("sparkwire-ha-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("recovery dir");
    let recovery = dir.to_str().expect("utf-8");
    let work = format!("{recovery}/work");
    let master = [
        "master",
        "--port",
        "0",
        "--webui-port",
        "0",
        "--recovery-dir",
        recovery,
    ];
    let (mut a, a_url, _) = announced(&master).await;
    // A master announces its address before it wins the election: `a` is the leader before `b`
    // starts, or `b` could win (and the test would kill the standby).
    patiently("the first master elected", async {
        loop {
            let out = tokio::process::Command::new(BIN)
                .args(["status", &a_url, "--json"])
                .output()
                .await
                .expect("status");
            let state: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_default();
            if state["status"] == "ALIVE" {
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await;
    let (mut b, b_url, b_out) = announced(&[&master[..], &["--strict"]].concat()).await;
    let both = format!("{},{}", a_url, b_url.trim_start_matches("sparkwire://"));
    let (mut worker, _, _) = announced(&[
        "worker",
        &both,
        "--port",
        "0",
        "--webui-port",
        "0",
        "--cores",
        "1",
        "--allow-exec",
        BIN,
        "--register-retry",
        "0.3",
        "--work-dir",
        &work,
    ])
    .await;
    let (mut config, observer) = strict_config("failover");
    config.masters = vec![a_url.clone(), b_url.clone()];
    config.registration_retry = Duration::from_millis(500);
    let driver = Driver::start(config).await.expect("driver");
    let before = wait_status(&driver, "an executor", |s| s.ready_executors() == 1).await;
    assert_eq!(before.master.as_deref(), Some(a_url.as_str()));
    kill9(a.id().expect("pid"));
    let _ = a.wait().await;
    let after = wait_status(&driver, "MasterChanged", |s| s.master_changes == 1).await;
    assert_ne!(after.master, before.master);
    // The new master answers the application's asks, and the executor kept working.
    assert_eq!(driver.request_executors(1).await, Ok(true));
    let r = patiently(
        "a job after the failover",
        driver.run(Arc::new(SumSquaresJob {
            partitions: 3,
            n: 1000,
        })),
    )
    .await
    .expect("driver");
    assert!(r.is_ok(), "{r:?}");
    let status = driver.stop().await.expect("status");
    assert_eq!(sent(&status, "MasterChangeAcknowledged"), 1);
    let verdict = observer.verdict(true);
    assert!(verdict.is_clean(), "{verdict}: {:?}", verdict.examples);
    for child in [&mut worker, &mut b] {
        let pid = child.id().expect("pid").to_string();
        let _ = std::process::Command::new("kill")
            .args(["-TERM", &pid])
            .status();
        let _ = patiently("the exit", child.wait()).await;
    }
    let output = b_out.await.expect("output");
    assert_eq!(master_violations(&output), Some(0), "{output:?}");
    let _ = std::fs::remove_dir_all(&dir);
}
