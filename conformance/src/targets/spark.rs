//! Cases about Spark's own wire (SPEC §15), run only with `--wire spark`: what a Spark endpoint
//! does with Spark's transport frames, `RequestMessage` headers and the endpoint verifier, for
//! an endpoint that listens (a master; a worker on its RPC port) and, for the worker target, what
//! a Spark worker does before it registers.

use std::time::Duration;

use bytes::Bytes;
use sparkwire::messages::{DeployMessage, Version};
use sparkwire::wire::handshake::Role;
use sparkwire::wire::{Envelope, Reply};

use crate::case::{bind, run, Case, Sharing, Target};
use crate::env::{Ctx, Wire};
use crate::kit::common::wait;
use crate::kit::server::Listening;
use crate::kit::spark::*;
use crate::peer::{Conn, Event};
use crate::spark_wire::{endpoint_of, VERIFIER};
use crate::verdict::{check, fail, Failure, Level, Outcome};

type D = DeployMessage;

/// A broken transport frame: the case's id, what is wrong with it, its bytes.
type BrokenFrame = (&'static str, &'static str, fn() -> Vec<u8>);

/// The Spark release's protocol version, or a skip on sparkwire's wire.
fn spark_version(ctx: &Ctx) -> Result<Version, Failure> {
    match ctx.log.wire() {
        Wire::Spark(v) => Ok(v),
        Wire::Sparkwire => Err(Failure::Skipped(
            "a case about Spark's own wire: only with --wire spark".into(),
        )),
    }
}

/// A bare connection to the endpoint, nothing sent.
async fn bare(ctx: &Ctx, s: &SparkServer, at: &Listening) -> Result<Conn, Failure> {
    spark_version(ctx)?;
    Conn::connect_spark(at.addr, "suite", s.server.good_role, &ctx.log).await
}

/// The Java stream of the probe.
fn probe_stream(ctx: &Ctx, s: &SparkServer) -> Result<Bytes, Failure> {
    let v = spark_version(ctx)?;
    sparkwire::spark::message_stream(&sparkwire::spark::Typed::Deploy((s.probe.0)()), v, None)
        .map(Bytes::from)
        .map_err(|e| fail("a probe the suite can write", e.to_string()))
}

/// Sends the probe as an ask with request id `id` (a raw Spark frame) and expects its answer.
async fn probe(ctx: &Ctx, s: &SparkServer, c: &mut Conn, id: i64) -> Outcome {
    let stream = probe_stream(ctx, s)?;
    let endpoint = endpoint_of(ctx.settings.target);
    let bytes = spark_of(c)?
        .raw_request(Some(id), endpoint, stream)
        .map_err(|e| fail("a request the suite can write", e))?;
    c.send_spark(&bytes, &format!("RpcRequest {id}: the probe to {endpoint}"))
        .await?;
    answer(ctx, s, c, id).await
}

async fn answer(ctx: &Ctx, s: &SparkServer, c: &mut Conn, id: i64) -> Outcome {
    let is_answer = s.probe.1;
    let want = format!("the probe's answer with request id {id}");
    c.expect::<D, ()>(wait(ctx), &want, |e| match e {
        Envelope::Reply { id: rid, reply } if *rid == id as u64 && is_answer(reply) => Some(()),
        _ => None,
    })
    .await
}

fn spark_of(c: &Conn) -> Result<&crate::spark_wire::SparkSide, Failure> {
    c.spark()
        .ok_or_else(|| Failure::Skipped("only with --wire spark".into()))
}

/// Expects a failure (an `RpcFailure` frame or a failure object in an `RpcResponse`) for `id`.
async fn failure(ctx: &Ctx, c: &mut Conn, id: i64, want: &str) -> Result<String, Failure> {
    c.expect::<D, String>(wait(ctx), want, |e| match e {
        Envelope::Failure { id: fid, error } if *fid == id as u64 => {
            Some(format!("{}: {}", error.class_name, error.message))
        }
        _ => None,
    })
    .await
}

