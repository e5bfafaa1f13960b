//! Version 1 layouts of coarse-grained messages.

use std::collections::{BTreeMap, BTreeSet};

use super::deploy::{default_profile_total, total_executors};
use super::ONE_ENTIRE_RESOURCE;
use crate::messages::coarse as new;
use crate::messages::common::{ResourceInformation, ResourceProfile, Resources};
use crate::messages::payload::Payload;
use crate::messages::states::TaskState;

#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct SparkAppConfig {
    pub(crate) spark_properties: Vec<(String, String)>,
    pub(crate) io_encryption_key: Option<Payload>,
    pub(crate) hadoop_delegation_creds: Option<Payload>,
    pub(crate) resource_profile: ResourceProfile,
}

impl From<&new::SparkAppConfig> for SparkAppConfig {
    fn from(m: &new::SparkAppConfig) -> Self {
        SparkAppConfig {
            spark_properties: m.spark_properties.clone(),
            io_encryption_key: m.io_encryption_key.clone(),
            hadoop_delegation_creds: m.hadoop_delegation_creds.clone(),
            resource_profile: m.resource_profile.clone(),
        }
    }
}

impl From<SparkAppConfig> for new::SparkAppConfig {
    fn from(m: SparkAppConfig) -> Self {
        new::SparkAppConfig {
            spark_properties: m.spark_properties,
            io_encryption_key: m.io_encryption_key,
            hadoop_delegation_creds: m.hadoop_delegation_creds,
            resource_profile: m.resource_profile,
            log_level: None,
        }
    }
}

#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct StatusUpdate {
    pub(crate) executor_id: String,
    pub(crate) task_id: i64,
    pub(crate) state: TaskState,
    pub(crate) data: Payload,
    pub(crate) resources: Resources,
}

impl From<&new::StatusUpdate> for StatusUpdate {
    fn from(m: &new::StatusUpdate) -> Self {
        let resources = m
            .resources
            .iter()
            .map(|(name, amounts)| {
                let info = ResourceInformation {
                    name: name.clone(),
                    addresses: amounts.keys().cloned().collect(),
                };
                (name.clone(), info)
            })
            .collect();
        StatusUpdate {
            executor_id: m.executor_id.clone(),
            task_id: m.task_id,
            state: m.state,
            data: m.data.clone(),
            resources,
        }
    }
}

impl From<StatusUpdate> for new::StatusUpdate {
    fn from(m: StatusUpdate) -> Self {
        let resources = m
            .resources
            .into_iter()
            .map(|(name, info)| {
                let amounts = info
                    .addresses
                    .into_iter()
                    .map(|a| (a, ONE_ENTIRE_RESOURCE))
                    .collect();
                (name, amounts)
            })
            .collect();
        new::StatusUpdate {
            executor_id: m.executor_id,
            task_id: m.task_id,
            state: m.state,
            data: m.data,
            task_cpus: 1,
            resources,
        }
    }
}

#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct RequestExecutors {
    pub(crate) requested_total: i32,
    pub(crate) locality_aware_tasks: i32,
    pub(crate) host_to_local_task_count: BTreeMap<String, i32>,
    #[serde(deserialize_with = "crate::messages::set::ascending")]
    pub(crate) node_blacklist: BTreeSet<String>,
}

impl From<&new::RequestExecutors> for RequestExecutors {
    fn from(m: &new::RequestExecutors) -> Self {
        let mut hosts: BTreeMap<String, i32> = BTreeMap::new();
        for per_host in m.host_to_local_task_count.values() {
            for (host, count) in per_host {
                let slot = hosts.entry(host.clone()).or_insert(0);
                *slot = slot.saturating_add(*count);
            }
        }
        RequestExecutors {
            requested_total: total_executors(&m.resource_profile_to_total_execs),
            locality_aware_tasks: m
                .num_locality_aware_tasks_per_resource_profile_id
                .values()
                .fold(0i32, |acc, n| acc.saturating_add(*n)),
            host_to_local_task_count: hosts,
            node_blacklist: m.excluded_nodes.clone(),
        }
    }
}

impl From<RequestExecutors> for new::RequestExecutors {
    fn from(m: RequestExecutors) -> Self {
        let id = ResourceProfile::DEFAULT_ID;
        new::RequestExecutors {
            resource_profile_to_total_execs: default_profile_total(m.requested_total),
            num_locality_aware_tasks_per_resource_profile_id: BTreeMap::from([(
                id,
                m.locality_aware_tasks,
            )]),
            host_to_local_task_count: BTreeMap::from([(id, m.host_to_local_task_count)]),
            excluded_nodes: m.node_blacklist,
        }
    }
}

#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub(crate) struct Shutdown {}

impl From<&new::Shutdown> for Shutdown {
    fn from(_: &new::Shutdown) -> Self {
        Shutdown {}
    }
}

impl From<Shutdown> for new::Shutdown {
    fn from(_: Shutdown) -> Self {
        new::Shutdown { exit_code: 0 }
    }
}
