//! The Spark-wire front of a sparkwire master (`sparkwire::spark::start_front`, `sparkwire
//! master --spark-port`), driven by a Spark peer written with the library's own Spark-wire door
//! (frames, `RequestMessage`, Java streams; a real Spark 4.0.1 RegisterApplication from
//! protocol/vectors/spark/4.0.1.json) against a real reference master in this process.
//! `scripts/spark/master.sh` runs the same front with a real Spark worker and PySpark job.

use std::time::Duration;

use bytes::Bytes;
use sparkwire::connection::{connect_tcp, Connection, ConnectionConfig};
use sparkwire::messages::deploy::{RegisterWorker, RequestMasterState, RequestReadyz};
use sparkwire::messages::{from_hex, Addr, DeployMessage, EndpointRef, Resources, Version};
use sparkwire::reference::master::{Master, MasterConfig, MasterHandle};
use sparkwire::spark::{
    check_existence_stream, classify, message_stream, parse_stream, reply_value, start_front,
    Classified, Frame, FrameDecoder, FrontConfig, Release, ReplyValue, RequestMessage,
    ServerHandle, Typed, MASTER_ENDPOINT, PROBE_ENDPOINT, VERIFIER,
};
use sparkwire::wire::handshake::Role;
use sparkwire::wire::Reply;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

const WAIT: Duration = Duration::from_secs(20);

async fn cluster(refuse: Option<&str>) -> (MasterHandle, ServerHandle) {
    let master = Master::start(MasterConfig {
        port: 0,
        ..MasterConfig::default()
    })
    .await
    .expect("the master starts");
    let mut config = FrontConfig::new("127.0.0.1", 0, master.addr());
    config.refuse = refuse.map(str::to_string);
    let front = start_front(config).await.expect("the front starts");
    (master, front)
}

/// A Spark peer: an RPC address of its own (none for a client-mode RpcEnv) and a socket. It
/// answers the front's probes of its release (SPEC §15.3) as a JVM of `jvm` does.
struct Peer {
    own: Option<(String, i32)>,
    front: (String, i32),
    socket: TcpStream,
    decoder: FrameDecoder,
    jvm: &'static Release,
    /// The front's probes it answered.
    probes: usize,
}

impl Peer {
    async fn connect(front: &ServerHandle, own: Option<(String, i32)>) -> Peer {
        let socket = TcpStream::connect(front.addr()).await.expect("connects");
        Peer {
            own,
            front: ("127.0.0.1".into(), i32::from(front.addr().port())),
            socket,
            decoder: FrameDecoder::default(),
            jvm: Release::of(Version::V2),
            probes: 0,
        }
    }

    async fn write(&mut self, request_id: Option<i64>, endpoint: &str, stream: Vec<u8>) {
        let header = RequestMessage {
            sender: self.own.clone(),
            receiver: Some(self.front.clone()),
            endpoint: endpoint.into(),
            stream: stream.into(),
        };
        let body: Bytes = header.encode().expect("a header").into();
        let frame = match request_id {
            Some(request_id) => Frame::RpcRequest { request_id, body },
            None => Frame::OneWay { body },
        };
        let bytes = frame.encode().expect("a frame");
        self.socket.write_all(&bytes).await.expect("writes");
    }

    async fn send(&mut self, request_id: Option<i64>, m: DeployMessage) {
        let stream = message_stream(&Typed::Deploy(m), Version::V2, None).expect("a stream");
        self.write(request_id, MASTER_ENDPOINT, stream).await;
    }

