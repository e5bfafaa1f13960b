//! Authentication with a shared secret (protocol/handshake.md §10, protocol/SPEC.md §13): what
//! an endpoint configured with a secret must do, as a server (a master; a worker on its port; a
//! driver on its executor port) and as a client (an executor, to its driver). The cases run when
//! the suite is given the same secret (`--secret-file`) and are skipped otherwise; with a secret
//! the suite authenticates the other connections these cases need (as the endpoint's master when
//! it registers, to ask its state, as an executor's worker), so an endpoint's state can be
//! checked after a refusal. The other cases of a target run against the same secured endpoint:
//! with the secret, every connection they open or accept authenticates first (`crate::harness::peer`).

use crate::harness::case::bind;
use crate::harness::case::Body;
use crate::harness::env::Ctx;
use crate::harness::env::Site;
use crate::harness::peer::Conn;
use crate::harness::peer::Event;
use crate::harness::verdict::check;
use crate::harness::verdict::fail;
use crate::harness::verdict::Failure;
use crate::harness::verdict::Outcome;
use crate::kit::auth::*;
use crate::kit::client::Start;
use crate::kit::common::unique;
use crate::kit::common::wait;
use crate::kit::endpoint::{Change, Endpoint, Reach};
use crate::kit::master::register_worker_msg;
use crate::kit::master::state;
use crate::kit::server::Listening;
use bytes::Bytes;
use sparkwire::messages::Version;
use sparkwire::wire::encode_envelope;
use sparkwire::wire::handshake::client_proof;
use sparkwire::wire::handshake::encode_challenge;
use sparkwire::wire::handshake::encode_hello;
use sparkwire::wire::handshake::encode_proof;
use sparkwire::wire::handshake::frame_bytes;
use sparkwire::wire::handshake::read_server_frame;
use sparkwire::wire::handshake::server_proof;
use sparkwire::wire::handshake::Answer;
use sparkwire::wire::handshake::Challenge;
use sparkwire::wire::handshake::ClientNext;
use sparkwire::wire::handshake::Hello;
use sparkwire::wire::handshake::Identity;
use sparkwire::wire::handshake::Proof;
use sparkwire::wire::handshake::RefusalReason;
use sparkwire::wire::handshake::Role;
use sparkwire::wire::handshake::Secret;
use sparkwire::wire::Envelope;
use std::net::SocketAddr;
use std::sync::Arc;

pub(crate) fn master_addr(ctx: &Ctx) -> Result<SocketAddr, Failure> {
    match &ctx.settings.endpoint {
        Site::Addr(a) => Ok(*a),
        _ => Err(Failure::Skipped("the master target needs --addr".into())),
    }
}

/// A secret that is not the endpoint's (the same bytes and one more).
pub(crate) fn wrong_secret(secret: &Secret) -> Result<Secret, Failure> {
    let mut bytes = secret.expose().to_vec();
    bytes.push(b'!');
    Secret::new(bytes).ok_or_else(|| fail("a non-empty secret", "an empty one"))
}

/// A connection whose authenticated hello the server challenged.
pub(crate) struct Challenged {
    pub(crate) conn: Conn,
    pub(crate) hello: Hello,
    pub(crate) hello_body: Vec<u8>,
    pub(crate) challenge: Bytes,
}

impl Challenged {
    /// The proof of this exchange under `secret`, as a frame body.
    pub(crate) fn proof(&self, secret: &Secret) -> Vec<u8> {
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
pub(crate) async fn challenged(
    ctx: &Ctx,
    addr: SocketAddr,
    role: Role,
    id: &str,
    secret: &Secret,
) -> Result<Challenged, Failure> {
    let mut conn = Conn::connect(addr, "suite", role, &ctx.log).await?;
    let nonce = crate::harness::peer::nonce()?;
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
pub(crate) async fn expect_refused(ctx: &Ctx, c: &mut Conn, reasons: &[RefusalReason]) -> Outcome {
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
                    crate::harness::peer::describe(c.family, &body, Version::V2),
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

pub(crate) fn register_body(id: &str) -> Result<Vec<u8>, Failure> {
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
pub(crate) async fn unauthenticated_then(
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

pub(crate) fn worker_id() -> String {
    format!("worker-20250101120000-127.0.0.1-7-auth{}", unique())
}

/// Fails when the change, a `what`, shows.
pub(crate) async fn unchanged(g: &Guarded, what: &str) -> Outcome {
    let seen = (g.seen)().await?;
    check(
        !seen,
        format!("nothing changed by the {what} sent"),
        format!("the {what} took effect"),
    )
}

/// A body run against the secured server `s`, given the endpoint's secret and the server opened
/// (skipped when the suite was not given the secret).
pub(crate) fn secured<F, Fut>(s: &Endpoint, body: F) -> Body
where
    F: Fn(Ctx, Secret, Guarded) -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = Outcome> + Send + 'static,
{
    let body = std::sync::Arc::new(body);
    bind(s, move |ctx: Ctx, s: Endpoint| {
        let body = std::sync::Arc::clone(&body);
        async move {
            let k = secret(&ctx)?;
            let mut g = s.open_guarded(ctx.clone()).await?;
            // The endpoint runs while its guard lives: kept here to the body's end, whichever
            // parts of `g` the body's closure captures (a copy of its address drops the rest).
            let guard = std::mem::replace(&mut g.at.guard, Box::new(()));
            let outcome = body(ctx, k, g).await;
            drop(guard);
            outcome
        }
    })
}

/// The master as the authentication cases check it: the suite registers a worker on it.
pub fn master_secured() -> Endpoint {
    Endpoint {
        name: "a master",
        family: "deploy",
        role: Role::Master,
        suite_role: Role::Worker,
        other_family_role: Role::Executor,
        reach: Reach::Guarded(Arc::new(|ctx: Ctx| {
            Box::pin(async move {
                let addr = master_addr(&ctx)?;
                let id = worker_id();
                let change = register_body(&id)?;
                let seen: Seen = Arc::new(move || {
                    let (ctx, id) = (ctx.clone(), id.clone());
                    Box::pin(
                        async move { Ok(state(&ctx).await?.workers.iter().any(|w| w.id == id)) },
                    )
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
        })),
        messages: None,
        change: Some(Change {
            what: "RegisterWorker",
            case: "register",
        }),
        spark: None,
    }
}

// ---- a client holding the secret (the suite is its server) ----

/// Reads the client's hello, which must ask to authenticate; returns it and its frame.
pub(crate) async fn authenticating_hello(
    ctx: &Ctx,
    c: &mut Conn,
) -> Result<(Hello, Vec<u8>), Failure> {
    let hello = c.read_hello(wait(ctx) * 3).await?;
    check(
        hello.auth.is_some(),
        "a hello that asks to authenticate (auth = hmac-sha256, a 32-byte nonce)",
        "a hello without auth: the endpoint does not prove its secret",
    )?;
    Ok((hello, c.hello_frame()))
}

/// A challenge with a fresh nonce whose proof is made with `secret` over `hello_frame`.
pub(crate) fn challenge_body(secret: &Secret, hello_frame: &[u8]) -> Result<Vec<u8>, Failure> {
    let nonce = crate::harness::peer::nonce()?;
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
pub(crate) async fn client_closes(
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
