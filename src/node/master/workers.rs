//! Workers: registration, heartbeats and timeouts, the state a worker reports, loss and
//! decommissioning.

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use super::state::WorkerRec;
use super::MasterCore;
use crate::messages::deploy::{
    DecommissionWorker, ExecutorUpdated, KillDriver, KillExecutor, MasterInStandby,
    ReconnectWorker, RegisterWorker, RegisterWorkerFailed, RegisteredWorker, WorkerLatestState,
    WorkerRemoved,
};
use crate::messages::{DriverDescription, DriverState, ExecutorState, RecoveryState, WorkerState};
use crate::validate::ConnId;

/// Spark's `spark.dead.worker.persistence`: timeouts a DEAD worker stays listed.
const REAPER_ITERATIONS: u32 = 15;

/// The workers the master knows (Spark's `workers`, `idToWorker`, `addressToWorker`), and
/// the connection each is bound to (SPEC §14.2 Z2). The indexes agree by construction: a
/// worker's connection changes only through [`Workers::bind`] and [`Workers::unbind`].
#[derive(Debug, Default)]
pub(crate) struct Workers {
    /// By id, DEAD ones included until they are reaped.
    all: BTreeMap<String, WorkerRec>,
    /// Worker endpoint address → id, for workers not DEAD.
    by_address: BTreeMap<String, String>,
    /// The connection each registered worker talks over → its id.
    by_conn: BTreeMap<ConnId, String>,
}

/// What a lost worker held, for the master to tell and reschedule (Spark's removeWorker).
pub(crate) struct Lost {
    pub(crate) host: String,
    /// (application id, executor id) of the executors it ran.
    pub(crate) executors: Vec<(String, i32)>,
    pub(crate) drivers: BTreeSet<String>,
}

impl Workers {
    /// Worker `id`, DEAD or not.
    pub(crate) fn get(&self, id: &str) -> Option<&WorkerRec> {
        self.all.get(id)
    }

