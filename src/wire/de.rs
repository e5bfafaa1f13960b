//! The serde deserializer of sparkwire's MessagePack: values read straight from the frame's bytes
//! and held to SPEC §4.1 as they are read.
//!
//! * A struct (a message's fields, a record, a union's variant) is a map of its fields; an array
//!   is refused with a typed error naming the struct.
//! * A `map<K,V>` is canonical: keys distinct and ascending (strings by their UTF-8 bytes,
//!   integers by value). Keys are compared where they lie in the frame, without copying them.
//! * A union is its variant's name (a variant without fields) or a map of one entry, variant to
//!   fields.
//! * Strings and binary data are borrowed from the input, so that payloads stay zero-copy
//!   ([`crate::messages::with_source_frame`]) and a `String` field costs one allocation, its own.
//!   Field and variant names are matched on their bytes: a name that is not UTF-8 matches none, and
//!   an unknown field is skipped without being examined, as any unknown field is.
//!
//! Nesting is bounded by [`MAX_DEPTH`] even on input that was not measured first.

use std::fmt;

use serde::de::{
    self, DeserializeSeed, Deserializer, EnumAccess, MapAccess, SeqAccess, Unexpected,
    VariantAccess, Visitor,
};

use super::msgpack::{Cursor, MAX_DEPTH};

/// Why a value could not be deserialized.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct DecodeError(String);

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for DecodeError {}

impl de::Error for DecodeError {
    fn custom<T: fmt::Display>(msg: T) -> Self {
        DecodeError(msg.to_string())
    }
}

impl From<super::Error> for DecodeError {
    fn from(e: super::Error) -> Self {
        DecodeError(e.to_string())
    }
}

/// What a struct must be, for the error text.
pub(crate) struct StructAsMap(pub(crate) &'static str);

impl de::Expected for StructAsMap {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "a map of the fields of {} (never an array)", self.0)
    }
}

/// Deserializes a `T` from the one MessagePack value at the start of `bytes`. Whatever follows the
/// value is left unread (callers check for trailing bytes themselves).
pub(crate) fn from_slice<'de, T: de::Deserialize<'de>>(bytes: &'de [u8]) -> Result<T, DecodeError> {
    T::deserialize(&mut MsgPack::new(bytes))
}

/// [`from_slice`], and where the error arose: `bytes` lie at `base` in their frame's body.
pub(crate) fn from_slice_at<'de, T: de::Deserialize<'de>>(
    bytes: &'de [u8],
    base: usize,
) -> Result<T, (DecodeError, super::Location)> {
    let mut d = MsgPack::new(bytes);
    T::deserialize(&mut d).map_err(|e| (e, d.location(base)))
}

/// The offset of `part` in `whole` when it lies inside it, else 0 (offsets are then counted
/// from the start of `part`).
pub(crate) fn offset_in(whole: &[u8], part: &[u8]) -> usize {
    let start = whole.as_ptr() as usize;
    let at = part.as_ptr() as usize;
    if at >= start && at.saturating_add(part.len()) <= start.saturating_add(whole.len()) {
        at - start
    } else {
        0
    }
}

/// A MessagePack deserializer over a byte slice (see the module documentation).
pub(crate) struct MsgPack<'de> {
    c: Cursor<'de>,
    depth: usize,
    /// After an error, the way from the value that was wrong out to the value deserialized
    /// first: each field, map entry or element whose value failed adds its step as the error
    /// passes outward through it ([`MsgPack::path`] reads it back to front). Nothing is recorded
    /// while values are read without error, so that decoding allocates nothing for it.
    path: Vec<Step<'de>>,
    /// The key of the map entry whose value comes next: its step (a canonical map's key, read
    /// for its order anyway), or where the key starts (a struct's field or a map's key read
    /// again only if its value fails, so that a value read without error reads its key once).
    key: Option<PendingKey<'de>>,
    /// After an error: where the offending item starts in the input (SPEC §8.1's `offset`). Set
    /// once, by the innermost value, key or element that saw the error (see [`MsgPack::fault_at`]).
    fault: Option<usize>,
}

/// The key of the map entry being read, for the path of an error in its value.
#[derive(Debug, Clone, Copy)]
enum PendingKey<'de> {
    /// The step, already read.
    Step(Step<'de>),
    /// The key starts at this offset of the input; its step is read from there on an error.
    At(usize),
}

