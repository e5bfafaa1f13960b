//! `spec/14.3/…`: SPEC §14.3 (protocol/SPEC.md).

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
    use crate::kit::common::wait;
    use crate::kit::master::worker;
    use crate::kit::support::authorization::*;
    use sparkwire::messages::deploy::*;
    use sparkwire::messages::DeployMessage;
    use sparkwire::messages::Version;
    use sparkwire::wire::Envelope;
    use std::time::Duration;

    type D = DeployMessage;

    /// The cases of this section, each naming its targets.
    pub fn cases(cs: &mut Vec<Case>) {
        cs.push(Case {
            id: "spec/14.3/failure-form".into(),
            level: Level::Must,
            targets: vec![Target::Master],
            timeout: Duration::from_secs(10),
            quote: "SPEC §3, \"`error` is `{\"className\": str, \"message\": str}`\", and §14.3, \
                \"The failure's `className` is `org.apache.spark.SparkException` for a message off \
                its route (§14.1) ... its `message` says why\""
                .into(),
            requirement:
                "a worker's RequestMasterState gets a failure of className SparkException \
                and a message (strict: close)"
                    .into(),
            body: run(failure_form),
            ..Case::default()
        });
    }

    async fn failure_form(ctx: Ctx) -> Outcome {
        let mut w = worker(&ctx, "worker", 0, 0, Version::V2).await?;
        w.conn
            .send(&Envelope::Ask {
                id: 71,
                message: D::RequestMasterState(RequestMasterState::new()),
            })
            .await?;
        let want = "a failure for ask 71: [3, 71, \
        {\"className\": \"org.apache.spark.SparkException\", \"message\": a text}]";
        let deadline = tokio::time::Instant::now() + wait(&ctx);
        loop {
            let left = deadline.saturating_duration_since(tokio::time::Instant::now());
            let body = match w.conn.frame_body_or_close(left, want).await {
                Ok(body) => body,
                // A strict master closes instead (the ask breaks rule M1 too, SPEC §8.1).
                Err(Failure::Fail { seen, .. }) if seen.contains("closed") => {
                    return check(
                    strict_master(&ctx).await?,
                    format!("{want} (a close only from a strict master)"),
                    "the connection closed, and the master takes messages before a registration: it is not strict",
                );
                }
                Err(e) => return Err(e),
            };
            // Read by hand, so that a failure missing a key is seen as such.
            let Some(value) = crate::harness::mp::to_json(&body) else {
                return Err(fail(want, "a frame that is not MessagePack"));
            };
            let Some(items) = value.as_array() else {
                continue;
            };
            if items.get(1).and_then(|t| t.as_u64()) != Some(71) {
                continue;
            }
            if items.first().and_then(|t| t.as_u64()) != Some(3) {
                return Err(fail(
                    want,
                    crate::harness::peer::describe(w.conn.family, &body, w.conn.v()),
                ));
            }
            let error = items.get(2);
            let class = error
                .and_then(|e| e.get("className"))
                .and_then(|c| c.as_str());
            let message = error
                .and_then(|e| e.get("message"))
                .and_then(|m| m.as_str());
            return check(
                class == Some("org.apache.spark.SparkException")
                    && message.is_some_and(|m| !m.is_empty()),
                want,
                format!("{}", error.cloned().unwrap_or_default()),
            );
        }
    }
}

/// The cases about closing.
pub mod closing {
    use crate::harness::case::run;
    use crate::harness::case::Case;
    use crate::harness::case::Target;
    use crate::harness::env::Ctx;
    use crate::harness::verdict::check;
    use crate::harness::verdict::Level;
    use crate::harness::verdict::Outcome;
    use crate::kit::master::app;
    use crate::kit::master::app_desc;
    use crate::kit::master::settle;
    use crate::kit::master::state;
    use crate::kit::master::worker;
    use crate::kit::master::worker_ref;
    use crate::kit::support::lost_on_close::*;
    use sparkwire::messages::deploy::*;
    use sparkwire::messages::DeployMessage;
    use sparkwire::messages::Version;
    use sparkwire::messages::WorkerState;
    use sparkwire::wire::Envelope;
    use std::time::Duration;

