//! `--target master` (and one `--target driver` case): the live parts of issue 44's decisions.
//! Where an `InvalidFields` fault lies (SPEC §8.2) for every vector of `decoder.json` a master
//! reads, and on a driver's executor port for the coarse family's; a `bin` where a `str` is due
//! (§4.1); close reasons that do not decode, and ones read as sent (§8.1); a failure for an ask
//! never made (§8.1 `UnknownAsk`); the hello's features given twice, in a refused answer and
//! checked at step 3 (handshake.md §5, §12); a kill after the submitting connection closed, with
//! the timing Z4 states (§14.2); and a version 1 `ExecutorUpdated`'s `workerLost` (§5). One
//! function per case; each cites the sentence it checks.

use crate::harness::env::Ctx;
use crate::harness::mp;
use crate::harness::peer::Conn;
use crate::harness::peer::Event;
use crate::harness::verdict::check;
use crate::harness::verdict::fail;
use crate::harness::verdict::Failure;
use crate::harness::verdict::Outcome;
use crate::kit::common::close_of;
use crate::kit::common::offering_close_reason;
use crate::kit::common::reaction_wait;
use crate::kit::common::wait;
use crate::kit::master::addr;
use crate::kit::master::open;
use crate::kit::server::close_envelope;
use crate::kit::versions::highest;
use bytes::Bytes;
use sparkwire::definition::Definition;
use sparkwire::messages::deploy::RequestKillDriver;
use sparkwire::messages::DeployMessage;
use sparkwire::messages::ErrorDescription;
use sparkwire::messages::ExecutorState;
use sparkwire::messages::Version;
use sparkwire::wire::decode_envelope;
use sparkwire::wire::handshake::decode_answer;
use sparkwire::wire::handshake::Answer;
use sparkwire::wire::handshake::RefusalReason;
use sparkwire::wire::handshake::Role;
use sparkwire::wire::msgpack::Cursor;
use sparkwire::wire::vectors::decoder_vectors;
use sparkwire::wire::CloseReason;
use sparkwire::wire::Envelope;
use sparkwire::wire::Reply;

pub(crate) type D = DeployMessage;

// ---- §8.2: locations ----

/// A decoder.json `InvalidFields` vector a master reads as the vector says: its frame, where
/// the fault lies, and the versions in which sparkwire's deploy decoder locates it there.
#[derive(Clone, Debug)]
pub(crate) struct Located {
    pub(crate) name: String,
    pub(crate) frame: Vec<u8>,
    pub(crate) path: String,
    pub(crate) offset: u64,
    pub(crate) versions: Vec<Version>,
}

/// The decoder.json `InvalidFields` vectors a master refuses at the vector's location: those of
/// the deploy family and the family-free ones (failures, close reasons, replies' values), each
/// with the versions in which the deploy decoder reports the vector's path and offset.
pub(crate) fn located() -> Vec<Located> {
    located_in(|body, version| decode_envelope::<D>(body, version).err())
}

/// The decoder.json `InvalidFields` vectors that `decode` (a decoder of one family, given the
/// frame's body and a version) refuses at the vector's location, with the versions in which it
/// does: the vectors of its family and the family-free ones.
pub(crate) fn located_in(
    decode: impl Fn(&Bytes, Version) -> Option<sparkwire::wire::Error>,
) -> Vec<Located> {
    decoder_vectors(Definition::builtin())
        .unwrap_or_default()
        .into_iter()
        .filter(|v| v.error.as_deref() == Some("InvalidFields"))
        .filter_map(|v| {
            let frame = sparkwire::messages::from_hex(&v.frame_hex)?;
            let (path, offset) = (v.path.clone()?, v.offset?);
            let body = Bytes::copy_from_slice(frame.get(4..)?);
            let versions: Vec<Version> = [Version::V1, Version::V2]
                .into_iter()
                .filter(|version| {
                    decode(&body, *version).is_some_and(|e| {
                        let r = CloseReason::decoding(&e);
                        r.kind == "InvalidFields"
                            && r.path.as_deref() == Some(path.as_str())
                            && r.offset == Some(offset)
                    })
                })
                .collect();
            (!versions.is_empty()).then_some(Located {
                name: v.name.clone(),
                frame,
                path,
                offset,
                versions,
            })
        })
        .collect()
}

