//! SPEC §8 and §8.1: how an endpoint ends a connection and answers an ask it refuses, on every
//! target. A listening endpoint (the master; a worker on its UI port; a driver on its executor
//! port) names in its close envelope the kind of what it closes for — each decoding error of §8,
//! the first that applies (§11.2), with an `InvalidFields` offset just past the fault, and the ask
//! errors `UnknownAsk` and `DuplicateAsk` when it closes for them — and answers a refused ask
//! with a failure, the connection left open. An executor names its decoding errors so too; an
//! executor told StopExecutor and a driver at its job's end close without a close envelope (an
//! ordinary close). One function per case; the clients' shared cases are in `client.rs`.

use std::sync::Arc;
use std::time::Duration;

use sparkwire::definition::{Definition, MessageKind};
use sparkwire::messages::coarse::{LaunchedExecutor, StopExecutor, TaskThreadDump};
use sparkwire::messages::{CoarseMessage, DeployMessage, Family, Version};
use sparkwire::wire::handshake::Role;
use sparkwire::wire::vectors::decoder_vectors;
use sparkwire::wire::{decode_envelope, encode_envelope, Envelope, Reply};

use crate::case::{bind, run, Case, Target};
use crate::env::Ctx;
use crate::kit::closes::*;
use crate::kit::common::{close_of, closed_without_envelope, sample, wait};
use crate::kit::replay::slug;
use crate::kit::server::{close_envelope, Listening, Open, RawMessage};
use crate::kit::spawned::{self, Run};
use crate::kit::versions::highest;
use crate::mp;
use crate::peer::{frame, Conn, Event};
use crate::verdict::{check, fail, Failure, Level, Outcome};

type C = CoarseMessage;
type D = DeployMessage;

/// The exception class of a failure for a message off its route (SPEC §14.3).
const OFF_ROUTE_CLASS: &str = "org.apache.spark.SparkException";

/// A listening endpoint as these cases see it.
#[derive(Clone)]
struct Served {
    open: Open,
    name: &'static str,
    /// Its family (`deploy`, `coarse`).
    family: &'static str,
    /// The role the suite connects as.
    role: Role,
    /// An ask it answers with a reply on a connection of `role`.
    probe: RawMessage,
    /// An ask `role` may not send it (SPEC §14.1): its name.
    refused: &'static str,
    /// A message of version 2 only.
    v2_only: RawMessage,
    /// A local message of its family.
    local: &'static str,
    /// A message whose first field is mistyped as the integer 5 (one byte).
    bad_fields: RawMessage,
}

fn no_fields() -> Vec<(&'static str, Vec<u8>)> {
    vec![]
}

/// A `driverId` that is the integer 5 where a string belongs (the master's and the worker's bad
/// fields).
fn driver_id_an_integer() -> Vec<(&'static str, Vec<u8>)> {
    vec![("driverId", mp::u(5))]
}

fn master() -> Served {
    Served {
        open: Arc::new(|ctx: Ctx| {
            Box::pin(async move {
                Ok(Listening {
                    addr: crate::kit::master::addr(&ctx)?,
                    guard: Box::new(()),
                })
            })
        }),
        name: "the master",
        family: "deploy",
        role: Role::Ui,
        probe: ("RequestMasterState", no_fields),
        refused: "RequestSubmitDriver",
        v2_only: ("RequestReadyz", no_fields),
        local: "WorkDirCleanup",
        bad_fields: ("RequestDriverStatus", driver_id_an_integer),
    }
}

fn worker() -> Served {
    Served {
        open: Arc::new(|ctx: Ctx| {
            Box::pin(async move {
                let mut w =
                    crate::kit::worker::registered(&ctx, &[Version::V1, Version::V2]).await?;
                let addr = crate::kit::worker::ui_addr(&ctx, &mut w).await?;
                Ok(Listening {
                    addr,
                    guard: Box::new(Arc::new(std::sync::Mutex::new(w))),
                })
            })
        }),
        name: "the worker (on its UI port)",
        family: "deploy",
        role: Role::Ui,
        probe: ("RequestWorkerState", no_fields),
        refused: "RequestMasterState",
        v2_only: ("RequestReadyz", no_fields),
        local: "SendHeartbeat",
        bad_fields: ("KillDriver", driver_id_an_integer),
    }
}

