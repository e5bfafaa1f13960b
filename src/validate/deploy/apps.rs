//! Application client ↔ master, and the executors the master launches for applications.

use std::collections::VecDeque;

use super::{
    exec_rank, hold, owe, App, Cluster, Ctx, EarlyAdd, Exec, FinishedApp, MAX_EARLY_ADDED,
};
use crate::messages::deploy::{
    ExecutorAdded, ExecutorStateChanged, ExecutorUpdated, LaunchExecutor, WorkerRemoved,
};
use crate::messages::{DeployMessage, ExecutorState, Family};
use crate::validate::config::Config;
use crate::validate::conn::AppConn;
use crate::validate::history::History;
use crate::validate::rules::Rule;
use crate::validate::sink::Sink;
use crate::validate::violation::Entity;

impl Cluster {
    /// A message from an application client to the master.
    pub(super) fn client_sent(
        &mut self,
        a: &mut AppConn,
        ctx: Ctx<'_>,
        m: &DeployMessage,
        sink: &mut Sink<'_>,
    ) {
        self.app_side = true;
        let Ctx {
            conn: conn_id,
            config,
            ..
        } = ctx;
        let now = sink.time;
        match m {
            DeployMessage::RegisterApplication(_) => {
                a.pending = a.pending.saturating_add(1);
                return;
            }
            DeployMessage::MasterChangeAcknowledged(ack) => {
                if !a.master_changed {
                    sink.flag(
                        Rule::FailoverAnswer,
                        "MasterChangeAcknowledged only in answer to a MasterChanged on this connection",
                        Some(Entity::App(ack.app_id.clone())),
                    );
                    return;
                }
                a.master_changed = false;
                if let Some(bound) = &a.app {
                    if bound != &ack.app_id {
                        sink.flag(
                            Rule::AppId,
                            format!(
                                "app id {bound}, registered on this connection; found {}",
                                ack.app_id
                            ),
                            Some(Entity::App(bound.clone())),
                        );
                        return;
                    }
                }
                a.app = Some(ack.app_id.clone());
                // The master that recovered the application numbers its executors again from
                // after those its workers report (Spark's ApplicationInfo.newExecutorId): the
                // ids of executors that ended or were lost before the failover may be launched
                // again (rule E1).
                let cap = self.cap;
                if let Some(execs) = self.execs.get_mut(&ack.app_id) {
                    execs.finished = History::new(cap);
                    execs.live.retain(|_, x| x.holds && !x.state.is_finished());
                }
                self.finished_apps.remove(&ack.app_id);
                self.apps.insert(
                    ack.app_id.clone(),
                    App {
                        conn: Some(conn_id),
                    },
                );
                return;
            }
            _ => {}
        }
        let Some(app) = a.app.clone() else {
            sink.flag(
                Rule::AppRegisterFirst,
                format!(
                    "only RegisterApplication until RegisteredApplication on this connection, found {}",
                    m.name()
                ),
                None,
            );
            return;
        };
        let carried = match m {
            DeployMessage::UnregisterApplication(u) => Some(&u.app_id),
            DeployMessage::RequestExecutors(r) => Some(&r.app_id),
            DeployMessage::KillExecutors(k) => Some(&k.app_id),
            _ => None,
        };
        if let Some(carried) = carried {
            if carried != &app {
                sink.flag(
                    Rule::AppId,
                    format!("app id {app}, registered on this connection; found {carried}"),
                    Some(Entity::App(app)),
                );
                return;
            }
        }
        if !self.app_open_for(&app, false, config, sink) {
            return;
        }
        if let DeployMessage::UnregisterApplication(_) = m {
            self.finish_app(&app, now, true);
        }
    }

    /// Whether messages about `app` may still flow at the event's time (rule P5). `from_master`
    /// says who sends.
    fn app_open_for(
        &self,
        app: &str,
        from_master: bool,
        config: &Config,
        sink: &mut Sink<'_>,
    ) -> bool {
        let now = sink.time;
        let Some(f) = self.finished_apps.get(app) else {
            return true;
        };
        if self.apps.contains_key(app) || (f.by_client == from_master && config.crossed(f.at, now))
        {
            return true;
        }
        sink.flag(
            Rule::AppAfterFinish,
            format!(
                "nothing about application {app} after it finished at {} ms",
                f.at
            ),
            Some(Entity::App(app.to_string())),
        );
        false
    }

