//! Recovery (Spark's FILESYSTEM recovery mode): applications, workers and drivers persisted in a
//! directory as they change, and the path of a master elected on a directory that holds state:
//! RECOVERING (MasterChanged to every known worker and application, at the addresses they
//! advertised), then COMPLETING_RECOVERY once all answered or the worker timeout passed (the
//! silent ones dropped), then ALIVE.
//!
//! Each record is one JSON file (`app_<id>.json`, `worker_<id>.json`, `driver_<id>.json`, ids
//! percent-encoded), written to a temporary file, synced, renamed over the old one, and the
//! directory synced: a crash at any point leaves either the old record or the new one, never a
//! torn one. Files that cannot be read are skipped with a warning.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use tokio::time::Instant;

use super::actor::MasterActor;
use super::conns::DialTarget;
use super::state::{AppRec, DriverRec, ExecRec, WorkerRec};
use crate::messages::deploy::{MasterChanged, WorkerSchedulerStateResponse};
use crate::messages::{
    ApplicationDescription, ApplicationState, DriverDescription, DriverState, EndpointRef,
    RecoveryState, Resources, WorkerState,
};
use crate::reference::clock::now_ms;
use crate::validate::ConnId;

/// The recovery directory could not be used.
#[derive(Debug, thiserror::Error)]
pub enum PersistError {
    /// A file operation failed.
    #[error("{path}: {source}")]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A record could not be encoded.
    #[error("cannot encode a record: {0}")]
    Encode(#[from] serde_json::Error),
}

/// A persisted application.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StoredApp {
    /// Application id.
    pub id: String,
    /// Its description.
    pub desc: ApplicationDescription,
    /// Its client's endpoint (where MasterChanged goes).
    pub driver: EndpointRef,
    /// Registration time, ms since the epoch.
    pub start_time: i64,
}

/// A persisted worker.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StoredWorker {
    /// Worker id.
    pub id: String,
    /// Host.
    pub host: String,
    /// Port.
    pub port: i32,
    /// Its endpoint (where MasterChanged goes).
    pub endpoint: EndpointRef,
    /// Cores.
    pub cores: i32,
    /// Memory, MiB.
    pub memory: i32,
    /// Web UI URL.
    pub web_ui: String,
    /// Resources.
    pub resources: Resources,
}

/// A persisted driver.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StoredDriver {
    /// Driver id.
    pub id: String,
    /// Its description.
    pub desc: DriverDescription,
    /// Submission time, ms since the epoch.
    pub start_time: i64,
}

/// Everything a recovery directory holds.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Stored {
    /// Applications.
    pub apps: Vec<StoredApp>,
    /// Workers.
    pub workers: Vec<StoredWorker>,
    /// Drivers.
    pub drivers: Vec<StoredDriver>,
}

impl Stored {
    /// True when there is nothing to recover.
    pub fn is_empty(&self) -> bool {
        self.apps.is_empty() && self.workers.is_empty() && self.drivers.is_empty()
    }
}

/// A recovery directory.
#[derive(Debug, Clone)]
pub struct Persistence {
    dir: PathBuf,
}

fn io_err(path: &Path) -> impl FnOnce(std::io::Error) -> PersistError + '_ {
    move |source| PersistError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// An id made safe as part of a file name: letters, digits, `-`, `_` and inner `.` kept, every
