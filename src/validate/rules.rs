//! The rules the validator checks, each with a stable id, a slug and its text.
//!
//! `protocol/rules.md` lists the same rules; a test keeps the two in step.

use std::fmt;

macro_rules! rules {
    ($($(#[$meta:meta])* $variant:ident = ($id:literal, $slug:literal, $text:literal)),+ $(,)?) => {
        /// A rule of the protocol's state machine. Ids and slugs are stable: tools may match on them.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
        #[non_exhaustive]
        pub enum Rule {
            $($(#[$meta])* $variant),+
        }

        impl Rule {
            /// Every rule, in catalogue order.
            pub const ALL: &'static [Rule] = &[$(Rule::$variant),+];

            /// The short id, such as `W1`.
            pub fn id(self) -> &'static str {
                match self {
                    $(Rule::$variant => $id),+
                }
            }

            /// The slug, such as `worker.register-first`.
            pub fn slug(self) -> &'static str {
                match self {
                    $(Rule::$variant => $slug),+
                }
            }

            /// What the rule requires, in one sentence.
            pub fn text(self) -> &'static str {
                match self {
                    $(Rule::$variant => $text),+
                }
            }
        }
    };
}

rules! {
    /// C1: a connection id is opened once.
    ConnOpenOnce = ("C1", "conn.open-once",
        "A connection id is opened once: no open event for an id that is open or was closed."),
    /// C2: messages and closes only on an open connection.
    ConnOpen = ("C2", "conn.open",
        "Messages, frames outside the catalogue and close events name a connection that is open."),
    /// C3: a message goes from one end of its connection to the other.
    ConnEndpoints = ("C3", "conn.endpoints",
        "A message (or a frame outside the catalogue) goes from one end of its connection to the other: its from and to endpoints are the connection's two endpoints."),
    /// C4: a connection joins a known pair of roles.
    ConnKind = ("C4", "conn.kind",
        "A connection joins a known pair of roles: worker-master, app-client-master, driver-client-master, ui-master, ui-worker, executor-driver, cluster-manager-driver, or executor-worker (an executor's watch of its worker, Spark's WorkerWatcher, which carries no catalogued message)."),
    /// C5: a message carries its connection's version and exists in it.
    ConnVersion = ("C5", "conn.version",
        "A message carries its connection's protocol version, and that version has the message."),
    /// M1: a message goes only along its route.
    RouteDefined = ("M1", "route.defined",
        "A message goes only along its route in the definition: from one of its from-roles to one of its to-roles."),
    /// M2: local messages never cross a connection.
    RouteNoLocal = ("M2", "route.no-local",
        "Local messages never cross a connection."),
    /// M3: a message travels as its kind says.
    RouteKind = ("M3", "route.kind",
        "A message travels as its kind says: a send as a send, an ask as an ask, a reply message only inside a reply."),
    /// A1: ask ids are unique among pending asks.
    AskUniqueId = ("A1", "ask.unique-id",
        "An ask id is not reused while an ask with that id from the same side is pending on the connection."),
    /// A2: a reply answers a pending ask, once.
    AskReplyPending = ("A2", "ask.reply-pending",
        "A reply or failure answers an ask of the other side that is pending on the same connection, and only once."),
    /// A3: a reply has the type of the ask's reply.
    AskReplyType = ("A3", "ask.reply-type",
        "A reply has the type the definition gives the ask's reply (bool, i32, bytes, a thread dump, a loss reason, or the named reply message)."),
    /// A4: every ask is answered.
    AskAnswered = ("A4", "ask.answered",
        "Every ask on a connection that is still open when the trace ends has had its reply or failure."),
    /// W1: a worker registers first.
    WorkerRegisterFirst = ("W1", "worker.register-first",
        "A worker sends nothing but RegisterWorker on a connection until the master registered it there (RegisteredWorker); the one exception is WorkerSchedulerStateResponse answering MasterChanged."),
    /// W2: a registered worker's messages carry its id.
    WorkerId = ("W2", "worker.id",
        "A worker's Heartbeat, WorkerLatestState, WorkerDecommissioning and WorkerSchedulerStateResponse carry the worker id it is registered under on that connection."),
    /// W3: each RegisterWorker gets one answer.
    WorkerRegisterAnswer = ("W3", "worker.register-answer",
        "The master answers each RegisterWorker with one RegisterWorkerResponse (RegisteredWorker, RegisterWorkerFailed or MasterInStandby) and sends none that was not asked for; at the end of the trace no RegisterWorker on an open connection is unanswered."),
    /// W4: duplicate worker ids are refused.
    WorkerDuplicateId = ("W4", "worker.duplicate-id",
        "A RegisterWorker for a worker id that is registered and not lost is answered with RegisterWorkerFailed or RegisteredWorker with duplicate = true; a new id is never answered with duplicate = true."),
    /// W5: executors and drivers go only to alive workers.
    WorkerLaunchAlive = ("W5", "worker.launch-alive",
        "The master sends LaunchExecutor and LaunchDriver only to a worker registered on that connection and ALIVE: not lost (DEAD) and not DECOMMISSIONED."),
    /// W6: worker commands only on a registered connection.
    WorkerCommandsRegistered = ("W6", "worker.commands-registered",
        "The master sends KillExecutor, KillDriver, ApplicationFinished and DecommissionWorker only on a connection where the worker is registered."),
    /// W7: a worker is reported removed only once lost.
    WorkerRemovedWhenLost = ("W7", "worker.removed-when-lost",
        "The master tells applications a worker is gone (WorkerRemoved, or ExecutorUpdated LOST with workerHost) only once it lost the worker (its connection closed, or no heartbeat for the worker timeout), naming the worker's host."),
    /// W8: the master never overcommits a worker.
    WorkerCapacity = ("W8", "worker.capacity",
        "LaunchExecutor and LaunchDriver never give a worker more cores or memory than it registered, minus what its live executors and drivers hold."),
    /// F1: failover answers answer a MasterChanged.
    FailoverAnswer = ("F1", "failover.answer",
        "WorkerSchedulerStateResponse and MasterChangeAcknowledged only answer a MasterChanged sent on that connection, once each."),
    /// P1: an application client registers first.
    AppRegisterFirst = ("P1", "app.register-first",
        "An application client sends nothing but RegisterApplication on a connection until RegisteredApplication there; the one exception is MasterChangeAcknowledged answering MasterChanged."),
    /// P2: an application client's messages carry its app id.
    AppId = ("P2", "app.id",
        "An application client's UnregisterApplication, MasterChangeAcknowledged, RequestExecutors and KillExecutors carry the app id registered on its connection."),
    /// P3: RegisteredApplication answers a RegisterApplication with a new id.
    AppRegisterAnswer = ("P3", "app.register-answer",
        "RegisteredApplication answers a pending RegisterApplication on the same connection, with an app id not used before."),
    /// P4: executors only for active applications.
    AppLaunchActive = ("P4", "app.launch-active",
        "LaunchExecutor is only for an application that is registered and has not finished. Checked where the trace holds application clients (a worker's own trace sees launches for applications registered out of its view)."),
    /// P5: nothing about a finished application.
    AppAfterFinish = ("P5", "app.after-finish",
        "Once an application finished (UnregisterApplication, ApplicationRemoved, its client's connection closed) its client sends nothing more and the master sends it no ExecutorAdded, ExecutorUpdated or second ApplicationRemoved. A master that recovered an application from its store and sent its client MasterChanged may send that connection WorkerRemoved before the client acknowledged (a worker silent in the recovery is removed before the silent applications are finished)."),
    /// P6: ApplicationFinished only for finished applications.
    AppFinishedNotice = ("P6", "app.finished-notice",
        "The master sends workers ApplicationFinished only for an application that has finished."),
    /// E1: executor ids are not reused.
    ExecutorLaunchUnique = ("E1", "executor.launch-unique",
        "LaunchExecutor names an executor id not launched before for that application; after a failover (its MasterChangeAcknowledged), ids of its executors that ended or were lost before it may be launched again."),
    /// E2: executor state changes come from the executor's worker.
    ExecutorStateFromHost = ("E2", "executor.state-from-host",
        "ExecutorStateChanged is only sent for an executor the master launched on the worker that sends it; a worker may repeat the final state of an executor that already finished (Spark's worker does so when it shuts down)."),
    /// E3: executor states move forward.
    ExecutorTransition = ("E3", "executor.transition",
        "Executor states only move forward, LAUNCHING then RUNNING then DECOMMISSIONED then a finished state (KILLED, FAILED, LOST, EXITED), steps may be skipped, and nothing follows a finished state. Once its master declared an executor LOST with its worker, that worker's reports on it are not judged: the master ignores them (a worker paused past the worker timeout reports what it ran when it runs again)."),
    /// E4: ExecutorAdded matches a launch.
    ExecutorAddedMatches = ("E4", "executor.added-matches",
        "ExecutorAdded tells an application, once, of an executor launched for it, with the worker, cores and memory of its LaunchExecutor; it may be seen up to the crossing window before that LaunchExecutor (the two leave the master on different connections), except in strict order."),
    /// E5: ExecutorUpdated reports what happened.
    ExecutorUpdatedMatches = ("E5", "executor.updated-matches",
        "ExecutorUpdated tells an application about one of its executors: the next state its worker reported, LOST with workerHost after the worker was lost, or DECOMMISSIONED with workerHost when the worker is decommissioned."),
    /// D1: submission answers.
    DriverSubmitAnswer = ("D1", "driver.submit-answer",
        "A successful SubmitDriverResponse carries a driver id not used before; an unsuccessful one carries none."),
    /// D2: drivers are launched only when waiting.
    DriverLaunch = ("D2", "driver.launch",
        "LaunchDriver is only for a submitted driver that is waiting or relaunching: not running and not finished."),
    /// D3: driver state changes and kills go with the driver's worker.
    DriverOnHost = ("D3", "driver.on-host",
        "DriverStateChanged comes from, and KillDriver goes to, the worker running that driver; the one exception (Spark's SPARK-13604) is a KillDriver to a worker whose last WorkerLatestState listed a driver the master does not have on that worker."),
    /// D4: DriverStateChanged carries a final state.
    DriverFinalState = ("D4", "driver.final-state",
        "DriverStateChanged carries a final state: ERROR, FINISHED, KILLED or FAILED."),
    /// D5: nothing about a finished driver.
    DriverAfterFinish = ("D5", "driver.after-finish",
        "Nothing launches, kills or changes a driver after it reached a final state (a KillDriver under D3's SPARK-13604 exception aside)."),
    /// D6: driver replies are about the driver asked about.
    DriverReplyMatches = ("D6", "driver.reply-matches",
        "KillDriverResponse names the driver RequestKillDriver asked about, and a DriverStatusResponse about a driver known to be active finds it in its current state."),
    /// X1: an executor registers first.
    ExecutorRegisterFirst = ("X1", "executor.register-first",
        "An executor sends nothing but RetrieveSparkAppConfig, RegisterExecutor, IsExecutorAlive and RetrieveLastAllocatedExecutorId on a connection until the driver accepted its RegisterExecutor there."),
    /// X2: a registered executor's messages carry its id.
    ExecutorId = ("X2", "executor.id",
        "A registered executor's LaunchedExecutor, StatusUpdate and ExecutorDecommissioning carry the executor id it registered with on that connection."),
    /// X3: duplicate executor ids are refused.
    ExecutorDuplicateId = ("X3", "executor.duplicate-id",
        "The driver answers a RegisterExecutor whose executor id is already registered with a failure, never with true."),
    /// X4: driver commands only to registered executors.
    ExecutorDriverTargets = ("X4", "executor.driver-targets",
        "The driver sends LaunchTask, KillTask, StopExecutor, DecommissionExecutor, UpdateDelegationTokens, UpdateExecutorLogLevel and TaskThreadDump only to an executor registered on that connection, and LaunchTask only after its LaunchedExecutor."),
    /// X5: no tasks for a stopping executor.
    ExecutorNoTasksAfterStop = ("X5", "executor.no-tasks-after-stop",
        "The driver sends no LaunchTask to an executor after StopExecutor, after DecommissionExecutor, or after the executor's ExecutorDecommissioning."),
    /// T1: tasks fit the executor's cores.
    TaskSlots = ("T1", "task.slots",
        "The driver never has more tasks running on an executor than its cores allow: the cpus of its running tasks (the task's own, else the executor's StatusUpdate taskCpus, else the configured default) stay within the cores it registered."),
    /// T2: status updates only for launched tasks.
    TaskKnown = ("T2", "task.known",
        "StatusUpdate is only for a task launched on that executor and still running: by task id when a task decoder is configured, by count of running tasks otherwise."),
    /// T3: task states move forward.
    TaskTransition = ("T3", "task.transition",
        "Task states only move forward: launched, then RUNNING, then FINISHED, FAILED, KILLED or LOST; nothing follows a finished state."),
    /// T4: task ids are unique.
    TaskIdUnique = ("T4", "task.id-unique",
        "LaunchTask never reuses a task id of the application (checked when a task decoder is configured)."),
    /// T5: task descriptions decode.
    TaskDecodable = ("T5", "task.decodable",
        "When a task decoder is configured, it reads a task id out of every LaunchTask's data."),
    /// T6: status updates report the task's cpus.
    TaskCpus = ("T6", "task.cpus",
        "A version 2 StatusUpdate's taskCpus is the number of cpus the task was launched with (checked when a task decoder is configured)."),
    /// K1: the driver asks a cluster manager only after it registered.
    ClusterManagerRegisterFirst = ("K1", "cluster-manager.register-first",
        "The driver asks a cluster manager (RequestExecutors, KillExecutors, GetExecutorLossReason) only on a connection where the cluster manager sent RegisterClusterManager."),
    /// O1: event times never decrease (strict order).
    TraceTimeOrder = ("O1", "trace.time-order",
        "In strict order, event times never decrease."),
    /// L1: a launched executor is reported by its worker in time.
    TimedExecutorState = ("L1", "timed.executor-state",
        "The worker answers each LaunchExecutor with an ExecutorStateChanged for that executor within executor_state_within_ms (60 s by default) of it, unless its connection closes first."),
    /// L2: a registering application is answered in time.
    TimedAppRegistered = ("L2", "timed.app-registered",
        "The master answers each RegisterApplication with RegisteredApplication on that connection within app_registration_within_ms (60 s by default) of it, unless the connection closes first or the master said it is in standby (MasterInStandby)."),
    /// J1: the driver's executor ids are the master's.
    LinkExecutorIds = ("J1", "link.executor-ids",
        "When the trace holds both sides of an application (its application client and its driver have the same endpoint id) and the worker connections the master launches over, every executor that registers with the driver has the decimal text of an executor id the master launched for that application."),
    /// N1: by the end, every ExecutorAdded has its LaunchExecutor.
    EndExecutorAddedLaunched = ("N1", "end.executor-added-launched",
        "When the trace holds a master's worker connections, every ExecutorAdded that master sent has its LaunchExecutor in the trace by the end: an application is never told of an executor that was not launched, however far rule E4 relaxes the order of the two connections."),
    /// N2: by the end, every task has ended or its executor is gone.
    EndTaskEnded = ("N2", "end.task-ended",
        "Every task launched on an executor has its final StatusUpdate (FINISHED, FAILED, KILLED or LOST) by the end of the trace, unless the executor was lost first: its connection closed or the driver sent it StopExecutor. A LaunchTask whose data the task decoder cannot read (rule T5) owes nothing."),
    /// N3: by the end, every RegisterApplication is answered.
    EndAppRegistered = ("N3", "end.app-registered",
        "Every RegisterApplication on a connection still open at the end of the trace has been answered with RegisteredApplication, unless the master said it is in standby (MasterInStandby), another master registered that application client (a standby master ignores RegisterApplication), or an application was already registered on that connection (a second registration is ignored)."),
    /// N4: by the end, every LaunchExecutor is answered.
    EndExecutorState = ("N4", "end.executor-state",
        "Every LaunchExecutor on a worker connection still open at the end of the trace has been answered with an ExecutorStateChanged for that executor."),
}

impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.id(), self.slug())
    }
}

impl Rule {
    /// The rule with this id or slug, if any.
    pub fn find(key: &str) -> Option<Rule> {
        Rule::ALL
            .iter()
            .copied()
            .find(|r| r.id() == key || r.slug() == key)
    }
}
