//! SPEC §8 and §8.1: how an endpoint ends a connection and answers an ask it refuses, on every
//! target. A listening endpoint (the master; a worker on its UI port; a driver on its executor
//! port) names in its close envelope the kind of what it closes for — each decoding error of §8,
//! the first that applies (§11.2), with an `InvalidFields` offset just past the fault, and the ask
//! errors `UnknownAsk` and `DuplicateAsk` when it closes for them — and answers a refused ask
//! with a failure, the connection left open. An executor names its decoding errors so too; an
//! executor told StopExecutor and a driver at its job's end close without a close envelope (an
//! ordinary close). One function per case; the clients' shared cases are in `client.rs`.

use crate::harness::env::Ctx;
use crate::harness::mp;
use crate::harness::peer::Conn;
use crate::harness::peer::Event;
use crate::harness::verdict::fail;
use crate::harness::verdict::Failure;
use crate::kit::closes::*;
use crate::kit::common::sample;
use crate::kit::common::wait;
use crate::kit::endpoint::Endpoint;
use crate::kit::server::Listening;
use crate::kit::spawned;
use crate::kit::spawned::Run;
use sparkwire::definition::Definition;
use sparkwire::definition::MessageKind;
use sparkwire::messages::CoarseMessage;
use sparkwire::messages::DeployMessage;
use sparkwire::messages::Family;
use sparkwire::messages::Version;
use sparkwire::wire::decode_envelope;
use sparkwire::wire::encode_envelope;
use sparkwire::wire::handshake::Role;
use sparkwire::wire::vectors::decoder_vectors;
use sparkwire::wire::Envelope;
use sparkwire::wire::Reply;

pub(crate) type C = CoarseMessage;

pub(crate) type D = DeployMessage;

/// The exception class of a failure for a message off its route (SPEC §14.3).
pub(crate) const OFF_ROUTE_CLASS: &str = "org.apache.spark.SparkException";

/// One decoding error in a close envelope: the frame that has it, and its kind.
#[derive(Clone, Copy)]
pub(crate) struct Kind {
    pub(crate) slug: &'static str,
    pub(crate) kind: &'static str,
    /// What the frame is, in the requirement.
    pub(crate) what: &'static str,
    pub(crate) version: Version,
    pub(crate) body: fn(&Endpoint) -> Vec<u8>,
}

