//! `--target executor`: the suite plays the driver (and the worker) of an executor it starts.

use crate::kit::endpoint::{Endpoint, Reach};
use crate::kit::executor::*;
use sparkwire::wire::handshake::Role;
use std::sync::Arc;

/// The executor as the cases about any client see it.
pub fn client() -> Endpoint {
    Endpoint {
        name: "the executor",
        family: "coarse",
        role: Role::Executor,
        suite_role: Role::Driver,
        other_family_role: Role::Master,
        reach: Reach::Dials(Arc::new(|ctx| Box::pin(start(ctx)))),
        messages: None,
        change: None,
        spark: None,
    }
}

/// How the cases about any client start an executor.
pub fn starter() -> crate::kit::client::Start {
    Arc::new(|ctx| Box::pin(start(ctx)))
}
