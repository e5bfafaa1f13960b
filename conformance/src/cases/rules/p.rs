//! `rules/p/…`: protocol/rules.md, the rules P1, P2, ….

/// The cases about driver.
pub mod driver {
    use crate::harness::case::run;
    use crate::harness::case::Case;
    use crate::harness::case::Target;
    use crate::harness::env::Ctx;
    use crate::harness::verdict::check;
    use crate::harness::verdict::Level;
    use crate::kit::common::wait;
    use crate::kit::driver::*;
    use crate::kit::spawned;
    use sparkwire::messages::DeployMessage;
    use sparkwire::messages::Version;
    use sparkwire::wire::Envelope;

    type D = DeployMessage;

    /// The cases of this section, each naming its targets.
    pub fn cases(cs: &mut Vec<Case>) {
        cs.push(Case {
            id: "rules/P1/register-first".into(),
            level: Level::Must,
            targets: vec![Target::Driver],
            requirement: "the driver's application client sends RegisterApplication first, and \
                nothing else until answered"
                .into(),
            body: run(|ctx: Ctx| async move {
                let (_run, mut app) = start(ctx.clone(), SMALL).await?;
                let hello = app.read_hello(spawned::startup(&ctx)).await?;
                spawned::accept(
                    &ctx,
                    &mut app,
                    &hello,
                    &[Version::V1, Version::V2],
                    "master",
                )
                .await?;
                let first = app.recv::<D>(wait(&ctx), "RegisterApplication").await?;
                check(
                    matches!(first, Envelope::Send(D::RegisterApplication(_))),
                    "a send of \
                    RegisterApplication",
                    crate::harness::peer::envelope_label(&first),
                )?;
                app.expect_none::<D>(
                    ctx.settings.quiet,
                    "nothing before \
                    RegisteredApplication",
                    |e| !matches!(e, Envelope::Send(D::RegisterApplication(_))),
                )
                .await
            }),
            ..Case::default()
        });
    }
}

/// The cases about judged.
pub mod judged {
    use crate::harness::case::run;
    use crate::harness::case::Case;
    use crate::harness::case::Sharing;
    use crate::harness::case::Target;
    use crate::harness::env::Ctx;
    use crate::harness::verdict::check;
    use crate::harness::verdict::Level;
    use crate::harness::verdict::Outcome;
    use crate::kit::master::app;
    use crate::kit::master::app_desc;
    use crate::kit::master::launches;
    use crate::kit::master::worker;
    use crate::kit::master::Need;
    use sparkwire::messages::Version;
    use std::time::Duration;

    /// The cases of this section, each naming its targets.
    pub fn cases(cs: &mut Vec<Case>) {
        cs.push(Case {
            id: "rules/P4/no-launch-after-unregister".into(),
            level: Level::Must,
            targets: vec![Target::Master],
            timeout: Duration::from_secs(10),
            sharing: Sharing::Alone,
            needs: vec![Need::NoOtherApplication],
            quote: "rules.md P4, \"LaunchExecutor is only for an application that is registered \
                and has not finished\""
                .into(),
            requirement: "a worker with room gets no LaunchExecutor for an application its client \
                unregistered"
                .into(),
            body: run(rules_p4_no_launch_after_unregister),
        });
    }

    async fn rules_p4_no_launch_after_unregister(ctx: Ctx) -> Outcome {
        let (mut c, id) = app(&ctx, "app", app_desc(Some(1), 64, None), Version::V2).await?;
        crate::kit::support::master_clients::unregistered(&ctx, &mut c, &id).await?;
        let mut w = worker(&ctx, "worker", 2, 1024, Version::V2).await?;
        let launched: Vec<i32> = launches(&ctx, &mut w)
            .await
            .into_iter()
            .filter(|l| l.app_id == id)
            .map(|l| l.exec_id)
            .collect();
        check(
            launched.is_empty(),
            format!("no LaunchExecutor for {id}, which its client unregistered"),
            format!("LaunchExecutor for executors {launched:?} of {id}"),
        )
    }
}

