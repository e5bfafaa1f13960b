//! Failover on the in-memory harness: a new master elected on what the old one persisted is
//! RECOVERING, tells every recovered worker and application MasterChanged over connections it
//! dials, learns what runs from their answers and carries on with the executors it had; peers
//! that stay silent are dropped after the worker timeout; a standby master refuses to act. The
//! same over real TCP, files and processes is `master_recovery.rs`.

#![cfg(feature = "testing")]

use std::time::Duration;

use sparkwire::messages::deploy::{
    MasterChangeAcknowledged, RegisterWorker, WorkerExecutorStateResponse,
    WorkerSchedulerStateResponse,
};
use sparkwire::messages::{
    ApplicationState, DeployMessage, ExecutorDescription, ExecutorState, RecoveryState, Resources,
    WorkerState,
};
use sparkwire::node::master::Config;
use sparkwire::node::master::{DialTarget, Effect, Input, Output};
use sparkwire::reference::master::harness::{app_desc, Sim};
use sparkwire::wire::handshake::Role;

const TIMEOUT: Duration = Duration::from_secs(5);

fn config() -> Config {
    Config {
        worker_timeout: TIMEOUT,
        ..Config::default()
    }
}

fn master_changed(log: &[DeployMessage]) -> bool {
    log.iter()
        .any(|m| matches!(m, DeployMessage::MasterChanged(_)))
}

/// A worker running one executor of one application; the application's id.
fn running(sim: &mut Sim) -> String {
    let w = sim.worker("worker-0", 53000, 2, 2048);
    let mut desc = app_desc("recover", Some(1), 256);
    desc.max_cores = Some(1);
    let (_, app_id) = sim.app(60000, desc);
    let app_id = app_id.expect("registered");
    sim.executor_state(w, &app_id, 0, ExecutorState::Running, None);
    app_id
}

#[test]
fn a_new_master_recovers_workers_and_applications_that_answer() {
    let mut sim = Sim::new(config());
    let app_id = running(&mut sim);
    let store = sim.store().clone();
    assert_eq!((store.workers.len(), store.apps.len()), (1, 1));

    sim.fail_over();
    assert_eq!(sim.core.state(), RecoveryState::Recovering);
    let to_worker = sim.dialled(&DialTarget::Worker("worker-0".into()));
    let to_app = sim.dialled(&DialTarget::App(app_id.clone()));
    assert_eq!((to_worker.len(), to_app.len()), (1, 1), "each dialled once");
    let (w, a) = (to_worker[0], to_app[0]);
    assert!(master_changed(sim.received(w)));
    assert!(master_changed(sim.received(a)));
    assert_eq!(sim.state().workers[0].state, WorkerState::Unknown);
    assert_eq!(sim.state().active_apps[0].state, ApplicationState::Unknown);

    sim.send(
        w,
        WorkerSchedulerStateResponse::new(
            "worker-0".into(),
            vec![WorkerExecutorStateResponse::new(
                ExecutorDescription::new(app_id.clone(), 0, 0, 1, 256, ExecutorState::Running),
                Resources::new(),
            )],
            vec![],
        ),
    );
    assert_eq!(
        sim.core.state(),
        RecoveryState::Recovering,
        "the application has not answered yet"
    );
    sim.send(a, MasterChangeAcknowledged::new(app_id.clone()));
    assert_eq!(sim.core.state(), RecoveryState::Alive);
    let s = sim.state();
    assert_eq!(s.workers[0].state, WorkerState::Alive);
    assert_eq!(s.workers[0].cores_used, 1);
    assert_eq!(s.active_apps[0].cores_granted, 1);
    // The executor carried on: no second one was started, and the next gets a fresh id.
    assert!(!sim
        .received(a)
        .iter()
        .any(|m| matches!(m, DeployMessage::ExecutorAdded(_))));
    assert!(sim.launches(w).is_empty());
}

#[test]
fn peers_silent_for_the_worker_timeout_are_dropped_and_the_master_is_alive() {
    let mut sim = Sim::new(config());
    let app_id = running(&mut sim);
    sim.fail_over();
    assert_eq!(sim.core.state(), RecoveryState::Recovering);
    sim.advance(TIMEOUT - Duration::from_millis(100));
    assert_eq!(sim.core.state(), RecoveryState::Recovering);
    sim.advance(Duration::from_millis(200));
    assert_eq!(sim.core.state(), RecoveryState::Alive);
    let s = sim.state();
    assert_eq!(s.workers[0].state, WorkerState::Dead);
    assert!(s.active_apps.is_empty());
    assert_eq!(s.completed_apps[0].id, app_id);
    assert!(sim.store().is_empty(), "nothing left to recover");
}

#[test]
fn unreachable_peers_are_only_logged_and_a_late_one_registers_again() {
    let mut sim = Sim::new(config());
    running(&mut sim);
    // Nobody listens any more: every dial fails.
    let mut fresh = Sim::with_store(config(), sim.store().clone());
    assert_eq!(fresh.unreachable().len(), 2);
    fresh.advance(TIMEOUT * 2);
    assert_eq!(fresh.core.state(), RecoveryState::Alive);
    let w = fresh.connect(Role::Worker, "worker-0");
    let register: RegisterWorker = fresh.register_worker_message("worker-0", 53000, 2, 2048);
    fresh.send(w, register);
    assert!(fresh
        .received(w)
        .iter()
        .any(|m| matches!(m, DeployMessage::RegisteredWorker(r) if !r.duplicate)));
}

#[test]
fn a_standby_master_answers_standby_and_is_not_ready() {
    let mut sim = Sim::standby(config());
    assert_eq!(sim.core.state(), RecoveryState::Standby);
    let w = sim.worker("worker-0", 53000, 2, 2048);
    assert_eq!(
        sim.received(w),
        &[DeployMessage::MasterInStandby(
            sparkwire::messages::deploy::MasterInStandby::new()
        )]
    );
    let (app, id) = sim.app(60000, app_desc("early", None, 256));
    assert_eq!(id, None, "a standby master stays silent to applications");
    assert!(sim.received(app).is_empty());
    let ui = sim.connect(Role::Ui, "ui");
    assert_eq!(
        sim.ask(ui, sparkwire::messages::deploy::RequestReadyz::new()),
        Some(Ok(sparkwire::wire::Reply::Bool(false)))
    );
    sim.input(Input::Elected {
        stored: Default::default(),
    });
    assert_eq!(sim.core.state(), RecoveryState::Alive);
    assert!(sim
        .outputs()
        .iter()
        .all(|o| !matches!(o, Output::Effect(Effect::Persist(_)))));
}
