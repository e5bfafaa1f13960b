//! `spec/14.5/…`: SPEC §14.5 (protocol/SPEC.md).

use crate::harness::case::run;
use crate::harness::case::Case;
use crate::harness::case::Target;
use crate::harness::env::Ctx;
use crate::harness::verdict::check;
use crate::harness::verdict::Failure;
use crate::harness::verdict::Level;
use crate::harness::verdict::Outcome;
use crate::kit::common::unique;
use crate::kit::support::launches::*;
use crate::kit::worker::allowed_exec;
use crate::kit::worker::launch_msg;
use crate::kit::worker::registered;
use crate::kit::worker::state_change;
use sparkwire::messages::DeployMessage;
use sparkwire::messages::DriverState;
use sparkwire::messages::ExecutorState;
use sparkwire::messages::Version;
use sparkwire::wire::Envelope;
use std::time::Duration;

type D = DeployMessage;

/// The cases of this section, each naming its targets.
pub fn cases(cs: &mut Vec<Case>) {
    cs.push(Case {
        id: "spec/14.5/forbidden-env-refused".into(),
        level: Level::Must,
        targets: vec![Target::Worker],
        quote:
            "SPEC §14.5, \"Variables that choose what runs or load code — the prefixes `LD_`, … \
            — are never passed, whatever the operator allows: a command naming one is refused\", \
            and \"A refused executor launch is reported as `ExecutorStateChanged` `FAILED` with no \
            exit status and a `message` saying why\""
                .into(),
        requirement: "a launch setting LD_PRELOAD is refused: the executor FAILED without exit \
            status, the driver ERROR"
            .into(),
        body: run(forbidden_env_refused),
        ..Case::default()
    });
    cs.push(Case {
        id: "spec/14.5/driver-refused".into(),
        level: Level::Must,
        targets: vec![Target::Worker],
        quote: "SPEC §14.5, \"A worker runs only what its operator allowed\" and \"A refused \
            driver launch is reported as `DriverStateChanged` `ERROR` with the reason in its \
            exception\""
            .into(),
        requirement: "a LaunchDriver of a program not allowed (/bin/sh) is reported ERROR with a \
            message and never runs"
            .into(),
        body: run(driver_refused),
        ..Case::default()
    });
    cs.push(Case {
        id: "spec/14.5/executor-program-not-a-driver".into(),
        level: Level::Must,
        targets: vec![Target::Worker],
        quote: "SPEC §14.5, \"A program allowed with `--allow-exec PATH` runs only as sparkwire's \
            executor … Such a program is never run as a driver\""
            .into(),
        requirement: "a program the worker runs only as an executor is refused (ERROR) as a \
            LaunchDriver with those args"
            .into(),
        body: run(executor_program_not_a_driver),
        ..Case::default()
    });
    cs.push(Case {
        id: "spec/14.5/no-library-path".into(),
        level: Level::Must,
        targets: vec![Target::Worker],
        quote:
            "SPEC §14.5, \"`classPathEntries`, `libraryPathEntries` and `javaOpts` are not used \
            to start the process (Spark turns library paths into `LD_LIBRARY_PATH`; sparkwire \
            never does)\""
                .into(),
        requirement: "a LaunchExecutor's process has no LD_LIBRARY_PATH from its entries and none \
            of the three in its args"
            .into(),
        body: run(no_library_path),
        ..Case::default()
    });
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
