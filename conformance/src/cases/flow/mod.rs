//! The cases of whole conversations, one file per target.

pub mod driver;
pub mod executor;
pub mod master;
pub mod worker;