/// One step of a path into a value: a struct's field, a map's key, an array's element.
#[derive(Debug, Clone, Copy)]
enum Step<'de> {
    Field(&'de [u8]),
    Key(Key<'de>),
    Index(u64),
}

fn is_str(m: u8) -> bool {
    matches!(m, 0xa0..=0xbf | 0xd9..=0xdb)
}

fn is_map(m: u8) -> bool {
    matches!(m, 0x80..=0x8f | 0xde | 0xdf)
}

fn is_array(m: u8) -> bool {
    matches!(m, 0x90..=0x9f | 0xdc | 0xdd)
}

fn is_int(m: u8) -> bool {
    matches!(m, 0x00..=0x7f | 0xcc..=0xd3 | 0xe0..=0xff)
}

/// What the marker `m` starts, for errors.
fn unexpected(m: u8) -> Unexpected<'static> {
    match m {
        0xc0 => Unexpected::Unit,
        0xc2 | 0xc3 => Unexpected::Other("a Boolean"),
        0xca | 0xcb => Unexpected::Other("a float"),
        0xc4..=0xc6 => Unexpected::Other("binary data"),
        m if is_int(m) => Unexpected::Other("an integer"),
        m if is_str(m) => Unexpected::Other("a string"),
        m if is_array(m) => Unexpected::Seq,
        m if is_map(m) => Unexpected::Map,
        _ => Unexpected::Other("an extension type"),
    }
}

impl<'de> MsgPack<'de> {
    /// A deserializer at the start of `input`.
    pub(crate) fn new(input: &'de [u8]) -> Self {
        MsgPack {
            c: Cursor::new(input),
            depth: 0,
            path: Vec::new(),
            key: None,
            fault: None,
        }
    }

    /// Records `start` as where the fault lies, unless an item inside already did: an error
    /// passes outward through every value that holds it, and the innermost one is the offending
    /// item (SPEC §8.1: the value of the wrong type, the map of a missing field, …).
    fn fault_at<T>(&mut self, start: usize, r: Result<T, DecodeError>) -> Result<T, DecodeError> {
        if r.is_err() && self.fault.is_none() {
            self.fault = Some(start);
        }
        r
    }

    /// Where an error arose, the input lying at `base` in the frame's body: the path to the
    /// offending item (or to the map or array that holds an offending key or element) and the
    /// offset of the item's first byte (SPEC §8.1). A fault found once the whole value was read
    /// (a version 1 value that does not convert, say) lies at the value itself: offset `base`.
    pub(crate) fn location(&self, base: usize) -> super::Location {
        super::Location {
            path: self.path(),
            offset: u64::try_from(base.saturating_add(self.fault.unwrap_or(0))).unwrap_or(u64::MAX),
        }
    }

    /// The path to the value being read (after an error, the value that was wrong, or the map,
    /// struct or array that holds an offending key or element): fields joined by `.`, map keys and
    /// array indexes in brackets, as `appDesc.command.environment["PATH"]` or
    /// `resourceProfileToTotalExecs[0]`; string keys quoted as SPEC §8.2 says ([`quote`]). Empty at
    /// the top.
    pub(crate) fn path(&self) -> String {
        let mut out = String::new();
        for step in self.path.iter().rev() {
            match step {
                Step::Field(name) => {
                    if !out.is_empty() {
                        out.push('.');
                    }
                    out.push_str(&String::from_utf8_lossy(name));
                }
                Step::Key(key) => out.push_str(&format!("[{key}]")),
                Step::Index(i) => out.push_str(&format!("[{i}]")),
            }
        }
        out
    }

    fn peek(&self) -> Result<u8, DecodeError> {
        self.c.peek().ok_or_else(|| {
            DecodeError(format!(
                "a value was expected at offset {}, the input ends there",
                self.c.position()
            ))
        })
    }

    fn enter(&mut self) -> Result<(), DecodeError> {
        if self.depth >= MAX_DEPTH {
            return Err(super::Error::TooDeep { limit: MAX_DEPTH }.into());
        }
        self.depth += 1;
        Ok(())
    }

