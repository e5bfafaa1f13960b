//! The worker core's unit tests: one core fed inputs by hand with simulated time, its outputs
//! read one by one (what it dials, sends, starts and kills, and the launch policy's decisions in
//! detail). Programs resolve through a table, not the file system. The worker with a real master
//! core is in the in-memory cluster (`tests/worker_cluster.rs` and the `master_*` tests).

use std::path::PathBuf;
use std::time::{Duration, Instant};

use super::policy::Policy;
use super::{Config, Effect, Ended, Identity, Input, Launch, Output, Purpose, RunKey, WorkerCore};
use crate::messages::deploy::{
    KillExecutor, LaunchDriver, LaunchExecutor, ReconnectWorker, RegisteredWorker,
};
use crate::messages::Version;
use crate::messages::{
    Addr, ApplicationDescription, DeployMessage, DriverDescription, DriverState, EndpointRef,
    ExecutorState, Family, Resources,
};
use crate::node::{ConnInput, ConnOutput, Core, PeerInfo};
use crate::wire::handshake::Role;

const MASTER_URL: &str = "sparkwire://10.0.0.1:7077";

/// The machine's programs, as far as these tests know: the sparkwire executable (also under
/// a second name) and a shell.
fn resolve(p: &str) -> std::io::Result<PathBuf> {
    match p {
        "/opt/sparkwire" | "/opt/bin/../sparkwire" => Ok(PathBuf::from("/opt/sparkwire")),
        "/opt/any" => Ok(PathBuf::from("/opt/any")),
        "/bin/sh" => Ok(PathBuf::from("/usr/bin/sh")),
        _ => Err(std::io::Error::new(
            std::io::ErrorKind::NotFound,
            "no such file",
        )),
    }
}

struct Harness {
    core: WorkerCore,
    now: Instant,
    out: Vec<Output>,
}

fn master() -> Addr {
    Addr::new("10.0.0.1", 7077)
}

impl Harness {
    fn new(config: impl FnOnce(&mut Config, &mut Vec<String>)) -> Harness {
        let mut c = Config {
            masters: vec![master()],
            cores: 8,
            memory: 4096,
            resources: Resources::new(),
            work_dir: PathBuf::from("/work"),
            worker_timeout: Duration::from_secs(60),
            register_retry: Duration::from_secs(10),
            hands_secret: false,
            launch_tls_ca: None,
        };
        let mut allow_env = vec!["SPARK_*".to_string()];
        config(&mut c, &mut allow_env);
        let policy = Policy::from_parts(
            vec![PathBuf::from("/opt/sparkwire")],
            vec![PathBuf::from("/opt/any")],
            allow_env,
            vec![("PATH".into(), "/usr/bin:/bin".into())],
            resolve,
        );
        let me = Identity {
            id: "worker-20260101000000-127.0.0.1-4000".into(),
            addr: Addr::new("127.0.0.1", 4000),
            web_ui_url: String::new(),
            seed: 42,
        };
        let now = Instant::now();
        let mut core = WorkerCore::new(c.clone(), policy, me, now);
        core.start(now);
        let mut h = Harness {
            core,
            now,
            out: Vec::new(),
        };
        h.collect();
        h
    }

    fn collect(&mut self) {
        while let Some(o) = self.core.poll() {
            self.out.push(o);
        }
    }

    fn input(&mut self, input: Input) {
        self.core.handle(self.now, input);
        self.collect();
    }

    fn take(&mut self) -> Vec<Output> {
        std::mem::take(&mut self.out)
    }

    fn at(&mut self, now: Instant) {
        self.now = now;
        self.core.handle_timeout(now);
        self.collect();
    }

    /// A master's connection `conn` is up, for `purpose`.
    fn opened(&mut self, conn: u64, purpose: Purpose, addr: &str, peer_id: &str) {
        let peer = PeerInfo {
            role: Role::Master,
            id: peer_id.into(),
            addr: addr.into(),
            version: Version::V2,
            admin: false,
            max_frame_size: 128 << 20,
        };
        self.input(Input::Conn(ConnInput::Opened {
            conn,
            peer,
            origin: purpose,
        }));
    }

    fn message(&mut self, conn: u64, message: impl Into<DeployMessage>) {
        self.input(Input::Conn(ConnInput::Message {
            conn,
            message: message.into(),
        }));
    }

