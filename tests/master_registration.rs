//! Worker registration with the master, as Spark 4.0.1 answers it: accepted, re-registered
//! (duplicate), refused at an address already taken, and a worker declared dead that is asked to
//! reconnect. Real master and worker cores in the in-memory cluster (`node::sim::Cluster`), with
//! a probe where a test writes a worker's messages itself; `master_cluster.rs` has a real worker
//! stop when its registration is refused.

use std::time::Duration;

use sparkwire::messages::deploy::{RegisterWorker, RegisterWorkerFailed, RegisteredWorker};
use sparkwire::messages::{Addr, DeployMessage, EndpointRef, Resources, WorkerState};
use sparkwire::node::master::Config;
use sparkwire::node::sim::{Cluster, MasterNode, NodeId};
use sparkwire::wire::handshake::Role;

const TIMEOUT: Duration = Duration::from_secs(60);

fn master_addr() -> Addr {
    Addr::new("127.0.0.1", 7077)
}

fn cluster() -> (Cluster, NodeId) {
    let mut c = Cluster::new();
    let config = Config {
        worker_timeout: TIMEOUT,
        ..Config::default()
    };
    let m = c.add_master(config, master_addr());
    (c, m)
}

fn register(id: &str, port: i32, cores: i32) -> RegisterWorker {
    let at = Addr::new("127.0.0.1", port);
    RegisterWorker::new(
        id.into(),
        at.host.clone(),
        port,
        EndpointRef::at(at, "Worker"),
        cores,
        1024,
        String::new(),
        master_addr(),
        Resources::new(),
    )
}

fn registered(c: &Cluster, probe: NodeId) -> Vec<RegisteredWorker> {
    c.probe(probe).picked(|m| match m {
        DeployMessage::RegisteredWorker(r) => Some(r.clone()),
        _ => None,
    })
}

#[test]
fn a_worker_is_registered_and_a_repeated_registration_is_answered_duplicate() {
    let (mut c, m) = cluster();
    let w = c.add_probe(Role::Worker, "worker-a");
    let conn = c.connect(w, m).expect("connected");
    c.send(w, conn, register("worker-a", 50001, 4));
    let first = registered(&c, w);
    assert_eq!(first.len(), 1);
    assert!(!first[0].duplicate);
    assert_eq!(
        first[0].master_address,
        master_addr(),
        "echoes the address the worker dialled"
    );
    assert_eq!(first[0].master.address.as_ref(), Some(&master_addr()));
    assert_eq!(
        c.node::<MasterNode>(m).store().workers.len(),
        1,
        "the worker is persisted"
    );

    c.send(w, conn, register("worker-a", 50001, 4));
    let answers = registered(&c, w);
    assert_eq!(answers.len(), 2);
    assert!(answers[1].duplicate);
    let s = c.master(m).master_state();
    assert_eq!(s.workers.len(), 1);
    assert_eq!(
        (s.workers[0].cores, s.workers[0].state),
        (4, WorkerState::Alive)
    );
}

#[test]
fn another_worker_id_at_a_registered_address_is_refused() {
    let (mut c, m) = cluster();
    c.add_worker("worker-a", Addr::new("127.0.0.1", 50002), 2, 1024, &[m]);
    c.settle();
    let b = c.add_probe(Role::Worker, "worker-b");
    let conn = c.connect(b, m).expect("connected");
    c.send(b, conn, register("worker-b", 50002, 2));
    let answers: Vec<_> = c.probe(b).received().cloned().collect();
    assert_eq!(
        answers,
        [DeployMessage::RegisterWorkerFailed(
            RegisterWorkerFailed::new(
                "Attempted to re-register worker at same address: 127.0.0.1:50002".into(),
            )
        )]
    );
    assert_eq!(c.master(m).master_state().workers.len(), 1);
}

#[test]
fn a_worker_declared_dead_is_asked_to_reconnect_and_registers_again() {
    let (mut c, m) = cluster();
    let w = c.add_worker("worker-quiet", Addr::new("127.0.0.1", 50003), 2, 1024, &[m]);
    c.settle();
    // The worker stops (its connection open): silent for just under the timeout, still alive.
    c.pause(w);
    c.run_for(TIMEOUT - Duration::from_secs(1));
    assert_eq!(
        c.master(m).master_state().workers[0].state,
        WorkerState::Alive
    );
    // Past the timeout (and the next check): DEAD, though the connection stays open.
    c.run_for(TIMEOUT / 2);
    assert_eq!(
        c.master(m).master_state().workers[0].state,
        WorkerState::Dead
    );
    assert!(!c.links_between(w, m).is_empty());
    assert!(
        c.node::<MasterNode>(m).store().workers.is_empty(),
        "a dead worker is unpersisted"
    );

    // It runs again: its next heartbeat is answered ReconnectWorker, and it registers anew.
    c.resume(w);
    c.run_for(TIMEOUT / 2);
    assert_eq!(c.count(m, w, "ReconnectWorker"), 1);
    assert_eq!(c.count(w, m, "RegisterWorker"), 2);
    assert_eq!(c.count(m, w, "RegisteredWorker"), 2);
    assert_eq!(
        c.master(m).master_state().workers[0].state,
        WorkerState::Alive
    );
    assert!(c.worker(w).exit().is_none());
}

#[test]
fn a_heartbeating_worker_outlives_many_timeouts_and_an_unknown_one_is_ignored() {
    let (mut c, m) = cluster();
    let w = c.add_worker("worker-alive", Addr::new("127.0.0.1", 50004), 2, 1024, &[m]);
    c.run_for(TIMEOUT * 5);
    assert_eq!(
        c.master(m).master_state().workers[0].state,
        WorkerState::Alive
    );
    assert!(
        c.count(w, m, "Heartbeat") >= 20,
        "every quarter of the timeout"
    );
    // A heartbeat naming a worker the master never registered is dropped without an answer.
    let stranger = c.add_probe(Role::Worker, "worker-stranger");
    let conn = c.connect(stranger, m).expect("connected");
    let at = Addr::new("127.0.0.1", 50005);
    c.send(
        stranger,
        conn,
        sparkwire::messages::deploy::Heartbeat::new(
            "worker-stranger".into(),
            EndpointRef::at(at, "Worker"),
        ),
    );
    assert_eq!(c.probe(stranger).received().count(), 0);
    assert!(!c.probe(stranger).is_closed(conn));
}
