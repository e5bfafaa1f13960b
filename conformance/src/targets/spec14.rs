//! `--target master`, SPEC §14: authorization. Ids bound to connections (§14.2: Z1, Z2, and what
//! a master does with ids bound to no connection, which Spark 4.0.1's `Master` decides), refusals
//! (§14.3) and redaction (§14.4). One function per case; each cites the sentence it checks.
//!
//! A master refuses only messages naming an id bound to *another* connection; a strict master MAY
//! also refuse what breaks rules W1, W2, P1 and P2 (SPEC §14.2, "Unknown ids, and messages before
//! a registration"), so the cases about unknown ids accept either choice.

use std::collections::BTreeMap;
use std::time::Duration;

use sparkwire::messages::deploy::*;
use sparkwire::messages::{
    Addr, DeployMessage, DriverState, EndpointRef, ExecutorDescription, ExecutorState, Version,
    WorkerState,
};
use sparkwire::wire::handshake::Role;
use sparkwire::wire::{Envelope, Reply};

use crate::case::{run, Case, Sharing, Target};
use crate::env::{Ctx, Wire};
use crate::kit::common::unique;
use crate::kit::common::wait;
use crate::kit::master::{app, app_desc, open, settle, state, submit, worker, worker_ref};
use crate::kit::ownership::two_workers;
use crate::peer::{Conn, Event};
use crate::verdict::{check, fail, Failure, Level, Outcome};

type D = DeployMessage;

/// The marker a redacted value is replaced with (SPEC §14.4).
pub const REDACTED: &str = "*********(redacted)";

