//! Spark's Java objects to sparkwire's typed messages.
//!
//! Spark 4.0's classes map onto the version-2 types field by field (the names are Spark's). A
//! class of `DeployMessages` or `CoarseGrainedClusterMessages` that sparkwire's catalogue has maps
//! to its type or fails with a reason; Spark traffic the catalogue leaves out (endpoint checks,
//! BlockManager, heartbeats, map-output tracking, output commits, block transfer) is recognised by
//! its class and marked as such; any other class is reported as unknown, by name.

use std::collections::BTreeMap;

use super::serial::Node;

use super::java::{
    bool_field, double, elements, entries, field, int, int_field, long, long_field, obj, option,
    serializable_buffer, str_field, string, JavaError,
};
use crate::definition::Definition;
use crate::messages::coarse;
use crate::messages::deploy;
use crate::messages::legacy;
use crate::messages::{
    Addr, ApplicationDescription, ApplicationInfo, ApplicationState, Command, DriverDescription,
    DriverInfo, DriverState, EndpointRef, ErrorDescription, ExecutorDescription,
    ExecutorLossReason, ExecutorResourceRequest, ExecutorState, Payload, ProfileExecutors,
    RecoveryState, ResourceInformation, ResourceProfile, ResourceRequirement, Resources,
    TaskResourceRequest, TaskState, WorkerInfo, WorkerState,
};
use crate::messages::{CoarseMessage, DeployMessage};

/// Package and outer class of the deploy family's messages.
pub const DEPLOY_PREFIX: &str = "org.apache.spark.deploy.DeployMessages$";
/// Package and outer class of the coarse-grained family's messages.
pub const COARSE_PREFIX: &str = "org.apache.spark.scheduler.cluster.CoarseGrainedClusterMessages$";

/// Spark classes that travel between Spark processes but are outside sparkwire's catalogue.
const OUTSIDE_PREFIXES: &[&str] = &[
    "org.apache.spark.rpc.netty.RpcEndpointVerifier$",
    "org.apache.spark.storage.BlockManagerMessages$",
    "org.apache.spark.storage.BlockManagerId",
    "org.apache.spark.storage.BlockStatus",
    "org.apache.spark.Heartbeat",
    "org.apache.spark.HeartbeatResponse",
    "org.apache.spark.GetMapOutputStatuses",
    "org.apache.spark.GetMapOutputMessage",
    "org.apache.spark.GetMapAndMergeResultStatuses",
    "org.apache.spark.GetMergeResultStatuses",
    "org.apache.spark.GetShufflePushMergerLocations",
    "org.apache.spark.StopMapOutputTracker$",
    "org.apache.spark.scheduler.AskPermissionToCommitOutput",
    "org.apache.spark.scheduler.StopCoordinator$",
    "org.apache.spark.network.shuffle.protocol.",
    "org.apache.spark.util.",
];

/// A message of either family.
#[derive(Debug, Clone, PartialEq)]
#[allow(clippy::large_enum_variant)] // one per frame, consumed at once
pub enum Typed {
    /// Deploy family.
    Deploy(DeployMessage),
    /// Coarse-grained family.
    Coarse(CoarseMessage),
}

impl Typed {
    /// The message's name.
    pub fn name(&self) -> &'static str {
        use crate::messages::Family;
        match self {
            Typed::Deploy(m) => m.name(),
            Typed::Coarse(m) => m.name(),
        }
    }

    /// `deploy` or `coarse`.
    pub fn family(&self) -> &'static str {
        match self {
            Typed::Deploy(_) => "deploy",
            Typed::Coarse(_) => "coarse",
        }
    }
}

/// What a Java object is, for sparkwire.
#[derive(Debug, Clone, PartialEq)]
#[allow(clippy::large_enum_variant)]
pub enum Classified {
    /// A catalogued message, typed.
    Message(Typed),
    /// Spark traffic outside the catalogue, by class.
    Outside(String),
    /// A class this decoder does not know.
    Unknown(String),
    /// A catalogued class whose fields did not map (the class, and why).
    Failed(String, String),
}

/// The message name of a family class (`RegisterWorker` for `…DeployMessages$RegisterWorker`,
/// `StopExecutor` for the object `…$StopExecutor$`), with the family.
pub fn catalogue_name(class: &str) -> Option<(&'static str, &str)> {
    let (family, rest) = if let Some(r) = class.strip_prefix(DEPLOY_PREFIX) {
        ("deploy", r)
    } else if let Some(r) = class.strip_prefix(COARSE_PREFIX) {
        ("coarse", r)
    } else {
        return None;
    };
    let name = rest.strip_suffix('$').unwrap_or(rest);
    Definition::builtin()
        .message(family, name)
        .map(|_| (family, name))
}

/// Whether `class` is Spark traffic outside the catalogue.
pub fn is_outside(class: &str) -> bool {
    OUTSIDE_PREFIXES.iter().any(|p| class.starts_with(p))
}

/// Classifies the message object `v`, sent by Spark of any release sparkwire speaks: the
/// stream's own class descriptors say which of a class's fields the sender's release has
/// (Spark 3.0's `ApplicationDescription` with executor sizes or a later one with a resource
/// profile, a `StatusUpdate` with or without task cpus, …), so one reading serves every release.
pub fn classify(v: Node<'_>) -> Classified {
    let Some(class) = v.class() else {
        return Classified::Unknown(v.describe());
    };
    match catalogue_name(class) {
        Some((family, name)) => {
            let r = if family == "deploy" {
                deploy_message(name, v).map(Typed::Deploy)
            } else {
                coarse_message(name, v).map(Typed::Coarse)
            };
            match r {
                Ok(m) => Classified::Message(m),
                Err(e) => Classified::Failed(class.to_string(), e.to_string()),
            }
        }
        None if is_outside(class) => Classified::Outside(class.to_string()),
        None => Classified::Unknown(class.to_string()),
    }
}

