//! `spec/7.1/…`: SPEC §7.1 (protocol/SPEC.md).

/// The cases about launch.
pub mod launch {
    use crate::harness::case::run;
    use crate::harness::case::Case;
    use crate::harness::case::Target;
    use crate::harness::env::Ctx;
    use crate::harness::verdict::Level;
    use crate::harness::verdict::Outcome;
    use crate::kit::worker::registered;
    use sparkwire::messages::deploy::*;
    use sparkwire::messages::DeployMessage;
    use sparkwire::messages::Version;
    use sparkwire::wire::Envelope;

    type D = DeployMessage;

    /// The cases of this section, each naming its targets.
    pub fn cases(cs: &mut Vec<Case>) {
        cs.push(Case {
            id: "spec/7.1/decommission-silent".into(),
            level: Level::Must,
            targets: vec![Target::Worker],
            quote: "SPEC §7.1, `DecommissionWorker` (master → worker): \"the worker marks itself \
                decommissioned and sends nothing back … `WorkerDecommissioning` goes to the master \
                only when a decommission starts on the worker's own side\""
                .into(),
            requirement: "a worker told DecommissionWorker (version 2) sends no \
                WorkerDecommissioning within the quiet time"
                .into(),
            body: run(decommission_silent),
            ..Case::default()
        });
    }

    async fn decommission_silent(ctx: Ctx) -> Outcome {
        let mut w = registered(&ctx, &[Version::V2]).await?;
        w.conn
            .send(&Envelope::Send(D::DecommissionWorker(
                DecommissionWorker::new(),
            )))
            .await?;
        w.conn
            .expect_none::<D>(
                ctx.settings.quiet,
                "nothing back for DecommissionWorker (no WorkerDecommissioning)",
                |e| matches!(e, Envelope::Send(D::WorkerDecommissioning(_))),
            )
            .await
    }
}

/// The cases about asks.
pub mod asks {
    use crate::harness::case::run;
    use crate::harness::case::Case;
    use crate::harness::case::Target;
    use crate::harness::env::Ctx;
    use crate::harness::verdict::check;
    use crate::harness::verdict::Level;
    use crate::harness::verdict::Outcome;
    use crate::kit::support::master_asks::*;
    use crate::kit::versions::*;
    use sparkwire::messages::deploy::DecommissionWorkersOnHosts;
    use sparkwire::messages::deploy::RequestClearCompletedDriversAndApps;
    use sparkwire::messages::deploy::RequestMasterState;
    use sparkwire::messages::deploy::RequestReadyz;
    use sparkwire::messages::DeployMessage;
    use sparkwire::messages::Version;
    use sparkwire::wire::Reply;
    use std::time::Duration;

    type D = DeployMessage;

    /// The cases of this section, each naming its targets.
    pub fn cases(cs: &mut Vec<Case>) {
        cs.push(Case {
            id: "spec/7.1/driver-client/master-state".into(),
            level: Level::Must,
            targets: vec![Target::Master],
            timeout: Duration::from_secs(10),
            quote: "SPEC §7.1, \"`RequestMasterState`, `RequestReadyz`, \
                `RequestClearCompletedDriversAndApps`, ... and their answers | from `ui` only ... \
                | from `driver-client` or `ui`\""
                .into(),
            requirement: "a driver client's RequestMasterState is answered with a \
                MasterStateResponse, as a UI's is"
                .into(),
            body: run(master_state),
            ..Case::default()
        });
        cs.push(Case {
            id: "spec/7.1/driver-client/readyz".into(),
            level: Level::Must,
            targets: vec![Target::Master],
            timeout: Duration::from_secs(10),
            quote: "SPEC §7.1 (RequestReadyz \"from `driver-client` or `ui`\")".into(),
            requirement: "a driver client's RequestReadyz is answered true by the active master, \
                as a UI's is"
                .into(),
            body: run(readyz),
            ..Case::default()
        });
        cs.push(Case {
            id: "spec/7.1/driver-client/clear-completed".into(),
            level: Level::Must,
            targets: vec![Target::Master],
            timeout: Duration::from_secs(10),
            quote:
                "SPEC §7.1 (RequestClearCompletedDriversAndApps \"from `driver-client` or `ui`\")"
                    .into(),
            requirement:
                "a driver client's RequestClearCompletedDriversAndApps is answered with a \
                bool, as a UI's is"
                    .into(),
            body: run(clear_completed),
            ..Case::default()
        });
        cs.push(Case {
            id: "spec/7.1/driver-client/decommission-hosts".into(),
            level: Level::Must,
            targets: vec![Target::Master],
            timeout: Duration::from_secs(10),
            quote: "SPEC §7.1, DecommissionWorkersOnHosts \"from `driver-client` or `ui`\"".into(),
            requirement:
                "a driver client's DecommissionWorkersOnHosts of a host with no worker is \
                answered 0 (an i32)"
                    .into(),
            body: run(decommission_hosts),
            ..Case::default()
        });
    }

    async fn master_state(ctx: Ctx) -> Outcome {
        let want = "a MasterStateResponse reply to ask 3";
        let m = D::RequestMasterState(RequestMasterState::new());
        let r = ask_as_driver_client(&ctx, highest(&ctx), m, want).await?;
        check(
            matches!(r, Reply::Message(D::MasterStateResponse(_))),
            want,
            format!("{r:?}"),
        )
    }

    async fn readyz(ctx: Ctx) -> Outcome {
        let want = "a bool reply true to ask 3";
        let r = ask_as_driver_client(
            &ctx,
            Version::V2,
            D::RequestReadyz(RequestReadyz::new()),
            want,
        )
        .await?;
        check(matches!(r, Reply::Bool(true)), want, format!("{r:?}"))
    }

    async fn clear_completed(ctx: Ctx) -> Outcome {
        let want = "a bool reply to ask 3";
        let r = ask_as_driver_client(
            &ctx,
            Version::V2,
            D::RequestClearCompletedDriversAndApps(RequestClearCompletedDriversAndApps::new()),
            want,
        )
        .await?;
        check(matches!(r, Reply::Bool(_)), want, format!("{r:?}"))
    }

    async fn decommission_hosts(ctx: Ctx) -> Outcome {
        let want = "an integer reply 0 to ask 3";
        let r = ask_as_driver_client(
            &ctx,
            Version::V2,
            D::DecommissionWorkersOnHosts(DecommissionWorkersOnHosts::new(vec![
                "no-worker-here.invalid".into(),
            ])),
            want,
        )
        .await?;
        check(matches!(r, Reply::Int(0)), want, format!("{r:?}"))
    }
}
