//! `handshake/5/…`: protocol/handshake.md §5.

/// The cases about client.
pub mod client {
    use crate::harness::case::bind;
    use crate::harness::case::Case;
    use crate::harness::case::Target;
    use crate::harness::env::Ctx;
    use crate::harness::mp;
    use crate::harness::peer::frame;
    use crate::harness::verdict::Level;
    use crate::kit::endpoint::Endpoint;
    use crate::kit::support::client::*;

    /// The cases of this section for the connecting endpoint `s` (a worker, a driver's application
    /// client, an executor).
    pub fn for_client(cs: &mut Vec<Case>, s: Endpoint) {
        let name = s.name;
        cs.push(Case {
            id: "handshake/5/unknown-refusal".into(),
            level: Level::Must,
            targets: vec![Target::Worker, Target::Driver, Target::Executor],
            requirement: format!(
                "{name} treats a refusal reason it does not know as a refusal and closes the \
                connection"
            ),
            body: bind(&s, move |ctx: Ctx, s| async move {
                closes(ctx, s, |_| {
                    frame(&mp::map(&[
                        ("magic", mp::s("sparkwire")),
                        ("refused", mp::s("zzzReasonOfALaterRevision")),
                        ("message", mp::s("later")),
                        ("versions", mp::uints(&[1, 2])),
                    ]))
                })
                .await
            }),
            ..Case::default()
        });
    }
}

/// The cases about limits.
pub mod limits {
    use crate::harness::case::run;
    use crate::harness::case::Case;
    use crate::harness::case::Target;
    use crate::harness::env::Ctx;
    use crate::harness::peer::Conn;
    use crate::harness::peer::Event;
    use crate::harness::verdict::fail;
    use crate::harness::verdict::Level;
    use crate::harness::verdict::Outcome;
    use crate::kit::common::wait;
    use crate::kit::own_server::*;
    use crate::kit::support::limits::*;
    use sparkwire::wire::handshake::Role;
    use std::time::Duration;

    /// The cases of this section, each naming its targets.
    pub fn cases(cs: &mut Vec<Case>) {
        cs.push(Case {
            id: "handshake/5/0/too-many-connections".into(),
            level: Level::Must,
            targets: vec![Target::Master],
            timeout: Duration::from_secs(15),
            quote: "handshake.md §5 step 0, \"the server holds fewer connections than its limit \
                (`--max-connections`) | `tooManyConnections`\"; SPEC §8"
                .into(),
            requirement:
                "at a limit of 2, a third hello is refused tooManyConnections and closed; \
                the two sessions still served"
                    .into(),
            body: run(too_many_connections),
            ..Case::default()
        });
        cs.push(Case {
            id: "handshake/5/0/before-the-hello".into(),
            level: Level::Must,
            targets: vec![Target::Master],
            timeout: Duration::from_secs(15),
            quote: "handshake.md §5, \"Step 0 comes before everything: a server at its connection \
                limit ... answers `tooManyConnections` without looking at the hello\""
                .into(),
            requirement: "at its limit, a server answers a hello with the wrong magic \
                tooManyConnections, not badMagic"
                .into(),
            body: run(before_the_hello),
            ..Case::default()
        });
        cs.push(Case {
            id: "handshake/5/0/before-the-challenge".into(),
            level: Level::Must,
            targets: vec![Target::Master],
            timeout: Duration::from_secs(15),
            quote:
                "handshake.md §5, \"with a secret it refuses before the challenge, so a refused \
                peer learns only that the server is full\""
                    .into(),
            requirement: "at its limit, a server with a secret refuses an auth hello \
                tooManyConnections, with no challenge first"
                .into(),
            body: run(before_the_challenge),
            ..Case::default()
        });
        cs.push(Case {
            id: "handshake/5/0/refusals-bounded".into(),
            level: Level::Should,
            targets: vec![Target::Master],
            timeout: Duration::from_secs(15),
            quote: "handshake.md §5, \"refusals themselves are bounded (a server closes a \
                connection unanswered while 64 refusals are under way)\", and §9 \"Each failure \
                ends that connection only\""
                .into(),
            requirement: "at its limit with 64 refusals under way, a 65th hello is closed \
                unanswered; the session still served"
                .into(),
            body: run(refusals_bounded),
            ..Case::default()
        });
    }

