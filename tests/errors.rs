//! Every failure, provoked over a real connection (in-memory pipes, and loopback TCP for some):
//! each is reported with its own typed error, closes only the connection it happened on (or
//! fails only the operation), and leaves a connection made before it working.

mod common;

use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use common::{
    bystander, connected, envelope_frame, frame, raw_client_and_server,
    raw_client_offering_and_server, raw_server_handshake, raw_server_handshake_taking,
    read_raw_frame, samples, send_frame_named, still_works, PIPE,
};
use sparkwire::connection::{
    Connection, ConnectionConfig, ConnectionError, Direction, Incoming, Inspector,
};
use sparkwire::messages::deploy::SendHeartbeat;
use sparkwire::messages::{CoarseMessage, DeployMessage, Family, Version};
use sparkwire::wire::handshake::{
    decode_answer, Answer, HandshakeError, RefusalReason, Role, CLOSE_REASON,
};
use sparkwire::wire::LimitSetting;
use sparkwire::wire::{decode_envelope, CloseReason, Envelope, Error, FrameError, Reply};
use tokio::io::{duplex, AsyncRead, AsyncWrite, AsyncWriteExt, DuplexStream, ReadBuf};
use tokio::net::TcpStream;

fn master_config() -> ConnectionConfig<DeployMessage> {
    ConnectionConfig::default()
}

/// A server connection and the raw stream of a hand-driven worker that completed the handshake.
async fn raw_worker(versions: &[Version]) -> (DuplexStream, Connection<DeployMessage>) {
    raw_client_and_server(versions, Role::Worker, Role::Master, master_config()).await
}

/// Sends raw bytes to a server connection and returns the error it closes with; the raw peer
/// then sees the stream end.
async fn close_reason_after(bytes: &[u8], versions: &[Version]) -> ConnectionError {
    let (mut raw, mut server) = raw_worker(versions).await;
    raw.write_all(bytes).await.expect("raw write");
    let reason = loop {
        match server.recv().await {
            Ok(_) => continue,
            Err(reason) => break reason,
        }
    };
    assert!(reason.closes_connection(), "{reason:?}");
    assert_eq!(server.close_reason(), Some(reason.clone()));
    assert_eq!(
        server.send(samples::heartbeat().into()).await,
        Err(reason.clone())
    );
    assert_eq!(
        read_raw_frame(&mut raw).await,
        None,
        "the server closed the stream"
    );
    reason
}

fn hello_body_with_magic(magic: &str) -> Vec<u8> {
    let mut body = Vec::new();
    rmp::encode::write_map_len(&mut body, 4).expect("vec write");
    for (key, value) in [("magic", magic), ("role", "worker"), ("id", "w")] {
        rmp::encode::write_str(&mut body, key).expect("vec write");
        rmp::encode::write_str(&mut body, value).expect("vec write");
    }
    rmp::encode::write_str(&mut body, "versions").expect("vec write");
    rmp::encode::write_array_len(&mut body, 1).expect("vec write");
    rmp::encode::write_uint(&mut body, 2).expect("vec write");
    body
}

#[tokio::test]
async fn a_hello_with_the_wrong_magic_is_refused_and_other_connections_go_on() {
    let (client, mut server) = bystander().await;
    let (mut raw, io) = duplex(PIPE);
    let accept = Connection::<DeployMessage>::accept(io, Role::Master, "m", master_config());
    let peer = async {
        raw.write_all(&frame(&hello_body_with_magic("sparkwirf")))
            .await
            .expect("raw write");
        let answer = read_raw_frame(&mut raw).await.expect("a refusal");
        let after = read_raw_frame(&mut raw).await;
        (decode_answer(&answer), after)
    };
    let (accepted, (answer, after)) = tokio::join!(accept, peer);
    assert!(matches!(
        accepted,
        Err(ConnectionError::Handshake(HandshakeError::BadMagic { found: Some(ref f) })) if f.contains("sparkwirf")
    ));
    assert!(matches!(answer, Ok(Answer::Refused(ref r)) if r.reason == RefusalReason::BadMagic));
    assert_eq!(after, None, "the server closes after refusing");
    still_works(&client, &mut server).await;
}

#[tokio::test]
async fn an_answer_with_the_wrong_magic_fails_the_client() {
    let (client, mut server) = bystander().await;
    let (mut raw, io) = duplex(PIPE);
    let connect =
        Connection::<DeployMessage>::connect(io, Role::Worker, "w", ConnectionConfig::default());
    let peer = async {
        let _hello = read_raw_frame(&mut raw).await.expect("a hello");
        raw.write_all(&frame(&hello_body_with_magic("SPARKWIRE")))
            .await
            .expect("raw write");
        raw
    };
    let (connected, _raw) = tokio::join!(connect, peer);
    assert!(matches!(
        connected,
        Err(ConnectionError::Handshake(HandshakeError::BadMagic { .. }))
    ));
    still_works(&client, &mut server).await;
}

