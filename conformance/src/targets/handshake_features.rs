//! `--target master`, handshake.md §12 (features) and SPEC §8.1 (the close envelope only to a
//! peer that asked for it), as a server answers them. One function per case; each cites the
//! sentence it checks.

use std::time::Duration;

use sparkwire::messages::Version;
use sparkwire::wire::handshake::{Answer, Hello, RefusalReason, Role, CLOSE_REASON};

use crate::case::{run, Case, Target};
use crate::env::Ctx;
use crate::kit::common::wait;
use crate::kit::master::{addr, open};
use crate::mp;
use crate::peer::{auth_entries, frame, Conn, Event};
use crate::verdict::{check, fail, Level, Outcome};

/// A feature name no version of the protocol defines.
const UNKNOWN_FEATURE: &str = "conformanceUnknownFeature";

/// Every case of this file, added to `cs`.
pub fn add(cs: &mut Vec<Case>) {
    cs.push(Case {
        id: "handshake/12/features-string-refused".into(),
        level: Level::Must,
        targets: vec![Target::Master],
        timeout: Duration::from_secs(10),
        requirement: "handshake.md §12, \"a decoder takes a `features` that is not an array of strings as `malformedHello`\": a \
            hello whose `features` is the string \"closeReason\" is refused with malformedHello, then the connection \
                closed".into(),
        body: run(features_string_refused),
        ..Case::default()
    });
    cs.push(Case {
        id: "handshake/12/features-not-strings-refused".into(),
        level: Level::Must,
        targets: vec![Target::Master],
        timeout: Duration::from_secs(10),
        requirement: "handshake.md §12, \"a decoder takes a `features` that is not an array of strings as `malformedHello`\": a \
            hello whose `features` is the array [1] is refused with malformedHello, then the connection closed".into(),
        body: run(features_not_strings_refused),
        ..Case::default()
    });
    cs.push(Case {
        id: "handshake/12/unknown-feature-not-taken".into(),
        level: Level::Must,
        targets: vec![Target::Master],
        timeout: Duration::from_secs(10),
        requirement: "handshake.md §12, \"A side ignores feature names it does not know ... a server never takes a feature the \
            hello did not offer\": a hello offering an unknown feature and closeReason is accepted, and the answer's \
                `features` names neither the unknown feature nor anything but closeReason".into(),
        body: run(unknown_feature_not_taken),
        ..Case::default()
    });
    cs.push(Case {
        id: "spec/8.1/no-close-envelope-unoffered".into(),
        level: Level::Must,
        targets: vec![Target::Master],
        timeout: Duration::from_secs(10),
        requirement: "SPEC §8.1, \"Without the feature — a peer that did not offer it, or a server that did not take it — no close \
            envelope is sent\", and \"a newer peer sends the close envelope only to a peer that asked for it\": on a \
                connection whose hello offered no feature, a frame that is not MessagePack closes the connection with \
                    no close envelope before the close".into(),
        body: run(no_close_envelope_unoffered),
        ..Case::default()
    });
}

/// Sends a hello of a UI whose `features` is `features` (as written) and expects malformedHello.
async fn features_refused(ctx: &Ctx, features: Vec<u8>, what: &str) -> Outcome {
    let mut entries = mp::hello_entries(&[1, 2], Role::Ui.name(), "suite");
    entries.push(("features", features));
    entries.extend(auth_entries(ctx.settings.secret.as_ref())?);
    let body = mp::map(&entries);
    let mut c = Conn::connect(addr(ctx)?, "ui", Role::Ui, &ctx.log).await?;
    c.send_frame(&body).await?;
    let want =
        format!("a refusal (malformedHello) of a hello whose features is {what}, then the close");
    match c
        .read_answer_to(&body, ctx.settings.secret.as_ref(), wait(ctx))
        .await?
    {
        Answer::Refused(r) if r.reason == RefusalReason::MalformedHello => {}
        other => return Err(fail(want, format!("{other:?}"))),
    }
    c.expect_closed(crate::kit::common::reaction_wait(ctx), &want)
        .await
}

async fn features_string_refused(ctx: Ctx) -> Outcome {
    features_refused(&ctx, mp::s(CLOSE_REASON), "the string \"closeReason\"").await
}

async fn features_not_strings_refused(ctx: Ctx) -> Outcome {
    features_refused(&ctx, mp::uints(&[1]), "the array [1]").await
}

async fn unknown_feature_not_taken(ctx: Ctx) -> Outcome {
    let hello = Hello::new(&[Version::V1, Version::V2], Role::Ui, "suite")
        .with_features(&[UNKNOWN_FEATURE, CLOSE_REASON]);
    let (_c, taken) = crate::kit::common::open_offering(&ctx, addr(&ctx)?, "ui", hello).await?;
    check(
        taken.iter().all(|f| f == CLOSE_REASON),
        format!("the answer takes at most closeReason, never {UNKNOWN_FEATURE}"),
        format!("features {taken:?}"),
    )
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
                            crate::peer::describe(c.family, &body, c.v())
                        ),
                    ));
                }
            }
        }
    }
}
