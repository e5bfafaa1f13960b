//! Timed obligations (rules L1, L2), the same answers owed at the end of the trace (rules N3,
//! N4), and the link between the master's and the driver's view of an executor (rule J1).
//!
//! An obligation is opened by a message and discharged by its answer; if the trace's clock passes
//! its deadline first, the next event (or the end of the trace) reports it, once. The bounds come
//! from [`Config`]; `None` switches the timed rule off. What is still owed on an open connection
//! when the trace ends is reported by [`Obligations::finish`], whatever the bounds. Memory stays
//! bounded: obligations are kept per connection and capped, the executors launched are a bounded
//! history.

use std::collections::{HashMap, HashSet};

use super::config::Config;
use super::event::{ConnId, Endpoint};
use super::history::{History, Recent};
use super::rules::Rule;
use super::sink::Sink;
use super::violation::Entity;
use crate::messages::{CoarseMessage, DeployMessage};
use crate::wire::handshake::Role;

/// Most open obligations kept per connection; older ones are dropped.
const MAX_PER_CONN: usize = 1024;

/// A RegisterApplication waiting for its RegisteredApplication.
#[derive(Debug, Clone)]
struct Registration {
    /// When it was sent.
    at: u64,
    /// The master it went to (endpoint id).
    master: String,
    /// The application client that sent it (endpoint id).
    client: String,
}

/// A LaunchExecutor waiting for its worker's first ExecutorStateChanged.
#[derive(Debug, Clone)]
struct Launch {
    app: String,
    exec: i32,
    at: u64,
}

#[derive(Debug)]
pub(crate) struct Obligations {
    /// Per worker connection: the launches not yet answered.
    launches: HashMap<ConnId, Vec<Launch>>,
    /// Per application client connection: its first unanswered RegisterApplication.
    registrations: HashMap<ConnId, Registration>,
    /// Masters (endpoint ids) that said they are in standby; Spark's standby master ignores
    /// RegisterApplication.
    standby: HashSet<String>,
    /// Application client connections on which an application is registered: a second
    /// RegisterApplication there is ignored (SPEC §14.2 Z1) and owed no answer.
    registered: HashSet<ConnId>,
    /// The application each application-client endpoint registered (endpoint id → app id).
    app_of_client: Recent<String, String>,
    /// Executors the master launched, as (app id, executor id).
    launched: History<(String, i32)>,
    /// Whether the trace holds a worker's connection: the master's launches are in view (rule
    /// J1 is checked only then; a driver's own trace, with its application client, holds none).
    worker_view: bool,
}

impl Obligations {
    pub(crate) fn new(cap: usize) -> Self {
        Obligations {
            launches: HashMap::new(),
            registrations: HashMap::new(),
            standby: HashSet::new(),
            registered: HashSet::new(),
            app_of_client: Recent::new(cap),
            launched: History::new(cap),
            worker_view: false,
        }
    }

    /// Reports every obligation whose deadline `now` has passed, and forgets it.
    pub(crate) fn overdue(&mut self, now: u64, config: &Config, sink: &mut Sink<'_>) {
        if let Some(bound) = config
            .executor_state_within_ms
            .filter(|_| !self.launches.is_empty())
        {
            let mut conns: Vec<ConnId> = self.launches.keys().copied().collect();
            conns.sort_unstable();
            for conn in conns {
                let Some(list) = self.launches.get_mut(&conn) else {
                    continue;
                };
                list.retain(|l| {
                    let late = now.saturating_sub(l.at) > bound;
                    if late {
                        sink.flag(
                            Rule::TimedExecutorState,
                            format!(
                                "an ExecutorStateChanged for {}/{} within {bound} ms of its LaunchExecutor at {} ms (connection {conn}); none by {now} ms",
                                l.app, l.exec, l.at
                            ),
                            Some(Entity::AppExecutor {
                                app: l.app.clone(),
                                exec: l.exec,
                            }),
                        );
                    }
                    !late
                });
            }
            self.launches.retain(|_, l| !l.is_empty());
        }
        if let Some(bound) = config
            .app_registration_within_ms
            .filter(|_| !self.registrations.is_empty())
        {
            let mut late: Vec<(ConnId, u64)> = self
                .registrations
                .iter()
                .filter(|(_, r)| now.saturating_sub(r.at) > bound)
                .map(|(c, r)| (*c, r.at))
                .collect();
            late.sort_unstable();
            for (conn, at) in late {
                self.registrations.remove(&conn);
                sink.flag(
                    Rule::TimedAppRegistered,
                    format!(
                        "RegisteredApplication within {bound} ms of the RegisterApplication at {at} ms on connection {conn}; none by {now} ms"
                    ),
                    Some(Entity::Connection(conn)),
                );
            }
        }
    }

