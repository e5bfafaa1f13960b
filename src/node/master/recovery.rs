//! Recovery (Spark's FILESYSTEM recovery mode), the core's side: what is persisted as it changes (as
//! [`Effect::Persist`] records), and the path of a master elected on a
//! directory that holds state: RECOVERING (MasterChanged to every known worker and application,
//! at the addresses they advertised), then COMPLETING_RECOVERY once all answered or the worker
//! timeout passed (the silent ones dropped), then ALIVE.

use std::time::Instant;

use super::io::{DialTarget, Effect, Record, RecordKind, Stored, StoredWorker};
use super::state::WorkerRec;
use super::MasterCore;
use super::Output;
use crate::messages::deploy::{
    ApplicationRemoved, MasterChanged, RegisterWorkerFailed, WorkerSchedulerStateResponse,
};
use crate::messages::{
    ApplicationState, DeployMessage, DriverState, ErrorDescription, RecoveryState, WorkerState,
};
use crate::node::{ConnId, ConnOutput};
use crate::wire::Reply;

/// Where the master is in its leadership: one state, the recovery's deadline only while it
/// recovers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Leadership {
    /// Not elected.
    Standby,
    /// Elected on stored records, waiting for the recovered peers to answer until `deadline`
    /// (none while the master is still telling them).
    Recovering { deadline: Option<Instant> },
    /// Dropping the peers that did not answer.
    CompletingRecovery,
    /// The active master.
    Alive,
}

/// Leadership and recovery: the master's recovery state, the end of a recovery's wait, and
/// whether it persists what it learns.
#[derive(Debug)]
pub(crate) struct Ha {
    leadership: Leadership,
    /// A recovery store is configured: records are persisted as they change.
    persistent: bool,
}

impl Ha {
    pub(crate) fn new(persistent: bool) -> Ha {
        Ha {
            leadership: Leadership::Standby,
            persistent,
        }
    }

    /// Spark's RecoveryState of the leadership.
    pub(crate) fn state(&self) -> RecoveryState {
        match self.leadership {
            Leadership::Standby => RecoveryState::Standby,
            Leadership::Recovering { .. } => RecoveryState::Recovering,
            Leadership::CompletingRecovery => RecoveryState::CompletingRecovery,
            Leadership::Alive => RecoveryState::Alive,
        }
    }

    /// Records are persisted.
    pub(crate) fn persistent(&self) -> bool {
        self.persistent
    }

    /// When the recovery stops waiting, if it waits.
    pub(crate) fn deadline(&self) -> Option<Instant> {
        match self.leadership {
            Leadership::Recovering { deadline } => deadline,
            _ => None,
        }
    }

    /// Elected with nothing to recover.
    pub(crate) fn alive(&mut self) {
        self.leadership = Leadership::Alive;
    }

    /// Elected on stored records: recovering, not waiting yet.
    pub(crate) fn recovering(&mut self) {
        self.leadership = Leadership::Recovering { deadline: None };
    }

    /// The recovery waits for its peers until `deadline`.
    pub(crate) fn wait_until(&mut self, deadline: Option<Instant>) {
        if let Leadership::Recovering { .. } = self.leadership {
            self.leadership = Leadership::Recovering { deadline };
        }
    }

    /// The recovery stops waiting and drops the silent peers.
    pub(crate) fn completing(&mut self) {
        self.leadership = Leadership::CompletingRecovery;
    }
}

impl MasterCore {
    /// Queues the write of `record`, when the master persists.
    fn persist(&mut self, record: Record) {
        // The planted bug acts as leader in STANDBY, and does not write what it would be fenced
        // from writing.
        let planted_standby = self.planted(crate::node::plant::Plant::StandbyRegisters)
            && self.ha.state() == RecoveryState::Standby;
        if self.ha.persistent() && !planted_standby {
            self.out.push(Output::Effect(Effect::Persist(record)));
        }
    }

    /// Queues the removal of a record, when the master persists.
    fn unpersist(&mut self, kind: RecordKind, id: &str) {
        if self.ha.persistent() {
            self.out.push(Output::Effect(Effect::Unpersist {
                kind,
                id: id.to_string(),
            }));
        }
    }

    pub(crate) fn persist_app(&mut self, id: &str) {
        if let Some(stored) = self.apps.stored(id) {
            self.persist(Record::App(stored));
        }
    }

    pub(crate) fn unpersist_app(&mut self, id: &str) {
        self.unpersist(RecordKind::App, id);
    }

