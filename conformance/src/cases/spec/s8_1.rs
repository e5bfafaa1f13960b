//! `spec/8.1/…`: SPEC §8.1 (protocol/SPEC.md).

/// The cases about client.
pub mod client {
    use crate::harness::case::bind;
    use crate::harness::case::Case;
    use crate::harness::case::Target;
    use crate::harness::env::Ctx;
    use crate::harness::mp;
    use crate::harness::peer::frame;
    use crate::harness::peer::Event;
    use crate::harness::verdict::check;
    use crate::harness::verdict::fail;
    use crate::harness::verdict::Failure;
    use crate::harness::verdict::Level;
    use crate::harness::verdict::Outcome;
    use crate::kit::common::close_of;
    use crate::kit::common::closed_without_envelope;
    use crate::kit::common::wait;
    use crate::kit::endpoint::Endpoint;
    use crate::kit::support::client::*;
    use sparkwire::messages::Version;
    use sparkwire::wire::handshake::Role;
    use sparkwire::wire::handshake::CLOSE_REASON;

    type D = sparkwire::messages::DeployMessage;

    /// The cases of this section for the connecting endpoint `s` (a worker, a driver's application
    /// client, an executor).
    pub fn for_client(cs: &mut Vec<Case>, s: Endpoint) {
        let name = s.name;
        cs.push(Case {
            id: "spec/8.1/client-close-reason".into(),
            level: Level::Must,
            targets: vec![Target::Worker, Target::Driver, Target::Executor],
            requirement: format!(
                "{name}, closeReason taken, closes on an unknown message after an UnknownMessage \
                    close envelope"
            ),
            body: bind(&s, move |ctx: Ctx, s| async move {
                let (_run, mut c) = s.start(ctx.clone()).await?;
                let (h, _) = hello(&ctx, &mut c).await?;
                if !h.offers(CLOSE_REASON) {
                    return Err(Failure::Skipped(
                        "the endpoint does not offer closeReason".into(),
                    ));
                }
                let v = best(&h);
                let mut answer = accepted_entries(v, s.suite_role.name());
                answer.push(("features", mp::arr(&[mp::s(CLOSE_REASON)])));
                c.send_raw(
                    &frame(&mp::map(&answer)),
                    "the suite's answer, taking closeReason",
                )
                .await?;
                c.version = Version::from_number(v);
                let m = mp::map(&[("RegisterBlockManager", mp::map(&[]))]);
                c.send_frame(&mp::arr(&[mp::u(0), m])).await?;
                let want = "a close envelope of kind UnknownMessage, then the close";
                let reason = crate::kit::server::close_envelope(&ctx, &mut c, want).await?;
                check(reason.kind == "UnknownMessage", want, format!("{reason:?}"))
            }),
            ..Case::default()
        });
        cs.push(Case {
            id: "spec/8.1/client-takes-unknown-kind".into(),
            level: Level::Must,
            targets: vec![Target::Worker, Target::Driver, Target::Executor],
            quote: "SPEC §8.1, \"A receiver MUST take a `kind` it does not know as it is ..., and \
                treat the close envelope as the end of the connection: it closes too, sends \
                nothing more\""
                .into(),
            requirement: format!(
                "{name}, closeReason agreed, sent a close envelope of an unknown kind, closes and \
                    sends nothing"
            ),
            body: bind(&s, move |ctx: Ctx, s| async move {
                told_to_close(
                    ctx,
                    s,
                    &[
                        ("kind", mp::s("zzzKindOfALaterRevision")),
                        ("message", mp::s("closed by the conformance suite")),
                        ("path", vec![0xc0]),
                        ("offset", vec![0xc0]),
                    ],
                )
                .await
            }),
            ..Case::default()
        });
        cs.push(Case {
            id: "spec/8.1/client-close-reason-unknown-field".into(),
            level: Level::Must,
            targets: vec![Target::Worker, Target::Driver, Target::Executor],
            quote: "SPEC §8.1, \"`reason` is the struct `CloseReason` ... a decoder skips fields \
                it does not know\""
                .into(),
            requirement: format!(
                "{name}, closeReason agreed, takes a close envelope with a later field as a close, \
                    sends nothing"
            ),
            body: bind(&s, move |ctx: Ctx, s| async move {
                told_to_close(
                    ctx,
                    s,
                    &[
                        ("kind", mp::s("Idle")),
                        ("message", mp::s("closed by the conformance suite")),
                        ("path", vec![0xc0]),
                        ("offset", vec![0xc0]),
                        ("zzzAFieldOfALaterRevision", mp::s("skipped")),
                    ],
                )
                .await
            }),
            ..Case::default()
        });
        cs.push(Case {
            id: "spec/8.1/client-no-close-envelope-unoffered".into(),
            level: Level::Must,
            targets: vec![Target::Worker, Target::Driver, Target::Executor],
            quote: "SPEC §8.1, \"Without the feature — a peer whose hello did not offer it, or a \
                server that did not take it — ... no close envelope is ever sent\""
                .into(),
            requirement: format!(
                "{name}, closeReason not taken, closes on an unknown message with no close envelope"
            ),
            body: bind(&s, move |ctx: Ctx, s| async move {
                no_close_envelope_unoffered(ctx, s).await
            }),
            ..Case::default()
        });
        cs.push(Case {
            id: "spec/8.1/client-unknown-ask-close-kind".into(),
            level: Level::Must,
            targets: vec![Target::Worker, Target::Driver, Target::Executor],
            quote: "SPEC §8.1 (`UnknownAsk`: \"a reply to an ask never made\")".into(),
            requirement: format!(
                "{name}, closeReason agreed, ignores a reply to no ask or closes with UnknownAsk \
                    (rule A2)"
            ),
            body: bind(&s, move |ctx: Ctx, s| async move {
                client_unknown_ask_close_kind(ctx, s).await
            }),
            ..Case::default()
        });
        if s.role != Role::AppClient {
            cs.push(Case {
                id: "spec/8.1/bad-reply-close-kind".into(),
                level: Level::Must,
                targets: vec![Target::Worker, Target::Executor],
                quote: "SPEC §8, \"`BadEnvelope` | not one of the four envelope forms (...); a \
                    message or reply that is not a one-entry map keyed by a string\""
                    .into(),
                requirement: format!(
                    "{name}, closeReason agreed, closes with BadEnvelope on a two-entry reply to {}",
                    if s.role == Role::Worker {
                        "its v2 ExecutorStateChanged ask"
                    } else {
                        "its first ask (RetrieveSparkAppConfig)"
                    }
                ),
                body: bind(&s, move |ctx: Ctx, s| async move {
                    bad_reply_close_kind(ctx, s).await
                }),
                ..Case::default()
            });
        }
        if s.role == Role::Worker {
            cs.push(Case {
                id: "spec/8.1/no-close-envelope-on-shutdown".into(),
                level: Level::Must,
                targets: vec![Target::Worker],
                quote: "SPEC §8.1, \"No close envelope is sent ... for an endpoint's ordinary \
                    closes (its shutdown ...)\""
                    .into(),
                requirement: format!(
                    "{name}, stopped (stdin closed) on a closeReason connection, closes it with no \
                        close envelope"
                ),
                body: bind(&s, move |ctx: Ctx, s| async move {
                    no_close_envelope_on_shutdown(ctx, s).await
                }),
                ..Case::default()
            });
        }
    }

