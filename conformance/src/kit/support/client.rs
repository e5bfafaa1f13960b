//! Cases for an endpoint that connects to the suite (a worker to its master, a driver's
//! application client to its master, an executor to its driver): the client's side of the
//! handshake (protocol/handshake.md §2–4, 6–8).

use crate::harness::env::Ctx;
use crate::harness::mp;
use crate::harness::peer::frame;
use crate::harness::peer::Conn;
use crate::harness::verdict::check;
use crate::harness::verdict::Failure;
use crate::harness::verdict::Outcome;
use crate::kit::common::wait;
use crate::kit::endpoint::Endpoint;
use crate::kit::spawned::Run;
use sparkwire::messages::Version;
use sparkwire::wire::handshake::Hello;
use sparkwire::wire::handshake::Role;

pub(crate) type D = sparkwire::messages::DeployMessage;

/// Reads the endpoint's hello and its frame body. When the suite knows the endpoint's secret, it
/// then plays a server holding it (protocol/handshake.md §10.1): the hello must ask to
/// authenticate, the suite challenges and checks the endpoint's proof, so that what a case sends
/// next stands where the answer does on a secured connection.
pub(crate) async fn hello(ctx: &Ctx, c: &mut Conn) -> Result<(Hello, Vec<u8>), Failure> {
    let h = c.read_hello(wait(ctx) * 3).await?;
    let body = c.hello_body().to_vec();
    if let Some(secret) = &ctx.settings.secret {
        c.authenticate_client(&[Version::V1, Version::V2], "suite", secret, wait(ctx))
            .await?;
    }
    Ok((h, body))
}

pub(crate) fn accepted_entries(version: u64, role: &str) -> Vec<(&'static str, Vec<u8>)> {
    vec![
        ("magic", mp::s("sparkwire")),
        ("version", mp::u(version)),
        ("versions", mp::uints(&[1, 2])),
        ("role", mp::s(role)),
        ("id", mp::s("suite")),
    ]
}

pub(crate) fn best(h: &Hello) -> u64 {
    if h.versions.contains(&2) {
        2
    } else {
        1
    }
}

/// Answers the hello with `body` and expects the endpoint to close the connection.
pub(crate) async fn closes(ctx: Ctx, s: Endpoint, body: impl FnOnce(&Hello) -> Vec<u8>) -> Outcome {
    let (_run, mut c) = s.start(ctx.clone()).await?;
    let (h, _) = hello(&ctx, &mut c).await?;
    let b = body(&h);
    c.send_raw(&b, "the suite's answer").await?;
    c.expect_closed_silently(
        wait(&ctx),
        "the endpoint closes the connection, sending nothing more",
    )
    .await
}

/// Answers with `entries` (an acceptance) and expects the endpoint to go on: its next frame is
/// an envelope that decodes at `version`.
pub(crate) async fn proceeds(
    ctx: Ctx,
    s: Endpoint,
    entries: impl FnOnce(&Hello) -> Option<(Vec<(&'static str, Vec<u8>)>, Version)>,
) -> Outcome {
    let (_run, mut c) = s.start(ctx.clone()).await?;
    let (h, _) = hello(&ctx, &mut c).await?;
    let Some((e, v)) = entries(&h) else {
        return Err(Failure::Skipped(format!(
            "the endpoint does not offer the version this case needs ({:?})",
            h.versions
        )));
    };
    c.send_raw(&frame(&mp::map(&e)), "the suite's answer")
        .await?;
    c.version = Some(v);
    let body = c
        .frame_body(wait(&ctx), "the endpoint's first envelope")
        .await?;
    let ok = if c.family == "coarse" {
        sparkwire::wire::decode_envelope::<sparkwire::messages::CoarseMessage>(&body, v).is_ok()
    } else {
        sparkwire::wire::decode_envelope::<sparkwire::messages::DeployMessage>(&body, v).is_ok()
    };
    check(
        ok,
        format!("an envelope decoding at version {}", v.number()),
        crate::harness::peer::describe(c.family, &body, v),
    )
}

/// Starts the endpoint and accepts its connection taking closeReason (skipped when its hello
/// does not offer it), and reads its first envelope.
pub(crate) async fn taking_close_reason(ctx: &Ctx, s: &Endpoint) -> Result<(Run, Conn), Failure> {
    taking_close_reason_first(ctx, s)
        .await
        .map(|(run, c, _)| (run, c))
}

/// [`taking_close_reason`], returning also the endpoint's first envelope's body.
pub(crate) async fn taking_close_reason_first(
    ctx: &Ctx,
    s: &Endpoint,
) -> Result<(Run, Conn, bytes::Bytes), Failure> {
    let (run, mut c) = s.start(ctx.clone()).await?;
    let h = c.read_hello(wait(ctx) * 3).await?;
    crate::kit::closes::accept_taking_close_reason(
        ctx,
        &mut c,
        &h,
        &[Version::V1, Version::V2],
        "suite",
    )
    .await?;
    let first = c
        .frame_body(wait(ctx), "the endpoint's first envelope")
        .await?;
    if s.role == Role::Worker {
        // A worker not registered soon tries again on a new connection, closing this one: it
        // is registered, and the case goes on just after a heartbeat, the worker then quiet.
        let given = run.given;
        let at = sparkwire::messages::Addr::new(given.ip().to_string(), i32::from(given.port()));
        let registered = D::RegisteredWorker(sparkwire::messages::deploy::RegisteredWorker::new(
            sparkwire::messages::EndpointRef::at(at.clone(), "Master"),
            "http://127.0.0.1:8080".into(),
            at,
            false,
        ));
        c.send(&sparkwire::wire::Envelope::Send(registered)).await?;
        c.expect::<D, ()>(wait(ctx), "a Heartbeat once registered", |e| {
            matches!(e, sparkwire::wire::Envelope::Send(D::Heartbeat(_))).then_some(())
        })
        .await?;
    }
    Ok((run, c, first))
}

/// Sends the endpoint, once it sent its first envelope, a close envelope of `reason`'s fields,
/// and expects it to close, sending nothing more (SPEC §8.1).
pub(crate) async fn told_to_close(
    ctx: Ctx,
    s: Endpoint,
    reason: &[(&'static str, Vec<u8>)],
) -> Outcome {
    let (_run, mut c) = taking_close_reason(&ctx, &s).await?;
    c.send_frame(&mp::arr(&[mp::u(4), mp::map(reason)])).await?;
    c.expect_closed_silently(
        wait(&ctx),
        "the endpoint closes the connection, sending nothing more",
    )
    .await
}

/// The ask id of an ask envelope's body, `[1, id, …]`.
pub(crate) fn ask_id(body: &[u8]) -> Option<u64> {
    let mut cur = body;
    (rmp::decode::read_array_len(&mut cur).ok()? == 3).then_some(())?;
    (rmp::decode::read_int::<u64, _>(&mut cur).ok()? == 1).then_some(())?;
    rmp::decode::read_int::<u64, _>(&mut cur).ok()
}
