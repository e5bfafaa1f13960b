//! `rules/w/…`: protocol/rules.md, the rules W1, W2, ….

/// The cases about ownership.
pub mod ownership {
    use crate::harness::case::run;
    use crate::harness::case::Case;
    use crate::harness::case::Target;
    use crate::harness::env::Ctx;
    use crate::harness::verdict::check;
    use crate::harness::verdict::Level;
    use crate::harness::verdict::Outcome;
    use crate::kit::master::open;
    use crate::kit::master::state;
    use crate::kit::master::worker;
    use crate::kit::support::authorization::*;
    use sparkwire::messages::Version;
    use sparkwire::messages::WorkerState;
    use sparkwire::wire::handshake::Role;
    use sparkwire::wire::Envelope;
    use std::time::Duration;

    /// The cases of this section, each naming its targets.
    pub fn cases(cs: &mut Vec<Case>) {
        cs.push(Case {
            id: "rules/W1/register-first".into(),
            level: Level::Must,
            targets: vec![Target::Master],
            timeout: Duration::from_secs(10),
            quote: "SPEC §14.2 Z2, \"A `Heartbeat` naming a worker the master never registered is \
                ignored: nothing is sent and nothing changes\"; rules.md W1"
                .into(),
            requirement:
                "a Heartbeat before RegisterWorker gets no answer and registers no worker \
                (a strict master MAY close)"
                    .into(),
            body: run(heartbeat_before_registering),
            ..Case::default()
        });
        cs.push(Case {
            id: "rules/W2/worker-id".into(),
            level: Level::Must,
            targets: vec![Target::Master],
            timeout: Duration::from_secs(10),
            quote: "SPEC §14.2 Z2; rules.md W2".into(),
            requirement: "a Heartbeat naming an unregistered id changes nothing; the registered \
                worker stays ALIVE (strict: close)"
                .into(),
            body: run(heartbeat_naming_unknown_worker),
            ..Case::default()
        });
    }

    async fn heartbeat_before_registering(ctx: Ctx) -> Outcome {
        let id = fresh_worker_id();
        let mut c = open(&ctx, Role::Worker, "worker", &id, Version::V2).await?;
        c.send(&Envelope::Send(heartbeat(&id))).await?;
        nothing_back(
            &ctx,
            &mut c,
            "a Heartbeat of a worker never registered",
            heartbeat_answer,
        )
        .await?;
        worker_absent(&ctx, &id).await
    }

    async fn heartbeat_naming_unknown_worker(ctx: Ctx) -> Outcome {
        let mut w = worker(&ctx, "worker", 0, 0, Version::V2).await?;
        let other = fresh_worker_id();
        w.conn.send(&Envelope::Send(heartbeat(&other))).await?;
        let closed = nothing_back(
            &ctx,
            &mut w.conn,
            "a Heartbeat of a worker never registered",
            heartbeat_answer,
        )
        .await?;
        worker_absent(&ctx, &other).await?;
        if closed {
            return Ok(());
        }
        let s = state(&ctx).await?;
        check(
            s.workers
                .iter()
                .any(|i| i.id == w.id && i.state == WorkerState::Alive),
            "the registered worker still ALIVE",
            "not ALIVE",
        )
    }
}

/// The cases about closing.
pub mod closing {
    use crate::harness::case::run;
    use crate::harness::case::Case;
    use crate::harness::case::Sharing;
    use crate::harness::case::Target;
    use crate::harness::env::Ctx;
    use crate::harness::env::Wire;
    use crate::harness::verdict::Level;
    use crate::harness::verdict::Outcome;
    use crate::kit::master::app;
    use crate::kit::master::app_desc;
    use crate::kit::master::state;
    use crate::kit::master::worker;
    use crate::kit::master::worker_ref;
    use crate::kit::master::Need;
    use sparkwire::messages::deploy::*;
    use sparkwire::messages::DeployMessage;
    use sparkwire::messages::Version;
    use sparkwire::messages::WorkerState;
    use sparkwire::wire::Envelope;
    use std::time::Duration;

    type D = DeployMessage;

    /// The cases of this section, each naming its targets.
    pub fn cases(cs: &mut Vec<Case>) {
        // It registers a worker with capacity and an application: alone.
        cs.push(Case {
            id: "rules/W5/decommissioned-no-launch".into(),
            level: Level::Must,
            targets: vec![Target::Master],
            timeout: Duration::from_secs(20),
            sharing: Sharing::Alone,
            needs: vec![Need::NoOtherApplication],
            quote: "rules.md W5, \"The master sends LaunchExecutor and LaunchDriver only to a \
                worker registered on that connection and ALIVE: not lost (DEAD) and not \
                [decommissioned]\""
                .into(),
            requirement: "a worker that sent WorkerDecommissioning is DECOMMISSIONED and gets no \
                LaunchExecutor"
                .into(),
            body: run(decommissioned_no_launch),
        });
    }

