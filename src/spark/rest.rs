//! Spark's REST submission protocol, the part `spark-submit --kill` and `--status` speak
//! (`spark.master.rest.enabled`, port 6066 on Spark's master): `POST /v1/submissions/kill/ID`
//! and `GET /v1/submissions/status/ID`, answered with Spark's JSON `KillSubmissionResponse` and
//! `SubmissionStatusResponse`.
//!
//! Like the Spark-wire front, it is a bridge, not a second master: each request opens a
//! sparkwire connection to the master's own listener in the role `driver-client`, asks
//! `RequestKillDriver` or `RequestDriverStatus`, and turns the answer into Spark's JSON. The
//! master decides everything (a driver is bound to the client that submitted it while that
//! client is connected, SPEC §14.2 Z4). Submissions (`/v1/submissions/create`) are not served:
//! submit with Spark's RPC client (`spark.master.rest.enabled=false`), through the front.
//!
//! Spark's REST protocol has no authentication; a master with a secret or TLS does not serve it
//! ([`RestConfig`] is for masters that take unauthenticated peers only).

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::header::{HeaderValue, CONTENT_TYPE};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use serde_json::{json, Map, Value};
use tokio::net::TcpListener;
use tokio::sync::{oneshot, Semaphore};

use super::served::ServerHandle;
use crate::connection::{connect_tcp, Connection, ConnectionConfig, ConnectionError};
use crate::messages::deploy::{RequestDriverStatus, RequestKillDriver};
use crate::messages::{DeployMessage, Family, Version};
use crate::wire::handshake::Role;
use crate::wire::Reply;

/// The protocol version in every path (Spark's `RestSubmissionServer.PROTOCOL_VERSION`).
pub const REST_PROTOCOL_VERSION: &str = "v1";
/// The HTTP status Spark's REST server answers a request of another protocol version with.
pub const UNKNOWN_PROTOCOL_VERSION: u16 = 468;

/// The settings of a REST submission server.
#[derive(Debug, Clone)]
pub struct RestConfig {
    /// Address to listen on.
    pub host: String,
    /// Port to listen on; 0 picks a free one.
    pub port: u16,
    /// The sparkwire listener of the master the requests are asked of.
    pub master: SocketAddr,
    /// The Spark release named in answers (`serverSparkVersion`): [`Version::V2`] is "4.0.1",
    /// [`Version::V1`] "3.0.3"; the master is asked in this protocol version.
    pub version: Version,
    /// HTTP connections served at once; one more is closed unanswered.
    pub max_connections: usize,
    /// How long the master has to answer one request.
    pub ask_timeout: Duration,
}

impl RestConfig {
    /// A server on `host:port` for the master listening on `master`: Spark 4.0.1, 64
    /// connections, 10 s per answer.
    pub fn new(host: impl Into<String>, port: u16, master: SocketAddr) -> Self {
        RestConfig {
            host: host.into(),
            port,
            master,
            version: Version::V2,
            max_connections: 64,
            ask_timeout: Duration::from_secs(10),
        }
    }

    fn spark_version(&self) -> &'static str {
        match self.version {
            Version::V1 => "3.0.3",
            _ => "4.0.1",
        }
    }
}

/// How long a client has to send its request head.
const HEADER_TIMEOUT: Duration = Duration::from_secs(10);
/// How long one HTTP connection may stay open.
const CONNECTION_LIFETIME: Duration = Duration::from_secs(60);

