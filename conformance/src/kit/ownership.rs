//! Two workers registered with one master, for the cases about who owns what (SPEC §14.2).

use crate::harness::env::Ctx;
use crate::harness::verdict::Failure;
use crate::kit::master::{worker, FakeWorker};
use sparkwire::messages::Version;

/// Two registered workers, with no capacity, at `version`.
pub async fn two_workers(ctx: &Ctx, version: Version) -> Result<(FakeWorker, FakeWorker), Failure> {
    Ok((
        worker(ctx, "worker-a", 0, 0, version).await?,
        worker(ctx, "worker-b", 0, 0, version).await?,
    ))
}
