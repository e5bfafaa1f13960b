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

/// The placeholders each target's template is given (besides `{secret_file}`, given with
/// `--secret-file`): what [`preflight`] accepts before any case runs.
pub fn given(target: crate::case::Target) -> &'static [&'static str] {
    use crate::case::Target;
    match target {
        Target::Master => &[],
        Target::Worker => &[
            "master_url",
            "master_host",
            "master_port",
            "cores",
            "memory",
            "worker_timeout",
            "work_dir",
            "allowed_exec",
        ],
        Target::Driver => &[
            "master_url",
            "master_host",
            "master_port",
            "work_dir",
            "job",
            "partitions",
            "param",
            "max_message_size",
            "cores",
        ],
        Target::Executor => &[
            "driver_url",
            "worker_url",
            "executor_id",
            "app_id",
            "cores",
            "work_dir",
        ],
    }
}

/// Checks a `--spawn` template before any case runs: every placeholder is known and has a value
/// for `target` (`{secret_file}` only with `--secret-file`), and the program it starts exists
/// (on PATH, or at the path given) and may be run. The reason is the error.
pub fn preflight(
    template: &str,
    target: crate::case::Target,
    secret_file: bool,
) -> Result<(), String> {
    let mut vars: Vec<(&str, String)> = given(target)
        .iter()
        .map(|n| (*n, String::from("x")))
        .collect();
    if secret_file {
        vars.push(("secret_file", "x".into()));
    }
    substitute(template, &vars).map_err(|e| format!("--spawn: {e}"))?;
    let Some(program) = program_of(template) else {
        return Ok(());
    };
    // As the suite runs it: `sh -c 'exec …'` finds the program as `command -v` does.
    let found = std::process::Command::new("sh")
        .arg("-c")
        .arg("command -v -- \"$1\" >/dev/null 2>&1 && { case \"$1\" in */*) [ -f \"$1\" ] && [ -x \"$1\" ];; esac; }")
        .arg("sh")
        .arg(&program)
        .stdin(Stdio::null())
        .status()
        .map_err(|e| format!("--spawn: cannot run sh to look for {program}: {e}"))?;
    if !found.success() {
        return Err(format!(
            "--spawn: the program {program} {}",
            if program.contains('/') {
                "does not exist or is not executable"
            } else {
                "is not on PATH"
            }
        ));
    }
    Ok(())
}

/// The program a template starts: its first word after any `NAME=value` assignments, unquoted;
/// `None` when it is written with shell syntax the suite does not read (a placeholder, an
/// expansion, a subshell).
fn program_of(template: &str) -> Option<String> {
    let word = template.split_whitespace().find(|w| !is_assignment(w))?;
    let word = match word.as_bytes().first() {
        Some(b'\'') | Some(b'"') => {
            let q = &word[..1];
            word.strip_prefix(q)?.strip_suffix(q)?
        }
        _ => word,
    };
    if word.is_empty() || word.contains(['{', '$', '`', '(', ')', ';', '&', '|', '<', '>']) {
        return None;
    }
    Some(word.to_string())
}

/// Whether a word is a shell variable assignment (`NAME=value`).
fn is_assignment(word: &str) -> bool {
    match word.split_once('=') {
        Some((name, _)) => {
            !name.is_empty()
                && !name.starts_with(|c: char| c.is_ascii_digit())
                && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        }
        None => false,
    }
}

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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::case::Target;

    #[test]
    fn the_program_is_the_first_word_after_assignments_unquoted() {
        assert_eq!(
            program_of("sparkwire worker {master_url}").as_deref(),
            Some("sparkwire")
        );
        assert_eq!(
            program_of("RUST_LOG=debug /usr/bin/env x").as_deref(),
            Some("/usr/bin/env")
        );
        assert_eq!(program_of("'/opt/my prog' --x").as_deref(), None);
        assert_eq!(program_of("'/opt/prog' --x").as_deref(), Some("/opt/prog"));
        assert_eq!(program_of("$HOME/bin/w {master_url}"), None);
        assert_eq!(program_of("{allowed_exec} 1"), None);
    }

    #[test]
    fn preflight_names_an_unknown_placeholder_one_without_a_value_and_a_missing_program() {
        let e = preflight("sh -c true {master}", Target::Worker, false).unwrap_err();
        assert!(e.contains("unknown placeholder {master}"), "{e}");
        let e = preflight("sh {driver_url}", Target::Worker, false).unwrap_err();
        assert!(
            e.contains("{driver_url} has no value for this target"),
            "{e}"
        );
        let e = preflight("sh {secret_file}", Target::Worker, false).unwrap_err();
        assert!(e.contains("give --secret-file"), "{e}");
        assert_eq!(preflight("sh {secret_file}", Target::Worker, true), Ok(()));
        let e = preflight("/no/such/program {master_url}", Target::Worker, false).unwrap_err();
        assert!(
            e.contains("/no/such/program does not exist or is not executable"),
            "{e}"
        );
        let e = preflight("no-such-program-here {master_url}", Target::Worker, false).unwrap_err();
        assert!(e.contains("no-such-program-here is not on PATH"), "{e}");
        assert_eq!(
            preflight("sh -c 'exit 0' {master_url}", Target::Worker, false),
            Ok(())
        );
    }
}
