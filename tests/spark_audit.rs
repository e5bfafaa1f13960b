//! `sparkwire spark audit` against a sparkwire master's Spark front (in this process) with each
//! of its security settings, against ports that are not Spark's, and through the binary for its
//! exit statuses. The real Spark masters (auth off, SASL, crypto) are in `spark_audit_real`.

use std::net::SocketAddr;
use std::process::Command;
use std::time::Duration;

use sparkwire::connection::{connect_tcp, Connection, ConnectionConfig, Security};
use sparkwire::messages::deploy::{MasterStateResponse, RequestMasterState};
use sparkwire::messages::DeployMessage;
use sparkwire::reference::master::{Master, MasterConfig, MasterHandle};
use sparkwire::spark::audit::{
    audit, AuditError, AuditOptions, AuditReport, HttpPort, Outcome, Severity, TargetRole,
    READ_ONLY,
};
use sparkwire::spark::auth::{EngineVersion, Negotiated, ServerAuth, TransportCipher};
use sparkwire::spark::{start_front, start_rest, FrontConfig, RestConfig, ServerHandle};
use sparkwire::wire::handshake::{Role, Secret};
use sparkwire::wire::Reply;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

const SECRET: &str = "audit-s3cret";

fn security(secret: bool) -> Security {
    if secret {
        Security::with_secret(Secret::new(SECRET.as_bytes().to_vec()).expect("secret"))
    } else {
        Security::default()
    }
}

/// A master, its Spark front with `auth` (and the master's secret when `auth` is set), and its
/// REST server when it has no secret.
async fn cluster(auth: Option<ServerAuth>) -> (MasterHandle, ServerHandle, Option<ServerHandle>) {
    let secret = auth.is_some();
    let master = Master::start(MasterConfig {
        port: 0,
        security: security(secret),
        ..MasterConfig::default()
    })
    .await
    .expect("the master starts");
    let mut config = FrontConfig::new("127.0.0.1", 0, master.addr());
    config.auth = auth;
    config.master_security = security(secret);
    let front = start_front(config).await.expect("the front starts");
    let rest = if secret {
        None
    } else {
        Some(
            start_rest(RestConfig::new("127.0.0.1", 0, master.addr()))
                .await
                .expect("the REST server starts"),
        )
    };
    (master, front, rest)
}

/// A port nothing listens on.
async fn closed_port() -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    l.local_addr().expect("addr").port()
}

fn options(front: SocketAddr, rest: u16) -> AuditOptions {
    let mut o = AuditOptions::new("127.0.0.1", front.port());
    o.rest_port = HttpPort::At(rest);
    o.ui_port = HttpPort::Off;
    o.timeout = Duration::from_secs(10);
    o
}

fn outcome(r: &AuditReport, id: &str) -> Outcome {
    r.check(id)
        .unwrap_or_else(|| panic!("check {id} in\n{}", r.render()))
        .outcome
}

/// The master's workers, applications and drivers, asked over sparkwire's own wire.
async fn state_counts(master: &MasterHandle, secret: bool) -> (usize, usize, usize) {
    let stream = connect_tcp("127.0.0.1", master.addr().port(), Duration::from_secs(10))
        .await
        .expect("tcp");
    let config = ConnectionConfig::default().with_security(security(secret));
    let ui: Connection<DeployMessage> = Connection::connect(stream, Role::Ui, "ui", config)
        .await
        .expect("a ui connection");
    match ui
        .ask(DeployMessage::from(RequestMasterState::new()))
        .await
        .expect("the state")
    {
        Reply::Message(DeployMessage::MasterStateResponse(s)) => {
            let s: MasterStateResponse = s;
            (
                s.workers.len(),
                s.active_apps.len() + s.completed_apps.len(),
                s.active_drivers.len() + s.completed_drivers.len(),
            )
        }
        other => panic!("a MasterStateResponse, not {other:?}"),
    }
}

#[tokio::test]
async fn a_master_without_a_secret_is_reported_open_over_rpc_and_rest() {
    let (master, front, rest) = cluster(None).await;
    let rest = rest.expect("REST");
    let r = audit(&options(front.addr(), rest.addr().port()))
        .await
        .expect("audited");
    let text = r.render();
    assert_eq!(r.facts.rpc_without_auth, Some(true), "{text}");
    assert_eq!(r.facts.role, Some(TargetRole::Master));
    assert_eq!(outcome(&r, "rpc-auth"), Outcome::Finding(Severity::High));
    assert_eq!(outcome(&r, "rest"), Outcome::Finding(Severity::High));
    assert!(
        r.facts
            .rest
            .as_ref()
            .is_some_and(|a| a.body.contains("SubmissionStatusResponse")),
        "{:?}",
        r.facts.rest
    );
    // The front asks the master in sparkwire's own wire and cannot write Spark's state objects:
    // it refuses the ask, and the report says so.
    assert!(!r.facts.state_read);
    let state = r.check("state").expect("a state check");
    assert_eq!(state.outcome, Outcome::Info, "{text}");
    assert!(state.text.contains("refused"), "{text}");
    assert_ne!(r.facts.engine, Some(true));
    assert_ne!(r.facts.legacy_engine, Some(true));
    assert_eq!(r.findings().count(), 2, "{text}");
    assert!(text.contains(READ_ONLY));
    assert_eq!(
        state_counts(&master, false).await,
        (0, 0, 0),
        "the audit changed nothing"
    );
}

