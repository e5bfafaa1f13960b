//! Starting the endpoint under test from a command template, h2specd-style.
//!
//! The template is run by `sh -c 'exec TEMPLATE'` after its placeholders are replaced:
//!
//! | placeholder | value |
//! |---|---|
//! | `{master_url}` | the master the suite plays, `sparkwire://127.0.0.1:PORT` |
//! | `{master_host}`, `{master_port}` | the same, apart |
//! | `{driver_url}` | the driver the suite plays, `spark://CoarseGrainedScheduler@127.0.0.1:PORT` |
//! | `{worker_url}` | the worker the suite plays, `spark://Worker@127.0.0.1:PORT` |
//! | `{executor_id}` | the executor id the suite expects (`1`, …) |
//! | `{app_id}` | the application id, `app-YYYYMMDDHHMMSS-NNNN` |
//! | `{cores}`, `{memory}` | the cores and MiB the endpoint should offer (a worker) or use |
//! | `{worker_timeout}` | seconds: the worker heartbeats every quarter of it |
//! | `{work_dir}` | a fresh directory for the endpoint's files |
//! | `{allowed_exec}` | a program the suite may ask a worker to run (`sleep`'s path) |
//! | `{job}`, `{partitions}`, `{param}`, `{max_message_size}` | what a driver runs: its job, partitions, parameter, and `spark.rpc.message.maxSize` in MiB |
//! | `{secret_file}` | the suite's `--secret-file` (only when it is given): the endpoint's shared secret |
//!
//! With `--secret-file`, the endpoint also finds that path in its environment as
//! `SPARKWIRE_SECRET_FILE`, the way a worker hands the secret to the executors and drivers it
//! launches (protocol/SPEC.md §13).
//!
//! The endpoint's standard input is a pipe the suite closes when the case ends (an endpoint may
//! stop on that, as `sparkwire master|worker --exit-with-stdin` do); it is killed soon after.

use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, ChildStdin, Command};

use crate::case::{fail, Failure};
use crate::env::Log;

/// Every placeholder a template may use.
pub const PLACEHOLDERS: &[&str] = &[
    "master_url",
    "master_host",
    "master_port",
    "driver_url",
    "worker_url",
    "executor_id",
    "app_id",
    "cores",
    "memory",
    "worker_timeout",
    "work_dir",
    "allowed_exec",
    "job",
    "partitions",
    "param",
    "max_message_size",
    "secret_file",
];

/// The variable naming the secret file of a process a worker launches (protocol/SPEC.md §13).
pub const SECRET_FILE_ENV: &str = "SPARKWIRE_SECRET_FILE";

/// Replaces `{name}` for each of `vars`; fails on a placeholder that is unknown or has no value.
pub fn substitute(template: &str, vars: &[(&str, String)]) -> Result<String, String> {
    let mut out = String::new();
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        out.push_str(&rest[..open]);
        let after = &rest[open + 1..];
        let Some(close) = after.find('}') else {
            out.push_str(&rest[open..]);
            rest = "";
            break;
        };
        let name = &after[..close];
        if name.chars().all(|c| c.is_ascii_lowercase() || c == '_') && !name.is_empty() {
            if !PLACEHOLDERS.contains(&name) {
                return Err(format!(
                    "unknown placeholder {{{name}}} (known: {})",
                    PLACEHOLDERS.join(", ")
                ));
            }
            match vars.iter().find(|(n, _)| *n == name) {
                Some((_, v)) => out.push_str(v),
                None if name == "secret_file" => {
                    return Err("placeholder {secret_file} has no value: give --secret-file".into())
                }
                None => {
                    return Err(format!(
                        "placeholder {{{name}}} has no value for this target"
                    ))
                }
            }
        } else {
            out.push('{');
            out.push_str(name);
            out.push('}');
        }
        rest = &after[close + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

/// A started endpoint. Dropping it kills the process.
#[derive(Debug)]
pub struct Spawned {
    child: Child,
    stdin: Option<ChildStdin>,
    output: Arc<Mutex<String>>,
    /// The command line run.
    pub command: String,
}

/// Starts `template` with `vars`, and `env` added to its environment, logging its output into
/// `log`.
pub fn spawn(
    template: &str,
    vars: &[(&str, String)],
    env: &[(&str, String)],
    log: &Log,
) -> Result<Spawned, Failure> {
    let command =
        substitute(template, vars).map_err(|e| fail("a command template the suite can fill", e))?;
    log.push(format!("[spawn] {command}"));
    let mut child = Command::new("sh")
        .arg("-c")
        .arg(format!("exec {command}"))
        .envs(env.iter().map(|(k, v)| (*k, v.as_str())))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| fail(format!("the endpoint started ({command})"), e.to_string()))?;
    let output = Arc::new(Mutex::new(String::new()));
    let stdout = child.stdout.take();
    let stderr = child.stderr.take();
    for (name, stream) in [
        (
            "stdout",
            stdout.map(|s| Box::new(s) as Box<dyn tokio::io::AsyncRead + Send + Unpin>),
        ),
        (
            "stderr",
            stderr.map(|s| Box::new(s) as Box<dyn tokio::io::AsyncRead + Send + Unpin>),
        ),
    ] {
        let Some(stream) = stream else { continue };
        let output = Arc::clone(&output);
        let log = log.clone();
        tokio::spawn(async move {
            let mut lines = BufReader::new(stream).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                log.push(format!("[endpoint {name}] {line}"));
                if let Ok(mut o) = output.lock() {
                    if o.len() < 1 << 20 {
                        o.push_str(&line);
                        o.push('\n');
                    }
                }
            }
        });
    }
    let stdin = child.stdin.take();
    Ok(Spawned {
        child,
        stdin,
        output,
        command,
    })
}

impl Spawned {
    /// What the endpoint wrote so far, standard output and error together.
    pub fn output(&self) -> String {
        self.output.lock().map(|o| o.clone()).unwrap_or_default()
    }

    /// The exit code, if the process ends within `wait` (`-1` for a signal).
    pub async fn exit_within(&mut self, wait: Duration) -> Option<i32> {
        match tokio::time::timeout(wait, self.child.wait()).await {
            Ok(Ok(status)) => Some(status.code().unwrap_or(-1)),
            _ => None,
        }
    }

    /// Closes the endpoint's standard input, gives it `grace` to stop, then kills it.
    pub async fn stop(&mut self, grace: Duration) {
        self.stdin = None;
        if self.exit_within(grace).await.is_none() {
            let _ = self.child.start_kill();
            let _ = self.child.wait().await;
        }
    }
}
