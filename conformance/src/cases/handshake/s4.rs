//! `handshake/4/…`: protocol/handshake.md §4.

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
    use sparkwire::messages::Version;

    /// The cases of this section for the connecting endpoint `s` (a worker, a driver's application
    /// client, an executor).
    pub fn for_client(cs: &mut Vec<Case>, s: Endpoint) {
        let name = s.name;
        cs.push(Case {
            id: "handshake/4/duplicate-key".into(),
            level: Level::Must,
            targets: vec![Target::Worker, Target::Driver, Target::Executor],
            requirement: format!(
                "{name} closes the connection when a key of the answer appears twice"
            ),
            body: bind(&s, move |ctx: Ctx, s| async move {
                closes(ctx, s.clone(), |h| {
                    let mut e = accepted_entries(best(h), s.suite_role.name());
                    e.push(("version", mp::u(best(h))));
                    frame(&mp::map(&e))
                })
                .await
            }),
            ..Case::default()
        });
        cs.push(Case {
            id: "handshake/4/unknown-keys-ignored".into(),
            level: Level::Must,
            targets: vec![Target::Worker, Target::Driver, Target::Executor],
            requirement: format!("{name} ignores keys of the answer it does not know and goes on"),
            body: bind(&s, move |ctx: Ctx, s| async move {
                proceeds(ctx, s.clone(), |h| {
                    let mut e = accepted_entries(best(h), s.suite_role.name());
                    e.push(("zzzLaterRevisionKey", mp::u(1)));
                    Some((
                        e,
                        if best(h) == 2 {
                            Version::V2
                        } else {
                            Version::V1
                        },
                    ))
                })
                .await
            }),
            ..Case::default()
        });
        cs.push(Case {
            id: "handshake/4/keys-any-order".into(),
            level: Level::Must,
            targets: vec![Target::Worker, Target::Driver, Target::Executor],
            requirement: format!("{name} reads the answer's keys in any order and goes on"),
            body: bind(&s, move |ctx: Ctx, s| async move {
                proceeds(ctx, s.clone(), |h| {
                    let mut e = accepted_entries(best(h), s.suite_role.name());
                    e.reverse();
                    Some((
                        e,
                        if best(h) == 2 {
                            Version::V2
                        } else {
                            Version::V1
                        },
                    ))
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
    use crate::harness::verdict::fail;
    use crate::harness::verdict::Level;
    use crate::harness::verdict::Outcome;
    use crate::kit::endpoint::Endpoint;
    use crate::kit::support::server::*;
    use sparkwire::wire::handshake::Answer;

    /// The cases of this section for the listening endpoint `s` (a master, a worker's UI port, a driver's
    /// executor port).
    pub fn for_server(cs: &mut Vec<Case>, s: &Endpoint) {
        let name = s.name;
        // ---- handshake: acceptance and version choice ----
        cs.push(Case {
            id: "handshake/4/accepted".into(),
            level: Level::Must,
            targets: vec![Target::Master, Target::Worker, Target::Driver],
            requirement: format!(
                "{name} accepts a good hello: magic, the chosen version, its versions, its role, \
                    an id"
            ),
            body: bind(s, handshake_4_accepted),
            ..Case::default()
        });
    }

    async fn handshake_4_accepted(ctx: Ctx, s: Endpoint) -> Outcome {
        let at = s.open(ctx.clone()).await?;
        let mut c = raw(&ctx, &at, s.suite_role).await?;
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
                    a.role == s.role,
                    format!("role {}", s.role.name()),
                    a.role.name(),
                )
            }
            Answer::Refused(r) => Err(fail(
                "an acceptance",
                format!("refused: {} ({})", r.reason, r.message),
            )),
        }
    }
}
