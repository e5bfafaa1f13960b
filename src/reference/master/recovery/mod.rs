//! Where a master is elected and keeps its records: the IO the master runtime does around the
//! core's [`Input::Elected`](crate::node::master::Input::Elected), [`Effect::Persist`] and
//! [`Effect::Unpersist`](crate::node::master::Effect::Unpersist), behind one small trait,
//! [`RecoveryStore`], with two implementations:
//!
//! - [`file`](mod@file): Spark's FILESYSTEM mode, a directory of JSON records and a leader lock file
//!   ([`ha`](super::ha)), for masters on one machine or one NFS server;
//! - [`zookeeper`] (feature `zookeeper`): Spark's ZOOKEEPER mode, ephemeral sequential nodes under
//!   `<dir>/leader_election` and records under `<dir>/master_status`, every record write fenced
//!   by a multi-operation that checks this master's own election node.
//!
//! The contract every store keeps, and the runtime relies on:
//! - [`RecoveryStore::elect`] starts standing for election and returns; the store reports
//!   [`LeaderEvent::Elected`] once this master leads, and [`LeaderEvent::Lost`] once it may no
//!   longer lead (another master took over, the session expired, a renewal failed). After `Lost`
//!   every write fails.
//! - A write ([`RecoveryStore::write`], [`RecoveryStore::remove`]) that returns `Ok` was made
//!   while this master led: a master that lost its leadership cannot write ("fenced").
//! - A write that cannot be made now (connection to ZooKeeper lost) waits, and the master's loop
//!   with it, until it can or until leadership is lost: a dropped connection pauses the master,
//!   it does not stop it.
//!
//! [`Effect::Persist`]: crate::node::master::Effect::Persist

pub mod file;
#[cfg(feature = "zookeeper")]
pub mod zookeeper;

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use super::ha::LeaderEvent;
use crate::node::master::{Record, RecordKind, Stored};

/// Where masters meet in ZooKeeper (`--recovery-mode zookeeper`; the client needs the
/// `zookeeper` feature).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ZooKeeperConfig {
    /// The ensemble, `host:port[,host:port…]` (`spark.deploy.zookeeper.url`).
    pub servers: String,
    /// The directory of the election and the records (`spark.deploy.zookeeper.dir`, default
    /// `/spark`).
    pub dir: String,
    /// The session timeout asked of the ensemble (which bounds it by its own minimum and maximum,
    /// by default 2 and 20 ticks): how long after a master's death or isolation its election node
    /// goes, and a standby takes over. Default 6 s.
    pub session_timeout: Duration,
    /// How long one connection attempt to a server may take. Default 2 s.
    pub connect_timeout: Duration,
}

impl ZooKeeperConfig {
    /// The ensemble `servers` and the directory `dir`, with the default timeouts.
    pub fn new(servers: &str, dir: &str) -> ZooKeeperConfig {
        ZooKeeperConfig {
            servers: servers.to_string(),
            dir: dir.to_string(),
            session_timeout: Duration::from_secs(6),
            connect_timeout: Duration::from_secs(2),
        }
    }
}

/// A boxed future, for [`RecoveryStore`]'s methods.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// Where a store reports what the election decided.
pub type LeaderSink = Arc<dyn Fn(LeaderEvent) + Send + Sync>;

