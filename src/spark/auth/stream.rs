//! The bootstraps run over a tokio stream, and the stream that carries Spark's frames on after
//! them (encrypted with AES-CTR or AES-GCM when the auth engine ran, sealed by SASL's
//! confidentiality layer when SASL agreed on `auth-conf`, as is when SASL agreed on `auth`).
//!
//! The bootstrap reads exactly its own frames (each length first, then the rest), so nothing the
//! peer sends after it is read here: the [`AuthStream`] starts at the first byte after it.

use std::io;
use std::pin::Pin;
use std::task::{ready, Context, Poll};

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, ReadBuf};

use super::cipher::CtrSession;
use super::engine::{self, AuthMessage, EngineClient, AUTH_TAG};
use super::gcm::GcmSession;
use super::legacy::{self, ClientChallenge, LegacyClient, ServerResponse, CHALLENGE_TAG};
use super::sasl::{DigestClient, DigestServer, SaslMessage};
use super::sasl_conf::SaslPrivacy;
use super::{random_bytes, AuthError, ClientAuth, Negotiated, ServerAuth, TransportCipher};
use crate::spark::{Frame, FrameDecoder};

/// Largest frame taken during a bootstrap: its messages are a few hundred bytes.
pub const MAX_AUTH_FRAME: u64 = 64 * 1024;

/// Requests a server takes in one bootstrap (an `AuthMessage` or `ClientChallenge` refused,
/// then SASL's two).
const MAX_ROUNDS: usize = 4;

/// Plaintext taken per write when encrypting.
const CHUNK: usize = 64 * 1024;

/// What Spark's server answers a failed bootstrap with (`AuthRpcHandler`).
const FAILED: &str = "java.lang.IllegalArgumentException: Authentication failed.";

/// What Spark's SASL server answers a first request that is not a `SaslMessage` with (an RPC
/// sent without a bootstrap, say): not [`FAILED`], which says the auth engine is spoken.
const NOT_SASL: &str = "java.lang.IllegalStateException: Expected SaslMessage, received something \
                        else (maybe your client does not have SASL enabled?)";

/// The cipher of a session.
#[derive(Debug)]
enum Session {
    Plain,
    Ctr(CtrSession),
    Gcm {
        gcm: GcmSession,
        /// Opened plaintext not yet read, from `at`.
        plain: Vec<u8>,
        at: usize,
    },
    Sasl {
        layer: SaslPrivacy,
        /// Bytes read and not yet a whole chunk.
        raw: Vec<u8>,
        /// Opened plaintext not yet read, from `at`.
        plain: Vec<u8>,
        at: usize,
    },
}

impl Session {
    fn sasl(layer: Option<SaslPrivacy>) -> (Session, Negotiated) {
        match layer {
            None => (Session::Plain, Negotiated::Sasl),
            Some(layer) => {
                let cipher = layer.cipher();
                (
                    Session::Sasl {
                        layer,
                        raw: Vec::new(),
                        plain: Vec::new(),
                        at: 0,
                    },
                    Negotiated::SaslEncrypted(cipher),
                )
            }
        }
    }
}

impl Session {
    /// The transport cipher the auth engine's session keys run through.
    fn engine(
        keys: &super::SessionKeys,
        cipher: TransportCipher,
        client: bool,
    ) -> Result<Self, AuthError> {
        Ok(match cipher {
            TransportCipher::Ctr if client => Session::Ctr(CtrSession::client(keys)?),
            TransportCipher::Ctr => Session::Ctr(CtrSession::server(keys)?),
            TransportCipher::Gcm => Session::Gcm {
                gcm: GcmSession::new(&keys.key)?,
                plain: Vec::new(),
                at: 0,
            },
        })
    }

    fn negotiated(cipher: TransportCipher, version: super::EngineVersion) -> Negotiated {
        match cipher {
            TransportCipher::Ctr => Negotiated::Engine(version),
            TransportCipher::Gcm => Negotiated::EngineGcm(version),
        }
    }
}

/// A stream after a bootstrap: reads and writes Spark's frames as they are, through the
/// session's AES-CTR or AES-GCM when the auth engine ran.
#[derive(Debug)]
pub struct AuthStream<S> {
    inner: S,
    session: Session,
    pending: Vec<u8>,
    written: usize,
    negotiated: Negotiated,
}

