//! Cases for an endpoint that listens (a master; a worker's UI port; a driver's executor port):
//! the server's side of the handshake (protocol/handshake.md) and framing after it
//! (protocol/SPEC.md §2–4, 6, 8).

use std::any::Any;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use sparkwire::messages::Version;
use sparkwire::wire::handshake::{Answer, RefusalReason, Role, CLOSE_REASON};
use sparkwire::wire::CloseReason;

use crate::case::{check, fail, Cases, Failure, Level, Outcome};
use crate::env::Ctx;
use crate::mp;
use crate::peer::{auth_entries, frame, Conn, Event, HANDSHAKE_LIMIT};

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

/// A listening endpoint as the shared cases see it.
#[derive(Clone)]
pub struct Server {
    /// How to reach it.
    pub open: Open,
    /// What it is, in requirement texts (`the master`).
    pub name: &'static str,
    /// A client role it takes.
    pub good_role: Role,
    /// A role of the other family, which it refuses.
    pub other_family_role: Role,
    /// The role it declares.
    pub server_role: Role,
    /// An ask it answers with a reply on a connection of `good_role`: name and fields.
    pub probe: RawMessage,
    /// A message of version 2 only, that `good_role` may send it: name and fields.
    pub v2_only: RawMessage,
    /// A local message of its family.
    pub local: &'static str,
    /// A message of its family with a field of the wrong type (name, fields); the field so
    /// mistyped comes first.
    pub bad_fields: RawMessage,
    /// A one-way message of its family, well-formed, that `good_role` may not send it (off its
    /// route, SPEC §14.1): name and fields.
    pub off_route: RawMessage,
}

impl Server {
    fn probe_body(&self, extra: bool) -> Vec<u8> {
        let mut fields = (self.probe.1)();
        if extra {
            fields.push(("zzzAFieldOfALaterRevision", mp::s("ignored")));
        }
        mp::map(&[(self.probe.0, mp::map(&fields))])
    }
}

fn patience(ctx: &Ctx) -> Duration {
    ctx.settings.patience
}

async fn raw(ctx: &Ctx, at: &Listening, role: Role) -> Result<Conn, Failure> {
    Conn::connect(at.addr, "suite", role, &ctx.log).await
}

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

/// Sends a hello body and expects a refusal for `reason` and then a close.
async fn refused(ctx: Ctx, s: Server, body: Vec<u8>, reasons: &[RefusalReason]) -> Outcome {
    let at = (s.open)(ctx.clone()).await?;
    let mut c = raw(&ctx, &at, s.good_role).await?;
    c.send_frame(&body).await?;
    let want = refusal_wanted(reasons);
    match answer(&ctx, &mut c, &body).await? {
        Answer::Refused(r) if reasons.contains(&r.reason) => {}
        other => return Err(fail(want, format!("{other:?}"))),
    }
    c.expect_closed(patience(&ctx), &want).await
}

/// Sends a hello body and expects an acceptance at `version`.
async fn accepted(ctx: Ctx, s: Server, body: Vec<u8>, version: Version) -> Outcome {
    crate::peer::require_version(&ctx.log, version)?;
    let at = (s.open)(ctx.clone()).await?;
    let mut c = raw(&ctx, &at, s.good_role).await?;
    c.send_frame(&body).await?;
    match answer(&ctx, &mut c, &body).await? {
        Answer::Accepted(a) => check(
            a.version == version,
            format!("accepted at version {}", version.number()),
            format!("accepted at version {}", a.version.number()),
        ),
        Answer::Refused(r) => Err(fail(
            format!("accepted at version {}", version.number()),
            format!("refused: {} ({})", r.reason, r.message),
        )),
    }
}

/// The server's answer to the hello `body` the suite sent on `c`, through the proof exchange when
/// the suite knows the endpoint's secret ([`Conn::read_answer_to`]).
async fn answer(ctx: &Ctx, c: &mut Conn, body: &[u8]) -> Result<Answer, Failure> {
    c.read_answer_to(body, ctx.settings.secret.as_ref(), patience(ctx))
        .await
}