fn unmapped(name: &str) -> JavaError {
    JavaError::Shape(format!(
        "{name} is catalogued but this decoder does not map it yet"
    ))
}

fn addr(v: Node<'_>) -> Result<Addr, JavaError> {
    let o = obj(v, "RpcAddress")?;
    Ok(Addr::new(str_field(o, "host")?, int_field(o, "port")?))
}

/// The typed form of an `RpcEndpointRef` object.
pub(crate) fn endpoint_ref_of(v: Node<'_>) -> Result<EndpointRef, JavaError> {
    let o = obj(v, "endpoint reference")?;
    let a = obj(field(o, "endpointAddress")?, "endpointAddress")?;
    let rpc_address = field(a, "rpcAddress")?;
    let address = if rpc_address.is_null() {
        None
    } else {
        Some(addr(rpc_address)?)
    };
    Ok(EndpointRef {
        address,
        name: str_field(a, "name")?,
    })
}

fn opt_string(o: Node<'_>, name: &str) -> Result<Option<String>, JavaError> {
    option(field(o, name)?, name)?
        .map(|v| {
            // java.net.URI keeps its text in `string`.
            if v.class_name() == Some("java.net.URI") {
                str_field(v, "string")
            } else {
                string(v, name)
            }
        })
        .transpose()
}

fn opt_int(o: Node<'_>, name: &str) -> Result<Option<i32>, JavaError> {
    option(field(o, name)?, name)?
        .map(|v| int(v, name))
        .transpose()
}

fn strings(v: Node<'_>, what: &str) -> Result<Vec<String>, JavaError> {
    elements(v, what)?
        .into_iter()
        .map(|e| string(e, what))
        .collect()
}

fn string_map(v: Node<'_>, what: &str) -> Result<BTreeMap<String, String>, JavaError> {
    entries(v, what)?
        .into_iter()
        .map(|(k, v)| Ok((string(k, what)?, string(v, what)?)))
        .collect()
}

fn resources(v: Node<'_>) -> Result<Resources, JavaError> {
    entries(v, "resources")?
        .into_iter()
        .map(|(k, v)| {
            let o = obj(v, "ResourceInformation")?;
            let addresses = strings(field(o, "addresses")?, "addresses")?;
            Ok((
                string(k, "resources")?,
                ResourceInformation {
                    name: str_field(o, "name")?,
                    addresses,
                },
            ))
        })
        .collect()
}

/// The value of a Spark enumeration (`all` in declaration order) by its ordinal.
fn spark_enum<T: Copy>(v: Node<'_>, name: &str, all: &[T]) -> Result<T, JavaError> {
    let i = enum_ordinal(v, name)?;
    all.get(i)
        .copied()
        .ok_or_else(|| JavaError::Shape(format!("{name} ordinal {i}")))
}

fn executor_state(v: Node<'_>) -> Result<ExecutorState, JavaError> {
    spark_enum(v, "ExecutorState", ExecutorState::ALL)
}

fn task_state(v: Node<'_>) -> Result<TaskState, JavaError> {
    spark_enum(v, "TaskState", TaskState::ALL)
}

fn driver_state(v: Node<'_>) -> Result<DriverState, JavaError> {
    spark_enum(v, "DriverState", DriverState::ALL)
}

/// A `scala.Enumeration` value's ordinal (Spark serializes the name as null when it was never
/// asked for), checking the enumeration's object when the stream names it.
fn enum_ordinal(v: Node<'_>, enumeration_name: &str) -> Result<usize, JavaError> {
    let o = obj(v, enumeration_name)?;
    if !o
        .class_name()
        .is_some_and(|c| c.starts_with("scala.Enumeration$"))
    {
        return Err(JavaError::Shape(format!(
            "{enumeration_name}: an Enumeration value, found {}",
            v.describe()
        )));
    }
    let owner = o
        .field("scala$Enumeration$$outerEnum")
        .and_then(|n| n.class())
        .unwrap_or_default();
    if !owner.is_empty() && !owner.ends_with(&format!(".{enumeration_name}$")) {
        return Err(JavaError::Shape(format!(
            "a value of {enumeration_name}, found one of {owner}"
        )));
    }
    let i = int_field(o, "i")?;
    usize::try_from(i).map_err(|_| JavaError::Shape(format!("{enumeration_name} ordinal {i}")))
}

fn command(v: Node<'_>) -> Result<Command, JavaError> {
    let o = obj(v, "Command")?;
    Ok(Command {
        main_class: str_field(o, "mainClass")?,
        arguments: strings(field(o, "arguments")?, "arguments")?,
        environment: string_map(field(o, "environment")?, "environment")?,
        class_path_entries: strings(field(o, "classPathEntries")?, "classPathEntries")?,
        library_path_entries: strings(field(o, "libraryPathEntries")?, "libraryPathEntries")?,
        java_opts: strings(field(o, "javaOpts")?, "javaOpts")?,
    })
}

/// The typed form of a `ResourceProfile` object.
pub(crate) fn resource_profile_of(v: Node<'_>) -> Result<ResourceProfile, JavaError> {
    let o = obj(v, "ResourceProfile")?;
    let mut executor_resources = BTreeMap::new();
    for (k, v) in entries(field(o, "executorResources")?, "executorResources")? {
        let r = obj(v, "ExecutorResourceRequest")?;
        executor_resources.insert(
            string(k, "executorResources")?,
            ExecutorResourceRequest {
                resource_name: str_field(r, "resourceName")?,
                amount: long_field(r, "amount")?,
                discovery_script: str_field(r, "discoveryScript")?,
                vendor: str_field(r, "vendor")?,
            },
        );
    }
    let mut task_resources = BTreeMap::new();
    for (k, v) in entries(field(o, "taskResources")?, "taskResources")? {
        let r = obj(v, "TaskResourceRequest")?;
        let amount = double(field(r, "amount")?, "amount")?;
        if !amount.is_finite() {
            return Err(JavaError::Shape(format!("task resource amount {amount}")));
        }
        task_resources.insert(
            string(k, "taskResources")?,
            TaskResourceRequest {
                resource_name: str_field(r, "resourceName")?,
                amount,
            },
        );
    }
    Ok(ResourceProfile {
        id: int_field(o, "_id")?,
        executor_resources,
        task_resources,
    })
}