impl<S> AuthStream<S> {
    fn new(inner: S, session: Session, negotiated: Negotiated) -> Self {
        AuthStream {
            inner,
            session,
            pending: Vec::new(),
            written: 0,
            negotiated,
        }
    }

    /// What the bootstrap agreed on.
    pub fn negotiated(&self) -> Negotiated {
        self.negotiated
    }

    /// Whether the bytes on the wire are encrypted.
    pub fn is_encrypted(&self) -> bool {
        !matches!(self.session, Session::Plain)
    }

    /// The stream beneath.
    pub fn get_ref(&self) -> &S {
        &self.inner
    }
}

impl<S: AsyncWrite + Unpin> AuthStream<S> {
    fn drain(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        while self.written < self.pending.len() {
            let n =
                ready!(Pin::new(&mut self.inner).poll_write(cx, &self.pending[self.written..]))?;
            if n == 0 {
                return Poll::Ready(Err(io::ErrorKind::WriteZero.into()));
            }
            self.written += n;
        }
        self.pending.clear();
        self.written = 0;
        Poll::Ready(Ok(()))
    }
}

fn invalid(e: AuthError) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, e.to_string())
}

impl<S: AsyncRead + Unpin> AsyncRead for AuthStream<S> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        match &mut this.session {
            Session::Plain => Pin::new(&mut this.inner).poll_read(cx, buf),
            Session::Ctr(c) => {
                let before = buf.filled().len();
                ready!(Pin::new(&mut this.inner).poll_read(cx, buf))?;
                c.recv.apply(&mut buf.filled_mut()[before..]);
                Poll::Ready(Ok(()))
            }
            Session::Gcm { gcm, plain, at } => loop {
                if *at < plain.len() {
                    let n = (plain.len() - *at).min(buf.remaining());
                    buf.put_slice(&plain[*at..*at + n]);
                    *at += n;
                    if *at == plain.len() {
                        plain.clear();
                        *at = 0;
                    }
                    return Poll::Ready(Ok(()));
                }
                let mut raw = [0u8; 16 * 1024];
                let mut rb = ReadBuf::new(&mut raw);
                ready!(Pin::new(&mut this.inner).poll_read(cx, &mut rb))?;
                if rb.filled().is_empty() {
                    if !gcm.recv.at_boundary() {
                        return Poll::Ready(Err(io::Error::new(
                            io::ErrorKind::UnexpectedEof,
                            "the connection closed inside an AES-GCM message",
                        )));
                    }
                    return Poll::Ready(Ok(()));
                }
                gcm.recv.push(rb.filled(), plain).map_err(invalid)?;
            },
            Session::Sasl {
                layer,
                raw,
                plain,
                at,
            } => loop {
                if *at < plain.len() {
                    let n = (plain.len() - *at).min(buf.remaining());
                    buf.put_slice(&plain[*at..*at + n]);
                    *at += n;
                    if *at == plain.len() {
                        plain.clear();
                        *at = 0;
                    }
                    return Poll::Ready(Ok(()));
                }
                if let Some((opened, used)) = layer.open_chunk(raw).map_err(invalid)? {
                    raw.drain(..used);
                    *plain = opened;
                    continue;
                }
                let mut more = [0u8; 16 * 1024];
                let mut rb = ReadBuf::new(&mut more);
                ready!(Pin::new(&mut this.inner).poll_read(cx, &mut rb))?;
                if rb.filled().is_empty() {
                    if !raw.is_empty() {
                        return Poll::Ready(Err(io::Error::new(
                            io::ErrorKind::UnexpectedEof,
                            "the connection closed inside a SASL-encrypted chunk",
                        )));
                    }
                    return Poll::Ready(Ok(()));
                }
                raw.extend_from_slice(rb.filled());
            },
        }
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for AuthStream<S> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        data: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        if matches!(this.session, Session::Plain) {
            return Pin::new(&mut this.inner).poll_write(cx, data);
        }
        // Bytes once encrypted have moved the keystream on (or are a sealed message): they are
        // written before any more.
        ready!(this.drain(cx))?;
        if data.is_empty() {
            return Poll::Ready(Ok(0));
        }
        let n = data.len().min(CHUNK);
        match &mut this.session {
            Session::Ctr(c) => {
                this.pending.extend_from_slice(&data[..n]);
                c.send.apply(&mut this.pending);
            }
            Session::Gcm { gcm, .. } => {
                this.pending = gcm.send.seal(&data[..n]).map_err(invalid)?;
            }
            Session::Sasl { layer, .. } => {
                this.pending = layer.seal_chunk(&data[..n]);
            }
            Session::Plain => {}
        }
        if let Poll::Ready(Err(e)) = this.drain(cx) {
            return Poll::Ready(Err(e));
        }
        Poll::Ready(Ok(n))
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        ready!(this.drain(cx))?;
        Pin::new(&mut this.inner).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        ready!(this.drain(cx))?;
        Pin::new(&mut this.inner).poll_shutdown(cx)
    }
}

