//! Layer 1: the typed messages of both families and the types they share. Plain data: no IO.
//!
//! Each message is a struct named as in Spark, gathered in one enum per family:
//! [`DeployMessage`] (Master, Worker, AppClient, DriverClient) and
//! [`CoarseMessage`] (a driver's scheduler backend and its executors).
//! The structs model the newest protocol version; [`legacy`] holds the layouts of older versions and
//! the conversions between them.
//!
//! # Building and matching messages
//!
//! A revision of the protocol may add optional fields to any message or shared struct (SPEC §7), and
//! a new version may add messages and enum values. So that such a change is not a breaking change of
//! this crate, every message struct and every struct a message carries ([`EndpointRef`], [`Addr`],
//! [`ApplicationDescription`], [`TaskDescription`], …) is `#[non_exhaustive]`: its fields are `pub`
//! for reading, but outside sparkwire it is built with
//!
//! - `new(…)`, taking every field that is not an `Option` (the fields no version-2 message may
//!   omit), in declaration order, with every `Option` field `None`;
//! - `with_<field>(value)`, one setter per field, taking the field's own type;
//! - `Default`, for a struct whose fields are all optional (a message without fields, such as
//!   [`RequestMasterState`](deploy::RequestMasterState)), equal to `new()`.
//!
//! A field that a revision adds is an `Option`, so it changes neither `new` nor an existing setter.
//! Struct patterns outside sparkwire end in `..`.
//!
//! These enums are `#[non_exhaustive]` and need a wildcard arm in a `match` outside sparkwire:
//! the families [`DeployMessage`] and [`CoarseMessage`] (a version may add messages), [`Version`],
//! Spark's states ([`ExecutorState`], [`TaskState`], [`DriverState`], [`ApplicationState`],
//! [`WorkerState`], [`RecoveryState`]: a version may add values) and [`ExecutorLossReason`], whose
//! variants are non-exhaustive too and are built with one constructor each
//! ([`ExecutorLossReason::executor_exited`], …).
//!
//! ```
//! use sparkwire::messages::deploy::{ExecutorStateChanged, RegisterWorker, RequestMasterState};
//! use sparkwire::messages::{Addr, DeployMessage, EndpointRef, ExecutorState, Family, Resources};
//!
//! let worker = EndpointRef::at(Addr::new("10.0.0.7", 35001), "Worker");
//! let register = RegisterWorker::new(
//!     "worker-20250101120000-10.0.0.7-35001".to_string(),
//!     "10.0.0.7".to_string(),
//!     35001,
//!     worker,
//!     8,
//!     16384,
//!     "http://10.0.0.7:8081".to_string(),
//!     Addr::new("10.0.0.1", 7077),
//!     Resources::new(),
//! )
//! .with_cores(4);
//! assert_eq!(register.cores, 4);
//!
//! let changed = ExecutorStateChanged::new("app-1".to_string(), 0, ExecutorState::Exited)
//!     .with_exit_status(Some(0))
//!     .with_message(Some("Command exited with code 0".to_string()));
//! assert_eq!(changed.message.as_deref(), Some("Command exited with code 0"));
//! assert_eq!(RequestMasterState::default(), RequestMasterState::new());
//!
//! fn describe(m: &DeployMessage) -> String {
//!     match m {
//!         DeployMessage::RegisterWorker(RegisterWorker { id, cores, .. }) => {
//!             format!("{id} offers {cores} cores")
//!         }
//!         DeployMessage::ExecutorStateChanged(c) => match c.state {
//!             ExecutorState::Running => "running".to_string(),
//!             state if state.is_finished() => format!("finished ({state})"),
//!             _ => "other executor state".to_string(),
//!         },
//!         other => other.name().to_string(),
//!     }
//! }
//! assert_eq!(describe(&register.into()), "worker-20250101120000-10.0.0.7-35001 offers 4 cores");
//! assert_eq!(describe(&changed.into()), "finished (EXITED)");
//! ```

