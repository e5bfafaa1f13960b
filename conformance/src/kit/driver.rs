//! Playing the master of a driver the suite starts, and its executors: the jobs it runs, its
//! registered application, a fake executor serving its tasks.

use std::collections::BTreeMap;
use std::net::SocketAddr;

use sparkwire::messages::coarse::*;
use sparkwire::messages::deploy::{RegisterApplication, RegisteredApplication};
use sparkwire::messages::{
    Addr, CoarseMessage, DeployMessage, EndpointRef, TaskDescription, TaskState, Version,
};
use sparkwire::reference::task::{BuiltinRunner, CancelFlag, TaskRunner};
use sparkwire::wire::decode_task;
use sparkwire::wire::handshake::Role;
use sparkwire::wire::{encode_failure, TaskFailure};
use sparkwire::wire::{Envelope, Reply};

use crate::harness::env::Ctx;
use crate::harness::peer::Conn;
use crate::harness::verdict::{fail, Failure};
use crate::kit::common::wait;
use crate::kit::spawned::{self, Run};

type C = CoarseMessage;
type D = DeployMessage;

/// What the driver runs in a case.
#[derive(Debug, Clone, Copy)]
pub struct Job {
    /// The job's name.
    pub job: &'static str,
    /// Its partitions.
    pub partitions: usize,
    /// Its parameter.
    pub param: u64,
    /// spark.rpc.message.maxSize, MiB.
    pub max_message_size: u32,
}

/// A small job: 4 partitions of sum-squares.
pub const SMALL: Job = Job {
    job: "sum-squares",
    partitions: 4,
    param: 1000,
    max_message_size: 128,
};

/// A driver started for a case with `job`, its application client about to connect to the
/// suite as its master.
pub async fn started(ctx: &Ctx, job: Job) -> Result<Run, Failure> {
    spawned::start(ctx, Role::Master, move |given, dir| {
        vec![
            ("master_url", format!("sparkwire://{given}")),
            ("master_host", given.ip().to_string()),
            ("master_port", given.port().to_string()),
            ("work_dir", dir.display().to_string()),
            ("job", job.job.to_string()),
            ("partitions", job.partitions.to_string()),
            ("param", job.param.to_string()),
            ("max_message_size", job.max_message_size.to_string()),
            ("cores", "2".into()),
        ]
    })
    .await
}

/// Starts a driver running `job` and takes its connection to the suite's master.
pub async fn start(ctx: Ctx, job: Job) -> Result<(Run, Conn), Failure> {
    let run = started(&ctx, job).await?;
    let conn = run.accept(&ctx, "master", Role::Master).await?;
    Ok((run, conn))
}

/// Answers the driver's RegisterApplication on `app` with RegisteredApplication for a fresh
/// application id, naming the suite's address `given` as the master's; returns that id.
pub async fn registered_application(app: &mut Conn, given: SocketAddr) -> Result<String, Failure> {
    let app_id = format!(
        "app-20250101120000-{:04}",
        crate::kit::common::unique() % 10000
    );
    app.send(&Envelope::Send(D::RegisteredApplication(
        RegisteredApplication::new(
            app_id.clone(),
            EndpointRef::at(
                Addr::new(given.ip().to_string(), i32::from(given.port())),
                "Master",
            ),
        ),
    )))
    .await?;
    Ok(app_id)
}

/// A driver the suite registered as its master.
pub struct Registered {
    /// The run.
    pub run: Run,
    /// The app client's connection.
    pub app: Conn,
    /// Its RegisterApplication.
    pub reg: RegisterApplication,
    /// The app id the suite gave.
    pub app_id: String,
    /// Where the suite reaches the driver's executor port.
    pub driver_addr: SocketAddr,
}

/// The driver URL in an application's command (`--driver-url URL`).
pub fn driver_url(reg: &RegisterApplication) -> Option<String> {
    let args = &reg.app_description.command.arguments;
    args.iter()
        .position(|a| a == "--driver-url")
        .and_then(|i| args.get(i + 1))
        .cloned()
}

/// The socket address in an endpoint URL (`spark://…@host:port` or `host:port`).
pub fn parse_addr(url: &str) -> Option<SocketAddr> {
    let rest = url.rsplit('@').next()?;
    let rest = rest.strip_prefix("spark://").unwrap_or(rest);
    rest.parse().ok()
}

/// Starts a driver, registers its application, and finds its executor port.
pub async fn registered(ctx: &Ctx, job: Job) -> Result<Registered, Failure> {
    let (mut run, mut app) = start(ctx.clone(), job).await?;
    let hello = app.read_hello(spawned::startup(ctx)).await?;
    spawned::accept(ctx, &mut app, &hello, &[Version::V1, Version::V2], "master").await?;
    let reg = app
        .expect::<D, RegisterApplication>(wait(ctx), "RegisterApplication", |e| match e {
            Envelope::Send(D::RegisterApplication(r)) => Some(r.clone()),
            _ => None,
        })
        .await?;
    let app_id = registered_application(&mut app, run.given).await?;
    let url = driver_url(&reg).ok_or_else(|| {
        fail(
            "--driver-url in the application's command",
            format!("{:?}", reg.app_description.command.arguments),
        )
    })?;
    let addr = parse_addr(&url).ok_or_else(|| {
        fail(
            "a driver URL spark://CoarseGrainedScheduler@HOST:PORT",
            url.clone(),
        )
    })?;
    let driver_addr = run.reach(ctx, addr, Role::Executor, Role::Driver).await?;
    Ok(Registered {
        run,
        app,
        reg,
        app_id,
        driver_addr,
    })
}