async fn read_frame<S: AsyncRead + Unpin>(s: &mut S) -> Result<Frame, AuthError> {
    let mut len = [0u8; 8];
    s.read_exact(&mut len).await?;
    let n = u64::from_be_bytes(len);
    if !(9..=MAX_AUTH_FRAME).contains(&n) {
        return Err(AuthError::Malformed(format!(
            "a frame of {n} bytes during the bootstrap (9 to {MAX_AUTH_FRAME})"
        )));
    }
    let mut rest = vec![0u8; (n - 8) as usize];
    s.read_exact(&mut rest).await?;
    let mut d = FrameDecoder::new(MAX_AUTH_FRAME);
    d.push(&len);
    d.push(&rest);
    match d.next_item().map(|i| i.frame) {
        Some(Ok(f)) => Ok(f),
        Some(Err(e)) => Err(AuthError::Malformed(e.to_string())),
        None => Err(AuthError::Malformed("an incomplete frame".into())),
    }
}

async fn write_frame<S: AsyncWrite + Unpin>(s: &mut S, f: Frame) -> Result<(), AuthError> {
    let b = f
        .encode()
        .map_err(|e| AuthError::Malformed(e.to_string()))?;
    s.write_all(&b).await?;
    s.flush().await?;
    Ok(())
}

/// One RPC of a client's bootstrap: the response's body, or the failure's text as
/// [`AuthError::Refused`].
async fn rpc<S: AsyncRead + AsyncWrite + Unpin>(
    s: &mut S,
    body: Vec<u8>,
) -> Result<Vec<u8>, AuthError> {
    let id = i64::from_be_bytes(random_bytes::<8>()?) & i64::MAX;
    write_frame(
        s,
        Frame::RpcRequest {
            request_id: id,
            body: body.into(),
        },
    )
    .await?;
    match read_frame(s).await? {
        Frame::RpcResponse { request_id, body } if request_id == id => Ok(body.to_vec()),
        Frame::RpcFailure { request_id, error } if request_id == id => {
            Err(AuthError::Refused(error))
        }
        other => Err(AuthError::Protocol(format!(
            "a {} where the answer to request {id} was due",
            other.kind()
        ))),
    }
}

/// Runs the client's bootstrap Spark's `AuthClientBootstrap` runs with `auth`'s settings on a
/// new connection, before anything else is sent.
pub async fn client_handshake<S: AsyncRead + AsyncWrite + Unpin>(
    mut stream: S,
    auth: &ClientAuth,
) -> Result<AuthStream<S>, AuthError> {
    let t = auth.timeout;
    let (session, negotiated) = tokio::time::timeout(t, client_inner(&mut stream, auth))
        .await
        .map_err(|_| AuthError::Timeout(t))??;
    Ok(AuthStream::new(stream, session, negotiated))
}

