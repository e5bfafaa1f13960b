//! A check of a Java serialization stream's shape before `jaded` reads it: how deeply it nests and
//! how large a value tree it expands to.
//!
//! `jaded` builds values by following back-references, so a stream of a few hundred bytes whose
//! objects each refer twice to the one before expands to billions of values, and its reading
//! recurses once per level of nesting. This walk follows the grammar of the Java Object
//! Serialization Specification (§6.4) without building anything, with its own depth limit, and
//! sums the values each handle expands to; streams over the limits are refused.

use super::java::JavaError;

const TC_NULL: u8 = 0x70;
const TC_REFERENCE: u8 = 0x71;
const TC_CLASSDESC: u8 = 0x72;
const TC_OBJECT: u8 = 0x73;
const TC_STRING: u8 = 0x74;
const TC_ARRAY: u8 = 0x75;
const TC_CLASS: u8 = 0x76;
const TC_BLOCKDATA: u8 = 0x77;
const TC_ENDBLOCKDATA: u8 = 0x78;
const TC_RESET: u8 = 0x79;
const TC_BLOCKDATALONG: u8 = 0x7A;
const TC_EXCEPTION: u8 = 0x7B;
const TC_LONGSTRING: u8 = 0x7C;
const TC_PROXYCLASSDESC: u8 = 0x7D;
const TC_ENUM: u8 = 0x7E;

const SC_WRITE_METHOD: u8 = 0x01;
const SC_BLOCK_DATA: u8 = 0x08;
const SC_SERIALIZABLE: u8 = 0x02;
const SC_EXTERNALIZABLE: u8 = 0x04;

/// What the walk found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shape {
    /// The deepest nesting of objects.
    pub depth: usize,
    /// Values the first object expands to, references followed.
    pub values: u64,
}

#[derive(Debug, Clone)]
struct ClassDesc {
    name: String,
    flags: u8,
    /// Field type codes (`B`, `I`, `L`, `[`, …).
    fields: Vec<u8>,
    super_class: Option<u32>,
}

#[derive(Debug, Clone)]
enum Handle {
    Class(ClassDesc),
    /// A value, with the values it expands to (0 while it is being read).
    Value(u64),
}

struct Walk<'a> {
    data: &'a [u8],
    pos: usize,
    handles: Vec<Handle>,
    depth: usize,
    max_depth: usize,
    deepest: usize,
    max_values: u64,
}

fn refused(what: impl Into<String>) -> JavaError {
    JavaError::Refused(what.into())
}

fn bad(what: &str) -> JavaError {
    JavaError::Stream(format!("malformed stream: {what}"))
}

