//! What the master answers UIs and REST clients: its state page, its status for a web UI
//! ([`MasterStatus`]), and clearing completed drivers and applications.

use std::collections::BTreeMap;

use super::MasterCore;
use crate::messages::deploy::MasterStateResponse;

/// An executor the master launched, for the page.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExecutorRow {
    /// Its application.
    pub app_id: String,
    /// Its id in the application.
    pub exec_id: i32,
    /// The worker it runs on.
    pub worker_id: String,
    /// Cores it holds.
    pub cores: i32,
    /// Memory it holds, MiB.
    pub memory_mb: i32,
    /// Its state.
    pub state: crate::messages::ExecutorState,
}

/// What a web UI shows of the master: its state (as `RequestMasterState` answers it, so that
/// the pages hide what that answer hides), the executors of its applications, and its
/// connections.
#[derive(Debug, Clone)]
pub struct MasterStatus {
    /// The state, as the master answers `RequestMasterState`.
    pub state: MasterStateResponse,
    /// Executors of the active applications.
    pub executors: Vec<ExecutorRow>,
    /// Open connections by the peer's role.
    pub connections: BTreeMap<&'static str, u64>,
    /// The time of the status, ms since the epoch (the core's wall clock).
    pub now_ms: i64,
}

impl MasterCore {
    /// RequestMasterState, with secrets redacted (SPEC §14.4).
    pub fn master_state(&self) -> MasterStateResponse {
        let mut workers: Vec<_> = self.workers.iter().map(|w| w.info()).collect();
        workers.sort_by(|a, b| a.id.cmp(&b.id));
        let mut active_apps: Vec<_> = self.apps.active().map(|a| a.info()).collect();
        if self.ha.state() == crate::messages::RecoveryState::Alive {
            // As of now: the last round's figures, and executors steady since (SPEC §16).
            let mut reasons: std::collections::HashMap<String, Option<String>> =
                self.app_reasons().into_iter().collect();
            for a in &mut active_apps {
                if let Some(reason) = reasons.remove(&a.id) {
                    a.waiting_reason = reason;
                }
            }
        }
        let (active_drivers, completed_drivers) = self.drivers.infos();
        let mut state = MasterStateResponse {
            host: self.addr.host.clone(),
            port: self.addr.port,
            rest_port: None,
            workers,
            active_apps,
            completed_apps: self.apps.completed().cloned().collect(),
            active_drivers,
            completed_drivers,
            status: self.ha.state(),
        };
        self.config.redaction.master_state(&mut state);
        state
    }

    /// RequestClearCompletedDriversAndApps: forgets completed drivers and applications and
    /// answers `true`, as Spark 4.0.1's master does.
    pub(crate) fn clear_completed(&mut self) -> bool {
        tracing::info!(
            "Asked to clear {} completed drivers and {} completed apps.",
            self.drivers.completed_count(),
            self.apps.completed().count()
        );
        self.drivers.clear_completed();
        self.apps.clear_completed();
        true
    }

    /// What a web UI shows now.
    pub fn status(&self) -> MasterStatus {
        let state = self.master_state();
        let executors = self
            .apps
            .active()
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
        let connections = self.conns.by_role();
        MasterStatus {
            state,
            executors,
            connections,
            now_ms: self.clock.wall_ms,
        }
    }
}