    /// Registered with the master over connection 1.
    fn registered(config: impl FnOnce(&mut Config, &mut Vec<String>)) -> Harness {
        let mut h = Harness::new(config);
        h.take();
        h.opened(
            1,
            Purpose::Registration(master()),
            "127.0.0.1:40001",
            "peer-1",
        );
        h.message(1, registered_worker());
        h.take();
        h
    }

    /// Launches executor `exec_id` of app-1 with `program` and `args`; what the core decided.
    fn launch(
        &mut self,
        exec_id: i32,
        program: &str,
        args: &[&str],
        env: &[(&str, &str)],
    ) -> Vec<Output> {
        let mut app_desc = app_description();
        app_desc.name = "app".into();
        app_desc.command.main_class = program.into();
        app_desc.command.arguments = args.iter().map(|a| a.to_string()).collect();
        app_desc.command.environment = env
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        self.message(
            1,
            LaunchExecutor {
                master_url: MASTER_URL.into(),
                app_id: "app-1".into(),
                exec_id,
                rp_id: 0,
                app_desc,
                cores: 2,
                memory: 512,
                resources: Resources::new(),
            },
        );
        self.take()
    }
}

fn registered_worker() -> RegisteredWorker {
    RegisteredWorker {
        master: EndpointRef::at(master(), "Master"),
        master_web_ui_url: "http://10.0.0.1:8080".into(),
        master_address: master(),
        duplicate: false,
    }
}

/// An application whose executors run sparkwire's `executor` subcommand.
fn app_description() -> ApplicationDescription {
    crate::node::sim::app_description("t", None, 1024)
}

/// Its executor command's arguments.
fn executor_args() -> Vec<String> {
    app_description().command.arguments
}

fn names(out: &[Output]) -> Vec<String> {
    out.iter()
        .map(|o| match o {
            Output::Conn(ConnOutput::Send { conn, message }) => {
                format!("send {} on {conn}", message.name())
            }
            Output::Conn(ConnOutput::Ask { conn, message, .. }) => {
                format!("ask {} on {conn}", message.name())
            }
            Output::Conn(ConnOutput::Reply { conn, .. }) => format!("reply on {conn}"),
            Output::Conn(ConnOutput::Fail { conn, .. }) => format!("fail on {conn}"),
            Output::Conn(ConnOutput::Close { conn, .. }) => format!("close {conn}"),
            Output::Conn(ConnOutput::Abort { conn }) => format!("abort {conn}"),
            Output::Effect(Effect::Dial(a)) => format!("dial {a}"),
            Output::Effect(Effect::Start(l)) => format!("start {}", l.key),
            Output::Effect(Effect::Kill(k)) => format!("kill {k}"),
        })
        .collect()
}

fn state_changes(out: &[Output]) -> Vec<(ExecutorState, Option<String>, Option<i32>)> {
    out.iter()
        .filter_map(|o| match o {
            Output::Conn(ConnOutput::Ask {
                message: DeployMessage::ExecutorStateChanged(c),
                ..
            }) => Some((c.state, c.message.clone(), c.exit_status)),
            _ => None,
        })
        .collect()
}

#[test]
fn registers_with_its_master_then_heartbeats_every_quarter_of_the_timeout() {
    let mut h = Harness::new(|_, _| {});
    assert_eq!(names(&h.take()), ["dial 10.0.0.1:7077"]);
    h.opened(
        1,
        Purpose::Registration(master()),
        "127.0.0.1:40001",
        "peer-1",
    );
    let out = h.take();
    match out.as_slice() {
        [Output::Conn(ConnOutput::Send {
            conn: 1,
            message: DeployMessage::RegisterWorker(r),
        })] => {
            assert_eq!(r.id, "worker-20260101000000-127.0.0.1-4000");
            assert_eq!((r.host.as_str(), r.port), ("127.0.0.1", 4000));
            assert_eq!((r.cores, r.memory), (8, 4096));
            assert_eq!(r.master_address, master());
        }
        other => panic!("{other:?}"),
    }
    let start = h.now;
    h.message(1, registered_worker());
    assert_eq!(names(&h.take()), ["send WorkerLatestState on 1"]);
    assert_eq!(h.core.state_response().master_url, MASTER_URL);
    let next = h.core.poll_timeout().expect("a timer");
    assert_eq!(
        next,
        start + Duration::from_secs(15),
        "no registration retry left"
    );
    h.at(next);
    assert_eq!(names(&h.take()), ["send Heartbeat on 1"]);
    h.at(next + Duration::from_secs(14));
    assert!(h.take().is_empty(), "not before the next quarter");
    h.at(next + Duration::from_secs(15));
    assert_eq!(names(&h.take()), ["send Heartbeat on 1"]);
}

