//! `--target driver`: the suite plays the master of a driver it starts, and its executors.

use std::sync::Arc;
use std::time::Duration;

use sparkwire::messages::coarse::*;
use sparkwire::messages::{CoarseMessage, DeployMessage, Version};
use sparkwire::wire::handshake::Role;
use sparkwire::wire::{encode_envelope, Envelope, Reply};

use crate::case::{run, Case, Target};
use crate::env::Ctx;
use crate::kit::auth;
use crate::kit::auth::{Guarded, SecuredServer, Seen};
use crate::kit::client::Client;
use crate::kit::common::wait;
use crate::kit::common::{crossing, expect_refused, sample};
use crate::kit::server::{Listening, Server};
use crate::kit::spawned::{self};
use crate::mp;
use crate::peer::Conn;
use crate::verdict::{check, fail, Level};

type C = CoarseMessage;
type D = DeployMessage;

use crate::kit::driver::*;

/// The driver as the cases about any server see it.
pub fn server() -> Server {
    fn probe() -> Vec<(&'static str, Vec<u8>)> {
        vec![("resourceProfileId", mp::u(0))]
    }
    fn v2() -> Vec<(&'static str, Vec<u8>)> {
        vec![("executorId", mp::s("1"))]
    }
    fn bad() -> Vec<(&'static str, Vec<u8>)> {
        vec![("executorId", mp::u(5))]
    }
    // The driver's own StopExecutor: an executor may not send it.
    fn no_fields() -> Vec<(&'static str, Vec<u8>)> {
        vec![]
    }
    Server {
        open: Arc::new(|ctx: Ctx| {
            Box::pin(async move {
                let d = registered(&ctx, SMALL).await?;
                let addr = d.driver_addr;
                Ok(Listening {
                    addr,
                    guard: Box::new(Arc::new(std::sync::Mutex::new(d))),
                })
            })
        }),
        name: "the driver (on its executor port)",
        good_role: Role::Executor,
        other_family_role: Role::Worker,
        server_role: Role::Driver,
        probe: ("RetrieveSparkAppConfig", probe),
        v2_only: ("IsExecutorAlive", v2),
        local: "ReviveOffers",
        bad_fields: ("IsExecutorAlive", bad),
        off_route: ("StopExecutor", no_fields),
    }
}

/// The driver as the cases about any client see it.
pub fn client() -> Client {
    Client {
        start: Arc::new(|ctx| Box::pin(start(ctx, SMALL))),
        name: "the driver's application client",
        role: Role::AppClient,
        server_role: Role::Master,
        other_family_role: Role::Driver,
    }
}

/// The route cases: every coarse ask the driver must refuse from an executor.
pub fn routes(cs: &mut Vec<Case>) {
    for msg in crossing("coarse") {
        let ask = msg.kind == sparkwire::definition::MessageKind::Ask;
        if !ask || msg.from.iter().any(|r| r == "executor") {
            continue;
        }
        let requirement =
            format!(
            "the driver refuses the ask {} from an executor ({} → {} only): a failure or a close",
            msg.name, msg.from.join(", "), msg.to.join(", ")
        );
        cs.push(Case {
            id: format!("route/coarse/{}", msg.name),
            level: Level::Must,
            targets: vec![Target::Driver],
            requirement,
            body: run(move |ctx: Ctx| async move {
                let m: C = sample(msg)?;
                let d = registered(&ctx, SMALL).await?;
                let mut c = Conn::open(
                    d.driver_addr,
                    "executor",
                    Role::Executor,
                    "9",
                    &[Version::V2],
                    ctx.settings.secret.as_ref(),
                    &ctx.log,
                    wait(&ctx),
                )
                .await?;
                expect_refused(&mut c, Envelope::Ask { id: 71, message: m }, wait(&ctx)).await
            }),
            ..Case::default()
        });
    }
}

