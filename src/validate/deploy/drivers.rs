//! Drivers submitted in cluster mode: DriverClient ↔ master asks, and the master launching,
//! killing and hearing about drivers on workers.

use super::{hold, Cluster, Driver, FinishedDriver};
use crate::messages::deploy::{DriverStateChanged, LaunchDriver};
use crate::messages::{DeployMessage, DriverState};
use crate::validate::config::Config;
use crate::validate::conn::AskDetail;
use crate::validate::rules::Rule;
use crate::validate::sink::Sink;
use crate::validate::violation::Entity;

fn is_final(s: DriverState) -> bool {
    matches!(
        s,
        DriverState::Error | DriverState::Finished | DriverState::Killed | DriverState::Failed
    )
}

impl Cluster {
    /// Changes a live driver's state, remembering the previous one.
    pub(super) fn set_driver_state(
        &mut self,
        id: &str,
        state: DriverState,
        worker: Option<String>,
        now: u64,
    ) {
        let Some(d) = self.drivers.get_mut(id) else {
            return;
        };
        if let Some(w) = d.worker.take() {
            hold(&mut self.workers, &w, -d.cores, -d.mem);
        }
        d.prev = Some((d.state, now));
        d.state = state;
        d.worker = worker;
    }

    /// Ends a driver in a final state.
    pub(super) fn end_driver(&mut self, id: &str, state: DriverState, now: u64, by_worker: bool) {
        if let Some(d) = self.drivers.remove(id) {
            if let Some(w) = &d.worker {
                hold(&mut self.workers, w, -d.cores, -d.mem);
            }
        }
        self.finished_drivers.insert(
            id.to_string(),
            FinishedDriver {
                state,
                at: now,
                by_worker,
            },
        );
    }

    /// Failover: a worker reports it runs driver `id`.
    pub(super) fn recover_driver(&mut self, id: &str, worker: &str, now: u64) {
        self.finished_drivers.remove(id);
        let d = self.drivers.entry(id.to_string()).or_insert(Driver {
            state: DriverState::Submitted,
            worker: None,
            cores: 0,
            mem: 0,
            supervise: false,
            prev: None,
            answered: false,
        });
        d.prev = Some((d.state, now));
        d.state = DriverState::Running;
        d.worker = Some(worker.to_string());
        let (cores, mem) = (d.cores, d.mem);
        hold(&mut self.workers, worker, cores, mem);
    }

    /// LaunchDriver to `worker` (already checked by rule W5).
    pub(super) fn launch_driver(
        &mut self,
        worker: Option<&str>,
        l: &LaunchDriver,
        sink: &mut Sink<'_>,
    ) {
        let entity = || Some(Entity::Driver(l.driver_id.clone()));
        if self.finished_drivers.contains(&l.driver_id) {
            sink.flag(
                Rule::DriverAfterFinish,
                format!("no LaunchDriver for {}: it finished", l.driver_id),
                entity(),
            );
            return;
        }
        if let Some(d) = self.drivers.get(&l.driver_id) {
            if d.state == DriverState::Running {
                sink.flag(
                    Rule::DriverLaunch,
                    format!(
                        "LaunchDriver only for a waiting or relaunching driver; {} runs on {}",
                        l.driver_id,
                        d.worker.as_deref().unwrap_or("a worker")
                    ),
                    entity(),
                );
                return;
            }
        }
        let Some(wid) = worker else {
            return;
        };
        let (cores, mem) = (i64::from(l.driver_desc.cores), i64::from(l.driver_desc.mem));
        self.check_capacity(wid, cores, mem, sink);
        let d = self.drivers.entry(l.driver_id.clone()).or_insert(Driver {
            state: DriverState::Submitted,
            worker: None,
            cores,
            mem,
            supervise: l.driver_desc.supervise,
            prev: None,
            answered: false,
        });
        d.cores = cores;
        d.mem = mem;
        d.supervise = l.driver_desc.supervise;
        self.set_driver_state(
            &l.driver_id,
            DriverState::Running,
            Some(wid.to_string()),
            sink.time,
        );
        hold(&mut self.workers, wid, cores, mem);
    }

    /// KillDriver to worker `wid`; `reported`: the worker's last WorkerLatestState on that
    /// connection listed the driver.
    pub(super) fn kill_driver(
        &mut self,
        wid: &str,
        id: &str,
        reported: bool,
        config: &Config,
        sink: &mut Sink<'_>,
    ) {
        let entity = || Some(Entity::Driver(id.to_string()));
        let on = self.drivers.get(id).and_then(|d| d.worker.clone());
        if reported && on.as_deref() != Some(wid) {
            // SPARK-13604: the worker runs a driver the master does not have on it (unknown,
            // finished, or relaunched elsewhere); the master kills it there. That says nothing
            // about the driver the master knows by that id.
            return;
        }
        if let Some(f) = self.finished_drivers.get(id) {
            if !(f.by_worker && config.crossed(f.at, sink.time)) {
                sink.flag(
                    Rule::DriverAfterFinish,
                    format!("no KillDriver for {id}: it finished ({})", f.state),
                    entity(),
                );
            }
            return;
        }
        if on.as_deref() != Some(wid) {
            sink.flag(
                Rule::DriverOnHost,
                format!(
                    "KillDriver to the worker running {id} ({}), not {wid}",
                    on.as_deref().unwrap_or("none")
                ),
                entity(),
            );
        }
    }

