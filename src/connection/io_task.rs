//! The two tasks that move a connection's frames: one reads and dispatches, one writes the queue.
//!
//! Reading and writing run apart so that two peers writing large frames to each other at once
//! cannot block each other. Either task closes the connection on an error, and both stop as soon
//! as it is closed; the stream is dropped when both have stopped.
//!
//! The reader hands messages and asks to the owner through a bounded queue and stops reading
//! while it is full, so that a peer that sends faster than the owner works is held back by TCP,
//! alone. While this side awaits a reply it reads on regardless (the reply may be behind the
//! messages), keeping up to as many messages again aside; a peer that sends more than that
//! meanwhile is closed ([`ConnectionError::InboundOverflow`]).

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

use futures_util::StreamExt;
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt, BufWriter};
use tokio::sync::{mpsc, watch};
use tokio::time::Instant;
use tokio_util::codec::FramedRead;

use super::error::ConnectionError;
use super::shared::{Outgoing, Shared};
use super::Incoming;
use crate::messages::Family;
use crate::wire::FrameCodec;

/// Bytes the writer gathers before writing to the stream, in a buffer that lives only while a batch
/// is written (an idle connection holds none); a frame larger than this is written straight
/// through.
pub(crate) const WRITE_BUFFER: usize = 16 * 1024;

/// The longest time between two checks of the frame and idle timeouts. With the defaults (60 s
/// each) a connection's reader wakes for its timeouts every 15 s, not on every frame and not
/// twice a second: a master holding thousands of connections spent more on those wake-ups (task
/// switches, the timer wheel) than on their messages (issue 40's profile at 1,000 Spark
/// workers, when this was 500 ms).
const MAX_CHECK_EVERY: Duration = Duration::from_secs(15);

/// The shortest time between two checks of the frame and idle timeouts.
const MIN_CHECK_EVERY: Duration = Duration::from_millis(10);

/// How long the writer may take, once an error closed the connection, to finish the frames it
/// was writing and write the close envelope (SPEC §8.1); a peer that does not read by then does
/// not get it.
const FAREWELL_WRITE: Duration = Duration::from_secs(2);

/// How long, and for how many bytes, the reader goes on reading (and dropping) what the peer
/// sends after an error closed the connection, so that the socket is not closed with unread
/// bytes (which would reset it, and could lose the close envelope on its way to the peer).
const FAREWELL_LINGER: Duration = Duration::from_secs(2);
const FAREWELL_LINGER_BYTES: usize = 4 * 1024 * 1024;

async fn wait_closed(closed: &mut watch::Receiver<Option<ConnectionError>>) {
    // The sender lives in the shared state, which this task holds: the wait ends only on a close.
    let _ = closed.wait_for(Option::is_some).await;
}

/// How often the reader looks at its timeouts: a quarter of the shortest, within bounds (so a
/// timeout is noticed at most a quarter late). One interval per connection, made once: a frame
/// read re-arms no timer.
fn check_every(frame_timeout: Duration, idle: Option<Duration>) -> Duration {
    let shortest = idle.map_or(frame_timeout, |idle| idle.min(frame_timeout));
    (shortest / 4).clamp(MIN_CHECK_EVERY, MAX_CHECK_EVERY)
}

/// A frame begun and not complete: how many frames had been read when it was first seen, and when.
#[derive(Debug, Clone, Copy)]
struct Partial {
    frames_read: u64,
    since: Instant,
}

