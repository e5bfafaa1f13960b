//! Messages with plausible field values, for scenarios: one function per message used in flows.

use std::collections::BTreeMap;

use crate::messages::coarse;
use crate::messages::deploy;
use crate::messages::{
    Addr, ApplicationDescription, Command, DriverDescription, DriverState, EndpointRef,
    ExecutorDescription, ExecutorState, Payload, ProfileExecutors, ResourceProfile, TaskState,
};
use crate::messages::{CoarseMessage, DeployMessage};

fn master_ref() -> EndpointRef {
    EndpointRef::at(Addr::new("10.0.0.100", 7077), "Master")
}

fn command(main: &str) -> Command {
    Command {
        main_class: main.to_string(),
        arguments: vec!["--app".to_string()],
        environment: BTreeMap::new(),
        class_path_entries: Vec::new(),
        library_path_entries: Vec::new(),
        java_opts: vec!["-Xmx1g".to_string()],
    }
}

fn app_description(name: &str) -> ApplicationDescription {
    ApplicationDescription {
        name: name.to_string(),
        max_cores: None,
        command: command("org.apache.spark.executor.CoarseGrainedExecutorBackend"),
        app_ui_url: "http://10.0.0.100:4040".to_string(),
        default_profile: ResourceProfile::default_with(Some(1), 1024),
        event_log_dir: None,
        event_log_codec: None,
        initial_executor_limit: None,
        user: "spark".to_string(),
    }
}

fn driver_description(cores: i32, mem: i32, supervise: bool) -> DriverDescription {
    DriverDescription {
        jar_url: "file:/opt/app.jar".to_string(),
        mem,
        cores,
        supervise,
        command: command("org.apache.spark.deploy.worker.DriverWrapper"),
        resource_reqs: Vec::new(),
    }
}

/// RegisterWorker for worker `id` on `host` offering `cores` and `memory` MiB.
pub fn register_worker(id: &str, host: &str, cores: i32, memory: i32) -> DeployMessage {
    DeployMessage::RegisterWorker(deploy::RegisterWorker {
        id: id.to_string(),
        host: host.to_string(),
        port: 35001,
        worker: EndpointRef::at(Addr::new(host, 35001), "Worker"),
        cores,
        memory,
        worker_web_ui_url: format!("http://{host}:8081"),
        master_address: Addr::new("10.0.0.100", 7077),
        resources: BTreeMap::new(),
        spark_release: None,
    })
}

/// RegisteredWorker.
pub fn registered_worker(duplicate: bool) -> DeployMessage {
    DeployMessage::RegisteredWorker(deploy::RegisteredWorker {
        master: master_ref(),
        master_web_ui_url: "http://10.0.0.100:8080".to_string(),
        master_address: Addr::new("10.0.0.100", 7077),
        duplicate,
    })
}

/// RegisterWorkerFailed.
pub fn register_worker_failed(message: &str) -> DeployMessage {
    DeployMessage::RegisterWorkerFailed(deploy::RegisterWorkerFailed {
        message: message.to_string(),
    })
}

/// MasterInStandby.
pub fn master_in_standby() -> DeployMessage {
    DeployMessage::MasterInStandby(deploy::MasterInStandby {})
}

/// Heartbeat from worker `id`.
pub fn heartbeat(id: &str) -> DeployMessage {
    DeployMessage::Heartbeat(deploy::Heartbeat {
        worker_id: id.to_string(),
        worker: EndpointRef::client("Worker"),
    })
}

fn exec_desc(app: &str, exec: i32, cores: i32, memory: i32) -> ExecutorDescription {
    ExecutorDescription {
        app_id: app.to_string(),
        exec_id: exec,
        rp_id: 0,
        cores,
        memory_mb: memory,
        state: ExecutorState::Running,
    }
}

