//! Authorization of what the master receives (SPEC §14): the protocol's routes, then the ids a
//! message acts on, which must be bound to the connection it arrives on.
//!
//! - an application is bound to the connection that registered it (or, after a failover, the
//!   connection the master dialled to reach its client);
//! - a worker to the connection that registered it (or that the master dialled);
//! - a driver to the connection that submitted it, for kills; its status is anyone's to read,
//!   as `spark-submit --status` reads it from a new process;
//! - an executor or a driver to the worker the master placed it on, for status updates.

use super::MasterCore;
use super::Output;
use crate::messages::{DeployMessage, Family};
use crate::node::authz::{self, Refusal};
use crate::node::{ConnId, ConnOutput};
use crate::wire::handshake::Role;

impl MasterCore {
    /// Whether the master takes `m` on `conn` (`asked`: it came as an ask).
    pub(crate) fn authorize(
        &self,
        conn: ConnId,
        m: &DeployMessage,
        asked: bool,
    ) -> Result<(), Refusal> {
        use DeployMessage as M;
        let Some(rec) = self.conns.get(conn) else {
            return Err(Refusal::not_owner(m.name(), "connection", conn.to_string()));
        };
        authz::route(rec.role, Role::Master, "deploy", m.name(), asked)?;
        let name = m.name();
        match m {
            // What names a worker is refused only when that worker is bound to another
            // connection (SPEC §14.2 Z2). A worker unknown, or bound to none (declared DEAD, or
            // recovered and not reached yet), is left to the handler, which does what Spark's
            // Master does; a message before the registration, or naming another id than the
            // one registered on the connection, breaks rules W1 and W2, which only the strict
            // mode's validator enforces. A RegisterWorker is answered (rule W4).
            M::Heartbeat(h) => self.not_elsewhere(conn, name, &h.worker_id),
            M::WorkerLatestState(s) => self.not_elsewhere(conn, name, &s.id),
            M::WorkerDecommissioning(d) => self.not_elsewhere(conn, name, &d.id),
            M::WorkerSchedulerStateResponse(s) => self.not_elsewhere(conn, name, &s.id),
            M::ExecutorStateChanged(e) => {
                let runs_on = self
                    .apps
                    .get(&e.app_id)
                    .and_then(|a| a.executors.get(&e.exec_id))
                    .map(|x| x.worker.as_str());
                match runs_on {
                    Some(w) if self.workers.on(conn) != Some(w) => Err(Refusal::not_owner(
                        name,
                        "executor",
                        format!("{}/{}", e.app_id, e.exec_id),
                    )),
                    _ => Ok(()),
                }
            }
            M::DriverStateChanged(d) => match self.drivers.get(&d.driver_id) {
                Some(rec)
                    if rec.worker.is_none() || rec.worker.as_deref() != self.workers.on(conn) =>
                {
                    Err(Refusal::not_owner(name, "driver", d.driver_id.clone()))
                }
                _ => Ok(()),
            },
            M::UnregisterApplication(u) => self.own_app(conn, name, &u.app_id),
            M::MasterChangeAcknowledged(a) => self.own_app(conn, name, &a.app_id),
            M::RequestExecutors(r) => self.own_app(conn, name, &r.app_id),
            M::KillExecutors(k) => self.own_app(conn, name, &k.app_id),
            M::RequestKillDriver(k) => {
                if self.drivers.may_kill(conn, &k.driver_id) {
                    Ok(())
                } else {
                    Err(Refusal::not_owner(name, "driver", k.driver_id.clone()))
                }
            }
            _ => Ok(()),
        }
    }

    /// A message naming worker `id`: refused when the worker is bound to another connection.
    fn not_elsewhere(&self, conn: ConnId, message: &'static str, id: &str) -> Result<(), Refusal> {
        if self.workers.bound_elsewhere(id, conn) {
            Err(Refusal::not_owner(message, "worker", id))
        } else {
            Ok(())
        }
    }

    /// A message about application `id`: refused when the application is active and bound to
    /// another connection; an unknown or finished one (and one bound to none, recovered and not
    /// reached yet) is left to the handler, which answers as Spark does (SPEC §14.2 Z1).
    fn own_app(&self, conn: ConnId, message: &'static str, id: &str) -> Result<(), Refusal> {
        if self.apps.bound_elsewhere(id, conn) {
            Err(Refusal::not_owner(message, "application", id))
        } else {
            Ok(())
        }
    }

    /// Refuses `m` on `conn`: a failure answers an ask; a one-way message closes the
    /// connection, and nothing more is taken from it.
    pub(crate) fn refuse(&mut self, conn: ConnId, ask: Option<u64>, refusal: &Refusal) {
        let Some((addr, role, id)) = self.peer_of(conn) else {
            return;
        };
        let peer = crate::node::violations::Peer {
            addr: &addr,
            role,
            id: &id,
            conn,
        };
        crate::node::violations::warn(peer, "refused", refusal.kind(), refusal);
        if !self.conns.is_open(conn) {
            return;
        }
        match ask {
            Some(id) => self.out.push(Output::Conn(ConnOutput::Fail {
                conn,
                id,
                error: refusal.failure(),
            })),
            None => {
                self.conns.refused(conn);
                self.out.push(Output::Conn(ConnOutput::Close {
                    conn,
                    reason: Some(refusal.close_reason()),
                }));
            }
        }
    }
}