#[tokio::test]
async fn peers_without_a_common_version_are_refused_on_both_sides() {
    let (client, mut server) = bystander().await;
    let (worker, master) = common::duplex_pair::<DeployMessage>(
        Role::Worker,
        ConnectionConfig::default().with_versions(&[Version::V1]),
        Role::Master,
        ConnectionConfig::default().with_versions(&[Version::V2]),
    )
    .await;
    let expected = HandshakeError::NoCommonVersion {
        offered: vec![1],
        supported: vec![2],
    };
    assert_eq!(
        worker.err(),
        Some(ConnectionError::Handshake(expected.clone()))
    );
    assert_eq!(master.err(), Some(ConnectionError::Handshake(expected)));
    still_works(&client, &mut server).await;
}

#[tokio::test]
async fn a_role_of_the_other_family_is_refused_by_the_server_and_locally() {
    let (client, mut server) = bystander().await;
    let (a, b) = duplex(PIPE);
    let (executor, master) = tokio::join!(
        Connection::<CoarseMessage>::connect(a, Role::Executor, "1", ConnectionConfig::default()),
        Connection::<DeployMessage>::accept(b, Role::Master, "m", master_config()),
    );
    assert!(matches!(
        executor,
        Err(ConnectionError::Handshake(HandshakeError::Refused {
            reason: RefusalReason::RoleNotAccepted,
            ..
        }))
    ));
    assert_eq!(
        master.err(),
        Some(ConnectionError::Handshake(
            HandshakeError::RoleNotAccepted {
                role: "executor".to_string(),
                family: Some("coarse"),
            }
        ))
    );
    let (a, _b) = duplex(PIPE);
    let wrong =
        Connection::<DeployMessage>::connect(a, Role::Executor, "1", ConnectionConfig::default())
            .await;
    assert_eq!(
        wrong.err(),
        Some(ConnectionError::WrongFamily {
            role: Role::Executor,
            family: "deploy"
        })
    );
    still_works(&client, &mut server).await;
}

#[tokio::test]
async fn a_client_closes_when_the_server_declares_a_role_of_another_family() {
    let (client, mut server) = bystander().await;
    let (io, mut raw) = duplex(PIPE);
    let connect =
        Connection::<DeployMessage>::connect(io, Role::Worker, "w", ConnectionConfig::default());
    let (worker, _hello) = tokio::join!(
        connect,
        raw_server_handshake(&mut raw, Version::V2, Role::Driver)
    );
    assert_eq!(
        worker.err(),
        Some(ConnectionError::WrongFamily {
            role: Role::Driver,
            family: "deploy"
        })
    );
    assert_eq!(
        read_raw_frame(&mut raw).await,
        None,
        "the client closed the stream"
    );
    still_works(&client, &mut server).await;
}

#[tokio::test]
async fn a_hello_over_64_kib_is_refused_from_its_header_and_a_client_will_not_send_one() {
    let (client, mut server) = bystander().await;
    let (mut raw, io) = duplex(PIPE);
    let accept = Connection::<DeployMessage>::accept(io, Role::Master, "m", master_config());
    let peer = async {
        raw.write_all(&(64 * 1024u32 + 1).to_be_bytes())
            .await
            .expect("raw write");
        read_raw_frame(&mut raw).await
    };
    let (accepted, answer) = tokio::join!(accept, peer);
    assert_eq!(
        accepted.err(),
        Some(ConnectionError::Handshake(HandshakeError::Frame(
            FrameError::DeclaredTooLarge {
                declared: 65_537,
                limit: 65_536,
                setting: LimitSetting::Handshake,
            }
        )))
    );
    let answer = answer.map(|body| decode_answer(&body));
    assert!(
        matches!(answer, Some(Ok(Answer::Refused(ref r))) if r.reason == RefusalReason::FrameTooLarge)
    );

    let (a, _b) = duplex(PIPE);
    let long_id = "x".repeat(70 * 1024);
    let refused =
        Connection::<DeployMessage>::connect(a, Role::Worker, long_id, ConnectionConfig::default())
            .await;
    assert!(matches!(
        refused,
        Err(ConnectionError::Handshake(HandshakeError::Frame(
            FrameError::EncodedTooLarge {
                setting: LimitSetting::Handshake,
                ..
            }
        )))
    ));
    still_works(&client, &mut server).await;
}

#[tokio::test(start_paused = true)]
async fn a_silent_client_fails_the_handshake_when_its_time_runs_out() {
    let (client, mut server) = bystander().await;
    let (_silent, io) = duplex(PIPE);
    let accepted =
        Connection::<DeployMessage>::accept(io, Role::Master, "m", master_config()).await;
    assert_eq!(
        accepted.err(),
        Some(ConnectionError::Handshake(HandshakeError::TimedOut {
            after: Duration::from_secs(30)
        }))
    );
    still_works(&client, &mut server).await;
}

