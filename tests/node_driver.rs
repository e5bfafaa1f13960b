//! The driver's two cores (the scheduler backend and the application client) and executor cores,
//! wired in memory on one simulated clock: no socket, no thread, no real time. Connections are
//! pairs of ids carrying each core's outputs to the other as inputs; tasks run through the
//! built-in runner, each ending a simulated `TASK_TIME` after it started; the clock steps to the
//! earliest of the cores' timeouts and the tasks' ends. The masters are played by the test.

mod common;

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::Arc;
use std::time::{Duration, Instant};

use sparkwire::messages::deploy::{MasterChanged, RegisterApplication, RegisteredApplication};
use sparkwire::messages::{
    Addr, CoarseMessage, DeployMessage, EndpointRef, Family, TaskDescription,
};
use sparkwire::node::driver::{
    AppClientCore, BackendConfig, BackendCore, BackendEffect, BackendInput, ClientConfig,
    ClientEffect, ClientInput, ClientLink, Job, JobFailed, JobId, JobResult, MasterEvent,
    SubmitRefused, ALL_MASTERS_UNRESPONSIVE,
};
use sparkwire::node::executor::{
    ExecutorCore, ExecutorEffect, ExecutorExit, ExecutorIdentity, ExecutorInput, StartFailed,
};
use sparkwire::node::{AskFailure, ConnId, ConnInput, ConnOutput, Core, Output, PeerInfo};
use sparkwire::reference::task::{
    BigResultJob, BigTaskJob, BuiltinRunner, CancelFlag, FlakyJob, PiJob, SumSquaresJob, TaskRunner,
};
use sparkwire::wire::handshake::Role;
use sparkwire::wire::TaskFailure;

/// How long every task runs, on the simulated clock.
const TASK_TIME: Duration = Duration::from_millis(10);

/// Most simulated time a scenario may take.
const PATIENCE: Duration = Duration::from_secs(600);

const MIB: usize = 1024 * 1024;

/// Who is at the far end of a connection id.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum End {
    Driver(ConnId),
    Executor(usize, ConnId),
}

enum Event {
    Driver(BackendInput),
    Executor(usize, ExecutorInput),
}

struct Exec {
    core: ExecutorCore,
    exit: Option<Result<ExecutorExit, StartFailed>>,
}

struct Running {
    due: Instant,
    exec: usize,
    task: TaskDescription,
    killed: bool,
}

/// The cores and the clock. See the module documentation.
struct Sim {
    now: Instant,
    frame: usize,
    driver: BackendCore,
    executors: Vec<Exec>,
    /// Each connection id's other end (ids are unique across the simulation).
    peer: HashMap<End, End>,
    next_conn: ConnId,
    tasks: Vec<Running>,
    events: VecDeque<Event>,
    outcomes: HashMap<JobId, Result<JobResult, JobFailed>>,
    /// Frames the driver wrote to executors, by message name.
    sent: BTreeMap<&'static str, u64>,
    /// Frames executors wrote to the driver, by message name.
    received: BTreeMap<&'static str, u64>,
    runner: BuiltinRunner,
}

fn backend_config(max_message_size_mib: u32) -> BackendConfig {
    BackendConfig {
        app_name: "sim".into(),
        driver_host: "driver.sim".into(),
        driver_port: 7078,
        task_cpus: 1,
        max_task_failures: 4,
        revive_interval: Duration::from_secs(1),
        max_message_size_mib,
        executor_cores: None,
        executor_memory_mb: 1024,
    }
}

impl Sim {
    fn new(max_message_size_mib: u32) -> Sim {
        let now = Instant::now();
        Sim {
            now,
            frame: max_message_size_mib as usize * MIB,
            driver: BackendCore::new(backend_config(max_message_size_mib), now),
            executors: Vec::new(),
            peer: HashMap::new(),
            next_conn: 1,
            tasks: Vec::new(),
            events: VecDeque::new(),
            outcomes: HashMap::new(),
            sent: BTreeMap::new(),
            received: BTreeMap::new(),
            runner: BuiltinRunner,
        }
    }

