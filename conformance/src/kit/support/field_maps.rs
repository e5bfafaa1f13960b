//! `--target master`, SPEC §4 and §4.1 (and §11.3 for field maps and nested maps): how a decoder
//! reads the fields of a struct, live. Each case sends a version 2 `RegisterApplication` from an
//! application client (legal on its route and for its role, SPEC §14.1) whose default resource
//! profile's task request `{"resourceName": "cpus", "amount": 1.0}` (a `TaskResourceRequest`
//! inside `taskResources`, a `map<string,TaskResourceRequest>`) is rewritten by hand: a frame
//! that must be refused closes the connection, with a close envelope of kind `InvalidFields`
//! where the hello offered `closeReason` and the master took it (SPEC §8.1); one that must be
//! taken is answered `RegisteredApplication`. One function per case; each cites its sentence.

use crate::harness::env::Ctx;
use crate::harness::mp::map;
use crate::harness::mp::s;
use crate::harness::peer::frame;
use crate::harness::peer::Conn;
use crate::harness::verdict::check;
use crate::harness::verdict::fail;
use crate::harness::verdict::Failure;
use crate::harness::verdict::Outcome;
use crate::kit::common::unique;
use crate::kit::common::wait;
use crate::kit::master::addr;
use crate::kit::master::app_desc;
use crate::kit::server::close_envelope;
use sparkwire::messages::deploy::RegisterApplication;
use sparkwire::messages::Addr;
use sparkwire::messages::DeployMessage;
use sparkwire::messages::EndpointRef;
use sparkwire::messages::Version;
use sparkwire::wire::encode_envelope;
use sparkwire::wire::handshake::Role;
use sparkwire::wire::Envelope;

pub(crate) type D = DeployMessage;

/// An f64 as the encoder writes it (float 64).
pub(crate) fn f64_bytes(v: f64) -> Vec<u8> {
    let mut out = vec![0xcb];
    out.extend_from_slice(&v.to_be_bytes());
    out
}

/// A `TaskResourceRequest` field map with the entries given, in that order.
pub(crate) fn task_request(entries: &[(&str, Vec<u8>)]) -> Vec<u8> {
    map(entries)
}

/// The default profile's task request as the encoder writes it.
pub(crate) fn canonical_request() -> Vec<u8> {
    task_request(&[("resourceName", s("cpus")), ("amount", f64_bytes(1.0))])
}

/// A task request for `name` with the amount written as `amount`.
pub(crate) fn request_with_amount(name: &str, amount: Vec<u8>) -> Vec<u8> {
    task_request(&[("resourceName", s(name)), ("amount", amount)])
}

/// A version 2 RegisterApplication frame (the default profile exists from version 2) in which
/// the bytes `canonical`, as the encoder wrote them, are replaced by `replacement`: frames no
/// encoder writes, built by hand.
pub(crate) fn registration_with(canonical: &[u8], replacement: &[u8]) -> Result<Vec<u8>, Failure> {
    let port = 40000 + (unique() % 20000) as i32;
    let m = D::RegisterApplication(RegisterApplication::new(
        app_desc(Some(1), 64, Some(0)),
        EndpointRef::at(Addr::new("127.0.0.1", port), "AppClient"),
    ));
    let mut body = Vec::new();
    encode_envelope(&Envelope::Send(m), Version::V2, &mut body)
        .map_err(|e| fail("a RegisterApplication encoded", e.to_string()))?;
    let at = body
        .windows(canonical.len())
        .position(|w| w == canonical)
        .ok_or_else(|| {
            fail(
                "the task request in the encoded RegisterApplication",
                "not found",
            )
        })?;
    body.splice(at..at + canonical.len(), replacement.iter().copied());
    Ok(frame(&body))
}

/// A fresh application client's connection at version 2, offering `closeReason`; also whether
/// the master took it.
pub(crate) async fn app_client(ctx: &Ctx) -> Result<(Conn, bool), Failure> {
    crate::harness::peer::require_version(&ctx.log, Version::V2)?;
    crate::kit::common::offering_close_reason(
        ctx,
        addr(ctx)?,
        "app",
        &[Version::V2],
        Role::AppClient,
        String::new(),
    )
    .await
}

/// Sends the registration with `replacement` for `canonical` and checks that it is refused
/// (`InvalidFields`).
pub(crate) async fn refused(
    ctx: &Ctx,
    canonical: &[u8],
    replacement: &[u8],
    what: &str,
) -> Outcome {
    let bytes = registration_with(canonical, replacement)?;
    let (mut c, close_reason) = app_client(ctx).await?;
    c.send_raw(&bytes, what).await?;
    if close_reason {
        let want = "a close envelope of kind InvalidFields, then the close (nothing registered)";
        let reason = close_envelope(ctx, &mut c, want).await?;
        check(reason.kind == "InvalidFields", want, format!("{reason:?}"))
    } else {
        c.expect_closed_silently(
            crate::kit::common::reaction_wait(ctx),
            "the connection closed, nothing registered",
        )
        .await
    }
}

/// Sends the registration with `replacement` for `canonical` and checks that it is answered
/// RegisteredApplication.
pub(crate) async fn taken(ctx: &Ctx, canonical: &[u8], replacement: &[u8], what: &str) -> Outcome {
    let bytes = registration_with(canonical, replacement)?;
    let (mut c, _) = app_client(ctx).await?;
    c.send_raw(&bytes, what).await?;
    c.expect::<D, ()>(wait(ctx), "RegisteredApplication", |e| {
        matches!(e, Envelope::Send(D::RegisteredApplication(_))).then_some(())
    })
    .await
}
