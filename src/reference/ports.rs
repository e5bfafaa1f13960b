//! Listening on a port as Spark's services do (`Utils.startServiceOnPort`): a port that is
//! taken is retried on the next one up, at most `retries` times (`spark.port.maxRetries`,
//! default 16), wrapping from 65535 back to 1024; port 0 asks the system for any free port each
//! time. Only a port already in use moves on to the next one: any other failure (an address not
//! on this machine, a privileged port) is reported at once.

use tokio::net::TcpListener;

/// Spark's `spark.port.maxRetries` default: a service tries its port and up to 16 more.
pub const DEFAULT_PORT_RETRIES: u16 = 16;

/// The lowest port retried into: Spark's services never move into the privileged ports.
const FIRST_USER_PORT: u32 = 1024;

/// A service could not listen.
#[derive(Debug, thiserror::Error)]
#[error("cannot listen on {host}:{port} ({service}): {source}{}", exhausted(*.port, *.retries, *.attempts))]
pub struct ListenError {
    /// Which service (Spark's names: `sparkMaster`, `sparkWorker`, `MasterUI`, `WorkerUI`).
    pub service: &'static str,
    /// The address asked for.
    pub host: String,
    /// The port asked for (the first one tried).
    pub port: u16,
    /// How many ports up it could move.
    pub retries: u16,
    /// How many attempts were made.
    pub attempts: u32,
    /// The last attempt's failure.
    pub source: std::io::Error,
}

/// The end of [`ListenError`]'s message when every port tried was taken.
fn exhausted(port: u16, retries: u16, attempts: u32) -> String {
    if attempts <= 1 {
        return String::new();
    }
    if port == 0 {
        format!(" (after {retries} retries on a free port)")
    } else {
        let last = port_at(port, attempts - 1);
        format!(
            " (ports {port} to {last} are all taken: choose another port or raise --port-retries, \
             now {retries})"
        )
    }
}

/// The `offset`-th port from `base`: upward, wrapping from 65535 to 1024 (Spark's `userPort`).
/// Port 0 stays 0, and so does a privileged port (below 1024), which is only ever tried itself.
pub fn port_at(base: u16, offset: u32) -> u16 {
    if u32::from(base) < FIRST_USER_PORT {
        return base;
    }
    let span = 65536 - FIRST_USER_PORT;
    let from = u32::from(base) - FIRST_USER_PORT;
    let port = (from + offset) % span + FIRST_USER_PORT;
    u16::try_from(port).unwrap_or(base)
}

/// Whether a failed bind means the port is taken (and the next one may be tried).
fn taken(error: &std::io::Error) -> bool {
    error.kind() == std::io::ErrorKind::AddrInUse
}

/// Listens on `host:port` for `service`, moving up one port at a time while the port is taken,
/// at most `retries` times; logs each port passed over at WARN and the one taken at INFO. A
/// privileged port (below 1024, not 0) is tried alone: Spark's services never retry into or
/// out of them.
///
/// ```
/// use sparkwire::reference::ports::listen;
///
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// let first = listen("127.0.0.1", 0, 16, "example").await.expect("a free port");
/// let port = first.local_addr().expect("bound").port();
/// // The same port again: the next one up is taken instead.
/// let second = listen("127.0.0.1", port, 16, "example").await.expect("a port");
/// assert_ne!(second.local_addr().expect("bound").port(), port);
/// # });
/// ```
pub async fn listen(
    host: &str,
    port: u16,
    retries: u16,
    service: &'static str,
) -> Result<TcpListener, ListenError> {
    let retries_here = if port != 0 && u32::from(port) < FIRST_USER_PORT {
        0
    } else {
        retries
    };
    let mut attempts = 0u32;
    loop {
        let try_port = port_at(port, attempts);
        attempts += 1;
        match TcpListener::bind((host, try_port)).await {
            Ok(listener) => {
                let taken_port = listener.local_addr().map_or(try_port, |a| a.port());
                tracing::info!("Successfully started service '{service}' on port {taken_port}.");
                return Ok(listener);
            }
            Err(source) if taken(&source) && attempts <= u32::from(retries_here) => {
                if port == 0 {
                    tracing::warn!("Service '{service}' could not bind on a random free port.");
                } else {
                    tracing::warn!(
                        "Service '{service}' could not bind on port {try_port}. Attempting port {}.",
                        port_at(port, attempts)
                    );
                }
            }
            Err(source) => {
                return Err(ListenError {
                    service,
                    host: host.to_string(),
                    port,
                    retries: retries_here,
                    attempts,
                    source,
                })
            }
        }
    }
}