    /// Starts executor `id` with `cores` (it dials the driver at once); its index.
    fn executor(&mut self, id: &str, cores: u32) -> usize {
        self.start(id, cores, false)
    }

    /// Starts executor `id`, watching its worker when `on_worker`.
    fn start(&mut self, id: &str, cores: u32, on_worker: bool) -> usize {
        let core = ExecutorCore::new(ExecutorIdentity {
            executor_id: id.into(),
            hostname: "host.sim".into(),
            cores,
            resource_profile_id: 0,
            watch_worker: on_worker,
        });
        self.executors.push(Exec { core, exit: None });
        self.settle();
        self.executors.len() - 1
    }

    fn ready(&self) -> usize {
        self.driver.status(self.now).ready_executors()
    }

    fn submit(&mut self, job: impl Job + 'static) -> JobId {
        let id = self.driver.submit(self.now, Arc::new(job)).expect("taken");
        self.settle();
        id
    }

    /// Steps the clock until `done` holds; panics past [`PATIENCE`].
    fn run_until(&mut self, what: &str, done: impl Fn(&Sim) -> bool) {
        let limit = self.now + PATIENCE;
        self.settle();
        while !done(self) {
            let next = [
                self.driver.poll_timeout(),
                self.tasks.iter().map(|t| t.due).min(),
            ]
            .into_iter()
            .flatten()
            .min();
            let Some(next) = next.filter(|n| *n <= limit) else {
                panic!("{what}: not within {PATIENCE:?} of simulated time");
            };
            self.now = self.now.max(next);
            self.step();
        }
    }

    /// Runs `job` to its end.
    fn run(&mut self, job: impl Job + 'static) -> Result<JobResult, JobFailed> {
        let id = self.submit(job);
        self.run_until("the job", |s| s.outcomes.contains_key(&id));
        self.outcomes.remove(&id).expect("ended")
    }

    /// What is due now: the tasks that end, the driver's timer.
    fn step(&mut self) {
        let (due, rest): (Vec<Running>, Vec<Running>) =
            self.tasks.drain(..).partition(|t| t.due <= self.now);
        self.tasks = rest;
        for t in due {
            let outcome = if t.killed {
                Err(TaskFailure::killed("killed on request"))
            } else {
                self.runner.run(&t.task, &CancelFlag::new())
            };
            let task_id = t.task.task_id;
            self.events.push_back(Event::Executor(
                t.exec,
                ExecutorInput::TaskEnded { task_id, outcome },
            ));
        }
        if self.driver.poll_timeout().is_some_and(|t| t <= self.now) {
            self.driver.handle_timeout(self.now);
        }
        self.settle();
    }

    /// Cuts a connection: both ends see it closed.
    fn cut(&mut self, end: End, reason: &str) {
        let Some(other) = self.peer.remove(&end) else {
            return;
        };
        self.peer.remove(&other);
        for e in [end, other] {
            let reason = reason.to_string();
            self.events.push_back(match e {
                End::Driver(conn) => Event::Driver(ConnInput::Closed { conn, reason }.into()),
                End::Executor(i, conn) => {
                    Event::Executor(i, ConnInput::Closed { conn, reason }.into())
                }
            });
        }
    }

    /// Carries every core's outputs to their peers until nothing moves.
    fn settle(&mut self) {
        loop {
            while let Some(out) = self.driver.poll() {
                self.carry_driver(out);
            }
            for i in 0..self.executors.len() {
                while let Some(out) = self.executors[i].core.poll() {
                    self.carry_executor(i, out);
                }
            }
            let Some(event) = self.events.pop_front() else {
                return;
            };
            match event {
                Event::Driver(input) => self.driver.handle(self.now, input),
                Event::Executor(i, input) => self.executors[i].core.handle(self.now, input),
            }
        }
    }