/// Starts a REST submission server on `host:port`.
pub async fn start_rest(config: RestConfig) -> std::io::Result<ServerHandle> {
    let listener = TcpListener::bind((config.host.as_str(), config.port)).await?;
    let addr = listener.local_addr()?;
    let (stop_tx, mut stop_rx) = oneshot::channel::<()>();
    let config = Arc::new(config);
    let done = tokio::spawn(async move {
        let slots = Arc::new(Semaphore::new(config.max_connections.max(1)));
        let mut connections = tokio::task::JoinSet::new();
        loop {
            tokio::select! {
                _ = &mut stop_rx => break,
                accepted = listener.accept() => {
                    let stream = match accepted {
                        Ok((stream, _)) => stream,
                        Err(e) => {
                            tracing::debug!(error = %e, "spark REST: accept failed");
                            tokio::time::sleep(Duration::from_millis(50)).await;
                            continue;
                        }
                    };
                    let Ok(slot) = Arc::clone(&slots).try_acquire_owned() else {
                        tracing::warn!("spark REST: too many connections; one closed");
                        continue;
                    };
                    let config = Arc::clone(&config);
                    connections.spawn(async move {
                        let service = service_fn(move |req: Request<Incoming>| {
                            let config = Arc::clone(&config);
                            async move { Ok::<_, Infallible>(respond(&config, req).await) }
                        });
                        let conn = http1::Builder::new()
                            .timer(TokioTimer::new())
                            .header_read_timeout(HEADER_TIMEOUT)
                            .serve_connection(TokioIo::new(stream), service);
                        let _ = tokio::time::timeout(CONNECTION_LIFETIME, conn).await;
                        drop(slot);
                    });
                }
                Some(_) = connections.join_next(), if !connections.is_empty() => {}
            }
        }
    });
    Ok(ServerHandle::new(addr, stop_tx, done))
}

/// One answer: an HTTP status and a JSON object.
struct Answer {
    status: u16,
    body: Value,
}

