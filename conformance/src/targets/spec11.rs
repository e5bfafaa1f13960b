//! SPEC §11: decoding in detail, live, for the master, the worker and the executor (the driver's
//! cases are in `spec11_driver.rs`, on these helpers). Every decoder decision of
//! `protocol/vectors/decoder.json` (and every invalid envelope vector of `envelope.json`) that a
//! target can receive is replayed on a fresh connection, in a message that is otherwise legal on
//! its route and for the role that sends it (SPEC §14.1): a valid frame keeps the connection, an
//! invalid one closes it (SPEC §8, "On any decoding error the receiver closes that connection
//! only"). Then the canonical maps of §11.3 inside a registration. One function per case.

use std::collections::BTreeMap;
use std::time::Duration;

use sparkwire::messages::deploy::RegisterApplication;
use sparkwire::messages::{Addr, DeployMessage, EndpointRef, Version};
use sparkwire::wire::handshake::{Hello, Role, CLOSE_REASON};
use sparkwire::wire::{encode_envelope, Envelope};

use crate::case::{run, Case, Target};
use crate::env::Ctx;
use crate::kit::common::unique;
use crate::kit::common::wait;
use crate::kit::master::{addr, app_desc, open, register_worker_msg};
use crate::kit::replay::*;
use crate::peer::{frame, Conn, Event};
use crate::verdict::{check, fail, Failure, Level, Outcome};

type D = DeployMessage;

/// Every case of SPEC §11 for the master, added to `cs`.
pub fn add_master(cs: &mut Vec<Case>) {
    for r in replays(&MASTER) {
        let id = format!("spec/11/live/{}/{}", r.file, slug(&r.name));
        let requirement = match &r.error {
            Some(e) => format!(
                "the master decides the {}.json vector \"{}\" as SPEC §11 and §8 do: refused ({e}), the connection \
                    closed, when a {} sends it",
                r.file, r.name, who(r.how)
            ),
            None => format!(
                "the master decides the {}.json vector \"{}\" as SPEC §11 does: taken (an ask answered, a \
                    registration answered), the connection kept open, when a {} sends it",
                r.file, r.name, who(r.how)
            ),
        };
        cs.push(Case {
            id,
            level: Level::Must,
            targets: vec![Target::Master],
            timeout: Duration::from_secs(10),
            requirement,
            body: run(move |ctx: Ctx| {
                let r = r.clone();
                async move { replay(ctx, r).await }
            }),
            ..Case::default()
        });
    }
    cs.push(Case {
        id: "spec/11.3/map-keys-out-of-order".into(),
        level: Level::Must,
        targets: vec![Target::Master],
        timeout: Duration::from_secs(10),
        requirement: "SPEC §11.3, \"A decoder MUST refuse, with `InvalidFields`, a map with a key given twice or out of order\": a \
            RegisterApplication whose command environment has its keys out of order is refused, the connection closed".into(),
        body: run(map_keys_out_of_order),
        ..Case::default()
    });
    cs.push(Case {
        id: "spec/11.3/map-key-twice".into(),
        level: Level::Must,
        targets: vec![Target::Master],
        timeout: Duration::from_secs(10),
        requirement: "SPEC §11.3, \"A decoder MUST refuse, with `InvalidFields`, a map with a key given twice\": a \
            RegisterApplication whose command environment gives a key twice is refused, the connection closed".into(),
        body: run(map_key_twice),
        ..Case::default()
    });
    cs.push(Case {
        id: "spec/11.3/map-keys-ascending-taken".into(),
        level: Level::Must,
        targets: vec![Target::Master],
        timeout: Duration::from_secs(10),
        requirement: "SPEC §11.3, \"A `map<K,V>` is written with its keys distinct and in ascending order ... strings compare by \
            their UTF-8 bytes (so `\\\"GPU\\\"` comes before `\\\"fpga\\\"`)\": a RegisterApplication whose \
                environment keys ascend by their bytes (uppercase first) is answered RegisteredApplication".into(),
        body: run(map_keys_ascending),
        ..Case::default()
    });
}

fn who(how: How) -> &'static str {
    match how {
        How::AnyRole => "UI peer",
        How::RegisteredWorker => "registered worker",
        How::Fresh(Role::Worker) => "worker (its first message)",
        How::Fresh(Role::AppClient) => "application client",
        How::Fresh(Role::DriverClient) => "driver client",
        How::Fresh(_) => "UI peer",
    }
}