    fn seq<V: Visitor<'de>>(&mut self, visitor: V) -> Result<V::Value, DecodeError> {
        let len = self.c.array_len()?;
        self.enter()?;
        let mut access = Seq {
            de: self,
            left: len,
            index: 0,
            last: None,
            ended: false,
        };
        let value = match visitor.visit_seq(&mut access) {
            Ok(value) => value,
            Err(e) => {
                // Refused after an element was read and before the array ended: that element is
                // the offending one (a set's element given twice or out of order).
                if let (None, false, Some(last)) = (access.de.fault, access.ended, access.last) {
                    access.de.fault = Some(last);
                }
                return Err(e);
            }
        };
        let left = access.left;
        if left != 0 {
            return Err(DecodeError(format!(
                "an array of {len} elements where {} were expected",
                len - left
            )));
        }
        self.depth -= 1;
        Ok(value)
    }

    fn map<V: Visitor<'de>>(
        &mut self,
        visitor: V,
        canonical: bool,
    ) -> Result<V::Value, DecodeError> {
        let len = self.c.map_len()?;
        self.enter()?;
        let mut access = Map {
            de: self,
            left: len,
            canonical,
            last: None,
            pending: None,
        };
        let value = match visitor.visit_map(&mut access) {
            Ok(value) => value,
            Err(e) => {
                // Refused between a key and its value: the key is the offending item (a field
                // given twice).
                if let (None, Some(key)) = (access.de.fault, access.pending) {
                    access.de.fault = Some(key);
                }
                return Err(e);
            }
        };
        let left = access.left;
        if left != 0 {
            return Err(DecodeError(format!(
                "a map of {len} entries where {} were expected",
                len - left
            )));
        }
        self.depth -= 1;
        Ok(value)
    }
}

/// Each method records where its value starts and, on an error, marks it as the offending item
/// unless an item inside it already was ([`MsgPack::fault_at`]); the reading itself is in the
/// `read_*` methods below.
macro_rules! located {
    ($($method:ident => $read:ident),* $(,)?) => {$(
        fn $method<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DecodeError> {
            let start = self.c.position();
            let r = self.$read(visitor);
            self.fault_at(start, r)
        }
    )*};
}

