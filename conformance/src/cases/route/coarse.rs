//! `route/coarse/…`: the routes of the coarse family (definition.json): a message off its route is refused.

/// The cases about driver.
pub mod driver {
    use crate::harness::case::run;
    use crate::harness::case::Case;
    use crate::harness::case::Target;
    use crate::harness::env::Ctx;
    use crate::harness::peer::Conn;
    use crate::harness::verdict::Level;
    use crate::kit::common::crossing;
    use crate::kit::common::expect_refused;
    use crate::kit::common::sample;
    use crate::kit::common::wait;
    use crate::kit::driver::*;
    use sparkwire::messages::CoarseMessage;
    use sparkwire::messages::Version;
    use sparkwire::wire::handshake::Role;
    use sparkwire::wire::Envelope;

    type C = CoarseMessage;

    /// The cases of this section, each naming its targets.
    pub fn cases(cs: &mut Vec<Case>) {
        for msg in crossing("coarse") {
            let ask = msg.kind == sparkwire::definition::MessageKind::Ask;
            if !ask || msg.from.iter().any(|r| r == "executor") {
                continue;
            }
            let quote = format!(
                "SPEC §14.1, \"A message is taken only along its route\"; messages.md, {}: \"Route: {} → {}.\"",
                msg.name,
                msg.from.join(","),
                msg.to.join(",")
            );
            let requirement = format!(
                "the driver refuses the ask {} from an executor: a failure or a close",
                msg.name
            );
            cs.push(Case {
                id: format!("route/coarse/{}", msg.name),
                level: Level::Must,
                targets: vec![Target::Driver],
                quote,
                requirement,
                body: run(move |ctx: Ctx| async move {
                    let m: C = sample(msg)?;
                    let d = registered(&ctx, SMALL).await?;
                    let mut c = Conn::open(
                        d.driver_addr,
                        "executor",
                        Role::Executor,
                        "9",
                        &[Version::V2],
                        ctx.settings.secret.as_ref(),
                        &ctx.log,
                        wait(&ctx),
                    )
                    .await?;
                    expect_refused(&mut c, Envelope::Ask { id: 71, message: m }, wait(&ctx)).await
                }),
                ..Case::default()
            });
        }
    }
}

/// The cases about executor.
pub mod executor {
    use crate::harness::case::run;
    use crate::harness::case::Case;
    use crate::harness::case::Target;
    use crate::harness::env::Ctx;
    use crate::harness::verdict::Level;
    use crate::kit::common::crossing;
    use crate::kit::common::expect_refused;
    use crate::kit::common::sample;
    use crate::kit::common::wait;
    use crate::kit::executor::*;
    use sparkwire::messages::CoarseMessage;
    use sparkwire::messages::Version;
    use sparkwire::wire::Envelope;

    type C = CoarseMessage;

    /// The cases of this section, each naming its targets.
    pub fn cases(cs: &mut Vec<Case>) {
        for msg in crossing("coarse") {
            let ask = msg.kind == sparkwire::definition::MessageKind::Ask;
            if !ask
                || (msg.from.iter().any(|r| r == "driver")
                    && msg.to.iter().any(|r| r == "executor"))
            {
                continue;
            }
            let quote = format!(
                "SPEC §14.1, \"A message is taken only along its route\"; messages.md, {}: \"Route: {} → {}.\"",
                msg.name,
                msg.from.join(","),
                msg.to.join(",")
            );
            let requirement = format!(
                "the executor refuses the ask {} from its driver: a failure or a close",
                msg.name
            );
            cs.push(Case {
                id: format!("route/coarse/{}", msg.name),
                level: Level::Must,
                targets: vec![Target::Executor],
                quote,
                requirement,
                body: run(move |ctx: Ctx| async move {
                    let m: C = sample(msg)?;
                    let mut e = registered(&ctx, &[Version::V1, Version::V2], 128).await?;
                    expect_refused(
                        &mut e.conn,
                        Envelope::Ask { id: 81, message: m },
                        wait(&ctx),
                    )
                    .await
                }),
                ..Case::default()
            });
        }
    }
}
