//! Framing after the handshake (protocol/SPEC.md §2 frames, §3 envelopes, §4 messages and
//! fields, §6 local messages, §8 decoding errors and §8.1 close envelopes), the cases every
//! listening endpoint shares. One function per case, registered in report order by [`add`].

use super::*;

/// The framing cases for the server `s`, in report order.
pub(super) fn add(cs: &mut Vec<Case>, s: &Server) {
    let name = s.name;
    // ---- framing after the handshake ----
    cs.push(Case {
        id: "spec/2/size-limit".into(),
        level: Level::Must,
        targets: vec![Target::Master, Target::Worker, Target::Driver],
        requirement: format!(
            "{name} closes a connection on which a frame's prefix \
        declares more than its frame limit (here 4 GiB - 1), without waiting for the body"
        ),
        body: bind(s, spec_2_size_limit),
        ..Case::default()
    });
    cs.push(Case {
        id: "spec/2/truncated-frame".into(),
        level: Level::Must,
        targets: vec![Target::Master, Target::Worker, Target::Driver],
        requirement: format!(
            "{name} closes a connection that ends inside a frame, \
        and does not act on the partial frame"
        ),
        body: bind(s, spec_2_truncated_frame),
        ..Case::default()
    });
    cs.push(Case {
        id: "spec/2/trailing-bytes".into(),
        level: Level::Must,
        targets: vec![Target::Master, Target::Worker, Target::Driver],
        requirement: format!(
            "{name} refuses a frame with bytes after its one value \
        (TrailingBytes) and closes the connection"
        ),
        body: bind(s, spec_2_trailing_bytes),
        ..Case::default()
    });
    cs.push(Case {
        id: "spec/2/nesting-depth".into(),
        level: Level::Must,
        targets: vec![Target::Master, Target::Worker, Target::Driver],
        requirement: format!("{name} refuses a frame nested 65 levels deep, the \
        envelope counted, even inside a field it skips (SPEC §2, \"A decoder MUST accept 64 levels and refuse 65 \
            (`TooDeep`), even inside a field it skips\"), and closes the connection: an ask it answers \
                otherwise"),
        body: bind(s, spec_2_nesting_depth),
        ..Case::default()
    });
    cs.push(Case {
        id: "spec/2/nesting-64-accepted".into(),
        level: Level::Must,
        targets: vec![Target::Master, Target::Worker, Target::Driver],
        requirement: format!("{name} accepts a frame nested 64 levels deep, the \
        envelope counted, inside a field it skips (SPEC §2, \"A decoder MUST accept 64 levels\"), and answers the \
            ask"),
        body: bind(s, spec_2_nesting_64_accepted),
        ..Case::default()
    });
    cs.push(Case {
        id: "spec/2/nesting-1000".into(),
        level: Level::Must,
        targets: vec![Target::Master, Target::Worker, Target::Driver],
        requirement: format!(
            "{name} refuses a frame nested 1,000 levels deep inside a \
        field it skips (SPEC §2, `TooDeep`), and closes the connection"
        ),
        body: bind(s, spec_2_nesting_1000),
        ..Case::default()
    });
    cs.push(Case {
        id: "spec/2/extension-type".into(),
        level: Level::Must,
        targets: vec![Target::Master, Target::Worker, Target::Driver],
        requirement: format!(
            "{name} refuses a frame holding a MessagePack extension type and closes the connection"
        ),
        body: bind(s, spec_2_extension_type),
        ..Case::default()
    });
    cs.push(Case {
        id: "spec/2/reserved-marker".into(),
        level: Level::Must,
        targets: vec![Target::Master, Target::Worker, Target::Driver],
        requirement: format!(
            "{name} refuses a frame holding the reserved marker 0xc1 and closes the connection"
        ),
        body: bind(s, spec_2_reserved_marker),
        ..Case::default()
    });
    cs.push(Case {
        id: "spec/2/count-past-end".into(),
        level: Level::Must,
        targets: vec![Target::Master, Target::Worker, Target::Driver],
        requirement: format!(
            "{name} refuses an array declaring more elements than the \
        frame holds, without allocating for them, and closes the connection"
        ),
        body: bind(s, spec_2_count_past_end),
        ..Case::default()
    });
    cs.push(Case {
        id: "spec/3/bad-envelope-tag".into(),
        level: Level::Must,
        targets: vec![Target::Master, Target::Worker, Target::Driver],
        requirement: format!(
            "{name} refuses an envelope whose first element is not \
        0–3 (BadEnvelope) and closes the connection"
        ),
        body: bind(s, spec_3_bad_envelope_tag),
        ..Case::default()
    });
    cs.push(Case {
        id: "spec/3/bad-envelope-length".into(),
        level: Level::Must,
        targets: vec![Target::Master, Target::Worker, Target::Driver],
        requirement: format!(
            "{name} refuses an envelope of the wrong length for \
        its form (an ask without a message) and closes the connection"
        ),
        body: bind(s, spec_3_bad_envelope_length),
        ..Case::default()
    });
    cs.push(Case {
        id: "spec/3/envelope-not-array".into(),
        level: Level::Must,
        targets: vec![Target::Master, Target::Worker, Target::Driver],
        requirement: format!(
            "{name} refuses a frame whose value is not an array \
        (BadEnvelope) and closes the connection"
        ),
        body: bind(s, spec_3_envelope_not_array),
        ..Case::default()
    });
    cs.push(Case {
        id: "spec/3/message-not-one-entry-map".into(),
        level: Level::Must,
        targets: vec![Target::Master, Target::Worker, Target::Driver],
        requirement: format!(
            "{name} refuses a message that is not a \
        one-entry map (BadEnvelope) and closes the connection"
        ),
        body: bind(s, spec_3_message_not_one_entry_map),
        ..Case::default()
    });
    cs.push(Case {
        id: "spec/4/unknown-message".into(),
        level: Level::Must,
        targets: vec![Target::Master, Target::Worker, Target::Driver],
        requirement: format!(
            "{name} refuses a message name its family does not have \
        (UnknownMessage) and closes the connection"
        ),
        body: bind(s, spec_4_unknown_message),
        ..Case::default()
    });
    cs.push(Case {
        id: "spec/4/not-in-version".into(),
        level: Level::Must,
        targets: vec![Target::Master, Target::Worker, Target::Driver],
        requirement: format!(
            "{name} refuses, on a version 1 connection, a message \
        only version 2 has (NotInVersion) and closes the connection"
        ),
        body: bind(s, spec_4_not_in_version),
        ..Case::default()
    });
    cs.push(Case {
        id: "spec/6/local-message".into(),
        level: Level::Must,
        targets: vec![Target::Master, Target::Worker, Target::Driver],
        requirement: format!(
            "{name} refuses a local message on a connection \
        (LocalMessage) and closes the connection"
        ),
        body: bind(s, spec_6_local_message),
        ..Case::default()
    });
    // Only where the message is on its route from `good_role` (a worker's UI takes no message
    // with fields: its decoder is checked on its master's connection, spec/11/live/…).
    let on_route = sparkwire::definition::Definition::builtin()
        .messages
        .iter()
        .any(|d| {
            d.name == s.bad_fields.0
                && d.from.iter().any(|r| r == s.good_role.name())
                && d.to.iter().any(|r| r == s.server_role.name())
        });
    if on_route {
        cs.push(Case {
            id: "spec/4/invalid-fields".into(),
            level: Level::Must,
            targets: vec![Target::Master, Target::Driver],
            requirement: format!("{name} refuses a message with a field of the wrong \
            type (SPEC §4, \"refuses ... a value of the wrong type ... (`InvalidFields`)\") and closes the \
                connection: a message the peer's role may send it, as its kind says (SPEC §14.1), so that only the \
                    field is wrong"),
            body: bind(s, spec_4_invalid_fields),
            ..Case::default()
        });
    }
    cs.push(Case {
        id: "spec/8.1/close-reason-decoding".into(),
        level: Level::Must,
        targets: vec![Target::Master, Target::Worker, Target::Driver],
        requirement: format!("{name}, having taken closeReason in the \
        handshake, sends a close envelope of kind InvalidFields, with the mistyped field's path and an offset, as its \
            last frame before it closes a connection for a message with a field of the wrong \
                type"),
        body: bind(s, spec_8_1_close_reason_decoding),
        ..Case::default()
    });
    cs.push(Case {
        id: "spec/8.1/close-reason-refusal".into(),
        level: Level::Must,
        targets: vec![Target::Master, Target::Worker, Target::Driver],
        requirement: format!("{name}, having taken closeReason in the \
        handshake, sends a close envelope of kind NotOnRoute (or, validating rules.md, RuleViolation) as its last \
            frame before it closes a connection for a one-way message off its route (SPEC \
                §14.3)"),
        body: bind(s, spec_8_1_close_reason_refusal),
        ..Case::default()
    });
    cs.push(Case {
        id: "spec/4.1/fields-as-array".into(),
        level: Level::Must,
        targets: vec![Target::Master, Target::Worker, Target::Driver],
        requirement: format!(
            "{name} refuses a message whose fields are written as \
        an array instead of a map (InvalidFields) and closes the connection"
        ),
        body: bind(s, spec_4_1_fields_as_array),
        ..Case::default()
    });
    cs.push(Case {
        id: "spec/4/unknown-field-skipped".into(),
        level: Level::Must,
        targets: vec![Target::Master, Target::Worker, Target::Driver],
        requirement: format!(
            "{name} skips a field it does not know (a later revision's) and answers the ask"
        ),
        body: bind(s, spec_4_unknown_field_skipped),
        ..Case::default()
    });
    cs.push(Case {
        id: "spec/3/ask-id-u64".into(),
        level: Level::Must,
        targets: vec![Target::Master, Target::Worker, Target::Driver],
        requirement: format!("{name} answers an ask whose id is 2^64 - 1 with that id"),
        body: bind(s, spec_3_ask_id_u64),
        ..Case::default()
    });
    cs.push(Case {
        id: "spec/3/reply-once".into(),
        level: Level::Must,
        targets: vec![Target::Master, Target::Worker, Target::Driver],
        requirement: format!("{name} answers an ask exactly once"),
        body: bind(s, spec_3_reply_once),
        ..Case::default()
    });
    cs.push(Case {
        id: "spec/3/id-reuse-after-reply".into(),
        level: Level::Must,
        targets: vec![Target::Master, Target::Worker, Target::Driver],
        requirement: format!("{name} answers an ask that reuses the id of an ask already answered"),
        body: bind(s, spec_3_id_reuse_after_reply),
        ..Case::default()
    });
    cs.push(Case {
        id: "spec/3/asks-answered-by-id".into(),
        level: Level::Must,
        targets: vec![Target::Master, Target::Worker, Target::Driver],
        requirement: format!("{name} answers several asks sent back to back, each with its own id"),
        body: bind(s, spec_3_asks_answered_by_id),
        ..Case::default()
    });
    cs.push(Case {
        id: "spec/3/unknown-reply".into(),
        level: Level::Must,
        targets: vec![Target::Master, Target::Worker, Target::Driver],
        requirement: format!(
            "{name} does not take a reply to an ask it never sent as \
        an answer to anything: it closes the connection or ignores it and goes on serving"
        ),
        body: bind(s, spec_3_unknown_reply),
        ..Case::default()
    });
    cs.push(Case {
        id: "spec/8/others-unaffected".into(),
        level: Level::Must,
        targets: vec![Target::Master, Target::Worker, Target::Driver],
        requirement: format!(
            "a decoding error ends only its own connection: {name} \
        goes on serving its other connections"
        ),
        body: bind(s, spec_8_others_unaffected),
        ..Case::default()
    });
}