impl<'de> Deserializer<'de> for &mut MsgPack<'de> {
    type Error = DecodeError;

    located! {
        deserialize_any => read_any,
        deserialize_str => read_str,
        deserialize_string => read_str,
        deserialize_char => read_str,
        deserialize_option => read_option,
        deserialize_seq => read_seq,
        deserialize_map => read_map,
        deserialize_identifier => read_identifier,
        deserialize_ignored_any => read_ignored,
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 bytes byte_buf unit
    }

    fn deserialize_unit_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value, DecodeError> {
        let start = self.c.position();
        let r = self.read_unit_struct(visitor);
        self.fault_at(start, r)
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value, DecodeError> {
        let start = self.c.position();
        let r = visitor.visit_newtype_struct(&mut *self);
        self.fault_at(start, r)
    }

    fn deserialize_tuple<V: Visitor<'de>>(
        self,
        _len: usize,
        visitor: V,
    ) -> Result<V::Value, DecodeError> {
        self.deserialize_seq(visitor)
    }

    fn deserialize_tuple_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _len: usize,
        visitor: V,
    ) -> Result<V::Value, DecodeError> {
        self.deserialize_seq(visitor)
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        _fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, DecodeError> {
        let start = self.c.position();
        let r = self.read_struct(name, visitor);
        self.fault_at(start, r)
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, DecodeError> {
        let start = self.c.position();
        let r = self.read_enum(visitor);
        self.fault_at(start, r)
    }

    fn is_human_readable(&self) -> bool {
        false
    }
}

impl<'de> MsgPack<'de> {
    fn read_any<V: Visitor<'de>>(&mut self, visitor: V) -> Result<V::Value, DecodeError> {
        let m = self.peek()?;
        match m {
            0xc0 => {
                self.c.nil();
                visitor.visit_unit()
            }
            0xc2 | 0xc3 => visitor.visit_bool(self.c.bool()?),
            0x00..=0x7f | 0xcc..=0xcf => {
                // An unsigned integer: at most u64::MAX.
                let v = self.c.int()?;
                visitor.visit_u64(u64::try_from(v).map_err(<DecodeError as de::Error>::custom)?)
            }
            0xd0..=0xd3 | 0xe0..=0xff => {
                let v = self.c.int()?;
                visitor.visit_i64(i64::try_from(v).map_err(<DecodeError as de::Error>::custom)?)
            }
            // A 32-bit float widens to f64 exactly, so narrowing it back is exact too.
            0xca => visitor.visit_f32(self.c.float()? as f32),
            0xcb => visitor.visit_f64(self.c.float()?),
            m if is_str(m) => visitor.visit_borrowed_str(self.c.str()?),
            0xc4..=0xc6 => visitor.visit_borrowed_bytes(self.c.bin()?),
            m if is_array(m) => self.seq(visitor),
            m if is_map(m) => self.map(visitor, false),
            m => Err(DecodeError(format!(
                "marker 0x{m:02x} at offset {}: not a value sparkwire uses",
                self.c.position()
            ))),
        }
    }

    /// A string is a MessagePack `str`, never `bin`, even when its bytes are UTF-8 (SPEC §4.1).
    fn read_str<V: Visitor<'de>>(&mut self, visitor: V) -> Result<V::Value, DecodeError> {
        let m = self.peek()?;
        if matches!(m, 0xc4..=0xc6) {
            return Err(de::Error::invalid_type(
                unexpected(m),
                &"a string (MessagePack str; never bin)",
            ));
        }
        self.read_any(visitor)
    }

    fn read_option<V: Visitor<'de>>(&mut self, visitor: V) -> Result<V::Value, DecodeError> {
        if self.c.nil() {
            visitor.visit_none()
        } else {
            visitor.visit_some(&mut *self)
        }
    }

    fn read_unit_struct<V: Visitor<'de>>(&mut self, visitor: V) -> Result<V::Value, DecodeError> {
        // `nil`, or an empty array as rmp-serde writes a unit struct.
        if self.c.nil() {
            return visitor.visit_unit();
        }
        if self.c.peek() == Some(0x90) {
            self.c.array_len()?;
            return visitor.visit_unit();
        }
        self.read_any(visitor)
    }

    fn read_seq<V: Visitor<'de>>(&mut self, visitor: V) -> Result<V::Value, DecodeError> {
        let m = self.peek()?;
        if matches!(m, 0xc4..=0xc6) {
            // Binary data read as a list of bytes.
            let bytes = self.c.bin()?;
            return visitor.visit_seq(de::value::SeqDeserializer::new(bytes.iter().copied()));
        }
        self.read_any(visitor)
    }

    fn read_map<V: Visitor<'de>>(&mut self, visitor: V) -> Result<V::Value, DecodeError> {
        if is_map(self.peek()?) {
            self.map(visitor, true)
        } else {
            self.read_any(visitor)
        }
    }

    fn read_struct<V: Visitor<'de>>(
        &mut self,
        name: &'static str,
        visitor: V,
    ) -> Result<V::Value, DecodeError> {
        let m = self.peek()?;
        if is_map(m) {
            self.map(visitor, false)
        } else if is_array(m) {
            Err(de::Error::invalid_type(Unexpected::Seq, &StructAsMap(name)))
        } else {
            self.read_any(visitor)
        }
    }

    fn read_enum<V: Visitor<'de>>(&mut self, visitor: V) -> Result<V::Value, DecodeError> {
        let m = self.peek()?;
        if is_str(m) {
            return visitor.visit_enum(Union {
                de: self,
                with_value: false,
            });
        }
        if !is_map(m) {
            return Err(de::Error::invalid_type(
                unexpected(m),
                &"a variant name, or a map of one entry from the variant name to its fields",
            ));
        }
        let entries = self.c.map_len()?;
        if entries != 1 {
            return Err(DecodeError(format!(
                "a union value is a map of exactly one entry (its variant), found {entries} entries"
            )));
        }
        self.enter()?;
        let value = visitor.visit_enum(Union {
            de: &mut *self,
            with_value: true,
        })?;
        self.depth -= 1;
        Ok(value)
    }

    /// A field or variant name: a string, matched on its bytes.
    fn read_identifier<V: Visitor<'de>>(&mut self, visitor: V) -> Result<V::Value, DecodeError> {
        let m = self.peek()?;
        if is_str(m) {
            visitor.visit_borrowed_bytes(self.c.str_bytes()?)
        } else {
            Err(de::Error::invalid_type(
                unexpected(m),
                &"a field or variant name (a string)",
            ))
        }
    }

    /// What is skipped (an unknown field's value) is not examined: it only has to be one
    /// well-formed value.
    fn read_ignored<V: Visitor<'de>>(&mut self, visitor: V) -> Result<V::Value, DecodeError> {
        self.c.value()?;
        visitor.visit_unit()
    }
}

