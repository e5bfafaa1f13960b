//! A small MessagePack reader over a byte slice: the envelope's scalars, and [`value_len`], which
//! measures one whole value without decoding it, so that a frame is checked to hold exactly one
//! value, nested no deeper than a limit, before any of it is deserialized.

use super::error::Error;

/// The deepest nesting of arrays and maps a frame may have.
pub const MAX_DEPTH: usize = 64;

/// A position in a byte slice holding MessagePack.
#[derive(Debug, Clone, Copy)]
pub struct Cursor<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Cursor<'a> {
    /// A cursor at the start of `buf`.
    pub fn new(buf: &'a [u8]) -> Self {
        Cursor { buf, pos: 0 }
    }

    /// Bytes read so far.
    pub fn position(&self) -> usize {
        self.pos
    }

    /// A cursor over the same bytes at `pos` (past the end: one with nothing left to read).
    pub(crate) fn at(&self, pos: usize) -> Self {
        Cursor {
            buf: self.buf,
            pos: pos.min(self.buf.len()),
        }
    }

    /// The bytes not read yet.
    pub fn rest(&self) -> &'a [u8] {
        &self.buf[self.pos..]
    }

    #[inline]
    fn take(&mut self, n: usize) -> Result<&'a [u8], Error> {
        let end = self.pos.checked_add(n).filter(|end| *end <= self.buf.len());
        match end {
            Some(end) => {
                let out = &self.buf[self.pos..end];
                self.pos = end;
                Ok(out)
            }
            None => Err(short(self.pos, n, self.buf.len() - self.pos)),
        }
    }

    #[inline]
    fn byte(&mut self) -> Result<u8, Error> {
        match self.buf.get(self.pos) {
            Some(b) => {
                self.pos += 1;
                Ok(*b)
            }
            None => Err(short(self.pos, 1, 0)),
        }
    }

    #[inline]
    fn be(&mut self, n: usize) -> Result<u64, Error> {
        Ok(self
            .take(n)?
            .iter()
            .fold(0u64, |acc, b| acc << 8 | u64::from(*b)))
    }

    /// Reads an array header and returns its length.
    pub fn array_len(&mut self) -> Result<u64, Error> {
        let at = self.pos;
        match self.byte()? {
            m @ 0x90..=0x9f => Ok(u64::from(m & 0x0f)),
            0xdc => self.be(2),
            0xdd => self.be(4),
            m => Err(unexpected(at, m, "an array")),
        }
    }

    /// Reads a map header and returns its number of entries.
    pub fn map_len(&mut self) -> Result<u64, Error> {
        let at = self.pos;
        match self.byte()? {
            m @ 0x80..=0x8f => Ok(u64::from(m & 0x0f)),
            0xde => self.be(2),
            0xdf => self.be(4),
            m => Err(unexpected(at, m, "a map")),
        }
    }

    /// Reads a non-negative integer of any width.
    pub fn uint(&mut self) -> Result<u64, Error> {
        let at = self.pos;
        match self.byte()? {
            m @ 0x00..=0x7f => Ok(u64::from(m)),
            0xcc => self.be(1),
            0xcd => self.be(2),
            0xce => self.be(4),
            0xcf => self.be(8),
            m @ (0xd0..=0xd3) => {
                let width = 1usize << (m - 0xd0);
                let raw = self.be(width)?;
                let bits = 64 - 8 * width as u32;
                let signed = ((raw << bits) as i64) >> bits;
                u64::try_from(signed).map_err(|_| {
                    Error::InvalidMessagePack(format!(
                        "negative integer {signed} at offset {at} where a count or id was expected"
                    ))
                })
            }
            m => Err(unexpected(at, m, "a non-negative integer")),
        }
    }

    /// Reads a UTF-8 string.
    pub fn str(&mut self) -> Result<&'a str, Error> {
        let at = self.pos;
        let raw = self.str_bytes()?;
        std::str::from_utf8(raw).map_err(|e| {
            Error::InvalidMessagePack(format!("string at offset {at} is not UTF-8: {e}"))
        })
    }

    /// Reads a string's bytes, without checking that they are UTF-8.
    #[inline]
    pub(crate) fn str_bytes(&mut self) -> Result<&'a [u8], Error> {
        let at = self.pos;
        let len = match self.byte()? {
            m @ 0xa0..=0xbf => u64::from(m & 0x1f),
            0xd9 => self.be(1)?,
            0xda => self.be(2)?,
            0xdb => self.be(4)?,
            m => return Err(unexpected(at, m, "a string")),
        };
        self.take(usize::try_from(len).unwrap_or(usize::MAX))
    }

    /// The next marker byte, without consuming it.
    pub fn peek(&self) -> Option<u8> {
        self.buf.get(self.pos).copied()
    }

    /// Consumes a `nil` if one is next; returns whether it did.
    pub fn nil(&mut self) -> bool {
        if self.peek() == Some(0xc0) {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    /// Reads a Boolean.
    pub fn bool(&mut self) -> Result<bool, Error> {
        let at = self.pos;
        match self.byte()? {
            0xc2 => Ok(false),
            0xc3 => Ok(true),
            m => Err(unexpected(at, m, "a Boolean")),
        }
    }

    /// Reads an integer of any form, as an `i128` so that every `u64` and `i64` fits.
    pub fn int(&mut self) -> Result<i128, Error> {
        let at = self.pos;
        match self.byte()? {
            m @ 0x00..=0x7f => Ok(i128::from(m)),
            m @ 0xe0..=0xff => Ok(i128::from(m as i8)),
            0xcc => Ok(i128::from(self.be(1)?)),
            0xcd => Ok(i128::from(self.be(2)?)),
            0xce => Ok(i128::from(self.be(4)?)),
            0xcf => Ok(i128::from(self.be(8)?)),
            m @ (0xd0..=0xd3) => {
                let width = 1usize << (m - 0xd0);
                let raw = self.be(width)?;
                let bits = 64 - 8 * width as u32;
                Ok(i128::from(((raw << bits) as i64) >> bits))
            }
            m => Err(unexpected(at, m, "an integer")),
        }
    }

    /// Reads a float (32 or 64 bits).
    pub fn float(&mut self) -> Result<f64, Error> {
        let at = self.pos;
        match self.byte()? {
            0xca => Ok(f64::from(f32::from_bits(self.be(4)? as u32))),
            0xcb => Ok(f64::from_bits(self.be(8)?)),
            m => Err(unexpected(at, m, "a float")),
        }
    }

    /// Reads binary data.
    pub fn bin(&mut self) -> Result<&'a [u8], Error> {
        let at = self.pos;
        let len = match self.byte()? {
            0xc4 => self.be(1)?,
            0xc5 => self.be(2)?,
            0xc6 => self.be(4)?,
            m => return Err(unexpected(at, m, "binary data")),
        };
        self.take(usize::try_from(len).unwrap_or(usize::MAX))
    }

    /// Skips one whole value and returns its bytes.
    pub fn value(&mut self) -> Result<&'a [u8], Error> {
        let start = self.pos;
        let len = value_len(self.rest())?;
        self.take(len)?;
        Ok(&self.buf[start..self.pos])
    }
}

