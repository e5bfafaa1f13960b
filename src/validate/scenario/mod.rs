//! Builds event sequences of a standalone cluster, for tests, examples, sample traces and
//! benchmarks: a [`Scenario`] opens connections and sends messages with a clock that advances one
//! millisecond per event; [`msg`] makes the messages with plausible field values.
//!
//! ```
//! use sparkwire::validate::scenario::Scenario;
//! use sparkwire::validate::Validator;
//!
//! let mut s = Scenario::new();
//! let worker = s.worker("worker-1", "10.0.0.1", 4, 8192);
//! let app = s.app("app-1");
//! s.launch_executor(&app, &worker, 0, 2, 1024);
//! let mut v = Validator::default();
//! let verdicts: Vec<_> = s.events().iter().flat_map(|e| v.observe(e)).collect();
//! assert!(verdicts.is_empty(), "{verdicts:?}");
//! ```

use super::event::{ConnId, Endpoint, Event, EventBody, TaskPayloads, ValidatedFamily};
use crate::messages::{
    DeployMessage, ErrorDescription, ExecutorState, Payload, TaskState, Version,
};
use crate::wire::handshake::Role;
use crate::wire::{Envelope, Reply};

/// A connection of a scenario: its id and its two ends.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Link {
    /// Connection id.
    pub conn: ConnId,
    /// The end that dialled.
    pub client: Endpoint,
    /// The end that accepted.
    pub server: Endpoint,
}

/// An event sequence under construction.
#[derive(Debug, Clone)]
pub struct Scenario {
    events: Vec<Event>,
    time: u64,
    next_conn: ConnId,
    next_ask: u64,
    version: Version,
    /// The master every deploy-family helper talks to.
    pub master: Endpoint,
}

impl Default for Scenario {
    fn default() -> Self {
        Scenario::new()
    }
}

impl Scenario {
    /// An empty scenario in the newest protocol version, with master `master-1`.
    pub fn new() -> Self {
        Scenario::with_version(Version::LATEST)
    }

    /// An empty scenario whose connections use `version`.
    pub fn with_version(version: Version) -> Self {
        Scenario {
            events: Vec::new(),
            time: 0,
            next_conn: 1,
            next_ask: 1,
            version,
            master: Endpoint::new(Role::Master, "master-1"),
        }
    }

    /// The events so far.
    pub fn events(&self) -> &[Event] {
        &self.events
    }

    /// The events, consuming the scenario.
    pub fn into_events(self) -> Vec<Event> {
        self.events
    }

    /// The time the next event gets, in milliseconds.
    pub fn now(&self) -> u64 {
        self.time
    }

    /// Moves the clock `ms` milliseconds on.
    pub fn advance(&mut self, ms: u64) {
        self.time += ms;
    }

    /// Appends an event as is.
    pub fn push(&mut self, event: Event) {
        self.events.push(event);
    }

    fn stamp(&mut self) -> u64 {
        let t = self.time;
        self.time += 1;
        t
    }

    /// Opens a connection from `client` to `server`.
    pub fn open(&mut self, client: Endpoint, server: Endpoint) -> Link {
        let conn = self.next_conn;
        self.next_conn += 1;
        let t = self.stamp();
        self.events.push(Event::open(
            t,
            conn,
            client.clone(),
            server.clone(),
            self.version,
        ));
        Link {
            conn,
            client,
            server,
        }
    }

    /// Says whose task descriptions the payloads of `link`'s connection are: sets `tasks` on its
    /// open event.
    pub fn set_tasks(&mut self, link: &Link, tasks: TaskPayloads) {
        for e in self.events.iter_mut().filter(|e| e.conn == link.conn) {
            if let EventBody::Open { tasks: t, .. } = &mut e.body {
                *t = tasks;
            }
        }
    }

    /// Closes a connection.
    pub fn close(&mut self, link: &Link) {
        let t = self.stamp();
        self.events.push(Event::close(t, link.conn));
    }

    fn envelope<F: ValidatedFamily>(&mut self, link: &Link, upward: bool, env: Envelope<F>) {
        let (from, to) = if upward {
            (link.client.clone(), link.server.clone())
        } else {
            (link.server.clone(), link.client.clone())
        };
        let t = self.stamp();
        self.events
            .push(Event::message(t, link.conn, from, to, self.version, env));
    }

    /// The client sends `m` to the server.
    pub fn up<F: ValidatedFamily>(&mut self, link: &Link, m: F) {
        self.envelope(link, true, Envelope::Send(m));
    }

    /// The server sends `m` to the client.
    pub fn down<F: ValidatedFamily>(&mut self, link: &Link, m: F) {
        self.envelope(link, false, Envelope::Send(m));
    }

    /// The client asks `m`; returns the ask id.
    pub fn ask_up<F: ValidatedFamily>(&mut self, link: &Link, m: F) -> u64 {
        let id = self.next_ask;
        self.next_ask += 1;
        self.envelope(link, true, Envelope::Ask { id, message: m });
        id
    }

    /// The server asks `m`; returns the ask id.
    pub fn ask_down<F: ValidatedFamily>(&mut self, link: &Link, m: F) -> u64 {
        let id = self.next_ask;
        self.next_ask += 1;
        self.envelope(link, false, Envelope::Ask { id, message: m });
        id
    }