/// WorkerLatestState of worker `id` running executors `(app, exec, cores, memory)`.
pub fn worker_latest_state(id: &str, executors: &[(&str, i32, i32, i32)]) -> DeployMessage {
    DeployMessage::WorkerLatestState(deploy::WorkerLatestState {
        id: id.to_string(),
        executors: executors
            .iter()
            .map(|(a, e, c, m)| exec_desc(a, *e, *c, *m))
            .collect(),
        driver_ids: Vec::new(),
    })
}

/// ExecutorStateChanged (an ask) of executor `app`/`exec`.
pub fn executor_state_changed(app: &str, exec: i32, state: ExecutorState) -> DeployMessage {
    let exited = state == ExecutorState::Exited;
    DeployMessage::ExecutorStateChanged(deploy::ExecutorStateChanged {
        app_id: app.to_string(),
        exec_id: exec,
        state,
        message: exited.then(|| "Command exited with code 137".to_string()),
        exit_status: exited.then_some(137),
    })
}

/// DriverStateChanged of driver `id`.
pub fn driver_state_changed(id: &str, state: DriverState) -> DeployMessage {
    DeployMessage::DriverStateChanged(deploy::DriverStateChanged {
        driver_id: id.to_string(),
        state,
        exception: None,
    })
}

/// WorkerDecommissioning of worker `id`.
pub fn worker_decommissioning(id: &str) -> DeployMessage {
    DeployMessage::WorkerDecommissioning(deploy::WorkerDecommissioning {
        id: id.to_string(),
        worker_ref: EndpointRef::client("Worker"),
    })
}

/// WorkerSchedulerStateResponse of worker `id` running executors `(app, exec, cores, memory)` and
/// drivers `drivers`.
pub fn worker_scheduler_state_response(
    id: &str,
    executors: &[(&str, i32, i32, i32)],
    drivers: &[&str],
) -> DeployMessage {
    DeployMessage::WorkerSchedulerStateResponse(deploy::WorkerSchedulerStateResponse {
        id: id.to_string(),
        exec_responses: executors
            .iter()
            .map(|(a, e, c, m)| deploy::WorkerExecutorStateResponse {
                desc: exec_desc(a, *e, *c, *m),
                resources: BTreeMap::new(),
            })
            .collect(),
        driver_responses: drivers
            .iter()
            .map(|d| deploy::WorkerDriverStateResponse {
                driver_id: d.to_string(),
                resources: BTreeMap::new(),
            })
            .collect(),
    })
}

/// ReconnectWorker.
pub fn reconnect_worker() -> DeployMessage {
    DeployMessage::ReconnectWorker(deploy::ReconnectWorker {
        master_url: "spark://10.0.0.100:7077".to_string(),
    })
}

/// LaunchExecutor of executor `app`/`exec` with `cores` and `memory` MiB.
pub fn launch_executor(app: &str, exec: i32, cores: i32, memory: i32) -> DeployMessage {
    DeployMessage::LaunchExecutor(deploy::LaunchExecutor {
        master_url: "spark://10.0.0.100:7077".to_string(),
        app_id: app.to_string(),
        exec_id: exec,
        rp_id: 0,
        app_desc: app_description(app),
        cores,
        memory,
        resources: BTreeMap::new(),
    })
}

/// KillExecutor of executor `app`/`exec`.
pub fn kill_executor(app: &str, exec: i32) -> DeployMessage {
    DeployMessage::KillExecutor(deploy::KillExecutor {
        master_url: "spark://10.0.0.100:7077".to_string(),
        app_id: app.to_string(),
        exec_id: exec,
    })
}

/// LaunchDriver of driver `id`.
pub fn launch_driver(id: &str, cores: i32, mem: i32, supervise: bool) -> DeployMessage {
    DeployMessage::LaunchDriver(deploy::LaunchDriver {
        driver_id: id.to_string(),
        driver_desc: driver_description(cores, mem, supervise),
        resources: BTreeMap::new(),
    })
}