/// Every case of SPEC §14 for the master, added to `cs`.
pub fn add(cs: &mut Vec<Case>) {
    cs.push(Case {
        id: "rules/W1/register-first".into(),
        level: Level::Must,
        targets: vec![Target::Master],
        timeout: Duration::from_secs(10),
        requirement: "SPEC §14.2 Z2, \"A `Heartbeat` naming a worker the master never registered is ignored: nothing is sent and \
            nothing changes\" (rule W1's message, a Heartbeat before any RegisterWorker on the connection): the \
                master sends nothing back and registers no worker; a strict master MAY close the connection instead".into(),
        body: run(heartbeat_before_registering),
        ..Case::default()
    });
    cs.push(Case {
        id: "rules/W2/worker-id".into(),
        level: Level::Must,
        targets: vec![Target::Master],
        timeout: Duration::from_secs(10),
        requirement: "SPEC §14.2 Z2 (rule W2's message, a Heartbeat naming another worker id than the one registered on the \
            connection, an id the master never registered): the master sends nothing back, registers no such worker, \
                and the registered worker stays ALIVE; a strict master MAY close the connection instead".into(),
        body: run(heartbeat_naming_unknown_worker),
        ..Case::default()
    });
    cs.push(Case {
        id: "rules/P1/register-first".into(),
        level: Level::Must,
        targets: vec![Target::Master],
        timeout: Duration::from_secs(10),
        requirement: "SPEC §14.2 Z1, \"Naming an unknown or finished application is not a refusal\" (rule P1's message, an \
            UnregisterApplication before any RegisterApplication on the connection): the master answers nothing and \
                goes on serving the connection, which then registers an application; a strict master MAY close the \
                    connection instead".into(),
        body: run(unregister_before_registering),
        ..Case::default()
    });
    cs.push(Case {
        id: "rules/P2/app-id".into(),
        level: Level::Must,
        targets: vec![Target::Master],
        timeout: Duration::from_secs(10),
        requirement: "SPEC §14.2 Z1, \"the master answers as Spark does (`false`, or nothing)\" (rule P2's message, a \
            RequestExecutors naming an application id the master never gave out): a bool reply false, never true; a \
                strict master MAY answer a failure or close instead".into(),
        body: run(request_executors_unknown_app),
        ..Case::default()
    });
    cs.push(Case {
        id: "spec/14.2/Z1/kill-executors-other-connection".into(),
        level: Level::Must,
        targets: vec![Target::Master],
        timeout: Duration::from_secs(10),
        requirement: "SPEC §14.2 Z1, \"`KillExecutors` naming an active application [is] taken only over its connection\", and \
            §14.3, \"A refused ask is answered with a failure envelope ... `java.lang.SecurityException` for a \
                foreign id\": KillExecutors naming an application registered over another connection is answered with \
                    such a failure (a strict master MAY close instead, SPEC §8.1 `RuleViolation`)".into(),
        body: run(kill_executors_other_connection),
        ..Case::default()
    });
    cs.push(Case {
        id: "spec/14.2/Z1/request-executors-other-connection".into(),
        level: Level::Must,
        targets: vec![Target::Master],
        timeout: Duration::from_secs(10),
        requirement: "SPEC §14.2 Z1, \"`RequestExecutors` ... naming an active application [is] taken only over its connection\": \
            RequestExecutors naming an application registered over another connection is answered with a failure \
                (java.lang.SecurityException, §14.3; a strict master MAY close instead, SPEC §8.1 `RuleViolation`)".into(),
        body: run(request_executors_other_connection),
        ..Case::default()
    });
    cs.push(Case {
        id: "spec/14.2/Z1/unregister-other-connection".into(),
        level: Level::Must,
        targets: vec![Target::Master],
        timeout: Duration::from_secs(10),
        requirement: "SPEC §14.2 Z1, \"`UnregisterApplication` ... naming an active application [is] taken only over its \
            connection\", and §14.3, \"A refused send closes its connection ... Nothing a refused message asks for \
                happens\": the sender's connection closes and the application stays active".into(),
        body: run(unregister_other_connection),
        ..Case::default()
    });
    cs.push(Case {
        id: "spec/14.2/Z1/second-registration-ignored".into(),
        level: Level::Must,
        targets: vec![Target::Master],
        timeout: Duration::from_secs(10),
        requirement: "SPEC §14.2 Z1, \"A connection bound to an active application registers no other: a second \
            `RegisterApplication` over it is ignored\": no second RegisteredApplication, and the first application \
                stays active".into(),
        body: run(second_registration_ignored),
        ..Case::default()
    });
    cs.push(Case {
        id: "spec/14.2/Z4/kill-driver-other-connection".into(),
        level: Level::Must,
        targets: vec![Target::Master],
        timeout: Duration::from_secs(10),
        requirement: "SPEC §14.2 Z4, \"`RequestKillDriver` for an active driver is taken only over that connection\", and §14.3 (a \
            failure, java.lang.SecurityException, for a foreign id): another driver client's RequestKillDriver is \
                answered with such a failure and the driver stays active (a strict master MAY close instead, SPEC \
                    §8.1 `RuleViolation`)".into(),
        body: run(kill_driver_other_connection),
        ..Case::default()
    });
    cs.push(Case {
        id: "spec/14.2/Z4/kill-after-submitter-left".into(),
        level: Level::Must,
        targets: vec![Target::Master],
        timeout: Duration::from_secs(10),
        requirement: "SPEC §14.2 Z4, \"Once that connection has closed, the driver is bound to no connection: a \
            `RequestKillDriver` for it from any `driver-client` is answered as its submitter's would be, and kills \
                it\": after the submitting client closed its connection, a new driver client's RequestKillDriver is \
                    answered success = true (the master may take a moment to see the close: refusals are retried \
                        within the case's time)".into(),
        body: run(kill_after_submitter_left),
        ..Case::default()
    });
    cs.push(Case {
        id: "spec/14.2/Z4/status-any-client".into(),
        level: Level::Must,
        targets: vec![Target::Master],
        timeout: Duration::from_secs(10),
        requirement: "SPEC §14.2 Z4, \"`RequestDriverStatus` reads and changes nothing, and is answered to any `driver-client`\": \
            a driver client that did not submit the driver asks its status and is answered found = true".into(),
        body: run(driver_status_any_client),
        ..Case::default()
    });
    cs.push(Case {
        id: "spec/14.2/Z2/latest-state-unknown-ignored".into(),
        level: Level::Must,
        targets: vec![Target::Master],
        timeout: Duration::from_secs(10),
        requirement: "SPEC §14.2 Z2, \"A `WorkerLatestState` naming a worker the master does not know is ignored\": no \
            KillExecutor or KillDriver for what it lists, and no worker registered by it; a strict master MAY close \
                the connection instead".into(),
        body: run(latest_state_unknown_ignored),
        ..Case::default()
    });
    cs.push(Case {
        id: "spec/14.2/Z3/unknown-updates-not-refused".into(),
        level: Level::Must,
        targets: vec![Target::Master],
        timeout: Duration::from_secs(10),
        requirement: "SPEC §14.2 Z3, \"Updates for executors and drivers the master does not know change nothing and are not \
            refused\": a registered worker's ExecutorStateChanged ask about an executor the master never placed is \
                answered (a bool reply), and its DriverStateChanged about an unknown driver leaves the connection \
                    open; a strict master MAY close instead (rule E2, D3: SPEC §8.1 `RuleViolation`)".into(),
        body: run(unknown_updates_not_refused),
        ..Case::default()
    });
    cs.push(Case {
        id: "spec/14.2/Z2/heartbeat-other-connection".into(),
        level: Level::Must,
        targets: vec![Target::Master],
        timeout: Duration::from_secs(10),
        requirement: "SPEC §14.2 Z2, \"`Heartbeat` ... naming a worker bound to another connection [is] refused\", and §14.3, \"A \
            refused send closes its connection\": a registered worker's connection that sends a Heartbeat naming \
                another registered worker is closed".into(),
        body: run(heartbeat_other_connection),
        ..Case::default()
    });
    cs.push(Case {
        id: "spec/14.2/Z2/latest-state-other-connection".into(),
        level: Level::Must,
        targets: vec![Target::Master],
        timeout: Duration::from_secs(10),
        requirement: "SPEC §14.2 Z2, \"`WorkerLatestState` ... naming a worker bound to another connection [is] refused\": the \
            sender's connection closes and the master sends the named worker no KillExecutor for what the message \
                listed".into(),
        body: run(latest_state_other_connection),
        ..Case::default()
    });
    cs.push(Case {
        id: "spec/14.3/failure-form".into(),
        level: Level::Must,
        targets: vec![Target::Master],
        timeout: Duration::from_secs(10),
        requirement: "SPEC §3, \"`error` is `{\"className\": str, \"message\": str}`\", and §14.3, \"The failure's `className` is \
            `org.apache.spark.SparkException` for a message off its route (§14.1) ... its `message` says why\": a \
                worker asking RequestMasterState (a UI's ask) gets a failure carrying both keys, className \
                    org.apache.spark.SparkException and a message that is not empty (a strict master MAY close \
                        instead, SPEC §8.1 `RuleViolation`)".into(),
        body: run(failure_form),
        ..Case::default()
    });
    cs.push(Case {
        id: "spec/14.4/redaction".into(),
        level: Level::Must,
        targets: vec![Target::Master],
        timeout: Duration::from_secs(10),
        requirement: "SPEC §14.4, \"every value whose key or own text matches the redaction pattern is replaced by \
            `*********(redacted)`\": in MasterStateResponse an application's environment value under a key matching \
                the default pattern, and the value of a `-Dkey=value` javaOpt and argument whose key matches, read \
                    `*********(redacted)`; other values are shown as sent".into(),
        body: run(redaction),
        ..Case::default()
    });
    // These register workers and read the master's state, or wait for a worker to be declared
    // DEAD: alone, as the other cases that register workers with executors.
    cs.push(Case {
        id: "spec/14.2/Z2/reconnect-dead-worker".into(),
        level: Level::Must,
        targets: vec![Target::Master],
        timeout: Duration::from_secs(20),
        sharing: Sharing::Alone,
        requirement: "SPEC §14.2 Z2, \"A `Heartbeat` naming a worker the master declared DEAD (its connection closed ...) is \
            answered `ReconnectWorker` over the connection it came on\": after a registered worker's connection \
                closes, a Heartbeat naming it over a new worker connection is answered ReconnectWorker (a strict \
                    master MAY close instead, SPEC §14.2, and then it also closes a connection that sends a Heartbeat \
                        before registering)".into(),
        body: run(reconnect_dead_worker),
        ..Case::default()
    });
    cs.push(Case {
        id: "spec/14.2/Z2/spark-13604".into(),
        level: Level::Must,
        targets: vec![Target::Master],
        timeout: Duration::from_secs(20),
        sharing: Sharing::Alone,
        requirement: "SPEC §14.2 Z2, \"one from a registered worker over its own connection is answered with one `KillExecutor` \
            for each executor it lists that the master does not have on that worker and one `KillDriver` for each \
                driver ... in any order (Spark's SPARK-13604)\": a WorkerLatestState listing an executor and a driver \
                    the master never launched gets a KillExecutor and a KillDriver for them".into(),
        body: run(spark_13604),
        ..Case::default()
    });
}