impl Walk<'_> {
    fn take(&mut self, n: usize) -> Result<&[u8], JavaError> {
        let end = self
            .pos
            .checked_add(n)
            .filter(|e| *e <= self.data.len())
            .ok_or_else(|| bad("ends early"))?;
        let s = &self.data[self.pos..end];
        self.pos = end;
        Ok(s)
    }

    fn u8(&mut self) -> Result<u8, JavaError> {
        Ok(self.take(1)?[0])
    }

    fn u16(&mut self) -> Result<u16, JavaError> {
        let b = self.take(2)?;
        Ok(u16::from_be_bytes([b[0], b[1]]))
    }

    fn u32(&mut self) -> Result<u32, JavaError> {
        let b = self.take(4)?;
        Ok(u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }

    fn utf(&mut self) -> Result<String, JavaError> {
        let n = usize::from(self.u16()?);
        Ok(String::from_utf8_lossy(self.take(n)?).into_owned())
    }

    fn new_handle(&mut self, h: Handle) -> u32 {
        self.handles.push(h);
        0x7E_0000u32.wrapping_add((self.handles.len() - 1) as u32)
    }

    fn handle(&self, raw: u32) -> Result<&Handle, JavaError> {
        raw.checked_sub(0x7E_0000)
            .and_then(|i| self.handles.get(i as usize))
            .ok_or_else(|| bad("a reference to no handle"))
    }

    fn enter(&mut self) -> Result<(), JavaError> {
        self.depth += 1;
        self.deepest = self.deepest.max(self.depth);
        if self.depth > self.max_depth {
            return Err(refused(format!(
                "nested deeper than {} levels",
                self.max_depth
            )));
        }
        Ok(())
    }

    fn add(&self, a: u64, b: u64) -> Result<u64, JavaError> {
        let s = a.saturating_add(b);
        if s > self.max_values {
            return Err(refused(format!(
                "expands to more than {} values",
                self.max_values
            )));
        }
        Ok(s)
    }

    /// A class descriptor where one is expected: its handle, or `None` for null.
    fn class_desc(&mut self) -> Result<Option<u32>, JavaError> {
        match self.u8()? {
            TC_NULL => Ok(None),
            TC_REFERENCE => {
                let raw = self.u32()?;
                match self.handle(raw)? {
                    Handle::Class(_) => Ok(Some(raw)),
                    Handle::Value(_) => Err(bad("a class reference to a value")),
                }
            }
            TC_CLASSDESC => self.new_class_desc().map(Some),
            TC_PROXYCLASSDESC => self.proxy_class_desc().map(Some),
            _ => Err(bad("a class descriptor expected")),
        }
    }

    fn new_class_desc(&mut self) -> Result<u32, JavaError> {
        let name = self.utf()?;
        self.take(8)?;
        let index = self.handles.len();
        let raw = self.new_handle(Handle::Value(1));
        let flags = self.u8()?;
        let count = self.u16()?;
        let mut fields = Vec::with_capacity(usize::from(count).min(1024));
        for _ in 0..count {
            let code = self.u8()?;
            self.utf()?;
            if code == b'L' || code == b'[' {
                // The field's class name, a string or a reference to one.
                self.value()?;
            } else if !b"BCDFIJSZ".contains(&code) {
                return Err(bad("an unknown field type"));
            }
            fields.push(code);
        }
        self.annotations()?;
        let super_class = self.class_desc()?;
        self.handles[index] = Handle::Class(ClassDesc {
            name,
            flags,
            fields,
            super_class,
        });
        Ok(raw)
    }

    fn proxy_class_desc(&mut self) -> Result<u32, JavaError> {
        let index = self.handles.len();
        let raw = self.new_handle(Handle::Value(1));
        let n = self.u32()?;
        for _ in 0..n {
            self.utf()?;
        }
        self.annotations()?;
        let super_class = self.class_desc()?;
        self.handles[index] = Handle::Class(ClassDesc {
            name: "(proxy)".into(),
            flags: SC_SERIALIZABLE,
            fields: Vec::new(),
            super_class,
        });
        Ok(raw)
    }

    /// Contents up to TC_ENDBLOCKDATA; returns the values of the objects among them.
    fn annotations(&mut self) -> Result<u64, JavaError> {
        let mut total = 0u64;
        loop {
            match self.data.get(self.pos).copied() {
                None => return Err(bad("annotations end early")),
                Some(TC_ENDBLOCKDATA) => {
                    self.pos += 1;
                    return Ok(total);
                }
                Some(TC_BLOCKDATA) => {
                    self.pos += 1;
                    let n = usize::from(self.u8()?);
                    self.take(n)?;
                }
                Some(TC_BLOCKDATALONG) => {
                    self.pos += 1;
                    let n = self.u32()? as usize;
                    self.take(n)?;
                }
                Some(_) => {
                    let v = self.value()?;
                    total = self.add(total, v)?;
                }
            }
        }
    }

    fn class(&self, raw: u32) -> Result<ClassDesc, JavaError> {
        match self.handle(raw)? {
            Handle::Class(c) => Ok(c.clone()),
            Handle::Value(_) => Err(bad("a class expected")),
        }
    }

    fn primitive_size(code: u8) -> Option<usize> {
        Some(match code {
            b'B' | b'Z' => 1,
            b'C' | b'S' => 2,
            b'I' | b'F' => 4,
            b'J' | b'D' => 8,
            _ => return None,
        })
    }

    /// The values of a class's fields and annotations, superclasses first.
    fn class_data(&mut self, raw: u32) -> Result<u64, JavaError> {
        let mut chain = Vec::new();
        let mut next = Some(raw);
        while let Some(h) = next {
            let c = self.class(h)?;
            if chain.len() > 256 {
                return Err(refused("a class hierarchy deeper than 256"));
            }
            next = c.super_class;
            chain.push(c);
        }
        let mut total = 0u64;
        for c in chain.into_iter().rev() {
            if c.flags & SC_EXTERNALIZABLE != 0 {
                if c.flags & SC_BLOCK_DATA == 0 {
                    return Err(bad("externalizable data without block mode"));
                }
                let v = self.annotations()?;
                total = self.add(total, v)?;
                // jaded reads only the annotations of an externalizable hierarchy.
                return Ok(total);
            }
            for code in &c.fields {
                match Self::primitive_size(*code) {
                    Some(n) => {
                        self.take(n)?;
                        total = self.add(total, 1)?;
                    }
                    None => {
                        let v = self.value()?;
                        total = self.add(total, v)?;
                    }
                }
            }
            if c.flags & SC_WRITE_METHOD != 0 {
                let v = self.annotations()?;
                total = self.add(total, v)?;
            }
        }
        Ok(total)
    }

    /// One object (of any kind); returns the values it expands to.
    fn value(&mut self) -> Result<u64, JavaError> {
        self.enter()?;
        let r = self.value_inner();
        self.depth -= 1;
        r
    }

    fn value_inner(&mut self) -> Result<u64, JavaError> {
        match self.u8()? {
            TC_NULL => Ok(1),
            TC_REFERENCE => {
                let raw = self.u32()?;
                Ok(match self.handle(raw)? {
                    Handle::Value(n) => (*n).max(1),
                    Handle::Class(_) => 1,
                })
            }
            TC_STRING => {
                self.new_handle(Handle::Value(1));
                self.utf()?;
                Ok(1)
            }
            TC_LONGSTRING => {
                self.new_handle(Handle::Value(1));
                let b = self.take(8)?;
                let n = u64::from_be_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]);
                let n = usize::try_from(n).map_err(|_| bad("a string too long"))?;
                self.take(n)?;
                Ok(1)
            }
            TC_CLASSDESC => {
                self.new_class_desc()?;
                Ok(1)
            }
            TC_PROXYCLASSDESC => {
                self.proxy_class_desc()?;
                Ok(1)
            }
            TC_CLASS => {
                self.class_desc()?;
                self.new_handle(Handle::Value(1));
                Ok(1)
            }
            TC_ENUM => {
                self.class_desc()?;
                let index = self.handles.len();
                self.new_handle(Handle::Value(0));
                let v = self.value()?;
                let v = self.add(v, 1)?;
                self.handles[index] = Handle::Value(v);
                Ok(v)
            }
            TC_ARRAY => {
                let class = self
                    .class_desc()?
                    .ok_or_else(|| bad("an array without a class"))?;
                let c = self.class(class)?;
                let index = self.handles.len();
                self.new_handle(Handle::Value(0));
                let len = self.u32()? as i32;
                let len = u64::try_from(len).unwrap_or(0);
                let component = c.name.as_bytes().get(1).copied().unwrap_or(b'?');
                let mut total = 1u64;
                match Self::primitive_size(component) {
                    Some(size) => {
                        let bytes = usize::try_from(len)
                            .ok()
                            .and_then(|l| l.checked_mul(size))
                            .ok_or_else(|| bad("an array too long"))?;
                        self.take(bytes)?;
                        total = self.add(total, len)?;
                    }
                    None if component == b'L' || component == b'[' => {
                        for _ in 0..len {
                            let v = self.value()?;
                            total = self.add(total, v)?;
                        }
                    }
                    None => return Err(bad("an array of an unknown type")),
                }
                self.handles[index] = Handle::Value(total);
                Ok(total)
            }
            TC_OBJECT => {
                let class = self
                    .class_desc()?
                    .ok_or_else(|| bad("an object without a class"))?;
                let index = self.handles.len();
                self.new_handle(Handle::Value(0));
                let v = self.class_data(class)?;
                let v = self.add(v, 1)?;
                self.handles[index] = Handle::Value(v);
                Ok(v)
            }
            TC_RESET => {
                self.handles.clear();
                self.value_inner()
            }
            TC_EXCEPTION => {
                self.handles.clear();
                let v = self.value()?;
                self.handles.clear();
                Ok(v)
            }
            TC_BLOCKDATA | TC_BLOCKDATALONG | TC_ENDBLOCKDATA => {
                Err(bad("block data where an object is expected"))
            }
            _ => Err(bad("an unknown type code")),
        }
    }
}

