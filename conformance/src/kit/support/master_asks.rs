//! `--target master`, SPEC §7.1: the asks Spark's `Master` answers from any client peer.
//! `RequestMasterState`, `RequestReadyz`, `RequestClearCompletedDriversAndApps` and
//! `DecommissionWorkersOnHosts` are answered
//! to a `driver-client` as to a `ui` (definition.json: from `driver-client` or `ui`; Spark's
//! `deploy.Client` asks both kinds over one connection). One function per case.

use crate::harness::env::Ctx;
use crate::kit::common::wait;
use crate::kit::master::open;
use sparkwire::messages::DeployMessage;
use sparkwire::messages::Version;
use sparkwire::wire::handshake::Role;
use sparkwire::wire::Envelope;
use sparkwire::wire::Reply;

pub(crate) type D = DeployMessage;

/// Asks `m` as a driver client at `version`, ask id 3, and returns the reply.
pub(crate) async fn ask_as_driver_client(
    ctx: &Ctx,
    version: Version,
    m: D,
    want: &str,
) -> Result<Reply<D>, crate::harness::verdict::Failure> {
    let mut c = open(ctx, Role::DriverClient, "driver-client", "", version).await?;
    c.send(&Envelope::Ask { id: 3, message: m }).await?;
    c.expect::<D, Reply<D>>(wait(ctx), want, |e| match e {
        Envelope::Reply { id: 3, reply } => Some(reply.clone()),
        _ => None,
    })
    .await
}
