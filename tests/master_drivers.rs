//! Drivers in cluster deploy mode as the master handles them, on the in-memory harness:
//! submission, placement on a worker, status, kills (running, waiting, all), their end states,
//! the relaunch of a supervised driver whose worker is lost, and who may kill a driver. Workers
//! running driver processes over TCP are in `master_driver_processes.rs`.

#![cfg(feature = "testing")]

use sparkwire::messages::deploy::{
    DriverStateChanged, DriverStatusResponse, KillDriverResponse, RequestDriverStatus,
    RequestKillAllDrivers, RequestKillDriver, RequestSubmitDriver,
};
use sparkwire::messages::{DeployMessage, DriverDescription, DriverState};
use sparkwire::node::master::Config;
use sparkwire::reference::master::harness::{driver_desc, picked, Sim};
use sparkwire::validate::ConnId;
use sparkwire::wire::handshake::Role;
use sparkwire::wire::Reply;

fn submit(sim: &mut Sim, c: ConnId, d: DriverDescription) -> String {
    match sim.ask(c, RequestSubmitDriver::new(d)) {
        Some(Ok(Reply::Message(DeployMessage::SubmitDriverResponse(r)))) => {
            assert!(r.success, "{}", r.message);
            let id = r.driver_id.expect("an id");
            assert_eq!(r.message, format!("Driver successfully submitted as {id}"));
            id
        }
        other => panic!("expected SubmitDriverResponse, got {other:?}"),
    }
}

fn status(sim: &mut Sim, c: ConnId, id: &str) -> DriverStatusResponse {
    match sim.ask(c, RequestDriverStatus::new(id.into())) {
        Some(Ok(Reply::Message(DeployMessage::DriverStatusResponse(r)))) => r,
        other => panic!("expected DriverStatusResponse, got {other:?}"),
    }
}

fn kill(sim: &mut Sim, c: ConnId, id: &str) -> Result<KillDriverResponse, String> {
    match sim.ask(c, RequestKillDriver::new(id.into())) {
        Some(Ok(Reply::Message(DeployMessage::KillDriverResponse(r)))) => Ok(r),
        Some(Err(e)) => Err(e.message),
        other => panic!("expected KillDriverResponse, got {other:?}"),
    }
}

fn launched(sim: &Sim, w: ConnId) -> Vec<String> {
    picked(sim.received(w), |m| match m {
        DeployMessage::LaunchDriver(l) => Some(l.driver_id.clone()),
        _ => None,
    })
}

fn ended(sim: &mut Sim, w: ConnId, id: &str, state: DriverState) {
    sim.send(w, DriverStateChanged::new(id.into(), state));
}

#[test]
fn drivers_are_submitted_placed_killed_and_end_in_their_states() {
    let mut sim = Sim::new(Config::default());
    let w = sim.worker("worker-0", 54000, 2, 2048);
    let c = sim.connect(Role::DriverClient, "client");

    let long = submit(&mut sim, c, driver_desc(1, 256, false));
    assert_eq!(launched(&sim, w), vec![long.clone()]);
    let s = status(&mut sim, c, &long);
    assert!(s.found);
    assert_eq!(s.state, Some(DriverState::Running));
    assert_eq!(s.worker_id.as_deref(), Some("worker-0"));
    assert_eq!(s.worker_host_port.as_deref(), Some("127.0.0.1:54000"));
    assert_eq!(sim.state().workers[0].cores_used, 1);
    let k = kill(&mut sim, c, &long).expect("answered");
    assert!(k.success);
    assert_eq!(k.message, format!("Kill request for {long} submitted"));
    assert!(sim
        .received(w)
        .iter()
        .any(|m| matches!(m, DeployMessage::KillDriver(k) if k.driver_id == long)));
    // Running until its worker says it ended.
    assert_eq!(status(&mut sim, c, &long).state, Some(DriverState::Running));
    ended(&mut sim, w, &long, DriverState::Killed);
    assert_eq!(status(&mut sim, c, &long).state, Some(DriverState::Killed));

    let ok = submit(&mut sim, c, driver_desc(1, 256, false));
    ended(&mut sim, w, &ok, DriverState::Finished);
    let bad = submit(&mut sim, c, driver_desc(1, 256, false));
    ended(&mut sim, w, &bad, DriverState::Failed);
    assert_eq!(status(&mut sim, c, &ok).state, Some(DriverState::Finished));
    assert_eq!(status(&mut sim, c, &bad).state, Some(DriverState::Failed));

    // Too big for any worker: it waits, and a kill ends it at once.
    let waiting = submit(&mut sim, c, driver_desc(16, 256, false));
    assert_eq!(
        status(&mut sim, c, &waiting).state,
        Some(DriverState::Submitted)
    );
    assert!(kill(&mut sim, c, &waiting).expect("answered").success);
    assert_eq!(
        status(&mut sim, c, &waiting).state,
        Some(DriverState::Killed)
    );

    let none = kill(&mut sim, c, "driver-none").expect("answered");
    assert!(!none.success);
    assert_eq!(
        none.message,
        "Driver driver-none has already finished or does not exist"
    );
    let unknown = status(&mut sim, c, "driver-none");
    assert!(!unknown.found && unknown.state.is_none());

    let a = submit(&mut sim, c, driver_desc(1, 256, false));
    match sim.ask(c, RequestKillAllDrivers::new()) {
        Some(Ok(Reply::Message(DeployMessage::KillAllDriversResponse(r)))) => {
            assert!(r.success);
            assert_eq!(r.message, "Kill request for all drivers submitted");
        }
        other => panic!("expected KillAllDriversResponse, got {other:?}"),
    }
    ended(&mut sim, w, &a, DriverState::Killed);
    let s = sim.state();
    assert!(s.active_drivers.is_empty());
    assert_eq!(s.completed_drivers.len(), 5);
    assert_eq!(s.workers[0].cores_used, 0);
    assert!(
        sim.store().drivers.is_empty(),
        "ended drivers are unpersisted"
    );
}

