//! A transparent TCP proxy for Spark's RPC: every byte is forwarded unchanged and at once, and a
//! copy is decoded ([`Tracer`]), validated ([`Validator`]) and written as a trace.
//!
//! Forwarding never waits for decoding: each chunk read is handed to one tracing task before it
//! is written on, so the trace keeps the order the proxy saw. When a connection's bytes wait
//! undecoded beyond [`MAX_BACKLOG`], tracing of that connection stops (it is reported) while
//! forwarding goes on.

use std::io::Write;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, ReadBuf, ReadHalf, WriteHalf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;

use super::release::Release;
use super::tracer::{Summary, Tracer};
use crate::validate::trace::{TraceFormat, TraceWriter};
use crate::validate::{Config, ConnId, Event, Validator, Violation};

/// Bytes of one connection read but not yet decoded beyond which its tracing stops.
pub const MAX_BACKLOG: usize = 32 * 1024 * 1024;

const CHUNK: usize = 64 * 1024;

/// A callback with each violation as it is found.
pub type OnViolation = Box<dyn FnMut(&Violation) + Send>;

/// A callback with each event as it is traced.
pub type OnEvent = Box<dyn FnMut(&Event) + Send>;

/// What to do with the traffic.
pub struct ProxyOptions {
    /// The Spark release every connection is read as; `None` (the default): each connection's
    /// release is told from its own streams.
    pub release: Option<&'static Release>,
    /// The validator's settings.
    pub config: Config,
    /// Where to write the trace, if anywhere.
    pub trace: Option<Box<dyn Write + Send>>,
    /// The trace's form (JSON Lines by default).
    pub trace_format: TraceFormat,
    /// Called with each violation as it is found.
    pub on_violation: Option<OnViolation>,
    /// Called with each event as it is traced.
    pub on_event: Option<OnEvent>,
    /// Spark's authentication, terminated on both sides (the proxy holds the secret): each
    /// client must pass Spark's bootstrap with the proxy (this side), and the proxy runs
    /// Spark's bootstrap with the upstream ([`ProxyOptions::auth_upstream`]); the frames between
    /// are traced decrypted.
    pub auth: Option<super::auth::ServerAuth>,
    /// The bootstrap the proxy runs with the upstream, when it demands one.
    pub auth_upstream: Option<super::auth::ClientAuth>,
}

impl Default for ProxyOptions {
    fn default() -> Self {
        ProxyOptions {
            release: None,
            config: Config::default(),
            trace: None,
            trace_format: TraceFormat::JsonLines,
            on_violation: None,
            on_event: None,
            auth: None,
            auth_upstream: None,
        }
    }
}

impl std::fmt::Debug for ProxyOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProxyOptions")
            .field("release", &self.release.map(Release::name))
            .field("trace", &self.trace.is_some())
            .finish_non_exhaustive()
    }
}

/// What the proxy saw, when it stops.
#[derive(Debug, Clone)]
pub struct ProxyOutcome {
    /// Events traced.
    pub events: u64,
    /// Every violation, in order (with those of the end of the trace).
    pub violations: Vec<Violation>,
    /// What was decoded.
    pub summary: Summary,
    /// Bytes forwarded client → upstream and back.
    pub forwarded: [u64; 2],
    /// A trace write that failed, if one did.
    pub trace_error: Option<String>,
}

enum Msg {
    Open(ConnId, u64, String, String),
    Data(ConnId, u64, bool, Vec<u8>, Arc<AtomicUsize>),
    Overflow(ConnId, bool),
    Close(ConnId, u64),
    Finish(oneshot::Sender<ProxyOutcome>),
}

/// A running proxy.
#[derive(Debug)]
pub struct ProxyHandle {
    local: std::net::SocketAddr,
    stop: Option<oneshot::Sender<()>>,
    accept: JoinHandle<()>,
    tx: mpsc::UnboundedSender<Msg>,
    closed: Arc<AtomicU64>,
}

impl std::fmt::Debug for Msg {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Msg")
    }
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
        .unwrap_or(0)
}

impl ProxyHandle {
    /// The address the proxy listens on.
    pub fn local_addr(&self) -> std::net::SocketAddr {
        self.local
    }

    /// Connections the proxy has seen close (both directions ended) and traced so.
    pub fn closed_connections(&self) -> u64 {
        self.closed.load(Ordering::SeqCst)
    }