/// The error of a value cut short: `needed` bytes at `at`, of which only `remain` are there.
#[cold]
#[inline(never)]
fn short(at: usize, needed: usize, remain: usize) -> Error {
    Error::InvalidMessagePack(format!(
        "value at offset {at} needs {needed} more bytes but only {remain} remain"
    ))
}

#[cold]
#[inline(never)]
fn unexpected(at: usize, marker: u8, wanted: &str) -> Error {
    Error::InvalidMessagePack(format!(
        "expected {wanted} at offset {at}, found marker 0x{marker:02x}"
    ))
}

/// The length in bytes of the one MessagePack value at the start of `buf`.
///
/// Reads only headers: string and binary bodies are skipped, not examined, so the cost does not
/// depend on payload sizes. Fails on a truncated value, on a reserved marker, on extension types
/// (which sparkwire does not use) and on nesting deeper than [`MAX_DEPTH`]. Never allocates: a
/// container that declares more elements than bytes remain is refused at once, and the open
/// containers are counted in a fixed array of [`MAX_DEPTH`] + 1 entries.
pub fn value_len(buf: &[u8]) -> Result<usize, Error> {
    let mut c = Cursor::new(buf);
    // Elements still to read in each open container, innermost at `open[depth]`; `open[0]` is the
    // top-level value itself.
    let mut open = [0u64; MAX_DEPTH + 1];
    open[0] = 1;
    let mut depth = 0usize;
    loop {
        if open[depth] == 0 {
            if depth == 0 {
                return Ok(c.pos);
            }
            depth -= 1;
            continue;
        }
        open[depth] -= 1;
        let at = c.pos;
        let marker = c.byte()?;
        let (skip, children): (u64, u64) = match marker {
            0x00..=0x7f | 0xe0..=0xff | 0xc0 | 0xc2 | 0xc3 => continue,
            0x80..=0x8f => (0, 2 * u64::from(marker & 0x0f)),
            0x90..=0x9f => (0, u64::from(marker & 0x0f)),
            0xa0..=0xbf => (u64::from(marker & 0x1f), 0),
            0xcc | 0xd0 => (1, 0),
            0xcd | 0xd1 => (2, 0),
            0xce | 0xd2 | 0xca => (4, 0),
            0xcf | 0xd3 | 0xcb => (8, 0),
            0xc4 | 0xd9 => (c.be(1)?, 0),
            0xc5 | 0xda => (c.be(2)?, 0),
            0xc6 | 0xdb => (c.be(4)?, 0),
            0xdc => (0, c.be(2)?),
            0xdd => (0, c.be(4)?),
            0xde => (0, 2 * c.be(2)?),
            0xdf => (0, 2 * c.be(4)?),
            0xc1 => {
                return Err(Error::InvalidMessagePack(format!(
                    "reserved marker 0xc1 at offset {at}"
                )));
            }
            // 0xc7..=0xc9 and 0xd4..=0xd8: extension types.
            _ => {
                return Err(Error::InvalidMessagePack(format!(
                    "extension type (marker 0x{marker:02x}) at offset {at}; sparkwire uses none"
                )));
            }
        };
        if skip > 0 {
            c.take(usize::try_from(skip).unwrap_or(usize::MAX))?;
        }
        if !matches!(marker, 0x80..=0x9f | 0xdc..=0xdf) {
            continue;
        }
        let remaining = (buf.len() - c.pos) as u64;
        if children > remaining {
            return Err(Error::InvalidMessagePack(format!(
                "container at offset {at} declares {children} elements but only {remaining} bytes remain"
            )));
        }
        // Every array and map is a level, an empty one too (SPEC §2, §11.1): the deserializer
        // counts them so, and the scan must refuse what it would.
        if depth >= MAX_DEPTH {
            return Err(Error::TooDeep { limit: MAX_DEPTH });
        }
        if children > 0 {
            depth += 1;
            open[depth] = children;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn measures_nested_values_and_stops_at_their_end() {
        // [1, {"a": bin8(3)}, "xy"] followed by a stray byte.
        let buf = [
            0x93, 0x01, 0x81, 0xa1, b'a', 0xc4, 0x03, 1, 2, 3, 0xa2, b'x', b'y', 0xff,
        ];
        assert_eq!(value_len(&buf).ok(), Some(13));
    }

    #[test]
    fn refuses_truncated_reserved_extension_and_huge_declarations() {
        assert!(matches!(
            value_len(&[0x92, 0x01]),
            Err(Error::InvalidMessagePack(_))
        ));
        assert!(matches!(
            value_len(&[0xc1]),
            Err(Error::InvalidMessagePack(_))
        ));
        assert!(matches!(
            value_len(&[0xd4, 0x01, 0x02]),
            Err(Error::InvalidMessagePack(_))
        ));
        assert!(matches!(
            value_len(&[0xdd, 0xff, 0xff, 0xff, 0xff, 0x01]),
            Err(Error::InvalidMessagePack(_))
        ));
        assert!(matches!(
            value_len(&[0xc6, 0xff, 0xff, 0xff, 0xff]),
            Err(Error::InvalidMessagePack(_))
        ));
        assert!(matches!(value_len(&[]), Err(Error::InvalidMessagePack(_))));
    }

    #[test]
    fn refuses_nesting_past_the_limit() {
        let deep = vec![0x91u8; MAX_DEPTH + 2];
        assert!(matches!(value_len(&deep), Err(Error::TooDeep { .. })));
        let mut ok = vec![0x91u8; MAX_DEPTH - 1];
        ok.push(0x00);
        assert_eq!(value_len(&ok).ok(), Some(MAX_DEPTH));
    }

    #[test]
    fn the_limit_counts_every_container_the_outermost_included() {
        // 64 nested arrays around a scalar: accepted; 65: refused. A scalar is no level.
        let mut at_limit = vec![0x91u8; MAX_DEPTH];
        at_limit.push(0x00);
        assert_eq!(value_len(&at_limit).ok(), Some(MAX_DEPTH + 1));
        let mut past = vec![0x91u8; MAX_DEPTH + 1];
        past.push(0x00);
        assert!(matches!(value_len(&past), Err(Error::TooDeep { .. })));
        // Maps count like arrays: {0: [[...]]}.
        let mut in_map = vec![0x81u8, 0x00];
        in_map.extend(vec![0x91u8; MAX_DEPTH]);
        in_map.push(0x00);
        assert!(matches!(value_len(&in_map), Err(Error::TooDeep { .. })));
    }

    #[test]
    fn an_empty_array_or_map_is_a_level_too() {
        // 63 arrays around an empty array or map: 64 levels, accepted; 64 around one: refused.
        for empty in [0x90u8, 0x80, 0xdc, 0xde] {
            let tail: &[u8] = if empty >= 0xdc {
                &[empty, 0, 0]
            } else {
                &[empty]
            };
            let mut at_limit = vec![0x91u8; MAX_DEPTH - 1];
            at_limit.extend_from_slice(tail);
            assert_eq!(
                value_len(&at_limit).ok(),
                Some(at_limit.len()),
                "{empty:#x}"
            );
            let mut past = vec![0x91u8; MAX_DEPTH];
            past.extend_from_slice(tail);
            assert!(
                matches!(value_len(&past), Err(Error::TooDeep { .. })),
                "{empty:#x}"
            );
        }
    }

    #[test]
    fn reads_scalars_of_every_width() {
        let buf = [0xcd, 0x01, 0x00, 0xd0, 0x05, 0xa2, b'h', b'i'];
        let mut c = Cursor::new(&buf);
        assert_eq!(c.uint().ok(), Some(256));
        assert_eq!(c.uint().ok(), Some(5));
        assert_eq!(c.str().ok(), Some("hi"));
        let neg = [0xd0, 0xff];
        assert!(Cursor::new(&neg).uint().is_err());
    }
}
