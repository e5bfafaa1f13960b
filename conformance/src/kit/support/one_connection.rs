//! `--target master`, SPEC §1: all traffic between two endpoints travels over the connection
//! the client opened. One function per case; each cites the sentence it checks.

use crate::harness::env::Ctx;
use crate::harness::peer::Listener;
use crate::harness::verdict::fail;
use std::net::SocketAddr;

/// A listener on a loopback address of its own (127.0.0.2), where no other case's worker says
/// it listens; 127.0.0.1 where the host has no such address.
pub(crate) async fn advertised(ctx: &Ctx) -> Result<Listener, crate::harness::verdict::Failure> {
    for host in [[127, 0, 0, 2], [127, 0, 0, 1]] {
        if let Ok(l) = Listener::bind(SocketAddr::from((host, 0)), &ctx.log).await {
            return Ok(l);
        }
    }
    Err(fail(
        "a listening socket on loopback",
        "none could be bound",
    ))
}