/// other byte as `%XX`.
fn encode_id(id: &str) -> String {
    let mut out = String::with_capacity(id.len());
    for (i, b) in id.bytes().enumerate() {
        let keep = b.is_ascii_alphanumeric() || b == b'-' || b == b'_' || (b == b'.' && i > 0);
        if keep {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

impl Persistence {
    /// Opens (creating) the directory.
    pub fn open(dir: &Path) -> Result<Persistence, PersistError> {
        fs::create_dir_all(dir).map_err(io_err(dir))?;
        Ok(Persistence {
            dir: dir.to_path_buf(),
        })
    }

    /// The directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn path(&self, kind: &str, id: &str) -> PathBuf {
        self.dir.join(format!("{kind}_{}.json", encode_id(id)))
    }

    /// Writes one record atomically.
    pub fn write<T: serde::Serialize>(
        &self,
        kind: &str,
        id: &str,
        value: &T,
    ) -> Result<(), PersistError> {
        let path = self.path(kind, id);
        let tmp = self.dir.join(format!(
            ".tmp-{kind}_{}-{}",
            encode_id(id),
            std::process::id()
        ));
        let body = serde_json::to_vec_pretty(value)?;
        {
            let mut f = fs::File::create(&tmp).map_err(io_err(&tmp))?;
            f.write_all(&body).map_err(io_err(&tmp))?;
            f.sync_all().map_err(io_err(&tmp))?;
        }
        fs::rename(&tmp, &path).map_err(io_err(&path))?;
        self.sync_dir()
    }

    /// Removes one record (absent is fine).
    pub fn remove(&self, kind: &str, id: &str) -> Result<(), PersistError> {
        let path = self.path(kind, id);
        match fs::remove_file(&path) {
            Ok(()) => self.sync_dir(),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(io_err(&path)(e)),
        }
    }

    fn sync_dir(&self) -> Result<(), PersistError> {
        // Directories can be opened and synced on Unix; elsewhere this is best effort.
        match fs::File::open(&self.dir) {
            Ok(d) => {
                let _ = d.sync_all();
                Ok(())
            }
            Err(e) => Err(io_err(&self.dir)(e)),
        }
    }

    /// Reads every record; unreadable files are skipped with a warning.
    pub fn read_all(&self) -> Result<Stored, PersistError> {
        let mut stored = Stored::default();
        let entries = fs::read_dir(&self.dir).map_err(io_err(&self.dir))?;
        let mut paths: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
        paths.sort();
        for path in paths {
            let Some(name) = path.file_name().and_then(|n| n.to_str()) else {
                continue;
            };
            if !name.ends_with(".json") {
                continue;
            }
            let body = match fs::read(&path) {
                Ok(b) => b,
                Err(e) => {
                    tracing::warn!(path = %path.display(), error = %e, "skipping an unreadable record");
                    continue;
                }
            };
            let parsed = if name.starts_with("app_") {
                serde_json::from_slice(&body).map(|a| stored.apps.push(a))
            } else if name.starts_with("worker_") {
                serde_json::from_slice(&body).map(|w| stored.workers.push(w))
            } else if name.starts_with("driver_") {
                serde_json::from_slice(&body).map(|d| stored.drivers.push(d))
            } else {
                continue;
            };
            if let Err(e) = parsed {
                tracing::warn!(path = %path.display(), error = %e, "skipping a malformed record");
            }
        }
        Ok(stored)
    }
}

/// The number at the end of a Spark-style id (`app-…-0007` → 7).
fn serial(id: &str) -> Option<u32> {
    id.rsplit('-').next().and_then(|n| n.parse().ok())
}

impl MasterActor {
    fn persist<T: serde::Serialize>(&self, kind: &str, id: &str, value: &T) {
        if let Some(p) = &self.persistence {
            if let Err(e) = p.write(kind, id, value) {
                tracing::error!(error = %e, "cannot persist {kind} {id}");
            }
        }
    }

    fn unpersist(&self, kind: &str, id: &str) {
        if let Some(p) = &self.persistence {
            if let Err(e) = p.remove(kind, id) {
                tracing::error!(error = %e, "cannot remove persisted {kind} {id}");
            }
        }
    }

    pub(crate) fn persist_app(&self, id: &str) {
        if let Some(a) = self.apps.get(id) {
            let stored = StoredApp {
                id: a.id.clone(),
                desc: a.desc.clone(),
                driver: a.driver.clone(),
                start_time: a.start_time,
            };
            self.persist("app", id, &stored);
        }
    }

    pub(crate) fn unpersist_app(&self, id: &str) {
        self.unpersist("app", id);
    }

    pub(crate) fn persist_worker(&self, id: &str) {
        if let Some(w) = self.workers.get(id) {
            let stored = StoredWorker {
                id: w.id.clone(),
                host: w.host.clone(),
                port: w.port,
                endpoint: w.endpoint.clone(),
                cores: w.cores,
                memory: w.memory,
                web_ui: w.web_ui.clone(),
                resources: w.resources.clone(),
            };
            self.persist("worker", id, &stored);
        }
    }

    pub(crate) fn unpersist_worker(&self, id: &str) {
        self.unpersist("worker", id);
    }

    pub(crate) fn persist_driver(&self, id: &str) {
        if let Some(d) = self.drivers.get(id) {
            let stored = StoredDriver {
                id: d.id.clone(),
                desc: d.desc.clone(),
                start_time: d.start_time,
            };
            self.persist("driver", id, &stored);
        }
    }

    pub(crate) fn unpersist_driver(&self, id: &str) {
        self.unpersist("driver", id);
    }

    /// Spark's beginRecovery: every stored application and worker UNKNOWN and told MasterChanged.
    pub(crate) fn begin_recovery(&mut self, stored: Stored) {
        for a in stored.apps {
            tracing::info!("Trying to recover app: {}", a.id);
            if let Some(n) = serial(&a.id) {
                self.next_app_number = self.next_app_number.max(n.saturating_add(1));
            }
            let mut app = AppRec::new(a.id.clone(), a.desc, a.driver.clone(), a.start_time);
            app.state = ApplicationState::Unknown;
            self.apps.insert(a.id.clone(), app);
            self.waiting_apps.push(a.id.clone());
            match a.driver.address {
                Some(addr) => self.dial(addr, DialTarget::App(a.id)),
                None => tracing::info!("App {} had exception on reconnect: no address", a.id),
            }
        }
        for d in stored.drivers {
            if let Some(n) = serial(&d.id) {
                self.next_driver_number = self.next_driver_number.max(n.saturating_add(1));
            }
            self.drivers.insert(
                d.id.clone(),
                DriverRec {
                    id: d.id,
                    desc: d.desc,
                    start_time: d.start_time,
                    state: DriverState::Submitted,
                    worker: None,
                    exception: None,
                },
            );
        }
        for w in stored.workers {
            tracing::info!("Trying to recover worker: {}", w.id);
            let rec = WorkerRec {
                id: w.id.clone(),
                host: w.host,
                port: w.port,
                endpoint: w.endpoint.clone(),
                cores: w.cores,
                memory: w.memory,
                web_ui: w.web_ui,
                resources: w.resources,
                state: WorkerState::Unknown,
                last_heartbeat: std::time::Instant::now(),
                last_heartbeat_ms: now_ms(),
                conn: None,
                executors: Default::default(),
                drivers: Default::default(),
                cores_used: 0,
                memory_used: 0,
            };
            if self.add_worker(rec) {
                match w.endpoint.address {
                    Some(addr) => self.dial(addr, DialTarget::Worker(w.id)),
                    None => {
                        tracing::info!("Worker {} had exception on reconnect: no address", w.id)
                    }
                }
            }
        }
        if self.can_complete_recovery() {
            self.complete_recovery();
        } else {
            self.recovery_deadline = Instant::now().checked_add(self.config.worker_timeout);
        }
    }

    /// The master reached a recovered worker: MasterChanged over the new connection.
    pub(crate) fn dialled_worker(&mut self, conn: ConnId, id: &str) {
        let Some(w) = self.workers.get_mut(id) else {
            self.close_conn(conn);
            return;
        };
        // While recovering, MasterChanged goes even to a worker that registered again meanwhile:
        // its answer tells the master what it runs.
        let wanted = w.state == WorkerState::Unknown
            || (self.state == RecoveryState::Recovering && w.state == WorkerState::Alive);
        if !wanted {
            self.close_conn(conn);
            return;
        }
        if let Some(old) = w.conn.replace(conn) {
            self.conn_worker.remove(&old);
        }
        self.conn_worker.insert(conn, id.to_string());
        self.send_on(
            Some(conn),
            MasterChanged {
                master: self.self_ref.clone(),
                master_web_ui_url: self.web_ui_url.clone(),
            },
        );
    }

    /// The master reached a recovered application's client: MasterChanged over it.
    pub(crate) fn dialled_app(&mut self, conn: ConnId, id: &str) {
        let Some(a) = self.apps.get_mut(id) else {
            self.close_conn(conn);
            return;
        };
        if a.state != ApplicationState::Unknown {
            self.close_conn(conn);
            return;
        }
        if let Some(old) = a.conn.replace(conn) {
            self.conn_app.remove(&old);
        }
        self.conn_app.insert(conn, id.to_string());
        self.send_on(
            Some(conn),
            MasterChanged {
                master: self.self_ref.clone(),
                master_web_ui_url: self.web_ui_url.clone(),
            },
        );
    }

    fn close_conn(&mut self, conn: ConnId) {
        if let Some(c) = self.conns.get(&conn) {
            self.outbox
                .push(crate::reference::outbox::Out::Close(c.peer.clone()));
        }
    }

    /// WorkerSchedulerStateResponse: a recovered worker answered with what it runs.
    pub(crate) fn worker_scheduler_state(&mut self, conn: ConnId, s: WorkerSchedulerStateResponse) {
        let Some(w) = self
            .workers
            .get_mut(&s.id)
            .filter(|w| w.state != WorkerState::Dead)
        else {
            tracing::warn!("Scheduler state from unknown worker: {}", s.id);
            return;
        };
        tracing::info!("Worker has been re-registered: {}", s.id);
        w.state = WorkerState::Alive;
        w.last_heartbeat = std::time::Instant::now();
        w.last_heartbeat_ms = now_ms();
        if let Some(old) = w.conn.replace(conn) {
            if old != conn {
                self.conn_worker.remove(&old);
            }
        }
        self.conn_worker.insert(conn, s.id.clone());
        for e in s.exec_responses {
            let d = e.desc;
            let Some(app) = self.apps.get_mut(&d.app_id) else {
                continue;
            };
            app.next_exec_id = app.next_exec_id.max(d.exec_id.saturating_add(1));
            if d.state.is_finished() {
                continue;
            }
            app.executors.insert(
                d.exec_id,
                ExecRec {
                    worker: s.id.clone(),
                    cores: d.cores,
                    state: d.state,
                    resources: e.resources,
                },
            );
            app.cores_granted = app.cores_granted.saturating_add(d.cores);
            if let Some(w) = self.workers.get_mut(&s.id) {
                w.add_executor((d.app_id.clone(), d.exec_id), d.cores, d.memory_mb);
            }
        }
        for d in s.driver_responses {
            let Some(driver) = self.drivers.get_mut(&d.driver_id) else {
                continue;
            };
            driver.worker = Some(s.id.clone());
            driver.state = DriverState::Running;
            let (cores, mem) = (driver.desc.cores, driver.desc.mem);
            self.waiting_drivers.retain(|x| x != &d.driver_id);
            if let Some(w) = self.workers.get_mut(&s.id) {
                w.add_driver(&d.driver_id, cores, mem);
            }
        }
        if self.state == RecoveryState::Recovering && self.can_complete_recovery() {
            self.complete_recovery();
        }
    }

    /// Whether every recovered worker and application answered.
    pub(crate) fn can_complete_recovery(&self) -> bool {
        !self
            .workers
            .values()
            .any(|w| w.state == WorkerState::Unknown)
            && !self
                .apps
                .values()
                .any(|a| a.state == ApplicationState::Unknown)
    }

    /// Spark's completeRecovery: drops the silent, relaunches or ends unclaimed drivers, ALIVE.
    pub(crate) fn complete_recovery(&mut self) {
        if self.state != RecoveryState::Recovering {
            return;
        }
        self.state = RecoveryState::CompletingRecovery;
        self.recovery_deadline = None;
        let silent_workers: Vec<String> = self
            .workers
            .values()
            .filter(|w| w.state == WorkerState::Unknown)
            .map(|w| w.id.clone())
            .collect();
        for id in silent_workers {
            self.remove_worker(&id, "Not responding for recovery");
        }
        let silent_apps: Vec<String> = self
            .apps
            .values()
            .filter(|a| a.state == ApplicationState::Unknown)
            .map(|a| a.id.clone())
            .collect();
        for id in silent_apps {
            self.finish_application(&id);
        }
        for a in self.apps.values_mut() {
            if a.state == ApplicationState::Waiting {
                a.state = ApplicationState::Running;
            }
        }
        let mut unclaimed: Vec<String> = self
            .drivers
            .values()
            .filter(|d| d.worker.is_none())
            .map(|d| d.id.clone())
            .collect();
        unclaimed.sort();
        for id in unclaimed {
            tracing::warn!("Driver {id} was not found after master recovery");
            let supervise = self.drivers.get(&id).is_some_and(|d| d.desc.supervise);
            if supervise {
                tracing::warn!("Re-launching {id}");
                self.relaunch_driver(&id);
            } else {
                self.remove_driver(&id, DriverState::Error, None);
                tracing::warn!("Did not re-launch {id} because it was not supervised");
            }
        }
        self.state = RecoveryState::Alive;
        self.schedule();
        tracing::info!("Recovery complete - resuming operations!");
    }
}
