//! The reference Master.

pub mod schedule;
