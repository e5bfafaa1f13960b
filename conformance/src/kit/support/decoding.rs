//! SPEC §11: decoding in detail, live, for the master, the worker and the executor (the driver's
//! cases are in `decoding_driver.rs`, on these helpers). Every decoder decision of
//! `protocol/vectors/decoder.json` (and every invalid envelope vector of `envelope.json`) that a
//! target can receive is replayed on a fresh connection, in a message that is otherwise legal on
//! its route and for the role that sends it (SPEC §14.1): a valid frame keeps the connection, an
//! invalid one closes it (SPEC §8, "On any decoding error the receiver closes that connection
//! only"). Then the canonical maps of §11.3 inside a registration. One function per case.

use crate::harness::env::Ctx;
use crate::harness::peer::frame;
use crate::harness::peer::Conn;
use crate::harness::peer::Event;
use crate::harness::verdict::fail;
use crate::harness::verdict::Failure;
use crate::harness::verdict::Outcome;
use crate::kit::common::unique;
use crate::kit::common::wait;
use crate::kit::master::addr;
use crate::kit::master::app_desc;
use crate::kit::master::open;
use crate::kit::master::register_worker_msg;
use crate::kit::replay::*;
use sparkwire::messages::deploy::RegisterApplication;
use sparkwire::messages::Addr;
use sparkwire::messages::DeployMessage;
use sparkwire::messages::EndpointRef;
use sparkwire::messages::Version;
use sparkwire::wire::encode_envelope;
use sparkwire::wire::handshake::Hello;
use sparkwire::wire::handshake::Role;
use sparkwire::wire::handshake::CLOSE_REASON;
use sparkwire::wire::Envelope;
use std::collections::BTreeMap;

/// The words a case replaying a vector checks: the vector's name in its file (`decoder` or
/// `envelope`), which SPEC §11 makes every decoder decide alike.
pub fn vector_quote(file: &str, name: &str) -> String {
    format!("SPEC §11 and §8, protocol/vectors/{file}.json, \"{name}\"")
}

pub(crate) type D = DeployMessage;

/// Opens the connection a replay is sent on, registered as it needs, offering `closeReason`;
/// also says whether the master took it.
pub(crate) async fn connection(ctx: &Ctx, r: &Replay) -> Result<(Conn, bool), Failure> {
    let role = match r.how {
        How::AnyRole => Role::Ui,
        How::RegisteredWorker => Role::Worker,
        How::Fresh(role) => role,
    };
    let n = unique();
    let id = if role == Role::Worker {
        format!("worker-20250101120000-127.0.0.1-{n}")
    } else {
        String::new()
    };
    let hello = Hello::new(&[r.version], role, id.clone()).with_features(&[CLOSE_REASON]);
    let opened = Conn::open_with(
        addr(ctx)?,
        "suite",
        hello,
        ctx.settings.secret.as_ref(),
        &ctx.log,
        wait(ctx),
    )
    .await;
    let (mut c, close_reason) = match opened {
        Ok((c, taken)) => (c, taken.iter().any(|f| f == CLOSE_REASON)),
        Err(Failure::Fail { .. }) if r.version == Version::V1 => {
            return Err(Failure::Skipped(
                "a version 1 vector, and the master does not speak version 1".into(),
            ))
        }
        Err(e) => return Err(e),
    };
    if r.how == How::RegisteredWorker {
        c.send(&Envelope::Send(register_worker_msg(
            &id,
            "127.0.0.1",
            20000 + (n % 40000) as i32,
            0,
            0,
        )))
        .await?;
        c.expect::<D, ()>(wait(ctx), "RegisteredWorker", |e| {
            matches!(e, Envelope::Send(D::RegisteredWorker(_))).then_some(())
        })
        .await?;
    }
    Ok((c, close_reason))
}

pub(crate) async fn replay(ctx: Ctx, r: Replay) -> Outcome {
    let (mut c, close_reason) = connection(&ctx, &r).await?;
    c.send_raw(&r.frame, &format!("the vector \"{}\"", r.name))
        .await?;
    match &r.error {
        // Where the handshake agreed on closeReason, the close envelope names the error kind
        // the vector gives (SPEC §8.1: "the kind is the first that applies, §11.2").
        Some(e) => refused_with(&ctx, &mut c, e, close_reason).await,
        None => {
            if taken(&ctx, &mut c, &r.frame, close_reason).await? {
                return Ok(());
            }
            stays_open(&ctx, &mut c, close_reason).await
        }
    }
}

