//! `rules/n/…`: protocol/rules.md, the rules N1, N2, ….

/// The cases about end obligations.
pub mod end_obligations {
    use crate::harness::case::run;
    use crate::harness::case::Case;
    use crate::harness::case::Target;
    use crate::harness::env::Ctx;
    use crate::harness::verdict::fail;
    use crate::harness::verdict::Level;
    use crate::harness::verdict::Outcome;
    use crate::kit::executor;
    use crate::kit::support::end_obligations::*;
    use crate::kit::worker;
    use sparkwire::messages::coarse::LaunchTask;
    use sparkwire::messages::CoarseMessage;
    use sparkwire::messages::Version;
    use sparkwire::wire::encode_task;
    use sparkwire::wire::Envelope;

    /// The cases of this section, each naming its targets.
    pub fn cases(cs: &mut Vec<Case>) {
        cs.push(Case {
            id: "rules/N4/launch-answered-by-the-end".into(),
            level: Level::Must,
            targets: vec![Target::Worker],
            quote: "rules.md N4, \"Every LaunchExecutor on a worker connection still open at the \
                end of the trace has been answered with an ExecutorStateChanged for that \
                executor\""
                .into(),
            requirement:
                "the suite sends a worker LaunchExecutor and lets go; the judge waits for \
                its ExecutorStateChanged"
                    .into(),
            body: run(rules_n4_launch_answered_by_the_end),
            ..Case::default()
        });
        cs.push(Case {
            id: "rules/N2/task-ended-by-the-end".into(),
            level: Level::Must,
            targets: vec![Target::Executor],
            quote: "rules.md N2, \"Every task launched on an executor has its final StatusUpdate \
                (FINISHED, FAILED, KILLED or LOST) by the end of the trace, unless the executor \
                was lost first\""
                .into(),
            requirement: "the suite launches a short task and lets go; the judge waits for the \
                task's final StatusUpdate"
                .into(),
            body: run(rules_n2_task_ended_by_the_end),
            ..Case::default()
        });
    }

    async fn rules_n4_launch_answered_by_the_end(ctx: Ctx) -> Outcome {
        judged(&ctx)?;
        let mut w = worker::registered(&ctx, &[Version::V1, Version::V2]).await?;
        let launch = worker::launch_msg(
            &w,
            "app-20250101120000-0001",
            0,
            &worker::allowed_exec(),
            &["20"],
        );
        w.conn.send(&Envelope::Send(launch)).await?;
        let worker::Registered { mut run, conn, .. } = w;
        drop(conn);
        ctx.log.judge().settled().await;
        run.stop(std::time::Duration::from_secs(2)).await;
        Ok(())
    }

    async fn rules_n2_task_ended_by_the_end(ctx: Ctx) -> Outcome {
        judged(&ctx)?;
        let mut e = executor::registered(&ctx, &[Version::V1, Version::V2], 128).await?;
        executor::launched(&ctx, &mut e).await?;
        let t = executor::task(0, "sum-squares", &[0, 1000], 1);
        let data =
            encode_task(&t).map_err(|er| fail("a task the suite can encode", er.to_string()))?;
        e.conn
            .send(&Envelope::Send(CoarseMessage::LaunchTask(LaunchTask::new(
                data.into(),
            ))))
            .await?;
        let executor::Registered { run, conn, .. } = e;
        drop(conn);
        ctx.log.judge().settled().await;
        drop(run);
        Ok(())
    }
}

/// The cases about judged.
pub mod judged {
    use crate::harness::case::run;
    use crate::harness::case::Case;
    use crate::harness::case::Target;
    use crate::harness::env::Ctx;
    use crate::harness::verdict::Level;
    use crate::harness::verdict::Outcome;
    use crate::kit::common::unique;
    use crate::kit::master::app_desc;
    use crate::kit::master::open;
    use crate::kit::master::Need;
    use crate::kit::support::master_judged::*;
    use sparkwire::messages::deploy::RegisterApplication;
    use sparkwire::messages::Addr;
    use sparkwire::messages::DeployMessage;
    use sparkwire::messages::EndpointRef;
    use sparkwire::messages::Version;
    use sparkwire::wire::handshake::Role;
    use sparkwire::wire::Envelope;
    use std::time::Duration;

    type D = DeployMessage;

    /// The cases of this section, each naming its targets.
    pub fn cases(cs: &mut Vec<Case>) {
        cs.push(Case {
            id: "rules/N3/registration-answered-by-the-end".into(),
            level: Level::Must,
            targets: vec![Target::Master],
            timeout: Duration::from_secs(10),
            needs: vec![Need::OwnRegistrations],
            quote:
                "rules.md N3, \"Every RegisterApplication on a connection still open at the end \
                of the trace has been answered with RegisteredApplication\""
                    .into(),
            requirement: "an app client registers and lets go; the judge waits for the master's \
                RegisteredApplication"
                .into(),
            body: run(rules_n3_registration_answered_by_the_end),
            ..Case::default()
        });
    }

    async fn rules_n3_registration_answered_by_the_end(ctx: Ctx) -> Outcome {
        judged(&ctx)?;
        let mut c = open(&ctx, Role::AppClient, "app", "", Version::V2).await?;
        // An application of its own name (the `registration-unanswered` master answers only the
        // suite's usual one), which no worker can run (no executor memory a worker offers).
        let mut desc = app_desc(Some(1), 64, Some(0));
        desc.name = "sparkwire-conformance-registered-by-the-end".into();
        let port = 40000 + (unique() % 20000) as i32;
        c.send(&Envelope::Send(D::RegisterApplication(
            RegisterApplication::new(
                desc,
                EndpointRef::at(Addr::new("127.0.0.1", port), "AppClient"),
            ),
        )))
        .await?;
        // The case ends here: the judge owes the conversation its end (Judge::settle).
        Ok(())
    }
}