    async fn no_close_envelope_unoffered(ctx: Ctx, s: Endpoint) -> Outcome {
        let (_run, mut c) = s.start(ctx.clone()).await?;
        let h = c.read_hello(wait(&ctx) * 3).await?;
        // Taking no feature, with a secret too (the crate's server side takes what it knows).
        crate::kit::closes::accept_with_features(
            &ctx,
            &mut c,
            &h,
            &[Version::V1, Version::V2],
            "suite",
            &[],
        )
        .await?;
        c.frame_body(wait(&ctx), "the endpoint's first envelope")
            .await?;
        let m = mp::map(&[("RegisterBlockManager", mp::map(&[]))]);
        c.send_frame(&mp::arr(&[mp::u(0), m])).await?;
        closed_without_envelope(
            &ctx,
            &mut c,
            "the connection closed with no close envelope (closeReason was not taken)",
        )
        .await
    }

    async fn no_close_envelope_on_shutdown(ctx: Ctx, s: Endpoint) -> Outcome {
        let (mut run, mut c) = taking_close_reason(&ctx, &s).await?;
        if run.process.is_none() {
            return Err(Failure::Skipped(
                "the endpoint was started by hand: the suite cannot stop it".into(),
            ));
        }
        run.stop(wait(&ctx)).await;
        closed_without_envelope(
            &ctx,
            &mut c,
            "the connection closed at the endpoint's shutdown with no close envelope",
        )
        .await
    }

    async fn bad_reply_close_kind(ctx: Ctx, s: Endpoint) -> Outcome {
        let (run, mut c, first) = taking_close_reason_first(&ctx, &s).await?;
        let id = if s.role == Role::Worker {
            // The worker asks only in version 2, ExecutorStateChanged, for an executor it launched.
            if c.version != Some(Version::V2) {
                return Err(Failure::Skipped(
                    "the worker does not speak version 2, where ExecutorStateChanged is an ask"
                        .into(),
                ));
            }
            let given = run.given;
            let mut desc = crate::kit::master::app_desc(Some(1), 64, None);
            desc.command = sparkwire::messages::Command::new(
                crate::kit::worker::allowed_exec(),
                vec!["20".into()],
                Default::default(),
                vec![],
                vec![],
                vec![],
            );
            let master_url = match ctx.log.wire() {
                crate::harness::env::Wire::Sparkwire => format!("sparkwire://{given}"),
                crate::harness::env::Wire::Spark(_) => format!("spark://{given}"),
            };
            let launch = D::LaunchExecutor(sparkwire::messages::deploy::LaunchExecutor::new(
                master_url,
                "app-20250101120000-0081".into(),
                0,
                0,
                desc,
                1,
                64,
                Default::default(),
            ));
            c.send(&sparkwire::wire::Envelope::Send(launch)).await?;
            c.expect::<D, u64>(wait(&ctx), "the ExecutorStateChanged ask", |e| match e {
                sparkwire::wire::Envelope::Ask {
                    id,
                    message: D::ExecutorStateChanged(_),
                } => Some(*id),
                _ => None,
            })
            .await?
        } else {
            ask_id(&first).ok_or_else(|| {
                fail(
                    "an ask first (RetrieveSparkAppConfig)",
                    crate::harness::peer::describe(c.family, &first, c.v()),
                )
            })?
        };
        let two = mp::map(&[("bool", vec![0xc3]), ("int", mp::u(1))]);
        c.send_frame(&mp::arr(&[mp::u(2), mp::u(id), two])).await?;
        let want = "a close envelope of kind BadEnvelope, then the close";
        let reason = crate::kit::server::close_envelope(&ctx, &mut c, want).await?;
        check(reason.kind == "BadEnvelope", want, format!("{reason:?}"))
    }

    async fn client_unknown_ask_close_kind(ctx: Ctx, s: Endpoint) -> Outcome {
        let (_run, mut c) = taking_close_reason(&ctx, &s).await?;
        c.send_frame(&mp::arr(&[
            mp::u(2),
            mp::u(424_242),
            mp::map(&[("bool", vec![0xc3])]),
        ]))
        .await?;
        let want = "the reply to an ask never made ignored (the connection open), or a close envelope of kind \
            UnknownAsk \
        (or, strictly, RuleViolation) and the close";
        let end = tokio::time::Instant::now() + ctx.settings.quiet;
        let mut last = None;
        loop {
            let left = end.saturating_duration_since(tokio::time::Instant::now());
            match c.next_or_close(left).await {
                // Still open after the quiet time: the reply was ignored.
                None => return Ok(()),
                Some(Event::Frame(b)) => last = Some(b),
                Some(Event::Closed(_)) => {
                    return match close_of(last.as_ref()) {
                        Some(r) => check(
                            matches!(r.kind.as_str(), "UnknownAsk" | "RuleViolation"),
                            want,
                            format!("{r:?}"),
                        ),
                        None => Err(fail(want, "a close with no close envelope before it")),
                    };
                }
                Some(Event::TooLarge(n)) => {
                    return Err(fail(want, format!("a frame declaring {n} bytes")))
                }
            }
        }
    }
}

