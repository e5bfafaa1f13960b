//! Drivers submitted in cluster deploy mode: submission, placement on workers, kills, status,
//! their end and their relaunch.

use std::collections::{BTreeSet, HashMap, VecDeque};

use super::io::StoredDriver;
use super::state::{retire, DriverRec};
use super::workers::Workers;
use super::MasterCore;
use crate::messages::deploy::{
    DriverStatusResponse, KillAllDriversResponse, KillDriver, KillDriverResponse, LaunchDriver,
    SubmitDriverResponse,
};
use crate::messages::{
    DriverDescription, DriverInfo, DriverState, ErrorDescription, RecoveryState, Resources,
};
use crate::node::clock::stamp;
use crate::validate::ConnId;

/// Spark's `Utils.BACKUP_STANDALONE_MASTER_PREFIX`.
const NOT_ALIVE: &str = "Current state is not alive";

/// The drivers submitted in cluster deploy mode (Spark's `drivers`, `waitingDrivers`,
/// `completedDrivers`), and which driver-client connection submitted each.
#[derive(Debug, Default)]
pub(crate) struct Drivers {
    /// Active drivers by id.
    all: HashMap<String, DriverRec>,
    /// Drivers waiting for a worker, in submission order.
    waiting: Vec<String>,
    /// Completed drivers, oldest first, for the state page.
    completed: VecDeque<DriverInfo>,
    /// The serial of the next driver id.
    next_number: u32,
    /// Drivers each driver-client connection submitted (the ones it may kill).
    submitted: HashMap<ConnId, BTreeSet<String>>,
}

impl Drivers {
    /// A new driver of `desc`, SUBMITTED at `now_ms`, waiting for a worker: its id.
    fn add(&mut self, desc: DriverDescription, now_ms: i64) -> String {
        let id = format!("driver-{}-{:04}", stamp(now_ms), self.next_number);
        self.next_number += 1;
        let driver = DriverRec {
            id: id.clone(),
            desc,
            start_time: now_ms,
            state: DriverState::Submitted,
            worker: None,
            exception: None,
            waiting: None,
        };
        self.all.insert(id.clone(), driver);
        self.waiting.push(id.clone());
        id
    }

    /// Active driver `id`.
    pub(crate) fn get(&self, id: &str) -> Option<&DriverRec> {
        self.all.get(id)
    }

    /// The active drivers' ids, sorted.
    fn ids(&self) -> Vec<String> {
        let mut ids: Vec<String> = self.all.keys().cloned().collect();
        ids.sort();
        ids
    }

    /// Active driver `id` restarts when its worker is lost.
    pub(crate) fn supervised(&self, id: &str) -> bool {
        self.all.get(id).is_some_and(|d| d.desc.supervise)
    }

    /// Connection `conn` submitted driver `id`.
    pub(crate) fn submitted_on(&mut self, conn: ConnId, id: String) {
        self.submitted.entry(conn).or_default().insert(id);
    }

    /// Whether `conn` may kill driver `id` (SPEC §14.2 Z4): it submitted it, the driver is not
    /// active, or the connection that submitted it has closed (the driver is bound to none, as
    /// after `spark-submit --deploy-mode cluster` returned: a kill then comes from a new process).
    pub(crate) fn may_kill(&self, conn: ConnId, id: &str) -> bool {
        if !self.all.contains_key(id) {
            return true;
        }
        match self.submitted.get(&conn) {
            Some(ids) if ids.contains(id) => true,
            _ => !self.submitted.values().any(|ids| ids.contains(id)),
        }
    }

    /// Connection `conn` closed.
    pub(crate) fn closed(&mut self, conn: ConnId) {
        self.submitted.remove(&conn);
    }

    /// A driver read back from the recovery store: SUBMITTED, until its worker claims it.
    pub(crate) fn recover(&mut self, d: StoredDriver) {
        if let Some(n) = serial(&d.id) {
            self.next_number = self.next_number.max(n.saturating_add(1));
        }
        let rec = DriverRec {
            id: d.id.clone(),
            desc: d.desc,
            start_time: d.start_time,
            state: DriverState::Submitted,
            worker: None,
            exception: None,
            waiting: None,
        };
        self.all.insert(d.id, rec);
    }

