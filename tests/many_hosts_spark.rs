//! Real Spark across hosts (network namespaces on a bridge, the fixture in `common/netns.rs`):
//! a `sparkwire master --spark-port` on host 1, two real Spark 4.0.1 workers on hosts 2 and 3,
//! and a PySpark application in client deploy mode on host 4. Every Spark process is told its
//! host's address as a user of a machine with several interfaces would (`SPARK_LOCAL_IP`, the
//! worker's `--host`, the driver's `spark.driver.host`); the job runs on executors of both
//! workers' hosts and its result is checked.
//!
//!
//! And a real Spark worker cut off past the worker timeout, then healed, on Spark's wire: the
//! master marks it DEAD, the application's lost executor is replaced on the other worker's host,
//! and when the link is back the Spark worker's heartbeat draws `ReconnectWorker` and it
//! registers again as the same worker: one ALIVE worker per host, the application's second job
//! right, the application FINISHED.
//!
//!
//! And two `sparkwire master --spark-port` masters of a ZooKeeper group (hosts 1 and 2, ZooKeeper
//! on host 3) with a real Spark worker (host 4) and a PySpark application (host 5) registered
//! through the leader's Spark-wire front: the leader's host cut off, the standby takes over and
//! tells the recovered Spark worker and application of it over Spark's wire (`MasterChanged`,
//! as Spark's master does); they answer it, and the new leader has the worker ALIVE (once) and
//! the application's job runs to the right result on its recovered executor, the application
//! FINISHED at the new leader.
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

/// One scenario at a time in this binary: each runs two Spark workers, their executors and a
/// driver (five or six JVMs), too many twice over for a small shared machine.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// The release the workers and the application run.
const RELEASE: &str = "4.0.1";

/// Its release line: an unpinned front tells 4.0.1 from 4.0.0–4.0.4 by no stream (the same
/// class tables, SPEC §15.3) and names the newest of them.
const RELEASE_LINE: &str = "4.0.";

/// What every scenario of this file starts with: its turn, `hosts` hosts (or `None` where
/// namespaces cannot be made, the skip said by the fixture), Spark's environment, its home and
/// Python, the start time and a scratch directory with an empty `conf/`.
struct Scenario {
    _turn: std::sync::MutexGuard<'static, ()>,
    net: Net,
    env: Vec<(String, String)>,
    spark_home: String,
    python: String,
    started: Instant,
    dir: std::path::PathBuf,
}

impl Scenario {
    /// Removes the hosts (every process still on them stopped) and then the scratch directory.
    fn finish(self) {
        let dir = self.dir.clone();
        drop(self);
        let _ = std::fs::remove_dir_all(dir);
    }

    /// The hosts, Spark's environment, its home, Python, the start time and the directory.
    #[allow(clippy::type_complexity)]
    fn parts(&self) -> (&Net, &[(String, String)], &str, &str, Instant, &Path) {
        let s = self;
        (&s.net, &s.env, &s.spark_home, &s.python, s.started, &s.dir)
    }

    fn start(hosts: usize, name: &str) -> Option<Scenario> {
        // A scenario that failed while holding its turn poisoned the lock; the turn is still good.
        let turn = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
        let net = Net::create_or_skip(hosts, name)?;
        let env = spark_env(RELEASE).unwrap_or_else(|e| panic!("Spark {RELEASE}: {e}"));
        let get = |key: &str| {
            env.iter()
                .find(|(k, _)| k == key)
                .map(|(_, v)| v.clone())
                .unwrap_or_else(|| panic!("Spark's environment has no {key}"))
        };
        let (spark_home, python) = (get("SPARK_HOME"), get("PYSPARK_PYTHON"));
        let dir = temp_dir(&name.replace('_', "-"));
        std::fs::create_dir_all(dir.join("conf")).expect("conf dir");
        Some(Scenario {
            _turn: turn,
            net,
            env,
            spark_home,
            python,
            started: Instant::now(),
            dir,
        })
    }