    async fn decommissioned_no_launch(ctx: Ctx) -> Outcome {
        let mut w = worker(&ctx, "worker", 2, 4096, Version::V2).await?;
        w.conn
            .send(&Envelope::Send(D::WorkerDecommissioning(
                WorkerDecommissioning::new(w.id.clone(), worker_ref(&w.host, 1)),
            )))
            .await?;
        let id = w.id.clone();
        if ctx.log.wire() == Wire::Sparkwire {
            crate::kit::master::settle_within(
                crate::kit::common::reaction_wait(&ctx),
                || async {
                    let s = state(&ctx).await?;
                    Ok(s.workers
                        .iter()
                        .any(|x| x.id == id && x.state == WorkerState::Decommissioned))
                },
                &format!("worker {id} DECOMMISSIONED in the master's state"),
            )
            .await?;
        } else {
            // Spark's MasterStateResponse shows every worker ALIVE (WorkerInfo's state is transient
            // in its Java serialization): the master gets the quiet time to take the message instead.
            tokio::time::sleep(ctx.settings.quiet).await;
        }
        let (_app, app_id) = app(&ctx, "app", app_desc(Some(1), 64, None), Version::V2).await?;
        w.conn
            .expect_none::<D>(
                ctx.settings.quiet * 3,
                "no LaunchExecutor to the decommissioned worker",
                |e| matches!(e, Envelope::Send(D::LaunchExecutor(l)) if l.app_id == app_id),
            )
            .await
    }
}

/// The cases about worker.
pub mod worker {
    use crate::harness::case::run;
    use crate::harness::case::Case;
    use crate::harness::case::Target;
    use crate::harness::env::Ctx;
    use crate::harness::verdict::check;
    use crate::harness::verdict::Level;
    use crate::kit::common::wait;
    use crate::kit::spawned;
    use crate::kit::worker::*;
    use sparkwire::messages::deploy::*;
    use sparkwire::messages::DeployMessage;
    use sparkwire::messages::Version;
    use sparkwire::wire::Envelope;
    use std::time::Duration;

    type D = DeployMessage;

    /// The cases of this section, each naming its targets.
    pub fn cases(cs: &mut Vec<Case>) {
        cs.push(Case {
            id: "rules/W1/register-first".into(),
            level: Level::Must,
            targets: vec![Target::Worker],
            requirement:
                "the worker sends RegisterWorker first, and nothing else until the master \
                registered it (rule W1)"
                    .into(),
            body: run(|ctx: Ctx| async move {
                let (_run, mut conn) = start(ctx.clone()).await?;
                let hello = conn.read_hello(spawned::startup(&ctx)).await?;
                spawned::accept(
                    &ctx,
                    &mut conn,
                    &hello,
                    &[Version::V1, Version::V2],
                    "master",
                )
                .await?;
                let first = conn.recv::<D>(wait(&ctx), "RegisterWorker").await?;
                check(
                    matches!(first, Envelope::Send(D::RegisterWorker(_))),
                    "a send of \
                    RegisterWorker",
                    crate::harness::peer::envelope_label(&first),
                )?;
                conn.expect_none::<D>(
                    ctx.settings.quiet,
                    "nothing before \
                    RegisteredWorker",
                    |e| !matches!(e, Envelope::Send(D::RegisterWorker(_))),
                )
                .await
            }),
            ..Case::default()
        });
        cs.push(Case {
            id: "rules/W2/heartbeat".into(),
            level: Level::Must,
            targets: vec![Target::Worker],
            requirement: "a registered worker heartbeats within its worker timeout, with the \
                worker id it registered (rule W2)"
                .into(),
            body: run(|ctx: Ctx| async move {
                let mut w = registered(&ctx, &[Version::V1, Version::V2]).await?;
                let id = w.reg.id.clone();
                let hb = w
                    .conn
                    .expect::<D, Heartbeat>(
                        Duration::from_secs(3),
                        "a Heartbeat within the worker timeout \
                    (2 \
                    s)",
                        |e| match e {
                            Envelope::Send(D::Heartbeat(h)) => Some(h.clone()),
                            _ => None,
                        },
                    )
                    .await?;
                check(hb.worker_id == id, format!("worker id {id}"), hb.worker_id)
            }),
            ..Case::default()
        });
    }
}