async fn spec_2_size_limit(ctx: Ctx, s: Server) -> Outcome {
    closes_after(
        ctx,
        s,
        Version::V2,
        u32::MAX.to_be_bytes().to_vec(),
        "a prefix declaring 4294967295 bytes",
    )
    .await
}

async fn spec_2_truncated_frame(ctx: Ctx, s: Server) -> Outcome {
    let at = (s.open)(ctx.clone()).await?;
    let mut c = session(&ctx, &s, &at, Version::V2, "suite").await?;
    let f = frame(&mp::arr(&[mp::u(1), mp::u(5), s.probe_body(false)]));
    c.send_raw(&f[..f.len() - 2], "an ask missing its last 2 bytes")
        .await?;
    c.shutdown_write().await;
    match c.next_or_close(wait(&ctx)).await {
        Some(Event::Closed(_)) => Ok(()),
        Some(Event::Frame(b)) => Err(fail(
            "the connection closed, no answer",
            crate::peer::describe(c.family, &b, c.v()),
        )),
        Some(Event::TooLarge(n)) => Err(fail("the connection closed", format!("a prefix of {n}"))),
        None => Err(fail("the connection closed", "still open")),
    }
}

async fn spec_2_trailing_bytes(ctx: Ctx, s: Server) -> Outcome {
    let mut body = mp::arr(&[mp::u(1), mp::u(5), s.probe_body(false)]);
    body.push(0xc0);
    closes_after(
        ctx,
        s,
        Version::V2,
        frame(&body),
        "an ask with a trailing nil",
    )
    .await
}

