//! `spec/6/…`: SPEC §6 (protocol/SPEC.md).

use crate::harness::case::bind;
use crate::harness::case::Case;
use crate::harness::case::Target;
use crate::harness::env::Ctx;
use crate::harness::mp;
use crate::harness::peer::frame;
use crate::harness::verdict::Level;
use crate::harness::verdict::Outcome;
use crate::kit::endpoint::Endpoint;
use crate::kit::support::server::*;
use sparkwire::messages::Version;

/// The cases of this section for the listening endpoint `s` (a master, a worker's UI port, a driver's
/// executor port).
pub fn for_server(cs: &mut Vec<Case>, s: &Endpoint) {
    let name = s.name;
    cs.push(Case {
        id: "spec/6/local-message".into(),
        level: Level::Must,
        targets: vec![Target::Master, Target::Worker, Target::Driver],
        requirement: format!(
            "{name} refuses a local message on a connection \
        (LocalMessage) and closes the connection"
        ),
        body: bind(s, spec_6_local_message),
        ..Case::default()
    });
}

async fn spec_6_local_message(ctx: Ctx, s: Endpoint) -> Outcome {
    let m = mp::map(&[(s.messages().local, mp::map(&[]))]);
    closes_after(
        ctx,
        s.clone(),
        Version::V2,
        frame(&mp::arr(&[mp::u(0), m])),
        "a send of a local message",
    )
    .await
}
