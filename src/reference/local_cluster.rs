//! A local cluster of processes, the counterpart of Spark's `local-cluster[N,C,M]`: one
//! `sparkwire master` and N `sparkwire worker`s on loopback, each started as a child process that
//! prints its listening address as its first line of standard output.
//!
//! Every child runs in one new process group (the master's), and so do the executors the workers
//! start: [`LocalCluster::shutdown`] and dropping the cluster end the whole group, so no process
//! is left behind whichever way the caller exits. Should the caller be killed with SIGKILL, the
//! master and workers still stop: each reads a pipe from the caller as its standard input
//! (`--exit-with-stdin`) and shuts down when it ends; the workers' executors go with them.

use std::path::PathBuf;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, ChildStdout, Command};

/// How to start the cluster.
#[derive(Debug, Clone)]
pub struct ClusterConfig {
    /// The `sparkwire` executable (workers are allowed to run it to start executors).
    pub program: PathBuf,
    /// Workers.
    pub workers: usize,
    /// Cores per worker.
    pub cores: u32,
    /// Memory per worker, MiB.
    pub memory_mb: u32,
    /// Extra arguments of `sparkwire master`.
    pub master_args: Vec<String>,
    /// Extra arguments of each `sparkwire worker`.
    pub worker_args: Vec<String>,
    /// How long a child has to print its address.
    pub start_timeout: Duration,
    /// Where workers run executors; `None`: a fresh directory under the system's temporary
    /// directory, removed at shutdown.
    pub work_dir: Option<PathBuf>,
}

impl ClusterConfig {
    /// `workers` workers of `cores` cores and `memory_mb` MiB, run from `program`.
    pub fn new(program: impl Into<PathBuf>, workers: usize, cores: u32, memory_mb: u32) -> Self {
        ClusterConfig {
            program: program.into(),
            workers,
            cores,
            memory_mb,
            master_args: Vec::new(),
            worker_args: Vec::new(),
            start_timeout: Duration::from_secs(30),
            work_dir: None,
        }
    }
}

/// Why the cluster could not start.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ClusterError {
    /// A child could not be started.
    #[error("cannot start {what}: {message}")]
    Spawn {
        /// Which child.
        what: String,
        /// Why.
        message: String,
    },
    /// A child did not print its address in time, or printed something else.
    #[error("{what} did not announce its address: {message}")]
    NoAddress {
        /// Which child.
        what: String,
        /// What happened instead.
        message: String,
    },
}

/// A running local cluster. See the module documentation.
#[derive(Debug)]
pub struct LocalCluster {
    master: Option<Child>,
    master_url: String,
    master_output: Output,
    master_drain: Option<tokio::task::JoinHandle<()>>,
    workers: Vec<Option<Child>>,
    worker_urls: Vec<String>,
    group: Option<u32>,
    /// A work directory this cluster made, removed at shutdown.
    own_work_dir: Option<PathBuf>,
}

/// What a child printed after its first line.
type Output = Arc<Mutex<Vec<String>>>;

