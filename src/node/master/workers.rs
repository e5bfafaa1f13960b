//! Workers: registration, heartbeats and timeouts, the state a worker reports, loss and
//! decommissioning.

use std::collections::{BTreeSet, HashMap};
use std::time::Duration;

use super::state::WorkerRec;
use super::MasterCore;
use crate::messages::deploy::{
    DecommissionWorker, ExecutorUpdated, KillDriver, KillExecutor, MasterInStandby,
    ReconnectWorker, RegisterWorker, RegisterWorkerFailed, RegisteredWorker, WorkerLatestState,
    WorkerRemoved,
};
use crate::messages::{DriverState, ExecutorState, RecoveryState, WorkerState};
use crate::validate::ConnId;

/// Spark's `spark.dead.worker.persistence`: timeouts a DEAD worker stays listed.
const REAPER_ITERATIONS: u32 = 15;

/// The workers the master knows (Spark's `workers`, `idToWorker`, `addressToWorker`).
#[derive(Debug, Default)]
pub(crate) struct Workers {
    /// By id, DEAD ones included until they are reaped.
    pub(crate) all: HashMap<String, WorkerRec>,
    /// Worker endpoint address → id, for workers not DEAD.
    pub(crate) by_address: HashMap<String, String>,
    /// The connection each registered worker talks over → its id.
    pub(crate) by_conn: HashMap<ConnId, String>,
}

impl Workers {
    /// Ids of the workers that may be given executors and drivers (ALIVE, with a connection),
    /// sorted.
    pub(crate) fn schedulable(&self) -> Vec<String> {
        let mut ids: Vec<String> = self
            .all
            .values()
            .filter(|w| w.state == WorkerState::Alive && w.conn.is_some())
            .map(|w| w.id.clone())
            .collect();
        ids.sort();
        ids
    }

    /// Worker `id` is known and bound to a connection other than `conn`.
    pub(crate) fn bound_elsewhere(&self, id: &str, conn: ConnId) -> bool {
        self.all
            .get(id)
            .and_then(|w| w.conn)
            .is_some_and(|c| c != conn)
    }

    /// The worker bound to `conn`, if one is.
    pub(crate) fn on(&self, conn: ConnId) -> Option<&str> {
        self.by_conn.get(&conn).map(String::as_str)
    }
}

impl MasterCore {
    /// RegisterWorker (Spark 4.0's handleRegisterWorker).
    pub(crate) fn register_worker(&mut self, conn: ConnId, r: RegisterWorker) {
        tracing::info!(
            "Registering worker {}:{} with {} cores, {} MiB RAM",
            r.host,
            r.port,
            r.cores,
            r.memory
        );
        if self.ha.state() == RecoveryState::Standby {
            self.send_on(Some(conn), MasterInStandby {});
            return;
        }
        if let Some(bound) = self.workers.on(conn).filter(|b| *b != r.id) {
            // A connection carries one worker (SPEC §14.2 Z2): the registration is answered, and
            // changes nothing.
            let message = format!(
                "This connection is bound to worker {bound}; worker {} registers over its own",
                r.id
            );
            tracing::warn!("Worker registration failed: {message}");
            self.send_on(Some(conn), RegisterWorkerFailed { message });
            return;
        }
        let registered = RegisteredWorker {
            master: self.self_ref.clone(),
            master_web_ui_url: self.web_ui_url.clone(),
            master_address: r.master_address.clone(),
            duplicate: true,
        };
        if let Some(w) = self.workers.all.get_mut(&r.id) {
            if w.state != WorkerState::Dead {
                if w.state == WorkerState::Unknown {
                    tracing::info!("Worker has been re-registered: {}", r.id);
                    w.state = WorkerState::Alive;
                    w.last_heartbeat = self.clock.now;
                    w.last_heartbeat_ms = self.clock.wall_ms;
                }
                if w.conn.is_none() {
                    w.conn = Some(conn);
                    self.workers.by_conn.insert(conn, r.id.clone());
                }
                self.registered_on(conn);
                self.send_on(Some(conn), registered);
                if self.ha.state() == RecoveryState::Recovering && self.can_complete_recovery() {
                    self.complete_recovery();
                }
                return;
            }
        }
        let worker = WorkerRec {
            id: r.id.clone(),
            host: r.host.clone(),
            port: r.port,
            endpoint: r.worker.clone(),
            cores: r.cores.max(0),
            memory: r.memory.max(0),
            web_ui: r.worker_web_ui_url.clone(),
            resources: r.resources.clone(),
            state: WorkerState::Alive,
            last_heartbeat: self.clock.now,
            last_heartbeat_ms: self.clock.wall_ms,
            conn: Some(conn),
            executors: Default::default(),
            drivers: BTreeSet::new(),
            cores_used: 0,
            memory_used: 0,
        };
        if !self.add_worker(worker) {
            let address = r
                .worker
                .address
                .as_ref()
                .map_or_else(|| format!("{}:{}", r.host, r.port), ToString::to_string);
            tracing::warn!(
                "Worker registration failed. Attempted to re-register worker at same address: {address}"
            );
            self.send_on(
                Some(conn),
                RegisterWorkerFailed {
                    message: format!("Attempted to re-register worker at same address: {address}"),
                },
            );
            return;
        }
        self.persist_worker(&r.id);
        self.registered_on(conn);
        self.send_on(
            Some(conn),
            RegisteredWorker {
                duplicate: false,
                ..registered
            },
        );
        self.schedule();
    }