#[tokio::test]
async fn a_master_taking_both_schemes_is_reported_with_the_sasl_downgrade() {
    let (master, front, _) = cluster(Some(ServerAuth::new(SECRET))).await;
    let closed = closed_port().await;
    let r = audit(&options(front.addr(), closed))
        .await
        .expect("audited");
    let text = r.render();
    assert_eq!(r.facts.rpc_without_auth, Some(false), "{text}");
    assert_eq!(outcome(&r, "rpc-auth"), Outcome::Pass);
    assert_eq!(r.facts.engine, Some(true));
    assert_eq!(r.facts.legacy_engine, Some(false));
    let offer = r.facts.sasl.as_ref().expect("SASL is taken");
    // As Spark's server offers it (SparkSaslServer): encryption first, then authentication only.
    assert_eq!(offer.qop, vec!["auth-conf", "auth"]);
    assert_eq!(outcome(&r, "downgrade"), Outcome::Finding(Severity::Medium));
    assert_eq!(outcome(&r, "rest"), Outcome::Pass);
    assert!(!r.facts.state_read);
    assert_eq!(r.facts.role, None);
    assert_eq!(r.findings().count(), 1, "{text}");

    // With the secret: it is taken, and the state is read through the session.
    let mut o = options(front.addr(), closed);
    o.secret = Some(SECRET.into());
    let r = audit(&o).await.expect("audited");
    assert_eq!(
        r.facts.secret_session,
        Some(Negotiated::Engine(EngineVersion::V1)),
        "{}",
        r.render()
    );
    assert_eq!(outcome(&r, "secret"), Outcome::Pass);
    assert_eq!(r.facts.role, Some(TargetRole::Master));
    assert!(
        r.check("state").is_some_and(|c| c.text.contains("refused")),
        "the state ask went through the session: {}",
        r.render()
    );

    // The wrong secret opens nothing, and says so.
    o.secret = Some("not-the-secret".into());
    let r = audit(&o).await.expect("audited");
    assert_eq!(r.facts.secret_session, None);
    assert_eq!(outcome(&r, "secret"), Outcome::Info);
    assert!(!r.facts.state_read);
    assert_eq!(state_counts(&master, true).await, (0, 0, 0));
}

#[tokio::test]
async fn a_hardened_master_has_no_finding_and_its_engine_version_and_cipher_are_found() {
    let auth = ServerAuth {
        sasl_fallback: false,
        version: EngineVersion::V2,
        cipher: TransportCipher::Gcm,
        ..ServerAuth::new(SECRET)
    };
    let (_master, front, _) = cluster(Some(auth)).await;
    let mut o = options(front.addr(), closed_port().await);
    o.secret = Some(SECRET.into());
    let r = audit(&o).await.expect("audited");
    let text = r.render();
    assert_eq!(r.findings().count(), 0, "{text}");
    assert_eq!(r.facts.sasl, None, "SASL is refused");
    assert_eq!(outcome(&r, "downgrade"), Outcome::Pass);
    assert_eq!(
        r.facts.secret_session,
        Some(Negotiated::EngineGcm(EngineVersion::V2)),
        "AES-CTR and version 1's key fail the first request; AES-GCM with version 2's carries \
         it: {text}"
    );
    assert!(text.contains("findings: 0"));
}

/// A one-connection-at-a-time HTTP server answering every request with `body` as JSON.
async fn json_server(body: &'static str) -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let port = l.local_addr().expect("addr").port();
    tokio::spawn(async move {
        while let Ok((mut s, _)) = l.accept().await {
            let mut buf = [0u8; 4096];
            let _ = s.read(&mut buf).await;
            let head = format!(
                "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\
                 Connection: close\r\n\r\n",
                body.len()
            );
            let _ = s.write_all(head.as_bytes()).await;
            let _ = s.write_all(body.as_bytes()).await;
            let _ = s.shutdown().await;
        }
    });
    port
}

