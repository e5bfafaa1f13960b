//! An application's nodes in a [`Cluster`](super::Cluster): the driver (its scheduler backend
//! and its application client, one process) and its executors, whose tasks run on the
//! simulated clock.

use std::any::Any;
use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::{Frame, Hello, Node, Step};
use crate::messages::{Addr, Payload, TaskDescription, Version};
use crate::node::driver::ClientLink;
use crate::node::driver::{
    AppClientCore, BackendConfig, BackendCore, BackendEffect, BackendInput, ClientConfig,
    ClientEffect, ClientInput, JobFailed, JobId, JobResult, RequestFailed,
};
use crate::node::executor::{
    ExecutorCore, ExecutorEffect, ExecutorExit, ExecutorIdentity, ExecutorInput, Link, StartFailed,
};
use crate::node::{AskFailure, ConnId, ConnInput, Core, Output};
use crate::wire::handshake::Role;
use crate::wire::TaskFailure;

const MIB: usize = 1024 * 1024;

/// What an executor does with a task: its result, or why it failed. The simulation gives no
/// cancel flag: a task killed before its end fails with [`TaskFailure::killed`] instead.
pub type TaskFn = Arc<dyn Fn(&TaskDescription) -> Result<Payload, TaskFailure>>;

/// A driver: the real [`BackendCore`] and, when it has masters, the real [`AppClientCore`], in
/// one node listening at one address (executors and masters that take over dial it there).
pub struct DriverNode {
    addr: Addr,
    backend: BackendCore,
    client: Option<AppClientCore>,
    /// The masters' addresses, by the client's index.
    masters: Vec<Addr>,
    /// The master each pending dial is for, by address, oldest first.
    dialling: BTreeMap<String, VecDeque<usize>>,
    /// The client's connections (the rest are the backend's).
    client_conns: BTreeSet<ConnId>,
    outcomes: BTreeMap<JobId, Result<JobResult, JobFailed>>,
    answers: Vec<(u64, Result<bool, RequestFailed>)>,
    refusals: Vec<String>,
}

impl DriverNode {
    /// A driver listening at `addr` with the backend's `config`, started at `now`; with
    /// `client`, its application client registers with the masters at `masters` (the same
    /// order as `client.masters`).
    pub fn new(
        config: BackendConfig,
        addr: Addr,
        client: Option<(ClientConfig, Vec<Addr>)>,
        now: Instant,
    ) -> DriverNode {
        let (client, masters) = match client {
            Some((c, masters)) => (Some(AppClientCore::new(c, now)), masters),
            None => (None, Vec::new()),
        };
        DriverNode {
            addr,
            backend: BackendCore::new(config, now),
            client,
            masters,
            dialling: BTreeMap::new(),
            client_conns: BTreeSet::new(),
            outcomes: BTreeMap::new(),
            answers: Vec::new(),
            refusals: Vec::new(),
        }
    }

    /// The scheduler backend.
    pub fn backend(&self) -> &BackendCore {
        &self.backend
    }

    /// The scheduler backend, to give it input (the cluster carries its outputs at its next
    /// step).
    pub fn backend_mut(&mut self) -> &mut BackendCore {
        &mut self.backend
    }

    /// The application client, if the driver has masters.
    pub fn client(&self) -> Option<&AppClientCore> {
        self.client.as_ref()
    }

    /// The application client, to give it input.
    pub fn client_mut(&mut self) -> Option<&mut AppClientCore> {
        self.client.as_mut()
    }

    /// How job `job` ended, once it did.
    pub fn outcome(&self, job: JobId) -> Option<&Result<JobResult, JobFailed>> {
        self.outcomes.get(&job)
    }

    /// The masters' answers to the requests given to the client, in order.
    pub fn answers(&self) -> &[(u64, Result<bool, RequestFailed>)] {
        &self.answers
    }

    /// The refusals the backend logged (`kind: reason`), in order.
    pub fn refusals(&self) -> &[String] {
        &self.refusals
    }

    fn client_input(&mut self, now: Instant, input: ClientInput) {
        if let Some(c) = &mut self.client {
            c.handle(now, input);
        }
    }
}

impl Node for DriverNode {
    fn hello(&self) -> Hello {
        Hello {
            role: Role::Driver,
            id: "driver".to_string(),
            addr: Some(self.addr.clone()),
            admin: false,
        }
    }

