//! The cases of SPEC §15, Spark's own wire, one file per section.

pub mod s15_1;
pub mod s15_2;
pub mod s15_6;
