//! `handshake/12/…`: protocol/handshake.md §12.

use crate::case::run;
use crate::case::Case;
use crate::case::Target;
use crate::env::Ctx;
use crate::kit::master::addr;
use crate::kit::support::handshake_features::*;
use crate::mp;
use crate::verdict::check;
use crate::verdict::Level;
use crate::verdict::Outcome;
use sparkwire::messages::Version;
use sparkwire::wire::handshake::Hello;
use sparkwire::wire::handshake::Role;
use sparkwire::wire::handshake::CLOSE_REASON;
use std::time::Duration;

/// The cases of this section, each naming its targets.
pub fn cases(cs: &mut Vec<Case>) {
    cs.push(Case {
        id: "handshake/12/features-string-refused".into(),
        level: Level::Must,
        targets: vec![Target::Master],
        timeout: Duration::from_secs(10),
        requirement: "handshake.md §12, \"a decoder takes a `features` that is not an array of strings as \
            `malformedHello`\": a \
            hello whose `features` is the string \"closeReason\" is refused with malformedHello, then the \
                connection \
                closed".into(),
        body: run(features_string_refused),
        ..Case::default()
    });
    cs.push(Case {
        id: "handshake/12/features-not-strings-refused".into(),
        level: Level::Must,
        targets: vec![Target::Master],
        timeout: Duration::from_secs(10),
        requirement: "handshake.md §12, \"a decoder takes a `features` that is not an array of strings as \
            `malformedHello`\": a \
            hello whose `features` is the array [1] is refused with malformedHello, then the connection \
                closed".into(),
        body: run(features_not_strings_refused),
        ..Case::default()
    });
    cs.push(Case {
        id: "handshake/12/unknown-feature-not-taken".into(),
        level: Level::Must,
        targets: vec![Target::Master],
        timeout: Duration::from_secs(10),
        requirement: "handshake.md §12, \"A side ignores feature names it does not know ... a server never takes a \
            feature the \
            hello did not offer\": a hello offering an unknown feature and closeReason is accepted, and the \
                answer's \
                `features` names neither the unknown feature nor anything but closeReason".into(),
        body: run(unknown_feature_not_taken),
        ..Case::default()
    });
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