/// A recovery store could not do what it was asked.
#[derive(Debug, thiserror::Error)]
pub enum RecoveryError {
    /// The recovery directory could not be used.
    #[error(transparent)]
    File(#[from] super::PersistError),
    /// This master no longer leads: the write was refused (fenced).
    #[error("not the leader: {0}")]
    Fenced(String),
    /// ZooKeeper refused or failed the operation.
    #[error("zookeeper: {0}")]
    ZooKeeper(String),
    /// A record could not be encoded.
    #[error("cannot encode a record: {0}")]
    Encode(#[from] serde_json::Error),
    /// The file operation's task was cancelled (the runtime is shutting down).
    #[error("cancelled: {0}")]
    Cancelled(String),
    /// The recovery settings do not make sense.
    #[error("{0}")]
    Config(String),
}

/// What the master runtime needs of a recovery store; see the [module docs](self).
pub trait RecoveryStore: Send {
    /// Starts standing for election; `events` learns [`LeaderEvent::Elected`] and then
    /// [`LeaderEvent::Lost`]. An error here (ZooKeeper unreachable past the timeout) stops the
    /// master.
    fn elect(&mut self, events: LeaderSink) -> BoxFuture<'_, Result<(), RecoveryError>>;

    /// Every record the store holds; unreadable ones are skipped with a warning.
    fn read_all(&mut self) -> BoxFuture<'_, Result<Stored, RecoveryError>>;

    /// Writes `record` (replacing one of the same kind and id), only while this master leads.
    fn write<'a>(&'a mut self, record: &'a Record) -> BoxFuture<'a, Result<(), RecoveryError>>;

    /// Removes the record of `kind` and `id` (absent is fine), only while this master leads.
    fn remove<'a>(
        &'a mut self,
        kind: RecordKind,
        id: &'a str,
    ) -> BoxFuture<'a, Result<(), RecoveryError>>;

    /// Stops standing for election. `clean` (a graceful shutdown): gives the leadership up at
    /// once (the lock released, the ZooKeeper session closed and its closing waited for) so a
    /// standby takes over without waiting for a timeout. Otherwise the lock file is left to go
    /// stale; the ZooKeeper client is dropped, which still closes the session if the process
    /// lives on (only a process that dies leaves its session to expire).
    fn step_down(&mut self, clean: bool) -> BoxFuture<'_, ()>;

    /// The store's name for logs (`filesystem DIR`, `zookeeper HOSTS/DIR`).
    fn describe(&self) -> String;
}

/// The store `config` asks for (`None`: no recovery, the master leads at once), for the master
/// `holder`.
pub fn open(
    config: &super::MasterConfig,
    holder: &str,
) -> Result<Option<Box<dyn RecoveryStore>>, RecoveryError> {
    match (&config.zookeeper, &config.recovery_dir) {
        (Some(_), Some(_)) => Err(RecoveryError::Config(
            "a recovery directory and ZooKeeper are two recovery modes: give one".into(),
        )),
        (Some(zk), None) => open_zookeeper(zk, holder),
        (None, Some(dir)) => Ok(Some(Box::new(file::FileStore::open(
            dir,
            holder,
            config.lease,
        )?))),
        (None, None) => Ok(None),
    }
}

#[cfg(feature = "zookeeper")]
fn open_zookeeper(
    config: &ZooKeeperConfig,
    holder: &str,
) -> Result<Option<Box<dyn RecoveryStore>>, RecoveryError> {
    if !config.dir.starts_with('/') || config.dir.len() < 2 {
        return Err(RecoveryError::Config(format!(
            "the ZooKeeper directory must be an absolute path below the root, not {:?}",
            config.dir
        )));
    }
    Ok(Some(Box::new(zookeeper::ZooKeeperStore::new(
        config.clone(),
        holder,
    ))))
}

#[cfg(not(feature = "zookeeper"))]
fn open_zookeeper(
    _config: &ZooKeeperConfig,
    _holder: &str,
) -> Result<Option<Box<dyn RecoveryStore>>, RecoveryError> {
    Err(RecoveryError::Config(
        "this build has no ZooKeeper client (the zookeeper feature)".into(),
    ))
}

/// A record's name in a store: `<kind>_<id>` with the id made safe (letters, digits, `-`, `_`
/// and inner `.` kept, every other byte as `%XX`), as Spark names its records (`app_<id>`,
/// `worker_<id>`, `driver_<id>`).
pub fn record_name(kind: RecordKind, id: &str) -> String {
    let mut out = String::with_capacity(id.len() + 8);
    out.push_str(kind.as_str());
    out.push('_');
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

/// A record's body in a store: its JSON (sparkwire's own form, not Java serialization).
pub fn encode_record(record: &Record) -> Result<Vec<u8>, serde_json::Error> {
    match record {
        Record::App(a) => serde_json::to_vec_pretty(a),
        Record::Worker(w) => serde_json::to_vec_pretty(w),
        Record::Driver(d) => serde_json::to_vec_pretty(d),
    }
}

/// Adds the record named `name` with body `body` to `stored`; `Err` names why it was skipped
/// (not a record's name, or a body that does not parse).
pub fn decode_record(stored: &mut Stored, name: &str, body: &[u8]) -> Result<(), String> {
    let parsed = if name.starts_with("app_") {
        serde_json::from_slice(body).map(|a| stored.apps.push(a))
    } else if name.starts_with("worker_") {
        serde_json::from_slice(body).map(|w| stored.workers.push(w))
    } else if name.starts_with("driver_") {
        serde_json::from_slice(body).map(|d| stored.drivers.push(d))
    } else {
        return Err("not a record's name".into());
    };
    parsed.map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn record_names_keep_safe_ids_and_escape_the_rest() {
        assert_eq!(
            record_name(RecordKind::App, "app-20250101000000-0001"),
            "app_app-20250101000000-0001"
        );
        assert_eq!(
            record_name(RecordKind::Worker, "w/../x y"),
            "worker_w%2F..%2Fx%20y"
        );
        assert_eq!(
            record_name(RecordKind::Driver, ".hidden"),
            "driver_%2Ehidden"
        );
    }

    #[test]
    fn a_corrupt_record_is_refused_and_the_others_kept() {
        let mut stored = Stored::default();
        assert!(decode_record(&mut stored, "app_x", b"{not json").is_err());
        assert!(decode_record(&mut stored, "lock", b"{}").is_err());
        let d = crate::node::master::StoredDriver {
            id: "driver-1".into(),
            desc: crate::messages::DriverDescription {
                jar_url: "file:///app.jar".into(),
                mem: 512,
                cores: 1,
                supervise: false,
                command: crate::messages::Command {
                    main_class: "Main".into(),
                    arguments: vec![],
                    environment: Default::default(),
                    class_path_entries: vec![],
                    library_path_entries: vec![],
                    java_opts: vec![],
                },
                resource_reqs: vec![],
            },
            start_time: 1,
        };
        let body = encode_record(&Record::Driver(d.clone())).unwrap();
        decode_record(&mut stored, "driver_driver-1", &body).unwrap();
        assert_eq!(stored.drivers, vec![d]);
    }
}
