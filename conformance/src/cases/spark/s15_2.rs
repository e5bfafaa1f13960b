//! `spark/15.2/…`: SPEC §15.2, Spark's own wire.

use crate::harness::case::bind;
use crate::harness::case::run;
use crate::harness::case::Case;
use crate::harness::case::Sharing;
use crate::harness::case::Target;
use crate::harness::env::Ctx;
use crate::harness::peer::Event;
use crate::harness::spark_wire::endpoint_of;
use crate::harness::verdict::check;
use crate::harness::verdict::fail;
use crate::harness::verdict::Level;
use crate::harness::verdict::Outcome;
use crate::kit::common::wait;
use crate::kit::endpoint::*;
use crate::kit::support::spark::*;
use sparkwire::messages::DeployMessage;
use sparkwire::messages::Version;
use sparkwire::wire::handshake::Role;
use sparkwire::wire::Envelope;
use sparkwire::wire::Reply;
use std::time::Duration;

type D = DeployMessage;

/// The cases of this section for `s`, an endpoint listening on Spark's own wire.
pub fn for_spark_server(cs: &mut Vec<Case>, s: Endpoint) {
    let name = s.name;
    cs.push(Case {
        id: "spark/15.2/check-existence".into(),
        level: Level::Must,
        targets: vec![Target::Master, Target::Worker],
        timeout: Duration::from_secs(10),
        sharing: Sharing::Alone,
        requirement: format!(
            "{name} answers CheckExistence of its endpoint name with java.lang.Boolean true, same \
                request id"
        ),
        body: bind(&s, move |ctx: Ctx, s| async move {
            let at = s.open(ctx.clone()).await?;
            let mut c = bare(&ctx, &s, &at).await?;
            let name = endpoint_of(ctx.settings.target);
            let ask = spark_of(&c)?
                .check_existence(77, name)
                .map_err(|e| fail("a CheckExistence", e))?;
            c.send_spark(&ask, &format!("RpcRequest 77: CheckExistence({name})"))
                .await?;
            c.expect::<D, ()>(wait(&ctx), "true for request 77", |e| {
                matches!(
                    e,
                    Envelope::Reply {
                        id: 77,
                        reply: Reply::Bool(true)
                    }
                )
                .then_some(())
            })
            .await
        }),
        ..Case::default()
    });
    cs.push(Case {
        id: "spark/15.2/check-existence-unknown".into(),
        level: Level::Must,
        targets: vec![Target::Master, Target::Worker],
        timeout: Duration::from_secs(10),
        sharing: Sharing::Alone,
        requirement: format!(
            "{name} answers CheckExistence of an endpoint name it does not have with false"
        ),
        body: bind(&s, move |ctx: Ctx, s| async move {
            let at = s.open(ctx.clone()).await?;
            let mut c = bare(&ctx, &s, &at).await?;
            let ask = spark_of(&c)?
                .check_existence(78, "NoSuchEndpoint")
                .map_err(|e| fail("a CheckExistence", e))?;
            c.send_spark(&ask, "RpcRequest 78: CheckExistence(NoSuchEndpoint)")
                .await?;
            c.expect::<D, ()>(wait(&ctx), "false for request 78", |e| {
                matches!(
                    e,
                    Envelope::Reply {
                        id: 78,
                        reply: Reply::Bool(false)
                    }
                )
                .then_some(())
            })
            .await
        }),
        ..Case::default()
    });
    cs.push(Case {
        id: "spark/15.2/no-check-needed".into(),
        level: Level::Must,
        targets: vec![Target::Master, Target::Worker],
        timeout: Duration::from_secs(10),
        sharing: Sharing::Alone,
        requirement: format!(
            "{name} answers an ask sent without a CheckExistence before it (the check is no gate)"
        ),
        body: bind(&s, move |ctx: Ctx, s| async move {
            let at = s.open(ctx.clone()).await?;
            let mut c = bare(&ctx, &s, &at).await?;
            probe(&ctx, &s, &mut c, 5).await
        }),
        ..Case::default()
    });
    cs.push(Case {
        id: "spark/15.2/unknown-endpoint".into(),
        level: Level::Must,
        targets: vec![Target::Master, Target::Worker],
        timeout: Duration::from_secs(10),
        sharing: Sharing::Alone,
        requirement: format!(
            "{name} fails an ask to an endpoint name it does not have, and goes on serving the \
                connection"
        ),
        body: bind(&s, move |ctx: Ctx, s| async move {
            let at = s.open(ctx.clone()).await?;
            let mut c = bare(&ctx, &s, &at).await?;
            let stream = probe_stream(&ctx, &s)?;
            let bytes = spark_of(&c)?
                .raw_request(Some(9), "NoSuchEndpoint", stream)
                .map_err(|e| {
                    fail(
                        "a \
                request",
                        e,
                    )
                })?;
            c.send_spark(&bytes, "RpcRequest 9 to NoSuchEndpoint")
                .await?;
            failure(&ctx, &mut c, 9, "a failure for request 9").await?;
            probe(&ctx, &s, &mut c, 10).await
        }),
        ..Case::default()
    });
    cs.push(Case {
        id: "spark/15.2/not-asked-fails".into(),
        level: Level::Must,
        targets: vec![Target::Master, Target::Worker],
        timeout: Duration::from_secs(10),
        sharing: Sharing::Alone,
        requirement: format!(
            "{name} fails an ask of a one-way message with org.apache.spark.SparkException, and \
                goes on"
        ),
        body: bind(&s, move |ctx: Ctx, s| async move {
            let at = s.open(ctx.clone()).await?;
            let mut c = bare(&ctx, &s, &at).await?;
            let v = spark_version(&ctx)?;
            let stream = sparkwire::spark::message_stream(
                &sparkwire::spark::Typed::Deploy((s.spark().not_asked)()),
                v,
                None,
            )
            .map_err(|e| fail("a message the suite can write", e.to_string()))?;
            let endpoint = endpoint_of(ctx.settings.target);
            let bytes = spark_of(&c)?
                .raw_request(Some(11), endpoint, stream.into())
                .map_err(|e| {
                    fail(
                        "a \
                request",
                        e,
                    )
                })?;
            c.send_spark(&bytes, "RpcRequest 11: a one-way message asked")
                .await?;
            let text = failure(&ctx, &mut c, 11, "a failure for request 11").await?;
            check(
                text.starts_with("org.apache.spark.SparkException"),
                "org.apache.spark.SparkException",
                text,
            )?;
            probe(&ctx, &s, &mut c, 12).await
        }),
        ..Case::default()
    });
    cs.push(Case {
        id: "spark/15.2/negative-request-id".into(),
        level: Level::Must,
        targets: vec![Target::Master, Target::Worker],
        timeout: Duration::from_secs(10),
        sharing: Sharing::Alone,
        requirement: format!("{name} answers an ask whose request id is negative with that id"),
        body: bind(&s, move |ctx: Ctx, s| async move {
            let at = s.open(ctx.clone()).await?;
            let mut c = bare(&ctx, &s, &at).await?;
            probe(&ctx, &s, &mut c, -5).await
        }),
        ..Case::default()
    });
    cs.push(Case {
        id: "spark/15.2/max-request-id".into(),
        level: Level::Must,
        targets: vec![Target::Master, Target::Worker],
        timeout: Duration::from_secs(10),
        sharing: Sharing::Alone,
        requirement: format!("{name} answers an ask whose request id is 2^63 - 1 with that id"),
        body: bind(&s, move |ctx: Ctx, s| async move {
            let at = s.open(ctx.clone()).await?;
            let mut c = bare(&ctx, &s, &at).await?;
            probe(&ctx, &s, &mut c, i64::MAX).await
        }),
        ..Case::default()
    });
    cs.push(Case {
        id: "spark/15.2/same-id-twice".into(),
        level: Level::Must,
        targets: vec![Target::Master, Target::Worker],
        timeout: Duration::from_secs(10),
        sharing: Sharing::Alone,
        requirement: format!("{name} answers two asks carrying the same request id, each once"),
        body: bind(&s, move |ctx: Ctx, s| async move {
            let at = s.open(ctx.clone()).await?;
            let mut c = bare(&ctx, &s, &at).await?;
            probe(&ctx, &s, &mut c, 6).await?;
            probe(&ctx, &s, &mut c, 6).await
        }),
        ..Case::default()
    });
    cs.push(Case {
        id: "spark/15.2/no-sender".into(),
        level: Level::Must,
        targets: vec![Target::Master, Target::Worker],
        timeout: Duration::from_secs(10),
        sharing: Sharing::Alone,
        requirement: format!(
            "{name} answers an ask whose RequestMessage has no sender address (a client-mode \
                RpcEnv)"
        ),
        body: bind(&s, move |ctx: Ctx, s| async move {
            // The suite's connections send no sender until they register an endpoint of their own.
            let at = s.open(ctx.clone()).await?;
            let mut c = bare(&ctx, &s, &at).await?;
            check(
                spark_of(&c)?.peer_address().is_some(),
                "a connection",
                "none",
            )?;
            probe(&ctx, &s, &mut c, 13).await
        }),
        ..Case::default()
    });
    cs.push(Case {
        id: "spark/15.2/one-way-unanswered".into(),
        level: Level::Must,
        targets: vec![Target::Master, Target::Worker],
        timeout: Duration::from_secs(10),
        sharing: Sharing::Alone,
        requirement: format!(
            "{name} sends nothing back for a one-way message that has no answer of its own"
        ),
        body: bind(&s, move |ctx: Ctx, s| async move {
            let at = s.open(ctx.clone()).await?;
            let mut c = bare(&ctx, &s, &at).await?;
            let v = spark_version(&ctx)?;
            let stream = sparkwire::spark::message_stream(
                &sparkwire::spark::Typed::Deploy((s.spark().not_asked)()),
                v,
                None,
            )
            .map_err(|e| fail("a message the suite can write", e.to_string()))?;
            let endpoint = endpoint_of(ctx.settings.target);
            let bytes = spark_of(&c)?
                .raw_request(None, endpoint, stream.into())
                .map_err(|e| fail("a one-way message", e))?;
            c.send_spark(&bytes, "OneWayMessage").await?;
            match c.next(ctx.settings.quiet).await {
                None => Ok(()),
                Some(Event::Closed(how)) => Err(fail("the connection kept open", how)),
                Some(Event::Frame(_)) | Some(Event::TooLarge(_)) => {
                    Err(fail("nothing back", "a frame"))
                }
            }
        }),
        ..Case::default()
    });
}

