//! Traces: one event per line, in JSON (JSON Lines), as `protocol/trace.md` specifies.
//!
//! [`TraceReader`] reads them with typed errors naming the line (it never panics on bad input);
//! [`TraceWriter`] writes them. [`event_to_json`] and [`event_from_json`] convert one event.

mod fast;
mod json;
mod reader;
mod writer;

pub use json::{event_from_json, event_to_json};
pub use reader::{read_events, TraceReader, MAX_LINE_BYTES};
pub use writer::{to_text, TraceWriter};

/// What is wrong with one line of a trace.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum TraceErrorKind {
    /// The line could not be read.
    #[error("cannot read: {0}")]
    Io(String),
    /// The line is longer than [`MAX_LINE_BYTES`].
    #[error("line longer than {limit} bytes")]
    TooLong {
        /// The limit.
        limit: usize,
    },
    /// The line is not UTF-8 JSON.
    #[error("not JSON: {0}")]
    Json(String),
    /// A required field is absent.
    #[error("missing field {0:?}")]
    Missing(&'static str),
    /// A field has the wrong type or value.
    #[error("field {field:?}: {problem}")]
    Invalid {
        /// The field.
        field: &'static str,
        /// What is wrong.
        problem: String,
    },
    /// The message (or reply) does not decode.
    #[error("bad message: {0}")]
    Message(#[from] crate::wire::Error),
}

/// A line of a trace that could not be read, with its 1-based line number.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("line {line}: {kind}")]
pub struct TraceError {
    /// Line number, from 1.
    pub line: usize,
    /// What is wrong.
    pub kind: TraceErrorKind,
}
