//! `handshake/7/…`: protocol/handshake.md §7.

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
            id: "handshake/7/other-family-server".into(),
            level: Level::Should,
            targets: vec![Target::Worker, Target::Driver, Target::Executor],
            requirement: format!(
                "{name} closes a connection whose server declares a role of the other family ({})",
                s.other_family_role.name()
            ),
            body: bind(&s, move |ctx: Ctx, s| async move {
                closes(ctx, s.clone(), |h| {
                    frame(&mp::map(&accepted_entries(
                        best(h),
                        s.other_family_role.name(),
                    )))
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
    use crate::harness::verdict::Level;
    use crate::harness::verdict::Outcome;
    use crate::kit::endpoint::Endpoint;
    use crate::kit::support::server::*;
    use sparkwire::wire::handshake::RefusalReason;

    /// The cases of this section for the listening endpoint `s` (a master, a worker's UI port, a driver's
    /// executor port).
    pub fn for_server(cs: &mut Vec<Case>, s: &Endpoint) {
        let name = s.name;
        cs.push(Case {
            id: "handshake/7/other-family-role".into(),
            level: Level::Must,
            targets: vec![Target::Master, Target::Worker, Target::Driver],
            requirement: format!(
                "{name} refuses a role of a family it does not serve here with roleNotAccepted, \
                    then closes"
            ),
            body: bind(s, handshake_7_other_family_role),
            ..Case::default()
        });
    }

    async fn handshake_7_other_family_role(ctx: Ctx, s: Endpoint) -> Outcome {
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
}