    /// A deploy message from `from` to `to` on `conn`.
    pub(crate) fn deploy(
        &mut self,
        conn: ConnId,
        from: &Endpoint,
        to: &Endpoint,
        m: &DeployMessage,
        now: u64,
    ) {
        if from.role == Role::Worker || to.role == Role::Worker {
            self.worker_view = true;
        }
        match m {
            DeployMessage::LaunchExecutor(l) if to.role == Role::Worker => {
                self.launched.insert((l.app_id.clone(), l.exec_id), ());
                let list = self.launches.entry(conn).or_default();
                if list.len() >= MAX_PER_CONN {
                    list.remove(0);
                }
                list.push(Launch {
                    app: l.app_id.clone(),
                    exec: l.exec_id,
                    at: now,
                });
            }
            DeployMessage::ExecutorStateChanged(e) => {
                for list in self.launches.values_mut() {
                    list.retain(|l| !(l.app == e.app_id && l.exec == e.exec_id));
                }
                self.launches.retain(|_, l| !l.is_empty());
            }
            DeployMessage::RegisterApplication(_)
                if !self.standby.contains(&to.id) && !self.registered.contains(&conn) =>
            {
                self.registrations
                    .entry(conn)
                    .or_insert_with(|| Registration {
                        at: now,
                        master: to.id.clone(),
                        client: from.id.clone(),
                    });
            }
            DeployMessage::RegisteredApplication(r) => {
                self.registrations.remove(&conn);
                self.registered.insert(conn);
                self.standby.remove(&from.id);
                if to.role == Role::AppClient {
                    self.app_of_client.insert(to.id.clone(), r.app_id.clone());
                }
            }
            DeployMessage::MasterInStandby(_) => {
                // A standby master ignores RegisterApplication, also what it got before.
                self.standby.insert(from.id.clone());
                self.registrations.retain(|_, r| r.master != from.id);
            }
            DeployMessage::MasterChanged(_) | DeployMessage::RegisteredWorker(_) => {
                self.standby.remove(&from.id);
            }
            _ => {}
        }
    }

    /// A coarse-grained message from `from` to `to`: rule J1.
    pub(crate) fn coarse(
        &mut self,
        from: &Endpoint,
        to: &Endpoint,
        m: &CoarseMessage,
        sink: &mut Sink<'_>,
    ) {
        let CoarseMessage::RegisterExecutor(r) = m else {
            return;
        };
        if from.role != Role::Executor || to.role != Role::Driver || !self.worker_view {
            return;
        }
        // The driver's application, when its application client (same endpoint id) registered.
        let Some(app) = self.app_of_client.get(&to.id) else {
            return;
        };
        let launched = r
            .executor_id
            .parse::<i32>()
            .ok()
            .filter(|n| n.to_string() == r.executor_id)
            .is_some_and(|n| self.launched.contains(&(app.clone(), n)));
        if !launched {
            sink.flag(
                Rule::LinkExecutorIds,
                format!(
                    "an executor id the master launched for {app} (its decimal execId); {:?} was not",
                    r.executor_id
                ),
                Some(Entity::Executor {
                    driver: to.id.clone(),
                    exec: r.executor_id.clone(),
                }),
            );
        }
    }

    /// A connection ended: what was owed on it is no longer owed (a lost worker's executors are
    /// reported by the master; an application client that left is not answered).
    pub(crate) fn closed(&mut self, conn: ConnId) {
        self.launches.remove(&conn);
        self.registrations.remove(&conn);
        self.registered.remove(&conn);
    }

    /// What `debtor` still owes on open connection `conn` (rules N3 and N4), as
    /// [`finish`](Self::finish) would report it, changing nothing.
    pub(crate) fn owed_on(&self, conn: ConnId, debtor: &Endpoint, sink: &mut Sink<'_>) {
        if let Some(r) = self
            .registrations
            .get(&conn)
            .filter(|r| r.master == debtor.id && self.app_of_client.get(&r.client).is_none())
        {
            sink.flag(
                Rule::EndAppRegistered,
                format!(
                    "RegisteredApplication in answer to the RegisterApplication at {} ms on connection {conn} before the end",
                    r.at
                ),
                Some(Entity::Connection(conn)),
            );
        }
        if debtor.role != Role::Worker {
            return;
        }
        for l in self.launches.get(&conn).into_iter().flatten() {
            sink.flag(
                Rule::EndExecutorState,
                format!(
                    "an ExecutorStateChanged for {}/{} in answer to its LaunchExecutor at {} ms (connection {conn}) before the end",
                    l.app, l.exec, l.at
                ),
                Some(Entity::AppExecutor {
                    app: l.app.clone(),
                    exec: l.exec,
                }),
            );
        }
    }

    /// The end of the trace: every answer still owed on a connection that is open (closed ones
    /// forgot theirs) breaks rule N3 (RegisterApplication) or N4 (LaunchExecutor). Call after
    /// [`overdue`](Self::overdue), which reports and forgets those already late.
    pub(crate) fn finish(&mut self, sink: &mut Sink<'_>) {
        // An application client that another master registered owes nothing to the masters that
        // did not answer: only one master is active, and a standby one ignores RegisterApplication
        // (Spark's client registers with every master of a group).
        let mut registrations: Vec<(ConnId, u64)> = self
            .registrations
            .drain()
            .filter(|(_, r)| self.app_of_client.get(&r.client).is_none())
            .map(|(conn, r)| (conn, r.at))
            .collect();
        registrations.sort_unstable();
        for (conn, at) in registrations {
            sink.flag(
                Rule::EndAppRegistered,
                format!(
                    "RegisteredApplication in answer to the RegisterApplication at {at} ms on connection {conn} before the end"
                ),
                Some(Entity::Connection(conn)),
            );
        }
        let mut conns: Vec<ConnId> = self.launches.keys().copied().collect();
        conns.sort_unstable();
        for conn in conns {
            for l in self.launches.remove(&conn).unwrap_or_default() {
                sink.flag(
                    Rule::EndExecutorState,
                    format!(
                        "an ExecutorStateChanged for {}/{} in answer to its LaunchExecutor at {} ms (connection {conn}) before the end",
                        l.app, l.exec, l.at
                    ),
                    Some(Entity::AppExecutor {
                        app: l.app,
                        exec: l.exec,
                    }),
                );
            }
        }
    }
}
