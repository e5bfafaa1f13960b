//! The master's pages: HTML, `/json`, `/metrics`.

use std::collections::BTreeMap;

use serde_json::{json, Map, Value};

use super::html::{duration, esc, mib, page, summary, table};
use super::metrics::Metrics;
use crate::connection::Counters;
use crate::messages::deploy::MasterStateResponse;
use crate::messages::{ApplicationInfo, DriverInfo, Resources, WorkerInfo, WorkerState};
use crate::node::clock::utc_date;
use crate::node::master::{ExecutorRow, MasterStatus};

/// Spark's default executor memory, MiB, when a profile names none.
const DEFAULT_EXECUTOR_MEMORY_MB: i64 = 1024;

/// What the master's web UI shows: the core's status and the traffic of its connections.
#[derive(Debug, Clone)]
pub struct MasterSnapshot {
    /// The core's status.
    pub status: MasterStatus,
    /// Frames and bytes of every connection since the master started.
    pub traffic: Counters,
}

fn master_url(s: &MasterStateResponse) -> String {
    crate::node::url::MasterUrl::single(&crate::messages::Addr::new(s.host.clone(), s.port))
}

fn resources_json(r: &Resources) -> Value {
    let mut m = Map::new();
    for (name, info) in r {
        m.insert(
            name.clone(),
            json!({ "name": info.name, "addresses": info.addresses }),
        );
    }
    Value::Object(m)
}

fn worker_json(w: &WorkerInfo) -> Value {
    json!({
        "id": w.id,
        "host": w.host,
        "port": w.port,
        "webuiaddress": w.web_ui_address,
        "cores": w.cores,
        "coresused": w.cores_used,
        "coresfree": w.cores.saturating_sub(w.cores_used),
        "memory": w.memory,
        "memoryused": w.memory_used,
        "memoryfree": w.memory.saturating_sub(w.memory_used),
        "resources": resources_json(&w.resources),
        "state": w.state.as_str(),
        "lastheartbeat": w.last_heartbeat,
        "sparkrelease": w.spark_release,
    })
}

/// Memory per executor of an application, MiB.
fn memory_per_executor(a: &ApplicationInfo) -> i64 {
    a.desc
        .default_profile
        .executor_amount("memory")
        .unwrap_or(DEFAULT_EXECUTOR_MEMORY_MB)
}

fn app_json(a: &ApplicationInfo, now_ms: i64) -> Value {
    let resources: Vec<Value> = a
        .desc
        .default_profile
        .executor_resources
        .iter()
        .filter(|(name, _)| !matches!(name.as_str(), "cores" | "memory"))
        .map(|(name, r)| json!({ "name": name, "amount": r.amount }))
        .collect();
    let end = if a.end_time >= 0 { a.end_time } else { now_ms };
    json!({
        "id": a.id,
        "starttime": a.start_time,
        "name": a.desc.name,
        "cores": a.cores_granted,
        "user": a.desc.user,
        "memoryperexecutor": memory_per_executor(a),
        "memoryperslave": memory_per_executor(a),
        "resourcesperexecutor": resources,
        "resourcesperslave": resources,
        "submitdate": utc_date(a.start_time),
        "state": a.state.as_str(),
        "duration": end.saturating_sub(a.start_time).max(0),
        "sparkrelease": a.spark_release,
        "waitingreason": a.waiting_reason,
    })
}

fn driver_json(d: &DriverInfo) -> Value {
    json!({
        "id": d.id,
        "starttime": d.start_time.to_string(),
        "state": d.state.as_str(),
        "cores": d.desc.cores,
        "memory": d.desc.mem,
        "submitdate": utc_date(d.start_time),
        "worker": d.worker_id.clone().unwrap_or_else(|| "None".into()),
        "mainclass": d.desc.command.main_class,
        "waitingreason": d.waiting_reason,
    })
}

/// The master's state as Spark's `/json` gives it (`url`, `workers`, `aliveworkers`, `cores`,
/// `coresused`, `memory`, `memoryused`, `activeapps`, `completedapps`, `activedrivers`,
/// `completeddrivers`, `status`, …), from the `RequestMasterState` answer.
pub fn master_json(s: &MasterStateResponse) -> Value {
    master_json_at(s, crate::reference::clock::now_ms())
}

fn master_json_at(s: &MasterStateResponse, now_ms: i64) -> Value {
    let alive: Vec<&WorkerInfo> = s
        .workers
        .iter()
        .filter(|w| w.state == WorkerState::Alive)
        .collect();
    let sum = |f: fn(&WorkerInfo) -> i32| alive.iter().map(|w| i64::from(f(w))).sum::<i64>();
    json!({
        "url": master_url(s),
        "workers": s.workers.iter().map(worker_json).collect::<Vec<_>>(),
        "aliveworkers": alive.len(),
        "cores": sum(|w| w.cores),
        "coresused": sum(|w| w.cores_used),
        "memory": sum(|w| w.memory),
        "memoryused": sum(|w| w.memory_used),
        "resources": alive.iter().map(|w| resources_json(&w.resources)).collect::<Vec<_>>(),
        "activeapps": s.active_apps.iter().map(|a| app_json(a, now_ms)).collect::<Vec<_>>(),
        "completedapps": s.completed_apps.iter().map(|a| app_json(a, now_ms)).collect::<Vec<_>>(),
        "activedrivers": s.active_drivers.iter().map(driver_json).collect::<Vec<_>>(),
        "completeddrivers": s.completed_drivers.iter().map(driver_json).collect::<Vec<_>>(),
        "status": s.status.as_str(),
    })
}