async fn client_inner<S: AsyncRead + AsyncWrite + Unpin>(
    s: &mut S,
    auth: &ClientAuth,
) -> Result<(Session, Negotiated), AuthError> {
    if auth.crypto && auth.legacy {
        if auth.cipher != TransportCipher::Ctr {
            return Err(AuthError::Unsupported(format!(
                "{} after the original auth protocol (it runs AES/CTR/NoPadding only)",
                auth.cipher.name()
            )));
        }
        let c = LegacyClient::new(&auth.app_id, &auth.secret)?;
        match rpc(s, c.challenge().encode()).await {
            Ok(body) => {
                let keys = c.finish(&ServerResponse::decode(&body)?)?;
                tracing::warn!(
                    "spark auth: this session runs the original auth protocol \
                     (sparkwire.legacyAuthEngine=true): {}",
                    legacy::WARNING
                );
                return Ok((Session::Ctr(CtrSession::client(&keys)?), Negotiated::Legacy));
            }
            Err(AuthError::Refused(_)) if auth.sasl_fallback => {}
            Err(e) => return Err(e),
        }
    } else if auth.crypto {
        let c = EngineClient::new(&auth.app_id, &auth.secret, auth.version)?;
        match rpc(s, c.challenge().encode()).await {
            Ok(body) => {
                let keys = c.finish(&AuthMessage::decode(&body)?)?;
                return Ok((
                    Session::engine(&keys, auth.cipher, true)?,
                    Session::negotiated(auth.cipher, auth.version),
                ));
            }
            // Spark's client retries SASL on the same connection when the server fails the
            // challenge (a server without crypto), if its settings allow.
            Err(AuthError::Refused(_)) if auth.sasl_fallback => {}
            Err(e) => return Err(e),
        }
    }
    let mut c = if auth.sasl_encryption {
        DigestClient::encrypting(&auth.app_id, &auth.secret)
    } else {
        DigestClient::new(&auth.app_id, &auth.secret)
    };
    let mut token = c.first_token();
    for _ in 0..MAX_ROUNDS {
        let m = SaslMessage {
            app_id: auth.app_id.clone(),
            token,
        };
        let answer = rpc(s, m.encode()).await?;
        match c.step(&answer)? {
            Some(next) => token = next,
            None => return Ok(Session::sasl(c.take_layer())),
        }
    }
    Err(AuthError::Protocol(format!(
        "SASL did not complete in {MAX_ROUNDS} round trips"
    )))
}

/// Runs the server's side of Spark's bootstraps on a connection just accepted: the peer's
/// requests are read and answered until it has authenticated (`Ok`) or failed (`Err`, after an
/// `RpcFailure` where Spark sends one). Nothing else the peer sends is taken: a frame other than
/// a bootstrap request fails it.
pub async fn server_handshake<S: AsyncRead + AsyncWrite + Unpin>(
    mut stream: S,
    auth: &ServerAuth,
) -> Result<AuthStream<S>, AuthError> {
    let t = auth.timeout;
    let (session, negotiated) = tokio::time::timeout(t, server_inner(&mut stream, auth))
        .await
        .map_err(|_| AuthError::Timeout(t))??;
    Ok(AuthStream::new(stream, session, negotiated))
}

async fn fail<S: AsyncWrite + Unpin>(
    s: &mut S,
    request_id: i64,
    error: &str,
    why: AuthError,
) -> AuthError {
    let _ = write_frame(
        s,
        Frame::RpcFailure {
            request_id,
            error: error.into(),
        },
    )
    .await;
    why
}

/// Fails request `request_id` as Spark's server fails a request that is not a `SaslMessage`,
/// leaving the connection open (a client with SASL fallback goes on with SASL).
async fn not_sasl<S: AsyncWrite + Unpin>(s: &mut S, request_id: i64) {
    let _ = write_frame(
        s,
        Frame::RpcFailure {
            request_id,
            error: NOT_SASL.into(),
        },
    )
    .await;
}