/// A fresh worker id of Spark's form, never registered.
fn fresh_worker_id() -> String {
    format!("worker-20250101120000-127.0.0.1-{}", unique())
}

fn heartbeat(id: &str) -> D {
    D::Heartbeat(Heartbeat::new(id.into(), worker_ref("127.0.0.1", 1)))
}

/// What a connection got after a message the master ignores, or MAY refuse: none of the
/// answers `answer` picks within the quiet time (frames meant for every worker or application
/// pass), or (a strict master) a close; true for the close.
async fn nothing_back(
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
                _ => return Err(fail(want, crate::peer::describe(c.family, &body, c.v()))),
            },
            Some(Event::TooLarge(n)) => {
                return Err(fail(want, format!("a prefix declaring {n} bytes")))
            }
        }
    }
}

/// What a master could answer a worker's Heartbeat with.
fn heartbeat_answer(m: &D) -> bool {
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
fn unregister_answer(m: &D) -> bool {
    matches!(
        m,
        D::ApplicationRemoved(_) | D::RegisteredApplication(_) | D::MasterChanged(_)
    )
}

async fn worker_absent(ctx: &Ctx, id: &str) -> Outcome {
    let s = state(ctx).await?;
    check(
        !s.workers.iter().any(|w| w.id == id),
        format!("no worker {id} in the master's state"),
        "the worker registered by a Heartbeat",
    )
}

async fn heartbeat_before_registering(ctx: Ctx) -> Outcome {
    let id = fresh_worker_id();
    let mut c = open(&ctx, Role::Worker, "worker", &id, Version::V2).await?;
    c.send(&Envelope::Send(heartbeat(&id))).await?;
    nothing_back(
        &ctx,
        &mut c,
        "a Heartbeat of a worker never registered",
        heartbeat_answer,
    )
    .await?;
    worker_absent(&ctx, &id).await
}

async fn heartbeat_naming_unknown_worker(ctx: Ctx) -> Outcome {
    let mut w = worker(&ctx, "worker", 0, 0, Version::V2).await?;
    let other = fresh_worker_id();
    w.conn.send(&Envelope::Send(heartbeat(&other))).await?;
    let closed = nothing_back(
        &ctx,
        &mut w.conn,
        "a Heartbeat of a worker never registered",
        heartbeat_answer,
    )
    .await?;
    worker_absent(&ctx, &other).await?;
    if closed {
        return Ok(());
    }
    let s = state(&ctx).await?;
    check(
        s.workers
            .iter()
            .any(|i| i.id == w.id && i.state == WorkerState::Alive),
        "the registered worker still ALIVE",
        "not ALIVE",
    )
}

async fn unregister_before_registering(ctx: Ctx) -> Outcome {
    let mut c = open(&ctx, Role::AppClient, "app", "", Version::V2).await?;
    let m = D::UnregisterApplication(UnregisterApplication::new(format!(
        "app-20250101120000-{}",
        unique()
    )));
    c.send(&Envelope::Send(m)).await?;
    if nothing_back(
        &ctx,
        &mut c,
        "an UnregisterApplication of an unknown application",
        unregister_answer,
    )
    .await?
    {
        return Ok(());
    }
    // Still serving: the connection registers an application.
    let port = 40000 + (unique() % 20000) as i32;
    c.send(&Envelope::Send(D::RegisterApplication(
        RegisterApplication::new(
            app_desc(Some(1), 64, Some(0)),
            EndpointRef::at(Addr::new("127.0.0.1", port), "AppClient"),
        ),
    )))
    .await?;
    let want = "RegisteredApplication (or, from a strict master, a close)";
    match c
        .expect_or_close::<D, ()>(wait(&ctx), want, |e| {
            matches!(e, Envelope::Send(D::RegisteredApplication(_))).then_some(())
        })
        .await
    {
        Err(Failure::Fail { seen, .. }) if seen.contains("closed") => check(
            strict_master(&ctx).await?,
            "RegisteredApplication (a close only from a strict master)",
            "the connection closed, and the master takes messages before a registration: it is not strict",
        ),
        other => other,
    }
}

async fn request_executors_unknown_app(ctx: Ctx) -> Outcome {
    let (mut c, id) = app(&ctx, "app", app_desc(Some(1), 64, Some(0)), Version::V2).await?;
    let m = D::RequestExecutors(RequestExecutors::new(format!("{id}-other"), vec![]));
    c.send(&Envelope::Ask { id: 5, message: m }).await?;
    let want = "a bool reply false to ask 5 (or, strictly, a failure or a close)";
    let got = c
        .expect_or_close::<D, Envelope<D>>(wait(&ctx), want, |e| match e {
            Envelope::Failure { id: 5, .. } | Envelope::Reply { id: 5, .. } => Some(e.clone()),
            _ => None,
        })
        .await;
    match got {
        Ok(Envelope::Reply {
            reply: Reply::Bool(false),
            ..
        })
        | Ok(Envelope::Failure { .. }) => Ok(()),
        Ok(other) => Err(fail(want, crate::peer::envelope_label(&other))),
        Err(Failure::Fail { seen, .. }) if seen.contains("closed") => Ok(()),
        Err(e) => Err(e),
    }
}

/// Whether the master refuses messages before a registration (SPEC §14.2: a strict master MAY):
/// a Heartbeat naming a worker never registered, on a fresh worker connection, closes it.
async fn strict_master(ctx: &Ctx) -> Result<bool, Failure> {
    let id = fresh_worker_id();
    let mut c = open(ctx, Role::Worker, "strictness", &id, Version::V2).await?;
    c.send(&Envelope::Send(heartbeat(&id))).await?;
    Ok(c.closes_within(ctx.settings.quiet).await)
}

/// Asks `m` on `c` as ask `id` and expects a failure of class `java.lang.SecurityException`; a
/// strict master MAY close the connection instead (the message breaks rule P2 too, SPEC §8.1
/// `RuleViolation`).
async fn security_failure(ctx: &Ctx, c: &mut Conn, id: u64, m: D) -> Outcome {
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
        other => Err(fail(want, crate::peer::envelope_label(&other))),
    }
}

