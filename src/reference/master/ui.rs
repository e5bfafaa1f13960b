//! What the master answers UIs and REST clients: its state page, and clearing completed drivers
//! and applications.

use super::actor::MasterActor;
use crate::messages::deploy::MasterStateResponse;

impl MasterActor {
    /// RequestMasterState, with secrets redacted (SPEC §14.4).
    pub(crate) fn master_state(&self) -> MasterStateResponse {
        let mut workers: Vec<_> = self.workers.values().map(|w| w.info()).collect();
        workers.sort_by(|a, b| a.id.cmp(&b.id));
        let active_apps = self
            .waiting_apps
            .iter()
            .filter_map(|id| self.apps.get(id))
            .map(|a| a.info())
            .collect();
        let mut active_drivers: Vec<_> = self.drivers.values().map(|d| d.info()).collect();
        active_drivers.sort_by(|a, b| a.id.cmp(&b.id));
        let mut state = MasterStateResponse {
            host: self.addr.host.clone(),
            port: self.addr.port,
            rest_port: None,
            workers,
            active_apps,
            completed_apps: self.completed_apps.iter().cloned().collect(),
            active_drivers,
            completed_drivers: self.completed_drivers.iter().cloned().collect(),
            status: self.state,
        };
        self.config.redaction.master_state(&mut state);
        state
    }

    /// RequestClearCompletedDriversAndApps: forgets completed drivers and applications and
    /// answers how many (Spark 4.0.1 answers `true`; the protocol's reply is the count).
    pub(crate) fn clear_completed(&mut self) -> i32 {
        let n = self.completed_drivers.len() + self.completed_apps.len();
        tracing::info!(
            "Asked to clear {} completed drivers and {} completed apps.",
            self.completed_drivers.len(),
            self.completed_apps.len()
        );
        self.completed_drivers.clear();
        self.completed_apps.clear();
        i32::try_from(n).unwrap_or(i32::MAX)
    }
}