    /// A recovered worker runs driver `id`: RUNNING there. Its cores and memory, if the master
    /// knows it.
    pub(crate) fn claim(&mut self, id: &str, worker: &str) -> Option<(i32, i32)> {
        let d = self.all.get_mut(id)?;
        d.worker = Some(worker.to_string());
        d.state = DriverState::Running;
        self.waiting.retain(|x| x != id);
        Some((d.desc.cores, d.desc.mem))
    }

    /// The drivers no worker runs, sorted.
    pub(crate) fn unclaimed(&self) -> Vec<String> {
        let mut ids: Vec<String> = self
            .all
            .values()
            .filter(|d| d.worker.is_none())
            .map(|d| d.id.clone())
            .collect();
        ids.sort();
        ids
    }

    /// What the recovery store keeps of driver `id`.
    pub(crate) fn stored(&self, id: &str) -> Option<StoredDriver> {
        self.all.get(id).map(|d| StoredDriver {
            id: d.id.clone(),
            desc: d.desc.clone(),
            start_time: d.start_time,
        })
    }

    /// The active drivers (sorted by id) and the completed ones (oldest first), as the state
    /// answer shows them.
    pub(crate) fn infos(&self) -> (Vec<DriverInfo>, Vec<DriverInfo>) {
        let mut active: Vec<_> = self.all.values().map(DriverRec::info).collect();
        active.sort_by(|a, b| a.id.cmp(&b.id));
        (active, self.completed.iter().cloned().collect())
    }

    /// The state, worker and exception of driver `id`, active or completed.
    fn status(&self, id: &str) -> Option<(DriverState, Option<String>, Option<ErrorDescription>)> {
        self.all
            .get(id)
            .map(|d| (d.state, d.worker.clone(), d.exception.clone()))
            .or_else(|| {
                self.completed
                    .iter()
                    .find(|d| d.id == id)
                    .map(|d| (d.state, d.worker_id.clone(), d.exception.clone()))
            })
    }

    /// Completed drivers kept.
    pub(crate) fn completed_count(&self) -> usize {
        self.completed.len()
    }

    /// Forgets the completed drivers.
    pub(crate) fn clear_completed(&mut self) {
        self.completed.clear();
    }

    /// Takes a waiting driver off the queue; whether it was waiting.
    fn cancel(&mut self, id: &str) -> bool {
        let waiting = self.waiting.iter().any(|d| d == id);
        self.waiting.retain(|d| d != id);
        waiting
    }

    /// Driver `id` no longer runs where it ran (its worker is lost): its description.
    fn detach(&mut self, id: &str) -> Option<DriverDescription> {
        let d = self.all.get_mut(id)?;
        d.worker = None;
        Some(d.desc.clone())
    }

    /// Ends driver `id` in `state` (Spark's removeDriver, its own part): completed, off the
    /// queue, its worker freed. Whether it was active.
    fn end(
        &mut self,
        id: &str,
        (state, exception): (DriverState, Option<ErrorDescription>),
        workers: &mut Workers,
        retained: usize,
    ) -> bool {
        let Some(mut d) = self.all.remove(id) else {
            return false;
        };
        self.waiting.retain(|w| w != id);
        if let Some(w) = d.worker.as_deref() {
            workers.free_driver(w, id, d.desc.cores, d.desc.mem);
        }
        d.state = state;
        d.exception = exception;
        d.waiting = None;
        retire(&mut self.completed, d.info(), retained);
        true
    }

    /// The drivers waiting for a worker, in submission order.
    pub(crate) fn waiting_ids(&self) -> &[String] {
        &self.waiting
    }

    /// Sets why each waiting driver waits (SPEC §16); every other driver waits for nothing.
    pub(crate) fn set_waiting(&mut self, reasons: Vec<(String, Option<String>)>) {
        for d in self.all.values_mut() {
            d.waiting = None;
        }
        for (id, reason) in reasons {
            if let Some(d) = self.all.get_mut(&id) {
                d.waiting = reason;
            }
        }
    }

    /// Whether a driver waits for a worker.
    fn any_waiting(&self) -> bool {
        !self.waiting.is_empty()
    }

