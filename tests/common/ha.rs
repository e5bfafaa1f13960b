//! A real ZooKeeper for the tests (Debian's `zookeeper` package, 3.8, on the machine's Java):
//! one standalone server or a 3-node ensemble on loopback, on ports the system picks, in a
//! temporary directory, every server stopped by its own process id (also when the test fails);
//! and the masters of a high-availability group as `sparkwire master` processes whose logs are
//! kept, with the checker that no master ever wrote while another one that was elected after it
//! led.

use std::io::{BufRead, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use sparkwire::messages::{Addr, RecoveryState, WorkerState};

/// Where Debian's package puts the server's jar.
pub const ZOOKEEPER_JAR: &str = "/usr/share/java/zookeeper.jar";
/// A log4j configuration of the package, on the class path (the server logs nothing without).
pub const LOG_CONF: &str = "/etc/zookeeper/conf_example";

/// The sparkwire binary.
pub use crate::common::processes::BIN;

use crate::common::files::temp_dir;

/// How long a server may take to serve, a master to take over, a job to finish (a JVM on a
/// loaded machine: generous, never asserted as a duration).
pub const PATIENCE: Duration = Duration::from_secs(90);

/// A port free now (the system picks it; taken again by the server a moment later).
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port()
}

/// One ZooKeeper server process.
struct Server {
    child: Option<Child>,
    client_port: u16,
    config: PathBuf,
    dir: PathBuf,
}

/// One ZooKeeper (standalone or ensemble) at a time in a test binary: JVMs are heavy on a small
/// machine shared with other builds.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// A ZooKeeper standalone server or ensemble, stopped (by process id) when dropped.
pub struct ZooKeeper {
    servers: Vec<Server>,
    /// The servers' directories (configuration, data, logs), removed when dropped.
    root: PathBuf,
    /// Held while it lives (declared last: dropped after the servers are stopped).
    _turn: std::sync::MutexGuard<'static, ()>,
}

/// A four-letter-word command's answer from the server at `port` (empty if none).
pub fn four_letters(port: u16, word: &str) -> String {
    let Ok(mut s) = TcpStream::connect(("127.0.0.1", port)) else {
        return String::new();
    };
    let _ = s.set_read_timeout(Some(Duration::from_secs(2)));
    if s.write_all(word.as_bytes()).is_err() {
        return String::new();
    }
    let mut out = String::new();
    let _ = s.read_to_string(&mut out);
    out
}

impl ZooKeeper {
    /// One standalone server, serving.
    pub fn standalone() -> ZooKeeper {
        ZooKeeper::start(1)
    }

    /// A three-node ensemble on loopback, serving (a leader elected).
    pub fn ensemble() -> ZooKeeper {
        ZooKeeper::start(3)
    }

    fn start(n: usize) -> ZooKeeper {
        assert!(
            Path::new(ZOOKEEPER_JAR).exists(),
            "ZooKeeper is not installed: run the tests with scripts/test.sh, which installs Debian's zookeeper (as root), or `apt-get install zookeeper`"
        );
        // A test that failed while holding its turn poisoned the lock; the turn is still good.
        let turn = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
        let root = temp_dir("zookeeper");
        let ports: Vec<(u16, u16, u16)> = (0..n)
            .map(|_| (free_port(), free_port(), free_port()))
            .collect();
        let mut servers = Vec::new();
        for (i, (client, peer, election)) in ports.iter().enumerate() {
            let dir = root.join(format!("zk{}", i + 1));
            std::fs::create_dir_all(dir.join("data")).expect("data dir");
            // Short ticks: sessions may be as short as 2 ticks (1 s) and the ensemble elects fast.
            let mut cfg = format!(
                "tickTime=500\ninitLimit=10\nsyncLimit=4\ndataDir={}\nclientPort={client}\n\
                 clientPortAddress=127.0.0.1\nadmin.enableServer=false\n\
                 4lw.commands.whitelist=ruok,srvr,mntr\nmaxClientCnxns=0\n",
                dir.join("data").display()
            );
            if n > 1 {
                std::fs::write(dir.join("data").join("myid"), format!("{}\n", i + 1))
                    .expect("myid");
                for (j, (_, p, e)) in ports.iter().enumerate() {
                    cfg.push_str(&format!("server.{}=127.0.0.1:{p}:{e}\n", j + 1));
                }
            }
            let _ = peer;
            let _ = election;
            let config = dir.join("zoo.cfg");
            std::fs::write(&config, cfg).expect("zoo.cfg");
            servers.push(Server {
                child: None,
                client_port: *client,
                config,
                dir,
            });
        }
        let mut zk = ZooKeeper {
            servers,
            root,
            _turn: turn,
        };
        for i in 0..n {
            zk.start_server(i);
        }
        zk.wait_serving();
        zk
    }