fn link(url: &str, text: &str) -> String {
    if url.starts_with("http://") || url.starts_with("https://") {
        format!("<a href=\"{}\">{}</a>", esc(url), esc(text))
    } else {
        esc(text)
    }
}

/// The columns of [`application_row`], as Spark's master page names them.
pub const APPLICATION_COLUMNS: [&str; 8] = [
    "Application ID",
    "Name",
    "Cores",
    "Memory per Executor",
    "Submitted Time",
    "User",
    "State",
    "Duration",
];

/// An application as the master's page shows it (plain text), under [`APPLICATION_COLUMNS`].
pub fn application_row(a: &ApplicationInfo, now_ms: i64) -> Vec<String> {
    let end = if a.end_time >= 0 { a.end_time } else { now_ms };
    vec![
        a.id.clone(),
        a.desc.name.clone(),
        a.cores_granted.to_string(),
        mib(memory_per_executor(a)),
        utc_date(a.start_time),
        a.desc.user.clone(),
        a.state.as_str().to_string(),
        duration(end.saturating_sub(a.start_time)),
    ]
}

/// The columns of [`driver_row`], as Spark's master page names them.
pub const DRIVER_COLUMNS: [&str; 7] = [
    "Submission ID",
    "Submitted Time",
    "Worker",
    "State",
    "Cores",
    "Memory",
    "Main Class",
];

/// A driver as the master's page shows it (plain text), under [`DRIVER_COLUMNS`].
pub fn driver_row(d: &DriverInfo) -> Vec<String> {
    vec![
        d.id.clone(),
        utc_date(d.start_time),
        d.worker_id.clone().unwrap_or_else(|| "-".into()),
        d.state.as_str().to_string(),
        d.desc.cores.to_string(),
        mib(i64::from(d.desc.mem)),
        d.desc.command.main_class.clone(),
    ]
}

fn app_rows(apps: &[ApplicationInfo], now_ms: i64, executors: &[ExecutorRow]) -> Vec<Vec<String>> {
    apps.iter()
        .map(|a| {
            let mut row: Vec<String> = application_row(a, now_ms).iter().map(|c| esc(c)).collect();
            row[0] = link(&a.desc.app_ui_url, &a.id);
            let execs = executors.iter().filter(|e| e.app_id == a.id).count();
            row.push(execs.to_string());
            row.push(esc(a.spark_release.as_deref().unwrap_or("-")));
            row.push(esc(a.waiting_reason.as_deref().unwrap_or("-")));
            row
        })
        .collect()
}

fn driver_rows(drivers: &[DriverInfo]) -> Vec<Vec<String>> {
    drivers
        .iter()
        .map(|d| {
            let mut row: Vec<String> = driver_row(d).iter().map(|c| esc(c)).collect();
            row.push(esc(d.waiting_reason.as_deref().unwrap_or("-")));
            row
        })
        .collect()
}