/// The typed form of an `ApplicationDescription` object.
pub(crate) fn app_description_of(v: Node<'_>) -> Result<ApplicationDescription, JavaError> {
    let o = obj(v, "ApplicationDescription")?;
    if o.field("memoryPerExecutorMB").is_some() {
        return Ok(legacy::common::ApplicationDescription {
            name: str_field(o, "name")?,
            max_cores: opt_int(o, "maxCores")?,
            memory_per_executor_mb: int_field(o, "memoryPerExecutorMB")?,
            command: command(field(o, "command")?)?,
            app_ui_url: str_field(o, "appUiUrl")?,
            event_log_dir: opt_string(o, "eventLogDir")?,
            event_log_codec: opt_string(o, "eventLogCodec")?,
            cores_per_executor: opt_int(o, "coresPerExecutor")?,
            initial_executor_limit: opt_int(o, "initialExecutorLimit")?,
            user: str_field(o, "user")?,
            resource_reqs_per_executor: resource_requirements(
                field(o, "resourceReqsPerExecutor")?,
                "resourceReqsPerExecutor",
            )?,
        }
        .into());
    }
    Ok(ApplicationDescription {
        name: str_field(o, "name")?,
        max_cores: opt_int(o, "maxCores")?,
        command: command(field(o, "command")?)?,
        app_ui_url: str_field(o, "appUiUrl")?,
        default_profile: resource_profile_of(field(o, "defaultProfile")?)?,
        event_log_dir: opt_string(o, "eventLogDir")?,
        event_log_codec: opt_string(o, "eventLogCodec")?,
        initial_executor_limit: opt_int(o, "initialExecutorLimit")?,
        user: str_field(o, "user")?,
    })
}

/// The typed form of a `DriverDescription` object.
pub(crate) fn driver_description_of(v: Node<'_>) -> Result<DriverDescription, JavaError> {
    let o = obj(v, "DriverDescription")?;
    Ok(DriverDescription {
        jar_url: str_field(o, "jarUrl")?,
        mem: int_field(o, "mem")?,
        cores: int_field(o, "cores")?,
        supervise: bool_field(o, "supervise")?,
        command: command(field(o, "command")?)?,
        resource_reqs: resource_requirements(field(o, "resourceReqs")?, "resourceReqs")?,
    })
}

/// A sequence of `ResourceRequirement`s.
fn resource_requirements(v: Node<'_>, what: &str) -> Result<Vec<ResourceRequirement>, JavaError> {
    elements(v, what)?
        .into_iter()
        .map(|r| {
            let r = obj(r, "ResourceRequirement")?;
            Ok(ResourceRequirement {
                resource_name: str_field(r, "resourceName")?,
                amount: int_field(r, "amount")?,
                num_parts: int_field(r, "numParts")?,
            })
        })
        .collect()
}

/// The typed form of a master's `WorkerInfo`. Its state, used cores and memory and last
/// heartbeat are `@transient`: they take the values Spark's `readObject` gives them (ALIVE, 0,
/// 0; the heartbeat, which Spark sets to the reading clock, 0).
fn worker_info(v: Node<'_>) -> Result<WorkerInfo, JavaError> {
    let o = obj(v, "WorkerInfo")?;
    Ok(WorkerInfo {
        id: str_field(o, "id")?,
        host: str_field(o, "host")?,
        port: int_field(o, "port")?,
        cores: int_field(o, "cores")?,
        memory: int_field(o, "memory")?,
        cores_used: 0,
        memory_used: 0,
        state: WorkerState::Alive,
        last_heartbeat: 0,
        web_ui_address: str_field(o, "webUiAddress")?,
        resources: resources(field(o, "resources")?)?,
        spark_release: None,
    })
}

/// The typed form of a master's `ApplicationInfo` (its transient state as Spark's `readObject`
/// leaves it: WAITING, no cores granted, no end time).
fn application_info(v: Node<'_>) -> Result<ApplicationInfo, JavaError> {
    let o = obj(v, "ApplicationInfo")?;
    Ok(ApplicationInfo {
        id: str_field(o, "id")?,
        start_time: long_field(o, "startTime")?,
        desc: app_description_of(field(o, "desc")?)?,
        state: ApplicationState::Waiting,
        cores_granted: 0,
        end_time: -1,
        spark_release: None,
        waiting_reason: None,
    })
}

/// The typed form of a master's `DriverInfo` (its transient state as Spark's `readObject`
/// leaves it: SUBMITTED, on no worker, no exception).
fn driver_info(v: Node<'_>) -> Result<DriverInfo, JavaError> {
    let o = obj(v, "DriverInfo")?;
    Ok(DriverInfo {
        id: str_field(o, "id")?,
        start_time: long_field(o, "startTime")?,
        desc: driver_description_of(field(o, "desc")?)?,
        state: DriverState::Submitted,
        worker_id: None,
        exception: None,
        waiting_reason: None,
    })
}