async fn two_apps(ctx: &Ctx) -> Result<((Conn, String), (Conn, String)), Failure> {
    let a = app(ctx, "app-a", app_desc(Some(1), 64, Some(0)), Version::V2).await?;
    let b = app(ctx, "app-b", app_desc(Some(1), 64, Some(0)), Version::V2).await?;
    Ok((a, b))
}

async fn kill_executors_other_connection(ctx: Ctx) -> Outcome {
    let ((_a, a_id), (mut b, _)) = two_apps(&ctx).await?;
    let m = D::KillExecutors(KillExecutors::new(a_id, vec!["0".into()]));
    security_failure(&ctx, &mut b, 61, m).await
}

async fn request_executors_other_connection(ctx: Ctx) -> Outcome {
    let ((_a, a_id), (mut b, _)) = two_apps(&ctx).await?;
    let m = D::RequestExecutors(RequestExecutors::new(a_id, vec![]));
    security_failure(&ctx, &mut b, 62, m).await
}

async fn unregister_other_connection(ctx: Ctx) -> Outcome {
    let ((_a, a_id), (mut b, _)) = two_apps(&ctx).await?;
    b.send(&Envelope::Send(D::UnregisterApplication(
        UnregisterApplication::new(a_id.clone()),
    )))
    .await?;
    b.expect_closed(
        crate::kit::common::reaction_wait(&ctx),
        "the connection closed (UnregisterApplication of another connection's application refused)",
    )
    .await?;
    let s = state(&ctx).await?;
    check(
        s.active_apps.iter().any(|x| x.id == a_id),
        format!("{a_id} still active"),
        "unregistered by another connection",
    )
}

