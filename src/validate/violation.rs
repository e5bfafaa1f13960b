//! Verdicts: a broken rule, the event that broke it, what was expected instead, and the entity.

use std::fmt;

use super::event::ConnId;
use super::rules::Rule;

/// Which event a verdict is about.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventRef {
    /// The event's position among the events fed to the validator, from 0. `None` for verdicts
    /// given at the end of the trace.
    pub index: Option<u64>,
    /// The event's time, milliseconds.
    pub time: u64,
    /// The connection, if the event had one.
    pub conn: Option<ConnId>,
    /// What the event carried: `open`, `close`, a message name, `reply #7 (bool)`, `failure #7`, or
    /// `end of trace`.
    pub what: String,
}

impl fmt::Display for EventRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.index {
            Some(i) => write!(f, "event {i}")?,
            None => f.write_str("end")?,
        }
        write!(f, " at {} ms", self.time)?;
        if let Some(c) = self.conn {
            write!(f, " on conn {c}")?;
        }
        write!(f, ": {}", self.what)
    }
}

/// The entity a verdict is about.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Entity {
    /// A connection.
    Connection(ConnId),
    /// An ask, by connection and id.
    Ask {
        /// The connection.
        conn: ConnId,
        /// The ask id.
        id: u64,
    },
    /// A worker, by worker id.
    Worker(String),
    /// An application, by app id.
    App(String),
    /// An executor of an application, as the master knows it.
    AppExecutor {
        /// Application id.
        app: String,
        /// Executor id within the application.
        exec: i32,
    },
    /// A driver submitted in cluster mode, by driver id.
    Driver(String),
    /// An executor of a driver, as the driver knows it.
    Executor {
        /// The driver's endpoint id.
        driver: String,
        /// Executor id.
        exec: String,
    },
    /// A task on an executor.
    Task {
        /// Executor id.
        exec: String,
        /// Task id, when known.
        task: Option<i64>,
    },
}

impl fmt::Display for Entity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Entity::Connection(c) => write!(f, "connection {c}"),
            Entity::Ask { conn, id } => write!(f, "ask #{id} on connection {conn}"),
            Entity::Worker(w) => write!(f, "worker {w}"),
            Entity::App(a) => write!(f, "application {a}"),
            Entity::AppExecutor { app, exec } => write!(f, "executor {app}/{exec}"),
            Entity::Driver(d) => write!(f, "driver {d}"),
            Entity::Executor { driver, exec } => write!(f, "executor {exec} of driver {driver}"),
            Entity::Task {
                exec,
                task: Some(t),
            } => write!(f, "task {t} on executor {exec}"),
            Entity::Task { exec, task: None } => write!(f, "a task on executor {exec}"),
        }
    }
}

/// A broken rule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    /// The rule.
    pub rule: Rule,
    /// The event that broke it.
    pub event: EventRef,
    /// What a conforming peer would have done instead.
    pub expected: String,
    /// The entity involved, if any.
    pub entity: Option<Entity>,
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} [{}]", self.event, self.rule)?;
        if let Some(e) = &self.entity {
            write!(f, " ({e})")?;
        }
        write!(f, ": expected {}", self.expected)
    }
}
