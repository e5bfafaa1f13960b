//! What the worker runs: its executors and drivers from the launch asked for to the process's
//! end, the finished ones kept for the state page, and the cores and memory they hold.

use std::collections::BTreeMap;

use super::{Ended, RunKey};
use crate::messages::deploy::{WorkerDriverStateResponse, WorkerExecutorStateResponse};
use crate::messages::{
    DriverRunnerInfo, DriverState, ErrorDescription, ExecutorDescription, ExecutorState, Resources,
};

/// Most finished executors and drivers kept for the state page.
const RETAINED_FINISHED: usize = 1000;

/// An executor the worker runs.
pub(super) struct ExecRun {
    pub(super) desc: ExecutorDescription,
    pub(super) resources: Resources,
    /// The master asked to kill it: its end is KILLED whatever its exit code.
    killed: bool,
}

impl ExecRun {
    /// An executor of `desc` holding `resources`, about to start.
    pub(super) fn new(desc: ExecutorDescription, resources: Resources) -> ExecRun {
        ExecRun {
            desc,
            resources,
            killed: false,
        }
    }
}

/// A process asked for and not started yet.
pub(super) enum Starting {
    Executor(ExecRun),
    Driver(DriverRunnerInfo),
}

/// How a process ended, for the master.
pub(super) enum End {
    /// An executor's ExecutorStateChanged: its state, message and exit status.
    Executor(ExecutorState, Option<String>, Option<i32>),
    /// A driver's DriverStateChanged: its state and exception.
    Driver(DriverState, Option<ErrorDescription>),
}

/// The executors and drivers of a worker (Spark's `executors`, `finishedExecutors`, `drivers`,
/// `finishedDrivers`, `coresUsed`, `memoryUsed`).
#[derive(Default)]
pub(super) struct Runs {
    executors: BTreeMap<(String, i32), ExecRun>,
    finished_executors: Vec<ExecutorDescription>,
    drivers: BTreeMap<String, DriverRunnerInfo>,
    finished_drivers: Vec<DriverRunnerInfo>,
    starting: BTreeMap<RunKey, Starting>,
    cores_used: i32,
    memory_used: i32,
}

impl Runs {
    /// `key` runs or is starting.
    pub(super) fn has(&self, key: &RunKey) -> bool {
        let running = match key {
            RunKey::Executor(app, id) => self.executors.contains_key(&(app.clone(), *id)),
            RunKey::Driver(id) => self.drivers.contains_key(id),
        };
        running || self.starting.contains_key(key)
    }

    /// `key` was asked to start as `what`.
    pub(super) fn start(&mut self, key: RunKey, what: Starting) {
        self.starting.insert(key, what);
    }

    /// `key` started: it runs, holding its cores and memory. The executor's description, for
    /// the master, when it is an executor.
    pub(super) fn started(&mut self, key: &RunKey) -> Option<Option<ExecutorDescription>> {
        match self.starting.remove(key)? {
            Starting::Executor(run) => {
                let desc = run.desc.clone();
                self.cores_used = self.cores_used.saturating_add(desc.cores);
                self.memory_used = self.memory_used.saturating_add(desc.memory_mb);
                self.executors
                    .insert((desc.app_id.clone(), desc.exec_id), run);
                Some(Some(desc))
            }
            Starting::Driver(info) => {
                self.cores_used = self.cores_used.saturating_add(info.cores);
                self.memory_used = self.memory_used.saturating_add(info.memory);
                self.drivers.insert(info.driver_id.clone(), info);
                Some(None)
            }
        }
    }

    /// `key` could not start: it is finished, FAILED (an executor) or ERROR (a driver). What it
    /// was to be.
    pub(super) fn start_failed(&mut self, key: &RunKey) -> Option<Starting> {
        let what = self.starting.remove(key)?;
        match &what {
            Starting::Executor(run) => self.finished_executors.push(ExecutorDescription {
                state: ExecutorState::Failed,
                ..run.desc.clone()
            }),
            Starting::Driver(info) => self.finished_drivers.push(DriverRunnerInfo {
                state: DriverState::Error,
                ..info.clone()
            }),
        }
        self.trim();
        Some(what)
    }

    /// The master asked to kill executor `exec_id` of `app_id`: whether it runs.
    pub(super) fn kill_executor(&mut self, app_id: &str, exec_id: i32) -> bool {
        match self.executors.get_mut(&(app_id.to_string(), exec_id)) {
            Some(run) => {
                run.killed = true;
                true
            }
            None => false,
        }
    }

    /// Driver `id` runs.
    pub(super) fn runs_driver(&self, id: &str) -> bool {
        self.drivers.contains_key(id)
    }