/// The cases of this section, each naming its targets.
pub fn cases(cs: &mut Vec<Case>) {
    cs.push(Case {
        id: "spark/15.2/worker-checks-master".into(),
        level: Level::Must,
        targets: vec![Target::Worker],
        requirement: "the worker asks the endpoint verifier CheckExistence(Master) on its \
            connection before it sends RegisterWorker"
            .into(),
        body: run(|ctx: Ctx| async move {
            spark_version(&ctx)?;
            let w = crate::kit::worker::registered(&ctx, &[Version::V1, Version::V2]).await?;
            let side = spark_of(&w.conn)?;
            check(
                side.checked().first().map(String::as_str) == Some("Master"),
                "CheckExistence(Master) \
                first",
                format!("{:?}", side.checked()),
            )
        }),
        ..Case::default()
    });
    cs.push(Case {
        id: "spark/15.2/worker-sender-is-its-reference".into(),
        level: Level::Must,
        targets: vec![Target::Worker],
        requirement: "the worker's RegisterWorker names its endpoint reference's address as the \
            RequestMessage sender"
            .into(),
        body: run(|ctx: Ctx| async move {
            spark_version(&ctx)?;
            let w = crate::kit::worker::registered(&ctx, &[Version::V1, Version::V2]).await?;
            let side = spark_of(&w.conn)?;
            let reference = w
                .reg
                .worker
                .address
                .as_ref()
                .map(|a| (a.host.clone(), a.port));
            check(
                side.peer_address().cloned() == reference && reference.is_some(),
                format!(
                    "the sender \
                {reference:?}"
                ),
                format!("{:?}", side.peer_address()),
            )
        }),
        ..Case::default()
    });
    cs.push(Case {
        id: "spark/15.2/worker-one-connection".into(),
        level: Level::Must,
        targets: vec![Target::Worker],
        requirement:
            "the worker heartbeats over the connection it registered over (a master never \
            dials a worker)"
                .into(),
        body: run(|ctx: Ctx| async move {
            spark_version(&ctx)?;
            let mut w = crate::kit::worker::registered(&ctx, &[Version::V1, Version::V2]).await?;
            let id = w.reg.id.clone();
            w.conn
                .expect::<D, ()>(
                    ctx.settings.patience,
                    "a Heartbeat on the registration's \
                    connection",
                    |e| match e {
                        Envelope::Send(D::Heartbeat(h)) if h.worker_id == id => Some(()),
                        _ => None,
                    },
                )
                .await?;
            let _ = Role::Master;
            Ok(())
        }),
        ..Case::default()
    });
    cs.push(Case {
        id: "spark/15.2/master-answers-on-connection".into(),
        level: Level::Must,
        targets: vec![Target::Master],
        timeout: Duration::from_secs(10),
        sharing: Sharing::Alone,
        requirement: "the master answers RegisterWorker over the worker's connection and never \
            dials its reference"
            .into(),
        body: run(|ctx: Ctx| async move {
            spark_version(&ctx)?;
            let listener =
                crate::harness::peer::Listener::bind(([127, 0, 0, 1], 0).into(), &ctx.log)
                    .await
                    .map_err(|e| fail("a listening socket", e))?;
            let port = i32::from(listener.addr().port());
            let id = format!("worker-20250101120000-127.0.0.1-{port}");
            let mut c =
                crate::kit::master::open(&ctx, Role::Worker, "worker", &id, Version::V2).await?;
            c.send(&Envelope::Send(crate::kit::master::register_worker_msg(
                &id,
                "127.0.0.1",
                port,
                0,
                0,
            )))
            .await?;
            c.expect::<D, ()>(
                wait(&ctx),
                "RegisteredWorker on the worker's connection",
                |e| matches!(e, Envelope::Send(D::RegisteredWorker(_))).then_some(()),
            )
            .await?;
            match listener
                .accept(ctx.settings.quiet, "dialled", Role::Master, "")
                .await
            {
                Ok(_) => Err(fail(
                    "no connection to the reference's address",
                    "the master dialled it",
                )),
                Err(_) => Ok(()),
            }
        }),
        ..Case::default()
    });
    cs.push(Case {
        id: "spark/15.2/master-removes-closed-worker".into(),
        level: Level::Must,
        targets: vec![Target::Master],
        timeout: Duration::from_secs(10),
        sharing: Sharing::Alone,
        quote: "SPEC §15.2, \"Spark's master keys a worker and an application by the address of \
            the reference registered … and, when a connection closes, removes the worker or \
            application registered at the sender address that connection gave\""
            .into(),
        requirement: "a worker whose connection closes is removed: an application is told \
            WorkerRemoved naming it"
            .into(),
        body: run(master_removes_closed_worker),
        ..Case::default()
    });
}

