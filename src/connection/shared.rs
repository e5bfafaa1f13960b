//! The state a connection's handles and its IO tasks share.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use bytes::Bytes;
use tokio::sync::{mpsc, oneshot, watch, Notify};

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
    /// Flush, shut the write side down and close: everything queued before was written, then
    /// the close envelope's frame, when there is one (the owner's reason, and the handshake
    /// agreed on the `closeReason` feature).
    Close(Option<Bytes>),
}

/// What a queued frame is counted as beyond its bytes: its place in the queue and the
/// allocator's bookkeeping, so that the byte limit bounds the memory a queue really takes.
pub(crate) const FRAME_OVERHEAD: usize = 64;

/// The frame of `env`, encoded into an allocation of its own size (the encoder reserves more
/// than most control messages need; a queue of them would hold many times its count).
fn encode<F: Family>(codec: &FrameCodec<F>, env: &Envelope<F>) -> Result<Bytes, ConnectionError> {
    let mut frame = codec
        .encode_to_vec(env)
        .map_err(ConnectionError::Outbound)?;
    frame.shrink_to_fit();
    Ok(Bytes::from(frame))
}

/// How an envelope is queued when the write queue is over its byte limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Admit {
    /// Wait until the writer has made room.
    Wait,
    /// Never wait: close the connection as a slow consumer.
    CloseWhenFull,
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
    pub(crate) outgoing: mpsc::UnboundedSender<Outgoing>,
    /// Frames queued and not yet written.
    pub(crate) queued_frames: AtomicUsize,
    /// Bytes queued and not yet written.
    pub(crate) queued_bytes: AtomicUsize,
    pub(crate) max_outgoing_frames: usize,
    pub(crate) max_outgoing_bytes: usize,
    /// Woken when the writer has written what was queued.
    pub(crate) room: Notify,
    /// Woken when this side starts an ask (a reader that paused resumes to read its reply).
    pub(crate) ask_started: Notify,
    /// The idle timeout in milliseconds; 0 for none.
    pub(crate) idle_timeout_ms: AtomicU64,
    pub(crate) max_peer_asks: usize,
    /// The listener slot, released at the close.
    pub(crate) slot: Mutex<Option<super::listener::Slot>>,
    /// The close envelope's frame that the writer sends before it stops, when an error closed
    /// the connection and the handshake agreed on the `closeReason` feature (SPEC §8.1).
    pub(crate) farewell: Mutex<Option<Bytes>>,
    /// A close envelope was made for the peer (by an error or by the owner's reason).
    pub(crate) told: AtomicBool,
}

