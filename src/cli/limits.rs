//! The connection limits every listening command shares: `--max-connections`, `--idle-timeout`,
//! `--frame-read-timeout`, `--max-queued-bytes`.

use clap::Args;
use sparkwire::connection::{
    Limits, DEFAULT_FRAME_READ_TIMEOUT, DEFAULT_IDLE_TIMEOUT, DEFAULT_MAX_CONNECTIONS,
    DEFAULT_MAX_OUTGOING_BYTES,
};

/// Most connections a listener may hold at once: far above any file descriptor limit, and low
/// enough for the semaphore that counts them.
const MAX_CONNECTIONS: usize = 1 << 20;

/// The largest frame `--max-frame-bytes` takes: 2047 MiB, as Spark's `spark.rpc.message.maxSize`
/// ("should not be greater than 2047 MB").
pub const MAX_FRAME_BYTES: usize = 2047 * 1024 * 1024;

/// `--max-frame-bytes`, checked: 1 to [`MAX_FRAME_BYTES`].
pub fn max_frame_bytes(value: Option<usize>) -> Result<Option<usize>, String> {
    match value {
        Some(v) if !(1..=MAX_FRAME_BYTES).contains(&v) => Err(format!(
            "--max-frame-bytes must be 1 to {MAX_FRAME_BYTES} (2047 MiB, as \
             spark.rpc.message.maxSize), not {v}"
        )),
        v => Ok(v),
    }
}

/// Limits on the connections a listener accepts.
#[derive(Debug, Args)]
pub struct LimitArgs {
    /// Connections held at once (handshakes included); one more is refused with
    /// `tooManyConnections`. Keep it under the process's file descriptor limit.
    #[arg(long, default_value_t = DEFAULT_MAX_CONNECTIONS)]
    max_connections: usize,
    /// Seconds a frame may take to arrive once its first byte has.
    #[arg(long, value_name = "SECONDS", default_value_t = DEFAULT_FRAME_READ_TIMEOUT.as_secs_f64())]
    frame_read_timeout: f64,
    /// Bytes queued for one peer beyond which it does not read (a slow consumer) and is
    /// disconnected.
    #[arg(long, value_name = "BYTES", default_value_t = DEFAULT_MAX_OUTGOING_BYTES)]
    max_queued_bytes: usize,
}

/// The idle timeout of a listener whose peers register (master, worker).
#[derive(Debug, Args)]
pub struct IdleArgs {
    /// Seconds a peer that has not registered, or a `ui` peer between requests, may send nothing
    /// before it is disconnected. Registered workers and applications are never cut off.
    #[arg(long, value_name = "SECONDS", default_value_t = DEFAULT_IDLE_TIMEOUT.as_secs_f64())]
    idle_timeout: f64,
}

/// The limits the arguments give; without `idle`, the default idle timeout (which applies to no
/// peer of a driver: executors are never idle-timed).
pub fn limits(args: &LimitArgs, idle: Option<&IdleArgs>) -> Result<Limits, String> {
    if !(1..=MAX_CONNECTIONS).contains(&args.max_connections) {
        return Err(format!(
            "--max-connections must be 1 to {MAX_CONNECTIONS}, not {}",
            args.max_connections
        ));
    }
    if args.max_queued_bytes == 0 {
        return Err("--max-queued-bytes must be at least 1".into());
    }
    Ok(Limits {
        max_connections: args.max_connections,
        idle_timeout: match idle {
            Some(idle) => {
                super::seconds(idle.idle_timeout).map_err(|e| format!("--idle-timeout: {e}"))?
            }
            None => DEFAULT_IDLE_TIMEOUT,
        },
        frame_read_timeout: super::seconds(args.frame_read_timeout)
            .map_err(|e| format!("--frame-read-timeout: {e}"))?,
        max_outgoing_bytes: args.max_queued_bytes,
    })
}
