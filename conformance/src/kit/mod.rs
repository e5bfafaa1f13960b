//! What a case is written with: connections and the helpers that play each side of a
//! conversation (a master's workers and clients, a worker's master, a driver's master and
//! executors, an executor's driver). A case imports the kit and the harness, never another case;
//! the kit imports no case and no fault.

pub mod common;
pub mod driver;
pub mod executor;
pub mod master;
pub mod spawned;
pub mod worker;