    /// Spark's registerWorker: drops DEAD workers at the same host and port, refuses a second
    /// worker at an address taken (unless the one there is UNKNOWN, left from a recovery).
    pub(crate) fn add_worker(&mut self, worker: WorkerRec) -> bool {
        let dead: Vec<String> = self
            .workers
            .all
            .values()
            .filter(|w| {
                w.host == worker.host && w.port == worker.port && w.state == WorkerState::Dead
            })
            .map(|w| w.id.clone())
            .collect();
        for id in dead {
            self.workers.all.remove(&id);
        }
        let address = worker.address_key();
        if let Some(old) = self.workers.by_address.get(&address).cloned() {
            let unknown = self
                .workers
                .all
                .get(&old)
                .is_some_and(|w| w.state == WorkerState::Unknown);
            if unknown {
                self.remove_worker(&old, "Worker replaced by a new worker with same address");
            } else {
                return false;
            }
        }
        if let Some(conn) = worker.conn {
            self.workers.by_conn.insert(conn, worker.id.clone());
        }
        self.workers.by_address.insert(address, worker.id.clone());
        self.workers.all.insert(worker.id.clone(), worker);
        true
    }

    /// Heartbeat (Spark's `case Heartbeat`): keeps a registered worker alive; a worker the
    /// master declared DEAD (registered before, now bound to no connection) is asked to register
    /// again, over the connection the heartbeat came on; a worker the master never registered (or
    /// already forgot) is ignored: nothing is sent and the connection stays open. A heartbeat
    /// naming a worker bound to another connection never gets here (refused, SPEC §14.2 Z2).
    pub(crate) fn heartbeat(&mut self, conn: ConnId, worker_id: &str) {
        match self.workers.all.get_mut(worker_id) {
            Some(w) if w.state != WorkerState::Dead => {
                w.last_heartbeat = self.clock.now;
                w.last_heartbeat_ms = self.clock.wall_ms;
            }
            Some(_) => {
                tracing::warn!(
                    "Got heartbeat from unregistered worker {worker_id}. Asking it to re-register."
                );
                self.send_on(
                    Some(conn),
                    ReconnectWorker {
                        master_url: self.master_url.clone(),
                    },
                );
            }
            None => tracing::warn!(
                "Got heartbeat from unregistered worker {worker_id}. This worker was never registered, so ignoring the heartbeat."
            ),
        }
    }

