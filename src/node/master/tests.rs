//! The master core's unit tests: one core fed inputs by hand, its outputs read one by one. What
//! the default master does with messages naming ids it does not hold for the connection (Spark
//! 4.0.1's Master, `case Heartbeat` and `case WorkerLatestState`; SPEC §14.2 Z1, Z2). The same
//! rules with real worker cores and probes are in `tests/master_cluster.rs`.

use std::time::{Duration, Instant};

use super::{Config, Effect, Input, MasterCore, Output, Stored};
use crate::messages::deploy::{
    Heartbeat, KillExecutors, MasterChangeAcknowledged, RegisterApplication, RegisterWorker,
    RequestExecutors, UnregisterApplication, WorkerDecommissioning, WorkerLatestState,
    WorkerSchedulerStateResponse,
};
use crate::messages::{
    Addr, DeployMessage, EndpointRef, ExecutorDescription, ExecutorState, Family, Resources,
    WorkerState,
};
use crate::node::{ConnId, ConnInput, ConnOutput, Core, PeerInfo};
use crate::wire::handshake::Role;

struct Harness {
    core: MasterCore,
    now: Instant,
}

impl Harness {
    /// An ALIVE master with a 1 s worker timeout.
    fn new() -> Harness {
        let now = Instant::now();
        let config = Config {
            worker_timeout: Duration::from_secs(1),
            ..Config::default()
        };
        let mut core = MasterCore::new(config, Addr::new("10.0.0.1", 7077), now, 0);
        core.handle(
            now,
            Input::Elected {
                stored: Stored::default(),
            },
        );
        let mut h = Harness { core, now };
        h.take();
        h
    }

    fn take(&mut self) -> Vec<Output> {
        std::iter::from_fn(|| self.core.poll()).collect()
    }

    fn open(&mut self, conn: ConnId, role: Role) {
        self.core.handle(
            self.now,
            ConnInput::Opened {
                conn,
                peer: PeerInfo {
                    role,
                    id: format!("peer-{conn}"),
                    addr: format!("10.0.0.9:{}", 40000 + conn),
                    version: crate::messages::Version::V2,
                    admin: false,
                    max_frame_size: crate::wire::DEFAULT_MAX_FRAME_SIZE,
                },
                origin: None,
            }
            .into(),
        );
    }

    /// `message` one-way on `conn`: what the master did, as text.
    fn send(&mut self, conn: ConnId, message: impl Into<DeployMessage>) -> Vec<String> {
        self.core.handle(
            self.now,
            ConnInput::Message {
                conn,
                message: message.into(),
            }
            .into(),
        );
        texts(&self.take())
    }

    /// `message` asked on `conn`: what the master did, as text.
    fn ask(&mut self, conn: ConnId, message: impl Into<DeployMessage>) -> Vec<String> {
        self.core.handle(
            self.now,
            ConnInput::Ask {
                conn,
                id: 1,
                message: message.into(),
            }
            .into(),
        );
        texts(&self.take())
    }

    /// Worker `id` (at 10.0.0.9:`conn`) registered over a fresh connection `conn`.
    fn worker(&mut self, conn: ConnId, id: &str) {
        self.open(conn, Role::Worker);
        let at = Addr::new("10.0.0.9", i32::try_from(conn).unwrap_or(0));
        let register = RegisterWorker::new(
            id.into(),
            at.host.clone(),
            at.port,
            EndpointRef::at(at, "Worker"),
            2,
            2048,
            String::new(),
            Addr::new("10.0.0.1", 7077),
            Resources::new(),
        );
        assert_eq!(
            self.send(conn, register),
            [
                "registered".to_string(),
                format!("send RegisteredWorker on {conn}")
            ]
        );
    }

    /// An application registered over a fresh connection `conn`: its id.
    fn app(&mut self, conn: ConnId) -> String {
        self.open(conn, Role::AppClient);
        let desc = crate::node::sim::app_description("t", Some(1), 256);
        self.core.handle(
            self.now,
            ConnInput::Message {
                conn,
                message: RegisterApplication::new(desc, EndpointRef::client("t")).into(),
            }
            .into(),
        );
        self.take()
            .into_iter()
            .find_map(|o| match o {
                Output::Conn(ConnOutput::Send {
                    message: DeployMessage::RegisteredApplication(r),
                    ..
                }) => Some(r.app_id),
                _ => None,
            })
            .expect("registered")
    }

