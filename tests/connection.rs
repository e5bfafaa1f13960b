//! Connections working as they should: the handshake's outcome, sends and asks of both families
//! over in-memory pipes and loopback TCP, version rules, counters, frame limits, task sizes.

mod common;

use common::{connected, samples, tcp_pair};
use sparkwire::connection::{Connection, ConnectionConfig, ConnectionError, Incoming, Traffic};
use sparkwire::messages::{CoarseMessage, DeployMessage, ErrorDescription, Family, Version};
use sparkwire::wire::handshake::Role;
use sparkwire::wire::LimitSetting;
use sparkwire::wire::{Error, FrameError, Reply};

const MIB: usize = 1024 * 1024;

fn config<F>(versions: &[Version]) -> ConnectionConfig<F> {
    ConnectionConfig::default().with_versions(versions)
}

/// Asks `message` on `asker` and answers it with `reply` on `answerer`; returns what the asker got
/// and checks what the answerer received.
async fn ask_answered<F: Family + Send + 'static>(
    asker: &Connection<F>,
    answerer: &mut Connection<F>,
    message: F,
    reply: Reply<F>,
) -> Result<Reply<F>, ConnectionError> {
    let expected = message.as_version(answerer.version());
    let answer = async {
        match answerer.recv().await? {
            Incoming::Ask { id, message } => {
                assert_eq!(message, expected);
                answerer.reply(id, reply).await
            }
            other => panic!("expected an ask, got {other:?}"),
        }
    };
    let (got, answered) = tokio::join!(asker.ask(message), answer);
    answered?;
    got
}

async fn expect_message<F: Family>(conn: &mut Connection<F>, sent: F) {
    let expected = sent.as_version(conn.version());
    assert_eq!(conn.recv().await, Ok(Incoming::Message(expected)));
}

/// Worker ↔ Master traffic: sends both ways, an ask answered by a Boolean, and LaunchExecutor,
/// whose layout differs between versions.
async fn worker_and_master_talk(
    worker: &mut Connection<DeployMessage>,
    master: &mut Connection<DeployMessage>,
) {
    let register = DeployMessage::from(samples::register_worker());
    assert_eq!(worker.send(register.clone()).await, Ok(()));
    expect_message(master, register).await;

    let registered = DeployMessage::from(samples::registered_worker());
    assert_eq!(master.send(registered.clone()).await, Ok(()));
    expect_message(worker, registered).await;

    let changed = DeployMessage::from(samples::executor_state_changed());
    let reply = ask_answered(worker, master, changed, Reply::Bool(true)).await;
    assert_eq!(reply, Ok(Reply::Bool(true)));

    let launch = DeployMessage::from(samples::launch_executor());
    assert_eq!(master.send(launch.clone()).await, Ok(()));
    expect_message(worker, launch).await;
}

/// DriverClient → Master: an ask answered by a message.
async fn driver_client_submits(
    client: &mut Connection<DeployMessage>,
    master: &mut Connection<DeployMessage>,
) {
    let response = DeployMessage::from(samples::submit_driver_response());
    let reply = ask_answered(
        client,
        master,
        samples::request_submit_driver().into(),
        Reply::Message(response.clone()),
    )
    .await;
    assert_eq!(reply, Ok(Reply::Message(response)));
}

