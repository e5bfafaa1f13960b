//! A message's body: the MessagePack value `{Name: {field: value, …}}`, laid out for one version.

use bytes::Bytes;

use super::error::Error;
use super::msgpack::Cursor;
use crate::messages::with_source_frame;
use crate::messages::{Family, Version, Versioned};

/// Refuses a message that cannot cross a connection in `version`.
pub fn check_sendable<F: Family>(message: &F, version: Version) -> Result<(), Error> {
    if message.is_local() {
        return Err(Error::LocalMessage {
            name: message.name(),
        });
    }
    if !message.exists_in(version) {
        return Err(Error::NotInVersion {
            name: message.name(),
            version,
            since: message.since(),
        });
    }
    Ok(())
}

/// Appends the body of `message` in `version`'s layout to `out`.
///
/// Fails with [`Error::LocalMessage`] or [`Error::NotInVersion`] before writing anything.
pub fn encode_message<F: Family>(
    message: &F,
    version: Version,
    out: &mut Vec<u8>,
) -> Result<(), Error> {
    check_sendable(message, version)?;
    write_message(message, version, out)
}

/// Appends the body without checking that it may cross a connection: the form the golden vectors
/// give for local messages.
pub fn write_message<F: Family>(
    message: &F,
    version: Version,
    out: &mut Vec<u8>,
) -> Result<(), Error> {
    let mut ser = rmp_serde::Serializer::new(out).with_struct_map();
    serde::Serialize::serialize(&Versioned(message, version), &mut ser).map_err(|e| Error::Encode {
        name: message.name().to_string(),
        detail: e.to_string(),
    })
}

/// Decodes a whole body; `body` should lie inside `frame`, so that payloads are sliced from
/// `frame` instead of copied. Refuses local messages and messages absent from `version`.
///
/// The errors come in SPEC §8's order of precedence: whatever makes the bytes unreadable
/// (`InvalidMessagePack`, `TooDeep`), then `TrailingBytes`, `BadEnvelope` (not a one-entry map
/// keyed by a string), `UnknownMessage`, `LocalMessage`, `NotInVersion`, `InvalidFields`.
pub fn decode_message<F: Family>(frame: &Bytes, body: &[u8], version: Version) -> Result<F, Error> {
    decode_message_with(frame, body, version, true)
}

/// A well-formed value that does not have the shape the envelope needs is `BadEnvelope`, not
/// `InvalidMessagePack` (the bytes were already found to be well-formed MessagePack).
pub(crate) fn shape(e: Error) -> Error {
    match e {
        Error::InvalidMessagePack(detail) => Error::BadEnvelope(detail),
        other => other,
    }
}

/// Decodes a body without refusing local messages: the counterpart of [`write_message`], for the
/// golden vectors and for tools that read bodies outside a connection.
pub fn read_message<F: Family>(frame: &Bytes, body: &[u8], version: Version) -> Result<F, Error> {
    decode_message_with(frame, body, version, false)
}

fn decode_message_with<F: Family>(
    frame: &Bytes,
    body: &[u8],
    version: Version,
    check: bool,
) -> Result<F, Error> {
    // Unreadable bytes and nesting first.
    let len = super::msgpack::value_len(body)?;
    if len < body.len() {
        return Err(Error::TrailingBytes {
            extra: body.len() - len,
        });
    }
    decode_measured(frame, body, version, check)
}

/// Decodes a body already known to hold exactly one well-formed MessagePack value, nested no
/// deeper than the limit: a frame measured whole by `value_len`, of which `body` is the last
/// element. It is not measured again.
pub(crate) fn decode_measured<F: Family>(
    frame: &Bytes,
    body: &[u8],
    version: Version,
    check: bool,
) -> Result<F, Error> {
    let mut c = Cursor::new(body);
    let entries = c.map_len().map_err(shape)?;
    if entries != 1 {
        return Err(Error::BadEnvelope(format!(
            "a message is a map with exactly one entry (its name), found {entries} entries"
        )));
    }
    let name = c.str().map_err(shape)?;
    let Some(since) = F::since_of(name) else {
        return Err(Error::UnknownMessage {
            family: F::FAMILY,
            name: name.to_string(),
        });
    };
    if check && F::is_local_name(name).unwrap_or(false) {
        let known = F::NAMES
            .iter()
            .find(|n| **n == name)
            .copied()
            .unwrap_or("local message");
        return Err(Error::LocalMessage { name: known });
    }
    if since > version {
        let known = F::NAMES
            .iter()
            .find(|n| **n == name)
            .copied()
            .unwrap_or("message");
        return Err(Error::NotInVersion {
            name: known,
            version,
            since,
        });
    }
    // `body` is one value, a map of one entry: what follows its key is that entry's value, to the
    // end of `body`.
    let fields = c.rest();
    with_source_frame(frame, || {
        let mut d = super::de::MsgPack::new(fields);
        fields_from(name, version, &mut d).map_err(|e| match e {
            Error::InvalidFields {
                name,
                version,
                detail,
                at: None,
            } => Error::InvalidFields {
                name,
                version,
                detail,
                at: Some(d.location(super::de::offset_in(frame, fields))),
            },
            other => other,
        })
    })
}

/// Deserializes the fields of the message `name` from any serde deserializer (MessagePack from a
/// frame, or the readable JSON of vectors and traces), with this layer's errors.
pub fn fields_from<'de, F: Family, D: serde::Deserializer<'de>>(
    name: &str,
    version: Version,
    d: D,
) -> Result<F, Error>
where
    D::Error: std::fmt::Display,
{
    match F::deserialize_fields(name, version, d) {
        Some(Ok(m)) => Ok(m),
        Some(Err(e)) => Err(Error::InvalidFields {
            name: name.to_string(),
            version,
            detail: e.to_string(),
            at: None,
        }),
        None => Err(Error::UnknownMessage {
            family: F::FAMILY,
            name: name.to_string(),
        }),
    }
}
