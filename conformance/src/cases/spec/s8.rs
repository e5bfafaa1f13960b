//! `spec/8/…`: SPEC §8 (protocol/SPEC.md).

/// The cases about limits.
pub mod limits {
    use crate::harness::case::run;
    use crate::harness::case::Case;
    use crate::harness::case::Target;
    use crate::harness::env::Ctx;
    use crate::harness::peer::frame;
    use crate::harness::verdict::check;
    use crate::harness::verdict::fail;
    use crate::harness::verdict::Level;
    use crate::harness::verdict::Outcome;
    use crate::kit::common::unique;
    use crate::kit::common::wait;
    use crate::kit::master::app_desc;
    use crate::kit::master::register_worker_msg;
    use crate::kit::own_server::*;
    use crate::kit::support::limits::*;
    use sparkwire::messages::deploy::Heartbeat;
    use sparkwire::messages::deploy::RegisterApplication;
    use sparkwire::messages::deploy::RequestExecutors;
    use sparkwire::messages::deploy::RequestMasterState;
    use sparkwire::messages::Addr;
    use sparkwire::messages::DeployMessage;
    use sparkwire::messages::EndpointRef;
    use sparkwire::messages::ProfileExecutors;
    use sparkwire::messages::Version;
    use sparkwire::wire::handshake::Answer;
    use sparkwire::wire::handshake::Role;
    use sparkwire::wire::Envelope;
    use std::time::Duration;
    use std::time::Instant;
    use tokio::io::AsyncReadExt;
    use tokio::io::AsyncWriteExt;

    type D = DeployMessage;

    /// The cases of this section, each naming its targets.
    pub fn cases(cs: &mut Vec<Case>) {
        cs.push(Case {
            id: "spec/8/limits/idle-unregistered".into(),
            level: Level::Must,
            targets: vec![Target::Master],
            timeout: Duration::from_secs(15),
            quote:
                "SPEC §8, \"Resource limits close one connection too, never the others: ... one \
                that has not registered ... that sends nothing for an idle timeout\""
                    .into(),
            requirement: "a 1 s idle timeout closes a silent unregistered worker (Idle); a UI \
                asking meanwhile is still served"
                .into(),
            body: run(idle_unregistered),
            ..Case::default()
        });
        cs.push(Case {
            id: "spec/8/limits/idle-ui-between-requests".into(),
            level: Level::Must,
            targets: vec![Target::Master],
            timeout: Duration::from_secs(15),
            quote: "SPEC §8, \"... (or a `ui` peer between requests) that sends nothing for an \
                idle timeout\", and §8.1 (`Idle`)"
                .into(),
            requirement: "a 1 s idle timeout closes a UI silent after its answer (Idle); another \
                UI is still served"
                .into(),
            body: run(idle_ui_between_requests),
            ..Case::default()
        });
        cs.push(Case {
            id: "spec/8/limits/registered-kept".into(),
            level: Level::Must,
            targets: vec![Target::Master],
            timeout: Duration::from_secs(15),
            quote: "SPEC §8, \"A registered worker or application that reads what it is sent is \
                never closed by them\""
                .into(),
            requirement: "at a 1 s idle timeout, a worker that only heartbeats and an app silent \
                for 3.5 s are still served"
                .into(),
            body: run(registered_kept),
            ..Case::default()
        });
        cs.push(Case {
            id: "spec/8/limits/frame-timed-out".into(),
            level: Level::Must,
            targets: vec![Target::Master],
            timeout: Duration::from_secs(15),
            quote: "SPEC §8, \"one whose frame is not complete within a time of its first byte\", \
                and §8.1 (`FrameTimedOut`)"
                .into(),
            requirement: "a 1 s frame read timeout closes a UI that sent 5 bytes of a frame \
                (FrameTimedOut); others served"
                .into(),
            body: run(frame_timed_out),
            ..Case::default()
        });
        cs.push(Case {
            id: "spec/8/limits/slow-consumer".into(),
            level: Level::Must,
            targets: vec![Target::Master],
            timeout: Duration::from_secs(40),
            quote: "SPEC §8, \"a peer that does not read what is sent to it until its queue is \
                over a limit (a slow consumer), one that sends more than a bounded number of asks \
                awaiting answers\""
                .into(),
            requirement: "with a 64 KiB queue, a UI that asks and never reads is closed; another \
                UI is still served"
                .into(),
            body: run(slow_consumer),
            ..Case::default()
        });
    }

