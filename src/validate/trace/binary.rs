//! The binary trace form (`protocol/trace.md`, "Binary form"): a header, then length-prefixed
//! MessagePack records, each envelope carried as the bytes its frame held on the wire.
//!
//! [`BinaryTraceReader`] reads it with typed errors naming the record and its byte offset; it never
//! panics on bad input and never allocates for a length it has not yet read the bytes of.
//! [`write_record`] appends one event's record.

use std::io::{self, Read};

use bytes::{Bytes, BytesMut};

use super::TraceErrorKind;
use crate::messages::{CoarseMessage, DeployMessage, Family, Version};
use crate::validate::event::{
    AnyEnvelope, Endpoint, EnvelopeRef, Event, EventBody, OutsideFrame, OutsideStatus, TaskPayloads,
};
use crate::wire::handshake::Role;
use crate::wire::msgpack::Cursor;
use crate::wire::{decode_envelope, encode_envelope};

/// The first 8 bytes of a binary trace. The first, 0xC1, is never the first byte of a JSON Lines
/// trace (it is not UTF-8), which is how readers tell the forms apart.
pub const MAGIC: [u8; 8] = *b"\xc1SWTRACE";

/// The binary form's version, after the magic as a big-endian `u32`.
pub const FORMAT_VERSION: u32 = 1;

/// Bytes of the header: the magic and the format version.
pub const HEADER_LEN: usize = 12;

/// The longest record (64 MiB, as the longest JSON line): longer declared lengths are refused
/// before anything is buffered for them.
pub const MAX_RECORD_BYTES: usize = 64 << 20;

/// Record tags (the first element of each record's array).
const OPEN: u64 = 0;
const CLOSE: u64 = 1;
const ENVELOPE: u64 = 2;
const OUTSIDE: u64 = 3;

/// How much is read from the input at a time.
const CHUNK: usize = 256 << 10;

/// The header of a binary trace.
pub fn header() -> [u8; HEADER_LEN] {
    let mut h = [0u8; HEADER_LEN];
    h[..8].copy_from_slice(&MAGIC);
    h[8..].copy_from_slice(&FORMAT_VERSION.to_be_bytes());
    h
}

/// A record of a binary trace that could not be read: its number (from 1), the byte offset of
/// its length prefix in the input, and what is wrong. Record 0 is the header.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("record {record} at byte {offset}: {kind}")]
pub struct BinaryTraceError {
    /// The record's number, from 1 (0: the header).
    pub record: u64,
    /// The byte offset of the record's length prefix (of the header for record 0).
    pub offset: u64,
    /// What is wrong.
    pub kind: TraceErrorKind,
}

fn invalid(field: &'static str, problem: impl Into<String>) -> TraceErrorKind {
    TraceErrorKind::Invalid {
        field,
        problem: problem.into(),
    }
}

// --- writing ---

fn write_endpoint(out: &mut Vec<u8>, e: &Endpoint) {
    // Writing to a Vec cannot fail.
    let _ = rmp::encode::write_str(out, e.role.name());
    let _ = rmp::encode::write_str(out, &e.id);
}

fn write_opt_str(out: &mut Vec<u8>, s: Option<&str>) {
    match s {
        Some(s) => {
            let _ = rmp::encode::write_str(out, s);
        }
        None => {
            let _ = rmp::encode::write_nil(out);
        }
    }
}

/// Appends the record of `event` (its length prefix included) to `out`; `scratch` is reused for
/// the envelope's bytes. Nothing is appended when the envelope does not encode.
pub fn write_record(event: &Event, out: &mut Vec<u8>, scratch: &mut Vec<u8>) -> io::Result<()> {
    let start = out.len();
    out.extend_from_slice(&[0; 4]);
    if let Err(e) = encode_body(event, out, scratch) {
        out.truncate(start);
        return Err(e);
    }
    let len = out.len() - start - 4;
    if len > MAX_RECORD_BYTES {
        out.truncate(start);
        return Err(io::Error::other(format!(
            "a record of {len} bytes is longer than the limit of {MAX_RECORD_BYTES}"
        )));
    }
    // `len` fits: it is at most MAX_RECORD_BYTES.
    out[start..start + 4].copy_from_slice(&(len as u32).to_be_bytes());
    Ok(())
}