async fn heartbeat_other_connection(ctx: Ctx) -> Outcome {
    let (a, mut b) = two_workers(&ctx, Version::V2).await?;
    b.conn.send(&Envelope::Send(heartbeat(&a.id))).await?;
    b.conn
        .expect_closed(
            crate::kit::common::reaction_wait(&ctx),
            "the connection closed (a Heartbeat naming another connection's worker refused)",
        )
        .await
}

async fn latest_state_other_connection(ctx: Ctx) -> Outcome {
    let (mut a, mut b) = two_workers(&ctx, Version::V2).await?;
    let listed = ExecutorDescription::new(
        format!("app-20250101120000-{}", unique() % 10000),
        7,
        0,
        1,
        64,
        ExecutorState::Running,
    );
    b.conn
        .send(&Envelope::Send(D::WorkerLatestState(
            WorkerLatestState::new(a.id.clone(), vec![listed], vec![]),
        )))
        .await?;
    b.conn
        .expect_closed(
            crate::kit::common::reaction_wait(&ctx),
            "the connection closed (a WorkerLatestState naming another connection's worker refused)",
        )
        .await?;
    a.conn
        .expect_none::<D>(
            ctx.settings.quiet,
            "no KillExecutor to the named worker (nothing a refused message asks for happens)",
            |e| matches!(e, Envelope::Send(D::KillExecutor(_))),
        )
        .await
}