    /// Starts server `i` again (after [`ZooKeeper::kill`]) on its ports and data.
    pub fn start_server(&mut self, i: usize) {
        let s = &mut self.servers[i];
        assert!(s.child.is_none(), "server {i} runs");
        let log = std::fs::File::create(s.dir.join("server.log")).expect("log");
        let child = Command::new("java")
            .args([
                "-Xmx96m",
                "-XX:+UseSerialGC",
                "-XX:TieredStopAtLevel=1",
                "-Dzookeeper.admin.enableServer=false",
                "-cp",
                &format!("{ZOOKEEPER_JAR}:{LOG_CONF}"),
                "org.apache.zookeeper.server.quorum.QuorumPeerMain",
            ])
            .arg(&s.config)
            .stdin(Stdio::null())
            .stdout(log.try_clone().expect("log"))
            .stderr(log)
            .spawn()
            .expect("java runs ZooKeeper");
        s.child = Some(child);
    }

    /// Kills server `i` with SIGKILL, by its process id, and waits for it.
    pub fn kill(&mut self, i: usize) {
        if let Some(mut c) = self.servers[i].child.take() {
            let _ = Command::new("kill")
                .args(["-9", &c.id().to_string()])
                .status();
            let _ = c.wait();
        }
    }

    /// The connection string of every server, `127.0.0.1:P1,127.0.0.1:P2,…`.
    pub fn url(&self) -> String {
        self.servers
            .iter()
            .map(|s| format!("127.0.0.1:{}", s.client_port))
            .collect::<Vec<_>>()
            .join(",")
    }

    /// Server `i`'s mode (`standalone`, `leader`, `follower`) if it serves.
    pub fn mode(&self, i: usize) -> Option<String> {
        self.servers[i].child.as_ref()?;
        four_letters(self.servers[i].client_port, "srvr")
            .lines()
            .find_map(|l| l.strip_prefix("Mode: ").map(str::to_string))
    }