    async fn too_many_connections(ctx: Ctx) -> Outcome {
        let (s, mut held) = at_limit(&ctx, false, 2).await?;
        let want = "a refusal tooManyConnections of a third hello";
        let (c, first) = first_frame(&ctx, &s, &ui_hello(), want).await?;
        too_many(&ctx, c, &first, want).await?;
        for (n, h) in held.iter_mut().enumerate() {
            served(&ctx, h, 10 + n as u64).await?;
        }
        Ok(())
    }

    async fn before_the_hello(ctx: Ctx) -> Outcome {
        let (s, _held) = at_limit(&ctx, false, 1).await?;
        let mut entries = crate::harness::mp::hello_entries(&[2], Role::Ui.name(), "over");
        entries[0] = ("magic", crate::harness::mp::s("not-sparkwire"));
        let want = "tooManyConnections (step 0), not badMagic, for a hello with the wrong magic";
        let (c, first) = first_frame(&ctx, &s, &crate::harness::mp::map(&entries), want).await?;
        too_many(&ctx, c, &first, want).await
    }

    async fn before_the_challenge(ctx: Ctx) -> Outcome {
        let (s, _held) = at_limit(&ctx, true, 1).await?;
        let mut entries = crate::harness::mp::hello_entries(&[2], Role::Ui.name(), "over");
        entries.extend(crate::harness::peer::auth_entries(s.secret.as_ref())?);
        let want = "tooManyConnections with no challenge before it";
        let (c, first) = first_frame(&ctx, &s, &crate::harness::mp::map(&entries), want).await?;
        too_many(&ctx, c, &first, want).await
    }

    async fn refusals_bounded(ctx: Ctx) -> Outcome {
        const UNDER_WAY: usize = 64;
        let (s, mut held) = at_limit(&ctx, false, 1).await?;
        // 64 hellos begun and never finished: a prefix declaring 100 bytes, and one byte.
        let mut pending = Vec::new();
        for n in 0..UNDER_WAY {
            let mut c = Conn::connect(s.addr, &format!("refusal-{n}"), Role::Ui, &ctx.log).await?;
            c.send_raw(
                &[0, 0, 0, 100, 0x85],
                "the first 5 bytes of a 100-byte hello",
            )
            .await?;
            pending.push(c);
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
        let mut c = Conn::connect(s.addr, "the-65th", Role::Ui, &ctx.log).await?;
        c.send_frame(&ui_hello()).await?;
        let want = "the 65th connection closed unanswered while 64 refusals are under way";
        match c.next_or_close(wait(&ctx)).await {
            Some(Event::Closed(_)) => {}
            None => return Err(fail(want, "the connection still open")),
            Some(Event::TooLarge(n)) => {
                return Err(fail(want, format!("a prefix declaring {n} bytes")))
            }
            Some(Event::Frame(body)) => {
                // Answered: fair only if some refusal had ended by then (its connection answered
                // or closed), leaving fewer than 64 under way.
                let mut ended = 0;
                for p in &mut pending {
                    if p.next(Duration::ZERO).await.is_some() {
                        ended += 1;
                    }
                }
                if ended == 0 {
                    return Err(fail(
                        want,
                        format!(
                            "an answer ({}) while the 64 other refusals were all still under way",
                            crate::harness::peer::describe_handshake(&body)
                        ),
                    ));
                }
            }
        }
        served(&ctx, &mut held[0], 10).await
    }
}

/// The cases about server.
pub mod server {
    use crate::harness::case::bind;
    use crate::harness::case::run;
    use crate::harness::case::Case;
    use crate::harness::case::Target;
    use crate::harness::env::Ctx;
    use crate::harness::mp;
    use crate::harness::peer::HANDSHAKE_LIMIT;
    use crate::harness::verdict::check;
    use crate::harness::verdict::fail;
    use crate::harness::verdict::Level;
    use crate::harness::verdict::Outcome;
    use crate::kit::common::wait;
    use crate::kit::endpoint::Endpoint;
    use crate::kit::support::server::*;
    use sparkwire::wire::handshake::Answer;
    use sparkwire::wire::handshake::RefusalReason;