pub(crate) fn probe_map(s: &Endpoint, extra: Vec<(&'static str, Vec<u8>)>) -> Vec<u8> {
    let mut fields = (s.messages().probe.1)();
    fields.extend(extra);
    mp::map(&[(s.messages().probe.0, mp::map(&fields))])
}

pub(crate) const KINDS: [Kind; 8] = [
    Kind {
        slug: "invalid-message-pack",
        kind: "InvalidMessagePack",
        what: "a frame holding 0xc1 ([0, 0xc1])",
        version: Version::V2,
        body: |_| vec![0x92, 0x00, 0xc1],
    },
    Kind {
        slug: "too-deep",
        kind: "TooDeep",
        what: "a probe ask nested 65 deep in an unknown field",
        version: Version::V2,
        body: |s| {
            mp::arr(&[
                mp::u(1),
                mp::u(5),
                probe_map(s, vec![("zzzNested", mp::nested(62))]),
            ])
        },
    },
    Kind {
        slug: "trailing-bytes",
        kind: "TrailingBytes",
        what: "a probe ask followed by a nil in its frame",
        version: Version::V2,
        body: |s| {
            let mut b = mp::arr(&[mp::u(1), mp::u(5), probe_map(s, vec![])]);
            b.push(0xc0);
            b
        },
    },
    Kind {
        slug: "bad-envelope",
        kind: "BadEnvelope",
        what: "an envelope tagged 9",
        version: Version::V2,
        body: |s| mp::arr(&[mp::u(9), mp::u(5), probe_map(s, vec![])]),
    },
    Kind {
        slug: "local-message",
        kind: "LocalMessage",
        what: "a send of a local message of its family",
        version: Version::V2,
        body: |s| mp::arr(&[mp::u(0), mp::map(&[(s.messages().local, mp::map(&[]))])]),
    },
    Kind {
        slug: "trailing-bytes-over-unknown-message",
        kind: "TrailingBytes",
        what: "an unknown message followed by a nil (§11.2)",
        version: Version::V2,
        body: |_| {
            let mut b = mp::arr(&[mp::u(0), mp::map(&[("RegisterBlockManager", mp::map(&[]))])]);
            b.push(0xc0);
            b
        },
    },
    Kind {
        slug: "local-over-invalid-fields",
        kind: "LocalMessage",
        what: "a local message whose fields are an array",
        version: Version::V2,
        body: |s| {
            mp::arr(&[
                mp::u(0),
                mp::map(&[(s.messages().local, mp::arr(&[mp::u(5)]))]),
            ])
        },
    },
    Kind {
        slug: "not-in-version-fields-unexamined",
        kind: "NotInVersion",
        what: "a v2-only ask, fields an array, at version 1",
        version: Version::V1,
        body: |s| {
            mp::arr(&[
                mp::u(1),
                mp::u(5),
                mp::map(&[(s.messages().v2_only.0, mp::arr(&[mp::u(5)]))]),
            ])
        },
    },
];

/// The version the suite speaks to `s`: 2 unless the endpoint offers only 1.
/// A connection to `at` at `version` whose hello offers closeReason; skipped when the endpoint
/// does not take it (the feature is optional) or does not speak `version`.
pub(crate) async fn taking_close_reason(
    ctx: &Ctx,
    s: &Endpoint,
    at: &Listening,
    version: Version,
) -> Result<Conn, Failure> {
    crate::harness::peer::require_version(&ctx.log, version)?;
    let (c, taken) = crate::kit::common::offering_close_reason(
        ctx,
        at.addr,
        "suite",
        &[version],
        s.suite_role,
        "suite",
    )
    .await?;
    if taken {
        Ok(c)
    } else {
        Err(Failure::Skipped(
            "the endpoint does not take closeReason".into(),
        ))
    }
}

/// The body of an ask `id` of a sample of the message `name` of `family`, at `version`.
pub(crate) fn sample_ask(
    family: &str,
    name: &str,
    id: u64,
    version: Version,
) -> Result<Vec<u8>, Failure> {
    let def = Definition::builtin()
        .messages
        .iter()
        .find(|m| m.family == family && m.name == name)
        .ok_or_else(|| fail(format!("{name} in the definition"), "none"))?;
    let mut out = Vec::new();
    let encoded = if family == "coarse" {
        let m: C = sample(def)?;
        encode_envelope(&Envelope::Ask { id, message: m }, version, &mut out)
    } else {
        let m: D = sample(def)?;
        encode_envelope(&Envelope::Ask { id, message: m }, version, &mut out)
    };
    encoded.map_err(|e| fail("an ask the suite can encode", e.to_string()))?;
    Ok(out)
}

/// What came back for the ask `id`.
pub(crate) enum Answered {
    Reply,
    Failure(sparkwire::messages::ErrorDescription),
    /// The connection closed: the last frame before, if any.
    Closed(Option<bytes::Bytes>),
}

/// Reads until the answer to ask `id` or the close; other frames are passed over.
pub(crate) async fn answer_to(
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
                let got = if c.family == "coarse" {
                    answer_of::<C>(&body, c.v(), id)
                } else {
                    answer_of::<D>(&body, c.v(), id)
                };
                if let Some(a) = got {
                    return Ok(a);
                }
                last = Some(body);
            }
            Some(Event::Closed(_)) => return Ok(Answered::Closed(last)),
            Some(Event::TooLarge(n)) => {
                return Err(fail(want, format!("a frame declaring {n} bytes")))
            }
            None => return Err(fail(want, "neither within the time allowed")),
        }
    }
}

pub(crate) fn answer_of<F: Family>(body: &bytes::Bytes, v: Version, id: u64) -> Option<Answered> {
    match decode_envelope::<F>(body, v) {
        Ok(Envelope::Reply { id: rid, .. }) if rid == id => Some(Answered::Reply),
        Ok(Envelope::Failure { id: fid, error }) if fid == id => Some(Answered::Failure(error)),
        _ => None,
    }
}

/// The frame of `close-offset`: `s`'s message whose first field is mistyped as the one-byte
/// integer 5, another field after it; with the mistyped field's name and the offset of that byte,
/// the offending item's first (SPEC §8.2; the body is written piece by piece so that it is known).
pub(crate) fn offset_frame(s: &Endpoint) -> Result<(Vec<u8>, &'static str, u64), Failure> {
    let fields = (s.messages().bad_fields.1)();
    let Some((first, value)) = fields.first().cloned() else {
        return Err(fail("a mistyped field", "none"));
    };
    let ask = Definition::builtin()
        .messages
        .iter()
        .any(|d| d.name == s.messages().bad_fields.0 && d.kind == MessageKind::Ask);
    let mut body = if ask {
        vec![0x93, 0x01, 0x05]
    } else {
        vec![0x92, 0x00]
    };
    body.push(0x81);
    body.extend(mp::s(s.messages().bad_fields.0));
    body.push(0x80 | (fields.len() as u8 + 1));
    body.extend(mp::s(first));
    let offset = body.len() as u64;
    body.extend(&value);
    for (k, v) in fields.iter().skip(1) {
        body.extend(mp::s(k));
        body.extend(v);
    }
    body.extend(mp::s("zzzAFieldAfter"));
    body.extend(mp::s("after the fault"));
    Ok((body, first, offset))
}

// ---- the executor ----