    /// The client answers the server's ask `id`.
    pub fn reply_up<F: ValidatedFamily>(&mut self, link: &Link, id: u64, reply: Reply<F>) {
        self.envelope(link, true, Envelope::Reply { id, reply });
    }

    /// The server answers the client's ask `id`.
    pub fn reply_down<F: ValidatedFamily>(&mut self, link: &Link, id: u64, reply: Reply<F>) {
        self.envelope(link, false, Envelope::Reply { id, reply });
    }

    /// The server fails the client's ask `id` with `message`.
    pub fn fail_down<F: ValidatedFamily>(&mut self, link: &Link, id: u64, message: &str) {
        let error = ErrorDescription::new("java.lang.IllegalStateException", message);
        self.envelope::<F>(link, false, Envelope::Failure { id, error });
    }

    /// A worker connects and registers: RegisterWorker, RegisteredWorker.
    pub fn worker(&mut self, id: &str, host: &str, cores: i32, memory: i32) -> Link {
        let link = self.open(Endpoint::new(Role::Worker, id), self.master.clone());
        self.up(&link, msg::register_worker(id, host, cores, memory));
        self.down(&link, msg::registered_worker(false));
        link
    }

    /// An application client connects and registers: RegisterApplication, RegisteredApplication.
    pub fn app(&mut self, app_id: &str) -> Link {
        let link = self.open(Endpoint::new(Role::AppClient, app_id), self.master.clone());
        self.up(&link, msg::register_application(app_id));
        self.down(&link, msg::registered_application(app_id));
        link
    }

    /// The master launches an executor and it starts: LaunchExecutor, ExecutorAdded,
    /// ExecutorStateChanged RUNNING (an ask answered true; a send in version 1), ExecutorUpdated
    /// RUNNING. The application's and worker's ids are those of the links' clients (the ids given
    /// to [`Scenario::app`] and [`Scenario::worker`]).
    pub fn launch_executor(
        &mut self,
        app: &Link,
        worker: &Link,
        exec_id: i32,
        cores: i32,
        memory: i32,
    ) {
        let app_id = app.client.id.as_str();
        let worker_id = worker.client.id.as_str();
        self.down(worker, msg::launch_executor(app_id, exec_id, cores, memory));
        self.down(app, msg::executor_added(exec_id, worker_id, cores, memory));
        let changed = msg::executor_state_changed(app_id, exec_id, ExecutorState::Running);
        if self.version == Version::V1 {
            // Spark 3.0's workers sent it one-way.
            self.up(worker, changed);
        } else {
            let ask = self.ask_up(worker, changed);
            self.reply_down(worker, ask, Reply::<DeployMessage>::Bool(true));
        }
        self.down(
            app,
            msg::executor_updated(exec_id, ExecutorState::Running, None),
        );
    }

    /// An executor starts and registers with `driver`: a bootstrap connection
    /// (RetrieveSparkAppConfig, SparkAppConfig, closed), then its main connection
    /// (RegisterExecutor answered true, LaunchedExecutor), which is returned.
    pub fn executor(&mut self, driver: &Endpoint, exec_id: &str, cores: i32) -> Link {
        let me = Endpoint::new(Role::Executor, format!("{}/{exec_id}", driver.id));
        let boot = self.open(me.clone(), driver.clone());
        let ask = self.ask_up(&boot, msg::retrieve_spark_app_config());
        self.reply_down(&boot, ask, Reply::Message(msg::spark_app_config()));
        self.close(&boot);
        let link = self.open(me, driver.clone());
        let ask = self.ask_up(&link, msg::register_executor(exec_id, cores));
        self.reply_down(
            &link,
            ask,
            Reply::<crate::messages::CoarseMessage>::Bool(true),
        );
        self.up(&link, msg::launched_executor(exec_id));
        link
    }

    /// A task runs on an executor: LaunchTask, StatusUpdate RUNNING, StatusUpdate FINISHED.
    pub fn run_task(&mut self, exec: &Link, exec_id: &str, task_id: i64, cpus: u32) {
        self.down(exec, msg::launch_task(task_id, cpus));
        self.up(
            exec,
            msg::status_update(exec_id, task_id, TaskState::Running, cpus),
        );
        self.up(
            exec,
            msg::status_update(exec_id, task_id, TaskState::Finished, cpus),
        );
    }
}

/// A LaunchTask payload: a sparkwire [`TaskDescription`](crate::messages::TaskDescription) for
/// task `task_id` taking `cpus` cores, which [`super::sparkwire_task_decoder`] reads back.
pub fn task_data(task_id: i64, cpus: u32) -> Payload {
    let task = crate::messages::TaskDescription {
        task_id,
        attempt_number: 0,
        executor_id: String::new(),
        name: format!("task {task_id}"),
        index: 0,
        partition_id: 0,
        stage_id: 0,
        stage_attempt_id: 0,
        properties: Default::default(),
        cpus: i32::try_from(cpus).unwrap_or(i32::MAX),
        resources: Default::default(),
        serialized_task: Payload::default(),
    };
    // Encoding a description of plain fields into memory cannot fail; an empty payload would only
    // make the decoder report the task unreadable.
    Payload::from(crate::wire::encode_task(&task).unwrap_or_default())
}

pub mod msg;