/// Walks the first object of `data` (a stream with its magic): its shape, or why it is refused.
pub fn check(data: &[u8], max_depth: usize, max_values: u64) -> Result<Shape, JavaError> {
    if !data.starts_with(&super::java::MAGIC) {
        return Err(bad("no Java serialization magic"));
    }
    let mut w = Walk {
        data,
        pos: 4,
        handles: Vec::new(),
        depth: 0,
        max_depth,
        deepest: 0,
        max_values,
    };
    let values = w.value()?;
    Ok(Shape {
        depth: w.deepest,
        values,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An array of `[Ljava.lang.Object;` whose two elements are the previous array, `levels` deep:
    /// a few bytes per level, 2^levels values.
    fn doubling(levels: usize) -> Vec<u8> {
        let mut v = super::super::java::MAGIC.to_vec();
        let name = b"[Ljava.lang.Object;";
        // Innermost: an empty array with a new class descriptor (handle 0x7E0000).
        fn open(v: &mut Vec<u8>, first: bool, name: &[u8]) {
            v.push(TC_ARRAY);
            if first {
                v.push(TC_CLASSDESC);
                v.extend_from_slice(&(name.len() as u16).to_be_bytes());
                v.extend_from_slice(name);
                v.extend_from_slice(&[0; 8]);
                v.push(SC_SERIALIZABLE);
                v.extend_from_slice(&[0, 0]);
                v.push(TC_ENDBLOCKDATA);
                v.push(TC_NULL);
            } else {
                v.push(TC_REFERENCE);
                v.extend_from_slice(&0x7E_0000u32.to_be_bytes());
            }
        }
        // Level k (outermost first) holds level k+1 and a reference to it.
        for k in 0..levels {
            open(&mut v, k == 0, name);
            v.extend_from_slice(&2u32.to_be_bytes());
        }
        open(&mut v, levels == 0, name);
        v.extend_from_slice(&0u32.to_be_bytes());
        // Close each level: its second element refers to the array just finished. Handles: the
        // class is 0x7E0000, level k's array 0x7E0001 + k.
        for k in (0..levels).rev() {
            v.push(TC_REFERENCE);
            v.extend_from_slice(&(0x7E_0001u32 + k as u32 + 1).to_be_bytes());
        }
        v
    }

    #[test]
    fn a_stream_that_doubles_at_each_level_is_refused_before_it_is_expanded() {
        let small = doubling(4);
        let shape = check(&small, 64, 1 << 20).expect("small enough");
        assert_eq!(shape.depth, 5);
        assert_eq!(shape.values, 31);
        let big = doubling(40);
        assert!(big.len() < 1000);
        assert!(matches!(
            check(&big, 64, 1 << 20),
            Err(JavaError::Refused(_))
        ));
    }

    #[test]
    fn the_java_parser_refuses_a_doubling_stream_instead_of_expanding_it() {
        let r = super::super::java::parse(&doubling(40));
        assert!(matches!(r, Err(JavaError::Refused(_))), "{r:?}");
        // Within the limits, jaded reads the same kind of stream.
        let v = super::super::java::parse(&doubling(3)).expect("small doubling parses");
        assert!(matches!(v, jaded::Value::Array(ref a) if a.len() == 2));
    }

    #[test]
    fn deep_nesting_is_refused_at_the_depth_limit() {
        assert!(matches!(
            check(&doubling(100), 64, u64::MAX),
            Err(JavaError::Refused(_))
        ));
    }

    #[test]
    fn truncated_streams_are_malformed_not_panics() {
        let s = doubling(6);
        for cut in 0..s.len() {
            let _ = check(&s[..cut], 64, 1 << 20);
        }
    }
}