    /// The cases of this section for the listening endpoint `s` (a master, a worker's UI port, a driver's
    /// executor port).
    pub fn for_server(cs: &mut Vec<Case>, s: &Endpoint) {
        let name = s.name;
        type Entries = Vec<(&'static str, Vec<u8>)>;
        let malformed_auth: [(&str, &str, Entries); 3] = [
            (
                "auth-without-nonce",
                "`auth` and no `nonce`",
                vec![("auth", mp::s("hmac-sha256"))],
            ),
            (
                "nonce-without-auth",
                "`nonce` and no `auth`",
                vec![("nonce", mp::bin(&[9u8; 32]))],
            ),
            (
                "other-mechanism",
                "the mechanism hmac-md5",
                vec![("auth", mp::s("hmac-md5")), ("nonce", mp::bin(&[9u8; 32]))],
            ),
        ];
        // ---- handshake: refusals ----
        cs.push(Case {
            id: "handshake/5/1/oversized-closed".into(),
            level: Level::Must,
            targets: vec![Target::Master, Target::Worker, Target::Driver],
            requirement: format!(
                "{name} closes a connection whose first prefix declares over 65536 bytes, not \
                    waiting for them"
            ),
            body: bind(s, handshake_5_1_oversized_closed),
            ..Case::default()
        });
        cs.push(Case {
            id: "handshake/5/1/oversized-refusal".into(),
            level: Level::Should,
            targets: vec![Target::Master, Target::Worker, Target::Driver],
            requirement: format!(
                "{name} answers a first prefix over 65536 \
            bytes with the refusal frameTooLarge before closing"
            ),
            body: bind(s, handshake_5_1_oversized_refusal),
            ..Case::default()
        });
        cs.push(Case {
            id: "handshake/5/2/bad-magic".into(),
            level: Level::Must,
            targets: vec![Target::Master, Target::Worker, Target::Driver],
            requirement: format!(
                "{name} refuses a hello whose magic is not \"sparkwire\" with badMagic, then closes"
            ),
            body: bind(s, handshake_5_2_bad_magic),
            ..Case::default()
        });
        cs.push(Case {
            id: "handshake/5/2/no-magic".into(),
            level: Level::Must,
            targets: vec![Target::Master, Target::Worker, Target::Driver],
            requirement: format!(
                "{name} refuses a hello map without magic with badMagic, then closes"
            ),
            body: bind(s, handshake_5_2_no_magic),
            ..Case::default()
        });
        cs.push(Case {
            id: "handshake/5/2/not-a-map".into(),
            level: Level::Must,
            targets: vec![Target::Master, Target::Worker, Target::Driver],
            requirement: format!(
                "{name} refuses a first frame that is a MessagePack array with badMagic, then \
                    closes"
            ),
            body: bind(s, handshake_5_2_not_a_map),
            ..Case::default()
        });
        cs.push(Case {
            id: "handshake/5/2/not-msgpack".into(),
            level: Level::Must,
            targets: vec![Target::Master, Target::Worker, Target::Driver],
            requirement: format!(
                "{name} refuses a first frame that is not MessagePack (0xc1) with badMagic, then \
                    closes"
            ),
            body: bind(s, handshake_5_2_not_msgpack),
            ..Case::default()
        });
        cs.push(Case {
            id: "handshake/5/2/non-string-key".into(),
            level: Level::Must,
            targets: vec![Target::Master, Target::Worker, Target::Driver],
            requirement: format!(
                "{name} refuses a hello map with an integer key with badMagic, then closes"
            ),
            body: bind(s, handshake_5_2_non_string_key),
            ..Case::default()
        });
        for (key, idx) in [("versions", 1usize), ("role", 2), ("id", 3)] {
            let server = s.clone();
            cs.push(Case {
                id: format!("handshake/5/3/missing-{key}"),
                level: Level::Must,
                targets: vec![Target::Master, Target::Worker, Target::Driver],
                requirement: format!(
                    "{name} refuses a hello without `{key}` with malformedHello, then closes"
                ),
                body: run(move |ctx| handshake_5_3_missing(ctx, server.clone(), idx)),
                ..Case::default()
            });
        }
        cs.push(Case {
            id: "handshake/5/3/versions-wrong-type".into(),
            level: Level::Must,
            targets: vec![Target::Master, Target::Worker, Target::Driver],
            requirement: format!(
                "{name} refuses a hello whose `versions` is a string with malformedHello, then closes"
            ),
            body: bind(s, handshake_5_3_versions_wrong_type),
            ..Case::default()
        });
        cs.push(Case {
            id: "handshake/5/3/role-wrong-type".into(),
            level: Level::Must,
            targets: vec![Target::Master, Target::Worker, Target::Driver],
            requirement: format!(
                "{name} refuses a hello whose `role` is an integer with malformedHello, then closes"
            ),
            body: bind(s, handshake_5_3_role_wrong_type),
            ..Case::default()
        });
        cs.push(Case {
            id: "handshake/5/6/unknown-role".into(),
            level: Level::Must,
            targets: vec![Target::Master, Target::Worker, Target::Driver],
            requirement: format!(
                "{name} refuses a role it does not know with roleNotAccepted, then closes"
            ),
            body: bind(s, handshake_5_6_unknown_role),
            ..Case::default()
        });
        cs.push(Case {
            id: "handshake/5/7/no-common-version".into(),
            level: Level::Must,
            targets: vec![Target::Master, Target::Worker, Target::Driver],
            requirement: format!(
                "{name} refuses a hello of unknown versions with noCommonVersion listing its own, \
                    then closes"
            ),
            body: bind(s, handshake_5_7_no_common_version),
            ..Case::default()
        });
        cs.push(Case {
            id: "handshake/5/3/malformed-and-unknown-role".into(),
            level: Level::Must,
            targets: vec![Target::Master, Target::Worker, Target::Driver],
            quote:
                "handshake.md §5, \"a role name the server does not know at all is refused with \
                `roleNotAccepted` already there\""
                    .into(),
            requirement: format!(
                "{name} refuses a hello of unknown role, no `id`: malformedHello or \
                    roleNotAccepted; closes"
            ),
            body: bind(s, handshake_5_3_malformed_and_unknown_role),
            ..Case::default()
        });
        cs.push(Case {
            id: "handshake/5/4/auth-presence".into(),
            level: Level::Must,
            targets: vec![Target::Master, Target::Worker, Target::Driver],
            quote: "handshake.md §5 step 4, \"a server with a secret: the hello has `auth` and \
                `nonce`; a server without one: it has neither\""
                .into(),
            requirement: format!(
                "{name} refuses an auth hello authNotConfigured, or, with a secret, a plain one \
                    authRequired"
            ),
            body: bind(s, handshake_5_4_auth_presence),
            ..Case::default()
        });
        for (what, desc, extra) in malformed_auth {
            let server = s.clone();
            cs.push(Case {
                id: format!("handshake/5/3/{what}"),
                level: Level::Must,
                targets: vec![Target::Master, Target::Worker, Target::Driver],
                quote: "handshake.md §10.2, \"A hello with only one of `auth` and `nonce`, or \
                    another mechanism than `hmac-sha256`, is `malformedHello`\""
                    .into(),
                requirement: format!(
                    "{name} refuses a hello with {desc}: malformedHello (step 3), then closes"
                ),
                body: run(move |ctx| {
                    handshake_5_3_malformed_auth(ctx, server.clone(), extra.clone())
                }),
                ..Case::default()
            });
        }
        cs.push(Case {
            id: "handshake/5/order/role-before-version".into(),
            level: Level::Must,
            targets: vec![Target::Master, Target::Worker, Target::Driver],
            requirement: format!(
                "{name} refuses a hello of unknown role and no common version: roleNotAccepted (6 \
                    before 7)"
            ),
            body: bind(s, handshake_5_order_role_before_version),
            ..Case::default()
        });
    }

    async fn handshake_5_1_oversized_closed(ctx: Ctx, s: Endpoint) -> Outcome {
        let at = s.open(ctx.clone()).await?;
        let mut c = raw(&ctx, &at, s.suite_role).await?;
        c.send_raw(
            &(HANDSHAKE_LIMIT as u32 + 1).to_be_bytes(),
            "a prefix declaring 65537 bytes, and no body",
        )
        .await?;
        c.expect_closed(wait(&ctx), "the connection closed").await
    }

    async fn handshake_5_1_oversized_refusal(ctx: Ctx, s: Endpoint) -> Outcome {
        let at = s.open(ctx.clone()).await?;
        let mut c = raw(&ctx, &at, s.suite_role).await?;
        c.send_raw(
            &(HANDSHAKE_LIMIT as u32 + 1).to_be_bytes(),
            "a prefix declaring 65537 bytes, and no body",
        )
        .await?;
        match c.read_answer(wait(&ctx)).await? {
            Answer::Refused(r) if r.reason == RefusalReason::FrameTooLarge => Ok(()),
            other => Err(fail("refused: frameTooLarge", format!("{other:?}"))),
        }
    }

    async fn handshake_5_2_bad_magic(ctx: Ctx, s: Endpoint) -> Outcome {
        let mut e = hello(&ctx, &s, &[1, 2])?;
        e[0].1 = mp::s("sparkwirf");
        refused(ctx.clone(), s, mp::map(&e), &[RefusalReason::BadMagic]).await
    }

    async fn handshake_5_2_no_magic(ctx: Ctx, s: Endpoint) -> Outcome {
        let e = hello(&ctx, &s, &[1, 2])?;
        refused(ctx.clone(), s, mp::map(&e[1..]), &[RefusalReason::BadMagic]).await
    }

    async fn handshake_5_2_not_a_map(ctx: Ctx, s: Endpoint) -> Outcome {
        refused(
            ctx.clone(),
            s,
            mp::arr(&[mp::s("magic"), mp::s("sparkwire")]),
            &[RefusalReason::BadMagic],
        )
        .await
    }

    async fn handshake_5_2_not_msgpack(ctx: Ctx, s: Endpoint) -> Outcome {
        refused(
            ctx.clone(),
            s,
            vec![0xc1, 0xc1, 0xc1],
            &[RefusalReason::BadMagic],
        )
        .await
    }

    async fn handshake_5_2_non_string_key(ctx: Ctx, s: Endpoint) -> Outcome {
        let mut body = mp::map(&hello(&ctx, &s, &[1, 2])?);
        body[0] += 1;
        body.extend_from_slice(&mp::u(7));
        body.extend_from_slice(&mp::u(1));
        refused(ctx.clone(), s, body, &[RefusalReason::BadMagic]).await
    }

    async fn handshake_5_3_versions_wrong_type(ctx: Ctx, s: Endpoint) -> Outcome {
        let mut e = hello(&ctx, &s, &[1, 2])?;
        e[1].1 = mp::s("1,2");
        refused(
            ctx.clone(),
            s,
            mp::map(&e),
            &[RefusalReason::MalformedHello],
        )
        .await
    }

    async fn handshake_5_3_role_wrong_type(ctx: Ctx, s: Endpoint) -> Outcome {
        let mut e = hello(&ctx, &s, &[1, 2])?;
        e[2].1 = mp::u(3);
        refused(
            ctx.clone(),
            s,
            mp::map(&e),
            &[RefusalReason::MalformedHello],
        )
        .await
    }

    async fn handshake_5_6_unknown_role(ctx: Ctx, s: Endpoint) -> Outcome {
        refused(
            ctx.clone(),
            s,
            mp::map(&signed(
                &ctx,
                mp::hello_entries(&[1, 2], "spark-history-server", "x"),
            )?),
            &[RefusalReason::RoleNotAccepted],
        )
        .await
    }

    async fn handshake_5_7_no_common_version(ctx: Ctx, s: Endpoint) -> Outcome {
        let at = s.open(ctx.clone()).await?;
        let mut c = raw(&ctx, &at, s.suite_role).await?;
        let body = mp::map(&hello(&ctx, &s, &[9, 10])?);
        c.send_frame(&body).await?;
        match answer(&ctx, &mut c, &body).await? {
            Answer::Refused(r) if r.reason == RefusalReason::NoCommonVersion => {
                check(
                    !r.versions.is_empty() && !r.versions.iter().any(|v| *v == 9 || *v == 10),
                    "the versions the server speaks",
                    format!("{:?}", r.versions),
                )?;
            }
            other => return Err(fail("refused: noCommonVersion", format!("{other:?}"))),
        }
        c.expect_closed(wait(&ctx), "the connection closed after the refusal")
            .await
    }

    async fn handshake_5_3_malformed_and_unknown_role(ctx: Ctx, s: Endpoint) -> Outcome {
        let mut e = signed(
            &ctx,
            mp::hello_entries(&[1, 2], "spark-history-server", "x"),
        )?;
        e.remove(3);
        refused(
            ctx.clone(),
            s,
            mp::map(&e),
            &[
                RefusalReason::MalformedHello,
                RefusalReason::RoleNotAccepted,
            ],
        )
        .await
    }

    async fn handshake_5_4_auth_presence(ctx: Ctx, s: Endpoint) -> Outcome {
        let body = if ctx.settings.secret.is_some() {
            mp::map(&mp::hello_entries(&[1, 2], s.suite_role.name(), "no-auth"))
        } else {
            let mut e = mp::hello_entries(&[1, 2], s.suite_role.name(), "auth");
            e.push(("auth", mp::s("hmac-sha256")));
            e.push(("nonce", mp::bin(&[7u8; 32])));
            mp::map(&e)
        };
        let reason = if ctx.settings.secret.is_some() {
            RefusalReason::AuthRequired
        } else {
            RefusalReason::AuthNotConfigured
        };
        refused(ctx.clone(), s, body, &[reason]).await
    }

    async fn handshake_5_order_role_before_version(ctx: Ctx, s: Endpoint) -> Outcome {
        refused(
            ctx.clone(),
            s,
            mp::map(&signed(
                &ctx,
                mp::hello_entries(&[9], "spark-history-server", "x"),
            )?),
            &[RefusalReason::RoleNotAccepted],
        )
        .await
    }

    async fn handshake_5_3_missing(ctx: Ctx, s: Endpoint, idx: usize) -> Outcome {
        let mut e = hello(&ctx, &s, &[1, 2])?;
        e.remove(idx);
        refused(
            ctx.clone(),
            s,
            mp::map(&e),
            &[RefusalReason::MalformedHello],
        )
        .await
    }

    async fn handshake_5_3_malformed_auth(
        ctx: Ctx,
        s: Endpoint,
        extra: Vec<(&'static str, Vec<u8>)>,
    ) -> Outcome {
        let mut e = mp::hello_entries(&[1, 2], s.suite_role.name(), "auth");
        e.extend(extra);
        refused(
            ctx.clone(),
            s,
            mp::map(&e),
            &[RefusalReason::MalformedHello],
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
    use crate::harness::verdict::Level;
    use crate::harness::verdict::Outcome;
    use crate::kit::support::open_points::*;
    use sparkwire::wire::handshake::CLOSE_REASON;

    /// The cases of this section, each naming its targets.
    pub fn cases(cs: &mut Vec<Case>) {
        cs.push(Case {
            id: "handshake/5/3/features-checked-first".into(),
            level: Level::Must,
            targets: vec![Target::Master],
            quote:
                "handshake.md §5, \"`features` (§12) is checked at step 3 ...: a `features` key \
                that is not an array of `str` is `malformedHello` there (after the magic, before \
                authentication)\""
                    .into(),
            requirement: "a hello whose features is a string, with version 1000 only and no auth, \
                is refused malformedHello"
                .into(),
            body: run(features_checked_first),
            ..Case::default()
        });
    }

    async fn features_checked_first(ctx: Ctx) -> Outcome {
        refused_malformed(&ctx, mp::s(CLOSE_REASON), "the string \"closeReason\"").await
    }
}