    type D = DeployMessage;

    /// The cases of this section, each naming its targets.
    pub fn cases(cs: &mut Vec<Case>) {
        cs.push(Case {
            id: "spec/14.3/refused-send-loses-application".into(),
            level: Level::Must,
            targets: vec![Target::Master],
            timeout: Duration::from_secs(10),
            quote: "SPEC §14.3, \"A refused **send** closes its connection ... Closing loses what \
                was bound to the connection as any closed connection does (§8): an application \
                client that sent a refused message loses its application\""
                .into(),
            requirement:
                "an UnregisterApplication of another's app closes the sender and ends its \
                own app; the other stays"
                    .into(),
            body: run(refused_send_loses_application),
            ..Case::default()
        });
        cs.push(Case {
            id: "spec/14.3/refused-send-loses-worker".into(),
            level: Level::Must,
            targets: vec![Target::Master],
            timeout: Duration::from_secs(10),
            quote: "SPEC §14.3, \"Closing loses what was bound to the connection ... a worker is \
                marked lost\""
                .into(),
            requirement:
                "a Heartbeat naming another worker closes the sender, which is then DEAD; \
                the other stays ALIVE"
                    .into(),
            body: run(refused_send_loses_worker),
            ..Case::default()
        });
        cs.push(Case {
            id: "spec/14.3/refused-creates-nothing".into(),
            level: Level::Must,
            targets: vec![Target::Master],
            timeout: Duration::from_secs(10),
            quote: "SPEC §14.3, \"Nothing a refused message asks for happens, and no state is \
                created for it\", for a message off its route (§14.1, \"A `worker` sending \
                `RegisterApplication` ... [is] refused\")"
                .into(),
            requirement: "a registered worker's RegisterApplication creates no application in the \
                master's state"
                .into(),
            body: run(refused_creates_nothing),
            ..Case::default()
        });
    }

    async fn refused_send_loses_application(ctx: Ctx) -> Outcome {
        let (_a, a_id) = app(&ctx, "app-a", app_desc(Some(1), 64, Some(0)), Version::V2).await?;
        let (mut b, b_id) = app(&ctx, "app-b", app_desc(Some(1), 64, Some(0)), Version::V2).await?;
        b.send(&Envelope::Send(D::UnregisterApplication(
            UnregisterApplication::new(a_id.clone()),
        )))
        .await?;
        b.expect_closed(
        crate::kit::common::reaction_wait(&ctx),
        "the connection closed (UnregisterApplication of another connection's application refused)",
    )
    .await?;
        settle(
            &ctx,
            || async {
                let s = state(&ctx).await?;
                Ok(!s.active_apps.iter().any(|x| x.id == b_id))
            },
            &format!("{b_id}, the refused connection's application, no longer active"),
        )
        .await?;
        let s = state(&ctx).await?;
        check(
            s.active_apps.iter().any(|x| x.id == a_id),
            format!("{a_id} still active"),
            "finished",
        )
    }

    async fn refused_send_loses_worker(ctx: Ctx) -> Outcome {
        let a = worker(&ctx, "worker-a", 0, 0, Version::V2).await?;
        let mut b = worker(&ctx, "worker-b", 0, 0, Version::V2).await?;
        b.conn
            .send(&Envelope::Send(D::Heartbeat(Heartbeat::new(
                a.id.clone(),
                worker_ref(&a.host, 1),
            ))))
            .await?;
        b.conn
            .expect_closed(
                crate::kit::common::reaction_wait(&ctx),
                "the connection closed (a Heartbeat naming another connection's worker refused)",
            )
            .await?;
        lost(&ctx, &b.id).await?;
        let s = state(&ctx).await?;
        let w = s.workers.iter().find(|w| w.id == a.id);
        check(
            w.is_some_and(|w| w.state == WorkerState::Alive),
            format!("worker {} ALIVE", a.id),
            format!("{:?}", w.map(|w| w.state)),
        )
    }

