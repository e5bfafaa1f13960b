//! Partitions across hosts (network namespaces on a bridge, the fixture in `common/netns.rs`):
//!
//! - two masters of a ZooKeeper high-availability group on hosts 1 and 2, ZooKeeper on host 3,
//!   workers on hosts 4 and 5, an application's driver on host 6. The leader's host is cut off
//!   (from every host, or from ZooKeeper's alone, still reaching the workers and the driver), or
//!   killed whole (every process of it at once): the cut-off leader stops leading before the
//!   standby is elected, the standby takes over with both workers and
//!   the application, no two masters ever write at once (the checker of the ZooKeeper tests, over
//!   the masters' logs), the job finishes right, and a master on the healed host (or on the host
//!   started again) joins the group as the standby. Nothing is lost: one worker per host, the
//!   application FINISHED.
//! - a driver whose host is cut off from the workers' (and reaches the master): its executors
//!   cannot reach it and end; the driver learns why from the master, says so, and `submit` gives
//!   up in bounded time with that reason.
//!
//! Each test prints what it measured (takeover, re-registration, how long the test took). Needs
//! root: without it each test says it skips (or fails, with `SPARKWIRE_REQUIRE_NETNS=1`).

use std::path::Path;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

mod common;
#[path = "common/netns.rs"]
mod netns;

use common::files::temp_dir;
use common::ha::{check_no_overlap, stamp_us};
use common::processes::BIN;
use netns::{secret_file, wait_until, HostProcess, Net, ZOOKEEPER_PORT};
use serde_json::Value;

/// How long any one wait may last (the machine is shared and loaded); never asserted as a
/// duration.
const PATIENCE: Duration = Duration::from_secs(90);

/// The ZooKeeper session timeout of the masters, seconds: a cut-off leader's election node goes
/// this long after its last contact.
const SESSION: &str = "2";

/// The sleep job's tasks (one second each, on two cores): longer than a takeover, so that the
/// application is still running when the new leader recovers it.
const TASKS: usize = 30;

/// Microseconds since the epoch, now (to compare with the logs' time stamps).
fn now_us() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_micros() as i64)
}

/// The time stamp (µs since the epoch) of the first line of `log` holding `needle`.
fn logged_at(log: &str, needle: &str) -> Option<i64> {
    log.lines()
        .filter(|l| l.contains(needle))
        .find_map(stamp_us)
}

/// Seconds from `from` to `to` (µs since the epoch), for printing.
fn secs(from: i64, to: i64) -> f64 {
    (to - from) as f64 / 1e6
}

/// One high-availability scenario at a time in this binary (each runs a ZooKeeper JVM and four
/// `sparkwire` daemons; the machine is small and shared).
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// How the leader's host is lost.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Loss {
    /// Its link leaves the bridge (a partition); healed after the takeover.
    Cut,
    /// Cut off from ZooKeeper's host alone: it still reaches the workers and the driver, and
    /// they it (the partition where a leader that went on leading would be heard); healed after
    /// the takeover.
    CutFromZooKeeper,
    /// Every process of it killed at once (the machine died); started again after the takeover.
    Killed,
}

/// Host 6 asks the master at `url` for its state.
fn state(net: &Net, url: &str, secret: &str) -> Option<Value> {
    net.status(6, url, secret)
}

