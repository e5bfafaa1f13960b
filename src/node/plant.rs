//! Bugs planted in the cores on purpose, each breaking one invariant of the simulator's oracle
//! ([`sim::search`](super::sim::search)), so that a test can prove the search finds it.
//!
//! A core's plant is [`Plant::None`] unless a test sets it, and only the `testing` feature has a
//! setter (`MasterCore::plant`, `WorkerCore::plant`, `ExecutorCore::plant`, `Cluster::plant`):
//! no configuration, command-line flag or message reaches it, as the conformance suite's faults
//! are reached only by its tests.

/// A bug planted in a core; see the [module docs](self).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Plant {
    /// No bug: the cores as they are.
    #[default]
    None,
    /// The master registers a worker while in STANDBY, as if it led, writing nothing to its
    /// recovery store (which would refuse it) (breaks `single-leader`).
    StandbyRegisters,
    /// The recovering master ignores a worker's WorkerSchedulerStateResponse, so that recovery
    /// drops a worker that answered (breaks `failover-keeps-answered`).
    ForgetsSchedulerState,
    /// The master's scheduling takes no account of a worker's free memory (breaks
    /// `within-capacity`).
    IgnoresMemory,
    /// The master keeps a finished application waiting for executors (breaks
    /// `no-executor-for-finished-app`).
    KeepsFinishedApp,
    /// The executor reports a task's final state twice (breaks `task-final-once`).
    ReportsTwice,
    /// The worker does not register again when its master's connection closes (breaks
    /// `liveness`).
    WorkerGivesUp,
    /// The worker sends a Heartbeat right behind its RegisterWorker, before the master
    /// registered it (breaks `protocol`: rule W1, `worker.register-first`).
    HeartbeatsUnregistered,
}

impl Plant {
    /// Every planted bug.
    pub const ALL: [Plant; 7] = [
        Plant::StandbyRegisters,
        Plant::ForgetsSchedulerState,
        Plant::IgnoresMemory,
        Plant::KeepsFinishedApp,
        Plant::ReportsTwice,
        Plant::WorkerGivesUp,
        Plant::HeartbeatsUnregistered,
    ];

    /// Its name (kebab case), as a regression file names it.
    pub fn name(self) -> &'static str {
        match self {
            Plant::None => "none",
            Plant::StandbyRegisters => "standby-registers",
            Plant::ForgetsSchedulerState => "forgets-scheduler-state",
            Plant::IgnoresMemory => "ignores-memory",
            Plant::KeepsFinishedApp => "keeps-finished-app",
            Plant::ReportsTwice => "reports-twice",
            Plant::WorkerGivesUp => "worker-gives-up",
            Plant::HeartbeatsUnregistered => "heartbeats-unregistered",
        }
    }

    /// The plant named `name`.
    pub fn from_name(name: &str) -> Option<Plant> {
        std::iter::once(Plant::None)
            .chain(Plant::ALL)
            .find(|p| p.name() == name)
    }
}
