//! `spec/11/…`: SPEC §11 (protocol/SPEC.md).

/// The cases about vectors.
pub mod vectors {
    use crate::harness::case::run;
    use crate::harness::case::Case;
    use crate::harness::case::Target;
    use crate::harness::env::Ctx;
    use crate::harness::verdict::check;
    use crate::harness::verdict::fail;
    use crate::harness::verdict::Level;
    use crate::harness::verdict::Outcome;
    use crate::kit::common::wait;
    use crate::kit::replay::*;
    use crate::kit::support::decoding::*;
    use sparkwire::wire::handshake::Role;
    use std::time::Duration;

    /// The cases of this section, each naming its targets.
    pub fn cases(cs: &mut Vec<Case>) {
        for r in replays(&MASTER) {
            let id = format!("spec/11/live/{}/{}", r.file, slug(&r.name));
            let quote = vector_quote(&r.file, &r.name);
            let requirement = match &r.error {
                Some(e) => format!(
                    "the master refuses this vector ({e}) from a {} and closes the connection",
                    who(r.how)
                ),
                None => format!(
                    "the master takes this vector from a {}: it answers and keeps the connection open",
                    who(r.how)
                ),
            };
            cs.push(Case {
                id,
                level: Level::Must,
                targets: vec![Target::Master],
                timeout: Duration::from_secs(10),
                quote,
                requirement,
                body: run(move |ctx: Ctx| {
                    let r = r.clone();
                    async move { replay(ctx, r).await }
                }),
                ..Case::default()
            });
        }
        for r in replays(&EXECUTOR) {
            let id = format!("spec/11/live/{}/{}", r.file, slug(&r.name));
            let stop = tag_and_name(r.frame.get(4..).unwrap_or_default())
                .1
                .as_deref()
                == Some("StopExecutor");
            let quote = vector_quote(&r.file, &r.name);
            let requirement = match (&r.error, stop) {
                (Some(e), _) => format!(
                    "the executor refuses this vector from its driver and closes (a close envelope, \
                        if any, of kind {e})"
                ),
                (None, true) => {
                    "the executor takes this StopExecutor: it closes its connection and exits \
                    with status 0"
                        .to_string()
                }
                (None, false) => {
                    "the executor takes this vector from its driver and keeps the connection open"
                        .to_string()
                }
            };
            cs.push(Case {
                id,
                level: Level::Must,
                targets: vec![Target::Executor],
                quote,
                requirement,
                body: run(move |ctx: Ctx| {
                    let r = r.clone();
                    async move { replay_to_executor(ctx, r, stop).await }
                }),
                ..Case::default()
            });
        }
        for r in replays(&WORKER) {
            let id = format!("spec/11/live/{}/{}", r.file, slug(&r.name));
            let quote = vector_quote(&r.file, &r.name);
            let requirement = match &r.error {
                Some(e) => format!(
                    "the worker refuses this vector from its master and closes (a close envelope, if \
                        any, of kind {e})"
                ),
                None => {
                    "the worker takes this vector from its master and keeps the connection open"
                        .to_string()
                }
            };
            cs.push(Case {
                id,
                level: Level::Must,
                targets: vec![Target::Worker],
                quote,
                requirement,
                body: run(move |ctx: Ctx| {
                    let r = r.clone();
                    async move { replay_to_worker(ctx, r).await }
                }),
                ..Case::default()
            });
        }
    }

    fn who(how: How) -> &'static str {
        match how {
            How::AnyRole => "UI peer",
            How::RegisteredWorker => "registered worker",
            How::Fresh(Role::Worker) => "worker (its first message)",
            How::Fresh(Role::AppClient) => "application client",
            How::Fresh(Role::DriverClient) => "driver client",
            How::Fresh(_) => "UI peer",
        }
    }

    async fn replay_to_executor(ctx: Ctx, r: Replay, stop: bool) -> Outcome {
        let mut e = crate::kit::executor::registered(&ctx, &[r.version], 128).await?;
        // As a driver does, the frame comes once the executor said it is up.
        crate::kit::executor::launched(&ctx, &mut e).await?;
        e.conn
            .send_raw(&r.frame, &format!("the vector \"{}\"", r.name))
            .await?;
        match (&r.error, stop) {
            (Some(err), _) => refused_with(&ctx, &mut e.conn, err, false).await,
            (None, true) => {
                e.conn
                    .expect_closed(wait(&ctx), "the connection closed (StopExecutor)")
                    .await?;
                match e.run.exit_within(wait(&ctx)).await? {
                    Some(code) => check(
                        code == 0,
                        "exit status 0 (stopped, not refused)",
                        code.to_string(),
                    ),
                    None => Err(fail("the executor to exit", "still running")),
                }
            }
            (None, false) => stays_open(&ctx, &mut e.conn, false).await,
        }
    }

    async fn replay_to_worker(ctx: Ctx, r: Replay) -> Outcome {
        let mut w = crate::kit::worker::registered(&ctx, &[r.version]).await?;
        w.conn
            .send_raw(&r.frame, &format!("the vector \"{}\"", r.name))
            .await?;
        match &r.error {
            Some(err) => refused_with(&ctx, &mut w.conn, err, false).await,
            None => stays_open(&ctx, &mut w.conn, false).await,
        }
    }
}

