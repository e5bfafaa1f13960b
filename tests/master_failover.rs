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
use sparkwire::reference::master::harness::{app_desc, Sim};
use sparkwire::reference::master::proto::{DialTarget, Input, Output};
use sparkwire::reference::master::MasterConfig;
use sparkwire::wire::handshake::Role;

const TIMEOUT: Duration = Duration::from_secs(5);

fn config() -> MasterConfig {
    MasterConfig {
        worker_timeout: TIMEOUT,
        ..MasterConfig::default()
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
        .all(|o| !matches!(o, Output::Persist(_))));
}

/// The master core elected (ALIVE) on an empty store, persisting.
fn persisting_core() -> (
    sparkwire::reference::master::proto::MasterCore,
    std::time::Instant,
) {
    use sparkwire::reference::master::proto::{MasterCore, Stored};
    let mut config = config();
    config.recovery_dir = Some("<in memory>".into());
    let t0 = std::time::Instant::now();
    let mut core = MasterCore::new(
        config,
        sparkwire::messages::Addr::new("127.0.0.1", 7077),
        t0,
        sparkwire::reference::master::harness::START_WALL_MS,
    );
    core.handle(
        t0,
        Input::Elected {
            stored: Stored::default(),
        },
    );
    while core.poll().is_some() {}
    (core, t0)
}

/// Opens connection `conn` of `role` on `core`.
fn open(
    core: &mut sparkwire::reference::master::proto::MasterCore,
    t0: std::time::Instant,
    conn: u64,
    role: Role,
) {
    core.handle(
        t0,
        Input::Opened {
            conn,
            role,
            peer_id: format!("peer-{conn}"),
            addr: format!("127.0.0.1:{}", 40000 + conn),
            admin: false,
            dialled: None,
        },
    );
}

/// Drains `core` up to its first Persist (returned), as the runtime does before it writes.
fn until_persist(
    core: &mut sparkwire::reference::master::proto::MasterCore,
) -> sparkwire::reference::master::proto::Record {
    loop {
        match core.poll() {
            Some(Output::Persist(r)) => return r,
            Some(_) => {}
            None => panic!("no record to persist"),
        }
    }
}

#[test]
fn an_application_whose_record_cannot_be_persisted_is_not_registered() {
    use sparkwire::reference::master::proto::RecordKind;
    let (mut core, t0) = persisting_core();
    open(&mut core, t0, 1, Role::AppClient);
    core.handle(
        t0,
        Input::Message {
            conn: 1,
            message: sparkwire::messages::deploy::RegisterApplication::new(
                app_desc("unpersisted", None, 256),
                sparkwire::messages::EndpointRef::at(
                    sparkwire::messages::Addr::new("127.0.0.1", 60000),
                    "AppClient",
                ),
            )
            .into(),
        },
    );
    let record = until_persist(&mut core);
    assert_eq!(record.kind(), RecordKind::App);
    core.handle(
        t0,
        Input::PersistFailed {
            kind: RecordKind::App,
            id: record.id().to_string(),
            reason: "disk full".into(),
        },
    );
    let after: Vec<Output> = std::iter::from_fn(|| core.poll()).collect();
    assert!(
        !after.iter().any(|o| matches!(
            o,
            Output::Send {
                message: DeployMessage::RegisteredApplication(_),
                ..
            }
        )),
        "{after:?}"
    );
    assert!(after.iter().any(|o| matches!(
        o,
        Output::Send { conn: 1, message: DeployMessage::ApplicationRemoved(r) }
            if r.message.starts_with("cannot persist app ") && r.message.ends_with("disk full")
    )));
    let s = core.master_state();
    assert!(s.active_apps.is_empty());
    assert_eq!(s.completed_apps[0].state, ApplicationState::Failed);
}

#[test]
fn a_driver_submission_whose_record_cannot_be_persisted_is_answered_unsuccessful() {
    use sparkwire::reference::master::proto::RecordKind;
    let (mut core, t0) = persisting_core();
    open(&mut core, t0, 1, Role::DriverClient);
    core.handle(
        t0,
        Input::Ask {
            conn: 1,
            id: 1,
            message: sparkwire::messages::deploy::RequestSubmitDriver::new(
                sparkwire::reference::master::harness::driver_desc(1, 512, false),
            )
            .into(),
        },
    );
    let record = until_persist(&mut core);
    assert_eq!(record.kind(), RecordKind::Driver);
    core.handle(
        t0,
        Input::PersistFailed {
            kind: RecordKind::Driver,
            id: record.id().to_string(),
            reason: "disk full".into(),
        },
    );
    let after: Vec<Output> = std::iter::from_fn(|| core.poll()).collect();
    let answer = after.iter().find_map(|o| match o {
        Output::Reply {
            conn: 1,
            id: 1,
            reply: sparkwire::wire::Reply::Message(DeployMessage::SubmitDriverResponse(r)),
        } => Some(r.clone()),
        _ => None,
    });
    let answer = answer.expect("the submission is answered");
    assert!(!answer.success);
    assert_eq!(answer.driver_id, None);
    assert!(
        answer.message.starts_with("cannot persist driver "),
        "{}",
        answer.message
    );
    let s = core.master_state();
    assert!(s.active_drivers.is_empty());
}

#[test]
fn the_recovery_timeout_bounds_the_wait_for_silent_peers_instead_of_the_worker_timeout() {
    let mut sim = Sim::new(MasterConfig {
        recovery_timeout: Some(Duration::from_secs(1)),
        ..config()
    });
    running(&mut sim);
    sim.fail_over();
    assert_eq!(sim.core.state(), RecoveryState::Recovering);
    sim.advance(Duration::from_millis(900));
    assert_eq!(sim.core.state(), RecoveryState::Recovering);
    sim.advance(Duration::from_millis(200));
    assert_eq!(
        sim.core.state(),
        RecoveryState::Alive,
        "after the recovery timeout (1 s), well before the worker timeout ({TIMEOUT:?})"
    );
}
