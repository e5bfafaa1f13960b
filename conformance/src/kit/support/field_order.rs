//! SPEC §4, the encoder's half, on every target: "An **encoder** writes exactly the fields that
//! exist in the negotiated version ..., in the order the definition lists them." A decoder takes
//! fields in any order and skips unknown keys, so strict decoding cannot see an endpoint that
//! breaks it; these cases read the frames of a short conversation raw and hold every field map
//! in them, nested structs included, to the definition ([`crate::harness::canonical`]). Each runs in both
//! versions the endpoint offers (the fields differ by version). One function per case.

use crate::harness::env::Ctx;
use crate::harness::peer::Conn;
use crate::harness::peer::Event;
use crate::harness::verdict::fail;
use crate::harness::verdict::Failure;
use crate::harness::verdict::Outcome;
use crate::kit::common::unique;
use crate::kit::common::wait;
use sparkwire::messages::coarse::LaunchTask;
use sparkwire::messages::coarse::RetrieveSparkAppConfig;
use sparkwire::messages::deploy::RegisterApplication;
use sparkwire::messages::deploy::RequestMasterState;
use sparkwire::messages::Addr;
use sparkwire::messages::CoarseMessage;
use sparkwire::messages::DeployMessage;
use sparkwire::messages::EndpointRef;
use sparkwire::messages::Family;
use sparkwire::messages::Version;
use sparkwire::wire::decode_envelope;
use sparkwire::wire::encode_task;
use sparkwire::wire::handshake::Role;
use sparkwire::wire::Envelope;
use sparkwire::wire::Reply;

pub(crate) type C = CoarseMessage;

pub(crate) type D = DeployMessage;

pub(crate) const SENTENCE: &str =
    "SPEC §4, \"An encoder writes exactly the fields that exist in the negotiated version ..., in \
    the order the definition lists them\" (and §4.1: a struct is a map of its fields, same rules)";

/// Fails when `body`, a frame of `family` at `version`, is not written as SPEC §4 says.
pub(crate) fn written_in_order(family: &str, body: &[u8], version: Version) -> Outcome {
    match crate::harness::canonical::misordered(family, body, version) {
        None => Ok(()),
        Some(why) => Err(fail(
            format!(
                "every field map of the frame written with exactly the fields of version {}, in the definition's \
                    order (SPEC §4)",
                version.number()
            ),
            why,
        )),
    }
}

/// Reads frames of `F` on `c`, each held to SPEC §4, until `pick` takes one; returns what it
/// took.
pub(crate) async fn read_until<F: Family, T>(
    ctx: &Ctx,
    c: &mut Conn,
    what: &str,
    mut pick: impl FnMut(&Envelope<F>) -> Option<T>,
) -> Result<T, Failure> {
    let deadline = tokio::time::Instant::now() + wait(ctx);
    loop {
        let left = deadline.saturating_duration_since(tokio::time::Instant::now());
        match c.next_or_close(left).await {
            Some(Event::Frame(body)) => {
                written_in_order(F::FAMILY, &body, c.v())?;
                if let Ok(env) = decode_envelope::<F>(&body, c.v()) {
                    if let Some(t) = pick(&env) {
                        return Ok(t);
                    }
                }
            }
            Some(Event::TooLarge(n)) => {
                return Err(fail(what, format!("a prefix declaring {n} bytes")))
            }
            Some(Event::Closed(how)) => {
                return Err(fail(what, format!("the connection closed ({how})")))
            }
            None => return Err(fail(what, "nothing within the time allowed")),
        }
    }
}

/// Runs `one` in each version, skipping those the endpoint does not speak; skipped only when it
/// speaks neither.
pub(crate) async fn each_version<Fut>(mut one: impl FnMut(Version) -> Fut) -> Outcome
where
    Fut: std::future::Future<Output = Outcome>,
{
    let mut ran = false;
    let mut why = Vec::new();
    for v in [Version::V1, Version::V2] {
        match one(v).await {
            Ok(()) => ran = true,
            Err(Failure::Skipped(s)) => why.push(s),
            Err(e) => return Err(e),
        }
    }
    if ran {
        Ok(())
    } else {
        Err(Failure::Skipped(why.join("; ")))
    }
}

pub(crate) async fn master(ctx: Ctx) -> Outcome {
    each_version(|v| master_in(ctx.clone(), v)).await
}

pub(crate) async fn master_in(ctx: Ctx, v: Version) -> Outcome {
    use crate::kit::master::{app_desc, open, register_worker_msg};
    let n = unique();
    let id = format!("worker-20250101120000-127.0.0.1-{n}");
    let mut w = open(&ctx, Role::Worker, "worker", &id, v).await?;
    // No cores, no memory: nothing is launched on it for another case's application.
    let port = 20000 + (n % 40000) as i32;
    w.send(&Envelope::Send(register_worker_msg(
        &id,
        "127.0.0.1",
        port,
        0,
        0,
    )))
    .await?;
    read_until::<D, ()>(&ctx, &mut w, "RegisteredWorker", |e| {
        matches!(e, Envelope::Send(D::RegisteredWorker(_))).then_some(())
    })
    .await?;
    let mut a = open(&ctx, Role::AppClient, "app", "", v).await?;
    let app_port = 40000 + (n % 20000) as i32;
    a.send(&Envelope::Send(D::RegisterApplication(
        RegisterApplication::new(
            app_desc(Some(1), 64, Some(0)),
            EndpointRef::at(Addr::new("127.0.0.1", app_port), "AppClient"),
        ),
    )))
    .await?;
    read_until::<D, ()>(&ctx, &mut a, "RegisteredApplication", |e| {
        matches!(e, Envelope::Send(D::RegisteredApplication(_))).then_some(())
    })
    .await?;
    let mut ui = open(&ctx, Role::Ui, "ui", "", v).await?;
    ui.send(&Envelope::Ask {
        id: 5,
        message: D::RequestMasterState(RequestMasterState::new()),
    })
    .await?;
    read_until::<D, ()>(&ctx, &mut ui, "a reply to RequestMasterState", |e| {
        matches!(e, Envelope::Reply { id: 5, .. }).then_some(())
    })
    .await
}

