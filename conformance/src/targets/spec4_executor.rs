//! `--target executor`, SPEC §4.1: the layouts only an executor receives from its driver, live.
//! A `tuple<A,B>` (a `sparkProperties` pair of SparkAppConfig, the answer to the executor's
//! RetrieveSparkAppConfig) and `bytes` (LaunchTask's data), each written by hand in a frame that
//! is otherwise legal on its route: the executor refuses it and closes that connection (SPEC §8:
//! the suite does not take closeReason from an executor, so only the close is seen). One
//! function per case; each cites the sentence it checks.

use sparkwire::messages::coarse::LaunchTask;
use sparkwire::messages::{CoarseMessage, Version};
use sparkwire::wire::{encode_envelope, Envelope, Reply};

use crate::case::{run, Case, Target};
use crate::env::Ctx;
use crate::kit::common::wait;
use crate::kit::executor::{app_config, launched, registered, start};
use crate::kit::spawned;
use crate::mp::{arr, bin, s};
use crate::peer::{frame, Conn, Event};
use crate::verdict::{fail, Failure, Level, Outcome};

type C = CoarseMessage;

/// Every case of this file, added to `cs`.
pub fn add(cs: &mut Vec<Case>) {
    cs.push(Case {
        id: "spec/4.1/tuple-of-three-refused".into(),
        level: Level::Must,
        targets: vec![Target::Executor],
        requirement: "SPEC §4.1, \"`tuple<A,B>` | array of exactly 2 elements | `sparkProperties` is a list of `[key, value]` \
            pairs\", and §8 (`InvalidFields`; the receiver closes that connection): a SparkAppConfig answering the \
                executor's RetrieveSparkAppConfig whose `spark.task.cpus` pair has 3 elements is refused: the \
                    executor closes that connection and sends no RegisterExecutor on it".into(),
        body: run(tuple_of_three_refused),
        ..Case::default()
    });
    cs.push(Case {
        id: "spec/4.1/bytes-as-string-refused".into(),
        level: Level::Must,
        targets: vec![Target::Executor],
        requirement: "SPEC §4.1, \"`bytes` | bin | never an array of integers\" (a `bytes` value is a MessagePack bin), and §8 \
            (`InvalidFields`; the receiver closes that connection): a LaunchTask whose `data` is written as the \
                string \"abc\" instead of the bin `abc` is refused: the executor closes its connection to the driver \
                    (a LaunchTask whose data merely is not a task keeps it open, spec/10/bad-task-data)".into(),
        body: run(bytes_as_string_refused),
        ..Case::default()
    });
}

/// Replaces the bytes `canonical` of `body` by `replacement`.
fn splice(
    mut body: Vec<u8>,
    canonical: &[u8],
    replacement: &[u8],
    what: &str,
) -> Result<Vec<u8>, Failure> {
    let at = body
        .windows(canonical.len())
        .position(|w| w == canonical)
        .ok_or_else(|| fail(format!("{what} in the encoded frame"), "not found"))?;
    body.splice(at..at + canonical.len(), replacement.iter().copied());
    Ok(body)
}

/// Reads `c` until it closes; fails when the executor sends RegisterExecutor on it first (it
/// took the configuration it had to refuse).
async fn closed_without_registering(ctx: &Ctx, c: &mut Conn) -> Outcome {
    let want = "the connection closed, no RegisterExecutor on it (the SparkAppConfig refused)";
    let deadline = tokio::time::Instant::now() + wait(ctx);
    loop {
        let left = deadline.saturating_duration_since(tokio::time::Instant::now());
        match c.next(left).await {
            Some(Event::Closed(_)) => return Ok(()),
            None => return Err(fail(want, "the connection still open")),
            Some(Event::TooLarge(n)) => {
                return Err(fail(want, format!("a prefix declaring {n} bytes")))
            }
            Some(Event::Frame(body)) => {
                if let Ok(Envelope::Ask {
                    message: C::RegisterExecutor(_),
                    ..
                }) = sparkwire::wire::decode_envelope::<C>(&body, c.v())
                {
                    return Err(fail(want, "ask RegisterExecutor"));
                }
            }
        }
    }
}

async fn tuple_of_three_refused(ctx: Ctx) -> Outcome {
    let (_run, mut conn) = start(ctx.clone()).await?;
    let hello = conn.read_hello(spawned::startup(&ctx)).await?;
    spawned::accept(
        &ctx,
        &mut conn,
        &hello,
        &[Version::V1, Version::V2],
        "driver",
    )
    .await?;
    let id = conn
        .expect::<C, u64>(
            wait(&ctx),
            "the executor's RetrieveSparkAppConfig",
            |e| match e {
                Envelope::Ask {
                    id,
                    message: C::RetrieveSparkAppConfig(_),
                } => Some(*id),
                _ => None,
            },
        )
        .await?;
    let mut body = Vec::new();
    encode_envelope(
        &Envelope::<C>::Reply {
            id,
            reply: Reply::Message(C::SparkAppConfig(app_config(128))),
        },
        conn.v(),
        &mut body,
    )
    .map_err(|e| fail("a SparkAppConfig encoded", e.to_string()))?;
    let body = splice(
        body,
        &arr(&[s("spark.task.cpus"), s("1")]),
        &arr(&[s("spark.task.cpus"), s("1"), s("2")]),
        "the pair [\"spark.task.cpus\", \"1\"]",
    )?;
    conn.send_raw(
        &frame(&body),
        "a SparkAppConfig whose pair [\"spark.task.cpus\", \"1\", \"2\"] has 3 elements",
    )
    .await?;
    closed_without_registering(&ctx, &mut conn).await
}

async fn bytes_as_string_refused(ctx: Ctx) -> Outcome {
    let mut e = registered(&ctx, &[Version::V2], 128).await?;
    launched(&ctx, &mut e).await?;
    let mut body = Vec::new();
    encode_envelope(
        &Envelope::Send(C::LaunchTask(LaunchTask::new(b"abc".to_vec().into()))),
        e.conn.v(),
        &mut body,
    )
    .map_err(|er| fail("a LaunchTask encoded", er.to_string()))?;
    let body = splice(body, &bin(b"abc"), &s("abc"), "the data bin `abc`")?;
    e.conn
        .send_raw(
            &frame(&body),
            "a LaunchTask whose data is the string \"abc\"",
        )
        .await?;
    e.conn
        .expect_closed(
            wait(&ctx),
            "the connection closed (a bytes field written as a string)",
        )
        .await
}