    async fn refused_creates_nothing(ctx: Ctx) -> Outcome {
        let mut w = worker(&ctx, "worker", 0, 0, Version::V2).await?;
        let name = format!("refused-{}", crate::kit::common::unique());
        let mut desc = app_desc(Some(1), 64, Some(0));
        desc.name = name.clone();
        let port = 40000 + (crate::kit::common::unique() % 20000) as i32;
        w.conn
            .send(&Envelope::Send(D::RegisterApplication(
                RegisterApplication::new(
                    desc,
                    sparkwire::messages::EndpointRef::at(
                        sparkwire::messages::Addr::new("127.0.0.1", port),
                        "AppClient",
                    ),
                ),
            )))
            .await?;
        w.conn
            .expect_none::<D>(
                ctx.settings.quiet,
                "no RegisteredApplication to a worker",
                |e| matches!(e, Envelope::Send(D::RegisteredApplication(_))),
            )
            .await?;
        let s = state(&ctx).await?;
        check(
            !s.active_apps
                .iter()
                .chain(s.completed_apps.iter())
                .any(|a| a.desc.name == name),
            format!("no application named {name} in the master's state"),
            "an application created by a worker's RegisterApplication",
        )
    }
}

/// The cases of issue 44's decisions about §14.3: the failure class of a strict refusal.
pub mod points {
    use crate::harness::case::run;
    use crate::harness::case::Case;
    use crate::harness::case::Target;
    use crate::harness::env::Ctx;
    use crate::harness::verdict::check;
    use crate::harness::verdict::Level;
    use crate::harness::verdict::Outcome;
    use crate::kit::common::offering_close_reason;
    use crate::kit::common::unique;
    use crate::kit::master::addr;
    use crate::kit::support::open_points::*;
    use crate::kit::versions::highest;
    use sparkwire::messages::deploy::RequestExecutors;
    use sparkwire::messages::ProfileExecutors;
    use sparkwire::wire::handshake::Role;
    use sparkwire::wire::Envelope;
    use std::time::Duration;

    /// The cases of this section, each naming its targets.
    pub fn cases(cs: &mut Vec<Case>) {
        cs.push(Case {
            id: "spec/14.3/strict-refusal-failure-class".into(),
            level: Level::Must,
            targets: vec![Target::Master],
            timeout: Duration::from_secs(10),
            quote: "SPEC §14.3, \"a strict endpoint that answers, rather than closes for, an ask \
                refused only for breaking a rule of `rules.md` uses \
                `org.apache.spark.SparkException` with a `message` naming the rule\" (and §14.2, \
                \"Unknown ids, and messages before a registration\": answered as Z1 says, or, \
                strictly, refused)"
                .into(),
            requirement: "RequestExecutors for an unknown app id, none registered: a reply, a \
                close, or a SparkException failure"
                .into(),
            body: run(strict_refusal_failure_class),
            ..Case::default()
        });
    }

    async fn strict_refusal_failure_class(ctx: Ctx) -> Outcome {
        let (mut c, taken) = offering_close_reason(
            &ctx,
            addr(&ctx)?,
            "app-client",
            &[highest(&ctx)],
            Role::AppClient,
            "suite",
        )
        .await?;
        let unknown = format!("app-20250101120000-{}", 9000 + unique() % 1000);
        c.send(&Envelope::Ask {
            id: 14,
            message: D::RequestExecutors(RequestExecutors::new(
                unknown.clone(),
                Vec::<ProfileExecutors>::new(),
            )),
        })
        .await?;
        let want = format!(
            "for RequestExecutors({unknown}) before any registration: a reply, a close (RuleViolation), or a \
                failure of class org.apache.spark.SparkException with a message"
        );
        match answer_or_close(&ctx, &mut c, 14, &want).await? {
            Answered::Reply => Ok(()),
            Answered::Failure(e) => check(
                e.class_name == "org.apache.spark.SparkException" && !e.message.is_empty(),
                &want,
                format!("a failure {}: {:?}", e.class_name, e.message),
            ),
            Answered::Closed(Some(r)) => check(
                r.kind == "RuleViolation",
                &want,
                format!("a close envelope of kind {}, then the close", r.kind),
            ),
            Answered::Closed(None) => check(
                !taken,
                &want,
                "the connection closed with no close envelope, although closeReason was agreed",
            ),
        }
    }
}