#[test]
fn a_lost_master_connection_makes_it_register_again_and_reconnect_worker_resends() {
    let mut h = Harness::registered(|_, _| {});
    h.input(Input::Conn(ConnInput::Closed {
        conn: 1,
        reason: "closed".into(),
    }));
    assert_eq!(names(&h.take()), ["dial 10.0.0.1:7077"]);
    // Unregistered: no heartbeat.
    let beat = h.now + Duration::from_secs(15);
    h.at(beat);
    assert!(!names(&h.take()).iter().any(|n| n.contains("Heartbeat")));
    h.opened(
        2,
        Purpose::Registration(master()),
        "127.0.0.1:40002",
        "peer-2",
    );
    assert_eq!(names(&h.take()), ["send RegisterWorker on 2"]);
    h.message(2, registered_worker());
    h.take();
    h.message(
        2,
        ReconnectWorker {
            master_url: MASTER_URL.into(),
        },
    );
    assert_eq!(names(&h.take()), ["send RegisterWorker on 2"]);
}

#[test]
fn a_launched_executor_is_reported_running_then_exited() {
    let mut h = Harness::registered(|_, _| {});
    let args = executor_args();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = h.launch(
        3,
        "/opt/bin/../sparkwire",
        &args,
        &[("SPARK_X", "{{APP_ID}}"), ("OTHER", "1")],
    );
    let launch: Launch = match out.as_slice() {
        [Output::Effect(Effect::Start(l))] => l.clone(),
        other => panic!("{other:?}"),
    };
    assert_eq!(launch.key, RunKey::Executor("app-1".into(), 3));
    assert_eq!(launch.program, PathBuf::from("/opt/sparkwire"), "canonical");
    assert_eq!(launch.dir, PathBuf::from("/work/app-1/3"));
    assert!(launch.args.contains(&"3".to_string()), "{:?}", launch.args);
    assert!(launch.args.contains(&"app-1".to_string()));
    assert!(
        !launch.args.iter().any(|a| a.contains("{{")),
        "{:?}",
        launch.args
    );
    // The minimal environment: the worker's PATH and the allowed application variables only.
    assert_eq!(
        launch
            .env
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect::<Vec<_>>(),
        [("PATH", "/usr/bin:/bin"), ("SPARK_X", "app-1")]
    );
    assert!(!launch.write_secret);
    assert!(
        h.core.state_response().executors.is_empty(),
        "not before it runs"
    );
    h.input(Input::Started {
        key: launch.key.clone(),
    });
    assert_eq!(
        state_changes(&h.take()),
        [(ExecutorState::Running, None, None)]
    );
    let state = h.core.state_response();
    assert_eq!((state.cores_used, state.memory_used), (2, 512));
    h.input(Input::Ended {
        key: launch.key,
        ended: Ended::Exited {
            code: 1,
            killed: false,
            last_line: Some("cannot connect to the driver at 10.77.0.3:40087\n".into()),
        },
    });
    // Spark's message, then the executor's own last word on standard error.
    assert_eq!(
        state_changes(&h.take()),
        [(
            ExecutorState::Exited,
            Some(
                "Command exited with code 1: cannot connect to the driver at 10.77.0.3:40087"
                    .into()
            ),
            Some(1)
        )]
    );
    let state = h.core.state_response();
    assert_eq!((state.cores_used, state.memory_used), (0, 0));
    assert_eq!(state.finished_executors.len(), 1);
    assert_eq!(state.finished_executors[0].state, ExecutorState::Exited);
}

#[test]
fn a_killed_executor_ends_killed_and_only_the_active_master_may_kill() {
    let mut h = Harness::registered(|_, _| {});
    let args = executor_args();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    h.launch(0, "/opt/sparkwire", &args, &[]);
    let key = RunKey::Executor("app-1".into(), 0);
    h.input(Input::Started { key: key.clone() });
    h.take();
    let kill = |url: &str| KillExecutor {
        master_url: url.into(),
        app_id: "app-1".into(),
        exec_id: 0,
    };
    h.message(1, kill("sparkwire://10.9.9.9:7077"));
    assert!(h.take().is_empty(), "another master's kill is ignored");
    h.message(1, kill(MASTER_URL));
    assert_eq!(names(&h.take()), ["kill executor app-1/0"]);
    // The process's exit status after the kill does not matter: it was killed.
    h.input(Input::Ended {
        key,
        ended: Ended::Exited {
            code: 143,
            killed: false,
            last_line: None,
        },
    });
    assert_eq!(
        state_changes(&h.take()),
        [(ExecutorState::Killed, None, Some(143))]
    );
}

