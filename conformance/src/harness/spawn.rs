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
//! A server the suite starts itself, once per case, with settings of the case's choosing
//! (`--spawn-server`, for the cases about limits, the admin secret and TLS: [`SERVER_PLACEHOLDERS`])
//! takes these instead:
//!
//! | placeholder | value |
//! |---|---|
//! | `{port}` | the port on 127.0.0.1 it must listen on (free when the suite picked it) |
//! | `{max_connections}` | connections it may hold at once, handshakes included (handshake.md §5 step 0) |
//! | `{idle_timeout}` | seconds a peer that has not registered, or a `ui` peer between requests, may send nothing (SPEC §8) |
//! | `{frame_read_timeout}` | seconds a frame may take once its first byte arrived (SPEC §8) |
//! | `{max_queued_bytes}` | bytes queued for one peer beyond which it is a slow consumer (SPEC §8) |
//! | `{max_frame_bytes}` | the largest frame it accepts or sends, bytes (SPEC §2's frame limit) |
//! | `{secret_file}` | a file holding the shared secret the suite chose for the case (handshake.md §10) |
//! | `{admin_secret_file}` | a file holding the admin secret the suite chose for the case (SPEC §13) |
//! | `{tls_cert}`, `{tls_key}` | PEM files: a certificate for 127.0.0.1 and its key (handshake.md §11) |
//! | `{work_dir}` | a fresh directory for the endpoint's files |
//!
//! The last four are given only to the cases that want them: a part of a template between `[[`
//! and `]]` is kept (without the brackets) only when every placeholder in it has a value, so that
//! `[[--secret-file {secret_file}]]` starts a server with a secret only for the cases that want one.
//! A case about a setting whose placeholder the template does not use is skipped, saying so.
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

use crate::harness::env::Log;
use crate::harness::verdict::{fail, Failure};

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
    "port",
    "max_connections",
    "idle_timeout",
    "frame_read_timeout",
    "max_queued_bytes",
    "max_frame_bytes",
    "admin_secret_file",
    "tls_cert",
    "tls_key",
];

/// The placeholders of a `--spawn-server` template: those every case gives first (`{port}`
/// must be used), then those given only to the cases that want them (write them inside `[[…]]`).
pub const SERVER_PLACEHOLDERS: (&[&str], &[&str]) = (
    &[
        "port",
        "max_connections",
        "idle_timeout",
        "frame_read_timeout",
        "max_queued_bytes",
        "max_frame_bytes",
        "work_dir",
    ],
    &["secret_file", "admin_secret_file", "tls_cert", "tls_key"],
);

/// Checks a `--spawn-server` template before any case runs: every placeholder is known and is a
/// server's, `{port}` is used, the placeholders given only to some cases are inside `[[…]]`,
/// and the program it starts exists. The reason is the error.
pub fn preflight_server(template: &str) -> Result<(), String> {
    let (always, some) = SERVER_PLACEHOLDERS;
    if !template.contains("{port}") {
        return Err(
            "--spawn-server: the template must use {port}, the port the server listens on".into(),
        );
    }
    let vars: Vec<(&str, String)> = always.iter().map(|n| (*n, String::from("x"))).collect();
    // Every placeholder a server's: those of `some` left without a value must be in a group.
    for name in placeholders_in(template) {
        if PLACEHOLDERS.contains(&name) && !always.contains(&name) && !some.contains(&name) {
            return Err(format!(
                "--spawn-server: placeholder {{{name}}} is not a server's (known: {}, {})",
                always.join(", "),
                some.join(", ")
            ));
        }
    }
    substitute(template, &vars).map_err(|e| {
        format!("--spawn-server: {e} (write the placeholders some cases leave out inside [[…]])")
    })?;
    check_program(template, "--spawn-server")
}

/// The placeholders `{name}` written in `text`.
fn placeholders_in(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(open) = rest.find('{') {
        let after = &rest[open + 1..];
        let Some(close) = after.find('}') else { break };
        let name = &after[..close];
        if !name.is_empty() && name.chars().all(|c| c.is_ascii_lowercase() || c == '_') {
            out.push(name);
        }
        rest = &after[close + 1..];
    }
    out
}

