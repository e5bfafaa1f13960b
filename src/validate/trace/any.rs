//! Reading a trace of either form, told apart by its first byte, and reading it on a second
//! thread while the caller validates.

use std::io::BufRead;
use std::sync::mpsc;

use super::binary::{BinaryTraceError, BinaryTraceReader, MAGIC};
use super::reader::TraceReader;
use super::TraceError;
use crate::validate::event::Event;

/// A trace that could not be read, in either form.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum AnyTraceError {
    /// A line of a JSON Lines trace.
    #[error(transparent)]
    Lines(#[from] TraceError),
    /// A record of a binary trace.
    #[error(transparent)]
    Binary(#[from] BinaryTraceError),
}

/// Reads a trace of either form: binary when its first byte is the binary magic's (0xC1, which
/// no JSON text starts with), else JSON Lines, read exactly as [`TraceReader`] reads it.
///
/// ```
/// use sparkwire::validate::trace::{read_events, write_binary, AnyTraceReader};
///
/// let path = concat!(env!("CARGO_MANIFEST_DIR"), "/protocol/traces/legal-flow.jsonl");
/// let text = std::fs::read_to_string(path).expect("the trace");
/// let events = read_events(&text).expect("reads");
/// let binary = write_binary(&events).expect("writes");
/// for input in [text.as_bytes(), binary.as_slice()] {
///     let back: Result<Vec<_>, _> = AnyTraceReader::new(input).collect();
///     assert_eq!(back.expect("reads"), events);
/// }
/// ```
#[derive(Debug)]
pub enum AnyTraceReader<R> {
    /// JSON Lines.
    Lines(TraceReader<R>),
    /// The binary form.
    Binary(BinaryTraceReader<R>),
}

impl<R: BufRead> AnyTraceReader<R> {
    /// A reader of `input`, whose form is told from its first byte. When the input cannot be
    /// peeked at, it is read as JSON Lines, whose reader then reports the error for line 1.
    pub fn new(mut input: R) -> Self {
        let binary = matches!(input.fill_buf(), Ok(b) if b.first() == Some(&MAGIC[0]));
        if binary {
            AnyTraceReader::Binary(BinaryTraceReader::new(input))
        } else {
            AnyTraceReader::Lines(TraceReader::new(input))
        }
    }

    /// Whether the input is a binary trace.
    pub fn is_binary(&self) -> bool {
        matches!(self, AnyTraceReader::Binary(_))
    }
}

impl<R: BufRead> Iterator for AnyTraceReader<R> {
    type Item = Result<Event, AnyTraceError>;

    fn next(&mut self) -> Option<Self::Item> {
        match self {
            AnyTraceReader::Lines(r) => r.next().map(|e| e.map_err(AnyTraceError::from)),
            AnyTraceReader::Binary(r) => r.next().map(|e| e.map_err(AnyTraceError::from)),
        }
    }
}

/// Events handed from the reading thread to the caller's at a time.
pub const PIPELINE_BATCH: usize = 1024;

/// Batches in flight between the two threads: memory stays bounded however long the trace.
const PIPELINE_DEPTH: usize = 4;

/// Reads the trace `input` (either form, as [`AnyTraceReader`]) on a second thread and hands
/// each event to `each` on this one, in order, so reading and what `each` does (validating)
/// overlap on two cores. Events are dropped on the reading thread, where they were allocated.
/// Stops at the first unreadable line or record and returns its error, after `each` has had
/// every event before it; else returns the number of events read.
///
/// ```
/// use sparkwire::validate::trace::read_pipelined;
/// use sparkwire::validate::{Config, Validator};
///
/// let path = concat!(env!("CARGO_MANIFEST_DIR"), "/protocol/traces/legal-flow.jsonl");
/// let file = std::io::BufReader::new(std::fs::File::open(path).expect("the trace"));
/// let mut validator = Validator::new(Config::sparkwire());
/// let mut violations = Vec::new();
/// let events = read_pipelined(file, |e| violations.extend(validator.observe(e))).expect("reads");
/// violations.extend(validator.finish());
/// assert_eq!(events, validator.events());
/// assert!(violations.is_empty(), "{violations:?}");
/// ```
pub fn read_pipelined<R: BufRead + Send>(
    input: R,
    mut each: impl FnMut(&Event),
) -> Result<u64, AnyTraceError> {
    let (tx, rx) = mpsc::sync_channel::<Result<Vec<Event>, AnyTraceError>>(PIPELINE_DEPTH);
    // Batches handed back once seen, to be dropped (and their space reused) by the reader.
    let (back_tx, back_rx) = mpsc::channel::<Vec<Event>>();
    std::thread::scope(|scope| {
        scope.spawn(move || {
            let fresh = |back: &mpsc::Receiver<Vec<Event>>| match back.try_recv() {
                Ok(mut used) => {
                    used.clear();
                    used
                }
                Err(_) => Vec::with_capacity(PIPELINE_BATCH),
            };
            let mut batch = fresh(&back_rx);
            for event in AnyTraceReader::new(input) {
                match event {
                    Ok(e) => {
                        batch.push(e);
                        if batch.len() == PIPELINE_BATCH {
                            let next = fresh(&back_rx);
                            if tx.send(Ok(std::mem::replace(&mut batch, next))).is_err() {
                                return;
                            }
                        }
                    }
                    Err(e) => {
                        if !batch.is_empty() && tx.send(Ok(batch)).is_err() {
                            return;
                        }
                        let _ = tx.send(Err(e));
                        return;
                    }
                }
            }
            if !batch.is_empty() {
                let _ = tx.send(Ok(batch));
            }
        });
        let mut n = 0u64;
        for batch in rx {
            let batch = batch?;
            for e in &batch {
                each(e);
            }
            n += batch.len() as u64;
            // The reader may have finished: then the batch is dropped here.
            let _ = back_tx.send(batch);
        }
        Ok(n)
    })
}