/// A `scheduler.ExecutorLossReason` (its subclasses and objects).
fn loss_reason(v: Node<'_>) -> Result<ExecutorLossReason, JavaError> {
    let class = v.class().unwrap_or_default();
    let short = class.rsplit('.').next().unwrap_or(class);
    let message = || str_field(v, "message");
    Ok(match short {
        "ExecutorKilled$" => ExecutorLossReason::ExecutorKilled {},
        "LossReasonPending$" => ExecutorLossReason::LossReasonPending {},
        "ExecutorExited" => ExecutorLossReason::ExecutorExited {
            exit_code: int_field(v, "exitCode")?,
            exit_caused_by_app: bool_field(v, "exitCausedByApp")?,
            reason: message()?,
        },
        "ExecutorProcessLost" => ExecutorLossReason::ExecutorProcessLost {
            reason: message()?,
            worker_host: opt_string(v, "workerHost")?,
            caused_by_app: bool_field(v, "causedByApp")?,
        },
        "ExecutorDecommission" => ExecutorLossReason::ExecutorDecommission {
            worker_host: opt_string(v, "workerHost")?,
            reason: str_field(v, "reason")?,
        },
        _ if class.starts_with("org.apache.spark.scheduler.") => ExecutorLossReason::Other {
            message: message()?,
        },
        _ => {
            return Err(JavaError::Shape(format!(
                "an ExecutorLossReason, found {}",
                v.describe()
            )))
        }
    })
}

fn executor_description(v: Node<'_>) -> Result<ExecutorDescription, JavaError> {
    let o = obj(v, "ExecutorDescription")?;
    if o.field("rpId").is_none() {
        return Ok(legacy::common::ExecutorDescription {
            app_id: str_field(o, "appId")?,
            exec_id: int_field(o, "execId")?,
            cores: int_field(o, "cores")?,
            state: executor_state(field(o, "state")?)?,
        }
        .into());
    }
    Ok(ExecutorDescription {
        app_id: str_field(o, "appId")?,
        exec_id: int_field(o, "execId")?,
        rp_id: int_field(o, "rpId")?,
        cores: int_field(o, "cores")?,
        memory_mb: int_field(o, "memoryMb")?,
        state: executor_state(field(o, "state")?)?,
    })
}

/// The typed form of a Java exception: its class and detail message.
pub(crate) fn error_description_of(v: Node<'_>) -> Result<ErrorDescription, JavaError> {
    // A Java exception: its class and detail message.
    let o = obj(v, "exception")?;
    let message = o
        .field("detailMessage")
        .and_then(|m| m.as_str())
        .unwrap_or_default();
    Ok(ErrorDescription::new(
        o.class().unwrap_or_default(),
        message,
    ))
}

