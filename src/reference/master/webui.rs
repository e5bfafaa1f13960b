//! The master's side of its web UI: the snapshot the pages are rendered from, and the HTTP
//! handler that asks the actor for it.

use std::collections::BTreeMap;

use super::actor::MasterActor;
use crate::reference::clock::now_ms;
use crate::reference::driver::add_counters;
use crate::reference::webui::{ExecutorRow, MasterSnapshot};

impl MasterActor {
    /// What the web UI shows now: the state as `RequestMasterState` answers it (so that the
    /// pages hide what that answer hides), executors, connections and traffic.
    pub(crate) fn snapshot(&self) -> MasterSnapshot {
        let state = self.master_state();
        let executors = self
            .waiting_apps
            .iter()
            .filter_map(|id| self.apps.get(id))
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
        let mut traffic = self.closed_traffic.clone();
        for c in self.conns.values() {
            *connections.entry(c.role.name()).or_insert(0) += 1;
            add_counters(&mut traffic, &c.peer.handle.counters());
        }
        MasterSnapshot {
            state,
            executors,
            connections,
            traffic,
            now_ms: now_ms(),
        }
    }
}

/// Serves the web UI on `listener` until the task is aborted: `/` (HTML), `/json`, `/metrics`.
#[cfg(feature = "webui")]
pub(crate) async fn serve(
    listener: tokio::net::TcpListener,
    events: tokio::sync::mpsc::UnboundedSender<super::actor::Event>,
) {
    use std::sync::Arc;

    use crate::reference::webui::{master_html, master_json, master_metrics, Page};

    let handler: crate::reference::webui::server::Handler = Arc::new(move |path, _query| {
        let events = events.clone();
        Box::pin(async move {
            let (tx, rx) = tokio::sync::oneshot::channel();
            if events.send(super::actor::Event::Snapshot(tx)).is_err() {
                return Page::error(503, "the master has stopped");
            }
            let Ok(snap) = rx.await else {
                return Page::error(503, "the master has stopped");
            };
            match path.trim_end_matches('/') {
                "" | "/index.html" => Page::html(master_html(&snap)),
                "/json" => Page::json(&master_json(&snap.state)),
                "/metrics" => Page::metrics(master_metrics(&snap)),
                _ => Page::error(404, format!("no page {path}")),
            }
        })
    });
    crate::reference::webui::server::serve(listener, handler).await;
}
