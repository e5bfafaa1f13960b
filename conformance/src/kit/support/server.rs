//! Cases for an endpoint that listens (a master; a worker's UI port; a driver's executor port):
//! the server's side of the handshake (protocol/handshake.md) and framing after it
//! (protocol/SPEC.md §2–4, 6, 8).

use crate::harness::env::Ctx;
use crate::harness::mp;
use crate::harness::peer::auth_entries;
use crate::harness::peer::Conn;
use crate::harness::verdict::check;
use crate::harness::verdict::fail;
use crate::harness::verdict::Failure;
use crate::harness::verdict::Outcome;
use crate::kit::common::wait;
use crate::kit::endpoint::Endpoint;
use crate::kit::server::*;
use sparkwire::messages::Version;
use sparkwire::wire::handshake::Answer;
use sparkwire::wire::handshake::RefusalReason;
use sparkwire::wire::handshake::Role;

pub(crate) async fn raw(ctx: &Ctx, at: &Listening, role: Role) -> Result<Conn, Failure> {
    Conn::connect(at.addr, "suite", role, &ctx.log).await
}

/// Sends a hello body and expects a refusal for `reason` and then a close.
pub(crate) async fn refused(
    ctx: Ctx,
    s: Endpoint,
    body: Vec<u8>,
    reasons: &[RefusalReason],
) -> Outcome {
    let at = s.open(ctx.clone()).await?;
    let mut c = raw(&ctx, &at, s.suite_role).await?;
    c.send_frame(&body).await?;
    let want = refusal_wanted(reasons);
    match answer(&ctx, &mut c, &body).await? {
        Answer::Refused(r) if reasons.contains(&r.reason) => {}
        other => return Err(fail(want, format!("{other:?}"))),
    }
    c.expect_closed(wait(&ctx), &want).await
}

/// Sends a hello body and expects an acceptance at `version`.
pub(crate) async fn accepted(ctx: Ctx, s: Endpoint, body: Vec<u8>, version: Version) -> Outcome {
    crate::harness::peer::require_version(&ctx.log, version)?;
    let at = s.open(ctx.clone()).await?;
    let mut c = raw(&ctx, &at, s.suite_role).await?;
    c.send_frame(&body).await?;
    match answer(&ctx, &mut c, &body).await? {
        Answer::Accepted(a) => check(
            a.version == version,
            format!("accepted at version {}", version.number()),
            format!("accepted at version {}", a.version.number()),
        ),
        Answer::Refused(r) => Err(fail(
            format!("accepted at version {}", version.number()),
            format!("refused: {} ({})", r.reason, r.message),
        )),
    }
}

/// The server's answer to the hello `body` the suite sent on `c`, through the proof exchange when
/// the suite knows the endpoint's secret ([`Conn::read_answer_to`]).
pub(crate) async fn answer(ctx: &Ctx, c: &mut Conn, body: &[u8]) -> Result<Answer, Failure> {
    c.read_answer_to(body, ctx.settings.secret.as_ref(), wait(ctx))
        .await
}

