//! `--target master`, the server's resource limits: SPEC §8 ("Resource limits close one
//! connection too, never the others"), SPEC §8.1 (the close envelope's kind for a limit and for a
//! frame over the limit) and handshake.md §5 step 0 (`tooManyConnections`). The limits are the
//! server's settings, so each case but one starts a server of its own with small limits from the
//! `--spawn-server` template ([`Server`]; the placeholders are in `crate::spawn`), and is skipped
//! without it. One function per case; each cites the sentence it checks.
//!
//! [`Server`] also serves the cases about the admin secret (`targets/admin.rs`) and TLS
//! (`targets/tls.rs`), which need a server with settings of their own too.

use std::time::{Duration, Instant};

use sparkwire::messages::deploy::{
    Heartbeat, RegisterApplication, RequestExecutors, RequestMasterState,
};
use sparkwire::messages::{Addr, DeployMessage, EndpointRef, ProfileExecutors, Version};
use sparkwire::wire::handshake::{encode_hello, Answer, Hello, RefusalReason, Role};
use sparkwire::wire::Envelope;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::case::{run, Case, Target};
use crate::env::Ctx;
use crate::kit::common::{unique, wait};
use crate::kit::master::{addr, app_desc, register_worker_msg};
use crate::kit::own_server::*;
use crate::peer::{frame, Conn, Event};
use crate::verdict::{check, fail, Failure, Level, Outcome};

type D = DeployMessage;

/// Fails when `c` closes within `quiet` (frames before that are read and skipped).
async fn still_open(c: &mut Conn, quiet: Duration, what: &str) -> Outcome {
    let deadline = tokio::time::Instant::now() + quiet;
    loop {
        let left = deadline.saturating_duration_since(tokio::time::Instant::now());
        match c.next(left).await {
            None => return Ok(()),
            Some(Event::Frame(_)) => continue,
            Some(Event::TooLarge(n)) => {
                return Err(fail(what, format!("a frame declaring {n} bytes")))
            }
            Some(Event::Closed(how)) => {
                return Err(fail(what, format!("the connection closed ({how})")))
            }
        }
    }
}

/// Expects `c` closed by a limit within `within`; when the handshake took `closeReason`, its
/// last frame must be a close envelope whose kind is `kind` (SPEC §8.1).
async fn closed_by_limit(
    ctx: &Ctx,
    c: &mut Conn,
    close_reason: bool,
    kind: &str,
    within: Duration,
) -> Outcome {
    let want = format!("the connection closed by the {kind} limit");
    if !close_reason {
        return c.expect_closed(within, &want).await;
    }
    let want = format!("{want}, its last frame a close envelope of kind {kind}");
    let ctx = Ctx {
        settings: std::sync::Arc::new(crate::env::Settings {
            patience: within,
            ..(*ctx.settings).clone()
        }),
        log: ctx.log.clone(),
    };
    let reason = crate::kit::server::close_envelope(&ctx, c, &want).await?;
    check(
        reason.kind == kind,
        want,
        format!("a close envelope of kind {}", reason.kind),
    )
}

/// The time a case gives a server to apply a limit of `secs` seconds: the limit plus the
/// patience.
fn after(ctx: &Ctx, secs: u64) -> Duration {
    Duration::from_secs(secs) + wait(ctx)
}

