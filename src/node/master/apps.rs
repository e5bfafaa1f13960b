//! Applications: registration, the scheduling round, executors and their states, executor
//! requests and kills, and the end of an application.

use std::collections::{BTreeMap, VecDeque};

use super::drivers::serial;
use super::io::StoredApp;
use super::round::{schedule_round, RoundWorker};
use super::schedule::{ExecutorDemand, WorkerSlot};
use super::state::{retire, AppRec, ExecRec};
use super::MasterCore;
use crate::messages::deploy::{
    ApplicationFinished, ApplicationRemoved, ExecutorAdded, ExecutorStateChanged, ExecutorUpdated,
    KillExecutor, KillExecutors, LaunchExecutor, RegisterApplication, RegisteredApplication,
    RequestExecutors,
};
use crate::messages::{
    ApplicationInfo, ApplicationState, ExecutorDescription, ExecutorState, RecoveryState,
    ResourceInformation, Resources,
};
use crate::node::clock::stamp;
use crate::validate::ConnId;

/// The applications (Spark's `apps`, `idToApp`, `waitingApps`, `completedApps`), and the
/// connection each is bound to (SPEC §14.2 Z1): an application's connection changes only
/// through [`Apps::bind`] and [`Apps::unbind`].
#[derive(Debug, Default)]
pub(crate) struct Apps {
    /// Active applications by id.
    all: BTreeMap<String, AppRec>,
    /// Active applications in registration order (Spark's `waitingApps`).
    waiting: Vec<String>,
    /// Completed applications, oldest first, for the state page.
    completed: VecDeque<ApplicationInfo>,
    /// The serial of the next application id.
    next_number: u32,
    /// The connection each application's client talks over → its id.
    by_conn: BTreeMap<ConnId, String>,
}

impl Apps {
    /// Active application `id`.
    pub(crate) fn get(&self, id: &str) -> Option<&AppRec> {
        self.all.get(id)
    }

    /// The active applications in registration order.
    pub(crate) fn active(&self) -> impl Iterator<Item = &AppRec> {
        self.waiting.iter().filter_map(|id| self.all.get(id))
    }

    /// The completed applications kept, oldest first.
    pub(crate) fn completed(&self) -> impl Iterator<Item = &ApplicationInfo> {
        self.completed.iter()
    }

    /// Forgets the last abnormal end of application `id`'s executors (one is steady).
    pub(crate) fn clear_failure(&mut self, id: &str) {
        if let Some(a) = self.all.get_mut(id) {
            a.last_failure = None;
        }
    }

    /// Sets why application `id` waits (SPEC §16).
    pub(crate) fn set_waiting(&mut self, id: &str, reason: Option<String>) {
        if let Some(a) = self.all.get_mut(id) {
            a.waiting = reason;
        }
    }

    /// Forgets the completed applications.
    pub(crate) fn clear_completed(&mut self) {
        self.completed.clear();
    }

    /// The connections of the active applications' clients, in registration order.
    pub(crate) fn waiting_conns(&self) -> Vec<Option<ConnId>> {
        self.active().map(|a| a.conn).collect()
    }

    /// Application `id` is active and bound to a connection other than `conn`.
    pub(crate) fn bound_elsewhere(&self, id: &str, conn: ConnId) -> bool {
        self.all
            .get(id)
            .and_then(|a| a.conn)
            .is_some_and(|c| c != conn)
    }

    /// Binds application `id` to `conn`, unbinding it from the one before.
    pub(crate) fn bind(&mut self, id: &str, conn: ConnId) {
        let Some(a) = self.all.get_mut(id) else {
            return;
        };
        if let Some(old) = a.conn.replace(conn) {
            if old != conn {
                self.by_conn.remove(&old);
            }
        }
        self.by_conn.insert(conn, id.to_string());
    }

    /// Connection `conn` closes (or is given up): the active application bound to it, now
    /// bound to none.
    pub(crate) fn unbind(&mut self, conn: ConnId) -> Option<String> {
        let id = self.by_conn.remove(&conn)?;
        let a = self.all.get_mut(&id).filter(|a| a.conn == Some(conn))?;
        a.conn = None;
        Some(id)
    }