#[test]
fn the_launch_policy_refuses_with_executor_state_changed_failed() {
    let mut h = Harness::registered(|_, _| {});
    let args = executor_args();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let failure = |out: &[Output]| -> String {
        assert!(
            !out.iter()
                .any(|o| matches!(o, Output::Effect(Effect::Start(_)))),
            "nothing starts"
        );
        match state_changes(out).as_slice() {
            [(ExecutorState::Failed, Some(m), None)] => m.clone(),
            other => panic!("{other:?}"),
        }
    };
    let why = failure(&h.launch(1, "/bin/sh", &["-c", "id"], &[]));
    assert!(
        why.contains("not on the worker's allow-list (--allow-exec, --allow-exec-any)"),
        "{why}"
    );
    let why = failure(&h.launch(2, "/no/such", &args, &[]));
    assert!(why.contains("cannot be resolved"), "{why}");
    // On --allow-exec, the program runs only as `executor` with its flags.
    let why = failure(&h.launch(3, "/opt/sparkwire", &["worker", "x"], &[]));
    assert!(
        why.contains("--allow-exec allows it only as an executor"),
        "{why}"
    );
    let why = failure(&h.launch(4, "/opt/sparkwire", &args, &[("LD_PRELOAD", "/tmp/x.so")]));
    assert!(
        why.contains("Refusing the launch: its environment sets LD_PRELOAD"),
        "{why}"
    );
    // On --allow-exec-any, any arguments.
    let out = h.launch(5, "/opt/any", &["-c", "anything"], &[]);
    assert_eq!(names(&out), ["start executor app-1/5"]);
    let state = h.core.state_response();
    assert_eq!(state.finished_executors.len(), 4);
    assert_eq!(state.cores_used, 0, "refused launches hold nothing");
    // A driver needs --allow-exec-any.
    let mut command = app_description().command;
    command.main_class = "/opt/sparkwire".into();
    let driver_desc = DriverDescription {
        jar_url: String::new(),
        mem: 512,
        cores: 1,
        supervise: false,
        command,
        resource_reqs: Vec::new(),
    };
    h.message(
        1,
        LaunchDriver {
            driver_id: "driver-1".into(),
            driver_desc,
            resources: Resources::new(),
        },
    );
    match h.take().as_slice() {
        [Output::Conn(ConnOutput::Send {
            message: DeployMessage::DriverStateChanged(c),
            ..
        })] => {
            assert_eq!(c.state, DriverState::Error);
            let text = &c.exception.as_ref().expect("why").message;
            assert!(text.contains("as a driver"), "{text}");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_launch_that_fails_to_start_is_reported_failed() {
    let mut h = Harness::registered(|c, _| c.hands_secret = true);
    let out = h.launch(0, "/opt/any", &[], &[]);
    let launch = match out.as_slice() {
        [Output::Effect(Effect::Start(l))] => l.clone(),
        other => panic!("{other:?}"),
    };
    // The secret is handed over in a private file in the executor's directory, named by a
    // variable: never in the environment or on the command line.
    assert!(launch.write_secret);
    assert!(
        !launch.spark_secret,
        "only Spark's executors get _SPARK_AUTH_SECRET"
    );
    assert_eq!(
        launch.env.get(super::SECRET_FILE_ENV).map(String::as_str),
        Some("/work/app-1/0/.sparkwire-secret")
    );
    assert!(!launch.env.values().any(|v| v.contains("0123456789abcdef")));
    h.input(Input::StartFailed {
        key: launch.key,
        reason: "cannot run /opt/any: permission denied".into(),
    });
    assert_eq!(
        state_changes(&h.take()),
        [(
            ExecutorState::Failed,
            Some("cannot run /opt/any: permission denied".into()),
            None
        )]
    );
    assert!(h.core.state_response().executors.is_empty());
}

/// A registering worker (its connection to the master lost): its registration connection 2 to
/// the master at [`master`], and connection 3 that master opened to it (taking over), silent.
fn registering_with_a_master_dialling_in() -> Harness {
    let mut h = Harness::registered(|_, _| {});
    h.input(Input::Conn(ConnInput::Closed {
        conn: 1,
        reason: "closed".into(),
    }));
    h.opened(
        2,
        Purpose::Registration(master()),
        "10.0.0.1:7077",
        "master-1",
    );
    h.opened(3, Purpose::Inbound, "10.0.0.1:50123", "master-1");
    h.take();
    h
}

fn master_changed() -> crate::messages::deploy::MasterChanged {
    crate::messages::deploy::MasterChanged {
        master: EndpointRef::at(master(), "Master"),
        master_web_ui_url: "http://10.0.0.1:8080".into(),
    }
}

#[test]
fn master_changed_then_the_registration_answer_keeps_the_connection_the_master_opened() {
    let mut h = registering_with_a_master_dialling_in();
    h.message(3, master_changed());
    assert_eq!(
        names(&h.take()),
        ["close 2", "send WorkerSchedulerStateResponse on 3"]
    );
    // The answer to the registration, over the connection the worker closes: not taken.
    h.message(
        2,
        RegisteredWorker {
            duplicate: true,
            ..registered_worker()
        },
    );
    assert!(h.take().is_empty());
    h.at(h.now + Duration::from_secs(15));
    assert_eq!(names(&h.take()), ["send Heartbeat on 3"]);
}

#[test]
fn the_registration_answer_before_master_changed_leaves_the_silent_master_connection_open() {
    let mut h = registering_with_a_master_dialling_in();
    h.message(2, registered_worker());
    // Connection 3 is not closed: the master that opened it has not said who it is yet.
    assert_eq!(names(&h.take()), ["send WorkerLatestState on 2"]);
    h.message(3, master_changed());
    assert_eq!(
        names(&h.take()),
        ["close 2", "send WorkerSchedulerStateResponse on 3"]
    );
}

/// The RegisterWorker a worker with `policy` sends its master first.
fn first_registration(policy: Policy) -> crate::messages::deploy::RegisterWorker {
    let c = Config {
        masters: vec![master()],
        cores: 2,
        memory: 1024,
        resources: Resources::new(),
        work_dir: PathBuf::from("/work"),
        worker_timeout: Duration::from_secs(60),
        register_retry: Duration::from_secs(10),
        hands_secret: false,
        launch_tls_ca: None,
    };
    let me = Identity {
        id: "worker-20260101000000-127.0.0.1-4000".into(),
        addr: Addr::new("127.0.0.1", 4000),
        web_ui_url: String::new(),
        seed: 7,
    };
    let now = Instant::now();
    let mut h = Harness {
        core: WorkerCore::new(c, policy, me, now),
        now,
        out: Vec::new(),
    };
    h.core.start(now);
    h.collect();
    h.take();
    h.opened(
        1,
        Purpose::Registration(master()),
        "127.0.0.1:40001",
        "peer-1",
    );
    match h.take().as_slice() {
        [Output::Conn(ConnOutput::Send {
            message: DeployMessage::RegisterWorker(r),
            ..
        })] => r.clone(),
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_worker_running_spark_executors_announces_their_release_and_one_running_none_announces_none() {
    let policy = || {
        Policy::from_parts(
            vec![PathBuf::from("/opt/sparkwire")],
            vec![],
            vec![],
            vec![],
            resolve,
        )
    };
    let spark = |release: Option<&str>| {
        super::spark::SparkExecutors::new(
            PathBuf::from("/opt/spark"),
            PathBuf::from("/usr/bin/java"),
            vec![],
        )
        .with_release(release.map(str::to_string))
    };
    // Its executors are Spark 3.5.9's, which speak Java serialization to their driver: the
    // master must know it (SPEC §15.5).
    let r = first_registration(
        policy().with_spark(spark(Some("3.5.9")), "spark://Worker@127.0.0.1:5000".into()),
    );
    assert_eq!(r.spark_release.as_deref(), Some("3.5.9"));
    // An installation whose release is not known, and a worker with no Spark: none.
    let r = first_registration(
        policy().with_spark(spark(None), "spark://Worker@127.0.0.1:5000".into()),
    );
    assert_eq!(r.spark_release, None);
    assert_eq!(first_registration(policy()).spark_release, None);
}
