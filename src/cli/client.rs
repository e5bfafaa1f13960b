//! Talking to a running master from the command line (`submit`, `status`): connecting to the
//! first master of a URL that answers, and asking.

use std::fmt;
use std::time::Duration;

use sparkwire::connection::{connect_tcp, Connection, ConnectionConfig, Security};
use sparkwire::messages::deploy::{MasterStateResponse, RequestMasterState};
use sparkwire::messages::{Addr, DeployMessage, Family};
use sparkwire::node::url::MasterUrl;
use sparkwire::wire::handshake::{Identity, Role};
use sparkwire::wire::Reply;

use super::security::handshake_failure;

/// How long one connection attempt, and one ask, may take.
pub(crate) const PATIENCE: Duration = Duration::from_secs(10);

/// A connection to one master of a URL.
pub(crate) struct MasterClient {
    pub(crate) conn: Connection<DeployMessage>,
    pub(crate) addr: Addr,
}

/// Why no connection to a master was made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ConnectError {
    /// The master could not be reached (no TCP connection).
    Unreachable(String),
    /// It was reached and the handshake failed: refused (a missing or wrong secret), TLS, …
    Handshake(String),
}

impl fmt::Display for ConnectError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ConnectError::Unreachable(why) | ConnectError::Handshake(why) => f.write_str(why),
        }
    }
}

/// `the master at HOST:PORT`.
fn the_master(master: &Addr) -> String {
    format!("the master at {}:{}", master.host, master.port)
}

impl MasterClient {
    /// Connects to `master` as `role`, with `security`'s secret and TLS (the master's
    /// certificate must name the host dialled).
    pub(crate) async fn connect(
        master: &Addr,
        role: Role,
        security: &Security,
    ) -> Result<MasterClient, ConnectError> {
        let port = u16::try_from(master.port).map_err(|_| {
            ConnectError::Unreachable(format!(
                "{}:{}: the port is out of range",
                master.host, master.port
            ))
        })?;
        let stream = connect_tcp(&master.host, port, PATIENCE)
            .await
            .map_err(|e| ConnectError::Unreachable(e.to_string()))?;
        let local = Identity::new(role, format!("sparkwire-cli-{}", std::process::id()));
        let established = tokio::time::timeout(
            PATIENCE,
            security.client_handshake(stream, &local, &master.host),
        )
        .await
        .map_err(|_| {
            ConnectError::Handshake(format!(
                "the handshake with {} did not complete within {PATIENCE:?}",
                the_master(master)
            ))
        })?
        .map_err(|e| {
            ConnectError::Handshake(handshake_failure(
                &the_master(master),
                &e,
                security.encrypts(),
            ))
        })?;
        let conn = Connection::establish(established, ConnectionConfig::default())
            .map_err(|e| ConnectError::Handshake(format!("{}: {e}", the_master(master))))?;
        Ok(MasterClient {
            conn,
            addr: master.clone(),
        })
    }

    /// Connects to each master of `url` in turn and returns the first connection made, or every
    /// failure.
    pub(crate) async fn connect_any(
        url: &MasterUrl,
        role: Role,
        security: &Security,
    ) -> Result<MasterClient, String> {
        let mut failures = Vec::new();
        for m in &url.masters {
            match MasterClient::connect(m, role, security).await {
                Ok(c) => return Ok(c),
                Err(e) => failures.push(e.to_string()),
            }
        }
        Err(failures.join("; "))
    }

    /// Asks and returns the message replied.
    pub(crate) async fn ask(&self, m: impl Into<DeployMessage>) -> Result<DeployMessage, String> {
        let m = m.into();
        let name = m.name();
        match self.conn.ask_with_timeout(m, PATIENCE).await {
            Ok(Reply::Message(reply)) => Ok(reply),
            Ok(other) => Err(format!(
                "the master at {}:{} answered {name} with {}",
                self.addr.host,
                self.addr.port,
                describe_reply(&other)
            )),
            Err(e) => Err(format!(
                "the master at {}:{} did not answer {name}: {e}",
                self.addr.host, self.addr.port
            )),
        }
    }

    /// The master's state (RequestMasterState).
    pub(crate) async fn master_state(&self) -> Result<MasterStateResponse, String> {
        match self.ask(RequestMasterState::new()).await? {
            DeployMessage::MasterStateResponse(s) => Ok(s),
            other => Err(format!(
                "the master answered RequestMasterState with {}",
                other.name()
            )),
        }
    }
}

fn describe_reply(r: &Reply<DeployMessage>) -> String {
    match r {
        Reply::Message(m) => m.name().to_string(),
        other => format!("a {} reply", other.tag()),
    }
}

/// Why the masters refuse a driver's handshake, for a driver that gave up without registering:
/// each of `masters` is dialled as an application client with `security`, and what each
/// handshake that fails says is returned (nothing when every handshake succeeds, or no master
/// can be reached: then the handshake is not why).
pub(crate) async fn handshake_refusals(masters: &[Addr], security: &Security) -> Vec<String> {
    let mut refusals = Vec::new();
    for m in masters {
        match MasterClient::connect(m, Role::AppClient, security).await {
            Ok(client) => client.conn.close().await,
            Err(ConnectError::Handshake(why)) => refusals.push(why),
            Err(ConnectError::Unreachable(_)) => {}
        }
    }
    refusals
}

/// A driver's failure `message`, followed by why the masters refused its handshake when they
/// did (see [`handshake_refusals`]).
pub(crate) async fn explain_unregistered(
    message: String,
    masters: &[Addr],
    security: &Security,
) -> String {
    let refusals = handshake_refusals(masters, security).await;
    if refusals.is_empty() {
        message
    } else {
        format!("{message}\n{}", refusals.join("\n"))
    }
}
