//! The server's side of the handshake (protocol/handshake.md), the cases every listening
//! endpoint shares: acceptance and version choice, then refusals. One function per case,
//! registered in report order by [`add`].

use super::*;

/// The handshake's cases for the server `s`, in report order.
pub(super) fn add(cs: &mut Vec<Case>, s: &Server) {
    let name = s.name;
    // ---- handshake: acceptance and version choice ----
    cs.push(Case {
        id: "handshake/4/accepted".into(),
        level: Level::Must,
        targets: vec![Target::Master, Target::Worker, Target::Driver],
        requirement: format!("{name} accepts a well-formed hello of a role it takes; \
        its answer has magic, the version chosen, the versions it speaks (including that one), its role, of the \
            hello's family, and an id"),
        body: bind(s, handshake_4_accepted),
        ..Case::default()
    });
    cs.push(Case {
        id: "handshake/6/highest-version".into(),
        level: Level::Must,
        targets: vec![Target::Master, Target::Worker, Target::Driver],
        requirement: format!(
            "{name} chooses the highest version both sides speak: offered [1, 2], it chooses 2"
        ),
        body: bind(s, handshake_6_highest_version),
        ..Case::default()
    });
    cs.push(Case {
        id: "handshake/3/versions-any-order".into(),
        level: Level::Must,
        targets: vec![Target::Master, Target::Worker, Target::Driver],
        requirement: format!(
            "{name} reads the offered versions in any order: offered [2, 1], it chooses 2"
        ),
        body: bind(s, handshake_3_versions_any_order),
        ..Case::default()
    });
    cs.push(Case {
        id: "handshake/6/unknown-versions-ignored".into(),
        level: Level::Must,
        targets: vec![Target::Master, Target::Worker, Target::Driver],
        requirement: format!(
            "{name} ignores version numbers it does \
        not know: offered [7, 2, 4294967296], it chooses 2"
        ),
        body: bind(s, handshake_6_unknown_versions_ignored),
        ..Case::default()
    });
    cs.push(Case {
        id: "handshake/6/duplicate-versions-ignored".into(),
        level: Level::Must,
        targets: vec![Target::Master, Target::Worker, Target::Driver],
        requirement: format!(
            "{name} ignores duplicate version numbers: offered [2, 2, 1, 1], it chooses 2"
        ),
        body: bind(s, handshake_6_duplicate_versions_ignored),
        ..Case::default()
    });
    cs.push(Case {
        id: "handshake/6/v1-only-peer".into(),
        level: Level::Must,
        targets: vec![Target::Master, Target::Worker, Target::Driver],
        requirement: format!(
            "{name} accepts a version-1-only peer at version 1, or \
        refuses it with noCommonVersion listing versions without 1"
        ),
        body: bind(s, handshake_6_v1_only_peer),
        ..Case::default()
    });
    cs.push(Case {
        id: "handshake/6/v2-only-peer".into(),
        level: Level::Must,
        targets: vec![Target::Master, Target::Worker, Target::Driver],
        requirement: format!(
            "{name} accepts a version-2-only peer at version 2, or \
        refuses it with noCommonVersion listing versions without 2"
        ),
        body: bind(s, handshake_6_v2_only_peer),
        ..Case::default()
    });
    cs.push(Case {
        id: "handshake/3/keys-any-order".into(),
        level: Level::Must,
        targets: vec![Target::Master, Target::Worker, Target::Driver],
        requirement: format!(
            "{name} accepts the hello's keys in any order (id, role, versions, magic)"
        ),
        body: bind(s, handshake_3_keys_any_order),
        ..Case::default()
    });
    cs.push(Case {
        id: "handshake/3/unknown-keys-ignored".into(),
        level: Level::Must,
        targets: vec![Target::Master, Target::Worker, Target::Driver],
        requirement: format!("{name} ignores hello keys it does not know"),
        body: bind(s, handshake_3_unknown_keys_ignored),
        ..Case::default()
    });
    cs.push(Case {
        id: "handshake/3/empty-id".into(),
        level: Level::Must,
        targets: vec![Target::Master, Target::Worker, Target::Driver],
        requirement: format!("{name} accepts a hello whose id is empty"),
        body: bind(s, handshake_3_empty_id),
        ..Case::default()
    });
    cs.push(Case {
        id: "handshake/1/hello-in-pieces".into(),
        level: Level::Must,
        targets: vec![Target::Master, Target::Worker, Target::Driver],
        requirement: format!("{name} reads a hello that arrives in several TCP segments"),
        body: bind(s, handshake_1_hello_in_pieces),
        ..Case::default()
    });
    cs.push(Case {
        id: "handshake/1.1/limit-inclusive".into(),
        level: Level::Must,
        targets: vec![Target::Master, Target::Worker, Target::Driver],
        requirement: format!(
            "{name} accepts a hello of exactly 65536 bytes, the pre-handshake limit"
        ),
        body: bind(s, handshake_1_1_limit_inclusive),
        ..Case::default()
    });
    // ---- handshake: refusals ----
    cs.push(Case {
        id: "handshake/5/1/oversized-closed".into(),
        level: Level::Must,
        targets: vec![Target::Master, Target::Worker, Target::Driver],
        requirement: format!(
            "{name} closes a connection whose first prefix \
        declares more than 65536 bytes, without waiting for the body"
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
        id: "handshake/1.1/http-get".into(),
        level: Level::Must,
        targets: vec![Target::Master, Target::Worker, Target::Driver],
        requirement: format!(
            "{name} closes at once a connection that starts with an \
        HTTP request (its `GET ` reads as a length over 64 KiB)"
        ),
        body: bind(s, handshake_1_1_http_get),
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
        requirement: format!("{name} refuses a hello map without magic with badMagic, then closes"),
        body: bind(s, handshake_5_2_no_magic),
        ..Case::default()
    });
    cs.push(Case {
        id: "handshake/5/2/not-a-map".into(),
        level: Level::Must,
        targets: vec![Target::Master, Target::Worker, Target::Driver],
        requirement: format!(
            "{name} refuses a first frame that is a MessagePack \
        array, not a map, with badMagic, then closes"
        ),
        body: bind(s, handshake_5_2_not_a_map),
        ..Case::default()
    });
    cs.push(Case {
        id: "handshake/5/2/not-msgpack".into(),
        level: Level::Must,
        targets: vec![Target::Master, Target::Worker, Target::Driver],
        requirement: format!(
            "{name} refuses a first frame that is not MessagePack \
        (the reserved byte 0xc1) with badMagic, then closes"
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
        id: "handshake/3/duplicate-key".into(),
        level: Level::Must,
        targets: vec![Target::Master, Target::Worker, Target::Driver],
        requirement: format!(
            "{name} refuses a hello in which a key appears twice with malformedHello, then closes"
        ),
        body: bind(s, handshake_3_duplicate_key),
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
        id: "handshake/7/other-family-role".into(),
        level: Level::Must,
        targets: vec![Target::Master, Target::Worker, Target::Driver],
        requirement: format!(
            "{name} refuses a role whose family it does not \
        serve on this connection with roleNotAccepted, then closes"
        ),
        body: bind(s, handshake_7_other_family_role),
        ..Case::default()
    });
    cs.push(Case {
        id: "handshake/5/7/no-common-version".into(),
        level: Level::Must,
        targets: vec![Target::Master, Target::Worker, Target::Driver],
        requirement: format!(
            "{name} refuses a hello offering only versions \
        it does not speak with noCommonVersion listing the versions it speaks, then \
            closes"
        ),
        body: bind(s, handshake_5_7_no_common_version),
        ..Case::default()
    });
    cs.push(Case {
        id: "handshake/5/3/malformed-and-unknown-role".into(),
        level: Level::Must,
        targets: vec![Target::Master, Target::Worker, Target::Driver],
        requirement: format!("{name} refuses a hello with an \
        unknown role and no `id` at step 3, with malformedHello or roleNotAccepted (handshake.md §5: \"anything else \
            wrong with the map is step 3 (a role name the server does not know at all is refused with \
                `roleNotAccepted` already there)\"; the text orders neither), then \
                    closes"),
        body: bind(s, handshake_5_3_malformed_and_unknown_role),
        ..Case::default()
    });
    cs.push(Case {
        id: "handshake/5/4/auth-presence".into(),
        level: Level::Must,
        targets: vec![Target::Master, Target::Worker, Target::Driver],
        requirement: format!("{name} checks step 4 of handshake.md §5, \"a \
        server with a secret: the hello has `auth` and `nonce`; a server without one: it has neither\": without a \
            secret it refuses a hello asking to authenticate with authNotConfigured (§10.2), holding one it refuses a \
                hello that does not with authRequired; then it closes"),
        body: bind(s, handshake_5_4_auth_presence),
        ..Case::default()
    });
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
    for (what, desc, extra) in malformed_auth {
        let server = s.clone();
        cs.push(Case {
            id: format!("handshake/5/3/{what}"),
            level: Level::Must,
            targets: vec![Target::Master, Target::Worker, Target::Driver],
            requirement: format!("{name} refuses a hello with {desc} with \
            malformedHello (handshake.md §10.2, \"A hello with only one of `auth` and `nonce`, or another mechanism \
                than `hmac-sha256`, is `malformedHello`\"; step 3 comes before step 4), then \
                    closes"),
            body: run(move |ctx| handshake_5_3_malformed_auth(ctx, server.clone(), extra.clone())),
            ..Case::default()
        });
    }
    cs.push(Case {
        id: "handshake/5/order/role-before-version".into(),
        level: Level::Must,
        targets: vec![Target::Master, Target::Worker, Target::Driver],
        requirement: format!(
            "{name} checks in order: a hello with an \
        unknown role and no common version is roleNotAccepted (check 6 before \
            7)"
        ),
        body: bind(s, handshake_5_order_role_before_version),
        ..Case::default()
    });
    cs.push(Case {
        id: "handshake/1/trailing-bytes".into(),
        level: Level::Must,
        targets: vec![Target::Master, Target::Worker, Target::Driver],
        requirement: format!(
            "{name} refuses a hello frame with bytes after its one MessagePack value, then closes"
        ),
        body: bind(s, handshake_1_trailing_bytes),
        ..Case::default()
    });
    cs.push(Case {
        id: "handshake/2/truncated-hello".into(),
        level: Level::Must,
        targets: vec![Target::Master, Target::Worker, Target::Driver],
        requirement: format!("{name} does not accept a hello cut short by the end of the stream"),
        body: bind(s, handshake_2_truncated_hello),
        ..Case::default()
    });
    cs.push(Case {
        id: "handshake/9/others-unaffected".into(),
        level: Level::Must,
        targets: vec![Target::Master, Target::Worker, Target::Driver],
        requirement: format!(
            "a failed handshake ends only its own connection: \
        {name} goes on serving a connection opened before it"
        ),
        body: bind(s, handshake_9_others_unaffected),
        ..Case::default()
    });
}

async fn handshake_4_accepted(ctx: Ctx, s: Server) -> Outcome {
    let at = (s.open)(ctx.clone()).await?;
    let mut c = raw(&ctx, &at, s.good_role).await?;
    let body = mp::map(&hello(&ctx, &s, &[1, 2])?);
    c.send_frame(&body).await?;
    match answer(&ctx, &mut c, &body).await? {
        Answer::Accepted(a) => {
            check(
                a.versions.contains(&u64::from(a.version.number())),
                "the chosen version among the versions the server lists",
                format!("{a:?}"),
            )?;
            check(
                a.role == s.server_role,
                format!("role {}", s.server_role.name()),
                a.role.name(),
            )
        }
        Answer::Refused(r) => Err(fail(
            "an acceptance",
            format!("refused: {} ({})", r.reason, r.message),
        )),
    }
}

async fn handshake_6_highest_version(ctx: Ctx, s: Server) -> Outcome {
    accepts(ctx, s, &[1, 2]).await
}

async fn handshake_3_versions_any_order(ctx: Ctx, s: Server) -> Outcome {
    accepts(ctx, s, &[2, 1]).await
}

async fn handshake_6_unknown_versions_ignored(ctx: Ctx, s: Server) -> Outcome {
    accepts(ctx, s, &[7, 2, 4_294_967_296]).await
}

async fn handshake_6_duplicate_versions_ignored(ctx: Ctx, s: Server) -> Outcome {
    accepts(ctx, s, &[2, 2, 1, 1]).await
}

async fn handshake_6_v1_only_peer(ctx: Ctx, s: Server) -> Outcome {
    let at = (s.open)(ctx.clone()).await?;
    let mut c = raw(&ctx, &at, s.good_role).await?;
    let body = mp::map(&hello(&ctx, &s, &[1])?);
    c.send_frame(&body).await?;
    match answer(&ctx, &mut c, &body).await? {
        Answer::Accepted(a) => check(
            a.version == Version::V1,
            "version 1",
            format!("version {}", a.version.number()),
        ),
        Answer::Refused(r) => check(
            r.reason == RefusalReason::NoCommonVersion && !r.versions.contains(&1),
            "noCommonVersion with versions that lack 1",
            format!("{r:?}"),
        ),
    }
}

async fn handshake_6_v2_only_peer(ctx: Ctx, s: Server) -> Outcome {
    let at = (s.open)(ctx.clone()).await?;
    let mut c = raw(&ctx, &at, s.good_role).await?;
    let body = mp::map(&hello(&ctx, &s, &[2])?);
    c.send_frame(&body).await?;
    match answer(&ctx, &mut c, &body).await? {
        Answer::Accepted(a) => check(
            a.version == Version::V2,
            "version 2",
            format!("version {}", a.version.number()),
        ),
        Answer::Refused(r) => check(
            r.reason == RefusalReason::NoCommonVersion && !r.versions.contains(&2),
            "noCommonVersion with versions that lack 2",
            format!("{r:?}"),
        ),
    }
}

async fn handshake_3_keys_any_order(ctx: Ctx, s: Server) -> Outcome {
    let mut e = hello(&ctx, &s, &[1, 2])?;
    e.reverse();
    accepted(ctx.clone(), s, mp::map(&e), Version::V2).await
}

async fn handshake_3_unknown_keys_ignored(ctx: Ctx, s: Server) -> Outcome {
    let mut e = hello(&ctx, &s, &[1, 2])?;
    e.push(("zzzLaterRevisionKey", mp::arr(&[mp::s("x"), mp::u(1)])));
    accepted(ctx.clone(), s, mp::map(&e), Version::V2).await
}

async fn handshake_3_empty_id(ctx: Ctx, s: Server) -> Outcome {
    accepted(
        ctx.clone(),
        s.clone(),
        mp::map(&signed(
            &ctx,
            mp::hello_entries(&[1, 2], s.good_role.name(), ""),
        )?),
        Version::V2,
    )
    .await
}

async fn handshake_1_hello_in_pieces(ctx: Ctx, s: Server) -> Outcome {
    let at = (s.open)(ctx.clone()).await?;
    let mut c = raw(&ctx, &at, s.good_role).await?;
    let body = mp::map(&hello(&ctx, &s, &[1, 2])?);
    let bytes = frame(&body);
    c.send_raw(&bytes[..2], "the first 2 bytes of a hello")
        .await?;
    tokio::time::sleep(Duration::from_millis(60)).await;
    c.send_raw(&bytes[2..9], "7 more").await?;
    tokio::time::sleep(Duration::from_millis(60)).await;
    c.send_raw(&bytes[9..], "the rest").await?;
    match answer(&ctx, &mut c, &body).await? {
        Answer::Accepted(_) => Ok(()),
        Answer::Refused(r) => Err(fail("an acceptance", format!("refused: {}", r.reason))),
    }
}

async fn handshake_1_1_limit_inclusive(ctx: Ctx, s: Server) -> Outcome {
    let mut e = signed(&ctx, mp::hello_entries(&[1, 2], s.good_role.name(), ""))?;
    let base = mp::map(&e).len();
    // An id string of n bytes (str32 header: 5 bytes) makes the body exactly 65536.
    let n = 65536 - (base - 1) - 5;
    let mut id = vec![0xdb];
    id.extend_from_slice(&(n as u32).to_be_bytes());
    id.extend(std::iter::repeat_n(b'x', n));
    e[3].1 = id;
    let body = mp::map(&e);
    check(
        body.len() == 65536,
        "a 65536-byte hello",
        format!("{} bytes", body.len()),
    )?;
    accepted(ctx.clone(), s, body, Version::V2).await
}

async fn handshake_5_1_oversized_closed(ctx: Ctx, s: Server) -> Outcome {
    let at = (s.open)(ctx.clone()).await?;
    let mut c = raw(&ctx, &at, s.good_role).await?;
    c.send_raw(
        &(HANDSHAKE_LIMIT as u32 + 1).to_be_bytes(),
        "a prefix declaring 65537 bytes, and no body",
    )
    .await?;
    c.expect_closed(wait(&ctx), "the connection closed").await
}

async fn handshake_5_1_oversized_refusal(ctx: Ctx, s: Server) -> Outcome {
    let at = (s.open)(ctx.clone()).await?;
    let mut c = raw(&ctx, &at, s.good_role).await?;
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

async fn handshake_1_1_http_get(ctx: Ctx, s: Server) -> Outcome {
    let at = (s.open)(ctx.clone()).await?;
    let mut c = raw(&ctx, &at, s.good_role).await?;
    c.send_raw(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n", "an HTTP request")
        .await?;
    c.expect_closed(wait(&ctx), "the connection closed").await
}

async fn handshake_5_2_bad_magic(ctx: Ctx, s: Server) -> Outcome {
    let mut e = hello(&ctx, &s, &[1, 2])?;
    e[0].1 = mp::s("sparkwirf");
    refused(ctx.clone(), s, mp::map(&e), &[RefusalReason::BadMagic]).await
}

async fn handshake_5_2_no_magic(ctx: Ctx, s: Server) -> Outcome {
    let e = hello(&ctx, &s, &[1, 2])?;
    refused(ctx.clone(), s, mp::map(&e[1..]), &[RefusalReason::BadMagic]).await
}

async fn handshake_5_2_not_a_map(ctx: Ctx, s: Server) -> Outcome {
    refused(
        ctx.clone(),
        s,
        mp::arr(&[mp::s("magic"), mp::s("sparkwire")]),
        &[RefusalReason::BadMagic],
    )
    .await
}

async fn handshake_5_2_not_msgpack(ctx: Ctx, s: Server) -> Outcome {
    refused(
        ctx.clone(),
        s,
        vec![0xc1, 0xc1, 0xc1],
        &[RefusalReason::BadMagic],
    )
    .await
}

async fn handshake_5_2_non_string_key(ctx: Ctx, s: Server) -> Outcome {
    let mut body = mp::map(&hello(&ctx, &s, &[1, 2])?);
    body[0] += 1;
    body.extend_from_slice(&mp::u(7));
    body.extend_from_slice(&mp::u(1));
    refused(ctx.clone(), s, body, &[RefusalReason::BadMagic]).await
}

async fn handshake_5_3_versions_wrong_type(ctx: Ctx, s: Server) -> Outcome {
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

async fn handshake_5_3_role_wrong_type(ctx: Ctx, s: Server) -> Outcome {
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

async fn handshake_3_duplicate_key(ctx: Ctx, s: Server) -> Outcome {
    let mut e = hello(&ctx, &s, &[1, 2])?;
    e.push(("role", mp::s(s.good_role.name())));
    refused(
        ctx.clone(),
        s,
        mp::map(&e),
        &[RefusalReason::MalformedHello],
    )
    .await
}

async fn handshake_5_6_unknown_role(ctx: Ctx, s: Server) -> Outcome {
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

async fn handshake_7_other_family_role(ctx: Ctx, s: Server) -> Outcome {
    refused(
        ctx.clone(),
        s.clone(),
        mp::map(&signed(
            &ctx,
            mp::hello_entries(&[1, 2], s.other_family_role.name(), "x"),
        )?),
        &[RefusalReason::RoleNotAccepted],
    )
    .await
}

async fn handshake_5_7_no_common_version(ctx: Ctx, s: Server) -> Outcome {
    let at = (s.open)(ctx.clone()).await?;
    let mut c = raw(&ctx, &at, s.good_role).await?;
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

async fn handshake_5_3_malformed_and_unknown_role(ctx: Ctx, s: Server) -> Outcome {
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

async fn handshake_5_4_auth_presence(ctx: Ctx, s: Server) -> Outcome {
    let body = if ctx.settings.secret.is_some() {
        mp::map(&mp::hello_entries(&[1, 2], s.good_role.name(), "no-auth"))
    } else {
        let mut e = mp::hello_entries(&[1, 2], s.good_role.name(), "auth");
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

async fn handshake_5_order_role_before_version(ctx: Ctx, s: Server) -> Outcome {
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

async fn handshake_1_trailing_bytes(ctx: Ctx, s: Server) -> Outcome {
    let mut body = mp::map(&hello(&ctx, &s, &[1, 2])?);
    body.push(0xc0);
    refused(
        ctx,
        s,
        body,
        &[RefusalReason::BadMagic, RefusalReason::MalformedHello],
    )
    .await
}

async fn handshake_2_truncated_hello(ctx: Ctx, s: Server) -> Outcome {
    let at = (s.open)(ctx.clone()).await?;
    let mut c = raw(&ctx, &at, s.good_role).await?;
    let bytes = frame(&mp::map(&hello(&ctx, &s, &[1, 2])?));
    c.send_raw(
        &bytes[..bytes.len() - 3],
        "a hello missing its last 3 bytes",
    )
    .await?;
    c.shutdown_write().await;
    match c.next_or_close(wait(&ctx)).await {
        Some(Event::Closed(_)) => Ok(()),
        Some(Event::Frame(b)) => match sparkwire::wire::handshake::decode_answer(&b) {
            Ok(Answer::Accepted(_)) => Err(fail("no acceptance", "accepted")),
            _ => c.expect_closed(wait(&ctx), "the connection closed").await,
        },
        Some(Event::TooLarge(n)) => Err(fail(
            "the connection closed",
            format!("a prefix of {n} bytes"),
        )),
        None => Err(fail("the connection closed", "still open")),
    }
}

async fn handshake_9_others_unaffected(ctx: Ctx, s: Server) -> Outcome {
    let at = (s.open)(ctx.clone()).await?;
    let mut good = session(&ctx, &s, &at, Version::V2, "good").await?;
    let mut bad = Conn::connect(at.addr, "bad", s.good_role, &ctx.log).await?;
    bad.send_raw(
        b"\x00\x00\x00\x03\xc1\xc1\xc1",
        "a hello that is not MessagePack",
    )
    .await?;
    bad.expect_closed(wait(&ctx), "the bad connection closed")
        .await?;
    probe(&ctx, &s, &mut good, 77).await
}

async fn handshake_5_3_missing(ctx: Ctx, s: Server, idx: usize) -> Outcome {
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
    s: Server,
    extra: Vec<(&'static str, Vec<u8>)>,
) -> Outcome {
    let mut e = mp::hello_entries(&[1, 2], s.good_role.name(), "auth");
    e.extend(extra);
    refused(
        ctx.clone(),
        s,
        mp::map(&e),
        &[RefusalReason::MalformedHello],
    )
    .await
}
