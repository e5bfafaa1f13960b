//! Version 1 layouts of deploy messages.

use super::common::{
    executors_down, executors_up, implied_default_profile, ApplicationDescription, ApplicationInfo,
    ExecutorDescription,
};
use crate::messages::common::{
    DriverInfo, DriverRunnerInfo, EndpointRef, ProfileExecutors, Resources, WorkerInfo,
};
use crate::messages::deploy as new;
use crate::messages::states::{ExecutorState, RecoveryState};

#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct WorkerLatestState {
    pub(crate) id: String,
    pub(crate) executors: Vec<ExecutorDescription>,
    pub(crate) driver_ids: Vec<String>,
}

impl From<&new::WorkerLatestState> for WorkerLatestState {
    fn from(m: &new::WorkerLatestState) -> Self {
        WorkerLatestState {
            id: m.id.clone(),
            executors: executors_down(&m.executors),
            driver_ids: m.driver_ids.clone(),
        }
    }
}

impl From<WorkerLatestState> for new::WorkerLatestState {
    fn from(m: WorkerLatestState) -> Self {
        new::WorkerLatestState {
            id: m.id,
            executors: executors_up(m.executors),
            driver_ids: m.driver_ids,
        }
    }
}

#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct WorkerExecutorStateResponse {
    pub(crate) desc: ExecutorDescription,
    pub(crate) resources: Resources,
}

#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct WorkerSchedulerStateResponse {
    pub(crate) id: String,
    pub(crate) exec_responses: Vec<WorkerExecutorStateResponse>,
    pub(crate) driver_responses: Vec<new::WorkerDriverStateResponse>,
}

impl From<&new::WorkerSchedulerStateResponse> for WorkerSchedulerStateResponse {
    fn from(m: &new::WorkerSchedulerStateResponse) -> Self {
        WorkerSchedulerStateResponse {
            id: m.id.clone(),
            exec_responses: m
                .exec_responses
                .iter()
                .map(|r| WorkerExecutorStateResponse {
                    desc: (&r.desc).into(),
                    resources: r.resources.clone(),
                })
                .collect(),
            driver_responses: m.driver_responses.clone(),
        }
    }
}

impl From<WorkerSchedulerStateResponse> for new::WorkerSchedulerStateResponse {
    fn from(m: WorkerSchedulerStateResponse) -> Self {
        new::WorkerSchedulerStateResponse {
            id: m.id,
            exec_responses: m
                .exec_responses
                .into_iter()
                .map(|r| new::WorkerExecutorStateResponse {
                    desc: r.desc.into(),
                    resources: r.resources,
                })
                .collect(),
            driver_responses: m.driver_responses,
        }
    }
}

#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct LaunchExecutor {
    pub(crate) master_url: String,
    pub(crate) app_id: String,
    pub(crate) exec_id: i32,
    pub(crate) app_desc: ApplicationDescription,
    pub(crate) cores: i32,
    pub(crate) memory: i32,
    pub(crate) resources: Resources,
}

impl From<&new::LaunchExecutor> for LaunchExecutor {
    fn from(m: &new::LaunchExecutor) -> Self {
        LaunchExecutor {
            master_url: m.master_url.clone(),
            app_id: m.app_id.clone(),
            exec_id: m.exec_id,
            app_desc: (&m.app_desc).into(),
            cores: m.cores,
            memory: m.memory,
            resources: m.resources.clone(),
        }
    }
}

impl From<LaunchExecutor> for new::LaunchExecutor {
    fn from(m: LaunchExecutor) -> Self {
        new::LaunchExecutor {
            master_url: m.master_url,
            app_id: m.app_id,
            exec_id: m.exec_id,
            rp_id: 0,
            app_desc: m.app_desc.into(),
            cores: m.cores,
            memory: m.memory,
            resources: m.resources,
        }
    }
}

#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct RegisterApplication {
    pub(crate) app_description: ApplicationDescription,
    pub(crate) driver: EndpointRef,
    pub(crate) spark_release: Option<String>,
}

impl From<&new::RegisterApplication> for RegisterApplication {
    fn from(m: &new::RegisterApplication) -> Self {
        RegisterApplication {
            app_description: (&m.app_description).into(),
            driver: m.driver.clone(),
            spark_release: m.spark_release.clone(),
        }
    }
}

impl From<RegisterApplication> for new::RegisterApplication {
    fn from(m: RegisterApplication) -> Self {
        new::RegisterApplication {
            app_description: m.app_description.into(),
            driver: m.driver,
            spark_release: m.spark_release,
        }
    }
}

#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct RequestExecutors {
    pub(crate) app_id: String,
    pub(crate) requested_total: i32,
}

/// The sum of the totals of every profile, saturating.
pub(crate) fn total_executors(list: &[ProfileExecutors]) -> i32 {
    list.iter().fold(0i32, |acc, p| acc.saturating_add(p.total))
}

/// One entry for the implied default profile.
pub(crate) fn default_profile_total(total: i32) -> Vec<ProfileExecutors> {
    vec![ProfileExecutors {
        profile: implied_default_profile(),
        total,
    }]
}

