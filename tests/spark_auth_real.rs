//! Spark's own authentication against REAL Spark (`spark.authenticate=true`): sparkwire's
//! bootstraps (`sparkwire::spark::auth`) with a real Spark master as the server, and with a real
//! Spark worker as the client of sparkwire's server side.
//!
//! These start JVMs, so they are `#[ignore]`d; run them with a Spark installed:
//!
//! ```text
//! eval "$(bash scripts/spark/env.sh 4.0.1)"
//! cargo test --all-features --test spark_auth_real -- --ignored --test-threads 1
//! ```
//!
//! Each test names the Spark release it ran against from `$SPARK_HOME/RELEASE` or the jars.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use sparkwire::messages::Version;
use sparkwire::spark::auth::{
    client_handshake, server_handshake, AuthError, AuthStream, ClientAuth, EngineVersion,
    Negotiated, ServerAuth,
};
use sparkwire::spark::{
    check_existence_stream, parse_stream, reply_value, Frame, FrameDecoder, ReplyValue,
    RequestMessage, CHECK_EXISTENCE, VERIFIER,
};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

const SECRET: &str = "the-cluster-secret-4711";
const PATIENCE: Duration = Duration::from_secs(60);

fn spark_home() -> PathBuf {
    PathBuf::from(
        std::env::var("SPARK_HOME").expect(
            "SPARK_HOME: run `eval \"$(bash scripts/spark/env.sh 4.0.1)\"` before these tests",
        ),
    )
}

/// The Spark release of `$SPARK_HOME`, from its core jar's name.
fn spark_release() -> String {
    let jars = spark_home().join("jars");
    for e in std::fs::read_dir(&jars)
        .expect("$SPARK_HOME/jars")
        .flatten()
    {
        let name = e.file_name().to_string_lossy().to_string();
        if let Some(rest) = name.strip_prefix("spark-core_") {
            if let Some((_, v)) = rest.trim_end_matches(".jar").split_once('-') {
                return v.to_string();
            }
        }
    }
    panic!("no spark-core jar in {}", jars.display());
}

/// A JVM started by a test, killed (by its PID) when dropped.
struct Jvm {
    child: Child,
    dir: PathBuf,
}

impl Drop for Jvm {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

impl Jvm {
    fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("out.log")).unwrap_or_default()
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .expect("bind")
        .local_addr()
        .expect("addr")
        .port()
}

/// Runs `class` with `args` through `spark-class`, with `spark.authenticate=true`, the secret in
/// `_SPARK_AUTH_SECRET` (as Spark's worker hands it to what it launches) and `conf` as Java
/// system properties.
fn spark_class(tag: &str, class: &str, args: &[String], conf: &[(&str, &str)]) -> Jvm {
    spark_class_with(tag, class, args, conf, SECRET)
}

fn spark_class_with(
    tag: &str,
    class: &str,
    args: &[String],
    conf: &[(&str, &str)],
    secret: &str,
) -> Jvm {
    let dir = std::env::temp_dir().join(format!(
        "sparkauth-{tag}-{}-{}",
        std::process::id(),
        free_port()
    ));
    std::fs::create_dir_all(dir.join("conf")).expect("dir");
    let mut opts = String::from("-Dspark.authenticate=true");
    for (k, v) in conf {
        opts.push_str(&format!(" -D{k}={v}"));
    }
    let log = std::fs::File::create(dir.join("out.log")).expect("log");
    let child = Command::new(spark_home().join("bin/spark-class"))
        .arg(class)
        .args(args)
        .env("SPARK_CONF_DIR", dir.join("conf"))
        .env("SPARK_DAEMON_JAVA_OPTS", opts)
        .env("SPARK_DAEMON_MEMORY", "256m")
        .env("_SPARK_AUTH_SECRET", secret)
        .env("SPARK_WORKER_DIR", dir.join("work"))
        .stdout(Stdio::from(log.try_clone().expect("log")))
        .stderr(Stdio::from(log))
        .spawn()
        .expect("spark-class");
    Jvm { child, dir }
}

