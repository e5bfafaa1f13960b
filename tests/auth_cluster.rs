//! Whole clusters with security on: `local-cluster` runs its job authenticated by default (its
//! master refuses a peer without the run's secret, and the job still succeeds through it), and
//! TLS works end to end: a master and workers as processes with `--tls-cert`, `--tls-key`,
//! `--tls-ca` and `--secret-file`, the driver in the test with the same, and the executors the
//! workers launch, which get the authorities and the secret from the worker.

mod common;
use common::driver;

use common::processes::BIN;
use driver::*;
use sparkwire::connection::{Connection, ConnectionConfig, ConnectionError};
use sparkwire::messages::DeployMessage;
use sparkwire::node::url::MasterUrl;
use sparkwire::wire::handshake::{HandshakeError, RefusalReason, Role};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::net::TcpStream;

async fn plain_ui(url: &str) -> Result<Connection<DeployMessage>, ConnectionError> {
    let master = MasterUrl::parse(url).expect("a master URL").masters[0].clone();
    let stream = TcpStream::connect((master.host.as_str(), master.port as u16))
        .await
        .expect("connect");
    Connection::connect(stream, Role::Ui, "intruder", ConnectionConfig::default()).await
}

/// Starts `local-cluster ARGS` with a slow job, tries its master without a secret once it
/// printed its URL, and returns that outcome, the exit code and the output.
async fn probe_local_cluster(
    args: &[&str],
) -> (
    Result<Connection<DeployMessage>, ConnectionError>,
    Option<i32>,
    String,
) {
    let mut child = tokio::process::Command::new(BIN)
        .arg("local-cluster")
        .args([
            "--workers",
            "1",
            "--job",
            "sleep",
            "--partitions",
            "2",
            "--param",
            "300",
        ])
        .args(args)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("local-cluster runs");
    let mut lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
    let first = patiently("the first line", lines.next_line())
        .await
        .expect("read")
        .expect("a line");
    let url = first
        .strip_prefix("local-cluster: master ")
        .and_then(|rest| rest.split(',').next())
        .unwrap_or_else(|| panic!("unexpected first line {first:?}"))
        .to_string();
    let probe = plain_ui(&url).await;
    let mut output = first + "\n";
    while let Ok(Some(line)) = lines.next_line().await {
        output.push_str(&line);
        output.push('\n');
    }
    let status = patiently("local-cluster's exit", child.wait())
        .await
        .expect("exit");
    (probe, status.code(), output)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn local_cluster_runs_its_job_authenticated_by_default_and_unauthenticated_only_on_request() {
    let (probe, code, output) = probe_local_cluster(&[]).await;
    assert!(
        matches!(
            probe,
            Err(ConnectionError::Handshake(HandshakeError::Refused {
                reason: RefusalReason::AuthRequired,
                ..
            }))
        ),
        "the master of a default local-cluster refuses a peer without the secret"
    );
    assert_eq!(
        code,
        Some(0),
        "the job ran through the authenticated cluster: {output}"
    );
    assert!(
        output.contains("authentication: a random shared secret"),
        "{output}"
    );
    assert!(output.contains("2 tasks slept 300 ms each"), "{output}");

    let (probe, code, output) = probe_local_cluster(&["--no-auth"]).await;
    assert!(probe.is_ok(), "--no-auth turns authentication off");
    assert_eq!(code, Some(0), "{output}");
    assert!(output.contains("authentication: off"), "{output}");
}

#[cfg(feature = "tls")]
mod tls {
    use std::path::Path;
    use std::sync::Arc;
    use std::time::Duration;

    use rcgen::{BasicConstraints, CertificateParams, IsCa, KeyPair};
    use sparkwire::connection::{write_secret_file, Security, TlsSettings};
    use sparkwire::reference::driver::Driver;
    use sparkwire::reference::local_cluster::{ClusterConfig, LocalCluster};
    use sparkwire::reference::task::SumSquaresJob;
    use sparkwire::wire::handshake::Secret;

    use super::plain_ui;
    use crate::common::processes::BIN;
    use crate::driver::*;

    /// A certificate authority and a certificate for 127.0.0.1 and localhost signed by it, as PEM
    /// files in `dir`: (ca, cert, key).
    fn certificates(dir: &Path) -> (String, String, String) {
        let ca_key = KeyPair::generate().expect("CA key");
        let mut ca_params = CertificateParams::new(Vec::<String>::new()).expect("CA params");
        ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        let ca = ca_params.self_signed(&ca_key).expect("CA certificate");
        let key = KeyPair::generate().expect("key");
        let cert = CertificateParams::new(vec!["127.0.0.1".to_string(), "localhost".to_string()])
            .expect("params")
            .signed_by(&key, &ca, &ca_key)
            .expect("certificate");
        let write = |name: &str, text: String| {
            let path = dir.join(name);
            std::fs::write(&path, text).expect("write");
            path.display().to_string()
        };
        (
            write("ca.pem", ca.pem()),
            write("cert.pem", cert.pem()),
            write("key.pem", key.serialize_pem()),
        )
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn tls_and_a_secret_end_to_end_through_master_worker_driver_and_executor_processes() {
        let dir = std::env::temp_dir().join(format!("sparkwire-tls-e2e-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("dir");
        let (ca, cert, key) = certificates(&dir);
        let secret = Secret::new(b"tls-run-secret-42".to_vec()).expect("secret");
        let secret_path = dir.join("secret");
        write_secret_file(&secret_path, &secret).expect("secret file");
        let secret_arg = secret_path.display().to_string();

        let mut config = ClusterConfig::new(BIN, 1, 2, 1024);
        let security_args: Vec<String> = [
            "--secret-file",
            &secret_arg,
            "--tls-cert",
            &cert,
            "--tls-key",
            &key,
            "--tls-ca",
            &ca,
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        config.master_args = ["--strict".to_string()]
            .into_iter()
            .chain(security_args.iter().cloned())
            .collect();
        config.worker_args = security_args;
        let cluster = LocalCluster::start(&config).await.expect("cluster starts");

        // Without TLS, nothing gets through: the master only speaks TLS.
        assert!(plain_ui(cluster.master_url()).await.is_err());

        let (mut driver_config, observer) = strict_config("sum over TLS");
        driver_config.masters = vec![cluster.master_url().to_string()];
        driver_config.security = Security {
            secret: Some(secret),
            admin_secret: None,
            tls: Some(
                TlsSettings::from_files(
                    Some(Path::new(&cert)),
                    Some(Path::new(&key)),
                    Some(Path::new(&ca)),
                )
                .expect("TLS settings"),
            ),
        };
        let driver = Driver::start(driver_config).await.expect("driver");
        wait_status(&driver, "an executor over TLS", |s| {
            s.ready_executors() == 1
        })
        .await;
        let job = SumSquaresJob {
            partitions: 4,
            n: 10_000,
        };
        let expected = format!("Sum of squares of 0..10000 is {}", job.expected());
        let result = patiently("the job", driver.run(Arc::new(job)))
            .await
            .expect("driver")
            .expect("job");
        assert_eq!(result.output, expected);
        driver.stop().await;
        let verdict = observer.verdict(true);
        assert!(verdict.is_clean(), "{verdict}: {:?}", verdict.examples);
        let output = cluster.shutdown(Duration::from_secs(5)).await;
        assert_eq!(master_violations(&output), Some(0), "{output:?}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
