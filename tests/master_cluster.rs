//! The master with real worker cores in the in-memory cluster (`node::sim::Cluster`): the
//! protocol of `master_flow.rs`, `master_recovery.rs` and `master_versions.rs` without sockets,
//! processes or sleeps. An application's client and UIs are probes the tests write on.

use std::time::Duration;

use sparkwire::messages::deploy::{
    MasterChangeAcknowledged, RegisterWorker, UnregisterApplication,
};
use sparkwire::messages::{
    Addr, DeployMessage, EndpointRef, ExecutorState, RecoveryState, Resources, Version, WorkerState,
};
use sparkwire::node::master::Config;
use sparkwire::node::master::Stored;
use sparkwire::node::sim::{app_description, Cluster, MasterNode, NodeId, WorkerNode};
use sparkwire::node::worker::{RunKey, WorkerExit};
use sparkwire::wire::handshake::Role;

const TIMEOUT: Duration = Duration::from_millis(1500);

fn config() -> Config {
    Config {
        worker_timeout: TIMEOUT,
        ..Config::default()
    }
}

fn updates(c: &Cluster, app: NodeId) -> Vec<(i32, ExecutorState, Option<String>, Option<i32>)> {
    c.probe(app).picked(|m| match m {
        DeployMessage::ExecutorUpdated(u) => {
            Some((u.id, u.state, u.message.clone(), u.exit_status))
        }
        _ => None,
    })
}

fn added(c: &Cluster, app: NodeId) -> Vec<(i32, String, i32, i32)> {
    c.probe(app).picked(|m| match m {
        DeployMessage::ExecutorAdded(e) => Some((e.id, e.worker_id.clone(), e.cores, e.memory)),
        _ => None,
    })
}

/// A master and one worker of `cores` cores and 4 GiB, registered; an application of `desc`
/// registered then, and settled: the cluster, the worker, the application's probe, its
/// connection and id.
fn one_worker_and_app(
    cores: i32,
    desc: sparkwire::messages::ApplicationDescription,
) -> (Cluster, NodeId, NodeId, NodeId, u64, String) {
    let mut c = Cluster::new();
    let m = c.add_master(config(), Addr::new("127.0.0.1", 7077));
    let w = c.add_worker("worker-1", Addr::new("127.0.0.1", 50000), cores, 4096, &[m]);
    c.settle();
    let (app, conn, app_id) = c.app(m, Addr::new("127.0.0.1", 60000), desc);
    c.settle();
    (c, m, w, app, conn, app_id.expect("registered"))
}

#[test]
fn an_application_gets_an_executor_that_the_worker_kills_when_it_unregisters() {
    let (mut c, m, w, app, conn, app_id) =
        one_worker_and_app(4, app_description("flow", None, 512));
    assert!(
        app_id.starts_with("app-") && app_id.ends_with("-0000"),
        "{app_id}"
    );
    assert_eq!(added(&c, app), [(0, "worker-1".to_string(), 4, 512)]);
    assert!(updates(&c, app).contains(&(0, ExecutorState::Running, None, None)));
    let launch = &c.node::<WorkerNode>(w).running()[&RunKey::Executor(app_id.clone(), 0)];
    assert_eq!(
        launch.dir,
        std::path::Path::new("/work").join(&app_id).join("0")
    );
    assert_eq!(
        launch.args[launch.args.len() - 7],
        "0",
        "the executor id filled in"
    );

    // Heartbeats keep the worker alive well past the timeout.
    c.run_for(TIMEOUT * 4);
    let s = c.master(m).master_state();
    assert_eq!(s.workers[0].state, WorkerState::Alive);
    assert_eq!(s.workers[0].cores_used, 4);

    c.send(app, conn, UnregisterApplication::new(app_id.clone()));
    c.settle();
    let s = c.master(m).master_state();
    assert!(s.active_apps.is_empty());
    assert_eq!(s.completed_apps.len(), 1);
    assert_eq!(s.workers[0].cores_used, 0);
    // The worker killed the process and reports it.
    assert!(c.node::<WorkerNode>(w).running().is_empty());
    let ws = c.worker(w).state_response();
    assert!(ws.executors.is_empty());
    assert_eq!(ws.finished_executors[0].state, ExecutorState::Killed);
}

#[test]
fn an_executor_that_exits_is_reported_exited_with_its_code_and_replaced() {
    let (mut c, _, w, app, _, app_id) =
        one_worker_and_app(2, app_description("exit", Some(1), 256));
    assert_eq!(c.node::<WorkerNode>(w).running().len(), 2);
    c.node_mut::<WorkerNode>(w)
        .end(&RunKey::Executor(app_id, 0), 0);
    c.settle();
    assert!(updates(&c, app).contains(&(
        0,
        ExecutorState::Exited,
        Some("Command exited with code 0".into()),
        Some(0)
    )));
    // Two 1-core executors fill the worker; the exited one is replaced by executor 2.
    assert_eq!(added(&c, app).last().map(|a| a.0), Some(2));
    assert_eq!(c.node::<WorkerNode>(w).running().len(), 2);
}

