//! Scheduling: executors spread over workers or packed on few, the executor limit from
//! initialExecutorLimit and RequestExecutors, KillExecutors, and workers without the memory of
//! one executor left out. Real master and worker cores in the in-memory cluster
//! (`node::sim::Cluster`); the application's client is a probe.

use sparkwire::messages::deploy::{KillExecutors, RequestExecutors};
use sparkwire::messages::{
    Addr, ApplicationDescription, DeployMessage, ExecutorState, ProfileExecutors, ResourceProfile,
};
use sparkwire::node::master::Config;
use sparkwire::node::sim::{app_description as app_desc, Cluster, NodeId};
use sparkwire::node::ConnId;
use sparkwire::wire::Reply;

fn executors_added(c: &Cluster, app: NodeId) -> usize {
    c.probe(app)
        .received()
        .filter(|m| matches!(m, DeployMessage::ExecutorAdded(_)))
        .count()
}

/// The (cores, memory) of each executor worker `w` runs.
fn running(c: &Cluster, w: NodeId) -> Vec<(i32, i32)> {
    c.worker(w)
        .state_response()
        .executors
        .iter()
        .map(|e| (e.cores, e.memory_mb))
        .collect()
}

fn cluster(config: Config) -> (Cluster, NodeId) {
    let mut c = Cluster::new();
    let m = c.add_master(config, Addr::new("127.0.0.1", 7077));
    (c, m)
}

/// `n` workers of `cores` cores and `memory` MiB, registered.
fn workers(c: &mut Cluster, m: NodeId, n: usize, cores: i32, memory: i32) -> Vec<NodeId> {
    let ws = (0..n)
        .map(|i| {
            let at = Addr::new("127.0.0.1", 51000 + i as i32);
            c.add_worker(&format!("worker-{i}"), at, cores, memory, &[m])
        })
        .collect();
    c.settle();
    ws
}

/// An application of `desc` registered, and its executors started: its probe, its connection
/// and its id.
fn app(c: &mut Cluster, m: NodeId, desc: ApplicationDescription) -> (NodeId, ConnId, String) {
    let (app, conn, id) = c.app(m, Addr::new("127.0.0.1", 60000), desc);
    c.settle();
    (app, conn, id.expect("registered"))
}

fn placement(spread_out: bool) -> Vec<usize> {
    let (mut c, m) = cluster(Config {
        spread_out,
        ..Config::default()
    });
    let ws = workers(&mut c, m, 3, 4, 4096);
    let mut desc = app_desc("place", Some(1), 256);
    desc.max_cores = Some(3);
    let (app, _, _) = app(&mut c, m, desc);
    assert_eq!(executors_added(&c, app), 3);
    assert!(ws
        .iter()
        .flat_map(|w| running(&c, *w))
        .all(|e| e == (1, 256)));
    ws.iter().map(|w| running(&c, *w).len()).collect()
}

#[test]
fn spread_out_mode_puts_one_executor_on_each_worker() {
    assert_eq!(placement(true), vec![1, 1, 1]);
}

#[test]
fn consolidate_mode_fills_one_worker_first() {
    let mut got = placement(false);
    got.sort_unstable();
    assert_eq!(got, vec![0, 0, 3]);
}

#[test]
fn launch_executor_goes_to_the_worker_before_executor_added_to_the_application() {
    let (mut c, m) = cluster(Config::default());
    let w = workers(&mut c, m, 1, 2, 2048)[0];
    let (app, _, _) = app(&mut c, m, app_desc("order", None, 512));
    let order: Vec<(NodeId, &str)> = c
        .sent()
        .iter()
        .filter(|s| s.from == m && matches!(s.name.as_str(), "LaunchExecutor" | "ExecutorAdded"))
        .map(|s| (s.to, s.name.as_str()))
        .collect();
    assert_eq!(order, vec![(w, "LaunchExecutor"), (app, "ExecutorAdded")]);
}