    /// WorkerLatestState (Spark's `case WorkerLatestState`, SPARK-13604): KillExecutor for each
    /// executor and KillDriver for each driver the worker runs that the master does not know for
    /// it, over the worker's connection. A worker unknown, DEAD, or not registered over `conn` is
    /// only logged. While the master recovers it does not yet know every executor (their workers
    /// have not all answered MasterChanged), so it kills nothing then.
    pub(crate) fn worker_latest_state(&mut self, conn: ConnId, s: WorkerLatestState) {
        let Some(w) = self
            .workers
            .all
            .get(&s.id)
            .filter(|w| w.state != WorkerState::Dead && w.conn == Some(conn))
        else {
            tracing::warn!("Worker state from unknown worker: {}", s.id);
            return;
        };
        if self.ha.state() != RecoveryState::Alive {
            return;
        }
        let mut kills = Vec::new();
        for e in &s.executors {
            if !w.executors.contains_key(&(e.app_id.clone(), e.exec_id)) {
                kills.push(KillExecutor {
                    master_url: self.master_url.clone(),
                    app_id: e.app_id.clone(),
                    exec_id: e.exec_id,
                });
            }
        }
        let driver_kills: Vec<String> = s
            .driver_ids
            .iter()
            .filter(|d| !w.drivers.contains(*d))
            .cloned()
            .collect();
        for k in kills {
            tracing::info!(
                "Worker {} runs executor {}/{}, which the master does not know; killing it",
                s.id,
                k.app_id,
                k.exec_id
            );
            self.send_on(Some(conn), k);
        }
        for driver_id in driver_kills {
            tracing::info!(
                "Worker {} runs driver {driver_id}, which the master does not know; killing it",
                s.id
            );
            self.send_on(Some(conn), KillDriver { driver_id });
        }
    }

    /// Removes every worker silent for the worker timeout; forgets long-dead ones.
    pub(crate) fn time_out_dead_workers(&mut self) {
        let timeout = self.config.worker_timeout;
        let secs = timeout.as_secs();
        let now = self.clock.now;
        let mut to_remove = Vec::new();
        let mut to_forget = Vec::new();
        for w in self.workers.all.values() {
            let silent = now.saturating_duration_since(w.last_heartbeat);
            if silent > timeout {
                if w.state != WorkerState::Dead {
                    to_remove.push(w.id.clone());
                } else if silent
                    > timeout
                        .checked_mul(REAPER_ITERATIONS + 1)
                        .unwrap_or(Duration::MAX)
                {
                    to_forget.push(w.id.clone());
                }
            }
        }
        for id in to_remove {
            tracing::warn!("Removing {id} because we got no heartbeat in {secs} seconds");
            self.remove_worker(&id, &format!("Not receiving heartbeat for {secs} seconds"));
        }
        for id in to_forget {
            self.workers.all.remove(&id);
        }
    }

    /// Spark's removeWorker: DEAD; its executors LOST (each application told, with the host),
    /// its drivers relaunched (supervised) or ended in ERROR, every application told
    /// WorkerRemoved, then the freed demand rescheduled.
    pub(crate) fn remove_worker(&mut self, id: &str, msg: &str) {
        let Some(w) = self.workers.all.get_mut(id) else {
            return;
        };
        tracing::info!("Removing worker {} on {}:{}", w.id, w.host, w.port);
        w.state = WorkerState::Dead;
        let host = w.host.clone();
        let address = w.address_key();
        if let Some(conn) = w.conn.take() {
            self.workers.by_conn.remove(&conn);
        }
        let executors = std::mem::take(&mut w.executors);
        let drivers = std::mem::take(&mut w.drivers);
        w.cores_used = 0;
        w.memory_used = 0;
        if self.workers.by_address.get(&address).map(String::as_str) == Some(id) {
            self.workers.by_address.remove(&address);
        }
        for (app_id, exec_id) in executors.into_keys() {
            let Some(app) = self.apps.all.get_mut(&app_id) else {
                continue;
            };
            let Some(exec) = app.executors.remove(&exec_id) else {
                continue;
            };
            app.cores_granted = app.cores_granted.saturating_sub(exec.cores);
            tracing::info!("Telling app of lost executor: {exec_id}");
            let conn = app.conn;
            self.send_on(
                conn,
                ExecutorUpdated {
                    id: exec_id,
                    state: ExecutorState::Lost,
                    message: Some("worker lost".into()),
                    exit_status: None,
                    worker_host: Some(host.clone()),
                },
            );
        }
        for driver_id in drivers {
            let supervise = self
                .drivers
                .all
                .get(&driver_id)
                .is_some_and(|d| d.desc.supervise);
            if supervise {
                tracing::info!("Re-launching {driver_id}");
                self.relaunch_driver(&driver_id);
            } else {
                tracing::info!("Not re-launching {driver_id} because it was not supervised");
                self.remove_driver(&driver_id, DriverState::Error, None);
            }
        }
        let notices: Vec<Option<ConnId>> = self
            .apps
            .waiting
            .iter()
            .filter_map(|a| self.apps.all.get(a))
            .map(|a| a.conn)
            .collect();
        // Spark's line, only when there is an application to tell.
        if !notices.is_empty() {
            tracing::info!("Telling app of lost worker: {id}");
        }
        for conn in notices {
            self.send_on(
                conn,
                WorkerRemoved {
                    id: id.to_string(),
                    host: host.clone(),
                    message: msg.to_string(),
                },
            );
        }
        self.unpersist_worker(id);
        self.schedule();
    }