    /// The index of the ensemble's leader, once there is one.
    pub fn leader(&self) -> usize {
        let deadline = Instant::now() + PATIENCE;
        loop {
            for i in 0..self.servers.len() {
                if matches!(self.mode(i).as_deref(), Some("leader" | "standalone")) {
                    return i;
                }
            }
            assert!(Instant::now() < deadline, "no ZooKeeper leader");
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Waits until every running server serves.
    pub fn wait_serving(&self) {
        let deadline = Instant::now() + PATIENCE;
        for i in 0..self.servers.len() {
            if self.servers[i].child.is_none() {
                continue;
            }
            while self.mode(i).is_none() {
                assert!(
                    Instant::now() < deadline,
                    "ZooKeeper server {i} does not serve; its log: {}",
                    std::fs::read_to_string(self.servers[i].dir.join("server.log"))
                        .unwrap_or_default()
                );
                std::thread::sleep(Duration::from_millis(100));
            }
        }
    }
}

impl Drop for ZooKeeper {
    fn drop(&mut self) {
        for i in 0..self.servers.len() {
            self.kill(i);
        }
        // Kept when the test failed, for its server logs.
        if !std::thread::panicking() {
            let _ = std::fs::remove_dir_all(&self.root);
        }
    }
}

/// A `sparkwire` process whose standard error is kept in a file, killed (by its own pid) when
/// dropped.
pub struct Process {
    pub child: Option<Child>,
    /// Its first line of standard output.
    pub first_line: String,
    /// Where its standard error goes.
    pub log: PathBuf,
    /// Its standard output after the first line, as read so far.
    pub output: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
}

impl Process {
    /// Runs `sparkwire ARGS`, its log at `RUST_LOG=info` (the master's record writes at debug)
    /// in `log`; returns once it printed its first line.
    pub fn spawn(args: &[&str], log: PathBuf) -> Process {
        let err = std::fs::File::create(&log).expect("log file");
        let mut child = Command::new(BIN)
            .args(args)
            .env(
                "RUST_LOG",
                "info,sparkwire::reference::master::runtime=debug",
            )
            .env("NO_COLOR", "1")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(err)
            .spawn()
            .expect("spawn sparkwire");
        let stdout = child.stdout.take().expect("stdout");
        let mut reader = std::io::BufReader::new(stdout);
        let mut first_line = String::new();
        let _ = reader.read_line(&mut first_line);
        // Keep reading, so that the child never blocks on a full pipe.
        let output = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let kept = output.clone();
        std::thread::spawn(move || {
            let mut line = String::new();
            while reader.read_line(&mut line).is_ok_and(|n| n > 0) {
                if let Ok(mut k) = kept.lock() {
                    k.push(line.trim_end().to_string());
                }
                line.clear();
            }
        });
        Process {
            child: Some(child),
            first_line: first_line.trim().to_string(),
            log,
            output,
        }
    }

    /// Its process id.
    pub fn pid(&self) -> u32 {
        self.child.as_ref().map_or(0, Child::id)
    }

    /// Sends `signal` (`KILL`, `STOP`, `CONT`, `TERM`) to it.
    pub fn signal(&self, signal: &str) {
        let ok = Command::new("kill")
            .args([&format!("-{signal}"), &self.pid().to_string()])
            .status()
            .is_ok_and(|s| s.success());
        assert!(ok, "kill -{signal} {}", self.pid());
    }

    /// Waits (at most `patience`) until it exits; its status.
    pub fn wait_exit(&mut self, patience: Duration) -> Option<std::process::ExitStatus> {
        let deadline = Instant::now() + patience;
        let child = self.child.as_mut()?;
        loop {
            if let Ok(Some(status)) = child.try_wait() {
                self.child = None;
                return Some(status);
            }
            if Instant::now() >= deadline {
                return None;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Its standard output after the first line, so far.
    pub fn output(&self) -> Vec<String> {
        self.output.lock().map(|o| o.clone()).unwrap_or_default()
    }

    /// Its log so far.
    pub fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = Command::new("kill")
                .args(["-CONT", &c.id().to_string()])
                .status();
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// A master of a ZooKeeper high-availability group: `sparkwire master --recovery-mode
/// zookeeper` on a free port, no web UI, sessions of `session` seconds.
pub fn zk_master(zk: &str, dir: &str, session: f64, log: PathBuf, extra: &[&str]) -> Process {
    let session = session.to_string();
    let mut args = vec![
        "master",
        "--port",
        "0",
        "--no-webui",
        "--recovery-mode",
        "zookeeper",
        "--zookeeper-url",
        zk,
        "--zookeeper-dir",
        dir,
        "--zookeeper-session-timeout",
        &session,
    ];
    args.extend_from_slice(extra);
    Process::spawn(&args, log)
}

/// The `host:port` a master printed as its first line.
pub fn master_address(first_line: &str) -> String {
    first_line
        .rsplit("sparkwire://")
        .next()
        .unwrap_or_default()
        .to_string()
}

/// What a master's log says it did, with the time of each line (µs since the epoch).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LogEvent {
    /// Elected leader.
    Elected(i64),
    /// Started a record write or removal.
    WriteStart(i64),
    /// The write (or removal) succeeded.
    Written(i64),
}

/// Microseconds since the epoch of a log line's RFC 3339 UTC time stamp
/// (`2026-01-01T10:00:00.123456Z`).
pub fn stamp_us(line: &str) -> Option<i64> {
    let ts = line.split_whitespace().next()?;
    let (date, time) = ts.trim_end_matches('Z').split_once('T')?;
    let mut d = date.split('-').map(|x| x.parse::<i64>());
    let (y, m, day) = (d.next()?.ok()?, d.next()?.ok()?, d.next()?.ok()?);
    let (hms, frac) = time.split_once('.').unwrap_or((time, "0"));
    let mut t = hms.split(':').map(|x| x.parse::<i64>());
    let (h, mi, s) = (t.next()?.ok()?, t.next()?.ok()?, t.next()?.ok()?);
    let frac: String = frac.chars().chain("000000".chars()).take(6).collect();
    let us: i64 = frac.parse().ok()?;
    // Days from the civil date (proleptic Gregorian).
    let (y2, m2) = if m <= 2 { (y - 1, m + 9) } else { (y, m - 3) };
    let era = y2.div_euclid(400);
    let yoe = y2 - era * 400;
    let doy = (153 * m2 + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    Some(((days * 86_400 + h * 3600 + mi * 60 + s) * 1_000_000) + us)
}

/// The events of one master's log, in order.
pub fn log_events(log: &str) -> Vec<LogEvent> {
    let mut events = Vec::new();
    for line in log.lines() {
        let Some(t) = stamp_us(line) else { continue };
        if line.contains("I have been elected leader!") {
            events.push(LogEvent::Elected(t));
        } else if line.contains("writing record:") || line.contains("removing record:") {
            events.push(LogEvent::WriteStart(t));
        } else if line.contains("record written:") || line.contains("record removed:") {
            events.push(LogEvent::Written(t));
        }
    }
    events
}

/// The checker: fails (with what it found) if a master made a write that it started after
/// another master, elected after it, was elected (and so after its own election node was gone,
/// or its lease run out): two masters ALIVE and writing at once. Takes each master's log.
pub fn check_no_overlap(logs: &[String]) -> Result<usize, String> {
    let per: Vec<Vec<LogEvent>> = logs.iter().map(|l| log_events(l)).collect();
    let mut successful = 0;
    for (a, events) in per.iter().enumerate() {
        let Some(elected_a) = events.iter().find_map(|e| match e {
            LogEvent::Elected(t) => Some(*t),
            _ => None,
        }) else {
            if events.iter().any(|e| matches!(e, LogEvent::Written(_))) {
                return Err(format!("master {a} wrote without being elected"));
            }
            continue;
        };
        // Masters elected after a: the first of those elections ends a's term.
        let term_end = per
            .iter()
            .enumerate()
            .filter(|(b, _)| *b != a)
            .flat_map(|(_, ev)| ev.iter())
            .filter_map(|e| match e {
                LogEvent::Elected(t) if *t > elected_a => Some(*t),
                _ => None,
            })
            .min();
        let mut started = None;
        for e in events {
            match e {
                LogEvent::WriteStart(t) => started = Some(*t),
                LogEvent::Written(_) => {
                    successful += 1;
                    if let (Some(s), Some(end)) = (started, term_end) {
                        if s > end {
                            return Err(format!(
                                "master {a} started a write at {s} µs that succeeded, after another master was elected at {end} µs"
                            ));
                        }
                    }
                }
                LogEvent::Elected(_) => {}
            }
        }
    }
    Ok(successful)
}

// The scenarios, in either recovery mode.

/// The `Addr` of a master's `host:port`.
pub fn addr(host_port: &str) -> Addr {
    let (h, p) = host_port.rsplit_once(':').expect("host:port");
    Addr::new(h, p.parse::<i32>().expect("port"))
}

pub async fn state(m: &str) -> Option<sparkwire::messages::deploy::MasterStateResponse> {
    let a = addr(m);
    tokio::time::timeout(
        Duration::from_secs(5),
        crate::common::cluster::master_state(&a),
    )
    .await
    .ok()
}

/// Waits until the master at `m` answers a state satisfying `ok`.
pub async fn wait_for(
    m: &str,
    what: &str,
    ok: impl Fn(&sparkwire::messages::deploy::MasterStateResponse) -> bool,
) -> sparkwire::messages::deploy::MasterStateResponse {
    let deadline = Instant::now() + PATIENCE;
    loop {
        if let Some(s) = tokio::spawn({
            let m = m.to_string();
            async move { state(&m).await }
        })
        .await
        .ok()
        .flatten()
        {
            if ok(&s) {
                return s;
            }
        }
        assert!(Instant::now() < deadline, "gave up waiting for {what}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

pub fn worker(masters: &str, dir: &std::path::Path, name: &str) -> Process {
    let work = dir.join(name);
    let work = work.to_str().expect("path").to_string();
    Process::spawn(
        &[
            "worker",
            masters,
            "--port",
            "0",
            "--no-webui",
            "--cores",
            "1",
            "--memory",
            "1024",
            "--work-dir",
            &work,
            "--allow-exec",
            BIN,
        ],
        dir.join(format!("{name}.log")),
    )
}

pub fn logs(masters: &[&Process]) -> Vec<String> {
    masters.iter().map(|m| m.log_text()).collect()
}

/// What [`sleep_job`] prints when it ends well.
pub const SLEEP_JOB_DONE: &str = "job sleep: 24 tasks slept 1000 ms each";

/// The job the kill -9 tests run across a takeover, through the master group `masters`: 24
/// one-second tasks on two cores (12 s), far longer than a takeover. A job shorter than a
/// ZooKeeper session timeout plus an election could end before the new master sees its
/// application.
pub fn sleep_job(masters: &str, log: PathBuf) -> Process {
    Process::spawn(
        &[
            "submit",
            "--master",
            masters,
            "--job",
            "sleep",
            "--partitions",
            "24",
            "--param",
            "1000",
            "--executor-memory",
            "512m",
        ],
        log,
    )
}

/// Whether a master's state shows both workers ALIVE and the application active again (after
/// a takeover).
pub fn back_after_takeover(s: &sparkwire::messages::deploy::MasterStateResponse) -> bool {
    s.workers
        .iter()
        .filter(|w| w.state == WorkerState::Alive)
        .count()
        == 2
        && s.active_apps.len() == 1
}

/// A kill -9 of the active master during a job: a standby (started by `start`, as the first
/// master) takes over, both workers and the application re-register through MasterChanged, the
/// job finishes with the right result, a second job runs through the new master, and the
/// checker finds no two masters writing at once. Returns the takeover time: from the kill to
/// the standby ALIVE with both workers and the application back.
pub async fn kill_9_during_a_job(name: &str, start: impl Fn(PathBuf) -> Process) -> Duration {
    let dir = temp_dir(name);
    let m1 = start(dir.join("m1.log"));
    let a1 = master_address(&m1.first_line);
    wait_for(&a1, "m1 ALIVE", |s| s.status == RecoveryState::Alive).await;
    let m2 = start(dir.join("m2.log"));
    let a2 = master_address(&m2.first_line);
    wait_for(&a2, "m2 STANDBY", |s| s.status == RecoveryState::Standby).await;
    let masters = format!("sparkwire://{a1},{a2}");
    let _w1 = worker(&masters, &dir, "w1");
    let _w2 = worker(&masters, &dir, "w2");
    wait_for(&a1, "two workers", |s| s.workers.len() == 2).await;
    let mut job = sleep_job(&masters, dir.join("job.log"));
    wait_for(&a1, "the application running", |s| {
        s.active_apps.len() == 1 && s.workers.iter().map(|w| w.cores_used).sum::<i32>() == 2
    })
    .await;
    m1.signal("KILL");
    let killed = Instant::now();
    let s = wait_for(&a2, "m2 ALIVE with both workers and the application", |s| {
        s.status == RecoveryState::Alive && back_after_takeover(s)
    })
    .await;
    let took = killed.elapsed();
    assert_eq!(s.active_apps.len(), 1);
    assert!(
        job.wait_exit(PATIENCE).is_some_and(|s| s.success()),
        "the job failed: {:?}\n{}",
        job.output(),
        job.log_text()
    );
    let out = job.output();
    assert!(out.iter().any(|l| l == SLEEP_JOB_DONE), "{out:?}");
    // The new master schedules: a job through the group after the takeover, checked exactly.
    let mut sum = Process::spawn(
        &[
            "submit",
            "--master",
            &masters,
            "--job",
            "sum-squares",
            "--partitions",
            "4",
            "--param",
            "1000",
            "--executor-memory",
            "512m",
        ],
        dir.join("sum.log"),
    );
    assert!(
        sum.wait_exit(PATIENCE).is_some_and(|s| s.success()),
        "the second job failed: {}",
        sum.log_text()
    );
    let expected = (0..1000u128).map(|i| i * i).sum::<u128>();
    assert!(
        sum.output()
            .iter()
            .any(|l| l.contains(&expected.to_string())),
        "{:?}",
        sum.output()
    );
    let written = check_no_overlap(&logs(&[&m1, &m2])).expect("no two masters wrote at once");
    assert!(written >= 4, "both masters wrote records ({written})");
    took
}

/// Pause/resume cycles of the active master (`SPARKWIRE_PAUSE_CYCLES`, default 2): each time the
/// leader is stopped (SIGSTOP) past its session timeout or lease, the standby takes over, a new
/// worker registers with both (the paused one finds it waiting when it resumes), then the old leader resumes (SIGCONT): it must write nothing and
/// stop leading, and the checker finds no two masters writing at once.
pub async fn pause_cycles(name: &str, start: impl Fn(PathBuf) -> Process) {
    let cycles: usize = std::env::var("SPARKWIRE_PAUSE_CYCLES")
        .ok()
        .and_then(|c| c.parse().ok())
        .unwrap_or(2);
    let dir = temp_dir(name);
    let mut masters = vec![start(dir.join("m0.log"))];
    wait_for(&master_address(&masters[0].first_line), "m0 ALIVE", |s| {
        s.status == RecoveryState::Alive
    })
    .await;
    let mut workers = Vec::new();
    for cycle in 0..cycles {
        let standby = start(dir.join(format!("m{}.log", cycle + 1)));
        let (leader, next) = (masters.len() - 1, masters.len());
        let old = master_address(&masters[leader].first_line);
        let new = master_address(&standby.first_line);
        masters.push(standby);
        wait_for(&new, "the new master STANDBY", |s| {
            s.status == RecoveryState::Standby
        })
        .await;
        masters[leader].signal("STOP");
        wait_for(&new, "the standby ALIVE", |s| {
            s.status == RecoveryState::Alive
        })
        .await;
        let group = format!("sparkwire://{old},{new}");
        workers.push(worker(&group, &dir, &format!("w{cycle}")));
        // Every worker so far: the earlier ones recovered, the new one registered.
        wait_for(&new, "the workers registered", |s| {
            s.workers
                .iter()
                .filter(|w| w.state == WorkerState::Alive)
                .count()
                == cycle + 1
        })
        .await;
        masters[leader].signal("CONT");
        let exit = masters[leader].wait_exit(PATIENCE);
        assert!(
            exit.is_some(),
            "cycle {cycle}: the old leader still runs after it resumed: {}",
            masters[leader].log_text()
        );
        let log = masters[leader].log_text();
        assert!(
            log.contains("Leadership has been revoked"),
            "cycle {cycle}: {log}"
        );
        let _ = next;
    }
    let logs: Vec<String> = masters.iter().map(Process::log_text).collect();
    let written = check_no_overlap(&logs).expect("no two masters wrote at once");
    assert!(
        written >= cycles,
        "each new leader wrote its worker ({written})"
    );
}

#[test]
fn the_checker_finds_a_write_after_another_master_was_elected() {
    let a =
        "2026-01-01T10:00:00.000001Z  INFO x: I have been elected leader! New state: RECOVERING\n\
             2026-01-01T10:00:01.000000Z DEBUG x: writing record: worker w1\n\
             2026-01-01T10:00:01.100000Z DEBUG x: record written: worker w1\n\
             2026-01-01T10:00:09.000000Z DEBUG x: writing record: worker w2\n\
             2026-01-01T10:00:09.100000Z DEBUG x: record written: worker w2\n";
    let b =
        "2026-01-01T10:00:05.000000Z  INFO x: I have been elected leader! New state: RECOVERING\n";
    assert!(check_no_overlap(&[a.to_string(), b.to_string()]).is_err());
    let fenced = a.replace(
        "2026-01-01T10:00:09.100000Z DEBUG x: record written: worker w2",
        "2026-01-01T10:00:09.100000Z ERROR x: cannot persist worker w2",
    );
    assert_eq!(check_no_overlap(&[fenced, b.to_string()]), Ok(1));
    assert_eq!(
        stamp_us("1970-01-02T00:00:01.5Z x"),
        Some((86_400 + 1) * 1_000_000 + 500_000)
    );
}
