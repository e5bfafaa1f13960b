//! Helpers the targets share: route cases from the definition, sample messages, unique ids.

use sparkwire::definition::{Definition, MessageDef, MessageKind};
use sparkwire::messages::Family;
use sparkwire::wire::vectors::{sample_message, Case as Sample};
use sparkwire::wire::{Envelope, Reply};

pub use crate::harness::peer::unique;
use crate::harness::peer::Conn;
use crate::harness::verdict::{check, fail, Outcome};

/// The definition's non-local messages of `family`.
pub fn crossing(family: &str) -> Vec<&'static MessageDef> {
    Definition::builtin()
        .messages
        .iter()
        .filter(|m| m.family == family && m.kind != MessageKind::Local)
        .collect()
}

/// The definition's minimal sample of `msg`.
pub fn sample<F: Family>(msg: &MessageDef) -> Result<F, crate::harness::verdict::Failure> {
    sample_message::<F>(Definition::builtin(), msg, Sample::Minimal)
        .map_err(|e| fail("a sample of the message", e.to_string()))
}

/// The envelope a misrouted `msg` travels in: as its kind says (a reply message as a send).
pub fn envelope_of<F: Family>(msg: &MessageDef, m: F, id: u64) -> Envelope<F> {
    match msg.kind {
        MessageKind::Ask => Envelope::Ask { id, message: m },
        _ => Envelope::Send(m),
    }
}

/// Sends `env` on `c` and checks that it is refused: an ask with a failure for its id (or a
/// close), a send with the connection closed.
pub async fn expect_refused<F: Family>(
    c: &mut Conn,
    env: Envelope<F>,
    wait: std::time::Duration,
) -> Outcome {
    let ask_id = match &env {
        Envelope::Ask { id, .. } => Some(*id),
        _ => None,
    };
    c.send(&env).await?;
    match ask_id {
        None => {
            c.expect_closed(wait, "the connection closed (the message is refused)")
                .await
        }
        Some(id) => {
            let want = format!("a failure for ask {id}, or the connection closed");
            match c.next_or_close(wait).await {
                Some(crate::harness::peer::Event::Closed(_)) => Ok(()),
                Some(crate::harness::peer::Event::Frame(body)) => {
                    let got = sparkwire::wire::decode_envelope::<F>(&body, c.v());
                    match got {
                        Ok(Envelope::Failure { id: fid, .. }) if fid == id => Ok(()),
                        Ok(Envelope::Reply { id: rid, reply }) if rid == id => {
                            Err(fail(want, format!("a reply {}", reply_text(&reply))))
                        }
                        Ok(other) => {
                            // Something unrelated: keep waiting for the answer or the close.
                            let label = crate::harness::peer::envelope_label(&other);
                            let rest = c
                                .expect::<F, ()>(wait, &want, |e| match e {
                                    Envelope::Failure { id: fid, .. } if *fid == id => Some(()),
                                    _ => None,
                                })
                                .await;
                            match rest {
                                Ok(()) => Ok(()),
                                Err(crate::harness::verdict::Failure::Fail { seen, .. })
                                    if seen.contains("closed") =>
                                {
                                    Ok(())
                                }
                                Err(e) => Err(match e {
                                    crate::harness::verdict::Failure::Fail { expected, seen } => {
                                        fail(expected, format!("{label}, then {seen}"))
                                    }
                                    e => e,
                                }),
                            }
                        }
                        Err(e) => Err(fail(want, format!("an undecodable frame: {e}"))),
                    }
                }
                Some(crate::harness::peer::Event::TooLarge(n)) => {
                    Err(fail(want, format!("a prefix of {n} bytes")))
                }
                None => Err(fail(want, "neither within the time allowed")),
            }
        }
    }
}

fn reply_text<F: Family>(r: &Reply<F>) -> String {
    match r {
        Reply::Message(m) => m.name().to_string(),
        other => format!("{other:?}"),
    }
}