/// Opens the connection a replay is sent on, registered as it needs, offering `closeReason`;
/// also says whether the master took it.
async fn connection(ctx: &Ctx, r: &Replay) -> Result<(Conn, bool), Failure> {
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

async fn replay(ctx: Ctx, r: Replay) -> Outcome {
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
async fn taken(ctx: &Ctx, c: &mut Conn, frame: &[u8], close_reason: bool) -> Result<bool, Failure> {
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
fn pair_map(k1: u8, v1: u8, k2: u8, v2: u8) -> [u8; 9] {
    [0x82, 0xa1, k1, 0xa1, v1, 0xa1, k2, 0xa1, v2]
}

/// A RegisterApplication frame whose command environment is `{"A": "1", "B": "2"}`, with that
/// map's bytes replaced by `env` (same length): maps no encoder writes, built by hand.
fn register_with_env(env: [u8; 9]) -> Result<Vec<u8>, Failure> {
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

async fn send_registration(ctx: &Ctx, env: [u8; 9], what: &str) -> Result<Conn, Failure> {
    let bytes = register_with_env(env)?;
    let mut c = open(ctx, Role::AppClient, "app", "", Version::V2).await?;
    c.send_raw(&bytes, what).await?;
    Ok(c)
}

async fn map_keys_out_of_order(ctx: Ctx) -> Outcome {
    let mut c = send_registration(
        &ctx,
        pair_map(b'B', b'2', b'A', b'1'),
        "a RegisterApplication whose environment is {\"B\": \"2\", \"A\": \"1\"}",
    )
    .await?;
    c.expect_closed_silently(wait(&ctx), "the connection closed, nothing registered")
        .await
}

async fn map_key_twice(ctx: Ctx) -> Outcome {
    let mut c = send_registration(
        &ctx,
        pair_map(b'A', b'1', b'A', b'2'),
        "a RegisterApplication whose environment is {\"A\": \"1\", \"A\": \"2\"}",
    )
    .await?;
    c.expect_closed_silently(wait(&ctx), "the connection closed, nothing registered")
        .await
}

async fn map_keys_ascending(ctx: Ctx) -> Outcome {
    // "G" (0x47) before "f" (0x66): ascending by bytes, uppercase first.
    let mut c = send_registration(
        &ctx,
        pair_map(b'G', b'1', b'f', b'2'),
        "a RegisterApplication whose environment is {\"G\": \"1\", \"f\": \"2\"}",
    )
    .await?;
    c.expect::<D, ()>(wait(&ctx), "RegisteredApplication", |e| {
        matches!(e, Envelope::Send(D::RegisteredApplication(_))).then_some(())
    })
    .await
}

/// Every case of SPEC §11 for the executor: the vectors an executor can receive from its driver,
/// each on a freshly started and registered executor.
pub fn add_executor(cs: &mut Vec<Case>) {
    for r in replays(&EXECUTOR) {
        let id = format!("spec/11/live/{}/{}", r.file, slug(&r.name));
        let stop = tag_and_name(r.frame.get(4..).unwrap_or_default())
            .1
            .as_deref()
            == Some("StopExecutor");
        let requirement = match (&r.error, stop) {
            (Some(e), _) => format!(
                "the executor decides the {}.json vector \"{}\" as SPEC §11 and §8 do: refused ({e}), the connection \
                    to its driver closed (a close envelope, if one comes, of kind {e})",
                r.file, r.name
            ),
            (None, true) => format!(
                "the executor decides the {}.json vector \"{}\" as SPEC §11 does: taken, as the StopExecutor it is \
                    (it closes its connection and exits with status 0, as flow/executor/stop)",
                r.file, r.name
            ),
            (None, false) => format!(
                "the executor decides the {}.json vector \"{}\" as SPEC §11 does: taken, the connection kept open",
                r.file, r.name
            ),
        };
        cs.push(Case {
            id,
            level: Level::Must,
            targets: vec![Target::Executor],
            requirement,
            body: run(move |ctx: Ctx| {
                let r = r.clone();
                async move { replay_to_executor(ctx, r, stop).await }
            }),
            ..Case::default()
        });
    }
}

async fn replay_to_executor(ctx: Ctx, r: Replay, stop: bool) -> Outcome {
    let mut e = crate::kit::executor::registered(&ctx, &[r.version], 128).await?;
    // As a driver does, the frame comes once the executor said it is up.
    crate::kit::executor::launched(&ctx, &mut e).await?;
    e.conn
        .send_raw(&r.frame, &format!("the vector \"{}\"", r.name))
        .await?;
    match (&r.error, stop) {
        (Some(err), _) => refused_with(&ctx, &mut e.conn, err, false).await,
        (None, true) => {
            e.conn
                .expect_closed(wait(&ctx), "the connection closed (StopExecutor)")
                .await?;
            match e.run.exit_within(wait(&ctx)).await? {
                Some(code) => check(
                    code == 0,
                    "exit status 0 (stopped, not refused)",
                    code.to_string(),
                ),
                None => Err(fail("the executor to exit", "still running")),
            }
        }
        (None, false) => stays_open(&ctx, &mut e.conn, false).await,
    }
}

/// Every case of SPEC §11 for the worker: the vectors a worker can receive from its master, each
/// on a freshly started worker the suite registered.
pub fn add_worker(cs: &mut Vec<Case>) {
    for r in replays(&WORKER) {
        let id = format!("spec/11/live/{}/{}", r.file, slug(&r.name));
        let requirement = match &r.error {
            Some(e) => format!(
                "the worker decides the {}.json vector \"{}\" as SPEC §11 and §8 do: refused ({e}), the connection to \
                    its master closed (a close envelope, if one comes, of kind {e})",
                r.file, r.name
            ),
            None => format!(
                "the worker decides the {}.json vector \"{}\" as SPEC §11 does: taken, the connection to its master \
                    kept open",
                r.file, r.name
            ),
        };
        cs.push(Case {
            id,
            level: Level::Must,
            targets: vec![Target::Worker],
            requirement,
            body: run(move |ctx: Ctx| {
                let r = r.clone();
                async move { replay_to_worker(ctx, r).await }
            }),
            ..Case::default()
        });
    }
}

async fn replay_to_worker(ctx: Ctx, r: Replay) -> Outcome {
    let mut w = crate::kit::worker::registered(&ctx, &[r.version]).await?;
    w.conn
        .send_raw(&r.frame, &format!("the vector \"{}\"", r.name))
        .await?;
    match &r.error {
        Some(err) => refused_with(&ctx, &mut w.conn, err, false).await,
        None => stays_open(&ctx, &mut w.conn, false).await,
    }
}