/// Every case of this file, added to `cs`.
pub fn add(cs: &mut Vec<Case>) {
    cs.push(Case {
        id: "handshake/5/0/too-many-connections".into(),
        level: Level::Must,
        targets: vec![Target::Master],
        timeout: Duration::from_secs(15),
        requirement: "handshake.md §5 step 0, \"the server holds fewer connections than its limit (`--max-connections`) | \
            `tooManyConnections`\", §9 \"server at its connection limit | `Refused{tooManyConnections}`\", and SPEC \
                §8 \"at the handshake, a peer beyond the server's connection limit\" (closing only its own \
                    connection): a server started with a limit of 2 that holds two sessions answers a third hello \
                        refused tooManyConnections and closes that connection; the two sessions are still served".into(),
        body: run(too_many_connections),
        ..Case::default()
    });
    cs.push(Case {
        id: "handshake/5/0/before-the-hello".into(),
        level: Level::Must,
        targets: vec![Target::Master],
        timeout: Duration::from_secs(15),
        requirement: "handshake.md §5, \"Step 0 comes before everything: a server at its connection limit ... answers \
            `tooManyConnections` without looking at the hello\": at its limit, a server answers a hello with the \
                wrong magic tooManyConnections, not badMagic".into(),
        body: run(before_the_hello),
        ..Case::default()
    });
    cs.push(Case {
        id: "handshake/5/0/before-the-challenge".into(),
        level: Level::Must,
        targets: vec![Target::Master],
        timeout: Duration::from_secs(15),
        requirement: "handshake.md §5, \"with a secret it refuses before the challenge, so a refused peer learns only that the \
            server is full\": at its limit, a server holding a secret answers a hello that asks to authenticate \
                tooManyConnections, with no challenge first".into(),
        body: run(before_the_challenge),
        ..Case::default()
    });
    cs.push(Case {
        id: "handshake/5/0/refusals-bounded".into(),
        level: Level::Should,
        targets: vec![Target::Master],
        timeout: Duration::from_secs(15),
        requirement: "handshake.md §5, \"refusals themselves are bounded (a server closes a connection unanswered while 64 \
            refusals are under way)\", and §9 \"Each failure ends that connection only\": at its limit, with 64 \
                refusals under way (hellos left unfinished), a server closes a 65th connection that says hello \
                    without answering it, and its session is still served".into(),
        body: run(refusals_bounded),
        ..Case::default()
    });
    cs.push(Case {
        id: "spec/8/limits/idle-unregistered".into(),
        level: Level::Must,
        targets: vec![Target::Master],
        timeout: Duration::from_secs(15),
        requirement: "SPEC §8, \"Resource limits close one connection too, never the others: ... one that has not registered ... \
            that sends nothing for an idle timeout\", and §8.1 (`Idle`): a server started with a 1 s idle timeout \
                closes a worker's session that never registers and sends nothing, its last frame a close envelope of \
                    kind Idle (closeReason taken); a UI asking every 300 ms meanwhile is still served".into(),
        body: run(idle_unregistered),
        ..Case::default()
    });
    cs.push(Case {
        id: "spec/8/limits/idle-ui-between-requests".into(),
        level: Level::Must,
        targets: vec![Target::Master],
        timeout: Duration::from_secs(15),
        requirement: "SPEC §8, \"... (or a `ui` peer between requests) that sends nothing for an idle timeout\", and §8.1 \
            (`Idle`): a server started with a 1 s idle timeout answers a UI's RequestMasterState, then closes it when \
                it sends nothing more, its last frame a close envelope of kind Idle; another UI is still served".into(),
        body: run(idle_ui_between_requests),
        ..Case::default()
    });
    cs.push(Case {
        id: "spec/8/limits/registered-kept".into(),
        level: Level::Must,
        targets: vec![Target::Master],
        timeout: Duration::from_secs(15),
        requirement: "SPEC §8, \"A registered worker or application that reads what it is sent is never closed by them\": with a 1 \
            s idle timeout, a registered worker that sends only heartbeats and a registered application that sends \
                nothing for 3.5 s are both still connected and served (the application's RequestExecutors is answered)".into(),
        body: run(registered_kept),
        ..Case::default()
    });
    cs.push(Case {
        id: "spec/8/limits/frame-timed-out".into(),
        level: Level::Must,
        targets: vec![Target::Master],
        timeout: Duration::from_secs(15),
        requirement: "SPEC §8, \"one whose frame is not complete within a time of its first byte\", and §8.1 (`FrameTimedOut`): a \
            server started with a 1 s frame read timeout closes a UI that sent 5 bytes of a frame and nothing more, \
                its last frame a close envelope of kind FrameTimedOut; another UI is still served".into(),
        body: run(frame_timed_out),
        ..Case::default()
    });
    cs.push(Case {
        id: "spec/8/limits/slow-consumer".into(),
        level: Level::Must,
        targets: vec![Target::Master],
        timeout: Duration::from_secs(15),
        requirement: "SPEC §8, \"a peer that does not read what is sent to it until its queue is over a limit (a slow consumer), \
            one that sends more than a bounded number of asks awaiting answers\": a server started with 64 KiB of \
                queue per peer closes a UI that floods it with RequestMasterState asks and reads nothing; another UI \
                    is still served (the close envelope is not looked for: §8.1 lets a writer give up on a peer that \
                        does not read)".into(),
        body: run(slow_consumer),
        ..Case::default()
    });
    cs.push(Case {
        id: "spec/8.1/close-reason-frame-too-large".into(),
        level: Level::Must,
        targets: vec![Target::Master],
        timeout: Duration::from_secs(15),
        requirement: "SPEC §8.1, \"an endpoint that closes the connection for one of the reasons below MUST first send a close \
            envelope\" (`FrameTooLarge`: a frame whose prefix declares more than the receiver's limit): on a session \
                that took closeReason, a prefix declaring 4294967295 bytes closes the connection after a close \
                    envelope of kind FrameTooLarge".into(),
        body: run(close_reason_frame_too_large),
        ..Case::default()
    });
}