async fn master_removes_closed_worker(ctx: Ctx) -> Outcome {
    use crate::kit::master::{app, app_desc, open, register_worker_msg};
    spark_version(&ctx)?;
    let (mut app_conn, _app_id) =
        app(&ctx, "app", app_desc(Some(1), 64, Some(0)), Version::V2).await?;
    let port = 20_000 + (crate::kit::common::unique() % 40_000) as i32;
    let id = format!("worker-20250101120000-127.0.0.1-{port}");
    // The suite's sender on this connection is the reference's address from RegisterWorker on
    // (`SparkSide`: a message naming the suite's own reference makes its address the sender).
    let mut c = open(&ctx, Role::Worker, "worker", &id, Version::V2).await?;
    c.send(&Envelope::Send(register_worker_msg(
        &id,
        "127.0.0.1",
        port,
        0,
        0,
    )))
    .await?;
    c.expect::<D, ()>(wait(&ctx), "RegisteredWorker", |e| {
        matches!(e, Envelope::Send(D::RegisteredWorker(_))).then_some(())
    })
    .await?;
    drop(c);
    app_conn
        .expect::<D, ()>(
            wait(&ctx),
            &format!("WorkerRemoved naming {id} once its connection closed"),
            |e| match e {
                Envelope::Send(D::WorkerRemoved(r)) if r.id == id => Some(()),
                _ => None,
            },
        )
        .await
}
