//! `--target driver`, rules.md "Cluster manager ↔ driver": the suite connects to the driver as a
//! `cluster-manager` (handshake.md §7) and never registers (no RegisterClusterManager), so that
//! a driver that asks a cluster manager for executors before it registered (rule K1) is seen.

use crate::harness::env::Ctx;
use crate::kit::common::wait;
use std::time::Duration;

/// How long the case watches the cluster manager's connection: long enough for a driver that
/// wants executors (its job waits for them) to ask.
pub(crate) fn watch(ctx: &Ctx) -> Duration {
    (ctx.settings.quiet * 4).min(wait(ctx))
}
