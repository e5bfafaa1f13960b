//! The client commands on a secured cluster: a `sparkwire master` and `sparkwire worker` started
//! with `--secret-file`, and `sparkwire submit` (both deploy modes), `sparkwire driver` and
//! `sparkwire status` given the same secret with `--secret-file`. With it they run jobs (the
//! executors the worker starts authenticate to the driver with the secret the worker hands
//! them); without it, or with another secret, they fail with words that say so and name the
//! flag, exit non-zero, and the master registers nothing.

use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use common::cluster;
mod common;

use common::files::temp_dir;
use common::processes::{announced_master, master_args, text, worker_args, Proc, BIN};

use sparkwire::connection::{write_secret_file, Security};
use sparkwire::messages::deploy::MasterStateResponse;
use sparkwire::messages::{Addr, DriverState};
use sparkwire::wire::handshake::Secret;

/// How long a wait may last before the test fails (the machine is shared and loaded).
const PATIENCE: Duration = Duration::from_secs(120);
const SECRET: &str = "the-cluster-secret-for-the-client-commands";

/// `sparkwire ARGS` with neither of the variables a worker hands over set, so that only the
/// flags given count.
fn command(args: &[&str]) -> Command {
    let mut c = common::processes::command(args);
    c.env_remove("SPARKWIRE_SECRET_FILE")
        .env_remove("SPARKWIRE_TLS_CA");
    c
}

/// `sparkwire ARGS` started, its output read line by line.
fn start(args: &[&str]) -> Proc {
    let mut c = command(args);
    c.stderr(Stdio::null());
    Proc::spawn(c)
}

/// Runs `sparkwire ARGS` to its end.
fn run(args: &[&str]) -> Output {
    command(args).output().expect("run sparkwire")
}

/// A private (0600) file holding `text`.
fn secret_file(dir: &Path, name: &str, text: &str) -> String {
    let path = dir.join(name);
    let secret = Secret::new(text.as_bytes().to_vec()).expect("a secret");
    write_secret_file(&path, &secret).expect("written");
    path.display().to_string()
}

/// A master and a worker of `cores` cores, both with the secret file `secret`; the worker runs
/// only the sparkwire binary (as executors, and as drivers in cluster deploy mode).
struct Cluster {
    url: String,
    master: Addr,
    security: Security,
    _procs: Vec<Proc>,
}

impl Cluster {
    /// `tls`: the flags `--tls-cert`, `--tls-key`, `--tls-ca` of both, and the settings the
    /// test's own connections use.
    fn start(dir: &Path, secret: &str, cores: u32, tls: Option<(&[&str], Security)>) -> Cluster {
        let (tls_args, mut security) = tls.unwrap_or_default();
        security.secret = Secret::new(SECRET.as_bytes().to_vec());
        let mut args = master_args(&["--secret-file", secret]);
        args.extend(tls_args);
        let master = start(&args);
        let line = master.line_within(PATIENCE);
        let (url, addr) = announced_master(&line);
        let work = dir.join("work");
        let cores = cores.to_string();
        let mut args = worker_args(&url, &cores, "4096", work.to_str().expect("utf-8"));
        args.extend(["--allow-exec-any", BIN, "--secret-file", secret]);
        args.extend(tls_args);
        let worker = start(&args);
        let cluster = Cluster {
            url,
            master: addr,
            security,
            _procs: vec![master, worker],
        };
        cluster.wait_state("the worker registered", |s| s.workers.len() == 1);
        cluster
    }

    /// The master's state, asked over a connection that proves the secret (not through the
    /// commands under test).
    fn state(&self) -> MasterStateResponse {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime")
            .block_on(cluster::master_state_with(&self.master, &self.security))
    }

