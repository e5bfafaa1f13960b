//! The state a connection's handles and its IO tasks share.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use bytes::Bytes;
use tokio::sync::{mpsc, oneshot, watch};

use super::config::{Direction, Inspector};
use super::counters::Counters;
use super::error::ConnectionError;
use super::pending::{IncomingAsks, Matched, Outcome, PendingAsks};
use super::Incoming;
use crate::messages::Family;
use crate::wire::envelope_label;
use crate::wire::handshake::Negotiated;
use crate::wire::{Envelope, FrameCodec};

/// An item of the write queue.
pub(crate) enum Outgoing {
    /// A whole frame, and what it carries (for the counters).
    Frame {
        /// The frame, length prefix included.
        bytes: Bytes,
        /// What it carries.
        label: &'static str,
    },
    /// Flush, shut the write side down and close: everything queued before was written.
    Close,
}

/// The mutable part, behind one lock so that inspection and queueing happen in one order.
pub(crate) struct State<F> {
    pub(crate) asks: PendingAsks<F>,
    pub(crate) incoming_asks: IncomingAsks,
    pub(crate) counters: Counters,
    pub(crate) inspector: Option<Box<dyn Inspector<F>>>,
}

/// What an outgoing envelope settles when it is queued.
pub(crate) enum Settles<F> {
    /// Nothing: a one-way message.
    Nothing,
    /// Registers this side's ask, answered through the sender.
    Ask(u64, oneshot::Sender<Outcome<F>>),
    /// Answers the peer's ask with this id.
    Answer(u64),
}

pub(crate) struct Shared<F> {
    pub(crate) codec: FrameCodec<F>,
    pub(crate) negotiated: Negotiated,
    pub(crate) ask_timeout: Duration,
    pub(crate) max_frame_size: usize,
    pub(crate) next_ask_id: AtomicU64,
    pub(crate) closing: AtomicBool,
    pub(crate) state: Mutex<State<F>>,
    pub(crate) closed: watch::Sender<Option<ConnectionError>>,
    pub(crate) outgoing: mpsc::Sender<Outgoing>,
}

impl<F: Family> Shared<F> {
    /// The lock on the mutable state. A panic while it was held (which nothing in this crate
    /// does) would not make the counters or ask tables unusable, so a poisoned lock is taken over.
    pub(crate) fn lock(&self) -> MutexGuard<'_, State<F>> {
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Why the connection closed, if it did.
    pub(crate) fn close_reason(&self) -> Option<ConnectionError> {
        self.closed.borrow().clone()
    }

    /// The error for an operation on a closed or closing connection.
    pub(crate) fn closed_error(&self) -> ConnectionError {
        self.close_reason().unwrap_or(ConnectionError::Closed)
    }

    /// Fails unless the connection is open.
    pub(crate) fn check_open(&self) -> Result<(), ConnectionError> {
        if self.closing.load(Ordering::Acquire) || self.closed.borrow().is_some() {
            return Err(self.closed_error());
        }
        Ok(())
    }

    /// Closes the connection with `reason` unless it is closed already, and fails every ask
    /// waiting for a reply. Returns whether this call closed it.
    pub(crate) fn close_with(&self, reason: ConnectionError) -> bool {
        let first = self.closed.send_if_modified(|slot| {
            if slot.is_none() {
                *slot = Some(reason.clone());
                true
            } else {
                false
            }
        });
        if first {
            let waiters = self.lock().asks.drain();
            for waiter in waiters {
                let _ = waiter.send(Err(reason.clone()));
            }
        }
        first
    }