    pub(crate) fn persist_worker(&mut self, id: &str) {
        if let Some(w) = self.workers.get(id) {
            let stored = StoredWorker {
                id: w.id.clone(),
                host: w.host.clone(),
                port: w.port,
                endpoint: w.endpoint.clone(),
                cores: w.cores,
                memory: w.memory,
                web_ui: w.web_ui.clone(),
                resources: w.resources.clone(),
                // Added by whoever runs the Spark-wire front (see `StoredApp::spark`).
                spark: None,
            };
            self.persist(Record::Worker(stored));
        }
    }

    pub(crate) fn unpersist_worker(&mut self, id: &str) {
        self.unpersist(RecordKind::Worker, id);
    }

    pub(crate) fn persist_driver(&mut self, id: &str) {
        if let Some(stored) = self.drivers.stored(id) {
            self.persist(Record::Driver(stored));
        }
    }

    pub(crate) fn unpersist_driver(&mut self, id: &str) {
        self.unpersist(RecordKind::Driver, id);
    }

    /// A record's write failed ([`Input::PersistFailed`](super::Input::PersistFailed)): the
    /// registration it was for fails.
    pub(crate) fn persist_failed(&mut self, kind: RecordKind, id: &str, reason: &str) {
        let message = format!("cannot persist {} {id}: {reason}", kind.as_str());
        tracing::error!("{message}; the registration fails");
        match kind {
            RecordKind::Worker => {
                let Some(conn) = self.workers.conn_of(id) else {
                    return;
                };
                // Nothing queued for the worker goes out: it never was registered.
                self.out.retain(
                    |o| !matches!(o, Output::Conn(ConnOutput::Send { conn: c, .. }) if *c == conn),
                );
                self.send_on(Some(conn), RegisterWorkerFailed { message });
                self.remove_worker(id, "its registration could not be persisted");
            }
            RecordKind::App => {
                let Some(conn) = self.apps.get(id).and_then(|a| a.conn) else {
                    return;
                };
                self.out.retain(
                    |o| !matches!(o, Output::Conn(ConnOutput::Send { conn: c, .. }) if *c == conn),
                );
                self.send_on(Some(conn), ApplicationRemoved { message });
                self.apps.unbind(conn);
                self.remove_application(id, ApplicationState::Failed);
            }
            RecordKind::Driver => {
                let mut submission = false;
                self.out.retain(|o| match o {
                    Output::Conn(ConnOutput::Reply {
                        reply: Reply::Message(DeployMessage::SubmitDriverResponse(r)),
                        ..
                    }) if r.driver_id.as_deref() == Some(id) => {
                        r.success = false;
                        r.driver_id = None;
                        r.message = message.clone();
                        submission = true;
                        true
                    }
                    Output::Conn(ConnOutput::Send {
                        message: DeployMessage::LaunchDriver(l),
                        ..
                    }) => l.driver_id != id,
                    _ => true,
                });
                if submission {
                    let error = ErrorDescription::new("java.io.IOException", message);
                    self.remove_driver(id, DriverState::Error, Some(error));
                }
            }
        }
    }

    /// Spark's beginRecovery: every stored application and worker UNKNOWN and told MasterChanged.
    pub(crate) fn begin_recovery(&mut self, stored: Stored) {
        for a in stored.apps {
            tracing::info!("Trying to recover app: {}", a.id);
            let driver = a.driver.address.clone();
            let id = a.id.clone();
            self.apps.recover(a);
            match driver {
                Some(addr) => self.out.push(Output::Effect(Effect::Dial {
                    addr,
                    target: DialTarget::App(id),
                })),
                None => tracing::info!("App {id} had exception on reconnect: no address"),
            }
        }
        for d in stored.drivers {
            self.drivers.recover(d);
        }
        for w in stored.workers {
            tracing::info!("Trying to recover worker: {}", w.id);
            let rec = WorkerRec {
                id: w.id.clone(),
                host: w.host,
                port: w.port,
                endpoint: w.endpoint.clone(),
                cores: w.cores,
                memory: w.memory,
                web_ui: w.web_ui,
                resources: w.resources,
                state: WorkerState::Unknown,
                last_heartbeat: self.clock.now,
                last_heartbeat_ms: self.clock.wall_ms,
                conn: None,
                executors: Default::default(),
                drivers: Default::default(),
                cores_used: 0,
                memory_used: 0,
                // As stored (SPEC §15.5): placed by its release before it registers again.
                spark_release: w.spark.and_then(|s| s.release),
            };
            if self.add_worker(rec) {
                match w.endpoint.address {
                    Some(addr) => self.out.push(Output::Effect(Effect::Dial {
                        addr,
                        target: DialTarget::Worker(w.id),
                    })),
                    None => {
                        tracing::info!("Worker {} had exception on reconnect: no address", w.id)
                    }
                }
            }
        }
        if self.can_complete_recovery() {
            self.complete_recovery();
        } else {
            let wait = self
                .config
                .recovery_timeout
                .unwrap_or(self.config.worker_timeout);
            let deadline = self.clock.now.checked_add(wait);
            self.ha.wait_until(deadline);
        }
    }

