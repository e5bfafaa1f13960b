//! The executor's start-up: the bootstrap connection, the worker watch, the main connection and
//! the registration.

use super::{ExecutorConfig, ExecutorError};
use crate::connection::{Connection, ConnectionConfig, ConnectionError};
use crate::messages::coarse::{
    LaunchedExecutor, RegisterExecutor, RetrieveSparkAppConfig, SparkAppConfig,
};
use crate::messages::{CoarseMessage, EndpointRef};
use crate::reference::url::{tcp_connect, SparkUrl};
use crate::wire::handshake::{Identity, Role};
use crate::wire::Reply;
use crate::wire::SPARK_MAX_SIZE_KEY;
use futures_util::StreamExt;

/// What start-up leaves: the registered main connection, the worker watch, the app's settings.
pub(super) struct Started {
    pub(super) main: Connection<CoarseMessage>,
    pub(super) worker: Option<WorkerWatch>,
    pub(super) app_config: SparkAppConfig,
}

/// The watch connection to the worker: it carries no message (the worker's role is of the deploy
/// family, the executor's of the coarse one, so no family could be agreed on anyway); only its
/// end matters, which [`WorkerWatch::gone`] reports.
pub(super) struct WorkerWatch {
    gone: tokio::sync::oneshot::Receiver<String>,
}

impl WorkerWatch {
    /// Opens the watch: the handshake as an executor, then reads until the stream ends.
    async fn open(url: &SparkUrl, config: &ExecutorConfig) -> Result<Self, ExecutorError> {
        let stream = tcp_connect(url, config.connect_timeout)
            .await
            .map_err(|message| ExecutorError::Connect {
                url: url.to_string(),
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
    pub(super) async fn gone(&mut self) -> String {
        (&mut self.gone)
            .await
            .unwrap_or_else(|_| "the worker watch ended".to_string())
    }
}

async fn dial(
    url: &SparkUrl,
    config: &ExecutorConfig,
    connection: ConnectionConfig<CoarseMessage>,
) -> Result<Connection<CoarseMessage>, ExecutorError> {
    let stream = tcp_connect(url, config.connect_timeout)
        .await
        .map_err(|message| ExecutorError::Connect {
            url: url.to_string(),
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

/// The frame limit the driver's `spark.rpc.message.maxSize` (MiB) sets, or the default.
fn max_frame_size(app: &SparkAppConfig) -> Result<usize, ExecutorError> {
    let Some((_, value)) = app
        .spark_properties
        .iter()
        .find(|(k, _)| k == SPARK_MAX_SIZE_KEY)
    else {
        return Ok(crate::wire::DEFAULT_MAX_FRAME_SIZE);
    };
    // Spark takes 1 to 2047 MiB.
    match value.trim().parse::<usize>() {
        Ok(mib) if (1..=2047).contains(&mib) => Ok(mib * 1024 * 1024),
        _ => Err(ExecutorError::BadSetting {
            key: SPARK_MAX_SIZE_KEY.into(),
            value: value.clone(),
        }),
    }
}

fn step(step: &'static str) -> impl Fn(ConnectionError) -> ExecutorError {
    move |source| ExecutorError::Connection { step, source }
}

/// Runs the start-up sequence.
pub(super) async fn start(config: &ExecutorConfig) -> Result<Started, ExecutorError> {
    let driver = SparkUrl::parse(&config.driver_url)?;
    let worker_url = config
        .worker_url
        .as_deref()
        .map(SparkUrl::parse)
        .transpose()?;

    // The bootstrap connection: the application's settings, then close.
    let boot = dial(&driver, config, ConnectionConfig::default()).await?;
    let reply = boot
        .ask(CoarseMessage::RetrieveSparkAppConfig(
            RetrieveSparkAppConfig {
                resource_profile_id: config.resource_profile_id,
            },
        ))
        .await
        .map_err(step("RetrieveSparkAppConfig"))?;
    boot.close().await;
    let app_config = match reply {
        Reply::Message(CoarseMessage::SparkAppConfig(c)) => c,
        other => {
            return Err(ExecutorError::UnexpectedReply {
                ask: "RetrieveSparkAppConfig",
                got: format!("{other:?}"),
            })
        }
    };
    let max_frame = max_frame_size(&app_config)?;

    // The worker watch: no message, only its closing matters.
    let worker = match &worker_url {
        Some(url) => Some(WorkerWatch::open(url, config).await?),
        None => None,
    };

    let main = dial(
        &driver,
        config,
        ConnectionConfig::default().with_max_frame_size(max_frame),
    )
    .await?;
    let cores = i32::try_from(config.cores).map_err(|_| ExecutorError::BadSetting {
        key: "cores".into(),
        value: config.cores.to_string(),
    })?;
    let answer = main
        .ask(CoarseMessage::RegisterExecutor(RegisterExecutor {
            executor_id: config.executor_id.clone(),
            executor_ref: EndpointRef::client("Executor"),
            hostname: config.hostname.clone(),
            cores,
            log_urls: Default::default(),
            attributes: Default::default(),
            resources: Default::default(),
            resource_profile_id: config.resource_profile_id,
        }))
        .await;
    match answer {
        Ok(Reply::Bool(true)) => {}
        Ok(Reply::Bool(false)) => {
            return Err(ExecutorError::Refused("the driver answered false".into()))
        }
        Ok(other) => {
            return Err(ExecutorError::UnexpectedReply {
                ask: "RegisterExecutor",
                got: format!("{other:?}"),
            })
        }
        Err(ConnectionError::Remote { error, .. }) => {
            return Err(ExecutorError::Refused(error.message))
        }
        Err(e) => return Err(step("RegisterExecutor")(e)),
    }
    main.send(CoarseMessage::LaunchedExecutor(LaunchedExecutor {
        executor_id: config.executor_id.clone(),
    }))
    .await
    .map_err(step("LaunchedExecutor"))?;
    Ok(Started {
        main,
        worker,
        app_config,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::messages::ResourceProfile;

    fn app(props: &[(&str, &str)]) -> SparkAppConfig {
        SparkAppConfig {
            spark_properties: props
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            io_encryption_key: None,
            hadoop_delegation_creds: None,
            resource_profile: ResourceProfile::default_with(Some(1), 1024),
            log_level: None,
        }
    }

    #[test]
    fn the_frame_limit_follows_the_drivers_max_size_in_mib() {
        assert_eq!(max_frame_size(&app(&[])).ok(), Some(128 * 1024 * 1024));
        assert_eq!(
            max_frame_size(&app(&[(SPARK_MAX_SIZE_KEY, "1")])).ok(),
            Some(1024 * 1024)
        );
        for bad in ["0", "2048", "x", "-1"] {
            assert!(max_frame_size(&app(&[(SPARK_MAX_SIZE_KEY, bad)])).is_err());
        }
    }
}
