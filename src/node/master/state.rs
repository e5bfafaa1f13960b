//! The master's records of workers, applications, executors and drivers (Spark's WorkerInfo,
//! ApplicationInfo, ExecutorDesc and DriverInfo), and how they show on the state page.

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use std::time::Instant;

use crate::messages::{
    ApplicationDescription, ApplicationInfo, ApplicationState, DriverDescription, DriverInfo,
    DriverState, EndpointRef, ErrorDescription, ExecutorState, Resources, WorkerInfo, WorkerState,
};
use crate::validate::ConnId;

/// Spark's default executor memory (`spark.executor.memory`, 1g) when the profile names none.
pub(crate) const DEFAULT_EXECUTOR_MEMORY_MB: i32 = 1024;

/// Adds a completed application or driver to `completed`, first dropping the oldest tenth when
/// `retained` are kept already (Spark's `retainedApplications`, `retainedDrivers`).
pub(crate) fn retire<T>(completed: &mut VecDeque<T>, item: T, retained: usize) {
    while completed.len() >= retained.max(1) {
        let drop = (retained / 10).max(1);
        for _ in 0..drop {
            completed.pop_front();
        }
    }
    completed.push_back(item);
}

/// A worker the master knows.
#[derive(Debug, Clone)]
pub(crate) struct WorkerRec {
    pub(crate) id: String,
    pub(crate) host: String,
    pub(crate) port: i32,
    pub(crate) endpoint: EndpointRef,
    pub(crate) cores: i32,
    pub(crate) memory: i32,
    pub(crate) web_ui: String,
    pub(crate) resources: Resources,
    pub(crate) state: WorkerState,
    pub(crate) last_heartbeat: Instant,
    pub(crate) last_heartbeat_ms: i64,
    /// The connection the master talks to it over.
    pub(crate) conn: Option<ConnId>,
    /// Executors it runs: (application id, executor id) → (cores, memory) they hold.
    pub(crate) executors: BTreeMap<(String, i32), (i32, i32)>,
    pub(crate) drivers: BTreeSet<String>,
    pub(crate) cores_used: i32,
    pub(crate) memory_used: i32,
    /// The Spark release it registered with, if any (SPEC §15.5).
    pub(crate) spark_release: Option<String>,
}

impl WorkerRec {
    /// Takes an executor's cores and memory.
    pub(crate) fn add_executor(&mut self, key: (String, i32), cores: i32, memory: i32) {
        if self.executors.insert(key, (cores, memory)).is_none() {
            self.cores_used = self.cores_used.saturating_add(cores);
            self.memory_used = self.memory_used.saturating_add(memory);
        }
    }

    /// Frees an executor's cores and memory; whether it was there.
    pub(crate) fn remove_executor(&mut self, key: &(String, i32)) -> bool {
        match self.executors.remove(key) {
            Some((cores, memory)) => {
                self.cores_used = self.cores_used.saturating_sub(cores);
                self.memory_used = self.memory_used.saturating_sub(memory);
                true
            }
            None => false,
        }
    }

    /// Takes a driver's cores and memory.
    pub(crate) fn add_driver(&mut self, id: &str, cores: i32, memory: i32) {
        if self.drivers.insert(id.to_string()) {
            self.cores_used = self.cores_used.saturating_add(cores);
            self.memory_used = self.memory_used.saturating_add(memory);
        }
    }

    /// Frees a driver's cores and memory.
    pub(crate) fn remove_driver(&mut self, id: &str, cores: i32, memory: i32) {
        if self.drivers.remove(id) {
            self.cores_used = self.cores_used.saturating_sub(cores);
            self.memory_used = self.memory_used.saturating_sub(memory);
        }
    }

    pub(crate) fn cores_free(&self) -> i32 {
        self.cores.saturating_sub(self.cores_used)
    }

    pub(crate) fn memory_free(&self) -> i32 {
        self.memory.saturating_sub(self.memory_used)
    }

    /// `host:port`, Spark's `hostPort`.
    pub(crate) fn host_port(&self) -> String {
        format!("{}:{}", self.host, self.port)
    }

    /// The address key Spark's `addressToWorker` uses: the worker's endpoint address.
    pub(crate) fn address_key(&self) -> String {
        match &self.endpoint.address {
            Some(a) => a.to_string(),
            None => self.host_port(),
        }
    }

    pub(crate) fn info(&self) -> WorkerInfo {
        WorkerInfo {
            id: self.id.clone(),
            host: self.host.clone(),
            port: self.port,
            cores: self.cores,
            memory: self.memory,
            cores_used: self.cores_used,
            memory_used: self.memory_used,
            state: self.state,
            last_heartbeat: self.last_heartbeat_ms,
            web_ui_address: self.web_ui.clone(),
            resources: self.resources.clone(),
            spark_release: self.spark_release.clone(),
        }
    }
}

