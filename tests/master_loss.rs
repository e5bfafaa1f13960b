//! Losing workers: a worker whose connection closes, and one that stops heartbeating, are DEAD;
//! their executors are LOST for their applications (with the worker's host), every application
//! hears WorkerRemoved, and the cores are scheduled elsewhere. On the in-memory harness; the
//! loss of a real worker over TCP is in `master_flow.rs`.

#![cfg(feature = "testing")]

use std::time::Duration;

use sparkwire::messages::deploy::{ExecutorUpdated, WorkerRemoved};
use sparkwire::messages::{DeployMessage, ExecutorState, WorkerState};
use sparkwire::node::master::Config;
use sparkwire::reference::master::harness::{app_desc, picked, Sim};
use sparkwire::wire::Reply;

const TIMEOUT: Duration = Duration::from_millis(1500);

fn lost(log: &[DeployMessage]) -> Vec<ExecutorUpdated> {
    picked(log, |m| match m {
        DeployMessage::ExecutorUpdated(u) if u.state == ExecutorState::Lost => Some(u.clone()),
        _ => None,
    })
}

fn removed(log: &[DeployMessage]) -> Vec<WorkerRemoved> {
    picked(log, |m| match m {
        DeployMessage::WorkerRemoved(r) => Some(r.clone()),
        _ => None,
    })
}

fn added(log: &[DeployMessage]) -> Vec<(i32, String)> {
    picked(log, |m| match m {
        DeployMessage::ExecutorAdded(e) => Some((e.id, e.worker_id.clone())),
        _ => None,
    })
}

#[test]
fn a_worker_that_goes_away_loses_its_executors_which_are_started_elsewhere() {
    let mut sim = Sim::new(Config {
        worker_timeout: TIMEOUT,
        ..Config::default()
    });
    let a = sim.worker("worker-a", 50020, 2, 2048);
    let b = sim.worker("worker-b", 50021, 2, 2048);
    sim.keep_alive(a, "worker-a");
    sim.keep_alive(b, "worker-b");
    let mut desc = app_desc("loss", Some(2), 256);
    desc.max_cores = Some(2);
    let (app, app_id) = sim.app(60000, desc);
    let app_id = app_id.expect("registered");
    let first = added(sim.received(app));
    assert_eq!(first.len(), 1, "one executor of all 2 cores");
    let (doomed, doomed_id, survivor_id) = if first[0].1 == "worker-a" {
        (a, "worker-a", "worker-b")
    } else {
        (b, "worker-b", "worker-a")
    };
    let answer = sim.executor_state(doomed, &app_id, 0, ExecutorState::Running, None);
    assert_eq!(answer, Some(Ok(Reply::Bool(true))));

    sim.close(doomed);
    let log = sim.received(app).to_vec();
    let update = &lost(&log)[0];
    assert_eq!(update.id, 0);
    assert_eq!(update.message.as_deref(), Some("worker lost"));
    assert_eq!(update.worker_host.as_deref(), Some("127.0.0.1"));
    let gone = &removed(&log)[0];
    assert_eq!(gone.id, doomed_id);
    assert_eq!(gone.host, "127.0.0.1");
    let port = if doomed_id == "worker-a" {
        50020
    } else {
        50021
    };
    assert_eq!(gone.message, format!("127.0.0.1:{port} got disassociated"));
    assert_eq!(added(&log)[1], (1, survivor_id.to_string()));
    let s = sim.state();
    assert!(s
        .workers
        .iter()
        .any(|w| w.id == doomed_id && w.state == WorkerState::Dead));
    // Time passes with the survivor heartbeating: nothing else is lost.
    sim.advance(TIMEOUT * 4);
    assert_eq!(lost(sim.received(app)).len(), 1);
}

#[test]
fn a_worker_silent_for_the_timeout_is_dead_and_its_executors_lost() {
    let mut sim = Sim::new(Config {
        worker_timeout: TIMEOUT,
        ..Config::default()
    });
    let w = sim.worker("worker-silent", 50010, 2, 2048);
    let (app, app_id) = sim.app(60001, app_desc("silent", None, 512));
    let app_id = app_id.expect("registered");
    let launch = sim.launches(w)[0].clone();
    assert_eq!(launch.app_id, app_id);
    let answer = sim.executor_state(w, &app_id, launch.exec_id, ExecutorState::Running, None);
    assert_eq!(answer, Some(Ok(Reply::Bool(true))));
    // No heartbeat ever: DEAD after the timeout, although the connection stays open.
    sim.advance(TIMEOUT);
    assert!(lost(sim.received(app)).is_empty(), "not before the timeout");
    sim.advance(TIMEOUT);
    assert!(!sim.is_closed(w));
    let log = sim.received(app);
    assert_eq!(lost(log)[0].worker_host.as_deref(), Some("127.0.0.1"));
    assert_eq!(
        removed(log)[0].message,
        "Not receiving heartbeat for 1 seconds"
    );
    // A DEAD worker is listed until it has been silent for 16 timeouts
    // (spark.dead.worker.persistence of 15 after the first), then forgotten.
    sim.advance(TIMEOUT * 13);
    assert_eq!(sim.state().workers.len(), 1);
    sim.advance(TIMEOUT * 2);
    assert!(sim.state().workers.is_empty());
}
