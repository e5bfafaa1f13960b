//! What a case is written with: connections and the helpers that play each side of a
//! conversation (a master's workers and clients, a worker's master, a driver's master and
//! executors, an executor's driver). A case imports the kit and the harness, never another case;
//! the kit imports no case and no fault.

pub mod auth;
pub mod client;
pub mod closes;
pub mod common;
pub mod driver;
pub mod executor;
pub mod master;
pub mod own_server;
pub mod ownership;
pub mod replay;
pub mod server;
pub mod spark;
pub mod spawned;
pub mod support;
pub mod versions;
pub mod worker;
