//! Authentication with a shared secret (protocol/handshake.md §10, protocol/SPEC.md §13): what a
//! master configured with a secret must do. The cases run when the suite is given the same
//! secret (`--secret-file`) and are skipped otherwise; with a secret the suite authenticates
//! every other connection it opens, so a master's state can be checked after a refusal.

use std::time::Duration;

use bytes::Bytes;
use sparkwire::messages::{DeployMessage as D, Version};
use sparkwire::wire::handshake::{
    client_proof, encode_hello, encode_proof, frame_bytes, fresh_nonce, read_server_frame, Answer,
    ClientNext, Hello, Identity, Proof, RefusalReason, Role, Secret, NONCE_LEN,
};
use sparkwire::wire::{encode_envelope, Envelope};

use crate::case::{check, fail, Cases, Failure, Level, Outcome};
use crate::env::{Ctx, Endpoint};
use crate::peer::{Conn, Event};
use crate::targets::common::unique;
use crate::targets::master::{register_worker_msg, state, worker};

fn secret(ctx: &Ctx) -> Result<Secret, Failure> {
    ctx.settings.secret.clone().ok_or_else(|| {
        Failure::Skipped(
            "the suite does not know the endpoint's shared secret: give --secret-file PATH (the \
             endpoint's, which must be configured with it) to run the authentication cases"
                .into(),
        )
    })
}

fn addr(ctx: &Ctx) -> Result<std::net::SocketAddr, Failure> {
    match &ctx.settings.endpoint {
        Endpoint::Addr(a) => Ok(*a),
        _ => Err(Failure::Skipped("the master target needs --addr".into())),
    }
}