/// An executor the master launched.
#[derive(Debug, Clone)]
pub(crate) struct ExecRec {
    pub(crate) worker: String,
    pub(crate) cores: i32,
    pub(crate) state: ExecutorState,
    /// Custom resources it holds on its worker.
    pub(crate) resources: Resources,
    /// When its worker said it runs (`None`: not yet, or running since before the master knew
    /// it, as after a recovery).
    pub(crate) running_since: Option<std::time::Instant>,
}

/// An application.
#[derive(Debug, Clone)]
pub(crate) struct AppRec {
    pub(crate) id: String,
    pub(crate) desc: ApplicationDescription,
    pub(crate) driver: EndpointRef,
    pub(crate) conn: Option<ConnId>,
    pub(crate) state: ApplicationState,
    pub(crate) start_time: i64,
    pub(crate) end_time: i64,
    pub(crate) executors: BTreeMap<i32, ExecRec>,
    pub(crate) next_exec_id: i32,
    pub(crate) retry_count: i32,
    pub(crate) executor_limit: usize,
    pub(crate) cores_granted: i32,
    /// The Spark release it registered with, if any (SPEC §15.5).
    pub(crate) spark_release: Option<String>,
    /// The last abnormal end of one of its executors: when it happened, the first executor id
    /// launched after it, and how it reads (which executor, how it ended, and the executor's own
    /// last line, `ExecutorStateChanged.message`). It binds until an executor is steady (SPEC
    /// §16).
    pub(crate) last_failure: Option<(std::time::Instant, i32, String)>,
    /// Why it waits, as the last scheduling round found (SPEC §16); `None` when it does not.
    pub(crate) waiting: Option<String>,
}

impl AppRec {
    pub(crate) fn new(
        id: String,
        desc: ApplicationDescription,
        driver: EndpointRef,
        start_time: i64,
    ) -> Self {
        let executor_limit = desc
            .initial_executor_limit
            .map_or(usize::MAX, |n| usize::try_from(n.max(0)).unwrap_or(0));
        AppRec {
            id,
            desc,
            driver,
            conn: None,
            state: ApplicationState::Waiting,
            start_time,
            end_time: -1,
            executors: BTreeMap::new(),
            next_exec_id: 0,
            retry_count: 0,
            executor_limit,
            cores_granted: 0,
            spark_release: None,
            last_failure: None,
            waiting: None,
        }
    }

    /// Cores per executor from the default profile; `None` when unset.
    pub(crate) fn cores_per_executor(&self) -> Option<i32> {
        self.desc
            .default_profile
            .executor_amount("cores")
            .map(|c| i32::try_from(c).unwrap_or(i32::MAX).max(1))
    }

    /// Memory per executor from the default profile, MiB.
    pub(crate) fn memory_per_executor(&self) -> i32 {
        self.desc
            .default_profile
            .executor_amount("memory")
            .map_or(DEFAULT_EXECUTOR_MEMORY_MB, |m| {
                i32::try_from(m).unwrap_or(i32::MAX).max(0)
            })
    }

    /// Custom resources per executor (every executor resource but cores and memory).
    pub(crate) fn resources_per_executor(&self) -> BTreeMap<String, i64> {
        self.desc
            .default_profile
            .executor_resources
            .iter()
            .filter(|(name, _)| {
                !matches!(
                    name.as_str(),
                    "cores" | "memory" | "memoryOverhead" | "offHeap" | "pyspark.memory"
                )
            })
            .map(|(name, r)| (name.clone(), r.amount))
            .collect()
    }

    /// Cores the application may still be given.
    pub(crate) fn cores_left(&self) -> i32 {
        self.desc
            .max_cores
            .unwrap_or(i32::MAX)
            .saturating_sub(self.cores_granted)
    }

    pub(crate) fn info(&self) -> ApplicationInfo {
        ApplicationInfo {
            id: self.id.clone(),
            start_time: self.start_time,
            desc: self.desc.clone(),
            state: self.state,
            cores_granted: self.cores_granted,
            end_time: self.end_time,
            spark_release: self.spark_release.clone(),
            waiting_reason: self.waiting.clone(),
        }
    }
}

/// A driver submitted in cluster deploy mode.
#[derive(Debug, Clone)]
pub(crate) struct DriverRec {
    pub(crate) id: String,
    pub(crate) desc: DriverDescription,
    pub(crate) start_time: i64,
    pub(crate) state: DriverState,
    pub(crate) worker: Option<String>,
    pub(crate) exception: Option<ErrorDescription>,
    /// Why it waits for a worker, as the last scheduling round found (SPEC §16).
    pub(crate) waiting: Option<String>,
}

impl DriverRec {
    pub(crate) fn info(&self) -> DriverInfo {
        DriverInfo {
            id: self.id.clone(),
            start_time: self.start_time,
            desc: self.desc.clone(),
            state: self.state,
            worker_id: self.worker.clone(),
            exception: self.exception.clone(),
            waiting_reason: self.waiting.clone(),
        }
    }
}
