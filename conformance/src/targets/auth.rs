//! Authentication with a shared secret (protocol/handshake.md §10, protocol/SPEC.md §13): what
//! an endpoint configured with a secret must do, as a server (a master; a worker on its port; a
//! driver on its executor port) and as a client (an executor, to its driver). The cases run when
//! the suite is given the same secret (`--secret-file`) and are skipped otherwise; with a secret
//! the suite authenticates the other connections these cases need (as the endpoint's master when
//! it registers, to ask its state, as an executor's worker), so an endpoint's state can be
//! checked after a refusal. The other cases of a target run against the same secured endpoint:
//! with the secret, every connection they open or accept authenticates first (`crate::peer`).

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use sparkwire::messages::{DeployMessage as D, Version};
use sparkwire::wire::handshake::{
    client_proof, encode_answer, encode_challenge, encode_hello, encode_proof, frame_bytes,
    read_server_frame, server_proof, Accepted, Answer, Challenge, ClientNext, Hello, Identity,
    Proof, RefusalReason, Role, Secret, NONCE_LEN,
};
use sparkwire::wire::{encode_envelope, Envelope};

use crate::case::{bind, run, Body, Case, Sharing, Target};
use crate::env::{Ctx, Endpoint};
use crate::kit::auth::*;
use crate::kit::client::Start;
use crate::kit::common::{unique, wait};
use crate::kit::master::{register_worker_msg, state};
use crate::kit::server::Listening;
use crate::peer::{Conn, Event};
use crate::verdict::{check, fail, Failure, Level, Outcome};

fn master_addr(ctx: &Ctx) -> Result<SocketAddr, Failure> {
    match &ctx.settings.endpoint {
        Endpoint::Addr(a) => Ok(*a),
        _ => Err(Failure::Skipped("the master target needs --addr".into())),
    }
}

/// A secret that is not the endpoint's (the same bytes and one more).
fn wrong_secret(secret: &Secret) -> Result<Secret, Failure> {
    let mut bytes = secret.expose().to_vec();
    bytes.push(b'!');
    Secret::new(bytes).ok_or_else(|| fail("a non-empty secret", "an empty one"))
}

/// A connection whose authenticated hello the server challenged.
struct Challenged {
    conn: Conn,
    hello: Hello,
    hello_body: Vec<u8>,
    challenge: Bytes,
}

impl Challenged {
    /// The proof of this exchange under `secret`, as a frame body.
    fn proof(&self, secret: &Secret) -> Vec<u8> {
        let proof = Proof {
            proof: client_proof(
                secret,
                &frame_bytes(&self.hello_body),
                &frame_bytes(&self.challenge),
            ),
            admin: None,
        };
        let mut out = Vec::new();
        encode_proof(&proof, &mut out);
        out
    }
}

/// Connects to `addr` as `role`, sends a hello that asks to authenticate and reads the server's
/// first frame, which must be a challenge whose proof verifies with `secret`.
async fn challenged(
    ctx: &Ctx,
    addr: SocketAddr,
    role: Role,
    id: &str,
    secret: &Secret,
) -> Result<Challenged, Failure> {
    let mut conn = Conn::connect(addr, "suite", role, &ctx.log).await?;
    let nonce = crate::peer::nonce()?;
    let hello = Hello::new(&[Version::V2], role, id).with_auth(nonce);
    let mut hello_body = Vec::new();
    encode_hello(&hello, &mut hello_body);
    conn.send_frame(&hello_body).await?;
    let want =
        "a challenge (magic, challenge = hmac-sha256, a 32-byte nonce, a proof of the secret)";
    let challenge = conn.frame_body(wait(ctx), want).await?;
    let local = Identity::new(role, id)
        .with_versions(&[Version::V2])
        .with_secret(Some(secret.clone()));
    match read_server_frame(&challenge, &hello, &hello_body, &local) {
        Ok(ClientNext::SendProof(_)) => Ok(Challenged {
            conn,
            hello,
            hello_body,
            challenge,
        }),
        Ok(ClientNext::Done(_)) => Err(fail(want, "an acceptance without a challenge")),
        Err(e) => Err(fail(want, e.to_string())),
    }
}