/// KillDriver of driver `id`.
pub fn kill_driver(id: &str) -> DeployMessage {
    DeployMessage::KillDriver(deploy::KillDriver {
        driver_id: id.to_string(),
    })
}

/// ApplicationFinished of application `id`.
pub fn application_finished(id: &str) -> DeployMessage {
    DeployMessage::ApplicationFinished(deploy::ApplicationFinished { id: id.to_string() })
}

/// DecommissionWorker.
pub fn decommission_worker() -> DeployMessage {
    DeployMessage::DecommissionWorker(deploy::DecommissionWorker {})
}

/// MasterChanged, from master `master-2`.
pub fn master_changed() -> DeployMessage {
    DeployMessage::MasterChanged(deploy::MasterChanged {
        master: EndpointRef::at(Addr::new("10.0.0.101", 7077), "Master"),
        master_web_ui_url: "http://10.0.0.101:8080".to_string(),
    })
}

/// RegisterApplication of an application named `name`.
pub fn register_application(name: &str) -> DeployMessage {
    DeployMessage::RegisterApplication(deploy::RegisterApplication {
        app_description: app_description(name),
        driver: EndpointRef::at(Addr::new("10.0.0.100", 40000), "CoarseGrainedScheduler"),
        spark_release: None,
    })
}

/// RegisteredApplication giving `app` its id.
pub fn registered_application(app: &str) -> DeployMessage {
    DeployMessage::RegisteredApplication(deploy::RegisteredApplication {
        app_id: app.to_string(),
        master: master_ref(),
    })
}

/// UnregisterApplication of `app`.
pub fn unregister_application(app: &str) -> DeployMessage {
    DeployMessage::UnregisterApplication(deploy::UnregisterApplication {
        app_id: app.to_string(),
    })
}

/// MasterChangeAcknowledged of `app`.
pub fn master_change_acknowledged(app: &str) -> DeployMessage {
    DeployMessage::MasterChangeAcknowledged(deploy::MasterChangeAcknowledged {
        app_id: app.to_string(),
    })
}

/// RequestExecutors (an ask) of `app` for `total` executors of the default profile.
pub fn request_executors(app: &str, total: i32) -> DeployMessage {
    DeployMessage::RequestExecutors(deploy::RequestExecutors {
        app_id: app.to_string(),
        resource_profile_to_total_execs: vec![ProfileExecutors {
            profile: ResourceProfile::default_with(Some(1), 1024),
            total,
        }],
    })
}

/// KillExecutors (an ask) of `app`.
pub fn kill_executors(app: &str, ids: &[&str]) -> DeployMessage {
    DeployMessage::KillExecutors(deploy::KillExecutors {
        app_id: app.to_string(),
        executor_ids: ids.iter().map(|s| s.to_string()).collect(),
    })
}

/// ExecutorAdded of executor `exec` on `worker`.
pub fn executor_added(exec: i32, worker: &str, cores: i32, memory: i32) -> DeployMessage {
    DeployMessage::ExecutorAdded(deploy::ExecutorAdded {
        id: exec,
        worker_id: worker.to_string(),
        host_port: "10.0.0.1:35001".to_string(),
        cores,
        memory,
    })
}

/// ExecutorUpdated of executor `exec`; `worker_host` is set when its whole worker changed.
pub fn executor_updated(
    exec: i32,
    state: ExecutorState,
    worker_host: Option<&str>,
) -> DeployMessage {
    DeployMessage::ExecutorUpdated(deploy::ExecutorUpdated {
        id: exec,
        state,
        message: worker_host.map(|_| "worker lost".to_string()),
        exit_status: None,
        worker_host: worker_host.map(str::to_string),
    })
}

/// ApplicationRemoved with `message` (Spark sends the final state's name).
pub fn application_removed(message: &str) -> DeployMessage {
    DeployMessage::ApplicationRemoved(deploy::ApplicationRemoved {
        message: message.to_string(),
    })
}