    fn wait_state(
        &self,
        what: &str,
        ok: impl Fn(&MasterStateResponse) -> bool,
    ) -> MasterStateResponse {
        let deadline = Instant::now() + PATIENCE;
        loop {
            let s = self.state();
            if ok(&s) {
                return s;
            }
            assert!(Instant::now() < deadline, "never {what}: {s:?}");
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

fn applications(s: &MasterStateResponse) -> usize {
    s.active_apps.len() + s.completed_apps.len()
}

fn drivers(s: &MasterStateResponse) -> usize {
    s.active_drivers.len() + s.completed_drivers.len()
}

/// Runs `sparkwire ARGS…` (the slices joined); fails the test unless it exits with `code` and
/// prints each of `needles` (on standard output or error). Returns what it printed.
fn expect(args: &[&[&str]], code: i32, needles: &[&str]) -> String {
    let args = args.concat();
    let out = run(&args);
    let printed = text(&out);
    assert_eq!(out.status.code(), Some(code), "{args:?}: {printed}");
    for needle in needles {
        assert!(
            printed.contains(needle),
            "{args:?}: no {needle:?} in {printed}"
        );
    }
    printed
}

/// `submit` in cluster deploy mode, with a driver and an executor that fit one worker of two
/// cores.
const CLUSTER_MODE: [&str; 6] = [
    "--deploy-mode",
    "cluster",
    "--driver-memory",
    "512m",
    "--executor-cores",
    "1",
];

/// The master ran one driver, and it FINISHED.
fn one_driver_finished(state: &MasterStateResponse) {
    assert_eq!(state.completed_drivers.len(), 1, "{state:?}");
    assert_eq!(
        state.completed_drivers[0].state,
        DriverState::Finished,
        "{state:?}"
    );
}

#[test]
fn with_the_secret_submit_in_both_deploy_modes_and_driver_run_jobs_on_a_secured_cluster() {
    let dir = temp_dir("runs");
    let secret = secret_file(&dir, "secret", SECRET);
    // Two cores: in cluster deploy mode the driver takes one, its executor the other.
    let cluster = Cluster::start(&dir, &secret, 2, None);
    let with_secret = ["--master", cluster.url.as_str(), "--secret-file", &secret];

    // Client deploy mode: the driver here dials the master with the secret, and accepts only
    // executors that prove it: a job runs only if the executors the worker starts got the
    // worker's secret (SPARKWIRE_SECRET_FILE) and proved it to the driver.
    expect(
        &[&["submit"], &with_secret, &["--job", "pi"]],
        0,
        &[
            "job pi: Pi is roughly 3.1",
            "validator (driver side, strict): valid",
        ],
    );
    // `sparkwire driver`, the same way.
    expect(
        &[
            &["driver"],
            &with_secret,
            &["--job", "pi", "--executor-cores", "1"],
        ],
        0,
        &["result: Pi is roughly 3.1"],
    );
    // Cluster deploy mode: the driver client proves the secret to submit the driver; the
    // driver, run by the worker, gets the worker's secret from SPARKWIRE_SECRET_FILE.
    expect(
        &[&["submit"], &with_secret, &CLUSTER_MODE],
        0,
        &["Driver successfully submitted as driver-", ": FINISHED"],
    );

    let state = cluster.wait_state("three applications ended", |s| {
        s.completed_apps.len() == 3 && s.active_apps.is_empty()
    });
    one_driver_finished(&state);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn without_the_secret_or_with_another_the_client_commands_fail_clearly_and_change_nothing() {
    let dir = temp_dir("refused");
    let secret = secret_file(&dir, "secret", SECRET);
    let wrong = secret_file(&dir, "wrong", "not-the-cluster-secret-at-all");
    let cluster = Cluster::start(&dir, &secret, 1, None);
    let url = cluster.url.as_str();
    let master = format!("the master at 127.0.0.1:{}", cluster.master.port);
    let mend = "Give --secret-file with the cluster's secret";
    let cases: [(&[&str], &str); 2] = [
        (&[], "refused the handshake: authentication required"),
        (
            &["--secret-file", &wrong],
            "failed: it did not prove the secret given",
        ),
    ];
    for (flags, why) in cases {
        // `submit` in client deploy mode, in cluster deploy mode (no driver is submitted), and
        // `driver` (its job fails: exit 1): each says why, and how to mend it.
        let printed = expect(
            &[&["submit", "--master", url], flags],
            2,
            &[&master, why, mend],
        );
        assert!(!printed.contains("application app-"), "{printed}");
        expect(
            &[
                &["submit", "--master", url, "--deploy-mode", "cluster"],
                flags,
            ],
            2,
            &["no master took the driver", &master, why, mend],
        );
        expect(
            &[&["driver", "--master", url], flags],
            1,
            &[&master, why, mend],
        );
        // `status` is refused (exit 2) and shows nothing.
        let printed = expect(&[&["status", url], flags], 2, &[&master, why, mend]);
        assert!(!printed.contains("WORKERS"), "{printed}");
    }
    // With the secret, `status` shows the master, which has no application.
    expect(
        &[&["status", url, "--secret-file", &secret]],
        0,
        &[
            "workers: 1 alive",
            "RUNNING APPLICATIONS (0)",
            "COMPLETED APPLICATIONS (0)",
        ],
    );
    // SPARKWIRE_SECRET_FILE, as a worker sets it, stands for --secret-file; the flag wins.
    for (variable, flags) in [(&secret, vec![]), (&wrong, vec!["--secret-file", &secret])] {
        let out = command(&[&["status", url][..], &flags].concat())
            .env("SPARKWIRE_SECRET_FILE", variable)
            .output()
            .expect("run");
        assert!(out.status.success(), "{flags:?}: {}", text(&out));
        assert!(text(&out).contains("workers: 1 alive"), "{}", text(&out));
    }
    let out = command(&["status", url])
        .env("SPARKWIRE_SECRET_FILE", &wrong)
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    // The master registered no application and no driver for any of them.
    let state = cluster.state();
    assert_eq!(applications(&state), 0, "{state:?}");
    assert_eq!(drivers(&state), 0, "{state:?}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[cfg(unix)]
#[test]
fn the_client_commands_refuse_a_secret_file_others_may_read() {
    use std::os::unix::fs::PermissionsExt;
    let dir = temp_dir("open-file");
    let path = dir.join("secret");
    std::fs::write(&path, SECRET).expect("write");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).expect("chmod");
    let p = path.display().to_string();
    let nowhere = "sparkwire://127.0.0.1:1";
    let refused = ["is accessible to other users", "chmod 600"];
    // No master is needed: the file is refused before anything is dialled.
    expect(&[&["status", nowhere, "--secret-file", &p]], 2, &refused);
    for command in ["submit", "driver"] {
        expect(
            &[&[command, "--master", nowhere, "--secret-file", &p]],
            2,
            &refused,
        );
    }
    // And the variable a worker sets is read by the same rules.
    let out = command(&["status", nowhere])
        .env("SPARKWIRE_SECRET_FILE", &path)
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(text(&out).contains(refused[0]), "{}", text(&out));
    let _ = std::fs::remove_dir_all(&dir);
}

#[cfg(feature = "tls")]
#[test]
fn with_tls_the_client_commands_need_the_authorities_and_the_driver_a_certificate() {
    use rcgen::{BasicConstraints, CertificateParams, IsCa, KeyPair};
    use sparkwire::connection::TlsSettings;

    let dir = temp_dir("tls");
    let secret = secret_file(&dir, "secret", SECRET);
    // An authority, and a certificate for 127.0.0.1 it signed, shared by every process.
    let ca_key = KeyPair::generate().expect("CA key");
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).expect("CA params");
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let ca_cert = ca_params.self_signed(&ca_key).expect("CA certificate");
    let key_pair = KeyPair::generate().expect("key");
    let cert_pem = CertificateParams::new(vec!["127.0.0.1".to_string()])
        .expect("params")
        .signed_by(&key_pair, &ca_cert, &ca_key)
        .expect("certificate")
        .pem();
    let write = |name: &str, text: String| {
        let path = dir.join(name);
        std::fs::write(&path, text).expect("write");
        path.display().to_string()
    };
    let ca = write("ca.pem", ca_cert.pem());
    let cert = write("cert.pem", cert_pem);
    let key = write("key.pem", key_pair.serialize_pem());
    let mut tls = TlsSettings::from_files(None, None, Some(Path::new(&ca))).expect("TLS");
    tls.server_name = Some("127.0.0.1".into());
    let security = Security {
        tls: Some(tls),
        ..Security::default()
    };
    let certificate = ["--tls-cert", cert.as_str(), "--tls-key", key.as_str()];
    let authorities = ["--tls-ca", ca.as_str()];
    let flags = [&certificate[..], &authorities[..]].concat();
    let cluster = Cluster::start(&dir, &secret, 2, Some((&flags, security)));
    let url = cluster.url.as_str();
    let with_secret = ["--master", url, "--secret-file", &secret];

    // `status`: with the secret and the authorities it is shown; without the authorities the
    // TLS master is not understood, and the error names the flag.
    expect(
        &[&["status", url, "--secret-file", &secret], &authorities],
        0,
        &["workers: 1 alive"],
    );
    expect(
        &[&["status", url, "--secret-file", &secret]],
        2,
        &["the handshake with the master at", "give --tls-ca"],
    );
    // A driver with TLS but no certificate could not take its executors' connections: refused
    // before it starts.
    expect(
        &[&["submit"], &with_secret, &authorities],
        2,
        &["give --tls-cert and --tls-key too"],
    );
    // Client deploy mode, every connection TLS and authenticated: the job runs.
    expect(
        &[&["submit"], &with_secret, &flags, &["--job", "pi"]],
        0,
        &["job pi: Pi is roughly 3.1"],
    );
    // Cluster deploy mode: submit checks the master with --tls-ca; the worker hands the driver
    // it runs its secret and authorities, and the certificate goes to that driver by its paths.
    expect(
        &[&["submit"], &with_secret, &CLUSTER_MODE, &flags],
        0,
        &[": FINISHED"],
    );
    let state = cluster.wait_state("two applications ended", |s| s.completed_apps.len() == 2);
    one_driver_finished(&state);
    let _ = std::fs::remove_dir_all(&dir);
}
