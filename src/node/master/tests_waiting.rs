//! Why an application or a driver waits (SPEC §16), and where executors of an application of
//! one Spark release go (SPEC §15.5): one core fed registrations and executor ends by hand, its
//! state answer read after each.

use std::time::Instant;

use super::waiting::Reason;
use super::{Config, Input, MasterCore, Output, Stored};
use crate::messages::deploy::{
    ExecutorStateChanged, RegisterApplication, RegisterWorker, RequestExecutors,
    RequestSubmitDriver,
};
use crate::messages::{
    Addr, ApplicationDescription, DeployMessage, EndpointRef, ExecutorState, Resources,
};
use crate::node::sim::{app_description, driver_description};
use crate::node::{ConnId, ConnInput, ConnOutput, Core, PeerInfo};
use crate::wire::handshake::Role;

struct Master {
    core: MasterCore,
    now: Instant,
    /// Executors launched: (application, executor id, worker connection).
    launched: Vec<(String, i32, ConnId)>,
}

impl Master {
    fn new() -> Master {
        let now = Instant::now();
        let mut core = MasterCore::new(Config::default(), Addr::new("10.0.0.1", 7077), now, 0);
        core.handle(
            now,
            Input::Elected {
                stored: Stored::default(),
            },
        );
        let mut m = Master {
            core,
            now,
            launched: Vec::new(),
        };
        m.drain();
        m
    }

    /// Drains the outputs, noting each LaunchExecutor and the application ids registered.
    fn drain(&mut self) -> Vec<String> {
        let mut ids = Vec::new();
        while let Some(o) = self.core.poll() {
            match o {
                Output::Conn(ConnOutput::Send {
                    conn,
                    message: DeployMessage::LaunchExecutor(l),
                }) => self.launched.push((l.app_id, l.exec_id, conn)),
                Output::Conn(ConnOutput::Send {
                    message: DeployMessage::RegisteredApplication(r),
                    ..
                }) => ids.push(r.app_id),
                Output::Conn(ConnOutput::Reply {
                    reply: crate::wire::Reply::Message(DeployMessage::SubmitDriverResponse(r)),
                    ..
                }) => ids.extend(r.driver_id),
                _ => {}
            }
        }
        ids
    }

    fn open(&mut self, conn: ConnId, role: Role) {
        let peer = PeerInfo {
            role,
            id: format!("peer-{conn}"),
            addr: format!("10.0.0.9:{}", 40000 + conn),
            version: crate::messages::Version::V2,
            admin: false,
            max_frame_size: crate::wire::DEFAULT_MAX_FRAME_SIZE,
        };
        self.core.handle(
            self.now,
            ConnInput::Opened {
                conn,
                peer,
                origin: None,
            }
            .into(),
        );
    }

    fn send(&mut self, conn: ConnId, message: impl Into<DeployMessage>) -> Vec<String> {
        let message = message.into();
        self.core
            .handle(self.now, ConnInput::Message { conn, message }.into());
        self.drain()
    }

    /// Worker `worker-CONN` with `cores` and `memory` MiB, of Spark `release` if any.
    fn worker(&mut self, conn: ConnId, cores: i32, memory: i32, release: Option<&str>) {
        self.open(conn, Role::Worker);
        let at = Addr::new("10.0.0.9", i32::try_from(conn).unwrap_or(0));
        let register = RegisterWorker::new(
            format!("worker-{conn}"),
            at.host.clone(),
            at.port,
            EndpointRef::at(at, "Worker"),
            cores,
            memory,
            String::new(),
            Addr::new("10.0.0.1", 7077),
            Resources::new(),
        )
        .with_spark_release(release.map(str::to_string));
        self.send(conn, register);
    }

    /// An application of `desc`, of Spark `release` if any: its id.
    fn app(&mut self, conn: ConnId, desc: ApplicationDescription, release: Option<&str>) -> String {
        self.open(conn, Role::AppClient);
        let register = RegisterApplication::new(desc, EndpointRef::client("t"))
            .with_spark_release(release.map(str::to_string));
        self.send(conn, register).pop().expect("registered")
    }