fn deploy_message(name: &str, v: Node<'_>) -> Result<DeployMessage, JavaError> {
    use DeployMessage as D;
    {
        if v.class().is_some_and(|c| c.ends_with('$')) {
            return Ok(match name {
                "MasterInStandby" => D::MasterInStandby(deploy::MasterInStandby {}),
                "DecommissionWorker" => D::DecommissionWorker(deploy::DecommissionWorker {}),
                "RequestMasterState" => D::RequestMasterState(deploy::RequestMasterState {}),
                "RequestKillAllDrivers" => {
                    D::RequestKillAllDrivers(deploy::RequestKillAllDrivers {})
                }
                "RequestReadyz" => D::RequestReadyz(deploy::RequestReadyz {}),
                "RequestWorkerState" => D::RequestWorkerState(deploy::RequestWorkerState {}),
                "RequestClearCompletedDriversAndApps" => D::RequestClearCompletedDriversAndApps(
                    deploy::RequestClearCompletedDriversAndApps {},
                ),
                _ => return Err(unmapped(name)),
            });
        }
    }
    let o = obj(v, name)?;
    Ok(match name {
        "RegisterWorker" => D::RegisterWorker(deploy::RegisterWorker {
            id: str_field(o, "id")?,
            host: str_field(o, "host")?,
            port: int_field(o, "port")?,
            worker: endpoint_ref_of(field(o, "worker")?)?,
            cores: int_field(o, "cores")?,
            memory: int_field(o, "memory")?,
            worker_web_ui_url: str_field(o, "workerWebUiUrl")?,
            master_address: addr(field(o, "masterAddress")?)?,
            resources: resources(field(o, "resources")?)?,
            spark_release: None,
        }),
        "RegisteredWorker" => D::RegisteredWorker(deploy::RegisteredWorker {
            master: endpoint_ref_of(field(o, "master")?)?,
            master_web_ui_url: str_field(o, "masterWebUiUrl")?,
            master_address: addr(field(o, "masterAddress")?)?,
            duplicate: bool_field(o, "duplicate")?,
        }),
        "RegisterWorkerFailed" => D::RegisterWorkerFailed(deploy::RegisterWorkerFailed {
            message: str_field(o, "message")?,
        }),
        "Heartbeat" => D::Heartbeat(deploy::Heartbeat {
            worker_id: str_field(o, "workerId")?,
            worker: endpoint_ref_of(field(o, "worker")?)?,
        }),
        "WorkerLatestState" => D::WorkerLatestState(deploy::WorkerLatestState {
            id: str_field(o, "id")?,
            executors: elements(field(o, "executors")?, "executors")?
                .into_iter()
                .map(executor_description)
                .collect::<Result<_, _>>()?,
            driver_ids: strings(field(o, "driverIds")?, "driverIds")?,
        }),
        "ExecutorStateChanged" => D::ExecutorStateChanged(deploy::ExecutorStateChanged {
            app_id: str_field(o, "appId")?,
            exec_id: int_field(o, "execId")?,
            state: executor_state(field(o, "state")?)?,
            message: opt_string(o, "message")?,
            exit_status: opt_int(o, "exitStatus")?,
        }),
        "DriverStateChanged" => D::DriverStateChanged(deploy::DriverStateChanged {
            driver_id: str_field(o, "driverId")?,
            state: driver_state(field(o, "state")?)?,
            exception: option(field(o, "exception")?, "exception")?
                .map(error_description_of)
                .transpose()?,
        }),
        "WorkerDecommissioning" => D::WorkerDecommissioning(deploy::WorkerDecommissioning {
            id: str_field(o, "id")?,
            worker_ref: endpoint_ref_of(field(o, "workerRef")?)?,
        }),
        "ReconnectWorker" => D::ReconnectWorker(deploy::ReconnectWorker {
            master_url: str_field(o, "masterUrl")?,
        }),
        "LaunchExecutor" if o.field("rpId").is_none() => D::LaunchExecutor(
            legacy::deploy::LaunchExecutor {
                master_url: str_field(o, "masterUrl")?,
                app_id: str_field(o, "appId")?,
                exec_id: int_field(o, "execId")?,
                app_desc: legacy::common::ApplicationDescription::from(&app_description_of(
                    field(o, "appDesc")?,
                )?),
                cores: int_field(o, "cores")?,
                memory: int_field(o, "memory")?,
                resources: resources(field(o, "resources")?)?,
            }
            .into(),
        ),
        "LaunchExecutor" => D::LaunchExecutor(deploy::LaunchExecutor {
            master_url: str_field(o, "masterUrl")?,
            app_id: str_field(o, "appId")?,
            exec_id: int_field(o, "execId")?,
            rp_id: int_field(o, "rpId")?,
            app_desc: app_description_of(field(o, "appDesc")?)?,
            cores: int_field(o, "cores")?,
            memory: int_field(o, "memory")?,
            resources: resources(field(o, "resources")?)?,
        }),
        "KillExecutor" => D::KillExecutor(deploy::KillExecutor {
            master_url: str_field(o, "masterUrl")?,
            app_id: str_field(o, "appId")?,
            exec_id: int_field(o, "execId")?,
        }),
        "KillDriver" => D::KillDriver(deploy::KillDriver {
            driver_id: str_field(o, "driverId")?,
        }),
        "ApplicationFinished" => D::ApplicationFinished(deploy::ApplicationFinished {
            id: str_field(o, "id")?,
        }),
        "MasterChanged" => D::MasterChanged(deploy::MasterChanged {
            master: endpoint_ref_of(field(o, "master")?)?,
            master_web_ui_url: str_field(o, "masterWebUiUrl")?,
        }),
        "RegisterApplication" => D::RegisterApplication(deploy::RegisterApplication {
            app_description: app_description_of(field(o, "appDescription")?)?,
            driver: endpoint_ref_of(field(o, "driver")?)?,
            spark_release: None,
        }),
        "RegisteredApplication" => D::RegisteredApplication(deploy::RegisteredApplication {
            app_id: str_field(o, "appId")?,
            master: endpoint_ref_of(field(o, "master")?)?,
        }),
        "UnregisterApplication" => D::UnregisterApplication(deploy::UnregisterApplication {
            app_id: str_field(o, "appId")?,
        }),
        "MasterChangeAcknowledged" => {
            D::MasterChangeAcknowledged(deploy::MasterChangeAcknowledged {
                app_id: str_field(o, "appId")?,
            })
        }
        "KillExecutors" => D::KillExecutors(deploy::KillExecutors {
            app_id: str_field(o, "appId")?,
            executor_ids: strings(field(o, "executorIds")?, "executorIds")?,
        }),
        "ExecutorAdded" => D::ExecutorAdded(deploy::ExecutorAdded {
            id: int_field(o, "id")?,
            worker_id: str_field(o, "workerId")?,
            host_port: str_field(o, "hostPort")?,
            cores: int_field(o, "cores")?,
            memory: int_field(o, "memory")?,
        }),
        "ExecutorUpdated" if o.field("workerLost").is_some() => D::ExecutorUpdated(
            legacy::deploy::ExecutorUpdated {
                id: int_field(o, "id")?,
                state: executor_state(field(o, "state")?)?,
                message: opt_string(o, "message")?,
                exit_status: opt_int(o, "exitStatus")?,
                worker_lost: bool_field(o, "workerLost")?,
            }
            .into(),
        ),
        "ExecutorUpdated" => D::ExecutorUpdated(deploy::ExecutorUpdated {
            id: int_field(o, "id")?,
            state: executor_state(field(o, "state")?)?,
            message: opt_string(o, "message")?,
            exit_status: opt_int(o, "exitStatus")?,
            worker_host: opt_string(o, "workerHost")?,
        }),
        "ApplicationRemoved" => D::ApplicationRemoved(deploy::ApplicationRemoved {
            message: str_field(o, "message")?,
        }),
        "WorkerRemoved" => D::WorkerRemoved(deploy::WorkerRemoved {
            id: str_field(o, "id")?,
            host: str_field(o, "host")?,
            message: str_field(o, "message")?,
        }),
        "RequestKillDriver" => D::RequestKillDriver(deploy::RequestKillDriver {
            driver_id: str_field(o, "driverId")?,
        }),
        "RequestDriverStatus" => D::RequestDriverStatus(deploy::RequestDriverStatus {
            driver_id: str_field(o, "driverId")?,
        }),
        "RequestSubmitDriver" => D::RequestSubmitDriver(deploy::RequestSubmitDriver {
            driver_description: driver_description_of(field(o, "driverDescription")?)?,
        }),
        "LaunchDriver" => D::LaunchDriver(deploy::LaunchDriver {
            driver_id: str_field(o, "driverId")?,
            driver_desc: driver_description_of(field(o, "driverDesc")?)?,
            resources: resources(field(o, "resources")?)?,
        }),
        "SubmitDriverResponse" => D::SubmitDriverResponse(deploy::SubmitDriverResponse {
            master: endpoint_ref_of(field(o, "master")?)?,
            success: bool_field(o, "success")?,
            driver_id: opt_string(o, "driverId")?,
            message: str_field(o, "message")?,
        }),
        "KillDriverResponse" => D::KillDriverResponse(deploy::KillDriverResponse {
            master: endpoint_ref_of(field(o, "master")?)?,
            driver_id: str_field(o, "driverId")?,
            success: bool_field(o, "success")?,
            message: str_field(o, "message")?,
        }),
        "DriverStatusResponse" => D::DriverStatusResponse(deploy::DriverStatusResponse {
            found: bool_field(o, "found")?,
            state: option(field(o, "state")?, "state")?
                .map(driver_state)
                .transpose()?,
            worker_id: opt_string(o, "workerId")?,
            worker_host_port: opt_string(o, "workerHostPort")?,
            exception: option(field(o, "exception")?, "exception")?
                .map(error_description_of)
                .transpose()?,
        }),
        "KillAllDriversResponse" => D::KillAllDriversResponse(deploy::KillAllDriversResponse {
            master: endpoint_ref_of(field(o, "master")?)?,
            success: bool_field(o, "success")?,
            message: str_field(o, "message")?,
        }),
        "RequestExecutors" if o.field("requestedTotal").is_some() => D::RequestExecutors(
            legacy::deploy::RequestExecutors {
                app_id: str_field(o, "appId")?,
                requested_total: int_field(o, "requestedTotal")?,
            }
            .into(),
        ),
        "RequestExecutors" => D::RequestExecutors(deploy::RequestExecutors {
            app_id: str_field(o, "appId")?,
            resource_profile_to_total_execs: entries(
                field(o, "resourceProfileToTotalExecs")?,
                "resourceProfileToTotalExecs",
            )?
            .into_iter()
            .map(|(p, n)| {
                Ok(ProfileExecutors {
                    profile: resource_profile_of(p)?,
                    total: int(n, "resourceProfileToTotalExecs")?,
                })
            })
            .collect::<Result<_, JavaError>>()?,
        }),
        "WorkerSchedulerStateResponse" => {
            D::WorkerSchedulerStateResponse(deploy::WorkerSchedulerStateResponse {
                id: str_field(o, "id")?,
                exec_responses: elements(field(o, "execResponses")?, "execResponses")?
                    .into_iter()
                    .map(|e| {
                        Ok(deploy::WorkerExecutorStateResponse {
                            desc: executor_description(field(e, "desc")?)?,
                            resources: resources(field(e, "resources")?)?,
                        })
                    })
                    .collect::<Result<_, JavaError>>()?,
                driver_responses: elements(field(o, "driverResponses")?, "driverResponses")?
                    .into_iter()
                    .map(|d| {
                        Ok(deploy::WorkerDriverStateResponse {
                            driver_id: str_field(d, "driverId")?,
                            resources: resources(field(d, "resources")?)?,
                        })
                    })
                    .collect::<Result<_, JavaError>>()?,
            })
        }
        "DecommissionWorkersOnHosts" => {
            D::DecommissionWorkersOnHosts(deploy::DecommissionWorkersOnHosts {
                hostnames: strings(field(o, "hostnames")?, "hostnames")?,
            })
        }
        "MasterStateResponse" => D::MasterStateResponse(deploy::MasterStateResponse {
            host: str_field(o, "host")?,
            port: int_field(o, "port")?,
            rest_port: opt_int(o, "restPort")?,
            workers: elements(field(o, "workers")?, "workers")?
                .into_iter()
                .map(worker_info)
                .collect::<Result<_, _>>()?,
            active_apps: elements(field(o, "activeApps")?, "activeApps")?
                .into_iter()
                .map(application_info)
                .collect::<Result<_, _>>()?,
            completed_apps: elements(field(o, "completedApps")?, "completedApps")?
                .into_iter()
                .map(application_info)
                .collect::<Result<_, _>>()?,
            active_drivers: elements(field(o, "activeDrivers")?, "activeDrivers")?
                .into_iter()
                .map(driver_info)
                .collect::<Result<_, _>>()?,
            completed_drivers: elements(field(o, "completedDrivers")?, "completedDrivers")?
                .into_iter()
                .map(driver_info)
                .collect::<Result<_, _>>()?,
            status: spark_enum(field(o, "status")?, "RecoveryState", RecoveryState::ALL)?,
        }),
        "WorkerStateResponse" => D::WorkerStateResponse(deploy::WorkerStateResponse {
            host: str_field(o, "host")?,
            port: int_field(o, "port")?,
            worker_id: str_field(o, "workerId")?,
            executors: no_runners(o, "executors")?,
            finished_executors: no_runners(o, "finishedExecutors")?,
            drivers: no_runners(o, "drivers")?,
            finished_drivers: no_runners(o, "finishedDrivers")?,
            master_url: str_field(o, "masterUrl")?,
            cores: int_field(o, "cores")?,
            memory: int_field(o, "memory")?,
            cores_used: int_field(o, "coresUsed")?,
            memory_used: int_field(o, "memoryUsed")?,
            master_web_ui_url: str_field(o, "masterWebUiUrl")?,
            resources: resources(field(o, "resources")?)?,
            resources_used: resources(field(o, "resourcesUsed")?)?,
        }),
        _ => return Err(unmapped(name)),
    })
}