pub(crate) async fn worker(ctx: Ctx) -> Outcome {
    each_version(|v| worker_in(ctx.clone(), v)).await
}

pub(crate) async fn worker_in(ctx: Ctx, v: Version) -> Outcome {
    use crate::kit::worker::{launch_executor, registered};
    let mut w = registered(&ctx, &[v]).await?;
    read_until::<D, ()>(&ctx, &mut w.conn, "a Heartbeat", |e| {
        matches!(e, Envelope::Send(D::Heartbeat(_))).then_some(())
    })
    .await?;
    let app = "app-20250101120000-0001";
    launch_executor(&mut w, app, 0).await?;
    let ask =
        read_until::<D, Option<u64>>(&ctx, &mut w.conn, "ExecutorStateChanged", |e| match e {
            Envelope::Send(D::ExecutorStateChanged(_)) => Some(None),
            Envelope::Ask {
                id,
                message: D::ExecutorStateChanged(_),
            } => Some(Some(*id)),
            _ => None,
        })
        .await?;
    if let Some(id) = ask {
        w.conn
            .send(&Envelope::<D>::Reply {
                id,
                reply: Reply::Bool(true),
            })
            .await?;
    }
    Ok(())
}

pub(crate) async fn driver(ctx: Ctx) -> Outcome {
    each_version(|v| driver_in(ctx.clone(), v)).await
}

pub(crate) async fn driver_in(ctx: Ctx, v: Version) -> Outcome {
    use crate::kit::spawned;
    let mut run = crate::kit::driver::started(&ctx, crate::kit::driver::SMALL).await?;
    let mut app = run.accept(&ctx, "master", Role::Master).await?;
    let hello = app.read_hello(spawned::startup(&ctx)).await?;
    if !hello.versions.contains(&u64::from(v.number())) {
        return Err(Failure::Skipped(format!(
            "the driver's application client does not offer version {}",
            v.number()
        )));
    }
    spawned::accept(&ctx, &mut app, &hello, &[v], "master").await?;
    let reg =
        read_until::<D, RegisterApplication>(&ctx, &mut app, "RegisterApplication", |e| match e {
            Envelope::Send(D::RegisterApplication(r)) => Some(r.clone()),
            _ => None,
        })
        .await?;
    crate::kit::driver::registered_application(&mut app, run.given).await?;
    // The executor's side, at the same version: the driver's port from `--driver-url
    // spark://CoarseGrainedScheduler@HOST:PORT` in the application's command.
    let args = &reg.app_description.command.arguments;
    let url = args
        .iter()
        .position(|a| a == "--driver-url")
        .and_then(|i| args.get(i + 1))
        .cloned()
        .unwrap_or_default();
    let at: std::net::SocketAddr =
        url.rsplit('@')
            .next()
            .unwrap_or_default()
            .parse()
            .map_err(|_| {
                fail(
                    "--driver-url spark://CoarseGrainedScheduler@HOST:PORT",
                    url.clone(),
                )
            })?;
    let driver_addr = run.reach(&ctx, at, Role::Executor, Role::Driver).await?;
    let mut c = Conn::open(
        driver_addr,
        "executor",
        Role::Executor,
        "1",
        &[v],
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
    read_until::<C, ()>(&ctx, &mut c, "a reply to RetrieveSparkAppConfig", |e| {
        matches!(e, Envelope::Reply { id: 2, .. }).then_some(())
    })
    .await
}

pub(crate) async fn executor(ctx: Ctx) -> Outcome {
    each_version(|v| executor_in(ctx.clone(), v)).await
}

pub(crate) async fn executor_in(ctx: Ctx, v: Version) -> Outcome {
    use crate::kit::executor::{registered, task};
    let mut e = registered(&ctx, &[v], 128).await?;
    read_until::<C, ()>(&ctx, &mut e.conn, "LaunchedExecutor", |x| {
        matches!(x, Envelope::Send(C::LaunchedExecutor(_))).then_some(())
    })
    .await?;
    let t = task(1, "sum-squares", &[1, 2, 3], 1);
    let data = encode_task(&t).map_err(|er| fail("a task the suite can encode", er.to_string()))?;
    e.conn
        .send(&Envelope::Send(C::LaunchTask(LaunchTask::new(data.into()))))
        .await?;
    read_until::<C, ()>(&ctx, &mut e.conn, "a StatusUpdate FINISHED", |x| match x {
        Envelope::Send(C::StatusUpdate(s)) if s.state.is_finished() => Some(()),
        _ => None,
    })
    .await
}
