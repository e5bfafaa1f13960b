//! `handshake/1/…`: protocol/handshake.md §1.

use crate::harness::case::bind;
use crate::harness::case::Case;
use crate::harness::case::Target;
use crate::harness::env::Ctx;
use crate::harness::mp;
use crate::harness::peer::frame;
use crate::harness::verdict::fail;
use crate::harness::verdict::Level;
use crate::harness::verdict::Outcome;
use crate::kit::endpoint::Endpoint;
use crate::kit::support::server::*;
use sparkwire::wire::handshake::Answer;
use sparkwire::wire::handshake::RefusalReason;
use std::time::Duration;

/// The cases of this section for the listening endpoint `s` (a master, a worker's UI port, a driver's
/// executor port).
pub fn for_server(cs: &mut Vec<Case>, s: &Endpoint) {
    let name = s.name;
    cs.push(Case {
        id: "handshake/1/hello-in-pieces".into(),
        level: Level::Must,
        targets: vec![Target::Master, Target::Worker, Target::Driver],
        requirement: format!("{name} reads a hello that arrives in several TCP segments"),
        body: bind(s, handshake_1_hello_in_pieces),
        ..Case::default()
    });
    cs.push(Case {
        id: "handshake/1/trailing-bytes".into(),
        level: Level::Must,
        targets: vec![Target::Master, Target::Worker, Target::Driver],
        requirement: format!(
            "{name} refuses a hello frame with bytes after its one MessagePack value, then closes"
        ),
        body: bind(s, handshake_1_trailing_bytes),
        ..Case::default()
    });
}

async fn handshake_1_hello_in_pieces(ctx: Ctx, s: Endpoint) -> Outcome {
    let at = s.open(ctx.clone()).await?;
    let mut c = raw(&ctx, &at, s.suite_role).await?;
    let body = mp::map(&hello(&ctx, &s, &[1, 2])?);
    let bytes = frame(&body);
    c.send_raw(&bytes[..2], "the first 2 bytes of a hello")
        .await?;
    tokio::time::sleep(Duration::from_millis(60)).await;
    c.send_raw(&bytes[2..9], "7 more").await?;
    tokio::time::sleep(Duration::from_millis(60)).await;
    c.send_raw(&bytes[9..], "the rest").await?;
    match answer(&ctx, &mut c, &body).await? {
        Answer::Accepted(_) => Ok(()),
        Answer::Refused(r) => Err(fail("an acceptance", format!("refused: {}", r.reason))),
    }
}

async fn handshake_1_trailing_bytes(ctx: Ctx, s: Endpoint) -> Outcome {
    let mut body = mp::map(&hello(&ctx, &s, &[1, 2])?);
    body.push(0xc0);
    refused(
        ctx,
        s,
        body,
        &[RefusalReason::BadMagic, RefusalReason::MalformedHello],
    )
    .await
}
