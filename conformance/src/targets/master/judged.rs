//! The master's cases whose requirement the case's judge checks at their end
//! ([`crate::env::Judge`]): a conversation the case leaves for the judge to finish (rule N3), and
//! a situation the judge alone could not make happen (rule P4).

use sparkwire::messages::deploy::RegisterApplication;
use sparkwire::messages::{Addr, DeployMessage, EndpointRef, Version};
use sparkwire::wire::handshake::Role;
use sparkwire::wire::Envelope;
use std::time::Duration;

use crate::case::{run, Case, Sharing, Target};
use crate::env::Ctx;
use crate::kit::common::unique;
use crate::kit::master::{app, app_desc, launches, open, worker, Need};
use crate::verdict::{check, Level, Outcome};

type D = DeployMessage;

pub(super) fn add(cs: &mut Vec<Case>) {
    cs.push(Case {
        id: "rules/N3/registration-answered-by-the-end".into(),
        level: Level::Must,
        targets: vec![Target::Master],
        timeout: Duration::from_secs(10),
        needs: vec![Need::OwnRegistrations],
        requirement: "rules.md N3, \
        \"Every RegisterApplication on a connection still open at the end of the trace has been answered with \
            RegisteredApplication\": an application client registers and lets go of its connection at once; before \
                closing it the suite's judge listens, within the case's time, for the RegisteredApplication the \
                    master owes".into(),
        body: run(rules_n3_registration_answered_by_the_end),
        ..Case::default()
    });
    cs.push(Case {
        id: "rules/P4/no-launch-after-unregister".into(),
        level: Level::Must,
        targets: vec![Target::Master],
        timeout: Duration::from_secs(10),
        sharing: Sharing::Alone,
        needs: vec![Need::NoOtherApplication],
        requirement: "rules.md P4, \
        \"LaunchExecutor is only for an application that is registered and has not finished\": once the master's \
            state no longer lists an application its client unregistered, a worker with room that registers gets no \
                LaunchExecutor for it".into(),
        body: run(rules_p4_no_launch_after_unregister),
        ..Case::default()
    });
}

async fn rules_n3_registration_answered_by_the_end(ctx: Ctx) -> Outcome {
    judged(&ctx)?;
    let mut c = open(&ctx, Role::AppClient, "app", "", Version::V2).await?;
    // An application of its own name (the `registration-unanswered` master answers only the
    // suite's usual one), which no worker can run (no executor memory a worker offers).
    let mut desc = app_desc(Some(1), 64, Some(0));
    desc.name = "sparkwire-conformance-registered-by-the-end".into();
    let port = 40000 + (unique() % 20000) as i32;
    c.send(&Envelope::Send(D::RegisterApplication(
        RegisterApplication::new(
            desc,
            EndpointRef::at(Addr::new("127.0.0.1", port), "AppClient"),
        ),
    )))
    .await?;
    // The case ends here: the judge owes the conversation its end (Judge::settle).
    Ok(())
}

async fn rules_p4_no_launch_after_unregister(ctx: Ctx) -> Outcome {
    let (mut c, id) = app(&ctx, "app", app_desc(Some(1), 64, None), Version::V2).await?;
    super::clients::unregistered(&ctx, &mut c, &id).await?;
    let mut w = worker(&ctx, "worker", 2, 1024, Version::V2).await?;
    let launched: Vec<i32> = launches(&ctx, &mut w)
        .await
        .into_iter()
        .filter(|l| l.app_id == id)
        .map(|l| l.exec_id)
        .collect();
    check(
        launched.is_empty(),
        format!("no LaunchExecutor for {id}, which its client unregistered"),
        format!("LaunchExecutor for executors {launched:?} of {id}"),
    )
}

/// The case's requirement is checked by its judge, which is off on Spark's wire: there the case
/// is skipped.
fn judged(ctx: &Ctx) -> Outcome {
    match ctx.log.wire() {
        crate::env::Wire::Sparkwire => Ok(()),
        crate::env::Wire::Spark(_) => Err(crate::peer::not_on_spark_wire(
            "the judge, which checks what a finished conversation owes, is off there",
        )),
    }
}