    /// WorkerDecommissioning from the worker itself.
    pub(crate) fn worker_decommissioning(&mut self, id: &str) {
        if self.ha.state() == RecoveryState::Standby {
            return;
        }
        // Spark's idToWorker: a DEAD worker is not decommissioned.
        if self
            .workers
            .all
            .get(id)
            .is_some_and(|w| w.state != WorkerState::Dead)
        {
            self.decommission_worker(id);
        }
    }

    /// DecommissionWorkersOnHosts: decommissions every worker on those hosts and tells it so;
    /// answers how many.
    pub(crate) fn decommission_workers_on_hosts(&mut self, hostnames: &[String]) -> i32 {
        if self.ha.state() == RecoveryState::Standby {
            return 0;
        }
        let hosts: BTreeSet<String> = hostnames.iter().map(|h| h.to_lowercase()).collect();
        let ids: Vec<String> = self
            .workers
            .by_address
            .values()
            .filter(|id| {
                self.workers
                    .all
                    .get(*id)
                    .is_some_and(|w| hosts.contains(&w.host.to_lowercase()))
            })
            .cloned()
            .collect();
        tracing::info!("Decommissioning the workers {}", ids.join(", "));
        for id in &ids {
            self.decommission_worker(id);
            let conn = self.workers.all.get(id).and_then(|w| w.conn);
            self.send_on(conn, DecommissionWorker {});
        }
        i32::try_from(ids.len()).unwrap_or(i32::MAX)
    }

    /// Spark's decommissionWorker: DECOMMISSIONED; each application told its executors there are
    /// DECOMMISSIONED (with the host), and they stop counting as the application's.
    pub(crate) fn decommission_worker(&mut self, id: &str) {
        let Some(w) = self.workers.all.get_mut(id) else {
            return;
        };
        if w.state == WorkerState::Decommissioned {
            tracing::warn!("Skipping decommissioning worker {id}: it is already decommissioned");
            return;
        }
        tracing::info!("Decommissioning worker {} on {}:{}", w.id, w.host, w.port);
        w.state = WorkerState::Decommissioned;
        let host = w.host.clone();
        let executors: Vec<(String, i32)> = w.executors.keys().cloned().collect();
        for (app_id, exec_id) in executors {
            let Some(app) = self.apps.all.get_mut(&app_id) else {
                continue;
            };
            if let Some(exec) = app.executors.remove(&exec_id) {
                app.cores_granted = app.cores_granted.saturating_sub(exec.cores);
                let conn = app.conn;
                self.send_on(
                    conn,
                    ExecutorUpdated {
                        id: exec_id,
                        state: ExecutorState::Decommissioned,
                        message: Some("worker decommissioned".into()),
                        exit_status: None,
                        worker_host: Some(host.clone()),
                    },
                );
            }
        }
        self.unpersist_worker(id);
    }
}