    /// Every worker, DEAD ones included, in no order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = &WorkerRec> {
        self.all.values()
    }

    /// The connection worker `id` is bound to.
    pub(crate) fn conn_of(&self, id: &str) -> Option<ConnId> {
        self.all.get(id).and_then(|w| w.conn)
    }

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
        self.conn_of(id).is_some_and(|c| c != conn)
    }

    /// The worker bound to `conn`, if one is.
    pub(crate) fn on(&self, conn: ConnId) -> Option<&str> {
        self.by_conn.get(&conn).map(String::as_str)
    }

    /// Binds worker `id` to `conn` (the connection it registered or answered over, or that the
    /// master dialled), unbinding it from the one before.
    pub(crate) fn bind(&mut self, id: &str, conn: ConnId) {
        let Some(w) = self.all.get_mut(id) else {
            return;
        };
        if let Some(old) = w.conn.replace(conn) {
            if old != conn {
                self.by_conn.remove(&old);
            }
        }
        self.by_conn.insert(conn, id.to_string());
    }

    /// Worker `id`'s Spark release, as its latest registration announced it (SPEC §15.5).
    pub(crate) fn set_release(&mut self, id: &str, release: Option<String>) {
        if let Some(w) = self.all.get_mut(id) {
            w.spark_release = release;
        }
    }

    /// Connection `conn` closed: the worker it was bound to, now bound to none.
    pub(crate) fn unbind(&mut self, conn: ConnId) -> Option<String> {
        let id = self.by_conn.remove(&conn)?;
        let w = self.all.get_mut(&id).filter(|w| w.conn == Some(conn))?;
        w.conn = None;
        Some(id)
    }

    /// Whether any worker is UNKNOWN (recovered, not answered yet).
    pub(crate) fn any_unknown(&self) -> bool {
        self.all.values().any(|w| w.state == WorkerState::Unknown)
    }

    /// The ids of the UNKNOWN workers.
    pub(crate) fn unknown(&self) -> Vec<String> {
        self.all
            .values()
            .filter(|w| w.state == WorkerState::Unknown)
            .map(|w| w.id.clone())
            .collect()
    }

    /// The connections of the workers not DEAD (`None` for one bound to none).
    pub(crate) fn live_conns(&self) -> Vec<Option<ConnId>> {
        self.all
            .values()
            .filter(|w| w.state != WorkerState::Dead)
            .map(|w| w.conn)
            .collect()
    }

    /// The ids of the workers not DEAD on any of `hosts` (lower case).
    fn on_hosts(&self, hosts: &BTreeSet<String>) -> Vec<String> {
        self.by_address
            .values()
            .filter(|id| {
                self.all
                    .get(*id)
                    .is_some_and(|w| hosts.contains(&w.host.to_lowercase()))
            })
            .cloned()
            .collect()
    }

    /// A worker heard from at `now` (`now_ms` on the wall clock): ALIVE if it was UNKNOWN.
    pub(crate) fn heard(&mut self, id: &str, now: Instant, now_ms: i64, revive: bool) -> bool {
        let Some(w) = self
            .all
            .get_mut(id)
            .filter(|w| w.state != WorkerState::Dead)
        else {
            return false;
        };
        if revive {
            w.state = WorkerState::Alive;
        }
        w.last_heartbeat = now;
        w.last_heartbeat_ms = now_ms;
        true
    }

    /// Forgets the DEAD workers at `host`:`port` (a worker registering there replaces them).
    fn drop_dead_at(&mut self, host: &str, port: i32) {
        self.all
            .retain(|_, w| !(w.host == host && w.port == port && w.state == WorkerState::Dead));
    }

    /// The worker not DEAD at endpoint address `address` (Spark's `addressToWorker`).
    fn at_address(&self, address: &str) -> Option<&WorkerRec> {
        self.by_address.get(address).and_then(|id| self.all.get(id))
    }

    /// Adds `worker`, its address free, bound to its connection if it has one.
    fn insert(&mut self, worker: WorkerRec) {
        if let Some(conn) = worker.conn {
            self.by_conn.insert(conn, worker.id.clone());
        }
        self.by_address
            .insert(worker.address_key(), worker.id.clone());
        self.all.insert(worker.id.clone(), worker);
    }

    /// Worker `id` is lost (Spark's removeWorker, its own part): DEAD, bound to no
    /// connection, off its address, its executors and drivers taken away. `None` if unknown.
    fn lose(&mut self, id: &str) -> Option<Lost> {
        let w = self.all.get_mut(id)?;
        tracing::info!("Removing worker {} on {}:{}", w.id, w.host, w.port);
        w.state = WorkerState::Dead;
        if let Some(conn) = w.conn.take() {
            self.by_conn.remove(&conn);
        }
        let address = w.address_key();
        let lost = Lost {
            host: w.host.clone(),
            executors: std::mem::take(&mut w.executors).into_keys().collect(),
            drivers: std::mem::take(&mut w.drivers),
        };
        w.cores_used = 0;
        w.memory_used = 0;
        if self.by_address.get(&address).map(String::as_str) == Some(id) {
            self.by_address.remove(&address);
        }
        Some(lost)
    }

    /// The workers silent longer than `timeout` at `now`: those to remove (not DEAD yet), and
    /// the DEAD ones to forget (silent for Spark's reaper iterations more).
    fn silent(&self, now: Instant, timeout: Duration) -> (Vec<String>, Vec<String>) {
        let mut to_remove = Vec::new();
        let mut to_forget = Vec::new();
        let reap = timeout
            .checked_mul(REAPER_ITERATIONS + 1)
            .unwrap_or(Duration::MAX);
        for w in self.all.values() {
            let silent = now.saturating_duration_since(w.last_heartbeat);
            if silent > timeout {
                if w.state != WorkerState::Dead {
                    to_remove.push(w.id.clone());
                } else if silent > reap {
                    to_forget.push(w.id.clone());
                }
            }
        }
        (to_remove, to_forget)
    }

    /// Forgets worker `id` altogether.
    fn forget(&mut self, id: &str) {
        self.all.remove(id);
    }

    /// Worker `id` becomes DECOMMISSIONED: the executors it runs, or `None` when it is unknown
    /// or was already.
    fn decommission(&mut self, id: &str) -> Option<(String, Vec<(String, i32)>)> {
        let w = self.all.get_mut(id)?;
        if w.state == WorkerState::Decommissioned {
            tracing::warn!("Skipping decommissioning worker {id}: it is already decommissioned");
            return None;
        }
        tracing::info!("Decommissioning worker {} on {}:{}", w.id, w.host, w.port);
        w.state = WorkerState::Decommissioned;
        Some((w.host.clone(), w.executors.keys().cloned().collect()))
    }

    /// Driver `driver` goes to worker `id` if its cores and memory are free there: the worker's
    /// connection (`Some(None)` when bound to none), `None` when it does not fit.
    pub(crate) fn take_driver(
        &mut self,
        id: &str,
        driver: &str,
        desc: &DriverDescription,
    ) -> Option<Option<ConnId>> {
        let w = self
            .all
            .get_mut(id)
            .filter(|w| w.memory_free() >= desc.mem && w.cores_free() >= desc.cores)?;
        w.add_driver(driver, desc.cores, desc.mem);
        Some(w.conn)
    }

    /// A recovered worker `id` runs driver `driver`, of `cores` and `memory`.
    pub(crate) fn take_driver_claimed(&mut self, id: &str, driver: &str, cores: i32, memory: i32) {
        if let Some(w) = self.all.get_mut(id) {
            w.add_driver(driver, cores, memory);
        }
    }

    /// Frees driver `driver`'s cores and memory on worker `id`.
    pub(crate) fn free_driver(&mut self, id: &str, driver: &str, cores: i32, memory: i32) {
        if let Some(w) = self.all.get_mut(id) {
            w.remove_driver(driver, cores, memory);
        }
    }

    /// Executor `key` takes `cores` and `memory` on worker `id`: the worker's host and port and
    /// its connection, `None` when the worker is unknown.
    pub(crate) fn take_executor(
        &mut self,
        id: &str,
        key: (String, i32),
        cores: i32,
        memory: i32,
    ) -> Option<(String, Option<ConnId>)> {
        let w = self.all.get_mut(id)?;
        w.add_executor(key, cores, memory);
        Some((w.host_port(), w.conn))
    }

    /// Frees executor `key` on worker `id`: whether it was there, and the worker's connection.
    pub(crate) fn free_executor(
        &mut self,
        id: &str,
        key: &(String, i32),
    ) -> (bool, Option<ConnId>) {
        match self.all.get_mut(id) {
            Some(w) => (w.remove_executor(key), w.conn),
            None => (false, None),
        }
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
        if self.ha.state() == RecoveryState::Standby
            && !self.planted(crate::node::plant::Plant::StandbyRegisters)
        {
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
        let known = self
            .workers
            .get(&r.id)
            .filter(|w| w.state != WorkerState::Dead)
            .map(|w| (w.state == WorkerState::Unknown, w.conn.is_none()));
        if let Some((unknown, unbound)) = known {
            if unknown {
                tracing::info!("Worker has been re-registered: {}", r.id);
                self.workers
                    .heard(&r.id, self.clock.now, self.clock.wall_ms, true);
            }
            if unbound {
                self.workers.bind(&r.id, conn);
            }
            // A worker registering again says its Spark release anew (SPEC §15.5): one recovered
            // from the persisted state has none until it does.
            if r.spark_release.is_some() {
                self.workers.set_release(&r.id, r.spark_release.clone());
            }
            self.registered_on(conn);
            self.send_on(Some(conn), registered);
            if self.ha.state() == RecoveryState::Recovering && self.can_complete_recovery() {
                self.complete_recovery();
            }
            return;
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
            spark_release: r.spark_release.clone(),
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
        self.workers.drop_dead_at(&worker.host, worker.port);
        let taken = self
            .workers
            .at_address(&worker.address_key())
            .map(|old| (old.id.clone(), old.state == WorkerState::Unknown));
        match taken {
            Some((old, true)) => {
                self.remove_worker(&old, "Worker replaced by a new worker with same address")
            }
            Some((_, false)) => return false,
            None => {}
        }
        self.workers.insert(worker);
        true
    }

    /// Heartbeat (Spark's `case Heartbeat`): keeps a registered worker alive; a worker the
    /// master declared DEAD (registered before, now bound to no connection) is asked to register
    /// again, over the connection the heartbeat came on; a worker the master never registered (or
    /// already forgot) is ignored: nothing is sent and the connection stays open. A heartbeat
    /// naming a worker bound to another connection never gets here (refused, SPEC §14.2 Z2).
    pub(crate) fn heartbeat(&mut self, conn: ConnId, worker_id: &str) {
        let (now, now_ms) = (self.clock.now, self.clock.wall_ms);
        if self.workers.heard(worker_id, now, now_ms, false) {
            return;
        }
        match self.workers.get(worker_id) {
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
        let (to_remove, to_forget) = self.workers.silent(self.clock.now, timeout);
        for id in to_remove {
            tracing::warn!("Removing {id} because we got no heartbeat in {secs} seconds");
            self.remove_worker(&id, &format!("Not receiving heartbeat for {secs} seconds"));
        }
        for id in to_forget {
            self.workers.forget(&id);
        }
    }

    /// Spark's removeWorker: DEAD; its executors LOST (each application told, with the host),
    /// its drivers relaunched (supervised) or ended in ERROR, every application told
    /// WorkerRemoved, then the freed demand rescheduled.
    pub(crate) fn remove_worker(&mut self, id: &str, msg: &str) {
        let Some(lost) = self.workers.lose(id) else {
            return;
        };
        let host = lost.host;
        for (app_id, exec_id) in lost.executors {
            let Some((conn, _)) = self.apps.drop_executor(&app_id, exec_id) else {
                continue;
            };
            tracing::info!("Telling app of lost executor: {exec_id}");
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
        for driver_id in lost.drivers {
            if self.drivers.supervised(&driver_id) {
                tracing::info!("Re-launching {driver_id}");
                self.relaunch_driver(&driver_id);
            } else {
                tracing::info!("Not re-launching {driver_id} because it was not supervised");
                self.remove_driver(&driver_id, DriverState::Error, None);
            }
        }
        let notices = self.apps.waiting_conns();
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
        let ids = self.workers.on_hosts(&hosts);
        tracing::info!("Decommissioning the workers {}", ids.join(", "));
        for id in &ids {
            self.decommission_worker(id);
            let conn = self.workers.conn_of(id);
            self.send_on(conn, DecommissionWorker {});
        }
        i32::try_from(ids.len()).unwrap_or(i32::MAX)
    }

    /// Spark's decommissionWorker: DECOMMISSIONED; each application told its executors there are
    /// DECOMMISSIONED (with the host), and they stop counting as the application's.
    pub(crate) fn decommission_worker(&mut self, id: &str) {
        let Some((host, executors)) = self.workers.decommission(id) else {
            return;
        };
        for (app_id, exec_id) in executors {
            let Some((conn, _)) = self.apps.drop_executor(&app_id, exec_id) else {
                continue;
            };
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
        self.unpersist_worker(id);
    }
}