    /// The master reached a recovered worker: MasterChanged over the new connection.
    pub(crate) fn dialled_worker(&mut self, conn: ConnId, id: &str) {
        let Some(w) = self.workers.get(id) else {
            self.close_conn(conn);
            return;
        };
        // While recovering, MasterChanged goes even to a worker that registered again meanwhile:
        // its answer tells the master what it runs.
        let wanted = w.state == WorkerState::Unknown
            || (self.ha.state() == RecoveryState::Recovering && w.state == WorkerState::Alive);
        if !wanted {
            self.close_conn(conn);
            return;
        }
        self.workers.bind(id, conn);
        self.send_on(
            Some(conn),
            MasterChanged {
                master: self.self_ref.clone(),
                master_web_ui_url: self.web_ui_url.clone(),
            },
        );
    }

    /// The master reached a recovered application's client: MasterChanged over it.
    pub(crate) fn dialled_app(&mut self, conn: ConnId, id: &str) {
        let Some(a) = self.apps.get(id) else {
            self.close_conn(conn);
            return;
        };
        if a.state != ApplicationState::Unknown {
            self.close_conn(conn);
            return;
        }
        self.apps.bind(id, conn);
        self.send_on(
            Some(conn),
            MasterChanged {
                master: self.self_ref.clone(),
                master_web_ui_url: self.web_ui_url.clone(),
            },
        );
    }

    fn close_conn(&mut self, conn: ConnId) {
        if self.conns.is_open(conn) {
            self.out
                .push(Output::Conn(ConnOutput::Close { conn, reason: None }));
        }
    }

    /// WorkerSchedulerStateResponse: a recovered worker answered with what it runs.
    pub(crate) fn worker_scheduler_state(&mut self, conn: ConnId, s: WorkerSchedulerStateResponse) {
        if self.planted(crate::node::plant::Plant::ForgetsSchedulerState) {
            return;
        }
        if let Some(bound) = self.workers.on(conn).filter(|b| *b != s.id) {
            // A connection carries one worker (SPEC §14.2 Z2).
            tracing::warn!(
                "Scheduler state of worker {} over the connection of worker {bound}; ignored",
                s.id
            );
            return;
        }
        if !self
            .workers
            .heard(&s.id, self.clock.now, self.clock.wall_ms, true)
        {
            tracing::warn!("Scheduler state from unknown worker: {}", s.id);
            return;
        }
        tracing::info!("Worker has been re-registered: {}", s.id);
        self.workers.bind(&s.id, conn);
        for e in s.exec_responses {
            let d = e.desc;
            if self.apps.recover_executor(&s.id, &d, e.resources) {
                let key = (d.app_id.clone(), d.exec_id);
                self.workers.take_executor(&s.id, key, d.cores, d.memory_mb);
            }
        }
        for d in s.driver_responses {
            if let Some((cores, mem)) = self.drivers.claim(&d.driver_id, &s.id) {
                self.workers
                    .take_driver_claimed(&s.id, &d.driver_id, cores, mem);
            }
        }
        if self.ha.state() == RecoveryState::Recovering && self.can_complete_recovery() {
            self.complete_recovery();
        }
    }

    /// Whether every recovered worker and application answered.
    pub(crate) fn can_complete_recovery(&self) -> bool {
        !self.workers.any_unknown() && !self.apps.any_unknown()
    }

    /// Spark's completeRecovery: drops the silent, relaunches or ends unclaimed drivers, ALIVE.
    pub(crate) fn complete_recovery(&mut self) {
        if self.ha.state() != RecoveryState::Recovering {
            return;
        }
        self.ha.completing();
        for id in self.workers.unknown() {
            self.remove_worker(&id, "Not responding for recovery");
        }
        for id in self.apps.unknown() {
            self.finish_application(&id);
        }
        self.apps.resume();
        for id in self.drivers.unclaimed() {
            tracing::warn!("Driver {id} was not found after master recovery");
            if self.drivers.supervised(&id) {
                tracing::warn!("Re-launching {id}");
                self.relaunch_driver(&id);
            } else {
                self.remove_driver(&id, DriverState::Error, None);
                tracing::warn!("Did not re-launch {id} because it was not supervised");
            }
        }
        self.ha.alive();
        self.schedule();
        tracing::info!("Recovery complete - resuming operations!");
    }
}