    fn hello_with(&self, peer: &Hello) -> Hello {
        let mut hello = self.hello();
        if peer.role == Role::Master {
            hello.role = Role::AppClient;
            hello.id = "app-client".to_string();
        }
        hello
    }

    fn accepted(&mut self, now: Instant, conn: ConnId, peer: &Hello, version: Version) {
        let mut info = super::nodes::peer_info(peer, version);
        if peer.role == Role::Master {
            self.client_conns.insert(conn);
            let input = ConnInput::Opened {
                conn,
                peer: info,
                origin: ClientLink::Adopted,
            };
            self.client_input(now, input.into());
            return;
        }
        info.max_frame_size = self.backend.config().max_message_size_mib as usize * MIB;
        let input = ConnInput::Opened {
            conn,
            peer: info,
            origin: (),
        };
        self.backend.handle(now, input.into());
    }

    fn dialled(&mut self, now: Instant, conn: ConnId, addr: &Addr, p: &Hello, v: Version) {
        let master = self
            .dialling
            .get_mut(&addr.to_string())
            .and_then(VecDeque::pop_front);
        if let Some(master) = master {
            self.client_conns.insert(conn);
            let input = ConnInput::Opened {
                conn,
                peer: super::nodes::peer_info(p, v),
                origin: ClientLink::Master(master),
            };
            self.client_input(now, input.into());
        }
    }

    fn dial_failed(&mut self, now: Instant, addr: &Addr, why: &str) {
        let master = self
            .dialling
            .get_mut(&addr.to_string())
            .and_then(VecDeque::pop_front);
        if let Some(master) = master {
            let error = format!("cannot connect to {addr}: {why}");
            let origin = ClientLink::Master(master);
            self.client_input(now, ConnInput::DialFailed { origin, error }.into());
        }
    }

    fn frame(&mut self, now: Instant, conn: ConnId, frame: Frame) {
        match frame {
            Frame::Message(message) => {
                self.client_input(now, ConnInput::Message { conn, message }.into())
            }
            Frame::Ask(id, message) => {
                self.client_input(now, ConnInput::Ask { conn, id, message }.into())
            }
            Frame::Answer(id, answer) => {
                let answer = answer.map_err(AskFailure::Failed);
                self.client_input(now, ConnInput::Answer { conn, id, answer }.into());
            }
            Frame::CoarseMessage(message) => {
                let input: BackendInput = ConnInput::Message { conn, message }.into();
                self.backend.handle(now, input);
            }
            Frame::CoarseAsk(id, message) => {
                let input: BackendInput = ConnInput::Ask { conn, id, message }.into();
                self.backend.handle(now, input);
            }
            // The backend asks its executors nothing.
            Frame::CoarseAnswer(..) => {}
        }
    }

    fn closed(&mut self, now: Instant, conn: ConnId) {
        let reason = "the connection closed".to_string();
        if self.client_conns.remove(&conn) {
            self.client_input(now, ConnInput::Closed { conn, reason }.into());
        } else {
            let input: BackendInput = ConnInput::Closed { conn, reason }.into();
            self.backend.handle(now, input);
        }
    }

    fn handle_timeout(&mut self, now: Instant) {
        if self.backend.poll_timeout().is_some_and(|t| t <= now) {
            self.backend.handle_timeout(now);
        }
        if let Some(c) = &mut self.client {
            if c.poll_timeout().is_some_and(|t| t <= now) {
                c.handle_timeout(now);
            }
        }
    }

    fn poll_timeout(&self) -> Option<Instant> {
        let client = self.client.as_ref().and_then(|c| c.poll_timeout());
        [self.backend.poll_timeout(), client]
            .into_iter()
            .flatten()
            .min()
    }

