//! A leader that took over tells the Spark-wire peers it recovered that it is the master now,
//! over Spark's own wire, as Spark's `Master.beginRecovery` does: `MasterChanged(self,
//! webUiUrl)` to each recovered worker's `Worker` endpoint and each recovered application's
//! `AppClient` endpoint, at the RPC address they registered with.
//!
//! A Spark worker (and a Spark driver's `AppClient`) follows a failover only on that message:
//! having registered once, it retries only the master it knew. It answers
//! (`WorkerSchedulerStateResponse`, `MasterChangeAcknowledged`) to the master the message names,
//! the front's address, on a connection of its own; the front takes that answer to the master's
//! core like any message of a Spark peer, and the core binds the worker or the application to
//! that connection (a recovered peer may answer on any connection not bound to another).
//!
//! A front whose [`FrontConfig::recovered`] names the master's [`SparkPeerDial`] puts the
//! announcement there: the master hands it the recovered peers its own (sparkwire) dial could
//! not reach, and the connection it is sent on is then served as the front's own.

use std::sync::Arc;
use std::time::Duration;

use std::net::SocketAddr;

use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};

use super::front::{serve_recovered, Ctx};

use super::auth::{ClientAuth, ServerAuth};
use super::release::{Detector, Release};
use super::FrontConfig;
use super::{message_stream, Frame, RequestMessage, Typed};
use crate::connection::connect_tcp;
use crate::messages::deploy::MasterChanged;
use crate::messages::{Addr, DeployMessage, EndpointRef};
use crate::node::master::DialTarget;
use crate::reference::master::SparkPeerDial;

/// How the master announces itself to a recovered Spark peer.
#[derive(Debug, Clone)]
pub struct SparkAnnouncer {
    /// The front's address: the master the peer is told of (`spark://host:port`).
    pub front: Addr,
    /// The master's web UI URL (`MasterChanged.masterWebUiUrl`; empty without one).
    pub web_ui_url: String,
    /// The release whose forms the message is written in (the front's pinned release, else
    /// the newest sparkwire knows).
    pub release: &'static Release,
    /// Spark's authentication, when the master has a secret (the peer demands it on its
    /// server as the master does on the front).
    pub auth: Option<ClientAuth>,
    /// How long the connection, the bootstrap and the write may take.
    pub timeout: Duration,
}

/// Why a recovered Spark peer could not be told.
#[derive(Debug, thiserror::Error)]
pub enum AnnounceError {
    /// The connection, the write or the bootstrap failed.
    #[error("{0}")]
    Io(String),
    /// Spark's authentication failed.
    #[error("Spark authentication: {0}")]
    Auth(String),
    /// The message could not be written in the release's forms.
    #[error("cannot write MasterChanged: {0}")]
    Encode(String),
    /// Not done within the timeout.
    #[error("not done within {0:?}")]
    Timeout(Duration),
}

impl SparkAnnouncer {
    /// The announcement of the master behind `front`, listening on `port`, whose web UI is at
    /// `web_ui_url`: in the front's pinned release (else the newest sparkwire knows), with the
    /// client's side of the front's authentication.
    pub fn for_front(front: &FrontConfig, port: u16, web_ui_url: String) -> SparkAnnouncer {
        SparkAnnouncer {
            front: Addr::new(front.host.clone(), i32::from(port)),
            web_ui_url,
            release: front
                .release
                .or_else(|| Release::all().last())
                .unwrap_or_else(|| Detector::new().release()),
            auth: front.auth.as_ref().map(client_auth),
            timeout: Duration::from_secs(10),
        }
    }

