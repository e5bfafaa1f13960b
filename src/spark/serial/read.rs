//! Reading a stream into a [`Graph`], handle by handle, without following back-references.

use super::mutf8;
use super::*;

/// Reads the stream's one object into a graph, within `limits`.
///
/// ```
/// use sparkwire::spark::{read_stream, write_stream, Limits};
/// // `Boolean.TRUE` as ObjectOutputStream writes it.
/// let stream = [
///     0xAC, 0xED, 0x00, 0x05, 0x73, 0x72, 0x00, 0x11, b'j', b'a', b'v', b'a', b'.', b'l', b'a',
///     b'n', b'g', b'.', b'B', b'o', b'o', b'l', b'e', b'a', b'n', 0xCD, 0x20, 0x72, 0x80, 0xD5,
///     0x9C, 0xFA, 0xEE, 0x02, 0x00, 0x01, b'Z', 0x00, 0x05, b'v', b'a', b'l', b'u', b'e', 0x78,
///     0x70, 0x01,
/// ];
/// let graph = read_stream(&stream, &Limits::default())?;
/// let root = graph.root_node();
/// assert_eq!(root.class(), Some("java.lang.Boolean"));
/// assert_eq!(root.field("value").and_then(|v| v.as_bool()), Some(true));
/// assert_eq!(write_stream(&graph, &Limits::default())?, stream);
/// # Ok::<(), sparkwire::spark::SerialError>(())
/// ```
pub fn read(data: &[u8], limits: &Limits) -> Result<Graph, SerialError> {
    if data.len() > limits.max_bytes {
        return Err(SerialError::Limit(format!(
            "{} bytes of stream, over the limit of {}",
            data.len(),
            limits.max_bytes
        )));
    }
    if !data.starts_with(&MAGIC) {
        return Err(SerialError::NoMagic);
    }
    let mut r = Reader {
        data,
        pos: MAGIC.len(),
        graph: Graph::new(),
        depth: 0,
        limits: *limits,
    };
    let root = r.content("the stream's object")?;
    if r.pos != data.len() {
        return Err(SerialError::Trailing {
            count: data.len() - r.pos,
            offset: r.pos,
        });
    }
    let root = match root {
        Value::Null => None,
        Value::Ref(h) => Some(h),
        _ => None,
    };
    r.graph.set_root(root);
    Ok(r.graph)
}

struct Reader<'a> {
    data: &'a [u8],
    pos: usize,
    graph: Graph,
    depth: usize,
    limits: Limits,
}