impl<F> Shared<F> {
    /// Frees the listener slot, if the connection holds one.
    pub(crate) fn release_slot(&self) {
        let slot = match self.slot.lock() {
            Ok(mut slot) => slot.take(),
            Err(poisoned) => poisoned.into_inner().take(),
        };
        drop(slot);
    }
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
        // The frame is ready before anyone sees the close: the writer takes it when it does.
        if self.closed.borrow().is_none() && !self.closing.load(Ordering::Acquire) {
            if let Some(frame) = self.farewell_frame(reason.reason_for_peer()) {
                *lock_farewell(&self.farewell) = Some(frame);
            }
        }
        let first = self.closed.send_if_modified(|slot| {
            if slot.is_none() {
                *slot = Some(reason.clone());
                true
            } else {
                false
            }
        });
        if first {
            self.release_slot();
            self.room.notify_waiters();
            let waiters = self.lock().asks.drain();
            for waiter in waiters {
                let _ = waiter.send(Err(reason.clone()));
            }
        }
        first
    }

    /// The frame of a close envelope carrying `reason`, when there is one and the handshake
    /// agreed on the `closeReason` feature.
    pub(crate) fn farewell_frame(&self, reason: Option<crate::wire::CloseReason>) -> Option<Bytes> {
        if !self.negotiated.close_reason {
            return None;
        }
        let frame = encode(&self.codec, &Envelope::Close(reason?)).ok()?;
        self.told.store(true, Ordering::Release);
        Some(frame)
    }

    /// Whether this side made a close envelope for the peer: the reader then lingers at the
    /// close, so that the socket does not reset it away.
    pub(crate) fn told(&self) -> bool {
        self.told.load(Ordering::Acquire)
    }

    /// Takes the close envelope's frame an error left for the writer, if any.
    pub(crate) fn take_farewell(&self) -> Option<Bytes> {
        lock_farewell(&self.farewell).take()
    }

    /// Whether an error left a close envelope's frame for the writer.
    pub(crate) fn has_farewell(&self) -> bool {
        lock_farewell(&self.farewell).is_some()
    }

    /// Whether a frame of `len` bytes fits in the write queue now. One frame always fits in an
    /// empty queue, however large.
    /// The frame count limit applies to waiting senders only: a burst of small frames is no sign
    /// of a peer that does not read.
    fn fits(&self, len: usize, admit: Admit) -> bool {
        let frames = self.queued_frames.load(Ordering::Acquire);
        let bytes = self.queued_bytes.load(Ordering::Acquire);
        frames == 0
            || ((admit == Admit::CloseWhenFull || frames < self.max_outgoing_frames)
                && bytes.saturating_add(len) <= self.max_outgoing_bytes)
    }

    /// Encodes, inspects and queues `env`. Nothing is queued when any step fails. With
    /// [`Admit::Wait`] it waits while the queue is full; with [`Admit::CloseWhenFull`] a full queue
    /// closes the connection with [`ConnectionError::SlowConsumer`].
    pub(crate) async fn enqueue(
        &self,
        env: &Envelope<F>,
        settles: Settles<F>,
        admit: Admit,
    ) -> Result<(), ConnectionError> {
        self.check_open()?;
        let mut bytes = Some(encode(&self.codec, env)?);
        let label = envelope_label(env);
        let mut settles = Some(settles);
        loop {
            let room = self.room.notified();
            tokio::pin!(room);
            room.as_mut().enable();
            match self.try_queue(env, &mut bytes, label, &mut settles, admit) {
                Some(result) => return result,
                None => room.await,
            }
        }
    }

    /// [`enqueue`](Shared::enqueue) without waiting: with [`Admit::CloseWhenFull`], never waits.
    pub(crate) fn enqueue_now(
        &self,
        env: &Envelope<F>,
        settles: Settles<F>,
    ) -> Result<(), ConnectionError> {
        self.check_open()?;
        let mut bytes = Some(encode(&self.codec, env)?);
        let label = envelope_label(env);
        let mut settles = Some(settles);
        self.try_queue(env, &mut bytes, label, &mut settles, Admit::CloseWhenFull)
            .unwrap_or(Err(ConnectionError::Closed))
    }

    /// Queues the frame if it fits; `None` when it does not and the caller waits.
    fn try_queue(
        &self,
        env: &Envelope<F>,
        bytes: &mut Option<Bytes>,
        label: &'static str,
        settles: &mut Option<Settles<F>>,
        admit: Admit,
    ) -> Option<Result<(), ConnectionError>> {
        let mut state = self.lock();
        if let Err(e) = self.check_open() {
            return Some(Err(e));
        }
        let cost = bytes.as_ref().map_or(0, |b| b.len() + FRAME_OVERHEAD);
        if !self.fits(cost, admit) {
            if admit == Admit::Wait {
                return None;
            }
            let error = ConnectionError::SlowConsumer {
                queued: self
                    .queued_bytes
                    .load(Ordering::Acquire)
                    .saturating_add(cost),
                limit: self.max_outgoing_bytes,
            };
            drop(state);
            self.close_with(error.clone());
            return Some(Err(error));
        }
        let settles = settles.take()?;
        let bytes = bytes.take()?;
        if let Settles::Answer(id) = settles {
            if let Err(e) = state.incoming_asks.take(id) {
                return Some(Err(e));
            }
        }
        if let Some(inspector) = state.inspector.as_mut() {
            if let Err(reason) = inspector.outbound(env) {
                if let Settles::Answer(id) = settles {
                    state.incoming_asks.restore(id);
                }
                return Some(Err(ConnectionError::Rejected {
                    direction: Direction::Outbound,
                    name: label,
                    reason,
                }));
            }
        }
        let asked = matches!(settles, Settles::Ask(..));
        if let Settles::Ask(id, waiter) = settles {
            state.asks.insert(id, waiter);
        }
        self.queued_frames.fetch_add(1, Ordering::AcqRel);
        self.queued_bytes.fetch_add(cost, Ordering::AcqRel);
        // The writer holds the receiver until the connection closes, which was checked above.
        let _ = self.outgoing.send(Outgoing::Frame { bytes, label });
        drop(state);
        if asked {
            self.ask_started.notify_one();
        }
        Some(Ok(()))
    }

    /// Counts a frame written and frees its room in the queue.
    pub(crate) fn written(&self, label: &'static str, bytes: usize) {
        self.queued_frames.fetch_sub(1, Ordering::AcqRel);
        self.queued_bytes
            .fetch_sub(bytes + FRAME_OVERHEAD, Ordering::AcqRel);
        self.lock().counters.record_sent(label, bytes);
        self.room.notify_waiters();
    }

    /// Whether every frame queued was written.
    pub(crate) fn drained(&self) -> bool {
        self.queued_frames.load(Ordering::Acquire) == 0
    }

    /// Whether this side awaits a reply to one of its asks.
    pub(crate) fn awaits_reply(&self) -> bool {
        self.lock().asks.waiting() > 0
    }

    /// The idle timeout now in force.
    pub(crate) fn idle_timeout(&self) -> Option<Duration> {
        match self.idle_timeout_ms.load(Ordering::Acquire) {
            0 => None,
            ms => Some(Duration::from_millis(ms)),
        }
    }

    /// Handles an envelope received in a frame of `frame_len` bytes: counts and inspects it, then
    /// returns a message or ask for the owner, or hands a reply to its waiter. An error closes the
    /// connection.
    pub(crate) fn receive(
        &self,
        env: Envelope<F>,
        frame_len: usize,
    ) -> Result<Option<Incoming<F>>, ConnectionError> {
        let label = envelope_label(&env);
        let mut state = self.lock();
        state.counters.record_received(label, frame_len);
        let inspected = match state.inspector.as_mut() {
            Some(inspector) => inspector.inbound(&env),
            None => Ok(()),
        };
        if let Envelope::Close(reason) = env {
            // The peer's last frame: its reason wins over anything the inspector made of it.
            return Err(ConnectionError::ClosedByPeer(reason));
        }
        inspected.map_err(|reason| ConnectionError::Rejected {
            direction: Direction::Inbound,
            name: label,
            reason,
        })?;
        let (id, outcome) = match env {
            Envelope::Send(message) => return Ok(Some(Incoming::Message(message))),
            Envelope::Ask { id, message } => {
                if state.incoming_asks.len() >= self.max_peer_asks {
                    return Err(ConnectionError::TooManyAsks {
                        limit: self.max_peer_asks,
                    });
                }
                state.incoming_asks.open(id)?;
                return Ok(Some(Incoming::Ask { id, message }));
            }
            Envelope::Reply { id, reply } => (id, Ok(reply)),
            Envelope::Failure { id, error } => (id, Err(ConnectionError::Remote { id, error })),
            Envelope::Close(reason) => return Err(ConnectionError::ClosedByPeer(reason)),
        };
        match state.asks.complete(id)? {
            Matched::Waiter(waiter) => {
                drop(state);
                // The asker may have stopped waiting (its task was cancelled): nothing to do then.
                let _ = waiter.send(outcome);
            }
            Matched::Late => state.counters.late_replies += 1,
        }
        Ok(None)
    }

    /// A fresh ask id.
    pub(crate) fn next_id(&self) -> u64 {
        self.next_ask_id.fetch_add(1, Ordering::Relaxed)
    }
}