/// The placeholders each target's template is given (besides `{secret_file}`, given with
/// `--secret-file`): what [`preflight`] accepts before any case runs.
pub fn given(target: crate::harness::verdict::Target) -> &'static [&'static str] {
    use crate::harness::verdict::Target;
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
    target: crate::harness::verdict::Target,
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
    check_program(template, "--spawn")
}

/// Checks that the program `template` starts exists (on PATH, or at the path given) and may be
/// run; `option` names the template in the error.
fn check_program(template: &str, option: &str) -> Result<(), String> {
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
        .map_err(|e| format!("{option}: cannot run sh to look for {program}: {e}"))?;
    if !found.success() {
        return Err(format!(
            "{option}: the program {program} {}",
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
/// A part between `[[` and `]]` is kept, without the brackets, only when every placeholder in it
/// has a value, and dropped otherwise.
pub fn substitute(template: &str, vars: &[(&str, String)]) -> Result<String, String> {
    let mut out = String::new();
    let mut rest = template;
    while let Some(open) = rest.find("[[") {
        out.push_str(&substitute_plain(&rest[..open], vars)?);
        let after = &rest[open + 2..];
        let Some(close) = after.find("]]") else {
            return Err("a [[ without its ]]".into());
        };
        let group = &after[..close];
        let complete = placeholders_in(group)
            .iter()
            .all(|n| vars.iter().any(|(v, _)| v == n));
        if complete {
            out.push_str(&substitute_plain(group, vars)?);
        } else {
            // Still refuse an unknown placeholder, given or not.
            if let Some(unknown) = placeholders_in(group)
                .into_iter()
                .find(|n| !PLACEHOLDERS.contains(n))
            {
                return Err(format!(
                    "unknown placeholder {{{unknown}}} (known: {})",
                    PLACEHOLDERS.join(", ")
                ));
            }
        }
        rest = &after[close + 2..];
    }
    out.push_str(&substitute_plain(rest, vars)?);
    Ok(out)
}

/// [`substitute`] of a text without groups.
fn substitute_plain(template: &str, vars: &[(&str, String)]) -> Result<String, String> {
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
    use crate::harness::verdict::Target;

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
    fn a_group_is_kept_only_when_every_placeholder_in_it_has_a_value() {
        let t = "m --port {port}[[ --secret-file {secret_file}]][[ --tls-cert {tls_cert} --tls-key {tls_key}]]";
        let port = ("port", "7".to_string());
        assert_eq!(
            substitute(t, std::slice::from_ref(&port)).as_deref(),
            Ok("m --port 7")
        );
        let secret = ("secret_file", "/s".to_string());
        assert_eq!(
            substitute(t, &[port.clone(), secret]).as_deref(),
            Ok("m --port 7 --secret-file /s")
        );
        // Half a group's values: the group is dropped.
        let cert = ("tls_cert", "/c".to_string());
        assert_eq!(
            substitute(t, &[port.clone(), cert]).as_deref(),
            Ok("m --port 7")
        );
        assert!(substitute("m [[{nope}]]", &[])
            .unwrap_err()
            .contains("unknown placeholder {nope}"));
        assert!(substitute("m [[{port}", &[])
            .unwrap_err()
            .contains("without its ]]"));
    }

    #[test]
    fn preflight_server_wants_the_port_and_groups_for_what_some_cases_leave_out() {
        let e = preflight_server("sh {max_connections}").unwrap_err();
        assert!(e.contains("must use {port}"), "{e}");
        let e = preflight_server("sh {port} {secret_file}").unwrap_err();
        assert!(e.contains("inside [["), "{e}");
        let e = preflight_server("sh {port} {master_url}").unwrap_err();
        assert!(e.contains("{master_url} is not a server's"), "{e}");
        assert_eq!(
            preflight_server("sh -c true {port} {idle_timeout} [[--secret-file {secret_file}]]"),
            Ok(())
        );
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
