//! `rules/k/…`: protocol/rules.md, the rules K1, K2, ….

use crate::harness::case::run;
use crate::harness::case::Case;
use crate::harness::case::Target;
use crate::harness::env::Ctx;
use crate::harness::peer::Conn;
use crate::harness::verdict::Failure;
use crate::harness::verdict::Level;
use crate::harness::verdict::Outcome;
use crate::kit::common::wait;
use crate::kit::driver::registered;
use crate::kit::driver::SMALL;
use crate::kit::support::cluster_manager::*;
use sparkwire::messages::CoarseMessage;
use sparkwire::messages::Version;
use sparkwire::wire::handshake::Hello;
use sparkwire::wire::handshake::Role;
use sparkwire::wire::Envelope;

type C = CoarseMessage;

/// The cases of this section, each naming its targets.
pub fn cases(cs: &mut Vec<Case>) {
    cs.push(Case {
        id: "rules/K1/register-first".into(),
        level: Level::Must,
        targets: vec![Target::Driver],
        quote:
            "rules.md K1, \"The driver asks a cluster manager (RequestExecutors, KillExecutors, \
            GetExecutorLossReason) only on a connection where it sent RegisterClusterManager\""
                .into(),
        requirement: "a driver with a job waiting asks none of them on a cluster-manager \
            connection that registered nothing"
            .into(),
        body: run(register_first),
        ..Case::default()
    });
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
