//! Worker ↔ master: registration, heartbeats, decommissioning, loss, failover and the commands
//! the master sends workers.

use std::collections::VecDeque;

use super::{hold, owe, Cluster, Ctx, Exec, FormerMaster, Worker, WorkerLife, MAX_FORMER};
use crate::messages::deploy::{RegisteredWorker, WorkerSchedulerStateResponse};
use crate::messages::{DeployMessage, DriverState, ExecutorState};
use crate::validate::config::Config;
use crate::validate::conn::{PendingRegistration, WorkerConn, MAX_PENDING_REGISTRATIONS};
use crate::validate::event::ConnId;
use crate::validate::rules::Rule;
use crate::validate::sink::Sink;
use crate::validate::violation::Entity;

impl Cluster {
    /// A message from a worker to the master.
    pub(super) fn worker_sent(
        &mut self,
        w: &mut WorkerConn,
        ctx: Ctx<'_>,
        m: &DeployMessage,
        sink: &mut Sink<'_>,
    ) {
        let Ctx {
            conn: conn_id,
            master,
            ..
        } = ctx;
        let now = sink.time;
        match m {
            DeployMessage::RegisterWorker(r) => {
                if w.pending.len() >= MAX_PENDING_REGISTRATIONS {
                    w.pending.pop_front();
                }
                w.pending.push_back(PendingRegistration {
                    id: r.id.clone(),
                    host: r.host.clone(),
                    cores: r.cores,
                    memory: r.memory,
                });
                return;
            }
            DeployMessage::WorkerSchedulerStateResponse(s) => {
                if !w.master_changed {
                    sink.flag(
                        Rule::FailoverAnswer,
                        "WorkerSchedulerStateResponse only in answer to a MasterChanged on this connection",
                        Some(Entity::Worker(s.id.clone())),
                    );
                    return;
                }
                w.master_changed = false;
                if let Some(bound) = &w.worker {
                    if bound != &s.id {
                        sink.flag(
                            Rule::WorkerId,
                            format!(
                                "worker id {bound}, registered on this connection; found {}",
                                s.id
                            ),
                            Some(Entity::Worker(bound.clone())),
                        );
                        return;
                    }
                }
                w.worker = Some(s.id.clone());
                self.recover_worker(s, conn_id, master, now);
                return;
            }
            _ => {}
        }
        let Some(wid) = w.worker.clone() else {
            sink.flag(
                Rule::WorkerRegisterFirst,
                format!(
                    "only RegisterWorker until RegisteredWorker on this connection, found {}",
                    crate::messages::Family::name(m)
                ),
                None,
            );
            return;
        };
        let id_ok = |sink: &mut Sink<'_>, carried: &str| {
            sink.check(
                carried == wid,
                Rule::WorkerId,
                || format!("worker id {wid}, registered on this connection; found {carried}"),
                || Some(Entity::Worker(wid.clone())),
            )
        };
        match m {
            DeployMessage::Heartbeat(h) if id_ok(sink, &h.worker_id) => {
                if let Some(worker) = self.workers.get_mut(&wid) {
                    match worker.former.iter_mut().find(|f| f.conn == conn_id) {
                        // A heartbeat to a master the worker left counts for that master only.
                        Some(f) if worker.conn != conn_id => f.last_heartbeat = now,
                        _ => worker.last_heartbeat = now,
                    }
                }
            }
            DeployMessage::WorkerLatestState(s) if id_ok(sink, &s.id) => {
                w.reported_drivers = s.driver_ids.iter().cloned().collect();
            }
            DeployMessage::WorkerDecommissioning(d) if id_ok(sink, &d.id) => {
                self.decommission(&wid, now, true);
            }
            DeployMessage::ExecutorStateChanged(e) => self.executor_state_changed(&wid, e, sink),
            DeployMessage::DriverStateChanged(d) => self.driver_state_changed(&wid, d, sink),
            _ => {}
        }
    }

    /// A message from the master to a worker.
    pub(super) fn master_sent_worker(
        &mut self,
        w: &mut WorkerConn,
        ctx: Ctx<'_>,
        m: &DeployMessage,
        sink: &mut Sink<'_>,
    ) {
        let Ctx { master, config, .. } = ctx;
        let now = sink.time;
        match m {
            DeployMessage::RegisteredWorker(r) => self.registered(w, master, r, sink),
            DeployMessage::RegisterWorkerFailed(_) | DeployMessage::MasterInStandby(_) => {
                if w.pending.pop_front().is_none() {
                    sink.flag(
                        Rule::WorkerRegisterAnswer,
                        "a RegisterWorkerResponse only in answer to a pending RegisterWorker",
                        None,
                    );
                }
            }
            DeployMessage::MasterChanged(_) => w.master_changed = true,
            // The master asks a worker to register again only once it lost it (Spark sends it
            // in answer to a heartbeat from a worker it removed, e.g. after a timeout the
            // validator had no other sign of): from here on the worker is lost.
            DeployMessage::ReconnectWorker(_) => {
                if let Some(wid) = w.worker.clone() {
                    if self
                        .workers
                        .get(&wid)
                        .is_some_and(|x| x.life != WorkerLife::Lost)
                    {
                        self.lose_worker(&wid, now);
                    }
                }
            }
            DeployMessage::LaunchExecutor(l) => {
                let target = self.alive_target(w, config, sink);
                self.launch_executor(target.as_deref(), l, config, sink);
            }
            DeployMessage::LaunchDriver(l) => {
                let target = self.alive_target(w, config, sink);
                self.launch_driver(target.as_deref(), l, sink);
            }
            other => {
                let Some(wid) = w.worker.clone() else {
                    sink.flag(
                        Rule::WorkerCommandsRegistered,
                        format!(
                            "{} only to a worker registered on this connection",
                            crate::messages::Family::name(other)
                        ),
                        None,
                    );
                    return;
                };
                match other {
                    DeployMessage::KillExecutor(k) => {
                        let workers = &mut self.workers;
                        if let Some(x) = self
                            .execs
                            .get_mut(&k.app_id)
                            .and_then(|e| e.live.get_mut(&k.exec_id))
                        {
                            if x.holds {
                                hold(
                                    workers,
                                    &x.worker,
                                    -i64::from(x.cores),
                                    -i64::from(x.memory),
                                );
                            }
                            x.holds = false;
                            x.killed = true;
                            x.owed.clear();
                        }
                    }
                    DeployMessage::KillDriver(k) => {
                        let reported = w.reported_drivers.remove(&k.driver_id);
                        self.kill_driver(&wid, &k.driver_id, reported, config, sink)
                    }
                    DeployMessage::ApplicationFinished(a) => {
                        sink.check(
                            !self.apps.contains_key(&a.id),
                            Rule::AppFinishedNotice,
                            || format!("ApplicationFinished only once {} has finished", a.id),
                            || Some(Entity::App(a.id.clone())),
                        );
                    }
                    DeployMessage::DecommissionWorker(_) => self.decommission(&wid, now, false),
                    _ => {}
                }
            }
        }
    }

    /// RegisteredWorker: answers the oldest pending RegisterWorker.
    fn registered(
        &mut self,
        w: &mut WorkerConn,
        master: &str,
        r: &RegisteredWorker,
        sink: &mut Sink<'_>,
    ) {
        let Some(reg) = w.pending.pop_front() else {
            sink.flag(
                Rule::WorkerRegisterAnswer,
                "RegisteredWorker only in answer to a pending RegisterWorker",
                None,
            );
            return;
        };
        let known = self.workers.get(&reg.id);
        let alive = known.is_some_and(|x| x.life != WorkerLife::Lost);
        // A new master may know the worker from its persisted state (Spark's UNKNOWN workers,
        // answered with duplicate = true): either answer is then legal.
        let recovered = known.is_some_and(|x| x.life == WorkerLife::Lost && x.master != master);
        if alive != r.duplicate && !recovered {
            let expected = if alive {
                format!(
                    "RegisterWorkerFailed or RegisteredWorker with duplicate = true: worker {} is already registered",
                    reg.id
                )
            } else {
                format!(
                    "RegisteredWorker with duplicate = false: worker {} is new",
                    reg.id
                )
            };
            sink.flag(
                Rule::WorkerDuplicateId,
                expected,
                Some(Entity::Worker(reg.id.clone())),
            );
        }
        if !alive {
            let conn = sink.conn.unwrap_or_default();
            self.workers.insert(
                reg.id.clone(),
                Worker {
                    host: reg.host,
                    master: master.to_string(),
                    life: WorkerLife::Alive,
                    capacity: Some((i64::from(reg.cores), i64::from(reg.memory))),
                    used: (0, 0),
                    last_heartbeat: sink.time,
                    conn,
                    former: Vec::new(),
                },
            );
        }
        w.worker = Some(reg.id);
    }

    /// The worker on `w` when it may be given an executor or driver (rule W5).
    fn alive_target(&self, w: &WorkerConn, config: &Config, sink: &mut Sink<'_>) -> Option<String> {
        let Some(wid) = &w.worker else {
            sink.flag(
                Rule::WorkerLaunchAlive,
                "launches only to a worker registered on this connection",
                None,
            );
            return None;
        };
        let life = self.workers.get(wid).map(|x| x.life);
        let ok = match life {
            Some(WorkerLife::Alive) => true,
            Some(WorkerLife::Decommissioned { at, by_worker }) => {
                by_worker && config.crossed(at, sink.time)
            }
            Some(WorkerLife::Lost) | None => false,
        };
        if !ok {
            let state = match life {
                Some(WorkerLife::Decommissioned { .. }) => "DECOMMISSIONED",
                _ => "DEAD",
            };
            sink.flag(
                Rule::WorkerLaunchAlive,
                format!("launches only to an ALIVE worker; {wid} is {state}"),
                Some(Entity::Worker(wid.clone())),
            );
        }
        Some(wid.clone())
    }

    /// Marks a worker decommissioned (once).
    pub(super) fn decommission(&mut self, wid: &str, now: u64, by_worker: bool) {
        if let Some(w) = self.workers.get_mut(wid) {
            if w.life == WorkerLife::Alive {
                w.life = WorkerLife::Decommissioned { at: now, by_worker };
            }
        }
    }

    /// Whether `master` may consider `wid` lost at `now`: lost already, or silent for the
    /// worker timeout. A timed-out worker is lost from then on. A master the worker left for
    /// another judges by its own connection to it: lost once that closed or went silent for
    /// the worker timeout.
    pub(super) fn lost_or_timed_out(
        &mut self,
        wid: &str,
        master: &str,
        now: u64,
        config: &Config,
    ) -> bool {
        let Some(w) = self.workers.get(wid) else {
            return false;
        };
        if !master.is_empty() && w.master != master {
            if let Some(f) = w.former.iter().rev().find(|f| f.master == master) {
                return f.lost || now.saturating_sub(f.last_heartbeat) >= config.worker_timeout_ms;
            }
        }
        if w.life == WorkerLife::Lost {
            return true;
        }
        if now.saturating_sub(w.last_heartbeat) >= config.worker_timeout_ms {
            self.lose_worker(wid, now);
            return true;
        }
        false
    }

    /// The master lost a worker: its executors are LOST (owed to their applications with
    /// workerHost), its drivers relaunched (supervised) or ended in ERROR.
    pub(crate) fn lose_worker(&mut self, wid: &str, now: u64) {
        let Some(w) = self.workers.get_mut(wid) else {
            return;
        };
        w.life = WorkerLife::Lost;
        w.used = (0, 0);
        for (app, execs) in self.execs.iter_mut() {
            let active = self.apps.contains_key(app);
            let mut gone = Vec::new();
            for (id, x) in execs.live.iter_mut() {
                if x.worker != wid || x.state.is_finished() {
                    continue;
                }
                self.lost_with_worker
                    .insert((app.clone(), *id), wid.to_string());
                x.state = ExecutorState::Lost;
                x.holds = false;
                if active && !x.killed {
                    owe(x, ExecutorState::Lost, true);
                } else {
                    gone.push(*id);
                }
            }
            for id in gone {
                execs.live.remove(&id);
                execs.finished.insert(id, ());
            }
        }
        let on_worker: Vec<String> = self
            .drivers
            .iter()
            .filter(|(_, d)| d.worker.as_deref() == Some(wid))
            .map(|(id, _)| id.clone())
            .collect();
        for id in on_worker {
            let supervise = self.drivers.get(&id).is_some_and(|d| d.supervise);
            if supervise {
                self.set_driver_state(&id, DriverState::Relaunching, None, now);
            } else {
                self.end_driver(&id, DriverState::Error, now, true);
            }
        }
    }

    /// Failover: a worker answered a new master's MasterChanged with what it runs.
    fn recover_worker(
        &mut self,
        s: &WorkerSchedulerStateResponse,
        conn: ConnId,
        master: &str,
        now: u64,
    ) {
        let (host, capacity, mut former) = match self.workers.get(&s.id) {
            Some(w) => (w.host.clone(), w.capacity, w.former.clone()),
            None => (String::new(), None, Vec::new()),
        };
        // The master it leaves may still hold it (a deposed leader that has not heard of it).
        if let Some(w) = self.workers.get(&s.id) {
            if w.master != master && w.life != WorkerLife::Lost {
                former.retain(|f| f.master != w.master);
                if former.len() >= MAX_FORMER {
                    former.remove(0);
                }
                former.push(FormerMaster {
                    master: w.master.clone(),
                    conn: w.conn,
                    last_heartbeat: w.last_heartbeat,
                    lost: false,
                });
            }
        }
        former.retain(|f| f.master != master);
        self.workers.insert(
            s.id.clone(),
            Worker {
                host,
                master: master.to_string(),
                life: WorkerLife::Alive,
                capacity,
                used: (0, 0),
                last_heartbeat: now,
                conn,
                former,
            },
        );
        for e in &s.exec_responses {
            let d = &e.desc;
            if d.state.is_finished() {
                continue;
            }
            // The new master knows it again: its worker's reports are judged from here on.
            self.lost_with_worker.remove(&(d.app_id.clone(), d.exec_id));
            let execs = self.execs_of(&d.app_id);
            execs.finished.remove(&d.exec_id);
            let state = d.state;
            execs.live.insert(
                d.exec_id,
                Exec {
                    worker: s.id.clone(),
                    cores: d.cores,
                    memory: d.memory_mb,
                    state,
                    holds: true,
                    killed: false,
                    added: true,
                    owed: VecDeque::new(),
                },
            );
            hold(
                &mut self.workers,
                &s.id,
                i64::from(d.cores),
                i64::from(d.memory_mb),
            );
        }
        for d in &s.driver_responses {
            self.recover_driver(&d.driver_id, &s.id, now);
        }
    }
}
