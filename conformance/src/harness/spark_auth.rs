//! Spark's own authentication under the suite's Spark-wire connections (`--wire spark
//! --secret-file F`, SPEC §15.6): with a secret, every connection the suite opens runs the
//! bootstrap a Spark client with the run's settings runs (`--spark-conf`: SASL by default, the
//! auth engine with `spark.network.crypto.enabled=true`), and every connection it accepts the
//! bootstrap of a Spark server with those settings, before anything else, as Spark's peers do.
//!
//! The session (plaintext after SASL's `auth`, AES-CTR or AES-GCM after the engine, SASL's sealing
//! after `auth-conf`) is the library's ([`sparkwire::spark::auth`]); the connection the case
//! reads and writes is a loopback socket whose other end a task relays through the session, so
//! that a case sees Spark's frames in the clear whatever the session's cipher, and the suite's
//! connections stay one kind of socket.

use std::net::SocketAddr;

use sparkwire::spark::auth::{
    client_handshake, server_handshake, AuthStream, ClientAuth, Negotiated, ServerAuth,
};
use sparkwire::wire::handshake::Secret;
use tokio::net::{TcpListener, TcpStream};

/// What the suite speaks on Spark's wire when it knows the endpoint's secret.
#[derive(Debug, Clone)]
pub struct SparkAuth {
    /// The bootstrap the suite runs as a client (Spark's `AuthClientBootstrap` with the
    /// settings given).
    pub client: ClientAuth,
    /// The bootstrap the suite runs as a server (Spark's `AuthRpcHandler` / `SaslRpcHandler`).
    pub server: ServerAuth,
    /// The secret itself, as Spark's peers hold it (`spark.authenticate.secret`).
    pub secret: String,
}

impl SparkAuth {
    /// The suite's Spark authentication with the endpoint's `secret` (the file's content, which
    /// must be UTF-8 text as Spark's `spark.authenticate.secret` is) and Spark's settings
    /// `conf` (`KEY=VALUE`, as `--spark-conf` gives them), each applied to both sides.
    pub fn new(secret: &Secret, conf: &[String]) -> Result<SparkAuth, String> {
        let text = std::str::from_utf8(secret.expose())
            .map_err(|_| {
                "the secret file is not UTF-8 text, as Spark's spark.authenticate.secret must be"
                    .to_string()
            })?
            .to_string();
        let mut client = ClientAuth::sasl(text.clone());
        let mut server = ServerAuth::new(text.clone());
        for kv in conf {
            let (k, v) = kv
                .split_once('=')
                .ok_or_else(|| format!("--spark-conf {kv:?}: KEY=VALUE"))?;
            client.set(k, v).map_err(|e| format!("--spark-conf: {e}"))?;
            server.set(k, v).map_err(|e| format!("--spark-conf: {e}"))?;
        }
        // A server of a cluster whose clients speak the engine takes it; one whose clients
        // speak SASL only (the default) is a Spark server with crypto off.
        server.crypto = client.crypto;
        Ok(SparkAuth {
            client,
            server,
            secret: text,
        })
    }

    /// Whether the endpoint, holding the same settings, takes the auth engine
    /// (`spark.network.crypto.enabled=true`).
    pub fn engine(&self) -> bool {
        self.server.crypto
    }

    /// Whether the endpoint, holding the same settings, refuses SASL
    /// (`spark.network.crypto.saslFallback=false` with crypto on).
    pub fn refuses_sasl(&self) -> bool {
        !self.server.takes_sasl()
    }
}

/// Runs the client's bootstrap on `stream`, just connected: the stream the case then uses, in
/// the clear, and what the bootstrap agreed on.
pub async fn dial(stream: TcpStream, auth: &ClientAuth) -> Result<(TcpStream, Negotiated), String> {
    let session = client_handshake(stream, auth)
        .await
        .map_err(|e| format!("Spark's bootstrap as a client failed: {e}"))?;
    let negotiated = session.negotiated();
    Ok((relay(session).await?, negotiated))
}

/// Runs the server's bootstrap on `stream`, just accepted: the stream the case then uses, in
/// the clear, and what the bootstrap agreed on.
pub async fn accept(
    stream: TcpStream,
    auth: &ServerAuth,
) -> Result<(TcpStream, Negotiated), String> {
    let session = server_handshake(stream, auth)
        .await
        .map_err(|e| format!("the peer's bootstrap failed: {e}"))?;
    let negotiated = session.negotiated();
    Ok((relay(session).await?, negotiated))
}

/// A loopback connection whose other end a task relays through `session` both ways, until
/// both directions ended (an end of stream on one side is passed on as the other's).
async fn relay(mut session: AuthStream<TcpStream>) -> Result<TcpStream, String> {
    let listener = TcpListener::bind(SocketAddr::from(([127, 0, 0, 1], 0)))
        .await
        .map_err(|e| format!("a loopback socket for the session: {e}"))?;
    let at = listener
        .local_addr()
        .map_err(|e| format!("a loopback socket for the session: {e}"))?;
    let (near, far) = tokio::join!(TcpStream::connect(at), listener.accept());
    let near = near.map_err(|e| format!("a loopback socket for the session: {e}"))?;
    let (mut far, _) = far.map_err(|e| format!("a loopback socket for the session: {e}"))?;
    let _ = far.set_nodelay(true);
    tokio::spawn(async move {
        let _ = tokio::io::copy_bidirectional(&mut far, &mut session).await;
    });
    Ok(near)
}
