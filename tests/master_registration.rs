//! Worker registration with the master, as Spark 4.0.1 answers it: accepted, re-registered
//! (duplicate), refused at an address already taken, and the heartbeat of a worker declared dead.
//! On the in-memory harness (no TCP, simulated time); `master_flow.rs` checks a real worker
//! refused over TCP.

#![cfg(feature = "testing")]

use std::time::Duration;

use sparkwire::messages::deploy::{RegisterWorkerFailed, RegisteredWorker};
use sparkwire::messages::{DeployMessage, WorkerState};
use sparkwire::node::master::Config;
use sparkwire::reference::master::harness::{picked, Sim};

const TIMEOUT: Duration = Duration::from_secs(60);

fn sim() -> Sim {
    Sim::new(Config {
        worker_timeout: TIMEOUT,
        ..Config::default()
    })
}

fn registered(log: &[DeployMessage]) -> Vec<RegisteredWorker> {
    picked(log, |m| match m {
        DeployMessage::RegisteredWorker(r) => Some(r.clone()),
        _ => None,
    })
}

#[test]
fn a_worker_is_registered_and_a_repeated_registration_is_answered_duplicate() {
    let mut sim = sim();
    let w = sim.worker("worker-a", 50001, 4, 1024);
    let first = registered(sim.received(w));
    assert_eq!(first.len(), 1);
    assert!(!first[0].duplicate);
    assert_eq!(
        first[0].master_address,
        sim.master_addr(),
        "echoes the address the worker dialled"
    );
    assert_eq!(first[0].master.address.as_ref(), Some(&sim.master_addr()));
    assert_eq!(sim.store().workers.len(), 1, "the worker is persisted");

    let again = sim.register_worker_message("worker-a", 50001, 4, 1024);
    sim.send(w, again);
    let answers = registered(sim.received(w));
    assert_eq!(answers.len(), 2);
    assert!(answers[1].duplicate);
    let s = sim.ask_state().expect("the state answer");
    assert_eq!(s.workers.len(), 1);
    assert_eq!(
        (s.workers[0].cores, s.workers[0].state),
        (4, WorkerState::Alive)
    );
}

#[test]
fn another_worker_id_at_a_registered_address_is_refused() {
    let mut sim = sim();
    let a = sim.worker("worker-a", 50002, 2, 1024);
    assert_eq!(registered(sim.received(a)).len(), 1);
    let b = sim.worker("worker-b", 50002, 2, 1024);
    assert_eq!(
        sim.received(b),
        &[DeployMessage::RegisterWorkerFailed(
            RegisterWorkerFailed::new(
                "Attempted to re-register worker at same address: 127.0.0.1:50002".into(),
            )
        )]
    );
    assert_eq!(sim.state().workers.len(), 1);
}

#[test]
fn a_worker_declared_dead_is_asked_to_reconnect_and_registers_again() {
    let mut sim = sim();
    let w = sim.worker("worker-quiet", 50003, 2, 1024);
    // Silent for just under the timeout: still alive.
    sim.advance(TIMEOUT - Duration::from_secs(1));
    assert_eq!(sim.state().workers[0].state, WorkerState::Alive);
    // Past the timeout (and the next check): DEAD, though the connection stays open.
    sim.advance(TIMEOUT / 2);
    assert_eq!(sim.state().workers[0].state, WorkerState::Dead);
    assert!(!sim.is_closed(w));
    assert!(
        sim.store().workers.is_empty(),
        "a dead worker is unpersisted"
    );

    sim.heartbeat(w, "worker-quiet");
    let url = sim.received(w).iter().find_map(|m| match m {
        DeployMessage::ReconnectWorker(r) => Some(r.master_url.clone()),
        _ => None,
    });
    assert_eq!(url.as_deref(), Some("sparkwire://127.0.0.1:7077"));
    let again = sim.register_worker_message("worker-quiet", 50003, 2, 1024);
    sim.send(w, again);
    let answers = registered(sim.received(w));
    assert_eq!(answers.len(), 2);
    assert!(!answers[1].duplicate, "a DEAD worker registers anew");
    assert_eq!(sim.state().workers[0].state, WorkerState::Alive);
}

#[test]
fn a_heartbeating_worker_outlives_many_timeouts_and_an_unknown_one_is_ignored() {
    let mut sim = sim();
    let w = sim.worker("worker-alive", 50004, 2, 1024);
    sim.keep_alive(w, "worker-alive");
    sim.advance(TIMEOUT * 5);
    assert_eq!(sim.state().workers[0].state, WorkerState::Alive);
    let before = sim.received(w).len();
    // A heartbeat naming a worker the master never registered is dropped without an answer.
    let stranger = sim.connect(sparkwire::wire::handshake::Role::Worker, "worker-stranger");
    sim.heartbeat(stranger, "worker-stranger");
    assert!(sim.received(stranger).is_empty());
    assert!(!sim.is_closed(stranger));
    assert_eq!(sim.received(w).len(), before);
}
