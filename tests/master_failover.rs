//! Failover: a new master elected on what the old one persisted is RECOVERING, tells every
//! recovered worker and application MasterChanged over connections it dials, learns what runs
//! from their answers and carries on with the executors it had; peers that stay silent are
//! dropped after the worker timeout; a standby master refuses to act. Real master and worker
//! cores in the in-memory cluster (`node::sim::Cluster`), the application's client as a probe.
//! The same over real TCP, files and processes is `master_recovery.rs`.

use std::time::Duration;

use sparkwire::messages::deploy::{MasterChangeAcknowledged, RequestReadyz};
use sparkwire::messages::{Addr, ApplicationState, DeployMessage, RecoveryState, WorkerState};
use sparkwire::node::master::{Config, Effect, Input, MasterCore, Record, RecordKind, Stored};
use sparkwire::node::sim::{app_description as app_desc, Cluster, MasterNode, NodeId, WorkerNode};
use sparkwire::node::{ConnInput, ConnOutput, Core, Output, PeerInfo};
use sparkwire::wire::handshake::Role;
use sparkwire::wire::Reply;

const TIMEOUT: Duration = Duration::from_secs(5);

fn config() -> Config {
    Config {
        worker_timeout: TIMEOUT,
        ..Config::default()
    }
}

fn master_addr() -> Addr {
    Addr::new("127.0.0.1", 7077)
}

/// A master, a worker running one executor of one application: the cluster, the master, the
/// worker, the application's probe and id.
fn running() -> (Cluster, NodeId, NodeId, NodeId, String) {
    let mut c = Cluster::new();
    let m = c.add_master(config(), master_addr());
    let w = c.add_worker("worker-0", Addr::new("127.0.0.1", 53000), 2, 2048, &[m]);
    c.settle();
    let mut desc = app_desc("recover", Some(1), 256);
    desc.max_cores = Some(1);
    let (app, _, app_id) = c.app(m, Addr::new("127.0.0.1", 60000), desc);
    c.settle();
    (c, m, w, app, app_id.expect("registered"))
}

/// The master dies (its process stops, its connections close) and a new one at its address is
/// elected on what it persisted.
fn fail_over(c: &mut Cluster, old: NodeId) -> NodeId {
    let store = c.node::<MasterNode>(old).store().clone();
    c.kill(old);
    let node = MasterNode::elected_on(config(), master_addr(), c.now(), store);
    c.add(Box::new(node))
}

fn state(c: &Cluster, m: NodeId) -> RecoveryState {
    c.master(m).master_state().status
}

#[test]
fn a_new_master_recovers_workers_and_applications_that_answer() {
    let (mut c, old, w, app, app_id) = running();
    let store = c.node::<MasterNode>(old).store().clone();
    assert_eq!((store.workers.len(), store.apps.len()), (1, 1));

    let m = fail_over(&mut c, old);
    assert_eq!(state(&c, m), RecoveryState::Recovering);
    let s = c.master(m).master_state();
    assert_eq!(s.workers[0].state, WorkerState::Unknown);
    assert_eq!(s.active_apps[0].state, ApplicationState::Unknown);
    c.settle();
    // Each is dialled once and told; the real worker answers what it runs at once.
    assert_eq!(c.count(m, w, "MasterChanged"), 1);
    assert_eq!(c.count(m, app, "MasterChanged"), 1);
    assert_eq!(c.count(w, m, "WorkerSchedulerStateResponse"), 1);
    assert_eq!(
        state(&c, m),
        RecoveryState::Recovering,
        "the application has not answered yet"
    );
    let conn = c.probe(app).last_opened().expect("dialled");
    c.send(app, conn, MasterChangeAcknowledged::new(app_id.clone()));
    assert_eq!(state(&c, m), RecoveryState::Alive);
    let s = c.master(m).master_state();
    assert_eq!(s.workers[0].state, WorkerState::Alive);
    assert_eq!(s.workers[0].cores_used, 1);
    assert_eq!(s.active_apps[0].cores_granted, 1);
    // The executor carried on: no second one was started.
    assert_eq!(
        c.probe(app)
            .received()
            .filter(|m| matches!(m, DeployMessage::ExecutorAdded(_)))
            .count(),
        1
    );
    assert_eq!(c.count(m, w, "LaunchExecutor"), 0);
    assert_eq!(c.node::<WorkerNode>(w).running().len(), 1);
}