    /// The next frame, or `None` when the front closed the connection; a probe of the peer's
    /// release is answered as Spark's RPC does (the failure reading its stream meets, else
    /// that no endpoint of its name exists), and not returned.
    async fn next(&mut self) -> Option<Frame> {
        let mut buf = [0u8; 8192];
        loop {
            if let Some(item) = self.decoder.next_item() {
                let frame = item.frame.expect("a whole frame");
                if let Frame::RpcRequest { request_id, body } = &frame {
                    let header = RequestMessage::parse(body).expect("a header");
                    if header.endpoint == PROBE_ENDPOINT {
                        let g = parse_stream(&header.stream).expect("a probe's stream");
                        let error = self.jvm.read_failure(&g).unwrap_or_else(|| {
                            format!(
                                "org.apache.spark.SparkException: Could not find {PROBE_ENDPOINT}."
                            )
                        });
                        let answer = Frame::RpcFailure {
                            request_id: *request_id,
                            error,
                        };
                        let bytes = answer.encode().expect("a frame");
                        self.socket.write_all(&bytes).await.expect("writes");
                        self.probes += 1;
                        continue;
                    }
                }
                return Some(frame);
            }
            let n = tokio::time::timeout(WAIT, self.socket.read(&mut buf))
                .await
                .expect("the front answers in time")
                .unwrap_or(0);
            if n == 0 {
                return None;
            }
            self.decoder.push(&buf[..n]);
        }
    }

    async fn check_existence(&mut self, request_id: i64, name: &str) -> Frame {
        let stream = check_existence_stream(name, Version::V2).expect("a stream");
        self.write(Some(request_id), VERIFIER, stream).await;
        self.next().await.expect("an answer")
    }
}

fn bool_answer(f: &Frame) -> (i64, bool) {
    let Frame::RpcResponse { request_id, body } = f else {
        panic!("an RpcResponse, not {f:?}");
    };
    let g = parse_stream(body).expect("a Java stream");
    match reply_value(g.root_node()).expect("a reply") {
        ReplyValue::Bool(b) => (*request_id, b),
        other => panic!("a Boolean, not {other:?}"),
    }
}

/// A one-way frame's header and its message.
fn one_way(f: Frame) -> (RequestMessage, DeployMessage, Bytes) {
    let Frame::OneWay { body } = f else {
        panic!("a OneWayMessage, not {f:?}");
    };
    let header = RequestMessage::parse(&body).expect("a header");
    let g = parse_stream(&header.stream).expect("a Java stream");
    let Classified::Message(Typed::Deploy(m)) = classify(g.root_node()) else {
        panic!("a deploy message");
    };
    let stream = header.stream.clone();
    (header, m, stream)
}

fn register_worker(id: &str, port: i32) -> DeployMessage {
    let at = Addr::new("127.0.0.1", port);
    DeployMessage::from(RegisterWorker::new(
        id.into(),
        at.host.clone(),
        port,
        EndpointRef::at(at, "Worker"),
        4,
        4096,
        String::new(),
        Addr::new("127.0.0.1", 7077),
        Resources::new(),
    ))
}

async fn master_state(master: &MasterHandle) -> sparkwire::messages::deploy::MasterStateResponse {
    let addr = master.addr();
    let stream = connect_tcp("127.0.0.1", addr.port(), WAIT)
        .await
        .expect("tcp");
    let ui: Connection<DeployMessage> =
        Connection::connect(stream, Role::Ui, "test-ui", ConnectionConfig::default())
            .await
            .expect("a ui connection");
    match ui
        .ask(DeployMessage::from(RequestMasterState::new()))
        .await
        .expect("the state")
    {
        Reply::Message(DeployMessage::MasterStateResponse(s)) => s,
        other => panic!("a MasterStateResponse, not {other:?}"),
    }
}

#[tokio::test]
async fn check_existence_is_true_for_the_master_only() {
    let (_master, front) = cluster(None).await;
    let mut peer = Peer::connect(&front, None).await;
    assert_eq!(
        bool_answer(&peer.check_existence(5, "Master").await),
        (5, true)
    );
    assert_eq!(
        bool_answer(&peer.check_existence(6, "Worker").await),
        (6, false)
    );
}