    fn carry_driver(&mut self, out: Output<CoarseMessage, BackendEffect>) {
        match out {
            Output::Conn(out) => {
                let conn = out.conn();
                let Some(&End::Executor(i, econn)) = self.peer.get(&End::Driver(conn)) else {
                    return;
                };
                let input = match out {
                    ConnOutput::Send { message, .. } => {
                        *self.sent.entry(message.name()).or_default() += 1;
                        ConnInput::Message {
                            conn: econn,
                            message,
                        }
                    }
                    ConnOutput::Reply { id, reply, .. } => ConnInput::Answer {
                        conn: econn,
                        id,
                        answer: Ok(reply),
                    },
                    ConnOutput::Fail { id, error, .. } => ConnInput::Answer {
                        conn: econn,
                        id,
                        answer: Err(AskFailure::Failed(error)),
                    },
                    ConnOutput::Ask { message, .. } => {
                        panic!(
                            "the driver asks its executors nothing, asked {}",
                            message.name()
                        )
                    }
                    ConnOutput::Close { .. } | ConnOutput::Abort { .. } => {
                        self.cut(End::Driver(conn), "closed by the driver");
                        return;
                    }
                };
                self.events.push_back(Event::Executor(i, input.into()));
            }
            Output::Effect(BackendEffect::JobEnded { job, outcome }) => {
                self.outcomes.insert(job, outcome);
            }
            Output::Effect(_) => {}
        }
    }

    fn carry_executor(&mut self, i: usize, out: Output<CoarseMessage, ExecutorEffect>) {
        match out {
            Output::Conn(out) => {
                let conn = out.conn();
                let Some(&End::Driver(dconn)) = self.peer.get(&End::Executor(i, conn)) else {
                    return;
                };
                let input = match out {
                    ConnOutput::Send { message, .. } => {
                        *self.received.entry(message.name()).or_default() += 1;
                        ConnInput::Message {
                            conn: dconn,
                            message,
                        }
                    }
                    ConnOutput::Ask { id, message, .. } => ConnInput::Ask {
                        conn: dconn,
                        id,
                        message,
                    },
                    ConnOutput::Reply { .. } | ConnOutput::Fail { .. } => return,
                    ConnOutput::Close { .. } | ConnOutput::Abort { .. } => {
                        self.cut(End::Executor(i, conn), "closed by the executor");
                        return;
                    }
                };
                self.events.push_back(Event::Driver(input.into()));
            }
            Output::Effect(effect) => self.executor_effect(i, effect),
        }
    }

    fn executor_effect(&mut self, i: usize, effect: ExecutorEffect) {
        match effect {
            ExecutorEffect::Dial(link) => {
                let (dconn, econn) = (self.next_conn, self.next_conn + 1);
                self.next_conn += 2;
                self.peer
                    .insert(End::Driver(dconn), End::Executor(i, econn));
                self.peer
                    .insert(End::Executor(i, econn), End::Driver(dconn));
                let peer = PeerInfo {
                    role: Role::Executor,
                    id: format!("app/{i}"),
                    addr: format!("10.0.0.{i}:4{econn:04}"),
                    version: sparkwire::messages::Version::V2,
                    admin: false,
                    max_frame_size: self.frame,
                };
                let driver = PeerInfo {
                    role: Role::Driver,
                    id: "driver".into(),
                    addr: "10.0.0.100:7078".into(),
                    ..peer.clone()
                };
                let opened = ConnInput::Opened {
                    conn: dconn,
                    peer,
                    origin: (),
                };
                self.events.push_back(Event::Driver(opened.into()));
                let opened = ConnInput::Opened {
                    conn: econn,
                    peer: driver,
                    origin: link,
                };
                self.events.push_back(Event::Executor(i, opened.into()));
            }
            ExecutorEffect::WatchWorker => {
                self.events
                    .push_back(Event::Executor(i, ExecutorInput::WorkerWatched));
            }
            ExecutorEffect::Registered { .. } => {}
            ExecutorEffect::Run(task) => {
                let task_id = task.task_id;
                self.events
                    .push_back(Event::Executor(i, ExecutorInput::TaskStarted { task_id }));
                self.tasks.push(Running {
                    due: self.now + TASK_TIME,
                    exec: i,
                    task: *task,
                    killed: false,
                });
            }
            ExecutorEffect::Kill { task_id, .. } => {
                for t in &mut self.tasks {
                    if t.exec == i && t.task.task_id == task_id {
                        t.killed = true;
                    }
                }
            }
            ExecutorEffect::Exit(exit) => {
                self.executors[i].exit = Some(exit);
                self.tasks.retain(|t| t.exec != i);
                // The process ends: its connections drop.
                let open: Vec<End> = self
                    .peer
                    .keys()
                    .filter(|e| matches!(e, End::Executor(j, _) if *j == i))
                    .copied()
                    .collect();
                for end in open {
                    self.cut(end, "the executor exited");
                }
            }
        }
    }

