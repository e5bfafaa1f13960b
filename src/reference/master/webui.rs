//! The master's web UI server: the HTTP handler asks the loop for a snapshot (which the core
//! takes) and renders it.

/// Serves the web UI on `listener` until the task is aborted: `/` (HTML), `/json`, `/metrics`.
#[cfg(feature = "webui")]
pub(crate) async fn serve(
    listener: tokio::net::TcpListener,
    events: tokio::sync::mpsc::UnboundedSender<super::events::Event>,
) {
    use std::sync::Arc;

    use crate::reference::webui::{master_html, master_json, master_metrics, Page};

    let handler: crate::reference::webui::server::Handler = Arc::new(move |path, _query| {
        let events = events.clone();
        Box::pin(async move {
            let (tx, rx) = tokio::sync::oneshot::channel();
            let ask = super::events::Event::Own(super::events::Own::Snapshot(tx));
            if events.send(ask).is_err() {
                return Page::error(503, "the master has stopped");
            }
            let Ok(snap) = rx.await else {
                return Page::error(503, "the master has stopped");
            };
            match path.trim_end_matches('/') {
                "" | "/index.html" => Page::html(master_html(&snap)),
                "/json" => Page::json(&master_json(&snap.status.state)),
                "/metrics" => Page::metrics(master_metrics(&snap)),
                _ => Page::error(404, format!("no page {path}")),
            }
        })
    });
    crate::reference::webui::server::serve(listener, handler).await;
}
