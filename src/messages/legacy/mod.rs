//! The layouts of protocol version 1 (Spark 3.0) where they differ from version 2 (Spark 4.0), with
//! the conversions both ways. A downgrade (`From<&New> for Old`) drops or folds what version 1
//! cannot carry; an upgrade (`From<Old> for New`) fills what version 1 lacks with the defaults that
//! `protocol/SPEC.md` documents. Every rule here is listed there under "Version 1 layouts".

pub(crate) mod coarse;
pub(crate) mod common;
pub(crate) mod deploy;

/// An `i64` narrowed to `i32`, saturating.
fn narrow(v: i64) -> i32 {
    i32::try_from(v).unwrap_or(if v < 0 { i32::MIN } else { i32::MAX })
}

/// One whole unit of a resource in Spark 4.0's task resource amounts (`ONE_ENTIRE_RESOURCE`).
pub const ONE_ENTIRE_RESOURCE: i64 = 10_000_000_000_000_000;