fn driver() -> Served {
    fn probe() -> Vec<(&'static str, Vec<u8>)> {
        vec![("resourceProfileId", mp::u(0))]
    }
    fn bad() -> Vec<(&'static str, Vec<u8>)> {
        vec![("executorId", mp::u(5))]
    }
    fn v2() -> Vec<(&'static str, Vec<u8>)> {
        vec![("executorId", mp::s("1"))]
    }
    Served {
        open: Arc::new(|ctx: Ctx| {
            Box::pin(async move {
                let d = crate::kit::driver::registered(&ctx, crate::kit::driver::SMALL).await?;
                Ok(Listening {
                    addr: d.driver_addr,
                    guard: Box::new(Arc::new(std::sync::Mutex::new(d))),
                })
            })
        }),
        name: "the driver (on its executor port)",
        family: "coarse",
        role: Role::Executor,
        probe: ("RetrieveSparkAppConfig", probe),
        refused: "RetrieveDelegationTokens",
        v2_only: ("IsExecutorAlive", v2),
        local: "ReviveOffers",
        bad_fields: ("IsExecutorAlive", bad),
    }
}

/// The master's cases of SPEC §8 and §8.1.
pub fn add_master(cs: &mut Vec<Case>) {
    add_served(cs, master());
}

/// The worker's cases (on its UI port).
pub fn add_worker(cs: &mut Vec<Case>) {
    add_served(cs, worker());
}

/// The driver's cases (on its executor port), and its ordinary close at the job's end.
pub fn add_driver(cs: &mut Vec<Case>) {
    add_served(cs, driver());
    // The driver runs its job, then gives its executors a few seconds to go before it exits.
    cs.push(Case {
        id: "spec/8.1/driver/no-close-envelope-at-exit".into(),
        level: Level::Must,
        targets: vec![Target::Driver],
        timeout: Duration::from_secs(15),
        requirement: "SPEC §8.1, \"No close envelope is sent ... for an endpoint's ordinary closes (its shutdown, a connection it \
            no longer needs)\": a driver whose job ended, on an executor connection that agreed on closeReason, sends \
                StopExecutor and then closes that connection when it exits, with no close envelope".into(),
        body: run(driver_no_close_envelope_at_exit),
        ..Case::default()
    });
}

/// The executor's cases.
pub fn add_executor(cs: &mut Vec<Case>) {
    cs.push(Case {
        id: "spec/8.1/executor/refused-ask-failure".into(),
        level: Level::Must,
        targets: vec![Target::Executor],
        requirement: "SPEC §8, \"An ask that cannot be answered is answered with a failure envelope rather than left pending\", \
            §8.1 and §14.3, \"A refused ask is answered with a failure envelope; the connection stays open. The \
                failure's `className` is `org.apache.spark.SparkException` for a message off its route\": the \
                    executor asked RequestExecutors (driver → cluster-manager only) by its driver answers with a \
                        failure for that id carrying that className and a message, and then answers TaskThreadDump on \
                            the same connection".into(),
        body: run(executor_refused_ask_failure),
        ..Case::default()
    });
    cs.push(Case {
        id: "spec/8.1/executor/no-close-envelope-on-stop".into(),
        level: Level::Must,
        targets: vec![Target::Executor],
        requirement: "SPEC §8.1, \"No close envelope is sent ... for an endpoint's ordinary closes (its shutdown ...)\": an \
            executor told StopExecutor, on a connection that agreed on closeReason, closes it with no close envelope".into(),
        body: run(executor_no_close_envelope_on_stop),
        ..Case::default()
    });
    for (name, frame, version, kind) in precedence_vectors() {
        let id = format!("spec/8.1/executor/close-kind/{}", slug(&name));
        let requirement = format!(
            "SPEC §8.1, \"the kind is the first that applies, §11.2\", and §11.2, \"A decoder reads a frame in this \
                order and reports the first fault it meets\": the executor, on a connection to its driver that agreed \
                    on closeReason at version {}, refuses the decoder.json vector \"{name}\" with a close envelope of \
                        kind {kind}",
            version.number()
        );
        cs.push(Case {
            id,
            level: Level::Must,
            targets: vec![Target::Executor],
            requirement,
            body: run(move |ctx: Ctx| {
                let (frame, kind) = (frame.clone(), kind.clone());
                async move { executor_close_kind(ctx, frame, version, kind).await }
            }),
            ..Case::default()
        });
    }
}