async fn respond(config: &RestConfig, req: Request<Incoming>) -> Response<Full<Bytes>> {
    let answer = route(config, req.method(), req.uri().path()).await;
    let text = serde_json::to_string_pretty(&answer.body).unwrap_or_default();
    let mut response = Response::new(Full::new(Bytes::from(text)));
    *response.status_mut() =
        StatusCode::from_u16(answer.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    response.headers_mut().insert(
        CONTENT_TYPE,
        HeaderValue::from_static("application/json;charset=utf-8"),
    );
    response
}

/// What a request for `path` with `method` is answered with.
async fn route(config: &RestConfig, method: &Method, path: &str) -> Answer {
    let parts: Vec<&str> = path.trim_start_matches('/').split('/').collect();
    match parts.as_slice() {
        [version, "submissions", ..] if *version != REST_PROTOCOL_VERSION => {
            let mut body = error_body(
                config,
                format!(
                    "Unknown protocol version '{version}'. Please use {REST_PROTOCOL_VERSION}."
                ),
            );
            body.insert(
                "highestProtocolVersion".into(),
                Value::from(REST_PROTOCOL_VERSION),
            );
            Answer {
                status: UNKNOWN_PROTOCOL_VERSION,
                body: Value::Object(body),
            }
        }
        [_, "submissions", "kill", id, ..] if !id.is_empty() && method == Method::POST => {
            kill(config, id).await
        }
        [_, "submissions", "status", id, ..] if !id.is_empty() && method == Method::GET => {
            status(config, id).await
        }
        [_, "submissions", "kill"] | [_, "submissions", "kill", ""] => {
            bad_request(config, "Submission ID is missing in kill request.")
        }
        [_, "submissions", "status"] | [_, "submissions", "status", ""] => {
            bad_request(config, "Submission ID is missing in status request.")
        }
        [_, "submissions", "create", ..] => bad_request(
            config,
            "This sparkwire master serves kill and status only: submit with Spark's RPC client \
             (spark.master.rest.enabled=false) on its Spark port.",
        ),
        [_, "submissions", "kill" | "status", ..] => Answer {
            status: 405,
            body: Value::Object(error_body(
                config,
                format!("HTTP method {method} is not allowed on {path}"),
            )),
        },
        _ => bad_request(
            config,
            format!(
                "Missing an action: please specify one of create, kill, or status (in {path})."
            ),
        ),
    }
}

fn error_body(config: &RestConfig, message: impl Into<String>) -> Map<String, Value> {
    let mut body = Map::new();
    body.insert("action".into(), Value::from("ErrorResponse"));
    body.insert("message".into(), Value::from(message.into()));
    body.insert(
        "serverSparkVersion".into(),
        Value::from(config.spark_version()),
    );
    body
}

fn bad_request(config: &RestConfig, message: impl Into<String>) -> Answer {
    Answer {
        status: 400,
        body: Value::Object(error_body(config, message)),
    }
}

fn internal(config: &RestConfig, message: impl Into<String>) -> Answer {
    Answer {
        status: 500,
        body: Value::Object(error_body(config, message)),
    }
}

/// Why a request got no answer message from the master.
enum Unanswered {
    /// The master refused the ask (a failure envelope): its message.
    Refused(String),
    /// The master could not be asked, or its answer was not a message.
    Broken(String),
}

/// Asks the master `m` over a new `driver-client` connection.
async fn ask(config: &RestConfig, m: DeployMessage) -> Result<DeployMessage, Unanswered> {
    let master = config.master;
    let work = async {
        let stream = connect_tcp(&master.ip().to_string(), master.port(), config.ask_timeout)
            .await
            .map_err(|e| Unanswered::Broken(format!("cannot reach the master: {e}")))?;
        let conn_config = ConnectionConfig::default()
            .with_versions(&[config.version])
            .with_ask_timeout(config.ask_timeout);
        let c: Connection<DeployMessage> = Connection::connect(
            stream,
            Role::DriverClient,
            format!("spark-rest-{}", std::process::id()),
            conn_config,
        )
        .await
        .map_err(|e| Unanswered::Broken(format!("the master refused the connection: {e}")))?;
        let answer = c.ask(m).await;
        c.close().await;
        match answer {
            Ok(Reply::Message(m)) => Ok(m),
            Ok(other) => Err(Unanswered::Broken(format!("the master answered {other:?}"))),
            Err(ConnectionError::Remote { error, .. }) => Err(Unanswered::Refused(format!(
                "{}: {}",
                error.class_name, error.message
            ))),
            Err(e) => Err(Unanswered::Broken(format!(
                "the master failed the request: {e}"
            ))),
        }
    };
    tokio::time::timeout(config.ask_timeout * 2, work)
        .await
        .unwrap_or_else(|_| {
            Err(Unanswered::Broken(
                "the master did not answer in time".into(),
            ))
        })
}

async fn kill(config: &RestConfig, id: &str) -> Answer {
    let m = DeployMessage::from(RequestKillDriver::new(id.to_string()));
    let (success, message) = match ask(config, m).await {
        Ok(DeployMessage::KillDriverResponse(k)) => (k.success, k.message),
        // A driver bound to a client still connected (SPEC §14.2 Z4): not killed, and why.
        Err(Unanswered::Refused(why)) => (false, why),
        Ok(other) => {
            return internal(config, format!("the master answered {}", other.name()));
        }
        Err(Unanswered::Broken(why)) => return internal(config, why),
    };
    tracing::info!("spark REST: kill {id}: {message}");
    Answer {
        status: 200,
        body: json!({
            "action": "KillSubmissionResponse",
            "message": message,
            "serverSparkVersion": config.spark_version(),
            "submissionId": id,
            "success": success,
        }),
    }
}

async fn status(config: &RestConfig, id: &str) -> Answer {
    let m = DeployMessage::from(RequestDriverStatus::new(id.to_string()));
    match ask(config, m).await {
        Ok(DeployMessage::DriverStatusResponse(s)) => {
            let mut body = Map::new();
            body.insert("action".into(), Value::from("SubmissionStatusResponse"));
            if let Some(e) = &s.exception {
                body.insert(
                    "message".into(),
                    Value::from(format!(
                        "Exception from the cluster:\n{}: {}",
                        e.class_name, e.message
                    )),
                );
            }
            body.insert(
                "serverSparkVersion".into(),
                Value::from(config.spark_version()),
            );
            body.insert("submissionId".into(), Value::from(id));
            body.insert("success".into(), Value::from(s.found));
            if let Some(state) = s.state {
                body.insert("driverState".into(), Value::from(state.as_str()));
            }
            if let Some(w) = &s.worker_id {
                body.insert("workerId".into(), Value::from(w.as_str()));
            }
            if let Some(hp) = &s.worker_host_port {
                body.insert("workerHostPort".into(), Value::from(hp.as_str()));
            }
            Answer {
                status: 200,
                body: Value::Object(body),
            }
        }
        Ok(other) => internal(config, format!("the master answered {}", other.name())),
        Err(Unanswered::Refused(why) | Unanswered::Broken(why)) => internal(config, why),
    }
}
