//! Layer 1: the typed messages of both families and the types they share. Plain data: no IO.
//!
//! Each message is a struct named as in Spark, gathered in one enum per family:
//! [`DeployMessage`] (Master, Worker, AppClient, DriverClient) and
//! [`CoarseMessage`] (a driver's scheduler backend and its executors).
//! The structs model the newest protocol version; [`legacy`] holds the layouts of older versions and
//! the conversions between them.

/// Declares a wire record: a struct with the derives every wire type has and camelCase field names.
macro_rules! record {
    ($(#[$meta:meta])* pub struct $name:ident { $($body:tt)* }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
        #[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
        #[serde(rename_all = "camelCase")]
        pub struct $name { $($body)* }
    };
}

#[macro_use]
mod family;
pub mod coarse;
pub mod common;
pub mod deploy;
pub mod legacy;
pub mod payload;
mod set;
pub mod states;
pub mod task;

pub use coarse::CoarseMessage;
pub use common::*;
pub use deploy::DeployMessage;
pub use family::{Family, MessageBody, Versioned};
pub use payload::Payload;
pub use states::*;
pub use task::TaskDescription;

use std::fmt;

/// A protocol version. Version 1 is Spark 3.0's message set, version 2 Spark 4.0's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub enum Version {
    /// Spark 3.0's message set.
    V1 = 1,
    /// Spark 4.0's message set.
    V2 = 2,
}

impl Version {
    /// Every version, oldest first.
    pub const ALL: [Version; 2] = [Version::V1, Version::V2];
    /// The newest version, which the Rust types model.
    pub const LATEST: Version = Version::V2;

    /// The version's number on the wire.
    pub fn number(self) -> u8 {
        self as u8
    }

    /// The version with that number, if it exists.
    pub fn from_number(n: u64) -> Option<Version> {
        match n {
            1 => Some(Version::V1),
            2 => Some(Version::V2),
            _ => None,
        }
    }
}

impl fmt::Display for Version {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "v{}", self.number())
    }
}

/// Generates only finite doubles, so that values compare equal to themselves after a round trip.
#[cfg(feature = "arbitrary")]
pub(crate) fn finite_f64(u: &mut arbitrary::Unstructured<'_>) -> arbitrary::Result<f64> {
    let v: f64 = u.arbitrary()?;
    Ok(if v.is_finite() { v } else { 0.0 })
}

/// Reads and writes an `f64` field that must be finite: NaN and the infinities are refused both
/// ways. Spark never builds a resource amount that is not a finite number, and a NaN would not even
/// compare equal to itself after a round trip.
pub(crate) mod finite_f64_field {
    use serde::{de, ser, Deserialize, Deserializer, Serializer};

    pub(crate) fn serialize<S: Serializer>(v: &f64, serializer: S) -> Result<S::Ok, S::Error> {
        if v.is_finite() {
            serializer.serialize_f64(*v)
        } else {
            Err(ser::Error::custom(format_args!(
                "{v} is not a finite number"
            )))
        }
    }

    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<f64, D::Error> {
        let v = f64::deserialize(deserializer)?;
        if v.is_finite() {
            Ok(v)
        } else {
            Err(de::Error::custom(format_args!(
                "{v} is not a finite number"
            )))
        }
    }
}
