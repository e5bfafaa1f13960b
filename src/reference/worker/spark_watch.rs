//! The worker's Spark-wire port for its executors' `WorkerWatcher`s (feature `spark`).
//!
//! A Spark executor launched with `--worker-url spark://Worker@HOST:PORT` opens a Spark RPC
//! connection to that address and asks `endpoint-verifier` whether the endpoint `Worker`
//! exists (`RpcEndpointVerifier$CheckExistence("Worker")`). It keeps the connection; when it
//! closes, the executor exits ("Lost connection to worker rpc endpoint"), so executors do not
//! outlive their worker. This port answers that question `true` for `Worker` and `false` for
//! any other name, fails every other ask with Spark's "Could not find …" error, ignores one-way
//! messages, and closes a connection whose framing breaks or that sends more than it may.
//!
//! Each connection reads frames of at most [`MAX_FRAME`] bytes and answers at most
//! [`MAX_ASKS`] asks; at most [`MAX_CONNECTIONS`] are open at once.

use std::sync::Arc;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpListener;
use tokio::sync::{watch, Semaphore};

use crate::messages::Version;
use crate::spark::{bool_stream, parse_stream, Frame, FrameDecoder, RequestMessage};

/// The class of the verifier's question.
const CHECK_EXISTENCE: &str = "org.apache.spark.rpc.netty.RpcEndpointVerifier$CheckExistence";
/// The endpoint a worker's verifier says exists.
const WORKER_ENDPOINT: &str = "Worker";
/// The largest frame a watcher connection may send (a CheckExistence is under 200 bytes).
pub const MAX_FRAME: u64 = 64 * 1024;
/// Asks a connection may make (a WorkerWatcher makes one).
pub const MAX_ASKS: u32 = 64;
/// Watcher connections open at once (one per executor).
pub const MAX_CONNECTIONS: usize = 1024;

/// What a watcher connection's bytes call for.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Answers {
    /// Frames to write back, in order.
    pub(crate) frames: Vec<Vec<u8>>,
    /// Why the connection must close, if it must.
    pub(crate) close: Option<String>,
}

/// One watcher connection's state, without IO: fed the bytes read, it gives the frames to write.
pub(crate) struct Watch {
    decoder: FrameDecoder,
    version: Version,
    asks: u32,
}

impl Watch {
    pub(crate) fn new(version: Version) -> Watch {
        Watch {
            decoder: FrameDecoder::new(MAX_FRAME),
            version,
            asks: 0,
        }
    }

    /// Takes `bytes` read from the connection.
    pub(crate) fn read(&mut self, bytes: &[u8]) -> Answers {
        self.decoder.push(bytes);
        let mut out = Answers::default();
        while let Some(item) = self.decoder.next_item() {
            let frame = match item.frame {
                Ok(f) => f,
                Err(e) => {
                    out.close = Some(format!("a frame that does not read: {e}"));
                    return out;
                }
            };
            match frame {
                Frame::RpcRequest { request_id, body } => {
                    self.asks += 1;
                    if self.asks > MAX_ASKS {
                        out.close = Some(format!("more than {MAX_ASKS} asks"));
                        return out;
                    }
                    match self.answer(request_id, &body) {
                        Ok(frame) => out.frames.push(frame),
                        Err(why) => {
                            out.close = Some(why);
                            return out;
                        }
                    }
                }
                Frame::OneWay { .. } => {}
                other => {
                    out.close = Some(format!(
                        "a {} frame, which a watcher never sends",
                        other.kind().as_str()
                    ));
                    return out;
                }
            }
        }
        if self.decoder.is_lost() {
            out.close = Some("the framing was lost".to_string());
        }
        out
    }

    /// The response to ask `request_id` with body `body`.
    fn answer(&self, request_id: i64, body: &bytes::Bytes) -> Result<Vec<u8>, String> {
        let header = RequestMessage::parse(body)
            .ok_or_else(|| "an ask whose RequestMessage header does not read".to_string())?;
        let graph = parse_stream(&header.stream)
            .map_err(|e| format!("an ask whose Java stream does not read: {e}"))?;
        let root = graph.root_node();
        let frame =
            if header.endpoint == "endpoint-verifier" && root.class() == Some(CHECK_EXISTENCE) {
                let name = root
                    .field("name")
                    .and_then(|n| n.as_str())
                    .unwrap_or_default();
                let stream = bool_stream(name == WORKER_ENDPOINT, self.version)
                    .map_err(|e| format!("cannot write the answer: {e}"))?;
                Frame::RpcResponse {
                    request_id,
                    body: stream.into(),
                }
            } else {
                Frame::RpcFailure {
                    request_id,
                    error: format!(
                    "org.apache.spark.rpc.RpcEndpointNotFoundException: Cannot find endpoint: {}",
                    header.endpoint
                ),
                }
            };
        frame
            .encode()
            .map_err(|e| format!("cannot write the answer: {e}"))
    }
}