    /// An application read back from the recovery store: UNKNOWN, bound to no connection.
    pub(crate) fn recover(&mut self, a: StoredApp) {
        if let Some(n) = serial(&a.id) {
            self.next_number = self.next_number.max(n.saturating_add(1));
        }
        let mut app = AppRec::new(a.id.clone(), a.desc, a.driver, a.start_time);
        app.state = ApplicationState::Unknown;
        // Placed by its release again at once (SPEC §15.5), as stored.
        app.spark_release = a.spark.and_then(|s| s.release);
        self.all.insert(a.id.clone(), app);
        self.waiting.push(a.id);
    }

    /// What the recovery store keeps of application `id`.
    pub(crate) fn stored(&self, id: &str) -> Option<StoredApp> {
        self.all.get(id).map(|a| StoredApp {
            id: a.id.clone(),
            desc: a.desc.clone(),
            driver: a.driver.clone(),
            start_time: a.start_time,
            // Whoever runs the Spark-wire front adds what it keeps of a Spark peer (the
            // reference runtime, from its `SparkPeerDial`'s book).
            spark: None,
        })
    }

    /// Whether any application is UNKNOWN (recovered, not answered yet).
    pub(crate) fn any_unknown(&self) -> bool {
        self.all
            .values()
            .any(|a| a.state == ApplicationState::Unknown)
    }

    /// The ids of the UNKNOWN applications.
    pub(crate) fn unknown(&self) -> Vec<String> {
        self.all
            .values()
            .filter(|a| a.state == ApplicationState::Unknown)
            .map(|a| a.id.clone())
            .collect()
    }

    /// The recovered applications that answered (WAITING) are RUNNING.
    pub(crate) fn resume(&mut self) {
        for a in self.all.values_mut() {
            if a.state == ApplicationState::Waiting {
                a.state = ApplicationState::Running;
            }
        }
    }

    /// A recovered application answered MasterChanged: WAITING. Whether it is active.
    fn acknowledged(&mut self, id: &str) -> bool {
        match self.all.get_mut(id) {
            Some(a) => {
                a.state = ApplicationState::Waiting;
                true
            }
            None => false,
        }
    }

    /// Executor `exec_id` of application `app_id` is no longer the application's (its worker
    /// lost or decommissioned): its cores given back. The client's connection and the executor,
    /// if the application had it.
    pub(crate) fn drop_executor(
        &mut self,
        app_id: &str,
        exec_id: i32,
    ) -> Option<(Option<ConnId>, ExecRec)> {
        let app = self.all.get_mut(app_id)?;
        let exec = app.executors.remove(&exec_id)?;
        app.cores_granted = app.cores_granted.saturating_sub(exec.cores);
        Some((app.conn, exec))
    }

    /// A recovered worker runs executor `d` of an active application (with `resources`): the
    /// application counts it again. Whether it does (the application is active and the
    /// executor not finished).
    pub(crate) fn recover_executor(
        &mut self,
        worker: &str,
        d: &ExecutorDescription,
        resources: Resources,
    ) -> bool {
        let Some(app) = self.all.get_mut(&d.app_id) else {
            return false;
        };
        app.next_exec_id = app.next_exec_id.max(d.exec_id.saturating_add(1));
        if d.state.is_finished() {
            return false;
        }
        app.executors.insert(
            d.exec_id,
            ExecRec {
                worker: worker.to_string(),
                cores: d.cores,
                state: d.state,
                resources,
                running_since: None,
            },
        );
        app.cores_granted = app.cores_granted.saturating_add(d.cores);
        true
    }

    /// The active application bound to `conn`, if one is.
    pub(crate) fn on(&self, conn: ConnId) -> Option<&str> {
        self.by_conn
            .get(&conn)
            .filter(|a| self.all.contains_key(*a))
            .map(String::as_str)
    }
}

