//! The master with real worker cores in the in-memory cluster (`node::sim::Cluster`): the
//! protocol of `master_flow.rs`, `master_recovery.rs` and `master_versions.rs` without sockets,
//! processes or sleeps; a standby elected as a worker registers; and what the default master
//! does with heartbeats, WorkerLatestState and application messages naming ids it does not hold
//! for the connection. An application's client, UIs and misbehaving workers are probes the
//! tests write on.

use std::time::Duration;

use sparkwire::messages::deploy::{
    Heartbeat, KillExecutors, MasterChangeAcknowledged, RegisterWorker, RequestExecutors,
    UnregisterApplication, WorkerLatestState,
};
use sparkwire::messages::{
    Addr, DeployMessage, EndpointRef, ExecutorDescription, ExecutorState, Family, RecoveryState,
    Resources, Version, WorkerState,
};
use sparkwire::node::master::Config;
use sparkwire::node::master::Stored;
use sparkwire::node::sim::{app_description, Cluster, MasterNode, NodeId, WorkerNode};
use sparkwire::node::worker::{RunKey, WorkerExit};
use sparkwire::wire::handshake::Role;
use sparkwire::wire::Reply;

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

// What the default master does with worker and application messages that name ids it does not
// hold for the connection (Spark 4.0.1's Master, `case Heartbeat`, `case WorkerLatestState`;
// SPEC §14.2 Z1, Z2). Only an id bound to another connection is refused; the rules W1, W2, P1
// and P2 (a message before the registration, or naming another id) are the strict mode's.

/// The names of the messages probe `p` received.
fn names(c: &Cluster, p: NodeId) -> Vec<&'static str> {
    c.probe(p).received().map(|m| m.name()).collect()
}

/// A heartbeat of `id`, said to come from 127.0.0.1:`port`.
fn heartbeat(id: &str, port: i32) -> Heartbeat {
    Heartbeat::new(
        id.into(),
        EndpointRef::at(Addr::new("127.0.0.1", port), "Worker"),
    )
}

#[test]
fn a_heartbeat_from_a_worker_the_master_never_registered_is_ignored() {
    let mut c = Cluster::new();
    let m = c.add_master(config(), Addr::new("127.0.0.1", 7077));
    // Before any registration on the connection (rule W1, the strict mode's).
    let ghost = c.add_probe(Role::Worker, "worker-ghost");
    let conn = c.connect(ghost, m).expect("connected");
    c.send(ghost, conn, heartbeat("worker-ghost", 52100));
    // Over a registered worker's connection, naming another id (rule W2).
    let (a, a_conn) = c.add_worker_probe(m, "worker-a", Addr::new("127.0.0.1", 52101), 1, 512);
    c.send(a, a_conn, heartbeat("worker-nobody", 52101));
    c.settle();
    assert!(names(&c, ghost).is_empty(), "{:?}", names(&c, ghost));
    assert_eq!(names(&c, a), ["RegisteredWorker"]);
    assert!(!c.probe(ghost).is_closed(conn) && !c.probe(a).is_closed(a_conn));
    let s = c.master(m).master_state();
    assert_eq!(
        s.workers
            .iter()
            .map(|w| (w.id.as_str(), w.state))
            .collect::<Vec<_>>(),
        [("worker-a", WorkerState::Alive)]
    );
}

#[test]
fn a_heartbeat_from_a_worker_the_master_declared_dead_is_answered_reconnect_worker() {
    let mut c = Cluster::new();
    let m = c.add_master(config(), Addr::new("127.0.0.1", 7077));
    let (w, conn) = c.add_worker_probe(m, "worker-silent", Addr::new("127.0.0.1", 52110), 1, 512);
    // The probe sends no heartbeat: DEAD after the worker timeout, its connection still open
    // and bound to nothing.
    c.run_for(TIMEOUT * 2);
    assert_eq!(
        c.master(m).master_state().workers[0].state,
        WorkerState::Dead
    );
    c.send(w, conn, heartbeat("worker-silent", 52110));
    let reconnect = c.probe(w).picked(|m| match m {
        DeployMessage::ReconnectWorker(r) => Some(r.master_url.clone()),
        _ => None,
    });
    assert_eq!(reconnect, ["sparkwire://127.0.0.1:7077"]);
    assert!(!c.probe(w).is_closed(conn));
    // The same over a fresh connection: the worker is bound to none.
    let again = c.add_probe(Role::Worker, "worker-silent");
    let fresh = c.connect(again, m).expect("connected");
    c.send(again, fresh, heartbeat("worker-silent", 52110));
    assert_eq!(names(&c, again), ["ReconnectWorker"]);
    // The heartbeat alone brings nothing back to life.
    assert_eq!(
        c.master(m).master_state().workers[0].state,
        WorkerState::Dead
    );
}