/// The master's page: a summary, the workers with their cores and memory used and free, the
/// running applications and their executors, the drivers, the completed applications and
/// drivers. It refreshes itself.
pub fn master_html(snap: &MasterSnapshot) -> String {
    let s = &snap.status.state;
    let url = master_url(s);
    let json = master_json_at(s, snap.status.now_ms);
    let num = |k: &str| json[k].as_i64().unwrap_or(0);
    let mut body = summary(&[
        ("URL", esc(&url)),
        ("Alive Workers", num("aliveworkers").to_string()),
        (
            "Cores in use",
            format!("{} Total, {} Used", num("cores"), num("coresused")),
        ),
        (
            "Memory in use",
            format!(
                "{} Total, {} Used",
                mib(num("memory")),
                mib(num("memoryused"))
            ),
        ),
        (
            "Applications",
            format!(
                "{} Running, {} Completed",
                s.active_apps.len(),
                s.completed_apps.len()
            ),
        ),
        (
            "Drivers",
            format!(
                "{} Running, {} Completed",
                s.active_drivers.len(),
                s.completed_drivers.len()
            ),
        ),
        ("Status", s.status.as_str().to_string()),
    ]);
    let workers: Vec<Vec<String>> = s
        .workers
        .iter()
        .map(|w| {
            vec![
                link(&w.web_ui_address, &w.id),
                esc(&format!("{}:{}", w.host, w.port)),
                w.state.as_str().to_string(),
                format!(
                    "{} ({} Used, {} Free)",
                    w.cores,
                    w.cores_used,
                    w.cores.saturating_sub(w.cores_used)
                ),
                format!(
                    "{} ({} Used, {} Free)",
                    mib(i64::from(w.memory)),
                    mib(i64::from(w.memory_used)),
                    mib(i64::from(w.memory.saturating_sub(w.memory_used)))
                ),
                esc(w.spark_release.as_deref().unwrap_or("-")),
            ]
        })
        .collect();
    body.push_str(&table(
        "workers",
        "Workers",
        &[
            "Worker Id",
            "Address",
            "State",
            "Cores",
            "Memory",
            "Spark Release",
        ],
        &workers,
    ));
    let mut app_headers = APPLICATION_COLUMNS.to_vec();
    app_headers.extend(["Executors", "Spark Release", "Waiting For"]);
    body.push_str(&table(
        "running-apps",
        "Running Applications",
        &app_headers,
        &app_rows(&s.active_apps, snap.status.now_ms, &snap.status.executors),
    ));
    let executors: Vec<Vec<String>> = snap
        .status
        .executors
        .iter()
        .map(|e| {
            vec![
                esc(&e.app_id),
                e.exec_id.to_string(),
                esc(&e.worker_id),
                e.cores.to_string(),
                mib(i64::from(e.memory_mb)),
                e.state.as_str().to_string(),
            ]
        })
        .collect();
    body.push_str(&table(
        "executors",
        "Executors",
        &[
            "Application ID",
            "Executor ID",
            "Worker",
            "Cores",
            "Memory",
            "State",
        ],
        &executors,
    ));
    let mut driver_headers = DRIVER_COLUMNS.to_vec();
    driver_headers.push("Waiting For");
    body.push_str(&table(
        "running-drivers",
        "Running Drivers",
        &driver_headers,
        &driver_rows(&s.active_drivers),
    ));
    body.push_str(&table(
        "completed-apps",
        "Completed Applications",
        &app_headers,
        &app_rows(&s.completed_apps, snap.status.now_ms, &[]),
    ));
    body.push_str(&table(
        "completed-drivers",
        "Completed Drivers",
        &driver_headers,
        &driver_rows(&s.completed_drivers),
    ));
    page(&format!("Spark Master at {url}"), &body)
}

/// The master's metrics in the Prometheus text format: workers by state, cores and memory of
/// the alive workers, applications, executors and drivers, open connections by role, frames
/// and bytes by message type.
pub fn master_metrics(snap: &MasterSnapshot) -> String {
    let s = &snap.status.state;
    let mut m = Metrics::default();
    let alive: Vec<&WorkerInfo> = s
        .workers
        .iter()
        .filter(|w| w.state == WorkerState::Alive)
        .collect();
    let total = |f: fn(&WorkerInfo) -> i32| {
        alive
            .iter()
            .map(|w| u64::try_from(f(w)).unwrap_or(0))
            .sum::<u64>()
    };
    m.gauge(
        "sparkwire_master_workers_alive",
        "Workers in state ALIVE.",
        alive.len() as u64,
    );
    m.family(
        "sparkwire_master_workers",
        "gauge",
        "Workers known to the master, by state.",
    );
    let mut by_state: BTreeMap<&str, u64> = BTreeMap::new();
    for w in &s.workers {
        *by_state.entry(w.state.as_str()).or_default() += 1;
    }
    for (state, n) in &by_state {
        m.sample("sparkwire_master_workers", &[("state", state)], *n);
    }
    m.gauge(
        "sparkwire_master_cores",
        "Cores of the alive workers.",
        total(|w| w.cores),
    );
    m.gauge(
        "sparkwire_master_cores_used",
        "Cores in use on the alive workers.",
        total(|w| w.cores_used),
    );
    m.gauge(
        "sparkwire_master_memory_mib",
        "Memory of the alive workers, MiB.",
        total(|w| w.memory),
    );
    m.gauge(
        "sparkwire_master_memory_used_mib",
        "Memory in use on the alive workers, MiB.",
        total(|w| w.memory_used),
    );
    for (name, what, active, completed) in [
        (
            "sparkwire_master_applications",
            "Applications",
            s.active_apps.len(),
            s.completed_apps.len(),
        ),
        (
            "sparkwire_master_drivers",
            "Drivers",
            s.active_drivers.len(),
            s.completed_drivers.len(),
        ),
    ] {
        let help = format!("{what}, active or completed (those retained).");
        m.family(name, "gauge", &help);
        m.sample(name, &[("state", "active")], active as u64);
        m.sample(name, &[("state", "completed")], completed as u64);
    }
    m.gauge(
        "sparkwire_master_executors",
        "Executors of the active applications.",
        snap.status.executors.len() as u64,
    );
    m.family(
        "sparkwire_master_connections",
        "gauge",
        "Open connections, by the peer's role.",
    );
    for (role, n) in &snap.status.connections {
        m.sample("sparkwire_master_connections", &[("role", role)], *n);
    }
    m.traffic("sparkwire_master", &snap.traffic);
    m.finish()
}
