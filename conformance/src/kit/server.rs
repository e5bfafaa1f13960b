//! An endpoint that listens, as the cases about any server see it: where it listens, how to open a
//! connection to it, the messages it takes and answers, and reading the close envelope it sends.

use crate::harness::env::Ctx;
use crate::harness::peer::{Conn, Event};
use crate::harness::verdict::{fail, Failure};
use bytes::Bytes;
use sparkwire::messages::Version;
use sparkwire::wire::handshake::RefusalReason;
use sparkwire::wire::CloseReason;
use std::any::Any;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;

/// An endpoint listening for the suite, and what keeps it alive.
pub struct Listening {
    /// Where it listens.
    pub addr: SocketAddr,
    /// Whatever keeps it running (a spawned process, a fake master); dropped at the case's end.
    pub guard: Box<dyn Any + Send + Sync>,
}

/// Opens the endpoint a case talks to.
pub type Open = Arc<
    dyn Fn(Ctx) -> Pin<Box<dyn Future<Output = Result<Listening, Failure>> + Send>> + Send + Sync,
>;

/// A message written by hand: its name and a function giving its fields.
pub type RawMessage = (&'static str, fn() -> Vec<(&'static str, Vec<u8>)>);

/// What a case that wants a refusal for one of `reasons` and then a close expects.
pub fn refusal_wanted(reasons: &[RefusalReason]) -> String {
    format!(
        "a refusal ({}) and then the connection closed",
        reasons
            .iter()
            .map(|r| r.name())
            .collect::<Vec<_>>()
            .join(" or ")
    )
}

/// Reads until the endpoint closes the connection and returns the close envelope that must be
/// its last frame (SPEC §8.1); fails when the last frame is anything else, or there is none.
pub async fn close_envelope(ctx: &Ctx, c: &mut Conn, want: &str) -> Result<CloseReason, Failure> {
    let wait = crate::kit::common::reaction_wait(ctx);
    let deadline = tokio::time::Instant::now() + wait;
    let mut last: Option<Bytes> = None;
    loop {
        let left = deadline.saturating_duration_since(tokio::time::Instant::now());
        match c.next_or_close(left).await {
            Some(Event::Frame(body)) => last = Some(body),
            Some(Event::TooLarge(n)) => {
                return Err(fail(want, format!("a frame declaring {n} bytes")))
            }
            Some(Event::Closed(how)) => {
                let Some(body) = last else {
                    return Err(fail(
                        want,
                        format!("the connection closed ({how}) with no frame before"),
                    ));
                };
                return match sparkwire::wire::decode_envelope::<sparkwire::messages::CoarseMessage>(
                    &body,
                    Version::V2,
                ) {
                    Ok(sparkwire::wire::Envelope::Close(reason)) => Ok(reason),
                    _ => Err(fail(
                        want,
                        format!(
                            "the connection closed ({how}) after {}, not a close envelope",
                            crate::harness::peer::describe(c.family, &body, c.v())
                        ),
                    )),
                };
            }
            None => {
                return Err(fail(
                    want,
                    format!("the connection still open after {} ms", wait.as_millis()),
                ))
            }
        }
    }
}