/// The cases about ownership.
pub mod ownership {
    use crate::harness::case::run;
    use crate::harness::case::Case;
    use crate::harness::case::Target;
    use crate::harness::env::Ctx;
    use crate::harness::verdict::check;
    use crate::harness::verdict::fail;
    use crate::harness::verdict::Failure;
    use crate::harness::verdict::Level;
    use crate::harness::verdict::Outcome;
    use crate::kit::common::unique;
    use crate::kit::common::wait;
    use crate::kit::master::app;
    use crate::kit::master::app_desc;
    use crate::kit::master::open;
    use crate::kit::support::authorization::*;
    use sparkwire::messages::deploy::*;
    use sparkwire::messages::Addr;
    use sparkwire::messages::DeployMessage;
    use sparkwire::messages::EndpointRef;
    use sparkwire::messages::Version;
    use sparkwire::wire::handshake::Role;
    use sparkwire::wire::Envelope;
    use sparkwire::wire::Reply;
    use std::time::Duration;

    type D = DeployMessage;

    /// The cases of this section, each naming its targets.
    pub fn cases(cs: &mut Vec<Case>) {
        cs.push(Case {
            id: "rules/P1/register-first".into(),
            level: Level::Must,
            targets: vec![Target::Master],
            timeout: Duration::from_secs(10),
            quote:
                "SPEC §14.2 Z1, \"Naming an unknown or finished application is not a refusal\"; \
                rules.md P1"
                    .into(),
            requirement: "an UnregisterApplication before registering gets no answer and the \
                connection is still served"
                .into(),
            body: run(unregister_before_registering),
            ..Case::default()
        });
        cs.push(Case {
            id: "rules/P2/app-id".into(),
            level: Level::Must,
            targets: vec![Target::Master],
            timeout: Duration::from_secs(10),
            quote: "SPEC §14.2 Z1, \"the master answers as Spark does (`false`, or nothing)\"; \
                rules.md P2"
                .into(),
            requirement: "RequestExecutors naming an app id never given out is answered false, \
                never true (strict: fail or close)"
                .into(),
            body: run(request_executors_unknown_app),
            ..Case::default()
        });
    }

    async fn unregister_before_registering(ctx: Ctx) -> Outcome {
        let mut c = open(&ctx, Role::AppClient, "app", "", Version::V2).await?;
        let m = D::UnregisterApplication(UnregisterApplication::new(format!(
            "app-20250101120000-{}",
            unique()
        )));
        c.send(&Envelope::Send(m)).await?;
        if nothing_back(
            &ctx,
            &mut c,
            "an UnregisterApplication of an unknown application",
            unregister_answer,
        )
        .await?
        {
            return Ok(());
        }
        // Still serving: the connection registers an application.
        let port = 40000 + (unique() % 20000) as i32;
        c.send(&Envelope::Send(D::RegisterApplication(
            RegisterApplication::new(
                app_desc(Some(1), 64, Some(0)),
                EndpointRef::at(Addr::new("127.0.0.1", port), "AppClient"),
            ),
        )))
        .await?;
        let want = "RegisteredApplication (or, from a strict master, a close)";
        match c
        .expect_or_close::<D, ()>(wait(&ctx), want, |e| {
            matches!(e, Envelope::Send(D::RegisteredApplication(_))).then_some(())
        })
        .await
    {
        Err(Failure::Fail { seen, .. }) if seen.contains("closed") => check(
            strict_master(&ctx).await?,
            "RegisteredApplication (a close only from a strict master)",
            "the connection closed, and the master takes messages before a registration: it is not strict",
        ),
        other => other,
    }
    }

    async fn request_executors_unknown_app(ctx: Ctx) -> Outcome {
        let (mut c, id) = app(&ctx, "app", app_desc(Some(1), 64, Some(0)), Version::V2).await?;
        let m = D::RequestExecutors(RequestExecutors::new(format!("{id}-other"), vec![]));
        c.send(&Envelope::Ask { id: 5, message: m }).await?;
        let want = "a bool reply false to ask 5 (or, strictly, a failure or a close)";
        let got = c
            .expect_or_close::<D, Envelope<D>>(wait(&ctx), want, |e| match e {
                Envelope::Failure { id: 5, .. } | Envelope::Reply { id: 5, .. } => Some(e.clone()),
                _ => None,
            })
            .await;
        match got {
            Ok(Envelope::Reply {
                reply: Reply::Bool(false),
                ..
            })
            | Ok(Envelope::Failure { .. }) => Ok(()),
            Ok(other) => Err(fail(want, crate::harness::peer::envelope_label(&other))),
            Err(Failure::Fail { seen, .. }) if seen.contains("closed") => Ok(()),
            Err(e) => Err(e),
        }
    }
}