    /// A message from the master to an application client.
    pub(super) fn master_sent_client(
        &mut self,
        a: &mut AppConn,
        ctx: Ctx<'_>,
        m: &DeployMessage,
        sink: &mut Sink<'_>,
    ) {
        let Ctx {
            conn: conn_id,
            config,
            ..
        } = ctx;
        let now = sink.time;
        match m {
            DeployMessage::RegisteredApplication(r) => {
                if a.pending == 0 {
                    sink.flag(
                        Rule::AppRegisterAnswer,
                        "RegisteredApplication only in answer to a pending RegisterApplication",
                        Some(Entity::App(r.app_id.clone())),
                    );
                    return;
                }
                a.pending -= 1;
                if self.apps.contains_key(&r.app_id) || self.finished_apps.contains(&r.app_id) {
                    sink.flag(
                        Rule::AppRegisterAnswer,
                        format!("a new app id; {} was given before", r.app_id),
                        Some(Entity::App(r.app_id.clone())),
                    );
                    return;
                }
                self.apps.insert(
                    r.app_id.clone(),
                    App {
                        conn: Some(conn_id),
                    },
                );
                a.app = Some(r.app_id.clone());
            }
            DeployMessage::MasterChanged(_) => a.master_changed = true,
            other => {
                let Some(app) = a.app.clone() else {
                    if let (true, DeployMessage::WorkerRemoved(r)) = (a.master_changed, other) {
                        // A recovering master tells every application it recovered, acknowledged
                        // or not, that a worker is gone (Spark's Master.removeWorker sends
                        // WorkerRemoved to every application not completed, and completeRecovery
                        // removes the silent workers before it finishes the silent applications).
                        self.worker_removed(r, ctx.master, config, sink);
                        return;
                    }
                    let rule = match other {
                        DeployMessage::ExecutorUpdated(_) => Rule::ExecutorUpdatedMatches,
                        DeployMessage::ExecutorAdded(_) => Rule::ExecutorAddedMatches,
                        _ => Rule::AppAfterFinish,
                    };
                    sink.flag(
                        rule,
                        format!("{} only to a registered application", other.name()),
                        None,
                    );
                    return;
                };
                if let DeployMessage::WorkerRemoved(r) = other {
                    self.worker_removed(r, ctx.master, config, sink);
                }
                if !self.app_open_for(&app, true, config, sink) {
                    return;
                }
                if !self.apps.contains_key(&app) {
                    // Crossed the client's goodbye on the wire: the master still saw the
                    // application active, a view this validator no longer holds.
                    return;
                }
                match other {
                    DeployMessage::ExecutorAdded(e) => {
                        self.executor_added(&app, e, ctx.master, config, sink)
                    }
                    DeployMessage::ExecutorUpdated(e) => {
                        self.executor_updated(&app, e, ctx.master, config, sink)
                    }
                    DeployMessage::ApplicationRemoved(_) if self.apps.contains_key(&app) => {
                        self.finish_app(&app, now, false);
                    }
                    _ => {}
                }
            }
        }
    }

