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

use std::collections::BTreeMap;
use std::time::Duration;

use sparkwire::messages::coarse::{ExecutorDecommissioning, LaunchedExecutor, StatusUpdate};
use sparkwire::messages::deploy::*;
use sparkwire::messages::{
    Addr, CoarseMessage, DeployMessage, DriverDescription, DriverState, EndpointRef, ExecutorState,
    TaskState, Version,
};
use sparkwire::wire::handshake::Role;
use sparkwire::wire::{encode_envelope, Envelope, Reply};

use crate::case::{run, Case, Target};
use crate::env::{Ctx, Wire};
use crate::kit::common::{expect_refused, unique, wait};
use crate::kit::worker::{
    allowed_exec, command, launch_executor, launch_msg, listening_addr, registered, state_change,
    ui_conn, worker_state, Registered,
};
use crate::peer::{not_on_spark_wire, Conn};
use crate::verdict::{check, fail, Failure, Level, Outcome};

type D = DeployMessage;
type C = CoarseMessage;

/// The worker's cases of this file, added to `cs`.
pub fn add_worker(cs: &mut Vec<Case>) {
    cs.push(Case {
        id: "spec/14.5/forbidden-env-refused".into(),
        level: Level::Must,
        targets: vec![Target::Worker],
        requirement: "SPEC §14.5, \"Variables that choose what runs or load code — the prefixes `LD_`, … — are never passed, \
            whatever the operator allows: a command naming one is refused\", and \"A refused executor launch is \
                reported as `ExecutorStateChanged` `FAILED` with no exit status and a `message` saying why\": a \
                    LaunchExecutor of the allowed program whose command sets LD_PRELOAD is reported FAILED, with a \
                        message and no exit status, and a LaunchDriver of it setting LD_PRELOAD is reported ERROR".into(),
        body: run(forbidden_env_refused),
        ..Case::default()
    });
    cs.push(Case {
        id: "spec/14.5/driver-refused".into(),
        level: Level::Must,
        targets: vec![Target::Worker],
        requirement: "SPEC §14.5, \"A worker runs only what its operator allowed\" and \"A refused driver launch is reported as \
            `DriverStateChanged` `ERROR` with the reason in its exception\": a LaunchDriver of a program not on the \
                worker's allow-list (/bin/sh) is reported ERROR with an exception that has a message, and the program \
                    does not run".into(),
        body: run(driver_refused),
        ..Case::default()
    });
    cs.push(Case {
        id: "spec/14.5/executor-program-not-a-driver".into(),
        level: Level::Must,
        targets: vec![Target::Worker],
        requirement: "SPEC §14.5, \"A program allowed with `--allow-exec PATH` runs only as sparkwire's executor … Such a program \
            is never run as a driver\": when the worker runs the `{allowed_exec}` program as an executor with \
                sparkwire's executor arguments but refuses it with others (it is allowed as an executor only), a \
                    LaunchDriver of that program with those same arguments is reported ERROR (skipped when the worker \
                        runs the program with any arguments, or not at all)".into(),
        body: run(executor_program_not_a_driver),
        ..Case::default()
    });
    cs.push(Case {
        id: "spec/14.5/no-library-path".into(),
        level: Level::Must,
        targets: vec![Target::Worker],
        requirement: "SPEC §14.5, \"`classPathEntries`, `libraryPathEntries` and `javaOpts` are not used to start the process \
            (Spark turns library paths into `LD_LIBRARY_PATH`; sparkwire never does)\": the process a LaunchExecutor \
                with all three starts has no LD_LIBRARY_PATH holding the library path entry, and none of the three in \
                    its arguments (the process as this host's /proc shows it; skipped when /proc does not show it)".into(),
        body: run(no_library_path),
        ..Case::default()
    });
    cs.push(Case {
        id: "flow/worker/secret-handoff".into(),
        level: Level::Must,
        targets: vec![Target::Worker],
        requirement: "SPEC §13, \"A worker hands the secret to the executors and drivers it launches without exposing it: … adds \
            `SPARKWIRE_SECRET_FILE=<that path>` to the environment it starts the process with …; never on a command \
                line, never in the application's description\": a worker holding the secret starts an executor and a \
                    driver whose SPARKWIRE_SECRET_FILE names a file of mode 0600 holding the secret, with no argument \
                        and no other variable holding it, and the worker's state (RequestWorkerState) does not carry \
                            it (the process as this host's /proc shows it; skipped without --secret-file, or when \
                                /proc does not show it)".into(),
        body: run(secret_handoff),
        ..Case::default()
    });
    cs.push(Case {
        id: "spec/14.2/Z5/foreign-master".into(),
        level: Level::Must,
        targets: vec![Target::Worker],
        requirement: "SPEC §14.2 Z5, \"A worker takes the answers to a registration (`RegisteredWorker`, …) only over a connection \
            it opened to register, … and the master's commands (`LaunchExecutor`, `KillExecutor`, …) only over the \
                connection of the master it is registered with\": a peer that dials the worker's own port as a master \
                    and sends RegisteredWorker naming another master, LaunchExecutor and KillExecutor (each naming \
                        the worker's own master URL) and LaunchDriver is ignored or refused: nothing is launched or \
                            killed, no ExecutorStateChanged or DriverStateChanged follows, and the worker's state \
                                still names its master, runs the executor its master launched and not the other, and \
                                    no driver".into(),
        body: run(foreign_master),
        ..Case::default()
    });
    cs.push(Case {
        id: "spec/7.1/decommission-silent".into(),
        level: Level::Must,
        targets: vec![Target::Worker],
        requirement: "SPEC §7.1, `DecommissionWorker` (master → worker): \"the worker marks itself decommissioned and sends \
            nothing back … `WorkerDecommissioning` goes to the master only when a decommission starts on the worker's \
                own side\": a worker told DecommissionWorker (version 2) sends no WorkerDecommissioning within the \
                    quiet time".into(),
        body: run(decommission_silent),
        ..Case::default()
    });
}