/// The master's workers in `state` that are ALIVE, as their hosts (sorted).
fn alive_worker_hosts(s: &Value) -> Vec<String> {
    let mut hosts: Vec<String> = s["workers"]
        .as_array()
        .map(|ws| {
            ws.iter()
                .filter(|w| w["state"] == "ALIVE")
                .filter_map(|w| w["host"].as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default();
    hosts.sort();
    hosts
}

/// A master of the group on host `i`: `--host` its address, port 7077, ZooKeeper on host 3.
fn master(net: &Net, i: usize, dir: &Path, secret: &str, name: &str) -> HostProcess {
    let zookeeper = format!("{}:{ZOOKEEPER_PORT}", net.ip(3));
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
            "--no-webui",
            "--secret-file",
            secret,
            "--worker-timeout",
            "5",
            "--recovery-mode",
            "zookeeper",
            "--zookeeper-url",
            &zookeeper,
            "--zookeeper-dir",
            "/partitions",
            "--zookeeper-session-timeout",
            SESSION,
        ],
    );
    assert_eq!(
        m.first_line,
        format!(
            "sparkwire master listening on sparkwire://{}:7077",
            net.ip(i)
        ),
        "{}",
        m.log_text()
    );
    m
}

/// Two masters, ZooKeeper, two workers and a job: the leader's host lost as `loss` says while
/// the job runs; the standby takes over, the job finishes, and a master on host 1 again joins
/// as the standby. Prints the takeover and the rejoin times.
fn leader_host_lost(loss: Loss, name: &str) {
    // A scenario that failed while holding its turn poisoned the lock; the turn is still good.
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let Some(net) = Net::create_or_skip(6, name) else {
        return;
    };
    let started = Instant::now();
    let dir = temp_dir(name);
    let secret = secret_file(&dir);
    let _zookeeper = net.zookeeper(3, &dir.join("zookeeper"));
    let url = |i: usize| format!("sparkwire://{}:7077", net.ip(i));
    let status_is =
        |i: usize, what: &str| state(&net, &url(i), &secret).is_some_and(|s| s["status"] == what);

    let m1 = master(&net, 1, &dir, &secret, "m1");
    wait_until("the master on host 1 ALIVE", PATIENCE, || {
        status_is(1, "ALIVE")
    });
    let m2 = master(&net, 2, &dir, &secret, "m2");
    wait_until("the master on host 2 STANDBY", PATIENCE, || {
        status_is(2, "STANDBY")
    });
    let group = format!("sparkwire://{}:7077,{}:7077", net.ip(1), net.ip(2));
    let mut workers = Vec::new();
    for w in [4, 5] {
        let work = dir.join(format!("work{w}"));
        let work = work.to_str().expect("utf-8").to_string();
        workers.push(net.sparkwire(
            w,
            &dir,
            &format!("worker{w}"),
            &[
                "worker",
                &group,
                "--host",
                net.ip(w),
                "--port",
                "7078",
                "--no-webui",
                "--cores",
                "1",
                "--memory",
                "1024",
                "--work-dir",
                &work,
                "--allow-exec-any",
                BIN,
                "--secret-file",
                &secret,
                "--worker-timeout",
                "5",
                "--register-retry",
                "1",
            ],
        ));
    }
    wait_until("both workers registered with host 1", PATIENCE, || {
        state(&net, &url(1), &secret)
            .is_some_and(|s| alive_worker_hosts(&s) == [net.ip(4), net.ip(5)])
    });
    let tasks = TASKS.to_string();
    let mut job = net.sparkwire(
        6,
        &dir,
        "submit",
        &[
            "submit",
            "--master",
            &group,
            "--secret-file",
            &secret,
            "--job",
            "sleep",
            "--partitions",
            &tasks,
            "--param",
            "1000",
            "--executor-memory",
            "512m",
        ],
    );
    wait_until("the application running on both workers", PATIENCE, || {
        state(&net, &url(1), &secret).is_some_and(|s| {
            s["activeapps"].as_array().map_or(0, Vec::len) == 1 && s["coresused"] == 2
        })
    });

    // The leader's host goes.
    let lost_at = now_us();
    let lost = Instant::now();
    match loss {
        Loss::Cut => net.cut(1),
        Loss::CutFromZooKeeper => net.cut_between(1, 3),
        Loss::Killed => net.kill_host(1),
    }
    wait_until(
        "the master on host 2 ALIVE with both workers and the application",
        PATIENCE,
        || {
            state(&net, &url(2), &secret).is_some_and(|s| {
                s["status"] == "ALIVE"
                    && alive_worker_hosts(&s) == [net.ip(4), net.ip(5)]
                    && s["activeapps"].as_array().map_or(0, Vec::len) == 1
            })
        },
    );
    let takeover = lost.elapsed();
    let mut m1 = m1;
    // A cut-off leader steps down by itself (its session gone) and exits, as Spark's master
    // does when its leadership is revoked; a killed one is gone already.
    let exit = m1.wait_exit(PATIENCE);
    assert!(
        exit.is_some(),
        "the master on host 1 still runs: {}",
        m1.log_text()
    );
    let m1_log = m1.log_text();
    if loss != Loss::Killed {
        assert!(
            m1_log.contains("Leadership has been revoked"),
            "the cut-off leader did not step down: {m1_log}"
        );
    }

    // Host 1 back: healed, or started again (its processes gone for good); a master there joins
    // the group as the standby.
    match loss {
        Loss::Cut => net.heal(1),
        Loss::CutFromZooKeeper => net.heal_between(1, 3),
        Loss::Killed => {}
    }
    let back = Instant::now();
    let m1_again = master(&net, 1, &dir, &secret, "m1-again");
    // STANDBY, and standing for election behind the new leader's node.
    wait_until(
        "the master on host 1 standing by in the election",
        PATIENCE,
        || m1_again.log_text().contains("standing by: ") && status_is(1, "STANDBY"),
    );
    let rejoined = back.elapsed();

    let code = job.wait_exit(PATIENCE);
    let out = job.output().join("\n") + "\n" + &job.log_text();
    assert_eq!(code, Some(0), "{out}");
    let done = format!("job sleep: {TASKS} tasks slept 1000 ms each");
    assert!(job.output().contains(&done), "{out}");

    // Nothing lost: one worker per host, ALIVE, no duplicate; the application FINISHED.
    let s = state(&net, &url(2), &secret).expect("the leader answers");
    assert_eq!(s["status"], "ALIVE", "{s}");
    assert_eq!(s["workers"].as_array().map_or(0, Vec::len), 2, "{s}");
    assert_eq!(alive_worker_hosts(&s), [net.ip(4), net.ip(5)], "{s}");
    assert_eq!(s["activeapps"].as_array().map_or(0, Vec::len), 0, "{s}");
    assert_eq!(s["completedapps"].as_array().map_or(0, Vec::len), 1, "{s}");
    assert_eq!(s["completedapps"][0]["state"], "FINISHED", "{s}");
    assert!(status_is(1, "STANDBY"), "host 1's master leads again");

    // No two masters wrote at once; the new leader wrote (the workers and the application it
    // recovered).
    let m2_log = m2.log_text();
    let logs = [m1_log.clone(), m2_log.clone(), m1_again.log_text()];
    let written = check_no_overlap(&logs).expect("no two masters wrote at once");
    assert!(written >= 2, "the masters wrote {written} records");
    let elected = logged_at(&m2_log, "I have been elected leader!").expect("m2 elected");
    let recovered = logged_at(&m2_log, "Recovery complete").expect("m2 recovered");
    // The cut-off leader stopped leading (its store refuses every write from then on) before
    // the standby was elected: it stepped down before the ensemble could expire its session.
    let stepped_down = logged_at(&m1_log, "this master no longer leads");
    if loss != Loss::Killed {
        let down = stepped_down.expect("the cut-off leader stepped down");
        assert!(
            down < elected,
            "the old leader stepped down at {down} µs, after the standby's election at {elected} µs: {m1_log}"
        );
    }
    eprintln!(
        "{name}: leader's host {}: the standby elected {:.2} s after, recovered (workers and \
         application re-registered) {:.3} s after its election; ALIVE with both workers and the \
         application {:.2} s after the loss (session timeout {SESSION} s); old leader stepped \
         down {}; host 1's master STANDBY (standing by in the election) {:.2} s after it was \
         started again; whole test {:.1} s",
        match loss {
            Loss::Cut => "cut off",
            Loss::CutFromZooKeeper => "cut off from ZooKeeper's alone",
            Loss::Killed => "killed whole",
        },
        secs(lost_at, elected),
        secs(elected, recovered),
        takeover.as_secs_f64(),
        stepped_down.map_or("— (killed)".to_string(), |t| format!(
            "{:.2} s after the loss ({:+.2} s from the standby's election)",
            secs(lost_at, t),
            secs(elected, t)
        )),
        rejoined.as_secs_f64(),
        started.elapsed().as_secs_f64()
    );
    drop(workers);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_leaders_host_cut_off_the_standby_takes_over_and_the_healed_host_rejoins_as_standby() {
    leader_host_lost(Loss::Cut, "leader-cut-off");
}

#[test]
fn the_leaders_host_cut_off_from_zookeeper_alone_steps_down_before_the_standby_is_elected() {
    leader_host_lost(Loss::CutFromZooKeeper, "leader-cut-from-zookeeper");
}

#[test]
fn the_leaders_host_killed_whole_the_standby_takes_over_and_the_host_rejoins_as_standby() {
    leader_host_lost(Loss::Killed, "leader-killed");
}

#[test]
fn a_driver_cut_off_from_the_workers_learns_why_its_executors_end_and_submit_gives_up() {
    let Some(net) = Net::create_or_skip(3, "driver_cut_off") else {
        return;
    };
    let started = Instant::now();
    let dir = temp_dir("driver-cut-off");
    let secret = secret_file(&dir);
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
            "--no-webui",
            "--secret-file",
            &secret,
        ],
    );
    let url = format!("sparkwire://{}:7077", net.ip(1));
    assert_eq!(
        master.first_line,
        format!("sparkwire master listening on {url}"),
        "{}",
        master.log_text()
    );
    let work = dir.join("work2");
    let work = work.to_str().expect("utf-8").to_string();
    let _worker = net.sparkwire(
        2,
        &dir,
        "worker",
        &[
            "worker",
            &url,
            "--host",
            net.ip(2),
            "--port",
            "7078",
            "--no-webui",
            "--cores",
            "1",
            "--memory",
            "1024",
            "--work-dir",
            &work,
            "--allow-exec-any",
            BIN,
            "--secret-file",
            &secret,
        ],
    );
    wait_until("the worker registered", PATIENCE, || {
        net.status(3, &url, &secret)
            .is_some_and(|s| alive_worker_hosts(&s) == [net.ip(2)])
    });
    // The driver's host (3) and the worker's (2) no longer reach each other; both reach the
    // master. The driver announces (and listens on) its own address, as it should.
    net.cut_between(2, 3);
    assert!(
        net.tcp_open(2, net.ip(1), 7077) && net.tcp_open(3, net.ip(1), 7077),
        "hosts 2 and 3 reach the master"
    );
    assert!(
        !net.tcp_open(3, net.ip(2), 7078),
        "host 3 still reaches the worker on host 2"
    );
    let mut submit = net.sparkwire(
        3,
        &dir,
        "submit",
        &[
            "submit",
            "--master",
            &url,
            "--secret-file",
            &secret,
            "--job",
            "pi",
            "--executor-memory",
            "256m",
            "--executor-timeout",
            "25",
        ],
    );
    let code = submit.wait_exit(PATIENCE);
    let took = started.elapsed();
    let out = submit.output().join("\n") + "\n" + &submit.log_text();
    let gave_up = code.unwrap_or_else(|| panic!("submit still waits: {out}"));
    assert_ne!(gave_up, 0, "{out}");
    // The executor's own words, from host 2 through the master: it could not reach the driver
    // at host 3's address, in silence (no answer within its connection window, not a refusal).
    let host3 = format!("cannot connect to {}:", net.ip(3));
    let says_why = |l: &str| {
        l.contains("cannot connect to the driver at")
            && l.contains(&host3)
            && l.contains("no connection within")
    };
    assert!(
        out.lines().any(|l| l.contains("WARN") && says_why(l)),
        "no WARN with the reason: {out}"
    );
    let last = out.lines().rev().find(|l| l.starts_with("sparkwire: "));
    assert!(
        last.is_some_and(says_why),
        "submit's last word is not the reason: {out}"
    );
    // Healed, the same driver host runs a job on that worker.
    net.heal_between(2, 3);
    let mut again = net.sparkwire(
        3,
        &dir,
        "submit-healed",
        &[
            "submit",
            "--master",
            &url,
            "--secret-file",
            &secret,
            "--job",
            "pi",
            "--executor-memory",
            "256m",
        ],
    );
    let code = again.wait_exit(PATIENCE);
    let healed = again.output().join("\n") + "\n" + &again.log_text();
    assert_eq!(code, Some(0), "{healed}");
    assert!(healed.contains("job pi: Pi is roughly 3.1"), "{healed}");
    eprintln!(
        "driver cut off from the workers: submit gave up after {:.1} s (exit {gave_up}, \
         --executor-timeout 25, executor connect window 10 s): {}; whole test {:.1} s",
        took.as_secs_f64(),
        last.unwrap_or_default(),
        started.elapsed().as_secs_f64()
    );
    let _ = std::fs::remove_dir_all(&dir);
}