#[test]
fn peers_silent_for_the_worker_timeout_are_dropped_and_the_master_is_alive() {
    let (mut c, old, w, app, app_id) = running();
    // The worker and the application's client stop with the master: nobody answers.
    c.pause(w);
    c.pause(app);
    let m = fail_over(&mut c, old);
    assert_eq!(state(&c, m), RecoveryState::Recovering);
    c.run_for(TIMEOUT - Duration::from_millis(100));
    assert_eq!(state(&c, m), RecoveryState::Recovering);
    c.run_for(Duration::from_millis(200));
    assert_eq!(state(&c, m), RecoveryState::Alive);
    let s = c.master(m).master_state();
    assert_eq!(s.workers[0].state, WorkerState::Dead);
    assert!(s.active_apps.is_empty());
    assert_eq!(s.completed_apps[0].id, app_id);
    assert!(
        c.node::<MasterNode>(m).store().is_empty(),
        "nothing left to recover"
    );
}

#[test]
fn unreachable_peers_are_only_logged_and_a_late_worker_registers_again() {
    let (mut c, old, w, app, _) = running();
    c.pause(w);
    c.pause(app);
    let m = fail_over(&mut c, old);
    c.settle();
    assert_eq!(c.count(m, w, "MasterChanged"), 0, "nobody listens");
    c.run_for(TIMEOUT * 2);
    assert_eq!(state(&c, m), RecoveryState::Alive);
    // The worker runs again: it lost its master, and registers anew with the new one.
    c.resume(w);
    c.run_for(TIMEOUT);
    assert_eq!(c.count(m, w, "RegisteredWorker"), 1);
    let s = c.master(m).master_state();
    assert_eq!(s.workers.len(), 1);
    assert_eq!(s.workers[0].state, WorkerState::Alive);
}

#[test]
fn a_standby_master_answers_standby_and_is_not_ready() {
    let mut c = Cluster::new();
    let m = c.add_standby_master(config(), master_addr());
    assert_eq!(state(&c, m), RecoveryState::Standby);
    let w = c.add_worker("worker-0", Addr::new("127.0.0.1", 53000), 2, 2048, &[m]);
    c.settle();
    assert!(c.count(m, w, "MasterInStandby") >= 1);
    assert_eq!(c.count(m, w, "RegisteredWorker"), 0);
    let (app, _, id) = c.app(
        m,
        Addr::new("127.0.0.1", 60000),
        app_desc("early", None, 256),
    );
    assert_eq!(id, None, "a standby master stays silent to applications");
    assert_eq!(c.probe(app).received().count(), 0);
    let ui = c.add_probe(Role::Ui, "ui");
    let conn = c.connect(ui, m).expect("connected");
    assert_eq!(
        c.ask(ui, conn, RequestReadyz::new()),
        Some(Ok(Reply::Bool(false)))
    );
    c.elect(m, Default::default());
    assert_eq!(state(&c, m), RecoveryState::Alive);
    assert!(
        c.node::<MasterNode>(m).store().is_empty(),
        "nothing persisted"
    );
}