    /// A driver of `cores` cores and `memory` MiB submitted over `conn`: its id.
    fn driver(&mut self, conn: ConnId, cores: i32, memory: i32) -> String {
        self.open(conn, Role::DriverClient);
        let submit = RequestSubmitDriver::new(driver_description(cores, memory, false));
        self.core.handle(
            self.now,
            ConnInput::Ask {
                conn,
                id: 1,
                message: submit.into(),
            }
            .into(),
        );
        self.drain().pop().expect("submitted")
    }

    fn app_reason(&self, id: &str) -> Option<String> {
        let s = self.core.master_state();
        s.active_apps
            .iter()
            .find(|a| a.id == id)
            .and_then(|a| a.waiting_reason.clone())
    }

    fn driver_reason(&self, id: &str) -> Option<String> {
        let s = self.core.master_state();
        s.active_drivers
            .iter()
            .find(|d| d.id == id)
            .and_then(|d| d.waiting_reason.clone())
    }

    fn launched_on(&self, app: &str) -> Vec<ConnId> {
        self.launched
            .iter()
            .filter(|(a, _, _)| a == app)
            .map(|(_, _, c)| *c)
            .collect()
    }
}

fn reason_of(text: Option<&str>) -> Option<Reason> {
    text.and_then(Reason::of)
}

#[test]
fn an_application_with_no_worker_waits_for_an_alive_worker() {
    let mut m = Master::new();
    let app = m.app(1, app_description("t", Some(1), 512), None);
    assert_eq!(m.app_reason(&app).as_deref(), Some("no alive worker"));
    m.worker(2, 2, 2048, None);
    assert_eq!(m.launched_on(&app), [2, 2]);
    // Launched, not running yet: waiting for nothing on the master's side.
    assert_eq!(m.app_reason(&app), None);
}

#[test]
fn a_worker_short_of_memory_is_named_with_its_free_figures() {
    let mut m = Master::new();
    m.worker(1, 4, 512, None);
    let app = m.app(2, app_description("t", Some(2), 1024), None);
    let why = m.app_reason(&app).expect("waits");
    assert_eq!(
        reason_of(Some(&why)),
        Some(Reason::NoWorkerWithRoom),
        "{why}"
    );
    assert!(
        why.contains("an executor takes 2 cores, 1024 MiB; memory short"),
        "{why}"
    );
    assert!(why.contains("worker-1 has 4 cores, 512 MiB free"), "{why}");
}

#[test]
fn cores_a_driver_holds_are_the_reason_when_the_worker_would_otherwise_have_room() {
    let mut m = Master::new();
    m.worker(1, 2, 8192, None);
    let driver = m.driver(2, 2, 1024);
    assert_eq!(m.driver_reason(&driver), None, "the driver runs");
    let app = m.app(3, app_description("t", Some(1), 1024), None);
    let why = m.app_reason(&app).expect("waits");
    assert_eq!(
        reason_of(Some(&why)),
        Some(Reason::CoresHeldByDrivers),
        "{why}"
    );
    assert!(why.contains("(2 cores held by drivers)"), "{why}");
}

#[test]
fn a_driver_that_fits_no_worker_says_what_is_short() {
    let mut m = Master::new();
    let driver = m.driver(1, 1, 4096);
    assert_eq!(m.driver_reason(&driver).as_deref(), Some("no alive worker"));
    m.worker(2, 4, 2048, None);
    let why = m.driver_reason(&driver).expect("waits");
    assert_eq!(
        reason_of(Some(&why)),
        Some(Reason::NoWorkerWithRoom),
        "{why}"
    );
    assert!(
        why.contains("the driver takes 1 core, 4096 MiB; memory short"),
        "{why}"
    );
}

#[test]
fn spark_cores_max_below_one_executor_is_the_reason() {
    let mut m = Master::new();
    m.worker(1, 8, 8192, None);
    let mut desc = app_description("t", Some(4), 512);
    desc.max_cores = Some(2);
    let app = m.app(2, desc, None);
    let why = m.app_reason(&app).expect("waits");
    assert_eq!(
        reason_of(Some(&why)),
        Some(Reason::CoresMaxReached),
        "{why}"
    );
    assert!(
        why.contains("0 of 2 cores granted, an executor takes 4"),
        "{why}"
    );
    assert!(m.launched_on(&app).is_empty());
}