/// Listens for a web UI on `port` (as [`listen`] does) when one is asked for and this build has
/// the `webui` feature; without it, says so and serves none.
pub(crate) async fn listen_web_ui(
    host: &str,
    port: Option<u16>,
    retries: u16,
    service: &'static str,
) -> Result<Option<TcpListener>, ListenError> {
    match port {
        Some(port) if cfg!(feature = "webui") => {
            Ok(Some(listen(host, port, retries, service).await?))
        }
        Some(_) => {
            tracing::warn!("this build has no web UI (the webui feature); none is served");
            Ok(None)
        }
        None => Ok(None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ports_go_up_and_wrap_into_the_user_ports_as_sparks_user_port_does() {
        assert_eq!(port_at(7077, 0), 7077);
        assert_eq!(port_at(7077, 3), 7080);
        assert_eq!(port_at(65535, 1), 1024);
        assert_eq!(port_at(65534, 3), 1025);
        assert_eq!(port_at(0, 5), 0);
        assert_eq!(port_at(80, 0), 80);
        assert_eq!(port_at(1024, 0), 1024);
    }

    #[tokio::test]
    async fn a_taken_port_moves_to_the_next_one_and_no_retries_means_an_error_naming_the_service() {
        let held = listen("127.0.0.1", 0, 0, "held").await.expect("any port");
        let port = held.local_addr().expect("addr").port();
        let none = listen("127.0.0.1", port, 0, "sparkMaster")
            .await
            .expect_err("taken");
        assert_eq!(none.source.kind(), std::io::ErrorKind::AddrInUse);
        assert_eq!(none.attempts, 1);
        let text = none.to_string();
        assert!(
            text.contains(&format!("127.0.0.1:{port} (sparkMaster)")),
            "{text}"
        );
        // With retries the next free port up is taken (which one depends on the machine, but
        // never the held one, and never more than 16 up).
        let next = listen("127.0.0.1", port, 16, "sparkMaster")
            .await
            .expect("a port up");
        let got = next.local_addr().expect("addr").port();
        assert_ne!(got, port);
        assert!((1..=16).any(|o| port_at(port, o) == got), "{port} -> {got}");
    }

    #[tokio::test]
    async fn when_every_port_is_taken_the_error_names_the_range_and_the_flag() {
        // Hold a port and the one after it (if that one is free; otherwise someone else holds
        // it, which is as good).
        let held = listen("127.0.0.1", 0, 0, "held").await.expect("any port");
        let base = held.local_addr().expect("addr").port();
        let next = TcpListener::bind(("127.0.0.1", port_at(base, 1))).await;
        let b_ok = next.is_ok();
        let err = listen("127.0.0.1", base, 1, "WorkerUI").await;
        match err {
            Err(e) => {
                assert_eq!(e.attempts, 2);
                let text = e.to_string();
                assert!(text.contains("--port-retries, now 1"), "{text}");
                assert!(
                    text.contains(&format!("ports {base} to {}", port_at(base, 1))),
                    "{text}"
                );
            }
            // The second port was free after all when it was not ours to hold.
            Ok(l) => assert!(!b_ok && l.local_addr().expect("addr").port() == port_at(base, 1)),
        }
    }

    #[tokio::test]
    async fn a_failure_other_than_a_taken_port_is_not_retried() {
        // 192.0.2.1 (TEST-NET-1) is on no machine: the bind fails at once.
        let e = listen("192.0.2.1", 40000, 16, "sparkMaster")
            .await
            .expect_err("not here");
        assert_eq!(e.attempts, 1);
    }
}
