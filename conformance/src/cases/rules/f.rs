//! `rules/f/…`: protocol/rules.md, the rules F1, F2, ….

use crate::harness::case::run;
use crate::harness::case::Case;
use crate::harness::case::Target;
use crate::harness::env::Ctx;
use crate::harness::verdict::check;
use crate::harness::verdict::Level;
use crate::kit::common::wait;
use crate::kit::worker::*;
use sparkwire::messages::deploy::*;
use sparkwire::messages::Addr;
use sparkwire::messages::DeployMessage;
use sparkwire::messages::EndpointRef;
use sparkwire::messages::Version;
use sparkwire::wire::Envelope;

type D = DeployMessage;

/// The cases of this section, each naming its targets.
pub fn cases(cs: &mut Vec<Case>) {
    cs.push(Case {
        id: "rules/F1/master-changed".into(),
        level: Level::Must,
        targets: vec![Target::Worker],
        requirement: "a worker told MasterChanged answers once with WorkerSchedulerStateResponse \
            carrying its id (rule F1)"
            .into(),
        body: run(|ctx: Ctx| async move {
            let mut w = registered(&ctx, &[Version::V1, Version::V2]).await?;
            let id = w.reg.id.clone();
            let given = w.run.given;
            w.conn
                .send(&Envelope::Send(D::MasterChanged(MasterChanged::new(
                    EndpointRef::at(
                        Addr::new(given.ip().to_string(), i32::from(given.port())),
                        "Master",
                    ),
                    "http://127.0.0.1:8080".into(),
                ))))
                .await?;
            let r = w
                .conn
                .expect::<D, WorkerSchedulerStateResponse>(
                    wait(&ctx),
                    "WorkerSchedulerStateResponse",
                    |e| match e {
                        Envelope::Send(D::WorkerSchedulerStateResponse(r)) => Some(r.clone()),
                        _ => None,
                    },
                )
                .await?;
            check(r.id == id, format!("id {id}"), r.id.clone())?;
            w.conn
                .expect_none::<D>(
                    ctx.settings.quiet,
                    "one \
                WorkerSchedulerStateResponse",
                    |e| matches!(e, Envelope::Send(D::WorkerSchedulerStateResponse(_))),
                )
                .await
        }),
        ..Case::default()
    });
}