/// A real Spark master with auth on and `conf`, once its RPC port listens.
async fn spark_master(tag: &str, conf: &[(&str, &str)]) -> (Jvm, SocketAddr) {
    let mut jvm = spark_master_jvm(tag, conf);
    let addr = jvm.1;
    let start = Instant::now();
    loop {
        if jvm.0.log().contains("I have been elected leader") {
            return (jvm.0, addr);
        }
        let exited = jvm.0.child.try_wait().ok().flatten();
        assert!(
            exited.is_none() && start.elapsed() < PATIENCE,
            "the Spark master did not start:\n{}",
            jvm.0.log()
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

fn spark_master_jvm(tag: &str, conf: &[(&str, &str)]) -> (Jvm, SocketAddr) {
    let port = free_port();
    let jvm = spark_class(
        tag,
        "org.apache.spark.deploy.master.Master",
        &[
            "--host".into(),
            "127.0.0.1".into(),
            "--port".into(),
            port.to_string(),
            "--webui-port".into(),
            free_port().to_string(),
        ],
        conf,
    );
    (jvm, ([127, 0, 0, 1], port).into())
}

/// Reads one frame from `s`.
async fn next_frame<S: AsyncRead + Unpin>(s: &mut S, d: &mut FrameDecoder) -> Frame {
    let mut buf = [0u8; 4096];
    loop {
        if let Some(item) = d.next_item() {
            return item.frame.expect("a frame");
        }
        let n = tokio::time::timeout(PATIENCE, s.read(&mut buf))
            .await
            .expect("a frame in time")
            .expect("read");
        assert!(n > 0, "the peer closed the connection");
        d.push(&buf[..n]);
    }
}

/// Asks `CheckExistence(name)` of `endpoint-verifier` over `s`: Spark's first RPC on every
/// connection, answered by the real endpoint only once the bootstrap let the RPC through.
async fn check_existence<S: AsyncRead + AsyncWrite + Unpin>(s: &mut S, name: &str) -> bool {
    let header = RequestMessage {
        sender: Some(("127.0.0.1".into(), 1)),
        receiver: Some(("127.0.0.1".into(), 1)),
        endpoint: VERIFIER.into(),
        stream: check_existence_stream(name, Version::V2)
            .expect("stream")
            .into(),
    };
    let ask = Frame::RpcRequest {
        request_id: 42,
        body: header.encode().expect("header").into(),
    };
    s.write_all(&ask.encode().expect("frame"))
        .await
        .expect("write");
    s.flush().await.expect("flush");
    match next_frame(s, &mut FrameDecoder::default()).await {
        Frame::RpcResponse { request_id, body } => {
            assert_eq!(request_id, 42);
            let graph = parse_stream(&body).expect("a Java stream");
            match reply_value(graph.root_node()).expect("a reply") {
                ReplyValue::Bool(b) => b,
                other => panic!("a Boolean, got {other:?}"),
            }
        }
        other => panic!("an RpcResponse, got {other:?}"),
    }
}

async fn authenticated(
    addr: SocketAddr,
    auth: &ClientAuth,
) -> Result<AuthStream<TcpStream>, AuthError> {
    let tcp = TcpStream::connect(addr).await.expect("connect");
    client_handshake(tcp, auth).await
}

#[tokio::test]
#[ignore = "starts a real Spark master: needs SPARK_HOME (scripts/spark/env.sh)"]
async fn sasl_client_authenticates_to_a_real_spark_master_and_asks_it() {
    let release = spark_release();
    let (master, addr) = spark_master("sasl", &[]).await;
    let mut s = authenticated(addr, &ClientAuth::sasl(SECRET))
        .await
        .unwrap_or_else(|e| panic!("SASL with Spark {release}: {e}\n{}", master.log()));
    assert_eq!(s.negotiated(), Negotiated::Sasl);
    assert!(!s.is_encrypted());
    assert!(
        check_existence(&mut s, "Master").await,
        "Spark {release}'s master answers CheckExistence(Master) after SASL"
    );
    // The wrong secret: the real master fails the digest-response.
    let wrong = ClientAuth::sasl("not-the-secret");
    match authenticated(addr, &wrong).await {
        Err(AuthError::Refused(why)) => assert!(why.contains("SaslException") || !why.is_empty()),
        other => panic!("a refusal of the wrong secret, got {other:?}"),
    }
    eprintln!(
        "proven against Spark {release}: SASL DIGEST-MD5 client (auth), wrong secret refused"
    );
}

#[tokio::test]
#[ignore = "starts a real Spark master: needs SPARK_HOME (scripts/spark/env.sh)"]
async fn engine_client_v1_and_v2_with_aes_ctr_authenticate_to_real_spark_masters() {
    let release = spark_release();
    for version in [EngineVersion::V1, EngineVersion::V2] {
        let n = version.number().to_string();
        let (master, addr) = spark_master(
            &format!("engine{n}"),
            &[
                ("spark.network.crypto.enabled", "true"),
                ("spark.network.crypto.saslFallback", "false"),
                ("spark.network.crypto.authEngineVersion", n.as_str()),
            ],
        )
        .await;
        let auth = ClientAuth {
            version,
            sasl_fallback: false,
            ..ClientAuth::crypto(SECRET)
        };
        let mut s = authenticated(addr, &auth)
            .await
            .unwrap_or_else(|e| panic!("engine v{n} with Spark {release}: {e}\n{}", master.log()));
        assert_eq!(s.negotiated(), Negotiated::Engine(version));
        assert!(s.is_encrypted());
        // The RPC runs inside AES-CTR: the real master decrypts it and answers in kind.
        assert!(check_existence(&mut s, "Master").await);
        assert!(!check_existence(&mut s, "NoSuchEndpoint").await);
        // The wrong secret: the master cannot open the client's public key.
        let wrong = ClientAuth {
            secret: "not-the-secret".into(),
            ..auth.clone()
        };
        match authenticated(addr, &wrong).await {
            Err(AuthError::Refused(why)) => assert!(why.contains("Authentication failed")),
            other => panic!("a refusal of the wrong secret, got {other:?}"),
        }
        // SASL is refused with saslFallback=false.
        assert!(authenticated(addr, &ClientAuth::sasl(SECRET))
            .await
            .is_err());
        drop(master);
        eprintln!("proven against Spark {release}: auth engine v{n} + AES-CTR client");
    }
}

#[tokio::test]
#[ignore = "starts a real Spark master: needs SPARK_HOME (scripts/spark/env.sh)"]
async fn engine_client_falls_back_to_sasl_on_a_real_master_without_crypto() {
    let (master, addr) = spark_master("fallback", &[]).await;
    let mut s = authenticated(addr, &ClientAuth::crypto(SECRET))
        .await
        .unwrap_or_else(|e| panic!("fallback: {e}\n{}", master.log()));
    assert_eq!(s.negotiated(), Negotiated::Sasl);
    assert!(check_existence(&mut s, "Master").await);
}

#[tokio::test]
#[ignore = "starts a real Spark master: needs SPARK_HOME (scripts/spark/env.sh)"]
async fn sasl_encryption_client_seals_its_rpc_to_a_real_spark_master() {
    use sparkwire::spark::auth::SaslCipher;
    let release = spark_release();
    // serverAlwaysEncrypt: the master offers auth-conf only, so an answer proves the layer.
    let (master, addr) = spark_master(
        "saslconf",
        &[("spark.network.sasl.serverAlwaysEncrypt", "true")],
    )
    .await;
    let auth = ClientAuth {
        sasl_encryption: true,
        ..ClientAuth::sasl(SECRET)
    };
    let mut s = authenticated(addr, &auth)
        .await
        .unwrap_or_else(|e| panic!("SASL auth-conf with Spark {release}: {e}\n{}", master.log()));
    assert_eq!(s.negotiated(), Negotiated::SaslEncrypted(SaslCipher::Rc4));
    assert!(s.is_encrypted());
    // Two RPCs: the second proves both sides' sequence numbers and RC4 keystreams run on.
    assert!(check_existence(&mut s, "Master").await);
    assert!(!check_existence(&mut s, "NoSuchEndpoint").await);
    // A client without encryption asks for qop auth, which this master does not offer.
    assert!(authenticated(addr, &ClientAuth::sasl(SECRET))
        .await
        .is_err());
    eprintln!("proven against Spark {release}: SASL DIGEST-MD5 auth-conf (rc4) client");
}

/// Serves one connection with sparkwire's server side; returns what was negotiated and the first
/// request the peer sent after it, answered `CheckExistence` → true.
async fn serve_one(listener: &TcpListener, auth: &ServerAuth) -> (Negotiated, RequestMessage) {
    let (tcp, _) = tokio::time::timeout(PATIENCE, listener.accept())
        .await
        .expect("a Spark peer connects")
        .expect("accept");
    let mut s = server_handshake(tcp, auth)
        .await
        .expect("the peer authenticates");
    let negotiated = s.negotiated();
    let mut d = FrameDecoder::default();
    let (id, body) = match next_frame(&mut s, &mut d).await {
        Frame::RpcRequest { request_id, body } => (request_id, body),
        other => panic!("an RpcRequest after the bootstrap, got {other:?}"),
    };
    let request = RequestMessage::parse(&body).expect("a RequestMessage");
    // Answer `true` as Spark's verifier does (a Java Boolean).
    let yes = sparkwire::spark::bool_stream(true, Version::V2).expect("bool");
    let answer = Frame::RpcResponse {
        request_id: id,
        body: yes.into(),
    };
    s.write_all(&answer.encode().expect("frame"))
        .await
        .expect("write");
    s.flush().await.expect("flush");
    (negotiated, request)
}

/// A worker case: a tag, the worker's settings, sparkwire's server, what is negotiated.
type WorkerCase = (
    &'static str,
    Vec<(&'static str, &'static str)>,
    ServerAuth,
    Negotiated,
);

#[tokio::test]
#[ignore = "starts a real Spark worker: needs SPARK_HOME (scripts/spark/env.sh)"]
async fn a_real_spark_worker_authenticates_to_sparkwire_with_sasl_and_the_engine() {
    let release = spark_release();
    let cases: [WorkerCase; 5] = [
        ("sasl", vec![], ServerAuth::new(SECRET), Negotiated::Sasl),
        (
            "saslconf",
            vec![("spark.authenticate.enableSaslEncryption", "true")],
            ServerAuth::new(SECRET),
            Negotiated::SaslEncrypted(sparkwire::spark::auth::SaslCipher::Rc4),
        ),
        (
            // A server that demands auth-conf: the worker asks for it too (else Java's client
            // fails "No common protection layer").
            "saslalways",
            vec![("spark.authenticate.enableSaslEncryption", "true")],
            ServerAuth {
                sasl_always_encrypt: true,
                crypto: false,
                ..ServerAuth::new(SECRET)
            },
            Negotiated::SaslEncrypted(sparkwire::spark::auth::SaslCipher::Rc4),
        ),
        (
            "engine1",
            vec![("spark.network.crypto.enabled", "true")],
            ServerAuth::new(SECRET),
            Negotiated::Engine(EngineVersion::V1),
        ),
        (
            "engine2",
            vec![
                ("spark.network.crypto.enabled", "true"),
                ("spark.network.crypto.authEngineVersion", "2"),
            ],
            ServerAuth {
                version: EngineVersion::V2,
                ..ServerAuth::new(SECRET)
            },
            Negotiated::Engine(EngineVersion::V2),
        ),
    ];
    for (tag, conf, auth, expected) in cases {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let port = listener.local_addr().expect("addr").port();
        let worker = spark_class(
            &format!("worker-{tag}"),
            "org.apache.spark.deploy.worker.Worker",
            &[
                format!("spark://127.0.0.1:{port}"),
                "--host".into(),
                "127.0.0.1".into(),
                "--webui-port".into(),
                free_port().to_string(),
                "--cores".into(),
                "1".into(),
                "--memory".into(),
                "512m".into(),
            ],
            &conf,
        );
        let (negotiated, request) = tokio::time::timeout(PATIENCE, serve_one(&listener, &auth))
            .await
            .unwrap_or_else(|_| panic!("{tag}: no request in time\n{}", worker.log()));
        assert_eq!(negotiated, expected, "{tag}");
        // The worker's first RPC, read through the session: CheckExistence("Master").
        assert_eq!(request.endpoint, VERIFIER, "{tag}");
        let graph = parse_stream(&request.stream).expect("a Java stream");
        assert_eq!(
            graph.root_node().class_name(),
            Some(CHECK_EXISTENCE),
            "{tag}: the first RPC is CheckExistence"
        );
        drop(worker);
        eprintln!(
            "proven against Spark {release}: a real worker authenticated to sparkwire ({expected})"
        );
    }
}

/// A sparkwire master (the binary) with `--secret-file` and `--spark-port`, killed when dropped.
struct SparkwireMaster {
    child: Child,
    dir: PathBuf,
    spark_port: u16,
}

impl Drop for SparkwireMaster {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

impl SparkwireMaster {
    fn start(tag: &str, extra: &[&str]) -> SparkwireMaster {
        let dir = std::env::temp_dir().join(format!(
            "sparkauth-swm-{tag}-{}-{}",
            std::process::id(),
            free_port()
        ));
        std::fs::create_dir_all(&dir).expect("dir");
        let secret = dir.join("secret");
        std::fs::write(&secret, SECRET).expect("secret");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&secret, std::fs::Permissions::from_mode(0o600))
                .expect("chmod");
        }
        let spark_port = free_port();
        let log = std::fs::File::create(dir.join("out.log")).expect("log");
        let child = Command::new(env!("CARGO_BIN_EXE_sparkwire"))
            .args([
                "master",
                "--host",
                "127.0.0.1",
                "--port",
                "0",
                "--spark-port",
            ])
            .arg(spark_port.to_string())
            .arg("--secret-file")
            .arg(&secret)
            .args(extra)
            .env("RUST_LOG", "info")
            .stdout(Stdio::from(log.try_clone().expect("log")))
            .stderr(Stdio::from(log))
            .spawn()
            .expect("sparkwire master");
        SparkwireMaster {
            child,
            dir,
            spark_port,
        }
    }

    fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("out.log")).unwrap_or_default()
    }
}

