//! Java serialization (the Java Object Serialization Specification, stream protocol 2) as a graph
//! that keeps what the stream says: every handle, every class descriptor, every back-reference and
//! every block of data a `writeObject` method wrote. Reading a stream and writing its graph back
//! gives the same bytes; building a graph the way `ObjectOutputStream` walks Java objects and
//! writing it gives the bytes the JVM writes.
//!
//! Nothing here follows a back-reference while reading or writing: a value that refers to itself
//! (Scala 2.12's enumerations do) is one entry and a handle, and the memory a graph takes is
//! bounded by the stream's length. Nesting is bounded by [`Limits::max_depth`] on both sides.

mod dump;
pub mod mutf8;
mod node;
mod read;
mod write;

pub use dump::dump;
pub use node::{Cursor, Node};
pub use read::read;
pub use write::write;

/// The stream's magic number and version (`ac ed 00 05`).
pub const MAGIC: [u8; 4] = [0xAC, 0xED, 0x00, 0x05];

/// The first handle a stream assigns (`baseWireHandle`).
pub const BASE_HANDLE: u32 = 0x7E_0000;

pub(crate) const TC_NULL: u8 = 0x70;
pub(crate) const TC_REFERENCE: u8 = 0x71;
pub(crate) const TC_CLASSDESC: u8 = 0x72;
pub(crate) const TC_OBJECT: u8 = 0x73;
pub(crate) const TC_STRING: u8 = 0x74;
pub(crate) const TC_ARRAY: u8 = 0x75;
pub(crate) const TC_CLASS: u8 = 0x76;
pub(crate) const TC_BLOCKDATA: u8 = 0x77;
pub(crate) const TC_ENDBLOCKDATA: u8 = 0x78;
pub(crate) const TC_RESET: u8 = 0x79;
pub(crate) const TC_BLOCKDATALONG: u8 = 0x7A;
pub(crate) const TC_EXCEPTION: u8 = 0x7B;
pub(crate) const TC_LONGSTRING: u8 = 0x7C;
pub(crate) const TC_PROXYCLASSDESC: u8 = 0x7D;
pub(crate) const TC_ENUM: u8 = 0x7E;

/// The class has a `writeObject` method: its data is followed by an annotation.
pub const SC_WRITE_METHOD: u8 = 0x01;
/// The class is `Serializable`.
pub const SC_SERIALIZABLE: u8 = 0x02;
/// The class is `Externalizable`.
pub const SC_EXTERNALIZABLE: u8 = 0x04;
/// An `Externalizable` class's data is written in block data mode (protocol 2).
pub const SC_BLOCK_DATA: u8 = 0x08;

/// Most bytes of block data `ObjectOutputStream` puts in one block (`MAX_BLOCK_SIZE`).
pub const MAX_BLOCK: usize = 1024;

/// Bounds on what a stream or a graph may hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Most bytes of stream.
    pub max_bytes: usize,
    /// Most levels of nesting (an object written inside an object's fields or annotation, an
    /// array's elements, a class descriptor's superclass chain).
    pub max_depth: usize,
    /// Most handles (class descriptors, strings, objects, arrays, enum constants, classes).
    pub max_handles: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_bytes: 16 * 1024 * 1024,
            max_depth: 128,
            max_handles: 1 << 20,
        }
    }
}