#[test]
fn a_supervised_driver_is_relaunched_under_a_new_id_when_its_worker_is_lost() {
    let mut sim = Sim::new(Config::default());
    let a = sim.worker("worker-a", 54001, 1, 1024);
    let c = sim.connect(Role::DriverClient, "client");
    let supervised = submit(&mut sim, c, driver_desc(1, 256, true));
    let plain = {
        let b = sim.worker("worker-b", 54002, 1, 1024);
        let id = submit(&mut sim, c, driver_desc(1, 256, false));
        assert_eq!(launched(&sim, b), vec![id.clone()], "a is full");
        sim.close(b);
        id
    };
    assert_eq!(
        status(&mut sim, c, &plain).state,
        Some(DriverState::Error),
        "an unsupervised driver of a lost worker ends in ERROR"
    );
    assert_eq!(launched(&sim, a), vec![supervised.clone()]);
    let fresh = sim.worker("worker-c", 54003, 1, 1024);
    sim.close(a);
    assert_eq!(
        status(&mut sim, c, &supervised).state,
        Some(DriverState::Relaunching)
    );
    let relaunched = launched(&sim, fresh);
    assert_eq!(relaunched.len(), 1);
    assert_ne!(relaunched[0], supervised);
    assert_eq!(
        status(&mut sim, c, &relaunched[0]).state,
        Some(DriverState::Running)
    );
    assert_eq!(sim.store().drivers.len(), 1, "the new id is persisted");
}

#[test]
fn only_the_client_that_submitted_a_driver_may_kill_it_and_a_standby_refuses_submissions() {
    let mut sim = Sim::new(Config::default());
    sim.worker("worker-0", 54000, 2, 2048);
    let owner = sim.connect(Role::DriverClient, "owner");
    let other = sim.connect(Role::DriverClient, "other");
    let id = submit(&mut sim, owner, driver_desc(1, 256, false));
    let refused = kill(&mut sim, other, &id).expect_err("refused");
    assert!(refused.contains(&id), "{refused}");
    assert!(
        !sim.is_closed(other),
        "a refused ask leaves the connection open"
    );
    // Its status is anyone's to read.
    assert!(status(&mut sim, other, &id).found);
    assert!(kill(&mut sim, owner, &id).expect("answered").success);

    let mut standby = Sim::standby(Config::default());
    let c = standby.connect(Role::DriverClient, "client");
    match standby.ask(c, RequestSubmitDriver::new(driver_desc(1, 256, false))) {
        Some(Ok(Reply::Message(DeployMessage::SubmitDriverResponse(r)))) => {
            assert!(!r.success);
            assert_eq!(
                r.message,
                "Current state is not alive: STANDBY. Can only accept driver submissions in ALIVE state."
            );
        }
        other => panic!("expected SubmitDriverResponse, got {other:?}"),
    }
}