#[test]
fn the_worker_stops_when_its_registration_is_refused() {
    let mut c = Cluster::new();
    let m = c.add_master(config(), Addr::new("127.0.0.1", 7077));
    // Another id already registered the address the worker will advertise.
    let at = Addr::new("127.0.0.1", 50002);
    let squatter = c.add_probe(Role::Worker, "worker-squatter");
    let conn = c.connect(squatter, m).expect("connected");
    let register = RegisterWorker::new(
        "worker-squatter".into(),
        at.host.clone(),
        at.port,
        EndpointRef::at(at.clone(), "Worker"),
        1,
        512,
        String::new(),
        Addr::new("127.0.0.1", 7077),
        Resources::new(),
    );
    c.send(squatter, conn, register);
    let w = c.add_worker("worker-late", at, 1, 512, &[m]);
    c.settle();
    assert_eq!(
        c.worker(w).exit(),
        Some(&WorkerExit::RegistrationFailed(
            "Attempted to re-register worker at same address: 127.0.0.1:50002".into()
        ))
    );
}

#[test]
fn a_version_1_master_runs_an_executor_with_one_way_state_changes() {
    let mut c = Cluster::new();
    let m = c.add_master(config(), Addr::new("127.0.0.1", 7077));
    c.set_version(m, Version::V1);
    let w = c.add_worker("worker-v1", Addr::new("127.0.0.1", 50003), 1, 1024, &[m]);
    c.settle();
    let (app, _, _) = c.app(
        m,
        Addr::new("127.0.0.1", 60000),
        app_description("v1", None, 256),
    );
    c.settle();
    assert!(updates(&c, app).contains(&(0, ExecutorState::Running, None, None)));
    let changes: Vec<bool> = c
        .sent()
        .iter()
        .filter(|s| s.from == w && s.name == "ExecutorStateChanged")
        .map(|s| s.asked)
        .collect();
    assert_eq!(changes, [false], "one-way in version 1");

    // In version 2 the same change is an ask.
    let mut c = Cluster::new();
    let m = c.add_master(config(), Addr::new("127.0.0.1", 7077));
    let w = c.add_worker("worker-v2", Addr::new("127.0.0.1", 50003), 1, 1024, &[m]);
    c.settle();
    c.app(
        m,
        Addr::new("127.0.0.1", 60000),
        app_description("v2", None, 256),
    );
    c.settle();
    assert!(c
        .sent()
        .iter()
        .any(|s| s.from == w && s.name == "ExecutorStateChanged" && s.asked));
}

#[test]
fn a_standby_master_takes_over_when_the_active_one_dies() {
    let mut c = Cluster::new();
    let a = c.add_master(config(), Addr::new("127.0.0.1", 7077));
    let b = c.add_standby_master(config(), Addr::new("127.0.0.1", 7078));
    assert_eq!(c.master(b).master_state().status, RecoveryState::Standby);
    let w = c.add_worker("worker-ha", Addr::new("127.0.0.1", 50004), 2, 2048, &[a, b]);
    c.settle();
    let mut desc = app_description("recover", Some(1), 256);
    desc.max_cores = Some(1);
    let (app, _, app_id) = c.app(a, Addr::new("127.0.0.1", 60000), desc);
    let app_id = app_id.expect("registered");
    c.settle();
    let s = c.master(b).master_state();
    assert!(
        s.workers.is_empty() && s.active_apps.is_empty(),
        "the standby took nothing"
    );
    assert!(
        c.links_between(w, b).is_empty(),
        "the worker left the standby"
    );

    // The active master dies; the standby is elected on what it persisted.
    let stored = c.node::<MasterNode>(a).store().clone();
    assert_eq!((stored.workers.len(), stored.apps.len()), (1, 1));
    c.kill(a);
    // The standby is elected once the dead master's lease ran out; meanwhile the worker's new
    // registrations get MasterInStandby.
    c.run_for(TIMEOUT);
    assert!(c.count(b, w, "MasterInStandby") >= 2);
    c.elect(b, stored);
    assert_eq!(c.master(b).master_state().status, RecoveryState::Recovering);
    c.settle();
    // The application's client acknowledges the change over the connection the master opened.
    let (conn, changed) = (
        c.probe(app)
            .last_opened()
            .expect("dialled by the new master"),
        c.probe(app)
            .received()
            .any(|m| matches!(m, DeployMessage::MasterChanged(_))),
    );
    assert!(changed);
    c.send(app, conn, MasterChangeAcknowledged::new(app_id.clone()));
    c.settle();
    let s = c.master(b).master_state();
    assert_eq!(s.status, RecoveryState::Alive);
    assert!(s
        .workers
        .iter()
        .any(|x| x.id == "worker-ha" && x.state == WorkerState::Alive && x.cores_used == 1));
    assert!(s
        .active_apps
        .iter()
        .any(|x| x.id == app_id && x.cores_granted == 1));
    assert_eq!(added(&c, app).len(), 1, "the executor carried on");
    // The worker heartbeats to the new master from now on.
    let before = c.count(w, b, "Heartbeat");
    c.run_for(TIMEOUT);
    assert!(c.count(w, b, "Heartbeat") > before);
}

