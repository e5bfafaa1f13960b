//! The two tasks that move a connection's frames: one reads and dispatches, one writes the queue.
//!
//! Reading and writing run apart so that two peers writing large frames to each other at once
//! cannot block each other. Either task closes the connection on an error, and both stop as soon
//! as it is closed; the stream is dropped when both have stopped.

use std::sync::Arc;

use futures_util::StreamExt;
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt, BufWriter};
use tokio::sync::{mpsc, watch};
use tokio_util::codec::FramedRead;

use super::error::ConnectionError;
use super::shared::{Outgoing, Shared};
use super::Incoming;
use crate::messages::Family;
use crate::wire::FrameCodec;

/// Bytes the writer gathers before writing to the stream.
const WRITE_BUFFER: usize = 64 * 1024;

async fn wait_closed(closed: &mut watch::Receiver<Option<ConnectionError>>) {
    // The sender lives in the shared state, which this task holds: the wait ends only on a close.
    let _ = closed.wait_for(Option::is_some).await;
}

/// Reads frames until the peer closes, a frame is bad, or the connection closes.
pub(crate) async fn read_loop<R, F>(
    mut reader: FramedRead<R, FrameCodec<F>>,
    shared: Arc<Shared<F>>,
    deliver: mpsc::UnboundedSender<Incoming<F>>,
) where
    R: AsyncRead + Unpin,
    F: Family,
{
    let mut closed = shared.closed.subscribe();
    loop {
        let next = tokio::select! {
            biased;
            _ = wait_closed(&mut closed) => return,
            next = reader.next() => next,
        };
        let result = match next {
            None => Err(ConnectionError::PeerClosed),
            Some(Err(e)) => Err(ConnectionError::Inbound(e)),
            Some(Ok(env)) => shared.receive(env, reader.decoder().last_frame_len(), &deliver),
        };
        if let Err(reason) = result {
            shared.close_with(reason);
            return;
        }
    }
}

/// Writes queued frames, flushing whenever the queue runs empty, until the connection closes.
pub(crate) async fn write_loop<W, F>(
    writer: W,
    mut queue: mpsc::Receiver<Outgoing>,
    shared: Arc<Shared<F>>,
) where
    W: AsyncWrite + Unpin,
    F: Family,
{
    let mut closed = shared.closed.subscribe();
    let mut out = BufWriter::with_capacity(WRITE_BUFFER, writer);
    loop {
        let first = tokio::select! {
            biased;
            _ = wait_closed(&mut closed) => return,
            item = queue.recv() => item,
        };
        let Some(first) = first else {
            // Every handle is gone: nothing more can be sent.
            shared.close_with(ConnectionError::Closed);
            return;
        };
        let written = tokio::select! {
            biased;
            _ = wait_closed(&mut closed) => return,
            written = write_batch(&mut out, first, &mut queue, &shared) => written,
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

/// Writes `first` and whatever else is queued, then flushes. Returns false after a close request
/// (the stream is then shut down).
async fn write_batch<W, F>(
    out: &mut BufWriter<W>,
    first: Outgoing,
    queue: &mut mpsc::Receiver<Outgoing>,
    shared: &Shared<F>,
) -> std::io::Result<bool>
where
    W: AsyncWrite + Unpin,
    F: Family,
{
    let mut item = first;
    loop {
        match item {
            Outgoing::Frame { bytes, label } => {
                out.write_all(&bytes).await?;
                shared.record_sent(label, bytes.len());
            }
            Outgoing::Close => {
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