    fn worker_state(&self, id: &str) -> Option<WorkerState> {
        let s = self.core.master_state();
        s.workers.iter().find(|w| w.id == id).map(|w| w.state)
    }
}

/// Outputs as text: `send NAME on CONN`, `close CONN: KIND`, `reply VALUE on CONN`, ….
fn texts(out: &[Output]) -> Vec<String> {
    out.iter()
        .map(|o| match o {
            Output::Conn(ConnOutput::Send { conn, message }) => match message {
                DeployMessage::KillExecutor(k) => {
                    format!("send KillExecutor {}/{} on {conn}", k.app_id, k.exec_id)
                }
                DeployMessage::KillDriver(k) => {
                    format!("send KillDriver {} on {conn}", k.driver_id)
                }
                m => format!("send {} on {conn}", m.name()),
            },
            Output::Conn(ConnOutput::Close { conn, reason }) => format!(
                "close {conn}: {}",
                reason.as_ref().map_or("-", |r| r.kind.as_str())
            ),
            Output::Conn(ConnOutput::Reply { conn, reply, .. }) => {
                format!("reply {reply:?} on {conn}")
            }
            Output::Conn(ConnOutput::Fail { conn, error, .. }) => {
                format!("fail {} on {conn}", error.class_name)
            }
            Output::Conn(other) => format!("{other:?}"),
            Output::Effect(Effect::Registered { .. }) => "registered".into(),
            Output::Effect(e) => format!("{e:?}"),
        })
        .collect()
}

fn heartbeat(id: &str) -> Heartbeat {
    Heartbeat::new(
        id.into(),
        EndpointRef::at(Addr::new("10.0.0.9", 1), "Worker"),
    )
}

fn exec(app: &str, id: i32) -> ExecutorDescription {
    ExecutorDescription::new(app.into(), id, 0, 1, 256, ExecutorState::Running)
}

#[test]
fn a_heartbeat_naming_a_worker_never_registered_is_ignored_and_the_connection_stays() {
    let mut h = Harness::new();
    h.open(1, Role::Worker);
    assert!(h.send(1, heartbeat("worker-ghost")).is_empty());
    h.worker(2, "worker-a");
    assert!(h.send(2, heartbeat("worker-ghost")).is_empty());
    // Both connections still take messages.
    assert!(h.send(1, heartbeat("worker-ghost")).is_empty());
    assert!(h.send(2, heartbeat("worker-a")).is_empty());
    assert_eq!(h.core.master_state().workers.len(), 1);
}

#[test]
fn a_heartbeat_naming_a_dead_worker_is_answered_reconnect_worker_on_its_connection() {
    let mut h = Harness::new();
    h.worker(1, "worker-a");
    h.now += Duration::from_secs(3);
    h.core.handle_timeout(h.now);
    h.take();
    assert_eq!(h.worker_state("worker-a"), Some(WorkerState::Dead));
    assert_eq!(
        h.send(1, heartbeat("worker-a")),
        ["send ReconnectWorker on 1"]
    );
    h.open(2, Role::Worker);
    assert_eq!(
        h.send(2, heartbeat("worker-a")),
        ["send ReconnectWorker on 2"]
    );
    assert_eq!(h.worker_state("worker-a"), Some(WorkerState::Dead));
}

#[test]
fn a_message_naming_a_worker_bound_to_another_connection_is_refused() {
    for message in [
        DeployMessage::from(heartbeat("worker-a")),
        WorkerLatestState::new("worker-a".into(), vec![], vec![]).into(),
        WorkerDecommissioning::new(
            "worker-a".into(),
            EndpointRef::at(Addr::new("10.0.0.9", 1), "Worker"),
        )
        .into(),
        WorkerSchedulerStateResponse::new("worker-a".into(), vec![], vec![]).into(),
    ] {
        let mut h = Harness::new();
        h.worker(1, "worker-a");
        h.worker(2, "worker-b");
        h.open(3, Role::Worker);
        let name = message.name();
        assert_eq!(h.send(3, message.clone()), ["close 3: NotOwner"], "{name}");
        assert_eq!(h.send(2, message), ["close 2: NotOwner"], "{name}");
        assert_eq!(
            h.worker_state("worker-a"),
            Some(WorkerState::Alive),
            "{name}"
        );
    }
}