impl MasterCore {
    /// RegisterApplication: a standby master stays silent; the active one gives an id, answers
    /// RegisteredApplication and schedules.
    pub(crate) fn register_application(&mut self, conn: ConnId, r: RegisterApplication) {
        if self.ha.state() == RecoveryState::Standby {
            return;
        }
        // As Spark refuses a second registration from an application's address: a connection
        // carries one application (SPEC §14.2), and a client's retry is not a new one.
        if let Some(bound) = self.apps.on(conn) {
            tracing::info!(
                "Attempted to re-register application {bound} over the connection it registered on; ignored"
            );
            return;
        }
        tracing::info!("Registering app {}", r.app_description.name);
        let now = self.clock.wall_ms;
        let id = format!("app-{}-{:04}", stamp(now), self.apps.next_number);
        self.apps.next_number += 1;
        let mut app = AppRec::new(id.clone(), r.app_description, r.driver, now);
        app.spark_release = r.spark_release;
        match &app.spark_release {
            Some(release) => tracing::info!(
                "Registered app {} with ID {id} (Spark {release})",
                app.desc.name
            ),
            None => tracing::info!("Registered app {} with ID {id}", app.desc.name),
        }
        self.apps.all.insert(id.clone(), app);
        self.apps.waiting.push(id.clone());
        self.apps.bind(&id, conn);
        self.persist_app(&id);
        self.registered_on(conn);
        self.send_on(
            Some(conn),
            RegisteredApplication {
                app_id: id,
                master: self.self_ref.clone(),
            },
        );
        self.schedule();
    }

    /// The application ended normally (unregistered, or its client went away).
    pub(crate) fn finish_application(&mut self, id: &str) {
        self.remove_application(id, ApplicationState::Finished);
    }

    /// Spark's removeApplication: its executors killed, the client told unless it finished
    /// normally, every worker told ApplicationFinished.
    pub(crate) fn remove_application(&mut self, id: &str, state: ApplicationState) {
        let keep = self.planted(crate::node::plant::Plant::KeepsFinishedApp);
        let app = if keep {
            self.apps.all.get(id).cloned()
        } else {
            self.apps.all.remove(id)
        };
        let Some(mut app) = app else {
            return;
        };
        tracing::info!("Removing app {id}");
        if !keep {
            self.apps.waiting.retain(|a| a != id);
        }
        if let Some(conn) = app.conn {
            self.apps.by_conn.remove(&conn);
        }
        let executors = std::mem::take(&mut app.executors);
        for (exec_id, exec) in executors {
            self.kill_executor(id, exec_id, &exec);
        }
        app.state = state;
        app.end_time = self.clock.wall_ms;
        // A completed application waits for nothing (SPEC §16).
        app.waiting = None;
        if state != ApplicationState::Finished {
            self.send_on(
                app.conn,
                ApplicationRemoved {
                    message: state.to_string(),
                },
            );
        }
        retire(
            &mut self.apps.completed,
            app.info(),
            self.config.retained_applications,
        );
        self.unpersist_app(id);
        self.schedule();
        for conn in self.workers.live_conns() {
            self.send_on(conn, ApplicationFinished { id: id.to_string() });
        }
    }

    /// Frees an executor on its worker and tells the worker to kill it.
    fn kill_executor(&mut self, app_id: &str, exec_id: i32, exec: &ExecRec) {
        let key = (app_id.to_string(), exec_id);
        if self.workers.get(&exec.worker).is_none() {
            return;
        }
        let (_, conn) = self.workers.free_executor(&exec.worker, &key);
        self.send_on(
            conn,
            KillExecutor {
                master_url: self.master_url.clone(),
                app_id: app_id.to_string(),
                exec_id,
            },
        );
    }

    /// Drivers first, then executors: Spark's schedule().
    pub(crate) fn schedule(&mut self) {
        if self.ha.state() != RecoveryState::Alive {
            return;
        }
        self.schedule_drivers();
        self.start_executors_on_workers();
        self.update_waiting();
    }

    /// One scheduling round over the waiting applications.
    fn start_executors_on_workers(&mut self) {
        let order: Vec<String> = self
            .apps
            .waiting
            .iter()
            .filter(|id| {
                self.apps.all.get(*id).is_some_and(|a| {
                    a.cores_left() >= a.cores_per_executor().unwrap_or(1)
                        && a.executors.len() < a.executor_limit
                })
            })
            .cloned()
            .collect();
        if order.is_empty() {
            return;
        }
        let worker_ids = self.workers.schedulable();
        let mut round: Vec<RoundWorker> = worker_ids
            .iter()
            .filter_map(|id| self.workers.get(id))
            .map(|w| RoundWorker {
                alive: true,
                free: WorkerSlot {
                    cores_free: w.cores_free(),
                    memory_free: if self.planted(crate::node::plant::Plant::IgnoresMemory) {
                        i32::MAX / 2
                    } else {
                        w.memory_free()
                    },
                    resources_free: self.resources_free(w),
                },
            })
            .collect();
        let demands: Vec<ExecutorDemand> = order
            .iter()
            .filter_map(|id| self.apps.all.get(id))
            .map(|a| ExecutorDemand {
                cores_per_executor: a.cores_per_executor(),
                memory_per_executor: a.memory_per_executor(),
                resources_per_executor: a.resources_per_executor(),
                cores_left: a.cores_left(),
                executors_now: a.executors.len(),
                executor_limit: a.executor_limit,
            })
            .collect();
        let grants = self.round_by_release(&order, &worker_ids, &mut round, &demands);
        for g in grants {
            let (Some(app_id), Some(worker_id)) = (order.get(g.app), worker_ids.get(g.worker))
            else {
                continue;
            };
            let app_id = app_id.clone();
            let worker_id = worker_id.clone();
            self.launch_executor(&app_id, &worker_id, g.cores);
        }
    }