#[tokio::test]
async fn a_spark_worker_registers_and_hears_back_on_its_own_connection_in_the_front_s_name() {
    let (master, front) = cluster(None).await;
    let mut worker = Peer::connect(&front, Some(("127.0.0.1".into(), 41001))).await;
    assert_eq!(
        bool_answer(&worker.check_existence(1, "Master").await),
        (1, true)
    );
    worker
        .send(None, register_worker("worker-spark-1", 41001))
        .await;
    let (header, m, _) = one_way(worker.next().await.expect("RegisteredWorker"));
    let DeployMessage::RegisteredWorker(r) = m else {
        panic!("RegisteredWorker, not {m:?}");
    };
    let front_addr = Addr::new("127.0.0.1", i32::from(front.addr().port()));
    // To the endpoint the worker registered, from the front's address.
    assert_eq!(header.endpoint, "Worker");
    assert_eq!(header.receiver, Some(("127.0.0.1".into(), 41001)));
    assert_eq!(header.sender, Some(("127.0.0.1".into(), front_addr.port)));
    // The master it names is the front: the only address a Spark peer can speak to.
    assert_eq!(r.master, EndpointRef::at(front_addr.clone(), "Master"));
    assert_eq!(r.master_address, front_addr);
    let state = master_state(&master).await;
    assert_eq!(state.workers.len(), 1);
    assert_eq!(state.workers[0].id, "worker-spark-1");
    assert_eq!(state.workers[0].cores, 4);
    // The Spark connection closes: the master drops the worker (disassociated).
    drop(worker);
    let mut removed = false;
    for _ in 0..100 {
        let s = master_state(&master).await;
        if s.workers.iter().all(|w| w.state.as_str() == "DEAD") {
            removed = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(removed, "a closed Spark connection removes its worker");
}

#[tokio::test]
async fn an_ask_is_answered_with_its_request_id_and_one_off_the_peer_s_role_fails() {
    let (_master, front) = cluster(None).await;
    // A UI's ask (RequestReadyz → Boolean) on its own connection.
    let mut ui = Peer::connect(&front, None).await;
    ui.send(Some(77), DeployMessage::from(RequestReadyz::new()))
        .await;
    assert_eq!(
        bool_answer(&ui.next().await.expect("an answer")),
        (77, true)
    );
    // The same ask on a worker's connection is not the worker's to make: a failure, same id.
    let mut worker = Peer::connect(&front, Some(("127.0.0.1".into(), 41002))).await;
    worker
        .send(None, register_worker("worker-spark-2", 41002))
        .await;
    let _registered = worker.next().await.expect("RegisteredWorker");
    worker
        .send(Some(78), DeployMessage::from(RequestReadyz::new()))
        .await;
    match worker.next().await.expect("an answer") {
        Frame::RpcFailure { request_id, error } => {
            assert_eq!(request_id, 78);
            assert!(error.contains("RequestReadyz"), "{error}");
        }
        other => panic!("an RpcFailure, not {other:?}"),
    }
}

#[tokio::test]
async fn a_front_told_to_refuse_every_spark_peer_answers_the_first_ask_with_why_and_closes() {
    let (master, front) = cluster(Some("the master has TLS")).await;
    let mut peer = Peer::connect(&front, Some(("127.0.0.1".into(), 41003))).await;
    let stream = check_existence_stream("Master", Version::V2).expect("a stream");
    peer.write(Some(3), VERIFIER, stream).await;
    match peer.next().await.expect("an answer") {
        Frame::RpcFailure { request_id, error } => {
            assert_eq!(request_id, 3);
            assert!(error.contains("the master has TLS"), "{error}");
        }
        other => panic!("an RpcFailure, not {other:?}"),
    }
    assert!(peer.next().await.is_none(), "the connection is closed");
    // A worker's one-way registration gets nothing and registers nothing.
    let mut worker = Peer::connect(&front, Some(("127.0.0.1".into(), 41004))).await;
    worker
        .send(None, register_worker("worker-spark-4", 41004))
        .await;
    assert!(worker.next().await.is_none(), "closed without an answer");
    assert!(master_state(&master).await.workers.is_empty());
}

#[tokio::test]
async fn a_broken_frame_closes_only_its_own_connection() {
    let (_master, front) = cluster(None).await;
    let mut bad = Peer::connect(&front, None).await;
    // A frame that declares more than the largest frame (128 MiB) the front takes.
    let mut huge = (1u64 << 40).to_be_bytes().to_vec();
    huge.push(9);
    bad.socket.write_all(&huge).await.expect("writes");
    assert!(
        bad.next().await.is_none(),
        "the front closes the broken connection"
    );
    let mut good = Peer::connect(&front, None).await;
    assert_eq!(
        bool_answer(&good.check_existence(1, "Master").await),
        (1, true)
    );
}

/// The real Spark 4.0.1 RegisterApplication of protocol/vectors/spark/4.0.1.json.
fn spark_register_application() -> Vec<u8> {
    spark_vector("deploy.RegisterApplication")
}

/// The stream of the real Spark 4.0.1 message `name` of protocol/vectors/spark/4.0.1.json.
fn spark_vector(name: &str) -> Vec<u8> {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/protocol/vectors/spark/4.0.1.json"
    ))
    .expect("the Spark vectors");
    let v: serde_json::Value = serde_json::from_str(&text).expect("JSON");
    let hex = v["vectors"]
        .as_array()
        .expect("vectors")
        .iter()
        .find(|x| x["message"] == name)
        .and_then(|x| x["streamHex"].as_str())
        .expect("the vector");
    from_hex(hex).expect("hex")
}

