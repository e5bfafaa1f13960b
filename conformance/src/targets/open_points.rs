//! `--target master` (and one `--target driver` case): the live parts of issue 44's decisions.
//! Where an `InvalidFields` fault lies (SPEC §8.2) for every vector of `decoder.json` a master
//! reads, and on a driver's executor port for the coarse family's; a `bin` where a `str` is due
//! (§4.1); close reasons that do not decode, and ones read as sent (§8.1); a failure for an ask
//! never made (§8.1 `UnknownAsk`); the hello's features given twice, in a refused answer and
//! checked at step 3 (handshake.md §5, §12); a kill after the submitting connection closed, with
//! the timing Z4 states (§14.2); a version 1 `ExecutorUpdated`'s `workerLost` (§5); an ask whose
//! answer would not fit the master's frame limit (§8), the failure class of a strict master that
//! answers an ask refused for a rule of `rules.md` (§14.3), and the idle timeout of a
//! `driver-client` between polls (§8). One function per case; each cites the sentence it checks.

use std::time::Duration;

use bytes::Bytes;
use sparkwire::definition::Definition;
use sparkwire::messages::deploy::{
    RegisterApplication, RequestDriverStatus, RequestExecutors, RequestKillDriver,
    RequestMasterState,
};
use sparkwire::messages::{
    Addr, DeployMessage, EndpointRef, ErrorDescription, ExecutorState, ProfileExecutors, Version,
};
use sparkwire::wire::handshake::{decode_answer, Answer, Hello, RefusalReason, Role, CLOSE_REASON};
use sparkwire::wire::msgpack::Cursor;
use sparkwire::wire::vectors::decoder_vectors;
use sparkwire::wire::{decode_envelope, CloseReason, Envelope, Reply};

use crate::case::{Cases, Sharing};
use crate::env::Ctx;
use crate::kit::common::{
    close_of, offering_close_reason, open_offering, reaction_wait, unique, wait,
};
use crate::kit::master::{addr, app, app_desc, flow, launch, open, report, submit, worker, Need};
use crate::kit::own_server::{after, closed_by_limit, Server, Settings, SHORT};
use crate::kit::replay::slug;
use crate::kit::server::close_envelope;
use crate::kit::versions::highest;
use crate::mp;
use crate::peer::{Conn, Event};
use crate::verdict::{check, fail, Failure, Level, Outcome};

type D = DeployMessage;
type C = sparkwire::messages::CoarseMessage;

