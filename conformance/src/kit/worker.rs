//! Playing the master (and UI clients) of a worker the suite starts: starting it, taking its
//! registration, launching executors on it, reading its state.

use std::collections::BTreeMap;
use std::net::SocketAddr;

use sparkwire::messages::deploy::*;
use sparkwire::messages::{Addr, Command, DeployMessage, EndpointRef, Version};
use sparkwire::wire::handshake::Role;
use sparkwire::wire::{Envelope, Reply};

use crate::harness::env::Ctx;
use crate::harness::peer::Conn;
use crate::harness::verdict::{fail, Failure};
use crate::kit::common::wait;
use crate::kit::spawned::{self, Run};

type D = DeployMessage;

/// The cores and memory the suite asks the worker to offer.
pub const CORES: i32 = 2;

/// MiB.
pub const MEMORY: i32 = 2048;

/// A program the suite asks the worker to run as an executor.
pub fn allowed_exec() -> String {
    for p in ["/bin/sleep", "/usr/bin/sleep"] {
        if std::path::Path::new(p).exists() {
            return p.to_string();
        }
    }
    "sleep".into()
}

/// Starts a worker with the suite as its master and takes its connection.
pub async fn start(ctx: Ctx) -> Result<(Run, Conn), Failure> {
    let run = spawned::start(&ctx, Role::Master, |given, dir| {
        vec![
            ("master_url", format!("sparkwire://{given}")),
            ("master_host", given.ip().to_string()),
            ("master_port", given.port().to_string()),
            ("cores", CORES.to_string()),
            ("memory", MEMORY.to_string()),
            ("worker_timeout", "2".into()),
            ("work_dir", dir.display().to_string()),
            ("allowed_exec", allowed_exec()),
        ]
    })
    .await?;
    let conn = run.accept(&ctx, "master", Role::Master).await?;
    Ok((run, conn))
}

/// A worker the suite registered.
pub struct Registered {
    /// The run.
    pub run: Run,
    /// The worker's connection to the suite's master.
    pub conn: Conn,
    /// Its RegisterWorker.
    pub reg: RegisterWorker,
    /// The master URL the suite announced.
    pub master_url: String,
}

/// Starts a worker, accepts it at `versions`, reads its RegisterWorker and answers it.
pub async fn registered(ctx: &Ctx, versions: &[Version]) -> Result<Registered, Failure> {
    let (run, mut conn) = start(ctx.clone()).await?;
    let hello = conn.read_hello(spawned::startup(ctx)).await?;
    if !versions
        .iter()
        .any(|v| hello.versions.contains(&u64::from(v.number())))
    {
        return Err(Failure::Skipped(format!(
            "the worker offers versions {:?}, none of {versions:?}",
            hello.versions
        )));
    }
    spawned::accept(ctx, &mut conn, &hello, versions, "master").await?;
    let reg = conn
        .expect::<D, RegisterWorker>(wait(ctx), "RegisterWorker", |e| match e {
            Envelope::Send(D::RegisterWorker(r)) => Some(r.clone()),
            _ => None,
        })
        .await?;
    let given = run.given;
    let master = EndpointRef::at(
        Addr::new(given.ip().to_string(), i32::from(given.port())),
        "Master",
    );
    conn.send(&Envelope::Send(D::RegisteredWorker(RegisteredWorker::new(
        master,
        "http://127.0.0.1:8080".into(),
        Addr::new(given.ip().to_string(), i32::from(given.port())),
        false,
    ))))
    .await?;
    Ok(Registered {
        run,
        conn,
        reg,
        // The URL a master of the wire spoken gives: Spark's worker takes commands only from the
        // master URL it registered with (`Worker.receive`, "Invalid Master … attempted to launch").
        master_url: match ctx.log.wire() {
            crate::harness::env::Wire::Sparkwire => format!("sparkwire://{given}"),
            crate::harness::env::Wire::Spark(_) => format!("spark://{given}"),
        },
    })
}

/// A command running `program args`, with nothing else.
pub fn command(program: &str, args: &[&str]) -> Command {
    Command::new(
        program.into(),
        args.iter().map(|a| a.to_string()).collect(),
        BTreeMap::new(),
        vec![],
        vec![],
        vec![],
    )
}