async fn redaction(ctx: Ctx) -> Outcome {
    const SECRET: &str = "conformance-s3cr3t-value";
    let mut desc = app_desc(Some(1), 64, Some(0));
    let mut env = BTreeMap::new();
    env.insert("SPARK_AUTH_TOKEN".to_string(), SECRET.to_string());
    env.insert("SPARK_PLAIN".to_string(), "shown-as-sent".to_string());
    desc.command.environment = env;
    desc.command.java_opts = vec![
        format!("-Dspark.ssl.keyPassword={SECRET}"),
        "-Dspark.app.plain=shown-as-sent".into(),
    ];
    desc.command.arguments = vec![format!("-Dspark.my.secret.key={SECRET}")];
    let (_c, id) = app(&ctx, "app", desc, Version::V2).await?;
    let s = state(&ctx).await?;
    let a = s
        .active_apps
        .iter()
        .find(|a| a.id == id)
        .ok_or_else(|| fail(format!("{id} in the master's state"), "absent"))?;
    let cmd = &a.desc.command;
    let want = format!(
        "SPARK_AUTH_TOKEN, -Dspark.ssl.keyPassword and -Dspark.my.secret.key read {REDACTED}; SPARK_PLAIN and \
            -Dspark.app.plain as sent"
    );
    let ok = cmd.environment.get("SPARK_AUTH_TOKEN").map(String::as_str) == Some(REDACTED)
        && cmd.environment.get("SPARK_PLAIN").map(String::as_str) == Some("shown-as-sent")
        && cmd
            .java_opts
            .contains(&format!("-Dspark.ssl.keyPassword={REDACTED}"))
        && cmd
            .java_opts
            .contains(&"-Dspark.app.plain=shown-as-sent".to_string())
        && cmd
            .arguments
            .contains(&format!("-Dspark.my.secret.key={REDACTED}"));
    check(
        ok,
        want,
        format!(
            "environment {:?}, javaOpts {:?}, arguments {:?}",
            cmd.environment, cmd.java_opts, cmd.arguments
        ),
    )
}

