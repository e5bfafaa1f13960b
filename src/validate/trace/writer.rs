//! Writing a trace.

use std::io::{self, Write};
use std::path::Path;

use super::binary::{header, write_record};
use super::json::event_to_json;
use crate::validate::event::Event;

/// The two forms of a trace (`protocol/trace.md`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum TraceFormat {
    /// JSON Lines: one JSON object per line.
    #[default]
    JsonLines,
    /// The binary form: length-prefixed MessagePack records holding each envelope's wire bytes.
    Binary,
}

impl TraceFormat {
    /// The file name extension that selects the binary form when a trace is written.
    pub const BINARY_EXTENSION: &'static str = "swtrace";

    /// The form a trace written to `path` takes: binary when its extension is
    /// [`BINARY_EXTENSION`](Self::BINARY_EXTENSION) (`.swtrace`), else JSON Lines.
    ///
    /// ```
    /// use sparkwire::validate::trace::TraceFormat;
    /// assert_eq!(TraceFormat::for_path("run.swtrace".as_ref()), TraceFormat::Binary);
    /// assert_eq!(TraceFormat::for_path("run.jsonl".as_ref()), TraceFormat::JsonLines);
    /// ```
    pub fn for_path(path: &Path) -> TraceFormat {
        match path.extension() {
            Some(e) if e == Self::BINARY_EXTENSION => TraceFormat::Binary,
            _ => TraceFormat::JsonLines,
        }
    }

    /// The form named `json` or `binary`.
    pub fn from_name(name: &str) -> Option<TraceFormat> {
        match name {
            "json" => Some(TraceFormat::JsonLines),
            "binary" => Some(TraceFormat::Binary),
            _ => None,
        }
    }
}

/// Writes events as a trace: JSON Lines (by default), or the binary form.
#[derive(Debug)]
pub struct TraceWriter<W> {
    out: W,
    format: TraceFormat,
    /// Whether the binary header is written.
    started: bool,
    record: Vec<u8>,
    scratch: Vec<u8>,
}

impl<W: Write> TraceWriter<W> {
    /// A writer of JSON Lines to `out`.
    pub fn new(out: W) -> Self {
        TraceWriter::with_format(out, TraceFormat::JsonLines)
    }

    /// A writer of `format` to `out`. A binary trace's header is written with the first event,
    /// or by [`into_inner`](Self::into_inner) when there is none.
    pub fn with_format(out: W, format: TraceFormat) -> Self {
        TraceWriter {
            out,
            format,
            started: false,
            record: Vec::new(),
            scratch: Vec::new(),
        }
    }

    /// The form written.
    pub fn format(&self) -> TraceFormat {
        self.format
    }

    fn start(&mut self) -> io::Result<()> {
        if !self.started && self.format == TraceFormat::Binary {
            self.out.write_all(&header())?;
        }
        self.started = true;
        Ok(())
    }

    /// Writes one event as one line (or record).
    pub fn write(&mut self, event: &Event) -> io::Result<()> {
        self.start()?;
        match self.format {
            TraceFormat::JsonLines => {
                let value = event_to_json(event).map_err(io::Error::other)?;
                serde_json::to_writer(&mut self.out, &value).map_err(io::Error::other)?;
                self.out.write_all(b"\n")
            }
            TraceFormat::Binary => {
                self.record.clear();
                write_record(event, &mut self.record, &mut self.scratch)?;
                self.out.write_all(&self.record)
            }
        }
    }

    /// Flushes the output (a binary trace's header included, when no event is written yet).
    pub fn flush(&mut self) -> io::Result<()> {
        self.start()?;
        self.out.flush()
    }

    /// Flushes and returns the output.
    pub fn into_inner(mut self) -> io::Result<W> {
        self.start()?;
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