/// Declares a wire record: a `#[non_exhaustive]` struct with the derives every wire type has,
/// camelCase field names, a constructor and a setter per field.
///
/// Each field is written `pub name: Type => with_name,`: the setter's name is spelled out (a
/// `macro_rules!` macro cannot build identifiers) and checked at compile time to be `with_` and the
/// field's name. The generated `new` takes every field whose type is not `Option<…>`, in declaration
/// order, and leaves every `Option` field `None`; a record whose fields are all optional also gets a
/// `Default` equal to `new()`. `@custom_new` before the struct skips `new` for a record that writes
/// its own with the same parameters.
macro_rules! record {
    (@custom_new $(#[$meta:meta])* pub struct $name:ident { $($body:tt)* }) => {
        record!(@field [$(#[$meta])*] $name, false [] [] [] $($body)*);
    };
    ($(#[$meta:meta])* pub struct $name:ident { $($body:tt)* }) => {
        record!(@field [$(#[$meta])*] $name, true [] [] [] $($body)*);
    };
    // One field per step, sorted into required ones and optional ones, all kept in order.
    (@field $meta:tt $name:ident, $new:tt [$($req:tt)*] [$($opt:tt)*] [$($all:tt)*]
        $(#[$fm:meta])* pub $f:ident : Option<$t:ty> => $s:ident, $($rest:tt)*) => {
        record!(@field $meta $name, $new [$($req)*] [$($opt)* $f] [$($all)* { $(#[$fm])* $f: Option<$t> => $s }] $($rest)*);
    };
    (@field $meta:tt $name:ident, $new:tt [$($req:tt)*] [$($opt:tt)*] [$($all:tt)*]
        $(#[$fm:meta])* pub $f:ident : $t:ty => $s:ident, $($rest:tt)*) => {
        record!(@field $meta $name, $new [$($req)* { $f: $t }] [$($opt)*] [$($all)* { $(#[$fm])* $f: $t => $s }] $($rest)*);
    };
    (@field [$(#[$meta:meta])*] $name:ident, $new:tt [$({ $rf:ident : $rt:ty })*] [$($of:ident)*]
        [$({ $(#[$fm:meta])* $f:ident : $t:ty => $s:ident })*]) => {
        $(#[$meta])*
        #[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
        #[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
        #[serde(rename_all = "camelCase")]
        #[non_exhaustive]
        pub struct $name { $($(#[$fm])* pub $f: $t,)* }

        impl $name {
            record!(@new $new $name [$($rf: $rt),*] [$($of)*]);
            $(
                #[doc = concat!("Sets [`", stringify!($f), "`](Self::", stringify!($f), ").")]
                #[must_use]
                pub fn $s(mut self, value: $t) -> Self {
                    const _: () = assert!(
                        $crate::messages::is_setter_of(stringify!($s), stringify!($f)),
                        concat!("the setter of `", stringify!($f), "` must be `with_", stringify!($f), "`"),
                    );
                    self.$f = value;
                    self
                }
            )*
        }
        record!(@default $name [$($rf)*]);
    };
    (@new true $name:ident [$($rf:ident : $rt:ty),*] [$($of:ident)*]) => {
        #[doc = concat!(
            "A `", stringify!($name), "` from its required fields (those that are not `Option`), ",
            "in declaration order; every optional field is `None`."
        )]
        #[allow(clippy::too_many_arguments)]
        #[must_use]
        pub fn new($($rf: $rt),*) -> Self {
            $name { $($rf,)* $($of: None,)* }
        }
    };
    (@new false $($rest:tt)*) => {};
    (@default $name:ident []) => {
        impl Default for $name {
            fn default() -> Self {
                $name::new()
            }
        }
    };
    (@default $name:ident [$($rf:ident)+]) => {};
}

/// Whether `setter` is `with_` followed by `field` (checked at compile time by [`record!`]).
pub(crate) const fn is_setter_of(setter: &str, field: &str) -> bool {
    let (s, f) = (setter.as_bytes(), field.as_bytes());
    const PREFIX: &[u8] = b"with_";
    if s.len() != PREFIX.len() + f.len() {
        return false;
    }
    let mut i = 0;
    while i < s.len() {
        let want = if i < PREFIX.len() {
            PREFIX[i]
        } else {
            f[i - PREFIX.len()]
        };
        if s[i] != want {
            return false;
        }
        i += 1;
    }
    true
}

// Each type has one public path. The files that implement the shared types are private and their
// items are re-exported here; `deploy`, `coarse` and `legacy` are public namespaces (both families
// have a `KillExecutors` and a `RequestExecutors`) whose items are not re-exported here, and the
// family enums are defined in private modules of theirs and re-exported here only.
#[macro_use]
mod family;
pub mod coarse;
mod common;
pub mod deploy;
pub mod legacy;
mod payload;
mod set;
mod states;
mod task;

pub use coarse::family::CoarseMessage;
pub use common::*;
pub use deploy::family::DeployMessage;
pub use family::{Family, MessageBody, Versioned};
pub use payload::{from_hex, to_hex, with_source_frame, Payload};
pub use states::*;
pub use task::TaskDescription;

use std::fmt;

/// A protocol version. Version 1 is Spark 3.0's message set, version 2 Spark 4.0's.
///
/// `#[non_exhaustive]`: a release of sparkwire may add a version.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
#[non_exhaustive]
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