#[tokio::test]
async fn launch_executor_carries_the_application_description_as_the_driver_wrote_it() {
    let (_master, front) = cluster(None).await;
    let mut worker = Peer::connect(&front, Some(("127.0.0.1".into(), 41005))).await;
    worker
        .send(None, register_worker("worker-spark-5", 41005))
        .await;
    let _registered = worker.next().await.expect("RegisteredWorker");
    let stream = spark_register_application();
    let original = parse_stream(&stream).expect("the captured stream");
    let mut app = Peer::connect(&front, Some(("127.0.0.1".into(), 41006))).await;
    app.write(None, MASTER_ENDPOINT, stream.clone()).await;
    let (header, m, _) = one_way(app.next().await.expect("RegisteredApplication"));
    let DeployMessage::RegisteredApplication(r) = m else {
        panic!("RegisteredApplication, not {m:?}");
    };
    let Classified::Message(Typed::Deploy(DeployMessage::RegisterApplication(sent))) =
        classify(original.root_node())
    else {
        panic!("the vector is a RegisterApplication");
    };
    assert_eq!(
        header.endpoint, sent.driver.name,
        "to the driver's AppClient"
    );
    // The worker gets LaunchExecutor for that application, with the front's URL.
    let launch = loop {
        let (_, m, stream) = one_way(worker.next().await.expect("LaunchExecutor"));
        if let DeployMessage::LaunchExecutor(l) = m {
            break (l, stream);
        }
    };
    let (l, written) = launch;
    assert_eq!(l.app_id, r.app_id);
    assert_eq!(
        l.master_url,
        format!("spark://127.0.0.1:{}", front.addr().port())
    );
    assert_eq!(l.app_desc, sent.app_description);
    // Written with the driver's own ApplicationDescription object (what the typed value does
    // not hold included), not rebuilt from the typed value.
    let typed = Typed::Deploy(DeployMessage::LaunchExecutor(l));
    let grafted = message_stream(&typed, Version::V2, Some(&original)).expect("a stream");
    let rebuilt = message_stream(&typed, Version::V2, None).expect("a stream");
    assert_ne!(
        grafted, rebuilt,
        "the vector holds more than its typed value"
    );
    assert_eq!(&written[..], &grafted[..]);
}