    /// One round, Spark's when no application and no worker has a Spark release; otherwise the
    /// same round application by application (FIFO, each taking what the ones before left), each
    /// seeing only the workers of a compatible release as usable (SPEC §15.5).
    fn round_by_release(
        &self,
        order: &[String],
        worker_ids: &[String],
        round: &mut [RoundWorker],
        demands: &[ExecutorDemand],
    ) -> Vec<super::round::Grant> {
        let workers: Vec<_> = worker_ids
            .iter()
            .filter_map(|id| self.workers.get(id))
            .collect();
        let apps: Vec<_> = order
            .iter()
            .filter_map(|id| self.apps.all.get(id))
            .collect();
        let restricted = apps.iter().any(|a| a.spark_release.is_some())
            && workers.iter().any(|w| w.spark_release.is_some());
        if !restricted || workers.len() != round.len() || apps.len() != demands.len() {
            return schedule_round(round, demands, self.config.spread_out);
        }
        let mut grants = Vec::new();
        for (i, (app, demand)) in apps.iter().zip(demands).enumerate() {
            for (slot, w) in round.iter_mut().zip(&workers) {
                slot.alive = self.may_place(app, w);
            }
            let one = schedule_round(round, std::slice::from_ref(demand), self.config.spread_out);
            grants.extend(one.into_iter().map(|g| super::round::Grant { app: i, ..g }));
        }
        grants
    }

    /// Free units of each custom resource of `w` (addresses not held by its executors).
    pub(crate) fn resources_free(
        &self,
        w: &super::state::WorkerRec,
    ) -> std::collections::BTreeMap<String, i64> {
        let mut free: std::collections::BTreeMap<String, i64> = w
            .resources
            .iter()
            .map(|(name, r)| (name.clone(), r.addresses.len() as i64))
            .collect();
        for (app_id, exec_id) in w.executors.keys() {
            if let Some(held) = self
                .apps
                .all
                .get(app_id)
                .and_then(|a| a.executors.get(exec_id))
                .map(|e| &e.resources)
            {
                for (name, r) in held {
                    if let Some(n) = free.get_mut(name) {
                        *n -= r.addresses.len() as i64;
                    }
                }
            }
        }
        free
    }

    /// Addresses of each custom resource the application's executors need, taken from those
    /// free on `worker_id`.
    fn acquire_resources(&self, app: &AppRec, worker_id: &str) -> Resources {
        let mut out = Resources::new();
        let Some(w) = self.workers.get(worker_id) else {
            return out;
        };
        let needs = app.resources_per_executor();
        if needs.is_empty() {
            return out;
        }
        let mut held: std::collections::BTreeSet<(String, String)> = Default::default();
        for (a, e) in w.executors.keys() {
            if let Some(ex) = self.apps.all.get(a).and_then(|a| a.executors.get(e)) {
                for (name, r) in &ex.resources {
                    for addr in &r.addresses {
                        held.insert((name.clone(), addr.clone()));
                    }
                }
            }
        }
        for (name, need) in needs {
            let Some(have) = w.resources.get(&name) else {
                continue;
            };
            let addresses: Vec<String> = have
                .addresses
                .iter()
                .filter(|a| !held.contains(&(name.clone(), (*a).clone())))
                .take(usize::try_from(need.max(0)).unwrap_or(0))
                .cloned()
                .collect();
            out.insert(name.clone(), ResourceInformation { name, addresses });
        }
        out
    }

