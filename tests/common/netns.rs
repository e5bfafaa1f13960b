//! Many hosts on one machine: N network namespaces, each with its own interface and address
//! (`10.77.0.1`…`10.77.0.N`), joined by a Linux bridge. To a process run inside one
//! ([`Net::spawn`]), its namespace is a host of its own: `127.0.0.1` is its own loopback, and
//! the other hosts are reached over the bridge only.
//!
//! The fixture creates everything under names of its own (`swt<pid>n<k>…`) and removes exactly
//! those when dropped, also when a test fails; namespaces left by a test process that no longer
//! runs (killed before it could clean up) are removed by the next one. It can cut a host off
//! ([`Net::cut`]: its link leaves the bridge, so that its packets and the others' to it are
//! dropped in silence, as in a partition), heal it ([`Net::heal`]), cut two hosts off from each
//! other alone ([`Net::cut_between`]: each is told a hardware address nobody has for the other,
//! so that their frames to each other go nowhere, in silence, while both reach every other host),
//! and kill every process of a host at once ([`Net::kill_host`]).
//!
//! What runs on a host: any `sparkwire` process ([`Net::spawn`], its first line awaited), any
//! other program such as a real Spark daemon or application ([`Net::spawn_logged`], its output
//! in a log; [`spark_env`] gives Spark's environment from `scripts/spark/env.sh`), and ZooKeeper
//! ([`Net::zookeeper`], Debian's package, listening on the host's own address).
//!
//! It needs root (`ip netns add`): [`Net::create`] says why it cannot when it cannot, and
//! [`Net::create_or_skip`] turns that into a skip the test prints, or into a failure when
//! `SPARKWIRE_REQUIRE_NETNS=1` (as CI sets it).

#![allow(dead_code)]

use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Set to `1` to make a test fail, not skip, where namespaces cannot be made.
pub const REQUIRE_ENV: &str = "SPARKWIRE_REQUIRE_NETNS";

/// Sets of hosts made by this process so far (part of every name).
static NETS: AtomicUsize = AtomicUsize::new(0);

/// The port ZooKeeper listens on, on its host's address ([`Net::zookeeper`]).
pub const ZOOKEEPER_PORT: u16 = 2181;

/// The prefix of every name this fixture gives.
const PREFIX: &str = "swt";

/// One host: a namespace, its interface (inside) and its peer (on the bridge), its address.
#[derive(Debug, Clone)]
pub struct Host {
    pub ns: String,
    pub inside: String,
    pub peer: String,
    pub ip: String,
}

/// N hosts on a bridge, removed when dropped.
pub struct Net {
    pub bridge: String,
    pub hosts: Vec<Host>,
}

/// Runs `ip ARGS`; its error output when it fails.
fn ip(args: &[&str]) -> Result<(), String> {
    let out = Command::new("ip")
        .args(args)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("cannot run `ip`: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "`ip {}` failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

/// Whether process `pid` runs.
fn alive(pid: u32) -> bool {
    std::path::Path::new(&format!("/proc/{pid}")).exists()
}

/// Removes the namespaces and bridges a test process that no longer runs left behind (the
/// process id is part of their names); nothing else.
fn remove_stale() {
    let stale = |name: &str| {
        name.strip_prefix(PREFIX)
            .and_then(|rest| rest.split('n').next())
            .and_then(|pid| pid.parse::<u32>().ok())
            .is_some_and(|pid| !alive(pid))
    };
    if let Ok(dir) = std::fs::read_dir("/run/netns") {
        for e in dir.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if stale(&name) {
                let _ = ip(&["netns", "del", &name]);
            }
        }
    }
    if let Ok(dir) = std::fs::read_dir("/sys/class/net") {
        for e in dir.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if stale(&name) {
                let _ = ip(&["link", "del", &name]);
            }
        }
    }
}

