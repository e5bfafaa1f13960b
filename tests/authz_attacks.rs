//! Issue 11's attacks against the reference master and worker in the default mode (no
//! `--strict`), over real TCP, with workers run as real `sparkwire worker` processes where the
//! attack is on what a worker launches. Each test fails against an endpoint without the
//! authorization model of SPEC §14.
//!
//! - attack 1: a worker runs only what its operator allowed, command and all;
//! - attack 4: ids are bound to the connection that registered them;
//! - attack 6: a message a role may not send is refused (a failure for an ask, a close for a
//!   one-way message);
//! - secrets in the master's state answer are redacted; a refused launch reaches the driver.

use common::cluster;
mod common;

use std::path::Path;
use std::process::Child;
use std::time::Duration;

use cluster::*;
use common::files::temp_dir;
use common::processes::worker_args;
use common::processes::{spawn_sparkwire, BIN};
use sparkwire::connection::ConnectionError;
use sparkwire::messages::deploy::{
    ExecutorStateChanged, Heartbeat, KillExecutors, RegisterApplication, RequestMasterState,
    UnregisterApplication, WorkerDecommissioning,
};
use sparkwire::messages::{
    ApplicationState, DeployMessage, EndpointRef, ExecutorState, WorkerState,
};
use sparkwire::node::redact::REDACTED;
use sparkwire::reference::master::MasterHandle;
use sparkwire::wire::Reply;

/// The connection closed with a close envelope of `kind` (SPEC §8.1, §14.3): the refused peer
/// reads why.
fn assert_refused_with(closed: &ConnectionError, kind: &str) {
    match closed {
        ConnectionError::ClosedByPeer(reason) => {
            assert_eq!(reason.kind, kind, "{reason}");
            assert!(!reason.message.is_empty());
        }
        other => panic!("a close envelope of kind {kind}, got {other:?}"),
    }
}

/// A `sparkwire worker` process, killed (by its own pid) when dropped; it also exits when its
/// standard input (a pipe held here) closes.
struct WorkerProcess {
    child: Child,
    id: String,
}

impl Drop for WorkerProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts `sparkwire worker` for `master` with `extra` options and `env` added to its own
/// environment; returns once it printed its id.
fn worker_process(
    master: &MasterHandle,
    work: &Path,
    extra: &[&str],
    env: &[(&str, &str)],
) -> WorkerProcess {
    let work = work.display().to_string();
    let url = master.url();
    let mut args = worker_args(url.as_str(), "2", "1024", work.as_str());
    args.extend([
        "--worker-timeout",
        "2",
        "--register-retry",
        "0.3",
        "--exit-with-stdin",
    ]);
    args.extend_from_slice(extra);
    let (child, line) = spawn_sparkwire(&args, env);
    let id = line
        .strip_prefix("sparkwire worker ")
        .and_then(|rest| rest.split_whitespace().next())
        .unwrap_or_else(|| panic!("unexpected first line {line:?}"))
        .to_string();
    WorkerProcess { child, id }
}

/// A master in the default mode (no validator), with the tests' worker timeout.
async fn default_master() -> MasterHandle {
    start_master(&observer(WORKER_TIMEOUT), |c| c.observer = None).await
}

/// An application whose executor is `program` with `arguments`.
fn app_running(
    name: &str,
    program: &str,
    arguments: &[&str],
) -> sparkwire::messages::ApplicationDescription {
    let mut desc = app_desc(name, "true", None, 256);
    desc.command.main_class = program.into();
    desc.command.arguments = arguments.iter().map(|s| s.to_string()).collect();
    desc
}

/// The arguments of the executor command the reference driver registers (for a driver that
/// does not exist).
fn executor_arguments() -> Vec<String> {
    sparkwire::reference::driver::DriverConfig::new("t")
        .app_description("spark://CoarseGrainedScheduler@127.0.0.1:9")
        .command
        .arguments
}