#[tokio::test]
async fn launch_driver_carries_the_driver_description_as_spark_submit_wrote_it() {
    let (_master, front) = cluster(None).await;
    let mut worker = Peer::connect(&front, Some(("127.0.0.1".into(), 41007))).await;
    worker
        .send(None, register_worker("worker-spark-7", 41007))
        .await;
    let _registered = worker.next().await.expect("RegisteredWorker");
    // spark-submit's RPC client (a client-mode RpcEnv of its own) asks RequestSubmitDriver.
    let stream = spark_vector("deploy.RequestSubmitDriver");
    let original = parse_stream(&stream).expect("the captured stream");
    let Classified::Message(Typed::Deploy(DeployMessage::RequestSubmitDriver(sent))) =
        classify(original.root_node())
    else {
        panic!("the vector is a RequestSubmitDriver");
    };
    let mut client = Peer::connect(&front, Some(("127.0.0.1".into(), 41008))).await;
    client
        .write(Some(-12), MASTER_ENDPOINT, stream.clone())
        .await;
    let Frame::RpcResponse { request_id, body } = client.next().await.expect("an answer") else {
        panic!("an RpcResponse");
    };
    assert_eq!(
        request_id, -12,
        "a negative request id is answered as it came"
    );
    let g = parse_stream(&body).expect("a Java stream");
    let ReplyValue::Message(Typed::Deploy(DeployMessage::SubmitDriverResponse(r))) =
        reply_value(g.root_node()).expect("a reply")
    else {
        panic!("SubmitDriverResponse");
    };
    assert!(r.success, "{}", r.message);
    let front_addr = Addr::new("127.0.0.1", i32::from(front.addr().port()));
    assert_eq!(r.master, EndpointRef::at(front_addr, "Master"));
    let id = r.driver_id.expect("a driver id");
    let (l, written) = loop {
        let (_, m, stream) = one_way(worker.next().await.expect("LaunchDriver"));
        if let DeployMessage::LaunchDriver(l) = m {
            break (l, stream);
        }
    };
    assert_eq!(l.driver_id, id);
    assert_eq!(l.driver_desc, sent.driver_description);
    let typed = Typed::Deploy(DeployMessage::LaunchDriver(l));
    let grafted = message_stream(&typed, Version::V2, Some(&original)).expect("a stream");
    let rebuilt = message_stream(&typed, Version::V2, None).expect("a stream");
    assert_ne!(
        grafted, rebuilt,
        "the vector holds more than its typed value"
    );
    assert_eq!(&written[..], &grafted[..]);
}

/// A worker's RegisterWorker as Spark `release` writes it.
fn register_worker_of(release: &'static Release, id: &str, port: i32) -> Vec<u8> {
    message_stream(&Typed::Deploy(register_worker(id, port)), release, None)
        .expect("every release writes RegisterWorker")
}

