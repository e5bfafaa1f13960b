//! `--target master`: the suite plays workers, application clients, driver clients and UIs
//! against a running master.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use sparkwire::messages::deploy::*;
use sparkwire::messages::ProfileExecutors;
use sparkwire::messages::{
    Addr, ApplicationDescription, Command, DeployMessage, DriverDescription, DriverState,
    EndpointRef, ExecutorState, ResourceProfile, Version, WorkerState,
};
use sparkwire::wire::handshake::Role;
use sparkwire::wire::{Envelope, Reply};

use crate::case::{check, fail, Cases, Failure, Level, Outcome, Sharing, Target};
use crate::env::{Ctx, Endpoint, Wire};
use crate::mp;
use crate::peer::Conn;
use crate::targets::common::{crossing, envelope_of, expect_refused, sample, spark_id, unique};
use crate::targets::server::{self, Listening, Server};

type D = DeployMessage;

/// The master's address.
pub fn addr(ctx: &Ctx) -> Result<SocketAddr, Failure> {
    match &ctx.settings.endpoint {
        Endpoint::Addr(a) => Ok(*a),
        _ => Err(Failure::Skipped("the master target needs --addr".into())),
    }
}

fn wait(ctx: &Ctx) -> Duration {
    ctx.settings.patience
}

/// Opens a connection as `role`, accepted at `version`.
pub async fn open(
    ctx: &Ctx,
    role: Role,
    label: &str,
    id: &str,
    version: Version,
) -> Result<Conn, Failure> {
    Conn::open(
        addr(ctx)?,
        label,
        role,
        id,
        &[version],
        ctx.settings.secret.as_ref(),
        &ctx.log,
        wait(ctx),
    )
    .await
}

/// A worker the suite plays.
pub struct FakeWorker {
    /// Its connection.
    pub conn: Conn,
    /// Its id.
    pub id: String,
    /// Its host as registered.
    pub host: String,
    /// Cores and memory offered.
    pub cores: i32,
    /// Memory offered, MiB.
    pub memory: i32,
}

/// The reference to a worker's endpoint at `host:port`.
pub fn worker_ref(host: &str, port: i32) -> EndpointRef {
    EndpointRef::at(Addr::new(host, port), "Worker")
}

/// The RegisterWorker of worker `id`.
pub fn register_worker_msg(id: &str, host: &str, port: i32, cores: i32, memory: i32) -> D {
    D::RegisterWorker(RegisterWorker::new(
        id.into(),
        host.into(),
        port,
        worker_ref(host, port),
        cores,
        memory,
        format!("http://{host}:8081"),
        Addr::new("127.0.0.1", 7077),
        BTreeMap::new(),
    ))
}

/// Connects and registers a worker; the answer must be RegisteredWorker.
pub async fn worker(
    ctx: &Ctx,
    label: &str,
    cores: i32,
    memory: i32,
    version: Version,
) -> Result<FakeWorker, Failure> {
    let n = unique();
    let host = "127.0.0.1".to_string();
    let port = 20000 + (n % 40000) as i32;
    let id = format!("worker-20250101120000-{host}-{port}-{n}");
    let mut conn = open(ctx, Role::Worker, label, &id, version).await?;
    conn.send(&Envelope::Send(register_worker_msg(
        &id, &host, port, cores, memory,
    )))
    .await?;
    conn.expect::<D, ()>(wait(ctx), "RegisteredWorker", |e| match e {
        Envelope::Send(D::RegisteredWorker(_)) => Some(()),
        _ => None,
    })
    .await?;
    Ok(FakeWorker {
        conn,
        id,
        host,
        cores,
        memory,
    })
}

/// An application description asking `cores_per_executor` and `memory` MiB per executor.
pub fn app_desc(
    cores_per_executor: Option<i32>,
    memory: i32,
    max_cores: Option<i32>,
) -> ApplicationDescription {
    ApplicationDescription::new(
        "sparkwire-conformance".into(),
        Command::new(
            "/bin/true".into(),
            vec![],
            BTreeMap::new(),
            vec![],
            vec![],
            vec![],
        ),
        String::new(),
        ResourceProfile::default_with(cores_per_executor, memory),
        "conformance".into(),
    )
    .with_max_cores(max_cores)
}

/// Connects and registers an application; returns the connection and the app id.
pub async fn app(
    ctx: &Ctx,
    label: &str,
    desc: ApplicationDescription,
    version: Version,
) -> Result<(Conn, String), Failure> {
    let mut conn = open(ctx, Role::AppClient, label, "", version).await?;
    // Each application at an address of its own: Spark's master keys applications by their
    // driver's address and ignores a second registration from one (SPEC §14.2, Z1).
    let port = 40000 + (unique() % 20000) as i32;
    conn.send(&Envelope::Send(D::RegisterApplication(
        RegisterApplication::new(
            desc,
            EndpointRef::at(Addr::new("127.0.0.1", port), "AppClient"),
        ),
    )))
    .await?;
    let id = conn
        .expect::<D, String>(wait(ctx), "RegisteredApplication", |e| match e {
            Envelope::Send(D::RegisteredApplication(r)) => Some(r.app_id.clone()),
            _ => None,
        })
        .await?;
    Ok((conn, id))
}

/// The master's state, asked on a fresh UI connection.
pub async fn state(ctx: &Ctx) -> Result<MasterStateResponse, Failure> {
    let mut ui = open(ctx, Role::Ui, "ui", "", Version::V2).await?;
    ui.send(&Envelope::Ask {
        id: 1,
        message: D::RequestMasterState(RequestMasterState::new()),
    })
    .await?;
    ui.expect::<D, MasterStateResponse>(wait(ctx), "MasterStateResponse", |e| match e {
        Envelope::Reply {
            id: 1,
            reply: Reply::Message(D::MasterStateResponse(s)),
        } => Some(s.clone()),
        _ => None,
    })
    .await
}

/// Waits for the next LaunchExecutor on `w`.
async fn launch(ctx: &Ctx, w: &mut FakeWorker) -> Result<LaunchExecutor, Failure> {
    w.conn
        .expect::<D, LaunchExecutor>(wait(ctx), "LaunchExecutor", |e| match e {
            Envelope::Send(D::LaunchExecutor(l)) => Some(l.clone()),
            _ => None,
        })
        .await
}

