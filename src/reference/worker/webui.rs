//! The worker's web UI: `/` (HTML), `/json`, `/metrics`, and `/logPage/` with the `stdout` or
//! `stderr` of an executor or driver it ran (`?appId=A&executorId=N&logType=stdout`,
//! `?driverId=D&logType=stderr`), as Spark's worker serves them.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use tokio::sync::{mpsc, oneshot};

use super::events::{Own, WEvent};
use crate::node::worker::policy::dir_under;
use crate::reference::webui::server::{serve as serve_http, Handler};
use crate::reference::webui::{worker_html, worker_json, worker_metrics, Page};

/// The largest part of a log served: its last this many bytes.
const LOG_TAIL: u64 = 1024 * 1024;

/// Serves the web UI on `listener` until the task is aborted.
pub(crate) async fn serve(
    listener: tokio::net::TcpListener,
    events: mpsc::UnboundedSender<WEvent>,
    work_dir: PathBuf,
) {
    let work_dir = Arc::new(work_dir);
    let handler: Handler = Arc::new(move |path, query| {
        let events = events.clone();
        let work_dir = Arc::clone(&work_dir);
        Box::pin(async move {
            let path = path.trim_end_matches('/').to_string();
            if path == "/logPage" {
                return log_page(&work_dir, query.as_deref().unwrap_or("")).await;
            }
            let (tx, rx) = oneshot::channel();
            if events.send(WEvent::Own(Own::Snapshot(tx))).is_err() {
                return Page::error(503, "the worker has stopped");
            }
            let Ok(snap) = rx.await else {
                return Page::error(503, "the worker has stopped");
            };
            match path.as_str() {
                "" | "/index.html" => Page::html(worker_html(&snap)),
                "/json" => Page::json(&worker_json(&snap.state)),
                "/metrics" => Page::metrics(worker_metrics(&snap)),
                _ => Page::error(404, format!("no page {path}")),
            }
        })
    });
    serve_http(listener, handler).await;
}

/// The value of `key` in a query string (no percent-decoding: ids are plain).
fn param<'a>(query: &'a str, key: &str) -> Option<&'a str> {
    query
        .split('&')
        .filter_map(|kv| kv.split_once('='))
        .find(|(k, _)| *k == key)
        .map(|(_, v)| v)
}

/// The log a query names, under `work_dir` (names that would leave it are refused).
fn log_file(work_dir: &Path, query: &str) -> Result<PathBuf, Page> {
    let kind = param(query, "logType").unwrap_or("stdout");
    if kind != "stdout" && kind != "stderr" {
        return Err(Page::error(400, "logType must be stdout or stderr"));
    }
    let dir = match (
        param(query, "appId"),
        param(query, "executorId"),
        param(query, "driverId"),
    ) {
        (Some(app), Some(exec), None) => dir_under(work_dir, &[app, exec]),
        (None, None, Some(driver)) => dir_under(work_dir, &[driver]),
        _ => {
            return Err(Page::error(
                400,
                "give appId and executorId, or driverId, and logType",
            ))
        }
    };
    dir.map(|d| d.join(kind)).map_err(|e| Page::error(400, e))
}

async fn log_page(work_dir: &Path, query: &str) -> Page {
    let file = match log_file(work_dir, query) {
        Ok(f) => f,
        Err(page) => return page,
    };
    match read_tail(&file).await {
        Ok(text) => Page::text(text),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            Page::error(404, "no such log on this worker")
        }
        Err(e) => Page::error(500, format!("cannot read the log: {e}")),
    }
}

/// The last [`LOG_TAIL`] bytes of a file, as text.
async fn read_tail(file: &Path) -> std::io::Result<String> {
    use tokio::io::{AsyncReadExt, AsyncSeekExt};
    let mut f = tokio::fs::File::open(file).await?;
    let len = f.metadata().await?.len();
    let start = len.saturating_sub(LOG_TAIL);
    f.seek(std::io::SeekFrom::Start(start)).await?;
    let mut bytes = Vec::new();
    f.take(LOG_TAIL).read_to_end(&mut bytes).await?;
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_queries_name_files_under_the_work_dir_only() {
        let root = Path::new("/w");
        assert_eq!(
            log_file(root, "appId=app-1&executorId=0&logType=stderr").ok(),
            Some(PathBuf::from("/w/app-1/0/stderr"))
        );
        assert_eq!(
            log_file(root, "driverId=driver-1").ok(),
            Some(PathBuf::from("/w/driver-1/stdout"))
        );
        for bad in [
            "appId=..&executorId=0",
            "driverId=../etc",
            "driverId=d&logType=passwd",
            "appId=a",
            "",
        ] {
            assert!(log_file(root, bad).is_err(), "{bad}");
        }
    }
}
