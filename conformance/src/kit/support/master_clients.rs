//! The master's flows with one client at a time, which run beside the other cases: workers'
//! registrations (rules.md W3, W4), applications' (P3, P5), the UI's asks, drivers submitted,
//! asked about and killed (D1, D6). Each registers only what no other case can take or be
//! taken by (workers without cores or memory; applications, and drivers, no such worker can
//! run): `Need::OwnRegistrations`. What those cases (in `cases/flow/master.rs` and elsewhere)
//! share.

use crate::harness::env::Ctx;
use crate::harness::peer::Conn;
use crate::harness::verdict::Outcome;
use crate::kit::master::*;
use crate::kit::support::master::*;
use sparkwire::messages::deploy::*;
use sparkwire::wire::Envelope;

/// Unregisters the application `id` on its client's connection `c` and waits until the master's
/// state no longer lists it as active.
pub(crate) async fn unregistered(ctx: &Ctx, c: &mut Conn, id: &str) -> Outcome {
    c.send(&Envelope::Send(D::UnregisterApplication(
        UnregisterApplication::new(id.to_string()),
    )))
    .await?;
    settle(
        ctx,
        || async { Ok(!state(ctx).await?.active_apps.iter().any(|a| a.id == id)) },
        "the application no longer active",
    )
    .await
}