#[test]
fn worker_latest_state_gets_a_kill_for_each_executor_and_driver_the_master_does_not_know() {
    let mut c = Cluster::new();
    let m = c.add_master(config(), Addr::new("127.0.0.1", 7077));
    let (w, conn) = c.add_worker_probe(m, "worker-a", Addr::new("127.0.0.1", 52120), 1, 1024);
    let (_, _, app_id) = c.app(
        m,
        Addr::new("127.0.0.1", 60000),
        app_description("known", None, 256),
    );
    let app_id = app_id.expect("registered");
    assert_eq!(names(&c, w), ["RegisteredWorker", "LaunchExecutor"]);
    let exec = |app: &str, id: i32| {
        ExecutorDescription::new(app.into(), id, 0, 1, 256, ExecutorState::Running)
    };
    c.send(
        w,
        conn,
        WorkerLatestState::new(
            "worker-a".into(),
            vec![
                exec(&app_id, 0),
                exec(&app_id, 5),
                exec("app-20250101000000-0099", 0),
            ],
            vec!["driver-20250101000000-0007".into()],
        ),
    );
    let kills = c.probe(w).picked(|m| match m {
        DeployMessage::KillExecutor(k) => {
            Some(format!("{}/{} by {}", k.app_id, k.exec_id, k.master_url))
        }
        DeployMessage::KillDriver(k) => Some(k.driver_id.clone()),
        _ => None,
    });
    assert_eq!(
        kills,
        [
            format!("{app_id}/5 by sparkwire://127.0.0.1:7077"),
            "app-20250101000000-0099/0 by sparkwire://127.0.0.1:7077".to_string(),
            "driver-20250101000000-0007".to_string(),
        ],
        "the executor the master placed there is not killed"
    );
    assert!(!c.probe(w).is_closed(conn));
    assert_eq!(c.master(m).master_state().workers[0].cores_used, 1);
}

#[test]
fn worker_latest_state_naming_an_unknown_worker_changes_nothing() {
    let mut c = Cluster::new();
    let m = c.add_master(config(), Addr::new("127.0.0.1", 7077));
    let (w, conn) = c.add_worker_probe(m, "worker-a", Addr::new("127.0.0.1", 52130), 1, 1024);
    let running = vec![ExecutorDescription::new(
        "app-20250101000000-0001".into(),
        0,
        0,
        1,
        256,
        ExecutorState::Running,
    )];
    let latest = WorkerLatestState::new(
        "worker-nobody".into(),
        running,
        vec!["driver-20250101000000-0001".into()],
    );
    c.send(w, conn, latest.clone());
    // Nor from a connection where no worker registered.
    let other = c.add_probe(Role::Worker, "worker-nobody");
    let other_conn = c.connect(other, m).expect("connected");
    c.send(other, other_conn, latest);
    assert_eq!(names(&c, w), ["RegisteredWorker"]);
    assert!(names(&c, other).is_empty());
    assert!(!c.probe(w).is_closed(conn) && !c.probe(other).is_closed(other_conn));
    assert_eq!(c.master(m).master_state().workers.len(), 1);
}