    /// The endpoint a recovered peer of `target` registered as.
    pub fn endpoint_of(target: &DialTarget) -> &'static str {
        match target {
            DialTarget::Worker(_) => "Worker",
            DialTarget::App(_) => "AppClient",
        }
    }

    /// The bytes of the one-way frame carrying `MasterChanged` to `endpoint` at `peer`.
    pub fn frame(&self, peer: &Addr, endpoint: &str) -> Result<Vec<u8>, AnnounceError> {
        let m = DeployMessage::from(MasterChanged {
            master: EndpointRef::at(self.front.clone(), super::MASTER_ENDPOINT),
            master_web_ui_url: self.web_ui_url.clone(),
        });
        let stream = message_stream(&Typed::Deploy(m), self.release, None)
            .map_err(|e| AnnounceError::Encode(e.to_string()))?;
        let body = RequestMessage {
            sender: Some((self.front.host.clone(), self.front.port)),
            receiver: Some((peer.host.clone(), peer.port)),
            endpoint: endpoint.to_string(),
            stream: stream.into(),
        }
        .encode()
        .map_err(|e| AnnounceError::Encode(e.to_string()))?;
        Frame::OneWay { body: body.into() }
            .encode()
            .map_err(|e| AnnounceError::Encode(e.to_string()))
    }

    /// Sends `MasterChanged` to `endpoint` at `peer` over a new Spark connection (connected,
    /// authenticated and written within the timeout), then keeps that connection until the peer
    /// closes it (see [`hold`]), on a task of its own.
    pub(super) async fn announce(
        &self,
        peer: &Addr,
        endpoint: &str,
        ctx: Arc<Ctx>,
    ) -> Result<(), AnnounceError> {
        let frame = self.frame(peer, endpoint)?;
        let t = self.timeout;
        tokio::time::timeout(t, async {
            let port = u16::try_from(peer.port)
                .map_err(|_| AnnounceError::Io(format!("port {} out of range", peer.port)))?;
            let stream = connect_tcp(&peer.host, port, t)
                .await
                .map_err(|e| AnnounceError::Io(e.to_string()))?;
            let endpoint_ref = EndpointRef::at(peer.clone(), endpoint);
            match &self.auth {
                None => hold(stream, &frame, ctx, endpoint_ref).await,
                Some(auth) => {
                    let stream = super::auth::client_handshake(stream, auth)
                        .await
                        .map_err(|e| AnnounceError::Auth(e.to_string()))?;
                    hold(stream, &frame, ctx, endpoint_ref).await
                }
            }
        })
        .await
        .map_err(|_| AnnounceError::Timeout(t))?
    }

    /// Puts this announcement in `slot`: each dial the master hands it runs as a task, its
    /// outcome logged. Whether it was installed (the first installed stays).
    pub(super) fn install(self, slot: &SparkPeerDial, ctx: Arc<Ctx>) -> bool {
        let me = Arc::new(self);
        slot.install(Arc::new(move |addr: Addr, target: DialTarget| {
            let me = Arc::clone(&me);
            let ctx = Arc::clone(&ctx);
            tokio::spawn(async move {
                let endpoint = SparkAnnouncer::endpoint_of(&target);
                let whom = match &target {
                    DialTarget::Worker(id) => format!("worker {id}"),
                    DialTarget::App(id) => format!("application {id}"),
                };
                match me.announce(&addr, endpoint, ctx).await {
                    Ok(()) => tracing::info!(
                        "spark front: told {whom} at {addr} (its {endpoint} endpoint) of the new \
                         master spark://{}:{} over Spark's wire",
                        me.front.host,
                        me.front.port
                    ),
                    Err(e) => tracing::info!(
                        "cannot reach {whom} at {addr} over Spark's wire to announce the new \
                         master: {e}"
                    ),
                }
            });
        }))
    }
}

/// The client's side of a server's authentication: the auth engine (with SASL after it when
/// the server falls back) when crypto is on, else SASL.
pub fn client_auth(server: &ServerAuth) -> ClientAuth {
    let mut c = if server.crypto {
        ClientAuth::crypto(server.secret.clone())
    } else {
        ClientAuth::sasl(server.secret.clone())
    };
    if server.crypto {
        c.sasl_fallback = server.sasl_fallback;
        c.version = server.version;
        c.cipher = server.cipher;
    }
    c
}

/// Writes `frame`, then serves the connection as the front serves its own (on a task): a Spark
/// peer answers `MasterChanged` over the connection it came on, and takes the close of a
/// connection whose sender was its master for the master's loss, as Spark's master keeps it.
async fn hold<S: AsyncRead + AsyncWrite + Unpin + Send + 'static>(
    mut stream: S,
    frame: &[u8],
    ctx: Arc<Ctx>,
    peer_ref: EndpointRef,
) -> Result<(), AnnounceError> {
    stream
        .write_all(frame)
        .await
        .map_err(|e| AnnounceError::Io(e.to_string()))?;
    stream
        .flush()
        .await
        .map_err(|e| AnnounceError::Io(e.to_string()))?;
    let peer = peer_ref
        .address
        .as_ref()
        .and_then(|a| format!("{}:{}", a.host, a.port).parse::<SocketAddr>().ok())
        .unwrap_or_else(|| SocketAddr::from(([0, 0, 0, 0], 0)));
    tokio::spawn(async move {
        if let Err(e) = serve_recovered(stream, peer, ctx, peer_ref).await {
            tracing::info!("spark front: {peer} (told of the new master): closed: {e}");
        }
    });
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn master_changed_reaches_the_recovered_peers_endpoint_naming_the_front() {
        let a = SparkAnnouncer {
            front: Addr::new("10.77.0.2", 7078),
            web_ui_url: "http://10.77.0.2:8080".into(),
            release: Release::all().last().unwrap(),
            auth: None,
            timeout: Duration::from_secs(1),
        };
        let bytes = a.frame(&Addr::new("10.77.0.3", 40001), "Worker").unwrap();
        let mut d = super::super::FrameDecoder::new(1 << 20);
        d.push(&bytes);
        let item = d.next_item().unwrap();
        let Ok(Frame::OneWay { body }) = item.frame else {
            panic!("not a one-way frame: {:?}", item.frame);
        };
        let header = RequestMessage::parse(&body).unwrap();
        assert_eq!(header.endpoint, "Worker");
        assert_eq!(header.receiver, Some(("10.77.0.3".to_string(), 40001)));
        assert_eq!(header.sender, Some(("10.77.0.2".to_string(), 7078)));
        let g = super::super::parse_stream(&header.stream).unwrap();
        match super::super::classify(g.root_node()) {
            super::super::Classified::Message(Typed::Deploy(DeployMessage::MasterChanged(m))) => {
                assert_eq!(m.master.name, "Master");
                assert_eq!(m.master.address, Some(Addr::new("10.77.0.2", 7078)));
                assert_eq!(m.master_web_ui_url, "http://10.77.0.2:8080");
            }
            other => panic!("not MasterChanged: {other:?}"),
        }
        assert_eq!(
            SparkAnnouncer::endpoint_of(&DialTarget::App("app-1".into())),
            "AppClient"
        );
    }
}
