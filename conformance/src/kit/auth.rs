//! An endpoint that holds a shared secret, as the authentication cases see it: how to open an
//! authenticated connection to it and what shows that a message changed its state.

use crate::harness::env::Ctx;
use crate::harness::verdict::Failure;
use crate::kit::server::Listening;
use sparkwire::wire::handshake::{Role, Secret};
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;

use sparkwire::messages::Version;

use crate::harness::peer::Conn;
use crate::kit::common::wait;

/// Whether the change a [`Guarded`] endpoint was sent shows in its state (asked over an
/// authenticated connection).
pub type Seen =
    Arc<dyn Fn() -> Pin<Box<dyn Future<Output = Result<bool, Failure>> + Send>> + Send + Sync>;

/// An endpoint holding the secret, listening for the suite, and a change of its state to try.
pub struct Guarded {
    /// Where it listens, and what keeps it running.
    pub at: Listening,
    /// A client role it takes the change from.
    pub role: Role,
    /// The envelope (frame body) that changes its state when a peer of `role` that proved the
    /// secret sends it.
    pub change: Vec<u8>,
    /// Whether the change happened.
    pub seen: Seen,
}

/// Opens a fresh [`Guarded`] endpoint for a case (with a change unique to it).
pub type OpenGuarded = Arc<
    dyn Fn(Ctx) -> Pin<Box<dyn Future<Output = Result<Guarded, Failure>> + Send>> + Send + Sync,
>;

/// The endpoint's secret, or `Skipped` when the suite was not given it.
pub fn secret(ctx: &Ctx) -> Result<Secret, Failure> {
    ctx.settings.secret.clone().ok_or_else(|| {
        Failure::Skipped(
            "the suite does not know the endpoint's shared secret: give --secret-file PATH (the \
             endpoint's, which must be configured with it) to run the authentication cases"
                .into(),
        )
    })
}

/// A connection to `addr` as `role`, authenticated with the endpoint's secret, at version 2: how
/// a [`Seen`] asks the endpoint its state.
pub async fn open_secured(
    ctx: &Ctx,
    addr: SocketAddr,
    role: Role,
    id: &str,
) -> Result<Conn, Failure> {
    let k = secret(ctx)?;
    Conn::open_authenticated(
        addr,
        "probe",
        role,
        id,
        &[Version::V2],
        &k,
        &ctx.log,
        wait(ctx),
    )
    .await
}