/// Every Spark-wire case of an endpoint that listens.
pub fn add_server(cs: &mut Vec<Case>, s: SparkServer) {
    let name = s.server.name;
    cs.push(Case {
        id: "spark/15.2/check-existence".into(),
        level: Level::Must,
        targets: vec![Target::Master, Target::Worker],
        timeout: Duration::from_secs(10),
        sharing: Sharing::Alone,
        requirement: format!("{name} answers RpcEndpointVerifier$CheckExistence of its own endpoint name, asked of the endpoint \
            `endpoint-verifier`, with java.lang.Boolean true in an RpcResponse of the same request id"),
        body: bind(&s, move |ctx: Ctx, s| async move {
            let at = (s.server.open)(ctx.clone()).await?;
            let mut c = bare(&ctx, &s, &at).await?;
            let name = endpoint_of(ctx.settings.target);
            let ask = spark_of(&c)?.check_existence(77, name).map_err(|e| fail("a CheckExistence", e))?;
            c.send_spark(&ask, &format!("RpcRequest 77: CheckExistence({name})")).await?;
            c.expect::<D, ()>(wait(&ctx), "true for request 77", |e| {
                matches!(e, Envelope::Reply { id: 77, reply: Reply::Bool(true) }).then_some(())
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
            let at = (s.server.open)(ctx.clone()).await?;
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
        requirement: format!("{name} answers an ask sent without a CheckExistence before it (the check is the asking peer's, not a \
            gate)"),
        body: bind(&s, move |ctx: Ctx, s| async move {
            let at = (s.server.open)(ctx.clone()).await?;
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
        requirement: format!("{name} fails an ask to an endpoint name it does not have (a failure for that request id) and goes on \
            serving the connection"),
        body: bind(&s, move |ctx: Ctx, s| async move {
            let at = (s.server.open)(ctx.clone()).await?;
            let mut c = bare(&ctx, &s, &at).await?;
            let stream = probe_stream(&ctx, &s)?;
            let bytes = spark_of(&c)?.raw_request(Some(9), "NoSuchEndpoint", stream).map_err(|e| fail("a request", e))?;
            c.send_spark(&bytes, "RpcRequest 9 to NoSuchEndpoint").await?;
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
        requirement: format!("{name} fails, with org.apache.spark.SparkException, an ask of a message it takes only one-way, and \
            goes on serving the connection"),
        body: bind(&s, move |ctx: Ctx, s| async move {
            let at = (s.server.open)(ctx.clone()).await?;
            let mut c = bare(&ctx, &s, &at).await?;
            let v = spark_version(&ctx)?;
            let stream = sparkwire::spark::message_stream(&sparkwire::spark::Typed::Deploy((s.not_asked)()), v, None)
                .map_err(|e| fail("a message the suite can write", e.to_string()))?;
            let endpoint = endpoint_of(ctx.settings.target);
            let bytes = spark_of(&c)?.raw_request(Some(11), endpoint, stream.into()).map_err(|e| fail("a request", e))?;
            c.send_spark(&bytes, "RpcRequest 11: a one-way message asked").await?;
            let text = failure(&ctx, &mut c, 11, "a failure for request 11").await?;
            check(text.starts_with("org.apache.spark.SparkException"), "org.apache.spark.SparkException", text)?;
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
        requirement: format!("{name} answers an ask whose request id is negative with that id (request ids are signed 64-bit and \
            opaque)"),
        body: bind(&s, move |ctx: Ctx, s| async move {
            let at = (s.server.open)(ctx.clone()).await?;
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
            let at = (s.server.open)(ctx.clone()).await?;
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
            let at = (s.server.open)(ctx.clone()).await?;
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
        requirement: format!("{name} answers an ask whose RequestMessage has no sender address (a client-mode RpcEnv, as an \
            executor's)"),
        body: bind(&s, move |ctx: Ctx, s| async move {
            // The suite's connections send no sender until they register an endpoint of their own.
            let at = (s.server.open)(ctx.clone()).await?;
            let mut c = bare(&ctx, &s, &at).await?;
            check(spark_of(&c)?.peer_address().is_some(), "a connection", "none")?;
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
            let at = (s.server.open)(ctx.clone()).await?;
            let mut c = bare(&ctx, &s, &at).await?;
            let v = spark_version(&ctx)?;
            let stream = sparkwire::spark::message_stream(
                &sparkwire::spark::Typed::Deploy((s.not_asked)()),
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
    cs.push(Case {
        id: "spark/15.1/back-to-back".into(),
        level: Level::Must,
        targets: vec![Target::Master, Target::Worker],
        timeout: Duration::from_secs(10),
        sharing: Sharing::Alone,
        requirement: format!(
            "{name} answers two requests that arrive in one TCP segment, each by its id"
        ),
        body: bind(&s, move |ctx: Ctx, s| async move {
            let at = (s.server.open)(ctx.clone()).await?;
            let mut c = bare(&ctx, &s, &at).await?;
            let stream = probe_stream(&ctx, &s)?;
            let endpoint = endpoint_of(ctx.settings.target);
            let side = spark_of(&c)?;
            let mut bytes = side
                .raw_request(Some(21), endpoint, stream.clone())
                .map_err(|e| fail("a request", e))?;
            bytes.extend(
                side.raw_request(Some(22), endpoint, stream)
                    .map_err(|e| fail("a request", e))?,
            );
            c.send_spark(&bytes, "RpcRequest 21 and 22 in one write")
                .await?;
            let mut seen = Vec::new();
            while seen.len() < 2 {
                let id = c
                    .expect::<D, u64>(wait(&ctx), "answers to 21 and 22", |e| match e {
                        Envelope::Reply { id, .. } if *id == 21 || *id == 22 => Some(*id),
                        _ => None,
                    })
                    .await?;
                seen.push(id);
            }
            seen.sort_unstable();
            check(
                seen == [21, 22],
                "one answer each to 21 and 22",
                format!("{seen:?}"),
            )
        }),
        ..Case::default()
    });
    cs.push(Case {
        id: "spark/15.1/in-pieces".into(),
        level: Level::Must,
        targets: vec![Target::Master, Target::Worker],
        timeout: Duration::from_secs(10),
        sharing: Sharing::Alone,
        requirement: format!("{name} reads a request that arrives a few bytes at a time"),
        body: bind(&s, move |ctx: Ctx, s| async move {
            let at = (s.server.open)(ctx.clone()).await?;
            let mut c = bare(&ctx, &s, &at).await?;
            let stream = probe_stream(&ctx, &s)?;
            let endpoint = endpoint_of(ctx.settings.target);
            let bytes = spark_of(&c)?
                .raw_request(Some(23), endpoint, stream)
                .map_err(|e| fail("a request", e))?;
            for piece in bytes.chunks(7) {
                c.send_spark(piece, "a piece of RpcRequest 23").await?;
                tokio::time::sleep(Duration::from_millis(2)).await;
            }
            answer(&ctx, &s, &mut c, 23).await
        }),
        ..Case::default()
    });
    cs.push(Case {
        id: "spark/15.1/unreadable-request".into(),
        level: Level::Must,
        targets: vec![Target::Master, Target::Worker],
        timeout: Duration::from_secs(10),
        sharing: Sharing::Alone,
        requirement: format!("{name} answers an RpcRequest whose Java stream does not read with a failure (RpcFailure) for its id, \
            and goes on serving the connection"),
        body: bind(&s, move |ctx: Ctx, s| async move {
            let at = (s.server.open)(ctx.clone()).await?;
            let mut c = bare(&ctx, &s, &at).await?;
            let endpoint = endpoint_of(ctx.settings.target);
            let garbage = Bytes::from_static(&[0xAC, 0xED, 0x00, 0x05, 0x73, 0x72, 0xFF]);
            let bytes = spark_of(&c)?.raw_request(Some(31), endpoint, garbage).map_err(|e| fail("a request", e))?;
            c.send_spark(&bytes, "RpcRequest 31: a truncated Java stream").await?;
            failure(&ctx, &mut c, 31, "a failure for request 31").await?;
            probe(&ctx, &s, &mut c, 32).await
        }),
        ..Case::default()
    });
    cs.push(Case {
        id: "spark/15.1/unreadable-one-way".into(),
        level: Level::Must,
        targets: vec![Target::Master, Target::Worker],
        timeout: Duration::from_secs(10),
        sharing: Sharing::Alone,
        requirement: format!("{name} drops a OneWayMessage whose Java stream does not read, sends nothing back for it and goes on \
            serving the connection"),
        body: bind(&s, move |ctx: Ctx, s| async move {
            let at = (s.server.open)(ctx.clone()).await?;
            let mut c = bare(&ctx, &s, &at).await?;
            let endpoint = endpoint_of(ctx.settings.target);
            let garbage = Bytes::from_static(&[0xAC, 0xED, 0x00, 0x05, 0x73, 0x72, 0xFF]);
            let bytes = spark_of(&c)?.raw_request(None, endpoint, garbage).map_err(|e| fail("a one-way message", e))?;
            c.send_spark(&bytes, "OneWayMessage: a truncated Java stream").await?;
            probe(&ctx, &s, &mut c, 33).await
        }),
        ..Case::default()
    });
    let frames: [BrokenFrame; 3] = [
        (
            "spark/15.1/too-large-frame",
            "whose length field declares 2^40 bytes (more than a Java array holds), \
            without waiting for them",
            || {
                let mut b = (1u64 << 40).to_be_bytes().to_vec();
                b.extend_from_slice(&[3, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0]);
                b
            },
        ),
        (
            "spark/15.1/short-frame",
            "whose length field is below the 8 bytes of the length itself",
            || {
                let mut b = 4u64.to_be_bytes().to_vec();
                b.extend_from_slice(&[3, 0, 0, 0, 0]);
                b
            },
        ),
        (
            "spark/15.1/unknown-frame-type",
            "of a type byte no message has (99)",
            || {
                let mut b = 21u64.to_be_bytes().to_vec();
                b.extend_from_slice(&[99, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0]);
                b
            },
        ),
    ];
    for (id, what, bytes) in frames {
        cs.push(Case {
            id: id.into(),
            level: Level::Must,
            targets: vec![Target::Master, Target::Worker],
            timeout: Duration::from_secs(10),
            sharing: Sharing::Alone,
            requirement: format!(
                "{name} closes a connection on which a transport frame arrives {what}"
            ),
            body: bind(&s, move |ctx: Ctx, s| async move {
                let at = (s.server.open)(ctx.clone()).await?;
                let mut c = bare(&ctx, &s, &at).await?;
                c.send_spark(&bytes(), "a broken transport frame").await?;
                c.expect_closed(wait(&ctx), "the connection closed").await
            }),
            ..Case::default()
        });
    }
    let _ = VERIFIER;
}

/// The Spark-wire cases of the worker target, where the suite plays the master: what a Spark
/// worker says before and as it registers.
pub fn add_worker(cs: &mut Vec<Case>) {
    cs.push(Case {
        id: "spark/15.2/worker-checks-master".into(),
        level: Level::Must,
        targets: vec![Target::Worker],
        requirement: "the worker asks the endpoint verifier CheckExistence(Master) on its connection before it sends RegisterWorker".into(),
        body: run(|ctx: Ctx| async move {
            spark_version(&ctx)?;
            let w = crate::kit::worker::registered(&ctx, &[Version::V1, Version::V2]).await?;
            let side = spark_of(&w.conn)?;
            check(side.checked().first().map(String::as_str) == Some("Master"), "CheckExistence(Master) \
                first", format!("{:?}", side.checked()))
        }),
        ..Case::default()
    });
    cs.push(Case {
        id: "spark/15.2/worker-sender-is-its-reference".into(),
        level: Level::Must,
        targets: vec![Target::Worker],
        requirement: "the worker's RegisterWorker names, as its RequestMessage sender, the address of the endpoint reference it \
            registers (which the master keys it by)".into(),
        body: run(|ctx: Ctx| async move {
            spark_version(&ctx)?;
            let w = crate::kit::worker::registered(&ctx, &[Version::V1, Version::V2]).await?;
            let side = spark_of(&w.conn)?;
            let reference = w.reg.worker.address.as_ref().map(|a| (a.host.clone(), a.port));
            check(side.peer_address().cloned() == reference && reference.is_some(), format!("the sender \
                {reference:?}"), format!("{:?}", side.peer_address()))
        }),
        ..Case::default()
    });
    cs.push(Case {
        id: "spark/15.2/worker-one-connection".into(),
        level: Level::Must,
        targets: vec![Target::Worker],
        requirement: "the worker sends its heartbeats on the connection it registered over, where the master's answer reached it \
            (a master never dials a worker)".into(),
        body: run(|ctx: Ctx| async move {
            spark_version(&ctx)?;
            let mut w = crate::kit::worker::registered(&ctx, &[Version::V1, Version::V2]).await?;
            let id = w.reg.id.clone();
            w.conn
                .expect::<D, ()>(ctx.settings.patience, "a Heartbeat on the registration's connection", |e| match e {
                    Envelope::Send(D::Heartbeat(h)) if h.worker_id == id => Some(()),
                    _ => None,
                })
                .await?;
            let _ = Role::Master;
            Ok(())
        }),
        ..Case::default()
    });
}

/// The Spark-wire cases of the master target: where a master sends what it sends.
pub fn add_master(cs: &mut Vec<Case>) {
    cs.push(Case {
        id: "spark/15.2/master-answers-on-connection".into(),
        level: Level::Must,
        targets: vec![Target::Master],
        timeout: Duration::from_secs(10),
        sharing: Sharing::Alone,
        requirement: "the master answers RegisterWorker over the connection the worker opened, and does not dial the address of \
            the worker's reference (where the suite listens)".into(),
        body: run(|ctx: Ctx| async move {
            spark_version(&ctx)?;
            let listener = crate::peer::Listener::bind(([127, 0, 0, 1], 0).into(), &ctx.log)
                .await
                .map_err(|e| fail("a listening socket", e))?;
            let port = i32::from(listener.addr().port());
            let id = format!("worker-20250101120000-127.0.0.1-{port}");
            let mut c = crate::kit::master::open(&ctx, Role::Worker, "worker", &id, Version::V2).await?;
            c.send(&Envelope::Send(crate::kit::master::register_worker_msg(&id, "127.0.0.1", port, 0, 0)))
                .await?;
            c.expect::<D, ()>(wait(&ctx), "RegisteredWorker on the worker's connection", |e| {
                matches!(e, Envelope::Send(D::RegisteredWorker(_))).then_some(())
            })
            .await?;
            match listener.accept(ctx.settings.quiet, "dialled", Role::Master, "").await {
                Ok(_) => Err(fail("no connection to the reference's address", "the master dialled it")),
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
        requirement: "SPEC §15.2, \"Spark's master keys a worker and an application by the address of the reference registered … \
            and, when a connection closes, removes the worker or application registered at the sender address that \
                connection gave\": a worker registered over a connection whose RequestMessage sender is its \
                    reference's address is removed once that connection closes: an application registered before it \
                        (asking no cores) is told WorkerRemoved naming it (the state's DEAD cannot show on Spark's \
                            wire: SPEC §15.4 S3)".into(),
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
