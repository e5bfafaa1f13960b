//! Strict mode for the reference processes: an [`StrictObserver`] shares one validator among every
//! connection of a cluster, giving each a [`ConnectionView`] as its inspector, so that any message
//! that breaks a rule of `protocol/rules.md` is refused as it is sent or received and counted.
//!
//! Each connection must be fed to the validator once, from one end. The reference master feeds
//! every connection it has (workers, application clients, driver clients, UIs); a worker feeds
//! only the connections UIs open to it; connections the master dials are fed by the master.
//! Executors' watch connections to their worker carry no messages and are not fed.
//!
//! A peer that says `ui` in its handshake is a UI endpoint. Older UI and REST clients connect as
//! `driver-client`; a view for such a peer is made when its first message arrives: a UI message
//! (RequestMasterState, RequestReadyz, RequestClearCompletedDriversAndApps,
//! DecommissionWorkersOnHosts, RequestWorkerState) makes it a `ui` endpoint, anything else a
//! `driver-client` one.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use crate::connection::Inspector;
use crate::messages::{DeployMessage, Version};
use crate::validate::{ConnectionView, Endpoint, SharedValidator, Violation};
use crate::wire::handshake::Role;
use crate::wire::Envelope;

/// One validator shared by the connections of a cluster, with connection ids unique across it and
/// one clock.
#[derive(Debug, Clone)]
pub struct StrictObserver {
    validator: SharedValidator,
    next_conn: Arc<AtomicU64>,
    start: Instant,
}

impl StrictObserver {
    /// Observes with `validator`.
    pub fn new(validator: SharedValidator) -> Self {
        StrictObserver {
            validator,
            next_conn: Arc::new(AtomicU64::new(1)),
            start: Instant::now(),
        }
    }

    /// The shared validator.
    pub fn validator(&self) -> &SharedValidator {
        &self.validator
    }

    /// Total violations found so far, every rule together.
    pub fn violation_count(&self) -> u64 {
        self.validator.with(|v| v.counts().values().sum())
    }

    /// The violations found so far, as `rule: count` text (empty when none).
    pub fn summary(&self) -> String {
        self.validator.with(|v| {
            v.counts()
                .iter()
                .map(|(rule, n)| format!("{}: {n}", rule.id()))
                .collect::<Vec<_>>()
                .join(", ")
        })
    }

    /// A view of a new connection between `local` and `peer`, opened on the validator.
    pub fn view(
        &self,
        local: Endpoint,
        peer: Endpoint,
        local_dialled: bool,
        version: Version,
    ) -> ConnectionView {
        let conn = self.next_conn.fetch_add(1, Ordering::Relaxed);
        let start = self.start;
        let view =
            self.validator
                .connection(conn, local, peer, local_dialled, version, move || {
                    u64::try_from(start.elapsed().as_millis()).unwrap_or(u64::MAX)
                });
        report(&view.opened());
        view
    }

    /// An inspector for a deploy-family connection of this process (`local`) with a peer that
    /// declared `peer_role` and `peer_id` in its hello, and the handle that feeds its close.
    pub fn deploy_inspector(
        &self,
        local: Endpoint,
        peer_role: Role,
        peer_id: &str,
        local_dialled: bool,
        version: Version,
    ) -> (ObservedConnection, ObservedClose) {
        let slot = Arc::new(Mutex::new(Slot {
            view: None,
            pending: Some(Pending {
                observer: self.clone(),
                local,
                peer_id: peer_id.to_string(),
                local_dialled,
                version,
            }),
        }));
        if let Some(role) = validate_role(peer_role) {
            lock(&slot).open_as(role);
        }
        (
            ObservedConnection {
                slot: Arc::clone(&slot),
            },
            ObservedClose { slot },
        )
    }
}

/// The validator's role for a peer that declared `role` in its handshake; `None` for
/// `driver-client`, which may be an older UI (its first message decides).
fn validate_role(role: Role) -> Option<Role> {
    match role {
        Role::DriverClient => None,
        other => Some(other),
    }
}

fn report(violations: &[Violation]) {
    for v in violations {
        tracing::warn!(violation = %v, "protocol violation");
    }
}

struct Pending {
    observer: StrictObserver,
    local: Endpoint,
    peer_id: String,
    local_dialled: bool,
    version: Version,
}

struct Slot {
    view: Option<ConnectionView>,
    pending: Option<Pending>,
}

impl Slot {
    fn open_as(&mut self, role: Role) {
        if let Some(p) = self.pending.take() {
            let peer = Endpoint::new(role, p.peer_id);
            self.view = Some(p.observer.view(p.local, peer, p.local_dialled, p.version));
        }
    }

    fn view_for(&mut self, first: &DeployMessage) -> Option<&mut ConnectionView> {
        if self.view.is_none() {
            let ui = matches!(
                first,
                DeployMessage::RequestMasterState(_)
                    | DeployMessage::RequestReadyz(_)
                    | DeployMessage::RequestClearCompletedDriversAndApps(_)
                    | DeployMessage::DecommissionWorkersOnHosts(_)
                    | DeployMessage::RequestWorkerState(_)
            );
            self.open_as(if ui { Role::Ui } else { Role::DriverClient });
        }
        self.view.as_mut()
    }
}

fn lock(slot: &Mutex<Slot>) -> std::sync::MutexGuard<'_, Slot> {
    slot.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

fn first_message(env: &Envelope<DeployMessage>) -> Option<&DeployMessage> {
    match env {
        Envelope::Send(m) | Envelope::Ask { message: m, .. } => Some(m),
        _ => None,
    }
}

/// The inspector of one observed connection (give it to `ConnectionConfig::with_inspector`).
pub struct ObservedConnection {
    slot: Arc<Mutex<Slot>>,
}

impl Inspector<DeployMessage> for ObservedConnection {
    fn inbound(&mut self, env: &Envelope<DeployMessage>) -> Result<(), String> {
        let mut slot = lock(&self.slot);
        let view = match first_message(env) {
            Some(m) => slot.view_for(m),
            None => slot.view.as_mut(),
        };
        match view {
            Some(view) => Inspector::<DeployMessage>::inbound(view, env),
            None => Ok(()),
        }
    }

    fn outbound(&mut self, env: &Envelope<DeployMessage>) -> Result<(), String> {
        let mut slot = lock(&self.slot);
        let view = match first_message(env) {
            Some(m) if slot.view.is_none() && slot.pending.is_some() => {
                // This side speaks first to a driver client: it cannot be a UI.
                let _ = m;
                slot.open_as(Role::DriverClient);
                slot.view.as_mut()
            }
            _ => slot.view.as_mut(),
        };
        match view {
            Some(view) => Inspector::<DeployMessage>::outbound(view, env),
            None => Ok(()),
        }
    }
}

/// Feeds an observed connection's close to the validator (once).
pub struct ObservedClose {
    slot: Arc<Mutex<Slot>>,
}

impl ObservedClose {
    /// The connection closed.
    pub fn closed(&self) {
        let mut slot = lock(&self.slot);
        slot.pending = None;
        if let Some(view) = slot.view.take() {
            report(&view.closed());
        }
    }
}
