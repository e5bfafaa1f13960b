//! Writing a [`Graph`] as `ObjectOutputStream` would: an entry in full where the walk first
//! reaches it, a back-reference after; block data in blocks of at most [`MAX_BLOCK`] bytes.

use super::mutf8;
use super::*;

/// Writes `graph` as a stream (magic, version, its object), within `limits`.
pub fn write(graph: &Graph, limits: &Limits) -> Result<Vec<u8>, SerialError> {
    let mut w = Writer {
        g: graph,
        out: MAGIC.to_vec(),
        wire: vec![None; graph.entries().len()],
        next: 0,
        depth: 0,
        limits: *limits,
    };
    w.object_value(graph.root().map(Value::Ref).unwrap_or(Value::Null))?;
    if w.out.len() > limits.max_bytes {
        return Err(SerialError::Limit(format!(
            "{} bytes of stream, over the limit of {}",
            w.out.len(),
            limits.max_bytes
        )));
    }
    Ok(w.out)
}

struct Writer<'g> {
    g: &'g Graph,
    out: Vec<u8>,
    /// The wire handle each entry got, once written.
    wire: Vec<Option<u32>>,
    next: u32,
    depth: usize,
    limits: Limits,
}

fn unwritable(what: impl Into<String>) -> SerialError {
    SerialError::Unwritable(what.into())
}