/// The driver's cases of this file, added to `cs`.
pub fn add_driver(cs: &mut Vec<Case>) {
    cs.push(Case {
        id: "spec/14.2/Z6/foreign-executor".into(),
        level: Level::Must,
        targets: vec![Target::Driver],
        requirement: "SPEC §14.2 Z6, \"An executor is bound to the connection whose `RegisterExecutor` the driver accepted: \
            `StatusUpdate`, `LaunchedExecutor` and `ExecutorDecommissioning` are taken only when they name that \
                executor, over that connection\", and §14.3, \"A refused send closes its connection\": with two \
                    executors registered, a StatusUpdate for a task of the first sent over the second's connection \
                        naming the first, and a LaunchedExecutor naming the first sent over a third executor's \
                            connection, each close the connection they came on, an ExecutorDecommissioning ask naming \
                                the first over a fourth's is answered with a failure (or a close), and the first \
                                    executor still gets its tasks".into(),
        body: run(foreign_executor),
        ..Case::default()
    });
}

/// The worker cases here check sparkwire's launch policy, which Spark's worker does not have:
/// it runs a command's mainClass as a JVM class (SPEC §15.4 S4).
fn sparkwire_launch(ctx: &Ctx) -> Outcome {
    match ctx.log.wire() {
        Wire::Sparkwire => Ok(()),
        Wire::Spark(_) => Err(not_on_spark_wire(
            "Spark's worker runs a command's mainClass as a JVM class and has no allow-list (SPEC §15.4 S4)",
        )),
    }
}

/// An application id of Spark's form, unique to the case.
fn app_id() -> String {
    format!("app-20250101120000-{:04}", unique() % 10_000)
}