    /// A real Spark worker's arguments on host `w`: port 7078, web UI 8081, `cores` and
    /// `memory`, its work directory `work` and its master(s) `masters` (`spark://…`).
    fn worker_args<'a>(
        &'a self,
        w: usize,
        cores: &'a str,
        memory: &'a str,
        work: &'a str,
        masters: &'a str,
    ) -> Vec<&'a str> {
        vec![
            "org.apache.spark.deploy.worker.Worker",
            "--host",
            self.net.ip(w),
            "--port",
            "7078",
            "--webui-port",
            "8081",
            "--cores",
            cores,
            "--memory",
            memory,
            "--work-dir",
            work,
            masters,
        ]
    }
}

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
/// `SPARK_LOCAL_IP`, small daemon heaps, its configuration directory `conf`, a worker's
/// `spark.worker.timeout` [`WORKER_TIMEOUT`]; its output in `dir/NAME.log`.
fn spark_process(
    net: &Net,
    env: &[(String, String)],
    i: usize,
    dir: &Path,
    name: &str,
    program: &str,
    args: &[&str],
) -> HostProcess {
    spark_process_timeout(net, env, i, dir, name, program, args, WORKER_TIMEOUT)
}

/// The worker timeout, seconds, of the master and of the Spark workers (a Spark worker
/// heartbeats every quarter of its own `spark.worker.timeout`).
const WORKER_TIMEOUT: &str = "10";

