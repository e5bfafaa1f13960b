//! `route/deploy/…`: the routes of the deploy family (definition.json): a message off its route is refused.

/// The cases about master.
pub mod master {
    use crate::harness::case::run;
    use crate::harness::case::Case;
    use crate::harness::case::Target;
    use crate::harness::env::Ctx;
    use crate::harness::verdict::Level;
    use crate::kit::common::crossing;
    use crate::kit::common::envelope_of;
    use crate::kit::common::expect_refused;
    use crate::kit::common::sample;
    use crate::kit::common::wait;
    use crate::kit::master::*;
    use crate::kit::support::master::*;
    use sparkwire::messages::DeployMessage;
    use sparkwire::messages::Version;
    use sparkwire::wire::handshake::Role;

    type D = DeployMessage;

    /// The cases of this section, each naming its targets.
    pub fn cases(cs: &mut Vec<Case>) {
        for msg in crossing("deploy") {
            let to_master = msg.to.iter().any(|r| r == "master");
            let role = CLIENTS
                .into_iter()
                .find(|r| {
                    let from = msg.from.iter().any(|f| f == r.name());
                    if to_master {
                        !from
                    } else {
                        from || msg.to.iter().any(|t| t == r.name())
                    }
                })
                .unwrap_or(Role::Worker);
            let quote = format!(
                "SPEC §14.1, \"A message is taken only along its route\"; messages.md, {}: \"Route: {} → {}.\"",
                msg.name,
                msg.from.join(","),
                msg.to.join(",")
            );
            let peer = match role.name().starts_with(['a', 'e', 'i', 'o', 'u']) {
                true => format!("an {} peer", role.name()),
                false => format!("a {} peer", role.name()),
            };
            let requirement = match msg.kind {
                sparkwire::definition::MessageKind::Ask => format!(
                    "the master refuses the ask {} from {peer}: a failure or a close",
                    msg.name
                ),
                sparkwire::definition::MessageKind::Reply => format!(
                    "the master closes the connection of {peer} that sends {} outside a reply",
                    msg.name
                ),
                _ => format!(
                    "the master closes the connection of {peer} that sends {}",
                    msg.name
                ),
            };
            cs.push(Case {
                id: format!("route/deploy/{}", msg.name),
                level: Level::Must,
                targets: vec![Target::Master],
                quote,
                requirement,
                body: run(move |ctx: Ctx| async move {
                    let m: D = sample(msg)?;
                    let mut c = open(&ctx, role, "suite", "", Version::V2).await?;
                    expect_refused(&mut c, envelope_of(msg, m, 21), wait(&ctx)).await
                }),
                ..Case::default()
            });
        }
    }
}

/// The cases about worker.
pub mod worker {
    use crate::harness::case::run;
    use crate::harness::case::Case;
    use crate::harness::case::Target;
    use crate::harness::env::Ctx;
    use crate::harness::verdict::Level;
    use crate::kit::common::expect_refused;
    use crate::kit::common::wait;
    use crate::kit::worker::*;
    use sparkwire::messages::DeployMessage;
    use sparkwire::messages::Version;
    use sparkwire::wire::Envelope;

    type D = DeployMessage;

    /// The cases of this section, each naming its targets.
    pub fn cases(cs: &mut Vec<Case>) {
        for msg in crate::kit::common::crossing("deploy") {
            let ask = msg.kind == sparkwire::definition::MessageKind::Ask;
            let to_worker_from_ui =
                msg.from.iter().any(|r| r == "ui") && msg.to.iter().any(|r| r == "worker");
            if !ask || to_worker_from_ui {
                continue;
            }
            let quote = format!(
                "SPEC §14.1, \"A message is taken only along its route\"; messages.md, {}: \"Route: {} → {}.\"",
                msg.name,
                msg.from.join(","),
                msg.to.join(",")
            );
            let requirement = format!(
                "the worker refuses the ask {} from a ui peer on its UI port: a failure or a close",
                msg.name
            );
            cs.push(Case {
                id: format!("route/deploy/{}", msg.name),
                level: Level::Must,
                targets: vec![Target::Worker],
                quote,
                requirement,
                body: run(move |ctx: Ctx| async move {
                    let m: D = crate::kit::common::sample(msg)?;
                    let mut w = registered(&ctx, &[Version::V1, Version::V2]).await?;
                    let mut ui = ui_conn(&ctx, &mut w).await?;
                    expect_refused(&mut ui, Envelope::Ask { id: 61, message: m }, wait(&ctx)).await
                }),
                ..Case::default()
            });
        }
    }
}