    /// Stops accepting, ends the trace (connections still open stay open in it) and returns what
    /// was seen.
    pub async fn stop(mut self) -> ProxyOutcome {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
        let _ = (&mut self.accept).await;
        let (tx, rx) = oneshot::channel();
        let _ = self.tx.send(Msg::Finish(tx));
        rx.await.unwrap_or(ProxyOutcome {
            events: 0,
            violations: Vec::new(),
            summary: Summary::default(),
            forwarded: [0, 0],
            trace_error: Some("the tracing task ended early".into()),
        })
    }
}

/// Starts a proxy on `listener` to `upstream` (host:port).
pub fn start_proxy(
    listener: TcpListener,
    upstream: String,
    options: ProxyOptions,
) -> std::io::Result<ProxyHandle> {
    let local = listener.local_addr()?;
    let (tx, rx) = mpsc::unbounded_channel();
    let closed = Arc::new(AtomicU64::new(0));
    let forwarded = Arc::new([AtomicU64::new(0), AtomicU64::new(0)]);
    let auth = options.auth.clone().map(Arc::new);
    let auth_upstream = options.auth_upstream.clone().map(Arc::new);
    tokio::spawn(trace_task(rx, options, closed.clone(), forwarded.clone()));
    let (stop_tx, mut stop_rx) = oneshot::channel::<()>();
    let accept_tx = tx.clone();
    let accept = tokio::spawn(async move {
        let mut next: ConnId = 0;
        loop {
            let accepted = tokio::select! {
                _ = &mut stop_rx => break,
                a = listener.accept() => a,
            };
            let Ok((client, peer)) = accepted else {
                continue;
            };
            next += 1;
            let conn = next;
            let tx = accept_tx.clone();
            let upstream = upstream.clone();
            let backlog = Arc::new(AtomicUsize::new(0));
            let forwarded = forwarded.clone();
            let auth = auth.clone();
            let auth_upstream = auth_upstream.clone();
            tokio::spawn(async move {
                let _ = client.set_nodelay(true);
                let client = match &auth {
                    None => Side::Plain(client),
                    Some(a) => match super::auth::server_handshake(client, a).await {
                        Ok(s) => Side::Auth(Box::new(s)),
                        Err(e) => {
                            tracing::warn!(
                                "spark proxy: conn {conn} from {peer}: refused at Spark's \
                                 authentication bootstrap: {e}"
                            );
                            return;
                        }
                    },
                };
                let server = match TcpStream::connect(&upstream).await {
                    Ok(s) => s,
                    Err(e) => {
                        tracing::warn!(
                            "spark proxy: conn {conn} from {peer}: cannot reach {upstream}: {e}"
                        );
                        return;
                    }
                };
                let _ = server.set_nodelay(true);
                let server_addr = server
                    .peer_addr()
                    .map(|a| a.to_string())
                    .unwrap_or(upstream.clone());
                let server = match &auth_upstream {
                    None => Side::Plain(server),
                    Some(a) => match super::auth::client_handshake(server, a).await {
                        Ok(s) => Side::Auth(Box::new(s)),
                        Err(e) => {
                            tracing::warn!(
                                "spark proxy: conn {conn} from {peer}: {upstream} refused the \
                                 proxy's Spark authentication: {e}"
                            );
                            return;
                        }
                    },
                };
                let _ = tx.send(Msg::Open(conn, now_ms(), peer.to_string(), server_addr));
                let (cr, cw) = tokio::io::split(client);
                let (sr, sw) = tokio::io::split(server);
                let up = pump(
                    conn,
                    true,
                    cr,
                    sw,
                    tx.clone(),
                    backlog.clone(),
                    forwarded.clone(),
                );
                let down = pump(conn, false, sr, cw, tx.clone(), backlog, forwarded);
                let _ = tokio::join!(up, down);
                let _ = tx.send(Msg::Close(conn, now_ms()));
            });
        }
    });
    Ok(ProxyHandle {
        local,
        stop: Some(stop_tx),
        accept,
        tx,
        closed,
    })
}

/// One side of a proxied connection: as accepted (or connected), or after Spark's bootstrap.
enum Side {
    Plain(TcpStream),
    Auth(Box<super::auth::AuthStream<TcpStream>>),
}