/// Expects a refusal for one of `reasons` (or, when `reasons` is empty, any refusal or a close
/// with no answer) and then the connection closed, and no frame that accepts or goes on.
async fn expect_refused(ctx: &Ctx, c: &mut Conn, reasons: &[RefusalReason]) -> Outcome {
    let want = if reasons.is_empty() {
        "a refusal or a close, and nothing accepted".to_string()
    } else {
        crate::kit::server::refusal_wanted(reasons)
    };
    match c.next_or_close(wait(ctx)).await {
        Some(Event::Closed(_)) if reasons.is_empty() => return Ok(()),
        Some(Event::Frame(body)) => match sparkwire::wire::handshake::decode_answer(&body) {
            Ok(Answer::Refused(r)) if reasons.is_empty() || reasons.contains(&r.reason) => {}
            Ok(other) => return Err(fail(want, format!("{other:?}"))),
            Err(_) => {
                return Err(fail(
                    want,
                    crate::peer::describe(c.family, &body, Version::V2),
                ))
            }
        },
        Some(Event::Closed(_)) => return Err(fail(want, "the connection closed with no answer")),
        Some(Event::TooLarge(n)) => return Err(fail(want, format!("a frame declaring {n} bytes"))),
        None => return Err(fail(want, "nothing")),
    }
    c.expect_closed_silently(crate::kit::common::reaction_wait(ctx), &want)
        .await
}

fn register_body(id: &str) -> Result<Vec<u8>, Failure> {
    let mut body = Vec::new();
    encode_envelope(
        &Envelope::Send(register_worker_msg(id, "127.0.0.1", 7, 1, 512)),
        Version::V2,
        &mut body,
    )
    .map_err(|e| fail("an envelope the suite can encode", e.to_string()))?;
    Ok(body)
}

/// Sends `addr` a hello without `auth` and, in the same write, the envelope `body`: the server
/// must refuse with authRequired, close, and answer nothing.
async fn unauthenticated_then(
    ctx: &Ctx,
    addr: SocketAddr,
    role: Role,
    id: &str,
    body: &[u8],
    what: &str,
) -> Outcome {
    let mut c = Conn::connect(addr, "suite", role, &ctx.log).await?;
    let mut hello = Vec::new();
    encode_hello(&Hello::new(&[Version::V2], role, id), &mut hello);
    let mut bytes = frame_bytes(&hello);
    bytes.extend_from_slice(&frame_bytes(body));
    c.send_raw(&bytes, &format!("a hello without auth, then {what}"))
        .await?;
    expect_refused(ctx, &mut c, &[RefusalReason::AuthRequired]).await
}

fn worker_id() -> String {
    format!("worker-20250101120000-127.0.0.1-7-auth{}", unique())
}

/// Fails when the change, a `what`, shows.
async fn unchanged(g: &Guarded, what: &str) -> Outcome {
    let seen = (g.seen)().await?;
    check(
        !seen,
        format!("nothing changed by the {what} sent"),
        format!("the {what} took effect"),
    )
}

/// A body run against the secured server `s`, given the endpoint's secret and the server opened
/// (skipped when the suite was not given the secret).
fn secured<F, Fut>(s: &SecuredServer, body: F) -> Body
where
    F: Fn(Ctx, Secret, Guarded) -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = Outcome> + Send + 'static,
{
    let body = std::sync::Arc::new(body);
    bind(s, move |ctx: Ctx, s: SecuredServer| {
        let body = std::sync::Arc::clone(&body);
        async move {
            let k = secret(&ctx)?;
            let mut g = (s.open)(ctx.clone()).await?;
            // The endpoint runs while its guard lives: kept here to the body's end, whichever
            // parts of `g` the body's closure captures (a copy of its address drops the rest).
            let guard = std::mem::replace(&mut g.at.guard, Box::new(()));
            let outcome = body(ctx, k, g).await;
            drop(guard);
            outcome
        }
    })
}

