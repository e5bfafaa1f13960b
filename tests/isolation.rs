//! One slow or hostile peer never stalls the others nor grows memory without bound (issue 13):
//! per-connection write queues bounded in bytes, bounded inbound queues with TCP back-pressure,
//! bounded peer asks, the connection limit, the idle timeout and the frame read timeout, over
//! real TCP, at the connection layer and against the reference master.
//!
//! Every wait is on a condition with a generous deadline; nothing asserts a duration.

use common::cluster;
mod common;

use std::time::Duration;

use cluster::*;
use common::flood::{ask_state_frame, flood, raw_peer, MASTER_ARGS};
use common::processes::{announced_master, spawn_sparkwire};
use common::{listener, tcp_pair};
use sparkwire::connection::{
    Admission, Connection, ConnectionConfig, ConnectionError, Incoming, Limits, Security,
};
use sparkwire::messages::deploy::{MasterStateResponse, RequestReadyz, RequestWorkerState};
use sparkwire::messages::{Addr, DeployMessage};
use sparkwire::wire::handshake::{HandshakeError, Identity, RefusalReason, Role};
use sparkwire::wire::Reply;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Polls `cond` until it holds, failing after [`PATIENCE`].
async fn until(what: &str, mut cond: impl FnMut() -> bool) {
    eventually(what, &mut cond).await
}

/// Waits until the peer at the other end of `stream` closed it (reads the end of the stream, or
/// a reset), discarding what arrives.
async fn closed_by_peer(what: &str, stream: &mut TcpStream) {
    let mut buf = vec![0u8; 64 * 1024];
    let outcome = tokio::time::timeout(PATIENCE, async {
        loop {
            match stream.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            }
        }
    })
    .await;
    assert!(outcome.is_ok(), "timed out waiting for {what}");
}

/// A client of `client_role` with default settings and a master-side connection with `server`'s,
/// over loopback TCP.
async fn pair(
    l: &tokio::net::TcpListener,
    client_role: Role,
    server: ConnectionConfig<DeployMessage>,
) -> (Connection<DeployMessage>, Connection<DeployMessage>) {
    let (client, server) = tcp_pair(
        l,
        client_role,
        ConnectionConfig::default(),
        Role::Master,
        server,
    )
    .await;
    (client.expect("client"), server.expect("server"))
}