/// Every case of this file, added to `cs`.
pub fn add(cs: &mut Cases) {
    cs.sharing(Sharing::Parallel)
        .timeout(crate::verdict::DEFAULT_TIMEOUT);
    for v in located() {
        let id = format!("spec/8.2/location/{}", slug(&v.name));
        let requirement = format!(
            "SPEC §8.2, \"They do not depend on how a decoder reads ...: two correct decoders report the same path and \
                offset for the same frame\", \"The offset is the position of the offending item's first byte\", and \
                    the path grammar: the master, on a connection that agreed on closeReason, refuses the decoder.json \
                        vector \"{}\" with a close envelope of kind InvalidFields, path {:?} and offset {}",
            v.name, v.path, v.offset
        );
        cs.add(id, Level::Must, requirement, move |ctx: Ctx| {
            let v = v.clone();
            async move { location(ctx, v).await }
        });
    }
    cs.add(
        "spec/4.1/bin-for-str",
        Level::Must,
        "SPEC §4.1, `string`: \"Never `bin`, even holding valid UTF-8: a decoder refuses a `bin` where a string value, \
            a string map key or a field name is due (`InvalidFields`)\": the master refuses each of the decoder.json \
                frames \"a string sent as bin\", \"a string map key sent as bin\" and \"a field name sent as bin\" \
                    (each on a connection of its own) by closing it, after a close envelope of kind InvalidFields \
                        where the connection agreed on closeReason",
        bin_for_str,
    );
    cs.add(
        "spec/8.1/close-reason-not-a-map",
        Level::Must,
        "SPEC §8.1, \"a reason that is not a map at all (`[4, nil]`, `[4, [kind, message]]`) too, with path `\"\"`\", \
            and \"A close envelope whose reason does not decode is a frame that could not be decoded like any other \
                (§8): the receiver closes the connection and, where the feature is on, sends its own close envelope \
                    (`InvalidFields`) first\": the master, sent [4, nil] and (on another connection) [4, [kind, \
                        message]], closes each after a close envelope of kind InvalidFields, path \"\" and offset 2",
        close_reason_not_a_map,
    );
    cs.add(
        "spec/8.1/close-reason-read-as-sent",
        Level::Must,
        "SPEC §8.1, \"A decoder does not check `kind` against the table ..., nor that `path` and `offset` go with \
            `InvalidFields` (they are read as sent whatever the kind)\", and \"treat the close envelope as the end of \
                the connection: it closes too, sends nothing more\": the master, sent a close envelope of kind \
                    NotOnRoute with a path and an offset, closes the connection and sends nothing (no close envelope \
                        of its own)",
        close_reason_read_as_sent,
    );
    cs.add(
        "spec/8.1/failure-unknown-ask",
        Level::Must,
        "SPEC §8.1 (`UnknownAsk`: \"a reply or a failure envelope for an ask never made\", and in strict mode \"a \
            reply or failure to an ask never made A2 ... may be closed with either that kind or `RuleViolation`\"): \
                the master, on a connection that agreed on closeReason, sent a failure envelope for an ask it never \
                    made, either ignores it and answers the next ask, or closes with a close envelope of kind \
                        UnknownAsk (validating rules.md, RuleViolation)",
        failure_unknown_ask,
    );
    cs.add(
        "handshake/12/features-twice",
        Level::Must,
        "handshake.md §12, \"A name given twice is offered (or taken) once: neither side refuses it. A server lists \
            each feature it takes once\": a hello offering closeReason twice is accepted, and the answer's features \
                name no feature twice",
        features_twice,
    );
    cs.add(
        "handshake/12/features-in-refused-answer",
        Level::Must,
        "handshake.md §12, \"In a refused answer `features` means nothing: a server does not write it\": a hello \
            offering closeReason whose `versions` is a string is refused (malformedHello), and the refused answer has \
                no `features` key",
        features_in_refused_answer,
    );
    cs.add(
        "handshake/5/3/features-checked-first",
        Level::Must,
        "handshake.md §5, \"`features` (§12) is checked at step 3 ...: a `features` key that is not an array of `str` \
            is `malformedHello` there (after the magic, before authentication)\": a hello whose features is the \
                string \"closeReason\", offering only version 1000 and no authentication, is refused with \
                    malformedHello (not noCommonVersion, authRequired or authNotConfigured of the later steps)",
        features_checked_first,
    );
    cs.add(
        "handshake/12/features-name-bin-refused",
        Level::Must,
        "handshake.md §12, \"a decoder takes a `features` that is not an array of `str` (a name sent as `bin` \
            included) as `malformedHello`\": a hello whose features is [bin \"closeReason\"] is refused with \
                malformedHello",
        features_name_bin_refused,
    );
    cs.add(
        "spec/14.2/Z4/kill-after-close",
        Level::Must,
        "SPEC §14.2 Z4, \"a `RequestKillDriver` that the master reads at least 1 s after the submitting connection's \
            end reached it MUST be taken, one read earlier MAY be refused as a foreign id, so a client that sends it \
                right after closing the submitting connection retries a refusal once after a second\": a new driver \
                    client sends RequestKillDriver right after the submitting client closed its connection; the \
                        answer, or, after a refusal (a failure or a close), the one retry sent a second later, is \
                            KillDriverResponse success = true",
        kill_after_close,
    );
    cs.add(
        "spec/14.3/strict-refusal-failure-class",
        Level::Must,
        "SPEC §14.3, \"a strict endpoint that answers, rather than closes for, an ask refused only for breaking a \
            rule of `rules.md` uses `org.apache.spark.SparkException` with a `message` naming the rule\" (and \
            §14.2, \"Unknown ids, and messages before a registration\": answered as Z1 says, or, strictly, \
            refused): an application client that registered nothing asks RequestExecutors for an application id \
            the master never gave out (rules P1 and P2 only); the answer is a reply, a close (with a close \
            envelope of kind RuleViolation where closeReason was agreed), or a failure of class \
            org.apache.spark.SparkException with a message",
        strict_refusal_failure_class,
    );
    cs.timeout(Duration::from_secs(15));
    cs.add(
        "spec/8/limits/answer-over-frame-limit",
        Level::Must,
        "SPEC §8, \"An ask that cannot be answered is answered with a failure envelope rather than left pending: its \
            `className` is `org.apache.spark.SparkException` ... One such ask is an ask whose answer would not fit the \
                answering side's own frame limit ...: it is failed with that class ..., and the connection stays \
                    open\": a server started with a frame limit of 128 KiB, holding two applications whose commands \
                        carry 80 KiB each, answers a driver client's RequestMasterState (whose answer would be over \
                            160 KiB) with a failure of class org.apache.spark.SparkException and a message, then \
                                answers its RequestDriverStatus on the same connection",
        answer_over_frame_limit,
    );
    cs.add(
        "spec/8/limits/idle-driver-client-between-polls",
        Level::Must,
        "SPEC §8, \"The idle timeout applies ... to a `ui` or `driver-client` connection whenever it has no ask \
            awaiting an answer: a `driver-client` that polls `RequestDriverStatus` less often than the idle timeout \
                is closed (`Idle`) between polls\", and §8.1 (`Idle`): a server started with a 1 s idle timeout \
                    answers a driver client's RequestDriverStatus, then closes that connection when it sends nothing \
                        more, its last frame a close envelope of kind Idle (closeReason taken)",
        idle_driver_client_between_polls,
    );
    cs.timeout(Duration::from_secs(10));
    flow(
        cs,
        &[Need::NoOtherApplication],
        "flow/master/v1/worker-lost",
        Level::Must,
        "SPEC §5 (`ExecutorUpdated`: version 1 `workerLost: bool`, \"lost → `\"\"`, else nil / lost = host is set\"), \
            as Spark 3.0's master sets it: with protocol version 1, the ExecutorUpdated RUNNING of an executor \
                its worker reported has workerLost false, and once the worker's connection closes the \
                    ExecutorUpdated LOST of that executor has workerLost true",
        v1_worker_lost,
    );
    // Restores the defaults for whatever the catalogue adds next.
    cs.sharing(Sharing::Parallel)
        .timeout(crate::verdict::DEFAULT_TIMEOUT);
}