#[test]
fn an_application_that_asked_for_no_executors_waits_on_its_executor_limit() {
    let mut m = Master::new();
    let app = m.app(1, app_description("t", Some(1), 512), None);
    m.core.handle(
        m.now,
        ConnInput::Ask {
            conn: 1,
            id: 7,
            message: RequestExecutors::new(app.clone(), vec![]).into(),
        }
        .into(),
    );
    m.drain();
    // Without a total for its default profile the limit stays; set it to none as Spark's
    // dynamic allocation does at start (initialExecutorLimit 0).
    let mut desc = app_description("u", Some(1), 512);
    desc.initial_executor_limit = Some(0);
    let idle = m.app(2, desc, None);
    m.worker(3, 4, 4096, None);
    let why = m.app_reason(&idle).expect("waits");
    assert_eq!(
        reason_of(Some(&why)),
        Some(Reason::ExecutorLimitReached),
        "{why}"
    );
    assert!(m.launched_on(&idle).is_empty());
    assert_eq!(m.app_reason(&app), None);
}

#[test]
fn executors_ending_carry_the_executor_s_own_last_line_until_one_runs() {
    let mut m = Master::new();
    m.worker(1, 1, 4096, None);
    let app = m.app(2, app_description("t", Some(1), 512), None);
    assert_eq!(m.launched_on(&app), [1]);
    let line = "cannot connect to the driver at 10.77.0.3:40087: connection refused";
    let failed = ExecutorStateChanged::new(app.clone(), 0, ExecutorState::Failed)
        .with_exit_status(Some(1))
        .with_message(Some(line.to_string()));
    m.send(1, failed);
    let why = m.app_reason(&app).expect("waits");
    assert_eq!(
        reason_of(Some(&why)),
        Some(Reason::ExecutorsEnding),
        "{why}"
    );
    assert!(
        why.contains("executor 0 on worker-1 ended FAILED (exit code 1)"),
        "{why}"
    );
    assert!(why.ends_with(line), "{why}");
    // Spark's master launches another at once. Its worker says RUNNING when it starts the
    // process, which tells nothing of its driver: the reason stays until it is steady.
    assert_eq!(m.launched_on(&app), [1, 1]);
    assert!(m.app_reason(&app).is_some());
    m.send(
        1,
        ExecutorStateChanged::new(app.clone(), 1, ExecutorState::Running),
    );
    assert_eq!(m.app_reason(&app).as_deref(), Some(why.as_str()));
    m.now += std::time::Duration::from_secs(59);
    m.core.handle_timeout(m.now);
    assert!(m.app_reason(&app).is_some());
    m.now += std::time::Duration::from_secs(1);
    m.core.handle_timeout(m.now);
    assert_eq!(m.app_reason(&app), None);
}

#[test]
fn an_executor_running_since_before_another_ended_keeps_the_application_from_waiting() {
    let mut m = Master::new();
    m.worker(1, 2, 4096, None);
    let app = m.app(2, app_description("t", Some(1), 512), None);
    assert_eq!(m.launched_on(&app), [1, 1]);
    for id in [0, 1] {
        m.send(
            1,
            ExecutorStateChanged::new(app.clone(), id, ExecutorState::Running),
        );
    }
    let failed = ExecutorStateChanged::new(app.clone(), 1, ExecutorState::Exited)
        .with_exit_status(Some(137));
    m.send(1, failed);
    assert_eq!(m.launched_on(&app), [1, 1, 1]);
    assert_eq!(m.app_reason(&app), None);
    // Once no executor is steady, the last end binds.
    let failed =
        ExecutorStateChanged::new(app.clone(), 0, ExecutorState::Exited).with_exit_status(Some(1));
    m.send(1, failed);
    let why = m.app_reason(&app).expect("waits");
    assert!(
        why.starts_with(
            "executors launched but ending: executor 0 on worker-1 ended EXITED (exit code 1)"
        ),
        "{why}"
    );
}