fn encode_body(event: &Event, out: &mut Vec<u8>, scratch: &mut Vec<u8>) -> io::Result<()> {
    use rmp::encode::{write_array_len, write_bin, write_str, write_uint};
    match &event.body {
        EventBody::Open {
            client,
            server,
            version,
            tasks,
        } => {
            // The task payloads only when they are not sparkwire's: 8 elements as before, else 9.
            let marked = *tasks != TaskPayloads::Sparkwire;
            let _ = write_array_len(out, if marked { 9 } else { 8 });
            let _ = write_uint(out, OPEN);
            let _ = write_uint(out, event.time);
            let _ = write_uint(out, event.conn);
            let _ = write_uint(out, u64::from(version.number()));
            write_endpoint(out, client);
            write_endpoint(out, server);
            if marked {
                let _ = write_str(out, tasks.as_str());
            }
        }
        EventBody::Close => {
            let _ = write_array_len(out, 3);
            let _ = write_uint(out, CLOSE);
            let _ = write_uint(out, event.time);
            let _ = write_uint(out, event.conn);
        }
        EventBody::Message {
            from,
            to,
            version,
            envelope,
        } => {
            scratch.clear();
            let encoded = match envelope.as_ref() {
                EnvelopeRef::Deploy(env) => encode_envelope(env, *version, scratch),
                EnvelopeRef::Coarse(env) => encode_envelope(env, *version, scratch),
            };
            encoded.map_err(io::Error::other)?;
            let _ = write_array_len(out, 9);
            let _ = write_uint(out, ENVELOPE);
            let _ = write_uint(out, event.time);
            let _ = write_uint(out, event.conn);
            let _ = write_uint(out, u64::from(version.number()));
            write_endpoint(out, from);
            write_endpoint(out, to);
            let _ = write_bin(out, scratch);
        }
        EventBody::Outside { from, to, frame } => {
            let _ = write_array_len(out, 14);
            let _ = write_uint(out, OUTSIDE);
            let _ = write_uint(out, event.time);
            let _ = write_uint(out, event.conn);
            write_endpoint(out, from);
            write_endpoint(out, to);
            let _ = write_str(out, &frame.transport);
            match frame.id {
                Some(id) => {
                    let _ = write_uint(out, id);
                }
                None => {
                    let _ = rmp::encode::write_nil(out);
                }
            }
            write_opt_str(out, frame.endpoint.as_deref());
            write_opt_str(out, frame.class.as_deref());
            let _ = write_str(out, frame.status.as_str());
            write_opt_str(out, frame.detail.as_deref());
            let _ = write_uint(out, frame.bytes);
        }
    }
    Ok(())
}

// --- reading ---

/// Reads events from a binary trace, one record each. An iterator of results: the first error
/// ends it (a record's length cannot be trusted after a bad one).
///
/// ```
/// use sparkwire::validate::trace::{read_events, write_binary, BinaryTraceReader};
///
/// let path = concat!(env!("CARGO_MANIFEST_DIR"), "/protocol/traces/legal-flow.jsonl");
/// let events = read_events(&std::fs::read_to_string(path).expect("the trace")).expect("reads");
/// let binary = write_binary(&events).expect("writes");
/// let back: Result<Vec<_>, _> = BinaryTraceReader::new(binary.as_slice()).collect();
/// assert_eq!(back.expect("reads back"), events);
/// ```
#[derive(Debug)]
pub struct BinaryTraceReader<R> {
    input: R,
    buf: BytesMut,
    /// Input offset of `buf`'s first byte.
    offset: u64,
    record: u64,
    started: bool,
    eof: bool,
    done: bool,
}