fn patience(ctx: &Ctx) -> Duration {
    ctx.settings.patience
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

/// Connects as `role`, sends a hello that asks to authenticate and reads the server's first
/// frame, which must be a challenge whose proof verifies with `secret`.
async fn challenged(
    ctx: &Ctx,
    role: Role,
    id: &str,
    secret: &Secret,
) -> Result<Challenged, Failure> {
    let mut conn = Conn::connect(addr(ctx)?, "suite", role, &ctx.log).await?;
    let nonce = fresh_nonce()
        .map_err(|e| fail("a nonce from the system's random source", e.to_string()))?;
    let hello = Hello::new(&[Version::V2], role, id).with_auth(nonce);
    let mut hello_body = Vec::new();
    encode_hello(&hello, &mut hello_body);
    conn.send_frame(&hello_body).await?;
    let want =
        "a challenge (magic, challenge = hmac-sha256, a 32-byte nonce, a proof of the secret)";
    let challenge = conn.frame_body(patience(ctx), want).await?;
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

/// The `nonce` of a challenge body (a map of strings and binaries), if it has one.
fn challenge_nonce(body: &[u8]) -> Option<Vec<u8>> {
    let mut cur = body;
    let n = rmp::decode::read_map_len(&mut cur).ok()?;
    for _ in 0..n {
        let klen = rmp::decode::read_str_len(&mut cur).ok()? as usize;
        let key = cur.get(..klen)?.to_vec();
        cur = &cur[klen..];
        let marker = *cur.first()?;
        let len = match marker {
            0xa0..=0xbf | 0xd9 | 0xda | 0xdb => rmp::decode::read_str_len(&mut cur).ok()? as usize,
            0xc4..=0xc6 => rmp::decode::read_bin_len(&mut cur).ok()? as usize,
            _ => return None,
        };
        let value = cur.get(..len)?.to_vec();
        cur = &cur[len..];
        if key == b"nonce" {
            return Some(value);
        }
    }
    None
}

/// Expects a refusal for one of `reasons` (or, when `reasons` is empty, any refusal or a close
/// with no answer) and then the connection closed, and no frame that accepts or goes on.
async fn expect_refused(ctx: &Ctx, c: &mut Conn, reasons: &[RefusalReason]) -> Outcome {
    let want = if reasons.is_empty() {
        "a refusal or a close, and nothing accepted".to_string()
    } else {
        crate::targets::server::refusal_wanted(reasons)
    };
    match c.next(patience(ctx)).await {
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
    c.expect_closed_silently(patience(ctx), &want).await
}

/// The worker `id` is not registered with the master (asked over an authenticated connection).
async fn not_registered(ctx: &Ctx, id: &str) -> Outcome {
    let s = state(ctx).await?;
    check(
        !s.workers.iter().any(|w| w.id == id),
        format!("no worker {id} registered"),
        format!("worker {id} registered"),
    )
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

/// Sends a hello without `auth` and, in the same write, the envelope `body`: the master must
/// refuse with authRequired, close, and answer nothing.
async fn unauthenticated_then(ctx: &Ctx, role: Role, id: &str, body: &[u8], what: &str) -> Outcome {
    let mut c = Conn::connect(addr(ctx)?, "suite", role, &ctx.log).await?;
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

/// The authentication cases of the master target.
pub fn add(cs: &mut Cases) {
    cs.add(
        "handshake/10.2/no-auth-refused",
        Level::Must,
        "a master holding a shared secret refuses a hello that does not ask to authenticate with authRequired, and closes the connection",
        |ctx: Ctx| async move {
            secret(&ctx)?;
            let mut c = Conn::connect(addr(&ctx)?, "suite", Role::Worker, &ctx.log).await?;
            c.send_hello(&Hello::new(&[Version::V2], Role::Worker, "w-no-auth")).await?;
            expect_refused(&ctx, &mut c, &[RefusalReason::AuthRequired]).await
        },
    );
    cs.add(
        "handshake/10.1/challenge",
        Level::Must,
        "a master holding a shared secret answers a hello that asks to authenticate with a challenge: mechanism hmac-sha256, a 32-byte nonce and a proof that verifies with the secret over the hello frame",
        |ctx: Ctx| async move {
            let k = secret(&ctx)?;
            let c = challenged(&ctx, Role::Worker, "w-challenge", &k).await?;
            let nonce = challenge_nonce(&c.challenge);
            check(
                nonce.as_ref().is_some_and(|n| n.len() == NONCE_LEN)
                    && nonce.as_deref() != c.hello.auth.as_ref().map(|n| &n[..]),
                "a nonce of 32 bytes, not the client's",
                format!("{nonce:?}"),
            )
        },
    );
    cs.add(
        "handshake/10.1/fresh-nonce",
        Level::Must,
        "a master draws a new nonce for every handshake: two challenges never carry the same nonce",
        |ctx: Ctx| async move {
            let k = secret(&ctx)?;
            let a = challenged(&ctx, Role::Worker, "w-nonce", &k).await?;
            let b = challenged(&ctx, Role::Worker, "w-nonce", &k).await?;
            let (na, nb) = (challenge_nonce(&a.challenge), challenge_nonce(&b.challenge));
            check(
                na.is_some() && na != nb,
                "two different nonces",
                format!("{na:?} and {nb:?}"),
            )
        },
    );
    cs.add(
        "handshake/10.1/authenticated",
        Level::Must,
        "a master holding a shared secret accepts a peer that proves it, and then takes its registration (RegisteredWorker)",
        |ctx: Ctx| async move {
            secret(&ctx)?;
            worker(&ctx, "worker", 1, 512, Version::V2).await.map(|_| ())
        },
    );
    cs.add(
        "handshake/10.1/wrong-proof-refused",
        Level::Must,
        "a master refuses a client proof made with another secret (a wrong MAC) with authFailed, closes the connection, and takes nothing sent after it",
        |ctx: Ctx| async move {
            let k = secret(&ctx)?;
            let id = worker_id();
            let mut c = challenged(&ctx, Role::Worker, &id, &k).await?;
            let mut bytes = frame_bytes(&c.proof(&wrong_secret(&k)?));
            bytes.extend_from_slice(&frame_bytes(&register_body(&id)?));
            c.conn.send_raw(&bytes, "a proof made with another secret, then RegisterWorker").await?;
            expect_refused(&ctx, &mut c.conn, &[RefusalReason::AuthFailed]).await?;
            not_registered(&ctx, &id).await
        },
    );
    cs.add(
        "handshake/10.1/replayed-proof-refused",
        Level::Must,
        "a master refuses with authFailed a proof made for another exchange (one recorded from an earlier connection, under the right secret)",
        |ctx: Ctx| async move {
            let k = secret(&ctx)?;
            let first = challenged(&ctx, Role::Worker, "w-replay", &k).await?;
            let mut second = challenged(&ctx, Role::Worker, "w-replay", &k).await?;
            let replayed = first.proof(&k);
            second.conn.send_frame(&replayed).await?;
            expect_refused(&ctx, &mut second.conn, &[RefusalReason::AuthFailed]).await
        },
    );
    cs.add(
        "spec/13/nothing-before-proof",
        Level::Must,
        "a master holding a shared secret takes no envelope before the peer's proof: a RegisterWorker sent in place of the proof registers nothing and the connection is refused or closed",
        |ctx: Ctx| async move {
            let k = secret(&ctx)?;
            let id = worker_id();
            let mut c = challenged(&ctx, Role::Worker, &id, &k).await?;
            c.conn.send_frame(&register_body(&id)?).await?;
            expect_refused(&ctx, &mut c.conn, &[]).await?;
            not_registered(&ctx, &id).await
        },
    );
    cs.add(
        "spec/13/unauthenticated-register",
        Level::Must,
        "a master holding a shared secret takes nothing from a peer that does not authenticate: a RegisterWorker right behind a hello without auth is refused (authRequired) and registers nothing",
        |ctx: Ctx| async move {
            secret(&ctx)?;
            let id = worker_id();
            unauthenticated_then(&ctx, Role::Worker, &id, &register_body(&id)?, "RegisterWorker")
                .await?;
            not_registered(&ctx, &id).await
        },
    );
    cs.add(
        "spec/13/unauthenticated-ui-kill",
        Level::Must,
        "a master holding a shared secret takes no state-changing ask from an unauthenticated ui peer: RequestKillAllDrivers behind a hello without auth gets no reply, only a refusal and a close",
        |ctx: Ctx| async move {
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
            unauthenticated_then(&ctx, Role::Ui, "", &ask, "RequestKillAllDrivers").await
        },
    );
}