    /// Starts one executor of `cores` cores for `app_id` on `worker_id`: LaunchExecutor to the
    /// worker, then ExecutorAdded to the application.
    fn launch_executor(&mut self, app_id: &str, worker_id: &str, cores: i32) {
        let Some(app) = self.apps.all.get(app_id) else {
            return;
        };
        let resources = self.acquire_resources(app, worker_id);
        if self.workers.get(worker_id).is_none() {
            return;
        }
        let Some(app) = self.apps.all.get_mut(app_id) else {
            return;
        };
        let exec_id = app.next_exec_id;
        let memory = app.memory_per_executor();
        let key = (app_id.to_string(), exec_id);
        let Some((host_port, worker_conn)) =
            self.workers.take_executor(worker_id, key, cores, memory)
        else {
            return;
        };
        app.next_exec_id += 1;
        app.executors.insert(
            exec_id,
            ExecRec {
                worker: worker_id.to_string(),
                cores,
                state: ExecutorState::Launching,
                resources: resources.clone(),
                running_since: None,
            },
        );
        app.cores_granted = app.cores_granted.saturating_add(cores);
        app.state = ApplicationState::Running;
        tracing::info!("Launching executor {app_id}/{exec_id} on worker {worker_id}");
        let launch = LaunchExecutor {
            master_url: self.master_url.clone(),
            app_id: app_id.to_string(),
            exec_id,
            rp_id: app.desc.default_profile.id,
            app_desc: app.desc.clone(),
            cores,
            memory,
            resources,
        };
        let added = ExecutorAdded {
            id: exec_id,
            worker_id: worker_id.to_string(),
            host_port,
            cores,
            memory,
        };
        let app_conn = app.conn;
        self.send_on(worker_conn, launch);
        self.send_on(app_conn, added);
    }

    /// ExecutorStateChanged (the caller answers the ask `true`): forwarded to the application as
    /// ExecutorUpdated; a finished executor frees its worker, and too many abnormal ends with
    /// none running remove the application.
    pub(crate) fn executor_state_changed(&mut self, conn: ConnId, e: ExecutorStateChanged) {
        let key = (e.app_id.clone(), e.exec_id);
        let sender = self.workers.on(conn).map(str::to_string);
        let on_sender = self
            .apps
            .all
            .get(&e.app_id)
            .and_then(|a| a.executors.get(&e.exec_id))
            .is_none_or(|x| Some(&x.worker) == sender.as_ref());
        if !on_sender {
            tracing::warn!(
                "Ignoring a status update for executor {}/{} from a worker ({}) that does not run it",
                e.app_id,
                e.exec_id,
                sender.as_deref().unwrap_or("unknown")
            );
            return;
        }
        let known = self
            .apps
            .all
            .get(&e.app_id)
            .is_some_and(|a| a.executors.contains_key(&e.exec_id));
        if !known {
            let removed_before = self
                .apps
                .all
                .get(&e.app_id)
                .is_some_and(|a| e.exec_id >= 0 && e.exec_id < a.next_exec_id);
            if removed_before || self.apps.completed.iter().any(|a| a.id == e.app_id) {
                // Executors of a finished application, or killed at its request, report their
                // end after the master forgot them: the orderly course.
                tracing::info!(
                    "Executor {}/{}, no longer tracked, is {}",
                    e.app_id,
                    e.exec_id,
                    e.state
                );
            } else {
                tracing::warn!(
                    "Got status update for unknown executor {}/{}",
                    e.app_id,
                    e.exec_id
                );
            }
            self.free_orphan(sender.as_deref(), &key, e.state);
            return;
        }
        let Some(app) = self.apps.all.get_mut(&e.app_id) else {
            return;
        };
        let Some(exec) = app.executors.get_mut(&e.exec_id) else {
            return;
        };
        let old = exec.state;
        exec.state = e.state;
        if e.state == ExecutorState::Running {
            app.retry_count = 0;
            if old != ExecutorState::Running {
                exec.running_since = Some(self.clock.now);
            }
        }
        let app_conn = app.conn;
        let worker_id = exec.worker.clone();
        self.send_on(
            app_conn,
            ExecutorUpdated {
                id: e.exec_id,
                state: e.state,
                message: e.message.clone(),
                exit_status: e.exit_status,
                worker_host: None,
            },
        );
        if e.state.is_finished() {
            tracing::info!(
                "Removing executor {}/{} because it is {}",
                e.app_id,
                e.exec_id,
                e.state
            );
            let Some(app) = self.apps.all.get_mut(&e.app_id) else {
                return;
            };
            if let Some(exec) = app.executors.remove(&e.exec_id) {
                app.cores_granted = app.cores_granted.saturating_sub(exec.cores);
            }
            self.workers.free_executor(&worker_id, &key);
            let normal_exit = e.exit_status == Some(0);
            let max = self.config.max_executor_retries;
            if !normal_exit && old != ExecutorState::Decommissioned {
                let worker = Some(worker_id.as_str());
                let failure = super::waiting::failure_text(
                    e.exec_id,
                    worker,
                    e.state,
                    e.exit_status,
                    e.message.as_deref(),
                );
                app.last_failure = Some((self.clock.now, app.next_exec_id, failure));
                app.retry_count += 1;
                if app.retry_count >= max && max >= 0 {
                    let running = app
                        .executors
                        .values()
                        .any(|x| x.state == ExecutorState::Running);
                    if !running {
                        tracing::error!(
                            "Application {} with ID {} failed {} times; removing it",
                            app.desc.name,
                            app.id,
                            app.retry_count
                        );
                        self.remove_application(&e.app_id, ApplicationState::Failed);
                    }
                }
            }
        }
        self.schedule();
    }

