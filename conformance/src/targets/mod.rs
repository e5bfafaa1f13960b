//! The cases of each target.

pub mod auth;
pub mod client;
pub mod common;
pub mod driver;
pub mod executor;
pub mod master;
pub mod server;
pub mod spawned;
pub mod worker;

use crate::case::{Case, Target};

/// Every case of `target`, in report order.
pub fn cases(target: Target) -> Vec<Case> {
    match target {
        Target::Master => master::cases(),
        Target::Worker => worker::cases(),
        Target::Driver => driver::cases(),
        Target::Executor => executor::cases(),
    }
}

/// Checks that the endpoint can be reached (or started) before any case runs, and puts the
/// fault proxy, if one is asked for, in front of it. Fails when the suite cannot run.
pub async fn prepare(
    mut settings: crate::env::Settings,
) -> Result<(crate::env::Settings, Option<crate::fault::Proxy>), String> {
    use crate::env::Endpoint;
    match settings.endpoint.clone() {
        Endpoint::Addr(addr) => {
            tokio::time::timeout(
                std::time::Duration::from_secs(5),
                tokio::net::TcpStream::connect(addr),
            )
            .await
            .map_err(|_| format!("cannot connect to {addr}: timed out"))?
            .map_err(|e| format!("cannot connect to {addr}: {e}"))?;
            if let Some(fault) = settings.fault {
                let proxy = crate::fault::start(
                    fault,
                    addr,
                    crate::fault::Side::SuiteConnects {
                        client_role: sparkwire::wire::handshake::Role::Ui,
                        server_role: sparkwire::wire::handshake::Role::Master,
                    },
                    settings.secret.clone(),
                )
                .await?;
                settings.endpoint = Endpoint::Addr(proxy.addr());
                return Ok((settings, Some(proxy)));
            }
            Ok((settings, None))
        }
        Endpoint::Spawn(_) | Endpoint::Listen(_) => Ok((settings, None)),
    }
}