#[tokio::test]
async fn each_spark_peer_is_answered_in_the_release_its_own_streams_name() {
    let (master, front) = cluster(None).await;
    let releases: Vec<&'static Release> = ["3.0.3", "3.5.9", "4.2.1", "4.3.0"]
        .iter()
        .map(|r| Release::named(r).expect("a release sparkwire speaks"))
        .collect();
    let mut open = Vec::new();
    for (i, release) in releases.iter().enumerate() {
        let port = 41100 + i as i32;
        let mut worker = Peer::connect(&front, Some(("127.0.0.1".into(), port))).await;
        worker.jvm = release;
        let id = format!("worker-{}", release.name());
        worker
            .write(
                None,
                MASTER_ENDPOINT,
                register_worker_of(release, &id, port),
            )
            .await;
        let (_, m, stream) = one_way(worker.next().await.expect("an answer"));
        assert!(
            matches!(m, DeployMessage::RegisteredWorker(_)),
            "{release}: RegisteredWorker, not {m:?}"
        );
        // A RegisterWorker leaves open releases whose tables differ (3.0-3.3, 3.4-3.5 and 4.1-4.3
        // have one RpcEndpointRef each): the front asked the worker which before registering it.
        assert!(worker.probes >= 1, "{release}: no probe asked");
        // The answer carries this release's class descriptors, and no other release's where
        // they differ (RpcEndpointRef's serialVersionUID differs between those groups).
        let g = parse_stream(&stream).expect("a Java stream");
        let own = release.judge(&g);
        assert!(
            own.mismatched.is_empty() && own.matched > 0,
            "{release}: {own:?}"
        );
        let endpoint_ref = |r: &Release| {
            r.table()
                .get("org.apache.spark.rpc.RpcEndpointRef")
                .map(|c| c.suid.clone())
        };
        for other in releases
            .iter()
            .filter(|o| endpoint_ref(o) != endpoint_ref(release))
        {
            assert!(
                !other.judge(&g).mismatched.is_empty(),
                "{release}'s answer would also read as {other}'s"
            );
        }
        // Kept open: a closed Spark connection removes its worker.
        open.push(worker);
    }
    let state = master_state(&master).await;
    assert_eq!(state.workers.len(), releases.len(), "{:?}", state.workers);
    // The front announced each worker's release label with its registration (SPEC §15.5): the
    // newest release of each table its streams and its answers to the probes agree with (3.5.3's
    // table and 3.5.4-3.5.9's differ in no class a probe may ask about, so a 3.5.9 worker is
    // `3.5.3|3.5.9`).
    let mut labels = Vec::new();
    for release in &releases {
        let id = format!("worker-{}", release.name());
        let w = state
            .workers
            .iter()
            .find(|w| w.id == id)
            .expect("registered");
        let label = w
            .spark_release
            .clone()
            .unwrap_or_else(|| panic!("{id}: a release announced"));
        let sent = parse_stream(&register_worker_of(release, &id, 0)).expect("a Java stream");
        for name in Release::label_names(&label) {
            let named = Release::named(name).expect("a release sparkwire knows");
            assert!(
                named.judge(&sent).mismatched.is_empty(),
                "{id}: announced {label}, whose {named} disagrees with what it sent"
            );
        }
        // The release it was answered in is the newest it names: its own.
        assert_eq!(
            Release::answering(&label).map(Release::name),
            Some(release.name()),
            "{id}: {label}"
        );
        assert!(
            Release::compatible_names(&label, release.name()),
            "{id}: {label}"
        );
        labels.push(label);
    }
    // Told apart: no worker's label may share executors with another's.
    for (i, a) in labels.iter().enumerate() {
        for b in &labels[i + 1..] {
            assert!(!Release::compatible_names(a, b), "{a} and {b}");
        }
    }
}

#[tokio::test]
async fn a_peer_of_no_known_release_is_refused_with_the_class_that_did_not_match() {
    let (master, front) = cluster(None).await;
    // Spark 4.0.1's RegisterWorker with RpcEndpointRef's serialVersionUID changed, as a release
    // sparkwire does not know would send it.
    let release = Release::named("4.0.1").expect("4.0.1");
    let mut stream = register_worker_of(release, "worker-future", 41200);
    let suid: i64 = release
        .table()
        .get("org.apache.spark.rpc.RpcEndpointRef")
        .expect("RpcEndpointRef")
        .suid
        .parse()
        .expect("a number");
    let at = stream
        .windows(8)
        .position(|w| w == suid.to_be_bytes())
        .expect("the descriptor is in the stream");
    stream[at..at + 8].copy_from_slice(&12345i64.to_be_bytes());
    let mut worker = Peer::connect(&front, Some(("127.0.0.1".into(), 41200))).await;
    worker.write(None, MASTER_ENDPOINT, stream).await;
    // The worker is told why, in the forms of the nearest release, and the connection closes.
    let (_, m, _) = one_way(worker.next().await.expect("RegisterWorkerFailed"));
    let DeployMessage::RegisterWorkerFailed(f) = m else {
        panic!("RegisterWorkerFailed, not {m:?}");
    };
    assert!(
        f.message.contains("org.apache.spark.rpc.RpcEndpointRef") && f.message.contains("12345"),
        "{}",
        f.message
    );
    assert!(worker.next().await.is_none(), "the connection is closed");
    assert!(master_state(&master).await.workers.is_empty());
    // An ask of such a peer is answered with a failure that says the same.
    let mut check = check_existence_stream("Master", release).expect("a stream");
    let verifier = release
        .table()
        .get(sparkwire::spark::CHECK_EXISTENCE)
        .expect("CheckExistence")
        .suid
        .parse::<i64>()
        .expect("a number");
    let at = check
        .windows(8)
        .position(|w| w == verifier.to_be_bytes())
        .expect("the descriptor is in the stream");
    check[at..at + 8].copy_from_slice(&777i64.to_be_bytes());
    let mut peer = Peer::connect(&front, None).await;
    peer.write(Some(9), VERIFIER, check).await;
    match peer.next().await.expect("an answer") {
        Frame::RpcFailure { request_id, error } => {
            assert_eq!(request_id, 9);
            assert!(
                error.contains("CheckExistence") && error.contains("777"),
                "{error}"
            );
        }
        other => panic!("an RpcFailure, not {other:?}"),
    }
    assert!(peer.next().await.is_none(), "the connection is closed");
}