    /// The application finished: its executors are killed and free their worker's resources.
    pub(super) fn finish_app(&mut self, app: &str, now: u64, by_client: bool) {
        self.apps.remove(app);
        self.finished_apps
            .insert(app.to_string(), FinishedApp { at: now, by_client });
        let workers = &mut self.workers;
        if let Some(execs) = self.execs.get_mut(app) {
            for x in execs.live.values_mut() {
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
            let done: Vec<i32> = execs
                .live
                .iter()
                .filter(|(_, x)| x.state.is_finished())
                .map(|(id, _)| *id)
                .collect();
            for id in done {
                execs.live.remove(&id);
                execs.finished.insert(id, ());
            }
        }
        self.forget_execs_of_finished(app);
    }

    /// Drops the executor records of a finished application once none is live, so memory stays
    /// bounded over many applications.
    pub(super) fn forget_execs_of_finished(&mut self, app: &str) {
        if !self.apps.contains_key(app) && self.execs.get(app).is_some_and(|e| e.live.is_empty()) {
            self.execs.remove(app);
        }
    }

    /// LaunchExecutor to `worker` (already checked by rule W5).
    pub(super) fn launch_executor(
        &mut self,
        worker: Option<&str>,
        l: &LaunchExecutor,
        config: &Config,
        sink: &mut Sink<'_>,
    ) {
        let now = sink.time;
        let entity = || {
            Some(Entity::AppExecutor {
                app: l.app_id.clone(),
                exec: l.exec_id,
            })
        };
        // A trace without application clients (a worker's own) holds no registration: the
        // application is out of view.
        if self.app_side && !self.apps.contains_key(&l.app_id) {
            let crossed = self
                .finished_apps
                .get(&l.app_id)
                .is_some_and(|f| f.by_client && config.crossed(f.at, now));
            if !crossed {
                sink.flag(
                    Rule::AppLaunchActive,
                    format!(
                        "executors only for a registered, unfinished application; {} is not",
                        l.app_id
                    ),
                    Some(Entity::App(l.app_id.clone())),
                );
                return;
            }
        }
        let Some(wid) = worker else {
            return;
        };
        // An id launched again (after a failover, rule E1) names a new executor.
        self.lost_with_worker.remove(&(l.app_id.clone(), l.exec_id));
        let execs = self.execs_of(&l.app_id);
        if execs.live.contains_key(&l.exec_id) || execs.finished.contains(&l.exec_id) {
            sink.flag(
                Rule::ExecutorLaunchUnique,
                format!(
                    "a new executor id for {}; {} was launched before",
                    l.app_id, l.exec_id
                ),
                entity(),
            );
            return;
        }
        execs.live.insert(
            l.exec_id,
            Exec {
                worker: wid.to_string(),
                cores: l.cores,
                memory: l.memory,
                state: ExecutorState::Launching,
                holds: true,
                killed: false,
                added: false,
                owed: VecDeque::new(),
            },
        );
        self.check_capacity(wid, i64::from(l.cores), i64::from(l.memory), sink);
        self.match_early_add(l, wid, config, sink);
        hold(
            &mut self.workers,
            wid,
            i64::from(l.cores),
            i64::from(l.memory),
        );
    }

    /// E4 for an ExecutorAdded seen before the LaunchExecutor `l` to `wid`: it must have come within
    /// the crossing window and match the launch.
    fn match_early_add(
        &mut self,
        l: &LaunchExecutor,
        wid: &str,
        config: &Config,
        sink: &mut Sink<'_>,
    ) {
        let Some(EarlyAdd { added: e, at, .. }) =
            self.early_added.remove(&(l.app_id.clone(), l.exec_id))
        else {
            return;
        };
        let entity = Some(Entity::AppExecutor {
            app: l.app_id.clone(),
            exec: l.exec_id,
        });
        if !config.crossed(at, sink.time) {
            sink.flag(
                Rule::ExecutorAddedMatches,
                format!(
                    "ExecutorAdded only after LaunchExecutor of {}/{}, or at most {} ms before it",
                    l.app_id, l.exec_id, config.crossing_window_ms
                ),
                entity.clone(),
            );
        } else if wid != e.worker_id || l.cores != e.cores || l.memory != e.memory {
            sink.flag(
                Rule::ExecutorAddedMatches,
                format!(
                    "the launch's worker {wid}, {} cores, {} MiB; found {}, {} cores, {} MiB",
                    l.cores, l.memory, e.worker_id, e.cores, e.memory
                ),
                entity.clone(),
            );
        }
        if let Some(x) = self
            .execs
            .get_mut(&l.app_id)
            .and_then(|x| x.live.get_mut(&l.exec_id))
        {
            x.added = true;
        }
    }

    /// Rule W8: `cores` and `mem` more fit on `wid`.
    pub(super) fn check_capacity(&self, wid: &str, cores: i64, mem: i64, sink: &mut Sink<'_>) {
        let Some(w) = self.workers.get(wid) else {
            return;
        };
        if let Some((cap_cores, cap_mem)) = w.capacity {
            let (free_cores, free_mem) = (cap_cores - w.used.0, cap_mem - w.used.1);
            if cores > free_cores || mem > free_mem {
                sink.flag(
                    Rule::WorkerCapacity,
                    format!(
                        "at most {free_cores} cores and {free_mem} MiB free on {wid} ({cap_cores} cores, {cap_mem} MiB registered); asked {cores} cores, {mem} MiB"
                    ),
                    Some(Entity::Worker(wid.to_string())),
                );
            }
        }
    }

    /// ExecutorStateChanged from worker `wid`.
    pub(super) fn executor_state_changed(
        &mut self,
        wid: &str,
        e: &ExecutorStateChanged,
        sink: &mut Sink<'_>,
    ) {
        let entity = || {
            Some(Entity::AppExecutor {
                app: e.app_id.clone(),
                exec: e.exec_id,
            })
        };
        let key = (e.app_id.clone(), e.exec_id);
        if self.lost_with_worker.get(&key).is_some_and(|w| w == wid) {
            // Its master declared it LOST with this worker (a worker paused or cut off past the
            // worker timeout, that reports what it ran once it runs again): the master no longer
            // knows the executor and ignores the report (rule E3's exception).
            return;
        }
        let active = self.apps.contains_key(&e.app_id);
        // A repeated final state of an executor that already finished: Spark's worker reports
        // its executors again when it shuts down, and the master ignores what it no longer knows.
        let repeat = e.state.is_finished();
        let workers = &mut self.workers;
        let Some(execs) = self.execs.get_mut(&e.app_id) else {
            if repeat && self.finished_apps.get(&e.app_id).is_some() {
                return;
            }
            sink.flag(
                Rule::ExecutorStateFromHost,
                format!(
                    "state changes only for executors launched on {wid}; {}/{} was not",
                    e.app_id, e.exec_id
                ),
                entity(),
            );
            return;
        };
        let Some(x) = execs.live.get_mut(&e.exec_id) else {
            if repeat && execs.finished.contains(&e.exec_id) {
                return;
            }
            if execs.finished.contains(&e.exec_id) {
                sink.flag(
                    Rule::ExecutorTransition,
                    format!("nothing after executor {}/{} finished", e.app_id, e.exec_id),
                    entity(),
                );
            } else {
                sink.flag(
                    Rule::ExecutorStateFromHost,
                    format!(
                        "state changes only for executors launched on {wid}; {}/{} was not",
                        e.app_id, e.exec_id
                    ),
                    entity(),
                );
            }
            return;
        };
        if x.worker != wid {
            sink.flag(
                Rule::ExecutorStateFromHost,
                format!(
                    "state changes of {}/{} only from {}, its worker",
                    e.app_id, e.exec_id, x.worker
                ),
                entity(),
            );
            return;
        }
        if exec_rank(e.state) <= exec_rank(x.state) {
            let expected = if x.state.is_finished() {
                format!("nothing after {} (a finished state)", x.state)
            } else {
                format!("a state after {}, found {}", x.state, e.state)
            };
            sink.flag(Rule::ExecutorTransition, expected, entity());
            return;
        }
        x.state = e.state;
        if active && !x.killed {
            owe(x, e.state, false);
        }
        if e.state.is_finished() {
            if x.holds {
                hold(
                    workers,
                    &x.worker,
                    -i64::from(x.cores),
                    -i64::from(x.memory),
                );
            }
            x.holds = false;
            if x.owed.is_empty() {
                execs.live.remove(&e.exec_id);
                execs.finished.insert(e.exec_id, ());
            }
        }
        self.forget_execs_of_finished(&e.app_id);
    }

    /// ExecutorAdded to application `app` from the master `master`.
    fn executor_added(
        &mut self,
        app: &str,
        e: &ExecutorAdded,
        master: &str,
        config: &Config,
        sink: &mut Sink<'_>,
    ) {
        let entity = || {
            Some(Entity::AppExecutor {
                app: app.to_string(),
                exec: e.id,
            })
        };
        let Some(x) = self.execs.get_mut(app).and_then(|x| x.live.get_mut(&e.id)) else {
            // E4, early add: the master sends LaunchExecutor and ExecutorAdded on different
            // connections, so the add may be seen first; it is checked when the launch comes.
            let launched = self
                .execs
                .get(app)
                .is_some_and(|x| x.finished.contains(&e.id));
            if !config.strict_order && !launched && self.early_added.len() < MAX_EARLY_ADDED {
                self.early_added.insert(
                    (app.to_string(), e.id),
                    EarlyAdd {
                        added: e.clone(),
                        at: sink.time,
                        master: master.to_string(),
                    },
                );
                self.early_order
                    .push_back((sink.time, app.to_string(), e.id));
                return;
            }
            sink.flag(
                Rule::ExecutorAddedMatches,
                format!("ExecutorAdded only after LaunchExecutor of {app}/{}", e.id),
                entity(),
            );
            return;
        };
        if x.added {
            sink.flag(
                Rule::ExecutorAddedMatches,
                "ExecutorAdded once per executor",
                entity(),
            );
        } else if x.worker != e.worker_id || x.cores != e.cores || x.memory != e.memory {
            sink.flag(
                Rule::ExecutorAddedMatches,
                format!(
                    "the launch's worker {}, {} cores, {} MiB; found {}, {} cores, {} MiB",
                    x.worker, x.cores, x.memory, e.worker_id, e.cores, e.memory
                ),
                entity(),
            );
        }
        x.added = true;
    }

    /// ExecutorUpdated to application `app`.
    fn executor_updated(
        &mut self,
        app: &str,
        e: &ExecutorUpdated,
        master: &str,
        config: &Config,
        sink: &mut Sink<'_>,
    ) {
        let now = sink.time;
        let entity = || {
            Some(Entity::AppExecutor {
                app: app.to_string(),
                exec: e.id,
            })
        };
        let with_host = e.worker_host.is_some();
        let Some(x) = self.execs.get(app).and_then(|x| x.live.get(&e.id)) else {
            sink.flag(
                Rule::ExecutorUpdatedMatches,
                format!(
                    "ExecutorUpdated only about a live executor of {app}; {} is not one",
                    e.id
                ),
                entity(),
            );
            return;
        };
        let worker = x.worker.clone();
        let front = x.owed.front().copied();
        let host_matches = |c: &Cluster| {
            let known = c
                .workers
                .get(&worker)
                .map(|w| w.host.as_str())
                .unwrap_or("");
            match e.worker_host.as_deref() {
                Some(h) if !h.is_empty() && !known.is_empty() => h == known,
                _ => true,
            }
        };
        let former = !master.is_empty()
            && self
                .workers
                .get(&worker)
                .is_some_and(|w| w.master != master && w.former.iter().any(|f| f.master == master));
        if former && e.state == ExecutorState::Lost && with_host {
            // A master the worker left (a deposed leader that has not heard of it) speaks from
            // its own view: LOST once its own connection to the worker closed or went silent.
            // The executor itself now belongs to the worker's current master.
            if !self.lost_or_timed_out(&worker, master, now, config) {
                sink.flag(
                    Rule::WorkerRemovedWhenLost,
                    format!("LOST with workerHost only once worker {worker} is lost"),
                    Some(Entity::Worker(worker.clone())),
                );
            }
            return;
        }
        if front.is_none() && e.state == ExecutorState::Lost && with_host {
            if !self.lost_or_timed_out(&worker, master, now, config) {
                sink.flag(
                    Rule::WorkerRemovedWhenLost,
                    format!("LOST with workerHost only once worker {worker} is lost"),
                    Some(Entity::Worker(worker.clone())),
                );
                return;
            }
        } else if e.state == ExecutorState::Decommissioned
            && with_host
            && front != Some((e.state, true))
        {
            let live = !x.state.is_finished();
            let ok = live && host_matches(self);
            if ok {
                self.decommission(&worker, now, false);
            } else {
                sink.flag(
                    Rule::ExecutorUpdatedMatches,
                    "DECOMMISSIONED with workerHost only for a live executor, naming its worker's host",
                    entity(),
                );
            }
            return;
        }
        if with_host && !host_matches(self) {
            sink.flag(
                Rule::WorkerRemovedWhenLost,
                format!("workerHost naming the host of worker {worker}"),
                Some(Entity::Worker(worker.clone())),
            );
        }
        let Some(execs) = self.execs.get_mut(app) else {
            return;
        };
        let Some(x) = execs.live.get_mut(&e.id) else {
            return;
        };
        match x.owed.front().copied() {
            Some(want) if want == (e.state, with_host) => {
                x.owed.pop_front();
            }
            other => {
                let expected = match other {
                    Some((s, true)) => format!("{s} with workerHost, the next state owed"),
                    Some((s, false)) => format!("{s}, the next state its worker reported"),
                    None => "no update: the worker reported no new state".to_string(),
                };
                sink.flag(Rule::ExecutorUpdatedMatches, expected, entity());
                return;
            }
        }
        if x.state.is_finished() && x.owed.is_empty() {
            execs.live.remove(&e.id);
            execs.finished.insert(e.id, ());
        }
    }

    /// WorkerRemoved: the worker must be lost, and named with its host (rule W7).
    fn worker_removed(
        &mut self,
        r: &WorkerRemoved,
        master: &str,
        config: &Config,
        sink: &mut Sink<'_>,
    ) {
        let entity = || Some(Entity::Worker(r.id.clone()));
        if !self.lost_or_timed_out(&r.id, master, sink.time, config) {
            sink.flag(
                Rule::WorkerRemovedWhenLost,
                format!("WorkerRemoved only once worker {} is lost", r.id),
                entity(),
            );
            return;
        }
        if let Some(w) = self.workers.get(&r.id) {
            if !w.host.is_empty() && w.host != r.host {
                sink.flag(
                    Rule::WorkerRemovedWhenLost,
                    format!("the worker's host {}, found {}", w.host, r.host),
                    entity(),
                );
            }
        }
    }
}

impl Cluster {
    /// The trace holds a connection between a worker and `master`: that master's LaunchExecutors
    /// are in view.
    pub(crate) fn worker_side_seen(&mut self, master: &str) {
        if !self.worker_side.contains(master) {
            self.worker_side.insert(master.to_string());
        }
    }

