//! A cluster across hosts: network namespaces on a bridge, one "host" each (the fixture in
//! `common/netns.rs`), running `sparkwire` processes as a user would on separate machines, with
//! `--host` and a shared secret and nothing else about addresses. Needs root: without it each
//! test says it skips (or fails, with `SPARKWIRE_REQUIRE_NETNS=1`).

use std::path::Path;
use std::time::{Duration, Instant};

mod common;
#[path = "common/netns.rs"]
mod netns;

use common::files::temp_dir;
use common::processes::BIN;
use netns::{HostProcess, Net};
use sparkwire::connection::write_secret_file;
use sparkwire::wire::handshake::Secret;

/// How long any one wait may last (the machine is shared and loaded).
const PATIENCE: Duration = Duration::from_secs(90);

/// A private (0600) secret file in `dir`.
fn secret_file(dir: &Path) -> String {
    let path = dir.join("secret");
    let secret = Secret::new(b"the-secret-of-the-many-hosts-cluster".to_vec()).expect("secret");
    write_secret_file(&path, &secret).expect("written");
    path.display().to_string()
}

/// `sparkwire ARGS` on host `i`, its log in `dir/NAME.log`.
fn sparkwire(net: &Net, i: usize, dir: &Path, name: &str, args: &[&str]) -> HostProcess {
    let mut c = net.command(i, BIN, args);
    c.env("RUST_LOG", "info")
        .env_remove("SPARKWIRE_SECRET_FILE")
        .env_remove("SPARK_LOCAL_IP")
        .env_remove("SPARK_LOCAL_HOSTNAME")
        .env_remove("SPARK_MASTER_HOST");
    net.spawn(c, dir.join(format!("{name}.log")))
}

/// A master on host 1 (`--host` its address) and a worker on each of `workers` (their
/// `--host`), all with `secret`, the master's worker timeout `timeout` seconds and its `extra`
/// arguments.
struct Cluster {
    url: String,
    master: HostProcess,
    _workers: Vec<HostProcess>,
}

fn cluster(
    net: &Net,
    dir: &Path,
    secret: &str,
    workers: &[usize],
    timeout: &str,
    extra: &[&str],
) -> Cluster {
    let mut args = vec![
        "master",
        "--host",
        net.ip(1),
        "--port",
        "7077",
        "--webui-port",
        "8080",
        "--secret-file",
        secret,
        "--worker-timeout",
        timeout,
    ];
    args.extend_from_slice(extra);
    let master = sparkwire(net, 1, dir, "master", &args);
    let url = format!("sparkwire://{}:7077", net.ip(1));
    assert_eq!(
        master.first_line,
        format!("sparkwire master listening on {url}"),
        "{}",
        master.log_text()
    );
    let mut procs = Vec::new();
    for &w in workers {
        let work = dir.join(format!("work{w}"));
        let work = work.to_str().expect("utf-8").to_string();
        let p = sparkwire(
            net,
            w,
            dir,
            &format!("worker{w}"),
            &[
                "worker",
                &url,
                "--host",
                net.ip(w),
                "--port",
                "7078",
                "--webui-port",
                "8081",
                "--cores",
                "2",
                "--memory",
                "2048",
                "--work-dir",
                &work,
                "--allow-exec-any",
                BIN,
                "--secret-file",
                secret,
                "--worker-timeout",
                timeout,
                "--register-retry",
                "1",
            ],
        );
        assert!(
            p.first_line
                .contains(&format!("listening on sparkwire://{}:7078", net.ip(w))),
            "{:?}: {}",
            p.first_line,
            p.log_text()
        );
        procs.push(p);
    }
    let c = Cluster {
        url,
        master,
        _workers: procs,
    };
    let n = workers.len();
    wait_for(&format!("{n} workers registered"), || {
        let log = c.master.log_text();
        log.matches("Registering worker").count() >= n
    });
    c
}

