//! `flow/driver/…`: the flows of a driver: a whole conversation with the suite playing its peers.

use crate::harness::case::run;
use crate::harness::case::Case;
use crate::harness::case::Target;
use crate::harness::env::Ctx;
use crate::harness::peer::Conn;
use crate::harness::verdict::check;
use crate::harness::verdict::fail;
use crate::harness::verdict::Level;
use crate::kit::common::wait;
use crate::kit::driver::*;
use sparkwire::messages::coarse::*;
use sparkwire::messages::CoarseMessage;
use sparkwire::messages::DeployMessage;
use sparkwire::messages::Version;
use sparkwire::wire::handshake::Role;
use sparkwire::wire::Envelope;
use sparkwire::wire::Reply;

type C = CoarseMessage;
type D = DeployMessage;

/// The cases of this section, each naming its targets.
pub fn cases(cs: &mut Vec<Case>) {
    cs.push(Case {
        id: "flow/driver/app/command".into(),
        level: Level::Must,
        targets: vec![Target::Driver],
        requirement: "the application's command starts an executor with --driver-url and the \
            placeholders a worker fills in"
            .into(),
        body: run(|ctx: Ctx| async move {
            let d = registered(&ctx, SMALL).await?;
            let args = d.reg.app_description.command.arguments.join(" ");
            let url = driver_url(&d.reg).unwrap_or_default();
            check(
                url.starts_with("spark://CoarseGrainedScheduler@"),
                "spark://CoarseGrainedScheduler@HOST:PORT",
                url,
            )?;
            for p in ["{{EXECUTOR_ID}}", "{{HOSTNAME}}", "{{CORES}}", "{{APP_ID}}"] {
                check(
                    args.contains(p),
                    format!("the placeholder {p}"),
                    args.clone(),
                )?;
            }
            Ok(())
        }),
        ..Case::default()
    });
    cs.push(Case {
        id: "flow/driver/executor/app-config".into(),
        level: Level::Must,
        targets: vec![Target::Driver],
        requirement: "the driver answers RetrieveSparkAppConfig with a SparkAppConfig carrying \
            spark.rpc.message.maxSize"
            .into(),
        body: run(|ctx: Ctx| async move {
            let d = registered(
                &ctx,
                Job {
                    max_message_size: 64,
                    ..SMALL
                },
            )
            .await?;
            let mut c = Conn::open(
                d.driver_addr,
                "executor",
                Role::Executor,
                "1",
                &[Version::V2],
                ctx.settings.secret.as_ref(),
                &ctx.log,
                wait(&ctx),
            )
            .await?;
            c.send(&Envelope::Ask {
                id: 2,
                message: C::RetrieveSparkAppConfig(RetrieveSparkAppConfig::new(0)),
            })
            .await?;
            let cfg = c
                .expect::<C, SparkAppConfig>(wait(&ctx), "SparkAppConfig", |e| match e {
                    Envelope::Reply {
                        id: 2,
                        reply: Reply::Message(C::SparkAppConfig(s)),
                    } => Some(s.clone()),
                    _ => None,
                })
                .await?;
            let v = cfg
                .spark_properties
                .iter()
                .find(|(k, _)| k == "spark.rpc.message.maxSize")
                .map(|(_, v)| v.clone());
            check(
                v.as_deref() == Some("64"),
                "spark.rpc.message.maxSize = 64",
                format!("{v:?}"),
            )
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
        id: "flow/driver/job/completes".into(),
        level: Level::Must,
        targets: vec![Target::Driver],
        requirement: "the driver runs its job to the end: unique task ids (rule T4), each \
            partition once, StopExecutor, exit 0"
            .into(),
        body: run(|ctx: Ctx| async move {
            let mut d = registered(&ctx, SMALL).await?;
            let mut e = executor(&ctx, &d, "1", 2, Version::V2).await?;
            e.launched().await?;
            let tasks = serve(&ctx, &mut e).await?;
            let mut ids: Vec<i64> = tasks.iter().map(|t| t.task_id).collect();
            ids.sort_unstable();
            ids.dedup();
            check(
                ids.len() == tasks.len(),
                "unique task \
                ids",
                format!("{:?}", tasks.iter().map(|t| t.task_id).collect::<Vec<_>>()),
            )?;
            let mut idx: Vec<i32> = tasks.iter().map(|t| t.index).collect();
            idx.sort_unstable();
            check(
                idx == [0, 1, 2, 3],
                "partitions 0 to 3 once each",
                format!("{idx:?}"),
            )?;
            let app_id = d.app_id.clone();
            d.app
                .expect::<D, ()>(
                    wait(&ctx),
                    "UnregisterApplication with the app id",
                    |e| match e {
                        Envelope::Send(D::UnregisterApplication(u)) if u.app_id == app_id => {
                            Some(())
                        }
                        _ => None,
                    },
                )
                .await?;
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
        requirement:
            "the driver runs tasks on an executor that speaks only version 1 (StatusUpdate without \
            taskCpus)"
                .into(),
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
        requirement: "a task reported FAILED is launched again with the next attempt number \
            (spark.task.maxFailures)"
            .into(),
        body: run(|ctx: Ctx| async move {
            let d = registered(
                &ctx,
                Job {
                    partitions: 1,
                    ..SMALL
                },
            )
            .await?;
            let mut e = executor(&ctx, &d, "1", 1, Version::V2).await?;
            e.launched().await?;
            let t = e.task(&ctx).await?;
            e.fail_task(&t).await?;
            let again = e.task(&ctx).await?;
            check(
                again.index == t.index
                    && again.attempt_number == t.attempt_number + 1
                    && again.task_id != t.task_id,
                format!(
                    "index {} attempt {} under a new task id",
                    t.index,
                    t.attempt_number + 1
                ),
                format!(
                    "index {} attempt {} task id {}",
                    again.index, again.attempt_number, again.task_id
                ),
            )
        }),
        ..Case::default()
    });
    cs.push(Case {
        id: "flow/driver/task/max-failures".into(),
        level: Level::Must,
        targets: vec![Target::Driver],
        requirement:
            "after spark.task.maxFailures (4) failed attempts of a task the driver aborts \
            the job and exits non-zero"
                .into(),
        body: run(|ctx: Ctx| async move {
            let mut d = registered(
                &ctx,
                Job {
                    partitions: 1,
                    ..SMALL
                },
            )
            .await?;
            let mut e = executor(&ctx, &d, "1", 1, Version::V2).await?;
            e.launched().await?;
            for _ in 0..4 {
                let t = e.task(&ctx).await?;
                e.fail_task(&t).await?;
            }
            e.stopped(&ctx).await?;
            let code = d.run.exit_within(wait(&ctx)).await?;
            check(
                code.is_some_and(|c| c != 0),
                "a non-zero exit",
                format!("{code:?}"),
            )?;
            let out = d.run.output();
            check(
                out.contains("Job aborted due to stage failure"),
                "Job aborted due to stage failure",
                out,
            )
        }),
        ..Case::default()
    });
    cs.push(Case {
        id: "flow/driver/executor/is-alive".into(),
        level: Level::Must,
        targets: vec![Target::Driver],
        requirement: "the driver answers IsExecutorAlive (version 2) true for a registered \
            executor and false for an unknown one"
            .into(),
        body: run(|ctx: Ctx| async move {
            let d = registered(&ctx, SMALL).await?;
            let mut e = executor(&ctx, &d, "1", 2, Version::V2).await?;
            for (id, want) in [("1", true), ("77", false)] {
                e.conn
                    .send(&Envelope::Ask {
                        id: 90,
                        message: C::IsExecutorAlive(IsExecutorAlive::new(id.into())),
                    })
                    .await?;
                let b = e
                    .conn
                    .expect::<C, bool>(wait(&ctx), "a bool reply", |x| match x {
                        Envelope::Reply {
                            id: 90,
                            reply: Reply::Bool(b),
                        } => Some(*b),
                        _ => None,
                    })
                    .await?;
                check(
                    b == want,
                    format!("{want} for executor {id}"),
                    b.to_string(),
                )?;
            }
            Ok(())
        }),
        ..Case::default()
    });
}
