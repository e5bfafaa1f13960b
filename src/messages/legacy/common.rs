//! Version 1 layouts of shared types.

use std::collections::BTreeMap;

use super::narrow;
use crate::messages::common::{
    self as new, Command, ExecutorResourceRequest, ResourceProfile, ResourceRequirement,
};
use crate::messages::states::ExecutorState;

/// Executor resources that are the executor's size, not extra resources.
const SIZE_RESOURCES: [&str; 2] = ["cores", "memory"];

/// Spark's default executor memory, MiB, used when a profile names none.
const DEFAULT_EXECUTOR_MEMORY_MB: i32 = 1024;

#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ExecutorDescription {
    pub(crate) app_id: String,
    pub(crate) exec_id: i32,
    pub(crate) cores: i32,
    pub(crate) state: ExecutorState,
}

impl From<&new::ExecutorDescription> for ExecutorDescription {
    fn from(d: &new::ExecutorDescription) -> Self {
        ExecutorDescription {
            app_id: d.app_id.clone(),
            exec_id: d.exec_id,
            cores: d.cores,
            state: d.state,
        }
    }
}

impl From<ExecutorDescription> for new::ExecutorDescription {
    fn from(d: ExecutorDescription) -> Self {
        new::ExecutorDescription {
            app_id: d.app_id,
            exec_id: d.exec_id,
            rp_id: ResourceProfile::DEFAULT_ID,
            cores: d.cores,
            memory_mb: 0,
            state: d.state,
        }
    }
}

pub(crate) fn executors_down(list: &[new::ExecutorDescription]) -> Vec<ExecutorDescription> {
    list.iter().map(ExecutorDescription::from).collect()
}

pub(crate) fn executors_up(list: Vec<ExecutorDescription>) -> Vec<new::ExecutorDescription> {
    list.into_iter().map(Into::into).collect()
}

#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ApplicationDescription {
    pub(crate) name: String,
    pub(crate) max_cores: Option<i32>,
    #[serde(rename = "memoryPerExecutorMB")]
    pub(crate) memory_per_executor_mb: i32,
    pub(crate) command: Command,
    pub(crate) app_ui_url: String,
    pub(crate) event_log_dir: Option<String>,
    pub(crate) event_log_codec: Option<String>,
    pub(crate) cores_per_executor: Option<i32>,
    pub(crate) initial_executor_limit: Option<i32>,
    pub(crate) user: String,
    pub(crate) resource_reqs_per_executor: Vec<ResourceRequirement>,
}

impl From<&new::ApplicationDescription> for ApplicationDescription {
    fn from(d: &new::ApplicationDescription) -> Self {
        let profile = &d.default_profile;
        let resource_reqs_per_executor = profile
            .executor_resources
            .iter()
            .filter(|(name, _)| !SIZE_RESOURCES.contains(&name.as_str()))
            .map(|(name, r)| ResourceRequirement {
                resource_name: name.clone(),
                amount: narrow(r.amount),
                num_parts: 1,
            })
            .collect();
        ApplicationDescription {
            name: d.name.clone(),
            max_cores: d.max_cores,
            memory_per_executor_mb: profile
                .executor_amount("memory")
                .map(narrow)
                .unwrap_or(DEFAULT_EXECUTOR_MEMORY_MB),
            command: d.command.clone(),
            app_ui_url: d.app_ui_url.clone(),
            event_log_dir: d.event_log_dir.clone(),
            event_log_codec: d.event_log_codec.clone(),
            cores_per_executor: profile.executor_amount("cores").map(narrow),
            initial_executor_limit: d.initial_executor_limit,
            user: d.user.clone(),
            resource_reqs_per_executor,
        }
    }
}

impl From<ApplicationDescription> for new::ApplicationDescription {
    fn from(d: ApplicationDescription) -> Self {
        let mut profile =
            ResourceProfile::default_with(d.cores_per_executor, d.memory_per_executor_mb);
        let mut extra = BTreeMap::new();
        for req in d.resource_reqs_per_executor {
            if SIZE_RESOURCES.contains(&req.resource_name.as_str()) {
                continue;
            }
            extra.insert(
                req.resource_name.clone(),
                ExecutorResourceRequest {
                    resource_name: req.resource_name,
                    amount: i64::from(req.amount),
                    discovery_script: String::new(),
                    vendor: String::new(),
                },
            );
        }
        profile.executor_resources.extend(extra);
        new::ApplicationDescription {
            name: d.name,
            max_cores: d.max_cores,
            command: d.command,
            app_ui_url: d.app_ui_url,
            default_profile: profile,
            event_log_dir: d.event_log_dir,
            event_log_codec: d.event_log_codec,
            initial_executor_limit: d.initial_executor_limit,
            user: d.user,
        }
    }
}

#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ApplicationInfo {
    pub(crate) id: String,
    pub(crate) start_time: i64,
    pub(crate) desc: ApplicationDescription,
    pub(crate) state: crate::messages::states::ApplicationState,
    pub(crate) cores_granted: i32,
    pub(crate) end_time: i64,
    pub(crate) spark_release: Option<String>,
    pub(crate) waiting_reason: Option<String>,
}

impl From<&new::ApplicationInfo> for ApplicationInfo {
    fn from(a: &new::ApplicationInfo) -> Self {
        ApplicationInfo {
            id: a.id.clone(),
            start_time: a.start_time,
            desc: (&a.desc).into(),
            state: a.state,
            cores_granted: a.cores_granted,
            end_time: a.end_time,
            spark_release: a.spark_release.clone(),
            waiting_reason: a.waiting_reason.clone(),
        }
    }
}

impl From<ApplicationInfo> for new::ApplicationInfo {
    fn from(a: ApplicationInfo) -> Self {
        new::ApplicationInfo {
            id: a.id,
            start_time: a.start_time,
            desc: a.desc.into(),
            state: a.state,
            cores_granted: a.cores_granted,
            end_time: a.end_time,
            spark_release: a.spark_release,
            waiting_reason: a.waiting_reason,
        }
    }
}

/// The default profile as version 1 implies it: id 0 and no explicit requests.
pub(crate) fn implied_default_profile() -> ResourceProfile {
    ResourceProfile {
        id: ResourceProfile::DEFAULT_ID,
        executor_resources: BTreeMap::new(),
        task_resources: BTreeMap::new(),
    }
}