/// Shows a valid frame was taken, not dropped: an ask is answered (a reply or a failure for its
/// id: refusing what it says is not refusing its encoding), a RegisterWorker gets its
/// RegisterWorkerResponse; other sends owe nothing. True when the connection was closed for
/// what the message says (`NOT_DECODING`) instead.
pub(crate) async fn taken(
    ctx: &Ctx,
    c: &mut Conn,
    frame: &[u8],
    close_reason: bool,
) -> Result<bool, Failure> {
    let body = frame.get(4..).unwrap_or_default();
    let (tag, name) = tag_and_name(body);
    let mut cur = body;
    let ask_id = (tag == Some(1))
        .then(|| {
            let _ = rmp::decode::read_array_len(&mut cur);
            let _ = rmp::decode::read_int::<u64, _>(&mut cur);
            rmp::decode::read_int::<u64, _>(&mut cur).ok()
        })
        .flatten();
    let want = match (ask_id, name.as_deref()) {
        (Some(id), _) => format!("an answer to ask {id}"),
        (None, Some("RegisterWorker")) => "a RegisterWorkerResponse".to_string(),
        _ => return Ok(false),
    };
    let deadline = tokio::time::Instant::now() + wait(ctx);
    let mut closed_for = None;
    loop {
        let left = deadline.saturating_duration_since(tokio::time::Instant::now());
        match c.next_or_close(left).await {
            None => return Err(fail(&want, "nothing within the time allowed")),
            Some(Event::TooLarge(n)) => {
                return Err(fail(&want, format!("a prefix declaring {n} bytes")))
            }
            Some(Event::Closed(how)) => {
                return match closed_for {
                    Some(k) if close_reason && NOT_DECODING.contains(&k) => Ok(true),
                    Some(k) => Err(fail(&want, format!("the connection closed ({k})"))),
                    None => Err(fail(&want, format!("the connection closed ({how})"))),
                };
            }
            Some(Event::Frame(b)) => match sparkwire::wire::decode_envelope::<D>(&b, c.v()) {
                Ok(Envelope::Reply { id, .. } | Envelope::Failure { id, .. })
                    if Some(id) == ask_id =>
                {
                    return Ok(false)
                }
                Ok(Envelope::Send(
                    D::RegisteredWorker(_) | D::RegisterWorkerFailed(_) | D::MasterInStandby(_),
                )) if ask_id.is_none() => return Ok(false),
                Ok(Envelope::Close(reason)) => {
                    closed_for = NOT_DECODING.iter().copied().find(|k| *k == reason.kind);
                    if closed_for.is_none() {
                        return Err(fail(&want, format!("a close envelope {}", reason.kind)));
                    }
                }
                _ => {}
            },
        }
    }
}

/// The MessagePack of a two-entry map of one-letter strings, `{k1: v1, k2: v2}`, as written.
pub(crate) fn pair_map(k1: u8, v1: u8, k2: u8, v2: u8) -> [u8; 9] {
    [0x82, 0xa1, k1, 0xa1, v1, 0xa1, k2, 0xa1, v2]
}

/// A RegisterApplication frame whose command environment is `{"A": "1", "B": "2"}`, with that
/// map's bytes replaced by `env` (same length): maps no encoder writes, built by hand.
pub(crate) fn register_with_env(env: [u8; 9]) -> Result<Vec<u8>, Failure> {
    let mut desc = app_desc(Some(1), 64, Some(0));
    let mut e = BTreeMap::new();
    e.insert("A".to_string(), "1".to_string());
    e.insert("B".to_string(), "2".to_string());
    desc.command.environment = e;
    let port = 40000 + (unique() % 20000) as i32;
    let m = D::RegisterApplication(RegisterApplication::new(
        desc,
        EndpointRef::at(Addr::new("127.0.0.1", port), "AppClient"),
    ));
    let mut body = Vec::new();
    encode_envelope(&Envelope::Send(m), Version::V2, &mut body)
        .map_err(|e| fail("a RegisterApplication encoded", e.to_string()))?;
    let canonical = pair_map(b'A', b'1', b'B', b'2');
    let at = body
        .windows(canonical.len())
        .position(|w| w == canonical)
        .ok_or_else(|| fail("the environment map in the encoded frame", "not found"))?;
    body[at..at + canonical.len()].copy_from_slice(&env);
    Ok(frame(&body))
}

pub(crate) async fn send_registration(
    ctx: &Ctx,
    env: [u8; 9],
    what: &str,
) -> Result<Conn, Failure> {
    let bytes = register_with_env(env)?;
    let mut c = open(ctx, Role::AppClient, "app", "", Version::V2).await?;
    c.send_raw(&bytes, what).await?;
    Ok(c)
}
