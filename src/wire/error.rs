//! The wire layer's error: every way a frame can fail to encode or decode.

use crate::messages::Version;

/// A frame or message that could not be encoded or decoded. Each variant names what a person can
/// do about it.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The bytes are not well-formed MessagePack (or use a feature sparkwire does not).
    #[error("invalid MessagePack: {0}")]
    InvalidMessagePack(String),

    /// Arrays and maps nest deeper than the limit.
    #[error("MessagePack nests deeper than {limit} levels; sparkwire frames never need more")]
    TooDeep {
        /// The limit.
        limit: usize,
    },

    /// Bytes follow the frame's one MessagePack value.
    #[error(
        "{extra} byte(s) follow the frame's MessagePack value; a frame holds exactly one value"
    )]
    TrailingBytes {
        /// How many bytes follow.
        extra: usize,
    },

    /// The envelope is not one of the five forms SPEC.md defines.
    #[error("malformed envelope: {0}")]
    BadEnvelope(String),

    /// The message name is not a message of the family.
    #[error("unknown {family} message {name:?}; this peer may speak a newer protocol revision")]
    UnknownMessage {
        /// The family the connection carries.
        family: &'static str,
        /// The name received.
        name: String,
    },

    /// The message exists, but not in the negotiated version.
    #[error("{name} does not exist in protocol {version}; it was added in {since}")]
    NotInVersion {
        /// Message name.
        name: &'static str,
        /// The version in use.
        version: Version,
        /// The first version that has it.
        since: Version,
    },

    /// The message is local: Spark sends it only inside one process.
    #[error("{name} is a local message: it is only sent inside one process and never crosses a connection")]
    LocalMessage {
        /// Message name.
        name: &'static str,
    },

    /// The message's fields do not match its definition.
    #[error("invalid {name} in protocol {version}{}: {detail}", located(at.as_ref()))]
    InvalidFields {
        /// Message (or reply) name.
        name: String,
        /// The version in use.
        version: Version,
        /// What is wrong, from the field decoder.
        detail: String,
        /// Where in the frame, when the bytes were MessagePack (not for the readable JSON forms).
        at: Option<Location>,
    },

    /// A message could not be serialized.
    #[error("cannot encode {name}: {detail}")]
    Encode {
        /// Message name.
        name: String,
        /// What went wrong.
        detail: String,
    },
}

/// Where in a frame a decoder found a field wrong (SPEC §8.2): the path to the offending item (or
/// to the map, struct, union or set holding an offending key or element), relative to the
/// message's fields, the reply's value, the failure's error or the close's reason, and the offset
/// of the offending item's first byte.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Location {
    /// Field names joined by `.`, map keys and array indexes in brackets
    /// (`appDescription.command.environment["PATH"]`, `resourceProfileToTotalExecs[0]`), string
    /// keys quoted with SPEC §8.2's escapes; empty for the value the path starts from (the
    /// fields' map, when a required field is missing at the top, say).
    pub path: String,
    /// The offset, in the frame's body (counted from the first byte after the 4-byte length
    /// prefix), of the first byte of the offending item (SPEC §8.2).
    pub offset: u64,
}

impl std::fmt::Display for Location {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.path.is_empty() {
            write!(f, "byte {}", self.offset)
        } else {
            write!(f, "{} (byte {})", self.path, self.offset)
        }
    }
}

fn located(at: Option<&Location>) -> String {
    match at {
        Some(at) => format!(" at {at}"),
        None => String::new(),
    }
}