    /// Encodes, inspects and queues `env`. Nothing is queued when any step fails.
    pub(crate) async fn enqueue(
        &self,
        env: &Envelope<F>,
        settles: Settles<F>,
    ) -> Result<(), ConnectionError> {
        self.check_open()?;
        let bytes = self
            .codec
            .encode_to_bytes(env)
            .map_err(ConnectionError::Outbound)?;
        let label = envelope_label(env);
        let permit = self
            .outgoing
            .reserve()
            .await
            .map_err(|_| self.closed_error())?;
        let mut state = self.lock();
        self.check_open()?;
        if let Settles::Answer(id) = settles {
            state.incoming_asks.take(id)?;
        }
        if let Some(inspector) = state.inspector.as_mut() {
            if let Err(reason) = inspector.outbound(env) {
                if let Settles::Answer(id) = settles {
                    state.incoming_asks.restore(id);
                }
                return Err(ConnectionError::Rejected {
                    direction: Direction::Outbound,
                    name: label,
                    reason,
                });
            }
        }
        if let Settles::Ask(id, waiter) = settles {
            state.asks.insert(id, waiter);
        }
        permit.send(Outgoing::Frame { bytes, label });
        Ok(())
    }

    /// Handles an envelope received in a frame of `frame_len` bytes: counts and inspects it, then
    /// delivers a message or ask to the owner, or a reply to its waiter. An error closes the
    /// connection.
    pub(crate) fn receive(
        &self,
        env: Envelope<F>,
        frame_len: usize,
        deliver: &mpsc::UnboundedSender<Incoming<F>>,
    ) -> Result<(), ConnectionError> {
        let label = envelope_label(&env);
        let mut state = self.lock();
        state.counters.record_received(label, frame_len);
        if let Some(inspector) = state.inspector.as_mut() {
            inspector
                .inbound(&env)
                .map_err(|reason| ConnectionError::Rejected {
                    direction: Direction::Inbound,
                    name: label,
                    reason,
                })?;
        }
        let (id, outcome) = match env {
            Envelope::Send(message) => {
                drop(state);
                return deliver
                    .send(Incoming::Message(message))
                    .map_err(|_| ConnectionError::Closed);
            }
            Envelope::Ask { id, message } => {
                state.incoming_asks.open(id)?;
                drop(state);
                return deliver
                    .send(Incoming::Ask { id, message })
                    .map_err(|_| ConnectionError::Closed);
            }
            Envelope::Reply { id, reply } => (id, Ok(reply)),
            Envelope::Failure { id, error } => (id, Err(ConnectionError::Remote { id, error })),
        };
        match state.asks.complete(id)? {
            Matched::Waiter(waiter) => {
                drop(state);
                // The asker may have stopped waiting (its task was cancelled): nothing to do then.
                let _ = waiter.send(outcome);
            }
            Matched::Late => state.counters.late_replies += 1,
        }
        Ok(())
    }

    /// Counts a frame written.
    pub(crate) fn record_sent(&self, label: &'static str, bytes: usize) {
        self.lock().counters.record_sent(label, bytes);
    }

    /// A fresh ask id.
    pub(crate) fn next_id(&self) -> u64 {
        self.next_ask_id.fetch_add(1, Ordering::Relaxed)
    }
}

/// Creates the shared state and the receiving end of the write queue.
pub(crate) fn new_shared<F: Family>(
    codec: FrameCodec<F>,
    negotiated: Negotiated,
    ask_timeout: Duration,
    max_frame_size: usize,
    queue: usize,
    inspector: Option<Box<dyn Inspector<F>>>,
    counters: Counters,
) -> (Arc<Shared<F>>, mpsc::Receiver<Outgoing>) {
    let (outgoing, queue_rx) = mpsc::channel(queue.max(1));
    let (closed, _) = watch::channel(None);
    let shared = Shared {
        codec,
        negotiated,
        ask_timeout,
        max_frame_size,
        next_ask_id: AtomicU64::new(1),
        closing: AtomicBool::new(false),
        state: Mutex::new(State {
            asks: PendingAsks::new(),
            incoming_asks: IncomingAsks::default(),
            counters,
            inspector,
        }),
        closed,
        outgoing,
    };
    (Arc::new(shared), queue_rx)
}
