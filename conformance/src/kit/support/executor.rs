//! `--target executor`: the suite plays the driver (and the worker) of an executor it starts.

use crate::kit::client::Client;
use crate::kit::executor::*;
use sparkwire::wire::handshake::Role;
use std::sync::Arc;

/// The executor as the cases about any client see it.
pub fn client() -> Client {
    Client {
        start: Arc::new(|ctx| Box::pin(start(ctx))),
        name: "the executor",
        role: Role::Executor,
        server_role: Role::Driver,
        other_family_role: Role::Master,
    }
}

/// How the cases about any client start an executor.
pub fn starter() -> crate::kit::client::Start {
    Arc::new(|ctx| Box::pin(start(ctx)))
}