/// Executor ↔ Driver traffic: the bootstrap ask, registration, tasks and status updates.
async fn executor_and_driver_talk(
    executor: &mut Connection<CoarseMessage>,
    driver: &mut Connection<CoarseMessage>,
) {
    let config = CoarseMessage::from(samples::spark_app_config());
    let reply = ask_answered(
        executor,
        driver,
        samples::retrieve_spark_app_config().into(),
        Reply::Message(config.clone()),
    )
    .await;
    assert_eq!(
        reply,
        Ok(Reply::Message(config.as_version(executor.version())))
    );

    let reply = ask_answered(
        executor,
        driver,
        samples::register_executor().into(),
        Reply::Bool(true),
    )
    .await;
    assert_eq!(reply, Ok(Reply::Bool(true)));

    let launched = CoarseMessage::from(samples::launched_executor());
    assert_eq!(executor.send(launched.clone()).await, Ok(()));
    expect_message(driver, launched).await;

    let task = CoarseMessage::from(samples::launch_task(1024));
    assert_eq!(driver.send(task.clone()).await, Ok(()));
    expect_message(executor, task).await;

    let status = CoarseMessage::from(samples::status_update(2048));
    assert_eq!(executor.send(status.clone()).await, Ok(()));
    expect_message(driver, status).await;

    if executor.version() >= Version::V2 {
        let reply = ask_answered(
            executor,
            driver,
            samples::executor_decommissioning().into(),
            Reply::Bool(true),
        )
        .await;
        assert_eq!(reply, Ok(Reply::Bool(true)));
    }
}

#[tokio::test]
async fn both_sides_speaking_v2_settle_on_v2_and_learn_each_others_role() {
    let (worker, master) = connected::<DeployMessage>(
        Role::Worker,
        config(&Version::ALL),
        Role::Master,
        config(&Version::ALL),
    )
    .await;
    assert_eq!(worker.version(), Version::V2);
    assert_eq!(master.version(), Version::V2);
    assert_eq!(worker.negotiated().peer_role, Role::Master);
    assert_eq!(master.negotiated().peer_role, Role::Worker);
    assert_eq!(master.negotiated().peer_id, "client-id");
    assert_eq!(worker.negotiated().peer_versions, vec![1, 2]);
}

#[tokio::test]
async fn a_side_speaking_only_v1_brings_the_connection_down_to_v1() {
    let (worker, master) = connected::<DeployMessage>(
        Role::Worker,
        config(&[Version::V1]),
        Role::Master,
        config(&Version::ALL),
    )
    .await;
    assert_eq!(
        (worker.version(), master.version()),
        (Version::V1, Version::V1)
    );
    let (executor, driver) = connected::<CoarseMessage>(
        Role::Executor,
        config(&Version::ALL),
        Role::Driver,
        config(&[Version::V1]),
    )
    .await;
    assert_eq!(
        (executor.version(), driver.version()),
        (Version::V1, Version::V1)
    );
}

#[tokio::test]
async fn deploy_sends_and_asks_cross_an_in_memory_pipe_at_v2_and_v1() {
    for versions in [&Version::ALL[..], &[Version::V1][..]] {
        let (mut worker, mut master) = connected::<DeployMessage>(
            Role::Worker,
            config(versions),
            Role::Master,
            config(&Version::ALL),
        )
        .await;
        worker_and_master_talk(&mut worker, &mut master).await;
        let (mut client, mut master) = connected::<DeployMessage>(
            Role::DriverClient,
            config(versions),
            Role::Master,
            config(&Version::ALL),
        )
        .await;
        driver_client_submits(&mut client, &mut master).await;
    }
}