/// All the LaunchExecutor a worker receives within the quiet time.
async fn launches(ctx: &Ctx, w: &mut FakeWorker) -> Vec<LaunchExecutor> {
    let mut out = Vec::new();
    let quiet = ctx.settings.quiet;
    while let Ok(l) = w
        .conn
        .expect::<D, LaunchExecutor>(quiet, "", |e| match e {
            Envelope::Send(D::LaunchExecutor(l)) => Some(l.clone()),
            _ => None,
        })
        .await
    {
        out.push(l);
    }
    out
}

/// Reports an executor's state from worker `w`, as an ask (version 2) or a send (version 1).
async fn report(
    w: &mut FakeWorker,
    app_id: &str,
    exec_id: i32,
    state: ExecutorState,
    exit: Option<i32>,
    ask_id: u64,
) -> Outcome {
    let m = D::ExecutorStateChanged(
        ExecutorStateChanged::new(app_id.into(), exec_id, state).with_exit_status(exit),
    );
    if w.conn.v() == Version::V1 {
        w.conn.send(&Envelope::Send(m)).await
    } else {
        w.conn
            .send(&Envelope::Ask {
                id: ask_id,
                message: m,
            })
            .await
    }
}

fn master_server() -> Server {
    fn no_fields() -> Vec<(&'static str, Vec<u8>)> {
        vec![]
    }
    // RequestDriverStatus, which a UI may ask, with its driverId an integer.
    fn bad() -> Vec<(&'static str, Vec<u8>)> {
        vec![("driverId", mp::u(5))]
    }
    // A worker's Heartbeat: a UI may not send it.
    fn heartbeat() -> Vec<(&'static str, Vec<u8>)> {
        vec![
            ("workerId", mp::s("worker-suite")),
            (
                "worker",
                mp::map(&[("address", vec![0xc0]), ("name", mp::s("Worker"))]),
            ),
        ]
    }
    Server {
        open: Arc::new(|ctx: Ctx| {
            Box::pin(async move {
                Ok(Listening {
                    addr: addr(&ctx)?,
                    guard: Box::new(()),
                })
            })
        }),
        name: "the master",
        good_role: Role::Ui,
        other_family_role: Role::Executor,
        server_role: Role::Master,
        probe: ("RequestMasterState", no_fields),
        v2_only: ("RequestReadyz", no_fields),
        local: "WorkDirCleanup",
        bad_fields: ("RequestDriverStatus", bad),
        off_route: ("Heartbeat", heartbeat),
    }
}

const CLIENTS: [Role; 4] = [Role::Worker, Role::AppClient, Role::DriverClient, Role::Ui];

/// Every case of the master target.
pub fn cases() -> Vec<crate::case::Case> {
    let mut cs = Cases::new(Target::Master);
    server::add(&mut cs, master_server());
    routes(&mut cs);
    crate::targets::spec14::add(&mut cs);
    crate::targets::spec11::add_master(&mut cs);
    flows(&mut cs);
    crate::targets::auth::add(&mut cs);
    crate::targets::spark::add_server(
        &mut cs,
        crate::targets::spark::SparkServer {
            server: master_server(),
            probe: (
                || D::RequestMasterState(RequestMasterState::new()),
                |r| matches!(r, Reply::Message(D::MasterStateResponse(_))),
            ),
            not_asked: || {
                D::Heartbeat(Heartbeat::new(
                    "worker-suite".into(),
                    worker_ref("127.0.0.1", 1),
                ))
            },
        },
    );
    crate::targets::spark::add_master(&mut cs);
    cs.list
}

fn routes(cs: &mut Cases) {
    for msg in crossing("deploy") {
        let to_master = msg.to.iter().any(|r| r == "master");
        let role = CLIENTS
            .into_iter()
            .find(|r| {
                let from = msg.from.iter().any(|f| f == r.name());
                if to_master {
                    !from
                } else {
                    from || msg.to.iter().any(|t| t == r.name())
                }
            })
            .unwrap_or(Role::Worker);
        let how = match msg.kind {
            sparkwire::definition::MessageKind::Ask => "an ask",
            sparkwire::definition::MessageKind::Reply => "a send (a reply message outside a reply)",
            _ => "a send",
        };
        let requirement = format!(
            "the master refuses {} from a {} peer, which its route ({} → {}) does not allow: a failure or a close for an ask, a close for a send",
            msg.name, role.name(), msg.from.join(", "), msg.to.join(", ")
        );
        let _ = how;
        cs.add(
            format!("route/deploy/{}", msg.name),
            Level::Must,
            requirement,
            move |ctx: Ctx| async move {
                let m: D = sample(msg)?;
                let mut c = open(&ctx, role, "suite", "", Version::V2).await?;
                expect_refused(&mut c, envelope_of(msg, m, 21), wait(&ctx)).await
            },
        );
    }
    cs.add("rules/M3/send-as-ask", Level::Must,
        "the master refuses a send-kind message (Heartbeat) sent as an ask by a registered worker: a failure or a close",
        |ctx: Ctx| async move {
            let mut w = worker(&ctx, "worker", 0, 0, Version::V2).await?;
            let hb = D::Heartbeat(Heartbeat::new(w.id.clone(), worker_ref(&w.host, 1)));
            expect_refused(&mut w.conn, Envelope::Ask { id: 31, message: hb }, wait(&ctx)).await
        });
    cs.add("rules/M3/ask-as-send", Level::Must,
        "the master refuses an ask-kind message (RequestMasterState) sent one-way: it closes the connection",
        |ctx: Ctx| async move {
            let mut c = open(&ctx, Role::Ui, "ui", "", Version::V2).await?;
            expect_refused(&mut c, Envelope::Send(D::RequestMasterState(RequestMasterState::new())), wait(&ctx)).await
        });
}

