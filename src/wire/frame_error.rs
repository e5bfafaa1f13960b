//! The codec layer's error: a frame that cannot be read or written, over and above the envelope
//! errors of [`Error`].

use std::io;

use super::error::Error;
use super::limits::LimitSetting;
use super::FRAME_HEADER_LEN;

/// Whether a length prefix is the ASCII text `HTTP`: the peer is an HTTP server answering (a web
/// UI, say), not a sparkwire endpoint.
pub fn prefix_is_http(declared: u64) -> bool {
    u32::try_from(declared).is_ok_and(|d| &d.to_be_bytes() == b"HTTP")
}

fn http_hint(declared: u64) -> &'static str {
    if prefix_is_http(declared) {
        " (its 4 bytes read \"HTTP\": the peer is an HTTP server, not a sparkwire endpoint)"
    } else {
        ""
    }
}

/// A frame that could not be read from or written to a byte stream.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum FrameError {
    /// The peer's length prefix declares a frame over the limit. Refused as soon as the 4-byte
    /// prefix arrived: none of the body was read or buffered.
    #[error(
        "the peer declared a frame of {declared} bytes, over the limit of {limit} bytes set by \
         {setting}; it was refused before any of its body was read{}",
        http_hint(*declared)
    )]
    DeclaredTooLarge {
        /// The length the prefix declares.
        declared: u64,
        /// The limit in force, in bytes.
        limit: usize,
        /// The setting that controls the limit.
        setting: LimitSetting,
    },

    /// A frame to send would be over the limit. Refused before any byte of it was written.
    #[error(
        "{name} encodes to a frame of {size} bytes, over the limit of {limit} bytes set by \
         {setting}; nothing was sent"
    )]
    EncodedTooLarge {
        /// What the frame carries: a message name, `reply` or `failure`.
        name: &'static str,
        /// The encoded frame body's size, in bytes.
        size: u64,
        /// The limit in force, in bytes.
        limit: usize,
        /// The setting that controls the limit.
        setting: LimitSetting,
    },

    /// The stream ended inside a frame.
    #[error("{}", truncated_text(*declared, *received))]
    Truncated {
        /// The body length the frame declared; `None` when the stream ended inside the 4-byte
        /// length prefix.
        declared: Option<u64>,
        /// Bytes of the body (or of the prefix, when `declared` is `None`) that did arrive.
        received: usize,
    },

    /// The frame arrived whole but its envelope is invalid (bad MessagePack, unknown message,
    /// message absent from the negotiated version, local message, …), or a message cannot be
    /// sent in the negotiated version.
    #[error(transparent)]
    Envelope(#[from] Error),

    /// The byte stream failed.
    #[error("I/O error ({kind:?}): {message}")]
    Io {
        /// The kind of I/O error.
        kind: io::ErrorKind,
        /// Its text.
        message: String,
    },
}

fn truncated_text(declared: Option<u64>, received: usize) -> String {
    match declared {
        Some(declared) => format!(
            "the stream ended inside a frame: {received} of its {declared} body bytes arrived"
        ),
        None => format!(
            "the stream ended inside a frame's length prefix: {received} of {FRAME_HEADER_LEN} bytes arrived"
        ),
    }
}

impl From<io::Error> for FrameError {
    fn from(e: io::Error) -> Self {
        FrameError::Io {
            kind: e.kind(),
            message: e.to_string(),
        }
    }
}

#[cfg(test)]
mod http_tests {
    use super::*;

    #[test]
    fn a_length_prefix_reading_http_is_named_as_an_http_server() {
        let declared = u64::from(u32::from_be_bytes(*b"HTTP"));
        assert!(prefix_is_http(declared));
        assert!(!prefix_is_http(declared + 1));
        let e = FrameError::DeclaredTooLarge {
            declared,
            limit: 65536,
            setting: LimitSetting::Handshake,
        };
        assert!(e.to_string().contains("the peer is an HTTP server"), "{e}");
    }
}