/// An executor started and registered (RegisterExecutor answered true), its connection to the
/// suite agreeing on closeReason at `version`.
pub(crate) async fn executor(ctx: &Ctx, version: Version) -> Result<(Run, Conn), Failure> {
    let (run, mut c) = crate::kit::executor::start(ctx.clone()).await?;
    loop {
        let hello = c.read_hello(spawned::startup(ctx)).await?;
        accept_taking_close_reason(ctx, &mut c, &hello, &[version], "driver").await?;
        // Its bootstrap asks, answered until it registers (or the connection closes: the
        // executor opens its main one next).
        let registered = loop {
            let env = match c
                .recv::<C>(wait(ctx), "RetrieveSparkAppConfig or RegisterExecutor")
                .await
            {
                Ok(e) => e,
                Err(Failure::Fail { seen, .. }) if seen.contains("closed") => break false,
                Err(e) => return Err(e),
            };
            let reply = match env {
                Envelope::Ask {
                    id,
                    message: C::RetrieveSparkAppConfig(_),
                } => (
                    id,
                    Reply::Message(C::SparkAppConfig(crate::kit::executor::app_config(128))),
                ),
                Envelope::Ask {
                    id,
                    message: C::RetrieveLastAllocatedExecutorId(_),
                } => (id, Reply::Int(0)),
                Envelope::Ask {
                    id,
                    message: C::RegisterExecutor(_),
                } => {
                    c.send(&Envelope::<C>::Reply {
                        id,
                        reply: Reply::Bool(true),
                    })
                    .await?;
                    break true;
                }
                _ => continue,
            };
            c.send(&Envelope::<C>::Reply {
                id: reply.0,
                reply: reply.1,
            })
            .await?;
        };
        if registered {
            c.expect::<C, ()>(wait(ctx), "LaunchedExecutor", |e| {
                matches!(e, Envelope::Send(C::LaunchedExecutor(_))).then_some(())
            })
            .await?;
            return Ok((run, c));
        }
        c = run.accept(ctx, "driver-main", Role::Driver).await?;
    }
}

/// The decoder.json vectors of SPEC §11.2's order (the frames with two faults, one winning) that
/// an executor can receive: the coarse family's refused ones whose name says which wins.
pub(crate) fn precedence_vectors() -> Vec<(String, Vec<u8>, Version, String)> {
    decoder_vectors(Definition::builtin())
        .unwrap_or_default()
        .into_iter()
        .filter(|v| v.family == "coarse" && v.name.contains(" win"))
        .filter_map(|v| {
            let error = v.error.clone()?;
            let version = Version::from_number(u64::from(v.version))?;
            let bytes = sparkwire::messages::from_hex(&v.frame_hex)?;
            Some((v.name.clone(), bytes, version, error))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use sparkwire::wire::error_kind;

    fn kind_of(family: &str, body: &[u8], v: Version) -> Option<String> {
        let body = bytes::Bytes::copy_from_slice(body);
        let got = if family == "coarse" {
            decode_envelope::<C>(&body, v).err()
        } else {
            decode_envelope::<D>(&body, v).err()
        };
        got.map(|e| error_kind(&e).to_string())
    }

    #[test]
    fn each_frame_is_refused_by_sparkwire_s_decoder_with_the_kind_its_case_expects() {
        for s in [
            crate::kit::support::master::server(),
            crate::kit::support::worker::server(),
            crate::kit::support::driver::server(),
        ] {
            for k in KINDS {
                assert_eq!(
                    kind_of(s.family, &(k.body)(&s), k.version).as_deref(),
                    Some(k.kind),
                    "{} {}",
                    s.name,
                    k.slug
                );
            }
        }
    }

    #[test]
    fn sparkwire_s_decoder_reports_the_offset_close_offset_expects() {
        for s in [
            crate::kit::support::master::server(),
            crate::kit::support::worker::server(),
            crate::kit::support::driver::server(),
        ] {
            let (body, first, offset) = offset_frame(&s).expect("a frame");
            let body = bytes::Bytes::copy_from_slice(&body);
            let err = if s.family == "coarse" {
                decode_envelope::<C>(&body, Version::V2).err()
            } else {
                decode_envelope::<D>(&body, Version::V2).err()
            }
            .expect("refused");
            let reason = sparkwire::wire::CloseReason::decoding(&err);
            assert_eq!(reason.kind, "InvalidFields", "{}", s.name);
            assert_eq!(reason.offset, Some(offset), "{}", s.name);
            assert!(reason.path.is_some_and(|p| p.contains(first)), "{}", s.name);
        }
    }

    #[test]
    fn the_executor_s_precedence_vectors_are_the_six_of_section_11_2() {
        let vs = precedence_vectors();
        assert_eq!(
            vs.len(),
            6,
            "{:?}",
            vs.iter().map(|v| &v.0).collect::<Vec<_>>()
        );
        for (name, frame, v, kind) in vs {
            assert_eq!(
                kind_of("coarse", &frame[4..], v).as_deref(),
                Some(kind.as_str()),
                "{name}"
            );
        }
    }
}