impl<'g> Writer<'g> {
    fn entry(&self, h: Handle) -> Result<&'g Entry, SerialError> {
        self.g
            .get(h)
            .ok_or_else(|| unwritable(format!("a reference to entry {}, which is not there", h.0)))
    }

    fn assign(&mut self, h: Handle) -> Result<(), SerialError> {
        if self.next as usize >= self.limits.max_handles {
            return Err(SerialError::Limit(format!(
                "more than {} handles",
                self.limits.max_handles
            )));
        }
        self.wire[h.index()] = Some(BASE_HANDLE + self.next);
        self.next += 1;
        Ok(())
    }

    fn enter(&mut self) -> Result<(), SerialError> {
        self.depth += 1;
        if self.depth > self.limits.max_depth {
            return Err(SerialError::Limit(format!(
                "nested deeper than {} levels",
                self.limits.max_depth
            )));
        }
        if self.out.len() > self.limits.max_bytes {
            return Err(SerialError::Limit(format!(
                "over {} bytes of stream",
                self.limits.max_bytes
            )));
        }
        Ok(())
    }

    fn utf(&mut self, s: &str, what: &str) -> Result<(), SerialError> {
        let b = mutf8::encode(s);
        let n = u16::try_from(b.len())
            .map_err(|_| unwritable(format!("{what} of {} bytes (at most 65535)", b.len())))?;
        self.out.extend_from_slice(&n.to_be_bytes());
        self.out.extend_from_slice(&b);
        Ok(())
    }

    /// Writes a back-reference if `h` was written; `false` if it was not.
    fn back_reference(&mut self, h: Handle) -> Result<bool, SerialError> {
        match self.wire.get(h.index()) {
            Some(Some(wire)) => {
                self.out.push(TC_REFERENCE);
                self.out.extend_from_slice(&wire.to_be_bytes());
                Ok(true)
            }
            Some(None) => Ok(false),
            None => Err(unwritable(format!(
                "a reference to entry {}, which is not there",
                h.0
            ))),
        }
    }

    /// A value where an object belongs.
    fn object_value(&mut self, v: Value) -> Result<(), SerialError> {
        let h = match v {
            Value::Null => {
                self.out.push(TC_NULL);
                return Ok(());
            }
            Value::Ref(h) => h,
            other => {
                return Err(unwritable(format!(
                    "a primitive ({}) where an object belongs",
                    other.code() as char
                )))
            }
        };
        if self.back_reference(h)? {
            return Ok(());
        }
        self.enter()?;
        let r = self.new_entry(h);
        self.depth -= 1;
        r
    }

    fn class_desc_value(&mut self, v: Option<Handle>) -> Result<(), SerialError> {
        match v {
            None => {
                self.out.push(TC_NULL);
                Ok(())
            }
            Some(h) => match self.entry(h)? {
                Entry::ClassDesc(_) => self.object_value(Value::Ref(h)),
                _ => Err(unwritable(format!(
                    "entry {} where a class descriptor belongs",
                    h.0
                ))),
            },
        }
    }

    fn new_entry(&mut self, h: Handle) -> Result<(), SerialError> {
        match self.entry(h)? {
            Entry::String(s) => {
                let b = mutf8::encode(s);
                if let Ok(n) = u16::try_from(b.len()) {
                    self.out.push(TC_STRING);
                    self.out.extend_from_slice(&n.to_be_bytes());
                } else {
                    self.out.push(TC_LONGSTRING);
                    self.out.extend_from_slice(&(b.len() as i64).to_be_bytes());
                }
                self.out.extend_from_slice(&b);
                self.assign(h)
            }
            Entry::ClassDesc(d) => {
                self.out.push(TC_CLASSDESC);
                self.assign(h)?;
                self.utf(&d.name, "a class name")?;
                self.out.extend_from_slice(&d.suid.to_be_bytes());
                self.out.push(d.flags);
                let n = u16::try_from(d.fields.len())
                    .map_err(|_| unwritable(format!("{} with too many fields", d.name)))?;
                self.out.extend_from_slice(&n.to_be_bytes());
                for f in &d.fields {
                    self.out.push(f.code);
                    self.utf(&f.name, "a field name")?;
                    match (f.code, f.signature) {
                        (b'L' | b'[', Some(s)) => match self.entry(s)? {
                            Entry::String(_) => self.object_value(Value::Ref(s))?,
                            _ => {
                                return Err(unwritable(format!(
                                    "{}.{}: a type that is not a string",
                                    d.name, f.name
                                )))
                            }
                        },
                        (b'B' | b'C' | b'D' | b'F' | b'I' | b'J' | b'S' | b'Z', None) => {}
                        (code, _) => {
                            return Err(unwritable(format!(
                                "{}.{}: type code {:?} and its signature disagree",
                                d.name, f.name, code as char
                            )))
                        }
                    }
                }
                self.items(&d.annotation)?;
                self.class_desc_value(d.super_desc)
            }
            Entry::Object(o) => {
                self.out.push(TC_OBJECT);
                self.class_desc_value(Some(o.class))?;
                self.assign(h)?;
                self.object_data(o)
            }
            Entry::Array(a) => {
                self.out.push(TC_ARRAY);
                self.class_desc_value(Some(a.class))?;
                self.assign(h)?;
                self.array_data(a)
            }
            Entry::Enum { class, name } => {
                self.out.push(TC_ENUM);
                self.class_desc_value(Some(*class))?;
                self.assign(h)?;
                match self.entry(*name)? {
                    Entry::String(_) => self.object_value(Value::Ref(*name)),
                    _ => Err(unwritable("an enum constant whose name is not a string")),
                }
            }
            Entry::Class(desc) => {
                self.out.push(TC_CLASS);
                self.class_desc_value(Some(*desc))?;
                self.assign(h)
            }
        }
    }

    fn object_data(&mut self, o: &'g Object) -> Result<(), SerialError> {
        let leaf = self
            .g
            .class_desc(o.class)
            .ok_or_else(|| unwritable("an object whose class is not a descriptor"))?;
        if leaf.flags & SC_EXTERNALIZABLE != 0 {
            return match o.data.as_slice() {
                [ClassData {
                    annotation: Some(items),
                    ..
                }] if leaf.flags & SC_BLOCK_DATA != 0 => self.items(items),
                _ => Err(unwritable(format!(
                    "{}: externalizable data must be one block-data annotation",
                    leaf.name
                ))),
            };
        }
        let chain = self
            .g
            .hierarchy(o.class)
            .ok_or_else(|| unwritable(format!("{}: a class hierarchy that loops", leaf.name)))?;
        if chain.len() != o.data.len() {
            return Err(unwritable(format!(
                "{}: data for {} classes, the hierarchy has {}",
                leaf.name,
                o.data.len(),
                chain.len()
            )));
        }
        for (level, data) in chain.into_iter().zip(&o.data) {
            let d = self
                .g
                .class_desc(level)
                .ok_or_else(|| unwritable("a superclass that is not a descriptor"))?;
            if d.flags & SC_SERIALIZABLE == 0 {
                continue;
            }
            if d.fields.len() != data.values.len() {
                return Err(unwritable(format!(
                    "{}: {} values for {} fields",
                    d.name,
                    data.values.len(),
                    d.fields.len()
                )));
            }
            for (f, v) in d.fields.iter().zip(&data.values) {
                self.field(&d.name, f, *v)?;
            }
            match (&data.annotation, d.flags & SC_WRITE_METHOD != 0) {
                (Some(items), true) => self.items(items)?,
                (None, false) => {}
                (Some(_), false) => {
                    return Err(unwritable(format!(
                        "{}: an annotation for a class without writeObject",
                        d.name
                    )))
                }
                (None, true) => {
                    return Err(unwritable(format!(
                        "{}: writeObject's annotation is missing",
                        d.name
                    )))
                }
            }
        }
        Ok(())
    }

    fn field(&mut self, class: &str, f: &FieldDesc, v: Value) -> Result<(), SerialError> {
        let wrong = || {
            unwritable(format!(
                "{class}.{}: a value of type {:?} in a field of type {:?}",
                f.name,
                v.code() as char,
                f.code as char
            ))
        };
        match (f.code, v) {
            (b'Z', Value::Bool(b)) => self.out.push(u8::from(b)),
            (b'B', Value::Byte(b)) => self.out.push(b as u8),
            (b'C', Value::Char(c)) => self.out.extend_from_slice(&c.to_be_bytes()),
            (b'S', Value::Short(s)) => self.out.extend_from_slice(&s.to_be_bytes()),
            (b'I', Value::Int(i)) => self.out.extend_from_slice(&i.to_be_bytes()),
            (b'J', Value::Long(l)) => self.out.extend_from_slice(&l.to_be_bytes()),
            (b'F', Value::Float(f)) => self.out.extend_from_slice(&f.to_be_bytes()),
            (b'D', Value::Double(d)) => self.out.extend_from_slice(&d.to_be_bytes()),
            (b'L' | b'[', Value::Null | Value::Ref(_)) => self.object_value(v)?,
            _ => return Err(wrong()),
        }
        Ok(())
    }

    fn array_data(&mut self, a: &'g Array) -> Result<(), SerialError> {
        let class = self
            .g
            .class_desc(a.class)
            .ok_or_else(|| unwritable("an array whose class is not a descriptor"))?;
        let code = class.name.as_bytes().get(1).copied().unwrap_or(0);
        let count = |n: usize| {
            i32::try_from(n).map_err(|_| unwritable(format!("an array of {n} elements")))
        };
        match &a.elements {
            Elements::Primitive { code: c, raw } => {
                let width = match c {
                    b'Z' | b'B' => 1,
                    b'C' | b'S' => 2,
                    b'I' | b'F' => 4,
                    b'J' | b'D' => 8,
                    _ => 0,
                };
                if *c != code || width == 0 || raw.len() % width != 0 {
                    return Err(unwritable(format!(
                        "{}: elements that do not fit the array's type",
                        class.name
                    )));
                }
                self.out
                    .extend_from_slice(&count(raw.len() / width)?.to_be_bytes());
                self.out.extend_from_slice(raw);
            }
            Elements::Values(values) => {
                if code != b'L' && code != b'[' {
                    return Err(unwritable(format!(
                        "{}: object elements in a primitive array",
                        class.name
                    )));
                }
                self.out
                    .extend_from_slice(&count(values.len())?.to_be_bytes());
                for v in values {
                    self.object_value(*v)?;
                }
            }
        }
        Ok(())
    }

    /// Block-data-mode content and its end marker.
    fn items(&mut self, items: &'g [Item]) -> Result<(), SerialError> {
        let mut pending: Vec<u8> = Vec::new();
        for item in items {
            match item {
                Item::Data(d) => pending.extend_from_slice(d),
                Item::Value(v) => {
                    self.blocks(&pending);
                    pending.clear();
                    self.object_value(*v)?;
                }
            }
        }
        self.blocks(&pending);
        self.out.push(TC_ENDBLOCKDATA);
        Ok(())
    }

    fn blocks(&mut self, data: &[u8]) {
        for chunk in data.chunks(MAX_BLOCK) {
            if let Ok(n) = u8::try_from(chunk.len()) {
                self.out.push(TC_BLOCKDATA);
                self.out.push(n);
            } else {
                self.out.push(TC_BLOCKDATALONG);
                self.out
                    .extend_from_slice(&(chunk.len() as i32).to_be_bytes());
            }
            self.out.extend_from_slice(chunk);
        }
    }
}