    /// The driver's end of executor `i`'s main connection (its last one).
    fn main_of(&self, i: usize) -> End {
        self.peer
            .keys()
            .filter(|e| matches!(e, End::Executor(j, _) if *j == i))
            .max_by_key(|e| match e {
                End::Executor(_, c) | End::Driver(c) => *c,
            })
            .copied()
            .expect("a connection")
    }

    fn stop(&mut self) {
        self.driver.handle(self.now, BackendInput::Stop);
        self.settle();
    }
}

#[test]
fn a_driver_and_two_executors_run_a_job_and_stop_on_one_simulated_clock() {
    let mut sim = Sim::new(128);
    sim.executor("1", 2);
    sim.executor("2", 1);
    assert_eq!(sim.ready(), 2);
    let job = SumSquaresJob {
        partitions: 9,
        n: 100_000,
    };
    let expected = format!("Sum of squares of 0..100000 is {}", job.expected());
    let started = sim.now;
    let result = sim.run(job).expect("the job succeeds");
    assert_eq!(result.output, expected);
    assert_eq!(result.tasks, 9);
    // Three cores, 9 tasks of 10 ms: three rounds.
    assert_eq!(sim.now - started, 3 * TASK_TIME);
    // Three frames per task, as Spark: LaunchTask, StatusUpdate RUNNING and FINISHED.
    assert_eq!(sim.sent["LaunchTask"], 9);
    assert_eq!(sim.received["StatusUpdate"], 18);
    let status = sim.driver.status(sim.now);
    assert_eq!(
        status.executor_connections, 4,
        "a bootstrap and a main one each"
    );
    sim.stop();
    assert_eq!(sim.sent["StopExecutor"], 2);
    for e in &sim.executors {
        assert_eq!(e.exit, Some(Ok(ExecutorExit::Stopped)));
    }
    assert!(!sim.driver.has_connections());
    assert_eq!(sim.driver.status(sim.now).executors_lost, 0);
}

#[test]
fn an_executor_lost_mid_job_has_its_tasks_run_on_the_other() {
    let mut sim = Sim::new(128);
    let victim = sim.executor("1", 1);
    sim.executor("2", 1);
    let job = sim.submit(PiJob {
        partitions: 6,
        samples: 1000,
        seed: 3,
    });
    assert_eq!(sim.sent["LaunchTask"], 2, "one task on each");
    let main = sim.main_of(victim);
    sim.cut(main, "connection reset");
    sim.settle();
    assert_eq!(
        sim.executors[victim].exit,
        Some(Ok(ExecutorExit::DriverLost("connection reset".into())))
    );
    sim.run_until("the job", |s| s.outcomes.contains_key(&job));
    assert!(sim.outcomes[&job].is_ok(), "{:?}", sim.outcomes[&job]);
    let status = sim.driver.status(sim.now);
    assert_eq!(status.executors_lost, 1);
    assert_eq!(sim.sent["LaunchTask"], 7, "the lost task ran again");
    assert_eq!(status.executors.len(), 1);
}