/// Serves watcher connections on `listener` until `stop` turns true; then every connection
/// closes, so the executors watching this worker exit. With `secret` (the worker's, which is
/// Spark's `spark.authenticate.secret` of its executors) every connection first passes Spark's
/// authentication bootstrap as Spark's worker takes it (SASL, or the auth engine with AES-CTR);
/// one that fails is logged at WARN with its address and closed before anything is answered.
/// A build without the `spark-proxy` feature cannot speak the bootstrap and refuses every
/// connection when a secret is set.
pub(crate) async fn serve(
    listener: TcpListener,
    version: Version,
    mut stop: watch::Receiver<bool>,
    secret: Option<String>,
) {
    let slots = Arc::new(Semaphore::new(MAX_CONNECTIONS));
    let mut conns = tokio::task::JoinSet::new();
    loop {
        let accepted = tokio::select! {
            a = listener.accept() => a,
            _ = stop.wait_for(|s| *s) => break,
        };
        let (stream, peer) = match accepted {
            Ok(a) => a,
            Err(e) => {
                tracing::warn!("Spark watcher port: accept failed: {e}");
                continue;
            }
        };
        let Ok(slot) = slots.clone().try_acquire_owned() else {
            tracing::warn!(
                "Spark watcher port: refusing {peer}: {MAX_CONNECTIONS} connections are open"
            );
            continue;
        };
        let secret = secret.clone();
        conns.spawn(async move {
            let _slot = slot;
            match secret {
                None => watch_connection(stream, peer, version).await,
                #[cfg(feature = "spark-proxy")]
                Some(secret) => {
                    let auth = crate::spark::auth::ServerAuth::new(secret);
                    match crate::spark::auth::server_handshake(stream, &auth).await {
                        Ok(s) => watch_connection(s, peer, version).await,
                        Err(e) => tracing::warn!(
                            "Spark watcher port: {peer} failed Spark's authentication: {e}"
                        ),
                    }
                }
                #[cfg(not(feature = "spark-proxy"))]
                Some(_) => {
                    drop(stream);
                    tracing::warn!(
                        "Spark watcher port: refusing {peer}: this build does not speak Spark's \
                         authentication (the spark-proxy feature)"
                    );
                }
            }
        });
        while conns.try_join_next().is_some() {}
    }
    conns.shutdown().await;
}