/// The LaunchExecutor `launch_msg` makes, its command changed by `edit`.
fn launch_with(
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
async fn driver_state(
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
fn launch_driver(id: &str, program: &str, args: &[&str]) -> D {
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

async fn forbidden_env_refused(ctx: Ctx) -> Outcome {
    sparkwire_launch(&ctx)?;
    let mut w = registered(&ctx, &[Version::V1, Version::V2]).await?;
    let preload = w.run.work_dir.join("conformance-preload.so");
    let m = launch_with(&w, &app_id(), 21, &["20"], |c| {
        c.environment
            .insert("LD_PRELOAD".into(), preload.display().to_string());
    });
    w.conn.send(&Envelope::Send(m)).await?;
    let s = state_change(&ctx, &mut w, 21).await?;
    check(
        s.state == ExecutorState::Failed
            && s.exit_status.is_none()
            && s.message.as_deref().is_some_and(|m| !m.trim().is_empty()),
        "FAILED with a message saying why and no exit status",
        format!(
            "{} (message {:?}, exit status {:?})",
            s.state, s.message, s.exit_status
        ),
    )?;
    // A driver likewise.
    let id = format!("driver-20250101120000-{:04}", unique() % 10_000);
    let mut m = launch_driver(&id, &allowed_exec(), &["20"]);
    if let D::LaunchDriver(l) = &mut m {
        l.driver_desc
            .command
            .environment
            .insert("LD_PRELOAD".into(), preload.display().to_string());
    }
    w.conn.send(&Envelope::Send(m)).await?;
    let d = driver_state(&ctx, &mut w, &id).await?;
    check(
        d.state == DriverState::Error,
        "the driver ERROR",
        format!("{} (exception {:?})", d.state, d.exception),
    )
}

async fn driver_refused(ctx: Ctx) -> Outcome {
    sparkwire_launch(&ctx)?;
    let mut w = registered(&ctx, &[Version::V1, Version::V2]).await?;
    let marker = w.run.work_dir.join("driver-ran");
    let script = format!("touch {}", marker.display());
    let id = format!("driver-20250101120000-{:04}", unique() % 10_000);
    w.conn
        .send(&Envelope::Send(launch_driver(
            &id,
            "/bin/sh",
            &["-c", &script],
        )))
        .await?;
    let s = driver_state(&ctx, &mut w, &id).await?;
    let reason = s.exception.as_ref().map(|e| e.message.clone());
    check(
        s.state == DriverState::Error && reason.as_deref().is_some_and(|m| !m.trim().is_empty()),
        "ERROR with an exception giving the reason",
        format!("{} (exception {:?})", s.state, s.exception),
    )?;
    tokio::time::sleep(Duration::from_millis(100)).await;
    check(!marker.exists(), "the program not run", "it ran")
}

/// sparkwire's executor arguments (SPEC §14.5), the four required flags and the placeholders
/// exactly as written.
const EXECUTOR_ARGS: &[&str] = &[
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

async fn executor_program_not_a_driver(ctx: Ctx) -> Outcome {
    sparkwire_launch(&ctx)?;
    let mut w = registered(&ctx, &[Version::V1, Version::V2]).await?;
    let program = allowed_exec();
    let app = app_id();
    // Is the program allowed with any arguments? Then it may run as a driver too.
    w.conn
        .send(&Envelope::Send(launch_msg(&w, &app, 31, &program, &["20"])))
        .await?;
    let any = state_change(&ctx, &mut w, 31).await?;
    if any.state != ExecutorState::Failed {
        return Err(Failure::Skipped(format!(
            "the worker runs {program} with any arguments (reported {}): an operator allowed it with \
                --allow-exec-any, so it may run as a driver; give the worker --allow-exec {{allowed_exec}} instead",
            any.state
        )));
    }
    // Is it allowed as sparkwire's executor?
    w.conn
        .send(&Envelope::Send(launch_msg(
            &w,
            &app,
            32,
            &program,
            EXECUTOR_ARGS,
        )))
        .await?;
    let as_executor = state_change(&ctx, &mut w, 32).await?;
    if as_executor.state == ExecutorState::Failed {
        return Err(Failure::Skipped(format!(
            "the worker does not run {program} even with sparkwire's executor arguments: it is not allowed as an \
                executor"
        )));
    }
    let id = format!("driver-20250101120000-{:04}", unique() % 10_000);
    w.conn
        .send(&Envelope::Send(launch_driver(&id, &program, EXECUTOR_ARGS)))
        .await?;
    let s = driver_state(&ctx, &mut w, &id).await?;
    check(
        s.state == DriverState::Error,
        format!("ERROR: {program} is allowed only as an executor"),
        format!("{} (exception {:?})", s.state, s.exception),
    )
}

/// A process as this host's `/proc` shows it.
struct Process {
    pid: u32,
    args: Vec<String>,
    env: Vec<(String, String)>,
}

impl Process {
    fn var(&self, name: &str) -> Option<&str> {
        self.env
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// A number of seconds for `sleep` that no other process is told: the token the suite finds
/// the process by.
fn sleep_token() -> String {
    format!("30.{:09}", unique() % 1_000_000_000)
}

/// The process whose arguments hold `token`, once it shows in `/proc`; skipped when `/proc`
/// does not show one within the patience.
/// The process of executor `exec_id`, found by `token`, once the worker `w` reported it RUNNING.
async fn running_process(
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

async fn launched_process(ctx: &Ctx, token: &str) -> Result<Process, Failure> {
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

fn find_process(proc_dir: &std::path::Path, token: &str) -> Option<Process> {
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

async fn no_library_path(ctx: Ctx) -> Outcome {
    sparkwire_launch(&ctx)?;
    let mut w = registered(&ctx, &[Version::V1, Version::V2]).await?;
    let token = sleep_token();
    let lib = w.run.work_dir.join("conformance-lib");
    let jar = w.run.work_dir.join("conformance.jar");
    let opt = "-Dconformance.library.path.check=1".to_string();
    let (lib_s, jar_s) = (lib.display().to_string(), jar.display().to_string());
    let m = launch_with(&w, &app_id(), 41, &[&token], |c| {
        c.library_path_entries = vec![lib_s.clone()];
        c.class_path_entries = vec![jar_s.clone()];
        c.java_opts = vec![opt.clone()];
    });
    w.conn.send(&Envelope::Send(m)).await?;
    let p = running_process(&ctx, &mut w, 41, &token).await?;
    let ld = p.var("LD_LIBRARY_PATH").unwrap_or("");
    check(
        !ld.contains(&lib_s),
        "no LD_LIBRARY_PATH made from libraryPathEntries",
        format!("process {}: LD_LIBRARY_PATH={ld}", p.pid),
    )?;
    let used: Vec<&String> = p
        .args
        .iter()
        .filter(|a| a.contains(&lib_s) || a.contains(&jar_s) || a.contains(&opt))
        .collect();
    check(
        used.is_empty(),
        "no class path entry, library path entry or Java option in the process's arguments",
        format!("process {}: {used:?}", p.pid),
    )
}

/// The secret as a file holding it reads: one trailing line end dropped (SPEC §13's file, as
/// `--secret-file` reads its own).
fn secret_text(bytes: &[u8]) -> &[u8] {
    let b = bytes.strip_suffix(b"\n").unwrap_or(bytes);
    b.strip_suffix(b"\r").unwrap_or(b)
}

fn holds(haystack: &[u8], needle: &[u8]) -> bool {
    !needle.is_empty() && haystack.windows(needle.len()).any(|w| w == needle)
}

/// The process `p` got the secret as SPEC §13 says: no argument or variable holding it, and
/// SPARKWIRE_SECRET_FILE naming a file of mode 0600 that holds it.
fn handed_secret(p: &Process, secret: &[u8]) -> Outcome {
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
        .var(crate::spawn::SECRET_FILE_ENV)
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

async fn secret_handoff(ctx: Ctx) -> Outcome {
    sparkwire_launch(&ctx)?;
    let Some(secret) = ctx.settings.secret.clone() else {
        return Err(Failure::Skipped(
            "the suite holds no secret (--secret-file): the worker has none to hand on".into(),
        ));
    };
    let secret = secret.expose().to_vec();
    let mut w = registered(&ctx, &[Version::V1, Version::V2]).await?;
    let token = sleep_token();
    w.conn
        .send(&Envelope::Send(launch_msg(
            &w,
            &app_id(),
            42,
            &allowed_exec(),
            &[&token],
        )))
        .await?;
    let p = running_process(&ctx, &mut w, 42, &token).await?;
    handed_secret(&p, &secret)?;
    // A driver likewise.
    let driver_token = sleep_token();
    let id = format!("driver-20250101120000-{:04}", unique() % 10_000);
    w.conn
        .send(&Envelope::Send(launch_driver(
            &id,
            &allowed_exec(),
            &[&driver_token],
        )))
        .await?;
    let d = launched_process(&ctx, &driver_token).await?;
    handed_secret(&d, &secret)?;
    // The worker's state, which UIs show, carries nothing of it.
    let mut ui = ui_conn(&ctx, &mut w).await?;
    let state = worker_state(&ctx, &mut ui).await?;
    let mut bytes = Vec::new();
    encode_envelope(
        &Envelope::<D>::Reply {
            id: 3,
            reply: Reply::Message(D::WorkerStateResponse(state)),
        },
        Version::V2,
        &mut bytes,
    )
    .map_err(|e| fail("a WorkerStateResponse the suite can encode", e.to_string()))?;
    check(
        !holds(&bytes, &secret),
        "a WorkerStateResponse without the secret",
        "the secret in it",
    )
}

async fn foreign_master(ctx: Ctx) -> Outcome {
    let mut w = registered(&ctx, &[Version::V1, Version::V2]).await?;
    let app = app_id();
    // An executor the worker's own master launched, for the foreign KillExecutor to name.
    launch_executor(&mut w, &app, 51).await?;
    let s = state_change(&ctx, &mut w, 51).await?;
    check(
        s.state == ExecutorState::Running,
        "executor 51 RUNNING",
        s.state.to_string(),
    )?;
    let foreign_driver = format!("driver-20250101120000-{:04}", unique() % 10_000);
    let addr = listening_addr(&ctx, &mut w, Role::Master).await?;
    let port = 20_000 + (unique() % 20_000) as i32;
    let other = Addr::new("127.0.0.9".to_string(), port);
    let commands = [
        (
            "RegisteredWorker",
            D::RegisteredWorker(RegisteredWorker::new(
                EndpointRef::at(other.clone(), "Master"),
                "http://127.0.0.9:8080".into(),
                other,
                false,
            )),
        ),
        (
            "LaunchExecutor",
            launch_msg(&w, &app, 52, &allowed_exec(), &["20"]),
        ),
        (
            "KillExecutor",
            D::KillExecutor(KillExecutor::new(w.master_url.clone(), app.clone(), 51)),
        ),
        (
            "LaunchDriver",
            launch_driver(&foreign_driver, &allowed_exec(), &["20"]),
        ),
    ];
    let mut foreign = Vec::new();
    for (name, m) in commands {
        // A connection of its own for each: a worker that refuses a one-way message closes the
        // connection it came on.
        let mut c = Conn::open(
            addr,
            &format!("foreign-master-{name}"),
            Role::Master,
            "",
            &[Version::V2, Version::V1],
            ctx.settings.secret.as_ref(),
            &ctx.log,
            wait(&ctx),
        )
        .await?;
        c.send(&Envelope::Send(m)).await?;
        foreign.push(c);
    }
    // Nothing the foreign commands ask for happens: no report of executor 52, none of 51 ending.
    let reported = |e: &Envelope<D>| match e {
        Envelope::Send(D::ExecutorStateChanged(s))
        | Envelope::Ask {
            message: D::ExecutorStateChanged(s),
            ..
        } => s.exec_id == 52 || s.exec_id == 51,
        Envelope::Send(D::DriverStateChanged(s)) => s.driver_id == foreign_driver,
        _ => false,
    };
    let watch = ctx.settings.quiet.max(Duration::from_secs(1));
    w.conn
        .expect_none::<D>(
            watch,
            "no ExecutorStateChanged for what a master the worker is not registered with sent",
            reported,
        )
        .await?;
    for c in &mut foreign {
        c.expect_none::<D>(
            ctx.settings.quiet,
            "no ExecutorStateChanged to a master the worker is not registered with",
            reported,
        )
        .await?;
    }
    let mut ui = ui_conn(&ctx, &mut w).await?;
    let st = worker_state(&ctx, &mut ui).await?;
    let running: Vec<i32> = st
        .executors
        .iter()
        .filter(|e| e.app_id == app)
        .map(|e| e.exec_id)
        .collect();
    let drivers: Vec<&String> = st.drivers.iter().map(|d| &d.driver_id).collect();
    check(
        st.master_url == w.master_url && running == [51] && drivers.is_empty(),
        format!(
            "master {} and executor 51 of {app} running, not 52, and no driver",
            w.master_url
        ),
        format!(
            "master {}, executors {running:?}, drivers {drivers:?}",
            st.master_url
        ),
    )
}

async fn decommission_silent(ctx: Ctx) -> Outcome {
    let mut w = registered(&ctx, &[Version::V2]).await?;
    w.conn
        .send(&Envelope::Send(D::DecommissionWorker(
            DecommissionWorker::new(),
        )))
        .await?;
    w.conn
        .expect_none::<D>(
            ctx.settings.quiet,
            "nothing back for DecommissionWorker (no WorkerDecommissioning)",
            |e| matches!(e, Envelope::Send(D::WorkerDecommissioning(_))),
        )
        .await
}

async fn foreign_executor(ctx: Ctx) -> Outcome {
    use crate::kit::driver::{executor, registered as driver, SMALL};
    let d = driver(&ctx, SMALL).await?;
    let mut first = executor(&ctx, &d, "1", 1, Version::V2).await?;
    let mut second = executor(&ctx, &d, "2", 1, Version::V2).await?;
    first.launched().await?;
    let t = first.task(&ctx).await?;
    // The second executor reports the first's task as the first.
    second
        .conn
        .send(&Envelope::Send(C::StatusUpdate(StatusUpdate::new(
            "1".into(),
            t.task_id,
            TaskState::Running,
            Vec::new().into(),
            t.cpus,
            BTreeMap::new(),
        ))))
        .await?;
    second
        .conn
        .expect_closed(
            wait(&ctx),
            "the connection closed: a StatusUpdate naming executor 1 over executor 2's connection is refused",
        )
        .await?;
    let mut third = executor(&ctx, &d, "3", 1, Version::V2).await?;
    third
        .conn
        .send(&Envelope::Send(C::LaunchedExecutor(LaunchedExecutor::new(
            "1".into(),
        ))))
        .await?;
    third
        .conn
        .expect_closed(
            wait(&ctx),
            "the connection closed: a LaunchedExecutor naming executor 1 over executor 3's connection is refused",
        )
        .await?;
    // An ask naming another executor is refused with a failure (or a close).
    let mut fourth = executor(&ctx, &d, "4", 1, Version::V2).await?;
    expect_refused(
        &mut fourth.conn,
        Envelope::Ask {
            id: 93,
            message: C::ExecutorDecommissioning(ExecutorDecommissioning::new("1".into())),
        },
        wait(&ctx),
    )
    .await?;
    // The first executor is untouched: it finishes its task and gets the next.
    first.run(&t).await?;
    first.task(&ctx).await.map(|_| ())
}
