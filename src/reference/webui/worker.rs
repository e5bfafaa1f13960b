//! The worker's pages: HTML, `/json`, `/metrics`.

use std::collections::BTreeMap;

use serde_json::{json, Value};

use super::html::{esc, mib, page, summary, table};
use super::metrics::Metrics;
use crate::connection::Counters;
use crate::messages::deploy::WorkerStateResponse;
use crate::messages::{DriverRunnerInfo, ExecutorDescription};

/// What the worker's web UI shows: its state (as `RequestWorkerState` answers it), its
/// connections and their traffic.
#[derive(Debug, Clone)]
pub struct WorkerSnapshot {
    /// The state, as the worker answers `RequestWorkerState`.
    pub state: WorkerStateResponse,
    /// Open connections by the peer's role.
    pub connections: BTreeMap<&'static str, u64>,
    /// Frames and bytes of every connection since the worker started.
    pub traffic: Counters,
}

fn executor_json(e: &ExecutorDescription) -> Value {
    json!({
        "id": e.exec_id,
        "memory": e.memory_mb,
        "cores": e.cores,
        "appid": e.app_id,
        "state": e.state.as_str(),
    })
}

fn driver_json(d: &DriverRunnerInfo) -> Value {
    json!({
        "id": d.driver_id,
        "cores": d.cores,
        "memory": d.memory,
        "state": d.state.as_str(),
    })
}

/// The worker's state as Spark's worker `/json` gives it (`id`, `masterurl`, `masterwebuiurl`,
/// `cores`, `coresused`, `memory`, `memoryused`, `executors`, `finishedexecutors`, …), plus its
/// drivers.
pub fn worker_json(s: &WorkerStateResponse) -> Value {
    json!({
        "id": s.worker_id,
        "masterurl": s.master_url,
        "masterwebuiurl": s.master_web_ui_url,
        "cores": s.cores,
        "coresused": s.cores_used,
        "memory": s.memory,
        "memoryused": s.memory_used,
        "executors": s.executors.iter().map(executor_json).collect::<Vec<_>>(),
        "finishedexecutors": s.finished_executors.iter().map(executor_json).collect::<Vec<_>>(),
        "drivers": s.drivers.iter().map(driver_json).collect::<Vec<_>>(),
        "finisheddrivers": s.finished_drivers.iter().map(driver_json).collect::<Vec<_>>(),
    })
}

fn log_links(query: &str) -> String {
    format!(
        "<a href=\"logPage/?{q}&amp;logType=stdout\">stdout</a> \
         <a href=\"logPage/?{q}&amp;logType=stderr\">stderr</a>",
        q = esc(query)
    )
}

fn executor_rows(execs: &[ExecutorDescription]) -> Vec<Vec<String>> {
    execs
        .iter()
        .map(|e| {
            vec![
                e.exec_id.to_string(),
                esc(&e.app_id),
                e.cores.to_string(),
                mib(i64::from(e.memory_mb)),
                e.state.as_str().to_string(),
                log_links(&format!("appId={}&executorId={}", e.app_id, e.exec_id)),
            ]
        })
        .collect()
}

fn driver_rows(drivers: &[DriverRunnerInfo]) -> Vec<Vec<String>> {
    drivers
        .iter()
        .map(|d| {
            vec![
                esc(&d.driver_id),
                d.cores.to_string(),
                mib(i64::from(d.memory)),
                d.state.as_str().to_string(),
                log_links(&format!("driverId={}", d.driver_id)),
            ]
        })
        .collect()
}

/// The worker's page: a summary, its running and finished executors and drivers with links to
/// their logs. It refreshes itself.
pub fn worker_html(snap: &WorkerSnapshot) -> String {
    let s = &snap.state;
    let master = if s.master_web_ui_url.starts_with("http") {
        format!(
            "{} (<a href=\"{}\">web UI</a>)",
            esc(&s.master_url),
            esc(&s.master_web_ui_url)
        )
    } else {
        esc(&s.master_url)
    };
    let mut body = summary(&[
        ("ID", esc(&s.worker_id)),
        ("Master URL", master),
        ("Cores", format!("{} ({} Used)", s.cores, s.cores_used)),
        (
            "Memory",
            format!(
                "{} ({} Used)",
                mib(i64::from(s.memory)),
                mib(i64::from(s.memory_used))
            ),
        ),
    ]);
    let exec_headers = [
        "Executor ID",
        "Application",
        "Cores",
        "Memory",
        "State",
        "Logs",
    ];
    let driver_headers = ["Driver ID", "Cores", "Memory", "State", "Logs"];
    body.push_str(&table(
        "running-executors",
        "Running Executors",
        &exec_headers,
        &executor_rows(&s.executors),
    ));
    body.push_str(&table(
        "running-drivers",
        "Running Drivers",
        &driver_headers,
        &driver_rows(&s.drivers),
    ));
    body.push_str(&table(
        "finished-executors",
        "Finished Executors",
        &exec_headers,
        &executor_rows(&s.finished_executors),
    ));
    body.push_str(&table(
        "finished-drivers",
        "Finished Drivers",
        &driver_headers,
        &driver_rows(&s.finished_drivers),
    ));
    page(&format!("Spark Worker at {}:{}", s.host, s.port), &body)
}

/// The worker's metrics in the Prometheus text format: cores and memory, executors and
/// drivers, open connections by role, frames and bytes by message type.
pub fn worker_metrics(snap: &WorkerSnapshot) -> String {
    let s = &snap.state;
    let n = |v: i32| u64::try_from(v).unwrap_or(0);
    let mut m = Metrics::default();
    m.gauge("sparkwire_worker_cores", "Cores offered.", n(s.cores));
    m.gauge(
        "sparkwire_worker_cores_used",
        "Cores in use.",
        n(s.cores_used),
    );
    m.gauge(
        "sparkwire_worker_memory_mib",
        "Memory offered, MiB.",
        n(s.memory),
    );
    m.gauge(
        "sparkwire_worker_memory_used_mib",
        "Memory in use, MiB.",
        n(s.memory_used),
    );
    m.gauge(
        "sparkwire_worker_executors",
        "Executors running.",
        s.executors.len() as u64,
    );
    m.gauge(
        "sparkwire_worker_drivers",
        "Drivers running.",
        s.drivers.len() as u64,
    );
    m.family(
        "sparkwire_worker_connections",
        "gauge",
        "Open connections, by the peer's role.",
    );
    for (role, c) in &snap.connections {
        m.sample("sparkwire_worker_connections", &[("role", role)], *c);
    }
    m.traffic("sparkwire_worker", &snap.traffic);
    m.finish()
}
