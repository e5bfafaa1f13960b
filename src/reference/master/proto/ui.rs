//! What the master answers UIs and REST clients: its state page, and clearing completed drivers
//! and applications.

use std::collections::BTreeMap;

use super::MasterCore;
use crate::messages::deploy::MasterStateResponse;
use crate::reference::webui::{ExecutorRow, MasterSnapshot};

impl MasterCore {
    /// RequestMasterState, with secrets redacted (SPEC §14.4).
    pub fn master_state(&self) -> MasterStateResponse {
        let mut workers: Vec<_> = self.workers.all.values().map(|w| w.info()).collect();
        workers.sort_by(|a, b| a.id.cmp(&b.id));
        let active_apps = self
            .apps
            .waiting
            .iter()
            .filter_map(|id| self.apps.all.get(id))
            .map(|a| a.info())
            .collect();
        let mut active_drivers: Vec<_> = self.drivers.all.values().map(|d| d.info()).collect();
        active_drivers.sort_by(|a, b| a.id.cmp(&b.id));
        let mut state = MasterStateResponse {
            host: self.addr.host.clone(),
            port: self.addr.port,
            rest_port: None,
            workers,
            active_apps,
            completed_apps: self.apps.completed.iter().cloned().collect(),
            active_drivers,
            completed_drivers: self.drivers.completed.iter().cloned().collect(),
            status: self.ha.state,
        };
        self.config.redaction.master_state(&mut state);
        state
    }

    /// RequestClearCompletedDriversAndApps: forgets completed drivers and applications and
    /// answers `true`, as Spark 4.0.1's master does.
    pub(crate) fn clear_completed(&mut self) -> bool {
        tracing::info!(
            "Asked to clear {} completed drivers and {} completed apps.",
            self.drivers.completed.len(),
            self.apps.completed.len()
        );
        self.drivers.completed.clear();
        self.apps.completed.clear();
        true
    }

    /// What the web UI shows now: the state as `RequestMasterState` answers it (so that the
    /// pages hide what that answer hides), executors, and connections by role (the traffic counters are the IO side's to fill).
    pub fn snapshot(&self) -> MasterSnapshot {
        let state = self.master_state();
        let executors = self
            .apps
            .waiting
            .iter()
            .filter_map(|id| self.apps.all.get(id))
            .flat_map(|a| {
                let memory = a.memory_per_executor();
                a.executors.iter().map(move |(id, e)| ExecutorRow {
                    app_id: a.id.clone(),
                    exec_id: *id,
                    worker_id: e.worker.clone(),
                    cores: e.cores,
                    memory_mb: memory,
                    state: e.state,
                })
            })
            .collect();
        let mut connections = BTreeMap::new();
        for c in self.conns.all.values() {
            *connections.entry(c.role.name()).or_insert(0) += 1;
        }
        MasterSnapshot {
            state,
            executors,
            connections,
            traffic: Default::default(),
            now_ms: self.clock.wall_ms,
        }
    }
}