/// The driver as the authentication cases see it: registered with the suite's master, it holds
/// the secret on its executor port, and an executor's RegisterExecutor there changes its state
/// (IsExecutorAlive answers true for it).
pub fn secured() -> SecuredServer {
    SecuredServer {
        open: Arc::new(|ctx: Ctx| {
            Box::pin(async move {
                let d = registered(&ctx, SMALL).await?;
                let addr = d.driver_addr;
                let id = format!("auth{}", crate::kit::common::unique() % 100_000);
                let mut change = Vec::new();
                let register = Envelope::Ask {
                    id: 1,
                    message: register_msg(&id, 1),
                };
                encode_envelope(&register, Version::V2, &mut change)
                    .map_err(|e| fail("an envelope the suite can encode", e.to_string()))?;
                let seen: Seen = Arc::new(move || {
                    let (ctx, id) = (ctx.clone(), id.clone());
                    Box::pin(async move {
                        let mut c = auth::open_secured(&ctx, addr, Role::Executor, "probe").await?;
                        let ask = C::IsExecutorAlive(IsExecutorAlive::new(id));
                        c.send(&Envelope::Ask {
                            id: 2,
                            message: ask,
                        })
                        .await?;
                        c.expect::<C, bool>(wait(&ctx), "a bool reply to IsExecutorAlive", |x| {
                            match x {
                                Envelope::Reply {
                                    id: 2,
                                    reply: Reply::Bool(b),
                                } => Some(*b),
                                _ => None,
                            }
                        })
                        .await
                    })
                });
                Ok(Guarded {
                    at: Listening {
                        addr,
                        guard: Box::new(Arc::new(std::sync::Mutex::new(d))),
                    },
                    role: Role::Executor,
                    change,
                    seen,
                })
            })
        }),
        name: "a driver (on its executor port)",
        what: "RegisterExecutor",
        change_case: "register",
    }
}