#[test]
fn a_task_too_large_fails_its_job_with_sparks_text_and_the_next_job_runs() {
    let mut sim = Sim::new(1);
    sim.executor("1", 1);
    sim.executor("2", 1);
    let big = sim
        .run(BigTaskJob {
            partitions: 2,
            size: 2 << 20,
        })
        .expect_err("too big");
    let prefix = "Job aborted due to stage failure: Serialized task ";
    let suffix = " bytes, which exceeds max allowed: spark.rpc.message.maxSize (843776 bytes). \
                  Consider increasing spark.rpc.message.maxSize or using broadcast variables \
                  for large values.";
    assert!(
        big.message.starts_with(prefix) && big.message.ends_with(suffix),
        "{}",
        big.message
    );
    assert_eq!(
        sim.sent.get("LaunchTask"),
        None,
        "nothing too large was written"
    );
    let small = sim
        .run(BigTaskJob {
            partitions: 4,
            size: 1000,
        })
        .expect("fits");
    assert_eq!(small.output, "4 tasks read 4000 input bytes");
    assert_eq!(sim.sent["LaunchTask"], 4);
    assert_eq!(sim.ready(), 2, "no executor was lost for it");
}

#[test]
fn a_result_too_big_for_a_frame_fails_the_task_and_keeps_the_executor() {
    let mut sim = Sim::new(1);
    sim.executor("1", 1);
    let error = sim
        .run(BigResultJob {
            partitions: 1,
            size: 2 << 20,
        })
        .expect_err("fails");
    assert!(
        error.message.contains("failed 4 times")
            && error.message.contains(
                "Result of task (TID 3) was 2097152 bytes, which exceeds max allowed: \
                 spark.rpc.message.maxSize (843776 bytes)"
            ),
        "{}",
        error.message
    );
    let ok = sim
        .run(BigResultJob {
            partitions: 2,
            size: 1000,
        })
        .expect("small results pass");
    assert_eq!(ok.output, "2 results, 2000 bytes in all");
    assert_eq!(sim.driver.status(sim.now).executors_lost, 0);
}

#[test]
fn a_flaky_task_is_retried_until_it_succeeds() {
    let mut sim = Sim::new(128);
    sim.executor("1", 2);
    let result = sim
        .run(FlakyJob {
            partitions: 2,
            failures: 2,
        })
        .expect("succeeds");
    assert_eq!(result.output, "2 tasks succeeded on attempts [2, 2]");
    assert_eq!(sim.sent["LaunchTask"], 6);
    assert_eq!(sim.driver.status(sim.now).tasks_failed, 4);
}

#[test]
fn a_task_failing_four_times_fails_its_job_with_the_last_error() {
    let mut sim = Sim::new(128);
    sim.executor("1", 1);
    let error = sim
        .run(FlakyJob {
            partitions: 1,
            failures: 100,
        })
        .expect_err("the job fails");
    assert_eq!(
        error.message,
        "Job aborted due to stage failure: Task 0 in stage 0.0 failed 4 times, most recent \
         failure: Lost task 0.3 in stage 0.0 (TID 3) (host.sim executor 1): \
         java.lang.RuntimeException: flaky task fails attempt 3 of partition 0"
    );
    assert_eq!(sim.sent["LaunchTask"], 4);
}

#[test]
fn cancelling_a_job_kills_its_running_tasks_and_frees_the_executors() {
    let mut sim = Sim::new(128);
    sim.executor("1", 1);
    sim.executor("2", 1);
    let job = sim.submit(PiJob {
        partitions: 3,
        samples: 1000,
        seed: 1,
    });
    sim.driver.handle(sim.now, BackendInput::Cancel(job));
    sim.settle();
    assert_eq!(
        sim.outcomes.remove(&job).map(|o| o.map_err(|e| e.message)),
        Some(Err("Job 0 cancelled".to_string()))
    );
    assert_eq!(sim.sent["KillTask"], 2);
    sim.run_until("the kills reported", |s| {
        s.driver
            .status(s.now)
            .executors
            .iter()
            .all(|e| e.free_cores == e.cores)
    });
    assert_eq!(sim.driver.status(sim.now).tasks_failed, 2);
    let next = sim.run(PiJob {
        partitions: 2,
        samples: 1000,
        seed: 3,
    });
    assert!(next.is_ok(), "{next:?}");
}