/// A list of a Spark worker's `ExecutorRunner`s or `DriverRunner`s in its `WorkerStateResponse`.
/// Those classes are not `Serializable`: a Spark worker can put the answer on the wire only while
/// the lists are empty (with a runner in one, serializing fails and the ask is failed), so an
/// empty list is all Spark's wire carries.
fn no_runners<T>(o: Node<'_>, name: &str) -> Result<Vec<T>, JavaError> {
    let list = elements(field(o, name)?, name)?;
    if list.is_empty() {
        Ok(Vec::new())
    } else {
        Err(JavaError::Shape(format!(
            "{name}: {} runners, which Spark's worker never serializes",
            list.len()
        )))
    }
}

fn coarse_message(name: &str, v: Node<'_>) -> Result<CoarseMessage, JavaError> {
    use CoarseMessage as C;
    {
        if v.class().is_some_and(|c| c.ends_with('$')) {
            return Ok(match name {
                "StopExecutor" => C::StopExecutor(coarse::StopExecutor {}),
                "DecommissionExecutor" => C::DecommissionExecutor(coarse::DecommissionExecutor {}),
                "RetrieveLastAllocatedExecutorId" => {
                    C::RetrieveLastAllocatedExecutorId(coarse::RetrieveLastAllocatedExecutorId {})
                }
                "RetrieveDelegationTokens" => {
                    C::RetrieveDelegationTokens(coarse::RetrieveDelegationTokens {})
                }
                _ => return Err(unmapped(name)),
            });
        }
    }
    let o = obj(v, name)?;
    Ok(match name {
        "RetrieveSparkAppConfig" => C::RetrieveSparkAppConfig(coarse::RetrieveSparkAppConfig {
            resource_profile_id: int_field(o, "resourceProfileId")?,
        }),
        "SparkAppConfig" => {
            let v1 = legacy::coarse::SparkAppConfig {
                spark_properties: entries(field(o, "sparkProperties")?, "sparkProperties")?
                    .into_iter()
                    .map(|(k, v)| {
                        Ok((string(k, "sparkProperties")?, string(v, "sparkProperties")?))
                    })
                    .collect::<Result<_, JavaError>>()?,
                io_encryption_key: option(field(o, "ioEncryptionKey")?, "ioEncryptionKey")?
                    .map(bytes_of)
                    .transpose()?,
                hadoop_delegation_creds: option(
                    field(o, "hadoopDelegationCreds")?,
                    "hadoopDelegationCreds",
                )?
                .map(bytes_of)
                .transpose()?,
                resource_profile: resource_profile_of(field(o, "resourceProfile")?)?,
            };
            let mut m = coarse::SparkAppConfig::from(v1);
            if o.field("logLevel").is_some() {
                m.log_level = opt_string(o, "logLevel")?;
            }
            C::SparkAppConfig(m)
        }
        "RegisterExecutor" => C::RegisterExecutor(coarse::RegisterExecutor {
            executor_id: str_field(o, "executorId")?,
            executor_ref: endpoint_ref_of(field(o, "executorRef")?)?,
            hostname: str_field(o, "hostname")?,
            cores: int_field(o, "cores")?,
            log_urls: string_map(field(o, "logUrls")?, "logUrls")?,
            attributes: string_map(field(o, "attributes")?, "attributes")?,
            resources: resources(field(o, "resources")?)?,
            resource_profile_id: int_field(o, "resourceProfileId")?,
        }),
        "LaunchedExecutor" => C::LaunchedExecutor(coarse::LaunchedExecutor {
            executor_id: str_field(o, "executorId")?,
        }),
        "StatusUpdate" if o.field("taskCpus").is_none() => C::StatusUpdate(
            legacy::coarse::StatusUpdate {
                executor_id: str_field(o, "executorId")?,
                task_id: long_field(o, "taskId")?,
                state: task_state(field(o, "state")?)?,
                data: Payload::from(serializable_buffer(field(o, "data")?, "data")?),
                resources: resources(field(o, "resources")?)?,
            }
            .into(),
        ),
        "StatusUpdate" => {
            let mut res = BTreeMap::new();
            for (k, v) in entries(field(o, "resources")?, "resources")? {
                let mut inner = BTreeMap::new();
                for (a, n) in entries(v, "resources")? {
                    inner.insert(string(a, "resources")?, long(n, "resources")?);
                }
                res.insert(string(k, "resources")?, inner);
            }
            C::StatusUpdate(coarse::StatusUpdate {
                executor_id: str_field(o, "executorId")?,
                task_id: long_field(o, "taskId")?,
                state: task_state(field(o, "state")?)?,
                data: Payload::from(serializable_buffer(field(o, "data")?, "data")?),
                task_cpus: task_cpus(field(o, "taskCpus")?)?,
                resources: res,
            })
        }
        "LaunchTask" => C::LaunchTask(coarse::LaunchTask {
            data: Payload::from(serializable_buffer(field(o, "data")?, "data")?),
        }),
        "KillTask" => C::KillTask(coarse::KillTask {
            task_id: long_field(o, "taskId")?,
            executor: str_field(o, "executor")?,
            interrupt_thread: bool_field(o, "interruptThread")?,
            reason: str_field(o, "reason")?,
        }),
        "ExecutorDecommissioning" => C::ExecutorDecommissioning(coarse::ExecutorDecommissioning {
            executor_id: str_field(o, "executorId")?,
        }),
        "UpdateExecutorLogLevel" => C::UpdateExecutorLogLevel(coarse::UpdateExecutorLogLevel {
            log_level: str_field(o, "logLevel")?,
        }),
        "TaskThreadDump" => C::TaskThreadDump(coarse::TaskThreadDump {
            task_id: long_field(o, "taskId")?,
        }),
        "IsExecutorAlive" => C::IsExecutorAlive(coarse::IsExecutorAlive {
            executor_id: str_field(o, "executorId")?,
        }),
        "ShufflePushCompletion" => C::ShufflePushCompletion(coarse::ShufflePushCompletion {
            shuffle_id: int_field(o, "shuffleId")?,
            shuffle_merge_id: int_field(o, "shuffleMergeId")?,
            map_index: int_field(o, "mapIndex")?,
        }),
        "GetExecutorLossReason" => C::GetExecutorLossReason(coarse::GetExecutorLossReason {
            executor_id: str_field(o, "executorId")?,
        }),
        "KillExecutors" => C::KillExecutors(coarse::KillExecutors {
            executor_ids: strings(field(o, "executorIds")?, "executorIds")?,
        }),
        "RemoveExecutor" => C::RemoveExecutor(coarse::RemoveExecutor {
            executor_id: str_field(o, "executorId")?,
            reason: loss_reason(field(o, "reason")?)?,
        }),
        "UpdateDelegationTokens" => C::UpdateDelegationTokens(coarse::UpdateDelegationTokens {
            tokens: bytes_of(field(o, "tokens")?)?,
        }),
        "AddWebUIFilter" => C::AddWebUIFilter(coarse::AddWebUIFilter {
            filter_name: str_field(o, "filterName")?,
            filter_params: string_map(field(o, "filterParams")?, "filterParams")?,
            proxy_base: str_field(o, "proxyBase")?,
        }),
        "MiscellaneousProcessAdded" => {
            let info = obj(field(o, "info")?, "MiscellaneousProcessDetails")?;
            C::MiscellaneousProcessAdded(coarse::MiscellaneousProcessAdded {
                time: long_field(o, "time")?,
                process_id: str_field(o, "processId")?,
                info: crate::messages::MiscellaneousProcessDetails {
                    host_port: str_field(info, "hostPort")?,
                    cores: int_field(info, "cores")?,
                    log_url_info: string_map(field(info, "logUrlInfo")?, "logUrlInfo")?,
                },
            })
        }
        "RegisterClusterManager" => C::RegisterClusterManager(coarse::RegisterClusterManager {
            am: endpoint_ref_of(field(o, "am")?)?,
        }),
        _ => return Err(unmapped(name)),
    })
}

