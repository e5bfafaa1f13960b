//! `--target master`, SPEC §14.2: ids bound to connections, the cases that `authorization.rs`
//! leaves (Z1 for a finished or unknown application, Z2 for WorkerDecommissioning and
//! WorkerSchedulerStateResponse, Z3 for an executor placed on another worker). One function per
//! case; each cites the sentence it checks.

use crate::harness::env::Ctx;
use crate::harness::verdict::check;
use crate::harness::verdict::Outcome;
use crate::kit::master::state;
use sparkwire::messages::WorkerState;

/// Checks that worker `id` is ALIVE in the master's state.
pub(crate) async fn still_alive(ctx: &Ctx, id: &str) -> Outcome {
    let s = state(ctx).await?;
    let w = s.workers.iter().find(|w| w.id == id);
    check(
        w.is_some_and(|w| w.state == WorkerState::Alive),
        format!("worker {id} ALIVE in the master's state"),
        format!("{:?}", w.map(|w| w.state)),
    )
}
