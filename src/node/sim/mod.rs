//! An in-memory cluster of real protocol cores on one simulated clock, in the manner of
//! quinn-proto's test `Pair`: no socket, no process, no file, no sleep.
//!
//! A [`Cluster`] holds nodes: each a [`Node`], a core and a small adapter that turns what the
//! cluster does (a connection accepted or dialled, a frame delivered, a connection closed) into
//! the core's input, and the core's [`ConnOutput`]s and dials into [`Step`]s the cluster routes.
//! [`MasterNode`] and [`WorkerNode`] wrap the real [`MasterCore`] and [`WorkerCore`] (a worker's
//! processes start and end in memory); [`DriverNode`] wraps a driver's two real cores, the
//! scheduler backend and the application client ([`Cluster::add_driver`]); [`ExecutorNode`]
//! wraps the real executor core, whose tasks run on the simulated clock through a [`TaskFn`].
//! When a worker starts an executor of a driver in the cluster, the cluster starts an
//! [`ExecutorNode`] that dials that driver and watches its worker, as the reference worker's
//! process would; when the executor exits, its worker sees its process end, and when the worker
//! kills it, its node dies. A [`Probe`] is a connection the test holds and writes on itself, of
//! either message family (an application client, a UI, an executor without manners). Any other
//! core joins by implementing [`Node`].
//!
//! Time moves only when [`Cluster::step`] has nothing left to do at the current instant: it then
//! jumps to the earliest of the next delivery and every running node's
//! [`Core::poll_timeout`](crate::node::Core::poll_timeout). Knobs: a link's delay
//! ([`Cluster::set_delay`]), dropping the next messages of a name ([`Cluster::drop_next`]),
//! cutting a link silently ([`Cluster::cut`], a partition) or closing it
//! ([`Cluster::close`], a reset), and pausing a node ([`Cluster::pause`], a stopped process:
//! it handles nothing and its timers wait until [`Cluster::resume`]).
//!
//! A dial to an address where no live process listens (never started, or [`Cluster::kill`]ed)
//! is refused at once. With a dial timeout ([`Cluster::set_dial_timeout`]; the search's model,
//! [`DIAL_TIMEOUT`]), dials behave as TCP's: a dial to a node that is paused, or across a
//! partition ([`Cluster::isolate`]), waits for it to resume or heal, as a kernel accepts a
//! connection for a stopped process and a lost SYN is sent again, and fails (`timed out`) when
//! the timeout passes first. Without one (a new cluster, which tests script by hand) such a
//! dial is refused at once too.
//!
//! ```
//! use std::time::Duration;
//! use sparkwire::messages::{Addr, WorkerState};
//! use sparkwire::node::master;
//! use sparkwire::node::sim::Cluster;
//!
//! let mut cluster = Cluster::new();
//! let config = master::Config { worker_timeout: Duration::from_secs(4), ..Default::default() };
//! let m = cluster.add_master(config, Addr::new("10.0.0.1", 7077));
//! let w = cluster.add_worker("worker-1", Addr::new("10.0.0.2", 4000), 2, 2048, &[m]);
//! cluster.run_for(Duration::from_secs(1));
//! assert_eq!(cluster.master(m).master_state().workers[0].state, WorkerState::Alive);
//! // The worker stops (a long pause): after the timeout the master has it DEAD.
//! cluster.pause(w);
//! cluster.run_for(Duration::from_secs(10));
//! assert_eq!(cluster.master(m).master_state().workers[0].state, WorkerState::Dead);
//! ```

mod application;
mod nodes;
pub mod search;
pub mod store;

pub use application::{DriverNode, ExecutorNode, TaskFn};
pub use nodes::{
    app_description, app_description_for, driver_description, MasterNode, Probe, WorkerNode,
    DRIVER_PROGRAM, EXECUTOR_PROGRAM,
};

use std::any::Any;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::messages::{Addr, CoarseMessage, DeployMessage, ErrorDescription, Family, Version};
use crate::node::driver::{
    BackendConfig, BackendCore, ClientConfig, Job, JobFailed, JobId, JobResult, SubmitRefused,
};
use crate::node::executor::ExecutorIdentity;
use crate::node::master::{self, MasterCore};
use crate::node::worker::{Launch, RunKey, WorkerCore};
use crate::node::{ConnId, ConnOutput};
use crate::wire::handshake::Role;
use crate::wire::Reply;

/// A node's index in its cluster.
pub type NodeId = usize;

/// A connection between two nodes, by the cluster's own count.
pub type LinkId = u64;

/// Who a node is in a handshake.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hello {
    /// Its role.
    pub role: Role,
    /// Its id.
    pub id: String,
    /// Where it listens (and is dialled), if it does.
    pub addr: Option<Addr>,
    /// It proved the admin secret.
    pub admin: bool,
}

/// What arrives on a connection.
#[derive(Debug, Clone, PartialEq)]
#[allow(clippy::large_enum_variant)] // as the message enums: boxing would cost an allocation per message
pub enum Frame {
    /// A one-way message.
    Message(DeployMessage),
    /// An ask.
    Ask(u64, DeployMessage),
    /// The answer to this side's ask.
    Answer(u64, Result<Reply<DeployMessage>, ErrorDescription>),
    /// A one-way message of the coarse family (between a driver and its executors).
    CoarseMessage(CoarseMessage),
    /// An ask of the coarse family.
    CoarseAsk(u64, CoarseMessage),
    /// The answer to this side's ask of the coarse family.
    CoarseAnswer(u64, Result<Reply<CoarseMessage>, ErrorDescription>),
}

impl Frame {
    /// The message's name (`reply` and `failure` for answers).
    pub fn name(&self) -> String {
        match self {
            Frame::Message(m) | Frame::Ask(_, m) => m.name().to_string(),
            Frame::CoarseMessage(m) | Frame::CoarseAsk(_, m) => m.name().to_string(),
            Frame::Answer(_, Ok(_)) | Frame::CoarseAnswer(_, Ok(_)) => "reply".to_string(),
            Frame::Answer(_, Err(_)) | Frame::CoarseAnswer(_, Err(_)) => "failure".to_string(),
        }
    }

    /// Whether it is an ask.
    pub fn is_ask(&self) -> bool {
        matches!(self, Frame::Ask(..) | Frame::CoarseAsk(..))
    }
}

/// A message family a [`Frame`] carries.
trait Carried: Sized {
    fn message(m: Self) -> Frame;
    fn ask(id: u64, m: Self) -> Frame;
    fn answer(id: u64, a: Result<Reply<Self>, ErrorDescription>) -> Frame;
}

