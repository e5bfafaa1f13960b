//! Talking to a running master from the command line (`submit`, `status`): connecting to the
//! first master of a URL that answers, and asking.

use std::time::Duration;

use sparkwire::connection::{connect_tcp, Connection, ConnectionConfig};
use sparkwire::messages::deploy::{MasterStateResponse, RequestMasterState};
use sparkwire::messages::{Addr, DeployMessage, Family};
use sparkwire::reference::url::MasterUrl;
use sparkwire::wire::handshake::Role;
use sparkwire::wire::Reply;

/// How long one connection attempt, and one ask, may take.
pub(crate) const PATIENCE: Duration = Duration::from_secs(10);

/// A connection to one master of a URL.
pub(crate) struct MasterClient {
    pub(crate) conn: Connection<DeployMessage>,
    pub(crate) addr: Addr,
}

impl MasterClient {
    /// Connects to `master` as `role`.
    pub(crate) async fn connect(master: &Addr, role: Role) -> Result<MasterClient, String> {
        let port = u16::try_from(master.port)
            .map_err(|_| format!("{}:{}: the port is out of range", master.host, master.port))?;
        let stream = connect_tcp(&master.host, port, PATIENCE)
            .await
            .map_err(|e| e.to_string())?;
        let id = format!("sparkwire-cli-{}", std::process::id());
        let conn = Connection::connect(stream, role, id, ConnectionConfig::default())
            .await
            .map_err(|e| format!("{}:{}: {e}", master.host, master.port))?;
        Ok(MasterClient {
            conn,
            addr: master.clone(),
        })
    }

    /// Connects to each master of `url` in turn and returns the first connection made, or every
    /// failure.
    pub(crate) async fn connect_any(url: &MasterUrl, role: Role) -> Result<MasterClient, String> {
        let mut failures = Vec::new();
        for m in &url.masters {
            match MasterClient::connect(m, role).await {
                Ok(c) => return Ok(c),
                Err(e) => failures.push(e),
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
