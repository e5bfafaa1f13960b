//! Cases about Spark's own wire (SPEC §15), run only with `--wire spark`: what a Spark endpoint
//! does with Spark's transport frames, `RequestMessage` headers and the endpoint verifier, for
//! an endpoint that listens (a master; a worker on its RPC port) and, for the worker target, what
//! a Spark worker does before it registers.

use crate::harness::env::Ctx;
use crate::harness::env::Wire;
use crate::harness::peer::Conn;
use crate::harness::spark_wire::endpoint_of;
use crate::harness::verdict::fail;
use crate::harness::verdict::Failure;
use crate::harness::verdict::Outcome;
use crate::kit::common::wait;
use crate::kit::endpoint::*;
use crate::kit::server::Listening;
use bytes::Bytes;
use sparkwire::messages::DeployMessage;
use sparkwire::wire::Envelope;

pub(crate) type D = DeployMessage;

/// The Spark release spoken, or a skip on sparkwire's wire.
pub(crate) fn spark_version(ctx: &Ctx) -> Result<&'static sparkwire::spark::Release, Failure> {
    match ctx.log.wire() {
        Wire::Spark(r) => Ok(r),
        Wire::Sparkwire => Err(Failure::Skipped(
            "a case about Spark's own wire: only with --wire spark".into(),
        )),
    }
}

/// A bare connection to the endpoint, nothing sent.
pub(crate) async fn bare(ctx: &Ctx, s: &Endpoint, at: &Listening) -> Result<Conn, Failure> {
    spark_version(ctx)?;
    Conn::connect_spark(at.addr, "suite", s.suite_role, &ctx.log).await
}

/// The Java stream of the probe.
pub(crate) fn probe_stream(ctx: &Ctx, s: &Endpoint) -> Result<Bytes, Failure> {
    let v = spark_version(ctx)?;
    sparkwire::spark::message_stream(
        &sparkwire::spark::Typed::Deploy((s.spark().probe.0)()),
        v,
        None,
    )
    .map(Bytes::from)
    .map_err(|e| fail("a probe the suite can write", e.to_string()))
}

/// Sends the probe as an ask with request id `id` (a raw Spark frame) and expects its answer.
pub(crate) async fn probe(ctx: &Ctx, s: &Endpoint, c: &mut Conn, id: i64) -> Outcome {
    let stream = probe_stream(ctx, s)?;
    let endpoint = endpoint_of(ctx.settings.target);
    let bytes = spark_of(c)?
        .raw_request(Some(id), endpoint, stream)
        .map_err(|e| fail("a request the suite can write", e))?;
    c.send_spark(&bytes, &format!("RpcRequest {id}: the probe to {endpoint}"))
        .await?;
    answer(ctx, s, c, id).await
}

pub(crate) async fn answer(ctx: &Ctx, s: &Endpoint, c: &mut Conn, id: i64) -> Outcome {
    let is_answer = s.spark().probe.1;
    let want = format!("the probe's answer with request id {id}");
    c.expect::<D, ()>(wait(ctx), &want, |e| match e {
        Envelope::Reply { id: rid, reply } if *rid == id as u64 && is_answer(reply) => Some(()),
        _ => None,
    })
    .await
}

pub(crate) fn spark_of(c: &Conn) -> Result<&crate::harness::spark_wire::SparkSide, Failure> {
    c.spark()
        .ok_or_else(|| Failure::Skipped("only with --wire spark".into()))
}

/// Expects a failure (an `RpcFailure` frame or a failure object in an `RpcResponse`) for `id`.
pub(crate) async fn failure(
    ctx: &Ctx,
    c: &mut Conn,
    id: i64,
    want: &str,
) -> Result<String, Failure> {
    c.expect::<D, String>(wait(ctx), want, |e| match e {
        Envelope::Failure { id: fid, error } if *fid == id as u64 => {
            Some(format!("{}: {}", error.class_name, error.message))
        }
        _ => None,
    })
    .await
}