struct Seq<'a, 'de> {
    de: &'a mut MsgPack<'de>,
    left: u64,
    /// The index of the next element.
    index: u64,
    /// Where the last element read starts.
    last: Option<usize>,
    /// Whether the visitor asked past the last element.
    ended: bool,
}

impl<'de> SeqAccess<'de> for Seq<'_, 'de> {
    type Error = DecodeError;

    fn next_element_seed<T: DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> Result<Option<T::Value>, DecodeError> {
        if self.left == 0 {
            self.ended = true;
            return Ok(None);
        }
        self.left -= 1;
        let index = self.index;
        self.index += 1;
        let start = self.de.c.position();
        let value = seed.deserialize(&mut *self.de);
        let value = match self.de.fault_at(start, value) {
            Ok(value) => value,
            Err(e) => {
                self.de.path.push(Step::Index(index));
                return Err(e);
            }
        };
        self.last = Some(start);
        Ok(Some(value))
    }

    fn size_hint(&self) -> Option<usize> {
        // Every element takes at least a byte: a declaration past the input reserves nothing more.
        usize::try_from(self.left)
            .ok()
            .map(|n| n.min(self.de.c.rest().len()))
    }
}

/// A map key as far as its order goes, borrowed from the input.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Key<'de> {
    Int(i128),
    Str(&'de [u8]),
}

impl fmt::Display for Key<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Key::Int(i) => write!(f, "{i}"),
            Key::Str(s) => f.write_str(&quote(&String::from_utf8_lossy(s))),
        }
    }
}

struct Map<'a, 'de> {
    de: &'a mut MsgPack<'de>,
    left: u64,
    /// A `map<K,V>`: keys must come distinct and ascending.
    canonical: bool,
    last: Option<Key<'de>>,
    /// Where the key whose value comes next starts.
    pending: Option<usize>,
}

