//! Real Spark across hosts (network namespaces on a bridge, the fixture in `common/netns.rs`):
//! a `sparkwire master --spark-port` on host 1, two real Spark 4.0.1 workers on hosts 2 and 3,
//! and a PySpark application in client deploy mode on host 4. Every Spark process is told its
//! host's address as a user of a machine with several interfaces would (`SPARK_LOCAL_IP`, the
//! worker's `--host`, the driver's `spark.driver.host`); the job runs on executors of both
//! workers' hosts and its result is checked.
//!
//! Needs root (namespaces) and Spark 4.0.1 (`scripts/spark/env.sh 4.0.1` installs it into
//! `~/.cache/sparkwire-spark/` when missing). Its JVMs (two workers, their executors, the
//! driver) run while this test runs and are stopped by their process ids when it ends.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

mod common;
#[path = "common/netns.rs"]
mod netns;

use common::files::temp_dir;
use netns::{spark_env, wait_until, HostProcess, Net};

/// How long any one wait may last (JVMs on a shared, loaded machine); never asserted as a
/// duration.
const PATIENCE: Duration = Duration::from_secs(150);

/// The release the workers and the application run.
const RELEASE: &str = "4.0.1";

/// The application: waits for an executor on each of two hosts, then sums the squares of
/// 1..100000 over eight partitions, each task also saying which host ran it (the executor's
/// `SPARK_LOCAL_IP`, which its worker passed on).
const APP: &str = r#"
import os, sys, time
from pyspark.sql import SparkSession
url, me = sys.argv[1], sys.argv[2]
spark = (SparkSession.builder.master(url).appName("many-hosts")
         .config("spark.executor.memory", "512m").config("spark.executor.cores", "1")
         .config("spark.cores.max", "2").config("spark.ui.enabled", "false")
         .config("spark.ui.showConsoleProgress", "false")
         .config("spark.driver.host", me).getOrCreate())
sc = spark.sparkContext
deadline = time.time() + 120
while True:
    infos = sc._jsc.sc().statusTracker().getExecutorInfos()
    hosts = sorted(i.host() for i in infos if i.host() != me)
    if len(hosts) >= 2 or time.time() > deadline:
        break
    time.sleep(0.2)
print("EXECUTORS", " ".join(hosts), flush=True)
def part(it):
    time.sleep(0.5)
    yield (os.environ.get("SPARK_LOCAL_IP", "?"), sum(x * x for x in it))
got = sc.parallelize(range(1, 100001), 8).mapPartitions(part).collect()
print("TASK_HOSTS", " ".join(sorted(set(h for h, _ in got))), flush=True)
print("RESULT", sum(s for _, s in got), flush=True)
spark.stop()
"#;

