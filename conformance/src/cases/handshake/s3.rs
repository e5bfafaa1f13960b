//! `handshake/3/…`: protocol/handshake.md §3.

/// The cases about client.
pub mod client {
    use crate::harness::case::bind;
    use crate::harness::case::Case;
    use crate::harness::case::Target;
    use crate::harness::env::Ctx;
    use crate::harness::verdict::check;
    use crate::harness::verdict::Level;
    use crate::kit::endpoint::Endpoint;
    use crate::kit::support::client::*;
    use sparkwire::messages::Version;

    /// The cases of this section for the connecting endpoint `s` (a worker, a driver's application
    /// client, an executor).
    pub fn for_client(cs: &mut Vec<Case>, s: Endpoint) {
        let name = s.name;
        cs.push(Case {
            id: "handshake/3/hello".into(),
            level: Level::Must,
            targets: vec![Target::Worker, Target::Driver, Target::Executor],
            requirement: format!(
                "{name}'s first frame is a hello: magic \"sparkwire\", its versions, its role \
                    ({}), an id",
                s.role.name()
            ),
            body: bind(&s, move |ctx: Ctx, s| async move {
                let (_run, mut c) = s.start(ctx.clone()).await?;
                let (h, _) = hello(&ctx, &mut c).await?;
                check(
                    h.role == s.role,
                    format!("role {}", s.role.name()),
                    h.role.name(),
                )?;
                check(
                    h.versions
                        .iter()
                        .any(|v| Version::from_number(*v).is_some()),
                    "a version of 1 or \
                    2",
                    format!("{:?}", h.versions),
                )
            }),
            ..Case::default()
        });
        cs.push(Case {
            id: "handshake/3/magic-first".into(),
            level: Level::Should,
            targets: vec![Target::Worker, Target::Driver, Target::Executor],
            requirement: format!(
                "{name} writes the hello's keys in the order magic, versions, role, id"
            ),
            body: bind(&s, move |ctx: Ctx, s| async move {
                let (_run, mut c) = s.start(ctx.clone()).await?;
                let (_, body) = hello(&ctx, &mut c).await?;
                let mut cur = body.as_slice();
                let mut keys = Vec::new();
                if let Ok(n) = rmp::decode::read_map_len(&mut cur) {
                    for _ in 0..n {
                        let mut k = vec![0u8; 64];
                        match rmp::decode::read_str(&mut cur, &mut k) {
                            Ok(key) => keys.push(key.to_string()),
                            Err(_) => break,
                        }
                        let start = body.len() - cur.len();
                        match sparkwire::wire::msgpack::value_len(&body[start..]) {
                            Ok(len) => cur = &cur[len..],
                            Err(_) => break,
                        }
                    }
                }
                check(
                    keys.first().map(String::as_str) == Some("magic")
                        && keys.get(1).map(String::as_str) == Some("versions")
                        && keys.get(2).map(String::as_str) == Some("role")
                        && keys.get(3).map(String::as_str) == Some("id"),
                    "magic, versions, role, id",
                    keys.join(", "),
                )
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
    use crate::harness::verdict::Level;
    use crate::harness::verdict::Outcome;
    use crate::kit::endpoint::Endpoint;
    use crate::kit::support::server::*;
    use sparkwire::messages::Version;
    use sparkwire::wire::handshake::RefusalReason;

    /// The cases of this section for the listening endpoint `s` (a master, a worker's UI port, a driver's
    /// executor port).
    pub fn for_server(cs: &mut Vec<Case>, s: &Endpoint) {
        let name = s.name;
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
            id: "handshake/3/duplicate-key".into(),
            level: Level::Must,
            targets: vec![Target::Master, Target::Worker, Target::Driver],
            requirement: format!(
                "{name} refuses a hello in which a key appears twice with malformedHello, then closes"
            ),
            body: bind(s, handshake_3_duplicate_key),
            ..Case::default()
        });
    }

    async fn handshake_3_versions_any_order(ctx: Ctx, s: Endpoint) -> Outcome {
        accepts(ctx, s, &[2, 1]).await
    }

    async fn handshake_3_keys_any_order(ctx: Ctx, s: Endpoint) -> Outcome {
        let mut e = hello(&ctx, &s, &[1, 2])?;
        e.reverse();
        accepted(ctx.clone(), s, mp::map(&e), Version::V2).await
    }

    async fn handshake_3_unknown_keys_ignored(ctx: Ctx, s: Endpoint) -> Outcome {
        let mut e = hello(&ctx, &s, &[1, 2])?;
        e.push(("zzzLaterRevisionKey", mp::arr(&[mp::s("x"), mp::u(1)])));
        accepted(ctx.clone(), s, mp::map(&e), Version::V2).await
    }

    async fn handshake_3_empty_id(ctx: Ctx, s: Endpoint) -> Outcome {
        accepted(
            ctx.clone(),
            s.clone(),
            mp::map(&signed(
                &ctx,
                mp::hello_entries(&[1, 2], s.suite_role.name(), ""),
            )?),
            Version::V2,
        )
        .await
    }

    async fn handshake_3_duplicate_key(ctx: Ctx, s: Endpoint) -> Outcome {
        let mut e = hello(&ctx, &s, &[1, 2])?;
        e.push(("role", mp::s(s.suite_role.name())));
        refused(
            ctx.clone(),
            s,
            mp::map(&e),
            &[RefusalReason::MalformedHello],
        )
        .await
    }
}
