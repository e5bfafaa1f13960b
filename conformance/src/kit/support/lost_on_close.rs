//! `--target master`, what a closed connection loses (SPEC §14.3, "Closing loses what was bound
//! to the connection as any closed connection does (§8)"; §8, "a master marks a worker whose
//! connection closed as lost"), and rule W5 for a decommissioned worker. One function per case;
//! each cites the sentence it checks.

use crate::harness::env::Ctx;
use crate::harness::verdict::Outcome;
use crate::kit::master::settle;
use crate::kit::master::state;
use sparkwire::messages::WorkerState;

/// Waits until worker `id` is DEAD in the master's state, or no longer listed.
pub(crate) async fn lost(ctx: &Ctx, id: &str) -> Outcome {
    settle(
        ctx,
        || async {
            let s = state(ctx).await?;
            Ok(s.workers
                .iter()
                .find(|w| w.id == id)
                .is_none_or(|w| w.state == WorkerState::Dead))
        },
        &format!("worker {id} DEAD in the master's state, or no longer listed"),
    )
    .await
}
