//! Reading a trace line by line.

use std::io::{BufRead, Read};

use super::json::event_from_json;
use super::{TraceError, TraceErrorKind};
use crate::validate::event::Event;

/// Longest line read (64 MiB): longer lines are refused rather than buffered.
pub const MAX_LINE_BYTES: usize = 64 << 20;

/// Reads events from a trace, one per line; blank lines are skipped. An iterator of results: each
/// bad line is one error naming it, and reading may go on after it.
///
/// ```
/// use sparkwire::validate::trace::TraceReader;
/// use sparkwire::validate::{Config, Validator};
///
/// let path = concat!(env!("CARGO_MANIFEST_DIR"), "/protocol/traces/legal-flow.jsonl");
/// let file = std::io::BufReader::new(std::fs::File::open(path).expect("the trace"));
/// let mut validator = Validator::new(Config::sparkwire());
/// let mut violations = Vec::new();
/// for event in TraceReader::new(file) {
///     violations.extend(validator.observe(&event.expect("a valid line")));
/// }
/// violations.extend(validator.finish());
/// assert!(validator.events() > 0);
/// assert!(violations.is_empty(), "{violations:?}");
/// ```
#[derive(Debug)]
pub struct TraceReader<R> {
    input: R,
    line: usize,
    buf: Vec<u8>,
    done: bool,
}

impl<R: BufRead> TraceReader<R> {
    /// A reader of `input`.
    pub fn new(input: R) -> Self {
        TraceReader {
            input,
            line: 0,
            buf: Vec::new(),
            done: false,
        }
    }

    /// The number of the last line read (from 1).
    pub fn line(&self) -> usize {
        self.line
    }

    /// Reads the next line into `buf`; `false` at the end. Skips over the rest of a long line.
    fn next_line(&mut self) -> Result<bool, TraceErrorKind> {
        self.buf.clear();
        let limit = MAX_LINE_BYTES as u64 + 1;
        let n = (&mut self.input)
            .take(limit)
            .read_until(b'\n', &mut self.buf)
            .map_err(|e| TraceErrorKind::Io(e.to_string()))?;
        if n == 0 {
            return Ok(false);
        }
        self.line += 1;
        if self.buf.len() > MAX_LINE_BYTES && self.buf.last() != Some(&b'\n') {
            let mut sink = Vec::new();
            loop {
                sink.clear();
                let m = (&mut self.input)
                    .take(1 << 20)
                    .read_until(b'\n', &mut sink)
                    .map_err(|e| TraceErrorKind::Io(e.to_string()))?;
                if m == 0 || sink.last() == Some(&b'\n') {
                    break;
                }
            }
            return Err(TraceErrorKind::TooLong {
                limit: MAX_LINE_BYTES,
            });
        }
        Ok(true)
    }
}

impl<R: BufRead> Iterator for TraceReader<R> {
    type Item = Result<Event, TraceError>;

    fn next(&mut self) -> Option<Self::Item> {
        while !self.done {
            match self.next_line() {
                Ok(false) => self.done = true,
                Ok(true) => {
                    let text = self.buf.trim_ascii();
                    if text.is_empty() {
                        continue;
                    }
                    // Most lines read in one pass; the rest (and every bad line, for its
                    // error) through a JSON tree.
                    let parsed = match super::fast::event_from_line(text) {
                        Some(event) => Ok(event),
                        None => serde_json::from_slice::<serde_json::Value>(text)
                            .map_err(|e| TraceErrorKind::Json(e.to_string()))
                            .and_then(|v| event_from_json(&v)),
                    };
                    return Some(parsed.map_err(|kind| TraceError {
                        line: self.line,
                        kind,
                    }));
                }
                Err(kind) => {
                    if matches!(kind, TraceErrorKind::Io(_)) {
                        self.done = true;
                    }
                    return Some(Err(TraceError {
                        line: self.line.max(1),
                        kind,
                    }));
                }
            }
        }
        None
    }
}

/// Every event of a trace held in memory, or the first error.
pub fn read_events(text: &str) -> Result<Vec<Event>, TraceError> {
    TraceReader::new(text.as_bytes()).collect()
}