/// A server with a limit of `max` connections holding `max` sessions.
async fn at_limit(ctx: &Ctx, secret: bool, max: usize) -> Result<(Server, Vec<Conn>), Failure> {
    let s = Server::start(
        ctx,
        Settings {
            max_connections: max,
            secret,
            ..Settings::default()
        },
        &["max_connections"],
    )
    .await?;
    let mut held = Vec::new();
    for n in 0..max {
        held.push(s.open(ctx, Role::Ui, &format!("held-{n}"), None).await?.0);
    }
    Ok((s, held))
}

/// Sends `body` as a hello on a fresh connection to `s` and returns the server's first frame.
async fn first_frame(
    ctx: &Ctx,
    s: &Server,
    body: &[u8],
    what: &str,
) -> Result<(Conn, Vec<u8>), Failure> {
    let mut c = Conn::connect(s.addr, "over-the-limit", Role::Ui, &ctx.log).await?;
    c.send_frame(body).await?;
    let first = c.frame_body(wait(ctx), what).await?;
    Ok((c, first.to_vec()))
}

/// Expects `first` to be a refusal tooManyConnections, then the close.
async fn too_many(ctx: &Ctx, mut c: Conn, first: &[u8], want: &str) -> Outcome {
    if crate::mp::challenge_nonce(first).is_some() {
        return Err(fail(want, "a challenge"));
    }
    match sparkwire::wire::handshake::decode_answer(first) {
        Ok(Answer::Refused(r)) if r.reason == RefusalReason::TooManyConnections => {}
        Ok(other) => return Err(fail(want, format!("{other:?}"))),
        Err(e) => return Err(fail(want, format!("an answer that does not decode: {e}"))),
    }
    c.expect_closed(wait(ctx), &format!("{want}, then the close"))
        .await
}

fn ui_hello() -> Vec<u8> {
    let mut body = Vec::new();
    encode_hello(&Hello::new(&[Version::V2], Role::Ui, "over"), &mut body);
    body
}

async fn too_many_connections(ctx: Ctx) -> Outcome {
    let (s, mut held) = at_limit(&ctx, false, 2).await?;
    let want = "a refusal tooManyConnections of a third hello";
    let (c, first) = first_frame(&ctx, &s, &ui_hello(), want).await?;
    too_many(&ctx, c, &first, want).await?;
    for (n, h) in held.iter_mut().enumerate() {
        served(&ctx, h, 10 + n as u64).await?;
    }
    Ok(())
}

async fn before_the_hello(ctx: Ctx) -> Outcome {
    let (s, _held) = at_limit(&ctx, false, 1).await?;
    let mut entries = crate::mp::hello_entries(&[2], Role::Ui.name(), "over");
    entries[0] = ("magic", crate::mp::s("not-sparkwire"));
    let want = "tooManyConnections (step 0), not badMagic, for a hello with the wrong magic";
    let (c, first) = first_frame(&ctx, &s, &crate::mp::map(&entries), want).await?;
    too_many(&ctx, c, &first, want).await
}