    /// DriverStateChanged from worker `wid`.
    pub(super) fn driver_state_changed(
        &mut self,
        wid: &str,
        d: &DriverStateChanged,
        sink: &mut Sink<'_>,
    ) {
        let entity = || Some(Entity::Driver(d.driver_id.clone()));
        if !is_final(d.state) {
            sink.flag(
                Rule::DriverFinalState,
                format!("ERROR, FINISHED, KILLED or FAILED; found {}", d.state),
                entity(),
            );
            return;
        }
        if let Some(f) = self.finished_drivers.get(&d.driver_id) {
            sink.flag(
                Rule::DriverAfterFinish,
                format!("nothing after driver {} ended {}", d.driver_id, f.state),
                entity(),
            );
            return;
        }
        let on = self
            .drivers
            .get(&d.driver_id)
            .and_then(|x| x.worker.clone());
        if on.as_deref() != Some(wid) {
            sink.flag(
                Rule::DriverOnHost,
                format!(
                    "DriverStateChanged for {} from the worker running it ({}), not {wid}",
                    d.driver_id,
                    on.as_deref().unwrap_or("none")
                ),
                entity(),
            );
            return;
        }
        self.end_driver(&d.driver_id, d.state, sink.time, true);
    }

    /// A reply message to a driver client's ask.
    pub(super) fn driver_reply(
        &mut self,
        m: &DeployMessage,
        detail: &AskDetail,
        config: &Config,
        sink: &mut Sink<'_>,
    ) {
        let now = sink.time;
        match (m, detail) {
            (DeployMessage::SubmitDriverResponse(r), _) => match (&r.driver_id, r.success) {
                (Some(id), true) => {
                    // The master launches a new driver before it answers, and the two go out on
                    // different connections: a LaunchDriver may come first (Spark 3.0.3 does).
                    if let Some(d) = self.drivers.get_mut(id).filter(|d| !d.answered) {
                        d.answered = true;
                        return;
                    }
                    if self.drivers.contains_key(id) || self.finished_drivers.contains(id) {
                        sink.flag(
                            Rule::DriverSubmitAnswer,
                            format!("a new driver id; {id} was used before"),
                            Some(Entity::Driver(id.clone())),
                        );
                        return;
                    }
                    self.drivers.insert(
                        id.clone(),
                        Driver {
                            state: DriverState::Submitted,
                            worker: None,
                            cores: 0,
                            mem: 0,
                            supervise: false,
                            prev: None,
                            answered: true,
                        },
                    );
                }
                (None, false) => {}
                (None, true) => sink.flag(
                    Rule::DriverSubmitAnswer,
                    "a driver id in a successful SubmitDriverResponse",
                    None,
                ),
                (Some(id), false) => sink.flag(
                    Rule::DriverSubmitAnswer,
                    "no driver id in an unsuccessful SubmitDriverResponse",
                    Some(Entity::Driver(id.clone())),
                ),
            },
            (DeployMessage::KillDriverResponse(k), AskDetail::Driver(asked)) => {
                if &k.driver_id != asked {
                    sink.flag(
                        Rule::DriverReplyMatches,
                        format!(
                            "KillDriverResponse about {asked}, the driver asked about; found {}",
                            k.driver_id
                        ),
                        Some(Entity::Driver(asked.clone())),
                    );
                    return;
                }
                let waiting = self.drivers.get(asked).is_some_and(|d| d.worker.is_none());
                if k.success && waiting {
                    self.end_driver(asked, DriverState::Killed, now, false);
                }
            }
            (DeployMessage::DriverStatusResponse(s), AskDetail::Driver(asked)) => {
                let Some(d) = self.drivers.get(asked) else {
                    return;
                };
                let recent = d
                    .prev
                    .filter(|(_, at)| config.crossed(*at, now))
                    .map(|(st, _)| st);
                let ok = s.found
                    && (s.state == Some(d.state) || (s.state.is_some() && s.state == recent));
                if !ok {
                    sink.flag(
                        Rule::DriverReplyMatches,
                        format!("found = true, state {} for active driver {asked}", d.state),
                        Some(Entity::Driver(asked.clone())),
                    );
                }
            }
            _ => {}
        }
    }
}