/// WorkerRemoved of worker `id` on `host`.
pub fn worker_removed(id: &str, host: &str) -> DeployMessage {
    DeployMessage::WorkerRemoved(deploy::WorkerRemoved {
        id: id.to_string(),
        host: host.to_string(),
        message: "Not receiving heartbeat for 60 seconds".to_string(),
    })
}

/// RequestSubmitDriver (an ask).
pub fn request_submit_driver(cores: i32, mem: i32, supervise: bool) -> DeployMessage {
    DeployMessage::RequestSubmitDriver(deploy::RequestSubmitDriver {
        driver_description: driver_description(cores, mem, supervise),
    })
}

/// SubmitDriverResponse.
pub fn submit_driver_response(success: bool, driver: Option<&str>) -> DeployMessage {
    DeployMessage::SubmitDriverResponse(deploy::SubmitDriverResponse {
        master: master_ref(),
        success,
        driver_id: driver.map(str::to_string),
        message: "Driver successfully submitted".to_string(),
    })
}

/// RequestKillDriver (an ask) of driver `id`.
pub fn request_kill_driver(id: &str) -> DeployMessage {
    DeployMessage::RequestKillDriver(deploy::RequestKillDriver {
        driver_id: id.to_string(),
    })
}

/// KillDriverResponse about driver `id`.
pub fn kill_driver_response(id: &str, success: bool) -> DeployMessage {
    DeployMessage::KillDriverResponse(deploy::KillDriverResponse {
        master: master_ref(),
        driver_id: id.to_string(),
        success,
        message: format!("Kill request for {id} submitted"),
    })
}

/// RequestDriverStatus (an ask) of driver `id`.
pub fn request_driver_status(id: &str) -> DeployMessage {
    DeployMessage::RequestDriverStatus(deploy::RequestDriverStatus {
        driver_id: id.to_string(),
    })
}

/// DriverStatusResponse.
pub fn driver_status_response(
    found: bool,
    state: Option<DriverState>,
    worker: Option<&str>,
) -> DeployMessage {
    DeployMessage::DriverStatusResponse(deploy::DriverStatusResponse {
        found,
        state,
        worker_id: worker.map(str::to_string),
        worker_host_port: worker.map(|_| "10.0.0.1:35001".to_string()),
        exception: None,
    })
}

/// RequestMasterState (an ask).
pub fn request_master_state() -> DeployMessage {
    DeployMessage::RequestMasterState(deploy::RequestMasterState {})
}

/// RetrieveSparkAppConfig (an ask).
pub fn retrieve_spark_app_config() -> CoarseMessage {
    CoarseMessage::RetrieveSparkAppConfig(coarse::RetrieveSparkAppConfig {
        resource_profile_id: 0,
    })
}

/// SparkAppConfig (a reply).
pub fn spark_app_config() -> CoarseMessage {
    CoarseMessage::SparkAppConfig(coarse::SparkAppConfig {
        spark_properties: vec![("spark.app.name".to_string(), "demo".to_string())],
        io_encryption_key: None,
        hadoop_delegation_creds: None,
        resource_profile: ResourceProfile::default_with(Some(1), 1024),
        log_level: None,
    })
}

/// RegisterExecutor (an ask) of executor `id` with `cores`.
pub fn register_executor(id: &str, cores: i32) -> CoarseMessage {
    CoarseMessage::RegisterExecutor(coarse::RegisterExecutor {
        executor_id: id.to_string(),
        executor_ref: EndpointRef::client("Executor"),
        hostname: "10.0.0.1".to_string(),
        cores,
        log_urls: BTreeMap::new(),
        attributes: BTreeMap::new(),
        resources: BTreeMap::new(),
        resource_profile_id: 0,
    })
}

/// LaunchedExecutor of executor `id`.
pub fn launched_executor(id: &str) -> CoarseMessage {
    CoarseMessage::LaunchedExecutor(coarse::LaunchedExecutor {
        executor_id: id.to_string(),
    })
}