/// A UI connection at `version` whose hello offers closeReason; skipped when the master does not
/// take it (the feature is optional).
pub(crate) async fn ui_taking_close_reason(ctx: &Ctx, version: Version) -> Result<Conn, Failure> {
    crate::harness::peer::require_version(&ctx.log, version)?;
    let (c, taken) =
        offering_close_reason(ctx, addr(ctx)?, "ui", &[version], Role::Ui, "suite").await?;
    if taken {
        Ok(c)
    } else {
        Err(Failure::Skipped(
            "the master does not take closeReason (optional, handshake.md §12)".into(),
        ))
    }
}

/// The highest of `versions` the master offers: skipped when it offers none of them.
pub(crate) fn spoken(ctx: &Ctx, versions: &[Version]) -> Result<Version, Failure> {
    let offered = ctx.log.endpoint_versions();
    versions
        .iter()
        .rev()
        .copied()
        .find(|v| {
            offered
                .as_ref()
                .is_none_or(|p| p.contains(&u64::from(v.number())))
        })
        .ok_or_else(|| {
            Failure::Skipped(format!(
                "the vector applies in versions {versions:?}, which the master does not offer"
            ))
        })
}

pub(crate) async fn location(ctx: Ctx, v: Located) -> Outcome {
    let version = spoken(&ctx, &v.versions)?;
    let mut c = ui_taking_close_reason(&ctx, version).await?;
    c.send_raw(&v.frame, &format!("the decoder.json vector \"{}\"", v.name))
        .await?;
    let want = format!(
        "a close envelope of kind InvalidFields, path {:?}, offset {}",
        v.path, v.offset
    );
    let r = close_envelope(&ctx, &mut c, &want).await?;
    check(
        r.kind == "InvalidFields"
            && r.path.as_deref() == Some(v.path.as_str())
            && r.offset == Some(v.offset),
        want,
        format!("kind {}, path {:?}, offset {:?}", r.kind, r.path, r.offset),
    )
}

// ---- §4.1: bin where str is due ----

/// The decoder.json frames of a `bin` where a `str` is due (SPEC §4.1), by the start of their
/// names.
pub(crate) const BIN_VECTORS: [&str; 3] = [
    "a string sent as bin",
    "a string map key sent as bin",
    "a field name sent as bin",
];

/// The keys of the MessagePack map `body`, as far as they are strings.
pub(crate) fn map_keys(body: &[u8]) -> Vec<String> {
    let mut cur = Cursor::new(body);
    let Ok(n) = cur.map_len() else {
        return Vec::new();
    };
    let mut keys = Vec::new();
    for _ in 0..n {
        match cur.str() {
            Ok(k) => keys.push(k.to_string()),
            Err(_) => return keys,
        }
        if cur.value().is_err() {
            return keys;
        }
    }
    keys
}

/// Sends `entries` as a hello's map and returns the answer's frame body (the first frame back).
pub(crate) async fn raw_hello(
    ctx: &Ctx,
    entries: &[(&str, Vec<u8>)],
    want: &str,
) -> Result<Bytes, Failure> {
    let mut c = Conn::connect(addr(ctx)?, "ui", Role::Ui, &ctx.log).await?;
    c.send_frame(&mp::map(entries)).await?;
    c.frame_body_or_close(reaction_wait(ctx), want).await
}