async fn spec_2_nesting_depth(ctx: Ctx, s: Server) -> Outcome {
    closes_after(
        ctx,
        s.clone(),
        Version::V2,
        frame(&nested_probe(&s, 65)),
        "the probe ask, 65 levels deep in an unknown field",
    )
    .await
}

async fn spec_2_nesting_64_accepted(ctx: Ctx, s: Server) -> Outcome {
    let at = (s.open)(ctx.clone()).await?;
    let mut c = session(&ctx, &s, &at, Version::V2, "suite").await?;
    c.send_frame(&nested_probe(&s, 64)).await?;
    expect_reply(
        &ctx,
        &mut c,
        5,
        "a reply to the probe ask (id 5), 64 levels deep",
    )
    .await
}

async fn spec_2_nesting_1000(ctx: Ctx, s: Server) -> Outcome {
    closes_after(
        ctx,
        s.clone(),
        Version::V2,
        frame(&nested_probe(&s, 1000)),
        "the probe ask, 1000 levels deep in an unknown field",
    )
    .await
}

async fn spec_2_extension_type(ctx: Ctx, s: Server) -> Outcome {
    let body = mp::arr(&[
        mp::u(1),
        mp::u(5),
        mp::map(&[(s.probe.0, mp::map(&[("x", vec![0xd4, 0x01, 0x00])]))]),
    ]);
    closes_after(ctx, s, Version::V2, frame(&body), "an ask holding fixext 1").await
}