impl<R: Read> BinaryTraceReader<R> {
    /// A reader of `input`, which starts with the header.
    pub fn new(input: R) -> Self {
        BinaryTraceReader {
            input,
            buf: BytesMut::new(),
            offset: 0,
            record: 0,
            started: false,
            eof: false,
            done: false,
        }
    }

    /// The number of the last record read (from 1; 0 before the first).
    pub fn record(&self) -> u64 {
        self.record
    }

    /// Reads until `buf` holds at least `n` bytes or the input ends; whether it holds them.
    fn fill(&mut self, n: usize) -> io::Result<bool> {
        while self.buf.len() < n && !self.eof {
            let have = self.buf.len();
            // A chunk at a time: the buffer never runs ahead of the bytes the input actually
            // holds by more than a chunk, whatever length a record declares.
            self.buf.resize(have + CHUNK, 0);
            let got = loop {
                match self.input.read(&mut self.buf[have..]) {
                    Ok(got) => break got,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                    Err(e) => {
                        self.buf.truncate(have);
                        return Err(e);
                    }
                }
            };
            self.buf.truncate(have + got);
            if got == 0 {
                self.eof = true;
            }
        }
        Ok(self.buf.len() >= n)
    }

    fn fail(&mut self, kind: TraceErrorKind) -> BinaryTraceError {
        self.done = true;
        BinaryTraceError {
            record: self.record,
            offset: self.offset,
            kind,
        }
    }

    fn read_header(&mut self) -> Result<(), TraceErrorKind> {
        let whole = self
            .fill(HEADER_LEN)
            .map_err(|e| TraceErrorKind::Io(e.to_string()))?;
        let have = self.buf.len().min(HEADER_LEN);
        if self.buf[..have.min(8)] != MAGIC[..have.min(8)] {
            return Err(TraceErrorKind::Header(
                "not a binary trace: the magic is not 0xC1 \"SWTRACE\"".into(),
            ));
        }
        if !whole {
            return Err(TraceErrorKind::Truncated {
                needed: HEADER_LEN as u64,
                available: have as u64,
            });
        }
        let mut v = [0u8; 4];
        v.copy_from_slice(&self.buf[8..HEADER_LEN]);
        let version = u32::from_be_bytes(v);
        if version != FORMAT_VERSION {
            return Err(TraceErrorKind::Header(format!(
                "binary trace format version {version}; this reader reads version {FORMAT_VERSION}"
            )));
        }
        let _ = self.buf.split_to(HEADER_LEN);
        self.offset = HEADER_LEN as u64;
        Ok(())
    }

    /// The next record's bytes (without its prefix), `None` at a clean end.
    fn next_record(&mut self) -> Result<Option<Bytes>, TraceErrorKind> {
        let io = |e: io::Error| TraceErrorKind::Io(e.to_string());
        if !self.fill(4).map_err(io)? {
            if self.buf.is_empty() {
                return Ok(None);
            }
            self.record += 1;
            return Err(TraceErrorKind::Truncated {
                needed: 4,
                available: self.buf.len() as u64,
            });
        }
        self.record += 1;
        let mut p = [0u8; 4];
        p.copy_from_slice(&self.buf[..4]);
        let len = u32::from_be_bytes(p) as usize;
        if len > MAX_RECORD_BYTES {
            return Err(TraceErrorKind::RecordTooLong {
                len: len as u64,
                limit: MAX_RECORD_BYTES,
            });
        }
        if len == 0 {
            return Err(invalid("record", "an empty record"));
        }
        if !self.fill(4 + len).map_err(io)? {
            return Err(TraceErrorKind::Truncated {
                needed: 4 + len as u64,
                available: self.buf.len() as u64,
            });
        }
        let mut record = self.buf.split_to(4 + len).freeze();
        let _ = record.split_to(4);
        Ok(Some(record))
    }
}