impl Reader<'_> {
    fn take(&mut self, n: usize) -> Result<&[u8], SerialError> {
        let end = self
            .pos
            .checked_add(n)
            .filter(|e| *e <= self.data.len())
            .ok_or(SerialError::Truncated {
                offset: self.data.len(),
            })?;
        let s = &self.data[self.pos..end];
        self.pos = end;
        Ok(s)
    }

    fn remaining(&self) -> usize {
        self.data.len() - self.pos
    }

    fn u8(&mut self) -> Result<u8, SerialError> {
        Ok(self.take(1)?[0])
    }

    fn peek(&self) -> Result<u8, SerialError> {
        self.data
            .get(self.pos)
            .copied()
            .ok_or(SerialError::Truncated { offset: self.pos })
    }

    fn u16(&mut self) -> Result<u16, SerialError> {
        let b = self.take(2)?;
        Ok(u16::from_be_bytes([b[0], b[1]]))
    }

    fn i32(&mut self) -> Result<i32, SerialError> {
        let b = self.take(4)?;
        Ok(i32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }

    fn i64(&mut self) -> Result<i64, SerialError> {
        let b = self.take(8)?;
        let mut a = [0u8; 8];
        a.copy_from_slice(b);
        Ok(i64::from_be_bytes(a))
    }

    fn malformed(&self, what: impl Into<String>, offset: usize) -> SerialError {
        SerialError::Malformed {
            what: what.into(),
            offset,
        }
    }

    fn utf_bytes(&mut self, n: usize) -> Result<String, SerialError> {
        let at = self.pos;
        let raw = self.take(n)?;
        mutf8::decode(raw).ok_or_else(|| self.malformed("a string that is not modified UTF-8", at))
    }

    /// `writeUTF`: a `u16` length and modified UTF-8.
    fn utf(&mut self) -> Result<String, SerialError> {
        let n = usize::from(self.u16()?);
        self.utf_bytes(n)
    }

    fn add(&mut self, entry: Entry) -> Result<Handle, SerialError> {
        if self.graph.entries().len() >= self.limits.max_handles {
            return Err(SerialError::Limit(format!(
                "more than {} handles",
                self.limits.max_handles
            )));
        }
        Ok(self.graph.add(entry))
    }

    fn enter(&mut self) -> Result<(), SerialError> {
        self.depth += 1;
        if self.depth > self.limits.max_depth {
            return Err(SerialError::Limit(format!(
                "nested deeper than {} levels (at byte {})",
                self.limits.max_depth, self.pos
            )));
        }
        Ok(())
    }

    fn leave(&mut self) {
        self.depth -= 1;
    }

    /// A back-reference's handle, which must be assigned already.
    fn reference(&mut self) -> Result<Handle, SerialError> {
        let at = self.pos;
        let raw = self.i32()? as u32;
        let index = raw.wrapping_sub(BASE_HANDLE) as usize;
        if raw < BASE_HANDLE || index >= self.graph.entries().len() {
            return Err(SerialError::BadReference {
                handle: raw,
                offset: at,
                why: "no such handle",
            });
        }
        Ok(Handle(index as u32))
    }

    /// One content element where an object belongs.
    fn content(&mut self, what: &'static str) -> Result<Value, SerialError> {
        let at = self.pos;
        let tag = self.u8()?;
        match tag {
            TC_NULL => Ok(Value::Null),
            TC_REFERENCE => {
                self.pos = at + 1;
                Ok(Value::Ref(self.reference()?))
            }
            TC_STRING => {
                let n = usize::from(self.u16()?);
                let s = self.utf_bytes(n)?;
                Ok(Value::Ref(self.add(Entry::String(s))?))
            }
            TC_LONGSTRING => {
                let n = self.i64()?;
                let n = usize::try_from(n)
                    .ok()
                    .filter(|n| *n <= self.remaining())
                    .ok_or(SerialError::Truncated {
                        offset: self.data.len(),
                    })?;
                let s = self.utf_bytes(n)?;
                Ok(Value::Ref(self.add(Entry::String(s))?))
            }
            TC_OBJECT => {
                self.enter()?;
                let v = self.object();
                self.leave();
                v
            }
            TC_ARRAY => {
                self.enter()?;
                let v = self.array();
                self.leave();
                v
            }
            TC_ENUM => {
                self.enter()?;
                let v = self.enum_constant();
                self.leave();
                v
            }
            TC_CLASS => {
                self.enter()?;
                let v = self.class_desc_value().and_then(|desc| match desc {
                    Some(d) => Ok(Value::Ref(self.add(Entry::Class(d))?)),
                    None => Err(self.malformed("a class object without a descriptor", at)),
                });
                self.leave();
                v
            }
            TC_CLASSDESC => {
                self.pos = at;
                self.enter()?;
                let v = self.class_desc_value();
                self.leave();
                Ok(v?.map(Value::Ref).unwrap_or(Value::Null))
            }
            TC_PROXYCLASSDESC => Err(SerialError::Unsupported {
                what: "proxy class descriptors",
                offset: at,
            }),
            TC_RESET => Err(SerialError::Unsupported {
                what: "a reset of the handle table",
                offset: at,
            }),
            TC_EXCEPTION => Err(SerialError::Unsupported {
                what: "an exception written by the stream",
                offset: at,
            }),
            _ => Err(SerialError::BadTag {
                tag,
                what,
                offset: at,
            }),
        }
    }

    /// A class descriptor where one belongs: new, a back-reference to one, or null.
    fn class_desc_value(&mut self) -> Result<Option<Handle>, SerialError> {
        let at = self.pos;
        match self.u8()? {
            TC_NULL => Ok(None),
            TC_REFERENCE => {
                self.pos = at + 1;
                let h = self.reference()?;
                match self.graph.get(h) {
                    Some(Entry::ClassDesc(_)) => Ok(Some(h)),
                    _ => Err(SerialError::BadReference {
                        handle: BASE_HANDLE + h.0,
                        offset: at,
                        why: "not a class descriptor",
                    }),
                }
            }
            TC_CLASSDESC => {
                self.enter()?;
                let d = self.new_class_desc();
                self.leave();
                d.map(Some)
            }
            TC_PROXYCLASSDESC => Err(SerialError::Unsupported {
                what: "proxy class descriptors",
                offset: at,
            }),
            tag => Err(SerialError::BadTag {
                tag,
                what: "a class descriptor",
                offset: at,
            }),
        }
    }

    fn new_class_desc(&mut self) -> Result<Handle, SerialError> {
        let h = self.add(Entry::ClassDesc(ClassDesc {
            name: String::new(),
            suid: 0,
            flags: 0,
            fields: Vec::new(),
            annotation: Vec::new(),
            super_desc: None,
        }))?;
        let name = self.utf()?;
        let suid = self.i64()?;
        let flags = self.u8()?;
        let count = usize::from(self.u16()?);
        let mut fields = Vec::with_capacity(count.min(self.remaining() / 3 + 1));
        for _ in 0..count {
            let at = self.pos;
            let code = self.u8()?;
            let fname = self.utf()?;
            let signature = match code {
                b'B' | b'C' | b'D' | b'F' | b'I' | b'J' | b'S' | b'Z' => None,
                b'L' | b'[' => match self.content("a field's type")? {
                    Value::Ref(s) if self.graph.string(s).is_some() => Some(s),
                    _ => return Err(self.malformed("a field type that is not a string", at)),
                },
                other => {
                    return Err(self.malformed(format!("field type code 0x{other:02x}"), at));
                }
            };
            fields.push(FieldDesc {
                code,
                name: fname,
                signature,
            });
        }
        let annotation = self.items()?;
        let super_desc = self.class_desc_value()?;
        if let Some(Entry::ClassDesc(d)) = self.graph.get_mut(h) {
            *d = ClassDesc {
                name,
                suid,
                flags,
                fields,
                annotation,
                super_desc,
            };
        }
        Ok(h)
    }

    /// Block data and objects up to `TC_ENDBLOCKDATA`; consecutive blocks are taken together.
    fn items(&mut self) -> Result<Vec<Item>, SerialError> {
        let mut items: Vec<Item> = Vec::new();
        loop {
            let at = self.pos;
            let n = match self.peek()? {
                TC_ENDBLOCKDATA => {
                    self.pos += 1;
                    return Ok(items);
                }
                TC_BLOCKDATA => {
                    self.pos += 1;
                    usize::from(self.u8()?)
                }
                TC_BLOCKDATALONG => {
                    self.pos += 1;
                    let n = self.i32()?;
                    usize::try_from(n)
                        .map_err(|_| self.malformed(format!("block length {n}"), at))?
                }
                _ => {
                    let v = self.content("an object in block data")?;
                    items.push(Item::Value(v));
                    continue;
                }
            };
            let bytes = self.take(n)?;
            // An empty block holds nothing (the JVM never writes one): it is not an item.
            if bytes.is_empty() {
                continue;
            }
            match items.last_mut() {
                Some(Item::Data(d)) => d.extend_from_slice(bytes),
                _ => items.push(Item::Data(bytes.to_vec())),
            }
        }
    }

    fn field_value(&mut self, code: u8) -> Result<Value, SerialError> {
        Ok(match code {
            b'Z' => Value::Bool(self.u8()? != 0),
            b'B' => Value::Byte(self.u8()? as i8),
            b'C' => Value::Char(self.u16()?),
            b'S' => Value::Short(self.u16()? as i16),
            b'I' => Value::Int(self.i32()?),
            b'J' => Value::Long(self.i64()?),
            b'F' => Value::Float(self.i32()? as u32),
            b'D' => Value::Double(self.i64()? as u64),
            _ => self.content("a field's value")?,
        })
    }

    fn object(&mut self) -> Result<Value, SerialError> {
        let at = self.pos;
        let class = self
            .class_desc_value()?
            .ok_or_else(|| self.malformed("an object without a class descriptor", at))?;
        let h = self.add(Entry::Object(Object {
            class,
            data: Vec::new(),
        }))?;
        let chain = self
            .graph
            .hierarchy(class)
            .ok_or_else(|| self.malformed("a class hierarchy that loops", at))?;
        let leaf_flags = self.graph.class_desc(class).map_or(0, |d| d.flags);
        let mut data = Vec::with_capacity(chain.len());
        if leaf_flags & SC_EXTERNALIZABLE != 0 {
            if leaf_flags & SC_BLOCK_DATA == 0 {
                return Err(SerialError::Unsupported {
                    what: "externalizable data of protocol 1",
                    offset: self.pos,
                });
            }
            data.push(ClassData {
                values: Vec::new(),
                annotation: Some(self.items()?),
            });
        } else {
            for level in chain {
                let (flags, codes) = match self.graph.class_desc(level) {
                    Some(d) => (d.flags, d.fields.iter().map(|f| f.code).collect::<Vec<_>>()),
                    None => (0, Vec::new()),
                };
                if flags & SC_SERIALIZABLE == 0 {
                    data.push(ClassData {
                        values: Vec::new(),
                        annotation: None,
                    });
                    continue;
                }
                let mut values = Vec::with_capacity(codes.len());
                for code in codes {
                    values.push(self.field_value(code)?);
                }
                let annotation = if flags & SC_WRITE_METHOD != 0 {
                    Some(self.items()?)
                } else {
                    None
                };
                data.push(ClassData { values, annotation });
            }
        }
        if let Some(Entry::Object(o)) = self.graph.get_mut(h) {
            o.data = data;
        }
        Ok(Value::Ref(h))
    }

    fn array(&mut self) -> Result<Value, SerialError> {
        let at = self.pos;
        let class = self
            .class_desc_value()?
            .ok_or_else(|| self.malformed("an array without a class descriptor", at))?;
        let code = self
            .graph
            .class_desc(class)
            .and_then(|d| d.name.as_bytes().get(1).copied())
            .filter(|_| {
                self.graph
                    .class_desc(class)
                    .is_some_and(|d| d.name.starts_with('['))
            })
            .ok_or_else(|| self.malformed("an array whose class is not an array class", at))?;
        let h = self.add(Entry::Array(Array {
            class,
            elements: Elements::Values(Vec::new()),
        }))?;
        let size_at = self.pos;
        let size = self.i32()?;
        let size = usize::try_from(size)
            .map_err(|_| self.malformed(format!("array size {size}"), size_at))?;
        let width = match code {
            b'Z' | b'B' => Some(1),
            b'C' | b'S' => Some(2),
            b'I' | b'F' => Some(4),
            b'J' | b'D' => Some(8),
            b'L' | b'[' => None,
            other => {
                return Err(self.malformed(format!("array element type 0x{other:02x}"), at));
            }
        };
        let elements = match width {
            Some(w) => {
                let n = size.checked_mul(w).ok_or(SerialError::Truncated {
                    offset: self.data.len(),
                })?;
                Elements::Primitive {
                    code,
                    raw: self.take(n)?.to_vec(),
                }
            }
            None => {
                // Every element takes at least a byte: a size beyond the stream is a lie.
                if size > self.remaining() {
                    return Err(SerialError::Truncated {
                        offset: self.data.len(),
                    });
                }
                let mut values = Vec::with_capacity(size);
                for _ in 0..size {
                    values.push(self.content("an array element")?);
                }
                Elements::Values(values)
            }
        };
        if let Some(Entry::Array(a)) = self.graph.get_mut(h) {
            a.elements = elements;
        }
        Ok(Value::Ref(h))
    }

    fn enum_constant(&mut self) -> Result<Value, SerialError> {
        let at = self.pos;
        let class = self
            .class_desc_value()?
            .ok_or_else(|| self.malformed("an enum constant without a class descriptor", at))?;
        let h = self.add(Entry::Enum { class, name: class })?;
        let name_at = self.pos;
        let name = match self.content("an enum constant's name")? {
            Value::Ref(s) if self.graph.string(s).is_some() => s,
            _ => {
                return Err(self.malformed("an enum constant's name that is not a string", name_at))
            }
        };
        if let Some(Entry::Enum { name: n, .. }) = self.graph.get_mut(h) {
            *n = name;
        }
        Ok(Value::Ref(h))
    }
}