#[test]
fn worker_latest_state_kills_what_the_master_does_not_know_over_the_workers_connection() {
    let mut h = Harness::new();
    h.worker(1, "worker-a");
    let app = h.app(2);
    // The application's first executor went to the worker (1 core of 2; a second too).
    let latest = WorkerLatestState::new(
        "worker-a".into(),
        vec![
            exec(&app, 0),
            exec(&app, 1),
            exec(&app, 9),
            exec("app-x", 0),
        ],
        vec!["driver-x".into()],
    );
    assert_eq!(
        h.send(1, latest),
        [
            format!("send KillExecutor {app}/9 on 1"),
            "send KillExecutor app-x/0 on 1".to_string(),
            "send KillDriver driver-x on 1".to_string(),
        ]
    );
}

#[test]
fn worker_latest_state_naming_an_unknown_or_dead_worker_changes_nothing() {
    let mut h = Harness::new();
    h.worker(1, "worker-a");
    h.open(2, Role::Worker);
    let latest = |id: &str| {
        WorkerLatestState::new(id.into(), vec![exec("app-x", 0)], vec!["driver-x".into()])
    };
    assert!(h.send(1, latest("worker-ghost")).is_empty());
    assert!(h.send(2, latest("worker-ghost")).is_empty());
    // DEAD: bound to no connection any more; the message is not refused, nothing is killed.
    h.now += Duration::from_secs(3);
    h.core.handle_timeout(h.now);
    h.take();
    assert!(h.send(2, latest("worker-a")).is_empty());
    assert!(h.send(1, latest("worker-a")).is_empty());
}

#[test]
fn a_connection_bound_to_one_worker_registers_no_other_and_stays() {
    let mut h = Harness::new();
    h.worker(1, "worker-a");
    let at = Addr::new("10.0.0.9", 7);
    let other = RegisterWorker::new(
        "worker-b".into(),
        at.host.clone(),
        at.port,
        EndpointRef::at(at, "Worker"),
        1,
        1024,
        String::new(),
        Addr::new("10.0.0.1", 7077),
        Resources::new(),
    );
    assert_eq!(h.send(1, other), ["send RegisterWorkerFailed on 1"]);
    assert_eq!(h.worker_state("worker-b"), None);
    assert!(h.send(1, heartbeat("worker-a")).is_empty());
}

#[test]
fn an_unknown_or_finished_application_is_answered_as_spark_does_and_another_connections_is_refused()
{
    let mut h = Harness::new();
    let mine = h.app(1);
    let done = h.app(2);
    h.send(2, UnregisterApplication::new(done.clone()));
    h.open(3, Role::AppClient);
    for conn in [1, 3] {
        for app in [done.as_str(), "app-unknown"] {
            assert_eq!(
                h.ask(conn, RequestExecutors::new(app.into(), vec![])),
                [format!("reply Bool(false) on {conn}")]
            );
            assert_eq!(
                h.ask(conn, KillExecutors::new(app.into(), vec!["0".into()])),
                [format!("reply Bool(false) on {conn}")]
            );
            assert!(h
                .send(conn, UnregisterApplication::new(app.into()))
                .is_empty());
            assert!(h
                .send(conn, MasterChangeAcknowledged::new(app.into()))
                .is_empty());
        }
    }
    // The active application, named over a connection it is not bound to.
    assert_eq!(
        h.ask(3, RequestExecutors::new(mine.clone(), vec![])),
        ["fail java.lang.SecurityException on 3"]
    );
    assert_eq!(
        h.send(3, UnregisterApplication::new(mine.clone())),
        ["close 3: NotOwner"]
    );
    let s = h.core.master_state();
    assert_eq!(s.active_apps.len(), 1);
    assert_eq!(s.active_apps[0].id, mine);
}

#[test]
fn without_class_tables_a_label_of_several_releases_is_compatible_with_one_it_names_only() {
    use super::same_release;
    assert!(same_release("3.5.9", "3.5.9"));
    assert!(!same_release("3.5.9", "3.5.8"));
    assert!(same_release("4.0.4|4.3.0", "4.3.0"));
    assert!(same_release("4.0.4", "4.0.4|4.0.5"));
    assert!(!same_release("4.0.4|4.0.5", "4.3.0|4.2.1"));
    assert!(!same_release("", "4.0.4"));
}