#[test]
fn a_second_executor_with_a_registered_id_is_refused_with_sparks_text() {
    let mut sim = Sim::new(128);
    sim.executor("7", 1);
    let second = sim.executor("7", 1);
    assert_eq!(
        sim.executors[second].exit,
        Some(Err(StartFailed::Refused("Duplicate executor ID: 7".into())))
    );
    assert_eq!(sim.ready(), 1);
    let r = sim.run(PiJob {
        partitions: 2,
        samples: 1000,
        seed: 1,
    });
    assert!(r.is_ok(), "{r:?}");
}

#[test]
fn an_executor_whose_worker_goes_away_exits_and_the_driver_loses_it() {
    let mut sim = Sim::new(128);
    let e = sim.start("1", 1, true);
    sim.executor("2", 1);
    assert_eq!(sim.ready(), 2, "registered after its worker's watch was up");
    let job = sim.submit(PiJob {
        partitions: 4,
        samples: 1000,
        seed: 2,
    });
    sim.events.push_back(Event::Executor(
        e,
        ExecutorInput::WorkerLost {
            reason: "the worker closed the connection".into(),
        },
    ));
    sim.settle();
    assert_eq!(
        sim.executors[e].exit,
        Some(Ok(ExecutorExit::WorkerLost(
            "the worker closed the connection".into()
        )))
    );
    assert_eq!(
        sim.executors[e]
            .exit
            .as_ref()
            .map(|x| x.as_ref().map(|x| x.code())),
        Some(Ok(1))
    );
    sim.run_until("the job", |s| s.outcomes.contains_key(&job));
    assert!(sim.outcomes[&job].is_ok(), "{:?}", sim.outcomes[&job]);
    assert_eq!(sim.driver.status(sim.now).executors_lost, 1);
}

/// The application client with two masters, the test playing them.
struct Client {
    now: Instant,
    core: AppClientCore,
    /// What it wrote, by connection.
    sent: Vec<(ConnId, DeployMessage)>,
    dials: Vec<usize>,
    /// What it told the scheduler backend.
    events: Vec<MasterEvent>,
}

const RETRY: Duration = Duration::from_secs(20);
const REGISTRATION_TIMEOUT: Duration = Duration::from_secs(60);

impl Client {
    fn new() -> Client {
        let now = Instant::now();
        let register = RegisterApplication::new(
            common::samples::app_description(),
            EndpointRef::at(Addr::new("driver.sim".to_string(), 7079), "AppClient"),
        );
        let config = ClientConfig {
            masters: vec!["sparkwire://m1:7077".into(), "sparkwire://m2:7077".into()],
            register,
            registration_timeout: REGISTRATION_TIMEOUT,
            registration_retry: RETRY,
        };
        let mut client = Client {
            now,
            core: AppClientCore::new(config, now),
            sent: Vec::new(),
            dials: Vec::new(),
            events: Vec::new(),
        };
        client.drain();
        client
    }

    fn drain(&mut self) {
        while let Some(out) = self.core.poll() {
            match out {
                Output::Conn(ConnOutput::Send { conn, message }) => self.sent.push((conn, message)),
                Output::Conn(other) => panic!("unexpected {other:?}"),
                Output::Effect(ClientEffect::Dial { master }) => self.dials.push(master),
                Output::Effect(ClientEffect::Master(event)) => self.events.push(event),
                Output::Effect(other) => panic!("unexpected {other:?}"),
            }
        }
    }

    fn input(&mut self, input: impl Into<ClientInput>) {
        self.core.handle(self.now, input.into());
        self.drain();
    }

    /// Steps the clock to the client's next timeout.
    fn tick(&mut self) -> Duration {
        let at = self.core.poll_timeout().expect("a timer");
        let waited = at - self.now;
        self.now = at;
        self.core.handle_timeout(at);
        self.drain();
        waited
    }