/// Tells the worker `w` to launch executor `exec_id` of `app` running the allowed program for
/// 20 seconds (a LaunchExecutor of [`launch_msg`]).
pub async fn launch_executor(w: &mut Registered, app: &str, exec_id: i32) -> Result<(), Failure> {
    let m = launch_msg(w, app, exec_id, &allowed_exec(), &["20"]);
    w.conn.send(&Envelope::Send(m)).await
}

/// A LaunchExecutor running `program args`.
pub fn launch_msg(w: &Registered, app: &str, exec_id: i32, program: &str, args: &[&str]) -> D {
    let mut desc = crate::kit::master::app_desc(Some(1), 64, None);
    desc.command = command(program, args);
    D::LaunchExecutor(LaunchExecutor::new(
        w.master_url.clone(),
        app.into(),
        exec_id,
        0,
        desc,
        1,
        64,
        BTreeMap::new(),
    ))
}

/// Waits for ExecutorStateChanged of `exec_id`, answering it when it is an ask.
pub async fn state_change(
    ctx: &Ctx,
    w: &mut Registered,
    exec_id: i32,
) -> Result<ExecutorStateChanged, Failure> {
    let (ask, e) = w
        .conn
        .expect::<D, (Option<u64>, ExecutorStateChanged)>(
            wait(ctx),
            &format!("ExecutorStateChanged for executor {exec_id}"),
            |e| match e {
                Envelope::Send(D::ExecutorStateChanged(s)) if s.exec_id == exec_id => {
                    Some((None, s.clone()))
                }
                Envelope::Ask {
                    id,
                    message: D::ExecutorStateChanged(s),
                } if s.exec_id == exec_id => Some((Some(*id), s.clone())),
                _ => None,
            },
        )
        .await?;
    if let Some(id) = ask {
        w.conn
            .send(&Envelope::<D>::Reply {
                id,
                reply: Reply::Bool(true),
            })
            .await?;
    }
    Ok(e)
}

/// Where the suite reaches the worker's own listening port (the address its RegisterWorker
/// gave), through the fault proxy when there is one, for a peer of `role`.
pub async fn listening_addr(
    ctx: &Ctx,
    w: &mut Registered,
    role: Role,
) -> Result<SocketAddr, Failure> {
    let host: std::net::IpAddr = w
        .reg
        .host
        .parse()
        .map_err(|_| fail("a worker host that is an IP address", w.reg.host.clone()))?;
    let port = u16::try_from(w.reg.port).map_err(|_| fail("a port", w.reg.port.to_string()))?;
    w.run
        .reach(ctx, SocketAddr::new(host, port), role, Role::Worker)
        .await
}

/// Where the suite reaches the worker's port as a UI.
pub async fn ui_addr(ctx: &Ctx, w: &mut Registered) -> Result<SocketAddr, Failure> {
    listening_addr(ctx, w, Role::Ui).await
}

/// A UI's connection (v2) to the worker's port, with the suite's secret when it has one.
pub async fn ui_conn(ctx: &Ctx, w: &mut Registered) -> Result<Conn, Failure> {
    let addr = ui_addr(ctx, w).await?;
    Conn::open(
        addr,
        "ui",
        Role::Ui,
        "",
        &[Version::V2],
        ctx.settings.secret.as_ref(),
        &ctx.log,
        wait(ctx),
    )
    .await
}

/// The worker's answer to RequestWorkerState asked on the UI connection `ui`.
pub async fn worker_state(ctx: &Ctx, ui: &mut Conn) -> Result<WorkerStateResponse, Failure> {
    let ask = D::RequestWorkerState(RequestWorkerState::new());
    ui.send(&Envelope::Ask {
        id: 3,
        message: ask,
    })
    .await?;
    ui.expect::<D, WorkerStateResponse>(wait(ctx), "WorkerStateResponse", |e| match e {
        Envelope::Reply {
            id: 3,
            reply: Reply::Message(D::WorkerStateResponse(s)),
        } => Some(s.clone()),
        _ => None,
    })
    .await
}
