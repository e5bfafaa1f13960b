//! What the master core takes in and gives out: a leaf module, imported by the core's
//! sub-states and by whatever drives the core (the async runtime, the in-memory cluster), and
//! importing none of them.

use crate::messages::{
    Addr, ApplicationDescription, DeployMessage, DriverDescription, EndpointRef, Resources,
};
use crate::node::{ConnId, ConnInput};

/// Whom the master dialled, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DialTarget {
    /// A recovered worker, to tell of the master change.
    Worker(String),
    /// A recovered application's client, to tell of the master change.
    App(String),
}

/// Something that happened, for the core to handle.
#[derive(Debug, Clone, PartialEq)]
#[allow(clippy::large_enum_variant)] // as the message enums: boxing would cost an allocation per message
pub enum Input {
    /// Something happened on a connection: accepted (origin `None`) or dialled for a
    /// [`DialTarget`] after an [`Effect::Dial`]. On a close, the driver of the core logs a close
    /// for a protocol error, naming the peer as the core knows it.
    Conn(ConnInput<DeployMessage, Option<DialTarget>>),
    /// This master was elected leader; `stored` is what the recovery directory holds (empty
    /// without one).
    Elected {
        /// The persisted records.
        stored: Stored,
    },
    /// The [`Effect::Persist`] of this record failed; fed at once, before the outputs queued
    /// after it are drained. As Spark fails a registration whose record cannot be persisted,
    /// the core takes back what it queued for the registration and fails it: a worker gets
    /// RegisterWorkerFailed, an application client ApplicationRemoved, a driver submission an
    /// unsuccessful answer; the worker, application or driver is removed.
    PersistFailed {
        /// The record's kind.
        kind: RecordKind,
        /// The record's id.
        id: String,
        /// Why the write failed, for the peer and the log.
        reason: String,
    },
}

/// What the master core wants done besides writing on its connections (its
/// [`Core::Effect`](crate::node::Core::Effect)), in the order it decided it among its
/// [`Output`](crate::node::Output)s.
#[derive(Debug, Clone, PartialEq)]
#[allow(clippy::large_enum_variant)] // as the output it replaces: boxing would cost an allocation per record
pub enum Effect {
    /// Connect to `addr` as the master and report it with [`ConnInput::Opened`] whose origin is `target`
    /// (a failed dial is only logged: the core's recovery deadline deals with silence).
    Dial {
        /// Where.
        addr: Addr,
        /// For whom.
        target: DialTarget,
    },
    /// The peer on `conn` registered (as a worker or an application): it is never cut off for
    /// being silent from now on (the runtime turns the connection's idle timeout off).
    Registered {
        /// Which connection.
        conn: ConnId,
    },
    /// Write a record to the recovery directory, durably, before anything after it is sent.
    Persist(Record),
    /// Remove a record from the recovery directory.
    Unpersist {
        /// Its kind.
        kind: RecordKind,
        /// Its id.
        id: String,
    },
}

/// The kinds of records a recovery directory holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum RecordKind {
    /// An application.
    App,
    /// A worker.
    Worker,
    /// A driver.
    Driver,
}

impl RecordKind {
    /// The file-name prefix of the kind (`app`, `worker`, `driver`).
    pub fn as_str(self) -> &'static str {
        match self {
            RecordKind::App => "app",
            RecordKind::Worker => "worker",
            RecordKind::Driver => "driver",
        }
    }
}

/// A record to persist.
#[derive(Debug, Clone, PartialEq)]
pub enum Record {
    /// An application.
    App(StoredApp),
    /// A worker.
    Worker(StoredWorker),
    /// A driver.
    Driver(StoredDriver),
}

impl Record {
    /// Its kind.
    pub fn kind(&self) -> RecordKind {
        match self {
            Record::App(_) => RecordKind::App,
            Record::Worker(_) => RecordKind::Worker,
            Record::Driver(_) => RecordKind::Driver,
        }
    }

    /// Its id.
    pub fn id(&self) -> &str {
        match self {
            Record::App(a) => &a.id,
            Record::Worker(w) => &w.id,
            Record::Driver(d) => &d.id,
        }
    }
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
    /// What the master keeps of an application that registered over Spark's own wire (through
    /// the master's Spark-wire front): absent for a sparkwire-wire peer, and in records written
    /// before this field existed (read as a sparkwire-wire peer of unknown release).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spark: Option<Box<SparkPeerRecord>>,
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
    /// What the master keeps of a worker that registered over Spark's own wire (see
    /// [`StoredApp::spark`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spark: Option<Box<SparkPeerRecord>>,
}

/// What a recovery record keeps of a peer that speaks Spark's own wire (SPEC §15.5): whatever a
/// master that recovers it needs to speak to it in its own forms.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SparkPeerRecord {
    /// The Spark release the peer was told to speak when it registered (`3.5.9`); absent when
    /// not known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub release: Option<String>,
    /// For an application: the Java serialization stream of the `RegisterApplication` it
    /// registered with, as lowercase hexadecimal (the object graph a `LaunchExecutor` for it
    /// carries on). Absent for a worker.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub registration: Option<String>,
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

    /// Applies a record's write.
    pub fn apply(&mut self, record: Record) {
        let (kind, id) = (record.kind(), record.id().to_string());
        self.remove(kind, &id);
        match record {
            Record::App(a) => self.apps.push(a),
            Record::Worker(w) => self.workers.push(w),
            Record::Driver(d) => self.drivers.push(d),
        }
    }

    /// Applies a record's removal.
    pub fn remove(&mut self, kind: RecordKind, id: &str) {
        match kind {
            RecordKind::App => self.apps.retain(|a| a.id != id),
            RecordKind::Worker => self.workers.retain(|w| w.id != id),
            RecordKind::Driver => self.drivers.retain(|d| d.id != id),
        }
    }
}

impl From<ConnInput<DeployMessage, Option<DialTarget>>> for Input {
    fn from(input: ConnInput<DeployMessage, Option<DialTarget>>) -> Input {
        Input::Conn(input)
    }
}