/// The authentication cases of a server, added to `cs`.
pub fn add_server(cs: &mut Vec<Case>, s: SecuredServer) {
    let (name, what) = (s.name, s.what);
    cs.push(Case {
        id: "handshake/10.2/no-auth-refused".into(),
        level: Level::Must,
        targets: vec![Target::Master, Target::Worker, Target::Driver],
        timeout: Duration::from_secs(10),
        sharing: Sharing::Alone,
        requirement: format!("{name} holding a shared secret refuses a hello that does not ask to authenticate with authRequired, \
            and closes the connection"),
        body: secured(&s, move |ctx: Ctx, _k, g| async move {
            let mut c = Conn::connect(g.at.addr, "suite", g.role, &ctx.log).await?;
            c.send_hello(&Hello::new(&[Version::V2], g.role, "no-auth")).await?;
            expect_refused(&ctx, &mut c, &[RefusalReason::AuthRequired]).await
        }),
        ..Case::default()
    });
    cs.push(Case {
        id: "handshake/10.1/challenge".into(),
        level: Level::Must,
        targets: vec![Target::Master, Target::Worker, Target::Driver],
        timeout: Duration::from_secs(10),
        sharing: Sharing::Alone,
        requirement: format!("{name} holding a shared secret answers a hello that asks to authenticate with a challenge: mechanism \
            hmac-sha256, a 32-byte nonce and a server proof that verifies with the secret over the hello frame"),
        body: secured(&s, move |ctx: Ctx, k, g| async move {
            let c = challenged(&ctx, g.at.addr, g.role, "challenge", &k).await?;
            let nonce = crate::mp::challenge_nonce(&c.challenge);
            check(
                nonce.as_ref().is_some_and(|n| n.len() == NONCE_LEN)
                    && nonce.as_deref() != c.hello.auth.as_ref().map(|n| &n[..]),
                "a nonce of 32 bytes, not the client's",
                format!("{nonce:?}"),
            )
        }),
        ..Case::default()
    });
    cs.push(Case {
        id: "handshake/10.1/fresh-nonce".into(),
        level: Level::Must,
        targets: vec![Target::Master, Target::Worker, Target::Driver],
        timeout: Duration::from_secs(10),
        sharing: Sharing::Alone,
        requirement: format!("{name} draws a new nonce for every handshake: two challenges never carry the same nonce"),
        body: secured(&s, move |ctx: Ctx, k, g| async move {
            let a = challenged(&ctx, g.at.addr, g.role, "nonce", &k).await?;
            let b = challenged(&ctx, g.at.addr, g.role, "nonce", &k).await?;
            let (na, nb) = (crate::mp::challenge_nonce(&a.challenge), crate::mp::challenge_nonce(&b.challenge));
            check(na.is_some() && na != nb, "two different nonces", format!("{na:?} and {nb:?}"))
        }),
        ..Case::default()
    });
    cs.push(Case {
        id: "handshake/10.1/authenticated".into(),
        level: Level::Must,
        targets: vec![Target::Master, Target::Worker, Target::Driver],
        timeout: Duration::from_secs(10),
        sharing: Sharing::Alone,
        requirement: format!("{name} holding a shared secret accepts a peer that proves it, and then takes the {what} it sends \
            (the change shows in its state)"),
        body: secured(&s, move |ctx: Ctx, k, g| async move {
            let mut c = Conn::open_authenticated(g.at.addr, "suite", g.role, "authenticated", &[Version::V2], &k,
                &ctx.log, wait(&ctx)).await?;
            c.send_frame(&g.change).await?;
            let deadline = tokio::time::Instant::now() + wait(&ctx);
            loop {
                if (g.seen)().await? {
                    return Ok(());
                }
                if tokio::time::Instant::now() >= deadline {
                    return Err(fail(format!("the {} of an authenticated peer \
                        taken", what), "no change in the endpoint's state"));
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }),
        ..Case::default()
    });
    cs.push(Case {
        id: "handshake/10.1/wrong-proof-refused".into(),
        level: Level::Must,
        targets: vec![Target::Master, Target::Worker, Target::Driver],
        timeout: Duration::from_secs(10),
        sharing: Sharing::Alone,
        requirement: format!("{name} refuses a client proof made with another secret (a wrong MAC) with authFailed, closes the \
            connection, and takes nothing sent after it (a {what})"),
        body: secured(&s, move |ctx: Ctx, k, g| async move {
            let mut c = challenged(&ctx, g.at.addr, g.role, "wrong-proof", &k).await?;
            let mut bytes = frame_bytes(&c.proof(&wrong_secret(&k)?));
            bytes.extend_from_slice(&frame_bytes(&g.change));
            c.conn.send_raw(&bytes, &format!("a proof made with another secret, then {}", what)).await?;
            expect_refused(&ctx, &mut c.conn, &[RefusalReason::AuthFailed]).await?;
            unchanged(&g, what).await
        }),
        ..Case::default()
    });
    cs.push(Case {
        id: "handshake/10.1/replayed-proof-refused".into(),
        level: Level::Must,
        targets: vec![Target::Master, Target::Worker, Target::Driver],
        timeout: Duration::from_secs(10),
        sharing: Sharing::Alone,
        requirement: format!("{name} refuses with authFailed a proof made for another exchange (one recorded from an earlier \
            connection, under the right secret, so over other nonces), and takes nothing sent after it (a {what})"),
        body: secured(&s, move |ctx: Ctx, k, g| async move {
            let first = challenged(&ctx, g.at.addr, g.role, "replay", &k).await?;
            let mut second = challenged(&ctx, g.at.addr, g.role, "replay", &k).await?;
            let mut bytes = frame_bytes(&first.proof(&k));
            bytes.extend_from_slice(&frame_bytes(&g.change));
            second.conn.send_raw(&bytes, &format!("the first exchange's proof, then {}", what)).await?;
            expect_refused(&ctx, &mut second.conn, &[RefusalReason::AuthFailed]).await?;
            unchanged(&g, what).await
        }),
        ..Case::default()
    });
    cs.push(Case {
        id: "spec/13/nothing-before-proof".into(),
        level: Level::Must,
        targets: vec![Target::Master, Target::Worker, Target::Driver],
        timeout: Duration::from_secs(10),
        sharing: Sharing::Alone,
        requirement: format!("{name} holding a shared secret takes no envelope before the peer's proof: a {what} sent in place of \
            the proof changes nothing and the connection is refused or closed"),
        body: secured(&s, move |ctx: Ctx, k, g| async move {
            let mut c = challenged(&ctx, g.at.addr, g.role, "no-proof", &k).await?;
            c.conn.send_frame(&g.change).await?;
            expect_refused(&ctx, &mut c.conn, &[]).await?;
            unchanged(&g, what).await
        }),
        ..Case::default()
    });
    cs.push(Case {
        id: format!("spec/13/unauthenticated-{}", s.change_case),
        level: Level::Must,
        targets: vec![Target::Master, Target::Worker, Target::Driver],
        timeout: Duration::from_secs(10),
        sharing: Sharing::Alone,
        requirement: format!("{name} holding a shared secret takes nothing from a peer that does not authenticate: a {what} right \
            behind a hello without auth is refused (authRequired) and changes nothing"),
        body: secured(&s, move |ctx: Ctx, _k, g| async move {
            unauthenticated_then(&ctx, g.at.addr, g.role, "no-auth", &g.change, what).await?;
            unchanged(&g, what).await
        }),
        ..Case::default()
    });
}

/// The authentication cases of the master target.
pub fn add(cs: &mut Vec<Case>) {
    add_server(
        cs,
        SecuredServer {
            open: Arc::new(|ctx: Ctx| {
                Box::pin(async move {
                    let addr = master_addr(&ctx)?;
                    let id = worker_id();
                    let change = register_body(&id)?;
                    let seen: Seen = Arc::new(move || {
                        let (ctx, id) = (ctx.clone(), id.clone());
                        Box::pin(async move {
                            Ok(state(&ctx).await?.workers.iter().any(|w| w.id == id))
                        })
                    });
                    Ok(Guarded {
                        at: Listening {
                            addr,
                            guard: Box::new(()),
                        },
                        role: Role::Worker,
                        change,
                        seen,
                    })
                })
            }),
            name: "a master",
            what: "RegisterWorker",
            change_case: "register",
        },
    );
    cs.push(Case {
        id: "spec/13/unauthenticated-ui-kill".into(),
        level: Level::Must,
        targets: vec![Target::Master],
        timeout: Duration::from_secs(10),
        sharing: Sharing::Alone,
        requirement: "a master holding a shared secret takes no state-changing ask from an unauthenticated ui peer: \
            RequestKillAllDrivers behind a hello without auth gets no reply, only a refusal and a close".into(),
        body: run(|ctx: Ctx| async move {
            secret(&ctx)?;
            let mut ask = Vec::new();
            encode_envelope(
                &Envelope::Ask {
                    id: 1,
                    message: D::RequestKillAllDrivers(
                        sparkwire::messages::deploy::RequestKillAllDrivers::new(),
                    ),
                },
                Version::V2,
                &mut ask,
            )
            .map_err(|e| fail("an envelope the suite can encode", e.to_string()))?;
            unauthenticated_then(&ctx, master_addr(&ctx)?, Role::Ui, "", &ask, "RequestKillAllDrivers").await
        }),
        ..Case::default()
    });
}

// ---- a client holding the secret (the suite is its server) ----

/// Reads the client's hello, which must ask to authenticate; returns it and its frame.
async fn authenticating_hello(ctx: &Ctx, c: &mut Conn) -> Result<(Hello, Vec<u8>), Failure> {
    let hello = c.read_hello(wait(ctx) * 3).await?;
    check(
        hello.auth.is_some(),
        "a hello that asks to authenticate (auth = hmac-sha256, a 32-byte nonce)",
        "a hello without auth: the endpoint does not prove its secret",
    )?;
    Ok((hello, c.hello_frame()))
}

/// A challenge with a fresh nonce whose proof is made with `secret` over `hello_frame`.
fn challenge_body(secret: &Secret, hello_frame: &[u8]) -> Result<Vec<u8>, Failure> {
    let nonce = crate::peer::nonce()?;
    let mut out = Vec::new();
    encode_challenge(
        &Challenge {
            nonce,
            proof: server_proof(secret, hello_frame, &nonce),
        },
        &mut out,
    );
    Ok(out)
}

/// Starts the client, reads its hello, answers with `answer` (given the secret and the hello's
/// frame) and expects the client to close the connection without sending anything.
async fn client_closes(
    ctx: Ctx,
    start: Start,
    answer: impl FnOnce(&Secret, &Hello, &[u8]) -> Result<Vec<u8>, Failure>,
    what: &str,
) -> Outcome {
    let k = secret(&ctx)?;
    let (_run, mut c) = start(ctx.clone()).await?;
    let (hello, frame) = authenticating_hello(&ctx, &mut c).await?;
    let body = answer(&k, &hello, &frame)?;
    c.send_frame(&body).await?;
    c.expect_closed_silently(
        wait(&ctx),
        &format!("the endpoint closes the connection after {what}, sending nothing more"),
    )
    .await
}

/// The authentication cases of a client, started by `start`, whose server plays `server_role`.
pub fn add_client(cs: &mut Vec<Case>, start: Start, name: &'static str, server_role: Role) {
    let st = start.clone();
    cs.push(Case {
        id: "handshake/10.1/client-hello".into(),
        level: Level::Must,
        targets: vec![Target::Executor],
        requirement: format!("{name} holding a shared secret asks to authenticate in its hello: auth hmac-sha256 and a 32-byte \
            nonce"),
        body: run(move |ctx: Ctx| {
            let st = st.clone();
            async move {
                secret(&ctx)?;
                let (_run, mut c) = st(ctx.clone()).await?;
                authenticating_hello(&ctx, &mut c).await.map(|_| ())
            }
        }),
        ..Case::default()
    });
    let st = start.clone();
    cs.push(Case {
        id: "handshake/10.1/client-proof".into(),
        level: Level::Must,
        targets: vec![Target::Executor],
        requirement: format!("{name} answers the server's challenge with a client proof that verifies with the secret over the \
            hello and challenge frames, and once accepted goes on with an envelope"),
        body: run(move |ctx: Ctx| {
            let st = st.clone();
            async move {
                let k = secret(&ctx)?;
                let (_run, mut c) = st(ctx.clone()).await?;
                let (hello, _) = authenticating_hello(&ctx, &mut c).await?;
                let v = c
                    .accept_hello_with(&hello, &[Version::V1, Version::V2], "suite", Some(&k), wait(&ctx))
                    .await?;
                let body = c.frame_body(wait(&ctx), "the endpoint's first envelope").await?;
                let ok = if c.family == "coarse" {
                    sparkwire::wire::decode_envelope::<sparkwire::messages::CoarseMessage>(&body, v).is_ok()
                } else {
                    sparkwire::wire::decode_envelope::<D>(&body, v).is_ok()
                };
                check(ok, format!("an envelope decoding at version \
                    {}", v.number()), crate::peer::describe(c.family, &body, v))
            }
        }),
        ..Case::default()
    });
    let st = start.clone();
    cs.push(Case {
        id: "handshake/10.1/wrong-server-proof".into(),
        level: Level::Must,
        targets: vec![Target::Executor],
        requirement: format!("{name} closes the connection without sending anything more (no proof, no envelope) when the server's \
            challenge carries a proof made with another secret"),
        body: run(move |ctx: Ctx| {
            client_closes(ctx, st.clone(), |k, _, frame| challenge_body(&wrong_secret(k)?, frame), "a server proof \
                made with another secret")
        }),
        ..Case::default()
    });
    let st = start.clone();
    cs.push(Case {
        id: "handshake/10.1/replayed-server-proof".into(),
        level: Level::Must,
        targets: vec![Target::Executor],
        requirement: format!("{name} closes the connection without sending anything more when the server's proof is made with the \
            right secret but for another exchange (over a hello with another nonce)"),
        body: run(move |ctx: Ctx| {
            client_closes(
                ctx,
                st.clone(),
                |k, hello, _| {
                    let nonce = crate::peer::nonce()?;
                    let mut other = Vec::new();
                    encode_hello(&hello.clone().with_auth(nonce), &mut other);
                    challenge_body(k, &frame_bytes(&other))
                },
                "a server proof for another exchange",
            )
        }),
        ..Case::default()
    });
    cs.push(Case {
        id: "handshake/10.2/unauthenticated-server".into(),
        level: Level::Must,
        targets: vec![Target::Executor],
        requirement: format!("{name} holding a shared secret closes the connection at once, sending nothing, when the server \
            accepts its hello without a challenge (a server that does not prove the secret)"),
        body: run(move |ctx: Ctx| {
            client_closes(
                ctx,
                start.clone(),
                move |_, hello, _| {
                    let version = if hello.versions.contains(&2) { Version::V2 } else { Version::V1 };
                    let mut out = Vec::new();
                    encode_answer(
                        &Answer::Accepted(Accepted { version, versions: vec![1, 2], role: server_role,
                            id: "suite".into(), features: Vec::new() }),
                        &mut out,
                    );
                    Ok(out)
                },
                "an acceptance without a challenge",
            )
        }),
        ..Case::default()
    });
}
