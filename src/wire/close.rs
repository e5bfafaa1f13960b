//! The close envelope's content (SPEC §8.1): why an endpoint closes a connection, sent as its last
//! frame when the handshake agreed on the `closeReason` feature (protocol/handshake.md §12).

use serde::{Deserialize, Serialize};

use super::error::{Error, Location};
use super::frame_error::FrameError;

/// Why an endpoint closes a connection: the error kind, a message for a person and, for a decoding
/// error, where in the frame it went wrong.
///
/// The kinds are the names of SPEC §8.1 ([`CloseReason::kind`]): the decoding errors of §8
/// (`InvalidFields`, …), `FrameTooLarge`, the ask errors (`UnknownAsk`, `DuplicateReply`,
/// `DuplicateAsk`), the refusals of §14.3 (`NotOnRoute`, `NotOwner`), `RuleViolation` (strict
/// validation) and the limits (`SlowConsumer`, `TooManyAsks`, `InboundOverflow`, `FrameTimedOut`,
/// `Idle`). A receiver takes a kind it does not know as it is: later revisions may add kinds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
#[serde(rename_all = "camelCase")]
#[error("{kind}: {message}{}", at(path.as_deref(), *offset))]
pub struct CloseReason {
    /// The error kind (SPEC §8.1).
    pub kind: String,
    /// What went wrong, for a person.
    pub message: String,
    /// For a decoding error: the path to the field that was wrong, inside the message's fields
    /// (`appDescription.command.environment["PATH"]`; empty for the field map itself).
    #[serde(default)]
    pub path: Option<String>,
    /// For a decoding error: the byte offset in the offending frame's body (after its length
    /// prefix) of the offending item's first byte (SPEC §8.2).
    #[serde(default)]
    pub offset: Option<u64>,
}

fn at(path: Option<&str>, offset: Option<u64>) -> String {
    match (path, offset) {
        (Some(path), Some(offset)) if !path.is_empty() => format!(" (at {path}, byte {offset})"),
        (Some(path), None) if !path.is_empty() => format!(" (at {path})"),
        (_, Some(offset)) => format!(" (at byte {offset})"),
        _ => String::new(),
    }
}

impl CloseReason {
    /// A reason without a location.
    pub fn new(kind: impl Into<String>, message: impl Into<String>) -> Self {
        CloseReason {
            kind: kind.into(),
            message: message.into(),
            path: None,
            offset: None,
        }
    }

    /// The same reason, located at `at`.
    pub fn at(mut self, at: &Location) -> Self {
        self.path = Some(at.path.clone());
        self.offset = Some(at.offset);
        self
    }

    /// The reason for a frame that could not be decoded: its error kind (SPEC §8, as the vectors
    /// name it), the error's text, and for `InvalidFields` its location.
    pub fn decoding(error: &Error) -> Self {
        let reason = CloseReason::new(error_kind(error), error.to_string());
        match error {
            Error::InvalidFields { at: Some(at), .. } => reason.at(at),
            _ => reason,
        }
    }

    /// The reason for a frame the codec refused; `None` for the ends of a stream (the peer has
    /// gone: nothing can be told) and for I/O errors.
    pub fn frame(error: &FrameError) -> Option<Self> {
        match error {
            FrameError::DeclaredTooLarge { .. } | FrameError::EncodedTooLarge { .. } => {
                Some(CloseReason::new("FrameTooLarge", error.to_string()))
            }
            FrameError::Envelope(e) => Some(CloseReason::decoding(e)),
            FrameError::Truncated { .. } | FrameError::Io { .. } => None,
        }
    }
}

/// The name of a decoding error's kind, as SPEC §8 and the vectors name it.
pub fn error_kind(e: &Error) -> &'static str {
    match e {
        Error::InvalidMessagePack(_) => "InvalidMessagePack",
        Error::TooDeep { .. } => "TooDeep",
        Error::TrailingBytes { .. } => "TrailingBytes",
        Error::BadEnvelope(_) => "BadEnvelope",
        Error::UnknownMessage { .. } => "UnknownMessage",
        Error::NotInVersion { .. } => "NotInVersion",
        Error::LocalMessage { .. } => "LocalMessage",
        Error::InvalidFields { .. } => "InvalidFields",
        Error::Encode { .. } => "Encode",
    }
}