#[test]
fn an_application_waits_for_a_worker_of_its_release_and_runs_on_none_other() {
    let mut m = Master::new();
    m.worker(1, 4, 4096, Some("4.3.0"));
    let app = m.app(2, app_description("t", Some(1), 512), Some("3.5.9"));
    assert!(m.launched_on(&app).is_empty());
    let why = m.app_reason(&app).expect("waits");
    assert_eq!(
        reason_of(Some(&why)),
        Some(Reason::NoWorkerOfItsRelease),
        "{why}"
    );
    assert!(why.contains("speaks Spark 3.5.9"), "{why}");
    assert!(why.contains("room on worker-1 (Spark 4.3.0)"), "{why}");
    m.worker(3, 2, 4096, Some("3.5.9"));
    assert_eq!(m.launched_on(&app), [3, 3]);
    assert_eq!(m.app_reason(&app), None);
    let s = m.core.master_state();
    assert_eq!(s.active_apps[0].spark_release.as_deref(), Some("3.5.9"));
    let releases: Vec<_> = s
        .workers
        .iter()
        .map(|w| (w.id.as_str(), w.spark_release.as_deref()))
        .collect();
    assert!(releases.contains(&("worker-1", Some("4.3.0"))));
    assert!(releases.contains(&("worker-3", Some("3.5.9"))));
}

#[test]
fn a_full_worker_of_its_release_with_room_elsewhere_is_the_release_reason() {
    let mut m = Master::new();
    m.worker(1, 1, 4096, Some("3.5.9"));
    m.worker(2, 4, 4096, Some("4.3.0"));
    let first = m.app(3, app_description("a", Some(1), 512), Some("3.5.9"));
    let second = m.app(4, app_description("b", Some(1), 512), Some("3.5.9"));
    assert_eq!(m.launched_on(&first), [1]);
    assert!(m.launched_on(&second).is_empty());
    let why = m.app_reason(&second).expect("waits");
    assert_eq!(
        reason_of(Some(&why)),
        Some(Reason::NoWorkerOfItsRelease),
        "{why}"
    );
    assert!(
        why.contains("1 alive worker of a compatible release"),
        "{why}"
    );
    assert!(why.contains("cores short"), "{why}");
}

#[test]
fn a_worker_registering_again_says_its_release_anew() {
    // As a worker recovered from the persisted state (which keeps no release) registers again.
    let mut m = Master::new();
    m.worker(1, 2, 4096, None);
    let at = Addr::new("10.0.0.9", 1);
    let again = RegisterWorker::new(
        "worker-1".to_string(),
        at.host.clone(),
        at.port,
        EndpointRef::at(at, "Worker"),
        2,
        4096,
        String::new(),
        Addr::new("10.0.0.1", 7077),
        Resources::new(),
    )
    .with_spark_release(Some("4.3.0".to_string()));
    m.send(1, again);
    let s = m.core.master_state();
    assert_eq!(s.workers.len(), 1);
    assert_eq!(s.workers[0].spark_release.as_deref(), Some("4.3.0"));
    // Its release now decides where executors go.
    let app = m.app(2, app_description("a", Some(1), 512), Some("4.2.1"));
    assert!(m.launched_on(&app).is_empty());
    assert_eq!(
        reason_of(m.app_reason(&app).as_deref()),
        Some(Reason::NoWorkerOfItsRelease)
    );
}

#[test]
fn applications_of_two_releases_each_run_on_their_own_workers_only() {
    let mut m = Master::new();
    m.worker(1, 2, 4096, Some("3.5.9"));
    m.worker(2, 2, 4096, Some("4.3.0"));
    let new = m.app(3, app_description("new", Some(1), 512), Some("4.3.0"));
    let old = m.app(4, app_description("old", Some(1), 512), Some("3.5.9"));
    let plain = m.app(5, app_description("plain", Some(1), 512), None);
    assert_eq!(m.launched_on(&new), [2, 2]);
    assert_eq!(m.launched_on(&old), [1, 1]);
    // An application without a release may use any worker; none has room left.
    assert!(m.launched_on(&plain).is_empty());
    let why = m.app_reason(&plain).expect("waits");
    assert_eq!(
        reason_of(Some(&why)),
        Some(Reason::NoWorkerWithRoom),
        "{why}"
    );
}