// ---- The connection layer ----

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_peer_that_does_not_read_is_closed_as_a_slow_consumer_and_posting_never_waits() {
    let l = listener().await;
    // The client never calls recv and its reader stops after a few messages: the server's queue
    // fills once the socket buffers are full.
    let (client, server) = pair(
        &l,
        Role::Ui,
        ConnectionConfig::default().with_max_outgoing_bytes(64 * 1024),
    )
    .await;
    let big = DeployMessage::from(RequestWorkerState::new());
    let mut posted = 0u64;
    let error = loop {
        match server.post(big.clone()) {
            Ok(()) => posted += 1,
            Err(e) => break e,
        }
        if posted % 1024 == 0 {
            // Let the writer run: the kernel buffers take what they can.
            tokio::task::yield_now().await;
        }
    };
    assert!(
        matches!(error, ConnectionError::SlowConsumer { limit, .. } if limit == 64 * 1024),
        "{error:?}"
    );
    assert!(error.closes_connection());
    assert_eq!(
        server.closed().await,
        error,
        "the close names the slow consumer"
    );
    assert!(matches!(
        server.post(big),
        Err(ConnectionError::SlowConsumer { .. })
    ));
    // Another connection of the same process is untouched.
    let (other_client, mut other_server) = pair(&l, Role::Ui, ConnectionConfig::default()).await;
    let answer = tokio::spawn(async move {
        if let Ok(Incoming::Ask { id, .. }) = other_server.recv().await {
            other_server
                .post_reply(id, Reply::Bool(true))
                .expect("reply");
        }
        other_server
    });
    let ready = other_client
        .ask_with_timeout(RequestReadyz::new().into(), PATIENCE)
        .await;
    assert_eq!(ready, Ok(Reply::Bool(true)));
    drop(answer.await.expect("joined"));
    drop(client);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_connection_stops_reading_while_its_owner_is_behind_and_loses_nothing() {
    const QUEUE: usize = 8;
    const MESSAGES: usize = 1000;
    let l = listener().await;
    let (client, mut server) = pair(
        &l,
        Role::Worker,
        ConnectionConfig::default().with_incoming_queue(QUEUE),
    )
    .await;
    let sender = client.handle();
    let sending = tokio::spawn(async move {
        for n in 0..MESSAGES {
            let m = sparkwire::messages::deploy::RegisterWorkerFailed::new(format!(
                "{n:06}{}",
                "x".repeat(64 * 1024)
            ));
            if sender.send(m.into()).await.is_err() {
                return n;
            }
        }
        MESSAGES
    });
    // Far more than the owner's queue has left the sender (the kernel holds them) ...
    until("the client to have written 40 frames", || {
        client.counters().sent.frames >= 40
    })
    .await;
    // ... and the server has read no more than its queue and the one frame in hand.
    let read = server.counters().received.frames;
    assert!(
        read <= (QUEUE + 1) as u64,
        "read {read} frames with an owner that took none"
    );
    // Then everything arrives, in order, once the owner takes it.
    for n in 0..MESSAGES {
        let got = tokio::time::timeout(PATIENCE, server.recv())
            .await
            .expect("in time")
            .expect("a message");
        match got {
            Incoming::Message(DeployMessage::RegisterWorkerFailed(m)) => {
                assert_eq!(m.message[..6], format!("{n:06}"));
            }
            other => panic!("unexpected {other:?}"),
        }
    }
    assert_eq!(sending.await.expect("joined"), MESSAGES);
}

/// The peer sends `before` messages, then answers the server's ask.
async fn ask_behind_messages(before: usize) -> Result<Reply<DeployMessage>, ConnectionError> {
    let l = listener().await;
    let (mut client, server) = pair(
        &l,
        Role::Worker,
        ConnectionConfig::default().with_incoming_queue(8),
    )
    .await;
    let peer = tokio::spawn(async move {
        if let Ok(Incoming::Ask { id, .. }) = client.recv().await {
            for _ in 0..before {
                let _ = client
                    .send(sparkwire::messages::deploy::RequestWorkerState::new().into())
                    .await;
            }
            let _ = client.reply(id, Reply::Bool(true)).await;
        }
        client
    });
    // The owner awaits its ask without calling recv: the reply is behind the messages.
    let outcome = server
        .ask_with_timeout(RequestReadyz::new().into(), PATIENCE)
        .await;
    drop(peer.await.expect("joined"));
    drop(server);
    outcome
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_owner_awaiting_an_ask_gets_its_reply_behind_unread_messages() {
    // 12 messages: 8 in the owner's queue, 4 kept aside while the reply is awaited.
    assert_eq!(ask_behind_messages(12).await, Ok(Reply::Bool(true)));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_peer_flooding_while_a_reply_is_awaited_is_closed_and_the_ask_fails() {
    let outcome = ask_behind_messages(200).await;
    assert!(
        matches!(outcome, Err(ConnectionError::InboundOverflow { limit: 16 })),
        "{outcome:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_peer_with_too_many_unanswered_asks_is_closed() {
    let l = listener().await;
    let (client, mut server) = pair(
        &l,
        Role::Ui,
        ConnectionConfig::default().with_max_peer_asks(4),
    )
    .await;
    for _ in 0..5 {
        let c = client.handle();
        tokio::spawn(async move {
            let _ = c
                .ask_with_timeout(RequestReadyz::new().into(), PATIENCE)
                .await;
        });
    }
    let mut taken = 0;
    let reason = loop {
        match tokio::time::timeout(PATIENCE, server.recv())
            .await
            .expect("in time")
        {
            Ok(Incoming::Ask { .. }) => taken += 1,
            Ok(other) => panic!("unexpected {other:?}"),
            Err(e) => break e,
        }
    };
    assert_eq!(taken, 4, "the four asks within the bound are delivered");
    assert_eq!(reason, ConnectionError::TooManyAsks { limit: 4 });
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_silent_peer_is_closed_after_the_idle_timeout_unless_disarmed() {
    const IDLE: Duration = Duration::from_secs(2);
    let l = listener().await;
    let config = || ConnectionConfig::default().with_idle_timeout(Some(IDLE));
    let (kept_client, kept) = pair(&l, Role::Ui, config()).await;
    // The owner disarms this one at once (as a master does once a peer registered).
    kept.set_idle_timeout(None);
    let (_client, mut server) = pair(&l, Role::Ui, config()).await;
    let reason = tokio::time::timeout(PATIENCE, server.recv())
        .await
        .expect("in time");
    assert_eq!(reason, Err(ConnectionError::Idle { after: IDLE }));
    // The disarmed one, silent as long, is open.
    assert_eq!(kept.close_reason(), None);
    drop(kept_client);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_listener_at_its_limit_refuses_with_too_many_connections_and_frees_slots() {
    let l = listener().await;
    let addr = l.local_addr().expect("addr");
    let admission = Admission::new(Limits {
        max_connections: 1,
        ..Limits::default()
    });
    let local = Identity::new(Role::Master, "master");
    let server = {
        let admission = admission.clone();
        tokio::spawn(async move {
            let mut held = Vec::new();
            loop {
                let (stream, _) = l.accept().await.expect("accept");
                let Some((stream, slot)) = admission.admit(stream, &local, &Security::default())
                else {
                    continue;
                };
                let config = admission.configure(ConnectionConfig::default(), slot, Role::Master);
                let conn: Connection<DeployMessage> =
                    Connection::accept(stream, Role::Master, "master", config)
                        .await
                        .expect("accepted");
                held.push(conn);
                // Drop the oldest after the second: its slot is free again.
                if held.len() == 2 {
                    held.remove(0);
                }
            }
        })
    };
    let connect = || async {
        let stream = TcpStream::connect(addr).await.expect("connect");
        Connection::<DeployMessage>::connect(stream, Role::Ui, "ui", ConnectionConfig::default())
            .await
    };
    let first = connect().await.expect("the first is accepted");
    let refused = connect().await.err().expect("the second is refused");
    assert!(
        matches!(
            &refused,
            ConnectionError::Handshake(HandshakeError::Refused {
                reason: RefusalReason::TooManyConnections,
                ..
            })
        ),
        "{refused:?}"
    );
    assert_eq!(admission.held(), 1);
    // The first closes: its slot is given back.
    first.close().await;
    until("the slot to be free", || admission.held() == 0).await;
    let third = connect().await.expect("accepted again");
    drop(third);
    server.abort();
}

// ---- The reference master ----

/// A fake worker `id` (advertising `port`) that registered with `m`.
async fn registered_worker(m: &Addr, id: &str, port: i32) -> FakeWorker {
    let w = FakeWorker::connect(m, id, Addr::new("127.0.0.1", port)).await;
    w.register(m, 1, 512).await;
    w.wait("RegisteredWorker", |l| {
        l.iter()
            .any(|m| matches!(m, DeployMessage::RegisteredWorker(_)))
    })
    .await;
    w
}

/// A master with these limits and no validator (the floods break its rules on purpose).
async fn limited_master(limits: Limits) -> MasterHandle {
    let obs = observer(WORKER_TIMEOUT);
    start_master(&obs, |c| {
        c.observer = None;
        c.limits = limits;
        c.core.worker_timeout = Duration::from_secs(120);
    })
    .await
}

use sparkwire::reference::master::MasterHandle;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_ui_flooding_asks_without_reading_is_cut_off_while_a_worker_registers() {
    let master = limited_master(Limits {
        max_outgoing_bytes: 256 * 1024,
        ..Limits::default()
    })
    .await;
    let m = addr_of(&master);
    let mut flooder = raw_peer(&m, Role::Ui, "flooder").await.expect("handshake");
    let flood = tokio::spawn(async move { flood(&mut flooder, None).await.0 });
    // Meanwhile a worker registers and a well-behaved UI is answered.
    let w = registered_worker(&m, "worker-1", 52001).await;
    let state: MasterStateResponse = master_state(&m).await;
    assert_eq!(state.workers.len(), 1);
    // The flooder is disconnected: its writes fail.
    let asks = tokio::time::timeout(PATIENCE, flood)
        .await
        .expect("the flooding ui is disconnected")
        .expect("joined");
    assert!(asks > 1, "the flooder sent {asks} asks");
    w.close().await;
    master.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_master_full_of_idle_peers_refuses_more_and_a_fresh_worker_registers_after_the_idle_timeout(
) {
    const MAX: usize = 16;
    let master = limited_master(Limits {
        max_connections: MAX,
        idle_timeout: Duration::from_secs(1),
        ..Limits::default()
    })
    .await;
    let m = addr_of(&master);
    // A registered worker: never cut off by the idle timeout, though it says nothing more.
    let registered = registered_worker(&m, "worker-old", 52002).await;
    let mut idle = Vec::new();
    let mut refused = 0;
    for n in 0..(MAX + 8) {
        match raw_peer(&m, Role::Ui, &format!("idle-{n}")).await {
            Ok(stream) => idle.push(stream),
            Err(HandshakeError::Refused {
                reason: RefusalReason::TooManyConnections,
                ..
            }) => refused += 1,
            Err(e) => panic!("unexpected handshake error {e:?}"),
        }
    }
    assert!(idle.len() < MAX, "{} idle peers held", idle.len());
    assert!(refused >= 8, "{refused} refused");
    // The idle peers are disconnected by the master.
    for stream in &mut idle {
        closed_by_peer("the idle timeout", stream).await;
    }
    // The registered worker is still connected, and a fresh one registers.
    assert_eq!(registered.conn.close_reason(), None);
    let fresh = registered_worker(&m, "worker-new", 52003).await;
    assert_eq!(registered.conn.close_reason(), None);
    fresh.close().await;
    registered.close().await;
    master.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_peer_trickling_a_frame_is_closed_by_the_frame_read_timeout() {
    let master = limited_master(Limits {
        frame_read_timeout: Duration::from_secs(1),
        ..Limits::default()
    })
    .await;
    let m = addr_of(&master);
    let stream = raw_peer(&m, Role::Ui, "slowloris")
        .await
        .expect("handshake");
    let (mut read, mut write) = stream.into_split();
    // A frame of 28 bytes, one byte at a time, 300 ms apart: 8.4 s in all.
    let bytes = ask_state_frame(1);
    let trickle = tokio::spawn(async move {
        for b in bytes {
            if write.write_all(&[b]).await.is_err() {
                return;
            }
            tokio::time::sleep(Duration::from_millis(300)).await;
        }
        // Keep the write side open: only the master may end this.
        std::future::pending::<()>().await;
    });
    let mut buf = [0u8; 1024];
    let got = tokio::time::timeout(PATIENCE, read.read(&mut buf))
        .await
        .expect("closed in time");
    assert!(
        matches!(got, Ok(0) | Err(_)),
        "the master answered a frame that took over its timeout: {got:?}"
    );
    // Others are served meanwhile.
    let state = master_state(&m).await;
    assert!(state.workers.is_empty());
    trickle.abort();
    master.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_master_binary_takes_the_limit_flags() {
    let (mut child, line) = spawn_sparkwire(
        &[
            &MASTER_ARGS[..],
            &[
                "--max-connections",
                "1",
                "--idle-timeout",
                "600",
                "--frame-read-timeout",
                "600",
                "--max-queued-bytes",
                "65536",
            ],
        ]
        .concat(),
        &[],
    );
    let m = announced_master(&line).1;
    let held = raw_peer(&m, Role::Ui, "first")
        .await
        .expect("the first is held");
    let refused = raw_peer(&m, Role::Ui, "second").await;
    assert!(
        matches!(
            refused,
            Err(HandshakeError::Refused {
                reason: RefusalReason::TooManyConnections,
                ..
            })
        ),
        "{refused:?}"
    );
    drop(held);
    let _ = child.kill();
    let _ = child.wait();
}
