//! [`Payload`]: opaque binary fields (serialized tasks, results, tokens).
//!
//! On MessagePack a payload is always a `bin` value. In human-readable formats (the JSON of the golden
//! vectors and of traces) it is a lowercase hex string. Decoding a payload from a frame does not copy
//! it when the frame is registered with [`with_source_frame`]: the payload is then a slice of the
//! frame's own buffer.

use std::cell::RefCell;
use std::fmt;

use bytes::Bytes;
use serde::de::{self, Visitor};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// Opaque bytes carried by a message, cheap to clone (reference counted).
#[derive(Clone, PartialEq, Eq, Default)]
pub struct Payload(pub Bytes);

impl Payload {
    /// A payload holding a copy of `data`.
    pub fn copy_from(data: &[u8]) -> Self {
        Payload(Bytes::copy_from_slice(data))
    }

    /// The bytes.
    pub fn as_slice(&self) -> &[u8] {
        &self.0
    }

    /// Number of bytes.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// True when there are no bytes.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl fmt::Debug for Payload {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        const SHOWN: usize = 32;
        let shown = &self.0[..self.0.len().min(SHOWN)];
        write!(f, "Payload({} bytes: {}", self.0.len(), to_hex(shown))?;
        if self.0.len() > SHOWN {
            write!(f, "…")?;
        }
        write!(f, ")")
    }
}

impl From<Vec<u8>> for Payload {
    fn from(v: Vec<u8>) -> Self {
        Payload(Bytes::from(v))
    }
}

impl From<Bytes> for Payload {
    fn from(b: Bytes) -> Self {
        Payload(b)
    }
}

/// Lowercase hex of `data`.
pub fn to_hex(data: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(data.len() * 2);
    for b in data {
        out.push(DIGITS[(b >> 4) as usize] as char);
        out.push(DIGITS[(b & 0xf) as usize] as char);
    }
    out
}

/// Parses lowercase or uppercase hex; `None` on an odd length or a non-hex digit.
pub fn from_hex(text: &str) -> Option<Vec<u8>> {
    fn digit(c: u8) -> Option<u8> {
        match c {
            b'0'..=b'9' => Some(c - b'0'),
            b'a'..=b'f' => Some(c - b'a' + 10),
            b'A'..=b'F' => Some(c - b'A' + 10),
            _ => None,
        }
    }
    let raw = text.as_bytes();
    if raw.len() % 2 != 0 {
        return None;
    }
    raw.chunks_exact(2)
        .map(|pair| Some(digit(pair[0])? << 4 | digit(pair[1])?))
        .collect()
}

thread_local! {
    static SOURCE_FRAME: RefCell<Option<Bytes>> = const { RefCell::new(None) };
}

/// Runs `f` with `frame` registered as the buffer that borrowed payloads are sliced from.
///
/// While `f` runs, a [`Payload`] deserialized from bytes that lie inside `frame` shares `frame`'s
/// allocation instead of copying. The registration ends when `f` returns.
pub fn with_source_frame<R>(frame: &Bytes, f: impl FnOnce() -> R) -> R {
    struct Restore(Option<Bytes>);
    impl Drop for Restore {
        fn drop(&mut self) {
            let previous = self.0.take();
            SOURCE_FRAME.with(|cell| *cell.borrow_mut() = previous);
        }
    }
    let previous = SOURCE_FRAME.with(|cell| cell.borrow_mut().replace(frame.clone()));
    let _restore = Restore(previous);
    f()
}

fn payload_from_borrowed(data: &[u8]) -> Payload {
    SOURCE_FRAME.with(|cell| {
        if let Some(frame) = cell.borrow().as_ref() {
            let start = frame.as_ptr() as usize;
            let end = start + frame.len();
            let at = data.as_ptr() as usize;
            if !data.is_empty() && at >= start && at + data.len() <= end {
                return Payload(frame.slice_ref(data));
            }
        }
        Payload::copy_from(data)
    })
}

impl Serialize for Payload {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        if serializer.is_human_readable() {
            serializer.serialize_str(&to_hex(&self.0))
        } else {
            serializer.serialize_bytes(&self.0)
        }
    }
}

/// `text`: the readable form (JSON), where binary data is a hex string; in MessagePack it is
/// `bin` only, and a `str` is refused (SPEC §4.1).
struct PayloadVisitor {
    text: bool,
}

impl<'de> Visitor<'de> for PayloadVisitor {
    type Value = Payload;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(if self.text {
            "binary data as a hex string"
        } else {
            "binary data (MessagePack bin)"
        })
    }

    fn visit_borrowed_bytes<E: de::Error>(self, v: &'de [u8]) -> Result<Payload, E> {
        Ok(payload_from_borrowed(v))
    }

    fn visit_bytes<E: de::Error>(self, v: &[u8]) -> Result<Payload, E> {
        Ok(Payload::copy_from(v))
    }

    fn visit_byte_buf<E: de::Error>(self, v: Vec<u8>) -> Result<Payload, E> {
        Ok(Payload::from(v))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Payload, E> {
        if !self.text {
            return Err(E::invalid_type(de::Unexpected::Str(v), &self));
        }
        from_hex(v)
            .map(Payload::from)
            .ok_or_else(|| E::custom("payload text is not an even-length hex string"))
    }
}

impl<'de> Deserialize<'de> for Payload {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        if deserializer.is_human_readable() {
            deserializer.deserialize_str(PayloadVisitor { text: true })
        } else {
            deserializer.deserialize_bytes(PayloadVisitor { text: false })
        }
    }
}

#[cfg(feature = "arbitrary")]
impl<'a> arbitrary::Arbitrary<'a> for Payload {
    fn arbitrary(u: &mut arbitrary::Unstructured<'a>) -> arbitrary::Result<Self> {
        let data: Vec<u8> = u.arbitrary()?;
        Ok(Payload::from(data))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_round_trips_and_rejects_bad_text() {
        let data = [0u8, 1, 0xab, 0xff];
        assert_eq!(to_hex(&data), "0001abff");
        assert_eq!(from_hex("0001ABff").as_deref(), Some(&data[..]));
        assert_eq!(from_hex("abc"), None);
        assert_eq!(from_hex("zz"), None);
    }

    #[test]
    fn borrowed_payload_inside_registered_frame_shares_its_buffer() {
        let frame = Bytes::from(vec![7u8; 64]);
        let inner = &frame[10..20];
        let p = with_source_frame(&frame, || payload_from_borrowed(inner));
        assert_eq!(p.0.as_ptr(), inner.as_ptr());
        let outside = vec![7u8; 10];
        let q = with_source_frame(&frame, || payload_from_borrowed(&outside));
        assert_ne!(q.0.as_ptr(), outside.as_ptr());
        assert_eq!(q.as_slice(), &outside[..]);
    }
}
