//! The cases of the routes of definition.json, one file per family.

pub mod coarse;
pub mod deploy;
