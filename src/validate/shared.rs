//! A validator shared by live connections: each connection feeds it through a [`ConnectionView`]
//! and may refuse a message that breaks a rule as it arrives (strict mode).
//!
//! The connection layer's hook (an inspector called with each inbound and outbound envelope)
//! maps onto a view directly:
//!
//! ```
//! use sparkwire::messages::{coarse::LaunchedExecutor, CoarseMessage, Version};
//! use sparkwire::validate::{Endpoint, Rule, SharedValidator};
//! use sparkwire::wire::handshake::Role;
//! use sparkwire::wire::Envelope;
//!
//! let shared = SharedValidator::default();
//! let driver = Endpoint::new(Role::Driver, "app-1");
//! let executor = Endpoint::new(Role::Executor, "exec-1");
//! // The driver's side of an accepted connection: the peer dialled.
//! let view = shared.connection(7, driver, executor, false, Version::V2, || 0);
//! assert!(view.opened().is_empty());
//! let early = Envelope::Send(CoarseMessage::LaunchedExecutor(LaunchedExecutor::new(
//!     "1".into(),
//! )));
//! // An inspector would turn the error into its refusal text.
//! let refusal = view.inbound(&early).map_err(|v| {
//!     v.iter().map(ToString::to_string).collect::<Vec<_>>().join("; ")
//! });
//! assert!(refusal.unwrap_err().contains("X1"));
//! assert_eq!(shared.with(|v| v.counts()[&Rule::ExecutorRegisterFirst]), 1);
//! ```

use std::fmt;
use std::sync::{Arc, Mutex};

use super::config::Config;
use super::event::{ConnId, Endpoint, ValidatedFamily};
use super::validator::Validator;
use super::violation::Violation;
use crate::messages::Version;
use crate::wire::Envelope;

/// A validator behind a mutex, cheap to clone, for many connections (threads) to feed.
#[derive(Debug, Clone)]
pub struct SharedValidator(Arc<Mutex<Validator>>);

impl Default for SharedValidator {
    fn default() -> Self {
        SharedValidator::new(Validator::default())
    }
}

impl SharedValidator {
    /// Shares `validator`.
    pub fn new(validator: Validator) -> Self {
        SharedValidator(Arc::new(Mutex::new(validator)))
    }

    /// A shared validator with `config`.
    pub fn with_config(config: Config) -> Self {
        SharedValidator::new(Validator::new(config))
    }

    /// Runs `f` on the validator. A panic in another holder does not poison it for the others:
    /// the validator's state is still consistent event by event.
    pub fn with<R>(&self, f: impl FnOnce(&mut Validator) -> R) -> R {
        let mut guard = self
            .0
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        f(&mut guard)
    }

    /// A view for connection `conn` between `local` (this process) and `peer`; `local_dialled`
    /// says which end opened it. `clock` gives the time in milliseconds for each event.
    pub fn connection(
        &self,
        conn: ConnId,
        local: Endpoint,
        peer: Endpoint,
        local_dialled: bool,
        version: Version,
        clock: impl Fn() -> u64 + Send + Sync + 'static,
    ) -> ConnectionView {
        ConnectionView {
            shared: self.clone(),
            conn,
            local,
            peer,
            local_dialled,
            version,
            clock: Arc::new(clock),
        }
    }
}

/// One connection's window on a [`SharedValidator`]: feeds it the connection's events, stamped
/// by the connection's clock, and says whether each message is legal.
///
/// Call [`opened`](Self::opened) once the connection is up (version agreed),
/// [`inbound`](Self::inbound) / [`outbound`](Self::outbound) for every envelope, and
/// [`closed`](Self::closed) when it ends. A message that breaks a rule is still recorded as seen;
/// refusing it (closing the connection, answering with a failure) is the caller's decision.
#[derive(Clone)]
pub struct ConnectionView {
    shared: SharedValidator,
    conn: ConnId,
    local: Endpoint,
    peer: Endpoint,
    local_dialled: bool,
    version: Version,
    clock: Arc<dyn Fn() -> u64 + Send + Sync>,
}

impl fmt::Debug for ConnectionView {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ConnectionView")
            .field("conn", &self.conn)
            .field("local", &self.local)
            .field("peer", &self.peer)
            .field("local_dialled", &self.local_dialled)
            .field("version", &self.version)
            .finish()
    }
}

fn verdict(v: Vec<Violation>) -> Result<(), Vec<Violation>> {
    if v.is_empty() {
        Ok(())
    } else {
        Err(v)
    }
}

impl ConnectionView {
    /// The connection id.
    pub fn conn(&self) -> ConnId {
        self.conn
    }

    /// Feeds the connection-opened event.
    pub fn opened(&self) -> Vec<Violation> {
        let (client, server) = if self.local_dialled {
            (&self.local, &self.peer)
        } else {
            (&self.peer, &self.local)
        };
        let now = (self.clock)();
        self.shared
            .with(|v| v.open(now, self.conn, client, server, self.version))
    }

    /// Feeds an envelope received from the peer; `Err` holds the rules it breaks.
    pub fn inbound<F: ValidatedFamily>(&self, env: &Envelope<F>) -> Result<(), Vec<Violation>> {
        let now = (self.clock)();
        verdict(
            self.shared
                .with(|v| v.message(now, self.conn, &self.peer, &self.local, self.version, env)),
        )
    }

    /// Feeds an envelope this process sends; `Err` holds the rules it breaks.
    pub fn outbound<F: ValidatedFamily>(&self, env: &Envelope<F>) -> Result<(), Vec<Violation>> {
        let now = (self.clock)();
        verdict(
            self.shared
                .with(|v| v.message(now, self.conn, &self.local, &self.peer, self.version, env)),
        )
    }

    /// Feeds the connection-closed event.
    pub fn closed(&self) -> Vec<Violation> {
        let now = (self.clock)();
        self.shared.with(|v| v.close(now, self.conn))
    }
}

/// Joins violations into the refusal text a connection reports.
#[cfg(feature = "tokio")]
fn refusal(violations: Vec<Violation>) -> String {
    violations
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("; ")
}

/// A view is the connection layer's strict-mode inspector: an envelope that breaks a rule is
/// refused with the violations' text (an inbound one closes the connection).
#[cfg(feature = "tokio")]
impl<F: ValidatedFamily> crate::connection::Inspector<F> for ConnectionView {
    fn inbound(&mut self, env: &Envelope<F>) -> Result<(), String> {
        ConnectionView::inbound(self, env).map_err(refusal)
    }

    fn outbound(&mut self, env: &Envelope<F>) -> Result<(), String> {
        ConnectionView::outbound(self, env).map_err(refusal)
    }
}