impl Carried for DeployMessage {
    fn message(m: Self) -> Frame {
        Frame::Message(m)
    }
    fn ask(id: u64, m: Self) -> Frame {
        Frame::Ask(id, m)
    }
    fn answer(id: u64, a: Result<Reply<Self>, ErrorDescription>) -> Frame {
        Frame::Answer(id, a)
    }
}

impl Carried for CoarseMessage {
    fn message(m: Self) -> Frame {
        Frame::CoarseMessage(m)
    }
    fn ask(id: u64, m: Self) -> Frame {
        Frame::CoarseAsk(id, m)
    }
    fn answer(id: u64, a: Result<Reply<Self>, ErrorDescription>) -> Frame {
        Frame::CoarseAnswer(id, a)
    }
}

/// What a node asks of the cluster.
#[derive(Debug, Clone, PartialEq)]
#[allow(clippy::large_enum_variant)] // as the message enums: boxing would cost an allocation per message
pub enum Step {
    /// Write on (or close) one of its connections.
    Conn(ConnOutput<DeployMessage>),
    /// Write on (or close) one of its connections of the coarse family.
    Coarse(ConnOutput<CoarseMessage>),
    /// Its process ends with this exit code: every connection it has closes, and the worker
    /// that started it (if one did) sees it end.
    Exit(i32),
    /// Connect to the node listening at this address; reported with [`Node::dialled`] or
    /// [`Node::dial_failed`].
    Dial(Addr),
}

/// A core with its adapter: what the cluster drives.
pub trait Node: Any {
    /// Who it is in handshakes.
    fn hello(&self) -> Hello;
    /// Who it is in its handshake with `peer` (a driver is an application client to a master):
    /// [`Node::hello`] unless it says otherwise.
    fn hello_with(&self, peer: &Hello) -> Hello {
        let _ = peer;
        self.hello()
    }
    /// A peer dialled it: connection `conn` is up, agreed on `version`.
    fn accepted(&mut self, now: Instant, conn: ConnId, peer: &Hello, version: Version);
    /// Its dial of `addr` succeeded: connection `conn` is up, agreed on `version`.
    fn dialled(&mut self, now: Instant, conn: ConnId, addr: &Addr, peer: &Hello, version: Version);
    /// Its dial of `addr` failed, for the reason `why`: nothing listens there (`connection
    /// refused`), or no handshake came back within the dial timeout (`timed out`, a peer
    /// paused or cut off; [`Cluster::set_dial_timeout`]).
    fn dial_failed(&mut self, now: Instant, addr: &Addr, why: &str);
    /// A frame arrived on `conn`.
    fn frame(&mut self, now: Instant, conn: ConnId, frame: Frame);
    /// Connection `conn` closed.
    fn closed(&mut self, now: Instant, conn: ConnId);
    /// Its timeout is due.
    fn handle_timeout(&mut self, now: Instant);
    /// When it next wants [`Node::handle_timeout`].
    fn poll_timeout(&self) -> Option<Instant>;
    /// What it wants done next.
    fn poll(&mut self, now: Instant) -> Option<Step>;
    /// Plants bug `plant` in its core, if it has one of the kind (tests only;
    /// [`crate::node::plant`]).
    #[cfg(feature = "testing")]
    fn plant(&mut self, plant: crate::node::plant::Plant) {
        let _ = plant;
    }
    /// Itself, to be looked at by its type.
    fn as_any(&self) -> &dyn Any;
    /// Itself, to be changed by its type.
    fn as_any_mut(&mut self) -> &mut dyn Any;
}

struct Slot {
    node: Box<dyn Node>,
    paused: bool,
    /// Its process died ([`Cluster::kill`]): nothing listens at its address any more.
    dead: bool,
    version: Version,
    next_conn: ConnId,
}

struct Link {
    ends: [(NodeId, ConnId); 2],
    /// Silently dropping everything (a partition).
    cut: bool,
    /// The node cut off, when the cut is a partition of one node ([`Cluster::cut_from`]): what
    /// it writes is lost before any observer sees it; what others write to it is seen, then lost.
    isolated_end: Option<NodeId>,
    delay: Duration,
    /// When the last frame written on it arrives: a later one never arrives before it, whatever
    /// the link's delay became (TCP keeps a connection's order).
    last: Instant,
}

/// How long a dial waits for a peer that is paused or cut off before it fails, unless
/// [`Cluster::set_dial_timeout`] says otherwise: the reference runtime's TCP connect and
/// handshake timeouts (`connection::DEFAULT_HANDSHAKE_TIMEOUT`, the executor's
/// `connect_timeout`), 30 s each.
pub const DIAL_TIMEOUT: Duration = Duration::from_secs(30);

/// A dial waiting, as TCP's would: for a paused peer (its kernel accepted the connection, its
/// process has not made the handshake), or across a partition (the SYNs are lost and sent
/// again).
struct PendingDial {
    from: NodeId,
    addr: Addr,
    /// When it fails if it is still waiting (and its dialler runs).
    deadline: Instant,
}

/// Where a dial stands now.
enum Reach {
    /// The peer runs and nothing is in between: the connection opens.
    Now(NodeId),
    /// The peer is paused, or one end is cut off: the dial waits.
    Wait,
    /// Nothing listens at the address: refused at once.
    Refused,
}

/// What went over the cluster's links, in the order it happened, for an observer
/// ([`Cluster::record`]): the search's oracle and trace.
#[derive(Debug, Clone, PartialEq)]
#[allow(clippy::large_enum_variant)] // as Frame
pub enum Wire {
    /// A connection opened: `client` dialled `server`.
    Open {
        /// The link.
        link: LinkId,
        /// The dialling node and its hello.
        client: (NodeId, Hello),
        /// The accepting node and its hello.
        server: (NodeId, Hello),
        /// The version they agreed on.
        version: Version,
    },
    /// A frame was written (on a cut link too: the network then loses it, [`Wire::Lost`]).
    Written {
        /// Its number, which its [`Wire::Delivered`] or [`Wire::Lost`] names.
        seq: u64,
        /// The link.
        link: LinkId,
        /// The writer.
        from: NodeId,
        /// The frame.
        frame: Frame,
    },
    /// A frame written was lost (its link was cut, or reset while it was on its way).
    Lost {
        /// The [`Wire::Written`]'s number.
        seq: u64,
    },
    /// A frame arrived at `to`.
    Delivered {
        /// The [`Wire::Written`]'s number.
        seq: u64,
        /// The link.
        link: LinkId,
        /// The receiver.
        to: NodeId,
        /// The frame.
        frame: Frame,
    },
    /// The connection closed; both ends saw it.
    Closed {
        /// The link.
        link: LinkId,
    },
}

