//! Cases for an endpoint that connects to the suite (a worker to its master, a driver's
//! application client to its master, an executor to its driver): the client's side of the
//! handshake (protocol/handshake.md §2–4, 6–8).

use sparkwire::messages::Version;
use sparkwire::wire::handshake::{Answer, Hello, Refusal, RefusalReason, Role, CLOSE_REASON};

use crate::case::{bind, Case, Target};
use crate::env::Ctx;
use crate::kit::client::*;
use crate::kit::common::{close_of, closed_without_envelope, wait};
use crate::kit::spawned::Run;
use crate::mp;
use crate::peer::{frame, Conn, Event};
use crate::verdict::{check, fail, Failure, Level, Outcome};

type D = sparkwire::messages::DeployMessage;

/// Reads the endpoint's hello and its frame body. When the suite knows the endpoint's secret, it
/// then plays a server holding it (protocol/handshake.md §10.1): the hello must ask to
/// authenticate, the suite challenges and checks the endpoint's proof, so that what a case sends
/// next stands where the answer does on a secured connection.
async fn hello(ctx: &Ctx, c: &mut Conn) -> Result<(Hello, Vec<u8>), Failure> {
    let h = c.read_hello(wait(ctx) * 3).await?;
    let body = c.hello_body().to_vec();
    if let Some(secret) = &ctx.settings.secret {
        c.authenticate_client(&[Version::V1, Version::V2], "suite", secret, wait(ctx))
            .await?;
    }
    Ok((h, body))
}

fn accepted_entries(version: u64, role: &str) -> Vec<(&'static str, Vec<u8>)> {
    vec![
        ("magic", mp::s("sparkwire")),
        ("version", mp::u(version)),
        ("versions", mp::uints(&[1, 2])),
        ("role", mp::s(role)),
        ("id", mp::s("suite")),
    ]
}

fn best(h: &Hello) -> u64 {
    if h.versions.contains(&2) {
        2
    } else {
        1
    }
}

/// Answers the hello with `body` and expects the endpoint to close the connection.
async fn closes(ctx: Ctx, s: Client, body: impl FnOnce(&Hello) -> Vec<u8>) -> Outcome {
    let (_run, mut c) = (s.start)(ctx.clone()).await?;
    let (h, _) = hello(&ctx, &mut c).await?;
    let b = body(&h);
    c.send_raw(&b, "the suite's answer").await?;
    c.expect_closed_silently(
        wait(&ctx),
        "the endpoint closes the connection, sending nothing more",
    )
    .await
}