/// What is wrong with a stream, or with a graph to be written.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SerialError {
    /// The stream ends inside a value.
    #[error("the stream ends early (at byte {offset})")]
    Truncated {
        /// Where it ended.
        offset: usize,
    },
    /// The stream does not start with `ac ed 00 05`.
    #[error("not a Java serialization stream (no magic number and version 5)")]
    NoMagic,
    /// A byte that is not a type code where one belongs.
    #[error("unexpected type code 0x{tag:02x} for {what} at byte {offset}")]
    BadTag {
        /// The byte.
        tag: u8,
        /// What was expected.
        what: &'static str,
        /// Where.
        offset: usize,
    },
    /// A reference to a handle not assigned, or to one of the wrong kind.
    #[error("bad reference 0x{handle:08x} at byte {offset}: {why}")]
    BadReference {
        /// The handle.
        handle: u32,
        /// Where.
        offset: usize,
        /// Why it does not fit.
        why: &'static str,
    },
    /// A form of the specification this reader does not take (proxy classes, resets,
    /// exceptions, protocol 1 externalizable data).
    #[error("unsupported at byte {offset}: {what}")]
    Unsupported {
        /// What.
        what: &'static str,
        /// Where.
        offset: usize,
    },
    /// Data that does not fit the grammar (a field type code, a length, …).
    #[error("malformed at byte {offset}: {what}")]
    Malformed {
        /// What.
        what: String,
        /// Where.
        offset: usize,
    },
    /// Over one of the [`Limits`].
    #[error("refused: {0}")]
    Limit(String),
    /// Bytes after the stream's object.
    #[error("{count} bytes after the stream's object (at byte {offset})")]
    Trailing {
        /// How many.
        count: usize,
        /// Where they start.
        offset: usize,
    },
    /// A graph that cannot be written (a field of the wrong kind, a handle of no entry, …).
    #[error("cannot write: {0}")]
    Unwritable(String),
}

/// An entry of a graph: what a handle stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Handle(pub u32);

impl Handle {
    /// The index of the entry in its graph.
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

/// A value in a field, an array or an annotation: a primitive, null, or an entry.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Value {
    /// `null`.
    Null,
    /// An entry (written in full where it first occurs, as a back-reference after).
    Ref(Handle),
    /// `boolean`.
    Bool(bool),
    /// `byte`.
    Byte(i8),
    /// `char`.
    Char(u16),
    /// `short`.
    Short(i16),
    /// `int`.
    Int(i32),
    /// `long`.
    Long(i64),
    /// `float`, as its bits.
    Float(u32),
    /// `double`, as its bits.
    Double(u64),
}

impl Value {
    /// The type code a field of this value has (`L` for null and entries).
    pub fn code(&self) -> u8 {
        match self {
            Value::Null | Value::Ref(_) => b'L',
            Value::Bool(_) => b'Z',
            Value::Byte(_) => b'B',
            Value::Char(_) => b'C',
            Value::Short(_) => b'S',
            Value::Int(_) => b'I',
            Value::Long(_) => b'J',
            Value::Float(_) => b'F',
            Value::Double(_) => b'D',
        }
    }
}

/// A field of a class descriptor.
#[derive(Debug, Clone, PartialEq)]
pub struct FieldDesc {
    /// The type code: `B C D F I J S Z` for primitives, `L` or `[` for objects and arrays.
    pub code: u8,
    /// The field's name.
    pub name: String,
    /// For `L` and `[`: the type's signature (`Ljava/lang/String;`), a string entry (the JVM
    /// interns signatures, so equal ones share a handle).
    pub signature: Option<Handle>,
}

/// A class descriptor.
#[derive(Debug, Clone, PartialEq)]
pub struct ClassDesc {
    /// The class's name (`java.lang.Boolean`, `[B`).
    pub name: String,
    /// Its `serialVersionUID`.
    pub suid: i64,
    /// `SC_*` flags.
    pub flags: u8,
    /// Its serializable fields, in stream order.
    pub fields: Vec<FieldDesc>,
    /// What `annotateClass` wrote (nothing, for `ObjectOutputStream`).
    pub annotation: Vec<Item>,
    /// The descriptor of its serializable superclass.
    pub super_desc: Option<Handle>,
}

/// One item of block-data-mode content: bytes, or a value written between them.
#[derive(Debug, Clone, PartialEq)]
pub enum Item {
    /// Bytes written with `write`, `writeInt`, … (consecutive blocks taken together).
    Data(Vec<u8>),
    /// A value written with `writeObject`.
    Value(Value),
}

/// The data one class of an object's hierarchy wrote.
#[derive(Debug, Clone, PartialEq)]
pub struct ClassData {
    /// Its fields' values, in its descriptor's order.
    pub values: Vec<Value>,
    /// For a class with `SC_WRITE_METHOD` (or an externalizable one): what it wrote after its
    /// fields, up to the end-of-block-data marker.
    pub annotation: Option<Vec<Item>>,
}

/// An object.
#[derive(Debug, Clone, PartialEq)]
pub struct Object {
    /// Its class descriptor.
    pub class: Handle,
    /// Per class of its hierarchy, from the topmost serializable superclass down to its class.
    pub data: Vec<ClassData>,
}

