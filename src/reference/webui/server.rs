//! The HTTP/1.1 server of the web UIs (hyper): GET and HEAD only, a bounded number of
//! connections, each with a header timeout and a lifetime limit, so that a client that stalls
//! holds nothing for long and never slows the others.

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::header::{HeaderValue, CACHE_CONTROL, CONTENT_TYPE};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::TcpListener;
use tokio::task::JoinSet;

use super::Page;

/// Answers a request for `path` with query `query` (the part after `?`, if any).
pub(crate) type Handler =
    Arc<dyn Fn(String, Option<String>) -> Pin<Box<dyn Future<Output = Page> + Send>> + Send + Sync>;

/// Most connections served at once; more are closed as they come.
const MAX_CONNECTIONS: usize = 64;
/// How long a client has to send its request head.
const HEADER_TIMEOUT: Duration = Duration::from_secs(10);
/// How long one connection may stay open.
const CONNECTION_LIFETIME: Duration = Duration::from_secs(60);

/// Serves `handler` on `listener` until the task is dropped or aborted (which ends every
/// connection too).
pub(crate) async fn serve(listener: TcpListener, handler: Handler) {
    let mut connections = JoinSet::new();
    loop {
        tokio::select! {
            accepted = listener.accept() => {
                let stream = match accepted {
                    Ok((stream, _)) => stream,
                    Err(e) => {
                        tracing::debug!(error = %e, "web UI: accept failed");
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        continue;
                    }
                };
                if connections.len() >= MAX_CONNECTIONS {
                    tracing::debug!("web UI: too many connections; one refused");
                    continue;
                }
                let handler = Arc::clone(&handler);
                connections.spawn(async move {
                    let service = service_fn(move |req: Request<Incoming>| {
                        let handler = Arc::clone(&handler);
                        async move { Ok::<_, Infallible>(respond(&handler, req).await) }
                    });
                    let conn = http1::Builder::new()
                        .timer(TokioTimer::new())
                        .header_read_timeout(HEADER_TIMEOUT)
                        .serve_connection(TokioIo::new(stream), service);
                    let _ = tokio::time::timeout(CONNECTION_LIFETIME, conn).await;
                });
            }
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
        }
    }
}

async fn respond(handler: &Handler, req: Request<Incoming>) -> Response<Full<Bytes>> {
    let head = req.method() == Method::HEAD;
    let page = if req.method() == Method::GET || head {
        let path = req.uri().path().to_string();
        let query = req.uri().query().map(str::to_string);
        handler(path, query).await
    } else {
        Page::error(405, "only GET and HEAD are served")
    };
    let body = if head {
        Bytes::new()
    } else {
        Bytes::from(page.body)
    };
    let mut response = Response::new(Full::new(body));
    *response.status_mut() =
        StatusCode::from_u16(page.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    response
        .headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static(page.content_type));
    response
        .headers_mut()
        .insert(CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

/// GETs `url` (`http://host:port/path?query`) and returns the status code and the body: what
/// `sparkwire submit` reads a driver's log with, and tests the pages with.
pub async fn fetch(url: &str, timeout: Duration) -> Result<(u16, String), String> {
    use http_body_util::BodyExt;

    let uri: hyper::Uri = url.parse().map_err(|e| format!("invalid URL {url}: {e}"))?;
    if uri.scheme_str() != Some("http") {
        return Err(format!("{url}: only http:// URLs are fetched"));
    }
    let host = uri
        .host()
        .ok_or_else(|| format!("{url}: no host"))?
        .trim_start_matches('[')
        .trim_end_matches(']')
        .to_string();
    let port = uri.port_u16().unwrap_or(80);
    let work = async {
        let stream = crate::connection::connect_tcp(&host, port, timeout)
            .await
            .map_err(|e| e.to_string())?;
        let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
            .await
            .map_err(|e| format!("{url}: {e}"))?;
        let driving = tokio::spawn(conn);
        let path = uri.path_and_query().map_or("/", |p| p.as_str());
        let request = Request::get(path)
            .header(hyper::header::HOST, format!("{host}:{port}"))
            .body(http_body_util::Empty::<Bytes>::new())
            .map_err(|e| format!("{url}: {e}"))?;
        let response = sender
            .send_request(request)
            .await
            .map_err(|e| format!("{url}: {e}"))?;
        let status = response.status().as_u16();
        let body = response
            .into_body()
            .collect()
            .await
            .map_err(|e| format!("{url}: {e}"))?
            .to_bytes();
        driving.abort();
        Ok((status, String::from_utf8_lossy(&body).into_owned()))
    };
    tokio::time::timeout(timeout, work)
        .await
        .map_err(|_| format!("{url}: no answer within {} s", timeout.as_secs_f64()))?
}