/// A string map key as a path writes it (SPEC §8.2): in double quotes, with `"` and `\` escaped
/// by a backslash and the control characters U+0000–U+001F and U+007F as `\u` and four lowercase
/// hex digits; every other character, non-ASCII included, as it is.
pub(crate) fn quote(key: &str) -> String {
    let mut out = String::with_capacity(key.len() + 2);
    out.push('"');
    for ch in key.chars() {
        match ch {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if c < ' ' || c == '\u{7f}' => out.push_str(&format!("\\u{:04x}", u32::from(c))),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

impl<'de> Map<'_, 'de> {
    /// The key at the cursor, if it is a string or an integer (keys of other kinds are refused by
    /// the key's own type).
    fn peek_key(&self) -> Option<Key<'de>> {
        key_at(self.de.c)
    }
}

/// The key at `at`, if it is a string or an integer.
fn key_at(mut at: Cursor<'_>) -> Option<Key<'_>> {
    match at.peek()? {
        m if is_str(m) => at.str_bytes().ok().map(Key::Str),
        m if is_int(m) => at.int().ok().map(Key::Int),
        _ => None,
    }
}

impl<'de> MsgPack<'de> {
    /// The path's step of a map entry whose value failed: a string key is a field (a struct's,
    /// or a map's as a path names it), any other a key.
    fn key_step(&self, key: PendingKey<'de>) -> Option<Step<'de>> {
        match key {
            PendingKey::Step(step) => Some(step),
            PendingKey::At(pos) => match key_at(self.c.at(pos))? {
                Key::Str(name) => Some(Step::Field(name)),
                other => Some(Step::Key(other)),
            },
        }
    }
}

impl<'de> MapAccess<'de> for Map<'_, 'de> {
    type Error = DecodeError;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, DecodeError> {
        if self.left == 0 {
            return Ok(None);
        }
        self.left -= 1;
        let start = self.de.c.position();
        // A key is no step of the path: a fault of the key itself lies at the map (SPEC §8.2).
        self.de.key = None;
        if !self.canonical {
            // Its step is read again from `start` only if its value fails.
            let key = seed.deserialize(&mut *self.de);
            let key = self.de.fault_at(start, key)?;
            self.pending = Some(start);
            self.de.key = Some(PendingKey::At(start));
            return Ok(Some(key));
        }
        let now = self.peek_key();
        let key = seed.deserialize(&mut *self.de);
        let key = self.de.fault_at(start, key)?;
        self.pending = Some(start);
        self.de.key = now.map(|now| PendingKey::Step(Step::Key(now)));
        if let Some(now) = now {
            if let Some(last) = self.last {
                let fault = if now == last {
                    Some(format!(
                        "map key {now} given twice (keys are distinct and ascending)"
                    ))
                } else if std::mem::discriminant(&now) == std::mem::discriminant(&last)
                    && now < last
                {
                    // Keys of different kinds are refused by the key's own type.
                    Some(format!(
                        "map key {now} after {last}: keys are distinct and ascending"
                    ))
                } else {
                    None
                };
                if let Some(fault) = fault {
                    return self.de.fault_at(start, Err(DecodeError(fault)));
                }
            }
            self.last = Some(now);
        }
        Ok(Some(key))
    }

    fn next_value_seed<T: DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> Result<T::Value, DecodeError> {
        let step = self.de.key.take();
        self.pending = None;
        let start = self.de.c.position();
        let value = seed.deserialize(&mut *self.de);
        match self.de.fault_at(start, value) {
            Ok(value) => Ok(value),
            Err(e) => {
                if let Some(step) = step.and_then(|key| self.de.key_step(key)) {
                    self.de.path.push(step);
                }
                Err(e)
            }
        }
    }

    fn size_hint(&self) -> Option<usize> {
        usize::try_from(self.left)
            .ok()
            .map(|n| n.min(self.de.c.rest().len() / 2))
    }
}

/// A union value: its variant's name alone (`with_value` false), or a map of one entry from the
/// name to the variant's fields or value.
struct Union<'a, 'de> {
    de: &'a mut MsgPack<'de>,
    with_value: bool,
}

impl<'de> EnumAccess<'de> for Union<'_, 'de> {
    type Error = DecodeError;
    type Variant = Self;

    fn variant_seed<T: DeserializeSeed<'de>>(
        self,
        seed: T,
    ) -> Result<(T::Value, Self), DecodeError> {
        let variant = seed.deserialize(&mut *self.de)?;
        Ok((variant, self))
    }
}

impl Union<'_, '_> {
    /// The error of a variant that has a value but was written as its name alone.
    fn name_alone(&self, what: &'static str) -> Result<(), DecodeError> {
        if self.with_value {
            Ok(())
        } else {
            Err(de::Error::invalid_type(Unexpected::UnitVariant, &what))
        }
    }
}

impl<'de> VariantAccess<'de> for Union<'_, 'de> {
    type Error = DecodeError;

    fn unit_variant(self) -> Result<(), DecodeError> {
        if !self.with_value || self.de.c.nil() {
            Ok(())
        } else {
            let start = self.de.c.position();
            let e = DecodeError(
                "a variant without fields written as a map takes nil as its value".to_string(),
            );
            self.de.fault_at(start, Err(e))
        }
    }

    fn newtype_variant_seed<T: DeserializeSeed<'de>>(
        self,
        seed: T,
    ) -> Result<T::Value, DecodeError> {
        self.name_alone("a map of one entry (a variant with a value)")?;
        seed.deserialize(self.de)
    }

    fn tuple_variant<V: Visitor<'de>>(
        self,
        _len: usize,
        visitor: V,
    ) -> Result<V::Value, DecodeError> {
        self.name_alone("a map of one entry (a variant with values)")?;
        self.de.deserialize_seq(visitor)
    }

    fn struct_variant<V: Visitor<'de>>(
        self,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, DecodeError> {
        self.name_alone("a map of one entry (a variant with fields)")?;
        self.de
            .deserialize_struct("a union variant", fields, visitor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;
    use std::collections::BTreeMap;

    #[derive(Debug, Deserialize, PartialEq)]
    enum Loss {
        Exited { code: i32 },
        Unknown,
    }

    #[derive(Debug, Deserialize, PartialEq)]
    #[serde(rename_all = "camelCase")]
    struct Rec {
        app_id: String,
        exit: Option<i32>,
    }

    fn mp<T: serde::Serialize>(v: &T) -> Vec<u8> {
        rmp_serde::to_vec_named(v).expect("encodes")
    }

    #[derive(Debug, Deserialize, PartialEq)]
    #[serde(rename_all = "camelCase")]
    struct Outer {
        inner: Rec,
        per_key: BTreeMap<String, Vec<i32>>,
    }

    #[test]
    fn an_error_is_located_by_the_path_to_its_value_and_the_offset_of_its_first_byte() {
        let at = |json: serde_json::Value| {
            let bytes = mp(&json);
            let (_, at) = from_slice_at::<Outer>(&bytes, 10).expect_err("refused");
            (at.path, at.offset, bytes.len() as u64)
        };
        // A field of a field.
        let (path, _, _) = at(serde_json::json!({"inner": {"appId": 5}, "perKey": {}}));
        assert_eq!(path, "inner.appId");
        // A map's key and an array's element; the bad value `"x"` (2 bytes) is the last one: the
        // offset, from `base`, is where it starts.
        let (path, offset, len) =
            at(serde_json::json!({"inner": {"appId": "a"}, "perKey": {"a": [1, "x"]}}));
        assert_eq!(path, "perKey[\"a\"][1]");
        assert_eq!(offset, 10 + len - 2);
        // A missing field lies at its struct's map, at the map's first byte.
        let (path, offset, _) = at(serde_json::json!({"inner": {}, "perKey": {}}));
        assert_eq!((path.as_str(), offset), ("inner", 10 + 1 + 6));
        let (path, offset, _) = at(serde_json::json!({"perKey": {}}));
        assert_eq!((path.as_str(), offset), ("", 10));
    }

    /// `{"inner": {"appId": "a"}, "perKey": m}` with `m` written as given.
    fn outer_with(per_key: &[u8]) -> (Vec<u8>, usize) {
        let mut bytes = Vec::new();
        let _ = rmp::encode::write_map_len(&mut bytes, 2);
        let _ = rmp::encode::write_str(&mut bytes, "inner");
        bytes.extend(mp(&serde_json::json!({"appId": "a"})));
        let _ = rmp::encode::write_str(&mut bytes, "perKey");
        let at = bytes.len();
        bytes.extend_from_slice(per_key);
        (bytes, at)
    }

    #[test]
    fn a_fault_of_a_key_lies_at_the_map_path_and_the_key_offset() {
        // Out of order: {"b": [], "a": []}; the offending key is the second, "a".
        let (bytes, map) = outer_with(&[0x82, 0xa1, b'b', 0x90, 0xa1, b'a', 0x90]);
        let (_, at) = from_slice_at::<Outer>(&bytes, 0).expect_err("out of order");
        assert_eq!((at.path.as_str(), at.offset), ("perKey", (map + 4) as u64));
        // Given twice: {"a": [], "a": []}.
        let (bytes, map) = outer_with(&[0x82, 0xa1, b'a', 0x90, 0xa1, b'a', 0x90]);
        let (_, at) = from_slice_at::<Outer>(&bytes, 0).expect_err("twice");
        assert_eq!((at.path.as_str(), at.offset), ("perKey", (map + 4) as u64));
        // A key that is not a string: {1: []}.
        let (bytes, map) = outer_with(&[0x81, 0x01, 0x90]);
        let (_, at) = from_slice_at::<Outer>(&bytes, 0).expect_err("integer key");
        assert_eq!((at.path.as_str(), at.offset), ("perKey", (map + 1) as u64));
        // A field given twice: the path is the struct's map, the offset the second key's.
        let mut rec = Vec::new();
        let _ = rmp::encode::write_map_len(&mut rec, 2);
        let _ = rmp::encode::write_str(&mut rec, "appId");
        let _ = rmp::encode::write_str(&mut rec, "a");
        let second = rec.len();
        let _ = rmp::encode::write_str(&mut rec, "appId");
        let _ = rmp::encode::write_str(&mut rec, "b");
        let mut d = MsgPack::new(&rec);
        assert!(Rec::deserialize(&mut d).is_err());
        let at = d.location(0);
        assert_eq!((at.path.as_str(), at.offset), ("", second as u64));
    }

    #[test]
    fn a_string_is_never_bin_even_when_it_holds_utf8() {
        // {"appId": bin "a"}
        let rec = [0x81, 0xa5, b'a', b'p', b'p', b'I', b'd', 0xc4, 0x01, b'a'];
        let (e, at) = from_slice_at::<Rec>(&rec, 0).expect_err("bin for str");
        assert!(e.to_string().contains("never bin"), "{e}");
        assert_eq!((at.path.as_str(), at.offset), ("appId", 7));
        // A map key as bin: {"inner": …, "perKey": {bin "a": []}}.
        let (bytes, map) = outer_with(&[0x81, 0xc4, 0x01, b'a', 0x90]);
        let (_, at) = from_slice_at::<Outer>(&bytes, 0).expect_err("bin key");
        assert_eq!((at.path.as_str(), at.offset), ("perKey", (map + 1) as u64));
    }

    #[test]
    fn string_keys_are_quoted_with_escapes_in_paths() {
        assert_eq!(quote("PATH"), "\"PATH\"");
        assert_eq!(quote("a\"b\\c"), "\"a\\\"b\\\\c\"");
        assert_eq!(quote("x\ny\u{7f}"), "\"x\\u000ay\\u007f\"");
        assert_eq!(quote("é✓"), "\"é✓\"");
    }

    #[test]
    fn a_union_is_a_name_or_a_one_entry_map_never_an_array_or_an_index() {
        let as_array = mp(&serde_json::json!(["Exited", {"code": 1}]));
        assert!(from_slice::<Loss>(&as_array).is_err());
        assert!(
            from_slice::<Loss>(&mp(&1u8)).is_err(),
            "a variant index is refused"
        );
        let two = mp(&serde_json::json!({"Exited": {"code": 1}, "Unknown": null}));
        let e = from_slice::<Loss>(&two).expect_err("two entries");
        assert!(e.to_string().contains("exactly one entry"), "{e}");
        assert_eq!(
            from_slice::<Loss>(&mp(&serde_json::json!({"Unknown": null}))).ok(),
            Some(Loss::Unknown)
        );
        assert!(from_slice::<Loss>(&mp(&"Exited")).is_err(), "fields needed");
    }

    #[test]
    fn fields_are_named_by_strings_and_unknown_ones_are_skipped() {
        let known = mp(&serde_json::json!({"exit": 3, "later": [1, {"x": "y"}], "appId": "a"}));
        assert_eq!(
            from_slice::<Rec>(&known).ok(),
            Some(Rec {
                app_id: "a".into(),
                exit: Some(3)
            })
        );
        // {0: "a"}: a field index instead of a name, which serde's derive would take.
        let by_index = [0x81, 0x00, 0xa1, b'a'];
        let e = from_slice::<Rec>(&by_index).expect_err("refused");
        assert!(e.to_string().contains("field or variant name"), "{e}");
        let missing = mp(&serde_json::json!({"exit": null}));
        assert!(from_slice::<Rec>(&missing).is_err(), "appId is required");
    }

    #[test]
    fn strings_are_utf8_and_payload_bytes_are_borrowed() {
        let bad = [0xa2, 0xff, 0xfe];
        assert!(from_slice::<String>(&bad).is_err());
        let bin = [0xc4, 0x03, 1, 2, 3];
        let borrowed: &[u8] = from_slice(&bin).expect("bin");
        assert_eq!(borrowed.as_ptr(), bin[2..].as_ptr());
        // A str where binary data is expected is refused by the payload type.
        assert!(from_slice::<crate::messages::Payload>(&[0xa1, b'x']).is_err());
    }

    #[test]
    fn nesting_is_bounded_without_measuring_first() {
        let deep = vec![0x91u8; 10_000];
        let e = from_slice::<serde::de::IgnoredAny>(&deep).expect_err("too deep");
        assert!(e.to_string().contains("deeper"), "{e}");
        let lists = from_slice::<Vec<Vec<Vec<u8>>>>(&deep);
        assert!(lists.is_err());
    }

    #[test]
    fn truncated_input_and_extra_tuple_elements_are_errors() {
        assert!(from_slice::<String>(&[0xa5, b'a']).is_err());
        assert!(from_slice::<Rec>(&[0x82, 0xa5]).is_err());
        assert!(from_slice::<BTreeMap<String, i32>>(&[]).is_err());
        let three = mp(&(1, 2, 3));
        assert!(from_slice::<(i32, i32)>(&three).is_err());
        assert_eq!(from_slice::<(i32, i32)>(&mp(&(1, 2))).ok(), Some((1, 2)));
    }
}
