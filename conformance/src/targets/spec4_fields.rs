//! `--target master`, SPEC §4 and §4.1 (and §11.3 for field maps and nested maps): how a decoder
//! reads the fields of a struct, live. Each case sends a version 2 `RegisterApplication` from an
//! application client (legal on its route and for its role, SPEC §14.1) whose default resource
//! profile's task request `{"resourceName": "cpus", "amount": 1.0}` (a `TaskResourceRequest`
//! inside `taskResources`, a `map<string,TaskResourceRequest>`) is rewritten by hand: a frame
//! that must be refused closes the connection, with a close envelope of kind `InvalidFields`
//! where the hello offered `closeReason` and the master took it (SPEC §8.1); one that must be
//! taken is answered `RegisteredApplication`. One function per case; each cites its sentence.

use std::time::Duration;

use sparkwire::messages::deploy::RegisterApplication;
use sparkwire::messages::{Addr, DeployMessage, EndpointRef, Version};
use sparkwire::wire::handshake::Role;
use sparkwire::wire::{encode_envelope, Envelope};

use crate::case::{run, Case, Target};
use crate::env::Ctx;
use crate::kit::common::unique;
use crate::kit::common::wait;
use crate::kit::master::{addr, app_desc};
use crate::kit::server::close_envelope;
use crate::mp::{arr, map, s};
use crate::peer::{frame, Conn};
use crate::verdict::{check, fail, Failure, Level, Outcome};

type D = DeployMessage;

/// Every case of SPEC §4 and §4.1 about field maps for the master, added to `cs`.
pub fn add(cs: &mut Vec<Case>) {
    cs.push(Case {
        id: "spec/4.1/f64-nan-refused".into(),
        level: Level::Must,
        targets: vec![Target::Master],
        timeout: Duration::from_secs(10),
        requirement: "SPEC §4.1, \"`f64` | float 64 | finite: a decoder refuses NaN and the infinities (`InvalidFields`)\": a \
            RegisterApplication whose task request amount (a `TaskResourceRequest.amount`, f64) is NaN is refused, \
                the connection closed (with a close envelope of kind InvalidFields where closeReason was agreed, SPEC \
                    §8.1)".into(),
        body: run(f64_nan_refused),
        ..Case::default()
    });
    cs.push(Case {
        id: "spec/4.1/f64-infinity-refused".into(),
        level: Level::Must,
        targets: vec![Target::Master],
        timeout: Duration::from_secs(10),
        requirement: "SPEC §4.1, \"`f64` | float 64 | finite: a decoder refuses NaN and the infinities (`InvalidFields`)\": a \
            RegisterApplication whose task request amount is +infinity is refused, the connection closed \
                (InvalidFields where closeReason was agreed, SPEC §8.1)".into(),
        body: run(f64_infinity_refused),
        ..Case::default()
    });
    cs.push(Case {
        id: "spec/4.1/f64-as-float32-taken".into(),
        level: Level::Must,
        targets: vec![Target::Master],
        timeout: Duration::from_secs(10),
        requirement: "SPEC §4.1, \"`f64` | float 64 | ... it also accepts float 32\": a RegisterApplication whose task request \
            amount is written as a float 32 (1.0) is answered RegisteredApplication".into(),
        body: run(f64_as_float32_taken),
        ..Case::default()
    });
    cs.push(Case {
        id: "spec/4.1/nested-struct-as-array".into(),
        level: Level::Must,
        targets: vec![Target::Master],
        timeout: Duration::from_secs(10),
        requirement: "SPEC §4.1, \"a struct name | map of its fields | ... never an array of the values ...: a decoder refuses one \
            (`InvalidFields`)\": a RegisterApplication whose nested TaskResourceRequest is written as the array \
                `[\"cpus\", 1.0]` is refused, the connection closed (InvalidFields where closeReason was agreed, SPEC \
                    §8.1)".into(),
        body: run(nested_struct_as_array),
        ..Case::default()
    });
    cs.push(Case {
        id: "spec/4/field-given-twice".into(),
        level: Level::Must,
        targets: vec![Target::Master],
        timeout: Duration::from_secs(10),
        requirement: "SPEC §4, \"A **decoder** ... refuses ... a field given twice ... (`InvalidFields`)\", and §11.3, \"A \
            struct's field map is not a `map<K,V>` ... a field given twice is refused\": a RegisterApplication whose \
                nested TaskResourceRequest gives `amount` twice (with the same value) is refused, the connection \
                    closed (InvalidFields where closeReason was agreed, SPEC §8.1)".into(),
        body: run(field_given_twice),
        ..Case::default()
    });
    cs.push(Case {
        id: "spec/4/fields-any-order".into(),
        level: Level::Must,
        targets: vec![Target::Master],
        timeout: Duration::from_secs(10),
        requirement: "SPEC §4, \"A **decoder** accepts the fields in any order\", and §11.3, \"its fields come in any order \
            (§4)\": a RegisterApplication whose nested TaskResourceRequest lists `amount` before `resourceName` (the \
                definition's order reversed) is answered RegisteredApplication".into(),
        body: run(fields_any_order),
        ..Case::default()
    });
    cs.push(Case {
        id: "spec/4/missing-required-field".into(),
        level: Level::Must,
        targets: vec![Target::Master],
        timeout: Duration::from_secs(10),
        requirement: "SPEC §4, \"A **decoder** ... refuses a missing field of any other type [than `option<…>`] ... \
            (`InvalidFields`)\": a RegisterApplication whose nested TaskResourceRequest has no `amount` (an f64) is \
                refused, the connection closed (InvalidFields where closeReason was agreed, SPEC §8.1)".into(),
        body: run(missing_required_field),
        ..Case::default()
    });
    cs.push(Case {
        id: "spec/11.3/nested-map-keys-out-of-order".into(),
        level: Level::Must,
        targets: vec![Target::Master],
        timeout: Duration::from_secs(10),
        requirement: "SPEC §11.3, \"A decoder MUST refuse, with `InvalidFields`, a map with a key given twice or out of order ... \
            at any depth\", and §4.1, \"`map<K,V>` | map | keys distinct and ascending\": a RegisterApplication whose \
                `taskResources` (a map three levels down, inside the default profile) has its keys `gpu`, `cpus` in \
                    descending order is refused, the connection closed (InvalidFields where closeReason was agreed, \
                        SPEC §8.1)".into(),
        body: run(nested_map_keys_out_of_order),
        ..Case::default()
    });
}

