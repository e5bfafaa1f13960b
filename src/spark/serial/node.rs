//! Reading a graph's values: classes, fields, strings, primitives, arrays and the block data a
//! `writeObject` method wrote.

use super::*;

/// A value of a graph, to read.
#[derive(Debug, Clone, Copy)]
pub struct Node<'g> {
    graph: &'g Graph,
    value: Value,
}

impl<'g> Node<'g> {
    /// `value` of `graph`.
    pub fn new(graph: &'g Graph, value: Value) -> Self {
        Node { graph, value }
    }

    /// The value.
    pub fn value(&self) -> Value {
        self.value
    }

    /// The graph it is in.
    pub fn graph(&self) -> &'g Graph {
        self.graph
    }

    /// Its entry, for a reference.
    pub fn entry(&self) -> Option<&'g Entry> {
        match self.value {
            Value::Ref(h) => self.graph.get(h),
            _ => None,
        }
    }

    /// Whether it is `null`.
    pub fn is_null(&self) -> bool {
        self.value == Value::Null
    }

    /// The object it refers to.
    pub fn object(&self) -> Option<&'g Object> {
        match self.entry()? {
            Entry::Object(o) => Some(o),
            _ => None,
        }
    }

    /// The name of its class as the stream gives it (an object's, an array's, an enum
    /// constant's).
    pub fn class_name(&self) -> Option<&'g str> {
        let desc = match self.entry()? {
            Entry::Object(o) => o.class,
            Entry::Array(a) => a.class,
            Entry::Enum { class, .. } => *class,
            _ => return None,
        };
        self.graph.class_desc(desc).map(|d| d.name.as_str())
    }

    /// Its class, seeing through Scala 2.13's `ModuleSerializationProxy` to the module's class
    /// (`scala.None$`).
    pub fn class(&self) -> Option<&'g str> {
        self.module().or_else(|| self.class_name())
    }

    /// For a `scala.runtime.ModuleSerializationProxy`, the class of the Scala object it stands for.
    pub fn module(&self) -> Option<&'g str> {
        if self.class_name()? != "scala.runtime.ModuleSerializationProxy" {
            return None;
        }
        self.field("moduleClass")?.class_object()
    }

    /// For a `java.lang.Class` object, the class's name.
    pub fn class_object(&self) -> Option<&'g str> {
        match self.entry()? {
            Entry::Class(d) => self.graph.class_desc(*d).map(|d| d.name.as_str()),
            _ => None,
        }
    }

    /// Field `name` of an object (the class's own fields first, then its superclasses').
    pub fn field(&self, name: &str) -> Option<Node<'g>> {
        let o = self.object()?;
        let chain = self.graph.hierarchy(o.class)?;
        for (level, data) in chain.iter().zip(&o.data).rev() {
            let d = self.graph.class_desc(*level)?;
            if let Some(i) = d.fields.iter().position(|f| f.name == name) {
                return data.values.get(i).map(|v| Node::new(self.graph, *v));
            }
        }
        None
    }

    /// What the object's own class (or, failing that, the nearest superclass with one) wrote
    /// after its fields.
    pub fn annotation(&self) -> Option<Cursor<'g>> {
        let o = self.object()?;
        o.data
            .iter()
            .rev()
            .find_map(|d| d.annotation.as_deref())
            .map(|items| Cursor::new(self.graph, items))
    }

    /// A string.
    pub fn as_str(&self) -> Option<&'g str> {
        match self.entry()? {
            Entry::String(s) => Some(s),
            _ => None,
        }
    }

    /// A `boolean`.
    pub fn as_bool(&self) -> Option<bool> {
        match self.value {
            Value::Bool(b) => Some(b),
            _ => None,
        }
    }

    /// An `int` (or a `short`, `byte` or `char`).
    pub fn as_int(&self) -> Option<i32> {
        match self.value {
            Value::Int(i) => Some(i),
            Value::Short(s) => Some(i32::from(s)),
            Value::Byte(b) => Some(i32::from(b)),
            Value::Char(c) => Some(i32::from(c)),
            _ => None,
        }
    }

    /// A `long` (or a narrower integer).
    pub fn as_long(&self) -> Option<i64> {
        match self.value {
            Value::Long(l) => Some(l),
            _ => self.as_int().map(i64::from),
        }
    }

    /// A `double` (or a `float`).
    pub fn as_double(&self) -> Option<f64> {
        match self.value {
            Value::Double(bits) => Some(f64::from_bits(bits)),
            Value::Float(bits) => Some(f64::from(f32::from_bits(bits))),
            _ => None,
        }
    }

    /// An object array's elements.
    pub fn array_values(&self) -> Option<Vec<Node<'g>>> {
        match self.entry()? {
            Entry::Array(Array {
                elements: Elements::Values(v),
                ..
            }) => Some(v.iter().map(|v| Node::new(self.graph, *v)).collect()),
            _ => None,
        }
    }

    /// A `byte[]`'s bytes.
    pub fn as_bytes(&self) -> Option<&'g [u8]> {
        match self.entry()? {
            Entry::Array(Array {
                elements: Elements::Primitive { code: b'B', raw },
                ..
            }) => Some(raw),
            _ => None,
        }
    }

    /// An enum constant's name.
    pub fn enum_name(&self) -> Option<&'g str> {
        match self.entry()? {
            Entry::Enum { name, .. } => self.graph.string(*name),
            _ => None,
        }
    }

    /// A short description for errors: `null`, `a string`, `an int`, `a scala.Some`, ….
    pub fn describe(&self) -> String {
        match self.value {
            Value::Null => "null".into(),
            Value::Ref(_) => match self.entry() {
                Some(Entry::String(_)) => "a string".into(),
                Some(Entry::ClassDesc(d)) => format!("the class descriptor of {}", d.name),
                Some(Entry::Class(_)) => {
                    format!("the class {}", self.class_object().unwrap_or("?"))
                }
                Some(Entry::Enum { .. }) => format!(
                    "enum {}.{}",
                    self.class_name().unwrap_or("?"),
                    self.enum_name().unwrap_or("?")
                ),
                Some(Entry::Array(_)) => format!("an array {}", self.class_name().unwrap_or("?")),
                Some(Entry::Object(_)) => format!("a {}", self.class().unwrap_or("?")),
                None => "a reference to nothing".into(),
            },
            other => format!("a primitive of type {}", other.code() as char),
        }
    }
}