    /// Places the waiting drivers on the `alive` workers (in that order), round robin, each on
    /// the first with enough free cores and memory: the LaunchDrivers to send, with the
    /// workers' connections.
    fn place(
        &mut self,
        alive: &[String],
        workers: &mut Workers,
    ) -> Vec<(Option<ConnId>, LaunchDriver)> {
        let n = alive.len();
        let mut pos = 0usize;
        let mut launches = Vec::new();
        for driver_id in self.waiting.clone() {
            let Some(d) = self.all.get_mut(&driver_id) else {
                continue;
            };
            let mut launched = false;
            let mut visited = 0;
            while visited < n && !launched {
                let worker_id = &alive[pos];
                visited += 1;
                if let Some(conn) = workers.take_driver(worker_id, &driver_id, &d.desc) {
                    tracing::info!("Launching driver {driver_id} on worker {worker_id}");
                    d.worker = Some(worker_id.clone());
                    d.state = DriverState::Running;
                    launches.push((
                        conn,
                        LaunchDriver {
                            driver_id: driver_id.clone(),
                            driver_desc: d.desc.clone(),
                            resources: Resources::new(),
                        },
                    ));
                    launched = true;
                }
                pos = (pos + 1) % n;
            }
            if launched {
                self.waiting.retain(|x| *x != driver_id);
            } else if n > 0 {
                tracing::debug!("Driver {driver_id} waits for a worker with enough resources");
            }
        }
        launches
    }
}

/// The number at the end of a Spark-style id (`driver-…-0007` → 7).
pub(crate) fn serial(id: &str) -> Option<u32> {
    id.rsplit('-').next().and_then(|n| n.parse().ok())
}

impl MasterCore {
    /// RequestSubmitDriver: the answer, and whether a driver was queued (the caller schedules
    /// after answering).
    pub(crate) fn submit_driver(
        &mut self,
        desc: DriverDescription,
    ) -> (SubmitDriverResponse, bool) {
        if self.ha.state() != RecoveryState::Alive {
            let message = format!(
                "{NOT_ALIVE}: {}. Can only accept driver submissions in ALIVE state.",
                self.ha.state()
            );
            return (
                SubmitDriverResponse {
                    master: self.self_ref.clone(),
                    success: false,
                    driver_id: None,
                    message,
                },
                false,
            );
        }
        tracing::info!("Driver submitted {}", desc.command.main_class);
        let id = self.drivers.add(desc, self.clock.wall_ms);
        self.persist_driver(&id);
        (
            SubmitDriverResponse {
                master: self.self_ref.clone(),
                success: true,
                driver_id: Some(id.clone()),
                message: format!("Driver successfully submitted as {id}"),
            },
            true,
        )
    }

    /// RequestKillDriver: the answer, and the id of a waiting driver to end KILLED once the
    /// answer is queued (a running one is killed by its worker).
    pub(crate) fn kill_driver(&mut self, id: &str) -> (KillDriverResponse, Option<String>) {
        let master = self.self_ref.clone();
        let response = |success: bool, message: String| KillDriverResponse {
            master: master.clone(),
            driver_id: id.to_string(),
            success,
            message,
        };
        if self.ha.state() != RecoveryState::Alive {
            let msg = format!(
                "{NOT_ALIVE}: {}. Can only kill drivers in ALIVE state.",
                self.ha.state()
            );
            return (response(false, msg), None);
        }
        tracing::info!("Asked to kill driver {id}");
        if self.drivers.get(id).is_none() {
            let msg = format!("Driver {id} has already finished or does not exist");
            tracing::warn!("{msg}");
            return (response(false, msg), None);
        }
        let waiting = self.cancel_or_kill(id);
        let msg = format!("Kill request for {id} submitted");
        tracing::info!("{msg}");
        (response(true, msg), waiting)
    }

    /// Takes a waiting driver off the queue (returning its id), or tells the worker running it
    /// to kill it.
    fn cancel_or_kill(&mut self, id: &str) -> Option<String> {
        if self.drivers.cancel(id) {
            return Some(id.to_string());
        }
        let conn = self
            .drivers
            .get(id)
            .and_then(|d| d.worker.as_deref())
            .and_then(|w| self.workers.conn_of(w));
        self.send_on(
            conn,
            KillDriver {
                driver_id: id.to_string(),
            },
        );
        None
    }