#[test]
fn a_worker_message_naming_a_worker_bound_to_another_connection_is_refused() {
    let mut c = Cluster::new();
    let m = c.add_master(config(), Addr::new("127.0.0.1", 7077));
    let (a, a_conn) = c.add_worker_probe(m, "worker-a", Addr::new("127.0.0.1", 52140), 1, 1024);
    // From a connection that registered nothing, and from one bound to another worker.
    let stranger = c.add_probe(Role::Worker, "worker-stranger");
    let s_conn = c.connect(stranger, m).expect("connected");
    c.send(
        stranger,
        s_conn,
        WorkerLatestState::new("worker-a".into(), vec![], vec![]),
    );
    let (b, b_conn) = c.add_worker_probe(m, "worker-b", Addr::new("127.0.0.1", 52141), 1, 1024);
    c.send(b, b_conn, heartbeat("worker-a", 52141));
    assert!(c.probe(stranger).is_closed(s_conn) && c.probe(b).is_closed(b_conn));
    assert!(!c.probe(a).is_closed(a_conn));
    let s = c.master(m).master_state();
    let state = |id: &str| s.workers.iter().find(|w| w.id == id).map(|w| w.state);
    assert_eq!(state("worker-a"), Some(WorkerState::Alive));
    assert_eq!(
        state("worker-b"),
        Some(WorkerState::Dead),
        "lost with its connection"
    );
}

#[test]
fn a_connection_bound_to_one_worker_registers_no_other() {
    let mut c = Cluster::new();
    let m = c.add_master(config(), Addr::new("127.0.0.1", 7077));
    let (w, conn) = c.add_worker_probe(m, "worker-a", Addr::new("127.0.0.1", 52150), 1, 1024);
    let at = Addr::new("127.0.0.1", 52151);
    let second = RegisterWorker::new(
        "worker-b".into(),
        at.host.clone(),
        at.port,
        EndpointRef::at(at, "Worker"),
        1,
        1024,
        String::new(),
        Addr::new("127.0.0.1", 7077),
        Resources::new(),
    );
    c.send(w, conn, second);
    assert_eq!(names(&c, w), ["RegisteredWorker", "RegisterWorkerFailed"]);
    assert!(!c.probe(w).is_closed(conn));
    let s = c.master(m).master_state();
    assert_eq!(
        s.workers
            .iter()
            .map(|w| (w.id.as_str(), w.state))
            .collect::<Vec<_>>(),
        [("worker-a", WorkerState::Alive)]
    );
}

#[test]
fn naming_an_unknown_or_finished_application_is_answered_as_spark_does() {
    let mut c = Cluster::new();
    let m = c.add_master(config(), Addr::new("127.0.0.1", 7077));
    let (p, conn, mine) = c.app(
        m,
        Addr::new("127.0.0.1", 60000),
        app_description("mine", None, 256),
    );
    let mine = mine.expect("registered");
    let (q, q_conn, done) = c.app(
        m,
        Addr::new("127.0.0.1", 60001),
        app_description("done", None, 256),
    );
    let done = done.expect("registered");
    c.send(q, q_conn, UnregisterApplication::new(done.clone()));
    assert_eq!(c.master(m).master_state().completed_apps.len(), 1);
    // A connection that registered nothing (rule P1, the strict mode's) asks too.
    let fresh = c.add_probe(Role::AppClient, "app-client-fresh");
    let f_conn = c.connect(fresh, m).expect("connected");
    for (probe, on) in [(p, conn), (fresh, f_conn)] {
        for app in [done.as_str(), "app-20250101000000-0099"] {
            assert_eq!(
                c.ask(probe, on, RequestExecutors::new(app.into(), vec![])),
                Some(Ok(Reply::Bool(false)))
            );
            assert_eq!(
                c.ask(probe, on, KillExecutors::new(app.into(), vec!["0".into()])),
                Some(Ok(Reply::Bool(false)))
            );
            c.send(probe, on, UnregisterApplication::new(app.into()));
            c.send(probe, on, MasterChangeAcknowledged::new(app.into()));
        }
        assert!(!c.probe(probe).is_closed(on));
    }
    let s = c.master(m).master_state();
    assert_eq!(
        s.active_apps
            .iter()
            .map(|a| a.id.as_str())
            .collect::<Vec<_>>(),
        [mine.as_str()]
    );
    assert_eq!(s.completed_apps.len(), 1);
    // The active application from another connection: refused (an ask fails; it stays).
    match c.ask(
        fresh,
        f_conn,
        KillExecutors::new(mine.clone(), vec!["0".into()]),
    ) {
        Some(Err(e)) => {
            assert_eq!(e.class_name, "java.lang.SecurityException");
            assert!(e.message.contains(&mine), "{}", e.message);
        }
        other => panic!("expected a refusal, got {other:?}"),
    }
    assert_eq!(c.master(m).master_state().active_apps.len(), 1);
}