async fn spec_2_reserved_marker(ctx: Ctx, s: Server) -> Outcome {
    closes_after(ctx, s, Version::V2, frame(&[0x92, 0x00, 0xc1]), "[0, 0xc1]").await
}

async fn spec_2_count_past_end(ctx: Ctx, s: Server) -> Outcome {
    closes_after(
        ctx,
        s,
        Version::V2,
        frame(&[0xdd, 0xff, 0xff, 0xff, 0xff, 0x00]),
        "an array declaring 4294967295 elements in 6 bytes",
    )
    .await
}

async fn spec_3_bad_envelope_tag(ctx: Ctx, s: Server) -> Outcome {
    let body = mp::arr(&[mp::u(4), mp::u(5), s.probe_body(false)]);
    closes_after(ctx, s, Version::V2, frame(&body), "an envelope tagged 4").await
}

async fn spec_3_bad_envelope_length(ctx: Ctx, s: Server) -> Outcome {
    closes_after(
        ctx,
        s,
        Version::V2,
        frame(&mp::arr(&[mp::u(1), mp::u(5)])),
        "[1, 5]",
    )
    .await
}

async fn spec_3_envelope_not_array(ctx: Ctx, s: Server) -> Outcome {
    closes_after(
        ctx,
        s.clone(),
        Version::V2,
        frame(&s.probe_body(false)),
        "a bare message, no envelope",
    )
    .await
}

async fn spec_3_message_not_one_entry_map(ctx: Ctx, s: Server) -> Outcome {
    let m = mp::map(&[
        (s.probe.0, mp::map(&(s.probe.1)())),
        ("Other", mp::map(&[])),
    ]);
    closes_after(
        ctx,
        s,
        Version::V2,
        frame(&mp::arr(&[mp::u(1), mp::u(5), m])),
        "an ask whose message map has 2 entries",
    )
    .await
}

async fn spec_4_unknown_message(ctx: Ctx, s: Server) -> Outcome {
    let m = mp::map(&[("RegisterBlockManager", mp::map(&[]))]);
    closes_after(
        ctx,
        s,
        Version::V2,
        frame(&mp::arr(&[mp::u(0), m])),
        "a send of RegisterBlockManager",
    )
    .await
}