    /// RequestKillAllDrivers: the answer, and the waiting drivers to end KILLED.
    pub(crate) fn kill_all_drivers(&mut self) -> (KillAllDriversResponse, Vec<String>) {
        if self.ha.state() != RecoveryState::Alive {
            let message = format!(
                "{NOT_ALIVE}: {}. Can only kill drivers in ALIVE state.",
                self.ha.state()
            );
            return (
                KillAllDriversResponse {
                    master: self.self_ref.clone(),
                    success: false,
                    message,
                },
                Vec::new(),
            );
        }
        tracing::info!("Asked to kill all drivers");
        let waiting = self
            .drivers
            .ids()
            .iter()
            .filter_map(|id| self.cancel_or_kill(id))
            .collect();
        (
            KillAllDriversResponse {
                master: self.self_ref.clone(),
                success: true,
                message: "Kill request for all drivers submitted".into(),
            },
            waiting,
        )
    }

    /// RequestDriverStatus.
    pub(crate) fn driver_status(&self, id: &str) -> DriverStatusResponse {
        if self.ha.state() != RecoveryState::Alive {
            let msg = format!(
                "{NOT_ALIVE}: {}. Can only request driver status in ALIVE state.",
                self.ha.state()
            );
            return DriverStatusResponse {
                found: false,
                state: None,
                worker_id: None,
                worker_host_port: None,
                exception: Some(ErrorDescription::new("java.lang.Exception", msg)),
            };
        }
        let found = self.drivers.status(id);
        match found {
            Some((state, worker, exception)) => DriverStatusResponse {
                found: true,
                state: Some(state),
                worker_host_port: worker
                    .as_deref()
                    .and_then(|w| self.workers.get(w))
                    .map(|w| w.host_port()),
                worker_id: worker,
                exception,
            },
            None => DriverStatusResponse {
                found: false,
                state: None,
                worker_id: None,
                worker_host_port: None,
                exception: None,
            },
        }
    }

    /// DriverStateChanged: a final state ends the driver.
    pub(crate) fn driver_state_changed(
        &mut self,
        id: String,
        state: DriverState,
        exception: Option<ErrorDescription>,
    ) {
        match state {
            DriverState::Error
            | DriverState::Finished
            | DriverState::Killed
            | DriverState::Failed => self.remove_driver(&id, state, exception),
            other => tracing::warn!("Received unexpected state update for driver {id}: {other}"),
        }
    }

    /// Spark's removeDriver: the driver is completed in `state`, its worker freed.
    pub(crate) fn remove_driver(
        &mut self,
        id: &str,
        state: DriverState,
        exception: Option<ErrorDescription>,
    ) {
        let retained = self.config.retained_drivers;
        let ended = (state, exception);
        if !self.drivers.end(id, ended, &mut self.workers, retained) {
            tracing::warn!("Asked to remove unknown driver: {id}");
            return;
        }
        tracing::info!("Removing driver: {id}");
        self.unpersist_driver(id);
        self.schedule();
    }

    /// A supervised driver whose worker was lost starts again under a new id (SPARK-19900).
    pub(crate) fn relaunch_driver(&mut self, id: &str) {
        let Some(desc) = self.drivers.detach(id) else {
            return;
        };
        self.remove_driver(id, DriverState::Relaunching, None);
        let new_id = self.drivers.add(desc, self.clock.wall_ms);
        self.persist_driver(&new_id);
        self.schedule();
    }

    /// Places waiting drivers on alive workers, round robin over a shuffle of them.
    pub(crate) fn schedule_drivers(&mut self) {
        if !self.drivers.any_waiting() {
            return;
        }
        let mut alive = self.workers.schedulable();
        for i in (1..alive.len()).rev() {
            let j = (self.next_random() % (i as u64 + 1)) as usize;
            alive.swap(i, j);
        }
        for (conn, launch) in self.drivers.place(&alive, &mut self.workers) {
            self.send_on(conn, launch);
        }
    }
}
