//! `handshake/1.1/…`: protocol/handshake.md §1.1.

use crate::harness::case::bind;
use crate::harness::case::Case;
use crate::harness::case::Target;
use crate::harness::env::Ctx;
use crate::harness::mp;
use crate::harness::verdict::check;
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
        id: "handshake/1.1/limit-inclusive".into(),
        level: Level::Must,
        targets: vec![Target::Master, Target::Worker, Target::Driver],
        requirement: format!(
            "{name} accepts a hello of exactly 65536 bytes, the pre-handshake limit"
        ),
        body: bind(s, handshake_1_1_limit_inclusive),
        ..Case::default()
    });
    cs.push(Case {
        id: "handshake/1.1/http-get".into(),
        level: Level::Must,
        targets: vec![Target::Master, Target::Worker, Target::Driver],
        requirement: format!(
            "{name} closes at once a connection that starts with an HTTP `GET ` (a length over 64 \
                KiB)"
        ),
        body: bind(s, handshake_1_1_http_get),
        ..Case::default()
    });
}

async fn handshake_1_1_limit_inclusive(ctx: Ctx, s: Endpoint) -> Outcome {
    let mut e = signed(&ctx, mp::hello_entries(&[1, 2], s.suite_role.name(), ""))?;
    let base = mp::map(&e).len();
    // An id string of n bytes (str32 header: 5 bytes) makes the body exactly 65536.
    let n = 65536 - (base - 1) - 5;
    let mut id = vec![0xdb];
    id.extend_from_slice(&(n as u32).to_be_bytes());
    id.extend(std::iter::repeat_n(b'x', n));
    e[3].1 = id;
    let body = mp::map(&e);
    check(
        body.len() == 65536,
        "a 65536-byte hello",
        format!("{} bytes", body.len()),
    )?;
    accepted(ctx.clone(), s, body, Version::V2).await
}

async fn handshake_1_1_http_get(ctx: Ctx, s: Endpoint) -> Outcome {
    let at = s.open(ctx.clone()).await?;
    let mut c = raw(&ctx, &at, s.suite_role).await?;
    c.send_raw(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n", "an HTTP request")
        .await?;
    c.expect_closed(wait(&ctx), "the connection closed").await
}