impl<R: Read> Iterator for BinaryTraceReader<R> {
    type Item = Result<Event, BinaryTraceError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        if !self.started {
            self.started = true;
            if let Err(kind) = self.read_header() {
                return Some(Err(self.fail(kind)));
            }
        }
        match self.next_record() {
            Ok(None) => {
                self.done = true;
                None
            }
            Ok(Some(record)) => {
                let len = record.len() as u64;
                match event_from_record(&record) {
                    Ok(event) => {
                        self.offset += 4 + len;
                        Some(Ok(event))
                    }
                    Err(kind) => Some(Err(self.fail(kind))),
                }
            }
            Err(kind) => Some(Err(self.fail(kind))),
        }
    }
}

/// What went wrong reading field `field` of a record.
fn bad(field: &'static str) -> impl Fn(crate::wire::Error) -> TraceErrorKind {
    move |e| invalid(field, e.to_string())
}

fn uint(c: &mut Cursor<'_>, field: &'static str) -> Result<u64, TraceErrorKind> {
    c.uint().map_err(bad(field))
}

fn string(c: &mut Cursor<'_>, field: &'static str) -> Result<String, TraceErrorKind> {
    c.str().map(str::to_string).map_err(bad(field))
}

fn opt_string(c: &mut Cursor<'_>, field: &'static str) -> Result<Option<String>, TraceErrorKind> {
    if c.nil() {
        return Ok(None);
    }
    string(c, field).map(Some)
}

fn endpoint(c: &mut Cursor<'_>, field: &'static str) -> Result<Endpoint, TraceErrorKind> {
    let role = c.str().map_err(bad(field))?;
    let role =
        Role::from_name(role).ok_or_else(|| invalid(field, format!("unknown role {role:?}")))?;
    Ok(Endpoint {
        role,
        id: string(c, field)?,
    })
}

fn version(c: &mut Cursor<'_>) -> Result<Version, TraceErrorKind> {
    let n = uint(c, "version")?;
    Version::from_number(n)
        .ok_or_else(|| invalid("version", format!("unknown protocol version {n}")))
}

fn decode_as<F: super::super::event::ValidatedFamily>(
    frame: &Bytes,
    version: Version,
) -> Result<AnyEnvelope, TraceErrorKind> {
    Ok(F::wrap(decode_envelope::<F>(frame, version)?))
}