fn add_served(cs: &mut Vec<Case>, s: Served) {
    let name = s.name;
    cs.push(Case {
        id: "spec/8.1/refused-ask-failure".into(),
        level: Level::Must,
        targets: vec![Target::Master, Target::Worker, Target::Driver],
        timeout: Duration::from_secs(10),
        requirement: format!("SPEC §8, \"An ask that cannot be answered is answered with a \
        failure envelope rather than left pending\", §8.1, \"A refused **ask** is answered with a failure, not a \
            close\", and §14.3, \"The failure's `className` is `org.apache.spark.SparkException` for a message off \
                its route\": {name} answers an ask of {} from a {} (off its route) with a failure for its id carrying \
                    that className and a message, and then answers {} on the same connection (a master or worker \
                        validating rules.md MAY close instead, with a close envelope of kind \
                            RuleViolation)", s.refused, s.role.name(), s.probe.0),
        body: bind(&s, refused_ask_failure),
        ..Case::default()
    });
    cs.push(Case {
        id: "spec/8.1/takes-unknown-kind".into(),
        level: Level::Must,
        targets: vec![Target::Master, Target::Worker, Target::Driver],
        timeout: Duration::from_secs(10),
        requirement: format!("SPEC §8.1, \"A receiver MUST take a `kind` it does not know as \
        it is ..., and treat the close envelope as the end of the connection: it closes too, sends nothing more\": \
            {name}, on a connection that agreed on closeReason, sent a close envelope of a kind no revision has (and \
                a field of a later revision), closes the connection and sends nothing after it"),
        body: bind(&s, takes_unknown_kind),
        ..Case::default()
    });
    cs.push(Case {
        id: "spec/8.1/unknown-ask-close-kind".into(),
        level: Level::Must,
        targets: vec![Target::Master, Target::Worker, Target::Driver],
        timeout: Duration::from_secs(10),
        requirement: format!("SPEC §8.1 (`UnknownAsk`: \"a reply to an ask never \
        made\"): {name}, on a connection that agreed on closeReason, given a reply to an ask it never made, either \
            ignores it and answers the next ask, or closes with a close envelope of kind UnknownAsk (validating \
                rules.md, RuleViolation: rule A2)"),
        body: bind(&s, unknown_ask_close_kind),
        ..Case::default()
    });
    cs.push(Case {
        id: "spec/8.1/duplicate-ask-close-kind".into(),
        level: Level::Must,
        targets: vec![Target::Master, Target::Worker, Target::Driver],
        timeout: Duration::from_secs(10),
        requirement: format!("SPEC §8.1 (`DuplicateAsk`: \"an ask reusing the id of \
        one still pending\"): {name}, on a connection that agreed on closeReason, sent two asks with one id in one \
            write, either answers, or closes with a close envelope of kind DuplicateAsk (validating rules.md, \
                RuleViolation: rule A1)"),
        body: bind(&s, duplicate_ask_close_kind),
        ..Case::default()
    });
    cs.push(Case {
        id: "spec/8.1/close-offset".into(),
        level: Level::Must,
        targets: vec![Target::Master, Target::Worker, Target::Driver],
        timeout: Duration::from_secs(10),
        requirement: format!("SPEC §8.1, `offset`: \"the offset, in the offending frame's body \
        ..., of the first byte of the offending item (§8.2)\": {name} closes for a \
            message whose first field is the one-byte integer 5 where a string belongs (followed by another field) \
                with a close envelope of kind InvalidFields whose offset is the position of that \
                    byte"),
        body: bind(&s, close_offset),
        ..Case::default()
    });
    for k in KINDS.iter().copied() {
        let requirement = format!(
            "SPEC §8.1, \"`{}` ... | a frame that could not be decoded (§8; the kind is the first that applies, \
                §11.2)\": {name}, on a connection that agreed on closeReason, closes for {} with a close envelope of \
                    kind {}",
            k.kind, k.what, k.kind
        );
        let kind = k;
        let s = s.clone();
        cs.push(Case {
            id: format!("spec/8.1/close-kind/{}", k.slug),
            level: Level::Must,
            targets: vec![Target::Master, Target::Worker, Target::Driver],
            timeout: Duration::from_secs(10),
            requirement,
            body: run(move |ctx: Ctx| close_kind(ctx, s.clone(), kind)),
            ..Case::default()
        });
    }
}