/// The driver's flows.
pub fn flows(cs: &mut Vec<Case>) {
    cs.push(Case {
        id: "rules/P1/register-first".into(),
        level: Level::Must,
        targets: vec![Target::Driver],
        requirement: "the driver's application client sends RegisterApplication first, and nothing else until \
            RegisteredApplication (rule P1)".into(),
        body: run(|ctx: Ctx| async move {
            let (_run, mut app) = start(ctx.clone(), SMALL).await?;
            let hello = app.read_hello(spawned::startup(&ctx)).await?;
            spawned::accept(
                &ctx,
                &mut app,
                &hello,
                &[Version::V1, Version::V2],
                "master",
            )
            .await?;
            let first = app.recv::<D>(wait(&ctx), "RegisterApplication").await?;
            check(
                matches!(first, Envelope::Send(D::RegisterApplication(_))),
                "a send of \
                RegisterApplication",
                crate::peer::envelope_label(&first),
            )?;
            app.expect_none::<D>(
                ctx.settings.quiet,
                "nothing before \
                RegisteredApplication",
                |e| !matches!(e, Envelope::Send(D::RegisterApplication(_))),
            )
            .await
        }),
        ..Case::default()
    });
    cs.push(Case {
        id: "flow/driver/app/command".into(),
        level: Level::Must,
        targets: vec![Target::Driver],
        requirement: "the application's command starts an executor with --driver-url of the driver's endpoint and Spark's \
            placeholders {{EXECUTOR_ID}}, {{HOSTNAME}}, {{CORES}}, {{APP_ID}} that a worker fills in".into(),
        body: run(|ctx: Ctx| async move {
            let d = registered(&ctx, SMALL).await?;
            let args = d.reg.app_description.command.arguments.join(" ");
            let url = driver_url(&d.reg).unwrap_or_default();
            check(url.starts_with("spark://CoarseGrainedScheduler@"), "spark://CoarseGrainedScheduler@HOST:PORT", url)?;
            for p in ["{{EXECUTOR_ID}}", "{{HOSTNAME}}", "{{CORES}}", "{{APP_ID}}"] {
                check(args.contains(p), format!("the placeholder {p}"), args.clone())?;
            }
            Ok(())
        }),
        ..Case::default()
    });
    cs.push(Case {
        id: "flow/driver/executor/app-config".into(),
        level: Level::Must,
        targets: vec![Target::Driver],
        requirement: "the driver answers RetrieveSparkAppConfig with SparkAppConfig carrying spark.rpc.message.maxSize, the limit \
            the executor must apply".into(),
        body: run(|ctx: Ctx| async move {
            let d = registered(&ctx, Job { max_message_size: 64, ..SMALL }).await?;
            let mut c = Conn::open(d.driver_addr, "executor", Role::Executor, "1", &[Version::V2],
                ctx.settings.secret.as_ref(), &ctx.log, wait(&ctx)).await?;
            c.send(&Envelope::Ask { id: 2, message: C::RetrieveSparkAppConfig(RetrieveSparkAppConfig::new(0)) }).await?;
            let cfg = c.expect::<C, SparkAppConfig>(wait(&ctx), "SparkAppConfig", |e| match e {
                Envelope::Reply { id: 2, reply: Reply::Message(C::SparkAppConfig(s)) } => Some(s.clone()),
                _ => None,
            }).await?;
            let v = cfg.spark_properties.iter().find(|(k, _)| k == "spark.rpc.message.maxSize").map(|(_, v)| v.clone());
            check(v.as_deref() == Some("64"), "spark.rpc.message.maxSize = 64", format!("{v:?}"))
        }),
        ..Case::default()
    });
    cs.push(Case {
        id: "flow/driver/executor/register".into(),
        level: Level::Must,
        targets: vec![Target::Driver],
        requirement: "the driver answers an executor's RegisterExecutor with true".into(),
        body: run(|ctx: Ctx| async move {
            let d = registered(&ctx, SMALL).await?;
            executor(&ctx, &d, "1", 2, Version::V2).await.map(|_| ())
        }),
        ..Case::default()
    });
    cs.push(Case {
        id: "rules/X3/duplicate-id".into(),
        level: Level::Must,
        targets: vec![Target::Driver],
        requirement: "the driver answers a RegisterExecutor whose executor id is registered with a failure carrying Spark's text \
            `Duplicate executor ID: ID`, never with true (rule X3)".into(),
        body: run(|ctx: Ctx| async move {
            let d = registered(&ctx, SMALL).await?;
            let _one = executor(&ctx, &d, "1", 2, Version::V2).await?;
            let mut c = Conn::open(d.driver_addr, "again", Role::Executor, "1", &[Version::V2],
                ctx.settings.secret.as_ref(), &ctx.log, wait(&ctx)).await?;
            c.send(&Envelope::Ask { id: 1, message: register_msg("1", 2) }).await?;
            let got = c.expect::<C, Result<String, String>>(wait(&ctx), "a failure", |e| match e {
                Envelope::Failure { id: 1, error } => Some(Ok(error.message.clone())),
                Envelope::Reply { id: 1, reply } => Some(Err(format!("{reply:?}"))),
                _ => None,
            }).await?;
            match got {
                Ok(m) => check(m.contains("Duplicate executor ID: 1"), "Duplicate executor ID: 1", m),
                Err(r) => Err(fail("a failure", format!("the reply {r}"))),
            }
        }),
        ..Case::default()
    });
    cs.push(Case {
        id: "rules/X1/register-first".into(),
        level: Level::Must,
        targets: vec![Target::Driver],
        requirement: "the driver launches no task on an executor before it registered and sent LaunchedExecutor (rules X1, X4)".into(),
        body: run(|ctx: Ctx| async move {
            let d = registered(&ctx, SMALL).await?;
            let mut e = executor(&ctx, &d, "1", 2, Version::V2).await?;
            e.conn.expect_none::<C>(Duration::from_millis(1200), "no LaunchTask before \
                LaunchedExecutor", |e| matches!(e, Envelope::Send(C::LaunchTask(_)))).await?;
            e.launched().await?;
            e.task(&ctx).await.map(|_| ())
        }),
        ..Case::default()
    });
    cs.push(Case {
        id: "rules/T5/task-description".into(),
        level: Level::Must,
        targets: vec![Target::Driver],
        requirement: "LaunchTask's data is a TaskDescription (SPEC §10) naming the executor, with cpus = spark.task.cpus (1), \
            attempt 0, partition = index (rule T5)".into(),
        body: run(|ctx: Ctx| async move {
            let d = registered(&ctx, SMALL).await?;
            let mut e = executor(&ctx, &d, "1", 2, Version::V2).await?;
            e.launched().await?;
            let t = e.task(&ctx).await?;
            check(t.executor_id == "1" && t.cpus == 1 && t.attempt_number == 0 && t.partition_id == t.index,
                "executor 1, 1 cpu, attempt 0, partition = \
                    index", format!("executor {} cpus {} attempt {} partition {} index \
                        {}", t.executor_id, t.cpus, t.attempt_number, t.partition_id, t.index))
        }),
        ..Case::default()
    });
    cs.push(Case {
        id: "rules/T1/slots".into(),
        level: Level::Must,
        targets: vec![Target::Driver],
        requirement: "the driver never runs more tasks on an executor than its cores allow: 2 cores, no task finished, at most 2 \
            LaunchTask (rule T1)".into(),
        body: run(|ctx: Ctx| async move {
            let d = registered(&ctx, SMALL).await?;
            let mut e = executor(&ctx, &d, "1", 2, Version::V2).await?;
            e.launched().await?;
            e.task(&ctx).await?;
            e.task(&ctx).await?;
            e.conn.expect_none::<C>(Duration::from_millis(1200), "no third LaunchTask while 2 \
                run", |e| matches!(e, Envelope::Send(C::LaunchTask(_)))).await
        }),
        ..Case::default()
    });
    cs.push(Case {
        id: "flow/driver/job/completes".into(),
        level: Level::Must,
        targets: vec![Target::Driver],
        requirement: "the driver runs its job to the end on the suite's executor: unique task ids (rule T4), every partition once, \
            then StopExecutor, UnregisterApplication to the master, exit status 0".into(),
        body: run(|ctx: Ctx| async move {
            let mut d = registered(&ctx, SMALL).await?;
            let mut e = executor(&ctx, &d, "1", 2, Version::V2).await?;
            e.launched().await?;
            let tasks = serve(&ctx, &mut e).await?;
            let mut ids: Vec<i64> = tasks.iter().map(|t| t.task_id).collect();
            ids.sort_unstable();
            ids.dedup();
            check(ids.len() == tasks.len(), "unique task \
                ids", format!("{:?}", tasks.iter().map(|t| t.task_id).collect::<Vec<_>>()))?;
            let mut idx: Vec<i32> = tasks.iter().map(|t| t.index).collect();
            idx.sort_unstable();
            check(idx == [0, 1, 2, 3], "partitions 0 to 3 once each", format!("{idx:?}"))?;
            let app_id = d.app_id.clone();
            d.app.expect::<D, ()>(wait(&ctx), "UnregisterApplication with the app id", |e| match e {
                Envelope::Send(D::UnregisterApplication(u)) if u.app_id == app_id => Some(()),
                _ => None,
            }).await?;
            match d.run.exit_within(wait(&ctx)).await? {
                Some(code) => check(code == 0, "exit status 0", code.to_string()),
                None => Err(fail("the driver to exit", "still running")),
            }
        }),
        ..Case::default()
    });
    cs.push(Case {
        id: "flow/driver/job/v1-executor".into(),
        level: Level::Must,
        targets: vec![Target::Driver],
        requirement: "the driver runs tasks on an executor that speaks only version 1 (StatusUpdate without taskCpus)".into(),
        body: run(|ctx: Ctx| async move {
            let d = registered(&ctx, SMALL).await?;
            let mut e = executor(&ctx, &d, "1", 2, Version::V1).await?;
            e.launched().await?;
            let tasks = serve(&ctx, &mut e).await?;
            check(tasks.len() == 4, "4 tasks", tasks.len().to_string())
        }),
        ..Case::default()
    });
    cs.push(Case {
        id: "flow/driver/task/retry".into(),
        level: Level::Must,
        targets: vec![Target::Driver],
        requirement: "a task reported FAILED is launched again with the next attempt number (spark.task.maxFailures)".into(),
        body: run(|ctx: Ctx| async move {
            let d = registered(&ctx, Job { partitions: 1, ..SMALL }).await?;
            let mut e = executor(&ctx, &d, "1", 1, Version::V2).await?;
            e.launched().await?;
            let t = e.task(&ctx).await?;
            e.fail_task(&t).await?;
            let again = e.task(&ctx).await?;
            check(again.index == t.index && again.attempt_number == t.attempt_number + 1 && again.task_id != t.task_id,
                format!("index {} attempt {} under a new task id", t.index, t.attempt_number + 1),
                format!("index {} attempt {} task id {}", again.index, again.attempt_number, again.task_id))
        }),
        ..Case::default()
    });
    cs.push(Case {
        id: "flow/driver/task/max-failures".into(),
        level: Level::Must,
        targets: vec![Target::Driver],
        requirement: "after spark.task.maxFailures (4) failed attempts of a task the job is aborted with Spark's `Job aborted due \
            to stage failure` and the driver exits non-zero".into(),
        body: run(|ctx: Ctx| async move {
            let mut d = registered(&ctx, Job { partitions: 1, ..SMALL }).await?;
            let mut e = executor(&ctx, &d, "1", 1, Version::V2).await?;
            e.launched().await?;
            for _ in 0..4 {
                let t = e.task(&ctx).await?;
                e.fail_task(&t).await?;
            }
            e.stopped(&ctx).await?;
            let code = d.run.exit_within(wait(&ctx)).await?;
            check(code.is_some_and(|c| c != 0), "a non-zero exit", format!("{code:?}"))?;
            let out = d.run.output();
            check(out.contains("Job aborted due to stage failure"), "Job aborted due to stage failure", out)
        }),
        ..Case::default()
    });
    cs.push(Case {
        id: "spec/10/task-size-limit".into(),
        level: Level::Must,
        targets: vec![Target::Driver],
        requirement: "a task whose serialized size reaches spark.rpc.message.maxSize less 200 KiB is not sent; the job fails with \
            Spark's text `Serialized task …exceeds max allowed: spark.rpc.message.maxSize (…)`, and the executor's \
                connection stays open (until StopExecutor at the driver's shutdown)".into(),
        body: run(|ctx: Ctx| async move {
            let mut d = registered(&ctx, Job { job: "big-task", partitions: 1, param: 2 << 20,
                max_message_size: 1 }).await?;
            let mut e = executor(&ctx, &d, "1", 1, Version::V2).await?;
            e.launched().await?;
            let stop = e.conn.expect::<C, bool>(wait(&ctx), "no LaunchTask, the connection open until \
                StopExecutor", |x| match x {
                Envelope::Send(C::LaunchTask(_)) => Some(false),
                Envelope::Send(C::StopExecutor(_)) => Some(true),
                _ => None,
            }).await?;
            check(stop, "no LaunchTask", "a LaunchTask")?;
            e.conn.shutdown_write().await;
            let code = d.run.exit_within(wait(&ctx)).await?;
            check(code.is_some_and(|c| c != 0), "the job failed (non-zero exit)", format!("{code:?}"))?;
            let out = d.run.output();
            check(out.contains("Serialized task 0:0 \
                was") && out.contains("which exceeds max allowed: spark.rpc.message.maxSize (843776 bytes)"),
                "Serialized task 0:0 was N bytes, which exceeds max allowed: spark.rpc.message.maxSize (843776 \
                    bytes)", out)
        }),
        ..Case::default()
    });
    cs.push(Case {
        id: "flow/driver/executor/is-alive".into(),
        level: Level::Must,
        targets: vec![Target::Driver],
        requirement: "the driver answers IsExecutorAlive (version 2) true for a registered executor and false for an unknown one".into(),
        body: run(|ctx: Ctx| async move {
            let d = registered(&ctx, SMALL).await?;
            let mut e = executor(&ctx, &d, "1", 2, Version::V2).await?;
            for (id, want) in [("1", true), ("77", false)] {
                e.conn.send(&Envelope::Ask { id: 90,
                    message: C::IsExecutorAlive(IsExecutorAlive::new(id.into())) }).await?;
                let b = e.conn.expect::<C, bool>(wait(&ctx), "a bool reply", |x| match x {
                    Envelope::Reply { id: 90, reply: Reply::Bool(b) } => Some(*b),
                    _ => None,
                }).await?;
                check(b == want, format!("{want} for executor {id}"), b.to_string())?;
            }
            Ok(())
        }),
        ..Case::default()
    });
    cs.push(Case {
        id: "rules/X5/no-tasks-after-decommissioning".into(),
        level: Level::Must,
        targets: vec![Target::Driver],
        requirement: "the driver sends no LaunchTask to an executor after its ExecutorDecommissioning (rule X5)".into(),
        body: run(|ctx: Ctx| async move {
            let d = registered(
                &ctx,
                Job {
                    partitions: 6,
                    ..SMALL
                },
            )
            .await?;
            let mut e = executor(&ctx, &d, "1", 1, Version::V2).await?;
            e.launched().await?;
            let t = e.task(&ctx).await?;
            e.conn
                .send(&Envelope::Ask {
                    id: 91,
                    message: C::ExecutorDecommissioning(ExecutorDecommissioning::new("1".into())),
                })
                .await?;
            e.conn
                .expect::<C, ()>(wait(&ctx), "a reply to ExecutorDecommissioning", |x| {
                    matches!(x, Envelope::Reply { id: 91, .. }).then_some(())
                })
                .await?;
            e.run(&t).await?;
            e.conn
                .expect_none::<C>(
                    Duration::from_millis(1500),
                    "no LaunchTask after ExecutorDecommissioning",
                    |x| matches!(x, Envelope::Send(C::LaunchTask(_))),
                )
                .await
        }),
        ..Case::default()
    });
}