/// Reads frames until the peer closes, a frame is bad, a limit is crossed, or the connection
/// closes; after a close for which this side made a close envelope (SPEC §8.1), reads on and
/// drops what arrives for a moment ([`linger`]), so that the envelope is not reset away.
pub(crate) async fn read_loop<R, F>(
    mut reader: FramedRead<R, FrameCodec<F>>,
    shared: Arc<Shared<F>>,
    deliver: mpsc::Sender<Incoming<F>>,
    incoming_queue: usize,
    frame_timeout: Duration,
) where
    R: AsyncRead + Unpin,
    F: Family,
{
    let mut closed = shared.closed.subscribe();
    // One wait for the close, polled by every turn of the loop (not one made and dropped per
    // frame).
    let closing = wait_closed(&mut closed);
    tokio::pin!(closing);
    let mut aside: VecDeque<Incoming<F>> = VecDeque::new();
    let aside_limit = incoming_queue.max(1);
    let mut frames_read: u64 = 0;
    let mut partial: Option<Partial> = None;
    let mut last_frame = Instant::now();
    let mut check = tokio::time::interval(check_every(frame_timeout, shared.idle_timeout()));
    check.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        // Hand over what was kept aside first, in order.
        while let Some(first) = aside.pop_front() {
            match deliver.try_send(first) {
                Ok(()) => {}
                Err(mpsc::error::TrySendError::Full(first)) => {
                    aside.push_front(first);
                    break;
                }
                Err(mpsc::error::TrySendError::Closed(_)) => {
                    shared.close_with(ConnectionError::Closed);
                    return;
                }
            }
        }
        let owner_has_room = aside.is_empty() && deliver.capacity() > 0;
        let reading = owner_has_room || shared.awaits_reply();
        if !reading {
            // Not the peer's fault: the owner is behind.
            partial = None;
            last_frame = Instant::now();
        }
        let next = tokio::select! {
            biased;
            // Closed by this side (an owner's close, a limit): done reading, but for the linger.
            _ = &mut closing => break,
            room = deliver.reserve(), if !aside.is_empty() => {
                match (room, aside.pop_front()) {
                    (Ok(room), Some(first)) => room.send(first),
                    (Err(_), _) => {
                        shared.close_with(ConnectionError::Closed);
                        return;
                    }
                    (Ok(_), None) => {}
                }
                continue;
            }
            room = deliver.reserve(), if aside.is_empty() && !owner_has_room => {
                // The owner took something: read on.
                drop(room);
                continue;
            }
            _ = shared.ask_started.notified(), if !reading => continue,
            next = reader.next(), if reading => next,
            _ = check.tick() => {
                let owner_idle = aside.is_empty() && deliver.capacity() == deliver.max_capacity();
                let clock = Clock { last_frame, now: Instant::now(), frame_timeout };
                if let Some(reason) = timed_out(&reader, &shared, reading && owner_idle, reading, frames_read, &mut partial, clock) {
                    shared.close_with(reason);
                    break;
                }
                continue;
            }
        };
        let result = match next {
            None => Err(ConnectionError::PeerClosed),
            Some(Err(e)) => Err(ConnectionError::Inbound(e)),
            Some(Ok(env)) => {
                frames_read += 1;
                partial = None;
                last_frame = Instant::now();
                shared.receive(env, reader.decoder().last_frame_len())
            }
        };
        match result {
            Ok(None) => {}
            Ok(Some(incoming)) => {
                if aside.is_empty() {
                    match deliver.try_send(incoming) {
                        Ok(()) => {}
                        Err(mpsc::error::TrySendError::Full(incoming)) => aside.push_back(incoming),
                        Err(mpsc::error::TrySendError::Closed(_)) => {
                            shared.close_with(ConnectionError::Closed);
                            return;
                        }
                    }
                } else {
                    aside.push_back(incoming);
                }
                if aside.len() > aside_limit {
                    shared.close_with(ConnectionError::InboundOverflow {
                        limit: aside_limit + incoming_queue,
                    });
                    break;
                }
            }
            Err(reason) => {
                shared.close_with(reason);
                break;
            }
        }
    }
    // The owner learns of the close now (what it was handed before stays readable), not once
    // the linger below is over.
    drop(deliver);
    if shared.told() {
        linger(reader.into_inner()).await;
    }
}

/// Reads and drops what the peer sends, until it closes, [`FAREWELL_LINGER`] has passed or
/// [`FAREWELL_LINGER_BYTES`] were read.
async fn linger<R: AsyncRead + Unpin>(mut reader: R) {
    use tokio::io::AsyncReadExt;
    let deadline = Instant::now() + FAREWELL_LINGER;
    let mut buf = vec![0u8; 16 * 1024];
    let mut read = 0usize;
    while read < FAREWELL_LINGER_BYTES {
        match tokio::time::timeout_at(deadline, reader.read(&mut buf)).await {
            Ok(Ok(n)) if n > 0 => read += n,
            _ => return,
        }
    }
}

/// The times the reader's timeouts are measured with.
#[derive(Debug, Clone, Copy)]
struct Clock {
    last_frame: Instant,
    now: Instant,
    frame_timeout: Duration,
}

