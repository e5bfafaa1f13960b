//! The proxy: it listens, connects each connection it accepts to the upstream, and runs it
//! through the fault's [`Behaviour`] (the authentication faults in [`super::auth`], the others
//! in [`super::pipe`]); and what it knows of each connection ([`State`]).

use std::net::SocketAddr;

use sparkwire::messages::Version;
use sparkwire::wire::handshake::{Role, Secret};
use tokio::net::{TcpListener, TcpStream};

use super::auth::{auth_fault, client_auth_fault, AuthBreak};
use super::behaviour::Behaviour;
use super::pipe::pipe;
use super::{judge, launch, points, Fault};

/// A running proxy; dropping it stops accepting connections.
#[derive(Debug)]
pub struct Proxy {
    addr: SocketAddr,
    task: tokio::task::JoinHandle<()>,
}

impl Proxy {
    /// Where the proxy listens.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Which end of each proxied connection the suite is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    /// The suite connects (through the proxy) to the endpoint, which listens at the upstream.
    SuiteConnects {
        /// A role the endpoint takes, used when the proxy says hello itself.
        client_role: Role,
        /// The role the endpoint declares.
        server_role: Role,
    },
    /// The endpoint connects (through the proxy) to the suite, which listens at the upstream.
    EndpointConnects,
}

/// Starts a proxy on 127.0.0.1 in front of `upstream`. `secret` is the endpoint's shared
/// secret, which the authentication faults use to stand in for the suite.
pub async fn start(
    fault: Fault,
    upstream: SocketAddr,
    side: Side,
    secret: Option<Secret>,
) -> Result<Proxy, String> {
    let listener = TcpListener::bind(SocketAddr::from(([127, 0, 0, 1], 0)))
        .await
        .map_err(|e| format!("fault proxy: cannot listen: {e}"))?;
    let addr = listener.local_addr().map_err(|e| e.to_string())?;
    let behaviour = fault.0.behaviour;
    let task = tokio::spawn(async move {
        while let Ok((inbound, _)) = listener.accept().await {
            tokio::spawn(serve(behaviour, upstream, side, secret.clone(), inbound));
        }
    });
    Ok(Proxy { addr, task })
}

/// One connection the proxy accepted: connected to the upstream, then run through the
/// authentication fault that stands in for the handshake, or through the loop ([`pipe`]).
async fn serve(
    behaviour: &'static dyn Behaviour,
    upstream: SocketAddr,
    side: Side,
    secret: Option<Secret>,
    inbound: TcpStream,
) {
    let Ok(outbound) = TcpStream::connect(upstream).await else {
        return;
    };
    let _ = inbound.set_nodelay(true);
    let _ = outbound.set_nodelay(true);
    let (suite, endpoint) = match side {
        Side::SuiteConnects { .. } => (inbound, outbound),
        Side::EndpointConnects => (outbound, inbound),
    };
    match (behaviour.auth(), side, secret) {
        (Some(AuthBreak::Spark(b)), Side::SuiteConnects { .. }, Some(secret)) => {
            super::spark_auth::spark_auth_fault(b, &secret, suite, endpoint).await
        }
        (Some(b), Side::SuiteConnects { server_role, .. }, Some(secret)) => {
            auth_fault(b, server_role, &secret, suite, endpoint).await
        }
        (Some(b), Side::EndpointConnects, Some(secret)) => {
            client_auth_fault(b, &secret, suite, endpoint).await
        }
        _ => pipe(behaviour, side, suite, endpoint).await,
    }
}

/// What the proxy knows of one connection.
#[derive(Debug, Default)]
pub(super) struct State {
    pub(super) version: Option<Version>,
    /// What the frame-level faults remember of the connection.
    pub(super) seen: Seen,
    /// The role the client's hello declared.
    pub(super) client_role: Option<Role>,
    /// Whether the off-route message was added on this connection.
    pub(super) off_route_sent: bool,
    pub(super) offered: Vec<u64>,
    pub(super) swallow_answer: bool,
    pub(super) dead_suite_side: bool,
    /// Whether the endpoint's last frame was a close envelope (`close-envelope-always`).
    pub(super) endpoint_last_close: bool,
}

/// What the frame-level faults remember of one connection.
#[derive(Debug, Default)]
pub(super) struct Seen {
    pub(super) role: Option<Role>,
    pub(super) own_worker: Option<String>,
    pub(super) own_app: Option<String>,
    pub(super) launched_executors: std::collections::BTreeSet<(String, i32)>,
    pub(super) launched_drivers: std::collections::BTreeSet<String>,
    /// The ids of the suite's RequestExecutors and KillExecutors asks not answered yet.
    pub(super) executor_asks: std::collections::BTreeSet<u64>,
    /// When the suite's worker or application registered over the connection.
    pub(super) registered_at: Option<std::time::Instant>,
    /// What the launch faults remember ([`launch`]).
    pub(super) launch: launch::Seen,
    /// What the judge's faults remember.
    pub(super) judge: judge::Seen,
    /// What issue 44's faults remember ([`points`]).
    pub(super) points: points::Seen,
}
