//! `--target executor`, SPEC §4.1: the layouts only an executor receives from its driver, live.
//! A `tuple<A,B>` (a `sparkProperties` pair of SparkAppConfig, the answer to the executor's
//! RetrieveSparkAppConfig) and `bytes` (LaunchTask's data), each written by hand in a frame that
//! is otherwise legal on its route: the executor refuses it and closes that connection (SPEC §8:
//! the suite does not take closeReason from an executor, so only the close is seen). One
//! function per case; each cites the sentence it checks.

use crate::harness::env::Ctx;
use crate::harness::peer::Conn;
use crate::harness::peer::Event;
use crate::harness::verdict::fail;
use crate::harness::verdict::Failure;
use crate::harness::verdict::Outcome;
use crate::kit::common::wait;
use sparkwire::messages::CoarseMessage;
use sparkwire::wire::Envelope;

pub(crate) type C = CoarseMessage;

/// Replaces the bytes `canonical` of `body` by `replacement`.
pub(crate) fn splice(
    mut body: Vec<u8>,
    canonical: &[u8],
    replacement: &[u8],
    what: &str,
) -> Result<Vec<u8>, Failure> {
    let at = body
        .windows(canonical.len())
        .position(|w| w == canonical)
        .ok_or_else(|| fail(format!("{what} in the encoded frame"), "not found"))?;
    body.splice(at..at + canonical.len(), replacement.iter().copied());
    Ok(body)
}

/// Reads `c` until it closes; fails when the executor sends RegisterExecutor on it first (it
/// took the configuration it had to refuse).
pub(crate) async fn closed_without_registering(ctx: &Ctx, c: &mut Conn) -> Outcome {
    let want = "the connection closed, no RegisterExecutor on it (the SparkAppConfig refused)";
    let deadline = tokio::time::Instant::now() + wait(ctx);
    loop {
        let left = deadline.saturating_duration_since(tokio::time::Instant::now());
        match c.next(left).await {
            Some(Event::Closed(_)) => return Ok(()),
            None => return Err(fail(want, "the connection still open")),
            Some(Event::TooLarge(n)) => {
                return Err(fail(want, format!("a prefix declaring {n} bytes")))
            }
            Some(Event::Frame(body)) => {
                if let Ok(Envelope::Ask {
                    message: C::RegisterExecutor(_),
                    ..
                }) = sparkwire::wire::decode_envelope::<C>(&body, c.v())
                {
                    return Err(fail(want, "ask RegisterExecutor"));
                }
            }
        }
    }
}