    async fn idle_unregistered(ctx: Ctx) -> Outcome {
        let s = OwnServer::start(&ctx, idle_server(), &["idle_timeout"]).await?;
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
        let s = OwnServer::start(&ctx, idle_server(), &["idle_timeout"]).await?;
        let (mut ui, cr) = s.open(&ctx, Role::Ui, "ui-between-requests", None).await?;
        served(&ctx, &mut ui, 1).await?;
        let busy = busy_ui(&ctx, &s, Duration::from_secs(SHORT * 2));
        let closed = closed_by_limit(&ctx, &mut ui, cr, "Idle", after(&ctx, SHORT));
        let (busy, closed) = tokio::join!(busy, closed);
        closed?;
        busy
    }

    async fn registered_kept(ctx: Ctx) -> Outcome {
        let s = OwnServer::start(&ctx, idle_server(), &["idle_timeout"]).await?;
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
        let s = OwnServer::start(
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

    /// The size of the argument the slow consumer's application carries, which every
    /// MasterStateResponse then holds: a few unread answers pass any queue limit once the kernel's
    /// buffers are full.
    const BIG_ARGUMENT: usize = 256 * 1024;

    /// How many unread answers of [`BIG_ARGUMENT`] bytes the flood's time allows for: 16 MiB, more
    /// than the kernel's buffers of a loopback connection hold by default on either side (Linux's
    /// largest send buffer, `tcp_wmem`, is 4 MiB) plus any queue limit the case sets.
    const ANSWERS_ALLOWED: u32 = 64;

    async fn slow_consumer(ctx: Ctx) -> Outcome {
        let s = OwnServer::start(
            &ctx,
            Settings {
                max_queued_bytes: 64 * 1024,
                ..Settings::default()
            },
            &["max_queued_bytes"],
        )
        .await?;
        let (mut other, _) = s.open(&ctx, Role::Ui, "other-ui", None).await?;
        // An application whose command carries a big argument: every MasterStateResponse is then
        // over BIG_ARGUMENT bytes, so that what the flood needs is counted in answers, not in asks
        // (SPEC §8: how many bytes a slow consumer takes depends on the kernel's buffers).
        let (mut a, _) = s.open(&ctx, Role::AppClient, "app", None).await?;
        let mut desc = app_desc(None, 256, None);
        desc.command.arguments = vec!["x".repeat(BIG_ARGUMENT)];
        let app_port = 40000 + (unique() % 20000) as i32;
        a.send(&Envelope::Send(D::RegisterApplication(
            RegisterApplication::new(
                desc,
                EndpointRef::at(Addr::new("127.0.0.1", app_port), "AppClient"),
            ),
        )))
        .await?;
        a.expect::<D, ()>(wait(&ctx), "RegisteredApplication", |e| {
            matches!(e, Envelope::Send(D::RegisteredApplication(_))).then_some(())
        })
        .await?;
        // The time one big answer takes to come back, read at once: the flood's time is scaled by it.
        let asked = Instant::now();
        served(&ctx, &mut other, 1).await?;
        let rtt = asked.elapsed();
        // A UI with a small receive buffer that says hello, then writes asks and reads nothing.
        let socket =
            tokio::net::TcpSocket::new_v4().map_err(|e| fail("a socket", e.to_string()))?;
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
        // Asks, a few at a time, until a write fails (the server closed the connection) or the
        // flood's time is up: the patience, plus the time of ANSWERS_ALLOWED answers at the measured
        // pace, within the case's own limit.
        let budget = (wait(&ctx) + rtt * ANSWERS_ALLOWED)
            .min(Duration::from_secs(20).mul_f64(ctx.settings.timeout_scale));
        ctx.log.push(format!(
            "[flooder] one answer took {} ms: flooding for {} ms at most",
            rtt.as_millis(),
            budget.as_millis()
        ));
        let mut batch = Vec::new();
        let mut asks = 0u64;
        let flood_end = Instant::now() + budget;
        let mut write_failed = false;
        while Instant::now() < flood_end {
            batch.clear();
            for n in 0..8 {
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
                Ok(Ok(())) => asks += 8,
                Ok(Err(_)) => {
                    write_failed = true;
                    break;
                }
                // The server reads no more for now: keep trying until the flood's end.
                Err(_) => {}
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
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
        served(&ctx, &mut other, 2).await
    }
}

/// The cases about server.
pub mod server {
    use crate::harness::case::bind;
    use crate::harness::case::Case;
    use crate::harness::case::Target;
    use crate::harness::env::Ctx;
    use crate::harness::peer::frame;
    use crate::harness::verdict::Level;
    use crate::harness::verdict::Outcome;
    use crate::kit::common::wait;
    use crate::kit::endpoint::Endpoint;
    use crate::kit::support::server::*;
    use sparkwire::messages::Version;

    /// The cases of this section for the listening endpoint `s` (a master, a worker's UI port, a driver's
    /// executor port).
    pub fn for_server(cs: &mut Vec<Case>, s: &Endpoint) {
        let name = s.name;
        cs.push(Case {
            id: "spec/8/others-unaffected".into(),
            level: Level::Must,
            targets: vec![Target::Master, Target::Worker, Target::Driver],
            requirement: format!(
                "a decoding error ends only its own connection: {name} \
            goes on serving its other connections"
            ),
            body: bind(s, spec_8_others_unaffected),
            ..Case::default()
        });
    }

    async fn spec_8_others_unaffected(ctx: Ctx, s: Endpoint) -> Outcome {
        let at = s.open(ctx.clone()).await?;
        let mut good = session(&ctx, &s, &at, Version::V2, "good").await?;
        let mut bad = session(&ctx, &s, &at, Version::V2, "bad").await?;
        bad.send_raw(&frame(&[0x92, 0x00, 0xc1]), "[0, 0xc1]")
            .await?;
        bad.expect_closed(wait(&ctx), "the bad connection closed")
            .await?;
        probe(&ctx, &s, &mut good, 78).await
    }
}

/// The cases about closing.
pub mod closing {
    use crate::harness::case::run;
    use crate::harness::case::Case;
    use crate::harness::case::Target;
    use crate::harness::env::Ctx;
    use crate::harness::peer::frame;
    use crate::harness::verdict::Level;
    use crate::harness::verdict::Outcome;
    use crate::kit::master::app;
    use crate::kit::master::app_desc;
    use crate::kit::master::settle;
    use crate::kit::master::state;
    use crate::kit::master::worker;
    use crate::kit::support::lost_on_close::*;
    use std::time::Duration;

    /// The cases of this section, each naming its targets.
    pub fn cases(cs: &mut Vec<Case>) {
        cs.push(Case {
            id: "spec/8/decoding-error-worker-lost".into(),
            level: Level::Must,
            targets: vec![Target::Master],
            timeout: Duration::from_secs(10),
            quote: "SPEC §8, \"On any decoding error the receiver closes **that connection only** \
                ... the state the endpoint keeps about the peer (a registered worker ...) [is] not \
                lost; Spark's own behaviour on a lost connection applies (for example a master \
                marks a worker whose connection closed as lost)\""
                .into(),
            requirement: "a registered worker that sends a frame holding 0xc1 is closed, and is \
                then DEAD or gone"
                .into(),
            body: run(decoding_error_worker_lost),
            ..Case::default()
        });
        cs.push(Case {
            id: "spec/8/decoding-error-app-finished".into(),
            level: Level::Must,
            targets: vec![Target::Master],
            timeout: Duration::from_secs(10),
            quote: "SPEC §8, \"On any decoding error the receiver closes **that connection only** \
                ... Spark's own behaviour on a lost connection applies\""
                .into(),
            requirement:
                "an application client that sends a frame holding 0xc1 is closed, and its \
                application ends"
                    .into(),
            body: run(decoding_error_app_finished),
            ..Case::default()
        });
    }

    async fn decoding_error_worker_lost(ctx: Ctx) -> Outcome {
        let v = crate::kit::versions::highest(&ctx);
        let mut w = worker(&ctx, "worker", 0, 0, v).await?;
        w.conn
            .send_raw(&frame(&[0xc1]), "a frame holding the reserved marker 0xc1")
            .await?;
        w.conn
            .expect_closed(
                crate::kit::common::reaction_wait(&ctx),
                "the connection closed (InvalidMessagePack)",
            )
            .await?;
        lost(&ctx, &w.id).await
    }

    async fn decoding_error_app_finished(ctx: Ctx) -> Outcome {
        let v = crate::kit::versions::highest(&ctx);
        let (mut c, id) = app(&ctx, "app", app_desc(Some(1), 64, Some(0)), v).await?;
        c.send_raw(&frame(&[0xc1]), "a frame holding the reserved marker 0xc1")
            .await?;
        c.expect_closed(
            crate::kit::common::reaction_wait(&ctx),
            "the connection closed (InvalidMessagePack)",
        )
        .await?;
        settle(
            &ctx,
            || async { Ok(!state(&ctx).await?.active_apps.iter().any(|a| a.id == id)) },
            &format!("{id} no longer active"),
        )
        .await
    }
}

/// The cases of issue 44's decisions about §8: an answer over the frame limit and the idle timeout
/// of a driver client between polls.
pub mod points {
    use crate::harness::case::run;
    use crate::harness::case::Case;
    use crate::harness::case::Target;
    use crate::harness::env::Ctx;
    use crate::harness::verdict::check;
    use crate::harness::verdict::fail;
    use crate::harness::verdict::Level;
    use crate::harness::verdict::Outcome;
    use crate::kit::common::unique;
    use crate::kit::common::wait;
    use crate::kit::master::app_desc;
    use crate::kit::own_server::after;
    use crate::kit::own_server::closed_by_limit;
    use crate::kit::own_server::OwnServer;
    use crate::kit::own_server::Settings;
    use crate::kit::own_server::SHORT;
    use crate::kit::support::open_points::*;
    use sparkwire::messages::deploy::RegisterApplication;
    use sparkwire::messages::deploy::RequestDriverStatus;
    use sparkwire::messages::deploy::RequestMasterState;
    use sparkwire::messages::Addr;
    use sparkwire::messages::EndpointRef;
    use sparkwire::wire::handshake::Role;
    use sparkwire::wire::Envelope;
    use std::time::Duration;

    /// The cases of this section, each naming its targets.
    pub fn cases(cs: &mut Vec<Case>) {
        cs.push(Case {
            id: "spec/8/limits/answer-over-frame-limit".into(),
            level: Level::Must,
            targets: vec![Target::Master],
            timeout: Duration::from_secs(15),
            quote: "SPEC §8, \"An ask that cannot be answered is answered with a failure envelope \
                rather than left pending: its `className` is `org.apache.spark.SparkException` ... \
                One such ask is an ask whose answer would not fit the answering side's own frame \
                limit ...: it is failed with that class ..., and the connection stays open\""
                .into(),
            requirement: "an answer over a 128 KiB frame limit is a SparkException failure; the \
                next ask is still answered"
                .into(),
            body: run(answer_over_frame_limit),
            ..Case::default()
        });
        cs.push(Case {
            id: "spec/8/limits/idle-driver-client-between-polls".into(),
            level: Level::Must,
            targets: vec![Target::Master],
            timeout: Duration::from_secs(15),
            quote: "SPEC §8, \"The idle timeout applies ... to a `ui` or `driver-client` \
                connection whenever it has no ask awaiting an answer: a `driver-client` that polls \
                `RequestDriverStatus` less often than the idle timeout is closed (`Idle`) between \
                polls\", and §8.1 (`Idle`)"
                .into(),
            requirement: "a 1 s idle timeout closes a driver client after its RequestDriverStatus \
                is answered (Idle)"
                .into(),
            body: run(idle_driver_client_between_polls),
            ..Case::default()
        });
    }

    async fn answer_over_frame_limit(ctx: Ctx) -> Outcome {
        let s = OwnServer::start(
            &ctx,
            Settings {
                max_frame_bytes: SMALL_FRAME_LIMIT,
                ..Settings::default()
            },
            &["max_frame_bytes"],
        )
        .await?;
        let mut apps = Vec::new();
        for n in 0..2 {
            let (mut a, _) = s
                .open(&ctx, Role::AppClient, &format!("app-{n}"), None)
                .await?;
            let mut desc = app_desc(None, 256, None);
            desc.command.arguments = vec!["x".repeat(HALF_LIMIT_ARGUMENT)];
            let port = 40000 + (unique() % 20000) as i32;
            a.send(&Envelope::Send(D::RegisterApplication(
                RegisterApplication::new(
                    desc,
                    EndpointRef::at(Addr::new("127.0.0.1", port), "AppClient"),
                ),
            )))
            .await?;
            a.expect::<D, ()>(wait(&ctx), "RegisteredApplication", |e| {
                matches!(e, Envelope::Send(D::RegisteredApplication(_))).then_some(())
            })
            .await?;
            apps.push(a);
        }
        let (mut c, _) = s
            .open(&ctx, Role::DriverClient, "driver-client", None)
            .await?;
        c.send(&Envelope::Ask {
            id: 1,
            message: D::RequestMasterState(RequestMasterState::new()),
        })
        .await?;
        let want = format!(
            "a failure for RequestMasterState (ask 1), whose answer is over the frame limit of \
                {SMALL_FRAME_LIMIT} bytes: class org.apache.spark.SparkException, with a message"
        );
        match answer_or_close(&ctx, &mut c, 1, &want).await? {
            Answered::Failure(e) => check(
                e.class_name == "org.apache.spark.SparkException" && !e.message.is_empty(),
                &want,
                format!("a failure {}: {:?}", e.class_name, e.message),
            )?,
            Answered::Reply => {
                return Err(fail(
                    want,
                    "a reply (a frame over the limit the server was started with)",
                ))
            }
            Answered::Closed(r) => {
                return Err(fail(want, format!("the connection closed ({r:?})")))
            }
        }
        let id = format!("driver-20250101120000-{:04}", 9000 + unique() % 1000);
        c.send(&Envelope::Ask {
            id: 2,
            message: D::RequestDriverStatus(RequestDriverStatus::new(id)),
        })
        .await?;
        let next = "the answer to RequestDriverStatus (ask 2): the connection stayed open";
        match answer_or_close(&ctx, &mut c, 2, next).await? {
            Answered::Reply => Ok(()),
            Answered::Failure(e) => Err(fail(
                next,
                format!("a failure {}: {:?}", e.class_name, e.message),
            )),
            Answered::Closed(r) => Err(fail(next, format!("the connection closed ({r:?})"))),
        }
    }

    async fn idle_driver_client_between_polls(ctx: Ctx) -> Outcome {
        let s = OwnServer::start(
            &ctx,
            Settings {
                idle_timeout: SHORT,
                ..Settings::default()
            },
            &["idle_timeout"],
        )
        .await?;
        let (mut c, taken) = s
            .open(&ctx, Role::DriverClient, "driver-client", None)
            .await?;
        let id = format!("driver-20250101120000-{:04}", 9000 + unique() % 1000);
        c.send(&Envelope::Ask {
            id: 1,
            message: D::RequestDriverStatus(RequestDriverStatus::new(id)),
        })
        .await?;
        let want = "the answer to RequestDriverStatus (ask 1)";
        match answer_or_close(&ctx, &mut c, 1, want).await? {
            Answered::Reply => {}
            Answered::Failure(e) => {
                return Err(fail(
                    want,
                    format!("a failure {}: {:?}", e.class_name, e.message),
                ))
            }
            Answered::Closed(r) => {
                return Err(fail(want, format!("the connection closed ({r:?})")))
            }
        }
        closed_by_limit(&ctx, &mut c, taken, "Idle", after(&ctx, SHORT)).await
    }
}
