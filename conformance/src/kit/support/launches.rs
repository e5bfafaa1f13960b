//! What a worker launches and whom it obeys, and whom a driver takes an executor's word from:
//! SPEC §14.5 (launches), §13 (a worker hands the secret to what it launches), §14.2 Z5 (a
//! worker takes its master's commands only over its master's connection) and Z6 (an executor is
//! bound to its connection), §7.1 (a worker answers DecommissionWorker with nothing). One
//! function per case; each cites the sentence it checks.
//!
//! What a worker starts is seen where the suite can see it: the reports the worker sends, its
//! state as a UI reads it, and, for the command line and environment of the process itself, this
//! host's `/proc` (the suite finds the process by a token in its arguments: the `{allowed_exec}`
//! program, `sleep`, told to sleep a number of seconds no other process is told). A worker
//! started by hand elsewhere, or one that runs its processes where this host's `/proc` does not
//! show them, skips the cases that need the process.

use crate::harness::env::Ctx;
use crate::harness::env::Wire;
use crate::harness::peer::not_on_spark_wire;
use crate::harness::verdict::check;
use crate::harness::verdict::fail;
use crate::harness::verdict::Failure;
use crate::harness::verdict::Outcome;
use crate::kit::common::unique;
use crate::kit::common::wait;
use crate::kit::worker::allowed_exec;
use crate::kit::worker::command;
use crate::kit::worker::launch_msg;
use crate::kit::worker::state_change;
use crate::kit::worker::Registered;
use sparkwire::messages::deploy::*;
use sparkwire::messages::DeployMessage;
use sparkwire::messages::DriverDescription;
use sparkwire::messages::ExecutorState;
use sparkwire::wire::Envelope;
use std::collections::BTreeMap;
use std::time::Duration;

pub(crate) type D = DeployMessage;

/// The worker cases here check sparkwire's launch policy, which Spark's worker does not have:
/// it runs a command's mainClass as a JVM class (SPEC §15.4 S4).
pub(crate) fn sparkwire_launch(ctx: &Ctx) -> Outcome {
    match ctx.log.wire() {
        Wire::Sparkwire => Ok(()),
        Wire::Spark(_) => Err(not_on_spark_wire(
            "Spark's worker runs a command's mainClass as a JVM class and has no allow-list (SPEC §15.4 S4)",
        )),
    }
}

/// An application id of Spark's form, unique to the case.
pub(crate) fn app_id() -> String {
    format!("app-20250101120000-{:04}", unique() % 10_000)
}

/// The LaunchExecutor `launch_msg` makes, its command changed by `edit`.
pub(crate) fn launch_with(
    w: &Registered,
    app: &str,
    exec_id: i32,
    args: &[&str],
    edit: impl FnOnce(&mut sparkwire::messages::Command),
) -> D {
    let mut m = launch_msg(w, app, exec_id, &allowed_exec(), args);
    if let D::LaunchExecutor(l) = &mut m {
        edit(&mut l.app_desc.command);
    }
    m
}

/// The next DriverStateChanged for `id` on the worker's master connection.
pub(crate) async fn driver_state(
    ctx: &Ctx,
    w: &mut Registered,
    id: &str,
) -> Result<DriverStateChanged, Failure> {
    w.conn
        .expect::<D, DriverStateChanged>(wait(ctx), &format!("DriverStateChanged for {id}"), |e| {
            match e {
                Envelope::Send(D::DriverStateChanged(s)) if s.driver_id == id => Some(s.clone()),
                _ => None,
            }
        })
        .await
}

/// A LaunchDriver of `program args`.
pub(crate) fn launch_driver(id: &str, program: &str, args: &[&str]) -> D {
    let desc = DriverDescription::new(
        format!("file:{program}"),
        64,
        1,
        false,
        command(program, args),
        vec![],
    );
    D::LaunchDriver(LaunchDriver::new(id.into(), desc, BTreeMap::new()))
}

/// sparkwire's executor arguments (SPEC §14.5), the four required flags and the placeholders
/// exactly as written.
pub(crate) const EXECUTOR_ARGS: &[&str] = &[
    "executor",
    "--driver-url",
    "spark://CoarseGrainedScheduler@127.0.0.1:9",
    "--executor-id",
    "{{EXECUTOR_ID}}",
    "--hostname",
    "{{HOSTNAME}}",
    "--cores",
    "{{CORES}}",
    "--app-id",
    "{{APP_ID}}",
];

/// A process as this host's `/proc` shows it.
pub(crate) struct Process {
    pub(crate) pid: u32,
    pub(crate) args: Vec<String>,
    pub(crate) env: Vec<(String, String)>,
}