/// A reader of block-data-mode content: the bytes and objects a `writeObject` method wrote.
#[derive(Debug, Clone)]
pub struct Cursor<'g> {
    graph: &'g Graph,
    items: &'g [Item],
    item: usize,
    offset: usize,
}

impl<'g> Cursor<'g> {
    /// A cursor at the start of `items`.
    pub fn new(graph: &'g Graph, items: &'g [Item]) -> Self {
        Cursor {
            graph,
            items,
            item: 0,
            offset: 0,
        }
    }

    /// The next `n` bytes of data (not across an object).
    pub fn read_bytes(&mut self, n: usize) -> Option<&'g [u8]> {
        if n == 0 {
            return Some(&[]);
        }
        match self.items.get(self.item)? {
            Item::Data(d) => {
                let end = self.offset.checked_add(n).filter(|e| *e <= d.len())?;
                let s = &d[self.offset..end];
                self.offset = end;
                if self.offset == d.len() {
                    self.item += 1;
                    self.offset = 0;
                }
                Some(s)
            }
            Item::Value(_) => None,
        }
    }

    /// A `readInt`.
    pub fn read_i32(&mut self) -> Option<i32> {
        let b = self.read_bytes(4)?;
        Some(i32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }

    /// A `readObject`.
    pub fn read_value(&mut self) -> Option<Node<'g>> {
        match self.items.get(self.item)? {
            Item::Value(v) => {
                self.item += 1;
                Some(Node::new(self.graph, *v))
            }
            Item::Data(_) => None,
        }
    }

    /// Whether everything was read.
    pub fn at_end(&self) -> bool {
        self.item >= self.items.len()
    }
}
