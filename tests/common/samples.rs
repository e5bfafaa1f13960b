//! Realistic messages of both families, shaped like those a Spark 4.0 standalone cluster sends.

#![allow(dead_code)]

use std::collections::BTreeMap;

use sparkwire::messages::coarse::{
    ExecutorDecommissioning, KillTask, LaunchTask, LaunchedExecutor, RegisterExecutor,
    RetrieveSparkAppConfig, SparkAppConfig, StatusUpdate,
};
use sparkwire::messages::deploy::{
    DecommissionWorker, ExecutorStateChanged, Heartbeat, LaunchExecutor, RegisterWorker,
    RegisteredWorker, RequestSubmitDriver, SubmitDriverResponse, WorkerDecommissioning,
};
use sparkwire::messages::{
    Addr, ApplicationDescription, Command, DriverDescription, EndpointRef, ExecutorState, Payload,
    ResourceInformation, ResourceProfile, TaskState,
};

pub const WORKER_ID: &str = "worker-20250101120000-127.0.0.1-35001";
pub const APP_ID: &str = "app-20250101120005-0000";

pub fn master_ref() -> EndpointRef {
    EndpointRef::at(Addr::new("127.0.0.1", 7077), "Master")
}

pub fn worker_ref() -> EndpointRef {
    EndpointRef::at(Addr::new("127.0.0.1", 35001), "Worker")
}

pub fn register_worker() -> RegisterWorker {
    let mut resources = BTreeMap::new();
    resources.insert(
        "gpu".to_string(),
        ResourceInformation::new("gpu".to_string(), vec!["0".to_string(), "1".to_string()]),
    );
    RegisterWorker::new(
        WORKER_ID.to_string(),
        "127.0.0.1".to_string(),
        35001,
        worker_ref(),
        2,
        23040,
        "http://127.0.0.1:8081".to_string(),
        Addr::new("127.0.0.1", 7077),
        resources,
    )
}

pub fn registered_worker() -> RegisteredWorker {
    RegisteredWorker::new(
        master_ref(),
        "http://127.0.0.1:8080".to_string(),
        Addr::new("127.0.0.1", 7077),
        false,
    )
}

pub fn heartbeat() -> Heartbeat {
    Heartbeat::new(WORKER_ID.to_string(), worker_ref())
}

pub fn executor_state_changed() -> ExecutorStateChanged {
    ExecutorStateChanged::new(APP_ID.to_string(), 0, ExecutorState::Exited)
        .with_message(Some("Command exited with code 137".to_string()))
        .with_exit_status(Some(137))
}

pub fn executor_command() -> Command {
    let mut environment = BTreeMap::new();
    environment.insert("SPARK_USER".to_string(), "spark".to_string());
    environment.insert("SPARK_EXECUTOR_MEMORY".to_string(), "1024m".to_string());
    Command::new(
        "org.apache.spark.executor.CoarseGrainedExecutorBackend".to_string(),
        [
            "--driver-url",
            "spark://CoarseGrainedScheduler@127.0.0.1:40123",
            "--executor-id",
            "{{EXECUTOR_ID}}",
            "--hostname",
            "{{HOSTNAME}}",
            "--cores",
            "{{CORES}}",
            "--app-id",
            "{{APP_ID}}",
            "--worker-url",
            "{{WORKER_URL}}",
            "--resourceProfileId",
            "{{RESOURCE_PROFILE_ID}}",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect(),
        environment,
        vec!["/opt/spark/jars/*".to_string()],
        vec![],
        [
            "-Dspark.driver.port=40123",
            "-Djava.net.preferIPv6Addresses=false",
            "-XX:+IgnoreUnrecognizedVMOptions",
            "--add-opens=java.base/java.lang=ALL-UNNAMED",
            "--add-opens=java.base/java.nio=ALL-UNNAMED",
            "--add-opens=java.base/sun.nio.ch=ALL-UNNAMED",
            "-Djdk.reflect.useDirectMethodHandle=false",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect(),
    )
}

pub fn app_description() -> ApplicationDescription {
    ApplicationDescription::new(
        "sparkwire-sample".to_string(),
        executor_command(),
        "http://127.0.0.1:4040".to_string(),
        ResourceProfile::default_with(Some(1), 1024),
        "spark".to_string(),
    )
}

pub fn launch_executor() -> LaunchExecutor {
    LaunchExecutor::new(
        "spark://127.0.0.1:7077".to_string(),
        APP_ID.to_string(),
        0,
        0,
        app_description(),
        1,
        1024,
        BTreeMap::new(),
    )
}

pub fn request_submit_driver() -> RequestSubmitDriver {
    RequestSubmitDriver::new(DriverDescription::new(
        "file:///opt/app.jar".to_string(),
        1024,
        1,
        false,
        executor_command(),
        vec![],
    ))
}

pub fn submit_driver_response() -> SubmitDriverResponse {
    SubmitDriverResponse::new(
        master_ref(),
        true,
        "Driver successfully submitted as driver-20250101120000-0000".to_string(),
    )
    .with_driver_id(Some("driver-20250101120000-0000".to_string()))
}

pub fn worker_decommissioning() -> WorkerDecommissioning {
    WorkerDecommissioning::new(WORKER_ID.to_string(), worker_ref())
}

pub fn decommission_worker() -> DecommissionWorker {
    DecommissionWorker::new()
}

pub fn retrieve_spark_app_config() -> RetrieveSparkAppConfig {
    RetrieveSparkAppConfig::new(0)
}

pub fn spark_app_config() -> SparkAppConfig {
    SparkAppConfig::new(
        vec![
            ("spark.app.id".to_string(), APP_ID.to_string()),
            ("spark.driver.port".to_string(), "40123".to_string()),
        ],
        ResourceProfile::default_with(Some(1), 1024),
    )
}

pub fn register_executor() -> RegisterExecutor {
    let mut log_urls = BTreeMap::new();
    log_urls.insert(
        "stdout".to_string(),
        "http://127.0.0.1:8081/logPage/?appId=app-20250101120005-0000&executorId=0&logType=stdout"
            .to_string(),
    );
    RegisterExecutor::new(
        "0".to_string(),
        EndpointRef::client("Executor"),
        "127.0.0.1".to_string(),
        1,
        log_urls,
        BTreeMap::new(),
        BTreeMap::new(),
        0,
    )
}

pub fn launched_executor() -> LaunchedExecutor {
    LaunchedExecutor::new("0".to_string())
}

pub fn status_update(data_len: usize) -> StatusUpdate {
    StatusUpdate::new(
        "0".to_string(),
        42,
        TaskState::Finished,
        Payload::from(vec![0x5a; data_len]),
        1,
        BTreeMap::new(),
    )
}

pub fn launch_task(data_len: usize) -> LaunchTask {
    LaunchTask::new(Payload::from(vec![0xa5; data_len]))
}

pub fn kill_task() -> KillTask {
    KillTask::new(42, "0".to_string(), true, "Stage cancelled".to_string())
}

pub fn executor_decommissioning() -> ExecutorDecommissioning {
    ExecutorDecommissioning::new("0".to_string())
}