/// One watcher connection, after the bootstrap if there was one.
async fn watch_connection<S: AsyncRead + AsyncWrite + Unpin>(
    mut stream: S,
    peer: std::net::SocketAddr,
    version: Version,
) {
    let mut watch = Watch::new(version);
    let mut buf = vec![0u8; 8192];
    loop {
        let n = match stream.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(n) => n,
        };
        let answers = watch.read(&buf[..n]);
        for f in &answers.frames {
            if stream.write_all(f).await.is_err() || stream.flush().await.is_err() {
                return;
            }
        }
        if let Some(why) = answers.close {
            tracing::warn!("Spark watcher port: closing {peer}: {why}");
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spark::{check_existence_stream, reply_value, ReplyValue};

    fn ask(id: i64, endpoint: &str, stream: Vec<u8>) -> Vec<u8> {
        let header = RequestMessage {
            sender: None,
            receiver: Some(("127.0.0.1".into(), 7078)),
            endpoint: endpoint.into(),
            stream: stream.into(),
        };
        Frame::RpcRequest {
            request_id: id,
            body: header.encode().expect("header").into(),
        }
        .encode()
        .expect("frame")
    }

    fn answer_of(bytes: &[u8]) -> Frame {
        let mut d = FrameDecoder::default();
        d.push(bytes);
        d.next_item().expect("a frame").frame.expect("reads")
    }

    fn says(frame: &Frame) -> bool {
        let Frame::RpcResponse { body, .. } = frame else {
            panic!("a response, not {frame:?}");
        };
        let graph = parse_stream(body).expect("stream");
        match reply_value(graph.root_node()).expect("a reply") {
            ReplyValue::Bool(b) => b,
            other => panic!("a boolean, not {other:?}"),
        }
    }

    #[test]
    fn answers_the_watchers_question_true_for_worker_only_in_pieces_or_together() {
        let mut w = Watch::new(Version::V2);
        let worker = ask(
            7,
            "endpoint-verifier",
            check_existence_stream("Worker", Version::V2).expect("s"),
        );
        let master = ask(
            8,
            "endpoint-verifier",
            check_existence_stream("Master", Version::V2).expect("s"),
        );
        let first = w.read(&worker[..5]);
        assert_eq!(first, Answers::default());
        let mut rest = worker[5..].to_vec();
        rest.extend_from_slice(&master);
        let out = w.read(&rest);
        assert_eq!(out.close, None);
        assert_eq!(out.frames.len(), 2);
        let (a, b) = (answer_of(&out.frames[0]), answer_of(&out.frames[1]));
        assert!(matches!(a, Frame::RpcResponse { request_id: 7, .. }));
        assert!(says(&a));
        assert!(matches!(b, Frame::RpcResponse { request_id: 8, .. }));
        assert!(!says(&b));
    }

    #[test]
    fn fails_asks_to_other_endpoints_and_ignores_one_way_messages() {
        let mut w = Watch::new(Version::V2);
        let other = ask(
            3,
            "Worker",
            check_existence_stream("Worker", Version::V2).expect("s"),
        );
        let out = w.read(&other);
        assert_eq!(out.close, None);
        let Frame::RpcFailure {
            request_id: 3,
            error,
        } = answer_of(&out.frames[0])
        else {
            panic!("a failure");
        };
        assert!(error.contains("Cannot find endpoint: Worker"), "{error}");
        let header = RequestMessage {
            sender: None,
            receiver: None,
            endpoint: "Worker".into(),
            stream: check_existence_stream("x", Version::V2).expect("s").into(),
        };
        let one_way = Frame::OneWay {
            body: header.encode().expect("h").into(),
        }
        .encode()
        .expect("f");
        assert_eq!(w.read(&one_way), Answers::default());
    }

    #[test]
    fn closes_on_broken_framing_unreadable_asks_oversized_frames_and_too_many_asks() {
        let mut broken = Watch::new(Version::V2);
        assert!(broken.read(&[0, 0, 0, 0, 0, 0, 0, 3, 9]).close.is_some());

        let mut unreadable = Watch::new(Version::V2);
        let junk = Frame::RpcRequest {
            request_id: 1,
            body: vec![7, 7, 7].into(),
        }
        .encode()
        .expect("f");
        assert!(unreadable.read(&junk).close.is_some());

        let mut big = Watch::new(Version::V2);
        let mut huge = (MAX_FRAME + 100).to_be_bytes().to_vec();
        huge.push(9);
        huge.extend_from_slice(&[0u8; 64]);
        let out = big.read(&huge);
        assert!(out.frames.is_empty());
        assert!(out.close.expect("closes").contains("does not read"));

        let mut chatty = Watch::new(Version::V2);
        let q = ask(
            1,
            "endpoint-verifier",
            check_existence_stream("Worker", Version::V2).expect("s"),
        );
        let many: Vec<u8> = std::iter::repeat_n(q, MAX_ASKS as usize + 1)
            .flatten()
            .collect();
        let out = chatty.read(&many);
        assert_eq!(out.frames.len(), MAX_ASKS as usize);
        assert!(out.close.expect("closes").contains("asks"));
    }

    /// A watcher port with `secret`, serving until the test ends.
    #[cfg(feature = "spark-proxy")]
    async fn secured_port(secret: &str) -> std::net::SocketAddr {
        let l = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = l.local_addr().expect("addr");
        let (tx, rx) = watch::channel(false);
        let secret = secret.to_string();
        tokio::spawn(async move {
            let _keep = tx;
            serve(l, Version::V2, rx, Some(secret)).await;
        });
        addr
    }

    /// Asks `CheckExistence("Worker")` over `s` and reads every frame until one answers it or
    /// the connection ends.
    #[cfg(feature = "spark-proxy")]
    async fn ask_worker<S: AsyncRead + AsyncWrite + Unpin>(s: &mut S) -> Option<Frame> {
        let q = ask(
            9,
            "endpoint-verifier",
            check_existence_stream("Worker", Version::V2).expect("s"),
        );
        s.write_all(&q).await.ok()?;
        s.flush().await.ok()?;
        let mut d = FrameDecoder::default();
        let mut buf = [0u8; 4096];
        loop {
            if let Some(item) = d.next_item() {
                return item.frame.ok();
            }
            let n = tokio::time::timeout(std::time::Duration::from_secs(10), s.read(&mut buf))
                .await
                .expect("an answer or a close in time")
                .ok()?;
            if n == 0 {
                return None;
            }
            d.push(&buf[..n]);
        }
    }

    #[cfg(feature = "spark-proxy")]
    #[tokio::test]
    async fn with_a_secret_watchers_authenticate_as_spark_s_worker_demands() {
        use crate::spark::auth::{client_handshake, ClientAuth};
        let addr = secured_port("worker-s3cret").await;
        for auth in [
            ClientAuth::sasl("worker-s3cret"),
            ClientAuth::crypto("worker-s3cret"),
        ] {
            let tcp = tokio::net::TcpStream::connect(addr).await.expect("connect");
            let mut s = client_handshake(tcp, &auth).await.expect("authenticates");
            let answer = ask_worker(&mut s).await.expect("an answer");
            assert!(says(&answer), "the Worker endpoint exists: {answer:?}");
        }
        // Without the bootstrap the question is refused, never answered.
        let mut raw = tokio::net::TcpStream::connect(addr).await.expect("connect");
        let answer = ask_worker(&mut raw).await;
        assert!(
            matches!(answer, None | Some(Frame::RpcFailure { .. })),
            "{answer:?}"
        );
        // With another secret the bootstrap fails.
        let tcp = tokio::net::TcpStream::connect(addr).await.expect("connect");
        let wrong = ClientAuth {
            sasl_fallback: false,
            ..ClientAuth::crypto("another")
        };
        assert!(client_handshake(tcp, &wrong).await.is_err());
    }
}
