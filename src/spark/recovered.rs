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
            DialTarget::Worker(_) => super::WORKER_ENDPOINT,
            DialTarget::App(_) => "AppClient",
        }
    }

    /// The bytes of the one-way frame carrying `MasterChanged` to `endpoint` at `peer`.
    pub fn frame(&self, peer: &Addr, endpoint: &str) -> Result<Vec<u8>, AnnounceError> {
        self.frame_in(peer, endpoint, self.release)
    }

    /// The same, written in `release`'s forms (the peer's own, as its record keeps it).
    pub fn frame_in(
        &self,
        peer: &Addr,
        endpoint: &str,
        release: &'static Release,
    ) -> Result<Vec<u8>, AnnounceError> {
        let m = DeployMessage::from(MasterChanged {
            master: EndpointRef::at(self.front.clone(), super::MASTER_ENDPOINT),
            master_web_ui_url: self.web_ui_url.clone(),
        });
        let stream = message_stream(&Typed::Deploy(m), release, None)
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
        release: &'static Release,
        ctx: Arc<Ctx>,
    ) -> Result<(), AnnounceError> {
        let frame = self.frame_in(peer, endpoint, release)?;
        let t = self.timeout;
        tokio::time::timeout(t, async {
            let port = u16::try_from(peer.port)
                .map_err(|_| AnnounceError::Io(format!("port {} out of range", peer.port)))?;
            let stream = connect_tcp(&peer.host, port, t)
                .await
                .map_err(|e| AnnounceError::Io(e.to_string()))?;
            let endpoint_ref = EndpointRef::at(peer.clone(), endpoint);
            match &self.auth {
                None => hold(stream, &frame, ctx, endpoint_ref, release).await,
                Some(auth) => {
                    let stream = super::auth::client_handshake(stream, auth)
                        .await
                        .map_err(|e| AnnounceError::Auth(e.to_string()))?;
                    hold(stream, &frame, ctx, endpoint_ref, release).await
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
        let book = slot.clone();
        slot.install(Arc::new(move |addr: Addr, target: DialTarget| {
            let me = Arc::clone(&me);
            let ctx = Arc::clone(&ctx);
            // The peer's own release, as its record keeps it (SPEC §15.5); else the front's.
            let stored = book.with_book(|b| b.release_at(&addr).and_then(Release::named));
            tokio::spawn(async move {
                let endpoint = SparkAnnouncer::endpoint_of(&target);
                let whom = match &target {
                    DialTarget::Worker(id) => format!("worker {id}"),
                    DialTarget::App(id) => format!("application {id}"),
                };
                let (release, which) = match stored {
                    Some(r) => (r, "its release as stored"),
                    None => (me.release, "the front's release"),
                };
                match me.announce(&addr, endpoint, release, ctx).await {
                    Ok(()) => tracing::info!(
                        "spark front: told {whom} at {addr} (its {endpoint} endpoint) of the new \
                         master spark://{}:{} over Spark's wire, in Spark {release}, {which}",
                        me.front.host,
                        me.front.port
                    ),
                    Err(e) => tracing::info!(
                        "cannot reach {whom} at {addr} over Spark's wire to announce the new \
                         master (in Spark {release}, {which}): {e}"
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

/// Writes `frame`, then serves the connection as the front serves its own (on a task), the
/// peer taken to speak `release` (what it was told in) until its streams say more: a Spark
/// peer answers `MasterChanged` over the connection it came on, and takes the close of a
/// connection whose sender was its master for the master's loss, as Spark's master keeps it.
async fn hold<S: AsyncRead + AsyncWrite + Unpin + Send + 'static>(
    mut stream: S,
    frame: &[u8],
    ctx: Arc<Ctx>,
    peer_ref: EndpointRef,
    release: &'static Release,
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
        if let Err(e) = serve_recovered(stream, peer, ctx, peer_ref, release).await {
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

    /// A Spark peer's server on an ephemeral port of 127.0.0.1 with Spark's authentication
    /// `auth`: what the one connection made to it brings, after its bootstrap: `Ok` with the
    /// first frame's header and MasterChanged's `(master, web UI URL)`, or `Err` why not.
    async fn spark_peer(
        auth: super::super::auth::ServerAuth,
    ) -> (
        Addr,
        tokio::task::JoinHandle<Result<(RequestMessage, Addr, String), String>>,
    ) {
        use tokio::io::AsyncReadExt;
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let task = tokio::spawn(async move {
            let (tcp, _) = listener.accept().await.map_err(|e| e.to_string())?;
            let mut stream = super::super::auth::server_handshake(tcp, &auth)
                .await
                .map_err(|e| format!("bootstrap refused: {e}"))?;
            let mut d = super::super::FrameDecoder::new(1 << 20);
            let mut buf = vec![0u8; 4096];
            loop {
                if let Some(item) = d.next_item() {
                    let Ok(Frame::OneWay { body }) = item.frame else {
                        return Err(format!("not a one-way frame: {:?}", item.frame));
                    };
                    let header = RequestMessage::parse(&body).ok_or("no header")?;
                    let g =
                        super::super::parse_stream(&header.stream).map_err(|e| e.to_string())?;
                    return match super::super::classify(g.root_node()) {
                        super::super::Classified::Message(Typed::Deploy(
                            DeployMessage::MasterChanged(m),
                        )) => Ok((
                            header,
                            m.master.address.ok_or("no master address")?,
                            m.master_web_ui_url,
                        )),
                        other => Err(format!("not MasterChanged: {other:?}")),
                    };
                }
                let n = stream.read(&mut buf).await.map_err(|e| e.to_string())?;
                if n == 0 {
                    return Err("closed before a frame".into());
                }
                d.push(&buf[..n]);
            }
        });
        (Addr::new("127.0.0.1", i32::from(port)), task)
    }

    /// A front with Spark's authentication `auth` whose master's slot is `slot` (its master is
    /// never reached: only the announcement is looked at).
    async fn front_with(
        auth: super::super::auth::ServerAuth,
        slot: &SparkPeerDial,
    ) -> super::super::served::ServerHandle {
        let mut config = FrontConfig::new("127.0.0.1", 0, "127.0.0.1:9".parse().unwrap());
        config.auth = Some(auth);
        config.recovered = Some((slot.clone(), "http://127.0.0.1:8080".into()));
        super::super::start_front(config).await.unwrap()
    }

    #[tokio::test]
    async fn with_a_secret_master_changed_goes_only_after_spark_s_bootstrap_in_the_stored_release()
    {
        use super::super::auth::ServerAuth;
        // The auth engine (spark.network.crypto.enabled), and SASL alone.
        for crypto in [true, false] {
            let mut server = ServerAuth::new("the-secret");
            server.crypto = crypto;
            let slot = SparkPeerDial::default();
            let front = front_with(server.clone(), &slot).await;
            let (peer, told) = spark_peer(server.clone()).await;
            // The peer's record says it is an application of Spark 3.0.3 (a Scala 2.12 release,
            // whose forms differ from the newest's).
            slot.with_book(|b| {
                b.note(&peer, "3.0.3", None);
                let _ = b.complete(crate::node::master::Record::Worker(
                    crate::node::master::StoredWorker {
                        id: "worker-1".into(),
                        host: "127.0.0.1".into(),
                        port: peer.port,
                        endpoint: EndpointRef::at(peer.clone(), "Worker"),
                        cores: 1,
                        memory: 512,
                        web_ui: String::new(),
                        resources: Default::default(),
                        spark: None,
                    },
                ));
            });
            assert!(slot.hand_over(peer.clone(), DialTarget::Worker("worker-1".into())));
            let got = tokio::time::timeout(Duration::from_secs(30), told)
                .await
                .expect("the peer heard within 30 s")
                .expect("the peer's task");
            let (header, master, ui) =
                got.unwrap_or_else(|e| panic!("crypto {crypto}: the announcement: {e}"));
            assert_eq!(header.endpoint, "Worker");
            assert_eq!(
                master,
                Addr::new("127.0.0.1", i32::from(front.addr().port()))
            );
            assert_eq!(ui, "http://127.0.0.1:8080");
            // Written in the stored release: its stream judged as Spark 3.0.3's.
            let g = super::super::parse_stream(&header.stream).unwrap();
            let r = Release::named("3.0.3").unwrap();
            let v = r.judge(&g);
            assert!(v.mismatched.is_empty(), "not in 3.0.3's forms: {v:?}");
            front.shutdown().await;
        }
    }

    #[tokio::test]
    async fn a_peer_of_another_secret_refuses_the_bootstrap_and_never_reads_master_changed() {
        use super::super::auth::ServerAuth;
        for crypto in [true, false] {
            let mut front_auth = ServerAuth::new("the-secret");
            front_auth.crypto = crypto;
            let mut peer_auth = ServerAuth::new("another-secret");
            peer_auth.crypto = crypto;
            peer_auth.timeout = Duration::from_secs(10);
            let slot = SparkPeerDial::default();
            let front = front_with(front_auth, &slot).await;
            let (peer, told) = spark_peer(peer_auth).await;
            assert!(slot.hand_over(peer, DialTarget::App("app-1".into())));
            let got = tokio::time::timeout(Duration::from_secs(30), told)
                .await
                .expect("the peer's bootstrap ended within 30 s")
                .expect("the peer's task");
            match got {
                Err(why) => assert!(
                    why.starts_with("bootstrap refused"),
                    "crypto {crypto}: {why}"
                ),
                Ok((h, m, _)) => panic!(
                    "crypto {crypto}: a peer of another secret read {} from {m}",
                    h.endpoint
                ),
            }
            front.shutdown().await;
        }
    }
}
