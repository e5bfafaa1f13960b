//! What every message and every family enum offers: its Spark name, the version it appeared in,
//! whether it is local, and its serde form in each version.

use std::fmt::Debug;

use serde::de::DeserializeOwned;
use serde::ser::SerializeMap;
use serde::{Deserializer, Serialize, Serializer};

use super::Version;

/// One message type.
pub trait MessageBody: Serialize + DeserializeOwned + Clone + Debug + PartialEq {
    /// Spark's name for the message, which is also its name on the wire.
    const NAME: &'static str;
    /// The first protocol version that has the message.
    const SINCE: Version;
    /// True for messages Spark only sends inside one process: they never cross a connection.
    const LOCAL: bool;

    /// Serializes the message's fields in the layout of `version` (which must have the message).
    fn serialize_for<S: Serializer>(&self, version: Version, s: S) -> Result<S::Ok, S::Error> {
        let _ = version;
        self.serialize(s)
    }

    /// Deserializes the message's fields from the layout of `version`, filling what an older layout
    /// lacks with the documented defaults.
    fn deserialize_for<'de, D: Deserializer<'de>>(
        version: Version,
        d: D,
    ) -> Result<Self, D::Error> {
        let _ = version;
        Self::deserialize(d)
    }

    /// The value as `version` can carry it: what a round trip through that version gives back.
    fn as_version(&self, version: Version) -> Self {
        let _ = version;
        self.clone()
    }
}

/// A family of messages: one enum holding every message of the family.
pub trait Family: Clone + Debug + PartialEq + Sized {
    /// The family's name in the definition (`deploy` or `coarse`).
    const FAMILY: &'static str;
    /// The Spark names of every message of the family, in definition order.
    const NAMES: &'static [&'static str];

    /// The message's Spark name.
    fn name(&self) -> &'static str;
    /// The first version that has the message.
    fn since(&self) -> Version;
    /// True when the message never crosses a connection.
    fn is_local(&self) -> bool;
    /// Whether `version` has the message.
    fn exists_in(&self, version: Version) -> bool {
        version >= self.since()
    }
    /// The first version that has the message named `name`, if the family has one by that name.
    fn since_of(name: &str) -> Option<Version>;
    /// Whether the message named `name` is local.
    fn is_local_name(name: &str) -> Option<bool>;
    /// Serializes the fields (not the name) in the layout of `version`.
    fn serialize_fields<S: Serializer>(&self, version: Version, s: S) -> Result<S::Ok, S::Error>;
    /// Deserializes the fields of the message named `name` in the layout of `version`; `None` when
    /// the family has no message by that name.
    fn deserialize_fields<'de, D: Deserializer<'de>>(
        name: &str,
        version: Version,
        d: D,
    ) -> Option<Result<Self, D::Error>>;
    /// The value as `version` can carry it.
    fn as_version(&self, version: Version) -> Self;
}

/// A message paired with a version: serializes as `{Name: fields}` in that version's layout.
pub struct Versioned<'a, F>(pub &'a F, pub Version);

impl<F: Family> Serialize for Versioned<'_, F> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        struct Fields<'a, F>(&'a F, Version);
        impl<F: Family> Serialize for Fields<'_, F> {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                self.0.serialize_fields(self.1, s)
            }
        }
        let mut map = s.serialize_map(Some(1))?;
        map.serialize_entry(self.0.name(), &Fields(self.0, self.1))?;
        map.end()
    }
}