#[test]
fn without_releases_the_round_is_spark_s() {
    let mut m = Master::new();
    m.worker(1, 2, 4096, None);
    m.worker(2, 2, 4096, Some("4.3.0"));
    // An application with no release spreads over both, as Spark's spread-out round does.
    let app = m.app(3, app_description("t", Some(1), 512), None);
    let mut on = m.launched_on(&app);
    on.sort_unstable();
    assert_eq!(on, [1, 1, 2, 2]);
}

#[test]
fn the_compatibility_rule_is_the_configured_one() {
    let now = Instant::now();
    let config = Config {
        release_compatible: |a: &str, b: &str| a.get(..3) == b.get(..3),
        ..Config::default()
    };
    let mut m = Master::new();
    m.core = MasterCore::new(config, Addr::new("10.0.0.1", 7077), now, 0);
    m.core.handle(
        now,
        Input::Elected {
            stored: Stored::default(),
        },
    );
    m.drain();
    m.worker(1, 1, 4096, Some("3.5.1"));
    let app = m.app(2, app_description("t", Some(1), 512), Some("3.5.9"));
    assert_eq!(m.launched_on(&app), [1]);
}

#[test]
fn a_completed_application_waits_for_nothing() {
    let mut m = Master::new();
    let app = m.app(1, app_description("t", Some(1), 512), None);
    assert!(m.app_reason(&app).is_some());
    m.send(
        1,
        crate::messages::deploy::UnregisterApplication::new(app.clone()),
    );
    let s = m.core.master_state();
    let done = s
        .completed_apps
        .iter()
        .find(|a| a.id == app)
        .expect("completed");
    assert_eq!(done.waiting_reason, None);
}

#[test]
fn a_reason_names_a_few_workers_of_other_releases_with_room_and_counts_the_rest() {
    let mut m = Master::new();
    for w in 1..=8 {
        m.worker(w, 2, 4096, Some("4.3.0"));
    }
    let app = m.app(20, app_description("t", Some(1), 512), Some("3.5.9"));
    assert!(m.launched_on(&app).is_empty());
    let why = m.app_reason(&app).expect("waits");
    assert_eq!(
        why.matches("(Spark 4.3.0)").count(),
        super::waiting::ROOM_NAMED,
        "{why}"
    );
    assert!(why.ends_with(" and 3 more"), "{why}");
}

#[test]
fn a_driver_is_placed_on_a_worker_of_any_release_and_its_application_then_by_its_workers_release() {
    // SPEC §15.5: a submission carries no release; a driver runs on its worker's Spark, so the
    // application it starts has that worker's release and is placed by it.
    let mut m = Master::new();
    m.worker(1, 4, 4096, Some("4.3.0"));
    let driver = m.driver(2, 1, 1024);
    let s = m.core.master_state();
    let placed = s
        .active_drivers
        .iter()
        .find(|d| d.id == driver)
        .expect("active");
    assert_eq!(placed.worker_id.as_deref(), Some("worker-1"));
    assert_eq!(m.driver_reason(&driver), None);
    // The application that driver starts speaks its worker's release: it runs there.
    let app = m.app(3, app_description("t", Some(1), 512), Some("4.3.0"));
    // Three one-core executors: the cores the driver left.
    assert_eq!(m.launched_on(&app), [1, 1, 1]);
    // One of another release waits for a worker of its own.
    let other = m.app(4, app_description("u", Some(1), 512), Some("3.5.9"));
    assert!(m.launched_on(&other).is_empty());
    assert_eq!(
        reason_of(m.app_reason(&other).as_deref()),
        Some(Reason::NoWorkerOfItsRelease)
    );
}