fn flows(cs: &mut Cases) {
    cs.add("flow/master/registration/registered", Level::Must,
        "the master answers a worker's RegisterWorker with RegisteredWorker, duplicate = false for a new id, naming itself (rules W3, W4)",
        |ctx: Ctx| async move {
            let n = unique();
            let id = format!("worker-20250101120000-127.0.0.1-{n}");
            let mut c = open(&ctx, Role::Worker, "worker", &id, Version::V2).await?;
            c.send(&Envelope::Send(register_worker_msg(&id, "127.0.0.1", 1234, 0, 0))).await?;
            let r = c.expect::<D, RegisteredWorker>(wait(&ctx), "RegisteredWorker", |e| match e {
                Envelope::Send(D::RegisteredWorker(r)) => Some(r.clone()),
                _ => None,
            }).await?;
            check(!r.duplicate, "duplicate = false", "duplicate = true")?;
            check(r.master.address.is_some(), "the master's address in its reference", format!("{:?}", r.master))
        });
    cs.add(
        "flow/master/registration/answered-once",
        Level::Must,
        "the master sends one RegisterWorkerResponse per RegisterWorker and none unasked (rule W3)",
        |ctx: Ctx| async move {
            let mut w = worker(&ctx, "worker", 0, 0, Version::V2).await?;
            w.conn
                .expect_none::<D>(
                    ctx.settings.quiet,
                    "no second RegisterWorkerResponse",
                    |e| {
                        matches!(
                            e,
                            Envelope::Send(
                                D::RegisteredWorker(_)
                                    | D::RegisterWorkerFailed(_)
                                    | D::MasterInStandby(_)
                            )
                        )
                    },
                )
                .await
        },
    );
    cs.add("flow/master/registration/duplicate-id", Level::Must,
        "the master answers a RegisterWorker for a worker id that is registered and alive with RegisterWorkerFailed, or RegisteredWorker with duplicate = true (rule W4)",
        |ctx: Ctx| async move {
            let w = worker(&ctx, "worker", 0, 0, Version::V2).await?;
            let mut c = open(&ctx, Role::Worker, "again", &w.id, Version::V2).await?;
            c.send(&Envelope::Send(register_worker_msg(&w.id, &w.host, 1, 0, 0))).await?;
            let ok = c.expect::<D, bool>(wait(&ctx), "RegisterWorkerFailed or RegisteredWorker", |e| match e {
                Envelope::Send(D::RegisterWorkerFailed(_)) => Some(true),
                Envelope::Send(D::RegisteredWorker(r)) => Some(r.duplicate),
                _ => None,
            }).await?;
            check(ok, "RegisterWorkerFailed or duplicate = true", "RegisteredWorker with duplicate = false")
        });
    cs.add("flow/master/registration/in-state", Level::Must,
        "a registered worker appears in the master's state ALIVE with the cores and memory it registered",
        |ctx: Ctx| async move {
            let w = worker(&ctx, "worker", 0, 0, Version::V2).await?;
            let s = state(&ctx).await?;
            let info = s.workers.iter().find(|i| i.id == w.id).ok_or_else(|| fail("the worker in the state", "absent"))?;
            check(info.state == WorkerState::Alive && info.cores == w.cores && info.memory == w.memory,
                "ALIVE with its cores and memory", format!("{:?} {} cores {} MiB", info.state, info.cores, info.memory))
        });
    cs.add(
        "flow/master/registration/worker-v1",
        Level::Must,
        "the master registers a worker that speaks only version 1",
        |ctx: Ctx| async move { worker(&ctx, "worker", 0, 0, Version::V1).await.map(|_| ()) },
    );
    cs.add("flow/master/app/registered", Level::Must,
        "the master answers RegisterApplication with RegisteredApplication carrying an app id of Spark's form (rule P3)",
        |ctx: Ctx| async move {
            let (_c, id) = app(&ctx, "app", app_desc(Some(1), 64, Some(0)), Version::V2).await?;
            spark_id(&id, "app")
        });
    cs.add(
        "flow/master/app/ids-unique",
        Level::Must,
        "the master gives two applications different app ids (rule P3)",
        |ctx: Ctx| async move {
            let (_a, one) = app(&ctx, "app1", app_desc(Some(1), 64, Some(0)), Version::V2).await?;
            let (_b, two) = app(&ctx, "app2", app_desc(Some(1), 64, Some(0)), Version::V2).await?;
            check(one != two, "two different ids", format!("{one} twice"))
        },
    );
    cs.add(
        "flow/master/app/v1-client",
        Level::Must,
        "the master registers an application client that speaks only version 1",
        |ctx: Ctx| async move {
            app(&ctx, "app", app_desc(Some(1), 64, Some(0)), Version::V1)
                .await
                .map(|_| ())
        },
    );
    cs.add("flow/master/app/unregister", Level::Must,
        "after UnregisterApplication the application is no longer active in the master's state (rule P5)",
        |ctx: Ctx| async move {
            let (mut c, id) = app(&ctx, "app", app_desc(Some(1), 64, Some(0)), Version::V2).await?;
            c.send(&Envelope::Send(D::UnregisterApplication(UnregisterApplication::new(id.clone())))).await?;
            settle(&ctx, || async { Ok(!state(&ctx).await?.active_apps.iter().any(|a| a.id == id)) }, "the application no longer active").await
        });
    cs.add("flow/master/app/closed-connection-finishes", Level::Must,
        "an application whose client's connection closes is finished: no longer active in the master's state",
        |ctx: Ctx| async move {
            let (c, id) = app(&ctx, "app", app_desc(Some(1), 64, Some(0)), Version::V2).await?;
            drop(c);
            settle(&ctx, || async { Ok(!state(&ctx).await?.active_apps.iter().any(|a| a.id == id)) }, "the application no longer active").await
        });
    cs.add(
        "flow/master/ui/readyz",
        Level::Must,
        "the master answers RequestReadyz with a bool reply: true when it is the active master",
        |ctx: Ctx| async move {
            let mut ui = open(&ctx, Role::Ui, "ui", "", Version::V2).await?;
            ui.send(&Envelope::Ask {
                id: 2,
                message: D::RequestReadyz(RequestReadyz::new()),
            })
            .await?;
            let b = ui
                .expect::<D, bool>(wait(&ctx), "a bool reply", |e| match e {
                    Envelope::Reply {
                        id: 2,
                        reply: Reply::Bool(b),
                    } => Some(*b),
                    _ => None,
                })
                .await?;
            check(b, "true", "false")
        },
    );
    cs.add(
        "flow/master/ui/clear-completed",
        Level::Must,
        "the master answers RequestClearCompletedDriversAndApps with a bool reply (definition.json: reply bool, as Spark 4.0.1's master)",
        |ctx: Ctx| async move {
            let mut ui = open(&ctx, Role::Ui, "ui", "", Version::V2).await?;
            ui.send(&Envelope::Ask {
                id: 2,
                message: D::RequestClearCompletedDriversAndApps(
                    RequestClearCompletedDriversAndApps::new(),
                ),
            })
            .await?;
            ui.expect::<D, ()>(wait(&ctx), "a bool reply", |e| {
                matches!(
                    e,
                    Envelope::Reply {
                        id: 2,
                        reply: Reply::Bool(_)
                    }
                )
                .then_some(())
            })
            .await
        },
    );
    cs.add("flow/master/drivers/submit", Level::Must,
        "the master answers RequestSubmitDriver with a successful SubmitDriverResponse carrying a driver id of Spark's form (rule D1)",
        |ctx: Ctx| async move {
            let (_c, r) = submit(&ctx).await?;
            check(r.success, "success", format!("{r:?}"))?;
            spark_id(r.driver_id.as_deref().unwrap_or(""), "driver")
        });
    cs.add("flow/master/drivers/status", Level::Must,
        "the master answers RequestDriverStatus about a submitted driver with found = true (rule D6)",
        |ctx: Ctx| async move {
            let (mut c, r) = submit(&ctx).await?;
            let id = r.driver_id.clone().unwrap_or_default();
            c.send(&Envelope::Ask { id: 8, message: D::RequestDriverStatus(RequestDriverStatus::new(id.clone())) }).await?;
            let s = c.expect::<D, DriverStatusResponse>(wait(&ctx), "DriverStatusResponse", |e| match e {
                Envelope::Reply { id: 8, reply: Reply::Message(D::DriverStatusResponse(s)) } => Some(s.clone()),
                _ => None,
            }).await?;
            check(s.found, "found = true", format!("{s:?}"))
        });
    cs.add("flow/master/drivers/kill", Level::Must,
        "the master answers RequestKillDriver with a KillDriverResponse naming that driver (rule D6)",
        |ctx: Ctx| async move {
            let (mut c, r) = submit(&ctx).await?;
            let id = r.driver_id.clone().unwrap_or_default();
            c.send(&Envelope::Ask { id: 9, message: D::RequestKillDriver(RequestKillDriver::new(id.clone())) }).await?;
            let k = c.expect::<D, KillDriverResponse>(wait(&ctx), "KillDriverResponse", |e| match e {
                Envelope::Reply { id: 9, reply: Reply::Message(D::KillDriverResponse(k)) } => Some(k.clone()),
                _ => None,
            }).await?;
            check(k.driver_id == id, format!("driver {id}"), k.driver_id)
        });
    cs.add(
        "flow/master/drivers/unknown-status",
        Level::Must,
        "the master answers RequestDriverStatus about a driver it does not know with found = false",
        |ctx: Ctx| async move {
            let mut c = open(&ctx, Role::DriverClient, "client", "", Version::V2).await?;
            c.send(&Envelope::Ask {
                id: 8,
                message: D::RequestDriverStatus(RequestDriverStatus::new(
                    "driver-20000101000000-9999".into(),
                )),
            })
            .await?;
            let s = c
                .expect::<D, DriverStatusResponse>(
                    wait(&ctx),
                    "DriverStatusResponse",
                    |e| match e {
                        Envelope::Reply {
                            id: 8,
                            reply: Reply::Message(D::DriverStatusResponse(s)),
                        } => Some(s.clone()),
                        _ => None,
                    },
                )
                .await?;
            check(!s.found, "found = false", format!("{s:?}"))
        },
    );

    // ---- scheduling and executors: these register workers with capacity, so they run alone ----
    cs.sharing(Sharing::Alone).timeout(Duration::from_secs(10));
    cs.add("flow/master/scheduling/spread-out", Level::Must,
        "with spreadOut (the default) the master spreads an application's executors over the workers round-robin: 3 workers of 4 cores, 1-core executors, cores.max 6 give 2 executors on each (spark.deploy.spreadOut)",
        |ctx: Ctx| async move {
            if !ctx.settings.spread_out { return Err(Failure::Skipped("the master runs with spreadOut off (--spread-out false)".into())); }
            let counts = allocation(&ctx, 3, 4, Some(1), Some(6)).await?;
            check(counts == [2, 2, 2], "2, 2 and 2 executors", format!("{counts:?}"))
        });
    cs.add("flow/master/scheduling/consolidate", Level::Must,
        "with spreadOut off the master fills one worker before the next: 3 workers of 4 cores, 1-core executors, cores.max 6 give 4 and 2 executors on two workers",
        |ctx: Ctx| async move {
            if ctx.settings.spread_out { return Err(Failure::Skipped("the master spreads out (pass --spread-out false for a master started so)".into())); }
            let mut counts = allocation(&ctx, 3, 4, Some(1), Some(6)).await?;
            counts.sort_unstable();
            check(counts == [0, 2, 4], "4, 2 and 0 executors", format!("{counts:?}"))
        });
    cs.add("flow/master/scheduling/one-executor-per-worker", Level::Must,
        "an application that sets no cores per executor gets one executor per worker holding all its free cores",
        |ctx: Ctx| async move {
            no_apps_left(&ctx).await?;
            let mut ws = Vec::new();
            for i in 0..2 { ws.push(worker(&ctx, &format!("worker{i}"), 3, 4096, Version::V2).await?); }
            let (_app, _id) = app(&ctx, "app", app_desc(None, 256, None), Version::V2).await?;
            for w in &mut ws {
                let ls = launches(&ctx, w).await;
                check(ls.len() == 1 && ls[0].cores == 3, "one executor of 3 cores", format!("{:?}", ls.iter().map(|l| l.cores).collect::<Vec<_>>()))?;
            }
            Ok(())
        });
    cs.add("flow/master/scheduling/memory-bound", Level::Must,
        "the master launches no more executors on a worker than its memory holds (rule W8): 1024 MiB, 512 MiB executors, 4 cores give 2 executors",
        |ctx: Ctx| async move {
            no_apps_left(&ctx).await?;
            let mut w = worker(&ctx, "worker", 4, 1024, Version::V2).await?;
            let (_app, _id) = app(&ctx, "app", app_desc(Some(1), 512, None), Version::V2).await?;
            let ls = launches(&ctx, &mut w).await;
            check(ls.len() == 2, "2 executors", format!("{}", ls.len()))
        });
    cs.add("flow/master/scheduling/cores-bound", Level::Must,
        "the master never gives a worker more cores than it registered (rule W8): 3 cores and 2-core executors give 1 executor",
        |ctx: Ctx| async move {
            no_apps_left(&ctx).await?;
            let mut w = worker(&ctx, "worker", 3, 4096, Version::V2).await?;
            let (_app, _id) = app(&ctx, "app", app_desc(Some(2), 64, None), Version::V2).await?;
            let ls = launches(&ctx, &mut w).await;
            check(ls.len() == 1 && ls[0].cores == 2, "1 executor of 2 cores", format!("{:?}", ls.iter().map(|l| l.cores).collect::<Vec<_>>()))
        });
    cs.add("flow/master/scheduling/max-cores", Level::Must,
        "the master grants an application no more cores than its cores.max (maxCores 3 on a 8-core worker, 1-core executors: 3 executors)",
        |ctx: Ctx| async move {
            no_apps_left(&ctx).await?;
            let mut w = worker(&ctx, "worker", 8, 8192, Version::V2).await?;
            let (_app, _id) = app(&ctx, "app", app_desc(Some(1), 64, Some(3)), Version::V2).await?;
            let ls = launches(&ctx, &mut w).await;
            check(ls.len() == 3, "3 executors", format!("{}", ls.len()))
        });
    cs.add("flow/master/executor/launch-fields", Level::Must,
        "LaunchExecutor names the application, a fresh executor id, the cores and memory the application asked, and the master's URL (rule E1)",
        |ctx: Ctx| async move {
            no_apps_left(&ctx).await?;
            let mut w = worker(&ctx, "worker", 2, 4096, Version::V2).await?;
            let (_app, id) = app(&ctx, "app", app_desc(Some(1), 300, None), Version::V2).await?;
            let ls = launches(&ctx, &mut w).await;
            check(ls.len() == 2, "2 LaunchExecutor", format!("{}", ls.len()))?;
            check(ls.iter().all(|l| l.app_id == id && l.cores == 1 && l.memory == 300 && !l.master_url.is_empty()),
                "the application's id, 1 core and 300 MiB each", format!("{ls:?}"))?;
            check(ls[0].exec_id != ls[1].exec_id, "distinct executor ids", format!("{} twice", ls[0].exec_id))
        });
    cs.add("flow/master/executor/added", Level::Must,
        "the master tells the application of each executor it launches with ExecutorAdded, with the worker, cores and memory of its LaunchExecutor (rule E4)",
        |ctx: Ctx| async move {
            no_apps_left(&ctx).await?;
            let mut w = worker(&ctx, "worker", 1, 4096, Version::V2).await?;
            let (mut app_conn, _id) = app(&ctx, "app", app_desc(Some(1), 128, None), Version::V2).await?;
            let l = launch(&ctx, &mut w).await?;
            let a = app_conn.expect::<D, ExecutorAdded>(wait(&ctx), "ExecutorAdded", |e| match e {
                Envelope::Send(D::ExecutorAdded(a)) => Some(a.clone()),
                _ => None,
            }).await?;
            check(a.id == l.exec_id && a.worker_id == w.id && a.cores == l.cores && a.memory == l.memory,
                format!("executor {} on {} with {} cores, {} MiB", l.exec_id, w.id, l.cores, l.memory), format!("{a:?}"))
        });
    cs.add("flow/master/executor/state-ask-v2", Level::Must,
        "in version 2 the master answers a worker's ExecutorStateChanged ask with bool true and tells the application (ExecutorUpdated RUNNING, rule E5)",
        |ctx: Ctx| async move {
            no_apps_left(&ctx).await?;
            let mut w = worker(&ctx, "worker", 1, 4096, Version::V2).await?;
            if w.conn.v() != Version::V2 {
                // Spark 3.0.3 on its own wire: version 1 is all it speaks (SPEC §15.3).
                return Err(Failure::Skipped("a version 2 case, and the master speaks version 1".into()));
            }
            let (mut app_conn, id) = app(&ctx, "app", app_desc(Some(1), 128, None), Version::V2).await?;
            let l = launch(&ctx, &mut w).await?;
            report(&mut w, &id, l.exec_id, ExecutorState::Running, None, 41).await?;
            w.conn.expect::<D, ()>(wait(&ctx), "a bool reply true to ask 41", |e| matches!(e, Envelope::Reply { id: 41, reply: Reply::Bool(true) }).then_some(())).await?;
            updated(&ctx, &mut app_conn, l.exec_id, ExecutorState::Running).await.map(|_| ())
        });
    cs.add("flow/master/executor/state-send-v1", Level::Must,
        "in version 1 the master takes a worker's ExecutorStateChanged as a send (Spark 3.0) and tells the application (ExecutorUpdated RUNNING)",
        |ctx: Ctx| async move {
            no_apps_left(&ctx).await?;
            let mut w = worker(&ctx, "worker", 1, 4096, Version::V1).await?;
            let (mut app_conn, id) = app(&ctx, "app", app_desc(Some(1), 128, None), Version::V1).await?;
            let l = launch(&ctx, &mut w).await?;
            report(&mut w, &id, l.exec_id, ExecutorState::Running, None, 0).await?;
            updated(&ctx, &mut app_conn, l.exec_id, ExecutorState::Running).await.map(|_| ())
        });
    cs.add("flow/master/executor/failed-relaunched", Level::Must,
        "when an executor fails the master tells the application (ExecutorUpdated FAILED) and launches a replacement with a new executor id (spark.deploy.maxExecutorRetries)",
        |ctx: Ctx| async move {
            no_apps_left(&ctx).await?;
            let mut w = worker(&ctx, "worker", 1, 4096, Version::V2).await?;
            let (mut app_conn, id) = app(&ctx, "app", app_desc(Some(1), 128, None), Version::V2).await?;
            let l = launch(&ctx, &mut w).await?;
            report(&mut w, &id, l.exec_id, ExecutorState::Running, None, 42).await?;
            report(&mut w, &id, l.exec_id, ExecutorState::Failed, Some(1), 43).await?;
            updated(&ctx, &mut app_conn, l.exec_id, ExecutorState::Failed).await?;
            let again = launch(&ctx, &mut w).await?;
            check(again.exec_id != l.exec_id, "a new executor id", format!("{} again", again.exec_id))
        });
    cs.add("flow/master/executor/retries-exhausted", Level::Must,
        "an application whose executors fail maxExecutorRetries times in a row, none running, is removed (ApplicationRemoved)",
        |ctx: Ctx| async move {
            no_apps_left(&ctx).await?;
            let mut w = worker(&ctx, "worker", 1, 4096, Version::V2).await?;
            let (mut app_conn, id) = app(&ctx, "app", app_desc(Some(1), 128, None), Version::V2).await?;
            let retries = ctx.settings.max_executor_retries;
            for i in 0..retries {
                let l = launch(&ctx, &mut w).await?;
                report(&mut w, &id, l.exec_id, ExecutorState::Failed, Some(1), 100 + u64::from(i)).await?;
            }
            app_conn.expect::<D, ()>(wait(&ctx), "ApplicationRemoved", |e| matches!(e, Envelope::Send(D::ApplicationRemoved(_))).then_some(())).await
        });
    cs.add("flow/master/executor/worker-lost", Level::Must,
        "when a worker's connection closes the master tells the application: ExecutorUpdated LOST with the worker's host, and WorkerRemoved, the two in either order (rule W7; the spec orders neither)",
        |ctx: Ctx| async move {
            no_apps_left(&ctx).await?;
            let mut w = worker(&ctx, "worker", 1, 4096, Version::V2).await?;
            let (mut app_conn, id) = app(&ctx, "app", app_desc(Some(1), 128, None), Version::V2).await?;
            let l = launch(&ctx, &mut w).await?;
            report(&mut w, &id, l.exec_id, ExecutorState::Running, None, 44).await?;
            let host = w.host.clone();
            let wid = w.id.clone();
            drop(w);
            // The spec orders neither before the other: both, in any order.
            let mut lost = None;
            both(&ctx, &mut app_conn, "ExecutorUpdated LOST for the executor and WorkerRemoved, in any order", |e| match e {
                Envelope::Send(D::ExecutorUpdated(u)) if u.id == l.exec_id && u.state == ExecutorState::Lost => {
                    lost = Some(u.clone());
                    Some(0)
                }
                Envelope::Send(D::WorkerRemoved(r)) if r.id == wid => Some(1),
                _ => None,
            }).await?;
            let u = lost.ok_or_else(|| fail("ExecutorUpdated LOST", "none"))?;
            // Version 1 (Spark 3.0) says only that the worker was lost (`workerLost`), which reads
            // as a host of "" (SPEC §5.1).
            let host_ok = if app_conn.v() == Version::V1 { u.worker_host.is_some() } else { u.worker_host.as_deref() == Some(host.as_str()) };
            check(host_ok, format!("workerHost {host}"), format!("{:?}", u.worker_host))
        });
    cs.add("flow/master/executor/kill-executors", Level::Must,
        "the master answers an application's KillExecutors with true and sends the worker KillExecutor for that executor",
        |ctx: Ctx| async move {
            no_apps_left(&ctx).await?;
            let mut w = worker(&ctx, "worker", 1, 4096, Version::V2).await?;
            let (mut app_conn, id) = app(&ctx, "app", app_desc(Some(1), 128, None), Version::V2).await?;
            let l = launch(&ctx, &mut w).await?;
            report(&mut w, &id, l.exec_id, ExecutorState::Running, None, 45).await?;
            updated(&ctx, &mut app_conn, l.exec_id, ExecutorState::Running).await?;
            app_conn.send(&Envelope::Ask { id: 46, message: D::KillExecutors(KillExecutors::new(id.clone(), vec![l.exec_id.to_string()])) }).await?;
            app_conn.expect::<D, ()>(wait(&ctx), "a bool reply true", |e| matches!(e, Envelope::Reply { id: 46, reply: Reply::Bool(true) }).then_some(())).await?;
            w.conn.expect::<D, ()>(wait(&ctx), "KillExecutor for that executor", |e| match e {
                Envelope::Send(D::KillExecutor(k)) if k.exec_id == l.exec_id && k.app_id == id => Some(()),
                _ => None,
            }).await
        });
    cs.add("flow/master/executor/request-executors", Level::Must,
        "the master answers RequestExecutors with true and launches no more than the total requested (a limit of 1 on a worker with room for 4)",
        |ctx: Ctx| async move {
            no_apps_left(&ctx).await?;
            let mut w = worker(&ctx, "worker", 4, 4096, Version::V2).await?;
            let mut desc = app_desc(Some(1), 128, None);
            desc.initial_executor_limit = Some(0);
            let (mut app_conn, id) = app(&ctx, "app", desc.clone(), Version::V2).await?;
            let none = launches(&ctx, &mut w).await;
            check(none.is_empty(), "no executor while the limit is 0", format!("{}", none.len()))?;
            let req = D::RequestExecutors(RequestExecutors::new(
                id.clone(),
                vec![ProfileExecutors::new(desc.default_profile.clone(), 1)],
            ));
            app_conn.send(&Envelope::Ask { id: 47, message: req }).await?;
            app_conn.expect::<D, ()>(wait(&ctx), "a bool reply true", |e| matches!(e, Envelope::Reply { id: 47, reply: Reply::Bool(true) }).then_some(())).await?;
            let ls = launches(&ctx, &mut w).await;
            check(ls.len() == 1, "1 executor", format!("{}", ls.len()))
        });
    cs.add("flow/master/app/finished-kills-and-notifies", Level::Must,
        "when an application unregisters the master kills its executors (KillExecutor) and tells the worker ApplicationFinished, the two in either order (rule P6; the spec orders neither)",
        |ctx: Ctx| async move {
            no_apps_left(&ctx).await?;
            let mut w = worker(&ctx, "worker", 1, 4096, Version::V2).await?;
            let (mut app_conn, id) = app(&ctx, "app", app_desc(Some(1), 128, None), Version::V2).await?;
            let l = launch(&ctx, &mut w).await?;
            report(&mut w, &id, l.exec_id, ExecutorState::Running, None, 48).await?;
            updated(&ctx, &mut app_conn, l.exec_id, ExecutorState::Running).await?;
            app_conn.send(&Envelope::Send(D::UnregisterApplication(UnregisterApplication::new(id.clone())))).await?;
            // The spec orders neither before the other: both, in any order.
            both(&ctx, &mut w.conn, "KillExecutor for the executor and ApplicationFinished, in any order", |e| match e {
                Envelope::Send(D::KillExecutor(k)) if k.exec_id == l.exec_id => Some(0),
                Envelope::Send(D::ApplicationFinished(a)) if a.id == id => Some(1),
                _ => None,
            }).await
        });
    cs.add("flow/master/drivers/launch", Level::Must,
        "the master launches a submitted driver on a worker with room for it (LaunchDriver), and reports it RUNNING there when asked (rules D2, D6)",
        |ctx: Ctx| async move {
            no_apps_left(&ctx).await?;
            let mut w = worker(&ctx, "worker", 2, 4096, Version::V2).await?;
            let (mut c, r) = submit(&ctx).await?;
            let id = r.driver_id.clone().unwrap_or_default();
            w.conn.expect::<D, ()>(wait(&ctx), "LaunchDriver", |e| matches!(e, Envelope::Send(D::LaunchDriver(l)) if l.driver_id == id).then_some(())).await?;
            c.send(&Envelope::Ask { id: 8, message: D::RequestDriverStatus(RequestDriverStatus::new(id.clone())) }).await?;
            let s = c.expect::<D, DriverStatusResponse>(wait(&ctx), "DriverStatusResponse", |e| match e {
                Envelope::Reply { id: 8, reply: Reply::Message(D::DriverStatusResponse(s)) } => Some(s.clone()),
                _ => None,
            }).await?;
            check(s.found && s.state == Some(DriverState::Running) && s.worker_id.as_deref() == Some(w.id.as_str()),
                format!("RUNNING on {}", w.id), format!("{s:?}"))
        });
    cs.add(
        "flow/master/drivers/kill-running",
        Level::Must,
        "killing a running driver sends KillDriver to the worker running it (rule D3)",
        |ctx: Ctx| async move {
            no_apps_left(&ctx).await?;
            let mut w = worker(&ctx, "worker", 2, 4096, Version::V2).await?;
            let (mut c, r) = submit(&ctx).await?;
            let id = r.driver_id.clone().unwrap_or_default();
            w.conn
                .expect::<D, ()>(wait(&ctx), "LaunchDriver", |e| {
                    matches!(e, Envelope::Send(D::LaunchDriver(l)) if l.driver_id == id)
                        .then_some(())
                })
                .await?;
            c.send(&Envelope::Ask {
                id: 9,
                message: D::RequestKillDriver(RequestKillDriver::new(id.clone())),
            })
            .await?;
            w.conn
                .expect::<D, ()>(wait(&ctx), "KillDriver", |e| {
                    matches!(e, Envelope::Send(D::KillDriver(k)) if k.driver_id == id).then_some(())
                })
                .await
        },
    );
    cs.add("flow/master/drivers/finished", Level::Must,
        "after the worker reports a driver FINISHED the master no longer counts it active: RequestDriverStatus says FINISHED or not found (rule D5)",
        |ctx: Ctx| async move {
            no_apps_left(&ctx).await?;
            let mut w = worker(&ctx, "worker", 2, 4096, Version::V2).await?;
            let (mut c, r) = submit(&ctx).await?;
            let id = r.driver_id.clone().unwrap_or_default();
            w.conn.expect::<D, ()>(wait(&ctx), "LaunchDriver", |e| matches!(e, Envelope::Send(D::LaunchDriver(l)) if l.driver_id == id).then_some(())).await?;
            w.conn.send(&Envelope::Send(D::DriverStateChanged(DriverStateChanged::new(id.clone(), DriverState::Finished)))).await?;
            tokio::time::sleep(Duration::from_millis(100)).await;
            c.send(&Envelope::Ask { id: 8, message: D::RequestDriverStatus(RequestDriverStatus::new(id.clone())) }).await?;
            let s = c.expect::<D, DriverStatusResponse>(wait(&ctx), "DriverStatusResponse", |e| match e {
                Envelope::Reply { id: 8, reply: Reply::Message(D::DriverStatusResponse(s)) } => Some(s.clone()),
                _ => None,
            }).await?;
            check(!s.found || s.state == Some(DriverState::Finished), "FINISHED or not found", format!("{s:?}"))
        });
    cs.add("flow/master/failover/none-unasked", Level::Must,
        "the master sends a registered worker no MasterChanged or other unasked registration answer while it stays the active master (rules W3, F1)",
        |ctx: Ctx| async move {
            no_apps_left(&ctx).await?;
            let mut w = worker(&ctx, "worker", 0, 0, Version::V2).await?;
            w.conn.send(&Envelope::Send(D::Heartbeat(Heartbeat::new(w.id.clone(), worker_ref(&w.host, 1))))).await?;
            w.conn.expect_none::<D>(ctx.settings.quiet, "no MasterChanged, ReconnectWorker or RegisteredWorker", |e| matches!(e,
                Envelope::Send(D::MasterChanged(_) | D::ReconnectWorker(_) | D::RegisteredWorker(_)))).await?;
            check(state(&ctx).await?.workers.iter().any(|i| i.id == w.id && i.state == WorkerState::Alive), "the worker still ALIVE", "not ALIVE")
        });
    cs.add("flow/master/heartbeat/timeout", Level::Must,
        "a worker that sends no heartbeat for the worker timeout is lost: the master marks it DEAD or drops it (spark.worker.timeout)",
        |ctx: Ctx| async move {
            no_apps_left(&ctx).await?;
            let Some(t) = ctx.settings.worker_timeout else {
                return Err(Failure::Skipped("pass --worker-timeout SECS (the master's) to check heartbeat timeouts".into()));
            };
            if ctx.log.wire() != Wire::Sparkwire {
                // Spark's WorkerInfo.state is @transient: MasterStateResponse reads ALIVE for
                // every worker on Spark's wire (SPEC §15.4). What an application is told shows it.
                let (mut app_conn, _id) = app(&ctx, "app", app_desc(Some(1), 64, Some(0)), Version::V2).await?;
                let w = worker(&ctx, "worker", 0, 0, Version::V2).await?;
                let id = w.id.clone();
                return app_conn.expect::<D, ()>(t * 2 + Duration::from_millis(500), "WorkerRemoved for the silent worker", |e| match e {
                    Envelope::Send(D::WorkerRemoved(r)) if r.id == id => Some(()),
                    _ => None,
                }).await;
            }
            let w = worker(&ctx, "worker", 0, 0, Version::V2).await?;
            tokio::time::sleep(t * 2 + Duration::from_millis(500)).await;
            let s = state(&ctx).await?;
            check(!s.workers.iter().any(|i| i.id == w.id && i.state == WorkerState::Alive), "the worker DEAD or gone", "still ALIVE")
        });
    cs.add(
        "flow/master/heartbeat/keeps-alive",
        Level::Must,
        "a worker that heartbeats more often than the worker timeout stays ALIVE past it",
        |ctx: Ctx| async move {
            no_apps_left(&ctx).await?;
            let Some(t) = ctx.settings.worker_timeout else {
                return Err(Failure::Skipped(
                    "pass --worker-timeout SECS (the master's) to check heartbeat timeouts".into(),
                ));
            };
            // On Spark's wire the state reads ALIVE for any worker (SPEC §15.4): an application
            // listens for the WorkerRemoved it would be told.
            let mut watcher = if ctx.log.wire() != Wire::Sparkwire {
                Some(
                    app(&ctx, "app", app_desc(Some(1), 64, Some(0)), Version::V2)
                        .await?
                        .0,
                )
            } else {
                None
            };
            let mut w = worker(&ctx, "worker", 0, 0, Version::V2).await?;
            let end = tokio::time::Instant::now() + t * 2 + Duration::from_millis(500);
            while tokio::time::Instant::now() < end {
                w.conn
                    .send(&Envelope::Send(D::Heartbeat(Heartbeat::new(
                        w.id.clone(),
                        worker_ref(&w.host, 1),
                    ))))
                    .await?;
                tokio::time::sleep(t / 4).await;
            }
            if let Some(watcher) = &mut watcher {
                let id = w.id.clone();
                watcher
                    .expect_none::<D>(
                        Duration::from_millis(300),
                        "no WorkerRemoved for the heartbeating worker",
                        |e| matches!(e, Envelope::Send(D::WorkerRemoved(r)) if r.id == id),
                    )
                    .await?;
            }
            let s = state(&ctx).await?;
            check(
                s.workers
                    .iter()
                    .any(|i| i.id == w.id && i.state == WorkerState::Alive),
                "the worker ALIVE",
                "DEAD or gone",
            )
        },
    );
}