/// An array's elements.
#[derive(Debug, Clone, PartialEq)]
pub enum Elements {
    /// Elements of a primitive type (the array class's second character), as the stream's
    /// big-endian bytes.
    Primitive {
        /// The element type code.
        code: u8,
        /// Their bytes.
        raw: Vec<u8>,
    },
    /// Elements of an object type.
    Values(Vec<Value>),
}

/// An array.
#[derive(Debug, Clone, PartialEq)]
pub struct Array {
    /// Its class descriptor (`[B`, `[Ljava.lang.String;`).
    pub class: Handle,
    /// Its elements.
    pub elements: Elements,
}

/// What a handle stands for.
#[derive(Debug, Clone, PartialEq)]
pub enum Entry {
    /// A class descriptor.
    ClassDesc(ClassDesc),
    /// A string.
    String(String),
    /// An object.
    Object(Object),
    /// An array.
    Array(Array),
    /// An enum constant: its class descriptor and its name (a string entry).
    Enum {
        /// The enum's class descriptor.
        class: Handle,
        /// The constant's name.
        name: Handle,
    },
    /// A `java.lang.Class` object: its descriptor.
    Class(Handle),
}

/// A stream's content: its entries in the order their handles were assigned, and its object.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Graph {
    entries: Vec<Entry>,
    root: Option<Handle>,
}

impl Graph {
    /// An empty graph.
    pub fn new() -> Self {
        Graph::default()
    }

    /// Adds an entry; its handle.
    pub fn add(&mut self, entry: Entry) -> Handle {
        self.entries.push(entry);
        Handle((self.entries.len() - 1) as u32)
    }

    /// The entry of `h`.
    pub fn get(&self, h: Handle) -> Option<&Entry> {
        self.entries.get(h.index())
    }

    /// The entry of `h`, to change it.
    pub fn get_mut(&mut self, h: Handle) -> Option<&mut Entry> {
        self.entries.get_mut(h.index())
    }

    /// Every entry, in handle order.
    pub fn entries(&self) -> &[Entry] {
        &self.entries
    }

    /// The stream's object (`None` for a stream of `null`).
    pub fn root(&self) -> Option<Handle> {
        self.root
    }

    /// Sets the stream's object.
    pub fn set_root(&mut self, root: Option<Handle>) {
        self.root = root;
    }