    fn poll(&mut self, now: Instant) -> Option<Step> {
        while let Some(out) = self.client.as_mut().and_then(|c| c.poll()) {
            match out {
                Output::Conn(c) => return Some(Step::Conn(c)),
                Output::Effect(ClientEffect::Dial { master }) => {
                    let Some(addr) = self.masters.get(master).cloned() else {
                        let error = "no such master".to_string();
                        let origin = ClientLink::Master(master);
                        self.client_input(now, ConnInput::DialFailed { origin, error }.into());
                        continue;
                    };
                    self.dialling
                        .entry(addr.to_string())
                        .or_default()
                        .push_back(master);
                    return Some(Step::Dial(addr));
                }
                Output::Effect(ClientEffect::Master(event)) => {
                    self.backend.handle(now, BackendInput::Master(event));
                }
                Output::Effect(ClientEffect::Answered { request, result }) => {
                    self.answers.push((request, result));
                }
            }
        }
        while let Some(out) = self.backend.poll() {
            match out {
                Output::Conn(c) => return Some(Step::Coarse(c)),
                Output::Effect(BackendEffect::JobEnded { job, outcome }) => {
                    self.outcomes.insert(job, outcome);
                }
                Output::Effect(BackendEffect::Refused { kind, reason, .. }) => {
                    self.refusals.push(format!("{kind}: {reason}"));
                }
                Output::Effect(BackendEffect::Progress { .. }) => {}
            }
        }
        None
    }

    fn as_any(&self) -> &dyn Any {
        self
    }

    fn as_any_mut(&mut self) -> &mut dyn Any {
        self
    }
}

/// A task running on an executor.
struct Running {
    due: Instant,
    task: TaskDescription,
    killed: bool,
}

/// An executor: the real [`ExecutorCore`]; it dials the driver at `driver` (and watches its
/// worker at `worker`, when it has one), and runs each task for the cluster's task time, through
/// its [`TaskFn`].
pub struct ExecutorNode {
    core: ExecutorCore,
    driver: Addr,
    worker: Option<Addr>,
    run: TaskFn,
    task_time: Duration,
    /// The links each pending dial of the driver is for, oldest first.
    dialling: VecDeque<Link>,
    watch: Option<ConnId>,
    watching: bool,
    tasks: Vec<Running>,
    inputs: VecDeque<ExecutorInput>,
    exit: Option<Result<ExecutorExit, StartFailed>>,
}

impl ExecutorNode {
    /// Executor `me` of the driver at `driver`, watching the worker at `worker` when
    /// `me.watch_worker`; each task runs `task_time`, then `run` gives its outcome.
    pub fn new(
        me: ExecutorIdentity,
        driver: Addr,
        worker: Option<Addr>,
        run: TaskFn,
        task_time: Duration,
    ) -> ExecutorNode {
        ExecutorNode {
            core: ExecutorCore::new(me),
            driver,
            worker,
            run,
            task_time,
            dialling: VecDeque::new(),
            watch: None,
            watching: false,
            tasks: Vec::new(),
            inputs: VecDeque::new(),
            exit: None,
        }
    }

    /// The core.
    pub fn core(&self) -> &ExecutorCore {
        &self.core
    }

    /// How it ended, once it did.
    pub fn exit(&self) -> Option<&Result<ExecutorExit, StartFailed>> {
        self.exit.as_ref()
    }

    /// The tasks running now.
    pub fn running(&self) -> usize {
        self.tasks.len()
    }

    /// Its worker is gone (as when the watch connection ends), handled at the next step.
    pub fn lose_worker(&mut self, reason: &str) {
        self.inputs.push_back(ExecutorInput::WorkerLost {
            reason: reason.to_string(),
        });
    }
}

impl Node for ExecutorNode {
    #[cfg(feature = "testing")]
    fn plant(&mut self, plant: crate::node::plant::Plant) {
        self.core.plant(plant);
    }

    fn hello(&self) -> Hello {
        Hello {
            role: Role::Executor,
            id: self.core.identity().executor_id.clone(),
            addr: None,
            admin: false,
        }
    }

    fn accepted(&mut self, _now: Instant, _conn: ConnId, _peer: &Hello, _version: Version) {}

    fn dialled(&mut self, now: Instant, conn: ConnId, addr: &Addr, p: &Hello, v: Version) {
        if self.watching && self.worker.as_ref() == Some(addr) {
            self.watching = false;
            self.watch = Some(conn);
            self.core.handle(now, ExecutorInput::WorkerWatched);
        } else if let Some(link) = self.dialling.pop_front() {
            let input = ConnInput::Opened {
                conn,
                peer: super::nodes::peer_info(p, v),
                origin: link,
            };
            self.core.handle(now, input.into());
        }
    }