/// Waits until `ok` holds, at most [`PATIENCE`].
fn wait_for(what: &str, mut ok: impl FnMut() -> bool) {
    let deadline = Instant::now() + PATIENCE;
    while !ok() {
        assert!(Instant::now() < deadline, "never {what}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The master's `/json` at `url`, fetched from host `i` (`None` when it does not answer JSON).
fn master_json(net: &Net, i: usize, url: &str) -> Option<serde_json::Value> {
    let out = net
        .command(i, "curl", &["-sf", "--max-time", "5", url])
        .output()
        .ok()?;
    serde_json::from_slice(&out.stdout).ok()
}

/// Runs `sparkwire ARGS` on host `i` to its end (at most [`PATIENCE`]): its exit code and
/// output (standard output, then standard error).
fn run_on(net: &Net, i: usize, dir: &Path, name: &str, args: &[&str]) -> (i32, String) {
    let mut p = sparkwire(net, i, dir, name, args);
    let code = p.wait_exit(PATIENCE);
    let text = p.output().join("\n") + "\n" + &p.log_text();
    (
        code.unwrap_or_else(|| panic!("{name} still running: {text}")),
        text,
    )
}

#[test]
fn a_job_runs_across_four_hosts_in_both_deploy_modes_with_host_alone() {
    let Some(net) = Net::create_or_skip(4, "four_hosts") else {
        return;
    };
    let started = Instant::now();
    let dir = temp_dir("four-hosts");
    let secret = secret_file(&dir);
    let c = cluster(&net, &dir, &secret, &[2, 3], "60", &[]);

    // Client deploy mode, the driver on host 4: nothing said of its address, it announces the
    // one its executors on hosts 2 and 3 reach it at, and listens there.
    let (code, out) = run_on(
        &net,
        4,
        &dir,
        "submit-client",
        &[
            "submit",
            "--master",
            &c.url,
            "--secret-file",
            &secret,
            "--job",
            "pi",
            "--executors",
            "2",
            "--executor-memory",
            "512m",
        ],
    );
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("job pi: Pi is roughly 3.1"), "{out}");
    // Its executors ran on both workers' hosts, told to reach the driver at host 4.
    for w in [2, 3] {
        let log = std::fs::read_dir(dir.join(format!("work{w}")))
            .map(|d| d.count())
            .unwrap_or(0);
        assert!(log > 0, "no executor ran on host {w}: {out}");
    }
    // Cluster deploy mode from host 4: a worker runs the driver, which announces that
    // worker's host and listens there; its output comes back over the worker's web UI.
    let (code, out) = run_on(
        &net,
        4,
        &dir,
        "submit-cluster",
        &[
            "submit",
            "--master",
            &c.url,
            "--secret-file",
            &secret,
            "--deploy-mode",
            "cluster",
            "--driver-memory",
            "512m",
            "--executor-memory",
            "512m",
            "--executor-cores",
            "1",
            "--job",
            "pi",
        ],
    );
    assert_eq!(code, 0, "{out}");
    assert!(out.contains(": FINISHED"), "{out}");
    assert!(out.contains("Pi is roughly 3.1"), "{out}");
    drop(c);
    eprintln!(
        "four hosts, both deploy modes: {:.1} s",
        started.elapsed().as_secs_f64()
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// The master's state as `sparkwire status --json`, run on host `i` with `secret`.
fn status_json(net: &Net, i: usize, dir: &Path, url: &str, secret: &str) -> serde_json::Value {
    let (code, out) = run_on(
        net,
        i,
        dir,
        "status",
        &["status", url, "--json", "--secret-file", secret],
    );
    assert_eq!(code, 0, "{out}");
    let json = &out[out.find('{').unwrap_or(0)..out.rfind('}').map_or(0, |e| e + 1)];
    serde_json::from_str(json).unwrap_or_else(|e| panic!("{e}: {out}"))
}

/// The first instant (polled every 20 ms, at most [`PATIENCE`]) at which `log` holds `needle`
/// `count` times.
fn when_logged(p: &HostProcess, needle: &str, count: usize) -> Instant {
    let deadline = Instant::now() + PATIENCE;
    loop {
        if p.log_text().matches(needle).count() >= count {
            return Instant::now();
        }
        assert!(
            Instant::now() < deadline,
            "never {count}× {needle:?}: {}",
            p.log_text()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn a_worker_cut_off_past_the_timeout_is_dead_its_executors_replaced_then_it_comes_back_once() {
    let Some(net) = Net::create_or_skip(4, "worker_cut_off") else {
        return;
    };
    let started = Instant::now();
    let dir = temp_dir("worker-cut-off");
    let secret = secret_file(&dir);
    // Worker timeout 3 s: heartbeats every 0.75 s.
    let c = cluster(&net, &dir, &secret, &[2, 3], "3", &[]);
    // One executor of one core on each worker; host 2 keeps a free core for a replacement.
    let mut job = sparkwire(
        &net,
        4,
        &dir,
        "submit",
        &[
            "submit",
            "--master",
            &c.url,
            "--secret-file",
            &secret,
            "--job",
            "sleep",
            "--partitions",
            "60",
            "--param",
            "200",
            "--executor-cores",
            "1",
            "--total-executor-cores",
            "2",
            "--executors",
            "2",
            "--executor-memory",
            "256m",
        ],
    );
    wait_for("an executor on each host", || {
        let s = status_json(&net, 4, &dir, &c.url, &secret);
        s["workers"]
            .as_array()
            .is_some_and(|ws| ws.iter().all(|w| w["coresused"] == 1))
    });

    net.cut(3);
    let cut = Instant::now();
    let dead = when_logged(&c.master, "because we got no heartbeat", 1);
    let s = status_json(&net, 4, &dir, &c.url, &secret);
    let worker3 = |s: &serde_json::Value| -> Vec<String> {
        s["workers"]
            .as_array()
            .map(|ws| {
                ws.iter()
                    .filter(|w| w["host"] == net.ip(3))
                    .map(|w| w["state"].as_str().unwrap_or("").to_string())
                    .collect()
            })
            .unwrap_or_default()
    };
    assert_eq!(worker3(&s), ["DEAD"], "{s}");
    // The executor lost with it is replaced on host 2.
    wait_for("host 2 runs the replacement executor", || {
        let s = status_json(&net, 4, &dir, &c.url, &secret);
        s["workers"].as_array().is_some_and(|ws| {
            ws.iter()
                .any(|w| w["host"] == net.ip(2) && w["coresused"] == 2)
        })
    });
    // Healed past the timeout: the worker learns it was forgotten (ReconnectWorker) and
    // registers again.
    std::thread::sleep(Duration::from_secs(2));
    net.heal(3);
    let healed = Instant::now();
    let back = when_logged(
        &c.master,
        &format!("Registering worker {}:7078", net.ip(3)),
        2,
    );
    let code = job.wait_exit(PATIENCE);
    let out = job.output().join("\n") + "\n" + &job.log_text();
    assert_eq!(code, Some(0), "{out}");
    assert!(out.contains("job sleep:"), "{out}");

    let s = status_json(&net, 4, &dir, &c.url, &secret);
    let alive: Vec<&serde_json::Value> = s["workers"]
        .as_array()
        .map(|ws| ws.iter().filter(|w| w["state"] == "ALIVE").collect())
        .unwrap_or_default();
    let mut hosts: Vec<&str> = alive.iter().filter_map(|w| w["host"].as_str()).collect();
    hosts.sort_unstable();
    assert_eq!(
        hosts,
        [net.ip(2), net.ip(3)],
        "one alive worker per host: {s}"
    );
    let apps = s["completedapps"].as_array().map_or(0, Vec::len);
    assert_eq!(apps, 1, "the application ended, not lost: {s}");
    assert_eq!(s["completedapps"][0]["state"], "FINISHED", "{s}");
    eprintln!(
        "worker cut off: DEAD {:.2} s after the cut (timeout 3 s), registered again {:.2} s \
         after the heal; whole test {:.1} s",
        (dead - cut).as_secs_f64(),
        (back - healed).as_secs_f64(),
        started.elapsed().as_secs_f64()
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// A copy of the `sparkwire` binary at `dir/bin/sparkwire`, for a `submit` whose executors are
/// then started through a gate put in its place ([`gate_executors`]).
fn binary_copy(dir: &Path) -> String {
    let bin = dir.join("bin");
    std::fs::create_dir_all(&bin).expect("bin dir");
    let copy = bin.join("sparkwire");
    std::fs::copy(BIN, &copy).expect("copy of sparkwire");
    copy.to_str().expect("utf-8").to_string()
}

/// Puts a gate in place of `program` (the copy a running `submit` was started from, which its
/// executors are launched as): every launch appends a line to `dir/attempts`; the first runs
/// `sparkwire` at once, every later one waits until `dir/open` exists. With it, the cluster
/// stops after exactly one executor attempt has ended, for as long as the test looks.
fn gate_executors(program: &str, dir: &Path) {
    let attempts = dir.join("attempts");
    let open = dir.join("open");
    let script = format!(
        "#!/bin/bash\n\
         echo $$ >> '{attempts}'\n\
         if [ \"$(wc -l < '{attempts}')\" -ge 2 ]; then\n\
         \x20 while [ ! -e '{open}' ]; do sleep 0.1; done\n\
         fi\n\
         exec '{BIN}' \"$@\"\n",
        attempts = attempts.display(),
        open = open.display(),
    );
    let staged = format!("{program}.gate");
    std::fs::write(&staged, script).expect("gate");
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&staged, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    // Renamed over the copy: the running submit keeps its own image.
    std::fs::rename(&staged, program).expect("gate in place");
}

/// Executor launches through the gate so far ([`gate_executors`]).
fn attempts(dir: &Path) -> usize {
    std::fs::read_to_string(dir.join("attempts"))
        .map(|s| s.lines().count())
        .unwrap_or(0)
}

#[test]
fn a_driver_its_executors_cannot_reach_says_why_within_one_executor_attempt_and_submit_gives_up() {
    let Some(net) = Net::create_or_skip(4, "unreachable_driver") else {
        return;
    };
    let started = Instant::now();
    let dir = temp_dir("unreachable-driver");
    let secret = secret_file(&dir);
    // The master first; its worker comes once the gate is in place. An executor waiting at
    // the gate is RUNNING to the master: it is never steady while the test looks (SPEC §16).
    let c = cluster(
        &net,
        &dir,
        &secret,
        &[],
        "60",
        &["--steady-executor", "600"],
    );
    let program = binary_copy(&dir);
    // The driver on host 4 announces 127.0.0.1 (and listens there): the executor on host 2
    // dials its own loopback, and is refused.
    let mut submit = {
        let mut cmd = net.command(
            4,
            &program,
            &[
                "submit",
                "--master",
                &c.url,
                "--secret-file",
                &secret,
                "--driver-host",
                "127.0.0.1",
                "--job",
                "pi",
                "--executor-memory",
                "256m",
                "--executor-timeout",
                "40",
            ],
        );
        cmd.env("RUST_LOG", "info")
            .env_remove("SPARKWIRE_SECRET_FILE")
            .env_remove("SPARK_LOCAL_IP")
            .env_remove("SPARK_LOCAL_HOSTNAME");
        net.spawn(cmd, dir.join("submit-unreachable.log"))
    };
    assert!(
        submit.first_line.starts_with("submit: "),
        "{:?}: {}",
        submit.first_line,
        submit.log_text()
    );
    gate_executors(&program, &dir);
    let work = dir.join("work2");
    let work = work.to_str().expect("utf-8").to_string();
    let _worker = sparkwire(
        &net,
        2,
        &dir,
        "worker2",
        &[
            "worker",
            &c.url,
            "--host",
            net.ip(2),
            "--port",
            "7078",
            "--no-webui",
            "--cores",
            "2",
            "--memory",
            "2048",
            "--work-dir",
            &work,
            "--allow-exec-any",
            &program,
            "--secret-file",
            &secret,
        ],
    );
    // Executor 0 ran and ended; executor 1, launched after the master heard of that end, waits
    // at the gate: exactly one attempt has ended from here on.
    wait_for("a second executor launched", || attempts(&dir) >= 2);

    // The master says why (SPEC §16), in the executor's own words carried in
    // ExecutorStateChanged's message: in /json (its web UI, read from host 3) and in
    // `sparkwire status` (from host 3). The driver says it at WARN.
    let refused = "cannot connect to the driver at spark://CoarseGrainedScheduler@127.0.0.1:";
    let first = "executors launched but ending: executor 0 on worker-";
    let ui = format!("http://{}:8080/json", net.ip(1));
    let mut last_json = None;
    wait_for("/json giving executor 0's end as the reason", || {
        last_json = master_json(&net, 3, &ui);
        last_json.as_ref().is_some_and(|j| {
            j["activeapps"][0]["waitingreason"]
                .as_str()
                .is_some_and(|w| w.starts_with(first))
        })
    });
    let in_json = last_json.as_ref().expect("/json")["activeapps"][0]["waitingreason"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(
        in_json.contains(refused) && in_json.ends_with(": connection refused"),
        "{in_json}"
    );
    let status = net
        .command(3, BIN, &["status", &c.url, "--secret-file", &secret])
        .env_remove("SPARKWIRE_SECRET_FILE")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
        .unwrap_or_default();
    let in_status = status
        .split("\nWAITING")
        .nth(1)
        .and_then(|w| w.lines().find(|l| l.contains(first)))
        .unwrap_or_else(|| panic!("sparkwire status does not give the reason: {status}"))
        .to_string();
    assert!(
        in_status.contains(refused) && in_status.contains("connection refused"),
        "{in_status}"
    );
    let warned = |out: &str| {
        out.lines()
            .find(|l| l.contains("WARN") && l.contains("executor 0 ended"))
            .map(str::to_string)
    };
    wait_for("the driver's WARN of executor 0's end", || {
        warned(&submit.log_text()).is_some()
    });
    let warned = warned(&submit.log_text()).unwrap_or_default();
    assert!(
        warned.contains(refused) && warned.contains("connection refused"),
        "{warned}"
    );
    // Still one attempt ended, one waiting: all three said why after the first.
    assert_eq!(attempts(&dir), 2, "more executors ran than the gate lets");

    // submit gives up after its --executor-timeout, non-zero, with the master's reason: executor
    // 0's end.
    let code = submit.wait_exit(PATIENCE);
    let out = submit.output().join("\n") + "\n" + &submit.log_text();
    let code = code.unwrap_or_else(|| panic!("submit still running: {out}"));
    assert_ne!(code, 0, "{out}");
    let last = out.lines().rev().find(|l| l.starts_with("sparkwire: "));
    assert!(
        last.is_some_and(|l| l.contains(
            "the master says the application waits: executors launched but ending: executor 0 "
        ) && l.contains(refused)
            && l.contains("connection refused")),
        "submit's last word is not the master's reason: {out}"
    );
    assert_eq!(attempts(&dir), 2, "more executors ran than the gate lets");
    std::fs::write(dir.join("open"), b"").expect("gate opened");
    eprintln!("unreachable driver: after 1 executor attempt, /json said: {in_json}");
    eprintln!("unreachable driver: after 1 executor attempt, status said: {in_status}");
    eprintln!("unreachable driver: after 1 executor attempt, the driver said: {warned}");
    eprintln!(
        "unreachable driver: submit gave up (exit {code}, --executor-timeout 40) with: {}; \
         whole test {:.1} s",
        last.unwrap_or_default(),
        started.elapsed().as_secs_f64()
    );
    let _ = std::fs::remove_dir_all(&dir);
}
