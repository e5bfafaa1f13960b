//! Losing workers: a worker whose process dies (its connection closes), and one that stops
//! (no heartbeat, its connection open), are DEAD; their executors are LOST for their
//! applications (with the worker's host), every application hears WorkerRemoved, and the cores
//! are scheduled elsewhere. Real master and worker cores on the in-memory cluster
//! (`node::sim::Cluster`); the loss of a real worker process over TCP is in `master_flow.rs`.

use std::time::Duration;

use sparkwire::messages::deploy::{ExecutorUpdated, WorkerRemoved};
use sparkwire::messages::{Addr, DeployMessage, ExecutorState, WorkerState};
use sparkwire::node::master::Config;
use sparkwire::node::sim::{app_description, Cluster, NodeId};

const TIMEOUT: Duration = Duration::from_millis(1500);

fn lost(c: &Cluster, app: NodeId) -> Vec<ExecutorUpdated> {
    c.probe(app).picked(|m| match m {
        DeployMessage::ExecutorUpdated(u) if u.state == ExecutorState::Lost => Some(u.clone()),
        _ => None,
    })
}

fn removed(c: &Cluster, app: NodeId) -> Vec<WorkerRemoved> {
    c.probe(app).picked(|m| match m {
        DeployMessage::WorkerRemoved(r) => Some(r.clone()),
        _ => None,
    })
}

fn added(c: &Cluster, app: NodeId) -> Vec<(i32, String)> {
    c.probe(app).picked(|m| match m {
        DeployMessage::ExecutorAdded(e) => Some((e.id, e.worker_id.clone())),
        _ => None,
    })
}

/// A master with the tests' worker timeout.
fn cluster() -> (Cluster, NodeId) {
    let mut c = Cluster::new();
    let config = Config {
        worker_timeout: TIMEOUT,
        ..Config::default()
    };
    let m = c.add_master(config, Addr::new("127.0.0.1", 7077));
    (c, m)
}

#[test]
fn a_worker_that_goes_away_loses_its_executors_which_are_started_elsewhere() {
    let (mut c, m) = cluster();
    let a = c.add_worker("worker-a", Addr::new("127.0.0.1", 50020), 2, 2048, &[m]);
    let b = c.add_worker("worker-b", Addr::new("127.0.0.1", 50021), 2, 2048, &[m]);
    c.run_for(TIMEOUT / 2);
    let mut desc = app_description("loss", Some(2), 256);
    desc.max_cores = Some(2);
    let (app, _, app_id) = c.app(m, Addr::new("127.0.0.1", 60000), desc);
    let app_id = app_id.expect("registered");
    c.run_for(TIMEOUT / 2);
    let first = added(&c, app);
    assert_eq!(first.len(), 1, "one executor of all 2 cores");
    let (doomed, doomed_id, survivor_id, port) = if first[0].1 == "worker-a" {
        (a, "worker-a", "worker-b", 50020)
    } else {
        (b, "worker-b", "worker-a", 50021)
    };
    // The real worker started it and told the master it runs.
    assert_eq!(
        c.node::<sparkwire::node::sim::WorkerNode>(doomed)
            .running()
            .len(),
        1
    );
    assert_eq!(c.count(doomed, m, "ExecutorStateChanged"), 1);
    assert!(c.probe(app).received().any(
        |u| matches!(u, DeployMessage::ExecutorUpdated(u) if u.state == ExecutorState::Running)
    ));

    // Its process dies: it stops, and its connection closes.
    c.kill(doomed);
    c.settle();
    let update = &lost(&c, app)[0];
    assert_eq!(update.id, 0);
    assert_eq!(update.message.as_deref(), Some("worker lost"));
    assert_eq!(update.worker_host.as_deref(), Some("127.0.0.1"));
    let gone = &removed(&c, app)[0];
    assert_eq!(gone.id, doomed_id);
    assert_eq!(gone.host, "127.0.0.1");
    assert_eq!(gone.message, format!("127.0.0.1:{port} got disassociated"));
    c.run_for(TIMEOUT / 10);
    assert_eq!(added(&c, app)[1], (1, survivor_id.to_string()));
    let survivor = if doomed == a { b } else { a };
    assert_eq!(
        c.node::<sparkwire::node::sim::WorkerNode>(survivor)
            .running()
            .len(),
        1
    );
    let s = c.master(m).master_state();
    assert!(s
        .workers
        .iter()
        .any(|w| w.id == doomed_id && w.state == WorkerState::Dead));
    assert_eq!(s.active_apps[0].id, app_id);
    // Time passes with the survivor heartbeating on its own: nothing else is lost.
    c.run_for(TIMEOUT * 4);
    assert_eq!(lost(&c, app).len(), 1);
    assert!(
        c.count(survivor, m, "Heartbeat") >= 8,
        "every quarter of the timeout"
    );
}

#[test]
fn a_worker_silent_for_the_timeout_is_dead_and_its_executors_lost() {
    let (mut c, m) = cluster();
    let w = c.add_worker(
        "worker-silent",
        Addr::new("127.0.0.1", 50010),
        2,
        2048,
        &[m],
    );
    c.settle();
    let (app, _, app_id) = c.app(
        m,
        Addr::new("127.0.0.1", 60001),
        app_description("silent", None, 512),
    );
    let app_id = app_id.expect("registered");
    c.settle();
    let launched: Vec<_> = c
        .node::<sparkwire::node::sim::WorkerNode>(w)
        .running()
        .keys()
        .cloned()
        .collect();
    assert_eq!(
        launched,
        [sparkwire::node::worker::RunKey::Executor(app_id.clone(), 0)]
    );
    // The worker stops (a pause, as of a process stopped): no heartbeat, the connection open.
    c.pause(w);
    c.run_for(TIMEOUT / 2);
    assert!(lost(&c, app).is_empty(), "not before the timeout");
    c.run_for(TIMEOUT * 2);
    assert!(
        !c.links_between(w, m).is_empty(),
        "the connection stays open"
    );
    assert_eq!(lost(&c, app)[0].worker_host.as_deref(), Some("127.0.0.1"));
    assert_eq!(
        removed(&c, app)[0].message,
        "Not receiving heartbeat for 1 seconds"
    );
    // A DEAD worker is listed until it has been silent for 16 timeouts
    // (spark.dead.worker.persistence of 15 after the first), then forgotten.
    c.run_for(TIMEOUT * 12);
    assert_eq!(c.master(m).master_state().workers.len(), 1);
    c.run_for(TIMEOUT * 3);
    assert!(c.master(m).master_state().workers.is_empty());
}
