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
        ResourceInformation {
            name: "gpu".to_string(),
            addresses: vec!["0".to_string(), "1".to_string()],
        },
    );
    RegisterWorker {
        id: WORKER_ID.to_string(),
        host: "127.0.0.1".to_string(),
        port: 35001,
        worker: worker_ref(),
        cores: 2,
        memory: 23040,
        worker_web_ui_url: "http://127.0.0.1:8081".to_string(),
        master_address: Addr::new("127.0.0.1", 7077),
        resources,
    }
}

pub fn registered_worker() -> RegisteredWorker {
    RegisteredWorker {
        master: master_ref(),
        master_web_ui_url: "http://127.0.0.1:8080".to_string(),
        master_address: Addr::new("127.0.0.1", 7077),
        duplicate: false,
    }
}

pub fn heartbeat() -> Heartbeat {
    Heartbeat {
        worker_id: WORKER_ID.to_string(),
        worker: worker_ref(),
    }
}

pub fn executor_state_changed() -> ExecutorStateChanged {
    ExecutorStateChanged {
        app_id: APP_ID.to_string(),
        exec_id: 0,
        state: ExecutorState::Exited,
        message: Some("Command exited with code 137".to_string()),
        exit_status: Some(137),
    }
}

pub fn executor_command() -> Command {
    let mut environment = BTreeMap::new();
    environment.insert("SPARK_USER".to_string(), "spark".to_string());
    environment.insert("SPARK_EXECUTOR_MEMORY".to_string(), "1024m".to_string());
    Command {
        main_class: "org.apache.spark.executor.CoarseGrainedExecutorBackend".to_string(),
        arguments: [
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
        class_path_entries: vec!["/opt/spark/jars/*".to_string()],
        library_path_entries: vec![],
        java_opts: [
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
    }
}

pub fn app_description() -> ApplicationDescription {
    ApplicationDescription {
        name: "sparkwire-sample".to_string(),
        max_cores: None,
        command: executor_command(),
        app_ui_url: "http://127.0.0.1:4040".to_string(),
        default_profile: ResourceProfile::default_with(Some(1), 1024),
        event_log_dir: None,
        event_log_codec: None,
        initial_executor_limit: None,
        user: "spark".to_string(),
    }
}

pub fn launch_executor() -> LaunchExecutor {
    LaunchExecutor {
        master_url: "spark://127.0.0.1:7077".to_string(),
        app_id: APP_ID.to_string(),
        exec_id: 0,
        rp_id: 0,
        app_desc: app_description(),
        cores: 1,
        memory: 1024,
        resources: BTreeMap::new(),
    }
}

pub fn request_submit_driver() -> RequestSubmitDriver {
    RequestSubmitDriver {
        driver_description: DriverDescription {
            jar_url: "file:///opt/app.jar".to_string(),
            mem: 1024,
            cores: 1,
            supervise: false,
            command: executor_command(),
            resource_reqs: vec![],
        },
    }
}

pub fn submit_driver_response() -> SubmitDriverResponse {
    SubmitDriverResponse {
        master: master_ref(),
        success: true,
        driver_id: Some("driver-20250101120000-0000".to_string()),
        message: "Driver successfully submitted as driver-20250101120000-0000".to_string(),
    }
}

pub fn worker_decommissioning() -> WorkerDecommissioning {
    WorkerDecommissioning {
        id: WORKER_ID.to_string(),
        worker_ref: worker_ref(),
    }
}

pub fn decommission_worker() -> DecommissionWorker {
    DecommissionWorker {}
}

pub fn retrieve_spark_app_config() -> RetrieveSparkAppConfig {
    RetrieveSparkAppConfig {
        resource_profile_id: 0,
    }
}

pub fn spark_app_config() -> SparkAppConfig {
    SparkAppConfig {
        spark_properties: vec![
            ("spark.app.id".to_string(), APP_ID.to_string()),
            ("spark.driver.port".to_string(), "40123".to_string()),
        ],
        io_encryption_key: None,
        hadoop_delegation_creds: None,
        resource_profile: ResourceProfile::default_with(Some(1), 1024),
        log_level: None,
    }
}

pub fn register_executor() -> RegisterExecutor {
    let mut log_urls = BTreeMap::new();
    log_urls.insert(
        "stdout".to_string(),
        "http://127.0.0.1:8081/logPage/?appId=app-20250101120005-0000&executorId=0&logType=stdout"
            .to_string(),
    );
    RegisterExecutor {
        executor_id: "0".to_string(),
        executor_ref: EndpointRef::client("Executor"),
        hostname: "127.0.0.1".to_string(),
        cores: 1,
        log_urls,
        attributes: BTreeMap::new(),
        resources: BTreeMap::new(),
        resource_profile_id: 0,
    }
}

pub fn launched_executor() -> LaunchedExecutor {
    LaunchedExecutor {
        executor_id: "0".to_string(),
    }
}

pub fn status_update(data_len: usize) -> StatusUpdate {
    StatusUpdate {
        executor_id: "0".to_string(),
        task_id: 42,
        state: TaskState::Finished,
        data: Payload::from(vec![0x5a; data_len]),
        task_cpus: 1,
        resources: BTreeMap::new(),
    }
}

pub fn launch_task(data_len: usize) -> LaunchTask {
    LaunchTask {
        data: Payload::from(vec![0xa5; data_len]),
    }
}

pub fn kill_task() -> KillTask {
    KillTask {
        task_id: 42,
        executor: "0".to_string(),
        interrupt_thread: true,
        reason: "Stage cancelled".to_string(),
    }
}

pub fn executor_decommissioning() -> ExecutorDecommissioning {
    ExecutorDecommissioning {
        executor_id: "0".to_string(),
    }
}