/// Declares a family enum over message structs of the same names.
macro_rules! message_family {
    ($(#[$meta:meta])* $family:ident, $fname:literal { $($name:ident),+ $(,)? }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, PartialEq)]
        #[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
        #[allow(clippy::large_enum_variant)]
        #[non_exhaustive]
        pub enum $family {
            $(
                #[doc = concat!("See [`", stringify!($name), "`].")]
                $name($name)
            ),+
        }

        $(
            impl From<$name> for $family {
                fn from(m: $name) -> Self {
                    $family::$name(m)
                }
            }
        )+

        impl $crate::messages::Family for $family {
            const FAMILY: &'static str = $fname;
            const NAMES: &'static [&'static str] = &[$(stringify!($name)),+];

            fn name(&self) -> &'static str {
                match self {
                    $($family::$name(_) => <$name as $crate::messages::MessageBody>::NAME),+
                }
            }

            fn since(&self) -> $crate::messages::Version {
                match self {
                    $($family::$name(_) => <$name as $crate::messages::MessageBody>::SINCE),+
                }
            }

            fn is_local(&self) -> bool {
                match self {
                    $($family::$name(_) => <$name as $crate::messages::MessageBody>::LOCAL),+
                }
            }

            fn since_of(name: &str) -> Option<$crate::messages::Version> {
                match name {
                    $(stringify!($name) => Some(<$name as $crate::messages::MessageBody>::SINCE),)+
                    _ => None,
                }
            }

            fn is_local_name(name: &str) -> Option<bool> {
                match name {
                    $(stringify!($name) => Some(<$name as $crate::messages::MessageBody>::LOCAL),)+
                    _ => None,
                }
            }

            fn serialize_fields<S: serde::Serializer>(
                &self,
                version: $crate::messages::Version,
                s: S,
            ) -> Result<S::Ok, S::Error> {
                match self {
                    $($family::$name(m) => $crate::messages::MessageBody::serialize_for(m, version, s)),+
                }
            }

            fn deserialize_fields<'de, D: serde::Deserializer<'de>>(
                name: &str,
                version: $crate::messages::Version,
                d: D,
            ) -> Option<Result<Self, D::Error>> {
                match name {
                    $(stringify!($name) => Some(
                        <$name as $crate::messages::MessageBody>::deserialize_for(version, d).map($family::$name)
                    ),)+
                    _ => None,
                }
            }

            fn as_version(&self, version: $crate::messages::Version) -> Self {
                match self {
                    $($family::$name(m) => $family::$name($crate::messages::MessageBody::as_version(m, version))),+
                }
            }
        }
    };
}

/// Implements [`MessageBody`] for messages whose layout is the same in every version that has them.
macro_rules! same_layout {
    ($since:ident, $local:literal: $($name:ident),+ $(,)?) => {
        $(
            impl $crate::messages::MessageBody for $name {
                const NAME: &'static str = stringify!($name);
                const SINCE: $crate::messages::Version = $crate::messages::Version::$since;
                const LOCAL: bool = $local;
            }
        )+
    };
}

/// Implements [`MessageBody`] for messages present in V1 with an older layout `$legacy`, which
/// converts from `&$name` (downgrade) and into `$name` (upgrade with defaults).
macro_rules! legacy_layout {
    ($local:literal: $($name:ident => $legacy:ty),+ $(,)?) => {
        $(
            impl $crate::messages::MessageBody for $name {
                const NAME: &'static str = stringify!($name);
                const SINCE: $crate::messages::Version = $crate::messages::Version::V1;
                const LOCAL: bool = $local;

                fn serialize_for<S: serde::Serializer>(
                    &self,
                    version: $crate::messages::Version,
                    s: S,
                ) -> Result<S::Ok, S::Error> {
                    match version {
                        $crate::messages::Version::V1 => serde::Serialize::serialize(&<$legacy>::from(self), s),
                        _ => serde::Serialize::serialize(self, s),
                    }
                }

                fn deserialize_for<'de, D: serde::Deserializer<'de>>(
                    version: $crate::messages::Version,
                    d: D,
                ) -> Result<Self, D::Error> {
                    match version {
                        $crate::messages::Version::V1 => {
                            <$legacy as serde::Deserialize>::deserialize(d).map(Self::from)
                        }
                        _ => <Self as serde::Deserialize>::deserialize(d),
                    }
                }

                fn as_version(&self, version: $crate::messages::Version) -> Self {
                    match version {
                        $crate::messages::Version::V1 => Self::from(<$legacy>::from(self)),
                        _ => self.clone(),
                    }
                }
            }
        )+
    };
}