/// A hello's entries as the suite writes them by hand: `entries`, and when the suite knows the
/// endpoint's secret, the two that ask to authenticate (protocol/handshake.md §10.1) after them,
/// so that a case about the hello's other keys tests them on a secured endpoint too.
pub(crate) fn signed(
    ctx: &Ctx,
    mut entries: Vec<(&'static str, Vec<u8>)>,
) -> Result<Vec<(&'static str, Vec<u8>)>, Failure> {
    entries.extend(auth_entries(ctx.settings.secret.as_ref())?);
    Ok(entries)
}

/// Sends the suite's hello offering `versions` and expects an acceptance at version 2.
pub(crate) async fn accepts(ctx: Ctx, s: Endpoint, versions: &[u64]) -> Outcome {
    let body = mp::map(&hello(&ctx, &s, versions)?);
    accepted(ctx, s, body, Version::V2).await
}

pub(crate) fn hello(
    ctx: &Ctx,
    s: &Endpoint,
    versions: &[u64],
) -> Result<Vec<(&'static str, Vec<u8>)>, Failure> {
    signed(
        ctx,
        mp::hello_entries(versions, s.suite_role.name(), "suite"),
    )
}

/// Opens an accepted connection of `good_role` at `version`.
pub(crate) async fn session(
    ctx: &Ctx,
    s: &Endpoint,
    at: &Listening,
    version: Version,
    label: &str,
) -> Result<Conn, Failure> {
    Conn::open(
        at.addr,
        label,
        s.suite_role,
        "suite",
        &[version],
        ctx.settings.secret.as_ref(),
        &ctx.log,
        wait(ctx),
    )
    .await
}

/// Asks the probe on `c` and expects a reply (not a failure) to that id.
pub(crate) async fn probe(ctx: &Ctx, s: &Endpoint, c: &mut Conn, id: u64) -> Outcome {
    let body = mp::arr(&[mp::u(1), mp::u(id), s.probe_body(false)]);
    c.send_frame(&body).await?;
    expect_reply(
        ctx,
        c,
        id,
        &format!("a reply to {} (ask id {id})", s.messages().probe.0),
    )
    .await
}

pub(crate) async fn expect_reply(ctx: &Ctx, c: &mut Conn, id: u64, want: &str) -> Outcome {
    let body = c.frame_body(wait(ctx), want).await?;
    // [2, id, …] with the same id; decoded by hand so that any family's reply counts.
    let mut cur = body.as_ref();
    let ok = rmp::decode::read_array_len(&mut cur).ok() == Some(3)
        && rmp::decode::read_int::<u64, _>(&mut cur).ok() == Some(2)
        && rmp::decode::read_int::<u64, _>(&mut cur).ok() == Some(id);
    check(
        ok,
        want,
        crate::harness::peer::describe(c.family, &body, c.v()),
    )
}

/// Opens a connection of `good_role` at version 2 whose hello offers `closeReason`; `None` when
/// the endpoint did not take it (the feature is optional: the case then does not apply).
pub(crate) async fn session_offering_close_reason(
    ctx: &Ctx,
    s: &Endpoint,
    at: &Listening,
) -> Result<Option<Conn>, Failure> {
    let (c, taken) = crate::kit::common::offering_close_reason(
        ctx,
        at.addr,
        "suite",
        &[Version::V2],
        s.suite_role,
        "suite",
    )
    .await?;
    Ok(taken.then_some(c))
}

/// Sends `body` as one frame after an accepted handshake and expects the connection closed.
pub(crate) async fn closes_after(
    ctx: Ctx,
    s: Endpoint,
    version: Version,
    bytes: Vec<u8>,
    what: &'static str,
) -> Outcome {
    let at = s.open(ctx.clone()).await?;
    let mut c = session(&ctx, &s, &at, version, "suite").await?;
    c.send_raw(&bytes, what).await?;
    c.expect_closed(
        crate::kit::common::reaction_wait(&ctx),
        &format!("the connection closed after {what}"),
    )
    .await
}

/// The probe ask (id 5) with an unknown field holding arrays nested so that the frame's value is
/// `levels` deep: the envelope is level 1, the message map 2, the field map 3 (SPEC §11.1).
pub(crate) fn nested_probe(s: &Endpoint, levels: usize) -> Vec<u8> {
    let mut fields = (s.messages().probe.1)();
    fields.push(("zzzNested", mp::nested(levels.saturating_sub(3))));
    mp::arr(&[
        mp::u(1),
        mp::u(5),
        mp::map(&[(s.messages().probe.0, mp::map(&fields))]),
    ])
}

/// The envelope body of message `m` (a `{name: fields}` map) as the definition's kind of `name`
/// says: an ask (id 5) or a send.
pub(crate) fn as_its_kind(name: &str, m: Vec<u8>) -> Vec<u8> {
    let ask = sparkwire::definition::Definition::builtin()
        .messages
        .iter()
        .any(|d| d.name == name && d.kind == sparkwire::definition::MessageKind::Ask);
    if ask {
        mp::arr(&[mp::u(1), mp::u(5), m])
    } else {
        mp::arr(&[mp::u(0), m])
    }
}
