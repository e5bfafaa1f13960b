//! The faults of Spark's own authentication on its wire (SPEC §15.6): the proxy holds the
//! endpoint's secret, authenticates to the endpoint itself (the auth engine, SASL when the
//! endpoint does not take it), and stands in for the endpoint's side of the suite's bootstrap
//! as a Spark server broken in one way. What the suite sends after its bootstrap reaches the
//! endpoint through the proxy's own session, and what the endpoint sends back reaches the suite
//! through the suite's.
//!
//! For a suite that authenticates with the secret, the proxy is a correct server (the auth engine
//! with AES-CTR, SASL with quality of protection `auth`), so that the cases that check the
//! endpoint's state with a second, authenticated peer still can.

use sparkwire::spark::auth::engine::{respond, AUTH_TAG};
use sparkwire::spark::auth::sasl::SASL_TAG;
use sparkwire::spark::auth::{
    client_handshake, ClientAuth, CtrSession, DigestServer, EngineClient, EngineVersion,
    SaslMessage, SASL_USER,
};
use sparkwire::spark::{Frame, FrameDecoder};
use sparkwire::wire::handshake::Secret;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use super::behaviour::Behaviour;

/// What a [`SparkAuthFault`] breaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum SparkBreak {
    /// Any secret is taken: a proof that does not verify is answered as if it did.
    AnySecret,
    /// A first request that is not of the bootstrap is acted on (CVE-2020-9480).
    RpcBeforeAuth,
    /// SASL is taken although the endpoint's settings refuse it (`saslFallback=false`).
    SaslTaken,
    /// After the auth engine, a peer that writes in the clear is read in the clear (and answered
    /// in the clear).
    Cleartext,
}

pub(super) struct SparkAuthFault(pub(super) SparkBreak);

impl Behaviour for SparkAuthFault {
    fn auth(&self) -> Option<super::auth::AuthBreak> {
        Some(super::auth::AuthBreak::Spark(self.0))
    }
}

/// What Spark's server answers a first request that is not a `SaslMessage`.
const NOT_SASL: &str = "java.lang.IllegalStateException: Expected SaslMessage, received something \
                        else (maybe your client does not have SASL enabled?)";
/// What it answers a failed bootstrap.
const FAILED: &str = "java.lang.IllegalArgumentException: Authentication failed.";

/// Largest frame the proxy reads during the bootstrap.
const MAX_BOOTSTRAP_FRAME: u64 = 64 * 1024;

/// The session with the suite after its bootstrap.
enum Session {
    Plain,
    Ctr(Box<CtrSession>),
}

/// One connection of the suite, through the fault `b`.
pub(super) async fn spark_auth_fault(
    b: SparkBreak,
    secret: &Secret,
    mut suite: TcpStream,
    endpoint: TcpStream,
) {
    let Ok(secret) = std::str::from_utf8(secret.expose()).map(str::to_string) else {
        return;
    };
    let mut client = ClientAuth::crypto(secret.clone());
    client.sasl_fallback = true;
    let Ok(mut up) = client_handshake(endpoint, &client).await else {
        return;
    };
    let mut sasl: Option<DigestServer> = None;
    let session = loop {
        let Some((frame, raw)) = next_frame(&mut suite).await else {
            return;
        };
        let (id, body) = match frame {
            Frame::RpcRequest { request_id, body } => (request_id, body),
            _ if b == SparkBreak::RpcBeforeAuth => {
                // Acted on: the frame and all after it go to the endpoint as they are.
                if up.write_all(&raw).await.is_err() {
                    return;
                }
                break Session::Plain;
            }
            _ => return,
        };
        let tag = body.first().copied();
        if sasl.is_none() && tag == Some(AUTH_TAG) {
            let answer = sparkwire::spark::auth::AuthMessage::decode(&body)
                .and_then(|m| respond(&secret, &m, EngineVersion::V1));
            match answer {
                Ok((response, keys)) => {
                    let Ok(ctr) = CtrSession::server(&keys) else {
                        return;
                    };
                    if write(&mut suite, response_frame(id, response.encode())).await {
                        return;
                    }
                    break Session::Ctr(Box::new(ctr));
                }
                Err(_) if b == SparkBreak::AnySecret => {
                    // Taken: an AuthMessage of the proxy's own, then the clear.
                    let Ok(own) = EngineClient::new(SASL_USER, &secret, EngineVersion::V1) else {
                        return;
                    };
                    if write(&mut suite, response_frame(id, own.challenge().encode())).await {
                        return;
                    }
                    break Session::Plain;
                }
                Err(_) => {
                    let _ = write(&mut suite, failure_frame(id, FAILED)).await;
                    return;
                }
            }
        }
        if tag != Some(SASL_TAG) {
            if b == SparkBreak::RpcBeforeAuth && sasl.is_none() {
                if up.write_all(&raw).await.is_err() {
                    return;
                }
                break Session::Plain;
            }
            let _ = write(&mut suite, failure_frame(id, NOT_SASL)).await;
            return;
        }
        // SASL: taken by every one of these faults (a correct endpoint with
        // saslFallback=false refuses it; `SaslTaken` is that broken endpoint).
        let Ok(m) = SaslMessage::decode(&body) else {
            let _ = write(&mut suite, failure_frame(id, NOT_SASL)).await;
            return;
        };
        let server = sasl.get_or_insert_with(|| DigestServer::new(&secret));
        match server.step(&m.token) {
            Ok(token) => {
                if write(&mut suite, response_frame(id, token)).await {
                    return;
                }
                if server.is_complete() {
                    if server.take_layer().is_some() {
                        // SASL's own encryption is not spoken by this proxy.
                        return;
                    }
                    break Session::Plain;
                }
            }
            Err(_) if b == SparkBreak::AnySecret => {
                let token = format!("rspauth={}", "0".repeat(32)).into_bytes();
                if write(&mut suite, response_frame(id, token)).await {
                    return;
                }
                break Session::Plain;
            }
            Err(e) => {
                let text = format!("javax.security.sasl.SaslException: {e}");
                let _ = write(&mut suite, failure_frame(id, &text)).await;
                return;
            }
        }
    };
    relay(b, session, suite, up, Vec::new()).await;
}