async fn reconnect_dead_worker(ctx: Ctx) -> Outcome {
    let w = worker(&ctx, "worker", 0, 0, Version::V2).await?;
    let id = w.id.clone();
    drop(w);
    if ctx.log.wire() == Wire::Sparkwire {
        // SPEC §8: "a master marks a worker whose connection closed as lost".
        settle(
            &ctx,
            || async {
                Ok(!state(&ctx)
                    .await?
                    .workers
                    .iter()
                    .any(|i| i.id == id && i.state == WorkerState::Alive))
            },
            "the worker no longer ALIVE once its connection closed",
        )
        .await?;
    } else {
        // Spark's WorkerInfo.state reads ALIVE on its wire (SPEC §15.4): give it time.
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    let mut c = open(&ctx, Role::Worker, "again", &id, Version::V2).await?;
    c.send(&Envelope::Send(heartbeat(&id))).await?;
    match c
        .expect_or_close::<D, ()>(wait(&ctx), "ReconnectWorker", |e| {
            matches!(e, Envelope::Send(D::ReconnectWorker(_))).then_some(())
        })
        .await
    {
        Err(Failure::Fail { seen, .. }) if seen.contains("closed") => check(
            strict_master(&ctx).await?,
            "ReconnectWorker (a close only from a strict master, SPEC §14.2)",
            "the connection closed, and the master takes messages before a registration: it is not strict",
        ),
        other => other,
    }
}

async fn spark_13604(ctx: Ctx) -> Outcome {
    let mut w = worker(&ctx, "worker", 0, 0, Version::V2).await?;
    let n = unique() % 10000;
    let app_id = format!("app-20000101000000-{n:04}");
    let driver_id = format!("driver-20000101000000-{n:04}");
    let listed = ExecutorDescription::new(app_id.clone(), 3, 0, 1, 64, ExecutorState::Running);
    w.conn
        .send(&Envelope::Send(D::WorkerLatestState(
            WorkerLatestState::new(w.id.clone(), vec![listed], vec![driver_id.clone()]),
        )))
        .await?;
    let (mut killed_exec, mut killed_driver) = (false, false);
    let want = format!("KillExecutor {app_id}/3 and KillDriver {driver_id}, in any order");
    while !(killed_exec && killed_driver) {
        let which = w
            .conn
            .expect::<D, bool>(
                crate::kit::common::reaction_wait(&ctx),
                &want,
                |e| match e {
                    Envelope::Send(D::KillExecutor(k)) if k.app_id == app_id && k.exec_id == 3 => {
                        Some(true)
                    }
                    Envelope::Send(D::KillDriver(k)) if k.driver_id == driver_id => Some(false),
                    _ => None,
                },
            )
            .await?;
        if which {
            killed_exec = true;
        } else {
            killed_driver = true;
        }
    }
    Ok(())
}

async fn failure_form(ctx: Ctx) -> Outcome {
    let mut w = worker(&ctx, "worker", 0, 0, Version::V2).await?;
    w.conn
        .send(&Envelope::Ask {
            id: 71,
            message: D::RequestMasterState(RequestMasterState::new()),
        })
        .await?;
    let want = "a failure for ask 71: [3, 71, \
        {\"className\": \"org.apache.spark.SparkException\", \"message\": a text}]";
    let deadline = tokio::time::Instant::now() + wait(&ctx);
    loop {
        let left = deadline.saturating_duration_since(tokio::time::Instant::now());
        let body = match w.conn.frame_body_or_close(left, want).await {
            Ok(body) => body,
            // A strict master closes instead (the ask breaks rule M1 too, SPEC §8.1).
            Err(Failure::Fail { seen, .. }) if seen.contains("closed") => {
                return check(
                    strict_master(&ctx).await?,
                    format!("{want} (a close only from a strict master)"),
                    "the connection closed, and the master takes messages before a registration: it is not strict",
                );
            }
            Err(e) => return Err(e),
        };
        // Read by hand, so that a failure missing a key is seen as such.
        let Some(value) = crate::mp::to_json(&body) else {
            return Err(fail(want, "a frame that is not MessagePack"));
        };
        let Some(items) = value.as_array() else {
            continue;
        };
        if items.get(1).and_then(|t| t.as_u64()) != Some(71) {
            continue;
        }
        if items.first().and_then(|t| t.as_u64()) != Some(3) {
            return Err(fail(
                want,
                crate::peer::describe(w.conn.family, &body, w.conn.v()),
            ));
        }
        let error = items.get(2);
        let class = error
            .and_then(|e| e.get("className"))
            .and_then(|c| c.as_str());
        let message = error
            .and_then(|e| e.get("message"))
            .and_then(|m| m.as_str());
        return check(
            class == Some("org.apache.spark.SparkException")
                && message.is_some_and(|m| !m.is_empty()),
            want,
            format!("{}", error.cloned().unwrap_or_default()),
        );
    }
}

async fn second_registration_ignored(ctx: Ctx) -> Outcome {
    let (mut c, id) = app(&ctx, "app", app_desc(Some(1), 64, Some(0)), Version::V2).await?;
    let port = 40000 + (unique() % 20000) as i32;
    c.send(&Envelope::Send(D::RegisterApplication(
        RegisterApplication::new(
            app_desc(Some(1), 64, Some(0)),
            EndpointRef::at(Addr::new("127.0.0.1", port), "AppClient"),
        ),
    )))
    .await?;
    c.expect_none::<D>(
        ctx.settings.quiet,
        "no second RegisteredApplication on the connection",
        |e| matches!(e, Envelope::Send(D::RegisteredApplication(_))),
    )
    .await?;
    let s = state(&ctx).await?;
    check(
        s.active_apps.iter().any(|a| a.id == id),
        format!("{id} still active"),
        "no longer active",
    )
}

async fn driver_status(
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

async fn kill_driver_other_connection(ctx: Ctx) -> Outcome {
    let (mut a, r) = submit(&ctx).await?;
    let id = r.driver_id.clone().unwrap_or_default();
    let mut b = open(&ctx, Role::DriverClient, "client-b", "", Version::V2).await?;
    let refused = security_failure(
        &ctx,
        &mut b,
        81,
        D::RequestKillDriver(RequestKillDriver::new(id.clone())),
    )
    .await;
    let s = driver_status(&ctx, &mut a, 82, &id).await?;
    // The suite's own driver ends here, over its own connection.
    a.send(&Envelope::Ask {
        id: 83,
        message: D::RequestKillDriver(RequestKillDriver::new(id.clone())),
    })
    .await?;
    refused?;
    check(
        s.found && s.state != Some(DriverState::Killed),
        format!("{id} still active"),
        format!("{s:?}"),
    )
}

async fn kill_after_submitter_left(ctx: Ctx) -> Outcome {
    let (a, r) = submit(&ctx).await?;
    let id = r.driver_id.clone().unwrap_or_default();
    drop(a);
    let want = format!("KillDriverResponse success = true for {id} from a new driver client");
    let deadline = tokio::time::Instant::now() + wait(&ctx);
    let mut last;
    loop {
        // A fresh connection each time: a strict master MAY close one whose kill it refused.
        let mut b = open(&ctx, Role::DriverClient, "client-b", "", Version::V2).await?;
        b.send(&Envelope::Ask {
            id: 86,
            message: D::RequestKillDriver(RequestKillDriver::new(id.clone())),
        })
        .await?;
        let got = b
            .expect::<D, Envelope<D>>(wait(&ctx), &want, |e| match e {
                Envelope::Failure { id: 86, .. } | Envelope::Reply { id: 86, .. } => {
                    Some(e.clone())
                }
                _ => None,
            })
            .await;
        match got {
            Ok(Envelope::Reply {
                reply: Reply::Message(D::KillDriverResponse(k)),
                ..
            }) => {
                // A waiting driver ends KILLED at once; a placed one when its worker says so
                // (a worker faked by another case may never), so only the answer is judged.
                return check(k.success, &want, format!("{k:?}"));
            }
            Ok(Envelope::Failure { error, .. }) => {
                last = format!("a failure {}: {:?}", error.class_name, error.message);
            }
            Ok(other) => return Err(fail(want, crate::peer::envelope_label(&other))),
            Err(Failure::Fail { seen, .. }) if seen.contains("closed") => {
                last = "the connection closed".into();
            }
            Err(e) => return Err(e),
        }
        if tokio::time::Instant::now() >= deadline {
            return Err(fail(want, last));
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

async fn driver_status_any_client(ctx: Ctx) -> Outcome {
    let (mut a, r) = submit(&ctx).await?;
    let id = r.driver_id.clone().unwrap_or_default();
    let mut b = open(&ctx, Role::DriverClient, "client-b", "", Version::V2).await?;
    let s = driver_status(&ctx, &mut b, 84, &id).await;
    a.send(&Envelope::Ask {
        id: 85,
        message: D::RequestKillDriver(RequestKillDriver::new(id.clone())),
    })
    .await?;
    let s = s?;
    check(s.found, "found = true", format!("{s:?}"))
}

/// What a master could answer a WorkerLatestState with.
fn kill_answer(m: &D) -> bool {
    matches!(m, D::KillExecutor(_) | D::KillDriver(_))
}

async fn latest_state_unknown_ignored(ctx: Ctx) -> Outcome {
    let id = fresh_worker_id();
    let mut c = open(&ctx, Role::Worker, "worker", &id, Version::V2).await?;
    let listed = ExecutorDescription::new(
        format!("app-20000101000000-{:04}", unique() % 10000),
        4,
        0,
        1,
        64,
        ExecutorState::Running,
    );
    c.send(&Envelope::Send(D::WorkerLatestState(
        WorkerLatestState::new(
            id.clone(),
            vec![listed],
            vec![format!("driver-20000101000000-{:04}", unique() % 10000)],
        ),
    )))
    .await?;
    nothing_back(
        &ctx,
        &mut c,
        "a WorkerLatestState of a worker the master does not know",
        kill_answer,
    )
    .await?;
    worker_absent(&ctx, &id).await
}

async fn unknown_updates_not_refused(ctx: Ctx) -> Outcome {
    let mut w = worker(&ctx, "worker", 0, 0, Version::V2).await?;
    let n = unique() % 10000;
    let update = D::ExecutorStateChanged(
        ExecutorStateChanged::new(
            format!("app-20000101000000-{n:04}"),
            5,
            ExecutorState::Exited,
        )
        .with_exit_status(Some(0)),
    );
    if w.conn.v() == Version::V1 {
        // Version 1 sends it one-way (Spark 3.0.3 on its own wire speaks only version 1).
        w.conn.send(&Envelope::Send(update)).await?;
        if w.conn.closes_within(ctx.settings.quiet).await {
            return check(
                strict_master(&ctx).await?,
                "the connection kept after an ExecutorStateChanged of an unknown executor (a close only from a strict \
                    master)",
                "the connection closed, and the master is not strict",
            );
        }
        return Ok(());
    }
    w.conn
        .send(&Envelope::Ask {
            id: 91,
            message: update,
        })
        .await?;
    let answered = w
        .conn
        .expect_or_close::<D, ()>(wait(&ctx), "a bool reply to ask 91", |e| {
            matches!(
                e,
                Envelope::Reply {
                    id: 91,
                    reply: Reply::Bool(_)
                }
            )
            .then_some(())
        })
        .await;
    if let Err(Failure::Fail { seen, .. }) = &answered {
        if seen.contains("closed") {
            return check(
                strict_master(&ctx).await?,
                "a bool reply to ask 91 (a close only from a strict master)",
                "the connection closed, and the master takes messages before a registration: it is not strict",
            );
        }
    }
    answered?;
    w.conn
        .send(&Envelope::Send(D::DriverStateChanged(
            DriverStateChanged::new(
                format!("driver-20000101000000-{n:04}"),
                DriverState::Finished,
            ),
        )))
        .await?;
    if w.conn.closes_within(ctx.settings.quiet).await {
        return check(
            strict_master(&ctx).await?,
            "the connection kept after a DriverStateChanged of an unknown driver (a close only from a strict master)",
            "the connection closed, and the master is not strict",
        );
    }
    Ok(())
}