/// One decoding error in a close envelope: the frame that has it, and its kind.
#[derive(Clone, Copy)]
struct Kind {
    slug: &'static str,
    kind: &'static str,
    /// What the frame is, in the requirement.
    what: &'static str,
    version: Version,
    body: fn(&Served) -> Vec<u8>,
}

fn probe_map(s: &Served, extra: Vec<(&'static str, Vec<u8>)>) -> Vec<u8> {
    let mut fields = (s.probe.1)();
    fields.extend(extra);
    mp::map(&[(s.probe.0, mp::map(&fields))])
}

const KINDS: [Kind; 8] = [
    Kind {
        slug: "invalid-message-pack",
        kind: "InvalidMessagePack",
        what: "a frame holding the reserved marker 0xc1 ([0, 0xc1])",
        version: Version::V2,
        body: |_| vec![0x92, 0x00, 0xc1],
    },
    Kind {
        slug: "too-deep",
        kind: "TooDeep",
        what: "its probe ask nested 65 levels deep in an unknown field",
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
        what: "its probe ask followed by a nil in the same frame",
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
        body: |s| mp::arr(&[mp::u(0), mp::map(&[(s.local, mp::map(&[]))])]),
    },
    Kind {
        slug: "trailing-bytes-over-unknown-message",
        kind: "TrailingBytes",
        what: "a send of a message its family does not have followed by a nil (§11.2: trailing bytes come before the \
            name)",
        version: Version::V2,
        body: |_| {
            let mut b = mp::arr(&[
                mp::u(0),
                mp::map(&[("RegisterBlockManager", mp::map(&[]))]),
            ]);
            b.push(0xc0);
            b
        },
    },
    Kind {
        slug: "local-over-invalid-fields",
        kind: "LocalMessage",
        what: "a send of a local message of its family whose fields are an array (§11.2: a local message is refused \
            before its fields are read)",
        version: Version::V2,
        body: |s| mp::arr(&[mp::u(0), mp::map(&[(s.local, mp::arr(&[mp::u(5)]))])]),
    },
    Kind {
        slug: "not-in-version-fields-unexamined",
        kind: "NotInVersion",
        what: "an ask, on a version 1 connection, of a message only version 2 has, its fields an array (§11.2: \"its \
            fields are not examined\")",
        version: Version::V1,
        body: |s| {
            mp::arr(&[
                mp::u(1),
                mp::u(5),
                mp::map(&[(s.v2_only.0, mp::arr(&[mp::u(5)]))]),
            ])
        },
    },
];

/// The version the suite speaks to `s`: 2 unless the endpoint offers only 1.
/// A connection to `at` at `version` whose hello offers closeReason; skipped when the endpoint
/// does not take it (the feature is optional) or does not speak `version`.
async fn taking_close_reason(
    ctx: &Ctx,
    s: &Served,
    at: &Listening,
    version: Version,
) -> Result<Conn, Failure> {
    crate::peer::require_version(&ctx.log, version)?;
    let (c, taken) = crate::kit::common::offering_close_reason(
        ctx,
        at.addr,
        "suite",
        &[version],
        s.role,
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
fn sample_ask(family: &str, name: &str, id: u64, version: Version) -> Result<Vec<u8>, Failure> {
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
enum Answered {
    Reply,
    Failure(sparkwire::messages::ErrorDescription),
    /// The connection closed: the last frame before, if any.
    Closed(Option<bytes::Bytes>),
}

/// Reads until the answer to ask `id` or the close; other frames are passed over.
async fn answer_to(ctx: &Ctx, c: &mut Conn, id: u64, want: &str) -> Result<Answered, Failure> {
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

fn answer_of<F: Family>(body: &bytes::Bytes, v: Version, id: u64) -> Option<Answered> {
    match decode_envelope::<F>(body, v) {
        Ok(Envelope::Reply { id: rid, .. }) if rid == id => Some(Answered::Reply),
        Ok(Envelope::Failure { id: fid, error }) if fid == id => Some(Answered::Failure(error)),
        _ => None,
    }
}

/// The close envelope `last` holds, if it is one.
async fn refused_ask_failure(ctx: Ctx, s: Served) -> Outcome {
    let at = (s.open)(ctx.clone()).await?;
    let v = highest(&ctx);
    let mut c = taking_close_reason(&ctx, &s, &at, v).await?;
    c.send_frame(&sample_ask(s.family, s.refused, 41, v)?)
        .await?;
    let want = format!(
        "a failure for ask 41 ({} from a {}) with className {OFF_ROUTE_CLASS} and a message, the connection open",
        s.refused,
        s.role.name()
    );
    match answer_to(&ctx, &mut c, 41, &want).await? {
        Answered::Failure(e) => {
            check(
                e.class_name == OFF_ROUTE_CLASS && !e.message.is_empty(),
                &want,
                format!("a failure {} / {:?}", e.class_name, e.message),
            )?;
            let probe = mp::arr(&[
                mp::u(1),
                mp::u(42),
                mp::map(&[(s.probe.0, mp::map(&(s.probe.1)()))]),
            ]);
            c.send_frame(&probe).await?;
            let next = format!("a reply to {} (ask 42) after the failure", s.probe.0);
            match answer_to(&ctx, &mut c, 42, &next).await? {
                Answered::Reply => Ok(()),
                Answered::Failure(e) => Err(fail(next, format!("a failure: {}", e.message))),
                Answered::Closed(_) => Err(fail(next, "the connection closed")),
            }
        }
        Answered::Reply => Err(fail(want, "a reply")),
        Answered::Closed(last) => match close_of(last.as_ref()) {
            Some(r) if r.kind == "RuleViolation" => Ok(()),
            Some(r) => Err(fail(
                want,
                format!("a close envelope {r:?}, then the close"),
            )),
            None => Err(fail(want, "the connection closed, with no failure")),
        },
    }
}

async fn takes_unknown_kind(ctx: Ctx, s: Served) -> Outcome {
    let at = (s.open)(ctx.clone()).await?;
    let mut c = taking_close_reason(&ctx, &s, &at, highest(&ctx)).await?;
    c.send_frame(&mp::arr(&[
        mp::u(4),
        mp::map(&[
            ("kind", mp::s("zzzKindOfALaterRevision")),
            ("message", mp::s("closed by the conformance suite")),
            ("path", vec![0xc0]),
            ("offset", vec![0xc0]),
            ("zzzAFieldOfALaterRevision", mp::s("skipped")),
        ]),
    ]))
    .await?;
    c.expect_closed_silently(
        wait(&ctx),
        "the endpoint closes the connection, sending nothing more",
    )
    .await
}

async fn unknown_ask_close_kind(ctx: Ctx, s: Served) -> Outcome {
    let at = (s.open)(ctx.clone()).await?;
    let mut c = taking_close_reason(&ctx, &s, &at, highest(&ctx)).await?;
    c.send_frame(&mp::arr(&[
        mp::u(2),
        mp::u(424_242),
        mp::map(&[("bool", vec![0xc3])]),
    ]))
    .await?;
    let probe = mp::arr(&[
        mp::u(1),
        mp::u(6),
        mp::map(&[(s.probe.0, mp::map(&(s.probe.1)()))]),
    ]);
    c.send_frame(&probe).await?;
    let want = "the reply to ask 6 (the unknown reply ignored), or a close envelope of kind UnknownAsk (or, strictly, \
        RuleViolation) and the close";
    match answer_to(&ctx, &mut c, 6, want).await? {
        Answered::Reply => Ok(()),
        Answered::Failure(e) => Err(fail(want, format!("a failure for ask 6: {}", e.message))),
        Answered::Closed(last) => match close_of(last.as_ref()) {
            Some(r) => check(
                matches!(r.kind.as_str(), "UnknownAsk" | "RuleViolation"),
                want,
                format!("{r:?}"),
            ),
            None => Err(fail(want, "a close with no close envelope before it")),
        },
    }
}

async fn duplicate_ask_close_kind(ctx: Ctx, s: Served) -> Outcome {
    let at = (s.open)(ctx.clone()).await?;
    let mut c = taking_close_reason(&ctx, &s, &at, highest(&ctx)).await?;
    let probe = frame(&mp::arr(&[
        mp::u(1),
        mp::u(7),
        mp::map(&[(s.probe.0, mp::map(&(s.probe.1)()))]),
    ]));
    let mut twice = probe.clone();
    twice.extend_from_slice(&probe);
    c.send_raw(&twice, "two asks with id 7 in one write")
        .await?;
    let want = "replies to ask 7, or a close envelope of kind DuplicateAsk (or, strictly, RuleViolation) and the \
        close (SPEC §8.1)";
    // Each ask may be answered (the first one before the second was read), or the second found
    // a duplicate: only a close must name DuplicateAsk.
    for round in 0..2 {
        match answer_to(&ctx, &mut c, 7, want).await {
            Ok(Answered::Reply) => continue,
            Ok(Answered::Failure(_)) => continue,
            // Nothing at all for the first: the ask was left pending.
            Err(e) if round == 0 => return Err(e),
            Ok(Answered::Closed(last)) => {
                return match close_of(last.as_ref()) {
                    Some(r) => check(
                        matches!(r.kind.as_str(), "DuplicateAsk" | "RuleViolation"),
                        want,
                        format!("{r:?}"),
                    ),
                    None => Err(fail(want, "a close with no close envelope before it")),
                }
            }
            // One answer and nothing more: the duplicate was dropped, which the sentence leaves
            // open (it names the kind of a close only).
            Err(_) => return Ok(()),
        }
    }
    Ok(())
}

/// The frame of `close-offset`: `s`'s message whose first field is mistyped as the one-byte
/// integer 5, another field after it; with the mistyped field's name and the offset of that byte,
/// the offending item's first (SPEC §8.2; the body is written piece by piece so that it is known).
fn offset_frame(s: &Served) -> Result<(Vec<u8>, &'static str, u64), Failure> {
    let fields = (s.bad_fields.1)();
    let Some((first, value)) = fields.first().cloned() else {
        return Err(fail("a mistyped field", "none"));
    };
    let ask = Definition::builtin()
        .messages
        .iter()
        .any(|d| d.name == s.bad_fields.0 && d.kind == MessageKind::Ask);
    let mut body = if ask {
        vec![0x93, 0x01, 0x05]
    } else {
        vec![0x92, 0x00]
    };
    body.push(0x81);
    body.extend(mp::s(s.bad_fields.0));
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

async fn close_offset(ctx: Ctx, s: Served) -> Outcome {
    let at = (s.open)(ctx.clone()).await?;
    let v = highest(&ctx);
    let mut c = taking_close_reason(&ctx, &s, &at, v).await?;
    let (body, first, offset) = offset_frame(&s)?;
    c.send_frame(&body).await?;
    let want = format!("a close envelope of kind InvalidFields at {first} with offset {offset}");
    let reason = close_envelope(&ctx, &mut c, &want).await?;
    check(
        reason.kind == "InvalidFields" && reason.offset == Some(offset),
        want,
        format!("{reason:?}"),
    )
}

async fn close_kind(ctx: Ctx, s: Served, k: Kind) -> Outcome {
    let at = (s.open)(ctx.clone()).await?;
    let v = if k.version == Version::V1 {
        Version::V1
    } else {
        highest(&ctx)
    };
    let mut c = taking_close_reason(&ctx, &s, &at, v).await?;
    c.send_raw(&frame(&(k.body)(&s)), k.what).await?;
    let want = format!("a close envelope of kind {}, then the close", k.kind);
    let reason = close_envelope(&ctx, &mut c, &want).await?;
    check(reason.kind == k.kind, want, format!("{reason:?}"))
}

// ---- the executor ----

/// An executor started and registered (RegisterExecutor answered true), its connection to the
/// suite agreeing on closeReason at `version`.
async fn executor(ctx: &Ctx, version: Version) -> Result<(Run, Conn), Failure> {
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

async fn executor_refused_ask_failure(ctx: Ctx) -> Outcome {
    let (_run, mut c) = executor(&ctx, Version::V2).await?;
    c.send_frame(&sample_ask("coarse", "RequestExecutors", 81, Version::V2)?)
        .await?;
    let want = format!(
        "a failure for ask 81 (RequestExecutors from its driver) with className {OFF_ROUTE_CLASS} and a message"
    );
    match answer_to(&ctx, &mut c, 81, &want).await? {
        Answered::Failure(e) => check(
            e.class_name == OFF_ROUTE_CLASS && !e.message.is_empty(),
            &want,
            format!("a failure {} / {:?}", e.class_name, e.message),
        )?,
        Answered::Reply => return Err(fail(want, "a reply")),
        Answered::Closed(last) => {
            return Err(fail(
                want,
                match close_of(last.as_ref()) {
                    Some(r) => format!("a close envelope {r:?}, then the close"),
                    None => "the connection closed".into(),
                },
            ))
        }
    }
    c.send(&Envelope::Ask {
        id: 82,
        message: C::TaskThreadDump(TaskThreadDump::new(99)),
    })
    .await?;
    let next = "a reply to TaskThreadDump (ask 82) after the failure";
    match answer_to(&ctx, &mut c, 82, next).await? {
        Answered::Reply => Ok(()),
        Answered::Failure(e) => Err(fail(next, format!("a failure: {}", e.message))),
        Answered::Closed(_) => Err(fail(next, "the connection closed")),
    }
}

async fn executor_no_close_envelope_on_stop(ctx: Ctx) -> Outcome {
    let (_run, mut c) = executor(&ctx, Version::V2).await?;
    c.send(&Envelope::Send(C::StopExecutor(StopExecutor::new())))
        .await?;
    closed_without_envelope(&ctx, &mut c, "the connection closed with no close envelope").await
}

/// The decoder.json vectors of SPEC §11.2's order (the frames with two faults, one winning) that
/// an executor can receive: the coarse family's refused ones whose name says which wins.
fn precedence_vectors() -> Vec<(String, Vec<u8>, Version, String)> {
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

async fn executor_close_kind(ctx: Ctx, frame: Vec<u8>, version: Version, kind: String) -> Outcome {
    let (_run, mut c) = executor(&ctx, version).await?;
    c.send_raw(&frame, "a decoder.json vector").await?;
    let want = format!("a close envelope of kind {kind}, then the close");
    let reason = close_envelope(&ctx, &mut c, &want).await?;
    check(reason.kind == kind, want, format!("{reason:?}"))
}

// ---- the driver ----

async fn driver_no_close_envelope_at_exit(ctx: Ctx) -> Outcome {
    let d = crate::kit::driver::registered(&ctx, crate::kit::driver::SMALL).await?;
    let id = "1";
    let (conn, taken) = crate::kit::common::offering_close_reason(
        &ctx,
        d.driver_addr,
        "executor-1",
        &[Version::V2],
        Role::Executor,
        id,
    )
    .await?;
    if !taken {
        return Err(Failure::Skipped(
            "the driver does not take closeReason".into(),
        ));
    }
    let mut e = crate::kit::driver::FakeExecutor {
        conn,
        id: id.to_string(),
    };
    e.conn
        .send(&Envelope::Ask {
            id: 1,
            message: C::RegisterExecutor(sparkwire::messages::coarse::RegisterExecutor::new(
                id.into(),
                sparkwire::messages::EndpointRef::client("Executor"),
                "127.0.0.1".into(),
                2,
                Default::default(),
                Default::default(),
                Default::default(),
                0,
            )),
        })
        .await?;
    e.conn
        .expect::<C, ()>(wait(&ctx), "a bool reply true to RegisterExecutor", |x| {
            matches!(
                x,
                Envelope::Reply {
                    id: 1,
                    reply: Reply::Bool(true)
                }
            )
            .then_some(())
        })
        .await?;
    e.conn
        .send(&Envelope::Send(C::LaunchedExecutor(LaunchedExecutor::new(
            id.into(),
        ))))
        .await?;
    // Runs the job's tasks until StopExecutor; the suite keeps its side open, so that the close
    // is the driver's, at its exit.
    loop {
        let env = e
            .conn
            .recv::<C>(wait(&ctx), "LaunchTask or StopExecutor")
            .await?;
        match env {
            Envelope::Send(C::LaunchTask(l)) => {
                let t =
                    sparkwire::wire::decode_task(&bytes::Bytes::copy_from_slice(l.data.as_slice()))
                        .map_err(|er| fail("a TaskDescription", er.to_string()))?;
                e.run(&t).await?;
            }
            Envelope::Send(C::StopExecutor(_)) => break,
            _ => {}
        }
    }
    closed_without_envelope(
        &ctx,
        &mut e.conn,
        "the driver closes the executor's connection at its exit, with no close envelope",
    )
    .await
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
        for s in [master(), worker(), driver()] {
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
        for s in [master(), worker(), driver()] {
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