/// A hello's entries as the suite writes them by hand: `entries`, and when the suite knows the
/// endpoint's secret, the two that ask to authenticate (protocol/handshake.md §10.1) after them,
/// so that a case about the hello's other keys tests them on a secured endpoint too.
fn signed(
    ctx: &Ctx,
    mut entries: Vec<(&'static str, Vec<u8>)>,
) -> Result<Vec<(&'static str, Vec<u8>)>, Failure> {
    entries.extend(auth_entries(ctx.settings.secret.as_ref())?);
    Ok(entries)
}

/// Sends the suite's hello offering `versions` and expects an acceptance at version 2.
async fn accepts(ctx: Ctx, s: Server, versions: &[u64]) -> Outcome {
    let body = mp::map(&hello(&ctx, &s, versions)?);
    accepted(ctx, s, body, Version::V2).await
}

fn hello(ctx: &Ctx, s: &Server, versions: &[u64]) -> Result<Vec<(&'static str, Vec<u8>)>, Failure> {
    signed(
        ctx,
        mp::hello_entries(versions, s.good_role.name(), "suite"),
    )
}

/// Opens an accepted connection of `good_role` at `version`.
async fn session(
    ctx: &Ctx,
    s: &Server,
    at: &Listening,
    version: Version,
    label: &str,
) -> Result<Conn, Failure> {
    Conn::open(
        at.addr,
        label,
        s.good_role,
        "suite",
        &[version],
        ctx.settings.secret.as_ref(),
        &ctx.log,
        patience(ctx),
    )
    .await
}

/// Asks the probe on `c` and expects a reply (not a failure) to that id.
async fn probe(ctx: &Ctx, s: &Server, c: &mut Conn, id: u64) -> Outcome {
    let body = mp::arr(&[mp::u(1), mp::u(id), s.probe_body(false)]);
    c.send_frame(&body).await?;
    expect_reply(
        ctx,
        c,
        id,
        &format!("a reply to {} (ask id {id})", s.probe.0),
    )
    .await
}

async fn expect_reply(ctx: &Ctx, c: &mut Conn, id: u64, want: &str) -> Outcome {
    let body = c.frame_body(patience(ctx), want).await?;
    // [2, id, …] with the same id; decoded by hand so that any family's reply counts.
    let mut cur = body.as_ref();
    let ok = rmp::decode::read_array_len(&mut cur).ok() == Some(3)
        && rmp::decode::read_int::<u64, _>(&mut cur).ok() == Some(2)
        && rmp::decode::read_int::<u64, _>(&mut cur).ok() == Some(id);
    check(ok, want, crate::peer::describe(c.family, &body, c.v()))
}

/// Opens a connection of `good_role` at version 2 whose hello offers `closeReason`; `None` when
/// the endpoint did not take it (the feature is optional: the case then does not apply).
async fn session_offering_close_reason(
    ctx: &Ctx,
    s: &Server,
    at: &Listening,
) -> Result<Option<Conn>, Failure> {
    let hello = sparkwire::wire::handshake::Hello::new(&[Version::V2], s.good_role, "suite")
        .with_features(&[CLOSE_REASON]);
    let (c, taken) = Conn::open_with(
        at.addr,
        "suite",
        hello,
        ctx.settings.secret.as_ref(),
        &ctx.log,
        patience(ctx),
    )
    .await?;
    Ok(taken.iter().any(|f| f == CLOSE_REASON).then_some(c))
}

/// Reads until the endpoint closes the connection and returns the close envelope that must be
/// its last frame (SPEC §8.1); fails when the last frame is anything else, or there is none.
pub async fn close_envelope(ctx: &Ctx, c: &mut Conn, want: &str) -> Result<CloseReason, Failure> {
    let deadline = tokio::time::Instant::now() + patience(ctx);
    let mut last: Option<Bytes> = None;
    loop {
        let left = deadline.saturating_duration_since(tokio::time::Instant::now());
        match c.next(left).await {
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
                            crate::peer::describe(c.family, &body, c.v())
                        ),
                    )),
                };
            }
            None => {
                return Err(fail(
                    want,
                    format!(
                        "the connection still open after {} ms",
                        patience(ctx).as_millis()
                    ),
                ))
            }
        }
    }
}

/// Sends `body` as one frame after an accepted handshake and expects the connection closed.
async fn closes_after(
    ctx: Ctx,
    s: Server,
    version: Version,
    bytes: Vec<u8>,
    what: &'static str,
) -> Outcome {
    let at = (s.open)(ctx.clone()).await?;
    let mut c = session(&ctx, &s, &at, version, "suite").await?;
    c.send_raw(&bytes, what).await?;
    c.expect_closed(
        patience(&ctx),
        &format!("the connection closed after {what}"),
    )
    .await
}

/// The probe ask (id 5) with an unknown field holding arrays nested so that the frame's value is
/// `levels` deep: the envelope is level 1, the message map 2, the field map 3 (SPEC §11.1).
fn nested_probe(s: &Server, levels: usize) -> Vec<u8> {
    let mut fields = (s.probe.1)();
    fields.push(("zzzNested", mp::nested(levels.saturating_sub(3))));
    mp::arr(&[
        mp::u(1),
        mp::u(5),
        mp::map(&[(s.probe.0, mp::map(&fields))]),
    ])
}

/// The envelope body of message `m` (a `{name: fields}` map) as the definition's kind of `name`
/// says: an ask (id 5) or a send.
fn as_its_kind(name: &str, m: Vec<u8>) -> Vec<u8> {
    let ask = sparkwire::definition::Definition::builtin()
        .messages
        .iter()
        .any(|d| d.name == name && d.kind == sparkwire::definition::MessageKind::Ask);
    if ask {
        mp::arr(&[mp::u(1), mp::u(5), m])
    } else {
        mp::arr(&[mp::u(0), m])
    }
}