/// A `ClientChallenge` of the original protocol (tag `0xFA`) as a server's first request: the
/// session when the protocol is taken (`sparkwire.legacyAuthEngine=true` with crypto on);
/// `None` after an `RpcFailure` that leaves the connection open for SASL (the protocol not
/// taken, SASL taken, as Spark 3.1.3's server does, or crypto off, as Spark 3.0's does); an
/// error otherwise.
async fn legacy_step<S: AsyncRead + AsyncWrite + Unpin>(
    s: &mut S,
    id: i64,
    body: &[u8],
    auth: &ServerAuth,
) -> Result<Option<(Session, Negotiated)>, AuthError> {
    if auth.crypto && auth.legacy {
        let m = match ClientChallenge::decode(body) {
            Ok(m) => m,
            Err(e) => return Err(fail(s, id, FAILED, e).await),
        };
        return match legacy::respond(&auth.secret, &m) {
            Ok((response, keys)) => {
                write_frame(
                    s,
                    Frame::RpcResponse {
                        request_id: id,
                        body: response.encode().into(),
                    },
                )
                .await?;
                tracing::warn!(
                    "spark auth: a peer authenticated with the original auth protocol (allowed \
                     by sparkwire.legacyAuthEngine=true): {}",
                    legacy::WARNING
                );
                Ok(Some((
                    Session::Ctr(CtrSession::server(&keys)?),
                    Negotiated::Legacy,
                )))
            }
            Err(e) => Err(fail(s, id, FAILED, e).await),
        };
    }
    if !auth.crypto {
        // Spark's SASL-only server: not a SaslMessage.
        not_sasl(s, id).await;
        return Ok(None);
    }
    tracing::warn!(
        "spark auth: refused a ClientChallenge of the original auth protocol (taken only \
         with sparkwire.legacyAuthEngine=true): {}",
        legacy::WARNING
    );
    if auth.sasl_fallback {
        not_sasl(s, id).await;
        return Ok(None);
    }
    Err(fail(
        s,
        id,
        "java.lang.IllegalArgumentException: Unknown challenge message.",
        AuthError::Unsupported(
            "the original auth protocol of Spark 2.2 to 3.1.2 (CVE-2021-38296), without \
             sparkwire.legacyAuthEngine=true"
                .into(),
        ),
    )
    .await)
}

async fn server_inner<S: AsyncRead + AsyncWrite + Unpin>(
    s: &mut S,
    auth: &ServerAuth,
) -> Result<(Session, Negotiated), AuthError> {
    let mut sasl: Option<DigestServer> = None;
    for _ in 0..MAX_ROUNDS {
        let (id, body) = match read_frame(s).await? {
            Frame::RpcRequest { request_id, body } => (request_id, body),
            other => {
                return Err(AuthError::Protocol(format!(
                    "a {} before authentication",
                    other.kind()
                )))
            }
        };
        if sasl.is_none() && body.first() == Some(&AUTH_TAG) {
            if !auth.crypto {
                // Spark's SASL-only server fails the request and keeps the connection: a client
                // with fallback goes on with SASL.
                not_sasl(s, id).await;
                continue;
            }
            let m = match AuthMessage::decode(&body) {
                Ok(m) => m,
                Err(e) => return Err(fail(s, id, FAILED, e).await),
            };
            return match engine::respond(&auth.secret, &m, auth.version) {
                Ok((response, keys)) => {
                    write_frame(
                        s,
                        Frame::RpcResponse {
                            request_id: id,
                            body: response.encode().into(),
                        },
                    )
                    .await?;
                    Ok((
                        Session::engine(&keys, auth.cipher, false)?,
                        Session::negotiated(auth.cipher, auth.version),
                    ))
                }
                Err(e) => Err(fail(s, id, FAILED, e).await),
            };
        }
        if sasl.is_none() && body.first() == Some(&CHALLENGE_TAG) {
            match legacy_step(s, id, &body, auth).await? {
                Some(done) => return Ok(done),
                // Refused as Spark 3.1.3's server refuses it: the client may go on with SASL.
                None => continue,
            }
        }
        if !auth.takes_sasl() {
            let why =
                AuthError::Unsupported("SASL, with spark.network.crypto.saslFallback=false".into());
            return Err(fail(
                s,
                id,
                "java.lang.IllegalArgumentException: Unknown challenge message.",
                why,
            )
            .await);
        }
        let m = match SaslMessage::decode(&body) {
            Ok(m) => m,
            Err(e) => return Err(fail(s, id, NOT_SASL, e).await),
        };
        let server = sasl.get_or_insert_with(|| {
            if auth.sasl_always_encrypt {
                DigestServer::always_encrypting(&auth.secret)
            } else {
                DigestServer::new(&auth.secret)
            }
        });
        match server.step(&m.token) {
            Ok(token) => {
                write_frame(
                    s,
                    Frame::RpcResponse {
                        request_id: id,
                        body: token.into(),
                    },
                )
                .await?
            }
            Err(e) => {
                let text = format!("javax.security.sasl.SaslException: {e}");
                return Err(fail(s, id, &text, e).await);
            }
        }
        if server.is_complete() {
            return Ok(Session::sasl(server.take_layer()));
        }
    }
    Err(AuthError::Protocol(format!(
        "the bootstrap took more than {MAX_ROUNDS} requests"
    )))
}