/// The first ExecutorUpdated in `state` the application got.
async fn first_update(
    app: &TestApp,
    state: ExecutorState,
) -> sparkwire::messages::deploy::ExecutorUpdated {
    let log = app
        .wait(&format!("an executor {state}"), |l| {
            l.iter()
                .any(|m| matches!(m, DeployMessage::ExecutorUpdated(u) if u.state == state))
        })
        .await;
    find(&log, |m| match m {
        DeployMessage::ExecutorUpdated(u) if u.state == state => Some(u.clone()),
        _ => None,
    })
    .expect("an update")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn attack_1_the_allowed_sparkwire_binary_does_not_start_a_second_worker_allowing_sh() {
    let work = temp_dir("attack1-worker");
    let master = default_master().await;
    let other = default_master().await;
    let worker = worker_process(&master, &work, &["--allow-exec", BIN], &[]);
    let m = addr_of(&master);
    wait_master_state(&m, "the worker process", |s| {
        s.workers.iter().any(|w| w.id == worker.id)
    })
    .await;
    let other_url = other.url();
    let desc = app_running(
        "second-worker",
        BIN,
        &[
            "worker",
            &other_url,
            "--allow-exec",
            "/bin/sh",
            "--port",
            "0",
        ],
    );
    let app = TestApp::register(std::slice::from_ref(&m), desc).await;
    let failed = first_update(&app, ExecutorState::Failed).await;
    let text = failed.message.expect("a reason");
    assert!(text.contains("its first argument is `worker`"), "{text}");
    assert!(
        text.contains("--allow-exec allows it only as an executor"),
        "{text}"
    );
    // Nothing ran: the executor's directory was never made, and the other master has no worker.
    let app_id = app.app_id().await;
    assert!(!work.join(&app_id).join("0").exists());
    let state = master_state(&addr_of(&other)).await;
    assert!(state.workers.is_empty(), "{:?}", state.workers);
    app.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn attack_1_ld_preload_in_an_applications_environment_refuses_the_launch() {
    let work = temp_dir("attack1-preload");
    let master = default_master().await;
    let _worker = worker_process(&master, &work, &["--allow-exec", BIN], &[]);
    let m = addr_of(&master);
    let args = executor_arguments();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let mut desc = app_running("preload", BIN, &args);
    desc.command.environment.insert(
        "LD_PRELOAD".into(),
        work.join("evil.so").display().to_string(),
    );
    let app = TestApp::register(std::slice::from_ref(&m), desc).await;
    let failed = first_update(&app, ExecutorState::Failed).await;
    let text = failed.message.expect("a reason");
    assert!(text.contains("LD_PRELOAD"), "{text}");
    assert!(text.contains("no launched process gets"), "{text}");
    let app_id = app.app_id().await;
    assert!(!work.join(&app_id).join("0").exists());
    app.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn attack_1_a_launched_process_gets_a_minimal_environment_not_the_workers() {
    let work = temp_dir("attack1-env");
    let master = default_master().await;
    let _worker = worker_process(
        &master,
        &work,
        &["--allow-exec-any", SH, "--pass-env", "PASSED_BY_OPERATOR"],
        &[
            ("WORKER_ONLY_SECRET", "hunter2"),
            ("PASSED_BY_OPERATOR", "yes"),
        ],
    );
    let m = addr_of(&master);
    let mut desc = app_desc("env", "env", None, 256);
    desc.command
        .environment
        .insert("SPARK_FROM_APP".into(), "exec-{{EXECUTOR_ID}}".into());
    desc.command
        .environment
        .insert("NOT_ALLOWED".into(), "dropped".into());
    let app = TestApp::register(std::slice::from_ref(&m), desc).await;
    first_update(&app, ExecutorState::Exited).await;
    let app_id = app.app_id().await;
    let out = std::fs::read_to_string(work.join(&app_id).join("0").join("stdout")).expect("stdout");
    let vars: Vec<&str> = out.lines().filter_map(|l| l.split('=').next()).collect();
    assert!(!out.contains("WORKER_ONLY_SECRET"), "{out}");
    assert!(!out.contains("NOT_ALLOWED"), "{out}");
    assert!(out.contains("SPARK_FROM_APP=exec-0"), "{out}");
    assert!(out.contains("PASSED_BY_OPERATOR=yes"), "{out}");
    assert!(vars.contains(&"PATH"), "{out}");
    assert!(!vars.contains(&"RUST_LOG"), "{out}");
    app.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn attack_4_another_applications_kill_executors_and_unregister_are_refused() {
    let work = temp_dir("attack4-app");
    let master = default_master().await;
    let m = addr_of(&master);
    let obs = observer(WORKER_TIMEOUT);
    let _worker =
        start_worker_with(&obs, vec![m.clone()], 2, 2048, &work, |c| c.observer = None).await;
    let victim = TestApp::register(
        std::slice::from_ref(&m),
        app_desc("victim", "exec sleep 60", Some(1), 256),
    )
    .await;
    let victim_id = victim.app_id().await;
    first_update(&victim, ExecutorState::Running).await;
    let attacker = TestApp::register(
        std::slice::from_ref(&m),
        app_desc("attacker", "exec sleep 60", Some(1), 256),
    )
    .await;
    attacker.app_id().await;

    let kill = attacker
        .active()
        .ask_with_timeout(
            KillExecutors::new(victim_id.clone(), vec!["0".into()]).into(),
            PATIENCE,
        )
        .await;
    match kill {
        Err(ConnectionError::Remote { error, .. }) => {
            assert_eq!(error.class_name, "java.lang.SecurityException");
            assert!(error.message.contains(&victim_id), "{}", error.message);
        }
        other => panic!("expected a refusal, got {other:?}"),
    }

    let conn = attacker.active();
    conn.send(UnregisterApplication::new(victim_id.clone()).into())
        .await
        .expect("sent");
    let closed = tokio::time::timeout(PATIENCE, conn.closed())
        .await
        .expect("the attacker's connection closes");
    assert_refused_with(&closed, "NotOwner");

    let state = master_state(&m).await;
    let victim_app = state
        .active_apps
        .iter()
        .find(|a| a.id == victim_id)
        .expect("the victim is still active");
    assert_eq!(victim_app.state, ApplicationState::Running);
    assert!(!victim
        .log()
        .iter()
        .any(|m| matches!(m, DeployMessage::ApplicationRemoved(_))
            || matches!(m, DeployMessage::ExecutorUpdated(u) if u.state == ExecutorState::Killed)));
    victim.close().await;
    attacker.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn attack_4_a_fake_workers_decommissioning_and_status_updates_for_a_real_worker_are_refused()
{
    let work = temp_dir("attack4-worker");
    let master = default_master().await;
    let m = addr_of(&master);
    let obs = observer(WORKER_TIMEOUT);
    let real =
        start_worker_with(&obs, vec![m.clone()], 2, 2048, &work, |c| c.observer = None).await;
    wait_master_state(&m, "the real worker", |s| s.workers.len() == 1).await;
    let app = TestApp::register(
        std::slice::from_ref(&m),
        app_desc("victim", "exec sleep 60", Some(1), 256),
    )
    .await;
    let app_id = app.app_id().await;
    first_update(&app, ExecutorState::Running).await;

    let fake_addr = sparkwire::messages::Addr::new("127.0.0.1", 9);
    let fake = FakeWorker::connect(&m, "worker-fake", fake_addr.clone()).await;
    fake.register(&m, 1, 256).await;
    fake.wait("registered", |l| {
        l.iter()
            .any(|m| matches!(m, DeployMessage::RegisteredWorker(_)))
    })
    .await;
    // An ask naming the real worker's executor: failed, the executor stays RUNNING.
    let update = fake
        .conn
        .ask_with_timeout(
            ExecutorStateChanged::new(app_id.clone(), 0, ExecutorState::Failed)
                .with_message(Some("forged".into()))
                .with_exit_status(Some(1))
                .into(),
            PATIENCE,
        )
        .await;
    assert!(
        matches!(&update, Err(ConnectionError::Remote { error, .. }) if error.message.contains(&format!("{app_id}/0"))),
        "{update:?}"
    );
    // A one-way message naming the real worker: the fake loses its connection (and the executor
    // the master placed on the fake is LOST with it).
    fake.send(WorkerDecommissioning::new(
        real.id().to_string(),
        EndpointRef::at(fake_addr, "Worker"),
    ))
    .await;
    let closed = tokio::time::timeout(PATIENCE, fake.conn.closed())
        .await
        .expect("the fake's connection closes");
    assert_refused_with(&closed, "NotOwner");

    let state = master_state(&m).await;
    let w = state
        .workers
        .iter()
        .find(|w| w.id == real.id())
        .expect("the real worker");
    assert_eq!(w.state, WorkerState::Alive);
    let log = app.log();
    assert!(
        !log.iter().any(|m| matches!(
            m,
            DeployMessage::ExecutorUpdated(u) if u.id == 0 && u.state != ExecutorState::Running
        )),
        "{log:#?}"
    );
    app.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn attack_4_a_heartbeat_for_another_workers_id_closes_the_connection() {
    let master = default_master().await;
    let m = addr_of(&master);
    let work = temp_dir("attack4-heartbeat");
    let obs = observer(WORKER_TIMEOUT);
    let real = start_worker_with(&obs, vec![m.clone()], 1, 512, &work, |c| c.observer = None).await;
    wait_master_state(&m, "the real worker", |s| s.workers.len() == 1).await;
    let fake = FakeWorker::connect(
        &m,
        "worker-fake",
        sparkwire::messages::Addr::new("127.0.0.1", 9),
    )
    .await;
    fake.send(Heartbeat::new(
        real.id().to_string(),
        EndpointRef::at(sparkwire::messages::Addr::new("127.0.0.1", 9), "Worker"),
    ))
    .await;
    let closed = tokio::time::timeout(PATIENCE, fake.conn.closed())
        .await
        .expect("closed");
    assert_refused_with(&closed, "NotOwner");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn attack_6_a_worker_sending_register_application_is_refused_and_loses_its_connection() {
    let master = default_master().await;
    let m = addr_of(&master);
    let fake = FakeWorker::connect(
        &m,
        "worker-rogue",
        sparkwire::messages::Addr::new("127.0.0.1", 9),
    )
    .await;
    // An ask its role may not send: a failure, and the connection stays open.
    let asked = fake
        .conn
        .ask_with_timeout(RequestMasterState::new().into(), PATIENCE)
        .await;
    match asked {
        Err(ConnectionError::Remote { error, .. }) => {
            assert_eq!(error.class_name, "org.apache.spark.SparkException");
            assert_eq!(
                error.message,
                "a worker may not send RequestMasterState to a master"
            );
        }
        other => panic!("expected a failure, got {other:?}"),
    }
    assert!(fake.conn.close_reason().is_none());
    // A one-way message its role may not send: the connection closes, nothing registered.
    fake.send(RegisterApplication::new(
        app_desc("rogue", "true", None, 256),
        EndpointRef::at(sparkwire::messages::Addr::new("127.0.0.1", 9), "AppClient"),
    ))
    .await;
    let closed = tokio::time::timeout(PATIENCE, fake.conn.closed())
        .await
        .expect("closed");
    assert_refused_with(&closed, "NotOnRoute");
    assert!(!fake
        .log()
        .iter()
        .any(|m| matches!(m, DeployMessage::RegisteredApplication(_))));
    let state = master_state(&m).await;
    assert!(state.active_apps.is_empty(), "{:?}", state.active_apps);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_master_state_answer_redacts_secrets_in_environments_and_properties() {
    let master = default_master().await;
    let m = addr_of(&master);
    let mut desc = app_desc("secrets", "true", None, 256);
    let env = &mut desc.command.environment;
    env.insert("AWS_SECRET_ACCESS_KEY".into(), "AKIA-very-secret".into());
    env.insert("SPARK_HOME".into(), "/opt/spark".into());
    desc.command.java_opts = vec![
        "-Dspark.ssl.keyPassword=hunter2".into(),
        "-Dspark.app.name=pi".into(),
    ];
    let app = TestApp::register(std::slice::from_ref(&m), desc).await;
    let app_id = app.app_id().await;
    let state = master_state(&m).await;
    let shown = &state
        .active_apps
        .iter()
        .find(|a| a.id == app_id)
        .expect("the app")
        .desc
        .command;
    assert_eq!(shown.environment["AWS_SECRET_ACCESS_KEY"], REDACTED);
    assert_eq!(shown.environment["SPARK_HOME"], "/opt/spark");
    assert_eq!(
        shown.java_opts,
        vec![
            format!("-Dspark.ssl.keyPassword={REDACTED}"),
            "-Dspark.app.name=pi".to_string()
        ]
    );
    let text = format!("{state:?}");
    assert!(!text.contains("AKIA-very-secret") && !text.contains("hunter2"));
    app.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_launch_the_worker_refuses_reaches_the_driver_with_its_reason() {
    use sparkwire::reference::driver::{Driver, DriverConfig};
    let work = temp_dir("refused-driver");
    let master = default_master().await;
    let _worker = worker_process(&master, &work, &["--allow-exec", BIN], &[]);
    let mut config = DriverConfig::new("refused");
    config.masters = vec![master.url()];
    config.executor_program = BIN.into();
    // `sparkwire worker …` instead of `sparkwire executor …`: not a shape the worker runs.
    config.executor_args = vec!["worker".into()];
    config.executor_cores = Some(1);
    config.executor_memory_mb = 256;
    let driver = Driver::start(config).await.expect("driver");
    let deadline = tokio::time::Instant::now() + PATIENCE;
    let end = loop {
        let status = driver.status().await.expect("status");
        if let Some(e) = status.executor_ends.first() {
            break e.clone();
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "no executor end: {status:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(end.state, ExecutorState::Failed);
    let reason = end.message.expect("a reason");
    assert!(
        reason.contains("its first argument is `worker`"),
        "{reason}"
    );
    assert_eq!(end.exit_status, None);
    driver.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_driver_client_kills_only_the_drivers_it_submitted() {
    use sparkwire::messages::deploy::{RequestKillDriver, RequestSubmitDriver};
    let master = default_master().await;
    let m = addr_of(&master);
    let owner = client(&m).await;
    let other = client(&m).await;
    let desc = sparkwire::messages::DriverDescription::new(
        "file:///app.jar".into(),
        256,
        1,
        false,
        app_desc("d", "true", None, 256).command,
        vec![],
    );
    let id = match ask(&owner, RequestSubmitDriver::new(desc)).await {
        Reply::Message(DeployMessage::SubmitDriverResponse(r)) => r.driver_id.expect("an id"),
        other => panic!("{other:?}"),
    };
    let refused = other
        .ask_with_timeout(RequestKillDriver::new(id.clone()).into(), PATIENCE)
        .await;
    assert!(
        matches!(&refused, Err(ConnectionError::Remote { error, .. }) if error.class_name == "java.lang.SecurityException"),
        "{refused:?}"
    );
    match ask(&owner, RequestKillDriver::new(id.clone())).await {
        Reply::Message(DeployMessage::KillDriverResponse(r)) => assert!(r.success, "{}", r.message),
        other => panic!("{other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fake_master_dialling_a_worker_cannot_make_it_launch() {
    use sparkwire::connection::{Connection, ConnectionConfig};
    use sparkwire::messages::deploy::LaunchExecutor;
    use sparkwire::wire::handshake::Role;
    let master = default_master().await;
    let m = addr_of(&master);
    let work = temp_dir("fake-master");
    let obs = observer(WORKER_TIMEOUT);
    let worker =
        start_worker_with(&obs, vec![m.clone()], 1, 512, &work, |c| c.observer = None).await;
    wait_master_state(&m, "the worker", |s| s.workers.len() == 1).await;
    // A peer announcing itself as a master on the worker's own listener, naming the real master.
    let stream = tokio::net::TcpStream::connect(worker.addr())
        .await
        .expect("connect");
    let fake: Connection<DeployMessage> = Connection::connect(
        stream,
        Role::Master,
        "fake-master",
        ConnectionConfig::default(),
    )
    .await
    .expect("handshake");
    let marker = work.join("pwned");
    fake.send(
        LaunchExecutor::new(
            master.url(),
            "app-fake".into(),
            0,
            0,
            app_desc("fake", &format!("touch {}", marker.display()), None, 64),
            1,
            64,
            Default::default(),
        )
        .into(),
    )
    .await
    .expect("sent");
    let closed = tokio::time::timeout(PATIENCE, fake.handle().closed())
        .await
        .expect("the fake master's connection closes");
    assert_refused_with(&closed, "NotOwner");
    assert!(!work.join("app-fake").exists());
    assert!(!marker.exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_connection_carries_one_application_and_a_second_registration_is_ignored() {
    let master = default_master().await;
    let m = addr_of(&master);
    let desc = app_desc("once", "true", None, 256);
    let app = TestApp::register(std::slice::from_ref(&m), desc.clone()).await;
    let id = app.app_id().await;
    app.send(RegisterApplication::new(
        desc,
        EndpointRef::at(app.addr.clone(), "AppClient"),
    ))
    .await;
    // An ask after the send is answered after it was handled.
    let answered = app
        .ask(sparkwire::messages::deploy::RequestExecutors::new(
            id.clone(),
            vec![],
        ))
        .await;
    assert_eq!(answered, Reply::Bool(true));
    let state = master_state(&m).await;
    let ids: Vec<&str> = state.active_apps.iter().map(|a| a.id.as_str()).collect();
    assert_eq!(ids, [id.as_str()]);
    assert_eq!(
        count(&app.log(), |m| matches!(
            m,
            DeployMessage::RegisteredApplication(_)
        )),
        1
    );
    app.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_program_allowed_only_as_an_executor_is_not_run_as_a_driver() {
    use sparkwire::messages::deploy::{RequestDriverStatus, RequestSubmitDriver};
    use sparkwire::messages::DriverState;
    let master = default_master().await;
    let m = addr_of(&master);
    let work = temp_dir("driver-shape");
    let obs = observer(WORKER_TIMEOUT);
    let _worker = start_worker_with(&obs, vec![m.clone()], 1, 512, &work, |c| {
        c.observer = None;
        c.allow_exec = vec![SH.into()];
        c.allow_exec_any.clear();
    })
    .await;
    wait_master_state(&m, "the worker", |s| s.workers.len() == 1).await;
    let c = client(&m).await;
    let desc = sparkwire::messages::DriverDescription::new(
        "file:///app.jar".into(),
        64,
        1,
        false,
        app_desc("d", "touch pwned", None, 64).command,
        vec![],
    );
    let id = match ask(&c, RequestSubmitDriver::new(desc)).await {
        Reply::Message(DeployMessage::SubmitDriverResponse(r)) => r.driver_id.expect("an id"),
        other => panic!("{other:?}"),
    };
    let deadline = tokio::time::Instant::now() + PATIENCE;
    let status = loop {
        match ask(&c, RequestDriverStatus::new(id.clone())).await {
            Reply::Message(DeployMessage::DriverStatusResponse(s))
                if s.state == Some(DriverState::Error) =>
            {
                break s
            }
            other => assert!(tokio::time::Instant::now() < deadline, "{other:?}"),
        }
        tokio::time::sleep(Duration::from_millis(30)).await;
    };
    let why = status.exception.expect("an exception").message;
    assert!(why.contains("as a driver"), "{why}");
    assert!(!work.join(&id).exists());
}
