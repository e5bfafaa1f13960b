//! `rules/m/…`: protocol/rules.md, the rules M1, M2, ….

use crate::harness::case::run;
use crate::harness::case::Case;
use crate::harness::case::Target;
use crate::harness::env::Ctx;
use crate::harness::verdict::Level;
use crate::kit::common::expect_refused;
use crate::kit::common::wait;
use crate::kit::master::*;
use sparkwire::messages::deploy::*;
use sparkwire::messages::DeployMessage;
use sparkwire::messages::Version;
use sparkwire::wire::handshake::Role;
use sparkwire::wire::Envelope;

type D = DeployMessage;

/// The cases of this section, each naming its targets.
pub fn cases(cs: &mut Vec<Case>) {
    cs.push(Case {
        id: "rules/M3/send-as-ask".into(),
        level: Level::Must,
        targets: vec![Target::Master],
        requirement: "the master refuses a send-kind message (Heartbeat) sent as an ask by a \
            registered worker: a failure or a close"
            .into(),
        body: run(|ctx: Ctx| async move {
            let mut w = worker(&ctx, "worker", 0, 0, Version::V2).await?;
            let hb = D::Heartbeat(Heartbeat::new(w.id.clone(), worker_ref(&w.host, 1)));
            expect_refused(
                &mut w.conn,
                Envelope::Ask {
                    id: 31,
                    message: hb,
                },
                wait(&ctx),
            )
            .await
        }),
        ..Case::default()
    });
    cs.push(Case {
        id: "rules/M3/ask-as-send".into(),
        level: Level::Must,
        targets: vec![Target::Master],
        requirement:
            "the master refuses an ask-kind message (RequestMasterState) sent one-way: it \
            closes the connection"
                .into(),
        body: run(|ctx: Ctx| async move {
            let mut c = open(&ctx, Role::Ui, "ui", "", Version::V2).await?;
            expect_refused(
                &mut c,
                Envelope::Send(D::RequestMasterState(RequestMasterState::new())),
                wait(&ctx),
            )
            .await
        }),
        ..Case::default()
    });
}