#[test]
fn the_executor_limit_follows_requests_and_killed_executors_are_not_replaced() {
    let (mut c, m) = cluster(Config::default());
    let w = workers(&mut c, m, 1, 8, 8192)[0];
    let mut desc = app_desc("limit", Some(2), 512);
    desc.initial_executor_limit = Some(1);
    let (app, conn, app_id) = app(&mut c, m, desc);
    assert_eq!(executors_added(&c, app), 1);

    let profile = ResourceProfile::default_with(Some(2), 512);
    let reply = c.ask(
        app,
        conn,
        RequestExecutors::new(app_id.clone(), vec![ProfileExecutors::new(profile, 3)]),
    );
    assert_eq!(reply, Some(Ok(Reply::Bool(true))));
    c.settle();
    assert_eq!(executors_added(&c, app), 3);
    assert_eq!(running(&c, w).len(), 3);

    let profile = ResourceProfile::default_with(Some(2), 512);
    let reply = c.ask(
        app,
        conn,
        RequestExecutors::new(app_id.clone(), vec![ProfileExecutors::new(profile, 2)]),
    );
    assert_eq!(reply, Some(Ok(Reply::Bool(true))));
    let reply = c.ask(
        app,
        conn,
        KillExecutors::new(app_id.clone(), vec!["1".into(), "not-a-number".into()]),
    );
    assert_eq!(reply, Some(Ok(Reply::Bool(true))));
    c.settle();
    // The worker killed executor 1; two remain, matching the limit of 2: none is added.
    assert_eq!(c.count(m, w, "KillExecutor"), 1);
    let ws = c.worker(w).state_response();
    assert!(ws
        .finished_executors
        .iter()
        .any(|e| e.exec_id == 1 && e.app_id == app_id && e.state == ExecutorState::Killed));
    let s = c.master(m).master_state();
    assert_eq!(s.workers[0].cores_used, 4);
    assert_eq!(s.active_apps[0].cores_granted, 4);
    assert_eq!(executors_added(&c, app), 3);
}

#[test]
fn workers_without_the_memory_of_one_executor_get_none() {
    let (mut c, m) = cluster(Config::default());
    let small = c.add_worker("worker-small", Addr::new("127.0.0.1", 51100), 8, 256, &[m]);
    let big = c.add_worker("worker-big", Addr::new("127.0.0.1", 51101), 2, 4096, &[m]);
    c.settle();
    let (app, _, _) = app(&mut c, m, app_desc("mem", None, 1024));
    assert_eq!(executors_added(&c, app), 1);
    assert_eq!(
        running(&c, big),
        [(2, 1024)],
        "one executor takes every core of the worker"
    );
    assert!(running(&c, small).is_empty());
}

#[test]
fn the_web_ui_status_lists_executors_and_connections_as_the_core_knows_them() {
    let (mut c, m) = cluster(Config::default());
    workers(&mut c, m, 1, 2, 2048);
    let (_, _, app_id) = app(&mut c, m, app_desc("ui", Some(1), 300));
    let status = c.master(m).status();
    let rows: Vec<_> = status
        .executors
        .iter()
        .map(|e| {
            (
                e.app_id.as_str(),
                e.exec_id,
                e.worker_id.as_str(),
                e.cores,
                e.memory_mb,
                e.state,
            )
        })
        .collect();
    assert_eq!(
        rows,
        vec![
            (
                app_id.as_str(),
                0,
                "worker-0",
                1,
                300,
                ExecutorState::Running
            ),
            (
                app_id.as_str(),
                1,
                "worker-0",
                1,
                300,
                ExecutorState::Running
            ),
        ]
    );
    assert_eq!(status.connections.get("worker"), Some(&1));
    assert_eq!(status.connections.get("app-client"), Some(&1));
    assert_eq!(
        Some(status.state),
        c.ask_state(m),
        "the pages show what the state answer shows"
    );
}