    /// A finished executor the application no longer counts (killed, decommissioned) still
    /// frees its worker.
    fn free_orphan(&mut self, worker: Option<&str>, key: &(String, i32), state: ExecutorState) {
        if !state.is_finished() {
            return;
        }
        let freed = worker.is_some_and(|w| self.workers.free_executor(w, key).0);
        if freed {
            self.schedule();
        }
    }

    /// RequestExecutors: the application's executor limit becomes the total asked for its
    /// default profile.
    pub(crate) fn request_executors(&mut self, r: RequestExecutors) -> bool {
        let Some(app) = self.apps.all.get_mut(&r.app_id) else {
            tracing::warn!("Unknown application {} requested executors.", r.app_id);
            return false;
        };
        let profile = app.desc.default_profile.id;
        let total = r
            .resource_profile_to_total_execs
            .iter()
            .find(|p| p.profile.id == profile)
            .map(|p| p.total);
        if let Some(total) = total {
            tracing::info!(
                "Application {} requested to set total executors to {total}.",
                r.app_id
            );
            app.executor_limit = usize::try_from(total.max(0)).unwrap_or(0);
        }
        self.schedule();
        true
    }

    /// KillExecutors: kills the executors named (by numeric id) that the application has.
    pub(crate) fn kill_executors(&mut self, k: KillExecutors) -> bool {
        let Some(app) = self.apps.all.get_mut(&k.app_id) else {
            tracing::warn!(
                "Unregistered application {} requested us to kill executors!",
                k.app_id
            );
            return false;
        };
        tracing::info!(
            "Application {} requests to kill executors: {}",
            k.app_id,
            k.executor_ids.join(", ")
        );
        let mut killed = Vec::new();
        for text in &k.executor_ids {
            let Ok(id) = text.parse::<i32>() else {
                tracing::error!("Encountered executor with a non-integer ID: {text}. Ignoring");
                continue;
            };
            if let Some(exec) = app.executors.remove(&id) {
                app.cores_granted = app.cores_granted.saturating_sub(exec.cores);
                killed.push((id, exec));
            } else {
                tracing::warn!(
                    "Application {} attempted to kill non-existent executor {id}",
                    k.app_id
                );
            }
        }
        for (id, exec) in killed {
            self.kill_executor(&k.app_id, id, &exec);
        }
        self.schedule();
        true
    }

    /// MasterChangeAcknowledged: a recovered application answered; WAITING until recovery ends.
    pub(crate) fn master_change_acknowledged(&mut self, conn: ConnId, app_id: &str) {
        if let Some(bound) = self.apps.on(conn).filter(|b| *b != app_id) {
            // A connection carries one application (SPEC §14.2 Z1).
            tracing::warn!(
                "Master change ack for {app_id} over the connection of application {bound}; ignored"
            );
            return;
        }
        if self.apps.acknowledged(app_id) {
            tracing::info!("Application has been re-registered: {app_id}");
            self.apps.bind(app_id, conn);
        } else {
            tracing::warn!("Master change ack from unknown app: {app_id}");
        }
        if self.ha.state() == RecoveryState::Recovering && self.can_complete_recovery() {
            self.complete_recovery();
        }
    }
}