/// A real Spark worker pointed at `port`, with `conf` and `secret`.
fn real_worker(tag: &str, port: u16, conf: &[(&str, &str)], secret: &str) -> Jvm {
    spark_class_with(
        tag,
        "org.apache.spark.deploy.worker.Worker",
        &[
            format!("spark://127.0.0.1:{port}"),
            "--host".into(),
            "127.0.0.1".into(),
            "--webui-port".into(),
            free_port().to_string(),
            "--cores".into(),
            "1".into(),
            "--memory".into(),
            "512m".into(),
        ],
        conf,
        secret,
    )
}

async fn eventually(what: &str, mut f: impl FnMut() -> bool, logs: impl Fn() -> String) {
    let start = Instant::now();
    while !f() {
        assert!(start.elapsed() < PATIENCE, "{what}:\n{}", logs());
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

#[tokio::test]
#[ignore = "starts a real Spark worker: needs SPARK_HOME (scripts/spark/env.sh)"]
async fn real_spark_workers_with_the_secret_register_with_a_sparkwire_master_and_others_do_not() {
    let release = spark_release();
    let master = SparkwireMaster::start("front", &[]);
    let port = master.spark_port;
    for (tag, conf) in [
        ("sasl", vec![]),
        ("crypto", vec![("spark.network.crypto.enabled", "true")]),
    ] {
        let worker = real_worker(&format!("front-{tag}"), port, &conf, SECRET);
        eventually(
            &format!("a {tag} worker registers"),
            || worker.log().contains("Successfully registered with master"),
            || format!("worker:\n{}\nmaster:\n{}", worker.log(), master.log()),
        )
        .await;
        drop(worker);
        eprintln!("proven against Spark {release}: a real {tag} worker registered with a sparkwire master with a secret");
    }
    // The wrong secret: refused at the bootstrap, logged with the peer's address, never
    // registered.
    let wrong = real_worker("front-wrong", port, &[], "not-the-secret");
    eventually(
        "the wrong secret is refused and logged",
        || {
            master
                .log()
                .contains("authentication bootstrap: authentication failed")
        },
        || format!("worker:\n{}\nmaster:\n{}", wrong.log(), master.log()),
    )
    .await;
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert!(
        !wrong.log().contains("Successfully registered"),
        "{}",
        wrong.log()
    );
    drop(wrong);
    // No authentication at all: the worker's first RPC is no bootstrap message.
    let bare = spark_class_with(
        "front-bare",
        "org.apache.spark.deploy.worker.Worker",
        &[
            format!("spark://127.0.0.1:{port}"),
            "--host".into(),
            "127.0.0.1".into(),
            "--webui-port".into(),
            free_port().to_string(),
        ],
        &[("spark.authenticate", "false")],
        "",
    );
    eventually(
        "an unauthenticated worker is refused",
        || {
            master
                .log()
                .contains("authentication bootstrap: malformed: not a SaslMessage")
        },
        || format!("worker:\n{}\nmaster:\n{}", bare.log(), master.log()),
    )
    .await;
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert!(
        !bare.log().contains("Successfully registered"),
        "{}",
        bare.log()
    );
    // Only the two good workers passed the bootstrap: nothing of the others reached the master.
    assert_eq!(
        master.log().matches("authenticated:").count(),
        2,
        "{}",
        master.log()
    );
}

#[tokio::test]
#[ignore = "starts a real Spark master and worker: needs SPARK_HOME (scripts/spark/env.sh)"]
async fn a_real_worker_registers_through_the_proxy_terminating_auth_engine_on_both_sides() {
    use sparkwire::spark::{start_proxy, ProxyOptions};
    let release = spark_release();
    let crypto = [("spark.network.crypto.enabled", "true")];
    let (master, addr) = spark_master("proxied", &crypto).await;
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let port = listener.local_addr().expect("addr").port();
    let options = ProxyOptions {
        auth: Some(ServerAuth::new(SECRET)),
        auth_upstream: Some(ClientAuth::crypto(SECRET)),
        ..ProxyOptions::default()
    };
    let proxy = start_proxy(listener, addr.to_string(), options).expect("proxy");
    let worker = real_worker("proxied-worker", port, &crypto, SECRET);
    eventually(
        "the worker registers through the proxy",
        || worker.log().contains("Successfully registered with master"),
        || format!("worker:\n{}\nmaster:\n{}", worker.log(), master.log()),
    )
    .await;
    drop(worker);
    let outcome = proxy.stop().await;
    assert!(
        outcome
            .summary
            .messages
            .keys()
            .any(|class| class.ends_with("RegisterWorker")),
        "the proxy traced the decrypted RegisterWorker: {:?}",
        outcome.summary.messages
    );
    eprintln!(
        "proven against Spark {release}: proxy terminating the auth engine + AES-CTR on both sides"
    );
}
