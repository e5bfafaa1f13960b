//! `--target driver`, rules.md "Cluster manager ↔ driver": the suite connects to the driver as a
//! `cluster-manager` (handshake.md §7) and never registers (no RegisterClusterManager), so that
//! a driver that asks a cluster manager for executors before it registered (rule K1) is seen.

use std::time::Duration;

use sparkwire::messages::{CoarseMessage, Version};
use sparkwire::wire::handshake::{Hello, Role};
use sparkwire::wire::Envelope;

use crate::case::{run, Case, Target};
use crate::env::Ctx;
use crate::kit::common::wait;
use crate::kit::driver::{registered, SMALL};
use crate::peer::Conn;
use crate::verdict::{Failure, Level, Outcome};

type C = CoarseMessage;

/// Every case of the cluster manager's side of a driver.
pub fn add(cs: &mut Vec<Case>) {
    cs.push(Case {
        id: "rules/K1/register-first".into(),
        level: Level::Must,
        targets: vec![Target::Driver],
        requirement: "rule K1, \"The driver asks a cluster manager (RequestExecutors, KillExecutors, GetExecutorLossReason) only \
            on a connection where it sent RegisterClusterManager\" (RegisterClusterManager is the cluster manager's, \
                definition.json): a driver with a job waiting for executors, to which the suite connects as a \
                    cluster-manager and sends nothing, asks none of them there (a driver that takes no cluster \
                        manager and refuses the role, handshake.md §7, asks none either)".into(),
        body: run(register_first),
        ..Case::default()
    });
}

/// How long the case watches the cluster manager's connection: long enough for a driver that
/// wants executors (its job waits for them) to ask.
fn watch(ctx: &Ctx) -> Duration {
    (ctx.settings.quiet * 4).min(wait(ctx))
}

async fn register_first(ctx: Ctx) -> Outcome {
    let d = registered(&ctx, SMALL).await?;
    let hello = Hello::new(&[Version::V2], Role::ClusterManager, "cluster-manager");
    let opened = Conn::open_with(
        d.driver_addr,
        "cluster-manager",
        hello,
        ctx.settings.secret.as_ref(),
        &ctx.log,
        wait(&ctx),
    )
    .await;
    let mut c = match opened {
        Ok((c, _)) => c,
        // It takes no cluster manager: it asks none.
        Err(Failure::Fail { seen, .. }) if seen.starts_with("refused: roleNotAccepted") => {
            return Ok(())
        }
        Err(e) => return Err(e),
    };
    c.expect_none::<C>(
        watch(&ctx),
        "no RequestExecutors, KillExecutors or GetExecutorLossReason before RegisterClusterManager (rule K1)",
        |e| {
            let m = match e {
                Envelope::Send(m) | Envelope::Ask { message: m, .. } => m,
                _ => return false,
            };
            matches!(
                m,
                C::RequestExecutors(_) | C::KillExecutors(_) | C::GetExecutorLossReason(_)
            )
        },
    )
    .await
}