/// An f64 as the encoder writes it (float 64).
fn f64_bytes(v: f64) -> Vec<u8> {
    let mut out = vec![0xcb];
    out.extend_from_slice(&v.to_be_bytes());
    out
}

/// A `TaskResourceRequest` field map with the entries given, in that order.
fn task_request(entries: &[(&str, Vec<u8>)]) -> Vec<u8> {
    map(entries)
}

/// The default profile's task request as the encoder writes it.
fn canonical_request() -> Vec<u8> {
    task_request(&[("resourceName", s("cpus")), ("amount", f64_bytes(1.0))])
}

/// A task request for `name` with the amount written as `amount`.
fn request_with_amount(name: &str, amount: Vec<u8>) -> Vec<u8> {
    task_request(&[("resourceName", s(name)), ("amount", amount)])
}

/// A version 2 RegisterApplication frame (the default profile exists from version 2) in which
/// the bytes `canonical`, as the encoder wrote them, are replaced by `replacement`: frames no
/// encoder writes, built by hand.
fn registration_with(canonical: &[u8], replacement: &[u8]) -> Result<Vec<u8>, Failure> {
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
async fn app_client(ctx: &Ctx) -> Result<(Conn, bool), Failure> {
    crate::peer::require_version(&ctx.log, Version::V2)?;
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
async fn refused(ctx: &Ctx, canonical: &[u8], replacement: &[u8], what: &str) -> Outcome {
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
async fn taken(ctx: &Ctx, canonical: &[u8], replacement: &[u8], what: &str) -> Outcome {
    let bytes = registration_with(canonical, replacement)?;
    let (mut c, _) = app_client(ctx).await?;
    c.send_raw(&bytes, what).await?;
    c.expect::<D, ()>(wait(ctx), "RegisteredApplication", |e| {
        matches!(e, Envelope::Send(D::RegisteredApplication(_))).then_some(())
    })
    .await
}

async fn f64_nan_refused(ctx: Ctx) -> Outcome {
    refused(
        &ctx,
        &canonical_request(),
        &request_with_amount("cpus", f64_bytes(f64::NAN)),
        "a RegisterApplication whose task request amount is NaN",
    )
    .await
}

async fn f64_infinity_refused(ctx: Ctx) -> Outcome {
    refused(
        &ctx,
        &canonical_request(),
        &request_with_amount("cpus", f64_bytes(f64::INFINITY)),
        "a RegisterApplication whose task request amount is +infinity",
    )
    .await
}

async fn f64_as_float32_taken(ctx: Ctx) -> Outcome {
    let mut f32_one = vec![0xca];
    f32_one.extend_from_slice(&1.0f32.to_be_bytes());
    taken(
        &ctx,
        &canonical_request(),
        &request_with_amount("cpus", f32_one),
        "a RegisterApplication whose task request amount is the float 32 1.0",
    )
    .await
}

async fn nested_struct_as_array(ctx: Ctx) -> Outcome {
    refused(
        &ctx,
        &canonical_request(),
        &arr(&[s("cpus"), f64_bytes(1.0)]),
        "a RegisterApplication whose task request is the array [\"cpus\", 1.0]",
    )
    .await
}

async fn field_given_twice(ctx: Ctx) -> Outcome {
    refused(
        &ctx,
        &canonical_request(),
        &task_request(&[
            ("resourceName", s("cpus")),
            ("amount", f64_bytes(1.0)),
            ("amount", f64_bytes(1.0)),
        ]),
        "a RegisterApplication whose task request gives amount twice",
    )
    .await
}

async fn fields_any_order(ctx: Ctx) -> Outcome {
    taken(
        &ctx,
        &canonical_request(),
        &task_request(&[("amount", f64_bytes(1.0)), ("resourceName", s("cpus"))]),
        "a RegisterApplication whose task request lists amount before resourceName",
    )
    .await
}

async fn missing_required_field(ctx: Ctx) -> Outcome {
    refused(
        &ctx,
        &canonical_request(),
        &task_request(&[("resourceName", s("cpus"))]),
        "a RegisterApplication whose task request has no amount",
    )
    .await
}

async fn nested_map_keys_out_of_order(ctx: Ctx) -> Outcome {
    let canonical = map(&[("cpus", canonical_request())]);
    let unordered = map(&[
        ("gpu", request_with_amount("gpu", f64_bytes(1.0))),
        ("cpus", canonical_request()),
    ]);
    refused(
        &ctx,
        &canonical,
        &unordered,
        "a RegisterApplication whose taskResources is {\"gpu\": …, \"cpus\": …}",
    )
    .await
}
