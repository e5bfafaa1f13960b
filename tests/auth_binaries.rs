//! Issue 11, attacks 2, 3 and 5, against the real `sparkwire master` and `sparkwire worker`
//! binaries over TCP, with a shared secret on both (`--secret-file`) and an admin secret on the
//! master (`--admin-secret-file`): a peer without the secret gets no accepted handshake and
//! changes nothing; an authenticated peer without the admin secret cannot kill drivers,
//! decommission workers or clear history. Before authentication existed each of these peers was
//! accepted and obeyed. Also: the worker hands the secret to its executors in a private file
//! named by `SPARKWIRE_SECRET_FILE`, never where a UI can read it; a master or worker on a
//! non-loopback address without a secret refuses to start.

use common::cluster;
mod common;

use std::path::Path;
use std::process::{Command, Stdio};

use cluster::{app_desc, PATIENCE, SH};
use common::files::temp_dir;
use common::processes::{announced_master, command, master_args, worker_args, Proc};
use sparkwire::connection::{read_secret_file, Connection, ConnectionConfig, ConnectionError};
use sparkwire::messages::deploy::{
    DecommissionWorkersOnHosts, MasterStateResponse, RegisterApplication,
    RequestClearCompletedDriversAndApps, RequestKillAllDrivers,
};
use sparkwire::messages::{Addr, DeployMessage, EndpointRef, ExecutorState, WorkerState};
use sparkwire::node::worker::{SECRET_FILE_ENV, SECRET_FILE_NAME};
use sparkwire::wire::handshake::{HandshakeError, RefusalReason, Role, Secret};
use sparkwire::wire::Reply;
use tokio::net::TcpStream;

/// Starts `sparkwire args…` and returns it with its first line of output.
fn start(args: &[&str]) -> (Proc, String) {
    let mut c = command(args);
    c.stderr(Stdio::null());
    let p = Proc::spawn(c);
    let line = p.line_within(PATIENCE);
    (p, line)
}

/// Writes a private secret file.
fn secret_file(dir: &Path, name: &str, text: &str) -> String {
    let path = dir.join(name);
    let secret = Secret::new(text.as_bytes().to_vec()).expect("a secret");
    sparkwire::connection::write_secret_file(&path, &secret).expect("written");
    path.display().to_string()
}

/// A connection to `addr` as `role`, proving `secret` (and `admin`) if given.
async fn open(
    addr: &Addr,
    role: Role,
    secret: Option<&str>,
    admin: Option<&str>,
) -> Result<Connection<DeployMessage>, ConnectionError> {
    let stream = TcpStream::connect((addr.host.as_str(), addr.port as u16))
        .await
        .expect("connect");
    let mut config = ConnectionConfig::default();
    config.security.secret = secret.and_then(|s| Secret::new(s.as_bytes().to_vec()));
    config.security.admin_secret = admin.and_then(|s| Secret::new(s.as_bytes().to_vec()));
    Connection::connect(stream, role, format!("test-{role}"), config).await
}

async fn state(master: &Addr, secret: &str) -> MasterStateResponse {
    let security = sparkwire::connection::Security {
        secret: Secret::new(secret.as_bytes().to_vec()),
        ..Default::default()
    };
    cluster::master_state_with(master, &security).await
}

async fn wait_state(
    master: &Addr,
    secret: &str,
    what: &str,
    cond: impl Fn(&MasterStateResponse) -> bool,
) -> MasterStateResponse {
    cluster::poll_until(what, || state(master, secret), cond).await
}

fn refused_for_want_of_the_secret(outcome: Result<Connection<DeployMessage>, ConnectionError>) {
    match outcome {
        Err(ConnectionError::Handshake(HandshakeError::Refused {
            reason: RefusalReason::AuthRequired,
            ..
        })) => {}
        Err(other) => panic!("refused, but not for the secret: {other}"),
        Ok(_) => panic!("a peer without the secret got an accepted handshake"),
    }
}