#[tokio::test]
async fn coarse_sends_and_asks_cross_an_in_memory_pipe_at_v2_and_v1() {
    for versions in [&Version::ALL[..], &[Version::V1][..]] {
        let (mut executor, mut driver) = connected::<CoarseMessage>(
            Role::Executor,
            config(versions),
            Role::Driver,
            config(&Version::ALL),
        )
        .await;
        executor_and_driver_talk(&mut executor, &mut driver).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn both_families_cross_loopback_tcp_at_the_highest_common_version() {
    let listener = common::listener().await;
    for (versions, expected) in [
        (&Version::ALL[..], Version::V2),
        (&[Version::V1][..], Version::V1),
    ] {
        let (worker, master) = tcp_pair::<DeployMessage>(
            &listener,
            Role::Worker,
            config(versions),
            Role::Master,
            config(&Version::ALL),
        )
        .await;
        let (mut worker, mut master) = (worker.expect("worker"), master.expect("master"));
        assert_eq!((worker.version(), master.version()), (expected, expected));
        worker_and_master_talk(&mut worker, &mut master).await;

        let (executor, driver) = tcp_pair::<CoarseMessage>(
            &listener,
            Role::Executor,
            config(&Version::ALL),
            Role::Driver,
            config(versions),
        )
        .await;
        let (mut executor, mut driver) = (executor.expect("executor"), driver.expect("driver"));
        assert_eq!(executor.version(), expected);
        executor_and_driver_talk(&mut executor, &mut driver).await;
    }
}

#[tokio::test]
async fn a_v2_side_refuses_to_send_v2_only_messages_to_a_v1_peer_and_stays_connected() {
    let (mut worker, mut master) = connected::<DeployMessage>(
        Role::Worker,
        config(&[Version::V1]),
        Role::Master,
        config(&Version::ALL),
    )
    .await;
    let refused = master.send(samples::decommission_worker().into()).await;
    assert_eq!(
        refused,
        Err(ConnectionError::Outbound(FrameError::Envelope(
            Error::NotInVersion {
                name: "DecommissionWorker",
                version: Version::V1,
                since: Version::V2,
            }
        )))
    );
    let refused = worker.send(samples::worker_decommissioning().into()).await;
    assert!(matches!(
        refused,
        Err(ConnectionError::Outbound(FrameError::Envelope(
            Error::NotInVersion {
                name: "WorkerDecommissioning",
                ..
            }
        )))
    ));
    assert!(refused.as_ref().is_err_and(|e| !e.closes_connection()));
    assert_eq!(worker.close_reason(), None);
    worker_and_master_talk(&mut worker, &mut master).await;
    assert_eq!(
        master
            .counters()
            .received_by_name
            .get("WorkerDecommissioning"),
        None
    );

    let (executor, _driver) = connected::<CoarseMessage>(
        Role::Executor,
        config(&Version::ALL),
        Role::Driver,
        config(&[Version::V1]),
    )
    .await;
    let refused = executor
        .ask(samples::executor_decommissioning().into())
        .await;
    assert!(matches!(
        refused,
        Err(ConnectionError::Outbound(FrameError::Envelope(
            Error::NotInVersion {
                name: "ExecutorDecommissioning",
                ..
            }
        )))
    ));
}

#[tokio::test]
async fn counters_tell_frames_and_bytes_by_message_name_on_both_sides() {
    let (mut worker, mut master) = connected::<DeployMessage>(
        Role::Worker,
        config(&Version::ALL),
        Role::Master,
        config(&Version::ALL),
    )
    .await;
    worker_and_master_talk(&mut worker, &mut master).await;
    let sent = worker.counters();
    let received = master.counters();
    for name in ["RegisterWorker", "ExecutorStateChanged", "handshake"] {
        let out = sent.sent_by_name.get(name).copied().unwrap_or_default();
        assert_eq!(out.frames, 1, "{name}");
        assert!(out.bytes > 4, "{name}");
        assert_eq!(
            received.received_by_name.get(name).copied(),
            Some(out),
            "{name}"
        );
    }
    assert_eq!(
        received
            .sent_by_name
            .get("reply")
            .copied()
            .map(|t| t.frames),
        Some(1)
    );
    let total: Traffic = sent
        .sent_by_name
        .values()
        .fold(Traffic::default(), |acc, t| Traffic {
            frames: acc.frames + t.frames,
            bytes: acc.bytes + t.bytes,
        });
    assert_eq!(total, sent.sent);
    assert_eq!(sent.sent.frames, 3);
    assert_eq!(sent.received, received.sent);
}

#[tokio::test]
async fn a_failed_ask_returns_the_peers_error_description_and_the_connection_goes_on() {
    let (mut executor, mut driver) = connected::<CoarseMessage>(
        Role::Executor,
        config(&Version::ALL),
        Role::Driver,
        config(&Version::ALL),
    )
    .await;
    let refusal = ErrorDescription::new(
        "org.apache.spark.SparkException",
        "Duplicate executor ID: 0",
    );
    let answer = async {
        match driver.recv().await {
            Ok(Incoming::Ask { id, .. }) => driver.fail(id, refusal.clone()).await,
            other => panic!("expected an ask, got {other:?}"),
        }
    };
    let (got, failed) = tokio::join!(executor.ask(samples::register_executor().into()), answer);
    assert_eq!(failed, Ok(()));
    assert!(matches!(got, Err(ConnectionError::Remote { error, .. }) if error == refusal));
    executor_and_driver_talk(&mut executor, &mut driver).await;
}

#[tokio::test]
async fn a_129_mib_launch_task_is_refused_by_default_and_crosses_when_both_limits_are_raised() {
    let big = CoarseMessage::from(samples::launch_task(129 * MIB));
    let (mut driver, mut executor) = connected::<CoarseMessage>(
        Role::Driver,
        config(&Version::ALL),
        Role::Executor,
        config(&Version::ALL),
    )
    .await;
    let refused = driver.send(big.clone()).await;
    assert!(
        matches!(
            &refused,
            Err(ConnectionError::Outbound(FrameError::EncodedTooLarge {
                name: "LaunchTask",
                limit: 134_217_728,
                setting: LimitSetting::MessageMaxSize,
                ..
            }))
        ),
        "{refused:?}"
    );
    executor_and_driver_talk(&mut executor, &mut driver).await;

    let raised = 130 * MIB;
    let (driver, mut executor) = connected::<CoarseMessage>(
        Role::Driver,
        config(&Version::ALL).with_max_frame_size(raised),
        Role::Executor,
        config(&Version::ALL).with_max_frame_size(raised),
    )
    .await;
    let (sent, received) = tokio::join!(driver.send(big.clone()), executor.recv());
    assert_eq!(sent, Ok(()));
    assert_eq!(received, Ok(Incoming::Message(big)));
}

#[tokio::test]
async fn closing_gracefully_delivers_what_was_queued_then_the_peer_sees_it_closed() {
    let (worker, mut master) = connected::<DeployMessage>(
        Role::Worker,
        config(&Version::ALL),
        Role::Master,
        config(&Version::ALL),
    )
    .await;
    let heartbeat = DeployMessage::from(samples::heartbeat());
    for _ in 0..3 {
        assert_eq!(worker.send(heartbeat.clone()).await, Ok(()));
    }
    worker.close().await;
    assert_eq!(worker.close_reason(), Some(ConnectionError::Closed));
    assert_eq!(
        worker.send(heartbeat.clone()).await,
        Err(ConnectionError::Closed)
    );
    for _ in 0..3 {
        assert_eq!(
            master.recv().await,
            Ok(Incoming::Message(heartbeat.clone()))
        );
    }
    assert_eq!(master.recv().await, Err(ConnectionError::PeerClosed));
}

#[tokio::test]
async fn many_concurrent_asks_are_each_matched_to_their_own_reply() {
    let (executor, mut driver) = connected::<CoarseMessage>(
        Role::Executor,
        config(&Version::ALL),
        Role::Driver,
        config(&Version::ALL),
    )
    .await;
    let answer = async {
        let mut asks = Vec::new();
        for _ in 0..50 {
            match driver.recv().await {
                Ok(Incoming::Ask { id, message }) => asks.push((id, message)),
                other => panic!("expected an ask, got {other:?}"),
            }
        }
        // Answer in reverse order: each answer carries the task id asked about.
        for (id, message) in asks.into_iter().rev() {
            let CoarseMessage::TaskThreadDump(dump) = message else {
                panic!("expected TaskThreadDump");
            };
            let reply = Reply::Int(dump.task_id as i32);
            assert_eq!(driver.reply(id, reply).await, Ok(()));
        }
    };
    let asks = async {
        let handle = executor.handle();
        let mut tasks = Vec::new();
        for task_id in 0..50i64 {
            let handle = handle.clone();
            tasks.push(tokio::spawn(async move {
                let dump = sparkwire::messages::coarse::TaskThreadDump::new(task_id);
                (task_id, handle.ask(dump.into()).await)
            }));
        }
        let mut results = Vec::new();
        for task in tasks {
            results.push(task.await.expect("ask task"));
        }
        results
    };
    let ((), results) = tokio::join!(answer, asks);
    for (task_id, reply) in results {
        assert_eq!(reply, Ok(Reply::Int(task_id as i32)));
    }
}

#[tokio::test]
async fn an_envelope_arriving_in_the_same_read_as_the_answer_is_not_lost() {
    use sparkwire::wire::handshake::{decode_hello, encode_answer, Accepted, Answer};
    use tokio::io::AsyncWriteExt;

    let (io, mut raw) = tokio::io::duplex(common::PIPE);
    let registered = DeployMessage::from(samples::registered_worker());
    let master = async {
        let hello = common::read_raw_frame(&mut raw).await.expect("a hello");
        assert!(decode_hello(&hello).is_ok());
        let mut answer = Vec::new();
        encode_answer(
            &Answer::Accepted(Accepted {
                version: Version::V2,
                versions: vec![2],
                role: Role::Master,
                id: "m".to_string(),
                features: vec![],
            }),
            &mut answer,
        );
        let mut both = common::frame(&answer);
        both.extend(common::envelope_frame(
            &sparkwire::wire::Envelope::Send(registered.clone()),
            Version::V2,
        ));
        raw.write_all(&both).await.expect("raw write");
        raw
    };
    let (worker, _raw) = tokio::join!(
        Connection::<DeployMessage>::connect(io, Role::Worker, "w", ConnectionConfig::default()),
        master
    );
    let mut worker = worker.expect("connects");
    assert_eq!(worker.recv().await, Ok(Incoming::Message(registered)));
}

#[tokio::test]
async fn the_handshake_helpers_hand_over_streams_ready_for_the_frame_codec() {
    use futures_util::StreamExt;
    use sparkwire::wire::handshake::{client_handshake, server_handshake, Identity};
    use sparkwire::wire::Envelope;
    use sparkwire::wire::FrameCodec;
    use sparkwire::wire::FrameLimit;
    use tokio::io::AsyncWriteExt;

    let (a, b) = tokio::io::duplex(common::PIPE);
    let client = Identity::new(Role::AppClient, "app").with_versions(&[Version::V1]);
    let server = Identity::new(Role::Master, "master");
    let (client, server) = tokio::join!(
        client_handshake(a, &client),
        server_handshake(b, &server, |role| role.carries::<DeployMessage>()),
    );
    let (client, server) = (client.expect("client"), server.expect("server"));
    assert_eq!(client.negotiated().version, Version::V1);
    assert_eq!(server.negotiated().peer_role, Role::AppClient);
    assert_eq!(client.negotiated().peer_id, "master");

    let (negotiated, _reader, mut writer) = client.into_parts();
    let codec = FrameCodec::<DeployMessage>::new(negotiated.version, FrameLimit::DEFAULT);
    let unregister = DeployMessage::from(sparkwire::messages::deploy::UnregisterApplication::new(
        samples::APP_ID.to_string(),
    ));
    let frame = codec
        .encode_to_bytes(&Envelope::Send(unregister.clone()))
        .expect("encodable");
    writer.write_all(&frame).await.expect("write");

    let (negotiated, reader, _writer) = server.into_parts();
    let mut reader = reader.map_decoder(|raw| {
        FrameCodec::<DeployMessage>::from_raw(raw, negotiated.version, FrameLimit::DEFAULT)
    });
    assert_eq!(reader.next().await, Some(Ok(Envelope::Send(unregister))));
}