    fn registrations(&self, conn: ConnId) -> usize {
        self.sent
            .iter()
            .filter(|(c, m)| *c == conn && matches!(m, DeployMessage::RegisterApplication(_)))
            .count()
    }
}

#[test]
fn the_app_client_retries_its_registration_then_follows_master_changed_into_the_backend() {
    let mut client = Client::new();
    assert_eq!(client.dials, [0, 1], "every master is dialled");
    client.input(ConnInput::DialFailed {
        origin: ClientLink::Master(0),
        error: "connection refused".into(),
    });
    client.input(master(5, ClientLink::Master(1), "master-2"));
    assert_eq!(
        client.registrations(5),
        1,
        "registered as soon as connected"
    );
    // A standby master ignores it: asked again every 20 s, and only there.
    assert_eq!(client.tick(), RETRY);
    assert_eq!(client.tick(), RETRY);
    assert_eq!(client.registrations(5), 3);
    assert_eq!(client.sent.len(), 3);
    client.input(ConnInput::Message {
        conn: 5,
        message: DeployMessage::RegisteredApplication(RegisteredApplication::new(
            "app-1".into(),
            common::samples::master_ref(),
        )),
    });
    assert_eq!(client.core.poll_timeout(), None, "no more retries");
    // A master that took over dials the application and says so.
    client.input(master(9, ClientLink::Adopted, "master-3"));
    client.input(ConnInput::Message {
        conn: 9,
        message: DeployMessage::MasterChanged(MasterChanged::new(
            common::samples::master_ref(),
            String::new(),
        )),
    });
    assert!(matches!(
        client.sent.last(),
        Some((9, DeployMessage::MasterChangeAcknowledged(a))) if a.app_id == "app-1"
    ));
    // The backend learns both from the client, as its runtime carries them over.
    let mut sim = Sim::new(128);
    for event in client.events.drain(..) {
        sim.driver.handle(sim.now, BackendInput::Master(event));
    }
    let status = sim.driver.status(sim.now);
    assert_eq!(status.app_id.as_deref(), Some("app-1"));
    assert_eq!(status.master.as_deref(), Some("master-3"));
    assert_eq!(status.master_changes, 1);
}

#[test]
fn the_app_client_gives_up_when_no_master_answers_in_time_and_the_backend_takes_no_job() {
    let mut client = Client::new();
    client.input(master(1, ClientLink::Master(0), "master-1"));
    client.input(ConnInput::DialFailed {
        origin: ClientLink::Master(1),
        error: "connection refused".into(),
    });
    let mut waited = Duration::ZERO;
    while client.events.is_empty() {
        waited += client.tick();
    }
    assert_eq!(waited, REGISTRATION_TIMEOUT);
    assert_eq!(client.registrations(1), 3, "at 0, 20 and 40 s");
    let [MasterEvent::Dead(why)] = client.events.as_slice() else {
        panic!("{:?}", client.events);
    };
    assert_eq!(
        why,
        &format!("{ALL_MASTERS_UNRESPONSIVE} (sparkwire://m2:7077: connection refused)")
    );
    let mut sim = Sim::new(128);
    sim.driver.handle(
        sim.now,
        BackendInput::Master(MasterEvent::Dead(why.clone())),
    );
    let refused = sim.driver.submit(
        sim.now,
        Arc::new(PiJob {
            partitions: 1,
            samples: 10,
            seed: 1,
        }),
    );
    assert_eq!(refused, Err(SubmitRefused::Dead(why.clone())));
}

/// A master's connection `conn` to the application client, up for `link`.
fn master(conn: ConnId, link: ClientLink, id: &str) -> ConnInput<DeployMessage, ClientLink> {
    let peer = PeerInfo {
        role: Role::Master,
        id: id.into(),
        addr: "10.0.0.1:7077".into(),
        version: sparkwire::messages::Version::V2,
        admin: false,
        max_frame_size: sparkwire::wire::DEFAULT_MAX_FRAME_SIZE,
    };
    ConnInput::Opened {
        conn,
        peer,
        origin: link,
    }
}