/// Starts `program args…` in process group `group` (a new one when `None`), and reads the address
/// its first line ends with.
async fn start_child(
    what: &str,
    program: &PathBuf,
    args: &[String],
    group: Option<u32>,
    timeout: Duration,
) -> Result<(Child, String, Output, tokio::task::JoinHandle<()>), ClusterError> {
    let mut cmd = Command::new(program);
    if std::env::var_os("RUST_LOG").is_none() {
        // The children's informational logs would drown the caller's output.
        cmd.env("RUST_LOG", "warn");
    }
    cmd.args(args)
        // The child holds the read end of this pipe and stops when it ends (`--exit-with-stdin`):
        // the write end stays in `Child` and closes when this process ends, however it ends.
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true);
    #[cfg(unix)]
    cmd.process_group(group.map_or(0, |g| i32::try_from(g).unwrap_or(0)));
    let mut child = cmd.spawn().map_err(|e| ClusterError::Spawn {
        what: what.to_string(),
        message: e.to_string(),
    })?;
    let no_address = |message: String| ClusterError::NoAddress {
        what: what.to_string(),
        message,
    };
    let Some(stdout) = child.stdout.take() else {
        return Err(no_address("no standard output".into()));
    };
    let mut lines = BufReader::new(stdout).lines();
    let first = tokio::time::timeout(timeout, lines.next_line()).await;
    let line = match first {
        Ok(Ok(Some(line))) => line,
        Ok(Ok(None)) => return Err(no_address("it exited".into())),
        Ok(Err(e)) => return Err(no_address(e.to_string())),
        Err(_) => return Err(no_address(format!("nothing within {timeout:?}"))),
    };
    let Some(url) = line.split_whitespace().last().filter(|u| u.contains("://")) else {
        return Err(no_address(format!("its first line was {line:?}")));
    };
    let url = url.to_string();
    // Keep reading so that the child never blocks on a full pipe.
    let output = Output::default();
    let drained = tokio::spawn(drain(lines, Arc::clone(&output)));
    Ok((child, url, output, drained))
}

/// Lines kept of a child's output.
const KEPT_LINES: usize = 1000;

async fn drain(mut lines: tokio::io::Lines<BufReader<ChildStdout>>, output: Output) {
    while let Ok(Some(line)) = lines.next_line().await {
        let mut kept = output.lock().unwrap_or_else(|p| p.into_inner());
        if kept.len() < KEPT_LINES {
            kept.push(line);
        }
    }
}

/// Sends `signal` to every process of group `group`.
/// Unless `args` choose the web UI's port (or none), a free one: local clusters, and tests that
/// start several, never compete for 8080 and 8081.
fn web_ui_on_any_port(args: &mut Vec<String>) {
    if !args
        .iter()
        .any(|a| a == "--webui-port" || a.starts_with("--webui-port=") || a == "--no-webui")
    {
        args.extend(["--webui-port".to_string(), "0".to_string()]);
    }
}

/// Sends SIGTERM to one child.
fn terminate(child: &Child) {
    if let Some(pid) = child.id() {
        let _ = std::process::Command::new("kill")
            .args(["-TERM", &pid.to_string()])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
    }
}

/// Waits for a child until `deadline`, then kills it.
async fn wait_or_kill(child: &mut Child, deadline: tokio::time::Instant) {
    if tokio::time::timeout_at(deadline, child.wait())
        .await
        .is_err()
    {
        let _ = child.start_kill();
        let _ = child.wait().await;
    }
}

fn kill_group(group: u32, signal: &str) {
    let _ = std::process::Command::new("kill")
        .args([signal, "--", &format!("-{group}")])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
}