/// The shared cases, added to `cases` for the server `s`.
pub fn add(cases: &mut Cases, s: Server) {
    let name = s.name;
    macro_rules! case {
        ($id:expr, $level:expr, $req:expr, |$ctx:ident, $s:ident| $body:expr) => {{
            let server = s.clone();
            cases.add($id, $level, $req, move |$ctx: Ctx| {
                let $s = server.clone();
                async move { $body }
            });
        }};
    }

    // ---- handshake: acceptance and version choice ----
    case!("handshake/4/accepted", Level::Must,
        format!("{name} accepts a well-formed hello of a role it takes; its answer has magic, the version chosen, the versions it speaks (including that one), its role, of the hello's family, and an id"),
        |ctx, s| {
            let at = (s.open)(ctx.clone()).await?;
            let mut c = raw(&ctx, &at, s.good_role).await?;
            let body = mp::map(&hello(&ctx, &s, &[1, 2])?);
            c.send_frame(&body).await?;
            match answer(&ctx, &mut c, &body).await? {
                Answer::Accepted(a) => {
                    check(a.versions.contains(&u64::from(a.version.number())),
                        "the chosen version among the versions the server lists", format!("{a:?}"))?;
                    check(a.role == s.server_role, format!("role {}", s.server_role.name()), a.role.name())
                }
                Answer::Refused(r) => Err(fail("an acceptance", format!("refused: {} ({})", r.reason, r.message))),
            }
        });
    case!(
        "handshake/6/highest-version",
        Level::Must,
        format!(
            "{name} chooses the highest version both sides speak: offered [1, 2], it chooses 2"
        ),
        |ctx, s| accepts(ctx, s, &[1, 2]).await
    );
    case!(
        "handshake/3/versions-any-order",
        Level::Must,
        format!("{name} reads the offered versions in any order: offered [2, 1], it chooses 2"),
        |ctx, s| accepts(ctx, s, &[2, 1]).await
    );
    case!("handshake/6/unknown-versions-ignored", Level::Must,
        format!("{name} ignores version numbers it does not know: offered [7, 2, 4294967296], it chooses 2"),
        |ctx, s| accepts(ctx, s, &[7, 2, 4_294_967_296]).await);
    case!(
        "handshake/6/duplicate-versions-ignored",
        Level::Must,
        format!("{name} ignores duplicate version numbers: offered [2, 2, 1, 1], it chooses 2"),
        |ctx, s| accepts(ctx, s, &[2, 2, 1, 1]).await
    );
    case!("handshake/6/v1-only-peer", Level::Must,
        format!("{name} accepts a version-1-only peer at version 1, or refuses it with noCommonVersion listing versions without 1"),
        |ctx, s| {
            let at = (s.open)(ctx.clone()).await?;
            let mut c = raw(&ctx, &at, s.good_role).await?;
            let body = mp::map(&hello(&ctx, &s, &[1])?);
            c.send_frame(&body).await?;
            match answer(&ctx, &mut c, &body).await? {
                Answer::Accepted(a) => check(a.version == Version::V1, "version 1", format!("version {}", a.version.number())),
                Answer::Refused(r) => check(r.reason == RefusalReason::NoCommonVersion && !r.versions.contains(&1),
                    "noCommonVersion with versions that lack 1", format!("{r:?}")),
            }
        });
    case!("handshake/6/v2-only-peer", Level::Must,
        format!("{name} accepts a version-2-only peer at version 2, or refuses it with noCommonVersion listing versions without 2"),
        |ctx, s| {
            let at = (s.open)(ctx.clone()).await?;
            let mut c = raw(&ctx, &at, s.good_role).await?;
            let body = mp::map(&hello(&ctx, &s, &[2])?);
            c.send_frame(&body).await?;
            match answer(&ctx, &mut c, &body).await? {
                Answer::Accepted(a) => check(a.version == Version::V2, "version 2", format!("version {}", a.version.number())),
                Answer::Refused(r) => check(r.reason == RefusalReason::NoCommonVersion && !r.versions.contains(&2),
                    "noCommonVersion with versions that lack 2", format!("{r:?}")),
            }
        });
    case!(
        "handshake/3/keys-any-order",
        Level::Must,
        format!("{name} accepts the hello's keys in any order (id, role, versions, magic)"),
        |ctx, s| {
            let mut e = hello(&ctx, &s, &[1, 2])?;
            e.reverse();
            accepted(ctx.clone(), s, mp::map(&e), Version::V2).await
        }
    );
    case!(
        "handshake/3/unknown-keys-ignored",
        Level::Must,
        format!("{name} ignores hello keys it does not know"),
        |ctx, s| {
            let mut e = hello(&ctx, &s, &[1, 2])?;
            e.push(("zzzLaterRevisionKey", mp::arr(&[mp::s("x"), mp::u(1)])));
            accepted(ctx.clone(), s, mp::map(&e), Version::V2).await
        }
    );
    case!(
        "handshake/3/empty-id",
        Level::Must,
        format!("{name} accepts a hello whose id is empty"),
        |ctx, s| accepted(
            ctx.clone(),
            s.clone(),
            mp::map(&signed(
                &ctx,
                mp::hello_entries(&[1, 2], s.good_role.name(), "")
            )?),
            Version::V2
        )
        .await
    );
    case!(
        "handshake/1/hello-in-pieces",
        Level::Must,
        format!("{name} reads a hello that arrives in several TCP segments"),
        |ctx, s| {
            let at = (s.open)(ctx.clone()).await?;
            let mut c = raw(&ctx, &at, s.good_role).await?;
            let body = mp::map(&hello(&ctx, &s, &[1, 2])?);
            let bytes = frame(&body);
            c.send_raw(&bytes[..2], "the first 2 bytes of a hello")
                .await?;
            tokio::time::sleep(Duration::from_millis(60)).await;
            c.send_raw(&bytes[2..9], "7 more").await?;
            tokio::time::sleep(Duration::from_millis(60)).await;
            c.send_raw(&bytes[9..], "the rest").await?;
            match answer(&ctx, &mut c, &body).await? {
                Answer::Accepted(_) => Ok(()),
                Answer::Refused(r) => Err(fail("an acceptance", format!("refused: {}", r.reason))),
            }
        }
    );
    case!(
        "handshake/1.1/limit-inclusive",
        Level::Must,
        format!("{name} accepts a hello of exactly 65536 bytes, the pre-handshake limit"),
        |ctx, s| {
            let mut e = signed(&ctx, mp::hello_entries(&[1, 2], s.good_role.name(), ""))?;
            let base = mp::map(&e).len();
            // An id string of n bytes (str32 header: 5 bytes) makes the body exactly 65536.
            let n = 65536 - (base - 1) - 5;
            let mut id = vec![0xdb];
            id.extend_from_slice(&(n as u32).to_be_bytes());
            id.extend(std::iter::repeat_n(b'x', n));
            e[3].1 = id;
            let body = mp::map(&e);
            check(
                body.len() == 65536,
                "a 65536-byte hello",
                format!("{} bytes", body.len()),
            )?;
            accepted(ctx.clone(), s, body, Version::V2).await
        }
    );

    // ---- handshake: refusals ----
    case!("handshake/5/1/oversized-closed", Level::Must,
        format!("{name} closes a connection whose first prefix declares more than 65536 bytes, without waiting for the body"),
        |ctx, s| {
            let at = (s.open)(ctx.clone()).await?;
            let mut c = raw(&ctx, &at, s.good_role).await?;
            c.send_raw(&(HANDSHAKE_LIMIT as u32 + 1).to_be_bytes(), "a prefix declaring 65537 bytes, and no body").await?;
            c.expect_closed(patience(&ctx), "the connection closed").await
        });
    case!("handshake/5/1/oversized-refusal", Level::Should,
        format!("{name} answers a first prefix over 65536 bytes with the refusal frameTooLarge before closing"),
        |ctx, s| {
            let at = (s.open)(ctx.clone()).await?;
            let mut c = raw(&ctx, &at, s.good_role).await?;
            c.send_raw(&(HANDSHAKE_LIMIT as u32 + 1).to_be_bytes(), "a prefix declaring 65537 bytes, and no body").await?;
            match c.read_answer(patience(&ctx)).await? {
                Answer::Refused(r) if r.reason == RefusalReason::FrameTooLarge => Ok(()),
                other => Err(fail("refused: frameTooLarge", format!("{other:?}"))),
            }
        });
    case!("handshake/1.1/http-get", Level::Must,
        format!("{name} closes at once a connection that starts with an HTTP request (its `GET ` reads as a length over 64 KiB)"),
        |ctx, s| {
            let at = (s.open)(ctx.clone()).await?;
            let mut c = raw(&ctx, &at, s.good_role).await?;
            c.send_raw(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n", "an HTTP request").await?;
            c.expect_closed(patience(&ctx), "the connection closed").await
        });
    case!(
        "handshake/5/2/bad-magic",
        Level::Must,
        format!(
            "{name} refuses a hello whose magic is not \"sparkwire\" with badMagic, then closes"
        ),
        |ctx, s| {
            let mut e = hello(&ctx, &s, &[1, 2])?;
            e[0].1 = mp::s("sparkwirf");
            refused(ctx.clone(), s, mp::map(&e), &[RefusalReason::BadMagic]).await
        }
    );
    case!(
        "handshake/5/2/no-magic",
        Level::Must,
        format!("{name} refuses a hello map without magic with badMagic, then closes"),
        |ctx, s| {
            let e = hello(&ctx, &s, &[1, 2])?;
            refused(ctx.clone(), s, mp::map(&e[1..]), &[RefusalReason::BadMagic]).await
        }
    );
    case!("handshake/5/2/not-a-map", Level::Must,
        format!("{name} refuses a first frame that is a MessagePack array, not a map, with badMagic, then closes"),
        |ctx, s| refused(ctx.clone(), s, mp::arr(&[mp::s("magic"), mp::s("sparkwire")]), &[RefusalReason::BadMagic]).await);
    case!("handshake/5/2/not-msgpack", Level::Must,
        format!("{name} refuses a first frame that is not MessagePack (the reserved byte 0xc1) with badMagic, then closes"),
        |ctx, s| refused(ctx.clone(), s, vec![0xc1, 0xc1, 0xc1], &[RefusalReason::BadMagic]).await);
    case!(
        "handshake/5/2/non-string-key",
        Level::Must,
        format!("{name} refuses a hello map with an integer key with badMagic, then closes"),
        |ctx, s| {
            let mut body = mp::map(&hello(&ctx, &s, &[1, 2])?);
            body[0] += 1;
            body.extend_from_slice(&mp::u(7));
            body.extend_from_slice(&mp::u(1));
            refused(ctx.clone(), s, body, &[RefusalReason::BadMagic]).await
        }
    );
    for (key, idx) in [("versions", 1usize), ("role", 2), ("id", 3)] {
        case!(
            format!("handshake/5/3/missing-{key}"),
            Level::Must,
            format!("{name} refuses a hello without `{key}` with malformedHello, then closes"),
            |ctx, s| {
                let mut e = hello(&ctx, &s, &[1, 2])?;
                e.remove(idx);
                refused(
                    ctx.clone(),
                    s,
                    mp::map(&e),
                    &[RefusalReason::MalformedHello],
                )
                .await
            }
        );
    }
    case!(
        "handshake/5/3/versions-wrong-type",
        Level::Must,
        format!(
            "{name} refuses a hello whose `versions` is a string with malformedHello, then closes"
        ),
        |ctx, s| {
            let mut e = hello(&ctx, &s, &[1, 2])?;
            e[1].1 = mp::s("1,2");
            refused(
                ctx.clone(),
                s,
                mp::map(&e),
                &[RefusalReason::MalformedHello],
            )
            .await
        }
    );
    case!(
        "handshake/5/3/role-wrong-type",
        Level::Must,
        format!(
            "{name} refuses a hello whose `role` is an integer with malformedHello, then closes"
        ),
        |ctx, s| {
            let mut e = hello(&ctx, &s, &[1, 2])?;
            e[2].1 = mp::u(3);
            refused(
                ctx.clone(),
                s,
                mp::map(&e),
                &[RefusalReason::MalformedHello],
            )
            .await
        }
    );
    case!(
        "handshake/3/duplicate-key",
        Level::Must,
        format!(
            "{name} refuses a hello in which a key appears twice with malformedHello, then closes"
        ),
        |ctx, s| {
            let mut e = hello(&ctx, &s, &[1, 2])?;
            e.push(("role", mp::s(s.good_role.name())));
            refused(
                ctx.clone(),
                s,
                mp::map(&e),
                &[RefusalReason::MalformedHello],
            )
            .await
        }
    );
    case!(
        "handshake/5/6/unknown-role",
        Level::Must,
        format!("{name} refuses a role it does not know with roleNotAccepted, then closes"),
        |ctx, s| refused(
            ctx.clone(),
            s,
            mp::map(&signed(
                &ctx,
                mp::hello_entries(&[1, 2], "spark-history-server", "x")
            )?),
            &[RefusalReason::RoleNotAccepted]
        )
        .await
    );
    case!("handshake/7/other-family-role", Level::Must,
        format!("{name} refuses a role whose family it does not serve on this connection with roleNotAccepted, then closes"),
        |ctx, s| refused(ctx.clone(), s.clone(), mp::map(&signed(&ctx, mp::hello_entries(&[1, 2], s.other_family_role.name(), "x"))?), &[RefusalReason::RoleNotAccepted]).await);
    case!("handshake/5/7/no-common-version", Level::Must,
        format!("{name} refuses a hello offering only versions it does not speak with noCommonVersion listing the versions it speaks, then closes"),
        |ctx, s| {
            let at = (s.open)(ctx.clone()).await?;
            let mut c = raw(&ctx, &at, s.good_role).await?;
            let body = mp::map(&hello(&ctx, &s, &[9, 10])?);
            c.send_frame(&body).await?;
            match answer(&ctx, &mut c, &body).await? {
                Answer::Refused(r) if r.reason == RefusalReason::NoCommonVersion => {
                    check(!r.versions.is_empty() && !r.versions.iter().any(|v| *v == 9 || *v == 10),
                        "the versions the server speaks", format!("{:?}", r.versions))?;
                }
                other => return Err(fail("refused: noCommonVersion", format!("{other:?}"))),
            }
            c.expect_closed(patience(&ctx), "the connection closed after the refusal").await
        });
    case!("handshake/5/3/malformed-and-unknown-role", Level::Must,
        format!("{name} refuses a hello with an unknown role and no `id` at step 3, with malformedHello or roleNotAccepted (handshake.md §5: \"anything else wrong with the map is step 3 (a role name the server does not know at all is refused with `roleNotAccepted` already there)\"; the text orders neither), then closes"),
        |ctx, s| {
            let mut e = signed(&ctx, mp::hello_entries(&[1, 2], "spark-history-server", "x"))?;
            e.remove(3);
            refused(ctx.clone(), s, mp::map(&e), &[RefusalReason::MalformedHello, RefusalReason::RoleNotAccepted]).await
        });
    case!("handshake/5/4/auth-presence", Level::Must,
        format!("{name} checks step 4 of handshake.md §5, \"a server with a secret: the hello has `auth` and `nonce`; a server without one: it has neither\": without a secret it refuses a hello asking to authenticate with authNotConfigured (§10.2), holding one it refuses a hello that does not with authRequired; then it closes"),
        |ctx, s| {
            let body = if ctx.settings.secret.is_some() {
                mp::map(&mp::hello_entries(&[1, 2], s.good_role.name(), "no-auth"))
            } else {
                let mut e = mp::hello_entries(&[1, 2], s.good_role.name(), "auth");
                e.push(("auth", mp::s("hmac-sha256")));
                e.push(("nonce", mp::bin(&[7u8; 32])));
                mp::map(&e)
            };
            let reason = if ctx.settings.secret.is_some() { RefusalReason::AuthRequired } else { RefusalReason::AuthNotConfigured };
            refused(ctx.clone(), s, body, &[reason]).await
        });
    type Entries = Vec<(&'static str, Vec<u8>)>;
    let malformed_auth: [(&str, &str, Entries); 3] = [
        (
            "auth-without-nonce",
            "`auth` and no `nonce`",
            vec![("auth", mp::s("hmac-sha256"))],
        ),
        (
            "nonce-without-auth",
            "`nonce` and no `auth`",
            vec![("nonce", mp::bin(&[9u8; 32]))],
        ),
        (
            "other-mechanism",
            "the mechanism hmac-md5",
            vec![("auth", mp::s("hmac-md5")), ("nonce", mp::bin(&[9u8; 32]))],
        ),
    ];
    for (what, desc, extra) in malformed_auth {
        let server = s.clone();
        cases.add(
            format!("handshake/5/3/{what}"),
            Level::Must,
            format!("{name} refuses a hello with {desc} with malformedHello (handshake.md §10.2, \"A hello with only one of `auth` and `nonce`, or another mechanism than `hmac-sha256`, is `malformedHello`\"; step 3 comes before step 4), then closes"),
            move |ctx: Ctx| {
                let s = server.clone();
                let extra = extra.clone();
                async move {
                    let mut e = mp::hello_entries(&[1, 2], s.good_role.name(), "auth");
                    e.extend(extra);
                    refused(ctx.clone(), s, mp::map(&e), &[RefusalReason::MalformedHello]).await
                }
            },
        );
    }
    case!("handshake/5/order/role-before-version", Level::Must,
        format!("{name} checks in order: a hello with an unknown role and no common version is roleNotAccepted (check 6 before 7)"),
        |ctx, s| refused(ctx.clone(), s, mp::map(&signed(&ctx, mp::hello_entries(&[9], "spark-history-server", "x"))?), &[RefusalReason::RoleNotAccepted]).await);
    case!(
        "handshake/1/trailing-bytes",
        Level::Must,
        format!(
            "{name} refuses a hello frame with bytes after its one MessagePack value, then closes"
        ),
        |ctx, s| {
            let mut body = mp::map(&hello(&ctx, &s, &[1, 2])?);
            body.push(0xc0);
            refused(
                ctx,
                s,
                body,
                &[RefusalReason::BadMagic, RefusalReason::MalformedHello],
            )
            .await
        }
    );
    case!(
        "handshake/2/truncated-hello",
        Level::Must,
        format!("{name} does not accept a hello cut short by the end of the stream"),
        |ctx, s| {
            let at = (s.open)(ctx.clone()).await?;
            let mut c = raw(&ctx, &at, s.good_role).await?;
            let bytes = frame(&mp::map(&hello(&ctx, &s, &[1, 2])?));
            c.send_raw(
                &bytes[..bytes.len() - 3],
                "a hello missing its last 3 bytes",
            )
            .await?;
            c.shutdown_write().await;
            match c.next(patience(&ctx)).await {
                Some(Event::Closed(_)) => Ok(()),
                Some(Event::Frame(b)) => match sparkwire::wire::handshake::decode_answer(&b) {
                    Ok(Answer::Accepted(_)) => Err(fail("no acceptance", "accepted")),
                    _ => {
                        c.expect_closed(patience(&ctx), "the connection closed")
                            .await
                    }
                },
                Some(Event::TooLarge(n)) => Err(fail(
                    "the connection closed",
                    format!("a prefix of {n} bytes"),
                )),
                None => Err(fail("the connection closed", "still open")),
            }
        }
    );
    case!("handshake/9/others-unaffected", Level::Must,
        format!("a failed handshake ends only its own connection: {name} goes on serving a connection opened before it"),
        |ctx, s| {
            let at = (s.open)(ctx.clone()).await?;
            let mut good = session(&ctx, &s, &at, Version::V2, "good").await?;
            let mut bad = Conn::connect(at.addr, "bad", s.good_role, &ctx.log).await?;
            bad.send_raw(b"\x00\x00\x00\x03\xc1\xc1\xc1", "a hello that is not MessagePack").await?;
            bad.expect_closed(patience(&ctx), "the bad connection closed").await?;
            probe(&ctx, &s, &mut good, 77).await
        });

    // ---- framing after the handshake ----
    case!("spec/2/size-limit", Level::Must,
        format!("{name} closes a connection on which a frame's prefix declares more than its frame limit (here 4 GiB - 1), without waiting for the body"),
        |ctx, s| closes_after(ctx, s, Version::V2, u32::MAX.to_be_bytes().to_vec(), "a prefix declaring 4294967295 bytes").await);
    case!("spec/2/truncated-frame", Level::Must,
        format!("{name} closes a connection that ends inside a frame, and does not act on the partial frame"),
        |ctx, s| {
            let at = (s.open)(ctx.clone()).await?;
            let mut c = session(&ctx, &s, &at, Version::V2, "suite").await?;
            let f = frame(&mp::arr(&[mp::u(1), mp::u(5), s.probe_body(false)]));
            c.send_raw(&f[..f.len() - 2], "an ask missing its last 2 bytes").await?;
            c.shutdown_write().await;
            match c.next(patience(&ctx)).await {
                Some(Event::Closed(_)) => Ok(()),
                Some(Event::Frame(b)) => Err(fail("the connection closed, no answer", crate::peer::describe(c.family, &b, c.v()))),
                Some(Event::TooLarge(n)) => Err(fail("the connection closed", format!("a prefix of {n}"))),
                None => Err(fail("the connection closed", "still open")),
            }
        });
    case!("spec/2/trailing-bytes", Level::Must,
        format!("{name} refuses a frame with bytes after its one value (TrailingBytes) and closes the connection"),
        |ctx, s| {
            let mut body = mp::arr(&[mp::u(1), mp::u(5), s.probe_body(false)]);
            body.push(0xc0);
            closes_after(ctx, s, Version::V2, frame(&body), "an ask with a trailing nil").await
        });
    case!("spec/2/nesting-depth", Level::Must,
        format!("{name} refuses a frame nested 65 levels deep, the envelope counted, even inside a field it skips (SPEC §2, \"A decoder MUST accept 64 levels and refuse 65 (`TooDeep`), even inside a field it skips\"), and closes the connection: an ask it answers otherwise"),
        |ctx, s| closes_after(ctx, s.clone(), Version::V2, frame(&nested_probe(&s, 65)), "the probe ask, 65 levels deep in an unknown field").await);
    case!("spec/2/nesting-64-accepted", Level::Must,
        format!("{name} accepts a frame nested 64 levels deep, the envelope counted, inside a field it skips (SPEC §2, \"A decoder MUST accept 64 levels\"), and answers the ask"),
        |ctx, s| {
            let at = (s.open)(ctx.clone()).await?;
            let mut c = session(&ctx, &s, &at, Version::V2, "suite").await?;
            c.send_frame(&nested_probe(&s, 64)).await?;
            expect_reply(&ctx, &mut c, 5, "a reply to the probe ask (id 5), 64 levels deep").await
        });
    case!("spec/2/nesting-1000", Level::Must,
        format!("{name} refuses a frame nested 1,000 levels deep inside a field it skips (SPEC §2, `TooDeep`), and closes the connection"),
        |ctx, s| closes_after(ctx, s.clone(), Version::V2, frame(&nested_probe(&s, 1000)), "the probe ask, 1000 levels deep in an unknown field").await);
    case!(
        "spec/2/extension-type",
        Level::Must,
        format!(
            "{name} refuses a frame holding a MessagePack extension type and closes the connection"
        ),
        |ctx, s| {
            let body = mp::arr(&[
                mp::u(1),
                mp::u(5),
                mp::map(&[(s.probe.0, mp::map(&[("x", vec![0xd4, 0x01, 0x00])]))]),
            ]);
            closes_after(ctx, s, Version::V2, frame(&body), "an ask holding fixext 1").await
        }
    );
    case!(
        "spec/2/reserved-marker",
        Level::Must,
        format!(
            "{name} refuses a frame holding the reserved marker 0xc1 and closes the connection"
        ),
        |ctx, s| closes_after(ctx, s, Version::V2, frame(&[0x92, 0x00, 0xc1]), "[0, 0xc1]").await
    );
    case!("spec/2/count-past-end", Level::Must,
        format!("{name} refuses an array declaring more elements than the frame holds, without allocating for them, and closes the connection"),
        |ctx, s| closes_after(ctx, s, Version::V2, frame(&[0xdd, 0xff, 0xff, 0xff, 0xff, 0x00]), "an array declaring 4294967295 elements in 6 bytes").await);
    case!("spec/3/bad-envelope-tag", Level::Must,
        format!("{name} refuses an envelope whose first element is not 0–3 (BadEnvelope) and closes the connection"),
        |ctx, s| {
            let body = mp::arr(&[mp::u(4), mp::u(5), s.probe_body(false)]);
            closes_after(ctx, s, Version::V2, frame(&body), "an envelope tagged 4").await
        });
    case!("spec/3/bad-envelope-length", Level::Must,
        format!("{name} refuses an envelope of the wrong length for its form (an ask without a message) and closes the connection"),
        |ctx, s| closes_after(ctx, s, Version::V2, frame(&mp::arr(&[mp::u(1), mp::u(5)])), "[1, 5]").await);
    case!("spec/3/envelope-not-array", Level::Must,
        format!("{name} refuses a frame whose value is not an array (BadEnvelope) and closes the connection"),
        |ctx, s| closes_after(ctx, s.clone(), Version::V2, frame(&s.probe_body(false)), "a bare message, no envelope").await);
    case!("spec/3/message-not-one-entry-map", Level::Must,
        format!("{name} refuses a message that is not a one-entry map (BadEnvelope) and closes the connection"),
        |ctx, s| {
            let m = mp::map(&[(s.probe.0, mp::map(&(s.probe.1)())), ("Other", mp::map(&[]))]);
            closes_after(ctx, s, Version::V2, frame(&mp::arr(&[mp::u(1), mp::u(5), m])), "an ask whose message map has 2 entries").await
        });
    case!("spec/4/unknown-message", Level::Must,
        format!("{name} refuses a message name its family does not have (UnknownMessage) and closes the connection"),
        |ctx, s| {
            let m = mp::map(&[("RegisterBlockManager", mp::map(&[]))]);
            closes_after(ctx, s, Version::V2, frame(&mp::arr(&[mp::u(0), m])), "a send of RegisterBlockManager").await
        });
    case!("spec/4/not-in-version", Level::Must,
        format!("{name} refuses, on a version 1 connection, a message only version 2 has (NotInVersion) and closes the connection"),
        |ctx, s| {
            let at = (s.open)(ctx.clone()).await?;
            let mut c = match session(&ctx, &s, &at, Version::V1, "suite").await {
                Ok(c) => c,
                Err(_) => return Err(Failure::Skipped("the endpoint does not speak version 1".into())),
            };
            let m = mp::map(&[(s.v2_only.0, mp::map(&(s.v2_only.1)()))]);
            c.send_raw(&frame(&mp::arr(&[mp::u(1), mp::u(5), m])), "an ask of a version 2 message").await?;
            c.expect_closed(patience(&ctx), "the connection closed").await
        });
    case!("spec/6/local-message", Level::Must,
        format!("{name} refuses a local message on a connection (LocalMessage) and closes the connection"),
        |ctx, s| {
            let m = mp::map(&[(s.local, mp::map(&[]))]);
            closes_after(ctx, s.clone(), Version::V2, frame(&mp::arr(&[mp::u(0), m])), "a send of a local message").await
        });
    // Only where the message is on its route from `good_role` (a worker's UI takes no message
    // with fields: its decoder is checked on its master's connection, spec/11/live/…).
    let on_route = sparkwire::definition::Definition::builtin()
        .messages
        .iter()
        .any(|d| {
            d.name == s.bad_fields.0
                && d.from.iter().any(|r| r == s.good_role.name())
                && d.to.iter().any(|r| r == s.server_role.name())
        });
    if on_route {
        case!("spec/4/invalid-fields", Level::Must,
        format!("{name} refuses a message with a field of the wrong type (SPEC §4, \"refuses ... a value of the wrong type ... (`InvalidFields`)\") and closes the connection: a message the peer's role may send it, as its kind says (SPEC §14.1), so that only the field is wrong"),
        |ctx, s| {
            let m = mp::map(&[(s.bad_fields.0, mp::map(&(s.bad_fields.1)()))]);
            closes_after(ctx, s.clone(), Version::V2, frame(&as_its_kind(s.bad_fields.0, m)), "a message with a mistyped field").await
        });
    }
    case!("spec/8.1/close-reason-decoding", Level::Must,
        format!("{name}, having taken closeReason in the handshake, sends a close envelope of kind InvalidFields, with the mistyped field's path and an offset, as its last frame before it closes a connection for a message with a field of the wrong type"),
        |ctx, s| {
            let at = (s.open)(ctx.clone()).await?;
            let Some(mut c) = session_offering_close_reason(&ctx, &s, &at).await? else {
                return Err(Failure::Skipped("the endpoint does not take closeReason".into()));
            };
            let fields = (s.bad_fields.1)();
            let field = fields.first().map_or("", |(name, _)| *name);
            let m = mp::map(&[(s.bad_fields.0, mp::map(&fields))]);
            c.send_frame(&as_its_kind(s.bad_fields.0, m)).await?;
            let want = format!("a close envelope of kind InvalidFields at {field}, then the close");
            let reason = close_envelope(&ctx, &mut c, &want).await?;
            check(
                reason.kind == "InvalidFields"
                    && reason.path.as_deref().is_some_and(|p| p.contains(field))
                    && reason.offset.is_some(),
                want,
                format!("{reason:?}"),
            )
        });
    case!("spec/8.1/close-reason-refusal", Level::Must,
        format!("{name}, having taken closeReason in the handshake, sends a close envelope of kind NotOnRoute (or, validating rules.md, RuleViolation) as its last frame before it closes a connection for a one-way message off its route (SPEC §14.3)"),
        |ctx, s| {
            let at = (s.open)(ctx.clone()).await?;
            let Some(mut c) = session_offering_close_reason(&ctx, &s, &at).await? else {
                return Err(Failure::Skipped("the endpoint does not take closeReason".into()));
            };
            let m = mp::map(&[(s.off_route.0, mp::map(&(s.off_route.1)()))]);
            c.send_frame(&mp::arr(&[mp::u(0), m])).await?;
            let want = format!("a close envelope of kind NotOnRoute or RuleViolation after a {} from a {}", s.off_route.0, s.good_role.name());
            let reason = close_envelope(&ctx, &mut c, &want).await?;
            check(
                matches!(reason.kind.as_str(), "NotOnRoute" | "RuleViolation") && !reason.message.is_empty(),
                want,
                format!("{reason:?}"),
            )
        });
    case!("spec/4.1/fields-as-array", Level::Must,
        format!("{name} refuses a message whose fields are written as an array instead of a map (InvalidFields) and closes the connection"),
        |ctx, s| {
            let fields: Vec<Vec<u8>> = (s.probe.1)().into_iter().map(|(_, v)| v).collect();
            let m = mp::map(&[(s.probe.0, mp::arr(&fields))]);
            closes_after(ctx, s, Version::V2, frame(&mp::arr(&[mp::u(1), mp::u(5), m])), "an ask with its fields as an array").await
        });
    case!(
        "spec/4/unknown-field-skipped",
        Level::Must,
        format!("{name} skips a field it does not know (a later revision's) and answers the ask"),
        |ctx, s| {
            let at = (s.open)(ctx.clone()).await?;
            let mut c = session(&ctx, &s, &at, Version::V2, "suite").await?;
            c.send_frame(&mp::arr(&[mp::u(1), mp::u(9), s.probe_body(true)]))
                .await?;
            expect_reply(&ctx, &mut c, 9, "a reply to the ask (id 9)").await
        }
    );
    case!(
        "spec/3/ask-id-u64",
        Level::Must,
        format!("{name} answers an ask whose id is 2^64 - 1 with that id"),
        |ctx, s| {
            let at = (s.open)(ctx.clone()).await?;
            let mut c = session(&ctx, &s, &at, Version::V2, "suite").await?;
            probe(&ctx, &s, &mut c, u64::MAX).await
        }
    );
    case!(
        "spec/3/reply-once",
        Level::Must,
        format!("{name} answers an ask exactly once"),
        |ctx, s| {
            let at = (s.open)(ctx.clone()).await?;
            let mut c = session(&ctx, &s, &at, Version::V2, "suite").await?;
            probe(&ctx, &s, &mut c, 3).await?;
            let quiet = ctx.settings.quiet;
            match c.next(quiet).await {
                None | Some(Event::Closed(_)) => Ok(()),
                Some(Event::Frame(b)) => {
                    let mut cur = b.as_ref();
                    let again = rmp::decode::read_array_len(&mut cur).ok() == Some(3)
                        && matches!(rmp::decode::read_int::<u64, _>(&mut cur), Ok(2) | Ok(3))
                        && rmp::decode::read_int::<u64, _>(&mut cur).ok() == Some(3);
                    check(!again, "no second answer to ask 3", "a second answer")
                }
                Some(Event::TooLarge(n)) => Err(fail("nothing more", format!("a prefix of {n}"))),
            }
        }
    );
    case!(
        "spec/3/id-reuse-after-reply",
        Level::Must,
        format!("{name} answers an ask that reuses the id of an ask already answered"),
        |ctx, s| {
            let at = (s.open)(ctx.clone()).await?;
            let mut c = session(&ctx, &s, &at, Version::V2, "suite").await?;
            probe(&ctx, &s, &mut c, 4).await?;
            probe(&ctx, &s, &mut c, 4).await
        }
    );
    case!(
        "spec/3/asks-answered-by-id",
        Level::Must,
        format!("{name} answers several asks sent back to back, each with its own id"),
        |ctx, s| {
            let at = (s.open)(ctx.clone()).await?;
            let mut c = session(&ctx, &s, &at, Version::V2, "suite").await?;
            let mut bytes = Vec::new();
            for id in [11u64, 12, 13] {
                bytes.extend(frame(&mp::arr(&[mp::u(1), mp::u(id), s.probe_body(false)])));
            }
            c.send_raw(&bytes, "three asks in one write (ids 11, 12, 13)")
                .await?;
            let mut got = Vec::new();
            for _ in 0..3 {
                let b = c.frame_body(patience(&ctx), "three replies").await?;
                let mut cur = b.as_ref();
                let _ = rmp::decode::read_array_len(&mut cur);
                let tag = rmp::decode::read_int::<u64, _>(&mut cur).unwrap_or(99);
                let id = rmp::decode::read_int::<u64, _>(&mut cur).unwrap_or(0);
                check(
                    tag == 2,
                    "a reply",
                    crate::peer::describe(c.family, &b, c.v()),
                )?;
                got.push(id);
            }
            got.sort_unstable();
            check(
                got == [11, 12, 13],
                "replies to 11, 12 and 13",
                format!("replies to {got:?}"),
            )
        }
    );
    case!("spec/3/unknown-reply", Level::Must,
        format!("{name} does not take a reply to an ask it never sent as an answer to anything: it closes the connection or ignores it and goes on serving"),
        |ctx, s| {
            let at = (s.open)(ctx.clone()).await?;
            let mut c = session(&ctx, &s, &at, Version::V2, "suite").await?;
            c.send_frame(&mp::arr(&[mp::u(2), mp::u(424242), mp::map(&[("bool", vec![0xc3])])])).await?;
            let body = mp::arr(&[mp::u(1), mp::u(6), s.probe_body(false)]);
            c.send_frame(&body).await?;
            match c.next(patience(&ctx)).await {
                Some(Event::Closed(_)) => Ok(()),
                Some(Event::Frame(b)) => {
                    let mut cur = b.as_ref();
                    let ok = rmp::decode::read_array_len(&mut cur).ok() == Some(3)
                        && rmp::decode::read_int::<u64, _>(&mut cur).ok() == Some(2)
                        && rmp::decode::read_int::<u64, _>(&mut cur).ok() == Some(6);
                    check(ok, "a close, or the reply to ask 6", crate::peer::describe(c.family, &b, c.v()))
                }
                other => Err(fail("a close, or the reply to ask 6", format!("{other:?}"))),
            }
        });
    case!("spec/8/others-unaffected", Level::Must,
        format!("a decoding error ends only its own connection: {name} goes on serving its other connections"),
        |ctx, s| {
            let at = (s.open)(ctx.clone()).await?;
            let mut good = session(&ctx, &s, &at, Version::V2, "good").await?;
            let mut bad = session(&ctx, &s, &at, Version::V2, "bad").await?;
            bad.send_raw(&frame(&[0x92, 0x00, 0xc1]), "[0, 0xc1]").await?;
            bad.expect_closed(patience(&ctx), "the bad connection closed").await?;
            probe(&ctx, &s, &mut good, 78).await
        });
}