/// A frame (or a close) on its way.
struct Delivery {
    link: LinkId,
    /// The receiving end (0 or 1).
    to: usize,
    /// `None`: the close of the connection.
    frame: Option<Frame>,
    /// The frame's number in the record.
    seq: u64,
}

/// One message as it went over a link, for assertions.
#[derive(Debug, Clone, PartialEq)]
pub struct Sent {
    /// When it was written.
    pub at: Instant,
    /// Who wrote it.
    pub from: NodeId,
    /// Who it was for.
    pub to: NodeId,
    /// The message's name (`reply` and `failure` for answers).
    pub name: String,
    /// It was an ask.
    pub asked: bool,
}

/// N cores wired in memory on one simulated clock. See the [module docs](self).
pub struct Cluster {
    start: Instant,
    now: Instant,
    slots: Vec<Slot>,
    links: BTreeMap<LinkId, Link>,
    by_end: BTreeMap<(NodeId, ConnId), (LinkId, usize)>,
    next_link: LinkId,
    inflight: BTreeMap<(Instant, u64), Delivery>,
    seq: u64,
    delay: Duration,
    drops: Vec<(String, usize)>,
    log: Vec<Sent>,
    /// How executors run tasks, once a driver joined.
    run: Option<TaskFn>,
    task_time: Duration,
    /// The executor nodes workers started: node → (worker, process).
    processes: BTreeMap<NodeId, (NodeId, RunKey)>,
    /// What went over the links since the observer last took it, when recording.
    wire: Option<Vec<Wire>>,
    /// Nodes that can neither dial nor be dialled (a partition).
    isolated: Vec<NodeId>,
    /// The bug planted in every core added from now on (tests only).
    #[cfg(feature = "testing")]
    plant: crate::node::plant::Plant,
    /// Routing what the nodes want done ([`Cluster::drain`]) is under way.
    draining: bool,
    /// What a delivery makes its receiver write goes out before the next delivery
    /// ([`Cluster::one_input_at_a_time`]).
    one_input_at_a_time: bool,
    /// Dials waiting for a paused or cut-off peer, oldest first.
    dials: std::collections::VecDeque<PendingDial>,
    /// Something that decides a waiting dial changed (a node resumed, healed, died or
    /// started).
    dials_dirty: bool,
    /// How long a dial waits ([`Cluster::set_dial_timeout`]).
    dial_timeout: Duration,
}

impl Default for Cluster {
    fn default() -> Self {
        Cluster::new()
    }
}

impl Cluster {
    /// An empty cluster; every link delivers after 1 ms.
    pub fn new() -> Cluster {
        let start = Instant::now();
        Cluster {
            start,
            now: start,
            slots: Vec::new(),
            links: BTreeMap::new(),
            by_end: BTreeMap::new(),
            next_link: 1,
            inflight: BTreeMap::new(),
            seq: 0,
            delay: Duration::from_millis(1),
            drops: Vec::new(),
            log: Vec::new(),
            run: None,
            task_time: Duration::from_millis(10),
            processes: BTreeMap::new(),
            wire: None,
            isolated: Vec::new(),
            #[cfg(feature = "testing")]
            plant: crate::node::plant::Plant::None,
            draining: false,
            one_input_at_a_time: false,
            dials: std::collections::VecDeque::new(),
            dials_dirty: false,
            dial_timeout: Duration::ZERO,
        }
    }

    /// A dial to a paused or cut-off peer waits up to `timeout` for it to resume or heal, then
    /// fails (`timed out`), as TCP's ([`DIAL_TIMEOUT`]: the simulator's search always sets it);
    /// with zero, the default of a cluster a test scripts by hand, it fails at once, as a dial
    /// to a dead peer always does (`connection refused`). See the [module docs](self).
    pub fn set_dial_timeout(&mut self, timeout: Duration) {
        self.dial_timeout = timeout;
    }

    /// From now on, what each delivery makes its receiver write goes out before the next
    /// delivery is handled (by default, everything due at an instant is delivered first), so
    /// that the record ([`Cluster::record`]) shows each output after its input.
    pub fn one_input_at_a_time(&mut self) {
        self.one_input_at_a_time = true;
    }

    /// Plants bug `plant` in every core added from now on (tests only;
    /// [`crate::node::plant`]).
    #[cfg(feature = "testing")]
    pub fn plant(&mut self, plant: crate::node::plant::Plant) {
        self.plant = plant;
    }

    /// Records what goes over the links from now on ([`Cluster::take_wire`]).
    pub fn record(&mut self) {
        self.wire.get_or_insert_with(Vec::new);
    }

    /// What went over the links since the last call, in order (empty unless recording).
    pub fn take_wire(&mut self) -> Vec<Wire> {
        self.wire.as_mut().map(std::mem::take).unwrap_or_default()
    }

    /// Node `id` can neither dial nor be dialled while `isolated` (its open links are not
    /// touched: [`Cluster::cut`] them).
    pub fn isolate(&mut self, id: NodeId, isolated: bool) {
        self.isolated.retain(|n| *n != id);
        if isolated {
            self.isolated.push(id);
        }
        self.dials_dirty = true;
    }

    /// Whether node `id` is paused (or dead).
    pub fn is_paused(&self, id: NodeId) -> bool {
        self.slots[id].paused
    }

    /// Whether node `id`'s process died ([`Cluster::kill`]).
    pub fn is_dead(&self, id: NodeId) -> bool {
        self.slots[id].dead
    }

    /// How many nodes the cluster has had (dead ones included).
    pub fn len(&self) -> usize {
        self.slots.len()
    }