/// Sends a hello (no authentication) whose `features` is `features` and that offers only
/// version 1000; expects malformedHello.
pub(crate) async fn refused_malformed(ctx: &Ctx, features: Vec<u8>, what: &str) -> Outcome {
    let entries = [
        ("magic", mp::s("sparkwire")),
        ("versions", mp::uints(&[1000])),
        ("role", mp::s(Role::Ui.name())),
        ("id", mp::s("suite")),
        ("features", features),
    ];
    let want = format!("a refusal malformedHello (step 3) of a hello whose features is {what}");
    let body = raw_hello(ctx, &entries, &want).await?;
    match decode_answer(&body) {
        Ok(Answer::Refused(r)) if r.reason == RefusalReason::MalformedHello => Ok(()),
        Ok(Answer::Refused(r)) => Err(fail(want, format!("a refusal {}", r.reason.name()))),
        Ok(other) => Err(fail(want, format!("{other:?}"))),
        Err(_) => Err(fail(
            want,
            format!(
                "a frame of {} bytes that is no answer (a challenge?)",
                body.len()
            ),
        )),
    }
}

// ---- §14.2 Z4 ----

/// What a kill from a new driver client got.
pub(crate) enum Kill {
    Taken(bool),
    Refused(String),
}

pub(crate) async fn kill_from_new_client(ctx: &Ctx, id: &str, ask: u64) -> Result<Kill, Failure> {
    let mut b = open(ctx, Role::DriverClient, "client-b", "", highest(ctx)).await?;
    b.send(&Envelope::Ask {
        id: ask,
        message: D::RequestKillDriver(RequestKillDriver::new(id.to_string())),
    })
    .await?;
    let want = format!("an answer to RequestKillDriver (ask {ask})");
    let got = b
        .expect_or_close::<D, Envelope<D>>(reaction_wait(ctx), &want, |e| match e {
            Envelope::Failure { id: r, .. } | Envelope::Reply { id: r, .. } if *r == ask => {
                Some(e.clone())
            }
            _ => None,
        })
        .await;
    match got {
        Ok(Envelope::Reply {
            reply: Reply::Message(D::KillDriverResponse(k)),
            ..
        }) => Ok(Kill::Taken(k.success)),
        Ok(Envelope::Failure { error, .. }) => Ok(Kill::Refused(format!(
            "a failure {}: {:?}",
            error.class_name, error.message
        ))),
        Ok(other) => Err(fail(want, crate::harness::peer::envelope_label(&other))),
        Err(Failure::Fail { seen, .. }) if seen.contains("closed") => {
            Ok(Kill::Refused("the connection closed".into()))
        }
        Err(e) => Err(e),
    }
}

// ---- §5: ExecutorUpdated.workerLost in version 1 ----

/// The `workerLost` field of the version 1 ExecutorUpdated `body` (`[0, {"ExecutorUpdated":
/// {...}}]`), read raw; `None` when it is missing or not a bool.
pub(crate) fn worker_lost_raw(body: &[u8]) -> Option<bool> {
    let mut cur = Cursor::new(body);
    if cur.array_len().ok()? != 2 || cur.uint().ok()? != 0 || cur.map_len().ok()? != 1 {
        return None;
    }
    cur.str().ok()?;
    let n = cur.map_len().ok()?;
    for _ in 0..n {
        if cur.str().ok()? == "workerLost" {
            return cur.bool().ok();
        }
        cur.value().ok()?;
    }
    None
}

/// Waits on `c` for the ExecutorUpdated of executor `exec` in `state`; returns its `workerLost`
/// as sent (raw).
pub(crate) async fn updated_v1(
    ctx: &Ctx,
    c: &mut Conn,
    exec: i32,
    state: ExecutorState,
) -> Result<Option<bool>, Failure> {
    let want = format!("ExecutorUpdated {state:?} for executor {exec}");
    let deadline = tokio::time::Instant::now() + wait(ctx);
    loop {
        let left = deadline.saturating_duration_since(tokio::time::Instant::now());
        let body = c.frame_body(left, &want).await?;
        if let Ok(Envelope::Send(D::ExecutorUpdated(u))) = decode_envelope::<D>(&body, c.v()) {
            if u.id == exec && u.state == state {
                return Ok(worker_lost_raw(&body));
            }
        }
    }
}

