//! The envelope: what one frame carries. A MessagePack array whose first element says which of
//! four forms it is:
//!
//! | form    | layout                   |
//! |---------|--------------------------|
//! | send    | `[0, message]`           |
//! | ask     | `[1, id, message]`       |
//! | reply   | `[2, id, reply]`         |
//! | failure | `[3, id, {className, message}]` |
//! | close   | `[4, {kind, message, path, offset}]` |
//!
//! A close is sent only on a connection whose handshake agreed on the `closeReason` feature
//! (SPEC §8.1); a decoder reads it whatever was agreed.

use bytes::Bytes;
use serde::Serialize;

use super::body::{decode_measured, encode_message, shape};
use super::close::CloseReason;
use super::error::Error;
use super::msgpack::{value_len, Cursor};
use crate::messages::with_source_frame;
use crate::messages::{
    ErrorDescription, ExecutorLossReason, Family, Payload, ThreadStackTrace, Version,
};

/// Envelope tags.
const SEND: u64 = 0;
const ASK: u64 = 1;
const REPLY: u64 = 2;
const FAILURE: u64 = 3;
const CLOSE: u64 = 4;

/// One frame's content.
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub enum Envelope<F> {
    /// A one-way message.
    Send(F),
    /// A request that expects exactly one reply or failure with the same id.
    Ask {
        /// Correlation id, chosen by the asker, unique among its pending asks on the connection.
        id: u64,
        /// The request.
        message: F,
    },
    /// The answer to the ask `id`.
    Reply {
        /// The ask's id.
        id: u64,
        /// The answer.
        reply: Reply<F>,
    },
    /// The ask `id` failed.
    Failure {
        /// The ask's id.
        id: u64,
        /// Why, as Spark would throw it.
        error: ErrorDescription,
    },
    /// The sender's last frame: it closes the connection, for this reason (SPEC §8.1).
    Close(CloseReason),
}

/// The value of a reply: a message, or one of the plain values Spark's asks answer with.
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub enum Reply<F> {
    /// A Boolean (most asks: `ExecutorStateChanged`, `RegisterExecutor`, `RequestExecutors`,
    /// `RequestClearCompletedDriversAndApps`, …).
    Bool(bool),
    /// An integer (`DecommissionWorkersOnHosts`, `RetrieveLastAllocatedExecutorId`).
    Int(i32),
    /// Bytes (`RetrieveDelegationTokens`).
    Bytes(Payload),
    /// A thread dump, or none (`TaskThreadDump`).
    ThreadDump(Option<ThreadStackTrace>),
    /// A loss reason (`GetExecutorLossReason`).
    LossReason(ExecutorLossReason),
    /// A message (`SubmitDriverResponse`, `SparkAppConfig`, …).
    Message(F),
}

impl<F: Family> Reply<F> {
    /// The key that tags this reply on the wire.
    pub fn tag(&self) -> &'static str {
        match self {
            Reply::Bool(_) => "bool",
            Reply::Int(_) => "int",
            Reply::Bytes(_) => "bytes",
            Reply::ThreadDump(_) => "threadDump",
            Reply::LossReason(_) => "lossReason",
            Reply::Message(_) => "message",
        }
    }
}

impl<F: Family> Envelope<F> {
    /// The message carried, if this is a send, an ask, or a reply holding a message.
    pub fn message(&self) -> Option<&F> {
        match self {
            Envelope::Send(m) | Envelope::Ask { message: m, .. } => Some(m),
            Envelope::Reply {
                reply: Reply::Message(m),
                ..
            } => Some(m),
            _ => None,
        }
    }
}

fn encode_err(name: &str, e: impl std::fmt::Display) -> Error {
    Error::Encode {
        name: name.to_string(),
        detail: e.to_string(),
    }
}

fn write_plain<T: Serialize + ?Sized>(
    name: &str,
    value: &T,
    out: &mut Vec<u8>,
) -> Result<(), Error> {
    let mut ser = rmp_serde::Serializer::new(out).with_struct_map();
    value.serialize(&mut ser).map_err(|e| encode_err(name, e))
}

fn write_header(out: &mut Vec<u8>, len: u32, tag: u64, id: Option<u64>) {
    // Writing to a Vec cannot fail.
    let _ = rmp::encode::write_array_len(out, len);
    let _ = rmp::encode::write_uint(out, tag);
    if let Some(id) = id {
        let _ = rmp::encode::write_uint(out, id);
    }
}

/// Appends the envelope in `version`'s layout to `out`. Nothing is appended when it fails.
pub fn encode_envelope<F: Family>(
    env: &Envelope<F>,
    version: Version,
    out: &mut Vec<u8>,
) -> Result<(), Error> {
    let start = out.len();
    let result = encode_into(env, version, out);
    if result.is_err() {
        out.truncate(start);
    }
    result
}