    /// The stream's object as a node to read.
    pub fn root_node(&self) -> Node<'_> {
        Node::new(self, self.root.map(Value::Ref).unwrap_or(Value::Null))
    }

    /// The class descriptor at `h`.
    pub fn class_desc(&self, h: Handle) -> Option<&ClassDesc> {
        match self.get(h) {
            Some(Entry::ClassDesc(d)) => Some(d),
            _ => None,
        }
    }

    /// The string at `h`.
    pub fn string(&self, h: Handle) -> Option<&str> {
        match self.get(h) {
            Some(Entry::String(s)) => Some(s),
            _ => None,
        }
    }

    /// The descriptors of a class's hierarchy, topmost superclass first (the order of an
    /// object's `ClassData`); `None` if a descriptor is missing or the chain loops.
    pub fn hierarchy(&self, class: Handle) -> Option<Vec<Handle>> {
        let mut chain = Vec::new();
        let mut next = Some(class);
        while let Some(h) = next {
            if chain.len() > self.entries.len() || chain.contains(&h) {
                return None;
            }
            chain.push(h);
            next = self.class_desc(h)?.super_desc;
        }
        chain.reverse();
        Some(chain)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A stream of `depth` objects of a one-field class, each the field of the one before.
    fn nested(depth: usize) -> Vec<u8> {
        let mut s = MAGIC.to_vec();
        // The first object declares the class; the others refer back to its descriptor.
        s.push(TC_OBJECT);
        s.push(TC_CLASSDESC);
        s.extend_from_slice(&[0, 1, b'N']);
        s.extend_from_slice(&1i64.to_be_bytes());
        s.push(SC_SERIALIZABLE);
        s.extend_from_slice(&[0, 1, b'L', 0, 1, b'n', TC_STRING, 0, 1, b'N']);
        s.extend_from_slice(&[TC_ENDBLOCKDATA, TC_NULL]);
        for _ in 1..depth {
            s.push(TC_OBJECT);
            s.push(TC_REFERENCE);
            s.extend_from_slice(&BASE_HANDLE.to_be_bytes());
        }
        s.push(TC_NULL);
        s
    }

    #[test]
    fn a_stream_nested_past_the_limit_is_refused_without_exhausting_a_small_stack() {
        // 100,000 levels in 0.7 MB, read on a thread with 1 MiB of stack (half a tokio worker
        // thread's; this holds in debug builds, whose frames are the largest): the depth bound
        // stops it long before the stack runs out.
        let deep = nested(100_000);
        let outcome = std::thread::Builder::new()
            .stack_size(1024 * 1024)
            .spawn(move || read(&deep, &Limits::default()).map(|_| ()))
            .expect("a thread")
            .join()
            .expect("no stack overflow");
        assert!(
            matches!(&outcome, Err(SerialError::Limit(m)) if m.contains("nested deeper than 128")),
            "{outcome:?}"
        );
        // At the limit it reads, and writes back to the same bytes.
        let ok = nested(60);
        let g = read(&ok, &Limits::default()).expect("60 levels read");
        assert_eq!(write(&g, &Limits::default()).expect("and write"), ok);
    }

    #[test]
    fn an_object_that_refers_to_itself_reads_and_writes_as_one_entry() {
        let mut g = Graph::new();
        let sig = g.add(Entry::String("Ljava/lang/Object;".into()));
        let class = g.add(Entry::ClassDesc(ClassDesc {
            name: "Self".into(),
            suid: 7,
            flags: SC_SERIALIZABLE,
            fields: vec![FieldDesc {
                code: b'L',
                name: "me".into(),
                signature: Some(sig),
            }],
            annotation: Vec::new(),
            super_desc: None,
        }));
        let me = Handle(g.entries().len() as u32);
        g.add(Entry::Object(Object {
            class,
            data: vec![ClassData {
                values: vec![Value::Ref(me)],
                annotation: None,
            }],
        }));
        g.set_root(Some(me));
        let bytes = write(&g, &Limits::default()).expect("writes");
        // The field is a back-reference to the object's own handle (0x7e0002: descriptor,
        // signature, object).
        assert!(bytes.ends_with(&[TC_REFERENCE, 0x00, 0x7E, 0x00, 0x02]));
        let back = read(&bytes, &Limits::default()).expect("reads");
        let root = back.root_node();
        assert_eq!(root.field("me").map(|n| n.value()), Some(root.value()));
        assert_eq!(
            write(&back, &Limits::default()).expect("writes again"),
            bytes
        );
    }

    #[test]
    fn lengths_larger_than_the_stream_are_refused_before_allocating() {
        // An object array claiming 2^31 - 1 elements, in a 40-byte stream.
        let mut s = MAGIC.to_vec();
        s.extend_from_slice(&[TC_ARRAY, TC_CLASSDESC, 0, 2, b'[', b'L']);
        s.extend_from_slice(&1i64.to_be_bytes());
        s.extend_from_slice(&[SC_SERIALIZABLE, 0, 0, TC_ENDBLOCKDATA, TC_NULL]);
        s.extend_from_slice(&i32::MAX.to_be_bytes());
        assert!(matches!(
            read(&s, &Limits::default()),
            Err(SerialError::Truncated { .. })
        ));
        // A long string of 2^62 bytes.
        let mut s = MAGIC.to_vec();
        s.push(TC_LONGSTRING);
        s.extend_from_slice(&(1i64 << 62).to_be_bytes());
        assert!(matches!(
            read(&s, &Limits::default()),
            Err(SerialError::Truncated { .. })
        ));
    }

    #[test]
    fn more_handles_than_the_limit_are_refused() {
        // An object array of 5,000 strings, with room for 1,000 handles.
        let mut s = MAGIC.to_vec();
        s.extend_from_slice(&[TC_ARRAY, TC_CLASSDESC, 0, 2, b'[', b'L']);
        s.extend_from_slice(&1i64.to_be_bytes());
        s.extend_from_slice(&[SC_SERIALIZABLE, 0, 0, TC_ENDBLOCKDATA, TC_NULL]);
        s.extend_from_slice(&5000i32.to_be_bytes());
        for _ in 0..5000 {
            s.extend_from_slice(&[TC_STRING, 0, 1, b'x']);
        }
        let small = Limits {
            max_handles: 1000,
            ..Limits::default()
        };
        assert!(
            matches!(read(&s, &small), Err(SerialError::Limit(m)) if m.contains("1000 handles"))
        );
        assert!(read(&s, &Limits::default()).is_ok());
    }

    #[test]
    fn forms_this_reader_does_not_take_are_typed_errors() {
        for (tag, what) in [
            (TC_RESET, "a reset"),
            (TC_EXCEPTION, "an exception"),
            (TC_PROXYCLASSDESC, "proxy class"),
        ] {
            let mut s = MAGIC.to_vec();
            s.push(tag);
            let e = read(&s, &Limits::default()).expect_err("refused");
            assert!(e.to_string().contains(what), "{e}");
        }
        let mut s = MAGIC.to_vec();
        s.extend_from_slice(&[TC_REFERENCE, 0x00, 0x7E, 0x00, 0x05]);
        assert!(matches!(
            read(&s, &Limits::default()),
            Err(SerialError::BadReference { .. })
        ));
        assert_eq!(
            read(&[0xAC, 0xED, 0, 4], &Limits::default()),
            Err(SerialError::NoMagic)
        );
    }

    #[test]
    fn the_writer_refuses_what_it_cannot_represent() {
        let mut g = Graph::new();
        let class = g.add(Entry::ClassDesc(ClassDesc {
            name: "P".into(),
            suid: 1,
            flags: SC_SERIALIZABLE,
            fields: vec![FieldDesc {
                code: b'I',
                name: "i".into(),
                signature: None,
            }],
            annotation: Vec::new(),
            super_desc: None,
        }));
        // A string where an int belongs.
        let s = g.add(Entry::String("x".into()));
        let o = g.add(Entry::Object(Object {
            class,
            data: vec![ClassData {
                values: vec![Value::Ref(s)],
                annotation: None,
            }],
        }));
        g.set_root(Some(o));
        let e = write(&g, &Limits::default()).expect_err("refused");
        assert!(
            matches!(&e, SerialError::Unwritable(m) if m.contains("P.i")),
            "{e}"
        );
        // A reference to no entry.
        g.set_root(Some(Handle(99)));
        assert!(matches!(
            write(&g, &Limits::default()),
            Err(SerialError::Unwritable(_))
        ));
        // A class name longer than writeUTF holds.
        let mut g = Graph::new();
        let long = g.add(Entry::ClassDesc(ClassDesc {
            name: "x".repeat(70_000),
            suid: 1,
            flags: SC_SERIALIZABLE,
            fields: Vec::new(),
            annotation: Vec::new(),
            super_desc: None,
        }));
        g.set_root(Some(long));
        assert!(matches!(
            write(&g, &Limits::default()),
            Err(SerialError::Unwritable(m)) if m.contains("65535")
        ));
    }

    #[test]
    fn block_data_is_written_in_blocks_of_1024_bytes_as_the_jvm_does() {
        let mut g = Graph::new();
        let class = g.add(Entry::ClassDesc(ClassDesc {
            name: "B".into(),
            suid: 1,
            flags: SC_SERIALIZABLE | SC_WRITE_METHOD,
            fields: Vec::new(),
            annotation: Vec::new(),
            super_desc: None,
        }));
        let o = g.add(Entry::Object(Object {
            class,
            data: vec![ClassData {
                values: Vec::new(),
                annotation: Some(vec![Item::Data(vec![7; 2500])]),
            }],
        }));
        g.set_root(Some(o));
        let bytes = write(&g, &Limits::default()).expect("writes");
        // 1024 + 1024 as long blocks, 452 as a long block too (over 255), then the end marker.
        let blocks: Vec<usize> = bytes
            .windows(5)
            .filter(|w| w[0] == TC_BLOCKDATALONG)
            .map(|w| i32::from_be_bytes([w[1], w[2], w[3], w[4]]) as usize)
            .collect();
        assert_eq!(blocks, [1024, 1024, 452]);
        assert_eq!(bytes.last(), Some(&TC_ENDBLOCKDATA));
        assert_eq!(read(&bytes, &Limits::default()).expect("reads"), g);
    }
}
