//! `sparkwire spark audit` against REAL Spark masters: authentication off (with the REST
//! submission server on), SASL (`spark.authenticate=true`), network crypto
//! (`spark.network.crypto.enabled=true`, Spark's default SASL fallback) and crypto hardened
//! (`spark.network.crypto.saslFallback=false`). Each gives its own report; the audit changes
//! nothing on the master (its log shows no registration, and it still runs).
//!
//! These start JVMs, so they are `#[ignore]`d; run them with a Spark installed:
//!
//! ```text
//! eval "$(bash scripts/spark/env.sh 4.0.1)"
//! cargo test --all-features --test spark_audit_real -- --ignored --test-threads 1
//! ```
//!
//! The crypto test also runs against Spark 3.0.3 (`env.sh 3.0.3`), whose crypto is the original
//! AES protocol: there the audit reports CVE-2021-38296's protocol (3.1.3 has the X25519 engine).
//!
//! With `SPARKWIRE_AUDIT_REPORTS=DIR` each report is also written to `DIR/NAME.txt`.

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use sparkwire::messages::Version;
use sparkwire::spark::audit::{
    audit, AuditOptions, AuditReport, HttpPort, Outcome, Severity, TargetRole,
};
use sparkwire::spark::auth::{
    client_handshake, ClientAuth, EngineVersion, Negotiated, TransportCipher,
};
use sparkwire::spark::{
    check_existence_stream, parse_stream, reply_value, Frame, FrameDecoder, ReplyValue,
    RequestMessage, VERIFIER,
};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

const SECRET: &str = "the-audited-secret-0815";
const PATIENCE: Duration = Duration::from_secs(90);

fn spark_home() -> PathBuf {
    PathBuf::from(
        std::env::var("SPARK_HOME").expect(
            "SPARK_HOME: run `eval \"$(bash scripts/spark/env.sh 4.0.1)\"` before these tests",
        ),
    )
}

/// A Spark master started by a test, killed by its PID when dropped.
struct SparkMaster {
    child: Child,
    dir: PathBuf,
    port: u16,
    ui_port: u16,
    rest_port: u16,
}

impl Drop for SparkMaster {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

impl SparkMaster {
    fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("out.log")).unwrap_or_default()
    }
}

/// The Spark release of `$SPARK_HOME`, from its core jar's name.
fn release() -> String {
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

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .expect("bind")
        .local_addr()
        .expect("addr")
        .port()
}

/// A real master with `conf` (as Java system properties; the secret in `_SPARK_AUTH_SECRET`
/// when `spark.authenticate=true` is among them), once it is the leader.
async fn spark_master(tag: &str, conf: &[(&str, &str)]) -> SparkMaster {
    spark_daemon(tag, conf, None).await
}

