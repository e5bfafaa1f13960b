//! Playing workers, application clients, driver clients and UIs against a master: its address, a
//! connection to it, a registered worker or application, its state, and waiting for it to settle.

use std::collections::BTreeMap;
use std::net::SocketAddr;

use std::time::Duration;

use sparkwire::messages::deploy::*;
use sparkwire::messages::{
    Addr, ApplicationDescription, Command, DeployMessage, DriverDescription, EndpointRef,
    ExecutorState, ResourceProfile, Version,
};
use sparkwire::wire::handshake::Role;
use sparkwire::wire::{Envelope, Reply};

pub use crate::harness::case::Need;
use crate::harness::env::{Ctx, Site, Wire};
use crate::harness::peer::Conn;
use crate::harness::verdict::{fail, Failure, Outcome};
use crate::kit::common::unique;
use crate::kit::common::wait;

type D = DeployMessage;

/// The master's address.
pub fn addr(ctx: &Ctx) -> Result<SocketAddr, Failure> {
    match &ctx.settings.endpoint {
        Site::Addr(a) => Ok(*a),
        _ => Err(Failure::Skipped("the master target needs --addr".into())),
    }
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
    let mut ui = open(ctx, Role::Ui, "ui", "", crate::kit::versions::highest(ctx)).await?;
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
pub async fn launch(ctx: &Ctx, w: &mut FakeWorker) -> Result<LaunchExecutor, Failure> {
    w.conn
        .expect::<D, LaunchExecutor>(wait(ctx), "LaunchExecutor", |e| match e {
            Envelope::Send(D::LaunchExecutor(l)) => Some(l.clone()),
            _ => None,
        })
        .await
}

/// All the LaunchExecutor a worker receives within the quiet time.
pub async fn launches(ctx: &Ctx, w: &mut FakeWorker) -> Vec<LaunchExecutor> {
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

/// Whether a worker the suite plays on `conn` asks `ExecutorStateChanged` rather than sending it
/// one-way: on sparkwire's wire, in version 2 (SPEC §5); on Spark's, as a worker of the release
/// spoken does: from Spark 3.2.0 on, also in 3.2 and 3.3, which map to version 1 (SPEC §15.4 S8),
/// whose masters take the state only as an ask.
pub fn asks_executor_state(conn: &Conn) -> bool {
    match conn.spark() {
        Some(spark) => spark.release().asks_executor_state(),
        None => conn.v() != Version::V1,
    }
}

/// Reports an executor's state from worker `w` as a worker of the connection's version or Spark
/// release does ([`asks_executor_state`]): an ask with id `ask_id`, or a send.
pub async fn report(
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
    if !asks_executor_state(&w.conn) {
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

/// Makes the master what a case `need`s, or fails (or skips the case) when it is not so: the
/// catalogue runs it before the body of each case that declares the need.
pub async fn establish(need: Need, ctx: &Ctx) -> Outcome {
    match need {
        Need::OwnRegistrations => Ok(()),
        Need::NoOtherApplication => no_apps_left(ctx).await,
        Need::SpreadsOut(wanted) if ctx.settings.spread_out == wanted => Ok(()),
        Need::SpreadsOut(true) => Err(Failure::Skipped(
            "the master runs with spreadOut off (--spread-out false)".into(),
        )),
        Need::SpreadsOut(false) => Err(Failure::Skipped(
            "the master spreads out (pass --spread-out false for a master started so)".into(),
        )),
    }
}

/// Waits for two envelopes on `c`, in either order: `pick` says which of the two (0 or 1) an
/// envelope is, or `None` for one that is neither.
pub async fn both(
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
    settle_within(wait(ctx), cond, what).await
}

/// [`settle`] within `within` rather than the patience (a state the master takes on as soon
/// as it reads a message: [`crate::kit::common::reaction_wait`]).
pub async fn settle_within<F, Fut>(within: Duration, cond: F, what: &str) -> Outcome
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = Result<bool, Failure>>,
{
    let end = tokio::time::Instant::now() + within;
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

/// The master's next ExecutorUpdated to the application on `app_conn`: executor `exec_id` in state `st`.
pub async fn updated(
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

/// Ends the driver `id` a case submitted over `c`, its own connection (SPEC §14.2 Z4: no other
/// driver client may, and closing the connection does not), with RequestKillDriver as ask
/// `ask`, so that it leaves nothing behind: a driver left waiting would be launched on the
/// workers of a later case, taking their cores and memory. The answer is awaited for the quiet
/// time at most and not judged here: the case's requirement is elsewhere.
pub async fn end_driver(ctx: &Ctx, c: &mut Conn, id: Option<&str>, ask: u64) -> Outcome {
    let Some(id) = id else {
        return Ok(());
    };
    c.send(&Envelope::Ask {
        id: ask,
        message: D::RequestKillDriver(RequestKillDriver::new(id.to_string())),
    })
    .await?;
    let _ = c
        .expect::<D, ()>(ctx.settings.quiet, "KillDriverResponse", |e| {
            matches!(e, Envelope::Reply { id: r, .. } if *r == ask).then_some(())
        })
        .await;
    Ok(())
}

/// Registers `n` workers of `cores` cores and one application; returns how many executors each
/// worker was given.
/// Waits until no application of an earlier case is still active: an application waiting for
/// cores takes them on the next worker that registers, before the case's own application.
pub async fn no_apps_left(ctx: &Ctx) -> Outcome {
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
pub async fn clear_leftovers(ctx: &Ctx) -> Outcome {
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

/// Registers `n` fresh workers of `cores` cores each and an application (`per_executor` cores
/// per executor, at most `max_cores`); returns how many executors the master launches on each.
pub async fn allocation(
    ctx: &Ctx,
    n: usize,
    cores: i32,
    per_executor: Option<i32>,
    max_cores: Option<i32>,
) -> Result<Vec<usize>, Failure> {
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

/// How often a worker the suite plays heartbeats while a case waits on the master: a quarter of
/// the master's worker timeout when the run knows it (`--worker-timeout`, as Spark's worker
/// does), at most every 500 ms, so that a case never depends on how fast the master answers
/// relative to a timeout (issue 44).
pub fn heartbeat_every(ctx: &Ctx) -> Duration {
    let most = Duration::from_millis(500);
    ctx.settings
        .worker_timeout
        .map_or(most, |t| (t / 4).min(most))
}

/// Sends one Heartbeat of `w` over its own connection.
pub async fn heartbeat(w: &mut FakeWorker) -> Outcome {
    let hb = D::Heartbeat(Heartbeat::new(w.id.clone(), worker_ref(&w.host, 1)));
    w.conn.send(&Envelope::Send(hb)).await
}

/// Waits up to the patience for an envelope `pick` accepts, on `on` (or, with `None`, on the
/// worker's own connection), while worker `w` heartbeats every [`heartbeat_every`]: a worker
/// that stays alive however long the master takes to answer.
pub async fn expect_heartbeating<T>(
    ctx: &Ctx,
    w: &mut FakeWorker,
    mut on: Option<&mut Conn>,
    want: &str,
    mut pick: impl FnMut(&Envelope<D>) -> Option<T>,
) -> Result<T, Failure> {
    let deadline = tokio::time::Instant::now() + wait(ctx);
    let mut seen = Vec::new();
    loop {
        heartbeat(w).await?;
        let left = deadline.saturating_duration_since(tokio::time::Instant::now());
        if left.is_zero() {
            let seen = if seen.is_empty() {
                String::new()
            } else {
                format!("; before that: {}", seen.join(", "))
            };
            return Err(fail(
                want,
                format!("nothing within {} ms{seen}", wait(ctx).as_millis()),
            ));
        }
        let conn = match on.as_deref_mut() {
            Some(c) => c,
            None => &mut w.conn,
        };
        let slice_end = tokio::time::Instant::now() + left.min(heartbeat_every(ctx));
        loop {
            let slice = slice_end.saturating_duration_since(tokio::time::Instant::now());
            match conn.next(slice).await {
                None => {
                    // Nothing in time (or the run knows the master mute): the next heartbeat
                    // at the slice's end, not sooner.
                    tokio::time::sleep_until(slice_end).await;
                    break;
                }
                Some(crate::harness::peer::Event::Frame(body)) => {
                    let env = sparkwire::wire::decode_envelope::<D>(&body, conn.v())
                        .map_err(|e| fail(want, format!("an undecodable frame: {e}")))?;
                    if let Some(t) = pick(&env) {
                        return Ok(t);
                    }
                    seen.push(crate::harness::peer::envelope_label(&env));
                }
                Some(crate::harness::peer::Event::Closed(how)) => {
                    return Err(fail(want, format!("the connection closed ({how})")))
                }
                Some(crate::harness::peer::Event::TooLarge(n)) => {
                    return Err(fail(want, format!("a frame declaring {n} bytes")))
                }
            }
        }
    }
}

/// Waits on `c` for the answer to the ask `id`, which names an application, a driver or a
/// worker the master does not know (never did, or no longer does): SPEC §14.2 lets it answer
/// as Spark does (a bool reply `false`) and a strict master refuse (a failure, or a close);
/// `true`, or any other reply, fails the case with `want`.
pub async fn expect_false_or_refused(ctx: &Ctx, c: &mut Conn, id: u64, want: String) -> Outcome {
    let got = c
        .expect_or_close::<D, Envelope<D>>(wait(ctx), &want, |e| match e {
            Envelope::Failure { id: i, .. } | Envelope::Reply { id: i, .. } if *i == id => {
                Some(e.clone())
            }
            _ => None,
        })
        .await;
    match got {
        Ok(Envelope::Reply {
            reply: Reply::Bool(false),
            ..
        })
        | Ok(Envelope::Failure { .. }) => Ok(()),
        Ok(other) => Err(fail(want, crate::harness::peer::envelope_label(&other))),
        Err(Failure::Fail { seen, .. }) if seen.contains("closed") => Ok(()),
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::harness::env::Log;
    use sparkwire::spark::{
        classify, parse_stream, Classified, Frame, FrameDecoder, Release, RequestMessage, Typed,
    };
    use tokio::io::AsyncReadExt;
    use tokio::net::TcpListener;

    /// What a Spark endpoint reads when a worker the suite plays on Spark's wire, speaking
    /// `release`, reports an executor RUNNING: `Some(7)` for an `RpcRequest` of request id 7 (an
    /// ask), `None` for a `OneWayMessage`; either must carry the `ExecutorStateChanged`.
    async fn state_request_id(release: &'static Release) -> Option<i64> {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("addr");
        let log = Log::on_spark_wire(release);
        let conn = Conn::connect_spark(addr, "worker", Role::Worker, &log)
            .await
            .expect("connected");
        let (mut peer, _) = listener.accept().await.expect("accepted");
        let mut w = FakeWorker {
            conn,
            id: "worker-1".into(),
            host: "127.0.0.1".into(),
            cores: 1,
            memory: 1024,
        };
        report(&mut w, "app-1", 0, ExecutorState::Running, None, 7)
            .await
            .expect("reported");
        let mut decoder = FrameDecoder::default();
        let mut buf = [0u8; 4096];
        let (id, body) = loop {
            if let Some(item) = decoder.next_item() {
                match item.frame.expect("a Spark frame") {
                    Frame::RpcRequest { request_id, body } => break (Some(request_id), body),
                    Frame::OneWay { body } => break (None, body),
                    other => panic!("{release}: a {} frame", other.kind().as_str()),
                }
            }
            let n = peer.read(&mut buf).await.expect("read");
            assert!(
                n > 0,
                "{release}: the connection ended before a whole frame"
            );
            decoder.push(&buf[..n]);
        };
        let header = RequestMessage::parse(&body).expect("a RequestMessage header");
        let graph = parse_stream(&header.stream).expect("a Java stream");
        assert!(
            matches!(
                classify(graph.root_node()),
                Classified::Message(Typed::Deploy(D::ExecutorStateChanged(_)))
            ),
            "{release}: not an ExecutorStateChanged"
        );
        id
    }

    #[tokio::test]
    async fn a_worker_played_on_spark_s_wire_asks_its_executor_state_from_spark_3_2_on_and_sends_it_before(
    ) {
        for (name, asks) in [
            ("3.0.3", false),
            ("3.1.3", false),
            ("3.2.0", true),
            ("3.2.4", true),
            ("3.3.4", true),
            ("3.4.4", true),
            ("4.0.1", true),
            ("4.3.0", true),
        ] {
            let release = Release::named(name).expect("a known release");
            let id = state_request_id(release).await;
            assert_eq!(id, asks.then_some(7), "Spark {name}");
        }
        // 3.2 and 3.3 map to protocol version 1, where the state is a send: not the version
        // decides, the release does (a 3.2 or 3.3 master drops a one-way state).
        assert_eq!(
            Release::named("3.3.4").map(|r| r.version()),
            Some(Version::V1)
        );
    }
}