    /// Rule E4 once the trace's clock `now` has passed the crossing window of an ExecutorAdded
    /// still waiting for its LaunchExecutor: reported (when its master's worker side is in view)
    /// and forgotten.
    pub(crate) fn overdue_adds(&mut self, now: u64, config: &Config, sink: &mut Sink<'_>) {
        while let Some((at, _, _)) = self.early_order.front() {
            if config.crossed(*at, now) {
                return;
            }
            let Some((at, app, exec)) = self.early_order.pop_front() else {
                return;
            };
            let key = (app, exec);
            // Matched by its launch since, or replaced by a later add of the same executor.
            match self.early_added.get(&key) {
                Some(e) if e.at == at => {}
                _ => continue,
            }
            let Some(early) = self.early_added.remove(&key) else {
                continue;
            };
            let (app, exec) = key;
            if self.worker_side.contains(&early.master) {
                sink.flag(
                    Rule::ExecutorAddedMatches,
                    format!(
                        "the LaunchExecutor of {app}/{exec} at most {} ms after its ExecutorAdded at {at} ms; none by {now} ms",
                        config.crossing_window_ms
                    ),
                    Some(Entity::AppExecutor { app, exec }),
                );
            }
        }
    }

    /// The end of the trace: every ExecutorAdded still waiting for its LaunchExecutor, from a
    /// master whose worker side the trace holds, breaks rule N1. Call after
    /// [`overdue_adds`](Self::overdue_adds).
    pub(crate) fn finish(&mut self, sink: &mut Sink<'_>) {
        let mut left: Vec<((String, i32), EarlyAdd)> = self.early_added.drain().collect();
        self.early_order.clear();
        left.sort_unstable_by(|a, b| (a.1.at, &a.0).cmp(&(b.1.at, &b.0)));
        for ((app, exec), early) in left {
            if !self.worker_side.contains(&early.master) {
                continue;
            }
            sink.flag(
                Rule::EndExecutorAddedLaunched,
                format!(
                    "the LaunchExecutor of {app}/{exec} (told to the application at {} ms, on worker {}) in the trace",
                    early.at, early.added.worker_id
                ),
                Some(Entity::AppExecutor { app, exec }),
            );
        }
    }
}