/// The cases about handshake features.
pub mod handshake_features {
    use crate::harness::case::run;
    use crate::harness::case::Case;
    use crate::harness::case::Target;
    use crate::harness::env::Ctx;
    use crate::harness::peer::frame;
    use crate::harness::peer::Event;
    use crate::harness::verdict::fail;
    use crate::harness::verdict::Level;
    use crate::harness::verdict::Outcome;
    use crate::kit::common::wait;
    use crate::kit::master::open;
    use sparkwire::wire::handshake::Role;
    use std::time::Duration;

    /// The cases of this section, each naming its targets.
    pub fn cases(cs: &mut Vec<Case>) {
        cs.push(Case {
            id: "spec/8.1/no-close-envelope-unoffered".into(),
            level: Level::Must,
            targets: vec![Target::Master],
            timeout: Duration::from_secs(10),
            quote: "SPEC §8.1, \"Without the feature — a peer that did not offer it, or a server \
                that did not take it — no close envelope is sent\", and \"a newer peer sends the \
                close envelope only to a peer that asked for it\""
                .into(),
            requirement: "with no feature offered, a frame that is not MessagePack is closed with \
                no close envelope"
                .into(),
            body: run(no_close_envelope_unoffered),
            ..Case::default()
        });
    }

    async fn no_close_envelope_unoffered(ctx: Ctx) -> Outcome {
        // Conn::open offers no feature.
        let v = crate::kit::versions::highest(&ctx);
        let mut c = open(&ctx, Role::Ui, "ui", "", v).await?;
        // 0xc1: the reserved marker, never MessagePack (SPEC §2): InvalidMessagePack.
        c.send_raw(&frame(&[0xc1]), "a frame holding the reserved marker 0xc1")
            .await?;
        let want = "the connection closed with no close envelope (closeReason was not offered)";
        let deadline = tokio::time::Instant::now() + wait(&ctx);
        loop {
            let left = deadline.saturating_duration_since(tokio::time::Instant::now());
            match c.next_or_close(left).await {
                None => return Err(fail(want, "the connection still open")),
                Some(Event::Closed(_)) => return Ok(()),
                Some(Event::TooLarge(n)) => {
                    return Err(fail(want, format!("a prefix declaring {n} bytes")))
                }
                Some(Event::Frame(body)) => {
                    if body.first() == Some(&0x92) && body.get(1) == Some(&0x04) {
                        return Err(fail(
                            want,
                            format!(
                                "a close envelope: {}",
                                crate::harness::peer::describe(c.family, &body, c.v())
                            ),
                        ));
                    }
                }
            }
        }
    }
}

/// The cases about limits.
pub mod limits {
    use crate::harness::case::run;
    use crate::harness::case::Case;
    use crate::harness::case::Target;
    use crate::harness::env::Ctx;
    use crate::harness::verdict::check;
    use crate::harness::verdict::Failure;
    use crate::harness::verdict::Level;
    use crate::harness::verdict::Outcome;
    use crate::kit::master::addr;
    use sparkwire::messages::Version;
    use sparkwire::wire::handshake::Role;
    use std::time::Duration;

    /// The cases of this section, each naming its targets.
    pub fn cases(cs: &mut Vec<Case>) {
        cs.push(Case {
            id: "spec/8.1/close-reason-frame-too-large".into(),
            level: Level::Must,
            targets: vec![Target::Master],
            timeout: Duration::from_secs(15),
            quote: "SPEC §8.1, \"an endpoint that closes the connection for one of the reasons \
                below MUST first send a close envelope\" (`FrameTooLarge`)"
                .into(),
            requirement:
                "closeReason taken, a prefix declaring 4294967295 bytes is closed after a \
                FrameTooLarge close envelope"
                    .into(),
            body: run(close_reason_frame_too_large),
            ..Case::default()
        });
    }

    async fn close_reason_frame_too_large(ctx: Ctx) -> Outcome {
        let (mut c, taken) = crate::kit::common::offering_close_reason(
            &ctx,
            addr(&ctx)?,
            "ui",
            &[Version::V1, Version::V2],
            Role::Ui,
            "suite",
        )
        .await?;
        if !taken {
            return Err(Failure::Skipped(
                "the endpoint did not take closeReason (optional, handshake.md §12)".into(),
            ));
        }
        c.send_raw(
            &u32::MAX.to_be_bytes(),
            "a prefix declaring 4294967295 bytes",
        )
        .await?;
        let want = "a close envelope of kind FrameTooLarge, then the close";
        let reason = crate::kit::server::close_envelope(&ctx, &mut c, want).await?;
        check(
            reason.kind == "FrameTooLarge",
            want,
            format!("a close envelope of kind {}", reason.kind),
        )
    }
}

/// The cases about server.
pub mod server {
    use crate::harness::case::bind;
    use crate::harness::case::Case;
    use crate::harness::case::Target;
    use crate::harness::env::Ctx;
    use crate::harness::mp;
    use crate::harness::verdict::check;
    use crate::harness::verdict::Failure;
    use crate::harness::verdict::Level;
    use crate::harness::verdict::Outcome;
    use crate::kit::endpoint::Endpoint;
    use crate::kit::server::*;
    use crate::kit::support::server::*;

    /// The cases of this section for the listening endpoint `s` (a master, a worker's UI port, a driver's
    /// executor port).
    pub fn for_server(cs: &mut Vec<Case>, s: &Endpoint) {
        let name = s.name;
        cs.push(Case {
            id: "spec/8.1/close-reason-decoding".into(),
            level: Level::Must,
            targets: vec![Target::Master, Target::Worker, Target::Driver],
            requirement: format!(
                "{name}, closeReason taken, closes for a mistyped field after InvalidFields, path \
                    and offset"
            ),
            body: bind(s, spec_8_1_close_reason_decoding),
            ..Case::default()
        });
        cs.push(Case {
            id: "spec/8.1/close-reason-refusal".into(),
            level: Level::Must,
            targets: vec![Target::Master, Target::Worker, Target::Driver],
            quote: "SPEC §14.3".into(),
            requirement: format!(
                "{name}, closeReason taken, closes for an off-route send after NotOnRoute (or \
                    RuleViolation)"
            ),
            body: bind(s, spec_8_1_close_reason_refusal),
            ..Case::default()
        });
    }

