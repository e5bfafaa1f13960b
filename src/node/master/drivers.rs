//! Drivers submitted in cluster deploy mode: submission, placement on workers, kills, status,
//! their end and their relaunch.

use std::collections::{BTreeSet, HashMap, VecDeque};

use super::state::{retire, DriverRec};
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
/// `completedDrivers`).
#[derive(Debug, Default)]
pub(crate) struct Drivers {
    /// Active drivers by id.
    pub(crate) all: HashMap<String, DriverRec>,
    /// Drivers waiting for a worker, in submission order.
    pub(crate) waiting: Vec<String>,
    /// Completed drivers, oldest first, for the state page.
    pub(crate) completed: VecDeque<DriverInfo>,
    /// The serial of the next driver id.
    pub(crate) next_number: u32,
    /// Drivers each driver-client connection submitted (the ones it may kill).
    pub(crate) submitted: HashMap<ConnId, BTreeSet<String>>,
}

impl MasterCore {
    fn new_driver(&mut self, desc: DriverDescription) -> DriverRec {
        let now = self.clock.wall_ms;
        let id = format!("driver-{}-{:04}", stamp(now), self.drivers.next_number);
        self.drivers.next_number += 1;
        DriverRec {
            id,
            desc,
            start_time: now,
            state: DriverState::Submitted,
            worker: None,
            exception: None,
        }
    }

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
        let driver = self.new_driver(desc);
        let id = driver.id.clone();
        self.drivers.all.insert(id.clone(), driver);
        self.persist_driver(&id);
        self.drivers.waiting.push(id.clone());
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
        if !self.drivers.all.contains_key(id) {
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
        if let Some(pos) = self.drivers.waiting.iter().position(|d| d == id) {
            self.drivers.waiting.remove(pos);
            return Some(id.to_string());
        }
        let conn = self
            .drivers
            .all
            .get(id)
            .and_then(|d| d.worker.as_ref())
            .and_then(|w| self.workers.all.get(w))
            .and_then(|w| w.conn);
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
        let mut ids: Vec<String> = self.drivers.all.keys().cloned().collect();
        ids.sort();
        let waiting = ids
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
        let found = self
            .drivers
            .all
            .get(id)
            .map(|d| (d.state, d.worker.clone(), d.exception.clone()))
            .or_else(|| {
                self.drivers
                    .completed
                    .iter()
                    .find(|d| d.id == id)
                    .map(|d| (d.state, d.worker_id.clone(), d.exception.clone()))
            });
        match found {
            Some((state, worker, exception)) => DriverStatusResponse {
                found: true,
                state: Some(state),
                worker_host_port: worker
                    .as_ref()
                    .and_then(|w| self.workers.all.get(w))
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
        let Some(mut d) = self.drivers.all.remove(id) else {
            tracing::warn!("Asked to remove unknown driver: {id}");
            return;
        };
        tracing::info!("Removing driver: {id}");
        self.drivers.waiting.retain(|w| w != id);
        if let Some(w) = d.worker.as_ref().and_then(|w| self.workers.all.get_mut(w)) {
            w.remove_driver(id, d.desc.cores, d.desc.mem);
        }
        d.state = state;
        d.exception = exception;
        retire(
            &mut self.drivers.completed,
            d.info(),
            self.config.retained_drivers,
        );
        self.unpersist_driver(id);
        self.schedule();
    }

    /// A supervised driver whose worker was lost starts again under a new id (SPARK-19900).
    pub(crate) fn relaunch_driver(&mut self, id: &str) {
        let Some(desc) = self.drivers.all.get(id).map(|d| d.desc.clone()) else {
            return;
        };
        if let Some(d) = self.drivers.all.get_mut(id) {
            d.worker = None;
        }
        self.remove_driver(id, DriverState::Relaunching, None);
        let driver = self.new_driver(desc);
        let new_id = driver.id.clone();
        self.drivers.all.insert(new_id.clone(), driver);
        self.persist_driver(&new_id);
        self.drivers.waiting.push(new_id);
        self.schedule();
    }

    /// Places waiting drivers on alive workers, round robin over a shuffle of them.
    pub(crate) fn schedule_drivers(&mut self) {
        if self.drivers.waiting.is_empty() {
            return;
        }
        let mut alive = self.workers.schedulable();
        for i in (1..alive.len()).rev() {
            let j = (self.next_random() % (i as u64 + 1)) as usize;
            alive.swap(i, j);
        }
        let n = alive.len();
        let mut pos = 0usize;
        for driver_id in self.drivers.waiting.clone() {
            let Some(desc) = self.drivers.all.get(&driver_id).map(|d| d.desc.clone()) else {
                continue;
            };
            let mut launched = false;
            let mut visited = 0;
            while visited < n && !launched {
                let worker_id = alive[pos].clone();
                visited += 1;
                let fits =
                    self.workers.all.get(&worker_id).is_some_and(|w| {
                        w.memory_free() >= desc.mem && w.cores_free() >= desc.cores
                    });
                if fits {
                    self.launch_driver(&worker_id, &driver_id);
                    launched = true;
                }
                pos = (pos + 1) % n;
            }
            if !launched && n > 0 {
                tracing::debug!("Driver {driver_id} waits for a worker with enough resources");
            }
        }
    }

    fn launch_driver(&mut self, worker_id: &str, driver_id: &str) {
        let Some(d) = self.drivers.all.get_mut(driver_id) else {
            return;
        };
        let Some(w) = self.workers.all.get_mut(worker_id) else {
            return;
        };
        tracing::info!("Launching driver {driver_id} on worker {worker_id}");
        w.add_driver(driver_id, d.desc.cores, d.desc.mem);
        d.worker = Some(worker_id.to_string());
        d.state = DriverState::Running;
        let launch = LaunchDriver {
            driver_id: driver_id.to_string(),
            driver_desc: d.desc.clone(),
            resources: Resources::new(),
        };
        let conn = w.conn;
        self.drivers.waiting.retain(|x| x != driver_id);
        self.send_on(conn, launch);
    }
}