/// Answers with `entries` (an acceptance) and expects the endpoint to go on: its next frame is
/// an envelope that decodes at `version`.
async fn proceeds(
    ctx: Ctx,
    s: Client,
    entries: impl FnOnce(&Hello) -> Option<(Vec<(&'static str, Vec<u8>)>, Version)>,
) -> Outcome {
    let (_run, mut c) = (s.start)(ctx.clone()).await?;
    let (h, _) = hello(&ctx, &mut c).await?;
    let Some((e, v)) = entries(&h) else {
        return Err(Failure::Skipped(format!(
            "the endpoint does not offer the version this case needs ({:?})",
            h.versions
        )));
    };
    c.send_raw(&frame(&mp::map(&e)), "the suite's answer")
        .await?;
    c.version = Some(v);
    let body = c
        .frame_body(wait(&ctx), "the endpoint's first envelope")
        .await?;
    let ok = if c.family == "coarse" {
        sparkwire::wire::decode_envelope::<sparkwire::messages::CoarseMessage>(&body, v).is_ok()
    } else {
        sparkwire::wire::decode_envelope::<sparkwire::messages::DeployMessage>(&body, v).is_ok()
    };
    check(
        ok,
        format!("an envelope decoding at version {}", v.number()),
        crate::peer::describe(c.family, &body, v),
    )
}

/// The shared cases, added to `cases` for the client `s`.
pub fn add(cases: &mut Vec<Case>, s: Client) {
    let name = s.name;
    cases.push(Case {
        id: "spec/8.1/client-close-reason".into(),
        level: Level::Must,
        targets: vec![Target::Worker, Target::Driver, Target::Executor],
        requirement: format!("{name}, having offered closeReason in its hello and the suite taken it, sends a close envelope of \
            kind UnknownMessage as its last frame before it closes the connection on a message its family does not \
                have"),
        body: bind(&s, move |ctx: Ctx, s| async move {
            let (_run, mut c) = (s.start)(ctx.clone()).await?;
            let (h, _) = hello(&ctx, &mut c).await?;
            if !h.offers(CLOSE_REASON) {
                return Err(Failure::Skipped("the endpoint does not offer closeReason".into()));
            }
            let v = best(&h);
            let mut answer = accepted_entries(v, s.server_role.name());
            answer.push(("features", mp::arr(&[mp::s(CLOSE_REASON)])));
            c.send_raw(&frame(&mp::map(&answer)), "the suite's answer, taking closeReason").await?;
            c.version = Version::from_number(v);
            let m = mp::map(&[("RegisterBlockManager", mp::map(&[]))]);
            c.send_frame(&mp::arr(&[mp::u(0), m])).await?;
            let want = "a close envelope of kind UnknownMessage, then the close";
            let reason = crate::kit::server::close_envelope(&ctx, &mut c, want).await?;
            check(reason.kind == "UnknownMessage", want, format!("{reason:?}"))
        }),
        ..Case::default()
    });
    cases.push(Case {
        id: "spec/8.1/client-takes-unknown-kind".into(),
        level: Level::Must,
        targets: vec![Target::Worker, Target::Driver, Target::Executor],
        requirement: format!("SPEC §8.1, \"A receiver MUST take a `kind` it does not know as it is ..., and treat the close \
            envelope as the end of the connection: it closes too, sends nothing more\": {name}, on a connection that \
                agreed on closeReason, sent a close envelope of a kind no revision has, closes the connection and \
                    sends nothing after it"),
        body: bind(&s, move |ctx: Ctx, s| async move { told_to_close(ctx, s, &[
            ("kind", mp::s("zzzKindOfALaterRevision")),
            ("message", mp::s("closed by the conformance suite")),
            ("path", vec![0xc0]),
            ("offset", vec![0xc0]),
        ]).await }),
        ..Case::default()
    });
    cases.push(Case {
        id: "spec/8.1/client-close-reason-unknown-field".into(),
        level: Level::Must,
        targets: vec![Target::Worker, Target::Driver, Target::Executor],
        requirement: format!("SPEC §8.1, \"`reason` is the struct `CloseReason` ... a decoder skips fields it does not know\": \
            {name}, on a connection that agreed on closeReason, sent a close envelope holding a field of a later \
                revision, takes it as a close: it closes the connection and sends nothing after it"),
        body: bind(&s, move |ctx: Ctx, s| async move { told_to_close(ctx, s, &[
            ("kind", mp::s("Idle")),
            ("message", mp::s("closed by the conformance suite")),
            ("path", vec![0xc0]),
            ("offset", vec![0xc0]),
            ("zzzAFieldOfALaterRevision", mp::s("skipped")),
        ]).await }),
        ..Case::default()
    });
    cases.push(Case {
        id: "spec/8.1/client-no-close-envelope-unoffered".into(),
        level: Level::Must,
        targets: vec![Target::Worker, Target::Driver, Target::Executor],
        requirement: format!("SPEC §8.1, \"Without the feature — a peer whose hello did not offer it, or a server that did not \
            take it — ... no close envelope is ever sent\": {name}, whose answer did not take closeReason, closes the \
                connection on a message its family does not have with no close envelope"),
        body: bind(&s, move |ctx: Ctx, s| async move { no_close_envelope_unoffered(ctx, s).await }),
        ..Case::default()
    });
    cases.push(Case {
        id: "spec/8.1/client-unknown-ask-close-kind".into(),
        level: Level::Must,
        targets: vec![Target::Worker, Target::Driver, Target::Executor],
        requirement: format!("SPEC §8.1 (`UnknownAsk`: \"a reply to an ask never made\"): {name}, on a connection that agreed on \
            closeReason, sent a reply to an ask it never made, either ignores it (the connection stays open) or \
                closes with a close envelope of kind UnknownAsk (validating rules.md, RuleViolation: rule A2)"),
        body: bind(&s, move |ctx: Ctx, s| async move { client_unknown_ask_close_kind(ctx, s).await }),
        ..Case::default()
    });
    if s.role != Role::AppClient {
        cases.push(Case {
            id: "spec/8.1/bad-reply-close-kind".into(),
            level: Level::Must,
            targets: vec![Target::Worker, Target::Executor],
            requirement: format!("SPEC §8, \"`BadEnvelope` | not one of the four envelope forms (...); a message or reply that is \
                not a one-entry map keyed by a string\", and §8.1: {name}, on a connection that agreed on \
                    closeReason, answered {} with a reply whose map has two entries, closes with a close envelope of \
                        kind BadEnvelope", if s.role == Role::Worker { "its version 2 ExecutorStateChanged \
                            ask" } else { "its first ask (RetrieveSparkAppConfig)" }),
            body: bind(&s, move |ctx: Ctx, s| async move { bad_reply_close_kind(ctx, s).await }),
            ..Case::default()
        });
    }
    if s.role == Role::Worker {
        cases.push(Case {
            id: "spec/8.1/no-close-envelope-on-shutdown".into(),
            level: Level::Must,
            targets: vec![Target::Worker],
            requirement: format!("SPEC §8.1, \"No close envelope is sent ... for an endpoint's ordinary closes (its shutdown \
                ...)\": {name}, stopped (its standard input closed: `--exit-with-stdin`) while connected to the suite \
                    over a connection that agreed on closeReason, closes it with no close envelope"),
            body: bind(&s, move |ctx: Ctx, s| async move { no_close_envelope_on_shutdown(ctx, s).await }),
            ..Case::default()
        });
    }
    cases.push(Case {
        id: "handshake/3/hello".into(),
        level: Level::Must,
        targets: vec![Target::Worker, Target::Driver, Target::Executor],
        requirement: format!("{name}'s first frame is a hello: magic \"sparkwire\", the versions it speaks (at least one this \
            protocol defines), its role ({}), an id", s.role.name()),
        body: bind(&s, move |ctx: Ctx, s| async move {
            let (_run, mut c) = (s.start)(ctx.clone()).await?;
            let (h, _) = hello(&ctx, &mut c).await?;
            check(h.role == s.role, format!("role {}", s.role.name()), h.role.name())?;
            check(h.versions.iter().any(|v| Version::from_number(*v).is_some()), "a version of 1 or \
                2", format!("{:?}", h.versions))
        }),
        ..Case::default()
    });
    cases.push(Case {
        id: "handshake/3/magic-first".into(),
        level: Level::Should,
        targets: vec![Target::Worker, Target::Driver, Target::Executor],
        requirement: format!(
            "{name} writes the hello's keys in the order magic, versions, role, id"
        ),
        body: bind(&s, move |ctx: Ctx, s| async move {
            let (_run, mut c) = (s.start)(ctx.clone()).await?;
            let (_, body) = hello(&ctx, &mut c).await?;
            let mut cur = body.as_slice();
            let mut keys = Vec::new();
            if let Ok(n) = rmp::decode::read_map_len(&mut cur) {
                for _ in 0..n {
                    let mut k = vec![0u8; 64];
                    match rmp::decode::read_str(&mut cur, &mut k) {
                        Ok(key) => keys.push(key.to_string()),
                        Err(_) => break,
                    }
                    let start = body.len() - cur.len();
                    match sparkwire::wire::msgpack::value_len(&body[start..]) {
                        Ok(len) => cur = &cur[len..],
                        Err(_) => break,
                    }
                }
            }
            check(
                keys.first().map(String::as_str) == Some("magic")
                    && keys.get(1).map(String::as_str) == Some("versions")
                    && keys.get(2).map(String::as_str) == Some("role")
                    && keys.get(3).map(String::as_str) == Some("id"),
                "magic, versions, role, id",
                keys.join(", "),
            )
        }),
        ..Case::default()
    });
    cases.push(Case {
        id: "handshake/2/waits-for-answer".into(),
        level: Level::Must,
        targets: vec![Target::Worker, Target::Driver, Target::Executor],
        requirement: format!("{name} sends nothing after its hello until it has read the answer"),
        body: bind(&s, move |ctx: Ctx, s| async move {
            let (_run, mut c) = (s.start)(ctx.clone()).await?;
            hello(&ctx, &mut c).await?;
            match c.next(ctx.settings.quiet).await {
                None => Ok(()),
                Some(Event::Closed(how)) => Err(fail(
                    "the endpoint waiting for the answer",
                    format!("the connection closed ({how})"),
                )),
                Some(other) => Err(fail("nothing before the answer", format!("{other:?}"))),
            }
        }),
        ..Case::default()
    });
    cases.push(Case {
        id: "handshake/6/unknown-version-chosen".into(),
        level: Level::Must,
        targets: vec![Target::Worker, Target::Driver, Target::Executor],
        requirement: format!(
            "{name} closes the connection when the answer chooses a version it did not offer (9)"
        ),
        body: bind(&s, move |ctx: Ctx, s| async move {
            closes(ctx, s.clone(), |_| {
                frame(&mp::map(&accepted_entries(9, s.server_role.name())))
            })
            .await
        }),
        ..Case::default()
    });
    cases.push(Case {
        id: "handshake/6/unoffered-version-chosen".into(),
        level: Level::Must,
        targets: vec![Target::Worker, Target::Driver, Target::Executor],
        requirement: format!(
            "{name} closes the connection when the answer chooses a known version it did not offer"
        ),
        body: bind(&s, move |ctx: Ctx, s| async move {
            let (_run, mut c) = (s.start)(ctx.clone()).await?;
            let (h, _) = hello(&ctx, &mut c).await?;
            let Some(other) = [1u64, 2].into_iter().find(|v| !h.versions.contains(v)) else {
                return Err(Failure::Skipped("the endpoint offers both versions".into()));
            };
            c.send_raw(
                &frame(&mp::map(&accepted_entries(other, s.server_role.name()))),
                "an answer choosing an unoffered version",
            )
            .await?;
            c.expect_closed_silently(
                wait(&ctx),
                "the endpoint closes the connection, sending nothing more",
            )
            .await
        }),
        ..Case::default()
    });
    cases.push(Case {
        id: "handshake/8/bad-magic".into(),
        level: Level::Must,
        targets: vec![Target::Worker, Target::Driver, Target::Executor],
        requirement: format!(
            "{name} closes the connection when the answer's magic is not \"sparkwire\""
        ),
        body: bind(&s, move |ctx: Ctx, s| async move {
            closes(ctx, s.clone(), |h| {
                let mut e = accepted_entries(best(h), s.server_role.name());
                e[0].1 = mp::s("sparkfire");
                frame(&mp::map(&e))
            })
            .await
        }),
        ..Case::default()
    });
    cases.push(Case {
        id: "handshake/8/not-msgpack".into(),
        level: Level::Must,
        targets: vec![Target::Worker, Target::Driver, Target::Executor],
        requirement: format!("{name} closes the connection when the answer is not MessagePack"),
        body: bind(&s, move |ctx: Ctx, s| async move {
            closes(ctx, s, |_| frame(&[0xc1, 0xc1])).await
        }),
        ..Case::default()
    });
    cases.push(Case {
        id: "handshake/8/version-and-refused".into(),
        level: Level::Must,
        targets: vec![Target::Worker, Target::Driver, Target::Executor],
        requirement: format!(
            "{name} closes the connection when the answer has both `version` and `refused`"
        ),
        body: bind(&s, move |ctx: Ctx, s| async move {
            closes(ctx, s.clone(), |h| {
                let mut e = accepted_entries(best(h), s.server_role.name());
                e.push(("refused", mp::s("badMagic")));
                frame(&mp::map(&e))
            })
            .await
        }),
        ..Case::default()
    });
    cases.push(Case {
        id: "handshake/8/missing-role".into(),
        level: Level::Must,
        targets: vec![Target::Worker, Target::Driver, Target::Executor],
        requirement: format!("{name} closes the connection when an acceptance has no `role`"),
        body: bind(&s, move |ctx: Ctx, s| async move {
            closes(ctx, s.clone(), |h| {
                let mut e = accepted_entries(best(h), s.server_role.name());
                e.remove(3);
                frame(&mp::map(&e))
            })
            .await
        }),
        ..Case::default()
    });
    cases.push(Case {
        id: "handshake/4/duplicate-key".into(),
        level: Level::Must,
        targets: vec![Target::Worker, Target::Driver, Target::Executor],
        requirement: format!("{name} closes the connection when a key of the answer appears twice"),
        body: bind(&s, move |ctx: Ctx, s| async move {
            closes(ctx, s.clone(), |h| {
                let mut e = accepted_entries(best(h), s.server_role.name());
                e.push(("version", mp::u(best(h))));
                frame(&mp::map(&e))
            })
            .await
        }),
        ..Case::default()
    });
    cases.push(Case {
        id: "handshake/8/oversized-answer".into(),
        level: Level::Must,
        targets: vec![Target::Worker, Target::Driver, Target::Executor],
        requirement: format!(
            "{name} closes the connection when the answer's prefix declares more than 65536 bytes"
        ),
        body: bind(&s, move |ctx: Ctx, s| async move {
            closes(ctx, s, |_| 65537u32.to_be_bytes().to_vec()).await
        }),
        ..Case::default()
    });
    cases.push(Case {
        id: "handshake/2/refused".into(),
        level: Level::Must,
        targets: vec![Target::Worker, Target::Driver, Target::Executor],
        requirement: format!("{name} closes the connection on reading a refusal"),
        body: bind(&s, move |ctx: Ctx, s| async move {
            closes(ctx, s, |_| {
                let mut b = Vec::new();
                sparkwire::wire::handshake::encode_answer(
                    &Answer::Refused(Refusal {
                        reason: RefusalReason::RoleNotAccepted,
                        message: "refused by the conformance suite".into(),
                        versions: vec![1, 2],
                    }),
                    &mut b,
                );
                frame(&b)
            })
            .await
        }),
        ..Case::default()
    });
    cases.push(Case {
        id: "handshake/5/unknown-refusal".into(),
        level: Level::Must,
        targets: vec![Target::Worker, Target::Driver, Target::Executor],
        requirement: format!("{name} treats a refusal reason it does not know as a refusal and closes the connection"),
        body: bind(&s, move |ctx: Ctx, s| async move { closes(ctx, s, |_| frame(&mp::map(&[
            ("magic", mp::s("sparkwire")), ("refused", mp::s("zzzReasonOfALaterRevision")), ("message",
                mp::s("later")), ("versions", mp::uints(&[1, 2])),
        ]))).await }),
        ..Case::default()
    });
    cases.push(Case {
        id: "handshake/7/other-family-server".into(),
        level: Level::Should,
        targets: vec![Target::Worker, Target::Driver, Target::Executor],
        requirement: format!(
            "{name} closes a connection whose server declares a role of the other family ({})",
            s.other_family_role.name()
        ),
        body: bind(&s, move |ctx: Ctx, s| async move {
            closes(ctx, s.clone(), |h| {
                frame(&mp::map(&accepted_entries(
                    best(h),
                    s.other_family_role.name(),
                )))
            })
            .await
        }),
        ..Case::default()
    });
    cases.push(Case {
        id: "handshake/4/unknown-keys-ignored".into(),
        level: Level::Must,
        targets: vec![Target::Worker, Target::Driver, Target::Executor],
        requirement: format!("{name} ignores keys of the answer it does not know and goes on"),
        body: bind(&s, move |ctx: Ctx, s| async move {
            proceeds(ctx, s.clone(), |h| {
                let mut e = accepted_entries(best(h), s.server_role.name());
                e.push(("zzzLaterRevisionKey", mp::u(1)));
                Some((
                    e,
                    if best(h) == 2 {
                        Version::V2
                    } else {
                        Version::V1
                    },
                ))
            })
            .await
        }),
        ..Case::default()
    });
    cases.push(Case {
        id: "handshake/4/keys-any-order".into(),
        level: Level::Must,
        targets: vec![Target::Worker, Target::Driver, Target::Executor],
        requirement: format!("{name} reads the answer's keys in any order and goes on"),
        body: bind(&s, move |ctx: Ctx, s| async move {
            proceeds(ctx, s.clone(), |h| {
                let mut e = accepted_entries(best(h), s.server_role.name());
                e.reverse();
                Some((
                    e,
                    if best(h) == 2 {
                        Version::V2
                    } else {
                        Version::V1
                    },
                ))
            })
            .await
        }),
        ..Case::default()
    });
    cases.push(Case {
        id: "handshake/6/version-1-chosen".into(),
        level: Level::Must,
        targets: vec![Target::Worker, Target::Driver, Target::Executor],
        requirement: format!(
            "{name}, offered version 1 and answered with it, goes on in version 1"
        ),
        body: bind(&s, move |ctx: Ctx, s| async move {
            proceeds(ctx, s.clone(), |h| {
                h.versions
                    .contains(&1)
                    .then(|| (accepted_entries(1, s.server_role.name()), Version::V1))
            })
            .await
        }),
        ..Case::default()
    });
    cases.push(Case {
        id: "handshake/6/version-2-chosen".into(),
        level: Level::Must,
        targets: vec![Target::Worker, Target::Driver, Target::Executor],
        requirement: format!(
            "{name}, offered version 2 and answered with it, goes on in version 2"
        ),
        body: bind(&s, move |ctx: Ctx, s| async move {
            proceeds(ctx, s.clone(), |h| {
                h.versions
                    .contains(&2)
                    .then(|| (accepted_entries(2, s.server_role.name()), Version::V2))
            })
            .await
        }),
        ..Case::default()
    });
}

/// Starts the endpoint and accepts its connection taking closeReason (skipped when its hello
/// does not offer it), and reads its first envelope.
async fn taking_close_reason(ctx: &Ctx, s: &Client) -> Result<(Run, Conn), Failure> {
    taking_close_reason_first(ctx, s)
        .await
        .map(|(run, c, _)| (run, c))
}

/// [`taking_close_reason`], returning also the endpoint's first envelope's body.
async fn taking_close_reason_first(
    ctx: &Ctx,
    s: &Client,
) -> Result<(Run, Conn, bytes::Bytes), Failure> {
    let (run, mut c) = (s.start)(ctx.clone()).await?;
    let h = c.read_hello(wait(ctx) * 3).await?;
    crate::kit::closes::accept_taking_close_reason(
        ctx,
        &mut c,
        &h,
        &[Version::V1, Version::V2],
        "suite",
    )
    .await?;
    let first = c
        .frame_body(wait(ctx), "the endpoint's first envelope")
        .await?;
    if s.role == Role::Worker {
        // A worker not registered soon tries again on a new connection, closing this one: it
        // is registered, and the case goes on just after a heartbeat, the worker then quiet.
        let given = run.given;
        let at = sparkwire::messages::Addr::new(given.ip().to_string(), i32::from(given.port()));
        let registered = D::RegisteredWorker(sparkwire::messages::deploy::RegisteredWorker::new(
            sparkwire::messages::EndpointRef::at(at.clone(), "Master"),
            "http://127.0.0.1:8080".into(),
            at,
            false,
        ));
        c.send(&sparkwire::wire::Envelope::Send(registered)).await?;
        c.expect::<D, ()>(wait(ctx), "a Heartbeat once registered", |e| {
            matches!(e, sparkwire::wire::Envelope::Send(D::Heartbeat(_))).then_some(())
        })
        .await?;
    }
    Ok((run, c, first))
}

/// Sends the endpoint, once it sent its first envelope, a close envelope of `reason`'s fields,
/// and expects it to close, sending nothing more (SPEC §8.1).
async fn told_to_close(ctx: Ctx, s: Client, reason: &[(&'static str, Vec<u8>)]) -> Outcome {
    let (_run, mut c) = taking_close_reason(&ctx, &s).await?;
    c.send_frame(&mp::arr(&[mp::u(4), mp::map(reason)])).await?;
    c.expect_closed_silently(
        wait(&ctx),
        "the endpoint closes the connection, sending nothing more",
    )
    .await
}

async fn no_close_envelope_unoffered(ctx: Ctx, s: Client) -> Outcome {
    let (_run, mut c) = (s.start)(ctx.clone()).await?;
    let h = c.read_hello(wait(&ctx) * 3).await?;
    // Taking no feature, with a secret too (the crate's server side takes what it knows).
    crate::kit::closes::accept_with_features(
        &ctx,
        &mut c,
        &h,
        &[Version::V1, Version::V2],
        "suite",
        &[],
    )
    .await?;
    c.frame_body(wait(&ctx), "the endpoint's first envelope")
        .await?;
    let m = mp::map(&[("RegisterBlockManager", mp::map(&[]))]);
    c.send_frame(&mp::arr(&[mp::u(0), m])).await?;
    closed_without_envelope(
        &ctx,
        &mut c,
        "the connection closed with no close envelope (closeReason was not taken)",
    )
    .await
}

async fn no_close_envelope_on_shutdown(ctx: Ctx, s: Client) -> Outcome {
    let (mut run, mut c) = taking_close_reason(&ctx, &s).await?;
    if run.process.is_none() {
        return Err(Failure::Skipped(
            "the endpoint was started by hand: the suite cannot stop it".into(),
        ));
    }
    run.stop(wait(&ctx)).await;
    closed_without_envelope(
        &ctx,
        &mut c,
        "the connection closed at the endpoint's shutdown with no close envelope",
    )
    .await
}

/// The ask id of an ask envelope's body, `[1, id, …]`.
fn ask_id(body: &[u8]) -> Option<u64> {
    let mut cur = body;
    (rmp::decode::read_array_len(&mut cur).ok()? == 3).then_some(())?;
    (rmp::decode::read_int::<u64, _>(&mut cur).ok()? == 1).then_some(())?;
    rmp::decode::read_int::<u64, _>(&mut cur).ok()
}

async fn bad_reply_close_kind(ctx: Ctx, s: Client) -> Outcome {
    let (run, mut c, first) = taking_close_reason_first(&ctx, &s).await?;
    let id = if s.role == Role::Worker {
        // The worker asks only in version 2, ExecutorStateChanged, for an executor it launched.
        if c.version != Some(Version::V2) {
            return Err(Failure::Skipped(
                "the worker does not speak version 2, where ExecutorStateChanged is an ask".into(),
            ));
        }
        let given = run.given;
        let mut desc = crate::kit::master::app_desc(Some(1), 64, None);
        desc.command = sparkwire::messages::Command::new(
            crate::kit::worker::allowed_exec(),
            vec!["20".into()],
            Default::default(),
            vec![],
            vec![],
            vec![],
        );
        let master_url = match ctx.log.wire() {
            crate::env::Wire::Sparkwire => format!("sparkwire://{given}"),
            crate::env::Wire::Spark(_) => format!("spark://{given}"),
        };
        let launch = D::LaunchExecutor(sparkwire::messages::deploy::LaunchExecutor::new(
            master_url,
            "app-20250101120000-0081".into(),
            0,
            0,
            desc,
            1,
            64,
            Default::default(),
        ));
        c.send(&sparkwire::wire::Envelope::Send(launch)).await?;
        c.expect::<D, u64>(wait(&ctx), "the ExecutorStateChanged ask", |e| match e {
            sparkwire::wire::Envelope::Ask {
                id,
                message: D::ExecutorStateChanged(_),
            } => Some(*id),
            _ => None,
        })
        .await?
    } else {
        ask_id(&first).ok_or_else(|| {
            fail(
                "an ask first (RetrieveSparkAppConfig)",
                crate::peer::describe(c.family, &first, c.v()),
            )
        })?
    };
    let two = mp::map(&[("bool", vec![0xc3]), ("int", mp::u(1))]);
    c.send_frame(&mp::arr(&[mp::u(2), mp::u(id), two])).await?;
    let want = "a close envelope of kind BadEnvelope, then the close";
    let reason = crate::kit::server::close_envelope(&ctx, &mut c, want).await?;
    check(reason.kind == "BadEnvelope", want, format!("{reason:?}"))
}

async fn client_unknown_ask_close_kind(ctx: Ctx, s: Client) -> Outcome {
    let (_run, mut c) = taking_close_reason(&ctx, &s).await?;
    c.send_frame(&mp::arr(&[
        mp::u(2),
        mp::u(424_242),
        mp::map(&[("bool", vec![0xc3])]),
    ]))
    .await?;
    let want = "the reply to an ask never made ignored (the connection open), or a close envelope of kind UnknownAsk \
        (or, strictly, RuleViolation) and the close";
    let end = tokio::time::Instant::now() + ctx.settings.quiet;
    let mut last = None;
    loop {
        let left = end.saturating_duration_since(tokio::time::Instant::now());
        match c.next_or_close(left).await {
            // Still open after the quiet time: the reply was ignored.
            None => return Ok(()),
            Some(Event::Frame(b)) => last = Some(b),
            Some(Event::Closed(_)) => {
                return match close_of(last.as_ref()) {
                    Some(r) => check(
                        matches!(r.kind.as_str(), "UnknownAsk" | "RuleViolation"),
                        want,
                        format!("{r:?}"),
                    ),
                    None => Err(fail(want, "a close with no close envelope before it")),
                };
            }
            Some(Event::TooLarge(n)) => {
                return Err(fail(want, format!("a frame declaring {n} bytes")))
            }
        }
    }
}
