//! `--target driver`, SPEC §11: decoding in detail, live, on both of a driver's connections.
//! Every decoder decision of `protocol/vectors/decoder.json` (and every invalid envelope vector
//! of `envelope.json`) that a driver can receive is replayed against a freshly started driver, on
//! a fresh connection, in a message that is otherwise legal on its route and for the role that
//! sends it (SPEC §14.1):
//!
//! - on its application client's connection to its master (the suite plays the master: the
//!   vector comes once the application is registered), the deploy-family vectors a master sends
//!   an application client (ExecutorUpdated with a version 1 field read in version 2, SPEC §11.4)
//!   and the decisions taken before a message is looked at;
//! - on its executor port (the suite plays an executor: a fresh connection of its own), the
//!   coarse-family vectors an executor sends a driver and the same decisions.
//!
//! A valid frame keeps the connection, an invalid one closes it (SPEC §8); where the handshake
//! agreed on `closeReason`, the close envelope names the vector's error (SPEC §8.1).
//!
//! Then SPEC §11.3's "a map inside a map": the one such map a sparkwire endpoint receives is a
//! version 2 StatusUpdate's `resources` (`map<string,map<string,i64>>`, executor → driver; the
//! other, RequestExecutors' `hostToLocalTaskCount`, goes to a cluster manager), sent by a
//! registered executor for the task the driver launched on it.

use crate::harness::env::Ctx;
use crate::harness::peer::frame;
use crate::harness::verdict::fail;
use crate::harness::verdict::Failure;
use crate::kit::driver::executor;
use crate::kit::driver::registered;
use crate::kit::driver::SMALL;
use crate::kit::replay::At;
use sparkwire::messages::coarse::StatusUpdate;
use sparkwire::messages::CoarseMessage;
use sparkwire::messages::TaskState;
use sparkwire::messages::Version;
use sparkwire::wire::encode_envelope;
use sparkwire::wire::handshake::Role;
use sparkwire::wire::Envelope;
use std::collections::BTreeMap;

/// The driver's executor port: what an executor sends a driver.
pub(crate) const EXECUTOR_PORT: At = At {
    family: "coarse",
    role: "driver",
    peers: &[Role::Executor],
};

/// The driver's application client: what a master sends it.
pub(crate) const APP_CLIENT: At = At {
    family: "deploy",
    role: "app-client",
    peers: &[Role::Master],
};

/// The inner map `{"a": 1, "b": 2}` as sparkwire writes it.
pub(crate) const INNER: [u8; 7] = [0x82, 0xa1, b'a', 0x01, 0xa1, b'b', 0x02];

/// The inner map with its keys swapped: `{"b": 2, "a": 1}`.
pub(crate) const INNER_SWAPPED: [u8; 7] = [0x82, 0xa1, b'b', 0x02, 0xa1, b'a', 0x01];

/// A registered executor of a registered driver, the task the driver launched on it, and the
/// frame of its RUNNING StatusUpdate whose resources are `{"gpu": INNER}`, with INNER's bytes
/// replaced by `inner`.
pub(crate) async fn status_with_resources(
    ctx: &Ctx,
    inner: [u8; 7],
) -> Result<
    (
        crate::kit::driver::Registered,
        crate::kit::driver::FakeExecutor,
        Vec<u8>,
    ),
    Failure,
> {
    let d = registered(ctx, SMALL).await?;
    let mut e = executor(ctx, &d, "1", 1, Version::V2).await?;
    e.launched().await?;
    let t = e.task(ctx).await?;
    let mut resources = BTreeMap::new();
    resources.insert(
        "gpu".to_string(),
        BTreeMap::from([("a".to_string(), 1i64), ("b".to_string(), 2i64)]),
    );
    let m = CoarseMessage::StatusUpdate(StatusUpdate::new(
        e.id.clone(),
        t.task_id,
        TaskState::Running,
        Vec::new().into(),
        t.cpus,
        resources,
    ));
    let mut body = Vec::new();
    encode_envelope(&Envelope::Send(m), Version::V2, &mut body)
        .map_err(|er| fail("a StatusUpdate the suite can encode", er.to_string()))?;
    let at = body
        .windows(INNER.len())
        .position(|w| w == INNER)
        .ok_or_else(|| fail("the inner resources map in the encoded frame", "not found"))?;
    body[at..at + INNER.len()].copy_from_slice(&inner);
    Ok((d, e, frame(&body)))
}