/// A Spark process on host `i` (`program ARGS`) with Spark's environment, its host's address as
/// `SPARK_LOCAL_IP`, small daemon heaps, its configuration directory `conf`; its output in
/// `dir/NAME.log`.
fn spark_process(
    net: &Net,
    env: &[(String, String)],
    i: usize,
    dir: &Path,
    name: &str,
    program: &str,
    args: &[&str],
) -> HostProcess {
    let mut c: Command = net.command(i, program, args);
    c.envs(env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        .env("SPARK_LOCAL_IP", net.ip(i))
        .env_remove("SPARK_LOCAL_HOSTNAME")
        .env("SPARK_NO_DAEMONIZE", "1")
        .env("SPARK_DAEMON_MEMORY", "256m")
        .env("SPARK_CONF_DIR", dir.join("conf"))
        // Heartbeats every quarter of the master's worker timeout.
        .env("SPARK_WORKER_OPTS", "-Dspark.worker.timeout=10")
        .env("PYSPARK_SUBMIT_ARGS", "--driver-memory 512m pyspark-shell")
        .env_remove("SPARK_DIST_CLASSPATH")
        .env_remove("SPARK_MASTER_OPTS");
    net.spawn_logged(c, dir.join(format!("{name}.log")))
}

#[test]
fn real_spark_workers_and_a_pyspark_application_across_hosts_run_a_job_on_a_sparkwire_master() {
    let Some(net) = Net::create_or_skip(4, "spark_across_hosts") else {
        return;
    };
    let env = spark_env(RELEASE).unwrap_or_else(|e| panic!("Spark {RELEASE}: {e}"));
    let spark_home = env
        .iter()
        .find(|(k, _)| k == "SPARK_HOME")
        .map(|(_, v)| v.clone())
        .expect("SPARK_HOME");
    let python = env
        .iter()
        .find(|(k, _)| k == "PYSPARK_PYTHON")
        .map(|(_, v)| v.clone())
        .expect("PYSPARK_PYTHON");
    let started = Instant::now();
    let dir = temp_dir("spark-across-hosts");
    std::fs::create_dir_all(dir.join("conf")).expect("conf dir");

    // The master: Spark's wire on port 7177 of host 1; Spark's peers speak no sparkwire
    // secret, so the master is told that it may listen off loopback without one.
    let master = net.sparkwire(
        1,
        &dir,
        "master",
        &[
            "master",
            "--host",
            net.ip(1),
            "--port",
            "7077",
            "--spark-port",
            "7177",
            "--spark-release",
            RELEASE,
            "--insecure",
            "--no-webui",
            "--worker-timeout",
            "10",
        ],
    );
    let spark_url = format!("spark://{}:7177", net.ip(1));
    let line = master.wait_line(PATIENCE, |l| l.contains("Spark wire on"));
    assert_eq!(
        line,
        Some(format!("sparkwire master Spark wire on {spark_url}")),
        "{}",
        master.log_text()
    );

    let class = format!("{spark_home}/bin/spark-class");
    let workers: Vec<HostProcess> = [2, 3]
        .into_iter()
        .map(|w| {
            let work = dir.join(format!("work{w}"));
            let work = work.to_str().expect("utf-8").to_string();
            spark_process(
                &net,
                &env,
                w,
                &dir,
                &format!("worker{w}"),
                &class,
                &[
                    "org.apache.spark.deploy.worker.Worker",
                    "--host",
                    net.ip(w),
                    "--port",
                    "7078",
                    "--webui-port",
                    "8081",
                    "--cores",
                    "1",
                    "--memory",
                    "1024M",
                    "--work-dir",
                    &work,
                    &spark_url,
                ],
            )
        })
        .collect();
    for (w, p) in [2, 3].iter().zip(&workers) {
        wait_until(
            &format!("the Spark worker on host {w} registered"),
            PATIENCE,
            || {
                p.log_text()
                    .contains(&format!("Successfully registered with master {spark_url}"))
            },
        );
    }
    let registered = started.elapsed();

    let script = dir.join("app.py");
    std::fs::write(&script, APP).expect("app.py");
    let script = script.to_str().expect("utf-8").to_string();
    let mut app = spark_process(
        &net,
        &env,
        4,
        &dir,
        "app",
        &python,
        &[&script, &spark_url, net.ip(4)],
    );
    let code = app.wait_exit(PATIENCE);
    let out = app.log_text();
    assert_eq!(code, Some(0), "the application failed: {out}");
    let field = |key: &str| {
        out.lines()
            .find_map(|l| l.strip_prefix(key))
            .map(str::trim)
            .unwrap_or_else(|| panic!("no {key}: {out}"))
            .to_string()
    };
    let both = format!("{} {}", net.ip(2), net.ip(3));
    assert_eq!(
        field("EXECUTORS "),
        both,
        "an executor on each worker's host"
    );
    assert_eq!(field("TASK_HOSTS "), both, "tasks ran on both hosts");
    let want: u128 = (1..=100_000u128).map(|x| x * x).sum();
    assert_eq!(field("RESULT "), want.to_string());

    // The master saw it: both workers ALIVE, the application FINISHED.
    let url = format!("sparkwire://{}:7077", net.ip(1));
    let mut state = None;
    wait_until("the application FINISHED at the master", PATIENCE, || {
        state = net.status_insecure(4, &url);
        state.as_ref().is_some_and(|s| {
            s["completedapps"].as_array().map_or(0, Vec::len) == 1
                && s["activeapps"].as_array().map_or(0, Vec::len) == 0
        })
    });
    let s = state.expect("state");
    assert_eq!(s["completedapps"][0]["state"], "FINISHED", "{s}");
    let mut hosts: Vec<&str> = s["workers"]
        .as_array()
        .map(|ws| {
            ws.iter()
                .filter(|w| w["state"] == "ALIVE")
                .filter_map(|w| w["host"].as_str())
                .collect()
        })
        .unwrap_or_default();
    hosts.sort_unstable();
    assert_eq!(hosts, [net.ip(2), net.ip(3)], "{s}");
    eprintln!(
        "real Spark {RELEASE} across hosts: workers registered {:.1} s after the start, the \
         application's job done {:.1} s after; whole test {:.1} s",
        registered.as_secs_f64(),
        (started.elapsed() - registered).as_secs_f64(),
        started.elapsed().as_secs_f64()
    );
    drop(app);
    drop(workers);
    drop(master);
    // The executors' JVMs go with the namespaces (every process of a host is killed by pid).
    drop(net);
    let _ = std::fs::remove_dir_all(&dir);
}