impl Net {
    /// Makes `n` hosts, `10.77.0.1`… on one bridge; why not when it cannot (not root, no `ip`).
    pub fn create(n: usize) -> Result<Net, String> {
        assert!((1..=9).contains(&n), "1 to 9 hosts");
        remove_stale();
        let k = NETS.fetch_add(1, Ordering::SeqCst);
        // Interface names are at most 15 bytes: swt + pid (≤7) + n + k + b|v|p + i.
        let base = format!("{PREFIX}{}n{}", std::process::id(), k % 100);
        let mut net = Net {
            bridge: format!("{base}b"),
            hosts: Vec::new(),
        };
        ip(&["link", "add", &net.bridge, "type", "bridge"])?;
        ip(&["link", "set", &net.bridge, "up"])?;
        for i in 1..=n {
            let host = Host {
                ns: format!("{base}h{i}"),
                inside: format!("{base}v{i}"),
                peer: format!("{base}p{i}"),
                ip: format!("10.77.0.{i}"),
            };
            ip(&["netns", "add", &host.ns])?;
            net.hosts.push(host.clone());
            ip(&[
                "link",
                "add",
                &host.inside,
                "type",
                "veth",
                "peer",
                "name",
                &host.peer,
            ])?;
            ip(&["link", "set", &host.inside, "netns", &host.ns])?;
            ip(&["link", "set", &host.peer, "master", &net.bridge])?;
            ip(&["link", "set", &host.peer, "up"])?;
            let cidr = format!("{}/24", host.ip);
            ip(&["-n", &host.ns, "addr", "add", &cidr, "dev", &host.inside])?;
            ip(&["-n", &host.ns, "link", "set", &host.inside, "up"])?;
            ip(&["-n", &host.ns, "link", "set", "lo", "up"])?;
        }
        Ok(net)
    }

    /// [`create`](Self::create), or `None` after printing why the test skips; panics instead
    /// when `SPARKWIRE_REQUIRE_NETNS=1`.
    pub fn create_or_skip(n: usize, test: &str) -> Option<Net> {
        match Net::create(n) {
            Ok(net) => Some(net),
            Err(why) => {
                let why = format!(
                    "{test}: SKIPPED: cannot make network namespaces (needs root and `ip`): {why}"
                );
                if std::env::var(REQUIRE_ENV).is_ok_and(|v| v == "1") {
                    panic!("{why} ({REQUIRE_ENV}=1)");
                }
                eprintln!("{why}");
                None
            }
        }
    }

    /// Host `i`'s address (hosts count from 1).
    pub fn ip(&self, i: usize) -> &str {
        &self.hosts[i - 1].ip
    }

    /// `program ARGS` to run on host `i`.
    pub fn command(&self, i: usize, program: &str, args: &[&str]) -> Command {
        let mut c = Command::new("ip");
        c.args(["netns", "exec", &self.hosts[i - 1].ns, program])
            .args(args);
        c
    }

