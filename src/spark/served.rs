//! A server sparkwire runs for Spark peers (the Spark-wire front, the REST submission server):
//! its address, and stopping it.

use std::net::SocketAddr;

use tokio::sync::oneshot;

/// A running Spark-side server ([`start_front`](super::start_front), `start_rest`); dropping it
/// stops it.
#[derive(Debug)]
pub struct ServerHandle {
    addr: SocketAddr,
    stop: Option<oneshot::Sender<()>>,
    done: Option<tokio::task::JoinHandle<()>>,
}

impl ServerHandle {
    /// A handle on the server listening on `addr`, run by the task `done`, which ends once
    /// `stop` is sent (or dropped).
    pub(crate) fn new(
        addr: SocketAddr,
        stop: oneshot::Sender<()>,
        done: tokio::task::JoinHandle<()>,
    ) -> Self {
        ServerHandle {
            addr,
            stop: Some(stop),
            done: Some(done),
        }
    }

    /// The address it listens on (Spark peers use `spark://HOST:PORT` of it).
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Stops accepting and ends every connection it serves.
    pub async fn shutdown(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(done) = self.done.take() {
            let _ = done.await;
        }
    }
}

impl Drop for ServerHandle {
    fn drop(&mut self) {
        if let Some(done) = self.done.take() {
            done.abort();
        }
    }
}