    /// The process of `key` ended as `ended`: it is finished, its cores and memory free. What
    /// the master is told, `None` when it was not running.
    pub(super) fn ended(&mut self, key: &RunKey, ended: Ended) -> Option<End> {
        let end = match key {
            RunKey::Executor(app_id, exec_id) => {
                let mut run = self.executors.remove(&(app_id.clone(), *exec_id))?;
                self.cores_used = self.cores_used.saturating_sub(run.desc.cores);
                self.memory_used = self.memory_used.saturating_sub(run.desc.memory_mb);
                let (state, message, exit_status) = match ended {
                    Ended::Exited { code, killed, .. } if killed || run.killed => {
                        (ExecutorState::Killed, None, Some(code))
                    }
                    Ended::Exited {
                        code, last_line, ..
                    } => (
                        ExecutorState::Exited,
                        Some(exited_message(code, last_line.as_deref())),
                        Some(code),
                    ),
                    Ended::Failed(reason) => (ExecutorState::Failed, Some(reason), None),
                };
                tracing::info!("Executor {app_id}/{exec_id} finished with state {state}");
                run.desc.state = state;
                self.finished_executors.push(run.desc);
                End::Executor(state, message, exit_status)
            }
            RunKey::Driver(driver_id) => {
                let mut info = self.drivers.remove(driver_id)?;
                self.cores_used = self.cores_used.saturating_sub(info.cores);
                self.memory_used = self.memory_used.saturating_sub(info.memory);
                let (state, exception) = match ended {
                    Ended::Exited { killed: true, .. } => (DriverState::Killed, None),
                    Ended::Exited { code: 0, .. } => (DriverState::Finished, None),
                    Ended::Exited { .. } => (DriverState::Failed, None),
                    Ended::Failed(reason) => (
                        DriverState::Error,
                        Some(ErrorDescription::new("java.io.IOException", reason)),
                    ),
                };
                tracing::info!("Driver {driver_id} ended with state {state}");
                info.state = state;
                self.finished_drivers.push(info);
                End::Driver(state, exception)
            }
        };
        self.trim();
        Some(end)
    }

    fn trim(&mut self) {
        if self.finished_executors.len() > RETAINED_FINISHED {
            let n = self.finished_executors.len() - RETAINED_FINISHED;
            self.finished_executors.drain(..n);
        }
        if self.finished_drivers.len() > RETAINED_FINISHED {
            let n = self.finished_drivers.len() - RETAINED_FINISHED;
            self.finished_drivers.drain(..n);
        }
    }

    /// The running executors' descriptions.
    pub(super) fn executors(&self) -> Vec<ExecutorDescription> {
        self.executors.values().map(|e| e.desc.clone()).collect()
    }

    /// The running drivers' ids.
    pub(super) fn driver_ids(&self) -> Vec<String> {
        self.drivers.keys().cloned().collect()
    }

    /// What WorkerSchedulerStateResponse reports: the running executors with their resources,
    /// and the running drivers.
    pub(super) fn scheduler_state(
        &self,
    ) -> (
        Vec<WorkerExecutorStateResponse>,
        Vec<WorkerDriverStateResponse>,
    ) {
        let executors = self
            .executors
            .values()
            .map(|e| WorkerExecutorStateResponse {
                desc: e.desc.clone(),
                resources: e.resources.clone(),
            })
            .collect();
        let drivers = self
            .drivers
            .keys()
            .map(|d| WorkerDriverStateResponse {
                driver_id: d.clone(),
                resources: Resources::new(),
            })
            .collect();
        (executors, drivers)
    }

    /// The running and finished drivers.
    pub(super) fn drivers(&self) -> (Vec<DriverRunnerInfo>, Vec<DriverRunnerInfo>) {
        (
            self.drivers.values().cloned().collect(),
            self.finished_drivers.clone(),
        )
    }

    /// The finished executors kept.
    pub(super) fn finished_executors(&self) -> Vec<ExecutorDescription> {
        self.finished_executors.clone()
    }

    /// Cores and memory (MiB) the running executors and drivers hold.
    pub(super) fn used(&self) -> (i32, i32) {
        (self.cores_used, self.memory_used)
    }
}

/// ExecutorStateChanged's message for an executor that exited with `code`: Spark's
/// `Command exited with code N`, then the executor's own last line of standard error, which
/// says why (`…: cannot connect to the driver at 10.77.0.3:40087: connection refused`).
pub(crate) fn exited_message(code: i32, last_line: Option<&str>) -> String {
    match last_line.map(str::trim).filter(|l| !l.is_empty()) {
        Some(line) => format!("Command exited with code {code}: {line}"),
        None => format!("Command exited with code {code}"),
    }
}

#[cfg(test)]
mod tests {
    use super::exited_message;

    #[test]
    fn an_exited_executors_message_is_sparks_then_its_last_line_if_it_wrote_one() {
        assert_eq!(exited_message(1, None), "Command exited with code 1");
        assert_eq!(
            exited_message(1, Some("  \n")),
            "Command exited with code 1"
        );
        assert_eq!(
            exited_message(1, Some("refused\n")),
            "Command exited with code 1: refused"
        );
    }
}