#[tokio::test]
async fn a_client_gone_before_its_hello_is_a_peer_closed_handshake() {
    let (client, mut server) = bystander().await;
    let (gone, io) = duplex(PIPE);
    drop(gone);
    let accepted =
        Connection::<DeployMessage>::accept(io, Role::Master, "m", master_config()).await;
    assert_eq!(
        accepted.err(),
        Some(ConnectionError::Handshake(HandshakeError::PeerClosed))
    );
    still_works(&client, &mut server).await;
}

#[tokio::test]
async fn a_declared_4_gib_frame_closes_only_its_connection() {
    let (client, mut server) = bystander().await;
    let reason = close_reason_after(&[0xff, 0xff, 0xff, 0xff], &Version::ALL).await;
    assert_eq!(
        reason,
        ConnectionError::Inbound(FrameError::DeclaredTooLarge {
            declared: 4_294_967_295,
            limit: 134_217_728,
            setting: LimitSetting::MessageMaxSize,
        })
    );
    still_works(&client, &mut server).await;
}

#[tokio::test]
async fn a_stream_ending_inside_a_frame_is_a_truncated_frame() {
    let (client, mut server) = bystander().await;
    let (mut raw, mut victim) = raw_worker(&Version::ALL).await;
    let mut partial = 100u32.to_be_bytes().to_vec();
    partial.extend_from_slice(&[0x92; 10]);
    raw.write_all(&partial).await.expect("raw write");
    raw.shutdown().await.expect("raw shutdown");
    assert_eq!(
        victim.recv().await,
        Err(ConnectionError::Inbound(FrameError::Truncated {
            declared: Some(100),
            received: 10,
        }))
    );
    still_works(&client, &mut server).await;
}

#[tokio::test]
async fn a_frame_that_is_not_messagepack_is_invalid_messagepack() {
    let (client, mut server) = bystander().await;
    let reason = close_reason_after(&frame(&[0xc1]), &Version::ALL).await;
    assert!(
        matches!(
            reason,
            ConnectionError::Inbound(FrameError::Envelope(Error::InvalidMessagePack(_)))
        ),
        "{reason:?}"
    );
    still_works(&client, &mut server).await;
}

#[tokio::test]
async fn an_unknown_message_name_closes_the_connection_with_that_name() {
    let (client, mut server) = bystander().await;
    let reason = close_reason_after(&send_frame_named("RegisterWorkerV9"), &Version::ALL).await;
    assert_eq!(
        reason,
        ConnectionError::Inbound(FrameError::Envelope(Error::UnknownMessage {
            family: "deploy",
            name: "RegisterWorkerV9".to_string(),
        }))
    );
    still_works(&client, &mut server).await;
}

#[tokio::test]
async fn a_message_absent_from_the_negotiated_version_closes_the_connection() {
    let (client, mut server) = bystander().await;
    let reason = close_reason_after(&send_frame_named("DecommissionWorker"), &[Version::V1]).await;
    assert_eq!(
        reason,
        ConnectionError::Inbound(FrameError::Envelope(Error::NotInVersion {
            name: "DecommissionWorker",
            version: Version::V1,
            since: Version::V2,
        }))
    );
    still_works(&client, &mut server).await;
}

#[tokio::test]
async fn a_local_message_is_refused_inbound_and_outbound() {
    let (client, mut server) = bystander().await;
    let refused = client.send(SendHeartbeat::new().into()).await;
    assert_eq!(
        refused,
        Err(ConnectionError::Outbound(FrameError::Envelope(
            Error::LocalMessage {
                name: "SendHeartbeat"
            }
        )))
    );
    let reason = close_reason_after(&send_frame_named("SendHeartbeat"), &Version::ALL).await;
    assert_eq!(
        reason,
        ConnectionError::Inbound(FrameError::Envelope(Error::LocalMessage {
            name: "SendHeartbeat"
        }))
    );
    still_works(&client, &mut server).await;
}

#[tokio::test]
async fn a_reply_to_an_ask_never_made_is_a_protocol_error() {
    let (client, mut server) = bystander().await;
    let reply = Envelope::<DeployMessage>::Reply {
        id: 99,
        reply: Reply::Bool(true),
    };
    let reason = close_reason_after(&envelope_frame(&reply, Version::V2), &Version::ALL).await;
    assert_eq!(reason, ConnectionError::UnknownAsk { id: 99 });
    still_works(&client, &mut server).await;
}

