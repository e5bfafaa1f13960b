//! `--target master`, the server's resource limits: SPEC §8 ("Resource limits close one
//! connection too, never the others"), SPEC §8.1 (the close envelope's kind for a limit and for a
//! frame over the limit) and handshake.md §5 step 0 (`tooManyConnections`). The limits are the
//! server's settings, so each case but one starts a server of its own with small limits from the
//! `--spawn-server` template ([`OwnServer`]; the placeholders are in `crate::harness::spawn`), and is skipped
//! without it. One function per case; each cites the sentence it checks.
//!
//! [`OwnServer`] also serves the cases about the admin secret (`kit/support/admin.rs`) and TLS
//! (`cases/handshake/s11.rs`), which need a server with settings of their own too.

use crate::harness::env::Ctx;
use crate::harness::peer::Conn;
use crate::harness::peer::Event;
use crate::harness::verdict::fail;
use crate::harness::verdict::Failure;
use crate::harness::verdict::Outcome;
use crate::kit::common::wait;
use crate::kit::own_server::*;
use sparkwire::messages::Version;
use sparkwire::wire::handshake::encode_hello;
use sparkwire::wire::handshake::Answer;
use sparkwire::wire::handshake::Hello;
use sparkwire::wire::handshake::RefusalReason;
use sparkwire::wire::handshake::Role;
use std::time::Duration;
use std::time::Instant;

/// Fails when `c` closes within `quiet` (frames before that are read and skipped).
pub(crate) async fn still_open(c: &mut Conn, quiet: Duration, what: &str) -> Outcome {
    let deadline = tokio::time::Instant::now() + quiet;
    loop {
        let left = deadline.saturating_duration_since(tokio::time::Instant::now());
        match c.next(left).await {
            None => return Ok(()),
            Some(Event::Frame(_)) => continue,
            Some(Event::TooLarge(n)) => {
                return Err(fail(what, format!("a frame declaring {n} bytes")))
            }
            Some(Event::Closed(how)) => {
                return Err(fail(what, format!("the connection closed ({how})")))
            }
        }
    }
}

/// A server with a limit of `max` connections holding `max` sessions.
pub(crate) async fn at_limit(
    ctx: &Ctx,
    secret: bool,
    max: usize,
) -> Result<(OwnServer, Vec<Conn>), Failure> {
    let s = OwnServer::start(
        ctx,
        Settings {
            max_connections: max,
            secret,
            ..Settings::default()
        },
        &["max_connections"],
    )
    .await?;
    let mut held = Vec::new();
    for n in 0..max {
        held.push(s.open(ctx, Role::Ui, &format!("held-{n}"), None).await?.0);
    }
    Ok((s, held))
}

/// Sends `body` as a hello on a fresh connection to `s` and returns the server's first frame.
pub(crate) async fn first_frame(
    ctx: &Ctx,
    s: &OwnServer,
    body: &[u8],
    what: &str,
) -> Result<(Conn, Vec<u8>), Failure> {
    let mut c = Conn::connect(s.addr, "over-the-limit", Role::Ui, &ctx.log).await?;
    c.send_frame(body).await?;
    let first = c.frame_body(wait(ctx), what).await?;
    Ok((c, first.to_vec()))
}

/// Expects `first` to be a refusal tooManyConnections, then the close.
pub(crate) async fn too_many(ctx: &Ctx, mut c: Conn, first: &[u8], want: &str) -> Outcome {
    if crate::harness::mp::challenge_nonce(first).is_some() {
        return Err(fail(want, "a challenge"));
    }
    match sparkwire::wire::handshake::decode_answer(first) {
        Ok(Answer::Refused(r)) if r.reason == RefusalReason::TooManyConnections => {}
        Ok(other) => return Err(fail(want, format!("{other:?}"))),
        Err(e) => return Err(fail(want, format!("an answer that does not decode: {e}"))),
    }
    c.expect_closed(wait(ctx), &format!("{want}, then the close"))
        .await
}

pub(crate) fn ui_hello() -> Vec<u8> {
    let mut body = Vec::new();
    encode_hello(&Hello::new(&[Version::V2], Role::Ui, "over"), &mut body);
    body
}

/// A UI on `s` that asks RequestMasterState every 300 ms until `until`: it is never idle.
pub(crate) async fn busy_ui(ctx: &Ctx, s: &OwnServer, until: Duration) -> Outcome {
    let (mut ui, _) = s.open(ctx, Role::Ui, "busy-ui", None).await?;
    let end = Instant::now() + until;
    let mut id = 100;
    while Instant::now() < end {
        served(ctx, &mut ui, id).await?;
        id += 1;
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    served(ctx, &mut ui, id).await
}

pub(crate) fn idle_server() -> Settings {
    Settings {
        idle_timeout: SHORT,
        ..Settings::default()
    }
}