// ---- §8.2: locations ----

/// A decoder.json `InvalidFields` vector a master reads as the vector says: its frame, where
/// the fault lies, and the versions in which sparkwire's deploy decoder locates it there.
#[derive(Clone, Debug)]
struct Located {
    name: String,
    frame: Vec<u8>,
    path: String,
    offset: u64,
    versions: Vec<Version>,
}

/// The decoder.json `InvalidFields` vectors a master refuses at the vector's location: those of
/// the deploy family and the family-free ones (failures, close reasons, replies' values), each
/// with the versions in which the deploy decoder reports the vector's path and offset.
fn located() -> Vec<Located> {
    located_in(|body, version| decode_envelope::<D>(body, version).err())
}

/// The decoder.json `InvalidFields` vectors that `decode` (a decoder of one family, given the
/// frame's body and a version) refuses at the vector's location, with the versions in which it
/// does: the vectors of its family and the family-free ones.
fn located_in(decode: impl Fn(&Bytes, Version) -> Option<sparkwire::wire::Error>) -> Vec<Located> {
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
async fn ui_taking_close_reason(ctx: &Ctx, version: Version) -> Result<Conn, Failure> {
    crate::peer::require_version(&ctx.log, version)?;
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
fn spoken(ctx: &Ctx, versions: &[Version]) -> Result<Version, Failure> {
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

async fn location(ctx: Ctx, v: Located) -> Outcome {
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

/// The driver's case: every decoder.json `InvalidFields` vector its executor port reads (the
/// coarse family's and the family-free ones), on one driver.
pub fn add_driver(cs: &mut Cases) {
    cs.timeout(Duration::from_secs(15));
    cs.add(
        "spec/8.2/location/driver",
        Level::Must,
        "SPEC §8.2, \"two correct decoders report the same path and offset for the same frame\", the offset \"the \
            position of the offending item's first byte\", the path grammar (a union's variant adds no step, indexes \
                in brackets, integer keys unquoted) and the offending item of each fault (a union's map, its name, a \
                    tuple, a set's element): the driver, on its executor port, on connections that agreed on \
                        closeReason, refuses each decoder.json InvalidFields vector of the coarse family (and the \
                            family-free ones) with a close envelope of kind InvalidFields at the vector's path and \
                                offset",
        driver_locations,
    );
    cs.timeout(crate::verdict::DEFAULT_TIMEOUT);
}

async fn driver_locations(ctx: Ctx) -> Outcome {
    let d = crate::kit::driver::registered(&ctx, crate::kit::driver::SMALL).await?;
    let vectors = located_in(|body, version| decode_envelope::<C>(body, version).err());
    for v in vectors {
        let version = *v.versions.last().ok_or_else(|| fail("a version", "none"))?;
        let (mut c, taken) = offering_close_reason(
            &ctx,
            d.driver_addr,
            "executor",
            &[version],
            Role::Executor,
            "1",
        )
        .await?;
        if !taken {
            return Err(Failure::Skipped(
                "the driver does not take closeReason (optional, handshake.md §12)".into(),
            ));
        }
        c.send_raw(&v.frame, &format!("the decoder.json vector \"{}\"", v.name))
            .await?;
        let want = format!(
            "for \"{}\": a close envelope of kind InvalidFields, path {:?}, offset {}",
            v.name, v.path, v.offset
        );
        let r = close_envelope(&ctx, &mut c, &want).await?;
        check(
            r.kind == "InvalidFields"
                && r.path.as_deref() == Some(v.path.as_str())
                && r.offset == Some(v.offset),
            want,
            format!("kind {}, path {:?}, offset {:?}", r.kind, r.path, r.offset),
        )?;
    }
    Ok(())
}

// ---- §4.1: bin where str is due ----

/// The decoder.json frames of a `bin` where a `str` is due (SPEC §4.1), by the start of their
/// names.
const BIN_VECTORS: [&str; 3] = [
    "a string sent as bin",
    "a string map key sent as bin",
    "a field name sent as bin",
];

async fn bin_for_str(ctx: Ctx) -> Outcome {
    let all = located();
    for start in BIN_VECTORS {
        let v = all
            .iter()
            .find(|v| v.name.starts_with(start))
            .ok_or_else(|| fail(format!("the decoder.json vector \"{start}…\""), "none"))?;
        let version = spoken(&ctx, &v.versions)?;
        crate::peer::require_version(&ctx.log, version)?;
        let (mut c, taken) =
            offering_close_reason(&ctx, addr(&ctx)?, "ui", &[version], Role::Ui, "suite").await?;
        c.send_raw(&v.frame, &format!("the decoder.json vector \"{}\"", v.name))
            .await?;
        if taken {
            let want = format!(
                "\"{}\" refused: a close envelope of kind InvalidFields, then the close",
                v.name
            );
            let r = close_envelope(&ctx, &mut c, &want).await?;
            check(
                r.kind == "InvalidFields",
                want,
                format!("a close envelope of kind {}", r.kind),
            )?;
        } else {
            c.expect_closed(
                reaction_wait(&ctx),
                &format!("\"{}\" refused: the connection closed", v.name),
            )
            .await?;
        }
    }
    Ok(())
}

// ---- §8.1: close reasons ----

async fn close_reason_not_a_map(ctx: Ctx) -> Outcome {
    let shapes = [
        ("[4, nil]", mp::arr(&[mp::u(4), vec![0xc0]])),
        (
            "[4, [kind, message]]",
            mp::arr(&[
                mp::u(4),
                mp::arr(&[mp::s("Idle"), mp::s("closed by the conformance suite")]),
            ]),
        ),
    ];
    for (what, body) in shapes {
        let mut c = ui_taking_close_reason(&ctx, highest(&ctx)).await?;
        c.send_frame(&body).await?;
        let want = format!("for {what}: a close envelope of kind InvalidFields, path \"\", offset 2, then the close");
        let r = close_envelope(&ctx, &mut c, &want).await?;
        check(
            r.kind == "InvalidFields" && r.path.as_deref() == Some("") && r.offset == Some(2),
            want,
            format!("kind {}, path {:?}, offset {:?}", r.kind, r.path, r.offset),
        )?;
    }
    Ok(())
}

async fn close_reason_read_as_sent(ctx: Ctx) -> Outcome {
    let mut c = ui_taking_close_reason(&ctx, highest(&ctx)).await?;
    c.send_frame(&mp::arr(&[
        mp::u(4),
        mp::map(&[
            ("kind", mp::s("NotOnRoute")),
            ("message", mp::s("closed by the conformance suite")),
            ("path", mp::s("appDescription.command")),
            ("offset", mp::u(3)),
        ]),
    ]))
    .await?;
    c.expect_closed_silently(
        reaction_wait(&ctx),
        "the master closes the connection, sending nothing more (the reason read as sent)",
    )
    .await
}

async fn failure_unknown_ask(ctx: Ctx) -> Outcome {
    let mut c = ui_taking_close_reason(&ctx, highest(&ctx)).await?;
    c.send_frame(&mp::arr(&[
        mp::u(3),
        mp::u(525_252),
        mp::map(&[
            ("className", mp::s("org.apache.spark.SparkException")),
            (
                "message",
                mp::s("a failure for an ask the master never made"),
            ),
        ]),
    ]))
    .await?;
    c.send(&Envelope::Ask {
        id: 6,
        message: D::RequestMasterState(RequestMasterState::new()),
    })
    .await?;
    let want = "the reply to ask 6 (the stray failure ignored), or a close envelope of kind UnknownAsk (or, strictly, \
        RuleViolation) and the close";
    let deadline = tokio::time::Instant::now() + reaction_wait(&ctx);
    let mut last = None;
    loop {
        let left = deadline.saturating_duration_since(tokio::time::Instant::now());
        match c.next_or_close(left).await {
            Some(Event::Frame(body)) => {
                match decode_envelope::<D>(&body, c.v()) {
                    Ok(Envelope::Reply { id: 6, .. }) => return Ok(()),
                    Ok(Envelope::Failure { id: 6, error }) => {
                        return Err(fail(
                            want,
                            format!("a failure for ask 6: {}", error.message),
                        ))
                    }
                    _ => {}
                }
                last = Some(body);
            }
            Some(Event::Closed(_)) => {
                return match close_of(last.as_ref()) {
                    Some(r) => check(
                        matches!(r.kind.as_str(), "UnknownAsk" | "RuleViolation"),
                        want,
                        format!("{r:?}"),
                    ),
                    None => Err(fail(want, "a close with no close envelope before it")),
                }
            }
            Some(Event::TooLarge(n)) => {
                return Err(fail(want, format!("a frame declaring {n} bytes")))
            }
            None => return Err(fail(want, "neither within the time allowed")),
        }
    }
}

// ---- handshake.md §5, §12: features ----

async fn features_twice(ctx: Ctx) -> Outcome {
    let hello = Hello::new(&[Version::V1, Version::V2], Role::Ui, "suite")
        .with_features(&[CLOSE_REASON, CLOSE_REASON]);
    let (_c, taken) = open_offering(&ctx, addr(&ctx)?, "ui", hello).await?;
    let mut names = taken.clone();
    names.sort();
    names.dedup();
    check(
        names.len() == taken.len() && taken.iter().all(|f| f == CLOSE_REASON),
        "an acceptance whose features name closeReason at most once (and nothing else)",
        format!("features {taken:?}"),
    )
}

/// The keys of the MessagePack map `body`, as far as they are strings.
fn map_keys(body: &[u8]) -> Vec<String> {
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
async fn raw_hello(ctx: &Ctx, entries: &[(&str, Vec<u8>)], want: &str) -> Result<Bytes, Failure> {
    let mut c = Conn::connect(addr(ctx)?, "ui", Role::Ui, &ctx.log).await?;
    c.send_frame(&mp::map(entries)).await?;
    c.frame_body_or_close(reaction_wait(ctx), want).await
}

async fn features_in_refused_answer(ctx: Ctx) -> Outcome {
    let entries = [
        ("magic", mp::s("sparkwire")),
        ("versions", mp::s("two")),
        ("role", mp::s(Role::Ui.name())),
        ("id", mp::s("suite")),
        ("features", mp::arr(&[mp::s(CLOSE_REASON)])),
    ];
    let want = "a refused answer (malformedHello) with no `features` key";
    let body = raw_hello(&ctx, &entries, want).await?;
    match decode_answer(&body) {
        Ok(Answer::Refused(r)) if r.reason == RefusalReason::MalformedHello => {}
        other => return Err(fail(want, format!("{other:?}"))),
    }
    let keys = map_keys(&body);
    check(
        !keys.iter().any(|k| k == "features"),
        want,
        format!("an answer with the keys {keys:?}"),
    )
}

/// Sends a hello (no authentication) whose `features` is `features` and that offers only
/// version 1000; expects malformedHello.
async fn refused_malformed(ctx: &Ctx, features: Vec<u8>, what: &str) -> Outcome {
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

async fn features_checked_first(ctx: Ctx) -> Outcome {
    refused_malformed(&ctx, mp::s(CLOSE_REASON), "the string \"closeReason\"").await
}

async fn features_name_bin_refused(ctx: Ctx) -> Outcome {
    refused_malformed(
        &ctx,
        mp::arr(&[mp::bin(CLOSE_REASON.as_bytes())]),
        "[bin \"closeReason\"]",
    )
    .await
}

// ---- §14.2 Z4 ----

/// What a kill from a new driver client got.
enum Kill {
    Taken(bool),
    Refused(String),
}

async fn kill_from_new_client(ctx: &Ctx, id: &str, ask: u64) -> Result<Kill, Failure> {
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
        Ok(other) => Err(fail(want, crate::peer::envelope_label(&other))),
        Err(Failure::Fail { seen, .. }) if seen.contains("closed") => {
            Ok(Kill::Refused("the connection closed".into()))
        }
        Err(e) => Err(e),
    }
}

async fn kill_after_close(ctx: Ctx) -> Outcome {
    let (a, r) = submit(&ctx).await?;
    let id = r
        .driver_id
        .clone()
        .ok_or_else(|| fail("a submitted driver's id", format!("{r:?}")))?;
    drop(a);
    let want = format!("KillDriverResponse success = true for {id} from a new driver client, at the latest a second \
        after a refusal");
    match kill_from_new_client(&ctx, &id, 86).await? {
        Kill::Taken(success) => return check(success, &want, "success = false"),
        Kill::Refused(how) => ctx.log.push(format!(
            "[client-b] refused right after the close ({how}): once more in 1 s"
        )),
    }
    // The spec's own retry: one, a second after the refusal (read at least 1 s after the close).
    tokio::time::sleep(Duration::from_millis(1100)).await;
    match kill_from_new_client(&ctx, &id, 87).await? {
        Kill::Taken(success) => check(success, &want, "success = false"),
        Kill::Refused(how) => Err(fail(want, format!("refused again a second later: {how}"))),
    }
}

// ---- §5: ExecutorUpdated.workerLost in version 1 ----

/// The `workerLost` field of the version 1 ExecutorUpdated `body` (`[0, {"ExecutorUpdated":
/// {...}}]`), read raw; `None` when it is missing or not a bool.
fn worker_lost_raw(body: &[u8]) -> Option<bool> {
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
async fn updated_v1(
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

async fn v1_worker_lost(ctx: Ctx) -> Outcome {
    crate::peer::require_version(&ctx.log, Version::V1)?;
    let mut w = worker(&ctx, "worker", 1, 4096, Version::V1).await?;
    let (mut app_conn, id) = app(&ctx, "app", app_desc(Some(1), 128, None), Version::V1).await?;
    let l = launch(&ctx, &mut w).await?;
    report(&mut w, &id, l.exec_id, ExecutorState::Running, None, 44).await?;
    let running = updated_v1(&ctx, &mut app_conn, l.exec_id, ExecutorState::Running).await?;
    check(
        running == Some(false),
        "the ExecutorUpdated RUNNING its worker reported: workerLost false",
        format!("workerLost {running:?}"),
    )?;
    drop(w);
    let lost = updated_v1(&ctx, &mut app_conn, l.exec_id, ExecutorState::Lost).await?;
    check(
        lost == Some(true),
        "the ExecutorUpdated LOST once its worker's connection closed: workerLost true",
        format!("workerLost {lost:?}"),
    )
}

// ---- §14.3: the failure class of a strict refusal ----

/// What came back for an ask.
enum Answered {
    Reply,
    Failure(ErrorDescription),
    /// The connection closed; the close envelope before it, if any.
    Closed(Option<CloseReason>),
}

/// Waits on `c` for the answer to ask `id`, or for the connection's close.
async fn answer_or_close(
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

async fn strict_refusal_failure_class(ctx: Ctx) -> Outcome {
    let (mut c, taken) = offering_close_reason(
        &ctx,
        addr(&ctx)?,
        "app-client",
        &[highest(&ctx)],
        Role::AppClient,
        "suite",
    )
    .await?;
    let unknown = format!("app-20250101120000-{}", 9000 + unique() % 1000);
    c.send(&Envelope::Ask {
        id: 14,
        message: D::RequestExecutors(RequestExecutors::new(
            unknown.clone(),
            Vec::<ProfileExecutors>::new(),
        )),
    })
    .await?;
    let want = format!(
        "for RequestExecutors({unknown}) before any registration: a reply, a close (RuleViolation), or a failure of \
            class org.apache.spark.SparkException with a message"
    );
    match answer_or_close(&ctx, &mut c, 14, &want).await? {
        Answered::Reply => Ok(()),
        Answered::Failure(e) => check(
            e.class_name == "org.apache.spark.SparkException" && !e.message.is_empty(),
            &want,
            format!("a failure {}: {:?}", e.class_name, e.message),
        ),
        Answered::Closed(Some(r)) => check(
            r.kind == "RuleViolation",
            &want,
            format!("a close envelope of kind {}, then the close", r.kind),
        ),
        Answered::Closed(None) => check(
            !taken,
            &want,
            "the connection closed with no close envelope, although closeReason was agreed",
        ),
    }
}

// ---- §8: an answer over the frame limit; the idle timeout of a driver client ----

/// The frame limit the case gives its server: over the handshake's 64 KiB, under the answer.
const SMALL_FRAME_LIMIT: usize = 128 * 1024;

/// The argument each of the case's two applications carries: each registration fits the
/// limit, a MasterStateResponse holding both does not.
const HALF_LIMIT_ARGUMENT: usize = 80 * 1024;

async fn answer_over_frame_limit(ctx: Ctx) -> Outcome {
    let s = Server::start(
        &ctx,
        Settings {
            max_frame_bytes: SMALL_FRAME_LIMIT,
            ..Settings::default()
        },
        &["max_frame_bytes"],
    )
    .await?;
    let mut apps = Vec::new();
    for n in 0..2 {
        let (mut a, _) = s
            .open(&ctx, Role::AppClient, &format!("app-{n}"), None)
            .await?;
        let mut desc = app_desc(None, 256, None);
        desc.command.arguments = vec!["x".repeat(HALF_LIMIT_ARGUMENT)];
        let port = 40000 + (unique() % 20000) as i32;
        a.send(&Envelope::Send(D::RegisterApplication(
            RegisterApplication::new(
                desc,
                EndpointRef::at(Addr::new("127.0.0.1", port), "AppClient"),
            ),
        )))
        .await?;
        a.expect::<D, ()>(wait(&ctx), "RegisteredApplication", |e| {
            matches!(e, Envelope::Send(D::RegisteredApplication(_))).then_some(())
        })
        .await?;
        apps.push(a);
    }
    let (mut c, _) = s
        .open(&ctx, Role::DriverClient, "driver-client", None)
        .await?;
    c.send(&Envelope::Ask {
        id: 1,
        message: D::RequestMasterState(RequestMasterState::new()),
    })
    .await?;
    let want = format!(
        "a failure for RequestMasterState (ask 1), whose answer is over the frame limit of {SMALL_FRAME_LIMIT} \
            bytes: class org.apache.spark.SparkException, with a message"
    );
    match answer_or_close(&ctx, &mut c, 1, &want).await? {
        Answered::Failure(e) => check(
            e.class_name == "org.apache.spark.SparkException" && !e.message.is_empty(),
            &want,
            format!("a failure {}: {:?}", e.class_name, e.message),
        )?,
        Answered::Reply => {
            return Err(fail(
                want,
                "a reply (a frame over the limit the server was started with)",
            ))
        }
        Answered::Closed(r) => return Err(fail(want, format!("the connection closed ({r:?})"))),
    }
    let id = format!("driver-20250101120000-{:04}", 9000 + unique() % 1000);
    c.send(&Envelope::Ask {
        id: 2,
        message: D::RequestDriverStatus(RequestDriverStatus::new(id)),
    })
    .await?;
    let next = "the answer to RequestDriverStatus (ask 2): the connection stayed open";
    match answer_or_close(&ctx, &mut c, 2, next).await? {
        Answered::Reply => Ok(()),
        Answered::Failure(e) => Err(fail(
            next,
            format!("a failure {}: {:?}", e.class_name, e.message),
        )),
        Answered::Closed(r) => Err(fail(next, format!("the connection closed ({r:?})"))),
    }
}

async fn idle_driver_client_between_polls(ctx: Ctx) -> Outcome {
    let s = Server::start(
        &ctx,
        Settings {
            idle_timeout: SHORT,
            ..Settings::default()
        },
        &["idle_timeout"],
    )
    .await?;
    let (mut c, taken) = s
        .open(&ctx, Role::DriverClient, "driver-client", None)
        .await?;
    let id = format!("driver-20250101120000-{:04}", 9000 + unique() % 1000);
    c.send(&Envelope::Ask {
        id: 1,
        message: D::RequestDriverStatus(RequestDriverStatus::new(id)),
    })
    .await?;
    let want = "the answer to RequestDriverStatus (ask 1)";
    match answer_or_close(&ctx, &mut c, 1, want).await? {
        Answered::Reply => {}
        Answered::Failure(e) => {
            return Err(fail(
                want,
                format!("a failure {}: {:?}", e.class_name, e.message),
            ))
        }
        Answered::Closed(r) => return Err(fail(want, format!("the connection closed ({r:?})"))),
    }
    closed_by_limit(&ctx, &mut c, taken, "Idle", after(&ctx, SHORT)).await
}

#[cfg(test)]
mod tests {
    use super::*;

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