/// The cases about driver.
pub mod driver {
    use crate::harness::case::run;
    use crate::harness::case::Case;
    use crate::harness::case::Target;
    use crate::harness::env::Ctx;
    use crate::harness::verdict::Failure;
    use crate::harness::verdict::Level;
    use crate::harness::verdict::Outcome;
    use crate::kit::common::unique;
    use crate::kit::common::wait;
    use crate::kit::driver::registered;
    use crate::kit::driver::SMALL;
    use crate::kit::replay::refused_with;
    use crate::kit::replay::replays;
    use crate::kit::replay::slug;
    use crate::kit::replay::stays_open;
    use crate::kit::replay::Replay;
    use crate::kit::spawned;
    use crate::kit::support::decoding::vector_quote;
    use crate::kit::support::decoding_driver::*;
    use sparkwire::messages::DeployMessage;
    use sparkwire::wire::handshake::Role;
    use sparkwire::wire::Envelope;

    type D = DeployMessage;

    /// The cases of this section, each naming its targets.
    pub fn cases(cs: &mut Vec<Case>) {
        for r in replays(&EXECUTOR_PORT) {
            let id = format!("spec/11/live/{}/{}", r.file, slug(&r.name));
            let quote = vector_quote(&r.file, &r.name);
            let requirement = match &r.error {
                Some(e) => format!(
                    "the driver refuses this vector from an executor on its executor port and \
                        closes ({e} if agreed)"
                ),
                None => "the driver takes this vector from an executor on its executor port, the \
                    connection kept open"
                    .to_string(),
            };
            cs.push(Case {
                id,
                level: Level::Must,
                targets: vec![Target::Driver],
                quote,
                requirement,
                body: run(move |ctx: Ctx| {
                    let r = r.clone();
                    async move { to_executor_port(ctx, r).await }
                }),
                ..Case::default()
            });
        }
        for r in replays(&APP_CLIENT) {
            let id = format!("spec/11/live/app-client/{}/{}", r.file, slug(&r.name));
            let quote = vector_quote(&r.file, &r.name);
            let requirement = match &r.error {
                Some(e) => format!(
                    "the driver's application client, registered, refuses this vector from its master \
                        and closes ({e})"
                ),
                None => "the driver's application client, registered, takes this vector from its master, \
                    the connection kept open"
                    .to_string(),
            };
            cs.push(Case {
                id,
                level: Level::Must,
                targets: vec![Target::Driver],
                quote,
                requirement,
                body: run(move |ctx: Ctx| {
                    let r = r.clone();
                    async move { to_app_client(ctx, r).await }
                }),
                ..Case::default()
            });
        }
    }

    /// A fresh executor connection to a registered driver's executor port, at the vector's version,
    /// offering `closeReason`; the frame, then its verdict.
    async fn to_executor_port(ctx: Ctx, r: Replay) -> Outcome {
        let d = registered(&ctx, SMALL).await?;
        let id = format!("{}", 100 + unique() % 100_000);
        let (mut c, agreed) = crate::kit::common::offering_close_reason(
            &ctx,
            d.driver_addr,
            "executor",
            &[r.version],
            Role::Executor,
            id,
        )
        .await?;
        c.send_raw(&r.frame, &format!("the vector \"{}\"", r.name))
            .await?;
        match &r.error {
            Some(e) => refused_with(&ctx, &mut c, e, agreed).await,
            None => stays_open(&ctx, &mut c, agreed).await,
        }
    }

    /// A freshly started driver whose application client the suite accepts at the vector's version
    /// and registers; the frame, then its verdict.
    async fn to_app_client(ctx: Ctx, r: Replay) -> Outcome {
        let run = crate::kit::driver::started(&ctx, SMALL).await?;
        let mut app = run.accept(&ctx, "master", Role::Master).await?;
        let hello = app.read_hello(spawned::startup(&ctx)).await?;
        if !hello.versions.contains(&u64::from(r.version.number())) {
            return Err(Failure::Skipped(format!(
            "a version {} vector, and the driver's application client does not offer version {}",
            r.version.number(),
            r.version.number()
        )));
        }
        spawned::accept(&ctx, &mut app, &hello, &[r.version], "master").await?;
        app.expect::<D, ()>(wait(&ctx), "RegisterApplication", |e| {
            matches!(e, Envelope::Send(D::RegisterApplication(_))).then_some(())
        })
        .await?;
        crate::kit::driver::registered_application(&mut app, run.given).await?;
        app.send_raw(&r.frame, &format!("the vector \"{}\"", r.name))
            .await?;
        match &r.error {
            // The suite accepted the hello itself, taking no feature: no close envelope is owed.
            Some(e) => refused_with(&ctx, &mut app, e, false).await,
            None => stays_open(&ctx, &mut app, false).await,
        }
    }
}
