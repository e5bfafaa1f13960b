//! The executor's connections: to the driver (the bootstrap and the main one), and the watch of
//! its worker.

use super::{ExecutorConfig, ExecutorError};
use crate::connection::{Connection, ConnectionConfig, ConnectionError};
use crate::messages::CoarseMessage;
use crate::node::url::SparkUrl;
use crate::reference::url::tcp_connect;
use crate::wire::handshake::{Identity, Role};
use futures_util::StreamExt;

/// The watch connection to the worker: it carries no message (the worker's role is of the deploy
/// family, the executor's of the coarse one, so no family could be agreed on anyway); only its
/// end matters, which [`WorkerWatch::gone`] reports.
pub(super) struct WorkerWatch {
    gone: tokio::sync::oneshot::Receiver<String>,
}

impl WorkerWatch {
    /// Opens the watch: the handshake as an executor, then reads until the stream ends.
    pub(super) async fn open(
        url: &SparkUrl,
        config: &ExecutorConfig,
    ) -> Result<Self, ExecutorError> {
        let stream = tcp_connect(url, config.connect_timeout)
            .await
            .map_err(|message| ExecutorError::Connect {
                url: format!("the worker at {url}"),
                message,
            })?;
        let local = Identity::new(Role::Executor, config.handshake_id());
        let established = tokio::time::timeout(
            crate::connection::DEFAULT_HANDSHAKE_TIMEOUT,
            config.security.client_handshake(stream, &local, &url.host),
        )
        .await
        .map_err(|_| ExecutorError::Connect {
            url: url.to_string(),
            message: "the handshake timed out".into(),
        })?
        .map_err(|e| ExecutorError::Connection {
            step: "the worker watch handshake",
            source: ConnectionError::Handshake(e),
        })?;
        let (tx, gone) = tokio::sync::oneshot::channel();
        tokio::spawn(async move {
            let (_, mut reader, _writer) = established.into_parts();
            let why = loop {
                match reader.next().await {
                    Some(Ok(_)) => tracing::warn!("ignoring a frame on the worker watch"),
                    Some(Err(e)) => break e.to_string(),
                    None => break "the worker closed the connection".to_string(),
                }
            };
            let _ = tx.send(why);
        });
        Ok(WorkerWatch { gone })
    }

    /// Resolves when the worker's connection ends, with why.
    pub(super) async fn gone(self) -> String {
        self.gone
            .await
            .unwrap_or_else(|_| "the worker watch ended".to_string())
    }
}

/// Dials the driver at `url` and makes the handshake as an executor.
pub(super) async fn dial(
    url: &SparkUrl,
    config: &ExecutorConfig,
    connection: ConnectionConfig<CoarseMessage>,
) -> Result<Connection<CoarseMessage>, ExecutorError> {
    let stream = tcp_connect(url, config.connect_timeout)
        .await
        .map_err(|message| ExecutorError::Connect {
            url: format!("the driver at {url}"),
            message,
        })?;
    let local = Identity::new(Role::Executor, config.handshake_id());
    let failed = |source| ExecutorError::Connection {
        step: "the handshake",
        source,
    };
    let established = tokio::time::timeout(
        connection.handshake_timeout,
        config.security.client_handshake(stream, &local, &url.host),
    )
    .await
    .map_err(|_| {
        failed(ConnectionError::Handshake(
            crate::wire::handshake::HandshakeError::TimedOut {
                after: connection.handshake_timeout,
            },
        ))
    })?
    .map_err(|e| failed(ConnectionError::Handshake(e)))?;
    Connection::establish(established, connection).map_err(failed)
}