/// A `StatusUpdate`'s task cpus: an `int` (Spark 3.5–4.2) or a `scala.math.BigDecimal` (Spark
/// 4.3), which must then be a whole number that fits an `int` (sparkwire's typed message counts
/// whole cpus; SPEC §15.4).
fn task_cpus(v: Node<'_>) -> Result<i32, JavaError> {
    if v.as_int().is_some() {
        return int(v, "taskCpus");
    }
    let shape = |why: &str| JavaError::Shape(format!("taskCpus: {why}, found {}", v.describe()));
    let scala = obj(v, "taskCpus")?;
    if scala.class() != Some("scala.math.BigDecimal") {
        return Err(shape("an int or a scala.math.BigDecimal"));
    }
    let java = obj(field(scala, "bigDecimal")?, "taskCpus.bigDecimal")?;
    let scale = int_field(java, "scale")?;
    let big = obj(field(java, "intVal")?, "taskCpus.bigDecimal.intVal")?;
    let signum = int_field(big, "signum")?;
    let magnitude = field(big, "magnitude")?
        .as_bytes()
        .ok_or_else(|| shape("a BigInteger with a byte[] magnitude"))?;
    let digits = magnitude.iter().skip_while(|b| **b == 0).count();
    if digits > 8 || !(-1..=1).contains(&signum) {
        return Err(shape("a number of cpus that fits an int"));
    }
    let mut unscaled: i128 = 0;
    for b in magnitude {
        unscaled = (unscaled << 8) | i128::from(*b);
    }
    unscaled *= i128::from(signum);
    // The value is unscaled × 10^-scale; a whole number only if 10^scale divides it.
    let value = match scale {
        0 => Some(unscaled),
        s if (-9..0).contains(&s) => unscaled.checked_mul(10i128.pow(s.unsigned_abs())),
        s if (1..=38).contains(&s) => {
            let p = 10i128.pow(s.unsigned_abs());
            (unscaled % p == 0).then(|| unscaled / p)
        }
        _ => None,
    };
    value
        .and_then(|n| i32::try_from(n).ok())
        .ok_or_else(|| shape("a whole number of cpus that fits an int"))
}