/// The front reaches a master of its own process in memory, not over a socket of the master's
/// listener (src/spark/front.rs); that path still goes through the master's admission: a Spark
/// peer's bridge takes one of the master's `max_connections`, and one over the limit is refused
/// (its Spark connection closed unanswered) without reaching the master's core.
#[tokio::test]
async fn spark_peers_reached_in_process_count_against_the_master_s_connection_limit() {
    let mut config = MasterConfig {
        port: 0,
        ..MasterConfig::default()
    };
    config.limits.max_connections = 2;
    let master = Master::start(config).await.expect("the master starts");
    let mut front_config = FrontConfig::new("127.0.0.1", 0, master.addr());
    front_config.max_connections = 16;
    let front = start_front(front_config).await.expect("the front starts");
    let mut workers = Vec::new();
    for (k, port) in [(1, 41101), (2, 41102)] {
        let mut w = Peer::connect(&front, Some(("127.0.0.1".into(), port))).await;
        w.send(None, register_worker(&format!("worker-limit-{k}"), port))
            .await;
        let (_, m, _) = one_way(w.next().await.expect("an answer"));
        assert!(
            matches!(m, DeployMessage::RegisteredWorker(_)),
            "worker {k} registers: {m:?}"
        );
        workers.push(w);
    }
    // A third Spark worker: the master holds its limit of connections (the two bridges).
    let mut third = Peer::connect(&front, Some(("127.0.0.1".into(), 41103))).await;
    third
        .send(None, register_worker("worker-limit-3", 41103))
        .await;
    assert!(
        third.next().await.is_none(),
        "the third Spark worker is refused by the master's connection limit"
    );
    // One worker leaves: its bridge's slot comes back, and a UI (over TCP) can ask the state.
    drop(workers.pop());
    let mut state = None;
    for _ in 0..100 {
        let stream = connect_tcp("127.0.0.1", master.addr().port(), WAIT)
            .await
            .expect("tcp");
        let ui = Connection::<DeployMessage>::connect(
            stream,
            Role::Ui,
            "test-ui",
            ConnectionConfig::default(),
        )
        .await;
        if let Ok(ui) = ui {
            if let Ok(Reply::Message(DeployMessage::MasterStateResponse(s))) =
                ui.ask(DeployMessage::from(RequestMasterState::new())).await
            {
                state = Some(s);
                break;
            }
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let state = state.expect("a slot comes back once a Spark worker left");
    let ids: Vec<&str> = state.workers.iter().map(|w| w.id.as_str()).collect();
    assert!(ids.contains(&"worker-limit-1"), "{ids:?}");
    assert!(
        !ids.contains(&"worker-limit-3"),
        "the refused worker never reached the master: {ids:?}"
    );
}