#[tokio::test]
async fn a_second_reply_to_the_same_ask_is_a_protocol_error() {
    let (client, mut server) = bystander().await;
    let (io, mut raw) = duplex(PIPE);
    let connect =
        Connection::<DeployMessage>::connect(io, Role::Worker, "w", ConnectionConfig::default());
    let (worker, _hello) = tokio::join!(
        connect,
        raw_server_handshake(&mut raw, Version::V2, Role::Master)
    );
    let mut worker = worker.expect("connects to the raw master");
    let master = async {
        let body = read_raw_frame(&mut raw).await.expect("an ask");
        let ask = decode_envelope::<DeployMessage>(&body.into(), Version::V2);
        let Ok(Envelope::Ask { id, .. }) = ask else {
            panic!("expected an ask, got {ask:?}");
        };
        let reply = envelope_frame(
            &Envelope::<DeployMessage>::Reply {
                id,
                reply: Reply::Bool(true),
            },
            Version::V2,
        );
        raw.write_all(&reply).await.expect("raw write");
        raw.write_all(&reply).await.expect("raw write");
        id
    };
    let (answered, id) = tokio::join!(worker.ask(samples::executor_state_changed().into()), master);
    assert_eq!(answered, Ok(Reply::Bool(true)));
    assert_eq!(
        worker.recv().await,
        Err(ConnectionError::DuplicateReply { id })
    );
    still_works(&client, &mut server).await;
}

#[tokio::test]
async fn an_ask_reusing_the_id_of_an_unanswered_ask_is_a_protocol_error() {
    let (client, mut server) = bystander().await;
    let (mut raw, mut victim) = raw_worker(&Version::ALL).await;
    let ask = envelope_frame(
        &Envelope::Ask {
            id: 5,
            message: DeployMessage::from(samples::executor_state_changed()),
        },
        Version::V2,
    );
    raw.write_all(&ask).await.expect("raw write");
    raw.write_all(&ask).await.expect("raw write");
    assert!(matches!(
        victim.recv().await,
        Ok(Incoming::Ask { id: 5, .. })
    ));
    assert_eq!(
        victim.recv().await,
        Err(ConnectionError::DuplicateAsk { id: 5 })
    );
    still_works(&client, &mut server).await;
}

#[tokio::test(start_paused = true)]
async fn an_unanswered_ask_times_out_alone_and_its_late_reply_is_dropped() {
    let (client, mut server) = bystander().await;
    let (worker, mut master) = bystander().await;
    let changed = DeployMessage::from(samples::executor_state_changed());
    let (timed_out, received) = tokio::join!(worker.ask(changed.clone()), master.recv());
    let Ok(Incoming::Ask { id, .. }) = received else {
        panic!("expected the ask, got {received:?}");
    };
    assert_eq!(
        timed_out,
        Err(ConnectionError::AskTimedOut {
            id,
            name: "ExecutorStateChanged",
            after: Duration::from_secs(120),
        })
    );
    assert_eq!(worker.close_reason(), None);
    assert_eq!(master.reply(id, Reply::Bool(true)).await, Ok(()));
    still_works(&worker, &mut master).await;
    assert_eq!(worker.counters().late_replies, 1);
    let quick = worker
        .ask_with_timeout(changed, Duration::from_millis(10))
        .await;
    assert!(
        matches!(quick, Err(ConnectionError::AskTimedOut { after, .. }) if after == Duration::from_millis(10))
    );
    still_works(&client, &mut server).await;
}

#[tokio::test]
async fn a_peer_closing_fails_pending_asks_and_recv_with_peer_closed() {
    let (client, mut server) = bystander().await;
    let (worker, mut master) = bystander().await;
    let asking = worker.ask(samples::executor_state_changed().into());
    let closing = async {
        let got = master.recv().await;
        assert!(matches!(got, Ok(Incoming::Ask { .. })));
        drop(master);
    };
    let (asked, ()) = tokio::join!(asking, closing);
    assert_eq!(asked, Err(ConnectionError::PeerClosed));
    assert_eq!(worker.closed().await, ConnectionError::PeerClosed);
    still_works(&client, &mut server).await;
}

#[tokio::test]
async fn answering_an_ask_that_awaits_no_answer_fails_only_that_call() {
    let (mut client, mut server) = bystander().await;
    assert_eq!(
        server.reply(12345, Reply::Bool(true)).await,
        Err(ConnectionError::NoSuchAsk { id: 12345 })
    );
    let (reply, ()) = tokio::join!(
        client.ask(samples::executor_state_changed().into()),
        async {
            let Ok(Incoming::Ask { id, .. }) = server.recv().await else {
                panic!("expected an ask");
            };
            assert_eq!(server.reply(id, Reply::Bool(false)).await, Ok(()));
            let again = server
                .fail(id, sparkwire::messages::ErrorDescription::new("E", "again"))
                .await;
            assert_eq!(again, Err(ConnectionError::NoSuchAsk { id }));
        }
    );
    assert_eq!(reply, Ok(Reply::Bool(false)));
    still_works(&client, &mut server).await;
    // The asker's side stays usable too.
    let heartbeat = DeployMessage::from(samples::heartbeat());
    assert_eq!(server.send(heartbeat.clone()).await, Ok(()));
    assert_eq!(client.recv().await, Ok(Incoming::Message(heartbeat)));
}

