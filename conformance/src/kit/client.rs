//! An endpoint that dials the suite (a worker, driver or executor it starts), as the cases about
//! any client see it.

use crate::harness::env::Ctx;
use crate::harness::peer::Conn;
use crate::harness::verdict::Failure;
use crate::kit::spawned::Run;
use sparkwire::wire::handshake::Role;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

/// Starts the endpoint and accepts its first connection (nothing read yet).
pub type Start = Arc<
    dyn Fn(Ctx) -> Pin<Box<dyn Future<Output = Result<(Run, Conn), Failure>> + Send>> + Send + Sync,
>;

/// A connecting endpoint as the shared cases see it.
#[derive(Clone)]
pub struct Client {
    /// How to start it.
    pub start: Start,
    /// What it is, in requirement texts.
    pub name: &'static str,
    /// The role its hello must declare.
    pub role: Role,
    /// The role the suite declares in its answer.
    pub server_role: Role,
    /// A role of the other family, for the answer that a client SHOULD refuse.
    pub other_family_role: Role,
}