/// Waits for two envelopes on `c`, in either order: `pick` says which of the two (0 or 1) an
/// envelope is, or `None` for one that is neither.
async fn both(
    ctx: &Ctx,
    c: &mut Conn,
    want: &str,
    mut pick: impl FnMut(&Envelope<D>) -> Option<usize>,
) -> Outcome {
    let mut seen = [false, false];
    while !(seen[0] && seen[1]) {
        let which = c.expect::<D, usize>(wait(ctx), want, &mut pick).await?;
        seen[which.min(1)] = true;
    }
    Ok(())
}

/// Waits up to the patience for `cond` to hold, polling.
pub async fn settle<F, Fut>(ctx: &Ctx, cond: F, what: &str) -> Outcome
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = Result<bool, Failure>>,
{
    let end = tokio::time::Instant::now() + wait(ctx);
    loop {
        if cond().await? {
            return Ok(());
        }
        if tokio::time::Instant::now() > end {
            return Err(fail(what, "not within the time allowed"));
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn updated(
    ctx: &Ctx,
    app_conn: &mut Conn,
    exec_id: i32,
    st: ExecutorState,
) -> Result<ExecutorUpdated, Failure> {
    app_conn
        .expect::<D, ExecutorUpdated>(
            wait(ctx),
            &format!("ExecutorUpdated {st} for executor {exec_id}"),
            |e| match e {
                Envelope::Send(D::ExecutorUpdated(u)) if u.id == exec_id && u.state == st => {
                    Some(u.clone())
                }
                _ => None,
            },
        )
        .await
}

/// Submits a driver on a new driver-client connection; returns it and the answer.
pub async fn submit(ctx: &Ctx) -> Result<(Conn, SubmitDriverResponse), Failure> {
    let mut c = open(ctx, Role::DriverClient, "client", "", Version::V2).await?;
    let desc = DriverDescription::new(
        "file:/tmp/app.jar".into(),
        256,
        1,
        false,
        app_desc(None, 0, None).command,
        vec![],
    );
    c.send(&Envelope::Ask {
        id: 7,
        message: D::RequestSubmitDriver(RequestSubmitDriver::new(desc)),
    })
    .await?;
    let r = c
        .expect::<D, SubmitDriverResponse>(wait(ctx), "SubmitDriverResponse", |e| match e {
            Envelope::Reply {
                id: 7,
                reply: Reply::Message(D::SubmitDriverResponse(r)),
            } => Some(r.clone()),
            _ => None,
        })
        .await?;
    Ok((c, r))
}

/// Registers `n` workers of `cores` cores and one application; returns how many executors each
/// worker was given.
/// Waits until no application of an earlier case is still active: an application waiting for
/// cores takes them on the next worker that registers, before the case's own application.
async fn no_apps_left(ctx: &Ctx) -> Outcome {
    if ctx.log.wire() != Wire::Sparkwire {
        clear_leftovers(ctx).await?;
    }
    settle(
        ctx,
        || async { Ok(state(ctx).await?.active_apps.is_empty()) },
        "no application of an earlier case still active",
    )
    .await
}

/// On Spark's wire, ends what earlier cases left behind. Spark binds no application or driver to
/// the connection that made it (SPEC §15.4): an application registered with a driver reference
/// without an address, or a driver whose client went away, stays until someone ends it, and would
/// take the cores of the next case's workers. The suite ends them as any Spark client may:
/// UnregisterApplication, and RequestKillDriver for each driver.
async fn clear_leftovers(ctx: &Ctx) -> Outcome {
    let s = state(ctx).await?;
    if s.active_apps.is_empty() && s.active_drivers.is_empty() {
        return Ok(());
    }
    let mut c = open(ctx, Role::Ui, "cleanup", "", Version::V2).await?;
    for a in &s.active_apps {
        c.send(&Envelope::Send(D::UnregisterApplication(
            UnregisterApplication::new(a.id.clone()),
        )))
        .await?;
    }
    for (i, d) in s.active_drivers.iter().enumerate() {
        let id = 900 + i as u64;
        c.send(&Envelope::Ask {
            id,
            message: D::RequestKillDriver(RequestKillDriver::new(d.id.clone())),
        })
        .await?;
        c.expect::<D, ()>(wait(ctx), "KillDriverResponse", |e| {
            matches!(e, Envelope::Reply { id: rid, .. } if *rid == id).then_some(())
        })
        .await?;
    }
    Ok(())
}

async fn allocation(
    ctx: &Ctx,
    n: usize,
    cores: i32,
    per_executor: Option<i32>,
    max_cores: Option<i32>,
) -> Result<Vec<usize>, Failure> {
    no_apps_left(ctx).await?;
    let mut ws = Vec::new();
    for i in 0..n {
        ws.push(worker(ctx, &format!("worker{i}"), cores, 8192, Version::V2).await?);
    }
    let (_app, _id) = app(
        ctx,
        "app",
        app_desc(per_executor, 64, max_cores),
        Version::V2,
    )
    .await?;
    let mut counts = Vec::new();
    for w in &mut ws {
        counts.push(launches(ctx, w).await.len());
    }
    Ok(counts)
}