/// A `byte[]` value.
fn bytes_of(v: Node<'_>) -> Result<Payload, JavaError> {
    v.as_bytes()
        .map(|b| Payload::from(b.to_vec()))
        .ok_or_else(|| JavaError::Shape(format!("a byte array, found {}", v.describe())))
}

/// What a reply's Java object is, to the ask `asked` (a catalogued message).
pub fn reply_value(v: Node<'_>) -> Result<ReplyValue, JavaError> {
    match v.class() {
        Some("java.lang.Boolean") => Ok(ReplyValue::Bool(super::java::boolean(v, "reply")?)),
        Some("java.lang.Integer") => Ok(ReplyValue::Int(int(v, "reply")?)),
        Some(RPC_FAILURE) => Ok(ReplyValue::Failure(error_description_of(field(
            obj(v, "RpcFailure")?,
            "e",
        )?)?)),
        Some(_) => match classify(v) {
            Classified::Message(m) => Ok(ReplyValue::Message(m)),
            Classified::Failed(c, e) => Err(JavaError::Shape(format!("{c}: {e}"))),
            Classified::Outside(c) | Classified::Unknown(c) => Ok(ReplyValue::Other(c)),
        },
        None => Err(JavaError::Shape(format!(
            "a reply object, found {}",
            v.describe()
        ))),
    }
}

/// The class of the object a Spark endpoint replies with when it fails an ask (its
/// `RpcCallContext.sendFailure`): the exception, serialized whole, inside an `RpcResponse`.
pub const RPC_FAILURE: &str = "org.apache.spark.rpc.netty.RpcFailure";

/// A reply, as far as sparkwire's replies go.
#[derive(Debug, Clone, PartialEq)]
#[allow(clippy::large_enum_variant)] // one per frame, consumed at once
pub enum ReplyValue {
    /// A Boolean.
    Bool(bool),
    /// An Integer.
    Int(i32),
    /// A catalogued message.
    Message(Typed),
    /// The endpoint failed the ask: the exception of an `RpcFailure` object ([`RPC_FAILURE`]).
    Failure(ErrorDescription),
    /// Anything else, by class.
    Other(String),
}