fn encode_into<F: Family>(
    env: &Envelope<F>,
    version: Version,
    out: &mut Vec<u8>,
) -> Result<(), Error> {
    match env {
        Envelope::Send(m) => {
            write_header(out, 2, SEND, None);
            encode_message(m, version, out)
        }
        Envelope::Ask { id, message } => {
            write_header(out, 3, ASK, Some(*id));
            encode_message(message, version, out)
        }
        Envelope::Reply { id, reply } => {
            write_header(out, 3, REPLY, Some(*id));
            let _ = rmp::encode::write_map_len(out, 1);
            let _ = rmp::encode::write_str(out, reply.tag());
            match reply {
                Reply::Bool(b) => write_plain("bool reply", b, out),
                Reply::Int(i) => write_plain("int reply", i, out),
                Reply::Bytes(p) => write_plain("bytes reply", p, out),
                Reply::ThreadDump(t) => write_plain("thread dump reply", t, out),
                Reply::LossReason(r) => write_plain("loss reason reply", r, out),
                Reply::Message(m) => encode_message(m, version, out),
            }
        }
        Envelope::Failure { id, error } => {
            write_header(out, 3, FAILURE, Some(*id));
            write_plain("failure", error, out)
        }
        Envelope::Close(reason) => {
            write_header(out, 2, CLOSE, None);
            write_plain("close", reason, out)
        }
    }
}

/// Decodes the envelope that `frame` holds whole (the bytes after the length prefix).
///
/// `frame` must hold exactly one MessagePack value; payloads inside are sliced from it, not copied.
pub fn decode_envelope<F: Family>(frame: &Bytes, version: Version) -> Result<Envelope<F>, Error> {
    let len = value_len(frame)?;
    if len < frame.len() {
        return Err(Error::TrailingBytes {
            extra: frame.len() - len,
        });
    }
    let mut c = Cursor::new(frame);
    let items = c.array_len().map_err(shape)?;
    let tag = c.uint().map_err(shape)?;
    let expected = match tag {
        SEND | CLOSE => 2,
        ASK | REPLY | FAILURE => 3,
        other => {
            return Err(Error::BadEnvelope(format!(
                "unknown envelope tag {other}; expected 0 (send), 1 (ask), 2 (reply), 3 (failure) or 4 (close)"
            )))
        }
    };
    if items != expected {
        return Err(Error::BadEnvelope(format!(
            "envelope tag {tag} takes an array of {expected} elements, found {items}"
        )));
    }
    // The frame was measured whole: its last element, the message or reply, is one well-formed
    // value that ends where the frame ends.
    if tag == SEND {
        return Ok(Envelope::Send(decode_measured(
            frame,
            c.rest(),
            version,
            true,
        )?));
    }
    if tag == CLOSE {
        return Ok(Envelope::Close(read_plain(
            "close",
            c.rest(),
            frame,
            version,
        )?));
    }
    let id = c.uint().map_err(shape)?;
    let rest = c.rest();
    match tag {
        ASK => Ok(Envelope::Ask {
            id,
            message: decode_measured(frame, rest, version, true)?,
        }),
        FAILURE => Ok(Envelope::Failure {
            id,
            error: read_plain("failure", rest, frame, version)?,
        }),
        _ => Ok(Envelope::Reply {
            id,
            reply: decode_reply(frame, rest, version)?,
        }),
    }
}

fn read_plain<T: serde::de::DeserializeOwned>(
    name: &str,
    body: &[u8],
    frame: &Bytes,
    version: Version,
) -> Result<T, Error> {
    with_source_frame(frame, || {
        let base = super::de::offset_in(frame, body);
        super::de::from_slice_at(body, base).map_err(|(e, at)| Error::InvalidFields {
            name: name.to_string(),
            version,
            detail: e.to_string(),
            at: Some(at),
        })
    })
}

fn decode_reply<F: Family>(
    frame: &Bytes,
    body: &[u8],
    version: Version,
) -> Result<Reply<F>, Error> {
    let mut c = Cursor::new(body);
    let entries = c.map_len().map_err(shape)?;
    if entries != 1 {
        return Err(Error::BadEnvelope(format!(
            "a reply is a map with exactly one entry (its kind), found {entries} entries"
        )));
    }
    let tag = c.str().map_err(shape)?;
    let rest = c.rest();
    Ok(match tag {
        "bool" => Reply::Bool(read_plain("bool reply", rest, frame, version)?),
        "int" => Reply::Int(read_plain("int reply", rest, frame, version)?),
        "bytes" => Reply::Bytes(read_plain("bytes reply", rest, frame, version)?),
        "threadDump" => Reply::ThreadDump(read_plain("thread dump reply", rest, frame, version)?),
        "lossReason" => Reply::LossReason(read_plain("loss reason reply", rest, frame, version)?),
        "message" => Reply::Message(decode_measured(frame, rest, version, true)?),
        other => {
            return Err(Error::BadEnvelope(format!(
                "unknown reply kind {other:?}; expected bool, int, bytes, threadDump, lossReason or message"
            )))
        }
    })
}