/// The frame or idle timeout that ran out, if one did. `idle_counts`: the owner has nothing
/// unprocessed, so silence from the peer counts as idleness.
fn timed_out<R, F: Family>(
    reader: &FramedRead<R, FrameCodec<F>>,
    shared: &Shared<F>,
    idle_counts: bool,
    reading: bool,
    frames_read: u64,
    partial: &mut Option<Partial>,
    clock: Clock,
) -> Option<ConnectionError> {
    let Clock {
        last_frame,
        now,
        frame_timeout,
    } = clock;
    if !reading {
        return None;
    }
    if reader.read_buffer().is_empty() {
        *partial = None;
    } else {
        match *partial {
            Some(p) if p.frames_read == frames_read => {
                if now.duration_since(p.since) >= frame_timeout {
                    return Some(ConnectionError::FrameTimedOut {
                        after: frame_timeout,
                    });
                }
            }
            _ => {
                *partial = Some(Partial {
                    frames_read,
                    since: now,
                })
            }
        }
    }
    let idle = shared.idle_timeout()?;
    if idle_counts
        && partial.is_none()
        && now.duration_since(last_frame) >= idle
        && !shared.awaits_reply()
    {
        return Some(ConnectionError::Idle { after: idle });
    }
    None
}

/// Writes queued frames, flushing whenever the queue runs empty, until the connection closes.
pub(crate) async fn write_loop<W, F>(
    mut writer: W,
    mut queue: mpsc::UnboundedReceiver<Outgoing>,
    shared: Arc<Shared<F>>,
) where
    W: AsyncWrite + Unpin,
    F: Family,
{
    let mut closed = shared.closed.subscribe();
    // One wait for the close, polled by every turn of the loop (not one made and dropped per
    // batch); once it is over the loop returns.
    let closing = wait_closed(&mut closed);
    tokio::pin!(closing);
    loop {
        let first = tokio::select! {
            biased;
            _ = &mut closing => {
                farewell(&mut writer, &shared).await;
                return;
            }
            item = queue.recv() => item,
        };
        let Some(first) = first else {
            // Every handle is gone: nothing more can be sent.
            shared.close_with(ConnectionError::Closed);
            return;
        };
        let written = {
            let batch = write_batch(&mut writer, first, &mut queue, &shared);
            tokio::pin!(batch);
            tokio::select! {
                biased;
                _ = &mut closing => {
                    // Frames are written whole: with a close envelope to send, the batch under
                    // way ends first (within a bound), so that the envelope starts a frame.
                    let finished = shared.has_farewell()
                        && matches!(
                            tokio::time::timeout(FAREWELL_WRITE, &mut batch).await,
                            Ok(Ok(true))
                        );
                    Batch::Closed { finished }
                }
                written = &mut batch => Batch::Written(written),
            }
        };
        let written = match written {
            Batch::Closed { finished } => {
                if finished {
                    farewell(&mut writer, &shared).await;
                }
                return;
            }
            Batch::Written(written) => written,
        };
        match written {
            Ok(true) => {}
            Ok(false) => {
                shared.close_with(ConnectionError::Closed);
                return;
            }
            Err(e) => {
                shared.close_with(ConnectionError::from(e));
                return;
            }
        }
    }
}

/// How a batch of frames ended.
enum Batch {
    /// It was written (or failed): `Ok(false)` after a close request.
    Written(std::io::Result<bool>),
    /// The connection closed while it was written; `finished`: the batch was written whole
    /// after all, and a close envelope may follow.
    Closed { finished: bool },
}

/// Writes the close envelope an error left, if any, then shuts the write side down, all
/// within [`FAREWELL_WRITE`].
async fn farewell<W: AsyncWrite + Unpin, F: Family>(writer: &mut W, shared: &Shared<F>) {
    let Some(frame) = shared.take_farewell() else {
        return;
    };
    let write = async {
        writer.write_all(&frame).await?;
        writer.flush().await?;
        writer.shutdown().await
    };
    if let Ok(Ok(())) = tokio::time::timeout(FAREWELL_WRITE, write).await {
        shared.lock().counters.record_sent("close", frame.len());
    }
}

/// Writes `first` and whatever else is queued, then flushes. Returns false after a close request
/// (the stream is then shut down).
async fn write_batch<W, F>(
    writer: &mut W,
    first: Outgoing,
    queue: &mut mpsc::UnboundedReceiver<Outgoing>,
    shared: &Shared<F>,
) -> std::io::Result<bool>
where
    W: AsyncWrite + Unpin,
    F: Family,
{
    let mut out = BufWriter::with_capacity(WRITE_BUFFER, writer);
    let mut item = first;
    loop {
        match item {
            Outgoing::Frame { bytes, label } => {
                out.write_all(&bytes).await?;
                shared.written(label, bytes.len());
            }
            Outgoing::Close(farewell) => {
                if let Some(frame) = farewell {
                    out.write_all(&frame).await?;
                    shared.lock().counters.record_sent("close", frame.len());
                }
                out.flush().await?;
                out.shutdown().await?;
                return Ok(false);
            }
        }
        match queue.try_recv() {
            Ok(next) => item = next,
            Err(_) => break,
        }
    }
    out.flush().await?;
    Ok(true)
}
