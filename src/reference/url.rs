//! Connecting to an endpoint address ([`SparkUrl`](crate::node::url::SparkUrl)) over TCP, with
//! retries while the peer starts.

use std::time::Duration;

use tokio::net::TcpStream;

use crate::node::url::SparkUrl;

/// Opens a TCP stream to `url`, retrying until `within` has passed (the peer may be starting).
/// The first failure is logged at WARN with the retry schedule; the error names the address and
/// the last cause (`cannot connect to HOST:PORT: connection refused`).
pub(crate) async fn tcp_connect(url: &SparkUrl, within: Duration) -> Result<TcpStream, String> {
    const RETRY: Duration = Duration::from_millis(50);
    let deadline = tokio::time::Instant::now() + within;
    let address = url.socket_address();
    let mut warned = false;
    // The last attempt's failure, named when the time runs out during the next one.
    let mut last: Option<String> = None;
    loop {
        let attempt = tokio::time::timeout_at(deadline, TcpStream::connect(&address)).await;
        match attempt {
            Ok(Ok(stream)) => {
                // Small frames, sent one by one: waiting to coalesce them only adds latency.
                let _ = stream.set_nodelay(true);
                if warned {
                    tracing::info!("connected to {address}");
                }
                return Ok(stream);
            }
            Ok(Err(e)) if tokio::time::Instant::now() + RETRY < deadline => {
                if !warned {
                    warned = true;
                    tracing::warn!(
                        "cannot connect to {address}: {}; retrying every {} s for up to {} s",
                        crate::connection::describe_io(&e),
                        RETRY.as_secs_f64(),
                        within.as_secs_f64()
                    );
                }
                last = Some(crate::connection::describe_io(&e));
                tokio::time::sleep(RETRY).await;
            }
            Ok(Err(e)) => {
                return Err(format!(
                    "cannot connect to {address}: {}",
                    crate::connection::describe_io(&e)
                ))
            }
            Err(_) => {
                return Err(match last {
                    Some(why) => format!(
                        "cannot connect to {address}: {why} (retried for {} s)",
                        within.as_secs_f64()
                    ),
                    None => format!(
                        "cannot connect to {address}: no connection within {} s",
                        within.as_secs_f64()
                    ),
                })
            }
        }
    }
}
