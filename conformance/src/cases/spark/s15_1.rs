//! `spark/15.1/…`: SPEC §15.1, Spark's own wire.

use crate::harness::case::bind;
use crate::harness::case::Case;
use crate::harness::case::Sharing;
use crate::harness::case::Target;
use crate::harness::env::Ctx;
use crate::harness::spark_wire::endpoint_of;
use crate::harness::verdict::check;
use crate::harness::verdict::fail;
use crate::harness::verdict::Level;
use crate::kit::common::wait;
use crate::kit::endpoint::*;
use crate::kit::support::spark::*;
use bytes::Bytes;
use sparkwire::messages::DeployMessage;
use sparkwire::wire::Envelope;
use std::time::Duration;

type D = DeployMessage;
/// A broken transport frame: the case's id, what is wrong with it, its bytes.
type BrokenFrame = (&'static str, &'static str, fn() -> Vec<u8>);

/// The cases of this section for `s`, an endpoint listening on Spark's own wire.
pub fn for_spark_server(cs: &mut Vec<Case>, s: Endpoint) {
    let name = s.name;
    let frames: [BrokenFrame; 3] = [
        (
            "spark/15.1/too-large-frame",
            "declaring 2^40 bytes, not waiting for them",
            || {
                let mut b = (1u64 << 40).to_be_bytes().to_vec();
                b.extend_from_slice(&[3, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0]);
                b
            },
        ),
        (
            "spark/15.1/short-frame",
            "whose length field is below its own 8 bytes",
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
            let at = s.open(ctx.clone()).await?;
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
            let at = s.open(ctx.clone()).await?;
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
        requirement: format!(
            "{name} answers an RpcRequest whose Java stream does not read with RpcFailure, and \
                goes on"
        ),
        body: bind(&s, move |ctx: Ctx, s| async move {
            let at = s.open(ctx.clone()).await?;
            let mut c = bare(&ctx, &s, &at).await?;
            let endpoint = endpoint_of(ctx.settings.target);
            let garbage = Bytes::from_static(&[0xAC, 0xED, 0x00, 0x05, 0x73, 0x72, 0xFF]);
            let bytes = spark_of(&c)?
                .raw_request(Some(31), endpoint, garbage)
                .map_err(|e| fail("a request", e))?;
            c.send_spark(&bytes, "RpcRequest 31: a truncated Java stream")
                .await?;
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
        requirement: format!(
            "{name} drops a OneWayMessage whose Java stream does not read, answers nothing, and \
                goes on"
        ),
        body: bind(&s, move |ctx: Ctx, s| async move {
            let at = s.open(ctx.clone()).await?;
            let mut c = bare(&ctx, &s, &at).await?;
            let endpoint = endpoint_of(ctx.settings.target);
            let garbage = Bytes::from_static(&[0xAC, 0xED, 0x00, 0x05, 0x73, 0x72, 0xFF]);
            let bytes = spark_of(&c)?
                .raw_request(None, endpoint, garbage)
                .map_err(|e| {
                    fail(
                        "a one-way \
                message",
                        e,
                    )
                })?;
            c.send_spark(&bytes, "OneWayMessage: a truncated Java stream")
                .await?;
            probe(&ctx, &s, &mut c, 33).await
        }),
        ..Case::default()
    });
    for (id, what, bytes) in frames {
        cs.push(Case {
            id: id.into(),
            level: Level::Must,
            targets: vec![Target::Master, Target::Worker],
            timeout: Duration::from_secs(10),
            sharing: Sharing::Alone,
            requirement: format!("{name} closes a connection when a transport frame comes {what}"),
            body: bind(&s, move |ctx: Ctx, s| async move {
                let at = s.open(ctx.clone()).await?;
                let mut c = bare(&ctx, &s, &at).await?;
                c.send_spark(&bytes(), "a broken transport frame").await?;
                c.expect_closed(wait(&ctx), "the connection closed").await
            }),
            ..Case::default()
        });
    }
}