/// Refuses inbound Heartbeat and outbound KillExecutor; records everything it saw.
struct Strict {
    seen: Arc<std::sync::Mutex<Vec<(Direction, &'static str)>>>,
}

impl Inspector<DeployMessage> for Strict {
    fn inbound(&mut self, env: &Envelope<DeployMessage>) -> Result<(), String> {
        let name = env.message().map(|m| m.name()).unwrap_or("other");
        if let Ok(mut seen) = self.seen.lock() {
            seen.push((Direction::Inbound, name));
        }
        if name == "Heartbeat" {
            return Err("Heartbeat before RegisteredWorker".to_string());
        }
        Ok(())
    }

    fn outbound(&mut self, env: &Envelope<DeployMessage>) -> Result<(), String> {
        let name = env.message().map(|m| m.name()).unwrap_or("other");
        if let Ok(mut seen) = self.seen.lock() {
            seen.push((Direction::Outbound, name));
        }
        if name == "KillExecutor" {
            return Err("no such executor".to_string());
        }
        Ok(())
    }
}

#[tokio::test]
async fn the_inspector_refusing_inbound_closes_and_refusing_outbound_only_fails_the_send() {
    let (client, mut server) = bystander().await;
    let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
    let strict = ConnectionConfig::default().with_inspector(Strict { seen: seen.clone() });
    let (worker, mut master) = connected::<DeployMessage>(
        Role::Worker,
        ConnectionConfig::default(),
        Role::Master,
        strict,
    )
    .await;
    let kill = sparkwire::messages::deploy::KillExecutor::new(
        "spark://127.0.0.1:7077".to_string(),
        samples::APP_ID.to_string(),
        0,
    );
    assert_eq!(
        master.send(kill.into()).await,
        Err(ConnectionError::Rejected {
            direction: Direction::Outbound,
            name: "KillExecutor",
            reason: "no such executor".to_string(),
        })
    );
    assert_eq!(master.close_reason(), None);
    assert_eq!(worker.send(samples::register_worker().into()).await, Ok(()));
    assert!(matches!(
        master.recv().await,
        Ok(Incoming::Message(DeployMessage::RegisterWorker(_)))
    ));
    assert_eq!(worker.send(samples::heartbeat().into()).await, Ok(()));
    let rejected = ConnectionError::Rejected {
        direction: Direction::Inbound,
        name: "Heartbeat",
        reason: "Heartbeat before RegisteredWorker".to_string(),
    };
    assert_eq!(master.recv().await, Err(rejected.clone()));
    assert!(rejected.closes_connection());
    // Both sides offered closeReason: the worker reads why (SPEC §8.1).
    assert_eq!(
        worker.closed().await,
        ConnectionError::ClosedByPeer(CloseReason::new(
            "RuleViolation",
            "inbound Heartbeat rejected by the inspector: Heartbeat before RegisteredWorker"
        ))
    );
    let seen = seen.lock().map(|s| s.clone()).unwrap_or_default();
    assert_eq!(
        seen,
        vec![
            (Direction::Outbound, "KillExecutor"),
            (Direction::Inbound, "RegisterWorker"),
            (Direction::Inbound, "Heartbeat"),
        ]
    );
    still_works(&client, &mut server).await;
}

/// A stream whose reads or writes start failing when told to.
struct FaultyIo {
    inner: DuplexStream,
    fail_writes: Arc<AtomicBool>,
    fail_reads: Arc<AtomicBool>,
}

impl AsyncRead for FaultyIo {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let polled = Pin::new(&mut self.inner).poll_read(cx, buf);
        if polled.is_ready() && self.fail_reads.load(Ordering::SeqCst) {
            return Poll::Ready(Err(std::io::Error::new(
                std::io::ErrorKind::ConnectionAborted,
                "injected read failure",
            )));
        }
        polled
    }
}