/// A master, or with `master` a worker of that master once it has registered.
async fn spark_daemon(tag: &str, conf: &[(&str, &str)], master: Option<u16>) -> SparkMaster {
    let dir = std::env::temp_dir().join(format!(
        "sparkaudit-{tag}-{}-{}",
        std::process::id(),
        free_port()
    ));
    std::fs::create_dir_all(dir.join("conf")).expect("dir");
    let (port, ui_port, rest_port) = (free_port(), free_port(), free_port());
    let mut opts = format!("-Dspark.master.rest.port={rest_port}");
    for (k, v) in conf {
        opts.push_str(&format!(" -D{k}={v}"));
    }
    let log = std::fs::File::create(dir.join("out.log")).expect("log");
    let mut cmd = Command::new(spark_home().join("bin/spark-class"));
    match master {
        None => cmd.arg("org.apache.spark.deploy.master.Master"),
        Some(_) => cmd.arg("org.apache.spark.deploy.worker.Worker"),
    };
    cmd.args(["--host", "127.0.0.1", "--port", &port.to_string()])
        .args(["--webui-port", &ui_port.to_string()]);
    if let Some(m) = master {
        cmd.args(["--cores", "1", "--memory", "512m"])
            .arg(format!("spark://127.0.0.1:{m}"))
            .env("SPARK_WORKER_DIR", dir.join("work"));
    }
    cmd.env("SPARK_CONF_DIR", dir.join("conf"))
        .env("SPARK_DAEMON_JAVA_OPTS", opts)
        .env("SPARK_DAEMON_MEMORY", "256m")
        .stdout(Stdio::from(log.try_clone().expect("log")))
        .stderr(Stdio::from(log));
    if conf.contains(&("spark.authenticate", "true")) {
        cmd.env("_SPARK_AUTH_SECRET", SECRET);
    }
    let ready = if master.is_some() {
        "Successfully registered with master"
    } else {
        "I have been elected leader"
    };
    let mut m = SparkMaster {
        child: cmd.spawn().expect("spark-class"),
        dir,
        port,
        ui_port,
        rest_port,
    };
    let start = Instant::now();
    loop {
        if m.log().contains(ready) {
            return m;
        }
        let exited = m.child.try_wait().ok().flatten();
        assert!(
            exited.is_none() && start.elapsed() < PATIENCE,
            "the Spark daemon did not start:\n{}",
            m.log()
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

fn secret_file(dir: &std::path::Path) -> PathBuf {
    let path = dir.join("audit-secret");
    std::fs::write(&path, SECRET).expect("secret file");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).expect("mode");
    }
    path
}

/// Audits `m` through the library (for the assertions) and through the binary (its report and
/// exit status), with the secret when `with_secret`; writes the binary's report where
/// `SPARKWIRE_AUDIT_REPORTS` says.
async fn audit_both(name: &str, m: &SparkMaster, with_secret: bool) -> (AuditReport, i32, String) {
    let mut o = AuditOptions::new("127.0.0.1", m.port);
    o.rest_port = HttpPort::At(m.rest_port);
    o.ui_port = HttpPort::At(m.ui_port);
    if with_secret {
        o.secret = Some(SECRET.into());
    }
    let report = audit(&o).await.expect("audited");
    let mut args = vec![
        "spark".to_string(),
        "audit".into(),
        format!("spark://127.0.0.1:{}", m.port),
        "--rest-port".into(),
        m.rest_port.to_string(),
        "--ui-port".into(),
        m.ui_port.to_string(),
    ];
    if with_secret {
        args.push("--secret-file".into());
        args.push(secret_file(&m.dir).display().to_string());
    }
    let out = tokio::task::spawn_blocking(move || {
        Command::new(env!("CARGO_BIN_EXE_sparkwire"))
            .args(&args)
            .output()
            .expect("the binary runs")
    })
    .await
    .expect("task");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    if let Ok(dir) = std::env::var("SPARKWIRE_AUDIT_REPORTS") {
        let _ = std::fs::create_dir_all(&dir);
        let _ = std::fs::write(PathBuf::from(dir).join(format!("{name}.txt")), &text);
    }
    println!("{text}");
    assert!(!text.contains(SECRET), "the report never shows the secret");
    (report, out.status.code().expect("an exit status"), text)
}

fn outcome(r: &AuditReport, id: &str) -> Outcome {
    r.check(id)
        .unwrap_or_else(|| panic!("check {id} in\n{}", r.render()))
        .outcome
}

/// The master changed nothing: it registered nothing and still runs.
fn unchanged(m: &mut SparkMaster) {
    let log = m.log();
    for word in ["Registering worker", "Registering app", "Driver submitted"] {
        assert!(
            !log.contains(word),
            "the audit made the master log {word:?}:\n{log}"
        );
    }
    assert!(
        m.child.try_wait().expect("wait").is_none(),
        "the master still runs"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "starts a real Spark master (SPARK_HOME)"]
async fn a_master_without_authentication_and_with_rest_is_open() {
    let mut m = spark_master("off", &[("spark.master.rest.enabled", "true")]).await;
    let (r, code, text) = audit_both("auth-off", &m, false).await;
    assert_eq!(code, 1, "{text}");
    assert_eq!(r.facts.rpc_without_auth, Some(true), "{text}");
    assert_eq!(r.facts.role, Some(TargetRole::Master));
    assert_eq!(outcome(&r, "rpc-auth"), Outcome::Finding(Severity::High));
    assert_eq!(outcome(&r, "rest"), Outcome::Finding(Severity::High));
    assert!(
        r.facts.state_read,
        "the real master answers RequestMasterState: {text}"
    );
    assert_eq!(outcome(&r, "state"), Outcome::Pass);
    assert_eq!(r.facts.engine, Some(false));
    assert_eq!(r.facts.sasl, None);
    assert!(r.facts.web_ui.as_ref().is_some_and(|a| a.status == 200));
    unchanged(&mut m);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "starts a real Spark master (SPARK_HOME)"]
async fn a_master_with_sasl_authenticates_but_does_not_encrypt() {
    let mut m = spark_master("sasl", &[("spark.authenticate", "true")]).await;
    let (r, code, text) = audit_both("sasl", &m, true).await;
    assert_eq!(code, 1, "{text}");
    assert_eq!(outcome(&r, "rpc-auth"), Outcome::Pass, "{text}");
    let offer = r.facts.sasl.as_ref().expect("SASL is taken");
    assert_eq!(
        offer.qop,
        vec!["auth-conf", "auth"],
        "Spark's server offers both"
    );
    assert_eq!(r.facts.engine, Some(false));
    assert_eq!(r.facts.legacy_engine, Some(false));
    assert_eq!(outcome(&r, "downgrade"), Outcome::Finding(Severity::Medium));
    assert_eq!(r.facts.secret_session, Some(Negotiated::Sasl));
    assert_eq!(r.facts.role, Some(TargetRole::Master));
    assert!(r.facts.state_read, "read with the secret: {text}");
    assert!(
        r.facts.releases.contains(&release()),
        "{:?}",
        r.facts.releases
    );
    assert_eq!(outcome(&r, "rest"), Outcome::Pass);
    assert_eq!(r.findings().count(), 1, "{text}");
    unchanged(&mut m);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "starts a real Spark master (SPARK_HOME)"]
async fn a_master_with_crypto_takes_sasl_beside_it() {
    let mut m = spark_master(
        "crypto",
        &[
            ("spark.authenticate", "true"),
            ("spark.network.crypto.enabled", "true"),
        ],
    )
    .await;
    let (r, code, text) = audit_both(&format!("crypto-{}", release()), &m, true).await;
    assert_eq!(code, 1, "{text}");
    assert_eq!(outcome(&r, "rpc-auth"), Outcome::Pass, "{text}");
    assert!(r.facts.sasl.is_some(), "SASL fallback is Spark's default");
    // Spark 4.1 and later serve REST by default, even with spark.authenticate on.
    let rest_by_default = !release().starts_with("3.") && !release().starts_with("4.0.");
    let rest_findings = usize::from(rest_by_default);
    assert_eq!(
        outcome(&r, "rest") == Outcome::Finding(Severity::High),
        rest_by_default,
        "{text}"
    );
    if original_protocol() {
        // Spark 2.2 to 3.1.2's crypto is the original AES protocol: the audit names its CVE.
        assert_eq!(r.facts.legacy_engine, Some(true), "{text}");
        assert_eq!(
            outcome(&r, "legacy-engine"),
            Outcome::Finding(Severity::High)
        );
        assert_eq!(r.facts.engine, Some(false));
        assert_eq!(r.facts.secret_session, Some(Negotiated::Sasl));
        assert_eq!(r.findings().count(), 2 + rest_findings, "{text}");
    } else {
        assert_eq!(r.facts.legacy_engine, Some(false), "{text}");
        assert_eq!(r.facts.engine, Some(true));
        assert_eq!(outcome(&r, "downgrade"), Outcome::Finding(Severity::Medium));
        assert_eq!(
            r.facts.secret_session,
            Some(Negotiated::Engine(EngineVersion::V1))
        );
        assert_eq!(r.findings().count(), 1 + rest_findings, "{text}");
    }
    assert!(r.facts.state_read, "{text}");
    unchanged(&mut m);
}

/// Whether `$SPARK_HOME` speaks the original AES auth protocol: releases before 3.1.3, which
/// took the X25519 engine that fixed CVE-2021-38296 (3.1.3's crypto is the engine: its audit
/// took a session of engine version 1).
fn original_protocol() -> bool {
    let r = release();
    let mut parts = r.split('.').map(|p| p.parse::<u32>().unwrap_or(0));
    let v = (
        parts.next().unwrap_or(0),
        parts.next().unwrap_or(0),
        parts.next().unwrap_or(0),
    );
    v < (3, 1, 3)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "starts a real Spark master (SPARK_HOME)"]
async fn a_hardened_master_has_no_finding() {
    let mut m = spark_master(
        "hardened",
        &[
            ("spark.authenticate", "true"),
            ("spark.network.crypto.enabled", "true"),
            ("spark.network.crypto.saslFallback", "false"),
            ("spark.network.crypto.authEngineVersion", "2"),
        ],
    )
    .await;
    let (r, code, text) = audit_both("hardened", &m, true).await;
    assert_eq!(code, 0, "{text}");
    assert_eq!(r.facts.engine, Some(true));
    assert_eq!(r.facts.sasl, None, "{text}");
    assert_eq!(
        r.facts.secret_session,
        Some(Negotiated::Engine(EngineVersion::V2))
    );
    assert!(r.facts.state_read, "{text}");
    unchanged(&mut m);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "starts a real Spark master (SPARK_HOME, 4.0 or later)"]
async fn a_master_with_aes_gcm_is_read_through_a_gcm_session() {
    // Spark 4.0's GcmTransportCipher: the audit's requests with the secret go through sparkwire's
    // segmented AES-GCM, and the real master's answers open under it.
    let mut m = spark_master(
        "gcm",
        &[
            ("spark.authenticate", "true"),
            ("spark.network.crypto.enabled", "true"),
            ("spark.network.crypto.saslFallback", "false"),
            ("spark.network.crypto.cipher", "AES/GCM/NoPadding"),
            // Spark 4.1 serves REST by default, secret or not: off here, the cipher is the point.
            ("spark.master.rest.enabled", "false"),
        ],
    )
    .await;
    let (r, code, text) = audit_both("gcm", &m, true).await;
    assert_eq!(code, 0, "{text}");
    assert_eq!(
        r.facts.secret_session,
        Some(Negotiated::EngineGcm(EngineVersion::V1)),
        "{text}"
    );
    assert_eq!(r.facts.role, Some(TargetRole::Master));
    assert!(
        r.facts.state_read,
        "the state answer opened under AES-GCM: {text}"
    );
    // Many messages each way on one connection: Spark 4.1 and later read them all (4.0's reader
    // opens only a connection's first message, which is why the audit asks each on its own).
    if !release().starts_with("4.0.") {
        let tcp = tokio::net::TcpStream::connect(("127.0.0.1", m.port))
            .await
            .expect("connect");
        let auth = ClientAuth {
            cipher: TransportCipher::Gcm,
            sasl_fallback: false,
            ..ClientAuth::crypto(SECRET)
        };
        let mut s = client_handshake(tcp, &auth).await.expect("a GCM session");
        for (id, name, exists) in [
            (1, "Master", true),
            (2, "Worker", false),
            (3, "Master", true),
        ] {
            assert_eq!(ask_exists(&mut s, id, name).await, exists, "ask {id}");
        }
    }
    unchanged(&mut m);
}

/// `CheckExistence(name)` asked as request `id` over `s`, and the Boolean answered.
async fn ask_exists<S: AsyncRead + AsyncWrite + Unpin>(s: &mut S, id: i64, name: &str) -> bool {
    let body = RequestMessage {
        sender: None,
        receiver: Some(("127.0.0.1".into(), 1)),
        endpoint: VERIFIER.into(),
        stream: check_existence_stream(name, Version::V2)
            .expect("stream")
            .into(),
    }
    .encode()
    .expect("header");
    let f = Frame::RpcRequest {
        request_id: id,
        body: body.into(),
    };
    s.write_all(&f.encode().expect("frame"))
        .await
        .expect("write");
    s.flush().await.expect("flush");
    let mut d = FrameDecoder::default();
    let mut buf = [0u8; 4096];
    loop {
        if let Some(item) = d.next_item() {
            let Ok(Frame::RpcResponse { request_id, body }) = item.frame else {
                panic!("a response to {id}");
            };
            assert_eq!(request_id, id);
            let g = parse_stream(&body).expect("stream");
            return matches!(reply_value(g.root_node()), Ok(ReplyValue::Bool(true)));
        }
        let n = tokio::time::timeout(PATIENCE, s.read(&mut buf))
            .await
            .expect("an answer in time")
            .expect("read");
        assert!(n > 0, "the master closed the session");
        d.push(&buf[..n]);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "starts a real Spark master and worker (SPARK_HOME)"]
async fn a_worker_without_authentication_is_reported_as_a_worker() {
    let m = spark_master("wmaster", &[]).await;
    let mut w = spark_daemon("worker", &[], Some(m.port)).await;
    let (r, code, text) = audit_both("worker-auth-off", &w, false).await;
    assert_eq!(code, 1, "{text}");
    assert_eq!(r.facts.role, Some(TargetRole::Worker), "{text}");
    assert_eq!(outcome(&r, "rpc-auth"), Outcome::Finding(Severity::High));
    assert!(
        r.facts.state_read,
        "the worker answers RequestWorkerState: {text}"
    );
    assert!(
        r.facts.web_ui.as_ref().is_some_and(|a| a.status == 200),
        "{text}"
    );
    let log = w.log();
    assert!(
        !log.contains("Asked to launch"),
        "the audit launched nothing:\n{log}"
    );
    assert!(
        w.child.try_wait().expect("wait").is_none(),
        "the worker still runs"
    );
}