/// Reads one event from a record's bytes (after its length prefix).
pub(super) fn event_from_record(record: &Bytes) -> Result<Event, TraceErrorKind> {
    let mut c = Cursor::new(record);
    let items = c.array_len().map_err(bad("record"))?;
    let tag = uint(&mut c, "record")?;
    let expected: &[u64] = match tag {
        OPEN => &[8, 9],
        CLOSE => &[3],
        ENVELOPE => &[9],
        OUTSIDE => &[14],
        other => {
            return Err(invalid(
                "record",
                format!("unknown record tag {other}; expected 0 (open), 1 (close), 2 (envelope) or 3 (outside)"),
            ))
        }
    };
    if !expected.contains(&items) {
        let lengths = expected
            .iter()
            .map(u64::to_string)
            .collect::<Vec<_>>()
            .join(" or ");
        return Err(invalid(
            "record",
            format!("record tag {tag} takes an array of {lengths} elements, found {items}"),
        ));
    }
    let time = uint(&mut c, "time")?;
    let conn = uint(&mut c, "conn")?;
    let body = match tag {
        OPEN => {
            let version = version(&mut c)?;
            let client = endpoint(&mut c, "client")?;
            let server = endpoint(&mut c, "server")?;
            let tasks = if items == 9 {
                let name = c.str().map_err(bad("tasks"))?;
                TaskPayloads::from_name(name).ok_or_else(|| {
                    invalid(
                        "tasks",
                        format!("unknown task payloads {name:?}; expected spark or sparkwire"),
                    )
                })?
            } else {
                TaskPayloads::Sparkwire
            };
            EventBody::Open {
                client,
                server,
                version,
                tasks,
            }
        }
        CLOSE => EventBody::Close,
        ENVELOPE => {
            let version = version(&mut c)?;
            let from = endpoint(&mut c, "from")?;
            let to = endpoint(&mut c, "to")?;
            let len = c.bin().map_err(bad("frame"))?.len();
            let end = c.position();
            let frame = record.slice(end - len..end);
            let envelope = if from.role.family() == DeployMessage::FAMILY {
                decode_as::<DeployMessage>(&frame, version)?
            } else {
                decode_as::<CoarseMessage>(&frame, version)?
            };
            EventBody::Message {
                from,
                to,
                version,
                envelope,
            }
        }
        _ => {
            let from = endpoint(&mut c, "from")?;
            let to = endpoint(&mut c, "to")?;
            let transport = string(&mut c, "transport")?;
            let id = if c.nil() {
                None
            } else {
                Some(uint(&mut c, "id")?)
            };
            let endpoint = opt_string(&mut c, "endpoint")?;
            let class = opt_string(&mut c, "class")?;
            let status = c.str().map_err(bad("status"))?;
            let status = OutsideStatus::from_name(status).ok_or_else(|| {
                invalid(
                    "status",
                    format!("unknown status {status:?}; expected outside, unknown or undecoded"),
                )
            })?;
            let detail = opt_string(&mut c, "detail")?;
            let bytes = uint(&mut c, "bytes")?;
            EventBody::Outside {
                from,
                to,
                frame: OutsideFrame {
                    transport,
                    id,
                    endpoint,
                    class,
                    status,
                    detail,
                    bytes,
                },
            }
        }
    };
    if c.position() != record.len() {
        return Err(invalid(
            "record",
            format!(
                "{} bytes after the record's last element",
                record.len() - c.position()
            ),
        ));
    }
    Ok(Event { time, conn, body })
}

