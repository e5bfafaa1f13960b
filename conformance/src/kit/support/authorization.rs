//! `--target master`, SPEC §14: authorization. Ids bound to connections (§14.2: Z1, Z2, and what
//! a master does with ids bound to no connection, which Spark 4.0.1's `Master` decides), refusals
//! (§14.3) and redaction (§14.4). One function per case; each cites the sentence it checks.
//!
//! A master refuses only messages naming an id bound to *another* connection; a strict master MAY
//! also refuse what breaks rules W1, W2, P1 and P2 (SPEC §14.2, "Unknown ids, and messages before
//! a registration"), so the cases about unknown ids accept either choice.

use crate::harness::env::Ctx;
use crate::harness::peer::Conn;
use crate::harness::peer::Event;
use crate::harness::verdict::check;
use crate::harness::verdict::fail;
use crate::harness::verdict::Failure;
use crate::harness::verdict::Outcome;
use crate::kit::common::unique;
use crate::kit::common::wait;
use crate::kit::master::app;
use crate::kit::master::app_desc;
use crate::kit::master::open;
use crate::kit::master::state;
use crate::kit::master::worker_ref;
use sparkwire::messages::deploy::*;
use sparkwire::messages::DeployMessage;
use sparkwire::messages::Version;
use sparkwire::wire::handshake::Role;
use sparkwire::wire::Envelope;
use sparkwire::wire::Reply;

pub(crate) type D = DeployMessage;

/// The marker a redacted value is replaced with (SPEC §14.4).
pub const REDACTED: &str = "*********(redacted)";

/// A fresh worker id of Spark's form, never registered.
pub(crate) fn fresh_worker_id() -> String {
    format!("worker-20250101120000-127.0.0.1-{}", unique())
}

pub(crate) fn heartbeat(id: &str) -> D {
    D::Heartbeat(Heartbeat::new(id.into(), worker_ref("127.0.0.1", 1)))
}

/// What a connection got after a message the master ignores, or MAY refuse: none of the
/// answers `answer` picks within the quiet time (frames meant for every worker or application
/// pass), or (a strict master) a close; true for the close.
pub(crate) async fn nothing_back(
    ctx: &Ctx,
    c: &mut Conn,
    what: &str,
    answer: fn(&D) -> bool,
) -> Result<bool, Failure> {
    let want = format!("no answer to {what} (or, strictly, a close)");
    let end = tokio::time::Instant::now() + ctx.settings.quiet;
    loop {
        let left = end.saturating_duration_since(tokio::time::Instant::now());
        match c.next(left).await {
            None => return Ok(false),
            Some(Event::Closed(_)) => return Ok(true),
            Some(Event::Frame(body)) => match sparkwire::wire::decode_envelope::<D>(&body, c.v()) {
                Ok(Envelope::Send(m)) if !answer(&m) => continue,
                Ok(Envelope::Close(_)) => continue,
                _ => {
                    return Err(fail(
                        want,
                        crate::harness::peer::describe(c.family, &body, c.v()),
                    ))
                }
            },
            Some(Event::TooLarge(n)) => {
                return Err(fail(want, format!("a prefix declaring {n} bytes")))
            }
        }
    }
}

/// What a master could answer a worker's Heartbeat with.
pub(crate) fn heartbeat_answer(m: &D) -> bool {
    matches!(
        m,
        D::ReconnectWorker(_)
            | D::RegisteredWorker(_)
            | D::RegisterWorkerFailed(_)
            | D::MasterInStandby(_)
            | D::MasterChanged(_)
    )
}

/// What a master could answer an application client's UnregisterApplication with.
pub(crate) fn unregister_answer(m: &D) -> bool {
    matches!(
        m,
        D::ApplicationRemoved(_) | D::RegisteredApplication(_) | D::MasterChanged(_)
    )
}

pub(crate) async fn worker_absent(ctx: &Ctx, id: &str) -> Outcome {
    let s = state(ctx).await?;
    check(
        !s.workers.iter().any(|w| w.id == id),
        format!("no worker {id} in the master's state"),
        "the worker registered by a Heartbeat",
    )
}

/// Whether the master refuses messages before a registration (SPEC §14.2: a strict master MAY):
/// a Heartbeat naming a worker never registered, on a fresh worker connection, closes it.
pub(crate) async fn strict_master(ctx: &Ctx) -> Result<bool, Failure> {
    let id = fresh_worker_id();
    let mut c = open(ctx, Role::Worker, "strictness", &id, Version::V2).await?;
    c.send(&Envelope::Send(heartbeat(&id))).await?;
    Ok(c.closes_within(ctx.settings.quiet).await)
}

/// Asks `m` on `c` as ask `id` and expects a failure of class `java.lang.SecurityException`; a
/// strict master MAY close the connection instead (the message breaks rule P2 too, SPEC §8.1
/// `RuleViolation`).
pub(crate) async fn security_failure(ctx: &Ctx, c: &mut Conn, id: u64, m: D) -> Outcome {
    c.send(&Envelope::Ask { id, message: m }).await?;
    let want = format!("a failure for ask {id} of class java.lang.SecurityException");
    let got = match c
        .expect_or_close::<D, Envelope<D>>(wait(ctx), &want, |e| match e {
            Envelope::Failure { id: fid, .. } | Envelope::Reply { id: fid, .. } if *fid == id => {
                Some(e.clone())
            }
            _ => None,
        })
        .await
    {
        Ok(got) => got,
        Err(Failure::Fail { seen, .. }) if seen.contains("closed") => {
            return check(
                strict_master(ctx).await?,
                format!("{want} (a close only from a strict master)"),
                "the connection closed, and the master takes messages before a registration: it is not strict",
            );
        }
        Err(e) => return Err(e),
    };
    match got {
        Envelope::Failure { error, .. } => check(
            error.class_name == "java.lang.SecurityException" && !error.message.is_empty(),
            want,
            format!("a failure {}: {:?}", error.class_name, error.message),
        ),
        other => Err(fail(want, crate::harness::peer::envelope_label(&other))),
    }
}

pub(crate) async fn two_apps(ctx: &Ctx) -> Result<((Conn, String), (Conn, String)), Failure> {
    let a = app(ctx, "app-a", app_desc(Some(1), 64, Some(0)), Version::V2).await?;
    let b = app(ctx, "app-b", app_desc(Some(1), 64, Some(0)), Version::V2).await?;
    Ok((a, b))
}

pub(crate) async fn driver_status(
    ctx: &Ctx,
    c: &mut Conn,
    ask: u64,
    id: &str,
) -> Result<DriverStatusResponse, Failure> {
    c.send(&Envelope::Ask {
        id: ask,
        message: D::RequestDriverStatus(RequestDriverStatus::new(id.into())),
    })
    .await?;
    c.expect::<D, DriverStatusResponse>(wait(ctx), "DriverStatusResponse", |e| match e {
        Envelope::Reply {
            id: r,
            reply: Reply::Message(D::DriverStatusResponse(s)),
        } if *r == ask => Some(s.clone()),
        _ => None,
    })
    .await
}

/// What a master could answer a WorkerLatestState with.
pub(crate) fn kill_answer(m: &D) -> bool {
    matches!(m, D::KillExecutor(_) | D::KillDriver(_))
}