    fn dial_failed(&mut self, now: Instant, addr: &Addr, why: &str) {
        if self.watching && self.worker.as_ref() == Some(addr) {
            self.watching = false;
            let reason = format!("cannot connect to {addr}: {why}");
            self.core.handle(now, ExecutorInput::WorkerLost { reason });
        } else if let Some(link) = self.dialling.pop_front() {
            let error = format!("cannot connect to {addr}: {why}");
            let input = ConnInput::DialFailed {
                origin: link,
                error,
            };
            self.core.handle(now, input.into());
        }
    }

    fn frame(&mut self, now: Instant, conn: ConnId, frame: Frame) {
        let input = match frame {
            Frame::CoarseMessage(message) => ConnInput::Message { conn, message },
            Frame::CoarseAsk(id, message) => ConnInput::Ask { conn, id, message },
            Frame::CoarseAnswer(id, answer) => ConnInput::Answer {
                conn,
                id,
                answer: answer.map_err(AskFailure::Failed),
            },
            // The worker's watch carries nothing.
            _ => return,
        };
        self.core.handle(now, input.into());
    }

    fn closed(&mut self, now: Instant, conn: ConnId) {
        if self.watch == Some(conn) {
            self.watch = None;
            let reason = "the worker closed the connection".to_string();
            self.core.handle(now, ExecutorInput::WorkerLost { reason });
        } else {
            let reason = "the connection closed".to_string();
            let input = ConnInput::Closed { conn, reason };
            self.core.handle(now, input.into());
        }
    }

    fn handle_timeout(&mut self, now: Instant) {
        let (due, rest): (Vec<Running>, Vec<Running>) =
            self.tasks.drain(..).partition(|t| t.due <= now);
        self.tasks = rest;
        for t in due {
            let outcome = if t.killed {
                Err(TaskFailure::killed("killed on request"))
            } else {
                (self.run)(&t.task)
            };
            let task_id = t.task.task_id;
            self.core
                .handle(now, ExecutorInput::TaskEnded { task_id, outcome });
        }
    }

    fn poll_timeout(&self) -> Option<Instant> {
        if self.exit.is_some() {
            return None;
        }
        let tasks = self.tasks.iter().map(|t| t.due).min();
        [self.core.poll_timeout(), tasks]
            .into_iter()
            .flatten()
            .min()
    }

    fn poll(&mut self, now: Instant) -> Option<Step> {
        while let Some(input) = self.inputs.pop_front() {
            self.core.handle(now, input);
        }
        while let Some(out) = self.core.poll() {
            match out {
                Output::Conn(c) => return Some(Step::Coarse(c)),
                Output::Effect(ExecutorEffect::Dial(link)) => {
                    self.dialling.push_back(link);
                    return Some(Step::Dial(self.driver.clone()));
                }
                Output::Effect(ExecutorEffect::WatchWorker) => match self.worker.clone() {
                    Some(addr) => {
                        self.watching = true;
                        return Some(Step::Dial(addr));
                    }
                    None => {
                        let reason = "no worker to watch".to_string();
                        self.core.handle(now, ExecutorInput::WorkerLost { reason });
                    }
                },
                Output::Effect(ExecutorEffect::Registered { .. }) => {}
                Output::Effect(ExecutorEffect::Run(task)) => {
                    let task_id = task.task_id;
                    self.tasks.push(Running {
                        due: now + self.task_time,
                        task: *task,
                        killed: false,
                    });
                    self.core
                        .handle(now, ExecutorInput::TaskStarted { task_id });
                }
                Output::Effect(ExecutorEffect::Kill { task_id, .. }) => {
                    for t in self.tasks.iter_mut().filter(|t| t.task.task_id == task_id) {
                        t.killed = true;
                    }
                }
                Output::Effect(ExecutorEffect::Exit(exit)) => {
                    let code = match &exit {
                        Ok(e) => e.code(),
                        Err(_) => 1,
                    };
                    self.exit = Some(exit);
                    self.tasks.clear();
                    return Some(Step::Exit(code));
                }
            }
        }
        None
    }

    fn as_any(&self) -> &dyn Any {
        self
    }

    fn as_any_mut(&mut self) -> &mut dyn Any {
        self
    }
}
