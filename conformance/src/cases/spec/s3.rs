//! `spec/3/…`: SPEC §3 (protocol/SPEC.md).

use crate::harness::case::bind;
use crate::harness::case::Case;
use crate::harness::case::Target;
use crate::harness::env::Ctx;
use crate::harness::mp;
use crate::harness::peer::frame;
use crate::harness::peer::Event;
use crate::harness::verdict::check;
use crate::harness::verdict::fail;
use crate::harness::verdict::Level;
use crate::harness::verdict::Outcome;
use crate::kit::common::wait;
use crate::kit::endpoint::Endpoint;
use crate::kit::support::server::*;
use sparkwire::messages::Version;

/// The cases of this section for the listening endpoint `s` (a master, a worker's UI port, a driver's
/// executor port).
pub fn for_server(cs: &mut Vec<Case>, s: &Endpoint) {
    let name = s.name;
    cs.push(Case {
        id: "spec/3/bad-envelope-tag".into(),
        level: Level::Must,
        targets: vec![Target::Master, Target::Worker, Target::Driver],
        requirement: format!(
            "{name} refuses an envelope whose first element is not 0–3 (BadEnvelope) and closes"
        ),
        body: bind(s, spec_3_bad_envelope_tag),
        ..Case::default()
    });
    cs.push(Case {
        id: "spec/3/bad-envelope-length".into(),
        level: Level::Must,
        targets: vec![Target::Master, Target::Worker, Target::Driver],
        requirement: format!(
            "{name} refuses an envelope too short for its form (an ask without a message) and \
                closes"
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
            "{name} takes no reply to an ask it never sent: it closes or ignores it and goes on"
        ),
        body: bind(s, spec_3_unknown_reply),
        ..Case::default()
    });
}

async fn spec_3_bad_envelope_tag(ctx: Ctx, s: Endpoint) -> Outcome {
    let body = mp::arr(&[mp::u(4), mp::u(5), s.probe_body(false)]);
    closes_after(ctx, s, Version::V2, frame(&body), "an envelope tagged 4").await
}

async fn spec_3_bad_envelope_length(ctx: Ctx, s: Endpoint) -> Outcome {
    closes_after(
        ctx,
        s,
        Version::V2,
        frame(&mp::arr(&[mp::u(1), mp::u(5)])),
        "[1, 5]",
    )
    .await
}

async fn spec_3_envelope_not_array(ctx: Ctx, s: Endpoint) -> Outcome {
    closes_after(
        ctx,
        s.clone(),
        Version::V2,
        frame(&s.probe_body(false)),
        "a bare message, no envelope",
    )
    .await
}

async fn spec_3_message_not_one_entry_map(ctx: Ctx, s: Endpoint) -> Outcome {
    let m = mp::map(&[
        (s.messages().probe.0, mp::map(&(s.messages().probe.1)())),
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

async fn spec_3_ask_id_u64(ctx: Ctx, s: Endpoint) -> Outcome {
    let at = s.open(ctx.clone()).await?;
    let mut c = session(&ctx, &s, &at, Version::V2, "suite").await?;
    probe(&ctx, &s, &mut c, u64::MAX).await
}

async fn spec_3_reply_once(ctx: Ctx, s: Endpoint) -> Outcome {
    let at = s.open(ctx.clone()).await?;
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

async fn spec_3_id_reuse_after_reply(ctx: Ctx, s: Endpoint) -> Outcome {
    let at = s.open(ctx.clone()).await?;
    let mut c = session(&ctx, &s, &at, Version::V2, "suite").await?;
    probe(&ctx, &s, &mut c, 4).await?;
    probe(&ctx, &s, &mut c, 4).await
}

async fn spec_3_asks_answered_by_id(ctx: Ctx, s: Endpoint) -> Outcome {
    let at = s.open(ctx.clone()).await?;
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
            crate::harness::peer::describe(c.family, &b, c.v()),
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

async fn spec_3_unknown_reply(ctx: Ctx, s: Endpoint) -> Outcome {
    let at = s.open(ctx.clone()).await?;
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
                crate::harness::peer::describe(c.family, &b, c.v()),
            )
        }
        other => Err(fail("a close, or the reply to ask 6", format!("{other:?}"))),
    }
}