/// The limits a connection's shared state enforces.
pub(crate) struct SharedLimits {
    pub(crate) ask_timeout: Duration,
    pub(crate) max_frame_size: usize,
    pub(crate) max_outgoing_frames: usize,
    pub(crate) max_outgoing_bytes: usize,
    pub(crate) max_peer_asks: usize,
    pub(crate) idle_timeout: Option<Duration>,
}

/// Creates the shared state and the receiving end of the write queue.
pub(crate) fn new_shared<F: Family>(
    codec: FrameCodec<F>,
    negotiated: Negotiated,
    limits: SharedLimits,
    inspector: Option<Box<dyn Inspector<F>>>,
    counters: Counters,
    slot: Option<super::listener::Slot>,
) -> (Arc<Shared<F>>, mpsc::UnboundedReceiver<Outgoing>) {
    let (outgoing, queue_rx) = mpsc::unbounded_channel();
    let (closed, _) = watch::channel(None);
    let shared = Shared {
        codec,
        negotiated,
        ask_timeout: limits.ask_timeout,
        max_frame_size: limits.max_frame_size,
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
        queued_frames: AtomicUsize::new(0),
        queued_bytes: AtomicUsize::new(0),
        max_outgoing_frames: limits.max_outgoing_frames.max(1),
        max_outgoing_bytes: limits.max_outgoing_bytes.max(1),
        room: Notify::new(),
        ask_started: Notify::new(),
        idle_timeout_ms: AtomicU64::new(idle_ms(limits.idle_timeout)),
        max_peer_asks: limits.max_peer_asks.max(1),
        slot: Mutex::new(slot),
        farewell: Mutex::new(None),
        told: AtomicBool::new(false),
    };
    (Arc::new(shared), queue_rx)
}

/// An idle timeout as stored: milliseconds, at least 1; 0 for none.
pub(crate) fn idle_ms(timeout: Option<Duration>) -> u64 {
    match timeout {
        None => 0,
        Some(t) => u64::try_from(t.as_millis()).unwrap_or(u64::MAX).max(1),
    }
}

fn lock_farewell(m: &Mutex<Option<Bytes>>) -> MutexGuard<'_, Option<Bytes>> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}
