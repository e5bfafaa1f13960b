//! `handshake/9/…`: protocol/handshake.md §9.

use crate::harness::case::bind;
use crate::harness::case::Case;
use crate::harness::case::Target;
use crate::harness::env::Ctx;
use crate::harness::peer::Conn;
use crate::harness::verdict::Level;
use crate::harness::verdict::Outcome;
use crate::kit::common::wait;
use crate::kit::endpoint::Endpoint;
use crate::kit::support::server::*;
use sparkwire::messages::Version;

/// The cases of this section for the listening endpoint `s` (a master, a worker's UI port, a driver's
/// executor port).
pub fn for_server(cs: &mut Vec<Case>, s: &Endpoint) {
    let name = s.name;
    cs.push(Case {
        id: "handshake/9/others-unaffected".into(),
        level: Level::Must,
        targets: vec![Target::Master, Target::Worker, Target::Driver],
        requirement: format!(
            "a failed handshake ends only its own connection: {name} still serves one opened \
                before it"
        ),
        body: bind(s, handshake_9_others_unaffected),
        ..Case::default()
    });
}

async fn handshake_9_others_unaffected(ctx: Ctx, s: Endpoint) -> Outcome {
    let at = s.open(ctx.clone()).await?;
    let mut good = session(&ctx, &s, &at, Version::V2, "good").await?;
    let mut bad = Conn::connect(at.addr, "bad", s.suite_role, &ctx.log).await?;
    bad.send_raw(
        b"\x00\x00\x00\x03\xc1\xc1\xc1",
        "a hello that is not MessagePack",
    )
    .await?;
    bad.expect_closed(wait(&ctx), "the bad connection closed")
        .await?;
    probe(&ctx, &s, &mut good, 77).await
}