/// [`spark_process`] with the Spark worker's `spark.worker.timeout` `timeout` seconds.
#[allow(clippy::too_many_arguments)]
fn spark_process_timeout(
    net: &Net,
    env: &[(String, String)],
    i: usize,
    dir: &Path,
    name: &str,
    program: &str,
    args: &[&str],
    timeout: &str,
) -> HostProcess {
    let mut c: Command = net.command(i, program, args);
    c.envs(env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        .env("SPARK_LOCAL_IP", net.ip(i))
        .env_remove("SPARK_LOCAL_HOSTNAME")
        .env("SPARK_NO_DAEMONIZE", "1")
        .env("SPARK_DAEMON_MEMORY", "256m")
        .env("SPARK_CONF_DIR", dir.join("conf"))
        // Heartbeats every quarter of the master's worker timeout.
        .env(
            "SPARK_WORKER_OPTS",
            format!("-Dspark.worker.timeout={timeout}"),
        )
        .env("PYSPARK_SUBMIT_ARGS", "--driver-memory 512m pyspark-shell")
        .env_remove("SPARK_DIST_CLASSPATH")
        .env_remove("SPARK_MASTER_OPTS");
    net.spawn_logged(c, dir.join(format!("{name}.log")))
}

#[test]
fn real_spark_workers_and_a_pyspark_application_across_hosts_run_a_job_on_a_sparkwire_master() {
    let Some(scenario) = Scenario::start(4, "spark_across_hosts") else {
        return;
    };
    let (net, env, spark_home, python, started, dir) = scenario.parts();

    // The master: Spark's wire on port 7177 of host 1; Spark's peers speak no sparkwire
    // secret, so the master is told that it may listen off loopback without one.
    let master = net.sparkwire(
        1,
        dir,
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
                net,
                env,
                w,
                dir,
                &format!("worker{w}"),
                &class,
                &scenario.worker_args(w, "1", "1024M", &work, &spark_url),
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
        net,
        env,
        4,
        dir,
        "app",
        python,
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
    scenario.finish();
}

/// The application of the cut-off scenario: one executor of one core on each of two hosts, a
/// first job on both; then it waits (its executors idle) until the file `go` exists and two
/// executors are registered again (the replacement of a lost one starts a JVM), says which hosts
/// they are on, and runs the job again. Each job sums the squares of
/// 1..100000 over eight partitions, each task saying which host ran it.
const APP_ACROSS_A_CUT: &str = r#"
import os, sys, time
from pyspark.sql import SparkSession
url, me, go = sys.argv[1], sys.argv[2], sys.argv[3]
spark = (SparkSession.builder.master(url).appName("worker-cut-off")
         .config("spark.executor.memory", "512m").config("spark.executor.cores", "1")
         .config("spark.cores.max", "2").config("spark.ui.enabled", "false")
         .config("spark.ui.showConsoleProgress", "false")
         .config("spark.driver.host", me).getOrCreate())
sc = spark.sparkContext
def hosts():
    infos = sc._jsc.sc().statusTracker().getExecutorInfos()
    return sorted(i.host() for i in infos if i.host() != me)
deadline = time.time() + 120
while len(hosts()) < 2 and time.time() < deadline:
    time.sleep(0.2)
print("EXECUTORS", " ".join(hosts()), flush=True)
def part(it):
    time.sleep(0.2)
    yield (os.environ.get("SPARK_LOCAL_IP", "?"), sum(x * x for x in it))
def job(tag):
    got = sc.parallelize(range(1, 100001), 8).mapPartitions(part).collect()
    print(tag + "_TASK_HOSTS", " ".join(sorted(set(h for h, _ in got))), flush=True)
    print(tag + "_RESULT", sum(s for _, s in got), flush=True)
job("BEFORE")
print("WAITING", flush=True)
while not os.path.exists(go):
    time.sleep(0.2)
deadline = time.time() + 120
while len(hosts()) < 2 and time.time() < deadline:
    time.sleep(0.2)
print("EXECUTORS_AFTER", " ".join(hosts()), flush=True)
job("AFTER")
spark.stop()
"#;

#[test]
fn a_real_spark_worker_cut_off_past_the_timeout_is_dead_replaced_then_registers_again_once() {
    let Some(scenario) = Scenario::start(4, "spark_worker_cut_off") else {
        return;
    };
    let (net, env, spark_home, python, started, dir) = scenario.parts();
    // Worker timeout 5 s on both sides: the Spark workers heartbeat every 1.25 s.
    let timeout = "5";
    let master = net.sparkwire(
        1,
        dir,
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
            timeout,
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
    let url = format!("sparkwire://{}:7077", net.ip(1));
    let state = || net.status_insecure(4, &url);

    // Host 2's worker has a core and memory to spare for a replacement executor.
    let class = format!("{spark_home}/bin/spark-class");
    let workers: Vec<HostProcess> = [(2, "2", "1024M"), (3, "1", "512M")]
        .into_iter()
        .map(|(w, cores, memory)| {
            let work = dir.join(format!("work{w}"));
            let work = work.to_str().expect("utf-8").to_string();
            spark_process_timeout(
                net,
                env,
                w,
                dir,
                &format!("worker{w}"),
                &class,
                &scenario.worker_args(w, cores, memory, &work, &spark_url),
                timeout,
            )
        })
        .collect();
    let registered_with = format!("Successfully registered with master {spark_url}");
    for (w, p) in [2, 3].iter().zip(&workers) {
        wait_until(
            &format!("the Spark worker on host {w} registered"),
            PATIENCE,
            || p.log_text().contains(&registered_with),
        );
    }

    let script = dir.join("app.py");
    std::fs::write(&script, APP_ACROSS_A_CUT).expect("app.py");
    let script = script.to_str().expect("utf-8").to_string();
    let go = dir.join("go");
    let go_arg = go.to_str().expect("utf-8").to_string();
    let mut app = spark_process(
        net,
        env,
        4,
        dir,
        "app",
        python,
        &[&script, &spark_url, net.ip(4), &go_arg],
    );
    let field = |out: &str, key: &str| {
        out.lines()
            .find_map(|l| l.strip_prefix(key))
            .map(str::trim)
            .unwrap_or_else(|| panic!("no {key}: {out}"))
            .to_string()
    };
    wait_until("the application's first job done", PATIENCE, || {
        let out = app.log_text();
        out.lines().any(|l| l == "WAITING") || app_ended(&out)
    });
    let out = app.log_text();
    let both = format!("{} {}", net.ip(2), net.ip(3));
    assert_eq!(field(&out, "EXECUTORS "), both, "{out}");
    assert_eq!(field(&out, "BEFORE_TASK_HOSTS "), both, "{out}");
    let want: u128 = (1..=100_000u128).map(|x| x * x).sum();
    assert_eq!(field(&out, "BEFORE_RESULT "), want.to_string());

    // Host 3 goes, longer than the worker timeout.
    let cut = Instant::now();
    net.cut(3);
    let worker_on = |s: &serde_json::Value, host: &str| -> Vec<serde_json::Value> {
        s["workers"]
            .as_array()
            .map(|ws| ws.iter().filter(|w| w["host"] == host).cloned().collect())
            .unwrap_or_default()
    };
    let mut last = None;
    wait_until("host 3's worker DEAD at the master", PATIENCE, || {
        last = state();
        last.as_ref().is_some_and(|s| {
            let on3 = worker_on(s, net.ip(3));
            !on3.is_empty() && on3.iter().all(|w| w["state"] == "DEAD")
        })
    });
    let dead = cut.elapsed();
    // Its executor is replaced on host 2: the application holds both its cores there.
    wait_until("a replacement executor on host 2", PATIENCE, || {
        last = state();
        last.as_ref().is_some_and(|s| {
            worker_on(s, net.ip(2))
                .iter()
                .any(|w| w["state"] == "ALIVE" && w["coresused"] == 2)
        })
    });
    let replaced = cut.elapsed();
    let s = last.clone().expect("state");
    assert_eq!(
        s["activeapps"].as_array().map_or(0, Vec::len),
        1,
        "the application lives on: {s}"
    );

    // Healed: the Spark worker's next heartbeat names a worker the master declared DEAD; it is
    // told to reconnect (ReconnectWorker) and registers again, as the same worker.
    net.heal(3);
    let healed = Instant::now();
    wait_until("host 3's worker registered again", PATIENCE, || {
        workers[1].log_text().matches(&registered_with).count() >= 2
    });
    let back = healed.elapsed();
    wait_until("host 3's worker ALIVE at the master", PATIENCE, || {
        last = state();
        last.as_ref().is_some_and(|s| {
            worker_on(s, net.ip(3))
                .iter()
                .any(|w| w["state"] == "ALIVE")
        })
    });
    let alive_again = healed.elapsed();

    // The application goes on: its executors on host 2 (the lost one replaced, none back on
    // host 3 with its cores all granted), the job right.
    std::fs::write(&go, b"go").expect("go");
    let code = app.wait_exit(PATIENCE);
    let out = app.log_text();
    assert_eq!(code, Some(0), "the application failed: {out}");
    let host2_twice = format!("{} {}", net.ip(2), net.ip(2));
    assert_eq!(field(&out, "EXECUTORS_AFTER "), host2_twice, "{out}");
    assert_eq!(field(&out, "AFTER_TASK_HOSTS "), net.ip(2), "{out}");
    assert_eq!(field(&out, "AFTER_RESULT "), want.to_string());

    // Nothing lost, nothing twice: one ALIVE worker per host (host 3's the same worker as
    // before the cut), the application FINISHED.
    let mut s = None;
    wait_until("the application FINISHED at the master", PATIENCE, || {
        s = state();
        s.as_ref().is_some_and(|s| {
            s["completedapps"].as_array().map_or(0, Vec::len) == 1
                && s["activeapps"].as_array().map_or(0, Vec::len) == 0
        })
    });
    let s = s.expect("state");
    assert_eq!(s["completedapps"][0]["state"], "FINISHED", "{s}");
    for host in [net.ip(2), net.ip(3)] {
        let alive: Vec<_> = worker_on(&s, host)
            .into_iter()
            .filter(|w| w["state"] == "ALIVE")
            .collect();
        assert_eq!(alive.len(), 1, "one ALIVE worker on {host}: {s}");
    }
    let ids: Vec<_> = worker_on(&s, net.ip(3))
        .iter()
        .map(|w| w["id"].clone())
        .collect();
    assert!(
        ids.windows(2).all(|p| p[0] == p[1]),
        "host 3's worker came back under another id: {s}"
    );
    assert!(
        workers[1]
            .log_text()
            .contains("requested this worker to reconnect"),
        "the Spark worker was not told to reconnect: {}",
        workers[1].log_text()
    );
    eprintln!(
        "real Spark {RELEASE} worker cut off (worker timeout {timeout} s): DEAD {:.2} s after \
         the cut, its executor replaced on host 2 {:.2} s after the cut; registered again {:.2} s \
         after the heal (ALIVE at the master {:.2} s after); whole test {:.1} s",
        dead.as_secs_f64(),
        replaced.as_secs_f64(),
        back.as_secs_f64(),
        alive_again.as_secs_f64(),
        started.elapsed().as_secs_f64()
    );
    drop(app);
    drop(workers);
    drop(master);
    scenario.finish();
}

/// The application of the failover: one executor of two cores, READY once it runs; then (once
/// the file named by its third argument exists) it waits for an executor again (the one the new
/// leader launched in place of the killed one), runs a job, prints its result and ends.
const APP_ACROSS_A_FAILOVER: &str = r#"
import os, sys, time
from pyspark.sql import SparkSession
url, me, go = sys.argv[1], sys.argv[2], sys.argv[3]
spark = (SparkSession.builder.master(url).appName("spark-failover")
         .config("spark.executor.memory", "512m").config("spark.executor.cores", "2")
         .config("spark.cores.max", "2").config("spark.ui.enabled", "false")
         .config("spark.ui.showConsoleProgress", "false")
         .config("spark.driver.host", me).getOrCreate())
sc = spark.sparkContext
def executors():
    return [i for i in sc._jsc.sc().statusTracker().getExecutorInfos() if i.host() != me]
deadline = time.time() + 120
while time.time() < deadline and not executors():
    time.sleep(0.2)
print("READY", flush=True)
while not os.path.exists(go):
    time.sleep(0.2)
deadline = time.time() + 120
while time.time() < deadline and not executors():
    time.sleep(0.2)
print("RESULT", sc.parallelize(range(1, 100001), 4).map(lambda x: x * x).sum(), flush=True)
spark.stop()
"#;

/// How the leader's host is lost in the Spark-peer failover.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Loss {
    /// Its link leaves the bridge (a partition); healed after the takeover.
    Cut,
    /// Every process of it killed at once (SIGKILL), as when the machine dies; a master is
    /// started there again after the takeover.
    Killed,
}

/// The time stamp (µs since the epoch) of the first line of `log` holding `needle`.
fn logged_at(log: &str, needle: &str) -> Option<i64> {
    log.lines()
        .filter(|l| l.contains(needle))
        .find_map(common::ha::stamp_us)
}

/// The process ids of the Spark executors (`CoarseGrainedExecutorBackend`) running on host `i`:
/// the JVMs the test's Spark worker there started.
fn executor_pids(net: &Net, i: usize) -> Vec<u32> {
    net.pids(i)
        .into_iter()
        .filter(|p| {
            std::fs::read(format!("/proc/{p}/cmdline"))
                .is_ok_and(|c| String::from_utf8_lossy(&c).contains("CoarseGrainedExecutorBackend"))
        })
        .collect()
}

/// Two `sparkwire master --spark-port` masters of a ZooKeeper group (hosts 1 and 2, ZooKeeper on
/// host 3), a real Spark worker (host 4, two cores) and a PySpark application (host 5, one
/// executor of two cores) registered through the leader's Spark-wire front. The leader's host
/// is lost as `loss` says; the standby takes over and tells the Spark worker and application
/// over Spark's wire (`MasterChanged`), and they follow. Then the application's executor is
/// killed: the new leader launches another for the recovered application on the Spark worker
/// (its `LaunchExecutor` carrying the application's description, which the new leader had only
/// from the store), and the job runs on it to the right result, the application FINISHED at the
/// new leader. A master on host 1 (healed, or started again) joins the group as the standby,
/// and no two masters ever wrote at once (the checker of the ZooKeeper tests over the masters'
/// logs). Prints the takeover, the re-registration, the relaunch and the rejoin times.
fn spark_leader_lost(loss: Loss, name: &str) {
    let Some(scenario) = Scenario::start(5, name) else {
        return;
    };
    let (net, env, spark_home, python, started, dir) = scenario.parts();
    let _zookeeper = net.zookeeper(3, &dir.join("zookeeper"));
    let zookeeper = format!("{}:{}", net.ip(3), netns::ZOOKEEPER_PORT);
    let master = |i: usize, name: &str| {
        let m = net.sparkwire(
            i,
            dir,
            name,
            &[
                "master",
                "--host",
                net.ip(i),
                "--port",
                "7077",
                "--spark-port",
                "7177",
                "--insecure",
                "--no-webui",
                "--worker-timeout",
                WORKER_TIMEOUT,
                "--recovery-mode",
                "zookeeper",
                "--zookeeper-url",
                &zookeeper,
                "--zookeeper-dir",
                "/spark-failover",
                "--zookeeper-session-timeout",
                "2",
            ],
        );
        let line = m.wait_line(PATIENCE, |l| l.contains("Spark wire on"));
        assert!(line.is_some(), "{}", m.log_text());
        m
    };
    let url = |i: usize| format!("sparkwire://{}:7077", net.ip(i));
    let state = |i: usize| net.status_insecure(5, &url(i));
    let m1 = master(1, "m1");
    wait_until("the master on host 1 ALIVE", PATIENCE, || {
        state(1).is_some_and(|s| s["status"] == "ALIVE")
    });
    let m2 = master(2, "m2");
    wait_until("the master on host 2 STANDBY", PATIENCE, || {
        state(2).is_some_and(|s| s["status"] == "STANDBY")
    });
    let group = format!("spark://{}:7177,{}:7177", net.ip(1), net.ip(2));
    let class = format!("{spark_home}/bin/spark-class");
    let work = dir.join("work4");
    let work = work.to_str().expect("utf-8").to_string();
    let worker = spark_process(
        net,
        env,
        4,
        dir,
        "worker4",
        &class,
        &scenario.worker_args(4, "2", "1024M", &work, &group),
    );
    wait_until("the Spark worker registered with host 1", PATIENCE, || {
        worker.log_text().contains(&format!(
            "Successfully registered with master spark://{}:7177",
            net.ip(1)
        ))
    });
    let script = dir.join("app.py");
    std::fs::write(&script, APP_ACROSS_A_FAILOVER).expect("app.py");
    let script = script.to_str().expect("utf-8").to_string();
    let go = dir.join("go");
    let go_arg = go.to_str().expect("utf-8").to_string();
    let mut app = spark_process(
        net,
        env,
        5,
        dir,
        "app",
        python,
        &[&script, &group, net.ip(5), &go_arg],
    );
    wait_until("the application READY with its executor", PATIENCE, || {
        let out = app.log_text();
        out.lines().any(|l| l == "READY") || app_ended(&out)
    });
    let s = state(1).expect("host 1 answers");
    assert_eq!(s["activeapps"].as_array().map_or(0, Vec::len), 1, "{s}");
    assert_eq!(s["coresused"], 2, "the application's executor runs: {s}");
    let app_id = s["activeapps"][0]["id"]
        .as_str()
        .expect("the application's id")
        .to_string();
    let first = executor_pids(net, 4);
    assert_eq!(first.len(), 1, "one executor JVM on host 4: {first:?}");

    // The leader's host goes.
    let lost = Instant::now();
    let lost_at = now_us();
    match loss {
        Loss::Cut => net.cut(1),
        Loss::Killed => net.kill_host(1),
    }
    let alive_on_4 = |s: &serde_json::Value| -> usize {
        s["workers"].as_array().map_or(0, |ws| {
            ws.iter()
                .filter(|w| w["host"] == net.ip(4) && w["state"] == "ALIVE")
                .count()
        })
    };
    let mut last = None;
    wait_until(
        "host 2 ALIVE with the Spark worker and the application",
        PATIENCE,
        || {
            last = state(2);
            last.as_ref().is_some_and(|s| {
                s["status"] == "ALIVE"
                    && alive_on_4(s) == 1
                    && s["activeapps"].as_array().map_or(0, Vec::len) == 1
            })
        },
    );
    let takeover = lost.elapsed();
    let s = last.clone().expect("state");
    assert_eq!(s["workers"].as_array().map_or(0, Vec::len), 1, "{s}");
    assert_eq!(s["activeapps"][0]["state"], "RUNNING", "{s}");
    assert_eq!(s["activeapps"][0]["id"], app_id.as_str(), "{s}");
    assert_eq!(s["coresused"], 2, "the recovered executor is counted: {s}");
    let m2_log = m2.log_text();
    assert!(
        m2_log.contains("over Spark's wire"),
        "the new leader did not announce itself over Spark's wire: {m2_log}"
    );
    // Each peer was told in its own release, which the new leader had from the store (the
    // masters are not pinned to one).
    assert!(
        m2_log.contains(&format!("in Spark {RELEASE_LINE}"))
            && m2_log.contains("its release as stored"),
        "the new leader did not announce in the peers' release from the store: {m2_log}"
    );
    let changed = format!(
        "Master has changed, new master is at spark://{}:7177",
        net.ip(2)
    );
    assert!(
        worker.log_text().contains(&changed),
        "the Spark worker did not follow: {}",
        worker.log_text()
    );
    // The worker is placed by its release again before it registers anew (the store had it).
    assert!(
        s["workers"][0]["sparkrelease"]
            .as_str()
            .is_some_and(|r| r.starts_with(RELEASE_LINE)),
        "{s}"
    );

    // The old leader stops: a cut-off one steps down by itself (its session gone) and exits;
    // a killed one is gone already.
    let mut m1 = m1;
    let exit = m1.wait_exit(PATIENCE);
    assert!(
        exit.is_some(),
        "the master on host 1 still runs: {}",
        m1.log_text()
    );
    let m1_log = m1.log_text();
    if loss == Loss::Cut {
        assert!(
            m1_log.contains("Leadership has been revoked"),
            "the cut-off leader did not step down: {m1_log}"
        );
    }

    // The application's executor killed: the new leader launches another for the recovered
    // application on the Spark worker, which runs it.
    let killed = Instant::now();
    for p in &first {
        let _ = Command::new("kill").args(["-9", &p.to_string()]).status();
    }
    let relaunched = format!("Asked to launch executor {app_id}/1 ");
    wait_until(
        "a new executor launched on host 4 by the new leader",
        PATIENCE,
        || {
            worker.log_text().contains(&relaunched)
                && executor_pids(net, 4).iter().any(|p| !first.contains(p))
        },
    );
    let relaunch = killed.elapsed();

    // Host 1 back: healed, or started again (its processes gone for good); a master there
    // joins the group as the standby.
    if loss == Loss::Cut {
        net.heal(1);
    }
    let back = Instant::now();
    let m1_again = master(1, "m1-again");
    wait_until(
        "the master on host 1 standing by in the election",
        PATIENCE,
        || {
            m1_again.log_text().contains("standing by: ")
                && state(1).is_some_and(|s| s["status"] == "STANDBY")
        },
    );
    let rejoined = back.elapsed();

    // The application goes on with the new leader: its job right on the new executor, then
    // FINISHED there.
    std::fs::write(&go, b"go").expect("go");
    let code = app.wait_exit(PATIENCE);
    let out = app.log_text();
    assert_eq!(code, Some(0), "the application failed: {out}");
    let want: u128 = (1..=100_000u128).map(|x| x * x).sum();
    assert!(out.lines().any(|l| l == format!("RESULT {want}")), "{out}");
    let mut s = None;
    wait_until("the application FINISHED at host 2", PATIENCE, || {
        s = state(2);
        s.as_ref().is_some_and(|s| {
            s["completedapps"].as_array().map_or(0, Vec::len) == 1
                && s["activeapps"].as_array().map_or(0, Vec::len) == 0
        })
    });
    let s = s.expect("state");
    assert_eq!(s["status"], "ALIVE", "{s}");
    assert_eq!(s["completedapps"][0]["state"], "FINISHED", "{s}");
    assert_eq!(alive_on_4(&s), 1, "one ALIVE worker on host 4: {s}");
    assert_eq!(s["workers"].as_array().map_or(0, Vec::len), 1, "{s}");
    assert!(
        state(1).is_some_and(|s| s["status"] == "STANDBY"),
        "host 1's master leads again"
    );

    // No two masters wrote at once; the new leader wrote.
    let m2_log = m2.log_text();
    let logs = [m1_log.clone(), m2_log.clone(), m1_again.log_text()];
    let written = common::ha::check_no_overlap(&logs).expect("no two masters wrote at once");
    assert!(written >= 2, "the masters wrote {written} records");
    let elected = logged_at(&m2_log, "I have been elected leader!").expect("m2 elected");
    let recovered = logged_at(&m2_log, "Recovery complete").expect("m2 recovered");
    if loss == Loss::Cut {
        let down = logged_at(&m1_log, "this master no longer leads")
            .expect("the cut-off leader stepped down");
        assert!(
            down < elected,
            "the old leader stepped down at {down} µs, after the standby's election at {elected} µs"
        );
    }
    eprintln!(
        "real Spark {RELEASE} worker and PySpark application, the leader's host {}: the standby \
         elected {:.2} s after, the Spark worker and application re-registered {:.3} s after its \
         election; ALIVE with the Spark worker ALIVE and the application RUNNING {:.2} s after \
         the loss; the killed executor relaunched by the new leader {:.2} s after the kill; host \
         1's master STANDBY (standing by in the election) {:.2} s after it was started again; \
         whole test {:.1} s",
        match loss {
            Loss::Cut => "cut off",
            Loss::Killed => "killed whole",
        },
        (elected - lost_at) as f64 / 1e6,
        (recovered - elected) as f64 / 1e6,
        takeover.as_secs_f64(),
        relaunch.as_secs_f64(),
        rejoined.as_secs_f64(),
        started.elapsed().as_secs_f64()
    );
    drop(app);
    drop(worker);
    drop(m1_again);
    drop(m2);
    scenario.finish();
}

/// Microseconds since the epoch, now (the masters' logs' clock).
fn now_us() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_micros() as i64)
}

#[test]
fn a_leader_cut_off_its_standby_tells_the_real_spark_worker_and_application_and_they_follow() {
    spark_leader_lost(Loss::Cut, "spark_failover");
}

#[test]
fn a_leaders_host_killed_whole_the_real_spark_worker_and_application_follow_the_standby() {
    spark_leader_lost(Loss::Killed, "spark_leader_killed");
}

/// Whether a PySpark application's output shows it ended (a Python traceback).
fn app_ended(out: &str) -> bool {
    out.contains("Traceback (most recent call last)")
}