/// The binary trace of `events`: the header, then one record each.
pub fn write_binary(events: &[Event]) -> io::Result<Vec<u8>> {
    let mut out = header().to_vec();
    let mut scratch = Vec::new();
    for e in events {
        write_record(e, &mut out, &mut scratch)?;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn events() -> Vec<Event> {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/protocol/traces/legal-flow.jsonl"
        );
        let text = std::fs::read_to_string(path).expect("the sample trace");
        super::super::read_events(&text).expect("the sample trace reads")
    }

    fn read(bytes: &[u8]) -> Result<Vec<Event>, BinaryTraceError> {
        BinaryTraceReader::new(bytes).collect()
    }

    #[test]
    fn a_written_trace_reads_back_the_same_events() {
        let events = events();
        let bytes = write_binary(&events).expect("writes");
        assert_eq!(&bytes[..HEADER_LEN], &header());
        assert_eq!(read(&bytes), Ok(events));
    }

    #[test]
    fn reading_one_byte_at_a_time_reads_the_same() {
        struct Trickle<'a>(&'a [u8]);
        impl Read for Trickle<'_> {
            fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
                let Some((first, rest)) = self.0.split_first() else {
                    return Ok(0);
                };
                match out.first_mut() {
                    Some(slot) => *slot = *first,
                    None => return Ok(0),
                }
                self.0 = rest;
                Ok(1)
            }
        }
        let events = events();
        let bytes = write_binary(&events).expect("writes");
        let back: Result<Vec<_>, _> = BinaryTraceReader::new(Trickle(&bytes)).collect();
        assert_eq!(back, Ok(events));
    }

    #[test]
    fn a_close_is_the_record_of_the_spec_example() {
        let mut out = Vec::new();
        write_record(&Event::close(9000, 1), &mut out, &mut Vec::new()).expect("writes");
        assert_eq!(out, [0, 0, 0, 6, 0x93, 0x01, 0xcd, 0x23, 0x28, 0x01]);
    }

    /// The record of an open at time 0 of connection 1, version 2, executor `e` → driver `d`,
    /// with `tail` appended as its last elements.
    fn open_record(tail: &[&str]) -> Vec<u8> {
        let mut body = vec![0x90 | (8 + tail.len() as u8), 0x00, 0x00, 0x01, 0x02];
        for s in ["executor", "e", "driver", "d"].iter().chain(tail) {
            body.push(0xa0 | s.len() as u8);
            body.extend_from_slice(s.as_bytes());
        }
        let mut bytes = header().to_vec();
        bytes.extend_from_slice(&(body.len() as u32).to_be_bytes());
        bytes.extend_from_slice(&body);
        bytes
    }

    #[test]
    fn an_opens_task_payloads_are_a_ninth_element_only_when_spark() {
        let open = Event::open(
            0,
            1,
            Endpoint::new(Role::Executor, "e"),
            Endpoint::new(Role::Driver, "d"),
            Version::V2,
        );
        let spark = open.clone().with_tasks(TaskPayloads::Spark);
        // Written: 8 elements for sparkwire's payloads (as every trace before), 9 for Spark's.
        assert_eq!(
            write_binary(std::slice::from_ref(&open)).expect("writes"),
            open_record(&[])
        );
        assert_eq!(
            write_binary(std::slice::from_ref(&spark)).expect("writes"),
            open_record(&["spark"])
        );
        // Read: both, and an explicit "sparkwire" as the element's absence.
        assert_eq!(read(&open_record(&[])), Ok(vec![open.clone()]));
        assert_eq!(read(&open_record(&["spark"])), Ok(vec![spark]));
        assert_eq!(read(&open_record(&["sparkwire"])), Ok(vec![open]));
        // Refused: an unknown name, a 10th element.
        let err = read(&open_record(&["scala"])).expect_err("unknown");
        assert!(
            matches!(&err.kind, TraceErrorKind::Invalid { field: "tasks", problem }
                if problem.contains("\"scala\"")),
            "{err}"
        );
        let err = read(&open_record(&["spark", "x"])).expect_err("10 elements");
        assert!(
            matches!(&err.kind, TraceErrorKind::Invalid { field: "record", problem }
                if problem.contains("8 or 9 elements, found 10")),
            "{err}"
        );
    }

    #[test]
    fn a_header_alone_is_an_empty_trace() {
        assert_eq!(read(&header()), Ok(vec![]));
    }

    #[test]
    fn a_bad_magic_or_format_version_is_a_header_error() {
        let err = read(b"{\"time\":0}").expect_err("not binary");
        assert_eq!((err.record, err.offset), (0, 0));
        assert!(matches!(err.kind, TraceErrorKind::Header(_)), "{err}");
        let mut future = header();
        future[11] = 2;
        let err = read(&future).expect_err("version 2");
        assert!(
            matches!(&err.kind, TraceErrorKind::Header(t) if t.contains("version 2")),
            "{err}"
        );
        let err = read(&MAGIC[..5]).expect_err("a short header");
        assert!(
            matches!(
                err.kind,
                TraceErrorKind::Truncated {
                    needed: 12,
                    available: 5
                }
            ),
            "{err}"
        );
    }

    #[test]
    fn a_truncated_record_names_its_number_and_offset() {
        let events = events();
        let bytes = write_binary(&events[..3]).expect("writes");
        let second_at = {
            let first = u32::from_be_bytes([bytes[12], bytes[13], bytes[14], bytes[15]]);
            HEADER_LEN as u64 + 4 + u64::from(first)
        };
        let whole = write_binary(&events[..2]).expect("writes").len();
        // Cut inside the third record's body, then inside its length prefix.
        for cut in [bytes.len() - 1, whole + 2] {
            let mut it = BinaryTraceReader::new(&bytes[..cut]);
            assert!(matches!(it.next(), Some(Ok(_))));
            assert!(matches!(it.next(), Some(Ok(_))));
            let err = it.next().and_then(Result::err).expect("the third fails");
            assert_eq!(err.record, 3);
            assert_eq!(err.offset, whole as u64);
            assert!(
                matches!(err.kind, TraceErrorKind::Truncated { .. }),
                "{err}"
            );
            assert!(it.next().is_none(), "reading stops at the first error");
        }
        assert!(second_at < whole as u64);
    }

    #[test]
    fn a_huge_length_is_refused_before_anything_is_buffered() {
        let mut bytes = header().to_vec();
        bytes.extend_from_slice(&u32::MAX.to_be_bytes());
        bytes.extend_from_slice(&[0x93, 0x01, 0x00, 0x00]);
        let mut it = BinaryTraceReader::new(bytes.as_slice());
        let err = it.next().and_then(Result::err).expect("refused");
        assert_eq!((err.record, err.offset), (1, HEADER_LEN as u64));
        assert_eq!(
            err.kind,
            TraceErrorKind::RecordTooLong {
                len: u64::from(u32::MAX),
                limit: MAX_RECORD_BYTES
            }
        );
        assert!(it.buf.capacity() <= 4 * CHUNK, "{}", it.buf.capacity());
        // A length within the limit but beyond the input: truncated, after reading what there is.
        let mut bytes = header().to_vec();
        bytes.extend_from_slice(&(MAX_RECORD_BYTES as u32).to_be_bytes());
        bytes.extend_from_slice(&[0x93, 0x01, 0x00, 0x00]);
        let mut it = BinaryTraceReader::new(bytes.as_slice());
        let err = it.next().and_then(Result::err).expect("refused");
        assert!(
            matches!(err.kind, TraceErrorKind::Truncated { .. }),
            "{err}"
        );
        assert!(it.buf.capacity() <= 4 * CHUNK, "{}", it.buf.capacity());
    }

    #[test]
    fn malformed_records_are_typed_errors_naming_the_field() {
        let record = |body: &[u8]| {
            let mut bytes = header().to_vec();
            bytes.extend_from_slice(&(body.len() as u32).to_be_bytes());
            bytes.extend_from_slice(body);
            read(&bytes).expect_err("refused").kind
        };
        // An unknown tag; a close with an element too many; a negative time; trailing bytes.
        assert!(matches!(
            record(&[0x93, 0x07, 0x00, 0x00]),
            TraceErrorKind::Invalid {
                field: "record",
                ..
            }
        ));
        assert!(matches!(
            record(&[0x94, 0x01, 0x00, 0x00, 0x00]),
            TraceErrorKind::Invalid {
                field: "record",
                ..
            }
        ));
        assert!(matches!(
            record(&[0x93, 0x01, 0xff, 0x00]),
            TraceErrorKind::Invalid { field: "time", .. }
        ));
        assert!(matches!(
            record(&[0x93, 0x01, 0x00, 0x00, 0x00]),
            TraceErrorKind::Invalid {
                field: "record",
                ..
            }
        ));
        assert!(matches!(
            record(&[]),
            TraceErrorKind::Invalid {
                field: "record",
                ..
            }
        ));
        // An open naming an unknown role; an envelope whose frame does not decode.
        let mut open = vec![0x98, 0x00, 0x00, 0x01, 0x02];
        for s in ["nobody", "a", "master", "m"] {
            open.push(0xa0 | s.len() as u8);
            open.extend_from_slice(s.as_bytes());
        }
        assert!(matches!(
            record(&open),
            TraceErrorKind::Invalid {
                field: "client",
                ..
            }
        ));
        let mut env = vec![0x99, 0x02, 0x00, 0x01, 0x02];
        for s in ["worker", "w", "master", "m"] {
            env.push(0xa0 | s.len() as u8);
            env.extend_from_slice(s.as_bytes());
        }
        env.extend_from_slice(&[0xc4, 0x02, 0x92, 0x09]);
        assert!(matches!(record(&env), TraceErrorKind::Message(_)));
    }
}
