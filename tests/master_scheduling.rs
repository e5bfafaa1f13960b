//! Scheduling: executors spread over workers or packed on few, the executor limit from
//! initialExecutorLimit and RequestExecutors, KillExecutors, and workers without the memory of
//! one executor left out. On the in-memory harness: workers are simulated, time does not pass.

#![cfg(feature = "testing")]

use sparkwire::messages::deploy::{KillExecutors, RequestExecutors};
use sparkwire::messages::{DeployMessage, ProfileExecutors, ResourceProfile};
use sparkwire::node::master::Config;
use sparkwire::reference::master::harness::{app_desc, Sim};
use sparkwire::validate::ConnId;
use sparkwire::wire::Reply;

fn count(log: &[DeployMessage], f: impl Fn(&DeployMessage) -> bool) -> usize {
    log.iter().filter(|m| f(m)).count()
}

fn executors_added(log: &[DeployMessage]) -> usize {
    count(log, |m| matches!(m, DeployMessage::ExecutorAdded(_)))
}

fn workers(sim: &mut Sim, n: usize, cores: i32, memory: i32) -> Vec<ConnId> {
    (0..n)
        .map(|i| sim.worker(&format!("worker-{i}"), 51000 + i as i32, cores, memory))
        .collect()
}

fn placement(spread_out: bool) -> Vec<usize> {
    let mut sim = Sim::new(Config {
        spread_out,
        ..Config::default()
    });
    let ws = workers(&mut sim, 3, 4, 4096);
    let mut desc = app_desc("place", Some(1), 256);
    desc.max_cores = Some(3);
    let (app, _) = sim.app(60000, desc);
    assert_eq!(executors_added(sim.received(app)), 3);
    assert!(ws
        .iter()
        .flat_map(|w| sim.launches(*w))
        .all(|l| l.cores == 1 && l.memory == 256));
    ws.iter().map(|w| sim.launches(*w).len()).collect()
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
    let mut sim = Sim::new(Config::default());
    let w = sim.worker("worker-0", 51000, 2, 2048);
    let (app, _) = sim.app(60000, app_desc("order", None, 512));
    let order: Vec<(ConnId, &'static str)> = sim
        .outputs()
        .iter()
        .filter_map(|o| match o {
            sparkwire::node::Output::Conn(sparkwire::node::ConnOutput::Send { conn, message })
                if matches!(
                    message,
                    DeployMessage::LaunchExecutor(_) | DeployMessage::ExecutorAdded(_)
                ) =>
            {
                Some((*conn, sparkwire::messages::Family::name(message)))
            }
            _ => None,
        })
        .collect();
    assert_eq!(order, vec![(w, "LaunchExecutor"), (app, "ExecutorAdded")]);
}

#[test]
fn the_executor_limit_follows_requests_and_killed_executors_are_not_replaced() {
    let mut sim = Sim::new(Config::default());
    let ws = workers(&mut sim, 1, 8, 8192);
    let mut desc = app_desc("limit", Some(2), 512);
    desc.initial_executor_limit = Some(1);
    let (app, app_id) = sim.app(60000, desc);
    let app_id = app_id.expect("registered");
    assert_eq!(executors_added(sim.received(app)), 1);

    let profile = ResourceProfile::default_with(Some(2), 512);
    let reply = sim.ask(
        app,
        RequestExecutors::new(app_id.clone(), vec![ProfileExecutors::new(profile, 3)]),
    );
    assert_eq!(reply, Some(Ok(Reply::Bool(true))));
    assert_eq!(executors_added(sim.received(app)), 3);

    let profile = ResourceProfile::default_with(Some(2), 512);
    let reply = sim.ask(
        app,
        RequestExecutors::new(app_id.clone(), vec![ProfileExecutors::new(profile, 2)]),
    );
    assert_eq!(reply, Some(Ok(Reply::Bool(true))));
    let reply = sim.ask(
        app,
        KillExecutors::new(app_id.clone(), vec!["1".into(), "not-a-number".into()]),
    );
    assert_eq!(reply, Some(Ok(Reply::Bool(true))));
    assert!(sim.received(ws[0]).iter().any(
        |m| matches!(m, DeployMessage::KillExecutor(k) if k.exec_id == 1 && k.app_id == app_id)
    ));
    // Two executors remain, matching the limit of 2: none is added.
    let s = sim.state();
    assert_eq!(s.workers[0].cores_used, 4);
    assert_eq!(s.active_apps[0].cores_granted, 4);
    assert_eq!(executors_added(sim.received(app)), 3);
}

#[test]
fn workers_without_the_memory_of_one_executor_get_none() {
    let mut sim = Sim::new(Config::default());
    let small = sim.worker("worker-small", 51100, 8, 256);
    let big = sim.worker("worker-big", 51101, 2, 4096);
    let (app, _) = sim.app(60000, app_desc("mem", None, 1024));
    assert_eq!(executors_added(sim.received(app)), 1);
    assert_eq!(sim.launches(big).len(), 1);
    assert_eq!(
        sim.launches(big)[0].cores,
        2,
        "one executor takes every core of the worker"
    );
    assert!(sim.launches(small).is_empty());
}

#[test]
fn the_web_ui_snapshot_lists_executors_and_connections_as_the_core_knows_them() {
    let mut sim = Sim::new(Config::default());
    let w = sim.worker("worker-0", 51000, 2, 2048);
    let (_, app_id) = sim.app(60000, app_desc("ui", Some(1), 300));
    let app_id = app_id.expect("registered");
    sim.executor_state(
        w,
        &app_id,
        1,
        sparkwire::messages::ExecutorState::Running,
        None,
    );
    let snap = sim.core.status();
    let rows: Vec<_> = snap
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
    use sparkwire::messages::ExecutorState::{Launching, Running};
    assert_eq!(
        rows,
        vec![
            (app_id.as_str(), 0, "worker-0", 1, 300, Launching),
            (app_id.as_str(), 1, "worker-0", 1, 300, Running),
        ]
    );
    assert_eq!(snap.connections.get("worker"), Some(&1));
    assert_eq!(snap.connections.get("app-client"), Some(&1));
    assert_eq!(
        snap.state,
        sim.state(),
        "the pages show what the state answer shows"
    );
}