/// An executor the suite plays.
pub struct FakeExecutor {
    /// Its connection to the driver.
    pub conn: Conn,
    /// Its id.
    pub id: String,
}

/// The RegisterExecutor an executor `id` of `cores` cores sends its driver.
pub fn register_msg(id: &str, cores: i32) -> C {
    C::RegisterExecutor(RegisterExecutor::new(
        id.into(),
        EndpointRef::client("Executor"),
        "127.0.0.1".into(),
        cores,
        BTreeMap::new(),
        BTreeMap::new(),
        BTreeMap::new(),
        0,
    ))
}

/// Connects as executor `id` and registers (answer true expected); no LaunchedExecutor yet.
pub async fn executor(
    ctx: &Ctx,
    d: &Registered,
    id: &str,
    cores: i32,
    version: Version,
) -> Result<FakeExecutor, Failure> {
    let mut conn = Conn::open(
        d.driver_addr,
        &format!("executor-{id}"),
        Role::Executor,
        id,
        &[version],
        ctx.settings.secret.as_ref(),
        &ctx.log,
        wait(ctx),
    )
    .await?;
    conn.send(&Envelope::Ask {
        id: 1,
        message: register_msg(id, cores),
    })
    .await?;
    conn.expect::<C, ()>(
        wait(ctx),
        "a bool reply true to RegisterExecutor",
        |e| match e {
            Envelope::Reply {
                id: 1,
                reply: Reply::Bool(true),
            } => Some(()),
            _ => None,
        },
    )
    .await?;
    Ok(FakeExecutor {
        conn,
        id: id.to_string(),
    })
}

impl FakeExecutor {
    /// Waits for StopExecutor and closes the connection, as an executor that exits does.
    pub async fn stopped(&mut self, ctx: &Ctx) -> Result<(), Failure> {
        self.conn
            .expect::<C, ()>(wait(ctx), "StopExecutor", |e| {
                matches!(e, Envelope::Send(C::StopExecutor(_))).then_some(())
            })
            .await?;
        self.conn.shutdown_write().await;
        Ok(())
    }

    /// Sends LaunchedExecutor.
    pub async fn launched(&mut self) -> Result<(), Failure> {
        self.conn
            .send(&Envelope::Send(C::LaunchedExecutor(LaunchedExecutor::new(
                self.id.clone(),
            ))))
            .await
    }

    /// The next LaunchTask, decoded.
    pub async fn task(&mut self, ctx: &Ctx) -> Result<TaskDescription, Failure> {
        let data = self
            .conn
            .expect::<C, sparkwire::messages::Payload>(wait(ctx), "LaunchTask", |e| match e {
                Envelope::Send(C::LaunchTask(l)) => Some(l.data.clone()),
                _ => None,
            })
            .await?;
        decode_task(&bytes::Bytes::copy_from_slice(data.as_slice()))
            .map_err(|e| fail("LaunchTask data that is a TaskDescription", e.to_string()))
    }

    /// Reports `task` in `state` with `data`.
    pub async fn status(
        &mut self,
        task: &TaskDescription,
        state: TaskState,
        data: Vec<u8>,
    ) -> Result<(), Failure> {
        self.conn
            .send(&Envelope::Send(C::StatusUpdate(StatusUpdate::new(
                self.id.clone(),
                task.task_id,
                state,
                data.into(),
                task.cpus,
                BTreeMap::new(),
            ))))
            .await
    }

    /// Runs `task` with the reference runners and reports RUNNING then its end.
    pub async fn run(&mut self, task: &TaskDescription) -> Result<(), Failure> {
        self.status(task, TaskState::Running, vec![]).await?;
        match BuiltinRunner.run(task, &CancelFlag::new()) {
            Ok(result) => {
                self.status(task, TaskState::Finished, result.as_slice().to_vec())
                    .await
            }
            Err(f) => {
                self.status(
                    task,
                    TaskState::Failed,
                    encode_failure(&f).as_slice().to_vec(),
                )
                .await
            }
        }
    }

    /// Fails `task` as a task's code would.
    pub async fn fail_task(&mut self, task: &TaskDescription) -> Result<(), Failure> {
        self.status(task, TaskState::Running, vec![]).await?;
        let f = TaskFailure::new(
            "java.lang.RuntimeException",
            "failed by the conformance suite",
        );
        self.status(
            task,
            TaskState::Failed,
            encode_failure(&f).as_slice().to_vec(),
        )
        .await
    }
}

/// Runs every task the driver sends until StopExecutor; returns the tasks seen.
pub async fn serve(ctx: &Ctx, e: &mut FakeExecutor) -> Result<Vec<TaskDescription>, Failure> {
    let mut seen = Vec::new();
    loop {
        let env = e
            .conn
            .recv::<C>(wait(ctx), "LaunchTask or StopExecutor")
            .await?;
        match env {
            Envelope::Send(C::LaunchTask(l)) => {
                let t = decode_task(&bytes::Bytes::copy_from_slice(l.data.as_slice()))
                    .map_err(|er| fail("a TaskDescription", er.to_string()))?;
                e.run(&t).await?;
                seen.push(t);
            }
            Envelope::Send(C::StopExecutor(_)) => {
                // An executor told to stop exits: its connection closes.
                e.conn.shutdown_write().await;
                return Ok(seen);
            }
            _ => {}
        }
    }
}
