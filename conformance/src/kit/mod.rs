//! What a case is written with: connections and the helpers that play each side of a
//! conversation (a master's workers and clients, a worker's master, a driver's master and
//! executors, an executor's driver). A case imports the kit and the harness, never another case;
//! the kit imports no case and no fault.
//!
//! The endpoint under test is one type, [`endpoint::Endpoint`]: what it is, how the suite reaches
//! it (it listens, it dials, it holds a secret), the roles of each side and what the cases send
//! it; `support::{master, worker, driver, executor, auth}` describe each target's.

pub mod auth;
pub mod client;
pub mod closes;
pub mod common;
pub mod driver;
pub mod endpoint;
pub mod executor;
pub mod master;
pub mod own_server;
pub mod ownership;
pub mod replay;
pub mod server;
pub mod spark_auth;
pub mod spawned;
pub mod support;
pub mod versions;
pub mod worker;