    /// Whether it has no node.
    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }

    /// The hello of node `id`.
    pub fn hello_of(&self, id: NodeId) -> Hello {
        self.slots[id].node.hello()
    }

    /// The process of node `id` ends with `code`, as if it exited: its connections close and
    /// the worker that started it (if one did) sees it end.
    pub fn crash(&mut self, id: NodeId, code: i32) {
        self.exited(id, code);
    }

    /// The simulated time now.
    pub fn now(&self) -> Instant {
        self.now
    }

    /// How long the cluster has run.
    pub fn elapsed(&self) -> Duration {
        self.now - self.start
    }

    /// Adds `node`; it speaks protocol version 2 unless [`Cluster::set_version`] says otherwise.
    pub fn add(&mut self, node: Box<dyn Node>) -> NodeId {
        #[cfg(feature = "testing")]
        let node = {
            let mut node = node;
            if self.plant != crate::node::plant::Plant::None {
                node.plant(self.plant);
            }
            node
        };
        self.slots.push(Slot {
            node,
            paused: false,
            dead: false,
            version: Version::V2,
            next_conn: 1,
        });
        self.dials_dirty = true;
        self.slots.len() - 1
    }

    /// Adds an elected master at `addr` (it persists to memory, [`MasterNode::store`]).
    pub fn add_master(&mut self, config: master::Config, addr: Addr) -> NodeId {
        let node = MasterNode::elected(config, addr, self.now);
        self.add(Box::new(node))
    }

    /// Adds a worker offering `cores` and `memory` MiB that registers with `masters` at once,
    /// heartbeating every quarter of the masters' worker timeout (taken from the first).
    pub fn add_worker(
        &mut self,
        id: &str,
        addr: Addr,
        cores: i32,
        memory: i32,
        masters: &[NodeId],
    ) -> NodeId {
        let timeout = masters.first().map_or(Duration::from_secs(60), |m| {
            self.master(*m).config().worker_timeout
        });
        let addrs = masters
            .iter()
            .filter_map(|m| self.slots[*m].node.hello().addr)
            .collect();
        let node = WorkerNode::new(id, addr, cores, memory, addrs, timeout, self.now);
        self.add(Box::new(node))
    }

    /// Adds a master at `addr` in STANDBY, until [`Cluster::elect`].
    pub fn add_standby_master(&mut self, config: master::Config, addr: Addr) -> NodeId {
        let node = MasterNode::standby(config, addr, self.now);
        self.add(Box::new(node))
    }

    /// Elects master `id` now on `stored` (what the recovery store it shares holds).
    pub fn elect(&mut self, id: NodeId, stored: master::Stored) {
        let now = self.now;
        self.node_mut::<MasterNode>(id).elect(now, stored);
    }

    /// Adds a driver listening at `config`'s driver host and port; with `masters`, its
    /// application client registers an application whose executors dial it
    /// ([`app_description_for`], asked again every 20 s, given up after 60 s, as Spark). Each of
    /// its executors runs a task for the task time ([`Cluster::set_task_time`], 10 ms unless
    /// set), then `run` gives the task's outcome. From now on, every executor a worker starts
    /// for this driver is an [`ExecutorNode`] that dials it (and watches its worker).
    pub fn add_driver(&mut self, config: BackendConfig, masters: &[NodeId], run: TaskFn) -> NodeId {
        let addr = Addr::new(config.driver_host.clone(), i32::from(config.driver_port));
        let master_addrs: Vec<Addr> = masters
            .iter()
            .filter_map(|m| self.slots[*m].node.hello().addr)
            .collect();
        let client = (!master_addrs.is_empty()).then(|| {
            let cores = config.executor_cores.map(|c| c as i32);
            let desc = app_description_for(
                &config.app_name,
                cores,
                config.executor_memory_mb as i32,
                &addr,
            );
            let register = crate::messages::deploy::RegisterApplication {
                app_description: desc,
                driver: crate::messages::EndpointRef::at(addr.clone(), "AppClient"),
                spark_release: None,
            };
            let client = ClientConfig {
                masters: master_addrs
                    .iter()
                    .map(|a| format!("sparkwire://{a}"))
                    .collect(),
                register,
                registration_timeout: Duration::from_secs(60),
                registration_retry: Duration::from_secs(20),
            };
            (client, master_addrs)
        });
        self.run = Some(run);
        let node = DriverNode::new(config, addr, client, self.now);
        self.add(Box::new(node))
    }

    /// Adds executor `id` offering `cores`, started by hand (not by a worker) for driver
    /// `driver`; it watches worker `worker` when given one.
    pub fn add_executor(
        &mut self,
        id: &str,
        cores: u32,
        driver: NodeId,
        worker: Option<NodeId>,
    ) -> NodeId {
        let me = ExecutorIdentity {
            executor_id: id.to_string(),
            hostname: "host.sim".to_string(),
            cores,
            resource_profile_id: 0,
            watch_worker: worker.is_some(),
        };
        let driver = self.slots[driver]
            .node
            .hello()
            .addr
            .unwrap_or_else(|| Addr::new("", 0));
        let worker = worker.and_then(|w| self.slots[w].node.hello().addr);
        let run = self.task_fn();
        let node = ExecutorNode::new(me, driver, worker, run, self.task_time);
        self.add(Box::new(node))
    }

    /// Each task runs `d` of simulated time from now on (10 ms unless set).
    pub fn set_task_time(&mut self, d: Duration) {
        self.task_time = d;
    }

    fn task_fn(&self) -> TaskFn {
        self.run.clone().unwrap_or_else(|| {
            Arc::new(|_| {
                Err(crate::wire::TaskFailure::new(
                    "java.lang.IllegalStateException",
                    "no driver gave this cluster a task runner",
                ))
            })
        })
    }

    /// The driver of node `id`.
    pub fn driver(&self, id: NodeId) -> &DriverNode {
        self.node::<DriverNode>(id)
    }

    /// The scheduler backend of driver `id`.
    pub fn backend(&self, id: NodeId) -> &BackendCore {
        self.driver(id).backend()
    }

    /// The executor of node `id`.
    pub fn executor(&self, id: NodeId) -> &ExecutorNode {
        self.node::<ExecutorNode>(id)
    }

    /// Every executor node, in the order they started.
    pub fn executors(&self) -> Vec<NodeId> {
        (0..self.slots.len())
            .filter(|i| self.slots[*i].node.as_any().is::<ExecutorNode>())
            .collect()
    }

    /// Submits `job` to driver `driver`; the cluster settles.
    pub fn submit(
        &mut self,
        driver: NodeId,
        job: impl Job + 'static,
    ) -> Result<JobId, SubmitRefused> {
        let now = self.now;
        let id = self
            .node_mut::<DriverNode>(driver)
            .backend_mut()
            .submit(now, Arc::new(job));
        self.settle();
        id
    }

    /// Submits `job` to driver `driver` and runs until it ends, for at most `limit` of
    /// simulated time: how it ended (`None`: refused, or not ended by then).
    pub fn run_job(
        &mut self,
        driver: NodeId,
        job: impl Job + 'static,
        limit: Duration,
    ) -> Option<Result<JobResult, JobFailed>> {
        let job = self.submit(driver, job).ok()?;
        self.run_until(limit, |c| c.driver(driver).outcome(job).is_some());
        self.driver(driver).outcome(job).cloned()
    }

    /// Starts an executor node for each executor a worker started for a driver of this
    /// cluster, and stops the node of each one a worker killed; whether anything changed.
    fn processes(&mut self) -> bool {
        let mut any = false;
        for w in 0..self.slots.len() {
            let Some(worker) = self.slots[w].node.as_any_mut().downcast_mut::<WorkerNode>() else {
                continue;
            };
            let (started, killed) = worker.take_changes();
            for launch in started {
                any |= self.start_executor(w, launch);
            }
            for key in killed {
                let victim = self
                    .processes
                    .iter()
                    .find(|(_, (wk, k))| *wk == w && *k == key)
                    .map(|(n, _)| *n);
                if let Some(node) = victim {
                    self.processes.remove(&node);
                    self.kill(node);
                    any = true;
                }
            }
        }
        any
    }

    /// Worker `worker` started `launch`: when it is an executor of a driver here, its node.
    fn start_executor(&mut self, worker: NodeId, launch: Launch) -> bool {
        let RunKey::Executor(..) = &launch.key else {
            return false;
        };
        let flag = |name: &str| {
            let at = launch.args.iter().position(|a| a == name)?;
            launch.args.get(at + 1).cloned()
        };
        let Some(driver) = flag("--driver-url").and_then(|u| driver_addr(&u)) else {
            return false;
        };
        let is_driver = self.slots.iter().any(|s| {
            s.node.as_any().is::<DriverNode>() && s.node.hello().addr.as_ref() == Some(&driver)
        });
        if !is_driver {
            return false;
        }
        let me = ExecutorIdentity {
            executor_id: flag("--executor-id").unwrap_or_default(),
            hostname: flag("--hostname").unwrap_or_default(),
            cores: flag("--cores").and_then(|c| c.parse().ok()).unwrap_or(1),
            resource_profile_id: flag("--resourceProfileId")
                .and_then(|c| c.parse().ok())
                .unwrap_or(0),
            watch_worker: flag("--worker-url").is_some(),
        };
        let watched = me
            .watch_worker
            .then(|| self.slots[worker].node.hello().addr)
            .flatten();
        let node = ExecutorNode::new(me, driver, watched, self.task_fn(), self.task_time);
        let id = self.add(Box::new(node));
        self.slots[id].version = self.slots[worker].version;
        self.processes.insert(id, (worker, launch.key));
        true
    }

    /// Node `id`'s process ended with `code`: its connections close, and its worker (if one
    /// started it) sees it end.
    fn exited(&mut self, id: NodeId, code: i32) {
        self.kill(id);
        if let Some((worker, key)) = self.processes.remove(&id) {
            self.node_mut::<WorkerNode>(worker).end(&key, code);
        }
    }

    /// Adds a probe: a peer of `role` the test writes on itself.
    pub fn add_probe(&mut self, role: Role, id: &str) -> NodeId {
        self.add(Box::new(Probe::new(role, id)))
    }

    /// The node `id` as its type. Panics (in tests) when it is of another type.
    pub fn node<T: Node>(&self, id: NodeId) -> &T {
        self.slots[id]
            .node
            .as_any()
            .downcast_ref()
            .expect("a node of that type")
    }

    /// The node `id` as its type, to change. Panics (in tests) when it is of another type.
    pub fn node_mut<T: Node>(&mut self, id: NodeId) -> &mut T {
        self.slots[id]
            .node
            .as_any_mut()
            .downcast_mut()
            .expect("a node of that type")
    }

    /// The master core of node `id`.
    pub fn master(&self, id: NodeId) -> &MasterCore {
        self.node::<MasterNode>(id).core()
    }

    /// The worker core of node `id`.
    pub fn worker(&self, id: NodeId) -> &WorkerCore {
        self.node::<WorkerNode>(id).core()
    }

    /// The probe of node `id`.
    pub fn probe(&self, id: NodeId) -> &Probe {
        self.node::<Probe>(id)
    }

    /// Node `id` speaks `version` (a link agrees on the lower of its ends').
    pub fn set_version(&mut self, id: NodeId, version: Version) {
        self.slots[id].version = version;
    }

    /// Every link made from now on delivers after `delay`; with `link`, only that one.
    pub fn set_delay(&mut self, link: Option<LinkId>, delay: Duration) {
        match link {
            Some(l) => {
                if let Some(l) = self.links.get_mut(&l) {
                    l.delay = delay;
                }
            }
            None => self.delay = delay,
        }
    }

    /// Drops the next `count` messages named `name`, on any link.
    pub fn drop_next(&mut self, name: &str, count: usize) {
        self.drops.push((name.to_string(), count));
    }

    /// Partitions `link`: what is on it and what is written on it from now on is lost; neither
    /// end notices.
    pub fn cut(&mut self, link: LinkId) {
        if let Some(l) = self.links.get_mut(&link) {
            l.cut = true;
        }
        self.drop_inflight(link);
    }

    /// Partitions `link` at `node`'s end (node `node` is cut off): as [`Cluster::cut`], and
    /// what `node` writes on it is not even recorded ([`Cluster::record`]), as an observer on
    /// the other side would not see it.
    pub fn cut_from(&mut self, link: LinkId, node: NodeId) {
        if let Some(l) = self.links.get_mut(&link) {
            l.isolated_end = Some(node);
        }
        self.cut(link);
    }

    /// Resets `link`: what is on it is lost and both ends see it closed.
    pub fn close(&mut self, link: LinkId) {
        self.drop_inflight(link);
        self.drop_link(link);
    }

    /// Routes now what every running node wants done (what a close or an input given from
    /// outside a step made it write), before anything else happens.
    pub fn flush(&mut self) {
        if !self.draining {
            self.drain();
        }
    }

    /// Stops node `id`: it handles nothing, its timers wait, what is sent to it waits.
    pub fn pause(&mut self, id: NodeId) {
        self.slots[id].paused = true;
    }

    /// Lets node `id` run again (not a dead one: a process does not come back).
    pub fn resume(&mut self, id: NodeId) {
        if !self.slots[id].dead {
            self.slots[id].paused = false;
            self.dials_dirty = true;
        }
    }

    /// Node `id`'s process dies: it stops, every connection it has closes (its peers see
    /// them closed; what was on its way is lost), and a dial to its address is refused.
    pub fn kill(&mut self, id: NodeId) {
        self.pause(id);
        self.slots[id].dead = true;
        self.dials_dirty = true;
        for link in self.links_of(id) {
            self.close(link);
        }
    }

    /// The links open to or from `node`, oldest first.
    pub fn links_of(&self, node: NodeId) -> Vec<LinkId> {
        self.links
            .iter()
            .filter(|(_, l)| l.ends[0].0 == node || l.ends[1].0 == node)
            .map(|(id, _)| *id)
            .collect()
    }

    /// The links open between `a` and `b`, oldest first.
    pub fn links_between(&self, a: NodeId, b: NodeId) -> Vec<LinkId> {
        self.links
            .iter()
            .filter(|(_, l)| {
                let (x, y) = (l.ends[0].0, l.ends[1].0);
                (x, y) == (a, b) || (x, y) == (b, a)
            })
            .map(|(id, _)| *id)
            .collect()
    }

    /// Every message written so far.
    pub fn sent(&self) -> &[Sent] {
        &self.log
    }

    /// The messages named `name` written so far from `from` to `to`.
    pub fn count(&self, from: NodeId, to: NodeId, name: &str) -> usize {
        self.log
            .iter()
            .filter(|s| s.from == from && s.to == to && s.name == name)
            .count()
    }

    /// Probe `probe` dials node `to`; returns the probe's connection id once it is up.
    pub fn connect(&mut self, probe: NodeId, to: NodeId) -> Option<ConnId> {
        let addr = self.slots[to].node.hello().addr?;
        self.node_mut::<Probe>(probe).queue(Step::Dial(addr));
        self.settle();
        self.node::<Probe>(probe).last_opened()
    }

    /// Probe `probe` writes `message` one-way on its connection `conn`; the cluster runs until
    /// nothing is left to do at this instant or the next.
    pub fn send(&mut self, probe: NodeId, conn: ConnId, message: impl Into<DeployMessage>) {
        let message = message.into();
        self.node_mut::<Probe>(probe)
            .queue(Step::Conn(ConnOutput::Send { conn, message }));
        self.settle();
    }

    /// Probe `probe` asks `message` on its connection `conn`; the answer, once the cluster
    /// settled.
    pub fn ask(
        &mut self,
        probe: NodeId,
        conn: ConnId,
        message: impl Into<DeployMessage>,
    ) -> Option<Result<Reply<DeployMessage>, ErrorDescription>> {
        let id = self.node_mut::<Probe>(probe).next_ask();
        let message = message.into();
        self.node_mut::<Probe>(probe)
            .queue(Step::Conn(ConnOutput::Ask { conn, id, message }));
        self.settle();
        self.node::<Probe>(probe).answer(conn, id)
    }

    /// Probe `probe` writes `message` of the coarse family one-way on its connection `conn`
    /// (as an executor would); the cluster settles.
    pub fn send_coarse(&mut self, probe: NodeId, conn: ConnId, message: impl Into<CoarseMessage>) {
        let message = message.into();
        self.node_mut::<Probe>(probe)
            .queue(Step::Coarse(ConnOutput::Send { conn, message }));
        self.settle();
    }

    /// Probe `probe` asks `message` of the coarse family on its connection `conn`; the
    /// answer, once the cluster settled.
    pub fn ask_coarse(
        &mut self,
        probe: NodeId,
        conn: ConnId,
        message: impl Into<CoarseMessage>,
    ) -> Option<Result<Reply<CoarseMessage>, ErrorDescription>> {
        let id = self.node_mut::<Probe>(probe).next_ask();
        let message = message.into();
        self.node_mut::<Probe>(probe)
            .queue(Step::Coarse(ConnOutput::Ask { conn, id, message }));
        self.settle();
        self.node::<Probe>(probe).coarse_answer(conn, id)
    }

    /// An application client (a probe listening at `addr`) registers `desc` with master
    /// `master`: the probe, its connection, and the id the master gave (`None` if it gave none).
    pub fn app(
        &mut self,
        master: NodeId,
        addr: Addr,
        desc: crate::messages::ApplicationDescription,
    ) -> (NodeId, ConnId, Option<String>) {
        let id = format!("app-client-{}", addr.port);
        let probe = self.add(Box::new(Probe::listening(
            Role::AppClient,
            &id,
            addr.clone(),
        )));
        let Some(conn) = self.connect(probe, master) else {
            return (probe, 0, None);
        };
        let register = crate::messages::deploy::RegisterApplication {
            app_description: desc,
            driver: crate::messages::EndpointRef::at(addr, "AppClient"),
            spark_release: None,
        };
        self.send(probe, conn, register);
        let app_id = self.probe(probe).received().find_map(|m| match m {
            DeployMessage::RegisteredApplication(r) => Some(r.app_id.clone()),
            _ => None,
        });
        (probe, conn, app_id)
    }

    /// A probe that registers with master `master` as worker `id` at `addr` offering `cores` and
    /// `memory` MiB, then writes only what the test makes it write (no heartbeat): the probe and
    /// its connection.
    pub fn add_worker_probe(
        &mut self,
        master: NodeId,
        id: &str,
        addr: Addr,
        cores: i32,
        memory: i32,
    ) -> (NodeId, ConnId) {
        let probe = self.add(Box::new(Probe::listening(Role::Worker, id, addr.clone())));
        let conn = self.connect(probe, master).unwrap_or_default();
        let master_address = self.slots[master]
            .node
            .hello()
            .addr
            .unwrap_or_else(|| addr.clone());
        let register = crate::messages::deploy::RegisterWorker {
            id: id.to_string(),
            host: addr.host.clone(),
            port: addr.port,
            worker: crate::messages::EndpointRef::at(addr, "Worker"),
            cores,
            memory,
            worker_web_ui_url: String::new(),
            master_address,
            resources: crate::messages::Resources::new(),
            spark_release: None,
        };
        self.send(probe, conn, register);
        (probe, conn)
    }

    /// Master `master`'s state as a `ui` peer asks it over a fresh connection (through the
    /// master's routing and authorization), which then closes.
    pub fn ask_state(
        &mut self,
        master: NodeId,
    ) -> Option<crate::messages::deploy::MasterStateResponse> {
        let ui = self.add_probe(Role::Ui, "sim-ui");
        let conn = self.connect(ui, master)?;
        let answer = self.ask(ui, conn, crate::messages::deploy::RequestMasterState {});
        for link in self.links_between(ui, master) {
            self.close(link);
        }
        match answer {
            Some(Ok(Reply::Message(DeployMessage::MasterStateResponse(s)))) => Some(s),
            _ => None,
        }
    }

    /// Runs until the deliveries already written have arrived (a few link delays), and no
    /// later.
    pub fn settle(&mut self) {
        let until = self.now + self.delay.max(Duration::from_millis(1)) * 8;
        while self.step(until) {}
    }

    /// Runs for `d` of simulated time.
    pub fn run_for(&mut self, d: Duration) {
        let until = self.now + d;
        while self.step(until) {}
        self.now = self.now.max(until);
    }

    /// Runs until `done` holds (checked after every step), or `limit` of simulated time has
    /// passed; whether it held.
    pub fn run_until(&mut self, limit: Duration, mut done: impl FnMut(&Cluster) -> bool) -> bool {
        let until = self.now + limit;
        loop {
            if done(self) {
                return true;
            }
            if !self.step(until) {
                return done(self);
            }
        }
    }

    /// One step: everything due now is done; then the clock moves to the next event, if it
    /// comes by `until`, and that event is handled. False when nothing comes by `until`.
    pub fn step(&mut self, until: Instant) -> bool {
        self.drain();
        let next_delivery = self
            .inflight
            .iter()
            .find(|(_, d)| !self.slots[self.end(d).0].paused)
            .map(|((at, _), _)| *at);
        let next_timeout = self
            .slots
            .iter()
            .filter(|s| !s.paused)
            .filter_map(|s| s.node.poll_timeout())
            .chain(self.dial_deadline())
            .min();
        let Some(next) = [next_delivery, next_timeout].into_iter().flatten().min() else {
            return false;
        };
        if next > until {
            return false;
        }
        self.now = self.now.max(next);
        let due: Vec<(Instant, u64)> = self
            .inflight
            .iter()
            .filter(|((at, _), d)| *at <= self.now && !self.slots[self.end(d).0].paused)
            .map(|(k, _)| *k)
            .collect();
        for key in due {
            if let Some(d) = self.inflight.remove(&key) {
                self.deliver(d);
                // What the delivery made its receiver write goes before the next delivery is
                // handled, as a process handles one input at a time.
                if self.one_input_at_a_time {
                    self.drain();
                }
            }
        }
        let now = self.now;
        for slot in self.slots.iter_mut().filter(|s| !s.paused) {
            if slot.node.poll_timeout().is_some_and(|t| t <= now) {
                slot.node.handle_timeout(now);
            }
        }
        self.drain();
        true
    }

    /// Records that the frame of `d` was lost.
    fn lost(&mut self, d: &Delivery) {
        if let (Some(w), Some(_)) = (&mut self.wire, &d.frame) {
            w.push(Wire::Lost { seq: d.seq });
        }
    }

    /// Drops what is on its way on `link`, recording it lost.
    fn drop_inflight(&mut self, link: LinkId) {
        let keys: Vec<(Instant, u64)> = self
            .inflight
            .iter()
            .filter(|(_, d)| d.link == link)
            .map(|(k, _)| *k)
            .collect();
        for k in keys {
            if let Some(d) = self.inflight.remove(&k) {
                self.lost(&d);
            }
        }
    }

    fn end(&self, d: &Delivery) -> (NodeId, ConnId) {
        self.links.get(&d.link).map_or((0, 0), |l| l.ends[d.to])
    }

    fn deliver(&mut self, d: Delivery) {
        let Some(link) = self.links.get(&d.link) else {
            self.lost(&d);
            return;
        };
        let (node, conn) = link.ends[d.to];
        match d.frame {
            Some(frame) => {
                if let Some(w) = &mut self.wire {
                    w.push(Wire::Delivered {
                        seq: d.seq,
                        link: d.link,
                        to: node,
                        frame: frame.clone(),
                    });
                }
                self.slots[node].node.frame(self.now, conn, frame)
            }
            None => self.drop_link(d.link),
        }
    }

    /// Both ends see the link closed.
    fn drop_link(&mut self, link: LinkId) {
        let Some(l) = self.links.remove(&link) else {
            return;
        };
        if let Some(w) = &mut self.wire {
            w.push(Wire::Closed { link });
        }
        for (node, conn) in l.ends {
            self.by_end.remove(&(node, conn));
            self.slots[node].node.closed(self.now, conn);
        }
    }

    /// Routes what every running node wants done now, until none wants anything.
    fn drain(&mut self) {
        let outer = !self.draining;
        self.draining = true;
        self.drain_all();
        if outer {
            self.draining = false;
        }
    }

    fn drain_all(&mut self) {
        loop {
            let mut any = false;
            if !self.dials.is_empty()
                && (self.dials_dirty || self.dial_deadline().is_some_and(|d| d <= self.now))
            {
                any |= self.resolve_dials();
            }
            for id in 0..self.slots.len() {
                if self.slots[id].paused {
                    continue;
                }
                while let Some(step) = self.slots[id].node.poll(self.now) {
                    any = true;
                    self.route(id, step);
                    if self.slots[id].paused {
                        break;
                    }
                }
            }
            any |= self.processes();
            if !any {
                return;
            }
        }
    }

    fn route(&mut self, from: NodeId, step: Step) {
        match step {
            Step::Dial(addr) => self.dial(from, &addr),
            Step::Exit(code) => self.exited(from, code),
            Step::Conn(out) => self.carry(from, out),
            Step::Coarse(out) => self.carry(from, out),
        }
    }

    /// Carries `out` from `from`'s connection: a frame to the other end, or the connection's
    /// end (a close after what is on its way; an abort at once).
    fn carry<M: Carried>(&mut self, from: NodeId, out: ConnOutput<M>) {
        let Some(&(link, side)) = self.by_end.get(&(from, out.conn())) else {
            return;
        };
        let frame = match out {
            ConnOutput::Send { message, .. } => M::message(message),
            ConnOutput::Ask { id, message, .. } => M::ask(id, message),
            ConnOutput::Reply { id, reply, .. } => M::answer(id, Ok(reply)),
            ConnOutput::Fail { id, error, .. } => M::answer(id, Err(error)),
            ConnOutput::Close { .. } => {
                self.write(link, 1 - side, None);
                return;
            }
            ConnOutput::Abort { .. } => {
                self.close(link);
                return;
            }
        };
        self.write(link, 1 - side, Some(frame));
    }

    fn write(&mut self, link: LinkId, to: usize, frame: Option<Frame>) {
        let Some(l) = self.links.get(&link) else {
            return;
        };
        let (from, to_node) = (l.ends[1 - to].0, l.ends[to].0);
        self.seq += 1;
        let seq = self.seq;
        if let Some(f) = &frame {
            let name = f.name();
            self.log.push(Sent {
                at: self.now,
                from,
                to: to_node,
                name: name.clone(),
                asked: f.is_ask(),
            });
            // Written is written, whether the network then carries it or not; but an observer
            // on the far side of a partition never sees what the node cut off writes.
            let unseen = l.cut && l.isolated_end == Some(from);
            if let Some(w) = self.wire.as_mut().filter(|_| !unseen) {
                w.push(Wire::Written {
                    seq,
                    link,
                    from,
                    frame: f.clone(),
                });
            }
            let dropped = self.drops.iter_mut().find(|(n, c)| *n == name && *c > 0);
            if l.cut || dropped.is_some() {
                if let Some(rule) = dropped.filter(|_| !l.cut) {
                    rule.1 -= 1;
                }
                if let Some(w) = &mut self.wire {
                    w.push(Wire::Lost { seq });
                }
                return;
            }
        } else if l.cut {
            return;
        }
        let at = (self.now + l.delay).max(l.last);
        if let Some(l) = self.links.get_mut(&link) {
            l.last = at;
        }
        self.inflight.insert(
            (at, seq),
            Delivery {
                link,
                to,
                frame,
                seq,
            },
        );
    }

    /// Where a dial from `from` to `addr` stands now: the node listening there (a running one
    /// first, as a restarted process takes its address from a dead one's), and whether the dial
    /// can go through.
    fn reach(&self, from: NodeId, addr: &Addr) -> Reach {
        let mut target = None;
        for (i, s) in self.slots.iter().enumerate() {
            if s.dead || s.node.hello().addr.as_ref() != Some(addr) {
                continue;
            }
            if !s.paused {
                target = Some(i);
                break;
            }
            target = target.or(Some(i));
        }
        let cut = |n: NodeId| self.isolated.contains(&n);
        match target {
            // The SYNs are lost, whatever listens (or not) on the far side.
            _ if cut(from) => Reach::Wait,
            Some(t) if cut(t) || self.slots[t].paused => Reach::Wait,
            Some(t) => Reach::Now(t),
            None => Reach::Refused,
        }
    }

    /// The earliest deadline of a waiting dial whose dialler runs.
    fn dial_deadline(&self) -> Option<Instant> {
        self.dials
            .iter()
            .filter(|d| !self.slots[d.from].paused)
            .map(|d| d.deadline)
            .min()
    }

    fn dial(&mut self, from: NodeId, addr: &Addr) {
        // A dial behind another of the same dialler to the same address waits its turn, so that
        // they end in the order they began.
        let queued = self.dials.iter().any(|d| d.from == from && d.addr == *addr);
        if !queued {
            match self.reach(from, addr) {
                Reach::Now(to) => return self.open(from, to, addr),
                Reach::Refused => return self.refuse(from, addr, "connection refused"),
                Reach::Wait if self.dial_timeout.is_zero() => {
                    return self.refuse(from, addr, "connection refused")
                }
                Reach::Wait => {}
            }
        }
        self.dials.push_back(PendingDial {
            from,
            addr: addr.clone(),
            deadline: self.now + self.dial_timeout,
        });
    }

    /// Ends the waiting dials that can end now, oldest first: opened when their peer runs and
    /// nothing is in between, refused when nothing listens any more, failed at their deadline;
    /// a dead dialler's are forgotten. Whether any ended.
    fn resolve_dials(&mut self) -> bool {
        self.dials_dirty = false;
        let mut any = false;
        let mut i = 0;
        while i < self.dials.len() {
            let d = &self.dials[i];
            let (from, deadline) = (d.from, d.deadline);
            if self.slots[from].dead {
                self.dials.remove(i);
                continue;
            }
            if self.slots[from].paused {
                i += 1;
                continue;
            }
            let reach = self.reach(from, &self.dials[i].addr);
            if matches!(reach, Reach::Wait) && self.now < deadline {
                i += 1;
                continue;
            }
            let Some(d) = self.dials.remove(i) else { break };
            any = true;
            match reach {
                Reach::Now(to) => self.open(from, to, &d.addr),
                Reach::Refused => self.refuse(from, &d.addr, "connection refused"),
                Reach::Wait => self.refuse(from, &d.addr, "timed out"),
            }
        }
        any
    }

    fn refuse(&mut self, from: NodeId, addr: &Addr, why: &str) {
        self.slots[from].node.dial_failed(self.now, addr, why);
    }

    /// Opens the connection `from` dialled at `addr`, where `to` listens.
    fn open(&mut self, from: NodeId, to: NodeId, addr: &Addr) {
        let version = self.slots[from].version.min(self.slots[to].version);
        let (a, b) = (self.fresh_conn(from), self.fresh_conn(to));
        let link = self.next_link;
        self.next_link += 1;
        self.links.insert(
            link,
            Link {
                ends: [(from, a), (to, b)],
                cut: false,
                isolated_end: None,
                delay: self.delay,
                last: self.now,
            },
        );
        self.by_end.insert((from, a), (link, 0));
        self.by_end.insert((to, b), (link, 1));
        let (from_node, to_node) = (&self.slots[from].node, &self.slots[to].node);
        let hello_from = from_node.hello_with(&to_node.hello());
        let hello_to = to_node.hello_with(&hello_from);
        if let Some(w) = &mut self.wire {
            w.push(Wire::Open {
                link,
                client: (from, hello_from.clone()),
                server: (to, hello_to.clone()),
                version,
            });
        }
        self.slots[to]
            .node
            .accepted(self.now, b, &hello_from, version);
        self.slots[from]
            .node
            .dialled(self.now, a, addr, &hello_to, version);
    }

    fn fresh_conn(&mut self, node: NodeId) -> ConnId {
        let slot = &mut self.slots[node];
        let c = slot.next_conn;
        slot.next_conn += 1;
        c
    }
}

/// The address in a driver URL (`spark://CoarseGrainedScheduler@host:port`).
fn driver_addr(url: &str) -> Option<Addr> {
    let rest = url.strip_prefix("spark://")?;
    let hostport = rest.rsplit_once('@').map_or(rest, |(_, h)| h);
    let (host, port) = hostport.rsplit_once(':')?;
    Some(Addr::new(host.to_string(), port.parse().ok()?))
}

/// `host:port` of a hello, for a core's logs.
fn addr_text(h: &Hello) -> String {
    h.addr
        .as_ref()
        .map_or_else(|| "-".to_string(), |a| a.to_string())
}