#[tokio::test]
async fn secrets_on_the_web_ui_are_reported_redacted() {
    let (_master, front, _) = cluster(Some(ServerAuth::new(SECRET))).await;
    let ui = json_server(
        r#"{"url":"spark://m:7077","activeapps":[{"name":"etl","environment":{"_SPARK_AUTH_SECRET":"leaked-value-123"}}]}"#,
    )
    .await;
    let mut o = options(front.addr(), closed_port().await);
    o.ui_port = HttpPort::At(ui);
    let r = audit(&o).await.expect("audited");
    let text = r.render();
    assert_eq!(
        outcome(&r, "web-ui"),
        Outcome::Finding(Severity::High),
        "{text}"
    );
    assert_eq!(r.facts.web_ui_exposures.len(), 1);
    assert!(
        text.contains("_SPARK_AUTH_SECRET=<16 characters, redacted>"),
        "{text}"
    );
    assert!(
        !text.contains("leaked-value-123"),
        "the report never shows a secret"
    );
}

#[tokio::test]
async fn a_port_that_is_not_spark_s_cannot_be_audited() {
    let closed = closed_port().await;
    assert!(matches!(
        audit(&options(SocketAddr::from(([127, 0, 0, 1], closed)), closed)).await,
        Err(AuditError::Connect(..))
    ));
    // An HTTP server on the RPC port: its answer is not Spark's framing.
    let http = json_server("{}").await;
    let got = audit(&options(SocketAddr::from(([127, 0, 0, 1], http)), closed)).await;
    assert!(matches!(got, Err(AuditError::NotSpark(..))), "{got:?}");
    // A port that takes connections and never answers.
    let silent = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let port = silent.local_addr().expect("addr").port();
    tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((s, _)) = silent.accept().await {
            held.push(s);
        }
    });
    let mut o = options(SocketAddr::from(([127, 0, 0, 1], port)), closed);
    o.timeout = Duration::from_millis(500);
    let got = audit(&o).await;
    assert!(matches!(got, Err(AuditError::NotSpark(..))), "{got:?}");
}

/// `sparkwire spark audit ARGS`: its exit status and standard output.
async fn run_audit(args: Vec<String>) -> (i32, String) {
    tokio::task::spawn_blocking(move || {
        let out = Command::new(env!("CARGO_BIN_EXE_sparkwire"))
            .arg("spark")
            .arg("audit")
            .args(&args)
            .output()
            .expect("the binary runs");
        (
            out.status.code().expect("an exit status"),
            String::from_utf8_lossy(&out.stdout).into_owned(),
        )
    })
    .await
    .expect("task")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_command_exits_0_without_findings_1_with_and_2_when_it_cannot_audit() {
    let (_m1, open, _rest) = cluster(None).await;
    let (code, out) = run_audit(vec![
        format!("spark://127.0.0.1:{}", open.addr().port()),
        "--no-http".into(),
    ])
    .await;
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("FINDING high") && out.contains("rpc-auth"),
        "{out}"
    );
    assert!(out.contains("read-only"), "{out}");

    let hardened = ServerAuth {
        sasl_fallback: false,
        ..ServerAuth::new(SECRET)
    };
    let (_m2, strict, _) = cluster(Some(hardened)).await;
    let dir = std::env::temp_dir().join(format!("sparkwire-audit-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let secret_file = dir.join("secret");
    std::fs::write(&secret_file, SECRET).expect("secret file");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&secret_file, std::fs::Permissions::from_mode(0o600))
            .expect("mode");
    }
    let (code, out) = run_audit(vec![
        format!("spark://127.0.0.1:{}", strict.addr().port()),
        "--no-http".into(),
        "--secret-file".into(),
        secret_file.display().to_string(),
    ])
    .await;
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("findings: 0"), "{out}");
    assert!(!out.contains(SECRET), "the secret is never printed");

    let (code, out) = run_audit(vec![
        format!("127.0.0.1:{}", closed_port().await),
        "--no-http".into(),
    ])
    .await;
    assert_eq!(code, 2, "{out}");
    assert!(out.contains("could not audit"), "{out}");
}

#[tokio::test]
async fn a_master_opted_into_the_original_aes_protocol_is_reported_with_the_cve_finding() {
    let mut auth = ServerAuth::new(SECRET);
    auth.set("sparkwire.legacyAuthEngine", "true")
        .expect("setting");
    auth.sasl_fallback = false;
    let (master, front, _) = cluster(Some(auth)).await;
    let r = audit(&options(front.addr(), closed_port().await))
        .await
        .expect("audited");
    let text = r.render();
    assert_eq!(r.facts.legacy_engine, Some(true), "{text}");
    assert_eq!(r.facts.engine, Some(true), "{text}");
    assert_eq!(
        outcome(&r, "legacy-engine"),
        Outcome::Finding(Severity::High)
    );
    assert!(
        r.check("legacy-engine")
            .is_some_and(|c| c.text.contains("CVE-2021-38296")),
        "{text}"
    );
    // The probe's challenge was sealed with no secret: nothing was registered.
    assert_eq!(state_counts(&master, true).await, (0, 0, 0));
}