/// The master core elected (ALIVE) on an empty store, persisting.
fn persisting_core() -> (MasterCore, std::time::Instant) {
    let config = Config {
        persistent: true,
        ..config()
    };
    let t0 = std::time::Instant::now();
    let mut core = MasterCore::new(config, master_addr(), t0, 1_700_000_000_000);
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
fn open(core: &mut MasterCore, t0: std::time::Instant, conn: u64, role: Role) {
    core.handle(
        t0,
        ConnInput::Opened {
            conn,
            peer: PeerInfo {
                role,
                id: format!("peer-{conn}"),
                addr: format!("127.0.0.1:{}", 40000 + conn),
                version: sparkwire::messages::Version::V2,
                admin: false,
                max_frame_size: sparkwire::wire::DEFAULT_MAX_FRAME_SIZE,
            },
            origin: None,
        }
        .into(),
    );
}

/// Drains `core` up to its first Persist (returned), as the runtime does before it writes.
fn until_persist(core: &mut MasterCore) -> Record {
    loop {
        match core.poll() {
            Some(Output::Effect(Effect::Persist(r))) => return r,
            Some(_) => {}
            None => panic!("no record to persist"),
        }
    }
}

#[test]
fn an_application_whose_record_cannot_be_persisted_is_not_registered() {
    let (mut core, t0) = persisting_core();
    open(&mut core, t0, 1, Role::AppClient);
    core.handle(
        t0,
        ConnInput::Message {
            conn: 1,
            message: sparkwire::messages::deploy::RegisterApplication::new(
                app_desc("unpersisted", None, 256),
                sparkwire::messages::EndpointRef::at(
                    sparkwire::messages::Addr::new("127.0.0.1", 60000),
                    "AppClient",
                ),
            )
            .into(),
        }
        .into(),
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
    let after: Vec<Output<DeployMessage, Effect>> = std::iter::from_fn(|| core.poll()).collect();
    assert!(
        !after.iter().any(|o| matches!(
            o,
            Output::Conn(ConnOutput::Send {
                message: DeployMessage::RegisteredApplication(_),
                ..
            })
        )),
        "{after:?}"
    );
    assert!(after.iter().any(|o| matches!(
        o,
        Output::Conn(ConnOutput::Send { conn: 1, message: DeployMessage::ApplicationRemoved(r) })
            if r.message.starts_with("cannot persist app ") && r.message.ends_with("disk full")
    )));
    let s = core.master_state();
    assert!(s.active_apps.is_empty());
    assert_eq!(s.completed_apps[0].state, ApplicationState::Failed);
}

#[test]
fn a_driver_submission_whose_record_cannot_be_persisted_is_answered_unsuccessful() {
    let (mut core, t0) = persisting_core();
    open(&mut core, t0, 1, Role::DriverClient);
    core.handle(
        t0,
        ConnInput::Ask {
            conn: 1,
            id: 1,
            message: sparkwire::messages::deploy::RequestSubmitDriver::new(
                sparkwire::node::sim::driver_description(1, 512, false),
            )
            .into(),
        }
        .into(),
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
    let after: Vec<Output<DeployMessage, Effect>> = std::iter::from_fn(|| core.poll()).collect();
    let answer = after.iter().find_map(|o| match o {
        Output::Conn(ConnOutput::Reply {
            conn: 1,
            id: 1,
            reply: Reply::Message(DeployMessage::SubmitDriverResponse(r)),
        }) => Some(r.clone()),
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
    let (mut c, old, w, app, _) = running();
    c.pause(w);
    c.pause(app);
    let store = c.node::<MasterNode>(old).store().clone();
    c.kill(old);
    let bounded = Config {
        recovery_timeout: Some(Duration::from_secs(1)),
        ..config()
    };
    let m = c.add(Box::new(MasterNode::elected_on(
        bounded,
        master_addr(),
        c.now(),
        store,
    )));
    assert_eq!(state(&c, m), RecoveryState::Recovering);
    c.run_for(Duration::from_millis(900));
    assert_eq!(state(&c, m), RecoveryState::Recovering);
    c.run_for(Duration::from_millis(200));
    assert_eq!(
        state(&c, m),
        RecoveryState::Alive,
        "after the recovery timeout (1 s), well before the worker timeout ({TIMEOUT:?})"
    );
}