impl AsyncRead for Side {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        match self.get_mut() {
            Side::Plain(s) => Pin::new(s).poll_read(cx, buf),
            Side::Auth(s) => Pin::new(s.as_mut()).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for Side {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        data: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        match self.get_mut() {
            Side::Plain(s) => Pin::new(s).poll_write(cx, data),
            Side::Auth(s) => Pin::new(s.as_mut()).poll_write(cx, data),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        match self.get_mut() {
            Side::Plain(s) => Pin::new(s).poll_flush(cx),
            Side::Auth(s) => Pin::new(s.as_mut()).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        match self.get_mut() {
            Side::Plain(s) => Pin::new(s).poll_shutdown(cx),
            Side::Auth(s) => Pin::new(s.as_mut()).poll_shutdown(cx),
        }
    }
}

/// Copies one direction, handing each chunk to the tracer first.
async fn pump(
    conn: ConnId,
    from_client: bool,
    mut from: ReadHalf<Side>,
    mut to: WriteHalf<Side>,
    tx: mpsc::UnboundedSender<Msg>,
    backlog: Arc<AtomicUsize>,
    forwarded: Arc<[AtomicU64; 2]>,
) {
    let mut buf = vec![0u8; CHUNK];
    let mut tracing = true;
    loop {
        let n = match from.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        if tracing {
            if backlog.load(Ordering::SeqCst) + n > MAX_BACKLOG {
                tracing = false;
                let _ = tx.send(Msg::Overflow(conn, from_client));
            } else {
                backlog.fetch_add(n, Ordering::SeqCst);
                let chunk = buf[..n].to_vec();
                let _ = tx.send(Msg::Data(
                    conn,
                    now_ms(),
                    from_client,
                    chunk,
                    backlog.clone(),
                ));
            }
        }
        if to.write_all(&buf[..n]).await.is_err() {
            break;
        }
        forwarded[usize::from(!from_client)].fetch_add(n as u64, Ordering::SeqCst);
    }
    let _ = to.shutdown().await;
}

async fn trace_task(
    mut rx: mpsc::UnboundedReceiver<Msg>,
    mut options: ProxyOptions,
    closed: Arc<AtomicU64>,
    forwarded: Arc<[AtomicU64; 2]>,
) {
    let mut tracer = Tracer::with_release(options.release);
    let mut validator = Validator::new(options.config.clone());
    let format = options.trace_format;
    let mut writer = options
        .trace
        .take()
        .map(|out| TraceWriter::with_format(out, format));
    let mut violations = Vec::new();
    let mut trace_error = None;
    let mut events = 0u64;
    let mut emit = |evs: Vec<Event>,
                    validator: &mut Validator,
                    writer: &mut Option<TraceWriter<Box<dyn Write + Send>>>,
                    violations: &mut Vec<Violation>,
                    trace_error: &mut Option<String>,
                    options: &mut ProxyOptions| {
        for e in evs {
            events += 1;
            if let Some(w) = writer.as_mut() {
                if let Err(err) = w.write(&e) {
                    trace_error.get_or_insert(err.to_string());
                }
            }
            if let Some(f) = options.on_event.as_mut() {
                f(&e);
            }
            for v in validator.observe(&e) {
                if let Some(f) = options.on_violation.as_mut() {
                    f(&v);
                }
                violations.push(v);
            }
        }
    };
    while let Some(msg) = rx.recv().await {
        match msg {
            Msg::Open(conn, time, client, server) => tracer.open(conn, time, client, server),
            Msg::Data(conn, time, from_client, bytes, backlog) => {
                let evs = tracer.data(conn, time, from_client, &bytes);
                backlog.fetch_sub(bytes.len(), Ordering::SeqCst);
                emit(evs, &mut validator, &mut writer, &mut violations, &mut trace_error, &mut options);
            }
            Msg::Overflow(conn, from_client) => tracer.failure(
                conn,
                from_client,
                &format!("decoding fell {MAX_BACKLOG} bytes behind; the rest of this direction is not traced"),
            ),
            Msg::Close(conn, time) => {
                let evs = tracer.close(conn, time);
                emit(evs, &mut validator, &mut writer, &mut violations, &mut trace_error, &mut options);
                closed.fetch_add(1, Ordering::SeqCst);
            }
            Msg::Finish(reply) => {
                let evs = tracer.finish();
                emit(evs, &mut validator, &mut writer, &mut violations, &mut trace_error, &mut options);
                let end = validator.finish();
                for v in &end {
                    if let Some(f) = options.on_violation.as_mut() {
                        f(v);
                    }
                }
                violations.extend(end);
                if let Some(w) = writer.take() {
                    if let Err(err) = w.into_inner() {
                        trace_error.get_or_insert(err.to_string());
                    }
                }
                let _ = reply.send(ProxyOutcome {
                    events,
                    violations,
                    summary: tracer.summary().clone(),
                    forwarded: [
                        forwarded[0].load(Ordering::SeqCst),
                        forwarded[1].load(Ordering::SeqCst),
                    ],
                    trace_error,
                });
                return;
            }
        }
    }
}
