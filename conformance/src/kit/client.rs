//! An endpoint that dials the suite (a worker, driver or executor it starts), as the cases about
//! any client see it.

use crate::harness::env::Ctx;
use crate::harness::peer::Conn;
use crate::harness::verdict::Failure;
use crate::kit::spawned::Run;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

/// Starts the endpoint and accepts its first connection (nothing read yet).
pub type Start = Arc<
    dyn Fn(Ctx) -> Pin<Box<dyn Future<Output = Result<(Run, Conn), Failure>> + Send>> + Send + Sync,
>;
