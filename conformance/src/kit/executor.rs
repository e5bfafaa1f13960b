//! Playing the driver (and the worker) of an executor the suite starts: starting it, taking its
//! registration, giving it tasks.

use std::collections::BTreeMap;

use sparkwire::messages::coarse::*;
use sparkwire::messages::{CoarseMessage, ResourceProfile, TaskDescription, Version};
use sparkwire::wire::encode_task;
use sparkwire::wire::handshake::Role;
use sparkwire::wire::{Envelope, Reply};

use crate::harness::env::Ctx;
use crate::harness::peer::Conn;
use crate::harness::verdict::{fail, Failure};
use crate::kit::common::wait;
use crate::kit::spawned::{self, Run};

type C = CoarseMessage;

/// The executor id the suite gives.
pub const EXECUTOR_ID: &str = "1";

/// Its cores.
pub const CORES: i32 = 2;

/// The application id.
pub const APP_ID: &str = "app-20250101120000-0042";

/// Starts an executor for a case, with a worker it watches held open; returns the run and its
/// first connection to the suite (its driver), before the handshake.
pub async fn start(ctx: Ctx) -> Result<(Run, Conn), Failure> {
    // The worker the executor watches: a listener that takes its handshake and holds it.
    let (worker, worker_given, worker_proxy) = spawned::listen(&ctx, None, Role::Worker).await?;
    let mut run = spawned::start(&ctx, Role::Driver, move |given, dir| {
        vec![
            (
                "driver_url",
                format!("spark://CoarseGrainedScheduler@{given}"),
            ),
            ("worker_url", format!("spark://Worker@{worker_given}")),
            ("executor_id", EXECUTOR_ID.into()),
            ("app_id", APP_ID.into()),
            ("cores", CORES.to_string()),
            ("work_dir", dir.display().to_string()),
        ]
    })
    .await?;
    let startup = spawned::startup(&ctx);
    let held_ctx = ctx.clone();
    run.hold(tokio::spawn(async move {
        let _proxy = worker_proxy;
        let mut held = Vec::new();
        while let Ok(mut c) = worker
            .accept(startup * 10, "worker", Role::Worker, "")
            .await
        {
            if let Ok(h) = c.read_hello(startup).await {
                let versions = [Version::V1, Version::V2];
                let _ = spawned::accept(&held_ctx, &mut c, &h, &versions, "worker").await;
            }
            held.push(c);
        }
    }));
    let conn = run.accept(&ctx, "driver", Role::Driver).await?;
    Ok((run, conn))
}

/// The SparkAppConfig the suite answers RetrieveSparkAppConfig with.
pub fn app_config(max_mib: u32) -> SparkAppConfig {
    SparkAppConfig::new(
        vec![
            ("spark.app.id".into(), APP_ID.into()),
            ("spark.rpc.message.maxSize".into(), max_mib.to_string()),
            ("spark.task.cpus".into(), "1".into()),
        ],
        ResourceProfile::default_with(Some(CORES), 1024),
    )
}

/// Serves one connection of the executor until RegisterExecutor: answers RetrieveSparkAppConfig;
/// returns the RegisterExecutor ask (id, message) if it came, `None` if the connection closed.
pub async fn serve_until_register(
    ctx: &Ctx,
    c: &mut Conn,
    max_mib: u32,
) -> Result<Option<(u64, RegisterExecutor)>, Failure> {
    loop {
        let env = match c
            .recv::<C>(wait(ctx), "RetrieveSparkAppConfig or RegisterExecutor")
            .await
        {
            Ok(e) => e,
            Err(Failure::Fail { seen, .. }) if seen.contains("closed") => return Ok(None),
            Err(e) => return Err(e),
        };
        match env {
            Envelope::Ask {
                id,
                message: C::RetrieveSparkAppConfig(_),
            } => {
                c.send(&Envelope::Reply {
                    id,
                    reply: Reply::Message(C::SparkAppConfig(app_config(max_mib))),
                })
                .await?;
            }
            Envelope::Ask {
                id,
                message: C::RegisterExecutor(r),
            } => return Ok(Some((id, r))),
            Envelope::Ask {
                id,
                message: C::RetrieveLastAllocatedExecutorId(_),
            } => {
                c.send(&Envelope::<C>::Reply {
                    id,
                    reply: Reply::Int(0),
                })
                .await?;
            }
            other => {
                return Err(fail(
                    "RetrieveSparkAppConfig or RegisterExecutor first (rule X1)",
                    crate::harness::peer::envelope_label(&other),
                ))
            }
        }
    }
}

