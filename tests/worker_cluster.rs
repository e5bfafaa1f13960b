//! The worker core in the in-memory cluster (`node::sim::Cluster`), with a real master core or
//! none: it retries its registration as Spark does and gives up, registers again when its
//! master's connection is lost, and takes commands only from the master it registered with, over
//! that connection. The worker's launch decisions in detail are its core's unit tests
//! (`src/node/worker/tests.rs`); its processes and files over TCP, `master_flow.rs`.

use std::time::Duration;

use sparkwire::messages::deploy::{KillExecutor, LaunchExecutor};
use sparkwire::messages::{Addr, Resources};
use sparkwire::node::master::Config;
use sparkwire::node::sim::{app_description, Cluster, Probe, WorkerNode};
use sparkwire::node::worker::{WorkerExit, REGISTRATION_RETRIES};
use sparkwire::wire::handshake::Role;

#[test]
fn with_no_master_listening_it_retries_the_registration_then_gives_up_as_spark_does() {
    let mut c = Cluster::new();
    // A worker timeout of 40 s: registration attempts every 10 s, as Spark's.
    let nobody = Addr::new("127.0.0.1", 7077);
    let w = c.add(Box::new(WorkerNode::new(
        "worker-alone",
        Addr::new("127.0.0.1", 50000),
        1,
        1024,
        vec![nobody],
        Duration::from_secs(40),
        c.now(),
    )));
    let gave_up = c.run_until(Duration::from_secs(2000), |c| c.worker(w).exit().is_some());
    assert!(gave_up);
    assert_eq!(c.worker(w).exit(), Some(&WorkerExit::GaveUp));
    // Six waits fuzzed ±50 % around 10 s, then ten around 60 s: 330 s to 990 s in all.
    let took = c.elapsed();
    assert!(
        took >= Duration::from_secs(330) && took <= Duration::from_secs(990),
        "{took:?} for {REGISTRATION_RETRIES} attempts"
    );
    // A master that comes up later finds it gone.
    let m = c.add_master(Config::default(), Addr::new("127.0.0.1", 7077));
    c.run_for(Duration::from_secs(60));
    assert!(c.master(m).master_state().workers.is_empty());
}

#[test]
fn a_lost_master_connection_makes_it_register_again() {
    let mut c = Cluster::new();
    let config = Config {
        worker_timeout: Duration::from_secs(4),
        ..Config::default()
    };
    let m = c.add_master(config, Addr::new("127.0.0.1", 7077));
    let w = c.add_worker("worker-0", Addr::new("127.0.0.1", 50000), 1, 1024, &[m]);
    c.settle();
    for link in c.links_between(w, m) {
        c.close(link);
    }
    c.run_for(Duration::from_secs(4));
    assert_eq!(c.count(w, m, "RegisterWorker"), 2);
    assert_eq!(c.count(m, w, "RegisteredWorker"), 2);
    let s = c.master(m).master_state();
    assert_eq!(s.workers.len(), 1);
    assert_eq!(s.workers[0].state, sparkwire::messages::WorkerState::Alive);
    assert!(c.worker(w).exit().is_none());
}

#[test]
fn commands_are_taken_only_from_the_registered_master_over_its_connection() {
    let mut c = Cluster::new();
    let m = c.add_master(Config::default(), Addr::new("127.0.0.1", 7077));
    let w = c.add_worker("worker-0", Addr::new("127.0.0.1", 50000), 2, 2048, &[m]);
    c.settle();
    let (_, _, app_id) = c.app(
        m,
        Addr::new("127.0.0.1", 60000),
        app_description("app", Some(1), 256),
    );
    let app_id = app_id.expect("registered");
    c.settle();
    assert_eq!(c.node::<WorkerNode>(w).running().len(), 2);
    let master_url = "sparkwire://127.0.0.1:7077".to_string();

    // A UI connected to the worker cannot launch anything: its connection closes.
    let ui = c.add_probe(Role::Ui, "ui");
    let conn = c.connect(ui, w).expect("connected");
    let launch = LaunchExecutor::new(
        master_url.clone(),
        app_id.clone(),
        9,
        0,
        app_description("app", Some(1), 256),
        1,
        1,
        Resources::new(),
    );
    c.send(ui, conn, launch);
    assert!(c.probe(ui).is_closed(conn));
    // Nor can a master over a connection it opened (not the one the worker registered over).
    let other = c.add(Box::new(Probe::new(Role::Master, "master-other")));
    let conn = c.connect(other, w).expect("connected");
    c.send(other, conn, KillExecutor::new(master_url, app_id, 0));
    assert!(c.probe(other).is_closed(conn));
    assert_eq!(
        c.node::<WorkerNode>(w).running().len(),
        2,
        "nothing started or killed"
    );
    assert_eq!(c.master(m).master_state().workers[0].cores_used, 2);
}