/// Fails unless `text` matches Spark's id pattern `prefix-YYYYMMDDHHMMSS-NNNN`.
pub fn spark_id(text: &str, prefix: &str) -> Outcome {
    let ok = text
        .strip_prefix(prefix)
        .and_then(|r| r.strip_prefix('-'))
        .and_then(|r| r.split_once('-'))
        .is_some_and(|(stamp, n)| {
            stamp.len() == 14
                && stamp.bytes().all(|b| b.is_ascii_digit())
                && n.len() >= 4
                && n.bytes().all(|b| b.is_ascii_digit())
        });
    check(
        ok,
        format!("an id of Spark's form {prefix}-YYYYMMDDHHMMSS-NNNN"),
        text,
    )
}

/// How long a case waits for the endpoint to do what it awaits: the run's patience.
pub fn wait(ctx: &crate::harness::env::Ctx) -> std::time::Duration {
    ctx.settings.patience
}

/// How long a case waits for what a correct endpoint does as soon as it reads a frame (the
/// close after a refusal it wrote, the close for a frame it must refuse, the messages it answers
/// a report with): a case's default limit times `--timeout-scale`, at most the patience. An
/// endpoint that never does it costs a case this much, not its whole limit (issue 30, bounded
/// time); the patience is for what takes time (a launch, a registration's scheduling).
pub fn reaction_wait(ctx: &crate::harness::env::Ctx) -> std::time::Duration {
    crate::harness::verdict::DEFAULT_TIMEOUT
        .mul_f64(ctx.settings.timeout_scale)
        .min(ctx.settings.patience)
}

/// The close envelope `last` (the frame an endpoint sent just before it closed) is, if it is one.
pub fn close_of(last: Option<&bytes::Bytes>) -> Option<sparkwire::wire::CloseReason> {
    match sparkwire::wire::decode_envelope::<sparkwire::messages::CoarseMessage>(
        last?,
        sparkwire::messages::Version::V2,
    ) {
        Ok(Envelope::Close(r)) => Some(r),
        _ => None,
    }
}

/// Reads until the endpoint closes `c`; fails when its last frame is a close envelope.
pub async fn closed_without_envelope(
    ctx: &crate::harness::env::Ctx,
    c: &mut Conn,
    want: &str,
) -> Outcome {
    let deadline = tokio::time::Instant::now() + wait(ctx) * 2;
    let mut last = None;
    loop {
        let left = deadline.saturating_duration_since(tokio::time::Instant::now());
        match c.next_or_close(left).await {
            Some(crate::harness::peer::Event::Frame(b)) => last = Some(b),
            Some(crate::harness::peer::Event::Closed(_)) => {
                return match close_of(last.as_ref()) {
                    Some(r) => Err(fail(
                        want,
                        format!("a close envelope {r:?}, then the close"),
                    )),
                    None => Ok(()),
                }
            }
            Some(crate::harness::peer::Event::TooLarge(n)) => {
                return Err(fail(want, format!("a frame declaring {n} bytes")))
            }
            None => return Err(fail(want, "the connection still open")),
        }
    }
}

/// Opens a connection to `addr` (`label` in the log) with `hello`, authenticated with the suite's
/// secret when it has one; the connection and the features the endpoint's answer took.
pub async fn open_offering(
    ctx: &crate::harness::env::Ctx,
    addr: std::net::SocketAddr,
    label: &str,
    hello: sparkwire::wire::handshake::Hello,
) -> Result<(Conn, Vec<String>), crate::harness::verdict::Failure> {
    Conn::open_with(
        addr,
        label,
        hello,
        ctx.settings.secret.as_ref(),
        &ctx.log,
        wait(ctx),
    )
    .await
}

/// Opens a connection to `addr` whose hello (`versions`, `role`, `id`) offers `closeReason`; the
/// connection and whether the endpoint took it.
pub async fn offering_close_reason(
    ctx: &crate::harness::env::Ctx,
    addr: std::net::SocketAddr,
    label: &str,
    versions: &[sparkwire::messages::Version],
    role: sparkwire::wire::handshake::Role,
    id: impl Into<String>,
) -> Result<(Conn, bool), crate::harness::verdict::Failure> {
    use sparkwire::wire::handshake::{Hello, CLOSE_REASON};
    let hello = Hello::new(versions, role, id).with_features(&[CLOSE_REASON]);
    let (c, taken) = open_offering(ctx, addr, label, hello).await?;
    Ok((c, taken.iter().any(|f| f == CLOSE_REASON)))
}
