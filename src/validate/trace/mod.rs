//! Traces, as `protocol/trace.md` specifies: one event per line in JSON (JSON Lines), or the
//! binary form (length-prefixed MessagePack records carrying each envelope's wire bytes).
//!
//! [`TraceReader`] reads JSON Lines with typed errors naming the line, [`BinaryTraceReader`] the
//! binary form with typed errors naming the record and its byte offset (neither panics on bad
//! input); [`AnyTraceReader`] tells the two apart by the first byte, and [`read_pipelined`] reads
//! on a second thread while the caller validates. [`TraceWriter`] writes either form
//! ([`TraceFormat`]). [`event_to_json`] and [`event_from_json`] convert one event.

mod any;
mod binary;
mod fast;
mod json;
mod reader;
mod writer;

pub use any::{read_pipelined, AnyTraceError, AnyTraceReader, PIPELINE_BATCH};
pub use binary::{
    header as binary_header, write_binary, write_record, BinaryTraceError, BinaryTraceReader,
    FORMAT_VERSION, HEADER_LEN, MAGIC, MAX_RECORD_BYTES,
};
pub use json::{envelope_to_json, event_from_json, event_to_json};
pub use reader::{read_events, TraceReader, MAX_LINE_BYTES};
pub use writer::{to_text, TraceFormat, TraceWriter};

/// What is wrong with one line of a trace.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
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
    /// A binary trace's header is not one this reader reads (magic or format version).
    #[error("bad header: {0}")]
    Header(String),
    /// A binary record declares a length over [`MAX_RECORD_BYTES`].
    #[error("record of {len} bytes declared, longer than the limit of {limit}")]
    RecordTooLong {
        /// The declared length.
        len: u64,
        /// The limit.
        limit: usize,
    },
    /// A binary trace ends inside a header or record.
    #[error("truncated: {needed} bytes needed, {available} left in the input")]
    Truncated {
        /// Bytes the header or record (its length prefix included) needs.
        needed: u64,
        /// Bytes the input still held.
        available: u64,
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