impl From<&new::RequestExecutors> for RequestExecutors {
    fn from(m: &new::RequestExecutors) -> Self {
        RequestExecutors {
            app_id: m.app_id.clone(),
            requested_total: total_executors(&m.resource_profile_to_total_execs),
        }
    }
}

impl From<RequestExecutors> for new::RequestExecutors {
    fn from(m: RequestExecutors) -> Self {
        new::RequestExecutors {
            app_id: m.app_id,
            resource_profile_to_total_execs: default_profile_total(m.requested_total),
        }
    }
}

#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ExecutorUpdated {
    pub(crate) id: i32,
    pub(crate) state: ExecutorState,
    pub(crate) message: Option<String>,
    pub(crate) exit_status: Option<i32>,
    pub(crate) worker_lost: bool,
}

impl From<&new::ExecutorUpdated> for ExecutorUpdated {
    fn from(m: &new::ExecutorUpdated) -> Self {
        ExecutorUpdated {
            id: m.id,
            state: m.state,
            message: m.message.clone(),
            exit_status: m.exit_status,
            worker_lost: m.worker_host.is_some(),
        }
    }
}

impl From<ExecutorUpdated> for new::ExecutorUpdated {
    fn from(m: ExecutorUpdated) -> Self {
        new::ExecutorUpdated {
            id: m.id,
            state: m.state,
            message: m.message,
            exit_status: m.exit_status,
            worker_host: m.worker_lost.then(String::new),
        }
    }
}

#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct MasterStateResponse {
    pub(crate) host: String,
    pub(crate) port: i32,
    pub(crate) rest_port: Option<i32>,
    pub(crate) workers: Vec<WorkerInfo>,
    pub(crate) active_apps: Vec<ApplicationInfo>,
    pub(crate) completed_apps: Vec<ApplicationInfo>,
    pub(crate) active_drivers: Vec<DriverInfo>,
    pub(crate) completed_drivers: Vec<DriverInfo>,
    pub(crate) status: RecoveryState,
}

impl From<&new::MasterStateResponse> for MasterStateResponse {
    fn from(m: &new::MasterStateResponse) -> Self {
        MasterStateResponse {
            host: m.host.clone(),
            port: m.port,
            rest_port: m.rest_port,
            workers: m.workers.clone(),
            active_apps: m.active_apps.iter().map(Into::into).collect(),
            completed_apps: m.completed_apps.iter().map(Into::into).collect(),
            active_drivers: m.active_drivers.clone(),
            completed_drivers: m.completed_drivers.clone(),
            status: m.status,
        }
    }
}

impl From<MasterStateResponse> for new::MasterStateResponse {
    fn from(m: MasterStateResponse) -> Self {
        new::MasterStateResponse {
            host: m.host,
            port: m.port,
            rest_port: m.rest_port,
            workers: m.workers,
            active_apps: m.active_apps.into_iter().map(Into::into).collect(),
            completed_apps: m.completed_apps.into_iter().map(Into::into).collect(),
            active_drivers: m.active_drivers,
            completed_drivers: m.completed_drivers,
            status: m.status,
        }
    }
}

#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct WorkerStateResponse {
    pub(crate) host: String,
    pub(crate) port: i32,
    pub(crate) worker_id: String,
    pub(crate) executors: Vec<ExecutorDescription>,
    pub(crate) finished_executors: Vec<ExecutorDescription>,
    pub(crate) drivers: Vec<DriverRunnerInfo>,
    pub(crate) finished_drivers: Vec<DriverRunnerInfo>,
    pub(crate) master_url: String,
    pub(crate) cores: i32,
    pub(crate) memory: i32,
    pub(crate) cores_used: i32,
    pub(crate) memory_used: i32,
    pub(crate) master_web_ui_url: String,
    pub(crate) resources: Resources,
    pub(crate) resources_used: Resources,
}

impl From<&new::WorkerStateResponse> for WorkerStateResponse {
    fn from(m: &new::WorkerStateResponse) -> Self {
        WorkerStateResponse {
            host: m.host.clone(),
            port: m.port,
            worker_id: m.worker_id.clone(),
            executors: executors_down(&m.executors),
            finished_executors: executors_down(&m.finished_executors),
            drivers: m.drivers.clone(),
            finished_drivers: m.finished_drivers.clone(),
            master_url: m.master_url.clone(),
            cores: m.cores,
            memory: m.memory,
            cores_used: m.cores_used,
            memory_used: m.memory_used,
            master_web_ui_url: m.master_web_ui_url.clone(),
            resources: m.resources.clone(),
            resources_used: m.resources_used.clone(),
        }
    }
}

impl From<WorkerStateResponse> for new::WorkerStateResponse {
    fn from(m: WorkerStateResponse) -> Self {
        new::WorkerStateResponse {
            host: m.host,
            port: m.port,
            worker_id: m.worker_id,
            executors: executors_up(m.executors),
            finished_executors: executors_up(m.finished_executors),
            drivers: m.drivers,
            finished_drivers: m.finished_drivers,
            master_url: m.master_url,
            cores: m.cores,
            memory: m.memory,
            cores_used: m.cores_used,
            memory_used: m.memory_used,
            master_web_ui_url: m.master_web_ui_url,
            resources: m.resources,
            resources_used: m.resources_used,
        }
    }
}