impl Process {
    pub(crate) fn var(&self, name: &str) -> Option<&str> {
        self.env
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// A number of seconds for `sleep` that no other process is told: the token the suite finds
/// the process by.
pub(crate) fn sleep_token() -> String {
    format!("30.{:09}", unique() % 1_000_000_000)
}

/// The process whose arguments hold `token`, once it shows in `/proc`; skipped when `/proc`
/// does not show one within the patience.
/// The process of executor `exec_id`, found by `token`, once the worker `w` reported it RUNNING.
pub(crate) async fn running_process(
    ctx: &Ctx,
    w: &mut Registered,
    exec_id: i32,
    token: &str,
) -> Result<Process, Failure> {
    let s = state_change(ctx, w, exec_id).await?;
    check(
        s.state == ExecutorState::Running,
        "RUNNING",
        s.state.to_string(),
    )?;
    launched_process(ctx, token).await
}

pub(crate) async fn launched_process(ctx: &Ctx, token: &str) -> Result<Process, Failure> {
    let proc_dir = std::path::Path::new("/proc");
    if !proc_dir.join("self").join("cmdline").exists() {
        return Err(Failure::Skipped(
            "this host has no /proc: the launched process cannot be seen".into(),
        ));
    }
    let deadline = tokio::time::Instant::now() + wait(ctx);
    loop {
        if let Some(p) = find_process(proc_dir, token) {
            return Ok(p);
        }
        if tokio::time::Instant::now() >= deadline {
            return Err(Failure::Skipped(format!(
                "no process with {token} in its arguments on this host's /proc: the worker runs its executors where \
                    the suite cannot see them"
            )));
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

pub(crate) fn find_process(proc_dir: &std::path::Path, token: &str) -> Option<Process> {
    let split = |bytes: Vec<u8>| -> Vec<String> {
        bytes
            .split(|b| *b == 0)
            .filter(|s| !s.is_empty())
            .map(|s| String::from_utf8_lossy(s).into_owned())
            .collect()
    };
    for entry in std::fs::read_dir(proc_dir).ok()?.flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else {
            continue;
        };
        let args = split(cmdline);
        if !args.iter().any(|a| a.contains(token)) {
            continue;
        }
        let Ok(environ) = std::fs::read(entry.path().join("environ")) else {
            continue;
        };
        let env = split(environ)
            .into_iter()
            .map(|kv| match kv.split_once('=') {
                Some((k, v)) => (k.to_string(), v.to_string()),
                None => (kv, String::new()),
            })
            .collect();
        return Some(Process { pid, args, env });
    }
    None
}

/// The secret as a file holding it reads: one trailing line end dropped (SPEC §13's file, as
/// `--secret-file` reads its own).
pub(crate) fn secret_text(bytes: &[u8]) -> &[u8] {
    let b = bytes.strip_suffix(b"\n").unwrap_or(bytes);
    b.strip_suffix(b"\r").unwrap_or(b)
}

pub(crate) fn holds(haystack: &[u8], needle: &[u8]) -> bool {
    !needle.is_empty() && haystack.windows(needle.len()).any(|w| w == needle)
}

/// The process `p` got the secret as SPEC §13 says: no argument or variable holding it, and
/// SPARKWIRE_SECRET_FILE naming a file of mode 0600 that holds it.
pub(crate) fn handed_secret(p: &Process, secret: &[u8]) -> Outcome {
    check(
        !p.args.iter().any(|a| holds(a.as_bytes(), secret)),
        "no argument holding the secret",
        format!("process {}: an argument holds it", p.pid),
    )?;
    let leaked: Vec<&str> = p
        .env
        .iter()
        .filter(|(_, v)| holds(v.as_bytes(), secret))
        .map(|(n, _)| n.as_str())
        .collect();
    check(
        leaked.is_empty(),
        "no environment variable holding the secret itself",
        format!("process {}: {leaked:?} hold it", p.pid),
    )?;
    let path = p
        .var(crate::harness::spawn::SECRET_FILE_ENV)
        .ok_or_else(|| {
            fail(
                "SPARKWIRE_SECRET_FILE in the process's environment",
                format!("process {}: not set", p.pid),
            )
        })?
        .to_string();
    use std::os::unix::fs::PermissionsExt;
    let meta = std::fs::metadata(&path).map_err(|e| {
        fail(
            format!("a file at SPARKWIRE_SECRET_FILE={path}"),
            e.to_string(),
        )
    })?;
    let mode = meta.permissions().mode() & 0o777;
    check(
        mode == 0o600,
        format!("{path} of mode 0600"),
        format!("mode {mode:o}"),
    )?;
    let held = std::fs::read(&path)
        .map_err(|e| fail(format!("{path} readable by its owner"), e.to_string()))?;
    check(
        secret_text(&held) == secret,
        format!("{path} holding the secret"),
        format!("{} bytes that are not it", held.len()),
    )?;
    Ok(())
}
