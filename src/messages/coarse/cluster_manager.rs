//! Cluster manager (application master) ↔ Driver messages.

use std::collections::{BTreeMap, BTreeSet};

use crate::messages::common::{EndpointRef, ProfileExecutors};

record! {
    /// Cluster manager → Driver: the cluster manager's endpoint.
    pub struct RegisterClusterManager {
        /// The cluster manager's endpoint.
        pub am: EndpointRef => with_am,
    }
}

record! {
    /// Cluster manager → Driver: add a filter to the web UI.
    pub struct AddWebUIFilter {
        /// Filter class name.
        pub filter_name: String => with_filter_name,
        /// Filter parameters.
        pub filter_params: BTreeMap<String, String> => with_filter_params,
        /// Proxy base path.
        pub proxy_base: String => with_proxy_base,
    }
}

record! {
    /// Cluster manager → Driver (ask → Bytes): the delegation tokens.
    pub struct RetrieveDelegationTokens {}
}

record! {
    /// Driver → Cluster manager (ask → Bool): the executors wanted.
    pub struct RequestExecutors {
        /// Executors wanted per profile.
        pub resource_profile_to_total_execs: Vec<ProfileExecutors> => with_resource_profile_to_total_execs,
        /// Tasks with locality preferences, per profile id.
        pub num_locality_aware_tasks_per_resource_profile_id: BTreeMap<i32, i32> => with_num_locality_aware_tasks_per_resource_profile_id,
        /// Per profile id: host → tasks preferring it.
        pub host_to_local_task_count: BTreeMap<i32, BTreeMap<String, i32>> => with_host_to_local_task_count,
        /// Hosts not to use.
        #[serde(deserialize_with = "crate::messages::set::ascending")]
        pub excluded_nodes: BTreeSet<String> => with_excluded_nodes,
    }
}

record! {
    /// Driver → Cluster manager (ask → Bool): kill these executors.
    pub struct KillExecutors {
        /// Executor ids.
        pub executor_ids: Vec<String> => with_executor_ids,
    }
}

record! {
    /// Driver → Cluster manager (ask → ExecutorLossReason): why an executor went away.
    pub struct GetExecutorLossReason {
        /// Executor id.
        pub executor_id: String => with_executor_id,
    }
}