/// An executor the suite registered.
pub struct Registered {
    /// The run.
    pub run: Run,
    /// The executor's main connection.
    pub conn: Conn,
    /// Its RegisterExecutor.
    pub reg: RegisterExecutor,
}

/// Starts an executor, serves its connections at `versions` until it registers, answers true.
pub async fn registered(
    ctx: &Ctx,
    versions: &[Version],
    max_mib: u32,
) -> Result<Registered, Failure> {
    let (run, mut conn) = start(ctx.clone()).await?;
    loop {
        let hello = conn.read_hello(spawned::startup(ctx)).await?;
        if !versions
            .iter()
            .any(|v| hello.versions.contains(&u64::from(v.number())))
        {
            return Err(Failure::Skipped(format!(
                "the executor offers versions {:?}, none of {versions:?}",
                hello.versions
            )));
        }
        spawned::accept(ctx, &mut conn, &hello, versions, "driver").await?;
        if let Some((id, reg)) = serve_until_register(ctx, &mut conn, max_mib).await? {
            conn.send(&Envelope::<C>::Reply {
                id,
                reply: Reply::Bool(true),
            })
            .await?;
            return Ok(Registered { run, conn, reg });
        }
        // A bootstrap connection closed: the executor opens its main one next.
        conn = run.accept(ctx, "driver-main", Role::Driver).await?;
    }
}

/// A task for the built-in runner `runner` with `input` (big-endian u64s).
pub fn task(id: i64, runner: &str, input: &[u64], cpus: i32) -> TaskDescription {
    let mut properties = BTreeMap::new();
    properties.insert("sparkwire.runner".to_string(), runner.to_string());
    TaskDescription::new(
        id,
        0,
        EXECUTOR_ID.into(),
        format!("task {id}.0 in stage 0.0 (TID {id})"),
        id as i32,
        id as i32,
        0,
        0,
        properties,
        cpus,
        BTreeMap::new(),
        input
            .iter()
            .flat_map(|v| v.to_be_bytes())
            .collect::<Vec<u8>>()
            .into(),
    )
}

/// Sends LaunchTask of `t`.
pub async fn launch(e: &mut Registered, t: &TaskDescription) -> Result<(), Failure> {
    let data = encode_task(t).map_err(|er| fail("a task the suite can encode", er.to_string()))?;
    e.conn
        .send(&Envelope::Send(C::LaunchTask(LaunchTask::new(data.into()))))
        .await
}

/// The executor's next StatusUpdate for task `task_id` that `pick` takes.
pub async fn update(
    ctx: &Ctx,
    e: &mut Registered,
    task_id: i64,
    what: &str,
    pick: impl Fn(&StatusUpdate) -> bool,
) -> Result<StatusUpdate, Failure> {
    e.conn
        .expect::<C, StatusUpdate>(wait(ctx) * 2, what, |x| match x {
            Envelope::Send(C::StatusUpdate(s)) if s.task_id == task_id && pick(s) => {
                Some(s.clone())
            }
            _ => None,
        })
        .await
}

/// Waits for the executor's LaunchedExecutor, naming its id.
pub async fn launched(ctx: &Ctx, e: &mut Registered) -> Result<(), Failure> {
    e.conn
        .expect::<C, ()>(wait(ctx), "LaunchedExecutor with its id", |x| match x {
            Envelope::Send(C::LaunchedExecutor(l)) if l.executor_id == EXECUTOR_ID => Some(()),
            _ => None,
        })
        .await
}
