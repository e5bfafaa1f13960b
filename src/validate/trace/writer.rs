//! Writing a trace.

use std::io::{self, Write};

use super::json::event_to_json;
use crate::validate::event::Event;

/// Writes events as JSON Lines.
#[derive(Debug)]
pub struct TraceWriter<W> {
    out: W,
}

impl<W: Write> TraceWriter<W> {
    /// A writer to `out`.
    pub fn new(out: W) -> Self {
        TraceWriter { out }
    }

    /// Writes one event as one line.
    pub fn write(&mut self, event: &Event) -> io::Result<()> {
        let value = event_to_json(event).map_err(io::Error::other)?;
        serde_json::to_writer(&mut self.out, &value).map_err(io::Error::other)?;
        self.out.write_all(b"\n")
    }

    /// Flushes and returns the output.
    pub fn into_inner(mut self) -> io::Result<W> {
        self.out.flush()?;
        Ok(self.out)
    }
}

/// The trace text of `events`.
pub fn to_text(events: &[Event]) -> io::Result<String> {
    let mut w = TraceWriter::new(Vec::new());
    for e in events {
        w.write(e)?;
    }
    String::from_utf8(w.into_inner()?).map_err(io::Error::other)
}