    /// Starts `command` (from [`command`](Self::command)): its standard error in `log`, its
    /// standard output read line by line; returns once it printed its first line (or ended).
    pub fn spawn(&self, mut command: Command, log: PathBuf) -> HostProcess {
        let err = std::fs::File::create(&log).expect("log file");
        let mut child = command
            .env("NO_COLOR", "1")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(err)
            .spawn()
            .expect("spawn on a host");
        let stdout = child.stdout.take().expect("stdout");
        let lines = Arc::new(Mutex::new(Vec::new()));
        let kept = Arc::clone(&lines);
        let (first_tx, first_rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut reader = std::io::BufReader::new(stdout);
            let mut line = String::new();
            let mut first = Some(first_tx);
            while reader.read_line(&mut line).is_ok_and(|n| n > 0) {
                if let Some(tx) = first.take() {
                    let _ = tx.send(line.trim_end().to_string());
                }
                if let Ok(mut k) = kept.lock() {
                    k.push(line.trim_end().to_string());
                }
                line.clear();
            }
        });
        let first_line = first_rx
            .recv_timeout(Duration::from_secs(30))
            .unwrap_or_default();
        HostProcess {
            child: Some(child),
            first_line,
            lines,
            log,
        }
    }

    /// Cuts host `i` off: its link leaves the bridge, so that what it sends and what is sent to
    /// it is dropped without a word (no error on either side), as in a partition.
    pub fn cut(&self, i: usize) {
        ip(&["link", "set", &self.hosts[i - 1].peer, "nomaster"]).expect("cut");
    }

    /// Heals host `i`: its link joins the bridge again.
    pub fn heal(&self, i: usize) {
        let h = &self.hosts[i - 1];
        ip(&["link", "set", &h.peer, "master", &self.bridge]).expect("heal");
        ip(&["link", "set", &h.peer, "up"]).expect("heal");
    }

    /// Process ids of every process running on host `i`.
    pub fn pids(&self, i: usize) -> Vec<u32> {
        let out = Command::new("ip")
            .args(["netns", "pids", &self.hosts[i - 1].ns])
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
            .unwrap_or_default();
        out.split_whitespace()
            .filter_map(|p| p.parse().ok())
            .collect()
    }

    /// Kills (SIGKILL) every process of host `i` at once, as when the machine dies; waits
    /// until none is left.
    pub fn kill_host(&self, i: usize) {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let pids = self.pids(i);
            if pids.is_empty() {
                return;
            }
            let mut kill = Command::new("kill");
            kill.arg("-9");
            for p in &pids {
                kill.arg(p.to_string());
            }
            let _ = kill.stderr(Stdio::null()).status();
            assert!(
                Instant::now() < deadline,
                "host {i}'s processes {pids:?} live on"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// The hardware address no host has, that [`cut_between`](Self::cut_between) tells hosts
    /// for each other (locally administered, unicast).
    const NOWHERE: &'static str = "02:00:00:00:77:fe";

    /// Cuts hosts `a` and `b` off from each other alone: each holds a permanent neighbour entry
    /// giving the other's address a hardware address no interface has, so that what either
    /// sends the other is dropped without a word (no ARP, no error: a connection attempt times
    /// out), while both still reach every other host.
    pub fn cut_between(&self, a: usize, b: usize) {
        for (from, to) in [(a, b), (b, a)] {
            let h = &self.hosts[from - 1];
            ip(&[
                "-n",
                &h.ns,
                "neigh",
                "replace",
                self.ip(to),
                "lladdr",
                Self::NOWHERE,
                "dev",
                &h.inside,
                "nud",
                "permanent",
            ])
            .expect("cut between");
        }
    }

    /// Heals what [`cut_between`](Self::cut_between) cut: the two entries go, and the hosts
    /// find each other again by ARP.
    pub fn heal_between(&self, a: usize, b: usize) {
        for (from, to) in [(a, b), (b, a)] {
            let h = &self.hosts[from - 1];
            ip(&["-n", &h.ns, "neigh", "del", self.ip(to), "dev", &h.inside])
                .expect("heal between");
        }
    }

    /// Whether a TCP connection from host `from` to `ip:port` is accepted within 2 s (bash's
    /// `/dev/tcp`, run on that host).
    pub fn tcp_open(&self, from: usize, ip: &str, port: u16) -> bool {
        self.command(
            from,
            "timeout",
            &["2", "bash", "-c", &format!("exec 3<>/dev/tcp/{ip}/{port}")],
        )
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
    }

    /// Starts `command` (from [`command`](Self::command)) with its standard output and error
    /// both in `log`; returns at once (for programs that print no first line, such as JVMs).
    pub fn spawn_logged(&self, mut command: Command, log: PathBuf) -> HostProcess {
        let out = std::fs::File::create(&log).expect("log file");
        let err = out.try_clone().expect("log file");
        let child = command
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err)
            .spawn()
            .expect("spawn on a host");
        HostProcess {
            child: Some(child),
            first_line: String::new(),
            lines: Arc::new(Mutex::new(Vec::new())),
            log,
        }
    }

    /// A ZooKeeper server (Debian's package, 3.8, on the machine's Java) on host `i`, listening
    /// on the host's own address, port [`ZOOKEEPER_PORT`], its configuration, data and log in
    /// `dir`; returns once it serves (its `srvr` answer, asked from the host itself, names its
    /// mode). Ticks of 500 ms: sessions may be as short as 1 s.
    pub fn zookeeper(&self, i: usize, dir: &Path) -> HostProcess {
        use crate::common::ha::{LOG_CONF, PATIENCE, ZOOKEEPER_JAR};
        assert!(
            Path::new(ZOOKEEPER_JAR).exists(),
            "ZooKeeper is not installed: run the tests with scripts/test.sh, which installs Debian's zookeeper (as root), or `apt-get install zookeeper`"
        );
        std::fs::create_dir_all(dir.join("data")).expect("ZooKeeper's data directory");
        let config = dir.join("zoo.cfg");
        std::fs::write(
            &config,
            format!(
                "tickTime=500\ninitLimit=10\nsyncLimit=4\ndataDir={}\nclientPort={ZOOKEEPER_PORT}\n\
                 clientPortAddress={}\nadmin.enableServer=false\n\
                 4lw.commands.whitelist=ruok,srvr,mntr\nmaxClientCnxns=0\n",
                dir.join("data").display(),
                self.ip(i)
            ),
        )
        .expect("zoo.cfg");
        let config = config.to_str().expect("utf-8 path").to_string();
        let cp = format!("{ZOOKEEPER_JAR}:{LOG_CONF}");
        let command = self.command(
            i,
            "java",
            &[
                "-Xmx96m",
                "-XX:+UseSerialGC",
                "-XX:TieredStopAtLevel=1",
                "-Dzookeeper.admin.enableServer=false",
                "-cp",
                &cp,
                "org.apache.zookeeper.server.quorum.QuorumPeerMain",
                &config,
            ],
        );
        let mut zk = self.spawn_logged(command, dir.join("zookeeper.log"));
        let deadline = Instant::now() + PATIENCE;
        loop {
            let srvr = self
                .command(
                    i,
                    "timeout",
                    &[
                        "2",
                        "bash",
                        "-c",
                        &format!(
                            "exec 3<>/dev/tcp/{}/{ZOOKEEPER_PORT} && printf srvr >&3 && cat <&3",
                            self.ip(i)
                        ),
                    ],
                )
                .stdin(Stdio::null())
                .stderr(Stdio::null())
                .output()
                .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
                .unwrap_or_default();
            if srvr.contains("Mode: ") {
                return zk;
            }
            assert!(
                zk.wait_exit(Duration::ZERO).is_none() && Instant::now() < deadline,
                "ZooKeeper on host {i} does not serve: {}",
                zk.log_text()
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    }
}

impl Drop for Net {
    fn drop(&mut self) {
        for i in 1..=self.hosts.len() {
            for p in self.pids(i) {
                let _ = Command::new("kill")
                    .args(["-9", &p.to_string()])
                    .stderr(Stdio::null())
                    .status();
            }
        }
        for h in &self.hosts {
            let _ = ip(&["netns", "del", &h.ns]);
            // Deleting the namespace deletes its veth and with it the peer; in case it was
            // never moved in:
            let _ = Command::new("ip")
                .args(["link", "del", &h.peer])
                .stderr(Stdio::null())
                .status();
        }
        let _ = ip(&["link", "del", &self.bridge]);
    }
}

/// A process on a host: its output kept, killed (by its own pid) when dropped.
pub struct HostProcess {
    pub child: Option<Child>,
    /// Its first line of standard output ("" if it printed none within 30 s).
    pub first_line: String,
    lines: Arc<Mutex<Vec<String>>>,
    /// Its standard error.
    pub log: PathBuf,
}

impl HostProcess {
    /// Its standard output so far, the first line included.
    pub fn output(&self) -> Vec<String> {
        self.lines.lock().map(|l| l.clone()).unwrap_or_default()
    }

    /// Its process id (0 once it ended and was waited for).
    pub fn pid(&self) -> u32 {
        self.child.as_ref().map_or(0, Child::id)
    }

    /// Sends `signal` (`TERM`, `KILL`, `STOP`, `CONT`) to it, by its own process id.
    pub fn signal(&self, signal: &str) {
        if let Some(c) = &self.child {
            let _ = Command::new("kill")
                .args([&format!("-{signal}"), &c.id().to_string()])
                .stderr(Stdio::null())
                .status();
        }
    }

    /// Its standard error so far.
    pub fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Waits (at most `patience`) for it to end: its exit code (-1 for a signal).
    pub fn wait_exit(&mut self, patience: Duration) -> Option<i32> {
        let deadline = Instant::now() + patience;
        let child = self.child.as_mut()?;
        loop {
            if let Ok(Some(status)) = child.try_wait() {
                self.child = None;
                // Let the reader thread take the last lines.
                std::thread::sleep(Duration::from_millis(100));
                return Some(status.code().unwrap_or(-1));
            }
            if Instant::now() >= deadline {
                return None;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Waits (at most `patience`) for a line of its output that `pred` accepts.
    pub fn wait_line(&self, patience: Duration, pred: impl Fn(&str) -> bool) -> Option<String> {
        let deadline = Instant::now() + patience;
        loop {
            if let Some(l) = self.output().into_iter().find(|l| pred(l)) {
                return Some(l);
            }
            if Instant::now() >= deadline {
                return None;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for HostProcess {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// Spark `release`'s environment (`SPARK_HOME`, `JAVA_HOME`, `PYSPARK_PYTHON`,
/// `PYSPARK_DRIVER_PYTHON`) as `scripts/spark/env.sh` prints it, installing the release into the
/// cache (`~/.cache/sparkwire-spark/`) when it is missing; why not when it cannot.
pub fn spark_env(release: &str) -> Result<Vec<(String, String)>, String> {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/spark/env.sh");
    let out = Command::new("bash")
        .arg(&script)
        .arg(release)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("cannot run {}: {e}", script.display()))?;
    if !out.status.success() {
        return Err(format!(
            "{} {release} failed: {}",
            script.display(),
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    let vars: Vec<(String, String)> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.strip_prefix("export "))
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.to_string(), v.trim_matches(['"', '\'']).to_string()))
        .collect();
    if !vars.iter().any(|(k, _)| k == "SPARK_HOME") {
        return Err(format!(
            "{} {release} named no SPARK_HOME",
            script.display()
        ));
    }
    Ok(vars)
}

/// A private (0600) secret file in `dir`, for a cluster whose daemons listen off loopback (they
/// demand one there).
pub fn secret_file(dir: &Path) -> String {
    use sparkwire::connection::write_secret_file;
    use sparkwire::wire::handshake::Secret;
    let path = dir.join("secret");
    let secret = Secret::new(b"the-secret-of-the-many-hosts-cluster".to_vec()).expect("secret");
    write_secret_file(&path, &secret).expect("written");
    path.display().to_string()
}

impl Net {
    /// `sparkwire ARGS` on host `i`, its standard error in `dir/NAME.log` at `RUST_LOG=info`
    /// (a master's record writes at debug, for [`check_no_overlap`]), nothing of the test's
    /// own environment about addresses or secrets passed on; returns once it printed its first
    /// line.
    ///
    /// [`check_no_overlap`]: crate::common::ha::check_no_overlap
    pub fn sparkwire(&self, i: usize, dir: &Path, name: &str, args: &[&str]) -> HostProcess {
        let mut c = self.command(i, crate::common::processes::BIN, args);
        c.env(
            "RUST_LOG",
            "info,sparkwire::reference::master::runtime=debug",
        )
        .env_remove("SPARKWIRE_SECRET_FILE")
        .env_remove("SPARK_LOCAL_IP")
        .env_remove("SPARK_LOCAL_HOSTNAME")
        .env_remove("SPARK_MASTER_HOST");
        self.spawn(c, dir.join(format!("{name}.log")))
    }

    /// The state of the master at `url` as `sparkwire status URL --json` prints it, asked from
    /// host `from` with `secret`; `None` when it gave none (the master does not answer).
    pub fn status(&self, from: usize, url: &str, secret: &str) -> Option<serde_json::Value> {
        self.status_with(from, &[url, "--secret-file", secret])
    }

    /// [`status`](Self::status) of a master that demands no secret (`--insecure`).
    pub fn status_insecure(&self, from: usize, url: &str) -> Option<serde_json::Value> {
        self.status_with(from, &[url])
    }

    fn status_with(&self, from: usize, args: &[&str]) -> Option<serde_json::Value> {
        let mut all = vec!["status", "--json"];
        all.extend_from_slice(args);
        let out = self
            .command(from, crate::common::processes::BIN, &all)
            .env_remove("SPARKWIRE_SECRET_FILE")
            .stdin(Stdio::null())
            .stderr(Stdio::null())
            .output()
            .ok()?;
        if !out.status.success() {
            return None;
        }
        serde_json::from_slice(&out.stdout).ok()
    }
}

/// Waits until `ok` holds, polling every 100 ms, at most `patience`; panics naming `what`.
pub fn wait_until(what: &str, patience: Duration, mut ok: impl FnMut() -> bool) {
    let deadline = Instant::now() + patience;
    while !ok() {
        assert!(Instant::now() < deadline, "gave up waiting for {what}");
        std::thread::sleep(Duration::from_millis(100));
    }
}
