//! `handshake/12/…`: protocol/handshake.md §12.

use crate::harness::case::run;
use crate::harness::case::Case;
use crate::harness::case::Target;
use crate::harness::env::Ctx;
use crate::harness::mp;
use crate::harness::verdict::check;
use crate::harness::verdict::Level;
use crate::harness::verdict::Outcome;
use crate::kit::master::addr;
use crate::kit::support::handshake_features::*;
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
        quote: "handshake.md §12, \"a decoder takes a `features` that is not an array of strings \
            as `malformedHello`\""
            .into(),
        requirement: "a hello whose `features` is the string \"closeReason\" is refused with \
            malformedHello, then the connection closed"
            .into(),
        body: run(features_string_refused),
        ..Case::default()
    });
    cs.push(Case {
        id: "handshake/12/features-not-strings-refused".into(),
        level: Level::Must,
        targets: vec![Target::Master],
        timeout: Duration::from_secs(10),
        quote: "handshake.md §12, \"a decoder takes a `features` that is not an array of strings \
            as `malformedHello`\""
            .into(),
        requirement: "a hello whose `features` is the array [1] is refused with malformedHello, \
            then the connection closed"
            .into(),
        body: run(features_not_strings_refused),
        ..Case::default()
    });
    cs.push(Case {
        id: "handshake/12/unknown-feature-not-taken".into(),
        level: Level::Must,
        targets: vec![Target::Master],
        timeout: Duration::from_secs(10),
        quote: "handshake.md §12, \"A side ignores feature names it does not know ... a server \
            never takes a feature the hello did not offer\""
            .into(),
        requirement: "a hello offering an unknown feature and closeReason is accepted with \
            features [closeReason] at most"
            .into(),
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

/// The cases about points.
pub mod points {
    use crate::harness::case::run;
    use crate::harness::case::Case;
    use crate::harness::case::Target;
    use crate::harness::env::Ctx;
    use crate::harness::mp;
    use crate::harness::verdict::check;
    use crate::harness::verdict::fail;
    use crate::harness::verdict::Level;
    use crate::harness::verdict::Outcome;
    use crate::kit::common::open_offering;
    use crate::kit::master::addr;
    use crate::kit::support::open_points::*;
    use sparkwire::messages::Version;
    use sparkwire::wire::handshake::decode_answer;
    use sparkwire::wire::handshake::Answer;
    use sparkwire::wire::handshake::Hello;
    use sparkwire::wire::handshake::RefusalReason;
    use sparkwire::wire::handshake::Role;
    use sparkwire::wire::handshake::CLOSE_REASON;

    /// The cases of this section, each naming its targets.
    pub fn cases(cs: &mut Vec<Case>) {
        cs.push(Case {
            id: "handshake/12/features-twice".into(),
            level: Level::Must,
            targets: vec![Target::Master],
            quote: "handshake.md §12, \"A name given twice is offered (or taken) once: neither \
                side refuses it. A server lists each feature it takes once\""
                .into(),
            requirement: "a hello offering closeReason twice is accepted, and the answer's \
                features name no feature twice"
                .into(),
            body: run(features_twice),
            ..Case::default()
        });
        cs.push(Case {
            id: "handshake/12/features-in-refused-answer".into(),
            level: Level::Must,
            targets: vec![Target::Master],
            quote: "handshake.md §12, \"In a refused answer `features` means nothing: a server \
                does not write it\""
                .into(),
            requirement:
                "a hello offering closeReason with a string `versions` is refused with no \
                `features` in the answer"
                    .into(),
            body: run(features_in_refused_answer),
            ..Case::default()
        });
        cs.push(Case {
            id: "handshake/12/features-name-bin-refused".into(),
            level: Level::Must,
            targets: vec![Target::Master],
            quote:
                "handshake.md §12, \"a decoder takes a `features` that is not an array of `str` \
                (a name sent as `bin` included) as `malformedHello`\""
                    .into(),
            requirement: "a hello whose features is [bin \"closeReason\"] is refused with \
                malformedHello"
                .into(),
            body: run(features_name_bin_refused),
            ..Case::default()
        });
    }

    // ---- handshake.md §5, §12: features ----

    async fn features_twice(ctx: Ctx) -> Outcome {
        let hello = Hello::new(&[Version::V1, Version::V2], Role::Ui, "suite")
            .with_features(&[CLOSE_REASON, CLOSE_REASON]);
        let (_c, taken) = open_offering(&ctx, addr(&ctx)?, "ui", hello).await?;
        let mut names = taken.clone();
        names.sort();
        names.dedup();
        check(
            names.len() == taken.len() && taken.iter().all(|f| f == CLOSE_REASON),
            "an acceptance whose features name closeReason at most once (and nothing else)",
            format!("features {taken:?}"),
        )
    }

    async fn features_in_refused_answer(ctx: Ctx) -> Outcome {
        let entries = [
            ("magic", mp::s("sparkwire")),
            ("versions", mp::s("two")),
            ("role", mp::s(Role::Ui.name())),
            ("id", mp::s("suite")),
            ("features", mp::arr(&[mp::s(CLOSE_REASON)])),
        ];
        let want = "a refused answer (malformedHello) with no `features` key";
        let body = raw_hello(&ctx, &entries, want).await?;
        match decode_answer(&body) {
            Ok(Answer::Refused(r)) if r.reason == RefusalReason::MalformedHello => {}
            other => return Err(fail(want, format!("{other:?}"))),
        }
        let keys = map_keys(&body);
        check(
            !keys.iter().any(|k| k == "features"),
            want,
            format!("an answer with the keys {keys:?}"),
        )
    }

    async fn features_name_bin_refused(ctx: Ctx) -> Outcome {
        refused_malformed(
            &ctx,
            mp::arr(&[mp::bin(CLOSE_REASON.as_bytes())]),
            "[bin \"closeReason\"]",
        )
        .await
    }
}