/// StatusUpdate of task `task` on executor `exec`.
pub fn status_update(exec: &str, task: i64, state: TaskState, cpus: u32) -> CoarseMessage {
    CoarseMessage::StatusUpdate(coarse::StatusUpdate {
        executor_id: exec.to_string(),
        task_id: task,
        state,
        data: Payload::default(),
        task_cpus: i32::try_from(cpus).unwrap_or(i32::MAX),
        resources: BTreeMap::new(),
    })
}

/// LaunchTask of task `task` needing `cpus` (its data in the layout of [`super::task_data`]).
pub fn launch_task(task: i64, cpus: u32) -> CoarseMessage {
    CoarseMessage::LaunchTask(coarse::LaunchTask {
        data: super::task_data(task, cpus),
    })
}

/// LaunchTask of task `task` for executor `exec` as a real Spark driver sends it: its data is
/// Spark's own `TaskDescription` encoding (Java's `DataOutputStream`: `taskId`, `attemptNumber`,
/// `executorId`, `name`, `index`, `partitionId`; the files, properties, resources and serialized
/// task that follow are left out). No sparkwire task decoder reads it: a connection carrying it is
/// opened with [`TaskPayloads::Spark`](crate::validate::TaskPayloads::Spark).
pub fn spark_launch_task(task: i64, exec: &str) -> CoarseMessage {
    fn utf(out: &mut Vec<u8>, s: &str) {
        // Modified UTF-8 is UTF-8 for strings without NUL or supplementary characters; its
        // length is a u16.
        let bytes = &s.as_bytes()[..s.len().min(usize::from(u16::MAX))];
        out.extend_from_slice(&(bytes.len() as u16).to_be_bytes());
        out.extend_from_slice(bytes);
    }
    let mut data = Vec::new();
    data.extend_from_slice(&task.to_be_bytes());
    data.extend_from_slice(&0i32.to_be_bytes());
    utf(&mut data, exec);
    utf(&mut data, &format!("task 0.0 in stage 0.0 (TID {task})"));
    data.extend_from_slice(&0i32.to_be_bytes());
    data.extend_from_slice(&0i32.to_be_bytes());
    CoarseMessage::LaunchTask(coarse::LaunchTask {
        data: Payload::from(data),
    })
}

/// KillTask of task `task` on executor `exec`.
pub fn kill_task(task: i64, exec: &str) -> CoarseMessage {
    CoarseMessage::KillTask(coarse::KillTask {
        task_id: task,
        executor: exec.to_string(),
        interrupt_thread: true,
        reason: "stage cancelled".to_string(),
    })
}

/// StopExecutor.
pub fn stop_executor() -> CoarseMessage {
    CoarseMessage::StopExecutor(coarse::StopExecutor {})
}

/// DecommissionExecutor.
pub fn decommission_executor() -> CoarseMessage {
    CoarseMessage::DecommissionExecutor(coarse::DecommissionExecutor {})
}

/// ExecutorDecommissioning (an ask) of executor `id`.
pub fn executor_decommissioning(id: &str) -> CoarseMessage {
    CoarseMessage::ExecutorDecommissioning(coarse::ExecutorDecommissioning {
        executor_id: id.to_string(),
    })
}

/// RegisterClusterManager.
pub fn register_cluster_manager() -> CoarseMessage {
    CoarseMessage::RegisterClusterManager(coarse::RegisterClusterManager {
        am: EndpointRef::at(Addr::new("10.0.0.5", 41000), "YarnAM"),
    })
}

/// GetExecutorLossReason (an ask) of executor `id`.
pub fn get_executor_loss_reason(id: &str) -> CoarseMessage {
    CoarseMessage::GetExecutorLossReason(coarse::GetExecutorLossReason {
        executor_id: id.to_string(),
    })
}

/// Shutdown (local: never crosses a connection).
pub fn shutdown() -> CoarseMessage {
    CoarseMessage::Shutdown(coarse::Shutdown { exit_code: 0 })
}
