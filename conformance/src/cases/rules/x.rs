//! `rules/x/…`: protocol/rules.md, the rules X1, X2, ….

/// The cases about driver.
pub mod driver {
    use crate::harness::case::run;
    use crate::harness::case::Case;
    use crate::harness::case::Target;
    use crate::harness::env::Ctx;
    use crate::harness::peer::Conn;
    use crate::harness::verdict::check;
    use crate::harness::verdict::fail;
    use crate::harness::verdict::Level;
    use crate::kit::common::wait;
    use crate::kit::driver::*;
    use sparkwire::messages::coarse::*;
    use sparkwire::messages::CoarseMessage;
    use sparkwire::messages::Version;
    use sparkwire::wire::handshake::Role;
    use sparkwire::wire::Envelope;
    use std::time::Duration;

    type C = CoarseMessage;

    /// The cases of this section, each naming its targets.
    pub fn cases(cs: &mut Vec<Case>) {
        cs.push(Case {
            id: "rules/X3/duplicate-id".into(),
            level: Level::Must,
            targets: vec![Target::Driver],
            requirement:
                "a RegisterExecutor of a registered id gets a failure `Duplicate executor \
                ID: ID`, never true (rule X3)"
                    .into(),
            body: run(|ctx: Ctx| async move {
                let d = registered(&ctx, SMALL).await?;
                let _one = executor(&ctx, &d, "1", 2, Version::V2).await?;
                let mut c = Conn::open(
                    d.driver_addr,
                    "again",
                    Role::Executor,
                    "1",
                    &[Version::V2],
                    ctx.settings.secret.as_ref(),
                    &ctx.log,
                    wait(&ctx),
                )
                .await?;
                c.send(&Envelope::Ask {
                    id: 1,
                    message: register_msg("1", 2),
                })
                .await?;
                let got = c
                    .expect::<C, Result<String, String>>(wait(&ctx), "a failure", |e| match e {
                        Envelope::Failure { id: 1, error } => Some(Ok(error.message.clone())),
                        Envelope::Reply { id: 1, reply } => Some(Err(format!("{reply:?}"))),
                        _ => None,
                    })
                    .await?;
                match got {
                    Ok(m) => check(
                        m.contains("Duplicate executor ID: 1"),
                        "Duplicate executor ID: 1",
                        m,
                    ),
                    Err(r) => Err(fail("a failure", format!("the reply {r}"))),
                }
            }),
            ..Case::default()
        });
        cs.push(Case {
            id: "rules/X1/register-first".into(),
            level: Level::Must,
            targets: vec![Target::Driver],
            requirement:
                "the driver launches no task on an executor before it registered and sent \
                LaunchedExecutor (rules X1, X4)"
                    .into(),
            body: run(|ctx: Ctx| async move {
                let d = registered(&ctx, SMALL).await?;
                let mut e = executor(&ctx, &d, "1", 2, Version::V2).await?;
                e.conn
                    .expect_none::<C>(
                        Duration::from_millis(1200),
                        "no LaunchTask before \
                    LaunchedExecutor",
                        |e| matches!(e, Envelope::Send(C::LaunchTask(_))),
                    )
                    .await?;
                e.launched().await?;
                e.task(&ctx).await.map(|_| ())
            }),
            ..Case::default()
        });
        cs.push(Case {
            id: "rules/X5/no-tasks-after-decommissioning".into(),
            level: Level::Must,
            targets: vec![Target::Driver],
            requirement: "the driver sends no LaunchTask to an executor after its \
                ExecutorDecommissioning (rule X5)"
                .into(),
            body: run(|ctx: Ctx| async move {
                let d = registered(
                    &ctx,
                    Job {
                        partitions: 6,
                        ..SMALL
                    },
                )
                .await?;
                let mut e = executor(&ctx, &d, "1", 1, Version::V2).await?;
                e.launched().await?;
                let t = e.task(&ctx).await?;
                e.conn
                    .send(&Envelope::Ask {
                        id: 91,
                        message: C::ExecutorDecommissioning(ExecutorDecommissioning::new(
                            "1".into(),
                        )),
                    })
                    .await?;
                e.conn
                    .expect::<C, ()>(wait(&ctx), "a reply to ExecutorDecommissioning", |x| {
                        matches!(x, Envelope::Reply { id: 91, .. }).then_some(())
                    })
                    .await?;
                e.run(&t).await?;
                e.conn
                    .expect_none::<C>(
                        Duration::from_millis(1500),
                        "no LaunchTask after ExecutorDecommissioning",
                        |x| matches!(x, Envelope::Send(C::LaunchTask(_))),
                    )
                    .await
            }),
            ..Case::default()
        });
    }
}

/// The cases about executor.
pub mod executor {
    use crate::harness::case::run;
    use crate::harness::case::Case;
    use crate::harness::case::Target;
    use crate::harness::env::Ctx;
    use crate::harness::verdict::Level;
    use crate::kit::executor::*;
    use sparkwire::messages::Version;

    /// The cases of this section, each naming its targets.
    pub fn cases(cs: &mut Vec<Case>) {
        cs.push(Case {
            id: "rules/X2/launched".into(),
            level: Level::Must,
            targets: vec![Target::Executor],
            requirement: "once its RegisterExecutor is answered true the executor sends \
                LaunchedExecutor with its id (rule X2)"
                .into(),
            body: run(|ctx: Ctx| async move {
                let mut e = registered(&ctx, &[Version::V1, Version::V2], 128).await?;
                launched(&ctx, &mut e).await
            }),
            ..Case::default()
        });
    }
}
