//! Reading and writing the string-keyed MessagePack maps that hellos and answers are.

use super::error::HandshakeError;
use crate::wire::msgpack::{value_len, Cursor};

/// The magic value, the `magic` key of every hello and answer.
pub const MAGIC: &str = "sparkwire";

/// A handshake frame's entries, each value still encoded.
pub(crate) struct Entries<'a> {
    entries: Vec<(&'a str, &'a [u8])>,
}

impl<'a> Entries<'a> {
    /// Reads a frame body that must hold exactly one map with string keys and the magic value.
    ///
    /// Anything that is not such a map, or lacks the magic value, is [`HandshakeError::BadMagic`]:
    /// the peer does not speak sparkwire. A duplicated key is [`HandshakeError::Malformed`].
    pub(crate) fn parse(body: &'a [u8]) -> Result<Self, HandshakeError> {
        let not_sparkwire = |what: String| HandshakeError::BadMagic { found: Some(what) };
        let len = value_len(body).map_err(|e| not_sparkwire(format!("not MessagePack ({e})")))?;
        if len != body.len() {
            return Err(not_sparkwire(format!(
                "{} byte(s) follow the first MessagePack value",
                body.len() - len
            )));
        }
        let mut c = Cursor::new(body);
        let count = c
            .map_len()
            .map_err(|_| not_sparkwire("a MessagePack value that is not a map".to_string()))?;
        let mut entries = Vec::new();
        for _ in 0..count {
            let key = c
                .str()
                .map_err(|_| not_sparkwire("a map key that is not a string".to_string()))?;
            let value = c
                .value()
                .map_err(|e| not_sparkwire(format!("an unreadable value ({e})")))?;
            if entries.iter().any(|(k, _)| *k == key) {
                return Err(HandshakeError::Malformed(format!(
                    "key {key:?} appears twice"
                )));
            }
            entries.push((key, value));
        }
        let parsed = Entries { entries };
        match parsed.get("magic") {
            None => Err(HandshakeError::BadMagic { found: None }),
            Some(raw) => match Cursor::new(raw).str() {
                Ok(MAGIC) => Ok(parsed),
                Ok(other) => Err(not_sparkwire(format!("magic value {other:?}"))),
                Err(_) => Err(not_sparkwire(
                    "a magic value that is not a string".to_string(),
                )),
            },
        }
    }

    /// The encoded value of `key`, if present.
    pub(crate) fn get(&self, key: &str) -> Option<&'a [u8]> {
        self.entries
            .iter()
            .find(|(k, _)| *k == key)
            .map(|(_, v)| *v)
    }

    /// True when `key` is present.
    pub(crate) fn has(&self, key: &str) -> bool {
        self.get(key).is_some()
    }

    /// The string value of the required key `key`.
    pub(crate) fn str(&self, key: &str) -> Result<&'a str, HandshakeError> {
        let raw = self.required(key)?;
        Cursor::new(raw)
            .str()
            .map_err(|_| HandshakeError::Malformed(format!("{key:?} must be a string")))
    }

    /// The non-negative integer value of the required key `key`.
    pub(crate) fn uint(&self, key: &str) -> Result<u64, HandshakeError> {
        let raw = self.required(key)?;
        Cursor::new(raw).uint().map_err(|_| {
            HandshakeError::Malformed(format!("{key:?} must be a non-negative integer"))
        })
    }

    /// The array of non-negative integers of the required key `key`.
    pub(crate) fn uints(&self, key: &str) -> Result<Vec<u64>, HandshakeError> {
        let raw = self.required(key)?;
        let bad = || {
            HandshakeError::Malformed(format!("{key:?} must be an array of non-negative integers"))
        };
        let mut c = Cursor::new(raw);
        let count = c.array_len().map_err(|_| bad())?;
        let mut out = Vec::new();
        for _ in 0..count {
            out.push(c.uint().map_err(|_| bad())?);
        }
        Ok(out)
    }

    /// The array of strings of the optional key `key`; empty when the key is absent.
    pub(crate) fn strs(&self, key: &str) -> Result<Vec<String>, HandshakeError> {
        let Some(raw) = self.get(key) else {
            return Ok(Vec::new());
        };
        let bad = || HandshakeError::Malformed(format!("{key:?} must be an array of strings"));
        let mut c = Cursor::new(raw);
        let count = c.array_len().map_err(|_| bad())?;
        // Each string takes at least a byte: a count past the input is refused before any room.
        if count > raw.len() as u64 {
            return Err(bad());
        }
        let mut out = Vec::new();
        for _ in 0..count {
            out.push(c.str().map_err(|_| bad())?.to_string());
        }
        Ok(out)
    }

    /// The binary value of the required key `key`, exactly `N` bytes long.
    pub(crate) fn bin_array<const N: usize>(&self, key: &str) -> Result<[u8; N], HandshakeError> {
        let raw = self.required(key)?;
        let bad = || HandshakeError::Malformed(format!("{key:?} must be binary of {N} bytes"));
        let bytes = Cursor::new(raw).bin().map_err(|_| bad())?;
        <[u8; N]>::try_from(bytes).map_err(|_| bad())
    }

    fn required(&self, key: &str) -> Result<&'a [u8], HandshakeError> {
        self.get(key).ok_or_else(|| {
            HandshakeError::Malformed(format!("the required key {key:?} is missing"))
        })
    }
}

/// Appends a map header of `entries` entries.
pub(crate) fn write_map(out: &mut Vec<u8>, entries: u32) {
    // Writing to a Vec cannot fail.
    let _ = rmp::encode::write_map_len(out, entries);
}

/// Appends a string entry.
pub(crate) fn write_str_entry(out: &mut Vec<u8>, key: &str, value: &str) {
    let _ = rmp::encode::write_str(out, key);
    let _ = rmp::encode::write_str(out, value);
}

/// Appends an integer entry.
pub(crate) fn write_uint_entry(out: &mut Vec<u8>, key: &str, value: u64) {
    let _ = rmp::encode::write_str(out, key);
    let _ = rmp::encode::write_uint(out, value);
}

/// Appends an entry holding an array of integers.
pub(crate) fn write_uints_entry(out: &mut Vec<u8>, key: &str, values: &[u64]) {
    let _ = rmp::encode::write_str(out, key);
    let _ = rmp::encode::write_array_len(out, values.len() as u32);
    for v in values {
        let _ = rmp::encode::write_uint(out, *v);
    }
}

/// Appends an entry holding an array of strings.
pub(crate) fn write_strs_entry(out: &mut Vec<u8>, key: &str, values: &[String]) {
    let _ = rmp::encode::write_str(out, key);
    let _ = rmp::encode::write_array_len(out, values.len() as u32);
    for v in values {
        let _ = rmp::encode::write_str(out, v);
    }
}

/// Appends an entry holding binary bytes.
pub(crate) fn write_bin_entry(out: &mut Vec<u8>, key: &str, value: &[u8]) {
    let _ = rmp::encode::write_str(out, key);
    let _ = rmp::encode::write_bin(out, value);
}