impl AsyncWrite for FaultyIo {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        if self.fail_writes.load(Ordering::SeqCst) {
            return Poll::Ready(Err(std::io::Error::new(
                std::io::ErrorKind::ConnectionReset,
                "injected write failure",
            )));
        }
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

#[tokio::test]
async fn a_failing_write_closes_the_connection_with_the_io_error() {
    let (client, mut server) = bystander().await;
    let (a, b) = duplex(PIPE);
    let fail_writes = Arc::new(AtomicBool::new(false));
    let faulty = FaultyIo {
        inner: a,
        fail_writes: fail_writes.clone(),
        fail_reads: Arc::new(AtomicBool::new(false)),
    };
    let (worker, master) = tokio::join!(
        Connection::<DeployMessage>::connect(
            faulty,
            Role::Worker,
            "w",
            ConnectionConfig::default()
        ),
        Connection::<DeployMessage>::accept(b, Role::Master, "m", master_config()),
    );
    let (worker, _master) = (worker.expect("worker"), master.expect("master"));
    fail_writes.store(true, Ordering::SeqCst);
    assert_eq!(worker.send(samples::heartbeat().into()).await, Ok(()));
    let reason = worker.closed().await;
    assert!(
        matches!(
            reason,
            ConnectionError::Io {
                kind: std::io::ErrorKind::ConnectionReset,
                ..
            }
        ),
        "{reason:?}"
    );
    still_works(&client, &mut server).await;
}

#[tokio::test]
async fn a_failing_read_closes_the_connection_with_an_inbound_io_error() {
    let (client, mut server) = bystander().await;
    let (a, b) = duplex(PIPE);
    let fail_reads = Arc::new(AtomicBool::new(false));
    let faulty = FaultyIo {
        inner: a,
        fail_writes: Arc::new(AtomicBool::new(false)),
        fail_reads: fail_reads.clone(),
    };
    let (worker, master) = tokio::join!(
        Connection::<DeployMessage>::connect(
            faulty,
            Role::Worker,
            "w",
            ConnectionConfig::default()
        ),
        Connection::<DeployMessage>::accept(b, Role::Master, "m", master_config()),
    );
    let (mut worker, master) = (worker.expect("worker"), master.expect("master"));
    fail_reads.store(true, Ordering::SeqCst);
    assert_eq!(
        master.send(samples::registered_worker().into()).await,
        Ok(())
    );
    let reason = worker.recv().await;
    assert!(
        matches!(
            reason,
            Err(ConnectionError::Inbound(FrameError::Io {
                kind: std::io::ErrorKind::ConnectionAborted,
                ..
            }))
        ),
        "{reason:?}"
    );
    still_works(&client, &mut server).await;
}

#[tokio::test]
async fn a_hello_with_the_magic_but_no_role_is_refused_as_malformed() {
    let (client, mut server) = bystander().await;
    let (mut raw, io) = duplex(PIPE);
    let mut hello = Vec::new();
    rmp::encode::write_map_len(&mut hello, 3).expect("vec write");
    rmp::encode::write_str(&mut hello, "magic").expect("vec write");
    rmp::encode::write_str(&mut hello, "sparkwire").expect("vec write");
    rmp::encode::write_str(&mut hello, "versions").expect("vec write");
    rmp::encode::write_array_len(&mut hello, 1).expect("vec write");
    rmp::encode::write_uint(&mut hello, 2).expect("vec write");
    rmp::encode::write_str(&mut hello, "id").expect("vec write");
    rmp::encode::write_str(&mut hello, "w").expect("vec write");
    let accept = Connection::<DeployMessage>::accept(io, Role::Master, "m", master_config());
    let peer = async {
        raw.write_all(&frame(&hello)).await.expect("raw write");
        read_raw_frame(&mut raw)
            .await
            .map(|body| decode_answer(&body))
    };
    let (accepted, answer) = tokio::join!(accept, peer);
    assert!(matches!(
        accepted,
        Err(ConnectionError::Handshake(HandshakeError::Malformed(ref why))) if why.contains("role")
    ));
    assert!(
        matches!(answer, Some(Ok(Answer::Refused(ref r))) if r.reason == RefusalReason::MalformedHello)
    );
    still_works(&client, &mut server).await;
}

#[tokio::test(start_paused = true)]
async fn a_cancelled_ask_leaves_no_waiter_and_its_reply_counts_as_late() {
    let (worker, mut master) = bystander().await;
    let asked = tokio::time::timeout(
        Duration::from_millis(1),
        worker.ask_with_timeout(
            samples::executor_state_changed().into(),
            Duration::from_secs(3600),
        ),
    );
    let (cancelled, received) = tokio::join!(asked, master.recv());
    assert!(cancelled.is_err(), "the outer timeout cancelled the ask");
    let Ok(Incoming::Ask { id, .. }) = received else {
        panic!("expected the ask, got {received:?}");
    };
    assert_eq!(master.reply(id, Reply::Bool(true)).await, Ok(()));
    still_works(&worker, &mut master).await;
    assert_eq!(worker.counters().late_replies, 1);
}

#[tokio::test]
async fn dropping_a_connection_fails_its_handles_with_closed() {
    let (client, mut server) = bystander().await;
    let (worker, _master) = bystander().await;
    let handle = worker.handle();
    drop(worker);
    assert_eq!(
        handle.send(samples::heartbeat().into()).await,
        Err(ConnectionError::Closed)
    );
    assert_eq!(handle.closed().await, ConnectionError::Closed);
    still_works(&client, &mut server).await;
}

/// Recognises the error a case must close its connection with.
type IsExpected = fn(&ConnectionError) -> bool;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn over_tcp_bad_frames_close_only_their_own_connection() {
    let listener = common::listener().await;
    let (client, server) = common::tcp_pair::<DeployMessage>(
        &listener,
        Role::Worker,
        ConnectionConfig::default(),
        Role::Master,
        master_config(),
    )
    .await;
    let (client, mut server) = (client.expect("client"), server.expect("server"));
    let cases: Vec<(Vec<u8>, IsExpected)> = vec![
        (vec![0xff, 0xff, 0xff, 0xff], |e| {
            matches!(
                e,
                ConnectionError::Inbound(FrameError::DeclaredTooLarge {
                    declared: 4_294_967_295,
                    ..
                })
            )
        }),
        (send_frame_named("NoSuchMessage"), |e| {
            matches!(
                e,
                ConnectionError::Inbound(FrameError::Envelope(Error::UnknownMessage { .. }))
            )
        }),
        (100u32.to_be_bytes().to_vec(), |e| {
            matches!(
                e,
                ConnectionError::Inbound(FrameError::Truncated {
                    declared: Some(100),
                    received: 0
                })
            )
        }),
    ];
    for (bytes, expected) in cases {
        let addr = listener.local_addr().expect("address");
        let raw_side = async {
            let mut raw = TcpStream::connect(addr).await.expect("connect");
            common::raw_client_handshake(&mut raw, &Version::ALL, Role::Worker).await;
            raw.write_all(&bytes).await.expect("raw write");
            raw.shutdown().await.expect("raw shutdown");
            raw
        };
        let server_side = async {
            let (stream, _) = listener.accept().await.expect("accept");
            let mut victim =
                Connection::<DeployMessage>::accept(stream, Role::Master, "m", master_config())
                    .await
                    .expect("accepts the raw worker");
            victim.recv().await
        };
        let (_raw, got) = tokio::join!(raw_side, server_side);
        let reason = got.err();
        assert!(reason.as_ref().is_some_and(expected), "{reason:?}");
        still_works(&client, &mut server).await;
    }
}

// ---- the close reason (SPEC §8.1): what the peer reads before the stream ends ----

/// A raw worker whose hello offered `closeReason`, and the master's side of its connection.
async fn raw_worker_agreeing(
    config: ConnectionConfig<DeployMessage>,
) -> (DuplexStream, Connection<DeployMessage>) {
    raw_client_offering_and_server(
        &Version::ALL,
        Role::Worker,
        Role::Master,
        config,
        &[CLOSE_REASON],
    )
    .await
}

/// The close envelope the raw peer reads as the server's last frame; the stream ends after it.
async fn told(raw: &mut DuplexStream) -> CloseReason {
    let body = read_raw_frame(raw)
        .await
        .expect("a close envelope before the end");
    let env = decode_envelope::<DeployMessage>(&bytes::Bytes::from(body), Version::V2)
        .expect("a decodable close envelope");
    let Envelope::Close(reason) = env else {
        panic!("a close envelope, not {env:?}");
    };
    assert_eq!(
        read_raw_frame(raw).await,
        None,
        "nothing after the close envelope"
    );
    reason
}

#[tokio::test]
async fn a_field_of_the_wrong_type_is_told_with_its_kind_path_and_offset() {
    let (client, mut server) = bystander().await;
    let (mut raw, mut victim) = raw_worker_agreeing(master_config()).await;
    // [0, {"Heartbeat": {"workerId": 5}}]: workerId is a string.
    let mut body = Vec::new();
    rmp::encode::write_array_len(&mut body, 2).expect("vec write");
    rmp::encode::write_uint(&mut body, 0).expect("vec write");
    rmp::encode::write_map_len(&mut body, 1).expect("vec write");
    rmp::encode::write_str(&mut body, "Heartbeat").expect("vec write");
    rmp::encode::write_map_len(&mut body, 1).expect("vec write");
    rmp::encode::write_str(&mut body, "workerId").expect("vec write");
    let value_at = body.len() as u64;
    rmp::encode::write_uint(&mut body, 5).expect("vec write");
    raw.write_all(&frame(&body)).await.expect("raw write");
    let error = victim
        .recv()
        .await
        .expect_err("the frame closes the connection");
    let reason = told(&mut raw).await;
    assert_eq!(reason.kind, "InvalidFields");
    assert_eq!(reason.path.as_deref(), Some("workerId"));
    // The fault lies at the first byte of the value it could not take (SPEC §8.2).
    assert_eq!(reason.offset, Some(value_at));
    assert!(reason.message.contains("Heartbeat"), "{reason}");
    assert_eq!(Some(reason), error.reason_for_peer());
    still_works(&client, &mut server).await;
}

#[tokio::test]
async fn an_unknown_message_is_told_as_unknown_message() {
    let (mut raw, mut victim) = raw_worker_agreeing(master_config()).await;
    raw.write_all(&send_frame_named("RegisterWorkerV9"))
        .await
        .expect("raw write");
    assert!(victim.recv().await.is_err());
    let reason = told(&mut raw).await;
    assert_eq!(reason.kind, "UnknownMessage");
    assert!(reason.message.contains("RegisterWorkerV9"), "{reason}");
    assert_eq!((reason.path, reason.offset), (None, None));
}

#[tokio::test]
async fn an_oversized_frame_is_told_as_frame_too_large() {
    let (mut raw, mut victim) = raw_worker_agreeing(master_config()).await;
    raw.write_all(&[0xff, 0xff, 0xff, 0xff])
        .await
        .expect("raw write");
    assert!(victim.recv().await.is_err());
    assert_eq!(told(&mut raw).await.kind, "FrameTooLarge");
}

#[tokio::test]
async fn a_reply_to_an_ask_never_made_is_told_as_unknown_ask() {
    let (mut raw, mut victim) = raw_worker_agreeing(master_config()).await;
    let reply: Envelope<DeployMessage> = Envelope::Reply {
        id: 77,
        reply: Reply::Bool(true),
    };
    raw.write_all(&envelope_frame(&reply, Version::V2))
        .await
        .expect("raw write");
    assert_eq!(
        victim.recv().await,
        Err(ConnectionError::UnknownAsk { id: 77 })
    );
    assert_eq!(told(&mut raw).await.kind, "UnknownAsk");
}

#[tokio::test]
async fn an_idle_peer_is_told_idle() {
    let config = master_config().with_idle_timeout(Some(Duration::from_millis(100)));
    let (mut raw, victim) = raw_worker_agreeing(config).await;
    let reason = told(&mut raw).await;
    assert_eq!(reason.kind, "Idle");
    assert!(matches!(
        victim.close_reason(),
        Some(ConnectionError::Idle { .. })
    ));
}

#[tokio::test]
async fn a_peer_that_did_not_offer_close_reason_is_told_nothing() {
    let (mut raw, mut victim) = raw_client_offering_and_server(
        &Version::ALL,
        Role::Worker,
        Role::Master,
        master_config(),
        &[],
    )
    .await;
    assert!(!victim.tells_close_reason());
    raw.write_all(&send_frame_named("RegisterWorkerV9"))
        .await
        .expect("raw write");
    assert!(victim.recv().await.is_err());
    assert_eq!(
        read_raw_frame(&mut raw).await,
        None,
        "the stream ends, no frame"
    );
}

#[tokio::test]
async fn a_close_envelope_is_the_typed_error_on_the_other_side_and_fails_its_asks() {
    let (client, mut server) = connected::<DeployMessage>(
        Role::Worker,
        ConnectionConfig::default(),
        Role::Master,
        master_config(),
    )
    .await;
    assert!(client.tells_close_reason() && server.tells_close_reason());
    let reason = CloseReason::new(
        "NotOnRoute",
        "a worker may not send RequestMasterState to a master",
    );
    let pending = client
        .post_ask(samples::heartbeat().into())
        .expect("queued");
    // The ask arrives; the server refuses the connection instead of answering it.
    let Ok(Incoming::Ask { .. }) = server.recv().await else {
        panic!("the ask");
    };
    server.handle().close_soon_because(reason.clone());
    assert_eq!(
        pending.await,
        Err(ConnectionError::ClosedByPeer(reason.clone()))
    );
    let mut client = client;
    assert_eq!(
        client.recv().await,
        Err(ConnectionError::ClosedByPeer(reason.clone()))
    );
    assert_eq!(
        client.close_reason(),
        Some(ConnectionError::ClosedByPeer(reason.clone()))
    );
    assert_eq!(
        ConnectionError::ClosedByPeer(reason).to_string(),
        "the peer closed the connection: NotOnRoute: a worker may not send RequestMasterState to a master"
    );
}

#[tokio::test]
async fn a_client_tells_the_server_why_it_closes_too() {
    let (io, mut raw) = duplex(PIPE);
    let connect =
        Connection::<DeployMessage>::connect(io, Role::Worker, "w", ConnectionConfig::default());
    let (worker, hello) = tokio::join!(
        connect,
        raw_server_handshake_taking(&mut raw, Version::V2, Role::Master, &[CLOSE_REASON])
    );
    assert!(
        hello.offers(CLOSE_REASON),
        "a Connection offers closeReason"
    );
    let mut worker = worker.expect("connects to the raw master");
    assert!(worker.tells_close_reason());
    // The master sends a message of the other family.
    raw.write_all(&send_frame_named("LaunchTask"))
        .await
        .expect("raw write");
    assert!(worker.recv().await.is_err());
    let reason = told(&mut raw).await;
    assert_eq!(reason.kind, "UnknownMessage");
}