/// Masters `a` (active) and `b` (standby), a worker registered with both's addresses running
/// one 1-core executor of an application on `a`; then `a` dies, and the cluster runs until the
/// worker's first registration with `b` is on its way (written now, not yet delivered). The
/// cluster, `b`, the worker, the application's probe and id, and what `a` persisted.
fn failover_while_the_worker_registers() -> (Cluster, NodeId, NodeId, NodeId, String, Stored) {
    let mut c = Cluster::new();
    let a = c.add_master(config(), Addr::new("127.0.0.1", 7077));
    let b = c.add_standby_master(config(), Addr::new("127.0.0.1", 7078));
    let w = c.add_worker(
        "worker-race",
        Addr::new("127.0.0.1", 50005),
        2,
        2048,
        &[a, b],
    );
    c.settle();
    let mut desc = app_description("race", Some(1), 256);
    desc.max_cores = Some(1);
    let (app, _, app_id) = c.app(a, Addr::new("127.0.0.1", 60000), desc);
    let app_id = app_id.expect("registered");
    c.settle();
    assert_eq!(c.node::<WorkerNode>(w).running().len(), 1);
    let stored = c.node::<MasterNode>(a).store().clone();
    c.kill(a);
    let registering = c.run_until(TIMEOUT, |c| {
        c.sent().last().is_some_and(|s| {
            s.from == w && s.to == b && s.name == "RegisterWorker" && s.at == c.now()
        })
    });
    assert!(registering, "the worker registers with the standby");
    (c, b, w, app, app_id, stored)
}

/// After the failover of [`failover_while_the_worker_registers`]: the application acknowledges
/// the master change and the cluster runs on; the worker must still be ALIVE at `b` with its one
/// executor, never relaunched nor reported lost.
fn assert_the_executor_survived(c: &mut Cluster, b: NodeId, w: NodeId, app: NodeId, app_id: &str) {
    c.settle();
    let conn = c
        .probe(app)
        .last_opened()
        .expect("dialled by the new master");
    c.send(app, conn, MasterChangeAcknowledged::new(app_id.to_string()));
    c.run_for(TIMEOUT * 3);
    let s = c.master(b).master_state();
    assert_eq!(s.status, RecoveryState::Alive);
    let worker = s.workers.iter().find(|x| x.id == "worker-race");
    assert!(
        worker.is_some_and(|x| x.state == WorkerState::Alive && x.cores_used == 1),
        "{:?}",
        s.workers
    );
    assert!(s
        .active_apps
        .iter()
        .any(|x| x.id == app_id && x.cores_granted == 1));
    assert_eq!(c.count(b, w, "LaunchExecutor"), 0, "no executor relaunched");
    assert!(
        !updates(c, app).iter().any(|u| u.1 == ExecutorState::Lost),
        "{:?}",
        updates(c, app)
    );
    assert_eq!(added(c, app).len(), 1);
    let running: Vec<&RunKey> = c.node::<WorkerNode>(w).running().keys().collect();
    assert_eq!(running, [&RunKey::Executor(app_id.to_string(), 0)]);
    // The worker reports to `b` over the connection `b` bound it to: its heartbeats are taken.
    let before = c.count(w, b, "Heartbeat");
    c.run_for(TIMEOUT);
    assert!(c.count(w, b, "Heartbeat") > before);
    assert_eq!(c.links_between(w, b).len(), 1, "one connection left");
}

#[test]
fn a_standby_elected_as_the_worker_registers_keeps_its_executor() {
    // `b` dials the worker (MasterChanged) while the worker's RegisterWorker is on its way; the
    // worker hears MasterChanged, then the answer to its registration on the other connection.
    let (mut c, b, w, app, app_id, stored) = failover_while_the_worker_registers();
    c.elect(b, stored);
    assert_the_executor_survived(&mut c, b, w, app, &app_id);
}

#[test]
fn a_standby_elected_as_the_worker_registers_keeps_its_executor_when_master_changed_is_late() {
    // The same, with the connection `b` dials slower than the worker's: the worker hears the
    // answer to its registration first, while the connection `b` bound it to is open and silent.
    let (mut c, b, w, app, app_id, stored) = failover_while_the_worker_registers();
    c.set_delay(None, Duration::from_millis(5));
    c.elect(b, stored);
    assert_the_executor_survived(&mut c, b, w, app, &app_id);
}