async fn before_the_challenge(ctx: Ctx) -> Outcome {
    let (s, _held) = at_limit(&ctx, true, 1).await?;
    let mut entries = crate::mp::hello_entries(&[2], Role::Ui.name(), "over");
    entries.extend(crate::peer::auth_entries(s.secret.as_ref())?);
    let want = "tooManyConnections with no challenge before it";
    let (c, first) = first_frame(&ctx, &s, &crate::mp::map(&entries), want).await?;
    too_many(&ctx, c, &first, want).await
}

async fn refusals_bounded(ctx: Ctx) -> Outcome {
    const UNDER_WAY: usize = 64;
    let (s, mut held) = at_limit(&ctx, false, 1).await?;
    // 64 hellos begun and never finished: a prefix declaring 100 bytes, and one byte.
    let mut pending = Vec::new();
    for n in 0..UNDER_WAY {
        let mut c = Conn::connect(s.addr, &format!("refusal-{n}"), Role::Ui, &ctx.log).await?;
        c.send_raw(
            &[0, 0, 0, 100, 0x85],
            "the first 5 bytes of a 100-byte hello",
        )
        .await?;
        pending.push(c);
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    let mut c = Conn::connect(s.addr, "the-65th", Role::Ui, &ctx.log).await?;
    c.send_frame(&ui_hello()).await?;
    let want = "the 65th connection closed unanswered while 64 refusals are under way";
    match c.next_or_close(wait(&ctx)).await {
        Some(Event::Closed(_)) => {}
        None => return Err(fail(want, "the connection still open")),
        Some(Event::TooLarge(n)) => {
            return Err(fail(want, format!("a prefix declaring {n} bytes")))
        }
        Some(Event::Frame(body)) => {
            // Answered: fair only if some refusal had ended by then (its connection answered
            // or closed), leaving fewer than 64 under way.
            let mut ended = 0;
            for p in &mut pending {
                if p.next(Duration::ZERO).await.is_some() {
                    ended += 1;
                }
            }
            if ended == 0 {
                return Err(fail(
                    want,
                    format!(
                        "an answer ({}) while the 64 other refusals were all still under way",
                        crate::peer::describe_handshake(&body)
                    ),
                ));
            }
        }
    }
    served(&ctx, &mut held[0], 10).await
}

/// A UI on `s` that asks RequestMasterState every 300 ms until `until`: it is never idle.
async fn busy_ui(ctx: &Ctx, s: &Server, until: Duration) -> Outcome {
    let (mut ui, _) = s.open(ctx, Role::Ui, "busy-ui", None).await?;
    let end = Instant::now() + until;
    let mut id = 100;
    while Instant::now() < end {
        served(ctx, &mut ui, id).await?;
        id += 1;
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    served(ctx, &mut ui, id).await
}

fn idle_server() -> Settings {
    Settings {
        idle_timeout: SHORT,
        ..Settings::default()
    }
}

async fn idle_unregistered(ctx: Ctx) -> Outcome {
    let s = Server::start(&ctx, idle_server(), &["idle_timeout"]).await?;
    let (mut quiet, cr) = s
        .open(&ctx, Role::Worker, "unregistered-worker", None)
        .await?;
    let busy = busy_ui(&ctx, &s, Duration::from_secs(SHORT * 2));
    let closed = closed_by_limit(&ctx, &mut quiet, cr, "Idle", after(&ctx, SHORT));
    let (busy, closed) = tokio::join!(busy, closed);
    closed?;
    busy
}

async fn idle_ui_between_requests(ctx: Ctx) -> Outcome {
    let s = Server::start(&ctx, idle_server(), &["idle_timeout"]).await?;
    let (mut ui, cr) = s.open(&ctx, Role::Ui, "ui-between-requests", None).await?;
    served(&ctx, &mut ui, 1).await?;
    let busy = busy_ui(&ctx, &s, Duration::from_secs(SHORT * 2));
    let closed = closed_by_limit(&ctx, &mut ui, cr, "Idle", after(&ctx, SHORT));
    let (busy, closed) = tokio::join!(busy, closed);
    closed?;
    busy
}

async fn registered_kept(ctx: Ctx) -> Outcome {
    let s = Server::start(&ctx, idle_server(), &["idle_timeout"]).await?;
    let n = unique();
    let port = 20000 + (n % 40000) as i32;
    let id = format!("worker-20250101120000-127.0.0.1-{port}-{n}");
    let (mut w, _) = s.open(&ctx, Role::Worker, "worker", None).await?;
    w.send(&Envelope::Send(register_worker_msg(
        &id,
        "127.0.0.1",
        port,
        1,
        512,
    )))
    .await?;
    w.expect::<D, ()>(wait(&ctx), "RegisteredWorker", |e| {
        matches!(e, Envelope::Send(D::RegisteredWorker(_))).then_some(())
    })
    .await?;
    let (mut a, _) = s.open(&ctx, Role::AppClient, "app", None).await?;
    let app_port = 40000 + (unique() % 20000) as i32;
    a.send(&Envelope::Send(D::RegisterApplication(
        RegisterApplication::new(
            app_desc(None, 256, None),
            EndpointRef::at(Addr::new("127.0.0.1", app_port), "AppClient"),
        ),
    )))
    .await?;
    let app_id = a
        .expect::<D, String>(wait(&ctx), "RegisteredApplication", |e| match e {
            Envelope::Send(D::RegisteredApplication(r)) => Some(r.app_id.clone()),
            _ => None,
        })
        .await?;
    // 3.5 idle timeouts: the worker heartbeats every 250 ms and reads what it is sent; the
    // application says nothing and reads what it is sent.
    let heartbeat = D::Heartbeat(Heartbeat::new(
        id.clone(),
        crate::kit::master::worker_ref("127.0.0.1", port),
    ));
    let end = Instant::now() + Duration::from_millis(3500 * SHORT);
    let want = "the registered worker still connected (it heartbeats and reads)";
    while Instant::now() < end {
        w.send(&Envelope::Send(heartbeat.clone())).await?;
        still_open(&mut w, Duration::from_millis(250), want).await?;
        still_open(
            &mut a,
            Duration::ZERO,
            "the registered application still connected",
        )
        .await?;
    }
    w.send(&Envelope::Send(heartbeat)).await?;
    still_open(&mut w, ctx.settings.quiet, want).await?;
    a.send(&Envelope::Ask {
        id: 3,
        message: D::RequestExecutors(RequestExecutors::new(
            app_id,
            Vec::<ProfileExecutors>::new(),
        )),
    })
    .await?;
    a.expect::<D, ()>(
        wait(&ctx),
        "an answer to the registered application's RequestExecutors (it is still connected)",
        |e| {
            matches!(
                e,
                Envelope::Reply { id: 3, .. } | Envelope::Failure { id: 3, .. }
            )
            .then_some(())
        },
    )
    .await
}

async fn frame_timed_out(ctx: Ctx) -> Outcome {
    let s = Server::start(
        &ctx,
        Settings {
            frame_read_timeout: SHORT,
            ..Settings::default()
        },
        &["frame_read_timeout"],
    )
    .await?;
    // Straight to the server: the fault proxy relays whole frames only.
    let (mut slow, cr) = s
        .open_at(&ctx, s.direct, Role::Ui, "slow-frame", None)
        .await?;
    let (mut other, _) = s.open(&ctx, Role::Ui, "other-ui", None).await?;
    // A frame declaring 28 bytes, of which only the first arrives.
    slow.send_raw(&[0, 0, 0, 28, 0x93], "the first 5 bytes of a 28-byte frame")
        .await?;
    closed_by_limit(&ctx, &mut slow, cr, "FrameTimedOut", after(&ctx, SHORT)).await?;
    served(&ctx, &mut other, 1).await
}

async fn slow_consumer(ctx: Ctx) -> Outcome {
    let s = Server::start(
        &ctx,
        Settings {
            max_queued_bytes: 64 * 1024,
            ..Settings::default()
        },
        &["max_queued_bytes"],
    )
    .await?;
    let (mut other, _) = s.open(&ctx, Role::Ui, "other-ui", None).await?;
    // A UI with a small receive buffer that says hello, then writes asks and reads nothing.
    let socket = tokio::net::TcpSocket::new_v4().map_err(|e| fail("a socket", e.to_string()))?;
    let _ = socket.set_recv_buffer_size(4096);
    let mut stream = socket
        .connect(s.addr)
        .await
        .map_err(|e| fail(format!("a TCP connection to {}", s.addr), e.to_string()))?;
    ctx.log
        .push("[flooder] connected; hello as a ui, then asks it never reads the answers of");
    let want = "the flooding UI's session accepted";
    stream
        .write_all(&frame(&ui_hello()))
        .await
        .map_err(|e| fail(want, e.to_string()))?;
    let mut prefix = [0u8; 4];
    tokio::time::timeout(wait(&ctx), stream.read_exact(&mut prefix))
        .await
        .map_err(|_| fail(want, "no answer"))?
        .map_err(|e| fail(want, e.to_string()))?;
    let mut answer = vec![0u8; u32::from_be_bytes(prefix).min(65536) as usize];
    stream
        .read_exact(&mut answer)
        .await
        .map_err(|e| fail(want, e.to_string()))?;
    match sparkwire::wire::handshake::decode_answer(&answer) {
        Ok(Answer::Accepted(_)) => {}
        other => return Err(fail(want, format!("{other:?}"))),
    }
    // Asks for up to 3 s, or until a write fails (the server closed the connection).
    let mut batch = Vec::new();
    let mut asks = 0u64;
    let flood_end = Instant::now() + Duration::from_secs(3);
    let mut write_failed = false;
    while Instant::now() < flood_end {
        batch.clear();
        for n in 0..512 {
            let ask = Envelope::Ask {
                id: asks + n + 1,
                message: D::RequestMasterState(RequestMasterState::new()),
            };
            batch.extend(
                sparkwire::wire::encode_frame(&ask, Version::V2)
                    .map_err(|e| fail("an ask the suite can encode", e.to_string()))?,
            );
        }
        match tokio::time::timeout(Duration::from_millis(500), stream.write_all(&batch)).await {
            Ok(Ok(())) => asks += 512,
            Ok(Err(_)) => {
                write_failed = true;
                break;
            }
            // The server reads no more for now: keep trying until the flood's end.
            Err(_) => {}
        }
    }
    ctx.log.push(format!(
        "[flooder] wrote {asks} asks; {}; now reading until the end of the stream",
        if write_failed {
            "a write failed"
        } else {
            "no write failed"
        }
    ));
    // Now read: what was queued, then the end of the stream (or a reset) if the server closed.
    let mut buf = vec![0u8; 1 << 16];
    let deadline = tokio::time::Instant::now() + wait(&ctx);
    let closed = loop {
        match tokio::time::timeout_at(deadline, stream.read(&mut buf)).await {
            Err(_) => break false,
            Ok(Ok(0)) | Ok(Err(_)) => break true,
            Ok(Ok(_)) => {}
        }
    };
    ctx.log.push(format!(
        "[flooder] {}",
        if closed {
            "closed by the server"
        } else {
            "still open"
        }
    ));
    check(
        closed,
        "the flooding UI's connection closed by the server (a slow consumer)",
        format!(
            "still open after {asks} asks unread and {} ms more",
            wait(&ctx).as_millis()
        ),
    )?;
    served(&ctx, &mut other, 1).await
}

async fn close_reason_frame_too_large(ctx: Ctx) -> Outcome {
    let (mut c, taken) = crate::kit::common::offering_close_reason(
        &ctx,
        addr(&ctx)?,
        "ui",
        &[Version::V1, Version::V2],
        Role::Ui,
        "suite",
    )
    .await?;
    if !taken {
        return Err(Failure::Skipped(
            "the endpoint did not take closeReason (optional, handshake.md §12)".into(),
        ));
    }
    c.send_raw(
        &u32::MAX.to_be_bytes(),
        "a prefix declaring 4294967295 bytes",
    )
    .await?;
    let want = "a close envelope of kind FrameTooLarge, then the close";
    let reason = crate::kit::server::close_envelope(&ctx, &mut c, want).await?;
    check(
        reason.kind == "FrameTooLarge",
        want,
        format!("a close envelope of kind {}", reason.kind),
    )
}