fn failed_permission(reply: Result<Reply<DeployMessage>, ConnectionError>, what: &str) {
    match reply {
        Err(ConnectionError::Remote { error, .. }) => assert!(
            error.message.contains("Permission denied") && error.message.contains(what),
            "{error:?}"
        ),
        other => panic!("{what} by a non-admin peer was not refused: {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_a_secret_no_peer_without_it_gets_a_handshake_and_only_admins_change_state() {
    const SECRET: &str = "the-cluster-secret-0123456789";
    const ADMIN: &str = "the-admin-secret-9876543210";
    let dir = temp_dir("auth-binaries");
    let work = dir.join("work");
    let secret_path = secret_file(&dir, "secret", SECRET);
    let admin_path = secret_file(&dir, "admin", ADMIN);
    let (_master, line) = start(&master_args(&[
        "--secret-file",
        &secret_path,
        "--admin-secret-file",
        &admin_path,
    ]));
    let (url, master) = announced_master(&line);
    let work_dir = work.display().to_string();
    let mut args = worker_args(&url, "2", "1024", &work_dir);
    args.extend(["--allow-exec-any", SH, "--register-retry", "0.3"]);
    args.extend(["--secret-file", &secret_path]);
    let (_worker, line) = start(&args);
    assert!(line.starts_with("sparkwire worker worker-"), "{line}");
    wait_state(&master, SECRET, "the real worker registered", |s| {
        s.workers.len() == 1
    })
    .await;

    // An authenticated application with a secret in its environment; its executor writes the
    // environment it was started with.
    let mut desc = app_desc("victim", "env > launched-env; exec sleep 60", Some(1), 256);
    desc.command.environment.insert(
        "AWS_SECRET_ACCESS_KEY".into(),
        "victim-aws-key-do-not-leak".into(),
    );
    // An application that tries to name the secret file itself is overridden by the worker.
    desc.command
        .environment
        .insert(SECRET_FILE_ENV.into(), "/tmp/elsewhere".into());
    let mut app = open(&master, Role::AppClient, Some(SECRET), None)
        .await
        .expect("an authenticated application client is accepted");
    app.send(
        RegisterApplication::new(
            desc,
            EndpointRef::at(Addr::new("127.0.0.1", 1), "AppClient"),
        )
        .into(),
    )
    .await
    .expect("sent");

    // Attack 2: a fake worker advertising 10,000 cores, without the secret or with a wrong one,
    // gets no accepted handshake, so it can never register nor receive a LaunchExecutor.
    refused_for_want_of_the_secret(open(&master, Role::Worker, None, None).await);
    assert!(matches!(
        open(&master, Role::Worker, Some("a-guess"), None).await,
        Err(ConnectionError::Handshake(HandshakeError::AuthFailed(_)))
    ));

    let app_id = loop {
        match tokio::time::timeout(PATIENCE, app.recv()).await {
            Ok(Ok(incoming)) => match incoming.message() {
                DeployMessage::ExecutorUpdated(u) if u.state == ExecutorState::Running => {
                    let s = state(&master, SECRET).await;
                    break s.active_apps[0].id.clone();
                }
                _ => {}
            },
            other => panic!("the application's executor never ran: {other:?}"),
        }
    };
    let s = state(&master, SECRET).await;
    assert_eq!(s.workers.len(), 1, "no fake worker registered");
    assert_eq!(s.workers[0].cores, 2);

    // Attack 3: a ui without the secret cannot ask for the state (and its environments).
    refused_for_want_of_the_secret(open(&master, Role::Ui, None, None).await);

    // Attack 5: without the secret, no ui and no driver client gets in.
    refused_for_want_of_the_secret(open(&master, Role::Ui, None, None).await);
    refused_for_want_of_the_secret(open(&master, Role::DriverClient, None, None).await);
    // With the cluster secret but not the admin secret, the state-changing UI asks fail.
    let ui = open(&master, Role::Ui, Some(SECRET), None)
        .await
        .expect("an authenticated ui");
    assert!(!ui.negotiated().admin);
    failed_permission(
        ui.ask_with_timeout(RequestKillAllDrivers::new().into(), PATIENCE)
            .await,
        "RequestKillAllDrivers",
    );
    failed_permission(
        ui.ask_with_timeout(
            DecommissionWorkersOnHosts::new(vec!["127.0.0.1".into()]).into(),
            PATIENCE,
        )
        .await,
        "DecommissionWorkersOnHosts",
    );
    failed_permission(
        ui.ask_with_timeout(RequestClearCompletedDriversAndApps::new().into(), PATIENCE)
            .await,
        "RequestClearCompletedDriversAndApps",
    );
    ui.close().await;
    let s = state(&master, SECRET).await;
    assert_eq!(s.workers[0].state, WorkerState::Alive, "not decommissioned");
    assert_eq!(s.active_apps.len(), 1);
    // An admin may.
    let admin = open(&master, Role::Ui, Some(SECRET), Some(ADMIN))
        .await
        .expect("an admin ui");
    assert!(matches!(
        admin
            .ask_with_timeout(RequestClearCompletedDriversAndApps::new().into(), PATIENCE)
            .await,
        Ok(Reply::Bool(true))
    ));
    admin.close().await;

    // The executor got the secret through a private file named by SPARKWIRE_SECRET_FILE.
    let exec_dir = work.join(&app_id).join("0");
    let file = exec_dir.join(SECRET_FILE_NAME);
    let env_file = exec_dir.join("launched-env");
    cluster::eventually("the executor wrote its environment", || {
        std::fs::read_to_string(&env_file).is_ok_and(|e| e.contains("PATH="))
    })
    .await;
    let env = std::fs::read_to_string(&env_file).expect("the executor's environment");
    assert!(
        env.lines()
            .any(|l| l == format!("{SECRET_FILE_ENV}={}", file.display())),
        "{env}"
    );
    assert!(
        !env.contains(SECRET),
        "the secret itself is not in the environment"
    );
    assert_eq!(
        read_secret_file(&file),
        Ok(Secret::new(SECRET.as_bytes().to_vec()).expect("s"))
    );
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&file)
            .expect("the file")
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600, "only the worker's user may read it");
    }
    // What a UI sees names neither the secret nor its file.
    let seen = format!("{:?}", state(&master, SECRET).await);
    assert!(!seen.contains(SECRET) && !seen.contains(SECRET_FILE_NAME));
    app.close().await;
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_master_or_worker_on_a_non_loopback_address_without_a_secret_refuses_to_start() {
    for args in [
        &["master", "--host", "0.0.0.0", "--port", "0"][..],
        &["worker", "sparkwire://127.0.0.1:7077", "--host", "0.0.0.0"][..],
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_sparkwire"))
            .args(args)
            .stdin(Stdio::null())
            .output()
            .expect("runs");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{args:?} started");
        assert!(
            stderr.contains("not a loopback address") && stderr.contains("--secret-file"),
            "{args:?}: {stderr}"
        );
    }
    // With --insecure the check passes (this address is not on the machine, so the bind fails
    // instead: nothing listens beyond loopback).
    let out = Command::new(env!("CARGO_BIN_EXE_sparkwire"))
        .args(["master", "--host", "192.0.2.1", "--port", "0", "--insecure"])
        .stdin(Stdio::null())
        .output()
        .expect("runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("not a loopback address"), "{stderr}");
    assert!(stderr.contains("cannot listen"), "{stderr}");
}

#[test]
fn secret_files_that_others_may_read_are_refused_by_every_command() {
    use std::os::unix::fs::PermissionsExt;
    let dir = temp_dir("auth-open-secret");
    let path = dir.join("secret");
    std::fs::write(&path, "shared").expect("write");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).expect("chmod");
    let p = path.display().to_string();
    for args in [
        vec!["master", "--port", "0", "--secret-file", &p],
        vec!["worker", "sparkwire://127.0.0.1:1", "--secret-file", &p],
        vec![
            "executor",
            "--driver-url",
            "spark://CoarseGrainedScheduler@127.0.0.1:1",
            "--executor-id",
            "0",
            "--cores",
            "1",
            "--app-id",
            "app",
            "--secret-file",
            &p,
        ],
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_sparkwire"))
            .args(&args)
            .stdin(Stdio::null())
            .output()
            .expect("runs");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{args:?}");
        assert!(stderr.contains("chmod 600"), "{args:?}: {stderr}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}