/// Whether a process of group `group` still exists.
fn group_alive(group: u32) -> bool {
    std::process::Command::new("kill")
        .args(["-0", "--", &format!("-{group}")])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

impl LocalCluster {
    /// Starts the master, then the workers pointed at it.
    pub async fn start(config: &ClusterConfig) -> Result<LocalCluster, ClusterError> {
        let mut master_args = vec![
            "master".to_string(),
            "--port".into(),
            "0".into(),
            "--exit-with-stdin".into(),
        ];
        master_args.extend(config.master_args.iter().cloned());
        web_ui_on_any_port(&mut master_args);
        let (master, master_url, master_output, master_drain) = start_child(
            "the master",
            &config.program,
            &master_args,
            None,
            config.start_timeout,
        )
        .await?;
        let group = master.id();
        let mut cluster = LocalCluster {
            master: Some(master),
            master_url,
            master_output,
            master_drain: Some(master_drain),
            workers: Vec::new(),
            worker_urls: Vec::new(),
            group,
            own_work_dir: None,
        };
        let work_dir = match &config.work_dir {
            Some(dir) => dir.clone(),
            None => {
                let dir = std::env::temp_dir().join(format!(
                    "sparkwire-local-cluster-{}-{}",
                    std::process::id(),
                    group.unwrap_or(0)
                ));
                cluster.own_work_dir = Some(dir.clone());
                dir
            }
        };
        for i in 0..config.workers {
            let mut args = vec![
                "worker".to_string(),
                cluster.master_url.clone(),
                "--port".into(),
                "0".into(),
                "--cores".into(),
                config.cores.to_string(),
                "--memory".into(),
                config.memory_mb.to_string(),
                "--exit-with-stdin".into(),
                "--allow-exec".into(),
                config.program.to_string_lossy().into_owned(),
                // Executors log as the cluster's processes do.
                "--pass-env".into(),
                "RUST_LOG".into(),
                "--work-dir".into(),
                work_dir
                    .join(format!("worker-{}", i + 1))
                    .to_string_lossy()
                    .into_owned(),
            ];
            args.extend(config.worker_args.iter().cloned());
            web_ui_on_any_port(&mut args);
            let what = format!("worker {}", i + 1);
            // On failure the cluster is dropped, which ends what started.
            let (child, url, _, _) =
                start_child(&what, &config.program, &args, group, config.start_timeout).await?;
            cluster.workers.push(Some(child));
            cluster.worker_urls.push(url);
        }
        Ok(cluster)
    }

    /// The master's URL, as it printed it.
    pub fn master_url(&self) -> &str {
        &self.master_url
    }

    /// The workers' URLs, as they printed them.
    pub fn worker_urls(&self) -> &[String] {
        &self.worker_urls
    }

    /// The process id of worker `i` (from 0), while it runs.
    pub fn worker_pid(&self, i: usize) -> Option<u32> {
        self.workers.get(i)?.as_ref()?.id()
    }

    /// The process group of every child and of the executors they start.
    pub fn process_group(&self) -> Option<u32> {
        self.group
    }

    /// Kills worker `i` with SIGKILL and waits for it to be gone.
    pub async fn kill_worker(&mut self, i: usize) {
        if let Some(mut child) = self.workers.get_mut(i).and_then(Option::take) {
            let _ = child.start_kill();
            let _ = child.wait().await;
        }
    }

    /// Ends the cluster: SIGTERM to every process of the group, then SIGKILL to whatever is left
    /// after `grace`. Returns what the master printed after its address (its strict-mode
    /// verdict, when it was started with `--strict`).
    pub async fn shutdown(mut self, grace: Duration) -> Vec<String> {
        // Workers first (they stop their executors), then the master: no worker sees its
        // master vanish, so an orderly shutdown logs no error.
        let deadline = tokio::time::Instant::now() + grace;
        let mut workers: Vec<Child> = self.workers.drain(..).flatten().collect();
        for child in &workers {
            terminate(child);
        }
        for child in &mut workers {
            wait_or_kill(child, deadline).await;
        }
        if let Some(mut master) = self.master.take() {
            terminate(&master);
            wait_or_kill(&mut master, deadline).await;
        }
        if let Some(group) = self.group.take() {
            // Executors whose worker is gone and that have not noticed yet.
            kill_group(group, "-KILL");
            // Signals are delivered asynchronously: wait (a little) until the group is empty.
            let until = tokio::time::Instant::now() + Duration::from_secs(2);
            while group_alive(group) && tokio::time::Instant::now() < until {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        }
        if let Some(dir) = self.own_work_dir.take() {
            let _ = std::fs::remove_dir_all(dir);
        }
        // The master's last lines: its output ends when it exits.
        if let Some(drain) = self.master_drain.take() {
            let _ = tokio::time::timeout(Duration::from_secs(2), drain).await;
        }
        let lines = self
            .master_output
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        lines
    }
}

impl Drop for LocalCluster {
    fn drop(&mut self) {
        if let Some(group) = self.group.take() {
            kill_group(group, "-KILL");
        }
        if let Some(dir) = self.own_work_dir.take() {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}