    async fn spec_8_1_close_reason_decoding(ctx: Ctx, s: Endpoint) -> Outcome {
        let at = s.open(ctx.clone()).await?;
        let Some(mut c) = session_offering_close_reason(&ctx, &s, &at).await? else {
            return Err(Failure::Skipped(
                "the endpoint does not take closeReason".into(),
            ));
        };
        let fields = (s.messages().bad_fields.1)();
        let field = fields.first().map_or("", |(name, _)| *name);
        let m = mp::map(&[(s.messages().bad_fields.0, mp::map(&fields))]);
        c.send_frame(&as_its_kind(s.messages().bad_fields.0, m))
            .await?;
        let want = format!("a close envelope of kind InvalidFields at {field}, then the close");
        let reason = close_envelope(&ctx, &mut c, &want).await?;
        check(
            reason.kind == "InvalidFields"
                && reason.path.as_deref().is_some_and(|p| p.contains(field))
                && reason.offset.is_some(),
            want,
            format!("{reason:?}"),
        )
    }

    async fn spec_8_1_close_reason_refusal(ctx: Ctx, s: Endpoint) -> Outcome {
        let at = s.open(ctx.clone()).await?;
        let Some(mut c) = session_offering_close_reason(&ctx, &s, &at).await? else {
            return Err(Failure::Skipped(
                "the endpoint does not take closeReason".into(),
            ));
        };
        let m = mp::map(&[(
            s.messages().off_route.0,
            mp::map(&(s.messages().off_route.1)()),
        )]);
        c.send_frame(&mp::arr(&[mp::u(0), m])).await?;
        let want = format!(
            "a close envelope of kind NotOnRoute or RuleViolation after a {} from a {}",
            s.messages().off_route.0,
            s.suite_role.name()
        );
        let reason = close_envelope(&ctx, &mut c, &want).await?;
        check(
            matches!(reason.kind.as_str(), "NotOnRoute" | "RuleViolation")
                && !reason.message.is_empty(),
            want,
            format!("{reason:?}"),
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
    use crate::harness::verdict::Failure;
    use crate::harness::verdict::Level;
    use crate::harness::verdict::Outcome;
    use crate::kit::common::wait;
    use crate::kit::master::addr;
    use crate::kit::master::register_worker_msg;
    use crate::kit::master::worker;
    use crate::kit::master::worker_ref;
    use sparkwire::messages::deploy::*;
    use sparkwire::messages::DeployMessage;
    use sparkwire::messages::Version;
    use sparkwire::wire::handshake::Role;
    use sparkwire::wire::Envelope;
    use std::time::Duration;

    type D = DeployMessage;

    /// The cases of this section, each naming its targets.
    pub fn cases(cs: &mut Vec<Case>) {
        cs.push(Case {
            id: "spec/8.1/not-owner-close".into(),
            level: Level::Must,
            targets: vec![Target::Master],
            timeout: Duration::from_secs(10),
            quote: "SPEC §8.1, \"`NotOwner` | a one-way message refused by §14.2's ownership\", \
                and \"an endpoint that closes the connection for one of the reasons below MUST \
                first send a close envelope\""
                .into(),
            requirement: "a Heartbeat naming another worker, closeReason taken, closes after \
                NotOwner (strict: RuleViolation)"
                .into(),
            body: run(not_owner_close),
            ..Case::default()
        });
    }

    async fn not_owner_close(ctx: Ctx) -> Outcome {
        let a = worker(&ctx, "worker-a", 0, 0, Version::V2).await?;
        let n = crate::kit::common::unique();
        let port = 20000 + (n % 40000) as i32;
        let id = format!("worker-20250101120000-127.0.0.1-{port}-{n}");
        let (mut b, taken) = crate::kit::common::offering_close_reason(
            &ctx,
            addr(&ctx)?,
            "worker-b",
            &[Version::V2],
            Role::Worker,
            id.clone(),
        )
        .await?;
        if !taken {
            return Err(Failure::Skipped(
                "the master does not take closeReason".into(),
            ));
        }
        b.send(&Envelope::Send(register_worker_msg(
            &id,
            "127.0.0.1",
            port,
            0,
            0,
        )))
        .await?;
        b.expect::<D, ()>(wait(&ctx), "RegisteredWorker", |e| {
            matches!(e, Envelope::Send(D::RegisteredWorker(_))).then_some(())
        })
        .await?;
        b.send(&Envelope::Send(D::Heartbeat(Heartbeat::new(
            a.id.clone(),
            worker_ref(&a.host, 1),
        ))))
        .await?;
        let want =
            "a close envelope of kind NotOwner (or, strictly, RuleViolation), then the close";
        let reason = crate::kit::server::close_envelope(&ctx, &mut b, want).await?;
        check(
            reason.kind == "NotOwner" || reason.kind == "RuleViolation",
            want,
            format!("{reason:?}"),
        )
    }
}

/// The cases about closes.
pub mod closes {
    use crate::harness::case::bind;
    use crate::harness::case::run;
    use crate::harness::case::Case;
    use crate::harness::case::Target;
    use crate::harness::env::Ctx;
    use crate::harness::mp;
    use crate::harness::peer::frame;
    use crate::harness::verdict::check;
    use crate::harness::verdict::fail;
    use crate::harness::verdict::Failure;
    use crate::harness::verdict::Level;
    use crate::harness::verdict::Outcome;
    use crate::kit::common::close_of;
    use crate::kit::common::closed_without_envelope;
    use crate::kit::common::wait;
    use crate::kit::endpoint::Endpoint;
    use crate::kit::replay::slug;
    use crate::kit::server::close_envelope;
    use crate::kit::support::close_kinds::*;
    use crate::kit::versions::highest;
    use sparkwire::messages::coarse::LaunchedExecutor;
    use sparkwire::messages::coarse::StopExecutor;
    use sparkwire::messages::coarse::TaskThreadDump;
    use sparkwire::messages::CoarseMessage;
    use sparkwire::messages::Version;
    use sparkwire::wire::handshake::Role;
    use sparkwire::wire::Envelope;
    use sparkwire::wire::Reply;
    use std::time::Duration;

    type C = CoarseMessage;

    /// The cases of this section, each naming its targets.
    pub fn cases(cs: &mut Vec<Case>) {
        // The driver runs its job, then gives its executors a few seconds to go before it exits.
        cs.push(Case {
            id: "spec/8.1/driver/no-close-envelope-at-exit".into(),
            level: Level::Must,
            targets: vec![Target::Driver],
            timeout: Duration::from_secs(15),
            quote: "SPEC §8.1, \"No close envelope is sent ... for an endpoint's ordinary closes \
                (its shutdown, a connection it no longer needs)\""
                .into(),
            requirement: "a driver at its job's end sends StopExecutor and closes with no close \
                envelope"
                .into(),
            body: run(driver_no_close_envelope_at_exit),
            ..Case::default()
        });
        cs.push(Case {
            id: "spec/8.1/executor/refused-ask-failure".into(),
            level: Level::Must,
            targets: vec![Target::Executor],
            quote: "SPEC §8, \"An ask that cannot be answered is answered with a failure envelope \
                rather than left pending\", §8.1 and §14.3, \"A refused ask is answered with a \
                failure envelope; the connection stays open. The failure's `className` is \
                `org.apache.spark.SparkException` for a message off its route\""
                .into(),
            requirement: "the executor fails a RequestExecutors ask with that className, then \
                answers TaskThreadDump"
                .into(),
            body: run(executor_refused_ask_failure),
            ..Case::default()
        });
        cs.push(Case {
            id: "spec/8.1/executor/no-close-envelope-on-stop".into(),
            level: Level::Must,
            targets: vec![Target::Executor],
            quote: "SPEC §8.1, \"No close envelope is sent ... for an endpoint's ordinary closes \
                (its shutdown ...)\""
                .into(),
            requirement: "an executor told StopExecutor, on a connection that agreed on \
                closeReason, closes it with no close envelope"
                .into(),
            body: run(executor_no_close_envelope_on_stop),
            ..Case::default()
        });
        for (name, frame, version, kind) in precedence_vectors() {
            let id = format!("spec/8.1/executor/close-kind/{}", slug(&name));
            let quote = format!(
                "SPEC §8.1, \"the kind is the first that applies, §11.2\", and §11.2, \"A decoder reads a \
                    frame in this order and reports the first fault it meets\"; decoder.json, \"{name}\""
            );
            let requirement = format!(
                "the executor, closeReason agreed at version {}, refuses this vector with a {kind} close envelope",
                version.number()
            );
            cs.push(Case {
                id,
                level: Level::Must,
                targets: vec![Target::Executor],
                quote,
                requirement,
                body: run(move |ctx: Ctx| {
                    let (frame, kind) = (frame.clone(), kind.clone());
                    async move { executor_close_kind(ctx, frame, version, kind).await }
                }),
                ..Case::default()
            });
        }
    }

    /// The cases of this section for `s`, an endpoint that serves the suite's connections.
    pub(crate) fn for_served(cs: &mut Vec<Case>, s: Endpoint) {
        let name = s.name;
        cs.push(Case {
            id: "spec/8.1/refused-ask-failure".into(),
            level: Level::Must,
            targets: vec![Target::Master, Target::Worker, Target::Driver],
            timeout: Duration::from_secs(10),
            quote: "SPEC §8, \"An ask that cannot be answered is answered with a failure envelope \
                rather than left pending\", §8.1, \"A refused **ask** is answered with a failure, \
                not a close\", and §14.3, \"The failure's `className` is \
                `org.apache.spark.SparkException` for a message off its route\"; §8.1, \
                `RuleViolation`, \"a message refused by an endpoint that validates its connections \
                against `rules.md` (strict mode)\""
                .into(),
            requirement: format!(
                "{name} fails the off-route ask {} (that className) and serves on",
                s.messages().refused
            ),
            body: bind(&s, refused_ask_failure),
            ..Case::default()
        });
        cs.push(Case {
            id: "spec/8.1/takes-unknown-kind".into(),
            level: Level::Must,
            targets: vec![Target::Master, Target::Worker, Target::Driver],
            timeout: Duration::from_secs(10),
            quote: "SPEC §8.1, \"A receiver MUST take a `kind` it does not know as it is ..., and \
                treat the close envelope as the end of the connection: it closes too, sends \
                nothing more\""
                .into(),
            requirement: format!(
                "{name}, closeReason agreed, sent a close of unknown kind and later field, closes \
                    silently"
            ),
            body: bind(&s, takes_unknown_kind),
            ..Case::default()
        });
        cs.push(Case {
            id: "spec/8.1/unknown-ask-close-kind".into(),
            level: Level::Must,
            targets: vec![Target::Master, Target::Worker, Target::Driver],
            timeout: Duration::from_secs(10),
            quote: "SPEC §8.1 (`UnknownAsk`: \"a reply to an ask never made\")".into(),
            requirement: format!(
                "{name}, closeReason agreed, ignores a reply to no ask or closes with UnknownAsk \
                    (rule A2)"
            ),
            body: bind(&s, unknown_ask_close_kind),
            ..Case::default()
        });
        cs.push(Case {
            id: "spec/8.1/duplicate-ask-close-kind".into(),
            level: Level::Must,
            targets: vec![Target::Master, Target::Worker, Target::Driver],
            timeout: Duration::from_secs(10),
            quote: "SPEC §8.1 (`DuplicateAsk`: \"an ask reusing the id of one still pending\")"
                .into(),
            requirement: format!(
                "{name}, closeReason agreed, answers two asks of one id or closes with \
                    DuplicateAsk (rule A1)"
            ),
            body: bind(&s, duplicate_ask_close_kind),
            ..Case::default()
        });
        cs.push(Case {
            id: "spec/8.1/close-offset".into(),
            level: Level::Must,
            targets: vec![Target::Master, Target::Worker, Target::Driver],
            timeout: Duration::from_secs(10),
            quote: "SPEC §8.1, `offset`: \"the offset, in the offending frame's body ..., of the \
                first byte of the offending item (§8.2)\""
                .into(),
            requirement: format!(
                "{name} closes for the integer 5 where a string belongs: InvalidFields at that \
                    byte's offset"
            ),
            body: bind(&s, close_offset),
            ..Case::default()
        });
        for k in KINDS.iter().copied() {
            let quote = format!(
                "SPEC §8.1, \"`{}` ... | a frame that could not be decoded (§8; the kind is the first that \
                    applies, §11.2)\"",
                k.kind
            );
            let requirement = format!(
                "closeReason agreed, {} ends the connection with a {} close envelope",
                k.what, k.kind
            );
            let kind = k;
            let s = s.clone();
            cs.push(Case {
                id: format!("spec/8.1/close-kind/{}", k.slug),
                level: Level::Must,
                targets: vec![Target::Master, Target::Worker, Target::Driver],
                timeout: Duration::from_secs(10),
                quote,
                requirement,
                body: run(move |ctx: Ctx| close_kind(ctx, s.clone(), kind)),
                ..Case::default()
            });
        }
    }

    /// The close envelope `last` holds, if it is one.
    async fn refused_ask_failure(ctx: Ctx, s: Endpoint) -> Outcome {
        let at = s.open(ctx.clone()).await?;
        let v = highest(&ctx);
        let mut c = taking_close_reason(&ctx, &s, &at, v).await?;
        c.send_frame(&sample_ask(s.family, s.messages().refused, 41, v)?)
            .await?;
        let want = format!(
        "a failure for ask 41 ({} from a {}) with className {OFF_ROUTE_CLASS} and a message, the connection open",
        s.messages().refused,
        s.suite_role.name()
    );
        match answer_to(&ctx, &mut c, 41, &want).await? {
            Answered::Failure(e) => {
                check(
                    e.class_name == OFF_ROUTE_CLASS && !e.message.is_empty(),
                    &want,
                    format!("a failure {} / {:?}", e.class_name, e.message),
                )?;
                let probe = mp::arr(&[
                    mp::u(1),
                    mp::u(42),
                    mp::map(&[(s.messages().probe.0, mp::map(&(s.messages().probe.1)()))]),
                ]);
                c.send_frame(&probe).await?;
                let next = format!(
                    "a reply to {} (ask 42) after the failure",
                    s.messages().probe.0
                );
                match answer_to(&ctx, &mut c, 42, &next).await? {
                    Answered::Reply => Ok(()),
                    Answered::Failure(e) => Err(fail(next, format!("a failure: {}", e.message))),
                    Answered::Closed(_) => Err(fail(next, "the connection closed")),
                }
            }
            Answered::Reply => Err(fail(want, "a reply")),
            Answered::Closed(last) => match close_of(last.as_ref()) {
                Some(r) if r.kind == "RuleViolation" => Ok(()),
                Some(r) => Err(fail(
                    want,
                    format!("a close envelope {r:?}, then the close"),
                )),
                None => Err(fail(want, "the connection closed, with no failure")),
            },
        }
    }

    async fn takes_unknown_kind(ctx: Ctx, s: Endpoint) -> Outcome {
        let at = s.open(ctx.clone()).await?;
        let mut c = taking_close_reason(&ctx, &s, &at, highest(&ctx)).await?;
        c.send_frame(&mp::arr(&[
            mp::u(4),
            mp::map(&[
                ("kind", mp::s("zzzKindOfALaterRevision")),
                ("message", mp::s("closed by the conformance suite")),
                ("path", vec![0xc0]),
                ("offset", vec![0xc0]),
                ("zzzAFieldOfALaterRevision", mp::s("skipped")),
            ]),
        ]))
        .await?;
        c.expect_closed_silently(
            wait(&ctx),
            "the endpoint closes the connection, sending nothing more",
        )
        .await
    }

    async fn unknown_ask_close_kind(ctx: Ctx, s: Endpoint) -> Outcome {
        let at = s.open(ctx.clone()).await?;
        let mut c = taking_close_reason(&ctx, &s, &at, highest(&ctx)).await?;
        c.send_frame(&mp::arr(&[
            mp::u(2),
            mp::u(424_242),
            mp::map(&[("bool", vec![0xc3])]),
        ]))
        .await?;
        let probe = mp::arr(&[
            mp::u(1),
            mp::u(6),
            mp::map(&[(s.messages().probe.0, mp::map(&(s.messages().probe.1)()))]),
        ]);
        c.send_frame(&probe).await?;
        let want = "the reply to ask 6 (the unknown reply ignored), or a close envelope of kind UnknownAsk (or, \
            strictly, \
        RuleViolation) and the close";
        match answer_to(&ctx, &mut c, 6, want).await? {
            Answered::Reply => Ok(()),
            Answered::Failure(e) => Err(fail(want, format!("a failure for ask 6: {}", e.message))),
            Answered::Closed(last) => match close_of(last.as_ref()) {
                Some(r) => check(
                    matches!(r.kind.as_str(), "UnknownAsk" | "RuleViolation"),
                    want,
                    format!("{r:?}"),
                ),
                None => Err(fail(want, "a close with no close envelope before it")),
            },
        }
    }

    async fn duplicate_ask_close_kind(ctx: Ctx, s: Endpoint) -> Outcome {
        let at = s.open(ctx.clone()).await?;
        let mut c = taking_close_reason(&ctx, &s, &at, highest(&ctx)).await?;
        let probe = frame(&mp::arr(&[
            mp::u(1),
            mp::u(7),
            mp::map(&[(s.messages().probe.0, mp::map(&(s.messages().probe.1)()))]),
        ]));
        let mut twice = probe.clone();
        twice.extend_from_slice(&probe);
        c.send_raw(&twice, "two asks with id 7 in one write")
            .await?;
        let want = "replies to ask 7, or a close envelope of kind DuplicateAsk (or, strictly, RuleViolation) and the \
        close (SPEC §8.1)";
        // Each ask may be answered (the first one before the second was read), or the second found
        // a duplicate: only a close must name DuplicateAsk.
        for round in 0..2 {
            match answer_to(&ctx, &mut c, 7, want).await {
                Ok(Answered::Reply) => continue,
                Ok(Answered::Failure(_)) => continue,
                // Nothing at all for the first: the ask was left pending.
                Err(e) if round == 0 => return Err(e),
                Ok(Answered::Closed(last)) => {
                    return match close_of(last.as_ref()) {
                        Some(r) => check(
                            matches!(r.kind.as_str(), "DuplicateAsk" | "RuleViolation"),
                            want,
                            format!("{r:?}"),
                        ),
                        None => Err(fail(want, "a close with no close envelope before it")),
                    }
                }
                // One answer and nothing more: the duplicate was dropped, which the sentence leaves
                // open (it names the kind of a close only).
                Err(_) => return Ok(()),
            }
        }
        Ok(())
    }

    async fn close_offset(ctx: Ctx, s: Endpoint) -> Outcome {
        let at = s.open(ctx.clone()).await?;
        let v = highest(&ctx);
        let mut c = taking_close_reason(&ctx, &s, &at, v).await?;
        let (body, first, offset) = offset_frame(&s)?;
        c.send_frame(&body).await?;
        let want =
            format!("a close envelope of kind InvalidFields at {first} with offset {offset}");
        let reason = close_envelope(&ctx, &mut c, &want).await?;
        check(
            reason.kind == "InvalidFields" && reason.offset == Some(offset),
            want,
            format!("{reason:?}"),
        )
    }

    async fn close_kind(ctx: Ctx, s: Endpoint, k: Kind) -> Outcome {
        let at = s.open(ctx.clone()).await?;
        let v = if k.version == Version::V1 {
            Version::V1
        } else {
            highest(&ctx)
        };
        let mut c = taking_close_reason(&ctx, &s, &at, v).await?;
        c.send_raw(&frame(&(k.body)(&s)), k.what).await?;
        let want = format!("a close envelope of kind {}, then the close", k.kind);
        let reason = close_envelope(&ctx, &mut c, &want).await?;
        check(reason.kind == k.kind, want, format!("{reason:?}"))
    }

    async fn executor_refused_ask_failure(ctx: Ctx) -> Outcome {
        let (_run, mut c) = executor(&ctx, Version::V2).await?;
        c.send_frame(&sample_ask("coarse", "RequestExecutors", 81, Version::V2)?)
            .await?;
        let want = format!(
        "a failure for ask 81 (RequestExecutors from its driver) with className {OFF_ROUTE_CLASS} and a message"
    );
        match answer_to(&ctx, &mut c, 81, &want).await? {
            Answered::Failure(e) => check(
                e.class_name == OFF_ROUTE_CLASS && !e.message.is_empty(),
                &want,
                format!("a failure {} / {:?}", e.class_name, e.message),
            )?,
            Answered::Reply => return Err(fail(want, "a reply")),
            Answered::Closed(last) => {
                return Err(fail(
                    want,
                    match close_of(last.as_ref()) {
                        Some(r) => format!("a close envelope {r:?}, then the close"),
                        None => "the connection closed".into(),
                    },
                ))
            }
        }
        c.send(&Envelope::Ask {
            id: 82,
            message: C::TaskThreadDump(TaskThreadDump::new(99)),
        })
        .await?;
        let next = "a reply to TaskThreadDump (ask 82) after the failure";
        match answer_to(&ctx, &mut c, 82, next).await? {
            Answered::Reply => Ok(()),
            Answered::Failure(e) => Err(fail(next, format!("a failure: {}", e.message))),
            Answered::Closed(_) => Err(fail(next, "the connection closed")),
        }
    }

    async fn executor_no_close_envelope_on_stop(ctx: Ctx) -> Outcome {
        let (_run, mut c) = executor(&ctx, Version::V2).await?;
        c.send(&Envelope::Send(C::StopExecutor(StopExecutor::new())))
            .await?;
        closed_without_envelope(&ctx, &mut c, "the connection closed with no close envelope").await
    }

    async fn executor_close_kind(
        ctx: Ctx,
        frame: Vec<u8>,
        version: Version,
        kind: String,
    ) -> Outcome {
        let (_run, mut c) = executor(&ctx, version).await?;
        c.send_raw(&frame, "a decoder.json vector").await?;
        let want = format!("a close envelope of kind {kind}, then the close");
        let reason = close_envelope(&ctx, &mut c, &want).await?;
        check(reason.kind == kind, want, format!("{reason:?}"))
    }

    // ---- the driver ----

    async fn driver_no_close_envelope_at_exit(ctx: Ctx) -> Outcome {
        let d = crate::kit::driver::registered(&ctx, crate::kit::driver::SMALL).await?;
        let id = "1";
        let (conn, taken) = crate::kit::common::offering_close_reason(
            &ctx,
            d.driver_addr,
            "executor-1",
            &[Version::V2],
            Role::Executor,
            id,
        )
        .await?;
        if !taken {
            return Err(Failure::Skipped(
                "the driver does not take closeReason".into(),
            ));
        }
        let mut e = crate::kit::driver::FakeExecutor {
            conn,
            id: id.to_string(),
        };
        e.conn
            .send(&Envelope::Ask {
                id: 1,
                message: C::RegisterExecutor(sparkwire::messages::coarse::RegisterExecutor::new(
                    id.into(),
                    sparkwire::messages::EndpointRef::client("Executor"),
                    "127.0.0.1".into(),
                    2,
                    Default::default(),
                    Default::default(),
                    Default::default(),
                    0,
                )),
            })
            .await?;
        e.conn
            .expect::<C, ()>(wait(&ctx), "a bool reply true to RegisterExecutor", |x| {
                matches!(
                    x,
                    Envelope::Reply {
                        id: 1,
                        reply: Reply::Bool(true)
                    }
                )
                .then_some(())
            })
            .await?;
        e.conn
            .send(&Envelope::Send(C::LaunchedExecutor(LaunchedExecutor::new(
                id.into(),
            ))))
            .await?;
        // Runs the job's tasks until StopExecutor; the suite keeps its side open, so that the close
        // is the driver's, at its exit.
        loop {
            let env = e
                .conn
                .recv::<C>(wait(&ctx), "LaunchTask or StopExecutor")
                .await?;
            match env {
                Envelope::Send(C::LaunchTask(l)) => {
                    let t = sparkwire::wire::decode_task(&bytes::Bytes::copy_from_slice(
                        l.data.as_slice(),
                    ))
                    .map_err(|er| fail("a TaskDescription", er.to_string()))?;
                    e.run(&t).await?;
                }
                Envelope::Send(C::StopExecutor(_)) => break,
                _ => {}
            }
        }
        closed_without_envelope(
            &ctx,
            &mut e.conn,
            "the driver closes the executor's connection at its exit, with no close envelope",
        )
        .await
    }
}

/// The cases about points.
pub mod points {
    use crate::harness::case::run;
    use crate::harness::case::Case;
    use crate::harness::case::Target;
    use crate::harness::env::Ctx;
    use crate::harness::mp;
    use crate::harness::peer::Event;
    use crate::harness::verdict::check;
    use crate::harness::verdict::fail;
    use crate::harness::verdict::Level;
    use crate::harness::verdict::Outcome;
    use crate::kit::common::close_of;
    use crate::kit::common::reaction_wait;
    use crate::kit::server::close_envelope;
    use crate::kit::support::open_points::*;
    use crate::kit::versions::highest;
    use sparkwire::messages::deploy::RequestMasterState;
    use sparkwire::messages::DeployMessage;
    use sparkwire::wire::decode_envelope;
    use sparkwire::wire::Envelope;

    type D = DeployMessage;

    /// The cases of this section, each naming its targets.
    pub fn cases(cs: &mut Vec<Case>) {
        cs.push(Case {
            id: "spec/8.1/close-reason-not-a-map".into(),
            level: Level::Must,
            targets: vec![Target::Master],
            quote: "SPEC §8.1, \"a reason that is not a map at all (`[4, nil]`, `[4, [kind, \
                message]]`) too, with path `\"\"`\", and \"A close envelope whose reason does not \
                decode is a frame that could not be decoded like any other (§8): the receiver \
                closes the connection and, where the feature is on, sends its own close envelope \
                (`InvalidFields`) first\""
                .into(),
            requirement: "the master, sent [4, nil] or [4, [kind, message]], closes after \
                InvalidFields, path \"\" and offset 2"
                .into(),
            body: run(close_reason_not_a_map),
            ..Case::default()
        });
        cs.push(Case {
            id: "spec/8.1/close-reason-read-as-sent".into(),
            level: Level::Must,
            targets: vec![Target::Master],
            quote: "SPEC §8.1, \"A decoder does not check `kind` against the table ..., nor that \
                `path` and `offset` go with `InvalidFields` (they are read as sent whatever the \
                kind)\", and \"treat the close envelope as the end of the connection: it closes \
                too, sends nothing more\""
                .into(),
            requirement: "the master, sent a NotOnRoute close with a path and offset, closes and \
                sends nothing"
                .into(),
            body: run(close_reason_read_as_sent),
            ..Case::default()
        });
        cs.push(Case {
            id: "spec/8.1/failure-unknown-ask".into(),
            level: Level::Must,
            targets: vec![Target::Master],
            quote: "SPEC §8.1 (`UnknownAsk`: \"a reply or a failure envelope for an ask never \
                made\", and in strict mode \"a reply or failure to an ask never made A2 ... may be \
                closed with either that kind or `RuleViolation`\")"
                .into(),
            requirement: "the master, closeReason agreed, ignores a failure for no ask or closes \
                with UnknownAsk"
                .into(),
            body: run(failure_unknown_ask),
            ..Case::default()
        });
    }

    // ---- §8.1: close reasons ----

    async fn close_reason_not_a_map(ctx: Ctx) -> Outcome {
        let shapes = [
            ("[4, nil]", mp::arr(&[mp::u(4), vec![0xc0]])),
            (
                "[4, [kind, message]]",
                mp::arr(&[
                    mp::u(4),
                    mp::arr(&[mp::s("Idle"), mp::s("closed by the conformance suite")]),
                ]),
            ),
        ];
        for (what, body) in shapes {
            let mut c = ui_taking_close_reason(&ctx, highest(&ctx)).await?;
            c.send_frame(&body).await?;
            let want = format!("for {what}: a close envelope of kind InvalidFields, path \"\", offset 2, then the \
                close");
            let r = close_envelope(&ctx, &mut c, &want).await?;
            check(
                r.kind == "InvalidFields" && r.path.as_deref() == Some("") && r.offset == Some(2),
                want,
                format!("kind {}, path {:?}, offset {:?}", r.kind, r.path, r.offset),
            )?;
        }
        Ok(())
    }

    async fn close_reason_read_as_sent(ctx: Ctx) -> Outcome {
        let mut c = ui_taking_close_reason(&ctx, highest(&ctx)).await?;
        c.send_frame(&mp::arr(&[
            mp::u(4),
            mp::map(&[
                ("kind", mp::s("NotOnRoute")),
                ("message", mp::s("closed by the conformance suite")),
                ("path", mp::s("appDescription.command")),
                ("offset", mp::u(3)),
            ]),
        ]))
        .await?;
        c.expect_closed_silently(
            reaction_wait(&ctx),
            "the master closes the connection, sending nothing more (the reason read as sent)",
        )
        .await
    }

    async fn failure_unknown_ask(ctx: Ctx) -> Outcome {
        let mut c = ui_taking_close_reason(&ctx, highest(&ctx)).await?;
        c.send_frame(&mp::arr(&[
            mp::u(3),
            mp::u(525_252),
            mp::map(&[
                ("className", mp::s("org.apache.spark.SparkException")),
                (
                    "message",
                    mp::s("a failure for an ask the master never made"),
                ),
            ]),
        ]))
        .await?;
        c.send(&Envelope::Ask {
            id: 6,
            message: D::RequestMasterState(RequestMasterState::new()),
        })
        .await?;
        let want = "the reply to ask 6 (the stray failure ignored), or a close envelope of kind UnknownAsk (or, \
            strictly, \
        RuleViolation) and the close";
        let deadline = tokio::time::Instant::now() + reaction_wait(&ctx);
        let mut last = None;
        loop {
            let left = deadline.saturating_duration_since(tokio::time::Instant::now());
            match c.next_or_close(left).await {
                Some(Event::Frame(body)) => {
                    match decode_envelope::<D>(&body, c.v()) {
                        Ok(Envelope::Reply { id: 6, .. }) => return Ok(()),
                        Ok(Envelope::Failure { id: 6, error }) => {
                            return Err(fail(
                                want,
                                format!("a failure for ask 6: {}", error.message),
                            ))
                        }
                        _ => {}
                    }
                    last = Some(body);
                }
                Some(Event::Closed(_)) => {
                    return match close_of(last.as_ref()) {
                        Some(r) => check(
                            matches!(r.kind.as_str(), "UnknownAsk" | "RuleViolation"),
                            want,
                            format!("{r:?}"),
                        ),
                        None => Err(fail(want, "a close with no close envelope before it")),
                    }
                }
                Some(Event::TooLarge(n)) => {
                    return Err(fail(want, format!("a frame declaring {n} bytes")))
                }
                None => return Err(fail(want, "neither within the time allowed")),
            }
        }
    }
}
