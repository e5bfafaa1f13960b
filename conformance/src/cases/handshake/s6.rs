//! `handshake/6/…`: protocol/handshake.md §6.

/// The cases about client.
pub mod client {
    use crate::harness::case::bind;
    use crate::harness::case::Case;
    use crate::harness::case::Target;
    use crate::harness::env::Ctx;
    use crate::harness::mp;
    use crate::harness::peer::frame;
    use crate::harness::verdict::Failure;
    use crate::harness::verdict::Level;
    use crate::kit::common::wait;
    use crate::kit::endpoint::Endpoint;
    use crate::kit::support::client::*;
    use sparkwire::messages::Version;

    /// The cases of this section for the connecting endpoint `s` (a worker, a driver's application
    /// client, an executor).
    pub fn for_client(cs: &mut Vec<Case>, s: Endpoint) {
        let name = s.name;
        cs.push(Case {
            id: "handshake/6/unknown-version-chosen".into(),
            level: Level::Must,
            targets: vec![Target::Worker, Target::Driver, Target::Executor],
            requirement: format!(
                "{name} closes the connection when the answer chooses a version it did not offer (9)"
            ),
            body: bind(&s, move |ctx: Ctx, s| async move {
                closes(ctx, s.clone(), |_| {
                    frame(&mp::map(&accepted_entries(9, s.suite_role.name())))
                })
                .await
            }),
            ..Case::default()
        });
        cs.push(Case {
            id: "handshake/6/unoffered-version-chosen".into(),
            level: Level::Must,
            targets: vec![Target::Worker, Target::Driver, Target::Executor],
            requirement: format!(
                "{name} closes the connection when the answer chooses a known version it did not offer"
            ),
            body: bind(&s, move |ctx: Ctx, s| async move {
                let (_run, mut c) = s.start(ctx.clone()).await?;
                let (h, _) = hello(&ctx, &mut c).await?;
                let Some(other) = [1u64, 2].into_iter().find(|v| !h.versions.contains(v)) else {
                    return Err(Failure::Skipped("the endpoint offers both versions".into()));
                };
                c.send_raw(
                    &frame(&mp::map(&accepted_entries(other, s.suite_role.name()))),
                    "an answer choosing an unoffered version",
                )
                .await?;
                c.expect_closed_silently(
                    wait(&ctx),
                    "the endpoint closes the connection, sending nothing more",
                )
                .await
            }),
            ..Case::default()
        });
        cs.push(Case {
            id: "handshake/6/version-1-chosen".into(),
            level: Level::Must,
            targets: vec![Target::Worker, Target::Driver, Target::Executor],
            requirement: format!(
                "{name}, offered version 1 and answered with it, goes on in version 1"
            ),
            body: bind(&s, move |ctx: Ctx, s| async move {
                proceeds(ctx, s.clone(), |h| {
                    h.versions
                        .contains(&1)
                        .then(|| (accepted_entries(1, s.suite_role.name()), Version::V1))
                })
                .await
            }),
            ..Case::default()
        });
        cs.push(Case {
            id: "handshake/6/version-2-chosen".into(),
            level: Level::Must,
            targets: vec![Target::Worker, Target::Driver, Target::Executor],
            requirement: format!(
                "{name}, offered version 2 and answered with it, goes on in version 2"
            ),
            body: bind(&s, move |ctx: Ctx, s| async move {
                proceeds(ctx, s.clone(), |h| {
                    h.versions
                        .contains(&2)
                        .then(|| (accepted_entries(2, s.suite_role.name()), Version::V2))
                })
                .await
            }),
            ..Case::default()
        });
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
    use crate::harness::verdict::Level;
    use crate::harness::verdict::Outcome;
    use crate::kit::endpoint::Endpoint;
    use crate::kit::support::server::*;
    use sparkwire::messages::Version;
    use sparkwire::wire::handshake::Answer;
    use sparkwire::wire::handshake::RefusalReason;

    /// The cases of this section for the listening endpoint `s` (a master, a worker's UI port, a driver's
    /// executor port).
    pub fn for_server(cs: &mut Vec<Case>, s: &Endpoint) {
        let name = s.name;
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
                "{name} accepts a v1-only peer at v1, or refuses it noCommonVersion listing \
                    versions without 1"
            ),
            body: bind(s, handshake_6_v1_only_peer),
            ..Case::default()
        });
        cs.push(Case {
            id: "handshake/6/v2-only-peer".into(),
            level: Level::Must,
            targets: vec![Target::Master, Target::Worker, Target::Driver],
            requirement: format!(
                "{name} accepts a v2-only peer at v2, or refuses it noCommonVersion listing \
                    versions without 2"
            ),
            body: bind(s, handshake_6_v2_only_peer),
            ..Case::default()
        });
    }

    async fn handshake_6_highest_version(ctx: Ctx, s: Endpoint) -> Outcome {
        accepts(ctx, s, &[1, 2]).await
    }

    async fn handshake_6_unknown_versions_ignored(ctx: Ctx, s: Endpoint) -> Outcome {
        accepts(ctx, s, &[7, 2, 4_294_967_296]).await
    }

    async fn handshake_6_duplicate_versions_ignored(ctx: Ctx, s: Endpoint) -> Outcome {
        accepts(ctx, s, &[2, 2, 1, 1]).await
    }

    async fn handshake_6_v1_only_peer(ctx: Ctx, s: Endpoint) -> Outcome {
        let at = s.open(ctx.clone()).await?;
        let mut c = raw(&ctx, &at, s.suite_role).await?;
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

    async fn handshake_6_v2_only_peer(ctx: Ctx, s: Endpoint) -> Outcome {
        let at = s.open(ctx.clone()).await?;
        let mut c = raw(&ctx, &at, s.suite_role).await?;
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
}