/// What came back for an ask.
pub(crate) enum Answered {
    /// A reply to the ask.
    Reply,
    /// A failure envelope for the ask.
    Failure(ErrorDescription),
    /// The connection closed; the close envelope before it, if any.
    Closed(Option<CloseReason>),
}

/// Waits on `c` for the answer to ask `id`, or for the connection's close.
pub(crate) async fn answer_or_close(
    ctx: &Ctx,
    c: &mut Conn,
    id: u64,
    want: &str,
) -> Result<Answered, Failure> {
    let deadline = tokio::time::Instant::now() + wait(ctx);
    let mut last = None;
    loop {
        let left = deadline.saturating_duration_since(tokio::time::Instant::now());
        match c.next_or_close(left).await {
            Some(Event::Frame(body)) => {
                match decode_envelope::<D>(&body, c.v()) {
                    Ok(Envelope::Reply { id: r, .. }) if r == id => return Ok(Answered::Reply),
                    Ok(Envelope::Failure { id: r, error }) if r == id => {
                        return Ok(Answered::Failure(error))
                    }
                    _ => {}
                }
                last = Some(body);
            }
            Some(Event::Closed(_)) => return Ok(Answered::Closed(close_of(last.as_ref()))),
            Some(Event::TooLarge(n)) => {
                return Err(fail(want, format!("a frame declaring {n} bytes")))
            }
            None => return Err(fail(want, "nothing within the time allowed")),
        }
    }
}

/// The frame limit `spec/8/limits/answer-over-frame-limit` gives its server: over the
/// handshake's 64 KiB, under the answer.
pub(crate) const SMALL_FRAME_LIMIT: usize = 128 * 1024;

/// The argument each of that case's two applications carries: each registration fits the
/// limit, a MasterStateResponse holding both does not.
pub(crate) const HALF_LIMIT_ARGUMENT: usize = 80 * 1024;

#[cfg(test)]
mod tests {
    use super::*;

    type C = sparkwire::messages::CoarseMessage;

    #[test]
    fn the_located_vectors_include_deploy_failures_and_close_reasons_and_the_bin_ones() {
        let all = located();
        assert!(
            all.len() >= 15,
            "{:?}",
            all.iter().map(|v| &v.name).collect::<Vec<_>>()
        );
        for start in BIN_VECTORS {
            assert!(all.iter().any(|v| v.name.starts_with(start)), "{start}");
        }
        assert!(all
            .iter()
            .any(|v| v.name.starts_with("a close reason that is not a map")));
        assert!(all.iter().any(|v| v.name.starts_with("a failure's error")));
    }

    #[test]
    fn the_driver_reads_the_coarse_vectors_of_unions_tuples_sets_and_integer_keys() {
        let all = located_in(|body, version| decode_envelope::<C>(body, version).err());
        for start in [
            "a union written as a map",
            "a union variant named by an integer",
            "a tuple of the wrong length",
            "a set element given twice",
            "an integer map key in the path",
            "a field of a union's variant",
        ] {
            assert!(
                all.iter().any(|v| v.name.starts_with(start)),
                "{start}: {:?}",
                all.iter().map(|v| &v.name).collect::<Vec<_>>()
            );
        }
    }

    #[test]
    fn worker_lost_is_read_raw_from_a_version_1_frame() {
        let m = D::ExecutorUpdated(
            sparkwire::messages::deploy::ExecutorUpdated::new(3, ExecutorState::Lost)
                .with_worker_host(Some(String::new())),
        );
        let mut out = Vec::new();
        sparkwire::wire::encode_envelope(&Envelope::Send(m.clone()), Version::V1, &mut out)
            .expect("encodes");
        assert_eq!(worker_lost_raw(&out), Some(true));
        let mut out = Vec::new();
        let D::ExecutorUpdated(u) = m else {
            unreachable!()
        };
        let not_lost = D::ExecutorUpdated(u.with_worker_host(None));
        sparkwire::wire::encode_envelope(&Envelope::Send(not_lost), Version::V1, &mut out)
            .expect("encodes");
        assert_eq!(worker_lost_raw(&out), Some(false));
    }
}