/// Relays the suite's bytes (through its session) to the endpoint's session and back.
async fn relay(
    b: SparkBreak,
    session: Session,
    suite: TcpStream,
    up: sparkwire::spark::auth::AuthStream<TcpStream>,
    mut left: Vec<u8>,
) {
    let (mut suite_read, mut suite_write) = suite.into_split();
    let mut ctr = match session {
        Session::Plain => None,
        Session::Ctr(c) => Some(c),
    };
    if let (Some(_), SparkBreak::Cleartext) = (&ctr, b) {
        // The broken endpoint looks at the first bytes after the bootstrap: a frame in the clear
        // downgrades the session to none.
        while left.len() < 9 {
            let mut buf = [0u8; 4096];
            match suite_read.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(n) => left.extend_from_slice(&buf[..n]),
            }
        }
        if looks_like_clear_frame(&left) {
            ctr = None;
        }
    }
    let (mut recv, mut send) = match ctr {
        Some(c) => {
            let CtrSession { send, recv } = *c;
            (Some(recv), Some(send))
        }
        None => (None, None),
    };
    if let Some(r) = &mut recv {
        r.apply(&mut left);
    }
    let (mut up_read, mut up_write) = tokio::io::split(up);
    let to_endpoint = async move {
        if up_write.write_all(&left).await.is_err() {
            return;
        }
        let mut buf = vec![0u8; 16 * 1024];
        loop {
            match suite_read.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    let chunk = &mut buf[..n];
                    if let Some(r) = &mut recv {
                        r.apply(chunk);
                    }
                    if up_write.write_all(chunk).await.is_err() {
                        break;
                    }
                }
            }
        }
        let _ = up_write.shutdown().await;
    };
    let to_suite = async move {
        let mut buf = vec![0u8; 16 * 1024];
        loop {
            match up_read.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    let chunk = &mut buf[..n];
                    if let Some(s) = &mut send {
                        s.apply(chunk);
                    }
                    if suite_write.write_all(chunk).await.is_err() {
                        break;
                    }
                }
            }
        }
        let _ = suite_write.shutdown().await;
    };
    tokio::join!(to_endpoint, to_suite);
}

/// Reads one whole frame from the suite, exactly its bytes (nothing after it): the frame and
/// its bytes; `None` at the end of the stream or for bytes that are no frame.
async fn next_frame(suite: &mut TcpStream) -> Option<(Frame, Vec<u8>)> {
    let mut raw = vec![0u8; 8];
    suite.read_exact(&mut raw).await.ok()?;
    let len = u64::from_be_bytes(raw[..8].try_into().ok()?);
    if !(9..=MAX_BOOTSTRAP_FRAME).contains(&len) {
        return None;
    }
    raw.resize(len as usize, 0);
    suite.read_exact(&mut raw[8..]).await.ok()?;
    let mut d = FrameDecoder::new(MAX_BOOTSTRAP_FRAME);
    d.push(&raw);
    let frame = d.next_item()?.frame.ok()?;
    Some((frame, raw))
}

/// Writes `bytes` to the suite; `true` when the write failed.
async fn write(suite: &mut TcpStream, bytes: Option<Vec<u8>>) -> bool {
    match bytes {
        Some(b) => suite.write_all(&b).await.is_err(),
        None => true,
    }
}

fn response_frame(request_id: i64, body: Vec<u8>) -> Option<Vec<u8>> {
    Frame::RpcResponse {
        request_id,
        body: body.into(),
    }
    .encode()
    .ok()
}

fn failure_frame(request_id: i64, error: &str) -> Option<Vec<u8>> {
    Frame::RpcFailure {
        request_id,
        error: error.into(),
    }
    .encode()
    .ok()
}

/// Whether `bytes` start as a Spark frame in the clear: a length Spark writes (at least the
/// header, at most 64 MiB) and a request's or one-way message's type byte.
fn looks_like_clear_frame(bytes: &[u8]) -> bool {
    let Some(head) = bytes.get(..8).and_then(|h| <[u8; 8]>::try_from(h).ok()) else {
        return false;
    };
    let len = u64::from_be_bytes(head);
    (9..=64 * 1024 * 1024).contains(&len) && matches!(bytes.get(8), Some(3 | 9))
}