async fn spec_4_not_in_version(ctx: Ctx, s: Server) -> Outcome {
    let at = (s.open)(ctx.clone()).await?;
    let mut c = match session(&ctx, &s, &at, Version::V1, "suite").await {
        Ok(c) => c,
        Err(_) => {
            return Err(Failure::Skipped(
                "the endpoint does not speak version 1".into(),
            ))
        }
    };
    let m = mp::map(&[(s.v2_only.0, mp::map(&(s.v2_only.1)()))]);
    c.send_raw(
        &frame(&mp::arr(&[mp::u(1), mp::u(5), m])),
        "an ask of a version 2 message",
    )
    .await?;
    c.expect_closed(wait(&ctx), "the connection closed").await
}

async fn spec_6_local_message(ctx: Ctx, s: Server) -> Outcome {
    let m = mp::map(&[(s.local, mp::map(&[]))]);
    closes_after(
        ctx,
        s.clone(),
        Version::V2,
        frame(&mp::arr(&[mp::u(0), m])),
        "a send of a local message",
    )
    .await
}

async fn spec_8_1_close_reason_decoding(ctx: Ctx, s: Server) -> Outcome {
    let at = (s.open)(ctx.clone()).await?;
    let Some(mut c) = session_offering_close_reason(&ctx, &s, &at).await? else {
        return Err(Failure::Skipped(
            "the endpoint does not take closeReason".into(),
        ));
    };
    let fields = (s.bad_fields.1)();
    let field = fields.first().map_or("", |(name, _)| *name);
    let m = mp::map(&[(s.bad_fields.0, mp::map(&fields))]);
    c.send_frame(&as_its_kind(s.bad_fields.0, m)).await?;
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

async fn spec_8_1_close_reason_refusal(ctx: Ctx, s: Server) -> Outcome {
    let at = (s.open)(ctx.clone()).await?;
    let Some(mut c) = session_offering_close_reason(&ctx, &s, &at).await? else {
        return Err(Failure::Skipped(
            "the endpoint does not take closeReason".into(),
        ));
    };
    let m = mp::map(&[(s.off_route.0, mp::map(&(s.off_route.1)()))]);
    c.send_frame(&mp::arr(&[mp::u(0), m])).await?;
    let want = format!(
        "a close envelope of kind NotOnRoute or RuleViolation after a {} from a {}",
        s.off_route.0,
        s.good_role.name()
    );
    let reason = close_envelope(&ctx, &mut c, &want).await?;
    check(
        matches!(reason.kind.as_str(), "NotOnRoute" | "RuleViolation")
            && !reason.message.is_empty(),
        want,
        format!("{reason:?}"),
    )
}

async fn spec_4_1_fields_as_array(ctx: Ctx, s: Server) -> Outcome {
    let fields: Vec<Vec<u8>> = (s.probe.1)().into_iter().map(|(_, v)| v).collect();
    let m = mp::map(&[(s.probe.0, mp::arr(&fields))]);
    closes_after(
        ctx,
        s,
        Version::V2,
        frame(&mp::arr(&[mp::u(1), mp::u(5), m])),
        "an ask with its fields as an array",
    )
    .await
}

async fn spec_4_unknown_field_skipped(ctx: Ctx, s: Server) -> Outcome {
    let at = (s.open)(ctx.clone()).await?;
    let mut c = session(&ctx, &s, &at, Version::V2, "suite").await?;
    c.send_frame(&mp::arr(&[mp::u(1), mp::u(9), s.probe_body(true)]))
        .await?;
    expect_reply(&ctx, &mut c, 9, "a reply to the ask (id 9)").await
}

async fn spec_3_ask_id_u64(ctx: Ctx, s: Server) -> Outcome {
    let at = (s.open)(ctx.clone()).await?;
    let mut c = session(&ctx, &s, &at, Version::V2, "suite").await?;
    probe(&ctx, &s, &mut c, u64::MAX).await
}

async fn spec_3_reply_once(ctx: Ctx, s: Server) -> Outcome {
    let at = (s.open)(ctx.clone()).await?;
    let mut c = session(&ctx, &s, &at, Version::V2, "suite").await?;
    probe(&ctx, &s, &mut c, 3).await?;
    let quiet = ctx.settings.quiet;
    match c.next(quiet).await {
        None | Some(Event::Closed(_)) => Ok(()),
        Some(Event::Frame(b)) => {
            let mut cur = b.as_ref();
            let again = rmp::decode::read_array_len(&mut cur).ok() == Some(3)
                && matches!(rmp::decode::read_int::<u64, _>(&mut cur), Ok(2) | Ok(3))
                && rmp::decode::read_int::<u64, _>(&mut cur).ok() == Some(3);
            check(!again, "no second answer to ask 3", "a second answer")
        }
        Some(Event::TooLarge(n)) => Err(fail("nothing more", format!("a prefix of {n}"))),
    }
}

async fn spec_3_id_reuse_after_reply(ctx: Ctx, s: Server) -> Outcome {
    let at = (s.open)(ctx.clone()).await?;
    let mut c = session(&ctx, &s, &at, Version::V2, "suite").await?;
    probe(&ctx, &s, &mut c, 4).await?;
    probe(&ctx, &s, &mut c, 4).await
}

async fn spec_3_asks_answered_by_id(ctx: Ctx, s: Server) -> Outcome {
    let at = (s.open)(ctx.clone()).await?;
    let mut c = session(&ctx, &s, &at, Version::V2, "suite").await?;
    let mut bytes = Vec::new();
    for id in [11u64, 12, 13] {
        bytes.extend(frame(&mp::arr(&[mp::u(1), mp::u(id), s.probe_body(false)])));
    }
    c.send_raw(&bytes, "three asks in one write (ids 11, 12, 13)")
        .await?;
    let mut got = Vec::new();
    for _ in 0..3 {
        let b = c.frame_body(wait(&ctx), "three replies").await?;
        let mut cur = b.as_ref();
        let _ = rmp::decode::read_array_len(&mut cur);
        let tag = rmp::decode::read_int::<u64, _>(&mut cur).unwrap_or(99);
        let id = rmp::decode::read_int::<u64, _>(&mut cur).unwrap_or(0);
        check(
            tag == 2,
            "a reply",
            crate::peer::describe(c.family, &b, c.v()),
        )?;
        got.push(id);
    }
    got.sort_unstable();
    check(
        got == [11, 12, 13],
        "replies to 11, 12 and 13",
        format!("replies to {got:?}"),
    )
}

async fn spec_3_unknown_reply(ctx: Ctx, s: Server) -> Outcome {
    let at = (s.open)(ctx.clone()).await?;
    let mut c = session(&ctx, &s, &at, Version::V2, "suite").await?;
    c.send_frame(&mp::arr(&[
        mp::u(2),
        mp::u(424242),
        mp::map(&[("bool", vec![0xc3])]),
    ]))
    .await?;
    let body = mp::arr(&[mp::u(1), mp::u(6), s.probe_body(false)]);
    c.send_frame(&body).await?;
    match c.next_or_close(wait(&ctx)).await {
        Some(Event::Closed(_)) => Ok(()),
        Some(Event::Frame(b)) => {
            let mut cur = b.as_ref();
            let ok = rmp::decode::read_array_len(&mut cur).ok() == Some(3)
                && rmp::decode::read_int::<u64, _>(&mut cur).ok() == Some(2)
                && rmp::decode::read_int::<u64, _>(&mut cur).ok() == Some(6);
            check(
                ok,
                "a close, or the reply to ask 6",
                crate::peer::describe(c.family, &b, c.v()),
            )
        }
        other => Err(fail("a close, or the reply to ask 6", format!("{other:?}"))),
    }
}

async fn spec_8_others_unaffected(ctx: Ctx, s: Server) -> Outcome {
    let at = (s.open)(ctx.clone()).await?;
    let mut good = session(&ctx, &s, &at, Version::V2, "good").await?;
    let mut bad = session(&ctx, &s, &at, Version::V2, "bad").await?;
    bad.send_raw(&frame(&[0x92, 0x00, 0xc1]), "[0, 0xc1]")
        .await?;
    bad.expect_closed(wait(&ctx), "the bad connection closed")
        .await?;
    probe(&ctx, &s, &mut good, 78).await
}

async fn spec_4_invalid_fields(ctx: Ctx, s: Server) -> Outcome {
    let m = mp::map(&[(s.bad_fields.0, mp::map(&(s.bad_fields.1)()))]);
    closes_after(
        ctx,
        s.clone(),
        Version::V2,
        frame(&as_its_kind(s.bad_fields.0, m)),
        "a message with a mistyped field",
    )
    .await
}
